// The egress layer (docs/architecture.md "Layers"): everything the hub sends. The hot path
// (a robot sample routed to its subscribers through the grant and the §10.4 table), EVENT
// queues and their flushing, the never-shed queues and their drain, the control frames (the
// CATALOG and HEALTH chunks among them, cut in chunks.ts), and the count of frames handed to
// each transport. The hub decides what to send (the GRANTs: plan.ts); this layer encodes it
// once, tags it with what the hub knows (hub/ports.ts Tag) and hands it to the links under one
// send contract, counting what became of it (counters.ts).
//
// Memory: one SealedBytes for a push's shared DATA frame, sized to the largest sample the catalog
// can produce, and one StagedBytes arena holding every session slot's never-shed queue followed
// by the staging area where control frames are written (and from where a queued frame is handed
// on): a frame moves between them with one native copy, and every frame a link receives is an
// exact view, copied whole (docs/architecture.md "Copies").
//
// Re-entry: while a push is routed (`routing`), what the hub would do in answer to a link (a lost
// transport, a park for an overflowing never-shed queue) waits until the loop is done (EgressHost).

import { StagedBytes, SealedBytes } from './bytes.js';
import { CborWriter } from './cbor.js';
import { HubCounters } from './counters.js';
import { dataFrameBytes, FloatProbe, writePong, writeSampleAfter } from './fast-frames.js';
import { encodeFrame } from './frame-encode.js';
import { FrameType, type Frame } from './frame-types.js';
import { utf8ByteLength } from './utf8.js';

/** An EVENT frame's bytes besides its values and its text's bytes: the keys, seq, t, dropped and the heads (generous). */
const EVENT_FRAME_OVERHEAD = 64;
import type { HealthMetrics } from './health.js';
import { Tag, tagOf, type Clock, type Link, type RouteHost, type SampleWriter } from './ports.js';
import { FrameRing, RingColumns } from './queues.js';
import { neverShedFrames, type ChannelRoute, type EventRecord, type Session, type SubscriptionTable } from './session.js';
import { sendGap, shedSubscriber } from './sample-shed.js';
import { DECIMATION_STATE, resetDecimation, SEGMENTS_SHED_BASE, SHED_DECISION, SHED_LOOKUP } from './shed.js';
import { LEVEL_CONGESTED, LEVEL_SEVERE } from './constants.js';

// The table's plain send, as a constant: the shedding path compares against it for every subscriber it sheds.
const SEND = SHED_DECISION.send;
const PONG_TAG = tagOf(FrameType.PONG, Tag.CRITICAL);

/** What the egress layer asks of the hub. */
export interface EgressHost {
  /** A session's never-shed queue overflowed (§10.4: a link that cannot take even that is broken): park it. */
  overflowed(s: Session): void;
  /** Work falls due at `t` (ms): the tick takes it up then (a never-shed queue to drain, events to flush). */
  due(t: number): void;
}

/** A transport before it has a session, as the egress layer sends to it. */
export interface EgressConn {
  readonly link: Link;
  readonly session: Session | null;
  /** Frames handed to the transport before a session took it. */
  sent: number;
}

const MAX_SAFE = Number.MAX_SAFE_INTEGER;
const SHARED = Tag.SHARED;

export class Egress implements RouteHost {
  readonly counters = new HubCounters();
  /** A push's DATA frame, encoded once for all its subscribers. */
  readonly data: SealedBytes;
  /** Every slot's never-shed queue, then the staging area control frames are written in. */
  readonly arena: StagedBytes;
  /** Writes control frames into the arena's staging area. */
  readonly w: CborWriter;
  /** A push is being routed. */
  routing = false;
  /** The ladder's rung-1 floor under every link's level (docs/operations.md "The hub-wide ladder"); the hub sets it when the rung changes. */
  levelFloor = 0;
  /** The float scratch of the DATA writers. */
  readonly fp = new FloatProbe();
  /** The push's DATA frame once written (dataFrame), null until then. */
  frame: Uint8Array | null = null;
  /** @internal What a SampleRouter reads (RouteHost): the table's buffer and layout (each taken once: on XS `.buffer` is a call), the segments streams' shedding block, the shared encoding's flag. */
  readonly tableBuffer: ArrayBufferLike;
  readonly layout: ArrayBufferLike;
  readonly segmentsBase = SEGMENTS_SHED_BASE;
  readonly sharedFlag = SHARED;
  /** The route prefix `data` holds at its start (the last push's; a SampleRouter writes it too). */
  prefixed: Uint8Array | null = null;
  private readonly rings: (FrameRing | undefined)[];
  private columns: RingColumns | null = null;
  private readonly neverShedBytes: number;
  /** Frames each never-shed queue holds (neverShedFrames). */
  private readonly neverShedFrames: number;
  private readonly maxFrameBytes: number;

