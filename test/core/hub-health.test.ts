// docs/operations.md "Health, admission and overload" wired into the hub: the health report from the hub's own counters (HEALTH frame and
// healthReport()), its privacy, admission (HUB_PRESSURE with retry_after_ms; resumes always
// admitted), every ladder rung up and back down with its actuation, the ingress governor, and
// the four core fixes that came with it (PONG t1, ack counting, BUNDLE refusal throttle,
// withdrawn publications).
import { ADMISSION_LADDER_RETRY_AFTER_MS, ADMISSION_RETRY_AFTER_MS, AdmissionReason } from '../../hub/admission.js';
import { STREAM_INGRESS_OVERAGE_NACK_PER_S } from '../../hub/constants.js';
import { FrameType, GoodbyeReason, type AckFrame, type GrantFrame, type HealthFrame, type NackFrame, type PongFrame } from '../../hub/frames.js';
import { createHubLoad, findInReport, nonNumericLeaves } from '../../hub/health.js';
import { Hub, LOAD_PERIOD_MS } from '../../hub/hub.js';
import { healthSummary } from '../../hub/load.js';
import { LADDER_PARK_INTERVAL_MS, LADDER_READER_STALL_MS, LADDER_RELIEF_MS, LadderRung, LadderTrigger } from '../../hub/ladder.js';
import { Nack } from '../../hub/nack.js';
import { SessionState } from '../../hub/session.js';
import { deepEqual, equal, ok } from '../lib/assert.js';
import { makeHub, MAINTAINER_CREDENTIAL, OPERATOR_CREDENTIAL, SeededRandom, TestClient, VirtualClock, type Fixture } from '../lib/hub-fixture.js';
import { AckForm, type LinkCaps } from '../../hub/ports.js';
import { TestLink } from '../lib/test-link.js';

/** An ESP-NOW-like test link: datagrams, acknowledged by bitmap (no stream ack lag, Link.ackLag NaN). */
class BitmapTestLink extends TestLink {
  constructor(capacity: number, mtu: number) {
    super('espnow', capacity, mtu);
    (this as { caps: LinkCaps }).caps = Object.freeze({ ...this.caps, datagram: true, ackForm: AckForm.BITMAP });
  }
  override ackLag(): number {
    return NaN;
  }
}

/**
 * The hub measures its load and moves its ladder once every LOAD_PERIOD_MS (hub/hub.ts tick): a
 * tick after that long is one where the ladder reads the signals as they are now.
 */
function loadTick(fx: Fixture): void {
  fx.clock.advance(LOAD_PERIOD_MS);
  fx.hub.tick();
}

const SAFETY = 1;
const IMU = 10;
const SCAN = 14; // background STREAM
const CMD_VEL = 30;
const TAKE_CONTROL = 42;
const DISARM = 41;

type Metrics = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

function metrics(fx: Fixture): Metrics {
  return (fx.hub.healthReport() as { metrics: Metrics }).metrics;
}

/** A clock the test can make a tick take `d` ms on: the first reading returns t, every later one t + d. */
class SteppingClock extends VirtualClock {
  private step = 0;
  override now(): number {
    const t = this.t;
    if (this.step !== 0) {
      this.t += this.step;
      this.step = 0;
    }
    return t;
  }
  /** The next hub.tick() takes `ms` (its first clock reading is its start). */
  slowNext(ms: number): void {
    this.step = ms;
  }
}

/** Sends HEALTH and reassembles the report from its chunks (§5.18, offset/total as §5.17). */
function fetchHealth(c: TestClient): { text: string; frames: number } {
  let text = '';
  let frames = 0;
  for (;;) {
    c.send(text.length > 0 ? { type: FrameType.HEALTH, offset: text.length } : { type: FrameType.HEALTH });
    const got = c.take(FrameType.HEALTH) as HealthFrame[];
    equal(got.length, 1, 'one HEALTH frame per request');
    const f = got[0] as HealthFrame;
    equal(f.offset ?? 0, text.length);
    text += f.text ?? '';
    frames++;
    if (f.total === undefined || text.length >= f.total) return { text, frames };
  }
}

function lastSubGrants(c: TestClient): Map<number, number> {
  const grants = c.take(FrameType.GRANT) as GrantFrame[];
  const out = new Map<number, number>();
  for (const g of grants) for (const s of g.subGrants ?? []) out.set(s.channelId, s.grantedRateHz);
  return out;
}

function grantOf(fx: Fixture, sessionId: number, channelId: number): number {
  for (const v of fx.hub.sessions()) if (v.id === sessionId) for (const s of v.subs) if (s.channelId === channelId) return s.grantedHz;
  return -1;
}

function stateOf(fx: Fixture, id: number): number {
  for (const v of fx.hub.sessions()) if (v.id === id) return v.state;
  return SessionState.CLOSED;
}

function nackCodes(c: TestClient): number[][] {
  return c.nacks().map((n) => [n.code, n.retryAfterMs ?? -1]);
}

function owner(fx: Fixture, rateHz = 50): TestClient {
  const c = new TestClient(fx.hub);
  c.hello({ credential: OPERATOR_CREDENTIAL, pubWishes: [{ channelId: CMD_VEL, wishedRateHz: rateHz }] });
  c.intent(TAKE_CONTROL, 1);
  c.take();
  equal(fx.hub.controlOwner > 0, true);
  return c;
}

/** A STALE session (transport lost) and its token, for resumes. */
function staleSession(fx: Fixture): { id: number; token: Uint8Array } {
  const c = new TestClient(fx.hub);
  const w = c.hello({ subWishes: [{ channelId: IMU, wishedRateHz: 10 }] });
  c.sink.lost();
  equal(stateOf(fx, w.sessionId), SessionState.STALE);
  return { id: w.sessionId, token: w.resumeToken };
}

