// What docs/operations.md "Building and flashing" promises about the build, held against the
// manifest (and against a Moddable SDK when $MODDABLE names one): the SDK and ESP-IDF versions,
// the boards refused and why, the commands.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const manifest = JSON.parse(readFileSync(join(repo, 'manifest.json'), 'utf8')) as { platforms: Record<string, { error?: string }> };
const operations = readFileSync(join(repo, 'docs/operations.md'), 'utf8');

/** The SDK 8.2.3 board targets whose chip lacks what the hub needs (read from the SDK's targets). */
const S2_TARGETS = ['kaluga', 'lolin_s2mini', 'qtpys2', 'qtpys2_ili9341', 'saola_wroom', 'saola_wrover'];
const H2_TARGETS = ['esp32h2', 'esp32h2_cdc', 'esp32h2_ili9341'];
const GENERIC_TARGETS = ['nodemcu', 'esp32s3', 'esp32c3', 'esp32c6'];

/** mcconfig's choice for `-p esp32/<board>`: the board's own entry, else esp32's, else "...". */
function entryFor(board: string): { error?: string } | undefined {
  const p = manifest.platforms;
  return p[`esp32/${board}`] ?? p['esp32'] ?? p['...'];
}

/** The chip of an SDK board target, following its manifest's includes of other targets. */
function chipOf(targets: string, board: string): string {
  const file = join(targets, board, 'manifest.json');
  const m = JSON.parse(readFileSync(file, 'utf8')) as { build?: Record<string, string>; include?: string | string[] };
  const sub = m.build?.['ESP32_SUBCLASS'];
  if (sub) return sub;
  for (const inc of typeof m.include === 'string' ? [m.include] : (m.include ?? [])) {
    const other = /^\.\.\/([^/]+)\/manifest\.json$/.exec(inc);
    if (other) return chipOf(targets, other[1] as string);
  }
  return 'esp32';
}

describe('building and flashing: what the docs promise', () => {
  it('refuses every ESP32-S2 and ESP32-H2 board with the radio it lacks, and allows the generic ones', () => {
    for (const b of S2_TARGETS) assert.match(entryFor(b)?.error ?? '', /Bluetooth LE: the ESP32-S2 has none/, b);
    for (const b of H2_TARGETS) assert.match(entryFor(b)?.error ?? '', /Wi-Fi and ESP-NOW: the ESP32-H2 has neither/, b);
    for (const b of GENERIC_TARGETS) assert.equal(entryFor(b)?.error, undefined, b);
    assert.equal(manifest.platforms['esp32']?.error, undefined);
  });

  it('docs/operations.md names the SDK and ESP-IDF versions, every refused board, and the build-and-flash command', () => {
    assert.match(operations, /Moddable SDK \| 8\.2\.3/);
    assert.match(operations, /ESP-IDF \| v6\.0/);
    for (const b of [...S2_TARGETS, ...H2_TARGETS]) assert.ok(operations.includes(`\`esp32/${b}\``), `${b} in the boards table`);
    assert.match(operations, /mcconfig -d -m -p esp32\/nodemcu/);
    assert.match(operations, /export MODDABLE=.*\n.*export IDF_PATH=/);
  });

  it('refuses exactly the S2 and H2 targets; against the SDK in $MODDABLE (when set), its every S2 and H2 target and none other, and its esp32 build expects ESP-IDF v6.0', function () {
    const sdk = process.env.MODDABLE;
    const targets = sdk ? join(sdk, 'build/devices/esp32/targets') : '';
    if (!sdk || !existsSync(targets)) {
      // Without an SDK the lists above stand for its targets: the manifest refuses exactly those.
      const refused = Object.keys(manifest.platforms)
        .filter((k) => k.startsWith('esp32/') && manifest.platforms[k]?.error !== undefined)
        .map((k) => k.slice('esp32/'.length))
        .sort();
      assert.deepEqual(refused, [...S2_TARGETS, ...H2_TARGETS].sort());
      return;
    }
    for (const board of readdirSync(targets)) {
      if (!existsSync(join(targets, board, 'manifest.json'))) continue;
      const chip = chipOf(targets, board);
      const refused = entryFor(board)?.error !== undefined;
      assert.equal(refused, chip === 'esp32s2' || chip === 'esp32h2', `${board} (${chip})`);
    }
    const esp32 = JSON.parse(readFileSync(join(sdk, 'build/devices/esp32/manifest.json'), 'utf8')) as { build: Record<string, string> };
    assert.equal(esp32.build['EXPECTED_ESP_IDF'], 'v6.0');
  });
});
