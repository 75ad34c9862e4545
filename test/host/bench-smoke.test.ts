// The benchmark harness in its quick mode: it runs every case on Node and on the XS engine and
// prints one JSON report of the documented shape. Timings are never asserted (they depend on
// the machine); the XS meters are deterministic, so the allocation figures are checked too.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
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
interface Report {
  version: number;
  quick: boolean;
  deviceSlotBytes: number;
  failed: number;
  cases: Record<string, OpReport | RetainedReport>;
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
    const r = spawnSync(process.execPath, [join(repo, 'scripts', 'bench.mjs'), '--quick', '--json'], { cwd: repo, encoding: 'utf8' });
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

  it('sees the allocation decodeFrame makes (the meter is live, not stuck at 0)', function () {
    const c = report.cases['codec.decode-data'] as OpReport;
    assert.ok((c.xs?.slotsPerOp ?? 0) >= 2, `decodeFrame measured ${c.xs?.slotsPerOp} slots per frame`);
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
});
