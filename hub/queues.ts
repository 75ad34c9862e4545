// Bounded queues sized at construction: the never-shed frame ring and its stall clock
// (§10.4 "park, not kill"), and the per-(subscriber, EVENT channel) queue that drops the
// oldest with a visible counter (§9.4). Nothing here allocates per call.

import { StagedBytes } from './bytes.js';
import type { Link } from './ports.js';

// §10.4 the never-shed queue's stall clock lives with the link's other controller (regrant.ts).
export { StallClock } from './regrant.js';

/**
 * §10.4 never-shed queue: whole frames that the link could not take at once wait here, in
 * order, with the tag each was handed with (hub/ports.ts Tag), until it can. Its bytes are a
 * region of a StagedBytes arena (the hub keeps every session's queue in one, with the control
 * frames' staging area after them, docs/architecture.md "Copies"): a frame goes in and comes out
 * with one native copy each, and `drainTo` hands the link the head frame as an exact view.
 *
 * Every frame is contiguous in the region (when it does not fit before the end, it goes to the
 * front and the tail end is left as a gap), so a frame's start is the end of the one before it,
 * except once: the first frame after the gap starts at 0. At most one gap exists at a time (new
 * frames go between the tail and the head until the head itself has passed the gap), so one
 * offset, `gapAt`, is all it takes to know every start: no start offsets are kept per frame.
 *
 * `push` returns false when the frame does not fit (bytes or frame count): never-shed
 * traffic is not dropped by the queue, the caller decides (a full never-shed queue is a
 * stalled link, which the StallClock parks).
 */
export class FrameRing {
  /** The arena this ring's bytes live in, at [base, base + capacityBytes). */
  readonly arena: StagedBytes;
  readonly base: number;
  readonly capacityBytes: number;
  // Per frame, by frame slot: its length, its tag and when it was pushed (whole ms modulo 2^32,
  // for health's egress wait, docs/operations.md "Health, admission and overload": whole ms are
  // all the device's clock has, and the histogram's smallest bound is 1 ms). Slots [m, m +
  // maxFrames) of columns that may be shared with other rings (RingColumns), read on every drain
  // (the columns, not a view of each kept per ring: on XS each field is a heap slot).
  private readonly columns: RingColumns;
  private readonly m: number;
  private first = 0; // index ring: slot of the head frame, relative to m
  /** Frames held (read on every delivery: a field, not a getter). */
  size = 0;
  private head = 0; // byte offset of the head frame
  private tail = 0; // byte offset where the next frame goes
  private used = 0; // bytes of frames held (gaps not counted)
  private gapAt = -1; // where the gap before the end begins while the frames wrap; -1 when they do not

  /**
   * Without an arena the ring makes its own, with a staging area as large as the ring. Without
   * `columns` it makes its own per-frame columns; with them, it uses ring `index` of them (the
   * hub keeps every session slot's ring in one RingColumns: on XS every typed array and buffer
   * costs heap slots of its own).
   */
  constructor(capacityBytes: number, maxFrames: number, arena?: StagedBytes, base = 0, columns?: RingColumns, index = 0) {
    if (!Number.isInteger(capacityBytes) || capacityBytes < 1) throw new RangeError('FrameRing capacityBytes must be an integer ≥ 1');
    if (!Number.isInteger(maxFrames) || maxFrames < 1) throw new RangeError('FrameRing maxFrames must be an integer ≥ 1');
    this.arena = arena ?? new StagedBytes(capacityBytes, capacityBytes);
    if (!(base >= 0 && base + capacityBytes <= this.arena.capacity)) throw new RangeError('FrameRing: the region lies outside its arena');
    this.base = base;
    this.capacityBytes = capacityBytes;
    const c = columns ?? new RingColumns(1, maxFrames, capacityBytes);
    if (c.maxFrames !== maxFrames || !(index >= 0 && index < c.rings) || (capacityBytes > 0xffff && !c.wide)) throw new RangeError('FrameRing: the columns do not fit the ring');
    this.columns = c;
    this.m = index * maxFrames;
  }

  get maxFrames(): number {
    return this.columns.maxFrames;
  }

  /** Bytes of the frames held. */
  get bytes(): number {
    return this.used;
  }

  /** Offset of the head frame in the region; -1 when empty. */
  get headStart(): number {
    return this.size === 0 ? -1 : this.head;
  }

  /** Length of the head frame; 0 when empty. */
  get headLength(): number {
    return this.size === 0 ? 0 : (this.columns.lengths[this.m + this.first] as number);
  }

  /** The tag the head frame was pushed with; 0 when empty. */
  get headTag(): number {
    return this.size === 0 ? 0 : (this.columns.tags[this.m + this.first] as number);
  }

