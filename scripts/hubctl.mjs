#!/usr/bin/env node
// `hubctl` (the package's bin; `npx hubctl …` after `npm ci`): tools/hubctl.ts bundled by esbuild
// on first use (and again when a source changed) into build/hubctl/, then run. No `tsc` needed.
// docs/tools.md.
import { runBundled } from './lib/bundle.mjs';

await runBundled('tools/hubctl.ts', 'hubctl', 'hubctl');
