// The simulator's kernel (docs/simulator.md): a virtual clock, one event
// queue ordered by (time, sequence) and one PRNG seeded by one integer, the only source of
// randomness in a run. Nothing in host-sim reads the wall clock or Math.random; the same scenario
// and seed therefore replay event for event.
//
// Time is kept in integer microseconds: link models need sub-millisecond resolution (a BLE
// notification or an ESP-NOW datagram takes a few hundred µs on air) and integers never drift.
// The hub sees whole milliseconds (`SimClock`), as it would from Moddable's `Time.ticks`.
//
// The queue is a binary heap of slot indices over parallel typed arrays: an event is (time,
// sequence, task, kind, arg) in a pooled slot, so scheduling allocates nothing once the pool has
// grown to the run's high-water mark. Tasks are objects with a `run(kind, arg)` method: one task
// object serves all of a component's events, told apart by `kind`.

import type { Clock, Random } from '../hub/ports.js';

export const US_PER_MS = 1000;

/** Milliseconds (possibly fractional) to the kernel's integer microseconds. */
export function usOf(ms: number): number {
  return Math.round(ms * US_PER_MS);
}

/** Something the kernel can call back. `kind` and `arg` are whatever the scheduler passed. */
export interface Task {
  run(kind: number, arg: number): void;
}

// ---------------------------------------------------------------------------------------------
// The PRNG: xoshiro128** (Blackman & Vigna), state seeded by splitmix32 from one integer.

function splitmix32(state: Uint32Array): number {
  state[0] = ((state[0] as number) + 0x9e3779b9) >>> 0;
  let z = state[0] as number;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
  return (z ^ (z >>> 16)) >>> 0;
}

export class Prng implements Random {
  private readonly s = new Uint32Array(4);
  /** Draws made so far: a cheap fingerprint of how a run consumed randomness. */
  draws = 0;

  /** Any integer in [0, 2^53): the high and low 32 bits both feed the seed. */
  constructor(seed: number) {
    if (!Number.isSafeInteger(seed) || seed < 0) throw new RangeError(`seed must be an integer in [0, 2^53), got ${seed}`);
    const sm = new Uint32Array([(seed >>> 0) ^ Math.imul(Math.floor(seed / 0x100000000), 0x27d4eb2f)]);
    for (let i = 0; i < 4; i++) this.s[i] = splitmix32(sm);
    // The all-zero state is the one state xoshiro cannot leave.
    if (((this.s[0] as number) | (this.s[1] as number) | (this.s[2] as number) | (this.s[3] as number)) === 0) this.s[0] = 1;
  }

  /** A uniform 32-bit unsigned integer. */
  u32(): number {
    const s = this.s;
    const s0 = s[0] as number;
    const s1 = s[1] as number;
    const s2 = s[2] as number;
    const s3 = s[3] as number;
    const r = Math.imul(rotl(Math.imul(s1, 5), 7), 9) >>> 0;
    const t = (s1 << 9) >>> 0;
    const n2 = (s2 ^ s0) >>> 0;
    const n3 = (s3 ^ s1) >>> 0;
    s[1] = s1 ^ n2;
    s[0] = s0 ^ n3;
    s[2] = n2 ^ t;
    s[3] = rotl(n3, 11);
    this.draws++;
    return r;
  }

  /** Uniform in [0, 1), 32 bits of resolution. */
  float(): number {
    return this.u32() / 0x100000000;
  }

  /** Uniform in [lo, hi). */
  range(lo: number, hi: number): number {
    return lo + (hi - lo) * this.float();
  }

  /** Uniform integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.float() * n);
  }

  /** True with probability p (always false for p ≤ 0, always true for p ≥ 1, no draw then). */
  chance(p: number): boolean {
    if (!(p > 0)) return false;
    if (p >= 1) return true;
    return this.float() < p;
  }

  /** Standard normal (Box–Muller; one of the pair is discarded to keep the draw count simple). */
  normal(): number {
    const u = 1 - this.float();
    const v = this.float();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }

  /** Exponentially distributed with the given mean. */
  exp(mean: number): number {
    return -Math.log(1 - this.float()) * mean;
  }

  /** Random bytes (the hub's `Random` port: resume tokens). */
  fill(into: Uint8Array): void {
    for (let i = 0; i < into.length; i += 4) {
      let x = this.u32();
      for (let k = 0; k < 4 && i + k < into.length; k++) {
        into[i + k] = x & 0xff;
        x >>>= 8;
      }
    }
  }
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

// ---------------------------------------------------------------------------------------------
// The event queue.

// A handle packs the slot and the slot's generation, so a stale handle never cancels a reused slot.
const SLOT_BITS = 2 ** 24;
const FREE = -1;
const CANCELLED = -2;

class FnTask implements Task {
  constructor(private readonly fn: () => void) {}
  run(): void {
    this.fn();
  }
}

export class Kernel {
  readonly rng: Prng;
  private t = 0;
  private seqNext = 0;
  private cap = 0;
  private time: Float64Array<ArrayBuffer> = new Float64Array(0);
  private seq: Float64Array<ArrayBuffer> = new Float64Array(0);
  private kinds: Int32Array<ArrayBuffer> = new Int32Array(0);
  private args: Float64Array<ArrayBuffer> = new Float64Array(0);
  private gens: Uint32Array<ArrayBuffer> = new Uint32Array(0);
  private tasks: (Task | null)[] = [];
  private heap = new Int32Array(0);
  private size = 0;
  private free: number[] = [];
  /** Events run since construction. */
  processed = 0;
  private yieldWanted = false;

  constructor(seed: number, initialCapacity = 1024) {
    this.rng = new Prng(seed);
    this.grow(initialCapacity);
  }

