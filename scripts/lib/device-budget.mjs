// The device budget (docs/performance.md "Fits the ESP32"), measured on the real XS engine:
// bench/device.bench.ts bundled into one script and evaluated by xsnap-worker, one fresh worker
// per measurement. scripts/bench.mjs prints it as the report's `device` section; the budget guard
// (test/host/device-budget.test.ts) runs smaller versions of the same measurements.
import { execFileSync } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as esbuild from 'esbuild';
import { Xsnap } from './xsnap.mjs';
import { liveHeap } from './xs-heap.mjs';
import { buildNativeHost, nativeTiming } from './native-host.mjs';

/**
 * The CPU calibration. A computron is one XS bytecode (xsnap counts one per instruction it
 * dispatches), so computrons times the host's ns per computron is this host's time; the ESP32
 * is slower than this host by the ratio of their CoreMark scores. The host's score is this
 * project's reference machine (docs/performance.md "Fits the ESP32"); on another machine pass
 * its own with `--host-coremark N`, since the ns per computron measured there go with it.
 */
export const CALIBRATION = Object.freeze({
  hostCoreMark: 25366,
  hostSource:
    'EEMBC CoreMark (github.com/eembc/coremark d5fad6b, make PORT_DIR=linux ITERATIONS=400000, gcc 12.2) on the reference machine: 25,366 (median of 25,366, 24,815 and 26,891)',
  /** One 240 MHz ESP32 core: the lowest and highest published scores. */
  esp32CoreMark: Object.freeze({ low: 350.12, high: 494.6 }),
  esp32Sources: Object.freeze([
    'https://github.com/pfeerick/CoreMark/blob/baa3d359acf7605d612d16ab50999361d9ce762f/Results/esp32-240mhz.md: ESP32 at 240 MHz, one core, Arduino (GCC 5.2): 350.12',
    'https://github.com/ochrin/coremark (README): ESP32 at 240 MHz, one core, ESP-IDF, -O3: 494.6',
  ]),
});

/** What the targets of docs/performance.md "Fits the ESP32" allow. */
export const TARGETS = Object.freeze({
  corePercentHigh: 20,
  perDelivery: Object.freeze({ tcp: 600, ws: 900, ble: 900, espnow: 900 }),
  tickNothingDue: 1500,
  tickCorePercentHigh: 2,
  memoryPercent: 70,
  /** The pendant's whole work at its busiest, on its own ESP32: the hub's mix target (docs/pendant.md "Budget"). */
  pendantCorePercentHigh: 20,
});

export const BINDINGS = Object.freeze(['tcp', 'ws', 'ble', 'espnow']);

/**
 * What the device's C (the route, the reader of the frequent client frames) is charged, in
 * computrons: each read or write of a script object's data property (XS meters one when C reads
 * or writes a property: xsAll.h mxGetID), each read of an accessor property (a typed array's
 * length, byteOffset or buffer: a native getter run), each call into script (beyond the script
 * it runs, which the bench counts). Fitted against the same C linked into an XS build of the
 * same sources, whose meter counted the mix with the real C: a property at 2 (as XS meters the
 * ESP-NOW C's, ESPNOW_PRICE), the report's count is then 1.2 % above XS's own (2026-12-03, with
 * the route reading a standing link level as fields); at 1 it was 2.5 % under
 * (docs/performance.md "Method").
 */
export const NATIVE_PRICE = Object.freeze({ read: 2, accessor: 10, call: 21 });

/**
 * What the device's ESP-NOW C (device/native/espnowsent.c: the send status and a link's send) is
 * charged, in computrons: each property it reads or writes by name, each typed-array element by
 * index (XS meters the index access and the element's getter or setter, and converts the index),
 * each call into script beyond the script it runs. Bytes the C reads and writes where they lie
 * (a Uint8Array's data: the datagram's header, the frame copied into its queue) are not XS's and
 * are not charged. Fitted against the same C linked into an XS build of the same sources, over
 * five worlds (the per-delivery world at 10, 20, 40 and 80 Hz and the default mix): read and
 * element as XS meters them one at a time, the call so that the report's count is never below
 * XS's own and at most 5.2 % above it (docs/performance.md "Method").
 */
export const ESPNOW_PRICE = Object.freeze({ read: 2, element: 7, call: 27 });

/** manifest.json's `creation`: the heap XS gets on the device. */
export function creation(repo) {
  const m = JSON.parse(readFileSync(join(repo, 'manifest.json'), 'utf8'));
  const c = m.creation;
  return { chunkBytes: c.chunk.initial, slots: c.heap.initial };
}

