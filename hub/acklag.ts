// The ack-lag summary (docs/operations.md "Health, admission and overload"): per session the
// frames sent on its current transport minus the frames its client has acknowledged (ACK key
// 28, §5.12 stream form), and over all sessions the max and the p95, classified none / watch /
// throttling / shedding. It is observational: it labels the hub for operators (health) and
// drives nothing by itself; the shedding is §10.4's and the hub ladder's (ladder.ts).
//
// Thresholds. Reference 000 pins 8 / 32 / 128 for a protocol whose clients acknowledge every
// snapshot. Ours acknowledge after every 32 frames and at least once a second (§13.2), so a
// healthy client's lag swings from its frames in flight up to 32 more than that: at 8 and 32
// every healthy client would read watch or throttling. The thresholds therefore sit on the
// numbers the Wi-Fi binding already reasons with (docs/protocol.md §13.5.6):
//   watch       ≥ 48  ACK_LAG_RECOVERED_FRAMES: no longer inside one healthy ACK cycle
//   throttling  ≥ 64  ACK_LAG_CONGESTED_FRAMES: the lag at which the §10.3 detector counts congestion
//   shedding    ≥ 128 DEFAULT_ACK_WINDOW_FRAMES: DATA waits in the egress queue; the top
// (test/core/acklag.test.ts holds each by value and against the binding's constants.)
//
// The second signal, is the links already degraded. Ours read their §10.3
// level, and the label says what the §10.4 table is doing to them: level 1 decimates and
// conflates (throttling), level ≥ 2 drops (shedding). The summary's state is the worse of the two.
//
// ESP-NOW acknowledges with the bitmap form (loss, §13.3), not a frame count: its sessions have
// no ack lag and contribute their level only (`add(NaN, level)`).

export const ACK_LAG_WATCH = 48;
export const ACK_LAG_THROTTLING = 64;
export const ACK_LAG_SHEDDING = 128;

/** Reference 000's wire classification, as codes (health reports numbers only). */
export const Backpressure = Object.freeze({ NONE: 0, WATCH: 1, THROTTLING: 2, SHEDDING: 3 } as const);
export type BackpressureCode = (typeof Backpressure)[keyof typeof Backpressure];
export const BACKPRESSURE_NAMES = Object.freeze(['none', 'watch', 'throttling', 'shedding'] as const);

/** Nearest-rank percentile the summary reports, in percent (integer arithmetic: no 0.95 × n rounding). */
export const ACK_LAG_PERCENTILE = 95;

// §10.3 levels as the table reads them (hub/constants.ts LEVEL_CONGESTED, LEVEL_SEVERE).
const CONGESTED = 1;
const SEVERE = 2;

/** One session's ack lag: frames sent on its transport not yet covered by the cumulative ACK. */
export function ackLagOf(sentFrames: number, ackedFrames: number): number {
  const lag = sentFrames - ackedFrames;
  return lag > 0 ? lag : 0;
}

/** A lag's label: the highest threshold it reaches. */
export function classifyAckLag(lag: number): BackpressureCode {
  if (lag >= ACK_LAG_SHEDDING) return Backpressure.SHEDDING;
  if (lag >= ACK_LAG_THROTTLING) return Backpressure.THROTTLING;
  if (lag >= ACK_LAG_WATCH) return Backpressure.WATCH;
  return Backpressure.NONE;
}

/** A §10.3 level's label: what the §10.4 table does at that level. */
export function classifyLevel(level: number): BackpressureCode {
  if (level >= SEVERE) return Backpressure.SHEDDING;
  if (level >= CONGESTED) return Backpressure.THROTTLING;
  return Backpressure.NONE;
}

/**
 * The summary over the hub's ACTIVE sessions, refilled on each reading: `reset()`, one `add`
 * per session, `finish()`. Sized to the slot count once; nothing is allocated per reading.
 */
export class AckLagSummary {
  private readonly lags: Float64Array;
  /** Sessions added (with or without an ack lag). */
  sessions = 0;
  /** Sessions that have an ack lag (stream ACKs). */
  measured = 0;
  max = 0;
  /** Nearest-rank p95 of the measured lags (below 20 sessions it is the max). */
  p95 = 0;
  /** Links at level ≥ 1 (decimating/conflating) and at level ≥ 2 (dropping). */
  congested = 0;
  severe = 0;
  lagState: BackpressureCode = Backpressure.NONE;
  levelState: BackpressureCode = Backpressure.NONE;
  /** The worse of the two. */
  state: BackpressureCode = Backpressure.NONE;

  constructor(readonly capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('AckLagSummary capacity must be an integer ≥ 1');
    this.lags = new Float64Array(capacity);
  }

  reset(): void {
    this.sessions = 0;
    this.measured = 0;
    this.max = 0;
    this.p95 = 0;
    this.congested = 0;
    this.severe = 0;
    this.lagState = Backpressure.NONE;
    this.levelState = Backpressure.NONE;
    this.state = Backpressure.NONE;
  }

  /** One ACTIVE session: its ack lag (NaN on a link without stream ACKs) and its §10.3 level. */
  add(lag: number, level: number): void {
    this.sessions++;
    if (level >= SEVERE) this.severe++;
    if (level >= CONGESTED) this.congested++;
    if (!(lag === lag) || this.measured === this.capacity) return;
    // Insertion keeps the lags sorted: at most `capacity` (the slot count) of them.
    let i = this.measured++;
    const v = lag > 0 ? lag : 0;
    const a = this.lags;
    while (i > 0 && (a[i - 1] as number) > v) {
      a[i] = a[i - 1] as number;
      i--;
    }
    a[i] = v;
  }

  finish(): this {
    const n = this.measured;
    if (n > 0) {
      this.max = this.lags[n - 1] as number;
      this.p95 = this.lags[Math.ceil((n * ACK_LAG_PERCENTILE) / 100) - 1] as number;
    } else {
      this.max = 0;
      this.p95 = 0;
    }
    // The p95 governs, so one straggler among many does not label the hub; below 20 sessions
    // (the hub's slot counts) the nearest-rank p95 is the max.
    this.lagState = classifyAckLag(this.p95);
    this.levelState = this.severe > 0 ? Backpressure.SHEDDING : this.congested > 0 ? Backpressure.THROTTLING : Backpressure.NONE;
    this.state = this.lagState > this.levelState ? this.lagState : this.levelState;
    return this;
  }
}
