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
import { ESTOP_AHEAD_SLOTS as LINK_ESTOP_AHEAD_SLOTS, EstopAhead } from '../link.js';
import {
  FRAGMENT_COUNTER_MASK,
  FRAGMENT_HEADER_BYTES,
  FRAGMENT_LENGTH_BYTES,
  FRAGMENT_MAX_BYTES,
  FragmentPosition,
  fragmentCount,
  fragmentsLeft,
  header,
} from './fragment.js';

const NO_HEADER = Object.freeze(new Uint8Array(0)) as Uint8Array;
// Header bytes without the message counter (fragment.ts `header`): the position in bits 7–6.
const ONLY_HEADER = header(FragmentPosition.ONLY, 0);
const FIRST_HEADER = header(FragmentPosition.FIRST, 0);
const MIDDLE_HEADER = header(FragmentPosition.MIDDLE, 0);
const LAST_HEADER = header(FragmentPosition.LAST, 0);
// A frame's start in storage (below 2^16: the storage is at most 65535 bytes), and its mark as expendable, in one column.
const START_MASK = 0xffff;
const EXPENDABLE = 0x10000;
/** An ESTOP frame's notification: one ONLY fragment. */
const ESTOP_NOTIFICATION_BYTES = FRAGMENT_HEADER_BYTES + ESTOP_FRAME_BYTES;

// A resizable ArrayBuffer seen through length-tracking views (ES2024, in XS and Node), as
// hub/bytes.ts explains: the notification area is shrunk to the notification's length so that
// `out` is exactly it, with no view made per notification; XS resizes within the first capacity
// in place.
interface ResizableArrayBuffer extends ArrayBuffer {
  resize(byteLength: number): void;
}
const Resizable = ArrayBuffer as unknown as new (byteLength: number, options: { maxByteLength: number }) => ResizableArrayBuffer;

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
export const ESTOP_AHEAD_SLOTS = LINK_ESTOP_AHEAD_SLOTS;

export interface NotifyQueueOptions {
  /** Capacity in notifications (default NOTIFY_QUEUE_NOTIFICATIONS). */
  readonly notifications?: number;
  /** Storage in bytes of frames (default NOTIFY_QUEUE_BYTES). */
  readonly bytes?: number;
  /** Frames held at most (default NOTIFY_QUEUE_FRAMES). */
  readonly frames?: number;
  /** Bytes of the queue's buffer set aside for its owner (`spare`; default 0). */
  readonly spareBytes?: number;
}

/** The queue's counters (`NotifyQueue.counters`: fields of the queue itself, no object of their own). */
export interface NotifyQueueCounters {
  /** Notifications handed to the transport (retries included). */
  readonly handedOut: number;
  /** Notifications the transport completed. */
  readonly completed: number;
  /** Completions with an error (the notification is sent again). */
  readonly failures: number;
  /** ESTOP frames written ahead. */
  readonly estops: number;
  /** ESTOP frames dropped because ESTOP_AHEAD_SLOTS newer ones were waiting. */
  readonly estopsDropped: number;
  /** Expendable frames dropped unsent for waiting longer than the sample budget. */
  readonly expired: number;
}

/**
 * Order on the air: the notification in flight (or waiting to be retried), then every ESTOP
 * written ahead, then the fragments of the queued frames in order. An ESTOP is one ONLY
 * fragment and may fall between two fragments of a frame; receivers accept that (§13.4).
 *
 * The state the link reads on every event (`frames`, `held`, `vacant`, `inFlight`,
 * `retryPending`) is kept in plain fields rather than getters: on XS a getter costs a call, a
 * field a load. Only the queue writes them, but for `complete`, which the link's completion
 * (BleLink.notified) does inline: a call per notification saved.
 */
