// §10.4 through the hub: which samples each row lets through, conflation, the segments
// exception (rows 4–6, `gap`), the row counters, and no delay-and-burst.
import { Priority } from '../../catalog/schema.js';
import { FrameType, type DataFrame } from '../../hub/frames.js';
import { deepEqual, equal, ok } from '../lib/assert.js';
import { runs } from '../lib/env.js';
import { makeHub, OPERATOR_CREDENTIAL, TestClient, type Fixture } from '../lib/hub-fixture.js';

const SAFETY = 1;
const IMU = 10;
const ODOM = 11;
const JOINT_STATES = 12;
const SCAN = 14;
const PATH = 15;

const FIELDS: Record<number, number> = { [SAFETY]: 3, [IMU]: 6, [ODOM]: 5, [JOINT_STATES]: 6, [SCAN]: 16, [PATH]: 6 };

function push(fx: Fixture, channelId: number, stepMs: number, value = 0): void {
  fx.clock.advance(stepMs);
  const v = new Float64Array(FIELDS[channelId] as number).fill(value);
  fx.hub.publishSample(channelId, fx.clock.now(), v, v.length);
}

function dataOf(c: TestClient, channelId: number): DataFrame[] {
  return (c.take(FrameType.DATA) as DataFrame[]).filter((f) => f.channelId === channelId);
}

function seqs(frames: readonly DataFrame[]): number[] {
  return frames.map((f) => f.seq);
}

function rows(fx: Fixture): number[] {
  return Array.from(fx.hub.counters.rows);
}

function rowDelta(before: readonly number[], fx: Fixture): Record<number, number> {
  const out: Record<number, number> = {};
  const now = rows(fx);
  for (let r = 1; r <= 15; r++) if (now[r]! !== before[r]!) out[r] = now[r]! - before[r]!;
  return out;
}

/** A client subscribed to one channel, its first push (row 3 / row 1) already taken at level 0. */
function subscribed(fx: Fixture, channelId: number, wishedRateHz: number, priority?: number, operator = false): TestClient {
  const c = new TestClient(fx.hub);
  c.hello({
    ...(operator ? { credential: OPERATOR_CREDENTIAL } : {}),
    subWishes: [priority === undefined ? { channelId, wishedRateHz } : { channelId, wishedRateHz, priority }],
  });
  return c;
}

