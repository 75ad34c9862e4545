// The side-by-side run (issue 7 item 5): one workload through the hub's real TCP binding
// (bindings/tcp/node.ts TcpListener, the client library on the other end) and through an MQTT
// broker (mosquitto, driven by bench/mqtt.ts), measured the same way for both, over loopback.
// Node only: scripts/side-by-side.mjs starts the broker and runs both; never part of `npm test`.
//
// The workload: a 6-float IMU sample at `rateHz` stamped with its send time, one small critical
// message every `criticalEveryMs`, a fast subscriber that reads everything as it comes and a slow
// one that takes at most `slowBytesPerSecond` off its socket, in one read every `slowPeriodMs`
// (the SlowReader below, the same code for both peers). Every time is the hub's clock:
// performance.now() floored to whole ms, as the device's Time.ticks.
//
// One asymmetry is the architecture's, not the bench's: in the hub the robot is the publisher,
// so samples enter through hub.publishSample in the hub's own process; an MQTT publisher is a
// client of the broker, one loopback hop further away.

import { execFileSync } from 'node:child_process';
import { randomFillSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { TcpListener } from '../bindings/tcp/node.js';
import type { TcpLink } from '../bindings/tcp/egress.js';
import { DEFAULT_CATALOG } from '../catalog/default.js';
import { loadCatalog } from '../catalog/index.js';
import { Tier } from '../catalog/schema.js';
import { HubClient } from '../client/core.js';
import { connectTcp, nodeClock } from '../client/node.js';
import { LengthPrefixReassembler, lengthPrefixed, type ClientTransport, type TransportFactory } from '../client/transport.js';
import { saveCredentials } from '../hub/credentials.js';
import { CborWriter } from '../hub/cbor.js';
import { encodeData, type DataFrame } from '../hub/frames.js';
import { Hub } from '../hub/hub.js';
import { MemoryStore, type Clock, type RobotPort } from '../hub/ports.js';
import { MqttClient, openSocket, type Qos } from './mqtt.js';

export interface Workload {
  /** Publishing runs this long before anything is measured. */
  readonly warmupMs: number;
  /** The measured window. */
  readonly durationMs: number;
  /** IMU samples per second (the catalog's `imu` maximum is 200). */
  readonly rateHz: number;
  /** One critical message this often, half a period after each of the window's boundaries. */
  readonly criticalEveryMs: number;
  /** The slow subscriber's read rate. */
  readonly slowBytesPerSecond: number;
  /** The slow subscriber reads once this often, at most its rate × this period each time. */
  readonly slowPeriodMs: number;
  /** After the window, publishing stops and critical messages still on their way get this long. */
  readonly drainMs: number;
  /** The hub's tick (the device runs it every 10 ms). */
  readonly tickMs: number;
  /** QoS of the MQTT critical topic (publish and subscribe). */
  readonly criticalQos: Qos;
}

export const FULL_WORKLOAD: Workload = Object.freeze({
  warmupMs: 2000,
  durationMs: 20000,
  rateHz: 200,
  criticalEveryMs: 1000,
  slowBytesPerSecond: 8000,
  slowPeriodMs: 50,
  drainMs: 3000,
  tickMs: 10,
  criticalQos: 1,
});

export const QUICK_WORKLOAD: Workload = Object.freeze({ ...FULL_WORKLOAD, warmupMs: 500, durationMs: 2500, drainMs: 500 });

export const HOST = '127.0.0.1';
// 'imu' makes an MQTT sample (2 + 2 + 3 + 64 = 71 bytes) as long as the hub's DATA frame in a
// run (69 + the 2-byte prefix while seq and t stay below 65536): the slow reader's byte rate is
// then the same number of samples per second on both wires.
export const MQTT_SAMPLE_TOPIC = 'imu';
export const MQTT_CRITICAL_TOPIC = 'safety';
/** MQTT sample payload: t, seq, then the 6 values, float64 little-endian. */
const MQTT_SAMPLE_BYTES = 8 * 8;
/** MQTT critical payload: t, n. */
const MQTT_CRITICAL_BYTES = 2 * 8;
const OPERATOR = Buffer.from('side-by-side-operator');

/** The hub's clock: whole milliseconds, as on the device. */
export const hubNow = (): number => Math.floor(performance.now());
const hubClock: Clock = Object.freeze({ now: hubNow });

// ---------------------------------------------------------------------------------------------
// The workload's parts, shared by both peers

/** An IMU-like sample that changes every time, so that every value is a float64 on both wires. */
function fillSample(values: Float64Array, seq: number): void {
  values[0] = 0.1 + seq * 1e-7;
  values[1] = -0.2 + seq * 1e-7;
  values[2] = 9.81 - seq * 1e-7;
  values[3] = 0.01 + seq * 1e-9;
  values[4] = -0.02 + seq * 1e-9;
  values[5] = 0.03 - seq * 1e-9;
}

/**
 * Calls `emit(i)` once per period on whole-ms targets of the hub clock, never early. A target
 * missed by more than a period is skipped, not caught up: neither peer gets a burst the other
 * does not (a robot's sensor does not sample twice to make up for a stalled host).
 */
class Pacer {
  emitted = 0;
  skipped = 0;
  private target = 0;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private stopped = false;
  private readonly fireBound = (): void => this.fire();

  constructor(
    private readonly periodMs: number,
    private readonly emit: (i: number) => void,
  ) {}

  start(): number {
    this.target = hubNow() + 1;
    this.schedule();
    return this.target;
  }

  stop(): void {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(this.fireBound, Math.max(0, this.target - performance.now()));
  }

  private fire(): void {
    const now = hubNow();
    if (now >= this.target) {
      while (now - this.target >= this.periodMs) {
        this.target += this.periodMs;
        this.skipped++;
      }
      this.emit(this.emitted++);
      this.target += this.periodMs;
    }
    this.schedule();
  }
}

/**
 * Takes at most `bytesPerPeriod` off a socket once every `periodMs`, the rest waits in the
 * socket (Node's buffer, then the kernel's): a slow link or a slow reader. The same object
 * reads the slow subscriber's socket for both peers.
 */
export class SlowReader {
  bytesRead = 0;
  private readonly timer: ReturnType<typeof setInterval>;

  constructor(
    private readonly socket: net.Socket,
    private readonly bytesPerPeriod: number,
    periodMs: number,
    private readonly sink: (chunk: Uint8Array) => void,
  ) {
    this.timer = setInterval(() => this.take(), periodMs);
    socket.on('close', () => clearInterval(this.timer));
  }

  private take(): void {
    const s = this.socket;
    let budget = this.bytesPerPeriod;
    while (budget > 0 && s.readableLength > 0) {
      const chunk = s.read(Math.min(budget, s.readableLength)) as Buffer | null;
      if (!chunk) break;
      budget -= chunk.length;
      this.bytesRead += chunk.length;
      this.sink(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length));
    }
    // Reading nothing asks the stream to fetch from the kernel again once it has room.
    if (s.readableLength === 0) s.read(0);
  }
}

