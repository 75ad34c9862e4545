import {
  ACK_BITMAP_BITS,
  ACK_LAG_CONGESTED_FRAMES,
  ACK_LAG_RECOVERED_FRAMES,
  Condition,
  LOSS_ACK_TIMEOUT_MS,
  LOSS_BUCKETS,
  LOSS_BUCKET_MS,
  LOSS_BYTES,
  LOSS_NUMBERS,
  LOSS_MIN_RESOLVED,
  LOSS_RING,
  LOSS_THRESHOLDS,
  LOSS_WINDOW_MS,
  LossDetector,
  RELIEF_WINDOW_MS,
  SATURATED_SIGNAL,
  SATURATED_WINDOW_MS,
  SEQ_MASK,
  SEVERE_LOSS,
  SEVERE_WATERMARK,
  SEVERE_WINDOW_MS,
  WATERMARK_THRESHOLDS,
  STALE_HOLD_MS,
  WatermarkDetector,
  classify,
} from '../../bindings/detector.js';
import {
  CONGESTED_LOSS,
  CONGESTED_WATERMARK,
  CONGESTION_WINDOW_MS,
  RECOVERED_LOSS,
  RECOVERED_WATERMARK,
  RECOVERY_WINDOW_MS,
} from '../../hub/constants.js';
import { equal, ok, throws } from '../lib/assert.js';
import { runs } from '../lib/env.js';

// Every trace runs on a virtual clock: times are plain numbers handed to the detector.
const EPS = 1e-9;

describe('bindings/detector: numbers', () => {
  it('§10.3 pinned thresholds and windows, as the detectors read them', () => {
    equal(WATERMARK_THRESHOLDS.congested, 0.5);
    equal(WATERMARK_THRESHOLDS.recovered, 0.2);
    equal(LOSS_THRESHOLDS.congested, 0.1);
    equal(LOSS_THRESHOLDS.recovered, 0.02);
    equal(WATERMARK_THRESHOLDS.congested, CONGESTED_WATERMARK);
    equal(WATERMARK_THRESHOLDS.recovered, RECOVERED_WATERMARK);
    equal(LOSS_THRESHOLDS.congested, CONGESTED_LOSS);
    equal(LOSS_THRESHOLDS.recovered, RECOVERED_LOSS);
    equal(CONGESTION_WINDOW_MS, 1000);
    equal(RECOVERY_WINDOW_MS, 5000);
    ok(Object.isFrozen(WATERMARK_THRESHOLDS) && Object.isFrozen(LOSS_THRESHOLDS) && Object.isFrozen(Condition));
  });

  it('our level-2 definition: > 90 % / > 30 % for 1 s, saturated for 500 ms, back to 1 below 50 % / 10 % for 1 s', () => {
    equal(SEVERE_WATERMARK, 0.9);
    equal(SEVERE_LOSS, 0.3);
    equal(WATERMARK_THRESHOLDS.severe, SEVERE_WATERMARK);
    equal(LOSS_THRESHOLDS.severe, SEVERE_LOSS);
    equal(SEVERE_WINDOW_MS, 1000);
    equal(SATURATED_SIGNAL, 1);
    equal(SATURATED_WINDOW_MS, 500);
    equal(RELIEF_WINDOW_MS, 1000);
  });

  it('ack lag: congested above 64 frames, recovered below 48 (32 frames per client ACK + 16 in flight)', () => {
    equal(ACK_LAG_CONGESTED_FRAMES, 64);
    equal(ACK_LAG_RECOVERED_FRAMES, 48);
  });

  it('ESP-NOW loss accounting: 16-bit sequence, 32-bit bitmask, ring 64, timeout 200 ms, 10 × 100 ms window, denominator ≥ 10', () => {
    equal(SEQ_MASK, 0xffff);
    equal(ACK_BITMAP_BITS, 32);
    equal(LOSS_RING, 64);
    equal(LOSS_RING, 2 * ACK_BITMAP_BITS);
    equal(LOSS_ACK_TIMEOUT_MS, 200);
    equal(LOSS_WINDOW_MS, 1000);
    equal(LOSS_BUCKETS, 10);
    equal(LOSS_BUCKET_MS, 100);
    equal(LOSS_MIN_RESOLVED, 10);
  });
});

describe('bindings/detector: classify', () => {
  const C = Condition;
  const table: ReadonlyArray<readonly [number, number, number]> = [
    // [signal, watermark conditions, loss conditions]
    [-1, C.BELOW_CONGESTED | C.BELOW_RECOVERED, C.BELOW_CONGESTED | C.BELOW_RECOVERED],
    [0, C.BELOW_CONGESTED | C.BELOW_RECOVERED, C.BELOW_CONGESTED | C.BELOW_RECOVERED],
    [0.02 - EPS, C.BELOW_CONGESTED | C.BELOW_RECOVERED, C.BELOW_CONGESTED | C.BELOW_RECOVERED],
    [0.02, C.BELOW_CONGESTED | C.BELOW_RECOVERED, C.BELOW_CONGESTED],
    [0.1 - EPS, C.BELOW_CONGESTED | C.BELOW_RECOVERED, C.BELOW_CONGESTED],
    [0.1, C.BELOW_CONGESTED | C.BELOW_RECOVERED, 0],
    [0.1 + EPS, C.BELOW_CONGESTED | C.BELOW_RECOVERED, C.ABOVE_CONGESTED],
    [0.2 - EPS, C.BELOW_CONGESTED | C.BELOW_RECOVERED, C.ABOVE_CONGESTED],
    [0.2, C.BELOW_CONGESTED, C.ABOVE_CONGESTED],
    [0.3, C.BELOW_CONGESTED, C.ABOVE_CONGESTED],
    [0.3 + EPS, C.BELOW_CONGESTED, C.ABOVE_CONGESTED | C.ABOVE_SEVERE],
    [0.5 - EPS, C.BELOW_CONGESTED, C.ABOVE_CONGESTED | C.ABOVE_SEVERE],
    [0.5, 0, C.ABOVE_CONGESTED | C.ABOVE_SEVERE],
    [0.5 + EPS, C.ABOVE_CONGESTED, C.ABOVE_CONGESTED | C.ABOVE_SEVERE],
    [0.9, C.ABOVE_CONGESTED, C.ABOVE_CONGESTED | C.ABOVE_SEVERE],
    [0.9 + EPS, C.ABOVE_CONGESTED | C.ABOVE_SEVERE, C.ABOVE_CONGESTED | C.ABOVE_SEVERE],
    [1 - EPS, C.ABOVE_CONGESTED | C.ABOVE_SEVERE, C.ABOVE_CONGESTED | C.ABOVE_SEVERE],
    [1, C.ABOVE_CONGESTED | C.ABOVE_SEVERE | C.SATURATED, C.ABOVE_CONGESTED | C.ABOVE_SEVERE | C.SATURATED],
    [3, C.ABOVE_CONGESTED | C.ABOVE_SEVERE | C.SATURATED, C.ABOVE_CONGESTED | C.ABOVE_SEVERE | C.SATURATED],
    [NaN, 0, 0],
  ];
  for (const [signal, wm, loss] of table) {
    it(`signal ${signal}: watermark ${wm}, loss ${loss}`, () => {
      equal(classify(signal, WATERMARK_THRESHOLDS), wm, 'watermark');
      equal(classify(signal, LOSS_THRESHOLDS), loss, 'loss');
    });
  }
});

// ---------------------------------------------------------------------------------------------
// The hysteresis machine, through the watermark detector (exact ratios).

const T0 = 10_000;

/** A watermark detector at `level`, reached by a signal held from 0; `T0` is past the transition. */
function watermarkAt(level: 0 | 1 | 2): WatermarkDetector {
  const d = new WatermarkDetector(0);
  const signal = level === 0 ? 0.1 : level === 1 ? 0.7 : 0.95;
  d.sample(signal, 0);
  d.tick(T0 - 1);
  equal(d.level(), level, 'setup level');
  return d;
}

/** From `from`, the signal steps to `ratio` at T0 and is judged again only at T0 + `after`. */
function afterStep(from: 0 | 1 | 2, ratio: number, after: number): WatermarkDetector {
  const d = watermarkAt(from);
  d.sample(ratio, T0);
  d.tick(T0 + after);
  return d;
}

type Row = readonly [from: 0 | 1 | 2, ratio: number, after: number, level: number];

function levelTable(title: string, rows: readonly Row[]): void {
  describe(title, () => {
    for (const [from, ratio, after, level] of rows) {
      it(`level ${from}, ratio ${ratio} for ${after} ms → level ${level}`, () => {
        const began = watermarkAt(from).since();
        const d = afterStep(from, ratio, after);
        equal(d.level(), level);
        equal(d.since(), level === from ? began : T0 + after, 'since: the first sample at or after the window end');
        equal(d.ratio(), ratio);
      });
    }
  });
}

levelTable('watermark 0 → 1: above 50 % for 1 s', [
  [0, 0.5, 999, 0], [0, 0.5, 1000, 0], [0, 0.5, 1001, 0], [0, 0.5, 60_000, 0],
  [0, 0.5 - EPS, 1001, 0],
  [0, 0.5 + EPS, 999, 0], [0, 0.5 + EPS, 1000, 1], [0, 0.5 + EPS, 1001, 1],
  [0, 0.7, 999, 0], [0, 0.7, 1000, 1], [0, 0.7, 1001, 1], [0, 0.7, 60_000, 1],
  [0, 0.9, 999, 0], [0, 0.9, 1000, 1], [0, 0.9, 1001, 1], [0, 0.9, 60_000, 1],
  [0, 0.35, 60_000, 0],
]);

