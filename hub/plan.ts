// Subscriptions, publications and the grant plan (§10.2): what each session wished, what the
// hub granted it, and the re-split of the pie whenever either changes. Grants are re-stated to a
// session whose grants changed by an unsolicited GRANT (§10.2); its link is told them first
// (Link.granted), so that a broadcast segment (§10.6) knows its subscribers' grants without
// reading a frame. The grants WELCOME and GRANT carry are read here from the subscription table;
// the egress layer sends the frames.

import type { ChannelInfo } from '../catalog/index.js';
import { ChannelClass, Direction, StreamKind } from '../catalog/schema.js';
import { FrameType, type PubGrant, type PubWish, type SubGrant, type SubWish as WireSubWish } from './frame-types.js';
import { floorToGrantStep, frameBytesFor, grantedPriority, planGrants, tierCapHz, type SubWish } from './grants.js';
import type { Hub } from './hub.js';
import { burstFor } from './limits.js';
import { Nack } from './nack.js';
import type { GrantSet } from './ports.js';
import { Publication, SessionState, type ChannelRoute, type Session, type SubscriptionTable } from './session.js';

const SEGMENTS = StreamKind.segments;

/** A session's subscription grants as the GrantSet links read (hub/ports.ts), refilled per use. */
class SessionGrants implements GrantSet {
  count = 0;
  private slot = 0;
  constructor(
    private readonly table: SubscriptionTable,
    private readonly routes: readonly ChannelRoute[],
  ) {}
  of(slot: number): this {
    this.slot = slot;
    this.count = this.table.routeCount[slot] as number;
    return this;
  }
  channelId(i: number): number {
    return (this.routes[this.table.routeOf(this.slot, i)] as ChannelRoute).ch.id;
  }
  grantedHz(i: number): number {
    const t = this.table;
    return t.grantedHz[t.row(t.routeOf(this.slot, i), this.slot)] as number;
  }
  priority(i: number): number {
    const t = this.table;
    return t.priority[t.row(t.routeOf(this.slot, i), this.slot)] as number;
  }
}

export class Plan {
  /** Wishes refused while answering one frame: (code, frame type, channel id) triples, sent after the answer. */
  private readonly refusals: number[] = [];
  private readonly table: SubscriptionTable;
  private readonly grantSet: SessionGrants;

  constructor(private readonly hub: Hub) {
    this.table = hub.table;
    this.grantSet = new SessionGrants(hub.table, hub.routes);
  }

  // ------------------------------------------------------------------ the frames

  subscribeFrame(s: Session, wishes: readonly WireSubWish[]): void {
    this.refusals.length = 0;
    this.subscribe(s, wishes);
    this.replan();
    this.grant(s, true, false);
    this.sendRefusals(s);
    this.announce();
  }

  unsubscribeFrame(s: Session, channels: readonly number[]): void {
    for (const id of channels) this.unsubscribe(s, id);
    this.replan();
    this.grant(s, true, false);
    this.announce();
  }

  publishFrame(s: Session, wishes: readonly PubWish[], now: number): void {
    this.refusals.length = 0;
    const granted = this.publish(s, wishes, now);
    // §10.2: a PUBLISH is always answered with a GRANT carrying granted_publishes, even empty.
    this.hub.egress.control(s, { type: FrameType.GRANT, pubGrants: granted });
    this.sendRefusals(s);
  }

  /** Starts collecting the refusals of one HELLO's wishes (sent after its WELCOME by sendRefusals). */
  beginAnswer(): void {
    this.refusals.length = 0;
  }

  // ------------------------------------------------------------------ the grants stated

  /** The session's grants as its link will be told them (a broadcast segment learns them so, §10.6). */
  grantsOf(s: Session): GrantSet {
    return this.grantSet.of(s.slot);
  }

  /** The session's current subscription grants, in subscription order (allocates: WELCOME and GRANT only). */
  subGrants(s: Session): SubGrant[] {
    const out: SubGrant[] = [];
    const g = this.grantSet.of(s.slot);
    for (let i = 0; i < g.count; i++) out.push({ channelId: g.channelId(i), grantedRateHz: g.grantedHz(i), priority: g.priority(i) });
    return out;
  }

  pubGrants(s: Session): PubGrant[] {
    const out: PubGrant[] = [];
    for (const p of s.pubs) out.push({ channelId: p.ch.id, grantedRateHz: p.grantedHz, burst: p.burst });
    return out;
  }

  /** GRANT re-stating the session's grants (§10.2): its link is told them first. */
  grant(s: Session, subs: boolean, pubs: boolean): void {
    s.grantOwed = false;
    this.hub.egress.counters.grantsAnnounced++;
    const f: { type: 6; subGrants?: SubGrant[]; pubGrants?: PubGrant[] } = { type: FrameType.GRANT };
    if (subs) {
      f.subGrants = this.subGrants(s);
      if (s.link) s.link.granted(this.grantsOf(s));
    }
    if (pubs) f.pubGrants = this.pubGrants(s);
    this.hub.egress.control(s, f);
  }

