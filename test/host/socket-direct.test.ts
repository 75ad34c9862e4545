// The device's route in C hands a push's DATA frame straight to a Wi-Fi link's socket in the
// steady case (device/native/route.c routeDirect, what it reads and writes named by
// bindings/tcp/socket-port.ts SocketDirectFields). The device bench runs and prices the same steps
// in script (bench/device.bench.ts routeDirect). Here that script is held to TcpLink.send itself:
// two identical links on identical sockets take the same random run of sends, clock steps,
// client ACKs, socket acknowledgements, pumps and failing writes, one through routeDirect (and its
// `send` when routeDirect declines), the other through `send` alone, and must write the same bytes
// and leave the same numbers after every step, with the direct path taken in the steady state
// and each of its reasons to decline met. The names route.c looks up are held to the objects the
// link and its port are.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { LinkFraming, type LinkFramingCode, TcpLink } from '../../bindings/tcp/egress.js';
import { SocketPort, type SocketDirectFields, type StreamSocket } from '../../bindings/tcp/socket-port.js';
import { routeDirect } from '../../bench/device.bench.js';
import { CborWriter } from '../../hub/cbor.js';
import { encodeData, FrameType } from '../../hub/frames.js';
import { tagOf, type Link, type LinkSink } from '../../hub/ports.js';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const SEND_BUFFER = 8192;
const LIMIT = 700;
const DATA = tagOf(FrameType.DATA, 0, 10);

class Clock {
  t = 1000;
  now(): number {
    return this.t;
  }
}

class Hub {
  lost = 0;
  frames = 0;
  attach(_link: Link): LinkSink {
    return { frame: () => this.frames++, lost: () => this.lost++, levelChanged: () => {} };
  }
}

/** lwIP's socket as the port sees it (test/core/socket-port.test.ts's): what was written, what is free; a write may fail. */
class Socket implements StreamSocket {
  readonly bytes: number[] = [];
  free = SEND_BUFFER;
  writes = 0;
  closes = 0;
  /** The write that fails, counted from the next (1: the header's, 2: the frame's); 0 none. */
  failIn = 0;
  write(b: Uint8Array): number {
    if (this.failIn > 0 && --this.failIn === 0) throw new Error('connection reset');
    this.writes++;
    if (b.length > this.free) throw new Error('would block');
    for (let i = 0; i < b.length; i++) this.bytes.push(b[i] as number);
    this.free -= b.length;
    return this.free;
  }
  close(): void {
    this.closes++;
  }
}

class Port extends SocketPort {
  open(socket: Socket): void {
    this.opened(socket);
  }
  protected schedule(): void {}
  protected released(): void {}
  fireWritable(free: number): void {
    this.writable(free);
  }
  fireTurn(): void {
    this.turn();
  }
}

const REQUEST = 'GET /hub HTTP/1.1\r\nHost: hub.local\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n';

interface Rig {
  link: TcpLink;
  port: Port;
  socket: Socket;
  clock: Clock;
  hub: Hub;
}

function rig(framing: LinkFramingCode, ackWindowFrames?: number): Rig {
  const clock = new Clock();
  const hub = new Hub();
  const link = new TcpLink({ hub, clock, framing, binding: framing === LinkFraming.WS_SERVER ? 'ws' : 'tcp', sha1: () => new Uint8Array(20), ackWindowFrames });
  const port = new Port(link, LIMIT);
  const socket = new Socket();
  port.open(socket);
  port.fireWritable(socket.free);
  if (framing === LinkFraming.WS_SERVER) {
    const req = new Uint8Array(REQUEST.length);
    for (let i = 0; i < REQUEST.length; i++) req[i] = REQUEST.charCodeAt(i);
    link.input(req, 0, req.length);
    // The 101 answer was queued: the pump hands it over.
    port.fireTurn();
  }
  return { link, port, socket, clock, hub };
}

