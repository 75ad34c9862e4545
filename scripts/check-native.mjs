#!/usr/bin/env node
// Compile-checks the hub's native modules on the host, without an ESP32 toolchain:
//   1. bindings/espnow/native/espnow.c with the host C compiler (-Wall -Wextra -Werror), against
//      the XS headers that ship in @agoric/xsnap (xs.h, xsmc.h) and the stub ESP-IDF and Moddable
//      headers in bindings/espnow/native/stubs/, once per ESP-IDF send-callback signature (v6.0
//      and v5.4); again against a Moddable SDK's own headers when $MODDABLE is set (they poison
//      the non-xsmc accessors, which xsnap's older copy does not);
//   2. device/native/stopline.c the same way, against the stub headers in device/native/stubs/
//      (the SDK's digital-bank hooks included) without $MODDABLE, and against the SDK's XS and
//      digital-bank headers with it; each time once with the SDK's sdkconfig defaults (no task
//      watchdog) and once with device/sdkconfig/sdkconfig.defaults turned into definitions;
//   3. device/native/robotframe.c (the robot link's CRC and values),
//      device/native/samplewriter.c (a DATA frame's seq, t and values), device/native/route.c
//      (a push's common route), device/native/fastreader.c (the frequent client frames read) and
//      device/native/espnowsent.c (the ESP-NOW send status) and device/native/clock.c (the clock)
//      against the xsnap XS headers, and against the SDK's when $MODDABLE is set;
//   4. bindings/espnow/device.ts, device/stop-native.ts, device/stop-path.ts and
//      device/robot-native.ts, device/sample-native.ts, device/route-native.ts, device/fast-native.ts, device/espnow-native.ts and device/clock-native.ts with tsc (strict, ES2022, no Node or DOM types), since the host
//      tsconfig.json leaves device adapters out.
// Exits non-zero with the compiler's output on the first failure.
//
// Usage: node scripts/check-native.mjs [--source FILE.c] [--stopline FILE.c] [--skip-ts]
//   --source    compile FILE.c in place of espnow.c, and only it (the tests use it to show that a
//               broken copy fails)
//   --stopline  the same for stopline.c
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const args = process.argv.slice(2);
const at = args.indexOf('--source');
const source = at >= 0 && args[at + 1] ? resolve(args[at + 1]) : join(repo, 'bindings/espnow/native/espnow.c');
const atStop = args.indexOf('--stopline');
const stopSource = atStop >= 0 && args[atStop + 1] ? resolve(args[atStop + 1]) : join(repo, 'device/native/stopline.c');
// Either option names the one module to compile; neither: both.
const checkEspNow = at >= 0 || atStop < 0;
const checkStopLine = atStop >= 0 || at < 0;
const checkRobotFrame = at < 0 && atStop < 0;
const robotFrameSource = join(repo, 'device/native/robotframe.c');
const sampleWriterSource = join(repo, 'device/native/samplewriter.c');
const routeSource = join(repo, 'device/native/route.c');
const fastSource = join(repo, 'device/native/fastreader.c');
const espSentSource = join(repo, 'device/native/espnowsent.c');
const clockSource = join(repo, 'device/native/clock.c');
const skipTs = args.includes('--skip-ts');

const stubs = join(repo, 'bindings/espnow/native/stubs');
const stopStubs = join(repo, 'device/native/stubs');
const sdkconfigFile = join(repo, 'device/sdkconfig/sdkconfig.defaults');
const xsnapIncludes = join(repo, 'node_modules/@agoric/xsnap/moddable/xs/includes');
const cc = process.env.CC || 'cc';

function fail(title, text) {
  process.stderr.write(`check-native: ${title}\n${text}\n`);
  process.exit(1);
}

function compile(label, includes, defines, file = source, stubDir = stubs) {
  const argv = [
    '-std=gnu11',
    '-fsyntax-only',
    '-Wall',
    '-Wextra',
    '-Wno-unused-parameter',
    '-Werror',
    // The stubs come first: xsHost.h must be the ESP32 one, never a host platform's.
    `-I${stubDir}`,
    ...includes.map((i) => `-I${i}`),
    ...defines.map((d) => `-D${d}`),
    file,
  ];
  const r = spawnSync(cc, argv, { encoding: 'utf8' });
  if (r.error) fail(`cannot run ${cc}: ${r.error.message}`, '');
  if (r.status !== 0) fail(`${label}: ${cc} failed`, `${cc} ${argv.join(' ')}\n${r.stdout}${r.stderr}`);
  process.stdout.write(`  ok  ${label}\n`);
}

