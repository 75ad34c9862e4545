// §10.4: the normative shedding table, evaluated per (subscriber, channel) push, and the
// state-free helpers of its actions (decimate, conflate). Pure, constant time, allocation-free.

import { ChannelClass, Priority, StreamKind } from '../catalog/schema.js';
import { LEVEL_CONGESTED, LEVEL_SEVERE } from './constants.js';

// The kind argument for a channel that is not a STREAM (§9.2: only STREAM has a stream_kind).
export const NO_STREAM_KIND = -1;

export const SHED_DECISION = Object.freeze({
  send: 0,
  decimate4: 1,
  decimate2: 2,
  conflate: 3,
  drop: 4,
  drop_source: 5,
} as const);
export type ShedDecision = (typeof SHED_DECISION)[keyof typeof SHED_DECISION];

// Index = decision code.
export const SHED_DECISION_NAME = Object.freeze([
  'send',
  'decimate4',
  'decimate2',
  'conflate',
  'drop',
  'drop_source',
] as const);

export const SHED_ROWS = 15;

// Packed result: bits 0..3 the row (1..15), bits 4..7 the decision code.
const ROW_BITS = 4;
const ROW_MASK = 0xf;

function pack(row: number, decision: ShedDecision): number {
  return (decision << ROW_BITS) | row;
}

export function shedRow(packed: number): number {
  return packed & ROW_MASK;
}

export function shedDecision(packed: number): ShedDecision {
  return (packed >>> ROW_BITS) as ShedDecision;
}

const D = SHED_DECISION;
const ROW_1 = pack(1, D.send);
const ROW_2 = pack(2, D.send);
const ROW_3 = pack(3, D.send);
const ROW_4 = pack(4, D.send);
const ROW_5 = pack(5, D.send);
const ROW_6 = pack(6, D.drop_source);
const ROW_7 = pack(7, D.decimate4);
const ROW_8 = pack(8, D.conflate);
const ROW_9 = pack(9, D.send);
const ROW_10 = pack(10, D.decimate2);
const ROW_11 = pack(11, D.send);
const ROW_12 = pack(12, D.send);
const ROW_13 = pack(13, D.drop);
const ROW_14 = pack(14, D.decimate4);
const ROW_15 = pack(15, D.decimate2);

const { background: BACKGROUND, normal: NORMAL, elevated: ELEVATED, critical: CRITICAL } = Priority;
const STREAM = ChannelClass.STREAM;
const STATE = ChannelClass.STATE;
const SEGMENTS = StreamKind.segments;

// §10.4: the table, first matching row wins, rows in written order. Out-of-range inputs are
// caller bugs; they get a defined answer rather than a throw, chosen so that nothing unknown
// outranks what the catalog declared:
//  - level: ≥ 2 is severe, ≥ 1 congested, anything else (0, negative, NaN) clear (§10.3).
//  - priority: a code other than 1, 2 or 3 sheds as background, the class that goes first.
//  - cls: STATE is read only by row 8 and STREAM by rows 4–7 and 10; every other code,
//    INTENT (3) included, is one of the "other classes" of rows 9 and 11. INTENT traffic is
//    in the never-shed set (§10.1), so the hub asks with priority critical and row 2 answers.
//  - kind: only segments (1) on a STREAM selects rows 4–6; otherwise kind is not read, so a
//    STREAM with any other kind is samples-kind. The kind comes from the catalog's
//    stream_kind, never from a heuristic (§10.4).
export function shedDecide(
  level: number,
  priority: number,
  cls: number,
  kind: number,
  firstPush: boolean,
): number {
  if (!(level >= LEVEL_CONGESTED)) return ROW_1; // row 1: level 0
  if (priority === CRITICAL) return ROW_2; // row 2: the never-shed set, all levels and classes
  if (firstPush) return ROW_3; // row 3: §9.1, never strand a session mid-adoption

  const severe = level >= LEVEL_SEVERE;
  const p = priority === NORMAL || priority === ELEVATED ? priority : BACKGROUND;
  // §10.4: segments shed whole-source or not at all, never decimated.
  const segments = cls === STREAM && kind === SEGMENTS;

  if (segments && !severe) return ROW_4; // row 4: segments, level 1
  if (segments && p === ELEVATED) return ROW_5; // row 5: segments, level ≥ 2, elevated
  if (segments) return ROW_6; // row 6: segments, level ≥ 2, background or normal

  if (!severe) {
    if (p === BACKGROUND && cls === STREAM) return ROW_7; // row 7: level 1, background, STREAM
    if (p === BACKGROUND && cls === STATE) return ROW_8; // row 8: level 1, background, STATE
    if (p === BACKGROUND) return ROW_9; // row 9: level 1, background, other classes
    if (p === NORMAL && cls === STREAM) return ROW_10; // row 10: level 1, normal, STREAM
    if (p === NORMAL) return ROW_11; // row 11: level 1, normal, other classes
    return ROW_12; // row 12: level 1, elevated
  }

  if (p === BACKGROUND) return ROW_13; // row 13: level ≥ 2, background
  if (p === NORMAL) return ROW_14; // row 14: level ≥ 2, normal
  return ROW_15; // row 15: level ≥ 2, elevated
}

