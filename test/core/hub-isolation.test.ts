// §12: bad input gets a NACK with a stable code and never throws; one session's garbage
// never reaches another session's deliveries or grants; persistent garbage closes only the
// session that sends it.
import { CborWriter } from '../../hub/cbor.js';
import { encodeFrame, FrameType, GoodbyeReason, MAX_FRAME_BYTES, type DataFrame, type Frame, type GoodbyeFrame, type NackFrame, type PongFrame } from '../../hub/frames.js';
import { Nack } from '../../hub/nack.js';
import { SessionState } from '../../hub/session.js';
import { deepEqual, equal, ok } from '../lib/assert.js';
import { runs } from '../lib/env.js';
import { makeHub, OPERATOR_CREDENTIAL, TestClient, type Fixture } from '../lib/hub-fixture.js';

const IMU = 10;
const ODOM = 11;

function bytesOf(f: Frame): Uint8Array {
  const w = new CborWriter(new Uint8Array(4096));
  encodeFrame(f, w);
  return w.buf.slice(0, w.pos);
}

function only(c: TestClient): NackFrame {
  const got = c.take();
  equal(got.length, 1, `one answer, got ${JSON.stringify(got)}`);
  const n = got[0]!;
  ok(n.type === FrameType.NACK);
  return n;
}

class Rng {
  constructor(private s: number) {}
  next(n: number): number {
    let x = this.s;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.s = x >>> 0;
    return this.s % n;
  }
}

