// The ESTOP latch and the control-owner deadman (§11, §11.2; §10.4 last paragraph).
// The latch knows sources, not sessions: who may clear (the control owner at operator tier)
// is the hub's rule. It does not depend on any subscriber observing it, and it survives a
// hub restart through the Store.

import { DEADMAN_MS } from './constants.js';
import { ESTOP_FLAG_LATCHED, EstopKind, EstopSource, encodeEstop } from './estop-frame.js';
import { Nack } from './nack.js';
import type { Clock, Store } from './ports.js';

/** The part of the RobotPort the latch drives. */
export interface EstopRobot {
  stop(source: number): void;
  release(): void;
}

// NVS keys are at most 15 characters.
export const ESTOP_STORE_KEY = 'estop';

// The persisted record, big-endian:
//   0      version (1)
//   1      flags: bit 0 latched
//   2      source of the last assertion
//   3..6   origin of the last assertion (uint32; 0 = the hub itself)
//   7..8   that origin's ESTOP sequence
//   9..10  the hub's ESTOP sequence (`seq`) at that transition
export const ESTOP_RECORD_VERSION = 1;
export const ESTOP_RECORD_BYTES = 11;

// Recent (origin, seq) pairs remembered within one latch episode to count duplicates once.
export const ESTOP_DEDUP_PAIRS = 16;

// Holding sources live in a 32-bit mask.
const MAX_HOLD_SOURCE = 31;

/**
 * §11 latch. Any assertion latches; the robot is told to stop before anything else is
 * done (persisting included), and again on every assertion, duplicates too: the latch never
 * relies on the robot having acted on an earlier call.
 *
 * Duplicates (same origin and sequence) count once while the latch is held: `assert`
 * returns false for them, so the hub announces and counts each ESTOP once. A clear forgets
 * them: after a clear every assertion latches again, even a late retransmission, because
 * an origin's sequence may legitimately repeat (a session id reused by a later client) and
 * a real ESTOP must never be taken for an old one. A spurious re-latch is the safe failure.
 *
 * Holding sources (`setSourceAsserting`) do not latch by themselves: the hub asserts on the
 * edge (button pressed, deadman expired) and holds the source for as long as it asserts; a
 * hold only keeps the latch from being cleared.
 *
 * `seq`, the hub's ESTOP sequence (uint16), advances by one per announcement: every new
 * assertion and every clear.
 *
 * Persisting: on latching and on clearing. Further assertions while already latched change
 * only the in-memory last source and `seq`, so that a flood of distinct ESTOP frames cannot
 * wear out the device's flash; a restored latch comes back with the assertion that set it,
 * and `seq` resumes from the value stored at the last transition.
 *
 * A stored record that cannot be read restores as latched with source WATCHDOG: not knowing
 * whether the robot was stopped is handled as if it was; an operator clears it as usual.
 */
export class EstopLatch {
  private isLatched = false;
  private src: number = EstopSource.CLIENT;
  private org = 0;
  private orgSeq = 0;
  private hubSeq = 0;
  private holding = 0; // bit per source that still asserts
  private since = 0;
  private storeErrors = 0;
  // Both in one buffer (on XS a buffer costs heap slots of its own).
  private readonly seenOrigin: Uint32Array;
  private readonly seenSeq: Uint16Array;
  private seenCount = 0;
  private seenNext = 0;

