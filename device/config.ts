// The device's configuration: frozen defaults, overridden by the manifest's `config` and by
// `key=value` arguments of mcconfig (which arrive as strings), validated in one pass that lists
// every problem. Platform-free: device/boot.ts hands it the `mc/config` object at preload, so a
// bad value fails the build rather than the boot. docs/operations.md "Building and flashing"
// describes each key.

import { Tier } from '../catalog/schema.js';
import { DEADMAN_MS, DEFAULT_SLOTS } from '../hub/constants.js';
import { MAX_CREDENTIALS } from '../hub/credentials.js';
import { utf8ByteLength } from '../hub/utf8.js';
import { BlePairing, type BlePairingName } from '../bindings/ble/security.js';
import { ESPNOW_KEY_BYTES, ESPNOW_MAX_ENCRYPTED_LIMIT, parseHexKey, parseMac } from '../bindings/espnow/pairing.js';

export const WifiMode = Object.freeze({ AP: 'ap', STATION: 'station' } as const);
export type WifiModeName = (typeof WifiMode)[keyof typeof WifiMode];

/** How the ESTOP input is pulled when its contact is open (Digital.InputPullUp / InputPullDown / Input). */
export const Pull = Object.freeze({ UP: 'up', DOWN: 'down', NONE: 'none' } as const);
export type PullName = (typeof Pull)[keyof typeof Pull];

