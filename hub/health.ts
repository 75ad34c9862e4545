// Measured health, `metrics.version: 1` (docs/operations.md "Health, admission and overload"). Durations are kept in
// sixty one-second buckets with fixed histogram boundaries: count, mean, max and p95, the p95 a
// conservative bucket upper bound capped by the observed max. Counters come from the hub. The
// report holds numbers under fixed keys only: no client names, credentials, tokens or payloads,
// no per-client labels (a link row carries its slot index and a binding code, nothing else).
//
// Ageing: bucket = floor(now / 1000). A view of S seconds at `now` covers the current second and
// the S − 1 before it, so a sample recorded in second k is in the 10-second admission view
// until (k + 10) × 1000 − 1 and in the 60-second window until (k + 60) × 1000 − 1, and leaves
// each exactly at that boundary. A bucket is emptied when a record moves the newest second past
// it: no timer, no sweep, nothing allocated per sample.
//
// Memory, fixed at construction: per Window60 one ArrayBuffer of 3,060 B (on XS every typed
// array is a view and a buffer of several heap slots each, so the arrays share one): 60 sums and
// maxes (Float64, 960 B), 60 counts and a cached view's bins (Uint32, 300 B) and 60 × 15 Uint16
// bins (1800 B). The bounds are the histogram's own frozen array, shared by every window; no
// bucket keeps the second it holds (Window60). HealthMetrics holds four.

import { ADMISSION_LOOP_DELAY_MS, ADMISSION_REASON_NAMES, ADMISSION_WINDOW_S, type Admission, type AdmissionSignals } from './admission.js';
import type { AckLagSummary } from './acklag.js';
import type { IngressGovernor } from './governor.js';
import type { Ladder, LadderSignals } from './ladder.js';
import { NACK_MAX_CODE, nackName } from './nack.js';
import { WindowCounter } from './limits.js';

export const METRICS_VERSION = 1;
/** Reference 001: sixty one-second buckets. */
export const WINDOW_BUCKETS = 60;
export const BUCKET_MS = 1000;
/** Reference 001: the p95 reported (nearest rank, in percent: integer arithmetic). */
export const HEALTH_PERCENTILE = 95;
/**
 * Fixed histogram upper bounds, ms (a value v falls in the first bin whose bound is ≥ v; above
 * the last bound, the overflow bin). Our decision. The admission thresholds (250 ms loop delay,
 * the default 25 ms tick budget) and the ladder's tick rungs at that budget (0.8, 1, 1.25, 1.5
 * and 2 × 25 ms) are bounds, so "p95 exceeds the threshold" reads exactly there: the
 * conservative p95 exceeds a bound if and only if the true nearest-rank p95 does.
 */
export const DURATION_BOUNDS_MS: readonly number[] = Object.freeze([1, 2, 5, 10, 20, 25, 31.25, 37.5, 50, 100, 250, 500, 1000, 5000]);
/** Per bucket and bin, counts saturate here (Uint16); the p95 then falls back to the max. */
export const BIN_SATURATION = 0xffff;

/** Fixed histogram boundaries: which bin a value falls in and that bin's upper bound. */
export class Histogram {
  readonly bounds: readonly number[];
  /** Bins: one per bound and the overflow bin. */
  readonly bins: number;

  constructor(bounds: readonly number[]) {
    for (let i = 0; i < bounds.length; i++) {
      const b = bounds[i] as number;
      if (!(b > 0 && b < Infinity) || (i > 0 && !(b > (bounds[i - 1] as number)))) {
        throw new RangeError('Histogram bounds must be finite, positive and strictly ascending');
      }
    }
    this.bounds = Object.freeze(bounds.slice());
    this.bins = bounds.length + 1;
    Object.freeze(this);
  }

  binOf(value: number): number {
    const b = this.bounds;
    let i = 0;
    while (i < b.length && value > (b[i] as number)) i++;
    return i;
  }

  /** The bin's upper bound; Infinity for the overflow bin. */
  upperOf(bin: number): number {
    return bin < this.bounds.length ? (this.bounds[bin] as number) : Infinity;
  }
}

export const DURATION_HISTOGRAM = new Histogram(DURATION_BOUNDS_MS);

export interface DurationSummary {
  readonly count: number;
  readonly mean: number;
  readonly max: number;
  readonly p95: number;
}

