// Sessions, subscriptions and publications: the per-client state of the core (BRIEF §3).
// Everything a session needs on the hot path is allocated when it subscribes, never per sample.
import type { ChannelInfo } from '../catalog/index.js';
import { ChannelClass } from '../catalog/schema.js';
import { INTENT_BUCKET_DEPTH, INTENT_RATE_PER_S, STREAM_INGRESS_OVERAGE_NACK_PER_S } from './constants.js';
import { NackThrottle, TokenBucket, WindowCounter } from './limits.js';
import { EventQueue, FrameRing, StallClock } from './queues.js';
import { LinkBudget } from './regrant.js';
import { Decimator } from './shed.js';
import type { Link } from './ports.js';

export const SessionState = Object.freeze({ ACTIVE: 0, STALE: 1, CLOSED: 2 } as const);
export type SessionStateCode = (typeof SessionState)[keyof typeof SessionState];
export const SESSION_STATE_NAMES = Object.freeze(['ACTIVE', 'STALE', 'CLOSED'] as const);

/** One EVENT as published: shared by every subscriber's queue, never copied per subscriber. */
export interface EventRecord {
  readonly seq: number;
  readonly t: number;
  readonly values: Float64Array;
  readonly count: number;
  readonly text: string | undefined;
}

export class Subscription {
  readonly session: Session;
  readonly ch: ChannelInfo;
  wishHz: number;
  wishPriority: number | undefined;
  grantedHz = 0;
  priority: number;
  /** §10.4 row 3 / §9.1: the next push after a grant (or a resume) is always sent. */
  firstPush = true;
  /** §10.4 row 6: set while a segments source is dropped whole; the next push carries `gap`. */
  sourceDropped = false;
  /** Rate gate: the earliest time the next non-critical push may go (granted rate). */
  nextDue = 0;
  readonly decimator = new Decimator();
  /** §10.4 row 8: the values last sent, so a conflated STATE goes only on change. */
  readonly last: Float64Array;
  lastLen = -1;
  /** §9.4: EVENT channels only. */
  readonly events: EventQueue<EventRecord> | null;
  /** §9.4: events lost (queue overflow or table drop) since the last delivery; the next one carries it. */
  pendingDropped = 0;

  constructor(session: Session, ch: ChannelInfo, wishHz: number, wishPriority: number | undefined, priority: number) {
    this.session = session;
    this.ch = ch;
    this.wishHz = wishHz;
    this.wishPriority = wishPriority;
    this.priority = priority;
    this.last = new Float64Array(ch.fieldCount);
    this.events = ch.cls === ChannelClass.EVENT ? new EventQueue<EventRecord>(Math.max(1, ch.queueDepth)) : null;
  }
}

export class Publication {
  readonly ch: ChannelInfo;
  wishHz: number;
  wishBurst: number | undefined;
  grantedHz = 0;
  burst = 0;
  readonly bucket: TokenBucket;

  /** §10.5: the bucket starts full (a burst is available at once), refilling at the granted rate. */
  constructor(ch: ChannelInfo, wishHz: number, wishBurst: number | undefined, grantedHz: number, burst: number, now: number) {
    this.ch = ch;
    this.wishHz = wishHz;
    this.wishBurst = wishBurst;
    this.grantedHz = grantedHz;
    this.burst = burst;
    this.bucket = new TokenBucket(grantedHz, burst, now);
  }
}

export class Session {
  readonly id: number;
  readonly slot: number;
  readonly tier: number;
  state: SessionStateCode = SessionState.ACTIVE;
  link: Link | null = null;
  resumeToken: Uint8Array;
  /** Channel id → subscription, and the same in subscription order for iteration without allocation. */
  readonly subs = new Map<number, Subscription>();
  readonly pubs = new Map<number, Publication>();
  /** §10.4 the never-shed queue: critical frames the link could not take at once. */
  readonly neverShed: FrameRing;
  readonly stall = new StallClock();
  readonly budget = new LinkBudget();
  readonly intentBucket: TokenBucket;
  readonly rateNacks = new NackThrottle(STREAM_INGRESS_OVERAGE_NACK_PER_S);
  readonly malformed: WindowCounter;
  lastHeard: number;
  staleSince = 0;
  /** Hub→client frames sent and the client's cumulative ACK (stream links): the ack lag. */
  sentFrames = 0;
  ackedFrames = 0;
  /** A GRANT re-stating every grant is owed to this session (set by a re-plan). */
  grantOwed = false;

  constructor(id: number, slot: number, tier: number, token: Uint8Array, now: number, neverShedBytes: number, malformedLimit: number) {
    this.id = id;
    this.slot = slot;
    this.tier = tier;
    this.resumeToken = token;
    this.lastHeard = now;
    this.neverShed = new FrameRing(neverShedBytes, 64);
    this.intentBucket = new TokenBucket(INTENT_RATE_PER_S, INTENT_BUCKET_DEPTH, now);
    this.malformed = new WindowCounter(malformedLimit + 1);
  }
}
