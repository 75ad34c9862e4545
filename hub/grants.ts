// §10.2: the grant model's pure parts: which priority a subscription is granted, the tier's rate
// ceiling, what one DATA push costs on the wire, and the plan that splits the hub's capacity and
// each session's link budget between the subscriptions. Grants are re-planned on joins, leaves,
// (un)subscribes and re-grants (§10.3), never per sample, so the plan may allocate.
//
// The plan, rule by rule (each held by a test in test/core/grants.test.ts):
//
//  1. Never-shed. A critical subscription (§10.1) is granted its channel's intrinsic rate, the
//     catalog max_rate_hz, whatever its wish, tier, the hub capacity or the link. It consumes
//     neither capacity nor link budget (§10.2: "grant changes never apply to the never-shed set").
//  2. Clamp. Every other wish is first clamped: cap = min(wish, catalog max_rate_hz, tier ceiling)
//     (§10.2 "clamped by catalog max_rate_hz, session tier, ..."). A wish that is negative or not a
//     number asks for nothing (cap 0).
//  3. Classes. The non-critical classes are served from elevated (2) down to background (0); a
//     class only gets what the classes above it left, in capacity and in each link budget. A
//     non-critical priority outside 0..2 is read as the nearest class (the hub never passes one).
//  4. Link estimate. `budgets.get(session)` is the session's link budget in bytes/s (absent or
//     Infinity: unlimited; NaN or negative: 0; see hub/regrant.ts). Inside a class, a session's remaining budget is
//     split max-min fair on bytes/s (rate × frameBytes): no subscription gets more bytes than an
//     unsatisfied one of the same class and session. The result is the link-limited rate.
//  5. Hub capacity. `hubCapacityHz` is the total deliveries per second the hub makes across the
//     non-critical subscriptions of all sessions (NaN or negative: 0). Inside a class, the remaining capacity is split
//     max-min fair on Hz across all sessions, each subscription asking for its link-limited rate,
//     so capacity is never reserved for deliveries a link cannot carry. A higher-priority
//     session that joins therefore re-splits the pie below it (§10.2 unsolicited GRANT).
//     The grant is thus the minimum of the link share and the capacity share. What a class
//     actually took (share × frameBytes) is what the lower classes of that session lose.
//  6. Step. The result is floored to a multiple of GRANT_RATE_STEP_HZ (0.1 Hz) and is never
//     negative; 0 means subscribed with nothing granted right now. Why: §10.2 has the hub echo
//     the granted value and the client compare it, show it and comply with it. A floored value is
//     the double nearest to a one-decimal number (k / 10), which prints as that decimal and
//     reads back as the identical double, so a client that echoes, parses or compares it gets
//     exact equality, a UI never shows 33.333333 Hz, and a re-plan that moves a share by a few
//     ulps practically never changes a grant (no spurious unsolicited GRANT). Flooring, not
//     rounding, keeps every grant within the capacity and budget it was planned against. On the
//     wire a non-integral grant needs float64 (float32 cannot hold 0.1); hub/cbor.ts picks the
//     shortest float that holds the value exactly, which is float64 for these.
//  7. Determinism. The arithmetic runs in a canonical order (session id, then channel id, then the
//     remaining inputs), so a permutation of `subs` yields bit-identical shares (planShares, before
//     the step) and grants; ties inside a water-fill are broken the same way. Ids are integers.
//     Cost: O(n log n).

import { MAX_FIELDS, Priority, Tier } from '../catalog/schema.js';

export interface SubWish {
  /** Session id. */
  readonly session: number;
  readonly channelId: number;
  /** The client's wished rate. */
  readonly wishHz: number;
  /** The granted priority class 0..3 (§10.1), as `grantedPriority` gives it. */
  readonly priority: number;
  /** Catalog max_rate_hz. */
  readonly maxRateHz: number;
  /** The session tier's ceiling for this channel (`tierCapHz`). */
  readonly tierCapHz: number;
  /** Bytes one push of this channel costs on the wire (`frameBytesFor`). */
  readonly frameBytes: number;
  /** The never-shed set (§10.1). */
  readonly critical: boolean;
}

