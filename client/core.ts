// The hub client: a session over any transport, platform-free (docs/client.md).
//
// It opens and resumes the session (§6), keeps the grants the hub states and shows them as
// they are, never as they were wished (§10.2), meters its own publications with the hub's
// own bucket rule so that it never earns RATE_LIMITED (§10.5), matches intents to their
// ECHO or NACK (§9.3), acknowledges what it receives (§13.2), keeps the control owner's
// deadman fed (§11.2), sends and watches the ESTOP frame (§11), and reconnects with resume
// when the transport is lost (§6.6). Time, timers, randomness and the transport come in
// through client/transport.ts; nothing here touches Node, the DOM or a socket.

import { loadCatalog, type CatalogIndex } from '../catalog/index.js';
import { fnv1a64Utf8 } from '../catalog/hash.js';
import { CborError, CborWriter } from '../hub/cbor.js';
import { MAX_BUNDLE_SAMPLES } from '../hub/constants.js';
import {
  decodeEstop,
  ESTOP_FLAG_LATCHED,
  ESTOP_FRAME_BYTES,
  EstopFrameError,
  EstopKind,
  EstopSource,
  encodeEstop,
  isEstopFrame,
  type EstopFrame,
} from '../hub/estop-frame.js';
import {
  FrameDecoder,
  encodeFrame,
  FRAME_DIRECTION,
  FrameError,
  FrameType,
  FROM_HUB,
  GoodbyeReason,
  MAX_FRAME_BYTES,
  MAX_HUB_FRAME_BYTES,
  Key,
  MAX_LIST,
  MAX_SAMPLE_NUMBERS,
  PROTOCOL_VERSION,
  type Arg,
  type CatalogFrame,
  type DataFrame,
  type EchoFrame,
  type Frame,
  type GrantFrame,
  type HealthFrame,
  type HelloFrame,
  type NackFrame,
  type PubGrant,
  type PubWish,
  type SubGrant,
  type SubWish,
  type WelcomeFrame,
} from '../hub/frames.js';
import { FastReader } from '../hub/fast-reader.js';
import { intentBucket, TokenBucket } from '../hub/limits.js';
import { isRetryable, Nack, nackName } from '../hub/nack.js';
import { utf8ByteLength } from '../hub/utf8.js';
import type { ClientClock, ClientTransport, RandomSource, TimerHandle, TransportFactory } from './transport.js';

// §13.2: an ACK at least once a second while frames arrive, and after every 32 frames.
export const ACK_INTERVAL_MS = 1000;
export const ACK_EVERY_FRAMES = 32;
// §11.2 / §6.8: the control owner must be heard within deadman_ms (500 ms): a PING every
// 200 ms leaves room for two to be late.
export const OWNER_PING_INTERVAL_MS = 200;
export const PING_INTERVAL_MS = 1000;
export const REQUEST_TIMEOUT_MS = 5000;
export const INTENT_TIMEOUT_MS = 2000;
export const SILENCE_TIMEOUT_MS = 5000;
export const BACKOFF_MIN_MS = 100;
export const BACKOFF_MAX_MS = 5000;
/**
 * §10.5 meters arrivals, the client meters departures: frames bunched by the network by up
 * to this much still fit the hub's bucket, because the client keeps rate × this in reserve.
 */
export const JITTER_RESERVE_MS = 100;

const U32 = 0x100000000;
// BUNDLE head: map(3), key 0, type, key 3, channel id (≤ 2 bytes), key 6, array head (≤ 2 bytes).
const BUNDLE_OVERHEAD_BYTES = 9;

export type ClientState = 'connecting' | 'active' | 'stale' | 'closed';

export const ClientErrorCode = Object.freeze({
  /** The hub refused: `nack` holds the code (§12.2). */
  NACK: 'NACK',
  /** No answer in time. */
  TIMEOUT: 'TIMEOUT',
  /** The transport was lost before the answer came; the outcome is unknown. */
  LOST: 'LOST',
  /** The client was closed, or the hub closed the session (GOODBYE). */
  CLOSED: 'CLOSED',
  /** No session to send on. */
  NOT_CONNECTED: 'NOT_CONNECTED',
  /** Refused by the client itself, never sent: over its own budget, or not a valid frame. */
  REFUSED: 'REFUSED',
  /** The hub sent something that is no frame of ours, or one that makes no sense here. */
  BAD_FRAME: 'BAD_FRAME',
  /** The transport could not be opened, or its stream broke. */
  TRANSPORT: 'TRANSPORT',
  /** The catalog text did not match its hash, or did not validate. */
  CATALOG: 'CATALOG',
  /** A callback of the application threw. */
  HANDLER: 'HANDLER',
} as const);
export type ClientErrorCodeName = (typeof ClientErrorCode)[keyof typeof ClientErrorCode];

export class HubClientError extends Error {
  readonly code: ClientErrorCodeName;
  /** The NACK code (§12.2) when `code` is NACK, else 0. */
  readonly nack: number;
  readonly nackFrame: NackFrame | undefined;
  constructor(code: ClientErrorCodeName, message: string, nackFrame?: NackFrame) {
    super(message);
    this.name = 'HubClientError';
    this.code = code;
    this.nack = nackFrame ? nackFrame.code : 0;
    this.nackFrame = nackFrame;
  }
  get retryAfterMs(): number | undefined {
    return this.nackFrame?.retryAfterMs;
  }
}

/** A wish the hub refused outright (§6.4, §6.7): a NACK naming the channel. */
export interface Refusal {
  channelId: number;
  code: number;
}

export interface SubscribeAnswer {
  /** The GRANT that answered: key 35 holds every subscription grant the session now has. */
  grant: GrantFrame;
  /** The grants of the channels this call wished for. */
  granted: SubGrant[];
  refused: Refusal[];
}

export interface PublishAnswer {
  /** The GRANT that answered (key 36, possibly empty: §10.2). */
  grant: GrantFrame;
  granted: PubGrant[];
  refused: Refusal[];
}

/** What the client counted about one channel it receives (DATA, §5.7). */
export interface ChannelStats {
  frames: number;
  /** Frames that carried `gap` (§10.4 row 6, or the first push after a resume). */
  gaps: number;
  /** Sum of `dropped` over the channel's EVENT frames (§9.4). */
  dropped: number;
  lastSeq: number;
  lastT: number;
}

/** One granted publication and its meter (§10.5). */
export interface PublicationStats {
  grant: PubGrant;
  /** Samples sent in bundles. */
  sent: number;
  /** Samples refused by the client's own bucket, never sent. */
  refused: number;
  /** Samples refused because they were not valid samples for the channel. */
  invalid: number;
  /** NACK RATE_LIMITED received for this channel (a well-behaved client keeps this at 0). */
  rateLimited: number;
  /** Other NACKs of its bundles (NOT_OWNER, ESTOP_LATCHED, NOT_GRANTED, …). */
  nacked: number;
}

export interface ClientCounters {
  framesReceived: number;
  badFrames: number;
  acksSent: number;
  pingsSent: number;
  connects: number;
  resumes: number;
  newSessions: number;
  estopsSent: number;
}

export interface HubClientHandlers {
  onState?: (state: ClientState) => void;
  /** Every grant change: WELCOME's batch, answers and unsolicited GRANTs (§10.2). */
  onGrant?: (grant: GrantFrame) => void;
  onData?: (channelId: number, frame: DataFrame) => void;
  /** Every ESTOP frame received: kind ASSERT (latched) or CLEARED (§11). */
  onEstop?: (frame: EstopFrame) => void;
  onNack?: (frame: NackFrame) => void;
  onError?: (error: HubClientError) => void;
  /** Every decoded CBOR frame from the hub, before the client acts on it (for logs and tools). */
  onFrame?: (frame: Frame) => void;
}

