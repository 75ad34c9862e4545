// The fleet uplink (docs/fleet.md): one MQTT session to a site's broker, publishing this hub's
// status, health, telemetry, events and safety under `fleet/<site>/<hub-id>/`, and taking the
// signed fleet-wide stop from `fleet/<site>/estop`. Platform-free: the MQTT client comes in as an
// `MqttPort` (uplink/node.ts over the `mqtt` package on the host).
//
// Inside the hub the uplink is a subscriber like any other. It attaches a TcpLink (the Wi-Fi
// binding's link, one record per message) to the hub and speaks HELLO with its subscriptions
// through it, so the hub grants it rates, sheds for it by the §10.4 table, never sheds its
// critical frames and writes ESTOP ahead of everything in its queue. The link's egress queue is
// drained only as fast as the MQTT client's socket takes messages (`MqttPort.room`) and the
// configured byte budget allows: a slow or throttled broker link fills that queue, its watermark
// is the uplink's §10.3 signal, and the table decides what the uplink still gets. Nothing is kept
// to be sent later: a sample the link refuses is dropped by the hub at once, a stale one expires
// in the queue (§13.6), and the health message is replaced, never queued behind itself.
//
// A broker that is down or slow never delays the hub: the uplink's calls into the MQTT client
// never block, the hub's own paths never wait for the uplink (they only queue into its link),
// and while the broker is away the uplink has no session in the hub at all. It reconnects with
// backoff, announces `online` (retained; the will says `offline`) and opens a fresh session.

import type { CatalogIndex } from '../catalog/index.js';
import { ChannelClass } from '../catalog/schema.js';
import { CborWriter } from '../hub/cbor.js';
import { decodeEstop, ESTOP_FRAME_BYTES, EstopSource, isEstopFrame } from '../hub/estop-frame.js';
import { FleetStopGuard, FleetStopVerdict, FLEET_STOP_VERDICT_NAMES } from '../hub/fleet-stop.js';
import { decodeFrame, encodeFrame, FrameError, FrameType, GoodbyeReason, PROTOCOL_VERSION, type Frame, type HelloFrame, type SubWish } from '../hub/frames.js';
import { healthSummary, type HealthSummary } from '../hub/load.js';
import type { Clock, Link, LinkSink, Log, Random, Store } from '../hub/ports.js';
import { NULL_LOG } from '../hub/ports.js';
import type { MacSha256 } from '../hub/sha256.js';
import { LinkFraming, TcpLink, type LinkTransport } from '../bindings/tcp/egress.js';
import type { UplinkConfig } from './config.js';
import { dataJson, healthJson, safetyJson, STATUS_OFFLINE, STATUS_ONLINE, Topics, utf8Bytes } from './messages.js';

/** What the uplink asks of the MQTT client when it opens a session (MQTT 3.1.1, clean session, QoS 0). */
export interface MqttOpen {
  readonly clientId: string;
  readonly username: string;
  readonly password: string;
  readonly keepaliveS: number;
  /** The last will: `offline`, retained, on the status topic. */
  readonly will: { readonly topic: string; readonly payload: Uint8Array; readonly retain: boolean };
}

/**
 * An MQTT client as the uplink uses it: one session at a time, QoS 0 publishes that never block.
 * The adapter reports to the `MqttListener` it was given: `connected` after CONNACK, `closed` once
 * the session is gone (refused, lost or closed, whichever side), `message` for each PUBLISH on a
 * subscribed topic, `writable` when the socket has taken what it held and `room` grew.
 */
export interface MqttPort {
  open(options: MqttOpen): void;
  /** Bytes of MQTT packets the client takes right now without holding them (0 while not connected). */
  room(): number;
  /** One QoS 0 PUBLISH; the client copies or keeps the bytes. Only called with `room` for it. */
  publish(topic: string, payload: Uint8Array, retain: boolean): void;
  subscribe(topic: string): void;
  /** Ends the session (a clean DISCONNECT if connected: the broker then does not publish the will). */
  close(): void;
}

