// §10.3 congestion detectors, one per binding signal (the §13.1 matrix; docs/_congestion.md has
// the whole state machine, its table and diagram). Each binding owns one detector per link and
// answers `Link.level()` from it. Every signal drives the same hysteresis machine; only the way a
// signal is measured differs:
//
//   WatermarkDetector  TCP and WebSocket egress queue (bytes queued ÷ capacity) plus ack lag;
//                      BLE notification queue (depth ÷ capacity), without ack lag; the ESP-NOW
//                      egress queues. The occupancy it judges is the backlog the link carries:
//                      what the link finds queued each time it takes from the queue (`drained`).
//   LossDetector       ESP-NOW loss rate from the peer's ACK bitmask and the radio's send status.
//
// Platform-free: time comes in as `now` (monotonic ms) on every call. Nothing is allocated after
// construction: state lives in fields and typed arrays sized at setup.

import {
  CONGESTED_LOSS,
  CONGESTED_WATERMARK,
  CONGESTION_WINDOW_MS,
  LEVEL_CLEAR,
  LEVEL_CONGESTED,
  LEVEL_SEVERE,
  RECOVERED_LOSS,
  RECOVERED_WATERMARK,
  RECOVERY_WINDOW_MS,
} from '../hub/constants.js';
import { ownValue } from './link.js';

// ---------------------------------------------------------------------------------------------
// Our decisions where §10.3 is silent: level 2 ("severe") and the way back from it.

/** Level 2 when the queue watermark stays above this ... */
export const SEVERE_WATERMARK = 0.9;
/** ... or the loss rate stays above this ... */
export const SEVERE_LOSS = 0.3;
/** ... for this long (the same 1 s as level 1). */
export const SEVERE_WINDOW_MS = CONGESTION_WINDOW_MS;
/**
 * A saturated signal (queue full: ratio ≥ 1; every datagram resolved in the loss window lost)
 * reaches level 2 after this long instead: a full queue is already refusing frames.
 */
export const SATURATED_WINDOW_MS = 500;
/** The signal value at and above which it counts as saturated. */
export const SATURATED_SIGNAL = 1;
/**
 * How long samples dropped stale hold a watermark signal full, ms (WatermarkDetector.stale): a
 * quarter of the 1 s congestion window, so that a link dropping samples at least that often
 * reads saturated throughout, and one that stops reads its queue again soon after.
 */
export const STALE_HOLD_MS = 250;
/** Level 2 falls back to 1 once the signal stays below the level-1 threshold this long. */
export const RELIEF_WINDOW_MS = CONGESTION_WINDOW_MS;

// ---------------------------------------------------------------------------------------------
// The shared hysteresis machine.

/** What a signal satisfies right now; a detector ORs these together and steps the machine. */
export const Condition = Object.freeze({
  /** Above the level-1 threshold (> 50 % / > 10 %): the 0 → 1 window runs. */
  ABOVE_CONGESTED: 1,
  /** Below the recovery threshold (< 20 % / < 2 %): the → 0 window runs. */
  BELOW_RECOVERED: 2,
  /** Above the level-2 threshold (> 90 % / > 30 %): the → 2 window runs. */
  ABOVE_SEVERE: 4,
  /** Below the level-1 threshold (< 50 % / < 10 %): the 2 → 1 window runs. */
  BELOW_CONGESTED: 8,
  /** At saturation (≥ 100 %): the short → 2 window runs. */
  SATURATED: 16,
} as const);

// The Condition bits as plain numbers, for the machine's step.
const ABOVE_CONGESTED = Condition.ABOVE_CONGESTED;
const BELOW_RECOVERED = Condition.BELOW_RECOVERED;
const ABOVE_SEVERE = Condition.ABOVE_SEVERE;
const BELOW_CONGESTED = Condition.BELOW_CONGESTED;
const SATURATED = Condition.SATURATED;

/** The thresholds one signal is judged against (strictly above / strictly below). */
export interface Thresholds {
  readonly congested: number;
  readonly recovered: number;
  readonly severe: number;
}

export const WATERMARK_THRESHOLDS: Thresholds = Object.freeze({
  congested: CONGESTED_WATERMARK,
  recovered: RECOVERED_WATERMARK,
  severe: SEVERE_WATERMARK,
});

export const LOSS_THRESHOLDS: Thresholds = Object.freeze({
  congested: CONGESTED_LOSS,
  recovered: RECOVERED_LOSS,
  severe: SEVERE_LOSS,
});

/**
 * The Condition bits one signal value satisfies. "Above" and "below" are strict: a value exactly
 * at a threshold is neither, so it holds the level and breaks the runs that need it. NaN
 * satisfies nothing: it holds the level and restarts every window.
 */
export function classify(signal: number, t: Thresholds): number {
  let c = 0;
  if (signal > t.congested) c |= Condition.ABOVE_CONGESTED;
  if (signal < t.congested) c |= Condition.BELOW_CONGESTED;
  if (signal < t.recovered) c |= Condition.BELOW_RECOVERED;
  if (signal > t.severe) c |= Condition.ABOVE_SEVERE;
  if (signal >= SATURATED_SIGNAL) c |= Condition.SATURATED;
  return c;
}

/**
 * §10.3 levels with hysteresis, judged on time. The signal is taken to hold its sampled value
 * until the next sample (a queue ratio changes only when the queue does), so a condition has
 * held "continuously for W" when every sample since the first one that met it met it too and at
 * least W ms have passed since that first one. One sample that misses restarts the window.
 * Several samples at the same instant are one sample for the windows: only the last of them can
 * break a run (a burst of sends and the ACK that follows at the same millisecond is one
 * observation, not a dip and a rise). A level reached at an instant stands, though: its condition
 * held for the whole window up to that instant.
 *
 *   0 or 1 → 2   ABOVE_SEVERE held ≥ SEVERE_WINDOW_MS, or SATURATED held ≥ SATURATED_WINDOW_MS
 *   0 → 1        ABOVE_CONGESTED held ≥ CONGESTION_WINDOW_MS
 *   2 → 1        BELOW_CONGESTED held ≥ RELIEF_WINDOW_MS
 *   1 or 2 → 0   BELOW_RECOVERED held ≥ RECOVERY_WINDOW_MS
 *   otherwise    the level holds
 *
 * Each run is timed from when its condition began, whatever the level was then: a signal that
 * drops from severe to nothing is at 1 after 1 s and at 0 after 5 s, not 6 s.
 *
 * Every detector is one: it measures its signal and steps the machine with what the signal meets.
 */
