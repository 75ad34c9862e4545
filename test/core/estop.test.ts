import { DEADMAN_MS } from '../../hub/constants.js';
import {
  Deadman,
  ESTOP_DEDUP_PAIRS,
  ESTOP_RECORD_BYTES,
  ESTOP_STORE_KEY,
  EstopLatch,
} from '../../hub/estop.js';
import { ESTOP_FLAG_LATCHED, ESTOP_FRAME_BYTES, EstopKind, EstopSource, decodeEstop } from '../../hub/estop-frame.js';
import { Nack } from '../../hub/nack.js';
import type { Clock, Store } from '../../hub/ports.js';
import { deepEqual, equal, ok, throws } from '../lib/assert.js';

class MapStore implements Store {
  readonly map = new Map<string, Uint8Array>();
  writes = 0;
  failWrites = false;
  get(key: string): Uint8Array | undefined {
    const v = this.map.get(key);
    return v === undefined ? undefined : v.slice();
  }
  set(key: string, value: Uint8Array): void {
    if (this.failWrites) throw new Error('flash full');
    this.writes++;
    this.map.set(key, value);
  }
  delete(key: string): void {
    this.map.delete(key);
  }
}

class FakeRobot {
  readonly calls: string[] = [];
  stop(source: number): void {
    this.calls.push(`stop:${source}`);
  }
  release(): void {
    this.calls.push('release');
  }
  count(what: string): number {
    let n = 0;
    for (const c of this.calls) if (c === what || c.startsWith(what + ':')) n++;
    return n;
  }
}

const clock = (t = 0): Clock & { t: number } => ({
  t,
  now() {
    return this.t;
  },
});

const { CLIENT, HUB_BUTTON, DEADMAN, WATCHDOG, ROBOT } = EstopSource;

function fresh(): { store: MapStore; robot: FakeRobot; clk: Clock & { t: number }; latch: EstopLatch } {
  const store = new MapStore();
  const robot = new FakeRobot();
  const clk = clock(100);
  return { store, robot, clk, latch: new EstopLatch(store, robot, clk) };
}

