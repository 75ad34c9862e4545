// The device budget (docs/performance.md "Fits the ESP32"): the default scenario's whole mix,
// driven through the hub and the real bindings' code on a virtual clock, with every computron
// the hub and the bindings spend counted by kind of work. On the XS engine `meter()` reads the
// engine's own computron count (xsnap's resetMeter); on Node it reads 0 and the workload only
// checks that it runs.
//
// What is real: the Hub, TcpLink (length-prefixed and WebSocket framing), BleLink with its
// notification queue and fragmentation, EspNowBinding with its peers' links and datagrams. What
// stands in for the platform: each transport is the least that moves bytes (a socket that takes
// whatever the link yields, a GATT connection that completes one notification per service time,
// a radio that reports a datagram sent after its airtime, losing a stated share), and the
// clients are scripted: they count what they receive and answer as docs/protocol.md says (an ACK
// after 32 frames or within 1 s, a PING every second, every 200 ms from the control owner), the
// joystick publishes cmd_vel at 50 Hz, the console sends an intent every 2 s. The clients'
// own work is never counted; what they hand the hub is, as ingress.
import { DEFAULT_CATALOG } from '../catalog/default.js';
import { loadCatalog, type CatalogIndex } from '../catalog/index.js';
import { Tier, type Catalog } from '../catalog/schema.js';
import { CborWriter } from '../hub/cbor.js';
import { encodeCredentials, CREDENTIALS_KEY } from '../hub/credentials.js';
import { encodeFrame, FrameType, Key, PROTOCOL_VERSION, type Frame, type PubWish, type SubWish } from '../hub/frames.js';
import { Hub, type HubConfig } from '../hub/hub.js';
import { SessionState } from '../hub/session.js';
import { NULL_LOG, type Clock, type Link, type LinkLevelFields, type Random, type RobotPort, type RouteHost, type SampleBlock, type SampleRouter, type SampleWriter, type Store } from '../hub/ports.js';
import { ScriptSampleWriter } from '../hub/fast-frames.js';
import { FastReader } from '../hub/fast-reader.js';
import type { HubCounters } from '../hub/counters.js';
import type { SealedBytes } from '../hub/bytes.js';
import { DEVICE_BLE_QUEUE_BYTES, DEVICE_DEFAULTS, DEVICE_ESPNOW_QUEUE_BYTES, DEVICE_MAX_HUB_FRAME_BYTES } from '../device/config.js';
import { LinkFraming, TakePool, TcpLink } from '../bindings/tcp/egress.js';
import { SocketPort, type SocketDirectFields, type SocketDirectPort, type StreamSocket } from '../bindings/tcp/socket-port.js';
import { writeLengthPrefix } from '../bindings/tcp/framing.js';
import { BleLink } from '../bindings/ble/link.js';
import { GattConnection, gattWritten, tickConnections, type GattPeer } from '../bindings/ble/gatt-connection.js';
import { ButtonSampler, DeviceTick, StopPathLatch, type ButtonInput } from '../device/tick.js';
import { NativeStopPath, type StopLineNative } from '../device/stop-path.js';
import { CLIENT_REASSEMBLY, Fragmenter, fragmentSize, Reassembler } from '../bindings/ble/fragment.js';
import { EspNowBinding, EspNowLink, ESPNOW_MAX_ENCRYPTED_PEERS, RadioStatus } from '../bindings/espnow/link.js';
import type { EspNowNativeApi } from '../bindings/espnow/embedded.js';
import { MAC_BYTES, NativeRadio, POLL_BYTES, POLL_EMPTY, POLL_LAST, POLL_LENGTH, POLL_SENT, POLL_SENT_FAILED, readMac, writeMac } from '../bindings/espnow/native-radio.js';
import type { EspNowPairing } from '../bindings/espnow/pairing.js';
import { EsObjects } from './espnow-sent.js';
import type { OpBench, RetainedBench } from './case.js';
import { BENCH_CATALOG } from './route.bench.js';
import { AckTracker, DatagramCursor, DATAGRAM_MAX_BYTES, encodeBitmapAck, HEADER_BYTES, writeHeader } from '../bindings/espnow/datagram.js';

// ------------------------------------------------------------------------------------------
// The meter.

interface XsMeterGlobals {
  resetMeter?: (limit: number, index: number) => number;
  currentMeterLimit?: () => number;
}
const G = globalThis as unknown as XsMeterGlobals;

/** The meter is read (off while a harness reads the engine's own count of a whole run, as the op cases do). */
let metering = true;

/** Leaves the engine's meter alone from now on: a harness reads the whole run's count itself. */
export function stopMetering(): void {
  metering = false;
}

/** Computrons since the last call (and restarts the count); 0 where the engine has no meter. */
export function meter(): number {
  const reset = G.resetMeter;
  const limit = G.currentMeterLimit;
  return metering && reset !== undefined && limit !== undefined ? reset(limit(), 0) : 0;
}

/**
 * What one call of a stand-in costs beyond one call of the host function it stands for (`host`: a
 * builtin given as many arguments): the stand-in's entry, which the world takes off each call.
 * Each is called through an arrow of its own, so the arrows' calls cancel out.
 */
export function entryBeyondHost(standIn: () => unknown, host: () => unknown): number {
  meter();
  standIn();
  const script = meter();
  meter();
  host();
  const native = meter();
  return script > native ? script - native : 0;
}

/** Whether meter() reads a real count (the XS engine under xsnap-worker). */
export function metered(): boolean {
  return typeof G.resetMeter === 'function' && typeof G.currentMeterLimit === 'function';
}

// ------------------------------------------------------------------------------------------
// The mix: the default scenario (host-sim/scenarios/default.json) as a device would serve it.
// test/host/device-bench.test.ts holds it equal to the scenario's clients and role presets.

export const BINDING_NAMES = Object.freeze(['tcp', 'ws', 'ble', 'espnow'] as const);
export type BindingName = (typeof BINDING_NAMES)[number];

export interface MixClient {
  readonly name: string;
  readonly binding: BindingName;
  /** Presents the operator credential (else anonymous: observer). */
  readonly operator: boolean;
  readonly subscriptions: readonly { readonly channel: string; readonly rateHz: number; readonly priority?: number }[];
  readonly publications: readonly { readonly channel: string; readonly rateHz: number; readonly burst?: number }[];
}

const P_BACKGROUND = 0;
const P_ELEVATED = 2;

export const DEFAULT_MIX: readonly MixClient[] = Object.freeze([
  {
    name: 'console',
    binding: 'tcp',
    operator: true,
    subscriptions: [
      { channel: 'safety', rateHz: 10 },
      { channel: 'safety-events', rateHz: 20 },
      { channel: 'control-owner', rateHz: 2 },
      { channel: 'battery', rateHz: 1 },
      { channel: 'joint_states', rateHz: 20 },
      { channel: 'odom', rateHz: 20 },
      { channel: 'fault', rateHz: 10, priority: P_ELEVATED },
    ],
    publications: [],
  },
  {
    name: 'joystick',
    binding: 'ble',
    operator: true,
    subscriptions: [
      { channel: 'safety', rateHz: 10 },
      { channel: 'control-owner', rateHz: 2 },
    ],
    publications: [{ channel: 'cmd_vel', rateHz: 50 }],
  },
  {
    name: 'planner',
    binding: 'ws',
    operator: true,
    subscriptions: [
      { channel: 'safety', rateHz: 10 },
      { channel: 'control-owner', rateHz: 2 },
      { channel: 'odom', rateHz: 10 },
    ],
    publications: [{ channel: 'trajectory', rateHz: 5, burst: 20 }],
  },
  {
    name: 'scope',
    binding: 'ws',
    operator: true,
    subscriptions: [
      { channel: 'safety', rateHz: 10 },
      { channel: 'imu', rateHz: 200, priority: P_ELEVATED },
    ],
    publications: [],
  },
  {
    name: 'logger',
    binding: 'tcp',
    operator: false,
    subscriptions: [
      { channel: 'safety', rateHz: 10 },
      { channel: 'safety-events', rateHz: 20 },
      { channel: 'control-owner', rateHz: 2 },
      { channel: 'imu', rateHz: 200, priority: P_BACKGROUND },
      { channel: 'odom', rateHz: 50, priority: P_BACKGROUND },
      { channel: 'joint_states', rateHz: 50, priority: P_BACKGROUND },
      { channel: 'battery', rateHz: 1, priority: P_BACKGROUND },
      { channel: 'scan', rateHz: 10, priority: P_BACKGROUND },
      { channel: 'path', rateHz: 25, priority: P_BACKGROUND },
      { channel: 'log', rateHz: 50, priority: P_BACKGROUND },
      { channel: 'fault', rateHz: 10, priority: P_BACKGROUND },
    ],
    publications: [],
  },
  {
    name: 'phone',
    binding: 'ble',
    operator: false,
    subscriptions: [
      { channel: 'safety', rateHz: 10 },
      { channel: 'battery', rateHz: 1 },
      { channel: 'odom', rateHz: 10 },
      { channel: 'path', rateHz: 25 },
    ],
    publications: [],
  },
  {
    name: 'pendant',
    binding: 'espnow',
    operator: false,
    subscriptions: [
      { channel: 'safety', rateHz: 10 },
      { channel: 'control-owner', rateHz: 2 },
      { channel: 'battery', rateHz: 1 },
      { channel: 'odom', rateHz: 10 },
    ],
    publications: [],
  },
  {
    name: 'tablet',
    binding: 'espnow',
    operator: false,
    subscriptions: [
      { channel: 'safety', rateHz: 10 },
      { channel: 'joint_states', rateHz: 10 },
      { channel: 'path', rateHz: 25 },
    ],
    publications: [],
  },
]);

/** The robot's streams at their default rates (host-sim/robot.ts ROBOT_DEFAULTS), Hz. */
export const ROBOT_STREAMS: readonly { readonly channel: string; readonly hz: number; readonly fields: number }[] = Object.freeze([
  { channel: 'imu', hz: 200, fields: 6 },
  { channel: 'odom', hz: 50, fields: 5 },
  { channel: 'joint_states', hz: 50, fields: 6 },
  { channel: 'battery', hz: 1, fields: 2 },
  { channel: 'scan', hz: 10, fields: 16 },
]);
/** The robot's log events: one a second (ROBOT_DEFAULTS.logMeanMs, here on a fixed period). */
export const LOG_EVERY_MS = 1000;

export const OPERATOR_CREDENTIAL = 'operator-key';
/** §13.2 and the client library: an ACK after this many frames, or within ACK_INTERVAL_MS. */
export const CLIENT_ACK_EVERY = 32;
export const CLIENT_ACK_INTERVAL_MS = 1000;
export const CLIENT_PING_MS = 1000;
export const OWNER_PING_MS = 200;
export const JOYSTICK_HZ = 50;
export const CONSOLE_INTENT_EVERY_MS = 2000;
/** The stand-in BLE connection completes one notification per this long (4 per 30 ms event, as the default scenario's link). */
export const BLE_SERVICE_MS = 7.5;
export const BLE_MAXIMUM_WRITE = 244;
/** The stand-in radio: airtime of one datagram (about 250 bytes at 1 Mbps and the MAC's acknowledgement), and the share of unicast datagrams whose every retry fails. */
export const RADIO_AIRTIME_MS = 2;
export const RADIO_LOSS = 0.02;
/** ESP-NOW peers acknowledge after this many datagrams or this long after the first one unacknowledged (bindings/espnow/sim.ts PEER_DEFAULTS). */
export const PEER_ACK_EVERY = 16;
export const PEER_ACK_PERIOD_MS = 50;
/** The socket stand-in takes this much per write (the device adapter's take, bindings/tcp/device.ts DEVICE_TAKE_BYTES: one lwIP segment). */
export const SOCKET_TAKE_BYTES = 1436;
/** What the device's socket port lets lwIP hold unacknowledged (bindings/tcp/device.ts DEVICE_SOCKET_LIMIT_BYTES: two segments). */
export const DEVICE_SOCKET_LIMIT_BYTES = 2872;
/** The stand-in socket's send buffer: the SDK's ESP32 lwIP default (CONFIG_LWIP_TCP_SND_BUF_DEFAULT). */
export const LWIP_SEND_BUFFER_BYTES = 8192;
/** A client's TCP stack acknowledges received bytes it has not acknowledged on a segment of its own within this long (Linux's delayed ACK). */
export const CLIENT_DELAYED_ACK_MS = 40;