  /** Whether a frame of `length` bytes would be accepted now. */
  fits(length: number): boolean {
    return this.placeFor(length) >= 0;
  }

  /**
   * Appends `frame` (exactly the frame) with its tag, pushed at `now` (ms; for the egress wait
   * `drainTo` reports). False (and nothing changes) when it does not fit. An empty frame is a
   * caller bug and throws.
   */
  push(frame: Uint8Array, tag = 0, now = 0): boolean {
    const length = frame.length;
    if (length < 1) throw new RangeError('FrameRing.push: an empty frame');
    const at = this.placeFor(length);
    if (at < 0) return false;
    const all = this.arena.all;
    // The arena's own staging area (a control frame written there) moves within one buffer.
    if (frame.buffer === all.buffer) all.copyWithin(this.base + at, frame.byteOffset, frame.byteOffset + length);
    else all.set(frame, this.base + at);
    const c = this.columns;
    const maxFrames = c.maxFrames;
    let slot = this.first + this.size;
    if (slot >= maxFrames) slot -= maxFrames;
    slot += this.m;
    c.lengths[slot] = length;
    c.tags[slot] = tag;
    c.pushedAt[slot] = wholeMs(now);
    if (this.size === 0) this.head = at;
    else if (at === 0) this.gapAt = this.tail; // wrapped: the frames before the gap end here
    this.size++;
    this.tail = at + length;
    this.used += length;
    return true;
  }

  /** The head frame, as an exact view in the arena's staging area (valid until the arena stages again); null when empty. */
  stageHead(): Uint8Array | null {
    if (this.size === 0) return null;
    return this.arena.stage(this.base + this.head, this.columns.lengths[this.m + this.first] as number);
  }

  /** Copies the head frame to into[0, …) and returns its length; 0 when empty. */
  copyHead(into: Uint8Array): number {
    const staged = this.stageHead();
    if (staged === null) return 0;
    const len = staged.length;
    if (into.length >= len) into.set(staged, 0);
    this.arena.unstage();
    if (into.length < len) throw new RangeError('FrameRing.copyHead: destination too small');
    return len;
  }

  /** Removes the head frame; false when empty. */
  shift(): boolean {
    if (this.size === 0) return false;
    const c = this.columns;
    const len = c.lengths[this.m + this.first] as number;
    this.used -= len;
    this.size--;
    this.first = this.first + 1 === c.maxFrames ? 0 : this.first + 1;
    if (this.size === 0) {
      // Empty: start again at offset 0, the largest contiguous room there is.
      this.head = 0;
      this.tail = 0;
      this.gapAt = -1;
    } else if (this.head + len === this.gapAt) {
      // Past the gap: the next frame is the first one that wrapped to the front.
      this.head = 0;
      this.gapAt = -1;
    } else {
      this.head += len;
    }
    return true;
  }

  /** Whole ms (mod 2^32) from the head frame's push to `now`; 0 when empty. */
  headWaitMs(now: number): number {
    return this.size === 0 ? 0 : (wholeMs(now) - (this.columns.pushedAt[this.m + this.first] as number)) >>> 0;
  }

  /**
   * Hands head frames to the link while it takes them (Link.send: the send contract), each as
   * an exact view staged in the arena with the tag it was pushed with. Returns how many went:
   * the progress a StallClock reads. With `waits`, each frame's wait from its push to `now` is
   * recorded there.
   */
  drainTo(link: Link, now = 0, waits: EgressWaitSink | null = null): number {
    let sent = 0;
    const arena = this.arena;
    const c = this.columns;
    while (this.size > 0) {
      const at = this.m + this.first;
      const frame = arena.stage(this.base + this.head, c.lengths[at] as number);
      const ok = link.send(frame, c.tags[at] as number, 0);
      arena.unstage();
      if (!ok) break;
      if (waits !== null) waits.recordEgressWait(this.headWaitMs(now), now);
      this.shift();
      sent++;
    }
    return sent;
  }

  clear(): void {
    this.first = 0;
    this.size = 0;
    this.head = 0;
    this.tail = 0;
    this.used = 0;
    this.gapAt = -1;
  }

  // Where a frame of `length` bytes would start, or -1. Unwrapped (head < tail): the room
  // after the tail, else the room before the head. Wrapped (tail ≤ head): the room between.
  private placeFor(length: number): number {
    const capacity = this.capacityBytes;
    if (this.size === this.columns.maxFrames) return -1;
    if (this.size === 0) return length <= capacity ? 0 : -1;
    if (this.head < this.tail) {
      if (length <= capacity - this.tail) return this.tail;
      return length <= this.head ? 0 : -1;
    }
    return length <= this.head - this.tail ? this.tail : -1;
  }
}

