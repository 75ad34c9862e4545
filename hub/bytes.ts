// Exact views without allocation (docs/architecture.md "Copies"). A frame is handed on as a
// Uint8Array that is exactly the frame, so that the receiver copies it whole with one native
// TypedArray.set; XS charges a native copy about 2 computrons a byte and an interpreted byte loop
// about 25. A view of part of a buffer (`subarray`) would be an object per frame, so the buffers
// here are resizable ArrayBuffers (ES2024, in XS and Node) seen through length-tracking views:
// the writer works at full capacity, then shrinks the buffer to the length written, and the view
// is exactly the frame.
//
// XS resizes a buffer in place within the capacity of its chunk (xsMemory.c fxRenewChunk), but a
// compacting collection moves a chunk at its current size, so a buffer compacted while shrunk
// would have to be allocated anew (and copied) to grow again: an allocation at a moment of heap
// pressure, of the whole buffer. So a buffer is shrunk only while its view is being handed on,
// and made whole again (`open`, `unstage`) before control leaves the call that shrank it; no
// collection can run in between, since nothing there allocates. Kept that way, nothing here
// allocates after construction, and the heap measured between calls is the heap at its peak.
//
// Platform-free. Buffers are made at run time, never at preload (a typed array made at preload
// lives in flash, where a write throws).

interface ResizableArrayBuffer extends ArrayBuffer {
  resize(byteLength: number): void;
}
const Resizable = ArrayBuffer as unknown as new (byteLength: number, options: { maxByteLength: number }) => ResizableArrayBuffer;

/**
 * `capacity` bytes of fixed storage followed by a staging area of up to `stageBytes`: the owner
 * keeps what it likes in [0, capacity) and copies a run of it into the staging area
 * (`stage`), after which `out` is exactly that run. `all` sees everything while nothing is
 * staged, and [0, capacity + staged length) while something is.
 */
export class StagedBytes {
  /** The fixed storage and the staging area, one length-tracking view (copyWithin works across both). */
  readonly all: Uint8Array;
  /** The staging area: exactly what `stage` put there, until `unstage`. */
  readonly out: Uint8Array;
  /** The staging area for multi-byte fields (big-endian setters, as CBOR wants). */
  readonly outView: DataView;
  readonly capacity: number;
  readonly stageBytes: number;
  private readonly rab: ResizableArrayBuffer;
  private staged = false;

  constructor(capacity: number, stageBytes: number) {
    if (!Number.isInteger(capacity) || capacity < 0 || !Number.isInteger(stageBytes) || stageBytes < 1) throw new RangeError('StagedBytes: sizes must be integers');
    this.capacity = capacity;
    this.stageBytes = stageBytes;
    this.rab = new Resizable(capacity + stageBytes, { maxByteLength: capacity + stageBytes });
    this.all = new Uint8Array(this.rab);
    this.out = new Uint8Array(this.rab, capacity);
    this.outView = new DataView(this.rab, capacity);
  }

  /** Copies all[from, from + length) into the staging area: `out` is then exactly those bytes. */
  stage(from: number, length: number): Uint8Array {
    if (this.staged) this.unstage();
    this.all.copyWithin(this.capacity, from, from + length);
    this.rab.resize(this.capacity + length);
    this.staged = true;
    return this.out;
  }

  /**
   * Makes the staging area whole again, for the owner to fill at `out`/`all`: then `seal` it to
   * what was written.
   */
  unstage(): void {
    if (!this.staged) return;
    this.rab.resize(this.capacity + this.stageBytes);
    this.staged = false;
  }

  /** `out` becomes exactly the `length` bytes the owner wrote at its start. */
  seal(length: number): Uint8Array {
    this.unstage();
    this.rab.resize(this.capacity + length);
    this.staged = true;
    return this.out;
  }
}

/**
 * A frame buffer: written at full capacity, then sealed to the frame's length, so that `bytes`
 * is exactly the frame until the next `open`.
 */
export class SealedBytes {
  /** Length-tracking: the whole capacity while open, exactly the frame once sealed. */
  readonly bytes: Uint8Array;
  /** The same bytes for multi-byte fields: big-endian setters, as CBOR wants. */
  readonly view: DataView;
  readonly capacity: number;
  private readonly rab: ResizableArrayBuffer;
  /** @internal The sealed length, -1 while open: the hot path tests it rather than call `open` for nothing. */
  sealedAt = -1;

  constructor(capacity: number) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('SealedBytes: capacity must be an integer ≥ 1');
    this.capacity = capacity;
    this.rab = new Resizable(capacity, { maxByteLength: capacity });
    this.bytes = new Uint8Array(this.rab);
    this.view = new DataView(this.rab);
  }

  /** Full capacity again, for writing. */
  open(): void {
    if (this.sealedAt < 0) return;
    this.rab.resize(this.capacity);
    this.sealedAt = -1;
  }

  /** `bytes` becomes exactly bytes[0, length). */
  seal(length: number): Uint8Array {
    if (this.sealedAt !== length) {
      this.rab.resize(length);
      this.sealedAt = length;
    }
    return this.bytes;
  }

  get sealed(): boolean {
    return this.sealedAt >= 0;
  }
}
