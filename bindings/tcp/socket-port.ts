// The socket end of one TcpLink on the device, without the SDK's modules: how much the socket takes
// now, the frame handed straight to it, the pump that hands it what the link queued, and the end.
// bindings/tcp/device.ts's DeviceTransport adds the SDK's socket and timer; the device bench
// (bench/device.bench.ts) runs this same code over a stand-in socket, so that the device budget
// counts what the device runs for every frame (docs/performance.md "Fits the ESP32").
//
// lwIP facts this relies on (the SDK's lwIP TCP socket, device/typings/embedded_io/socket/tcp.d.ts):
// `onWritable(free)` fires when the socket is accepted and on every ACK with the free send-buffer
// bytes; `write` throws "would block" when given more than that and otherwise returns what is
// still free. The largest `free` ever seen is the send buffer, so `total − free` is what lwIP
// still holds unacknowledged: the port keeps that below its limit, so the backlog of a slow
// client waits in the link's egress queue, where the §10.3 watermark sees it.

import type { DirectTransport, TcpLink } from './egress.js';

/**
 * What the device's route in C (device/native/route.c routeDirect) reads and writes, by name, to
 * hand a push's DATA frame straight to the socket as TcpLink.send's first branch does, for a link
 * whose `direct` is a SocketPort: the link's numbers, then the port's. The C takes only the
 * steady case (nothing queued, the ack window open, a length prefix or a WebSocket frame under 126
 * bytes, room for it, a whole-ms time, the throughput window open, the watermark at 0, the ack lag
 * not yet watched) and leaves anything else to the link's `send`; what it leaves behind is what
 * `send` leaves, with the push's clock reading as the send's (the device's clock counts whole
 * ms: a push that crosses one records its sends 1 ms earlier than `send` would).
 * test/host/socket-direct.test.ts holds the bench's model of the C to `send`, and the names
 * route.c looks up to these objects: a rename here must be made in route.c too (a name the C
 * reads before it decides would only make it decline; one it writes after, it would write
 * wrongly).
 */
export interface SocketDirectFields {
  direct: SocketDirectPort | null;
  readonly queue: { readonly held: number };
  readonly acks: { started: number; readonly mask: number; readonly handedAt: Float64Array | Uint32Array | null };
  readonly windowEnd: number;
  /** 0 a length prefix, 1 a WebSocket server (LinkFraming). */
  readonly framing: number;
  /** The link's 2-byte header buffer. */
  readonly hdr2: Uint8Array;
  readonly throughput: { readonly windowStart: number; readonly windowMs: number; bytes: number };
  readonly detector: { readonly queue: number };
  readonly lagFrom: number;
  movedAt: number;
}

/** The port's side of SocketDirectFields (SocketPort's fields, and its `end`). */
export interface SocketDirectPort {
  readonly socket: StreamSocket | null;
  room: number;
  free: number;
  readonly limit: number;
  readonly total: number;
  end(): void;
}

/** What the port needs of a socket: the SDK's ECMA-419 TCP socket over lwIP. */
export interface StreamSocket {
  /** Copies `bytes` into the stack; returns the send-buffer bytes still free; throws when it cannot (a dead socket). */
  write(bytes: Uint8Array): number;
  close(): void;
}

export abstract class SocketPort implements DirectTransport {
  /**
   * What the socket takes now within the limit (DirectTransport.room): 0 while there is no
   * socket, while it is being given up, and while a pump is scheduled (what the link queued goes
   * first). Kept current at every change of those, so that the link reads a field for every
   * frame it hands straight over.
   */
  room = 0;
  protected socket: StreamSocket | null = null;
  /** Send-buffer bytes lwIP last said were free, and the most it ever said (the buffer). */
  private free = 0;
  private total = 0;
  /** A pump is scheduled (kick), or the link is giving the socket up (close). */
  private scheduled = false;
  private giving = false;

  constructor(
    readonly link: TcpLink,
    /** The most lwIP may hold unacknowledged (DEVICE_SOCKET_LIMIT_BYTES on the device). */
    private readonly limit: number,
  ) {}

  /** Defers a pump to the next turn of the run loop (kick): the frames of one hub call go out in one write. */
  protected abstract schedule(): void;
  /** The socket is gone: what the adapter holds for it goes back (its timer). */
  protected abstract released(): void;

  /** The socket is open: the link starts on it. */
  protected opened(socket: StreamSocket): void {
    this.socket = socket;
    this.settle();
    this.link.start(this);
  }

  /** What lwIP takes now within the limit, as the socket stands. */
  private space(): number {
    const room = this.limit - (this.total - this.free);
    return room > this.free ? this.free : room;
  }

  private settle(): void {
    if (this.socket === null || this.giving || this.scheduled) this.room = 0;
    else {
      const room = this.space();
      this.room = room > 0 ? room : 0;
    }
  }

  writeFrame(header: Uint8Array | null, frame: Uint8Array): void {
    const socket = this.socket;
    if (socket === null) return;
    let left: number;
    try {
      if (header !== null) socket.write(header);
      left = socket.write(frame);
    } catch {
      this.end();
      return;
    }
    this.free = typeof left === 'number' ? left : 0;
    // settle(), inline (the socket is open, not given up, no pump scheduled: room() was asked).
    left = this.limit - (this.total - this.free);
    if (left > this.free) left = this.free;
    this.room = left > 0 ? left : 0;
  }

  kick(): void {
    // (No socket: its timer is gone with it.)
    if (this.scheduled || this.giving || this.socket === null) return;
    this.scheduled = true;
    this.room = 0;
    this.schedule();
  }

  close(_wsCode: number): void {
    if (this.giving) return;
    this.giving = true;
    this.room = 0;
    this.pump();
    // lwIP sends what it already holds, then FIN; what the link still queues is dropped.
    this.end();
  }

  /** The scheduled pump's turn. */
  protected turn(): void {
    this.scheduled = false;
    this.pump();
    this.settle();
  }

  /** lwIP's onWritable: `free` send-buffer bytes now free. */
  protected writable(free: number): void {
    this.free = free;
    if (free > this.total) this.total = free;
    // This comes with every acknowledgement the client's stack sends: the pump only when the link
    // holds something (Link.holding), and the room as settle() finds it, inline.
    if (this.link.holding) this.pump();
    if (this.socket === null || this.giving || this.scheduled) this.room = 0;
    else {
      free = this.limit - (this.total - this.free);
      if (free > this.free) free = this.free;
      this.room = free > 0 ? free : 0;
    }
  }

  /** Hands the socket what the link queued, while it takes more. */
  private pump(): void {
    const socket = this.socket;
    if (socket === null) return;
    const link = this.link;
    for (;;) {
      const room = this.space();
      if (room <= 0) return;
      // The link hands over exactly what goes, as a view of its own staging area: nothing is
      // allocated or copied again here (lwIP copies it, TCP_WRITE_FLAG_COPY).
      const n = link.take(room);
      if (n === 0) return;
      let left: number;
      try {
        left = socket.write(link.out);
      } catch {
        // "would block" cannot happen (room ≤ free); anything else is a dead socket.
        link.wrote();
        this.end();
        return;
      }
      link.wrote();
      this.free = typeof left === 'number' ? left : 0;
    }
  }

  /** The socket ends (an error, a failed write, the link gave it up): the link is told, once. */
  protected end(): void {
    const socket = this.socket;
    if (socket === null) return;
    this.socket = null;
    this.room = 0;
    this.released();
    try {
      socket.close();
    } catch {
      // already closed by lwIP
    }
    this.link.transportClosed();
  }
}
