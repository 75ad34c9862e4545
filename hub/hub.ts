// The hub core: sessions, grants, the shedding table and its actions, parking, ingress
// limits, intents, control ownership and the ESTOP latch (§10; §6–§12).
// Platform-free: everything it needs arrives through the interfaces in ports.ts.
import type { CatalogIndex, ChannelInfo } from '../catalog/index.js';
import { ChannelClass, Direction, StreamKind, Tier } from '../catalog/schema.js';
import { CborError, CborWriter } from './cbor.js';
import {
  DEADMAN_MS,
  ESTOP_REANNOUNCE_MS,
  DEFAULT_SLOTS,
  HANDSHAKE_TIMEOUT_MS,
  LIVENESS_TIMEOUT_MS,
  MALFORMED_CLOSE_PER_S,
  PRE_SESSION_BYTES_DEPTH,
  PRE_SESSION_BYTES_PER_S,
  STALE_TTL_MS,
} from './constants.js';
import { decodeCredentials, tierFor, type Credential, CREDENTIALS_KEY } from './credentials.js';
import { Deadman, EstopLatch } from './estop.js';
import {
  decodeEstop,
  ESTOP_FRAME_BYTES,
  ESTOP_NACK_FRAME_TYPE,
  EstopFrameError,
  EstopKind,
  EstopSource,
  isEstopFrame,
  type EstopFrame,
} from './estop-frame.js';
import {
  decodeFrame,
  encodeData,
  encodeFrame,
  FRAME_DIRECTION,
  FrameError,
  FrameType,
  FROM_CLIENT,
  GoodbyeReason,
  MAX_FRAME_BYTES,
  MAX_HUB_FRAME_BYTES,
  peekFrameType,
  PROTOCOL_VERSION,
  RESUME_TOKEN_BYTES,
  type Frame,
  type HelloFrame,
  type PubGrant,
  type PubWish,
  type SubGrant,
  type SubWish as WireSubWish,
} from './frames.js';
import { AckLagSummary } from './acklag.js';
import { Admission, ADMISSION_MIN_TICK_OBSERVATIONS, DEFAULT_HEAP_LIMIT_BYTES, DEFAULT_TICK_BUDGET_MS, defaultAdmissionLimits } from './admission.js';
import { DEFAULT_HUB_BYTES_PER_S, DEFAULT_SESSION_BYTES_PER_S, GovernorVerdict, IngressGovernor } from './governor.js';
import { floorToGrantStep, frameBytesFor, grantedPriority, planGrants, tierCapHz, type SubWish } from './grants.js';
import { createHubLoad, HealthMetrics, type HealthReport, type HubLoad, type LinkHealth } from './health.js';
import { aggregateOccupancy, Ladder, LADDER_KEEPING_UP_OCCUPANCY, LADDER_READER_STALL_MS, parkCandidate, type LadderSessionView, type LadderSubView } from './ladder.js';
import { burstFor, constantTimeEqual, NackThrottle, TokenBucket, WindowCounter } from './limits.js';
import { Nack } from './nack.js';
import { utf8ByteLength } from './utf8.js';
import { NULL_LOG, SendShed, type Clock, type HeapUsed, type Link, type LinkSink, type Log, type Random, type RobotPort, type Store } from './ports.js';
import { ChannelRoute, Publication, Session, SessionState, SubscriptionTable, type EventRecord } from './session.js';
import { decimate, DECIMATION_STATE, decimationFactor, resetDecimation, SHED_DECISION, shedDecide, shedDecision, shedRow, sameValues } from './shed.js';

export interface HubConfig {
  /** Text the hub names itself with in WELCOME. */
  readonly hubId: string;
  /** Session slots (§6). */
  readonly slots: number;
  readonly staleTtlMs: number;
  readonly deadmanMs: number;
  /** Deliveries per second the hub makes over all non-critical subscriptions (the pie, §10.2). */
  readonly capacityHz: number;
  /** Tier of a client with no or an unknown credential; -1 refuses it with FORBIDDEN. */
  readonly anonymousTier: number;
  /** Bytes of each session's never-shed queue (§10.4). */
  readonly neverShedBytes: number;
  /**
   * The period the host calls tick() at, ms: the loop delay (docs/operations.md "Health, admission and overload") is how much later than
   * that a tick begins. 0 (the default) measures no loop delay: a host that ticks irregularly
   * (the tests' virtual clock) would read its gaps as delay.
   */
  readonly tickPeriodMs: number;
  /** Admission and the ladder's tick budget, ms (docs/operations.md "Health, admission and overload"). */
  readonly tickBudgetMs: number;
  /** The soft heap budget admission and the ladder read against HubPorts.heap, bytes. */
  readonly heapLimitBytes: number;
  /** The ingress governor's budgets, bytes per second: one session's, and the whole hub's. */
  readonly sessionIngressBytesPerS: number;
  readonly hubIngressBytesPerS: number;
  /** §6.1: a transport without a session after this long is closed, ms. */
  readonly handshakeTimeoutMs: number;
  /** §6.5: an ACTIVE session not heard from for this long becomes STALE, ms. */
  readonly livenessTimeoutMs: number;
}

export const DEFAULT_HUB_CONFIG: HubConfig = Object.freeze({
  hubId: 'robot-hub',
  slots: DEFAULT_SLOTS,
  staleTtlMs: STALE_TTL_MS,
  deadmanMs: DEADMAN_MS,
  capacityHz: 2000,
  anonymousTier: Tier.observer,
  neverShedBytes: 2048,
  tickPeriodMs: 0,
  tickBudgetMs: DEFAULT_TICK_BUDGET_MS,
  heapLimitBytes: DEFAULT_HEAP_LIMIT_BYTES,
  sessionIngressBytesPerS: DEFAULT_SESSION_BYTES_PER_S,
  hubIngressBytesPerS: DEFAULT_HUB_BYTES_PER_S,
  handshakeTimeoutMs: HANDSHAKE_TIMEOUT_MS,
  livenessTimeoutMs: LIVENESS_TIMEOUT_MS,
});

export interface HubPorts {
  readonly clock: Clock;
  readonly random: Random;
  readonly store: Store;
  readonly robot: RobotPort;
  readonly catalog: CatalogIndex;
  readonly log?: Log;
  /** Heap in use, bytes, for admission and the ladder; absent where the platform cannot tell. */
  readonly heap?: HeapUsed;
}

/** Counters the health report and the simulator read (free of names and payloads). */
export class HubCounters {
  /** Pushes by shedding-table row, index 1..15 (§10.4). */
  readonly rows = new Float64Array(16);
  /** Pushes the table sent but the link could not take (dropped at once, never held). */
  egressDrops = 0;
  /** Pushes held back by the granted rate (not shedding: the grant itself). */
  rateGated = 0;
  /** Pushes a decimating row dropped (counted in `rows` too). */
  decimated = 0;
  /** STATE pushes a conflating row dropped as unchanged (counted in `rows` too). */
  conflated = 0;
  /** Pushes a dropping row discarded, whole-source drops included (counted in `rows` too). */
  shedDrops = 0;
  /** Deliveries made (frames handed to links, DATA only). */
  delivered = 0;
  /** NACKs sent, by code. */
  readonly nacks = new Float64Array(32);
  parks = 0;
  resumes = 0;
  estops = 0;
  reclaims = 0;
  neverShedOverflows = 0;
  grantsAnnounced = 0;
}

// The hub's private entry points a Conn forwards to: one object per hub, not closures per transport.
interface ConnHandler {
  frame(conn: Conn, bytes: Uint8Array, start: number, end: number): void;
  lost(conn: Conn): void;
}

/** One attached transport, and the LinkSink its binding feeds. */
class Conn implements LinkSink {
  session: Session | null = null;
  closed = false;
  /**
   * §12: malformed frames before HELLO. The session this transport opens takes the counter
   * over, restarted, rather than a counter of its own (a resumed session keeps the one it has).
   */
  readonly malformed = new WindowCounter(MALFORMED_CLOSE_PER_S + 1);
  /** §5.12: frames handed to this transport before a session took it (the session's count starts there). */
  sent = 0;
  /** INGRESS_BUDGET answers before HELLO, throttled like a session's (no NACK flood). */
  readonly nackThrottle = new NackThrottle();
  /** §6.1: when the transport was attached, and the bytes it may still send before HELLO. */
  readonly attachedAt: number;
  readonly preSession: TokenBucket;

  constructor(
    private readonly handler: ConnHandler,
    readonly link: Link,
    now: number,
  ) {
    this.attachedAt = now;
    this.preSession = new TokenBucket(PRE_SESSION_BYTES_PER_S, PRE_SESSION_BYTES_DEPTH, now);
  }

  frame(bytes: Uint8Array, start: number, end: number): void {
    this.handler.frame(this, bytes, start, end);
  }

  lost(): void {
    this.handler.lost(this);
  }
}

const SEGMENTS = StreamKind.segments;
const MAX_SAFE = Number.MAX_SAFE_INTEGER;
/** CATALOG chunks: at most this many bytes of text, and never more than the link's MTU less the frame around it. */
const CATALOG_CHUNK_BYTES = 3072;
const CATALOG_FRAME_OVERHEAD = 40;

// safety-events `kind` (catalog comment): what happened to the latch.
export const SafetyEventKind = Object.freeze({ LATCH: 1, CLEAR: 2 } as const);

