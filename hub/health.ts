// Measured health, `metrics.version: 1` (docs/operations.md "Health, admission and overload"). Durations are kept in
// sixty one-second buckets with fixed histogram boundaries (window60.ts): count, mean, max and p95.
// Counters come from the hub. The report holds numbers under fixed keys only: no client names,
// credentials, tokens or payloads, no per-client labels (a link row carries its slot index and a
// binding code, nothing else). The operators' detailed endpoint is gated here too (OperatorGate).
//
// Memory, fixed at construction: HealthMetrics holds four Window60 in one buffer (window60.ts):
// loop delay and tick 2,712 B each (1,752 B ticked every 4 ms or more), the other two 2,584 B.

import { ADMISSION_LOOP_DELAY_MS, ADMISSION_REASON_NAMES, ADMISSION_WINDOW_S, type Admission, type AdmissionSignals } from './admission.js';
import type { AckLagSummary } from './acklag.js';
import type { IngressGovernor } from './governor.js';
import type { Ladder, LadderSignals } from './ladder.js';
import { NACK_MAX_CODE, nackName } from './nack.js';
import { WindowCounter } from './limits.js';
import { DURATION_HISTOGRAM, WINDOW_BUCKETS, Window60, windowBytes, type Histogram } from './window60.js';

export const METRICS_VERSION = 1;
/** A tick period from which the loop-delay and tick windows count in bytes: at most 250 ticks a second. */
const TICKS_COUNTED_IN_BYTES_MS = 4;

/** Everything admission and the ladder read, filled once per tick (one object, reused). */
export interface HubLoad extends AdmissionSignals, LadderSignals {
  /** Links whose backlog their reader has left untaken for LADDER_READER_STALL_MS: not in egressOccupancy. */
  readerStalledLinks: number;
  /** ACTIVE links handed frames within LADDER_READER_STALL_MS with their queue below LADDER_KEEPING_UP_OCCUPANCY. */
  keepingUpLinks: number;
}

export function createHubLoad(): HubLoad {
  return {
    loopDelayMaxMs: 0,
    loopDelayClearsInMs: 0,
    tickP95Ms: 0,
    tickCount: 0,
    neverShedBacklogBytes: 0,
    heapUsedBytes: NaN,
    refuseJoins: false,
    egressOccupancy: 0,
    readerStalledLinks: 0,
    keepingUpLinks: 0,
  };
}

/** Binding names → codes in the report (numbers only). Anything else is 0. */
export const BindingCode = Object.freeze({ other: 0, tcp: 1, ws: 2, ble: 3, espnow: 4 } as const);
export const BINDING_NAMES = Object.freeze(['other', 'tcp', 'ws', 'ble', 'espnow'] as const);

export function bindingCode(binding: string): number {
  for (let i = 1; i < BINDING_NAMES.length; i++) if (BINDING_NAMES[i] === binding) return i;
  return 0;
}

/** The hub's counters as the report reads them (hub/counters.ts HubCounters has this shape). */
export interface HealthCounterView {
  /** Pushes by §10.4 table row, index 1..15. */
  readonly rows: ArrayLike<number>;
  /** NACKs sent, by code. */
  readonly nacks: ArrayLike<number>;
  readonly delivered: number;
  readonly decimated: number;
  readonly conflated: number;
  readonly shedDrops: number;
  readonly egressDrops: number;
  readonly rateGated: number;
  readonly parks: number;
  readonly resumes: number;
  readonly estops: number;
  readonly reclaims: number;
  readonly neverShedOverflows: number;
  readonly grantsAnnounced: number;
  /** Sessions opened at their link's tier ceiling, below their credential's tier (§6.10). */
  readonly tierCapped: number;
}

/** One attached link: its slot, its binding's name (reported as a code), its §10.3 level, loss and queue occupancy. */
export interface LinkHealth {
  readonly slot: number;
  readonly binding: string;
  readonly level: number;
  /** 0..1; NaN on a binding that does not measure loss. */
  readonly loss: number;
  readonly occupancy: number;
}

