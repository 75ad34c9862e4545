// §6 sessions: HELLO → WELCOME, slots and slot-pressure reclaim, resume on another link,
// stale expiry, GOODBYE teardown, tiers from the stored credentials.
import { Priority, Tier } from '../../catalog/schema.js';
import type { CborMap, CborValue } from '../../hub/cbor.js';
import { decodeValue } from '../../hub/cbor-reader.js';
import { CREDENTIALS_KEY, decodeCredentials, encodeCredentials, saveCredentials } from '../../hub/credentials.js';
import { FrameType, GoodbyeReason, RESUME_TOKEN_BYTES, type DataFrame, type GoodbyeFrame, type GrantFrame } from '../../hub/frames.js';
import { EstopSource } from '../../hub/estop-frame.js';
import { Nack } from '../../hub/nack.js';
import { SessionState } from '../../hub/session.js';
import { TestLink } from '../lib/test-link.js';
import { deepEqual, equal, fail, ok, throws } from '../lib/assert.js';
import { ascii, makeHub, MAINTAINER_CREDENTIAL, MemoryStore, OPERATOR_CREDENTIAL, TestClient, type Fixture } from '../lib/hub-fixture.js';

const IMU = 10;
const ODOM = 11;
const SAFETY = 1;
const CMD_VEL = 30;

