// The hub-wide degradation ladder (docs/operations.md "Health, admission and overload"). The hub's
// own load — tick time against its budget, heap against its limit, and the aggregate egress
// occupancy — selects one rung; every rung has an actuator in the hub (unlike the reference's
// declared-but-inert rungs), and this module says exactly what each applies:
//
//   0 calm                 nothing
//   1 thin                 the §10.4 table reads every link at level ≥ 1 (levelFloor): background
//                          STREAM decimates 4× (row 7), background STATE conflates hard (row 8),
//                          normal STREAM decimates 2× (row 10); elevated, critical, segments and
//                          first pushes are untouched (rows 2–4, 11, 12)
//   2 reduce_rates         thinning becomes the announced truth (§10.2: no silent under-delivery
//                          beyond a transient): background grants × 0.25, normal × 0.5, re-stated
//                          by unsolicited GRANT; the level floor is lifted
//   3 pause_non_essential  background subscriptions granted 0 (paused), announced by GRANT;
//                          normal stays × 0.5
//   4 refuse_joins         as 3, and new sessions are refused (admission reason `ladder`, NACK
//                          HUB_PRESSURE); resumes are still admitted
//   5 park_lowest          as 4, and the lowest-priority session is parked (§6.6 STALE, the
//                          §10.4 transition), one every LADDER_PARK_INTERVAL_MS
//
// Selection (the piecewise rule, budget-relative so it holds at any tick rate): each
// signal's ratio is placed against its five thresholds and the highest rung any signal reaches
// wins. The tick ratio counts only with at least ADMISSION_MIN_TICK_OBSERVATIONS ticks in view;
// an unknown heap (NaN) reads 0.
//
// Hysteresis, so that a signal sitting on a threshold cannot flap the ladder:
//   - up at once, as many rungs as the signals call for;
//   - a rung is held while the signals stay at or above LADDER_EXIT_RATIO × its thresholds;
//   - down only after the signals have called for less for LADDER_RELIEF_MS, one rung at a time,
//     each further rung after another LADDER_RELIEF_MS;
//   - thinning sustained longer than LADDER_SUSTAINED_MS (the §10.3 5 s) without a break becomes
//     reduce_rates (trigger `sustained`), and that rung holds while the load stays at rung 1.

import { ADMISSION_MIN_TICK_OBSERVATIONS, DEFAULT_HEAP_LIMIT_BYTES, DEFAULT_TICK_BUDGET_MS } from './admission.js';
import { REGRANT_AFTER_CONGESTED_MS } from './constants.js';

export const LadderRung = Object.freeze({
  CALM: 0,
  THIN: 1,
  REDUCE_RATES: 2,
  PAUSE_NON_ESSENTIAL: 3,
  REFUSE_JOINS: 4,
  PARK_LOWEST: 5,
} as const);
export type LadderRungCode = (typeof LadderRung)[keyof typeof LadderRung];
export const LADDER_ACTIONS = Object.freeze(['calm', 'thin', 'reduce_rates', 'pause_non_essential', 'refuse_joins', 'park_lowest'] as const);
export type LadderAction = (typeof LADDER_ACTIONS)[number];
export const LADDER_TOP = 5;

export const LadderTrigger = Object.freeze({ NONE: 0, TICK: 1, HEAP: 2, EGRESS: 3, SUSTAINED: 4 } as const);
export type LadderTriggerCode = (typeof LadderTrigger)[keyof typeof LadderTrigger];
export const LADDER_TRIGGER_NAMES = Object.freeze(['none', 'tick', 'heap', 'egress', 'sustained'] as const);

