// The deterministic simulator (host-sim/): replay, the scenario library with assertions on each
// report (docs/simulator.md "Invariant checks"), and scenario validation with paths.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadCatalog } from '../../catalog/index.js';
import { DEFAULT_CATALOG } from '../../catalog/default.js';
import { CborWriter } from '../../hub/cbor.js';
import { encodeData, encodeFrame, FrameType } from '../../hub/frames.js';
import { AckForm, Tag, tagOf, tagType, type Link } from '../../hub/ports.js';
import { Kernel, Prng } from '../../host-sim/kernel.js';
import { BLE_DEFAULTS, TCP_DEFAULTS } from '../../host-sim/links/index.js';
import { DataHead, LATE_EXAMPLES_PER_LINK, LinkTap, readDataHead } from '../../host-sim/links/tap.js';
import { INVARIANTS, reportJson, type Report } from '../../host-sim/report.js';
import { loadNamedScenario, scenarioNames, ScenarioError, validateScenario } from '../../host-sim/scenario.js';
import { Simulation } from '../../host-sim/sim.js';

const catalog = loadCatalog(DEFAULT_CATALOG);

interface Run {
  report: Report;
  json: string;
}

async function run(name: string, seed?: number): Promise<Run> {
  const sim = new Simulation(loadNamedScenario(name, catalog), seed === undefined ? {} : { seed });
  const report = await sim.run();
  return { report, json: reportJson(report) };
}

/** A scenario written in the test (validated like a file), run with its own seed. */
async function runInline(scenario: unknown): Promise<Run> {
  const sim = new Simulation(validateScenario(scenario, catalog));
  const report = await sim.run();
  return { report, json: reportJson(report) };
}

// The report as the test reads it (the canonical JSON, parsed back: rounded like the CLI's output).
type J = any; // eslint-disable-line @typescript-eslint/no-explicit-any
function parsed(r: Run): J {
  return JSON.parse(r.json);
}

function assertInvariants(r: J, name: string): void {
  for (const inv of INVARIANTS) {
    const v = r.invariants[inv];
    assert.equal(v.count, 0, `${name}: invariant ${inv} violated: ${JSON.stringify(v.examples)}`);
  }
  assert.equal(r.ok, true);
}

/** Every ESTOP delivery on a link without a fault came within its bound, and none was missed. */
function assertEstopsInBound(r: J, name: string): number {
  let checked = 0;
  for (const e of r.estops) {
    for (const d of e.deliveries) {
      if (d.impaired) continue;
      assert.notEqual(d.latencyMs, null, `${name}: ESTOP at ${e.latchMs} ms not received on ${d.link} (${d.outcome})`);
      assert.ok(d.latencyMs <= d.boundMs, `${name}: ESTOP at ${e.latchMs} ms took ${d.latencyMs} ms on ${d.link}, bound ${d.boundMs}`);
      checked++;
    }
  }
  return checked;
}

/** Clients whose every connection stayed at level 0, without a fault or a slow reader. */
function freshClients(r: J): string[] {
  const out: string[] = [];
  for (const [name, c] of Object.entries<J>(r.clients)) {
    const links = Object.values<J>(r.links).filter((l) => l.client === name);
    if (links.length !== 1) continue;
    const l = links[0];
    if (!l.attached || l.maxLevel !== 0 || l.faults.length > 0 || l.readerLimited) continue;
    if (c.states.some((x: { state: string }) => x.state !== 'connecting' && x.state !== 'active')) continue;
    out.push(name);
  }
  return out;
}

// A fresh sample's age: the link's own latency and framing, nothing queued behind congestion.
const FRESH_AGE_MS: Record<string, number> = { tcp: 20, ws: 20, ble: 120, espnow: 60 };

function assertFreshAges(r: J, name: string): number {
  let checked = 0;
  for (const client of freshClients(r)) {
    const c = r.clients[client];
    const binding = Object.values<J>(r.links).find((l) => l.client === client).binding as string;
    for (const [ch, s] of Object.entries<J>(c.subscriptions)) {
      if (s.age.count === 0) continue;
      const bound = FRESH_AGE_MS[binding] as number;
      assert.ok(s.age.p99 <= bound, `${name}: ${client} ${ch} p99 age ${s.age.p99} ms on a fresh ${binding} link (bound ${bound})`);
      checked++;
    }
  }
  return checked;
}

function levelsOf(r: J, link: string): number[] {
  return (r.links[link].levels as { tMs: number; level: number }[]).map((x) => x.level);
}

describe('simulator kernel', () => {
  it('orders events by time, then by the order they were scheduled, and cancels', () => {
    const k = new Kernel(1);
    const seen: number[] = [];
    const task = { run: (kind: number) => seen.push(kind) };
    k.at(300, task, 3);
    k.at(100, task, 1);
    const h = k.at(200, task, 99);
    k.at(100, task, 2);
    k.at(200, task, 4);
    assert.equal(k.cancel(h), true);
    assert.equal(k.cancel(h), false);
    assert.equal(k.runUntil(250), true);
    assert.deepEqual(seen, [1, 2, 4]);
    assert.equal(k.nowUs, 250);
    k.runUntil(1000);
    assert.deepEqual(seen, [1, 2, 4, 3]);
  });

  it('draws the same sequence from the same seed and another from another seed', () => {
    const a = new Prng(42);
    const b = new Prng(42);
    const c = new Prng(43);
    const xa = Array.from({ length: 8 }, () => a.u32());
    assert.deepEqual(Array.from({ length: 8 }, () => b.u32()), xa);
    assert.notDeepEqual(Array.from({ length: 8 }, () => c.u32()), xa);
    for (let i = 0; i < 1000; i++) {
      const f = a.float();
      assert.ok(f >= 0 && f < 1);
    }
  });
});

