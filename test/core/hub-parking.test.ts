// §10.4 "park, not kill" (RFC-051): a never-shed queue that cannot drain for 2 s closes the
// link and makes the session STALE (§6.6), never CLOSED, never SESSION_EVICTED; it resumes
// like any stale session and yields only to slot pressure.
import { NEVER_SHED_STALL_EVICTION_MS } from '../../hub/constants.js';
import { FrameType, type DataFrame, type GrantFrame, type WelcomeFrame } from '../../hub/frames.js';
import { Nack } from '../../hub/nack.js';
import { NEVER_SHED_FRAMES, neverShedFrames, SessionState } from '../../hub/session.js';
import { deepEqual, equal, ok } from '../lib/assert.js';
import { makeHub, TestClient, type Fixture } from '../lib/hub-fixture.js';

const SAFETY = 1;
const IMU = 10;

function stateOf(fx: Fixture, id: number): number {
  for (const v of fx.hub.sessions()) if (v.id === id) return v.state;
  return SessionState.CLOSED;
}

/** A session whose link stops taking anything, with one never-shed frame (a PONG) waiting at t0. */
function wedged(fx: Fixture, capacity = 0): { c: TestClient; w: WelcomeFrame; t0: number } {
  const c = new TestClient(fx.hub);
  const w = c.hello({ subWishes: [{ channelId: IMU, wishedRateHz: 50 }, { channelId: SAFETY, wishedRateHz: 10 }] });
  c.link.capacity = capacity;
  fx.clock.advance(7);
  const t0 = fx.clock.now();
  c.send({ type: FrameType.PING, t0: 1 });
  equal(fx.hub.sessions()[0]?.neverShedBytes !== 0, true, 'the PONG must be waiting in the never-shed queue');
  return { c, w, t0 };
}