/** Reference 000: tick p95 ÷ budget at which rungs 1–5 begin. */
export const LADDER_TICK_RATIOS: readonly number[] = Object.freeze([0.8, 1, 1.25, 1.5, 2]);
/** Reference 000's ring ratios, read on the aggregate egress occupancy: rungs 1–5. */
export const LADDER_EGRESS_RATIOS: readonly number[] = Object.freeze([0.5, 0.7, 0.85, 0.95, 1]);
/** Our decision: heap in use ÷ heap limit at which rungs 1–5 begin (admission refuses above 1). */
export const LADDER_HEAP_RATIOS: readonly number[] = Object.freeze([0.7, 0.8, 0.9, 0.95, 1]);
/** Our decision: a rung is held while the signals stay at or above this share of its thresholds. */
export const LADDER_EXIT_RATIO = 0.9;
/**
 * A link whose transport has taken nothing from its backlog for this long is stalled by its
 * reader, not by the hub: its occupancy is left out of the aggregate (Link.stalledMs). Half the
 * §10.4 never-shed stall (2000 ms) that parks such a link; a slow link that moves at all (a 50 ms
 * BLE connection interval, a 200 ms TCP retransmission) moves far sooner.
 */
export const LADDER_READER_STALL_MS = 1000;
/**
 * A link handed frames within LADDER_READER_STALL_MS whose queue is below this share (the §10.3
 * recovered watermark, 20 %) keeps up: while one does, the hub's own egress is evidently not the
 * bottleneck and the aggregate egress signal reads 0 (docs/operations.md, "The hub-wide ladder").
 */
export const LADDER_KEEPING_UP_OCCUPANCY = 0.2;
/** Our decision, after §10.3's 5 s recovery: how long the signals must call for less before one step down. */
export const LADDER_RELIEF_MS = 5000;
/** §10.3 / §10.2: thinning sustained longer than this is re-granted (rung 2). */
export const LADDER_SUSTAINED_MS = REGRANT_AFTER_CONGESTED_MS;
/** Our decision: at park_lowest, one park per this long, the length of the tick view (10 s), so each park's effect is seen first. */
export const LADDER_PARK_INTERVAL_MS = 10000;
/** Rung 2: background grants × 0.25, the rate row 7's decimate 4× delivered at rung 1. */
export const REDUCE_BACKGROUND_FACTOR = 0.25;
/** Rung 2–5: normal grants × 0.5, the rate row 10's decimate 2× delivered at rung 1. */
export const REDUCE_NORMAL_FACTOR = 0.5;

/** What each rung makes the hub do. `factors` is indexed by priority code (§10.1). */
export interface RungPolicy {
  readonly rung: LadderRungCode;
  readonly action: LadderAction;
  /** The least level the §10.4 table reads for every link (max(link level, floor)). */
  readonly levelFloor: number;
  /** Multiplies each planned non-critical grant, by priority: 1 keeps it, 0 pauses it. */
  readonly factors: readonly number[];
  readonly refuseJoins: boolean;
  readonly park: boolean;
}

function policy(rung: LadderRungCode, levelFloor: number, background: number, normal: number, refuseJoins: boolean, park: boolean): RungPolicy {
  return Object.freeze({
    rung,
    action: LADDER_ACTIONS[rung],
    levelFloor,
    factors: Object.freeze([background, normal, 1, 1]),
    refuseJoins,
    park,
  });
}

export const RUNG_POLICIES: readonly RungPolicy[] = Object.freeze([
  policy(LadderRung.CALM, 0, 1, 1, false, false),
  policy(LadderRung.THIN, 1, 1, 1, false, false),
  policy(LadderRung.REDUCE_RATES, 0, REDUCE_BACKGROUND_FACTOR, REDUCE_NORMAL_FACTOR, false, false),
  policy(LadderRung.PAUSE_NON_ESSENTIAL, 0, 0, REDUCE_NORMAL_FACTOR, false, false),
  policy(LadderRung.REFUSE_JOINS, 0, 0, REDUCE_NORMAL_FACTOR, true, false),
  policy(LadderRung.PARK_LOWEST, 0, 0, REDUCE_NORMAL_FACTOR, true, true),
]);

const CRITICAL = 3; // §10.1 priority code of the never-shed set

