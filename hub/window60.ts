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
// it: no timer, no sweep, nothing allocated per sample. A record is a few field writes; a view
// moves its totals on by the seconds that entered and left it (Window60).
//
// Memory, fixed at construction: per Window60 2,712 B of one ArrayBuffer, its own or its owner's
// (on XS every typed array is a view and a buffer of several heap slots each): two views' totals
// (Float64, 128 B), 60 sums and maxes and the bins of the newest second and the views (Float32,
// 660 B), 60 counts and 60 × 15 bins (Uint16, 1,920 B; as Uint8 960 B, 1,752 B in all); 128 B
// less keeping one view. The bounds are the histogram's, shared; no bucket keeps its second.

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
      if (!(b > 0 && b < Infinity) || (i > 0 && !(b > (bounds[i - 1] as number)))) throw new RangeError('Histogram bounds must be finite, positive and strictly ascending');
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

/** The bytes of one Window60 (its `views` and `countBytes`, see its constructor), rounded up to 8: windows can lie end to end in one buffer. */
export function windowBytes(h: Histogram, views = 2, countBytes = 2): number {
  return (views * V_SIZE * 8 + (LIVE + (1 + views) * h.bins) * 4 + (BINS_AT + WINDOW_BUCKETS * h.bins) * countBytes + 7) & ~7;
}

function bucketOf(second: number): number {
  const i = second % WINDOW_BUCKETS;
  return i < 0 ? i + WINDOW_BUCKETS : i;
}

/** A bucket's count saturates here (Uint32). */
const COUNT_SATURATION = 0xffffffff;
// The Float64Array: the views (1 or 2). `f32`: the buckets' sums at [0, 60), their maxes from MAXES, the newest second's bins from LIVE, then each view's (counts below 2^24: exact; past 0xffff they read as saturated).
const MAXES = WINDOW_BUCKETS;
const LIVE = 2 * WINDOW_BUCKETS;
const VIEWS = 0;
// A view's totals: its span (first), the completed seconds [lo, hi] it holds, their count, their
// max, the newest of them holding it (−Infinity: none), and the second and newest second it was
// last brought up to date at. (Its bins in f32 follow the newest second's.)
const V_LO = 1;
const V_HI = 2;
const V_COUNT = 3;
const V_MAX = 4;
const V_MAX_AT = 5;
const V_CUR = 6;
const V_NEWEST = 7;
const V_SIZE = 8;
// binCounts: the buckets' counts at [0, 60), then bucket i's bins from BINS_AT + i × bins.
const BINS_AT = WINDOW_BUCKETS;

/**
 * Sixty one-second buckets of one duration, each with its count, sum, max and histogram.
 *
 * The newest second recorded (`newest`) is kept in fields of its own and stored in its bucket
 * when a record moves `newest` on; the buckets of the seconds it passes are emptied. Bucket i
 * then holds the completed second s ≡ i (mod 60) in (newest − 60, newest), which no longer
 * changes: no bucket holds a second that has left the window, none needs a stamp of its second.
 *
 * A view of S seconds is the newest second, when in it, and its completed seconds, whose totals
 * (count, max, bins) are kept for the spans read last and moved a second at a time. Bins above a
 * bucket's max's are empty: only those up to it are read or stored. The sum is added up when
 * asked (the report), in the order that fixes its rounding.
 */
export class Window60 {
  readonly histogram: Histogram;
  /** The views' totals; the sums, maxes and bins (see LIVE): Float32 while each sum and max is exactly one (whole-ms durations are), then a Float64Array of its own (store). */
  private readonly f64: Float64Array;
  private f32: Float32Array | Float64Array;
  /** Per bucket its count, then its histogram (see BINS_AT); an array of its own, wider, after a count it cannot hold (store). */
  private binCounts: Uint8Array | Uint16Array | Uint32Array;
  /** The latest second recorded: its totals are the live* fields and `zeros`. */
  private newest = -Infinity;
  /** @internal The newest second's times, [liveFrom, liveTo), and its samples counted as 0: a value ≤ 0 recorded at such a time may be counted here in place of `record` (HealthMetrics.tickSpan). */
  liveFrom = NaN;
  /** @internal */ liveTo = NaN;
  /** @internal */ zeros = 0;
  // The newest second's samples over 0: their count, sum and max (its bins: f32 from LIVE).
  private liveCount = 0;
  private liveSum = 0;
  private liveMax = 0;
  /** Samples recorded before the newest second, since construction. */
  private earlier = 0;
  /** The view read last: a third span replaces the other one. */
  private lastView = VIEWS;
  /** Set by view(): the newest second is in the view just read. */
  private live = false;
  /** The count of the view p95Over read last. */
  viewCount = 0;

