#!/usr/bin/env node
// A fast path for `npm start`: host-sim/main.ts bundled by esbuild (scripts/lib/bundle.mjs) into
// build/start/main.js, run in this process with the same arguments. Type-checking stays with
// `npm run build` and `npm test`; a full `tsc` alone takes longer than the 15 s in which
// `npm start` must serve.
//
//   node scripts/start.mjs [main.ts options]   (npm start -- [options])
import { runBundled } from './lib/bundle.mjs';

await runBundled('host-sim/main.ts', 'start', 'start');