// ------------------------------------------------------------------------------------------
// The world.

/** Reads of any world's clock so far (DeviceWorld.take discounts those of each measured interval). */
let clockReads = 0;

/**
 * The world's clock. The device's is a host function (device/clock-native.ts over
 * device/native/clock.c), which costs XS the call alone: what this one costs beyond that (its
 * body, the count of reads) is measured (DeviceWorld.calibrate) and not counted.
 */
class VirtualClock implements Clock {
  t = 1000;
  now(): number {
    clockReads++;
    return this.t;
  }
}

/** The device's clock as XS calls it: a host function on the prototype (here a builtin that takes no argument). */
class HostClockProbe {
  declare now: () => number;
}
Object.defineProperty(HostClockProbe.prototype, 'now', { value: Math.random, writable: true, configurable: true });

class FixedRandom implements Random {
  private x = 0x2545f491;
  fill(into: Uint8Array): void {
    for (let i = 0; i < into.length; i++) {
      let x = this.x;
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      this.x = x >>> 0;
      into[i] = x & 0xff;
    }
  }
  /** Uniform in [0, 1). */
  next(): number {
    let x = this.x;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.x = x >>> 0;
    return this.x / 4294967296;
  }
}

class MemStore implements Store {
  private readonly m = new Map<string, Uint8Array>();
  get(key: string): Uint8Array | undefined {
    return this.m.get(key);
  }
  set(key: string, value: Uint8Array): void {
    this.m.set(key, value);
  }
  delete(key: string): void {
    this.m.delete(key);
  }
}

class BenchRobot implements RobotPort {
  published = 0;
  intents = 0;
  stop(_source: number): void {}
  release(): void {}
  publish(_channelId: number, samples: SampleBlock): void {
    this.published += samples.count;
  }
  intent(_channelId: number, _args: readonly (number | string)[]): number {
    this.intents++;
    return 0;
  }
}

/** The stand-ins' copy: a byte loop, since a view to copy from would be an allocation of the client's that the per-delivery runs would count. */
function copy(from: Uint8Array, length: number, to: Uint8Array, at: number): void {
  for (let i = 0; i < length; i++) to[at + i] = from[i] as number;
}

function utf8(text: string): Uint8Array {
  const out = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) out[i] = text.charCodeAt(i) & 0x7f;
  return out;
}

/** The work of one simulated interval, by kind (computrons). */
export class Split {
  delivery = 0;
  ingress = 0;
  tick = 0;
  bindings = 0;
  /** `bindings` and `ingress` by binding, for the report's detail. */
  readonly byBinding: Record<string, number> = { tcp: 0, ws: 0, ble: 0, espnow: 0 };
  readonly ingressBy: Record<string, number> = { tcp: 0, ws: 0, ble: 0, espnow: 0 };
  /** `delivery` by channel id (the robot's streams). */
  readonly byChannel: Record<number, number> = {};
  total(): number {
    return this.delivery + this.ingress + this.tick + this.bindings;
  }
  reset(): void {
    this.delivery = this.ingress = this.tick = this.bindings = 0;
    for (const k of Object.keys(this.byBinding)) this.byBinding[k] = 0;
    for (const k of Object.keys(this.ingressBy)) this.ingressBy[k] = 0;
    for (const k of Object.keys(this.byChannel)) delete this.byChannel[Number(k)];
  }
  bind(binding: string, c: number): void {
    this.bindings += c;
    this.byBinding[binding] = (this.byBinding[binding] ?? 0) + c;
  }
  ingest(binding: string, c: number): void {
    this.ingress += c;
    this.ingressBy[binding] = (this.ingressBy[binding] ?? 0) + c;
  }
}

/** What the clients saw: frames received, frames sent, deliveries the hub made. */
export class MixCounts {
  framesToClients = 0;
  framesFromClients = 0;
  acks = 0;
  pings = 0;
  bundles = 0;
  intents = 0;
  estops = 0;
  nacks = 0;
}

// ------------------------------------------------------------------------------------------
// The scripted clients: one per mix entry, with the client side of its binding.

abstract class Client {
  /** Frames received since the transport opened (§5.12: every frame counts, ESTOP ones too). */
  received = 0;
  ackedSent = 0;
  lastAckAt = 0;
  lastPingAt = 0;
  owner = false;
  readonly w = new CborWriter(new Uint8Array(1024));
  constructor(
    readonly spec: MixClient,
    readonly world: DeviceWorld,
  ) {}

  /** Encodes `f` and hands it to the hub's side of this client's link, counted as ingress. */
  send(f: Frame): void {
    const w = this.w;
    w.reset();
    encodeFrame(f, w);
    this.world.counts.framesFromClients++;
    this.deliverToHub(w.buf, w.pos);
  }

  /**
   * The frequent frames, written as encodeFrame writes them but without a frame object, so that
   * the clients of a per-delivery run allocate nothing: ACK {0: 12, 28: acked}, PING {0: 13, 31:
   * t0}, and a one-sample BUNDLE {0: 8, 3: channel_id, 6: [[t, v…]]}.
   */
  sendAck(acked: number): void {
    const w = this.w;
    w.reset();
    w.map(2);
    w.uint(Key.TYPE);
    w.uint(FrameType.ACK);
    w.uint(Key.ACKED);
    w.uint(acked);
    this.world.counts.framesFromClients++;
    this.deliverToHub(w.buf, w.pos);
  }
  sendPing(t0: number): void {
    const w = this.w;
    w.reset();
    w.map(2);
    w.uint(Key.TYPE);
    w.uint(FrameType.PING);
    w.uint(Key.T0);
    w.uint(t0);
    this.world.counts.framesFromClients++;
    this.deliverToHub(w.buf, w.pos);
  }
  sendBundle(channelId: number, t: number, a: number, b: number): void {
    const w = this.w;
    w.reset();
    w.map(3);
    w.uint(Key.TYPE);
    w.uint(FrameType.BUNDLE);
    w.uint(Key.CHANNEL_ID);
    w.uint(channelId);
    w.uint(Key.VALUES);
    w.array(1);
    w.array(3);
    w.uint(t);
    w.number(a);
    w.number(b);
    this.world.counts.framesFromClients++;
    this.deliverToHub(w.buf, w.pos);
  }

  protected abstract deliverToHub(frame: Uint8Array, length: number): void;

  /** The client's side of §5.12 and §5.13, on the world's clock. */
  timers(now: number): void {
    const due = this.received - this.ackedSent >= CLIENT_ACK_EVERY || (this.received !== this.ackedSent && now - this.lastAckAt >= CLIENT_ACK_INTERVAL_MS);
    if (due) {
      this.ackedSent = this.received;
      this.lastAckAt = now;
      this.world.counts.acks++;
      this.sendAck(this.received >>> 0);
    }
    if (now - this.lastPingAt >= (this.owner ? OWNER_PING_MS : CLIENT_PING_MS)) {
      this.lastPingAt = now;
      this.world.counts.pings++;
      this.sendPing(now);
    }
  }

  frameReceived(first: number): void {
    this.received++;
    this.world.counts.framesToClients++;
    if (first === 0xe5) this.world.counts.estops++;
  }

  hello(): void {
    const subWishes: SubWish[] = [];
    const pubWishes: PubWish[] = [];
    const cat = this.world.catalog;
    for (const s of this.spec.subscriptions) {
      const ch = cat.byName(s.channel);
      if (!ch) throw new Error(`device bench: no channel ${s.channel}`);
      subWishes.push(s.priority === undefined ? { channelId: ch.id, wishedRateHz: s.rateHz } : { channelId: ch.id, wishedRateHz: s.rateHz, priority: s.priority });
    }
    for (const p of this.spec.publications) {
      const ch = cat.byName(p.channel);
      if (!ch) throw new Error(`device bench: no channel ${p.channel}`);
      pubWishes.push(p.burst === undefined ? { channelId: ch.id, wishedRateHz: p.rateHz } : { channelId: ch.id, wishedRateHz: p.rateHz, burst: p.burst });
    }
    const f: Frame = { type: FrameType.HELLO, version: PROTOCOL_VERSION, name: this.spec.name, subWishes, pubWishes };
    if (this.spec.operator) f.credential = utf8(OPERATOR_CREDENTIAL);
    this.send(f);
  }
}

/**
 * The stand-in for the SDK's lwIP TCP socket under the device's SocketPort (bindings/tcp/socket-port.ts),
 * as a model with stated parameters: a send buffer of LWIP_SEND_BUFFER_BYTES, whose bytes the
 * client's stack acknowledges whenever the client sends (the acknowledgement rides on its
 * segment) and otherwise after CLIENT_DELAYED_ACK_MS; each acknowledgement of new bytes is one
 * `onWritable(free)` on the device, which the port runs as the device does. The stack's copy and
 * the client's reading are not counted; what calling `write` costs beyond the device's host
 * function is measured and not counted either (as NativeSampleRouterStandIn.entry).
 */
class BenchSocket implements StreamSocket {
  free = LWIP_SEND_BUFFER_BYTES;
  /** Bytes written that the client's stack has not acknowledged, and since when. */
  unacked = 0;
  unackedSince = 0;
  entry = 0;
  private probing = false;
  constructor(
    private readonly client: StreamClient,
    private readonly world: DeviceWorld,
  ) {}

  write(bytes: Uint8Array): number {
    if (this.probing) return 0;
    this.world.pause();
    this.world.discount(this.entry);
    if (this.unacked === 0) this.unackedSince = this.world.clock.t;
    this.unacked += bytes.length;
    this.free -= bytes.length;
    if (this.free < 0) throw new Error('device bench: the socket port wrote past the send buffer');
    this.client.read(bytes, bytes.length);
    this.world.resume();
    return this.free;
  }

  close(): void {}

  /** The client's stack acknowledged everything written: the send buffer is free again. */
  acknowledged(): number {
    this.free += this.unacked;
    this.unacked = 0;
    return this.free;
  }

  /** The entry of one call of `write` (entryBeyondHost). */
  measureEntry(): void {
    const b = new Uint8Array(1);
    this.probing = true;
    this.entry = entryBeyondHost(() => this.write(b), () => Math.max(0));
    this.probing = false;
  }
}

/** The device's SocketPort over the bench's socket: the pump deferred to the world's settle, as the device's timer defers it. */
class BenchPort extends SocketPort {
  /** A pump is owed (the device's timer armed). */
  due = false;
  constructor(
    link: TcpLink,
    private readonly client: StreamClient,
  ) {
    super(link, DEVICE_SOCKET_LIMIT_BYTES);
  }
  open(socket: BenchSocket): void {
    this.opened(socket);
    // lwIP's first onWritable, at accept: the whole send buffer free.
    this.writable(socket.free);
  }
  protected schedule(): void {
    this.due = true;
    this.client.world.kicked.push(this.client);
  }
  protected released(): void {}
  /** The deferred pump's turn (the device's timer callback). */
  pumpNow(): void {
    this.due = false;
    this.turn();
  }
  /** lwIP's onWritable after the client's stack acknowledged new bytes. */
  acked(free: number): void {
    this.writable(free);
  }
}

/** A TCP or WebSocket client over the device's SocketPort; the client reads the stream as TCP or WebSocket. */
class StreamClient extends Client {
  link: TcpLink | null = null;
  port: BenchPort | null = null;
  socket: BenchSocket | null = null;
  private readonly inbound = new Uint8Array(2048);
  // Client-side parse state of the hub's stream.
  private need = 0;
  private headerLeft: number;
  private hdr = 0;
  private wsHead = new Uint8Array(4);
  private wsHeadN = 0;
  private httpEnd = 0;

  constructor(spec: MixClient, world: DeviceWorld) {
    super(spec, world);
    this.headerLeft = spec.binding === 'ws' ? -1 : 2;
    // The SDK's socket: made with the client, so the device's memory steps do not count it.
    this.socket = new BenchSocket(this, world);
  }

  open(): void {
    const ws = this.spec.binding === 'ws';
    const link = new TcpLink({
      hub: this.world.hub,
      clock: this.world.clock,
      framing: ws ? LinkFraming.WS_SERVER : LinkFraming.LENGTH_PREFIX,
      binding: this.spec.binding,
      queueBytes: DEVICE_QUEUE_BYTES,
      maxHubFrameBytes: DEVICE_MAX_HUB_FRAME_BYTES,
      sha1: ws ? () => new Uint8Array(20) : undefined,
      takeBytes: SOCKET_TAKE_BYTES,
      takePool: this.world.takePool ?? undefined,
    });
    this.link = link;
    const socket = this.socket as BenchSocket;
    const port = new BenchPort(link, this);
    this.port = port;
    port.open(socket);
    if (ws) {
      const req = utf8('GET / HTTP/1.1\r\nHost: hub\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n');
      link.input(req, 0, req.length);
    }
  }

