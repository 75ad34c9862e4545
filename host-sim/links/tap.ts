// The hub's view of one simulated transport: the binding's own Link (TcpLink, BleLink, EspNowLink:
// the code the device runs), seen through a tap that forwards every call unchanged and records
// what crossed the boundary. The tap is where the simulator checks what the hub itself did, apart
// from anything a medium does afterwards (docs/simulator.md "Invariant checks"):
//
//   criticalShed        a critical channel's DATA skipped a sequence number on this link;
//   segmentsDecimated   a segments channel's DATA skipped one without carrying `gap`;
//   lateDelivery        a non-critical STREAM/STATE sample handed over later than it was produced;
//   eventLossInvisible  an EVENT's `dropped` does not account for the events skipped before it;
//   sampleLate          a non-critical STREAM sample reached the client later than it would have
//                       on an idle link by more than one link latency (recorded at handoff,
//                       judged when the connection delivers it: `sampleReceived`).
//
// It also keeps the write-ahead ESTOP frames (resolved when the client receives them), the
// congestion level over time and the frame counts the report prints.

import type { CatalogIndex, ChannelInfo } from '../../catalog/index.js';
import { ChannelClass, StreamKind } from '../../catalog/schema.js';
import { FrameType } from '../../hub/frames.js';
import { tagType, type Link } from '../../hub/ports.js';
import { type Kernel, US_PER_MS } from '../kernel.js';
import { Samples } from '../stats.js';
import { ForwardingLink } from './forwarding.js';

/** One write-ahead ESTOP frame on one link and what became of it. */
export interface EstopRecord {
  readonly handoffUs: number;
  /** ASSERT (1) or CLEARED (2), from byte 1. */
  readonly kind: number;
  readonly source: number;
  readonly origin: number;
  readonly seq: number;
  /** The bound for this link at handoff (ms): docs/simulator.md "ESTOP bound". */
  readonly boundMs: number;
  /** The link's congestion level when the frame was written (§10.3). */
  readonly level: number;
  deliveredUs: number;
  outcome: 'pending' | 'delivered' | 'discarded';
  /** A fault or a slow reader was in force: the bound is reported, not checked. */
  impaired: boolean;
}

/** What the invariant checks learn from a tap: the control frames the hub hands it, and when the hub closes it. */
export interface TapWatcher {
  control(tap: LinkTap, frame: Uint8Array): void;
  closed(tap: LinkTap): void;
}

export interface Violation {
  readonly check: string;
  readonly tMs: number;
  readonly link: string;
  readonly channel: string;
  readonly detail: string;
}

export class TapStats {
  /** Frames and bytes the hub handed over (write-ahead ESTOPs not counted). */
  frames = 0;
  bytes = 0;
  dataFrames = 0;
  estops = 0;
  /** canSend answered no. */
  refused = 0;
  maxFrameBytes = 0;
  maxOccupancy = 0;
  /** Frames received by the client, by first byte: CBOR frames and ESTOP frames. */
  received = 0;
  /** Age at the client of every DATA sample of a STREAM or STATE channel (ms). */
  readonly sampleAgeMs = new Samples();
}

/** sampleLate records each tap lists (the first ones); the rest are counted (`SampleLateStats.over`). */
export const LATE_EXAMPLES_PER_LINK = 3;

/**
 * sampleLate on one link: every delivered sample of a non-critical STREAM `samples` channel is
 * matched to its handoff; `judged` ones (nothing but the hub and its binding in the way) are held
 * to age ≤ idleDeliveryMs + estopBoundMs (docs/simulator.md "sampleLate").
 */
export class SampleLateStats {
  /** Delivered samples matched to their handoff, judged or not. */
  samples = 0;
  judged = 0;
  over = 0;
  /** Violations of this link put in `LinkTap.violations` (at most LATE_EXAMPLES_PER_LINK). */
  listed = 0;
  /** The largest age − bound over judged samples (ms), and that sample's age and bound. */
  worstMs = -Infinity;
  worstAgeMs = NaN;
  worstBoundMs = NaN;
  /** age ÷ bound of every judged sample. */
  readonly ratio = new Samples();
}

/** Handoffs kept per channel and link: far more than any egress queue holds (a dead peer's go oldest first). */
const MAX_PENDING_HANDOFFS = 8192;

/**
 * Handoffs of one channel on one link not yet delivered, oldest first: seq, handoff instant and
 * the two parts of the bound as they stood then. A growable ring: a match in order costs O(1).
 */
class HandoffRing {
  seq = new Float64Array(16);
  atUs = new Float64Array(16);
  idleMs = new Float64Array(16);
  latencyMs = new Float64Array(16);
  first = 0;
  size = 0;

