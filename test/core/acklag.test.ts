import {
  ACK_LAG_PERCENTILE,
  ACK_LAG_SHEDDING,
  ACK_LAG_THROTTLING,
  ACK_LAG_WATCH,
  AckLagSummary,
  ackLagOf,
  Backpressure,
  BACKPRESSURE_NAMES,
  classifyAckLag,
  classifyLevel,
} from '../../hub/acklag.js';
import { ACK_LAG_CONGESTED_FRAMES, ACK_LAG_RECOVERED_FRAMES } from '../../bindings/detector.js';
import { DEFAULT_ACK_WINDOW_FRAMES } from '../../bindings/tcp/egress.js';
import { deepEqual, equal, ok, throws } from '../lib/assert.js';

describe('hub/acklag: constants', () => {
  it('classification none < watch < throttling < shedding, as codes 0–3', () => {
    deepEqual({ ...Backpressure }, { NONE: 0, WATCH: 1, THROTTLING: 2, SHEDDING: 3 });
    deepEqual([...BACKPRESSURE_NAMES], ['none', 'watch', 'throttling', 'shedding']);
    ok(Object.isFrozen(Backpressure) && Object.isFrozen(BACKPRESSURE_NAMES));
  });

  it('our decision: 48 / 64 / 128, on the binding\'s own numbers', () => {
    equal(ACK_LAG_WATCH, 48);
    equal(ACK_LAG_THROTTLING, 64);
    equal(ACK_LAG_SHEDDING, 128);
    // The reasons, held: a client acks every 32 frames (§13.2), so 8 and 32 would label every
    // healthy client; these are where the Wi-Fi binding already draws its lines.
    equal(ACK_LAG_WATCH, ACK_LAG_RECOVERED_FRAMES, 'watch: not recovered by the §10.3 detector');
    equal(ACK_LAG_THROTTLING, ACK_LAG_CONGESTED_FRAMES, 'throttling: the detector\'s congested lag');
    equal(ACK_LAG_SHEDDING, DEFAULT_ACK_WINDOW_FRAMES, 'shedding: DATA waits in the egress queue');
    equal(ACK_LAG_PERCENTILE, 95);
  });
});

describe('hub/acklag: one session', () => {
  it('ack lag is frames sent minus frames acknowledged, never negative', () => {
    equal(ackLagOf(100, 60), 40);
    equal(ackLagOf(100, 100), 0);
    equal(ackLagOf(5, 9), 0);
    equal(ackLagOf(0, 0), 0);
  });

  it('classifies at each threshold (≥), one below it the rung below', () => {
    equal(classifyAckLag(0), Backpressure.NONE);
    equal(classifyAckLag(47), Backpressure.NONE);
    equal(classifyAckLag(48), Backpressure.WATCH);
    equal(classifyAckLag(63), Backpressure.WATCH);
    equal(classifyAckLag(64), Backpressure.THROTTLING);
    equal(classifyAckLag(127), Backpressure.THROTTLING);
    equal(classifyAckLag(128), Backpressure.SHEDDING);
    equal(classifyAckLag(1e9), Backpressure.SHEDDING);
  });

  it('a level reads as what the §10.4 table does at it: 1 throttles, ≥ 2 sheds', () => {
    equal(classifyLevel(0), Backpressure.NONE);
    equal(classifyLevel(1), Backpressure.THROTTLING);
    equal(classifyLevel(2), Backpressure.SHEDDING);
    equal(classifyLevel(7), Backpressure.SHEDDING);
    equal(classifyLevel(NaN), Backpressure.NONE);
  });

  it('a healthy client acking every 32 frames with up to 15 in flight never leaves none', () => {
    // 200 frames/s for 10 s; the ACK after every 32nd frame reaches the hub 15 frames later.
    let sent = 0;
    let acked = 0;
    let worst = 0;
    const pending: number[] = [];
    for (let i = 0; i < 2000; i++) {
      sent++;
      if (sent % 32 === 0) pending.push(sent);
      while (pending.length > 0 && sent - (pending[0] as number) >= 15) acked = pending.shift() as number;
      const lag = ackLagOf(sent, acked);
      if (lag > worst) worst = lag;
      equal(classifyAckLag(lag), Backpressure.NONE, `frame ${sent}`);
    }
    equal(worst, 46, '31 unacked + 15 in flight');
  });
});