export abstract class LevelMachine {
  /** The level, as of the last step. */
  protected lvl: number = LEVEL_CLEAR;
  private began: number;
  // The latest time seen (clamp; the watermark's fast paths read it themselves).
  protected last: number;
  // When each condition's run began as the runs stood before the instant `at` (NaN: not going
  // then), which every sample at `at` starts again from. The runs the last step left follow from
  // these and its conditions (`stepped`): a run it met goes on from its start before `at`, or
  // began at `at`; a run it missed is not going. Plain numbers, a slot each and no array.
  private at = NaN;
  private aboveCongested = NaN;
  private belowRecovered = NaN;
  private aboveSevere = NaN;
  private belowCongested = NaN;
  private saturated = NaN;
  // The conditions of the last step, and when a window of them can next close (Infinity: none
  // can).
  protected stepped = -1;
  protected nextAt = -Infinity;

  constructor(now: number) {
    this.began = now;
    this.last = now;
  }

  /** `now`, never earlier than a time already seen (the level's start never moves back). */
  protected clamp(now: number): number {
    if (now > this.last) this.last = now;
    return this.last;
  }

  /**
   * One sample: the Condition bits the signal meets at `now`. Returns the level. A sample that
   * meets the conditions of the last one, before any window of them can close (`nextAt`),
   * changes nothing and returns at once: a link judges its level at every instant it is asked,
   * and almost every one of those finds nothing new.
   */
  protected step(conditions: number, now: number): number {
    if (conditions === this.stepped && now < this.nextAt && now >= this.last) {
      this.last = now;
      return this.lvl;
    }
    const t = this.clamp(now);
    let r: number;
    if (t !== this.at) {
      // A new instant: the runs the last step left are where every sample at `t` starts from.
      const at = this.at;
      const c = this.stepped;
      r = this.aboveCongested;
      this.aboveCongested = c & ABOVE_CONGESTED ? (r === r ? r : at) : NaN;
      r = this.belowRecovered;
      this.belowRecovered = c & BELOW_RECOVERED ? (r === r ? r : at) : NaN;
      r = this.aboveSevere;
      this.aboveSevere = c & ABOVE_SEVERE ? (r === r ? r : at) : NaN;
      r = this.belowCongested;
      this.belowCongested = c & BELOW_CONGESTED ? (r === r ? r : at) : NaN;
      r = this.saturated;
      this.saturated = c & SATURATED ? (r === r ? r : at) : NaN;
      this.at = t;
    }
    // The runs this sample leaves: going on from before `t`, begun at `t`, or NaN (not going).
    r = this.aboveCongested;
    const aboveCongested = conditions & ABOVE_CONGESTED ? (r === r ? r : t) : NaN;
    r = this.belowRecovered;
    const belowRecovered = conditions & BELOW_RECOVERED ? (r === r ? r : t) : NaN;
    r = this.aboveSevere;
    const aboveSevere = conditions & ABOVE_SEVERE ? (r === r ? r : t) : NaN;
    r = this.belowCongested;
    const belowCongested = conditions & BELOW_CONGESTED ? (r === r ? r : t) : NaN;
    r = this.saturated;
    const saturated = conditions & SATURATED ? (r === r ? r : t) : NaN;
    // A run that is not going reads NaN here, and NaN ≥ w is false.
    let next = this.lvl;
    if (next < LEVEL_SEVERE && (t - aboveSevere >= SEVERE_WINDOW_MS || t - saturated >= SATURATED_WINDOW_MS)) {
      next = LEVEL_SEVERE;
    } else if (next < LEVEL_CONGESTED && t - aboveCongested >= CONGESTION_WINDOW_MS) {
      next = LEVEL_CONGESTED;
    }
    if (next === LEVEL_SEVERE && t - belowCongested >= RELIEF_WINDOW_MS) next = LEVEL_CONGESTED;
    if (next === LEVEL_CONGESTED && t - belowRecovered >= RECOVERY_WINDOW_MS) next = LEVEL_CLEAR;
    if (next !== this.lvl) {
      this.lvl = next;
      this.began = t;
    }
    this.stepped = conditions;
    // The earliest instant a window of the runs going closes at `next` (Infinity: none can), each
    // only where its transition is possible from `next`. A run that is not going is NaN, and
    // NaN < at is false: it is left out.
    let at = Infinity;
    if (next < LEVEL_SEVERE) {
      r = aboveSevere + SEVERE_WINDOW_MS;
      if (r < at) at = r;
      r = saturated + SATURATED_WINDOW_MS;
      if (r < at) at = r;
      if (next < LEVEL_CONGESTED) {
        r = aboveCongested + CONGESTION_WINDOW_MS;
        if (r < at) at = r;
      }
    }
    if (next === LEVEL_SEVERE) {
      r = belowCongested + RELIEF_WINDOW_MS;
      if (r < at) at = r;
    }
    if (next >= LEVEL_CONGESTED) {
      r = belowRecovered + RECOVERY_WINDOW_MS;
      if (r < at) at = r;
    }
    this.nextAt = at;
    return next;
  }

  level(): number {
    return this.lvl;
  }

  /** When the current level began (the core times "sustained > 5 s" from it, §10.3). */
  since(): number {
    return this.began;
  }

  /** Level 0 from `now`, every window restarted (a new transport on this link). */
  reset(now: number): void {
    this.lvl = LEVEL_CLEAR;
    this.began = now;
    this.last = now;
    this.at = NaN;
    this.aboveCongested = this.belowRecovered = this.aboveSevere = this.belowCongested = this.saturated = NaN;
    this.stepped = -1;
    this.nextAt = -Infinity;
  }
}

/** What every binding's detector offers the binding (which answers Link.level() from it). */
export interface CongestionDetector {
  /** 0 clear, 1 congested, 2 severe (§10.3), as of the last call. */
  level(): number;
  /** The current signal, 0..1 (queue watermark or loss rate), for health. */
  ratio(): number;
  /** When the current level began. */
  since(): number;
  /** Re-judges the windows at `now` without new input; call at least every hub tick. */
  tick(now: number): void;
  /** Level 0 from `now`, all history forgotten. */
  reset(now: number): void;
}

