// bindings/tcp/framing.ts: the TCP length prefix and its reassembler, and the RFC 6455 server
// subset, fed whole, split at every boundary and one byte at a time.
import { deepEqual, equal, ok, throws } from '../lib/assert.js';
import { runs } from '../lib/env.js';
import {
  base64Encode,
  FrameReassembler,
  FramingError,
  FramingErrorCode,
  LENGTH_PREFIX_BYTES,
  MAX_HANDSHAKE_BYTES,
  MAX_PREFIXED_FRAME_BYTES,
  WS_GUID,
  WsFrameParser,
  WsHandshake,
  wsRefusedResponse,
  WsOpcode,
  wsAccept,
  wsHeaderLength,
  writeLengthPrefix,
  writeWsHeader,
  wsUpgradeResponse,
} from '../../bindings/tcp/framing.js';
import { MAX_FRAME_BYTES } from '../../hub/frames.js';

function bytesOf(n: number, seed: number): Uint8Array {
  const b = new Uint8Array(n);
  for (let i = 0; i < n; i++) b[i] = (i * 31 + seed * 7 + 1) & 0xff;
  return b;
}

function prefixed(frames: Uint8Array[]): Uint8Array {
  let total = 0;
  for (const f of frames) total += LENGTH_PREFIX_BYTES + f.length;
  const out = new Uint8Array(total);
  let at = 0;
  for (const f of frames) {
    at = writeLengthPrefix(f.length, out, at);
    out.set(f, at);
    at += f.length;
  }
  return out;
}

class Collect {
  readonly frames: Uint8Array[] = [];
  readonly views: Uint8Array[] = [];
  /** Frames and refusals in order: a frame's length, or [code, announced length]. */
  readonly events: (number | [number, number])[] = [];
  frame(b: Uint8Array, s: number, e: number): void {
    this.frames.push(b.slice(s, e));
    this.views.push(b);
    this.events.push(e - s);
  }
  refuse(code: number, length: number): void {
    this.events.push([code, length]);
  }
}

// xorshift32, so that XS and Node see the same random splits.
function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 0x100000000;
  };
}

function feedPieces(r: FrameReassembler, stream: Uint8Array, cuts: number[], out: Collect): void {
  let from = 0;
  for (const c of cuts) {
    r.push(stream, from, c, out);
    from = c;
  }
  r.push(stream, from, stream.length, out);
}

function isFramingError(code: number): (e: unknown) => boolean {
  return (e) => e instanceof FramingError && e.code === code;
}

describe('tcp framing: length prefix', () => {
  it('writes 2 bytes big-endian, 0..65535', () => {
    const b = new Uint8Array(4);
    equal(writeLengthPrefix(0, b, 1), 3);
    deepEqual(b.subarray(1, 3), new Uint8Array([0, 0]));
    writeLengthPrefix(1, b, 0);
    deepEqual(b.subarray(0, 2), new Uint8Array([0, 1]));
    writeLengthPrefix(0x1234, b, 0);
    deepEqual(b.subarray(0, 2), new Uint8Array([0x12, 0x34]));
    writeLengthPrefix(MAX_PREFIXED_FRAME_BYTES, b, 0);
    deepEqual(b.subarray(0, 2), new Uint8Array([0xff, 0xff]));
    throws(() => writeLengthPrefix(65536, b, 0));
    throws(() => writeLengthPrefix(-1, b, 0));
    throws(() => writeLengthPrefix(1.5, b, 0));
  });
});

