#!/usr/bin/env node
// `npm run bench`: every case of bench/index.ts, on Node and on the real XS engine.
//
//   node scripts/bench.mjs [--json] [--quick] [--only=a,b] [--no-node] [--no-xs]
//
// Node: the compiled cases (build/bench, `npm run bench` compiles first), timed with
//   process.hrtime.bigint: calibrate n until one run takes ≥ 20 ms, warm up, then the median
//   of 9 runs (5 with --quick) in ns per op and per item.
// XS: the same cases bundled into one script and evaluated by xsnap-worker, one fresh worker
//   per case. For an op case: setup and warm-up in their own evaluations; then per repeat an
//   evaluation calling gc(), an evaluation running N ops, and the same two with 0 ops. The
//   meters of the N-op evaluation minus those of the 0-op one, divided by N, give computrons
//   per op and slots allocated per op (growth of currentHeapCount, 16 bytes a slot on the
//   device). Median of 3 repeats. For a retained case: a heap snapshot before and after each
//   step (a snapshot collects garbage first); its HEAP and BLOC sections give the live slots
//   and chunk bytes, and their growth is what the step keeps alive.
// Sim: bench/sim.bench.ts, the simulator's speed and its ESTOP latency and sample age under
//   congestion (`sim` in the JSON; --no-sim leaves it out, --only=sim runs it alone).
// Device: the device budget (scripts/lib/device-budget.mjs, docs/performance.md "Fits the
//   ESP32"): the default mix on XS through the real bindings, per-delivery costs, the tick, the
//   calibration against one ESP32 core, memory.device against manifest.json's `creation`, and
//   the pendant's cost per control period and heap against pendant/manifest.json's
//   (`device.pendant`, bench/pendant.bench.ts), the robot link (`device.robotLink`,
//   bench/robot-link.bench.ts) (`device` in the JSON; --no-device leaves it out, --only=device runs it with its cases;
//   --host-coremark=N gives this machine's CoreMark score when it is not the reference machine;
//   --coremark=PATH, or COREMARK=PATH, a CoreMark binary to measure it with, in the same run).
// `--json` prints one JSON object with every number; `--quick` uses tiny counts (smoke test).
// Exit code 1 if any case failed on any engine.
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import * as esbuild from 'esbuild';
import { Xsnap } from './lib/xsnap.mjs';
import { CALIBRATION, deviceReport } from './lib/device-budget.mjs';
import { readSnapshot, writeSnapshot } from './lib/xs-heap.mjs';

const repo = resolve(fileURLToPath(new URL('..', import.meta.url)));
const args = process.argv.slice(2);
const json = args.includes('--json');
const quick = args.includes('--quick');
const runNode = !args.includes('--no-node');
const runXs = !args.includes('--no-xs');
const onlyArg = args.find((a) => a.startsWith('--only='));
const only = onlyArg ? onlyArg.slice('--only='.length).split(',').filter(Boolean) : null;
// The simulator section (bench/sim.bench.ts, Node only): with --only it runs when one of the
// names is `sim`; --no-sim or --no-node leave it out.
const runSim = runNode && !args.includes('--no-sim') && (!only || only.includes('sim'));
// The device section runs on XS; with --only when one of the names is `device`.
const runDevice = runXs && !args.includes('--no-device') && (!only || only.includes('device'));
const coreMarkArg = args.find((a) => a.startsWith('--host-coremark='));
const hostCoreMark = coreMarkArg ? Number(coreMarkArg.slice('--host-coremark='.length)) : CALIBRATION.hostCoreMark;
if (!(hostCoreMark > 0)) throw new Error(`--host-coremark wants a positive score, not ${coreMarkArg}`);
// A CoreMark binary (EEMBC's, built by its own makefile): the device section measures this host's
// score in the same run, interleaved with its XS calibration, instead of taking the reference's.
// (--host-coremark wins over COREMARK from the environment; the two flags together are an error.)
const coreMarkBinArg = args.find((a) => a.startsWith('--coremark='));
if (coreMarkBinArg && coreMarkArg) throw new Error('--coremark measures the host\'s CoreMark score; --host-coremark gives it: use one');
const coreMarkPath = coreMarkBinArg ? coreMarkBinArg.slice('--coremark='.length) : coreMarkArg ? '' : process.env.COREMARK || '';
// A path, not a name to look up on PATH.
const coreMark = coreMarkPath !== '' ? resolve(coreMarkPath) : null;
if (coreMark !== null && !existsSync(coreMark)) throw new Error(`--coremark (or COREMARK): no CoreMark binary at ${coreMark}`);

