// §10.5 ingress: a token bucket per granted publication counting samples, whole-bundle drops,
// RATE_LIMITED at most 5 per second per session, legal-rate bundles still delivered; the intent
// limiter (§9: 20/s, depth 20).
import { CborWriter } from '../../hub/cbor.js';
import { INTENT_BUCKET_DEPTH, INTENT_RATE_PER_S, MAX_BUNDLE_SAMPLES, STREAM_INGRESS_OVERAGE_NACK_PER_S } from '../../hub/constants.js';
import { Fast, FastReader } from '../../hub/fast-frames.js';
import { encodeFrame, FrameType, type EchoFrame, type NackFrame, type PubWish } from '../../hub/frames.js';
import { Nack } from '../../hub/nack.js';
import { deepEqual, equal, ok } from '../lib/assert.js';
import { makeHub, OPERATOR_CREDENTIAL, TestClient, type Fixture } from '../lib/hub-fixture.js';

const IMU = 10;
const CMD_VEL = 30;
const TRAJECTORY = 31;
const DISARM = 41;
const TAKE_CONTROL = 42;

/** An operator that owns control and holds the publication grants it wished for. */
function owner(fx: Fixture, pubWishes: PubWish[]): TestClient {
  const c = new TestClient(fx.hub);
  c.hello({ credential: OPERATOR_CREDENTIAL, pubWishes });
  c.intent(TAKE_CONTROL, 1);
  const echo = c.take(FrameType.ECHO)[0] as EchoFrame | undefined;
  equal(echo?.result, 0);
  return c;
}

function samples(n: number, t0: number, width = 2): number[][] {
  const out: number[][] = [];
  for (let i = 0; i < n; i++) {
    const s = [t0 + i];
    for (let k = 1; k < width + 1; k++) s.push(0.1 * k);
    out.push(s);
  }
  return out;
}

function bundle(c: TestClient, channelId: number, n: number, t: number, width = 2): void {
  c.send({ type: FrameType.BUNDLE, channelId, samples: samples(n, t, width) });
}