// ---------------------------------------------------------------------------------------------
// Queue watermark (TCP, WebSocket, BLE).

/**
 * Ack lag (hub→client frames sent but not yet covered by the client's cumulative ACK) above this
 * counts as congestion like a watermark above 50 %. The hub's own egress queue fills only once
 * the socket refuses writes; a client that reads or acks slowly behind a large kernel send
 * buffer shows lag first. 64 frames is more than a healthy client ever has in flight (a 200
 * frames/s session with a 20 ms RTT acking every 100 ms lags about 24), more than fits in an
 * lwIP send buffer on the device (4 × 1436 bytes at ≥ 80-byte DATA frames), and the depth of the
 * never-shed ring at the hub's default size (hub/session.ts neverShedFrames; 32 on the device): a
 * client that far behind for a whole second is congested.
 */
export const ACK_LAG_CONGESTED_FRAMES = 64;
/**
 * Ack lag must also stay below this for the link to recover. A client acks after every 32 frames
 * (docs/protocol.md §13.2), so a healthy lag swings between the frames in flight and 32 more than
 * that. The congested test sees the bottom of the swing (above 64 at every sample for 1 s), the
 * recovery test its top (below 48 at every sample for 5 s): a client with up to 15 frames in
 * flight (200 frames/s at a 75 ms RTT) recovers.
 */
export const ACK_LAG_RECOVERED_FRAMES = 48;

export interface WatermarkOptions {
  /** Ack lag above this is congestion (default ACK_LAG_CONGESTED_FRAMES). */
  readonly ackLagCongestedFrames?: number;
  /** Ack lag must be below this to recover (default ACK_LAG_RECOVERED_FRAMES). */
  readonly ackLagRecoveredFrames?: number;
}

/**
 * §10.3 queue-watermark detector. A link feeds it the backlog it carries (docs/protocol.md
 * §13.5.1): `queued` whenever frames join the queue, `drained` whenever the link takes from it
 * (a notification handed to the stack, bytes handed to a socket, a datagram packed), and `tick`
 * at least every hub tick. TCP and WebSocket also feed `ackLag` whenever a cumulative ACK arrives
 * or a frame is sent. Ack lag can raise and hold level 1; level 2 is the queue's alone (severe
 * means the hub's own queue is nearly full), so lag neither raises it nor holds it.
 *
 * Why not the occupancy right after each take: a link drains in quanta (a connection event's
 * notifications, a TCP segment, a datagram), so a queue the core refills between takes reads its
 * trough at every take: 12 of 16 after a BLE event of four, 76 % of a 6 KiB queue after one
 * 1460-byte segment. Judged there, a link that never catches up would never read severe.
 */
export class WatermarkDetector extends LevelMachine implements CongestionDetector {
  // The ack lag thresholds: the prototype's defaults unless given otherwise (an own property each
  // only then: on XS every property costs a heap slot).
  private declare readonly lagCongested: number;
  private declare readonly lagRecovered: number;
  /** @internal The queue signal (`signalled` reads whether it is above 0; a link's send path reads it directly). */
  queue = 0;
  /** The last ack lag reported, in frames. */
  lagFrames = 0;
  // The instant of the last take: takes at one instant are one transmission opportunity.
  private takenAt = NaN;
  // The queue turned a frame away since the last take.
  private turnedAway = false;
  // Until when samples dropped stale hold the signal full (`stale`), and the last judgement.
  private staleUntil = -Infinity;
  private judgedAt = -Infinity;

  constructor(now: number, options?: WatermarkOptions) {
    super(now);
    const congested = options?.ackLagCongestedFrames ?? ACK_LAG_CONGESTED_FRAMES;
    const recovered = options?.ackLagRecoveredFrames ?? ACK_LAG_RECOVERED_FRAMES;
    if (congested !== ACK_LAG_CONGESTED_FRAMES) ownValue(this, 'lagCongested', congested);
    if (recovered !== ACK_LAG_RECOVERED_FRAMES) ownValue(this, 'lagRecovered', recovered);
  }

  /**
   * The signal itself, as it stands at `now` (bytes or notifications ÷ capacity; ≥ 1 is full),
   * for a signal that is not a drained queue. Links feed `queued` and `drained` instead.
   */
  sample(ratio: number, now: number): void {
    this.queue = ratio;
    this.judge(now);
  }

  /**
   * Frames joined the queue: its occupancy is `ratio` at `now`. The signal rises to it; it never
   * falls here, because what the last take left behind is judged at the next take. Returns the
   * level.
   */
  queued(ratio: number, now: number): number {
    const old = this.queue;
    if (ratio > old || ratio !== ratio) this.queue = ratio;
    const q = this.queue;
    // Below the recovery threshold before and after, the signal meets the conditions of the last
    // judgement (unheld) before any of its windows can close: judging changes nothing (`now` not
    // before the latest time seen: clamp would leave it as it is). The ESP-NOW link tests this
    // inline and leaves out the call (bindings/espnow/link.ts EspNowLink.send and the binding's
    // direct send and pump; it never calls `stale`): a change here changes it there too.
    if (q < RECOVERED_WATERMARK && q >= 0 && old < RECOVERED_WATERMARK && old >= 0 && now < this.quietUntil && now >= this.judgedAt && this.judgedAt >= this.staleUntil && now >= this.last) {
      this.last = now;
      this.judgedAt = now;
      this.judgements++;
      return this.lvl;
    }
    this.judge(now);
    return this.lvl;
  }

  /**
   * The link took from its queue at `now` (a transmission opportunity): it found `before` and
   * left `after`. The signal is `before`, the backlog the link found waiting, until the next take;
   * several takes at one instant are one opportunity and keep the highest. A take that empties
   * the queue leaves no backlog: the signal is 0. Returns the level.
   */
  drained(before: number, after: number, now: number): number {
    // clamp, inline.
    if (now > this.last) this.last = now;
    const t = this.last;
    const found = this.turnedAway && before < SATURATED_SIGNAL ? SATURATED_SIGNAL : before;
    this.turnedAway = false;
    const old = this.queue;
    if (!(after > 0)) this.queue = 0;
    else if (t !== this.takenAt || found > old) this.queue = found;
    this.takenAt = t;
    const q = this.queue;
    // As in queued: a signal that stays below the recovery threshold changes nothing yet.
    if (q < RECOVERED_WATERMARK && q >= 0 && old < RECOVERED_WATERMARK && old >= 0 && t < this.quietUntil && t >= this.judgedAt && this.judgedAt >= this.staleUntil) {
      this.judgedAt = t;
      this.judgements++;
      return this.lvl;
    }
    this.judge(t);
    return this.lvl;
  }

