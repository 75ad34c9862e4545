// The binding interface (docs/architecture.md, §7): what every binding hands the core and what every binding
// shares. The core sees one `Link` per transport to one client and feeds nothing back but the
// `LinkSink` it returns from `attach`; a binding owns the framing, the egress queue, the §10.3
// congestion detector and the "link estimate" of §10.2 (delivered throughput and RTT).
//
// Platform-free: time arrives as `now` (the hub's Clock, monotonic ms); nothing here allocates
// after construction.

import { ESTOP_FRAME_BYTES } from '../hub/estop-frame.js';
import type { Link, LinkSink } from '../hub/ports.js';

export type { Clock, Link, LinkEstimate, LinkSink } from '../hub/ports.js';
export { LinkLevel } from '../hub/ports.js';
export type { CongestionDetector } from './detector.js';

/**
 * What a binding attaches each new transport to: the Hub, or anything that stands in for it.
 * The returned sink takes whole inbound frames and the report that the transport was lost (§6.6).
 */
export interface HubAttach {
  attach(link: Link): LinkSink;
}

/**
 * A Link as every binding implements it: the core's `Link` plus what operators and the
 * simulator read. The core uses only the `Link` part.
 */
export interface BindingLink extends Link {
  /** True once the transport is gone, whichever side closed it. */
  readonly closed: boolean;
  /** Bytes in the egress queue not yet handed to the transport (the ESTOP write-ahead excluded). */
  queuedBytes(): number;
  /** The §10.3 signal the level is judged from, as last sampled: queue watermark or loss rate. */
  signal(): number;
  /** Frames the binding dropped unsent since this transport began (docs/protocol.md §13.6). */
  unsent(): number;
}

/**
 * How long an egress backlog has waited without the transport taking any of it (Link.stalledMs).
 * A binding calls `moved` when the transport takes bytes and when a backlog starts in an empty
 * queue; the backlog is whatever the binding says it is when asked.
 */
export class DrainClock {
  /** When the transport last took bytes, or a backlog began (a field: a hot path sets it directly). */
  movedAt: number;

  constructor(now: number) {
    this.movedAt = now;
  }

  moved(now: number): void {
    this.movedAt = now;
  }

  /** Milliseconds since the last move while `backlog` holds; 0 without one. */
  stalledMs(now: number, backlog: boolean): number {
    if (!backlog) return 0;
    const d = now - this.movedAt;
    return d > 0 ? d : 0;
  }
}

/**
 * Gives `target` an own property `key` of `value`, over a default its prototype holds. Defined,
 * not assigned: on the device the prototype is frozen with its module, and an assignment over a
 * read-only inherited property fails.
 */
export function ownValue(target: object, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, writable: true, enumerable: true, configurable: true });
}

// ---------------------------------------------------------------------------------------------
// The sample budget (docs/protocol.md §13.6): how long a STREAM sample may wait in a binding's
// egress queue before it is dropped unsent rather than delivered late (§10.4: never delay and
// burst; a stale motion sample is worse than a missing one).

/** The budget of a link that has not measured its round trip yet, ms. */
export const SAMPLE_BUDGET_DEFAULT_MS = 10;
/** No budget is shorter, ms: a queue that moves at all is not emptied of samples by timer noise. */
export const SAMPLE_BUDGET_FLOOR_MS = 2;
/** No budget is longer, ms: a round trip inflated by a timed ACK cannot let samples go a second stale. */
export const SAMPLE_BUDGET_MAX_MS = 250;
/** The round trip a budget is taken from is the least seen over this window, ms (queueing inflates the rest). */
export const MIN_RTT_WINDOW_MS = 10000;

/** The numbers a MinRttFilter or WindowedMax keeps (in its owner's store, or its own). */
export const WINDOWED_NUMBERS = 5;
// Their places: the current and the previous bucket's extreme (NaN: none), when the current one
// began, half the window, and 1 for the greatest (0: the least).
const W_CUR = 0;
const W_PREV = 1;
const W_START = 2;
const W_HALF = 3;
const W_GREATEST = 4;

