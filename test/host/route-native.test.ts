// A push's common route in C (device/native/route.h, which the device hands the hub through
// device/route-native.ts as HubPorts.sampleRouter) against the hub's own route in script
// (hub/egress.ts Egress.publishSample): the same C built for this host
// (bench/native/native-host.c) and the script route each take one push through the same
// subscription table and the same model of the sessions (a link or none, its level, its
// never-shed queue, what its send and the hub's rarer turn answer), and must leave the table byte
// for byte the same, count the same, hand the same sessions their frames and make the same calls
// in the same order; for random tables, pushes and sessions, gated streams and segments streams,
// conflated values or none. A copy of the C broken in its count of row 1 or in the grant's clock
// answers otherwise. Every check also runs the C built as a 32-bit program (-m32).
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Egress, type EgressHost } from '../../hub/egress.js';
import { dataPrefix } from '../../hub/fast-frames.js';
import { decodeFrame } from '../../hub/frames.js';
import type { HealthMetrics } from '../../hub/health.js';
import type { Link } from '../../hub/ports.js';
import { SubscriptionTable, type ChannelRoute, type Session } from '../../hub/session.js';
import { SEGMENTS_SHED_BASE } from '../../hub/shed.js';
import { buildBroken, useNativeHost } from '../lib/native-host.js';
import { credentialStore, RecordingRobot, SeededRandom, TestClient, VirtualClock } from '../lib/hub-fixture.js';
import { TestLink } from '../lib/test-link.js';
import { Hub } from '../../hub/hub.js';
import { FrameType } from '../../hub/frames.js';
import { loadCatalog } from '../../catalog/index.js';
import { DEFAULT_CATALOG } from '../../catalog/default.js';
import { NativeSampleRouterStandIn, type DeviceWorld } from '../../bench/device.bench.js';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex');

/** One slot's session as the model has it. */
interface SlotModel {
  link: boolean;
  level: number;
  neverShedEmpty: boolean;
  sendTakes: boolean;
  turnDelivers: boolean;
}

interface Case {
  routes: number;
  slots: number;
  fields: number;
  route: number;
  segments: boolean;
  conflated: boolean;
  subscribers: number[];
  granted: number[];
  due: number[];
  sourceDropped: number[];
  firstPush: number[];
  decimation: number[];
  lastValues: number[];
  values: number[];
  now: number;
  model: SlotModel[];
}

function tableOf(c: Case): SubscriptionTable {
  const tab = new SubscriptionTable(c.routes, c.slots, c.conflated ? c.fields : 0);
  const first = c.route * c.slots;
  tab.subscriberCount[c.route] = c.subscribers.length;
  c.subscribers.forEach((slot, i) => (tab.subscribers[first + i] = slot));
  for (let slot = 0; slot < c.slots; slot++) {
    const k = first + slot;
    tab.grantedHz[k] = c.granted[slot] as number;
    tab.nextDue[k] = c.due[slot] as number;
    tab.sourceDropped[k] = c.sourceDropped[slot] as number;
    tab.firstPush[k] = c.firstPush[slot] as number;
    tab.decimation[2 * k] = c.decimation[slot] as number;
    tab.decimation[2 * k + 1] = 1;
  }
  c.lastValues.forEach((v, i) => (tab.lastValues[i] = v));
  return tab;
}

function request(c: Case): string {
  const tab = tableOf(c);
  const first = c.route * c.slots;
  const model = new Uint8Array(5 * c.slots);
  c.model.forEach((m, i) => model.set([m.link ? 1 : 0, m.level, m.neverShedEmpty ? 1 : 0, m.sendTakes ? 1 : 0, m.turnDelivers ? 1 : 0], 5 * i));
  const values = new Uint8Array(Float64Array.from(c.values).buffer);
  return `route ${first} ${c.subscribers.length} ${c.now} ${c.segments ? 0 : 1} ${c.conflated ? 0 : -1} ${c.fields} ${c.values.length} ${Array.from(tab.layout).join(',')} ${hex(new Uint8Array(tab.grantedHz.buffer))} ${c.values.length ? hex(values) : '-'} ${hex(model)}`;
}

