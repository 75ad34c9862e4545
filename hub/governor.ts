// The ingress byte governor (docs/operations.md "Health, admission and overload"). On top of §10.5's per-publication token buckets, which meter samples per
// granted publication, it bounds the bytes each session and the hub as a whole take in over a
// sliding one-second window, so that no client — and no crowd of clients — can spend the comms
// core's time on decoding more than the hub budgets for.
//
// Scopes, checked in this order, the first exceeded one rejecting:
//   session  the session's bytes in the last second + this frame > sessionBytesPerS
//            ⇒ REJECT_SESSION, reason `session_byte_budget_exceeded`
//   hub      every client's bytes in the last second + this frame > hubBytesPerS
//            ⇒ REJECT_HUB, reason `hub_byte_budget_exceeded`
// A rejection carries `retryAfterMs`: the time until enough of the scope's bytes have aged out
// for this frame to fit (the hub sends it as NACK INGRESS_BUDGET's retry_after_ms) and the hint
// `downsample`. An accepted frame after which either scope's use has reached
// GOVERNOR_DOWNSAMPLE_RATIO of its budget is ACCEPT_DOWNSAMPLE: accepted, with the same hint,
// so that a well-behaved client backs off before it starts losing frames (our design's
// DEGRADE_RATIO). Rejected bytes are not counted; accepted ones are, in both scopes.
//
// What the hub meters (docs/operations.md "Health, admission and overload" "Ingress governor"): every client frame but
// the ESTOP frame, which is never metered nor refused (§10.4, §11.2). BUNDLE frames are checked
// in both scopes; every other frame of a session in the session scope only (`hubScope` false:
// counted in the hub's window, never refused by it), so that a crowd of publishers cannot
// starve another session's INTENT, ACK or GOODBYE. Frames before HELLO have no session
// (slot -1) and are checked in the hub scope.
//
// The window is GOVERNOR_SLICES slices of GOVERNOR_SLICE_MS in a fixed ring per scope: it holds
// the current slice and the nine before it (900–1000 ms of history); a byte leaves it at the
// boundary one second after the start of its slice. Nothing is allocated per frame.

import { MAX_FRAME_BYTES } from './frame-types.js';
import { Nack } from './nack.js';

/** Reference 000: the windows are one second long ... */
export const GOVERNOR_WINDOW_MS = 1000;
/** ... kept as 10 slices of 100 ms (our decision: the granularity of the slide). */
export const GOVERNOR_SLICES = 10;
export const GOVERNOR_SLICE_MS = GOVERNOR_WINDOW_MS / GOVERNOR_SLICES;
/** Reference 000's DEGRADE_RATIO: an accept at or above this utilisation carries the downsample hint. */
export const GOVERNOR_DOWNSAMPLE_RATIO = 0.8;
/** Our decision (provisional, not measured on hardware): one session's ingress budget, bytes per second. */
export const DEFAULT_SESSION_BYTES_PER_S = 32768;
/** Our decision (provisional): the whole hub's ingress budget, bytes per second (three sessions at their full budget). */
export const DEFAULT_HUB_BYTES_PER_S = 98304;
/** The NACK a rejected frame gets (retryable). */
export const GOVERNOR_NACK = Nack.INGRESS_BUDGET;

export const GovernorVerdict = Object.freeze({
  ACCEPT: 0,
  ACCEPT_DOWNSAMPLE: 1,
  REJECT_SESSION: 2,
  REJECT_HUB: 3,
} as const);
export type GovernorVerdictCode = (typeof GovernorVerdict)[keyof typeof GovernorVerdict];
const { ACCEPT, ACCEPT_DOWNSAMPLE, REJECT_SESSION, REJECT_HUB } = GovernorVerdict;
/** Verdict → the typed reason a rejection carries ('' for accepts). */
export const GOVERNOR_REASONS = Object.freeze(['', '', 'session_byte_budget_exceeded', 'hub_byte_budget_exceeded'] as const);
/** Verdict → hint. Byte rejections and high-utilisation accepts hint downsample. */
export const GOVERNOR_HINTS = Object.freeze(['', 'downsample', 'downsample', 'downsample'] as const);

export interface GovernorOptions {
  readonly sessionBytesPerS: number;
  readonly hubBytesPerS: number;
}

export const DEFAULT_GOVERNOR_OPTIONS: GovernorOptions = Object.freeze({
  sessionBytesPerS: DEFAULT_SESSION_BYTES_PER_S,
  hubBytesPerS: DEFAULT_HUB_BYTES_PER_S,
});

const floor = Math.floor;