/**
 * The least or the greatest value over about the last `windowMs`: two buckets of half the window,
 * the extreme read over both, so that a value ages out within a window and a half and the next
 * bucket already holds what came since (a lone small sample never stands in for the window).
 * `known` once a value has been sampled; `value()` 0 until then. Its numbers live in `store` at
 * `at` (WINDOWED_NUMBERS of them) when its owner keeps them with others (on XS every object
 * field costs a heap slot), else in an array of its own.
 */
class WindowedExtreme {
  private readonly num: Float64Array;
  private readonly o: number;

  constructor(greatest: boolean, windowMs: number, store?: Float64Array, at = 0) {
    if (store !== undefined && !(at >= 0 && at + WINDOWED_NUMBERS <= store.length)) throw new RangeError('WindowedExtreme: its numbers lie outside the store');
    this.num = store ?? new Float64Array(WINDOWED_NUMBERS);
    this.o = store !== undefined ? at : 0;
    this.num[this.o + W_HALF] = windowMs / 2;
    this.num[this.o + W_GREATEST] = greatest ? 1 : 0;
    this.reset();
  }

  sample(v: number, now: number): void {
    if (!(v >= 0)) return;
    const n = this.num;
    const o = this.o;
    const start = n[o + W_START] as number;
    const half = n[o + W_HALF] as number;
    if (now - start >= half) {
      // A bucket more than one half old is forgotten outright; else it becomes the previous one.
      n[o + W_PREV] = now - start >= 2 * half ? NaN : (n[o + W_CUR] as number);
      n[o + W_CUR] = NaN;
      n[o + W_START] = now;
    }
    const cur = n[o + W_CUR] as number;
    if (Number.isNaN(cur) || (n[o + W_GREATEST] === 1 ? v > cur : v < cur)) n[o + W_CUR] = v;
  }

  value(): number {
    const n = this.num;
    const o = this.o;
    const a = n[o + W_CUR] as number;
    const b = n[o + W_PREV] as number;
    if (Number.isNaN(a)) return Number.isNaN(b) ? 0 : b;
    if (Number.isNaN(b)) return a;
    return n[o + W_GREATEST] === 1 ? (a > b ? a : b) : a < b ? a : b;
  }

  get known(): boolean {
    return !Number.isNaN(this.num[this.o + W_CUR] as number) || !Number.isNaN(this.num[this.o + W_PREV] as number);
  }

  reset(): void {
    const n = this.num;
    const o = this.o;
    n[o + W_CUR] = NaN;
    n[o + W_PREV] = NaN;
    n[o + W_START] = -Infinity;
  }
}

/** The least round trip over about the last MIN_RTT_WINDOW_MS: what the link takes without a queue, as near as it can tell. */
export class MinRttFilter extends WindowedExtreme {
  /** `store`, `at`: where its WINDOWED_NUMBERS numbers live when its owner keeps them with others. */
  constructor(windowMs: number = MIN_RTT_WINDOW_MS, store?: Float64Array, at = 0) {
    super(false, windowMs, store, at);
  }
}

/**
 * The greatest value over about the last window. The BLE link keeps its longest notification
 * service time so: about one connection interval once a notification has waited for an event.
 */
export class WindowedMax extends WindowedExtreme {
  /** `store`, `at`: where its WINDOWED_NUMBERS numbers live when its owner keeps them with others. */
  constructor(windowMs: number = MIN_RTT_WINDOW_MS, store?: Float64Array, at = 0) {
    super(true, windowMs, store, at);
  }
}

/**
 * The sample budget from the least round trip (0: unknown): one link latency, half the round
 * trip, within the floor and the cap. A sample that waited longer in the queue would reach the
 * client later than one link latency after it would have on an idle link (issue 7's bound).
 */
export function sampleBudgetMs(rttMs: number): number {
  if (!(rttMs > 0)) return SAMPLE_BUDGET_DEFAULT_MS;
  const b = rttMs / 2;
  if (b < SAMPLE_BUDGET_FLOOR_MS) return SAMPLE_BUDGET_FLOOR_MS;
  return b < SAMPLE_BUDGET_MAX_MS ? b : SAMPLE_BUDGET_MAX_MS;
}

