// What the hub keeps in memory, by structure (docs/architecture.md "Memory"): a subscription is
// a row of a table sized at setup, not an object; the state a STATE or EVENT subscription needs
// is made with the table or shared by the channel; everything a session holds is
// bounded by the config and the catalog. Sizes are asserted, never timings; the bytes themselves
// are measured by `npm run bench` (memory.sessions) on the XS engine.
import fc from 'fast-check';
import { loadCatalog } from '../../catalog/index.js';
import { DEFAULT_CATALOG } from '../../catalog/default.js';
import { ChannelClass, Direction } from '../../catalog/schema.js';
import { CborWriter } from '../../hub/cbor.js';
import { MALFORMED_CLOSE_PER_S } from '../../hub/constants.js';
import { dataPrefix } from '../../hub/fast-frames.js';
import { encodeData, FrameType, MAX_HUB_FRAME_BYTES } from '../../hub/frames.js';
import { EVENT_READER_SLOTS, EventQueue, EventRing, FrameRing } from '../../hub/queues.js';
import { ChannelRoute, makeRoutes, SubscriptionTable } from '../../hub/session.js';
import { decimate, DECIMATION_STATE, Decimator, resetDecimation } from '../../hub/shed.js';
import { deepEqual, equal, ok, throws } from '../lib/assert.js';
import { runs } from '../lib/env.js';
import { makeHub, TestClient } from '../lib/hub-fixture.js';

const IMU = 10;
const JOINT_STATES = 12;
const BATTERY = 13;
const LOG = 20;

const catalog = loadCatalog(DEFAULT_CATALOG);
const subscribable = catalog.channels.filter((c) => c.direction === Direction.telemetry && c.cls !== ChannelClass.INTENT);
const stateChannels = subscribable.filter((c) => c.cls === ChannelClass.STATE);
const eventChannels = subscribable.filter((c) => c.cls === ChannelClass.EVENT);
const allWishes = subscribable.map((c) => ({ channelId: c.id, wishedRateHz: c.maxRateHz }));

describe('hub memory: a channel route holds only what its class needs', () => {
  it('a STREAM channel keeps no values last sent and no event queue', () => {
    const r = new ChannelRoute(catalog.byId(IMU)!, 0, 8);
    equal(r.lastAt, -1);
    equal(r.events, null);
  });

  it('a STATE channel keeps its values last sent in the table: one block per session slot, made with the table', () => {
    const { routes, table } = makeRoutes(catalog.channels, 8);
    const states = routes.filter((r) => r.lastAt >= 0);
    deepEqual(
      states.map((r) => r.ch.id),
      stateChannels.map((c) => c.id),
    );
    equal(table.lastValues.length, stateChannels.reduce((n, c) => n + c.fieldCount, 0) * 8);
    // The blocks tile lastValues: every (channel, slot) has its own fields, none overlaps another.
    const owner = new Array<number>(table.lastValues.length).fill(-1);
    for (const r of states) {
      for (let slot = 0; slot < 8; slot++) {
        for (let j = 0; j < r.ch.fieldCount; j++) {
          const at = r.lastAt + slot * r.ch.fieldCount + j;
          equal(owner[at], -1, `${r.ch.name} slot ${slot} field ${j}`);
          owner[at] = r.index;
        }
      }
    }
    ok(owner.every((o) => o >= 0));
  });

  it('an EVENT channel keeps one queue of its queue depth for all its subscribers', () => {
    const ch = catalog.byId(LOG)!;
    const r = new ChannelRoute(ch, 0, 8);
    equal(r.lastAt, -1);
    ok(r.events);
    equal(r.events.capacity, ch.queueDepth);
  });

  it('every route’s DATA prefix is its own bytes of one shared buffer', () => {
    const { routes } = makeRoutes(catalog.channels, 2);
    equal(routes.length, subscribable.length);
    const buffer = (routes[0] as ChannelRoute).prefix.buffer;
    for (const r of routes) {
      equal(r.prefix.buffer, buffer);
      deepEqual(Array.from(r.prefix), Array.from(dataPrefix(r.ch.id)));
    }
  });
});