  /**
   * A frame joined the empty queue at `now` and was taken at once, alone (a binding that packs it
   * straight from the core's buffer): `queued(ratio, now)` then `drained(ratio, 0, now)` in one
   * call. Returns the level. When the signal stood at 0 and the frame's ratio is below the
   * recovery threshold, both judgements meet the conditions of the last one before any of its
   * windows can close: only the take's instant is recorded.
   */
  through(ratio: number, now: number): number {
    if (this.queue === 0 && !this.turnedAway && ratio >= 0 && ratio < RECOVERED_WATERMARK && now < this.quietUntil && now >= this.judgedAt && this.judgedAt >= this.staleUntil) {
      const t = this.clamp(now);
      if (t === now) {
        this.judgedAt = t;
        this.takenAt = t;
        this.judgements += 2;
        return this.lvl;
      }
    }
    this.queued(ratio, now);
    this.drained(ratio, 0, now);
    return this.lvl;
  }

  /**
   * The queue turned a frame away at `now` (the binding's canSend said no): for what the core
   * offers it is full, whatever its ratio (a frame of three notifications is refused at 14 of 16).
   * The signal reads full (SATURATED_SIGNAL) now, and the next take finds the queue full.
   */
  refused(now: number): void {
    this.turnedAway = true;
    this.queued(SATURATED_SIGNAL, now);
  }

  /**
   * The link dropped samples unsent at `now` for waiting past its sample budget (docs/protocol.md
   * §13.6): it carries less than it is handed. A queue bounded in time cannot show that by
   * filling up, so the signal reads full (SATURATED_SIGNAL) for STALE_HOLD_MS from now, whatever
   * the queue holds; then the queue's own ratio again.
   */
  stale(now: number): void {
    this.staleUntil = now + STALE_HOLD_MS;
    this.judge(now);
  }

  /** The queue signal is above 0: a take that finds the queue empty has something to say. */
  get signalled(): boolean {
    return this.queue !== 0;
  }

  /** Whether samples dropped stale hold the signal full at `now` (`stale`). */
  staleHeld(now: number): boolean {
    return now < this.staleUntil;
  }

  /** Frames sent to the client but not yet covered by its cumulative ACK, at `now`. */
  ackLag(frames: number, now: number): void {
    this.lagFrames = frames;
    this.judge(now);
  }

  /**
   * Re-judges the windows at `now`. With no input since the last judgement, nothing can change
   * before a window closes or the stale hold ends: the tick then costs a comparison.
   */
  tick(now: number): void {
    if (now < this.quietUntil && now >= this.judgedAt) {
      this.judgedAt = now;
      this.clamp(now);
      return;
    }
    this.judge(now);
  }

  private judge(now: number): void {
    this.judgedAt = now;
    this.judgements++;
    const stale = this.staleUntil;
    const held = now < stale;
    // Until a window closes or the stale hold ends, a tick with no input between finds the same.
    const closes = this.nextAt;
    this.quietUntil = held && stale < closes ? stale : closes;
    let c = classify(held && this.queue < SATURATED_SIGNAL ? SATURATED_SIGNAL : this.queue, WATERMARK_THRESHOLDS);
    if (this.lagFrames > this.lagCongested) c |= Condition.ABOVE_CONGESTED;
    if (!(this.lagFrames < this.lagRecovered)) c &= ~Condition.BELOW_RECOVERED;
    this.step(c, now);
    const after = this.nextAt;
    this.quietUntil = held && stale < after ? stale : after;
  }
  /** Before this instant a tick without input changes nothing (see tick): a link may skip it ... */
  quietUntil = -Infinity;
  /** ... as long as no input was judged since it last looked: judgements so far. */
  judgements = 0;

  /**
   * The queue signal as judged: the backlog the link found at its last take, or more since;
   * full while samples dropped stale hold it so (as of the last judgement). An ESP-NOW link does
   * not pass on a frame queued and taken below the recovery threshold before the next deadline,
   * so there a signal under 20 % may be a little off either way (no level depends on it).
   */
  ratio(): number {
    return this.judgedAt < this.staleUntil && this.queue < SATURATED_SIGNAL ? SATURATED_SIGNAL : this.queue;
  }

  /** The last ack lag reported, in frames. */
  lag(): number {
    return this.lagFrames;
  }

  override reset(now: number): void {
    this.queue = 0;
    this.lagFrames = 0;
    this.takenAt = NaN;
    this.turnedAway = false;
    this.quietUntil = -Infinity;
    // A change a link that skips reading a quiet detector must see (TcpLink.level).
    this.judgements++;
    super.reset(now);
  }
}

Object.assign(WatermarkDetector.prototype, { lagCongested: ACK_LAG_CONGESTED_FRAMES, lagRecovered: ACK_LAG_RECOVERED_FRAMES });

// ---------------------------------------------------------------------------------------------
// ESP-NOW loss rate (§13.3).

/** Hub→peer datagram numbers are 16-bit and wrap. */
export const SEQ_MASK = 0xffff;
/** The peer's ACK bitmask: bit i set ⇔ datagram (base − i) mod 65536 received; bit 0 is base. */
export const ACK_BITMAP_BITS = 32;
/**
 * Datagrams tracked until resolved: twice what one ACK bitmask covers, so a datagram leaves the
 * ring only after two full bitmasks' worth of newer ones were sent. One still unresolved when its
 * slot is reused counts as lost (the peer's ACKs have fallen that far behind).
 */
export const LOSS_RING = 64;
/**
 * A datagram not acknowledged within this counts as lost (a later ACK still corrects it). ESP-NOW
 * round trips are a few ms; what this must cover is the peer's ACK period (we expect an ACK at
 * least every 100 ms while datagrams arrive) plus one lost ACK frame.
 */