function bucketOf(second: number): number {
  const i = second % WINDOW_BUCKETS;
  return i < 0 ? i + WINDOW_BUCKETS : i;
}

/**
 * Sixty one-second buckets of one duration, each with its count, sum, max and histogram.
 *
 * Bucket i holds the second s ≡ i (mod 60) in (newest − 60, newest], `newest` being the latest
 * second recorded: when a record moves `newest` on, the buckets of the seconds it passes are
 * emptied, so a bucket never holds a second that has left the window, and no bucket needs a
 * stamp of its second. A second outside that range is in no bucket.
 *
 * Two caches keep the hot calls cheap, neither changing a result: `record` keeps the current
 * second's bucket (no division while the second lasts), and the views keep the totals of their
 * completed seconds (the S − 1 before the current one), which cannot change until the second
 * turns; a view then adds the current bucket alone.
 */
export class Window60 {
  readonly histogram: Histogram;
  private readonly sums: Float64Array;
  private readonly maxes: Float64Array;
  private readonly counts: Uint32Array;
  /** Per bucket its histogram: bucket i's bins at [i × bins, (i + 1) × bins). */
  private readonly binCounts: Uint16Array;
  /** The cached view's bins. */
  private readonly cacheBins: Uint32Array;
  /** The latest second recorded: the buckets hold the seconds (newest − 60, newest]. */
  private newest = -Infinity;
  // The bucket of the newest second, valid for now in [curStart, curStart + BUCKET_MS).
  private curStart = NaN;
  private curSec = NaN;
  private curIndex = 0;
  // Totals of the completed seconds of the last view asked for: seconds (cacheSec − cacheSpan, cacheSec).
  private cacheSec = NaN;
  private cacheSpan = 0;
  private cacheCount = 0;
  private cacheSum = 0;
  private cacheMax = 0;
  /** Samples recorded since construction (not windowed). */
  total = 0;

  constructor(histogram: Histogram = DURATION_HISTOGRAM) {
    this.histogram = histogram;
    const bins = histogram.bins;
    const n = WINDOW_BUCKETS;
    const buffer = new ArrayBuffer(2 * n * 8 + (n + bins) * 4 + n * bins * 2);
    this.sums = new Float64Array(buffer, 0, n);
    this.maxes = new Float64Array(buffer, n * 8, n);
    this.counts = new Uint32Array(buffer, 2 * n * 8, n);
    this.cacheBins = new Uint32Array(buffer, 2 * n * 8 + n * 4, bins);
    this.binCounts = new Uint16Array(buffer, 2 * n * 8 + (n + bins) * 4, n * bins);
  }

  /**
   * One sample at `now` (ms). A negative value (clock jitter) counts as 0; NaN and infinities are
   * ignored. A clock that steps back records into the newest second.
   */
  record(value: number, now: number): void {
    if (!(value < Infinity)) return;
    const v = value > 0 ? value : 0;
    let i = this.curIndex;
    if (!(now >= this.curStart && now < this.curStart + BUCKET_MS)) {
      i = this.enter(now);
      if (i < 0) return;
    } else if (this.curSec < this.cacheSec) {
      // A view read at a time ahead of the records counts this second as completed.
      this.cacheSec = NaN;
    }
    const bounds = this.histogram.bounds;
    let bin = 0;
    while (bin < bounds.length && v > (bounds[bin] as number)) bin++;
    const c = this.counts[i] as number;
    if (c < 0xffffffff) this.counts[i] = c + 1;
    this.sums[i] = (this.sums[i] as number) + v;
    if (v > (this.maxes[i] as number)) this.maxes[i] = v;
    const k = i * this.histogram.bins + bin;
    const b = this.binCounts[k] as number;
    if (b < BIN_SATURATION) this.binCounts[k] = b + 1;
    this.total++;
  }