  /** The deferred pump (the device's timer callback), counted as the binding's. */
  pump(): void {
    const port = this.port;
    if (port === null || !port.due) return;
    meter();
    port.pumpNow();
    this.world.split.bind(this.spec.binding, this.world.take());
  }

  /** The client's stack acknowledges what it received: one onWritable on the device, counted as the binding's. */
  private acknowledge(): void {
    const socket = this.socket;
    const port = this.port;
    if (socket === null || port === null || socket.unacked === 0) return;
    const free = socket.acknowledged();
    meter();
    port.acked(free);
    this.world.split.bind(this.spec.binding, this.world.take());
  }

  override timers(now: number): void {
    super.timers(now);
    const socket = this.socket;
    if (socket !== null && socket.unacked > 0 && now - socket.unackedSince >= CLIENT_DELAYED_ACK_MS) this.acknowledge();
  }

  /** The client reads what the socket carried (not counted). */
  read(b: Uint8Array, n: number): void {
    let p = 0;
    if (this.spec.binding === 'ws' && this.httpEnd < 4) {
      // Skip the 101 answer: up to the blank line.
      while (p < n && this.httpEnd < 4) {
        const c = b[p++] as number;
        this.httpEnd = (this.httpEnd & 1) === 0 ? (c === 13 ? this.httpEnd + 1 : 0) : c === 10 ? this.httpEnd + 1 : 0;
      }
    }
    while (p < n) {
      if (this.need > 0) {
        const k = Math.min(this.need, n - p);
        if (this.need === this.needTotal) this.frameReceived(b[p] as number);
        this.need -= k;
        p += k;
        continue;
      }
      if (this.spec.binding === 'tcp') {
        this.hdr = (this.hdr << 8) | (b[p++] as number);
        if (--this.headerLeft === 0) {
          this.need = this.needTotal = this.hdr & 0xffff;
          this.hdr = 0;
          this.headerLeft = 2;
        }
      } else {
        this.wsHead[this.wsHeadN++] = b[p++] as number;
        const len7 = (this.wsHead[1] as number) & 0x7f;
        const headLen = len7 === 126 ? 4 : 2;
        if (this.wsHeadN >= 2 && this.wsHeadN === headLen) {
          this.need = this.needTotal = len7 === 126 ? ((this.wsHead[2] as number) << 8) | (this.wsHead[3] as number) : len7;
          this.wsHeadN = 0;
        }
      }
    }
  }
  private needTotal = 0;

  protected deliverToHub(frame: Uint8Array, length: number): void {
    const link = this.link;
    if (!link) return;
    const b = this.inbound;
    let p: number;
    if (this.spec.binding === 'tcp') {
      p = writeLengthPrefix(length, b, 0);
    } else {
      // A masked binary frame (RFC 6455 §5.3) with a zero mask key: the payload is unchanged.
      b[0] = 0x82;
      if (length < 126) {
        b[1] = 0x80 | length;
        p = 2;
      } else {
        b[1] = 0x80 | 126;
        b[2] = length >>> 8;
        b[3] = length & 0xff;
        p = 4;
      }
      b[p++] = 0;
      b[p++] = 0;
      b[p++] = 0;
      b[p++] = 0;
    }
    copy(frame, length, b, p);
    // The client's segment carries its stack's acknowledgement of what it has received.
    this.acknowledge();
    meter();
    link.input(b, 0, p + length);
    this.world.split.ingest(this.spec.binding, this.world.take());
  }
}

/** A GATT connection that completes one notification per BLE_SERVICE_MS; the client reassembles. */
/**
 * The stand-in for the SDK's GATT server connection (embedded:io/bluetoothle/peripheral) under the
 * device's GattConnection (bindings/ble/gatt-connection.ts), which is the link's transport on the
 * device: `notify` hands the client the notification (not counted) and keeps the completion, which
 * the stack calls BLE_SERVICE_MS later; what calling `notify` costs beyond a host function is
 * measured and not counted (as NativeSampleRouterStandIn.entry).
 */
class BenchGattPeer implements GattPeer<object> {
  readonly maximumWrite = BLE_MAXIMUM_WRITE;
  /** The notify characteristic's host object. */
  readonly characteristic = {};
  completeAt = Infinity;
  callback: ((status: number) => void) | null = null;
  entry = 0;
  private probing = false;
  constructor(
    private readonly client: BleClient,
    private readonly world: DeviceWorld,
  ) {}

  notify(_characteristic: object, value: ArrayBuffer | Uint8Array, callback: (status: number) => void): void {
    if (this.probing) return;
    this.world.pause();
    this.world.discount(this.entry);
    this.completeAt = this.world.clock.t + BLE_SERVICE_MS;
    this.callback = callback;
    // The client has it once the stack reports it sent: read here, outside the count.
    const v = value as Uint8Array;
    this.client.notified(v, v.length);
    this.world.resume();
  }

  close(): void {
    this.completeAt = Infinity;
  }

  /** The entry of one call of `notify` (entryBeyondHost). */
  measureEntry(): void {
    const b = new Uint8Array(1);
    this.probing = true;
    this.entry = entryBeyondHost(() => this.notify(b, b, Math.max), () => Math.max(0, 0, 0));
    this.probing = false;
  }
}

/** A BLE central: its writes go to the link as the device's GATT write does, its notifications come through the device's GattConnection. */
class BleClient extends Client {
  link: BleLink | null = null;
  readonly peer: BenchGattPeer;
  conn: GattConnection<object, BenchGattPeer> | null = null;
  private readonly fragmenter = new Fragmenter();
  private readonly write = new Uint8Array(BLE_MAXIMUM_WRITE);
  private readonly reassembler: Reassembler;

  constructor(spec: MixClient, world: DeviceWorld) {
    super(spec, world);
    this.reassembler = new Reassembler(
      {
        frame: (bytes, start) => this.frameReceived(bytes[start] as number),
        refuse: () => {
          throw new Error('device bench: the BLE client refused a notification');
        },
      },
      CLIENT_REASSEMBLY,
    );
    // The SDK's connection: made with the client, so the device's memory steps do not count it.
    this.peer = new BenchGattPeer(this, world);
  }

  open(): void {
    // The device's GattConnection, subscribed (BleBinding.onConnect, onSubscribe).
    const conn = new GattConnection<object, BenchGattPeer>(this.peer, () => {});
    conn.characteristic = this.peer.characteristic;
    this.conn = conn;
    // A paired (bonded) central: the connection's ceiling is the hub's (docs/security.md "BLE").
    const link = BleLink.attach(this.world.hub, conn, this.world.clock, { queue: { bytes: DEVICE_BLE_QUEUE_BYTES }, tierCeiling: Tier.maintainer, wake: this.world.ble }, true);
    conn.link = link;
    this.link = link;
    this.world.ble.conns.push(conn);
  }

  /** A notification reached the client (not counted). */
  notified(value: Uint8Array, length: number): void {
    this.reassembler.push(value, 0, length, this.world.clock.t);
  }

  /** The stack reports the notification in flight done: GattConnection's completion, counted as the binding's. */
  complete(now: number): void {
    const peer = this.peer;
    if (now < peer.completeAt) return;
    peer.completeAt = Infinity;
    const callback = peer.callback;
    if (callback === null) return;
    meter();
    callback(0);
    this.world.split.bind('ble', this.world.take());
  }

  protected deliverToHub(frame: Uint8Array, length: number): void {
    const link = this.link;
    if (!link) return;
    this.fragmenter.begin(frame, 0, length);
    const size = fragmentSize(BLE_MAXIMUM_WRITE);
    for (;;) {
      const n = this.fragmenter.next(this.write, size);
      if (n === 0) break;
      meter();
      link.written(this.write, 0, n);
      // The device's GATT write glue before it (DeviceWorld.gattWriteCost).
      this.world.split.ingest('ble', this.world.take() + this.world.gattWriteCost);
    }
  }
}

/** BleBinding's tick (bindings/ble/device.ts, which imports the SDK): the connections' links ticked, a warning once. */
class BenchBleBinding {
  private warned = false;
  /** BleBinding's: when its links' ticks next have work (bindings/ble/link.ts TickWake). */
  dueAt = -Infinity;
  readonly conns: GattConnection<object, BenchGattPeer>[] = [];
  constructor(private readonly clock: Clock) {}
  tick(now: number = this.clock.now()): void {
    if (now < this.dueAt) return;
    if (tickConnections(this.conns, now, this) && !this.warned) this.warned = true;
  }
}

/** An ESP-NOW peer: numbered datagrams to the hub, bitmap ACKs of the hub's unicast stream. */
class EspNowClient extends Client {
  readonly mac: number;
  readonly unicast = new AckTracker();
  private firstFreshAt = 0;
  private seq = 0;
  private readonly out = new Uint8Array(DATAGRAM_MAX_BYTES);
  private readonly ackW = new CborWriter(new Uint8Array(16));
  private readonly cursor = new DatagramCursor();

  constructor(spec: MixClient, world: DeviceWorld, mac: number) {
    super(spec, world);
    this.mac = mac;
  }

  /** A datagram from the hub reached this peer (not counted). */
  datagram(data: Uint8Array, length: number, now: number): void {
    const c = this.cursor;
    if (c.open(data, length) !== 0) throw new Error('device bench: a malformed datagram from the hub');
    if (this.unicast.fresh === 0) this.firstFreshAt = now;
    this.unicast.record(c.seq);
    while (c.next()) this.frameReceived(data[c.start] as number);
  }

  override timers(now: number): void {
    super.timers(now);
    const u = this.unicast;
    if (u.any && (u.fresh >= PEER_ACK_EVERY || (u.fresh > 0 && now - this.firstFreshAt >= PEER_ACK_PERIOD_MS))) {
      u.take();
      const w = this.ackW;
      w.reset();
      encodeBitmapAck(w, u.base, u.bitmap);
      this.world.counts.acks++;
      this.deliverToHub(w.buf, w.pos);
    }
  }

  protected deliverToHub(frame: Uint8Array, length: number): void {
    const out = this.out;
    writeHeader(out, 0, this.seq);
    this.seq = (this.seq + 1) & 0xffff;
    out[HEADER_BYTES] = length;
    copy(frame, length, out, HEADER_BYTES + 1);
    this.world.espnowModule.receive(this.mac, out, HEADER_BYTES + 1 + length);
  }
}

/**
 * The stand-in for the ESP-NOW native module (bindings/espnow/native/espnow.c) under the device's
 * NativeRadio (bindings/espnow/native-radio.ts), as a model with stated parameters: one datagram
 * in flight, its send status after RADIO_AIRTIME_MS, RADIO_LOSS of unicast ones failing; each
 * send status and each peer's datagram wakes the VM (onReady) on its own, and the radio's drain
 * polls it, as on the device at these rates. What the module does is native on the device and not
 * counted; what calling `send` and `poll` costs beyond a host function is measured and not counted
 * either (as NativeRadio's callers pay only a host function's call on the device).
 */
class BenchEspNowModule implements EspNowNativeApi {
  doneAt = Infinity;
  onReady: () => void = () => {};
  entrySend = 0;
  entryPoll = 0;
  private probing = false;
  private mac = 0;
  private ok = true;
  private readonly data = new Uint8Array(DATAGRAM_MAX_BYTES);
  private length = 0;
  /** The event waiting for `poll` (POLL_EMPTY: none): a send status or a datagram, the station's MAC and the datagram. */
  private event = POLL_EMPTY;
  private eventMac = 0;
  private readonly eventData = new Uint8Array(DATAGRAM_MAX_BYTES);
  private readonly macNumber = new Float64Array(1);
  private readonly macNumberBytes = new Uint8Array(this.macNumber.buffer);
  constructor(private readonly world: DeviceWorld) {}