export class NotifyQueue {
  readonly capacityNotifications: number;
  readonly capacityBytes: number;
  readonly maxFrames: number;
  /** NotifyQueueCounters (handedOut: a getter). */
  completed = 0;
  failures = 0;
  estops = 0;
  estopsDropped = 0;
  expired = 0;
  /**
   * [frames | ESTOP slots | the notification being handed out], one length-tracking view:
   * frames go in and fragments come out with one native copy each (copyWithin across the parts).
   */
  readonly all: Uint8Array;
  /**
   * Exactly the notification `next` handed out, kept until it completed (a failed one goes again
   * unchanged): always this same view, shrunk or grown to each notification's length.
   */
  readonly out: Uint8Array;
  /** `spareBytes` of the queue's buffer that the queue never touches, its owner's (on XS a buffer of their own would cost heap slots). */
  readonly spare: Uint8Array;
  /** Frames queued (the one being cut included). */
  frames = 0;
  /** Frames and ESTOP frames waiting to be handed out (the notification in flight not counted). */
  held = 0;
  /** Nothing waits and nothing is in flight (or waits to be retried): the link may send a frame straight out. */
  vacant = true;
  /** A notification is with the transport and not yet completed. */
  inFlight = false;
  /** The last notification failed and waits to be handed out again. */
  retryPending = false;
  /** Frames whose first fragment has been handed out, and ESTOP frames (the client counts every frame, §5.12). */
  framesStarted = 0;
  /** The fragment size the queued frames' notifications are counted at (`ratio` recounts at another). */
  countedAt = 0;
  /** ratio(countedAt), kept as the queue changes: the link reads it without a call. */
  fill = 0;
  /**
   * When the front frame was queued if `expire` may drop it (expendable, none of its fragments
   * gone), else Infinity: `stale` is now − frontQueuedAt > budgetMs.
   */
  frontQueuedAt = Infinity;
  /**
   * @internal The queue's one buffer. Frames are each contiguous in its storage (`all` from 0; one
   * that does not fit before the end goes to the front). BleLink's direct send (a frame of one
   * fragment while the queue is vacant) writes its notification into the notification area
   * itself, under the next `counter`, and shrinks and restores the buffer around the transport's
   * notify as `notifyNext` does.
   */
  readonly rab: ResizableArrayBuffer;
  /** @internal Where the notification area begins in `all`. */
  readonly outAt: number;
  // The length `out` has now.
  private outLength = FRAGMENT_MAX_BYTES;
  private readonly ahead: EstopAhead;
  // Per frame slot: its length at [slot], and at [maxFrames + slot] where it starts (bits 15–0)
  // and whether it may be dropped unsent once stale (Link.send; EXPENDABLE set).
  private readonly cols: Uint32Array;
  // When each frame was queued.
  private readonly times: Float64Array;
  private first = 0;
  private head = 0;
  private tail = 0;
  private used = 0;
  private sent = 0; // bytes of the head frame already handed out
  private headCounter = 0;
  private pendingN = 0; // notifications still to hand out for the queued frames, counted at countedAt
  /** @internal The last message counter taken. */
  counter = FRAGMENT_COUNTER_MASK;
  /**
   * @internal The length of the notification in `out`: the last one handed out (kept once it
   * completed; a failed one's until it goes again).
   */
  flight = 0;
  /** @internal The frame bytes the notification in flight carries (or the last one did, once it completed). */
  flightCarried = 0;
  // Notifications in flight when the queue was cleared (handedOut).
  private clearedInFlight = 0;

  constructor(options: NotifyQueueOptions = {}) {
    this.capacityNotifications = options.notifications ?? NOTIFY_QUEUE_NOTIFICATIONS;
    this.capacityBytes = options.bytes ?? NOTIFY_QUEUE_BYTES;
    this.maxFrames = options.frames ?? NOTIFY_QUEUE_FRAMES;
    if (!Number.isInteger(this.capacityNotifications) || this.capacityNotifications < 1) throw new RangeError('NotifyQueue: notifications must be an integer ≥ 1');
    if (!Number.isInteger(this.capacityBytes) || this.capacityBytes < ESTOP_FRAME_BYTES || this.capacityBytes > 0xffff) throw new RangeError('NotifyQueue: bytes must be an integer in 12..65535');
    if (!Number.isInteger(this.maxFrames) || this.maxFrames < 1) throw new RangeError('NotifyQueue: frames must be an integer ≥ 1');
    const spareBytes = options.spareBytes ?? 0;
    if (!Number.isInteger(spareBytes) || spareBytes < 0) throw new RangeError('NotifyQueue: spareBytes must be an integer ≥ 0');
    // One buffer (on XS each buffer and each view costs heap slots of its own):
    // [frames | ESTOP slots | spare | times | columns | the notification area]. The notification
    // area is last, so that shrinking it (fit) leaves the fixed views whole.
    const n = this.maxFrames;
    const spareAt = this.capacityBytes + ESTOP_AHEAD_SLOTS * ESTOP_FRAME_BYTES;
    const timesAt = (spareAt + spareBytes + 7) & ~7;
    const colsAt = timesAt + n * 8;
    this.outAt = colsAt + n * 8;
    const total = this.outAt + FRAGMENT_MAX_BYTES;
    this.rab = new Resizable(total, { maxByteLength: total });
    this.all = new Uint8Array(this.rab);
    this.out = new Uint8Array(this.rab, this.outAt);
    this.ahead = new EstopAhead(ESTOP_FRAME_BYTES, ESTOP_AHEAD_SLOTS, this.all, this.capacityBytes);
    this.spare = new Uint8Array(this.rab, spareAt, spareBytes);
    this.times = new Float64Array(this.rab, timesAt, n);
    this.cols = new Uint32Array(this.rab, colsAt, 2 * n);
  }

