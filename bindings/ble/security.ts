// BLE link security (docs/security.md "BLE"): what the hub asks of the GATT server's pairing, and
// the tier ceiling a connection's security state allows. Platform-free: the device adapter
// (device.ts) hands `gattSecurity` to the SDK's GATT server and feeds each connection's
// `onSecured` state through `bleTierCeiling`; the simulator sets the ceiling of a paired or an
// unpaired connection the same way.

import { Tier } from '../../catalog/schema.js';

/**
 * How the hub pairs (the device configuration's `ble_pairing`):
 *   off         no pairing asked for: every BLE connection is an observer's (ESTOP still works);
 *   just-works  LE Secure Connections without a passkey: encrypted against a listener, not
 *               against an active attacker during the first pairing;
 *   passkey     LE Secure Connections with the passkey the hub shows on its debug console, typed
 *               on the central: encrypted and authenticated (no attacker in the middle).
 */
export const BlePairing = Object.freeze({ OFF: 'off', JUST_WORKS: 'just-works', PASSKEY: 'passkey' } as const);
export type BlePairingName = (typeof BlePairing)[keyof typeof BlePairing];

/** The GATT server's `security` option as the SDK's ESP32 server reads it. */
export interface GattSecurityOptions {
  /** Keep the keys (NimBLE's store, kept in NVS): a bonded central re-encrypts at once on reconnecting. */
  readonly bond: boolean;
  /** Ask for security as soon as a central connects. */
  readonly immediate: boolean;
  /** Require protection against an attacker in the middle (a passkey). */
  readonly authenticate: boolean;
  /** The hub can show a passkey (on its debug console): passkey entry on the central. */
  readonly display: boolean;
}

/** The `security` option for a pairing mode; undefined for `off` (the server asks for none). */
export function gattSecurity(pairing: BlePairingName): GattSecurityOptions | undefined {
  if (pairing === BlePairing.OFF) return undefined;
  const passkey = pairing === BlePairing.PASSKEY;
  return Object.freeze({ bond: true, immediate: true, authenticate: passkey, display: passkey });
}

/** A connection's security as the GATT server reports it (`onSecured`). */
export interface BleSecurityState {
  readonly encrypted: boolean;
  readonly authenticated: boolean;
  readonly bonded?: boolean;
  /** Bytes of the encryption key: 16 with LE Secure Connections; legacy pairing may agree on fewer. */
  readonly keySize: number;
}

/** A key shorter than this (legacy pairing's 7–15 bytes) counts as no protection. */
export const BLE_MIN_KEY_BYTES = 16;

/**
 * The tier ceiling of a connection in `state` under `pairing`: observer until the connection is
 * encrypted with a full-length key (and, with `passkey`, authenticated); then `ceiling`, the
 * configured highest tier over a secured BLE connection.
 */
export function bleTierCeiling(pairing: BlePairingName, ceiling: number, state: BleSecurityState): number {
  if (pairing === BlePairing.OFF) return Tier.observer;
  if (!state.encrypted || !(state.keySize >= BLE_MIN_KEY_BYTES)) return Tier.observer;
  if (pairing === BlePairing.PASSKEY && !state.authenticated) return Tier.observer;
  return ceiling;
}
