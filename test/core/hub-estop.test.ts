// §11.2 through the hub: any ESTOP latches and stops the robot, reaches every
// transport ahead of every queued frame, refuses motion, survives a restart, clears only by the
// control owner at operator tier with no source asserting, and the deadman latches on its own.
import { ESTOP_FRAME_BYTES, EstopKind, EstopSource, ESTOP_FLAG_LATCHED, ESTOP_NACK_FRAME_TYPE } from '../../hub/estop-frame.js';
import { FrameType, type DataFrame, type EchoFrame, type NackFrame } from '../../hub/frames.js';
import { SafetyEventKind } from '../../hub/hub.js';
import { Nack } from '../../hub/nack.js';
import { ESTOP_REANNOUNCE_MS } from '../../hub/constants.js';
import { deepEqual, equal, ok } from '../lib/assert.js';
import { estopBytes, makeHub, MemoryStore, credentialStore, OPERATOR_CREDENTIAL, TestClient, type Fixture } from '../lib/hub-fixture.js';

const SAFETY = 1;
const SAFETY_EVENTS = 2;
const IMU = 10;
const CMD_VEL = 30;
const ARM = 40;
const DISARM = 41;
const TAKE_CONTROL = 42;

function operator(fx: Fixture, take = false): { c: TestClient; id: number } {
  const c = new TestClient(fx.hub);
  const w = c.hello({ credential: OPERATOR_CREDENTIAL, pubWishes: [{ channelId: CMD_VEL, wishedRateHz: 10 }] });
  if (take) {
    c.intent(TAKE_CONTROL, 1);
    c.take();
  }
  return { c, id: w.sessionId };
}

function safetyValues(c: TestClient): number[][] {
  return (c.take(FrameType.DATA) as DataFrame[]).filter((f) => f.channelId === SAFETY).map((f) => f.values);
}