  addPeer(_mac: Uint8Array, _encrypt: boolean, _lmk: Uint8Array | undefined): number {
    return RadioStatus.OK;
  }
  removePeer(_mac: Uint8Array): number {
    return RadioStatus.OK;
  }
  send(mac: number | Uint8Array, data: Uint8Array, length: number): number {
    if (this.probing) return 0;
    this.world.pause();
    this.world.discount(this.entrySend);
    let r: number = RadioStatus.OK;
    if (this.doneAt !== Infinity) r = RadioStatus.BUSY;
    else {
      // The driver copies the datagram.
      this.mac = typeof mac === 'number' ? mac : readMac(mac);
      this.length = length;
      copy(data, length, this.data, 0);
      this.ok = this.world.random.next() >= RADIO_LOSS;
      this.doneAt = this.world.clock.t + RADIO_AIRTIME_MS;
    }
    this.world.resume();
    return r;
  }
  poll(into: Uint8Array): number {
    if (this.probing) return 0;
    this.world.pause();
    this.world.discount(this.entryPoll);
    let r = this.event;
    if (r !== POLL_EMPTY) {
      // As the module: the MAC's bytes, the datagram's, the MAC as a number past them; one event
      // waits at a time here, so each is the last.
      writeMac(this.eventMac, into);
      if (r !== POLL_SENT && r !== POLL_SENT_FAILED) copy(this.eventData, r & POLL_LENGTH, into, MAC_BYTES);
      this.macNumber[0] = this.eventMac;
      copy(this.macNumberBytes, 8, into, POLL_BYTES);
      this.event = POLL_EMPTY;
      r |= POLL_LAST;
    }
    this.world.resume();
    return r;
  }
  dropped(): number {
    return 0;
  }
  postFailures(): number {
    return 0;
  }
  close(): void {}

  /** The datagram's airtime has passed: the peer has it (unless lost) and the radio reports, counted as the binding's. */
  complete(now: number): void {
    if (now < this.doneAt) return;
    this.doneAt = Infinity;
    if (this.ok) {
      const peer = this.world.peerByMac(this.mac);
      if (peer) peer.datagram(this.data, this.length, now);
    }
    this.event = this.ok ? POLL_SENT : POLL_SENT_FAILED;
    this.eventMac = this.mac;
    meter();
    this.onReady();
    this.world.split.bind('espnow', this.world.take());
  }

  /** A peer's datagram reaches the module: it wakes the VM, counted as the peer's ingress. */
  receive(mac: number, data: Uint8Array, length: number): void {
    this.event = length;
    this.eventMac = mac;
    copy(data, length, this.eventData, 0);
    meter();
    this.onReady();
    this.world.split.ingest('espnow', this.world.take());
  }

  /** The entries of one call of `send` and one of `poll` (entryBeyondHost). */
  measureEntry(): void {
    const b = new Uint8Array(1);
    this.probing = true;
    this.entrySend = entryBeyondHost(() => this.send(b, b, 0), () => Math.max(0, 0, 0));
    this.entryPoll = entryBeyondHost(() => this.poll(b), () => Math.max(0));
    this.probing = false;
  }
}

/** Device TCP/WS queue per connection (bindings/tcp/device.ts DEVICE_QUEUE_BYTES, which imports Moddable's modules: test/host/device-bench.test.ts holds the two equal). */
export const DEVICE_QUEUE_BYTES = 1600;

/** What a world runs besides its clients: by default the robot's streams and its log events. */
export interface WorldOptions {
  readonly streams?: readonly { readonly channel: string; readonly hz: number; readonly fields: number }[];
  readonly log?: boolean;
  /** The catalog the hub serves (the default catalog unless given). */
  readonly catalog?: Catalog;
  /** Leaves the hub and the ESP-NOW binding to boot(): the memory case measures them as a step of their own. */
  readonly deferBoot?: boolean;
  /**
   * How each push's DATA frame is written: 'device' (the default) as the device writes it, in C
   * (device/native/samplewriter.c), which the world stands in for and does not count (the report
   * adds the C's own time for `nativeFrames` and `nativeValues`); 'script' by the hub in script,
   * as the Linux simulator target and the host write it.
   */
  readonly sampleWriter?: 'device' | 'script';
  /** The ESP-NOW binding's class, in place of the one `sampleWriter` chooses (a build with the C linked in, to check the model). */
  readonly EspNowBinding?: typeof EspNowBinding;
}

/**
 * The device's SampleWriter (device/native/samplewriter.c) as the bench counts it: the call into
 * it counts, the writing inside does not (C on the device; the report adds the C's own time,
 * measured on the host, for the frames and values counted here). The work runs in script
 * between the world's pause() and resume(), byte for byte what the C writes.
 */
export class NativeSampleWriterStandIn implements SampleWriter {
  frames = 0;
  values = 0;
  /** What entering `writeSample` costs beyond a host function's call with as many arguments (as NativeSampleRouterStandIn.entry). */
  entry = 0;
  private probing = false;
  private readonly inner = new ScriptSampleWriter();
  constructor(private readonly world: DeviceWorld) {}

  /** As NativeSampleRouterStandIn.measureEntry. */
  measureEntry(): void {
    const b = new Uint8Array(1);
    this.probing = true;
    this.entry = entryBeyondHost(() => this.writeSample(b, 0, 0, 0, b.buffer, 0, 0), () => Math.max(0, 0, 0, 0, 0, 0, 0));
    this.probing = false;
  }

  writeSample(b: Uint8Array, p: number, seq: number, t: number, values: ArrayBufferLike, at: number, count: number): number {
    if (this.probing) return 0;
    this.world.pause();
    this.world.discount(this.entry);
    this.frames++;
    this.values += count;
    return this.write(b, p, seq, t, values, at, count);
  }

  private write(b: Uint8Array, p: number, seq: number, t: number, values: ArrayBufferLike, at: number, count: number): number {
    const end = this.inner.writeSample(b, p, seq, t, values, at, count);
    this.world.resume();
    return end;
  }
}

/**
 * The device's SampleRouter (device/native/route.h behind device/native/route.c) as the bench
 * counts it: the call into it counts, and so does all the script it calls (a link's `level` and
 * `send`, the hub's `dataFrame` and `turn`); the route's own steps do not (C on the device), and
 * run here in script between the world's pause() and resume(), step for step what route.h does.
 * `reads` counts the C's reads and writes of script objects' properties (a session, its link,
 * its never-shed queue's size, its sentFrames; property lookups in XS's C, which the report
 * prices apart), `calls` its calls into script.
 */
export class NativeSampleRouterStandIn implements SampleRouter {
  pushes = 0;
  subscribers = 0;
  reads = 0;
  /** Of them, reads of accessor properties (a typed array's length, byteOffset, buffer): each runs a native getter. */
  accessors = 0;
  calls = 0;
  turns = 0;
  private buffer: ArrayBufferLike | null = null;
  private f64: Float64Array<ArrayBufferLike> = new Float64Array(0);
  private u8: Uint8Array<ArrayBufferLike> = new Uint8Array(0);
  private u16: Uint16Array<ArrayBufferLike> = new Uint16Array(0);
  private i8: Int8Array<ArrayBufferLike> = new Int8Array(0);
  private lay: Uint32Array<ArrayBufferLike> = new Uint32Array(0);
  private readonly writer = new ScriptSampleWriter();
  constructor(private readonly world: DeviceWorld) {}

  /** What entering `route` costs beyond a host function's call with as many arguments (measureEntry), taken off each call's count. */
  entry = 0;
  private probing = false;

  /**
   * The device's route is a host function: a call into it runs no bytecode of its own, where a
   * script function's entry sets up each of its parameters. What this one's entry costs beyond
   * a host function's call with the same arguments (Math.max) is measured here and taken off
   * each call.
   */
  measureEntry(): void {
    const v = new Float64Array(1);
    this.probing = true;
    this.entry = entryBeyondHost(() => this.route(this as unknown as RouteHost, v, 0, v, 0, 0), () => Math.max(0, 0, 0, 0, 0, 0));
    this.probing = false;
  }

  route(host: RouteHost, route: object, t: number, values: Float64Array, count: number, now: number): number {
    if (this.probing) return 0;
    this.world.pause();
    this.world.discount(this.entry);
    return this.walk(host, route as RouteState, t, values, count, now);
  }

  /** device/native/route.c and route.h's routePush, in script, the world paused but for the calls into script. */
  private walk(host: RouteHost, route: RouteState, t: number, values: Float64Array, count: number, now: number): number {
    const w = this.world;
    const ch = route.ch;
    const fields = ch.fieldCount;
    this.reads += 4;
    if (ch.critical || host.levelFloor >= 1) {
      w.resume();
      return -1;
    }
    this.pushes++;
    const seq = route.seq === 0xffffffff ? 0 : route.seq + 1;
    route.seq = seq;
    this.reads += 4;
    const table = host.tableBuffer;
    if (this.buffer !== table) {
      // Views made once per table (the C takes the buffer's address at each call instead).
      this.buffer = table;
      this.f64 = new Float64Array(table, 0, table.byteLength >>> 3);
      this.u8 = new Uint8Array(table);
      this.u16 = new Uint16Array(table, 0, table.byteLength >>> 1);
      this.i8 = new Int8Array(table);
      this.lay = new Uint32Array(host.layout);
    }
    const L = this.lay;
    const f64 = this.f64;
    const u8 = this.u8;
    const wide = L[8] as number;
    const slotCount = L[11] as number;
    const index = route.index;
    this.reads++;
    const end = wide === 2 ? (this.u16[((L[12] as number) >>> 1) + index] as number) : (u8[(L[12] as number) + index] as number);
    if (end === 0) {
      w.resume();
      return 0;
    }
    let n = fields;
    if (count < n) n = count > 0 ? count - (count % 1) : 0;
    if (n > values.length) n = values.length;
    const lastAt = route.lastAt;
    const gated = route.shedBase !== host.segmentsBase;
    const tag = route.tag | host.sharedFlag;
    const slots = host.slots;
    host.frame = null;
    host.routing = true;
    // lastAt, shedBase, segmentsBase, tag, sharedFlag, slots, frame, routing, data; the values' length (an accessor).
    this.reads += 9;
    this.accessors++;
    const first = index * slotCount;
    const granted = (L[0] as number) / 8;
    const nextDue = (L[1] as number) / 8;
    const lastValues = (L[2] as number) / 8;
    const subs = L[3] as number;
    const firstPush = L[4] as number;
    const sourceDropped = L[5] as number;
    const decimation = L[6] as number;
    const lastLen = L[7] as number;
    let rateGated = 0;
    let clear = 0;
    let drops = 0;
    let delivered = 0;
    let frame: Uint8Array | null = null;
    // The frame was written by this walk (route.c knows its bytes), not by a turn (its view is asked).
    let framedHere = false;
    for (let i = 0; i < end; i++) {
      const slot = wide === 2 ? (this.u16[(subs >>> 1) + first + i] as number) : (u8[subs + first + i] as number);
      if (slot >= slotCount) continue;
      const k = first + slot;
      this.subscribers++;
      this.reads += 2;
      const s = slots[slot] as { link: Link | null; neverShed: { size: number }; sentFrames: number } | null;
      if (s === null || s === undefined) continue;
      const link = s.link;
      if (link === null) continue;
      let g = 0;
      let due = 0;
      if (gated) {
        g = f64[granted + k] as number;
        if (!(g > 0) || now < (due = f64[nextDue + k] as number)) {
          rateGated++;
          continue;
        }
      } else if (!((f64[granted + k] as number) > 0)) {
        rateGated++;
        u8[sourceDropped + k] = 1;
        continue;
      }
      // route.c routeLevel: a link whose level stands has it in `lvl` (hub/ports.ts LinkLevelFields); any other runs its getter.
      let level: number;
      const d = (link as unknown as Partial<LinkLevelFields>).detector;
      this.reads++;
      if (d !== null && typeof d === 'object' && ((this.reads += 2), d.judgements === (link as unknown as LinkLevelFields).judgementsSeen)) {
        this.reads++;
        level = (link as unknown as LinkLevelFields).lvl;
      } else {
        this.calls++;
        w.resume();
        level = link.level;
        w.pause();
      }
      if (level >= 1 || u8[sourceDropped + k] === 1 || (this.reads += 2, s.neverShed.size > 0)) {
        this.calls++;
        this.turns++;
        w.resume();
        const went = host.turn(route, s, link, k, slot, level, seq, t, values, n, now);
        w.pause();
        this.reads++;
        frame = host.frame;
        framedHere = false;
        if (!went) continue;
      } else {
        clear++;
        if (u8[decimation + 2 * k] !== 1) {
          u8[decimation + 2 * k] = 1;
          u8[decimation + 2 * k + 1] = 0;
        }
        if (frame === null) {
          frame = this.frame(host, route, seq, t, values, n);
          framedHere = true;
        }
        let took = routeDirect(link as unknown as Partial<SocketDirectFields>, frame, framedHere, now, this, w);
        if (!took) {
          this.calls++;
          w.resume();
          took = link.send(frame, tag, seq);
          w.pause();
        }
        if (!took) {
          drops++;
          if (!gated) u8[sourceDropped + k] = 1;
          continue;
        }
        this.reads += 2;
        s.sentFrames++;
      }
      delivered++;
      u8[firstPush + k] = 0;
      if (gated) {
        g = 1000 / g;
        due += g;
        f64[nextDue + k] = due < now - g ? now + g : due;
      }
      if (lastAt >= 0) {
        // The values' byteOffset and buffer (accessors).
        this.accessors += 2;
        const at = lastValues + lastAt + slot * fields;
        for (let j = 0; j < n; j++) f64[at + j] = values[j] as number;
        this.i8[lastLen + k] = n;
      }
    }
    host.routing = false;
    this.reads += 2;
    if (host.frame !== null) {
      // The push buffer whole again (route.c routeOpen: two reads, the resize, a write), the frame forgotten.
      const data = (host as unknown as { data: SealedBytes }).data;
      this.resize(data, data.capacity);
      data.sealedAt = -1;
      host.frame = null;
      this.reads += 4;
    }
    const counters = (host as unknown as { counters: HubCounters }).counters;
    this.reads++;
    if (rateGated > 0) {
      counters.rateGated += rateGated;
      this.reads += 2;
    }
    if (drops > 0) {
      counters.egressDrops += drops;
      this.reads += 2;
    }
    if (delivered > 0) {
      counters.delivered += delivered;
      this.reads += 2;
    }
    if (clear > 0) {
      counters.rows[1] = (counters.rows[1] as number) + clear;
      this.reads += 3;
    }
    w.resume();
    return delivered;
  }

