// A double-ended queue of frames over pooled buffers: every slot keeps its own byte buffer and
// reuses it, so queueing a frame copies its bytes without allocating once the run has reached its
// high-water mark. Each frame carries two numbers the link models need: when the hub handed it
// over (`handoffUs`) and one model-specific time (`atUs`: an arrival time, a fragment offset).

export class FrameDeque {
  private bufs: Uint8Array[] = [];
  private lens = new Int32Array(0);
  private handoff = new Float64Array(0);
  private at = new Float64Array(0);
  private flagsA = new Uint8Array(0);
  private cap = 0;
  private head = 0;
  private n = 0;
  /** Bytes of the frames held. */
  bytes = 0;

  constructor(initial = 16) {
    this.grow(initial);
  }

  get size(): number {
    return this.n;
  }

  /** Appends a copy of frame[0, len). */
  push(frame: Uint8Array, len: number, handoffUs: number, atUs = 0, flags = 0): void {
    if (this.n === this.cap) this.grow(this.cap * 2);
    const slot = (this.head + this.n) % this.cap;
    this.fill(slot, frame, len, handoffUs, atUs, flags);
    this.n++;
  }

  /** Puts a copy of frame[0, len) ahead of every frame held. */
  unshift(frame: Uint8Array, len: number, handoffUs: number, atUs = 0, flags = 0): void {
    if (this.n === this.cap) this.grow(this.cap * 2);
    this.head = (this.head + this.cap - 1) % this.cap;
    this.fill(this.head, frame, len, handoffUs, atUs, flags);
    this.n++;
  }

  /** Moves the head frame to the tail of `to` (copying its bytes), with a new `atUs`. */
  moveHeadTo(to: FrameDeque, atUs: number): void {
    const s = this.head;
    to.push(this.bufs[s] as Uint8Array, this.lens[s] as number, this.handoff[s] as number, atUs, this.flagsA[s] as number);
    this.shift();
  }

  /** Drops the head frame. */
  shift(): void {
    if (this.n === 0) return;
    this.bytes -= this.lens[this.head] as number;
    this.head = (this.head + 1) % this.cap;
    this.n--;
  }

  clear(): void {
    this.head = 0;
    this.n = 0;
    this.bytes = 0;
  }

  // Head accessors: valid until the next push/unshift/shift.
  get headBytes(): Uint8Array {
    return this.bufs[this.head] as Uint8Array;
  }
  get headLen(): number {
    return this.n === 0 ? 0 : (this.lens[this.head] as number);
  }
  get headHandoffUs(): number {
    return this.handoff[this.head] as number;
  }
  get headAtUs(): number {
    return this.at[this.head] as number;
  }
  get headFlags(): number {
    return this.flagsA[this.head] as number;
  }

  private fill(slot: number, frame: Uint8Array, len: number, handoffUs: number, atUs: number, flags: number): void {
    let b = this.bufs[slot] as Uint8Array;
    if (b.length < len) {
      b = new Uint8Array(Math.max(len, 64, b.length * 2));
      this.bufs[slot] = b;
    }
    if (len === frame.length) b.set(frame);
    else b.set(frame.subarray(0, len));
    this.lens[slot] = len;
    this.handoff[slot] = handoffUs;
    this.at[slot] = atUs;
    this.flagsA[slot] = flags;
    this.bytes += len;
  }

  private grow(n: number): void {
    const cap = Math.max(4, n);
    const bufs: Uint8Array[] = [];
    const lens = new Int32Array(cap);
    const handoff = new Float64Array(cap);
    const at = new Float64Array(cap);
    const flags = new Uint8Array(cap);
    for (let i = 0; i < this.n; i++) {
      const s = (this.head + i) % this.cap;
      bufs.push(this.bufs[s] as Uint8Array);
      lens[i] = this.lens[s] as number;
      handoff[i] = this.handoff[s] as number;
      at[i] = this.at[s] as number;
      flags[i] = this.flagsA[s] as number;
    }
    // Slots that held no frame keep their buffers for reuse.
    for (let i = 0; i < this.cap; i++) {
      if (i >= this.n) bufs.push(this.bufs[(this.head + i) % this.cap] as Uint8Array);
    }
    while (bufs.length < cap) bufs.push(new Uint8Array(64));
    this.bufs = bufs;
    this.lens = lens;
    this.handoff = handoff;
    this.at = at;
    this.flagsA = flags;
    this.head = 0;
    this.cap = cap;
  }
}