/** What one subscriber saw in the window. */
class Meter {
  /** Ages (ms) of the samples that arrived in the window, in arrival order. */
  readonly ages: number[] = [];
  readonly perSecond: number[][] = [];
  firstSeq = -1;
  lastSeq = -1;
  /** Critical message n → latency (ms), for the ones sent in the window. */
  readonly critical = new Map<number, number>();

  constructor(private readonly clock: { windowStart: number; windowEnd: number }) {}

  sample(seq: number, t: number, at: number): void {
    const { windowStart, windowEnd } = this.clock;
    if (at < windowStart || at >= windowEnd) return;
    const age = at - t;
    this.ages.push(age);
    const sec = Math.floor((at - windowStart) / 1000);
    while (this.perSecond.length <= sec) this.perSecond.push([]);
    (this.perSecond[sec] as number[]).push(age);
    if (this.firstSeq < 0) this.firstSeq = seq;
    this.lastSeq = seq;
  }

  criticalMessage(n: number, t: number, at: number): void {
    if (!this.critical.has(n)) this.critical.set(n, at - t);
  }
}

// ---------------------------------------------------------------------------------------------
// Results

export interface Stats {
  readonly n: number;
  readonly p50: number | null;
  readonly p95: number | null;
  readonly max: number | null;
}