/** The keys and their defaults. Flat, because mcconfig's command line sets top-level keys only. */
export const DEVICE_DEFAULTS = Object.freeze({
  /** The identity WELCOME carries. */
  hub_id: 'robot-hub',
  /** Session slots (§6). */
  slots: DEFAULT_SLOTS,
  /** Period of the Timer that calls hub.tick() and the bindings' ticks. */
  tick_ms: 10,
  /** §11: the control owner must be heard from within this. */
  deadman_ms: DEADMAN_MS,
  /**
   * Bytes of each session's never-shed queue (§10.4; the hub's default is 2048), which holds one
   * frame per 24 of them (32 here). The device keeps 768: with every binding live the heap keeps
   * 30 % of itself free (docs/performance.md "Fits the ESP32"); the default catalog's never-shed
   * traffic comes on changes, so this is a burst of control frames a stalled link can take
   * before it is parked, not seconds of steady traffic.
   */
  never_shed_bytes: 768,
  /** Tier of a client with no or an unknown credential: observer, operator, maintainer, or none (refused). */
  anonymous_tier: 'observer',
  /**
   * `tier:token,tier:token`: when set, the hub's credential table (the UTF-8 bytes of each token)
   * is replaced by this list at boot, and it must hold an operator or a maintainer; when empty,
   * the table kept in the Store stands, and a first boot pairs (device/provision.ts).
   */
  credentials: '',
  /** `ap`: the hub is its own access point; `station`: it joins `wifi_ssid`. */
  wifi_mode: 'ap',
  wifi_ssid: 'robot-hub',
  /** AP: 8–64 bytes, or empty for an open network. Station: what the network wants. */
  wifi_password: 'robot-hub-setup',
  /** AP: the channel, which ESP-NOW shares. Station: a hint; the router's channel is what counts. */
  wifi_channel: 6,
  /** AP: stations at once (the ESP32 takes up to 10). */
  wifi_max_clients: 4,
  /**
   * The highest tier over TCP and WebSocket while the hub's network is open (an empty
   * `wifi_password`: an AP without one, or a station joining an open network): anyone in range
   * reads and forges that traffic (docs/security.md "Wi-Fi").
   */
  wifi_open_ceiling: 'observer',
  /** Length-prefixed frames over TCP; 0: no listener. */
  tcp_port: 7000,
  /** One binary WebSocket message per frame; 0: no listener. */
  ws_port: 7001,
  /** Health over HTTP (docs/operations.md "Reading health over HTTP"); 0: no listener. */
  http_port: 80,
  /** Bearer token for GET /api/operations/health, 32–256 visible ASCII characters; empty: that endpoint is off. */
  operations_token: '',
  /** Connections served at once per listener: each reserves its egress queue at start and holds about 4 KB more of the chunk heap while open (docs/operations.md "Memory"). */
  tcp_max_clients: 1,
  ws_max_clients: 2,
  ble: true,
  /** Advertised in the scan response: at most 29 bytes. */
  ble_name: 'robot-hub',
  /** How centrals pair (docs/security.md "BLE"): just-works, passkey (shown on the debug console) or off. */
  ble_pairing: 'just-works',
  /** The highest tier over a BLE connection once it is secured as `ble_pairing` asks (observer before). */
  ble_ceiling: 'maintainer',
  espnow: true,
  /** One ESP-NOW broadcast segment for every peer (§10.6) instead of unicast to each. */
  espnow_broadcast: false,
  /** The primary master key: 32 hex digits; needed once any station is paired. */
  espnow_pmk: '',
  /**
   * The paired stations: `MAC=LMK[:tier],…` (MAC `aa:bb:cc:dd:ee:ff`, LMK 32 hex digits, tier the
   * highest over that station, default maintainer). docs/security.md "ESP-NOW".
   */
  espnow_peers: '',
  /** Whether stations that are not paired may speak, unencrypted and at observer tier at most. */
  espnow_allow_unencrypted: false,
  /** Encrypted peers the build's radio holds: ESP-IDF's CONFIG_ESP_WIFI_ESPNOW_MAX_ENCRYPT_NUM (default 7, at most 17). */
  espnow_max_encrypted: 7,
  /** The ESTOP button's GPIO. */
  estop_pin: 4,
  /** The level the pin reads while the button is pressed. 1 with a pull-up suits a normally closed contact to GND: a broken wire reads pressed. */
  estop_level: 1,
  estop_pull: 'up',
  /** A release counts once the input has read released this long (a press counts at once). */
  estop_debounce_ms: 50,
  /** The GPIO output to the robot's safety chain. */
  stop_pin: 13,
  /** The level that means stop. 0: the line must be driven high to let the robot move, so a hub in reset or unpowered reads as stop. */
  stop_level: 0,
  /**
   * The native stop path's heartbeat guard: the stop line goes to stop when the JavaScript loop
   * has not ticked for this long (docs/operations.md "Stops that do not need JavaScript"). Below
   * the task watchdog's 5 s, so the line is at stop before the chip resets.
   */
  stop_guard_ms: 1000,
  /** UART to the robot's real-time core (device/robot-link.ts framing); -1: none. */
  robot_uart: 1,
  robot_uart_tx: 18,
  robot_uart_rx: 19,
  robot_uart_baud: 921600,
  /** The fleet uplink's MQTT broker, a host name or address (docs/fleet.md); empty: no uplink. */
  uplink_broker: '',
  uplink_port: 1883,
  /** The MQTT client id; empty: the hub id. */
  uplink_client_id: '',
  uplink_user: '',
  uplink_password: '',
  /** The topics' site level: fleet/<site>/<hub_id>/… */
  uplink_site: 'site',
  /** `channel:Hz,…`: telemetry published on the uplink. */
  uplink_telemetry: 'odom:5,battery:1',
  /** `channel,…`: EVENT channels published on the uplink. */
  uplink_events: 'safety-events,fault',
  /** Telemetry payloads: json or cbor (the DATA frame itself). */
  uplink_format: 'json',
  /** The site's fleet-stop key; empty: every fleet stop is refused. */
  uplink_fleet_key: '',
  /** The most the uplink sends, bytes a second; 0: no limit. */
  uplink_max_bytes_per_s: 0,
} as const);

export type DeviceConfigKey = keyof typeof DEVICE_DEFAULTS;

/**
 * The largest frame the device's hub writes (HubConfig.maxFrameBytes), which sizes its staging
 * area and the links' queues. The protocol allows 4608 (an EVENT with 4096 bytes of text); on the
 * device an EVENT comes over the robot link, whose payload is at most 255 bytes, so the largest
 * frames are an ECHO or NACK about a client's 1024-byte frame and CATALOG and HEALTH chunks within
 * a 1024-byte `mtu` (docs/operations.md "Memory").
 */
