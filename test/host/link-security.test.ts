// Link security through the device configuration and the simulator (docs/security.md): the
// configuration's keys for each link (the Wi-Fi network's ceiling, BLE pairing, the paired ESP-NOW
// stations and their keys, the encrypted-peer limit), checked at build time with every problem
// listed; and whole simulations where an operator's credential over an open Wi-Fi network, an
// unpaired BLE connection or an unencrypted ESP-NOW station gets observer tier, while the same
// credential over the protected profiles keeps its tier, and ESTOP works over all of them.
import assert from 'node:assert/strict';
import { loadCatalog } from '../../catalog/index.js';
import { DEFAULT_CATALOG } from '../../catalog/default.js';
import { Tier } from '../../catalog/schema.js';
import { DeviceConfigError, resolveDeviceConfig } from '../../device/config.js';
import { espnowKeys, wifiTierCeiling } from '../../device/wiring.js';
import { reportJson } from '../../host-sim/report.js';
import { validateScenario } from '../../host-sim/scenario.js';
import { Simulation } from '../../host-sim/sim.js';

function problemsOf(raw: Record<string, unknown>): readonly string[] {
  try {
    resolveDeviceConfig(raw);
  } catch (e) {
    assert.ok(e instanceof DeviceConfigError, String(e));
    return e.problems;
  }
  return [];
}

const LMK1 = '00112233445566778899aabbccddeeff';
const LMK2 = 'FFEEDDCCBBAA99887766554433221100';
const PMK = '0f0e0d0c0b0a09080706050403020100';

describe('device configuration: link security', () => {
  it('Wi-Fi: a password makes a protected network (every tier); none an open one, at wifi_open_ceiling', () => {
    assert.equal(wifiTierCeiling(resolveDeviceConfig({})), Tier.maintainer);
    assert.equal(wifiTierCeiling(resolveDeviceConfig({ wifi_password: '' })), Tier.observer);
    assert.equal(wifiTierCeiling(resolveDeviceConfig({ wifi_password: '', wifi_open_ceiling: 'operator' })), Tier.operator);
    assert.equal(wifiTierCeiling(resolveDeviceConfig({ wifi_mode: 'station', wifi_ssid: 'lab', wifi_password: '' })), Tier.observer, 'a station on an open network');
    assert.equal(wifiTierCeiling(resolveDeviceConfig({ wifi_mode: 'station', wifi_ssid: 'lab', wifi_password: 'lab-secret' })), Tier.maintainer);
    assert.ok(problemsOf({ wifi_open_ceiling: 'admin' }).some((p) => p.startsWith('wifi_open_ceiling:')));
  });

  it('BLE: just-works by default, passkey or off, and the ceiling of a secured connection', () => {
    const c = resolveDeviceConfig({ ble_pairing: 'passkey', ble_ceiling: 'operator' });
    assert.deepEqual([c.ble.pairing, c.ble.ceiling], ['passkey', Tier.operator]);
    assert.equal(resolveDeviceConfig({ ble_pairing: 'off' }).ble.pairing, 'off');
    assert.ok(problemsOf({ ble_pairing: 'legacy' }).some((p) => p.startsWith('ble_pairing:')));
  });

  it('ESP-NOW: paired stations with their keys and ceilings, the PMK, unencrypted stations off by default', () => {
    const c = resolveDeviceConfig({ espnow_pmk: PMK, espnow_peers: `24:6f:28:aa:bb:cc=${LMK1}, 24-6F-28-AA-BB-CD=${LMK2}:operator` });
    assert.equal(c.espnow.allowUnencrypted, false);
    assert.deepEqual(c.espnow.peers, [
      { mac: 0x246f28aabbcc, lmk: LMK1, tierCeiling: Tier.maintainer },
      { mac: 0x246f28aabbcd, lmk: LMK2.toLowerCase(), tierCeiling: Tier.operator },
    ]);
    const keys = espnowKeys(c);
    assert.deepEqual(Array.from(keys.pmk ?? []), Array.from(Buffer.from(PMK, 'hex')));
    assert.deepEqual(
      keys.peers.map((p) => [p.mac, Buffer.from(p.lmk).toString('hex'), p.tierCeiling]),
      [
        [0x246f28aabbcc, LMK1, Tier.maintainer],
        [0x246f28aabbcd, LMK2.toLowerCase(), Tier.operator],
      ],
    );
    assert.equal(espnowKeys(resolveDeviceConfig({})).pmk, undefined);
    assert.equal(resolveDeviceConfig({ espnow_allow_unencrypted: 'yes' }).espnow.allowUnencrypted, true);
  });

  it('ESP-NOW: lists every problem with the keys, and refuses more stations than the radio holds encrypted', () => {
    const problems = problemsOf({
      espnow_peers: `24:6f:28:aa:bb=${LMK1},24:6f:28:aa:bb:cc=1234,24:6f:28:aa:bb:cd=${LMK1}:admin,24:6f:28:aa:bb:ce=${LMK1},24:6F:28:AA:BB:CE=${LMK2},ff:ff:ff:ff:ff:ff=${LMK1}`,
      espnow_max_encrypted: 18,
    });
    const expect = [
      /^espnow_peers: entry 1 is not MAC=LMK/,
      /^espnow_peers: entry 2 has no LMK of 32 hex digits/,
      /^espnow_peers: entry 3 names no tier/,
      /^espnow_peers: entry 5 repeats a MAC/,
      /^espnow_peers: entry 6 is not MAC=LMK/,
      /^espnow_max_encrypted: 18 is not an integer in 1\.\.17/,
      /^espnow_pmk: paired stations \(espnow_peers\) need the primary master key/,
    ];
    for (const re of expect) assert.ok(problems.some((p) => re.test(p)), `${re} in:\n${problems.join('\n')}`);
    assert.equal(problems.length, expect.length, problems.join('\n'));
    const eight = Array.from({ length: 8 }, (_, i) => `24:6f:28:aa:bb:${(0x10 + i).toString(16)}=${LMK1}`).join(',');
    assert.ok(problemsOf({ espnow_pmk: PMK, espnow_peers: eight }).some((p) => /8 stations, the radio holds 7 encrypted/.test(p)));
    assert.deepEqual(problemsOf({ espnow_pmk: PMK, espnow_peers: eight, espnow_max_encrypted: 8 }), []);
    assert.ok(problemsOf({ espnow_pmk: 'nothex' }).some((p) => p.startsWith('espnow_pmk: not 32 hex digits')));
  });
});