  // ------------------------------------------------------------------ wishes

  private refuse(code: number, frameType: number, channelId: number): void {
    this.refusals.push(code, frameType, channelId);
  }

  /** Refused wishes are NACKed after the answer (WELCOME or GRANT), so that the answer comes first. */
  sendRefusals(s: Session): void {
    const r = this.refusals;
    for (let i = 0; i + 2 < r.length; i += 3) this.hub.egress.nack(s, r[i] as number, r[i + 1] as number, r[i + 2] as number);
    r.length = 0;
  }

  subscribe(s: Session, wishes: readonly WireSubWish[]): void {
    const t = this.table;
    for (const w of wishes) {
      const route = this.hub.routeOf(w.channelId);
      if (!route) {
        this.refuse(Nack.UNKNOWN_CHANNEL, FrameType.SUBSCRIBE, w.channelId);
        continue;
      }
      const ch = route.ch;
      if (s.tier < ch.subscribeTier) {
        this.refuse(Nack.FORBIDDEN, FrameType.SUBSCRIBE, w.channelId);
        continue;
      }
      const priority = grantedPriority(w.priority, ch.priority, ch.critical, s.tier);
      if (t.has(route.index, s.slot)) {
        const k = t.row(route.index, s.slot);
        t.wishHz[k] = w.wishedRateHz;
        t.priority[k] = priority;
        t.firstPush[k] = 1;
        continue;
      }
      t.add(route.index, s.slot, w.wishedRateHz, priority);
      if (route.events) route.events.join(s.slot);
    }
  }

  unsubscribe(s: Session, channelId: number): void {
    const route = this.hub.routeOf(channelId);
    if (!route || !this.table.has(route.index, s.slot)) return;
    this.table.remove(route.index, s.slot);
    if (route.events) route.events.leave(s.slot);
  }

  /** Ends every subscription and publication of a closing session. */
  dropAll(s: Session): void {
    const t = this.table;
    while (t.routeCount[s.slot]! > 0) this.unsubscribe(s, this.subscribedRoute(s, 0).ch.id);
    s.pubs.length = 0;
  }

  /** The i-th channel the session subscribed to, in subscription order. */
  subscribedRoute(s: Session, i: number): ChannelRoute {
    return this.hub.routes[this.table.routeOf(s.slot, i)] as ChannelRoute;
  }

  /**
   * §10.2/§10.5 publication grants. A publication is ingress: it spends none of the egress
   * capacity or link budget, so its wish is clamped by the catalog max_rate_hz (and refused
   * below the catalog publish tier); the burst is clamped into [granted, granted × 4] and
   * below the catalog max_burst.
   */
  publish(s: Session, wishes: readonly PubWish[], now: number): PubGrant[] {
    const out: PubGrant[] = [];
    for (const w of wishes) {
      const ch = this.hub.catalog.byId(w.channelId);
      if (!ch || ch.direction !== Direction.publication || ch.cls === ChannelClass.INTENT) {
        this.refuse(Nack.UNKNOWN_CHANNEL, FrameType.PUBLISH, w.channelId);
        continue;
      }
      if (ch.publishTier < 0 || s.tier < ch.publishTier) {
        this.refuse(Nack.FORBIDDEN, FrameType.PUBLISH, w.channelId);
        continue;
      }
      const granted = floorToGrantStep(Math.min(w.wishedRateHz, ch.maxRateHz));
      if (!(granted > 0)) {
        // §10.2: the answer is the truth. A wish that floors to 0 is no grant: a publication
        // granted before is withdrawn, as the answer leaves it out.
        const i = s.pubs.indexOf(s.publication(ch.id) as Publication);
        if (i >= 0) s.pubs.splice(i, 1);
        continue;
      }
      let burst = burstFor(granted, w.burst);
      if (ch.maxBurst > 0) burst = Math.max(granted, Math.min(burst, ch.maxBurst));
      // §10.5: refill = the granted rate; capacity = burst if asked, else the granted rate.
      if (w.burst === undefined) burst = granted;
      const pub = s.publication(ch.id);
      if (!pub) {
        s.pubs.push(new Publication(ch, granted, burst, now));
      } else {
        // A re-grant keeps the tokens held, clamped to the new capacity.
        pub.grantedHz = granted;
        pub.burst = burst;
        pub.bucket.configure(granted, burst, now);
      }
      out.push({ channelId: ch.id, grantedRateHz: granted, burst });
    }
    return out;
  }

  // ------------------------------------------------------------------ the plan

