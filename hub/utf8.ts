// UTF-8 by hand: the device has no TextEncoder/TextDecoder (docs/architecture.md "The device runtime").
// Well-formedness follows RFC 3629 §4 (Unicode Table 3-7): no overlong forms, no
// surrogate code points (U+D800..U+DFFF), nothing above U+10FFFF.

/** Code points gathered before each String.fromCodePoint call; bounds the argument list on XS's small stack. */
export const UTF8_DECODE_CHUNK = 32;

/**
 * Bytes `s` takes in UTF-8. A lone surrogate counts as U+FFFD (3 bytes), as `utf8Write` writes it.
 */
export function utf8ByteLength(s: string): number {
  let n = 0;
  const len = s.length;
  for (let i = 0; i < len; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < len && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}

/**
 * Writes `s` as UTF-8 at `buf[pos]` and returns the position after it. The caller has checked that
 * `utf8ByteLength(s)` bytes fit. A lone surrogate becomes U+FFFD, as the WHATWG encoder does: a JS
 * string can hold one, UTF-8 cannot.
 */
export function utf8Write(s: string, buf: Uint8Array, pos: number): number {
  const len = s.length;
  for (let i = 0; i < len; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) {
      buf[pos++] = c;
    } else if (c < 0x800) {
      buf[pos++] = 0xc0 | (c >> 6);
      buf[pos++] = 0x80 | (c & 0x3f);
    } else {
      if ((c & 0xf800) === 0xd800) {
        const lo = i + 1 < len ? s.charCodeAt(i + 1) : 0;
        if (c <= 0xdbff && (lo & 0xfc00) === 0xdc00) {
          c = 0x10000 + ((c - 0xd800) << 10) + (lo - 0xdc00);
          i++;
          buf[pos++] = 0xf0 | (c >> 18);
          buf[pos++] = 0x80 | ((c >> 12) & 0x3f);
          buf[pos++] = 0x80 | ((c >> 6) & 0x3f);
          buf[pos++] = 0x80 | (c & 0x3f);
          continue;
        }
        c = 0xfffd;
      }
      buf[pos++] = 0xe0 | (c >> 12);
      buf[pos++] = 0x80 | ((c >> 6) & 0x3f);
      buf[pos++] = 0x80 | (c & 0x3f);
    }
  }
  return pos;
}

/**
 * Checks that `buf[start, end)` is well-formed UTF-8. Returns -1 if it is, otherwise the offset of the
 * first byte of the first ill-formed sequence (a sequence cut short by `end` is ill-formed).
 */
export function utf8Check(buf: Uint8Array, start: number, end: number): number {
  let i = start;
  while (i < end) {
    const b = buf[i]!;
    if (b < 0x80) {
      i++;
      continue;
    }
    let more: number;
    // Bounds of the second byte; RFC 3629 §4 narrows them after E0, ED, F0 and F4.
    let lo = 0x80;
    let hi = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) more = 1;
    else if (b >= 0xe0 && b <= 0xef) {
      more = 2;
      if (b === 0xe0) lo = 0xa0;
      else if (b === 0xed) hi = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      more = 3;
      if (b === 0xf0) lo = 0x90;
      else if (b === 0xf4) hi = 0x8f;
    } else return i;
    if (i + more >= end) return i;
    const b1 = buf[i + 1]!;
    if (b1 < lo || b1 > hi) return i;
    for (let k = 2; k <= more; k++) {
      if ((buf[i + k]! & 0xc0) !== 0x80) return i;
    }
    i += more + 1;
  }
  return -1;
}

/**
 * Decodes `buf[start, end)`, which must have passed `utf8Check`. `units` is scratch space of
 * at least one entry (`UTF8_DECODE_CHUNK` suggested) owned by the caller, so that decoding builds one string per chunk and
 * no intermediate per character.
 */
export function utf8Decode(buf: Uint8Array, start: number, end: number, units: Uint32Array): string {
  let s = '';
  let n = 0;
  let i = start;
  while (i < end) {
    const b = buf[i]!;
    let c: number;
    if (b < 0x80) {
      c = b;
      i += 1;
    } else if (b < 0xe0) {
      c = ((b & 0x1f) << 6) | (buf[i + 1]! & 0x3f);
      i += 2;
    } else if (b < 0xf0) {
      c = ((b & 0x0f) << 12) | ((buf[i + 1]! & 0x3f) << 6) | (buf[i + 2]! & 0x3f);
      i += 3;
    } else {
      c = ((b & 0x07) << 18) | ((buf[i + 1]! & 0x3f) << 12) | ((buf[i + 2]! & 0x3f) << 6) | (buf[i + 3]! & 0x3f);
      i += 4;
    }
    units[n++] = c;
    if (n === units.length) {
      s += String.fromCodePoint.apply(null, units as unknown as number[]);
      n = 0;
    }
  }
  if (n > 0) s += String.fromCodePoint.apply(null, units.subarray(0, n) as unknown as number[]);
  return s;
}
