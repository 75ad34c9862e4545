// The Wi-Fi binding over real loopback sockets (node:net and the `ws` package), with a real Hub
// on a virtual clock: congestion from a client that stops reading, shedding by the table,
// parking after 2 s of never-shed stall, resumption by token, a neighbour kept fresh
// throughout, the ESTOP write-ahead overtaking a full egress queue, and oversize frames. Also
// the device's own WebSocket server subset (TcpLink WS_SERVER) against the real `ws` client.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import net from 'node:net';
import WebSocket from 'ws';
import { FrameReassembler } from '../../bindings/tcp/framing.js';
import { LinkFraming, TcpLink, type LinkTransport } from '../../bindings/tcp/egress.js';
import { NODE_QUEUE_BYTES, NODE_SOCKET_LIMIT_BYTES, TcpListener, WsListener } from '../../bindings/tcp/node.js';
import { Tier } from '../../catalog/schema.js';
import { CborWriter } from '../../hub/cbor.js';
import { ESTOP_REANNOUNCE_MS, LIVENESS_TIMEOUT_MS, NEVER_SHED_STALL_EVICTION_MS } from '../../hub/constants.js';
import { saveCredentials } from '../../hub/credentials.js';
import { decodeEstop, ESTOP_FLAG_LATCHED, EstopKind, EstopSource, isEstopFrame, type EstopFrame } from '../../hub/estop-frame.js';
import { decodeFrame, encodeFrame, FrameType, type DataFrame, type Frame, type WelcomeFrame } from '../../hub/frames.js';
import { Nack } from '../../hub/nack.js';
import { SessionState } from '../../hub/session.js';
import { estopBytes, makeHub, MemoryStore, type Fixture } from '../lib/hub-fixture.js';

const OPERATOR = new Uint8Array([0x6f, 0x70, 0x65, 0x72, 0x61, 0x74, 0x6f, 0x72]);
const STEP_MS = 5; // 200 Hz
const WAIT_MS = 5000; // every real-time wait fails after this
/** Every DATA the healthy client reads is at most this old on the hub clock when read. */
const AGE_BOUND_MS = 25;

type Kind = 'tcp' | 'ws';
type Listener = TcpListener | WsListener;

interface Got {
  readonly estop?: EstopFrame;
  readonly frame?: Frame;
  /** Hub clock when the client read it. */
  readonly at: number;
}

function sleep(ms: number): Promise<void> {
  return new Promise((ok) => setTimeout(ok, ms));
}

function turn(): Promise<void> {
  return new Promise((ok) => setImmediate(ok));
}

