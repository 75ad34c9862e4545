// The native stop line's build side, checked on the host: its C compiles with -Wall -Wextra
// -Werror against stubs (and the SDK's headers when $MODDABLE is set) on both sides of the
// watchdog's #if, and fails on copies broken the ways a change could break it; the manifest
// builds it for esp32 only and names the project's sdkconfig, which turns the task watchdog on
// with a reset on timeout and a timeout above the heartbeat guard's; the configuration keeps the
// guard inside that.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DeviceConfigError, DEVICE_DEFAULTS, resolveDeviceConfig, STOP_GUARD_CONFIG_MAX_MS, STOP_GUARD_CONFIG_MIN_MS } from '../../device/config.js';
import { STOP_GUARD_MAX_MS, STOP_GUARD_MIN_MS } from '../../device/stop-path.js';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const script = join(repo, 'scripts/check-native.mjs');
const source = join(repo, 'device/native/stopline.c');

function check(...args: string[]): { status: number | null; out: string } {
  const r = spawnSync(process.execPath, [script, ...args], { encoding: 'utf8', cwd: repo });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

function broken(edit: (text: string) => string): { status: number | null; out: string } {
  const dir = mkdtempSync(join(tmpdir(), 'stopline-broken-'));
  try {
    const file = join(dir, 'stopline.c');
    const text = readFileSync(source, 'utf8');
    const changed = edit(text);
    assert.notEqual(changed, text, 'the edit changed the source');
    writeFileSync(file, changed);
    return check('--stopline', file, '--skip-ts');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The sdkconfig.defaults lines as a map (comments and blank lines left out). */
function sdkconfig(file: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of readFileSync(file, 'utf8').split(/\r?\n/)) {
    const m = /^(CONFIG_[A-Z0-9_]+)=(.*)$/.exec(line.trim());
    if (m) out.set(m[1] as string, m[2] as string);
  }
  return out;
}

type Json = Record<string, any>;

describe('device/native/stopline.c: host compile check', function () {
  this.timeout(60000);

  it('compiles with and without the task watchdog, against stubs (and the SDK when $MODDABLE is set), and the wrapper type-checks without Node types', () => {
    const r = check();
    assert.equal(r.status, 0, r.out);
    assert.match(r.out, /ok {2}stopline\.c, stub digital bank, xsnap XS headers, SDK sdkconfig \(no watchdog\)/);
    assert.match(r.out, /ok {2}stopline\.c, stub digital bank, xsnap XS headers, project sdkconfig \(task watchdog\)/);
    assert.match(r.out, /stop-native\.ts/);
    if (process.env.MODDABLE && existsSync(join(process.env.MODDABLE, 'modules/io/digital/digitalbank.h'))) {
      assert.match(r.out, /ok {2}stopline\.c, SDK XS and digital-bank headers/);
    }
  });

  it('fails when the interrupt function reaches for the XS machine (it has none to reach: no XS call can run there)', () => {
    const r = broken((t) => t.replace('\tuint8_t post = 0;\n\t(void)refcon;\n', '\tuint8_t post = 0;\n\t(void)refcon;\n\txsTrace("edge\\n");\n'));
    assert.notEqual(r.status, 0);
    assert.match(r.out, /error: .the. undeclared/);
    assert.match(r.out, /stoplineButtonEdge/);
  });

  it('fails when the interrupt function does not have the digital bank hook’s signature', () => {
    const r = broken((t) => t.replace('static uint8_t IRAM_ATTR stoplineButtonEdge(void *refcon)', 'static uint8_t IRAM_ATTR stoplineButtonEdge(uint32_t refcon)'));
    assert.notEqual(r.status, 0);
    assert.match(r.out, /stoplineButtonEdge|incompatible/);
  });

  it('fails on a GPIO call that does not exist', () => {
    const r = broken((t) => t.replace('gpio_set_level((gpio_num_t)r->stopPin, r->stopLevel);\n\t\tr->pending |= kTripButton;', 'gpio_write_level((gpio_num_t)r->stopPin, r->stopLevel);\n\t\tr->pending |= kTripButton;'));
    assert.notEqual(r.status, 0);
    assert.match(r.out, /gpio_write_level/);
  });

  it('compiles the watchdog’s side of the #if too: a fault there fails only with the project’s sdkconfig', () => {
    const r = broken((t) => t.replace('xsmcSetInteger(xsResult, CONFIG_ESP_TASK_WDT_TIMEOUT_S);', 'xsmcSetInteger(xsResult, CONFIG_ESP_TASK_WDT_TIMEOUT_SECONDS);'));
    assert.notEqual(r.status, 0);
    assert.match(r.out, /ok {2}stopline\.c, stub digital bank, xsnap XS headers, SDK sdkconfig \(no watchdog\)/);
    assert.match(r.out, /project sdkconfig \(task watchdog\): cc failed|CONFIG_ESP_TASK_WDT_TIMEOUT_SECONDS/);
  });
});

describe('the native stop line and the task watchdog in the build', () => {
  const root = JSON.parse(readFileSync(join(repo, 'manifest.json'), 'utf8')) as Json;
  const native = JSON.parse(readFileSync(join(repo, 'device/native/manifest.json'), 'utf8')) as Json;

  it('builds the native modules and their wrappers for esp32 only, with the ESP-IDF components they call', () => {
    assert.ok((root['include'] as string[]).includes('./device/native/manifest.json'));
    const esp32 = native['platforms']['esp32'] as Json;
    // The stop line, the robot link's byte work, the DATA writer, the push's route, the frequent client frames' reader and
    // the ESP-NOW binding's send status and sends (robot-native.test.ts, sample-native.test.ts, route-native.test.ts, fast-native.test.ts,
    // espnow-sent-native.test.ts), and the clock (check-native compiles it).
    assert.deepEqual(esp32['modules']['*'], ['./stopline', './robotframe', './samplewriter', './route', './fastreader', './espnowsent', './clock']);
    assert.equal(esp32['modules']['device/stop-native'], '../stop-native');
    assert.equal(esp32['modules']['device/robot-native'], '../robot-native');
    assert.equal(esp32['modules']['device/sample-native'], '../sample-native');
    assert.equal(esp32['modules']['device/route-native'], '../route-native');
    assert.equal(esp32['modules']['device/fast-native'], '../fast-native');
    assert.equal(esp32['modules']['device/espnow-native'], '../espnow-native');
    assert.equal(esp32['modules']['device/clock-native'], '../clock-native');
    assert.ok((esp32['preload'] as string[]).includes('device/clock-native'));
    assert.deepEqual(esp32['dependency'], [{ idf: 'esp_driver_gpio' }, { idf: 'esp_timer' }]);
    assert.equal(native['modules'], undefined, 'nothing of it outside esp32');
    assert.match(native['platforms']['...']['warning'], /only on esp32/);
  });

  it('names the project sdkconfig for esp32, which turns on the task watchdog with a reset, a timeout above the guard’s, and no halt in a debugger stub', () => {
    const path = root['build']['SDKCONFIGPATH'] as string;
    assert.equal(path, './device/sdkconfig');
    const file = join(repo, path, 'sdkconfig.defaults');
    assert.ok(existsSync(file), `${file} exists (mcconfig reads sdkconfig.defaults from that directory)`);
    const c = sdkconfig(file);
    assert.equal(c.get('CONFIG_ESP_TASK_WDT_EN'), 'y');
    assert.equal(c.get('CONFIG_ESP_TASK_WDT_INIT'), 'y', 'initialised at start-up, so the SDK’s main task can subscribe');
    assert.equal(c.get('CONFIG_ESP_TASK_WDT_PANIC'), 'y', 'a timeout resets the chip');
    const timeoutS = Number(c.get('CONFIG_ESP_TASK_WDT_TIMEOUT_S'));
    assert.ok(timeoutS >= 2 && timeoutS <= 5, `timeout ${timeoutS} s fits a 10 ms tick`);
    assert.ok(STOP_GUARD_CONFIG_MAX_MS < timeoutS * 1000, 'the guard stops the line before the watchdog resets the chip');
    assert.equal(c.get('CONFIG_ESP_TASK_WDT_CHECK_IDLE_TASK_CPU0'), 'n');
    assert.equal(c.get('CONFIG_ESP_SYSTEM_PANIC_PRINT_REBOOT'), 'y');
    assert.equal(c.get('CONFIG_ESP_SYSTEM_PANIC_GDBSTUB'), 'n');
  });

  it('keeps stop_guard_ms inside the native range and above ten ticks, and says so at build time', () => {
    assert.ok(STOP_GUARD_CONFIG_MIN_MS >= STOP_GUARD_MIN_MS && STOP_GUARD_CONFIG_MAX_MS <= STOP_GUARD_MAX_MS);
    assert.equal(resolveDeviceConfig({}).stop.guardMs, DEVICE_DEFAULTS.stop_guard_ms);
    assert.equal(resolveDeviceConfig({ stop_guard_ms: '500' }).stop.guardMs, 500);
    for (const bad of [{ stop_guard_ms: 50 }, { stop_guard_ms: 3000 }, { stop_guard_ms: 200, tick_ms: 20 }]) {
      assert.throws(() => resolveDeviceConfig(bad), (e: unknown) => e instanceof DeviceConfigError && e.problems.some((p) => p.startsWith('stop_guard_ms')), JSON.stringify(bad));
    }
  });
});
