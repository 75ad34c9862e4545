// §6.5: a session whose client sends nothing for the liveness timeout becomes STALE, so that
// slot pressure can reclaim it; a client that PINGs within it stays ACTIVE.
import { LIVENESS_TIMEOUT_MS } from '../../hub/constants.js';
import { FrameType, GoodbyeReason, type GoodbyeFrame } from '../../hub/frames.js';
import { SessionState } from '../../hub/session.js';
import { PING_INTERVAL_MS } from '../../client/core.js';
import { equal, ok } from '../lib/assert.js';
import { makeHub, OPERATOR_CREDENTIAL, TestClient, type Fixture } from '../lib/hub-fixture.js';

function stateOf(fx: Fixture, id: number): number {
  for (const v of fx.hub.sessions()) if (v.id === id) return v.state;
  return SessionState.CLOSED;
}

describe('hub liveness (§6.5)', () => {
  it('the timeout is above the client library’s PING period', () => {
    ok(LIVENESS_TIMEOUT_MS >= 3 * PING_INTERVAL_MS);
  });

  it('a silent session goes STALE at the timeout; one that PINGs stays ACTIVE', () => {
    const fx = makeHub({ livenessTimeoutMs: LIVENESS_TIMEOUT_MS });
    const silent = new TestClient(fx.hub);
    const a = silent.hello();
    const pinger = new TestClient(fx.hub);
    const b = pinger.hello();
    for (let t = 0; t < 3 * LIVENESS_TIMEOUT_MS; t += 100) {
      if (t % PING_INTERVAL_MS === 0) pinger.send({ type: FrameType.PING, t0: t });
      fx.clock.advance(100);
      fx.hub.tick();
      if (t + 100 < LIVENESS_TIMEOUT_MS) equal(stateOf(fx, a.sessionId), SessionState.ACTIVE, `at ${t + 100}`);
    }
    equal(stateOf(fx, a.sessionId), SessionState.STALE);
    equal(silent.link.closed, true);
    equal(stateOf(fx, b.sessionId), SessionState.ACTIVE);
  });

  it('four silent anonymous sessions on a full hub yield their slots to an operator', () => {
    const fx = makeHub({ slots: 4, livenessTimeoutMs: LIVENESS_TIMEOUT_MS });
    const squatters: TestClient[] = [];
    for (let i = 0; i < 4; i++) {
      const c = new TestClient(fx.hub);
      c.hello();
      squatters.push(c);
    }
    fx.clock.advance(LIVENESS_TIMEOUT_MS);
    fx.hub.tick();
    const op = new TestClient(fx.hub);
    const w = op.hello({ credential: OPERATOR_CREDENTIAL });
    ok(w.sessionId > 4);
    equal(fx.hub.counters.reclaims, 1);
    // A reclaimed squatter's transport is already closed: nothing more is sent to it.
    ok(squatters.every((c) => c.link.closed));
    ok(!squatters.some((c) => c.take(FrameType.GOODBYE).some((g) => (g as GoodbyeFrame).reason === GoodbyeReason.MISBEHAVING)));
  });
});