describe('hub ingress (§10.5)', () => {
  it('takes n tokens for a bundle of n samples and drops an overdrawing bundle whole', () => {
    const fx = makeHub();
    const c = owner(fx, [{ channelId: CMD_VEL, wishedRateHz: 10 }]); // no burst: depth = 10 samples
    bundle(c, CMD_VEL, 10, 1);
    equal(fx.robot.published.length, 1);
    equal(fx.robot.published[0]!.samples.length, 10);
    bundle(c, CMD_VEL, 1, 2);
    equal(fx.robot.published.length, 1, 'an empty bucket refuses even one sample');
    const n = c.nacks();
    deepEqual(n.map((x) => [x.code, x.channelId, x.frameType]), [[Nack.RATE_LIMITED, CMD_VEL, FrameType.BUNDLE]]);
    equal(n[0]!.retryAfterMs, 100, 'one sample refills in 100 ms at 10/s');
    fx.clock.advance(100);
    bundle(c, CMD_VEL, 1, 3);
    equal(fx.robot.published.length, 2);
    fx.clock.advance(300); // three tokens
    bundle(c, CMD_VEL, 4, 4);
    equal(fx.robot.published.length, 2, 'four samples against three tokens: the whole bundle is dropped');
    bundle(c, CMD_VEL, 3, 5);
    equal(fx.robot.published.length, 3);
    deepEqual(fx.robot.published.map((p) => p.samples.length), [10, 1, 3]);
  });

  it('sends at most 5 RATE_LIMITED per second per session while legal-rate bundles keep being delivered', () => {
    const fx = makeHub();
    const c = owner(fx, [{ channelId: CMD_VEL, wishedRateHz: 10 }]);
    bundle(c, CMD_VEL, 10, 0); // empty the bucket
    c.take();
    const nackTimes: number[] = [];
    const start = fx.clock.now();
    let accepted = 0;
    // 50 one-sample bundles a second against a 10/s grant, for 3 s.
    for (let k = 1; k <= 150; k++) {
      fx.clock.advance(20);
      const before = fx.robot.published.length;
      bundle(c, CMD_VEL, 1, k);
      accepted += fx.robot.published.length - before;
      for (const x of c.nacks()) {
        equal(x.code, Nack.RATE_LIMITED);
        equal(x.channelId, CMD_VEL);
        nackTimes.push(fx.clock.now());
      }
    }
    equal(accepted, 30, 'exactly the granted 10 samples per second get through');
    equal(STREAM_INGRESS_OVERAGE_NACK_PER_S, 5);
    // In no one-second window more than five.
    for (let i = 5; i < nackTimes.length; i++) ok(nackTimes[i]! - nackTimes[i - 5]! >= 1000, `six NACKs within ${nackTimes[i]! - nackTimes[i - 5]!} ms`);
    equal(nackTimes.length, 15);
    ok(nackTimes[0]! - start <= 40);
  });

  it('lets a granted burst through at once, then meters the rate', () => {
    const fx = makeHub();
    const c = owner(fx, [{ channelId: TRAJECTORY, wishedRateHz: 5, burst: 20 }]);
    bundle(c, TRAJECTORY, 20, 0, 6);
    equal(fx.robot.published.length, 1);
    bundle(c, TRAJECTORY, 1, 1, 6);
    equal(fx.robot.published.length, 1);
    fx.clock.advance(200);
    bundle(c, TRAJECTORY, 1, 2, 6);
    equal(fx.robot.published.length, 2);
  });

  it('refuses a bundle larger than the bucket without a retry time: waiting cannot help', () => {
    const fx = makeHub();
    const c = owner(fx, [{ channelId: TRAJECTORY, wishedRateHz: 5 }]); // no burst wished: depth 5
    bundle(c, TRAJECTORY, 6, 0, 6);
    equal(fx.robot.published.length, 0);
    const n = c.nacks();
    equal(n[0]?.code, Nack.RATE_LIMITED);
    equal(n[0]?.retryAfterMs, undefined);
    bundle(c, TRAJECTORY, 5, 1, 6);
    equal(fx.robot.published.length, 1);
  });

  it('refuses bundles for what was not granted, and samples that are not the catalog\'s shape', () => {
    const fx = makeHub();
    const c = owner(fx, [{ channelId: CMD_VEL, wishedRateHz: 10 }]);
    bundle(c, TRAJECTORY, 1, 0, 6);
    bundle(c, 99, 1, 0);
    bundle(c, IMU, 1, 0, 6);
    bundle(c, CMD_VEL, 1, 0, 3); // cmd_vel has two fields
    c.send({ type: FrameType.BUNDLE, channelId: CMD_VEL, samples: [[1, NaN, 0]] });
    c.send({ type: FrameType.BUNDLE, channelId: CMD_VEL, samples: [[1, 0.5, Infinity]] });
    deepEqual(c.nacks().map((x) => [x.code, x.channelId]), [
      [Nack.NOT_GRANTED, TRAJECTORY],
      [Nack.UNKNOWN_CHANNEL, 99],
      [Nack.NOT_GRANTED, IMU],
      [Nack.MALFORMED, CMD_VEL],
      [Nack.MALFORMED, CMD_VEL],
      [Nack.MALFORMED, CMD_VEL],
    ]);
    equal(fx.robot.published.length, 0);
    bundle(c, CMD_VEL, 1, 0);
    equal(fx.robot.published.length, 1, 'a refused bundle took no tokens');
  });

  it('refuses a canonical bundle of samples wider than any publication takes by its width, as any other misshapen one', () => {
    const fx = makeHub();
    const c = owner(fx, [{ channelId: CMD_VEL, wishedRateHz: 10 }]);
    // 32 samples of 12 numbers: more than the hub's reader keeps (32 × [t, six fields], trajectory's).
    const wide = Array.from({ length: 32 }, (_, i) => Array.from({ length: 12 }, (_, k) => (k === 0 ? i : k)));
    c.send({ type: FrameType.BUNDLE, channelId: CMD_VEL, samples: wide });
    c.send({ type: FrameType.BUNDLE, channelId: TRAJECTORY, samples: wide });
    deepEqual(c.nacks().map((x) => [x.code, x.channelId, x.frameType]), [
      [Nack.MALFORMED, CMD_VEL, FrameType.BUNDLE],
      [Nack.NOT_GRANTED, TRAJECTORY, FrameType.BUNDLE],
    ]);
    equal(fx.robot.published.length, 0);
    bundle(c, CMD_VEL, 1, 0);
    equal(fx.robot.published.length, 1, 'a refused bundle took no tokens');
  });

  it('refuses motion publications from a session that does not own control, before metering them, with throttled NACKs', () => {
    const fx = makeHub();
    owner(fx, []);
    const other = new TestClient(fx.hub);
    other.hello({ credential: OPERATOR_CREDENTIAL, pubWishes: [{ channelId: CMD_VEL, wishedRateHz: 10 }] });
    for (let i = 0; i < 12; i++) bundle(other, CMD_VEL, 1, i);
    const n = other.nacks();
    // Refusals of bundles share the session's NACK throttle (§10.5): feedback, not an echo per
    // bundle, so a non-owner streaming motion cannot fill its own never-shed queue.
    equal(n.length, STREAM_INGRESS_OVERAGE_NACK_PER_S);
    for (const x of n) deepEqual([x.code, x.channelId, x.frameType], [Nack.NOT_OWNER, CMD_VEL, FrameType.BUNDLE]);
    equal(fx.robot.published.length, 0);
  });

  describe('the fast reader\'s BUNDLE block, sized to the widest publication', () => {
    const frame = (samples: number[][]): Uint8Array => {
      const w = new CborWriter(new Uint8Array(1024));
      encodeFrame({ type: FrameType.BUNDLE, channelId: TRAJECTORY, samples }, w);
      return w.buf.slice(0, w.pos);
    };
    const full = Array.from({ length: MAX_BUNDLE_SAMPLES }, (_, i) => [i, 0.5, -1, 2.25, 3, 4, 5]);

    it('keeps every number of a bundle as wide as it was sized for', () => {
      const r = new FastReader(7);
      const f = frame(full);
      equal(r.read(f, 0, f.length), Fast.BUNDLE);
      equal(r.block.count, MAX_BUNDLE_SAMPLES);
      equal(r.block.width, 7);
      deepEqual(Array.from(r.block.numbers.subarray(0, MAX_BUNDLE_SAMPLES * 7)), full.flat());
    });

    it('judges a wider bundle exactly as the full-size reader does, keeping only its shape', () => {
      const small = new FastReader(3);
      const big = new FastReader();
      const cases = [full, full.map((s) => [...s, 6]), [...full.slice(0, 31), [31, 1, 2, 3, 4, 5]], [...full.slice(0, 31), [-1, 1, 2, 3, 4, 5, 6]], [...full.slice(0, 31), [0.5, 1, 2, 3, 4, 5, 6]]];
      for (const samples of cases) {
        const f = frame(samples);
        const verdict = big.read(f, 0, f.length);
        equal(small.read(f, 0, f.length), verdict);
        if (verdict !== Fast.BUNDLE) continue;
        equal(small.block.count, big.block.count);
        equal(small.block.width, big.block.width);
      }
      const f = frame(full);
      equal(small.read(f, 0, f.length), Fast.BUNDLE, 'a whole bundle of 7-number samples, wider than 3');
      equal(small.block.width, 7);
    });
  });

  describe('intent limiter (§9)', () => {
    it('accepts 20 at once, refuses the rest with RATE_LIMITED, refills at 20 per second', () => {
      equal(INTENT_RATE_PER_S, 20);
      equal(INTENT_BUCKET_DEPTH, 20);
      const fx = makeHub();
      const c = new TestClient(fx.hub);
      c.hello({ credential: OPERATOR_CREDENTIAL });
      for (let i = 1; i <= 25; i++) c.intent(DISARM, i);
      const got = c.take();
      const echoes = got.filter((f): f is EchoFrame => f.type === FrameType.ECHO);
      const nacks = got.filter((f): f is NackFrame => f.type === FrameType.NACK);
      deepEqual(echoes.map((e) => e.requestId), Array.from({ length: 20 }, (_, i) => i + 1));
      deepEqual(nacks.map((x) => [x.code, x.requestId, x.channelId]), [21, 22, 23, 24, 25].map((r) => [Nack.RATE_LIMITED, r, DISARM]));
      equal(nacks[0]!.retryAfterMs, 50);
      equal(fx.robot.intents.length, 20);
      fx.clock.advance(49);
      c.intent(DISARM, 26);
      equal(fx.robot.intents.length, 20);
      fx.clock.advance(1);
      c.intent(DISARM, 27);
      equal(fx.robot.intents.length, 21);
      fx.clock.advance(1000);
      for (let i = 0; i < 21; i++) c.intent(DISARM, 100 + i);
      equal(fx.robot.intents.length, 41);
    });

    it('throttles its RATE_LIMITED answers like every other RATE_LIMITED (5 per second per session)', () => {
      const fx = makeHub();
      const c = new TestClient(fx.hub);
      c.hello({ credential: OPERATOR_CREDENTIAL });
      for (let i = 1; i <= 40; i++) c.intent(DISARM, i);
      const got = c.take();
      equal(got.filter((f) => f.type === FrameType.ECHO).length, 20);
      equal(got.filter((f) => f.type === FrameType.NACK && f.code === Nack.RATE_LIMITED).length, 5);
    });
  });
});