  constructor(
    private readonly store: Store,
    private readonly robot: EstopRobot,
    private readonly clock: Clock,
  ) {
    const seen = new ArrayBuffer(ESTOP_DEDUP_PAIRS * 6);
    this.seenOrigin = new Uint32Array(seen, 0, ESTOP_DEDUP_PAIRS);
    this.seenSeq = new Uint16Array(seen, ESTOP_DEDUP_PAIRS * 4, ESTOP_DEDUP_PAIRS);
    let rec: Uint8Array | undefined;
    try {
      rec = store.get(ESTOP_STORE_KEY);
    } catch {
      this.storeErrors++;
      rec = undefined;
    }
    if (rec === undefined) return;
    if (rec.length === ESTOP_RECORD_BYTES && rec[0] === ESTOP_RECORD_VERSION) {
      this.isLatched = ((rec[1] as number) & 1) === 1;
      this.src = rec[2] as number;
      this.org = (((rec[3] as number) << 24) | ((rec[4] as number) << 16) | ((rec[5] as number) << 8) | (rec[6] as number)) >>> 0;
      this.orgSeq = ((rec[7] as number) << 8) | (rec[8] as number);
      this.hubSeq = ((rec[9] as number) << 8) | (rec[10] as number);
    } else {
      this.isLatched = true;
      this.src = EstopSource.WATCHDOG;
      this.org = 0;
      this.orgSeq = 0;
    }
    if (this.isLatched) {
      this.since = clock.now();
      this.robot.stop(this.src);
    }
  }

  get latched(): boolean {
    return this.isLatched;
  }

  /** Source of the last new assertion. */
  get source(): number {
    return this.src;
  }

  /** Origin of the last new assertion (0: the hub itself). */
  get origin(): number {
    return this.org;
  }

  /** That origin's ESTOP sequence. */
  get originSeq(): number {
    return this.orgSeq;
  }

  /** The hub's ESTOP sequence (uint16): one step per announcement (new assertion or clear). */
  get seq(): number {
    return this.hubSeq;
  }

  /** Clock time at which the current latch was set (or restored); meaningless when clear. */
  get latchedAt(): number {
    return this.since;
  }

  /** Bit mask of the sources that still assert (bit = source code). */
  get assertingSources(): number {
    return this.holding;
  }

  /** Store reads or writes that threw (for health); the latch itself carried on. */
  get persistErrors(): number {
    return this.storeErrors;
  }

  /**
   * An ESTOP assertion: from a frame (origin, seq as received) or from the hub itself (its
   * button, the deadman, the watchdog, the robot: the hub picks origin and a fresh seq).
   * Latches, stops the robot, and returns true when it is new (announce and count it),
   * false for a duplicate.
   */
  assert(source: number, origin: number, seq: number): boolean {
    const o = origin >>> 0;
    const s = seq & 0xffff;
    const was = this.isLatched;
    this.isLatched = true;
    this.robot.stop(source);
    if (was && this.seen(o, s)) return false;
    this.remember(o, s);
    this.src = source;
    this.org = o;
    this.orgSeq = s;
    this.hubSeq = (this.hubSeq + 1) & 0xffff;
    if (!was) {
      this.since = this.clock.now();
      this.persist();
    }
    return true;
  }

  /**
   * A source that holds (the hub's button held down, the deadman while the owner is silent,
   * the robot's own safety chain). While any source asserts, the latch cannot be cleared.
   * Holding does not latch: the hub calls `assert` on the edge.
   */
  setSourceAsserting(source: number, asserting: boolean): void {
    if (!Number.isInteger(source) || source < 0 || source > MAX_HOLD_SOURCE) throw new RangeError('ESTOP source out of range');
    const bit = (1 << source) >>> 0;
    this.holding = (asserting ? this.holding | bit : this.holding & ~bit) >>> 0;
  }

  isAsserting(source: number): boolean {
    return source >= 0 && source <= MAX_HOLD_SOURCE && (this.holding & ((1 << source) >>> 0)) !== 0;
  }

  /**
   * 0 when a clear would be accepted (or there is nothing to clear: `clear` then returns
   * false and nothing is announced); Nack.ESTOP_LATCHED while a source still asserts.
   */
  canClear(): number {
    if (this.isLatched && this.holding !== 0) return Nack.ESTOP_LATCHED;
    return 0;
  }

