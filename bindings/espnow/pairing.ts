// ESP-NOW pairing (docs/security.md "ESP-NOW"): the stations the hub's radio speaks to
// encrypted, each with its local master key (LMK) and the highest tier a session may hold over
// it. A paired station's entry stays in the radio's peer table for as long as it is paired, so
// that its first datagram already decrypts; a station that is not paired is spoken to only when
// unencrypted peers are allowed, and then at observer tier at most.
//
// Platform-free: the binding (link.ts) keeps the table and hands each key to its Radio, which
// on the device is esp_now_add_peer's `encrypt` and `lmk` (device.ts, native/espnow.c), in the
// simulator the simulated radio's key check (host-sim/links/espnow-air.ts).

import { Tier } from '../../catalog/schema.js';

/** Bytes of an ESP-NOW key: the primary master key (PMK) and each local master key (LMK). */
export const ESPNOW_KEY_BYTES = 16;
/**
 * Encrypted peers the radio holds at most: ESP-IDF's CONFIG_ESP_WIFI_ESPNOW_MAX_ENCRYPT_NUM
 * ranges up to 17 (default 7, ESPNOW_MAX_ENCRYPTED_PEERS in link.ts).
 */
export const ESPNOW_MAX_ENCRYPTED_LIMIT = 17;

/** One paired station. */
export interface EspNowPairing {
  /** The station's MAC address as a 48-bit number. */
  readonly mac: number;
  /** Its local master key, 16 bytes, shared with that station alone. */
  readonly lmk: Uint8Array;
  /** The highest tier a session may hold over this station's link (default maintainer). */
  readonly tierCeiling?: number;
}

/**
 * The pairing table: each slot's MAC (−1: free), key and ceiling in views of one buffer, found by
 * a walk of at most 17 slots (at admission and pairing, never per frame): a few slots of the
 * device's heap, whatever the number of peers.
 */
export class PairingTable {
  readonly capacity: number;
  private count = 0;
  private readonly macs: Float64Array;
  private readonly keys: Uint8Array;
  private readonly ceilings: Uint8Array;

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 0 || capacity > ESPNOW_MAX_ENCRYPTED_LIMIT) {
      throw new RangeError(`ESP-NOW: at most ${ESPNOW_MAX_ENCRYPTED_LIMIT} encrypted peers (got ${capacity})`);
    }
    this.capacity = capacity;
    // [MACs: 8 bytes each][keys: 16 bytes each][ceilings: 1 byte each]
    const buffer = new ArrayBuffer(capacity * (8 + ESPNOW_KEY_BYTES + 1));
    this.macs = new Float64Array(buffer, 0, capacity).fill(-1);
    this.keys = new Uint8Array(buffer, capacity * 8, capacity * ESPNOW_KEY_BYTES);
    this.ceilings = new Uint8Array(buffer, capacity * (8 + ESPNOW_KEY_BYTES), capacity);
  }

  get size(): number {
    return this.count;
  }

  private slotOf(mac: number): number {
    const macs = this.macs;
    for (let i = 0; i < macs.length; i++) if (macs[i] === mac) return i;
    return -1;
  }

  has(mac: number): boolean {
    return this.slotOf(mac) >= 0;
  }

  /** The key of a paired station (a view of the table: the radio copies it), or null. */
  key(mac: number): Uint8Array | null {
    const i = this.slotOf(mac);
    return i < 0 ? null : this.keys.subarray(i * ESPNOW_KEY_BYTES, (i + 1) * ESPNOW_KEY_BYTES);
  }

  /** The tier ceiling of a paired station; observer for any other. */
  ceiling(mac: number): number {
    const i = this.slotOf(mac);
    return i < 0 ? Tier.observer : (this.ceilings[i] as number);
  }

  /** The MACs paired now. */
  list(): number[] {
    const out: number[] = [];
    for (let i = 0; i < this.macs.length; i++) if ((this.macs[i] as number) >= 0) out.push(this.macs[i] as number);
    return out;
  }

  /**
   * Adds or replaces a pairing; false when the table is full. Throws for a pairing that is not
   * one (a key of another length, a tier that is no tier, the broadcast address).
   */
  set(p: EspNowPairing): boolean {
    checkPairing(p);
    let i = this.slotOf(p.mac);
    if (i < 0) {
      i = this.slotOf(-1);
      if (i < 0) return false;
      this.macs[i] = p.mac;
      this.count++;
    }
    this.keys.set(p.lmk, i * ESPNOW_KEY_BYTES);
    this.ceilings[i] = p.tierCeiling ?? Tier.maintainer;
    return true;
  }

  delete(mac: number): boolean {
    const i = this.slotOf(mac);
    if (i < 0) return false;
    this.macs[i] = -1;
    this.count--;
    this.keys.fill(0, i * ESPNOW_KEY_BYTES, (i + 1) * ESPNOW_KEY_BYTES);
    return true;
  }
}

const MAX_MAC = 0xffffffffffff;

function checkPairing(p: EspNowPairing): void {
  if (!Number.isInteger(p.mac) || p.mac < 0 || p.mac >= MAX_MAC) throw new RangeError('ESP-NOW pairing: the MAC is not a station address');
  if (!(p.lmk instanceof Uint8Array) || p.lmk.length !== ESPNOW_KEY_BYTES) throw new RangeError(`ESP-NOW pairing: the LMK is ${ESPNOW_KEY_BYTES} bytes`);
  const t = p.tierCeiling;
  if (t !== undefined && !(t === Tier.observer || t === Tier.operator || t === Tier.maintainer)) throw new RangeError('ESP-NOW pairing: the tier ceiling is no tier');
}

/** A MAC written `aa:bb:cc:dd:ee:ff` (or with `-`), as a 48-bit number; NaN when it is not one. */
export function parseMac(text: string): number {
  const parts = text.trim().split(/[:-]/);
  if (parts.length !== 6) return NaN;
  let v = 0;
  for (const part of parts) {
    if (!/^[0-9a-fA-F]{2}$/.test(part)) return NaN;
    v = v * 256 + parseInt(part, 16);
  }
  return v;
}

/** `bytes` hex digits as bytes (32 digits: a 16-byte key); null when it is not that. */
export function parseHexKey(text: string, bytes = ESPNOW_KEY_BYTES): Uint8Array | null {
  const t = text.trim();
  if (t.length !== 2 * bytes || !/^[0-9a-fA-F]*$/.test(t)) return null;
  const out = new Uint8Array(bytes);
  for (let i = 0; i < bytes; i++) out[i] = parseInt(t.slice(2 * i, 2 * i + 2), 16);
  return out;
}
