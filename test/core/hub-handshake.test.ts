// §6.1: what a transport may do before HELLO: a handshake timeout, and a byte bucket of its own
// that a flood overdraws (closed), while HELLOs and resumes on other transports still go through.
import { FrameType, PROTOCOL_VERSION } from '../../hub/frames.js';
import { Nack } from '../../hub/nack.js';
import { HANDSHAKE_TIMEOUT_MS, PRE_SESSION_BYTES_DEPTH } from '../../hub/constants.js';
import { equal, ok } from '../lib/assert.js';
import { makeHub, TestClient } from '../lib/hub-fixture.js';

describe('hub before HELLO (§6.1)', () => {
  it('closes a transport that has not completed HELLO within the handshake timeout; one that did stays', () => {
    const fx = makeHub();
    const silent = new TestClient(fx.hub);
    const talker = new TestClient(fx.hub);
    talker.hello();
    fx.clock.advance(HANDSHAKE_TIMEOUT_MS - 1);
    fx.hub.tick();
    equal(silent.link.closed, false);
    fx.clock.advance(1);
    fx.hub.tick();
    equal(silent.link.closed, true);
    equal(talker.link.closed, false);
    // A PING does not complete the handshake.
    const pinger = new TestClient(fx.hub);
    for (let t = 0; t < HANDSHAKE_TIMEOUT_MS; t += 500) {
      pinger.send({ type: FrameType.PING, t0: t });
      fx.clock.advance(500);
      fx.hub.tick();
    }
    equal(pinger.link.closed, true);
  });

  it('closes a transport flooding PINGs before HELLO; other HELLOs and a resume are still admitted', () => {
    const fx = makeHub();
    const first = new TestClient(fx.hub);
    const w = first.hello();
    first.link.close();
    first.sink.lost();
    const flooder = new TestClient(fx.hub);
    let sent = 0;
    // About 1 MB/s of PINGs for one second, on a clock stepping 1 ms.
    for (let i = 0; i < 1000 && !flooder.link.closed; i++) {
      for (let k = 0; k < 100 && !flooder.link.closed; k++) {
        flooder.send({ type: FrameType.PING, t0: i });
        sent++;
      }
      fx.clock.advance(1);
    }
    equal(flooder.link.closed, true);
    ok(sent * 10 < PRE_SESSION_BYTES_DEPTH * 2, `closed after ${sent} PINGs`);
    const n = flooder.nacks();
    equal(n[n.length - 1]!.code, Nack.INGRESS_BUDGET);
    // Meanwhile every join and the resume get their WELCOME.
    for (let j = 0; j < 6; j++) new TestClient(fx.hub).hello();
    const back = new TestClient(fx.hub);
    const w2 = back.hello({ resumeToken: w.resumeToken });
    equal(w2.sessionId, w.sessionId);
  });

  it('a sessionless flood across many transports does not refuse a resume with INGRESS_BUDGET', () => {
    const fx = makeHub();
    const first = new TestClient(fx.hub);
    const w = first.hello();
    first.link.close();
    first.sink.lost();
    // Each transport stays within its own bucket; together they exceed the hub's window.
    for (let c = 0; c < 400; c++) {
      const t = new TestClient(fx.hub);
      for (let k = 0; k < 60; k++) t.send({ type: FrameType.PING, t0: k });
    }
    ok(fx.hub.governor.hubUsed(fx.clock.now()) > fx.hub.config.hubIngressBytesPerS * 0.9, String(fx.hub.governor.hubUsed(fx.clock.now())));
    const back = new TestClient(fx.hub);
    back.send({ type: FrameType.HELLO, version: PROTOCOL_VERSION, name: 'test', resumeToken: w.resumeToken });
    const got = back.take();
    ok(got.some((f) => f.type === FrameType.WELCOME), JSON.stringify(got));
  });
});
