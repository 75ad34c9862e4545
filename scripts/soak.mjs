#!/usr/bin/env node
// The faulted simulation soak (issue 7 item 2; docs/performance.md "Simulator").
//
//   node scripts/soak.mjs [--count N] [--from SEED] [--json] [--jobs J] [--timeout-s S]
//
// Runs the random scenarios of seeds SEED..SEED+N−1 (defaults: 1000 from 1) with every invariant
// checked after every instant, on the compiled simulator (build/, from `npx tsc -p tsconfig.json`).
// Progress goes to stderr; a failing seed is named with the commands that replay it (the scenario
// is written to a temp file for the simulator's own command); a summary ends the run (with
// --json: one JSON object on stdout). Exit status 0 when every seed held every invariant, 1 when
// one did not, 2 on a usage error.
//
// Seeds run in J worker threads (default: one per CPU, at most 4); each seed is independent and
// deterministic, so the order they finish in changes nothing. A seed whose run does not finish
// within S seconds of wall time (default 120: a livelock in virtual time never returns to the
// event loop) fails as `hang`; its worker is ended and replaced.
import { existsSync } from 'node:fs';
import { cpus } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { isMainThread, parentPort, Worker } from 'node:worker_threads';

const repo = resolve(fileURLToPath(new URL('..', import.meta.url)));
const USAGE = 'usage: node scripts/soak.mjs [--count N] [--from SEED] [--json] [--jobs J] [--timeout-s S]';

function parse(argv) {
  const a = { count: 1000, from: 1, json: false, jobs: Math.max(1, Math.min(4, cpus().length)), timeoutS: 120 };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const int = () => {
      const v = argv[++i];
      if (v === undefined || !/^\d+$/.test(v) || !Number.isSafeInteger(Number(v))) throw new Error(`${arg} needs a non-negative integer, got ${JSON.stringify(v)}`);
      return Number(v);
    };
    if (arg === '--count') a.count = int();
    else if (arg === '--from') a.from = int();
    else if (arg === '--jobs') a.jobs = int();
    else if (arg === '--timeout-s') a.timeoutS = int();
    else if (arg === '--json') a.json = true;
    else if (arg === '-h' || arg === '--help') throw new Error('');
    else throw new Error(`unknown argument ${JSON.stringify(arg)}`);
  }
  if (a.count < 1) throw new Error('--count must be at least 1');
  if (a.jobs < 1) throw new Error('--jobs must be at least 1');
  if (a.timeoutS < 1) throw new Error('--timeout-s must be at least 1');
  return a;
}

async function load(rel) {
  const file = join(repo, 'build', rel);
  if (!existsSync(file)) throw new Error(`${file} is missing: compile first (npx tsc -p tsconfig.json)`);
  return import(pathToFileURL(file).href);
}

function failedResult(seed, check, detail) {
  return { seed, ok: false, violations: [{ check, count: 1, examples: [{ tMs: 0, link: '-', channel: '-', detail }] }], simulatedMs: 0, kernelEvents: 0, wallMs: 0, exercised: {} };
}

// ------------------------------------------------------------------------------------ worker

async function worker() {
  const { loadCatalog } = await load('catalog/index.js');
  const { DEFAULT_CATALOG } = await load('catalog/default.js');
  const soak = await load('host-sim/soak.js');
  const catalog = loadCatalog(DEFAULT_CATALOG);
  parentPort.on('message', async (seed) => {
    let r;
    try {
      r = await soak.runSeed(seed, catalog);
    } catch (e) {
      // A generator or simulator exception fails the seed like a violation does.
      r = failedResult(seed, 'exception', e && e.stack ? e.stack : String(e));
    }
    parentPort.postMessage(r);
  });
  parentPort.postMessage('ready');
}

// ------------------------------------------------------------------------------------ main

async function main() {
  let args;
  try {
    args = parse(process.argv.slice(2));
  } catch (e) {
    if (e.message) process.stderr.write(`soak: ${e.message}\n`);
    process.stderr.write(`${USAGE}\n`);
    return 2;
  }
  const soak = await load('host-sim/soak.js');
  const results = [];
  const started = performance.now();
  let lastLine = 0;
  const tty = process.stderr.isTTY === true;
  const seeds = [];
  for (let seed = args.from; seed < args.from + args.count; seed++) seeds.push(seed);
  let next = 0;

  const done = (r) => {
    results.push(r);
    if (!r.ok) {
      let replay;
      try {
        replay = soak.writeReplayFile(r.seed);
      } catch {
        replay = undefined;
      }
      process.stderr.write(`${tty ? '\n' : ''}soak: FAILED ${soak.describeFailure(r, replay)}\n`);
    }
    const wall = performance.now() - started;
    if (tty || wall - lastLine >= 10000 || results.length === args.count) {
      lastLine = wall;
      const failed = results.filter((x) => !x.ok).length;
      const line = `soak: ${results.length}/${args.count} seeds (${args.from}..${args.from + args.count - 1}), ${failed} failed, ${(wall / 1000).toFixed(1)} s`;
      process.stderr.write(tty ? `\r${line}` : `${line}\n`);
    }
  };

  // One lane per job: a worker thread that runs seeds one at a time, replaced after a hang.
  const lane = () =>
    new Promise((resolveLane) => {
      let w = null;
      let seed = -1;
      let timer = null;
      const feed = () => {
        if (next >= seeds.length) {
          w.terminate();
          resolveLane();
          return;
        }
        seed = seeds[next++];
        timer = setTimeout(() => {
          done(failedResult(seed, 'hang', `no result after ${args.timeoutS} s of wall time (a livelock in virtual time?)`));
          const old = w;
          w = null;
          old.terminate().then(start);
        }, args.timeoutS * 1000);
        w.postMessage(seed);
      };
      const start = () => {
        w = new Worker(fileURLToPath(import.meta.url));
        w.on('message', (m) => {
          if (m === 'ready') return feed();
          clearTimeout(timer);
          done(m);
          feed();
        });
        w.on('error', (e) => {
          clearTimeout(timer);
          done(failedResult(seed, 'exception', e && e.stack ? e.stack : String(e)));
          w = null;
          start();
        });
      };
      start();
    });
  await Promise.all(Array.from({ length: Math.min(args.jobs, seeds.length) }, lane));
  if (tty) process.stderr.write('\n');
  results.sort((a, b) => a.seed - b.seed);
  const summary = soak.summarize(args.from, results, performance.now() - started);
  if (args.json) process.stdout.write(JSON.stringify(summary) + '\n');
  else {
    const lines = [
      `soak: seeds ${args.from}..${args.from + args.count - 1}: ${summary.passed}/${summary.count} held every invariant in ${summary.wallS} s of wall time with ${args.jobs} job(s) (${summary.simulatedS} s simulated, ${summary.kernelEvents} kernel events)`,
    ];
    for (const [k, n] of Object.entries(summary.byInvariant)) if (n > 0) lines.push(`  ${k}: ${n}`);
    if (summary.failed.length > 0) lines.push(`  failed seeds: ${summary.failed.join(', ')}`);
    lines.push(`  exercised: ${Object.entries(summary.exercised).map(([k, n]) => `${k} ${n}`).join(', ')}`);
    process.stdout.write(lines.join('\n') + '\n');
  }
  return summary.failed.length > 0 ? 1 : 0;
}

if (isMainThread) {
  main().then(
    (code) => {
      process.exitCode = code;
    },
    (e) => {
      process.stderr.write(`soak: ${e && e.stack ? e.stack : String(e)}\n`);
      process.exitCode = 2;
    },
  );
} else {
  worker().catch((e) => {
    throw e;
  });
}