/** pendant/manifest.json's `creation`: the heap XS gets on the pendant. */
export function pendantCreation(repo) {
  const m = JSON.parse(readFileSync(join(repo, 'pendant', 'manifest.json'), 'utf8'));
  const c = m.creation;
  return { chunkBytes: c.chunk.initial, slots: c.heap.initial };
}

/** bench/pendant.bench.ts as one script that defines `__P` on the XS engine. */
export async function bundlePendant(repo) {
  const entry = `
import { pendantBench, STEADY_STEPS, steady, measureSteady, memoryBaseline } from './bench/pendant.bench.ts';
import { stopMetering } from './bench/device.bench.ts';
const P = {
  b: null,
  w: null,
  steps: () => STEADY_STEPS.length,
  open: () => { P.b = pendantBench(); },
  step: (i) => { STEADY_STEPS[i](P.b.world); },
  steady: () => steady(P.b.world),
  measure: (s) => JSON.stringify(measureSteady(P.b, s)),
  memBase: () => { stopMetering(); P.w = memoryBaseline(); },
  memAttach: () => { P.w.attachPendant(); },
  memStep: (i) => { STEADY_STEPS[i](P.w); },
  memRun: (ms) => { P.w.run(ms); },
  memSteady: () => steady(P.w),
};
globalThis.__P = P;
`;
  return bundleEntry(repo, entry, 'pendant-entry.ts');
}

/**
 * The pendant's computrons per control period in its steady state (bench/pendant.bench.ts), in a
 * fresh worker: the steps to the steady state one evaluation each, then `seconds` metered.
 */
export async function pendantComputrons(bundle, seconds) {
  const xs = new Xsnap({ onPrint: (l) => process.stderr.write(`[xs] ${l}\n`) });
  try {
    await xs.evaluate(bundle);
    await xs.evaluate('__P.open();');
    const { value: n } = await xs.evaluateJson('__P.steps()');
    for (let i = 0; i < n; i++) await xs.evaluate(`__P.step(${i});`);
    const { value: ok } = await xs.evaluateJson('__P.steady()');
    if (!ok) throw new Error('the pendant did not reach its steady state (owner, armed, driving)');
    const { value } = await xs.evaluateJson(`__P.measure(${seconds})`);
    return JSON.parse(value);
  } finally {
    await xs.close();
  }
}

/**
 * What the pendant keeps alive in its steady state: the live heap after the hub's side alone ran,
 * and again after the pendant was added, connected, took control and drove for `ms`. The
 * difference also holds what the hub keeps for the pendant's session and link and the simulated
 * air's events: an upper bound on the pendant's own.
 */
export async function pendantRetained(bundle, ms) {
  const xs = new Xsnap({ onPrint: (l) => process.stderr.write(`[xs] ${l}\n`) });
  try {
    await xs.evaluate(bundle);
    await xs.evaluate('__P.memBase();');
    const before = await liveHeap(xs);
    await xs.evaluate('__P.memAttach();');
    const { value: n } = await xs.evaluateJson('__P.steps()');
    for (let i = 0; i < n; i++) await xs.evaluate(`__P.memStep(${i});`);
    await xs.evaluate(`__P.memRun(${ms});`);
    const { value: ok } = await xs.evaluateJson('__P.memSteady()');
    if (!ok) throw new Error('the pendant did not reach its steady state in the heap run');
    const after = await liveHeap(xs);
    return { slots: after.slots - before.slots, chunkBytes: after.chunkBytes - before.chunkBytes };
  } finally {
    await xs.close();
  }
}

/** The pendant's section of the device report: computrons per period against one core, heap against its creation. */
export async function pendantReport(repo, { quick = false, nsPerComputron, ratio, log = () => {} }) {
  const bundle = await bundlePendant(repo);
  const seconds = quick ? 2 : 10;
  const c = await pendantComputrons(bundle, seconds);
  const m = await pendantRetained(bundle, quick ? 1000 : 3000);
  const budget = pendantCreation(repo);
  const periodsPerSecond = c.periods / seconds;
  const out = {
    scenario: 'owner, armed, enable held, stick off centre: cmd_vel at its 20 Hz grant, control period 20 ms, owner PINGs every 200 ms, over the simulated air',
    seconds,
    periodMs: 1000 / periodsPerSecond,
    computronsPerPeriod: Math.round(c.perPeriod),
    computronsPerSecond: Math.round(c.computrons / seconds),
    commandsPerSecond: round(c.commands / seconds, 1),
    corePercent: corePercent(c.computrons / seconds, nsPerComputron, ratio),
    memory: {
      slots: { used: m.slots, budget: budget.slots, percent: round((100 * m.slots) / budget.slots, 1) },
      chunk: { used: m.chunkBytes, budget: budget.chunkBytes, percent: round((100 * m.chunkBytes) / budget.chunkBytes, 1) },
      note: 'an upper bound: the live heap added by the pendant, its session and link at the hub, and the simulated air\'s events',
    },
  };
  log(`device pendant: ${out.computronsPerPeriod} computrons per ${out.periodMs} ms period, ${out.corePercent.low}–${out.corePercent.high} % of one ESP32 core; heap ${m.slots} slots, ${m.chunkBytes} chunk bytes of ${budget.slots} and ${budget.chunkBytes}`);
  return out;
}