  constructor(
    private readonly clock: Clock,
    /** @internal */ readonly table: SubscriptionTable,
    /** @internal The session slots (a SampleRouter reads them: RouteHost). */
    readonly slots: readonly (Session | null)[],
    private readonly health: HealthMetrics,
    private readonly host: EgressHost,
    maxFields: number,
    neverShedBytes: number,
    maxFrameBytes: number,
    /** Writes each push's DATA frame after its prefix (HubPorts.sampleWriter); null: writeSampleAfter, in script. */
    private readonly sw: SampleWriter | null = null,
  ) {
    this.data = new SealedBytes(dataFrameBytes(maxFields));
    this.neverShedBytes = neverShedBytes;
    this.neverShedFrames = neverShedFrames(neverShedBytes);
    this.maxFrameBytes = maxFrameBytes;
    this.arena = new StagedBytes(slots.length * neverShedBytes, maxFrameBytes);
    this.w = new CborWriter(this.arena.out);
    this.rings = new Array<FrameRing | undefined>(slots.length).fill(undefined);
    this.tableBuffer = table.grantedHz.buffer;
    this.layout = table.layout.buffer;
  }

  /** The never-shed queue of a session slot, in the arena (made at the slot's first session), its per-frame bookkeeping in `columns`, one buffer for every ring (on XS each typed array costs heap slots). */
  ringFor(slot: number): FrameRing {
    return this.rings[slot] ?? (this.rings[slot] = new FrameRing(this.neverShedBytes, this.neverShedFrames, this.arena, slot * this.neverShedBytes, (this.columns ??= new RingColumns(this.rings.length, this.neverShedFrames, this.neverShedBytes)), slot));
  }

  // ------------------------------------------------------------------ the hot path