const writer = new CborWriter(new Uint8Array(4096));
// Values a float64 holds and no shorter float does: 9 bytes each, so a frame of 14 or more passes 126 bytes.
const values = new Float64Array(64).map((_, i) => Math.PI * (i + 1));
function data(seq: number, fields: number): Uint8Array {
  writer.reset();
  encodeData(writer, 10, seq, seq, values, fields, false, 0);
  return writer.buf.slice(0, writer.pos);
}

/** Frames the link has handed over (its ack counter's). */
function started(r: Rig): number {
  return (r.link as unknown as SocketDirectFields).acks.started;
}

/** Everything the two paths could leave differently. */
function state(r: Rig): unknown {
  const l = r.link as unknown as SocketDirectFields & { level: number; queue: { held: number; count: number }; acks: { acked: number }; detector: { lagFrames: number; judgements: number } };
  const p = r.port as unknown as { room: number; free: number; total: number };
  const ring = l.acks.handedAt;
  return {
    bytes: r.socket.bytes.length,
    tail: r.socket.bytes.slice(-64),
    writes: r.socket.writes,
    closes: r.socket.closes,
    room: p.room,
    free: p.free,
    total: p.total,
    started: l.acks.started,
    ring: ring === null ? null : Array.from(ring),
    throughput: [l.throughput.windowStart, l.throughput.bytes],
    movedAt: l.movedAt,
    held: l.queue.held,
    queued: l.queue.count,
    detectorQueue: l.detector.queue,
    lagFrames: l.detector.lagFrames,
    judgements: l.detector.judgements,
    acked: l.acks.acked,
    level: r.link.level,
    state: r.link.state,
    lost: r.hub.lost,
  };
}

type Op =
  | { kind: 'send'; fields: number }
  | { kind: 'step'; ms: number }
  | { kind: 'ack'; back: number }
  | { kind: 'writable'; keep: number }
  | { kind: 'turn' }
  | { kind: 'fail'; write: number };

const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 90, arbitrary: fc.record({ kind: fc.constant('send' as const), fields: fc.oneof({ weight: 6, arbitrary: fc.integer({ min: 0, max: 8 }) }, { weight: 1, arbitrary: fc.integer({ min: 9, max: 32 }) }) }) },
  { weight: 24, arbitrary: fc.record({ kind: fc.constant('step' as const), ms: fc.oneof({ weight: 40, arbitrary: fc.integer({ min: 0, max: 40 }) }, { weight: 3, arbitrary: fc.constantFrom(0.5, 250, 1200) }, { weight: 1, arbitrary: fc.constant(2 ** 32) }) }) },
  { weight: 24, arbitrary: fc.record({ kind: fc.constant('ack' as const), back: fc.oneof({ weight: 8, arbitrary: fc.integer({ min: 0, max: 3 }) }, { weight: 2, arbitrary: fc.integer({ min: 4, max: 40 }) }, { weight: 1, arbitrary: fc.integer({ min: 44, max: 60 }) }) }) },
  { weight: 40, arbitrary: fc.record({ kind: fc.constant('writable' as const), keep: fc.oneof({ weight: 4, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.integer({ min: 1, max: 800 }) }) }) },
  { weight: 9, arbitrary: fc.record({ kind: fc.constant('turn' as const) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('fail' as const), write: fc.integer({ min: 1, max: 2 }) }) },
);