describe('hub memory: the subscription table', () => {
  it('is sized once, routes × slots, and adding or removing never grows it', () => {
    const t = new SubscriptionTable(5, 3);
    const columns = [t.wishHz, t.grantedHz, t.nextDue, t.priority, t.firstPush, t.sourceDropped, t.lastLen, t.subscribers, t.subscribed];
    equal(t.lastValues.length, 0, 'no STATE fields: no values');
    for (const c of columns) equal(c.length, 15);
    equal(t.decimation.length, 15 * DECIMATION_STATE);
    for (let round = 0; round < 3; round++) {
      for (let r = 0; r < 5; r++) for (let s = 0; s < 3; s++) t.add(r, s, 10, 1);
      for (let r = 0; r < 5; r++) for (let s = 0; s < 3; s++) t.remove(r, s);
    }
    for (const c of columns) equal(c.length, 15);
    deepEqual(Array.from(t.subscriberCount), [0, 0, 0, 0, 0]);
    deepEqual(Array.from(t.routeCount), [0, 0, 0]);
  });

  it('keeps a channel’s subscribers and a session’s channels in subscription order, through removals', () => {
    const t = new SubscriptionTable(4, 4);
    t.add(2, 1, 5, 0);
    t.add(0, 1, 5, 0);
    t.add(2, 3, 5, 0);
    t.add(3, 1, 5, 0);
    t.add(2, 0, 5, 0);
    const subscribersOf = (r: number) => Array.from(t.subscribers.subarray(r * 4, r * 4 + t.subscriberCount[r]!));
    const routesOf = (s: number) => Array.from({ length: t.routeCount[s]! }, (_, i) => t.routeOf(s, i));
    deepEqual(subscribersOf(2), [1, 3, 0]);
    deepEqual(routesOf(1), [2, 0, 3]);
    t.remove(2, 3);
    t.remove(0, 1);
    deepEqual(subscribersOf(2), [1, 0]);
    deepEqual(routesOf(1), [2, 3]);
    ok(t.has(2, 0) && !t.has(2, 3) && !t.has(0, 1));
    t.remove(0, 1); // not subscribed: nothing changes
    deepEqual(routesOf(1), [2, 3]);
  });

  it('starts a new subscription with nothing granted and its first push owed (§9.1)', () => {
    const t = new SubscriptionTable(2, 2);
    const k = t.row(1, 1);
    t.grantedHz[k] = 30;
    t.firstPush[k] = 0;
    t.lastLen[k] = 4;
    t.decimation[k * DECIMATION_STATE] = 4;
    equal(t.add(1, 1, 20, 2), k);
    equal(t.grantedHz[k], 0);
    equal(t.firstPush[k], 1);
    equal(t.lastLen[k], -1);
    equal(t.decimation[k * DECIMATION_STATE], 1);
    equal(t.wishHz[k], 20);
    equal(t.priority[k], 2);
  });

  it('refuses a slot count it cannot index', () => {
    throws(() => new SubscriptionTable(1, 0), (e) => e instanceof RangeError);
    throws(() => new SubscriptionTable(1, 0x10000), (e) => e instanceof RangeError);
  });
});

describe('hub memory: decimation state in a table row', () => {
  it('decimates exactly as a Decimator does, for the factors the table uses (1, 2, 4) and resets', () => {
    fc.assert(
      fc.property(fc.array(fc.constantFrom(1, 2, 4, 0), { maxLength: 60 }), (ops) => {
        const d = new Decimator();
        const row = new Uint8Array(3 * DECIMATION_STATE);
        const at = 2 * DECIMATION_STATE;
        resetDecimation(row, at);
        for (const n of ops) {
          if (n === 0) {
            d.reset();
            resetDecimation(row, at);
          } else if (d.admit(n) !== decimate(row, at, n)) return false;
        }
        // The neighbouring rows are untouched.
        return row[0] === 0 && row[1] === 0 && row[2] === 0 && row[3] === 0;
      }),
      { numRuns: runs(300, 40) },
    );
  });
});