  /** The queue's counters: the queue itself. */
  get counters(): NotifyQueueCounters {
    return this;
  }

  /** Every notification handed out has completed, failed, is in flight, or was in flight when the queue was cleared. */
  get handedOut(): number {
    return this.completed + this.failures + (this.inFlight ? 1 : 0) + this.clearedInFlight;
  }

  /** ESTOP frames waiting ahead. */
  get estopsWaiting(): number {
    return this.ahead.count;
  }

  /** ESTOP frames it holds ahead at once. */
  get aheadSlots(): number {
    return this.ahead.slots;
  }

  /** Bytes of queued frames not yet handed out. */
  get bytes(): number {
    return this.used - this.sent;
  }

  /** Notifications waiting at fragment size `size`: the queued frames' plus a failed one. */
  depth(size: number): number {
    return (size === this.countedAt ? this.pendingN : this.pending(size)) + (this.retryPending ? 1 : 0);
  }

  /** The §10.3 signal: depth ÷ capacity, or bytes ÷ storage when that is higher. ≥ 1 is full. */
  ratio(size: number): number {
    if (size !== this.countedAt) this.pending(size);
    return this.fill;
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
    // fits(), with the placement and the fragment count kept for the frame.
    if (!(length >= 1)) return false;
    const at = this.placeFor(length);
    if (at < 0) return false;
    const waiting = (size === this.countedAt ? this.pendingN : this.pending(size)) + (this.retryPending ? 1 : 0);
    const count = length + FRAGMENT_HEADER_BYTES <= size ? 1 : fragmentCount(length, size);
    if (waiting !== 0 && waiting + count > this.capacityNotifications) return false;
    if (length > frame.length) throw new RangeError('NotifyQueue.push: length beyond the frame');
    this.all.set(length === frame.length ? frame : frame.subarray(0, length), at);
    const m = this.maxFrames;
    let slot = this.first + this.frames;
    if (slot >= m) slot -= m;
    const cols = this.cols;
    cols[slot] = length;
    cols[m + slot] = expendable ? at | EXPENDABLE : at;
    this.times[slot] = now;
    if (this.frames === 0) {
      this.head = at;
      this.sent = 0;
    }
    this.frames++;
    this.held++;
    this.vacant = false;
    this.tail = at + length;
    this.used += length;
    this.pendingN += count;
    if (this.frames === 1) this.frontQueuedAt = expendable ? now : Infinity;
    this.refill();
    return true;
  }

  /** The 12-byte ESTOP frame, ahead of every queued frame (§10.4, §11.2). */
  pushAhead(frame: Uint8Array): void {
    const a = this.ahead;
    a.write(NO_HEADER, 0, frame);
    this.held = this.frames + a.count;
    this.vacant = false;
    this.estops = a.written;
    this.estopsDropped = a.dropped;
  }