// Our decision (§10.2 "session tier"): an observer gets at most this per subscription; operator and
// maintainer get up to the catalog max_rate_hz. A watcher should not be able to take the link
// from the people driving the robot.
export const OBSERVER_MAX_RATE_HZ = 50;

// Rule 6: grants are multiples of 1 / GRANT_STEPS_PER_HZ Hz.
export const GRANT_STEPS_PER_HZ = 10;
export const GRANT_RATE_STEP_HZ = 1 / GRANT_STEPS_PER_HZ;

/**
 * §10.1 with our tier decision: a critical channel is always granted critical (3). Otherwise the
 * wish (the channel default when absent or not an integer), never critical for a non-critical
 * channel, and capped by tier: an observer at most normal, operator and maintainer at most
 * elevated. A tier code other than operator or maintainer is treated as observer.
 */
export function grantedPriority(wished: number | undefined, channelDefault: number, critical: boolean, tier: number): number {
  if (critical) return Priority.critical;
  const ceiling = tier >= Tier.operator ? Priority.elevated : Priority.normal;
  const p = wished !== undefined && Number.isInteger(wished) ? wished : channelDefault;
  if (!(p > Priority.background)) return Priority.background;
  return p < ceiling ? p : ceiling;
}

/** The tier's rate ceiling for one subscription (our decision, see OBSERVER_MAX_RATE_HZ). */
export function tierCapHz(tier: number, maxRateHz: number): number {
  if (tier >= Tier.operator) return maxRateHz;
  return maxRateHz < OBSERVER_MAX_RATE_HZ ? maxRateHz : OBSERVER_MAX_RATE_HZ;
}

// One DATA frame (frame-encode.ts encodeData), worst case: a CBOR map of up to seven entries (type,
// channel id, seq, t, values, and the optional gap and dropped of §9.4) whose integer keys are
// each at most 2 bytes (uint8). Values: the type code and channel id at most 2 bytes each (uint8),
// seq, t and dropped at most 5 (uint32), gap 1 (true), the array header by CBOR's length rule
// and each field a float64 (9). An EVENT's text is not counted. Neither is the binding's own
// framing (length prefix, BLE fragment header, ESP-NOW datagram number): the re-grant headroom
// absorbs it (hub/regrant.ts).
const DATA_MAP_HEADER_BYTES = 1;
const DATA_KEY_BYTES = 2;
const DATA_ENTRIES = 7;
const DATA_TYPE_BYTES = 2;
const DATA_CHANNEL_ID_BYTES = 2;
const DATA_SEQ_BYTES = 5;
const DATA_T_BYTES = 5;
const DATA_DROPPED_BYTES = 5;
const DATA_GAP_BYTES = 1;
const DATA_FLOAT_BYTES = 9;
export const DATA_FRAME_FIXED_BYTES =
  DATA_MAP_HEADER_BYTES +
  DATA_ENTRIES * DATA_KEY_BYTES +
  DATA_TYPE_BYTES +
  DATA_CHANNEL_ID_BYTES +
  DATA_SEQ_BYTES +
  DATA_T_BYTES +
  DATA_DROPPED_BYTES +
  DATA_GAP_BYTES;

// CBOR major-type header length for an array of n items (RFC 8949 §3).
function arrayHeaderBytes(n: number): number {
  return n < 24 ? 1 : n < 0x100 ? 2 : n < 0x10000 ? 3 : 5;
}

/** A conservative size of one DATA frame carrying `fieldCount` values (see above). */
export function frameBytesFor(fieldCount: number): number {
  const n = fieldCount > 0 ? Math.ceil(fieldCount) : 0;
  return DATA_FRAME_FIXED_BYTES + arrayHeaderBytes(n) + n * DATA_FLOAT_BYTES;
}

/** The largest DATA frame a catalog channel can produce. */
export const MAX_DATA_FRAME_BYTES = frameBytesFor(MAX_FIELDS);

