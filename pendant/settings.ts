// The pendant's configuration (docs/pendant.md "Configuration"): the manifest's `config` (the
// build's `mc/config`, with `mcconfig … key=value` on top), checked once and frozen. Platform-free:
// preloaded on the device, so that a configuration problem fails the build with the whole list of
// problems, as the hub's does (device/config.ts). Nothing here touches a pin.

import { ESPNOW_KEY_BYTES, parseHexKey, parseMac } from '../bindings/espnow/pairing.js';
import { Pull, type PullName } from './inputs.js';

export const PENDANT_DEFAULTS = Object.freeze({
  name: 'pendant',
  /** The operator credential the hub knows (docs/operations.md "The first operator credential"). */
  credential: '',
  /** The hub's ESP-NOW MAC (its station MAC, or its access point's when the hub is one). */
  hub_mac: '',
  /** This pendant's pairing key (LMK) as the hub's espnow_peers lists it, 32 hex digits; empty: unencrypted. */
  lmk: '',
  /** The primary master key, the hub's espnow_pmk (needed with an LMK). */
  pmk: '',
  /** The Wi-Fi network the hub is on (its access point, or the network it joins): ESP-NOW uses its channel. */
  wifi_ssid: '',
  wifi_password: '',
  stop_pin: 4,
  /** The level the stop input reads while its normally closed contact is closed (the button up). */
  stop_closed_level: 0,
  stop_pull: 'up',
  enable_pin: 27,
  take_pin: 18,
  arm_pin: 19,
  clear_pin: 21,
  /** The level a (normally open) button reads while pressed, and the pull its input gets. */
  button_level: 0,
  button_pull: 'up',
  debounce_ms: 30,
  joy_x_pin: 34,
  joy_y_pin: 35,
  adc_resolution: 12,
  /** The ADC reading of a centred stick; -1: mid-scale. */
  joy_center: -1,
  /** The dead zone around the centre, as a fraction of the half travel. */
  dead_zone: 0.1,
  invert_x: false,
  invert_y: false,
  /** Full stick: this many m/s forward, rad/s turning. */
  v_max: 0.5,
  w_max: 1.0,
  led_pin: 2,
  /** A second LED for the link's congestion level; -1: none. */
  link_led_pin: -1,
  period_ms: 20,
  cmd_rate_hz: 20,
  estop_repeat_ms: 100,
  zero_tail: 3,
});

export type PendantConfigKey = keyof typeof PENDANT_DEFAULTS;

export interface PendantSettings {
  readonly name: string;
  readonly credential: Uint8Array | null;
  readonly hubMac: number;
  readonly lmk: Uint8Array | null;
  readonly pmk: Uint8Array | null;
  readonly wifi: { readonly ssid: string; readonly password: string };
  readonly pins: {
    readonly stop: number;
    readonly enable: number;
    readonly take: number;
    readonly arm: number;
    readonly clear: number;
    readonly joyX: number;
    readonly joyY: number;
    readonly led: number;
    readonly linkLed: number;
  };
  readonly stopClosedLevel: 0 | 1;
  readonly stopPull: PullName;
  readonly buttonLevel: 0 | 1;
  readonly buttonPull: PullName;
  readonly debounceMs: number;
  readonly adcResolution: number;
  readonly joyCenter: number;
  readonly deadZone: number;
  readonly invertX: boolean;
  readonly invertY: boolean;
  readonly vMax: number;
  readonly wMax: number;
  readonly periodMs: number;
  readonly cmdRateHz: number;
  readonly estopRepeatMs: number;
  readonly zeroTail: number;
}

export class PendantConfigError extends Error {
  constructor(readonly problems: readonly string[]) {
    super(`pendant configuration: ${problems.join('; ')}`);
    this.name = 'PendantConfigError';
  }
}

const MAX_GPIO = 48;

function ascii(s: string): Uint8Array {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i) & 0xff;
  return out;
}

