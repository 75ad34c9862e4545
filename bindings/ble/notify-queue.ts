// The hub's own notification queue for one BLE connection (§10.3, §13). The Moddable SDK
// queues notifications without bound and reports each one's completion; the hub keeps this
// bounded queue in front of it with one notification in flight, so that a slow link shows up
// here as depth (the §10.3 congestion signal) and as `canSend` saying no, never as memory
// growing somewhere out of sight.
//
// Frames are stored whole and cut into fragments only as each notification is handed out, at
// the fragment size of that moment: an MTU exchange that completes after frames were queued
// simply makes the rest of them travel in bigger pieces. Nothing is allocated after
// construction.

import { ESTOP_FRAME_BYTES } from '../../hub/estop-frame.js';
import { MAX_HUB_FRAME_BYTES } from '../../hub/frames.js';
import {
  FRAGMENT_COUNTER_MASK,
  FRAGMENT_HEADER_BYTES,
  FRAGMENT_MAX_BYTES,
  FragmentPosition,
  fragmentCount,
  fragmentPayload,
  fragmentsLeft,
  header,
  nextCounter,
  writeFragment,
} from './fragment.js';

/**
 * The queue's capacity in notifications: the denominator of the congestion signal and the
 * admission bound. 16 notifications are 3 to 4 connection events of a typical phone link: deep
 * enough to keep every event full, shallow enough that nothing queued is stale (§10.4: no
 * delay-and-burst).
 */
export const NOTIFY_QUEUE_NOTIFICATIONS = 16;
/**
 * The queue's storage: the largest hub frame (§7) must fit an empty queue, or a CATALOG chunk
 * or a long EVENT text could never be sent over BLE. A frame longer than the notification
 * capacity is admitted only into an empty queue, and while it drains the signal reads ≥ 1.
 */
export const NOTIFY_QUEUE_BYTES = MAX_HUB_FRAME_BYTES;
/** Frames held at most. */
export const NOTIFY_QUEUE_FRAMES = 32;
/**
 * ESTOP frames waiting ahead of the queue. More than this without one notification completing
 * is a dead link; the oldest is then dropped (the newest carries the current latch state).
 */
export const ESTOP_AHEAD_SLOTS = 4;

export interface NotifyQueueOptions {
  /** Capacity in notifications (default NOTIFY_QUEUE_NOTIFICATIONS). */
  readonly notifications?: number;
  /** Storage in bytes of frames (default NOTIFY_QUEUE_BYTES). */
  readonly bytes?: number;
  /** Frames held at most (default NOTIFY_QUEUE_FRAMES). */
  readonly frames?: number;
}

export class NotifyQueueCounters {
  /** Notifications handed to the transport (retries included). */
  handedOut = 0;
  /** Notifications the transport completed. */
  completed = 0;
  /** Completions with an error (the notification is sent again). */
  failures = 0;
  /** ESTOP frames written ahead. */
  estops = 0;
  /** ESTOP frames dropped because ESTOP_AHEAD_SLOTS newer ones were waiting. */
  estopsDropped = 0;
  /** Expendable frames dropped unsent for waiting longer than the sample budget. */
  expired = 0;
}

/**
 * Order on the air: the notification in flight (or waiting to be retried), then every ESTOP
 * written ahead, then the fragments of the queued frames in order. An ESTOP is one ONLY
 * fragment and may fall between two fragments of a frame; receivers accept that (§13.4).
 */
export class NotifyQueue {
  readonly capacityNotifications: number;
  readonly capacityBytes: number;
  readonly maxFrames: number;
  readonly counters = new NotifyQueueCounters();
  /** The notification `next` handed out: scratch[0, its length). Kept until completed. */
  readonly scratch: Uint8Array;
  // Frames, each contiguous in storage (one that does not fit before the end goes to the front).
  private readonly storage: Uint8Array;
  private readonly starts: Uint32Array;
  private readonly lengths: Uint32Array;
  // When each frame was queued, and whether it may be dropped unsent once stale (Link.send).
  private readonly times: Float64Array;
  private readonly expendable: Uint8Array;
  private first = 0;
  private n = 0;
  private head = 0;
  private tail = 0;
  private used = 0;
  private sent = 0; // bytes of the head frame already handed out
  private headCounter = 0;
  private pendingN = 0; // notifications still to hand out for the queued frames ...
  private countedAt = 0; // ... counted at this fragment size
  private readonly ahead = new Uint8Array(ESTOP_AHEAD_SLOTS * ESTOP_FRAME_BYTES);
  private aheadFirst = 0;
  private aheadN = 0;
  private counter = FRAGMENT_COUNTER_MASK;
  private flight = 0; // length of the notification in scratch; 0: none
  private flightCarried = 0;
  private failed = false;