// ---------------------------------------------------------------------------------------------
// The link estimate (§10.2: wishes are clamped by the link estimate; §10.3 re-grants cut to it).

/** Bytes are summed over windows of at least this long before they move the average. */
export const THROUGHPUT_WINDOW_MS = 100;
/** The average forgets with this time constant: a window `dt` long weighs 1 − e^(−dt/τ). */
export const THROUGHPUT_TAU_MS = 1000;

/**
 * Delivered throughput in bytes per second: an exponentially weighted moving average over the
 * hub's clock, with a time constant rather than a per-sample weight, so that the estimate means
 * the same whatever the rate of calls. Bytes count when the binding hands them to a transport
 * that has room for them (a socket held below a small buffer limit, an lwIP send buffer, a
 * radio that reported the datagram sent): what the link carried, not what the hub offered.
 * A link that carries nothing decays toward 0 once whole windows pass without bytes.
 */
export class ThroughputEstimator {
  // The window and what it has summed are fields a link's send path may add to directly, as
  // `add` does while the window is open (0 ≤ now − windowStart < windowMs): no call per frame.
  // The window and the time constant are the prototype's defaults unless given otherwise (an
  // own property each only then: on XS every property costs a heap slot).
  /** @internal */
  declare readonly windowMs: number;
  private declare readonly tauMs: number;
  /** @internal */
  windowStart: number;
  /** @internal */
  bytes = 0;
  private rate = 0;
  private primed = false;

  constructor(now: number, windowMs: number = THROUGHPUT_WINDOW_MS, tauMs: number = THROUGHPUT_TAU_MS) {
    if (!(windowMs > 0) || !(tauMs > 0)) throw new RangeError('ThroughputEstimator: windowMs and tauMs must be > 0');
    if (windowMs !== THROUGHPUT_WINDOW_MS) ownValue(this, 'windowMs', windowMs);
    if (tauMs !== THROUGHPUT_TAU_MS) ownValue(this, 'tauMs', tauMs);
    this.windowStart = now;
  }

  /** `bytes` were delivered at `now`. */
  add(bytes: number, now: number): void {
    // Within the window only the sum moves: the roll is taken when the window has closed.
    if (now - this.windowStart >= this.windowMs || now < this.windowStart) this.roll(now);
    this.bytes += bytes;
  }

  /** Bytes per second as of `now`; 0 until the first window has closed. */
  bps(now: number): number {
    this.roll(now);
    return this.rate;
  }

  /** Forgets everything (a new transport). */
  reset(now: number): void {
    this.windowStart = now;
    this.bytes = 0;
    this.rate = 0;
    this.primed = false;
  }

  /** @internal Closes the window if it has closed by `now` (a link that sums within the window itself calls it, then adds). */
  roll(now: number): void {
    const dt = now - this.windowStart;
    if (dt < this.windowMs) {
      // A clock that stepped back restarts the window rather than reading a negative rate.
      if (dt < 0) this.windowStart = now;
      return;
    }
    // (The window's sample, bytes × 1000 ÷ dt, in place: on XS a local costs at every call.)
    if (this.primed) this.rate += (1 - Math.exp(-dt / this.tauMs)) * ((this.bytes * 1000) / dt - this.rate);
    else {
      this.rate = (this.bytes * 1000) / dt;
      this.primed = true;
    }
    this.bytes = 0;
    this.windowStart = now;
  }
}

Object.assign(ThroughputEstimator.prototype, { windowMs: THROUGHPUT_WINDOW_MS, tauMs: THROUGHPUT_TAU_MS });

/**
 * Smoothed round-trip time, RFC 6298 §2 (SRTT with gain 1/8, RTTVAR with gain 1/4; the first
 * sample sets SRTT and half of it RTTVAR). Bindings feed it from whatever round trip they can
 * time: the TCP and WebSocket links time a DATA frame from the moment it is handed to the
 * socket to the client's cumulative ACK that covers it; a binding that originates PING can
 * time PONG. Negative or NaN samples are ignored.
 */