describe('hub isolation and bad input (§12)', () => {
  describe('each bad frame gets a NACK with a stable code', () => {
    const cases: [string, () => Uint8Array, number, number | undefined][] = [
      ['junk bytes', () => new Uint8Array([0xff, 0x00, 0x13, 0x37]), Nack.MALFORMED, undefined],
      ['an empty frame', () => new Uint8Array(0), Nack.MALFORMED, undefined],
      ['a CBOR map that is no frame', () => new Uint8Array([0xa1, 0x01, 0x02]), Nack.MALFORMED, undefined],
      ['a truncated SUBSCRIBE', () => bytesOf({ type: FrameType.SUBSCRIBE, wishes: [{ channelId: IMU, wishedRateHz: 10 }] }).subarray(0, 6), Nack.MALFORMED, FrameType.SUBSCRIBE],
      ['an oversized frame', () => {
        const b = new Uint8Array(MAX_FRAME_BYTES + 1);
        b.set(bytesOf({ type: FrameType.PING, t0: 1 }));
        return b;
      }, Nack.TOO_LARGE, FrameType.PING],
      ['a DATA frame (hub→client only)', () => bytesOf({ type: FrameType.DATA, channelId: IMU, seq: 1, t: 1, values: [1] }), Nack.MALFORMED, FrameType.DATA],
      ['a WELCOME frame (hub→client only)', () => bytesOf({ type: FrameType.GRANT, subGrants: [] }), Nack.MALFORMED, FrameType.GRANT],
      ['an unknown frame type', () => new Uint8Array([0xa1, 0x00, 0x18, 0x63]), Nack.MALFORMED, 99],
      ['a wish for channel 0', () => bytesOf({ type: FrameType.SUBSCRIBE, wishes: [{ channelId: 0, wishedRateHz: 10 }] }), Nack.MALFORMED, FrameType.SUBSCRIBE],
      ['a second HELLO', () => bytesOf({ type: FrameType.HELLO, version: 1, name: 'again' }), Nack.MALFORMED, FrameType.HELLO],
      ['a HELLO of another protocol version', () => bytesOf({ type: FrameType.HELLO, version: 2, name: 'v2' }), Nack.VERSION, FrameType.HELLO],
      ['a bundle of 33 samples', () => {
        const samples: number[][] = [];
        for (let i = 0; i < 33; i++) samples.push([i, 0, 0]);
        return bytesOf({ type: FrameType.BUNDLE, channelId: 30, samples });
      }, Nack.TOO_LARGE, FrameType.BUNDLE],
    ];
    for (const [what, make, code, frameType] of cases) {
      it(`${what} → ${code}`, () => {
        const fx = makeHub();
        const c = new TestClient(fx.hub);
        c.hello();
        c.sendBytes(make());
        const n = only(c);
        equal(n.code, code);
        equal(n.frameType, frameType);
        equal(fx.hub.sessions()[0]?.state, SessionState.ACTIVE, 'the session carries on');
      });
    }

    it('answers frames before HELLO with NOT_READY (PING is answered, HELLO opens)', () => {
      const fx = makeHub();
      const c = new TestClient(fx.hub);
      c.send({ type: FrameType.SUBSCRIBE, wishes: [{ channelId: IMU, wishedRateHz: 10 }] });
      deepEqual([only(c).code, fx.hub.sessions().length], [Nack.NOT_READY, 0]);
      c.send({ type: FrameType.INTENT, channelId: 42, requestId: 1 });
      equal(only(c).code, Nack.NOT_READY);
      c.sendBytes(new Uint8Array([1, 2, 3]));
      equal(only(c).code, Nack.MALFORMED);
      c.send({ type: FrameType.PING, t0: 5 });
      deepEqual(c.take().map((f) => f.type), [FrameType.PONG]);
      c.hello();
      equal(fx.hub.sessions().length, 1);
    });

    it('a PONG says the level the table reads the session’s link at (§5.14 level), and none before HELLO', () => {
      const fx = makeHub();
      const c = new TestClient(fx.hub);
      c.send({ type: FrameType.PING, t0: 5 });
      deepEqual(c.take(FrameType.PONG), [{ type: FrameType.PONG, t0: 5, t1: fx.clock.now() }], 'no session: no level');
      c.hello();
      const levels: (number | undefined)[] = [];
      for (const level of [0, 1, 2, 3]) {
        c.link.level = level;
        c.send({ type: FrameType.PING, t0: 6 + level });
        const pongs = c.take(FrameType.PONG) as PongFrame[];
        equal(pongs.length, 1);
        levels.push(pongs[0]!.level);
      }
      deepEqual(levels, [0, 1, 2, 3]);
    });
  });

  it('never throws, whatever arrives, and still serves a well-behaved client afterwards', () => {
    const fx = makeHub();
    const rng = new Rng(0xc0ffee);
    const valid = [
      bytesOf({ type: FrameType.SUBSCRIBE, wishes: [{ channelId: IMU, wishedRateHz: 10 }, { channelId: ODOM, wishedRateHz: 5, priority: 2 }] }),
      bytesOf({ type: FrameType.PUBLISH, wishes: [{ channelId: 30, wishedRateHz: 10, burst: 20 }] }),
      bytesOf({ type: FrameType.BUNDLE, channelId: 30, samples: [[1, 0.5, 0.1], [2, 0.5, 0.1]] }),
      bytesOf({ type: FrameType.INTENT, channelId: 43, requestId: 9, args: [1, 'x'] }),
      bytesOf({ type: FrameType.HELLO, version: 1, name: 'fuzz', subWishes: [{ channelId: IMU, wishedRateHz: 10 }] }),
      bytesOf({ type: FrameType.ACK, acked: 3 }),
    ];
    for (let i = runs(1000, 150); i > 0; i--) {
      const c = new TestClient(fx.hub);
      if (rng.next(2) === 0) c.hello({ credential: OPERATOR_CREDENTIAL });
      for (let k = 0; k < 5; k++) {
        let b: Uint8Array;
        if (rng.next(3) === 0) {
          b = new Uint8Array(rng.next(40));
          for (let j = 0; j < b.length; j++) b[j] = rng.next(256);
        } else {
          b = valid[rng.next(valid.length)]!.slice();
          const flips = 1 + rng.next(3);
          for (let j = 0; j < flips && b.length > 0; j++) b[rng.next(b.length)] = rng.next(256);
          if (rng.next(4) === 0) b = b.subarray(0, rng.next(b.length + 1));
        }
        c.sendBytes(b);
        fx.clock.advance(rng.next(30));
      }
      c.send({ type: FrameType.GOODBYE });
      c.sink.lost();
      fx.hub.tick();
    }
    ok(fx.hub.sessions().length <= 8);
    fx.clock.advance(60000);
    fx.hub.tick(); // every STALE leftover expires
    const after = new TestClient(fx.hub);
    after.hello({ subWishes: [{ channelId: IMU, wishedRateHz: 50 }] });
    fx.clock.advance(20);
    fx.hub.publishSample(IMU, fx.clock.now(), new Float64Array(6), 6);
    equal(after.take(FrameType.DATA).length, 1);
  });

  it('keeps one session\'s garbage out of another session\'s deliveries and grants', () => {
    // The same run twice, with and without a client throwing garbage; B's view must be identical.
    function scenario(withGarbage: boolean): { data: number[][]; grants: string } {
      const fx = makeHub();
      const b = new TestClient(fx.hub);
      b.hello({ subWishes: [{ channelId: IMU, wishedRateHz: 40 }, { channelId: ODOM, wishedRateHz: 20 }] });
      const g = new TestClient(fx.hub);
      g.hello();
      const rng = new Rng(99);
      const data: number[][] = [];
      const imu = new Float64Array(6);
      const odom = new Float64Array(5);
      for (let k = 0; k < 400; k++) {
        fx.clock.advance(5);
        imu[0] = k;
        fx.hub.publishSample(IMU, fx.clock.now(), imu, 6);
        if (k % 4 === 0) fx.hub.publishSample(ODOM, fx.clock.now(), odom, 5);
        if (withGarbage && k % 30 === 0) {
          // Under the malformed limit: the garbage session stays open the whole time.
          const junk = new Uint8Array(1 + rng.next(30));
          for (let j = 0; j < junk.length; j++) junk[j] = rng.next(256);
          junk[0] = 0xa0 | rng.next(16);
          g.sendBytes(junk);
        }
        fx.hub.tick();
        for (const f of b.take(FrameType.DATA) as DataFrame[]) data.push([f.channelId, f.seq]);
      }
      const grants = JSON.stringify(fx.hub.sessions()[0]?.subs);
      return { data, grants };
    }
    const clean = scenario(false);
    const dirty = scenario(true);
    ok(clean.data.length > 100);
    deepEqual(dirty.data, clean.data);
    equal(dirty.grants, clean.grants);
  });

  it('closes a session after more than 10 malformed frames in 1 s, and only that session', () => {
    const fx = makeHub();
    const good = new TestClient(fx.hub);
    const wg = good.hello({ subWishes: [{ channelId: IMU, wishedRateHz: 50 }] });
    const bad = new TestClient(fx.hub);
    const wb = bad.hello();
    for (let i = 0; i < 10; i++) {
      fx.clock.advance(90); // ten within 1 s
      bad.sendBytes(new Uint8Array([0xff]));
    }
    equal(bad.take(FrameType.NACK).length, 10);
    ok(!bad.link.closed, 'ten are tolerated');
    fx.clock.advance(90);
    bad.sendBytes(new Uint8Array([0xff]));
    ok(bad.link.closed);
    const bye = bad.take(FrameType.GOODBYE)[0] as GoodbyeFrame | undefined;
    equal(bye?.reason, GoodbyeReason.MISBEHAVING);
    deepEqual(fx.hub.sessions().map((s) => s.id), [wg.sessionId]);
    ok(wb.sessionId !== wg.sessionId);
    // The good one carries on as before.
    fx.clock.advance(20);
    fx.hub.publishSample(IMU, fx.clock.now(), new Float64Array(6), 6);
    equal(good.take(FrameType.DATA).length, 1);
    ok(!good.link.closed);
  });

  it('tolerates malformed frames spread thinner than 10 per second', () => {
    const fx = makeHub();
    const c = new TestClient(fx.hub);
    c.hello();
    for (let i = 0; i < 40; i++) {
      fx.clock.advance(110);
      c.sendBytes(new Uint8Array([0xff]));
    }
    ok(!c.link.closed);
    equal(c.take(FrameType.NACK).length, 40);
  });

  it('closes a transport that sends garbage, or anything but HELLO, before HELLO persistently', () => {
    const fx = makeHub();
    const c = new TestClient(fx.hub);
    for (let i = 0; i < 11; i++) c.sendBytes(new Uint8Array([0x00]));
    ok(c.link.closed);
    c.send({ type: FrameType.HELLO, version: 1, name: 'late' });
    equal(fx.hub.sessions().length, 0);
    const d = new TestClient(fx.hub);
    for (let i = 0; i < 10; i++) d.send({ type: FrameType.SUBSCRIBE, wishes: [{ channelId: IMU, wishedRateHz: 10 }] });
    ok(!d.link.closed);
    d.send({ type: FrameType.SUBSCRIBE, wishes: [{ channelId: IMU, wishedRateHz: 10 }] });
    ok(d.link.closed);
    equal(d.take(FrameType.NACK).length, 11);
  });

  it('counts each waiting transport\'s malformed frames on its own, however many wait, and a new one from zero', () => {
    const fx = makeHub();
    // More transports wait for their HELLO than the hub's store keeps rows for (sessions.ts CONN_GUARD_ROWS).
    const waiting = Array.from({ length: 7 }, () => new TestClient(fx.hub));
    for (let i = 0; i < 10; i++) for (const c of waiting) c.sendBytes(new Uint8Array([0x00]));
    for (const c of waiting) ok(!c.link.closed, 'ten each are tolerated');
    waiting[0]!.hello();
    waiting[5]!.hello();
    // Transports attached now start from zero, in the rows the HELLOs left or in rows of their own.
    const late = Array.from({ length: 3 }, () => new TestClient(fx.hub));
    for (let i = 0; i < 10; i++) for (const c of late) c.sendBytes(new Uint8Array([0x00]));
    for (const c of late) ok(!c.link.closed, 'a new transport starts with no malformed frame counted');
    for (const c of [...waiting, ...late]) c.sendBytes(new Uint8Array([0x00]));
    waiting.forEach((c, i) => equal(c.link.closed, i !== 0 && i !== 5, `transport ${i}`));
    for (const c of late) ok(c.link.closed);
    // The sessions opened count from zero too: one more malformed frame does not close them.
    equal(fx.hub.sessions().length, 2);
  });
});

describe('hub: a second HELLO is malformed (§12.5)', () => {
  it('eleven second HELLOs within a second close the session with GOODBYE MISBEHAVING', () => {
    const fx = makeHub();
    const c = new TestClient(fx.hub);
    c.hello({});
    c.take();
    for (let i = 0; i < 11; i++) {
      fx.clock.advance(50);
      c.send({ type: FrameType.HELLO, version: 1, name: 'again' });
    }
    const got = c.take();
    const goodbye = got.filter((f) => f.type === FrameType.GOODBYE);
    equal(goodbye.length, 1);
    equal((goodbye[0] as { reason?: number }).reason, GoodbyeReason.MISBEHAVING);
    ok(c.link.closed);
  });
});