describe('hub parking (§10.4)', () => {
  it('parks after exactly 2000 ms of stall, not at 1999: link closed, session STALE, no NACK, no GOODBYE', () => {
    const fx = makeHub();
    const { c, w, t0 } = wedged(fx);
    equal(NEVER_SHED_STALL_EVICTION_MS, 2000);
    for (let t = t0 + 100; t < t0 + 1999; t += 100) {
      fx.clock.t = t;
      fx.hub.tick();
    }
    fx.clock.t = t0 + 1999;
    fx.hub.tick();
    equal(stateOf(fx, w.sessionId), SessionState.ACTIVE);
    ok(!c.link.closed);
    equal(fx.hub.counters.parks, 0);
    fx.clock.t = t0 + 2000;
    fx.hub.tick();
    equal(stateOf(fx, w.sessionId), SessionState.STALE);
    ok(c.link.closed);
    equal(fx.hub.counters.parks, 1);
    equal(fx.hub.counters.nacks[Nack.SESSION_EVICTED], 0);
    // Nothing was said on the way out: not a NACK, not a GOODBYE (the client sees only a closed link).
    c.link.capacity = 1 << 20;
    c.link.drain();
    deepEqual(c.take().map((f) => f.type), []);
  });

  it('parks a link too small for any frame the same way', () => {
    const fx = makeHub();
    const { c, w, t0 } = wedged(fx, 4);
    fx.clock.t = t0 + 1999;
    fx.hub.tick();
    equal(stateOf(fx, w.sessionId), SessionState.ACTIVE);
    fx.clock.t = t0 + 2000;
    fx.hub.tick();
    equal(stateOf(fx, w.sessionId), SessionState.STALE);
    ok(c.link.closed);
  });

  it('parks at once when a never-shed queue runs out of frames: 32 at the device\'s 768 bytes, 64 at the default 2048', () => {
    equal(neverShedFrames(768), 32);
    equal(neverShedFrames(2048), NEVER_SHED_FRAMES);
    equal(neverShedFrames(64), 16);
    for (const [bytes, frames] of [[768, 32], [2048, 64]] as const) {
      const fx = makeHub({ neverShedBytes: bytes });
      const { c, w } = wedged(fx);
      // Each PONG is far smaller than bytes / frames: the frame count is what runs out.
      let pings = 1;
      while (stateOf(fx, w.sessionId) === SessionState.ACTIVE && pings < 200) {
        fx.clock.advance(1);
        c.send({ type: FrameType.PING, t0: ++pings });
      }
      equal(pings, frames + 1, `${bytes} bytes: the PONG after ${frames} waiting parks the session`);
      equal(stateOf(fx, w.sessionId), SessionState.STALE);
      equal(fx.hub.counters.neverShedOverflows, 1);
      ok(c.link.closed);
    }
  });

  it('a link stalled through an ESTOP asserted every 100 ms: parked at the 2 s stall at 2048 bytes, at 1,600 ms by overflow at the device\'s 768', () => {
    for (const [bytes, parkedAt, overflows] of [[2048, 2000, 0], [768, 1600, 1]] as const) {
      const fx = makeHub({ neverShedBytes: bytes });
      const a = new TestClient(fx.hub);
      const w = a.hello({ subWishes: [{ channelId: SAFETY, wishedRateHz: 10 }, { channelId: 2, wishedRateHz: 20 }, { channelId: 3, wishedRateHz: 2 }] });
      const b = new TestClient(fx.hub);
      b.hello();
      a.link.capacity = 0;
      const t0 = fx.clock.now();
      let at = -1;
      let seq = 1;
      for (let t = 0; t <= 3000 && at < 0; t += 10) {
        fx.clock.t = t0 + t;
        if (t % 100 === 0) b.estop(seq++);
        fx.hub.tick();
        if (stateOf(fx, w.sessionId) !== SessionState.ACTIVE) at = t;
      }
      equal(at, parkedAt, `${bytes} bytes`);
      equal(stateOf(fx, w.sessionId), SessionState.STALE);
      equal(fx.hub.counters.neverShedOverflows, overflows);
    }
  });

  it('times the stall from the last progress: a queue that drains a little is not parked', () => {
    const fx = makeHub();
    const { c, w, t0 } = wedged(fx);
    // Two more never-shed frames wait behind the PONG.
    c.send({ type: FrameType.PING, t0: 2 });
    c.send({ type: FrameType.PING, t0: 3 });
    fx.clock.t = t0 + 1500;
    c.link.capacity = c.link.queuedBytes + 15; // room for one PONG (with its level, §5.14), then none
    fx.hub.tick();
    equal(c.link.queued.length, 1);
    fx.clock.t = t0 + 2000;
    fx.hub.tick();
    equal(stateOf(fx, w.sessionId), SessionState.ACTIVE);
    fx.clock.t = t0 + 3499;
    fx.hub.tick();
    equal(stateOf(fx, w.sessionId), SessionState.ACTIVE);
    fx.clock.t = t0 + 3500;
    fx.hub.tick();
    equal(stateOf(fx, w.sessionId), SessionState.STALE);
  });

  it('does not park a link that drains before 2 s; the never-shed frames arrive in order', () => {
    const fx = makeHub();
    const { c, w, t0 } = wedged(fx);
    c.send({ type: FrameType.PING, t0: 2 });
    fx.clock.t = t0 + 1900;
    c.link.capacity = 1 << 20;
    fx.hub.tick();
    fx.clock.t = t0 + 5000;
    fx.hub.tick();
    equal(stateOf(fx, w.sessionId), SessionState.ACTIVE);
    deepEqual(c.take(FrameType.PONG).map((f) => f.type === FrameType.PONG && f.t0), [1, 2]);
  });

  it('drops non-critical samples at once while never-shed frames wait: nothing is queued behind them', () => {
    const fx = makeHub();
    const { c } = wedged(fx);
    c.link.capacity = 1 << 20; // the link has room again, but the hub has not drained yet
    const v = new Float64Array(6);
    fx.clock.advance(20);
    fx.hub.publishSample(IMU, fx.clock.now(), v, 6);
    equal(fx.hub.counters.egressDrops, 1);
    fx.hub.tick();
    deepEqual(c.take().map((f) => f.type), [FrameType.PONG]);
  });

  it('resumes a parked session on a new link with its subscriptions and grants', () => {
    const fx = makeHub();
    const { w, t0 } = wedged(fx);
    fx.clock.t = t0 + 2000;
    fx.hub.tick();
    equal(stateOf(fx, w.sessionId), SessionState.STALE);
    fx.clock.advance(3000);
    const d = new TestClient(fx.hub);
    const back = d.hello({ resumeToken: w.resumeToken });
    equal(back.sessionId, w.sessionId);
    deepEqual(back.subGrants, w.subGrants);
    equal(stateOf(fx, w.sessionId), SessionState.ACTIVE);
    fx.clock.advance(20);
    fx.hub.publishSample(IMU, fx.clock.now(), new Float64Array(6), 6);
    equal((d.take(FrameType.DATA) as DataFrame[]).length, 1);
  });

  it('reclaims a parked session only under slot pressure', () => {
    const fx = makeHub({ slots: 3 });
    const { w, t0 } = wedged(fx);
    fx.clock.t = t0 + 2000;
    fx.hub.tick();
    equal(stateOf(fx, w.sessionId), SessionState.STALE);
    // Free slots: new sessions leave the parked one alone, however long it has been parked.
    new TestClient(fx.hub).hello();
    fx.clock.advance(20000);
    fx.hub.tick();
    new TestClient(fx.hub).hello();
    equal(stateOf(fx, w.sessionId), SessionState.STALE);
    equal(fx.hub.counters.reclaims, 0);
    // The hub is full now: the next HELLO takes the parked session's slot.
    const late = new TestClient(fx.hub);
    late.hello();
    equal(fx.hub.counters.reclaims, 1);
    equal(stateOf(fx, w.sessionId), SessionState.CLOSED);
    const again = new TestClient(fx.hub);
    again.send({ type: FrameType.HELLO, version: 1, name: 'x', resumeToken: w.resumeToken });
    equal(again.nacks()[0]?.code, Nack.UNKNOWN_SESSION);
  });

  it('gives a parked session\'s share back to the others and takes it again on resume', () => {
    const fx = makeHub({ capacityHz: 60 });
    const { w, t0 } = wedged(fx);
    const b = new TestClient(fx.hub);
    const wb = b.hello({ subWishes: [{ channelId: IMU, wishedRateHz: 50 }] });
    equal(wb.subGrants[0]?.grantedRateHz, 30);
    fx.clock.t = t0 + 2000;
    fx.hub.tick();
    equal(stateOf(fx, w.sessionId), SessionState.STALE);
    const up = b.take(FrameType.GRANT) as GrantFrame[];
    deepEqual(up.map((g) => g.subGrants?.[0]?.grantedRateHz), [50]);
    new TestClient(fx.hub).hello({ resumeToken: w.resumeToken });
    const down = b.take(FrameType.GRANT) as GrantFrame[];
    deepEqual(down.map((g) => g.subGrants?.[0]?.grantedRateHz), [30]);
  });
});
