// hub/estop-frame.ts and hub/crc16.ts: the 12-byte ESTOP frame (§11.2) byte by byte.
import fc from 'fast-check';
import { crc16, crc16Update, CRC16_INIT } from '../../hub/crc16.js';
import {
  decodeEstop,
  encodeEstop,
  EstopError,
  EstopFrameError,
  EstopKind,
  EstopSource,
  ESTOP_FLAG_LATCHED,
  ESTOP_FRAME_BYTES,
  ESTOP_MAGIC,
  ESTOP_NACK_FRAME_TYPE,
  isEstopFrame,
  type EstopErrorName,
} from '../../hub/estop-frame.js';
import { deepEqual, equal, ok, throws } from '../lib/assert.js';
import { runs } from '../lib/env.js';
import { hexToBytes } from '../lib/vector-json.js';
import estopJson from '../vectors/estop.json' with { type: 'json' };
import framesJson from '../vectors/frames.json' with { type: 'json' };

const ascii = (s: string): Uint8Array => Uint8Array.from(s, (c) => c.charCodeAt(0));

function errorOf(buf: Uint8Array, offset: number, len: number): EstopErrorName {
  const e = throws(() => decodeEstop(buf, offset, len), (x) => x instanceof EstopFrameError) as EstopFrameError;
  equal(e.code, EstopError[e.codeName]);
  return e.codeName;
}

function frame(kind: number, source: number, flags: number, origin: number, seq: number): Uint8Array {
  const b = new Uint8Array(ESTOP_FRAME_BYTES);
  encodeEstop(b, 0, kind, source, flags, origin, seq);
  return b;
}

// Bytes 0..9 as given, bytes 10..11 a correct CRC over them.
function sealed(bytes: number[]): Uint8Array {
  const b = new Uint8Array(12);
  b.set(bytes);
  const c = crc16(b, 0, 10);
  b[10] = c >> 8;
  b[11] = c & 0xff;
  return b;
}

describe('crc16 (CCITT-FALSE)', () => {
  it('has the catalogued check value 0x29B1 for "123456789"', () => {
    equal(crc16(ascii('123456789')), 0x29b1);
  });

  it('starts at 0xFFFF with no final xor', () => {
    equal(CRC16_INIT, 0xffff);
    equal(crc16(new Uint8Array(0)), 0xffff);
    equal(crc16(Uint8Array.of(0x00)), 0xe1f0);
    equal(crc16(ascii('A')), 0xb915);
  });

  it('covers only [start, end) and composes byte by byte', () => {
    const b = ascii('xx123456789yy');
    equal(crc16(b, 2, 11), 0x29b1);
    let c = CRC16_INIT;
    for (const x of ascii('123456789')) c = crc16Update(c, x);
    equal(c, 0x29b1);
  });
});

describe('ESTOP frame: constants', () => {
  it('pins the wire numbers', () => {
    equal(ESTOP_FRAME_BYTES, 12);
    equal(ESTOP_MAGIC, 0xe5);
    equal(ESTOP_NACK_FRAME_TYPE, 0xe5);
    equal(ESTOP_FLAG_LATCHED, 1);
    deepEqual({ ...EstopKind }, { ASSERT: 1, CLEARED: 2 });
    deepEqual({ ...EstopSource }, { CLIENT: 0, HUB_BUTTON: 1, DEADMAN: 2, WATCHDOG: 3, ROBOT: 4, FLEET: 5 });
    deepEqual({ ...EstopError }, { BAD_LENGTH: 1, BAD_MAGIC: 2, BAD_CRC: 3, BAD_KIND: 4, BAD_SOURCE: 5 });
  });

  it('the magic is CBOR major type 7, never the first byte of one of our CBOR frames', () => {
    equal(ESTOP_MAGIC >> 5, 7);
    for (const v of framesJson as { hex: string }[]) {
      const b = hexToBytes(v.hex);
      ok((b[0] as number) >= 0xa0 && (b[0] as number) <= 0xbf, v.hex.slice(0, 4));
      equal(isEstopFrame(b, 0), false);
    }
  });
});

