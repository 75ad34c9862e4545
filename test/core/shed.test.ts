import { ChannelClass, StreamKind } from '../../catalog/schema.js';
import {
  Decimator,
  NO_STREAM_KIND,
  SHED_DECISION,
  SHED_DECISION_NAME,
  SHED_ROWS,
  decimationFactor,
  sameValues,
  shedDecide,
  shedDecision,
  shedRow,
} from '../../hub/shed.js';
import { deepEqual, equal, ok } from '../lib/assert.js';

// The expectation is written from §10.4 alone: its own codes (as the protocol and the brief
// number them) and the rows as data, evaluated first match. It shares nothing with hub/shed.ts
// beyond the function under test.
type Pri = 'background' | 'normal' | 'elevated' | 'critical';
type Cls = 'STREAM' | 'STATE' | 'EVENT' | 'INTENT';
type Kind = 'samples' | 'segments' | null;
type Decision = 'send' | 'decimate4' | 'decimate2' | 'conflate' | 'drop' | 'drop_source';

interface Input {
  level: number;
  pri: Pri;
  cls: Cls;
  kind: Kind;
  first: boolean;
}

const PRI_CODE: Record<Pri, number> = { background: 0, normal: 1, elevated: 2, critical: 3 };
const CLS_CODE: Record<Cls, number> = { STREAM: 0, STATE: 1, EVENT: 2, INTENT: 3 };
const KIND_CODE = (k: Kind): number => (k === 'samples' ? 0 : k === 'segments' ? 1 : -1);

const seg = (i: Input): boolean => i.cls === 'STREAM' && i.kind === 'segments';
const l1 = (i: Input): boolean => i.level === 1;
const l2 = (i: Input): boolean => i.level >= 2;

const TABLE: ReadonlyArray<readonly [number, (i: Input) => boolean, Decision]> = [
  [1, (i) => i.level === 0, 'send'],
  [2, (i) => i.pri === 'critical', 'send'],
  [3, (i) => i.first, 'send'],
  [4, (i) => seg(i) && l1(i), 'send'],
  [5, (i) => seg(i) && l2(i) && i.pri === 'elevated', 'send'],
  [6, (i) => seg(i) && l2(i) && (i.pri === 'background' || i.pri === 'normal'), 'drop_source'],
  [7, (i) => l1(i) && i.pri === 'background' && i.cls === 'STREAM', 'decimate4'],
  [8, (i) => l1(i) && i.pri === 'background' && i.cls === 'STATE', 'conflate'],
  [9, (i) => l1(i) && i.pri === 'background' && i.cls !== 'STREAM' && i.cls !== 'STATE', 'send'],
  [10, (i) => l1(i) && i.pri === 'normal' && i.cls === 'STREAM', 'decimate2'],
  [11, (i) => l1(i) && i.pri === 'normal' && i.cls !== 'STREAM', 'send'],
  [12, (i) => l1(i) && i.pri === 'elevated', 'send'],
  [13, (i) => l2(i) && i.pri === 'background', 'drop'],
  [14, (i) => l2(i) && i.pri === 'normal', 'decimate4'],
  [15, (i) => l2(i) && i.pri === 'elevated', 'decimate2'],
];

function expected(i: Input): readonly [number, Decision] {
  for (const [row, when, decision] of TABLE) if (when(i)) return [row, decision];
  throw new Error(`no row matches ${JSON.stringify(i)}`);
}

function decide(i: Input): readonly [number, string] {
  const packed = shedDecide(i.level, PRI_CODE[i.pri], CLS_CODE[i.cls], KIND_CODE(i.kind), i.first);
  return [shedRow(packed), SHED_DECISION_NAME[shedDecision(packed)]!];
}

const PRIS: readonly Pri[] = ['background', 'normal', 'elevated', 'critical'];
const CLASS_KINDS: ReadonlyArray<readonly [Cls, Kind]> = [
  ['STREAM', 'samples'],
  ['STREAM', 'segments'],
  ['STATE', null],
  ['EVENT', null],
  ['INTENT', null],
];

// Levels 0..5: 3, 4 and 5 must behave as 2 (§10.3: "≥ 2 = severe").
function space(): Input[] {
  const all: Input[] = [];
  for (let level = 0; level <= 5; level++) {
    for (const pri of PRIS) {
      for (const [cls, kind] of CLASS_KINDS) {
        for (const first of [false, true]) all.push({ level, pri, cls, kind, first });
      }
    }
  }
  return all;
}

