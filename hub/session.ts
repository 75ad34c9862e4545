// Sessions, subscriptions and publications: the per-client state of the core (§6).
// Everything the hot path touches is allocated when the hub starts or a session opens, never per
// sample. A subscription is a row of the hub's SubscriptionTable, not an object: on the ESP32's
// 3,936-slot XS heap (manifest.json) an object per subscription (with its Map entry, its decimator and its
// arrays) cost more than the whole device has for 8 sessions × 16 subscriptions
// (docs/architecture.md "Memory").
import type { ChannelInfo } from '../catalog/index.js';
import { ChannelClass, Direction, StreamKind } from '../catalog/schema.js';
import { dataPrefix } from './fast-frames.js';
import { FrameType, RESUME_TOKEN_BYTES } from './frame-types.js';
import { NEVER_SHED_STALL_EVICTION_MS } from './constants.js';
import { type Guard, GUARD_ROW, TokenBucket } from './limits.js';
import { EVENT_READER_SLOTS, EventRing, FrameRing } from './queues.js';
import { LINK_BUDGET_ROW, linkBudgetNextAt, linkBudgetReset, linkBudgetUpdate, parkDue, REGRANT_FLOOR_BPS, STALL_ROW, stallUpdate } from './regrant.js';
import type { LinkEstimate } from './ports.js';
import { DECIMATION_STATE, resetDecimation, shedBase } from './shed.js';
import { Tag, tagOf, type Link } from './ports.js';

export const SessionState = Object.freeze({ ACTIVE: 0, STALE: 1, CLOSED: 2 } as const);
export type SessionStateCode = (typeof SessionState)[keyof typeof SessionState];
export const SESSION_STATE_NAMES = Object.freeze(['ACTIVE', 'STALE', 'CLOSED'] as const);

/** Frames a never-shed queue holds at most, whatever their size (its bytes come from HubConfig). */
export const NEVER_SHED_FRAMES = 64;

/**
 * The frames a never-shed queue of `bytes` holds: one per 24 bytes, 16 to NEVER_SHED_FRAMES
 * (64 at the hub's default 2048 bytes, 32 at the device's 768). Each frame's bookkeeping costs
 * 10 bytes of the heap, so a small queue does not keep room for more frames than its bytes hold.
 */
export function neverShedFrames(bytes: number): number {
  return Math.min(NEVER_SHED_FRAMES, Math.max(16, Math.floor(bytes / 24)));
}

/** One EVENT as published: shared by every subscriber's queue, never copied per subscriber. */
export interface EventRecord {
  readonly seq: number;
  readonly t: number;
  readonly values: Float64Array;
  readonly count: number;
  readonly text: string | undefined;
}

/**
 * A channel a client can subscribe to (telemetry, not INTENT) as the hub routes it: its place in
 * the SubscriptionTable and the state shared by all its subscribers.
 */
export class ChannelRoute {
  readonly ch: ChannelInfo;
  /** This channel's block of rows in the SubscriptionTable. */
  readonly index: number;
  /** Hub-wide sequence of pushes (DATA key 4). */
  seq = 0;
  /**
   * §10.4 row 8, STATE channels only: where this channel's values last sent begin in the table's
   * `lastValues` (slot s's `fields` values at lastAt + s × fields), so that a conflated STATE goes
   * only on change; -1 for the other classes.
   */
  readonly lastAt: number;
  /** §9.4, EVENT channels only: the bounded queue of every subscriber, one reader per session slot. */
  readonly events: EventRing<EventRecord> | null;
  /**
   * What the core tells a link of this channel's DATA frames (hub/ports.ts Tag): per-subscriber
   * variants; the push's shared encoding adds Tag.SHARED. Whether the channel is critical
   * (§10.1) and its field count are its `ch`'s: read once a push, not kept here (on XS every
   * field of the hub's routes is a heap slot).
   */
  readonly tag: number;
  /**
   * This channel's block of the shedding lookup (shed.ts SHED_LOOKUP); SEGMENTS_SHED_BASE for a
   * segments STREAM (§10.4 rows 4–6: shed whole-source or not at all, never thinned by its grant).
   */
  readonly shedBase: number;
  /** Its DATA frames' first bytes, up to the seq (fast-frames.ts dataPrefix). */
  readonly prefix: Uint8Array;

