// §10.2 grants through the hub: clamps, echo = delivery, the three unsolicited GRANT triggers,
// PUBLISH answers, burst clamps, and the never-shed set that is never re-granted.
import { Priority } from '../../catalog/schema.js';
import { FrameType, type DataFrame, type Frame, type GrantFrame, type PubGrant, type SubGrant } from '../../hub/frames.js';
import { floorToGrantStep, frameBytesFor } from '../../hub/grants.js';
import { Nack } from '../../hub/nack.js';
import { PROBE_INTERVAL_MS, PROBE_STEP, REGRANT_HEADROOM } from '../../hub/regrant.js';
import { deepEqual, equal, fail, ok } from '../lib/assert.js';
import { makeHub, OPERATOR_CREDENTIAL, TestClient, type Fixture } from '../lib/hub-fixture.js';

const SAFETY = 1;
const CONTROL_OWNER = 3;
const IMU = 10;
const ODOM = 11;
const PATH = 15;
const CMD_VEL = 30;
const TRAJECTORY = 31;

const IMU_VALUES = new Float64Array([0.1, 0.2, 9.8, 0, 0, 0]);
const ODOM_VALUES = new Float64Array([1, 2, 0.5, 0.3, 0.1]);
const SAFETY_VALUES = new Float64Array([0, 0, 0]);

function grantsOf(frames: readonly Frame[]): GrantFrame[] {
  return frames.filter((f): f is GrantFrame => f.type === FrameType.GRANT);
}

function rateIn(grants: readonly SubGrant[] | undefined, channelId: number): number {
  const g = grants?.find((x) => x.channelId === channelId);
  return g ? g.grantedRateHz : fail(`no grant for channel ${channelId} in ${JSON.stringify(grants)}`);
}

/** Pushes `channelId` every `stepMs` for `ms`, ticking every push; returns DATA frames per client. */
function run(fx: Fixture, clients: TestClient[], channelId: number, values: Float64Array, stepMs: number, ms: number): DataFrame[][] {
  const out: DataFrame[][] = clients.map(() => []);
  for (let t = 0; t < ms; t += stepMs) {
    fx.clock.advance(stepMs);
    fx.hub.publishSample(channelId, fx.clock.now(), values, values.length);
    fx.hub.tick();
    clients.forEach((c, i) => {
      for (const f of c.take(FrameType.DATA)) if ((f as DataFrame).channelId === channelId) out[i]!.push(f as DataFrame);
    });
  }
  return out;
}