const caseArb: fc.Arbitrary<Case> = fc
  .record({
    routes: fc.integer({ min: 1, max: 4 }),
    slots: fc.integer({ min: 1, max: 12 }),
    fields: fc.integer({ min: 1, max: 8 }),
    segments: fc.boolean(),
    conflated: fc.boolean(),
    now: fc.integer({ min: 0, max: 100000 }),
  })
  .chain((b) =>
    fc.record({
      routes: fc.constant(b.routes),
      slots: fc.constant(b.slots),
      fields: fc.constant(b.fields),
      route: fc.integer({ min: 0, max: b.routes - 1 }),
      segments: fc.constant(b.segments),
      conflated: fc.constant(b.conflated),
      now: fc.constant(b.now),
      subscribers: fc.uniqueArray(fc.integer({ min: 0, max: b.slots - 1 }), { maxLength: b.slots }),
      granted: fc.array(fc.constantFrom(0, 0.5, 10, 50, 200, 1000), { minLength: b.slots, maxLength: b.slots }),
      due: fc.array(fc.oneof(fc.integer({ min: b.now - 3000, max: b.now + 200 }), fc.constant(b.now)), { minLength: b.slots, maxLength: b.slots }),
      sourceDropped: fc.array(fc.constantFrom(0, 0, 0, 1), { minLength: b.slots, maxLength: b.slots }),
      firstPush: fc.array(fc.constantFrom(0, 1), { minLength: b.slots, maxLength: b.slots }),
      decimation: fc.array(fc.constantFrom(1, 1, 2, 4), { minLength: b.slots, maxLength: b.slots }),
      lastValues: fc.array(fc.double({ noNaN: true }), { minLength: b.conflated ? b.fields * b.slots : 0, maxLength: b.conflated ? b.fields * b.slots : 0 }),
      values: fc.array(fc.double(), { minLength: 0, maxLength: b.fields }),
      model: fc.array(
        fc.record({
          link: fc.constantFrom(true, true, true, false),
          level: fc.constantFrom(0, 0, 0, 1, 2),
          neverShedEmpty: fc.constantFrom(true, true, true, false),
          sendTakes: fc.constantFrom(true, true, true, false),
          turnDelivers: fc.boolean(),
        }),
        { minLength: b.slots, maxLength: b.slots },
      ),
    }),
  );