/**
 * The per-frame columns of `rings` FrameRings of `maxFrames` frames each, in one buffer: ring i
 * uses slots [i × maxFrames, (i + 1) × maxFrames) of each. Lengths are 16 bits unless a ring may
 * be wider than 64 KiB (`maxRingBytes`).
 */
export class RingColumns {
  readonly rings: number;
  readonly maxFrames: number;
  readonly wide: boolean;
  readonly tags: Uint32Array;
  readonly pushedAt: Uint32Array;
  readonly lengths: Uint16Array | Uint32Array;

  constructor(rings: number, maxFrames: number, maxRingBytes: number) {
    if (!Number.isInteger(rings) || rings < 1) throw new RangeError('RingColumns rings must be an integer ≥ 1');
    this.rings = rings;
    this.maxFrames = maxFrames;
    const wide = maxRingBytes > 0xffff;
    this.wide = wide;
    const n = rings * maxFrames;
    const buffer = new ArrayBuffer(n * (wide ? 12 : 10));
    this.tags = new Uint32Array(buffer, 0, n);
    this.pushedAt = new Uint32Array(buffer, n * 4, n);
    this.lengths = wide ? new Uint32Array(buffer, n * 8, n) : new Uint16Array(buffer, n * 8, n);
  }
}

/** Where a drained frame's egress wait goes (hub/health.ts HealthMetrics has this method). */
export interface EgressWaitSink {
  recordEgressWait(ms: number, now: number): void;
}

// A time in whole ms modulo 2^32 (a negative or non-finite time reads 0).
function wholeMs(t: number): number {
  return t > 0 && t < Infinity ? Math.floor(t) >>> 0 : 0;
}

/**
 * §9.4: the bounded queue of one (subscriber, EVENT channel), capacity = the catalog's
 * queue_depth. When full, a push drops the oldest and counts it; the next delivered event
 * carries `takeDropped()`, the number dropped since the last delivery, so the loss is
 * visible to the client. Holds references (the hub shares one immutable record per event
 * among its subscribers) in an array sized at construction.
 */
export class EventQueue<T> {
  private readonly items: (T | undefined)[];
  private first = 0;
  private n = 0;
  private dropped = 0;
  private total = 0;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('EventQueue capacity must be an integer ≥ 1');
    this.items = new Array<T | undefined>(capacity).fill(undefined);
  }

  get size(): number {
    return this.n;
  }

  /** Events dropped since construction (for health); `takeDropped` does not reset it. */
  get droppedTotal(): number {
    return this.total;
  }

  /** Appends; when full the oldest is dropped and counted. Returns false when it dropped one. */
  push(item: T): boolean {
    const cap = this.capacity;
    if (this.n === cap) {
      this.items[this.first] = item;
      this.first = this.first + 1 === cap ? 0 : this.first + 1;
      this.dropped++;
      this.total++;
      return false;
    }
    const i = this.first + this.n;
    this.items[i < cap ? i : i - cap] = item;
    this.n++;
    return true;
  }

  /** The oldest event, or undefined when empty. */
  peek(): T | undefined {
    return this.n === 0 ? undefined : this.items[this.first];
  }

  /** Removes and returns the oldest event, or undefined when empty. */
  shift(): T | undefined {
    if (this.n === 0) return undefined;
    const item = this.items[this.first];
    this.items[this.first] = undefined; // the shared record is not kept alive by a delivered slot
    this.first = this.first + 1 === this.capacity ? 0 : this.first + 1;
    this.n--;
    return item;
  }

  /** How many were dropped since the last call; resets that count (§9.4). */
  takeDropped(): number {
    const d = this.dropped;
    this.dropped = 0;
    return d;
  }

  /** Empties the queue (e.g. on unsubscribe); the pending drop count goes with it. */
  clear(): void {
    for (let i = 0; i < this.capacity; i++) this.items[i] = undefined;
    this.first = 0;
    this.n = 0;
    this.dropped = 0;
  }
}

/** The numbers an EventRing keeps per reader: its cursor and its lost count. */
export const EVENT_READER_SLOTS = 2;

/**
 * §9.4 for every subscriber of one EVENT channel at once. A (subscriber, channel) queue of depth
 * d that drops its oldest holds, at any moment, some of the channel's newest d events, in the
 * order they were published: so the channel's newest `capacity` events, kept once, plus one
 * cursor per reader (the hub's readers are session slots) behave exactly as one EventQueue per
 * subscriber would, without a queue each. A reader that falls more than `capacity` behind has
 * lost its oldest: they are counted, and `dropped(reader)` (the count to carry on the next
 * delivered event) includes them.
 *
 * Events that every reader has passed are released at once, so that a delivered record is not
 * kept alive by the ring (as EventQueue.shift does), and with no reader nothing is kept.
 */