  push(seq: number, atUs: number, idleMs: number, latencyMs: number): void {
    if (this.size === this.seq.length) {
      if (this.size >= MAX_PENDING_HANDOFFS) this.drop(1);
      else this.grow();
    }
    let i = this.first + this.size;
    if (i >= this.seq.length) i -= this.seq.length;
    this.seq[i] = seq;
    this.atUs[i] = atUs;
    this.idleMs[i] = idleMs;
    this.latencyMs[i] = latencyMs;
    this.size++;
  }

  /** The ring index of `seq`, searching from the oldest; -1 when it is not pending. */
  find(seq: number): number {
    const cap = this.seq.length;
    for (let k = 0, i = this.first; k < this.size; k++, i = i + 1 === cap ? 0 : i + 1) if (this.seq[i] === seq) return i;
    return -1;
  }

  /** Forgets every handoff up to ring index `i`: the older ones never arrived (dropped or lost). */
  consume(i: number): void {
    const cap = this.seq.length;
    this.drop(((i - this.first + cap) % cap) + 1);
  }

  private drop(n: number): void {
    this.first = (this.first + n) % this.seq.length;
    this.size -= n;
  }

  private grow(): void {
    const cap = this.seq.length;
    const grown = (a: Float64Array<ArrayBuffer>): Float64Array<ArrayBuffer> => {
      const b = new Float64Array(cap * 2);
      for (let k = 0; k < this.size; k++) b[k] = a[(this.first + k) % cap] as number;
      return b;
    };
    this.seq = grown(this.seq);
    this.atUs = grown(this.atUs);
    this.idleMs = grown(this.idleMs);
    this.latencyMs = grown(this.latencyMs);
    this.first = 0;
  }
}

/** The head of a DATA frame, read without allocating (the fields the checks need). */
export class DataHead {
  channelId = 0;
  seq = 0;
  t = 0;
  gap = false;
  dropped = 0;
}

// ---------------------------------------------------------------------------------------------
// A minimal CBOR scanner for DATA frames (hub/frame-encode.ts encodeData and the EVENT form).

let pos = 0;

function readHead(b: Uint8Array, end: number): number {
  if (pos >= end) return -1;
  const ib = b[pos++] as number;
  const ai = ib & 0x1f;
  let v: number;
  if (ai < 24) v = ai;
  else if (ai === 24) v = b[pos++] as number;
  else if (ai === 25) {
    v = ((b[pos] as number) << 8) | (b[pos + 1] as number);
    pos += 2;
  } else if (ai === 26) {
    v = (b[pos] as number) * 0x1000000 + (((b[pos + 1] as number) << 16) | ((b[pos + 2] as number) << 8) | (b[pos + 3] as number));
    pos += 4;
  } else if (ai === 27) {
    let x = 0;
    for (let i = 0; i < 8; i++) x = x * 256 + (b[pos + i] as number);
    v = x;
    pos += 8;
  } else return -1;
  headMajor = ib >> 5;
  headAi = ai;
  return v;
}
let headMajor = 0;
let headAi = 0;
// Read through functions: a plain read after readHead() would be narrowed by an earlier test.
function major(): number {
  return headMajor;
}
function ai(): number {
  return headAi;
}

/** Skips one item whose head has been read (numbers, texts, bools: what DATA carries). */
function skipBody(v: number): void {
  const m = major();
  if (m === 2 || m === 3) pos += v;
}

/** Reads DATA's channel, seq, t, gap and dropped into `out`; false when `b` is no DATA frame. */
export function readDataHead(b: Uint8Array, len: number, out: DataHead): boolean {
  pos = 0;
  const n = readHead(b, len);
  if (n < 0 || major() !== 5) return false;
  out.gap = false;
  out.dropped = 0;
  for (let i = 0; i < n; i++) {
    const key = readHead(b, len);
    if (key < 0 || major() !== 0) return false;
    if (key === 6) {
      const count = readHead(b, len);
      if (major() !== 4) return false;
      for (let k = 0; k < count; k++) skipBody(readHead(b, len));
      continue;
    }
    const v = readHead(b, len);
    if (v < 0 && major() !== 7) return false;
    switch (key) {
      case 0:
        if (v !== 7) return false;
        break;
      case 3:
        out.channelId = v;
        break;
      case 4:
        out.seq = v;
        break;
      case 5:
        out.t = v;
        break;
      case 26:
        out.gap = major() === 7 && ai() === 21;
        break;
      case 27:
        out.dropped = v;
        break;
      default:
        skipBody(v);
    }
  }
  return true;
}

// ---------------------------------------------------------------------------------------------

const SEQ_MOD = 0x100000000;