export const DEVICE_MAX_HUB_FRAME_BYTES = 1536;
/** The BLE notification queue on the device: one largest frame and room behind it. */
export const DEVICE_BLE_QUEUE_BYTES = 1600;
/**
 * Each ESP-NOW peer's egress queue on the device (the binding's default elsewhere is 1024): about
 * three datagrams of frames behind the one in the air, which the one radio shares with every peer.
 */
export const DEVICE_ESPNOW_QUEUE_BYTES = 768;

/** One paired ESP-NOW station as the configuration states it (keys stay text until the radio opens). */
export interface EspNowPeerText {
  readonly mac: number;
  /** The local master key: 32 hex digits. */
  readonly lmk: string;
  readonly tierCeiling: number;
}

export interface CredentialText {
  readonly tier: number;
  /** The credential is the UTF-8 bytes of this text. */
  readonly token: string;
}

export interface DeviceConfig {
  readonly hubId: string;
  readonly slots: number;
  readonly tickMs: number;
  readonly deadmanMs: number;
  readonly neverShedBytes: number;
  /** A Tier code, or -1: refused with FORBIDDEN. */
  readonly anonymousTier: number;
  /** null: keep the Store's table. */
  readonly credentials: readonly CredentialText[] | null;
  readonly wifi: {
    readonly mode: WifiModeName;
    readonly ssid: string;
    readonly password: string;
    readonly channel: number;
    readonly maxClients: number;
    /** A Tier code: the ceiling over TCP and WebSocket while the network is open (an empty password). */
    readonly openCeiling: number;
  };
  readonly tcpPort: number;
  readonly wsPort: number;
  readonly httpPort: number;
  /** '' when the detailed health endpoint is off. */
  readonly operationsToken: string;
  readonly tcpMaxClients: number;
  readonly wsMaxClients: number;
  readonly ble: { readonly enabled: boolean; readonly name: string; readonly pairing: BlePairingName; readonly ceiling: number };
  readonly espnow: {
    readonly enabled: boolean;
    readonly broadcast: boolean;
    /** The primary master key as 32 hex digits; '' when no station is paired. */
    readonly pmk: string;
    /** The paired stations: MAC, LMK as 32 hex digits, tier ceiling (a Tier code). */
    readonly peers: readonly EspNowPeerText[];
    readonly allowUnencrypted: boolean;
    readonly maxEncrypted: number;
  };
  readonly estop: { readonly pin: number; readonly level: 0 | 1; readonly pull: PullName; readonly debounceMs: number };
  readonly stop: { readonly pin: number; readonly level: 0 | 1; readonly guardMs: number };
  /** null: no UART to the robot. */
  readonly robotUart: { readonly port: number; readonly transmit: number; readonly receive: number; readonly baud: number } | null;
  /**
   * The fleet uplink (docs/fleet.md), null when `uplink_broker` is empty. Channel names are checked
   * against the catalog where the uplink is made (uplink/config.ts readUplinkConfig).
   */
  readonly uplink: {
    readonly host: string;
    readonly port: number;
    readonly clientId: string;
    readonly username: string;
    readonly password: string;
    readonly site: string;
    readonly telemetry: readonly { readonly channel: string; readonly rateHz: number }[];
    readonly events: readonly string[];
    readonly format: 'json' | 'cbor';
    readonly fleetKey: string;
    readonly maxBytesPerS: number;
  } | null;
}

export class DeviceConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`invalid device configuration (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n  ${problems.join('\n  ')}`);
    this.name = 'DeviceConfigError';
  }
}

/**
 * stop_guard_ms: long enough for a flash write or a garbage collection to pass unnoticed, and
 * under the task watchdog's 5 s (device/sdkconfig), so the line is at stop before a reset.
 */
export const STOP_GUARD_CONFIG_MIN_MS = 200;
export const STOP_GUARD_CONFIG_MAX_MS = 2500;

/** Highest GPIO number of the ESP32 family (the S3 has 0–48). */
export const MAX_GPIO = 48;
const SSID_MAX_BYTES = 32;
const AP_PASSWORD_MIN = 8;
const PASSWORD_MAX_BYTES = 64;
/** 31-byte scan response less the name element's length and type bytes. */
const BLE_NAME_MAX_BYTES = 29;
const HUB_ID_MAX_BYTES = 32;
const CREDENTIAL_MAX_BYTES = 255;