  /**
   * Puts the next notification into `out` and returns its length; 0 when one is in flight or
   * nothing waits. A failed one is handed out again, unchanged, before anything else.
   */
  next(size: number): number {
    if (this.retryPending) {
      this.retryPending = false;
      this.inFlight = true;
      this.refill();
      // The notification's bytes are still in `out` (release() kept them): exact again.
      this.fit(this.flight);
      return this.flight;
    }
    if (this.inFlight) return 0;
    const all = this.all;
    const o = this.outAt;
    if (this.held > this.frames) {
      // An ESTOP frame waits ahead (`held` counts them with the frames).
      const a = this.ahead;
      const c = (this.counter + 1) & FRAGMENT_COUNTER_MASK;
      this.counter = c;
      this.fit(ESTOP_NOTIFICATION_BYTES);
      all[o] = ONLY_HEADER | c;
      const from = a.frontOffset();
      all.copyWithin(o + FRAGMENT_HEADER_BYTES, from, from + ESTOP_FRAME_BYTES);
      a.shift();
      this.held--;
      this.framesStarted++;
      return this.handOut(ESTOP_NOTIFICATION_BYTES, ESTOP_FRAME_BYTES);
    }
    if (this.frames === 0) return 0;
    if (size !== this.countedAt) this.pending(size);
    const len = this.cols[this.first] as number;
    const sent = this.sent;
    let c = this.headCounter;
    if (sent === 0) {
      c = (this.counter + 1) & FRAGMENT_COUNTER_MASK;
      this.counter = c;
      this.headCounter = c;
      this.framesStarted++;
    }
    // The fragment's header (bindings/ble/fragment.ts writeFragment's layout), then its payload.
    const left = len - sent;
    let h = FRAGMENT_HEADER_BYTES;
    let n: number;
    let head: number;
    if (left + FRAGMENT_HEADER_BYTES <= size) {
      n = left;
      head = (sent === 0 ? ONLY_HEADER : LAST_HEADER) | c;
    } else if (sent === 0) {
      h = FRAGMENT_HEADER_BYTES + FRAGMENT_LENGTH_BYTES;
      n = size - h;
      head = FIRST_HEADER | c;
    } else {
      n = size - h;
      head = MIDDLE_HEADER | c;
    }
    const length = h + n;
    if (length !== this.outLength) {
      this.rab.resize(o + length);
      this.outLength = length;
    }
    all[o] = head;
    if (h !== FRAGMENT_HEADER_BYTES) {
      all[o + 1] = (len >>> 8) & 0xff;
      all[o + 2] = len & 0xff;
    }
    const from = this.head + sent;
    all.copyWithin(o + h, from, from + n);
    this.pendingN--;
    if (sent + n >= len) this.shiftFrame();
    else {
      this.sent = sent + n;
      this.frontQueuedAt = Infinity;
    }
    // No frame left (and none to retry, with nothing in flight): nothing waits.
    if (this.frames === 0) this.fill = 0;
    else this.refill();
    this.flight = length;
    this.flightCarried = n;
    this.inFlight = true;
    this.vacant = false;
    return length;
  }

  /**
   * `next`, the transport's notify and `release` in one: returns the notification's length, 0
   * when none was handed out, or minus its length when the transport threw (the notification is
   * in flight then: the caller fails it).
   */
  notifyNext(size: number, transport: { notify(value: Uint8Array, length: number): void }): number {
    const n = this.next(size);
    if (n === 0) return 0;
    let ok = true;
    try {
      transport.notify(this.out, n);
    } catch {
      ok = false;
    }
    if (this.outLength !== FRAGMENT_MAX_BYTES) {
      this.rab.resize(this.outAt + FRAGMENT_MAX_BYTES);
      this.outLength = FRAGMENT_MAX_BYTES;
    }
    return ok ? n : -n;
  }

  /**
   * The transport finished the notification in flight: ok, or failed (it will be handed out
   * again). Returns the frame bytes it carried when ok, else 0.
   */
  done(ok: boolean): number {
    if (!ok) {
      if (!this.inFlight) return 0;
      this.inFlight = false;
      this.retryPending = true;
      this.failures++;
      this.refill();
      return 0;
    }
    return this.complete();
  }

  /**
   * done(true): the notification in flight was sent. Returns the frame bytes it carried.
   * (BleLink.notified does the same inline.)
   */
  complete(): number {
    if (!this.inFlight) return 0;
    this.inFlight = false;
    this.vacant = this.held === 0;
    this.completed++;
    return this.flightCarried;
  }

  /**
   * Whether `expire` would drop a frame now: the front one is expendable, none of its fragments
   * has gone, and it was queued more than `budgetMs` before `now`.
   */
  stale(now: number, budgetMs: number): boolean {
    return now - this.frontQueuedAt > budgetMs;
  }

