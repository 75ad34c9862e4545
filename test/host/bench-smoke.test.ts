// The benchmark harness in its quick mode: it runs every case on Node and on the XS engine and
// prints one JSON report of the documented shape. Timings are never asserted (they depend on
// the machine); the XS meters are deterministic, so the allocation figures are checked too.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BENCHES } from '../../bench/index.js';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

interface OpReport {
  kind: 'op';
  title: string;
  issue: number;
  op: string;
  item: string;
  error?: string;
  node: { ops: number; repeats: number; itemsPerOp: number; nsPerOp: number; nsPerItem: number | null } | null;
  xs: {
    ops: number;
    repeats: number;
    itemsPerOp: number;
    computronsPerOp: number;
    computronsPerItem: number | null;
    slotsPerOp: number;
    bytesPerOp: number;
    bytesPerItem: number | null;
    nsPerOp: number;
  } | null;
}
interface StepReport {
  count: number;
  slots: number;
  slotBytes: number;
  chunkBytes: number;
  slotBytesEach: number;
  chunkBytesEach: number;
}
interface RetainedReport {
  kind: 'retained';
  error?: string;
  node: null;
  xs: { steps: Record<string, StepReport>; totals: Record<string, { slots: number; slotBytes: number; chunkBytes: number }> } | null;
}
interface Range {
  low: number;
  high: number;
}
interface DeviceReport {
  error?: string;
  workload: {
    computronsPerSecond: number;
    corePercent: Range;
    split: Record<string, number>;
    deliveriesPerSecond: number;
    native: { dataFramesPerSecond: number };
    allScript: { computronsPerSecond: number };
    withRobotLink: { computronsPerSecond: number };
  };
  perDelivery: Record<string, number>;
  perDeliveryAllScript: Record<string, number>;
  native: { host: { nsPerDataFrame: number; nsPerDataValue: number } };
  robotLink: { perSecond: { total: number }; native: { computronsPerImuSample: number }; allScript: { perSecond: { total: number } } };
  tick: { nothingDue: { median: number; max: number; sessions: number }; inWorkload: number; corePercent: Range };
  memory: { slots: { used: number; budget: number; percent: number }; chunk: { used: number; budget: number; percent: number } };
  calibration: { nsPerComputron: number; esp32HostRatio: Range; source: string[]; hostCoreMark: number };
  targets: { name: string; value: number; limit: number; met: boolean }[];
}
interface Report {
  version: number;
  quick: boolean;
  deviceSlotBytes: number;
  failed: number;
  cases: Record<string, OpReport | RetainedReport>;
  device: DeviceReport;
}

function finite(x: unknown, what: string): number {
  assert.equal(typeof x, 'number', `${what} is not a number`);
  assert.ok(Number.isFinite(x as number), `${what} is not finite: ${String(x)}`);
  return x as number;
}

