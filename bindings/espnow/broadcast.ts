// §10.6 broadcast media: one transmission serves every peer on a segment, so a channel's
// effective rate there is the highest grant among its subscribers on that segment, while each
// subscriber's own grant still drives what the hub offers (docs/_espnow.md "Broadcast").
//
// How it plugs into the core: the core keeps one Link per peer and never learns that the peers
// share the air. The hub encodes each push of a channel once and hands the identical bytes to
// every subscriber whose grant is due (hub.ts publishSample); the segment sees those offers
// arrive at the peers' links and routes each one:
//
//   BROADCAST  the first offer of a push, when the channel's effective-rate gate is open (or the
//              offering peer is adopting a new grant, §9.1 row 3): transmitted once, to all;
//   COALESCED  a later offer of the same push (same channel and push sequence): already on air;
//   GATED      a push the gate holds back: it came sooner than the effective rate allows, and
//              every peer has just heard a push of that channel at least as fresh;
//   UNICAST    anything that is not a shared sample: control frames, per-subscriber variants
//              (§10.4 row 6's lost-source flag, §9.4's dropped count), EVENT channels with their
//              per-subscriber queues, and the never-shed set, which keeps the MAC's
//              acknowledgement and retries rather than broadcast's single unacknowledged try.
//
// The segment learns each peer's grants from the WELCOME and GRANT frames the hub sends that
// peer through the same links, so it needs nothing from the core but the bytes. A push is
// identified by (channel_id, DATA key 4 seq) read from the frame's head: no byte comparison.
// Platform-free; allocation only when grants change.

import type { CatalogIndex } from '../../catalog/index.js';
import { ChannelClass, Priority } from '../../catalog/schema.js';
import { decodeFrame, FrameType, MAX_HUB_FRAME_BYTES, peekFrameType, type SubGrant } from '../../hub/frames.js';
import { parseDataHead, parsedData } from './datagram.js';

export const Route = Object.freeze({
  UNICAST: 0,
  BROADCAST: 1,
  COALESCED: 2,
  GATED: 3,
} as const);
export type RouteCode = (typeof Route)[keyof typeof Route];

/** §10.6: the effective rate of a channel on a broadcast segment, from its subscribers' grants there. */
export function effectiveRateHz(grantsHz: readonly number[]): number {
  let best = 0;
  for (let i = 0; i < grantsHz.length; i++) {
    const g = grantsHz[i] as number;
    if (g > best) best = g;
  }
  return best;
}

/** One channel's broadcast schedule on the segment. */
class ChannelCast {
  /** The effective rate (0: unknown or nobody granted: not gated). */
  effHz = 0;
  /** When the gate next opens, on the same one-period-of-credit schedule as the hub's grant gate. */
  nextDue = 0;
  /** The push last offered: its sequence, length, and whether it went on air. */
  pushSeq = -1;
  pushLen = 0;
  pushSent = false;
}

/** One peer's subscription grants on the segment, as the hub last stated them. */
class PeerGrants {
  /** Channel id → granted rate, non-critical subscriptions with a rate above 0. */
  readonly hz = new Map<number, number>();
  /** Channels whose grant the peer is adopting: its next offer passes the gate (§9.1, row 3). */
  readonly adopting = new Set<number>();
}

export class BroadcastCounters {
  /** Pushes put on air once for the whole segment. */
  broadcast = 0;
  /** Offers that rode on a push already on air. */
  coalesced = 0;
  /** Offers held back by the effective-rate gate. */
  gated = 0;
  /** Offers that passed a closed gate because their peer was adopting a grant. */
  adoptions = 0;
  /** Frames routed to one peer. */
  unicast = 0;
}

export class BroadcastSegment {
  readonly counters = new BroadcastCounters();
  private readonly catalog: CatalogIndex | undefined;
  private readonly peers: (PeerGrants | null)[] = [];
  private readonly channels = new Map<number, ChannelCast>();

  constructor(maxPeers: number, catalog?: CatalogIndex) {
    this.catalog = catalog;
    for (let i = 0; i < maxPeers; i++) this.peers.push(null);
  }

  join(peer: number): void {
    this.leave(peer);
    this.peers[peer] = new PeerGrants();
  }

  leave(peer: number): void {
    const g = this.peers[peer];
    if (!g) return;
    this.peers[peer] = null;
    for (const ch of g.hz.keys()) this.recompute(ch);
  }