export interface MqttListener {
  connected(): void;
  closed(): void;
  message(topic: string, payload: Uint8Array): void;
  writable(): void;
}

/** The hub as the uplink uses it. */
export interface UplinkHub {
  readonly catalog: CatalogIndex;
  readonly config: { readonly hubId: string };
  attach(link: Link): LinkSink;
  estop(source: number): void;
  /** The numbers of the health report and `ready` the summary publishes, filled into `out` (Hub.healthSummary). */
  healthSummary(out: HealthSummary): HealthSummary;
}

export interface UplinkPorts {
  readonly hub: UplinkHub;
  /** The hub's clock. */
  readonly clock: Clock;
  /** Wall-clock Unix ms, NaN while the hub has none (SNTP not answered): how fleet stops are timed. */
  readonly wallMs: () => number;
  /** Where the last fleet-stop sequence is kept (the hub's Store). */
  readonly store: Store;
  readonly mqtt: MqttPort;
  /** Reconnect jitter. */
  readonly random: Random;
  readonly log?: Log;
  /** A native HMAC-SHA256 under the fleet key; absent: the core's. */
  readonly mac?: MacSha256;
  /**
   * Runs a function later, from the event loop. Given, the hub's kick (a frame queued for the
   * uplink, inside a hub call such as an ESTOP's announcement) pumps from there instead of inside
   * the call: on the device the pump's work (a payload made, the MQTT client's write) on top of
   * the hub's call overflowed XS's 512-slot stack. Absent (the host): the pump runs at once.
   */
  readonly later?: (f: () => void) => void;
  /**
   * The largest frame the hub writes (its `maxFrameBytes`), so that the uplink's link may take a
   * queue smaller than the host's default (the device: 1536, docs/fleet.md "On the device").
   */
  readonly maxHubFrameBytes?: number;
  /**
   * The platform's own UTF-8 encoder (the device: `ArrayBuffer.fromString`; Node: TextEncoder):
   * one native call per payload where the core's `utf8Bytes` walks the string a character at a
   * time. Absent: `utf8Bytes`. The payloads are JSON text (`JSON.stringify` escapes a lone
   * surrogate), on which every encoder agrees.
   */
  readonly utf8?: (text: string) => Uint8Array;
}

export const UplinkState = Object.freeze({ WAITING: 0, CONNECTING: 1, ONLINE: 2, STOPPED: 3 } as const);
export const UPLINK_STATE_NAMES = Object.freeze(['waiting', 'connecting', 'online', 'stopped'] as const);

/** The first reconnect delay, ms; it doubles to RECONNECT_MAX_MS, each one jittered down by up to half. */
export const RECONNECT_MIN_MS = 1000;
export const RECONNECT_MAX_MS = 30000;
/** A broker that has not answered CONNECT within this is given up on, ms. */
export const CONNECT_TIMEOUT_MS = 10000;
/** The health message's period, ms (1 Hz). */
export const HEALTH_PERIOD_MS = 1000;
/** The virtual client's PING period: it is heard by the hub within its liveness timeout, ms. */
export const PING_PERIOD_MS = 1000;
/** After its session in the hub ended (parked, closed) while the broker stays up, the uplink opens a new one after this, ms. */
export const REOPEN_MS = 1000;
/** An MQTT PUBLISH's fixed header, remaining length and topic length, at most. */
const PUBLISH_OVERHEAD = 7;
/** A JSON payload is at most this many times its DATA frame, plus the field names (a bound for `room`). */
const JSON_FACTOR = 4;
const JSON_SLACK = 256;

/** A message taken from the link that the socket had no room for: it goes first once there is. */
interface Pending {
  topic: string;
  payload: Uint8Array;
  retain: boolean;
}