  /**
   * Its windowBytes(histogram, views, countBytes) at `at` (8-aligned) of `buffer` when given, else
   * a buffer of its own. `views`: the spans it keeps totals of, 2 or 1 (a span not kept is added up
   * afresh, to the same result). `countBytes`: 1 for a window recording at most 255 samples a
   * second (one a tick, ticks ≥ 4 ms apart), else 2; a count that does not fit widens them (store).
   */
  constructor(histogram: Histogram = DURATION_HISTOGRAM, buffer?: ArrayBuffer, at = 0, views = 2, countBytes = 2) {
    if (views !== 1 && views !== 2) throw new RangeError('Window60 keeps 1 or 2 views');
    if (countBytes !== 1 && countBytes !== 2) throw new RangeError('Window60 counts in 1 or 2 bytes');
    this.histogram = histogram;
    const bins = histogram.bins;
    const f64 = views * V_SIZE;
    const f32 = LIVE + (1 + views) * bins;
    const b = buffer ?? new ArrayBuffer(windowBytes(histogram, views, countBytes));
    const f = new Float64Array(b, at, f64);
    this.f64 = f;
    this.f32 = new Float32Array(b, at + f64 * 8, f32);
    this.binCounts = new (countBytes === 1 ? Uint8Array : Uint16Array)(b, at + f64 * 8 + f32 * 4, BINS_AT + WINDOW_BUCKETS * bins);
    for (let k = VIEWS; k < f64; k += V_SIZE) f[k + V_LO] = f[k + V_NEWEST] = NaN;
  }

  /** Samples recorded since construction (not windowed). */
  get total(): number {
    return this.earlier + this.liveCount + this.zeros;
  }

  /**
   * One sample at `now` (ms). A negative value (clock jitter) counts as 0; NaN and infinities are
   * ignored. A clock that steps back records into the newest second.
   */
  record(value: number, now: number): void {
    if (!(value < Infinity)) return;
    if (!(now >= this.liveFrom && now < this.liveTo) && !this.enter(now)) return;
    if (value <= 0) {
      // 0 (a negative counted as 0): the sum and the max stand.
      this.zeros++;
      return;
    }
    this.liveCount++;
    this.liveSum += value;
    if (value > this.liveMax) this.liveMax = value;
    let bin = 0;
    if (value > (this.histogram.bounds[0] as number)) {
      const bounds = this.histogram.bounds;
      bin = 1;
      while (bin < bounds.length && value > (bounds[bin] as number)) bin++;
    }
    this.f32[LIVE + bin]!++;
  }

  // Makes `now`'s second the newest (storing the newest one and emptying the buckets of the
  // seconds passed), or keeps the newest for a clock that stepped back; false for a time that
  // is no finite number.
  private enter(now: number): boolean {
    if (!(now > -Infinity && now < Infinity)) return false;
    const sec = Math.floor(now / BUCKET_MS);
    const newest = this.newest;
    if (sec <= newest) return true;
    this.earlier += this.liveCount + this.zeros;
    if (sec - newest < WINDOW_BUCKETS) {
      this.store(newest);
      for (let s = newest + 1; s < sec; s++) this.binCounts[bucketOf(s)] = 0;
    } else {
      // Every second held has left the window.
      this.binCounts.fill(0, 0, WINDOW_BUCKETS);
      this.f32.fill(0, LIVE, LIVE + this.histogram.bins);
    }
    this.liveCount = 0;
    this.zeros = 0;
    this.liveSum = 0;
    this.liveMax = 0;
    this.newest = sec;
    this.liveFrom = sec * BUCKET_MS;
    this.liveTo = this.liveFrom + BUCKET_MS;
    return true;
  }

