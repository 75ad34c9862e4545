// The dashboard page, bundled at start: esbuild turns page/app.ts (with uPlot's ESM build and
// hub/shed.ts, the same table the hub runs) and page/style.css (with uPlot's CSS) into
// build/dashboard/, and the server serves those bytes.

import { existsSync, readFileSync } from 'node:fs';
import { dirname, extname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

export interface PageFile {
  readonly type: string;
  readonly body: Buffer;
}

export interface PageFiles {
  /** URL path → file. */
  readonly files: ReadonlyMap<string, PageFile>;
  /** Where the bundle was written. */
  readonly outDir: string;
}

const TYPES: Readonly<Record<string, string>> = Object.freeze({
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
});

/** The repository root: the folder holding host-sim/dashboard/page, found from this file (source or build/). */
export function repoRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    if (existsSync(join(dir, 'host-sim', 'dashboard', 'page', 'index.html'))) return dir;
    dir = resolve(dir, '..');
  }
  throw new Error('dashboard: cannot find host-sim/dashboard/page/ above ' + dirname(fileURLToPath(import.meta.url)));
}

export async function bundlePage(root: string = repoRoot()): Promise<PageFiles> {
  const page = join(root, 'host-sim', 'dashboard', 'page');
  const outDir = join(root, 'build', 'dashboard');
  await build({
    absWorkingDir: root,
    entryPoints: [join(page, 'app.ts'), join(page, 'style.css')],
    outdir: outDir,
    bundle: true,
    format: 'esm',
    platform: 'browser',
    target: 'es2022',
    sourcemap: 'linked',
    logLevel: 'silent',
    // The repository's tsconfig is the Node build's; the page needs none of its settings.
    tsconfigRaw: {},
  });
  const files = new Map<string, PageFile>();
  const add = (url: string, path: string): void => {
    files.set(url, { type: TYPES[extname(path)] ?? 'application/octet-stream', body: readFileSync(path) });
  };
  add('/', join(page, 'index.html'));
  add('/index.html', join(page, 'index.html'));
  for (const name of ['app.js', 'app.js.map', 'style.css', 'style.css.map']) {
    if (existsSync(join(outDir, name))) add(`/${name}`, join(outDir, name));
  }
  return { files, outDir };
}