describe('simulator invariant checks (the tap)', () => {
  const sent: number[] = [];
  const inner: Link = {
    caps: Object.freeze({ binding: 'test', broadcast: false, datagram: false, mtu: 1024, writeAheadSlots: 4, ackForm: AckForm.STREAM }),
    level: 0,
    send: (f) => {
      sent.push(f.length);
      return true;
    },
    writeAhead: () => undefined,
    acked: () => undefined,
    granted: () => undefined,
    estimate: () => ({ throughputBps: 0, rttMs: 0 }),
    occupancy: () => 0,
    stalledMs: () => 0,
    ackLag: () => 0,
    lossRate: () => NaN,
    tierCeiling: () => 2,
    close: () => undefined,
  };
  const ctx = { estopBoundMs: () => 10, impairedNow: () => false, idleDeliveryMs: () => 5, judgeable: () => true };
  const w = new CborWriter(new Uint8Array(4608));
  const values = new Float64Array([1.5, -2, 0.1, 0, 0, 0]);
  function data(tap: LinkTap, name: string, seq: number, t: number, gap = false, dropped = 0): void {
    w.reset();
    const ch = catalog.byName(name)!;
    encodeData(w, ch.id, seq, t, values, ch.fieldCount, gap, dropped);
    tap.send(w.buf.subarray(0, w.pos), tagOf(FrameType.DATA, ch.critical ? Tag.CRITICAL : 0, ch.id), seq);
  }
  function tapAt(ms: number): { tap: LinkTap; kernel: Kernel } {
    const kernel = new Kernel(1);
    kernel.runUntil(ms * 1000);
    return { tap: new LinkTap(inner, kernel, catalog, 't#1', ctx), kernel };
  }
  const checks = (tap: LinkTap): string[] => tap.violations.map((v) => v.check);

  it('reads the head of DATA frames, events with text and dropped included', () => {
    const h = new DataHead();
    w.reset();
    encodeFrame({ type: 7, channelId: 20, seq: 70000, t: 123456, values: [2, 1001], dropped: 3, text: 'tick' }, w);
    assert.equal(readDataHead(w.buf, w.pos, h), true);
    assert.deepEqual([h.channelId, h.seq, h.t, h.gap, h.dropped], [20, 70000, 123456, false, 3]);
    w.reset();
    encodeData(w, 15, 9, 5, values, 6, true, 0);
    assert.equal(readDataHead(w.buf, w.pos, h), true);
    assert.deepEqual([h.channelId, h.seq, h.t, h.gap], [15, 9, 5, true]);
    w.reset();
    encodeFrame({ type: 14, t0: 1, t1: 2 }, w);
    assert.equal(readDataHead(w.buf, w.pos, h), false);
  });

  it('criticalShed: a skipped seq or a dropped count on a critical channel', () => {
    const { tap } = tapAt(100);
    data(tap, 'control-owner', 7, 100);
    data(tap, 'control-owner', 8, 100);
    assert.deepEqual(checks(tap), []);
    data(tap, 'control-owner', 10, 100);
    assert.deepEqual(checks(tap), ['criticalShed']);
  });

  it('segmentsDecimated: a skipped segment without gap; with gap it is a whole-source drop', () => {
    const { tap } = tapAt(100);
    data(tap, 'path', 1, 100);
    data(tap, 'path', 3, 100, true);
    assert.deepEqual(checks(tap), []);
    data(tap, 'path', 5, 100);
    assert.deepEqual(checks(tap), ['segmentsDecimated']);
    // Samples may skip: decimation and the grant thin them (§10.4).
    data(tap, 'imu', 1, 100);
    data(tap, 'imu', 9, 100);
    assert.deepEqual(checks(tap), ['segmentsDecimated']);
  });

  it('lateDelivery: a sample handed over after the millisecond it was produced', () => {
    const { tap } = tapAt(250);
    data(tap, 'imu', 1, 250);
    data(tap, 'safety', 1, 200); // critical: may have waited in the never-shed queue
    assert.deepEqual(checks(tap), []);
    data(tap, 'odom', 1, 249);
    assert.deepEqual(checks(tap), ['lateDelivery']);
  });

  it('eventLossInvisible: the events skipped must equal the dropped count carried', () => {
    const { tap } = tapAt(100);
    w.reset();
    const ev = (seq: number, dropped: number): void => {
      w.reset();
      encodeFrame({ type: 7, channelId: 20, seq, t: 90, values: [1, 2], ...(dropped > 0 ? { dropped } : {}) }, w);
      tap.send(w.buf.subarray(0, w.pos), tagOf(FrameType.DATA, 0, 20), seq);
    };
    ev(1, 0);
    ev(4, 2);
    assert.deepEqual(checks(tap), []);
    ev(7, 1);
    assert.deepEqual(checks(tap), ['eventLossInvisible']);
  });

  describe('sampleLate (judged at the client, against idle delivery + one link latency)', () => {
    const head = new DataHead();
    /** A tap whose link takes 5 ms idle and 10 ms of ESTOP bound: a sample's bound is 15 ms. */
    function lateTap(atMs: number, judged: () => boolean): { tap: LinkTap; kernel: Kernel } {
      const kernel = new Kernel(1);
      kernel.runUntil(atMs * 1000);
      return { tap: new LinkTap(inner, kernel, catalog, 't#1', { ...ctx, judgeable: judged }), kernel };
    }
    /** The client receives `name` seq/t now: what the connection does with a delivered DATA frame. */
    function receive(tap: LinkTap, name: string, seq: number, t: number): boolean {
      w.reset();
      encodeData(w, catalog.byName(name)!.id, seq, t, values, catalog.byName(name)!.fieldCount, false, 0);
      assert.equal(readDataHead(w.buf, w.pos, head), true);
      return tap.sampleReceived(head);
    }

    it('a judged sample older than its bound fires; one within it and an unjudged one do not', () => {
      let judged = true;
      const { tap, kernel } = lateTap(100, () => judged);
      data(tap, 'imu', 1, 100);
      data(tap, 'imu', 2, 100);
      data(tap, 'imu', 3, 100);
      kernel.runUntil(115_000);
      assert.equal(receive(tap, 'imu', 1, 100), true);
      assert.deepEqual(checks(tap), [], '15 ms old against a 15 ms bound');
      kernel.runUntil(115_001);
      receive(tap, 'imu', 2, 100);
      assert.deepEqual(checks(tap), ['sampleLate'], '15.001 ms old');
      assert.match(tap.violations[0]!.detail, /seq 2 .* age 15\.001 ms > bound 15\.000 ms \(idle 5\.000 \+ link latency 10\.000\)/);
      judged = false;
      kernel.runUntil(400_000);
      receive(tap, 'imu', 3, 100);
      assert.equal(tap.violations.length, 1, 'a fault, a loss or a slow reader in the window: counted, never judged');
      const l = tap.late;
      assert.deepEqual([l.samples, l.judged, l.over], [3, 2, 1]);
      assert.ok(Math.abs(l.worstMs - 0.001) < 1e-9);
      assert.equal(l.worstBoundMs, 15);
      assert.ok(Math.abs(l.ratio.percentile(0.95) - 15.001 / 15) < 1e-9);
    });

    it('only non-critical samples streams: STATE, segments, EVENTs and critical channels are not matched', () => {
      const { tap, kernel } = lateTap(100, () => true);
      data(tap, 'joint_states', 1, 100);
      data(tap, 'path', 1, 100);
      data(tap, 'control-owner', 1, 100);
      data(tap, 'odom', 1, 100);
      kernel.runUntil(900_000);
      assert.equal(receive(tap, 'joint_states', 1, 100), false);
      assert.equal(receive(tap, 'path', 1, 100), false);
      assert.equal(receive(tap, 'control-owner', 1, 100), false);
      assert.deepEqual(checks(tap), []);
      assert.equal(receive(tap, 'odom', 1, 100), true);
      assert.deepEqual(checks(tap), ['sampleLate']);
    });

    it('samples that never arrived are skipped; a frame the link never handed is not matched', () => {
      const { tap, kernel } = lateTap(100, () => true);
      for (let seq = 1; seq <= 40; seq++) data(tap, 'imu', seq, 100);
      kernel.runUntil(105_000);
      assert.equal(receive(tap, 'imu', 1000, 100), false, 'not handed on this link');
      assert.equal(receive(tap, 'imu', 7, 100), true, '1..6 lost on the medium or dropped by the binding');
      assert.equal(receive(tap, 'imu', 3, 100), false, 'already given up');
      assert.equal(receive(tap, 'imu', 40, 100), true);
      assert.deepEqual([tap.late.samples, tap.late.judged, tap.late.over], [2, 2, 0]);
    });

    it(`lists the first ${LATE_EXAMPLES_PER_LINK} violations of a link and counts every one`, () => {
      const { tap, kernel } = lateTap(100, () => true);
      for (let seq = 1; seq <= 10; seq++) data(tap, 'imu', seq, 100);
      kernel.runUntil(200_000);
      for (let seq = 1; seq <= 10; seq++) receive(tap, 'imu', seq, 100);
      assert.equal(tap.late.over, 10);
      assert.equal(tap.violations.length, LATE_EXAMPLES_PER_LINK);
      assert.deepEqual(
        tap.violations.map((v) => v.detail.split(' ')[1]),
        ['1', '2', '3'],
      );
    });
  });
});

