// §6/§9: WELCOME carries the catalog hash so that a client can tell whether the catalog it
// cached is the hub's, and fetch it (the CATALOG frame, this canonical text) only when not.
// The hash must be the same on Node, on XS and in any client: it is 64-bit FNV-1a over the
// UTF-8 bytes of the canonical JSON text, computed in 32-bit halves (no BigInt, no crypto,
// no TextEncoder, none of which every target has).

import type { Catalog } from './schema.js';

export const CATALOG_HASH_BYTES = 8;

// FNV-1a 64: offset basis 0xcbf29ce484222325, prime 2^40 + 0x1b3.
const OFFSET_HI = 0xcbf29ce4;
const OFFSET_LO = 0x84222325;
const PRIME_LO = 0x1b3;

class Fnv1a64 {
  hi = OFFSET_HI;
  lo = OFFSET_LO;

  byte(b: number): void {
    const lo = (this.lo ^ b) >>> 0;
    // (hi·2^32 + lo) × (2^40 + 0x1b3) mod 2^64. lo × 0x1b3 < 2^41 and hi × 0x1b3 < 2^41 stay
    // exact in a double; lo × 2^40 lands in the high word as lo << 8.
    const low = lo * PRIME_LO;
    const carry = Math.floor(low / 0x100000000);
    this.lo = low >>> 0;
    this.hi = (this.hi * PRIME_LO + carry + ((lo << 8) >>> 0)) >>> 0;
  }

  // UTF-8 by hand; a lone surrogate is encoded as U+FFFD, as TextEncoder would.
  string(s: string): void {
    for (let i = 0; i < s.length; i++) {
      let c = s.charCodeAt(i);
      if (c < 0x80) {
        this.byte(c);
        continue;
      }
      if (c < 0x800) {
        this.byte(0xc0 | (c >> 6));
        this.byte(0x80 | (c & 0x3f));
        continue;
      }
      if (c >= 0xd800 && c <= 0xdfff) {
        const next = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
        if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
          const cp = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
          i++;
          this.byte(0xf0 | (cp >> 18));
          this.byte(0x80 | ((cp >> 12) & 0x3f));
          this.byte(0x80 | ((cp >> 6) & 0x3f));
          this.byte(0x80 | (cp & 0x3f));
          continue;
        }
        c = 0xfffd;
      }
      this.byte(0xe0 | (c >> 12));
      this.byte(0x80 | ((c >> 6) & 0x3f));
      this.byte(0x80 | (c & 0x3f));
    }
  }

  digest(): Uint8Array {
    const out = new Uint8Array(CATALOG_HASH_BYTES);
    out[0] = this.hi >>> 24;
    out[1] = (this.hi >>> 16) & 0xff;
    out[2] = (this.hi >>> 8) & 0xff;
    out[3] = this.hi & 0xff;
    out[4] = this.lo >>> 24;
    out[5] = (this.lo >>> 16) & 0xff;
    out[6] = (this.lo >>> 8) & 0xff;
    out[7] = this.lo & 0xff;
    return out;
  }
}

// 64-bit FNV-1a of raw bytes, big-endian.
export function fnv1a64(bytes: ArrayLike<number>): Uint8Array {
  const h = new Fnv1a64();
  for (let i = 0; i < bytes.length; i++) h.byte((bytes[i] as number) & 0xff);
  return h.digest();
}

// 64-bit FNV-1a of a string's UTF-8 bytes, big-endian.
export function fnv1a64Utf8(s: string): Uint8Array {
  const h = new Fnv1a64();
  h.string(s);
  return h.digest();
}

function canonical(x: unknown): string {
  if (Array.isArray(x)) {
    let s = '[';
    for (let i = 0; i < x.length; i++) s += (i > 0 ? ',' : '') + canonical(x[i]);
    return s + ']';
  }
  if (typeof x === 'object' && x !== null) {
    const o = x as Record<string, unknown>;
    const keys = Object.keys(o).sort();
    let s = '{';
    let first = true;
    for (const k of keys) {
      const v = o[k];
      if (v === undefined) continue;
      s += (first ? '' : ',') + JSON.stringify(k) + ':' + canonical(v);
      first = false;
    }
    return s + '}';
  }
  // ECMAScript fixes Number::toString and JSON string escaping, so every engine agrees here.
  const s = JSON.stringify(x);
  if (s === undefined) throw new TypeError(`catalog value ${String(x)} has no JSON form`);
  return s;
}

// Compact JSON with every object's keys in sorted order and the channels in id order; fields
// keep their written order, which is the order of a sample's values.
export function canonicalCatalogJson(c: Catalog): string {
  const channels = c.channels.slice().sort((a, b) => a.id - b.id);
  return canonical({ version: c.version, name: c.name, channels });
}

export function catalogHash(c: Catalog): Uint8Array {
  return fnv1a64Utf8(canonicalCatalogJson(c));
}

export function hashHex(hash: Uint8Array): string {
  let s = '';
  for (let i = 0; i < hash.length; i++) s += ((hash[i] as number) | 0x100).toString(16).slice(1);
  return s;
}

export function catalogHashHex(c: Catalog): string {
  return hashHex(catalogHash(c));
}
