// The device budget's workload (bench/device.bench.ts) is the default scenario's mix: the same
// clients on the same bindings with the same subscriptions and publications, the robot's streams
// at the simulator's default rates. Held here so that the budget measures what the simulator runs.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_CATALOG } from '../../catalog/default.js';
import { loadCatalog } from '../../catalog/index.js';
import { PRIORITY_NAMES } from '../../catalog/schema.js';
import { loadScenarioFile } from '../../host-sim/scenario.js';
import { ROBOT_DEFAULTS } from '../../host-sim/robot.js';
import { DEFAULT_MIX, DEVICE_QUEUE_BYTES, ROBOT_STREAMS, LOG_EVERY_MS, JOYSTICK_HZ, deviceMemoryMix, MEMORY_SUBSCRIPTIONS } from '../../bench/device.bench.js';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

describe('device budget workload', function () {
  const catalog = loadCatalog(DEFAULT_CATALOG);
  const scenario = loadScenarioFile(join(repo, 'host-sim', 'scenarios', 'default.json'), catalog);

  it("has the default scenario's clients: bindings, tiers, subscriptions and publications", function () {
    const fromScenario = scenario.clients.map((c) => ({
      name: c.name,
      binding: (scenario.links[c.link] as { binding: string }).binding,
      operator: c.credential !== null && scenario.credentials[c.credential] === 'operator',
      subscriptions: c.subscriptions.map((s) => (s.priority === undefined ? { channel: s.channel, rateHz: s.rateHz } : { channel: s.channel, rateHz: s.rateHz, priority: PRIORITY_NAMES.indexOf(s.priority) })),
      publications: c.publications.map((p) => (p.burst === undefined ? { channel: p.channel, rateHz: p.rateHz } : { ...p })),
    }));
    assert.deepEqual(JSON.parse(JSON.stringify(DEFAULT_MIX)), fromScenario);
  });

  it("runs the robot's streams at the simulator's default rates", function () {
    const rate = Object.fromEntries(ROBOT_STREAMS.map((s) => [s.channel, s.hz]));
    assert.deepEqual(rate, { imu: ROBOT_DEFAULTS.imuHz, odom: ROBOT_DEFAULTS.odomHz, joint_states: ROBOT_DEFAULTS.jointHz, battery: ROBOT_DEFAULTS.batteryHz, scan: ROBOT_DEFAULTS.scanHz });
    for (const s of ROBOT_STREAMS) assert.equal(s.fields, catalog.byName(s.channel)?.fieldCount, `${s.channel} carries its catalog fields`);
    assert.equal(LOG_EVERY_MS, ROBOT_DEFAULTS.logMeanMs);
    const cmdVel = scenario.events.find((e) => e.type === 'cmd-vel') as { rateHz: number } | undefined;
    assert.equal(JOYSTICK_HZ, cmdVel?.rateHz);
  });

  it('measures memory at the device configuration: 3 Wi-Fi, 1 BLE, 4 ESP-NOW sessions of 16 subscriptions', function () {
    const mix = deviceMemoryMix();
    assert.deepEqual(mix.map((c) => c.binding).sort(), ['ble', 'espnow', 'espnow', 'espnow', 'espnow', 'tcp', 'ws', 'ws']);
    for (const c of mix) assert.equal(new Set(c.subscriptions.map((s) => s.channel)).size, MEMORY_SUBSCRIPTIONS);
  });

  it("uses the device adapter's TCP queue size (bindings/tcp/device.ts imports Moddable's modules, so it is read as text)", function () {
    const text = readFileSync(join(repo, 'bindings', 'tcp', 'device.ts'), 'utf8');
    const m = /export const DEVICE_QUEUE_BYTES = (\d+);/.exec(text);
    assert.ok(m, 'bindings/tcp/device.ts states DEVICE_QUEUE_BYTES as a number');
    assert.equal(DEVICE_QUEUE_BYTES, Number(m[1]));
  });
});