  /**
   * `prefix`: dataPrefix(ch.id), or a view holding it (the hub's routes share one buffer);
   * `lastAt`: a STATE channel's place in its table's `lastValues`; `readers`, `readersAt`: where
   * an EVENT channel's ring keeps its readers' numbers (makeRoutes).
   */
  constructor(ch: ChannelInfo, index: number, slots: number, prefix: Uint8Array = dataPrefix(ch.id), lastAt = 0, readers?: Float64Array, readersAt = 0) {
    this.ch = ch;
    this.index = index;
    const segments = ch.cls === ChannelClass.STREAM && ch.kind === StreamKind.segments;
    // §10.4 "never delay-and-burst", at the binding (docs/protocol.md §13.6): a STREAM sample may
    // be dropped unsent once it waited past the link's sample budget; a STATE value once a newer
    // value of its channel waits behind it. Critical channels and segments never are.
    const flags = ch.critical ? Tag.CRITICAL : segments ? 0 : ch.cls === ChannelClass.STREAM ? Tag.SAMPLE : ch.cls === ChannelClass.STATE ? Tag.VALUE : 0;
    this.tag = tagOf(FrameType.DATA, flags, ch.id);
    this.shedBase = shedBase(ch.cls, ch.kind);
    this.prefix = prefix;
    this.lastAt = ch.cls === ChannelClass.STATE ? lastAt : -1;
    this.events = ch.cls === ChannelClass.EVENT ? new EventRing<EventRecord>(Math.max(1, ch.queueDepth), slots, readers, readersAt) : null;
  }
}

/** The channels a client can subscribe to: telemetry, not INTENT. */
export function subscribable(ch: ChannelInfo): boolean {
  return ch.direction === Direction.telemetry && ch.cls !== ChannelClass.INTENT;
}

/**
 * The hub's routes, one per channel a client can subscribe to in catalog order, and the table of
 * their subscriptions. Their fixed bytes share buffers: every route's DATA prefix one, every
 * EVENT route's readers' cursors another, and every STATE route's values last sent the table's
 * (`lastValues`).
 */
export function makeRoutes(channels: readonly ChannelInfo[], slots: number): { routes: ChannelRoute[]; table: SubscriptionTable } {
  let count = 0;
  let prefixBytes = 0;
  let stateFields = 0;
  let eventRoutes = 0;
  for (const ch of channels) {
    if (!subscribable(ch)) continue;
    count++;
    prefixBytes += dataPrefix(ch.id).length;
    if (ch.cls === ChannelClass.STATE) stateFields += ch.fieldCount;
    if (ch.cls === ChannelClass.EVENT) eventRoutes++;
  }
  const table = new SubscriptionTable(count, slots, stateFields);
  const prefixes = new Uint8Array(prefixBytes);
  const readers = eventRoutes > 0 ? new Float64Array(eventRoutes * EVENT_READER_SLOTS * slots) : undefined;
  let readersAt = 0;
  const routes: ChannelRoute[] = [];
  let at = 0;
  let lastAt = 0;
  for (const ch of channels) {
    if (!subscribable(ch)) continue;
    const p = dataPrefix(ch.id);
    const prefix = prefixes.subarray(at, at + p.length);
    prefix.set(p);
    at += p.length;
    routes.push(new ChannelRoute(ch, routes.length, slots, prefix, lastAt, readers, readersAt));
    if (ch.cls === ChannelClass.STATE) lastAt += ch.fieldCount * slots;
    if (ch.cls === ChannelClass.EVENT) readersAt += EVENT_READER_SLOTS * slots;
  }
  return { routes, table };
}