describe('hub memory: one EVENT ring per channel, one cursor per reader (§9.4)', () => {
  // The model: what the hub had before, an EventQueue per (subscriber, channel) and the count of
  // events lost since the last delivery.
  interface Model {
    q: EventQueue<number> | null;
    lost: number;
  }

  it('property: each reader sees exactly what its own drop-oldest queue would give it', () => {
    type Op = { op: 'push' } | { op: 'shift' | 'drop' | 'join' | 'leave' | 'peek'; reader: number };
    const op: fc.Arbitrary<Op> = fc.oneof(
      fc.constant({ op: 'push' } as Op),
      fc.record({ op: fc.constantFrom('shift', 'drop', 'join', 'leave', 'peek'), reader: fc.integer({ min: 0, max: 2 }) }) as fc.Arbitrary<Op>,
    );
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 5 }), fc.array(op, { maxLength: 120 }), (cap, ops) => {
        // The ring keeps its readers' numbers between two other rings' in one store, as the hub's do.
        const store = new Float64Array(3 * 3 * EVENT_READER_SLOTS);
        const before = new EventRing<number>(cap, 3, store, 0);
        const ring = new EventRing<number>(cap, 3, store, 3 * EVENT_READER_SLOTS);
        const after = new EventRing<number>(cap, 3, store, 6 * EVENT_READER_SLOTS);
        before.join(1);
        after.join(2);
        after.push(-1);
        const model: Model[] = [0, 1, 2].map(() => ({ q: null, lost: 0 }));
        let next = 0;
        for (const o of ops) {
          if (o.op === 'push') {
            const v = next++;
            ring.push(v);
            for (const m of model) if (m.q) m.q.push(v);
            continue;
          }
          const m = model[o.reader] as Model;
          if (o.op === 'join') {
            ring.join(o.reader);
            m.q = new EventQueue<number>(cap);
            m.lost = 0;
          } else if (o.op === 'leave') {
            ring.leave(o.reader);
            m.q = null;
            m.lost = 0;
          } else if (m.q) {
            m.lost += m.q.takeDropped();
            if (ring.dropped(o.reader) !== m.lost) return false;
            if (ring.peek(o.reader) !== m.q.peek()) return false;
            if (o.op === 'shift' && m.q.peek() !== undefined) {
              m.q.shift();
              m.lost = 0;
              ring.shift(o.reader);
            } else if (o.op === 'drop' && m.q.peek() !== undefined) {
              m.q.shift();
              m.lost++;
              ring.drop(o.reader);
            }
          } else if (ring.peek(o.reader) !== undefined || ring.size(o.reader) !== 0) return false;
          // Nothing a reader still needs is released, and nothing more is held.
          let longest = 0;
          for (let r = 0; r < 3; r++) {
            const q = (model[r] as Model).q;
            if (q && q.size > longest) longest = q.size;
            if ((q ? q.size : 0) !== ring.size(r)) return false;
          }
          if (ring.held !== longest) return false;
        }
        // Its neighbours are as they were.
        return before.reading(1) && !before.reading(0) && before.size(1) === 0 && after.reading(2) && !after.reading(1) && after.size(2) === 1 && after.dropped(2) === 0;
      }),
      { numRuns: runs(500, 60) },
    );
  });

  it('releases an event once every reader has it, and keeps nothing with no reader', () => {
    const ring = new EventRing<{ n: number }>(4, 2);
    ring.push({ n: 0 });
    equal(ring.held, 0, 'nobody reads: nothing kept');
    ring.join(0);
    ring.join(1);
    ring.push({ n: 1 });
    ring.push({ n: 2 });
    ring.shift(0);
    ring.shift(0);
    equal(ring.held, 2, 'reader 1 has not had them');
    ring.drop(1);
    equal(ring.held, 1);
    equal(ring.peek(1)?.n, 2);
    ring.leave(1);
    equal(ring.held, 0);
  });

  it('rejects a capacity or a reader count below 1', () => {
    throws(() => new EventRing<number>(0, 1), (e) => e instanceof RangeError);
    throws(() => new EventRing<number>(1, 0), (e) => e instanceof RangeError);
    throws(() => new EventRing<number>(1, 2, new Float64Array(2 * EVENT_READER_SLOTS), 1), (e) => e instanceof RangeError);
  });
});

describe('hub memory: the never-shed queue keeps lengths only', () => {
  it('holds a frame longer than 16 bits can count in a ring above 64 KiB', () => {
    const r = new FrameRing(100_000, 4);
    const f = new Uint8Array(70_000);
    f[69_999] = 7;
    ok(r.push(f, 70_000));
    equal(r.headLength, 70_000);
    equal(r.capacityBytes, 100_000);
    equal(r.maxFrames, 4);
  });
});