/**
 * The project's sdkconfig as compiler definitions, as the build's sdkconfig.h has them: `y` is 1,
 * a number stays, `n` (unset) is left out. Strings are not needed by the module and left out.
 */
function sdkconfigDefines(file) {
  const out = [];
  for (const line of readFileSync(file, 'utf8').split(/\r?\n/)) {
    const m = /^(CONFIG_[A-Z0-9_]+)=(.*)$/.exec(line.trim());
    if (!m) continue;
    if (m[2] === 'y') out.push(`${m[1]}=1`);
    else if (/^-?\d+$/.test(m[2])) out.push(`${m[1]}=${m[2]}`);
  }
  return out;
}

if (checkEspNow && !existsSync(source)) fail(`no such file: ${source}`, '');
if (checkStopLine && !existsSync(stopSource)) fail(`no such file: ${stopSource}`, '');
if (!existsSync(join(xsnapIncludes, 'xsmc.h'))) fail(`XS headers not found in ${xsnapIncludes} (npm ci installs @agoric/xsnap)`, '');
const moddable = process.env.MODDABLE;
const sdk = moddable && existsSync(join(moddable, 'xs/includes/xsmc.h')) ? moddable : null;
if (moddable && !sdk) process.stdout.write(`  --  MODDABLE=${moddable} holds no xs/includes/xsmc.h: the SDK checks are skipped\n`);

if (checkEspNow) {
  compile('espnow.c, xsnap XS headers, ESP-IDF 6.0', [xsnapIncludes], []);
  compile('espnow.c, xsnap XS headers, ESP-IDF 5.4 (older send callback)', [xsnapIncludes], ['STUB_IDF_MAJOR=5', 'STUB_IDF_MINOR=4']);
  compile('espnow.c, xsnap XS headers, debug build', [xsnapIncludes], ['mxDebug=1']);
  if (sdk) compile(`espnow.c, SDK XS headers in ${sdk}`, [join(sdk, 'xs/includes')], []);
}

if (checkStopLine) {
  const project = sdkconfigDefines(sdkconfigFile);
  if (!project.some((d) => d.startsWith('CONFIG_ESP_TASK_WDT_EN='))) fail(`${sdkconfigFile} does not turn the task watchdog on`, project.join('\n'));
  // Without the SDK: the stub digital-bank header beside the other stubs.
  const stubbed = [join(stopStubs, 'sdk'), xsnapIncludes];
  compile('stopline.c, stub digital bank, xsnap XS headers, SDK sdkconfig (no watchdog)', stubbed, [], stopSource, stopStubs);
  compile('stopline.c, stub digital bank, xsnap XS headers, project sdkconfig (task watchdog)', stubbed, project, stopSource, stopStubs);
  compile('stopline.c, stub digital bank, xsnap XS headers, debug build', stubbed, ['mxDebug=1', ...project], stopSource, stopStubs);
  if (sdk) {
    // With the SDK: its XS headers and its own digital-bank header, where the hooks are declared.
    const real = [join(sdk, 'xs/includes'), join(sdk, 'modules/io/digital')];
    if (!existsSync(join(sdk, 'modules/io/digital/digitalbank.h'))) fail(`no digitalbank.h in ${sdk}/modules/io/digital`, '');
    compile(`stopline.c, SDK XS and digital-bank headers in ${sdk}, SDK sdkconfig (no watchdog)`, real, [], stopSource, stopStubs);
    compile(`stopline.c, SDK XS and digital-bank headers in ${sdk}, project sdkconfig (task watchdog)`, real, project, stopSource, stopStubs);
  }
}