export interface HealthInputs {
  readonly counters: HealthCounterView;
  readonly slots: number;
  readonly active: number;
  readonly stale: number;
  readonly latched: boolean;
  readonly links: readonly LinkHealth[];
  /** The current load (heap in bytes, NaN unknown; backlog; egress occupancy). */
  readonly load: Readonly<HubLoad>;
  readonly heapLimitBytes: number;
  /** Filled and finished for this report. */
  readonly ackLag: AckLagSummary;
  readonly admission: Admission;
  readonly ladder: Ladder;
  readonly governor: IngressGovernor;
}

/** The report's shape: every leaf a number, every key fixed (docs/operations.md "Health, admission and overload"). */
export interface HealthReport {
  readonly metrics: Record<string, unknown> & { readonly version: 1 };
}

/** Rounded to the µs for the report; an unknown or non-finite value reads -1 (never a healthy 0). */
export function num(x: number): number {
  if (!(x > -Infinity && x < Infinity)) return -1;
  return Math.round(x * 1000) / 1000;
}

function durations(w: Window60, now: number): Record<string, number> {
  const s = w.summary(now, WINDOW_BUCKETS);
  return { count: s.count, mean: num(s.mean), max: num(s.max), p95: num(s.p95) };
}

/**
 * The hub's metrics: the four duration windows, the tick bookkeeping that feeds two of them, and
 * the report. Every `record*` and `tick*` call is a few array writes, allocation-free.
 */
export class HealthMetrics {
  readonly loopDelay: Window60;
  readonly tick: Window60;
  readonly intentEcho: Window60;
  readonly egressWait: Window60;
  /** The period the host ticks the hub at, ms; 0: loop delay is not derived from tick gaps. */
  readonly tickPeriodMs: number;
  /** tickPeriodMs, or NaN when it is 0: a loop delay of NaN is not recorded. */
  private readonly period: number;
  private lastTickAt = NaN;
  private tickStart = NaN;

  constructor(tickPeriodMs = 0, histogram: Histogram = DURATION_HISTOGRAM) {
    this.tickPeriodMs = tickPeriodMs > 0 ? tickPeriodMs : 0;
    this.period = tickPeriodMs > 0 ? tickPeriodMs : NaN;
    // The four windows lie end to end in one buffer (on XS a buffer costs heap slots of its own).
    // Loop delay and tick are read at the admission view and the report's, the other two at the
    // report's only: they keep one view (window60.ts). Loop delay and tick record one sample a
    // tick: ticked every 4 ms or more (the device's tick_ms 10), a second holds at most 250, and
    // they count in bytes (a host that ticks faster widens them at its first fuller second).
    const c = this.tickPeriodMs >= TICKS_COUNTED_IN_BYTES_MS ? 1 : 2;
    const two = windowBytes(histogram, 2, c);
    const one = windowBytes(histogram, 1);
    const buffer = new ArrayBuffer(2 * two + 2 * one);
    this.loopDelay = new Window60(histogram, buffer, 0, 2, c);
    this.tick = new Window60(histogram, buffer, two, 2, c);
    this.intentEcho = new Window60(histogram, buffer, 2 * two, 1);
    this.egressWait = new Window60(histogram, buffer, 2 * two + one, 1);
  }

  /**
   * At the start of every hub tick. The loop delay is how much later than one period after the
   * previous tick this one began (the maintenance-timer delay); the first tick has
   * no previous one and records none.
   */
  tickBegan(now: number): void {
    const last = this.lastTickAt;
    if (this.tickPeriodMs > 0 && last === last) this.loopDelay.record(now - last - this.tickPeriodMs, now);
    this.lastTickAt = now;
    this.tickStart = now;
  }

  /** At the end of every hub tick: its duration. */
  tickEnded(now: number): void {
    const start = this.tickStart;
    if (start === start) this.tick.record(now - start, now);
    this.tickStart = NaN;
  }

  /**
   * A tick that began at `start` and ended at `end` with nothing read in between: the same as
   * tickBegan(start) and tickEnded(end), in one call (the tick with nothing due, 100 times a
   * second on the device). A sample of 0 (or less) within its window's newest second is
   * counted in place (Window60.zeros), as `record` would count it.
   */
  tickSpan(start: number, end: number): void {
    // NaN without a period or before the first tick: not recorded.
    const delay = start - this.lastTickAt - this.period;
    this.lastTickAt = start;
    this.tickStart = NaN;
    const w = this.loopDelay;
    if (delay <= 0 && start >= w.liveFrom && start < w.liveTo) w.zeros++;
    else w.record(delay, start);
    const t = this.tick;
    if (end - start <= 0 && end >= t.liveFrom && end < t.liveTo) t.zeros++;
    else t.record(end - start, end);
  }

