// §10.4 conformance: prints the shedding table's decision for its whole input space as one
// JSON array, from the same shedDecide the hub calls, so another implementation can be
// checked against ours. Order: level, priority, class, kind, firstPush.

import { ChannelClass, StreamKind } from '../catalog/schema.js';
import { PRIORITY_NAMES } from '../hub/constants.js';
import {
  NO_STREAM_KIND,
  SHED_DECISION_NAME,
  shedDecide,
  shedDecision,
  shedRow,
} from '../hub/shed.js';

type KindName = 'samples' | 'segments' | null;

interface Entry {
  level: number;
  priority: string;
  class: string;
  kind: KindName;
  firstPush: boolean;
  row: number;
  decision: string;
}

// Level 3 stands for every level ≥ 2 (§10.3: "≥ 2 = severe").
const LEVELS = [0, 1, 2, 3];
const CLASS_KINDS: ReadonlyArray<readonly [string, number, KindName, number]> = [
  ['STREAM', ChannelClass.STREAM, 'samples', StreamKind.samples],
  ['STREAM', ChannelClass.STREAM, 'segments', StreamKind.segments],
  ['STATE', ChannelClass.STATE, null, NO_STREAM_KIND],
  ['EVENT', ChannelClass.EVENT, null, NO_STREAM_KIND],
];

const out: Entry[] = [];
for (const level of LEVELS) {
  for (let priority = 0; priority < PRIORITY_NAMES.length; priority++) {
    for (const [className, cls, kindName, kind] of CLASS_KINDS) {
      for (const firstPush of [false, true]) {
        const packed = shedDecide(level, priority, cls, kind, firstPush);
        out.push({
          level,
          priority: PRIORITY_NAMES[priority]!,
          class: className,
          kind: kindName,
          firstPush,
          row: shedRow(packed),
          decision: SHED_DECISION_NAME[shedDecision(packed)]!,
        });
      }
    }
  }
}

// One object per line: valid JSON, and diffable row by row.
process.stdout.write('[\n' + out.map((e) => JSON.stringify(e)).join(',\n') + '\n]\n');