export const LOSS_ACK_TIMEOUT_MS = 200;
/** The loss rate counts datagrams resolved over this window ... */
export const LOSS_WINDOW_MS = CONGESTION_WINDOW_MS;
/** ... kept in this many buckets: the current one and the ones before it. */
export const LOSS_BUCKETS = 10;
export const LOSS_BUCKET_MS = LOSS_WINDOW_MS / LOSS_BUCKETS;
/**
 * The rate's denominator is never below this: a handful of datagrams is too little evidence for a
 * rate. One loss alone reads 10 % (not above the level-1 threshold); a peer that stops answering
 * still reads 100 % once ten datagrams have gone unanswered.
 */
export const LOSS_MIN_RESOLVED = 10;

export interface LossOptions {
  /** Default LOSS_ACK_TIMEOUT_MS. */
  readonly ackTimeoutMs?: number;
}

const RING_MASK = LOSS_RING - 1;
/**
 * Datagrams awaiting the radio's send status at once. The radio has one datagram in flight and
 * reports its status before the next goes (bindings/espnow/link.ts), so one is owed at a time;
 * the rest is slack. Past this many the oldest is forgotten.
 */
const STATUS_SLOTS = 16;
const STATUS_MASK = STATUS_SLOTS - 1;
// The detector's arrays, one buffer, two views (on XS every view costs heap slots): `times`
// holds the ring's instants, then from BUCKET_IDS the bucket numbers, from LOST_AT each bucket's
// lost count and from RESOLVED_AT its resolved count (bucket b at BUCKET_IDS + b, LOST_AT + b,
// RESOLVED_AT + b), then its owner's numbers from LOSS_NUMBERS; `seqs` the ring's sequence
// numbers, then the send-status FIFO from STATUS_AT.
const BUCKET_IDS = LOSS_RING;
const LOST_AT = BUCKET_IDS + LOSS_BUCKETS;
const RESOLVED_AT = LOST_AT + LOSS_BUCKETS;
/** Where an owner's numbers start in the detector's `numbers` (LossDetector's `extraNumbers`). */
export const LOSS_NUMBERS = RESOLVED_AT + LOSS_BUCKETS;
const STATUS_AT = LOSS_RING;
const TIMES_BYTES = LOSS_NUMBERS * 8;
const SEQS_BYTES = (LOSS_RING + STATUS_SLOTS) * 2;
/** The bytes one LossDetector keeps (a multiple of 8), its owner's numbers not counted. */
export const LOSS_BYTES = TIMES_BYTES + ((SEQS_BYTES + 7) & ~7);

/**
 * §10.3 loss-rate detector for one ESP-NOW peer: loss = datagrams known lost ÷ datagrams resolved
 * (received or lost) in the last LOSS_WINDOW_MS, judged by the same machine as the watermark.
 *
 * A datagram is resolved received by a set bit in an ACK; lost by a clear bit in an ACK whose
 * base is newer (ESP-NOW delivers in order, so a gap below base is a loss), by a failed send
 * status, by LOSS_ACK_TIMEOUT_MS without an ACK, or by eviction from the ring. Receipt always
 * wins: a later set bit turns a lost datagram into a received one (late ACKs, a peer whose MAC
 * acknowledgement was lost), and nothing turns a received one back into lost (duplicate or
 * reordered ACKs). Call `tick` at least every hub tick so that timeouts and the window's aging
 * are seen even when no datagram moves.
 */
export class LossDetector extends LevelMachine implements CongestionDetector {
  // The ACK timeout: the prototype's LOSS_ACK_TIMEOUT_MS unless given otherwise (an own property
  // only then: on XS every property costs a heap slot).
  private declare readonly timeoutMs: number;
  // Ring of recent datagrams, indexed by seq mod LOSS_RING: each one's number (an empty slot's is
  // one that lands in another slot, see clear), and the instant it was sent while pending, or counted
  // lost while lost (a lost datagram never becomes pending again, so one number serves both).
  // Past the ring, `seqs` holds the send-status FIFO and `times` the buckets.
  private readonly seqs: Uint16Array;
  private readonly times: Float64Array;
  // A slot's state, a bit each in two pairs of masks (slots 0–31, then 32–63): open (pending or
  // lost: an ACK can still change it) and pending. Lost is open and not pending; received, or
  // empty, is neither. An ACK and the timeout scan visit these few, not the 32 numbers a bitmap
  // covers nor the ring.
  private openLo = 0;
  private openHi = 0;
  private pendingLo = 0;
  private pendingHi = 0;
  // No pending datagram times out before this (the oldest send time + timeout, or later).
  private expiry = Infinity;
  // Datagrams awaiting the radio's send status, oldest first (the radio reports in send order):
  // seqs[STATUS_AT + ((statusHead + k) & STATUS_MASK)] for the k-th.
  private statusHead = 0;
  private statusCount = 0;
  // The window's sums, kept as resolutions are counted, as of the window ending with bucket
  // `summedAt` (NaN: taken afresh at the next judgement).
  private lostN = 0;
  private resolvedN = 0;
  private summedAt = NaN;
  private rate = 0;
  // The Condition bits of `rate` (the machine's level after the last step is its `lvl`).
  private cond = 0;
  private judgedAt = -Infinity;
  // The latest time seen: a call's time is never taken as earlier (what LevelMachine.clamp does
  // for the machine, which sees no time but this one).
  private latest: number;
  // Before this instant only the rate can change the level without a timeout: the summed bucket
  // ends, or a level window of the machine closes (its `nextAt`, as of the last step).
  private calmUntil = -Infinity;
  /**
   * Before this instant a tick without input changes nothing (a datagram times out, the window
   * rolls on or a level window closes no sooner): a binding may skip the tick until then.
   */
  quietUntil = -Infinity;