levelTable('watermark → 2: above 90 % for 1 s (straight from 0 too)', [
  [0, 0.9 + EPS, 999, 0], [0, 0.9 + EPS, 1000, 2], [0, 0.9 + EPS, 1001, 2],
  [1, 0.9, 999, 1], [1, 0.9, 1000, 1], [1, 0.9, 1001, 1], [1, 0.9, 60_000, 1],
  [1, 0.9 + EPS, 999, 1], [1, 0.9 + EPS, 1000, 2], [1, 0.9 + EPS, 1001, 2],
  [1, 0.99, 999, 1], [1, 0.99, 1000, 2],
]);

levelTable('watermark → 2: queue full (≥ 100 %) for 500 ms', [
  [0, 1, 499, 0], [0, 1, 500, 2], [0, 1, 501, 2],
  [0, 1.5, 499, 0], [0, 1.5, 500, 2],
  [0, 1 - EPS, 500, 0], [0, 1 - EPS, 999, 0], [0, 1 - EPS, 1000, 2],
  [1, 1, 499, 1], [1, 1, 500, 2], [1, 1, 501, 2],
]);

levelTable('watermark 2 → 1: below 50 % for 1 s', [
  [2, 0.5, 999, 2], [2, 0.5, 1000, 2], [2, 0.5, 1001, 2], [2, 0.5, 60_000, 2],
  [2, 0.7, 60_000, 2], [2, 0.9, 60_000, 2],
  [2, 0.5 - EPS, 999, 2], [2, 0.5 - EPS, 1000, 1], [2, 0.5 - EPS, 1001, 1], [2, 0.5 - EPS, 60_000, 1],
  [2, 0.2, 999, 2], [2, 0.2, 1000, 1], [2, 0.2, 60_000, 1],
]);

levelTable('watermark 1 → 0: below 20 % for 5 s', [
  [1, 0.2, 4999, 1], [1, 0.2, 5000, 1], [1, 0.2, 5001, 1], [1, 0.2, 60_000, 1],
  [1, 0.35, 60_000, 1], [1, 0.5, 60_000, 1],
  [1, 0.2 - EPS, 4999, 1], [1, 0.2 - EPS, 5000, 0], [1, 0.2 - EPS, 5001, 0],
  [1, 0, 4999, 1], [1, 0, 5000, 0], [1, 0, 5001, 0],
]);

describe('watermark 2 → 0: the 5 s recovery runs from when the signal fell, even at level 2', () => {
  for (const ratio of [0, 0.2 - EPS]) {
    it(`ratio ${ratio}`, () => {
      const d = watermarkAt(2);
      d.sample(ratio, T0);
      const at = (t: number): number => {
        d.tick(T0 + t);
        return d.level();
      };
      equal(at(999), 2);
      equal(at(1000), 1);
      equal(d.since(), T0 + 1000);
      equal(at(4999), 1);
      equal(at(5000), 0);
      equal(d.since(), T0 + 5000);
      equal(at(5001), 0);
    });
  }
});

describe('watermark: time, not sample count, decides', () => {
  for (const every of [1, 7, 250, 1000]) {
    it(`the same level at every boundary when sampled every ${every} ms`, () => {
      const d = watermarkAt(0);
      for (let t = 0; t < 1000; t += every) {
        d.sample(0.7, T0 + t);
        equal(d.level(), 0, `at ${t} ms`);
      }
      d.tick(T0 + 999);
      equal(d.level(), 0, 'at 999 ms');
      d.sample(0.7, T0 + 1000);
      equal(d.level(), 1, 'at 1000 ms');
      equal(d.since(), T0 + 1000);
    });
  }

  it('with no sample at 1000 ms the level moves at the first sample after it', () => {
    const d = watermarkAt(0);
    d.sample(0.7, T0);
    d.sample(0.7, T0 + 600);
    d.sample(0.7, T0 + 1250);
    equal(d.level(), 1);
    equal(d.since(), T0 + 1250);
  });
});

describe('watermark: one dip restarts the window', () => {
  const dips: readonly number[] = [0.5, 0.4, 0.1, 0, NaN];
  for (const dip of dips) {
    it(`0 → 1: a dip to ${dip} at 600 ms restarts the 1 s window`, () => {
      const d = watermarkAt(0);
      d.sample(0.7, T0);
      d.sample(dip, T0 + 600);
      d.sample(0.7, T0 + 700);
      d.tick(T0 + 1000);
      equal(d.level(), 0, 'not at 1000');
      d.tick(T0 + 1699);
      equal(d.level(), 0, 'not at 1699');
      d.tick(T0 + 1700);
      equal(d.level(), 1, '1 s after the dip ended');
    });
  }

  it('0 → 1 control: a sample still above 50 % at 600 ms restarts nothing', () => {
    const d = watermarkAt(0);
    d.sample(0.7, T0);
    d.sample(0.5 + EPS, T0 + 600);
    d.sample(0.7, T0 + 700);
    d.tick(T0 + 1000);
    equal(d.level(), 1);
  });

  for (const dip of [0.2, 0.3, NaN]) {
    it(`1 → 0: a rise to ${dip} at 4000 ms restarts the 5 s window`, () => {
      const d = watermarkAt(1);
      d.sample(0.1, T0);
      d.sample(dip, T0 + 4000);
      d.sample(0.1, T0 + 4100);
      d.tick(T0 + 5000);
      equal(d.level(), 1, 'not at 5000');
      d.tick(T0 + 9099);
      equal(d.level(), 1, 'not at 9099');
      d.tick(T0 + 9100);
      equal(d.level(), 0, '5 s after the rise ended');
    });
  }

  it('1 → 0 control: a sample still below 20 % at 4000 ms restarts nothing', () => {
    const d = watermarkAt(1);
    d.sample(0.1, T0);
    d.sample(0.2 - EPS, T0 + 4000);
    d.sample(0.1, T0 + 4100);
    d.tick(T0 + 5000);
    equal(d.level(), 0);
  });

  for (const dip of [0.9, 0.6]) {
    it(`1 → 2: a dip to ${dip} at 500 ms restarts the severe window`, () => {
      const d = watermarkAt(1);
      d.sample(0.95, T0);
      d.sample(dip, T0 + 500);
      d.sample(0.95, T0 + 600);
      d.tick(T0 + 1000);
      equal(d.level(), 1);
      d.tick(T0 + 1599);
      equal(d.level(), 1);
      d.tick(T0 + 1600);
      equal(d.level(), 2);
    });
  }

  for (const dip of [0.5, 0.7]) {
    it(`2 → 1: a rise to ${dip} at 500 ms restarts the relief window`, () => {
      const d = watermarkAt(2);
      d.sample(0.3, T0);
      d.sample(dip, T0 + 500);
      d.sample(0.3, T0 + 600);
      d.tick(T0 + 1000);
      equal(d.level(), 2);
      d.tick(T0 + 1599);
      equal(d.level(), 2);
      d.tick(T0 + 1600);
      equal(d.level(), 1);
    });
  }

  it('full: a dip to 95 % restarts the 500 ms saturation window but not the 1 s severe one', () => {
    const d = watermarkAt(0);
    d.sample(1, T0);
    d.sample(0.95, T0 + 300);
    d.sample(1, T0 + 400);
    d.tick(T0 + 899);
    equal(d.level(), 0);
    d.tick(T0 + 900);
    equal(d.level(), 2);
    equal(d.since(), T0 + 900);
  });

  it('full: a dip to 90 % restarts both, and the severe window wins after it', () => {
    const d = watermarkAt(0);
    d.sample(1, T0);
    d.sample(0.9, T0 + 300);
    d.sample(0.95, T0 + 400);
    d.tick(T0 + 1000);
    equal(d.level(), 1, 'above 50 % throughout: level 1 at 1 s');
    d.tick(T0 + 1399);
    equal(d.level(), 1);
    d.tick(T0 + 1400);
    equal(d.level(), 2);
  });
});