describe('bench harness (quick mode)', function () {
  this.timeout(180000);
  let report: Report;
  let stdout = '';

  before(function () {
    // (COREMARK cleared: the report's calibration here is the reference machine's, whatever the shell exports.)
    const r = spawnSync(process.execPath, [join(repo, 'scripts', 'bench.mjs'), '--quick', '--json'], { cwd: repo, encoding: 'utf8', env: { ...process.env, COREMARK: '' } });
    stdout = r.stdout;
    assert.equal(r.status, 0, `bench exited ${r.status}: ${r.stderr}\n${r.stdout}`);
    report = JSON.parse(stdout) as Report;
  });

  it('prints exactly one JSON object and nothing else', function () {
    const lines = stdout.trim().split('\n');
    assert.equal(lines.length, 1);
    assert.equal(report.version, 1);
    assert.equal(report.quick, true);
    assert.equal(report.deviceSlotBytes, 16);
    assert.equal(report.failed, 0);
  });

  it('reports every case of bench/index.ts, each with no error', function () {
    const names = BENCHES.map((make) => make().name);
    assert.deepEqual(Object.keys(report.cases), names);
    for (const [name, c] of Object.entries(report.cases)) assert.equal(c.error, undefined, `${name}: ${c.error}`);
  });

  it('gives every op case finite numbers on both engines', function () {
    for (const [name, c] of Object.entries(report.cases)) {
      if (c.kind !== 'op') continue;
      assert.ok(c.node, `${name}: no Node result`);
      assert.ok(c.xs, `${name}: no XS result`);
      finite(c.node.nsPerOp, `${name} node.nsPerOp`);
      assert.ok(c.node.ops >= 1 && c.node.repeats >= 5, `${name}: Node ran ${c.node.ops} ops × ${c.node.repeats}`);
      assert.ok(finite(c.xs.computronsPerOp, `${name} xs.computronsPerOp`) > 0, `${name}: an op costs no computrons`);
      finite(c.xs.slotsPerOp, `${name} xs.slotsPerOp`);
      assert.equal(finite(c.xs.bytesPerOp, `${name} xs.bytesPerOp`), c.xs.slotsPerOp * 16);
      assert.ok(c.xs.bytesPerOp >= 0, `${name}: negative allocation means a collection ran mid-measurement`);
      assert.ok(c.xs.repeats >= 3, `${name}: ${c.xs.repeats} XS repeats`);
      finite(c.xs.itemsPerOp, `${name} xs.itemsPerOp`);
      finite(c.xs.nsPerOp, `${name} xs.nsPerOp`);
      if (c.xs.itemsPerOp > 0) {
        finite(c.xs.computronsPerItem, `${name} xs.computronsPerItem`);
        finite(c.xs.bytesPerItem, `${name} xs.bytesPerItem`);
      }
    }
  });

  it('counts deliveries: imu at level 0 reaches all 8 subscribers, level 1 decimates to half', function () {
    const l0 = report.cases['route.imu-level0'] as OpReport;
    const l1 = report.cases['route.imu-level1'] as OpReport;
    assert.equal(l0.xs?.itemsPerOp, 8);
    assert.equal(l0.node?.itemsPerOp, 8);
    assert.equal(l1.xs?.itemsPerOp, 4);
  });

  it('measures no per-sample allocation on the egress hot path or in encodeData (XS)', function () {
    for (const name of ['codec.encode-data', 'shed.decide', 'route.imu-level0', 'route.imu-level1', 'route.state-level1']) {
      const c = report.cases[name] as OpReport;
      assert.equal(c.xs?.bytesPerOp, 0, `${name} allocates ${c.xs?.bytesPerOp} B per ${c.op} on XS`);
    }
  });

  it('sees the allocation FrameDecoder.decode makes (the meter is live, not stuck at 0)', function () {
    const c = report.cases['codec.decode-data'] as OpReport;
    assert.ok((c.xs?.slotsPerOp ?? 0) >= 2, `FrameDecoder.decode measured ${c.xs?.slotsPerOp} slots per frame`);
  });

  it('gives the retained-heap case every step and the 8 × 16 total, all finite', function () {
    const c = report.cases['memory.sessions'] as RetainedReport;
    assert.ok(c.xs, 'no XS result');
    const steps = c.xs.steps;
    assert.deepEqual(Object.keys(steps), ['catalog', 'hub', 'first-use', 'attach', 'hello', 'subscribe']);
    for (const [name, s] of Object.entries(steps)) {
      finite(s.slots, `${name}.slots`);
      finite(s.chunkBytes, `${name}.chunkBytes`);
      assert.equal(s.slotBytes, s.slots * 16);
      finite(s.slotBytesEach, `${name}.slotBytesEach`);
      finite(s.chunkBytesEach, `${name}.chunkBytesEach`);
    }
    assert.equal(steps['hello']?.count, 8);
    assert.equal(steps['subscribe']?.count, 128);
    // A session and a subscription keep objects alive: a zero would mean the steps did nothing.
    assert.ok((steps['hello']?.slots ?? 0) > 0 && (steps['subscribe']?.slots ?? 0) > 0);
    const total = Object.values(c.xs.totals)[0];
    assert.ok(total, 'no total');
    assert.equal(total.slots, (steps['attach']?.slots ?? 0) + (steps['hello']?.slots ?? 0) + (steps['subscribe']?.slots ?? 0));
  });

  it('prints the device section in the documented shape, its memory against manifest.json', function () {
    const d = report.device;
    assert.ok(d && !d.error, `device: ${d?.error}`);
    const w = d.workload;
    assert.ok(finite(w.computronsPerSecond, 'device.workload.computronsPerSecond') > 0);
    const low = finite(w.corePercent.low, 'device.workload.corePercent.low');
    const high = finite(w.corePercent.high, 'device.workload.corePercent.high');
    assert.ok(low > 0 && low < high, `core share ${low}–${high}`);
    assert.deepEqual(Object.keys(w.split), ['delivery', 'ingress', 'tick', 'bindings']);
    const parts = Object.values(w.split).reduce((a, b) => a + finite(b, 'split'), 0);
    assert.ok(Math.abs(parts - w.computronsPerSecond) <= 4, 'the split adds up to the whole');
    assert.deepEqual(Object.keys(d.perDelivery), ['tcp', 'ws', 'ble', 'espnow']);
    for (const [b, c] of Object.entries(d.perDelivery)) assert.ok(finite(c, `device.perDelivery.${b}`) > 0);
    const manifest = JSON.parse(readFileSync(join(repo, 'manifest.json'), 'utf8')) as { creation: { heap: { initial: number }; chunk: { initial: number } } };
    assert.equal(d.memory.slots.budget, manifest.creation.heap.initial);
    assert.equal(d.memory.chunk.budget, manifest.creation.chunk.initial);
    assert.ok(finite(d.memory.slots.used, 'slots.used') > 0 && finite(d.memory.chunk.used, 'chunk.used') > 0);
    assert.equal(d.memory.slots.percent, Math.round((1000 * d.memory.slots.used) / d.memory.slots.budget) / 10);
    const c = d.calibration;
    assert.ok(finite(c.nsPerComputron, 'nsPerComputron') > 0);
    assert.ok(c.esp32HostRatio.low > 1 && c.esp32HostRatio.low < c.esp32HostRatio.high);
    assert.ok(c.source.length >= 3 && c.source.every((x) => typeof x === 'string' && x.length > 20), 'every figure has its source');
    assert.equal(d.tick.nothingDue.sessions, 8);
    assert.ok(d.targets.length >= 10 && d.targets.every((t) => typeof t.met === 'boolean'));
    // The device's C (each push's DATA frame, the robot link's byte work): timed on the host, and
    // each figure also all in script, where the same work costs more computrons.
    assert.ok(finite(d.native.host.nsPerDataFrame, 'native.host.nsPerDataFrame') > 0 && finite(d.native.host.nsPerDataValue, 'nsPerDataValue') > 0);
    assert.ok(finite(w.native.dataFramesPerSecond, 'workload.native.dataFramesPerSecond') > 0, 'the mix wrote its DATA frames through the device writer');
    assert.ok(finite(w.allScript.computronsPerSecond, 'workload.allScript') > w.computronsPerSecond, 'the mix costs more all in script');
    assert.deepEqual(Object.keys(d.perDeliveryAllScript), ['tcp', 'ws', 'ble', 'espnow']);
    for (const b of ['tcp', 'ws', 'ble', 'espnow']) assert.ok((d.perDeliveryAllScript[b] as number) > (d.perDelivery[b] as number), `${b}: a delivery costs more all in script`);
    const r = d.robotLink;
    assert.ok(finite(r.native.computronsPerImuSample, 'robotLink.native') > 0 && r.perSecond.total < r.allScript.perSecond.total, 'the robot link costs more all in script');
    assert.ok(Math.abs(finite(w.withRobotLink.computronsPerSecond, 'withRobotLink') - w.computronsPerSecond - r.perSecond.total) <= 2, 'the whole workload is the mix and the robot link');
  });
});
