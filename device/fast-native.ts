// The frequent client frames read in C on the ESP32 (hub/ports.ts FrameReader): native/fastreader.c,
// the reading itself native/fastreader.h. The fields are hub/fast-reader.ts FastReader's, which the
// C reads and writes by name; only the device entry imports this module; the host build leaves
// device/ out and scripts/check-native.mjs type-checks it without Node types. The method's body is
// only its native call, which xsc compiles into the host function itself (no step between).

import { blockNumbers } from '../hub/fast-reader.js';
import { MAX_SAMPLE_NUMBERS } from '../hub/frame-types.js';
import type { FrameReader } from '../hub/ports.js';

// The XS global (the SDK's xs.d.ts declares it the same way), scoped to this module.
declare const native: (name: string) => (...args: any[]) => any;

export class FrameReaderNative implements FrameReader {
  value = 0;
  channelId = 0;
  readonly block: { count: number; width: number; readonly numbers: Float64Array };
  finite = true;
  /** The block's numbers' buffer and how many it holds, for the C (plain fields: a typed array's are getters). */
  readonly numbersBuffer: ArrayBuffer;
  readonly capacity: number;

  /** Samples of at most `keepWidth` numbers are kept (hub/fast-reader.ts FastReader: the same block). */
  constructor(keepWidth: number = MAX_SAMPLE_NUMBERS) {
    const size = blockNumbers(keepWidth);
    this.numbersBuffer = new ArrayBuffer(size * 8);
    this.capacity = size;
    this.block = { count: 0, width: 0, numbers: new Float64Array(this.numbersBuffer) };
  }

  read(buf: Uint8Array, start: number, end: number): number {
    return native('xs_fast_read').call(this, buf, start, end);
  }
}