  // The newest second into its bucket, its bins emptied for the next.
  private store(sec: number): void {
    const i = bucketOf(sec);
    const c = this.liveCount + this.zeros;
    const m = this.liveMax;
    // A count wider than the counts (no bin exceeds it), a sum or max no Float32: to a wider array of its own (never on the device).
    if (c > 0xff && (c > 0xffff ? !(this.binCounts instanceof Uint32Array) : this.binCounts instanceof Uint8Array)) this.binCounts = c > 0xffff ? Uint32Array.from(this.binCounts) : Uint16Array.from(this.binCounts);
    const bc = this.binCounts;
    bc[i] = c < COUNT_SATURATION ? c : COUNT_SATURATION;
    let u = this.f32;
    u[i] = this.liveSum;
    u[MAXES + i] = m;
    if ((u[i] !== this.liveSum || u[MAXES + i] !== m) && u instanceof Float32Array) {
      u = this.f32 = Float64Array.from(u);
      u[i] = this.liveSum;
      u[MAXES + i] = m;
    }
    if (c === 0) return;
    const bounds = this.histogram.bounds;
    const base = BINS_AT + i * this.histogram.bins;
    // The bins up to the max's: none above it holds a sample.
    let x = (u[LIVE] as number) + this.zeros;
    for (let b = 0; ; ) {
      bc[base + b] = x < BIN_SATURATION ? x : BIN_SATURATION;
      u[LIVE + b] = 0;
      if (b === bounds.length || m <= (bounds[b] as number)) break;
      x = u[LIVE + ++b] as number;
    }
  }

  // The view of `seconds` at `now`, its completed seconds' totals brought up to date; returns
  // its index in f64 and sets `live` when the newest second is in it.
  private view(now: number, seconds: number): number {
    const cur = Math.floor(now / BUCKET_MS);
    const f = this.f64;
    const k = this.lastView;
    // The same view at the same second as the last read, no second recorded since: as it was.
    if (f[k] === seconds && f[k + V_CUR] === cur && f[k + V_NEWEST] === this.newest) return k;
    return this.viewAt(cur, seconds);
  }

  private viewAt(cur: number, seconds: number): number {
    const n = clampSeconds(seconds);
    const f = this.f64;
    let k = VIEWS;
    if (f[k] !== n) {
      // With two views, the other one, or the one not read last; with one, itself.
      if (f.length > VIEWS + V_SIZE) k = f[VIEWS + V_SIZE] === n ? VIEWS + V_SIZE : this.lastView === VIEWS ? VIEWS + V_SIZE : VIEWS;
      if (f[k] !== n) {
        f[k] = n;
        f[k + V_LO] = NaN;
      }
    }
    this.lastView = k;
    // The completed seconds of the view: [cur − n + 1, cur] ∩ (newest − 60, newest).
    const newest = this.newest;
    let lo = cur - n + 1;
    if (lo <= newest - WINDOW_BUCKETS) lo = newest - WINDOW_BUCKETS + 1;
    const hi = cur < newest ? cur : newest - 1;
    if (lo !== f[k + V_LO] || hi !== f[k + V_HI]) this.move(k, lo, hi);
    f[k + V_CUR] = cur;
    f[k + V_NEWEST] = newest;
    this.live = newest <= cur && newest >= lo;
    return k;
  }