  // The bucket a record at `now` goes to (emptying the buckets of the seconds `newest` moves
  // past); -1 for a time that is no finite number.
  private enter(now: number): number {
    if (!(now > -Infinity && now < Infinity)) return -1;
    let sec = Math.floor(now / BUCKET_MS);
    const newest = this.newest;
    if (sec <= newest) {
      sec = newest;
      // A second a cached view counts as completed is written (views read at a time ahead of the records).
      if (sec < this.cacheSec) this.cacheSec = NaN;
    }
    const i = bucketOf(sec);
    if (sec > newest) {
      // The buckets of the seconds moved past: any skipped since the last record, and the new one's.
      if (sec - newest >= WINDOW_BUCKETS) {
        this.counts.fill(0);
        this.sums.fill(0);
        this.maxes.fill(0);
        this.binCounts.fill(0);
      } else {
        for (let s = newest + 1; s < sec; s++) this.empty(bucketOf(s));
        const bins = this.histogram.bins;
        this.counts[i] = 0;
        this.sums[i] = 0;
        this.maxes[i] = 0;
        this.binCounts.fill(0, i * bins, i * bins + bins);
      }
      this.newest = sec;
      // The emptied buckets may have held seconds a cached view counts.
      this.cacheSec = NaN;
    }
    this.curIndex = i;
    this.curSec = sec;
    this.curStart = sec * BUCKET_MS;
    // Only the newest second is the current bucket; a record from a clock that stepped back
    // takes this slow path each time.
    if (now < this.curStart) this.curStart = NaN;
    return i;
  }

  private empty(i: number): void {
    const bins = this.histogram.bins;
    this.counts[i] = 0;
    this.sums[i] = 0;
    this.maxes[i] = 0;
    this.binCounts.fill(0, i * bins, i * bins + bins);
  }

  // Totals of seconds cur − n + 1 … cur − 1 into the cache, unless it holds them already.
  private completed(cur: number, n: number): void {
    if (this.cacheSec === cur && this.cacheSpan === n) return;
    const bins = this.histogram.bins;
    const acc = this.cacheBins;
    acc.fill(0);
    let count = 0;
    let sum = 0;
    let max = 0;
    // The seconds of the view that have buckets: (newest − 60, newest] ∩ [cur − n + 1, cur − 1].
    const newest = this.newest;
    const from = cur - 1 < newest ? cur - 1 : newest;
    const to = cur - n > newest - WINDOW_BUCKETS ? cur - n : newest - WINDOW_BUCKETS;
    for (let s = from; s > to; s--) {
      const i = bucketOf(s);
      if (this.counts[i] === 0) continue;
      count += this.counts[i] as number;
      sum += this.sums[i] as number;
      if ((this.maxes[i] as number) > max) max = this.maxes[i] as number;
      const base = i * bins;
      for (let b = 0; b < bins; b++) acc[b] = (acc[b] as number) + (this.binCounts[base + b] as number);
    }
    this.cacheSec = cur;
    this.cacheSpan = n;
    this.cacheCount = count;
    this.cacheSum = sum;
    this.cacheMax = max;
  }

  /** Samples in the view of the last `seconds` seconds (current one included) at `now`. */
  countOver(now: number, seconds: number = WINDOW_BUCKETS): number {
    const cur = Math.floor(now / BUCKET_MS);
    this.completed(cur, clampSeconds(seconds));
    return this.cacheCount + ((cur === this.newest || (cur < this.newest && cur > this.newest - WINDOW_BUCKETS)) ? (this.counts[bucketOf(cur)] as number) : 0);
  }

  sumOver(now: number, seconds: number = WINDOW_BUCKETS): number {
    const cur = Math.floor(now / BUCKET_MS);
    this.completed(cur, clampSeconds(seconds));
    return this.cacheSum + ((cur === this.newest || (cur < this.newest && cur > this.newest - WINDOW_BUCKETS)) ? (this.sums[bucketOf(cur)] as number) : 0);
  }

  /** The largest sample in the view; 0 when it is empty. */
  maxOver(now: number, seconds: number = WINDOW_BUCKETS): number {
    const cur = Math.floor(now / BUCKET_MS);
    this.completed(cur, clampSeconds(seconds));
    const m = (cur === this.newest || (cur < this.newest && cur > this.newest - WINDOW_BUCKETS)) ? (this.maxes[bucketOf(cur)] as number) : 0;
    return m > this.cacheMax ? m : this.cacheMax;
  }

  meanOver(now: number, seconds: number = WINDOW_BUCKETS): number {
    const c = this.countOver(now, seconds);
    return c > 0 ? this.sumOver(now, seconds) / c : 0;
  }