describe('hub/shed: §10.4 shedding table', () => {
  it('§10.4 decision codes and names', () => {
    deepEqual({ ...SHED_DECISION }, { send: 0, decimate4: 1, decimate2: 2, conflate: 3, drop: 4, drop_source: 5 });
    deepEqual([...SHED_DECISION_NAME], ['send', 'decimate4', 'decimate2', 'conflate', 'drop', 'drop_source']);
    equal(SHED_ROWS, 15);
    equal(NO_STREAM_KIND, -1);
    ok(Object.isFrozen(SHED_DECISION) && Object.isFrozen(SHED_DECISION_NAME), 'frozen');
  });

  it('§10.4 whole input space (levels 0..5) matches the rows evaluated first-match', () => {
    const all = space();
    equal(all.length, 6 * 4 * 5 * 2);
    const reached = new Set<number>();
    for (const input of all) {
      const [row, decision] = expected(input);
      const got = decide(input);
      deepEqual(got, [row, decision], JSON.stringify(input));
      reached.add(row);
    }
    for (let row = 1; row <= 15; row++) ok(reached.has(row), `row ${row} reached`);
  });

  it('§10.3 levels ≥ 3 decide exactly as level 2', () => {
    for (const input of space()) {
      if (input.level < 3) continue;
      deepEqual(decide(input), decide({ ...input, level: 2 }), JSON.stringify(input));
    }
  });

  describe('§10.4 each row by hand', () => {
    const S = ChannelClass.STREAM;
    const ST = ChannelClass.STATE;
    const EV = ChannelClass.EVENT;
    const SMP = StreamKind.samples;
    const SEG = StreamKind.segments;
    const NO = NO_STREAM_KIND;
    const cases: ReadonlyArray<readonly [string, number, number, number, number, boolean, number, string]> = [
      ['row 1: level 0 sends even background segments', 0, 0, S, SEG, false, 1, 'send'],
      ['row 2: critical sends at level 5', 5, 3, S, SMP, false, 2, 'send'],
      ['row 2: critical wins before first push', 2, 3, ST, NO, true, 2, 'send'],
      ['row 3: first push since the grant sends at level 2 background', 2, 0, S, SMP, true, 3, 'send'],
      ['row 3: comes before the segment rows', 2, 0, S, SEG, true, 3, 'send'],
      ['row 4: segments at level 1 send', 1, 0, S, SEG, false, 4, 'send'],
      ['row 5: segments at level 2, elevated, send', 2, 2, S, SEG, false, 5, 'send'],
      ['row 6: segments at level 2, normal, drop whole source', 2, 1, S, SEG, false, 6, 'drop_source'],
      ['row 6: segments at level 4, background, drop whole source', 4, 0, S, SEG, false, 6, 'drop_source'],
      ['row 7: level 1, background, STREAM decimates 4×', 1, 0, S, SMP, false, 7, 'decimate4'],
      ['row 8: level 1, background, STATE conflates hard', 1, 0, ST, NO, false, 8, 'conflate'],
      ['row 9: level 1, background, EVENT sends', 1, 0, EV, NO, false, 9, 'send'],
      ['row 10: level 1, normal, STREAM decimates 2×', 1, 1, S, SMP, false, 10, 'decimate2'],
      ['row 11: level 1, normal, STATE sends', 1, 1, ST, NO, false, 11, 'send'],
      ['row 11: level 1, normal, EVENT sends', 1, 1, EV, NO, false, 11, 'send'],
      ['row 12: level 1, elevated, STREAM sends', 1, 2, S, SMP, false, 12, 'send'],
      ['row 13: level 2, background, STATE drops', 2, 0, ST, NO, false, 13, 'drop'],
      ['row 13: level 2, background, STREAM drops', 2, 0, S, SMP, false, 13, 'drop'],
      ['row 14: level 2, normal, STREAM decimates 4×', 2, 1, S, SMP, false, 14, 'decimate4'],
      ['row 14: level 2, normal, EVENT decimates 4×', 2, 1, EV, NO, false, 14, 'decimate4'],
      ['row 15: level 3, elevated, EVENT decimates 2×', 3, 2, EV, NO, false, 15, 'decimate2'],
      ['row 15: level 2, elevated, STATE decimates 2×', 2, 2, ST, NO, false, 15, 'decimate2'],
    ];
    for (const [name, level, pri, cls, kind, first, row, decision] of cases) {
      it(name, () => {
        const packed = shedDecide(level, pri, cls, kind, first);
        equal(shedRow(packed), row, 'row');
        equal(SHED_DECISION_NAME[shedDecision(packed)], decision, 'decision');
      });
    }
  });

  it('§10.4 segments are never decimated, at any level or priority', () => {
    let seen = 0;
    for (const input of space()) {
      if (!seg(input)) continue;
      const [row, decision] = decide(input);
      ok(decision !== 'decimate4' && decision !== 'decimate2', `${JSON.stringify(input)} → row ${row} ${decision}`);
      ok(decision === 'send' || decision === 'drop_source', decision);
      seen++;
    }
    equal(seen, 6 * 4 * 2);
  });

  it('§10.1 critical is always sent, at every level and class', () => {
    for (const input of space()) {
      if (input.pri !== 'critical') continue;
      const [row, decision] = decide(input);
      equal(decision, 'send', JSON.stringify(input));
      equal(row, input.level === 0 ? 1 : 2, JSON.stringify(input));
    }
  });

  it('§10.4 samples-kind STREAM does decimate where segments do not', () => {
    deepEqual(decide({ level: 1, pri: 'background', cls: 'STREAM', kind: 'samples', first: false }), [7, 'decimate4']);
    deepEqual(decide({ level: 1, pri: 'background', cls: 'STREAM', kind: 'segments', first: false }), [4, 'send']);
  });

  describe('documented answers to out-of-range inputs', () => {
    const S = ChannelClass.STREAM;
    const SMP = StreamKind.samples;
    it('a negative or NaN level is clear (row 1)', () => {
      equal(shedRow(shedDecide(-1, 0, S, SMP, false)), 1);
      equal(shedRow(shedDecide(NaN, 0, S, SMP, false)), 1);
    });
    it('an unknown priority code sheds as background', () => {
      for (const pri of [-1, 4, 99, NaN, 0.5]) {
        equal(shedRow(shedDecide(1, pri, S, SMP, false)), 7, `level 1, priority ${pri}`);
        equal(shedRow(shedDecide(2, pri, S, SMP, false)), 13, `level 2, priority ${pri}`);
        equal(shedRow(shedDecide(2, pri, S, StreamKind.segments, false)), 6, `segments, priority ${pri}`);
      }
    });
    it('INTENT and unknown classes are "other classes"', () => {
      for (const cls of [ChannelClass.INTENT, 7]) {
        equal(shedRow(shedDecide(1, 0, cls, -1, false)), 9);
        equal(shedRow(shedDecide(1, 1, cls, -1, false)), 11);
        equal(shedRow(shedDecide(2, 1, cls, -1, false)), 14);
      }
    });
    it('kind is read only for STREAM; a STREAM without kind is samples-kind', () => {
      equal(shedRow(shedDecide(1, 0, ChannelClass.STATE, StreamKind.segments, false)), 8);
      equal(shedRow(shedDecide(2, 0, ChannelClass.EVENT, StreamKind.segments, false)), 13);
      equal(shedRow(shedDecide(1, 0, S, NO_STREAM_KIND, false)), 7);
    });
  });

  it('§10.4 is deterministic: the same input gives the same packed number every time', () => {
    const inputs = space();
    const first = inputs.map((i) => shedDecide(i.level, PRI_CODE[i.pri], CLS_CODE[i.cls], KIND_CODE(i.kind), i.first));
    for (let round = 0; round < 50; round++) {
      // Walk the space in a different order each round: no call may influence another.
      for (let k = 0; k < inputs.length; k++) {
        const j = (k * 7 + round * 13) % inputs.length;
        const i = inputs[j]!;
        equal(shedDecide(i.level, PRI_CODE[i.pri], CLS_CODE[i.cls], KIND_CODE(i.kind), i.first), first[j], JSON.stringify(i));
      }
    }
    const one = shedDecide(1, 0, ChannelClass.STREAM, StreamKind.samples, false);
    for (let n = 0; n < 10000; n++) equal(shedDecide(1, 0, ChannelClass.STREAM, StreamKind.samples, false), one);
  });

  it('packed number: row in the low 4 bits, decision above', () => {
    const packed = shedDecide(2, 1, ChannelClass.STREAM, StreamKind.segments, false);
    equal(packed & 0xf, 6);
    equal(packed >>> 4, SHED_DECISION.drop_source);
    ok(Number.isInteger(packed) && packed >= 0, 'a small non-negative integer');
  });
});