/** Resolves the raw configuration (defaults for what it leaves out); throws PendantConfigError listing every problem. */
export function resolvePendantConfig(raw: Readonly<Record<string, unknown>>): PendantSettings {
  const problems: string[] = [];
  const value = (k: PendantConfigKey): unknown => (Object.prototype.hasOwnProperty.call(raw, k) ? raw[k] : PENDANT_DEFAULTS[k]);
  const num = (k: PendantConfigKey, min: number, max: number, integer = true): number => {
    const v = value(k);
    const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : v;
    if (typeof n !== 'number' || !Number.isFinite(n) || (integer && !Number.isInteger(n)) || n < min || n > max) {
      problems.push(`${k}: ${String(v)} is not ${integer ? 'an integer' : 'a number'} in ${min}..${max}`);
      return min;
    }
    return n;
  };
  const bool = (k: PendantConfigKey): boolean => {
    const v = value(k);
    if (v === true || v === 1 || v === 'true' || v === '1') return true;
    if (v === false || v === 0 || v === 'false' || v === '0') return false;
    problems.push(`${k}: ${String(v)} is not a boolean`);
    return false;
  };
  const text = (k: PendantConfigKey, max: number): string => {
    const v = value(k);
    if (typeof v !== 'string' || v.length > max) {
      problems.push(`${k}: not a text of at most ${max} characters`);
      return '';
    }
    return v;
  };
  const pull = (k: PendantConfigKey): PullName => {
    const v = value(k);
    if (v === Pull.UP || v === Pull.DOWN || v === Pull.NONE) return v;
    problems.push(`${k}: ${String(v)} is not up, down or none`);
    return Pull.UP;
  };
  const pin = (k: PendantConfigKey, optional = false): number => num(k, optional ? -1 : 0, MAX_GPIO);

  const name = text('name', 32);
  if (name === '') problems.push('name: 1..32 characters');
  const credential = text('credential', 64);
  const macText = text('hub_mac', 17);
  const hubMac = parseMac(macText);
  if (!Number.isFinite(hubMac)) problems.push('hub_mac: the hub\'s MAC as aa:bb:cc:dd:ee:ff');
  const lmkText = text('lmk', 2 * ESPNOW_KEY_BYTES);
  const pmkText = text('pmk', 2 * ESPNOW_KEY_BYTES);
  const lmk = lmkText === '' ? null : parseHexKey(lmkText);
  const pmk = pmkText === '' ? null : parseHexKey(pmkText);
  if (lmkText !== '' && !lmk) problems.push(`lmk: not ${2 * ESPNOW_KEY_BYTES} hex digits`);
  if (pmkText !== '' && !pmk) problems.push(`pmk: not ${2 * ESPNOW_KEY_BYTES} hex digits`);
  if (lmk && !pmk) problems.push('pmk: a paired pendant (lmk) needs the hub\'s primary master key');
  const pins = {
    stop: pin('stop_pin'),
    enable: pin('enable_pin'),
    take: pin('take_pin'),
    arm: pin('arm_pin'),
    clear: pin('clear_pin'),
    joyX: pin('joy_x_pin'),
    joyY: pin('joy_y_pin'),
    led: pin('led_pin', true),
    linkLed: pin('link_led_pin', true),
  };
  const used = [pins.stop, pins.enable, pins.take, pins.arm, pins.clear, pins.joyX, pins.joyY, pins.led, pins.linkLed].filter((p) => p >= 0);
  if (new Set(used).size !== used.length) problems.push('pins: two inputs or outputs share a pin');
  const adcResolution = num('adc_resolution', 8, 16);
  const settings: PendantSettings = {
    name,
    credential: credential === '' ? null : ascii(credential),
    hubMac: Number.isFinite(hubMac) ? hubMac : 0,
    lmk,
    pmk,
    wifi: Object.freeze({ ssid: text('wifi_ssid', 32), password: text('wifi_password', 64) }),
    pins: Object.freeze(pins),
    stopClosedLevel: num('stop_closed_level', 0, 1) as 0 | 1,
    stopPull: pull('stop_pull'),
    buttonLevel: num('button_level', 0, 1) as 0 | 1,
    buttonPull: pull('button_pull'),
    debounceMs: num('debounce_ms', 0, 500),
    adcResolution,
    joyCenter: num('joy_center', -1, 2 ** 16 - 1),
    deadZone: num('dead_zone', 0, 0.5, false),
    invertX: bool('invert_x'),
    invertY: bool('invert_y'),
    vMax: num('v_max', 0, 10, false),
    wMax: num('w_max', 0, 10, false),
    periodMs: num('period_ms', 5, 100),
    cmdRateHz: num('cmd_rate_hz', 1, 50),
    estopRepeatMs: num('estop_repeat_ms', 20, 1000),
    zeroTail: num('zero_tail', 1, 20),
  };
  if (problems.length > 0) throw new PendantConfigError(problems);
  return Object.freeze(settings);
}