class Reader {
  readonly problems: string[] = [];
  constructor(private readonly raw: Readonly<Record<string, unknown>>) {}

  private value(key: DeviceConfigKey): unknown {
    return Object.prototype.hasOwnProperty.call(this.raw, key) ? this.raw[key] : DEVICE_DEFAULTS[key];
  }

  int(key: DeviceConfigKey, min: number, max: number): number {
    const v = this.value(key);
    const n = typeof v === 'string' && isIntegerText(v) ? Number(v) : v;
    if (typeof n !== 'number' || !Number.isInteger(n) || n < min || n > max) {
      this.problems.push(`${key}: ${show(v)} is not an integer in ${min}..${max}`);
      return min;
    }
    return n;
  }

  bool(key: DeviceConfigKey): boolean {
    const v = this.value(key);
    if (typeof v === 'boolean') return v;
    if (v === 1 || v === 'true' || v === '1' || v === 'on' || v === 'yes') return true;
    if (v === 0 || v === 'false' || v === '0' || v === 'off' || v === 'no') return false;
    this.problems.push(`${key}: ${show(v)} is not a boolean (true/false, 1/0, on/off)`);
    return false;
  }

  text(key: DeviceConfigKey, minBytes: number, maxBytes: number): string {
    const v = this.value(key);
    if (typeof v !== 'string') {
      this.problems.push(`${key}: ${show(v)} is not text`);
      return '';
    }
    const n = utf8ByteLength(v);
    if (n < minBytes || n > maxBytes) {
      this.problems.push(`${key}: ${n} bytes of UTF-8, not ${minBytes}..${maxBytes}`);
      return '';
    }
    return v;
  }

  oneOf<T extends string>(key: DeviceConfigKey, allowed: readonly T[]): T {
    const v = this.value(key);
    if (typeof v === 'string' && (allowed as readonly string[]).includes(v)) return v as T;
    this.problems.push(`${key}: ${show(v)} is not one of ${allowed.join(', ')}`);
    return allowed[0] as T;
  }
}

function isIntegerText(s: string): boolean {
  const start = s.charCodeAt(0) === 0x2d ? 1 : 0;
  if (s.length === start || s.length > 10) return false;
  for (let i = start; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x30 || c > 0x39) return false;
  }
  return true;
}

/** `odom:5,battery:1` as channel names and rates (uplink_telemetry). */
function parseRates(text: string, problems: string[]): { channel: string; rateHz: number }[] {
  const out: { channel: string; rateHz: number }[] = [];
  if (text.trim() === '') return out;
  const parts = text.split(',');
  for (let i = 0; i < parts.length; i++) {
    const m = /^\s*([A-Za-z0-9_.\-]+)\s*:\s*(\d+(?:\.\d+)?)\s*$/.exec(parts[i] as string);
    const rate = m ? Number(m[2]) : 0;
    if (!m || !(rate > 0 && rate <= 1000)) {
      problems.push(`uplink_telemetry: entry ${i + 1} is not channel:Hz with 0 < Hz ≤ 1000`);
      continue;
    }
    out.push({ channel: m[1] as string, rateHz: rate });
  }
  return out;
}

function show(v: unknown): string {
  return typeof v === 'string' ? JSON.stringify(v) : String(v);
}

function tierCode(name: string): number | undefined {
  return Object.prototype.hasOwnProperty.call(Tier, name) ? Tier[name as keyof typeof Tier] : undefined;
}