export class Uplink implements MqttListener, LinkTransport {
  readonly config: UplinkConfig;
  readonly topics: Topics;
  readonly guard: FleetStopGuard;
  state: number = UplinkState.WAITING;
  /** The hub-side link of the current session (null while the broker is away). */
  link: TcpLink | null = null;
  // Counters, for health and the tests.
  published = 0;
  publishedBytes = 0;
  /** By topic kind: status, health, safety, telemetry, events. */
  readonly publishedBy = { status: 0, health: 0, safety: 0, telemetry: 0, events: 0 };
  /** Health messages replaced by a newer one before the socket took them. */
  healthReplaced = 0;
  /** Sessions opened with the broker. */
  connects = 0;
  /** Sessions the hub granted this uplink (HELLO answered by WELCOME). */
  welcomes = 0;
  /** Frames the uplink could not read (never expected: counted, never thrown). */
  badFrames = 0;
  /** Samples dropped by the link (stale, superseded) over every session so far. */
  private unsentBefore = 0;
  /** The grants of the current session: channel id → granted Hz. */
  readonly grants = new Map<number, number>();
  private readonly ports: UplinkPorts;
  private readonly utf8: (text: string) => Uint8Array;
  // What the hub fills for each health message (one record, refilled).
  private readonly summary: HealthSummary = healthSummary();
  private readonly log: Log;
  private readonly hubId: string;
  private readonly format: 'json' | 'cbor';
  private retryAt = 0;
  private backoffMs = RECONNECT_MIN_MS;
  private connectingSince = 0;
  private statusOwed = false;
  private health: Uint8Array | null = null;
  private healthAt = 0;
  private pending: Pending | null = null;
  private pumping = false;
  private closeOwed = false;
  /** The session's resume token: a session the hub parked is resumed, not opened anew (§6.6). */
  private token: Uint8Array | null = null;
  private linkEnded = false;
  private reopenAt = 0;
  private pingAt = 0;
  private pongOwed = -1;
  private readonly writer = new CborWriter(new Uint8Array(512));
  private readonly rnd = new Uint8Array(2);
  // The byte budget (config.maxBytesPerS): tokens, refilled on the hub's clock.
  private tokens = 0;
  private tokensAt = 0;
  private readonly bucketBytes: number;
  private readonly subWishes: SubWish[];
  /** A pump owed from the event loop (`later`): one at a time. */
  private kickOwed = false;
  private readonly kickLater = (): void => {
    this.kickOwed = false;
    this.pump();
  };

  constructor(config: UplinkConfig, ports: UplinkPorts) {
    this.config = config;
    this.ports = ports;
    this.utf8 = ports.utf8 ?? utf8Bytes;
    this.log = ports.log ?? NULL_LOG;
    const hub = ports.hub;
    this.hubId = hub.config.hubId;
    this.format = config.format;
    this.topics = new Topics(config.site, this.hubId, hub.catalog, config.telemetry.map((t) => t.channel), config.events);
    this.guard = new FleetStopGuard({
      site: config.site,
      hubId: this.hubId,
      key: utf8Bytes(config.fleetKey),
      store: ports.store,
      windowMs: config.fleetWindowMs,
      ...(ports.mac ? { mac: ports.mac } : {}),
    });
    this.subWishes = [];
    for (const t of config.telemetry) {
      const ch = hub.catalog.byName(t.channel);
      if (ch) this.subWishes.push({ channelId: ch.id, wishedRateHz: t.rateHz });
    }
    for (const name of config.events) {
      const ch = hub.catalog.byName(name);
      if (ch) this.subWishes.push({ channelId: ch.id, wishedRateHz: ch.maxRateHz });
    }
    this.bucketBytes = config.maxBytesPerS > 0 ? Math.max(2048, config.maxBytesPerS >>> 2) : 0;
    this.tokens = this.bucketBytes;
    this.tokensAt = ports.clock.now();
    this.retryAt = this.tokensAt;
  }