function bounded<T>(p: Promise<T>, what: string, ms = WAIT_MS): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const limit = new Promise<never>((_, bad) => {
    timer = setTimeout(() => bad(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([p, limit]).finally(() => clearTimeout(timer));
}

async function until(cond: () => boolean, what: string, ms = WAIT_MS): Promise<void> {
  const end = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(2);
  }
}

/** A protocol client over a real socket: records every frame, ACKs every 32 frames received (§13.2). */
class WireClient {
  readonly got: Got[] = [];
  dataCount = 0;
  frameCount = 0;
  closed = false;
  onData: ((f: DataFrame, at: number) => void) | null = null;
  private readonly w = new CborWriter(new Uint8Array(4096));
  private readonly reasm = new FrameReassembler(0xffff);
  private sock: net.Socket | null = null;
  private ws: WebSocket | null = null;

  private constructor(
    readonly kind: Kind,
    private readonly fx: Fixture,
  ) {}

  static async connect(kind: Kind, port: number, fx: Fixture): Promise<WireClient> {
    const c = new WireClient(kind, fx);
    if (kind === 'tcp') {
      const s = net.connect(port, '127.0.0.1');
      s.setNoDelay(true);
      c.sock = s;
      const consumer = {
        frame: (b: Uint8Array, st: number, e: number) => c.onFrame(b, st, e),
        refuse: () => assert.fail('the hub sent a frame over 65535 bytes'),
      };
      s.on('data', (chunk: Buffer) => c.reasm.push(chunk, 0, chunk.length, consumer));
      s.on('close', () => (c.closed = true));
      s.on('error', () => undefined);
      await bounded(
        new Promise<void>((ok, bad) => {
          s.once('connect', ok);
          s.once('error', bad);
        }),
        'the TCP connection',
      );
    } else {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/`, { perMessageDeflate: false });
      ws.binaryType = 'nodebuffer';
      c.ws = ws;
      ws.on('message', (data: Buffer) => c.onFrame(data, 0, data.length));
      ws.on('close', () => (c.closed = true));
      ws.on('error', () => undefined);
      await bounded(
        new Promise<void>((ok, bad) => {
          ws.once('open', () => ok());
          ws.once('error', bad);
        }),
        'the WebSocket connection',
      );
    }
    return c;
  }

  private onFrame(b: Uint8Array, s: number, e: number): void {
    const at = this.fx.clock.now();
    if (isEstopFrame(b, s)) {
      this.got.push({ estop: decodeEstop(b, s, e - s), at });
    } else {
      const f = decodeFrame(b, s, e, 1 << 16);
      this.got.push({ frame: f, at });
      if (f.type === FrameType.DATA) {
        this.dataCount++;
        if (this.onData) this.onData(f, at);
      }
    }
    // §5.12 key 28 counts every frame received on this transport, ESTOP included.
    if (++this.frameCount % 32 === 0) this.send({ type: FrameType.ACK, acked: this.frameCount });
  }

  send(f: Frame): void {
    this.w.reset();
    encodeFrame(f, this.w);
    this.raw(this.w.buf.slice(0, this.w.pos));
  }

  /** One frame as the transport delimits it (TCP: prefixed here). */
  raw(frame: Uint8Array): void {
    if (this.sock) {
      const out = Buffer.alloc(2 + frame.length);
      out.writeUInt16BE(frame.length, 0);
      out.set(frame, 2);
      this.sock.write(out);
    } else (this.ws as WebSocket).send(frame, { binary: true });
  }

  /** Bytes straight onto the TCP stream. */
  rawStream(bytes: Uint8Array): void {
    (this.sock as net.Socket).write(bytes);
  }

  pause(): void {
    if (this.sock) this.sock.pause();
    else (this.ws as WebSocket).pause();
  }

  resume(): void {
    if (this.sock) this.sock.resume();
    else (this.ws as WebSocket).resume();
  }

  frames(type?: number): Frame[] {
    const out: Frame[] = [];
    for (const g of this.got) if (g.frame && (type === undefined || g.frame.type === type)) out.push(g.frame);
    return out;
  }

  async welcome(): Promise<WelcomeFrame> {
    await until(() => this.frames(FrameType.WELCOME).length > 0 || this.frames(FrameType.NACK).length > 0, `${this.kind} WELCOME`);
    const w = this.frames(FrameType.WELCOME)[0];
    assert.ok(w && w.type === FrameType.WELCOME, 'WELCOME, not a NACK');
    return w;
  }

  destroy(): void {
    if (this.sock) this.sock.destroy();
    if (this.ws) this.ws.terminate();
  }
}

function hubWithOperator(): Fixture {
  const store = new MemoryStore();
  saveCredentials(store, [{ tier: Tier.operator, credential: OPERATOR }]);
  return makeHub({ livenessTimeoutMs: LIVENESS_TIMEOUT_MS }, store);
}

async function listen(kind: Kind, fx: Fixture): Promise<Listener> {
  const o = { hub: fx.hub, clock: fx.clock };
  return kind === 'tcp' ? TcpListener.listen(o) : WsListener.listen(o);
}

const values = new Float64Array([0.1, 0.2, 9.8, 0.01, 0.02, 0.03]);
const safetyValues = new Float64Array([0, 0, 0]);

/** One 5 ms step of hub time: an IMU sample (200 Hz), `safety` at 10 Hz, a tick, then the sockets run. */
async function step(fx: Fixture): Promise<void> {
  fx.clock.advance(STEP_MS);
  const now = fx.clock.now();
  const imu = fx.catalog.byName('imu')!.id;
  fx.hub.publishSample(imu, now, values, 6);
  if (now % 100 === 0) fx.hub.publishSample(fx.catalog.byName('safety')!.id, now, safetyValues, 3);
  fx.hub.tick();
  await turn();
}

function sessionView(fx: Fixture, id: number) {
  return fx.hub.sessions().find((s) => s.id === id);
}

for (const kind of ['tcp', 'ws'] as const) {
  describe(`wifi binding over real loopback ${kind === 'tcp' ? 'TCP' : 'WebSocket'}`, function () {
    this.timeout(60000);
    let fx: Fixture;
    let listener: Listener;
    const clients: WireClient[] = [];

    beforeEach(async () => {
      fx = hubWithOperator();
      listener = await bounded(listen(kind, fx), 'the listener');
    });

    afterEach(async () => {
      for (const c of clients.splice(0)) c.destroy();
      await bounded(listener.close(), 'the listener to close');
    });

    async function join(name: string, wishes: { channelId: number; wishedRateHz: number }[]): Promise<{ c: WireClient; welcome: WelcomeFrame; link: TcpLink }> {
      const before = new Set(listener.links);
      const c = await WireClient.connect(kind, listener.port, fx);
      clients.push(c);
      c.send({ type: FrameType.HELLO, version: 1, name, credential: OPERATOR, subWishes: wishes });
      const welcome = await c.welcome();
      const link = [...listener.links].find((l) => !before.has(l));
      assert.ok(link, 'the listener made a link for the connection');
      return { c, welcome, link };
    }

    it('listens on loopback with the documented limits', () => {
      assert.equal(listener.host, '127.0.0.1');
      assert.ok(listener.port > 0);
      assert.equal(NODE_QUEUE_BYTES, 16384);
      assert.equal(NODE_SOCKET_LIMIT_BYTES, 4096);
    });

    it('a client that stops reading is shed, then parked, then resumes; its neighbour stays fresh', async () => {
      const imu = fx.catalog.byName('imu')!.id;
      const safety = fx.catalog.byName('safety')!.id;
      const a = await join('A', [
        { channelId: imu, wishedRateHz: 200 },
        { channelId: safety, wishedRateHz: 10 },
      ]);
      const b = await join('B', [{ channelId: imu, wishedRateHz: 200 }]);
      assert.deepEqual(
        a.welcome.subGrants.map((g) => [g.channelId, g.grantedRateHz]),
        [
          [imu, 200],
          [safety, 10],
        ],
      );
      assert.equal(a.link.binding, kind);
      const idA = a.welcome.sessionId;
      const idB = b.welcome.sessionId;
      let maxAgeB = 0;
      b.c.onData = (f, at) => {
        if (f.channelId === imu) maxAgeB = Math.max(maxAgeB, at - f.t);
      };

      // 1 s flowing: both clients get every sample, nobody is congested.
      for (let i = 0; i < 200; i++) await step(fx);
      await until(() => a.c.dataCount >= 200 && b.c.dataCount >= 200, 'the first second of samples');
      assert.equal(sessionView(fx, idA)!.level, 0);
      assert.ok(a.link.ackSeen && b.link.ackSeen, 'both clients acknowledge');

      // A stops reading.
      a.c.pause();
      const pausedAt = fx.clock.now();
      const bBefore = b.c.dataCount;
      let t1 = NaN;
      let t2 = NaN;
      let rows10AtL1 = 0;
      let rows10AtL2 = 0;
      let rows14AtL2 = 0;
      let rows14AtPark = 0;
      let stallFrom = NaN;
      let parkedAt = NaN;
      let maxLevelB = 0;
      const rows = fx.hub.counters.rows;
      for (let i = 0; i < 4000 && Number.isNaN(parkedAt); i++) {
        await step(fx);
        const now = fx.clock.now();
        const va = sessionView(fx, idA)!;
        maxLevelB = Math.max(maxLevelB, sessionView(fx, idB)!.level);
        if (va.state === SessionState.STALE) {
          parkedAt = now;
          rows14AtPark = rows[14]!;
          break;
        }
        if (va.level >= 1 && Number.isNaN(t1)) {
          t1 = now;
          rows10AtL1 = rows[10]!;
        }
        if (va.level >= 2 && Number.isNaN(t2)) {
          t2 = now;
          rows10AtL2 = rows[10]!;
          rows14AtL2 = rows[14]!;
        }
        // The stall clock runs from the first tick that finds the never-shed queue non-empty.
        if (va.neverShedBytes > 0) {
          if (Number.isNaN(stallFrom)) stallFrom = now;
        } else stallFrom = NaN;
      }
      assert.ok(!Number.isNaN(parkedAt), 'A was parked');
      assert.ok(t1 > pausedAt && t1 < t2 && t2 < parkedAt, `level 1 (${t1 - pausedAt} ms), then 2 (${t2 - pausedAt} ms), then parked (${parkedAt - pausedAt} ms)`);
      assert.ok(rows10AtL2 > rows10AtL1, '§10.4 row 10: level 1, normal STREAM decimated 2×');
      assert.ok(rows14AtPark > rows14AtL2, '§10.4 row 14: level 2, normal STREAM decimated 4×');
      assert.ok(fx.hub.counters.egressDrops > 0, 'samples the full queue could not take were dropped at once, never held');
      assert.equal(parkedAt - stallFrom, NEVER_SHED_STALL_EVICTION_MS, '§10.4: parked after exactly 2000 ms of never-shed stall');
      assert.equal(fx.hub.counters.parks, 1);
      assert.equal(sessionView(fx, idA)!.state, SessionState.STALE);
      // The hub closed A's transport: the listener's side is gone, and A reads to its end.
      await until(() => a.link.closed, 'the server side of A to close');
      a.c.resume();
      await until(() => a.c.closed, 'A to see its connection closed');

      // B: never congested, every sample fresh, and it kept getting them at the granted rate.
      assert.equal(maxLevelB, 0);
      await until(() => b.c.dataCount - bBefore >= (parkedAt - pausedAt) / STEP_MS, 'B to read every sample');
      assert.ok(maxAgeB <= AGE_BOUND_MS, `B's samples at most ${AGE_BOUND_MS} ms old when read (max ${maxAgeB})`);

      // A comes back on a new connection with its token: same session, grants re-stated, fresh data.
      const token = a.welcome.resumeToken;
      const a2 = await WireClient.connect(kind, listener.port, fx);
      clients.push(a2);
      a2.send({ type: FrameType.HELLO, version: 1, name: 'A', resumeToken: token });
      const w2 = await a2.welcome();
      assert.equal(w2.sessionId, idA);
      assert.notDeepEqual(Array.from(w2.resumeToken), Array.from(token));
      assert.deepEqual(
        w2.subGrants.map((g) => [g.channelId, g.grantedRateHz]),
        [
          [imu, 200],
          [safety, 10],
        ],
      );
      assert.equal(fx.hub.counters.resumes, 1);
      assert.equal(sessionView(fx, idA)!.state, SessionState.ACTIVE);
      const resumedAt = fx.clock.now();
      let maxAgeA2 = 0;
      a2.onData = (f, at) => {
        if (f.channelId === imu) maxAgeA2 = Math.max(maxAgeA2, at - f.t);
      };
      for (let i = 0; i < 40; i++) await step(fx);
      await until(() => a2.frames(FrameType.DATA).filter((f) => (f as DataFrame).channelId === imu).length >= 20, 'fresh DATA on the resumed session');
      const firstImu = a2.frames(FrameType.DATA).find((f) => (f as DataFrame).channelId === imu) as DataFrame;
      assert.ok(firstImu.t > resumedAt, 'the first sample after resumption is a new one');
      assert.ok(maxAgeA2 <= AGE_BOUND_MS, `A's samples after resumption are fresh (max ${maxAgeA2})`);
    });

    it('the ESTOP write-ahead overtakes a full egress queue', async () => {
      const imu = fx.catalog.byName('imu')!.id;
      const a = await join('A', [{ channelId: imu, wishedRateHz: 200 }]);
      const b = await join('B', [{ channelId: imu, wishedRateHz: 200 }]);
      for (let i = 0; i < 100; i++) await step(fx);
      await until(() => a.c.dataCount >= 96 && a.link.ackSeen, 'A acknowledging');
      a.c.pause();
      for (let i = 0; i < 2000 && a.link.occupancy() < 0.95; i++) await step(fx);
      assert.ok(a.link.occupancy() >= 0.95, `A's egress queue full (${a.link.occupancy()})`);
      const q = a.link.queue;
      const expiredBefore = q.expired;
      const out = q.recordsOut;
      const inFlight = q.inFlight() ? 1 : 0;
      const queued = q.records;
      const estopAt = fx.clock.now();
      fx.hub.estop(EstopSource.HUB_BUTTON, 0);
      a.c.resume();
      await until(() => a.c.got.some((g) => g.estop), 'A to read the ESTOP');
      const at = a.c.got.findIndex((g) => g.estop);
      assert.equal(at, out + inFlight, 'ESTOP comes right after what the socket already held, ahead of every queued frame');
      const e = a.c.got[at]!.estop!;
      assert.equal(e.kind, EstopKind.ASSERT);
      assert.equal(e.source, EstopSource.HUB_BUTTON);
      assert.equal(e.flags & ESTOP_FLAG_LATCHED, ESTOP_FLAG_LATCHED);
      // The frames queued when the ESTOP was written come after it, or not at all: a sample that
      // waited past the link's budget is dropped unsent (docs/protocol.md §13.6), never late.
      await until(() => q.records === 0 && a.c.got.length - at - 1 + (q.expired - expiredBefore) >= queued - inFlight, 'the queued frames behind the ESTOP');
      const after = a.c.got.slice(at + 1).filter((g) => g.frame && g.frame.type === FrameType.DATA && g.frame.t <= estopAt);
      const budget = a.link.sampleBudgetMs();
      assert.ok(q.expired - expiredBefore > 100, `${q.expired - expiredBefore} samples that went stale behind the shut window were dropped`);
      for (const g of after) {
        const f = g.frame as DataFrame;
        assert.ok(f.channelId !== imu || estopAt - f.t <= budget, `imu seq ${f.seq} from ${f.t} went ${estopAt - f.t} ms after it was published (budget ${budget})`);
      }
      await until(() => b.c.got.some((g) => g.estop), 'B to read the ESTOP too');
    });

    it('a flood of distinct-sequence ESTOPs: the first reaches every session at once, the rest at a bounded rate; nobody is parked (§11.2)', async () => {
      const imu = fx.catalog.byName('imu')!.id;
      const safety = fx.catalog.byName('safety')!.id;
      const viewer = await join('viewer', [{ channelId: imu, wishedRateHz: 200 }, { channelId: safety, wishedRateHz: 10 }]);
      const flooder = await join('flooder', []);
      const third = await join('third', [{ channelId: imu, wishedRateHz: 200 }]);
      for (let i = 0; i < 20; i++) await step(fx);
      flooder.c.raw(estopBytes(EstopKind.ASSERT, EstopSource.CLIENT, 0, 1));
      await until(() => fx.hub.latch.latched, 'the first ESTOP to latch the hub');
      const latchedAt = fx.clock.now();
      await until(() => viewer.c.got.some((g) => g.estop) && third.c.got.some((g) => g.estop), 'the first ESTOP at both neighbours');
      assert.equal(fx.clock.now(), latchedAt, 'written at once, before any tick');
      const imuBefore = viewer.c.dataCount;
      // 2 s of hub time, 25 new ESTOPs every 5 ms step: 10,000 distinct sequences.
      let seq = 2;
      for (let i = 0; i < 400; i++) {
        for (let k = 0; k < 25; k++) flooder.c.raw(estopBytes(EstopKind.ASSERT, EstopSource.CLIENT, 0, seq++));
        await step(fx);
      }
      await until(() => fx.hub.counters.estops >= seq - 1, 'the hub to read every ESTOP');
      for (let i = 0; i < 40; i++) await step(fx);
      const elapsed = fx.clock.now() - latchedAt;
      for (const n of [viewer, third]) {
        const heard = n.c.got.filter((g) => g.estop).length;
        assert.ok(heard <= elapsed / ESTOP_REANNOUNCE_MS + 2, `${heard} ESTOP frames in ${elapsed} ms`);
        assert.equal(sessionView(fx, n.welcome.sessionId)!.state, SessionState.ACTIVE);
      }
      assert.equal(fx.hub.counters.parks, 0, 'no session was parked');
      assert.ok(viewer.c.dataCount - imuBefore >= 300, `the viewer's telemetry carried on (${viewer.c.dataCount - imuBefore} frames)`);
      await until(() => viewer.c.got.filter((g) => g.estop).pop()!.estop!.seq === fx.hub.latch.originSeq, 'the newest assertion announced');
    });

    it('a session whose client sends nothing for the liveness timeout goes STALE and yields its slot (§6.5)', async () => {
      const a = await join('silent', []);
      const b = await join('pinger', []);
      for (let t = 0; t < fx.hub.config.livenessTimeoutMs; t += 500) {
        b.c.send({ type: FrameType.PING, t0: t });
        await until(() => b.c.frames(FrameType.PONG).length > t / 500, 'the PONG');
        fx.clock.advance(500);
        fx.hub.tick();
      }
      await until(() => a.c.closed, 'the silent client to be closed');
      assert.equal(sessionView(fx, a.welcome.sessionId)!.state, SessionState.STALE);
      assert.equal(sessionView(fx, b.welcome.sessionId)!.state, SessionState.ACTIVE);
      assert.ok(!b.c.closed);
    });

    it('closes a connection that never sends HELLO after the handshake timeout (§6.1)', async () => {
      const silent = await WireClient.connect(kind, listener.port, fx);
      clients.push(silent);
      const a = await join('A', []);
      await until(() => listener.links.size === 2, 'both links');
      fx.clock.advance(fx.hub.config.handshakeTimeoutMs);
      fx.hub.tick();
      await until(() => silent.closed, 'the silent connection to be closed');
      assert.ok(!a.c.closed, 'the client that sent HELLO stays');
    });

    it('closes a connection flooding PINGs before HELLO; a resume and new HELLOs are admitted (§6.1)', async () => {
      const first = await join('first', []);
      first.c.destroy();
      await until(() => sessionView(fx, first.welcome.sessionId)?.state === SessionState.STALE, 'the first session to go STALE');
      const flooder = await WireClient.connect(kind, listener.port, fx);
      clients.push(flooder);
      for (let i = 0; i < 2000 && !flooder.closed; i++) {
        flooder.send({ type: FrameType.PING, t0: i });
        if (i % 100 === 99) await turn();
      }
      await until(() => flooder.closed, 'the flooder to be closed');
      // Its INGRESS_BUDGET answer may be lost to the reset of a socket closed with unread input;
      // the core suite holds the NACK.
      for (let j = 0; j < 5; j++) await join(`new${j}`, []);
      const back = await WireClient.connect(kind, listener.port, fx);
      clients.push(back);
      back.send({ type: FrameType.HELLO, version: 1, name: 'back', resumeToken: first.welcome.resumeToken });
      const w = await back.welcome();
      assert.equal(w.sessionId, first.welcome.sessionId);
    });

    it('answers an oversize frame NACK TOO_LARGE, discards it and carries on (§2)', async () => {
      const imu = fx.catalog.byName('imu')!.id;
      const a = await join('A', [{ channelId: imu, wishedRateHz: 10 }]);
      const big = new Uint8Array(2000).fill(0xa1);
      if (kind === 'tcp') {
        const framed = new Uint8Array(2 + big.length);
        framed[0] = big.length >>> 8;
        framed[1] = big.length & 0xff;
        framed.set(big, 2);
        // Byte by byte across separate writes: the reassembler skips the body wherever it is cut.
        a.c.rawStream(framed.subarray(0, 1));
        await sleep(5);
        a.c.rawStream(framed.subarray(1, 700));
        await sleep(5);
        a.c.rawStream(framed.subarray(700));
      } else a.c.raw(big);
      a.c.send({ type: FrameType.PING, t0: 77 });
      await until(() => a.c.frames(FrameType.PONG).length === 1, 'PONG to the PING after the oversize frame');
      const nack = a.c.frames(FrameType.NACK);
      assert.equal(nack.length, 1);
      assert.ok(nack[0]!.type === FrameType.NACK && nack[0]!.code === Nack.TOO_LARGE);
      assert.equal(a.link.refused, 1);
      assert.ok(!a.c.closed);
      assert.equal(sessionView(fx, a.welcome.sessionId)!.state, SessionState.ACTIVE);
      if (kind === 'ws') {
        (a.c as unknown as { ws: WebSocket }).ws.send('{"type":"hello"}');
        a.c.send({ type: FrameType.PING, t0: 78 });
        await until(() => a.c.frames(FrameType.PONG).length === 2, 'PONG after a text message');
        const codes = a.c.frames(FrameType.NACK).map((f) => (f.type === FrameType.NACK ? f.code : 0));
        assert.deepEqual(codes, [Nack.TOO_LARGE, Nack.MALFORMED], '§2: text messages are MALFORMED');
      }
    });
  });
}

