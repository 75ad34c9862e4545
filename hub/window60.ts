// The duration windows of measured health (docs/operations.md "Health, admission and overload"):
// sixty one-second buckets with fixed histogram boundaries, giving the count, mean, max and p95
// of any view up to sixty seconds long, the p95 a conservative bucket upper bound capped by the
// observed max. Admission reads its 10-second view, the report the whole window; health.ts
// keeps four (loop delay, tick, intent echo, egress wait).
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
// bucket keeps the second it holds (Window60).

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