describe('simulator: sampleLate end to end', function () {
  this.timeout(60000);
  const imu = catalog.byName('imu')!.id;
  function scenario(binding: string, events: unknown[] = []): unknown {
    return {
      name: 'late',
      durationMs: 4000,
      credentials: { 'operator-key': 'operator' },
      links: { l: { binding } },
      clients: [{ name: 'scope', role: 'scope', link: 'l', credential: 'operator-key', subscriptions: [{ channel: 'safety', rateHz: 10 }, { channel: 'imu', rateHz: 100 }] }],
      events,
    };
  }
  /**
   * Runs `doc` with a binding that holds every imu sample handed from `fromMs` on back by
   * `holdMs` before queueing it (the delay-and-burst the check exists to catch: the tap sees the
   * handoff on time, the client gets the sample late).
   */
  async function runHolding(doc: unknown, fromMs: number, holdMs: number): Promise<J> {
    const h = new DataHead();
    const sim: Simulation = new Simulation(validateScenario(doc, catalog), {
      hooks: {
        onTap: (tap) => {
          const link = tap.inner;
          const send = link.send.bind(link);
          link.send = (frame, tag, seq) => {
            if (sim.nowMs >= fromMs && tagType(tag) === FrameType.DATA && readDataHead(frame, frame.length, h) && h.channelId === imu) {
              const copy = frame.slice();
              sim.kernel.timeout(holdMs * 1000, () => void send(copy, tag, seq));
              return true;
            }
            return send(frame, tag, seq);
          };
        },
      },
    });
    return JSON.parse(reportJson(await sim.run()));
  }

  it('an honest binding on a clear link: every sample judged, none over, well inside the bound', async () => {
    const r = parsed(await runInline(scenario('tcp')));
    const l = r.links['scope#1'].sampleLate;
    assert.equal(r.invariants.sampleLate.count, 0);
    assert.ok(l.judged > 300, `judged ${l.judged}`);
    assert.equal(l.samples, l.judged);
    assert.equal(l.over, 0);
    assert.ok(l.worstMs < 0 && l.p95Ratio < 1, JSON.stringify(l));
    assert.equal(l.samples, r.clients.scope.subscriptions.imu.frames, 'every imu frame the client got was matched to its handoff');
  });

  for (const binding of ['tcp', 'ws', 'ble', 'espnow']) {
    it(`${binding}: a binding that holds samples back 200 ms fires on the held ones, counts them all and lists ${LATE_EXAMPLES_PER_LINK}`, async () => {
      const r = await runHolding(scenario(binding), 2000, 200);
      const l = r.links['scope#1'].sampleLate;
      const inv = r.invariants.sampleLate;
      assert.equal(r.ok, false);
      assert.equal(l.samples, l.judged, 'nothing else stood in the way');
      // 100 Hz: about 200 samples before the hold, about 180 held ones delivered before the end.
      assert.ok(l.over > 150 && l.judged - l.over > 150, `over ${l.over} of ${l.judged}: the samples from 2 s on`);
      assert.equal(inv.count, l.over);
      assert.equal(inv.examples.length, LATE_EXAMPLES_PER_LINK);
      for (const e of inv.examples) {
        assert.equal(e.link, 'scope#1');
        assert.equal(e.channel, 'imu');
        assert.ok(e.tMs >= 2200, `${e.tMs}: received at least 200 ms after the hold began`);
      }
      assert.ok(l.worstAgeMs >= 200 && l.worstAgeMs > l.worstBoundMs, JSON.stringify(l));
    });
  }

  it('the same held samples on a link that loses are counted, never judged', async () => {
    const r = await runHolding(scenario('tcp', [{ atMs: 1500, type: 'loss', client: 'scope', rate: 0.02 }]), 2000, 200);
    const l = r.links['scope#1'].sampleLate;
    assert.equal(r.invariants.sampleLate.count, 0);
    assert.equal(l.over, 0);
    assert.ok(l.judged > 0, 'the samples before the loss (and its settling second) are judged');
    assert.ok(l.samples - l.judged > 100, `${l.samples - l.judged} unjudged`);
    assert.ok(r.clients.scope.subscriptions.imu.age.max >= 200, 'they were late');
  });

  it('a BLE stall: the samples it holds up are counted and not judged; the check stays quiet', async () => {
    const r = parsed(await runInline(scenario('ble', [{ atMs: 2000, type: 'stall', client: 'scope', durationMs: 300 }])));
    const l = r.links['scope#1'].sampleLate;
    assert.deepEqual(r.links['scope#1'].faults, [{ fromMs: 2000, toMs: 2300 }]);
    assert.equal(r.invariants.sampleLate.count, 0);
    assert.ok(l.judged > 0);
    const age = r.clients.scope.subscriptions.imu.age;
    // Whatever the binding still delivers from the stall is older than any bound: not judged.
    if (age.max > l.worstBoundMs) assert.ok(l.samples > l.judged, `max age ${age.max} ms, all ${l.samples} judged`);
  });
});