/**
 * The factor a subscription's planned grant is multiplied by at `rung` (then floored to the
 * grant step). Critical subscriptions are never touched (§10.2: grant changes never apply to the
 * never-shed set). A segments stream is granted whole or not at all (§10.4): it keeps its grant
 * unless its class is paused.
 */
export function grantFactorAt(rung: number, priority: number, segments: boolean): number {
  if (priority >= CRITICAL) return 1;
  const p = RUNG_POLICIES[rung] ?? RUNG_POLICIES[0]!;
  const f = p.factors[priority] ?? 1;
  if (segments) return f === 0 ? 0 : 1;
  return f;
}

/** The load the ladder reads. HealthMetrics.sample fills the measured fields; the hub the rest. */
export interface LadderSignals {
  /** Tick duration p95 over the admission view (10 s), ms, and how many ticks it is over. */
  tickP95Ms: number;
  tickCount: number;
  /** Heap in use, bytes; NaN when unknown. */
  heapUsedBytes: number;
  /**
   * Aggregate egress occupancy 0..1: the sum of the attached links' queue occupancies divided by
   * the slot count, i.e. the share of the hub's whole egress queueing in use. One slow client
   * alone is §10.3/§10.4's business, not the hub's; a link stalled by its reader for
   * LADDER_READER_STALL_MS or more is left out of the sum altogether.
   */
  egressOccupancy: number;
}

export interface LadderBudgets {
  readonly tickBudgetMs: number;
  readonly heapLimitBytes: number;
  readonly minTickObservations: number;
}

export const DEFAULT_LADDER_BUDGETS: LadderBudgets = Object.freeze({
  tickBudgetMs: DEFAULT_TICK_BUDGET_MS,
  heapLimitBytes: DEFAULT_HEAP_LIMIT_BYTES,
  minTickObservations: ADMISSION_MIN_TICK_OBSERVATIONS,
});

/** The aggregate egress occupancy from the sum of the attached links' occupancies and the slot count. */
export function aggregateOccupancy(sumOfOccupancies: number, slots: number): number {
  if (!(sumOfOccupancies > 0) || !(slots > 0)) return 0;
  const r = sumOfOccupancies / slots;
  return r < 1 ? r : 1;
}

// The thresholds a rung is held at, computed once (LADDER_EXIT_RATIO × each entry threshold).
const TICK_EXIT: readonly number[] = Object.freeze(LADDER_TICK_RATIOS.map((t) => t * LADDER_EXIT_RATIO));
const HEAP_EXIT: readonly number[] = Object.freeze(LADDER_HEAP_RATIOS.map((t) => t * LADDER_EXIT_RATIO));
const EGRESS_EXIT: readonly number[] = Object.freeze(LADDER_EGRESS_RATIOS.map((t) => t * LADDER_EXIT_RATIO));

// Where rung 1 begins, signal by signal.
const TICK_ENTER = LADDER_TICK_RATIOS[0] as number;
const HEAP_ENTER = LADDER_HEAP_RATIOS[0] as number;
const EGRESS_ENTER = LADDER_EGRESS_RATIOS[0] as number;
const CALM = LadderRung.CALM;
const CALM_ACTION = LADDER_ACTIONS[CALM];
const NO_TRIGGER = LadderTrigger.NONE;

// Thresholds ascend, so a calm signal is placed by its first comparison.
function rungOf(ratio: number, thresholds: readonly number[], scale: number): number {
  let r = 0;
  if (scale === 1) {
    while (r < LADDER_TOP && ratio >= (thresholds[r] as number)) r++;
  } else {
    while (r < LADDER_TOP && ratio >= (thresholds[r] as number) * scale) r++;
  }
  return r;
}

/**
 * The rung the signals call for with every threshold × `scale` (1: to enter a rung;
 * LADDER_EXIT_RATIO: to hold it), packed as rung × 8 + trigger. No hysteresis, no time.
 */