function sliceIndex(slice: number): number {
  const i = slice % GOVERNOR_SLICES;
  return i < 0 ? i + GOVERNOR_SLICES : i;
}

export class IngressGovernor {
  readonly slots: number;
  readonly sessionBytesPerS: number;
  readonly hubBytesPerS: number;
  // Scope k (0..slots-1: sessions, `slots`: the hub) owns ring[k × SLICES, (k + 1) × SLICES),
  // the bytes of the whole window in used[k], and its newest slice number in head[k]. Every
  // frame is metered, so a frame touches as little as it can: it adds its bytes to used[k] only,
  // before until[k] (the end of the newest slice) the window has not moved, and the newest
  // slice's own bytes (used[k] − older[k], older[k] the bytes of the slices before it) are
  // written into the ring, at at[k], only when the window moves or a rejection reads the ring.
  private readonly ring: Float64Array;
  private readonly used: Float64Array;
  private readonly older: Float64Array;
  private readonly head: Float64Array;
  private readonly at: Float64Array;
  private readonly until: Float64Array;
  /** The last rejection's retry hint, ms (0 after an accept). */
  retryAfterMs = 0;
  /** The utilisation (0..) after the last accept, or that the rejected frame would have made. */
  utilisation = 0;
  /** Verdicts so far, by code. */
  readonly verdicts: Float64Array;
  bytesAccepted = 0;
  bytesRejected = 0;

  constructor(slots: number, options: Partial<GovernorOptions> = {}) {
    if (!Number.isInteger(slots) || slots < 1) throw new RangeError('IngressGovernor slots must be an integer ≥ 1');
    const o = { ...DEFAULT_GOVERNOR_OPTIONS, ...options };
    // A budget below one largest client frame would refuse that frame forever.
    if (!(o.sessionBytesPerS >= MAX_FRAME_BYTES) || !(o.hubBytesPerS >= o.sessionBytesPerS)) {
      throw new RangeError(`IngressGovernor budgets must satisfy ${MAX_FRAME_BYTES} ≤ session ≤ hub`);
    }
    this.slots = slots;
    this.sessionBytesPerS = o.sessionBytesPerS;
    this.hubBytesPerS = o.hubBytesPerS;
    // The arrays share one buffer (on XS a buffer costs heap slots of its own).
    const scopes = slots + 1;
    const buffer = new ArrayBuffer((scopes * (GOVERNOR_SLICES + 5) + 4) * 8);
    let offset = 0;
    const f64 = (n: number): Float64Array => {
      const a = new Float64Array(buffer, offset, n);
      offset += n * 8;
      return a;
    };
    this.ring = f64(scopes * GOVERNOR_SLICES);
    this.used = f64(scopes);
    this.older = f64(scopes);
    this.head = f64(scopes).fill(-Infinity);
    this.at = f64(scopes);
    this.until = f64(scopes).fill(-Infinity);
    this.verdicts = f64(4);
    for (let k = 0; k < scopes; k++) this.at[k] = k * GOVERNOR_SLICES;
  }

  /**
   * One client frame of `bytes` from the session in `slot` (-1: no session yet) at `now`.
   * `hubScope` false: counted in the hub's window but never refused by it (non-BUNDLE frames).
   */
  admit(slot: number, bytes: number, now: number, hubScope = true): GovernorVerdictCode {
    // Every client frame comes here: few locals (on XS each costs at every call about what a few
    // reads of a field do), the arrays read through `this`.
    const hub = this.slots;
    if (!(bytes > 0)) bytes = 0;
    if (now >= (this.until[hub] as number)) this.advance(hub, now);
    let u = 0;
    let after = 0;
    if (slot >= 0 && slot < hub) {
      if (now >= (this.until[slot] as number)) this.advance(slot, now);
      after = (this.used[slot] as number) + bytes;
      u = after / this.sessionBytesPerS;
      if (after > this.sessionBytesPerS) return this.reject(REJECT_SESSION, slot, bytes, now, u);
    } else slot = -1; // no session's scope
    if (hubScope && (this.used[hub] as number) + bytes > this.hubBytesPerS) return this.reject(REJECT_HUB, hub, bytes, now, ((this.used[hub] as number) + bytes) / this.hubBytesPerS);
    // The bytes go into each window's newest slice (a clock that stepped back writes there too).
    if (slot >= 0) this.used[slot] = after;
    after = (this.used[hub] as number) + bytes;
    this.used[hub] = after;
    if (after / this.hubBytesPerS > u) u = after / this.hubBytesPerS;
    this.bytesAccepted += bytes;
    this.retryAfterMs = 0;
    this.utilisation = u;
    if (u >= GOVERNOR_DOWNSAMPLE_RATIO) {
      this.verdicts[ACCEPT_DOWNSAMPLE]!++;
      return ACCEPT_DOWNSAMPLE;
    }
    this.verdicts[ACCEPT]!++;
    return ACCEPT;
  }

