// A DATA frame's seq, t and values in C on the ESP32 (hub/ports.ts SampleWriter):
// native/samplewriter.c. Only the device entry imports this module; the host build leaves device/
// out and scripts/check-native.mjs type-checks it without Node types. The method's body is only
// its native call, which xsc compiles into the host function itself (no step between).

import type { SampleWriter } from '../hub/ports.js';

// The XS global (the SDK's xs.d.ts declares it the same way), scoped to this module.
declare const native: (name: string) => (...args: any[]) => any;

export class SampleWriterNative implements SampleWriter {
  writeSample(b: Uint8Array, p: number, seq: number, t: number, values: ArrayBufferLike, at: number, count: number): number {
    return native('xs_sample_write').call(this, b, p, seq, t, values, at, count);
  }
}