/** Rule 6: the largest multiple of 0.1 Hz (as the double k / 10) not above `hz`; 0 for anything not positive. */
export function floorToGrantStep(hz: number): number {
  if (!(hz > 0)) return 0;
  if (hz === Infinity) return hz;
  // x · 10 can round up onto an integer k whose k / 10 lies above x (0.8999999999999999 · 10 is 9);
  // settle k against k / 10 itself. It never rounds below: for every k / 10 up to MAX_RATE_HZ,
  // (k / 10) · 10 floors to k (held by the test).
  let k = Math.floor(hz * GRANT_STEPS_PER_HZ);
  if (k / GRANT_STEPS_PER_HZ > hz) k--;
  return k / GRANT_STEPS_PER_HZ;
}

/** Rule 2: the clamped wish of a non-critical subscription. */
export function clampedWishHz(s: SubWish): number {
  const cap = Math.min(s.wishHz, s.maxRateHz, s.tierCapHz);
  return cap > 0 && cap !== Infinity ? cap : 0;
}

/**
 * What a session asks of its link, in bytes/s: its non-critical clamped wishes × frame bytes.
 * LinkBudget (hub/regrant.ts) returns to unlimited once a probed budget exceeds it.
 */
export function linkDemandBps(subs: readonly SubWish[], session: number): number {
  let sum = 0;
  for (const s of subs) {
    if (s.session !== session || s.critical) continue;
    const hz = clampedWishHz(s);
    if (hz > 0) sum += hz * sanitizeFrameBytes(s.frameBytes);
  }
  return sum;
}

// A frame size that is not positive costs nothing on the link; an infinite one passes only an
// unlimited link. The hub passes frameBytesFor(...), which is neither.
function sanitizeFrameBytes(b: number): number {
  return b > 0 ? b : 0;
}

function sanitizeBudget(b: number | undefined): number {
  if (b === undefined) return Infinity;
  return b >= 0 ? b : 0;
}

function classOf(priority: number): number {
  return priority >= Priority.elevated ? Priority.elevated : priority >= Priority.normal ? Priority.normal : Priority.background;
}

function compareNumbers(a: number, b: number): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

// Max-min fair split of `budget` over list[from, to), which is sorted by demand ascending: each
// entry gets min(demand, level) with the level set so that the budget is spent or every demand
// met. Equal demands receive equal shares, so their order among themselves cannot change a bit.
function waterFill(list: readonly number[], from: number, to: number, demand: Float64Array, budget: number, alloc: Float64Array): void {
  let remaining = budget;
  for (let k = from; k < to; k++) {
    const i = list[k] as number;
    const d = demand[i] as number;
    const share = remaining / (to - k);
    if (d <= share) {
      alloc[i] = d;
      if (remaining !== Infinity) remaining -= d;
    } else {
      for (let j = k; j < to; j++) alloc[list[j] as number] = share;
      return;
    }
  }
}

/** §10.2: the granted rate (Hz) of each subscription, same index as `subs` (rules 1–7 above). */
export function planGrants(subs: readonly SubWish[], budgets: ReadonlyMap<number, number>, hubCapacityHz: number, out?: number[]): number[] {
  const result = planShares(subs, budgets, hubCapacityHz, out);
  for (let i = 0; i < result.length; i++) {
    if (!(subs[i] as SubWish).critical) result[i] = floorToGrantStep(result[i] as number);
  }
  return result;
}