describe('watermark: holds, since(), reset, odd input', () => {
  it('between the thresholds every level holds for a minute', () => {
    for (const [from, ratio] of [[0, 0.2], [0, 0.35], [0, 0.5], [1, 0.2], [1, 0.35], [1, 0.5], [2, 0.5], [2, 0.7], [2, 0.9]] as const) {
      const d = watermarkAt(from);
      const began = d.since();
      for (let t = 0; t <= 60_000; t += 100) d.sample(ratio, T0 + t);
      equal(d.level(), from, `level ${from} at ${ratio}`);
      equal(d.since(), began, 'never moved');
    }
  });

  it('NaN holds every level', () => {
    for (const from of [0, 1, 2] as const) {
      const d = watermarkAt(from);
      d.sample(NaN, T0);
      d.tick(T0 + 60_000);
      equal(d.level(), from);
    }
  });

  it('since() follows 0 → 1 → 2 → 1 → 0', () => {
    const d = new WatermarkDetector(5);
    equal(d.since(), 5);
    equal(d.level(), 0);
    d.sample(0.6, 100);
    d.tick(1100);
    equal(d.level(), 1);
    equal(d.since(), 1100);
    d.sample(0.95, 2000);
    d.tick(3000);
    equal(d.level(), 2);
    equal(d.since(), 3000);
    d.sample(0.3, 4000);
    d.tick(5000);
    equal(d.level(), 1);
    equal(d.since(), 5000);
    d.sample(0.1, 6000);
    d.tick(11_000);
    equal(d.level(), 0);
    equal(d.since(), 11_000);
  });

  it('reset(now): level 0 from now, signal and lag forgotten, windows restarted', () => {
    const d = watermarkAt(2);
    d.ackLag(100, T0);
    d.sample(0.7, T0);
    d.reset(T0 + 500);
    equal(d.level(), 0);
    equal(d.since(), T0 + 500);
    equal(d.ratio(), 0);
    equal(d.lag(), 0);
    d.tick(T0 + 5000);
    equal(d.level(), 0, 'the 0.7 before the reset does not count');
    d.sample(0.7, T0 + 6000);
    d.tick(T0 + 6999);
    equal(d.level(), 0);
    d.tick(T0 + 7000);
    equal(d.level(), 1);
  });

  it('samples at the same instant are one sample: the last counts, a zero-length dip restarts nothing', () => {
    const d = watermarkAt(0);
    d.sample(0.7, T0);
    d.sample(0.1, T0 + 600);
    d.sample(0.7, T0 + 600);
    d.tick(T0 + 1000);
    equal(d.level(), 1);
  });

  it('a level reached at an instant stands when a later sample at the same instant falls back', () => {
    const d = watermarkAt(0);
    d.sample(0.7, T0);
    d.sample(0.7, T0 + 1000);
    equal(d.level(), 1);
    d.sample(0.3, T0 + 1000);
    equal(d.level(), 1, 'above 50 % held for the whole second up to T0 + 1000');
    equal(d.since(), T0 + 1000);
    d.sample(0.1, T0 + 1000);
    d.tick(T0 + 5999);
    equal(d.level(), 1);
    d.tick(T0 + 6000);
    equal(d.level(), 0, 'the recovery window ran from the last sample at T0 + 1000');
  });

  it('a zero-length dip at the instant a window completes does not stop the transition', () => {
    const d = watermarkAt(0);
    d.sample(0.7, T0);
    d.sample(0.3, T0 + 1000);
    equal(d.level(), 0, 'the dip is the last sample so far');
    d.sample(0.7, T0 + 1000);
    equal(d.level(), 1, 'the last sample at T0 + 1000 is above: the run from T0 stands');
  });

  it('a time earlier than one already seen is read as the latest', () => {
    const d = new WatermarkDetector(0);
    d.sample(0.7, 1000);
    d.sample(0.7, 400);
    d.tick(1999);
    equal(d.level(), 0, 'the window began at 1000, not 400');
    d.tick(2000);
    equal(d.level(), 1);
    d.tick(2500);
    d.sample(0.1, 1500);
    equal(d.level(), 1);
    equal(d.since(), 2000, 'since never moves back');
    d.tick(7499);
    equal(d.level(), 1, 'the recovery window began at 2500, not 1500');
    d.tick(7500);
    equal(d.level(), 0);
  });
});

describe('watermark: ack lag (TCP, WebSocket)', () => {
  const entry: ReadonlyArray<readonly [number, number, number]> = [
    [64, 999, 0], [64, 1000, 0], [64, 1001, 0], [64, 60_000, 0],
    [65, 999, 0], [65, 1000, 1], [65, 1001, 1],
    [10_000, 999, 0], [10_000, 1000, 1], [10_000, 60_000, 1],
  ];
  for (const [lag, after, level] of entry) {
    it(`empty queue, lag ${lag} frames for ${after} ms → level ${level} (lag never makes level 2)`, () => {
      const d = watermarkAt(0);
      d.sample(0, T0);
      d.ackLag(lag, T0);
      d.tick(T0 + after);
      equal(d.level(), level);
      equal(d.lag(), lag);
      equal(d.ratio(), 0);
    });
  }

  const recovery: ReadonlyArray<readonly [number, number, number]> = [
    [48, 4999, 1], [48, 5000, 1], [48, 5001, 1], [48, 60_000, 1],
    [56, 60_000, 1], [64, 60_000, 1],
    [47, 4999, 1], [47, 5000, 0], [47, 5001, 0],
    [0, 4999, 1], [0, 5000, 0],
  ];
  for (const [lag, after, level] of recovery) {
    it(`level 1, queue empty, lag ${lag} frames for ${after} ms → level ${level}`, () => {
      const d = watermarkAt(1);
      d.ackLag(lag, T0);
      d.sample(0, T0);
      d.tick(T0 + after);
      equal(d.level(), level);
    });
  }

  it('lag holds level 1 but not level 2: severe falls back when the queue drains, whatever the lag', () => {
    const d = watermarkAt(2);
    d.ackLag(1000, T0);
    d.sample(0.3, T0);
    d.tick(T0 + 999);
    equal(d.level(), 2);
    d.tick(T0 + 1000);
    equal(d.level(), 1);
    d.tick(T0 + 60_000);
    equal(d.level(), 1, 'and the lag keeps it at 1');
  });

  it('the queue and the lag hand the window over without a gap', () => {
    const d = watermarkAt(0);
    d.sample(0.7, T0);
    d.ackLag(65, T0 + 400);
    d.sample(0.3, T0 + 600);
    d.tick(T0 + 999);
    equal(d.level(), 0);
    d.tick(T0 + 1000);
    equal(d.level(), 1, 'above the threshold on one input or the other since T0');
  });

  it('a client acking every 32 frames with 15 in flight recovers; with 16 in flight it does not', () => {
    for (const [inFlight, level] of [[15, 0], [16, 1]] as const) {
      const d = watermarkAt(1);
      d.sample(0, T0);
      // 200 frames/s, one every 5 ms. The client's ACK for 32 frames reaches the hub 2 ms after
      // the frame that brings the lag to 32 + inFlight: the lag peaks there and drops to inFlight.
      let sent = 0;
      let acked = 0;
      for (let t = T0; t <= T0 + 6000; t += 5) {
        sent++;
        d.ackLag(sent - acked, t);
        if (sent - acked === 32 + inFlight) {
          acked += 32;
          d.ackLag(sent - acked, t + 2);
        }
      }
      equal(d.level(), level, `${inFlight} in flight`);
    }
  });

  it('the order of the two inputs within one instant does not matter', () => {
    const d = watermarkAt(0);
    d.sample(0.7, T0);
    d.sample(0.3, T0 + 600);
    d.ackLag(65, T0 + 600);
    d.tick(T0 + 1000);
    equal(d.level(), 1);
  });

  it('control: without the lag the same queue trace restarts the window', () => {
    const d = watermarkAt(0);
    d.sample(0.7, T0);
    d.ackLag(64, T0 + 400);
    d.sample(0.3, T0 + 600);
    d.tick(T0 + 1000);
    equal(d.level(), 0);
  });

  it('a lag dip restarts the window like a queue dip', () => {
    const d = watermarkAt(0);
    d.ackLag(100, T0);
    d.ackLag(64, T0 + 500);
    d.ackLag(100, T0 + 501);
    d.tick(T0 + 1500);
    equal(d.level(), 0);
    d.tick(T0 + 1501);
    equal(d.level(), 1);
  });

  it('the thresholds are options', () => {
    const d = new WatermarkDetector(0, { ackLagCongestedFrames: 8, ackLagRecoveredFrames: 3 });
    d.ackLag(9, 0);
    d.tick(1000);
    equal(d.level(), 1);
    d.ackLag(3, 1001);
    d.tick(60_000);
    equal(d.level(), 1, '3 is not below 3');
    d.ackLag(2, 60_000);
    d.tick(65_000);
    equal(d.level(), 0);
  });
});

// ---------------------------------------------------------------------------------------------
// The backlog a link carries (docs/protocol.md §13.5.1): what a link finds queued at each take.

interface QueueTrace {
  /** Queue capacity, in units (notifications, bytes). */
  readonly cap: number;
  /** The core offers one frame of `unit` units at a time, `offer` frames every `tickMs`, each refused when it does not fit. */
  readonly unit: number;
  readonly offer: number;
  readonly tickMs: number;
  /** The link takes up to `take` units every `everyMs` (a connection event, a segment, a datagram). */
  readonly take: number;
  readonly everyMs: number;
  readonly ms: number;
  /** How the link feeds the detector: as the bindings do (`backlog`), or the occupancy after every change (`after`). */
  readonly feed: 'backlog' | 'after';
  /** Offers stop after this (default: never). */
  readonly offerUntilMs?: number;
}

interface TraceResult {
  d: WatermarkDetector;
  levels: number[];
  /** First time (ms from T0) at level 1 and at level 2, -1 if never. */
  at1: number;
  at2: number;
  /** The lowest and highest occupancy right after a take, from 100 ms on (past the first fill). */
  trough: number;
  peak: number;
}