  /**
   * Clears the latch when it is set and nothing asserts; true when it did (announce it).
   * The robot is released before the record is written: a failure in between leaves the
   * stored latch set, which restores as stopped, the safe side.
   */
  clear(): boolean {
    if (!this.isLatched || this.holding !== 0) return false;
    this.isLatched = false;
    this.hubSeq = (this.hubSeq + 1) & 0xffff;
    this.seenCount = 0;
    this.seenNext = 0;
    this.robot.release();
    this.persist();
    return true;
  }

  /**
   * Writes the 12-byte frame that announces the current state at `offset` and returns the
   * offset past it: ASSERT relaying the last new assertion's source, origin and that
   * origin's sequence while latched; CLEARED from the hub itself (origin 0, `seq`) otherwise.
   */
  encode(into: Uint8Array, offset: number): number {
    if (this.isLatched) return encodeEstop(into, offset, EstopKind.ASSERT, this.src, ESTOP_FLAG_LATCHED, this.org, this.orgSeq);
    return encodeEstop(into, offset, EstopKind.CLEARED, EstopSource.CLIENT, 0, 0, this.hubSeq);
  }

  private seen(origin: number, seq: number): boolean {
    for (let i = 0; i < this.seenCount; i++) {
      if (this.seenOrigin[i] === origin && this.seenSeq[i] === seq) return true;
    }
    return false;
  }

  private remember(origin: number, seq: number): void {
    const i = this.seenNext;
    this.seenOrigin[i] = origin;
    this.seenSeq[i] = seq;
    this.seenNext = i + 1 === ESTOP_DEDUP_PAIRS ? 0 : i + 1;
    if (this.seenCount < ESTOP_DEDUP_PAIRS) this.seenCount++;
  }

  // A fresh record each time: Store.set may keep the array it is given, and this runs only
  // on transitions, never per frame.
  private persist(): void {
    const rec = new Uint8Array(ESTOP_RECORD_BYTES);
    rec[0] = ESTOP_RECORD_VERSION;
    rec[1] = this.isLatched ? 1 : 0;
    rec[2] = this.src & 0xff;
    rec[3] = (this.org >>> 24) & 0xff;
    rec[4] = (this.org >>> 16) & 0xff;
    rec[5] = (this.org >>> 8) & 0xff;
    rec[6] = this.org & 0xff;
    rec[7] = (this.orgSeq >>> 8) & 0xff;
    rec[8] = this.orgSeq & 0xff;
    rec[9] = (this.hubSeq >>> 8) & 0xff;
    rec[10] = this.hubSeq & 0xff;
    try {
      this.store.set(ESTOP_STORE_KEY, rec);
    } catch {
      this.storeErrors++;
    }
  }
}

/**
 * §11: the control owner must be heard from within `timeoutMs` (default DEADMAN_MS =
 * 500). "Within" includes the edge: heard at t, a frame at exactly t + timeoutMs is still in
 * time, so `expired` is true only when now − lastHeard > timeoutMs (at 500 ms not, at
 * 501 ms yes, on an integer clock). The hub arms it when a control owner exists, feeds it
 * every frame from that owner; on expiry it asserts the latch once with source DEADMAN and
 * holds that source while the owner stays silent.
 */
export class Deadman {
  private on = false;
  private last = 0;

  constructor(readonly timeoutMs: number = DEADMAN_MS) {}

  /** A control owner exists (or changed): the owner counts as heard now. */
  arm(now: number): void {
    this.on = true;
    this.last = now;
  }

  /** A frame from the control owner. Ignored while disarmed. */
  heard(now: number): void {
    if (this.on && now > this.last) this.last = now;
  }

  /** No control owner. */
  disarm(): void {
    this.on = false;
  }

  get armed(): boolean {
    return this.on;
  }

  expired(now: number): boolean {
    return this.on && now - this.last > this.timeoutMs;
  }

  /** The last instant that still counts as heard in time; Infinity while disarmed (for timers). */
  deadline(): number {
    return this.on ? this.last + this.timeoutMs : Infinity;
  }
}