  /**
   * One telemetry sample (STREAM) or value (STATE) from the robot, routed to every subscriber
   * through the grant and the shedding table. Encoded once; copied to each link; nothing is
   * allocated per sample and nothing is ever held back to be sent later (§10.4): whatever is sent
   * for this push leaves during this call, whatever cannot is dropped.
   *
   * This runs for every push of every stream, for every subscriber. On XS a local costs about as
   * much at every call as a few reads of a field through it, and reading it is hardly cheaper than
   * reading the field: so the loop reads the table's columns and the counters through `tab` and
   * `this`, and keeps in locals only what it computes or counts. A link at level 0 or 1 skips the
   * table (its row 1 sends, whatever the subscription); sample-shed.ts takes the rarer turns.
   */
  publishSample(route: ChannelRoute, t: number, values: Float64Array, count: number): void {
    const seq = (route.seq = route.seq === 0xffffffff ? 0 : route.seq + 1);
    const tab = this.table;
    // The subscribers do not change while a push is routed (the hub defers what a link's answer would do).
    const end = tab.subscriberCount[route.index] as number;
    if (end === 0) return;
    const ch = route.ch;
    let n = ch.fieldCount; // a sample carries at most the catalog's fields and the values given; a fraction of a count is dropped
    if (count < n) n = count > 0 ? count - (count % 1) : 0;
    if (n > values.length) n = values.length;
    const now = this.clock.now();
    // The grant gates the push: not critical, not segments (§10.4: a segments stream is never
    // thinned, not even by the grant, whose rate is whole-source).
    const gated = !ch.critical && route.shedBase !== SEGMENTS_SHED_BASE;
    const sharedTag = route.tag | SHARED;
    const first = route.index * tab.slots;
    // docs/operations.md "Health, admission and overload" ladder rung 1: the table reads every link at this level at least.
    const floorSheds = this.levelFloor >= LEVEL_CONGESTED;
    this.frame = null;
    const nextDue = tab.nextDue;
    // What the loop works with, declared once out here: a block that declares its own makes XS
    // open a scope on every pass (and a for loop's own `let` a copy of it on every pass).
    let i = 0;
    let slot = 0;
    let s: Session;
    let link: Link | null;
    let k = 0;
    // The subscriber's granted rate: above 0 only where the grant gates the push.
    let g = 0;
    let due = 0;
    let level = 0;
    // Row 1's count, added to the counters once the loop is done (one local instead of an element, per subscriber).
    let clear = 0;
    let delivered = 0;
    this.routing = true;
    for (i = 0; i < end; i++) {
      slot = tab.subscribers[first + i] as number;
      s = this.slots[slot] as Session;
      link = s.link;
      if (link === null) continue;
      k = first + slot;
      if (gated) {
        // The grant: a subscriber gets at most its granted rate, always the newest sample.
        g = tab.grantedHz[k] as number;
        if (!(g > 0) || now < (due = nextDue[k] as number)) {
          this.counters.rateGated++;
          continue;
        }
      } else if (!ch.critical && !((tab.grantedHz[k] as number) > 0)) {
        // A segments stream with nothing granted: whole-source, so the next push that goes carries gap.
        this.counters.rateGated++;
        tab.sourceDropped[k] = 1;
        continue;
      }
      // The link's level, read once.
      level = link.level;
      if (floorSheds && level < this.levelFloor) level = this.levelFloor;
      if (level >= LEVEL_CONGESTED || ch.critical || tab.sourceDropped[k] === 1 || s.neverShed.size > 0) {
        // The rarer turns (a congested link, a critical channel, a source dropped, a never-shed queue that holds frames).
        if (!this.turn(route, s, link, k, slot, level, seq, t, values, n, now)) continue;
      } else {
        // A clear link: row 1 for every subscription (shed.ts shedDecide), a send; a subscription
        // that was decimating starts afresh.
        clear++;
        if (tab.decimation[k * DECIMATION_STATE] !== 1) resetDecimation(tab.decimation, k * DECIMATION_STATE);
        if (!link.send(this.frame ?? this.dataFrame(route, seq, t, values, n), sharedTag, seq)) {
          // The link cannot take it now: dropped at once, never queued for later (no delay-and-burst).
          this.counters.egressDrops++;
          if (route.shedBase === SEGMENTS_SHED_BASE) tab.sourceDropped[k] = 1; // a lost segment is a lost command: say so
          continue;
        }
        s.sentFrames++;
      }
      delivered++;
      tab.firstPush[k] = 0;
      if (gated) {
        // The grant gate's clock (grants.ts consumeGrantSlot): at most one period of credit (g is above 0 here).
        // (g becomes the period, in ms: one local fewer, and on XS every local costs at every call.)
        g = 1000 / g;
        due += g;
        nextDue[k] = due < now - g ? now + g : due;
      }
      if (route.lastAt >= 0) {
        // §10.4 row 8: the values sent (n is at most the channel's fields), for the next conflation test.
        const last = tab.lastValues;
        const at = route.lastAt + slot * ch.fieldCount;
        for (let j = 0; j < n; j++) last[at + j] = values[j] as number;
        tab.lastLen[k] = n;
      }
    }
    this.routing = false;
    this.counters.rows[1] = (this.counters.rows[1] as number) + clear;
    this.counters.delivered += delivered;
    // Whole again once every link has copied it: a buffer stays shrunk only while it is handed on (hub/bytes.ts).
    if (this.frame !== null) {
      this.data.open();
      this.frame = null;
    }
  }