/** Rules 1–5 and 7 without the step of rule 6: the exact shares, bit-identical under permutation. */
export function planShares(subs: readonly SubWish[], budgets: ReadonlyMap<number, number>, hubCapacityHz: number, out?: number[]): number[] {
  const n = subs.length;
  const result = out ?? [];
  result.length = n;

  const cap = new Float64Array(n);
  const bytes = new Float64Array(n);
  const cls = new Int8Array(n);
  for (let i = 0; i < n; i++) {
    const s = subs[i] as SubWish;
    cap[i] = clampedWishHz(s);
    bytes[i] = sanitizeFrameBytes(s.frameBytes);
    cls[i] = s.critical ? Priority.critical : classOf(s.priority);
  }

  // Rule 7: the canonical order, a total order on everything the plan reads.
  const canonical: number[] = [];
  for (let i = 0; i < n; i++) canonical.push(i);
  canonical.sort((a, b) => {
    const x = subs[a] as SubWish;
    const y = subs[b] as SubWish;
    return (
      compareNumbers(x.session, y.session) ||
      compareNumbers(x.channelId, y.channelId) ||
      compareNumbers(cls[a] as number, cls[b] as number) ||
      compareNumbers(cap[a] as number, cap[b] as number) ||
      compareNumbers(bytes[a] as number, bytes[b] as number) ||
      compareNumbers(x.maxRateHz, y.maxRateHz)
    );
  });
  const rank = new Int32Array(n);
  // Sessions are contiguous runs of the canonical order; `run` numbers them.
  const run = new Int32Array(n);
  const runBudget: number[] = [];
  for (let k = 0; k < n; k++) {
    const i = canonical[k] as number;
    rank[i] = k;
    const session = (subs[i] as SubWish).session;
    if (k === 0 || (subs[canonical[k - 1] as number] as SubWish).session !== session) runBudget.push(sanitizeBudget(budgets.get(session)));
    run[i] = runBudget.length - 1;
  }

  const demandBytes = new Float64Array(n);
  for (let i = 0; i < n; i++) demandBytes[i] = (cap[i] as number) > 0 ? (cap[i] as number) * (bytes[i] as number) : 0;
  const allocBytes = new Float64Array(n);
  const linkRate = new Float64Array(n);
  const rate = new Float64Array(n);
  let capacity = hubCapacityHz >= 0 ? hubCapacityHz : 0;

  const list: number[] = [];
  for (let c: number = Priority.elevated; c >= Priority.background; c--) {
    list.length = 0;
    for (let k = 0; k < n; k++) {
      const i = canonical[k] as number;
      if (cls[i] === c) list.push(i);
    }
    if (list.length === 0) continue;

    // Rule 4: per session, max-min fair on bytes/s within what the higher classes left.
    list.sort((a, b) => (run[a] as number) - (run[b] as number) || compareNumbers(demandBytes[a] as number, demandBytes[b] as number) || (rank[a] as number) - (rank[b] as number));
    for (let from = 0; from < list.length; ) {
      const r = run[list[from] as number] as number;
      let to = from + 1;
      while (to < list.length && run[list[to] as number] === r) to++;
      waterFill(list, from, to, demandBytes, runBudget[r] as number, allocBytes);
      from = to;
    }
    for (const i of list) {
      const a = allocBytes[i] as number;
      const d = demandBytes[i] as number;
      linkRate[i] = a >= d ? (cap[i] as number) : a / (bytes[i] as number);
    }

    // Rule 5: across sessions, max-min fair on Hz within what the higher classes left.
    list.sort((a, b) => compareNumbers(linkRate[a] as number, linkRate[b] as number) || (rank[a] as number) - (rank[b] as number));
    waterFill(list, 0, list.length, linkRate, capacity, rate);
    for (const i of list) {
      const g = rate[i] as number;
      capacity -= g;
      const r = run[i] as number;
      const budget = runBudget[r] as number;
      if (g > 0 && budget !== Infinity) {
        const left = budget - g * (bytes[i] as number);
        runBudget[r] = left > 0 ? left : 0;
      }
    }
    if (!(capacity > 0)) capacity = 0;
  }

  for (let i = 0; i < n; i++) {
    const s = subs[i] as SubWish;
    result[i] = s.critical ? s.maxRateHz : (rate[i] as number);
  }
  return result;
}

/**
 * The grant gate (§10.2): the earliest time the next non-critical push may go, in nextDue[k],
 * advanced by one period of grantedHz[k] for a push that went at `now`. At most one period of
 * credit: a push that comes late does not buy a burst afterwards. A broadcast segment gates a
 * channel's effective rate with the same function (§10.6).
 */
export function consumeGrantSlot(grantedHz: Float64Array, nextDue: Float64Array, k: number, now: number): void {
  const period = 1000 / (grantedHz[k] as number);
  const next = (nextDue[k] as number) + period;
  nextDue[k] = next < now - period ? now + period : next;
}
