// Admission (docs/operations.md "Health, admission and overload"): a HELLO that opens a new
// session is refused with NACK HUB_PRESSURE and `retry_after_ms` while the hub is under
// pressure. Resumes of existing sessions are always admitted (docs/protocol.md §6.3): a client
// that was parked or lost its transport gets back the session it holds, whatever the load, so
// the hub calls this for a HELLO without `resume_token` only (`Admission.check(resume, …)`
// returns the admit verdict for a resume without looking at the signals, and counts it).
//
// The conditions, each enough on its own, checked in this order (the first that holds is the
// reason reported and NACKed; `mask` carries every one that holds):
//   event-loop          the loop delay's max over the last ADMISSION_WINDOW_S seconds exceeds
//                       ADMISSION_LOOP_DELAY_MS (250 ms over the ten newest buckets)
//   tick                the tick duration's p95 over the same seconds exceeds the tick budget,
//                       with at least ADMISSION_MIN_TICK_OBSERVATIONS ticks in them (001: 30)
//   never-shed-backlog  the bytes waiting in all never-shed queues exceed the limit (001's
//                       durable-queue condition; ours: a quarter of the hub's never-shed capacity)
//   memory              the heap in use exceeds the heap limit (001's RSS condition); an unknown
//                       heap (NaN: release builds have no instrumentation) never refuses
//   ladder              the hub ladder is at refuse_joins or above (ladder.ts)
// Pure: the same signals and limits give the same verdict. Comparisons are strict ("exceeds").

import { Nack } from './nack.js';

/** Reference 001: admission reads the ten newest one-second buckets. */
export const ADMISSION_WINDOW_S = 10;
/** Reference 001: the loop delay's max over the admission view may not exceed 250 ms. */
export const ADMISSION_LOOP_DELAY_MS = 250;
/** Reference 001: a tick p95 counts only with at least 30 ticks in the admission view. */
export const ADMISSION_MIN_TICK_OBSERVATIONS = 30;
/** Reference 001's trusted-tick budget, 25 ms; a hub whose tick period is shorter configures that. */
export const DEFAULT_TICK_BUDGET_MS = 25;
/** Our decision: the share of the hub's never-shed capacity (slots × never-shed bytes) that may wait. */
export const NEVER_SHED_BACKLOG_RATIO = 0.25;
/**
 * Our decision (provisional): a soft heap budget of 128 KiB, about 80 % of the 157,184 bytes
 * manifest.json's `creation` gives XS (a 94,208-byte chunk heap and 3,936 slots of 16 bytes). Not a measured
 * capacity; a host hub configures its own.
 */
export const DEFAULT_HEAP_LIMIT_BYTES = 131072;
/** The retry hint for conditions that clear with the measurements: the view moves a second at a time. */
export const ADMISSION_RETRY_AFTER_MS = 1000;
/** The retry hint while the ladder refuses joins: it steps down at most once per LADDER_RELIEF_MS (5000). */
export const ADMISSION_LADDER_RETRY_AFTER_MS = 5000;
/** The NACK a refused HELLO gets (§12: retryable, with retry_after_ms). */
export const ADMISSION_NACK = Nack.HUB_PRESSURE;

export const AdmissionReason = Object.freeze({
  NONE: 0,
  EVENT_LOOP: 1,
  TICK: 2,
  NEVER_SHED_BACKLOG: 3,
  MEMORY: 4,
  LADDER: 5,
} as const);
export type AdmissionReasonCode = (typeof AdmissionReason)[keyof typeof AdmissionReason];
export type AdmissionReasonName = 'event-loop' | 'tick' | 'never-shed-backlog' | 'memory' | 'ladder';
/** Code → name; index 0 (admitted) has none. */
export const ADMISSION_REASON_NAMES: readonly (AdmissionReasonName | null)[] = Object.freeze([
  null,
  'event-loop',
  'tick',
  'never-shed-backlog',
  'memory',
  'ladder',
]);

/** What admission reads. HealthMetrics.sample fills the measured fields; the hub the rest. */
export interface AdmissionSignals {
  /** Max loop delay over the last ADMISSION_WINDOW_S seconds, ms. */
  loopDelayMaxMs: number;
  /** Ms until every second whose loop delay exceeded the limit has left that view (0: none). */
  loopDelayClearsInMs: number;
  /** Tick duration p95 over the same seconds, ms, and how many ticks it is over. */
  tickP95Ms: number;
  tickCount: number;
  /** Bytes waiting in every session's never-shed queue together. */
  neverShedBacklogBytes: number;
  /** Heap in use, bytes; NaN when the platform cannot tell. */
  heapUsedBytes: number;
  /** The ladder is at refuse_joins or above. */
  refuseJoins: boolean;
}

export interface AdmissionLimits {
  readonly loopDelayMs: number;
  readonly tickBudgetMs: number;
  readonly minTickObservations: number;
  readonly neverShedBacklogBytes: number;
  readonly heapLimitBytes: number;
  readonly retryAfterMs: number;
}

