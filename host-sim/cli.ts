// npm run -s sim -- --scenario NAME [--seed N] [--json | --report FILE]
// npm run -s sim -- --scenario-file PATH [--seed N] [--json | --report FILE]
// npm run -s sim -- --list
//
// Runs one scenario headless, as fast as the host allows. With --json it prints ONE JSON report
// on stdout (the same bytes for the same scenario and seed: docs/simulator.md "The report");
// otherwise the report in words (host-sim/summary.ts), and with --report FILE the JSON goes to
// FILE beside it. Progress goes to stderr when a run takes more than a second of wall time.
// Exit status: 0 when every invariant held, 1 when one was violated, 2 on a usage or scenario
// error; a failing run prints the seed that replays it.

import { loadCatalog } from '../catalog/index.js';
import { DEFAULT_CATALOG } from '../catalog/default.js';
import { writeFileSync } from 'node:fs';
import { reportJson } from './report.js';
import { reportSummary } from './summary.js';
import { loadNamedScenario, loadScenarioFile, ScenarioError, scenarioNames, type Scenario } from './scenario.js';
import { Simulation } from './sim.js';
import { ArgReader, notAFlag, seedOf, UsageError } from './args.js';

interface Args {
  scenario?: string;
  file?: string;
  seed?: number;
  json: boolean;
  list: boolean;
  /** Where the JSON report goes beside the summary. */
  report?: string;
}

const USAGE = 'usage: sim (--scenario NAME | --scenario-file PATH) [--seed N] [--json | --report FILE] | --list';

function parse(argv: readonly string[]): Args {
  const a: Args = { json: false, list: false };
  const r = new ArgReader(argv);
  for (let arg = r.next(); arg !== undefined; arg = r.next()) {
    switch (arg) {
      case '--scenario':
        a.scenario = r.value(arg);
        break;
      case '--scenario-file':
        a.file = r.value(arg);
        break;
      case '--seed':
        a.seed = seedOf(r.value(arg));
        break;
      case '--json':
        a.json = true;
        break;
      case '--list':
        a.list = true;
        break;
      case '--report':
        a.report = r.value(arg);
        break;
      default:
        notAFlag(arg);
    }
  }
  if (!a.list && (a.scenario === undefined) === (a.file === undefined)) throw new UsageError('give exactly one of --scenario and --scenario-file');
  if (a.json && a.report !== undefined) throw new UsageError('--json prints the report; --report FILE writes it beside the summary: give one');
  return a;
}

async function main(): Promise<number> {
  let args: Args;
  try {
    args = parse(process.argv.slice(2));
  } catch (e) {
    if (e instanceof UsageError) {
      if (e.message) process.stderr.write(`sim: ${e.message}\n`);
      process.stderr.write(`${USAGE}\n`);
      return 2;
    }
    throw e;
  }
  if (args.list) {
    process.stdout.write(scenarioNames().join('\n') + '\n');
    return 0;
  }
  const catalog = loadCatalog(DEFAULT_CATALOG);
  let scenario: Scenario;
  try {
    scenario = args.file !== undefined ? loadScenarioFile(args.file, catalog) : loadNamedScenario(args.scenario as string, catalog);
  } catch (e) {
    if (e instanceof ScenarioError) {
      process.stderr.write(`sim: ${e.message}\n`);
      return 2;
    }
    throw e;
  }
  const sim = new Simulation(scenario, args.seed !== undefined ? { seed: args.seed } : {});
  // Wall time is measured for the progress line only; it never enters the report.
  const started = performance.now();
  const tty = process.stderr.isTTY === true;
  let shown = false;
  let lastLine = 0;
  const report = await sim.run((simMs) => {
    const wall = performance.now() - started;
    if (wall < 1000) return;
    // A terminal gets a live line; a log gets one line every 10 s of wall time.
    if (!tty && wall - lastLine < 10000 && simMs < scenario.durationMs) return;
    lastLine = wall;
    shown = true;
    const line = `sim: ${scenario.name} ${(simMs / 1000).toFixed(0)}/${(scenario.durationMs / 1000).toFixed(0)} s simulated, ${(simMs / wall).toFixed(1)}× real time`;
    process.stderr.write(tty ? `${line}\r` : `${line}\n`);
  });
  if (shown && tty) process.stderr.write('\n');
  if (args.report !== undefined) writeFileSync(args.report, reportJson(report));
  process.stdout.write(args.json ? reportJson(report) : reportSummary(report));
  if (!report['ok']) {
    process.stderr.write(`sim: invariant violated; replay with --scenario${args.file !== undefined ? `-file ${args.file}` : ` ${scenario.name}`} --seed ${sim.seed}\n`);
    return 1;
  }
  return 0;
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  (e: unknown) => {
    process.stderr.write(`sim: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exitCode = 2;
  },
);