export function rungFor(signals: Readonly<LadderSignals>, budgets: LadderBudgets, scale = 1): number {
  const tick = signals.tickCount >= budgets.minTickObservations ? signals.tickP95Ms / Math.max(1, budgets.tickBudgetMs) : 0;
  const heap = budgets.heapLimitBytes > 0 && signals.heapUsedBytes > 0 ? signals.heapUsedBytes / budgets.heapLimitBytes : 0;
  const egress = signals.egressOccupancy > 0 ? signals.egressOccupancy : 0;
  const exit = scale === LADDER_EXIT_RATIO;
  const s = exit ? 1 : scale;
  let rung = 0;
  let trigger: number = LadderTrigger.NONE;
  let r = rungOf(tick, exit ? TICK_EXIT : LADDER_TICK_RATIOS, s);
  if (r > rung) {
    rung = r;
    trigger = LadderTrigger.TICK;
  }
  r = rungOf(heap, exit ? HEAP_EXIT : LADDER_HEAP_RATIOS, s);
  if (r > rung) {
    rung = r;
    trigger = LadderTrigger.HEAP;
  }
  r = rungOf(egress, exit ? EGRESS_EXIT : LADDER_EGRESS_RATIOS, s);
  if (r > rung) {
    rung = r;
    trigger = LadderTrigger.EGRESS;
  }
  return rung * 8 + trigger;
}

export function packedRung(packed: number): number {
  return packed >> 3;
}

export function packedTrigger(packed: number): number {
  return packed & 7;
}

export interface LadderState {
  rung: LadderRungCode;
  action: LadderAction;
  trigger: LadderTriggerCode;
  /** When the current rung was entered. */
  since: number;
  /** Since when the signals have called for less than the rung; NaN while they do not. */
  reliefSince: number;
  /** Since when the signals have called for rung ≥ 1 without a break; NaN while calm. */
  loadedSince: number;
  /** Rung changes so far. */
  changes: number;
}

export function initialLadderState(now = 0): LadderState {
  return { rung: LadderRung.CALM, action: LADDER_ACTIONS[0], trigger: LadderTrigger.NONE, since: now, reliefSince: NaN, loadedSince: NaN, changes: 0 };
}

/**
 * The pure selector: the ladder's next state from its current one, the signals and the time.
 * Written into `out` (which may be `current` itself: every field is read before any is written).
 */
export function selectRung(
  signals: Readonly<LadderSignals>,
  budgets: LadderBudgets,
  current: Readonly<LadderState>,
  now: number,
  out: LadderState = initialLadderState(now),
): LadderState {
  const cur = current.rung;
  let rung: number = cur;
  let trigger: number = current.trigger;
  let since = current.since;
  let reliefSince = current.reliefSince;
  let loadedSince = current.loadedSince;
  let changes = current.changes;

  const enter = rungFor(signals, budgets, 1);
  const stay = rungFor(signals, budgets, LADDER_EXIT_RATIO);
  let demand = packedRung(enter);
  let cause = packedTrigger(enter);
  const held = Math.min(packedRung(stay), cur);
  if (held > demand) {
    demand = held;
    cause = packedTrigger(stay);
  }
  if (demand >= 1) {
    if (!(loadedSince === loadedSince)) loadedSince = now;
  } else {
    loadedSince = NaN;
  }
  if (demand === LadderRung.THIN && now - loadedSince > LADDER_SUSTAINED_MS) {
    demand = LadderRung.REDUCE_RATES;
    cause = LadderTrigger.SUSTAINED;
  }

  if (demand > cur) {
    rung = demand;
    trigger = cause;
    since = now;
    reliefSince = NaN;
    changes++;
  } else if (demand < cur) {
    if (!(reliefSince === reliefSince)) {
      reliefSince = now;
    } else if (now - reliefSince >= LADDER_RELIEF_MS) {
      rung = cur - 1;
      since = now;
      changes++;
      reliefSince = demand < rung ? now : NaN;
    }
    if (rung === 0) trigger = LadderTrigger.NONE;
    else if (demand > 0) trigger = cause;
  } else {
    reliefSince = NaN;
    trigger = rung === 0 ? LadderTrigger.NONE : cause;
  }

  out.rung = rung as LadderRungCode;
  out.action = LADDER_ACTIONS[rung] as LadderAction;
  out.trigger = trigger as LadderTriggerCode;
  out.since = since;
  out.reliefSince = reliefSince;
  out.loadedSince = loadedSince;
  out.changes = changes;
  return out;
}