/** Takes both rigs through `ops`; returns them, and how many sends went the direct way and how many did not. */
function run(framing: LinkFramingCode, ops: readonly Op[], ackWindowFrames?: number): { a: Rig; b: Rig; seq: number; direct: number; declined: number } {
  const a = rig(framing, ackWindowFrames);
  const b = rig(framing, ackWindowFrames);
  assert.deepEqual(state(a), state(b), 'two fresh rigs');
  let seq = 0;
  let direct = 0;
  let declined = 0;
  const count = { reads: 0, accessors: 0 };
  for (const o of ops) {
    for (const r of [a, b]) {
      if (o.kind === 'step') r.clock.t += o.ms;
      else if (o.kind === 'ack') r.link.acked(Math.max(0, started(r) - o.back));
      else if (o.kind === 'writable') {
        // The client's stack acknowledged all but `keep` of what lwIP holds.
        const held = SEND_BUFFER - r.socket.free;
        r.socket.free = SEND_BUFFER - Math.min(held, o.keep);
        r.port.fireWritable(r.socket.free);
      } else if (o.kind === 'turn') r.port.fireTurn();
      else if (o.kind === 'fail') r.socket.failIn = o.write;
    }
    if (o.kind === 'send') {
      seq++;
      const frame = data(seq, o.fields);
      const viaDirect = routeDirect(a.link as unknown as SocketDirectFields, frame, true, a.clock.t, count, null);
      const tookA = viaDirect || a.link.send(frame, DATA, seq);
      const tookB = b.link.send(frame, DATA, seq);
      assert.equal(tookA, tookB, `send ${seq}: taken the same`);
      if (viaDirect) direct++;
      else declined++;
    }
    assert.deepEqual(state(a), state(b), `after ${JSON.stringify(o)}`);
    assert.deepEqual(a.socket.bytes, b.socket.bytes, `the same bytes on the wire after ${JSON.stringify(o)}`);
  }
  return { a, b, seq, direct, declined };
}

/** Both rigs through `ops`, then one send of a frame of `fields` values each way: it must be declined, and both must end the same. */
function declines(framing: LinkFramingCode, ops: readonly Op[], fields: number, ackWindowFrames?: number): void {
  const { a, b, seq: before } = run(framing, ops, ackWindowFrames);
  const seq = before + 1;
  const frame = data(seq, fields);
  const writes = a.socket.writes;
  assert.equal(routeDirect(a.link as unknown as SocketDirectFields, frame, true, a.clock.t, null, null), false, 'declined');
  assert.equal(a.socket.writes, writes, 'nothing written by the declined direct send');
  assert.equal(a.link.send(frame, DATA, seq), b.link.send(frame, DATA, seq));
  assert.deepEqual(state(a), state(b));
  assert.deepEqual(a.socket.bytes, b.socket.bytes);
}

const sends = (n: number, fields = 4): Op[] => Array.from({ length: n }, () => ({ kind: 'send' as const, fields }));
const drained: Op = { kind: 'writable', keep: 0 };