  /**
   * `scratch`: where notifications are built, at least FRAGMENT_MAX_BYTES long (the device
   * passes the buffer it hands to the stack, which saves a copy per notification).
   */
  constructor(options: NotifyQueueOptions = {}, scratch: Uint8Array = new Uint8Array(FRAGMENT_MAX_BYTES)) {
    if (scratch.length < FRAGMENT_MAX_BYTES) throw new RangeError('NotifyQueue: scratch must hold FRAGMENT_MAX_BYTES');
    this.scratch = scratch;
    this.capacityNotifications = options.notifications ?? NOTIFY_QUEUE_NOTIFICATIONS;
    this.capacityBytes = options.bytes ?? NOTIFY_QUEUE_BYTES;
    this.maxFrames = options.frames ?? NOTIFY_QUEUE_FRAMES;
    if (!Number.isInteger(this.capacityNotifications) || this.capacityNotifications < 1) throw new RangeError('NotifyQueue: notifications must be an integer ≥ 1');
    if (!Number.isInteger(this.capacityBytes) || this.capacityBytes < ESTOP_FRAME_BYTES || this.capacityBytes > 0xffff) throw new RangeError('NotifyQueue: bytes must be an integer in 12..65535');
    if (!Number.isInteger(this.maxFrames) || this.maxFrames < 1) throw new RangeError('NotifyQueue: frames must be an integer ≥ 1');
    this.storage = new Uint8Array(this.capacityBytes);
    this.starts = new Uint32Array(this.maxFrames);
    this.lengths = new Uint32Array(this.maxFrames);
    this.times = new Float64Array(this.maxFrames);
    this.expendable = new Uint8Array(this.maxFrames);
  }

  /** A notification is with the transport and not yet completed. */
  get inFlight(): boolean {
    return this.flight > 0 && !this.failed;
  }

  /** The last notification failed and waits to be handed out again. */
  get retryPending(): boolean {
    return this.failed;
  }

  /** Frames queued (the one being cut included). */
  get frames(): number {
    return this.n;
  }

  /** ESTOP frames waiting ahead. */
  get estopsWaiting(): number {
    return this.aheadN;
  }

  /** Bytes of queued frames not yet handed out. */
  get bytes(): number {
    return this.used - this.sent;
  }

  /** Notifications waiting at fragment size `size`: the queued frames' plus a failed one. */
  depth(size: number): number {
    return this.pending(size) + (this.failed ? 1 : 0);
  }

  /** The §10.3 signal: depth ÷ capacity, or bytes ÷ storage when that is higher. ≥ 1 is full. */
  ratio(size: number): number {
    const byNotifications = this.depth(size) / this.capacityNotifications;
    const byBytes = (this.used - this.sent) / this.capacityBytes;
    return byNotifications > byBytes ? byNotifications : byBytes;
  }

  /**
   * Whether a frame of `length` bytes is taken now: storage and a frame slot for it, and all
   * its fragments within the notification capacity. An empty queue takes any frame that fits
   * its storage, however many notifications it needs.
   */
  fits(length: number, size: number): boolean {
    if (!(length >= 1) || this.placeFor(length) < 0) return false;
    const waiting = this.depth(size);
    return waiting === 0 || waiting + fragmentCount(length, size) <= this.capacityNotifications;
  }

  /**
   * Queues frame[0, length) at `now`; false (and nothing changes) when it does not fit.
   * `expendable`: `expire` may drop it unsent (a STREAM sample, Link.send).
   */
  push(frame: Uint8Array, length: number, size: number, now = 0, expendable = false): boolean {
    if (!this.fits(length, size)) return false;
    if (length > frame.length) throw new RangeError('NotifyQueue.push: length beyond the frame');
    const at = this.placeFor(length);
    const buf = this.storage;
    if (length === frame.length) buf.set(frame, at);
    else for (let i = 0; i < length; i++) buf[at + i] = frame[i] as number;
    let slot = this.first + this.n;
    if (slot >= this.maxFrames) slot -= this.maxFrames;
    this.starts[slot] = at;
    this.lengths[slot] = length;
    this.times[slot] = now;
    this.expendable[slot] = expendable ? 1 : 0;
    if (this.n === 0) {
      this.head = at;
      this.sent = 0;
    }
    this.n++;
    this.tail = at + length;
    this.used += length;
    this.pendingN += fragmentCount(length, size);
    return true;
  }