export interface CriticalStats extends Stats {
  readonly sent: number;
  readonly delivered: number;
  /** Messages not delivered by the end of the drain: counted at the time they had waited then, a lower bound. */
  readonly undelivered: number;
  /** Per message in sending order, ms; an undelivered one is its lower bound, negated. */
  readonly latenciesMs: readonly number[];
  /** The statistic counts an undelivered message whose true latency could move it: it is a lower bound. */
  readonly lowerBound: { readonly p50: boolean; readonly max: boolean };
}

export interface SubscriberResult {
  readonly samplesPerSecond: number;
  /** Samples delivered in the window ÷ samples published in the window. */
  readonly deliveredFraction: number;
  /** Publisher sequence numbers between the first and last sample received in the window that never arrived. */
  readonly seqMissing: number;
  readonly ageMs: Stats;
  /** Per second of the window: [samples, p50 age, max age]. */
  readonly agePerSecond: readonly (readonly [number, number | null, number | null])[];
  readonly criticalMs: CriticalStats;
  /** Bytes waiting for this subscriber at the end of the window, where they could be seen. */
  readonly backlogAtEnd: Record<string, number | null>;
}

export interface PeerResult {
  readonly peer: 'hub' | 'mosquitto';
  readonly published: { readonly samples: number; readonly samplesPerSecond: number; readonly critical: number; readonly pacerSkipped: number };
  /** Bytes one sample takes on the subscriber's wire (framing included). */
  readonly sampleWireBytes: number;
  readonly fast: SubscriberResult;
  readonly slow: SubscriberResult;
  readonly notes: Record<string, unknown>;
}

function round(x: number | null, digits = 2): number | null {
  if (x === null || !Number.isFinite(x)) return x;
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

/** Nearest-rank percentile of sorted values. */
function pct(sorted: readonly number[], p: number): number | null {
  if (sorted.length === 0) return null;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] as number;
}

function stats(values: readonly number[]): Stats {
  const s = values.slice().sort((a, b) => a - b);
  return { n: s.length, p50: round(pct(s, 50)), p95: round(pct(s, 95)), max: round(pct(s, 100)) };
}

interface Timeline {
  windowStart: number;
  windowEnd: number;
  drainEnd: number;
  /** Critical messages sent in the window: n → send time. */
  readonly criticalSent: Map<number, number>;
  samplesInWindow: number;
}

function subscriberResult(m: Meter, tl: Timeline, w: Workload, backlogAtEnd: Record<string, number | null>): SubscriberResult {
  const latencies: number[] = [];
  const forStats: number[] = [];
  const bounds: number[] = [];
  let delivered = 0;
  for (const [n, sentAt] of tl.criticalSent) {
    const l = m.critical.get(n);
    if (l !== undefined) {
      delivered++;
      latencies.push(round(l) as number);
      forStats.push(l);
    } else {
      const bound = tl.drainEnd - sentAt;
      latencies.push(-(round(bound) as number));
      forStats.push(bound);
      bounds.push(bound);
    }
  }
  const cs = stats(forStats);
  return {
    samplesPerSecond: round((m.ages.length * 1000) / w.durationMs, 1) as number,
    deliveredFraction: round(tl.samplesInWindow > 0 ? m.ages.length / tl.samplesInWindow : 0, 3) as number,
    seqMissing: m.firstSeq < 0 ? 0 : m.lastSeq - m.firstSeq + 1 - m.ages.length,
    ageMs: stats(m.ages),
    agePerSecond: m.perSecond.map((a) => {
      const s = stats(a);
      return [a.length, s.p50, s.max] as const;
    }),
    criticalMs: {
      ...cs,
      sent: tl.criticalSent.size,
      delivered,
      undelivered: bounds.length,
      latenciesMs: latencies,
      // A message still on its way took at least its bound: the median moves only if one of those is at or below it.
      lowerBound: { p50: bounds.some((b) => cs.p50 !== null && b <= cs.p50 + 0.005), max: bounds.length > 0 },
    },
    backlogAtEnd,
  };
}