describe('tcp framing: FrameReassembler', () => {
  const frames = [bytesOf(1, 1), bytesOf(12, 2), bytesOf(300, 3), bytesOf(MAX_FRAME_BYTES, 4), bytesOf(2, 5), bytesOf(255, 6), bytesOf(256, 7)];
  const stream = prefixed(frames);

  it('takes a whole stream apart, frames in place when they arrive whole', () => {
    const r = new FrameReassembler();
    const out = new Collect();
    r.push(stream, 0, stream.length, out);
    deepEqual(out.frames, frames);
    for (const v of out.views) ok(v === stream, 'a frame that arrived whole is handed on without a copy');
    equal(r.pending, 0);
  });

  it('gives the same frames for a split at every boundary', () => {
    for (let cut = 0; cut <= stream.length; cut++) {
      const r = new FrameReassembler();
      const out = new Collect();
      feedPieces(r, stream, [cut], out);
      deepEqual(out.frames, frames, `cut at ${cut}`);
    }
  });

  it('gives the same frames fed one byte at a time', () => {
    const r = new FrameReassembler();
    const out = new Collect();
    for (let i = 0; i < stream.length; i++) {
      r.push(stream, i, i + 1, out);
      if (i < 2) equal(out.frames.length, 0);
    }
    deepEqual(out.frames, frames);
    equal(r.pending, 0);
  });

  it('gives the same frames for random chunkings', () => {
    const next = rng(42);
    for (let run = 0; run < runs(300, 40); run++) {
      const cuts: number[] = [];
      let at = 0;
      for (;;) {
        at += 1 + Math.floor(next() * 400);
        if (at >= stream.length) break;
        cuts.push(at);
      }
      const r = new FrameReassembler();
      const out = new Collect();
      feedPieces(r, stream, cuts, out);
      deepEqual(out.frames, frames, `run ${run}`);
    }
  });

  it('delivers nothing before the last byte of a frame', () => {
    const one = prefixed([bytesOf(10, 9)]);
    const r = new FrameReassembler();
    const out = new Collect();
    r.push(one, 0, one.length - 1, out);
    equal(out.frames.length, 0);
    equal(r.pending, 9);
    r.push(one, one.length - 1, one.length, out);
    deepEqual(out.frames, [bytesOf(10, 9)]);
  });

  it('hands a zero-length frame on as empty (the core answers it MALFORMED)', () => {
    const r = new FrameReassembler();
    const out = new Collect();
    const s = prefixed([bytesOf(3, 1), new Uint8Array(0), bytesOf(3, 1)]);
    s[2] = 0xe5; // a stale ESTOP magic in the buffer must not show through an empty frame
    for (let i = 0; i < s.length; i++) r.push(s, i, i + 1, out);
    deepEqual(out.events, [3, 0, 3]);
    equal(out.views[1]!.length, 0, 'handed on as an empty array');
  });

  it('accepts exactly maxFrameBytes and refuses one more at the prefix, before its body arrives', () => {
    const r = new FrameReassembler(100);
    const out = new Collect();
    const okStream = prefixed([bytesOf(100, 1)]);
    r.push(okStream, 0, okStream.length, out);
    const bad = new Uint8Array([0, 101]);
    r.push(bad, 0, 1, out);
    equal(out.events.length, 1);
    r.push(bad, 1, 2, out);
    deepEqual(out.events, [100, [FramingErrorCode.TOO_LARGE, 101]]);
    ok(r.skipping);
  });

  it('discards a refused frame whole and stays in step, at every split and byte at a time', () => {
    const frames = [bytesOf(5, 1), bytesOf(101, 2), bytesOf(7, 3), bytesOf(65535, 4), bytesOf(100, 5)];
    const s = prefixed(frames);
    const expected = [5, [FramingErrorCode.TOO_LARGE, 101], 7, [FramingErrorCode.TOO_LARGE, 65535], 100];
    const r = new FrameReassembler(100);
    const out = new Collect();
    r.push(s, 0, s.length, out);
    deepEqual(out.events, expected);
    deepEqual(out.frames, [bytesOf(5, 1), bytesOf(7, 3), bytesOf(100, 5)]);
    for (let cut = 0; cut <= 260; cut++) {
      const rc = new FrameReassembler(100);
      const oc = new Collect();
      feedPieces(rc, s, [cut, s.length - cut], oc);
      deepEqual(oc.events, expected, `cut at ${cut}`);
    }
    const rb = new FrameReassembler(100);
    const ob = new Collect();
    for (let i = 0; i < s.length; i++) rb.push(s, i, i + 1, ob);
    deepEqual(ob.events, expected);
    deepEqual(ob.frames, [bytesOf(5, 1), bytesOf(7, 3), bytesOf(100, 5)]);
  });

  it('refuses a limit a 2-byte prefix cannot express', () => {
    throws(() => new FrameReassembler(0));
    throws(() => new FrameReassembler(65536));
    ok(new FrameReassembler(65535));
  });
});

// ---------------------------------------------------------------------------------------------
// WebSocket