/** Runs a queue and its link in 1 ms steps from T0, feeding a fresh detector as `feed` says. */
function queueTrace(o: QueueTrace): TraceResult {
  const d = new WatermarkDetector(T0);
  let q = 0;
  let at1 = -1;
  let at2 = -1;
  const levels: number[] = [];
  let trough = Infinity;
  let peak = 0;
  for (let ms = 1; ms <= o.ms; ms++) {
    const t = T0 + ms;
    if (ms % o.tickMs === 0 && ms <= (o.offerUntilMs ?? Infinity)) {
      let added = false;
      for (let k = 0; k < o.offer && q + o.unit <= o.cap; k++) {
        q += o.unit;
        added = true;
      }
      if (added) {
        if (o.feed === 'backlog') d.queued(q / o.cap, t);
        else d.sample(q / o.cap, t);
      }
    }
    if (ms % o.everyMs === 0 && q > 0) {
      const before = q;
      q = q > o.take ? q - o.take : 0;
      if (o.feed === 'backlog') d.drained(before / o.cap, q / o.cap, t);
      else d.sample(q / o.cap, t);
      if (ms >= 100 && q / o.cap < trough) trough = q / o.cap;
      if (ms >= 100 && q / o.cap > peak) peak = q / o.cap;
    }
    if (ms % 10 === 0) d.tick(t);
    const l = d.level();
    levels.push(l);
    if (l === 1 && at1 < 0) at1 = ms;
    if (l === 2 && at2 < 0) at2 = ms;
  }
  return { d, levels, at1, at2, trough, peak };
}

// A slow BLE link: 16 notifications of queue, 4 per 30 ms connection event (133/s), the core
// offering 4 one-notification frames every 10 ms (400/s).
const BLE_OVERLOAD = { cap: 16, unit: 1, offer: 4, tickMs: 10, take: 4, everyMs: 30, ms: 3000 } as const;
// The device's TCP egress queue (6144 bytes) handing lwIP one 1460-byte segment every 50 ms
// (29 kB/s) while the core offers a 60-byte frame every 5 ms... ten of them (120 kB/s).
const TCP_OVERLOAD = { cap: 6144, unit: 60, offer: 10, tickMs: 5, take: 1460, everyMs: 50, ms: 3000 } as const;

describe('watermark: samples dropped stale (§13.6)', () => {
  it('read full for STALE_HOLD_MS, whatever the queue: renewed, level 2 after 500 ms; then the queue again', () => {
    const d = new WatermarkDetector(0);
    d.drained(0.1, 0, 0);
    for (let t = 0; t < 500; t += 200) d.stale(t);
    d.tick(499);
    equal(d.level(), 0);
    d.tick(500);
    equal(d.level(), 2, 'saturated for 500 ms');
    d.tick(400 + STALE_HOLD_MS - 1);
    equal(d.level(), 2);
    // The hold ends at 400 + 250: the queue (empty) is judged from then; 2 → 1 after 1 s below 50 %.
    d.tick(400 + STALE_HOLD_MS);
    d.tick(400 + STALE_HOLD_MS + 999);
    equal(d.level(), 2);
    d.tick(400 + STALE_HOLD_MS + 1000);
    equal(d.level(), 1);
  });

  it('control: one drop holds the signal 250 ms, short of the 500 ms saturation window', () => {
    const d = new WatermarkDetector(0);
    d.stale(0);
    d.tick(STALE_HOLD_MS - 1);
    d.tick(2000);
    equal(d.level(), 0);
    equal(d.ratio(), 0, 'the queue ratio is what health reads');
  });
});

describe('watermark: the backlog a link carries (§13.5.1)', () => {
  it('BLE overload: the queue refills between events; judged at each take it is full, level 2 after 500 ms', () => {
    const r = queueTrace({ ...BLE_OVERLOAD, feed: 'backlog' });
    equal(r.trough, 12 / 16, 'every event leaves the queue at 75 %');
    equal(r.d.ratio(), 1, 'but every event finds it full');
    // The event at 30 ms finds 12; the queue is full from 50 ms on and every event after finds it
    // full: saturated for 500 ms ⇒ level 2 at 550 ms, straight from 0.
    equal(r.at1, -1);
    equal(r.at2, 550);
    ok(r.levels.slice(r.at2).every((l) => l === 2), 'and it holds while the overload lasts');
  });

  it('control: fed the occupancy after each take, the same BLE overload never reads severe', () => {
    const r = queueTrace({ ...BLE_OVERLOAD, feed: 'after' });
    equal(r.at2, -1, 'the 75 % trough after every event restarts both level-2 windows');
    ok(r.at1 > 0, 'only level 1');
  });

  it('TCP overload on a 6 KiB queue: one segment per pull leaves 76 %, the pull finds the queue full: level 2', () => {
    const r = queueTrace({ ...TCP_OVERLOAD, feed: 'backlog' });
    ok(r.trough < SEVERE_WATERMARK && r.peak < 0.8, `after each pull: ${r.trough}..${r.peak}`);
    ok(r.d.ratio() > SEVERE_WATERMARK, `found ${r.d.ratio()}`);
    // The first pull (50 ms) finds 6000 of 6144 bytes, and every pull after finds more than 90 %.
    equal(r.at2, 1050);
    ok(r.levels.slice(r.at2).every((l) => l === 2));
    equal(queueTrace({ ...TCP_OVERLOAD, feed: 'after' }).at2, -1, 'control: the old feed never reads severe');
  });

  it('a healthy link whose queue cycles stays at 0: bursts to 94 % every 150 ms, drained in four events', () => {
    // 15 notifications every 150 ms (100/s) on a link that carries 133/s: found 15, 11, 7, 3, then empty.
    const r = queueTrace({ cap: 16, unit: 1, offer: 15, tickMs: 150, take: 4, everyMs: 30, ms: 60_000, feed: 'backlog' });
    ok(r.peak >= 11 / 16, 'the queue does rise above the severe line between takes');
    deepLevels(r.levels, 0);
  });

  it('a healthy link running at capacity, every event emptying a full queue, stays at 0', () => {
    // 16 notifications every 120 ms, four events of four: the queue fills to 100 % and empties.
    const r = queueTrace({ cap: 16, unit: 1, offer: 16, tickMs: 120, take: 16, everyMs: 120, ms: 60_000, feed: 'backlog' });
    deepLevels(r.levels, 0);
  });

  it('when the overload ends, takes find less and less: 2 → 1 after 1 s below 50 %, → 0 after 5 s below 20 %', () => {
    const r = queueTrace({ ...BLE_OVERLOAD, ms: 12_000, offerUntilMs: 3000, feed: 'backlog' });
    // The last offers at 3000 fill the queue and that event takes 4; the takes at 3030 and 3060
    // find 12 and 8 (50 %: not below), the one at 3090 finds 4 and empties the queue (0).
    const at = (ms: number): number => r.levels[ms - 1] as number;
    equal(at(3000), 2);
    equal(at(3090 + RELIEF_WINDOW_MS - 1), 2);
    equal(at(3090 + RELIEF_WINDOW_MS), 1, 'relieved 1 s after the first take below 50 %');
    equal(at(3090 + RECOVERY_WINDOW_MS - 1), 1);
    equal(at(3090 + RECOVERY_WINDOW_MS), 0, 'clear 5 s after the first take below 20 % (here it emptied the queue)');
  });

  it('takes at one instant are one opportunity: the highest backlog found counts', () => {
    const d = watermarkAt(0);
    d.queued(1, T0);
    for (let k = 16; k > 12; k--) d.drained(k / 16, (k - 1) / 16, T0 + 30);
    equal(d.ratio(), 1, 'four notifications handed out in one event: the event found 16');
    d.drained(12 / 16, 11 / 16, T0 + 60);
    equal(d.ratio(), 12 / 16, 'the next event found 12');
    d.queued(0.5, T0 + 61);
    equal(d.ratio(), 12 / 16, 'frames joining never lower the signal');
    d.queued(0.9, T0 + 62);
    equal(d.ratio(), 0.9, 'they raise it');
    d.drained(0.9, 0, T0 + 90);
    equal(d.ratio(), 0, 'a take that empties the queue leaves no backlog');
    d.queued(0.25, T0 + 91);
    equal(d.ratio(), 0.25);
  });

  it('a saturated backlog reaches 2 after 500 ms; one take that finds it below 100 % restarts that window', () => {
    const d = watermarkAt(0);
    d.queued(1, T0);
    d.drained(1, 0.75, T0 + 200);
    d.drained(0.95, 0.7, T0 + 400);
    d.drained(1, 0.75, T0 + 450);
    d.tick(T0 + 949);
    equal(d.level(), 0, 'saturated again only since T0 + 450; above 90 % since T0');
    d.tick(T0 + 950);
    equal(d.level(), 2, 'full at every take for 500 ms');
  });

  it('a frame turned away reads full, and the next take finds the queue full (§13.5.5)', () => {
    const d = watermarkAt(0);
    d.queued(14 / 16, T0);
    d.refused(T0 + 1);
    equal(d.ratio(), SATURATED_SIGNAL, 'a queue at 14 of 16 that refuses a three-notification frame is full');
    d.drained(14 / 16, 13 / 16, T0 + 30);
    equal(d.ratio(), SATURATED_SIGNAL, 'the take found it full');
    d.drained(13 / 16, 12 / 16, T0 + 60);
    equal(d.ratio(), 13 / 16, 'nothing turned away since: the take finds what is queued');
    // Every take finding a queue that turned frames away: saturated, level 2 after 500 ms.
    for (let t = 90; t <= 570; t += 30) {
      d.refused(T0 + t - 5);
      d.drained(14 / 16, 13 / 16, T0 + t);
    }
    d.tick(T0 + 584);
    equal(d.level(), 0);
    d.tick(T0 + 585);
    equal(d.level(), 2);
    d.refused(T0 + 700);
    d.drained(1, 0, T0 + 710);
    equal(d.ratio(), 0, 'a take that empties the queue still leaves no backlog');
  });

  it('reset forgets the last take', () => {
    const d = watermarkAt(0);
    d.drained(1, 0.8, T0 + 10);
    d.reset(T0 + 10);
    equal(d.ratio(), 0);
    d.drained(0.3, 0.2, T0 + 10);
    equal(d.ratio(), 0.3, 'a take after the reset at the same instant is judged alone');
  });
});