  // The view at k to the completed seconds [lo, hi]: by the seconds that left it and those that
  // entered it (a second at either end, usually) while the seconds it holds overlap those and
  // are all still in the window, else afresh.
  private move(k: number, lo: number, hi: number): void {
    const f = this.f64;
    const u = this.f32;
    const from = f[k + V_LO] as number;
    const to = f[k + V_HI] as number;
    f[k + V_LO] = lo;
    f[k + V_HI] = hi;
    const intact = from <= to && from > this.newest - WINDOW_BUCKETS;
    if (intact && (lo === from || lo === from + 1) && (hi === to || hi === to + 1)) {
      if (lo > from && this.binCounts[bucketOf(from)] !== 0) {
        this.bucket(k, bucketOf(from), -1);
        if (f[k + V_MAX_AT] === from) this.maxOf(k, lo, to);
      }
      if (hi > to) this.add(k, hi);
      return;
    }
    let s0 = lo;
    if (intact && from <= hi && to >= lo && (lo > from ? lo - from : from - lo) + (hi > to ? hi - to : to - hi) <= hi - lo) {
      const keepLo = lo > from ? lo : from;
      const keepHi = hi < to ? hi : to;
      const bc = this.binCounts;
      for (let s = from; s < keepLo; s++) if (bc[bucketOf(s)] !== 0) this.bucket(k, bucketOf(s), -1);
      for (let s = keepHi + 1; s <= to; s++) if (bc[bucketOf(s)] !== 0) this.bucket(k, bucketOf(s), -1);
      const maxAt = f[k + V_MAX_AT] as number;
      // The newest second holding the max left: the max of those that stay.
      if (maxAt < keepLo || maxAt > keepHi) this.maxOf(k, keepLo, keepHi);
      for (let s = lo; s < keepLo; s++) this.add(k, s);
      s0 = keepHi + 1;
    } else {
      f[k + V_COUNT] = 0;
      f[k + V_MAX] = 0;
      f[k + V_MAX_AT] = -Infinity;
      const bins = this.histogram.bins;
      const ub = k === VIEWS ? LIVE + bins : LIVE + 2 * bins;
      u.fill(0, ub, ub + bins);
    }
    for (let s = s0; s <= hi; s++) this.add(k, s);
  }

  // Adds the completed second s to the view at k, its max the view's when at least as large
  // (the view's max is held by its newest second holding it).
  private add(k: number, s: number): void {
    const i = bucketOf(s);
    if (this.binCounts[i] === 0) return;
    this.bucket(k, i, 1);
    const f = this.f64;
    const m = this.f32[MAXES + i] as number;
    const max = f[k + V_MAX] as number;
    if (m > max || (m === max && s > (f[k + V_MAX_AT] as number))) {
      f[k + V_MAX] = m;
      f[k + V_MAX_AT] = s;
    }
  }

  // Adds (sign 1) or takes away (sign −1) bucket i's count and bins to the view at k: the bins
  // up to its max's, none above holding a sample.
  private bucket(k: number, i: number, sign: number): void {
    const f = this.f64;
    const u = this.f32;
    const bc = this.binCounts;
    const bounds = this.histogram.bounds;
    const m = this.f32[MAXES + i] as number;
    const bins = this.histogram.bins;
    const ub = k === VIEWS ? LIVE + bins : LIVE + 2 * bins;
    const base = BINS_AT + i * bins;
    f[k + V_COUNT] = (f[k + V_COUNT] as number) + sign * (bc[i] as number);
    for (let b = 0; ; b++) {
      u[ub + b] = (u[ub + b] as number) + sign * (bc[base + b] as number);
      if (b === bounds.length || m <= (bounds[b] as number)) break;
    }
  }

  // The view's max and the newest second holding it, over the completed seconds s0 … s1.
  private maxOf(k: number, s0: number, s1: number): void {
    const f = this.f64;
    let max = 0;
    let maxAt = -Infinity;
    for (let s = s0; s <= s1; s++) {
      const i = bucketOf(s);
      if (this.binCounts[i] !== 0 && (this.f32[MAXES + i] as number) >= max) {
        max = this.f32[MAXES + i] as number;
        maxAt = s;
      }
    }
    f[k + V_MAX] = max;
    f[k + V_MAX_AT] = maxAt;
  }

  /** Samples in the view of the last `seconds` seconds (current one included) at `now`. */
  countOver(now: number, seconds: number = WINDOW_BUCKETS): number {
    const count = this.f64[this.view(now, seconds) + V_COUNT] as number;
    if (!this.live) return count;
    const c = this.liveCount + this.zeros;
    return count + (c < COUNT_SATURATION ? c : COUNT_SATURATION);
  }