  /** The uplink's session in the hub as a link: its §10.3 level (0 while there is none). */
  get level(): number {
    return this.link && !this.link.closed ? this.link.level : 0;
  }

  /** Samples the uplink's links dropped unsent (stale, superseded), all sessions. */
  get unsent(): number {
    return this.unsentBefore + (this.link ? this.link.unsent() : 0);
  }

  /**
   * The host calls this after every hub tick: reconnects when due, the health message, the
   * virtual client's PING, a session to reopen, and whatever the socket can take now.
   */
  tick(): void {
    const now = this.ports.clock.now();
    if (this.closeOwed) {
      this.closeOwed = false;
      if (this.state === UplinkState.ONLINE || this.state === UplinkState.CONNECTING) this.lost(now);
    }
    switch (this.state) {
      case UplinkState.WAITING:
        if (now >= this.retryAt) this.openBroker(now);
        return;
      case UplinkState.CONNECTING:
        if (now - this.connectingSince >= CONNECT_TIMEOUT_MS) {
          this.log.event('uplink-connect-timeout');
          this.ports.mqtt.close();
          this.lost(now);
        }
        return;
      case UplinkState.ONLINE:
        break;
      default:
        return;
    }
    // The hub's session: answer its PING, be heard within its liveness timeout, reopen one that ended.
    if (this.link && this.linkEnded) this.dropLink();
    if (!this.link && now >= this.reopenAt) this.openSession(now);
    if (this.link && !this.link.closed) {
      if (this.pongOwed >= 0) {
        this.toHub({ type: FrameType.PONG, t0: this.pongOwed, t1: Math.floor(now) });
        this.pongOwed = -1;
      }
      if (now >= this.pingAt) {
        this.pingAt = now + PING_PERIOD_MS;
        this.toHub({ type: FrameType.PING, t0: Math.floor(now) });
      }
    }
    if (now >= this.healthAt) {
      // 1 Hz on the hub's clock; a late tick does not make up the missed ones (no burst).
      this.healthAt = this.healthAt + HEALTH_PERIOD_MS > now ? this.healthAt + HEALTH_PERIOD_MS : now + HEALTH_PERIOD_MS;
      if (this.health) this.healthReplaced++;
      this.health = this.utf8(healthJson(this.ports.hub.healthSummary(this.summary), this.healthView()));
    }
    // The pump, when anything waits for it: a frame the hub queued kicks it, and a writable socket
    // runs it, so what the tick owes it is what waited for room or for the byte budget.
    const link = this.link;
    if (this.statusOwed || this.pending !== null || this.health !== null || (link !== null && !link.closed && link.holding)) this.pump();
  }

  /** Ends the uplink: `offline` announced (retained) when the socket takes it, the session closed. */
  stop(): void {
    if (this.state === UplinkState.STOPPED) return;
    const mqtt = this.ports.mqtt;
    if (this.state === UplinkState.ONLINE) {
      const off = utf8Bytes(STATUS_OFFLINE);
      if (mqtt.room() >= this.topics.status.length + off.length + PUBLISH_OVERHEAD) this.send(this.topics.status, off, true, 'status');
    }
    this.state = UplinkState.STOPPED;
    this.closeSession();
    mqtt.close();
  }

  // ------------------------------------------------------------------ MqttListener (the adapter)

  connected(): void {
    if (this.state !== UplinkState.CONNECTING) return;
    const now = this.ports.clock.now();
    this.state = UplinkState.ONLINE;
    this.connects++;
    this.backoffMs = RECONNECT_MIN_MS;
    this.statusOwed = true;
    this.healthAt = now;
    this.log.event('uplink-online', this.connects);
    this.ports.mqtt.subscribe(this.topics.estop);
    this.openSession(now);
    this.tick();
  }

