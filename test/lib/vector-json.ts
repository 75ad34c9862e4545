// The JSON form of frames in the conformance vectors (test/vectors/*.json, docs/protocol.md
// "Conformance vectors"). A frame is the plain object decodeFrame returns, with two values
// JSON cannot hold written as one-key objects:
//   Uint8Array                       → {"$bytes": "<lowercase hex>"}
//   NaN, Infinity, -Infinity and -0  → {"$num": "NaN" | "Infinity" | "-Infinity" | "-0"}
// Everything else (finite numbers, strings, booleans, arrays, objects) is itself.
// Portable: runs on Node and on XS (no Buffer, no node: modules).

export function bytesToHex(b: Uint8Array): string {
  let s = '';
  for (let i = 0; i < b.length; i++) s += (b[i] as number).toString(16).padStart(2, '0');
  return s;
}

export function hexToBytes(hex: string): Uint8Array {
  if (hex.length % 2 !== 0 || !/^[0-9a-fA-F]*$/.test(hex)) throw new Error(`bad hex: ${hex.slice(0, 40)}`);
  const out = new Uint8Array(hex.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return out;
}

export function toJson(v: unknown): unknown {
  if (typeof v === 'number') {
    if (Number.isNaN(v)) return { $num: 'NaN' };
    if (v === Infinity) return { $num: 'Infinity' };
    if (v === -Infinity) return { $num: '-Infinity' };
    if (Object.is(v, -0)) return { $num: '-0' };
    return v;
  }
  if (v instanceof Uint8Array) return { $bytes: bytesToHex(v) };
  if (Array.isArray(v)) return v.map(toJson);
  if (v !== null && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const k of Object.keys(v)) out[k] = toJson((v as Record<string, unknown>)[k]);
    return out;
  }
  return v;
}

const SPECIAL_NUMBERS: Readonly<Record<string, number>> = Object.freeze({
  NaN: NaN,
  Infinity: Infinity,
  '-Infinity': -Infinity,
  '-0': -0,
});

export function fromJson(j: unknown): unknown {
  if (Array.isArray(j)) return j.map(fromJson);
  if (j !== null && typeof j === 'object') {
    const o = j as Record<string, unknown>;
    const ks = Object.keys(o);
    if (ks.length === 1 && ks[0] === '$bytes' && typeof o.$bytes === 'string') return hexToBytes(o.$bytes);
    if (ks.length === 1 && ks[0] === '$num' && typeof o.$num === 'string') {
      const n = Object.prototype.hasOwnProperty.call(SPECIAL_NUMBERS, o.$num) ? SPECIAL_NUMBERS[o.$num] : undefined;
      if (n === undefined) throw new Error(`bad $num: ${o.$num}`);
      return n;
    }
    const out: Record<string, unknown> = {};
    for (const k of ks) out[k] = fromJson(o[k]);
    return out;
  }
  return j;
}
