// The hub's own load (docs/operations.md "Health, admission and overload") and what operators may
// inspect: the measured signals admission and the ladder read, the ladder's park choice, the
// detailed health report, the session table as numbers, and what the hub holds by structure.
// Nothing here is on a hot path: the load is measured when admission asks and on the tick's load
// period; the rest on request.

import { AckLagSummary } from './acklag.js';
import { ADMISSION_WINDOW_S } from './admission.js';
import { type HealthReport, type HubLoad, type LinkHealth, num } from './health.js';
import type { Hub } from './hub.js';
import { aggregateOccupancy, LADDER_KEEPING_UP_OCCUPANCY, LADDER_READER_STALL_MS, type LadderSessionView, type LadderSubView } from './ladder.js';
import { AckForm, type Link } from './ports.js';
import { LOAD_AT, type Session, SessionState } from './session.js';
import { WINDOW_BUCKETS } from './window60.js';
import { StreamKind } from '../catalog/schema.js';

const ACTIVE = SessionState.ACTIVE;

export interface SubView {
  channelId: number;
  wishHz: number;
  grantedHz: number;
  priority: number;
}

export interface SessionView {
  id: number;
  slot: number;
  state: number;
  tier: number;
  binding: string;
  level: number;
  neverShedBytes: number;
  ackLag: number;
  subs: SubView[];
}

export interface HubFootprint {
  /** Channels a client can subscribe to: each is a block of one row per session slot. */
  readonly routes: number;
  readonly subscriptionRows: number;
  /** Rows in use: the open sessions' subscriptions. */
  readonly subscriptions: number;
  /** §10.4 row 8: the blocks of values last sent, one per (STATE channel, slot), all made at setup (SubscriptionTable.lastValues). */
  readonly stateValueArrays: number;
  readonly stateValueArraysMax: number;
  /** §9.4: one queue per EVENT channel shared by its subscribers, and the events they hold at most in all. */
  readonly eventRings: number;
  readonly eventCapacity: number;
  /** The hub-wide frame buffers: a push's DATA frame and the control frames' staging area. */
  readonly scratchBytes: number;
  /** The open sessions' never-shed queues (§10.4). */
  readonly neverShedBytes: number;
}

/**
 * The few numbers of the detailed report a summary publishes (the fleet uplink's `health`,
 * docs/fleet.md), as the report and `ready` give them at the same instant: the hub fills one
 * record in place (Load.summary), without the report's objects and lists.
 */
export interface HealthSummary {
  atMs: number;
  /** 1 when new sessions would be admitted (`Hub.ready`). */
  ready: number;
  latched: number;
  estops: number;
  slots: number;
  active: number;
  stale: number;
  delivered: number;
  decimated: number;
  conflated: number;
  shedDrops: number;
  egressDrops: number;
  rateGated: number;
  parks: number;
  resumes: number;
  rung: number;
  ladderChanges: number;
  egressOccupancy: number;
  readerStalledLinks: number;
  heapUsedBytes: number;
  heapLimitBytes: number;
  loopDelayP95: number;
  loopDelayMax: number;
}

/** A HealthSummary to fill. */
export function healthSummary(): HealthSummary {
  return {
    atMs: 0, ready: 0, latched: 0, estops: 0, slots: 0, active: 0, stale: 0, delivered: 0, decimated: 0, conflated: 0, shedDrops: 0, egressDrops: 0,
    rateGated: 0, parks: 0, resumes: 0, rung: 0, ladderChanges: 0, egressOccupancy: 0, readerStalledLinks: 0, heapUsedBytes: 0, heapLimitBytes: 0, loopDelayP95: 0, loopDelayMax: 0,
  };
}

export class Load {
  private readonly ackLag: AckLagSummary;
  // What tally() counted last.
  private active = 0;
  private stale = 0;

  constructor(private readonly hub: Hub) {
    this.ackLag = new AckLagSummary(hub.config.slots);
  }

  /**
   * Fills the load admission and the ladder read: the measured views, the never-shed backlog,
   * the heap, and the aggregate egress occupancy (less the links stalled by their readers; 0
   * while some link keeps up). A few reads per session, allocation-free.
   */
  measure(now: number, load: HubLoad): HubLoad {
    const hub = this.hub;
    hub.health.sample(now, load);
    const heap = hub.heap ? hub.heap() : NaN;
    load.heapUsedBytes = heap >= 0 ? heap : NaN;
    this.egress(load);
    load.keepingUpLinks = this.handOffs(now, load);
    if (load.keepingUpLinks > 0) load.egressOccupancy = 0;
    return load;
  }