describe('simulator: the ESTOP bound after a BLE fault heals', function () {
  this.timeout(60000);
  // A 7.5 ms BLE link, two notifications an event, a scope streaming at its wishes. While the
  // partition lasts, every event fails the notification in flight (SIM_STATUS_NO_BUFFERS) and the
  // binding hands it out again 20 ms after each failure (§13.4.4): the events fall at 1995 and
  // 2002.5 ms, so a partition to 2005 ms fails the last one at 2002.5 and its retry waits to
  // 2022.5 ms; one to 2000 ms failed its last at 1972.5 and was over by 1992.5 ms.
  async function pressAfterHeal(healMs: number, pressMs: number): Promise<J> {
    const r = parsed(
      await runInline({
        name: 'ble-heal',
        durationMs: 3000,
        credentials: { 'operator-key': 'operator' },
        links: { ble: { binding: 'ble', connIntervalMs: 7.5, perEvent: 2 } },
        clients: [{ name: 'scope', role: 'scope', link: 'ble', credential: 'operator-key' }],
        events: [
          { atMs: 1500, type: 'partition', client: 'scope', durationMs: healMs - 1500 },
          { atMs: pressMs, type: 'button', held: true },
        ],
      }),
    );
    assertInvariants(r, 'ble-heal');
    assert.deepEqual(r.links['scope#1'].faults, [{ fromMs: 1500, toMs: healMs }]);
    assert.equal(r.estops.length, 1);
    assert.equal(r.estops[0].latchMs, pressMs);
    assert.equal(r.estops[0].deliveries.length, 1);
    return r.estops[0].deliveries[0];
  }

  it('an ESTOP written while the notification the partition failed waits out its retry is held up by the fault: not judged', async () => {
    const d = await pressAfterHeal(2005, 2006);
    assert.equal(d.outcome, 'delivered');
    // It goes after the retry, handed out at the first event past 2022.5 ms and sent at the next.
    assert.ok(d.latencyMs > d.boundMs, `${d.latencyMs} ms: the pause stood in the way`);
    assert.equal(d.impaired, true);
    assert.equal(d.judged, false);
  });

  it('one written after the pause, or after a heal whose last failure was retried already, is judged and in bound', async () => {
    for (const [healMs, pressMs] of [
      [2005, 2023],
      [2000, 2003],
    ] as const) {
      const d = await pressAfterHeal(healMs, pressMs);
      assert.equal(d.impaired, false, `heal ${healMs}, press ${pressMs}`);
      assert.equal(d.judged, true, `heal ${healMs}, press ${pressMs}`);
      assert.ok(d.latencyMs <= d.boundMs, `heal ${healMs}, press ${pressMs}: ${d.latencyMs} ms > ${d.boundMs} ms`);
    }
  });
});