/**
 * Every subscription of the hub: one row per (channel route, session slot), row = route × slots
 * + slot. A subscription's state lives in typed-array columns sized once from the catalog and
 * the slot count, so that subscribing allocates nothing and a subscription costs 32 bytes of
 * columns (34 with more than 255 slots or routes). Two lists keep the orders the protocol shows: a channel's subscribers in the order
 * they subscribed (the hot path walks them), and a session's channels in the order it subscribed
 * them (its GRANT lists them so). Both are dense, so a walk is a plain indexed loop. The STATE
 * channels' values last sent are here too, `stateFields` (their field counts together) per slot.
 * Every column is a view of one ArrayBuffer: on XS each buffer costs heap slots of its own.
 */
export class SubscriptionTable {
  readonly routes: number;
  readonly slots: number;
  /** Route r's subscribers, as session slots: [r × slots, r × slots + subscriberCount[r]). */
  readonly subscribers: Uint8Array | Uint16Array;
  readonly subscriberCount: Uint8Array | Uint16Array;
  /** Session slot s's routes, as route indexes: [s × routes, s × routes + routeCount[s]). */
  readonly subscribed: Uint8Array | Uint16Array;
  readonly routeCount: Uint8Array | Uint16Array;
  // Per row.
  readonly wishHz: Float64Array;
  readonly grantedHz: Float64Array;
  /** Rate gate: the earliest time the next non-critical push may go (granted rate). */
  readonly nextDue: Float64Array;
  readonly priority: Uint8Array;
  /** §10.4 row 3 / §9.1: 1 while the next push after a grant (or a resume) is always sent. */
  readonly firstPush: Uint8Array;
  /** §10.4 row 6: 1 while a segments source is dropped whole; the next push that goes carries `gap`. */
  readonly sourceDropped: Uint8Array;
  /** §10.4 decimate: the factor in force and the pushes counted toward it, at DECIMATION_STATE × row (shed.ts). */
  readonly decimation: Uint8Array;
  /** §10.4 row 8: how many of the row's values last sent `lastValues` holds; -1 none. */
  readonly lastLen: Int8Array;
  /** §10.4 row 8: the STATE channels' values last sent, per slot (ChannelRoute.lastAt). */
  readonly lastValues: Float64Array;
  /**
   * Where the columns a SampleRouter reads lie in the table's buffer (`grantedHz.buffer`), as byte
   * offsets: grantedHz, nextDue, lastValues, subscribers, firstPush, sourceDropped, decimation,
   * lastLen; then the bytes of a subscribers entry (1 or 2), the rows, the conflation values and
   * the slots; then subscriberCount's offset (its entries as wide as subscribers').
   */
  readonly layout: Uint32Array;