  /**
   * route.c routeFrame: the push's DATA frame in the egress's push buffer (hub/bytes.ts
   * SealedBytes), as Egress.dataFrame writes it, with the DATA writer's C; counted as the
   * device's DATA writer (the world's nativeData: the report adds the C's time for it).
   */
  private frame(host: RouteHost, route: RouteState, seq: number, t: number, values: Float64Array, n: number): Uint8Array {
    const data = (host as unknown as { data: SealedBytes }).data;
    // sealedAt, prefix, prefixed, bytes, rab, sealedAt, frame; the values' byteOffset and buffer (accessors); the resize (counted in resize()).
    this.reads += 7;
    this.accessors += 2;
    if (data.sealedAt >= 0) {
      this.resize(data, data.capacity);
      data.sealedAt = -1;
      this.reads += 3;
    }
    data.bytes.set(route.prefix);
    host.prefixed = route.prefix;
    const writer = this.world.nativeData;
    if (writer !== null) {
      writer.frames++;
      writer.values += n;
    }
    const end = this.writer.writeSample(data.bytes, route.prefix.length, seq, t >= 0 && t <= Number.MAX_SAFE_INTEGER ? t - (t % 1) : 0, values.buffer, values.byteOffset, n);
    this.resize(data, end);
    data.sealedAt = end;
    const frame = data.bytes;
    host.frame = frame;
    return frame;
  }

  /**
   * route.c's resize of the push buffer (`rab.resize`, an XS builtin the C calls): counted as the
   * builtin is metered, with the call that makes it (about what the C's call costs).
   */
  private resize(data: SealedBytes, length: number): void {
    const rab = (data as unknown as { rab: { resize(n: number): void } }).rab;
    this.world.resume();
    rab.resize(length);
    this.world.pause();
  }
}

/** What routeDirect counts of the C's work: its reads and writes of properties, and its asks of a view's bytes. */
export interface DirectCount {
  reads: number;
  accessors: number;
}

/**
 * device/native/route.c routeDirect, in script, step for step: TcpLink.send's first branch for a
 * link straight on the device's socket (bindings/tcp/socket-port.ts SocketDirectFields), the
 * steady case only; false, before anything is written, for any other, and the link's `send` runs.
 * `count` takes what the C reads and writes (priced as the route's), `world` (paused) is resumed
 * around the socket's writes, which the C calls as the script would. test/host/socket-direct.test.ts
 * holds it to TcpLink.send.
 */
export function routeDirect(link: Partial<SocketDirectFields>, frame: Uint8Array, framedHere: boolean, now: number, count: DirectCount | null, world: { resume(): void; pause(): void } | null): boolean {
  const c = count ?? { reads: 0, accessors: 0 };
  c.reads++;
  // (An XS reference is an object or a function: a BLE link's `direct` is a method.)
  const port = link.direct as SocketDirectPort | null | undefined;
  if (port === null || (typeof port !== 'object' && typeof port !== 'function')) return false;
  c.reads++;
  const socket = port.socket;
  if (socket === null || (typeof socket !== 'object' && typeof socket !== 'function')) return false;
  c.reads += 2;
  if ((link.queue as { held: number }).held !== 0) return false;
  c.reads += 3;
  const acks = link.acks as SocketDirectFields['acks'];
  const started = acks.started;
  if (!(started >= 0 && started === Math.floor(started) && started < (link.windowEnd as number))) return false;
  c.reads++;
  const framing = link.framing;
  if (!framedHere) c.accessors++;
  const bytes = frame.length;
  let h0: number;
  let h1: number;
  if (framing === 0 && bytes <= 0xffff) {
    h0 = bytes >>> 8;
    h1 = bytes & 0xff;
  } else if (framing === 1 && bytes < 126) {
    h0 = 0x82;
    h1 = bytes;
  } else return false;
  c.reads++;
  if (!(port.room >= bytes + 2)) return false;
  if (!(now >= 0 && now <= 0xffffffff && now === Math.floor(now))) return false;
  c.reads += 3;
  const tp = link.throughput as SocketDirectFields['throughput'];
  if (!(now - tp.windowStart < tp.windowMs && now >= tp.windowStart)) return false;
  c.reads += 2;
  const d = link.detector;
  if (d === null || typeof d !== 'object' || d.queue !== 0) return false;
  c.reads++;
  if (!(started + 1 < (link.lagFrom as number))) return false;
  c.reads += 2;
  const ring = acks.handedAt;
  const mask = acks.mask;
  if (ring === null || typeof ring !== 'object' || !(mask >= 0 && mask <= 0x7fffffff && mask === Math.floor(mask))) return false;
  c.reads++;
  c.accessors++;
  const hdr = link.hdr2 as Uint8Array;
  if (hdr.length < 2) return false;
  hdr[0] = h0;
  hdr[1] = h1;
  let left: unknown;
  let wrote = false;
  world?.resume();
  try {
    socket.write(hdr);
    left = socket.write(frame);
    wrote = true;
  } catch {
    wrote = false;
  }
  world?.pause();
  if (wrote) {
    c.reads += 4;
    const free = typeof left === 'number' ? left : 0;
    port.free = free;
    let space = port.limit - (port.total - free);
    if (space > free) space = free;
    port.room = space > 0 ? space : 0;
  } else {
    // A dead socket: the port ends it and the link is told (TcpLink.transportClosed leaves the
    // ack counter as it is); the frame counts as the script counts it.
    c.reads++;
    world?.resume();
    port.end();
    world?.pause();
  }
  c.reads += 5;
  (ring as Float64Array)[(started % 0x100000000) & mask] = now;
  acks.started = started + 1;
  tp.bytes = tp.bytes + bytes + 2;
  (link as SocketDirectFields).movedAt = now;
  return true;
}

/** The route's fields the device's route reads and writes (hub/session.ts ChannelRoute). */
interface RouteState {
  seq: number;
  readonly prefix: Uint8Array;
  readonly index: number;
  readonly lastAt: number;
  readonly tag: number;
  readonly shedBase: number;
  readonly ch: { readonly fieldCount: number; readonly critical: boolean };
}

/**
 * The device's FrameReader (device/native/fastreader.h behind device/native/fastreader.c) as the
 * bench counts it: the call into it counts, its reading does not (C on the device): the script
 * reader's, between the world's pause() and resume(), reads the same frames to the same verdicts
 * and numbers (test/host/fast-native.test.ts). `reads` counts what the C reads and writes of
 * the reader's fields (its block and numbers for a frame that may be a BUNDLE, the results),
 * which the report prices as the route's.
 */
export class NativeFrameReaderStandIn extends FastReader {
  frames = 0;
  reads = 0;
  /** Reads of accessor properties (as NativeSampleRouterStandIn.accessors). */
  accessors = 0;
  /** What entering `read` costs beyond a host function's call with as many arguments (as NativeSampleRouterStandIn.entry). */
  entry = 0;
  private probing = false;
  constructor(
    private readonly world: DeviceWorld,
    keepWidth: number,
  ) {
    super(keepWidth);
  }

  /** As NativeSampleRouterStandIn.measureEntry. */
  measureEntry(): void {
    const b = new Uint8Array(1);
    this.probing = true;
    this.entry = entryBeyondHost(() => this.read(b, 0, 0), () => Math.max(0, 0, 0));
    this.probing = false;
  }

  override read(buf: Uint8Array, start: number, end: number): number {
    if (this.probing) return 0;
    this.world.pause();
    this.world.discount(this.entry);
    return this.readUncounted(buf, start, end);
  }

  private readUncounted(buf: Uint8Array, start: number, end: number): number {
    const type = super.read(buf, start, end);
    this.frames++;
    // fastreader.c: a frame that may be a BUNDLE takes the block, its numbers' buffer and capacity (device/fast-native.ts keeps them as plain fields); an ACK or PING sets value; a BUNDLE channelId, count, width and finite.
    if (end - start >= 5 && buf[start] === 0xa3) this.reads += 3;
    if (type === T_ACK || type === T_PING) this.reads++;
    else if (type === T_BUNDLE) this.reads += 4;
    this.world.resume();
    return type;
  }
}

/**
 * The device's ESP-NOW C (device/native/espnowsent.c: the binding's `sent` and its links' `send`)
 * as the bench counts it: each course runs in script between the world's pause() and resume(),
 * line for line the C's (bench/espnow-sent.ts over the binding's real objects), each of its
 * property accesses, typed-array elements and calls into script counted for the report to price;
 * the script it calls is counted as it runs.
 */
export class NativeEspNowSentStandIn {
  statuses = 0;
  sends = 0;
  /** The send status's course and the links' send's, each counted apart (the one is the binding's work, the other a delivery's). */
  readonly model: EsObjects;
  readonly sendModel: EsObjects;
  /** What entering the binding's `sent` costs beyond a host function's call with as many arguments (as NativeSampleRouterStandIn.entry). */
  entry = 0;
  /** The same for a link's `send`. */
  sendEntry = 0;
  private probing = false;
  /** The binding class whose `sent` and links' `send` are this stand-in, as the device's are the C (device/espnow-native.ts EspNowBindingNative). */
  readonly Binding: typeof EspNowBinding;
  constructor(private readonly world: DeviceWorld) {
    this.model = new EsObjects(world);
    this.sendModel = new EsObjects(world);
    const standIn = this;
    class EspNowLinkStandIn extends EspNowLink {
      override send(frame: Uint8Array, tag: number, seq: number): boolean {
        return standIn.send(this, frame, tag, seq);
      }
    }
    class EspNowBindingStandIn extends EspNowBinding {
      override sent(mac: number, ok: boolean): void {
        standIn.sent(this, mac, ok);
      }
    }
    Object.defineProperty(EspNowBindingStandIn.prototype, 'Link', { value: EspNowLinkStandIn });
    this.Binding = EspNowBindingStandIn;
  }

  /** As NativeSampleRouterStandIn.measureEntry, through `binding`'s own `sent` and its first link's `send` (a binding of another class is left alone). */
  measureEntry(binding: EspNowBinding): void {
    if (!(binding instanceof this.Binding)) return;
    const frame = new Uint8Array(1);
    const link = binding.peers()[0];
    this.probing = true;
    this.entry = entryBeyondHost(() => binding.sent(0, true), () => Math.max(0, 0));
    if (link !== undefined) this.sendEntry = entryBeyondHost(() => link.send(frame, 0, 0), () => Math.max(0, 0, 0));
    this.probing = false;
  }