  /**
   * Fills what the ladder reads, every LOAD_PERIOD_MS: the tick view, the heap and the aggregate
   * egress occupancy, the sessions' hand-off marks moved on as `measure` moves them. The other
   * fields are left as they are: admission (at HELLO), `ready` and the report measure afresh
   * before they read them. `found` is what the hub's sweep, walking the sessions at this `now`,
   * found (it moves the marks on as it goes): 1 a link keeps up, 0 none does, −1 not known (the
   * sessions are walked here, up to the first link keeping up: the aggregate then reads 0).
   */
  ladderSignals(now: number, load: HubLoad, found = -1): HubLoad {
    const hub = this.hub;
    const tick = hub.health.tick;
    load.tickP95Ms = tick.p95Over(now, ADMISSION_WINDOW_S);
    load.tickCount = tick.viewCount;
    const heap = hub.heap ? hub.heap() : NaN;
    load.heapUsedBytes = heap >= 0 ? heap : NaN;
    if (found > 0 || (found < 0 && this.handOffs(now, null) > 0)) load.egressOccupancy = 0;
    else this.egress(load);
    return load;
  }

  /**
   * A load sweep's look at an ACTIVE session: moves its hand-off mark on (the frames handed to its
   * transport, in its guard's row: session.ts LOAD_AT) and returns when it last found frames
   * handed since (-Infinity before any).
   */
  handOff(s: Session, now: number): number {
    const marks = s.guard.store;
    const m = s.guard.at + LOAD_AT;
    if (marks[m] !== s.sentFrames) {
      marks[m] = s.sentFrames;
      marks[m + 1] = now;
      return now;
    }
    return marks[m + 1] as number;
  }

  /**
   * A session keeping up (its hand-off mark moved on): handed frames within the last second, its
   * link at level 0 (clear of congestion: a queue bounded in time reads congested, not full),
   * little queued and its transport moving. While one does, the hub's own egress is evidently
   * not the bottleneck: the backlog elsewhere is those links' (§10.3, §10.4).
   */
  keepsUp(handedAt: number, link: Link, level: number, now: number): boolean {
    return now - handedAt <= LADDER_READER_STALL_MS && level === 0 && link.occupancy() < LADDER_KEEPING_UP_OCCUPANCY && link.stalledMs() < LADDER_READER_STALL_MS;
  }

  // Moves the ACTIVE sessions' hand-off marks on and counts the links keeping up: every one, and
  // the never-shed backlog into `load`; or, without `load`, up to the first.
  private handOffs(now: number, load: HubLoad | null): number {
    const slots = this.hub.slots;
    let backlog = 0;
    let keepingUp = 0;
    for (let i = 0; i < slots.length; i++) {
      const s = slots[i];
      if (!s) continue;
      backlog += s.neverShed.bytes;
      const link = s.link;
      if (s.state !== ACTIVE || !link) continue;
      const handedAt = this.handOff(s, now);
      // The level is read only for a session handed frames lately (reading it judges it).
      if ((keepingUp === 0 || load !== null) && now - handedAt <= LADDER_READER_STALL_MS && this.keepsUp(handedAt, link, link.level, now)) keepingUp++;
    }
    if (load !== null) load.neverShedBacklogBytes = backlog;
    return keepingUp;
  }

  // The links' egress: those stalled by their readers counted, the others' occupancy aggregated.
  private egress(load: HubLoad): void {
    let occupancy = 0;
    let readerStalled = 0;
    const conns = this.hub.conns;
    for (let i = 0; i < conns.length; i++) {
      const link = conns[i]!.link;
      const o = link.occupancy();
      if (!(o > 0)) continue;
      // A backlog its reader left untaken is that session's, not the hub's (LADDER_READER_STALL_MS).
      if (link.stalledMs() >= LADDER_READER_STALL_MS) readerStalled++;
      else occupancy += o;
    }
    load.readerStalledLinks = readerStalled;
    load.egressOccupancy = aggregateOccupancy(occupancy, this.hub.config.slots);
  }

  /** The sessions as the ladder's park choice sees them (numbers only; made only when a park is due). */
  ladderViews(): LadderSessionView[] {
    const hub = this.hub;
    const out: LadderSessionView[] = [];
    const t = hub.table;
    for (let i = 0; i < hub.slots.length; i++) {
      const s = hub.slots[i];
      if (!s) continue;
      const subs: LadderSubView[] = [];
      for (let j = 0; j < t.routeCount[s.slot]!; j++) {
        const route = hub.plan.subscribedRoute(s, j);
        subs.push({ channelId: route.ch.id, priority: t.priority[t.row(route.index, s.slot)]!, segments: route.ch.kind === StreamKind.segments });
      }
      out.push({ id: s.id, active: s.state === SessionState.ACTIVE && s.link !== null, owner: s === hub.owner, tier: s.tier, subs });
    }
    return out;
  }

  /** Sessions as operators may see them: ids, states, tiers, grants — no names or credentials. */
  sessions(): SessionView[] {
    const hub = this.hub;
    const out: SessionView[] = [];
    const t = hub.table;
    for (let i = 0; i < hub.slots.length; i++) {
      const s = hub.slots[i];
      if (!s) continue;
      const subs: SubView[] = [];
      for (let j = 0; j < t.routeCount[s.slot]!; j++) {
        const route = hub.plan.subscribedRoute(s, j);
        const k = t.row(route.index, s.slot);
        subs.push({ channelId: route.ch.id, wishHz: t.wishHz[k]!, grantedHz: t.grantedHz[k]!, priority: t.priority[k]! });
      }
      const link = s.link;
      out.push({
        id: s.id,
        slot: s.slot,
        state: s.state,
        tier: s.tier,
        binding: link ? link.caps.binding : '',
        level: link ? link.level : 0,
        neverShedBytes: s.neverShed.bytes,
        ackLag: link && link.caps.ackForm === AckForm.STREAM ? link.ackLag() : 0,
        subs,
      });
    }
    return out;
  }