describe('ESTOP frame: layout', () => {
  it('writes every field at its offset, big-endian', () => {
    const b = frame(EstopKind.ASSERT, EstopSource.DEADMAN, ESTOP_FLAG_LATCHED, 0x01020304, 0xa0b1);
    deepEqual(Array.from(b.subarray(0, 10)), [0xe5, 1, 2, 1, 0x01, 0x02, 0x03, 0x04, 0xa0, 0xb1]);
    equal(((b[10] as number) << 8) | (b[11] as number), crc16(b, 0, 10));
  });

  it('matches the worked example of docs/protocol.md', () => {
    const b = frame(EstopKind.ASSERT, EstopSource.CLIENT, ESTOP_FLAG_LATCHED, 7, 1);
    deepEqual(b, hexToBytes('e50100010000000700014a99'));
  });

  it('encodes at an offset without touching the bytes around it', () => {
    const buf = new Uint8Array(20).fill(0x55);
    equal(encodeEstop(buf, 4, EstopKind.CLEARED, EstopSource.HUB_BUTTON, 0, 0, 9), 16);
    deepEqual(Array.from(buf.subarray(0, 4)), [0x55, 0x55, 0x55, 0x55]);
    deepEqual(Array.from(buf.subarray(16)), [0x55, 0x55, 0x55, 0x55]);
    ok(isEstopFrame(buf, 4));
    deepEqual(decodeEstop(buf, 4, 12), { kind: 2, source: 1, flags: 0, origin: 0, seq: 9 });
  });

  it('refuses to write past the buffer', () => {
    throws(() => encodeEstop(new Uint8Array(11), 0, 1, 0, 1, 0, 0), (e) => e instanceof RangeError);
    throws(() => encodeEstop(new Uint8Array(20), 9, 1, 0, 1, 0, 0), (e) => e instanceof RangeError);
    throws(() => encodeEstop(new Uint8Array(20), -1, 1, 0, 1, 0, 0), (e) => e instanceof RangeError);
  });

  it('round-trips every field over its whole range', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(1, 2),
        fc.integer({ min: 0, max: 5 }),
        fc.integer({ min: 0, max: 255 }),
        fc.integer({ min: 0, max: 0xffffffff }),
        fc.integer({ min: 0, max: 0xffff }),
        (kind, source, flags, origin, seq) => {
          deepEqual(decodeEstop(frame(kind, source, flags, origin, seq), 0, 12), { kind, source, flags, origin, seq });
        },
      ),
      { numRuns: runs(10000, 200) },
    );
  });

  it('reports reserved flag bits as they arrived', () => {
    equal(decodeEstop(frame(1, 0, 0xff, 1, 1), 0, 12).flags, 0xff);
  });
});

describe('ESTOP frame: errors', () => {
  const good = frame(EstopKind.ASSERT, EstopSource.CLIENT, ESTOP_FLAG_LATCHED, 7, 1);

  it('BAD_LENGTH for any length but 12, or a frame past the buffer', () => {
    for (const len of [0, 1, 11, 13, 24]) {
      const buf = new Uint8Array(30);
      buf.set(good);
      equal(errorOf(buf, 0, len), 'BAD_LENGTH', String(len));
    }
    equal(errorOf(good, 1, 12), 'BAD_LENGTH');
    equal(errorOf(good, -1, 12), 'BAD_LENGTH');
  });

  it('BAD_MAGIC for any other first byte', () => {
    for (let first = 0; first < 256; first++) {
      if (first === ESTOP_MAGIC) continue;
      const b = sealed([first, 1, 0, 1, 0, 0, 0, 7, 0, 1]);
      equal(errorOf(b, 0, 12), 'BAD_MAGIC');
      equal(isEstopFrame(b, 0), false);
    }
  });

  it('BAD_CRC for a wrong checksum', () => {
    const b = good.slice();
    b[11] = (b[11] as number) ^ 0xff;
    equal(errorOf(b, 0, 12), 'BAD_CRC');
  });

  it('BAD_KIND for kinds other than 1 and 2 under a valid CRC', () => {
    for (const kind of [0, 3, 0x81, 255]) equal(errorOf(sealed([0xe5, kind, 0, 1, 0, 0, 0, 7, 0, 1]), 0, 12), 'BAD_KIND');
  });

  it('BAD_SOURCE for sources above 5 under a valid CRC', () => {
    for (const source of [6, 7, 128, 255]) equal(errorOf(sealed([0xe5, 1, source, 1, 0, 0, 0, 7, 0, 1]), 0, 12), 'BAD_SOURCE');
  });

  it('detects every single-bit flip', () => {
    for (const v of (estopJson as { valid: { hex: string }[] }).valid) {
      const b = hexToBytes(v.hex);
      for (let bit = 0; bit < 96; bit++) {
        const c = b.slice();
        c[bit >> 3] = (c[bit >> 3] as number) ^ (0x80 >> (bit & 7));
        equal(errorOf(c, 0, 12), bit < 8 ? 'BAD_MAGIC' : 'BAD_CRC', `${v.hex} bit ${bit}`);
      }
    }
  });

  it('detects every two-bit flip after the magic byte', () => {
    const vectors = (estopJson as { valid: { hex: string }[] }).valid;
    const n = runs(vectors.length, 1);
    for (let i = 0; i < n; i++) {
      const b = hexToBytes((vectors[i] as { hex: string }).hex);
      for (let x = 8; x < 96; x++) {
        for (let y = x + 1; y < 96; y++) {
          const c = b.slice();
          c[x >> 3] = (c[x >> 3] as number) ^ (0x80 >> (x & 7));
          c[y >> 3] = (c[y >> 3] as number) ^ (0x80 >> (y & 7));
          equal(errorOf(c, 0, 12), 'BAD_CRC');
        }
      }
    }
  });

  it('isEstopFrame looks only at the first byte, within the buffer', () => {
    ok(isEstopFrame(Uint8Array.of(0xe5), 0));
    ok(isEstopFrame(Uint8Array.of(0, 0xe5), 1));
    equal(isEstopFrame(Uint8Array.of(0xe5), 1), false);
    equal(isEstopFrame(Uint8Array.of(0xe5), -1), false);
    equal(isEstopFrame(new Uint8Array(0), 0), false);
  });
});