  /**
   * The conservative p95 of the view: the upper bound of the bin holding the nearest-rank 95th
   * percentile sample, capped by the view's max; 0 when the view is empty.
   */
  p95Over(now: number, seconds: number = WINDOW_BUCKETS): number {
    const cur = Math.floor(now / BUCKET_MS);
    this.completed(cur, clampSeconds(seconds));
    const bins = this.histogram.bins;
    const i = bucketOf(cur);
    const live = (cur === this.newest || (cur < this.newest && cur > this.newest - WINDOW_BUCKETS));
    const count = this.cacheCount + (live ? (this.counts[i] as number) : 0);
    if (count === 0) return 0;
    const liveMax = live ? (this.maxes[i] as number) : 0;
    const max = liveMax > this.cacheMax ? liveMax : this.cacheMax;
    const rank = Math.ceil((count * HEALTH_PERCENTILE) / 100);
    const acc = this.cacheBins;
    const base = i * bins;
    let cum = 0;
    for (let b = 0; b < bins; b++) {
      cum += (acc[b] as number) + (live ? (this.binCounts[base + b] as number) : 0);
      if (cum >= rank) {
        const bounds = this.histogram.bounds;
        const upper = b < bounds.length ? (bounds[b] as number) : Infinity;
        return upper < max ? upper : max;
      }
    }
    // Saturated bins: the rank lies beyond what they hold; the max is the safe answer.
    return max;
  }

  /**
   * Ms from `now` until every second of the view whose max exceeds `limit` has left it (0 when
   * none does): the second k leaves a view of S seconds at (k + S) × 1000.
   */
  clearsInMs(now: number, seconds: number, limit: number): number {
    const cur = Math.floor(now / BUCKET_MS);
    const n = clampSeconds(seconds);
    for (let k = 0; k < n; k++) {
      const i = bucketOf(cur - k);
      if (cur - k <= this.newest && cur - k > this.newest - WINDOW_BUCKETS && (this.counts[i] as number) > 0 && (this.maxes[i] as number) > limit) return (cur - k + n) * BUCKET_MS - now;
    }
    return 0;
  }

  /** count, mean, max and p95 of the view (allocates the summary: for reports, not hot paths). */
  summary(now: number, seconds: number = WINDOW_BUCKETS): DurationSummary {
    return {
      count: this.countOver(now, seconds),
      mean: this.meanOver(now, seconds),
      max: this.maxOver(now, seconds),
      p95: this.p95Over(now, seconds),
    };
  }

  /** Forgets every sample: the next record empties every bucket. */
  clear(): void {
    this.newest = -Infinity;
    this.curStart = NaN;
    this.cacheSec = NaN;
    this.total = 0;
  }
}

function clampSeconds(seconds: number): number {
  if (!(seconds >= 1)) return 1;
  return seconds > WINDOW_BUCKETS ? WINDOW_BUCKETS : Math.floor(seconds);
}

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

/** The hub's counters as the report reads them (hub/hub.ts HubCounters has this shape). */
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
function num(x: number): number {
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
  private lastTickAt = NaN;
  private tickStart = NaN;

  constructor(tickPeriodMs = 0, histogram: Histogram = DURATION_HISTOGRAM) {
    this.tickPeriodMs = tickPeriodMs > 0 ? tickPeriodMs : 0;
    this.loopDelay = new Window60(histogram);
    this.tick = new Window60(histogram);
    this.intentEcho = new Window60(histogram);
    this.egressWait = new Window60(histogram);
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
    const max = this.loopDelay.maxOver(now, ADMISSION_WINDOW_S);
    out.loopDelayMaxMs = max;
    out.loopDelayClearsInMs = max > loopDelayLimitMs ? this.loopDelay.clearsInMs(now, ADMISSION_WINDOW_S, loopDelayLimitMs) : 0;
    out.tickP95Ms = this.tick.p95Over(now, ADMISSION_WINDOW_S);
    out.tickCount = this.tick.countOver(now, ADMISSION_WINDOW_S);
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
    this.times = new Float64Array(OPERATIONS_TRACKED_ADDRESSES * OPERATIONS_RATE_LIMIT);
    this.counts = new Uint8Array(OPERATIONS_TRACKED_ADDRESSES);
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
