// The faulted simulation soak (issue 7 item 2): seeds from..from+count−1, each a random scenario
// (random-scenario.ts) run to its end with every invariant checked after every instant (the
// tap's per-frame checks, host-sim/invariants.ts, and the ESTOP bound in the report). A failing
// seed names the commands that replay it. scripts/soak.mjs is the command line; the test runs a
// fixed range inside npm test.

import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { CatalogIndex } from '../catalog/index.js';
import { randomScenario, randomScenarioDoc } from './random-scenario.js';
import { INVARIANTS } from './report.js';
import { Simulation } from './sim.js';

export interface SeedViolation {
  readonly check: string;
  readonly count: number;
  readonly examples: readonly { tMs: number; link: string; channel: string; detail: string }[];
}

export interface SeedResult {
  readonly seed: number;
  readonly ok: boolean;
  readonly violations: readonly SeedViolation[];
  readonly simulatedMs: number;
  readonly kernelEvents: number;
  /** Wall time of the run, ms (for the summary only; never in a report). */
  readonly wallMs: number;
  /** What the run exercised, for the summary. */
  readonly exercised: Readonly<Record<string, number>>;
}

/** The command that replays one seed of the soak. */
export function replayCommand(seed: number): string {
  return `node scripts/soak.mjs --count 1 --from ${seed}`;
}

/** Writes the seed's scenario to a temporary file and returns the simulator command that replays it. */
export function writeReplayFile(seed: number, dir?: string): { file: string; command: string } {
  const d = dir ?? mkdtempSync(join(tmpdir(), 'soak-'));
  const file = join(d, `soak-${seed}.json`);
  writeFileSync(file, JSON.stringify(randomScenarioDoc(seed), null, 2) + '\n');
  return { file, command: `npm run -s sim -- --scenario-file ${file} --json` };
}

type J = Record<string, unknown>;

/** Runs one seed. */
export async function runSeed(seed: number, catalog: CatalogIndex): Promise<SeedResult> {
  const scenario = randomScenario(seed, catalog);
  const sim = new Simulation(scenario);
  const t0 = performance.now();
  const report = await sim.run();
  const wallMs = performance.now() - t0;
  const inv = report['invariants'] as Record<string, { count: number; examples: SeedViolation['examples'] }>;
  const violations: SeedViolation[] = [];
  for (const name of INVARIANTS) {
    const v = inv[name];
    if (v && v.count > 0) violations.push({ check: name, count: v.count, examples: v.examples });
  }
  const hub = report['hub'] as J;
  const k = sim.hub.counters;
  const links = Object.values(report['links'] as Record<string, J>);
  const estops = report['estops'] as { deliveries: { outcome: string; judged: boolean }[] }[];
  return {
    seed,
    ok: report['ok'] === true,
    violations,
    simulatedMs: sim.nowMs,
    kernelEvents: sim.kernel.processed,
    wallMs,
    exercised: {
      clients: sim.clients.length,
      connections: sim.connections.length,
      parks: k.parks,
      stale: (report['stale'] as unknown[]).length,
      resumes: k.resumes,
      reclaims: k.reclaims,
      estops: k.estops,
      estopDeliveriesJudged: estops.reduce((n, e) => n + e.deliveries.filter((x) => x.judged && x.outcome === 'delivered').length, 0),
      samplesJudged: links.reduce((n, l) => n + (((l['sampleLate'] as J | undefined)?.['judged'] as number | undefined) ?? 0), 0),
      grantsAnnounced: k.grantsAnnounced,
      decimated: k.decimated,
      shedDrops: k.shedDrops,
      neverShedOverflows: k.neverShedOverflows,
      level2Links: links.filter((l) => (l['maxLevel'] as number | undefined) === 2).length,
      malformedCloses: ((hub['log'] as Record<string, number>)['malformed-close'] ?? 0),
      noSlots: ((hub['nacks'] as Record<string, number>)['NO_SLOTS'] ?? 0),
    },
  };
}

/** One line naming a failing seed, its violations and how to replay it. */
export function describeFailure(r: SeedResult, replayFile?: { file: string; command: string }): string {
  const lines = [`seed ${r.seed}: ${r.violations.map((v) => `${v.check} ×${v.count}`).join(', ')}`];
  for (const v of r.violations) for (const e of v.examples.slice(0, 2)) lines.push(`  ${v.check} at ${e.tMs} ms on ${e.link} (${e.channel}): ${e.detail}`);
  lines.push(`  replay: ${replayCommand(r.seed)}`);
  if (replayFile) lines.push(`  or:     ${replayFile.command}`);
  return lines.join('\n');
}

export interface SoakSummary {
  readonly from: number;
  readonly count: number;
  readonly passed: number;
  readonly failed: readonly number[];
  readonly byInvariant: Readonly<Record<string, number>>;
  readonly simulatedS: number;
  readonly wallS: number;
  readonly kernelEvents: number;
  readonly slowestSeed: { seed: number; wallMs: number } | null;
  readonly exercised: Readonly<Record<string, number>>;
}

export function summarize(from: number, results: readonly SeedResult[], wallMs: number): SoakSummary {
  const byInvariant: Record<string, number> = {};
  for (const name of INVARIANTS) byInvariant[name] = 0;
  const exercised: Record<string, number> = {};
  let sim = 0;
  let events = 0;
  let slowest: SeedResult | null = null;
  for (const r of results) {
    for (const v of r.violations) byInvariant[v.check] = (byInvariant[v.check] ?? 0) + v.count;
    for (const [k, n] of Object.entries(r.exercised)) exercised[k] = (exercised[k] ?? 0) + n;
    sim += r.simulatedMs;
    events += r.kernelEvents;
    if (!slowest || r.wallMs > slowest.wallMs) slowest = r;
  }
  return {
    from,
    count: results.length,
    passed: results.filter((r) => r.ok).length,
    failed: results.filter((r) => !r.ok).map((r) => r.seed),
    byInvariant,
    simulatedS: Math.round(sim) / 1000,
    wallS: Math.round(wallMs) / 1000,
    kernelEvents: events,
    slowestSeed: slowest ? { seed: slowest.seed, wallMs: Math.round(slowest.wallMs) } : null,
    exercised,
  };
}
