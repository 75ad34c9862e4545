// The uplink's configuration (docs/fleet.md, docs/operations.md "The fleet uplink"): which
// broker, as whom, for which site, which channels at which rates, in which payload format, and
// the fleet stop's key. One validator for the simulator's scenario key `uplink` and for the
// device's flat `uplink_*` keys; every problem is listed, none thrown one at a time.
// Platform-free.

import type { CatalogIndex } from '../catalog/index.js';
import { ChannelClass } from '../catalog/schema.js';
import { FLEET_NAME_MAX_BYTES, FLEET_STOP_WINDOW_MS } from '../hub/fleet-stop.js';
import { utf8ByteLength } from '../hub/utf8.js';

export const UplinkFormat = Object.freeze({ JSON: 'json', CBOR: 'cbor' } as const);
export type UplinkFormatName = (typeof UplinkFormat)[keyof typeof UplinkFormat];

export interface UplinkChannel {
  /** A telemetry channel of the catalog (STREAM or STATE). */
  readonly channel: string;
  /** The rate wished for it on the uplink; the hub grants what it can (§10.2). */
  readonly rateHz: number;
}

export interface UplinkConfig {
  /** `mqtt://host[:port]`; empty: no uplink. */
  readonly broker: string;
  /** The MQTT client id; empty: the hub id. */
  readonly clientId: string;
  readonly username: string;
  readonly password: string;
  /** The site: the second level of every topic (`fleet/<site>/…`). */
  readonly site: string;
  /** Published under `telemetry/<channel>`, each at its rate. */
  readonly telemetry: readonly UplinkChannel[];
  /** EVENT channels published under `events/<channel>`. */
  readonly events: readonly string[];
  /** Telemetry payloads: `json` or `cbor` (the DATA frame as the hub sends it, docs/fleet.md). */
  readonly format: UplinkFormatName;
  /** The site's fleet-stop key (its UTF-8 bytes are the HMAC key); empty: fleet stops are refused NO_KEY. */
  readonly fleetKey: string;
  /** ± how far a fleet stop's time may be from the hub's wall clock, ms. */
  readonly fleetWindowMs: number;
  /** The most the uplink sends, bytes per second, so the Wi-Fi keeps room for local clients; 0: no limit. */
  readonly maxBytesPerS: number;
  /** The uplink link's egress queue, bytes: its watermark is the uplink's §10.3 signal. */
  readonly queueBytes: number;
  /** MQTT keepalive, seconds. */
  readonly keepaliveS: number;
}

export const UPLINK_DEFAULTS: UplinkConfig = Object.freeze({
  broker: '',
  clientId: '',
  username: '',
  password: '',
  site: 'site',
  telemetry: Object.freeze([Object.freeze({ channel: 'odom', rateHz: 5 }), Object.freeze({ channel: 'battery', rateHz: 1 })]),
  events: Object.freeze(['safety-events', 'fault']),
  format: UplinkFormat.JSON,
  fleetKey: '',
  fleetWindowMs: FLEET_STOP_WINDOW_MS,
  maxBytesPerS: 0,
  queueBytes: 8192,
  keepaliveS: 30,
});

export interface UplinkProblem {
  readonly path: string;
  readonly reason: string;
}