  /**
   * `buffer`, `byteOffset`: where its bytes live (8-aligned) when its owner keeps them in a
   * buffer of its own with other things (on XS every buffer costs heap slots); else its own.
   * `extraNumbers`: numbers of the owner's that share its view of numbers (`numbers`, from
   * LOSS_NUMBERS), so that the owner needs no view of its own for them; its bytes are then
   * LOSS_BYTES + 8 × extraNumbers.
   */
  constructor(now: number, options?: LossOptions, buffer?: ArrayBuffer, byteOffset = 0, extraNumbers = 0) {
    super(now);
    this.latest = now;
    const timeoutMs = options?.ackTimeoutMs ?? LOSS_ACK_TIMEOUT_MS;
    if (timeoutMs !== LOSS_ACK_TIMEOUT_MS) ownValue(this, 'timeoutMs', timeoutMs);
    const bytes = LOSS_BYTES + 8 * extraNumbers;
    if (!(extraNumbers >= 0 && extraNumbers % 1 === 0)) throw new RangeError('LossDetector: extraNumbers must be a whole number ≥ 0');
    if (buffer !== undefined && !(byteOffset % 8 === 0 && byteOffset >= 0 && byteOffset + bytes <= buffer.byteLength)) throw new RangeError('LossDetector: its bytes lie outside the buffer');
    const b = buffer ?? new ArrayBuffer(bytes);
    const o = buffer !== undefined ? byteOffset : 0;
    this.times = new Float64Array(b, o, LOSS_NUMBERS + extraNumbers);
    this.seqs = new Uint16Array(b, o + TIMES_BYTES + 8 * extraNumbers, LOSS_RING + STATUS_SLOTS);
    this.clear();
  }

  /** @internal Its view of numbers: its own, then its owner's `extraNumbers` from LOSS_NUMBERS. */
  get numbers(): Float64Array {
    return this.times;
  }

  /**
   * Datagram `seq` went to the radio at `now`. A number still in the ring is a resend of that
   * datagram under its own number (§13.3.3): the same datagram, counted once, whose fate the
   * peer's ACK decides (a failed status already counted it lost; a set bit takes that back).
   * Returns the level.
   */
  sent(seq: number, now: number): number {
    const t = now > this.latest ? (this.latest = now) : this.latest;
    const s = seq & SEQ_MASK;
    const i = s & RING_MASK;
    const seqs = this.seqs;
    let resolved = false;
    if (seqs[i] !== s) {
      // An empty slot, or another datagram's: one still pending there is lost (evicted), and
      // the slot is this one's, pending.
      seqs[i] = s;
      this.times[i] = t;
      if (i < 32) {
        const bit = 1 << i;
        if (this.pendingLo & bit) {
          this.count(t, 1, 1);
          resolved = true;
        } else {
          this.pendingLo |= bit;
          this.openLo |= bit;
        }
      } else {
        const bit = 1 << (i - 32);
        if (this.pendingHi & bit) {
          this.count(t, 1, 1);
          resolved = true;
        } else {
          this.pendingHi |= bit;
          this.openHi |= bit;
        }
      }
      const e = t + this.timeoutMs;
      if (e < this.expiry) this.expiry = e;
    }
    if (this.statusCount === STATUS_SLOTS) {
      this.statusHead = (this.statusHead + 1) & STATUS_MASK;
      this.statusCount--;
    }
    seqs[STATUS_AT + ((this.statusHead + this.statusCount) & STATUS_MASK)] = s;
    this.statusCount++;
    // Nothing resolved, so the rate stands: judge's first case, without the call.
    if (!resolved && t < this.calmUntil && t <= this.expiry) {
      this.judgedAt = t;
      // The expiry can only have come nearer.
      const e = this.expiry + 1e-9;
      if (e < this.quietUntil) this.quietUntil = e;
      return this.lvl;
    }
    return this.judge(t);
  }

  /** The radio's send status for the oldest datagram still awaiting one; false: the MAC gave up. Returns the level. */
  sendStatus(ok: boolean, now: number): number {
    const t = now > this.latest ? (this.latest = now) : this.latest;
    if (this.statusCount > 0) {
      const s = this.seqs[STATUS_AT + this.statusHead] as number;
      this.statusHead = (this.statusHead + 1) & STATUS_MASK;
      this.statusCount--;
      if (!ok) {
        const i = s & RING_MASK;
        if (this.seqs[i] === s && ((i < 32 ? this.pendingLo >>> i : this.pendingHi >>> (i - 32)) & 1) !== 0) {
          this.markLost(i, t);
          return this.judge(t);
        }
      }
    }
    // Nothing resolved, so the rate stands: judge's first case, without the call.
    if (t < this.calmUntil && t <= this.expiry) {
      this.judgedAt = t;
      return this.lvl;
    }
    return this.judge(t);
  }

  /**
   * `sent` for a sender that has one datagram in flight and knows which (a radio that reports
   * each datagram's status before the next goes): nothing joins the send-status FIFO, and its
   * status comes as `failed` of that number when the MAC gave up; a status that it went resolves
   * nothing and is not passed on, but `sendStatus(true)` would also have judged at its instant:
   * the sender calls `tick(now)` then once `now` has reached `quietUntil` (the ESP-NOW binding
   * does), so that a judgement due is not left for the next tick. Returns the level.
   */
  sentInFlight(seq: number, now: number): number {
    // (Few locals: this runs for every datagram.)
    const t = now > this.latest ? (this.latest = now) : this.latest;
    seq &= SEQ_MASK;
    const i = seq & RING_MASK;
    if (this.seqs[i] !== seq) {
      // As in sent: an empty slot, or another datagram's (one still pending there is lost).
      this.seqs[i] = seq;
      this.times[i] = t;
      const e = t + this.timeoutMs;
      if (e < this.expiry) {
        this.expiry = e;
        // The first case below leaves quietUntil as it was but for the expiry, nearer now.
        if (e + 1e-9 < this.quietUntil) this.quietUntil = e + 1e-9;
      }
      if (i < 32) {
        if (this.pendingLo & (1 << i)) {
          this.count(t, 1, 1);
          return this.judge(t);
        }
        this.pendingLo |= 1 << i;
        this.openLo |= 1 << i;
      } else {
        if (this.pendingHi & (1 << (i - 32))) {
          this.count(t, 1, 1);
          return this.judge(t);
        }
        this.pendingHi |= 1 << (i - 32);
        this.openHi |= 1 << (i - 32);
      }
    }
    // Nothing resolved, so the rate stands: judge's first case, without the call.
    if (t < this.calmUntil && t <= this.expiry) {
      this.judgedAt = t;
      return this.lvl;
    }
    return this.judge(t);
  }

  /** The radio's send status of datagram `seq` (sent by `sentInFlight`): every MAC retry failed. Returns the level. */
  failed(seq: number, now: number): number {
    const t = now > this.latest ? (this.latest = now) : this.latest;
    const s = seq & SEQ_MASK;
    const i = s & RING_MASK;
    if (this.seqs[i] === s && ((i < 32 ? this.pendingLo >>> i : this.pendingHi >>> (i - 32)) & 1) !== 0) {
      this.markLost(i, t);
      return this.judge(t);
    }
    if (t < this.calmUntil && t <= this.expiry) {
      this.judgedAt = t;
      return this.lvl;
    }
    return this.judge(t);
  }