  /**
   * The rate a subscription asks the plan for. §10.4: a segments stream is shed whole-source
   * or not at all, so its grant is too: any positive wish asks for the whole source (the
   * catalog max_rate_hz), and `replan` grants that or nothing.
   */
  planWishHz(ch: ChannelInfo, k: number): number {
    const wishHz = this.table.wishHz[k]!;
    if (ch.kind === SEGMENTS) return wishHz > 0 ? ch.maxRateHz : 0;
    return wishHz;
  }

  /**
   * Re-splits the pie over every ACTIVE session (§10.2) and marks sessions whose grants
   * changed; they are told by an unsolicited GRANT. STALE sessions keep their grants
   * frozen until they resume.
   */
  replan(): void {
    const hub = this.hub;
    const t = this.table;
    const wishes: SubWish[] = [];
    // The planned subscriptions, in plan order: their rows, sessions and channels.
    const rows: number[] = [];
    const owners: Session[] = [];
    const channels: ChannelInfo[] = [];
    const budgets = new Map<number, number>();
    const slots = hub.slots;
    for (let i = 0; i < slots.length; i++) {
      const s = slots[i];
      if (!s || s.state !== SessionState.ACTIVE) continue;
      if (Number.isFinite(s.budgetBps)) budgets.set(s.id, s.budgetBps);
      for (let j = 0; j < t.routeCount[s.slot]!; j++) {
        const route = this.subscribedRoute(s, j);
        const k = t.row(route.index, s.slot);
        rows.push(k);
        owners.push(s);
        channels.push(route.ch);
        wishes.push(this.planWish(s, route.ch, k, this.planWishHz(route.ch, k)));
      }
    }
    let granted = planGrants(wishes, budgets, hub.config.capacityHz);
    // §10.4 segments: a share below the whole source is no grant at all. Their share goes
    // back to the pie and the plan is made again without them.
    let partial = false;
    for (let i = 0; i < rows.length; i++) {
      const ch = channels[i] as ChannelInfo;
      if (ch.kind === SEGMENTS && !ch.critical && (granted[i] as number) < ch.maxRateHz && (wishes[i] as SubWish).wishHz > 0) {
        wishes[i] = this.planWish(owners[i] as Session, ch, rows[i] as number, 0);
        partial = true;
      }
    }
    if (partial) granted = planGrants(wishes, budgets, hub.config.capacityHz);
    for (let i = 0; i < rows.length; i++) {
      const k = rows[i] as number;
      const ch = channels[i] as ChannelInfo;
      let g = granted[i] as number;
      if (ch.kind === SEGMENTS && !ch.critical) g = g >= ch.maxRateHz ? ch.maxRateHz : 0;
      if (!ch.critical) {
        // docs/operations.md "Health, admission and overload" ladder rungs 2–5: the planned grant
        // × the rung's factor, after the pie split (the share given up is not handed to others);
        // critical rows are never touched (§10.2).
        const f = hub.ladder.grantFactor(t.priority[k] as number, ch.kind === SEGMENTS);
        if (f !== 1) g = floorToGrantStep(g * f);
      }
      if (g !== t.grantedHz[k]) {
        t.grantedHz[k] = g;
        t.firstPush[k] = 1; // §9.1: the first push after any grant change is always sent
        (owners[i] as Session).grantOwed = true;
      }
    }
  }

  private planWish(s: Session, ch: ChannelInfo, k: number, wishHz: number): SubWish {
    return {
      session: s.id,
      channelId: ch.id,
      wishHz,
      priority: this.table.priority[k]!,
      maxRateHz: ch.maxRateHz,
      tierCapHz: tierCapHz(s.tier, ch.maxRateHz),
      frameBytes: frameBytesFor(ch.fieldCount),
      critical: ch.critical,
    };
  }

  /** Sends every owed unsolicited GRANT (§10.2: re-states the current grants). */
  announce(): void {
    const slots = this.hub.slots;
    for (let i = 0; i < slots.length; i++) {
      const s = slots[i];
      if (s && s.grantOwed && s.state === SessionState.ACTIVE) this.grant(s, true, false);
    }
  }

  /** What a session asks of its link in bytes/s: its clamped non-critical wishes (grants.ts linkDemandBps). */
  demandBps(s: Session): number {
    const t = this.table;
    let d = 0;
    for (let i = 0; i < t.routeCount[s.slot]!; i++) {
      const route = this.subscribedRoute(s, i);
      const ch = route.ch;
      if (ch.critical) continue;
      const hz = Math.min(this.planWishHz(ch, t.row(route.index, s.slot)), ch.maxRateHz, tierCapHz(s.tier, ch.maxRateHz));
      if (hz > 0) d += hz * frameBytesFor(ch.fieldCount);
    }
    return d;
  }
}
