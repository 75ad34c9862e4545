// Collectors the simulator fills while it runs and the report reads at the end. Percentiles are
// nearest-rank over every sample (no sketch, no interpolation): exact and order-independent, so
// the same run always reports the same numbers.

/** A growable list of numbers with exact nearest-rank percentiles. */
export class Samples {
  private data = new Float64Array(256);
  private n = 0;
  private sorted = true;
  private maxV = -Infinity;
  private sum = 0;

  add(x: number): void {
    if (this.n === this.data.length) {
      const d = new Float64Array(this.data.length * 2);
      d.set(this.data);
      this.data = d;
    }
    if (this.n > 0 && x < (this.data[this.n - 1] as number)) this.sorted = false;
    this.data[this.n++] = x;
    if (x > this.maxV) this.maxV = x;
    this.sum += x;
  }

  get count(): number {
    return this.n;
  }

  get max(): number {
    return this.n === 0 ? NaN : this.maxV;
  }

  get mean(): number {
    return this.n === 0 ? NaN : this.sum / this.n;
  }

  /** Nearest rank: the smallest sample with at least p·n samples at or below it. NaN when empty. */
  percentile(p: number): number {
    if (this.n === 0) return NaN;
    if (!this.sorted) {
      this.data.subarray(0, this.n).sort();
      this.sorted = true;
    }
    const rank = Math.max(1, Math.ceil(p * this.n));
    return this.data[Math.min(rank, this.n) - 1] as number;
  }

  /** {count, p50, p95, p99, max} for the report. */
  summary(): { count: number; p50: number; p95: number; p99: number; max: number } {
    return { count: this.n, p50: this.percentile(0.5), p95: this.percentile(0.95), p99: this.percentile(0.99), max: this.max };
  }
}
