// What the device entries (device/main.ts, device/main-lin.ts) hand the hub besides its bindings:
// its configuration, the credentials of the build's configuration, the tick period, for loop-delay
// admission and health, and a heap reading, for admission and the ladder's heap rung
// (docs/operations.md "Health, admission and overload"); and what it hands the bindings of the
// configuration's link security (docs/security.md): the Wi-Fi links' tier ceiling and the paired
// ESP-NOW stations with their keys. Platform-free, so that a Node test can drive it with a fake
// of Moddable's `instrumentation` module, a resolved configuration and a real Hub.
import { Tier } from '../catalog/schema.js';
import { CREDENTIALS_KEY, encodeCredentials, saveCredentials, type Credential } from '../hub/credentials.js';
import { Hub } from '../hub/hub.js';
import type { HubPorts } from '../hub/hub-config.js';
import type { HeapUsed, Store } from '../hub/ports.js';
import { utf8ByteLength, utf8Write } from '../hub/utf8.js';
import { parseHexKey, type EspNowPairing } from '../bindings/espnow/pairing.js';
import { WS_MAX_HEADER_BYTES } from '../bindings/tcp/framing.js';
import type { CatalogIndex } from '../catalog/index.js';
import { readUplinkConfig, type UplinkConfig } from '../uplink/config.js';
import { DEVICE_MAX_HUB_FRAME_BYTES, type DeviceConfig } from './config.js';

/** The part of Moddable's `instrumentation` module the wiring reads. */
export interface InstrumentationApi {
  get(what: number): number | undefined;
  map(name: string): number | undefined;
}

/** The XS counters that together make the heap in use, bytes. */
export const HEAP_COUNTERS = Object.freeze(['XS Chunk Heap Used', 'XS Slot Heap Used'] as const);

export interface DeviceHubWiring {
  /** HubConfig.tickPeriodMs: the period the entry's timer ticks the hub at. */
  readonly tickPeriodMs: number;
  /** HubPorts.heap; undefined where the build knows none of the counters. */
  readonly heap: HeapUsed | undefined;
}

/**
 * The heap port over the instrumentation counters: their sum, or NaN while any of them reads
 * undefined (a release build), which the hub reports as -1 and which never refuses a client
 * nor lifts the ladder.
 */
export function instrumentedHeap(instrumentation: InstrumentationApi | undefined): HeapUsed | undefined {
  if (!instrumentation) return undefined;
  const indexes: number[] = [];
  for (let i = 0; i < HEAP_COUNTERS.length; i++) {
    const index = instrumentation.map(HEAP_COUNTERS[i] as string);
    if (typeof index === 'number') indexes.push(index);
  }
  if (indexes.length === 0) return undefined;
  return (): number => {
    let used = 0;
    for (let i = 0; i < indexes.length; i++) {
      const v = instrumentation.get(indexes[i] as number);
      if (typeof v !== 'number') return NaN;
      used += v;
    }
    return used;
  };
}

export function deviceHubWiring(tickMs: number, instrumentation: InstrumentationApi | undefined): DeviceHubWiring {
  return { tickPeriodMs: tickMs, heap: instrumentedHeap(instrumentation) };
}

/**
 * The tier ceiling of TCP and WebSocket connections: what the Wi-Fi network protects. An access
 * point with a password is WPA/WPA2-Personal (the SDK's `wifi` module sets WPA_WPA2_PSK when it
 * is given one); a station joins what the router offers, which the station API does not report:
 * a password counts as a protected network, none as an open one (`wifi_open_ceiling`).
 */
export function wifiTierCeiling(config: DeviceConfig): number {
  return config.wifi.password === '' ? config.wifi.openCeiling : Tier.maintainer;
}

/** 32 hex digits (validated by the configuration) as the 16 bytes of a key. */
function keyBytes(hex: string): Uint8Array {
  const key = parseHexKey(hex);
  if (!key) throw new RangeError('ESP-NOW: not a 16-byte key');
  return key;
}

/** The configuration's ESP-NOW keys as the radio takes them: the PMK (undefined: none) and each paired station. */
export function espnowKeys(config: DeviceConfig): { pmk: Uint8Array | undefined; peers: EspNowPairing[] } {
  const e = config.espnow;
  const peers: EspNowPairing[] = [];
  for (const p of e.peers) peers.push({ mac: p.mac, lmk: keyBytes(p.lmk), tierCeiling: p.tierCeiling });
  return { pmk: e.pmk === '' ? undefined : keyBytes(e.pmk), peers };
}