describe('hub ESTOP (§11)', () => {
  it('latches on an ESTOP frame from any client, stops the robot and writes the frame to every transport ahead of its queue', () => {
    const fx = makeHub();
    const observer = new TestClient(fx.hub);
    const wo = observer.hello();
    const viewer = new TestClient(fx.hub);
    viewer.hello({ subWishes: [{ channelId: IMU, wishedRateHz: 50 }, { channelId: SAFETY, wishedRateHz: 10 }] });
    const unnamed = new TestClient(fx.hub); // attached, no HELLO yet
    // The viewer has frames queued that it has not read yet.
    for (let k = 0; k < 3; k++) {
      fx.clock.advance(20);
      fx.hub.publishSample(IMU, fx.clock.now(), new Float64Array(6), 6);
    }
    equal(viewer.link.queued.length, 3);

    observer.estop(77);
    ok(fx.hub.latch.latched);
    deepEqual(fx.robot.stops, [EstopSource.CLIENT]);
    equal(fx.hub.counters.estops, 1);
    for (const c of [observer, viewer, unnamed]) {
      const e = c.link.estops();
      equal(e.length, 1);
      deepEqual(e[0], { kind: EstopKind.ASSERT, source: EstopSource.CLIENT, flags: ESTOP_FLAG_LATCHED, origin: wo.sessionId, seq: 77 });
      const raw = c.link.received.find((x) => x.kind === 'estop');
      equal(raw?.bytes.length, ESTOP_FRAME_BYTES);
    }
    // Ahead of every frame that was queued when it was written.
    viewer.link.drain();
    const kinds = viewer.link.received.map((x) => (x.kind === 'estop' ? 'estop' : x.frame?.type === FrameType.DATA ? (x.frame as DataFrame).channelId : x.frame?.type));
    deepEqual(kinds.slice(1), ['estop', IMU, IMU, IMU, SAFETY]);
    // The safety channel says so too: latched, source, the ESTOP's sequence.
    const s = (viewer.link.frames(FrameType.DATA) as DataFrame[]).filter((f) => f.channelId === SAFETY);
    deepEqual(s.map((f) => f.values), [[1, EstopSource.CLIENT, 77]]);
  });

  it('reaches a link that is full and congested, and counts a repeated frame once', () => {
    const fx = makeHub();
    const a = new TestClient(fx.hub);
    a.hello();
    const b = new TestClient(fx.hub);
    b.hello();
    b.link.capacity = 0;
    b.link.lvl = 3;
    a.estop(5);
    a.estop(5); // the same ESTOP again (a retransmission)
    equal(b.link.estops().length, 1);
    equal(a.link.estops().length, 1);
    equal(fx.hub.counters.estops, 1);
    a.estop(6); // new, while latched: announced within ESTOP_REANNOUNCE_MS, from the tick
    equal(b.link.estops().length, 1);
    fx.clock.advance(ESTOP_REANNOUNCE_MS);
    fx.hub.tick();
    equal(b.link.estops().length, 2);
    deepEqual([b.link.estops()[1]!.origin, b.link.estops()[1]!.seq], [fx.hub.latch.origin, 6]);
  });

  it('a flood of distinct ESTOPs while latched: the first at once, the rest at a bounded rate; no other session is parked', () => {
    const fx = makeHub();
    const flooder = new TestClient(fx.hub);
    flooder.hello();
    const viewer = new TestClient(fx.hub);
    viewer.hello({ subWishes: [{ channelId: IMU, wishedRateHz: 50 }, { channelId: SAFETY, wishedRateHz: 10 }, { channelId: SAFETY_EVENTS, wishedRateHz: 10 }] });
    viewer.take();
    flooder.estop(1);
    equal(viewer.link.estops().length, 1, 'the first ESTOP is written at once');
    // 10 s: an ESTOP of a new sequence every millisecond, the viewer reading, the hub ticking every 10 ms.
    let imu = 0;
    for (let ms = 1; ms <= 10000; ms++) {
      fx.clock.advance(1);
      flooder.estop((ms + 1) & 0xffff);
      if (ms % 10 === 0) {
        fx.hub.tick();
        fx.hub.publishSample(IMU, fx.clock.now(), new Float64Array(6), 6);
        viewer.link.drain();
        imu += (viewer.take(FrameType.DATA) as DataFrame[]).filter((f) => f.channelId === IMU).length;
      }
    }
    const heard = viewer.link.estops().length;
    ok(heard <= 10000 / ESTOP_REANNOUNCE_MS + 2, `re-announced ${heard} times in 10 s`);
    ok(heard >= 10000 / ESTOP_REANNOUNCE_MS - 2, `the newest assertion is still announced (${heard})`);
    equal(fx.hub.counters.parks, 0);
    equal(fx.hub.counters.estops, 10001, 'every new assertion is counted');
    ok(imu >= 450, `telemetry carries on (${imu} IMU samples of 500)`);
    equal(viewer.link.estops()[heard - 1]!.seq, fx.hub.latch.originSeq & 0xffff);
  });

  it('refuses motion while latched (ESTOP_LATCHED) and still carries out what only makes things safer', () => {
    const fx = makeHub();
    const { c } = operator(fx, true);
    c.estop(1);
    c.intent(ARM, 2);
    c.send({ type: FrameType.BUNDLE, channelId: CMD_VEL, samples: [[1, 0.5, 0]] });
    c.intent(DISARM, 3);
    const got = c.take().filter((f) => f.type === FrameType.NACK || f.type === FrameType.ECHO);
    deepEqual(got.map((f) => (f.type === FrameType.NACK ? [f.type, f.code, f.channelId] : [f.type, (f as EchoFrame).requestId])), [
      [FrameType.NACK, Nack.ESTOP_LATCHED, ARM],
      [FrameType.NACK, Nack.ESTOP_LATCHED, CMD_VEL],
      [FrameType.ECHO, 3],
    ]);
    equal(fx.robot.published.length, 0);
    deepEqual(fx.robot.intents.map((i) => i.channelId), [DISARM]);
  });

  it('persists the latch: a new hub on the same store comes up latched and stops the robot at once', () => {
    const store = credentialStore();
    const fx = makeHub({}, store);
    new TestClient(fx.hub).estop(9);
    ok(fx.hub.latch.latched);
    const restarted = makeHub({}, store);
    deepEqual(restarted.robot.stops, [EstopSource.CLIENT], 'stopped during construction, before any client');
    ok(restarted.hub.latch.latched);
    const w = new TestClient(restarted.hub).hello();
    equal(w.latched, true);
    // And a fresh store is not latched.
    const clean = makeHub({}, new MemoryStore());
    ok(!clean.hub.latch.latched);
    deepEqual(clean.robot.stops, []);
  });

  describe('clear', () => {
    it('is refused below operator tier, to non-owners, and while a source asserts; then announced to all', () => {
      const fx = makeHub();
      const obs = new TestClient(fx.hub);
      obs.hello({ subWishes: [{ channelId: SAFETY, wishedRateHz: 10 }, { channelId: SAFETY_EVENTS, wishedRateHz: 10 }] });
      const owner = operator(fx, true);
      const other = operator(fx);
      fx.hub.setButton(true); // the hub's own button: latches and holds
      ok(fx.hub.latch.latched);
      deepEqual(fx.robot.stops, [EstopSource.HUB_BUTTON]);
      for (const c of [obs, owner.c, other.c]) deepEqual(c.link.estops().map((e) => [e.kind, e.source]), [[EstopKind.ASSERT, EstopSource.HUB_BUTTON]]);

      obs.send({ type: FrameType.ESTOP_CLEAR });
      other.c.send({ type: FrameType.ESTOP_CLEAR });
      owner.c.send({ type: FrameType.ESTOP_CLEAR });
      deepEqual(obs.nacks().map((n) => n.code), [Nack.FORBIDDEN]);
      deepEqual(other.c.nacks().map((n) => n.code), [Nack.NOT_OWNER]);
      deepEqual(owner.c.nacks().map((n) => n.code), [Nack.ESTOP_LATCHED], 'the button is still held');
      ok(fx.hub.latch.latched);
      equal(fx.robot.releases, 0);

      fx.hub.setButton(false);
      ok(fx.hub.latch.latched, 'releasing the button does not clear the latch');
      owner.c.send({ type: FrameType.ESTOP_CLEAR });
      ok(!fx.hub.latch.latched);
      equal(fx.robot.releases, 1);
      for (const c of [obs, owner.c, other.c]) {
        const e = c.link.estops();
        equal(e.length, 2);
        equal(e[1]!.kind, EstopKind.CLEARED);
        equal(e[1]!.flags & ESTOP_FLAG_LATCHED, 0);
      }
      obs.link.drain();
      const data = obs.link.frames(FrameType.DATA) as DataFrame[];
      deepEqual(data.filter((f) => f.channelId === SAFETY).map((f) => f.values[0]), [1, 0]);
      deepEqual(data.filter((f) => f.channelId === SAFETY_EVENTS).map((f) => f.values[0]), [SafetyEventKind.LATCH, SafetyEventKind.CLEAR]);
      // Motion is accepted again.
      owner.c.intent(ARM, 5);
      equal(owner.c.take(FrameType.ECHO).length, 1);
    });

    it('never restarts the robot: after a clear, motion is refused with NOT_ARMED until the owner arms', () => {
      const fx = makeHub();
      const owner = operator(fx, true);
      const other = operator(fx);
      ok(fx.hub.armed, 'a hub that boots unlatched is armed');
      owner.c.estop(1);
      ok(!fx.hub.armed);
      owner.c.send({ type: FrameType.ESTOP_CLEAR });
      ok(!fx.hub.latch.latched);
      ok(!fx.hub.armed, 'the clear leaves the hub disarmed');
      owner.c.take();
      // The stream carries on after the clear: refused, and nothing reaches the robot.
      owner.c.send({ type: FrameType.BUNDLE, channelId: CMD_VEL, samples: [[1, 0.5, 0]] });
      deepEqual(owner.c.nacks().map((n) => [n.code, n.channelId]), [[Nack.NOT_ARMED, CMD_VEL]]);
      equal(fx.robot.published.length, 0);
      // Only the owner may arm.
      other.c.intent(ARM, 7);
      deepEqual(other.c.nacks().map((n) => [n.code, n.channelId]), [[Nack.NOT_OWNER, ARM]]);
      ok(!fx.hub.armed);
      deepEqual(fx.robot.intents, []);
      // An arm the robot itself refuses leaves the hub disarmed.
      fx.robot.intentResult = Nack.NOT_ARMED;
      owner.c.intent(ARM, 6);
      owner.c.take();
      ok(!fx.hub.armed, 'the robot refused its arm');
      fx.robot.intentResult = 0;
      fx.robot.intents.length = 0;
      owner.c.intent(ARM, 8);
      deepEqual((owner.c.take(FrameType.ECHO) as EchoFrame[]).map((e) => e.requestId), [8]);
      ok(fx.hub.armed);
      fx.clock.advance(200);
      owner.c.send({ type: FrameType.BUNDLE, channelId: CMD_VEL, samples: [[2, 0.5, 0]] });
      deepEqual(owner.c.nacks(), []);
      deepEqual(fx.robot.published.map((p) => p.channelId), [CMD_VEL]);
      // The owner's disarm disarms again.
      owner.c.intent(DISARM, 9);
      owner.c.take();
      ok(!fx.hub.armed);
      fx.clock.advance(200);
      owner.c.send({ type: FrameType.BUNDLE, channelId: CMD_VEL, samples: [[3, 0.5, 0]] });
      deepEqual(owner.c.nacks().map((n) => n.code), [Nack.NOT_ARMED]);
      equal(fx.robot.published.length, 1);
    });

    it('refuses an arm while latched with ESTOP_LATCHED, and a latch from any source disarms', () => {
      const fx = makeHub();
      const owner = operator(fx, true);
      fx.hub.setButton(true);
      owner.c.take();
      owner.c.intent(ARM, 3);
      deepEqual(owner.c.nacks().map((n) => [n.code, n.channelId]), [[Nack.ESTOP_LATCHED, ARM]]);
      ok(!fx.hub.armed);
      fx.hub.setButton(false);
      owner.c.send({ type: FrameType.ESTOP_CLEAR });
      ok(!fx.hub.latch.latched);
      ok(!fx.hub.armed);
      deepEqual(fx.robot.intents, []);
    });

    it('refuses a clear naming another ESTOP than the one in force', () => {
      const fx = makeHub();
      const owner = operator(fx, true);
      owner.c.estop(40);
      owner.c.estop(41); // a second, newer ESTOP while latched
      owner.c.send({ type: FrameType.ESTOP_CLEAR, estopSeq: 40 });
      deepEqual(owner.c.nacks().map((n) => n.code), [Nack.ESTOP_LATCHED]);
      ok(fx.hub.latch.latched);
      owner.c.send({ type: FrameType.ESTOP_CLEAR, estopSeq: 41 });
      ok(!fx.hub.latch.latched);
    });

    it('answers a clear with nothing latched by the current CLEARED frame, to the asker only', () => {
      const fx = makeHub();
      const a = operator(fx, true);
      const b = operator(fx);
      a.c.send({ type: FrameType.ESTOP_CLEAR });
      deepEqual(a.c.link.estops().map((e) => e.kind), [EstopKind.CLEARED]);
      deepEqual(b.c.link.estops(), []);
      deepEqual(a.c.take(), []);
      equal(fx.robot.releases, 0);
    });
  });

  describe('deadman', () => {
    it('stops and latches with source deadman when the owner is silent for more than 500 ms', () => {
      const fx = makeHub();
      const watcher = new TestClient(fx.hub);
      watcher.hello({ subWishes: [{ channelId: SAFETY, wishedRateHz: 10 }] });
      const owner = operator(fx, true);
      const t0 = fx.clock.now();
      fx.clock.t = t0 + 500;
      fx.hub.tick();
      ok(!fx.hub.latch.latched, 'heard within 500 ms');
      fx.clock.t = t0 + 501;
      fx.hub.tick();
      ok(fx.hub.latch.latched);
      deepEqual(fx.robot.stops, [EstopSource.DEADMAN]);
      for (const c of [watcher, owner.c]) deepEqual(c.link.estops().map((e) => [e.kind, e.source]), [[EstopKind.ASSERT, EstopSource.DEADMAN]]);
      deepEqual(safetyValues(watcher).map((v) => [v[0], v[1]]), [[1, EstopSource.DEADMAN]]);
      fx.hub.tick();
      equal(fx.hub.counters.estops, 1, 'latched once, not per tick');
      // The owner is back: its first frame ends the deadman's hold, so it may clear at once.
      owner.c.send({ type: FrameType.ESTOP_CLEAR });
      ok(!fx.hub.latch.latched);
      equal(fx.robot.releases, 1);
    });

    it('stays quiet while the owner keeps talking, and is off without an owner', () => {
      const fx = makeHub({ deadmanMs: 300 });
      const owner = operator(fx, true);
      for (let i = 0; i < 20; i++) {
        fx.clock.advance(250);
        owner.c.send({ type: FrameType.PING, t0: i });
        fx.hub.tick();
      }
      ok(!fx.hub.latch.latched);
      owner.c.intent(45, 99); // release_control
      fx.clock.advance(5000);
      fx.hub.tick();
      ok(!fx.hub.latch.latched);
      deepEqual(fx.robot.stops, []);
    });

    it('latches when the owner\'s link is lost, however the session ends up', () => {
      const fx = makeHub();
      const owner = operator(fx, true);
      owner.c.sink.lost();
      fx.clock.advance(501);
      fx.hub.tick();
      ok(fx.hub.latch.latched);
      deepEqual(fx.robot.stops, [EstopSource.DEADMAN]);
    });
  });

  it('answers a damaged ESTOP frame with NACK MALFORMED and does not latch', () => {
    const fx = makeHub();
    const c = new TestClient(fx.hub);
    c.hello();
    const bad = estopBytes(EstopKind.ASSERT, EstopSource.CLIENT, 0, 3);
    bad[9] = (bad[9] as number) ^ 1; // CRC no longer matches
    c.sendBytes(bad);
    c.sendBytes(bad.subarray(0, 11));
    c.sendBytes(estopBytes(EstopKind.CLEARED, EstopSource.CLIENT, 0, 4)); // a clear is no bare frame
    deepEqual(c.nacks().map((n) => [n.code, n.frameType]), [
      [Nack.MALFORMED, ESTOP_NACK_FRAME_TYPE],
      [Nack.MALFORMED, ESTOP_NACK_FRAME_TYPE],
      [Nack.MALFORMED, ESTOP_NACK_FRAME_TYPE],
    ]);
    ok(!fx.hub.latch.latched);
    deepEqual(fx.robot.stops, []);
  });

  it('latches on an ESTOP from a transport that never said HELLO', () => {
    const fx = makeHub();
    const a = new TestClient(fx.hub);
    a.hello();
    const stranger = new TestClient(fx.hub);
    stranger.estop(1, 4242);
    ok(fx.hub.latch.latched);
    deepEqual(a.link.estops().map((e) => e.origin), [4242]);
    const n: NackFrame[] = stranger.nacks();
    deepEqual(n, []);
  });
  it('tells a session that joins or resumes while latched of the stop in force, ahead of its queue', () => {
    const fx = makeHub();
    const a = new TestClient(fx.hub);
    const wa = a.hello();
    a.estop(9);
    ok(fx.hub.latch.latched);
    const late = new TestClient(fx.hub);
    late.hello();
    deepEqual(late.link.estops(), [{ kind: EstopKind.ASSERT, source: EstopSource.CLIENT, flags: ESTOP_FLAG_LATCHED, origin: wa.sessionId, seq: 9 }]);
    const again = new TestClient(fx.hub);
    again.hello({ resumeToken: wa.resumeToken });
    deepEqual(again.link.estops().map((e) => [e.kind, e.origin, e.seq]), [[EstopKind.ASSERT, wa.sessionId, 9]]);
    // With nothing latched a join hears no ESTOP frame.
    const fy = makeHub();
    const calm = new TestClient(fy.hub);
    calm.hello();
    deepEqual(calm.link.estops(), []);
  });
});
