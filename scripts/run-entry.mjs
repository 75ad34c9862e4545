#!/usr/bin/env node
// `npm run fleet`, `npm run fleet-stop`, `npm run fleet-bench`: esbuild bundles one entry (and what it
// imports from the source tree; npm packages stay imports) into build/entry/NAME.js and runs it
// in this process with the remaining arguments, as scripts/start.mjs does for `npm start`.
// Type-checking stays with `npm run build` and `npm test`.
//
//   node scripts/run-entry.mjs host-sim/fleet.ts [options]
import { build } from 'esbuild';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const entry = process.argv[2];
if (!entry) {
  process.stderr.write('usage: node scripts/run-entry.mjs ENTRY.ts [options]\n');
  process.exit(2);
}
const outfile = join(root, 'build', 'entry', basename(entry).replace(/\.ts$/, '.js'));
try {
  await build({
    absWorkingDir: root,
    entryPoints: [join(root, entry)],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    sourcemap: 'linked',
    logLevel: 'warning',
    tsconfigRaw: {},
  });
} catch (e) {
  process.stderr.write(`${basename(entry)}: did not build: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
}
// The entry reads its own arguments from process.argv.slice(2).
process.argv.splice(2, 1);
await import(pathToFileURL(outfile).href);