/** bench/device.bench.ts as one script that defines `__D` on the XS engine. */
export async function bundleDevice(repo) {
  const entry = `
import { runDeviceWorkload, perDelivery, idleTicks, calibrationRun, deliveryWorld, deviceMemoryBench, stopMetering } from './bench/device.bench.ts';
import { uplinkCost, uplinkMemoryBench } from './bench/uplink.bench.ts';
import { robotLinkCost } from './bench/robot-link.bench.ts';
globalThis.__D = {
  robotLink: (n, codec) => JSON.stringify(robotLinkCost(n, codec)),
  world: null,
  memory: null,
  uplinkCost: (s) => JSON.stringify(uplinkCost(s)),
  uplinkMemorySetup: () => { const m = uplinkMemoryBench(); m.setup(); globalThis.__D.memory = m; return m.steps.length; },
  openWorld: (b) => { stopMetering(); globalThis.__D.world = deliveryWorld(b); },
  runWorld: (ms) => { globalThis.__D.world.run(ms); },
  delivered: () => globalThis.__D.world.hub.counters.delivered,
  memorySetup: () => { const m = deviceMemoryBench(); m.setup(); globalThis.__D.memory = m; return m.steps.length; },
  memoryStep: (i) => { globalThis.__D.memory.step(i); },
  workload: (s, w, sw) => JSON.stringify(runDeviceWorkload(s, w, sw)),
  perDelivery: (b, s, sw) => JSON.stringify(perDelivery(b, s, sw)),
  idleTicks: (n) => JSON.stringify(idleTicks(n)),
  calibrate: (n, runs) => {
    const timer = { now: () => performance.now() };
    calibrationRun(Math.max(1, n >> 3), timer);
    const out = [];
    for (let r = 0; r < runs; r++) out.push(calibrationRun(n, timer));
    return JSON.stringify(out);
  },
};
`;
  return bundleEntry(repo, entry, 'device-entry.ts');
}

/** One XS bundle of `entry` (TypeScript, resolved from the repository), as xsnap evaluates it. */
async function bundleEntry(repo, entry, sourcefile) {
  const out = await esbuild.build({
    stdin: { contents: entry, resolveDir: repo, sourcefile, loader: 'ts' },
    bundle: true,
    format: 'iife',
    target: 'es2022',
    platform: 'neutral',
    mainFields: ['module', 'main'],
    conditions: ['import', 'default'],
    write: false,
    logLevel: 'silent',
    banner: { js: '"use strict";' },
    // The device's opcodes. xsnap is built with XS's debugger support (mxDebug), under which
    // every script is compiled with a LINE opcode wherever the code reaches a new source line,
    // each counted as a computron, and a PROFILE opcode where a function object is made; the
    // device's release build (`mcconfig` without -d, so `xsc` without -d) has neither. With its
    // whitespace minified the bundle is nearly one line (a template literal's line breaks
    // stay): it keeps a FILE and a LINE opcode at each function's entry, 2 computrons a call
    // the device does not run, so its counts stay a little above the device's
    // (docs/performance.md "Fits the ESP32", Method).
    minifyWhitespace: true,
  });
  return out.outputFiles[0].text;
}

/**
 * One run of a CoreMark binary (EEMBC CoreMark as its own makefile builds it for this host:
 * `make PORT_DIR=linux`): its iterations a second. The 2K performance run's seeds, checked by
 * its list, matrix and state CRCs; a short run's "must execute for at least 10 secs" is a
 * reporting rule of CoreMark's, not an error here (the score is a ratio to this run's XS speed).
 */
export function runCoreMark(bin, iterations) {
  const out = execFileSync(bin, ['0x0', '0x0', '0x66', String(iterations), '7', '1', '2000'], { encoding: 'utf8', timeout: 300000 });
  // One thread's score: a build with MULTITHREAD > 1 reports every thread's iterations together.
  const ok =
    !/Parallel|\[1\]crc/.test(out) &&
    /2K performance run parameters/.test(out) &&
    /\[0\]crclist\s*:\s*0xe714/.test(out) &&
    /\[0\]crcmatrix\s*:\s*0x1fd7/.test(out) &&
    /\[0\]crcstate\s*:\s*0x8e3a/.test(out);
  const m = /Iterations\/Sec\s*:\s*([\d.]+)/.exec(out);
  if (!ok || !m) throw new Error(`${bin} did not give EEMBC CoreMark's 2K performance run with its known CRCs:\n${out}`);
  return Number(m[1]);
}