describe('hub/estop: EstopLatch (§11)', () => {
  it('a fresh hub is not latched and does not touch the robot', () => {
    const { latch, robot, store } = fresh();
    ok(!latch.latched);
    equal(robot.calls.length, 0);
    equal(store.writes, 0);
    equal(latch.canClear(), 0);
    ok(!latch.clear(), 'nothing to clear');
    equal(robot.count('release'), 0);
  });

  it('an assertion latches, stops the robot at once and persists', () => {
    const { latch, robot, store, clk } = fresh();
    clk.t = 1234;
    ok(latch.assert(CLIENT, 7, 42));
    ok(latch.latched);
    deepEqual(robot.calls, [`stop:${CLIENT}`]);
    equal(latch.source, CLIENT);
    equal(latch.origin, 7);
    equal(latch.originSeq, 42);
    equal(latch.latchedAt, 1234);
    equal(store.writes, 1);
    equal(store.map.get(ESTOP_STORE_KEY)?.length, ESTOP_RECORD_BYTES);
  });

  it('the robot is stopped before the record is written', () => {
    const robot = new FakeRobot();
    const store = new MapStore();
    let stoppedFirst = false;
    const watching: Store = {
      get: (k) => store.get(k),
      set: (k, v) => {
        stoppedFirst = robot.count('stop') === 1;
        store.set(k, v);
      },
      delete: (k) => store.delete(k),
    };
    new EstopLatch(watching, robot, clock()).assert(CLIENT, 1, 1);
    ok(stoppedFirst);
  });

  it('duplicates (same origin and sequence) count once; the robot is told to stop each time', () => {
    const { latch, robot, store } = fresh();
    ok(latch.assert(CLIENT, 7, 42));
    ok(!latch.assert(CLIENT, 7, 42), 'same origin, same seq');
    ok(!latch.assert(CLIENT, 7, 42));
    ok(latch.assert(CLIENT, 7, 43), 'next seq of that origin');
    ok(latch.assert(CLIENT, 8, 42), 'same seq, other origin');
    ok(!latch.assert(CLIENT, 7, 43));
    equal(robot.count('stop'), 6);
    equal(store.writes, 1, 'only latching wrote the record: a flood cannot wear the flash');
    equal(latch.origin, 8);
  });

  it(`remembers the last ${ESTOP_DEDUP_PAIRS} pairs of a latch episode`, () => {
    const { latch } = fresh();
    for (let s = 0; s < ESTOP_DEDUP_PAIRS; s++) ok(latch.assert(CLIENT, 5, s));
    for (let s = 0; s < ESTOP_DEDUP_PAIRS; s++) ok(!latch.assert(CLIENT, 5, s), `seq ${s} is a duplicate`);
    ok(latch.assert(CLIENT, 5, ESTOP_DEDUP_PAIRS));
    ok(latch.assert(CLIENT, 5, 0), 'the oldest pair was pushed out');
  });

  it('sequences are compared as uint16 and origins as uint32', () => {
    const { latch } = fresh();
    ok(latch.assert(CLIENT, 0xffffffff, 0x1ffff));
    equal(latch.origin, 0xffffffff);
    equal(latch.originSeq, 0xffff);
    ok(!latch.assert(CLIENT, -1, 0xffff));
  });

  it('survives a restart: the restored latch stops the robot at once', () => {
    const store = new MapStore();
    const first = new FakeRobot();
    const a = new EstopLatch(store, first, clock());
    ok(a.assert(CLIENT, 9, 300));
    const second = new FakeRobot();
    const b = new EstopLatch(store, second, clock(5000));
    ok(b.latched);
    deepEqual(second.calls, [`stop:${CLIENT}`]);
    equal(b.source, CLIENT);
    equal(b.origin, 9);
    equal(b.originSeq, 300);
    equal(b.latchedAt, 5000);
    equal(b.canClear(), 0);
    ok(b.clear());
    deepEqual(second.calls, [`stop:${CLIENT}`, 'release']);
    const third = new FakeRobot();
    const c = new EstopLatch(store, third, clock());
    ok(!c.latched, 'the clear was persisted too');
    equal(third.calls.length, 0);
  });

  it('a latch from a holding source restores latched but not holding (the button is read again)', () => {
    const store = new MapStore();
    const a = new EstopLatch(store, new FakeRobot(), clock());
    a.setSourceAsserting(HUB_BUTTON, true);
    ok(a.assert(HUB_BUTTON, 0, 1));
    ok(a.isAsserting(HUB_BUTTON));
    const robot = new FakeRobot();
    const b = new EstopLatch(store, robot, clock());
    ok(b.latched);
    equal(b.source, HUB_BUTTON);
    deepEqual(robot.calls, [`stop:${HUB_BUTTON}`]);
    equal(b.assertingSources, 0);
    equal(b.canClear(), 0);
  });

  it('an unreadable record restores as latched by the watchdog (the safe side)', () => {
    for (const bad of [new Uint8Array(3), Uint8Array.of(99, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)]) {
      const store = new MapStore();
      store.map.set(ESTOP_STORE_KEY, bad);
      const robot = new FakeRobot();
      const l = new EstopLatch(store, robot, clock());
      ok(l.latched);
      equal(l.source, WATCHDOG);
      deepEqual(robot.calls, [`stop:${WATCHDOG}`]);
    }
  });

  it('a store that fails does not stop the latch; the failure is counted', () => {
    const { latch, robot, store } = fresh();
    store.failWrites = true;
    ok(latch.assert(CLIENT, 1, 1));
    ok(latch.latched);
    equal(robot.count('stop'), 1);
    equal(latch.persistErrors, 1);
    const throwingGet: Store = {
      get: () => {
        throw new Error('nvs');
      },
      set: () => {},
      delete: () => {},
    };
    const l = new EstopLatch(throwingGet, new FakeRobot(), clock());
    equal(l.persistErrors, 1);
    ok(!l.latched);
  });

  it('a clear is refused while a source asserts, with ESTOP_LATCHED', () => {
    const { latch, robot } = fresh();
    latch.setSourceAsserting(HUB_BUTTON, true);
    ok(latch.assert(HUB_BUTTON, 0, 1), 'pressing the button latches');
    ok(latch.latched);
    ok(latch.isAsserting(HUB_BUTTON));
    equal(latch.canClear(), Nack.ESTOP_LATCHED);
    ok(!latch.clear());
    ok(latch.latched);
    equal(robot.count('release'), 0);
    latch.setSourceAsserting(HUB_BUTTON, false);
    ok(!latch.isAsserting(HUB_BUTTON));
    ok(latch.latched, 'releasing the button does not clear the latch');
    equal(latch.canClear(), 0);
    ok(latch.clear());
    ok(!latch.latched);
    equal(robot.count('release'), 1);
    ok(!latch.clear(), 'a second clear does nothing');
    equal(robot.count('release'), 1);
  });

  it('every holding source blocks a clear until all have released', () => {
    const { latch } = fresh();
    ok(latch.assert(CLIENT, 3, 1));
    latch.setSourceAsserting(DEADMAN, true);
    latch.setSourceAsserting(ROBOT, true);
    latch.setSourceAsserting(ROBOT, true);
    equal(latch.assertingSources, (1 << DEADMAN) | (1 << ROBOT));
    latch.setSourceAsserting(DEADMAN, false);
    equal(latch.canClear(), Nack.ESTOP_LATCHED);
    ok(!latch.clear());
    latch.setSourceAsserting(ROBOT, false);
    ok(latch.clear());
  });

  it('after a clear the same (origin, seq) latches again: a real ESTOP is never taken for an old one', () => {
    const { latch, robot } = fresh();
    ok(latch.assert(CLIENT, 4, 1));
    ok(latch.assert(CLIENT, 4, 2));
    ok(latch.clear());
    ok(latch.assert(CLIENT, 4, 1));
    ok(latch.latched);
    ok(latch.assert(CLIENT, 4, 2), 'the pairs of the earlier episode were forgotten');
    ok(!latch.assert(CLIENT, 4, 2), 'within this episode, a duplicate again');
    equal(robot.count('stop'), 5);
  });

  it('holding alone does not latch; it only blocks a clear once latched', () => {
    const { latch, robot } = fresh();
    latch.setSourceAsserting(HUB_BUTTON, true);
    ok(!latch.latched);
    equal(robot.calls.length, 0);
    equal(latch.canClear(), 0, 'nothing to clear');
    ok(latch.assert(HUB_BUTTON, 0, 1));
    equal(latch.canClear(), Nack.ESTOP_LATCHED);
  });

  it('holding sources are codes 0..31', () => {
    const { latch } = fresh();
    throws(() => latch.setSourceAsserting(32, true), (e) => e instanceof RangeError);
    throws(() => latch.setSourceAsserting(-1, true), (e) => e instanceof RangeError);
    ok(!latch.isAsserting(40));
  });

  it('seq advances per announcement (new assertion or clear), not per duplicate, and persists at transitions', () => {
    const store = new MapStore();
    const a = new EstopLatch(store, new FakeRobot(), clock());
    equal(a.seq, 0);
    ok(a.assert(CLIENT, 2, 77));
    equal(a.seq, 1);
    ok(!a.assert(CLIENT, 2, 77));
    equal(a.seq, 1, 'a duplicate is not announced');
    ok(a.assert(WATCHDOG, 0, 500));
    equal(a.seq, 2);
    equal(a.origin, 0);
    equal(a.originSeq, 500);
    equal(new EstopLatch(store, new FakeRobot(), clock()).seq, 1, 'stored when it latched, not per assertion');
    ok(a.clear());
    equal(a.seq, 3);
    const b = new EstopLatch(store, new FakeRobot(), clock());
    equal(b.seq, 3);
    ok(b.assert(HUB_BUTTON, 0, 1));
    equal(b.seq, 4);
  });

  it('seq wraps at 16 bits', () => {
    const store = new MapStore();
    const rec = new Uint8Array(ESTOP_RECORD_BYTES);
    rec[0] = 1;
    rec[9] = 0xff;
    rec[10] = 0xff;
    store.map.set(ESTOP_STORE_KEY, rec);
    const l = new EstopLatch(store, new FakeRobot(), clock());
    ok(!l.latched);
    equal(l.seq, 0xffff);
    l.assert(WATCHDOG, 0, 1);
    equal(l.seq, 0);
  });

  it('encode writes the announcement: ASSERT with the last assertion, CLEARED from the hub', () => {
    const { latch } = fresh();
    const buf = new Uint8Array(20);
    ok(latch.assert(CLIENT, 0x01020304, 0x0506));
    equal(latch.encode(buf, 3), 3 + ESTOP_FRAME_BYTES);
    deepEqual(decodeEstop(buf, 3, ESTOP_FRAME_BYTES), {
      kind: EstopKind.ASSERT,
      source: CLIENT,
      flags: ESTOP_FLAG_LATCHED,
      origin: 0x01020304,
      seq: 0x0506,
    });
    ok(latch.assert(DEADMAN, 0, 9));
    latch.encode(buf, 0);
    deepEqual(decodeEstop(buf, 0, ESTOP_FRAME_BYTES), {
      kind: EstopKind.ASSERT,
      source: DEADMAN,
      flags: ESTOP_FLAG_LATCHED,
      origin: 0,
      seq: 9,
    });
    ok(latch.clear());
    equal(latch.seq, 3);
    latch.encode(buf, 0);
    deepEqual(decodeEstop(buf, 0, ESTOP_FRAME_BYTES), {
      kind: EstopKind.CLEARED,
      source: CLIENT,
      flags: 0,
      origin: 0,
      seq: 3,
    });
  });
});