  /** The channel's effective rate on this segment right now (0 when no subscriber is granted). */
  effectiveRateHz(channelId: number): number {
    const c = this.channels.get(channelId);
    return c ? c.effHz : 0;
  }

  /** Peer `peer`'s granted rate on `channelId`, 0 when it holds none. */
  grantOf(peer: number, channelId: number): number {
    const g = this.peers[peer];
    return g ? g.hz.get(channelId) ?? 0 : 0;
  }

  /** Routes one frame the core hands peer `peer`'s link (see the header comment). */
  route(peer: number, frame: Uint8Array, length: number, now: number): RouteCode {
    const g = this.peers[peer];
    if (!g) return this.unicast();
    if (!parseDataHead(frame, 0, length)) {
      const t = peekFrameType(frame, 0, length);
      if (t === FrameType.WELCOME || t === FrameType.GRANT) this.observe(g, frame, length);
      return this.unicast();
    }
    const id = parsedData.channelId;
    if (!parsedData.shared) return this.unicast();
    const info = this.catalog ? this.catalog.byId(id) : undefined;
    if (info && (info.critical || info.cls === ChannelClass.EVENT || info.cls === ChannelClass.INTENT)) return this.unicast();
    let c = this.channels.get(id);
    if (!c) {
      c = new ChannelCast();
      this.channels.set(id, c);
    }
    const adopting = g.adopting.size > 0 && g.adopting.delete(id);
    const seq = parsedData.seq;
    if (c.pushSeq === seq && c.pushLen === length) {
      if (c.pushSent) {
        this.counters.coalesced++;
        return Route.COALESCED;
      }
      if (!adopting) {
        this.counters.gated++;
        return Route.GATED;
      }
      c.pushSent = true;
      this.counters.adoptions++;
      this.counters.broadcast++;
      return Route.BROADCAST;
    }
    c.pushSeq = seq;
    c.pushLen = length;
    const eff = c.effHz;
    if (eff > 0 && now < c.nextDue) {
      if (!adopting) {
        c.pushSent = false;
        this.counters.gated++;
        return Route.GATED;
      }
      this.counters.adoptions++;
    } else if (eff > 0) {
      // The hub's own grant gate (hub.ts publishSample): at most one period of credit.
      const period = 1000 / eff;
      const next = c.nextDue + period;
      c.nextDue = next < now - period ? now + period : next;
    }
    c.pushSent = true;
    this.counters.broadcast++;
    return Route.BROADCAST;
  }

  private unicast(): RouteCode {
    this.counters.unicast++;
    return Route.UNICAST;
  }

  /** WELCOME (key 35) and GRANT re-state the peer's whole set of subscription grants (§10.2). */
  private observe(g: PeerGrants, frame: Uint8Array, length: number): void {
    let grants: SubGrant[] | undefined;
    try {
      const f = decodeFrame(frame, 0, length, MAX_HUB_FRAME_BYTES);
      if (f.type === FrameType.WELCOME || f.type === FrameType.GRANT) grants = f.subGrants;
    } catch {
      return;
    }
    if (!grants) return;
    const before = Array.from(g.hz.keys());
    g.hz.clear();
    g.adopting.clear();
    for (let i = 0; i < grants.length; i++) {
      const s = grants[i] as SubGrant;
      g.adopting.add(s.channelId);
      if (s.priority !== Priority.critical && s.grantedRateHz > 0) g.hz.set(s.channelId, s.grantedRateHz);
    }
    for (let i = 0; i < before.length; i++) this.recompute(before[i] as number);
    for (const ch of g.hz.keys()) this.recompute(ch);
  }

  private recompute(channelId: number): void {
    let eff = 0;
    for (let i = 0; i < this.peers.length; i++) {
      const p = this.peers[i];
      const hz = p ? p.hz.get(channelId) : undefined;
      if (hz !== undefined && hz > eff) eff = hz;
    }
    let c = this.channels.get(channelId);
    if (!c) {
      if (eff === 0) return;
      c = new ChannelCast();
      this.channels.set(channelId, c);
    }
    if (c.effHz !== eff) {
      c.effHz = eff;
      // A new rate starts a new schedule: the next push goes, the ones after it follow the new period.
      c.nextDue = 0;
    }
  }
}