if (checkRobotFrame) {
  if (!existsSync(robotFrameSource)) fail(`no such file: ${robotFrameSource}`, '');
  compile('robotframe.c, xsnap XS headers', [xsnapIncludes], [], robotFrameSource, stopStubs);
  compile('robotframe.c, xsnap XS headers, debug build', [xsnapIncludes], ['mxDebug=1'], robotFrameSource, stopStubs);
  if (sdk) compile(`robotframe.c, SDK XS headers in ${sdk}`, [join(sdk, 'xs/includes')], [], robotFrameSource, stopStubs);
  if (!existsSync(sampleWriterSource)) fail(`no such file: ${sampleWriterSource}`, '');
  compile('samplewriter.c, xsnap XS headers', [xsnapIncludes], [], sampleWriterSource, stopStubs);
  compile('samplewriter.c, xsnap XS headers, debug build', [xsnapIncludes], ['mxDebug=1'], sampleWriterSource, stopStubs);
  if (sdk) compile(`samplewriter.c, SDK XS headers in ${sdk}`, [join(sdk, 'xs/includes')], [], sampleWriterSource, stopStubs);
  if (!existsSync(routeSource)) fail(`no such file: ${routeSource}`, '');
  compile('route.c, xsnap XS headers', [xsnapIncludes], [], routeSource, stopStubs);
  compile('route.c, xsnap XS headers, debug build', [xsnapIncludes], ['mxDebug=1'], routeSource, stopStubs);
  if (sdk) compile(`route.c, SDK XS headers in ${sdk}`, [join(sdk, 'xs/includes')], [], routeSource, stopStubs);
  if (!existsSync(fastSource)) fail(`no such file: ${fastSource}`, '');
  compile('fastreader.c, xsnap XS headers', [xsnapIncludes], [], fastSource, stopStubs);
  compile('fastreader.c, xsnap XS headers, debug build', [xsnapIncludes], ['mxDebug=1'], fastSource, stopStubs);
  if (sdk) compile(`fastreader.c, SDK XS headers in ${sdk}`, [join(sdk, 'xs/includes')], [], fastSource, stopStubs);
  if (!existsSync(espSentSource)) fail(`no such file: ${espSentSource}`, '');
  compile('espnowsent.c, xsnap XS headers', [xsnapIncludes], [], espSentSource, stopStubs);
  compile('espnowsent.c, xsnap XS headers, debug build', [xsnapIncludes], ['mxDebug=1'], espSentSource, stopStubs);
  if (sdk) compile(`espnowsent.c, SDK XS headers in ${sdk}`, [join(sdk, 'xs/includes')], [], espSentSource, stopStubs);
  if (!existsSync(clockSource)) fail(`no such file: ${clockSource}`, '');
  compile('clock.c, xsnap XS headers', [xsnapIncludes], [], clockSource, stopStubs);
  compile('clock.c, xsnap XS headers, debug build', [xsnapIncludes], ['mxDebug=1'], clockSource, stopStubs);
  if (sdk) compile(`clock.c, SDK XS headers in ${sdk}`, [join(sdk, 'xs/includes')], [], clockSource, stopStubs);
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
      files: [
        join(repo, 'bindings/espnow/device.ts'),
        join(repo, 'bindings/espnow/embedded.d.ts'),
        join(repo, 'device/stop-native.ts'),
        join(repo, 'device/stop-path.ts'),
        join(repo, 'device/robot-native.ts'),
        join(repo, 'device/sample-native.ts'),
        join(repo, 'device/route-native.ts'),
        join(repo, 'device/fast-native.ts'),
        join(repo, 'device/espnow-native.ts'),
        join(repo, 'device/clock-native.ts'),
        join(repo, 'device/tick.ts'),
        join(repo, 'bindings/espnow/link.ts'),
      ],
    }),
  );
  const r = spawnSync(process.execPath, [join(repo, 'node_modules/typescript/bin/tsc'), '-p', config], { encoding: 'utf8', cwd: repo });
  rmSync(dir, { recursive: true, force: true });
  if (r.status !== 0) fail('device.ts, stop-native.ts, robot-native.ts, sample-native.ts, route-native.ts, fast-native.ts, espnow-native.ts, clock-native.ts: tsc failed', `${r.stdout}${r.stderr}`);
  process.stdout.write('  ok  device.ts, stop-native.ts, stop-path.ts, robot-native.ts, sample-native.ts, route-native.ts, fast-native.ts, espnow-native.ts, clock-native.ts: tsc strict ES2022 without Node types\n');
}