  sumOver(now: number, seconds: number = WINDOW_BUCKETS): number {
    const cur = Math.floor(now / BUCKET_MS);
    const n = clampSeconds(seconds);
    const newest = this.newest;
    let sum = 0;
    // The seconds of the view before the current one, newest first (the window's part of
    // [cur − n + 1, cur − 1]), then the current second.
    const from = cur - 1 < newest ? cur - 1 : newest;
    const to = cur - n > newest - WINDOW_BUCKETS ? cur - n : newest - WINDOW_BUCKETS;
    for (let s = from; s > to; s--) sum += this.sumOf(s);
    return cur <= newest && cur > newest - WINDOW_BUCKETS ? sum + this.sumOf(cur) : sum;
  }

  private sumOf(s: number): number {
    return s === this.newest ? this.liveSum : (this.binCounts[bucketOf(s)] as number) > 0 ? (this.f32[bucketOf(s)] as number) : 0;
  }

  /** The largest sample in the view; 0 when it is empty. */
  maxOver(now: number, seconds: number = WINDOW_BUCKETS): number {
    const max = this.f64[this.view(now, seconds) + V_MAX] as number;
    return this.live && this.liveMax > max ? this.liveMax : max;
  }

  meanOver(now: number, seconds: number = WINDOW_BUCKETS): number {
    const c = this.countOver(now, seconds);
    return c > 0 ? this.sumOver(now, seconds) / c : 0;
  }

  /**
   * The conservative p95 of the view: the upper bound of the bin holding the nearest-rank 95th
   * percentile sample, capped by the view's max; 0 when it is empty. `viewCount` is left at the
   * view's count.
   */
  p95Over(now: number, seconds: number = WINDOW_BUCKETS): number {
    // view(now, seconds), its first case inline: the ladder reads this every LOAD_PERIOD_MS.
    const cur = Math.floor(now / BUCKET_MS);
    const f = this.f64;
    let k = this.lastView;
    if (!(f[k] === seconds && f[k + V_CUR] === cur && f[k + V_NEWEST] === this.newest)) k = this.viewAt(cur, seconds);
    let count = f[k + V_COUNT] as number;
    let max = f[k + V_MAX] as number;
    const live = this.live;
    let zeros = 0;
    if (live) {
      zeros = this.zeros;
      const c = this.liveCount + zeros;
      count += c < COUNT_SATURATION ? c : COUNT_SATURATION;
      if (this.liveMax > max) max = this.liveMax;
    }
    this.viewCount = count;
    if (count === 0) return 0;
    const rank = Math.ceil((count * HEALTH_PERCENTILE) / 100);
    const u = this.f32;
    const bins = this.histogram.bins;
    const ub = k === VIEWS ? LIVE + bins : LIVE + 2 * bins;
    // The newest second's bins as its bucket will hold them: its zeros in bin 0, saturated.
    let x = live ? (u[LIVE] as number) + zeros : 0;
    let cum = 0;
    for (let b = 0; ; ) {
      cum += (u[ub + b] as number) + (x < BIN_SATURATION ? x : BIN_SATURATION);
      if (cum >= rank) {
        const bounds = this.histogram.bounds;
        const upper = b < bounds.length ? (bounds[b] as number) : Infinity;
        return upper < max ? upper : max;
      }
      if (++b === bins) break;
      x = live ? (u[LIVE + b] as number) : 0;
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
    const newest = this.newest;
    for (let k = 0; k < n; k++) {
      const s = cur - k;
      if (s > newest || s <= newest - WINDOW_BUCKETS) continue;
      const i = bucketOf(s);
      const c = s === newest ? this.liveCount + this.zeros : (this.binCounts[i] as number);
      const m = s === newest ? this.liveMax : (this.f32[MAXES + i] as number);
      if (c > 0 && m > limit) return (s + n) * BUCKET_MS - now;
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
    this.liveFrom = this.liveTo = NaN;
    this.liveCount = this.zeros = this.liveSum = this.liveMax = this.earlier = 0;
    this.f32.fill(0, LIVE, LIVE + this.histogram.bins);
    for (let k = VIEWS; k < this.f64.length; k += V_SIZE) this.f64[k + V_LO] = this.f64[k + V_NEWEST] = NaN;
  }
}

function clampSeconds(seconds: number): number {
  if (!(seconds >= 1)) return 1;
  return seconds > WINDOW_BUCKETS ? WINDOW_BUCKETS : Math.floor(seconds);
}