  recordLoopDelay(ms: number, now: number): void {
    this.loopDelay.record(ms, now);
  }

  recordTick(ms: number, now: number): void {
    this.tick.record(ms, now);
  }

  /** An INTENT answered: from its arrival to its ECHO, ms. */
  recordIntentEcho(ms: number, now: number): void {
    this.intentEcho.record(ms, now);
  }

  /** A frame left an egress queue: how long it waited there, ms. */
  recordEgressWait(ms: number, now: number): void {
    this.egressWait.record(ms, now);
  }

  /** Fills the measured fields of `out` from the admission view (ADMISSION_WINDOW_S seconds). */
  sample(now: number, out: HubLoad, loopDelayLimitMs: number = ADMISSION_LOOP_DELAY_MS): HubLoad {
    const loopDelay = this.loopDelay;
    const max = loopDelay.maxOver(now, ADMISSION_WINDOW_S);
    out.loopDelayMaxMs = max;
    out.loopDelayClearsInMs = max > loopDelayLimitMs ? loopDelay.clearsInMs(now, ADMISSION_WINDOW_S, loopDelayLimitMs) : 0;
    const tick = this.tick;
    out.tickP95Ms = tick.p95Over(now, ADMISSION_WINDOW_S);
    out.tickCount = tick.viewCount;
    return out;
  }

  /** The detailed report (HEALTH frame and GET /api/operations/health). Allocates: on request only. */
  report(now: number, inputs: HealthInputs): HealthReport {
    const c = inputs.counters;
    const rows: number[] = [];
    for (let r = 1; r <= 15; r++) rows.push(num(c.rows[r] ?? 0));
    const nacks: Record<string, number> = {};
    for (let code = 1; code <= NACK_MAX_CODE; code++) nacks[nackName(code) as string] = num(c.nacks[code] ?? 0);
    const verdict = inputs.admission.peek(inputs.load);
    const refusals: Record<string, number> = {};
    for (let code = 1; code < ADMISSION_REASON_NAMES.length; code++) {
      refusals[camel(ADMISSION_REASON_NAMES[code] as string)] = num(inputs.admission.refusals[code] as number);
    }
    const links: Record<string, number>[] = [];
    for (const l of inputs.links) {
      links.push({ slot: num(l.slot), binding: bindingCode(l.binding), level: num(l.level), loss: num(l.loss), occupancy: num(l.occupancy) });
    }
    const a = inputs.ackLag;
    const g = inputs.governor;
    const ladder = inputs.ladder;
    const load = inputs.load;
    return {
      metrics: {
        version: METRICS_VERSION,
        atMs: num(now),
        windowS: WINDOW_BUCKETS,
        loopDelayMs: durations(this.loopDelay, now),
        tickMs: durations(this.tick, now),
        intentEchoMs: durations(this.intentEcho, now),
        egressWaitMs: durations(this.egressWait, now),
        pushes: {
          rows,
          delivered: num(c.delivered),
          decimated: num(c.decimated),
          conflated: num(c.conflated),
          shedDrops: num(c.shedDrops),
          egressDrops: num(c.egressDrops),
          rateGated: num(c.rateGated),
        },
        nacks,
        sessions: { slots: num(inputs.slots), active: num(inputs.active), stale: num(inputs.stale) },
        parks: num(c.parks),
        resumes: num(c.resumes),
        estops: num(c.estops),
        reclaims: num(c.reclaims),
        neverShedOverflows: num(c.neverShedOverflows),
        grantsAnnounced: num(c.grantsAnnounced),
        tierCapped: num(c.tierCapped),
        latched: inputs.latched ? 1 : 0,
        admission: {
          admitting: verdict.admit ? 1 : 0,
          reason: verdict.code,
          mask: verdict.mask,
          retryAfterMs: num(verdict.retryAfterMs),
          admitted: num(inputs.admission.admitted),
          resumes: num(inputs.admission.resumes),
          refusals,
        },
        ladder: {
          rung: ladder.state.rung,
          trigger: ladder.state.trigger,
          sinceMs: num(ladder.state.since),
          changes: num(ladder.state.changes),
          parks: num(ladder.parks),
        },
        ackLag: {
          sessions: a.sessions,
          measured: a.measured,
          max: num(a.max),
          p95: num(a.p95),
          state: a.state,
          lagState: a.lagState,
          levelState: a.levelState,
          congested: a.congested,
          severe: a.severe,
        },
        ingress: {
          sessionBytesPerS: g.sessionBytesPerS,
          hubBytesPerS: g.hubBytesPerS,
          hubUsed: num(g.hubUsed(now)),
          accepted: num(g.accepted),
          downsampleHints: num(g.downsampleHints),
          rejectedSession: num(g.rejectedSession),
          rejectedHub: num(g.rejectedHub),
          bytesAccepted: num(g.bytesAccepted),
          bytesRejected: num(g.bytesRejected),
        },
        egress: {
          occupancy: num(load.egressOccupancy),
          readerStalledLinks: num(load.readerStalledLinks),
          keepingUpLinks: num(load.keepingUpLinks),
          neverShedBacklogBytes: num(load.neverShedBacklogBytes),
        },
        links,
        heap: { usedBytes: num(load.heapUsedBytes), limitBytes: num(inputs.heapLimitBytes) },
      },
    };
  }
}