describe('device/native/route: a push’s common route in C against the hub’s in script', function () {
  this.timeout(120000);
  const native = useNativeHost(repo, 'route');

  it('leaves the table, the counts, the frames handed and the calls as the script route does, for random pushes', () => {
    const cases = fc.sample(caseArb, { numRuns: 600, seed: 20261203 });
    const answers = native.check(cases.map(request));
    cases.forEach((c, i) => assert.equal(answers[i], scriptLogged(c), `case ${i}: ${JSON.stringify(c)}`));
    // The cases reach every turn of the route: gated and not, sends taken and refused, turns, conflation.
    const all = answers.join(' ');
    for (const mark of [' S', ' T', ' L']) assert.ok(all.includes(mark), `some case logs ${mark.trim()}`);
  });

  it('counts the push’s sequence and the values it carries as the script route does', () => {
    // The script's: what a push through the script route leaves in route.seq, and the values of the DATA frame it sends.
    const script = (seq: number, fields: number, count: number, length: number): string => {
      const c = { routes: 1, slots: 1, fields, route: 0, segments: false, conflated: false, subscribers: [0], granted: [1000], due: [0], sourceDropped: [0], firstPush: [0], decimation: [1], lastValues: [], values: [], now: 5, model: [] } as Case;
      const tab = tableOf(c);
      let sent: Uint8Array | null = null;
      const link = { level: 0, send: (f: Uint8Array): boolean => ((sent = f.slice()), true) };
      const sessions = [{ link, neverShed: { size: 0 }, sentFrames: 0 }];
      const e = new Egress({ now: () => 5 }, tab, sessions as unknown as Session[], {} as HealthMetrics, { overflowed: () => undefined, due: () => undefined }, fields, 256, 512);
      const route = { ch: { id: 10, fieldCount: fields, critical: false }, index: 0, seq, lastAt: -1, events: null, tag: 0, shedBase: 0, prefix: dataPrefix(10) } as unknown as ChannelRoute;
      e.publishSample(route, 1, new Float64Array(length).fill(0.5), count);
      const bytes = sent as unknown as Uint8Array;
      const frame = decodeFrame(bytes, 0, bytes.length);
      return `${route.seq} ${(frame as { values: number[] }).values.length}`;
    };
    const cases: [number, number, number, number][] = [];
    for (const seq of [0, 1, 41, 0xfffffffe, 0xffffffff]) cases.push([seq, 6, 6, 6]);
    for (const count of [NaN, Infinity, -Infinity, -1, -0.5, 0, 0.5, 1, 2.7, 3, 5.999, 6, 7, 100]) for (const length of [0, 2, 6, 8]) for (const fields of [1, 6]) cases.push([3, fields, count, length]);
    const lines = cases.flatMap(([seq, fields, count, length]) => [`seq ${seq}`, `count ${fields} ${count} ${length}`]);
    const answers = native.check(lines);
    cases.forEach(([seq, fields, count, length], i) => assert.equal(`${answers[2 * i]} ${answers[2 * i + 1]}`, script(seq, fields, count, length), `seq ${seq}, fields ${fields}, count ${count}, length ${length}`));
  });

  it('a copy of the C that counts row 1 twice, or gives the grant’s clock no credit, answers otherwise', () => {
    const cases = fc.sample(caseArb, { numRuns: 300, seed: 7 });
    const lines = cases.map(request);
    for (const [from, to] of [
      ['tallies[1]++;', 'tallies[1] += 2;'],
      ['t.nextDue[k] = due < p->now - g ? p->now + g : due;', 't.nextDue[k] = p->now + g;'],
    ] as const) {
      const broken = buildBroken(native.host, repo, native.scratch, 'route.h', from, to);
      const answers = native.host.nativeCheck(broken, lines);
      assert.ok(
        cases.some((c, i) => answers[i] !== scriptLogged(c)),
        `the copy with ${to} differs from the script somewhere`,
      );
    }
  });
});

/** script(c) with the links' and the turn's calls logged into one sequence, in the order they were made. */
function scriptLogged(c: Case): string {
  const tab = tableOf(c);
  const calls: string[] = [];
  const sessions = c.model.map((m, slot) => {
    const link = {
      get level(): number {
        calls.push(`L${slot}.0.0 `);
        return m.level;
      },
      send(): boolean {
        calls.push(`S${slot}.0.0 `);
        return m.sendTakes;
      },
    };
    return { link: m.link ? link : null, neverShed: { size: m.neverShedEmpty ? 0 : 1 }, sentFrames: 0 };
  });
  const host: EgressHost = { overflowed: () => undefined, due: () => undefined };
  const e = new (class extends Egress {
    override turn(_route: ChannelRoute, _s: Session, _link: Link, k: number, slot: number, level: number): boolean {
      calls.push(`T${k}.${slot}.${level} `);
      return (c.model[slot] as SlotModel).turnDelivers;
    }
  })({ now: () => c.now }, tab, sessions as unknown as Session[], {} as HealthMetrics, host, c.fields, 256, 512);
  const route = {
    ch: { id: 10, fieldCount: c.fields, critical: false },
    index: c.route,
    seq: 7,
    lastAt: c.conflated ? 0 : -1,
    events: null,
    tag: 0,
    shedBase: c.segments ? SEGMENTS_SHED_BASE : 0,
    prefix: dataPrefix(10),
  } as unknown as ChannelRoute;
  e.publishSample(route, 1000, Float64Array.from(c.values), c.values.length);
  const k = e.counters;
  const log = calls.join('');
  return `${k.delivered} ${k.rateGated} ${k.rows[1]} ${k.egressDrops} ${sessions.map((s) => s.sentFrames).join(',')} ${hex(new Uint8Array(tab.grantedHz.buffer))} ${log === '' ? '-' : log}`;
}

