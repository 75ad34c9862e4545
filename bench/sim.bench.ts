// The simulator's numbers for the benchmark report (issue 7 item 4), Node only: this module is
// not a case of bench/index.ts (it is never bundled for XS); scripts/bench.mjs calls `simBench`
// and puts what it returns under `sim` in the JSON report.
//
//   speed       the default scenario (eight clients over every binding, one minute): simulated
//               seconds per wall second, median of `runs` runs after one untimed warm-up run,
//               each a fresh Simulation with every invariant checked after every instant;
//   estop       ESTOP latency (the latch → the client received the frame) per binding, in
//               `estop-under-congestion` (every link at level 2; the button and a client's ESTOP)
//               and in `congested-ble` with a button press added at 20 s (the slow BLE link was at
//               level 2 until 6.8 s): p50/p95/max over every delivery, with the largest bound;
//   age         sample age at the client (receipt − the sample's t) of every STREAM/STATE sample,
//               per binding, in the same two runs.
//
// The simulated numbers are deterministic (fixed seeds); only `speed` depends on the machine.

import { loadCatalog, type CatalogIndex } from '../catalog/index.js';
import { DEFAULT_CATALOG } from '../catalog/default.js';
import { ChannelClass } from '../catalog/schema.js';
import { loadNamedScenario, validateScenario, type Scenario } from '../host-sim/scenario.js';
import { Simulation } from '../host-sim/sim.js';
import type { Samples } from '../host-sim/stats.js';

export interface Dist {
  count: number;
  p50: number | null;
  p95: number | null;
  max: number | null;
}

export interface SimBenchReport {
  speed: { scenario: string; simulatedS: number; runs: number; wallMs: number[]; simSecondsPerWallSecond: number; kernelEventsPerWallSecond: number };
  congestion: Record<string, { seed: number; note: string; estopMs: Record<string, Dist & { maxBoundMs: number | null }>; sampleAgeMs: Record<string, Dist> }>;
}

function median(xs: readonly number[]): number {
  const s = xs.slice().sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

function round(x: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** Nearest-rank percentiles, as the simulator's report computes them. */
function dist(values: number[]): Dist {
  if (values.length === 0) return { count: 0, p50: null, p95: null, max: null };
  const s = values.slice().sort((a, b) => a - b);
  const at = (p: number): number => s[Math.min(s.length, Math.max(1, Math.ceil(p * s.length))) - 1] as number;
  return { count: s.length, p50: round(at(0.5)), p95: round(at(0.95)), max: round(s[s.length - 1] as number) };
}

/** Every value a Samples collector holds (it keeps them all, for exact percentiles). */
function valuesOf(x: Samples): number[] {
  const raw = x as unknown as { data: Float64Array; n: number };
  return Array.from(raw.data.subarray(0, raw.n));
}

async function congestionRun(scenario: Scenario, note: string, catalog: CatalogIndex): Promise<SimBenchReport['congestion'][string]> {
  const sim = new Simulation(scenario);
  const report = await sim.run();
  if (report['ok'] !== true) throw new Error(`${scenario.name}: an invariant was violated (npm run -s sim -- --scenario ${scenario.name})`);
  const estop = new Map<string, { lat: number[]; bound: number }>();
  for (const e of report['estops'] as { deliveries: { binding: string; latencyMs: number | null; boundMs: number }[] }[]) {
    for (const d of e.deliveries) {
      const b = estop.get(d.binding) ?? { lat: [], bound: 0 };
      if (d.latencyMs !== null) b.lat.push(d.latencyMs);
      b.bound = Math.max(b.bound, d.boundMs);
      estop.set(d.binding, b);
    }
  }
  const ages = new Map<string, number[]>();
  for (const c of sim.clients) {
    // Each of these clients keeps one connection for the whole run.
    const binding = c.connections[0]?.binding;
    if (!binding) continue;
    for (const [id, s] of c.subs) {
      const ch = catalog.byId(id);
      if (!ch || ch.cls === ChannelClass.EVENT) continue;
      const list = ages.get(binding) ?? [];
      for (const v of valuesOf(s.ages)) list.push(v);
      ages.set(binding, list);
    }
  }
  const estopMs: Record<string, Dist & { maxBoundMs: number | null }> = {};
  for (const [b, x] of [...estop].sort()) estopMs[b] = { ...dist(x.lat), maxBoundMs: round(x.bound) };
  const sampleAgeMs: Record<string, Dist> = {};
  for (const [b, xs] of [...ages].sort()) sampleAgeMs[b] = dist(xs);
  return { seed: sim.seed, note, estopMs, sampleAgeMs };
}

/** The simulator section of the benchmark report. `runs` ≥ 3 for the speed median (1 with --quick). */
export async function simBench(runs: number): Promise<SimBenchReport> {
  const catalog = loadCatalog(DEFAULT_CATALOG);
  const def = loadNamedScenario('default', catalog);
  const wallMs: number[] = [];
  const eventRates: number[] = [];
  // One run first, untimed, so that the timed ones measure compiled code rather than the JIT warming up.
  if (runs > 1) await new Simulation(def).run();
  for (let i = 0; i < runs; i++) {
    const sim = new Simulation(def);
    const t0 = performance.now();
    await sim.run();
    const ms = performance.now() - t0;
    wallMs.push(round(ms, 1));
    eventRates.push(sim.kernel.processed / (ms / 1000));
  }
  const speed = {
    scenario: 'default',
    simulatedS: def.durationMs / 1000,
    runs,
    wallMs,
    simSecondsPerWallSecond: round(def.durationMs / median(wallMs), 2),
    kernelEventsPerWallSecond: Math.round(median(eventRates)),
  };
  const euc = loadNamedScenario('estop-under-congestion', catalog);
  const cb = loadNamedScenario('congested-ble', catalog);
  // congested-ble has no ESTOP of its own: the button is pressed at 20 s, after the slow link recovered.
  const cbDoc = JSON.parse(JSON.stringify(cb)) as { events: unknown[] };
  cbDoc.events.push({ atMs: 20000, type: 'button', held: true }, { atMs: 20500, type: 'button', held: false });
  const congestion = {
    'estop-under-congestion': await congestionRun(euc, 'as in the library', catalog),
    'congested-ble': await congestionRun(validateScenario(cbDoc, catalog), 'with the hub button pressed at 20 s (held 0.5 s)', catalog),
  };
  return { speed, congestion };
}