function clientFrame(opcode: number, payload: Uint8Array, opts: { fin?: boolean; mask?: boolean; rsv?: number; len16?: boolean; len64?: number } = {}): Uint8Array {
  const fin = opts.fin ?? true;
  const masked = opts.mask ?? true;
  const key = new Uint8Array([0x37, 0xfa, 0x21, 0x3d]);
  const n = payload.length;
  const head: number[] = [(fin ? 0x80 : 0) | ((opts.rsv ?? 0) << 4) | opcode];
  const m = masked ? 0x80 : 0;
  if (opts.len64 !== undefined) {
    head.push(m | 127);
    let v = opts.len64;
    const b: number[] = [];
    for (let i = 0; i < 8; i++) {
      b.unshift(v % 256);
      v = Math.floor(v / 256);
    }
    head.push(...b);
  } else if (n < 126 && !opts.len16) head.push(m | n);
  else if (n < 0x10000) head.push(m | 126, n >>> 8, n & 0xff);
  if (masked) head.push(...key);
  const out = new Uint8Array(head.length + n);
  out.set(head, 0);
  for (let i = 0; i < n; i++) out[head.length + i] = (payload[i] as number) ^ (masked ? (key[i & 3] as number) : 0);
  return out;
}

function concat(parts: Uint8Array[]): Uint8Array {
  let n = 0;
  for (const p of parts) n += p.length;
  const out = new Uint8Array(n);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

class WsCollect {
  readonly events: [string, number, Uint8Array | number][] = [];
  frame(b: Uint8Array, s: number, e: number): void {
    this.events.push(['message', 0, b.slice(s, e)]);
  }
  control(op: number, b: Uint8Array, s: number, e: number): void {
    this.events.push(['control', op, b.slice(s, e)]);
  }
  refuse(code: number, length: number): void {
    this.events.push(['refuse', code, length]);
  }
}

describe('tcp framing: WebSocket server frames', () => {
  it('writes unmasked final headers: 2 bytes up to 125, 4 bytes up to 65535', () => {
    const b = new Uint8Array(4);
    equal(writeWsHeader(WsOpcode.BINARY, 0, b, 0), 2);
    deepEqual(b.subarray(0, 2), new Uint8Array([0x82, 0]));
    equal(writeWsHeader(WsOpcode.BINARY, 125, b, 0), 2);
    deepEqual(b.subarray(0, 2), new Uint8Array([0x82, 125]));
    equal(writeWsHeader(WsOpcode.BINARY, 126, b, 0), 4);
    deepEqual(b, new Uint8Array([0x82, 126, 0, 126]));
    equal(writeWsHeader(WsOpcode.CLOSE, 65535, b, 0), 4);
    deepEqual(b, new Uint8Array([0x88, 126, 0xff, 0xff]));
    equal(wsHeaderLength(125), 2);
    equal(wsHeaderLength(126), 4);
    throws(() => writeWsHeader(WsOpcode.BINARY, 65536, b, 0));
  });
});

describe('tcp framing: WsFrameParser', () => {
  const big = bytesOf(300, 1);
  const stream = concat([
    clientFrame(WsOpcode.BINARY, bytesOf(12, 2)),
    clientFrame(WsOpcode.PING, bytesOf(4, 3)),
    clientFrame(WsOpcode.BINARY, big.subarray(0, 100), { fin: false }),
    clientFrame(WsOpcode.PONG, new Uint8Array(0)),
    clientFrame(WsOpcode.CONTINUATION, big.subarray(100, 200), { fin: false }),
    clientFrame(WsOpcode.CONTINUATION, big.subarray(200), { fin: true }),
    clientFrame(WsOpcode.BINARY, new Uint8Array(0)),
    clientFrame(WsOpcode.BINARY, bytesOf(130, 4)),
    clientFrame(WsOpcode.CLOSE, new Uint8Array([0x03, 0xe8])),
  ]);
  const expected: [string, number, Uint8Array][] = [
    ['message', 0, bytesOf(12, 2)],
    ['control', WsOpcode.PING, bytesOf(4, 3)],
    ['control', WsOpcode.PONG, new Uint8Array(0)],
    ['message', 0, big],
    ['message', 0, new Uint8Array(0)],
    ['message', 0, bytesOf(130, 4)],
    ['control', WsOpcode.CLOSE, new Uint8Array([0x03, 0xe8])],
  ];

  it('unmasks messages, reassembles fragments around control frames', () => {
    const p = new WsFrameParser(1024);
    const out = new WsCollect();
    p.push(stream, 0, stream.length, out);
    deepEqual(out.events, expected);
  });

  it('gives the same events for a split at every boundary and byte at a time', () => {
    for (let cut = 0; cut <= stream.length; cut++) {
      const p = new WsFrameParser(1024);
      const out = new WsCollect();
      p.push(stream, 0, cut, out);
      p.push(stream, cut, stream.length, out);
      deepEqual(out.events, expected, `cut at ${cut}`);
    }
    const p = new WsFrameParser(1024);
    const out = new WsCollect();
    for (let i = 0; i < stream.length; i++) p.push(stream, i, i + 1, out);
    deepEqual(out.events, expected);
  });

  it('refuses what the subset does not speak, with typed errors', () => {
    const cases: [string, Uint8Array, number][] = [
      ['unmasked', clientFrame(WsOpcode.BINARY, bytesOf(3, 1), { mask: false }), FramingErrorCode.PROTOCOL],
      ['reserved bits', clientFrame(WsOpcode.BINARY, bytesOf(3, 1), { rsv: 4 }), FramingErrorCode.PROTOCOL],
      ['lone continuation', clientFrame(WsOpcode.CONTINUATION, bytesOf(3, 1)), FramingErrorCode.PROTOCOL],
      ['fragmented ping', clientFrame(WsOpcode.PING, bytesOf(3, 1), { fin: false }), FramingErrorCode.PROTOCOL],
      ['long ping', clientFrame(WsOpcode.PING, bytesOf(126, 1)), FramingErrorCode.PROTOCOL],
      ['opcode 3', clientFrame(3, bytesOf(3, 1)), FramingErrorCode.PROTOCOL],
      ['opcode 11', clientFrame(11, bytesOf(3, 1)), FramingErrorCode.PROTOCOL],
      ['16-bit length below 126', clientFrame(WsOpcode.BINARY, bytesOf(5, 1), { len16: true }), FramingErrorCode.PROTOCOL],
      ['new message inside a fragmented one', concat([clientFrame(WsOpcode.BINARY, bytesOf(3, 1), { fin: false }), clientFrame(WsOpcode.BINARY, bytesOf(3, 1))]), FramingErrorCode.PROTOCOL],
      ['64-bit length with the top bit set', clientFrame(WsOpcode.BINARY, new Uint8Array(0), { len64: 2 ** 63 }), FramingErrorCode.PROTOCOL],
    ];
    for (const [name, bytes, code] of cases) {
      const p = new WsFrameParser(1024);
      const out = new WsCollect();
      throws(() => p.push(bytes, 0, bytes.length, out), isFramingError(code), name);
      ok(p.failed, name);
      p.push(bytes, 0, bytes.length, out);
    }
  });

  it('refuses text and oversize messages as soon as a header announces them, discards them whole, stays in step', () => {
    const stream2 = concat([
      clientFrame(WsOpcode.TEXT, bytesOf(3, 1)),
      clientFrame(WsOpcode.BINARY, bytesOf(101, 2)),
      clientFrame(WsOpcode.BINARY, bytesOf(60, 3), { fin: false }),
      clientFrame(WsOpcode.PING, bytesOf(2, 4)),
      clientFrame(WsOpcode.CONTINUATION, bytesOf(41, 5), { fin: false }),
      clientFrame(WsOpcode.CONTINUATION, bytesOf(10, 6)),
      clientFrame(WsOpcode.TEXT, bytesOf(3, 7), { fin: false }),
      clientFrame(WsOpcode.CONTINUATION, bytesOf(3, 8)),
      clientFrame(WsOpcode.BINARY, bytesOf(100, 9)),
      clientFrame(WsOpcode.BINARY, new Uint8Array(0), { len64: 2 ** 20 }),
    ]);
    const expected: [string, number, Uint8Array | number][] = [
      ['refuse', FramingErrorCode.TEXT_MESSAGE, 3],
      ['refuse', FramingErrorCode.TOO_LARGE, 101],
      ['control', WsOpcode.PING, bytesOf(2, 4)],
      ['refuse', FramingErrorCode.TOO_LARGE, 101],
      ['refuse', FramingErrorCode.TEXT_MESSAGE, 3],
      ['message', 0, bytesOf(100, 9)],
      ['refuse', FramingErrorCode.TOO_LARGE, 2 ** 20],
    ];
    const p = new WsFrameParser(100);
    const out = new WsCollect();
    p.push(stream2, 0, stream2.length, out);
    deepEqual(out.events, expected);
    ok(!p.failed);
    const q = new WsFrameParser(100);
    const one = new WsCollect();
    for (let i = 0; i < stream2.length; i++) {
      q.push(stream2, i, i + 1, one);
      // The refusal of the 101-byte message comes with its 16-bit length, before mask and payload.
      if (i === 9 + 3) equal(one.events.length, 2);
    }
    deepEqual(one.events, expected);
  });
});

// ---------------------------------------------------------------------------------------------
// The upgrade

function ascii(text: string): Uint8Array {
  const b = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) b[i] = text.charCodeAt(i);
  return b;
}