function camel(name: string): string {
  let out = '';
  for (let i = 0; i < name.length; i++) {
    const ch = name[i] as string;
    if (ch === '-' && i + 1 < name.length) out += (name[++i] as string).toUpperCase();
    else out += ch;
  }
  return out;
}

/** The coarse public report (GET /health): ready to admit new sessions or not, and the metrics version. */
export function coarseReport(admitting: boolean): { readonly ready: number; readonly metrics: { readonly version: 1 } } {
  return { ready: admitting ? 1 : 0, metrics: { version: METRICS_VERSION } };
}

// ------------------------------------------------------------------ privacy hooks (tests)

/**
 * The needles found anywhere in the report's JSON text (keys and values): the privacy test
 * passes client names, credentials, tokens and payload values and expects none back.
 */
export function findInReport(report: unknown, needles: readonly string[]): string[] {
  const text = JSON.stringify(report);
  const found: string[] = [];
  for (const n of needles) if (n.length > 0 && text.indexOf(n) >= 0) found.push(n);
  return found;
}

/** Paths of every leaf that is not a finite number (the report must have none). */
export function nonNumericLeaves(value: unknown, path = ''): string[] {
  const out: string[] = [];
  walk(value, path, out);
  return out;
}

function walk(v: unknown, path: string, out: string[]): void {
  if (typeof v === 'number') {
    if (!(v > -Infinity && v < Infinity)) out.push(path);
    return;
  }
  if (v === null || typeof v !== 'object') {
    out.push(path);
    return;
  }
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) walk(v[i], `${path}[${i}]`, out);
    return;
  }
  for (const k of Object.keys(v)) walk((v as Record<string, unknown>)[k], path ? `${path}.${k}` : k, out);
}

// ------------------------------------------------------------------ operator inspection (HTTP)

/** Reference 001: the operator token is 32–256 characters; unset disables the detailed endpoint. */
export const OPERATOR_TOKEN_MIN_CHARS = 32;
export const OPERATOR_TOKEN_MAX_CHARS = 256;
/** Our decision: per address, at most 5 detailed requests in any 10 s ... */
export const OPERATIONS_RATE_LIMIT = 5;
export const OPERATIONS_RATE_WINDOW_MS = 10000;
/** ... tracking at most 16 addresses (the least recently seen is forgotten first). */
export const OPERATIONS_TRACKED_ADDRESSES = 16;

/**
 * ... and over every address together, at most 20 failed (401) attempts in any 10 s: once that
 * many failed, every request is answered 429 without its token being evaluated until the oldest
 * failure leaves the window, so that rotating source addresses buys no more guesses.
 */
export const OPERATIONS_FAILED_LIMIT = 20;

/** HTTP statuses the gate answers with. */
export const OperatorStatus = Object.freeze({ OK: 200, UNAUTHORIZED: 401, NOT_FOUND: 404, TOO_MANY: 429 } as const);
export type OperatorStatusCode = (typeof OperatorStatus)[keyof typeof OperatorStatus];

