#!/usr/bin/env node
// `npm test`: every check the project has, failing if any part fails.
//   1. type-check and compile (host config), then the device config
//   2. host suites under mocha: test/core (portable) and test/host (Node-only)
//   3. the portable suites again on the real XS engine
// The last line is the plain totals line CI reads: "N passed, M failed".
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import Mocha from 'mocha';
import { prepareEnvironment } from './lib/prepare.mjs';

const repo = resolve(fileURLToPath(new URL('..', import.meta.url)));
process.chdir(repo);

let passed = 0;
let failed = 0;
const problems = [];

function step(title) {
  console.log(`\n=== ${title}`);
}

function run(cmd, args, label) {
  const r = spawnSync(cmd, args, { stdio: 'inherit', cwd: repo });
  if (r.status === 0) {
    passed++;
    console.log(`  ✓ ${label}`);
    return true;
  }
  failed++;
  problems.push(label);
  console.log(`  ✗ ${label} (exit ${r.status ?? r.signal})`);
  return false;
}

function listTests(dir) {
  const full = join(repo, dir);
  if (!existsSync(full)) return [];
  const out = [];
  for (const e of readdirSync(full, { withFileTypes: true })) {
    const p = join(full, e.name);
    if (e.isDirectory()) out.push(...listTests(join(dir, e.name)));
    else if (e.name.endsWith('.test.js')) out.push(p);
  }
  return out.sort();
}

async function main() {
  step('environment');
  const env = await prepareEnvironment();
  for (const line of env.notes) console.log(`  ${line}`);

  step('type-check and compile');
  rmSync(join(repo, 'build'), { recursive: true, force: true });
  const tscOk = run(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.json'], 'tsc -p tsconfig.json (host)');
  if (existsSync(join(repo, 'tsconfig.device.json'))) {
    run(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.device.json'], 'tsc -p tsconfig.device.json (device, no emit)');
  }
  for (const check of env.extraChecks) run(check.cmd, check.args, check.label);
  if (!tscOk) return finish();

  step('host suites (Node, mocha)');
  const mocha = new Mocha({ reporter: 'spec', timeout: 120000, slow: 2000 });
  for (const f of [...listTests('build/test/core'), ...listTests('build/test/host')]) mocha.addFile(f);
  await mocha.loadFilesAsync();
  const stats = await new Promise((resolveRun) => {
    const runner = mocha.run(() => resolveRun(runner.stats));
  });
  passed += stats.passes;
  failed += stats.failures;
  if (stats.failures) problems.push(`${stats.failures} host case(s)`);
  if (stats.pending) {
    failed += stats.pending;
    problems.push(`${stats.pending} pending/skipped host case(s): tests never skip silently`);
  }

  step('portable suites on the XS engine (xsnap)');
  const r = spawnSync(process.execPath, ['scripts/xs-run.mjs', '--json', '--quiet'], { cwd: repo, encoding: 'utf8' });
  process.stdout.write(r.stdout.split('\n').filter((l) => !l.startsWith('{')).join('\n'));
  process.stderr.write(r.stderr);
  const last = r.stdout.trim().split('\n').filter((l) => l.startsWith('{')).pop();
  const xs = last ? JSON.parse(last) : { xsPassed: 0, xsFailed: 1 };
  if (r.status !== 0 && xs.xsFailed === 0) xs.xsFailed = 1;
  passed += xs.xsPassed;
  failed += xs.xsFailed;
  if (xs.xsFailed) problems.push(`${xs.xsFailed} XS case(s)`);
  console.log(`  ${xs.xsPassed} cases ran on the XS engine`);
  return finish();
}

function finish() {
  console.log('');
  if (problems.length) console.log(`Failures: ${problems.join('; ')}`);
  console.log(`${passed} passed, ${failed} failed`);
  process.exitCode = failed > 0 ? 1 : 0;
}

main().catch((e) => {
  console.error(e);
  failed++;
  finish();
});