  /** Virtual time in integer microseconds. */
  get nowUs(): number {
    return this.t;
  }

  /** Virtual time in milliseconds (fractional). */
  get nowMs(): number {
    return this.t / US_PER_MS;
  }

  /** Events waiting. */
  get pending(): number {
    return this.size;
  }

  /** Time of the next event, or Infinity. */
  get nextUs(): number {
    return this.size > 0 ? (this.time[this.heap[0] as number] as number) : Infinity;
  }

  /** Runs `task.run(kind, arg)` at `atUs` (never before now). Returns a handle for `cancel`. */
  at(atUs: number, task: Task, kind = 0, arg = 0): number {
    if (this.free.length === 0) this.grow(this.cap * 2);
    const slot = this.free.pop() as number;
    const when = atUs > this.t ? Math.round(atUs) : this.t;
    this.time[slot] = when;
    this.seq[slot] = this.seqNext++;
    this.kinds[slot] = kind;
    this.args[slot] = arg;
    this.tasks[slot] = task;
    this.heap[this.size] = slot;
    this.up(this.size++);
    return (this.gens[slot] as number) * SLOT_BITS + slot;
  }

  /** Runs `task.run(kind, arg)` `delayUs` from now. */
  after(delayUs: number, task: Task, kind = 0, arg = 0): number {
    return this.at(this.t + (delayUs > 0 ? delayUs : 0), task, kind, arg);
  }

  /** A one-off callback (allocates: for rare events such as scenario faults and client timers). */
  timeout(delayUs: number, fn: () => void): number {
    return this.after(delayUs, new FnTask(fn));
  }

  /** Cancels a scheduled event; false when it already ran or was cancelled. */
  cancel(handle: number): boolean {
    if (!(handle >= 0)) return false;
    const slot = handle % SLOT_BITS;
    const gen = Math.floor(handle / SLOT_BITS);
    if (slot >= this.cap || this.gens[slot] !== gen || this.kinds[slot] === FREE || this.kinds[slot] === CANCELLED) return false;
    // Lazy deletion: the slot stays in the heap and is skipped (and freed) when it comes up.
    this.kinds[slot] = CANCELLED;
    this.tasks[slot] = null;
    return true;
  }

  /**
   * Asks `runUntil` to return after the current event, so that promise continuations (the client
   * library's) run at this virtual instant before time moves on.
   */
  requestYield(): void {
    this.yieldWanted = true;
  }

  /**
   * Runs every event due at or before `untilUs`, then sets the clock to `untilUs`. Returns false
   * when it stopped early because an event asked to yield (call again after the microtasks ran).
   */
  runUntil(untilUs: number): boolean {
    while (this.size > 0) {
      if (this.yieldWanted) {
        this.yieldWanted = false;
        return false;
      }
      const slot = this.heap[0] as number;
      const when = this.time[slot] as number;
      if (when > untilUs) break;
      this.pop();
      const kind = this.kinds[slot] as number;
      const task = this.tasks[slot];
      const arg = this.args[slot] as number;
      this.release(slot);
      if (kind === CANCELLED || task === null || task === undefined) continue;
      this.t = when;
      this.processed++;
      task.run(kind, arg);
    }
    if (this.yieldWanted) {
      this.yieldWanted = false;
      return false;
    }
    if (untilUs > this.t) this.t = untilUs;
    return true;
  }

  private release(slot: number): void {
    this.kinds[slot] = FREE;
    this.tasks[slot] = null;
    this.gens[slot] = ((this.gens[slot] as number) + 1) % 0x8000000;
    this.free.push(slot);
  }

  private grow(n: number): void {
    const cap = Math.max(16, n);
    const copyF = (a: Float64Array): Float64Array<ArrayBuffer> => {
      const b = new Float64Array(cap);
      b.set(a);
      return b;
    };
    this.time = copyF(this.time);
    this.seq = copyF(this.seq);
    this.args = copyF(this.args);
    const kinds = new Int32Array(cap).fill(FREE);
    kinds.set(this.kinds);
    this.kinds = kinds;
    const gens = new Uint32Array(cap);
    gens.set(this.gens);
    this.gens = gens;
    const heap = new Int32Array(cap);
    heap.set(this.heap);
    this.heap = heap;
    // Free slots are handed out lowest first so that runs are reproducible regardless of growth.
    for (let i = cap - 1; i >= this.cap; i--) {
      this.tasks.push(null);
      this.free.push(i);
    }
    this.tasks.length = cap;
    this.cap = cap;
  }

  private less(a: number, b: number): boolean {
    const ta = this.time[a] as number;
    const tb = this.time[b] as number;
    return ta < tb || (ta === tb && (this.seq[a] as number) < (this.seq[b] as number));
  }

  private up(i: number): void {
    const h = this.heap;
    const slot = h[i] as number;
    while (i > 0) {
      const p = (i - 1) >> 1;
      const ps = h[p] as number;
      if (!this.less(slot, ps)) break;
      h[i] = ps;
      i = p;
    }
    h[i] = slot;
  }

  private pop(): void {
    const h = this.heap;
    const last = h[--this.size] as number;
    if (this.size === 0) return;
    let i = 0;
    const n = this.size;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= n) break;
      const r = l + 1;
      const c = r < n && this.less(h[r] as number, h[l] as number) ? r : l;
      if (!this.less(h[c] as number, last)) break;
      h[i] = h[c] as number;
      i = c;
    }
    h[i] = last;
  }
}

/** The hub's Clock: whole milliseconds of virtual time (the device's `Time.ticks` resolution). */
export class SimClock implements Clock {
  constructor(private readonly kernel: Kernel) {}
  now(): number {
    return Math.floor(this.kernel.nowUs / US_PER_MS);
  }
}
