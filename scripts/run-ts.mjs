#!/usr/bin/env node
// Runs one TypeScript entry of the repository without a full `tsc`: bundled by esbuild
// (scripts/lib/bundle.mjs) into build/run/, then run in this process with the arguments that
// follow it. `npm run sim`, `npm run shed-table` and the fleet commands (`npm run fleet`, `fleet-stop`,
// `fleet-bench`) go through here.
//
//   node scripts/run-ts.mjs host-sim/cli.ts [options]
import { runBundled } from './lib/bundle.mjs';

const entry = process.argv[2];
if (entry === undefined || !entry.endsWith('.ts')) {
  process.stderr.write('usage: node scripts/run-ts.mjs ENTRY.ts [arguments]\n');
  process.exit(2);
}
// The entry reads its own arguments from process.argv.slice(2).
process.argv.splice(2, 1);
await runBundled(entry, 'run', 'run-ts');