// §10.4: the thinning factor of a decision; 1 for anything that is not a decimation.
export function decimationFactor(decision: number): number {
  if (decision === D.decimate4) return 4;
  if (decision === D.decimate2) return 2;
  return 1;
}

// §10.4 "Decimate": newest-biased thinning, one per subscription. Of every n pushes the n-th
// is sent, i.e. the newest at that moment; the others are dropped at push time and never held,
// because a hub MUST NOT delay-and-burst. When n changes (decimation starts, or moves between
// 2× and 4×) the count restarts, so no earlier push is owed anything.
//
// The state is two numbers, the factor in force and the pushes counted toward it, at
// state[at] and state[at + 1]: the hub keeps them in its subscription table, two bytes per
// subscription (hub/session.ts), rather than in an object each. A Uint8Array holds the
// table's factors (1, 2 and 4); the Decimator keeps any n exactly in a Float64Array.
export const DECIMATION_STATE = 2;

export function decimate(state: Uint8Array | Float64Array, at: number, n: number): boolean {
  if (n !== state[at]) {
    state[at] = n;
    state[at + 1] = 0;
  }
  if (!(n > 1)) return true;
  const count = (state[at + 1] as number) + 1;
  if (count < n) {
    state[at + 1] = count;
    return false;
  }
  state[at + 1] = 0;
  return true;
}

// Call when the table stops decimating this subscription (or on a new grant, §9.1).
export function resetDecimation(state: Uint8Array | Float64Array, at: number): void {
  state[at] = 1;
  state[at + 1] = 0;
}

/** The decimation state of one subscription on its own. */
export class Decimator {
  private readonly state = new Float64Array([1, 0]);

  admit(n: number): boolean {
    return decimate(this.state, 0, n);
  }

  reset(): void {
    resetDecimation(this.state, 0);
  }
}

// §10.4 row 8 "Conflate hard": a STATE sample goes out only when its values changed since the
// last one sent. NaN equals NaN (a sensor stuck at NaN has not changed) and 0 equals -0. A
// negative length or one beyond its array is a caller bug and reads as "changed", so the
// sample is sent.
export function sameValues(a: Float64Array, aLen: number, b: Float64Array, bLen: number): boolean {
  if (aLen !== bLen || !(aLen >= 0) || aLen > a.length || bLen > b.length) return false;
  for (let i = 0; i < aLen; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (x !== y && (x === x || y === y)) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// The table as a lookup, for the hot path: shedDecide over every input a delivery can present,
// computed once at load. A route knows its class and kind (its `shedBase`); a delivery adds its
// subscription's priority, whether its first push is owed and its level, and reads one entry:
// no call, no branches. test/core/shed.test.ts holds it equal to shedDecide everywhere.

// The four class-and-kind combinations the table tells apart, each a block of 24 entries:
// priority (0–3) × first push (0, 1) × level (0, 1, ≥ 2).
const SHED_BLOCK = 24;
const CLASS_SAMPLES = 0;
const CLASS_SEGMENTS = 1;
const CLASS_STATE = 2;
const CLASS_OTHER = 3;

function lookupTable(): readonly number[] {
  const out: number[] = [];
  const classes = [
    [STREAM, StreamKind.samples],
    [STREAM, SEGMENTS],
    [STATE, NO_STREAM_KIND],
    [ChannelClass.EVENT, NO_STREAM_KIND],
  ];
  for (const [cls, kind] of classes) {
    for (let priority = 0; priority < 4; priority++) {
      for (let first = 0; first < 2; first++) {
        for (let level = 0; level < 3; level++) out.push(shedDecide(level, priority, cls as number, kind as number, first === 1));
      }
    }
  }
  return Object.freeze(out);
}

/** shedDecide for every (class and kind, priority, first push, level), packed as shedDecide packs. */
export const SHED_LOOKUP: readonly number[] = lookupTable();

/** Where a channel's block of SHED_LOOKUP starts. */
/** shedBase of a segments STREAM (§10.4 rows 4–6): how a route tells it is one. */
export const SEGMENTS_SHED_BASE = CLASS_SEGMENTS * SHED_BLOCK;

export function shedBase(cls: number, kind: number): number {
  if (cls === STREAM) return (kind === SEGMENTS ? CLASS_SEGMENTS : CLASS_SAMPLES) * SHED_BLOCK;
  return (cls === STATE ? CLASS_STATE : CLASS_OTHER) * SHED_BLOCK;
}

/** The entry of SHED_LOOKUP for a delivery: the route's base, its priority (0–3), first push (0, 1) and level (anything ≥ 2 severe; NaN, negative clear). */
export function shedIndex(base: number, priority: number, firstPush: number, level: number): number {
  return base + priority * 6 + firstPush * 3 + (level >= LEVEL_SEVERE ? 2 : level >= LEVEL_CONGESTED ? 1 : 0);
}
