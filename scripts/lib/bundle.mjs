// The fast path from a TypeScript entry to a running program, without a full `tsc`: esbuild
// bundles the entry (and everything it imports from the source tree; npm packages stay imports)
// into build/<name>/<entry>.js in a fraction of a second, and the caller imports that. Used by
// `npm start`, `npm run sim`, `npm run shed-table` and the `hubctl` command. Type-checking stays
// with `npm run build` and `npm test`.
//
// A bundle is rebuilt only when it is missing or one of its inputs (listed in the metafile
// written beside it) is newer, so a second run starts at once. The files are written under a
// temporary name and renamed into place, so two runs at the same time never read half a bundle.
// The output lies two levels under the repository, as `tsc`'s does (build/<dir>/<file>.js), so
// code that finds files relative to itself (the scenario library, the dashboard page) works
// from either.
import { build } from 'esbuild';
import { mkdirSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

export const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

function mtimeMs(path) {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return -1;
  }
}

/** True when the bundle exists and no input listed in its metafile changed after it was made. */
function fresh(outfile, metafile) {
  const made = mtimeMs(outfile);
  if (made < 0) return false;
  let meta;
  try {
    meta = JSON.parse(readFileSync(metafile, 'utf8'));
  } catch {
    return false;
  }
  for (const input of Object.keys(meta.inputs ?? {})) {
    const t = mtimeMs(join(repo, input));
    if (t < 0 || t > made) return false;
  }
  return Object.keys(meta.inputs ?? {}).length > 0;
}

/**
 * Bundles `entry` (a path relative to the repository) into build/<name>/, unless the bundle is
 * fresh, and returns the bundle's path. Throws with esbuild's message when it does not build.
 */
export async function bundle(entry, name) {
  const outdir = join(repo, 'build', name);
  const outfile = join(outdir, basename(entry).replace(/\.ts$/, '.js'));
  const metafile = `${outfile}.meta.json`;
  if (fresh(outfile, metafile)) return outfile;
  const r = await build({
    absWorkingDir: repo,
    entryPoints: [join(repo, entry)],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    sourcemap: 'linked',
    logLevel: 'warning',
    tsconfigRaw: {},
    write: false,
    metafile: true,
  });
  mkdirSync(outdir, { recursive: true });
  const tmp = `.${process.pid}.tmp`;
  // The map first and the bundle last: a reader that sees the new bundle sees its map.
  const files = [...r.outputFiles].sort((a, b) => (a.path === outfile ? 1 : 0) - (b.path === outfile ? 1 : 0));
  for (const f of files) {
    writeFileSync(f.path + tmp, f.contents);
    renameSync(f.path + tmp, f.path);
  }
  writeFileSync(metafile + tmp, JSON.stringify(r.metafile));
  renameSync(metafile + tmp, metafile);
  return outfile;
}

/**
 * Bundles `entry` and runs it in this process, with this process's arguments after the
 * launcher's own (process.argv is left as it is: the entry reads process.argv.slice(2)).
 * `label` prefixes the message when the entry does not build.
 */
export async function runBundled(entry, name, label) {
  let outfile;
  try {
    outfile = await bundle(entry, name);
  } catch (e) {
    process.stderr.write(`${label}: ${entry} did not build: ${e instanceof Error ? e.message : String(e)}\n`);
    process.exit(1);
  }
  await import(pathToFileURL(outfile).href);
}