/** Per-channel state of the checks on one link. */
class ChannelTrack {
  lastSeq = -1;
  /** sampleLate: handoffs of a non-critical samples stream not yet delivered; null on other channels. */
  pending: HandoffRing | null = null;
}

/** ESTOP records a link keeps (receipt matching scans them; a headless scenario stays far below). */
export const ESTOP_RECORDS_KEPT = 1024;

export class LinkTap extends ForwardingLink {
  readonly stats = new TapStats();
  /** The ESTOP frames written on this link, newest ESTOP_RECORDS_KEPT at most. */
  readonly estops: EstopRecord[] = [];
  /** Records let go to keep `estops` bounded. */
  estopsDropped = 0;
  /** Congestion level over time: [tMs, level] whenever it changed. */
  readonly levels: [number, number][] = [];
  readonly violations: Violation[] = [];
  readonly late = new SampleLateStats();
  private lastLevel = -1;
  private readonly tracks: (ChannelTrack | undefined)[] = [];
  private readonly head = new DataHead();
  private isClosed = false;

  constructor(
    inner: Link,
    private readonly kernel: Kernel,
    private readonly catalog: CatalogIndex,
    /** The connection's id, for the report. */
    readonly id: string,
    private readonly ctx: {
      estopBoundMs(): number;
      impairedNow(): boolean;
      /** The time a frame of this size takes on this link when nothing else is in the way (ms). */
      idleDeliveryMs(frameBytes: number): number;
      /** Nothing but the hub and its binding stood in the way during [fromUs, toUs]: no fault, slow reader, loss or impaired shared air. */
      judgeable(fromUs: number, toUs: number): boolean;
    },
  ) {
    super(inner);
  }

  get closedByHub(): boolean {
    return this.isClosed;
  }

  /** Who watches the control frames the hub hands this link and its closing (host-sim/invariants.ts). */
  watcher: TapWatcher | null = null;
  /** A level the dashboard forces onto the link, or null: the binding's own (host-sim/dashboard/live.ts). */
  levelOverride: (() => number | null) | null = null;

  override get level(): number {
    const f = this.levelOverride !== null ? this.levelOverride() : null;
    return f === null ? this.inner.level : f;
  }

  override send(frame: Uint8Array, tag: number, seq: number): boolean {
    const st = this.stats;
    if (!this.inner.send(frame, tag, seq)) {
      st.refused++;
      return false;
    }
    const length = frame.length;
    st.frames++;
    st.bytes += length;
    if (length > st.maxFrameBytes) st.maxFrameBytes = length;
    const type = tagType(tag);
    if (type === FrameType.DATA) {
      if (readDataHead(frame, length, this.head)) {
        st.dataFrames++;
        this.check(this.head, length);
      }
    } else if (this.watcher !== null && (type === FrameType.WELCOME || type === FrameType.GRANT || type === FrameType.NACK)) this.watcher.control(this, frame);
    return true;
  }

  override writeAhead(frame: Uint8Array): void {
    const f = frame;
    this.stats.estops++;
    if (this.estops.length >= ESTOP_RECORDS_KEPT) {
      // A long live run keeps the newest records; the oldest half goes, counted.
      const n = ESTOP_RECORDS_KEPT >> 1;
      this.estops.splice(0, n);
      this.estopsDropped += n;
    }
    this.estops.push({
      handoffUs: this.kernel.nowUs,
      kind: f[1] as number,
      source: f[2] as number,
      origin: (((f[4] as number) << 24) >>> 0) + ((f[5] as number) << 16) + ((f[6] as number) << 8) + (f[7] as number),
      seq: ((f[8] as number) << 8) | (f[9] as number),
      boundMs: this.ctx.estopBoundMs(),
      level: this.level,
      deliveredUs: NaN,
      outcome: 'pending',
      impaired: this.ctx.impairedNow(),
    });
    this.inner.writeAhead(frame);
  }

  override close(): void {
    if (this.watcher !== null) this.watcher.closed(this);
    this.isClosed = true;
    this.inner.close();
  }

  // ---------------------------------------------------------------- what the client received

  /** The client received an ESTOP frame: the oldest pending record that matches it is delivered. */
  estopReceived(kind: number, origin: number, seq: number): number {
    for (const r of this.estops) {
      if (r.outcome === 'pending' && r.kind === kind && r.origin === origin && r.seq === seq) {
        r.outcome = 'delivered';
        r.deliveredUs = this.kernel.nowUs;
        return (r.deliveredUs - r.handoffUs) / US_PER_MS;
      }
    }
    return NaN;
  }