  sent(binding: EspNowBinding, mac: number, ok: boolean): void {
    if (this.probing) return;
    this.world.pause();
    this.world.discount(this.entry);
    this.statuses++;
    this.model.sent(binding, mac, ok);
    this.world.resume();
  }

  send(link: EspNowLink, frame: Uint8Array, tag: number, seq: number): boolean {
    if (this.probing) return false;
    this.world.pause();
    this.world.discount(this.sendEntry);
    this.sends++;
    const took = this.sendModel.send(link, frame, tag, seq);
    this.world.resume();
    return took;
  }
}

/** What one of the device's ESP-NOW courses in C did: its property accesses, typed-array elements and calls into script. */
export interface EsTally {
  reads: number;
  elements: number;
  calls: number;
}

/** What the device's ESP-NOW C did in the measured interval (NativeEspNowSentStandIn; zeros all in script): send statuses and sends, each course's tally. */
export interface EspNowSentCounts {
  statuses: number;
  sends: number;
  sent: EsTally;
  send: EsTally;
}

function tallyOf(m: EsObjects | null): EsTally {
  if (m === null) return { reads: 0, elements: 0, calls: 0 };
  const c = m.counts;
  return { reads: c.reads, elements: c.elements, calls: c.calls.reduce((a, b) => a + b, 0) };
}

function espnowCounts(s: NativeEspNowSentStandIn | null): EspNowSentCounts {
  return { statuses: s?.statuses ?? 0, sends: s?.sends ?? 0, sent: tallyOf(s?.model ?? null), send: tallyOf(s?.sendModel ?? null) };
}

function espnowSince(s: NativeEspNowSentStandIn | null, from: EspNowSentCounts): EspNowSentCounts {
  const now = espnowCounts(s);
  const less = (a: EsTally, b: EsTally): EsTally => ({ reads: a.reads - b.reads, elements: a.elements - b.elements, calls: a.calls - b.calls });
  return { statuses: now.statuses - from.statuses, sends: now.sends - from.sends, sent: less(now.sent, from.sent), send: less(now.send, from.send) };
}

const T_ACK = FrameType.ACK;
const T_PING = FrameType.PING;
const T_BUNDLE = FrameType.BUNDLE;

export class DeviceWorld {
  readonly clock = new VirtualClock();
  /** BleBinding's tick over the BLE clients' connections (each adds its own as it opens). */
  readonly ble = new BenchBleBinding(this.clock);
  readonly random = new FixedRandom();
  readonly catalog: CatalogIndex;
  /** Made by boot(): in the constructor unless `deferBoot`. */
  hub!: Hub;
  readonly robot = new BenchRobot();
  readonly split = new Split();
  readonly counts = new MixCounts();
  readonly clients: Client[] = [];
  kicked: StreamClient[] = [];
  private pumping: StreamClient[] = [];
  /** The ESP-NOW native module's stand-in, and the device's radio over it. */
  readonly espnowModule: BenchEspNowModule;
  readonly radio: NativeRadio;
  espnow: EspNowBinding | null = null;
  /** The stream connections' egress memory, made at boot as the device makes it (bindings/tcp/device.ts deviceTakePool). */
  takePool: TakePool | null = null;
  private readonly streams: { id: number; periodMs: number; next: number; fields: number }[] = [];
  private readonly values = new Float64Array(16);
  private nextLog = 0;
  private nextIntent = 0;
  private nextBundle = 0;
  private bundleSeq = 0;
  private readonly joystick: Client | null;
  private readonly console: Client | null;
  private readonly options: WorldOptions;
  private readonly cmdVel: number;
  private readonly setMode: number;
  readonly store: Store = new MemStore();
  private readonly config: Partial<HubConfig>;
  /** Runs after the hub's tick, counted as the binding `uplink` (bench/uplink.bench.ts: the fleet uplink's tick). */
  afterTick: (() => void) | null = null;
  /** The device's DATA writer, as the world counts it (null: the hub writes in script, `sampleWriter: 'script'`). */
  readonly nativeData: NativeSampleWriterStandIn | null;
  /** The device's route, as the world counts it (null: the hub routes in script, `sampleWriter: 'script'`). */
  readonly nativeRoute: NativeSampleRouterStandIn | null;
  /** The device's reader of the frequent client frames, as the world counts it, once the hub made it (null: the hub reads in script). */
  nativeReader: NativeFrameReaderStandIn | null = null;
  /** The device's ESP-NOW send status, as the world counts it (null: the binding's in script). */
  readonly nativeEspNow: NativeEspNowSentStandIn | null;

  constructor(mix: readonly MixClient[] = DEFAULT_MIX, options: WorldOptions = {}, config: Partial<HubConfig> = {}) {
    this.options = options;
    this.config = config;
    this.nativeData = options.sampleWriter === 'script' ? null : new NativeSampleWriterStandIn(this);
    this.nativeRoute = options.sampleWriter === 'script' ? null : new NativeSampleRouterStandIn(this);
    this.nativeEspNow = options.sampleWriter === 'script' ? null : new NativeEspNowSentStandIn(this);
    this.catalog = loadCatalog(options.catalog ?? DEFAULT_CATALOG);
    this.store.set(CREDENTIALS_KEY, encodeCredentials([{ tier: Tier.operator, credential: utf8(OPERATOR_CREDENTIAL) }]));
    this.espnowModule = new BenchEspNowModule(this);
    this.radio = new NativeRadio((onReady) => {
      this.espnowModule.onReady = onReady;
      return this.espnowModule;
    });
    let mac = 0x24000000001;
    for (const spec of mix) {
      if (spec.binding === 'tcp' || spec.binding === 'ws') this.clients.push(new StreamClient(spec, this));
      else if (spec.binding === 'ble') this.clients.push(new BleClient(spec, this));
      else this.clients.push(new EspNowClient(spec, this, mac++));
    }
    for (const s of options.streams ?? ROBOT_STREAMS) {
      const ch = this.catalog.byName(s.channel);
      if (!ch) throw new Error(`device bench: no channel ${s.channel}`);
      this.streams.push({ id: ch.id, periodMs: 1000 / s.hz, next: this.clock.t, fields: s.fields });
    }
    const find = (name: string): Client | null => this.clients.find((x) => x.spec.name === name) ?? null;
    this.joystick = find('joystick');
    this.console = find('console');
    const id = (name: string): number => {
      const ch = this.catalog.byName(name);
      if (!ch) throw new Error(`device bench: no channel ${name}`);
      return ch.id;
    };
    this.cmdVel = id('cmd_vel');
    this.setMode = id('set_mode');
    if (options.deferBoot !== true) this.boot();
  }

  /** The device's boot: the hub with the device's configuration, and the ESP-NOW binding when a client uses it. */
  boot(): void {
    const config = this.config;
    this.hub = new Hub(
      {
        clock: this.clock,
        random: this.random,
        store: this.store,
        robot: this.robot,
        catalog: this.catalog,
        sampleWriter: this.nativeData ?? undefined,
        sampleRouter: this.nativeRoute ?? undefined,
        frameReader: this.nativeData === null ? undefined : (keepWidth: number) => (this.nativeReader = new NativeFrameReaderStandIn(this, keepWidth)),
      },
      { slots: DEVICE_DEFAULTS.slots, tickPeriodMs: DEVICE_DEFAULTS.tick_ms, deadmanMs: DEVICE_DEFAULTS.deadman_ms, neverShedBytes: DEVICE_DEFAULTS.never_shed_bytes, maxFrameBytes: DEVICE_MAX_HUB_FRAME_BYTES, ...config },
    );
    // The device makes its TCP and WebSocket connections' egress memory at start, for as many as it serves.
    const streams = this.clients.filter((c) => c instanceof StreamClient).length;
    if (streams > 0) this.takePool = new TakePool(streams, DEVICE_QUEUE_BYTES, SOCKET_TAKE_BYTES);
    if (this.clients.some((c) => c.spec.binding === 'espnow')) {
      // The device pairs its ESP-NOW stations (docs/security.md): each client's MAC with a key of its own.
      const peers: EspNowPairing[] = [];
      for (const c of this.clients) if (c instanceof EspNowClient) peers.push({ mac: c.mac, lmk: new Uint8Array(16).fill(c.mac & 0xff) });
      // More stations than the default 7 encrypted peers take a build with ESP-IDF's limit raised (at most 17).
      const maxEncrypted = Math.max(ESPNOW_MAX_ENCRYPTED_PEERS, peers.length);
      const Binding = this.options.EspNowBinding ?? this.nativeEspNow?.Binding ?? EspNowBinding;
      this.espnow = new Binding({ clock: this.clock, radio: this.radio, attach: (link) => this.hub.attach(link), peers, maxEncrypted, queueBytes: DEVICE_ESPNOW_QUEUE_BYTES });
    }
  }

  /** The meter's own cost per measured interval, subtracted from each (set by calibrate()). */
  probe = 0;
  /** What one pause() and resume() add to an interval, subtracted per pair (set by calibrate()). */
  pauseCost = 0;
  /** What one read of the world's clock costs beyond a call of the device's host function (set by calibrate()), subtracted per read. */
  clockEntry = 0;
  private carry = 0;
  private pauses = 0;
  /** clockReads when the last interval was taken, and the reads since made while paused. */
  private readsMark = 0;
  private readsPaused = 0;

  /** Measures the meter's own costs on this engine: an empty interval, and a pause()/resume() pair. */
  calibrate(): void {
    this.probe = 0;
    this.pauseCost = 0;
    meter();
    let empty = 0;
    for (let i = 0; i < 16; i++) {
      meter();
      empty += this.take();
    }
    this.probe = empty / 16;
    let paired = 0;
    for (let i = 0; i < 16; i++) {
      meter();
      this.pause();
      this.resume();
      paired += this.take();
    }
    this.pauseCost = paired / 16;
    this.gattWriteCost = this.measureGattWrite();
    this.clockEntry = 0;
    this.clockEntry = this.measureClockEntry();
    this.nativeData?.measureEntry();
    this.nativeRoute?.measureEntry();
    this.nativeReader?.measureEntry();
    if (this.espnow !== null) this.nativeEspNow?.measureEntry(this.espnow);
    for (let i = 0; i < this.clients.length; i++) {
      const c = this.clients[i];
      if (c instanceof StreamClient && c.socket !== null) c.socket.measureEntry();
    }
    this.espnowModule.measureEntry();
    for (let i = 0; i < this.clients.length; i++) {
      const c = this.clients[i];
      if (c instanceof BleClient) c.peer.measureEntry();
    }
  }

  /**
   * What the device's GATT write glue costs per write beyond the link's own `written` (set by
   * calibrate()): the SDK's onWrite closure and bindings/ble/gatt-connection.ts gattWritten,
   * measured on a link attached to nothing, 8 writes each way. It makes one view over the SDK's
   * ArrayBuffer per write (an allocation the device cannot avoid), so the world adds its cost to
   * each BLE write rather than running it.
   */
  gattWriteCost = 0;

  private measureGattWrite(): number {
    const peer: GattPeer<object> = { maximumWrite: BLE_MAXIMUM_WRITE, notify: () => {}, close: () => {} };
    const conn = new GattConnection<object>(peer, () => {});
    const link = new BleLink(conn, this.clock, {}, false);
    conn.link = link;
    const conns = [conn];
    const onWrite = (value: ArrayBuffer, connection: GattPeer<object>): void => gattWritten(conns, value, connection);
    // An ONLY fragment (header 0) of a 7-byte frame: the link hands it to a sink it does not have.
    const buffer = new ArrayBuffer(8);
    const view = new Uint8Array(buffer);
    const glue = (): void => {
      for (let i = 0; i < 8; i++) onWrite(buffer, peer);
    };
    const direct = (): void => {
      for (let i = 0; i < 8; i++) link.written(view, 0, 8);
    };
    return entryBeyondHost(glue, direct) / 8;
  }

  /** What a read of the world's clock costs beyond a call of the device's clock (a host function), from 8 reads of each. */
  private measureClockEntry(): number {
    const reads = clockReads;
    const c = this.clock;
    const h = new HostClockProbe();
    const excess = entryBeyondHost(
      () => {
        for (let i = 0; i < 8; i++) c.now();
      },
      () => {
        for (let i = 0; i < 8; i++) h.now();
      },
    );
    clockReads = reads;
    this.readsMark = reads;
    this.readsPaused = 0;
    return excess / 8;
  }