/**
 * The ladder as the hub holds it: the state, the budgets, and the pacing of parks. `update` once
 * per tick with the current signals; when it returns true the rung changed and the hub re-plans
 * its grants (each planned grant × `grantFactor`) and announces them (§10.2).
 */
export class Ladder {
  readonly budgets: LadderBudgets;
  readonly state: LadderState;
  /** Sessions parked by rung 5. */
  parks = 0;
  private lastParkAt = -Infinity;

  constructor(budgets: LadderBudgets = DEFAULT_LADDER_BUDGETS, now = 0) {
    this.budgets = budgets;
    this.state = initialLadderState(now);
  }

  /** One reading of the signals; true when the rung changed. */
  update(signals: Readonly<LadderSignals>, now: number): boolean {
    const st = this.state;
    const b = this.budgets;
    // Calm, and no signal reaches rung 1: selectRung would keep the rung and clear the rest.
    if (
      st.rung === CALM &&
      !(signals.tickCount >= b.minTickObservations && signals.tickP95Ms / Math.max(1, b.tickBudgetMs) >= TICK_ENTER) &&
      !(b.heapLimitBytes > 0 && signals.heapUsedBytes > 0 && signals.heapUsedBytes / b.heapLimitBytes >= HEAP_ENTER) &&
      !(signals.egressOccupancy >= EGRESS_ENTER)
    ) {
      st.action = CALM_ACTION;
      st.trigger = NO_TRIGGER;
      st.reliefSince = NaN;
      st.loadedSince = NaN;
      return false;
    }
    const before = st.rung;
    selectRung(signals, this.budgets, this.state, now, this.state);
    if (this.state.rung === before) return false;
    // A new episode at park_lowest parks at once; the pacing is within one episode.
    if (this.state.rung < LadderRung.PARK_LOWEST) this.lastParkAt = -Infinity;
    return true;
  }

  get rung(): LadderRungCode {
    return this.state.rung;
  }

  get policy(): RungPolicy {
    return RUNG_POLICIES[this.state.rung] as RungPolicy;
  }

  /** The least §10.4 level every link is read at (the hot path: max(link.level(), levelFloor)). */
  get levelFloor(): number {
    return (RUNG_POLICIES[this.state.rung] as RungPolicy).levelFloor;
  }

  get refusesJoins(): boolean {
    return (RUNG_POLICIES[this.state.rung] as RungPolicy).refuseJoins;
  }

  grantFactor(priority: number, segments: boolean): number {
    return grantFactorAt(this.state.rung, priority, segments);
  }

  /** At park_lowest: whether the next park is due. The hub then parks `parkCandidate(...)`, if any, and calls `markParked`. */
  parkDue(now: number): boolean {
    return this.state.rung >= LadderRung.PARK_LOWEST && now - this.lastParkAt >= LADDER_PARK_INTERVAL_MS;
  }

  /** A session was parked by rung 5: the next park waits LADDER_PARK_INTERVAL_MS. */
  markParked(now: number): void {
    this.lastParkAt = now;
    this.parks++;
  }
}

// ------------------------------------------------------------------ the actuation plan

/** A subscription as the plan sees it. */
export interface LadderSubView {
  readonly channelId: number;
  /** §10.1 priority code. */
  readonly priority: number;
  /** A segments-kind STREAM (§10.4: whole source or nothing). */
  readonly segments: boolean;
}

