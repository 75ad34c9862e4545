// bindings/tcp/socket-port.ts: the socket end of a TcpLink on the device (what bindings/tcp/device.ts
// runs over the SDK's lwIP socket, and the device bench over its stand-in), driven here with a real
// TcpLink and a socket that behaves as the SDK's: `write` copies, returns the send-buffer bytes
// still free, and throws when told to; `onWritable(free)` is the test's to fire.
import { deepEqual, equal, ok } from '../lib/assert.js';
import { LinkFraming, LinkState, MIN_QUEUE_BYTES, TcpLink } from '../../bindings/tcp/egress.js';
import { SocketPort, type StreamSocket } from '../../bindings/tcp/socket-port.js';
import { CborWriter } from '../../hub/cbor.js';
import { encodeData, FrameType } from '../../hub/frames.js';
import { tagOf, type Link, type LinkSink } from '../../hub/ports.js';

const SEND_BUFFER = 8192;
const LIMIT = 2872;

class Clock {
  t = 1000;
  now(): number {
    return this.t;
  }
}

class Hub {
  attach(_link: Link): LinkSink {
    return { frame: () => {}, lost: () => {}, levelChanged: () => {} };
  }
}

/** lwIP's socket as the port sees it: every byte written, in order; what is still free. */
class Socket implements StreamSocket {
  readonly bytes: number[] = [];
  free = SEND_BUFFER;
  writes = 0;
  closes = 0;
  throwOnWrite = false;
  /** The SDK returns nothing (undefined) from a write on a socket lwIP has already failed. */
  failedQuietly = false;
  write(b: Uint8Array): number {
    if (this.throwOnWrite) throw new Error('not ready');
    this.writes++;
    if (b.length > this.free) throw new Error('would block');
    for (let i = 0; i < b.length; i++) this.bytes.push(b[i] as number);
    this.free -= b.length;
    return this.failedQuietly ? (undefined as unknown as number) : this.free;
  }
  close(): void {
    this.closes++;
  }
  /** The client's stack acknowledged everything: the buffer is free again. */
  acknowledgeAll(): number {
    this.free = SEND_BUFFER;
    return this.free;
  }
}

class Port extends SocketPort {
  schedules = 0;
  releases = 0;
  open(socket: Socket): void {
    this.opened(socket);
  }
  protected schedule(): void {
    this.schedules++;
  }
  protected released(): void {
    this.releases++;
  }
  fireWritable(free: number): void {
    this.writable(free);
  }
  fireTurn(): void {
    this.turn();
  }
  fireError(): void {
    this.end();
  }
}

const w = new CborWriter(new Uint8Array(2048));
const values = new Float64Array(64);
function data(seq: number, fields = 6): Uint8Array {
  w.reset();
  encodeData(w, 10, seq, seq, values, fields, false, 0);
  return w.buf.slice(0, w.pos);
}
const DATA = tagOf(FrameType.DATA, 0, 10);

function prefixed(frames: Uint8Array[]): number[] {
  const out: number[] = [];
  for (const f of frames) {
    out.push(f.length >>> 8, f.length & 0xff);
    for (let i = 0; i < f.length; i++) out.push(f[i] as number);
  }
  return out;
}

function rig(): { link: TcpLink; port: Port; socket: Socket; clock: Clock } {
  const clock = new Clock();
  const link = new TcpLink({ hub: new Hub(), clock, framing: LinkFraming.LENGTH_PREFIX, binding: 'tcp', queueBytes: MIN_QUEUE_BYTES });
  const port = new Port(link, LIMIT);
  const socket = new Socket();
  equal(port.room, 0, 'no socket yet: no room');
  port.open(socket);
  // lwIP's first onWritable, at accept: the whole buffer free.
  port.fireWritable(socket.free);
  return { link, port, socket, clock };
}