export interface HubClientOptions extends HubClientHandlers {
  /** HELLO key 7: 1–32 bytes of UTF-8. */
  name: string;
  /** HELLO key 8: maps to a tier at the hub. */
  credential?: Uint8Array;
  subscriptions?: readonly SubWish[];
  publications?: readonly PubWish[];
  transport: TransportFactory;
  clock: ClientClock;
  /** Reconnect jitter, uniform in [0, 1). Default: a fixed-seed generator. */
  random?: RandomSource;
  /** A catalog already known; used when its hash matches WELCOME's. */
  catalog?: CatalogIndex;
  pingIntervalMs?: number;
  ownerPingIntervalMs?: number;
  ackIntervalMs?: number;
  ackEveryFrames?: number;
  requestTimeoutMs?: number;
  intentTimeoutMs?: number;
  /** Nothing heard from the hub this long: the transport is taken as lost. 0 disables. */
  silenceTimeoutMs?: number;
  /** Reconnect (with resume) after the transport is lost. Default true. */
  reconnect?: boolean;
  backoffMinMs?: number;
  backoffMaxMs?: number;
  jitterReserveMs?: number;
}

interface Config {
  pingIntervalMs: number;
  ownerPingIntervalMs: number;
  ackIntervalMs: number;
  ackEveryFrames: number;
  requestTimeoutMs: number;
  intentTimeoutMs: number;
  silenceTimeoutMs: number;
  reconnect: boolean;
  backoffMinMs: number;
  backoffMaxMs: number;
  jitterReserveMs: number;
}

type ControlType = 3 | 4 | 5;

interface PendingControl {
  readonly type: ControlType;
  readonly frame: Frame;
  readonly wished: readonly number[];
  /** Its PING fence is outstanding on the current transport. */
  fenced: boolean;
  answer: GrantFrame | null;
  refused: Refusal[];
  timer: TimerHandle | null;
  settle(answer: GrantFrame | null, refused: Refusal[], error: HubClientError | null): void;
}

interface PendingIntent {
  readonly channelId: number;
  readonly timer: TimerHandle;
  resolve(echo: EchoFrame): void;
  reject(e: HubClientError): void;
}

interface PendingText {
  readonly type: 17 | 18;
  offset: number;
  text: string;
  hash: Uint8Array | null;
  timer: TimerHandle | null;
  resolve(text: string, hash: Uint8Array | null): void;
  reject(e: HubClientError): void;
}

interface Publication {
  stats: PublicationStats;
  bucket: TokenBucket;
}

interface Waiter<T> {
  resolve(v: T): void;
  reject(e: HubClientError): void;
}