/**
 * The hub of a device entry: the configuration's identity, slots, deadman, never-shed queues,
 * anonymous tier and frame size, the tick period the entry's timer runs at, and the heap port
 * over `instrumentation` (a release build: none that reads, see instrumentedHeap).
 */
export function createDeviceHub(ports: Omit<HubPorts, 'heap'>, config: DeviceConfig, instrumentation: InstrumentationApi | undefined): Hub {
  const wiring = deviceHubWiring(config.tickMs, instrumentation);
  return new Hub(wiring.heap ? { ...ports, heap: wiring.heap } : ports, {
    hubId: config.hubId,
    slots: config.slots,
    deadmanMs: config.deadmanMs,
    neverShedBytes: config.neverShedBytes,
    maxFrameBytes: DEVICE_MAX_HUB_FRAME_BYTES,
    anonymousTier: config.anonymousTier,
    tickPeriodMs: wiring.tickPeriodMs,
  });
}

/** The configuration's `credentials` as the hub keeps them (the UTF-8 bytes of each token); null: none configured. */
export function configuredCredentials(config: DeviceConfig): Credential[] | null {
  if (!config.credentials) return null;
  const out: Credential[] = [];
  for (const c of config.credentials) {
    const bytes = new Uint8Array(utf8ByteLength(c.token));
    utf8Write(c.token, bytes, 0);
    out.push({ tier: c.tier, credential: bytes });
  }
  return out;
}

function sameBytes(a: Uint8Array | undefined, b: Uint8Array): boolean {
  if (!a || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Credentials from the configuration replace the stored table when they differ (a write to NVS
 * only then); none configured keeps the table in the Store. Before the hub is made, which reads
 * the table. Returns whether it wrote; throws what the Store's write throws.
 */
export function storeConfiguredCredentials(store: Store, config: DeviceConfig): boolean {
  const creds = configuredCredentials(config);
  if (!creds) return false;
  let stored: Uint8Array | undefined;
  try {
    stored = store.get(CREDENTIALS_KEY);
  } catch {
    // Unreadable: written afresh.
    stored = undefined;
  }
  if (sameBytes(stored, encodeCredentials(creds))) return false;
  saveCredentials(store, creds);
  return true;
}

/**
 * The uplink link's egress queue on the device, bytes: one of the device's largest hub frames and
 * its header, as the Wi-Fi links' (bindings/tcp/device.ts DEVICE_QUEUE_BYTES) — not the host's
 * 8 KB, which the device's heap has not to spare (docs/fleet.md "On the device").
 */
export const DEVICE_UPLINK_QUEUE_BYTES = 1600;

/**
 * The uplink's configuration from the device's `uplink_*` keys (null when `uplink_broker` is
 * empty), checked against the catalog as the simulator's is; `problems` lists what is wrong, and
 * a configuration with problems runs no uplink.
 */
export function deviceUplinkConfig(config: DeviceConfig, catalog: CatalogIndex): { config: UplinkConfig | null; problems: string[] } {
  const u = config.uplink;
  if (!u) return { config: null, problems: [] };
  const read = readUplinkConfig(
    {
      broker: `mqtt://${u.host}:${u.port}`,
      clientId: u.clientId,
      username: u.username,
      password: u.password,
      site: u.site,
      telemetry: u.telemetry.map((t) => ({ channel: t.channel, rateHz: t.rateHz })),
      events: u.events.slice(),
      format: u.format,
      fleetKey: u.fleetKey,
      maxBytesPerS: u.maxBytesPerS,
    },
    catalog,
  );
  const problems = read.problems.map((p) => `${p.path.replace(/^uplink\./, 'uplink ')}: ${p.reason}`);
  if (problems.length > 0) return { config: null, problems };
  return { config: Object.freeze({ ...read.config, queueBytes: Math.max(DEVICE_UPLINK_QUEUE_BYTES, DEVICE_MAX_HUB_FRAME_BYTES + WS_MAX_HEADER_BYTES) }), problems };
}