  /**
   * The client received the DATA frame whose head is `h`, now: a sample this link handed is
   * judged (sampleLate). False when no pending handoff matches (another channel, or a frame
   * handed on another of the connection's links); nothing changes then.
   */
  sampleReceived(h: DataHead): boolean {
    const ring = this.tracks[h.channelId]?.pending;
    if (!ring || ring.size === 0) return false;
    const i = ring.find(h.seq);
    if (i < 0) return false;
    const atUs = ring.atUs[i] as number;
    const idleMs = ring.idleMs[i] as number;
    const latencyMs = ring.latencyMs[i] as number;
    ring.consume(i);
    const late = this.late;
    late.samples++;
    const nowUs = this.kernel.nowUs;
    if (!this.ctx.judgeable(atUs, nowUs)) return true;
    // The age as the client's (host-sim/clients.ts): receipt − the sample's t, which the hub
    // stamped in the millisecond it produced and handed it (lateDelivery holds that).
    const age = nowUs / US_PER_MS - h.t;
    const bound = idleMs + latencyMs;
    const excess = age - bound;
    late.judged++;
    late.ratio.add(age / bound);
    if (excess > late.worstMs) {
      late.worstMs = excess;
      late.worstAgeMs = age;
      late.worstBoundMs = bound;
    }
    if (excess > 0) {
      late.over++;
      if (late.listed < LATE_EXAMPLES_PER_LINK) {
        late.listed++;
        this.violate(
          'sampleLate',
          this.catalog.byId(h.channelId) as ChannelInfo,
          `seq ${h.seq} produced at ${h.t} ms, handed at ${(atUs / US_PER_MS).toFixed(3)} ms: age ${age.toFixed(3)} ms > bound ${bound.toFixed(3)} ms (idle ${idleMs.toFixed(3)} + link latency ${latencyMs.toFixed(3)})`,
        );
      }
    }
    return true;
  }

  /** The transport ended: what never arrived is discarded. */
  ended(): void {
    for (const r of this.estops) if (r.outcome === 'pending') r.outcome = 'discarded';
  }

  /** Level (as the hub reads it) and occupancy at the hub's tick. */
  observe(nowMs: number): void {
    const l = this.level;
    if (l !== this.lastLevel) {
      this.lastLevel = l;
      this.levels.push([nowMs, l]);
    }
    const occ = this.inner.occupancy();
    if (occ > this.stats.maxOccupancy) this.stats.maxOccupancy = occ;
  }

  // ---------------------------------------------------------------- the checks

  private check(h: DataHead, length: number): void {
    const ch = this.catalog.byId(h.channelId);
    if (!ch) return;
    const nowMs = Math.floor(this.kernel.nowUs / US_PER_MS);
    let tr = this.tracks[h.channelId];
    if (!tr) {
      tr = new ChannelTrack();
      this.tracks[h.channelId] = tr;
    }
    const last = tr.lastSeq;
    tr.lastSeq = h.seq;
    const isEvent = ch.cls === ChannelClass.EVENT;
    // §10.4: never delay-and-burst. Critical frames may wait in the never-shed queue, and EVENT
    // queues are bounded queues by design (§9.4); every other sample leaves when it is produced.
    if (!ch.critical && !isEvent && nowMs > h.t) {
      this.violate('lateDelivery', ch, `seq ${h.seq} produced at ${h.t} ms, handed to the link at ${nowMs} ms`);
    }
    // sampleLate: a samples stream outside the never-shed set (STATE values are conflated, never
    // dropped by a binding; segments and EVENTs may wait by design). The bound is the link's as
    // it stands at handoff, like an ESTOP's.
    if (!ch.critical && ch.cls === ChannelClass.STREAM && ch.kind === StreamKind.samples) {
      if (!tr.pending) tr.pending = new HandoffRing();
      tr.pending.push(h.seq, this.kernel.nowUs, this.ctx.idleDeliveryMs(length), this.ctx.estopBoundMs());
    }
    if (last < 0) return;
    const skipped = (h.seq - last - 1 + SEQ_MOD) % SEQ_MOD;
    if (ch.critical) {
      if (skipped > 0 || h.dropped > 0) this.violate('criticalShed', ch, `seq ${h.seq} after ${last}${h.dropped > 0 ? `, dropped ${h.dropped}` : ''}`);
      return;
    }
    if (isEvent) {
      if (skipped !== h.dropped) this.violate('eventLossInvisible', ch, `seq ${h.seq} after ${last} carries dropped ${h.dropped}`);
      return;
    }
    if (ch.kind === StreamKind.segments && skipped > 0 && !h.gap) {
      this.violate('segmentsDecimated', ch, `seq ${h.seq} after ${last} without gap`);
    }
  }

  private violate(check: string, ch: ChannelInfo, detail: string): void {
    this.violations.push({ check, tMs: this.kernel.nowUs / US_PER_MS, link: this.id, channel: ch.name, detail });
  }
}