/** xorshift32: the default jitter source, so the core needs no platform randomness. */
function defaultRandom(): RandomSource {
  let s = 0x9e3779b9;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / U32;
  };
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function describe(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

function nackError(f: NackFrame, what: string): HubClientError {
  return new HubClientError(ClientErrorCode.NACK, `${what}: NACK ${nackName(f.code) ?? f.code}`, f);
}

export class HubClient implements HubClientHandlers {
  onState: ((state: ClientState) => void) | undefined;
  onGrant: ((grant: GrantFrame) => void) | undefined;
  onData: ((channelId: number, frame: DataFrame) => void) | undefined;
  onEstop: ((frame: EstopFrame) => void) | undefined;
  onNack: ((frame: NackFrame) => void) | undefined;
  onError: ((error: HubClientError) => void) | undefined;
  onFrame: ((frame: Frame) => void) | undefined;

  readonly counters: ClientCounters = {
    framesReceived: 0,
    badFrames: 0,
    acksSent: 0,
    pingsSent: 0,
    connects: 0,
    resumes: 0,
    newSessions: 0,
    estopsSent: 0,
  };

  private readonly name: string;
  private readonly credential: Uint8Array | undefined;
  private readonly factory: TransportFactory;
  private readonly clock: ClientClock;
  private readonly random: RandomSource;
  private readonly cfg: Config;
  private readonly w = new CborWriter(new Uint8Array(2 * MAX_HUB_FRAME_BYTES));
  private readonly decoder = new FrameDecoder();
  // The hub's reader of its frequent frames in canonical form (hub/fast-reader.ts): a BUNDLE it
  // takes is one the hub's ingress takes as it stands. Kept samples: none needed here.
  private readonly fast = new FastReader(1);
  // Where `send` writes a bundle: its head's room, then its samples (one over the limit at most).
  private readonly bundleW = new CborWriter(new Uint8Array(2 * MAX_FRAME_BYTES));
  private bundling = false;

  private st: ClientState = 'closed';
  private transport: ClientTransport | null = null;
  private attempt = 0;
  private backoffStep = 0;
  private everActive = false;
  private userClosed = false;
  private handshaking = false;
  private helloResumed = false;
  private connectTimer: TimerHandle | null = null;
  private handshakeTimer: TimerHandle | null = null;
  private reconnectTimer: TimerHandle | null = null;
  private pingTimer: TimerHandle | null = null;
  private ackTimer: TimerHandle | null = null;
  private waiters: Waiter<WelcomeFrame>[] = [];

  private session = 0;
  private token: Uint8Array | null = null;
  private welcomeFrame: WelcomeFrame | null = null;
  private ownerId = 0;
  private isLatched = false;
  private lastEstopFrame: EstopFrame | null = null;
  private estopSeq = 0;
  private estopOwed = false;
  private rtt = -1;
  private hubLevel = -1;
  private lastHeard = 0;

  // §5.12 key 28: every frame received on the current transport (the ESTOP frame included),
  // modulo 2^32 — the count the binding's ack window and the §10.3 ack-lag input compare
  // with the frames they handed to the transport.
  private received = 0;
  private ackedSent = 0;

  private readonly subWishes = new Map<number, SubWish>();
  private readonly pubWishes = new Map<number, PubWish>();
  private readonly subs = new Map<number, SubGrant>();
  private readonly pubs = new Map<number, Publication>();
  private readonly stats = new Map<number, ChannelStats>();

  private readonly controls: PendingControl[] = [];
  /** PINGs in flight on the current transport, oldest first; a fence names its request. */
  private readonly pings: { t0: number; fence: PendingControl | null }[] = [];
  private readonly intents = new Map<number, PendingIntent>();
  private nextRequestId = 1;
  private intentLimiter: TokenBucket;
  private readonly texts: PendingText[] = [];
  private clearWaiters: Waiter<void>[] = [];
  private estopClearTimer: TimerHandle | null = null;
  private cat: CatalogIndex | null = null;
  private readonly givenCatalog: CatalogIndex | null;

  constructor(options: HubClientOptions) {
    this.name = options.name;
    this.credential = options.credential;
    this.factory = options.transport;
    this.clock = options.clock;
    this.random = options.random ?? defaultRandom();
    this.givenCatalog = options.catalog ?? null;
    this.cfg = {
      pingIntervalMs: options.pingIntervalMs ?? PING_INTERVAL_MS,
      ownerPingIntervalMs: options.ownerPingIntervalMs ?? OWNER_PING_INTERVAL_MS,
      ackIntervalMs: options.ackIntervalMs ?? ACK_INTERVAL_MS,
      ackEveryFrames: options.ackEveryFrames ?? ACK_EVERY_FRAMES,
      requestTimeoutMs: options.requestTimeoutMs ?? REQUEST_TIMEOUT_MS,
      intentTimeoutMs: options.intentTimeoutMs ?? INTENT_TIMEOUT_MS,
      silenceTimeoutMs: options.silenceTimeoutMs ?? SILENCE_TIMEOUT_MS,
      reconnect: options.reconnect ?? true,
      backoffMinMs: options.backoffMinMs ?? BACKOFF_MIN_MS,
      backoffMaxMs: options.backoffMaxMs ?? BACKOFF_MAX_MS,
      jitterReserveMs: options.jitterReserveMs ?? JITTER_RESERVE_MS,
    };
    for (const w of options.subscriptions ?? []) this.subWishes.set(w.channelId, { ...w });
    for (const w of options.publications ?? []) this.pubWishes.set(w.channelId, { ...w });
    this.onState = options.onState;
    this.onGrant = options.onGrant;
    this.onData = options.onData;
    this.onEstop = options.onEstop;
    this.onNack = options.onNack;
    this.onError = options.onError;
    this.onFrame = options.onFrame;
    this.intentLimiter = this.reservedIntentBucket();
  }

  // ------------------------------------------------------------------ what the client knows

  get state(): ClientState {
    return this.st;
  }
  /** 0 until the first WELCOME. */
  get sessionId(): number {
    return this.session;
  }
  get welcome(): WelcomeFrame | null {
    return this.welcomeFrame;
  }
  get tier(): number {
    return this.welcomeFrame ? this.welcomeFrame.tier : -1;
  }
  /** Subscription grants by channel: what the hub really delivers, not what was wished (§10.2). */
  get grants(): ReadonlyMap<number, SubGrant> {
    return this.subs;
  }
  get pubGrants(): ReadonlyMap<number, PubGrant> {
    const out = new Map<number, PubGrant>();
    for (const [id, p] of this.pubs) out.set(id, p.stats.grant);
    return out;
  }
  /** Session id of the control owner, 0 for none, as last heard (§6.8). */
  get owner(): number {
    return this.ownerId;
  }
  get ownsControl(): boolean {
    return this.session !== 0 && this.ownerId === this.session;
  }
  get latched(): boolean {
    return this.isLatched;
  }
  get lastEstop(): EstopFrame | null {
    return this.lastEstopFrame;
  }
  /** Round trip of the last PING, ms; -1 before the first PONG. */
  get rttMs(): number {
    return this.rtt;
  }
  /**
   * The §10.3 level the hub said, in its last PONG (§5.14 `level`), that it reads this session's
   * link at: 0 clear, 1 congested, 2 or 3 severe; -1 before the first on this connection.
   */
  get linkLevel(): number {
    return this.hubLevel;
  }
  get catalog(): CatalogIndex | null {
    return this.cat;
  }
  now(): number {
    return this.clock.now();
  }
  channelStats(channelId: number): ChannelStats | undefined {
    return this.stats.get(channelId);
  }
  publication(channelId: number): PublicationStats | undefined {
    return this.pubs.get(channelId)?.stats;
  }
  /** Samples the client's own meter would let through on `channelId` right now. */
  budget(channelId: number): number {
    const p = this.pubs.get(channelId);
    return p ? Math.floor(p.bucket.tokens(this.clock.now())) : 0;
  }

  // ------------------------------------------------------------------ session (§6)

  /**
   * Opens the session: HELLO with the name, credential and wishes; resolves with WELCOME.
   * A first connection that cannot be made, or a HELLO refused for good (VERSION,
   * FORBIDDEN), rejects; NO_SLOTS and HUB_PRESSURE are retried after `retry_after_ms`
   * (§12.4). Once a session exists, losses are repaired by reconnecting with resume.
   */
  connect(): Promise<WelcomeFrame> {
    if (this.st === 'active' && this.welcomeFrame) return Promise.resolve(this.welcomeFrame);
    const p = new Promise<WelcomeFrame>((resolve, reject) => this.waiters.push({ resolve, reject }));
    if (this.st === 'closed') {
      this.userClosed = false;
      this.everActive = false;
      this.backoffStep = 0;
      this.setState('connecting');
      this.startAttempt();
    }
    return p;
  }

  /** GOODBYE (§5.15) and close; everything pending is rejected with CLOSED. */
  close(): void {
    if (this.st === 'closed' && !this.transport) return;
    this.userClosed = true;
    if (this.transport && this.st === 'active') this.sendFrame({ type: FrameType.GOODBYE });
    // §5.15: a session closed by GOODBYE is not resumable.
    this.token = null;
    this.fail(new HubClientError(ClientErrorCode.CLOSED, 'closed by the client'), false);
  }

  private startAttempt(): void {
    const id = ++this.attempt;
    this.counters.connects++;
    this.connectTimer = this.clock.setTimer(this.cfg.requestTimeoutMs, () => {
      this.connectTimer = null;
      if (id !== this.attempt || this.transport) return;
      this.attempt++;
      this.lose(new HubClientError(ClientErrorCode.TIMEOUT, 'the transport did not open in time'), this.everActive, 0);
    });
    let opening: Promise<ClientTransport>;
    try {
      opening = this.factory();
    } catch (e) {
      opening = Promise.reject(e);
    }
    opening.then(
      (t) => {
        if (id !== this.attempt || this.st === 'closed') {
          t.onFrame = null;
          t.onClose = null;
          t.close();
          return;
        }
        this.clearTimer('connectTimer');
        this.attach(t);
      },
      (e: unknown) => {
        if (id !== this.attempt || this.st === 'closed') return;
        this.clearTimer('connectTimer');
        this.attempt++;
        this.lose(new HubClientError(ClientErrorCode.TRANSPORT, `cannot open the transport: ${describe(e)}`), this.everActive, 0);
      },
    );
  }

  private attach(t: ClientTransport): void {
    this.transport = t;
    this.received = 0;
    this.ackedSent = 0;
    this.pings.length = 0;
    this.hubLevel = -1;
    this.lastHeard = this.clock.now();
    t.onFrame = (bytes) => this.onBytes(t, bytes);
    t.onClose = () => {
      if (t === this.transport) this.lose(new HubClientError(ClientErrorCode.LOST, 'the transport closed'), this.everActive, 0);
    };
    // §11.2: a stop asked for while no transport was open goes first, before HELLO.
    if (this.estopOwed) this.writeEstop();
    this.sendHello();
  }

  private sendHello(): void {
    const f: HelloFrame = { type: FrameType.HELLO, version: PROTOCOL_VERSION, name: this.name };
    if (this.credential) f.credential = this.credential;
    this.helloResumed = this.token !== null;
    if (this.token) {
      // §6.6: the session kept its wishes and grants; WELCOME re-states them.
      f.resumeToken = this.token;
    } else {
      const subs = Array.from(this.subWishes.values());
      const pubs = Array.from(this.pubWishes.values());
      if (subs.length > 0) f.subWishes = subs.slice(0, MAX_LIST);
      if (pubs.length > 0) f.pubWishes = pubs.slice(0, MAX_LIST);
    }
    this.handshaking = true;
    this.handshakeTimer = this.clock.setTimer(this.cfg.requestTimeoutMs, () => {
      this.handshakeTimer = null;
      this.lose(new HubClientError(ClientErrorCode.TIMEOUT, 'no WELCOME in time'), this.everActive, 0);
    });
    const err = this.sendFrame(f);
    if (err) this.fail(err, true);
  }

  private onWelcome(w: WelcomeFrame): void {
    if (!this.handshaking) {
      this.badFrame('WELCOME outside a handshake');
      return;
    }
    this.handshaking = false;
    this.clearTimer('handshakeTimer');
    const resumed = this.helloResumed && w.sessionId === this.session;
    const now = this.clock.now();
    if (resumed) {
      this.counters.resumes++;
    } else {
      this.counters.newSessions++;
      this.session = w.sessionId;
      this.pubs.clear();
      this.stats.clear();
      this.intentLimiter = this.reservedIntentBucket();
    }
    this.token = w.resumeToken;
    this.welcomeFrame = w;
    this.isLatched = w.latched;
    this.subs.clear();
    for (const g of w.subGrants) this.subs.set(g.channelId, g);
    this.adoptPubGrants(w.pubGrants, null, now);
    if (this.givenCatalog && this.cat === null && sameBytes(this.givenCatalog.hash, w.catalogHash)) this.cat = this.givenCatalog;
    if (this.cat && !sameBytes(this.cat.hash, w.catalogHash)) this.cat = null;
    this.backoffStep = 0;
    this.everActive = true;
    this.setOwner(w.owner);
    this.setState('active');
    this.schedulePing();
    this.scheduleAck();
    this.emit(this.onGrant, { type: FrameType.GRANT, subGrants: w.subGrants, pubGrants: w.pubGrants });
    const waiters = this.waiters;
    this.waiters = [];
    for (const x of waiters) x.resolve(w);
    // Requests whose answer the lost transport took with it are asked again; a wish replaces
    // the previous one for its channel (§5.3), so asking twice is harmless.
    const unanswered = this.controls.slice();
    if (!resumed) this.sendOverflowWishes();
    for (const c of unanswered) if (this.controls.includes(c)) this.sendControl(c);
  }

  /** Wishes beyond HELLO's 32 per list go as SUBSCRIBE / PUBLISH right after WELCOME. */
  private sendOverflowWishes(): void {
    const subs = Array.from(this.subWishes.values()).slice(MAX_LIST);
    const pubs = Array.from(this.pubWishes.values()).slice(MAX_LIST);
    for (let i = 0; i < subs.length; i += MAX_LIST) this.subscribe(subs.slice(i, i + MAX_LIST)).catch(() => undefined);
    for (let i = 0; i < pubs.length; i += MAX_LIST) this.publish(pubs.slice(i, i + MAX_LIST)).catch(() => undefined);
  }

  /**
   * The transport is gone (or given up on). `retry`: reconnect after a back-off of at least
   * `minDelayMs`; otherwise the client closes with `err`.
   */
  private lose(err: HubClientError, retry: boolean, minDelayMs: number): void {
    this.dropTransport();
    if (this.userClosed || this.st === 'closed') return;
    this.emitError(err);
    this.rejectPending(new HubClientError(ClientErrorCode.LOST, 'the transport was lost before the answer'));
    if (!retry || !this.cfg.reconnect) {
      this.fail(err, false);
      return;
    }
    this.setState(this.token ? 'stale' : 'connecting');
    const step = Math.min(this.cfg.backoffMaxMs, this.cfg.backoffMinMs * Math.pow(2, this.backoffStep));
    this.backoffStep = Math.min(this.backoffStep + 1, 30);
    const jittered = step / 2 + (step / 2) * this.random();
    this.reconnectTimer = this.clock.setTimer(Math.max(minDelayMs, jittered), () => {
      this.reconnectTimer = null;
      if (this.st === 'stale' || this.st === 'connecting') this.startAttempt();
    });
  }

  /**
   * What the session asked on a transport it no longer has: intents, texts and the clear are
   * rejected with `err` (their outcome is unknown, and intents are never re-sent); SUBSCRIBE,
   * UNSUBSCRIBE and PUBLISH wait to be asked again after the next WELCOME.
   */
  private rejectPending(err: HubClientError): void {
    for (const [, i] of this.intents) {
      this.clock.clearTimer(i.timer);
      i.reject(err);
    }
    this.intents.clear();
    this.rejectTexts(err);
    this.rejectClear(new HubClientError(err.code, 'the transport was lost before the clear'));
    for (const c of this.controls) {
      c.fenced = false;
      c.answer = null;
      c.refused = [];
    }
  }

  /** Closes the client for good: every pending promise is rejected with `err`. */
  private fail(err: HubClientError, report: boolean): void {
    this.dropTransport();
    this.clearTimer('reconnectTimer');
    this.clearTimer('connectTimer');
    this.attempt++;
    if (report) this.emitError(err);
    const waiters = this.waiters;
    this.waiters = [];
    for (const x of waiters) x.reject(err);
    for (const [, i] of this.intents) {
      this.clock.clearTimer(i.timer);
      i.reject(err);
    }
    this.intents.clear();
    const controls = this.controls.splice(0, this.controls.length);
    for (const c of controls) c.settle(null, [], err);
    this.rejectTexts(err);
    this.rejectClear(err);
    this.setState('closed');
  }

  private dropTransport(): void {
    this.handshaking = false;
    this.clearTimer('handshakeTimer');
    this.clearTimer('pingTimer');
    this.clearTimer('ackTimer');
    this.pings.length = 0;
    const t = this.transport;
    if (!t) return;
    this.transport = null;
    t.onFrame = null;
    t.onClose = null;
    t.close();
  }

  private clearTimer(which: 'connectTimer' | 'handshakeTimer' | 'reconnectTimer' | 'pingTimer' | 'ackTimer'): void {
    const h = this[which];
    if (h !== null) {
      this.clock.clearTimer(h);
      this[which] = null;
    }
  }

  private setState(s: ClientState): void {
    if (this.st === s) return;
    this.st = s;
    this.emit(this.onState, s);
  }

  // ------------------------------------------------------------------ grants (§6.4, §6.7, §10.2)

  /** SUBSCRIBE: resolves with the GRANT that answers it and the wishes refused. */
  subscribe(wishes: readonly SubWish[]): Promise<SubscribeAnswer> {
    const frame: Frame = { type: FrameType.SUBSCRIBE, wishes: wishes.map((w) => ({ ...w })) };
    return this.control(frame, wishes.map((w) => w.channelId)).then(([grant, refused]) => {
      const wanted = new Set(wishes.map((w) => w.channelId));
      return { grant, granted: (grant.subGrants ?? []).filter((g) => wanted.has(g.channelId)), refused };
    });
  }

  /** UNSUBSCRIBE: resolves with the GRANT that answers it (the subscriptions left). */
  unsubscribe(channelIds: readonly number[]): Promise<GrantFrame> {
    return this.control({ type: FrameType.UNSUBSCRIBE, channels: channelIds.slice() }, channelIds).then(([grant]) => grant);
  }

  /** PUBLISH: resolves with the publications granted (possibly none, §10.2) and those refused. */
  publish(wishes: readonly PubWish[]): Promise<PublishAnswer> {
    const frame: Frame = { type: FrameType.PUBLISH, wishes: wishes.map((w) => ({ ...w })) };
    return this.control(frame, wishes.map((w) => w.channelId)).then(([grant, refused]) => ({
      grant,
      granted: grant.pubGrants ?? [],
      refused,
    }));
  }

  private control(frame: Frame, wished: readonly number[]): Promise<[GrantFrame, Refusal[]]> {
    if (this.st === 'closed') return Promise.reject(new HubClientError(ClientErrorCode.NOT_CONNECTED, 'the client is closed'));
    const invalid = this.check(frame);
    if (invalid) return Promise.reject(invalid);
    // The wish set is what a new session asks for in its HELLO (§6.6: after UNKNOWN_SESSION).
    if (frame.type === FrameType.SUBSCRIBE) for (const w of frame.wishes) this.subWishes.set(w.channelId, { ...w });
    else if (frame.type === FrameType.UNSUBSCRIBE) for (const id of frame.channels) this.subWishes.delete(id);
    else if (frame.type === FrameType.PUBLISH) for (const w of frame.wishes) this.pubWishes.set(w.channelId, { ...w });
    return new Promise((resolve, reject) => {
      const c: PendingControl = {
        type: frame.type as ControlType,
        frame,
        wished,
        fenced: false,
        answer: null,
        refused: [],
        timer: null,
        settle: (answer, refused, error) => {
          if (c.timer !== null) this.clock.clearTimer(c.timer);
          c.timer = null;
          if (error) reject(error);
          else if (answer) resolve([answer, refused]);
          else reject(new HubClientError(ClientErrorCode.BAD_FRAME, 'the hub did not answer with a GRANT'));
        },
      };
      c.timer = this.clock.setTimer(this.cfg.requestTimeoutMs, () => {
        c.timer = null;
        this.finishControl(c, c.answer ? null : new HubClientError(ClientErrorCode.TIMEOUT, 'no GRANT in time'));
      });
      this.controls.push(c);
      if (this.st === 'active') this.sendControl(c);
    });
  }

  /**
   * The frame, then a PING as a fence (§5.13): the hub answers in order, so everything
   * between the frame and the PONG (the GRANT, then any NACK refusing a wish, §6.4) is the
   * answer, and no unsolicited GRANT sent before the hub read the request is mistaken for it.
   */
  private sendControl(c: PendingControl): void {
    if (this.sendFrame(c.frame)) return;
    c.fenced = true;
    this.sendPing(c);
  }

  private finishControl(c: PendingControl, error: HubClientError | null): void {
    const i = this.controls.indexOf(c);
    if (i >= 0) this.controls.splice(i, 1);
    for (const p of this.pings) if (p.fence === c) p.fence = null;
    if (!error && c.type !== FrameType.UNSUBSCRIBE) {
      for (const r of c.refused) {
        if (c.type === FrameType.SUBSCRIBE) this.subWishes.delete(r.channelId);
        else this.pubWishes.delete(r.channelId);
      }
    }
    c.settle(c.answer, c.refused, error);
  }

  /**
   * The oldest request of these kinds whose answer is still being collected; `unanswered`:
   * skip those that have their GRANT already (a PUBLISH is answered exactly once, §6.7).
   */
  private collecting(types: readonly number[], unanswered = false): PendingControl | undefined {
    for (const c of this.controls) if (c.fenced && types.includes(c.type) && !(unanswered && c.answer)) return c;
    return undefined;
  }

  private onGrantFrame(f: GrantFrame): void {
    const now = this.clock.now();
    if (f.subGrants) {
      // Key 35 is the complete set: a channel not listed is not subscribed (§5.6).
      this.subs.clear();
      for (const g of f.subGrants) this.subs.set(g.channelId, g);
      const c = this.collecting([FrameType.SUBSCRIBE, FrameType.UNSUBSCRIBE]);
      if (c) c.answer = f;
    }
    if (f.pubGrants) {
      const c = this.collecting([FrameType.PUBLISH], true);
      if (c) c.answer = f;
      this.adoptPubGrants(f.pubGrants, c ? c.wished : [], now);
    }
    this.emit(this.onGrant, f);
  }

  /**
   * §10.5 on the client: one bucket per granted publication, refill = the granted rate,
   * capacity = the granted burst (which is the granted rate when none was asked), less the
   * jitter reserve. A re-grant keeps the tokens held, as the hub's bucket does.
   * `answered`: the channels of the PUBLISH this answers (null: the full set, from WELCOME).
   */
  private adoptPubGrants(grants: readonly PubGrant[], answered: readonly number[] | null, now: number): void {
    const listed = new Set<number>();
    for (const g of grants) {
      listed.add(g.channelId);
      const rate = g.grantedRateHz;
      const capacity = Math.max(0, (g.burst > 0 ? g.burst : rate) - (rate * this.cfg.jitterReserveMs) / 1000);
      const p = this.pubs.get(g.channelId);
      if (p) {
        p.bucket.configure(rate, capacity, now);
        p.stats.grant = g;
      } else {
        this.pubs.set(g.channelId, {
          stats: { grant: g, sent: 0, refused: 0, invalid: 0, rateLimited: 0, nacked: 0 },
          bucket: new TokenBucket(rate, capacity, now),
        });
      }
    }
    const gone = answered ?? Array.from(this.pubs.keys());
    for (const id of gone) if (!listed.has(id)) this.pubs.delete(id);
  }

  // ------------------------------------------------------------------ publishing (§5.8, §10.5)

  /**
   * Sends samples `[t, v1, …]` (t: the client's clock, ms, an unsigned integer) on a granted
   * publication, in bundles of at most 32 that fit the session's mtu. Each bundle takes one
   * token per sample from the client's own bucket; a bundle the bucket cannot pay for is
   * refused here, whole, and never sent. Returns the number of samples sent.
   */
  send(channelId: number, samples: readonly (readonly number[])[]): number {
    const p = this.pubs.get(channelId);
    if (!p) return 0;
    const stats = p.stats;
    if (this.st !== 'active' || !this.transport) {
      stats.refused += samples.length;
      return 0;
    }
    const width = this.cat?.byId(channelId)?.fieldCount;
    const frameLimit = this.frameLimit();
    const limit = frameLimit - BUNDLE_OVERHEAD_BYTES;
    const now = this.clock.now();
    // Each sample is written once, straight into its bundle after room for the bundle's head
    // (sendBundle writes the head there). A send made from inside another (a handler the
    // transport calls while it takes a bundle) writes into a writer of its own.
    const own = this.bundling;
    const bw = own ? new CborWriter(new Uint8Array(this.bundleW.buf.length)) : this.bundleW;
    this.bundling = true;
    try {
      let sent = 0;
      let n = 0;
      bw.pos = BUNDLE_OVERHEAD_BYTES;
      for (let k = 0; k < samples.length; k++) {
        const s = samples[k] as readonly number[];
        if (!validSample(s, width)) {
          stats.invalid++;
          continue;
        }
        const at = bw.pos;
        bw.array(s.length);
        for (let i = 0; i < s.length; i++) bw.number(s[i] as number);
        const size = bw.pos - at;
        if (size > limit) {
          stats.invalid++;
          bw.pos = at;
          continue;
        }
        // A full bundle, or one this sample would take past the limit, goes first; the sample
        // then starts the next one.
        if (n === MAX_BUNDLE_SAMPLES || bw.pos - BUNDLE_OVERHEAD_BYTES > limit) {
          sent += this.sendBundle(p, channelId, bw.buf, at, n, frameLimit, now);
          bw.buf.copyWithin(BUNDLE_OVERHEAD_BYTES, at, at + size);
          bw.pos = BUNDLE_OVERHEAD_BYTES + size;
          n = 0;
        }
        n++;
      }
      if (n > 0) sent += this.sendBundle(p, channelId, bw.buf, bw.pos, n, frameLimit, now);
      return sent;
    } finally {
      this.bundling = own;
    }
  }

  /**
   * The bundle of the `n` samples written in b[BUNDLE_OVERHEAD_BYTES, end): its head (map(3)
   * {0: 8, 3: channel_id, 6: [n samples]}, as hub/frame-encode.ts writes a BUNDLE) written to
   * end where they begin, checked, and sent if the publication's bucket pays for it. Returns the
   * samples sent.
   */
  private sendBundle(p: Publication, channelId: number, b: Uint8Array, end: number, n: number, frameLimit: number, now: number): number {
    const stats = p.stats;
    if (!p.bucket.take(n, now)) {
      stats.refused += n;
      return 0;
    }
    let h = BUNDLE_OVERHEAD_BYTES;
    if (n < 24) b[--h] = 0x80 | n;
    else {
      b[--h] = n;
      b[--h] = 0x98;
    }
    b[--h] = Key.VALUES;
    // A channel id is 1–255 (a publication the hub granted, §5.4).
    if (channelId < 24) b[--h] = channelId;
    else {
      b[--h] = channelId;
      b[--h] = 0x18;
    }
    b[--h] = Key.CHANNEL_ID;
    b[--h] = FrameType.BUNDLE;
    b[--h] = Key.TYPE;
    b[--h] = 0xa3;
    const t = this.transport;
    const err = t ? this.checkBytes(FrameType.BUNDLE, b, h, end, frameLimit) : new HubClientError(ClientErrorCode.NOT_CONNECTED, 'no transport');
    if (err !== null || !t) {
      stats.invalid += n;
      if (err) this.emitError(err);
      return 0;
    }
    t.send(b.slice(h, end));
    stats.sent += n;
    return n;
  }

  // ------------------------------------------------------------------ intents (§9.3)

  /**
   * INTENT on an INTENT channel. Resolves with the ECHO (its `result` is 0 when the command
   * was carried out); rejects on a NACK carrying its request id, on timeout, and when the
   * transport is lost first (the command may or may not have run: it is never re-sent).
   * The client keeps to the hub's intent bucket (20/s, depth 20) itself.
   */
  intent(channelId: number, args?: readonly Arg[]): Promise<EchoFrame> {
    if (this.st !== 'active' || !this.transport) {
      return Promise.reject(new HubClientError(ClientErrorCode.NOT_CONNECTED, 'no active session'));
    }
    if (!this.intentLimiter.take(1, this.clock.now())) {
      return Promise.reject(new HubClientError(ClientErrorCode.REFUSED, 'over the intent budget (§9.3): not sent'));
    }
    const requestId = this.nextRequestId;
    this.nextRequestId = (this.nextRequestId + 1) % U32;
    const f: Frame = { type: FrameType.INTENT, channelId, requestId };
    if (args !== undefined) f.args = args.slice();
    const err = this.sendFrame(f);
    if (err) return Promise.reject(err);
    return new Promise((resolve, reject) => {
      const timer = this.clock.setTimer(this.cfg.intentTimeoutMs, () => {
        if (this.intents.delete(requestId)) reject(new HubClientError(ClientErrorCode.TIMEOUT, `no ECHO for request ${requestId}`));
      });
      this.intents.set(requestId, { channelId, timer, resolve, reject });
    });
  }

  /** The catalog intent `take_control` (§6.8); afterwards the client pings at the owner's pace. */
  async takeControl(): Promise<EchoFrame> {
    return this.intent(await this.intentChannel('take_control'));
  }

  async releaseControl(): Promise<EchoFrame> {
    return this.intent(await this.intentChannel('release_control'));
  }

  /**
   * The catalog intent `arm` (§11.2): enables the drives. After an ESTOP and its clear the hub
   * refuses the owner's motion with NOT_ARMED until this is carried out; only the owner may arm.
   */
  async arm(): Promise<EchoFrame> {
    return this.intent(await this.intentChannel('arm'));
  }

  /** The catalog intent `disarm`: the owner's disarm also disarms the hub (§11.2). */
  async disarm(): Promise<EchoFrame> {
    return this.intent(await this.intentChannel('disarm'));
  }

  private async intentChannel(name: string): Promise<number> {
    const cat = this.cat ?? (await this.fetchCatalog());
    const ch = cat.byName(name);
    if (!ch) throw new HubClientError(ClientErrorCode.REFUSED, `the catalog has no channel ${name}`);
    return ch.id;
  }

  private onEcho(f: EchoFrame): void {
    const i = this.intents.get(f.requestId);
    if (!i) return;
    this.intents.delete(f.requestId);
    this.clock.clearTimer(i.timer);
    if (f.result === 0) {
      const name = this.cat?.byId(f.channelId)?.name;
      if (name === 'take_control') this.setOwner(this.session);
      else if (name === 'release_control' && this.ownsControl) this.setOwner(0);
    }
    i.resolve(f);
  }

  // ------------------------------------------------------------------ ESTOP (§11)

  /**
   * Writes the 12-byte ESTOP frame (ASSERT, source client, origin = the session id, this
   * client's next ESTOP sequence) ahead of anything the transport holds. True when it was
   * written now; false when no transport is open, in which case it goes first thing on the
   * next one (stopping late is still stopping).
   */
  estop(): boolean {
    this.estopSeq = (this.estopSeq + 1) & 0xffff;
    // Owed until a transport takes it, also before connect() and after close(): a stop asked
    // for is never dropped, it goes first on the next connection (§11.2).
    this.estopOwed = true;
    if (!this.transport) return false;
    this.writeEstop();
    return true;
  }

  private writeEstop(): void {
    const t = this.transport;
    if (!t) return;
    const b = new Uint8Array(ESTOP_FRAME_BYTES);
    encodeEstop(b, 0, EstopKind.ASSERT, EstopSource.CLIENT, ESTOP_FLAG_LATCHED, this.session, this.estopSeq);
    this.estopOwed = false;
    this.counters.estopsSent++;
    if (t.sendAhead) t.sendAhead(b);
    else t.send(b);
  }

  /**
   * ESTOP_CLEAR (§5.16) naming the ESTOP last seen. Resolves when the hub announces the clear
   * (an ESTOP frame of kind CLEARED); rejects on its NACK (FORBIDDEN, NOT_OWNER,
   * ESTOP_LATCHED while a source still asserts) or on timeout.
   */
  clearEstop(): Promise<void> {
    if (this.st !== 'active' || !this.transport) {
      return Promise.reject(new HubClientError(ClientErrorCode.NOT_CONNECTED, 'no active session'));
    }
    const last = this.lastEstopFrame;
    const err = this.sendFrame(
      last && last.kind === EstopKind.ASSERT ? { type: FrameType.ESTOP_CLEAR, estopSeq: last.seq } : { type: FrameType.ESTOP_CLEAR },
    );
    if (err) return Promise.reject(err);
    return new Promise((resolve, reject) => {
      this.clearWaiters.push({ resolve, reject });
      if (this.estopClearTimer === null) {
        this.estopClearTimer = this.clock.setTimer(this.cfg.requestTimeoutMs, () => {
          this.estopClearTimer = null;
          this.rejectClear(new HubClientError(ClientErrorCode.TIMEOUT, 'no answer to ESTOP_CLEAR in time'));
        });
      }
    });
  }

  private settleClear(err: HubClientError | null): void {
    if (this.estopClearTimer !== null) this.clock.clearTimer(this.estopClearTimer);
    this.estopClearTimer = null;
    const list = this.clearWaiters;
    this.clearWaiters = [];
    for (const x of list) {
      if (err) x.reject(err);
      else x.resolve();
    }
  }

  private rejectClear(err: HubClientError): void {
    if (this.clearWaiters.length > 0 || this.estopClearTimer !== null) this.settleClear(err);
  }

  private onEstopBytes(bytes: Uint8Array): void {
    let e: EstopFrame;
    try {
      e = decodeEstop(bytes, 0, bytes.length);
    } catch (err) {
      if (err instanceof EstopFrameError) this.badFrame(`ESTOP frame: ${err.codeName}`);
      else throw err;
      return;
    }
    this.lastEstopFrame = e;
    this.isLatched = e.kind === EstopKind.ASSERT;
    this.emit(this.onEstop, e);
    if (e.kind === EstopKind.CLEARED) this.settleClear(null);
  }

  // ------------------------------------------------------------------ catalog and health (§5.17, §5.18)

  /**
   * Fetches the catalog text in chunks, checks its FNV-1a hash against the response's and
   * WELCOME's (§9.2), validates it and indexes it. Cached until a WELCOME names another hash.
   */
  async fetchCatalog(): Promise<CatalogIndex> {
    if (this.cat) return this.cat;
    const [text, hash] = await this.fetchText(FrameType.CATALOG);
    const own = fnv1a64Utf8(text);
    const expected = this.welcomeFrame?.catalogHash;
    if (!hash || !sameBytes(own, hash) || (expected && !sameBytes(own, expected))) {
      throw new HubClientError(ClientErrorCode.CATALOG, 'the catalog text does not match its hash');
    }
    let index: CatalogIndex;
    try {
      index = loadCatalog(JSON.parse(text));
    } catch (e) {
      throw new HubClientError(ClientErrorCode.CATALOG, `the catalog does not validate: ${describe(e)}`);
    }
    this.cat = index;
    return index;
  }

  /** The health report (JSON text, `metrics.version: 1`); maintainer tier only (§5.18). */
  async health(): Promise<string> {
    const [text] = await this.fetchText(FrameType.HEALTH);
    return text;
  }

  private fetchText(type: 17 | 18): Promise<[string, Uint8Array | null]> {
    if (this.st !== 'active' || !this.transport) {
      return Promise.reject(new HubClientError(ClientErrorCode.NOT_CONNECTED, 'no active session'));
    }
    return new Promise((resolve, reject) => {
      const req: PendingText = {
        type,
        offset: 0,
        text: '',
        hash: null,
        timer: null,
        resolve: (text, hash) => resolve([text, hash]),
        reject,
      };
      this.texts.push(req);
      // One request of a type in flight at a time: responses carry no request id.
      if (this.texts.filter((x) => x.type === type).length === 1) this.askText(req);
    });
  }

  private askText(req: PendingText): void {
    if (req.timer !== null) this.clock.clearTimer(req.timer);
    req.timer = this.clock.setTimer(this.cfg.requestTimeoutMs, () => {
      req.timer = null;
      this.endText(req, new HubClientError(ClientErrorCode.TIMEOUT, 'no CATALOG/HEALTH response in time'));
    });
    const f: CatalogFrame | HealthFrame = req.offset > 0 ? { type: req.type, offset: req.offset } : { type: req.type };
    const err = this.sendFrame(f);
    if (err) this.endText(req, err);
  }

  private endText(req: PendingText, err: HubClientError | null): void {
    if (req.timer !== null) this.clock.clearTimer(req.timer);
    req.timer = null;
    const i = this.texts.indexOf(req);
    if (i >= 0) this.texts.splice(i, 1);
    if (err) req.reject(err);
    else req.resolve(req.text, req.hash);
    const next = this.texts.find((x) => x.type === req.type);
    if (next && this.transport) this.askText(next);
  }

  private rejectTexts(err: HubClientError): void {
    const list = this.texts.splice(0, this.texts.length);
    for (const r of list) {
      if (r.timer !== null) this.clock.clearTimer(r.timer);
      r.timer = null;
      r.reject(err);
    }
  }

  private onText(f: CatalogFrame | HealthFrame): void {
    const req = this.texts.find((x) => x.type === f.type);
    if (!req || f.text === undefined) {
      this.badFrame(`unexpected ${f.type === FrameType.CATALOG ? 'CATALOG' : 'HEALTH'} frame`);
      return;
    }
    if ((f.offset ?? 0) !== req.offset) {
      this.endText(req, new HubClientError(ClientErrorCode.BAD_FRAME, `chunk at offset ${f.offset ?? 0}, asked for ${req.offset}`));
      return;
    }
    if ('catalogHash' in f && f.catalogHash) {
      if (req.hash && !sameBytes(req.hash, f.catalogHash)) {
        this.endText(req, new HubClientError(ClientErrorCode.CATALOG, 'the catalog changed while it was being fetched'));
        return;
      }
      req.hash = f.catalogHash;
    }
    req.text += f.text;
    // §5.17: offsets count bytes of UTF-8; ask again until `total` bytes have come.
    const chunk = utf8ByteLength(f.text);
    req.offset += chunk;
    if (f.total === undefined || req.offset >= f.total) this.endText(req, null);
    else if (chunk === 0) this.endText(req, new HubClientError(ClientErrorCode.BAD_FRAME, 'an empty chunk before the end'));
    else this.askText(req);
  }

  // ------------------------------------------------------------------ liveness and ACKs (§5.12, §5.13, §13.2)

  private schedulePing(): void {
    this.clearTimer('pingTimer');
    if (this.st !== 'active') return;
    const every = this.ownsControl ? this.cfg.ownerPingIntervalMs : this.cfg.pingIntervalMs;
    this.pingTimer = this.clock.setTimer(every, () => {
      this.pingTimer = null;
      if (this.st !== 'active' || !this.transport) return;
      const silent = this.clock.now() - this.lastHeard;
      if (this.cfg.silenceTimeoutMs > 0 && silent >= this.cfg.silenceTimeoutMs) {
        this.lose(new HubClientError(ClientErrorCode.LOST, `nothing heard from the hub for ${silent} ms`), true, 0);
        return;
      }
      this.sendPing(null);
      this.schedulePing();
    });
  }

  private sendPing(fence: PendingControl | null): void {
    const t0 = Math.max(0, Math.floor(this.clock.now()));
    if (this.sendFrame({ type: FrameType.PING, t0 })) return;
    this.counters.pingsSent++;
    this.pings.push({ t0, fence });
  }

  private onPong(t0: number): void {
    // PONGs come back in the order of the PINGs; one that matches none is not ours.
    let i = 0;
    while (i < this.pings.length && (this.pings[i] as { t0: number }).t0 !== t0) i++;
    if (i === this.pings.length) return;
    const done = this.pings.splice(0, i + 1);
    this.rtt = this.clock.now() - t0;
    for (const p of done) if (p.fence && this.controls.includes(p.fence)) this.finishControl(p.fence, null);
  }

  private scheduleAck(): void {
    this.clearTimer('ackTimer');
    if (this.st !== 'active') return;
    this.ackTimer = this.clock.setTimer(this.cfg.ackIntervalMs, () => {
      this.ackTimer = null;
      if (this.received !== this.ackedSent) this.sendAck();
      this.scheduleAck();
    });
  }

  private sendAck(): void {
    const acked = this.received;
    if (this.sendFrame({ type: FrameType.ACK, acked })) return;
    this.ackedSent = acked;
    this.counters.acksSent++;
  }

  private setOwner(id: number): void {
    const owned = this.ownsControl;
    this.ownerId = id;
    // §6.8: the owner must be heard within deadman_ms; switch the PING pace at once.
    if (owned !== this.ownsControl && this.st === 'active') this.schedulePing();
  }

  // ------------------------------------------------------------------ receiving

  private onBytes(t: ClientTransport, bytes: Uint8Array): void {
    if (t !== this.transport) return;
    this.lastHeard = this.clock.now();
    this.counters.framesReceived++;
    this.countFrame();
    try {
      this.receive(bytes);
    } catch (e) {
      // Never thrown back into the transport: whatever went wrong is reported.
      this.badFrame(`internal error on a frame: ${describe(e)}`);
    }
  }

  /** §13.2: one more frame received; an ACK after every 32. */
  private countFrame(): void {
    this.received = (this.received + 1) % U32;
    if (this.st !== 'active') return;
    if ((this.received - this.ackedSent + U32) % U32 >= this.cfg.ackEveryFrames) this.sendAck();
  }

  private receive(bytes: Uint8Array): void {
    if (isEstopFrame(bytes, 0)) {
      this.onEstopBytes(bytes);
      return;
    }
    let f: Frame;
    try {
      f = this.decoder.decode(bytes, 0, bytes.length, MAX_HUB_FRAME_BYTES);
    } catch (e) {
      if (e instanceof FrameError || e instanceof CborError) {
        this.badFrame(`undecodable frame: ${e.message}`);
        return;
      }
      throw e;
    }
    if (((FRAME_DIRECTION[f.type] ?? 0) & FROM_HUB) === 0) {
      this.badFrame(`frame type ${f.type} is never sent by a hub`);
      return;
    }
    this.emit(this.onFrame, f);
    switch (f.type) {
      case FrameType.WELCOME:
        this.onWelcome(f);
        return;
      case FrameType.GRANT:
        this.onGrantFrame(f);
        return;
      case FrameType.DATA:
        this.onDataFrame(f);
        return;
      case FrameType.ECHO:
        this.onEcho(f);
        return;
      case FrameType.NACK:
        this.onNackFrame(f);
        return;
      case FrameType.PING:
        this.sendFrame({ type: FrameType.PONG, t0: f.t0, t1: Math.max(0, Math.floor(this.clock.now())) });
        return;
      case FrameType.PONG:
        if (f.level !== undefined && this.session !== 0) this.hubLevel = f.level;
        this.onPong(f.t0);
        return;
      case FrameType.GOODBYE:
        this.onGoodbye(f.reason ?? GoodbyeReason.NORMAL);
        return;
      case FrameType.CATALOG:
      case FrameType.HEALTH:
        this.onText(f);
        return;
    }
  }

  private onDataFrame(f: DataFrame): void {
        let s = this.stats.get(f.channelId);
    if (!s) {
      s = { frames: 0, gaps: 0, dropped: 0, lastSeq: -1, lastT: -1 };
      this.stats.set(f.channelId, s);
    }
    s.frames++;
    if (f.gap) s.gaps++;
    if (f.dropped) s.dropped += f.dropped;
    s.lastSeq = f.seq;
    s.lastT = f.t;
    // §6.8: ownership is announced on the critical control-owner channel.
    if (this.cat && this.cat.byId(f.channelId)?.name === 'control-owner' && f.values.length > 0) {
      const v = f.values[0] as number;
      if (Number.isInteger(v) && v >= 0) this.setOwner(v);
    }
    this.emit(this.onData, f.channelId, f);
  }

  private onNackFrame(f: NackFrame): void {
    this.emit(this.onNack, f);
    if (f.frameType === FrameType.HELLO && this.handshaking) {
      this.onHelloRefused(f);
      return;
    }
    if (f.code === Nack.NOT_READY && this.st === 'active' && !this.handshaking) {
      this.resumeInPlace();
      return;
    }
    if (f.requestId !== undefined && (f.frameType === FrameType.INTENT || f.frameType === undefined)) {
      const i = this.intents.get(f.requestId);
      if (i) {
        this.intents.delete(f.requestId);
        this.clock.clearTimer(i.timer);
        if (f.code === Nack.NOT_OWNER && this.ownsControl) this.setOwner(0);
        i.reject(nackError(f, `INTENT ${f.requestId}`));
        return;
      }
    }
    switch (f.frameType) {
      case FrameType.SUBSCRIBE:
      case FrameType.UNSUBSCRIBE:
      case FrameType.PUBLISH: {
        const c = this.collecting([f.frameType]);
        if (c && f.channelId !== undefined) c.refused.push({ channelId: f.channelId, code: f.code });
        return;
      }
      case FrameType.BUNDLE: {
        const p = f.channelId !== undefined ? this.pubs.get(f.channelId) : undefined;
        if (p) {
          if (f.code === Nack.RATE_LIMITED) p.stats.rateLimited++;
          else p.stats.nacked++;
        }
        if (f.code === Nack.NOT_OWNER && this.ownsControl) this.setOwner(0);
        return;
      }
      case FrameType.ESTOP_CLEAR:
        this.rejectClear(nackError(f, 'ESTOP_CLEAR'));
        return;
      case FrameType.CATALOG:
      case FrameType.HEALTH: {
        const req = this.texts.find((x) => x.type === f.frameType);
        if (!req) return;
        if (isRetryable(f.code)) {
          // §12.4: not before retry_after_ms.
          if (req.timer !== null) this.clock.clearTimer(req.timer);
          req.timer = this.clock.setTimer(f.retryAfterMs ?? this.cfg.backoffMinMs, () => {
            req.timer = null;
            if (this.transport && this.texts.includes(req)) this.askText(req);
          });
        } else {
          this.endText(req, nackError(f, f.frameType === FrameType.CATALOG ? 'CATALOG' : 'HEALTH'));
        }
        return;
      }
    }
  }

  /**
   * NOT_READY while the session is active: the hub no longer ties this transport to the session.
   * A connectionless binding (ESP-NOW) dropped the peer as silent, made the session STALE (§6.6)
   * and took the peer back as a new transport when the air healed; nothing tells the client but
   * this answer. Resume at once, on the same transport, with the token (§6.6); what was asked on
   * it meanwhile is lost as after any transport loss, and requests are asked again after WELCOME.
   */
  private resumeInPlace(): void {
    this.clearTimer('pingTimer');
    this.clearTimer('ackTimer');
    this.pings.length = 0;
    this.emitError(new HubClientError(ClientErrorCode.LOST, 'NACK NOT_READY: the hub lost this transport’s session; resuming'));
    this.rejectPending(new HubClientError(ClientErrorCode.LOST, 'the session was detached from the transport before the answer'));
    this.setState(this.token ? 'stale' : 'connecting');
    this.sendHello();
  }

  private onHelloRefused(f: NackFrame): void {
    this.handshaking = false;
    this.clearTimer('handshakeTimer');
    if (f.code === Nack.UNKNOWN_SESSION) {
      // §6.6: the session is gone (expired, reclaimed): open a new one with the wishes.
      this.token = null;
      this.subs.clear();
      this.pubs.clear();
      this.setOwner(0);
      this.setState('connecting');
      this.sendHello();
      return;
    }
    const err = nackError(f, 'HELLO');
    if (isRetryable(f.code)) this.lose(err, true, f.retryAfterMs ?? 0);
    else this.fail(err, true);
  }

  private onGoodbye(reason: number): void {
    if (reason === GoodbyeReason.SHUTDOWN) {
      // The hub is stopping: its sessions go with it. Come back as a new session.
      this.token = null;
      this.lose(new HubClientError(ClientErrorCode.LOST, 'GOODBYE: the hub is shutting down'), true, 0);
      return;
    }
    this.token = null;
    this.fail(new HubClientError(ClientErrorCode.CLOSED, `GOODBYE from the hub (reason ${reason})`), true);
  }

  // ------------------------------------------------------------------ sending

  /** Largest frame the client may send now: 1024 (§7), the WELCOME's mtu, the transport's. */
  private frameLimit(): number {
    let limit = MAX_FRAME_BYTES;
    if (this.welcomeFrame && this.welcomeFrame.mtu < limit) limit = this.welcomeFrame.mtu;
    const t = this.transport;
    if (t && t.maxFrameBytes !== undefined && t.maxFrameBytes < limit) limit = t.maxFrameBytes;
    return limit;
  }

  /**
   * Encodes and validates with the hub's own decoder before anything is sent: a frame the
   * hub would refuse as MALFORMED or TOO_LARGE (and count towards closing the session,
   * §12.5) is refused here instead.
   */
  private check(f: Frame): HubClientError | null {
    const w = this.w;
    w.reset();
    try {
      encodeFrame(f, w);
    } catch (e) {
      return new HubClientError(ClientErrorCode.REFUSED, `not a valid frame, not sent: ${describe(e)}`);
    }
    return this.checkBytes(f.type, w.buf, 0, w.pos, this.frameLimit());
  }

  /** `check` of a frame of `type` encoded in b[start, end). */
  private checkBytes(type: number, b: Uint8Array, start: number, end: number, limit: number): HubClientError | null {
    if (end - start > limit) return new HubClientError(ClientErrorCode.REFUSED, `a frame of ${end - start} bytes (the limit is ${limit}): not sent`);
    // A BUNDLE (the frame sent most, up to 50 a second) in the canonical form the hub's ingress
    // reads first is one the hub takes: the whole decoder only judges any other frame, and a
    // BUNDLE that form does not cover (samples of unequal lengths, say), to say what is wrong.
    if (type === FrameType.BUNDLE && this.fast.read(b, start, end) === FrameType.BUNDLE) return null;
    try {
      this.decoder.decode(b, start, end, limit);
    } catch (e) {
      return new HubClientError(ClientErrorCode.REFUSED, `not a valid frame, not sent: ${describe(e)}`);
    }
    return null;
  }

  /** Null when sent; the refusal otherwise (also when there is no transport). */
  private sendFrame(f: Frame): HubClientError | null {
    const t = this.transport;
    if (!t) return new HubClientError(ClientErrorCode.NOT_CONNECTED, 'no transport');
    const err = this.check(f);
    if (err) return err;
    t.send(this.w.buf.slice(0, this.w.pos));
    return null;
  }

  // ------------------------------------------------------------------ callbacks

  private badFrame(message: string): void {
    this.counters.badFrames++;
    this.emitError(new HubClientError(ClientErrorCode.BAD_FRAME, message));
  }

  private emitError(err: HubClientError): void {
    const h = this.onError;
    if (!h) return;
    try {
      h(err);
    } catch {
      // An error handler that throws has nowhere left to report to.
    }
  }

  private emit<A extends unknown[]>(h: ((...a: A) => void) | undefined, ...args: A): void {
    if (!h) return;
    try {
      h(...args);
    } catch (e) {
      this.emitError(new HubClientError(ClientErrorCode.HANDLER, `a handler threw: ${describe(e)}`));
    }
  }

  private reservedIntentBucket(): TokenBucket {
    const b = intentBucket(this.clock.now());
    const rate = b.ratePerS;
    b.configure(rate, b.capacity - (rate * this.cfg.jitterReserveMs) / 1000, this.clock.now());
    return b;
  }
}

/** `[t, v1, …]`: t an unsigned integer, every value finite, and the catalog's width when known. */
function validSample(s: readonly number[], width: number | undefined): boolean {
  if (!Array.isArray(s) || s.length < 1 || s.length > MAX_SAMPLE_NUMBERS) return false;
  if (width !== undefined && s.length !== width + 1) return false;
  const t = s[0] as number;
  if (!Number.isSafeInteger(t) || t < 0) return false;
  for (let i = 1; i < s.length; i++) if (!Number.isFinite(s[i] as number)) return false;
  return true;
}