  /**
   * Computrons of the interval ending now: what pause() set aside plus what ran since, less the
   * meter's own cost and what the clock's reads in it cost beyond the device's host function.
   */
  take(): number {
    const reads = clockReads - this.readsMark - this.readsPaused;
    this.readsMark = clockReads;
    this.readsPaused = 0;
    const c = meter() + this.carry - this.probe - this.pauses * this.pauseCost - reads * this.clockEntry;
    this.carry = 0;
    this.pauses = 0;
    return c > 0 ? c : 0;
  }

  /** The clients' side runs uncounted (off in the calibration, which counts and times everything alike). */
  pausing = true;

  /** Inside a measured interval: sets its count so far aside while the client side runs uncounted. */
  pause(): void {
    if (!this.pausing) return;
    this.carry += meter();
    this.pauses++;
    this.readsPaused -= clockReads;
  }

  /** Ends the uncounted stretch pause() began. */
  resume(): void {
    if (!this.pausing) return;
    this.readsPaused += clockReads;
    meter();
  }

  /** Takes `computrons` off the interval's count (a stand-in's entry, beyond what the device's host function costs). */
  discount(computrons: number): void {
    if (this.pausing) this.carry -= computrons;
  }

  peerByMac(mac: number): EspNowClient | undefined {
    // Indexed loops here and in step(): for-of makes an iterator, an allocation the per-delivery runs would count.
    const clients = this.clients;
    for (let i = 0; i < clients.length; i++) {
      const c = clients[i];
      if (c instanceof EspNowClient && c.mac === mac) return c;
    }
    return undefined;
  }

  /** Every client connects and says HELLO; the joystick takes control and arms. Then `warmMs` of the mix. */
  start(warmMs: number): void {
    this.open();
    this.hellos();
    const j = this.joystick;
    if (j !== null) {
      j.owner = true;
      j.send({ type: FrameType.INTENT, channelId: this.catalogId('take_control'), requestId: 1 });
      j.send({ type: FrameType.INTENT, channelId: this.catalogId('arm'), requestId: 2 });
      this.settle();
      if (this.hub.controlOwner === 0 || !this.hub.armed) throw new Error('device bench: the joystick did not take control and arm');
    }
    this.run(warmMs);
  }

  /** Every stream and BLE client connects (an ESP-NOW peer needs no connection). */
  open(): void {
    for (const c of this.clients) {
      if (c instanceof StreamClient || c instanceof BleClient) c.open();
      this.settle();
    }
  }

  /** Every client says HELLO with its subscriptions and publications. */
  hellos(): void {
    for (const c of this.clients) {
      c.hello();
      this.settle();
    }
    const open = this.hub.sessions().length;
    if (open !== this.clients.length) throw new Error(`device bench: ${open} of ${this.clients.length} HELLOs opened a session`);
  }

  private catalogId(name: string): number {
    const ch = this.catalog.byName(name);
    if (!ch) throw new Error(`device bench: no channel ${name}`);
    return ch.id;
  }

  /** Runs the transports until nothing is pending at this instant. */
  private settle(): void {
    for (let k = 0; k < 64 && this.kicked.length > 0; k++) {
      const list = this.kicked;
      this.kicked = this.pumping;
      this.pumping = list;
      for (let i = 0; i < list.length; i++) (list[i] as StreamClient).pump();
      list.length = 0;
    }
  }

  /** The device's tick (device/tick.ts) over this world, made at its first tick. */
  private deviceTick: DeviceTick | null = null;
  /** What stands for the device's native inputs under it: the button and the stop line, each answering as a host function does. */
  private readonly button: ButtonInput = { read: Math.abs as unknown as () => number };
  private readonly stopLine = { take: Number, feed: Number } as unknown as StopLineNative;

  /**
   * device/tick.ts's DeviceTick as device/main.ts makes it, over the world's hub, BLE connections and
   * ESP-NOW radio; stand-ins only for what is native on the device (the button, read as released; the
   * stop line, with no trips: builtins, as host functions are).
   */
  private makeDeviceTick(): DeviceTick {
    const hub = this.hub;
    const sampler = new ButtonSampler(hub, this.clock, DEVICE_DEFAULTS.estop_level, DEVICE_DEFAULTS.estop_debounce_ms);
    const ble = this.ble.conns.length > 0 ? this.ble : null;
    const stopPath = new NativeStopPath(this.stopLine, new StopPathLatch(hub, sampler));
    return new DeviceTick(hub, this.robot, { stopPath, button: this.button, sampler, ble, radio: this.espnow !== null ? this.radio : null, espnow: this.espnow, after: null }, NULL_LOG);
  }

  /** `ms` milliseconds of the mix, one millisecond at a time. */
  run(ms: number): void {
    const end = this.clock.t + ms;
    while (this.clock.t < end) {
      this.clock.t += 1;
      this.step(this.clock.t);
    }
  }

  private step(now: number): void {
    const hub = this.hub;
    const split = this.split;
    // The robot.
    const v = this.values;
    const streams = this.streams;
    const clients = this.clients;
    for (let k = 0; k < streams.length; k++) {
      const s = streams[k] as (typeof streams)[number];
      if (now < s.next) continue;
      s.next += s.periodMs;
      for (let i = 0; i < s.fields; i++) v[i] = Math.fround(0.5 + 0.001 * ((now + i * 37) % 1000));
      meter();
      hub.publishSample(s.id, now, v, s.fields);
      const c = this.take();
      split.delivery += c;
      split.byChannel[s.id] = (split.byChannel[s.id] ?? 0) + c;
    }
    if (this.options.log !== false && now >= this.nextLog) {
      this.nextLog = now + LOG_EVERY_MS;
      const log = this.catalog.byName('log');
      if (log) {
        meter();
        hub.publishEvent(log.id, now, [1, 1000 + (now % 50)], 'tick');
        split.delivery += this.take();
      }
    }
    this.settle();
    // The device's tick timer (device/tick.ts): the native stop paths' trips and heartbeat, the
    // hub, then the button's poll and the radios' upkeep, all counted as the tick.
    if (now % DEVICE_DEFAULTS.tick_ms === 0) {
      const tick = this.deviceTick ?? (this.deviceTick = this.makeDeviceTick());
      meter();
      tick.run();
      split.tick += this.take();
      if (this.afterTick !== null) {
        meter();
        this.afterTick();
        split.bind('uplink', this.take());
      }
      this.settle();
    }
    // The stacks report what they carried.
    for (let k = 0; k < clients.length; k++) {
      const c = clients[k];
      if (c instanceof BleClient) c.complete(now);
    }
    this.espnowModule.complete(now);
    this.settle();
    // The clients.
    if (this.joystick !== null && now >= this.nextBundle) {
      this.nextBundle = now + 1000 / JOYSTICK_HZ;
      this.counts.bundles++;
      this.bundleSeq++;
      (this.joystick as Client).sendBundle(this.cmdVel, now, 0.2, 0.1 * Math.sin(this.bundleSeq / 50));
    }
    if (this.console !== null && now >= this.nextIntent) {
      this.nextIntent = now + CONSOLE_INTENT_EVERY_MS;
      this.counts.intents++;
      (this.console as Client).send({ type: FrameType.INTENT, channelId: this.setMode, requestId: now, args: [1] });
    }
    for (let k = 0; k < clients.length; k++) (clients[k] as Client).timers(now);
    this.settle();
  }
}

/** One measured run of the mix: the split per simulated second and the counts behind it. */
export interface WorkloadResult {
  readonly seconds: number;
  readonly metered: boolean;
  readonly perSecond: { delivery: number; ingress: number; tick: number; bindings: number; total: number };
  readonly bindingsBy: Record<string, number>;
  readonly ingressBy: Record<string, number>;
  readonly deliveryByChannel: Record<string, number>;
  readonly counts: MixCounts;
  readonly deliveries: number;
  readonly ticks: number;
  /** The cost of one empty meter interval, subtracted from each measured one. */
  readonly probeComputrons: number;
  /** The cost a pause()/resume() pair adds to an interval, subtracted per pair. */
  readonly pauseComputrons: number;
  /** How the DATA frames were written, and what the device's C wrote in the measured seconds (not in the computrons). */
  readonly sampleWriter: 'device' | 'script';
  readonly native: { readonly frames: number; readonly values: number };
  /** What the device's route did in the measured seconds (NativeSampleRouterStandIn; zeros all in script): pushes through it, subscribers, its reads of script objects' properties, its calls into script, the rarer turns among them. */
  readonly route: RouteCounts;
  /** What entering each stand-in for the device's C costs beyond a host function's call, taken off each call (measureEntry). */
  readonly standInEntry: { readonly route: number; readonly data: number; readonly reader: number; readonly espnow: number };
  /** What the device's reader of the frequent client frames read in the measured seconds (NativeFrameReaderStandIn; zeros all in script): frames, its reads and writes of the reader's fields, and of them the accessors. */
  readonly reader: { readonly frames: number; readonly reads: number; readonly accessors: number };
  /** What the device's ESP-NOW send status did in the measured seconds (NativeEspNowSentStandIn; zeros all in script). */
  readonly espnow: EspNowSentCounts;
}

export interface RouteCounts {
  readonly pushes: number;
  readonly subscribers: number;
  readonly reads: number;
  readonly accessors: number;
  readonly calls: number;
  readonly turns: number;
}

function routeCounts(r: NativeSampleRouterStandIn | null): RouteCounts {
  return r === null ? { pushes: 0, subscribers: 0, reads: 0, accessors: 0, calls: 0, turns: 0 } : { pushes: r.pushes, subscribers: r.subscribers, reads: r.reads, accessors: r.accessors, calls: r.calls, turns: r.turns };
}

function routeSince(r: NativeSampleRouterStandIn | null, a: RouteCounts): RouteCounts {
  const b = routeCounts(r);
  return { pushes: b.pushes - a.pushes, subscribers: b.subscribers - a.subscribers, reads: b.reads - a.reads, accessors: b.accessors - a.accessors, calls: b.calls - a.calls, turns: b.turns - a.turns };
}

/** Warms the mix up for `warmMs`, then measures `seconds` of it; `sampleWriter` as WorldOptions says. */
export function runDeviceWorkload(seconds: number, warmMs = 3000, sampleWriter: 'device' | 'script' = 'device'): WorkloadResult {
  const world = new DeviceWorld(DEFAULT_MIX, { sampleWriter });
  world.start(warmMs);
  world.calibrate();
  world.split.reset();
  world.counts.framesToClients = 0;
  const before = world.hub.counters.delivered;
  const counts0 = { ...world.counts };
  const nd = world.nativeData;
  const native0 = nd === null ? { frames: 0, values: 0 } : { frames: nd.frames, values: nd.values };
  const route0 = routeCounts(world.nativeRoute);
  const reader0 = { frames: world.nativeReader?.frames ?? 0, reads: world.nativeReader?.reads ?? 0, accessors: world.nativeReader?.accessors ?? 0 };
  const espnow0 = espnowCounts(world.nativeEspNow);
  const s = world.split;
  world.run(seconds * 1000);
  const c = world.counts;
  const per = (x: number): number => x / seconds;
  const total = s.total();
  return {
    seconds,
    metered: metered(),
    perSecond: { delivery: per(s.delivery), ingress: per(s.ingress), tick: per(s.tick), bindings: per(s.bindings), total: per(total) },
    bindingsBy: Object.fromEntries(Object.entries(s.byBinding).map(([k, v]) => [k, per(v)])),
    ingressBy: Object.fromEntries(Object.entries(s.ingressBy).map(([k, v]) => [k, per(v)])),
    deliveryByChannel: Object.fromEntries(Object.entries(s.byChannel).map(([k, v]) => [k, per(v)])),
    counts: Object.assign(new MixCounts(), {
      framesToClients: c.framesToClients,
      framesFromClients: c.framesFromClients - counts0.framesFromClients,
      acks: c.acks - counts0.acks,
      pings: c.pings - counts0.pings,
      bundles: c.bundles - counts0.bundles,
      intents: c.intents - counts0.intents,
      estops: c.estops - counts0.estops,
      nacks: c.nacks - counts0.nacks,
    }),
    deliveries: world.hub.counters.delivered - before,
    ticks: (seconds * 1000) / DEVICE_DEFAULTS.tick_ms,
    probeComputrons: world.probe,
    pauseComputrons: world.pauseCost,
    sampleWriter,
    native: nd === null ? { frames: 0, values: 0 } : { frames: nd.frames - native0.frames, values: nd.values - native0.values },
    route: routeSince(world.nativeRoute, route0),
    standInEntry: { route: world.nativeRoute?.entry ?? 0, data: world.nativeData?.entry ?? 0, reader: world.nativeReader?.entry ?? 0, espnow: world.nativeEspNow?.entry ?? 0 },
    espnow: espnowSince(world.nativeEspNow, espnow0),
    reader: { frames: (world.nativeReader?.frames ?? 0) - reader0.frames, reads: (world.nativeReader?.reads ?? 0) - reader0.reads, accessors: (world.nativeReader?.accessors ?? 0) - reader0.accessors },
  };
}