// ------------------------------------------------------------------------------ the simulator

const catalog = loadCatalog(DEFAULT_CATALOG);

type J = any; // eslint-disable-line @typescript-eslint/no-explicit-any

describe('simulator: link security, an operator’s credential on every profile', () => {
  let report: J;
  before(async function () {
    this.timeout(60_000);
    const links = {
      wpa: { binding: 'tcp' },
      open: { binding: 'tcp', openNetwork: 1 },
      paired: { binding: 'ble' },
      unpaired: { binding: 'ble', paired: 0 },
      keyed: { binding: 'espnow' },
      plain: { binding: 'espnow', encrypted: 0 },
    };
    const clients = Object.keys(links).map((link, i) => ({ name: `c-${link}`, role: 'viewer', link, credential: 'operator-key', startMs: 100 * i }));
    const sim = new Simulation(
      validateScenario(
        {
          name: 'link-security',
          seed: 3,
          durationMs: 6000,
          credentials: { 'operator-key': 'operator' },
          links,
          clients,
          events: [
            { atMs: 1500, type: 'take-control', client: 'c-open', retryForMs: 0 },
            { atMs: 1600, type: 'take-control', client: 'c-unpaired', retryForMs: 0 },
            { atMs: 1700, type: 'take-control', client: 'c-plain', retryForMs: 0 },
            { atMs: 2500, type: 'take-control', client: 'c-keyed', retryForMs: 0 },
            { atMs: 3000, type: 'release-control', client: 'c-keyed' },
            { atMs: 4000, type: 'estop', client: 'c-plain' },
          ],
        },
        catalog,
      ),
    );
    report = JSON.parse(reportJson(await sim.run()));
  });

  it('the open network, the unpaired connection and the unencrypted station give observer; the protected ones the credential’s tier', () => {
    const tierOf = (client: string): string => {
      const id = (report.clients[client].sessions as number[]).at(-1);
      const s = (report.hub.sessionsAtEnd as J[]).find((x) => x.id === id);
      assert.ok(s, `${client}'s session is open at the end`);
      return s.tier;
    };
    assert.deepEqual(
      Object.fromEntries(['wpa', 'open', 'paired', 'unpaired', 'keyed', 'plain'].map((l) => [l, tierOf(`c-${l}`)])),
      { wpa: 'operator', open: 'observer', paired: 'operator', unpaired: 'observer', keyed: 'operator', plain: 'observer' },
    );
    assert.equal(report.hub.tierCapped, 3);
  });

  it('the capped clients cannot take control (FORBIDDEN); the paired station can', () => {
    for (const c of ['c-open', 'c-unpaired', 'c-plain']) assert.equal(report.clients[c].intents.refused.FORBIDDEN, 1, c);
    assert.equal(report.clients['c-keyed'].intents.refused.FORBIDDEN ?? 0, 0);
    assert.ok(report.clients['c-keyed'].intents.echoed >= 2, 'take_control and release_control echoed');
  });

  it('an observer on an unencrypted station still stops the robot, and every invariant holds', () => {
    assert.equal(report.hub.latched, true);
    assert.ok(report.hub.estops >= 1);
    for (const [name, v] of Object.entries(report.invariants as Record<string, J>)) assert.equal(v.count, 0, `${name}: ${JSON.stringify(v.examples)}`);
  });
});