  closed(): void {
    if (this.state === UplinkState.STOPPED || this.state === UplinkState.WAITING) return;
    // Told while publishing (perhaps inside a hub call): taken up at the next tick, never re-entering the hub.
    if (this.pumping) this.closeOwed = true;
    else this.lost(this.ports.clock.now());
  }

  message(topic: string, payload: Uint8Array): void {
    if (topic !== this.topics.estop) return;
    // The local ESTOP path never passes here: this is only the fleet's way in, judged before it acts.
    const verdict = this.guard.judge(payload, this.ports.wallMs());
    if (verdict === FleetStopVerdict.ACCEPTED) {
      this.log.event('fleet-estop', this.guard.lastSeq);
      this.ports.hub.estop(EstopSource.FLEET);
    } else if (verdict !== FleetStopVerdict.NOT_FOR_US) {
      this.log.event('fleet-estop-refused', verdict);
    }
  }

  writable(): void {
    this.pump();
  }

  // ------------------------------------------------------------------ LinkTransport (the hub's link)

  /** The link has frames: they go now (or from the event loop, with `later`), as far as the socket and the budget allow. */
  kick(): void {
    const later = this.ports.later;
    if (later === undefined) {
      this.pump();
      return;
    }
    if (this.kickOwed) return;
    this.kickOwed = true;
    later(this.kickLater);
  }

  /** The hub gave up this session's transport (parked, closed): it is dropped at the next tick. */
  close(_wsCode: number): void {
    this.linkEnded = true;
  }

  // ------------------------------------------------------------------ internals

  /** Counters as the health summary reports them. */
  healthView(): Parameters<typeof healthJson>[1] {
    const v = this.guard.verdicts;
    let refused = 0;
    for (let i = 1; i < v.length; i++) if (i !== FleetStopVerdict.NOT_FOR_US) refused += v[i] as number;
    return {
      level: this.level,
      occupancy: this.link && !this.link.closed ? this.link.occupancy() : 0,
      published: this.published,
      publishedBytes: this.publishedBytes,
      unsent: this.unsent,
      healthReplaced: this.healthReplaced,
      connects: this.connects,
      fleetStops: { accepted: v[FleetStopVerdict.ACCEPTED] as number, refused },
    };
  }

  /** Fleet stops judged, by verdict name. */
  fleetStopCounts(): Record<string, number> {
    const out: Record<string, number> = {};
    FLEET_STOP_VERDICT_NAMES.forEach((n, i) => (out[n] = this.guard.verdicts[i] as number));
    return out;
  }

  private openBroker(now: number): void {
    const c = this.config;
    this.state = UplinkState.CONNECTING;
    this.connectingSince = now;
    this.ports.mqtt.open({
      clientId: c.clientId !== '' ? c.clientId : this.hubId,
      username: c.username,
      password: c.password,
      keepaliveS: c.keepaliveS,
      will: { topic: this.topics.status, payload: utf8Bytes(STATUS_OFFLINE), retain: true },
    });
  }

  /** The broker session is gone: no session in the hub either, and the next attempt after the backoff. */
  private lost(now: number): void {
    const was = this.state;
    this.state = UplinkState.WAITING;
    this.closeSession();
    this.pending = null;
    this.health = null;
    this.statusOwed = false;
    this.ports.random.fill(this.rnd);
    const jitter = (((this.rnd[0] as number) << 8) | (this.rnd[1] as number)) / 65536;
    this.retryAt = now + Math.round(this.backoffMs * (1 - jitter / 2));
    this.backoffMs = Math.min(RECONNECT_MAX_MS, this.backoffMs * 2);
    if (was === UplinkState.ONLINE) this.log.event('uplink-offline', this.connects);
  }