describe('device route: a Wi-Fi send straight to the socket (route.c routeDirect) as TcpLink.send', () => {
  for (const [name, framing] of [
    ['length prefix', LinkFraming.LENGTH_PREFIX],
    ['WebSocket', LinkFraming.WS_SERVER],
  ] as const) {
    for (const window of [undefined, 12]) {
      it(`${name}${window ? `, an ack window of ${window}` : ''}: the same bytes and numbers as the link's own send, for random runs`, () => {
        let direct = 0;
        let declined = 0;
        fc.assert(
          fc.property(fc.array(op, { minLength: 20, maxLength: 150, size: 'max' }), (ops) => {
            const r = run(framing, ops, window);
            direct += r.direct;
            declined += r.declined;
          }),
          { numRuns: 80, seed: 0x5d1 },
        );
        // Both ways were taken, many times: the comparison is of something.
        assert.ok(direct > 1000, `direct sends: ${direct}`);
        assert.ok(declined > 500, `declined sends: ${declined}`);
      });
    }
  }

  it('takes the steady case: a quiet link with room sends directly, its header and frame in two writes', () => {
    const r = rig(LinkFraming.LENGTH_PREFIX);
    const count = { reads: 0, accessors: 0 };
    const frame = data(1, 6);
    const before = r.socket.writes;
    assert.equal(routeDirect(r.link as unknown as SocketDirectFields, frame, true, r.clock.t, count, null), true);
    assert.equal(r.socket.writes - before, 2);
    assert.deepEqual(r.socket.bytes.slice(-frame.length - 2), [frame.length >>> 8, frame.length & 0xff, ...frame]);
    assert.equal(started(r), 1, 'the frame counts as handed over');
    assert.ok(count.reads > 20 && count.accessors === 1, `the C's reads counted: ${JSON.stringify(count)}`);
  });

  it("declines, writing nothing, for each of its reasons, and the link's send then does what it would have", () => {
    // A fractional time (the ack ring keeps whole ms), and past 2^32 ms.
    declines(LinkFraming.LENGTH_PREFIX, [{ kind: 'step', ms: 0.5 }], 4);
    declines(LinkFraming.LENGTH_PREFIX, [{ kind: 'step', ms: 2 ** 32 }], 4);
    // No room for the next frame and its 2-byte header (the frames before it took the limit).
    const frame = data(1, 4);
    declines(LinkFraming.LENGTH_PREFIX, sends(Math.floor(LIMIT / (frame.length + 2))), 4);
    {
      const a = rig(LinkFraming.LENGTH_PREFIX);
      (a.port as unknown as { room: number }).room = frame.length + 1;
      assert.equal(routeDirect(a.link as unknown as SocketDirectFields, frame, true, a.clock.t, null, null), false, 'room for the frame, not its header');
    }
    // Frames queued ahead: the port's room is 0 until its pump has run, so the link's queue is
    // asked first only here, with the room set by hand.
    {
      const a = rig(LinkFraming.LENGTH_PREFIX);
      for (let i = 0; i < 20; i++) a.link.send(data(i + 1, 4), DATA, i + 1);
      assert.ok((a.link as unknown as { queue: { held: number } }).queue.held > 0, 'frames queued');
      (a.port as unknown as { room: number }).room = LIMIT;
      const writes = a.socket.writes;
      assert.equal(routeDirect(a.link as unknown as SocketDirectFields, frame, true, a.clock.t, null, null), false, 'frames wait ahead');
      assert.equal(a.socket.writes, writes);
    }
    // The ack window closed (12 frames unacknowledged).
    declines(LinkFraming.LENGTH_PREFIX, [{ kind: 'ack', back: 0 }, ...sends(6), drained, ...sends(6), drained], 4, 12);
    // The ack lag watched: 47 frames unacknowledged after an ACK, the 48th is the script's.
    const lag: Op[] = [{ kind: 'ack', back: 0 }];
    for (let i = 0; i < 47; i++) lag.push({ kind: 'send', fields: 0 }, drained);
    declines(LinkFraming.LENGTH_PREFIX, lag, 0);
    // The throughput window closed (a second and more since it opened).
    declines(LinkFraming.WS_SERVER, [{ kind: 'step', ms: 1200 }], 4);
    // A WebSocket frame of 126 bytes or more (a 4-byte header).
    declines(LinkFraming.WS_SERVER, [], 20);
  });

  it("the names route.c looks up for the direct write are the link's and its port's", () => {
    const source = readFileSync(join(repo, 'device/native/route.c'), 'utf8');
    const ids = new Map<string, string>();
    for (const m of source.matchAll(/(id\w+) = xsID\("(\w+)"\)/g)) ids.set(m[1] as string, m[2] as string);
    const start = source.indexOf('static int routeDirect(');
    const body = source.slice(start, source.indexOf('\n}\n', start));
    const used = new Set<string>();
    for (const m of body.matchAll(/\bid[A-Z]\w*/g)) used.add(ids.get(m[0]) ?? `unknown ${m[0]}`);
    assert.ok(used.size >= 20, `routeDirect looks up ${used.size} names`);
    const r = rig(LinkFraming.LENGTH_PREFIX);
    const l = r.link as unknown as SocketDirectFields;
    const holders: object[] = [r.link, l.acks, l.queue, l.throughput, l.detector, r.port, r.socket];
    for (const name of used) assert.ok(holders.some((h) => name in h), `route.c's ${name} is no property of the link, its port or theirs`);
    // And a name no longer there would fail: the check is of something.
    assert.ok(!holders.some((h) => 'handedAtt' in h));
  });
});
