// §9 intents and control ownership: ECHO with the robot's result, take/release control
// announced on `control-owner`, NOT_OWNER for motion from anyone but the owner.
import { FrameType, type DataFrame, type EchoFrame, type NackFrame } from '../../hub/frames.js';
import { Nack } from '../../hub/nack.js';
import { deepEqual, equal } from '../lib/assert.js';
import { makeHub, OPERATOR_CREDENTIAL, TestClient, type Fixture } from '../lib/hub-fixture.js';

const CONTROL_OWNER = 3;
const IMU = 10;
const CMD_VEL = 30;
const ARM = 40;
const DISARM = 41;
const TAKE_CONTROL = 42;
const SET_MODE = 43;
const GO_HOME = 44;
const RELEASE_CONTROL = 45;

function operator(fx: Fixture, extra: Parameters<TestClient['hello']>[0] = {}): { c: TestClient; id: number } {
  const c = new TestClient(fx.hub);
  const w = c.hello({ credential: OPERATOR_CREDENTIAL, ...extra });
  return { c, id: w.sessionId };
}

function answer(c: TestClient): EchoFrame | NackFrame {
  const got = c.take().filter((f): f is EchoFrame | NackFrame => f.type === FrameType.ECHO || f.type === FrameType.NACK);
  equal(got.length, 1, 'one answer per intent');
  return got[0]!;
}

function ownerAnnouncements(c: TestClient): number[] {
  return (c.take(FrameType.DATA) as DataFrame[]).filter((f) => f.channelId === CONTROL_OWNER).map((f) => f.values[0]!);
}

describe('hub intents and control ownership (§9)', () => {
  it('answers an intent with ECHO carrying its request id and the robot\'s result', () => {
    const fx = makeHub();
    const { c } = operator(fx);
    fx.robot.intentResult = 7;
    c.intent(DISARM, 1234, [1, 'now']);
    const a = answer(c);
    deepEqual(a, { type: FrameType.ECHO, channelId: DISARM, requestId: 1234, result: 7 });
    deepEqual(fx.robot.intents, [{ channelId: DISARM, args: [1, 'now'] }]);
  });

  it('announces the owner on control-owner when control is taken, and 0 when released', () => {
    const fx = makeHub();
    const watcher = new TestClient(fx.hub);
    watcher.hello({ subWishes: [{ channelId: CONTROL_OWNER, wishedRateHz: 2 }] });
    const { c, id } = operator(fx);
    c.intent(TAKE_CONTROL, 1);
    deepEqual(answer(c), { type: FrameType.ECHO, channelId: TAKE_CONTROL, requestId: 1, result: 0 });
    equal(fx.hub.controlOwner, id);
    deepEqual(ownerAnnouncements(watcher), [id]);
    c.intent(RELEASE_CONTROL, 2);
    equal((answer(c) as EchoFrame).result, 0);
    equal(fx.hub.controlOwner, 0);
    deepEqual(ownerAnnouncements(watcher), [0]);
  });

  it('refuses take_control while another ACTIVE session holds it, and release_control from a non-owner', () => {
    const fx = makeHub();
    const a = operator(fx);
    const b = operator(fx);
    a.c.intent(TAKE_CONTROL, 1);
    answer(a.c);
    b.c.intent(TAKE_CONTROL, 2);
    deepEqual(answer(b.c), { type: FrameType.NACK, code: Nack.NOT_OWNER, channelId: TAKE_CONTROL, frameType: FrameType.INTENT, requestId: 2 });
    b.c.intent(RELEASE_CONTROL, 3);
    equal((answer(b.c) as NackFrame).code, Nack.NOT_OWNER);
    equal(fx.hub.controlOwner, a.id);
    // Taking it twice is fine for the owner.
    a.c.intent(TAKE_CONTROL, 4);
    equal((answer(a.c) as EchoFrame).result, 0);
  });

  it('lets another session take control from an owner whose session went STALE', () => {
    const fx = makeHub();
    const a = operator(fx);
    const b = operator(fx);
    a.c.intent(TAKE_CONTROL, 1);
    a.c.sink.lost();
    b.c.intent(TAKE_CONTROL, 2);
    equal((answer(b.c) as EchoFrame).result, 0);
    equal(fx.hub.controlOwner, b.id);
  });

  it('refuses motion intents from a session that does not own control with NACK NOT_OWNER', () => {
    const fx = makeHub();
    const a = operator(fx);
    const b = operator(fx);
    for (const [ch, req] of [[ARM, 10], [SET_MODE, 11], [GO_HOME, 12]] as const) {
      b.c.intent(ch, req, ch === SET_MODE ? [2] : undefined);
      deepEqual(answer(b.c), { type: FrameType.NACK, code: Nack.NOT_OWNER, channelId: ch, frameType: FrameType.INTENT, requestId: req });
    }
    equal(fx.robot.intents.length, 0);
    a.c.intent(TAKE_CONTROL, 1);
    answer(a.c);
    a.c.intent(ARM, 2);
    equal(answer(a.c).type, FrameType.ECHO);
    b.c.intent(ARM, 13);
    equal((answer(b.c) as NackFrame).code, Nack.NOT_OWNER);
    // disarm only makes the robot safer: anyone at operator tier may.
    b.c.intent(DISARM, 14);
    equal(answer(b.c).type, FrameType.ECHO);
    deepEqual(fx.robot.intents.map((i) => i.channelId), [ARM, DISARM]);
  });

  it('refuses motion publications from a non-owner, accepts them from the owner', () => {
    const fx = makeHub();
    const a = operator(fx, { pubWishes: [{ channelId: CMD_VEL, wishedRateHz: 10 }] });
    const b = operator(fx, { pubWishes: [{ channelId: CMD_VEL, wishedRateHz: 10 }] });
    a.c.intent(TAKE_CONTROL, 1);
    a.c.take();
    b.c.send({ type: FrameType.BUNDLE, channelId: CMD_VEL, samples: [[1, 0.5, 0]] });
    deepEqual(b.c.nacks().map((n) => [n.code, n.channelId]), [[Nack.NOT_OWNER, CMD_VEL]]);
    a.c.send({ type: FrameType.BUNDLE, channelId: CMD_VEL, samples: [[1, 0.5, 0]] });
    deepEqual(a.c.nacks(), []);
    deepEqual(fx.robot.published, [{ channelId: CMD_VEL, samples: [[1, 0.5, 0]] }]);
  });

  it('refuses intents below their publish tier with FORBIDDEN and non-intent channels with UNKNOWN_CHANNEL', () => {
    const fx = makeHub();
    const obs = new TestClient(fx.hub);
    obs.hello();
    obs.intent(TAKE_CONTROL, 1);
    deepEqual(answer(obs), { type: FrameType.NACK, code: Nack.FORBIDDEN, channelId: TAKE_CONTROL, frameType: FrameType.INTENT, requestId: 1 });
    equal(fx.hub.controlOwner, 0);
    const { c } = operator(fx);
    c.intent(IMU, 2);
    equal((answer(c) as NackFrame).code, Nack.UNKNOWN_CHANNEL);
    c.intent(99, 3);
    equal((answer(c) as NackFrame).code, Nack.UNKNOWN_CHANNEL);
  });

  it('gives up control when the owner closes: another may take it', () => {
    const fx = makeHub();
    const a = operator(fx);
    const b = operator(fx);
    a.c.intent(TAKE_CONTROL, 1);
    a.c.send({ type: FrameType.GOODBYE });
    equal(fx.hub.controlOwner, 0);
    b.c.intent(TAKE_CONTROL, 2);
    equal((answer(b.c) as EchoFrame).result, 0);
  });
});