  /** A fresh session in the hub: a new link, HELLO with the uplink's subscriptions. */
  private openSession(now: number): void {
    if (this.link) return;
    const link = new TcpLink({
      hub: this.ports.hub,
      clock: this.ports.clock,
      framing: LinkFraming.MESSAGE,
      binding: 'mqtt',
      queueBytes: this.config.queueBytes,
      ...(this.ports.maxHubFrameBytes !== undefined ? { maxHubFrameBytes: this.ports.maxHubFrameBytes } : {}),
      log: this.log,
    });
    this.link = link;
    this.linkEnded = false;
    this.grants.clear();
    this.pingAt = now + PING_PERIOD_MS;
    this.pongOwed = -1;
    // Attached to the hub here; frames go in through the link (`toHub`).
    link.start(this);
    const hello: HelloFrame = { type: FrameType.HELLO, version: PROTOCOL_VERSION, name: 'fleet-uplink' };
    if (this.token) hello.resumeToken = this.token;
    else hello.subWishes = this.subWishes.map((w) => ({ ...w }));
    this.toHub(hello);
  }

  /** Ends the hub session: GOODBYE if it is still open, and the link's transport is gone. */
  private closeSession(): void {
    const link = this.link;
    if (!link) return;
    if (!link.closed && !this.linkEnded) this.toHub({ type: FrameType.GOODBYE, reason: GoodbyeReason.NORMAL });
    this.token = null;
    this.dropLink();
  }

  private dropLink(): void {
    const link = this.link;
    if (!link) return;
    this.unsentBefore += link.unsent();
    this.link = null;
    this.grants.clear();
    if (!link.closed) link.transportClosed();
    this.reopenAt = this.ports.clock.now() + REOPEN_MS;
  }

  /** One frame from the uplink's virtual client into the hub (only from the host's calls, never inside the hub's). */
  private toHub(f: Frame): void {
    const link = this.link;
    if (!link || link.closed) return;
    const w = this.writer;
    w.pos = 0;
    encodeFrame(f, w);
    link.message(w.buf, 0, w.pos, true);
  }

  /**
   * Hands the MQTT client what is due, as far as its room and the byte budget allow: the status
   * announcement, a message already taken, ESTOPs written ahead, the health message, then the
   * link's frames in order. Never re-enters the hub: it may run inside a hub call (`kick`).
   */
  private pump(): void {
    if (this.pumping || this.state !== UplinkState.ONLINE) return;
    this.pumping = true;
    try {
      this.refill();
      if (this.statusOwed) {
        if (!this.trySend(this.topics.status, utf8Bytes(STATUS_ONLINE), true, 'status')) return;
        this.statusOwed = false;
      }
      const p = this.pending;
      if (p) {
        if (!this.trySend(p.topic, p.payload, p.retain, p.topic === this.topics.safety ? 'safety' : 'telemetry')) return;
        this.pending = null;
      }
      const link = this.link;
      // ESTOPs ahead of everything, the health message ahead of the samples.
      while (link && !link.closed && link.queue.aheadWaiting > 0) if (!this.fromLink(link, true)) return;
      if (this.health) {
        if (!this.trySend(this.topics.health, this.health, true, 'health')) return;
        this.health = null;
      }
      while (link && !link.closed) if (!this.fromLink(link)) return;
    } finally {
      this.pumping = false;
    }
  }

  /** The next frame from the link, published if it is one the uplink carries; false when nothing more can go now. */
  private fromLink(link: TcpLink, urgent = false): boolean {
    const n = link.nextMessageLength();
    if (n === 0) return false;
    // The socket must be able to take what this frame becomes, or it stays in the queue (where the watermark sees it).
    const need = PUBLISH_OVERHEAD + this.topics.base.length + 32 + (this.format === 'json' ? n * JSON_FACTOR + JSON_SLACK : n);
    if ((urgent ? this.ports.mqtt.room() : this.room()) < need) return false;
    const got = link.take(n);
    if (got === 0) return false;
    const bytes = link.out;
    try {
      this.carry(bytes, got);
    } finally {
      link.wrote();
    }
    return true;
  }