function resumes(fx: Fixture, s: { id: number; token: Uint8Array }): void {
  const c = new TestClient(fx.hub);
  const w = c.hello({ resumeToken: s.token });
  equal(w.sessionId, s.id, 'the resume is admitted');
  equal(stateOf(fx, s.id), SessionState.ACTIVE);
}

function helloRefused(fx: Fixture): number[][] {
  const c = new TestClient(fx.hub);
  c.send({ type: FrameType.HELLO, version: 1, name: 'late' });
  const got = c.take();
  ok(!got.some((f) => f.type === FrameType.WELCOME), 'no WELCOME');
  return got.filter((f) => f.type === FrameType.NACK).map((f) => [(f as { code: number }).code, (f as { retryAfterMs?: number }).retryAfterMs ?? -1]);
}

describe('hub health (docs/operations.md "Health, admission and overload")', () => {
  describe('the report', () => {
    it('has metrics.version 1 and counts table rows, NACKs, parks, resumes and ESTOPs from a run', () => {
      const fx = makeHub();
      const m = new TestClient(fx.hub);
      m.hello({ credential: MAINTAINER_CREDENTIAL, subWishes: [{ channelId: IMU, wishedRateHz: 50 }, { channelId: SAFETY, wishedRateHz: 10 }] });
      const obs = new TestClient(fx.hub);
      obs.hello();
      obs.send({ type: FrameType.HEALTH });
      deepEqual(nackCodes(obs), [[Nack.FORBIDDEN, -1]], 'HEALTH below maintainer tier is FORBIDDEN');
      const imu = new Float64Array(6);
      for (let i = 0; i < 10; i++) {
        fx.clock.advance(20);
        fx.hub.publishSample(IMU, fx.clock.now(), imu, 6);
      }
      // A park: a wedged session whose never-shed queue stalls 2 s; then its resume.
      const p = new TestClient(fx.hub);
      const pw = p.hello({ subWishes: [{ channelId: SAFETY, wishedRateHz: 10 }] });
      p.link.capacity = 0;
      p.send({ type: FrameType.PING, t0: 1 });
      for (let i = 0; i <= 21; i++) {
        fx.clock.advance(100);
        fx.hub.tick();
      }
      equal(stateOf(fx, pw.sessionId), SessionState.STALE);
      resumes(fx, { id: pw.sessionId, token: pw.resumeToken });
      obs.estop(1);
      m.take();
      const r = metrics(fx);
      equal(r.version, 1);
      deepEqual(nonNumericLeaves(fx.hub.healthReport()), [], 'every leaf a finite number');
      deepEqual(r.pushes.rows, Array.from(fx.hub.counters.rows).slice(1, 16));
      ok((r.pushes.rows[0] as number) > 0, 'row 1 (critical) pushes counted');
      equal(r.pushes.delivered, fx.hub.counters.delivered);
      ok(r.pushes.delivered >= 10);
      equal(r.nacks.FORBIDDEN, 1);
      equal(r.nacks.INGRESS_BUDGET, 0);
      equal(r.parks, 1);
      equal(r.resumes, 1);
      equal(r.estops, 1);
      equal(r.latched, 1);
      deepEqual(r.sessions, { slots: 8, active: 3, stale: 0 });
      equal(r.admission.admitted, 3);
      equal(r.admission.resumes, 1);
      // The HEALTH frame carries the same report, in chunks on a 1024-byte link.
      const { text, frames } = fetchHealth(m);
      ok(frames > 1, `${frames} chunks`);
      const viaFrame = (JSON.parse(text) as { metrics: Metrics }).metrics;
      equal(viaFrame.version, 1);
      deepEqual(viaFrame.pushes, r.pushes);
      deepEqual(viaFrame.nacks, r.nacks);
      equal(viaFrame.estops, 1);
      equal(viaFrame.links.length, 3);
    });

    it('healthSummary gives the numbers healthReport and ready give at the same instant, through congestion, a stale session, a late tick and an ESTOP', () => {
      const fx = makeHub({ tickPeriodMs: 10 });
      const out = healthSummary();
      const checks: string[] = [];
      const same = (when: string): void => {
        const h = { ...fx.hub.healthSummary(out) };
        const r = metrics(fx);
        const expected = {
          atMs: r.atMs,
          ready: fx.hub.ready() ? 1 : 0,
          latched: r.latched,
          estops: r.estops,
          slots: r.sessions.slots,
          active: r.sessions.active,
          stale: r.sessions.stale,
          delivered: r.pushes.delivered,
          decimated: r.pushes.decimated,
          conflated: r.pushes.conflated,
          shedDrops: r.pushes.shedDrops,
          egressDrops: r.pushes.egressDrops,
          rateGated: r.pushes.rateGated,
          parks: r.parks,
          resumes: r.resumes,
          rung: r.ladder.rung,
          ladderChanges: r.ladder.changes,
          egressOccupancy: r.egress.occupancy,
          readerStalledLinks: r.egress.readerStalledLinks,
          heapUsedBytes: r.heap.usedBytes,
          heapLimitBytes: r.heap.limitBytes,
          loopDelayP95: r.loopDelayMs.p95,
          loopDelayMax: r.loopDelayMs.max,
        };
        deepEqual(h, expected, when);
        checks.push(when);
      };
      same('an idle hub');
      const m = new TestClient(fx.hub);
      m.hello({ credential: MAINTAINER_CREDENTIAL, subWishes: [{ channelId: IMU, wishedRateHz: 50 }, { channelId: SAFETY, wishedRateHz: 10 }] });
      const slow = new TestClient(fx.hub);
      slow.hello({ subWishes: [{ channelId: IMU, wishedRateHz: 200 }, { channelId: SAFETY, wishedRateHz: 10 }] });
      slow.link.capacity = 40; // fills at once: congested, its samples shed
      staleSession(fx);
      const imu = new Float64Array(6);
      for (let i = 0; i < 300; i++) {
        fx.clock.advance(5);
        fx.hub.publishSample(IMU, fx.clock.now(), imu, 6);
        if (i % 2 === 0) fx.hub.tick();
      }
      same('traffic with a congested subscriber and a stale session');
      ok(out.delivered > 0 && out.stale === 1 && out.shedDrops + out.rateGated > 0, 'the run moved the counters the summary gives');
      fx.clock.advance(400); // a late tick: the loop delay view, and admission refuses
      fx.hub.tick();
      same('after a 390 ms late tick');
      equal(out.ready, 0, 'the late tick refuses new sessions');
      ok(out.loopDelayMax >= 390);
      m.estop(1);
      fx.clock.advance(10);
      fx.hub.tick();
      same('latched');
      equal(out.latched, 1);
      equal(out.estops, 1);
      equal(checks.length, 4);
    });

    it('answers HEALTH in one frame where it fits and chunks it on a 250-byte ESP-NOW link', () => {
      const fx = makeHub();
      const big = new TestClient(fx.hub, new TestLink('tcp', 1 << 20, 4096));
      big.hello({ credential: MAINTAINER_CREDENTIAL });
      big.send({ type: FrameType.HEALTH });
      const one = big.take(FrameType.HEALTH) as HealthFrame[];
      equal(one.length, 1);
      equal(one[0]!.total, undefined, 'whole: no offset/total');
      const small = new TestClient(fx.hub, new BitmapTestLink(1 << 20, 250));
      small.hello({ credential: MAINTAINER_CREDENTIAL });
      const { text, frames } = fetchHealth(small);
      ok(frames >= 8, `${frames} chunks`);
      const r = (JSON.parse(text) as { metrics: Metrics }).metrics;
      deepEqual(
        r.links.map((l: Metrics) => [l.binding, l.loss]),
        [
          [1, -1],
          [4, -1],
        ],
        'binding codes; a link that measures no loss reads -1',
      );
      equal(r.ackLag.measured, 1, 'ESP-NOW has no ack lag');
      for (const f of small.link.frames(FrameType.HEALTH)) ok(((f as HealthFrame).text ?? '').length <= 210);
    });

    it("keeps a chunked HEALTH answer's text for its own session only: a new session in the slot starts without it", () => {
      const fx = makeHub();
      const first = new TestClient(fx.hub, new BitmapTestLink(1 << 20, 250));
      first.hello({ credential: MAINTAINER_CREDENTIAL });
      first.send({ type: FrameType.HEALTH });
      const head = first.take(FrameType.HEALTH) as HealthFrame[];
      equal(head.length, 1);
      const next = (head[0]!.text ?? '').length;
      ok(head[0]!.total !== undefined && next > 0 && next < head[0]!.total, 'the first of several chunks');
      equal(fx.hub.sessions().length, 1);
      first.send({ type: FrameType.GOODBYE, reason: GoodbyeReason.SHUTDOWN });
      equal(fx.hub.sessions().length, 0, 'closed');
      const second = new TestClient(fx.hub, new BitmapTestLink(1 << 20, 250));
      second.hello({ credential: MAINTAINER_CREDENTIAL });
      // The next chunk of the first session's reading is no chunk of this one's.
      second.send({ type: FrameType.HEALTH, offset: next });
      const answer = second.take();
      equal(answer.filter((f) => f.type === FrameType.HEALTH).length, 0);
      deepEqual(
        answer.filter((f) => f.type === FrameType.NACK).map((n) => (n as NackFrame).code),
        [Nack.MALFORMED],
      );
      // Its own reading chunks as ever.
      const { text } = fetchHealth(second);
      ok((JSON.parse(text) as { metrics: Metrics }).metrics !== undefined);
    });

    it('records intent→echo latency and the egress wait of never-shed frames', () => {
      const fx = makeHub();
      const c = owner(fx);
      c.intent(DISARM, 2);
      c.take();
      const s = new TestClient(fx.hub);
      s.hello({ subWishes: [{ channelId: SAFETY, wishedRateHz: 10 }] });
      s.link.capacity = 0;
      fx.hub.estop(3); // the safety STATE update waits in s's never-shed queue
      fx.clock.advance(300);
      s.link.capacity = 1 << 20;
      fx.hub.tick();
      const r = metrics(fx);
      equal(r.intentEchoMs.count, 2, 'take_control and disarm');
      equal(r.egressWaitMs.count, 1, 'the safety update, drained at the tick');
      equal(r.egressWaitMs.max, 300);
    });

    it('never holds a client name, credential or payload value (HEALTH text and healthReport())', () => {
      const fx = makeHub();
      const NAME = 'Zq9-secret-client-name';
      const m = new TestClient(fx.hub);
      m.send({ type: FrameType.HELLO, version: 1, name: NAME, credential: MAINTAINER_CREDENTIAL, subWishes: [{ channelId: IMU, wishedRateHz: 50 }] });
      const w = m.take(FrameType.WELCOME)[0] as { resumeToken: Uint8Array };
      const o = new TestClient(fx.hub);
      o.send({ type: FrameType.HELLO, version: 1, name: 'Kw4-hidden-nick', credential: OPERATOR_CREDENTIAL, pubWishes: [{ channelId: CMD_VEL, wishedRateHz: 50 }] });
      o.intent(TAKE_CONTROL, 1);
      o.send({ type: FrameType.BUNDLE, channelId: CMD_VEL, samples: [[5, 271828.1828, 314159.2653]] });
      o.intent(DISARM, 9, ['arg-secret-77']);
      const imu = Float64Array.from([123456.789, 987654.321, 55555.5, 0, 0, 0]);
      fx.hub.publishSample(IMU, fx.clock.now(), imu, 6);
      equal(fx.robot.published.length, 1);
      let token = '';
      for (const b of w.resumeToken) token += (b < 16 ? '0' : '') + b.toString(16);
      const needles = [NAME, 'Kw4-hidden-nick', 'operator-token-0001', 'maintainer-token-01', '271828', '314159', 'arg-secret-77', '123456.789', '987654.321', '55555.5', token];
      // The needles are findable: the check can fail.
      deepEqual(findInReport({ x: `${NAME}/271828.1828` }, needles), [NAME, '271828']);
      deepEqual(findInReport(fx.hub.healthReport(), needles), []);
      deepEqual(findInReport(fetchHealth(m).text, needles), []);
    });
  });

  describe('admission (§6.3)', () => {
    it('event loop: a 390 ms late tick refuses HELLO until that second leaves the 10 s view; a resume is admitted', () => {
      const fx = makeHub({ tickPeriodMs: 10 });
      const stale = staleSession(fx);
      fx.clock.t = 5000;
      fx.hub.tick();
      fx.clock.t = 5400; // 390 ms later than one period
      fx.hub.tick();
      ok(!fx.hub.ready());
      deepEqual(helloRefused(fx), [[Nack.HUB_PRESSURE, 15000 - 5400]], 'second 5 leaves the view at 15000');
      equal(fx.hub.admission.refusals[AdmissionReason.EVENT_LOOP], 1);
      resumes(fx, stale);
      fx.clock.t = 14999;
      deepEqual(helloRefused(fx), [[Nack.HUB_PRESSURE, 1]]);
      fx.clock.t = 15000;
      ok(fx.hub.ready());
      new TestClient(fx.hub).hello();
      equal(metrics(fx).nacks.HUB_PRESSURE, 2);
    });

    it('tick: a tick p95 above the 25 ms budget over ≥ 30 ticks refuses HELLO (retry 1000); a resume is admitted', () => {
      const clock = new SteppingClock();
      const fx = makeHub({}, undefined, clock);
      const stale = staleSession(fx);
      for (let i = 0; i < 29; i++) {
        clock.slowNext(30);
        fx.hub.tick();
        clock.advance(10);
      }
      ok(fx.hub.ready(), '29 ticks are too few to judge');
      clock.slowNext(30);
      fx.hub.tick();
      ok(!fx.hub.ready());
      deepEqual(helloRefused(fx), [[Nack.HUB_PRESSURE, ADMISSION_RETRY_AFTER_MS]]);
      equal(fx.hub.admission.refusals[AdmissionReason.TICK], 1);
      resumes(fx, stale);
    });

    it('never-shed backlog: more than a quarter of the never-shed capacity waiting refuses HELLO; a resume is admitted', () => {
      const fx = makeHub({ slots: 2, neverShedBytes: 2048 }); // limit 1024 bytes
      const stale = staleSession(fx);
      const w = new TestClient(fx.hub);
      w.hello({ subWishes: [{ channelId: SAFETY, wishedRateHz: 10 }] });
      w.link.capacity = 0;
      const v = new Float64Array(3);
      let backlog = 0;
      while (backlog <= 1024) {
        v[2] = (v[2] as number) + 1;
        fx.hub.publishSample(SAFETY, fx.clock.now(), v, 3);
        backlog = fx.hub.sessions().reduce((n, s) => n + s.neverShedBytes, 0);
      }
      ok(!fx.hub.ready());
      const m = metrics(fx);
      equal(m.egress.neverShedBacklogBytes, backlog);
      equal(m.admission.reason, AdmissionReason.NEVER_SHED_BACKLOG);
      deepEqual(helloRefused(fx), [[Nack.HUB_PRESSURE, ADMISSION_RETRY_AFTER_MS]]);
      equal(stateOf(fx, stale.id), SessionState.STALE, 'a refused HELLO reclaims no STALE session');
      resumes(fx, stale);
    });

    it('memory: heap above the limit refuses HELLO; an unknown heap never does; a resume is admitted', () => {
      let heap = NaN;
      const hx = heapHub(() => heap);
      const hub = hx.hub;
      const stale = staleSession(hx);
      ok(hub.ready(), 'NaN: unknown, admitted');
      heap = 100000;
      ok(hub.ready(), 'at the limit: not above it');
      heap = 100001;
      ok(!hub.ready());
      deepEqual(helloRefused(hx), [[Nack.HUB_PRESSURE, ADMISSION_RETRY_AFTER_MS]]);
      equal(hub.admission.refusals[AdmissionReason.MEMORY], 1);
      equal(metrics(hx).heap.usedBytes, 100001);
      resumes(hx, stale);
    });

    it('ladder: at refuse_joins HELLO is refused with retry 5000; a resume is admitted', () => {
      let heap = 0;
      const fx = heapHub(() => heap);
      const stale = staleSession(fx);
      heap = 96000; // 0.96: rung 4, below the memory limit
      fx.hub.tick();
      equal(fx.hub.ladder.rung, LadderRung.REFUSE_JOINS);
      deepEqual(helloRefused(fx), [[Nack.HUB_PRESSURE, ADMISSION_LADDER_RETRY_AFTER_MS]]);
      equal(fx.hub.admission.refusals[AdmissionReason.LADDER], 1);
      equal(metrics(fx).admission.mask, 1 << AdmissionReason.LADDER);
      resumes(fx, stale);
    });
  });

  describe('the ladder, through the hub', () => {
    it('climbs every rung with its actuation and comes back down one rung per 5 s, held by hysteresis', () => {
      let heap = 0;
      const fx = heapHub(() => heap);
      const own = owner(fx);
      const a = new TestClient(fx.hub);
      const aw = a.hello({ credential: OPERATOR_CREDENTIAL, subWishes: [{ channelId: SCAN, wishedRateHz: 10 }, { channelId: IMU, wishedRateHz: 100 }] });
      const d = new TestClient(fx.hub);
      const dw = d.hello({ subWishes: [{ channelId: SCAN, wishedRateHz: 10 }] }); // background only: parked first
      const crit = new TestClient(fx.hub);
      const cw = crit.hello({ subWishes: [{ channelId: SAFETY, wishedRateHz: 10 }] });
      a.take();
      equal(grantOf(fx, aw.sessionId, SCAN), 10);
      equal(grantOf(fx, aw.sessionId, IMU), 100);
      const imu = new Float64Array(6);
      const pushImu = (n: number): void => {
        for (let i = 0; i < n; i++) {
          fx.clock.advance(10);
          fx.hub.publishSample(IMU, fx.clock.now(), imu, 6);
        }
      };
      pushImu(20);
      equal(fx.hub.counters.decimated, 0, 'calm: nothing decimated on a clear link');

      // 1 thin: the table reads the link at level ≥ 1: normal STREAM decimates 2× (row 10).
      heap = 75000;
      fx.hub.tick();
      equal(fx.hub.ladder.rung, LadderRung.THIN);
      equal(fx.hub.ladder.state.trigger, LadderTrigger.HEAP);
      deepEqual(lastSubGrants(a), new Map(), 'thinning re-grants nothing');
      const row10 = fx.hub.counters.rows[10] as number;
      pushImu(20);
      equal((fx.hub.counters.rows[10] as number) - row10, 20);
      equal(fx.hub.counters.decimated, 10);

      // 2 reduce_rates: background × 0.25, normal × 0.5, announced by GRANT.
      heap = 85000;
      fx.hub.tick();
      equal(fx.hub.ladder.rung, LadderRung.REDUCE_RATES);
      deepEqual(lastSubGrants(a), new Map([[SCAN, 2.5], [IMU, 50]]));
      const rowsBefore = Array.from(fx.hub.counters.rows);
      pushImu(4);
      equal((fx.hub.counters.rows[10] as number) - (rowsBefore[10] as number), 0, 'the floor is lifted at rung 2');

      // 3 pause_non_essential: background granted 0.
      heap = 92000;
      loadTick(fx);
      equal(fx.hub.ladder.rung, LadderRung.PAUSE_NON_ESSENTIAL);
      deepEqual(lastSubGrants(a), new Map([[SCAN, 0], [IMU, 50]]));
      deepEqual(lastSubGrants(d), new Map([[SCAN, 0]]));
      equal(grantOf(fx, cw.sessionId, SAFETY), 10, 'critical untouched');

      // 4 refuse_joins.
      heap = 96000;
      loadTick(fx);
      equal(fx.hub.ladder.rung, LadderRung.REFUSE_JOINS);
      deepEqual(helloRefused(fx), [[Nack.HUB_PRESSURE, ADMISSION_LADDER_RETRY_AFTER_MS]]);

      // 5 park_lowest: the background-only session goes STALE; then one per 10 s.
      heap = 100000;
      loadTick(fx);
      equal(fx.hub.ladder.rung, LadderRung.PARK_LOWEST);
      equal(stateOf(fx, dw.sessionId), SessionState.STALE);
      ok(d.link.closed);
      equal(stateOf(fx, aw.sessionId), SessionState.ACTIVE);
      equal(fx.hub.counters.parks, 1);
      // The ladder reads the load every LOAD_PERIOD_MS: the last read before 10 s parks nobody.
      fx.clock.advance(LADDER_PARK_INTERVAL_MS - LOAD_PERIOD_MS);
      fx.hub.tick();
      equal(fx.hub.counters.parks, 1, 'the next park waits 10 s');
      loadTick(fx);
      equal(stateOf(fx, aw.sessionId), SessionState.STALE, 'then the normal-priority session');
      equal(stateOf(fx, cw.sessionId), SessionState.ACTIVE, 'critical-only goes last');
      equal(fx.hub.controlOwner > 0 && stateOf(fx, fx.hub.controlOwner) === SessionState.ACTIVE, true, 'the owner is never parked');
      equal(metrics(fx).ladder.parks, 2);

      // Down: relief must last 5 s per rung; a signal held at ≥ 0.9 × a rung's threshold holds it.
      const a2 = new TestClient(fx.hub);
      a2.hello({ resumeToken: aw.resumeToken });
      heap = 0;
      loadTick(fx); // relief starts at this read
      // The last read before LADDER_RELIEF_MS of relief keeps the rung; the read at it steps down.
      fx.clock.advance(LADDER_RELIEF_MS - LOAD_PERIOD_MS);
      fx.hub.tick();
      equal(fx.hub.ladder.rung, LadderRung.PARK_LOWEST);
      loadTick(fx);
      equal(fx.hub.ladder.rung, LadderRung.REFUSE_JOINS);
      fx.clock.advance(LADDER_RELIEF_MS);
      fx.hub.tick();
      equal(fx.hub.ladder.rung, LadderRung.PAUSE_NON_ESSENTIAL);
      fx.clock.advance(LADDER_RELIEF_MS);
      fx.hub.tick();
      equal(fx.hub.ladder.rung, LadderRung.REDUCE_RATES);
      a2.take();
      heap = 75000; // ≥ 0.9 × 0.8: rung 2 holds
      for (let i = 0; i < 4; i++) {
        fx.clock.advance(LADDER_RELIEF_MS);
        fx.hub.tick();
      }
      equal(fx.hub.ladder.rung, LadderRung.REDUCE_RATES);
      equal(grantOf(fx, aw.sessionId, IMU), 50);
      heap = 0;
      loadTick(fx); // relief starts at this read
      fx.clock.advance(LADDER_RELIEF_MS);
      fx.hub.tick();
      equal(fx.hub.ladder.rung, LadderRung.THIN);
      fx.clock.advance(LADDER_RELIEF_MS);
      fx.hub.tick();
      equal(fx.hub.ladder.rung, LadderRung.CALM);
      deepEqual(lastSubGrants(a2), new Map([[SCAN, 10], [IMU, 100]]), 'the grants come back, announced');
      ok(fx.hub.ready());
      own.take();
    });

    it('reads tick time: slow ticks thin the table (trigger tick)', () => {
      const clock = new SteppingClock();
      const fx = makeHub({}, undefined, clock);
      // The ladder reads the view at the start of a tick: the 31st tick sees 30 ticks.
      for (let i = 0; i < 30; i++) {
        clock.slowNext(22); // 0.88 × the 25 ms budget
        fx.hub.tick();
        clock.advance(10);
      }
      equal(fx.hub.ladder.rung, LadderRung.CALM, '29 ticks are too few');
      // The ladder reads the load every LOAD_PERIOD_MS: at the first read once 30 slow ticks are
      // in the view, no later than LOAD_PERIOD_MS after the 31st tick.
      let ticks = 30;
      const readBy = clock.now() + LOAD_PERIOD_MS;
      while (fx.hub.ladder.rung === LadderRung.CALM && clock.now() <= readBy) {
        clock.slowNext(22);
        fx.hub.tick();
        ticks++;
        if (fx.hub.ladder.rung === LadderRung.CALM) clock.advance(10);
      }
      equal(fx.hub.ladder.rung, LadderRung.THIN, `still calm after ${ticks} slow ticks`);
      equal(fx.hub.ladder.state.trigger, LadderTrigger.TICK);
      const m = metrics(fx);
      equal(m.tickMs.count, ticks);
      equal(m.tickMs.max, 22);
      ok(fx.hub.ready(), 'thinning refuses nobody');
    });

    it('reads the aggregate egress occupancy: one slot of one, its queue filling', () => {
      const fx = makeHub({ slots: 1 });
      const c = new TestClient(fx.hub, new TestLink('tcp', 400));
      c.hello();
      while (c.link.occupancy() < 0.9) c.send({ type: FrameType.PING, t0: 1 });
      fx.hub.tick();
      equal(fx.hub.ladder.rung, LadderRung.PAUSE_NON_ESSENTIAL);
      equal(fx.hub.ladder.state.trigger, LadderTrigger.EGRESS);
      equal(metrics(fx).egress.occupancy, Math.round(c.link.occupancy() * 1000) / 1000);
    });

    it('leaves out a link its reader has stalled for LADDER_READER_STALL_MS, and counts it once it moves', () => {
      const fx = makeHub({ slots: 1 });
      const c = new TestClient(fx.hub, new TestLink('tcp', 400));
      c.hello();
      while (c.link.occupancy() < 0.9) c.send({ type: FrameType.PING, t0: 1 });
      c.link.stalled = LADDER_READER_STALL_MS;
      fx.hub.tick();
      equal(fx.hub.ladder.rung, LadderRung.CALM, 'a full queue its reader left alone is that session\'s');
      equal(metrics(fx).egress.occupancy, 0);
      equal(metrics(fx).egress.readerStalledLinks, 1);
      c.link.stalled = LADDER_READER_STALL_MS - 1;
      loadTick(fx);
      equal(fx.hub.ladder.rung, LadderRung.PAUSE_NON_ESSENTIAL, 'a link that moved within the window counts');
      equal(metrics(fx).egress.readerStalledLinks, 0);
    });

    it('a link that is not carrying what it is handed is no witness: its reader stalled, or the link congested', () => {
      for (const how of ['stalled', 'congested'] as const) {
        const fx = makeHub({ slots: 3 });
        const slow = new TestClient(fx.hub, new TestLink('tcp', 400));
        slow.hello();
        const slow2 = new TestClient(fx.hub, new TestLink('tcp', 400));
        slow2.hello();
        // A link with room to spare, handed imu at 10 Hz, that does not carry it.
        const dead = new TestClient(fx.hub, new TestLink('tcp', 1 << 20));
        dead.hello({ subWishes: [{ channelId: IMU, wishedRateHz: 10 }] });
        while (slow.link.occupancy() < 0.95) slow.send({ type: FrameType.PING, t0: 1 });
        while (slow2.link.occupancy() < 0.95) slow2.send({ type: FrameType.PING, t0: 1 });
        if (how === 'stalled') dead.link.stalled = LADDER_READER_STALL_MS;
        else dead.link.lvl = 1;
        const imu = new Float64Array(6);
        for (let i = 0; i < 30; i++) {
          fx.clock.advance(10);
          fx.hub.publishSample(IMU, fx.clock.now(), imu, 6);
          fx.hub.tick();
        }
        const m = metrics(fx);
        equal(m.egress.keepingUpLinks, 0, how);
        ok(dead.link.occupancy() < 0.2, `${how}: little queued (${dead.link.occupancy()})`);
        ok(fx.hub.ladder.rung >= LadderRung.THIN, `${how}: rung ${fx.hub.ladder.rung}`);
        equal(fx.hub.ladder.state.trigger, LadderTrigger.EGRESS, how);
      }
    });

    it('reads 0 while another link keeps up with what it is handed within a second, and the sum once none does', () => {
      const fx = makeHub({ slots: 3 });
      const slow = new TestClient(fx.hub, new TestLink('tcp', 400));
      slow.hello();
      const slow2 = new TestClient(fx.hub, new TestLink('tcp', 400));
      slow2.hello();
      const fast = new TestClient(fx.hub, new TestLink('tcp', 1000));
      fast.hello({ subWishes: [{ channelId: IMU, wishedRateHz: 100 }] });
      fast.take();
      fx.hub.tick();
      while (slow.link.occupancy() < 0.95) slow.send({ type: FrameType.PING, t0: 1 });
      while (slow2.link.occupancy() < 0.95) slow2.send({ type: FrameType.PING, t0: 1 });
      const imu = new Float64Array(6);
      for (let i = 0; i < 20; i++) {
        fx.clock.advance(10);
        fx.hub.publishSample(IMU, fx.clock.now(), imu, 6);
        fast.take();
        fx.hub.tick();
        equal(fx.hub.ladder.rung, LadderRung.CALM, `tick ${i}: the fast link keeps up`);
      }
      const m = metrics(fx);
      equal(m.egress.occupancy, 0);
      equal(m.egress.keepingUpLinks, 1);
      // The fast link now holds what it is handed: nobody keeps up, and the sum (≥ 2 × 0.95 ÷ 3
      // slots plus the fast link's share) is read.
      for (let i = 0; i < 200 && fast.link.occupancy() < 0.2; i++) {
        fx.clock.advance(10);
        fx.hub.publishSample(IMU, fx.clock.now(), imu, 6);
      }
      ok(fast.link.occupancy() >= 0.2, `fast link occupancy ${fast.link.occupancy()}`);
      fx.clock.advance(10);
      fx.hub.publishSample(IMU, fx.clock.now(), imu, 6);
      fx.hub.tick();
      const after = metrics(fx);
      equal(after.egress.keepingUpLinks, 0);
      ok(after.egress.occupancy >= 0.7, `aggregate ${after.egress.occupancy}`);
      ok(fx.hub.ladder.rung >= LadderRung.REDUCE_RATES, `rung ${fx.hub.ladder.rung}`);
      equal(fx.hub.ladder.state.trigger, LadderTrigger.EGRESS);
    });
  });

  describe('what the ladder reads', () => {
    it('is what a full measure reads at that moment, whatever the sweep met on its way', () => {
      // The silent session's liveness runs out on a load tick (the 201st).
      const fx = makeHub({ slots: 4, livenessTimeoutMs: 2_010 });
      // Every time the sweep reads the ladder's signals, a full measure of the same moment.
      const inspect = fx.hub.inspect;
      const plain = inspect.ladderSignals.bind(inspect);
      let reads = 0;
      let unknown = 0;
      inspect.ladderSignals = (now, load, found) => {
        plain(now, load, found);
        reads++;
        if (found === undefined || found < 0) unknown++;
        const full = inspect.measure(now, createHubLoad());
        deepEqual([load.tickP95Ms, load.tickCount, load.heapUsedBytes, load.egressOccupancy], [full.tickP95Ms, full.tickCount, full.heapUsedBytes, full.egressOccupancy], `read ${reads} at ${now}`);
        return load;
      };
      const fast = new TestClient(fx.hub, new TestLink('tcp', 1000));
      fast.hello({ subWishes: [{ channelId: IMU, wishedRateHz: 100 }] });
      const slow = new TestClient(fx.hub, new TestLink('tcp', 400));
      slow.hello();
      const near = new TestClient(fx.hub, new TestLink('tcp', 1200));
      near.hello({ subWishes: [{ channelId: IMU, wishedRateHz: 100 }] });
      const silent = new TestClient(fx.hub, new TestLink('tcp', 4000));
      const token = silent.hello({ subWishes: [{ channelId: IMU, wishedRateHz: 10 }] }).resumeToken;
      const imu = new Float64Array(6);
      for (let i = 0; i < 600; i++) {
        fx.clock.advance(10);
        fx.hub.publishSample(IMU, fx.clock.now(), imu, 6);
        // The fast client reads in spells; the near one lets its queue sit around a fifth full.
        if (i % 120 < 70) fast.take();
        if (near.link.occupancy() > 0.25) near.link.drain(3);
        if (i % 150 === 0) while (slow.link.occupancy() < 0.9) slow.send({ type: FrameType.PING, t0: 1 });
        if (i % 40 === 0) slow.link.drain(1);
        slow.link.stalled = i % 300 < 150 ? LADDER_READER_STALL_MS : 0;
        fast.link.lvl = i % 200 < 20 ? 1 : 0;
        // Everyone speaks but `silent`, which goes STALE on a sweep, and comes back.
        if (i % 50 === 0) for (const c of [fast, slow, near]) c.send({ type: FrameType.PING, t0: 2 });
        if (i === 420) new TestClient(fx.hub, new TestLink('tcp', 4000)).hello({ resumeToken: token });
        fx.hub.tick();
      }
      equal(reads, 60);
      ok(unknown > 0, 'a sweep that parked a session left the walk to Load');
    });
  });

  describe('the ingress governor', () => {
    it('rejects a flooding session with INGRESS_BUDGET while another session\'s bundles pass', () => {
      const fx = makeHub({ sessionIngressBytesPerS: 2048, hubIngressBytesPerS: 8192 });
      const own = owner(fx, 50);
      const flood = new TestClient(fx.hub);
      flood.hello({ credential: OPERATOR_CREDENTIAL, pubWishes: [{ channelId: CMD_VEL, wishedRateHz: 50 }] });
      const big: number[][] = [];
      for (let i = 0; i < 32; i++) big.push([i, 0.123456789, 0.987654321]);
      let ownAccepted = 0;
      const codes: number[] = [];
      let retry = -1;
      for (let ms = 0; ms < 1000; ms += 20) {
        fx.clock.advance(20);
        for (let k = 0; k < 3; k++) flood.send({ type: FrameType.BUNDLE, channelId: CMD_VEL, samples: big });
        const before = fx.robot.published.length;
        own.send({ type: FrameType.BUNDLE, channelId: CMD_VEL, samples: [[ms, 0.1, 0.2]] });
        ownAccepted += fx.robot.published.length - before;
        for (const n of flood.nacks()) {
          codes.push(n.code);
          if (n.code === Nack.INGRESS_BUDGET) retry = n.retryAfterMs ?? -1;
        }
      }
      equal(ownAccepted, 50, 'every one of the owner\'s bundles reached the robot');
      deepEqual(own.nacks(), []);
      ok(codes.includes(Nack.INGRESS_BUDGET));
      ok(retry > 0 && retry <= 1000, `retry_after_ms ${retry}`);
      ok(codes.length <= STREAM_INGRESS_OVERAGE_NACK_PER_S + 1, `${codes.length} NACKs in a second: throttled`);
      const m = metrics(fx);
      ok(m.ingress.rejectedSession > 0);
      equal(m.nacks.INGRESS_BUDGET, codes.filter((c) => c === Nack.INGRESS_BUDGET).length);
    });

    it('never meters the ESTOP frame', () => {
      const fx = makeHub({ sessionIngressBytesPerS: 1024, hubIngressBytesPerS: 1024 });
      const c = new TestClient(fx.hub);
      c.hello();
      for (let i = 0; i < 200; i++) c.send({ type: FrameType.PING, t0: i });
      ok(fx.hub.governor.rejectedSession > 0);
      c.estop(5);
      ok(fx.hub.latch.latched);
    });
  });

  describe('core fixes', () => {
    it('a. PONG t1 is the clock floored to an integer, before and after HELLO (§5.14)', () => {
      const fx = makeHub();
      fx.clock.t = 1234.75;
      const c = new TestClient(fx.hub);
      c.send({ type: FrameType.PING, t0: 9 });
      c.hello();
      c.send({ type: FrameType.PING, t0: 10 });
      c.take();
      const pongs = c.link.frames(FrameType.PONG) as PongFrame[];
      deepEqual(pongs.map((p) => [p.t0, p.t1]), [
        [9, 1234],
        [10, 1234],
      ]);
      deepEqual(c.link.frames(FrameType.NACK), []);
    });

    it('b. the ack lag counts every frame handed to the transport, ESTOPs and pre-HELLO frames too (§5.12)', () => {
      const fx = makeHub();
      const c = new TestClient(fx.hub);
      c.send({ type: FrameType.PING, t0: 1 }); // answered before HELLO: counted by the client
      const w = c.hello({ subWishes: [{ channelId: IMU, wishedRateHz: 50 }, { channelId: SAFETY, wishedRateHz: 10 }] });
      const imu = new Float64Array(6);
      for (let i = 0; i < 5; i++) {
        fx.clock.advance(20);
        fx.hub.publishSample(IMU, fx.clock.now(), imu, 6);
      }
      fx.hub.estop(3);
      c.take();
      const received = c.link.received.length;
      // PONG, WELCOME, 5 DATA, the ESTOP frame and the safety update: the hub counted DATA only.
      equal(received, 9);
      c.send({ type: FrameType.ACK, acked: received - 3 } as AckFrame);
      const lag = (): number => fx.hub.sessions().find((s) => s.id === w.sessionId)!.ackLag;
      equal(lag(), 3);
      equal(metrics(fx).ackLag.max, 3);
      c.send({ type: FrameType.ACK, acked: received - 5 } as AckFrame);
      equal(lag(), 3, 'an older ACK is ignored');
      c.send({ type: FrameType.ACK, acked: received } as AckFrame);
      equal(lag(), 0);
      c.send({ type: FrameType.ACK, acked: received + 7 } as AckFrame);
      equal(lag(), 0, 'an ACK ahead of what was sent is no lag');
    });

    it('c. BUNDLE refusals (NOT_OWNER, ESTOP_LATCHED, NOT_GRANTED) share the RATE_LIMITED throttle', () => {
      const fx = makeHub();
      const own = owner(fx);
      const other = new TestClient(fx.hub);
      other.hello({ credential: OPERATOR_CREDENTIAL, pubWishes: [{ channelId: CMD_VEL, wishedRateHz: 50 }] });
      const send = (c: TestClient, ch = CMD_VEL): void => c.send({ type: FrameType.BUNDLE, channelId: ch, samples: [[1, 0, 0]] });
      for (let i = 0; i < 50; i++) {
        fx.clock.advance(10);
        send(other);
      }
      deepEqual(nackCodes(other).map((x) => x[0]), new Array<number>(STREAM_INGRESS_OVERAGE_NACK_PER_S).fill(Nack.NOT_OWNER));
      fx.clock.advance(1000);
      send(other);
      deepEqual(nackCodes(other).map((x) => x[0]), [Nack.NOT_OWNER], 'a second later: answered again');
      own.estop(1);
      for (let i = 0; i < 20; i++) send(own);
      deepEqual(nackCodes(own).map((x) => x[0]), new Array<number>(STREAM_INGRESS_OVERAGE_NACK_PER_S).fill(Nack.ESTOP_LATCHED));
      const obs = new TestClient(fx.hub);
      obs.hello();
      for (let i = 0; i < 20; i++) send(obs);
      deepEqual(nackCodes(obs).map((x) => x[0]), new Array<number>(STREAM_INGRESS_OVERAGE_NACK_PER_S).fill(Nack.NOT_GRANTED));
      equal(fx.robot.published.length, 0);
    });

    it('d. a re-PUBLISH whose wish floors to 0 withdraws the publication, as its answer says (§10.2)', () => {
      const fx = makeHub();
      const own = owner(fx, 10);
      own.send({ type: FrameType.BUNDLE, channelId: CMD_VEL, samples: [[1, 0, 0]] });
      equal(fx.robot.published.length, 1);
      own.send({ type: FrameType.PUBLISH, wishes: [{ channelId: CMD_VEL, wishedRateHz: 0.05 }] });
      const g = own.take(FrameType.GRANT) as GrantFrame[];
      deepEqual(g.map((f) => f.pubGrants), [[]], 'the answer leaves it out');
      fx.clock.advance(1000);
      own.send({ type: FrameType.BUNDLE, channelId: CMD_VEL, samples: [[2, 0, 0]] });
      equal(fx.robot.published.length, 1);
      deepEqual(nackCodes(own).map((x) => x[0]), [Nack.NOT_GRANTED]);
    });
  });
});

/** A hub whose heap port the test sets (limit 100000 bytes). */
function heapHub(heap: () => number): Fixture {
  const fx = makeHub({ heapLimitBytes: 100000 });
  const hub = new Hub({ clock: fx.clock, random: new SeededRandom(11), store: fx.store, robot: fx.robot, catalog: fx.catalog, heap }, { heapLimitBytes: 100000, livenessTimeoutMs: Infinity });
  return { ...fx, hub };
}
