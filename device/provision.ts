// The credential table at boot (docs/operations.md "The first operator credential"), so that a
// latch can always be cleared by someone entitled to (§11.2: the control owner at operator tier
// or above). Platform-free: the device entry hands it the Store over NVS and the hardware RNG; the
// tests hand it a memory Store and a seeded generator.
//
//   1. A configured list (the `credentials` build value) is the table: written when the stored one
//      differs, at every boot. The configuration refuses a list without an operator or maintainer.
//   2. Otherwise the stored table stands, if it holds an operator or maintainer.
//   3. Otherwise (a first boot, an erased or damaged NVS, a table of observers only) the hub pairs:
//      it draws a pairing token of PAIRING_TOKEN_BYTES from the RNG, adds it to the table as an
//      operator credential, and keeps it under PAIRING_KEY. The device entry prints it on the
//      debug console (serial, xsbug) at this boot and at every later boot while it is still the
//      table's; a configured list ends the pairing.

import { Tier } from '../catalog/schema.js';
import { CREDENTIALS_KEY, decodeCredentials, encodeCredentials, MAX_CREDENTIALS, saveCredentials, type Credential } from '../hub/credentials.js';
import type { Random, Store } from '../hub/ports.js';
import { utf8ByteLength, utf8Write } from '../hub/utf8.js';
import type { CredentialText } from './config.js';

/** The Store key of the pairing token in force (its UTF-8 bytes, as in the table). */
export const PAIRING_KEY = 'pairing';
/** Random bytes in a pairing token: 128 bits, written as 32 lowercase hex digits. */
export const PAIRING_TOKEN_BYTES = 16;

export const ProvisionSource = Object.freeze({
  /** The configured list is the table. */
  CONFIGURED: 'configured',
  /** The stored table holds an operator or maintainer. */
  STORED: 'stored',
  /** This boot made a pairing token. */
  PAIRED: 'paired',
} as const);
export type ProvisionSourceName = (typeof ProvisionSource)[keyof typeof ProvisionSource];

export interface ProvisionOutcome {
  readonly source: ProvisionSourceName;
  /** The pairing token in force, to print on the debug console; null when none is. */
  readonly pairingToken: string | null;
  /** Credentials of operator tier or above in the table now. */
  readonly entitled: number;
}

/** The configured texts as credentials: the UTF-8 bytes of each token. */
export function credentialsOf(texts: readonly CredentialText[]): Credential[] {
  const out: Credential[] = [];
  for (let i = 0; i < texts.length; i++) {
    const t = texts[i] as CredentialText;
    out.push({ tier: t.tier, credential: utf8Bytes(t.token) });
  }
  return out;
}

/** Whether the table lets someone clear a latch: an operator or a maintainer. */
export function entitledCount(list: readonly Credential[]): number {
  let n = 0;
  for (let i = 0; i < list.length; i++) if ((list[i] as Credential).tier >= Tier.operator) n++;
  return n;
}

/**
 * Settles the table in `store` for this boot (see the head of this file) and says what it did.
 * Reads and writes go straight to the Store; a Store that throws throws here, and the caller
 * logs it: the hub then runs on whatever the Store holds.
 */
export function provisionCredentials(store: Store, configured: readonly CredentialText[] | null, random: Random): ProvisionOutcome {
  const stored = store.get(CREDENTIALS_KEY);
  if (configured) {
    const list = credentialsOf(configured);
    const bytes = encodeCredentials(list);
    if (!sameBytes(stored, bytes)) saveCredentials(store, list);
    if (store.get(PAIRING_KEY) !== undefined) store.delete(PAIRING_KEY);
    return Object.freeze({ source: ProvisionSource.CONFIGURED, pairingToken: null, entitled: entitledCount(list) });
  }

  const table = decodeCredentials(stored);
  const entitled = entitledCount(table);
  if (entitled > 0) {
    const pairing = store.get(PAIRING_KEY);
    let token: string | null = null;
    if (pairing !== undefined) {
      if (holdsOperator(table, pairing)) token = asciiText(pairing);
      else store.delete(PAIRING_KEY); // the table moved on without it
    }
    return Object.freeze({ source: ProvisionSource.STORED, pairingToken: token, entitled });
  }

  // Pairing: the observers stay (the oldest kept if the table is full), one operator joins them.
  const token = pairingToken(random);
  const credential = utf8Bytes(token);
  const list = table.slice(0, MAX_CREDENTIALS - 1);
  list.push({ tier: Tier.operator, credential });
  saveCredentials(store, list);
  store.set(PAIRING_KEY, credential);
  return Object.freeze({ source: ProvisionSource.PAIRED, pairingToken: token, entitled: 1 });
}

const HEX = '0123456789abcdef';

/** PAIRING_TOKEN_BYTES from `random`, as lowercase hex. */
export function pairingToken(random: Random): string {
  const bytes = new Uint8Array(PAIRING_TOKEN_BYTES);
  random.fill(bytes);
  let s = '';
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i] as number;
    s += HEX.charAt(b >>> 4) + HEX.charAt(b & 15);
  }
  return s;
}

function utf8Bytes(text: string): Uint8Array {
  const bytes = new Uint8Array(utf8ByteLength(text));
  utf8Write(text, bytes, 0);
  return bytes;
}

function holdsOperator(table: readonly Credential[], credential: Uint8Array): boolean {
  for (let i = 0; i < table.length; i++) {
    const c = table[i] as Credential;
    if (c.tier >= Tier.operator && sameBytes(c.credential, credential)) return true;
  }
  return false;
}

/** A pairing token is hex digits: its bytes are its text. */
function asciiText(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i++) s += String.fromCharCode(bytes[i] as number);
  return s;
}

function sameBytes(a: Uint8Array | undefined, b: Uint8Array): boolean {
  if (!a || a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