function parseCredentials(text: string, problems: string[]): CredentialText[] | null {
  if (text.trim() === '') return null;
  const out: CredentialText[] = [];
  const entries = text.split(',');
  for (let i = 0; i < entries.length; i++) {
    const entry = entries[i] as string;
    const colon = entry.indexOf(':');
    const tier = colon > 0 ? tierCode(entry.slice(0, colon).trim()) : undefined;
    const token = colon > 0 ? entry.slice(colon + 1) : '';
    if (tier === undefined) {
      problems.push(`credentials: entry ${i + 1} is not tier:token with tier observer, operator or maintainer`);
      continue;
    }
    const n = utf8ByteLength(token);
    if (n === 0 || n > CREDENTIAL_MAX_BYTES) {
      problems.push(`credentials: entry ${i + 1} has a token of ${n} bytes, not 1..${CREDENTIAL_MAX_BYTES}`);
      continue;
    }
    if (out.some((c) => c.token === token)) {
      problems.push(`credentials: entry ${i + 1} repeats a token`);
      continue;
    }
    out.push(Object.freeze({ tier, token }));
  }
  if (entries.length > MAX_CREDENTIALS) problems.push(`credentials: ${entries.length} entries, at most ${MAX_CREDENTIALS}`);
  // The list replaces the stored table: without an operator or maintainer nobody could clear a latch.
  if (out.length > 0 && !out.some((c) => c.tier >= Tier.operator)) problems.push('credentials: no operator or maintainer entry: nobody could clear a latch');
  return out;
}

function parseEspNowPeers(text: string, maxEncrypted: number, problems: string[]): EspNowPeerText[] {
  const out: EspNowPeerText[] = [];
  if (text.trim() === '') return out;
  const entries = text.split(',');
  for (let i = 0; i < entries.length; i++) {
    const entry = (entries[i] as string).trim();
    const eq = entry.indexOf('=');
    const mac = eq > 0 ? parseMac(entry.slice(0, eq)) : NaN;
    const rest = eq > 0 ? entry.slice(eq + 1).split(':') : [];
    const lmk = rest.length >= 1 && rest.length <= 2 ? (rest[0] as string).trim() : '';
    const tierName = rest.length === 2 ? (rest[1] as string).trim() : 'maintainer';
    const tier = tierCode(tierName);
    if (!Number.isFinite(mac) || mac === 0xffffffffffff) {
      problems.push(`espnow_peers: entry ${i + 1} is not MAC=LMK[:tier] with a station's MAC (aa:bb:cc:dd:ee:ff)`);
      continue;
    }
    if (parseHexKey(lmk) === null) {
      problems.push(`espnow_peers: entry ${i + 1} has no LMK of ${2 * ESPNOW_KEY_BYTES} hex digits`);
      continue;
    }
    if (tier === undefined) {
      problems.push(`espnow_peers: entry ${i + 1} names no tier (observer, operator or maintainer)`);
      continue;
    }
    if (out.some((p) => p.mac === mac)) {
      problems.push(`espnow_peers: entry ${i + 1} repeats a MAC`);
      continue;
    }
    out.push(Object.freeze({ mac, lmk: lmk.toLowerCase(), tierCeiling: tier }));
  }
  if (entries.length > maxEncrypted) {
    problems.push(`espnow_peers: ${entries.length} stations, the radio holds ${maxEncrypted} encrypted (espnow_max_encrypted; ESP-IDF's CONFIG_ESP_WIFI_ESPNOW_MAX_ENCRYPT_NUM)`);
  }
  return out;
}

/**
 * The configuration from `raw` (the `mc/config` object: the manifest's `config` merged with
 * mcconfig's `key=value` arguments), with DEVICE_DEFAULTS for what it leaves out. Keys that are
 * not ours (the SDK's own, such as `sntp`) are ignored. Throws DeviceConfigError listing every
 * problem. The result is frozen all the way down.
 */