describe('hub grants (§10.2)', () => {
  describe('clamping', () => {
    it('clamps a wish by the catalog max_rate_hz', () => {
      const fx = makeHub();
      const w = new TestClient(fx.hub).hello({ credential: OPERATOR_CREDENTIAL, subWishes: [{ channelId: IMU, wishedRateHz: 900 }] });
      equal(rateIn(w.subGrants, IMU), 200);
    });

    it('clamps a wish by the session tier', () => {
      const fx = makeHub();
      const w = new TestClient(fx.hub).hello({ subWishes: [{ channelId: IMU, wishedRateHz: 200, priority: Priority.elevated }] });
      equal(rateIn(w.subGrants, IMU), 50);
      equal(w.subGrants[0]?.priority, Priority.normal, 'an observer is granted at most normal priority');
    });

    it('clamps a wish by the hub capacity', () => {
      const fx = makeHub({ capacityHz: 30 });
      const w = new TestClient(fx.hub).hello({ credential: OPERATOR_CREDENTIAL, subWishes: [{ channelId: IMU, wishedRateHz: 200 }] });
      equal(rateIn(w.subGrants, IMU), 30);
    });

    it('grants a wish below every clamp as wished, on the 0.1 Hz step', () => {
      const fx = makeHub();
      const w = new TestClient(fx.hub).hello({ subWishes: [{ channelId: IMU, wishedRateHz: 12.345 }] });
      equal(rateIn(w.subGrants, IMU), 12.3);
    });
  });

  describe('echoed exactly: what a grant says is what the hub delivers', () => {
    for (const [capacityHz, clients, expected] of [[2000, 1, 50], [100, 3, 33.3], [45, 2, 22.5]] as const) {
      it(`${clients} client(s) sharing ${capacityHz} Hz are each granted ${expected} Hz and get that many per second`, () => {
        const fx = makeHub({ capacityHz });
        const cs: TestClient[] = [];
        for (let i = 0; i < clients; i++) {
          const c = new TestClient(fx.hub);
          c.hello({ subWishes: [{ channelId: IMU, wishedRateHz: 50 }] });
          cs.push(c);
        }
        // Every client holds the same last word on its grant (WELCOME or a later GRANT).
        for (const v of fx.hub.sessions()) equal(v.subs[0]?.grantedHz, expected);
        const got = run(fx, cs, IMU, IMU_VALUES, 5, 10000);
        for (const d of got) {
          ok(Math.abs(d.length - expected * 10) <= 1, `granted ${expected} Hz, delivered ${d.length} in 10 s`);
          // Always the newest sample: a 200 Hz source, no sample repeated, in order.
          for (let i = 1; i < d.length; i++) ok(d[i]!.seq > d[i - 1]!.seq);
        }
      });
    }

    it('delivers every sample of a source slower than the grant', () => {
      const fx = makeHub();
      const c = new TestClient(fx.hub);
      c.hello({ subWishes: [{ channelId: IMU, wishedRateHz: 50 }] });
      const got = run(fx, [c], IMU, IMU_VALUES, 40, 2000)[0]!;
      equal(got.length, 50);
    });
  });

  describe('unsolicited GRANT', () => {
    it('(a) re-splits the pie when a higher-priority client joins, and again when it leaves', () => {
      const fx = makeHub({ capacityHz: 60 });
      const a = new TestClient(fx.hub);
      const wa = a.hello({ subWishes: [{ channelId: IMU, wishedRateHz: 50 }, { channelId: SAFETY, wishedRateHz: 10 }] });
      equal(rateIn(wa.subGrants, IMU), 50);
      const b = new TestClient(fx.hub);
      const wb = b.hello({ credential: OPERATOR_CREDENTIAL, subWishes: [{ channelId: ODOM, wishedRateHz: 50, priority: Priority.elevated }] });
      equal(rateIn(wb.subGrants, ODOM), 50);
      // A sent nothing, yet hears of the cut at once, before any tick.
      const cut = grantsOf(a.take());
      equal(cut.length, 1);
      equal(rateIn(cut[0]!.subGrants, IMU), 10);
      equal(rateIn(cut[0]!.subGrants, SAFETY), 10, 'the never-shed set keeps its intrinsic rate');
      // And the hub then delivers what it said.
      const d = run(fx, [a], IMU, IMU_VALUES, 5, 3000)[0]!;
      ok(Math.abs(d.length - 30) <= 1, `granted 10 Hz, delivered ${d.length} in 3 s`);
      b.send({ type: FrameType.GOODBYE });
      const back = grantsOf(a.take());
      equal(back.length, 1);
      equal(rateIn(back[0]!.subGrants, IMU), 50);
    });

    it('(b) cuts to the link estimate when congestion lasts more than 5 s, never touching the never-shed set', () => {
      const fx = makeHub();
      const a = new TestClient(fx.hub);
      a.hello({ subWishes: [{ channelId: IMU, wishedRateHz: 50 }, { channelId: SAFETY, wishedRateHz: 1 }] });
      const throughput = 2000;
      a.link.lvl = 1;
      a.link.est = { throughputBps: throughput, rttMs: 40 };
      fx.hub.tick(); // the congestion starts being timed here
      const t0 = fx.clock.now();
      fx.clock.advance(5000);
      fx.hub.tick();
      equal(grantsOf(a.take()).length, 0, 'at exactly 5 s nothing is cut');
      fx.clock.advance(1);
      fx.hub.tick();
      const cut = grantsOf(a.take());
      equal(cut.length, 1);
      equal(fx.clock.now() - t0, 5001);
      // Clamped by the link estimate: the delivered throughput (with headroom) over one imu frame.
      const expected = floorToGrantStep((throughput * REGRANT_HEADROOM) / frameBytesFor(6));
      equal(rateIn(cut[0]!.subGrants, IMU), expected);
      ok(expected < 50);
      equal(rateIn(cut[0]!.subGrants, SAFETY), 10);
      equal(cut[0]!.subGrants?.find((g) => g.channelId === SAFETY)?.priority, Priority.critical);
      // The never-shed set keeps its rate through the cut: every safety sample still goes, at level 1.
      const s = run(fx, [a], SAFETY, SAFETY_VALUES, 100, 1000)[0]!;
      equal(s.length, 10);
      // Once clear, the hub delivers the cut grant (the probe waits 2 s before raising).
      a.link.lvl = 0;
      const d = run(fx, [a], IMU, IMU_VALUES, 5, 1000)[0]!;
      ok(Math.abs(d.length - expected) <= 1, `granted ${expected} Hz, delivered ${d.length} in 1 s`);
    });

    it('(c) probes back up after recovery, one step per interval, until the wish is met', () => {
      const fx = makeHub();
      const a = new TestClient(fx.hub);
      a.hello({ subWishes: [{ channelId: IMU, wishedRateHz: 50 }] });
      a.link.lvl = 1;
      a.link.est = { throughputBps: 2000, rttMs: 40 };
      for (let i = 0; i <= 51; i++) {
        fx.hub.tick();
        fx.clock.advance(100);
      }
      const cut = grantsOf(a.take());
      equal(cut.length, 1);
      let budget = 2000 * REGRANT_HEADROOM;
      equal(rateIn(cut[0]!.subGrants, IMU), floorToGrantStep(budget / frameBytesFor(6)));

      a.link.lvl = 0;
      const demand = 50 * frameBytesFor(6);
      const expected: number[] = [];
      while (budget <= demand) {
        budget *= PROBE_STEP;
        expected.push(budget > demand ? 50 : floorToGrantStep(budget / frameBytesFor(6)));
      }
      const seen: number[] = [];
      const at: number[] = [];
      for (let i = 0; i < 200; i++) {
        fx.hub.tick();
        for (const g of grantsOf(a.take())) {
          seen.push(rateIn(g.subGrants, IMU));
          at.push(fx.clock.now());
        }
        fx.clock.advance(100);
      }
      deepEqual(seen, expected);
      for (let i = 1; i < at.length; i++) equal(at[i]! - at[i - 1]!, PROBE_INTERVAL_MS);
      // Back at the wish, and delivered.
      const d = run(fx, [a], IMU, IMU_VALUES, 5, 1000)[0]!;
      ok(Math.abs(d.length - 50) <= 1, `delivered ${d.length}`);
    });
  });

  describe('publications', () => {
    it('answers a PUBLISH with nothing grantable by a GRANT with an empty granted_publishes, then the NACKs', () => {
      const fx = makeHub();
      const c = new TestClient(fx.hub);
      c.hello();
      c.send({ type: FrameType.PUBLISH, wishes: [{ channelId: CMD_VEL, wishedRateHz: 10 }, { channelId: 99, wishedRateHz: 1 }, { channelId: IMU, wishedRateHz: 1 }] });
      const got = c.take();
      deepEqual(got.map((f) => f.type), [FrameType.GRANT, FrameType.NACK, FrameType.NACK, FrameType.NACK]);
      const g = got[0] as GrantFrame;
      deepEqual(g.pubGrants, []);
      equal(g.subGrants, undefined);
      deepEqual(got.slice(1).map((f) => f.type === FrameType.NACK && [f.code, f.channelId]), [
        [Nack.FORBIDDEN, CMD_VEL], // an observer may not publish cmd_vel
        [Nack.UNKNOWN_CHANNEL, 99],
        [Nack.UNKNOWN_CHANNEL, IMU], // telemetry is not published by clients
      ]);
    });

    it('clamps the publication rate by the catalog and the burst into [granted, 4 × granted] and the catalog max_burst', () => {
      const fx = makeHub();
      const c = new TestClient(fx.hub);
      c.hello({ credential: OPERATOR_CREDENTIAL });
      const cases: [number, number, number | undefined, number, number][] = [
        // channel, wish, burst wish, granted, burst
        [CMD_VEL, 10, 100, 10, 40],
        [CMD_VEL, 10, 3, 10, 10],
        [CMD_VEL, 10, 25, 10, 25],
        [CMD_VEL, 10, undefined, 10, 10],
        [CMD_VEL, 80, 1000, 50, 200],
        [TRAJECTORY, 5, 100, 5, 20],
        [TRAJECTORY, 2, 100, 2, 8],
        [TRAJECTORY, 9, 19, 5, 19],
      ];
      for (const [channelId, wishedRateHz, burst, granted, grantedBurst] of cases) {
        c.send({ type: FrameType.PUBLISH, wishes: [burst === undefined ? { channelId, wishedRateHz } : { channelId, wishedRateHz, burst }] });
        const got = c.take();
        equal(got.length, 1);
        const pg = (got[0] as GrantFrame).pubGrants as PubGrant[];
        deepEqual(pg, [{ channelId, grantedRateHz: granted, burst: grantedBurst }], `${channelId} ${wishedRateHz} ${burst}`);
      }
    });
  });

  describe('segments grants (§10.4: whole source or nothing)', () => {
    it('grants a segments stream its whole source, whatever rate was wished', () => {
      const fx = makeHub();
      const w = new TestClient(fx.hub).hello({ subWishes: [{ channelId: PATH, wishedRateHz: 5 }] });
      equal(rateIn(w.subGrants, PATH), 25);
    });

    it('grants nothing rather than part of a segments stream, and gives the share to the others', () => {
      const fx = makeHub({ capacityHz: 30 });
      const w = new TestClient(fx.hub).hello({ subWishes: [{ channelId: PATH, wishedRateHz: 25 }, { channelId: IMU, wishedRateHz: 50 }] });
      // Capacity 30 split max-min fair would give path 15 and imu 15; a part of path is none.
      equal(rateIn(w.subGrants, PATH), 0);
      equal(rateIn(w.subGrants, IMU), 30);
    });
  });

  it('never re-grants the never-shed set, even with no capacity at all', () => {
    const fx = makeHub({ capacityHz: 0 });
    const w = new TestClient(fx.hub).hello({
      subWishes: [{ channelId: SAFETY, wishedRateHz: 1 }, { channelId: CONTROL_OWNER, wishedRateHz: 1 }, { channelId: IMU, wishedRateHz: 50 }],
    });
    equal(rateIn(w.subGrants, SAFETY), 10);
    equal(rateIn(w.subGrants, CONTROL_OWNER), 2);
    equal(rateIn(w.subGrants, IMU), 0);
  });

  it('answers SUBSCRIBE and UNSUBSCRIBE with a GRANT re-stating every grant', () => {
    const fx = makeHub();
    const c = new TestClient(fx.hub);
    c.hello();
    c.send({ type: FrameType.SUBSCRIBE, wishes: [{ channelId: IMU, wishedRateHz: 20 }, { channelId: ODOM, wishedRateHz: 10 }] });
    const g1 = grantsOf(c.take());
    equal(g1.length, 1);
    deepEqual(g1[0]!.subGrants?.map((g) => [g.channelId, g.grantedRateHz]), [[IMU, 20], [ODOM, 10]]);
    c.send({ type: FrameType.UNSUBSCRIBE, channels: [IMU] });
    const g2 = grantsOf(c.take());
    deepEqual(g2[0]!.subGrants?.map((g) => [g.channelId, g.grantedRateHz]), [[ODOM, 10]]);
    const d = run(fx, [c], IMU, IMU_VALUES, 5, 500)[0]!;
    equal(d.length, 0);
    const o = run(fx, [c], ODOM, ODOM_VALUES, 20, 1000)[0]!;
    equal(o.length, 10);
  });
});