  /** The 12-byte ESTOP frame, ahead of every queued frame (§10.4, §11.2). */
  pushAhead(frame: Uint8Array): void {
    if (this.aheadN === ESTOP_AHEAD_SLOTS) {
      this.aheadFirst = (this.aheadFirst + 1) % ESTOP_AHEAD_SLOTS;
      this.aheadN--;
      this.counters.estopsDropped++;
    }
    const at = ((this.aheadFirst + this.aheadN) % ESTOP_AHEAD_SLOTS) * ESTOP_FRAME_BYTES;
    for (let i = 0; i < ESTOP_FRAME_BYTES; i++) this.ahead[at + i] = frame[i] as number;
    this.aheadN++;
    this.counters.estops++;
  }

  /**
   * Puts the next notification into `scratch` and returns its length; 0 when one is in flight
   * or nothing waits. A failed one is handed out again, unchanged, before anything else.
   */
  next(size: number): number {
    if (this.flight > 0) {
      if (!this.failed) return 0;
      this.failed = false;
      this.counters.handedOut++;
      return this.flight;
    }
    const out = this.scratch;
    if (this.aheadN > 0) {
      this.counter = nextCounter(this.counter);
      out[0] = header(FragmentPosition.ONLY, this.counter);
      const at = this.aheadFirst * ESTOP_FRAME_BYTES;
      for (let i = 0; i < ESTOP_FRAME_BYTES; i++) out[FRAGMENT_HEADER_BYTES + i] = this.ahead[at + i] as number;
      this.aheadFirst = (this.aheadFirst + 1) % ESTOP_AHEAD_SLOTS;
      this.aheadN--;
      return this.handOut(FRAGMENT_HEADER_BYTES + ESTOP_FRAME_BYTES, ESTOP_FRAME_BYTES);
    }
    if (this.n === 0) return 0;
    this.pending(size);
    const len = this.lengths[this.first] as number;
    if (this.sent === 0) this.headCounter = this.counter = nextCounter(this.counter);
    const carried = fragmentPayload(len, this.sent, size);
    const k = writeFragment(out, this.storage, this.head, len, this.sent, this.headCounter, size);
    this.sent += carried;
    this.pendingN--;
    if (this.sent >= len) this.shiftFrame();
    return this.handOut(k, carried);
  }

  /**
   * The transport finished the notification in flight: ok, or failed (it will be handed out
   * again). Returns the frame bytes it carried when ok, else 0.
   */
  done(ok: boolean): number {
    if (this.flight === 0 || this.failed) return 0;
    if (!ok) {
      this.failed = true;
      this.counters.failures++;
      return 0;
    }
    const carried = this.flightCarried;
    this.flight = 0;
    this.flightCarried = 0;
    this.counters.completed++;
    return carried;
  }

  /**
   * Drops the expendable frames at the front, none of whose fragments has gone, queued more than
   * `budgetMs` before `now`; stops at the first frame that is not one. Returns how many.
   */
  expire(now: number, budgetMs: number, size: number): number {
    let dropped = 0;
    while (this.n > 0 && this.sent === 0 && this.expendable[this.first] === 1 && now - (this.times[this.first] as number) > budgetMs) {
      this.pending(size);
      this.pendingN -= fragmentCount(this.lengths[this.first] as number, size);
      this.shiftFrame();
      dropped++;
    }
    this.counters.expired += dropped;
    return dropped;
  }

  /** Empties everything, the notification in flight and the ESTOP frames ahead included. */
  clear(): void {
    this.first = 0;
    this.n = 0;
    this.head = 0;
    this.tail = 0;
    this.used = 0;
    this.sent = 0;
    this.pendingN = 0;
    this.aheadFirst = 0;
    this.aheadN = 0;
    this.flight = 0;
    this.flightCarried = 0;
    this.failed = false;
  }

  private handOut(length: number, carried: number): number {
    this.flight = length;
    this.flightCarried = carried;
    this.counters.handedOut++;
    return length;
  }

  /** Notifications left for the queued frames, recounted when the fragment size changed. */
  private pending(size: number): number {
    if (size !== this.countedAt) {
      let sum = 0;
      let slot = this.first;
      for (let i = 0; i < this.n; i++) {
        const len = this.lengths[slot] as number;
        sum += i === 0 ? fragmentsLeft(len, this.sent, size) : fragmentCount(len, size);
        slot = slot + 1 === this.maxFrames ? 0 : slot + 1;
      }
      this.pendingN = sum;
      this.countedAt = size;
    }
    return this.pendingN;
  }

  private shiftFrame(): void {
    this.used -= this.lengths[this.first] as number;
    this.sent = 0;
    this.n--;
    this.first = this.first + 1 === this.maxFrames ? 0 : this.first + 1;
    if (this.n === 0) {
      this.head = 0;
      this.tail = 0;
    } else {
      this.head = this.starts[this.first] as number;
    }
  }

  // Where a frame of `length` bytes would start, or -1 (the same placement as hub/queues.ts
  // FrameRing: after the tail, else before the head; an empty queue starts at 0).
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