export function operatorTokenUsable(token: string | undefined): token is string {
  return typeof token === 'string' && token.length >= OPERATOR_TOKEN_MIN_CHARS && token.length <= OPERATOR_TOKEN_MAX_CHARS;
}

/**
 * `Authorization: Bearer <token>` against the operator token, in time that depends on neither
 * where nor whether the characters differ (only on the lengths, which are not the secret).
 */
export function bearerMatches(authorization: string | undefined, token: string): boolean {
  const prefix = 'Bearer ';
  if (typeof authorization !== 'string' || authorization.length < prefix.length) return false;
  let diff = authorization.slice(0, prefix.length) === prefix ? 0 : 1;
  const la = authorization.length - prefix.length;
  const lb = token.length;
  const n = la > lb ? la : lb;
  diff |= la ^ lb;
  for (let i = 0; i < n; i++) {
    const x = i < la ? authorization.charCodeAt(prefix.length + i) : 0;
    const y = i < lb ? token.charCodeAt(i) : 0;
    diff |= x ^ y;
  }
  return diff === 0;
}

/**
 * The detailed endpoint's gate: disabled (404) without a usable token; per address a sliding
 * rate limit (429, checked before the token so that guessing costs the same budget); then the
 * bearer token (401). Addresses are kept in a fixed table, never in the report.
 */
export class OperatorGate {
  readonly enabled: boolean;
  private readonly token: string;
  private readonly addresses: string[] = [];
  private readonly seen: number[] = [];
  private readonly times: Float64Array;
  private readonly counts: Uint8Array;
  /** Failed attempts from every address, over the rate window. */
  private readonly failures = new WindowCounter(OPERATIONS_FAILED_LIMIT, OPERATIONS_RATE_WINDOW_MS);

  constructor(token: string | undefined) {
    this.enabled = operatorTokenUsable(token);
    this.token = this.enabled ? (token as string) : '';
    // Both in one buffer (on XS a buffer costs heap slots of its own).
    const n = OPERATIONS_TRACKED_ADDRESSES * OPERATIONS_RATE_LIMIT;
    const buffer = new ArrayBuffer(n * 8 + OPERATIONS_TRACKED_ADDRESSES);
    this.times = new Float64Array(buffer, 0, n);
    this.counts = new Uint8Array(buffer, n * 8, OPERATIONS_TRACKED_ADDRESSES);
  }

  check(address: string, authorization: string | undefined, now: number): OperatorStatusCode {
    if (!this.enabled) return OperatorStatus.NOT_FOUND;
    if (!this.take(address, now)) return OperatorStatus.TOO_MANY;
    if (this.failures.count(now) >= OPERATIONS_FAILED_LIMIT) return OperatorStatus.TOO_MANY;
    if (bearerMatches(authorization, this.token)) return OperatorStatus.OK;
    this.failures.add(now);
    return OperatorStatus.UNAUTHORIZED;
  }

  /** Seconds a 429 should name in Retry-After. */
  get retryAfterS(): number {
    return OPERATIONS_RATE_WINDOW_MS / 1000;
  }

  private take(address: string, now: number): boolean {
    let k = this.addresses.indexOf(address);
    if (k < 0) {
      if (this.addresses.length < OPERATIONS_TRACKED_ADDRESSES) {
        k = this.addresses.length;
        this.addresses.push(address);
        this.seen.push(now);
      } else {
        k = 0;
        for (let i = 1; i < this.seen.length; i++) if ((this.seen[i] as number) < (this.seen[k] as number)) k = i;
        this.addresses[k] = address;
      }
      this.counts[k] = 0;
    }
    this.seen[k] = now;
    const base = k * OPERATIONS_RATE_LIMIT;
    // The request times of this address, oldest first; those older than the period drop out.
    let n = this.counts[k] as number;
    let drop = 0;
    while (drop < n && now - (this.times[base + drop] as number) >= OPERATIONS_RATE_WINDOW_MS) drop++;
    if (drop > 0) {
      for (let i = drop; i < n; i++) this.times[base + i - drop] = this.times[base + i] as number;
      n -= drop;
    }
    if (n >= OPERATIONS_RATE_LIMIT) {
      this.counts[k] = n;
      return false;
    }
    this.times[base + n] = now;
    this.counts[k] = n + 1;
    return true;
  }
}