const KEY = 'dGhlIHNhbXBsZSBub25jZQ==';
const REQUEST =
  'GET /hub HTTP/1.1\r\nHost: 192.168.4.1:8080\r\nUpgrade: WebSocket\r\nConnection: keep-alive, Upgrade\r\n' +
  'Sec-WebSocket-Key: ' + KEY + '\r\nSec-WebSocket-Version: 13\r\nOrigin: http://example\r\n\r\n';

describe('tcp framing: WebSocket upgrade', () => {
  it('reads a request byte at a time and returns where the frames begin', () => {
    const bytes = concat([ascii(REQUEST), new Uint8Array([0x82, 0x80])]);
    const hs = new WsHandshake();
    let end = -1;
    for (let i = 0; i < bytes.length && end < 0; i++) end = hs.push(bytes, i, i + 1);
    equal(end, REQUEST.length);
    ok(hs.complete);
    equal(hs.key, KEY);
    equal(hs.path, '/hub');
    const whole = new WsHandshake();
    equal(whole.push(bytes, 0, bytes.length), REQUEST.length);
  });

  it('refuses requests that are not a version-13 upgrade', () => {
    const bad = [
      REQUEST.replace('GET', 'POST'),
      REQUEST.replace('HTTP/1.1', 'HTTP/1.0'),
      REQUEST.replace('Upgrade: WebSocket\r\n', ''),
      REQUEST.replace('keep-alive, Upgrade', 'keep-alive'),
      REQUEST.replace('Version: 13', 'Version: 8'),
      REQUEST.replace(KEY, 'short=='),
      REQUEST.replace('Origin: http://example', 'Origin http-example'),
    ];
    for (const text of bad) {
      const hs = new WsHandshake();
      const b = ascii(text);
      throws(() => hs.push(b, 0, b.length), isFramingError(FramingErrorCode.HANDSHAKE), text.slice(0, 40));
    }
    const long = ascii('GET / HTTP/1.1\r\nX: ' + 'a'.repeat(MAX_HANDSHAKE_BYTES) + '\r\n\r\n');
    throws(() => new WsHandshake().push(long, 0, long.length), isFramingError(FramingErrorCode.HANDSHAKE));
  });

  it('answers each refusal with the status the host gives it: 426, 405, else 400', () => {
    const cases: [string, number][] = [
      ['GET / HTTP/1.1\r\nHost: h\r\n\r\n', 426],
      [REQUEST.replace('Upgrade: WebSocket\r\n', ''), 426],
      [REQUEST.replace('keep-alive, Upgrade', 'keep-alive'), 426],
      [REQUEST.replace('GET', 'POST'), 405],
      [REQUEST.replace('Upgrade: WebSocket', 'Upgrade: h2c'), 400],
      [REQUEST.replace('Version: 13', 'Version: 8'), 400],
      [REQUEST.replace(KEY, 'short=='), 400],
    ];
    for (const [text, status] of cases) {
      const hs = new WsHandshake();
      const b = ascii(text);
      throws(() => hs.push(b, 0, b.length), isFramingError(FramingErrorCode.HANDSHAKE), text.slice(0, 40));
      equal(hs.refusal, status, text.slice(0, 40));
      ok(wsRefusedResponse(hs.refusal).startsWith(`HTTP/1.1 ${status} `));
    }
    const sub = new WsHandshake();
    const withSub = ascii(REQUEST.replace('Origin:', 'Sec-WebSocket-Protocol: chat, hub\r\nOrigin:'));
    equal(sub.push(withSub, 0, withSub.length), withSub.length);
    ok(!wsUpgradeResponse('x').toLowerCase().includes('sec-websocket-protocol'));
  });

  it('hashes key + GUID and answers 101', () => {
    let hashed = '';
    const fake = (text: string): Uint8Array => {
      hashed = text;
      return new Uint8Array([0xfb, 0xff, 0x00]);
    };
    equal(wsAccept(KEY, fake), '+/8A');
    equal(hashed, KEY + WS_GUID);
    equal(wsUpgradeResponse('abc='), 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: abc=\r\n\r\n');
  });

  it('base64 matches RFC 4648 §10', () => {
    const v: [string, string][] = [['', ''], ['f', 'Zg=='], ['fo', 'Zm8='], ['foo', 'Zm9v'], ['foob', 'Zm9vYg=='], ['fooba', 'Zm9vYmE='], ['foobar', 'Zm9vYmFy']];
    for (const [plain, enc] of v) equal(base64Encode(ascii(plain)), enc, plain);
  });
});
