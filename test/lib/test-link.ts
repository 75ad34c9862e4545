// A link whose congestion level, capacity and estimate the test sets (issue 3: "tests drive
// links whose level and capacity they set"). It records what the hub wrote, decoded, in order,
// with the write-ahead ESTOP frames in the same sequence so that overtaking is observable.
import { decodeEstop, isEstopFrame } from '../../hub/estop-frame.js';
import { decodeFrame, type Frame } from '../../hub/frames.js';
import { AckForm, type GrantSet, type Link, type LinkCaps, type LinkEstimate, type LinkSink } from '../../hub/ports.js';
import { AckCounter } from '../../bindings/link.js';

export interface Written {
  readonly kind: 'frame' | 'estop';
  readonly bytes: Uint8Array;
  readonly frame?: Frame;
}

export class TestLink implements Link {
  readonly caps: LinkCaps;
  private lvlNow = 0;
  /** Bytes the egress queue holds at most; `queued` bytes are waiting. */
  capacity: number;
  queued: Uint8Array[] = [];
  /** The tag and push sequence each queued frame was handed with, in the same order. */
  readonly tags: number[] = [];
  readonly seqs: number[] = [];
  queuedBytes = 0;
  /** Everything the client has received, in order (drain() moves queued frames here). */
  readonly received: Written[] = [];
  est: LinkEstimate = { throughputBps: 0, rttMs: 0 };
  closed = false;
  sink: LinkSink | null = null;
  /** What the hub handed and what the client acknowledged (the binding's count, bindings/link.ts). */
  readonly acks = new AckCounter();
  /** The grants the hub last stated to this link (Link.granted), as [channelId, grantedHz, priority]. */
  lastGrants: [number, number, number][] | null = null;

  constructor(binding = 'test', capacity = 1 << 20, mtu = 1024) {
    this.capacity = capacity;
    this.caps = Object.freeze({ binding, broadcast: false, datagram: false, mtu, writeAheadSlots: 4, ackForm: AckForm.STREAM });
  }

  get binding(): string {
    return this.caps.binding;
  }
  get mtu(): number {
    return this.caps.mtu;
  }

  /** The level the test sets; a change is reported to the hub as a binding would. */
  get level(): number {
    return this.lvlNow;
  }
  set level(v: number) {
    if (v === this.lvlNow) return;
    this.lvlNow = v;
    if (this.sink) this.sink.levelChanged();
  }
  /** The same, under its old name. */
  get lvl(): number {
    return this.level;
  }
  set lvl(v: number) {
    this.level = v;
  }

  canSend(length: number): boolean {
    return !this.closed && this.queuedBytes + length <= this.capacity;
  }
  send(frame: Uint8Array, tag: number, seq: number): boolean {
    if (!this.canSend(frame.length)) return false;
    this.queued.push(frame.slice());
    this.tags.push(tag);
    this.seqs.push(seq);
    this.queuedBytes += frame.length;
    this.acks.startedAt(1, 0);
    return true;
  }
  writeAhead(frame: Uint8Array): void {
    if (this.closed) return;
    // Ahead of every queued frame: the client receives it before anything still queued.
    this.received.push({ kind: 'estop', bytes: frame.slice() });
    this.acks.startedAt(1, 0);
  }
  acked(count: number): void {
    this.acks.ack(count, 0);
  }
  granted(grants: GrantSet): void {
    const out: [number, number, number][] = [];
    for (let i = 0; i < grants.count; i++) out.push([grants.channelId(i), grants.grantedHz(i), grants.priority(i)]);
    this.lastGrants = out;
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
  ackLag(): number {
    return this.acks.outstanding();
  }
  lossRate(): number {
    return NaN;
  }
  /** Link.tierCeiling: what the test says the link's protection allows (default maintainer, 2). */
  ceiling = 2;
  tierCeiling(): number {
    return this.ceiling;
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