describe('hub/shed: §10.4 actions', () => {
  it('decimationFactor: 4 and 2 for decimations, 1 otherwise', () => {
    equal(decimationFactor(SHED_DECISION.decimate4), 4);
    equal(decimationFactor(SHED_DECISION.decimate2), 2);
    for (const d of [SHED_DECISION.send, SHED_DECISION.conflate, SHED_DECISION.drop, SHED_DECISION.drop_source]) {
      equal(decimationFactor(d), 1);
    }
  });

  // Feeds samples 1..count, admitting each at push time; returns the values sent.
  function feed(d: Decimator, n: number, from: number, count: number, sent: number[]): void {
    for (let v = from; v < from + count; v++) if (d.admit(n)) sent.push(v);
  }

  it('Decimator 4× keeps pushes #4, #8, #12: the newest at the moment it sends', () => {
    const d = new Decimator();
    const sent: number[] = [];
    feed(d, 4, 1, 12, sent);
    deepEqual(sent, [4, 8, 12]);
  });

  it('Decimator 2× keeps every second push', () => {
    const d = new Decimator();
    const sent: number[] = [];
    feed(d, 2, 1, 7, sent);
    deepEqual(sent, [2, 4, 6]);
  });

  it('Decimator never defers: a dropped push is gone, later pushes do not release it', () => {
    const d = new Decimator();
    const answers: boolean[] = [];
    for (let k = 0; k < 8; k++) answers.push(d.admit(4));
    deepEqual(answers, [false, false, false, true, false, false, false, true]);
    // Leaving decimation sends the very next push and nothing owed from before.
    equal(d.admit(1), true);
    equal(d.admit(1), true);
  });

  it('Decimator restarts its count when n changes or decimation starts again', () => {
    const d = new Decimator();
    const sent: number[] = [];
    feed(d, 4, 1, 3, sent); // three pushes counted toward a 4×
    feed(d, 2, 4, 4, sent); // 2× starts afresh: pushes 5 and 7
    deepEqual(sent, [5, 7]);
    d.admit(2); // one push counted toward the next 2×
    d.reset();
    const after: number[] = [];
    feed(d, 4, 100, 8, after);
    deepEqual(after, [103, 107]);
    // Sending in between (factor 1) also restarts the next decimation.
    const d2 = new Decimator();
    const s2: number[] = [];
    feed(d2, 4, 1, 2, s2);
    feed(d2, 1, 3, 1, s2);
    feed(d2, 4, 4, 4, s2);
    deepEqual(s2, [3, 7]);
  });

  it('Decimator at factor 1 admits every push', () => {
    const d = new Decimator();
    for (let k = 0; k < 5; k++) equal(d.admit(1), true);
  });

  it('sameValues: equal prefixes up to the given lengths', () => {
    const a = new Float64Array([1, 2, 3, 9]);
    const b = new Float64Array([1, 2, 3, 8]);
    equal(sameValues(a, 3, b, 3), true);
    equal(sameValues(a, 4, b, 4), false);
    equal(sameValues(a, 3, b, 2), false);
    equal(sameValues(a, 0, b, 0), true);
  });

  it('sameValues: one changed value is a change (row 8 sends it)', () => {
    const a = new Float64Array([0.5, -1, 7]);
    const b = new Float64Array([0.5, -1, 7]);
    equal(sameValues(a, 3, b, 3), true);
    b[1] = -1.0000001;
    equal(sameValues(a, 3, b, 3), false);
  });

  it('sameValues: NaN equals NaN, 0 equals -0, NaN differs from a number', () => {
    equal(sameValues(new Float64Array([NaN, 0]), 2, new Float64Array([NaN, -0]), 2), true);
    equal(sameValues(new Float64Array([NaN]), 1, new Float64Array([1]), 1), false);
    equal(sameValues(new Float64Array([1]), 1, new Float64Array([NaN]), 1), false);
  });

  it('sameValues: a length beyond the array or negative reads as changed', () => {
    const a = new Float64Array(2);
    const b = new Float64Array(2);
    equal(sameValues(a, 3, b, 3), false);
    equal(sameValues(a, -1, b, -1), false);
  });
});