  constructor(routes: number, slots: number, stateFields = 0) {
    if (!Number.isInteger(slots) || slots < 1 || slots > 0xffff) throw new RangeError('SubscriptionTable slots must be an integer in 1..65535');
    this.routes = routes;
    this.slots = slots;
    const rows = routes * slots;
    const values = stateFields * slots;
    // The lists of slots and of routes and their counts take 8 bits each where that holds them
    // (fewer than 256 slots, routes). Widest first, so that every column is aligned.
    const slotsWide = slots > 0xff;
    const routesWide = routes > 0xff;
    const buffer = new ArrayBuffer((3 * rows + values) * 8 + (rows + routes) * (slotsWide ? 2 : 1) + (rows + slots) * (routesWide ? 2 : 1) + rows * (4 + DECIMATION_STATE));
    let at = 0;
    const f64 = (n: number): Float64Array => {
      const a = new Float64Array(buffer, at, n);
      at += n * 8;
      return a;
    };
    const u16 = (n: number): Uint16Array => {
      const a = new Uint16Array(buffer, at, n);
      at += n * 2;
      return a;
    };
    const u8 = (n: number): Uint8Array => {
      const a = new Uint8Array(buffer, at, n);
      at += n;
      return a;
    };
    this.wishHz = f64(rows);
    this.grantedHz = f64(rows);
    this.nextDue = f64(rows);
    this.lastValues = f64(values);
    const subscribers = slotsWide ? u16(rows) : null;
    const subscriberCount = slotsWide ? u16(routes) : null;
    const subscribed = routesWide ? u16(rows) : null;
    const routeCount = routesWide ? u16(slots) : null;
    this.subscribers = subscribers ?? u8(rows);
    this.subscriberCount = subscriberCount ?? u8(routes);
    this.subscribed = subscribed ?? u8(rows);
    this.routeCount = routeCount ?? u8(slots);
    this.priority = u8(rows);
    this.firstPush = u8(rows);
    this.sourceDropped = u8(rows);
    this.decimation = u8(rows * DECIMATION_STATE);
    this.lastLen = new Int8Array(buffer, at, rows);
    this.layout = Uint32Array.of(
      this.grantedHz.byteOffset,
      this.nextDue.byteOffset,
      this.lastValues.byteOffset,
      this.subscribers.byteOffset,
      this.firstPush.byteOffset,
      this.sourceDropped.byteOffset,
      this.decimation.byteOffset,
      this.lastLen.byteOffset,
      slotsWide ? 2 : 1,
      rows,
      values,
      slots,
      this.subscriberCount.byteOffset,
    );
  }

  row(route: number, slot: number): number {
    return route * this.slots + slot;
  }

  /** The slot's i-th route in subscription order. */
  routeOf(slot: number, i: number): number {
    return this.subscribed[slot * this.routes + i] as number;
  }

  has(route: number, slot: number): boolean {
    const at = route * this.slots;
    const n = this.subscriberCount[route] as number;
    for (let i = 0; i < n; i++) if (this.subscribers[at + i] === slot) return true;
    return false;
  }

  /**
   * A new subscription, last in both orders, with nothing granted yet and its first push owed.
   * The caller checked that it does not exist (`has`). Returns its row.
   */
  add(route: number, slot: number, wishHz: number, priority: number): number {
    this.subscribers[route * this.slots + (this.subscriberCount[route] as number)] = slot;
    this.subscriberCount[route] = (this.subscriberCount[route] as number) + 1;
    this.subscribed[slot * this.routes + (this.routeCount[slot] as number)] = route;
    this.routeCount[slot] = (this.routeCount[slot] as number) + 1;
    const k = this.row(route, slot);
    this.wishHz[k] = wishHz;
    this.priority[k] = priority;
    this.grantedHz[k] = 0;
    this.firstPush[k] = 1;
    this.sourceDropped[k] = 0;
    this.nextDue[k] = 0;
    resetDecimation(this.decimation, k * DECIMATION_STATE);
    this.lastLen[k] = -1;
    return k;
  }

  /** Ends a subscription; the others keep their order. */
  remove(route: number, slot: number): void {
    removeFrom(this.subscribers, route * this.slots, this.subscriberCount, route, slot);
    removeFrom(this.subscribed, slot * this.routes, this.routeCount, slot, route);
  }
}

// Removes `value` from the list list[at, at + count[which]), shifting the rest down.
function removeFrom(list: Uint8Array | Uint16Array, at: number, count: Uint8Array | Uint16Array, which: number, value: number): void {
  const n = count[which] as number;
  let i = 0;
  while (i < n && list[at + i] !== value) i++;
  if (i === n) return;
  for (; i + 1 < n; i++) list[at + i] = list[at + i + 1] as number;
  count[which] = n - 1;
}

export class Publication {
  readonly ch: ChannelInfo;
  grantedHz = 0;
  burst = 0;
  readonly bucket: TokenBucket;