describe('the device\u2019s route as the device budget counts it (bench/device.bench.ts NativeSampleRouterStandIn)', () => {
  /**
   * What every client of a hub receives from pushes of the robot's streams, with links that
   * congest and refuse: the hub routing in script, or through the bench's model of
   * device/native/route.c (route.h's steps in script, its calls and reads as the C makes them).
   */
  function run(router: boolean): { received: string[][]; counters: string } {
    const catalog = loadCatalog(DEFAULT_CATALOG);
    const clock = new VirtualClock();
    const world = { pause: () => undefined, resume: () => undefined, discount: () => undefined, nativeData: null } as unknown as DeviceWorld;
    const hub = new Hub(
      { clock, random: new SeededRandom(7), store: credentialStore(), robot: new RecordingRobot(), catalog, sampleRouter: router ? new NativeSampleRouterStandIn(world) : undefined },
      { livenessTimeoutMs: Infinity },
    );
    const names = ['imu', 'odom', 'joint_states', 'scan', 'battery', 'safety', 'path'].filter((n) => catalog.byName(n));
    const chans = names.map((n) => catalog.byName(n)!);
    const clients = [1000, 50, 10, 1000].map((hz, i) => {
      const c = new TestClient(hub, new TestLink());
      c.send({ type: FrameType.HELLO, version: 1, name: `c${i}`, subWishes: chans.map((ch) => ({ channelId: ch.id, wishedRateHz: hz })) });
      c.take(FrameType.WELCOME);
      return c;
    });
    // The last client's link holds little once its session is open: a send it has no room for is refused.
    (clients[3] as TestClient).link.capacity = 400;
    const values = new Float64Array(20);
    for (let i = 0; i < 400; i++) {
      clock.advance(5);
      // Levels that change (the table's rows 2 and above on the rarer turns), a link that fills and refuses.
      (clients[1] as TestClient).link.level = (i >> 5) % 3;
      (clients[2] as TestClient).link.level = i % 7 === 0 ? 1 : 0;
      if (i % 13 === 0) (clients[3] as TestClient).link.drain();
      const ch = chans[i % chans.length]!;
      for (let k = 0; k < values.length; k++) values[k] = i % 11 === 0 ? 0.5 : Math.fround(0.25 + 0.001 * ((i * 7 + k) % 97));
      hub.publishSample(ch.id, clock.now(), values, ch.fieldCount);
    }
    const received = clients.map((c) => {
      c.link.drain();
      return c.link.received.map((w) => Buffer.from(w.bytes).toString('hex'));
    });
    const k = hub.egress.counters;
    return { received, counters: JSON.stringify({ delivered: k.delivered, rateGated: k.rateGated, drops: k.egressDrops, rows: Array.from(k.rows), shed: k.shedDrops, dec: k.decimated, conf: k.conflated }) };
  }

  it('gives every client the same frames, in the same order, and the hub the same counts', () => {
    const script = run(false);
    const device = run(true);
    assert.ok(script.received.every((r) => r.length > 10), `every client receives frames: ${script.received.map((r) => r.length)}`);
    assert.ok(JSON.parse(script.counters).drops > 0 && JSON.parse(script.counters).rows.slice(2).some((x: number) => x > 0), `some sends are refused and some rows above 1 are taken: ${script.counters}`);
    assert.deepEqual(device.received, script.received);
    assert.equal(device.counters, script.counters);
  });
});