/**
 * The calibration's timed runs of the fixed XS workload, one worker for all of them; with a
 * CoreMark binary, a CoreMark run after each, so that both see the host as it is at that moment.
 */
async function calibrationRuns(bundle, n, runs, coreMark, coreMarkIterations) {
  const xs = new Xsnap({ onPrint: (l) => process.stderr.write(`[xs] ${l}\n`) });
  const out = [];
  const scores = [];
  try {
    await xs.evaluate(bundle);
    for (let r = 0; r < runs; r++) {
      const { value } = await xs.evaluateJson(`__D.calibrate(${n}, 1)`);
      out.push(JSON.parse(value)[0]);
      if (coreMark) scores.push(runCoreMark(coreMark, coreMarkIterations));
    }
  } finally {
    await xs.close();
  }
  return { runs: out, scores };
}

/** Evaluates `code` (returning a JSON string) in a fresh worker that has evaluated the bundle. */
export async function onXs(bundle, code) {
  const xs = new Xsnap({ onPrint: (l) => process.stderr.write(`[xs] ${l}\n`) });
  try {
    await xs.evaluate(bundle);
    const { value } = await xs.evaluateJson(code);
    return JSON.parse(value);
  } finally {
    await xs.close();
  }
}

export function median(xs) {
  const s = xs.slice().sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

function round(x, digits = 2) {
  if (!Number.isFinite(x)) return x;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** The share of one ESP32 core that `computronsPerSecond` takes, low and high, in percent. */
export function corePercent(computronsPerSecond, nsPerComputron, ratio) {
  return {
    low: round((computronsPerSecond * nsPerComputron * ratio.low) / 1e7, 2),
    high: round((computronsPerSecond * nsPerComputron * ratio.high) / 1e7, 2),
  };
}

/**
 * Every measurement of the `device` section. `memory` is the retained case `memory.device`'s
 * report (scripts/bench.mjs runs it with the other retained cases), or null. `allocation` holds
 * the op cases' bytes allocated per item on XS, where they ran.
 */
export async function deviceReport(repo, { quick = false, hostCoreMark = CALIBRATION.hostCoreMark, coreMark = null, memory = null, allocation = {}, log = () => {} } = {}) {
  const bundle = await bundleDevice(repo);
  const seconds = quick ? 1 : 10;
  const warmMs = quick ? 500 : 3000;

  // The calibration: ns per computron of a fixed workload (the hot route), median of repeated runs.
  const calRuns = quick ? 3 : 9;
  const calN = quick ? 100 : 2000;
  // With a CoreMark binary, the host's score is measured in the same run, interleaved: a score
  // from another day and an XS speed from this one would carry the host's load into the share.
  const { runs, scores } = await calibrationRuns(bundle, calN, calRuns, coreMark, quick ? 2000 : 60000);
  const nsRuns = runs.map((r) => (r.ms * 1e6) / r.computrons);
  const nsPerComputron = median(nsRuns);
  const measured = scores.length > 0;
  if (measured) hostCoreMark = median(scores);
  const ratio = { low: round(hostCoreMark / CALIBRATION.esp32CoreMark.high, 2), high: round(hostCoreMark / CALIBRATION.esp32CoreMark.low, 2) };
  const calibration = {
    nsPerComputron: round(nsPerComputron, 3),
    runsNsPerComputron: nsRuns.map((x) => round(x, 3)),
    computronsPerRun: median(runs.map((r) => r.computrons)),
    hostCoreMark: round(hostCoreMark, 1),
    /** Whether `hostCoreMark` was measured in this run (--coremark), not the reference machine's figure. */
    hostCoreMarkMeasured: measured,
    hostCoreMarkRuns: scores.map((x) => round(x, 1)),
    esp32CoreMark: { ...CALIBRATION.esp32CoreMark },
    esp32HostRatio: ratio,
    esp32NsPerComputron: { low: round(nsPerComputron * ratio.low, 1), high: round(nsPerComputron * ratio.high, 1) },
    source: [
      measured
        ? `host CoreMark ${round(hostCoreMark, 1)}: EEMBC CoreMark (${coreMark}), the median of ${scores.length} runs of its 2K performance run interleaved with this report's XS calibration runs`
        : hostCoreMark === CALIBRATION.hostCoreMark
          ? CALIBRATION.hostSource
          : `host CoreMark ${hostCoreMark} (--host-coremark)`,
      ...CALIBRATION.esp32Sources,
    ],
  };
  log(`device calibration: ${calibration.nsPerComputron} ns/computron on this host, ESP32 ${ratio.low}–${ratio.high}× slower`);
  if (!measured) {
    log(
      `device calibration: the host's CoreMark is ${hostCoreMark}, not measured in this run; the share of the core is only as right as ` +
        "this host's load now matches the day that score was taken: --coremark=PATH (or COREMARK) measures it alongside (docs/performance.md)",
    );
  }

  // The device's native byte work (device/native: each push's DATA frame written, the robot link's
  // CRC and values), timed here in C; XS counts the script around it (bench/README.md).
  const program = buildNativeHost(repo);
  let c;
  try {
    c = nativeTiming(program, quick ? { rounds: 200_000, runs: 3 } : { rounds: 2_000_000, runs: 5 });
  } finally {
    rmSync(dirname(program), { recursive: true, force: true });
  }
  /** Computrons at this run's ns per computron for what the C wrote: `frames` DATA frames with `values` values in all. */
  const dataEquiv = (n) => (n.frames * c.nsPerDataFrame + n.values * c.nsPerDataValue) / nsPerComputron;
  /**
   * Computrons for what the device's route (device/native/route.c) does in XS's C and XS on the
   * host cannot count: each read or write of a script object's property (a session's link, its
   * never-shed queue's size, its sentFrames) priced as the interpreter's property opcode, which
   * does the same lookup (NATIVE_PRICE.read), each call into script as a call opcode with its
   * arguments (NATIVE_PRICE.call). The route's own steps are a few ns of C a subscriber.
   */
  const routeEquiv = (r) => (r ? r.reads * NATIVE_PRICE.read + r.accessors * NATIVE_PRICE.accessor + r.calls * NATIVE_PRICE.call : 0);
  /** The same for the device's reader of the frequent client frames (device/native/fastreader.c): its reads and writes of the reader's fields. */
  const readerEquiv = (r) => (r ? r.reads * NATIVE_PRICE.read + r.accessors * NATIVE_PRICE.accessor : 0);
  /** The same for one of the device's ESP-NOW courses (device/native/espnowsent.c), by ESPNOW_PRICE. */
  const espEquiv = (t) => (t ? t.reads * ESPNOW_PRICE.read + t.elements * ESPNOW_PRICE.element + t.calls * ESPNOW_PRICE.call : 0);
  const native = {
    source: 'bench/native/native-host.c built with this host\'s cc -O2, the median of the runs (scripts/lib/native-host.mjs)',
    host: {
      nsPerDataFrame: round(c.nsPerDataFrame, 2),
      nsPerDataValue: round(c.nsPerDataValue, 3),
      nsPerCrcByte: round(c.nsPerCrcByte, 3),
      nsPerValue: round(c.nsPerValue, 3),
    },
  };

  const w = await onXs(bundle, `__D.workload(${seconds}, ${warmMs}, 'device')`);
  const ws = await onXs(bundle, `__D.workload(${seconds}, ${warmMs}, 'script')`);
  const dataPerSecond = (dataEquiv(w.native) + routeEquiv(w.route) + espEquiv(w.espnow.send)) / seconds;
  const readerPerSecond = readerEquiv(w.reader) / seconds;
  const espSentPerSecond = espEquiv(w.espnow.sent) / seconds;
  const cps = w.perSecond.total + dataPerSecond + readerPerSecond + espSentPerSecond;
  const workload = {
    seconds,
    warmMs,
    sampleWriter: 'device/native/samplewriter.c (each push\'s DATA frame written in C)',
    computronsPerSecond: Math.round(cps),
    split: {
      delivery: Math.round(w.perSecond.delivery + dataPerSecond),
      ingress: Math.round(w.perSecond.ingress + readerPerSecond),
      tick: Math.round(w.perSecond.tick),
      bindings: Math.round(w.perSecond.bindings + espSentPerSecond),
    },
    native: {
      dataFramesPerSecond: round(w.native.frames / seconds, 1),
      dataValuesPerSecond: round(w.native.values / seconds, 1),
      route: {
        pushesPerSecond: round(w.route.pushes / seconds, 1),
        subscribersPerSecond: round(w.route.subscribers / seconds, 1),
        readsPerSecond: round(w.route.reads / seconds, 1),
        accessorsPerSecond: round(w.route.accessors / seconds, 1),
        callsPerSecond: round(w.route.calls / seconds, 1),
        turnsPerSecond: round(w.route.turns / seconds, 1),
        price: { ...NATIVE_PRICE },
      },
      reader: {
        framesPerSecond: round(w.reader.frames / seconds, 1),
        readsPerSecond: round(w.reader.reads / seconds, 1),
        accessorsPerSecond: round(w.reader.accessors / seconds, 1),
      },
      espnow: {
        statusesPerSecond: round(w.espnow.statuses / seconds, 1),
        sendsPerSecond: round(w.espnow.sends / seconds, 1),
        sent: mapRound(w.espnow.sent),
        send: mapRound(w.espnow.send),
        price: { ...ESPNOW_PRICE },
        computronsPerSecond: Math.round((espEquiv(w.espnow.sent) + espEquiv(w.espnow.send)) / seconds),
      },
      computronsPerSecond: Math.round(dataPerSecond + readerPerSecond + espSentPerSecond),
    },
    detail: {
      bindingsBy: mapRound(w.bindingsBy),
      ingressBy: mapRound(w.ingressBy),
      deliveryByChannel: mapRound(w.deliveryByChannel),
    },
    counts: w.counts,
    deliveriesPerSecond: round(w.deliveries / seconds, 1),
    ticksPerSecond: w.ticks / seconds,
    meterOverhead: { interval: round(w.probeComputrons, 1), pausePair: round(w.pauseComputrons, 1), standInEntry: w.standInEntry },
    corePercent: corePercent(cps, nsPerComputron, ratio),
    allScript: {
      computronsPerSecond: Math.round(ws.perSecond.total),
      split: { delivery: Math.round(ws.perSecond.delivery), ingress: Math.round(ws.perSecond.ingress), tick: Math.round(ws.perSecond.tick), bindings: Math.round(ws.perSecond.bindings) },
      corePercent: corePercent(ws.perSecond.total, nsPerComputron, ratio),
    },
  };
  log(`device workload: ${workload.computronsPerSecond} computrons per simulated s, ${workload.corePercent.low}–${workload.corePercent.high} % of one ESP32 core`);

  // The robot link (device/robot-link.ts): the mix hands the robot's samples to the hub directly;
  // on the device each crosses the UART link, and so does each command for the robot. The device
  // does the link's byte work (CRC, values) in C (device/native/robotframe.c): its script part is
  // counted on XS, its C timed on this host and turned into computrons at this host's ns per
  // computron (the same ESP32/host ratio then applies to both). The all-script link is reported too.
  const rl = await onXs(bundle, `__D.robotLink(${quick ? 50 : 200}, 'script')`);
  const rd = await onXs(bundle, `__D.robotLink(${quick ? 50 : 200}, 'device')`);
  const nativeNs = (w) => w.crcBytes * c.nsPerCrcByte + w.values * c.nsPerValue;
  const equiv = (w) => nativeNs(w) / nsPerComputron;
  const devSample = Object.fromEntries(Object.entries(rd.perSample).map(([k, v]) => [k, v + equiv(rd.work.perSample[k])]));
  const devPublish = rd.perPublish + equiv(rd.work.perPublish);
  let devInbound = 0;
  for (const [k, hz] of Object.entries(rd.hz.perSample)) devInbound += devSample[k] * hz;
  const devOutbound = devPublish * rd.hz.publish;
  const devTotal = devInbound + devOutbound;
  const robotLink = {
    codec: 'device/native/robotframe.c (the CRC and the values in C; script otherwise)',
    perSample: mapRound(devSample),
    perPublish: Math.round(devPublish),
    perSecond: { inbound: Math.round(devInbound), outbound: Math.round(devOutbound), total: Math.round(devTotal) },
    corePercent: corePercent(devTotal, nsPerComputron, ratio),
    script: { perSample: mapRound(rd.perSample), perPublish: Math.round(rd.perPublish), perSecond: mapRound(rd.perSecond), codecCallsPerImuSample: rd.codecCalls.perSample.imu, codecCallsPerPublish: rd.codecCalls.perPublish },
    native: {
      host: { nsPerCrcByte: round(c.nsPerCrcByte, 3), nsPerValue: round(c.nsPerValue, 3), nsPerImuSampleTimed: round(c.nsPerImuSample, 1), nsPerPublishTimed: round(c.nsPerPublish, 1) },
      nsPerImuSample: round(nativeNs(rd.work.perSample.imu), 1),
      computronsPerImuSample: round(equiv(rd.work.perSample.imu), 1),
      computronsPerPublish: round(equiv(rd.work.perPublish), 1),
    },
    allScript: {
      perSample: mapRound(rl.perSample),
      perPublish: Math.round(rl.perPublish),
      perSecond: mapRound(rl.perSecond),
      corePercent: corePercent(rl.perSecond.total, nsPerComputron, ratio),
    },
  };
  workload.withRobotLink = {
    computronsPerSecond: Math.round(cps + devTotal),
    corePercent: corePercent(cps + devTotal, nsPerComputron, ratio),
  };
  log(`device robot link: ${robotLink.perSample.imu} computrons per imu sample received (${robotLink.native.computronsPerImuSample} of them the C's), ${robotLink.perPublish} per command sent (all in script: ${robotLink.allScript.perSample.imu} and ${robotLink.allScript.perPublish}); with the mix ${workload.withRobotLink.computronsPerSecond} computrons per s, ${workload.withRobotLink.corePercent.low}–${workload.withRobotLink.corePercent.high} % of one ESP32 core`);

  const perDelivery = {};
  const perDeliveryDetail = {};
  const perDeliveryAllScript = {};
  for (const b of BINDINGS) {
    const r = await onXs(bundle, `__D.perDelivery('${b}', ${quick ? 1 : 4}, 'device')`);
    const a = await onXs(bundle, `__D.perDelivery('${b}', ${quick ? 1 : 4}, 'script')`);
    const eq = dataEquiv(r.native) + routeEquiv(r.route) + espEquiv(r.espnow.sent) + espEquiv(r.espnow.send);
    perDelivery[b] = round((r.computrons + eq) / r.deliveries, 1);
    perDeliveryAllScript[b] = round(a.perDelivery, 1);
    perDeliveryDetail[b] = { computrons: Math.round(r.computrons), nativeComputrons: Math.round(eq), deliveries: r.deliveries, dataFrames: r.native.frames, allScript: { computrons: Math.round(a.computrons), deliveries: a.deliveries } };
    log(`device per delivery ${b}: ${perDelivery[b]} computrons (${perDeliveryAllScript[b]} all in script)`);
  }

  const ticks = await onXs(bundle, `__D.idleTicks(${quick ? 20 : 200})`);
  const perTick = w.perSecond.tick / workload.ticksPerSecond;
  const tick = {
    nothingDue: { median: Math.round(ticks.median), max: Math.round(ticks.max), sessions: ticks.sessions },
    inWorkload: Math.round(perTick),
    corePercent: corePercent(w.perSecond.tick, nsPerComputron, ratio),
  };

  const budget = creation(repo);
  let mem = null;
  if (memory && memory.xs) {
    const total = memory.xs.totals.device;
    mem = {
      slots: { used: total.slots, budget: budget.slots, percent: round((100 * total.slots) / budget.slots, 1) },
      chunk: { used: total.chunkBytes, budget: budget.chunkBytes, percent: round((100 * total.chunkBytes) / budget.chunkBytes, 1) },
      steps: Object.fromEntries(Object.entries(memory.xs.steps).map(([k, s]) => [k, { slots: s.slots, chunkBytes: s.chunkBytes, per: s.per, count: s.count }])),
    };
  } else {
    mem = { error: memory && memory.error ? memory.error : 'memory.device did not run (--only or --no-xs)' };
  }

  // The fleet uplink (off by default): computrons per message, and what it keeps alive.
  const up = await onXs(bundle, `__D.uplinkCost(${quick ? 2 : 10})`);
  const upMem = await retainedUplink(bundle);
  const perMessage = mapRound(up.perMessage);
  const perCore = (c) => ({ low: Math.round(1e9 / (c * calibration.esp32NsPerComputron.high)), high: Math.round(1e9 / (c * calibration.esp32NsPerComputron.low)) });
  const uplink = {
    seconds: quick ? 2 : 10,
    computronsPerMessage: perMessage,
    bytesPerMessage: mapRound(up.bytesPerMessage),
    // Messages a second that would take one whole ESP32 core (low: the slower calibration).
    messagesPerSecondPerCore: { health: perCore(perMessage.health), telemetryJson: perCore(perMessage.telemetryJson), telemetryCbor: perCore(perMessage.telemetryCbor) },
    runs: up.runs.map((r) => ({ variant: r.variant, computrons: Math.round(r.computrons), uplinkTick: Math.round(r.tickComputrons), published: r.published, unsent: r.unsent })),
    memory: {
      slots: upMem.slots,
      chunkBytes: upMem.chunkBytes,
      ...(mem.slots
        ? {
            withDevicePercent: {
              slots: round((100 * (mem.slots.used + upMem.slots)) / budget.slots, 1),
              chunk: round((100 * (mem.chunk.used + upMem.chunkBytes)) / budget.chunkBytes, 1),
            },
          }
        : {}),
    },
  };
  log(`device uplink: ${perMessage.health} computrons per health message, ${perMessage.telemetryJson} per JSON and ${perMessage.telemetryCbor} per CBOR telemetry message; ${upMem.slots} slots, ${upMem.chunkBytes} chunk bytes retained`);

  const targets = [];
  const target = (name, value, limit, unit) => targets.push({ name, value, limit, unit, met: Number.isFinite(value) && value <= limit });
  target('default mix, share of one ESP32 core (high end)', workload.corePercent.high, TARGETS.corePercentHigh, '%');
  for (const b of BINDINGS) target(`one delivery through ${b}`, perDelivery[b], TARGETS.perDelivery[b], 'computrons');
  for (const [name, bytes] of Object.entries(allocation)) target(`allocated per ${name}`, bytes, 0, 'bytes');
  // The tick's target has two forms: either holds it.
  targets.push({
    name: `tick() with 8 sessions and nothing due ≤ ${TARGETS.tickNothingDue} computrons, or the tick ≤ ${TARGETS.tickCorePercentHigh} % of a core`,
    value: { nothingDueMedian: tick.nothingDue.median, corePercentHigh: tick.corePercent.high },
    limit: { nothingDueMedian: TARGETS.tickNothingDue, corePercentHigh: TARGETS.tickCorePercentHigh },
    unit: 'computrons / %',
    met: tick.nothingDue.median <= TARGETS.tickNothingDue || tick.corePercent.high <= TARGETS.tickCorePercentHigh,
  });
  if (mem.slots) {
    target('slots with every binding live', mem.slots.percent, TARGETS.memoryPercent, '% of creation');
    target('chunk heap with every binding live', mem.chunk.percent, TARGETS.memoryPercent, '% of creation');
  }
  let pendant;
  try {
    pendant = await pendantReport(repo, { quick, nsPerComputron, ratio, log });
    target('pendant, share of one ESP32 core (high end)', pendant.corePercent.high, TARGETS.pendantCorePercentHigh, '%');
    target('pendant slots against pendant/manifest.json', pendant.memory.slots.percent, TARGETS.memoryPercent, '% of creation');
    target('pendant chunk heap against pendant/manifest.json', pendant.memory.chunk.percent, TARGETS.memoryPercent, '% of creation');
  } catch (e) {
    pendant = { error: e instanceof Error ? e.message : String(e) };
    log(`device pendant FAILED ${pendant.error}`);
  }
  return { workload, perDelivery, perDeliveryDetail, perDeliveryAllScript, native, tick, robotLink, memory: mem, uplink, pendant, calibration, targets };
}

function mapRound(o) {
  return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, Math.round(v)]));
}

