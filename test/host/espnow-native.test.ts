// The native ESP-NOW module's host compile check (scripts/check-native.mjs): it passes on the
// real source, and it fails, with the compiler's words, on copies broken in the ways a change
// could break them, so that `npm test` can fail on a native module that would not build.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const script = join(repo, 'scripts/check-native.mjs');
const source = join(repo, 'bindings/espnow/native/espnow.c');

function check(...args: string[]): { status: number | null; out: string } {
  const r = spawnSync(process.execPath, [script, ...args], { encoding: 'utf8', cwd: repo });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

function broken(edit: (text: string) => string): { status: number | null; out: string } {
  const dir = mkdtempSync(join(tmpdir(), 'espnow-broken-'));
  try {
    const file = join(dir, 'espnow.c');
    const text = readFileSync(source, 'utf8');
    const changed = edit(text);
    assert.notEqual(changed, text, 'the edit changed the source');
    writeFileSync(file, changed);
    return check('--source', file, '--skip-ts');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('bindings/espnow native module: host compile check', function () {
  this.timeout(60000);

  it('espnow.c compiles with -Wall -Wextra -Werror for ESP-IDF 6.0 and 5.4, and device.ts type-checks without Node types', () => {
    const r = check();
    assert.equal(r.status, 0, r.out);
    assert.match(r.out, /ESP-IDF 6\.0/);
    assert.match(r.out, /ESP-IDF 5\.4/);
    assert.match(r.out, /device\.ts/);
  });

  it('fails on a syntax error, showing the compiler output', () => {
    const r = broken((t) => t.replace('r->count -= 1;', 'r->count -= 1'));
    assert.notEqual(r.status, 0);
    assert.match(r.out, /espnow\.c:\d+:\d+: error/);
  });

  it('fails when a callback does not match the ESP-IDF signature (the stubs carry the real ones)', () => {
    const r = broken((t) => t.replace('static void espnowSent(const esp_now_send_info_t *info, esp_now_send_status_t status)', 'static void espnowSent(const uint8_t *info, esp_now_send_status_t status)'));
    assert.notEqual(r.status, 0);
    assert.match(r.out, /esp_now_register_send_cb|incompatible|espnowSent/);
  });

  it('fails on a call to an esp_now function that does not exist', () => {
    const r = broken((t) => t.replace('esp_now_del_peer(mac)', 'esp_now_delete_peer(mac)'));
    assert.notEqual(r.status, 0);
    assert.match(r.out, /esp_now_delete_peer/);
  });

  it('fails on a warning (-Werror): an unused variable', () => {
    const r = broken((t) => t.replace('\tuint8_t busy;\n', '\tuint8_t busy;\n\tint unused;\n'));
    assert.notEqual(r.status, 0);
    assert.match(r.out, /unused/);
  });
});