export class Hub {
  readonly config: HubConfig;
  readonly catalog: CatalogIndex;
  readonly counters = new HubCounters();
  readonly latch: EstopLatch;
  private readonly clock: Clock;
  private readonly random: Random;
  private readonly store: Store;
  private readonly robot: RobotPort;
  private readonly log: Log;
  private readonly slots: (Session | null)[];
  private readonly conns: Conn[] = [];
  private nextSessionId = 1;
  private credentials: Credential[];
  /** The channels a client can subscribe to, and each one's route by channel id (index + 1; 0: none). */
  private readonly routes: ChannelRoute[] = [];
  private readonly routeIds: Uint16Array;
  /** Every subscription's state, one row per (route, session slot). */
  private readonly table: SubscriptionTable;
  private readonly connHandler: ConnHandler;
  /**
   * Frame buffers, sized once. A push's DATA frame, encoded once for all its subscribers, is
   * sized to the largest sample the catalog can produce. Everything else takes the control
   * buffer, the largest hub frame: control frames, EVENT frames (with their text), a
   * subscriber's variant of a DATA frame carrying `gap`, the never-shed drain. Each of those is
   * handed to the link (which copies it) before the buffer is used again; a push's frame is not,
   * as the control frames a park sends to other sessions may come between two of its deliveries.
   */
  private readonly dataW: CborWriter;
  private readonly ctrlW = new CborWriter(new Uint8Array(MAX_HUB_FRAME_BYTES));
  private readonly estopBuf = new Uint8Array(ESTOP_FRAME_BYTES);
  /** When the latched state was last announced to every link; -Infinity while it was not. */
  private estopAnnouncedAt = -Infinity;
  /** An assertion arrived while latched and inside ESTOP_REANNOUNCE_MS: tick() announces it. */
  private estopOwed = false;
  /** The hub's own samples: safety (3 values) and control-owner (1). */
  private readonly scratchValues: Float64Array;
  /** Wishes refused while answering one frame: (code, frame type, channel id) triples, sent after the answer. */
  private readonly refusals: number[] = [];
  private owner: Session | null = null;
  /**
   * §11.2 arming: false from any latch until the control owner's accepted `arm` intent while
   * unlatched, so a clear never restarts the robot. True on a boot that comes up unlatched.
   */
  private armedFlag = true;
  private readonly deadman: Deadman;
  private readonly safetyCh: ChannelInfo | undefined;
  private readonly ownerCh: ChannelInfo | undefined;
  private readonly safetyEventsCh: ChannelInfo | undefined;
  private buttonHeld = false;
  /** docs/operations.md "Health, admission and overload": the measurements, and what admission and the ladder read (one object, refilled). */
  readonly health: HealthMetrics;
  private readonly load: HubLoad = createHubLoad();
  readonly admission: Admission;
  readonly ladder: Ladder;
  readonly governor: IngressGovernor;
  private readonly ackLag: AckLagSummary;
  private readonly heap: HeapUsed | undefined;

  constructor(ports: HubPorts, config: Partial<HubConfig> = {}) {
    this.config = Object.freeze({ ...DEFAULT_HUB_CONFIG, ...config });
    this.catalog = ports.catalog;
    this.clock = ports.clock;
    this.random = ports.random;
    this.store = ports.store;
    this.robot = ports.robot;
    this.log = ports.log ?? NULL_LOG;
    this.slots = [];
    for (let i = 0; i < this.config.slots; i++) this.slots.push(null);
    let maxId = 0;
    let maxFields = 0;
    for (const ch of this.catalog.channels) {
      if (ch.direction !== Direction.telemetry || ch.cls === ChannelClass.INTENT) continue;
      this.routes.push(new ChannelRoute(ch, this.routes.length, this.config.slots));
      if (ch.id > maxId) maxId = ch.id;
      if (ch.fieldCount > maxFields) maxFields = ch.fieldCount;
    }
    this.routeIds = new Uint16Array(maxId + 1);
    for (const r of this.routes) this.routeIds[r.ch.id] = r.index + 1;
    this.table = new SubscriptionTable(this.routes.length, this.config.slots);
    this.dataW = new CborWriter(new Uint8Array(dataFrameBytes(maxFields)));
    this.connHandler = {
      frame: (conn, bytes, start, end) => this.onFrame(conn, bytes, start, end),
      lost: (conn) => this.onLost(conn),
    };
    this.credentials = decodeCredentials(this.store.get(CREDENTIALS_KEY));
    this.deadman = new Deadman(this.config.deadmanMs);
    this.safetyCh = this.catalog.byName('safety');
    this.ownerCh = this.catalog.byName('control-owner');
    this.safetyEventsCh = this.catalog.byName('safety-events');
    this.scratchValues = new Float64Array(Math.max(3, this.safetyCh ? this.safetyCh.fieldCount : 0, this.ownerCh ? this.ownerCh.fieldCount : 0));
    const cfg = this.config;
    this.heap = ports.heap;
    this.health = new HealthMetrics(cfg.tickPeriodMs);
    const budgets = { tickBudgetMs: cfg.tickBudgetMs, heapLimitBytes: cfg.heapLimitBytes };
    this.admission = new Admission(defaultAdmissionLimits(cfg.slots, cfg.neverShedBytes, budgets));
    this.ladder = new Ladder({ ...budgets, minTickObservations: ADMISSION_MIN_TICK_OBSERVATIONS }, this.clock.now());
    this.governor = new IngressGovernor(cfg.slots, { sessionBytesPerS: cfg.sessionIngressBytesPerS, hubBytesPerS: cfg.hubIngressBytesPerS });
    this.ackLag = new AckLagSummary(cfg.slots);
    // §11.2: the latch is restored from the Store; a restored latch stops the robot at once.
    this.latch = new EstopLatch(this.store, this.robot, this.clock);
    if (this.latch.latched) this.armedFlag = false;
  }

  /** §11.2: whether motion is accepted from the owner (false from any latch until the owner's `arm`). */
  get armed(): boolean {
    return this.armedFlag && !this.latch.latched;
  }

  // ------------------------------------------------------------------ links

  /** A binding hands the core a new transport; the core answers with where to feed its frames. */
  attach(link: Link): LinkSink {
    const conn = new Conn(this.connHandler, link, this.clock.now());
    this.conns.push(conn);
    return conn;
  }

  /** Reloads the credential table after an operator changed it in the Store. */
  reloadCredentials(): void {
    this.credentials = decodeCredentials(this.store.get(CREDENTIALS_KEY));
  }

  private onLost(conn: Conn): void {
    if (conn.closed) return;
    const s = conn.session;
    this.dropConn(conn);
    // §6.6: a reported transport loss makes the session STALE; it is not torn down.
    if (s && s.link === conn.link) this.makeStale(s, false);
  }

  private dropConn(conn: Conn): void {
    conn.closed = true;
    const i = this.conns.indexOf(conn);
    if (i >= 0) this.conns.splice(i, 1);
  }

  private connOf(s: Session): Conn | undefined {
    for (let i = 0; i < this.conns.length; i++) if ((this.conns[i] as Conn).session === s) return this.conns[i];
    return undefined;
  }

  // ------------------------------------------------------------------ ingress

  private onFrame(conn: Conn, bytes: Uint8Array, start: number, end: number): void {
    if (conn.closed) return;
    const now = this.clock.now();
    const s = conn.session;
    try {
      if (isEstopFrame(bytes, start)) {
        this.onEstopFrame(conn, bytes, start, end - start, now);
        return;
      }
      // docs/operations.md "Health, admission and overload" ingress governor, before any decoding (the ESTOP frame is never metered): a
      // session's BUNDLEs meet both byte budgets, its other frames the session's only; a frame
      // before HELLO has no session and meets the hub's. The control owner's BUNDLEs meet its
      // session's budget only: others' traffic (a sessionless flood included) filling the hub's
      // window must not refuse the motion of the one driving the robot (§12.6 isolation).
      const type = s ? peekFrameType(bytes, start, Math.min(end, start + 16)) : -1;
      // Before HELLO a transport meets its own byte bucket, and is closed when it overdraws it;
      // its frames are counted in the hub's window but never refused by it (HELLOs and resumes
      // are not starved by a flood on another transport).
      if (!s && !conn.preSession.take(end - start, now)) {
        this.preSessionFlood(conn, bytes, start, end);
        return;
      }
      const hubScope = !!s && type === FrameType.BUNDLE && s !== this.owner;
      if (this.governor.admit(s ? s.slot : -1, end - start, now, hubScope) >= GovernorVerdict.REJECT_SESSION) {
        this.ingressRefused(conn, s ? type : peekFrameType(bytes, start, Math.min(end, start + 16)), now);
        return;
      }
      if (end - start > MAX_FRAME_BYTES) {
        // frame_type (key 17) is 0–255 on the wire: a peeked value outside that is left out.
        const type = peekFrameType(bytes, start, Math.min(end, start + 16));
        this.malformed(conn, Nack.TOO_LARGE, type >= 0 && type <= 0xff ? type : undefined, now);
        return;
      }
      let f: Frame;
      try {
        f = decodeFrame(bytes, start, end);
      } catch (e) {
        if (e instanceof FrameError) this.malformed(conn, e.nack, e.frameType, now);
        else if (e instanceof CborError) this.malformed(conn, Nack.MALFORMED, undefined, now);
        else throw e;
        return;
      }
      if (((FRAME_DIRECTION[f.type] ?? 0) & FROM_CLIENT) === 0) {
        this.malformed(conn, Nack.MALFORMED, f.type, now);
        return;
      }
      if (!s) {
        if (f.type === FrameType.HELLO) this.onHello(conn, f, now);
        else if (f.type === FrameType.PING) this.sendTo(conn, { type: FrameType.PONG, t0: f.t0, t1: wholeMs(now) });
        // A transport that talks before HELLO counts towards the same misbehaviour limit.
        else this.malformed(conn, Nack.NOT_READY, f.type, now);
        return;
      }
      s.lastHeard = now;
      // A client speaks after HELLO only once it has its WELCOME: the prior token is spent.
      if (f.type !== FrameType.HELLO) s.priorValid = false;
      if (s === this.owner) this.ownerHeard(now);
      this.dispatch(conn, s, f, now);
    } catch (e) {
      // A fault in the core must never take the hub down or touch another session.
      this.log.event('internal-error', s ? s.id : 0);
      if (!conn.closed) this.nackConn(conn, Nack.MALFORMED, undefined);
    }
  }

