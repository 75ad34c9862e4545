// §10.6 broadcast media: one transmission serves every peer on a segment, so a channel's
// effective rate there is the highest grant among its subscribers on that segment, while each
// subscriber's own grant still drives what the hub offers (docs/protocol.md §13.3 "Broadcast").
//
// How it plugs into the core: the core keeps one Link per peer and never learns that the peers
// share the air. The hub encodes each push of a channel once and hands the identical bytes to
// every subscriber whose grant is due (hub/egress.ts publishSample), tagged SHARED with the
// push's sequence; the segment sees those offers arrive at the peers' links and routes each one:
//
//   BROADCAST  the first offer of a push, when the channel's effective-rate gate is open (or the
//              offering peer is adopting a new grant, §9.1 row 3): transmitted once, to all;
//   COALESCED  a later offer of the same push (same channel and push sequence): already on air;
//   GATED      a push the gate holds back: it came sooner than the effective rate allows, and
//              every peer has just heard a push of that channel at least as fresh;
//   UNICAST    anything the core did not tag SHARED (control frames, per-subscriber variants:
//              §10.4 row 6's lost-source flag, §9.4's EVENT queues) and the never-shed set,
//              which keeps the MAC's acknowledgement and retries rather than broadcast's single
//              unacknowledged try.
//
// The segment learns each peer's grants from the core (Link.granted, whenever the hub states
// them in WELCOME or GRANT), and a push from its tag and sequence: it reads no frame. The gate
// is the hub's own grant gate (hub/grants.ts consumeGrantSlot) over the effective rate.
// Platform-free; allocation only when grants change.

import { consumeGrantSlot } from '../../hub/grants.js';
import { FrameType } from '../../hub/frames.js';
import { Tag, tagChannel, tagType, type GrantSet } from '../../hub/ports.js';

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

/** The priority of a critical subscription in a GrantSet (§10.1 never-shed). */
const CRITICAL = 3;
const CHANNELS = 256;

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
  private readonly peers: (PeerGrants | null)[] = [];
  // Per channel id: the effective rate (0: nobody granted: not gated), when the gate next opens
  // (the hub's grant gate over the effective rate), and the push last offered: its sequence,
  // length, and whether it went on air.
  private readonly effHz = new Float64Array(CHANNELS);
  private readonly nextDue = new Float64Array(CHANNELS);
  private readonly pushSeq = new Float64Array(CHANNELS).fill(-1);
  private readonly pushLen = new Uint16Array(CHANNELS);
  private readonly pushSent = new Uint8Array(CHANNELS);

  constructor(maxPeers: number) {
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
    return this.effHz[channelId & 0xff] as number;
  }

  /** Peer `peer`'s granted rate on `channelId`, 0 when it holds none. */
  grantOf(peer: number, channelId: number): number {
    const g = this.peers[peer];
    return g ? g.hz.get(channelId) ?? 0 : 0;
  }

  /** The hub states peer `peer`'s whole set of subscription grants (WELCOME key 35, GRANT; §10.2). */
  granted(peer: number, grants: GrantSet): void {
    const g = this.peers[peer];
    if (!g) return;
    const before = Array.from(g.hz.keys());
    g.hz.clear();
    g.adopting.clear();
    for (let i = 0; i < grants.count; i++) {
      const ch = grants.channelId(i);
      g.adopting.add(ch);
      const hz = grants.grantedHz(i);
      if (grants.priority(i) !== CRITICAL && hz > 0) g.hz.set(ch, hz);
    }
    for (let i = 0; i < before.length; i++) this.recompute(before[i] as number);
    for (const ch of g.hz.keys()) this.recompute(ch);
  }

  /** Routes one frame the core hands peer `peer`'s link, with its tag and push sequence (see the header comment). */
  route(peer: number, tag: number, seq: number, length: number, now: number): RouteCode {
    const g = this.peers[peer];
    if (!g || tagType(tag) !== FrameType.DATA || (tag & Tag.SHARED) === 0 || (tag & Tag.CRITICAL) !== 0) return this.unicast();
    const id = tagChannel(tag);
    const adopting = g.adopting.size > 0 && g.adopting.delete(id);
    if (this.pushSeq[id] === seq && this.pushLen[id] === length) {
      if (this.pushSent[id] === 1) {
        this.counters.coalesced++;
        return Route.COALESCED;
      }
      if (!adopting) {
        this.counters.gated++;
        return Route.GATED;
      }
      this.pushSent[id] = 1;
      this.counters.adoptions++;
      this.counters.broadcast++;
      return Route.BROADCAST;
    }
    this.pushSeq[id] = seq;
    this.pushLen[id] = length;
    const eff = this.effHz[id] as number;
    if (eff > 0 && now < (this.nextDue[id] as number)) {
      if (!adopting) {
        this.pushSent[id] = 0;
        this.counters.gated++;
        return Route.GATED;
      }
      this.counters.adoptions++;
    } else if (eff > 0) {
      consumeGrantSlot(this.effHz, this.nextDue, id, now);
    }
    this.pushSent[id] = 1;
    this.counters.broadcast++;
    return Route.BROADCAST;
  }

  private unicast(): RouteCode {
    this.counters.unicast++;
    return Route.UNICAST;
  }

  private recompute(channelId: number): void {
    let eff = 0;
    for (let i = 0; i < this.peers.length; i++) {
      const p = this.peers[i];
      const hz = p ? p.hz.get(channelId) : undefined;
      if (hz !== undefined && hz > eff) eff = hz;
    }
    const id = channelId & 0xff;
    if (this.effHz[id] !== eff) {
      this.effHz[id] = eff;
      // A new rate starts a new schedule: the next push goes, the ones after it follow the new period.
      this.nextDue[id] = 0;
    }
  }
}