describe('simulator: the scenario library', function () {
  this.timeout(300000);

  it('holds the eleven named scenarios', () => {
    assert.deepEqual(scenarioNames(), [
      'calm',
      'congested-ble',
      'default',
      'estop-under-congestion',
      'flood',
      'join-storm',
      'lossy-espnow',
      'overload',
      'reconnect-ble-to-wifi',
      'replay',
      'slow-tcp-reader',
    ]);
  });

  let first: Run;
  it('default: the same scenario and seed give byte-identical JSON', async () => {
    first = await run('default');
    const second = await run('default');
    assert.equal(second.json, first.json);
    assert.match(first.json, /^\{\n {2}"clients": /);
  });

  it('default: another seed gives another report', async () => {
    const other = await run('default', 2);
    assert.notEqual(other.json, first.json);
    assert.equal(parsed(other).scenario.seed, 2);
  });

  it('default: eight clients through one minute, every invariant held, ESTOP in bound, fresh ages', () => {
    const r = parsed(first);
    assertInvariants(r, 'default');
    for (const name of ['console', 'joystick', 'planner', 'scope', 'logger', 'phone', 'pendant', 'tablet']) {
      const states = r.clients[name].states as { tMs: number; state: string }[];
      assert.equal(states[states.length - 1]?.state, 'active', `${name} ends active`);
    }
    // The button's ESTOP reached all eight clients.
    const button = r.estops.find((e: J) => e.source === 'hub-button');
    assert.ok(button, 'the button latched');
    assert.equal(button.deliveries.filter((d: J) => d.outcome === 'delivered').length, 8);
    assert.ok(assertEstopsInBound(r, 'default') >= 8);
    assert.equal(r.robot.stops, 1);
    assert.equal(r.robot.releases, 1);
    assert.ok(r.robot.cmdVelApplied > 0, 'the joystick drove');
    assert.ok(r.robot.segmentsAccepted > 0, 'the planner planned');
    // The scope moved from WebSocket to TCP and kept its session.
    assert.equal(r.clients.scope.sessions.length, 1);
    assert.ok(r.resumes.length >= 1);
    assert.ok(assertFreshAges(r, 'default') > 0);
  });

  it('calm: nothing congests and every fresh sample is young', async () => {
    const r = parsed(await run('calm'));
    assertInvariants(r, 'calm');
    assert.equal(r.hub.parks, 0);
    assert.equal(r.hub.shedDrops, 0);
    assert.ok(assertFreshAges(r, 'calm') >= 6);
    // §13.5.1: a healthy link whose queue merely cycles reads clear, on every binding.
    for (const link of Object.keys(r.links)) assert.deepEqual(levelsOf(r, link), [0], `${link} stays at level 0`);
  });

  it('congested-ble: levels 1 and 2, samples decimated, segments whole or dropped whole, grants cut', async () => {
    // Level 2 under plain overload at a realistic connection event (§13.5.1), not one notification per event.
    const ble = loadNamedScenario('congested-ble', catalog).links['slow-ble'] as { perEvent: number };
    assert.equal(ble.perEvent, BLE_DEFAULTS.perEvent);
    const r = parsed(await run('congested-ble'));
    assertInvariants(r, 'congested-ble');
    assert.ok(levelsOf(r, 'scope#1').includes(2), 'the slow BLE link reached level 2');
    assert.ok(r.hub.rows['14'] > 0, 'row 14 decimated normal samples at level 2');
    assert.ok(r.hub.rows['4'] + r.hub.rows['6'] > 0, 'rows 4-6 judged path segments under congestion');
    assert.ok(r.hub.decimated > 0);
    // The path the scope did receive is either consecutive or marked gap (the tap's check held).
    const imu = r.clients.scope.subscriptions.imu.grants as { tMs: number; session: number; grantedHz: number; priority: string }[];
    assert.ok(imu.some((g) => g.grantedHz < 200), 'the scope was re-granted below its wish');
    // The viewer on a separate BLE connection stays fresh in age despite sharing the profile.
    assert.ok(r.clients.viewer.subscriptions.odom.frames > 0);
  });

  it('lossy-espnow: the loss detector reaches level 2 and recovers after the air clears', async () => {
    const r = parsed(await run('lossy-espnow'));
    assertInvariants(r, 'lossy-espnow');
    for (const link of ['pendant#1', 'tablet#1']) {
      const lv = levelsOf(r, link);
      assert.ok(lv.includes(2), `${link} reached level 2`);
      assert.equal(lv[lv.length - 1], 0, `${link} recovered`);
    }
    assert.ok(assertEstopsInBound(r, 'lossy-espnow') >= 3);
  });

  it('lossy-espnow seed 3: a datagram resent for a lost MAC acknowledgement is taken once (§13.3.3)', async () => {
    // Seed 3 loses the acknowledgements of the pendant's HELLO and of its WELCOME (about 312 ms):
    // without de-duplication the pendant got WELCOME three times and the hub a second HELLO.
    const r = parsed(await run('lossy-espnow', 3));
    assertInvariants(r, 'lossy-espnow');
    assert.equal(r.hub.nacks.MALFORMED ?? 0, 0, 'no second HELLO reached the hub');
    for (const name of ['pendant', 'tablet']) {
      const c = r.clients[name];
      assert.equal(c.errors.BAD_FRAME ?? 0, 0, `${name}: no WELCOME outside a handshake`);
      assert.equal(c.library.badFrames, 0);
      assert.deepEqual(c.nacks, {}, `${name} was refused nothing`);
      assert.equal(c.sessions.length, 1);
    }
  });

  it('an ESP-NOW peer dropped as silent while its client still waits: the first NOT_READY resumes it on the same transport', async () => {
    // The binding gives a peer up after 3 s of silence (§13.3.6), the library after 5 s: a 4 s
    // partition heals in between, and the peer comes back as a new transport with no session.
    const r = parsed(
      await runInline({
        name: 'zombie',
        durationMs: 20000,
        links: { air: { binding: 'espnow' } },
        clients: [{ name: 'pendant', role: 'viewer', link: 'air', subscriptions: [{ channel: 'safety', rateHz: 10 }, { channel: 'odom', rateHz: 10 }] }],
        events: [{ atMs: 3000, type: 'partition', client: 'pendant', durationMs: 4000 }],
      }),
    );
    assertInvariants(r, 'zombie');
    const c = r.clients.pendant;
    assert.equal(r.stale.length, 1, 'the binding made the session STALE');
    assert.equal(c.library.resumes, 1, 'the client resumed');
    assert.equal(c.sessions.length, 1, 'the same session');
    assert.equal(c.connections.length, 1, 'on the same transport');
    assert.equal(r.resumes.length, 1);
    const resumedAt = r.resumes[0].tMs as number;
    assert.ok(resumedAt > 7000 && resumedAt < 9000, `resumed at ${resumedAt} ms, soon after the air healed at 7000`);
    assert.ok((c.nacks.NOT_READY ?? 0) <= 2, `NOT_READY ${c.nacks.NOT_READY}: answered at once, not ignored`);
    const states = (c.states as { tMs: number; state: string }[]).map((x) => x.state);
    assert.equal(states[states.length - 1], 'active');
    // 10 Hz odom for the 20 s less the partition and the 3 s before the binding let go.
    assert.ok(c.subscriptions.odom.frames > 140, `odom frames ${c.subscriptions.odom.frames}`);
  });

  it('a TCP overload on the device’s 6 KiB egress queue reaches level 2 (§13.5.1)', async () => {
    const thin = { bandwidthKbps: 64, queueBytes: 6144, latencyMs: 6, jitterMs: 2 };
    const subs = [
      { channel: 'safety', rateHz: 10 },
      { channel: 'imu', rateHz: 200, priority: 'elevated' },
      { channel: 'joint_states', rateHz: 50, priority: 'elevated' },
    ];
    const r = parsed(
      await runInline({
        name: 'tcp-overload',
        durationMs: 8000,
        credentials: { 'operator-key': 'operator' },
        links: { thin: { binding: 'tcp', ...thin }, 'thin-ws': { binding: 'ws', ...thin } },
        clients: [
          { name: 'console', role: 'console', link: 'thin', credential: 'operator-key', subscriptions: subs },
          { name: 'scope', role: 'scope', link: 'thin-ws', credential: 'operator-key', subscriptions: subs },
        ],
      }),
    );
    assertInvariants(r, 'tcp-overload');
    // One 1460-byte segment leaves 76 % of the queue after each pull; each pull finds it full.
    assert.ok(levelsOf(r, 'console#1').includes(2), `TCP levels ${JSON.stringify(r.links['console#1'].levels)}`);
    assert.ok(levelsOf(r, 'scope#1').includes(2), `WebSocket levels ${JSON.stringify(r.links['scope#1'].levels)}`);
  });

  it('slow-tcp-reader: the stuck reader is parked (STALE, not evicted) and resumes; the console is untouched', async () => {
    const r = parsed(await run('slow-tcp-reader'));
    assertInvariants(r, 'slow-tcp-reader');
    assert.ok(r.hub.parks >= 1, 'the stuck reader was parked');
    assert.ok(r.hub.resumes >= 1, 'and resumed');
    assert.equal(r.hub.nacks.SESSION_EVICTED ?? 0, 0, '§12.7: parking never evicts');
    assert.equal(r.clients['stuck-logger'].sessions.length, 1, 'the same session resumed');
    assert.ok(levelsOf(r, 'slow-logger#1').includes(1), 'the slow reader is congested by its watermark');
    assert.ok(freshClients(r).includes('console'));
    assertFreshAges(r, 'slow-tcp-reader');
  });

  it('estop-under-congestion: every link at level 2, the ESTOP reaches every client within bound', async () => {
    // Realistic links: a BLE event of four notifications, 1460-byte TCP segments (§13.5.1).
    const links = loadNamedScenario('estop-under-congestion', catalog).links as Record<string, { perEvent?: number; segmentBytes?: number }>;
    assert.equal(links['slow-ble']!.perEvent, BLE_DEFAULTS.perEvent);
    assert.equal(links['thin-wifi']!.segmentBytes, TCP_DEFAULTS.segmentBytes);
    const r = parsed(await run('estop-under-congestion'));
    assertInvariants(r, 'estop-under-congestion');
    assert.equal(r.estops.length, 2);
    for (const e of r.estops) {
      assert.equal(e.deliveries.length, 5, 'written to all five clients');
      for (const d of e.deliveries) {
        assert.equal(d.level, 2, `${d.link} was at level 2 when the ESTOP was written at ${e.latchMs}`);
        assert.equal(d.impaired, false);
        assert.equal(d.outcome, 'delivered');
        assert.ok(d.latencyMs <= d.boundMs, `${d.link}: ${d.latencyMs} ms > ${d.boundMs} ms`);
      }
    }
    assert.equal(r.estops[1].source, 'client');
    assert.ok(r.estops[1].causeToLatchMs < 100, 'the joystick’s ESTOP reached the hub over its congested BLE link');
    assert.equal(r.robot.stops, 2);
  });

  it('reconnect-ble-to-wifi: the session is resumed on another binding with its grants', async () => {
    const r = parsed(await run('reconnect-ble-to-wifi'));
    assertInvariants(r, 'reconnect-ble-to-wifi');
    for (const name of ['scope', 'viewer']) {
      const c = r.clients[name];
      assert.equal(c.sessions.length, 1, `${name} kept its session`);
      const bindings = c.connections.map((id: string) => r.links[id].binding);
      assert.deepEqual(bindings, ['ble', 'tcp']);
      assert.equal(c.library.resumes, 1);
    }
    assert.equal(r.hub.resumes, 2);
    const imu = r.clients.scope.subscriptions.imu;
    // WELCOME re-stated the grant after the resume (a second grant entry on the same session).
    assert.ok(imu.grants.length >= 2);
    assert.ok(r.links['scope#2'].dataFrames > 0, 'samples flow on the new binding');
  });

  it('overload: the ladder climbs and recovers, admission pauses and resumes, the newcomers get in', async () => {
    const r = parsed(await run('overload'));
    assertInvariants(r, 'overload');
    const ladder = r.hub.ladder as { tMs: number; rung: number; name: string }[];
    const rungs = ladder.map((x) => x.rung);
    assert.equal(ladder.find((x) => x.rung === 5)?.name, 'park_lowest');
    const top = Math.max(...rungs);
    assert.equal(top, 5, `the ladder reached its top rung (${JSON.stringify(ladder)})`);
    const up = rungs.slice(0, rungs.indexOf(top) + 1);
    assert.ok(up.length >= 3 && up.every((x, i) => i === 0 || x > (up[i - 1] as number)), `it climbed rung by rung: ${JSON.stringify(ladder)}`);
    const down = rungs.slice(rungs.indexOf(top));
    assert.deepEqual(down, [5, 4, 3, 2, 1, 0], 'it recovered one rung at a time, back to calm');
    const admission = r.hub.admission as { tMs: number; admitting: boolean }[];
    assert.deepEqual(admission.map((x) => x.admitting), [false, true], 'admission paused, then resumed');
    const [paused, resumed] = [admission[0]!.tMs, admission[1]!.tMs];
    assert.ok(r.hub.nacks.HUB_PRESSURE > 0, 'newcomers were refused HUB_PRESSURE while paused');
    const storm = Object.keys(r.clients).filter((n) => n.startsWith('storm'));
    assert.equal(storm.length, 3);
    for (const n of storm) assert.ok(r.clients[n].sessions.length > 0, `${n} got in once admission resumed`);
    assert.ok(r.hub.parks > 0, 'the top rung parked the lowest-priority session');
    assert.ok(paused < resumed && resumed > 25000, 'admission resumed only after the heap fell back');
    assert.equal(r.clients.console.sessions.length, 1, 'the console kept its session throughout');
  });

  it('join-storm: slots fill, NO_SLOTS is retried, a STALE session is reclaimed, the working clients carry on', async () => {
    const r = parsed(await run('join-storm'));
    assertInvariants(r, 'join-storm');
    assert.ok(r.hub.nacks.NO_SLOTS > 0);
    assert.equal(r.hub.reclaims, 1, 'the ghost’s STALE session was reclaimed');
    const secondWave = Object.keys(r.clients).filter((n) => n.startsWith('storm2-'));
    assert.equal(secondWave.length, 6);
    const admitted = secondWave.filter((n) => r.clients[n].sessions.length > 0);
    assert.ok(admitted.length >= 4, `the second wave got in once the first left (${admitted.length})`);
    assert.equal(r.hub.parks, 0);
    for (const n of ['console', 'scope', 'phone']) assert.ok(freshClients(r).includes(n), `${n} stayed fresh`);
    assertFreshAges(r, 'join-storm');
  });

  it('flood: bundles over the grant are dropped with at most 5 RATE_LIMITED a second, malformed frames close the session', async () => {
    const r = parsed(await run('flood'));
    assertInvariants(r, 'flood');
    assert.ok(r.robot.maxSegmentsPerS <= 25, `§10.5: at most burst 20 + rate 5 a second, got ${r.robot.maxSegmentsPerS}`);
    assert.ok(r.clients.planner.nacks.RATE_LIMITED > 0);
    assert.ok(r.clients.planner.nacks.RATE_LIMITED <= 5 * 6, 'throttled to 5 a second over the 5 s flood');
    assert.ok(r.clients.chatter.nacks.RATE_LIMITED <= 5 * 6);
    assert.ok(r.robot.intents <= 20 + 20 * 5 + 2, 'intents limited by their bucket');
    assert.equal(r.hub.log['malformed-close'], 1);
    assert.ok(r.closes.some((x: { reason: string }) => x.reason === 'misbehaving'), 'GOODBYE MISBEHAVING');
    for (const n of ['console', 'scope']) assert.ok(freshClients(r).includes(n), `${n} untouched`);
    assertFreshAges(r, 'flood');
  });
});

describe('simulator: scenario validation', () => {
  const base = {
    name: 'x',
    durationMs: 1000,
    links: { wifi: { binding: 'tcp' } },
    clients: [{ name: 'a', role: 'viewer', link: 'wifi' }],
  };

  it('accepts a minimal scenario and fills in the defaults', () => {
    const s = validateScenario(base, catalog);
    assert.equal(s.seed, 1);
    assert.equal(s.hub.slots, 8);
    assert.equal(s.clients[0]?.subscriptions.length, 4);
    assert.equal((s.links['wifi'] as { latencyMs: number }).latencyMs, 4);
  });

  it('reports every problem with its path and reason', () => {
    const bad = {
      ...base,
      durationMs: -5,
      links: { wifi: { binding: 'tcp', latencyMs: 'fast' }, radio: { binding: 'zigbee' } },
      clients: [
        { name: 'a', role: 'viewer', link: 'nope', subscriptions: [{ channel: 'imu', rateHz: 0 }, { channel: 'cmd_vel', rateHz: 10 }] },
        { name: 'a', role: 'pilot', link: 'wifi' },
      ],
      events: [{ atMs: 10, type: 'stall', client: 'ghost', durationMs: 100 }, { atMs: 20, type: 'warp' }],
    };
    let err: unknown;
    try {
      validateScenario(bad, catalog);
    } catch (x) {
      err = x;
    }
    assert.ok(err instanceof ScenarioError, 'a ScenarioError');
    assert.match(err.message, /^invalid scenario \(\d+ problems\):\n {2}durationMs: /);
    const paths = err.problems.map((p) => `${p.path}: ${p.reason}`);
    const expect = [
      /^durationMs: must be > 0/,
      /^links\.wifi\.latencyMs: must be a finite number, got the string "fast"/,
      /^links\.radio\.binding: must be one of tcp, ws, ble, espnow/,
      /^clients\[0\]\.link: no link profile named 'nope'/,
      /^clients\[0\]\.subscriptions\[0\]\.rateHz: must be > 0/,
      /^clients\[0\]\.subscriptions\[1\]\.channel: 'cmd_vel' is not a telemetry channel/,
      /^clients\[1\]\.name: duplicate client name 'a'/,
      /^clients\[1\]\.role: must be one of console/,
      /^events\[0\]\.client: no client named 'ghost'/,
      /^events\[1\]\.type: must be one of/,
    ];
    for (const re of expect) assert.ok(paths.some((p) => re.test(p)), `expected a problem matching ${re}; got:\n${paths.join('\n')}`);
  });

  it('the CLI refuses a scenario file with a schema error, naming its path, exit status 2', () => {
    const dir = mkdtempSync(join(tmpdir(), 'sim-'));
    const file = join(dir, 'bad.json');
    writeFileSync(file, JSON.stringify({ ...base, clients: [{ name: 'a', role: 'viewer', link: 'wifi', startMs: 'soon' }] }));
    const cli = fileURLToPath(new URL('../../host-sim/cli.js', import.meta.url));
    const res = spawnSync(process.execPath, [cli, '--scenario-file', file, '--json'], { encoding: 'utf8' });
    assert.equal(res.status, 2);
    assert.equal(res.stdout, '');
    assert.match(res.stderr, /clients\[0\]\.startMs: must be a finite number, got the string "soon"/);
  });

  it('the CLI prints one JSON report for a named scenario', function () {
    this.timeout(120000);
    const cli = fileURLToPath(new URL('../../host-sim/cli.js', import.meta.url));
    const res = spawnSync(process.execPath, [cli, '--scenario', 'calm', '--seed', '3', '--json'], { encoding: 'utf8' });
    assert.equal(res.status, 0, res.stderr);
    const r = JSON.parse(res.stdout);
    assert.equal(r.schema, 'robot-hub-sim-report/2');
    assert.equal(r.scenario.name, 'calm');
    assert.equal(r.scenario.seed, 3);
    assert.equal(r.ok, true);
  });

  it('npm run sim (bundled, no tsc) prints the report in words and writes the JSON, of labelled objects, beside it', function () {
    this.timeout(180000);
    const repo = fileURLToPath(new URL('../../..', import.meta.url));
    // Through the esbuild runner, with no tsc before it.
    const scripts = (JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    for (const name of ['sim', 'shed-table']) {
      assert.match(scripts[name] ?? '', /^node scripts\/run-ts\.mjs \S+\.ts$/, `npm run ${name}: ${scripts[name]}`);
    }
    const file = join(mkdtempSync(join(tmpdir(), 'sim-')), 'calm.json');
    const res = spawnSync('npm', ['run', '-s', 'sim', '--', '--scenario', 'calm', '--report', file], { cwd: repo, encoding: 'utf8' });
    assert.equal(res.status, 0, res.stderr);
    const r = JSON.parse(readFileSync(file, 'utf8'));
    assert.equal(r.schema, 'robot-hub-sim-report/2');
    // Labelled objects, not tuples, in every timeline.
    const imu = r.clients.scope.subscriptions.imu;
    assert.deepEqual(Object.keys(imu.grants[0]).sort(), ['grantedHz', 'priority', 'session', 'tMs']);
    assert.deepEqual(Object.keys(r.clients.scope.states[0]).sort(), ['state', 'tMs']);
    assert.deepEqual(Object.keys(r.links['scope#1'].levels[0]).sort(), ['level', 'tMs']);
    assert.deepEqual(Object.keys(Object.values<J>(r.hub.sessionsAtEnd[0].grants)[0]!).sort(), ['grantedHz', 'priority']);
    // The summary says what the JSON says: the scope's imu granted and delivered, the console's link level.
    const out = res.stdout;
    assert.match(out, /^scenario calm, seed 1: 20\.0 s simulated: every invariant held$/m);
    const last = imu.grants[imu.grants.length - 1];
    const row = new RegExp(`^ {4}imu +${last.grantedHz} Hz +(\\d+(?:\\.\\d)?) Hz +${imu.frames} +${imu.gaps} +${imu.dropped} `, 'm').exec(out);
    assert.ok(row, out);
    assert.ok(Number(row[1]) > 0.9 * last.grantedHz, `delivered ${row[1]} Hz of ${last.grantedHz}`);
    assert.match(out, /^ {2}scope \(scope on ws, credential operator-key\): active at the end/m);
    assert.match(out, /^ {2}console#1 +tcp +max 0 +level 0 throughout$/m);
    assert.match(out, /^ESTOPs: 0 asserted, 0 latched; not latched at the end$/m);
  });

  it('npm run shed-table (bundled, no tsc) prints the same table as the compiled script', function () {
    this.timeout(120000);
    const repo = fileURLToPath(new URL('../../..', import.meta.url));
    const bundled = spawnSync('npm', ['run', '-s', 'shed-table'], { cwd: repo, encoding: 'utf8' });
    assert.equal(bundled.status, 0, bundled.stderr);
    const compiled = spawnSync(process.execPath, [fileURLToPath(new URL('../../scripts/shed-table.js', import.meta.url))], { encoding: 'utf8' });
    assert.equal(bundled.stdout, compiled.stdout);
    assert.ok((JSON.parse(bundled.stdout) as unknown[]).length > 100);
  });
});