  /** §10.5: the bucket starts full (a burst is available at once), refilling at the granted rate. */
  constructor(ch: ChannelInfo, grantedHz: number, burst: number, now: number) {
    this.ch = ch;
    this.grantedHz = grantedHz;
    this.burst = burst;
    this.bucket = new TokenBucket(grantedHz, burst, now);
  }
}

// A session's guard row (sessions.ts): the guard's, then its link budget, then its stall clock.
const BUDGET_AT = GUARD_ROW;
const STALL_AT = BUDGET_AT + LINK_BUDGET_ROW;
// Then when it went STALE (read only while it is).
const STALE_AT = STALL_AT + STALL_ROW;
/**
 * Then its hand-off mark: sentFrames when the hub last measured its load, and when it last found
 * frames handed since (-Infinity before any), moved by load.ts Load.handOff (here, not in fields:
 * on XS every field of a session is a heap slot).
 */
export const LOAD_AT = STALE_AT + 1;
// Then its tier (read when planning, at a publication and at a park: not on the hot path).
const TIER_AT = LOAD_AT + 2;
// Then its two resume tokens' bytes, RESUME_TOKEN_BYTES each: the current one, then the prior.
const TOKENS_AT = TIER_AT + 1;
/** The numbers of a session's row of the hub's guard store (a transport's row is GUARD_ROW). */
export const SESSION_ROW = TOKENS_AT + (2 * RESUME_TOKEN_BYTES) / 8;

export class Session {
  readonly id: number;
  readonly slot: number;
  state: SessionStateCode = SessionState.ACTIVE;
  link: Link | null = null;
  priorValid = false;
  /** Granted publications, in the order first granted (a few per session: found by a scan). */
  readonly pubs: Publication[] = [];
  /** §10.4 the never-shed queue: critical frames the link could not take at once. */
  readonly neverShed: FrameRing;
  lastHeard: number;
  /**
   * Frames handed to this session's current transport (sends, never-shed drains, write-ahead
   * ESTOPs, and what went to the transport before its HELLO), modulo 2^32: how the hub tells a
   * link that keeps up (hub ladder). The client's acknowledgements are the link's to count
   * (Link.acked, Link.ackLag).
   */
  sentFrames = 0;
  /** A GRANT re-stating every grant is owed to this session (set by a re-plan). */
  grantOwed = false;
  /** Events wait in this session's EVENT queues for its link: the tick flushes them. */
  eventsOwed = false;
  /** The link level the re-grant controller last saw, and when it is next due (hub.ts tick). */
  levelSeen = 0;
  budgetAt = -Infinity;

  /**
   * `neverShed`: the slot's never-shed queue (the hub keeps one per slot, in its egress arena),
   * emptied. `guard`: the session's counters and intent bucket, in the slot's row of the hub's
   * store of them (sessions.ts), SESSION_ROW wide: the row holds the session's resume tokens too.
   */
  constructor(id: number, slot: number, tier: number, now: number, neverShed: FrameRing, guard: Guard) {
    this.id = id;
    this.slot = slot;
    this.lastHeard = now;
    neverShed.clear();
    this.neverShed = neverShed;
    this.guard = guard;
    // A new session's link: unlimited (regrant.ts rule 1), its never-shed queue not stalled.
    linkBudgetReset(guard.store, guard.at + BUDGET_AT);
    this.stallReset();
    this.staleSince = 0;
    guard.store[guard.at + LOAD_AT] = 0;
    guard.store[guard.at + LOAD_AT + 1] = -Infinity;
    guard.store[guard.at + TIER_AT] = tier;
  }

  /** §6.10 the session's tier (in the guard's row: on XS every field of a session is a heap slot). */
  get tier(): number {
    return this.guard.store[this.guard.at + TIER_AT] as number;
  }

  publication(channelId: number): Publication | undefined {
    for (let i = 0; i < this.pubs.length; i++) {
      const p = this.pubs[i] as Publication;
      if (p.ch.id === channelId) return p;
    }
    return undefined;
  }