  /** Bytes the session in `slot` has had accepted in the window at `now`. */
  sessionUsed(slot: number, now: number): number {
    if (!(slot >= 0 && slot < this.slots)) return 0;
    this.advance(slot, now);
    return this.used[slot] as number;
  }

  /** Bytes every client has had accepted in the window at `now`. */
  hubUsed(now: number): number {
    this.advance(this.slots, now);
    return this.used[this.slots] as number;
  }

  /** A new session takes the slot: it starts with nothing used (a resume keeps its slot's window). */
  resetSession(slot: number): void {
    if (!(slot >= 0 && slot < this.slots)) return;
    const base = slot * GOVERNOR_SLICES;
    for (let i = 0; i < GOVERNOR_SLICES; i++) this.ring[base + i] = 0;
    this.used[slot] = 0;
    this.older[slot] = 0;
  }

  get accepted(): number {
    return (this.verdicts[GovernorVerdict.ACCEPT] as number) + (this.verdicts[GovernorVerdict.ACCEPT_DOWNSAMPLE] as number);
  }

  get downsampleHints(): number {
    return this.verdicts[GovernorVerdict.ACCEPT_DOWNSAMPLE] as number;
  }

  get rejectedSession(): number {
    return this.verdicts[GovernorVerdict.REJECT_SESSION] as number;
  }

  get rejectedHub(): number {
    return this.verdicts[GovernorVerdict.REJECT_HUB] as number;
  }

  private reject(v: GovernorVerdictCode, scope: number, bytes: number, now: number, u: number): GovernorVerdictCode {
    this.verdicts[v] = (this.verdicts[v] as number) + 1;
    this.ring[this.at[scope] as number] = (this.used[scope] as number) - (this.older[scope] as number);
    this.bytesRejected += bytes;
    this.utilisation = u;
    this.retryAfterMs = this.msUntilFits(scope, bytes, now, v === GovernorVerdict.REJECT_SESSION ? this.sessionBytesPerS : this.hubBytesPerS);
    return v;
  }

  // The oldest slices leave first; slice s leaves at the start of slice s + SLICES.
  private msUntilFits(scope: number, bytes: number, now: number, budget: number): number {
    const head = this.head[scope] as number;
    const base = scope * GOVERNOR_SLICES;
    let left = this.used[scope] as number;
    for (let s = head - GOVERNOR_SLICES + 1; s <= head; s++) {
      left -= this.ring[base + sliceIndex(s)] as number;
      if (left + bytes <= budget) {
        const ms = (s + GOVERNOR_SLICES) * GOVERNOR_SLICE_MS - now;
        return ms > 1 ? Math.ceil(ms) : 1;
      }
    }
    return GOVERNOR_WINDOW_MS;
  }

  // Slices older than the window are emptied as the window slides past them. A clock that steps
  // back writes into the newest slice rather than reopening an old one. This runs whenever a
  // frame comes after its scope's newest slice ended: its slice index is written out (sliceIndex).
  private advance(scope: number, now: number): void {
    const slice = floor(now / GOVERNOR_SLICE_MS);
    const head = this.head[scope] as number;
    if (!(slice > head)) return;
    const base = scope * GOVERNOR_SLICES;
    this.ring[this.at[scope] as number] = (this.used[scope] as number) - (this.older[scope] as number);
    let u = 0;
    let i = 0;
    if (slice - head >= GOVERNOR_SLICES) this.ring.fill(0, base, base + GOVERNOR_SLICES);
    else {
      u = this.used[scope] as number;
      for (let s = head + 1; s <= slice; s++) {
        i = s % GOVERNOR_SLICES;
        if (i < 0) i += GOVERNOR_SLICES;
        u -= this.ring[base + i] as number;
        this.ring[base + i] = 0;
      }
      if (!(u > 0)) u = 0;
    }
    this.used[scope] = u;
    // The new newest slice is empty: everything in the window is older.
    this.older[scope] = u;
    this.head[scope] = slice;
    i = slice % GOVERNOR_SLICES;
    this.at[scope] = base + (i < 0 ? i + GOVERNOR_SLICES : i);
    this.until[scope] = (slice + 1) * GOVERNOR_SLICE_MS;
  }
}