// A slot is 16 bytes on the ESP32 (docs/architecture.md "The device runtime"); the host build's are 32.
const DEVICE_SLOT_BYTES = 16;
// Slots an N-op XS run may allocate: well under the 256 K-slot initial heap that xsnap gives, so
// that no collection runs mid-measurement (one would hide allocations from currentHeapCount).
const XS_SLOT_BUDGET = 100000;

const NODE_REPEATS = quick ? 5 : 9;
const NODE_MIN_RUN_NS = quick ? 0n : 20_000_000n;
const NODE_WARM_NS = quick ? 0n : 300_000_000n;
const XS_REPEATS = 3;

const log = (line) => {
  if (!json) process.stdout.write(line + '\n');
};

function median(xs) {
  const s = xs.slice().sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function round(x, digits = 2) {
  if (!Number.isFinite(x)) return x;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

function errorText(e) {
  return e && e.message ? e.message : String(e);
}

// ------------------------------------------------------------------------------------ Node

async function loadCompiled() {
  const file = join(repo, 'build', 'bench', 'index.js');
  if (!existsSync(file)) throw new Error('build/bench/index.js is missing: run `npm run bench` (it compiles first) or `npx tsc -p tsconfig.json`');
  return (await import(pathToFileURL(file).href)).BENCHES;
}

function timeRun(bench, n) {
  const t0 = process.hrtime.bigint();
  const items = bench.run(n);
  return { ns: process.hrtime.bigint() - t0, items };
}

function nodeOp(bench) {
  bench.setup();
  let n = quick ? Math.max(1, Math.min(50, bench.xsOps)) : 64;
  if (!quick) {
    while (n < 1e8 && timeRun(bench, n).ns < NODE_MIN_RUN_NS) n *= 2;
    const warmEnd = process.hrtime.bigint() + NODE_WARM_NS;
    do timeRun(bench, n);
    while (process.hrtime.bigint() < warmEnd);
  } else {
    timeRun(bench, n);
  }
  const nsPerOp = [];
  const nsPerItem = [];
  const itemsPerOp = [];
  for (let r = 0; r < NODE_REPEATS; r++) {
    const { ns, items } = timeRun(bench, n);
    nsPerOp.push(Number(ns) / n);
    nsPerItem.push(items > 0 ? Number(ns) / items : null);
    itemsPerOp.push(items / n);
  }
  const perItem = nsPerItem.filter((x) => x !== null);
  return {
    ops: n,
    repeats: NODE_REPEATS,
    itemsPerOp: median(itemsPerOp),
    nsPerOp: round(median(nsPerOp)),
    nsPerItem: perItem.length ? round(median(perItem)) : null,
    runsNsPerOp: nsPerOp.map((x) => round(x)),
  };
}

// ------------------------------------------------------------------------------------ XS

async function bundleBenches() {
  const entry = `
import { BENCHES } from './bench/index.ts';
const B = { bench: null, n: 0, items: 0 };
B.names = () => BENCHES.map((make) => make().name);
B.make = (i) => { B.bench = BENCHES[i](); };
B.setup = () => { B.bench.setup(); };
B.go = () => { B.items = B.bench.run(B.n); };
B.step = (i) => { B.bench.step(i); };
B.time = (n, repeats) => {
  const ms = [];
  for (let r = 0; r < repeats; r++) {
    const t0 = performance.now();
    B.bench.run(n);
    ms.push(performance.now() - t0);
  }
  return ms;
};
globalThis.__B = B;
`;
  const out = await esbuild.build({
    stdin: { contents: entry, resolveDir: repo, sourcefile: 'bench-entry.ts', loader: 'ts' },
    bundle: true,
    format: 'iife',
    target: 'es2022',
    platform: 'neutral',
    mainFields: ['module', 'main'],
    conditions: ['import', 'default'],
    write: false,
    logLevel: 'silent',
    // Modules are strict; the bundle must be too, or writes to frozen objects fail silently on XS.
    banner: { js: '"use strict";' },
    // The device's opcodes: no LINE opcode for each new source line (scripts/lib/device-budget.mjs bundleEntry).
    minifyWhitespace: true,
  });
  return out.outputFiles[0].text;
}

function newWorker() {
  return new Xsnap({ onPrint: (l) => process.stderr.write(`[xs] ${l}\n`) });
}

async function ev(xs, code) {
  return (await xs.evaluate(code)).meter;
}

async function xsMeasure(xs, n) {
  await ev(xs, `__B.n = ${n};`);
  const before = await ev(xs, 'gc();');
  const after = await ev(xs, '__B.go();');
  const { value: items } = await xs.evaluateJson('__B.items');
  return { slots: after.currentHeapCount - before.currentHeapCount, compute: after.compute, items };
}

async function xsOp(bundle, index, bench) {
  const xs = newWorker();
  try {
    await xs.evaluate(bundle);
    await ev(xs, `__B.make(${index}); __B.setup();`);
    let n = quick ? Math.max(1, Math.min(20, bench.xsOps)) : bench.xsOps;
    await ev(xs, `__B.n = ${Math.max(1, n >> 2)}; __B.go();`);
    // A probe sizes N so that the measured run stays inside the slot budget.
    const probeN = Math.min(n, 20);
    const b0 = await xsMeasure(xs, 0);
    const p = await xsMeasure(xs, probeN);
    const probeSlots = (p.slots - b0.slots) / probeN;
    if (probeSlots > 0) n = Math.max(1, Math.min(n, Math.floor(XS_SLOT_BUDGET / probeSlots)));
    const runs = [];
    for (let r = 0; r < XS_REPEATS; r++) {
      const base = await xsMeasure(xs, 0);
      const full = await xsMeasure(xs, n);
      runs.push({
        computronsPerOp: (full.compute - base.compute) / n,
        slotsPerOp: (full.slots - base.slots) / n,
        items: full.items,
      });
    }
    const computronsPerOp = median(runs.map((r) => r.computronsPerOp));
    const slotsPerOp = median(runs.map((r) => r.slotsPerOp));
    const itemsPerOp = median(runs.map((r) => r.items / n));
    const { value: ms } = await xs.evaluateJson(`__B.time(${n}, ${quick ? 1 : 3})`);
    return {
      ops: n,
      repeats: XS_REPEATS,
      itemsPerOp,
      computronsPerOp: round(computronsPerOp),
      computronsPerItem: itemsPerOp > 0 ? round(computronsPerOp / itemsPerOp) : null,
      slotsPerOp: round(slotsPerOp, 3),
      bytesPerOp: round(slotsPerOp * DEVICE_SLOT_BYTES),
      bytesPerItem: itemsPerOp > 0 ? round((slotsPerOp * DEVICE_SLOT_BYTES) / itemsPerOp) : null,
      nsPerOp: round((median(ms) * 1e6) / n),
      runs: runs.map((r) => ({ computronsPerOp: round(r.computronsPerOp), slotsPerOp: round(r.slotsPerOp, 3) })),
    };
  } finally {
    await xs.close();
  }
}

async function xsRetained(bundle, index, bench) {
  const xs = newWorker();
  const dir = mkdtempSync(join(tmpdir(), 'hub-bench-'));
  try {
    await xs.evaluate(bundle);
    await ev(xs, `__B.make(${index}); __B.setup();`);
    // Live slots: currentHeapCount after a gc() evaluation (the engine's own count, the same
    // meter as the op cases). Live chunk bytes: the snapshot's BLOC section; its HEAP section
    // gives a second slot count, kept as a cross-check (it indexes slots for serialisation and
    // can come out a little lower).
    const snap = async (k) => {
      const gcSlots = (await ev(xs, 'gc();')).currentHeapCount;
      const path = join(dir, `s${k}.xss`);
      await writeSnapshot(xs, path);
      const s = readSnapshot(path);
      rmSync(path, { force: true });
      return { ...s, gcSlots };
    };
    let prev = await snap(0);
    const steps = {};
    for (let i = 0; i < bench.steps.length; i++) {
      const st = bench.steps[i];
      await ev(xs, `__B.step(${i});`);
      const cur = await snap(i + 1);
      const slots = cur.gcSlots - prev.gcSlots;
      const chunkBytes = cur.chunkBytes - prev.chunkBytes;
      steps[st.name] = {
        count: st.count,
        per: st.per,
        slots,
        slotsBySnapshot: cur.slots - prev.slots,
        slotBytes: slots * DEVICE_SLOT_BYTES,
        chunkBytes,
        hostChunkBytes: cur.hostChunkBytes - prev.hostChunkBytes,
        slotsEach: round(slots / st.count),
        slotBytesEach: round((slots * DEVICE_SLOT_BYTES) / st.count),
        chunkBytesEach: round(chunkBytes / st.count),
      };
      prev = cur;
    }
    const totals = {};
    for (const t of bench.totals) {
      let slots = 0;
      let chunkBytes = 0;
      for (const name of t.steps) {
        slots += steps[name].slots;
        chunkBytes += steps[name].chunkBytes;
      }
      totals[t.name] = { slots, slotBytes: slots * DEVICE_SLOT_BYTES, chunkBytes };
    }
    return { hostSlotBytes: prev.hostSlotBytes, live: { slots: prev.gcSlots, chunkBytes: prev.chunkBytes }, steps, totals };
  } finally {
    await xs.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

// ------------------------------------------------------------------------------------ report

function pad(s, n, right = false) {
  s = String(s);
  return right ? s.padStart(n) : s.padEnd(n);
}

function num(x, digits = 1) {
  if (x === null || x === undefined) return '–';
  if (!Number.isFinite(x)) return String(x);
  return x.toFixed(digits);
}

function printTable(report) {
  const rows = [];
  for (const [name, c] of Object.entries(report.cases)) {
    if (c.kind !== 'op') continue;
    const x = c.xs;
    const n = c.node;
    rows.push([name, c.op, num(x?.computronsPerOp), num(x?.bytesPerOp), num(n?.nsPerOp), num(x?.nsPerOp, 0), c.error ?? '']);
    if (c.item !== c.op) {
      rows.push(['', `${c.item} (${num(x?.itemsPerOp ?? n?.itemsPerOp, 2)}/${c.op})`, num(x?.computronsPerItem), num(x?.bytesPerItem), num(n?.nsPerItem), '', '']);
    }
    if (c.baseline && (x?.computronsPerItemLessBaseline !== undefined || n?.nsPerItemLessBaseline !== undefined)) {
      rows.push(['', `${c.item} less ${c.baseline}`, num(x?.computronsPerItemLessBaseline), '', num(n?.nsPerItemLessBaseline), '', '']);
    }
  }
  const head = ['case', 'per', 'XS computrons', 'XS bytes alloc', 'Node ns', 'XS host ns', ''];
  const w = [24, 26, 14, 15, 10, 11];
  log('');
  log(head.slice(0, 6).map((h, i) => pad(h, w[i], i >= 2)).join(' '));
  for (const r of rows) log(r.slice(0, 6).map((v, i) => pad(v, w[i], i >= 2)).join(' ') + (r[6] ? `  ${r[6]}` : ''));
  for (const [name, c] of Object.entries(report.cases)) {
    if (c.kind !== 'retained') continue;
    log('');
    log(`${name}: ${c.title} (XS, retained after gc; slots × ${DEVICE_SLOT_BYTES} B as on the device, chunk bytes as the device holds them: 8-byte chunk headers and 16-byte array slots, where this host's are 16 and ${c.xs ? c.xs.hostSlotBytes : '?'} B)`);
    if (c.error) log(`  ERROR ${c.error}`);
    if (!c.xs) continue;
    log(['  ' + pad('step', 12), pad('count', 6, true), pad('slots', 8, true), pad('slot B', 9, true), pad('chunk B', 9, true), pad('slot B each', 12, true), pad('chunk B each', 13, true), '  per'].join(' '));
    for (const [step, s] of Object.entries(c.xs.steps)) {
      log(['  ' + pad(step, 12), pad(s.count, 6, true), pad(s.slots, 8, true), pad(s.slotBytes, 9, true), pad(s.chunkBytes, 9, true), pad(num(s.slotBytesEach), 12, true), pad(num(s.chunkBytesEach), 13, true), '  ' + s.per].join(' '));
    }
    for (const [t, s] of Object.entries(c.xs.totals)) {
      log(`  total ${t}: ${s.slots} slots = ${s.slotBytes} B of slot heap, ${s.chunkBytes} B of chunks`);
    }
  }
  log('');
  if (report.sim && report.sim.congestion) {
    log('');
    log('simulator, under congestion (virtual time, deterministic): ESTOP latency and sample age per binding, ms (p50 / p95 / max, n)');
    for (const [name, c] of Object.entries(report.sim.congestion)) {
      log(`  ${name} (seed ${c.seed}, ${c.note})`);
      for (const [b, d] of Object.entries(c.estopMs)) log(`    estop ${pad(b, 7)} ${num(d.p50, 3)} / ${num(d.p95, 3)} / ${num(d.max, 3)}  n ${d.count}, bound ≤ ${num(d.maxBoundMs, 3)}`);
      for (const [b, d] of Object.entries(c.sampleAgeMs)) log(`    age   ${pad(b, 7)} ${num(d.p50, 3)} / ${num(d.p95, 3)} / ${num(d.max, 3)}  n ${d.count}`);
    }
  }
  const d = report.device;
  if (d && !d.error) {
    const w = d.workload;
    log('');
    log(`device budget (docs/performance.md "Fits the ESP32"): the default mix on XS, ${w.seconds} simulated s`);
    log(`  ${w.computronsPerSecond} computrons per simulated s: delivery ${w.split.delivery}, ingress ${w.split.ingress}, tick ${w.split.tick}, bindings ${w.split.bindings}`);
    log(`  share of one 240 MHz ESP32 core: ${w.corePercent.low}–${w.corePercent.high} % (each push's DATA frame written in C, ${w.native.computronsPerSecond} computrons of it the C's)`);
    log(`  all in script: ${w.allScript.computronsPerSecond} computrons per simulated s, ${w.allScript.corePercent.low}–${w.allScript.corePercent.high} %`);
    const r = d.robotLink;
    if (r) {
      log(`  robot link (device/robot-link.ts, not in the mix; its CRC and values in C): ${r.perSample.imu} computrons per imu SAMPLE frame read (${r.native.computronsPerImuSample} of them the C's, ${r.native.nsPerImuSample} ns here), ${r.perPublish} per PUBLISH sent; ${r.perSecond.total} per s at the default streams and 50 Hz of commands (${r.corePercent.low}–${r.corePercent.high} %)`);
      log(`  robot link all in script: ${r.allScript.perSample.imu} per imu frame, ${r.allScript.perPublish} per PUBLISH, ${r.allScript.perSecond.total} per s`);
      log(`  the mix with the robot link: ${w.withRobotLink.computronsPerSecond} computrons per s, ${w.withRobotLink.corePercent.low}–${w.withRobotLink.corePercent.high} % of the core`);
    }
    log(`  per delivery: ${Object.entries(d.perDelivery).map(([b, c]) => `${b} ${c}`).join(', ')} computrons (all in script: ${Object.entries(d.perDeliveryAllScript).map(([b, c]) => `${b} ${c}`).join(', ')})`);
    log(`  tick, 8 sessions, nothing due: median ${d.tick.nothingDue.median}, max ${d.tick.nothingDue.max}; in the workload ${d.tick.inWorkload} per tick (${d.tick.corePercent.low}–${d.tick.corePercent.high} % of a core)`);
    if (d.memory.slots) log(`  memory, every binding live: ${d.memory.slots.used} of ${d.memory.slots.budget} slots (${d.memory.slots.percent} %), ${d.memory.chunk.used} of ${d.memory.chunk.budget} chunk bytes (${d.memory.chunk.percent} %)`);
    const p = d.pendant;
    if (p && !p.error) {
      log(`  pendant (docs/pendant.md "Budget"): ${p.computronsPerPeriod} computrons per ${p.periodMs} ms control period, ${p.corePercent.low}–${p.corePercent.high} % of its ESP32's core, ${p.commandsPerSecond} commands/s`);
      log(`  pendant heap (upper bound): ${p.memory.slots.used} of ${p.memory.slots.budget} slots (${p.memory.slots.percent} %), ${p.memory.chunk.used} of ${p.memory.chunk.budget} chunk bytes (${p.memory.chunk.percent} %)`);
    } else if (p) log(`  pendant: ERROR ${p.error}`);
    const c = d.calibration;
    log(`  calibration: ${c.nsPerComputron} ns per computron here; ESP32 ${c.esp32HostRatio.low}–${c.esp32HostRatio.high}× slower (CoreMark ${c.hostCoreMark} here${c.hostCoreMarkMeasured ? ', measured in this run' : ', not measured in this run'}, ${c.esp32CoreMark.low}–${c.esp32CoreMark.high} ESP32)`);
    const show = (v) => (typeof v === 'object' && v !== null ? Object.values(v).join(' / ') : v);
    for (const t of d.targets) log(`  ${t.met ? 'met ' : 'MISS'} ${t.name}: ${show(t.value)} (limit ${show(t.limit)} ${t.unit})`);
  } else if (d) log(`device: ERROR ${d.error}`);
  log('XS computrons: deterministic cost; XS bytes alloc: slots allocated per op × 16 B (chunk-only allocations, e.g. string building, are not seen: see bench/README.md).');
}

// ------------------------------------------------------------------------------------ main

async function main() {
  // The compiled cases give the list and the metadata on both engines.
  const factories = await loadCompiled();
  const selected = [];
  factories.forEach((make, index) => {
    const b = make();
    if (!only || only.some((o) => b.name.includes(o))) selected.push({ index, meta: b });
  });
  if (selected.length === 0 && !runSim && !runDevice) throw new Error(`no bench case matches ${only}`);

  const report = {
    version: 1,
    quick,
    deviceSlotBytes: DEVICE_SLOT_BYTES,
    engines: { node: process.version, xs: 'xsnap-worker (@agoric/xsnap, XS 13.3)' },
    cases: {},
  };
  let failed = 0;

  for (const { meta } of selected) {
    const c = { kind: meta.kind, title: meta.title, issue: meta.issue };
    if (meta.kind === 'op') Object.assign(c, { op: meta.op, item: meta.item });
    c.node = null;
    c.xs = null;
    report.cases[meta.name] = c;
  }

  if (runNode) {
    for (const { index, meta } of selected) {
      if (meta.kind !== 'op') continue;
      const c = report.cases[meta.name];
      try {
        c.node = nodeOp(factories[index]());
        log(`node  ${meta.name}: ${num(c.node.nsPerOp)} ns/${meta.op}`);
      } catch (e) {
        failed++;
        c.error = `node: ${errorText(e)}`;
        log(`node  ${meta.name}: FAILED ${errorText(e)}`);
      }
    }
  }

  if (runXs) {
    const bundle = await bundleBenches();
    const names = await (async () => {
      const xs = newWorker();
      try {
        await xs.evaluate(bundle);
        return (await xs.evaluateJson('__B.names()')).value;
      } finally {
        await xs.close();
      }
    })();
    for (const { index, meta } of selected) {
      const c = report.cases[meta.name];
      try {
        if (names[index] !== meta.name) throw new Error(`the XS bundle lists ${names[index]} at ${index}: build/ is stale, recompile`);
        c.xs = meta.kind === 'op' ? await xsOp(bundle, index, meta) : await xsRetained(bundle, index, meta);
        if (meta.kind === 'op') log(`xs    ${meta.name}: ${num(c.xs.computronsPerOp)} computrons/${meta.op}, ${num(c.xs.bytesPerOp)} B/${meta.op}`);
        else log(`xs    ${meta.name}: done`);
      } catch (e) {
        failed++;
        c.error = (c.error ? c.error + '; ' : '') + `xs: ${errorText(e)}`;
        log(`xs    ${meta.name}: FAILED ${errorText(e)}`);
      }
    }
  }

  // A case that names a baseline (an op it includes once per item, e.g. the link's byte copy
  // in every delivery) also gets its per-item cost less that baseline's per-op cost.
  for (const { meta } of selected) {
    if (meta.kind !== 'op' || !meta.baseline) continue;
    const c = report.cases[meta.name];
    const base = report.cases[meta.baseline];
    c.baseline = meta.baseline;
    if (!base) continue;
    if (c.xs && base.xs && c.xs.computronsPerItem !== null) c.xs.computronsPerItemLessBaseline = round(c.xs.computronsPerItem - base.xs.computronsPerOp);
    if (c.node && base.node && c.node.nsPerItem !== null) c.node.nsPerItemLessBaseline = round(c.node.nsPerItem - base.node.nsPerOp);
  }

  if (runSim) {
    // Issue 7 item 4: simulation speed (median of 3 runs of the default scenario; 1 with --quick),
    // and ESTOP latency and sample age per binding under congestion.
    try {
      const { simBench } = await import(pathToFileURL(join(repo, 'build', 'bench', 'sim.bench.js')).href);
      report.sim = await simBench(quick ? 1 : 3);
      const sp = report.sim.speed;
      log(`sim   ${sp.scenario}: ${sp.simSecondsPerWallSecond} simulated s per wall s (median of ${sp.runs}), ${sp.kernelEventsPerWallSecond} kernel events/s`);
    } catch (e) {
      failed++;
      report.sim = { error: errorText(e) };
      log(`sim   FAILED ${errorText(e)}`);
    }
  }

  if (runDevice) {
    try {
      // Bytes allocated per item of the device op cases, where they ran on XS.
      const allocation = {};
      for (const [name, c] of Object.entries(report.cases)) {
        if (!name.startsWith('device.') || !c.xs || c.xs.bytesPerItem === null) continue;
        allocation[name.startsWith('device.deliver.') ? `delivery (${name.slice('device.deliver.'.length)}, its ACKs and PINGs)` : `${c.item} (${name})`] = c.xs.bytesPerItem;
      }
      report.device = await deviceReport(repo, { quick, hostCoreMark, coreMark, memory: report.cases['memory.device'] ?? null, allocation, log });
    } catch (e) {
      failed++;
      report.device = { error: errorText(e) };
      log(`device FAILED ${errorText(e)}`);
    }
  }

  report.failed = failed;
  if (json) process.stdout.write(JSON.stringify(report) + '\n');
  else printTable(report);
  process.exitCode = failed > 0 ? 1 : 0;
}

main().catch((e) => {
  console.error(`bench failed: ${errorText(e)}`);
  process.exitCode = 1;
});