  /** What the hub holds, by structure: the sizes fixed at setup and what its sessions made (docs/architecture.md "Memory"). */
  footprint(): HubFootprint {
    const hub = this.hub;
    // One block of values per (STATE channel, slot), all in the table's lastValues from the start.
    let stateValueArraysMax = 0;
    let eventRings = 0;
    let eventCapacity = 0;
    for (const route of hub.routes) {
      if (route.lastAt >= 0) stateValueArraysMax += hub.table.slots;
      if (route.events) {
        eventRings++;
        eventCapacity += route.events.capacity;
      }
    }
    let subscriptions = 0;
    let neverShedBytes = 0;
    for (let i = 0; i < hub.slots.length; i++) {
      const s = hub.slots[i];
      if (!s) continue;
      subscriptions += hub.table.routeCount[s.slot]!;
      neverShedBytes += s.neverShed.capacityBytes;
    }
    return {
      routes: hub.routes.length,
      subscriptionRows: hub.routes.length * hub.table.slots,
      subscriptions,
      stateValueArrays: stateValueArraysMax,
      stateValueArraysMax,
      eventRings,
      eventCapacity,
      scratchBytes: hub.egress.data.capacity + hub.egress.arena.stageBytes,
      neverShedBytes,
    };
  }

  /** The sessions the report counts: STALE ones in `stale`, ACTIVE ones with a link in `active`. */
  private tally(): void {
    const hub = this.hub;
    let active = 0;
    let stale = 0;
    for (let i = 0; i < hub.slots.length; i++) {
      const s = hub.slots[i];
      if (!s) continue;
      if (s.state === SessionState.STALE) stale++;
      else if (s.state === ACTIVE && s.link) active++;
    }
    this.active = active;
    this.stale = stale;
  }

  /**
   * `out` filled with what the detailed report and `ready` would give at `now` (HealthSummary),
   * the load measured once; allocation-free.
   */
  summary(now: number, out: HealthSummary): HealthSummary {
    const hub = this.hub;
    const load = this.measure(now, hub.load);
    this.tally();
    const c = hub.egress.counters;
    const w = hub.health.loopDelay;
    out.atMs = num(now);
    out.ready = hub.admission.peek(load).admit ? 1 : 0;
    out.latched = hub.latch.latched ? 1 : 0;
    out.estops = num(c.estops);
    out.slots = num(hub.config.slots);
    out.active = num(this.active);
    out.stale = num(this.stale);
    out.delivered = num(c.delivered);
    out.decimated = num(c.decimated);
    out.conflated = num(c.conflated);
    out.shedDrops = num(c.shedDrops);
    out.egressDrops = num(c.egressDrops);
    out.rateGated = num(c.rateGated);
    out.parks = num(c.parks);
    out.resumes = num(c.resumes);
    out.rung = hub.ladder.state.rung;
    out.ladderChanges = num(hub.ladder.state.changes);
    out.egressOccupancy = num(load.egressOccupancy);
    out.readerStalledLinks = num(load.readerStalledLinks);
    out.heapUsedBytes = num(load.heapUsedBytes);
    out.heapLimitBytes = num(hub.config.heapLimitBytes);
    out.loopDelayP95 = num(w.p95Over(now, WINDOW_BUCKETS));
    out.loopDelayMax = num(w.maxOver(now, WINDOW_BUCKETS));
    return out;
  }

  /** The detailed health report (`metrics.version: 1`). Numbers under fixed keys only. Allocates: on request only. */
  report(now: number): HealthReport {
    const hub = this.hub;
    this.measure(now, hub.load);
    const a = this.ackLag;
    a.reset();
    const links: LinkHealth[] = [];
    this.tally();
    for (let i = 0; i < hub.slots.length; i++) {
      const s = hub.slots[i];
      const link = s ? s.link : null;
      if (!s || s.state !== ACTIVE || !link) continue;
      const level = link.level;
      // A link acknowledged by bitmap (ESP-NOW, §13.3) has no ack lag: its level only.
      a.add(link.caps.ackForm === AckForm.STREAM ? link.ackLag() : NaN, level);
      links.push({ slot: s.slot, binding: link.caps.binding, level, loss: link.lossRate(), occupancy: link.occupancy() });
    }
    a.finish();
    return hub.health.report(now, {
      counters: hub.egress.counters,
      slots: hub.config.slots,
      active: this.active,
      stale: this.stale,
      latched: hub.latch.latched,
      links,
      load: hub.load,
      heapLimitBytes: hub.config.heapLimitBytes,
      ackLag: a,
      admission: hub.admission,
      ladder: hub.ladder,
      governor: hub.governor,
    });
  }
}
