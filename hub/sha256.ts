// SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), platform-free, for the fleet stop's
// signature (docs/fleet.md "The fleet stop"). Nothing here touches a platform: a device that
// has a native digest hands the core its own `MacSha256` instead (hub/fleet-stop.ts takes one).
// Allocation happens at construction only; `mac` reuses its buffers.

/** An HMAC-SHA256: the core's own (`HmacSha256`), or a native one a host supplies. */
export interface MacSha256 {
  /** HMAC-SHA256 of msg[0, length) under the key it was made with, into out[0, 32). */
  mac(msg: Uint8Array, length: number, out: Uint8Array): void;
}

export const SHA256_BYTES = 32;
export const SHA256_BLOCK_BYTES = 64;

const K = new Uint32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
  0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
  0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]);

const IV = new Uint32Array([0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19]);

/** An incremental SHA-256: `reset`, `update` any number of times, `digest`. */
export class Sha256 {
  private readonly h = new Uint32Array(8);
  private readonly w = new Uint32Array(64);
  private readonly block = new Uint8Array(SHA256_BLOCK_BYTES);
  private fill = 0;
  // Bytes hashed so far (a JS number: exact up to 2^53).
  private total = 0;

  constructor() {
    this.reset();
  }

  reset(): this {
    const h = this.h;
    // Copied one by one: a preloaded module-scope array is never handed out (read-only on the device).
    for (let i = 0; i < 8; i++) h[i] = IV[i] as number;
    this.fill = 0;
    this.total = 0;
    return this;
  }

  /** Hashes bytes[start, end). */
  update(bytes: Uint8Array, start = 0, end = bytes.length): this {
    const block = this.block;
    this.total += end - start;
    let i = start;
    while (i < end) {
      const k = Math.min(SHA256_BLOCK_BYTES - this.fill, end - i);
      block.set(bytes.subarray(i, i + k), this.fill);
      this.fill += k;
      i += k;
      if (this.fill === SHA256_BLOCK_BYTES) {
        this.compress();
        this.fill = 0;
      }
    }
    return this;
  }

  /** The digest into out[at, at + 32); the hash is then reset. */
  digest(out: Uint8Array, at = 0): Uint8Array {
    const block = this.block;
    const bits = this.total * 8;
    block[this.fill++] = 0x80;
    if (this.fill > 56) {
      block.fill(0, this.fill);
      this.compress();
      this.fill = 0;
    }
    block.fill(0, this.fill, 56);
    // The length in bits, 64-bit big-endian (high word from the division: bits may pass 2^32).
    const hi = Math.floor(bits / 0x100000000);
    const lo = bits >>> 0;
    block[56] = hi >>> 24;
    block[57] = (hi >>> 16) & 0xff;
    block[58] = (hi >>> 8) & 0xff;
    block[59] = hi & 0xff;
    block[60] = lo >>> 24;
    block[61] = (lo >>> 16) & 0xff;
    block[62] = (lo >>> 8) & 0xff;
    block[63] = lo & 0xff;
    this.compress();
    const h = this.h;
    for (let j = 0; j < 8; j++) {
      const v = h[j] as number;
      out[at + 4 * j] = v >>> 24;
      out[at + 4 * j + 1] = (v >>> 16) & 0xff;
      out[at + 4 * j + 2] = (v >>> 8) & 0xff;
      out[at + 4 * j + 3] = v & 0xff;
    }
    this.reset();
    return out;
  }

  private compress(): void {
    const w = this.w;
    const b = this.block;
    for (let t = 0; t < 16; t++) {
      w[t] = ((b[4 * t] as number) << 24) | ((b[4 * t + 1] as number) << 16) | ((b[4 * t + 2] as number) << 8) | (b[4 * t + 3] as number);
    }
    for (let t = 16; t < 64; t++) {
      const x = w[t - 15] as number;
      const y = w[t - 2] as number;
      const s0 = ((x >>> 7) | (x << 25)) ^ ((x >>> 18) | (x << 14)) ^ (x >>> 3);
      const s1 = ((y >>> 17) | (y << 15)) ^ ((y >>> 19) | (y << 13)) ^ (y >>> 10);
      w[t] = ((w[t - 16] as number) + s0 + (w[t - 7] as number) + s1) | 0;
    }
    const h = this.h;
    let a = h[0] as number;
    let bb = h[1] as number;
    let c = h[2] as number;
    let d = h[3] as number;
    let e = h[4] as number;
    let f = h[5] as number;
    let g = h[6] as number;
    let hh = h[7] as number;
    for (let t = 0; t < 64; t++) {
      const S1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7));
      const ch = (e & f) ^ (~e & g);
      const t1 = (hh + S1 + ch + (K[t] as number) + (w[t] as number)) | 0;
      const S0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10));
      const maj = (a & bb) ^ (a & c) ^ (bb & c);
      const t2 = (S0 + maj) | 0;
      hh = g;
      g = f;
      f = e;
      e = (d + t1) | 0;
      d = c;
      c = bb;
      bb = a;
      a = (t1 + t2) | 0;
    }
    h[0] = ((h[0] as number) + a) | 0;
    h[1] = ((h[1] as number) + bb) | 0;
    h[2] = ((h[2] as number) + c) | 0;
    h[3] = ((h[3] as number) + d) | 0;
    h[4] = ((h[4] as number) + e) | 0;
    h[5] = ((h[5] as number) + f) | 0;
    h[6] = ((h[6] as number) + g) | 0;
    h[7] = ((h[7] as number) + hh) | 0;
  }
}

/** SHA-256 of bytes[start, end), as a new 32-byte array. */
export function sha256(bytes: Uint8Array, start = 0, end = bytes.length): Uint8Array {
  return new Sha256().update(bytes, start, end).digest(new Uint8Array(SHA256_BYTES));
}

/** HMAC-SHA256 (RFC 2104) under one key, the core's own: the padded keys are kept, nothing allocated per MAC. */
export class HmacSha256 implements MacSha256 {
  private readonly inner = new Uint8Array(SHA256_BLOCK_BYTES);
  private readonly outer = new Uint8Array(SHA256_BLOCK_BYTES);
  private readonly sha = new Sha256();
  private readonly mid = new Uint8Array(SHA256_BYTES);

  constructor(key: Uint8Array) {
    // A key longer than a block is hashed first (RFC 2104 §2).
    const k = key.length > SHA256_BLOCK_BYTES ? sha256(key) : key;
    for (let i = 0; i < SHA256_BLOCK_BYTES; i++) {
      const b = i < k.length ? (k[i] as number) : 0;
      this.inner[i] = b ^ 0x36;
      this.outer[i] = b ^ 0x5c;
    }
  }

  mac(msg: Uint8Array, length: number, out: Uint8Array): void {
    const sha = this.sha;
    sha.update(this.inner).update(msg, 0, length).digest(this.mid);
    sha.update(this.outer).update(this.mid).digest(out);
  }
}

/** HMAC-SHA256 of msg under key, as a new 32-byte array. */
export function hmacSha256(key: Uint8Array, msg: Uint8Array): Uint8Array {
  const out = new Uint8Array(SHA256_BYTES);
  new HmacSha256(key).mac(msg, msg.length, out);
  return out;
}

/** Whether a[0, n) equals b[0, n), in time that does not depend on where they differ. */
export function equalBytes(a: Uint8Array, b: Uint8Array, n: number): boolean {
  if (a.length < n || b.length < n) return false;
  let diff = 0;
  for (let i = 0; i < n; i++) diff |= (a[i] as number) ^ (b[i] as number);
  return diff === 0;
}