// ---------------------------------------------------------------------------------------------
// The device's WebSocket subset, spoken by TcpLink itself, against the real `ws` client.

class TestNetTransport implements LinkTransport {
  constructor(
    private readonly s: net.Socket,
    private readonly link: TcpLink,
  ) {}
  kick(): void {
    queueMicrotask(() => {
      const buf = Buffer.allocUnsafe(65536);
      const n = this.link.pull(buf, 0, buf.length);
      if (n > 0 && !this.s.destroyed) this.s.write(buf.subarray(0, n));
    });
  }
  close(): void {
    this.kick();
    queueMicrotask(() => queueMicrotask(() => this.s.end()));
  }
}

describe('wifi binding: the device WebSocket subset against the ws client', function () {
  this.timeout(20000);
  let server: net.Server;
  let fx: Fixture;
  let link: TcpLink | null = null;
  const clients: WebSocket[] = [];

  beforeEach(async () => {
    fx = hubWithOperator();
    link = null;
    server = net.createServer((s) => {
      const l = new TcpLink({
        hub: fx.hub,
        clock: fx.clock,
        framing: LinkFraming.WS_SERVER,
        binding: 'ws',
        sha1: (text) => new Uint8Array(createHash('sha1').update(text, 'latin1').digest()),
      });
      link = l;
      s.on('data', (chunk: Buffer) => l.input(chunk, 0, chunk.length));
      s.on('close', () => l.transportClosed());
      s.on('error', () => undefined);
      l.start(new TestNetTransport(s, l));
    });
    await bounded(new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok)), 'the test server');
  });

  afterEach(async () => {
    for (const c of clients.splice(0)) c.terminate();
    await bounded(new Promise<void>((ok) => server.close(() => ok())), 'the test server to close');
  });

  it('completes the upgrade, carries HELLO/WELCOME, DATA and ESTOP, answers ping, closes cleanly', async () => {
    const port = (server.address() as net.AddressInfo).port;
    const ws = new WebSocket(`ws://127.0.0.1:${port}/hub`, { perMessageDeflate: false });
    clients.push(ws);
    ws.binaryType = 'nodebuffer';
    const got: Buffer[] = [];
    ws.on('message', (d: Buffer, isBinary: boolean) => {
      assert.ok(isBinary);
      got.push(d);
    });
    let pong = false;
    ws.on('pong', () => (pong = true));
    let closeCode = 0;
    ws.on('close', (code: number) => (closeCode = code));
    await bounded(
      new Promise<void>((ok, bad) => {
        ws.once('open', () => ok());
        ws.once('error', bad);
      }),
      'the WebSocket connection',
    );
    const imu = fx.catalog.byName('imu')!.id;
    const w = new CborWriter(new Uint8Array(512));
    encodeFrame({ type: FrameType.HELLO, version: 1, name: 'dev', subWishes: [{ channelId: imu, wishedRateHz: 50 }] }, w);
    ws.send(w.buf.slice(0, w.pos));
    await until(() => got.length >= 1, 'WELCOME');
    assert.equal(decodeFrame(got[0]!, 0, got[0]!.length, 1 << 16).type, FrameType.WELCOME);
    fx.clock.advance(100);
    fx.hub.publishSample(imu, fx.clock.now(), values, 6);
    await until(() => got.length >= 2, 'DATA');
    const d = decodeFrame(got[1]!, 0, got[1]!.length);
    assert.ok(d.type === FrameType.DATA && d.channelId === imu && d.t === fx.clock.now());
    fx.hub.estop(EstopSource.HUB_BUTTON, 0);
    await until(() => got.some((g) => isEstopFrame(g, 0)), 'ESTOP');
    ws.ping(Buffer.from([1, 2, 3]));
    await until(() => pong, 'pong');
    ws.close(1000);
    await until(() => closeCode !== 0, 'the closing handshake');
    assert.equal(closeCode, 1000);
    await until(() => link !== null && link.closed, 'the link to close');
    assert.equal(fx.hub.sessions()[0]!.state, SessionState.STALE);
  });

  it('answers the RFC 6455 example key with the RFC 6455 accept value', async () => {
    const port = (server.address() as net.AddressInfo).port;
    const s = net.connect(port, '127.0.0.1');
    let text = '';
    s.on('data', (b: Buffer) => (text += b.toString('latin1')));
    s.on('error', () => undefined);
    await bounded(new Promise<void>((ok) => s.once('connect', () => ok())), 'the TCP connection');
    s.write('GET /chat HTTP/1.1\r\nHost: server.example.com\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n');
    try {
      await until(() => text.includes('\r\n\r\n'), 'the 101 answer');
      assert.ok(text.startsWith('HTTP/1.1 101 Switching Protocols\r\n'));
      assert.ok(text.includes('\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n'));
    } finally {
      s.destroy();
    }
  });
});

