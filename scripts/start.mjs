#!/usr/bin/env node
// A fast path for `npm start`: esbuild bundles host-sim/main.ts (and everything it imports from
// the source tree; npm packages stay imports) into build/start/main.js in a fraction of a second,
// and that runs in this process with the same arguments. Type-checking stays with `npm run build`
// and `npm test`; a full `tsc` alone takes longer than the 15 s in which `npm start` must serve.
//
//   node scripts/start.mjs [main.ts options]   (npm start -- [options])
import { build } from 'esbuild';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const outfile = join(root, 'build', 'start', 'main.js');

try {
  await build({
    absWorkingDir: root,
    entryPoints: [join(root, 'host-sim', 'main.ts')],
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
  process.stderr.write(`start: the simulator did not build: ${e instanceof Error ? e.message : String(e)}\n`);
  process.exit(1);
}
await import(pathToFileURL(outfile).href);
