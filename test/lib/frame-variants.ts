// For the readers' tests: a frame's bytes as a client might send them (as written, with one or
// two bytes changed, cut short or a byte longer, inside a larger buffer filled with the changed
// byte), and numbers of every encoding.
import fc from 'fast-check';

export interface FrameBytes {
  buf: Uint8Array;
  start: number;
  end: number;
}

/** Variants of each frame `write` encodes; `changes` 2 adds a variant with two bytes changed. */
export function frameVariants<F>(frames: fc.Arbitrary<F>, write: (f: F) => Uint8Array, changes: 1 | 2 = 1): fc.Arbitrary<FrameBytes> {
  return fc
    .tuple(frames, fc.integer({ min: 0, max: changes === 2 ? 4 : 3 }), fc.nat(), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 3 }), fc.nat(), fc.integer({ min: 0, max: 255 }))
    .map(([f, how, at, byte, offset, at2, byte2]) => {
      let b = write(f);
      if ((how === 1 || how === 4) && b.length > 0) b[at % b.length] = byte;
      else if (how === 2) b = b.subarray(0, at % (b.length + 1));
      else if (how === 3) {
        const c = new Uint8Array(b.length + 1);
        c.set(b);
        c[b.length] = byte;
        b = c;
      }
      if (how === 4 && b.length > 0) b[at2 % b.length] = byte2;
      const buf = new Uint8Array(offset + b.length + 2).fill(byte);
      buf.set(b, offset);
      return { buf, start: offset, end: offset + b.length };
    });
}

// Numbers of every encoding a writer chooses between: small and large integers, binary16,
// binary32 and binary64 values, integers that are also float32 values (2^11 and beyond, where
// a float32 with low mantissa bits set is an integer), and the specials.
export const cborNumber: fc.Arbitrary<number> = fc.oneof(
  fc.integer({ min: -100000, max: 100000 }),
  fc.maxSafeInteger(),
  fc.double(),
  fc.float().map((x) => Math.fround(x)),
  fc.float({ min: -4096, max: 4096, noNaN: true }).map((x) => Math.fround(x)),
  fc.integer({ min: -(2 ** 31), max: 2 ** 31 }).map((x) => Math.fround(x)),
  fc.constantFrom(0, -0, 0.5, 65504, 2048.5, 2049, 1048577, 8388609, 16777215, 2 ** 31, -(2 ** 31) - 1, 2 ** 53, NaN, Infinity, -Infinity, 5.960464477539063e-8, 6.103515625e-5),
);
