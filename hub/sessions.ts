// Sessions (§6): HELLO and WELCOME, resumption by token on any binding, the fixed slots and
// their reclaim under pressure, staleness (a lost transport or a park, §6.6) and teardown
// (§6.9). A session outlives its transports; its subscriptions and grants are kept while it is
// STALE and re-stated on resume.

import { GoodbyeReason, FrameType, PROTOCOL_VERSION, type HelloFrame } from './frame-types.js';
import { tierFor } from './credentials.js';
import type { Conn } from './conn.js';
import type { Hub } from './hub.js';
import { INTENT_BUCKET_DEPTH, INTENT_RATE_PER_S, PRE_SESSION_BYTES_DEPTH, PRE_SESSION_BYTES_PER_S } from './constants.js';
import { constantTimeEqual, Guard, GUARD_ROW } from './limits.js';
import { Nack } from './nack.js';
import { DECIMATION_STATE, resetDecimation } from './shed.js';
import { Session, SESSION_ROW, SessionState } from './session.js';
import { StreamKind, Tier } from '../catalog/schema.js';
import type { Link } from './ports.js';

/**
 * A link's tier ceiling as the core applies it (§6.10): a Tier code; anything that is not one
 * (NaN, a fraction, out of range) counts as the lowest it could mean, observer at worst.
 */
export function tierCeilingOf(link: Link): number {
  const c = link.tierCeiling();
  return c >= Tier.maintainer ? Tier.maintainer : c >= Tier.operator ? Tier.operator : Tier.observer;
}

/** Transports waiting for their HELLO whose guards the hub's store holds (more make rows of their own). */
export const CONN_GUARD_ROWS = 4;

export class SessionKeeper {
  private nextId = 1;
  /**
   * The rows of the sessions' and the transports' guards (limits.ts Guard): slot s's session row
   * at s × SESSION_ROW (its link's numbers and resume tokens too: session.ts), then
   * CONN_GUARD_ROWS rows of GUARD_ROW for transports waiting for their HELLO (one store for all:
   * on XS every typed array costs heap slots).
   */
  private readonly guards: Float64Array;
  /**
   * §5.18, per session slot: the report a chunked HEALTH answer is cut from, kept until its last
   * chunk went (chunks.ts sendHealth); null none. Here, not on the session: on XS every field of
   * a session is a heap slot, and only a maintainer's session ever holds one.
   */
  readonly healthTexts: (string | null)[];

  constructor(private readonly hub: Hub) {
    this.guards = new Float64Array(hub.slots.length * SESSION_ROW + CONN_GUARD_ROWS * GUARD_ROW);
    this.healthTexts = new Array<string | null>(hub.slots.length).fill(null);
  }

  /**
   * A new transport's guard (conn.ts): its bucket full, its counters empty, in a transport row
   * no transport still waiting for its HELLO holds (one with a session never reads its guard
   * again), or in a row of its own when all are held.
   */
  connGuard(now: number): Guard {
    const conns = this.hub.conns;
    const store = this.guards;
    for (let at = this.hub.slots.length * SESSION_ROW; at + GUARD_ROW <= store.length; at += GUARD_ROW) {
      let held = false;
      for (let i = 0; i < conns.length && !held; i++) {
        const g = (conns[i] as Conn).guard;
        held = (conns[i] as Conn).session === null && g.store === store && g.at === at;
      }
      if (!held) return new Guard(PRE_SESSION_BYTES_PER_S, PRE_SESSION_BYTES_DEPTH, now, store, at);
    }
    return new Guard(PRE_SESSION_BYTES_PER_S, PRE_SESSION_BYTES_DEPTH, now, new Float64Array(GUARD_ROW), 0);
  }