/** A topic level: 1–64 UTF-8 bytes, none of MQTT's `/ + #` nor NUL. */
export function topicLevelProblem(s: string): string | null {
  if (s.length === 0) return 'must not be empty';
  if (utf8ByteLength(s) > FLEET_NAME_MAX_BYTES) return `must be at most ${FLEET_NAME_MAX_BYTES} bytes`;
  if (/[/+#\u0000]/.test(s)) return "must not hold '/', '+', '#' or NUL (it is a topic level)";
  return null;
}

/** A broker address: `mqtt://host[:port]` (host and port read back by `brokerParts`). */
export function brokerParts(url: string): { host: string; port: number } | null {
  const m = /^mqtt:\/\/([A-Za-z0-9.\-]+|\[[0-9A-Fa-f:]+\])(?::(\d{1,5}))?\/?$/.exec(url);
  if (!m) return null;
  const port = m[2] === undefined ? 1883 : Number(m[2]);
  if (port < 1 || port > 65535) return null;
  return { host: m[1] as string, port };
}

/**
 * The uplink config from a scenario's or a file's `uplink` object (absent fields take
 * UPLINK_DEFAULTS), checked against the catalog; `problems` lists what is wrong.
 */
export function readUplinkConfig(input: unknown, catalog: CatalogIndex, path = 'uplink'): { config: UplinkConfig; problems: UplinkProblem[] } {
  const problems: UplinkProblem[] = [];
  const fail = (p: string, reason: string): void => {
    problems.push({ path: `${path}.${p}`, reason });
  };
  const d = UPLINK_DEFAULTS;
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    problems.push({ path, reason: 'must be an object' });
    return { config: d, problems };
  }
  const o = input as Record<string, unknown>;
  for (const k of Object.keys(o)) if (!(k in d)) fail(k, `is not a key of the uplink (${Object.keys(d).join(', ')})`);
  const str = (k: keyof UplinkConfig): string => {
    const v = o[k];
    if (v === undefined) return d[k] as string;
    if (typeof v !== 'string') {
      fail(k, 'must be a string');
      return d[k] as string;
    }
    return v;
  };
  const num = (k: keyof UplinkConfig, min: number, max: number): number => {
    const v = o[k];
    if (v === undefined) return d[k] as number;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < min || v > max) {
      fail(k, `must be an integer ${min}–${max}`);
      return d[k] as number;
    }
    return v;
  };
  const broker = str('broker');
  if (broker !== '' && !brokerParts(broker)) fail('broker', 'must be mqtt://host[:port]');
  const site = str('site');
  const siteProblem = topicLevelProblem(site);
  if (siteProblem) fail('site', siteProblem);
  const format = str('format');
  if (format !== UplinkFormat.JSON && format !== UplinkFormat.CBOR) fail('format', "must be 'json' or 'cbor'");
  const telemetry: UplinkChannel[] = [];
  const tIn = o['telemetry'];
  if (tIn !== undefined && !Array.isArray(tIn)) fail('telemetry', 'must be a list of { channel, rateHz }');
  const tList: unknown[] = Array.isArray(tIn) ? tIn : (d.telemetry as unknown[]);
  const seen = new Set<string>();
  tList.forEach((x, i) => {
    const p = `telemetry[${i}]`;
    const e = x as Record<string, unknown>;
    if (typeof x !== 'object' || x === null || typeof e['channel'] !== 'string' || typeof e['rateHz'] !== 'number') {
      fail(p, 'must be { channel, rateHz }');
      return;
    }
    const name = e['channel'] as string;
    const rateHz = e['rateHz'] as number;
    const ch = catalog.byName(name);
    if (!ch) fail(p, `no channel '${name}' in the catalog`);
    else if (ch.cls !== ChannelClass.STREAM && ch.cls !== ChannelClass.STATE) fail(p, `'${name}' is not a STREAM or STATE channel`);
    else if (seen.has(name)) fail(p, `'${name}' is listed twice`);
    if (!(rateHz > 0 && rateHz <= 1000)) fail(p, 'rateHz must be > 0 and ≤ 1000');
    seen.add(name);
    telemetry.push({ channel: name, rateHz });
  });
  const events: string[] = [];
  const eIn = o['events'];
  if (eIn !== undefined && !Array.isArray(eIn)) fail('events', 'must be a list of EVENT channel names');
  const eList: unknown[] = Array.isArray(eIn) ? eIn : (d.events as unknown[]);
  eList.forEach((x, i) => {
    const ch = typeof x === 'string' ? catalog.byName(x) : undefined;
    if (!ch || ch.cls !== ChannelClass.EVENT) fail(`events[${i}]`, 'must name an EVENT channel of the catalog');
    else if (events.includes(ch.name)) fail(`events[${i}]`, `'${ch.name}' is listed twice`);
    else events.push(ch.name);
  });
  const config: UplinkConfig = {
    broker,
    clientId: str('clientId'),
    username: str('username'),
    password: str('password'),
    site,
    telemetry,
    events,
    format: format === UplinkFormat.CBOR ? UplinkFormat.CBOR : UplinkFormat.JSON,
    fleetKey: str('fleetKey'),
    fleetWindowMs: num('fleetWindowMs', 1000, 3600000),
    maxBytesPerS: num('maxBytesPerS', 0, 100000000),
    queueBytes: num('queueBytes', 6144, 1 << 20),
    keepaliveS: num('keepaliveS', 5, 3600),
  };
  return { config, problems };
}

/** `odom:5,battery:1` (the device's `uplink_telemetry`) as the list `readUplinkConfig` takes; null when malformed. */
export function parseChannelRates(text: string): { channel: string; rateHz: number }[] | null {
  const out: { channel: string; rateHz: number }[] = [];
  if (text.trim() === '') return out;
  for (const part of text.split(',')) {
    const m = /^\s*([A-Za-z0-9_.\-]+)\s*:\s*(\d+(?:\.\d+)?)\s*$/.exec(part);
    if (!m) return null;
    out.push({ channel: m[1] as string, rateHz: Number(m[2]) });
  }
  return out;
}

/** `safety-events,fault` (the device's `uplink_events`) as a list. */
export function parseNames(text: string): string[] {
  return text.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
}