function imu6(): Float64Array {
  return new Float64Array([1, 2, 3, 4, 5, 6]);
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function stateOf(fx: Fixture, id: number): number {
  for (const v of fx.hub.sessions()) if (v.id === id) return v.state;
  return SessionState.CLOSED;
}

describe('hub sessions (§6)', () => {
  it('answers HELLO with WELCOME: session id, a fresh resume token, limits, catalog hash, grants under keys 35 and 36', () => {
    const fx = makeHub();
    const c = new TestClient(fx.hub);
    const w = c.hello({
      credential: OPERATOR_CREDENTIAL,
      subWishes: [{ channelId: IMU, wishedRateHz: 100 }, { channelId: 99, wishedRateHz: 1 }],
      pubWishes: [{ channelId: CMD_VEL, wishedRateHz: 20 }],
    });
    equal(w.sessionId, 1);
    equal(w.resumeToken.length, RESUME_TOKEN_BYTES);
    equal(w.hubId, 'robot-hub');
    equal(w.slots, 8);
    equal(w.tier, Tier.operator);
    equal(w.mtu, c.link.mtu);
    equal(w.staleTtlMs, 30000);
    equal(w.latched, false);
    equal(w.owner, 0);
    deepEqual(w.catalogHash, fx.catalog.hash);
    deepEqual(w.subGrants, [{ channelId: IMU, grantedRateHz: 100, priority: Priority.normal }]);
    deepEqual(w.pubGrants, [{ channelId: CMD_VEL, grantedRateHz: 20, burst: 20 }]);

    // The raw WELCOME: key 35 holds the subscription grants, key 36 the publication grants (§10.2).
    const raw = c.link.received.find((x) => x.frame?.type === FrameType.WELCOME);
    if (!raw) return fail('no raw WELCOME');
    const m = decodeValue(raw.bytes) as CborMap;
    const subs = m.get(35) as CborValue[];
    const pubs = m.get(36) as CborValue[];
    equal(subs.length, 1);
    equal(pubs.length, 1);
    const g = subs[0] as CborMap;
    deepEqual([g.get(3), g.get(13), g.get(14)], [IMU, Priority.normal, 100]);
    const p = pubs[0] as CborMap;
    deepEqual([p.get(3), p.get(14), p.get(42)], [CMD_VEL, 20, 20]);

    // The refused wish (no channel 99) is NACKed, after the WELCOME, not before it.
    const kinds = c.link.received.map((x) => x.frame?.type);
    deepEqual(kinds, [FrameType.WELCOME, FrameType.NACK]);
    const nack = c.link.frames(FrameType.NACK)[0];
    ok(nack && nack.type === FrameType.NACK);
    deepEqual([nack.code, nack.channelId, nack.frameType], [Nack.UNKNOWN_CHANNEL, 99, FrameType.SUBSCRIBE]);
  });

  it('gives every session its own id and token', () => {
    const fx = makeHub();
    const ids = new Set<number>();
    const tokens: Uint8Array[] = [];
    for (let i = 0; i < 8; i++) {
      const w = new TestClient(fx.hub).hello();
      ids.add(w.sessionId);
      for (const t of tokens) ok(!sameBytes(t, w.resumeToken), 'a token was handed out twice');
      tokens.push(w.resumeToken);
    }
    equal(ids.size, 8);
  });

  it('has 8 slots by default; a 9th HELLO with none STALE gets NACK NO_SLOTS with retry_after_ms', () => {
    const fx = makeHub();
    for (let i = 0; i < 8; i++) new TestClient(fx.hub).hello();
    const ninth = new TestClient(fx.hub);
    ninth.send({ type: FrameType.HELLO, version: 1, name: 'ninth' });
    const got = ninth.take();
    equal(got.length, 1);
    const n = got[0];
    ok(n && n.type === FrameType.NACK);
    equal(n.code, Nack.NO_SLOTS);
    equal(n.frameType, FrameType.HELLO);
    ok(n.retryAfterMs !== undefined && n.retryAfterMs > 0, 'NO_SLOTS is retryable');
    equal(fx.hub.sessions().length, 8);
  });

  it('takes the slot count from the config', () => {
    const fx = makeHub({ slots: 2 });
    new TestClient(fx.hub).hello();
    const w = new TestClient(fx.hub).hello();
    equal(w.slots, 2);
    const third = new TestClient(fx.hub);
    third.send({ type: FrameType.HELLO, version: 1, name: 'third' });
    equal(third.nacks()[0]?.code, Nack.NO_SLOTS);
  });

  it('reclaims the oldest STALE session for a HELLO on a full hub, and only that one', () => {
    const fx = makeHub({ slots: 3 });
    const a = new TestClient(fx.hub);
    const wa = a.hello();
    const b = new TestClient(fx.hub);
    const wb = b.hello();
    new TestClient(fx.hub).hello();
    fx.clock.advance(10);
    a.sink.lost(); // A goes STALE first ...
    fx.clock.advance(10);
    b.sink.lost(); // ... then B
    equal(stateOf(fx, wa.sessionId), SessionState.STALE);
    equal(stateOf(fx, wb.sessionId), SessionState.STALE);

    const d = new TestClient(fx.hub);
    const wd = d.hello();
    ok(wd.sessionId > wb.sessionId);
    equal(fx.hub.counters.reclaims, 1);
    equal(stateOf(fx, wa.sessionId), SessionState.CLOSED);
    equal(stateOf(fx, wb.sessionId), SessionState.STALE);
    // A's token died with it; B's still resumes.
    const again = new TestClient(fx.hub);
    again.send({ type: FrameType.HELLO, version: 1, name: 'a', resumeToken: wa.resumeToken });
    equal(again.nacks()[0]?.code, Nack.UNKNOWN_SESSION);
    equal(new TestClient(fx.hub).hello({ resumeToken: wb.resumeToken }).sessionId, wb.sessionId);
  });

  it('resumes by token on a different link: same session, subscriptions and grants kept, token rotated, first pushes re-sent (row 3)', () => {
    const fx = makeHub();
    const a = new TestClient(fx.hub, new TestLink('ble'));
    const w1 = a.hello({ subWishes: [{ channelId: IMU, wishedRateHz: 50 }, { channelId: SAFETY, wishedRateHz: 10 }] });
    const v = imu6();
    for (let k = 0; k < 3; k++) {
      fx.clock.advance(20);
      fx.hub.publishSample(IMU, fx.clock.now(), v, 6);
    }
    equal(a.take(FrameType.DATA).length, 3);
    a.sink.lost();
    equal(stateOf(fx, w1.sessionId), SessionState.STALE);
    fx.clock.advance(5000);

    const b = new TestClient(fx.hub, new TestLink('tcp'));
    b.link.lvl = 2; // severe: row 14 decimates imu 4×, but the first push after the resume is row 3
    const w2 = b.hello({ resumeToken: w1.resumeToken });
    equal(w2.sessionId, w1.sessionId);
    ok(!sameBytes(w2.resumeToken, w1.resumeToken), 'the resume token must rotate');
    deepEqual(w2.subGrants, w1.subGrants);
    equal(fx.hub.sessions()[0]?.binding, 'tcp');
    equal(fx.hub.counters.resumes, 1);

    const row3 = fx.hub.counters.rows[3] as number;
    const seqs: number[] = [];
    for (let k = 0; k < 8; k++) {
      fx.clock.advance(20);
      fx.hub.publishSample(IMU, fx.clock.now(), v, 6);
      for (const f of b.take(FrameType.DATA)) seqs.push((f as DataFrame).seq);
    }
    equal((fx.hub.counters.rows[3] as number) - row3, 1);
    // Pushes 4..11: 4 goes by row 3, then row 14 sends the newest of every 4 (5–8 → 8).
    deepEqual(seqs, [4, 8], 'row 3, then decimate 4×');
    // The old token is spent once the client is heard with its new WELCOME.
    b.send({ type: FrameType.PING, t0: 1 });
    const c = new TestClient(fx.hub);
    c.send({ type: FrameType.HELLO, version: 1, name: 'old', resumeToken: w1.resumeToken });
    equal(c.nacks()[0]?.code, Nack.UNKNOWN_SESSION);
  });

  it('a resume whose WELCOME was lost with its transport: the token the client still holds resumes it again (§6.6)', () => {
    const fx = makeHub();
    const a = new TestClient(fx.hub);
    const w1 = a.hello({ subWishes: [{ channelId: IMU, wishedRateHz: 10 }] });
    a.sink.lost();
    // The client resumes; the hub answers with a new token, but the transport dies before the
    // client reads that WELCOME: it still holds w1's token.
    const b = new TestClient(fx.hub, new TestLink('tcp'));
    b.send({ type: FrameType.HELLO, version: 1, name: 'again', resumeToken: w1.resumeToken });
    b.sink.lost();
    equal(stateOf(fx, w1.sessionId), SessionState.STALE);
    const c = new TestClient(fx.hub, new TestLink('ble'));
    const w3 = c.hello({ resumeToken: w1.resumeToken });
    equal(w3.sessionId, w1.sessionId, 'resumed, not refused UNKNOWN_SESSION');
    ok(!sameBytes(w3.resumeToken, w1.resumeToken));
    equal(fx.hub.counters.resumes, 2);
    // Heard on the resumed session: now the old token is spent, and the new one works.
    c.send({ type: FrameType.PING, t0: 1 });
    c.sink.lost();
    const d = new TestClient(fx.hub);
    d.send({ type: FrameType.HELLO, version: 1, name: 'old', resumeToken: w1.resumeToken });
    equal(d.nacks()[0]?.code, Nack.UNKNOWN_SESSION);
    const e = new TestClient(fx.hub);
    equal(e.hello({ resumeToken: w3.resumeToken }).sessionId, w1.sessionId);
  });

  it('moves an ACTIVE session to the link it resumes on and tells the old link why', () => {
    const fx = makeHub();
    const a = new TestClient(fx.hub);
    const w1 = a.hello({ subWishes: [{ channelId: IMU, wishedRateHz: 50 }] });
    const b = new TestClient(fx.hub);
    equal(b.hello({ resumeToken: w1.resumeToken }).sessionId, w1.sessionId);
    ok(a.link.closed);
    const bye = a.take(FrameType.GOODBYE)[0] as GoodbyeFrame | undefined;
    equal(bye?.reason, GoodbyeReason.RESUMED_ELSEWHERE);
    fx.clock.advance(20);
    fx.hub.publishSample(IMU, fx.clock.now(), imu6(), 6);
    equal(b.take(FrameType.DATA).length, 1);
    equal(a.take(FrameType.DATA).length, 0);
    equal(fx.hub.sessions().length, 1);
  });

  it('answers an unknown resume token with NACK UNKNOWN_SESSION and opens nothing', () => {
    const fx = makeHub();
    const c = new TestClient(fx.hub);
    c.send({ type: FrameType.HELLO, version: 1, name: 'x', resumeToken: new Uint8Array(RESUME_TOKEN_BYTES).fill(7) });
    const got = c.take();
    equal(got.length, 1);
    ok(got[0]?.type === FrameType.NACK && got[0].code === Nack.UNKNOWN_SESSION);
    equal(fx.hub.sessions().length, 0);
  });

  it('closes a STALE session after exactly stale_ttl_ms, not before', () => {
    const fx = makeHub({ staleTtlMs: 1000 });
    const a = new TestClient(fx.hub);
    const w = a.hello({ subWishes: [{ channelId: IMU, wishedRateHz: 50 }] });
    a.sink.lost();
    fx.clock.advance(999);
    fx.hub.tick();
    equal(stateOf(fx, w.sessionId), SessionState.STALE);
    fx.clock.advance(1);
    fx.hub.tick();
    equal(stateOf(fx, w.sessionId), SessionState.CLOSED);
    equal(fx.hub.sessions().length, 0);
    const b = new TestClient(fx.hub);
    b.send({ type: FrameType.HELLO, version: 1, name: 'late', resumeToken: w.resumeToken });
    equal(b.nacks()[0]?.code, Nack.UNKNOWN_SESSION);
  });

  it('keeps a STALE session frozen: its grants stay, nothing is sent to it', () => {
    const fx = makeHub();
    const a = new TestClient(fx.hub);
    const w = a.hello({ subWishes: [{ channelId: IMU, wishedRateHz: 40 }] });
    a.sink.lost();
    const delivered = fx.hub.counters.delivered;
    for (let k = 0; k < 10; k++) {
      fx.clock.advance(25);
      fx.hub.publishSample(IMU, fx.clock.now(), imu6(), 6);
      fx.hub.tick();
    }
    equal(fx.hub.counters.delivered, delivered);
    deepEqual(fx.hub.sessions()[0]?.subs.map((s) => [s.channelId, s.grantedHz]), [[IMU, 40]]);
    deepEqual(w.subGrants.map((g) => g.grantedRateHz), [40]);
  });

  it('tears a session down on GOODBYE: answered, link closed, slot and token freed, control released', () => {
    const fx = makeHub();
    const watcher = new TestClient(fx.hub);
    watcher.hello({ subWishes: [{ channelId: 3, wishedRateHz: 2 }] });
    const a = new TestClient(fx.hub);
    const w = a.hello({ credential: OPERATOR_CREDENTIAL });
    a.intent(42, 1); // take_control
    equal(fx.hub.controlOwner, w.sessionId);
    a.take();
    watcher.take();
    a.send({ type: FrameType.GOODBYE });
    const bye = a.take(FrameType.GOODBYE)[0] as GoodbyeFrame | undefined;
    equal(bye?.reason, GoodbyeReason.NORMAL);
    ok(a.link.closed);
    equal(stateOf(fx, w.sessionId), SessionState.CLOSED);
    equal(fx.hub.sessions().length, 1);
    equal(fx.hub.controlOwner, 0);
    // The release is announced on control-owner (§9).
    const owner = watcher.take(FrameType.DATA) as DataFrame[];
    deepEqual(owner.map((f) => [f.channelId, f.values[0]]), [[3, 0]]);
    const b = new TestClient(fx.hub);
    b.send({ type: FrameType.HELLO, version: 1, name: 'back', resumeToken: w.resumeToken });
    equal(b.nacks()[0]?.code, Nack.UNKNOWN_SESSION);
  });

  it('shutdown: every session is told GOODBYE SHUTDOWN and closed; the latch stays', () => {
    const fx = makeHub();
    const a = new TestClient(fx.hub);
    const wa = a.hello({ credential: OPERATOR_CREDENTIAL });
    const b = new TestClient(fx.hub);
    const wb = b.hello();
    fx.hub.estop(EstopSource.WATCHDOG);
    a.take();
    b.take();
    fx.hub.shutdown();
    for (const c of [a, b]) {
      const bye = c.take(FrameType.GOODBYE) as GoodbyeFrame[];
      deepEqual(bye.map((f) => f.reason), [GoodbyeReason.SHUTDOWN]);
      ok(c.link.closed);
    }
    equal(stateOf(fx, wa.sessionId), SessionState.CLOSED);
    equal(stateOf(fx, wb.sessionId), SessionState.CLOSED);
    equal(fx.hub.sessions().length, 0);
    ok(fx.hub.latch.latched);
    fx.hub.shutdown();
  });

  describe('tiers from the credentials in the Store', () => {
    it('gives a stored credential its tier and an unknown one the anonymous tier', () => {
      const fx = makeHub();
      equal(new TestClient(fx.hub).hello({ credential: OPERATOR_CREDENTIAL }).tier, Tier.operator);
      equal(new TestClient(fx.hub).hello({ credential: MAINTAINER_CREDENTIAL }).tier, Tier.maintainer);
      equal(new TestClient(fx.hub).hello({ credential: ascii('operator-token-0002') }).tier, Tier.observer);
      equal(new TestClient(fx.hub).hello().tier, Tier.observer);
      // The tier is what the session may do: an observer's imu is capped, an operator's is not.
      const obs = new TestClient(fx.hub).hello({ subWishes: [{ channelId: IMU, wishedRateHz: 200 }] });
      const op = new TestClient(fx.hub).hello({ credential: OPERATOR_CREDENTIAL, subWishes: [{ channelId: IMU, wishedRateHz: 200 }] });
      equal(obs.subGrants[0]?.grantedRateHz, 50);
      equal(op.subGrants[0]?.grantedRateHz, 200);
    });

    it('refuses unknown and absent credentials with FORBIDDEN when anonymousTier is -1', () => {
      const fx = makeHub({ anonymousTier: -1 });
      for (const credential of [undefined, ascii('nobody')]) {
        const c = new TestClient(fx.hub);
        c.send(credential ? { type: FrameType.HELLO, version: 1, name: 'x', credential } : { type: FrameType.HELLO, version: 1, name: 'x' });
        const got = c.take();
        equal(got.length, 1);
        ok(got[0]?.type === FrameType.NACK && got[0].code === Nack.FORBIDDEN && got[0].frameType === FrameType.HELLO);
      }
      equal(fx.hub.sessions().length, 0);
      equal(new TestClient(fx.hub).hello({ credential: OPERATOR_CREDENTIAL }).tier, Tier.operator);
    });

    it('reads credentials changed in the Store after reloadCredentials', () => {
      const store = new MemoryStore();
      const fx = makeHub({}, store);
      const late = ascii('added-later');
      equal(new TestClient(fx.hub).hello({ credential: late }).tier, Tier.observer);
      saveCredentials(store, [{ tier: Tier.maintainer, credential: late }]);
      fx.hub.reloadCredentials();
      equal(new TestClient(fx.hub).hello({ credential: late }).tier, Tier.maintainer);
    });

    it('never reads a damaged tier byte as a tier: the record stops before the damage', () => {
      const good = encodeCredentials([{ tier: Tier.operator, credential: ascii('a') }]);
      const damaged = new Uint8Array([...good, 9, 1, 0x62]);
      deepEqual(decodeCredentials(damaged).map((c) => c.tier), [Tier.operator]);
      throws(() => encodeCredentials([{ tier: 7, credential: ascii('b') }]), (e) => e instanceof RangeError);
      const store = new MemoryStore();
      store.set(CREDENTIALS_KEY, damaged);
      const fx = makeHub({}, store);
      equal(new TestClient(fx.hub).hello({ credential: ascii('b') }).tier, Tier.observer);
      equal(new TestClient(fx.hub).hello({ credential: ascii('a') }).tier, Tier.operator);
    });
  });

  it('re-states grants on resume in WELCOME even when the pie moved while it was away', () => {
    const fx = makeHub({ capacityHz: 60 });
    const a = new TestClient(fx.hub);
    const wa = a.hello({ subWishes: [{ channelId: IMU, wishedRateHz: 50 }] });
    equal(wa.subGrants[0]?.grantedRateHz, 50);
    a.sink.lost();
    const b = new TestClient(fx.hub);
    b.hello({ credential: OPERATOR_CREDENTIAL, subWishes: [{ channelId: ODOM, wishedRateHz: 50, priority: Priority.elevated }] });
    const back = new TestClient(fx.hub).hello({ resumeToken: wa.resumeToken });
    // Capacity 60: B's elevated odom takes 50 first, A's normal imu gets the 10 left.
    equal(back.subGrants[0]?.grantedRateHz, 10);
    equal((b.take(FrameType.GRANT) as GrantFrame[]).length, 0, 'B kept its grant: no GRANT for it');
  });
});

describe('hub operator teardown (§6.9, §12.7)', () => {
  it('evict() sends SESSION_EVICTED then GOODBYE, closes the session and frees its slot', () => {
    const fx = makeHub({ slots: 1 });
    const a = new TestClient(fx.hub);
    const w = a.hello({});
    ok(fx.hub.evict(w.sessionId));
    const got = a.take();
    deepEqual(got.map((f) => f.type), [FrameType.NACK, FrameType.GOODBYE]);
    equal((got[0] as { code: number }).code, Nack.SESSION_EVICTED);
    equal((got[1] as GoodbyeFrame).reason, GoodbyeReason.EVICTED);
    ok(a.link.closed);
    equal(fx.hub.sessions().length, 0);
    equal(fx.hub.evict(w.sessionId), false);
    const b = new TestClient(fx.hub);
    b.hello({});
    equal(fx.hub.sessions().length, 1);
  });
});