describe('hub memory: what the hub holds is fixed by its config and catalog', () => {
  it('idle: one route per subscribable channel, routes × slots rows, nothing made per session yet', () => {
    const fx = makeHub({ slots: 3 });
    const fp = fx.hub.footprint();
    equal(fp.routes, subscribable.length);
    equal(fp.subscriptionRows, subscribable.length * 3);
    equal(fp.subscriptions, 0);
    equal(fp.stateValueArrays, stateChannels.length * 3, 'the values last sent are made with the table');
    equal(fp.stateValueArraysMax, stateChannels.length * 3);
    equal(fp.eventRings, eventChannels.length);
    equal(fp.eventCapacity, eventChannels.reduce((n, c) => n + c.queueDepth, 0));
    equal(fp.neverShedBytes, 0);
  });

  it('sizes the push buffer to the largest DATA frame of the catalog, not to the largest hub frame', () => {
    const fp = makeHub().hub.footprint();
    const pushBuffer = fp.scratchBytes - MAX_HUB_FRAME_BYTES;
    ok(pushBuffer > 0 && pushBuffer < MAX_HUB_FRAME_BYTES / 8, `a push buffer of ${pushBuffer} bytes`);
    // The worst DATA frame of the catalog fits: most fields, every value a float64, the largest
    // channel id, seq and time, with gap and a drop count.
    const fields = Math.max(...subscribable.map((c) => c.fieldCount));
    const values = new Float64Array(fields).fill(0.1);
    const w = new CborWriter(new Uint8Array(pushBuffer));
    encodeData(w, 255, 0xffffffff, Number.MAX_SAFE_INTEGER, values, fields, true, 0xffffffff);
    ok(w.pos <= pushBuffer);
  });

  it('subscribing makes nothing: the values last sent of every (STATE channel, slot) are made with the table', () => {
    const fx = makeHub({ slots: 2 });
    const made = stateChannels.length * 2;
    const c = new TestClient(fx.hub);
    c.hello({ subWishes: [{ channelId: IMU, wishedRateHz: 50 }, { channelId: LOG, wishedRateHz: 10 }] });
    let fp = fx.hub.footprint();
    equal(fp.subscriptions, 2);
    equal(fp.stateValueArrays, made);
    c.send({ type: FrameType.SUBSCRIBE, wishes: [{ channelId: JOINT_STATES, wishedRateHz: 10 }] });
    equal(fx.hub.footprint().stateValueArrays, made);
    c.send({ type: FrameType.UNSUBSCRIBE, channels: [JOINT_STATES] });
    c.send({ type: FrameType.SUBSCRIBE, wishes: [{ channelId: JOINT_STATES, wishedRateHz: 10 }, { channelId: BATTERY, wishedRateHz: 1 }] });
    fp = fx.hub.footprint();
    equal(fp.subscriptions, 4);
    equal(fp.stateValueArrays, made);
    c.send({ type: FrameType.GOODBYE });
    const d = new TestClient(fx.hub);
    d.hello({ subWishes: [{ channelId: JOINT_STATES, wishedRateHz: 10 }] });
    fp = fx.hub.footprint();
    equal(fp.subscriptions, 1);
    equal(fp.stateValueArrays, made, 'the next session in the slot has the same block');
  });

  it('session churn stays within the bounds: open sessions × the never-shed bytes, STATE channels × slots', () => {
    const fx = makeHub({ slots: 4, neverShedBytes: 1000 });
    let seed = 12345;
    const rand = (n: number) => {
      seed = (seed * 1103515245 + 12345) >>> 0;
      return seed % n;
    };
    const open: TestClient[] = [];
    for (let round = 0; round < 40; round++) {
      if (open.length > 0 && (open.length === 4 || rand(2) === 0)) {
        const c = open.splice(rand(open.length), 1)[0] as TestClient;
        c.send({ type: FrameType.GOODBYE });
      } else {
        const c = new TestClient(fx.hub);
        c.hello({ subWishes: allWishes });
        open.push(c);
      }
      const fp = fx.hub.footprint();
      equal(fp.subscriptions, open.length * subscribable.length);
      equal(fp.neverShedBytes, open.length * 1000);
      ok(fp.stateValueArrays <= fp.stateValueArraysMax);
      equal(fp.subscriptionRows, subscribable.length * 4);
    }
    equal(fx.hub.footprint().stateValueArraysMax, stateChannels.length * 4);
  });

  it('the session a transport opens takes over its malformed-frame counter restarted: no count carries over HELLO (§12)', () => {
    const fx = makeHub();
    const c = new TestClient(fx.hub);
    for (let i = 0; i < MALFORMED_CLOSE_PER_S; i++) c.sendBytes(new Uint8Array([0xff]));
    ok(!c.link.closed);
    c.hello();
    for (let i = 0; i < MALFORMED_CLOSE_PER_S; i++) c.sendBytes(new Uint8Array([0xff]));
    ok(!c.link.closed, 'the session counts from its HELLO');
    c.sendBytes(new Uint8Array([0xff]));
    ok(c.link.closed);
  });
});
