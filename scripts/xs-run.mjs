#!/usr/bin/env node
// Runs the portable suites (test/core/*.test.ts, or the files named) on the real XS
// engine: esbuild bundles the harness, the suites and the platform-free code they
// import into one ES2022 script; xsnap-worker evaluates it; each case is reported.
// Exit code 1 if any case fails or the bundle does not run. `--json` prints the
// totals as one JSON line at the end for the test driver.
import { readdirSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as esbuild from 'esbuild';
import { Xsnap } from './lib/xsnap.mjs';

const repo = resolve(fileURLToPath(new URL('..', import.meta.url)));
const args = process.argv.slice(2);
const json = args.includes('--json');
const quiet = args.includes('--quiet');
let files = args.filter((a) => !a.startsWith('--'));
if (files.length === 0) {
  files = readdirSync(join(repo, 'test', 'core'))
    .filter((f) => f.endsWith('.test.ts'))
    .sort()
    .map((f) => join('test', 'core', f));
}

export async function bundleSuites(suiteFiles) {
  const imports = suiteFiles.map((f) => `import ${JSON.stringify('./' + relative(repo, resolve(repo, f)).split('\\').join('/'))};`);
  const entry = [
    `import { runAll } from './test/xs/harness.ts';`,
    ...imports,
    `globalThis.__xsDone = false;`,
    `runAll().then((r) => { globalThis.__xsResults = r; globalThis.__xsDone = true; }, (e) => { globalThis.__xsError = String(e); globalThis.__xsDone = true; });`,
  ].join('\n');
  const out = await esbuild.build({
    stdin: { contents: entry, resolveDir: repo, sourcefile: 'xs-entry.ts', loader: 'ts' },
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
    define: { 'process.env.NODE_ENV': '"production"' },
  });
  return out.outputFiles[0].text;
}

async function main() {
  const code = await bundleSuites(files);
  const xs = new Xsnap({ onPrint: (l) => process.stderr.write(`[xs] ${l}\n`) });
  let results;
  try {
    await xs.evaluate(code);
    const { value } = await xs.evaluateJson(
      `globalThis.__xsDone ? (globalThis.__xsError ? { error: globalThis.__xsError } : { results: globalThis.__xsResults }) : { error: 'suites did not finish within one turn (a pending timer or an unresolved promise)' }`,
    );
    if (value.error) throw new Error(value.error);
    results = value.results;
  } finally {
    await xs.close();
  }
  let passed = 0;
  let failed = 0;
  for (const r of results) {
    if (r.ok) {
      passed++;
      if (!quiet) console.log(`  ✓ [XS] ${r.name}`);
    } else {
      failed++;
      console.log(`  ✗ [XS] ${r.name}\n      ${String(r.error).split('\n').join('\n      ')}`);
    }
  }
  console.log(`XS engine: ${passed} passed, ${failed} failed (${files.length} suite files)`);
  if (json) console.log(JSON.stringify({ xsPassed: passed, xsFailed: failed }));
  process.exitCode = failed > 0 || passed === 0 ? 1 : 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main().catch((e) => {
    console.error(`XS run failed: ${e && e.message ? e.message : e}`);
    if (json) console.log(JSON.stringify({ xsPassed: 0, xsFailed: 1 }));
    process.exitCode = 1;
  });
}