export function resolveDeviceConfig(raw: Readonly<Record<string, unknown>>): DeviceConfig {
  const r = new Reader(raw);
  const p = r.problems;
  // The SDK's setup/network joins `ssid` as a station before main runs and holds the start
  // until it has an address: the ESTOP input would wait on the router.
  if (Object.prototype.hasOwnProperty.call(raw, 'ssid')) {
    p.push('ssid: the SDK\'s own key would hold the hub\'s start until Wi-Fi joins; use wifi_mode=station wifi_ssid=… wifi_password=…');
  }

  const hubId = r.text('hub_id', 1, HUB_ID_MAX_BYTES);
  const slots = r.int('slots', 1, 32);
  const tickMs = r.int('tick_ms', 1, 100);
  const deadmanMs = r.int('deadman_ms', 50, 60000);
  const neverShedBytes = r.int('never_shed_bytes', 512, 16384);
  const anonymous = r.oneOf('anonymous_tier', ['observer', 'operator', 'maintainer', 'none']);
  const credentials = parseCredentials(r.text('credentials', 0, 8192), p);

  const mode = r.oneOf('wifi_mode', [WifiMode.AP, WifiMode.STATION]);
  const ssid = r.text('wifi_ssid', 1, SSID_MAX_BYTES);
  const password = r.text('wifi_password', 0, PASSWORD_MAX_BYTES);
  if (mode === WifiMode.AP && password !== '' && utf8ByteLength(password) < AP_PASSWORD_MIN) {
    p.push(`wifi_password: an access point's password has ${AP_PASSWORD_MIN}..${PASSWORD_MAX_BYTES} bytes (or none: an open network)`);
  }
  const channel = r.int('wifi_channel', 1, 13);
  const maxClients = r.int('wifi_max_clients', 1, 10);
  const openCeiling = r.oneOf('wifi_open_ceiling', ['observer', 'operator', 'maintainer']);

  const tcpPort = r.int('tcp_port', 0, 65535);
  const wsPort = r.int('ws_port', 0, 65535);
  if (tcpPort !== 0 && tcpPort === wsPort) p.push(`tcp_port and ws_port: both ${tcpPort}`);
  const httpPort = r.int('http_port', 0, 65535);
  if (httpPort !== 0 && (httpPort === tcpPort || httpPort === wsPort)) p.push(`http_port: ${httpPort} is taken by another listener`);
  const operationsToken = r.text('operations_token', 0, 256);
  // lwIP on the ESP32 has 8 active TCP sockets in all (CONFIG_LWIP_MAX_ACTIVE_TCP).
  const tcpMax = r.int('tcp_max_clients', 1, 8);
  const wsMax = r.int('ws_max_clients', 1, 8);

  const bleEnabled = r.bool('ble');
  const bleName = r.text('ble_name', 1, BLE_NAME_MAX_BYTES);
  const blePairing = r.oneOf('ble_pairing', [BlePairing.JUST_WORKS, BlePairing.PASSKEY, BlePairing.OFF]);
  const bleCeiling = r.oneOf('ble_ceiling', ['observer', 'operator', 'maintainer']);
  const espnowEnabled = r.bool('espnow');
  const broadcast = r.bool('espnow_broadcast');
  const known = p.length;
  const maxEncrypted = r.int('espnow_max_encrypted', 1, ESPNOW_MAX_ENCRYPTED_LIMIT);
  // A limit that is itself wrong says nothing of the stations.
  const espnowPeers = parseEspNowPeers(r.text('espnow_peers', 0, 8192), p.length === known ? maxEncrypted : Infinity, p);
  const pmk = r.text('espnow_pmk', 0, 2 * ESPNOW_KEY_BYTES).trim();
  if (pmk !== '' && parseHexKey(pmk) === null) p.push(`espnow_pmk: not ${2 * ESPNOW_KEY_BYTES} hex digits`);
  if (pmk === '' && espnowPeers.length > 0) p.push(`espnow_pmk: paired stations (espnow_peers) need the primary master key, ${2 * ESPNOW_KEY_BYTES} hex digits`);
  const allowUnencrypted = r.bool('espnow_allow_unencrypted');

  const estopPin = r.int('estop_pin', 0, MAX_GPIO);
  const estopLevel = r.int('estop_level', 0, 1) as 0 | 1;
  const estopPull = r.oneOf('estop_pull', [Pull.UP, Pull.DOWN, Pull.NONE]);
  const debounceMs = r.int('estop_debounce_ms', 0, 1000);
  const stopPin = r.int('stop_pin', 0, MAX_GPIO);
  const stopLevel = r.int('stop_level', 0, 1) as 0 | 1;
  const guardMs = r.int('stop_guard_ms', STOP_GUARD_CONFIG_MIN_MS, STOP_GUARD_CONFIG_MAX_MS);
  if (guardMs <= tickMs * 10) p.push(`stop_guard_ms: ${guardMs} ms is not more than ten ticks (tick_ms ${tickMs})`);

  const uartPort = r.int('robot_uart', -1, 2);
  const tx = r.int('robot_uart_tx', 0, MAX_GPIO);
  const rx = r.int('robot_uart_rx', 0, MAX_GPIO);
  const baud = r.int('robot_uart_baud', 1200, 5000000);
  // UART0 is the console the SDK's serial debugging (xsbug) and the ROM loader use.
  if (uartPort === 0) p.push('robot_uart: 0 is the console UART; use 1 or 2, or -1 for none');

  const pins: [string, number][] = [
    ['estop_pin', estopPin],
    ['stop_pin', stopPin],
  ];
  if (uartPort > 0) pins.push(['robot_uart_tx', tx], ['robot_uart_rx', rx]);
  for (let i = 0; i < pins.length; i++) {
    for (let j = i + 1; j < pins.length; j++) {
      const a = pins[i] as [string, number];
      const b = pins[j] as [string, number];
      if (a[1] === b[1]) p.push(`${a[0]} and ${b[0]}: both GPIO ${a[1]}`);
    }
  }

  const uplinkHost = r.text('uplink_broker', 0, 253);
  if (!/^[A-Za-z0-9.\-]*$/.test(uplinkHost)) p.push(`uplink_broker: ${show(uplinkHost)} is not a host name or IPv4 address`);
  const uplinkPort = r.int('uplink_port', 1, 65535);
  const uplinkClientId = r.text('uplink_client_id', 0, 23);
  const uplinkUser = r.text('uplink_user', 0, 64);
  const uplinkPassword = r.text('uplink_password', 0, 64);
  const uplinkSite = r.text('uplink_site', 1, 64);
  if (/[/+#\u0000]/.test(uplinkSite)) p.push("uplink_site: must not hold '/', '+', '#' or NUL (it is a topic level)");
  if (uplinkHost !== '' && /[/+#\u0000]/.test(hubId)) p.push("hub_id: must not hold '/', '+', '#' or NUL with an uplink (it is a topic level)");
  const telemetry = parseRates(r.text('uplink_telemetry', 0, 512), p);
  const events = r.text('uplink_events', 0, 512).split(',').map((x) => x.trim()).filter((x) => x.length > 0);
  const uplinkFormat = r.oneOf('uplink_format', ['json', 'cbor'] as const);
  const fleetKey = r.text('uplink_fleet_key', 0, 128);
  const uplinkBudget = r.int('uplink_max_bytes_per_s', 0, 10000000);

  if (p.length > 0) throw new DeviceConfigError(p);

  return Object.freeze({
    hubId,
    slots,
    tickMs,
    deadmanMs,
    neverShedBytes,
    anonymousTier: anonymous === 'none' ? -1 : Tier[anonymous],
    credentials: credentials ? Object.freeze(credentials) : null,
    wifi: Object.freeze({ mode, ssid, password, channel, maxClients, openCeiling: Tier[openCeiling] }),
    tcpPort,
    wsPort,
    httpPort,
    operationsToken,
    tcpMaxClients: tcpMax,
    wsMaxClients: wsMax,
    ble: Object.freeze({ enabled: bleEnabled, name: bleName, pairing: blePairing, ceiling: Tier[bleCeiling] }),
    espnow: Object.freeze({ enabled: espnowEnabled, broadcast, pmk: pmk.toLowerCase(), peers: Object.freeze(espnowPeers), allowUnencrypted, maxEncrypted }),
    estop: Object.freeze({ pin: estopPin, level: estopLevel, pull: estopPull, debounceMs }),
    stop: Object.freeze({ pin: stopPin, level: stopLevel, guardMs }),
    robotUart: uartPort > 0 ? Object.freeze({ port: uartPort, transmit: tx, receive: rx, baud }) : null,
    uplink:
      uplinkHost === ''
        ? null
        : Object.freeze({
            host: uplinkHost,
            port: uplinkPort,
            clientId: uplinkClientId,
            username: uplinkUser,
            password: uplinkPassword,
            site: uplinkSite,
            telemetry: Object.freeze(telemetry.map((t) => Object.freeze(t))),
            events: Object.freeze(events),
            format: uplinkFormat,
            fleetKey,
            maxBytesPerS: uplinkBudget,
          }),
  });
}
