// A link whose congestion level, capacity and estimate the test sets (issue 3: "tests drive
// links whose level and capacity they set"). It records what the hub wrote, decoded, in order,
// with the write-ahead ESTOP frames in the same sequence so that overtaking is observable.
import { decodeEstop, isEstopFrame } from '../../hub/estop-frame.js';
import { decodeFrame, type Frame } from '../../hub/frames.js';
import type { Link, LinkEstimate, LinkSink } from '../../hub/ports.js';

export interface Written {
  readonly kind: 'frame' | 'estop';
  readonly bytes: Uint8Array;
  readonly frame?: Frame;
}

export class TestLink implements Link {
  readonly binding: string;
  readonly mtu: number;
  readonly broadcast = false;
  lvl = 0;
  /** Bytes the egress queue holds at most; `queued` bytes are waiting. */
  capacity: number;
  queued: Uint8Array[] = [];
  queuedBytes = 0;
  /** Everything the client has received, in order (drain() moves queued frames here). */
  readonly received: Written[] = [];
  est: LinkEstimate = { throughputBps: 0, rttMs: 0 };
  closed = false;
  sink: LinkSink | null = null;

  constructor(binding = 'test', capacity = 1 << 20, mtu = 1024) {
    this.binding = binding;
    this.capacity = capacity;
    this.mtu = mtu;
  }

  canSend(length: number): boolean {
    return !this.closed && this.queuedBytes + length <= this.capacity;
  }
  send(frame: Uint8Array, length: number): void {
    if (!this.canSend(length)) throw new Error('send without room: the hub must ask canSend first');
    this.queued.push(frame.slice(0, length));
    this.queuedBytes += length;
  }
  writeAhead(frame: Uint8Array): void {
    if (this.closed) return;
    // Ahead of every queued frame: the client receives it before anything still queued.
    this.received.push({ kind: 'estop', bytes: frame.slice() });
  }
  level(): number {
    return this.lvl;
  }
  estimate(): LinkEstimate {
    return this.est;
  }
  occupancy(): number {
    return this.capacity > 0 ? this.queuedBytes / this.capacity : 0;
  }
  /** What the test says: how long the client has left its backlog unread. */
  stalled = 0;
  stalledMs(): number {
    return this.queuedBytes > 0 ? this.stalled : 0;
  }
  close(): void {
    this.closed = true;
  }

  /** The client reads up to `max` queued frames (all by default). */
  drain(max = Infinity): void {
    while (this.queued.length > 0 && max-- > 0) {
      const bytes = this.queued.shift() as Uint8Array;
      this.queuedBytes -= bytes.length;
      this.received.push({ kind: 'frame', bytes, frame: decodeFrame(bytes, 0, bytes.length, 1 << 16) });
    }
  }

  /** Frames received so far (after drain), optionally of one type. */
  frames(type?: number): Frame[] {
    const out: Frame[] = [];
    for (const w of this.received) if (w.frame && (type === undefined || w.frame.type === type)) out.push(w.frame);
    return out;
  }

  estops(): ReturnType<typeof decodeEstop>[] {
    return this.received.filter((w) => w.kind === 'estop' && isEstopFrame(w.bytes, 0)).map((w) => decodeEstop(w.bytes, 0, w.bytes.length));
  }

  clearReceived(): void {
    this.received.length = 0;
  }
}
