// Credentials and their tiers, kept in the Store (§6; docs/operations.md "Credentials").
// Stored as one record: repeated [tier (1 byte), length (1 byte), credential bytes].
import { Tier } from '../catalog/schema.js';
import { constantTimeEqual } from './limits.js';
import type { Store } from './ports.js';

export const CREDENTIALS_KEY = 'creds';
export const MAX_CREDENTIALS = 16;

export interface Credential {
  readonly tier: number;
  readonly credential: Uint8Array;
}

export function encodeCredentials(list: readonly Credential[]): Uint8Array {
  let n = 0;
  for (const c of list) n += 2 + c.credential.length;
  const out = new Uint8Array(n);
  let p = 0;
  for (const c of list) {
    if (c.credential.length > 255) throw new RangeError('credential longer than 255 bytes');
    if (!isTier(c.tier)) throw new RangeError(`tier ${c.tier} is no tier (0..${Tier.maintainer})`);
    out[p++] = c.tier;
    out[p++] = c.credential.length;
    out.set(c.credential, p);
    p += c.credential.length;
  }
  return out;
}

/** A damaged record yields the entries before the damage: never an exception at boot. */
export function decodeCredentials(bytes: Uint8Array | undefined): Credential[] {
  const out: Credential[] = [];
  if (!bytes) return out;
  let p = 0;
  while (p + 2 <= bytes.length && out.length < MAX_CREDENTIALS) {
    const tier = bytes[p] as number;
    const len = bytes[p + 1] as number;
    // A tier byte beyond the known tiers is damage, never a tier above maintainer.
    if (!isTier(tier) || p + 2 + len > bytes.length) break;
    out.push({ tier, credential: bytes.slice(p + 2, p + 2 + len) });
    p += 2 + len;
  }
  return out;
}

export function saveCredentials(store: Store, list: readonly Credential[]): void {
  store.set(CREDENTIALS_KEY, encodeCredentials(list));
}

/**
 * The tier a credential grants, or -1. Every stored credential is compared, each in
 * constant time, whatever matches: the time taken says nothing about which one or where.
 */
export function tierFor(list: readonly Credential[], presented: Uint8Array): number {
  let tier = -1;
  for (let i = 0; i < list.length; i++) {
    const c = list[i] as Credential;
    const same = constantTimeEqual(c.credential, presented);
    tier = same && tier < 0 ? c.tier : tier;
  }
  return tier;
}

function isTier(t: number): boolean {
  return Number.isInteger(t) && t >= Tier.observer && t <= Tier.maintainer;
}
