// Issue 3: the §10.4 table decision, once per (subscriber, channel) push, over a mixed input
// stream so that every row is taken (a single repeated input would measure one branch).
import { ChannelClass, Priority, StreamKind } from '../catalog/schema.js';
import { NO_STREAM_KIND, SHED_ROWS, shedDecide, shedRow } from '../hub/shed.js';
import type { OpBench } from './case.js';

const STREAM_LEN = 1024; // a power of two: the run indexes with a mask

export function shedDecideBench(): OpBench {
  const level = new Uint8Array(STREAM_LEN);
  const priority = new Uint8Array(STREAM_LEN);
  const cls = new Uint8Array(STREAM_LEN);
  const kind = new Int8Array(STREAM_LEN);
  const firstPush = new Uint8Array(STREAM_LEN);
  let sink = 0;
  return {
    kind: 'op',
    name: 'shed.decide',
    title: 'shedDecide over a mixed stream (levels 0/1/2, all priorities and classes)',
    issue: 3,
    op: 'decision',
    item: 'decision',
    xsOps: 4000,
    setup() {
      let x = 0x9e3779b9;
      const next = (m: number): number => {
        x ^= x << 13;
        x ^= x >>> 17;
        x ^= x << 5;
        x >>>= 0;
        return x % m;
      };
      const classes = [ChannelClass.STREAM, ChannelClass.STATE, ChannelClass.EVENT, ChannelClass.INTENT];
      for (let i = 0; i < STREAM_LEN; i++) {
        // Mostly congested or severe: level 0 returns at row 1 and would flatter the average.
        level[i] = [0, 1, 1, 2, 2][next(5)] as number;
        priority[i] = [Priority.background, Priority.normal, Priority.elevated, Priority.critical][next(4)] as number;
        const c = classes[next(4)] as number;
        cls[i] = c;
        kind[i] = c === ChannelClass.STREAM ? (next(3) === 0 ? StreamKind.segments : StreamKind.samples) : NO_STREAM_KIND;
        firstPush[i] = next(8) === 0 ? 1 : 0;
      }
      const seen = new Uint8Array(SHED_ROWS + 1);
      for (let i = 0; i < STREAM_LEN; i++) {
        seen[shedRow(shedDecide(level[i] as number, priority[i] as number, cls[i] as number, kind[i] as number, firstPush[i] === 1))] = 1;
      }
      for (let r = 1; r <= SHED_ROWS; r++) {
        if (seen[r] !== 1) throw new Error(`bench setup: the input stream never reaches row ${r}`);
      }
    },
    run(n) {
      let acc = 0;
      for (let i = 0; i < n; i++) {
        const j = i & (STREAM_LEN - 1);
        acc ^= shedDecide(level[j] as number, priority[j] as number, cls[j] as number, kind[j] as number, firstPush[j] === 1);
      }
      sink ^= acc;
      return n;
    },
  };
}