export class EventRing<T> {
  private readonly items: (T | undefined)[];
  private pushed = 0; // events pushed since construction: the cursor just past the newest
  private released = 0; // items before this cursor no longer held
  private readers = 0; // readers reading
  // Per reader r: the cursor of its next event (-1 while it is not reading) at at + 2r, the
  // events it lost (overflow or `drop`) since its last delivered one at at + 2r + 1, in a store
  // of its own or one the hub's rings share (on XS each typed array costs heap slots).
  private readonly r: Float64Array;
  private readonly at: number;
  private readonly n: number;

  /** `store`, `at`: where its readers' numbers go, EVENT_READER_SLOTS × readers of them. */
  constructor(
    readonly capacity: number,
    readers: number,
    store?: Float64Array,
    at = 0,
  ) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('EventRing capacity must be an integer ≥ 1');
    if (!Number.isInteger(readers) || readers < 1) throw new RangeError('EventRing readers must be an integer ≥ 1');
    if (store !== undefined && !(Number.isInteger(at) && at >= 0 && at + EVENT_READER_SLOTS * readers <= store.length)) throw new RangeError('EventRing: the store is too small');
    this.items = new Array<T | undefined>(capacity).fill(undefined);
    this.r = store ?? new Float64Array(EVENT_READER_SLOTS * readers);
    this.at = store !== undefined ? at : 0;
    this.n = readers;
    for (let i = 0; i < readers; i++) {
      this.r[this.at + 2 * i] = -1;
      this.r[this.at + 2 * i + 1] = 0;
    }
  }

  /** A reader starts with an empty queue: only events pushed from now on reach it. */
  join(reader: number): void {
    if (!this.reading(reader)) this.readers++;
    this.r[this.at + 2 * reader] = this.pushed;
    this.r[this.at + 2 * reader + 1] = 0;
    this.release(); // a reader that joins again forgets what it had not read
  }

  /** A reader stops; what it had not read is forgotten with its count. */
  leave(reader: number): void {
    if (this.reading(reader)) this.readers--;
    this.r[this.at + 2 * reader] = -1;
    this.r[this.at + 2 * reader + 1] = 0;
    this.release();
  }

  reading(reader: number): boolean {
    return (this.r[this.at + 2 * reader] as number) >= 0;
  }

  /** Events the ring still holds for some reader (the others are released). */
  get held(): number {
    return this.pushed - this.released;
  }

  push(item: T): void {
    if (this.readers === 0) {
      this.pushed++;
      this.released = this.pushed;
      return;
    }
    this.items[this.pushed % this.capacity] = item;
    this.pushed++;
    if (this.released < this.pushed - this.capacity) this.released = this.pushed - this.capacity;
  }

  /** Events waiting for the reader (at most `capacity`). */
  size(reader: number): number {
    const c = this.catchUp(reader);
    return c < 0 ? 0 : this.pushed - c;
  }

  /** The reader's oldest waiting event, or undefined. */
  peek(reader: number): T | undefined {
    const c = this.catchUp(reader);
    return c < 0 || c === this.pushed ? undefined : this.items[c % this.capacity];
  }

  /** The reader's oldest event was delivered: it moves on and its lost count starts again. */
  shift(reader: number): void {
    if (this.peek(reader) === undefined) return;
    this.r[this.at + 2 * reader] = (this.r[this.at + 2 * reader] as number) + 1;
    this.r[this.at + 2 * reader + 1] = 0;
    this.release();
  }

  /** The reader's oldest event is discarded without delivery and counted as lost. */
  drop(reader: number): void {
    if (this.peek(reader) === undefined) return;
    const k = this.at + 2 * reader;
    this.r[k] = (this.r[k] as number) + 1;
    this.r[k + 1] = (this.r[k + 1] as number) + 1;
    this.release();
  }

  /** Events the reader lost since its last delivered one (§9.4: the next delivery carries it). */
  dropped(reader: number): number {
    this.catchUp(reader);
    return this.r[this.at + 2 * reader + 1] as number;
  }

  // Events that fell out of the ring before the reader got to them are lost, oldest first.
  private catchUp(reader: number): number {
    const k = this.at + 2 * reader;
    const c = this.r[k] as number;
    const oldest = this.pushed - this.capacity;
    if (c < 0 || c >= oldest) return c;
    this.r[k + 1] = (this.r[k + 1] as number) + (oldest - c);
    this.r[k] = oldest;
    return oldest;
  }

  // Forgets the items that no reader will read again.
  private release(): void {
    let min = this.pushed;
    for (let i = 0; i < this.n; i++) {
      const c = this.r[this.at + 2 * i] as number;
      if (c >= 0 && c < min) min = c;
    }
    for (let i = this.released; i < min; i++) this.items[i % this.capacity] = undefined;
    if (min > this.released) this.released = min;
  }
}