/**
 * Slots allocated per delivery through `binding`: the per-delivery world (bench/device.bench.ts)
 * warmed up, then `ms` simulated ms in one evaluation, the engine's heap count read after a
 * collection before and after it. Nothing may be allocated per delivery, per ACK or per PING.
 */
export async function allocationPerDelivery(bundle, binding, ms) {
  const xs = new Xsnap({ onPrint: (l) => process.stderr.write(`[xs] ${l}\n`) });
  try {
    await xs.evaluate(bundle);
    await xs.evaluate(`__D.openWorld('${binding}'); __D.runWorld(200);`);
    // An evaluation holds a few slots of its own: the same evaluation running 0 ms is the baseline.
    const grows = async (n) => {
      const before = (await xs.evaluate('gc();')).meter.currentHeapCount;
      return (await xs.evaluate(`__D.runWorld(${n});`)).meter.currentHeapCount - before;
    };
    const base = await grows(0);
    const d0 = (await xs.evaluateJson('__D.delivered()')).value;
    const full = await grows(ms);
    const d1 = (await xs.evaluateJson('__D.delivered()')).value;
    return { slots: full - base, deliveries: d1 - d0 };
  } finally {
    await xs.close();
  }
}

// What a bundle's memory steps keep alive, in one worker: `setup` (an expression answering the
// step count), then every `__D.memoryStep(i)`, the live heap read around the steps.
async function retainedSteps(bundle, setup) {
  const xs = new Xsnap({ onPrint: (l) => process.stderr.write(`[xs] ${l}\n`) });
  try {
    await xs.evaluate(bundle);
    const { value: steps } = await xs.evaluateJson(setup);
    const before = await liveHeap(xs);
    for (let i = 0; i < steps; i++) await xs.evaluate(`__D.memoryStep(${i});`);
    const after = await liveHeap(xs);
    return { slots: after.slots - before.slots, chunkBytes: after.chunkBytes - before.chunkBytes };
  } finally {
    await xs.close();
  }
}

/** What the hub and its bindings keep alive at the device configuration (memory.device's steps, in one worker). */
export function retainedDevice(bundle) {
  return retainedSteps(bundle, '__D.memorySetup()');
}

/** What the fleet uplink keeps alive in the device hub (memory.uplink's step, in one worker). */
export function retainedUplink(bundle) {
  return retainedSteps(bundle, '__D.uplinkMemorySetup()');
}