  /** One more frame handed to the transport (counted modulo 2^32). */
  handed(): void {
    this.sentFrames = (this.sentFrames + 1) >>> 0;
  }

  /**
   * §12 the malformed-frame counter and the RATE_LIMITED throttle, §9.3 the intent bucket
   * (limits.ts Guard: `malformed`, `rateNacks` and `intentBucket` are its faces).
   */
  readonly guard: Guard;
  get malformed(): Guard {
    return this.guard;
  }

  get rateNacks(): Guard {
    return this.guard;
  }

  get intentBucket(): Guard {
    return this.guard;
  }

  // §10.3 the re-grant controller and §10.4 the never-shed queue's stall clock (regrant.ts
  // LinkBudget, StallClock), kept in the guard's row past its counters (SESSION_ROW).

  /** The session's link budget in bytes/s; Infinity is unlimited (LinkBudget.budgetBps). */
  get budgetBps(): number {
    return this.guard.store[this.guard.at + BUDGET_AT] as number;
  }

  /** LinkBudget.update: true when the budget changed. */
  budgetUpdate(level: number, estimate: Readonly<Pick<LinkEstimate, 'throughputBps'>>, demandBps: number, now: number): boolean {
    return linkBudgetUpdate(this.guard.store, this.guard.at + BUDGET_AT, REGRANT_FLOOR_BPS, level, estimate, demandBps, now);
  }

  /** LinkBudget.nextAt. */
  budgetNextAt(level: number): number {
    return linkBudgetNextAt(this.guard.store, this.guard.at + BUDGET_AT, level);
  }

  /** StallClock.update, on the never-shed queue. */
  stallUpdate(nonEmpty: boolean, progressed: boolean, now: number): void {
    stallUpdate(this.guard.store, this.guard.at + STALL_AT, nonEmpty, progressed, now);
  }

  /** StallClock.parkDue: stalled NEVER_SHED_STALL_EVICTION_MS or more. */
  parkDue(now: number): boolean {
    return parkDue(this.guard.store, this.guard.at + STALL_AT, NEVER_SHED_STALL_EVICTION_MS, now);
  }

  /** On resume, the link is fresh: unlimited (LinkBudget.reset), not stalled (StallClock.reset). */
  resetLink(): void {
    linkBudgetReset(this.guard.store, this.guard.at + BUDGET_AT);
    this.stallReset();
  }

  /** When the session went STALE (§6.6); read only while it is. */
  get staleSince(): number {
    return this.guard.store[this.guard.at + STALE_AT] as number;
  }

  set staleSince(t: number) {
    this.guard.store[this.guard.at + STALE_AT] = t;
  }

  /** StallClock.reset. */
  stallReset(): void {
    this.guard.store[this.guard.at + STALL_AT] = 0;
  }

  /** Filled by the hub when the session opens, refilled in place on every resume (a view made at HELLO, not kept). */
  get resumeToken(): Uint8Array {
    return this.token(0);
  }

  /**
   * §6.6: the token the client last resumed with, still good while `priorValid`: until the
   * client is heard on the resumed session, nothing shows it got the WELCOME with the new token,
   * and a transport lost before that WELCOME arrived must not leave the session unresumable.
   */
  get priorToken(): Uint8Array {
    return this.token(RESUME_TOKEN_BYTES);
  }

  // A view of a token's bytes in the guard's row (TOKENS_AT; on XS a view kept per token would
  // cost heap slots). The slot's last session is gone by now; what it left is overwritten at
  // open (resumeToken) or unread (priorToken, not valid).
  private token(offset: number): Uint8Array {
    const store = this.guard.store;
    return new Uint8Array(store.buffer, store.byteOffset + (this.guard.at + TOKENS_AT) * 8 + offset, RESUME_TOKEN_BYTES);
  }
}