describe('hub/acklag: the summary over sessions', () => {
  it('max and nearest-rank p95 over the measured sessions; the p95 governs', () => {
    const s = new AckLagSummary(20);
    for (let i = 0; i < 19; i++) s.add(10, 0);
    s.add(200, 0);
    s.finish();
    equal(s.sessions, 20);
    equal(s.measured, 20);
    equal(s.max, 200);
    equal(s.p95, 10, 'rank 19 of 20: one straggler among twenty does not label the hub');
    equal(s.lagState, Backpressure.NONE);
    equal(s.state, Backpressure.NONE);
  });

  it('below twenty sessions the p95 is the max', () => {
    const s = new AckLagSummary(8);
    for (let i = 0; i < 7; i++) s.add(i, 0);
    s.add(130, 0);
    s.finish();
    equal(s.p95, 130);
    equal(s.max, 130);
    equal(s.lagState, Backpressure.SHEDDING);
    equal(s.state, Backpressure.SHEDDING);
  });

  it('order of adding does not matter', () => {
    const a = new AckLagSummary(8);
    const b = new AckLagSummary(8);
    const lags = [70, 3, 50, 0, 64, 12, 49, 1];
    for (const l of lags) a.add(l, 0);
    for (const l of lags.slice().reverse()) b.add(l, 0);
    a.finish();
    b.finish();
    deepEqual([a.max, a.p95, a.state], [b.max, b.p95, b.state]);
    deepEqual([a.max, a.p95, a.state], [70, 70, Backpressure.THROTTLING]);
  });

  it('links without stream ACKs (ESP-NOW, NaN) count as sessions with their level only', () => {
    const s = new AckLagSummary(8);
    s.add(NaN, 1);
    s.add(NaN, 0);
    s.add(20, 0);
    s.finish();
    equal(s.sessions, 3);
    equal(s.measured, 1);
    equal(s.max, 20);
    equal(s.congested, 1);
    equal(s.lagState, Backpressure.NONE);
    equal(s.levelState, Backpressure.THROTTLING);
    equal(s.state, Backpressure.THROTTLING, 'the worse of the two');
  });

  it('a severe link labels shedding whatever the lags', () => {
    const s = new AckLagSummary(4);
    s.add(0, 2);
    s.add(0, 0);
    s.finish();
    equal(s.severe, 1);
    equal(s.congested, 1, 'a severe link is congested too');
    equal(s.levelState, Backpressure.SHEDDING);
    equal(s.state, Backpressure.SHEDDING);
  });

  it('the worse of lag and level: a watch lag with a congested link reads throttling', () => {
    const s = new AckLagSummary(4);
    s.add(50, 0);
    s.add(5, 1);
    s.finish();
    equal(s.lagState, Backpressure.WATCH);
    equal(s.levelState, Backpressure.THROTTLING);
    equal(s.state, Backpressure.THROTTLING);
  });

  it('empty: zeros and none; reset empties; beyond capacity lags are dropped, sessions still counted', () => {
    const s = new AckLagSummary(2);
    s.finish();
    deepEqual([s.sessions, s.measured, s.max, s.p95, s.state], [0, 0, 0, 0, Backpressure.NONE]);
    s.add(100, 2);
    s.add(90, 0);
    s.add(500, 0);
    s.finish();
    equal(s.sessions, 3);
    equal(s.measured, 2);
    equal(s.max, 100);
    s.reset();
    s.finish();
    deepEqual([s.sessions, s.measured, s.max, s.p95, s.severe, s.state], [0, 0, 0, 0, 0, Backpressure.NONE]);
    s.add(-4, 0);
    s.finish();
    equal(s.max, 0, 'a negative lag reads 0');
  });

  it('refuses a capacity that is not a positive integer', () => {
    throws(() => new AckLagSummary(0), (e) => e instanceof RangeError);
    throws(() => new AckLagSummary(1.5), (e) => e instanceof RangeError);
  });
});