export interface AdmissionVerdict {
  readonly admit: boolean;
  readonly reason: AdmissionReasonName | null;
  readonly code: AdmissionReasonCode;
  /** Bit (1 << code) for every condition that holds, the reported one included. */
  readonly mask: number;
  /** 0 when admitted. */
  readonly retryAfterMs: number;
}

type MutableVerdict = { -readonly [K in keyof AdmissionVerdict]: AdmissionVerdict[K] };

/** The limits for a hub of `slots` sessions with `neverShedBytes` of never-shed queue each. */
export function defaultAdmissionLimits(slots: number, neverShedBytes: number, overrides: Partial<AdmissionLimits> = {}): AdmissionLimits {
  return Object.freeze({
    loopDelayMs: ADMISSION_LOOP_DELAY_MS,
    tickBudgetMs: DEFAULT_TICK_BUDGET_MS,
    minTickObservations: ADMISSION_MIN_TICK_OBSERVATIONS,
    neverShedBacklogBytes: Math.floor(slots * neverShedBytes * NEVER_SHED_BACKLOG_RATIO),
    heapLimitBytes: DEFAULT_HEAP_LIMIT_BYTES,
    retryAfterMs: ADMISSION_RETRY_AFTER_MS,
    ...overrides,
  });
}

/** The admission verdict, written into `out` (allocation-free). */
export function evaluateAdmissionInto(signals: Readonly<AdmissionSignals>, limits: AdmissionLimits, out: MutableVerdict): AdmissionVerdict {
  let mask = 0;
  if (signals.loopDelayMaxMs > limits.loopDelayMs) mask |= 1 << AdmissionReason.EVENT_LOOP;
  if (signals.tickCount >= limits.minTickObservations && signals.tickP95Ms > limits.tickBudgetMs) mask |= 1 << AdmissionReason.TICK;
  if (signals.neverShedBacklogBytes > limits.neverShedBacklogBytes) mask |= 1 << AdmissionReason.NEVER_SHED_BACKLOG;
  if (signals.heapUsedBytes > limits.heapLimitBytes) mask |= 1 << AdmissionReason.MEMORY;
  if (signals.refuseJoins) mask |= 1 << AdmissionReason.LADDER;
  let code: AdmissionReasonCode = AdmissionReason.NONE;
  for (let c: number = AdmissionReason.EVENT_LOOP; c <= AdmissionReason.LADDER; c++) {
    if ((mask & (1 << c)) !== 0) {
      code = c as AdmissionReasonCode;
      break;
    }
  }
  let retry = 0;
  if (code === AdmissionReason.EVENT_LOOP) {
    // The spike leaves the view at a known second boundary: retrying sooner cannot succeed.
    const clears = signals.loopDelayClearsInMs;
    retry = clears > 0 ? Math.ceil(clears) : limits.retryAfterMs;
  } else if (code === AdmissionReason.LADDER) {
    retry = ADMISSION_LADDER_RETRY_AFTER_MS;
  } else if (code !== AdmissionReason.NONE) {
    retry = limits.retryAfterMs;
  }
  out.admit = code === AdmissionReason.NONE;
  out.code = code;
  out.reason = ADMISSION_REASON_NAMES[code] as AdmissionReasonName | null;
  out.mask = mask;
  out.retryAfterMs = retry;
  return out;
}

/** The admission verdict for a new session (pure; allocates the verdict). */
export function evaluateAdmission(signals: Readonly<AdmissionSignals>, limits: AdmissionLimits): AdmissionVerdict {
  return evaluateAdmissionInto(signals, limits, { admit: true, reason: null, code: AdmissionReason.NONE, mask: 0, retryAfterMs: 0 });
}

const ADMIT: AdmissionVerdict = Object.freeze({ admit: true, reason: null, code: AdmissionReason.NONE, mask: 0, retryAfterMs: 0 });

/**
 * The hub's admission gate: the limits, one reusable verdict and the counts health reports.
 * `check(resume, signals)` on every HELLO that passed the version check; a refused verdict is
 * answered NACK HUB_PRESSURE with its `retryAfterMs`.
 */
export class Admission {
  readonly limits: AdmissionLimits;
  /** Refused HELLOs by reason code (index 0 unused). */
  readonly refusals = new Float64Array(ADMISSION_REASON_NAMES.length);
  admitted = 0;
  /** Resumes admitted without evaluation. */
  resumes = 0;
  private readonly verdict: MutableVerdict = { admit: true, reason: null, code: AdmissionReason.NONE, mask: 0, retryAfterMs: 0 };

  constructor(limits: AdmissionLimits) {
    this.limits = limits;
  }

  /** The verdict for one HELLO. A resume is always admitted. The result is reused by the next call. */
  check(resume: boolean, signals: Readonly<AdmissionSignals>): AdmissionVerdict {
    if (resume) {
      this.resumes++;
      return ADMIT;
    }
    const v = evaluateAdmissionInto(signals, this.limits, this.verdict);
    if (v.admit) this.admitted++;
    else this.refusals[v.code] = (this.refusals[v.code] as number) + 1;
    return v;
  }

  /** The verdict a new session would get now, without counting it (for health). */
  peek(signals: Readonly<AdmissionSignals>): AdmissionVerdict {
    return evaluateAdmissionInto(signals, this.limits, this.verdict);
  }
}