/** Send-Q and Recv-Q (bytes in the kernel) of the loopback connection between two ports, from `ss`. */
function kernelQueues(serverPort: number, clientPort: number): { serverSendQ: number | null; clientRecvQ: number | null } {
  const out = { serverSendQ: null as number | null, clientRecvQ: null as number | null };
  let text = '';
  try {
    text = execFileSync('ss', ['-tnH', 'state', 'established'], { encoding: 'utf8', timeout: 2000 });
  } catch {
    return out;
  }
  for (const line of text.split('\n')) {
    // Recv-Q Send-Q Local:Port Peer:Port
    const f = line.trim().split(/\s+/);
    if (f.length < 4) continue;
    const recvQ = Number(f[0]);
    const sendQ = Number(f[1]);
    const local = Number((f[2] as string).slice((f[2] as string).lastIndexOf(':') + 1));
    const peer = Number((f[3] as string).slice((f[3] as string).lastIndexOf(':') + 1));
    if (local === serverPort && peer === clientPort) out.serverSendQ = sendQ;
    if (local === clientPort && peer === serverPort) out.clientRecvQ = recvQ;
  }
  return out;
}

function rssKb(pid: number | undefined): number | null {
  if (pid === undefined) return null;
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

const sleep = (ms: number): Promise<void> => new Promise((ok) => setTimeout(ok, ms));

/**
 * Runs the publisher for warm-up + window, stops it, and lets critical messages drain; calls
 * `atWindowStart` and `atWindowEnd` (before publishing stops) on time.
 */
async function drive(
  w: Workload,
  tl: Timeline,
  publishSample: (seq: number) => void,
  publishCritical: (n: number) => void,
  atWindowStart: () => void,
  atWindowEnd: () => void,
): Promise<{ pacer: Pacer; criticalCount: number }> {
  let criticalCount = 0;
  // Due on the clock, not every N samples: a skipped sample never delays the critical message.
  let criticalDue = Infinity;
  const pacer = new Pacer(1000 / w.rateHz, (i) => {
    const now = hubNow();
    publishSample(i);
    if (now >= tl.windowStart && now < tl.windowEnd) tl.samplesInWindow++;
    if (now >= criticalDue) {
      criticalDue += w.criticalEveryMs;
      const n = criticalCount++;
      if (now >= tl.windowStart && now < tl.windowEnd) tl.criticalSent.set(n, now);
      publishCritical(n);
    }
  });
  const t0 = pacer.start();
  criticalDue = t0 + w.criticalEveryMs / 2;
  tl.windowStart = t0 + w.warmupMs;
  tl.windowEnd = tl.windowStart + w.durationMs;
  tl.drainEnd = tl.windowEnd + w.drainMs;
  await sleep(tl.windowStart - performance.now());
  atWindowStart();
  await sleep(tl.windowEnd - performance.now());
  atWindowEnd();
  pacer.stop();
  await sleep(tl.drainEnd - performance.now());
  return { pacer, criticalCount };
}

function newTimeline(): Timeline {
  return { windowStart: Infinity, windowEnd: Infinity, drainEnd: Infinity, criticalSent: new Map(), samplesInWindow: 0 };
}

// ---------------------------------------------------------------------------------------------
// The hub

const QUIET_ROBOT: RobotPort = Object.freeze({
  stop(): void {},
  release(): void {},
  publish(): void {},
  intent(): number {
    return 0;
  },
});

/** A TCP client transport whose socket is read by a SlowReader (client/node.ts's, slowed). */
class SlowTcpTransport implements ClientTransport {
  onFrame: ((bytes: Uint8Array) => void) | null = null;
  onClose: (() => void) | null = null;
  private closed = false;

  constructor(
    readonly socket: net.Socket,
    w: Workload,
  ) {
    const reasm = new LengthPrefixReassembler(
      (bytes) => {
        if (this.onFrame) this.onFrame(bytes);
      },
      () => socket.destroy(),
    );
    new SlowReader(socket, Math.round((w.slowBytesPerSecond * w.slowPeriodMs) / 1000), w.slowPeriodMs, (chunk) => {
      if (!this.closed) reasm.push(chunk);
    });
    socket.on('error', () => undefined);
    socket.on('close', () => this.ended());
  }

  send(bytes: Uint8Array): void {
    if (!this.closed && !this.socket.destroyed) this.socket.write(lengthPrefixed(bytes));
  }

  close(): void {
    this.socket.destroy();
    this.ended();
  }

  private ended(): void {
    if (this.closed) return;
    this.closed = true;
    const h = this.onClose;
    this.onClose = null;
    if (h) h();
  }
}

export async function runHub(w: Workload): Promise<PeerResult> {
  const store = new MemoryStore();
  saveCredentials(store, [{ tier: Tier.operator, credential: OPERATOR }]);
  const catalog = loadCatalog(DEFAULT_CATALOG);
  const hub = new Hub({ clock: hubClock, random: { fill: (b) => void randomFillSync(b) }, store, robot: QUIET_ROBOT, catalog });
  const listener = await TcpListener.listen({ hub, clock: hubClock, host: HOST });
  const tick = setInterval(() => hub.tick(), w.tickMs);
  const imu = catalog.byName('imu')!.id;
  const crit = catalog.byName('safety-events')!.id;
  const wishes = [
    { channelId: imu, wishedRateHz: w.rateHz },
    { channelId: crit, wishedRateHz: 20 },
  ];
  const tl = newTimeline();
  const fastM = new Meter(tl);
  const slowM = new Meter(tl);
  const onData =
    (m: Meter) =>
    (channelId: number, f: DataFrame): void => {
      const at = performance.now();
      if (channelId === imu) m.sample(f.seq, f.t, at);
      else if (channelId === crit && f.values[0] === 0) m.criticalMessage(f.values[2] as number, f.t, at);
    };
  let slowSocket: net.Socket | null = null;
  const slowFactory: TransportFactory = () =>
    openSocket(HOST, listener.port).then((s) => {
      slowSocket = s;
      return new SlowTcpTransport(s, w);
    });
  const fast = await connectTcp(HOST, listener.port, { name: 'fast', credential: OPERATOR, subscriptions: wishes, onData: onData(fastM) });
  const fastLink = [...listener.links][0] as TcpLink;
  const slow = new HubClient({ name: 'slow', credential: OPERATOR, subscriptions: wishes, onData: onData(slowM), transport: slowFactory, clock: nodeClock, random: Math.random });
  await slow.connect();
  for (const c of [fast, slow]) {
    const g = c.grants.get(imu);
    if (!g || g.grantedRateHz !== w.rateHz) throw new Error(`hub: ${c.sessionId} was granted ${g ? g.grantedRateHz : 0} Hz of imu, not ${w.rateHz}`);
    if (!c.grants.has(crit)) throw new Error('hub: safety-events was not granted');
  }
  const slowLink = (): TcpLink | undefined => [...listener.links].find((l) => l !== fastLink);

  // The slow session's congestion level and imu grant, every 100 ms of the window.
  const levelMs = [0, 0, 0];
  let minGrantHz = w.rateHz;
  let maxNeverShed = 0;
  /** Per second of the window: [highest level, imu grant Hz at the end of the second]. */
  const perSecond: [number, number][] = [];
  const watch = setInterval(() => {
    const now = hubNow();
    if (now < tl.windowStart || now >= tl.windowEnd) return;
    const v = hub.sessions().find((s) => s.id === slow.sessionId);
    if (!v) return;
    levelMs[Math.min(2, v.level)] = (levelMs[Math.min(2, v.level)] as number) + 100;
    const g = v.subs.find((s) => s.channelId === imu);
    if (g && g.grantedHz < minGrantHz) minGrantHz = g.grantedHz;
    if (v.neverShedBytes > maxNeverShed) maxNeverShed = v.neverShedBytes;
    const sec = Math.floor((now - tl.windowStart) / 1000);
    while (perSecond.length <= sec) perSecond.push([0, 0]);
    const ps = perSecond[sec] as [number, number];
    if (v.level > ps[0]) ps[0] = v.level;
    ps[1] = g ? round(g.grantedHz, 1) as number : 0;
  }, 100);

  const values = new Float64Array(6);
  const snap = () => {
    const c = hub.counters;
    return { delivered: c.delivered, rateGated: c.rateGated, shedDrops: c.shedDrops, decimated: c.decimated, egressDrops: c.egressDrops, parks: c.parks, neverShedOverflows: c.neverShedOverflows };
  };
  let counters0 = snap();
  let c1 = counters0;
  let fastBacklog: Record<string, number | null> = {};
  let slowBacklog: Record<string, number | null> = {};
  let slowGrantAtEnd = -1;
  const { pacer, criticalCount } = await drive(
    w,
    tl,
    (seq) => {
      fillSample(values, seq);
      hub.publishSample(imu, hubNow(), values, 6);
    },
    (n) => hub.publishEvent(crit, hubNow(), [0, 0, n]),
    () => (counters0 = snap()),
    () => {
      const backlog = (link: TcpLink | undefined, sock: net.Socket | null): Record<string, number | null> => {
        const k = sock && sock.localPort !== undefined ? kernelQueues(listener.port, sock.localPort) : { serverSendQ: null, clientRecvQ: null };
        return { serverQueueBytes: link ? link.pendingBytes() : null, ...k, clientBufferedBytes: sock ? sock.readableLength : null };
      };
      c1 = snap();
      fastBacklog = backlog(fastLink, null);
      slowBacklog = backlog(slowLink(), slowSocket);
      slowGrantAtEnd = slow.grants.get(imu)?.grantedRateHz ?? -1;
    },
  );
  clearInterval(watch);
  const notes = {
    hubCountersInWindow: {
      delivered: c1.delivered - counters0.delivered,
      rateGated: c1.rateGated - counters0.rateGated,
      shedDrops: c1.shedDrops - counters0.shedDrops,
      decimated: c1.decimated - counters0.decimated,
      egressDrops: c1.egressDrops - counters0.egressDrops,
      parks: c1.parks - counters0.parks,
      neverShedOverflows: c1.neverShedOverflows - counters0.neverShedOverflows,
    },
    slowSession: {
      levelMsInWindow: { 0: levelMs[0], 1: levelMs[1], 2: levelMs[2] },
      minImuGrantHz: minGrantHz,
      imuGrantHzAtEnd: slowGrantAtEnd,
      maxNeverShedBytes: maxNeverShed,
      levelAndImuGrantPerSecond: perSecond,
      reconnects: slow.counters.connects - 1,
      resumes: slow.counters.resumes,
    },
    fastReconnects: fast.counters.connects - 1,
  };
  fast.close();
  slow.close();
  clearInterval(tick);
  await listener.close();
  // A sample from the middle of the window: seq and t as this run encoded them.
  const wireBytes = sampleWireBytesHub(imu, pacer.emitted >> 1, Math.floor((tl.windowStart + tl.windowEnd) / 2));
  return {
    peer: 'hub',
    published: { samples: pacer.emitted, samplesPerSecond: round((tl.samplesInWindow * 1000) / w.durationMs, 1) as number, critical: criticalCount, pacerSkipped: pacer.skipped },
    sampleWireBytes: wireBytes,
    fast: subscriberResult(fastM, tl, w, fastBacklog),
    slow: subscriberResult(slowM, tl, w, slowBacklog),
    notes,
  };
}

/** The bytes of one imu DATA frame on the hub's TCP wire: the 2-byte prefix (§2) and the frame (§5.7). */
function sampleWireBytesHub(imu: number, seq: number, t: number): number {
  const w = new CborWriter(new Uint8Array(256));
  const v = new Float64Array(6);
  fillSample(v, seq);
  encodeData(w, imu, seq, t, v, 6, false, 0);
  return 2 + w.pos;
}

// ---------------------------------------------------------------------------------------------
// MQTT

export interface MqttTarget {
  readonly host: string;
  readonly port: number;
  /** The broker's pid, for its resident memory (Linux /proc); optional. */
  readonly pid?: number;
}

export async function runMqtt(w: Workload, target: MqttTarget): Promise<PeerResult> {
  const tl = newTimeline();
  const fastM = new Meter(tl);
  const slowM = new Meter(tl);
  const onMessage =
    (m: Meter) =>
    (topic: string, p: Uint8Array): void => {
      const at = performance.now();
      const dv = new DataView(p.buffer, p.byteOffset, p.byteLength);
      if (topic === MQTT_SAMPLE_TOPIC && p.length === MQTT_SAMPLE_BYTES) m.sample(dv.getFloat64(8, true), dv.getFloat64(0, true), at);
      else if (topic === MQTT_CRITICAL_TOPIC && p.length === MQTT_CRITICAL_BYTES) m.criticalMessage(dv.getFloat64(8, true), dv.getFloat64(0, true), at);
    };
  const topics = [
    { topic: MQTT_SAMPLE_TOPIC, qos: 0 as Qos },
    { topic: MQTT_CRITICAL_TOPIC, qos: w.criticalQos },
  ];

  const pub = new MqttClient(await openSocket(target.host, target.port));
  pub.socket.on('data', (c: Buffer) => pub.input(c));
  await pub.connect('bench-publisher');

  const fast = new MqttClient(await openSocket(target.host, target.port));
  fast.socket.on('data', (c: Buffer) => fast.input(c));
  fast.onMessage = onMessage(fastM);
  await fast.connect('bench-fast');

  const slowSocket = await openSocket(target.host, target.port);
  const slow = new MqttClient(slowSocket);
  new SlowReader(slowSocket, Math.round((w.slowBytesPerSecond * w.slowPeriodMs) / 1000), w.slowPeriodMs, (c) => slow.input(c));
  slow.onMessage = onMessage(slowM);
  await slow.connect('bench-slow');

  for (const c of [fast, slow]) {
    const granted = await c.subscribe(topics);
    if (granted[0] !== 0 || granted[1] !== w.criticalQos) throw new Error(`mosquitto granted QoS ${granted.join(',')}`);
  }

  const sample = Buffer.alloc(MQTT_SAMPLE_BYTES);
  const values = new Float64Array(6);
  const critical = Buffer.alloc(MQTT_CRITICAL_BYTES);
  let rss0: number | null = null;
  let rssEnd: number | null = null;
  let fastBacklog: Record<string, number | null> = {};
  let slowBacklog: Record<string, number | null> = {};
  const { pacer, criticalCount } = await drive(
    w,
    tl,
    (seq) => {
      fillSample(values, seq);
      sample.writeDoubleLE(hubNow(), 0);
      sample.writeDoubleLE(seq, 8);
      for (let i = 0; i < 6; i++) sample.writeDoubleLE(values[i] as number, 16 + 8 * i);
      pub.publish(MQTT_SAMPLE_TOPIC, sample, 0);
    },
    (n) => {
      critical.writeDoubleLE(hubNow(), 0);
      critical.writeDoubleLE(n, 8);
      pub.publish(MQTT_CRITICAL_TOPIC, critical, w.criticalQos);
    },
    () => (rss0 = rssKb(target.pid)),
    () => {
      rssEnd = rssKb(target.pid);
      const backlog = (sock: net.Socket): Record<string, number | null> => ({
        serverQueueBytes: null,
        ...kernelQueues(target.port, sock.localPort as number),
        clientBufferedBytes: sock.readableLength,
      });
      fastBacklog = backlog(fast.socket);
      slowBacklog = backlog(slowSocket);
    },
  );
  const notes = {
    brokerRssKb: { atWindowStart: rss0, atWindowEnd: rssEnd },
    criticalQos: w.criticalQos,
    slowBytesRead: slow.bytesIn,
    closedEarly: { publisher: pub.closed, fast: fast.closed, slow: slow.closed },
  };
  for (const c of [pub, fast, slow]) c.disconnect();
  return {
    peer: 'mosquitto',
    published: { samples: pacer.emitted, samplesPerSecond: round((tl.samplesInWindow * 1000) / w.durationMs, 1) as number, critical: criticalCount, pacerSkipped: pacer.skipped },
    // Fixed header (2), topic (2 + its length), payload.
    sampleWireBytes: 2 + 2 + MQTT_SAMPLE_TOPIC.length + MQTT_SAMPLE_BYTES,
    fast: subscriberResult(fastM, tl, w, fastBacklog),
    slow: subscriberResult(slowM, tl, w, slowBacklog),
    notes,
  };
}

// ---------------------------------------------------------------------------------------------
// Hub ÷ mosquitto

function ratio(a: number | null, b: number | null): number | null {
  if (a === null || b === null || !Number.isFinite(a) || !Number.isFinite(b) || b === 0) return null;
  return round(a / b, 3);
}

/** How a ratio of two critical-latency statistics stands when either is a lower bound. */
function boundOf(hubLower: boolean, mqLower: boolean): string {
  if (hubLower && mqLower) return 'unknown';
  if (mqLower) return 'at most';
  if (hubLower) return 'at least';
  return 'exact';
}

/**
 * Hub ÷ mosquitto for every headline number; below 1 means the hub's is smaller. A critical
 * statistic that counts undelivered messages is a lower bound, and so the ratio a bound (`bounds`).
 */
export function ratios(hub: PeerResult, mq: PeerResult): Record<string, Record<string, number | string | null>> {
  const out: Record<string, Record<string, number | string | null>> = {};
  for (const who of ['fast', 'slow'] as const) {
    const h = hub[who];
    const m = mq[who];
    out[who] = {
      criticalP50Bound: boundOf(h.criticalMs.lowerBound.p50, m.criticalMs.lowerBound.p50),
      criticalMaxBound: boundOf(h.criticalMs.lowerBound.max, m.criticalMs.lowerBound.max),
      criticalP50: ratio(h.criticalMs.p50, m.criticalMs.p50),
      criticalMax: ratio(h.criticalMs.max, m.criticalMs.max),
      ageP50: ratio(h.ageMs.p50, m.ageMs.p50),
      ageP95: ratio(h.ageMs.p95, m.ageMs.p95),
      ageMax: ratio(h.ageMs.max, m.ageMs.max),
      samplesPerSecond: ratio(h.samplesPerSecond, m.samplesPerSecond),
    };
  }
  return out;
}