describe('hub/estop: Deadman (§11)', () => {
  it(`defaults to DEADMAN_MS (${DEADMAN_MS})`, () => {
    equal(new Deadman().timeoutMs, DEADMAN_MS);
  });

  it('fires only once the owner has been silent for more than the timeout: not at the edge', () => {
    const d = new Deadman();
    d.arm(1000);
    ok(!d.expired(1000 + DEADMAN_MS - 1));
    ok(!d.expired(1000 + DEADMAN_MS), 'heard within deadman_ms includes the edge');
    ok(d.expired(1000 + DEADMAN_MS + 0.5));
    ok(d.expired(1000 + DEADMAN_MS + 1));
    equal(d.deadline(), 1000 + DEADMAN_MS);
  });

  it('hearing the owner moves the edge', () => {
    const d = new Deadman(500);
    d.arm(0);
    d.heard(400);
    ok(!d.expired(900));
    ok(d.expired(901));
    d.heard(950);
    ok(!d.expired(1450));
    ok(d.expired(1451));
    d.heard(100); // an out-of-order clock reading never moves it back
    ok(!d.expired(1450));
  });

  it('never fires while disarmed; arming counts the owner as heard now', () => {
    const d = new Deadman(500);
    ok(!d.armed);
    ok(!d.expired(1e9));
    equal(d.deadline(), Infinity);
    d.heard(10); // no owner: ignored
    d.arm(2000);
    ok(d.armed);
    ok(!d.expired(2500));
    ok(d.expired(2501));
    d.disarm();
    ok(!d.expired(10_000));
    d.arm(10_000);
    ok(!d.expired(10_500));
  });

  it('drives the latch: asserts once at the edge, holds while the owner is silent', () => {
    const store = new MapStore();
    const robot = new FakeRobot();
    const latch = new EstopLatch(store, robot, clock());
    const d = new Deadman();
    const owner = 12;
    d.arm(0);
    let announced = 0;
    const tick = (t: number): void => {
      const silent = d.expired(t);
      latch.setSourceAsserting(DEADMAN, silent);
      if (silent && !latch.latched && latch.assert(DEADMAN, owner, t & 0xffff)) {
        announced++;
        equal(t, 299 + DEADMAN_MS + 1, 'latched at the first instant past the edge');
      }
    };
    for (let t = 0; t <= 2000; t++) {
      if (t < 300) d.heard(t); // the owner goes silent after 299
      tick(t);
    }
    equal(announced, 1);
    ok(latch.latched);
    equal(latch.source, DEADMAN);
    equal(robot.count('stop'), 1);
    equal(latch.canClear(), Nack.ESTOP_LATCHED, 'the owner is still silent');
    d.heard(2001);
    tick(2001);
    ok(latch.latched, 'the owner coming back does not clear the latch');
    ok(latch.clear());
  });
});