export class RttEstimator {
  // SRTT, RTTVAR and the samples taken, at num[o], num[o + 1], num[o + 2].
  private readonly num: Float64Array;
  private readonly o: number;

  /**
   * `store`, `at`: where its RTT_NUMBERS numbers live when its owner keeps them with others (on
   * XS every object field costs a heap slot); else in an array of its own.
   */
  constructor(store?: Float64Array, at = 0) {
    if (store !== undefined && !(at >= 0 && at + RTT_NUMBERS <= store.length)) throw new RangeError('RttEstimator: its numbers lie outside the store');
    this.num = store ?? new Float64Array(RTT_NUMBERS);
    this.o = store !== undefined ? at : 0;
    this.reset();
  }

  sample(ms: number): void {
    if (!(ms >= 0)) return;
    const num = this.num;
    const o = this.o;
    const n = num[o + 2] as number;
    if (n === 0) {
      num[o] = ms;
      num[o + 1] = ms / 2;
    } else {
      const srtt = num[o] as number;
      const rttvar = num[o + 1] as number;
      const d = srtt > ms ? srtt - ms : ms - srtt;
      num[o + 1] = rttvar + (d - rttvar) / 4;
      num[o] = srtt + (ms - srtt) / 8;
    }
    num[o + 2] = n + 1;
  }

  /** Smoothed RTT in ms; 0 while unknown (the LinkEstimate convention). */
  rttMs(): number {
    return this.num[this.o] as number;
  }

  /** RTT variation in ms; 0 while unknown. */
  varianceMs(): number {
    return this.num[this.o + 1] as number;
  }

  /** Samples taken since construction or reset. */
  samples(): number {
    return this.num[this.o + 2] as number;
  }

  reset(): void {
    const o = this.o;
    this.num[o] = 0;
    this.num[o + 1] = 0;
    this.num[o + 2] = 0;
  }
}

/** The numbers an RttEstimator keeps (in its owner's store, or its own). */
export const RTT_NUMBERS = 3;

// ---------------------------------------------------------------------------------------------
// The ESTOP write-ahead (§10.4, §11.2), one mechanism for every binding.

/** ESTOP frames a link holds ahead of its queue at once (LinkCaps.writeAheadSlots). */
export const ESTOP_AHEAD_SLOTS = 4;

/**
 * The ESTOP frames a link has been handed and not yet put on its transport, ahead of everything
 * queued: each binding frames one its own way (a length prefix, a WebSocket header, one BLE
 * notification, a datagram of its own) and takes them from here in the order written. When
 * every slot holds one, the oldest one not on its way out yet is dropped for the new one: the
 * newest carries the latch's current state, and a client that has not read the last four has
 * a dead link (§10.4). `dropped` counts those.
 *
 * Each slot holds up to `slotBytes` (at most 255): the 12-byte frame and whatever the binding
 * frames it with. The slots live in `storage` at `base` (a binding keeps them next to its queue,
 * so that one native copy moves a frame on), or in an array of their own. A link holds at most
 * four (their lengths are the four bytes of one number).
 */
export class EstopAhead {
  /** Slots (ESTOP_AHEAD_SLOTS, the prototype's, unless given otherwise: an own property only then). */
  declare readonly slots: number;
  readonly slotBytes: number;
  readonly storage: Uint8Array;
  readonly base: number;
  // Each slot's length, slot i in bits 8i to 8i + 7.
  private lens = 0;
  private first = 0;
  /** ESTOP frames waiting (the one partly handed over included); read-only to everyone else (a field: links read it on every send). */
  count = 0;
  /** The front one is partly handed over (or in the air): it is never the one dropped. */
  started = false;
  /** Written, and dropped for a newer one while every slot was full. */
  written = 0;
  dropped = 0;

  constructor(slotBytes: number, slots: number = ESTOP_AHEAD_SLOTS, storage?: Uint8Array, base = 0) {
    if (!(slots >= 1 && slots <= 4 && slotBytes >= 1 && slotBytes <= 0xff)) throw new RangeError('EstopAhead: 1 to 4 slots of 1 to 255 bytes');
    if (slots !== ESTOP_AHEAD_SLOTS) ownValue(this, 'slots', slots);
    this.slotBytes = slotBytes;
    this.storage = storage ?? new Uint8Array(slots * slotBytes);
    this.base = storage ? base : 0;
    if (this.base + slots * slotBytes > this.storage.length) throw new RangeError('EstopAhead: the slots lie outside their storage');
  }