  hello(conn: Conn, f: HelloFrame, now: number): void {
    const hub = this.hub;
    const egress = hub.egress;
    if (f.version !== PROTOCOL_VERSION) {
      egress.nackConn(conn, Nack.VERSION, f.type);
      return;
    }
    let s: Session | undefined;
    if (f.resumeToken) {
      s = this.findByToken(f.resumeToken);
      if (!s) {
        egress.nackConn(conn, Nack.UNKNOWN_SESSION, f.type);
        return;
      }
      // §6.10: a session never holds a tier above its link's ceiling, so it cannot come onto a
      // link whose protection allows less. It stays as it was (STALE, or on its transport).
      const ceiling = tierCeilingOf(conn.link);
      if (s.tier > ceiling) {
        egress.nackConn(conn, Nack.FORBIDDEN, f.type);
        hub.log.event('resume-refused', s.id, ceiling);
        return;
      }
      this.resume(conn, s, now, f.resumeToken);
      // §6.3: a resume is always admitted (counted, never evaluated).
      hub.admission.check(true, hub.load);
    } else {
      let tier = hub.config.anonymousTier;
      if (f.credential) {
        const t = tierFor(hub.credentials, f.credential);
        if (t >= 0) tier = t;
      }
      if (tier < 0) {
        egress.nackConn(conn, Nack.FORBIDDEN, f.type);
        return;
      }
      // §6.3 admission, before freeSlot(): a refused HELLO must never reclaim a STALE session.
      hub.measureLoad(now);
      if (!this.hasSlot()) {
        egress.nackConn(conn, Nack.NO_SLOTS, f.type, undefined, 1000);
        return;
      }
      const v = hub.admission.check(false, hub.load);
      if (!v.admit) {
        egress.nackConn(conn, Nack.HUB_PRESSURE, f.type, undefined, v.retryAfterMs);
        return;
      }
      // §6.10: the link's protection caps the tier the session gets (the credential is never echoed or logged).
      const ceiling = tierCeilingOf(conn.link);
      const capped = tier > ceiling;
      if (capped) tier = ceiling;
      const slot = this.freeSlot();
      // The session's malformed-frame counter and NACK throttle start empty, as the transport's
      // would be restarted (§12), and its intent bucket full (§9.3).
      const guard = new Guard(INTENT_RATE_PER_S, INTENT_BUCKET_DEPTH, now, this.guards, slot * SESSION_ROW);
      s = new Session(this.nextId++, slot, tier, now, egress.ringFor(slot), guard);
      this.healthTexts[slot] = null;
      hub.random.fill(s.resumeToken);
      hub.slots[slot] = s;
      s.link = conn.link;
      conn.bind(s);
      // The count covers the transport since it was attached, the frames before HELLO too.
      s.sentFrames = conn.sent;
      // A new session in the slot starts with an empty ingress window (a resume keeps its own).
      hub.governor.resetSession(slot);
      hub.log.event('session-open', s.id, tier);
      if (capped) {
        egress.counters.tierCapped++;
        hub.log.event('tier-capped', s.id, ceiling);
      }
    }
    const plan = hub.plan;
    plan.beginAnswer();
    if (f.subWishes) plan.subscribe(s, f.subWishes);
    if (f.pubWishes) plan.publish(s, f.pubWishes, now);
    plan.replan();
    s.grantOwed = false;
    // WELCOME re-states every grant the session holds (a resume keeps them all, §6.6); its link
    // is told them first.
    conn.link.granted(plan.grantsOf(s));
    egress.control(s, {
      type: FrameType.WELCOME,
      sessionId: s.id,
      resumeToken: s.resumeToken,
      hubId: hub.config.hubId,
      mtu: conn.link.caps.mtu,
      slots: hub.config.slots,
      catalogHash: hub.catalog.hash,
      tier: s.tier,
      owner: hub.owner ? hub.owner.id : 0,
      latched: hub.latch.latched,
      subGrants: plan.subGrants(s),
      pubGrants: plan.pubGrants(s),
      staleTtlMs: hub.config.staleTtlMs,
    });
    plan.sendRefusals(s);
    // §11.2: a session that joins or resumes while latched is told of the stop in force.
    if (hub.latch.latched) hub.safety.toSession(s);
    // §10.2: a join re-splits the pie; the others hear of it now, not at the next tick.
    plan.announce();
    hub.due(now);
  }

  private findByToken(token: Uint8Array): Session | undefined {
    let found: Session | undefined;
    const slots = this.hub.slots;
    for (let i = 0; i < slots.length; i++) {
      const s = slots[i];
      if (!s) continue;
      // Both compared every time, in constant time: which one matched is not observable.
      const current = constantTimeEqual(s.resumeToken, token);
      const prior = constantTimeEqual(s.priorToken, token) && s.priorValid;
      if ((current || prior) && !found) found = s;
    }
    return found;
  }