  /** The push's one DATA frame, written for the first subscriber that gets it (publishSample; SampleRouter). */
  dataFrame(route: ChannelRoute, seq: number, t: number, values: Float64Array, n: number): Uint8Array {
    if (this.data.sealedAt >= 0) this.data.open(); // whole already, unless a link threw while the last push was handed on
    // The buffer keeps the last push's prefix (only the push writes it, and a frame is longer than its prefix).
    if (this.prefixed !== route.prefix) {
      this.data.bytes.set(route.prefix);
      this.prefixed = route.prefix;
    }
    // A time that is no whole number from 0 to 2^53 - 1 reads as 0.
    if (!(t >= 0 && t <= MAX_SAFE)) t = 0;
    else t -= t % 1;
    if (this.sw === null) return (this.frame = this.data.seal(writeSampleAfter(this.data.bytes, this.data.view, this.fp, route.prefix.length, seq, t, values, n)));
    return (this.frame = this.data.seal(this.sw.writeSample(this.data.bytes, route.prefix.length, seq, t, values.buffer, values.byteOffset, n)));
  }

  /**
   * A subscriber the grant lets through whose route is not the plain send: its link at `level` 1
   * or more (the §10.4 table, sample-shed.ts), a critical channel, a source dropped (its own
   * frame with gap), or a never-shed queue that holds frames (then the sample is dropped). True
   * when the push went to it; the caller keeps the delivery's books.
   */
  turn(route: ChannelRoute, s: Session, link: Link, k: number, slot: number, level: number, seq: number, t: number, values: Float64Array, n: number, now: number): boolean {
    const tab = this.table;
    if (level >= LEVEL_CONGESTED) {
      // The table's packed entry (its row, its decision above).
      level = SHED_LOOKUP[route.shedBase + (tab.priority[k] as number) * 6 + (tab.firstPush[k] as number) * 3 + (level >= LEVEL_SEVERE ? 2 : 1)] as number;
      this.counters.rows[level & 0xf]!++;
      if (level >>> 4 !== SEND || tab.decimation[k * DECIMATION_STATE] !== 1) {
        if (shedSubscriber(this, route, level >>> 4, k, slot, values, n, now)) return false;
      }
    } else {
      this.counters.rows[1]!++;
      if (tab.decimation[k * DECIMATION_STATE] !== 1) resetDecimation(tab.decimation, k * DECIMATION_STATE);
    }
    // The subscriber's own variant, carrying gap (the shared frame goes only to those owed none).
    if (tab.sourceDropped[k] === 1) return sendGap(this, route, s, link, k, seq, t, values, n);
    const frame = this.frame ?? this.dataFrame(route, seq, t, values, n);
    if (route.ch.critical) return this.critical(s, frame, route.tag | SHARED, seq);
    if (s.neverShed.size > 0 || !link.send(frame, route.tag | SHARED, seq)) {
      this.counters.egressDrops++;
      if (route.shedBase === SEGMENTS_SHED_BASE) tab.sourceDropped[k] = 1; // a lost segment is a lost command: say so
      return false;
    }
    s.sentFrames++;
    return true;
  }

  /** One EVENT (§9.4): queued per subscriber, bounded, oldest dropped and counted. */
  publishEvent(route: ChannelRoute, t: number, values: readonly number[], text: string | undefined): void {
    const q = route.events;
    if (q === null) return;
    const ch = route.ch;
    const seq = (route.seq = (route.seq + 1) % 0x100000000);
    const tab = this.table;
    if (tab.subscriberCount[route.index] === 0) return;
    const n = Math.min(values.length, ch.fieldCount);
    // The frame's bound: its keys and numbers (at most 9 bytes each), then the text's own bytes.
    if (text !== undefined && EVENT_FRAME_OVERHEAD + 9 * n + utf8ByteLength(text) > this.maxFrameBytes) {
      this.counters.eventsTooLarge++;
      return;
    }
    const v = new Float64Array(n);
    for (let i = 0; i < n; i++) v[i] = values[i] as number;
    // One record per event, shared by every subscriber's queue.
    const rec: EventRecord = Object.freeze({ seq, t: t >= 0 && t <= MAX_SAFE ? Math.floor(t) : 0, values: v, count: n, text });
    // A STALE session's queue keeps filling (bounded, losses counted): a resume gets them (§9.4).
    q.push(rec);
    const first = route.index * tab.slots;
    this.routing = true;
    for (let i = 0; i < (tab.subscriberCount[route.index] as number); i++) {
      const s = this.slots[tab.subscribers[first + i] as number] as Session;
      if (s.link !== null) this.flushEvents(route, s);
    }
    this.routing = false;
  }