function deepLevels(levels: number[], only: number): void {
  for (let i = 0; i < levels.length; i++) if (levels[i] !== only) equal(levels[i], only, `level at ${i + 1} ms`);
}

// ---------------------------------------------------------------------------------------------
// ESP-NOW loss accounting.

/** The bitmap an ESP-NOW peer sends: bit i set ⇔ (base − i) mod 65536 received. */
function bitmapOf(base: number, received: readonly number[]): number {
  let m = 0;
  for (const s of received) {
    const i = (base - s) & 0xffff;
    if (i < 32) m |= 1 << i;
  }
  return m >>> 0;
}

/** Sends `n` datagrams from `first` at `t`; returns their sequence numbers. */
function sendRun(d: LossDetector, first: number, n: number, t: number): number[] {
  const seqs: number[] = [];
  for (let k = 0; k < n; k++) {
    const s = (first + k) & 0xffff;
    d.sent(s, t);
    seqs.push(s);
  }
  return seqs;
}

function counts(d: LossDetector): string {
  return `${d.lostInWindow()}/${d.resolvedInWindow()}`;
}

describe('ESP-NOW loss: the ACK bitmask', () => {
  it('bit i ⇔ datagram base − i: bit 0 is base, bit 9 is base − 9', () => {
    const d = new LossDetector(0);
    sendRun(d, 0, 10, 0);
    d.ack(9, 0b1, 5);
    equal(counts(d), '9/10', 'only base received; the nine below it are gaps');
    d.ack(9, 1 << 9, 6);
    equal(counts(d), '8/10', 'bit 9 names seq 0');
    d.ack(9, 1 << 4, 7);
    equal(counts(d), '7/10', 'bit 4 names seq 5');
  });

  it('counts lost ÷ resolved from one ACK', () => {
    const d = new LossDetector(0);
    const seqs = sendRun(d, 0, 10, 0);
    d.ack(9, bitmapOf(9, seqs.filter((s) => s !== 3 && s !== 7)), 5);
    equal(counts(d), '2/10');
    equal(d.ratio(), 0.2);
    equal(d.outstanding(), 0);
  });

  it('bit 31 reaches base − 31; a full mask loses nothing', () => {
    const d = new LossDetector(0);
    sendRun(d, 0, 32, 0);
    d.ack(31, (0x80000000 | 1) >>> 0, 1);
    equal(counts(d), '30/32', 'seq 31 and seq 0 received');
    const e = new LossDetector(0);
    sendRun(e, 0, 32, 0);
    e.ack(31, 0xffffffff, 1);
    equal(counts(e), '0/32');
  });

  it('a datagram older than the mask reaches stays outstanding until its timeout', () => {
    const d = new LossDetector(0);
    sendRun(d, 0, 40, 0);
    d.ack(39, 0xffffffff, 1);
    equal(counts(d), '0/32');
    equal(d.outstanding(), 8);
    d.tick(201);
    equal(counts(d), '8/40');
  });

  it('datagrams sent after base are in flight, not lost', () => {
    const d = new LossDetector(0);
    sendRun(d, 0, 10, 0);
    d.ack(4, 0b11111, 1);
    equal(counts(d), '0/5');
    equal(d.outstanding(), 5);
  });

  it('wraps at 65536: seqs 65530 … 65535, 0 … 5', () => {
    const d = new LossDetector(0);
    const seqs = sendRun(d, 65530, 12, 0);
    equal(seqs[6], 0);
    d.ack(5, bitmapOf(5, seqs.filter((s) => s !== 65535 && s !== 0)), 1);
    equal(counts(d), '2/12');
  });

  it('wraps at 65536: base 1, bit 2 is seq 65535, bit 3 is 65534', () => {
    const d = new LossDetector(0);
    sendRun(d, 65534, 4, 0);
    d.ack(1, 0b101, 1);
    equal(counts(d), '2/4', 'seq 1 and 65535 received; 0 and 65534 gaps');
    equal(d.ratio(), 2 / LOSS_MIN_RESOLVED);
    d.ack(1, 0b1000, 2);
    equal(counts(d), '1/4', 'bit 3 took back the loss of 65534');
    d.ack(1, 0b0010, 3);
    equal(counts(d), '0/4', 'bit 1 took back the loss of 0');
  });

  it('sequence numbers are taken mod 65536', () => {
    const d = new LossDetector(0);
    d.sent(65536 + 7, 0);
    d.ack(7, 1, 1);
    equal(counts(d), '0/1');
    equal(d.outstanding(), 0);
  });
});

describe('ESP-NOW loss: timeouts, late and duplicate ACKs', () => {
  it('lost after 200 ms without an ACK: not at 199 or 200, at 201', () => {
    const d = new LossDetector(0);
    d.sent(0, 0);
    d.tick(199);
    equal(d.outstanding(), 1);
    d.tick(200);
    equal(d.outstanding(), 1);
    equal(counts(d), '0/0');
    d.tick(201);
    equal(d.outstanding(), 0);
    equal(counts(d), '1/1');
    equal(d.ratio(), 1 / LOSS_MIN_RESOLVED);
  });

  it('the timeout is an option', () => {
    const d = new LossDetector(0, { ackTimeoutMs: 50 });
    d.sent(0, 10);
    d.tick(60);
    equal(counts(d), '0/0');
    d.tick(61);
    equal(counts(d), '1/1');
  });

  it('any call judges timeouts, not only tick', () => {
    const d = new LossDetector(0);
    d.sent(0, 0);
    d.sent(1, 300);
    equal(counts(d), '1/1');
  });

  it('a late ACK takes back a timed-out loss', () => {
    const d = new LossDetector(0);
    d.sent(0, 0);
    d.tick(201);
    equal(counts(d), '1/1');
    d.ack(0, 1, 300);
    equal(counts(d), '0/1');
    equal(d.ratio(), 0);
  });

  it('a late ACK takes back a gap loss', () => {
    const d = new LossDetector(0);
    sendRun(d, 0, 10, 0);
    d.ack(9, bitmapOf(9, [0, 1, 2, 3, 5, 6, 7, 8, 9]), 10);
    equal(counts(d), '1/10');
    sendRun(d, 10, 3, 100);
    d.ack(12, bitmapOf(12, [4, 10, 11, 12]), 150);
    equal(counts(d), '0/13');
  });

  it('a late ACK for a loss already out of the window changes nothing in it', () => {
    const d = new LossDetector(0);
    d.sent(0, 0);
    d.tick(201);
    equal(counts(d), '1/1');
    const seqs = sendRun(d, 1, 10, 1150);
    d.ack(10, bitmapOf(10, seqs.slice(2)), 1150);
    equal(counts(d), '3/11', 'the old loss (bucket 2) is still in the window at 1150');
    d.tick(1250);
    equal(counts(d), '2/10', 'bucket 2 has left the window');
    d.ack(10, bitmapOf(10, [0, ...seqs.slice(2)]), 1260);
    equal(counts(d), '2/10', 'the correction does not reach into the current window');
  });

  it('duplicate ACKs count once', () => {
    const d = new LossDetector(0);
    sendRun(d, 0, 10, 0);
    const m = bitmapOf(9, [0, 1, 2, 4, 5, 6, 8, 9]);
    for (let k = 0; k < 5; k++) {
      d.ack(9, m, 10 + k);
      equal(counts(d), '2/10', `after copy ${k + 1}`);
    }
  });

  it('an older, reordered ACK never turns a received datagram back into a loss', () => {
    const d = new LossDetector(0);
    sendRun(d, 0, 10, 0);
    d.ack(9, 0x3ff, 10);
    equal(counts(d), '0/10');
    d.ack(5, 0, 11);
    d.ack(9, 0, 12);
    equal(counts(d), '0/10');
  });

  it('an ACK for sequences never sent, or long gone, changes nothing', () => {
    const d = new LossDetector(0);
    sendRun(d, 100, 5, 0);
    d.ack(50, 0xffffffff, 1);
    d.ack(40000, 0, 2);
    equal(counts(d), '0/0');
    equal(d.outstanding(), 5);
  });

  it('an ACK covering a datagram before its timeout resolves it received, not lost', () => {
    const d = new LossDetector(0);
    d.sent(0, 0);
    d.ack(0, 1, 200);
    d.tick(1000);
    equal(counts(d), '0/1');
  });
});