  /**
   * A framed ESTOP: header[0, hlen) then the frame (its first ESTOP_FRAME_BYTES bytes), at most
   * slotBytes in all.
   */
  write(header: Uint8Array, hlen: number, frame: Uint8Array): void {
    const flen = frame.length < ESTOP_FRAME_BYTES ? frame.length : ESTOP_FRAME_BYTES;
    if (hlen + flen > this.slotBytes) throw new RangeError('EstopAhead.write: the framed ESTOP is larger than a slot');
    const at = this.claim(hlen + flen);
    const s = this.storage;
    for (let i = 0; i < hlen; i++) s[at + i] = header[i] as number;
    s.set(flen === frame.length ? frame : frame.subarray(0, flen), at + hlen);
  }

  /**
   * As `write`, for a framed ESTOP of `length` bytes its owner keeps in `storage` at `from`,
   * outside the slots (a frame owed again: no view of it needed).
   */
  writeFrom(from: number, length: number): void {
    if (length > this.slotBytes) throw new RangeError('EstopAhead.writeFrom: the framed ESTOP is larger than a slot');
    this.storage.copyWithin(this.claim(length), from, from + length);
  }

  // A slot for `length` bytes, the oldest not started dropped when every slot is full: where it starts.
  private claim(length: number): number {
    this.written++;
    if (this.count === this.slots) {
      // Drop the oldest not started: the front one, or the one after it while the front is going.
      const victim = this.started ? 1 : 0;
      for (let k = victim; k + 1 < this.count; k++) this.copySlot(this.index(k + 1), this.index(k));
      this.count--;
      this.dropped++;
    }
    const slot = this.index(this.count);
    this.setLength(slot, length);
    this.count++;
    return this.base + slot * this.slotBytes;
  }

  /** Where the front one starts in `storage`, and its length; only while count > 0. */
  frontOffset(): number {
    return this.base + this.first * this.slotBytes;
  }

  frontLength(): number {
    return (this.lens >>> (this.first << 3)) & 0xff;
  }

  /** Bytes of every waiting one, framing included. */
  bytes(): number {
    let b = 0;
    for (let k = 0; k < this.count; k++) b += (this.lens >>> (this.index(k) << 3)) & 0xff;
    return b;
  }

  /** The front one is gone (handed over whole, or its datagram sent). */
  shift(): void {
    if (this.count === 0) return;
    this.first = this.first + 1 === this.slots ? 0 : this.first + 1;
    this.count--;
    this.started = false;
  }

  clear(): void {
    this.first = 0;
    this.count = 0;
    this.started = false;
  }

  private index(k: number): number {
    const i = this.first + k;
    return i >= this.slots ? i - this.slots : i;
  }

  private copySlot(from: number, to: number): void {
    const b = this.base;
    const w = this.slotBytes;
    this.storage.copyWithin(b + to * w, b + from * w, b + from * w + w);
    this.setLength(to, (this.lens >>> (from << 3)) & 0xff);
  }

  private setLength(slot: number, length: number): void {
    const shift = slot << 3;
    this.lens = (this.lens & ~(0xff << shift)) | (length << shift);
  }
}

Object.assign(EstopAhead.prototype, { slots: ESTOP_AHEAD_SLOTS });

// ---------------------------------------------------------------------------------------------
// Acknowledgements (§5.12 stream form), counted in one place for every binding whose client
// counts frames: what the binding handed its transport, what the client's cumulative ACK (which
// the core decodes and hands on, Link.acked) covers, and the round trip from one to the other.

const U32 = 0x100000000;
/** An ACK covering at least this many new frames was sent at once (§13.2: after every 32 frames). */
export const PROMPT_ACK_FRAMES = 32;