describe('hub shedding (§10.4)', () => {
  describe('decimation keeps the newest samples', () => {
    it('row 10 (level 1, normal STREAM) sends the newer of every two pushes', () => {
      const fx = makeHub();
      const c = subscribed(fx, IMU, 50);
      push(fx, IMU, 20); // seq 1 at level 0, uses up the first push
      equal(dataOf(c, IMU).length, 1);
      c.link.lvl = 1;
      const before = rows(fx);
      for (let k = 0; k < 8; k++) push(fx, IMU, 20); // seq 2..9
      deepEqual(seqs(dataOf(c, IMU)), [3, 5, 7, 9]);
      deepEqual(rowDelta(before, fx), { 10: 8 });
      equal(fx.hub.counters.decimated, 4);
    });

    it('row 7 (level 1, background STREAM) sends the newest of every four pushes', () => {
      const fx = makeHub();
      const c = subscribed(fx, SCAN, 10);
      push(fx, SCAN, 100);
      equal(dataOf(c, SCAN).length, 1);
      c.link.lvl = 1;
      const before = rows(fx);
      for (let k = 0; k < 8; k++) push(fx, SCAN, 100); // seq 2..9
      deepEqual(seqs(dataOf(c, SCAN)), [5, 9]);
      deepEqual(rowDelta(before, fx), { 7: 8 });
    });

    it('rows 14 and 15 (level ≥ 2) decimate normal 4× and elevated 2×; row 13 drops background', () => {
      const fx = makeHub();
      const normal = subscribed(fx, ODOM, 50);
      const elevated = subscribed(fx, ODOM, 50, Priority.elevated, true);
      const background = subscribed(fx, ODOM, 50, Priority.background);
      push(fx, ODOM, 20);
      for (const c of [normal, elevated, background]) equal(dataOf(c, ODOM).length, 1);
      for (const c of [normal, elevated, background]) c.link.lvl = 3;
      const before = rows(fx);
      for (let k = 0; k < 8; k++) push(fx, ODOM, 20); // seq 2..9
      deepEqual(seqs(dataOf(normal, ODOM)), [5, 9]);
      deepEqual(seqs(dataOf(elevated, ODOM)), [3, 5, 7, 9]);
      deepEqual(seqs(dataOf(background, ODOM)), []);
      deepEqual(rowDelta(before, fx), { 13: 8, 14: 8, 15: 8 });
    });

    it('thins the granted stream: a 200 Hz source granted 50 Hz reaches a level-1 normal subscriber at 25 Hz', () => {
      const fx = makeHub();
      const c = subscribed(fx, IMU, 50);
      push(fx, IMU, 5);
      dataOf(c, IMU);
      c.link.lvl = 1;
      let got = 0;
      for (let k = 0; k < 200; k++) {
        push(fx, IMU, 5);
        got += dataOf(c, IMU).length;
      }
      equal(got, 25);
    });
  });

  describe('conflation (row 8)', () => {
    it('sends a background STATE at level 1 only when it changed', () => {
      const fx = makeHub();
      const c = subscribed(fx, JOINT_STATES, 50, Priority.background);
      push(fx, JOINT_STATES, 20, 1); // seq 1, level 0
      equal(dataOf(c, JOINT_STATES).length, 1);
      c.link.lvl = 1;
      const before = rows(fx);
      const values = [1, 1, 2, 2, 2, 3, 3, 1]; // seq 2..9
      for (const v of values) push(fx, JOINT_STATES, 20, v);
      const got = dataOf(c, JOINT_STATES);
      deepEqual(seqs(got), [4, 7, 9]);
      deepEqual(got.map((f) => f.values[0]), [2, 3, 1]);
      deepEqual(rowDelta(before, fx), { 8: 8 });
      equal(fx.hub.counters.conflated, 5);
    });

    it('compares each session with the values last sent to it, NaN equal to NaN and 0 to -0', () => {
      const fx = makeHub();
      const a = subscribed(fx, JOINT_STATES, 50, Priority.background);
      const b = subscribed(fx, JOINT_STATES, 50, Priority.background);
      push(fx, JOINT_STATES, 20, 1); // both sent 1, at level 0
      a.link.lvl = 1;
      push(fx, JOINT_STATES, 20, 2); // b only is sent 2
      push(fx, JOINT_STATES, 20, 2);
      deepEqual(dataOf(a, JOINT_STATES).map((f) => f.values[0]), [1, 2], 'a last had 1: the first 2 is a change');
      deepEqual(dataOf(b, JOINT_STATES).map((f) => f.values[0]), [1, 2, 2]);
      b.link.lvl = 1;
      push(fx, JOINT_STATES, 20, 2);
      push(fx, JOINT_STATES, 20, NaN);
      push(fx, JOINT_STATES, 20, NaN);
      push(fx, JOINT_STATES, 20, 0);
      push(fx, JOINT_STATES, 20, -0);
      for (const c of [a, b]) deepEqual(dataOf(c, JOINT_STATES).map((f) => f.values[0]), [NaN, 0]);
      const values = new Float64Array(FIELDS[JOINT_STATES] as number).fill(0);
      fx.clock.advance(20);
      fx.hub.publishSample(JOINT_STATES, fx.clock.now(), values, 3); // fewer values: a change
      for (const c of [a, b]) deepEqual(dataOf(c, JOINT_STATES).map((f) => f.values.length), [3]);
    });

    it('sends an unchanged STATE at level 0, and a normal one at level 1 (row 11)', () => {
      const fx = makeHub();
      const c = subscribed(fx, JOINT_STATES, 50);
      for (let k = 0; k < 3; k++) push(fx, JOINT_STATES, 20, 1);
      equal(dataOf(c, JOINT_STATES).length, 3);
      c.link.lvl = 1;
      for (let k = 0; k < 3; k++) push(fx, JOINT_STATES, 20, 1);
      equal(dataOf(c, JOINT_STATES).length, 3);
      equal(fx.hub.counters.rows[11], 3);
    });
  });

  describe('segments (rows 4–6): whole source or nothing, never decimated', () => {
    it('sends every segment at level 1 (row 4) and, when elevated, at level ≥ 2 (row 5)', () => {
      const fx = makeHub();
      const normal = subscribed(fx, PATH, 25);
      const elevated = subscribed(fx, PATH, 25, Priority.elevated, true);
      push(fx, PATH, 40);
      dataOf(normal, PATH);
      dataOf(elevated, PATH);
      normal.link.lvl = 1;
      elevated.link.lvl = 2;
      const before = rows(fx);
      for (let k = 0; k < 25; k++) push(fx, PATH, 40); // seq 2..26
      const expect: number[] = [];
      for (let s = 2; s <= 26; s++) expect.push(s);
      deepEqual(seqs(dataOf(normal, PATH)), expect);
      deepEqual(seqs(dataOf(elevated, PATH)), expect);
      deepEqual(rowDelta(before, fx), { 4: 25, 5: 25 });
    });

    it('is not thinned by the grant either: segments closer together than 1 / granted rate all go', () => {
      const fx = makeHub();
      const c = subscribed(fx, PATH, 25);
      for (let k = 0; k < 10; k++) push(fx, PATH, k % 2 === 0 ? 1 : 79); // pairs 1 ms apart, 25 per second on average
      equal(dataOf(c, PATH).length, 10);
      equal(fx.hub.counters.rateGated, 0);
    });

    it('drops a normal segments source whole at level ≥ 2 (row 6); the first push after it resumes carries gap', () => {
      const fx = makeHub();
      const c = subscribed(fx, PATH, 25);
      push(fx, PATH, 40); // seq 1
      const first = dataOf(c, PATH);
      equal(first.length, 1);
      equal(first[0]!.gap, undefined);
      c.link.lvl = 2;
      const before = rows(fx);
      for (let k = 0; k < 10; k++) push(fx, PATH, 40); // seq 2..11: all dropped
      equal(dataOf(c, PATH).length, 0);
      deepEqual(rowDelta(before, fx), { 6: 10 });
      c.link.lvl = 1;
      for (let k = 0; k < 3; k++) push(fx, PATH, 40); // seq 12..14, row 4
      const after = dataOf(c, PATH);
      deepEqual(seqs(after), [12, 13, 14]);
      deepEqual(after.map((f) => f.gap === true), [true, false, false]);
    });

    it('marks a gap when the link could not take a segment', () => {
      const fx = makeHub();
      const c = subscribed(fx, PATH, 25);
      push(fx, PATH, 40);
      dataOf(c, PATH);
      c.link.capacity = 0;
      push(fx, PATH, 40); // seq 2 cannot go
      c.link.capacity = 1 << 20;
      push(fx, PATH, 40);
      push(fx, PATH, 40);
      const got = dataOf(c, PATH);
      deepEqual(seqs(got), [3, 4]);
      deepEqual(got.map((f) => f.gap === true), [true, false]);
    });

    it('marks a gap after the session was away (STALE) and resumed', () => {
      const fx = makeHub();
      const c = subscribed(fx, PATH, 25);
      push(fx, PATH, 40);
      dataOf(c, PATH);
      const w = c.link.frames(FrameType.WELCOME)[0];
      ok(w && w.type === FrameType.WELCOME);
      c.sink.lost();
      push(fx, PATH, 40);
      const d = new TestClient(fx.hub);
      d.hello({ resumeToken: w.resumeToken });
      push(fx, PATH, 40);
      const got = dataOf(d, PATH);
      deepEqual(seqs(got), [3]);
      equal(got[0]!.gap, true);
    });

    it('after a resume a samples channel carries no gap: its seq shows what was missed (§5.7, §6.6)', () => {
      const fx = makeHub();
      const c = subscribed(fx, ODOM, 20);
      push(fx, ODOM, 50);
      deepEqual(seqs(dataOf(c, ODOM)), [1]);
      const w = c.link.frames(FrameType.WELCOME)[0];
      ok(w && w.type === FrameType.WELCOME);
      c.sink.lost();
      push(fx, ODOM, 50);
      const d = new TestClient(fx.hub);
      d.hello({ resumeToken: w.resumeToken });
      push(fx, ODOM, 50);
      const got = dataOf(d, ODOM);
      deepEqual(seqs(got), [3]);
      equal(got[0]!.gap, undefined);
    });
  });

  describe('EVENT queues (§9.4) beside the table', () => {
    const LOG = 20;

    function events(c: TestClient): DataFrame[] {
      return (c.take(FrameType.DATA) as DataFrame[]).filter((f) => f.channelId === LOG);
    }

    it('drops the oldest when full and says how many on the next delivery; counts a row once, when the event leaves', () => {
      const fx = makeHub();
      const c = subscribed(fx, LOG, 50);
      fx.hub.publishEvent(LOG, fx.clock.now(), [1, 100], 'boot');
      deepEqual(events(c).map((f) => [f.seq, f.text]), [[1, 'boot']]);
      c.link.capacity = 0;
      for (let k = 0; k < 40; k++) fx.hub.publishEvent(LOG, fx.clock.now(), [0, k]); // seq 2..41
      const before = rows(fx);
      for (let k = 0; k < 5; k++) {
        fx.clock.advance(100);
        fx.hub.tick();
      }
      deepEqual(rowDelta(before, fx), {}, 'an event that could not leave was not counted');
      c.link.capacity = 1 << 20;
      fx.hub.tick();
      const got = events(c);
      equal(got.length, 32);
      equal(got[0]!.seq, 10, 'the 8 oldest went');
      equal(got[0]!.dropped, 8);
      equal(got[1]!.dropped, undefined);
      deepEqual(rowDelta(before, fx), { 1: 32 });
    });

    it('refuses an EVENT whose frame would exceed the hub\'s maxFrameBytes, counted; one that fits goes', () => {
      const fx = makeHub({ maxFrameBytes: 1536 });
      const c = subscribed(fx, LOG, 50);
      const long = 'x'.repeat(1536);
      fx.hub.publishEvent(LOG, fx.clock.now(), [1, 1], long);
      equal(events(c).length, 0, 'too large for the staging area: never sent');
      equal(fx.hub.counters.eventsTooLarge, 1);
      fx.hub.publishEvent(LOG, fx.clock.now(), [1, 2], 'x'.repeat(1024));
      const got = events(c);
      equal(got.length, 1);
      equal(got[0]!.text?.length, 1024);
      equal(got[0]!.seq, 2, 'the refused event took its seq: the gap shows it');
      equal(fx.hub.counters.eventsTooLarge, 1);
    });

    it('takes maxFrameBytes only within what a client frame and a chunk need and the protocol allows', () => {
      let threw = 0;
      for (const bad of [1024, 4609]) {
        try {
          makeHub({ maxFrameBytes: bad });
        } catch (e) {
          if (e instanceof RangeError) threw++;
        }
      }
      equal(threw, 2);
      ok(makeHub({ maxFrameBytes: 1280 }).hub);
    });

    it('drops background events at level ≥ 2 (row 13) and counts them on the next delivered one', () => {
      const fx = makeHub();
      const c = subscribed(fx, LOG, 50);
      fx.hub.publishEvent(LOG, fx.clock.now(), [1, 1]);
      events(c);
      c.link.lvl = 2;
      for (let k = 0; k < 3; k++) fx.hub.publishEvent(LOG, fx.clock.now(), [1, 2]);
      equal(events(c).length, 0);
      equal(fx.hub.counters.rows[13], 3);
      c.link.lvl = 0;
      fx.hub.publishEvent(LOG, fx.clock.now(), [1, 3]);
      deepEqual(events(c).map((f) => [f.seq, f.dropped]), [[5, 3]]);
    });

    it('keeps queueing for a STALE session and delivers on resume', () => {
      const fx = makeHub();
      const c = subscribed(fx, LOG, 50);
      const w = c.link.frames(FrameType.WELCOME)[0];
      ok(w && w.type === FrameType.WELCOME);
      c.sink.lost();
      for (let k = 0; k < 3; k++) fx.hub.publishEvent(LOG, fx.clock.now(), [2, k]);
      const d = new TestClient(fx.hub);
      d.hello({ resumeToken: w.resumeToken });
      fx.hub.tick();
      deepEqual(events(d).map((f) => f.seq), [1, 2, 3]);
    });
  });

  it('counts rows as the table fires them, per (subscriber, channel) push', () => {
    const fx = makeHub();
    const safety = subscribed(fx, SAFETY, 10);
    const imu = subscribed(fx, IMU, 50);
    const scan = subscribed(fx, SCAN, 10);
    // Level 0: row 1 for everyone.
    push(fx, SAFETY, 100);
    push(fx, IMU, 0);
    push(fx, SCAN, 0);
    deepEqual(rows(fx).slice(1), [3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    for (const c of [safety, imu, scan]) c.link.lvl = 1;
    // Level 1: a grant change makes the next push a first push (row 3) — here a fresh subscription.
    imu.send({ type: FrameType.SUBSCRIBE, wishes: [{ channelId: IMU, wishedRateHz: 25 }] });
    push(fx, SAFETY, 100); // row 2
    push(fx, IMU, 0); // row 3
    push(fx, IMU, 40); // row 10
    push(fx, SCAN, 60); // row 7
    deepEqual(rows(fx).slice(1), [3, 1, 1, 0, 0, 0, 1, 0, 0, 1, 0, 0, 0, 0, 0]);
    for (const c of [safety, imu, scan]) c.link.lvl = 2;
    push(fx, SAFETY, 100); // row 2
    push(fx, IMU, 0); // row 14
    push(fx, SCAN, 0); // row 13
    deepEqual(rows(fx).slice(1), [3, 2, 1, 0, 0, 0, 1, 0, 0, 1, 0, 0, 1, 1, 0]);
    // A push held back by the grant reaches no row.
    const gated = fx.hub.counters.rateGated;
    const before = rows(fx);
    push(fx, IMU, 1);
    deepEqual(rows(fx), before);
    equal(fx.hub.counters.rateGated, gated + 1);
  });

  it('never holds a sample back: every DATA frame leaves during the push of that very sample', () => {
    // Random levels, link room and drains, several classes: whatever the hub hands a link during
    // publishSample(seq k) carries seq k, and tick() never hands out a STREAM or STATE sample.
    let seed = 0x2545f491;
    const rnd = (n: number): number => {
      seed ^= seed << 13;
      seed ^= seed >>> 17;
      seed ^= seed << 5;
      return (seed >>> 0) % n;
    };
    const fx = makeHub();
    const clients = [
      subscribed(fx, IMU, 50),
      subscribed(fx, IMU, 50, Priority.background),
      subscribed(fx, IMU, 50, Priority.elevated, true),
      subscribed(fx, JOINT_STATES, 50, Priority.background),
      subscribed(fx, PATH, 25),
      subscribed(fx, SCAN, 10),
    ];
    for (const c of clients) c.take();
    const channels = [IMU, JOINT_STATES, PATH, SCAN];
    const lastSeq: Record<number, number> = { [IMU]: 0, [JOINT_STATES]: 0, [PATH]: 0, [SCAN]: 0 };
    let delivered = 0;
    for (let step = runs(4000, 600); step > 0; step--) {
      const c = clients[rnd(clients.length)]!;
      const what = rnd(10);
      if (what === 0) c.link.lvl = rnd(3);
      else if (what === 1) c.link.capacity = rnd(3) === 0 ? 0 : 1 << 20;
      else if (what === 2) {
        fx.clock.advance(rnd(50));
        fx.hub.tick();
        for (const x of clients) {
          const late = (x.take(FrameType.DATA) as DataFrame[]).filter((f) => f.channelId !== SAFETY && f.channelId !== 2);
          deepEqual(late, [], 'tick() sent a sample');
        }
      } else {
        const ch = channels[rnd(channels.length)]!;
        push(fx, ch, rnd(8), rnd(3));
        lastSeq[ch] = (lastSeq[ch] as number) + 1;
        for (const x of clients) {
          for (const f of x.take(FrameType.DATA) as DataFrame[]) {
            equal(f.channelId, ch, 'a frame of another channel left during this push');
            equal(f.seq, lastSeq[ch], 'an older sample left late');
            delivered++;
          }
        }
      }
    }
    ok(delivered > 50, `only ${delivered} deliveries: the run did not exercise much`);
  });
});
