// The rarer turns of a sample's route (hub/egress.ts publishSample): a subscriber the §10.4 table
// sheds on a congested link, and a subscriber owed `gap` that gets its own encoding. Kept apart
// from the hot loop, which calls in here only for a link at level 2 or above or a source dropped.

import { consumeGrantSlot } from './grants.js';
import type { Egress } from './egress.js';
import { writeData } from './fast-frames.js';
import type { Link } from './ports.js';
import type { ChannelRoute, Session } from './session.js';
import { decimate, DECIMATION_STATE, resetDecimation, SHED_DECISION } from './shed.js';

// The table's decisions the shedding path tells apart, as plain constants: it compares against
// them for every subscriber it sheds, where a property of SHED_DECISION would be a lookup each time.
const CONFLATE = SHED_DECISION.conflate;
const DECIMATE2 = SHED_DECISION.decimate2;
const DECIMATE4 = SHED_DECISION.decimate4;
const DROP = SHED_DECISION.drop;
const DROP_SOURCE = SHED_DECISION.drop_source;

const MAX_SAFE = Number.MAX_SAFE_INTEGER;

/** §10.4 row 6: the push for a subscriber owed `gap`, its own encoding in the staging area; true when it went. */
export function sendGap(e: Egress, route: ChannelRoute, s: Session, link: Link, k: number, seq: number, t: number, values: Float64Array, n: number): boolean {
  const arena = e.arena;
  arena.unstage();
  const out = arena.seal(writeData(arena.out, arena.outView, e.fp, route.prefix, seq, t >= 0 && t <= MAX_SAFE ? t - (t % 1) : 0, values, n, true, 0));
  let went = true;
  if (route.ch.critical) went = e.critical(s, out, route.tag, seq);
  else if (s.neverShed.size > 0 || !link.send(out, route.tag, seq)) {
    e.counters.egressDrops++;
    went = false;
  } else s.sentFrames++;
  arena.unstage();
  // Carried: the source is whole again. Refused: it stays owed (a lost segment is a lost command).
  if (went) e.table.sourceDropped[k] = 0;
  return went;
}

/**
 * The table's decision for one subscriber, other than a plain send from a subscription that was
 * not decimating: true when the push is not sent to it (counted here).
 */
export function shedSubscriber(e: Egress, route: ChannelRoute, decision: number, k: number, slot: number, values: Float64Array, n: number, now: number): boolean {
  const counters = e.counters;
  const tab = e.table;
  if (decision === DROP) {
    counters.shedDrops++;
    return true;
  }
  if (decision === DROP_SOURCE) {
    counters.shedDrops++;
    tab.sourceDropped[k] = 1; // §10.4 row 6: whole source; the next push that goes out carries gap
    return true;
  }
  const decimation = tab.decimation;
  if (decision === DECIMATE4 || decision === DECIMATE2) {
    if (decimate(decimation, k * DECIMATION_STATE, decision === DECIMATE4 ? 4 : 2)) return false;
    // Decimation thins the granted stream: the dropped push uses up its grant slot.
    counters.decimated++;
    consumeGrantSlot(tab.grantedHz, tab.nextDue, k, now);
    return true;
  }
  // A factor of 1 has no count: only a subscription that was decimating needs the reset.
  if (decimation[k * DECIMATION_STATE] !== 1) resetDecimation(decimation, k * DECIMATION_STATE);
  // Row 8 conflates STATE channels only, which keep the values last sent: the same values
  // again are not sent (shed.ts sameValues' rule, written out on the table's block of them:
  // NaN equals NaN, 0 equals -0; n is at most the channel's fields).
  const lastAt = route.lastAt;
  if (decision === CONFLATE && lastAt >= 0 && tab.lastLen[k] === n) {
    const last = tab.lastValues;
    const at = lastAt + slot * route.ch.fieldCount;
    let j = 0;
    for (; j < n; j++) {
      const x = values[j] as number;
      const y = last[at + j] as number;
      if (x !== y && (x === x || y === y)) break;
    }
    if (j === n) {
      counters.conflated++;
      return true;
    }
  }
  return false;
}