  /**
   * The peer's ACK: bit i of `bitmap` set ⇔ datagram (base − i) mod 65536 received. Only the
   * datagrams still open (pending, or lost and not yet taken back) can change; the others it
   * covers are settled. Returns the level.
   */
  ack(base: number, bitmap: number, now: number): number {
    const t = now > this.latest ? (this.latest = now) : this.latest;
    if ((this.openLo | this.openHi) === 0) {
      // Everything it covers is settled: judge's first case, without the call.
      if (t < this.calmUntil && t <= this.expiry) {
        this.judgedAt = t;
        return this.lvl;
      }
      return this.judge(t);
    }
    let received = 0;
    let lost = 0;
    const seqs = this.seqs;
    for (let half = 0; half < 2; half++) {
      let open = half === 0 ? this.openLo : this.openHi;
      if (open === 0) continue;
      let pending = half === 0 ? this.pendingLo : this.pendingHi;
      let m = open;
      const top = (half << 5) + 31;
      while (m !== 0) {
        const low = m & -m;
        m ^= low;
        const i = top - Math.clz32(low);
        const d = (base - (seqs[i] as number)) & SEQ_MASK;
        if (d >= ACK_BITMAP_BITS) continue;
        if ((bitmap >>> d) & 1) {
          // Received, settled: no ACK changes it any more.
          open ^= low;
          if (pending & low) {
            pending ^= low;
            received++;
          } else this.unlose(i);
        } else if (pending & low) {
          // Lost, still open.
          pending ^= low;
          this.times[i] = t;
          lost++;
        }
      }
      if (half === 0) {
        this.openLo = open;
        this.pendingLo = pending;
      } else {
        this.openHi = open;
        this.pendingHi = pending;
      }
    }
    if (received + lost > 0) this.count(t, received + lost, lost);
    // Nothing pending: nothing can time out (the scan at the old expiry would find so).
    if ((this.pendingLo | this.pendingHi) === 0) this.expiry = Infinity;
    return this.judge(t);
  }

  /**
   * Re-judges the windows at `now`. With no input since the last judgement, nothing changes
   * before a datagram times out, a bucket leaves the window or a level window closes: the tick
   * then costs a comparison. Returns the level.
   */
  tick(now: number): number {
    if (now < this.quietUntil && now >= this.judgedAt) {
      this.judgedAt = now;
      if (now > this.latest) this.latest = now;
      return this.lvl;
    }
    return this.judge(now > this.latest ? (this.latest = now) : this.latest);
  }

  // Pending slot i is lost at t.
  private markLost(i: number, t: number): void {
    if (i < 32) this.pendingLo &= ~(1 << i);
    else this.pendingHi &= ~(1 << (i - 32));
    this.times[i] = t;
    this.count(t, 1, 1);
  }

  // A late ACK: the loss was counted in its own bucket; take it back there if it is still kept.
  private unlose(i: number): void {
    const times = this.times;
    const id = Math.floor((times[i] as number) / LOSS_BUCKET_MS);
    const b = bucketSlot(id);
    const lost = times[LOST_AT + b] as number;
    if (times[BUCKET_IDS + b] === id && lost > 0) {
      times[LOST_AT + b] = lost - 1;
      // The sums hold that bucket while it is in their window.
      const at = this.summedAt;
      if (id > at - LOSS_BUCKETS && id <= at) this.lostN--;
    }
  }

  // `resolved` datagrams resolved at t, `lost` of them lost. The sums stay those of the buckets
  // kept within the window ending at `summedAt`.
  private count(t: number, resolved: number, lost: number): void {
    const id = Math.floor(t / LOSS_BUCKET_MS);
    let b = id % LOSS_BUCKETS; // bucketSlot
    if (b < 0) b += LOSS_BUCKETS;
    const at = this.summedAt;
    const n = this.times;
    const l = LOST_AT + b;
    const r = RESOLVED_AT + b;
    const old = n[BUCKET_IDS + b] as number;
    if (old !== id) {
      if (old > id) return;
      // The bucket this one replaces leaves the sums with it.
      if (old > at - LOSS_BUCKETS && old <= at) {
        this.lostN -= n[l] as number;
        this.resolvedN -= n[r] as number;
      }
      n[BUCKET_IDS + b] = id;
      n[l] = 0;
      n[r] = 0;
    }
    n[r] = (n[r] as number) + resolved;
    n[l] = (n[l] as number) + lost;
    if (id > at - LOSS_BUCKETS && id <= at) {
      this.lostN += lost;
      this.resolvedN += resolved;
    } else if (!(id <= at)) {
      // A bucket after the sums' window (its roll waited, see judge): the judgement that
      // follows rolls the window on first.
      this.calmUntil = -Infinity;
    }
  }

