#!/usr/bin/env node
// Compile-checks the hub's native modules on the host, without an ESP32 toolchain:
//   1. bindings/espnow/native/espnow.c with the host C compiler (-Wall -Wextra -Werror), against
//      the XS headers that ship in @agoric/xsnap (xs.h, xsmc.h) and the stub ESP-IDF and Moddable
//      headers in bindings/espnow/native/stubs/, once per ESP-IDF send-callback signature (v6.0
//      and v5.4); again against a Moddable SDK's own headers when $MODDABLE is set (they poison
//      the non-xsmc accessors, which xsnap's older copy does not);
//   2. bindings/espnow/device.ts with tsc (strict, ES2022, no Node or DOM types), since the host
//      tsconfig.json leaves device adapters out.
// Exits non-zero with the compiler's output on the first failure.
//
// Usage: node scripts/check-native.mjs [--source FILE.c] [--skip-ts]
//   --source  compile FILE.c instead (the tests use it to show that a broken copy fails)
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const at = args.indexOf('--source');
const source = at >= 0 && args[at + 1] ? resolve(args[at + 1]) : join(repo, 'bindings/espnow/native/espnow.c');
const skipTs = args.includes('--skip-ts');

const stubs = join(repo, 'bindings/espnow/native/stubs');
const xsnapIncludes = join(repo, 'node_modules/@agoric/xsnap/moddable/xs/includes');
const cc = process.env.CC || 'cc';

function fail(title, text) {
  process.stderr.write(`check-native: ${title}\n${text}\n`);
  process.exit(1);
}

function compile(label, includes, defines) {
  const argv = [
    '-std=gnu11',
    '-fsyntax-only',
    '-Wall',
    '-Wextra',
    '-Wno-unused-parameter',
    '-Werror',
    // The stubs come first: xsHost.h must be the ESP32 one, never a host platform's.
    `-I${stubs}`,
    ...includes.map((i) => `-I${i}`),
    ...defines.map((d) => `-D${d}`),
    source,
  ];
  const r = spawnSync(cc, argv, { encoding: 'utf8' });
  if (r.error) fail(`cannot run ${cc}: ${r.error.message}`, '');
  if (r.status !== 0) fail(`${label}: ${cc} failed`, `${cc} ${argv.join(' ')}\n${r.stdout}${r.stderr}`);
  process.stdout.write(`  ok  ${label}\n`);
}

if (!existsSync(source)) fail(`no such file: ${source}`, '');
if (!existsSync(join(xsnapIncludes, 'xsmc.h'))) fail(`XS headers not found in ${xsnapIncludes} (npm ci installs @agoric/xsnap)`, '');

compile('espnow.c, xsnap XS headers, ESP-IDF 6.0', [xsnapIncludes], []);
compile('espnow.c, xsnap XS headers, ESP-IDF 5.4 (older send callback)', [xsnapIncludes], ['STUB_IDF_MAJOR=5', 'STUB_IDF_MINOR=4']);
compile('espnow.c, xsnap XS headers, debug build', [xsnapIncludes], ['mxDebug=1']);
const moddable = process.env.MODDABLE;
if (moddable && existsSync(join(moddable, 'xs/includes/xsmc.h'))) {
  compile(`espnow.c, SDK XS headers in ${moddable}`, [join(moddable, 'xs/includes')], []);
}

if (!skipTs) {
  // A throwaway tsconfig: `types: []` keeps @types/node out, which the command line cannot say.
  const dir = mkdtempSync(join(tmpdir(), 'check-native-'));
  const config = join(dir, 'tsconfig.json');
  writeFileSync(
    config,
    JSON.stringify({
      compilerOptions: {
        noEmit: true,
        strict: true,
        noUncheckedIndexedAccess: true,
        target: 'ES2022',
        lib: ['ES2022'],
        module: 'NodeNext',
        moduleResolution: 'NodeNext',
        types: [],
        skipLibCheck: true,
      },
      files: [join(repo, 'bindings/espnow/device.ts'), join(repo, 'bindings/espnow/embedded.d.ts')],
    }),
  );
  const r = spawnSync(process.execPath, [join(repo, 'node_modules/typescript/bin/tsc'), '-p', config], { encoding: 'utf8', cwd: repo });
  rmSync(dir, { recursive: true, force: true });
  if (r.status !== 0) fail('device.ts: tsc failed', `${r.stdout}${r.stderr}`);
  process.stdout.write('  ok  device.ts, tsc strict ES2022 without Node types\n');
}