describe('ESP-NOW loss: the radio send status', () => {
  it('failures count lost at once; successes resolve nothing', () => {
    const d = new LossDetector(0);
    sendRun(d, 0, 10, 0);
    for (let k = 0; k < 10; k++) d.sendStatus(k >= 3, 1);
    equal(counts(d), '3/3');
    equal(d.ratio(), 3 / LOSS_MIN_RESOLVED);
    equal(d.outstanding(), 7);
    d.ack(9, bitmapOf(9, [0, 2, 3, 4, 5, 6, 7, 8, 9]), 5);
    equal(counts(d), '1/10', 'the peer received 0 and 2 after all (its MAC acknowledgement was lost)');
  });

  it('each status belongs to the oldest datagram still awaiting one', () => {
    const d = new LossDetector(0);
    sendRun(d, 0, 3, 0);
    d.sendStatus(true, 1);
    d.sendStatus(false, 1);
    d.ack(0, 1, 2);
    equal(counts(d), '1/2', 'seq 1 failed, seq 0 received');
  });

  it('a status with nothing awaiting one is ignored', () => {
    const d = new LossDetector(0);
    d.sendStatus(false, 0);
    equal(counts(d), '0/0');
    d.sent(0, 1);
    d.sendStatus(true, 2);
    d.sendStatus(false, 3);
    equal(counts(d), '0/0');
    equal(d.outstanding(), 1);
  });

  it('a status for a datagram already evicted from the ring does not touch the one now in its slot', () => {
    const d = new LossDetector(0);
    d.sent(0, 0);
    d.sent(LOSS_RING, 1);
    equal(counts(d), '1/1', 'seq 0 evicted unresolved');
    d.sendStatus(false, 2);
    equal(counts(d), '1/1', 'the status was for seq 0');
    equal(d.outstanding(), 1);
    d.sendStatus(false, 3);
    equal(counts(d), '2/2', 'this one is for seq 64');
  });

  it('judges as sent and sendStatus do, at the same instants, over random traffic, losses, ACKs and silences', () => {
    // The binding's way (bindings/espnow/link.ts): sentInFlight per datagram, failed on a failed
    // status, tick on a status that went; against sent and sendStatus per status. Both ticked
    // every 10 ms; compared at every step: level, since, loss rate, outstanding.
    for (let seed = 1; seed <= 24; seed++) {
      let x = seed * 2654435761;
      const rnd = (): number => {
        x = (Math.imul(x ^ (x >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) | 0;
        return ((x ^ (x >>> 13)) >>> 0) / 4294967296;
      };
      const a = new LossDetector(0);
      const b = new LossDetector(0);
      const lossP = [0, 0.05, 0.3, 0.8][seed % 4] as number;
      let seq = -1;
      let inFlight = -1;
      let statusAt = Infinity;
      let silentUntil = 0;
      const received: boolean[] = [];
      for (let t = 1; t <= 6000; t++) {
        if (t >= statusAt) {
          const went = rnd() >= lossP;
          a.sendStatus(went, t);
          if (went) b.tick(t);
          else b.failed(inFlight, t);
          statusAt = Infinity;
          inFlight = -1;
        }
        if (t >= silentUntil && inFlight < 0 && rnd() < 0.3) {
          if (rnd() < 0.02) silentUntil = t + 200 + Math.floor(rnd() * 2500); // a silence after this one
          // A new datagram, or now and then a resend under the last number.
          const s = seq >= 0 && rnd() < 0.1 ? seq : (seq = (seq + 1) & 0xffff);
          received[s & 63] = rnd() >= lossP;
          a.sent(s, t);
          b.sentInFlight(s, t);
          inFlight = s;
          statusAt = t + 2;
        }
        if (seq >= 0 && t % 50 === 25 && t >= silentUntil && rnd() >= lossP) {
          let bits = 0;
          for (let i = 0; i < 32; i++) if (received[(seq - i) & 63]) bits |= 1 << i;
          a.ack(seq, bits >>> 0, t);
          b.ack(seq, bits >>> 0, t);
        }
        if (t % 10 === 0) {
          a.tick(t);
          b.tick(t);
        }
        if (b.level() !== a.level() || b.since() !== a.since() || b.ratio() !== a.ratio() || b.outstanding() !== a.outstanding()) {
          equal(`${b.level()} since ${b.since()} rate ${b.ratio()} out ${b.outstanding()}`, `${a.level()} since ${a.since()} rate ${a.ratio()} out ${a.outstanding()}`, `seed ${seed} at ${t} ms`);
        }
      }
      if (lossP >= 0.3) ok(a.level() > 0 || a.since() > 0, `seed ${seed}: the level moved at some point`);
    }
  });

  it('a failure after the ACK already said received does not count', () => {
    const d = new LossDetector(0);
    d.sent(0, 0);
    d.ack(0, 1, 1);
    d.sendStatus(false, 2);
    equal(counts(d), '0/1');
  });
});

describe('ESP-NOW loss: one datagram in flight (sentInFlight, failed)', () => {
  it('judges as sent and sendStatus do, each status given for the datagram it concerns', () => {
    const a = new LossDetector(0);
    const b = new LossDetector(0);
    let t = 0;
    for (let k = 0; k < 400; k++) {
      t += 3;
      const seq = k % 5 === 4 ? k - 1 : k; // every fifth a resend under the last number
      const went = k % 7 !== 0 && k % 11 !== 0;
      a.sent(seq, t);
      b.sentInFlight(seq, t);
      a.sendStatus(went, t + 2);
      if (!went) b.failed(seq, t + 2);
      if (k % 8 === 7) {
        a.ack(seq, 0xfffffffb, t + 2);
        b.ack(seq, 0xfffffffb, t + 2);
      }
      a.tick(t + 2);
      b.tick(t + 2);
      equal(b.level(), a.level(), `level at ${t}`);
      equal(b.ratio(), a.ratio(), `ratio at ${t}`);
      equal(b.outstanding(), a.outstanding());
      equal(counts(b), counts(a));
    }
    ok(a.lostInWindow() > 0);
  });

  it('a failure after the ACK already said received does not count', () => {
    const d = new LossDetector(0);
    d.sentInFlight(0, 0);
    d.ack(0, 1, 1);
    d.failed(0, 2);
    equal(counts(d), '0/1');
    d.sentInFlight(LOSS_RING + 1, 3);
    d.failed(1, 4);
    equal(counts(d), '0/1', 'no datagram 1 was sent');
    d.failed(LOSS_RING + 1, 5);
    equal(counts(d), '1/2');
  });
});

describe('ESP-NOW loss: resends under the datagram’s own number (§13.3.3)', () => {
  it('a resend is the same datagram: counted once, lost by the failed status, received by the ACK', () => {
    const d = new LossDetector(0);
    d.sent(7, 0);
    d.sendStatus(false, 5);
    equal(counts(d), '1/1');
    d.sent(7, 6); // the resend
    equal(d.outstanding(), 0, 'not a new datagram in flight');
    d.sendStatus(false, 10);
    equal(counts(d), '1/1', 'a second failed status counts nothing more');
    d.sent(7, 11);
    d.sendStatus(true, 15);
    d.ack(7, 1, 40);
    equal(counts(d), '0/1', 'the ACK says the peer has it: the loss is taken back');
    d.tick(1000);
    equal(d.outstanding(), 0);
  });

  it('a resend never answered stays one loss; the next new number counts apart', () => {
    const d = new LossDetector(0);
    d.sent(7, 0);
    d.sendStatus(false, 5);
    for (let k = 0; k < 3; k++) {
      d.sent(7, 6 + k * 6);
      d.sendStatus(false, 10 + k * 6);
    }
    d.sent(8, 40);
    d.tick(300);
    equal(counts(d), '2/2', 'seq 7 once, and 8 by its timeout');
  });
});

describe('ESP-NOW loss: the ring, the window and the denominator', () => {
  it(`a datagram still unresolved when its ring slot is reused (${LOSS_RING} later) is lost`, () => {
    const d = new LossDetector(0);
    sendRun(d, 0, LOSS_RING, 0);
    equal(counts(d), '0/0');
    equal(d.outstanding(), LOSS_RING);
    d.sent(LOSS_RING, 0);
    equal(counts(d), '1/1');
    equal(d.outstanding(), LOSS_RING);
  });

  it('a resolution counts for the rest of its 100 ms bucket and the nine after it', () => {
    const d = new LossDetector(0);
    d.sent(0, 0);
    d.sendStatus(false, 50);
    d.tick(999);
    equal(counts(d), '1/1');
    d.tick(1000);
    equal(counts(d), '0/0');
    equal(d.ratio(), 0);
  });

  it(`the denominator is at least ${LOSS_MIN_RESOLVED}`, () => {
    const table: ReadonlyArray<readonly [number, number, number]> = [
      // [lost, received, rate]
      [1, 0, 0.1], [2, 0, 0.2], [9, 0, 0.9], [10, 0, 1], [12, 0, 1], [1, 9, 0.1], [1, 19, 0.05], [3, 27, 0.1],
    ];
    for (const [lost, received, rate] of table) {
      const d = new LossDetector(0);
      const seqs = sendRun(d, 0, lost + received, 0);
      d.ack(seqs.length - 1, bitmapOf(seqs.length - 1, seqs.slice(lost)), 1);
      equal(counts(d), `${lost}/${lost + received}`);
      equal(d.ratio(), rate, `${lost} lost, ${received} received`);
    }
  });

  it('reset(now) forgets the ring, the window and the level', () => {
    const d = new LossDetector(0);
    for (let t = 0; t <= 1000; t += 100) {
      const first = (t / 100) * 10;
      sendRun(d, first, 10, t);
      for (let k = 0; k < 10; k++) d.sendStatus(false, t);
    }
    equal(d.level(), 2);
    sendRun(d, 200, 5, 1000);
    d.reset(1000);
    equal(d.level(), 0);
    equal(d.since(), 1000);
    equal(d.ratio(), 0);
    equal(d.outstanding(), 0);
    d.ack(204, 0, 1001);
    d.sendStatus(false, 1002);
    d.tick(5000);
    equal(counts(d), '0/0', 'nothing from before the reset is resolved after it');
  });
});

// ---------------------------------------------------------------------------------------------
// Loss levels from ACK traces. Every 100 ms (at the start of a bucket) the hub sends ten
// datagrams and the peer ACKs them at once, some missing; the window then always holds exactly
// ten such rounds, so the loss rate is the missing count over the last ten rounds ÷ 100.

const ROUND_MS = LOSS_BUCKET_MS;
const PER_ROUND = 10;

class AckTrace {
  readonly d = new LossDetector(0);
  private seq = 65_500; // wraps 65535 → 0 on the way
  private next = 0;

  /** `missing(t)`: how many of the round sent at `t` the peer did not receive. */
  constructor(private readonly missing: (t: number) => number) {}

  /** Runs every round up to and including `t`, then judges at `t`. */
  until(t: number): LossDetector {
    while (this.next <= t) {
      const at = this.next;
      const seqs = sendRun(this.d, this.seq, PER_ROUND, at);
      this.seq = (this.seq + PER_ROUND) & 0xffff;
      const base = seqs[PER_ROUND - 1] as number;
      this.d.ack(base, bitmapOf(base, seqs.slice(this.missing(at))), at);
      this.next += ROUND_MS;
    }
    this.d.tick(t);
    return this.d;
  }
}

/** Clean until `from`, then `pattern[k]` missing in the k-th round after it, repeating every ten. */
function stepTo(from: number, pattern: readonly number[], before: (t: number) => number = () => 0): (t: number) => number {
  return (t) => (t < from ? before(t) : (pattern[((t - from) / ROUND_MS) % pattern.length] as number));
}

const T = 2000;
const P = (n: number, last: number): number[] => [...Array<number>(9).fill(n), last];

describe('ESP-NOW loss levels: 0 → 1 above 10 % for 1 s', () => {
  // P(1, 2): 11 per window, reached with the tenth round at T + 900; before that ≤ 9 %.
  it('11 % from T + 900: level 0 at +1899, 1 at +1900 and after', () => {
    const tr = new AckTrace(stepTo(T, P(1, 2)));
    equal(tr.until(T + 800).ratio(), 0.09);
    equal(tr.until(T + 900).ratio(), 0.11);
    equal(tr.until(T + 1899).level(), 0);
    equal(tr.until(T + 1900).level(), 1);
    equal(tr.d.since(), T + 1900);
    equal(tr.until(T + 1901).level(), 1);
    equal(tr.until(T + 20_000).level(), 1);
    equal(tr.d.ratio(), 0.11);
  });

  for (const [pattern, rate] of [[P(1, 1), 0.1], [P(1, 0), 0.09]] as const) {
    it(`${Math.round(rate * 100)} % holds level 0`, () => {
      const tr = new AckTrace(stepTo(T, pattern));
      equal(tr.until(T + 900).ratio(), rate);
      equal(tr.until(T + 20_000).level(), 0);
      equal(tr.d.ratio(), rate);
    });
  }

  it('one clean round inside the window restarts it', () => {
    // 11 % from T + 900; the round at T + 1500 loses none instead of one, which holds the window
    // at exactly 10 % until that round leaves it with the round at T + 2500.
    const base = stepTo(T, P(1, 2));
    const tr = new AckTrace((t) => (t === T + 1500 ? 0 : base(t)));
    equal(tr.until(T + 1500).ratio(), 0.1, 'the dip');
    equal(tr.until(T + 1600).ratio(), 0.1, 'still in the window');
    equal(tr.until(T + 1900).level(), 0);
    // From T + 2500 the dip round has left the window: 11 % again, so level 1 at T + 3500.
    equal(tr.until(T + 2500).ratio(), 0.11);
    equal(tr.until(T + 3499).level(), 0);
    equal(tr.until(T + 3500).level(), 1);
  });
});

describe('ESP-NOW loss levels: → 2 above 30 % for 1 s', () => {
  // P(3, 4): 3 per round, 31 per window. Above 10 % from the fourth round (T + 300), above 30 %
  // from the tenth (T + 900).
  it('31 %: level 1 at T + 1300, level 2 at T + 1900', () => {
    const tr = new AckTrace(stepTo(T, P(3, 4)));
    equal(tr.until(T + 200).ratio(), 0.09);
    equal(tr.until(T + 300).ratio(), 0.12);
    equal(tr.until(T + 1299).level(), 0);
    equal(tr.until(T + 1300).level(), 1);
    equal(tr.until(T + 1899).level(), 1);
    equal(tr.until(T + 1900).level(), 2);
    equal(tr.d.since(), T + 1900);
    equal(tr.until(T + 1901).level(), 2);
    equal(tr.d.ratio(), 0.31);
  });

  for (const [pattern, rate] of [[P(3, 3), 0.3], [P(3, 2), 0.29]] as const) {
    it(`${Math.round(rate * 100)} % holds level 1`, () => {
      const tr = new AckTrace(stepTo(T, pattern));
      equal(tr.until(T + 1300).level(), 1);
      equal(tr.until(T + 20_000).level(), 1);
      equal(tr.d.ratio(), rate);
    });
  }
});

describe('ESP-NOW loss levels: 2 → 1 below 10 % for 1 s, then → 0 below 2 % for 5 s', () => {
  // Severe via P(3, 4) (level 2 at T + 1900); from T2 the window drains over ten rounds and
  // reaches the new pattern's rate with the tenth, at T2 + 900.
  const T2 = T + 2000;
  const severe = stepTo(T, P(3, 4));

  it('9 %: level 2 until T2 + 1899, level 1 from T2 + 1900, and it holds', () => {
    const tr = new AckTrace(stepTo(T2, P(1, 0), severe));
    equal(tr.until(T2 - 1).level(), 2);
    equal(tr.until(T2 + 800).ratio(), 0.13);
    equal(tr.until(T2 + 900).ratio(), 0.09);
    equal(tr.until(T2 + 1899).level(), 2);
    equal(tr.until(T2 + 1900).level(), 1);
    equal(tr.d.since(), T2 + 1900);
    equal(tr.until(T2 + 1901).level(), 1);
    equal(tr.until(T2 + 30_000).level(), 1);
  });

  it('10 %: level 2 holds', () => {
    const tr = new AckTrace(stepTo(T2, P(1, 1), severe));
    equal(tr.until(T2 + 900).ratio(), 0.1);
    equal(tr.until(T2 + 30_000).level(), 2);
  });

  it('0 %: level 1 at T2 + 1900, level 0 at T2 + 5900', () => {
    const tr = new AckTrace(stepTo(T2, P(0, 0), severe));
    equal(tr.until(T2 + 800).ratio(), 0.04);
    equal(tr.until(T2 + 900).ratio(), 0);
    equal(tr.until(T2 + 1900).level(), 1);
    equal(tr.until(T2 + 5899).level(), 1);
    equal(tr.until(T2 + 5900).level(), 0);
    equal(tr.d.since(), T2 + 5900);
  });
});

describe('ESP-NOW loss levels: 1 → 0 below 2 % for 5 s', () => {
  // Congested via P(1, 2) (level 1 at T + 1900); from T2 the old 11 leave over ten rounds.
  const T2 = T + 2000;
  const congested = stepTo(T, P(1, 2));

  it('1 %: level 1 until T2 + 5899, 0 from T2 + 5900', () => {
    const tr = new AckTrace(stepTo(T2, [1, 0, 0, 0, 0, 0, 0, 0, 0, 0], congested));
    equal(tr.until(T2 - 1).level(), 1);
    equal(tr.until(T2 + 800).ratio(), 0.03);
    equal(tr.until(T2 + 900).ratio(), 0.01);
    equal(tr.until(T2 + 5899).level(), 1);
    equal(tr.until(T2 + 5900).level(), 0);
    equal(tr.d.since(), T2 + 5900);
    equal(tr.until(T2 + 5901).level(), 0);
  });

  for (const [pattern, rate] of [[[2, 0, 0, 0, 0, 0, 0, 0, 0, 0], 0.02], [[3, 0, 0, 0, 0, 0, 0, 0, 0, 0], 0.03]] as const) {
    it(`${Math.round(rate * 100)} %: level 1 holds`, () => {
      const tr = new AckTrace(stepTo(T2, pattern, congested));
      equal(tr.until(T2 + 900).ratio(), rate);
      equal(tr.until(T2 + 30_000).level(), 1);
    });
  }

  it('one lossy round during the 5 s restarts it', () => {
    const base = stepTo(T2, [1, 0, 0, 0, 0, 0, 0, 0, 0, 0], congested);
    // At T2 + 3000 a round loses 2 instead of 1 (window exactly 2 %, not below); it leaves the
    // window with the round at T2 + 4000.
    const tr = new AckTrace((t) => (t === T2 + 3000 ? 2 : base(t)));
    equal(tr.until(T2 + 2900).ratio(), 0.01);
    equal(tr.until(T2 + 3000).ratio(), 0.02);
    equal(tr.until(T2 + 3900).ratio(), 0.02);
    equal(tr.until(T2 + 4000).ratio(), 0.01);
    equal(tr.until(T2 + 5900).level(), 1);
    equal(tr.until(T2 + 8999).level(), 1);
    equal(tr.until(T2 + 9000).level(), 0);
  });
});

describe('ESP-NOW loss levels: saturation and a vanished peer', () => {
  /** A round of ten whose send status fails, except the first `through`, which the peer ACKs. */
  function failing(d: LossDetector, t: number, seq: number, through = 0): void {
    const seqs = sendRun(d, seq, PER_ROUND, t);
    for (let k = 0; k < PER_ROUND; k++) d.sendStatus(k < through, t);
    if (through > 0) d.ack(seqs[through - 1] as number, bitmapOf(seqs[through - 1] as number, seqs.slice(0, through)), t);
  }

  it('every datagram failing from the start: level 2 at 500 ms, not 499', () => {
    for (const [check, level] of [[499, 0], [500, 2], [501, 2]] as const) {
      const d = new LossDetector(0);
      for (let t = 0; t <= check; t += ROUND_MS) failing(d, t, t / 10);
      d.tick(check);
      equal(d.ratio(), 1);
      equal(d.level(), level, `at ${check}`);
    }
  });

  it('one datagram through in the window ends saturation: level 2 waits for the 1 s severe window', () => {
    const d = new LossDetector(0);
    for (let t = 0; t < 1000; t += ROUND_MS) {
      failing(d, t, t / 10, t === 300 ? 1 : 0);
      if (t === 300) equal(d.ratio(), 39 / 40);
      equal(d.level(), 0, `at ${t}`);
    }
    d.tick(999);
    equal(d.level(), 0);
    d.tick(1000);
    equal(d.level(), 2);
    equal(d.ratio(), 89 / 90, 'rounds 100 … 900; the one through at 300 still in the window');
  });

  it('a peer that stops answering: lost by timeout, level 1 at +1300, level 2 at +1400 (saturated)', () => {
    // Clean rounds until T; from T the hub keeps sending ten every 100 ms and hears nothing.
    // Each round times out at the first call more than 200 ms after it (the round 300 ms later).
    const d = new LossDetector(0);
    let seq = 0;
    for (let t = 0; t < T; t += ROUND_MS) {
      const seqs = sendRun(d, seq, PER_ROUND, t);
      seq += PER_ROUND;
      d.ack(seqs[PER_ROUND - 1] as number, 0x3ff, t);
    }
    let next = T;
    const run = (until: number): LossDetector => {
      for (; next <= until; next += ROUND_MS) {
        sendRun(d, seq, PER_ROUND, next);
        seq += PER_ROUND;
      }
      d.tick(until);
      return d;
    };
    equal(run(T + 200).lostInWindow(), 0);
    equal(run(T + 300).ratio(), 10 / 70);
    equal(run(T + 900).ratio(), 1);
    equal(run(T + 1299).level(), 0);
    equal(run(T + 1300).level(), 1);
    equal(run(T + 1399).level(), 1);
    equal(run(T + 1400).level(), 2);
    equal(d.since(), T + 1400);
  });
});

describe('detectors: the shortcuts a link takes change nothing', () => {
  // A seeded stream of inputs, the same for every detector compared.
  function lcg(seed: number): () => number {
    let s = seed;
    return () => {
      s = (Math.imul(s, 1103515245) + 12345) & 0x7fffffff;
      return s / 0x7fffffff;
    };
  }

  it('watermark: through(ratio, t) is queued(ratio, t) then drained(ratio, 0, t)', () => {
    for (let seed = 1; seed <= runs(40, 3); seed++) {
      const r = lcg(seed);
      let t = 0;
      const a = new WatermarkDetector(t);
      const b = new WatermarkDetector(t);
      for (let step = 0; step < 2000; step++) {
        t += r() < 0.4 ? 0 : Math.floor(r() * 30);
        const x = seed % 3 === 0 ? 0.3 + r() * 0.5 : r() < 0.7 ? r() * 0.25 : r() * 1.2;
        const k = r();
        if (k < 0.4) {
          a.queued(x, t);
          a.drained(x, 0, t);
          b.through(x, t);
        } else if (k < 0.6) {
          a.queued(x, t);
          b.queued(x, t);
        } else if (k < 0.8) {
          const after = r() < 0.5 ? 0 : x * r();
          a.drained(x, after, t);
          b.drained(x, after, t);
        } else if (k < 0.84) {
          a.refused(t);
          b.refused(t);
        } else {
          a.tick(t);
          b.tick(t);
        }
        const at = `seed ${seed} step ${step} t ${t}`;
        equal(b.level(), a.level(), at);
        equal(b.ratio(), a.ratio(), at);
        equal(b.since(), a.since(), at);
        equal(b.quietUntil, a.quietUntil, at);
      }
    }
  });

  it('loss: a tick before quietUntil changes nothing, so a link may skip it', () => {
    for (let seed = 1; seed <= runs(40, 3); seed++) {
      const r = lcg(seed);
      let t = 0;
      const every = new LossDetector(t);
      const skips = new LossDetector(t);
      const lossP = r() * 0.6;
      const got = new Map<number, boolean>();
      let seq = 0;
      for (let step = 0; step < 3000; step++) {
        t += r() < 0.5 ? 0 : Math.floor(r() * 40);
        const k = r();
        if (k < 0.3) {
          seq = (seq + 1) & SEQ_MASK;
          got.set(seq, r() > lossP);
          every.sent(seq, t);
          skips.sent(seq, t);
        } else if (k < 0.55) {
          const fine = r() > lossP;
          every.sendStatus(fine, t);
          skips.sendStatus(fine, t);
        } else if (k < 0.7) {
          let bitmap = 0;
          for (let i = 0; i < ACK_BITMAP_BITS; i++) if (got.get((seq - i) & SEQ_MASK)) bitmap |= 1 << i;
          every.ack(seq, bitmap >>> 0, t);
          skips.ack(seq, bitmap >>> 0, t);
        } else {
          every.tick(t);
          if (t >= skips.quietUntil) skips.tick(t);
        }
        const at = `seed ${seed} step ${step} t ${t}`;
        equal(skips.level(), every.level(), at);
        equal(skips.ratio(), every.ratio(), at);
        equal(skips.lostInWindow(), every.lostInWindow(), at);
        equal(skips.resolvedInWindow(), every.resolvedInWindow(), at);
        equal(skips.outstanding(), every.outstanding(), at);
        equal(skips.since(), every.since(), at);
      }
    }
  });
});

describe('ESP-NOW loss: a detector in its owner\'s buffer', () => {
  it('judges exactly as one with a buffer of its own, and touches no byte outside its own', () => {
    const own = new LossDetector(0);
    const buffer = new ArrayBuffer(8 + LOSS_BYTES + 8);
    const around = new Uint8Array(buffer);
    around.fill(0xa5);
    const shared = new LossDetector(0, undefined, buffer, 8);
    let seed = 7;
    const next = (): number => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
    let seq = 0;
    for (let t = 0; t < 6000; t += 5) {
      const r = next();
      if (r < 0.5) {
        equal(shared.sent(seq, t), own.sent(seq, t), `sent ${seq} at ${t}`);
        seq = (seq + 1) & SEQ_MASK;
      } else if (r < 0.7) {
        const ok = next() < 0.8;
        equal(shared.sendStatus(ok, t), own.sendStatus(ok, t), `status at ${t}`);
      } else if (r < 0.85) {
        const base = (seq - 1 - Math.floor(next() * 4)) & SEQ_MASK;
        const bitmap = Math.floor(next() * 2 ** 32) >>> 0;
        equal(shared.ack(base, bitmap, t), own.ack(base, bitmap, t), `ack at ${t}`);
      } else {
        equal(shared.tick(t), own.tick(t), `tick at ${t}`);
      }
      equal(counts(shared), counts(own), `counts at ${t}`);
    }
    ok(own.resolvedInWindow() > 0, 'the run resolved datagrams');
    for (let i = 0; i < 8; i++) {
      equal(around[i], 0xa5, `byte ${i} before it`);
      equal(around[8 + LOSS_BYTES + i], 0xa5, `byte ${i} after it`);
    }
  });

  it('shares its view of numbers with its owner\'s, whose numbers it never touches', () => {
    const own = new LossDetector(0);
    const extra = 5;
    const buffer = new ArrayBuffer(LOSS_BYTES + 8 * extra + 8);
    const around = new Uint8Array(buffer);
    around.fill(0xa5);
    const shared = new LossDetector(0, undefined, buffer, 0, extra);
    const numbers = shared.numbers;
    equal(numbers.buffer, buffer);
    equal(numbers.length, LOSS_NUMBERS + extra);
    for (let k = 0; k < extra; k++) numbers[LOSS_NUMBERS + k] = 0.5 + k;
    throws(() => new LossDetector(0, undefined, buffer, 16, extra), (e) => e instanceof RangeError, 'its bytes and its owner numbers past the buffer');
    let seq = 0;
    for (let t = 0; t < 3000; t += 7) {
      if (t % 3 === 0) {
        equal(shared.sent(seq, t), own.sent(seq, t), `sent ${seq} at ${t}`);
        seq = (seq + 1) & SEQ_MASK;
      } else if (t % 3 === 1) equal(shared.sendStatus(t % 5 !== 0, t), own.sendStatus(t % 5 !== 0, t), `status at ${t}`);
      else equal(shared.ack((seq - 1) & SEQ_MASK, t % 4 === 0 ? 0xfffffff0 : 0xffffffff, t), own.ack((seq - 1) & SEQ_MASK, t % 4 === 0 ? 0xfffffff0 : 0xffffffff, t), `ack at ${t}`);
      equal(counts(shared), counts(own), `counts at ${t}`);
    }
    ok(own.lostInWindow() > 0, 'the run lost datagrams');
    for (let k = 0; k < extra; k++) equal(numbers[LOSS_NUMBERS + k], 0.5 + k, `the owner's number ${k}`);
    for (let i = 0; i < 8; i++) equal(around[LOSS_BYTES + 8 * extra + i], 0xa5, `byte ${i} after it`);
  });
});