  private judge(t: number): number {
    // (Few locals, reused: every ACK and input ends here.)
    let r = this.lostN / (this.resolvedN > LOSS_MIN_RESOLVED ? this.resolvedN : LOSS_MIN_RESOLVED);
    if (r === this.rate && t < this.calmUntil && t <= this.expiry && t >= this.judgedAt) {
      // Nothing timed out, the window has not moved and the rate is the one judged: the machine
      // would take the same conditions before any of its windows closes, and change nothing.
      this.judgedAt = t;
      r = this.expiry + 1e-9;
      this.quietUntil = r < this.calmUntil ? r : this.calmUntil;
      return this.lvl;
    }
    this.judgedAt = t;
    if (t > this.expiry) this.expire(t);
    const newest = Math.floor(t / LOSS_BUCKET_MS);
    let b = this.summedAt;
    if (newest === b + 1) {
      // The window moved on by one bucket, as a tick finds it at each bucket's end (sum's first
      // case, inline): the bucket that left is taken off, or the one that entered (counted in
      // since, outside the sums then) added.
      b = newest % LOSS_BUCKETS; // bucketSlot
      if (b < 0) b += LOSS_BUCKETS;
      r = this.times[BUCKET_IDS + b] as number;
      if (r === newest - LOSS_BUCKETS) {
        this.lostN -= this.times[LOST_AT + b] as number;
        this.resolvedN -= this.times[RESOLVED_AT + b] as number;
      } else if (r === newest) {
        this.lostN += this.times[LOST_AT + b] as number;
        this.resolvedN += this.times[RESOLVED_AT + b] as number;
      }
      this.summedAt = newest;
    } else if (newest !== b) this.sum(newest);
    r = this.lostN / (this.resolvedN > LOSS_MIN_RESOLVED ? this.resolvedN : LOSS_MIN_RESOLVED);
    // The same rate before a window closes: the machine would take the same conditions and
    // change nothing (its own first case), so it is not asked.
    if (r !== this.rate || !(t < this.nextAt)) {
      b = this.cond;
      if (r !== this.rate) {
        this.rate = r;
        // classify(r, LOSS_THRESHOLDS), inline.
        b = 0;
        if (r > CONGESTED_LOSS) b |= ABOVE_CONGESTED;
        if (r < CONGESTED_LOSS) b |= BELOW_CONGESTED;
        if (r < RECOVERED_LOSS) b |= BELOW_RECOVERED;
        if (r > SEVERE_LOSS) b |= ABOVE_SEVERE;
        if (r >= SATURATED_SIGNAL) b |= SATURATED;
        this.cond = b;
      }
      // The machine's first case (the conditions it last took, before a window of them closes), inline.
      if (b === this.stepped && t < this.nextAt && t >= this.last) this.last = t;
      else this.step(b, t);
    }
    // Quiet until a datagram times out, the window rolls (the next bucket) or a level window
    // closes. With nothing lost in the window the rate is 0 whatever buckets leave it: the roll
    // changes nothing then, and waits for the next datagram resolved in a later bucket (count).
    r = this.lostN === 0 ? Infinity : (newest + 1) * LOSS_BUCKET_MS;
    b = this.nextAt;
    this.calmUntil = b < r ? b : r;
    if (this.expiry < r) r = this.expiry + 1e-9;
    this.quietUntil = b < r ? b : r;
    return this.lvl;
  }

  // Pending datagrams older than the timeout are lost; the next expiry from the rest.
  private expire(t: number): void {
    let oldest = Infinity;
    const times = this.times;
    for (let half = 0; half < 2; half++) {
      let m = half === 0 ? this.pendingLo : this.pendingHi;
      const top = (half << 5) + 31;
      while (m !== 0) {
        const low = m & -m;
        m ^= low;
        const i = top - Math.clz32(low);
        const at = times[i] as number;
        if (t - at > this.timeoutMs) this.markLost(i, t);
        else if (at < oldest) oldest = at;
      }
    }
    this.expiry = oldest + this.timeoutMs;
  }

  // The window now ends with bucket `newest`. A few buckets on, the buckets that left it are taken
  // off the sums and those that entered it added (bucket j's slot holds j − 10, leaving, or j,
  // entering, or neither); otherwise the sums are taken afresh over the buckets it covers.
  private sum(newest: number): void {
    const from = this.summedAt;
    const n = this.times;
    if (newest > from && newest - from < LOSS_BUCKETS) {
      for (let j = from + 1; j <= newest; j++) {
        // bucketSlot, inline.
        let b = j % LOSS_BUCKETS;
        if (b < 0) b += LOSS_BUCKETS;
        const id = n[BUCKET_IDS + b];
        if (id === j - LOSS_BUCKETS) {
          this.lostN -= n[LOST_AT + b] as number;
          this.resolvedN -= n[RESOLVED_AT + b] as number;
        } else if (id === j) {
          this.lostN += n[LOST_AT + b] as number;
          this.resolvedN += n[RESOLVED_AT + b] as number;
        }
      }
    } else {
      let lost = 0;
      let resolved = 0;
      for (let b = 0; b < LOSS_BUCKETS; b++) {
        const id = n[BUCKET_IDS + b] as number;
        if (id > newest - LOSS_BUCKETS && id <= newest) {
          lost += n[LOST_AT + b] as number;
          resolved += n[RESOLVED_AT + b] as number;
        }
      }
      this.lostN = lost;
      this.resolvedN = resolved;
    }
    this.summedAt = newest;
  }

  /** The loss rate as of the last call. */
  ratio(): number {
    return this.rate;
  }

  /** Datagrams counted lost in the window, as of the last call. */
  lostInWindow(): number {
    return this.lostN;
  }

  /**
   * Datagrams resolved (received or lost) in the window, as of the last judgement: with nothing
   * lost in the window its roll is no deadline, so the figure may stand until the next input
   * (the loss rate, 0 then, is the same either way).
   */
  resolvedInWindow(): number {
    return this.resolvedN;
  }

  /** Datagrams sent and not yet resolved. */
  outstanding(): number {
    return bitCount(this.pendingLo) + bitCount(this.pendingHi);
  }

  override reset(now: number): void {
    this.clear();
    this.latest = now;
    super.reset(now);
  }

  private clear(): void {
    // Empty slots: each holds a number no datagram that lands in it (seq mod LOSS_RING) has, so
    // that it reads as another datagram's: 1 (slot 1's) everywhere but in slot 1, which holds 0.
    const seqs = this.seqs;
    seqs.fill(1, 0, LOSS_RING);
    seqs[1] = 0;
    this.openLo = this.openHi = 0;
    this.pendingLo = this.pendingHi = 0;
    this.expiry = Infinity;
    this.statusHead = 0;
    this.statusCount = 0;
    const n = this.times;
    n.fill(-Infinity, BUCKET_IDS, BUCKET_IDS + LOSS_BUCKETS);
    n.fill(0, LOST_AT, RESOLVED_AT + LOSS_BUCKETS);
    this.lostN = 0;
    this.resolvedN = 0;
    this.rate = 0;
    this.cond = classify(0, LOSS_THRESHOLDS);
    this.summedAt = NaN;
    this.calmUntil = -Infinity;
    this.quietUntil = -Infinity;
    this.judgedAt = -Infinity;
  }
}

Object.assign(LossDetector.prototype, { timeoutMs: LOSS_ACK_TIMEOUT_MS });

// The set bits of a 32-bit mask.
function bitCount(m: number): number {
  let n = 0;
  for (let x = m; x !== 0; x &= x - 1) n++;
  return n;
}

function bucketSlot(id: number): number {
  const b = id % LOSS_BUCKETS;
  return b < 0 ? b + LOSS_BUCKETS : b;
}
