// Bounded queues sized at construction: the never-shed frame ring and its stall clock
// (§10.4 "park, not kill"), and the per-(subscriber, EVENT channel) queue that drops the
// oldest with a visible counter (§9.4). Nothing here allocates per call.

import { NEVER_SHED_STALL_EVICTION_MS } from './constants.js';
import type { Link } from './ports.js';

/**
 * §10.4 never-shed queue: whole frames that the link could not take at once wait here, in
 * order, until it can. One byte buffer plus a ring of (start, length) per frame; every frame
 * is contiguous in the buffer (when it does not fit before the end, it goes to the front and
 * the tail end is left as a gap), so the head frame can be handed on without copying it
 * (`storage`, `headStart`, `headLength`) or copied out (`copyHead`).
 *
 * `push` returns false when the frame does not fit (bytes or frame count): never-shed
 * traffic is not dropped by the queue, the caller decides (a full never-shed queue is a
 * stalled link, which the StallClock parks).
 */
export class FrameRing {
  /** The ring's buffer; the head frame is storage[headStart, headStart + headLength). */
  readonly storage: Uint8Array;
  private readonly starts: Uint32Array;
  private readonly lengths: Uint32Array;
  private first = 0; // index ring: slot of the head frame
  private n = 0; // frames held
  private head = 0; // byte offset of the head frame
  private tail = 0; // byte offset where the next frame goes
  private used = 0; // bytes of frames held (gaps not counted)

  constructor(
    readonly capacityBytes: number,
    readonly maxFrames: number,
  ) {
    if (!Number.isInteger(capacityBytes) || capacityBytes < 1) throw new RangeError('FrameRing capacityBytes must be an integer ≥ 1');
    if (!Number.isInteger(maxFrames) || maxFrames < 1) throw new RangeError('FrameRing maxFrames must be an integer ≥ 1');
    this.storage = new Uint8Array(capacityBytes);
    this.starts = new Uint32Array(maxFrames);
    this.lengths = new Uint32Array(maxFrames);
  }

  /** Frames held. */
  get size(): number {
    return this.n;
  }

  /** Bytes of the frames held. */
  get bytes(): number {
    return this.used;
  }

  /** Offset of the head frame in `storage`; -1 when empty. */
  get headStart(): number {
    return this.n === 0 ? -1 : this.head;
  }

  /** Length of the head frame; 0 when empty. */
  get headLength(): number {
    return this.n === 0 ? 0 : (this.lengths[this.first] as number);
  }

  /** Whether a frame of `length` bytes would be accepted now. */
  fits(length: number): boolean {
    return this.placeFor(length) >= 0;
  }

  /**
   * Appends frame[0, length). False (and nothing changes) when it does not fit. A length
   * below 1 or beyond the frame is a caller bug and throws.
   */
  push(frame: Uint8Array, length: number): boolean {
    if (!Number.isInteger(length) || length < 1 || length > frame.length) throw new RangeError('FrameRing.push: bad length');
    const at = this.placeFor(length);
    if (at < 0) return false;
    const buf = this.storage;
    if (length === frame.length) buf.set(frame, at);
    else for (let i = 0; i < length; i++) buf[at + i] = frame[i] as number;
    let slot = this.first + this.n;
    if (slot >= this.maxFrames) slot -= this.maxFrames;
    this.starts[slot] = at;
    this.lengths[slot] = length;
    if (this.n === 0) this.head = at;
    this.n++;
    this.tail = at + length;
    this.used += length;
    return true;
  }

  /** Copies the head frame to into[0, …) and returns its length; 0 when empty. */
  copyHead(into: Uint8Array): number {
    if (this.n === 0) return 0;
    const len = this.lengths[this.first] as number;
    if (into.length < len) throw new RangeError('FrameRing.copyHead: destination too small');
    const buf = this.storage;
    const at = this.head;
    for (let i = 0; i < len; i++) into[i] = buf[at + i] as number;
    return len;
  }

  /** Removes the head frame; false when empty. */
  shift(): boolean {
    if (this.n === 0) return false;
    this.used -= this.lengths[this.first] as number;
    this.n--;
    this.first = this.first + 1 === this.maxFrames ? 0 : this.first + 1;
    if (this.n === 0) {
      // Empty: start again at offset 0, the largest contiguous room there is.
      this.head = 0;
      this.tail = 0;
    } else {
      this.head = this.starts[this.first] as number;
    }
    return true;
  }

  /**
   * Sends head frames while the link has room, through `scratch` (Link.send takes a frame
   * from offset 0 and copies it). Returns how many went: the progress a StallClock reads.
   */
  drainTo(link: Link, scratch: Uint8Array): number {
    let sent = 0;
    while (this.n > 0) {
      const len = this.lengths[this.first] as number;
      if (!link.canSend(len)) break;
      if (this.head === 0) {
        link.send(this.storage, len);
      } else {
        this.copyHead(scratch);
        link.send(scratch, len);
      }
      this.shift();
      sent++;
    }
    return sent;
  }

  clear(): void {
    this.first = 0;
    this.n = 0;
    this.head = 0;
    this.tail = 0;
    this.used = 0;
  }

  // Where a frame of `length` bytes would start, or -1. Unwrapped (head < tail): the room
  // after the tail, else the room before the head. Wrapped (tail ≤ head): the room between.
  private placeFor(length: number): number {
    if (this.n === this.maxFrames) return -1;
    if (this.n === 0) return length <= this.capacityBytes ? 0 : -1;
    if (this.head < this.tail) {
      if (length <= this.capacityBytes - this.tail) return this.tail;
      return length <= this.head ? 0 : -1;
    }
    return length <= this.head - this.tail ? this.tail : -1;
  }
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

/**
 * §10.4 "park, not kill": how long a never-shed queue has been non-empty without making
 * progress. The hub calls `update` whenever it pushes to or drains the queue (at the latest
 * once per tick); the stall is measured from the first update that saw the queue non-empty
 * with no progress, or from the last progress. `parkDue(now)` is true once that has lasted
 * NEVER_SHED_STALL_EVICTION_MS (2000 ms) or more: at 1999 ms not, at 2000 ms yes.
 */
export class StallClock {
  private stalled = false;
  private since = 0;

  constructor(readonly limitMs: number = NEVER_SHED_STALL_EVICTION_MS) {}

  update(nonEmpty: boolean, progressed: boolean, now: number): void {
    if (!nonEmpty) {
      this.stalled = false;
    } else if (progressed || !this.stalled) {
      this.stalled = true;
      this.since = now;
    }
  }

  /** Milliseconds stalled at `now`; 0 when not stalled. */
  stalledFor(now: number): number {
    if (!this.stalled) return 0;
    const d = now - this.since;
    return d > 0 ? d : 0;
  }

  /** §10.4: the session is parked (STALE, transport closed) when this turns true. */
  parkDue(now: number): boolean {
    return this.stalled && now - this.since >= this.limitMs;
  }

  reset(): void {
    this.stalled = false;
  }
}
