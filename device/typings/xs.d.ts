// The XS globals the device code uses, as the SDK declares them in xs/includes/xs.d.ts (which
// mcconfig puts in every device build's `types`). Only the subset used here; same signatures.

interface Trace {
  (...log: (string | number | boolean)[]): void;
  left(log: string | ArrayBufferLike, conversation?: string): void;
  center(log: string | ArrayBufferLike, conversation?: string): void;
  right(log: string | ArrayBufferLike, conversation?: string): void;
}
declare const trace: Trace;

declare class HostBuffer {
  readonly byteLength: number;
  private brand: boolean;
}

interface ArrayBufferTypes {
  HostBuffer: HostBuffer;
}

interface ByteBufferTypes extends ArrayBufferTypes {
  Uint8Array: Uint8Array;
  Uint8ClampedArray: Uint8ClampedArray;
  Int8Array: Int8Array;
  DataView: DataView;
}

type ByteBuffer = ByteBufferTypes[keyof ByteBufferTypes];

interface ObjectConstructor {
  /** XS: a second argument `true` freezes deeply (documentation/xs/preload.md). */
  freeze<T>(obj: T, freeze?: boolean | number): Readonly<T>;
}

interface StringConstructor {
  fromArrayBuffer(buffer: ArrayBufferLike): string;
}

interface ArrayBufferConstructor {
  fromString(string: string): ArrayBuffer;
}

// xs host objects, host functions
declare function Native(name: string): new (...args: any[]) => any;
declare function native(name: string): (...args: any[]) => any;