// §13.2: the host's listener (`ws`) and the device's own upgrade answer every request alike.
for (const side of ['host', 'device'] as const) {
  describe(`wifi binding: the ${side} WebSocket upgrade over a real socket`, function () {
    this.timeout(30000);
    let fx: Fixture;
    let port = 0;
    let stop: () => Promise<void> = async () => undefined;

    beforeEach(async () => {
      fx = hubWithOperator();
      if (side === 'host') {
        const l = await bounded(WsListener.listen({ hub: fx.hub, clock: fx.clock }), 'the listener');
        port = l.port;
        stop = () => l.close();
      } else {
        const server = net.createServer((s) => {
          const l = new TcpLink({
            hub: fx.hub,
            clock: fx.clock,
            framing: LinkFraming.WS_SERVER,
            binding: 'ws',
            sha1: (text) => new Uint8Array(createHash('sha1').update(text, 'latin1').digest()),
          });
          s.on('data', (chunk: Buffer) => l.input(chunk, 0, chunk.length));
          s.on('close', () => l.transportClosed());
          s.on('error', () => undefined);
          l.start(new TestNetTransport(s, l));
        });
        await bounded(new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok)), 'the test server');
        port = (server.address() as net.AddressInfo).port;
        stop = () => new Promise<void>((ok) => server.close(() => ok()));
      }
    });

    afterEach(async () => {
      await bounded(stop(), 'the server to close');
    });

    /** Sends one raw request and returns the response head. */
    async function ask(request: string): Promise<string> {
      const s = net.connect(port, '127.0.0.1');
      let text = '';
      s.on('data', (b: Buffer) => (text += b.toString('latin1')));
      s.on('error', () => undefined);
      try {
        await bounded(new Promise<void>((ok) => s.once('connect', () => ok())), 'the TCP connection');
        s.write(request);
        await until(() => text.includes('\r\n\r\n'), 'the answer to ' + request.slice(0, 30));
        return text.slice(0, text.indexOf('\r\n\r\n') + 2);
      } finally {
        s.destroy();
      }
    }

    const KEY13 = 'dGhlIHNhbXBsZSBub25jZQ==';
    const UPGRADE = `GET /hub HTTP/1.1\r\nHost: h\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: ${KEY13}\r\nSec-WebSocket-Version: 13\r\n`;

    it('accepts version 13 only and negotiates no subprotocol', async () => {
      const ok101 = await ask(UPGRADE + 'Sec-WebSocket-Protocol: chat, hub\r\n\r\n');
      assert.ok(ok101.startsWith('HTTP/1.1 101 '), ok101);
      assert.ok(!ok101.toLowerCase().includes('sec-websocket-protocol'), ok101);
      const v8 = await ask(UPGRADE.replace('Version: 13', 'Version: 8') + '\r\n');
      assert.ok(v8.startsWith('HTTP/1.1 400 '), v8);
      assert.match(v8, /\r\nSec-WebSocket-Version: 13\r\n/i);
    });

    it('answers 426 to a request that is not an upgrade, 405 to another method, 400 to the rest', async () => {
      const cases: [string, number][] = [
        ['GET / HTTP/1.1\r\nHost: h\r\n\r\n', 426],
        [UPGRADE.replace('GET', 'POST') + '\r\n', 405],
        [UPGRADE.replace('Upgrade: websocket', 'Upgrade: h2c') + '\r\n', 400],
        [UPGRADE.replace(KEY13, 'c2hvcnQ=') + '\r\n', 400],
        [UPGRADE.replace('Version: 13', 'Version: 99') + '\r\n', 400],
      ];
      for (const [request, status] of cases) {
        const head = await ask(request);
        assert.ok(head.startsWith(`HTTP/1.1 ${status} `), `${request.slice(0, 40)} → ${head}`);
      }
    });

    it('answers a text message of invalid UTF-8 with NACK MALFORMED and stays open', async () => {
      const ws = new WebSocket(`ws://127.0.0.1:${port}/hub`, { perMessageDeflate: false });
      ws.binaryType = 'nodebuffer';
      const got: Buffer[] = [];
      ws.on('message', (d: Buffer) => got.push(d));
      let closed = false;
      ws.on('close', () => (closed = true));
      try {
        await bounded(new Promise<void>((ok, bad) => {
          ws.once('open', () => ok());
          ws.once('error', bad);
        }), 'the WebSocket connection');
        ws.send(Buffer.from([0xff, 0xfe, 0x80]), { binary: false });
        await until(() => got.length >= 1, 'the NACK');
        const f = decodeFrame(got[0]!, 0, got[0]!.length, 1 << 16);
        assert.ok(f.type === FrameType.NACK && f.code === Nack.MALFORMED, JSON.stringify(f));
        const w = new CborWriter(new Uint8Array(64));
        encodeFrame({ type: FrameType.HELLO, version: 1, name: 'after' }, w);
        ws.send(w.buf.slice(0, w.pos));
        await until(() => got.length >= 2, 'WELCOME');
        assert.equal(decodeFrame(got[1]!, 0, got[1]!.length, 1 << 16).type, FrameType.WELCOME);
        assert.ok(!closed);
      } finally {
        ws.terminate();
      }
    });
  });
}