  /** One frame the hub sent the uplink's session: published, or taken in (grants, PING). */
  private carry(bytes: Uint8Array, n: number): void {
    if (isEstopFrame(bytes, 0)) {
      if (n !== ESTOP_FRAME_BYTES) return;
      this.deliver(this.topics.safety, this.utf8(safetyJson(decodeEstop(bytes, 0, n))), true, 'safety');
      return;
    }
    let f: Frame;
    try {
      f = decodeFrame(bytes, 0, n, 1 << 16);
    } catch (e) {
      if (!(e instanceof FrameError)) throw e;
      this.badFrames++;
      return;
    }
    switch (f.type) {
      case FrameType.DATA: {
        const topic = this.topics.ofChannel(f.channelId);
        if (topic === undefined) return;
        const ch = this.ports.hub.catalog.byId(f.channelId);
        const event = ch !== undefined && ch.cls === ChannelClass.EVENT;
        const payload = !event && this.format === 'cbor' ? bytes.slice(0, n) : this.utf8(dataJson(f, ch));
        this.deliver(topic, payload, false, event ? 'events' : 'telemetry');
        return;
      }
      case FrameType.WELCOME:
        this.welcomes++;
        this.token = f.resumeToken.slice();
        this.grants.clear();
        for (const g of f.subGrants) this.grants.set(g.channelId, g.grantedRateHz);
        this.log.event('uplink-session', f.sessionId);
        return;
      case FrameType.GRANT:
        if (f.subGrants) {
          this.grants.clear();
          for (const g of f.subGrants) this.grants.set(g.channelId, g.grantedRateHz);
        }
        return;
      case FrameType.PING:
        this.pongOwed = f.t0;
        return;
      case FrameType.GOODBYE:
        this.linkEnded = true;
        this.token = null;
        return;
      case FrameType.NACK:
        // A resume the hub no longer knows: the next session is opened afresh.
        if (f.frameType === FrameType.HELLO) {
          this.token = null;
          this.linkEnded = true;
        }
        return;
      default:
        return;
    }
  }

  /** A message made from a frame already taken: now if the socket has room, else first in line. */
  private deliver(topic: string, payload: Uint8Array, retain: boolean, kind: keyof Uplink['publishedBy']): void {
    if (!this.trySend(topic, payload, retain, kind)) this.pending = { topic, payload, retain };
  }

  private trySend(topic: string, payload: Uint8Array, retain: boolean, kind: keyof Uplink['publishedBy']): boolean {
    const size = PUBLISH_OVERHEAD + topic.length + payload.length;
    // The byte budget never holds back an ESTOP or the status: they go as soon as the socket has
    // room, and the budget is repaid by what follows (tokens may run below zero).
    const urgent = kind === 'safety' || kind === 'status';
    if ((urgent ? this.ports.mqtt.room() : this.room()) < size) return false;
    this.send(topic, payload, retain, kind);
    if (this.bucketBytes > 0) this.tokens -= size;
    return true;
  }

  private send(topic: string, payload: Uint8Array, retain: boolean, kind: keyof Uplink['publishedBy']): void {
    this.ports.mqtt.publish(topic, payload, retain);
    this.published++;
    this.publishedBytes += PUBLISH_OVERHEAD + topic.length + payload.length;
    this.publishedBy[kind]++;
  }

  /** What may be published now: the socket's room, within the byte budget. */
  private room(): number {
    const r = this.ports.mqtt.room();
    return this.bucketBytes > 0 && this.tokens < r ? Math.max(0, this.tokens) : r;
  }

  private refill(): void {
    if (this.bucketBytes === 0) return;
    const now = this.ports.clock.now();
    const dt = now - this.tokensAt;
    this.tokensAt = now;
    if (dt > 0) this.tokens = Math.min(this.bucketBytes, this.tokens + (dt * this.config.maxBytesPerS) / 1000);
  }
}