/** A session as the plan sees it: numbers only, no names. */
export interface LadderSessionView {
  readonly id: number;
  /** ACTIVE (attached): only those can be parked. */
  readonly active: boolean;
  /** Owns control: never parked (the deadman would latch ESTOP). */
  readonly owner: boolean;
  readonly tier: number;
  readonly subs: readonly LadderSubView[];
}

export interface SubAction {
  readonly sessionId: number;
  readonly channelId: number;
  /** What the planned grant is multiplied by: in (0, 1) reduced, 0 paused. */
  readonly factor: number;
}

export interface ActuationPlan {
  readonly rung: LadderRungCode;
  readonly action: LadderAction;
  readonly levelFloor: number;
  readonly refuseJoins: boolean;
  /** By priority code; the hub may apply these in its re-plan instead of walking the lists. */
  readonly factors: readonly number[];
  /** Subscriptions whose grant is cut (re-granted down, announced by GRANT). */
  readonly reduce: readonly SubAction[];
  /** Subscriptions paused (granted 0, announced by GRANT). */
  readonly pause: readonly SubAction[];
  /** The session to park now (0: none). Only at park_lowest, and only when `parkNow`. */
  readonly parkSessionId: number;
}

/**
 * The session rung 5 parks: among ACTIVE sessions other than the control owner, the one whose
 * most important non-critical subscription has the lowest priority (a session with none holds
 * only never-shed traffic and goes last), then the lowest tier, then the newest (highest id:
 * the latest join yields first). 0 when none qualifies.
 */
export function parkCandidate(sessions: readonly LadderSessionView[]): number {
  let best = 0;
  let bestPriority = 0;
  let bestTier = 0;
  for (let i = 0; i < sessions.length; i++) {
    const s = sessions[i] as LadderSessionView;
    if (!s.active || s.owner) continue;
    let p = -1;
    for (let j = 0; j < s.subs.length; j++) {
      const q = (s.subs[j] as LadderSubView).priority;
      if (q < CRITICAL && q > p) p = q;
    }
    if (p < 0) p = CRITICAL;
    const better =
      best === 0 || p < bestPriority || (p === bestPriority && (s.tier < bestTier || (s.tier === bestTier && s.id > best)));
    if (better) {
      best = s.id;
      bestPriority = p;
      bestTier = s.tier;
    }
  }
  return best;
}

/**
 * What the hub does at `rung`, spelled out over its sessions: the subscriptions it re-grants
 * down and by what factor, those it pauses, whether joins are refused, the level floor of the
 * shedding table and the session to park (with `parkNow`, from `Ladder.parkDue`). Allocates the
 * plan: the hub builds it when the rung changes, not per push.
 */
export function planActuation(rung: number, sessions: readonly LadderSessionView[], parkNow = false): ActuationPlan {
  const p = RUNG_POLICIES[rung] ?? (RUNG_POLICIES[0] as RungPolicy);
  const reduce: SubAction[] = [];
  const pause: SubAction[] = [];
  for (let i = 0; i < sessions.length; i++) {
    const s = sessions[i] as LadderSessionView;
    for (let j = 0; j < s.subs.length; j++) {
      const sub = s.subs[j] as LadderSubView;
      const f = grantFactorAt(p.rung, sub.priority, sub.segments);
      if (f === 0) pause.push(Object.freeze({ sessionId: s.id, channelId: sub.channelId, factor: 0 }));
      else if (f < 1) reduce.push(Object.freeze({ sessionId: s.id, channelId: sub.channelId, factor: f }));
    }
  }
  return Object.freeze({
    rung: p.rung,
    action: p.action,
    levelFloor: p.levelFloor,
    refuseJoins: p.refuseJoins,
    factors: p.factors,
    reduce: Object.freeze(reduce),
    pause: Object.freeze(pause),
    parkSessionId: p.park && parkNow ? parkCandidate(sessions) : 0,
  });
}