  /** §6.6 → ACTIVE on any binding: grants kept and re-stated, first pushes re-sent (row 3). */
  private resume(conn: Conn, s: Session, now: number, token: Uint8Array): void {
    const hub = this.hub;
    const old = hub.connOf(s);
    if (old && old !== conn) {
      // The same client came back on another transport before the old one was noticed dead.
      hub.egress.toConn({ link: old.link, session: null, sent: 0 }, { type: FrameType.GOODBYE, reason: GoodbyeReason.RESUMED_ELSEWHERE });
      hub.dropConn(old);
      old.link.close();
    }
    s.link = conn.link;
    conn.bind(s);
    s.state = SessionState.ACTIVE;
    s.lastHeard = now;
    s.neverShed.clear();
    s.resetLink();
    s.sentFrames = conn.sent;
    this.healthTexts[s.slot] = null;
    s.eventsOwed = true;
    // §6.6: the token presented stays good until the client is heard with the new one's WELCOME.
    s.priorToken.set(token);
    s.priorValid = true;
    hub.random.fill(s.resumeToken);
    const t = hub.table;
    for (let i = 0; i < t.routeCount[s.slot]!; i++) {
      const k = t.row(t.routeOf(s.slot, i), s.slot);
      // §10.4 row 3: every grant is re-stated, so every first push is owed again.
      t.firstPush[k] = 1;
      t.nextDue[k] = 0;
      resetDecimation(t.decimation, k * DECIMATION_STATE);
      t.lastLen[k] = -1;
    }
    if (s === hub.owner) hub.safety.ownerHeard(now);
    hub.egress.counters.resumes++;
    hub.log.event('session-resume', s.id);
  }

  /** A slot is free, or a STALE session would yield one to freeSlot(). */
  hasSlot(): boolean {
    const slots = this.hub.slots;
    for (let i = 0; i < slots.length; i++) {
      const s = slots[i];
      if (!s || s.state === SessionState.STALE) return true;
    }
    return false;
  }

  /** The slot a new session takes; the caller checked hasSlot(). */
  private freeSlot(): number {
    const slots = this.hub.slots;
    for (let i = 0; i < slots.length; i++) if (!slots[i]) return i;
    // §6: slot pressure reclaims the oldest STALE session — the only way a parked one yields.
    let oldest: Session | null = null;
    for (let i = 0; i < slots.length; i++) {
      const s = slots[i] as Session;
      if (s.state === SessionState.STALE && (!oldest || s.staleSince < oldest.staleSince)) oldest = s;
    }
    if (!oldest) return -1;
    this.hub.egress.counters.reclaims++;
    this.close(oldest, GoodbyeReason.EVICTED);
    return oldest.slot;
  }

  /** §6.6 staleness: transport lost, reported lost, or parked by §10.4. Grants are kept. */
  stale(s: Session, parked: boolean): void {
    const hub = this.hub;
    if (s.state !== SessionState.ACTIVE) return;
    const conn = hub.connOf(s);
    if (conn) {
      hub.dropConn(conn);
      conn.link.close();
    }
    const now = hub.clock.now();
    s.link = null;
    s.state = SessionState.STALE;
    s.staleSince = now;
    s.neverShed.clear();
    s.stallReset();
    const t = hub.table;
    for (let i = 0; i < t.routeCount[s.slot]!; i++) {
      const route = hub.plan.subscribedRoute(s, i);
      // The client will have missed segments while away: the first push after resume says so.
      if (route.ch.kind === StreamKind.segments) t.sourceDropped[t.row(route.index, s.slot)] = 1;
    }
    if (parked) hub.egress.counters.parks++;
    hub.log.event(parked ? 'session-park' : 'session-stale', s.id);
    hub.plan.replan();
    hub.plan.announce();
    hub.due(now);
  }

  /** §6.9 teardown: GOODBYE, stale expiry, slot-pressure reclaim or persistent misbehaviour. */
  close(s: Session, reason: number): void {
    const hub = this.hub;
    if (s.state === SessionState.CLOSED) return;
    if (s.link) hub.egress.control(s, { type: FrameType.GOODBYE, reason });
    const conn = hub.connOf(s);
    if (conn) {
      hub.dropConn(conn);
      conn.link.close();
    }
    s.link = null;
    s.state = SessionState.CLOSED;
    hub.plan.dropAll(s);
    hub.slots[s.slot] = null;
    this.healthTexts[s.slot] = null;
    if (hub.owner === s) hub.safety.setOwner(null);
    hub.log.event('session-close', s.id, reason);
    hub.plan.replan();
    hub.plan.announce();
  }

  byId(id: number): Session | undefined {
    const slots = this.hub.slots;
    for (let i = 0; i < slots.length; i++) {
      const s = slots[i];
      if (s && s.id === id) return s;
    }
    return undefined;
  }
}
