// The shape of a bench case. One case module runs unchanged on Node (scripts/bench.mjs times
// it) and on the XS engine (the same file bundled into one script; the harness reads the
// engine's meters). Cases stay at ES2022 and use nothing platform-bound: no timers, no
// console, no Node modules; the harness owns every clock and every meter.

/**
 * A repeated operation. `setup` builds everything the operation touches (it may allocate);
 * `run(n)` performs the operation n times in steady state and returns how many items it
 * produced (deliveries for the route cases; n where one op is one item). The harness
 * subtracts a `run(0)` to remove the cost of the call itself, so `run` must do nothing per
 * call that it does not also do for n = 0 beyond the n operations.
 */
export interface OpBench {
  readonly kind: 'op';
  /** Stable id, used as the JSON key: `area.what`. */
  readonly name: string;
  /** One line for the table. */
  readonly title: string;
  /** The issue whose acceptance this number serves. */
  readonly issue: number;
  /** What one op is ("frame", "sample"), and one item ("delivery"); equal when 1:1. */
  readonly op: string;
  readonly item: string;
  /**
   * A case whose op this one includes once per item (the link's byte copy in every delivery):
   * the report adds the per-item cost less the baseline's per-op cost.
   */
  readonly baseline?: string;
  /** Ops per measured XS run; Node calibrates its own count. */
  readonly xsOps: number;
  setup(): void;
  run(n: number): number;
}

/** One measured step of a retained-memory case: what it creates and how many. */
export interface RetainedStep {
  readonly name: string;
  /** Number of things the step creates: the retained heap is reported divided by it. */
  readonly count: number;
  /** The thing, singular ("session", "subscription"). */
  readonly per: string;
}

/**
 * Memory kept alive by creating things. The harness collects garbage before and after each
 * step; what survives is the step's retained heap. Steps run in order on one state.
 */
export interface RetainedBench {
  readonly kind: 'retained';
  readonly name: string;
  readonly title: string;
  readonly issue: number;
  readonly steps: readonly RetainedStep[];
  /** Named sums of steps reported as one figure (e.g. 8 sessions × 16 subscriptions). */
  readonly totals: readonly { readonly name: string; readonly steps: readonly string[] }[];
  setup(): void;
  step(i: number): void;
}

export type Bench = OpBench | RetainedBench;