  /**
   * A frame the ingress governor refused: dropped, answered INGRESS_BUDGET with the time until
   * it would fit, at most as often as RATE_LIMITED (the session's throttle; before HELLO, the
   * transport's), so that a flood is not answered by a flood.
   */
  private ingressRefused(conn: Conn, frameType: number, now: number): void {
    const s = conn.session;
    if (!(s ? s.rateNacks : conn.nackThrottle).allow(now)) return;
    this.nackConn(conn, Nack.INGRESS_BUDGET, frameType >= 0 && frameType <= 0xff ? frameType : undefined, undefined, this.governor.retryAfterMs);
  }

  /** A transport that overdrew its pre-HELLO byte bucket: answered INGRESS_BUDGET, closed. */
  private preSessionFlood(conn: Conn, bytes: Uint8Array, start: number, end: number): void {
    const type = peekFrameType(bytes, start, Math.min(end, start + 16));
    this.nackConn(conn, Nack.INGRESS_BUDGET, type >= 0 && type <= 0xff ? type : undefined, undefined, 1000);
    this.log.event('pre-session-flood-close', 0);
    this.dropConn(conn);
    conn.link.close();
  }

  /** §6.1: transports that have not completed HELLO within the handshake timeout are closed. */
  private expireHandshakes(now: number): void {
    for (let i = this.conns.length - 1; i >= 0; i--) {
      const c = this.conns[i] as Conn;
      if (c.session || now - c.attachedAt < this.config.handshakeTimeoutMs) continue;
      this.log.event('handshake-timeout', 0);
      this.dropConn(c);
      c.link.close();
    }
  }

  private malformed(conn: Conn, code: number, frameType: number | undefined, now: number, channelId?: number): void {
    this.nackConn(conn, code, frameType !== undefined && frameType >= 0 ? frameType : undefined, channelId);
    const s = conn.session;
    const count = s ? s.malformed.add(now) : conn.malformed.add(now);
    // §12: a session that sends malformed frames persistently is closed.
    if (count > MALFORMED_CLOSE_PER_S) {
      this.log.event('malformed-close', s ? s.id : 0, count);
      if (s) this.closeSession(s, GoodbyeReason.MISBEHAVING);
      else {
        this.dropConn(conn);
        conn.link.close();
      }
    }
  }

  private dispatch(conn: Conn, s: Session, f: Frame, now: number): void {
    switch (f.type) {
      case FrameType.HELLO:
        // A second HELLO on an attached session is a client bug, not a resume; it counts
        // toward the persistent-misbehaviour close like any malformed frame (§12.5).
        this.malformed(conn, Nack.MALFORMED, f.type, now);
        return;
      case FrameType.SUBSCRIBE:
        this.refusals.length = 0;
        this.subscribe(s, f.wishes);
        this.replan();
        this.sendGrant(s, true, false);
        this.sendRefusals(s);
        this.announceGrants();
        return;
      case FrameType.UNSUBSCRIBE:
        for (const id of f.channels) this.unsubscribe(s, id);
        this.replan();
        this.sendGrant(s, true, false);
        this.announceGrants();
        return;
      case FrameType.PUBLISH: {
        this.refusals.length = 0;
        const granted = this.publishWishes(s, f.wishes, now);
        // §10.2: a PUBLISH is always answered with a GRANT carrying granted_publishes, even empty.
        this.sendControl(s, { type: FrameType.GRANT, pubGrants: granted });
        this.sendRefusals(s);
        return;
      }
      case FrameType.BUNDLE:
        this.onBundle(conn, s, f.channelId, f.samples, now);
        return;
      case FrameType.INTENT:
        this.onIntent(s, f.channelId, f.requestId, f.args ?? [], now);
        return;
      case FrameType.ACK:
        if ('acked' in f) s.ack(f.acked);
        return;
      case FrameType.PING:
        // §5.14: t1 is an unsigned integer; a host clock with a fraction is floored.
        this.sendControl(s, { type: FrameType.PONG, t0: f.t0, t1: wholeMs(now) });
        return;
      case FrameType.PONG:
        return;
      case FrameType.GOODBYE:
        this.closeSession(s, GoodbyeReason.NORMAL);
        return;
      case FrameType.ESTOP_CLEAR:
        this.onEstopClear(s, f.estopSeq);
        return;
      case FrameType.CATALOG:
        this.sendCatalog(conn, s, f.offset ?? 0);
        return;
      case FrameType.HEALTH:
        // §5.18: the detailed report is the maintainer's.
        if (s.tier < Tier.maintainer) this.nackSession(s, Nack.FORBIDDEN, f.type);
        else this.sendHealth(conn, s, f.offset ?? 0, now);
        return;
      default:
        this.nackSession(s, Nack.MALFORMED, f.type);
    }
  }

  // ------------------------------------------------------------------ sessions

  private onHello(conn: Conn, f: HelloFrame, now: number): void {
    if (f.version !== PROTOCOL_VERSION) {
      this.nackConn(conn, Nack.VERSION, f.type);
      return;
    }
    let s: Session | undefined;
    if (f.resumeToken) {
      s = this.findByToken(f.resumeToken);
      if (!s) {
        this.nackConn(conn, Nack.UNKNOWN_SESSION, f.type);
        return;
      }
      this.resume(conn, s, now, f.resumeToken);
      // §6.3: a resume is always admitted (counted, never evaluated).
      this.admission.check(true, this.load);
    } else {
      let tier = this.config.anonymousTier;
      if (f.credential) {
        const t = tierFor(this.credentials, f.credential);
        if (t >= 0) tier = t;
      }
      if (tier < 0) {
        this.nackConn(conn, Nack.FORBIDDEN, f.type);
        return;
      }
      // §6.3 admission, before freeSlot(): a refused HELLO must never reclaim a STALE session.
      this.measureLoad(now);
      if (!this.hasSlot()) {
        this.nackConn(conn, Nack.NO_SLOTS, f.type, undefined, 1000);
        return;
      }
      const v = this.admission.check(false, this.load);
      if (!v.admit) {
        this.nackConn(conn, Nack.HUB_PRESSURE, f.type, undefined, v.retryAfterMs);
        return;
      }
      const slot = this.freeSlot();
      const token = new Uint8Array(RESUME_TOKEN_BYTES);
      this.random.fill(token);
      // The transport's malformed-frame counter becomes the session's, restarted (§12).
      conn.malformed.reset();
      s = new Session(this.nextSessionId++, slot, tier, token, now, this.config.neverShedBytes, conn.malformed);
      this.slots[slot] = s;
      s.link = conn.link;
      conn.session = s;
      // §5.12: the count covers the transport since it was attached, the frames before HELLO too.
      s.sentFrames = conn.sent;
      // A new session in the slot starts with an empty ingress window (a resume keeps its own).
      this.governor.resetSession(slot);
      this.log.event('session-open', s.id, tier);
    }
    this.refusals.length = 0;
    if (f.subWishes) this.subscribe(s, f.subWishes);
    if (f.pubWishes) this.publishWishes(s, f.pubWishes, now);
    this.replan();
    s.grantOwed = false;
    // WELCOME re-states every grant the session holds (a resume keeps them all, §6.6).
    this.sendControl(s, {
      type: FrameType.WELCOME,
      sessionId: s.id,
      resumeToken: s.resumeToken,
      hubId: this.config.hubId,
      mtu: conn.link.mtu,
      slots: this.config.slots,
      catalogHash: this.catalog.hash,
      tier: s.tier,
      owner: this.owner ? this.owner.id : 0,
      latched: this.latch.latched,
      subGrants: this.currentSubGrants(s),
      pubGrants: this.currentPubGrants(s),
      staleTtlMs: this.config.staleTtlMs,
    });
    this.sendRefusals(s);
    // §11.2: a session that joins or resumes while latched is told of the stop in force.
    if (this.latch.latched) this.estopTo(s);
    // §10.2: a join re-splits the pie; the others hear of it now, not at the next tick.
    this.announceGrants();
  }