describe('bindings/tcp/socket-port: the socket end of a TcpLink on the device', () => {
  it('offers the link what lwIP takes within the limit, and hands frames straight over with their prefix', () => {
    const { link, port, socket } = rig();
    equal(port.room, LIMIT, 'a fresh socket: the limit, not the whole send buffer');
    const frames = [data(1), data(2), data(3)];
    for (let i = 0; i < frames.length; i++) ok(link.send(frames[i] as Uint8Array, DATA, i + 1));
    deepEqual(socket.bytes, prefixed(frames), 'each frame after its length prefix, in order');
    equal(socket.writes, 6, 'a write for the prefix and one for the frame');
    const sent = socket.bytes.length;
    equal(port.room, LIMIT - sent, 'what lwIP holds unacknowledged comes off the room');
    port.fireWritable(socket.acknowledgeAll());
    equal(port.room, LIMIT, 'acknowledged: the room is back');
    equal(port.schedules, 0, 'nothing was queued: no pump');
  });

  it('never offers more than lwIP says is free, and nothing once the held bytes reach the limit', () => {
    const { port, socket } = rig();
    port.fireWritable(1000);
    equal(port.room, 0, `${SEND_BUFFER - 1000} bytes held is past the limit`);
    port.fireWritable(SEND_BUFFER - 100);
    equal(port.room, LIMIT - 100);
    // A smaller buffer than the limit: the free bytes bound it.
    const clock = new Clock();
    const link = new TcpLink({ hub: new Hub(), clock, framing: LinkFraming.LENGTH_PREFIX, binding: 'tcp', queueBytes: MIN_QUEUE_BYTES });
    const small = new Port(link, LIMIT);
    small.open(socket);
    small.fireWritable(500);
    equal(small.room, 500);
  });

  it('queues what does not fit, schedules one pump, offers no room until it ran, and then writes the queue in order', () => {
    const { link, port, socket } = rig();
    const big = data(1, 60);
    const frames: Uint8Array[] = [];
    let seq = 1;
    // Fill the room: the frames that fit go straight over, the next one is queued.
    while (port.room >= big.length + 2) {
      const f = data(seq, 60);
      frames.push(f);
      ok(link.send(f, DATA, seq++));
    }
    const straight = socket.bytes.length;
    const queued = [data(seq, 60), data(seq + 1, 60)];
    for (const f of queued) ok(link.send(f, DATA, seq++));
    equal(socket.bytes.length, straight, 'no room: nothing more written');
    equal(port.schedules, 1, 'one pump scheduled for the queue');
    equal(port.room, 0, 'while a pump is owed the link queues (what is queued goes first)');
    ok(link.send(data(99), DATA, seq++), 'a small frame that would fit is queued behind them');
    queued.push(data(99));
    equal(port.schedules, 1, 'still one pump');
    // lwIP acknowledges, then the pump's turn comes.
    port.fireWritable(socket.acknowledgeAll());
    port.fireTurn();
    deepEqual(socket.bytes, prefixed([...frames, ...queued]), 'everything, in the order sent');
    equal(link.queue.held, 0);
    ok(port.room > 0, 'room again once the pump ran');
  });

  it('hands what the link holds to the socket when lwIP frees room, without waiting for a pump', () => {
    const { link, port, socket } = rig();
    port.fireWritable(SEND_BUFFER - LIMIT);
    equal(port.room, 0);
    const f = data(1);
    ok(link.send(f, DATA, 1));
    equal(socket.bytes.length, 0, 'queued');
    port.fireWritable(socket.acknowledgeAll());
    deepEqual(socket.bytes, prefixed([f]), 'the acknowledgement pumped it');
  });

  it('ends the socket once when a write throws: the link is told, the port offers nothing and writes nothing more', () => {
    const { link, port, socket } = rig();
    socket.throwOnWrite = true;
    link.send(data(1), DATA, 1);
    equal(socket.closes, 1);
    equal(port.releases, 1);
    equal(port.room, 0);
    equal(link.state, LinkState.CLOSED, 'the link knows its transport is gone');
    const schedules = port.schedules;
    port.kick();
    equal(port.schedules, schedules, 'no pump for a socket that is gone');
    socket.throwOnWrite = false;
    port.writeFrame(null, data(2));
    port.fireError();
    port.fireWritable(SEND_BUFFER);
    equal(socket.writes, 0, 'nothing written after the end');
    equal(socket.closes, 1, 'closed once');
    equal(port.releases, 1, 'released once');
    equal(port.room, 0);
  });

  it('reads a write that returns nothing (lwIP failed the socket) as no room left', () => {
    const { link, port, socket } = rig();
    socket.failedQuietly = true;
    ok(link.send(data(1), DATA, 1));
    equal(port.room, 0);
  });

  it('gives the socket up when the link closes it: what the link holds goes first, as far as lwIP takes it, then the end', () => {
    const { link, port, socket } = rig();
    port.fireWritable(SEND_BUFFER - LIMIT);
    const f = data(1);
    ok(link.send(f, DATA, 1));
    port.fireWritable(SEND_BUFFER - LIMIT + 200);
    equal(socket.bytes.length, f.length + 2, 'the acknowledgement pumped it');
    ok(link.send(data(2), DATA, 2));
    const schedules = port.schedules;
    port.close(1000);
    deepEqual(socket.bytes, prefixed([f, data(2)]), 'both frames went before the end');
    equal(socket.closes, 1);
    equal(port.releases, 1);
    equal(port.room, 0);
    equal(link.state, LinkState.CLOSED);
    port.kick();
    equal(port.schedules, schedules, 'a kick after the end schedules nothing');
  });
});