// ------------------------------------------------------------------------------------------
// One delivery through each binding, and the calibration.

/** Subscribers per binding in the per-delivery runs: as the route bench, 8 (the hub's slots). */
export const PER_DELIVERY_SUBSCRIBERS = 8;

/**
 * The imu rate of the per-delivery runs, per binding: as fast as the binding's stand-in carries
 * without congestion, so that the figure is what one delivery costs and not what shedding does
 * (the default mix measures that). TCP and WebSocket take imu's full 200 Hz; a BLE link completes
 * one notification per 7.5 ms (133 a second); the radio carries one 2 ms datagram at a time for
 * every peer (8 × 40 = 320 a second, two thirds of its airtime).
 */
export const PER_DELIVERY_HZ: Readonly<Record<BindingName, number>> = Object.freeze({ tcp: 200, ws: 200, ble: 100, espnow: 40 });

/**
 * Computrons per delivery through one binding: 8 clients on `binding`, each subscribed to imu at
 * PER_DELIVERY_HZ (operator tier: the full rate), the robot pushing imu at that rate, every ACK
 * and PING the clients owe them, the transports completing what they carry. What is counted per delivery:
 * the hub's route (its share of the push's one encoding included), the link's send, and the
 * binding's own work to hand the frame on (a take, a notification's completion, a datagram's
 * send status).
 */
export function perDelivery(
  binding: BindingName,
  seconds = 2,
  sampleWriter: 'device' | 'script' = 'device',
): { computrons: number; deliveries: number; perDelivery: number; native: { frames: number; values: number }; route: RouteCounts; espnow: EspNowSentCounts } {
  const world = deliveryWorld(binding, sampleWriter);
  world.calibrate();
  world.split.reset();
  const before = world.hub.counters.delivered;
  const nd = world.nativeData;
  const f0 = nd?.frames ?? 0;
  const v0 = nd?.values ?? 0;
  const route0 = routeCounts(world.nativeRoute);
  const espnow0 = espnowCounts(world.nativeEspNow);
  world.run(seconds * 1000);
  const deliveries = world.hub.counters.delivered - before;
  const computrons = world.split.delivery + world.split.bindings;
  return { computrons, deliveries, perDelivery: deliveries > 0 ? computrons / deliveries : NaN, native: { frames: (nd?.frames ?? 0) - f0, values: (nd?.values ?? 0) - v0 }, route: routeSince(world.nativeRoute, route0), espnow: espnowSince(world.nativeEspNow, espnow0) };
}

/** The per-delivery world of `binding`, started: 8 clients on it, each subscribed to imu at PER_DELIVERY_HZ. */
export function deliveryWorld(binding: BindingName, sampleWriter: 'device' | 'script' = 'device'): DeviceWorld {
  const hz = PER_DELIVERY_HZ[binding];
  const mix: MixClient[] = [];
  for (let i = 0; i < PER_DELIVERY_SUBSCRIBERS; i++) {
    mix.push({ name: `${binding}-${i}`, binding, operator: true, subscriptions: [{ channel: 'imu', rateHz: hz }], publications: [] });
  }
  const world = new DeviceWorld(mix, { streams: [{ channel: 'imu', hz, fields: 6 }], log: false, sampleWriter });
  world.start(500);
  return world;
}

/**
 * Allocation per delivery through each binding: n simulated ms of the per-delivery world (the
 * clients' ACKs and PINGs included); an item is a delivery. On XS the harness's slot count shows
 * any allocation anywhere in it, the clients' stand-ins included (they allocate nothing).
 */
export function deviceDeliveryBench(binding: BindingName): () => OpBench {
  return () => {
    let world: DeviceWorld | null = null;
    return {
      kind: 'op',
      name: `device.deliver.${binding}`,
      title: `per-delivery world on ${binding}: 8 subscribers of imu at ${PER_DELIVERY_HZ[binding]} Hz, their ACKs and PINGs`,
      issue: 12,
      op: 'ms',
      item: 'delivery',
      xsOps: 100,
      setup() {
        metering = false;
        world = deliveryWorld(binding);
      },
      run(n) {
        const w = world as DeviceWorld;
        const before = w.hub.counters.delivered;
        w.run(n);
        return w.hub.counters.delivered - before;
      },
    };
  };
}

/**
 * Allocation per BUNDLE: the joystick alone on BLE, in control and armed, publishing cmd_vel at
 * 50 Hz, pinging every 200 ms and acknowledging the safety and control-owner values it receives,
 * with the hub's tick every 10 ms. One op is 20 simulated ms: one BUNDLE.
 */
export function deviceBundleBench(): OpBench {
  let world: DeviceWorld | null = null;
  const mix = DEFAULT_MIX.filter((c) => c.name === 'joystick');
  return {
    kind: 'op',
    name: 'device.ingress.bundle',
    title: 'the joystick on BLE: a cmd_vel BUNDLE every 20 ms, with its PINGs and ACKs and the tick',
    issue: 12,
    op: 'bundle',
    item: 'bundle',
    xsOps: 50,
    setup() {
      metering = false;
      world = new DeviceWorld(mix, { streams: [], log: false });
      world.start(500);
    },
    run(n) {
      const w = world as DeviceWorld;
      const before = w.counts.bundles;
      w.run(n * (1000 / JOYSTICK_HZ));
      return w.counts.bundles - before;
    },
  };
}

export interface Timer {
  now(): number;
}

/**
 * The calibration's fixed workload: the route the device runs most, one imu sample to 8
 * subscribers on real TCP links whose stand-in sockets read each frame, `n` times, everything
 * counted and timed alike. Returns computrons and wall ms inside the engine.
 */
export function calibrationRun(n: number, timer: Timer): { computrons: number; ms: number } {
  const mix: MixClient[] = [];
  for (let i = 0; i < PER_DELIVERY_SUBSCRIBERS; i++) mix.push({ name: `cal-${i}`, binding: 'tcp', operator: true, subscriptions: [{ channel: 'imu', rateHz: 200 }], publications: [] });
  // The hub writes its DATA frames in script here: every computron of the run is counted and
  // timed, the stand-in sockets' reading included.
  const world = new DeviceWorld(mix, { streams: [], log: false, sampleWriter: 'script' });
  world.start(0);
  world.pausing = false;
  const imu = world.catalog.byName('imu');
  if (!imu) throw new Error('device bench: no imu');
  const v = new Float64Array([0.5, 0.25, 9.75, 0.001, 0.002, 0.003].map((x) => Math.fround(x)));
  const hub = world.hub;
  meter();
  const t0 = timer.now();
  for (let i = 0; i < n; i++) {
    world.clock.t += 5;
    hub.publishSample(imu.id, world.clock.t, v, 6);
  }
  const ms = timer.now() - t0;
  const computrons = meter();
  return { computrons, ms };
}

// ------------------------------------------------------------------------------------------
// The tick with nothing due.

/**
 * Computrons of `hub.tick()` with the default mix's 8 sessions open and nothing due: the mix
 * connects, takes control and arms, then the clock moves one tick period at a time with no
 * traffic and each tick is metered. Returns the median and the largest of `ticks` ticks; a tick
 * in which a deadline falls due (a re-announcement, a stale check) is among them.
 */
export function idleTicks(ticks = 100): { median: number; max: number; sessions: number } {
  const world = new DeviceWorld(DEFAULT_MIX, { streams: [], log: false });
  world.start(0);
  world.calibrate();
  const hub = world.hub;
  const costs: number[] = [];
  for (let i = 0; i < ticks; i++) {
    world.clock.t += DEVICE_DEFAULTS.tick_ms;
    meter();
    hub.tick();
    costs.push(world.take());
  }
  costs.sort((a, b) => a - b);
  return { median: costs[costs.length >> 1] as number, max: costs[costs.length - 1] as number, sessions: hub.sessions().length };
}

// ------------------------------------------------------------------------------------------
// Memory at the device's configuration.

/** Subscriptions per session in the memory case (the issue's 8 sessions × 16 subscriptions). */
export const MEMORY_SUBSCRIPTIONS = 16;

/**
 * The device's configuration with every binding live: three Wi-Fi connections (one TCP, two
 * WebSocket), one BLE connection, ESP-NOW with 4 peers: 8 sessions, each subscribed to 16
 * telemetry channels of the bench catalog (the default catalog and IMU-shaped streams up to 16).
 * The Wi-Fi and BLE clients wish each channel's full rate; the ESP-NOW peers wish 1 Hz, so that
 * their grants are whole numbers and a WELCOME stating 16 of them fits the 246 bytes a frame may
 * have on ESP-NOW (docs/protocol.md §13.3.1).
 */
export function deviceMemoryMix(): MixClient[] {
  const full: { channel: string; rateHz: number }[] = [];
  const slow: { channel: string; rateHz: number }[] = [];
  for (const c of BENCH_CATALOG.channels) {
    if (c.direction !== 'telemetry' || full.length === MEMORY_SUBSCRIPTIONS) continue;
    full.push({ channel: c.name, rateHz: c.max_rate_hz });
    slow.push({ channel: c.name, rateHz: 1 });
  }
  const bindings: BindingName[] = ['tcp', 'ws', 'ws', 'ble', 'espnow', 'espnow', 'espnow', 'espnow'];
  return bindings.map((binding, i) => ({ name: `${binding}-${i}`, binding, operator: true, subscriptions: binding === 'espnow' ? slow : full, publications: [] }));
}

/** Seconds of the robot's streams the memory case runs, so that every ring and queue has been used. */
export const MEMORY_TRAFFIC_S = 2;

/**
 * What the hub and the bindings keep alive at the device's configuration, step by step; the
 * catalog is preloaded into flash on the device and the clients' stand-ins are made in setup,
 * so neither is counted. `device.memory` in the bench report is the `device` total against
 * manifest.json's `creation`.
 */
export function deviceMemoryBench(): RetainedBench {
  let world: DeviceWorld | null = null;
  const steps = [
    { name: 'hub', count: 1, per: 'idle hub, ESP-NOW binding and the Wi-Fi connections\' egress memory (new Hub, new EspNowBinding, the TakePool)' },
    { name: 'links', count: 4, per: 'stream or BLE link (1 TCP, 2 WebSocket with the upgrade, 1 BLE)' },
    { name: 'sessions', count: 8, per: `session with ${MEMORY_SUBSCRIPTIONS} subscriptions (HELLO; an ESP-NOW peer's link comes with its first datagram)` },
    { name: 'traffic', count: 1, per: `${MEMORY_TRAFFIC_S} s of the robot's streams at their default rates, the clients acknowledging` },
  ] as const;
  return {
    kind: 'retained',
    name: 'memory.device',
    title: 'retained heap of the hub and its bindings at the device configuration (8 sessions × 16 subscriptions)',
    issue: 12,
    steps,
    totals: [{ name: 'device', steps: steps.map((x) => x.name) }],
    setup() {
      world = new DeviceWorld(deviceMemoryMix(), { catalog: BENCH_CATALOG, deferBoot: true });
    },
    step(i) {
      const w = world as DeviceWorld;
      const name = steps[i]?.name;
      if (name === 'hub') w.boot();
      else if (name === 'links') w.open();
      else if (name === 'sessions') w.hellos();
      else if (name === 'traffic') {
        w.run(MEMORY_TRAFFIC_S * 1000);
        // Every binding still live: a session parked on the way would understate the heap.
        const live = w.hub.sessions().filter((v) => v.state === SessionState.ACTIVE).length;
        if (live !== 8) throw new Error(`bench: ${live} of 8 sessions are live after the traffic`);
      } else throw new Error(`bench: no step ${i}`);
    },
  };
}