  /** A subscriber's queued events, as far as its link takes them; what stays owes a flush at the next tick. */
  flushEvents(route: ChannelRoute, s: Session): void {
    const q = route.events;
    const link = s.link;
    if (!q || !link) return;
    const ch = route.ch;
    const slot = s.slot;
    const k = this.table.row(route.index, slot);
    const firstPush = this.table.firstPush;
    const floor = this.levelFloor;
    const counters = this.counters;
    const tag = route.tag;
    for (let ev = q.peek(slot); ev !== undefined; ev = q.peek(slot)) {
      let level = link.level;
      if (level < floor) level = floor;
      const packed = SHED_LOOKUP[route.shedBase + (this.table.priority[k] as number) * 6 + (firstPush[k] as number) * 3 + (level >= 2 ? 2 : level >= 1 ? 1 : 0)] as number;
      const row = packed & 0xf;
      if (packed >>> 4 === SHED_DECISION.drop) {
        counters.rows[row] = (counters.rows[row] as number) + 1;
        counters.shedDrops++;
        q.drop(slot); // §9.4: counted, and carried by the next delivered event
        continue;
      }
      const w = this.beginControl();
      encodeFrame(eventFrame(ch.id, ev, q.dropped(slot)), w);
      const frame = this.arena.seal(w.pos);
      let went: boolean;
      if (ch.critical) went = this.critical(s, frame, tag, ev.seq);
      else if (s.neverShed.size > 0 || !link.send(frame, tag, ev.seq)) {
        s.eventsOwed = true; // stays queued, bounded (§9.4)
        this.host.due(this.clock.now());
        went = false;
      } else {
        s.sentFrames = (s.sentFrames + 1) >>> 0;
        went = true;
      }
      this.arena.unstage();
      if (!went) return;
      // Counted once, when the event leaves: a queued event is evaluated again on the next try.
      counters.rows[row] = (counters.rows[row] as number) + 1;
      q.shift(slot);
      firstPush[k] = 0;
      counters.delivered++;
    }
  }

  // ------------------------------------------------------------------ the never-shed path (§10.4)

  /**
   * A critical frame (`frame` exactly the frame): straight to the link when its never-shed queue
   * is empty and the link takes it, else into that queue behind the frames already waiting.
   * False when it could not be kept (no link, or the queue overflowed and the session is parked).
   */
  critical(s: Session, frame: Uint8Array, tag: number, seq: number): boolean {
    const link = s.link;
    if (!link) return false;
    const q = s.neverShed;
    if (q.size === 0 && link.send(frame, tag | Tag.CRITICAL, seq)) {
      s.sentFrames = (s.sentFrames + 1) >>> 0;
      return true;
    }
    const wasEmpty = q.size === 0;
    const now = this.clock.now();
    if (!q.push(frame, tag | Tag.CRITICAL, now)) {
      // The queue holds a burst of never-shed traffic (at the hub's default size, more than it
      // makes in 2 s even under a re-asserted ESTOP; on the device about 1.6 s of that): a link
      // that cannot take even that is broken, and parking it now is the same §10.4 transition,
      // only sooner.
      this.counters.neverShedOverflows++;
      this.host.overflowed(s);
      return false;
    }
    // §10.4: the stall is timed from the moment never-shed traffic first had to wait.
    if (wasEmpty) s.stallUpdate(true, false, now);
    this.host.due(now);
    return true;
  }

  /** Hands on what the session's never-shed queue holds, as far as its link takes it; true when the §10.4 park is due. */
  drain(s: Session, now: number): boolean {
    const link = s.link;
    if (!link) return false;
    const q = s.neverShed;
    const drained = q.size > 0 ? q.drainTo(link, now, this.health) : 0;
    s.sentFrames = (s.sentFrames + drained) >>> 0;
    s.stallUpdate(q.size > 0, drained > 0, now);
    // §10.4 park, not kill: after NEVER_SHED_STALL_EVICTION_MS (the StallClock's limit) the transport
    // is closed and the session goes STALE, as a transport loss would; never SESSION_EVICTED (§12.7).
    return s.parkDue(now);
  }

