// What the device entry hands the hub besides its bindings: the tick period, for loop-delay
// admission and health, and a heap reading, for admission and the ladder's heap rung
// (docs/operations.md "Health, admission and overload"); and what it hands the bindings of the
// configuration's link security (docs/security.md): the Wi-Fi links' tier ceiling and the paired
// ESP-NOW stations with their keys. Platform-free, so that a Node test can drive it with a fake
// of Moddable's `instrumentation` module and a resolved configuration.
import { Tier } from '../catalog/schema.js';
import type { HeapUsed } from '../hub/ports.js';
import { parseHexKey, type EspNowPairing } from '../bindings/espnow/pairing.js';
import type { DeviceConfig } from './config.js';

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