  /**
   * Drops the expendable frames at the front, none of whose fragments has gone, queued more than
   * `budgetMs` before `now`; stops at the first frame that is not one. Returns how many.
   */
  expire(now: number, budgetMs: number, size: number): number {
    let dropped = 0;
    while (this.stale(now, budgetMs)) {
      this.pending(size);
      this.pendingN -= fragmentCount(this.cols[this.first] as number, size);
      this.shiftFrame();
      dropped++;
    }
    if (dropped > 0) {
      this.expired += dropped;
      this.vacant = this.held === 0 && !this.inFlight && !this.retryPending;
      this.refill();
    }
    return dropped;
  }

  /** Empties everything, the notification in flight and the ESTOP frames ahead included. */
  clear(): void {
    if (this.inFlight) this.clearedInFlight++;
    this.first = 0;
    this.frames = 0;
    this.held = 0;
    this.head = 0;
    this.tail = 0;
    this.used = 0;
    this.sent = 0;
    this.pendingN = 0;
    this.ahead.clear();
    this.flight = 0;
    this.flightCarried = 0;
    this.inFlight = false;
    this.retryPending = false;
    this.vacant = true;
    this.fill = 0;
    this.frontQueuedAt = Infinity;
  }

  /**
   * The stack has copied the notification: the buffer is made whole again, its bytes kept (a
   * retry fits it again). A resizable buffer stays shrunk only while its view is handed on,
   * never while the engine may compact its heap (hub/bytes.ts).
   */
  release(): void {
    if (this.outLength !== FRAGMENT_MAX_BYTES) this.fit(FRAGMENT_MAX_BYTES);
  }

  // `out` becomes `length` bytes long (the notification area is written after this).
  private fit(length: number): void {
    if (length !== this.outLength) {
      this.rab.resize(this.outAt + length);
      this.outLength = length;
    }
  }

  // fill = ratio(countedAt): notifications waiting ÷ capacity, or bytes ÷ storage when that is higher.
  private refill(): void {
    const byNotifications = (this.pendingN + (this.retryPending ? 1 : 0)) / this.capacityNotifications;
    const byBytes = (this.used - this.sent) / this.capacityBytes;
    this.fill = byNotifications > byBytes ? byNotifications : byBytes;
  }

  private handOut(length: number, carried: number): number {
    this.flight = length;
    this.flightCarried = carried;
    this.inFlight = true;
    this.vacant = false;
    return length;
  }

  /** Notifications left for the queued frames, recounted when the fragment size changed. */
  private pending(size: number): number {
    if (size !== this.countedAt) {
      let sum = 0;
      let slot = this.first;
      for (let i = 0; i < this.frames; i++) {
        const len = this.cols[slot] as number;
        sum += i === 0 ? fragmentsLeft(len, this.sent, size) : fragmentCount(len, size);
        slot = slot + 1 === this.maxFrames ? 0 : slot + 1;
      }
      this.pendingN = sum;
      this.countedAt = size;
      this.refill();
    }
    return this.pendingN;
  }

  private shiftFrame(): void {
    this.used -= this.cols[this.first] as number;
    this.sent = 0;
    this.frames--;
    this.held--;
    this.first = this.first + 1 === this.maxFrames ? 0 : this.first + 1;
    if (this.frames === 0) {
      this.head = 0;
      this.tail = 0;
      this.frontQueuedAt = Infinity;
    } else {
      const col = this.cols[this.maxFrames + this.first] as number;
      this.head = col & START_MASK;
      this.frontQueuedAt = col >= EXPENDABLE ? (this.times[this.first] as number) : Infinity;
    }
  }

  // Where a frame of `length` bytes would start, or -1 (the same placement as hub/queues.ts
  // FrameRing: after the tail, else before the head; an empty queue starts at 0).
  private placeFor(length: number): number {
    if (this.frames === this.maxFrames) return -1;
    if (this.frames === 0) return length <= this.capacityBytes ? 0 : -1;
    if (this.head < this.tail) {
      if (length <= this.capacityBytes - this.tail) return this.tail;
      return length <= this.head ? 0 : -1;
    }
    return length <= this.head - this.tail ? this.tail : -1;
  }
}