  private findByToken(token: Uint8Array): Session | undefined {
    let found: Session | undefined;
    for (let i = 0; i < this.slots.length; i++) {
      const s = this.slots[i];
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
    const old = this.connOf(s);
    if (old && old !== conn) {
      // The same client came back on another transport before the old one was noticed dead.
      const w = this.ctrlW;
      w.reset();
      encodeFrame({ type: FrameType.GOODBYE, reason: GoodbyeReason.RESUMED_ELSEWHERE }, w);
      if (old.link.canSend(w.pos)) old.link.send(w.buf, w.pos);
      this.dropConn(old);
      old.link.close();
    }
    s.link = conn.link;
    conn.session = s;
    s.state = SessionState.ACTIVE;
    s.lastHeard = now;
    s.neverShed.clear();
    s.stall.reset();
    s.budget.reset();
    s.sentFrames = conn.sent;
    s.ackedFrames = 0;
    s.healthText = null;
    // §6.6: the token presented stays good until the client is heard with the new one's WELCOME.
    s.priorToken.set(token);
    s.priorValid = true;
    this.random.fill(s.resumeToken);
    const t = this.table;
    for (let i = 0; i < t.routeCount[s.slot]!; i++) {
      const k = t.row(t.routeOf(s.slot, i), s.slot);
      // §10.4 row 3: every grant is re-stated, so every first push is owed again.
      t.firstPush[k] = 1;
      t.nextDue[k] = 0;
      resetDecimation(t.decimation, k * DECIMATION_STATE);
      t.lastLen[k] = -1;
    }
    if (s === this.owner) this.ownerHeard(now);
    this.counters.resumes++;
    this.log.event('session-resume', s.id);
  }

  /** A slot is free, or a STALE session would yield one to freeSlot(). */
  private hasSlot(): boolean {
    for (let i = 0; i < this.slots.length; i++) {
      const s = this.slots[i];
      if (!s || s.state === SessionState.STALE) return true;
    }
    return false;
  }

  /** The slot a new session takes; the caller checked hasSlot(). */
  private freeSlot(): number {
    for (let i = 0; i < this.slots.length; i++) if (!this.slots[i]) return i;
    // §6: slot pressure reclaims the oldest STALE session — the only way a parked one yields.
    let oldest: Session | null = null;
    for (let i = 0; i < this.slots.length; i++) {
      const s = this.slots[i] as Session;
      if (s.state === SessionState.STALE && (!oldest || s.staleSince < oldest.staleSince)) oldest = s;
    }
    if (!oldest) return -1;
    this.counters.reclaims++;
    this.closeSession(oldest, GoodbyeReason.EVICTED);
    return oldest.slot;
  }

  /** §6.6 staleness: transport lost, reported lost, or parked by §10.4. Grants are kept. */
  private makeStale(s: Session, parked: boolean): void {
    const conn = this.connOf(s);
    if (conn) {
      this.dropConn(conn);
      conn.link.close();
    }
    const now = this.clock.now();
    s.link = null;
    s.state = SessionState.STALE;
    s.staleSince = now;
    s.neverShed.clear();
    s.stall.reset();
    const t = this.table;
    for (let i = 0; i < t.routeCount[s.slot]!; i++) {
      const route = this.subscribedRoute(s, i);
      // The client will have missed segments while away: the first push after resume says so.
      if (route.ch.kind === SEGMENTS) t.sourceDropped[t.row(route.index, s.slot)] = 1;
    }
    if (parked) this.counters.parks++;
    this.log.event(parked ? 'session-park' : 'session-stale', s.id);
    this.replan();
    this.announceGrants();
  }

  /**
   * The hub is stopping (the host at SIGINT/SIGTERM, the device before a restart): every session
   * is told GOODBYE SHUTDOWN (§5.15) and closed, a parked one with nothing sent. The latch, in
   * the Store, is not touched. Idempotent; the host stops feeding the hub afterwards.
   */
  shutdown(): void {
    for (const s of this.slots) if (s) this.closeSession(s, GoodbyeReason.SHUTDOWN);
  }

  /** §6.9 teardown: GOODBYE, stale expiry, slot-pressure reclaim or persistent misbehaviour. */
  private closeSession(s: Session, reason: number): void {
    if (s.state === SessionState.CLOSED) return;
    if (s.link) this.sendControl(s, { type: FrameType.GOODBYE, reason });
    const conn = this.connOf(s);
    if (conn) {
      this.dropConn(conn);
      conn.link.close();
    }
    s.link = null;
    s.state = SessionState.CLOSED;
    const t = this.table;
    while (t.routeCount[s.slot]! > 0) this.unsubscribe(s, this.subscribedRoute(s, 0).ch.id);
    s.pubs.length = 0;
    this.slots[s.slot] = null;
    if (this.owner === s) this.setOwner(null);
    this.log.event('session-close', s.id, reason);
    this.replan();
    this.announceGrants();
  }

  // ------------------------------------------------------------------ grants (§10.2)

  private refuse(code: number, frameType: number, channelId: number): void {
    this.refusals.push(code, frameType, channelId);
  }

  /** Refused wishes are NACKed after the answer (WELCOME or GRANT), so that the answer comes first. */
  private sendRefusals(s: Session): void {
    const r = this.refusals;
    for (let i = 0; i + 2 < r.length; i += 3) this.nackSession(s, r[i] as number, r[i + 1] as number, r[i + 2] as number);
    r.length = 0;
  }

  /** The route of a channel a client can subscribe to (telemetry, not INTENT). */
  private routeOf(channelId: number): ChannelRoute | undefined {
    const r = this.routeIds[channelId];
    return r === undefined || r === 0 ? undefined : this.routes[r - 1];
  }

  /** The i-th channel the session subscribed to, in subscription order. */
  private subscribedRoute(s: Session, i: number): ChannelRoute {
    return this.routes[this.table.routeOf(s.slot, i)] as ChannelRoute;
  }

  private subscribe(s: Session, wishes: readonly WireSubWish[]): void {
    const t = this.table;
    for (const w of wishes) {
      const route = this.routeOf(w.channelId);
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
      if (route.last) route.lastValues(s.slot);
      if (route.events) route.events.join(s.slot);
    }
  }

  private unsubscribe(s: Session, channelId: number): void {
    const route = this.routeOf(channelId);
    if (!route || !this.table.has(route.index, s.slot)) return;
    this.table.remove(route.index, s.slot);
    if (route.events) route.events.leave(s.slot);
  }

  /**
   * §10.2/§10.5 publication grants. A publication is ingress: it spends none of the egress
   * capacity or link budget, so its wish is clamped by the catalog max_rate_hz (and refused
   * below the catalog publish tier); the burst is clamped into [granted, granted × 4] and
   * below the catalog max_burst.
   */
  private publishWishes(s: Session, wishes: readonly PubWish[], now: number): PubGrant[] {
    const out: PubGrant[] = [];
    for (const w of wishes) {
      const ch = this.catalog.byId(w.channelId);
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

  private currentPubGrants(s: Session): PubGrant[] {
    const out: PubGrant[] = [];
    for (const p of s.pubs) out.push({ channelId: p.ch.id, grantedRateHz: p.grantedHz, burst: p.burst });
    return out;
  }

  private currentSubGrants(s: Session): SubGrant[] {
    const out: SubGrant[] = [];
    const t = this.table;
    for (let i = 0; i < t.routeCount[s.slot]!; i++) {
      const route = this.subscribedRoute(s, i);
      const k = t.row(route.index, s.slot);
      out.push({ channelId: route.ch.id, grantedRateHz: t.grantedHz[k]!, priority: t.priority[k]! });
    }
    return out;
  }

  /**
   * The rate a subscription asks the plan for. §10.4: a segments stream is shed whole-source
   * or not at all, so its grant is too: any positive wish asks for the whole source (the
   * catalog max_rate_hz), and `replan` grants that or nothing.
   */
  private planWishHz(ch: ChannelInfo, k: number): number {
    const wishHz = this.table.wishHz[k]!;
    if (ch.kind === SEGMENTS) return wishHz > 0 ? ch.maxRateHz : 0;
    return wishHz;
  }

  /**
   * Re-splits the pie over every ACTIVE session (§10.2) and marks sessions whose grants
   * changed; they are told by an unsolicited GRANT. STALE sessions keep their grants
   * frozen until they resume.
   */
  private replan(): void {
    const t = this.table;
    const wishes: SubWish[] = [];
    // The planned subscriptions, in plan order: their rows, sessions and channels.
    const rows: number[] = [];
    const owners: Session[] = [];
    const channels: ChannelInfo[] = [];
    const budgets = new Map<number, number>();
    for (let i = 0; i < this.slots.length; i++) {
      const s = this.slots[i];
      if (!s || s.state !== SessionState.ACTIVE) continue;
      if (Number.isFinite(s.budget.budgetBps)) budgets.set(s.id, s.budget.budgetBps);
      for (let j = 0; j < t.routeCount[s.slot]!; j++) {
        const route = this.subscribedRoute(s, j);
        const k = t.row(route.index, s.slot);
        rows.push(k);
        owners.push(s);
        channels.push(route.ch);
        wishes.push(this.planWish(s, route.ch, k, this.planWishHz(route.ch, k)));
      }
    }
    let granted = planGrants(wishes, budgets, this.config.capacityHz);
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
    if (partial) granted = planGrants(wishes, budgets, this.config.capacityHz);
    for (let i = 0; i < rows.length; i++) {
      const k = rows[i] as number;
      const ch = channels[i] as ChannelInfo;
      let g = granted[i] as number;
      if (ch.kind === SEGMENTS && !ch.critical) g = g >= ch.maxRateHz ? ch.maxRateHz : 0;
      if (!ch.critical) {
        // docs/operations.md "Health, admission and overload" ladder rungs 2–5: the planned grant × the rung's factor, after the pie split
        // (the share given up is not handed to others); critical rows are never touched (§10.2).
        const f = this.ladder.grantFactor(t.priority[k] as number, ch.kind === SEGMENTS);
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
  private announceGrants(): void {
    for (let i = 0; i < this.slots.length; i++) {
      const s = this.slots[i];
      if (s && s.grantOwed && s.state === SessionState.ACTIVE) this.sendGrant(s, true, false);
    }
  }

  private sendGrant(s: Session, subs: boolean, pubs: boolean): void {
    s.grantOwed = false;
    this.counters.grantsAnnounced++;
    const f: { type: 6; subGrants?: SubGrant[]; pubGrants?: PubGrant[] } = { type: FrameType.GRANT };
    if (subs) f.subGrants = this.currentSubGrants(s);
    if (pubs) f.pubGrants = this.currentPubGrants(s);
    this.sendControl(s, f);
  }

  // ------------------------------------------------------------------ egress: the hot path

  /**
   * One telemetry sample (STREAM) or value (STATE) from the robot, routed to every
   * subscriber through the grant and the shedding table. Encoded once; copied to each link;
   * nothing is allocated per sample and nothing is ever held back to be sent later (§10.4):
   * whatever is sent for this push leaves during this call, whatever cannot is dropped.
   */
  publishSample(channelId: number, t: number, values: Float64Array, count: number): void {
    const route = this.routeOf(channelId);
    if (route === undefined || route.events !== null) return;
    const ch = route.ch;
    const seq = (route.seq = (route.seq + 1) % 0x100000000);
    const tab = this.table;
    const r = route.index;
    const subscriberCount = tab.subscriberCount;
    if (subscriberCount[r] === 0) return;
    // A sample carries at most the catalog's fields; a time that is no unsigned integer reads as 0.
    let n = count < values.length ? count : values.length;
    if (n > ch.fieldCount) n = ch.fieldCount;
    n = n > 0 ? Math.floor(n) : 0;
    const time = t >= 0 && t <= MAX_SAFE ? Math.floor(t) : 0;
    const now = this.clock.now();
    const critical = ch.critical;
    // §10.4: a segments stream is never thinned, not even by the grant (its grant is whole-source).
    const segments = ch.kind === SEGMENTS;
    // §10.4 "never delay-and-burst", at the binding (Link.send): a STREAM sample may be dropped
    // unsent once it has waited past the link's sample budget; a STATE value once a newer value
    // of its channel waits behind it (row 8's conflation keeps trusting the newest it handed).
    // Critical channels and segments never are.
    const shed = critical || segments ? SendShed.NEVER : ch.cls === ChannelClass.STREAM ? SendShed.SAMPLE : ch.cls === ChannelClass.STATE ? SendShed.VALUE + ch.id : SendShed.NEVER;
    let encoded = false;
    const counters = this.counters;
    const slots = this.slots;
    // The table's columns, read once: the loop is the hot path.
    const subscribers = tab.subscribers;
    const grantedHz = tab.grantedHz;
    const nextDue = tab.nextDue;
    const priority = tab.priority;
    const firstPush = tab.firstPush;
    const sourceDropped = tab.sourceDropped;
    const decimation = tab.decimation;
    // STATE: the values last sent, an array per subscriber's slot, made when it subscribed.
    const lastValues = route.last;
    const first = r * tab.slots;
    // docs/operations.md "Health, admission and overload" ladder rung 1: the table reads every link at this level at least.
    const floor = this.ladder.levelFloor;
    // The count is read each time round: a link may re-enter the hub from inside send().
    for (let i = 0; i < (subscriberCount[r] as number); i++) {
      const slot = subscribers[first + i] as number;
      const s = slots[slot] as Session;
      const link = s.link;
      if (link === null || s.state !== SessionState.ACTIVE) continue;
      const k = first + slot;
      if (!critical) {
        // The grant: a subscriber gets at most its granted rate, always the newest sample.
        if (!((grantedHz[k] as number) > 0)) {
          counters.rateGated++;
          if (segments) sourceDropped[k] = 1;
          continue;
        }
        if (!segments && now < (nextDue[k] as number)) {
          counters.rateGated++;
          continue;
        }
      }
      const level = link.level();
      const packed = shedDecide(level > floor ? level : floor, priority[k] as number, ch.cls, ch.kind, firstPush[k] === 1);
      const row = shedRow(packed);
      counters.rows[row] = (counters.rows[row] as number) + 1;
      const decision = shedDecision(packed);
      if (decision === SHED_DECISION.drop) {
        counters.shedDrops++;
        continue;
      }
      if (decision === SHED_DECISION.drop_source) {
        counters.shedDrops++;
        sourceDropped[k] = 1; // §10.4 row 6: whole source; the next push that goes out carries gap
        continue;
      }
      if (decision === SHED_DECISION.decimate4 || decision === SHED_DECISION.decimate2) {
        if (!decimate(decimation, k * DECIMATION_STATE, decimationFactor(decision))) {
          // Decimation thins the granted stream: the dropped push uses up its grant slot.
          counters.decimated++;
          consumeGrantSlot(grantedHz, nextDue, k, now);
          continue;
        }
      } else {
        // A factor of 1 has no count: only a subscription that was decimating needs the reset.
        if (decimation[k * DECIMATION_STATE] !== 1) resetDecimation(decimation, k * DECIMATION_STATE);
        // Row 8 conflates STATE channels only, which keep the values last sent.
        if (decision === SHED_DECISION.conflate && lastValues !== null && sameValues(values, n, lastValues[slot] as Float64Array, tab.lastLen[k] as number)) {
          counters.conflated++;
          continue;
        }
      }
      let w: CborWriter;
      if (sourceDropped[k] === 1) {
        w = this.ctrlW;
        w.reset();
        encodeData(w, channelId, seq, time, values, n, true, 0);
      } else {
        if (!encoded) {
          this.dataW.reset();
          encodeData(this.dataW, channelId, seq, time, values, n, false, 0);
          encoded = true;
        }
        w = this.dataW;
      }
      if (critical) {
        if (!this.sendNeverShed(s, w.buf, w.pos)) continue;
      } else if (s.neverShed.size > 0 || !link.canSend(w.pos)) {
        // The link cannot take it now: dropped at once, never queued for later (no delay-and-burst).
        counters.egressDrops++;
        if (segments) sourceDropped[k] = 1; // a lost segment is a lost command: say so
        continue;
      } else {
        link.send(w.buf, w.pos, shed);
        s.handed(); // a critical frame is counted when it reaches the link (sendNeverShed, the drain)
      }
      counters.delivered++;
      firstPush[k] = 0;
      sourceDropped[k] = 0;
      if (!critical && !segments) consumeGrantSlot(grantedHz, nextDue, k, now);
      if (lastValues !== null) {
        const last = lastValues[slot] as Float64Array;
        const m = n < last.length ? n : last.length;
        for (let j = 0; j < m; j++) last[j] = values[j] as number;
        tab.lastLen[k] = m;
      }
    }
  }

  /** One EVENT (§9.4): queued per subscriber, bounded, oldest dropped and counted. */
  publishEvent(channelId: number, t: number, values: readonly number[], text?: string): void {
    const route = this.routeOf(channelId);
    // An EVENT channel nobody can subscribe to (not telemetry) has nobody to queue for.
    if (route === undefined || route.events === null) return;
    const ch = route.ch;
    const seq = (route.seq = (route.seq + 1) % 0x100000000);
    const tab = this.table;
    if (tab.subscriberCount[route.index] === 0) return;
    const n = Math.min(values.length, ch.fieldCount);
    const v = new Float64Array(n);
    for (let i = 0; i < n; i++) v[i] = values[i] as number;
    // One record per event, shared by every subscriber's queue.
    const rec: EventRecord = Object.freeze({ seq, t: t >= 0 && t <= MAX_SAFE ? Math.floor(t) : 0, values: v, count: n, text });
    // A STALE session's queue keeps filling (bounded, losses counted): a resume gets them (§9.4).
    route.events.push(rec);
    const first = route.index * tab.slots;
    for (let i = 0; i < (tab.subscriberCount[route.index] as number); i++) {
      const s = this.slots[tab.subscribers[first + i] as number] as Session;
      if (s.state === SessionState.ACTIVE) this.flushEvents(route, s);
    }
  }

  private flushEvents(route: ChannelRoute, s: Session): void {
    const q = route.events;
    const link = s.link;
    if (!q || !link) return;
    const ch = route.ch;
    const slot = s.slot;
    const k = this.table.row(route.index, slot);
    const firstPush = this.table.firstPush;
    const floor = this.ladder.levelFloor;
    for (let ev = q.peek(slot); ev !== undefined; ev = q.peek(slot)) {
      const level = link.level();
      const packed = shedDecide(level > floor ? level : floor, this.table.priority[k] as number, ch.cls, ch.kind, firstPush[k] === 1);
      const row = shedRow(packed);
      const decision = shedDecision(packed);
      if (decision === SHED_DECISION.drop) {
        this.counters.rows[row] = (this.counters.rows[row] as number) + 1;
        this.counters.shedDrops++;
        q.drop(slot); // §9.4: counted, and carried by the next delivered event
        continue;
      }
      const w = this.ctrlW;
      w.reset();
      encodeFrame(eventFrame(ch.id, ev, q.dropped(slot)), w);
      if (ch.critical) {
        if (!this.sendNeverShed(s, w.buf, w.pos)) return;
      } else if (s.neverShed.size > 0 || !link.canSend(w.pos)) return; // stays queued, bounded (§9.4)
      else {
        link.send(w.buf, w.pos);
        s.handed();
      }
      // Counted once, when the event leaves: a queued event is evaluated again on the next try.
      this.counters.rows[row] = (this.counters.rows[row] as number) + 1;
      q.shift(slot);
      firstPush[k] = 0;
      this.counters.delivered++;
    }
  }

  // ------------------------------------------------------------------ never-shed path (§10.4)

  /**
   * Critical frames: straight to the link if it can take them, else the never-shed queue.
   * False when the frame could not be kept (no link, or the queue overflowed and the
   * session was parked).
   */
  private sendNeverShed(s: Session, bytes: Uint8Array, length: number): boolean {
    const link = s.link;
    if (!link) return false;
    const q = s.neverShed;
    if (q.size === 0 && link.canSend(length)) {
      link.send(bytes, length);
      s.handed();
      return true;
    }
    const wasEmpty = q.size === 0;
    if (!q.push(bytes, length, this.clock.now())) {
      // The queue holds far more than never-shed traffic makes in 2 s: a link that cannot take
      // even that is broken, and parking it now is the same §10.4 transition, only sooner.
      this.counters.neverShedOverflows++;
      this.park(s);
      return false;
    }
    // §10.4: the stall is timed from the moment never-shed traffic first had to wait.
    if (wasEmpty) s.stall.update(true, false, this.clock.now());
    return true;
  }

  private drainNeverShed(s: Session, now: number): void {
    const link = s.link;
    if (!link) return;
    const q = s.neverShed;
    const drained = q.size > 0 ? q.drainTo(link, this.ctrlW.buf, now, this.health) : 0;
    s.sentFrames = (s.sentFrames + drained) >>> 0;
    const progressed = drained > 0;
    s.stall.update(q.size > 0, progressed, now);
    // §10.4 park, not kill: after NEVER_SHED_STALL_EVICTION_MS (the StallClock's limit) the
    // transport is closed and the session goes STALE, exactly as a transport loss would;
    // SESSION_EVICTED never fires from this path (§12.7).
    if (s.stall.parkDue(now)) this.park(s);
  }

  private park(s: Session): void {
    this.makeStale(s, true);
  }

  // ------------------------------------------------------------------ control frames

  private sendControl(s: Session, f: Frame): void {
    const w = this.ctrlW;
    w.reset();
    encodeFrame(f, w);
    this.sendNeverShed(s, w.buf, w.pos);
  }

  /** Before HELLO there is no session and no never-shed queue: the frame goes if the link can take it. */
  private sendTo(conn: Conn, f: Frame): void {
    if (conn.session) {
      this.sendControl(conn.session, f);
      return;
    }
    const w = this.ctrlW;
    w.reset();
    encodeFrame(f, w);
    if (conn.link.canSend(w.pos)) {
      conn.link.send(w.buf, w.pos);
      conn.sent = (conn.sent + 1) >>> 0;
    }
  }

  private nackConn(conn: Conn, code: number, frameType?: number, channelId?: number, retryAfterMs?: number): void {
    this.counters.nacks[code] = (this.counters.nacks[code] as number) + 1;
    this.sendTo(conn, nackFrame(code, frameType, channelId, undefined, retryAfterMs));
  }

  private nackSession(s: Session, code: number, frameType?: number, channelId?: number, requestId?: number, retryAfterMs?: number): void {
    this.counters.nacks[code] = (this.counters.nacks[code] as number) + 1;
    this.sendControl(s, nackFrame(code, frameType, channelId, requestId, retryAfterMs));
  }

  /** §12: RATE_LIMITED is back-pressure, at most STREAM_INGRESS_OVERAGE_NACK_PER_S per session. */
  private rateLimited(s: Session, frameType: number, channelId: number, requestId: number | undefined, retryMs: number, now: number): void {
    if (!s.rateNacks.allow(now)) return;
    this.nackSession(s, Nack.RATE_LIMITED, frameType, channelId, requestId, Number.isFinite(retryMs) ? retryMs : undefined);
  }

  private sendCatalog(conn: Conn, s: Session, offset: number): void {
    const text = this.catalog.canonicalJson;
    const total = utf8ByteLength(text);
    // The catalog is not never-shed traffic: it goes in chunks that fit one frame of this link
    // (an ESP-NOW datagram is 250 bytes), counted in UTF-8 bytes and cut at character boundaries.
    const budget = Math.max(16, Math.min(CATALOG_CHUNK_BYTES, conn.link.mtu - CATALOG_FRAME_OVERHEAD));
    let from = 0;
    let at = 0;
    while (from < text.length && at < offset) at += utf8CharBytes(text, from++);
    if (offset > total || at !== offset) {
      this.malformed(conn, Nack.MALFORMED, FrameType.CATALOG, this.clock.now());
      return;
    }
    let to = from;
    let bytes = 0;
    while (to < text.length) {
      const n = utf8CharBytes(text, to);
      if (bytes + n > budget) break;
      bytes += n;
      to += n === 4 ? 2 : 1;
    }
    const w = this.ctrlW;
    w.reset();
    encodeFrame({ type: FrameType.CATALOG, catalogHash: this.catalog.hash, text: text.slice(from, to), offset, total }, w);
    if (s.neverShed.size === 0 && conn.link.canSend(w.pos)) {
      conn.link.send(w.buf, w.pos);
      s.handed();
    } else this.nackSession(s, Nack.HUB_PRESSURE, FrameType.CATALOG, undefined, undefined, 200);
  }

  // ------------------------------------------------------------------ ingress limits (§10.5)

  private onBundle(conn: Conn, s: Session, channelId: number, samples: number[][], now: number): void {
    const pub = s.publication(channelId);
    if (!pub) {
      if (!this.catalog.byId(channelId)) this.nackSession(s, Nack.UNKNOWN_CHANNEL, FrameType.BUNDLE, channelId);
      else this.bundleRefused(s, Nack.NOT_GRANTED, channelId, now);
      return;
    }
    // A sample is [t, one finite number per catalog field]: anything else would reach the robot
    // as a command it cannot read.
    const width = pub.ch.fieldCount + 1;
    for (let i = 0; i < samples.length; i++) {
      const sample = samples[i] as number[];
      let bad = sample.length !== width;
      for (let k = 1; k < sample.length && !bad; k++) bad = !Number.isFinite(sample[k] as number);
      if (bad) {
        this.malformed(conn, Nack.MALFORMED, FrameType.BUNDLE, now, channelId);
        return;
      }
    }
    if (pub.ch.motion && this.latch.latched) {
      this.bundleRefused(s, Nack.ESTOP_LATCHED, channelId, now);
      return;
    }
    if (pub.ch.motion && this.owner !== s) {
      this.bundleRefused(s, Nack.NOT_OWNER, channelId, now);
      return;
    }
    if (pub.ch.motion && !this.armedFlag) {
      this.bundleRefused(s, Nack.NOT_ARMED, channelId, now);
      return;
    }
    // §10.5: n samples take n tokens; a bundle that would overdraw is dropped whole.
    if (!pub.bucket.take(samples.length, now)) {
      this.rateLimited(s, FrameType.BUNDLE, channelId, undefined, pub.bucket.msUntil(samples.length, now), now);
      return;
    }
    this.robot.publish(channelId, samples);
  }

  /**
   * A BUNDLE refused by a hub rule. Bundles stream (up to 50 a second), so their refusals share
   * the session's RATE_LIMITED throttle: one NACK per bundle would fill the sender's own
   * never-shed queue and park it.
   */
  private bundleRefused(s: Session, code: number, channelId: number, now: number): void {
    if (s.rateNacks.allow(now)) this.nackSession(s, code, FrameType.BUNDLE, channelId);
  }

  // ------------------------------------------------------------------ intents, ownership (§9)

  /**
   * Every INTENT is answered once: ECHO when the hub carried it out (the robot's result in
   * key 20), NACK with its request_id when a hub rule refused it. RATE_LIMITED answers are
   * throttled (§12), so a flood beyond the limit is partly unanswered.
   */
  private onIntent(s: Session, channelId: number, requestId: number, args: readonly (number | string)[], now: number): void {
    const ch = this.catalog.byId(channelId);
    if (!ch || ch.cls !== ChannelClass.INTENT) {
      this.nackSession(s, Nack.UNKNOWN_CHANNEL, FrameType.INTENT, channelId, requestId);
      return;
    }
    if (!s.intentBucket.take(1, now)) {
      this.rateLimited(s, FrameType.INTENT, channelId, requestId, s.intentBucket.msUntil(1, now), now);
      return;
    }
    if (ch.publishTier < 0 || s.tier < ch.publishTier) {
      this.nackSession(s, Nack.FORBIDDEN, FrameType.INTENT, channelId, requestId);
      return;
    }
    let refusal = 0;
    let result = 0;
    if (ch.name === 'take_control') {
      refusal = this.takeControl(s);
    } else if (ch.name === 'release_control') {
      if (this.owner === s) this.setOwner(null);
      else refusal = Nack.NOT_OWNER;
    } else if (ch.motion && this.latch.latched) {
      refusal = Nack.ESTOP_LATCHED;
    } else if (ch.motion && this.owner !== s) {
      refusal = Nack.NOT_OWNER;
    } else if (ch.name === 'arm') {
      // §11.2: the owner's arm, unlatched, is what lets motion resume after a stop.
      // A robot that refuses its arm (its own safety chain open) leaves the hub disarmed.
      result = this.robot.intent(channelId, args);
      if (result === 0) this.armedFlag = true;
    } else if (ch.motion && !this.armedFlag) {
      refusal = Nack.NOT_ARMED;
    } else {
      result = this.robot.intent(channelId, args);
      // The owner's disarm disarms the hub too; another operator's disarm reaches the robot only.
      if (ch.name === 'disarm' && this.owner === s) this.armedFlag = false;
    }
    if (refusal !== 0) this.nackSession(s, refusal, FrameType.INTENT, channelId, requestId);
    else {
      this.sendControl(s, { type: FrameType.ECHO, channelId, requestId, result: result >= 0 && result <= 0xff ? result : 0xff });
      // docs/operations.md "Health, admission and overload": from the INTENT's arrival to its ECHO (the robot's own time included).
      const at = this.clock.now();
      this.health.recordIntentEcho(at - now, at);
    }
  }

  private takeControl(s: Session): number {
    if (this.owner === s) return 0;
    if (this.owner && this.owner.state === SessionState.ACTIVE) return Nack.NOT_OWNER;
    this.setOwner(s);
    return 0;
  }

  private setOwner(s: Session | null): void {
    this.owner = s;
    if (s) this.deadman.arm(this.clock.now());
    else this.deadman.disarm();
    // A new owner (or none) ends the old owner's deadman hold; the latch itself stays.
    this.latch.setSourceAsserting(EstopSource.DEADMAN, false);
    // §9: ownership is announced on the critical `control-owner` channel.
    if (this.ownerCh) {
      const v = this.scratchValues;
      v[0] = s ? s.id : 0;
      this.publishSample(this.ownerCh.id, this.clock.now(), v, 1);
    }
  }

  /** Any frame from the control owner: the deadman is fed and its hold released. */
  private ownerHeard(now: number): void {
    this.deadman.heard(now);
    this.latch.setSourceAsserting(EstopSource.DEADMAN, false);
  }

  /**
   * An operator's teardown (§6.9): the one path that sends NACK SESSION_EVICTED (§12.7).
   * Returns false when no such session is open.
   */
  evict(sessionId: number): boolean {
    for (let i = 0; i < this.slots.length; i++) {
      const s = this.slots[i];
      if (!s || s.id !== sessionId || s.state === SessionState.CLOSED) continue;
      if (s.link) this.nackSession(s, Nack.SESSION_EVICTED);
      this.closeSession(s, GoodbyeReason.EVICTED);
      return true;
    }
    return false;
  }

  get controlOwner(): number {
    return this.owner ? this.owner.id : 0;
  }

  // ------------------------------------------------------------------ ESTOP (§10.4, §11.2)

  private onEstopFrame(conn: Conn, bytes: Uint8Array, start: number, len: number, now: number): void {
    let e: EstopFrame;
    try {
      e = decodeEstop(bytes, start, len);
    } catch (err) {
      if (err instanceof EstopFrameError) this.malformed(conn, Nack.MALFORMED, ESTOP_NACK_FRAME_TYPE, now);
      else throw err;
      return;
    }
    if (e.kind !== EstopKind.ASSERT) {
      // A clear is a CBOR ESTOP_CLEAR from the control owner, never a bare frame.
      this.malformed(conn, Nack.MALFORMED, ESTOP_NACK_FRAME_TYPE, now);
      return;
    }
    const s = conn.session;
    if (s) {
      s.lastHeard = now;
      if (s === this.owner) this.ownerHeard(now);
    }
    // Any ESTOP latches, whoever sends it: a stop is never refused for want of a session.
    if (this.latch.assert(EstopSource.CLIENT, s ? s.id : e.origin, e.seq)) this.announceEstop(true);
  }

  /**
   * Asserts the latch from any source: the robot stops, every link hears it ahead of all
   * queues. With `seq` the assertion is (origin, seq) and a repeat counts once; without it
   * the hub originates it (watchdog, robot) and it is always new.
   */
  estop(source: number, origin = 0, seq = -1): void {
    const fresh = seq < 0 ? this.assertLocal(source) : this.latch.assert(source, origin, seq);
    if (fresh) this.announceEstop(true);
  }

  /** An assertion the hub originates: origin 0 and the hub's next ESTOP sequence, so always new. */
  private assertLocal(source: number): boolean {
    return this.latch.assert(source, 0, (this.latch.seq + 1) & 0xffff);
  }

  /** The hub's own button: held means asserting (a clear is refused while held). */
  setButton(held: boolean): void {
    this.buttonHeld = held;
    const was = this.latch.isAsserting(EstopSource.HUB_BUTTON);
    this.latch.setSourceAsserting(EstopSource.HUB_BUTTON, held);
    // The press latches; holding only keeps the latch from being cleared.
    if (held && !was && this.assertLocal(EstopSource.HUB_BUTTON)) this.announceEstop(true);
  }

  get buttonAsserting(): boolean {
    return this.buttonHeld;
  }

  /**
   * §11 clear: the control owner, at operator tier, when no source asserts. A clear
   * that names an ESTOP sequence (key 39) other than the latch's current one was made for an
   * older stop than the one in force and is refused. With nothing latched the answer is the
   * current (CLEARED) ESTOP frame, written ahead to the asker alone.
   */
  private onEstopClear(s: Session, estopSeq: number | undefined): void {
    if (!this.latch.latched) {
      this.latch.encode(this.estopBuf, 0);
      if (s.link) {
        s.link.writeAhead(this.estopBuf);
        s.handed();
      }
      return;
    }
    if (s.tier < Tier.operator) {
      this.nackSession(s, Nack.FORBIDDEN, FrameType.ESTOP_CLEAR);
      return;
    }
    if (this.owner !== s) {
      this.nackSession(s, Nack.NOT_OWNER, FrameType.ESTOP_CLEAR);
      return;
    }
    if ((estopSeq !== undefined && estopSeq !== this.latch.originSeq) || !this.latch.clear()) {
      this.nackSession(s, Nack.ESTOP_LATCHED, FrameType.ESTOP_CLEAR);
      return;
    }
    this.log.event('estop-clear', s.id);
    this.announceEstop(false);
  }

  /** The latch's current state, ahead of every queue on every attached transport (§10.4, §11.2). */
  private announceEstop(asserted: boolean, fresh = true): void {
    // §11.2: a latch disarms, and a clear leaves the hub disarmed until the owner's arm.
    this.armedFlag = false;
    if (asserted) {
      if (fresh) this.counters.estops++;
      // §11.2: the robot is stopped already (the latch told it); while the links have heard the
      // latch within ESTOP_REANNOUNCE_MS a further assertion is owed, not written to every queue.
      const now = this.clock.now();
      if (now - this.estopAnnouncedAt < ESTOP_REANNOUNCE_MS) {
        this.estopOwed = true;
        return;
      }
      this.estopAnnouncedAt = now;
      this.estopOwed = false;
      this.log.event('estop', this.latch.source, this.latch.origin);
    } else {
      this.estopAnnouncedAt = -Infinity;
      this.estopOwed = false;
    }
    this.latch.encode(this.estopBuf, 0);
    for (let i = 0; i < this.conns.length; i++) {
      const c = this.conns[i] as Conn;
      c.link.writeAhead(this.estopBuf);
      // §5.12: the client counts the ESTOP frame like any other.
      if (c.session !== null && c.session.link === c.link) c.session.handed();
      else c.sent = (c.sent + 1) >>> 0;
    }
    this.announceSafety();
  }

  /** The latch's current ESTOP frame, ahead of every queue, to one session alone. */
  private estopTo(s: Session): void {
    if (!s.link) return;
    this.latch.encode(this.estopBuf, 0);
    s.link.writeAhead(this.estopBuf);
    s.handed();
  }

  private announceSafety(): void {
    const latched = this.latch.latched;
    const seq = latched ? this.latch.originSeq : this.latch.seq;
    if (this.safetyCh) {
      const v = this.scratchValues;
      v[0] = latched ? 1 : 0;
      v[1] = this.latch.source;
      v[2] = seq;
      this.publishSample(this.safetyCh.id, this.clock.now(), v, this.safetyCh.fieldCount);
    }
    if (this.safetyEventsCh) {
      const kind = latched ? SafetyEventKind.LATCH : SafetyEventKind.CLEAR;
      this.publishEvent(this.safetyEventsCh.id, this.clock.now(), [kind, this.latch.source, seq], latched ? 'estop' : 'estop-clear');
    }
  }

  // ------------------------------------------------------------------ time

  /** Periodic work: drain never-shed queues and park stalls, re-grant, expire, deadman. */
  tick(): void {
    const now = this.clock.now();
    this.health.tickBegan(now);
    this.expireHandshakes(now);
    if (this.estopOwed && this.latch.latched && now - this.estopAnnouncedAt >= ESTOP_REANNOUNCE_MS) this.announceEstop(true, false);
    let replan = false;
    for (let i = 0; i < this.slots.length; i++) {
      const s = this.slots[i];
      if (!s) continue;
      if (s.state === SessionState.STALE) {
        if (now - s.staleSince >= this.config.staleTtlMs) this.closeSession(s, GoodbyeReason.EVICTED);
        continue;
      }
      const link = s.link;
      if (!link) continue;
      // §6.5: a client that has sent nothing for the liveness timeout is treated as gone.
      if (now - s.lastHeard >= this.config.livenessTimeoutMs) {
        this.log.event('session-silent', s.id);
        this.makeStale(s, false);
        continue;
      }
      this.drainNeverShed(s, now);
      if (s.state !== SessionState.ACTIVE || !s.link) continue;
      // §10.3: sustained congestion cuts the grants to the throughput; recovery probes upward.
      if (s.budget.update(link.level(), link.estimate(), this.demandBps(s), now)) replan = true;
      for (let j = 0; j < this.table.routeCount[s.slot]!; j++) {
        const route = this.subscribedRoute(s, j);
        if (route.events && route.events.size(s.slot) > 0) this.flushEvents(route, s);
      }
    }
    // docs/operations.md "Health, admission and overload": the hub's own load moves the ladder; a new rung re-plans and announces grants.
    this.measureLoad(now);
    if (this.ladder.update(this.load, now)) replan = true;
    this.load.refuseJoins = this.ladder.refusesJoins;
    if (replan) this.replan();
    this.announceGrants();
    if (this.ladder.parkDue(now)) {
      const id = parkCandidate(this.ladderViews());
      const s = id > 0 ? this.sessionById(id) : undefined;
      if (s) {
        this.log.event('ladder-park', s.id);
        this.park(s);
        this.ladder.markParked(now);
      }
    }
    // §11: the control owner must be heard from within deadman_ms.
    if (this.owner && this.deadman.expired(now) && !this.latch.isAsserting(EstopSource.DEADMAN)) {
      this.latch.setSourceAsserting(EstopSource.DEADMAN, true);
      if (this.assertLocal(EstopSource.DEADMAN)) this.announceEstop(true);
    }
    this.health.tickEnded(this.clock.now());
  }

  /**
   * Fills the load admission and the ladder read: the measured views, the never-shed backlog,
   * the heap, and the aggregate egress occupancy (less the links stalled by their readers; 0
   * while some link keeps up). A few reads per session, allocation-free.
   */
  private measureLoad(now: number): HubLoad {
    const load = this.load;
    this.health.sample(now, load);
    let backlog = 0;
    for (let i = 0; i < this.slots.length; i++) {
      const s = this.slots[i];
      if (s) backlog += s.neverShed.bytes;
    }
    load.neverShedBacklogBytes = backlog;
    const heap = this.heap ? this.heap() : NaN;
    load.heapUsedBytes = heap >= 0 ? heap : NaN;
    let occupancy = 0;
    let readerStalled = 0;
    for (let i = 0; i < this.conns.length; i++) {
      const link = (this.conns[i] as Conn).link;
      const o = link.occupancy();
      if (!(o > 0)) continue;
      // A backlog its reader left untaken is that session's, not the hub's (LADDER_READER_STALL_MS).
      if (link.stalledMs() >= LADDER_READER_STALL_MS) readerStalled++;
      else occupancy += o;
    }
    load.readerStalledLinks = readerStalled;
    // A session whose link carries what it was handed within the last second, with room to spare, shows
    // the hub's egress is not the bottleneck: the backlog elsewhere is those links' (§10.3, §10.4).
    let keepingUp = 0;
    for (let i = 0; i < this.slots.length; i++) {
      const s = this.slots[i];
      if (!s || s.state !== SessionState.ACTIVE || !s.link) continue;
      if (s.sentFrames !== s.loadMark) {
        s.loadMark = s.sentFrames;
        s.handedAt = now;
      }
      // Keeping up: handed frames lately, clear of congestion (a queue bounded in time reads
      // congested, not full), little queued, and its transport moving.
      const link = s.link;
      if (now - s.handedAt <= LADDER_READER_STALL_MS && link.level() === 0 && link.occupancy() < LADDER_KEEPING_UP_OCCUPANCY && link.stalledMs() < LADDER_READER_STALL_MS) keepingUp++;
    }
    load.keepingUpLinks = keepingUp;
    load.egressOccupancy = keepingUp > 0 ? 0 : aggregateOccupancy(occupancy, this.config.slots);
    return load;
  }

  private sessionById(id: number): Session | undefined {
    for (let i = 0; i < this.slots.length; i++) {
      const s = this.slots[i];
      if (s && s.id === id) return s;
    }
    return undefined;
  }

  /** The sessions as the ladder's park choice sees them (numbers only; made only when a park is due). */
  private ladderViews(): LadderSessionView[] {
    const out: LadderSessionView[] = [];
    const t = this.table;
    for (let i = 0; i < this.slots.length; i++) {
      const s = this.slots[i];
      if (!s) continue;
      const subs: LadderSubView[] = [];
      for (let j = 0; j < t.routeCount[s.slot]!; j++) {
        const route = this.subscribedRoute(s, j);
        subs.push({ channelId: route.ch.id, priority: t.priority[t.row(route.index, s.slot)]!, segments: route.ch.kind === SEGMENTS });
      }
      out.push({ id: s.id, active: s.state === SessionState.ACTIVE && s.link !== null, owner: s === this.owner, tier: s.tier, subs });
    }
    return out;
  }

  /** What a session asks of its link in bytes/s: its clamped non-critical wishes (grants.ts linkDemandBps). */
  private demandBps(s: Session): number {
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

  // ------------------------------------------------------------------ inspection

  /** Sessions as operators may see them: ids, states, tiers, grants — no names or credentials. */
  sessions(): SessionView[] {
    const out: SessionView[] = [];
    for (let i = 0; i < this.slots.length; i++) {
      const s = this.slots[i];
      if (!s) continue;
      const subs: SubView[] = [];
      const t = this.table;
      for (let j = 0; j < t.routeCount[s.slot]!; j++) {
        const route = this.subscribedRoute(s, j);
        const k = t.row(route.index, s.slot);
        subs.push({ channelId: route.ch.id, wishHz: t.wishHz[k]!, grantedHz: t.grantedHz[k]!, priority: t.priority[k]! });
      }
      out.push({
        id: s.id,
        slot: s.slot,
        state: s.state,
        tier: s.tier,
        binding: s.link ? s.link.binding : '',
        level: s.link ? s.link.level() : 0,
        neverShedBytes: s.neverShed.bytes,
        ackLag: s.link && s.link.unsent ? s.ackLagLess(s.link.unsent()) : s.ackLag,
        subs,
      });
    }
    return out;
  }

  /** What the hub holds, by structure: the sizes fixed at setup and what its sessions made (docs/architecture.md "Memory"). */
  footprint(): HubFootprint {
    let stateValueArrays = 0;
    let stateValueArraysMax = 0;
    let eventRings = 0;
    let eventCapacity = 0;
    for (const route of this.routes) {
      if (route.last) {
        stateValueArraysMax += route.last.length;
        for (const v of route.last) if (v) stateValueArrays++;
      }
      if (route.events) {
        eventRings++;
        eventCapacity += route.events.capacity;
      }
    }
    let subscriptions = 0;
    let neverShedBytes = 0;
    for (let i = 0; i < this.slots.length; i++) {
      const s = this.slots[i];
      if (!s) continue;
      subscriptions += this.table.routeCount[s.slot]!;
      neverShedBytes += s.neverShed.capacityBytes;
    }
    return {
      routes: this.routes.length,
      subscriptionRows: this.routes.length * this.table.slots,
      subscriptions,
      stateValueArrays,
      stateValueArraysMax,
      eventRings,
      eventCapacity,
      scratchBytes: this.dataW.buf.length + this.ctrlW.buf.length,
      neverShedBytes,
    };
  }

  /**
   * The detailed health report (docs/operations.md "Health, admission and overload", `metrics.version: 1`): the HEALTH frame's text and
   * the operators' HTTP endpoint. Numbers under fixed keys only; no names, credentials, tokens
   * or payloads. Allocates: on request only.
   */
  healthReport(): HealthReport {
    return this.reportAt(this.clock.now());
  }

  /** New sessions would be admitted now (the coarse public GET /health's `ready`). */
  ready(): boolean {
    const now = this.clock.now();
    return this.admission.peek(this.measureLoad(now)).admit;
  }

  private reportAt(now: number): HealthReport {
    this.measureLoad(now);
    const a = this.ackLag;
    a.reset();
    const links: LinkHealth[] = [];
    let active = 0;
    let stale = 0;
    for (let i = 0; i < this.slots.length; i++) {
      const s = this.slots[i];
      if (!s) continue;
      if (s.state === SessionState.STALE) stale++;
      const link = s.link;
      if (s.state !== SessionState.ACTIVE || !link) continue;
      active++;
      const level = link.level();
      // ESP-NOW acknowledges by bitmap (§13.3): no ack lag, its level only.
      a.add(link.binding === 'espnow' ? NaN : link.unsent ? s.ackLagLess(link.unsent()) : s.ackLag, level);
      links.push({ slot: s.slot, binding: link.binding, level, loss: link.lossRate ? link.lossRate() : NaN, occupancy: link.occupancy() });
    }
    a.finish();
    return this.health.report(now, {
      counters: this.counters,
      slots: this.config.slots,
      active,
      stale,
      latched: this.latch.latched,
      links,
      load: this.load,
      heapLimitBytes: this.config.heapLimitBytes,
      ackLag: a,
      admission: this.admission,
      ladder: this.ladder,
      governor: this.governor,
    });
  }

  /**
   * §5.18: the report as JSON text, in one frame when it fits the link, else in chunks with
   * offset/total as CATALOG's (§5.17). The chunks of one reading are cut from the text made at
   * offset 0, kept on the session until its last chunk went, so that they join into one report.
   * The text is ASCII (fixed keys and numbers), so its UTF-8 bytes are its characters.
   */
  private sendHealth(conn: Conn, s: Session, offset: number, now: number): void {
    let text = s.healthText;
    if (offset === 0) text = JSON.stringify(this.reportAt(now));
    if (text === null || offset > text.length) {
      s.healthText = null;
      this.nackSession(s, Nack.MALFORMED, FrameType.HEALTH);
      return;
    }
    const total = text.length;
    const budget = Math.max(16, Math.min(CATALOG_CHUNK_BYTES, conn.link.mtu - CATALOG_FRAME_OVERHEAD));
    const whole = offset === 0 && total <= budget;
    const end = Math.min(total, offset + budget);
    const w = this.ctrlW;
    w.reset();
    encodeFrame(whole ? { type: FrameType.HEALTH, text } : { type: FrameType.HEALTH, text: text.slice(offset, end), offset, total }, w);
    if (s.neverShed.size === 0 && conn.link.canSend(w.pos)) {
      conn.link.send(w.buf, w.pos);
      s.handed();
      s.healthText = whole || end >= total ? null : text;
    } else {
      s.healthText = offset === 0 ? null : text;
      this.nackSession(s, Nack.HUB_PRESSURE, FrameType.HEALTH, undefined, undefined, 200);
    }
  }
}

/**
 * The grant gate: the earliest time the next non-critical push may go. At most one period of
 * credit: a push that comes late does not buy a burst afterwards.
 */
function consumeGrantSlot(grantedHz: Float64Array, nextDue: Float64Array, k: number, now: number): void {
  const period = 1000 / (grantedHz[k] as number);
  const next = (nextDue[k] as number) + period;
  nextDue[k] = next < now - period ? now + period : next;
}

export interface HubFootprint {
  /** Channels a client can subscribe to: each is a block of one row per session slot. */
  readonly routes: number;
  readonly subscriptionRows: number;
  /** Rows in use: the open sessions' subscriptions. */
  readonly subscriptions: number;
  /** §10.4 row 8: arrays of the values last sent, made so far, and at most one per (STATE channel, slot). */
  readonly stateValueArrays: number;
  readonly stateValueArraysMax: number;
  /** §9.4: one queue per EVENT channel shared by its subscribers, and the events they hold at most in all. */
  readonly eventRings: number;
  readonly eventCapacity: number;
  /** The hub-wide frame buffers: a push's DATA frame and the control frame. */
  readonly scratchBytes: number;
  /** The open sessions' never-shed queues (§10.4). */
  readonly neverShedBytes: number;
}

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

/**
 * The largest DATA frame (hub/frames.ts encodeData) carrying `fields` values: the map head, seven
 * keys of at most 2 bytes, type (1), channel_id (≤ 2), seq (uint32, ≤ 5), t (up to 2^53, ≤ 9),
 * the values array head (≤ 2) and each value (≤ 9, an integer or a float64), gap (1), dropped
 * (≤ 9). A push's buffer is this size, not MAX_HUB_FRAME_BYTES, which an EVENT's text needs.
 */
function dataFrameBytes(fields: number): number {
  return 1 + 7 * 2 + 1 + 2 + 5 + 9 + 2 + fields * 9 + 1 + 9;
}

/** A clock reading as the wire's unsigned integer ms (§5.14 t1). */
function wholeMs(t: number): number {
  return t > 0 && t <= MAX_SAFE ? Math.floor(t) : 0;
}

/** UTF-8 bytes of the character starting at code unit i (a surrogate pair counts 4, a lone surrogate 3). */
function utf8CharBytes(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c < 0x80) return 1;
  if (c < 0x800) return 2;
  if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
    const d = text.charCodeAt(i + 1);
    if (d >= 0xdc00 && d <= 0xdfff) return 4;
  }
  return 3;
}