  // ------------------------------------------------------------------ control frames

  /** The control writer, reset over the whole staging area. */
  beginControl(): CborWriter {
    this.arena.unstage();
    const w = this.w;
    w.reset();
    return w;
  }

  control(s: Session, f: Frame): void {
    const w = this.beginControl();
    encodeFrame(f, w);
    this.critical(s, this.arena.seal(w.pos), tagOf(f.type, Tag.CRITICAL), 0);
    this.arena.unstage();
  }

  /** Before HELLO there is no session and no never-shed queue: the frame goes if the link takes it. */
  toConn(conn: EgressConn, f: Frame): void {
    if (conn.session) {
      this.control(conn.session, f);
      return;
    }
    const w = this.beginControl();
    encodeFrame(f, w);
    const went = conn.link.send(this.arena.seal(w.pos), tagOf(f.type, Tag.CRITICAL), 0);
    this.arena.unstage();
    if (went) conn.sent = (conn.sent + 1) >>> 0;
  }

  /** PONG (§5.14), allocation-free: to the session with the §10.3 level the table reads its link at, or before HELLO (no level) to the transport. */
  pong(conn: EgressConn, t0: number, t1: number): void {
    const arena = this.arena;
    arena.unstage();
    const s = conn.session;
    const level = s !== null && s.link !== null ? Math.min(3, Math.max(s.link.level, this.levelFloor)) : -1;
    const frame = arena.seal(writePong(arena.out, arena.outView, t0, t1, level));
    if (s !== null) this.critical(s, frame, PONG_TAG, 0);
    else if (conn.link.send(frame, PONG_TAG, 0)) conn.sent = (conn.sent + 1) >>> 0;
    arena.unstage();
  }

  nackConn(conn: EgressConn, code: number, frameType?: number, channelId?: number, retryAfterMs?: number): void {
    this.counters.nacks[code] = (this.counters.nacks[code] as number) + 1;
    this.toConn(conn, nackFrame(code, frameType, channelId, undefined, retryAfterMs));
  }

  nack(s: Session, code: number, frameType?: number, channelId?: number, requestId?: number, retryAfterMs?: number): void {
    this.counters.nacks[code] = (this.counters.nacks[code] as number) + 1;
    this.control(s, nackFrame(code, frameType, channelId, requestId, retryAfterMs));
  }

  // ------------------------------------------------------------------ ESTOP (§10.4, §11.2)

  /** The 12-byte ESTOP frame ahead of every queue of one transport, counted as the client counts it (§5.12). */
  estop(conn: EgressConn, frame: Uint8Array): void {
    conn.link.writeAhead(frame);
    const s = conn.session;
    if (s !== null && s.link === conn.link) s.sentFrames = (s.sentFrames + 1) >>> 0;
    else conn.sent = (conn.sent + 1) >>> 0;
  }
}

function nackFrame(code: number, frameType?: number, channelId?: number, requestId?: number, retryAfterMs?: number): Frame {
  const f: { type: 11; code: number; frameType?: number; channelId?: number; requestId?: number; retryAfterMs?: number } = { type: FrameType.NACK, code };
  if (frameType !== undefined) f.frameType = frameType;
  if (channelId !== undefined) f.channelId = channelId;
  if (requestId !== undefined) f.requestId = requestId;
  if (retryAfterMs !== undefined) f.retryAfterMs = retryAfterMs;
  return f;
}

function eventFrame(channelId: number, ev: EventRecord, dropped: number): Frame {
  const f: { type: 7; channelId: number; seq: number; t: number; values: number[]; dropped?: number; text?: string } = {
    type: FrameType.DATA,
    channelId,
    seq: ev.seq,
    t: ev.t,
    values: Array.from(ev.values),
  };
  if (dropped > 0) f.dropped = dropped;
  if (ev.text !== undefined) f.text = ev.text;
  return f;
}