export class AckCounter {
  /** Frames whose first byte the transport has taken (ESTOP frames included), unwrapped. */
  started = 0;
  /** Of those, the frames the client's ACKs cover. */
  acked = 0;
  /** The client has acknowledged at least once. */
  seen = false;
  /** The round trip of the newest frame the last ACK covered (ms), or −1; and whether that ACK was prompt. */
  rttMs = -1;
  prompt = false;
  /**
   * When each of the last frames was handed over, by frame number & mask, from [0] (null: none
   * timed: the prototype's null and 0, no own property then; on XS every property costs a heap slot).
   * A Uint32Array holds whole milliseconds from 0 to 2^32 − 1, as the device's clock reads (half
   * the bytes of a Float64Array); whoever writes a time that is not one calls `widen` first.
   */
  declare readonly handedAt: Float64Array | Uint32Array | null;
  declare readonly mask: number;

  /**
   * `timedFrames`: how many recent hand-overs to remember for the round trip (0: none timed),
   * rounded up to a power of two. `store`: an array whose first that many numbers the counter
   * may keep them in, the rest being its owner's (on XS each typed array costs heap slots); a
   * Uint32Array keeps whole-millisecond times only (see `handedAt`).
   */
  constructor(timedFrames = 0, store?: Float64Array | Uint32Array) {
    const ring = AckCounter.ringOf(timedFrames);
    if (store !== undefined && timedFrames > 0 && store.length < ring) throw new RangeError('AckCounter: the store is too small');
    if (timedFrames > 0) {
      ownValue(this, 'handedAt', store ?? new Float64Array(ring));
      ownValue(this, 'mask', ring - 1);
    }
  }

  /** The numbers an AckCounter timing `timedFrames` keeps (its ring: a power of two). */
  static ringOf(timedFrames: number): number {
    let ring = 1;
    while (ring < timedFrames) ring <<= 1;
    return ring;
  }

  /**
   * A time that is not a whole millisecond from 0 to 2^32 − 1 is about to be kept: a Uint32 ring
   * becomes a Float64Array of its own, its times copied (each exact), so that every time is kept
   * as it was read. Once only, and never with a clock in whole ms such as the device's.
   */
  widen(): void {
    const h = this.handedAt;
    if (h === null || h instanceof Float64Array) return;
    const f = new Float64Array(this.mask + 1);
    f.set(h.subarray(0, this.mask + 1));
    ownValue(this, 'handedAt', f);
  }

  /** One more frame started at `now`. */
  startedOne(now: number): void {
    if (this.handedAt !== null) {
      if ((now >>> 0) !== now) this.widen();
      (this.handedAt as Float64Array)[this.started & this.mask] = now;
    }
    this.started++;
  }

  /** `count` more frames started at `now`. */
  startedAt(count: number, now: number): void {
    if (this.handedAt !== null) {
      if ((now >>> 0) !== now) this.widen();
      const h = this.handedAt as Float64Array;
      for (let i = 0; i < count; i++) h[(this.started + i) & this.mask] = now;
    }
    this.started += count;
  }

  /** Frames handed over and not yet acknowledged. */
  outstanding(): number {
    return this.started - this.acked;
  }

  /**
   * The client's cumulative count (key 28, modulo 2^32), at `now`. A count ahead of what was
   * handed over (a client claiming frames it cannot have had) reads as no lag. Returns true when
   * it acknowledged something new.
   */
  ack(count: number, now: number): boolean {
    const started = this.started;
    let lag = (started - count) % U32;
    if (lag < 0) lag += U32;
    if (lag > started || lag >= U32 / 2) lag = 0;
    const n = started - lag;
    this.seen = true;
    this.rttMs = -1;
    if (!(n > this.acked)) return false;
    const h = this.handedAt;
    if (h !== null && lag <= this.mask) {
      this.rttMs = now - (h[(n - 1) & this.mask] as number);
      this.prompt = n - this.acked >= PROMPT_ACK_FRAMES;
    }
    this.acked = n;
    return true;
  }

  /** Starts again for a new transport. */
  reset(): void {
    this.started = 0;
    this.acked = 0;
    this.seen = false;
    this.rttMs = -1;
  }
}

Object.assign(AckCounter.prototype, { handedAt: null, mask: 0 });
