// The client library's platform-free core (client/core.ts) against a real Hub on a virtual
// clock, over an in-memory transport with ordered, jittered delivery; and against a scripted
// hub where the exact frames matter (ACK cadence, vectors, refusals). Portable: runs on Node
// and on the XS engine.
import { ESTOP_REANNOUNCE_MS } from '../../hub/constants.js';
import fc from 'fast-check';
import { CborWriter } from '../../hub/cbor.js';
import { saveCredentials } from '../../hub/credentials.js';
import { decodeEstop, EstopKind, EstopSource, isEstopFrame, type EstopFrame } from '../../hub/estop-frame.js';
import {
  decodeFrame,
  encodeFrame,
  FRAME_DIRECTION,
  FrameType,
  FROM_HUB,
  GoodbyeReason,
  type Frame,
  type GrantFrame,
  type WelcomeFrame,
} from '../../hub/frames.js';
import type { HubConfig } from '../../hub/hub.js';
import { Nack } from '../../hub/nack.js';
import { SessionState } from '../../hub/session.js';
import { AckForm, type Link, type LinkSink } from '../../hub/ports.js';
import { AckCounter } from '../../bindings/link.js';
import {
  ACK_EVERY_FRAMES,
  ClientErrorCode,
  HubClient,
  HubClientError,
  OWNER_PING_INTERVAL_MS,
  PING_INTERVAL_MS,
  type ClientState,
  type HubClientOptions,
} from '../../client/core.js';
import { LengthPrefixReassembler, lengthPrefixed, ReassemblyError, type ClientClock, type ClientTransport } from '../../client/transport.js';
import { deepEqual, equal, fail, ok } from '../lib/assert.js';
import { runs } from '../lib/env.js';
import { makeHub, MemoryStore, type Fixture } from '../lib/hub-fixture.js';
import { bytesToHex, fromJson, hexToBytes } from '../lib/vector-json.js';
import framesJson from '../vectors/frames.json' with { type: 'json' };
import estopJson from '../vectors/estop.json' with { type: 'json' };
import invalidJson from '../vectors/invalid.json' with { type: 'json' };

interface ValidVector { name: string; frame: unknown; hex: string }
const VECTORS = framesJson as ValidVector[];
const ESTOP_VECTORS = estopJson as { valid: { name: string; frame: EstopFrame; hex: string }[]; invalid: { name: string; hex: string }[] };
const INVALID_VECTORS = invalidJson as { name: string; hex: string }[];

const OPERATOR = new Uint8Array([0x0b, 0x0e, 0x0a, 0x70]);
const OPERATOR2 = new Uint8Array([0x0b, 0x0e, 0x0a, 0x71]);

// ---------------------------------------------------------------------------------------
// Virtual time with one-shot timers, in (time, order of setting) order.

interface VTimer { at: number; seq: number; fn: () => void; live: boolean }

class VirtualTimers implements ClientClock {
  private timers: VTimer[] = [];
  private seq = 0;
  constructor(readonly clock: { now(): number; advance(ms: number): void }) {}
  now(): number {
    return this.clock.now();
  }
  setTimer(ms: number, fn: () => void): unknown {
    const t: VTimer = { at: this.clock.now() + Math.max(0, ms), seq: this.seq++, fn, live: true };
    this.timers.push(t);
    return t;
  }
  clearTimer(h: unknown): void {
    (h as VTimer).live = false;
  }
  /** Fires every live timer due at or before now, in order, including those they set. */
  fireDue(): void {
    for (;;) {
      let best: VTimer | undefined;
      for (const t of this.timers) {
        if (!t.live || t.at > this.clock.now()) continue;
        if (!best || t.at < best.at || (t.at === best.at && t.seq < best.seq)) best = t;
      }
      if (!best) break;
      best.live = false;
      best.fn();
    }
    this.timers = this.timers.filter((t) => t.live);
  }
  pending(): number {
    return this.timers.filter((t) => t.live).length;
  }
}

async function settle(): Promise<void> {
  for (let i = 0; i < 12; i++) await Promise.resolve();
}

// ---------------------------------------------------------------------------------------
// One connection between the client and a real hub, in memory. Client→hub frames arrive in
// order after a latency the test chooses (TCP: ordered, variable delay); hub→client frames
// at the next pump; the hub's write-ahead ESTOP goes in front of everything queued.

class MemPair {
  readonly toClient: Uint8Array[] = [];
  private readonly toHub: { at: number; bytes: Uint8Array }[] = [];
  private lastAt = 0;
  hubClosed = false;
  clientClosed = false;
  private lostSent = false;
  private closeSent = false;
  level = 0;
  capacity = 1 << 20;
  queuedBytes = 0;
  /** Everything the client sent, decoded (ESTOP frames decoded apart). */
  readonly fromClient: Frame[] = [];
  readonly estopsFromClient: EstopFrame[] = [];
  sink: LinkSink;
  /** The binding's ACK accounting (bindings/link.ts): a frame starts when the client is handed it. */
  readonly acks = new AckCounter();
  readonly link: Link;
  readonly client: ClientTransport;

  constructor(private readonly sim: Sim, private readonly latency: () => number) {
    const self = this;
    this.link = {
      caps: Object.freeze({ binding: 'mem', broadcast: false, datagram: false, mtu: 1024, writeAheadSlots: 4, ackForm: AckForm.STREAM }),
      get level(): number {
        return self.level;
      },
      send: (frame, _tag, _seq) => {
        if (self.hubClosed || self.queuedBytes + frame.length > self.capacity) return false;
        self.toClient.push(frame.slice());
        self.queuedBytes += frame.length;
        return true;
      },
      writeAhead: (frame) => {
        if (!self.hubClosed) self.toClient.unshift(frame.slice());
      },
      acked: (count) => void self.acks.ack(count, sim.now()),
      granted: () => {},
      estimate: () => ({ throughputBps: 0, rttMs: 0 }),
      occupancy: () => self.queuedBytes / self.capacity,
      stalledMs: () => 0,
      ackLag: () => self.acks.outstanding(),
      lossRate: () => NaN,
      tierCeiling: () => 2,
      close: () => {
        self.hubClosed = true;
      },
    };
    this.sink = sim.fx.hub.attach(this.link);
    this.client = {
      send(bytes: Uint8Array): void {
        if (self.clientClosed || self.hubClosed) return;
        if (isEstopFrame(bytes, 0)) self.estopsFromClient.push(decodeEstop(bytes, 0, bytes.length));
        else self.fromClient.push(decodeFrame(bytes, 0, bytes.length));
        const at = Math.max(self.lastAt, sim.now() + self.latency());
        self.lastAt = at;
        self.toHub.push({ at, bytes });
      },
      close(): void {
        self.clientClosed = true;
      },
      onFrame: null,
      onClose: null,
    };
  }

  /** Delivers what is due; true when anything moved. */
  pump(): boolean {
    let moved = false;
    const now = this.sim.now();
    while (this.toHub.length > 0 && (this.toHub[0] as { at: number }).at <= now && !this.hubClosed) {
      const { bytes } = this.toHub.shift() as { bytes: Uint8Array };
      this.sink.frame(bytes, 0, bytes.length);
      moved = true;
    }
    if (this.clientClosed && !this.lostSent) {
      this.lostSent = true;
      this.sink.lost();
      moved = true;
    }
    while (this.toClient.length > 0 && !this.clientClosed) {
      const b = this.toClient.shift() as Uint8Array;
      if (!isEstopFrame(b, 0)) this.queuedBytes -= b.length;
      this.acks.startedAt(1, now);
      if (this.client.onFrame) this.client.onFrame(b);
      moved = true;
    }
    if (this.hubClosed && !this.closeSent && this.toClient.length === 0) {
      this.closeSent = true;
      const h = this.client.onClose;
      if (h) h();
      moved = true;
    }
    return moved;
  }

  /**
   * What a connectionless binding (ESP-NOW) does: the hub's side reports the transport lost (the
   * session goes STALE) and takes the same peer back as a new transport, with no session; the
   * client's side never hears of it.
   */
  readmit(): void {
    this.sink.lost();
    this.sink = this.sim.fx.hub.attach(this.link);
  }

  /** The network is cut: nothing more moves, and both ends notice. */
  cut(): void {
    this.toClient.length = 0;
    this.toHub.length = 0;
    this.hubClosed = true;
    this.clientClosed = true;
  }

  sent(type: number): Frame[] {
    return this.fromClient.filter((f) => f.type === type);
  }
}

interface SimOptions {
  config?: Partial<HubConfig>;
  latency?: () => number;
}

class Sim {
  readonly fx: Fixture;
  readonly timers: VirtualTimers;
  readonly pairs: MemPair[] = [];
  reachable = true;
  latency: () => number;
  tickEveryMs = 10;
  private lastTick = 0;

  constructor(opts: SimOptions = {}) {
    const store = new MemoryStore();
    saveCredentials(store, [
      { tier: 1, credential: OPERATOR },
      { tier: 1, credential: OPERATOR2 },
    ]);
    this.fx = makeHub(opts.config ?? {}, store);
    this.timers = new VirtualTimers(this.fx.clock);
    this.latency = opts.latency ?? (() => 0);
  }

  now(): number {
    return this.fx.clock.now();
  }

  get hub(): Fixture['hub'] {
    return this.fx.hub;
  }

  open(): MemPair {
    const p = new MemPair(this, this.latency);
    this.pairs.push(p);
    return p;
  }

  client(opts: Partial<HubClientOptions> & { name: string }): HubClient {
    return new HubClient({
      transport: () => (this.reachable ? Promise.resolve(this.open().client) : Promise.reject(new Error('hub unreachable'))),
      clock: this.timers,
      random: () => 0.5,
      ...opts,
    });
  }

  get last(): MemPair {
    const p = this.pairs[this.pairs.length - 1];
    if (!p) return fail('no connection yet');
    return p;
  }

  private pumpAll(): void {
    for (let i = 0; i < 100; i++) {
      let moved = false;
      for (const p of this.pairs) if (p.pump()) moved = true;
      if (!moved) return;
    }
  }

  /** Advances virtual time by `ms` in steps, firing timers, moving frames and ticking the hub. */
  async run(ms: number, step = 1, each?: (now: number) => void): Promise<void> {
    const end = this.now() + ms;
    while (this.now() < end) {
      this.fx.clock.advance(Math.min(step, end - this.now()));
      this.timers.fireDue();
      if (each) each(this.now());
      this.pumpAll();
      if (this.now() - this.lastTick >= this.tickEveryMs) {
        this.lastTick = this.now();
        this.fx.hub.tick();
        this.pumpAll();
      }
      await settle();
      this.pumpAll();
      await settle();
    }
  }

  /** Runs until the promise settles (at most `maxMs` of virtual time); returns its value. */
  async until<T>(p: Promise<T>, maxMs = 10000, step = 1): Promise<T> {
    let done = false;
    let value: T | undefined;
    let error: unknown;
    let failed = false;
    p.then(
      (v) => {
        done = true;
        value = v;
      },
      (e: unknown) => {
        done = true;
        failed = true;
        error = e;
      },
    );
    await settle();
    const end = this.now() + maxMs;
    while (!done && this.now() < end) await this.run(step, step);
    if (!done) fail(`not settled within ${maxMs} ms of virtual time`);
    if (failed) throw error;
    return value as T;
  }

  /** Runs until the promise rejects; returns the error. */
  async rejects(p: Promise<unknown>, maxMs = 10000): Promise<HubClientError> {
    try {
      await this.until(p, maxMs);
    } catch (e) {
      ok(e instanceof HubClientError, `expected a HubClientError, got ${String(e)}`);
      return e;
    }
    return fail('expected a rejection');
  }
}

function xorshift(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) / 0x100000000;
  };
}

// ---------------------------------------------------------------------------------------
// A scripted hub: the test reads what the client sends and writes what the hub would.

class Scripted implements ClientTransport {
  readonly sent: Uint8Array[] = [];
  closed = false;
  onFrame: ((bytes: Uint8Array) => void) | null = null;
  onClose: (() => void) | null = null;
  private readonly w = new CborWriter(new Uint8Array(8192));
  send(bytes: Uint8Array): void {
    this.sent.push(bytes);
  }
  close(): void {
    this.closed = true;
  }
  inject(f: Frame): void {
    this.w.reset();
    encodeFrame(f, this.w);
    this.injectBytes(this.w.buf.slice(0, this.w.pos));
  }
  injectBytes(b: Uint8Array): void {
    if (this.onFrame) this.onFrame(b);
  }
  frames(type?: number): Frame[] {
    const out: Frame[] = [];
    for (const b of this.sent) {
      if (isEstopFrame(b, 0)) continue;
      const f = decodeFrame(b, 0, b.length);
      if (type === undefined || f.type === type) out.push(f);
    }
    return out;
  }
}

function welcome(over: Partial<WelcomeFrame> = {}): WelcomeFrame {
  return {
    type: FrameType.WELCOME,
    sessionId: 7,
    resumeToken: new Uint8Array(16).fill(0x11),
    hubId: 'hub-a1',
    mtu: 1024,
    slots: 8,
    catalogHash: new Uint8Array(8),
    tier: 1,
    owner: 0,
    latched: false,
    subGrants: [],
    pubGrants: [],
    staleTtlMs: 30000,
    ...over,
  };
}

class ScriptedRig {
  readonly clockState = { t: 1000, now(): number { return this.t; }, advance(ms: number): void { this.t += ms; } };
  readonly timers = new VirtualTimers(this.clockState);
  readonly transports: Scripted[] = [];
  readonly errors: HubClientError[] = [];
  client: HubClient;
  constructor(opts: Partial<HubClientOptions> = {}) {
    this.client = new HubClient({
      name: 'console',
      transport: () => {
        const t = new Scripted();
        this.transports.push(t);
        return Promise.resolve(t);
      },
      clock: this.timers,
      onError: (e) => this.errors.push(e),
      ...opts,
    });
  }
  get t(): Scripted {
    const t = this.transports[this.transports.length - 1];
    if (!t) return fail('no transport yet');
    return t;
  }
  async advance(ms: number, step = 1): Promise<void> {
    for (let i = 0; i < ms; i += step) {
      this.clockState.advance(step);
      this.timers.fireDue();
      await settle();
    }
  }
  /** Connects and answers the HELLO with `w`. */
  async open(w: WelcomeFrame = welcome()): Promise<WelcomeFrame> {
    const p = this.client.connect();
    await settle();
    this.t.inject(w);
    return p;
  }
}

function dataFrame(seq: number): Frame {
  return { type: FrameType.DATA, channelId: 10, seq, t: seq, values: [1, 2, 3] };
}

// ---------------------------------------------------------------------------------------

describe('client core: session', () => {
  it('connects: HELLO carries the wishes, WELCOME resolves, grants are what the hub granted (§10.2)', async () => {
    const sim = new Sim();
    const imu = sim.fx.catalog.byName('imu')!.id;
    const battery = sim.fx.catalog.byName('battery')!.id;
    const states: ClientState[] = [];
    const grants: GrantFrame[] = [];
    const c = sim.client({
      name: 'console',
      subscriptions: [{ channelId: imu, wishedRateHz: 100 }, { channelId: battery, wishedRateHz: 1 }],
      onState: (s) => states.push(s),
      onGrant: (g) => grants.push(g),
    });
    const w = await sim.until(c.connect());
    equal(c.state, 'active');
    deepEqual(states, ['connecting', 'active']);
    equal(c.sessionId, w.sessionId);
    ok(w.sessionId >= 1);
    equal(c.tier, 0, 'anonymous clients are observers');
    const [hello] = sim.last.sent(FrameType.HELLO);
    ok(hello && hello.type === FrameType.HELLO);
    deepEqual(hello.subWishes, [{ channelId: imu, wishedRateHz: 100 }, { channelId: battery, wishedRateHz: 1 }]);
    equal(hello.resumeToken, undefined);
    // The observer tier caps imu at 50 Hz: the client shows 50, never the 100 it wished.
    equal(c.grants.get(imu)?.grantedRateHz, 50);
    equal(c.grants.get(battery)?.grantedRateHz, 1);
    equal(grants.length, 1, 'WELCOME announces its grant batch');
    // DATA reaches onData at the granted rate.
    const got: number[] = [];
    c.onData = (ch) => got.push(ch);
    const v = new Float64Array(6);
    await sim.run(1000, 5, (now) => sim.hub.publishSample(imu, now, v, 6));
    const n = got.filter((x) => x === imu).length;
    ok(n >= 45 && n <= 51, `imu at its 50 Hz grant, got ${n} in 1 s`);
    equal(c.channelStats(imu)?.frames, n);
    c.close();
    equal(c.state, 'closed');
  });

  it('matches the HELLO vectors byte for byte', async () => {
    const rig = new ScriptedRig({ name: 'console' });
    rig.client.connect().catch(() => undefined);
    await settle();
    equal(bytesToHex(rig.t.sent[0]!), VECTORS.find((v) => v.name === 'HELLO minimal')!.hex);
    const rich = VECTORS.find((v) => v.name === 'HELLO with credential and wishes')!;
    const f = fromJson(rich.frame) as { name: string; credential: Uint8Array; subWishes: []; pubWishes: [] };
    const rig2 = new ScriptedRig({ name: f.name, credential: f.credential, subscriptions: f.subWishes, publications: f.pubWishes });
    rig2.client.connect().catch(() => undefined);
    await settle();
    equal(bytesToHex(rig2.t.sent[0]!), rich.hex);
  });

  it('wishes beyond the 32 a HELLO list holds go as a SUBSCRIBE right after WELCOME', async () => {
    const subs = Array.from({ length: 40 }, (_, i) => ({ channelId: 100 + i, wishedRateHz: 1 }));
    const rig = new ScriptedRig({ subscriptions: subs });
    await rig.open();
    const [hello] = rig.t.frames(FrameType.HELLO);
    ok(hello && hello.type === FrameType.HELLO);
    equal(hello.subWishes?.length, 32);
    const more = rig.t.frames(FrameType.SUBSCRIBE);
    equal(more.length, 1, 'sent once');
    deepEqual(more[0]!.type === FrameType.SUBSCRIBE ? more[0]!.wishes.map((w) => w.channelId) : [], subs.slice(32).map((w) => w.channelId));
    rig.client.close();
  });

  it('a first connection that cannot open rejects; a HELLO refused for good rejects and closes', async () => {
    const sim = new Sim({ config: { anonymousTier: -1 } });
    sim.reachable = false;
    const c = sim.client({ name: 'x' });
    const e1 = await sim.rejects(c.connect());
    equal(e1.code, ClientErrorCode.TRANSPORT);
    equal(c.state, 'closed');
    sim.reachable = true;
    const e2 = await sim.rejects(c.connect());
    equal(e2.code, ClientErrorCode.NACK);
    equal(e2.nack, Nack.FORBIDDEN);
    equal(c.state, 'closed');
  });

  it('NO_SLOTS is retried after retry_after_ms (§12.4) until a slot frees', async () => {
    const sim = new Sim({ config: { slots: 1 } });
    const a = sim.client({ name: 'a' });
    await sim.until(a.connect());
    const b = sim.client({ name: 'b' });
    let nacks = 0;
    b.onNack = (f) => {
      if (f.code === Nack.NO_SLOTS) nacks++;
    };
    const pb = b.connect();
    await sim.run(2500, 5);
    ok(nacks >= 2, `refused and retried, ${nacks} NO_SLOTS`);
    ok(nacks <= 3, `not before retry_after_ms (1000 ms): ${nacks} NO_SLOTS in 2.5 s`);
    equal(b.state, 'connecting');
    a.close();
    const w = await sim.until(pb, 5000);
    equal(b.state, 'active');
    ok(w.sessionId !== a.sessionId);
    b.close();
  });

  it('close() sends GOODBYE; the hub frees the slot; the client rejects what was pending', async () => {
    const sim = new Sim({ config: { slots: 1 } });
    const c = sim.client({ name: 'a', credential: OPERATOR });
    await sim.until(c.connect());
    const pair = sim.last;
    // Nothing moves until the sim runs: the intent is still unanswered when the client closes.
    const pending = c.intent(sim.fx.catalog.byName('go_home')!.id);
    c.close();
    const e = await sim.rejects(pending);
    equal(e.code, ClientErrorCode.CLOSED);
    await sim.run(20);
    equal(pair.sent(FrameType.GOODBYE).length, 1);
    equal(sim.hub.sessions().length, 0, 'the slot is free');
  });
});

describe('client core: grants', () => {
  it('subscribe resolves with the GRANT that answers it and names the refused wishes; unsubscribe', async () => {
    const sim = new Sim();
    const imu = sim.fx.catalog.byName('imu')!.id;
    const odom = sim.fx.catalog.byName('odom')!.id;
    const cmdVel = sim.fx.catalog.byName('cmd_vel')!.id;
    const c = sim.client({ name: 'scope', subscriptions: [{ channelId: imu, wishedRateHz: 20 }] });
    await sim.until(c.connect());
    const ans = await sim.until(c.subscribe([{ channelId: odom, wishedRateHz: 10 }, { channelId: cmdVel, wishedRateHz: 10 }, { channelId: 99, wishedRateHz: 5 }]));
    deepEqual(ans.granted.map((g) => [g.channelId, g.grantedRateHz]), [[odom, 10]]);
    deepEqual(ans.grant.subGrants?.map((g) => g.channelId).sort((x, y) => x - y), [imu, odom]);
    deepEqual(ans.refused.map((r) => [r.channelId, r.code]).sort((x, y) => x[0]! - y[0]!), [[cmdVel, Nack.UNKNOWN_CHANNEL], [99, Nack.UNKNOWN_CHANNEL]]);
    equal(c.grants.get(odom)?.grantedRateHz, 10);
    const after = await sim.until(c.unsubscribe([imu]));
    deepEqual(after.subGrants?.map((g) => g.channelId), [odom]);
    equal(c.grants.has(imu), false);
    c.close();
  });

  it('an unsolicited GRANT updates grants and fires onGrant (§10.2: the UI shows what is granted)', async () => {
    const sim = new Sim({ config: { capacityHz: 60 } });
    const imu = sim.fx.catalog.byName('imu')!.id;
    const updates: number[] = [];
    const a = sim.client({ name: 'a', subscriptions: [{ channelId: imu, wishedRateHz: 50 }] });
    a.onGrant = (g) => {
      const x = g.subGrants?.find((s) => s.channelId === imu);
      if (x) updates.push(x.grantedRateHz);
    };
    await sim.until(a.connect());
    equal(a.grants.get(imu)?.grantedRateHz, 50);
    const b = sim.client({ name: 'b', subscriptions: [{ channelId: imu, wishedRateHz: 50 }] });
    await sim.until(b.connect());
    await sim.run(20);
    // The pie of 60 Hz is split again: a is cut without asking, and says so.
    const cut = a.grants.get(imu)?.grantedRateHz ?? -1;
    ok(cut < 50 && cut > 0, `a re-granted below 50 Hz, got ${cut}`);
    equal(updates[updates.length - 1], cut);
    ok(updates.length >= 2);
    equal(cut, sim.hub.sessions().find((s) => s.id === a.sessionId)!.subs[0]!.grantedHz, 'the client holds the hub’s grant');
    a.close();
    b.close();
  });

  it('a GRANT that arrives unsolicited before the answer is not taken for the answer (PING fence)', async () => {
    const rig = new ScriptedRig();
    await rig.open(welcome({ subGrants: [{ channelId: 10, grantedRateHz: 20, priority: 1 }] }));
    const p = rig.client.subscribe([{ channelId: 11, wishedRateHz: 10 }]);
    let answered = false;
    p.then(() => (answered = true), () => undefined);
    await settle();
    const [sub] = rig.t.frames(FrameType.SUBSCRIBE);
    ok(sub);
    const [ping] = rig.t.frames(FrameType.PING);
    ok(ping && ping.type === FrameType.PING, 'the request is fenced by a PING');
    // An unsolicited re-grant the hub sent before it read the SUBSCRIBE:
    rig.t.inject({ type: FrameType.GRANT, subGrants: [{ channelId: 10, grantedRateHz: 10, priority: 1 }] });
    await settle();
    equal(answered, false);
    equal(rig.client.grants.get(10)?.grantedRateHz, 10, 'adopted at once');
    rig.t.inject({ type: FrameType.GRANT, subGrants: [{ channelId: 10, grantedRateHz: 10, priority: 1 }, { channelId: 11, grantedRateHz: 10, priority: 1 }] });
    rig.t.inject({ type: FrameType.PONG, t0: ping.t0, t1: 5 });
    const ans = await p;
    deepEqual(ans.granted, [{ channelId: 11, grantedRateHz: 10, priority: 1 }]);
    deepEqual(ans.refused, []);
  });

  it('publish resolves with the granted publications, also when nothing is granted (§10.2)', async () => {
    const sim = new Sim();
    const cmdVel = sim.fx.catalog.byName('cmd_vel')!.id;
    const traj = sim.fx.catalog.byName('trajectory')!.id;
    const observer = sim.client({ name: 'viewer' });
    await sim.until(observer.connect());
    const none = await sim.until(observer.publish([{ channelId: cmdVel, wishedRateHz: 50 }]));
    deepEqual(none.granted, []);
    deepEqual(none.refused, [{ channelId: cmdVel, code: Nack.FORBIDDEN }]);
    const op = sim.client({ name: 'planner', credential: OPERATOR });
    await sim.until(op.connect());
    const ans = await sim.until(op.publish([{ channelId: traj, wishedRateHz: 5, burst: 40 }, { channelId: cmdVel, wishedRateHz: 80 }]));
    // Clamped and echoed: trajectory's burst to the catalog's 20, cmd_vel's rate to 50.
    deepEqual(ans.granted.map((g) => [g.channelId, g.grantedRateHz, g.burst]), [[traj, 5, 20], [cmdVel, 50, 50]]);
    equal(op.pubGrants.get(traj)?.burst, 20);
    equal(op.budget(cmdVel), 45, 'capacity = granted rate less 100 ms of jitter reserve');
    observer.close();
    op.close();
  });
});

describe('client core: publishing within the grant (§10.5)', () => {
  async function owner(sim: Sim, name: string, extra: Partial<HubClientOptions> = {}): Promise<HubClient> {
    const cmdVel = sim.fx.catalog.byName('cmd_vel')!.id;
    const c = sim.client({ name, credential: OPERATOR, publications: [{ channelId: cmdVel, wishedRateHz: 50 }], ...extra });
    await sim.until(c.connect());
    const echo = await sim.until(c.takeControl());
    equal(echo.result, 0);
    ok(c.ownsControl);
    return c;
  }

  function overRateApp(c: HubClient, cmdVel: number): (now: number) => void {
    // The application asks for 100 Hz and a burst of 20 every 2 s: twice its grant, and more.
    let last = -Infinity;
    let lastBurst = -Infinity;
    return (now) => {
      if (now - last >= 10) {
        last = now;
        c.send(cmdVel, [[now, 0.5, 0.1]]);
      }
      if (now - lastBurst >= 2000) {
        lastBurst = now;
        const burst: number[][] = [];
        for (let i = 0; i < 20; i++) burst.push([now, 0.2, 0]);
        c.send(cmdVel, burst);
      }
    };
  }

  it('a client publishing over its grant for 60 s under network jitter never earns RATE_LIMITED', async () => {
    const rnd = xorshift(42);
    const sim = new Sim({ latency: () => Math.floor(rnd() * 60) });
    const cmdVel = sim.fx.catalog.byName('cmd_vel')!.id;
    const c = await owner(sim, 'console');
    const seconds = 60;
    await sim.run(seconds * 1000, 5, overRateApp(c, cmdVel));
    const p = c.publication(cmdVel)!;
    equal(p.rateLimited, 0, 'no RATE_LIMITED NACK');
    equal(sim.hub.counters.nacks[Nack.RATE_LIMITED], 0);
    equal(p.nacked, 0);
    let delivered = 0;
    for (const x of sim.fx.robot.published) if (x.channelId === cmdVel) delivered += x.samples.length;
    // Everything still in flight has been delivered by now: the hub took every sample sent.
    await sim.run(200, 5);
    delivered = 0;
    for (const x of sim.fx.robot.published) if (x.channelId === cmdVel) delivered += x.samples.length;
    equal(delivered, p.sent, 'the robot got every sample the client sent');
    ok(p.sent >= 50 * seconds * 0.95 && p.sent <= 50 * (seconds + 1), `sent at about the 50 Hz grant: ${p.sent}`);
    ok(p.refused > 0, 'the excess was refused by the client, not the hub');
    equal(sim.hub.latch.latched, false, 'the owner was heard within the deadman all along');
    c.close();
  });

  it('the same load without the jitter reserve does earn RATE_LIMITED (the reserve is what protects it)', async () => {
    const rnd = xorshift(42);
    const sim = new Sim({ latency: () => Math.floor(rnd() * 60) });
    const cmdVel = sim.fx.catalog.byName('cmd_vel')!.id;
    const c = await owner(sim, 'console', { jitterReserveMs: 0 });
    await sim.run(60000, 5, overRateApp(c, cmdVel));
    ok(c.publication(cmdVel)!.rateLimited > 0, 'jitter bunches bundles beyond the hub’s bucket');
    c.close();
  });

  it('a raw sender over its grant earns RATE_LIMITED, throttled to 5 per second', async () => {
    const sim = new Sim();
    const cmdVel = sim.fx.catalog.byName('cmd_vel')!.id;
    const take = sim.fx.catalog.byName('take_control')!.id;
    const pair = sim.open();
    const w = new CborWriter(new Uint8Array(2048));
    const got: Frame[] = [];
    pair.client.onFrame = (b) => {
      if (!isEstopFrame(b, 0)) got.push(decodeFrame(b, 0, b.length, 1 << 16));
    };
    const raw = (f: Frame): void => {
      w.reset();
      encodeFrame(f, w);
      pair.client.send(w.buf.slice(0, w.pos));
    };
    raw({ type: FrameType.HELLO, version: 1, name: 'raw', credential: OPERATOR, pubWishes: [{ channelId: cmdVel, wishedRateHz: 50 }] });
    await sim.run(5);
    raw({ type: FrameType.INTENT, channelId: take, requestId: 1 });
    await sim.run(5);
    let last = -Infinity;
    let lastPing = -Infinity;
    await sim.run(10000, 5, (now) => {
      if (now - last >= 10) {
        last = now;
        raw({ type: FrameType.BUNDLE, channelId: cmdVel, samples: [[now, 0.5, 0.1]] });
      }
      if (now - lastPing >= 200) {
        lastPing = now;
        raw({ type: FrameType.PING, t0: now });
      }
    });
    equal(sim.fx.hub.controlOwner, 1, 'the raw sender owns control: its bundles reach the bucket');
    const limited = got.filter((f) => f.type === FrameType.NACK && f.code === Nack.RATE_LIMITED).length;
    ok(limited > 0, 'RATE_LIMITED earned');
    ok(limited <= 5 * 11, `throttled: ${limited} in 10 s`);
  });

  it('bundles hold at most 32 samples; samples that are not samples are refused locally', async () => {
    const sim = new Sim();
    const cmdVel = sim.fx.catalog.byName('cmd_vel')!.id;
    const c = await owner(sim, 'console', { publications: [{ channelId: cmdVel, wishedRateHz: 50, burst: 200 }] });
    equal(c.pubGrants.get(cmdVel)?.burst, 200);
    const samples: number[][] = [];
    for (let i = 0; i < 70; i++) samples.push([sim.now() + i, i, -i]);
    samples.push([1.5, 0, 0], [5, NaN, 0], [5, 1], [-1, 0, 0]);
    const sent = c.send(cmdVel, samples);
    equal(sent, 70);
    equal(c.publication(cmdVel)!.invalid, 4);
    const bundles = sim.last.sent(FrameType.BUNDLE);
    deepEqual(bundles.map((b) => (b.type === FrameType.BUNDLE ? b.samples.length : 0)), [32, 32, 6]);
    await sim.run(10);
    equal(sim.hub.counters.nacks[Nack.MALFORMED], 0);
    equal(sim.hub.counters.nacks[Nack.TOO_LARGE], 0);
    c.close();
  });

  it('a bundle is cut to the session mtu', async () => {
    const rig = new ScriptedRig({ publications: [{ channelId: 31, wishedRateHz: 5 }] });
    await rig.open(welcome({ mtu: 200, pubGrants: [{ channelId: 31, grantedRateHz: 100, burst: 400 }] }));
    const samples: number[][] = [];
    for (let i = 0; i < 20; i++) samples.push([100000 + i, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6]);
    equal(rig.client.send(31, samples), 20);
    const bundles = rig.t.sent.filter((b) => decodeFrame(b, 0, b.length).type === FrameType.BUNDLE);
    ok(bundles.length > 1);
    for (const b of bundles) ok(b.length <= 200, `bundle of ${b.length} bytes within the mtu of 200`);
  });
});

/** The bundles `send` made before it wrote each sample once: samples grouped up to 32 within the mtu less 9, each group through encodeFrame. */
function bundlesAsBefore(channelId: number, samples: readonly (readonly number[])[], mtu: number): Uint8Array[] {
  const limit = Math.min(1024, mtu) - 9;
  const out: Uint8Array[] = [];
  const sw = new CborWriter(new Uint8Array(4096));
  const w = new CborWriter(new Uint8Array(4096));
  let group: number[][] = [];
  let bytes = 0;
  const flush = (): void => {
    if (group.length === 0) return;
    w.reset();
    encodeFrame({ type: FrameType.BUNDLE, channelId, samples: group }, w);
    out.push(w.buf.slice(0, w.pos));
    group = [];
    bytes = 0;
  };
  for (const s of samples) {
    if (s.length < 1 || s.length > 33 || !Number.isSafeInteger(s[0]) || (s[0] as number) < 0 || !s.slice(1).every(Number.isFinite)) continue;
    sw.reset();
    sw.array(s.length);
    for (const x of s) sw.number(x);
    if (sw.pos > limit) continue;
    if (group.length === 32 || bytes + sw.pos > limit) flush();
    group.push(s.slice());
    bytes += sw.pos;
  }
  flush();
  return out;
}

describe('client core: bundles written once', () => {
  const number = fc.oneof(fc.double({ noNaN: true, noDefaultInfinity: true }), fc.integer({ min: -70000, max: 70000 }), fc.constantFrom(0, -0, 0.5, 1e300, NaN, Infinity));
  const sample = fc.oneof(
    { weight: 8, arbitrary: fc.tuple(fc.nat({ max: 2 ** 40 }), fc.array(number, { minLength: 0, maxLength: 6 })).map(([t, v]) => [t, ...v]) },
    { weight: 1, arbitrary: fc.array(number, { minLength: 0, maxLength: 40 }) },
  );

  it('sends byte for byte the bundles encodeFrame makes of the same groups, within the mtu, on any channel id', async () => {
    await fc.assert(
      fc.asyncProperty(fc.oneof(fc.constantFrom(1, 23, 24, 255), fc.integer({ min: 1, max: 255 })), fc.oneof(fc.constant(1024), fc.integer({ min: 40, max: 1024 })), fc.array(sample, { maxLength: 90 }), async (channelId, mtu, samples) => {
        const rig = new ScriptedRig();
        await rig.open(welcome({ mtu, pubGrants: [{ channelId, grantedRateHz: 1000, burst: 1000 }] }));
        const expected = bundlesAsBefore(channelId, samples, mtu);
        const before = rig.t.sent.length;
        const sent = rig.client.send(channelId, samples);
        const got = rig.t.sent.slice(before);
        equal(got.length, expected.length, 'as many bundles');
        for (let i = 0; i < got.length; i++) equal(bytesToHex(got[i]!), bytesToHex(expected[i]!), `bundle ${i}`);
        let n = 0;
        for (const b of got) {
          ok(b.length <= mtu, `a bundle of ${b.length} bytes within the mtu of ${mtu}`);
          const f = decodeFrame(b, 0, b.length);
          n += f.type === FrameType.BUNDLE ? f.samples.length : 0;
        }
        equal(sent, n);
        deepEqual(rig.errors, []);
      }),
      { numRuns: runs(200, 20) },
    );
  });

  it('a send made from inside another (the transport calling a handler) writes its own bundle; both go whole', async () => {
    const rig = new ScriptedRig();
    await rig.open(welcome({ pubGrants: [{ channelId: 31, grantedRateHz: 1000, burst: 1000 }, { channelId: 5, grantedRateHz: 1000, burst: 1000 }] }));
    const t = rig.t;
    // Enough of them that its bundle reaches past where the outer send's next sample waits.
    const inner: number[][] = [];
    for (let i = 0; i < 24; i++) inner.push([7 + i, 0.1 * i, -1 / (i + 3), 1e-7 * i, 2.5e9 + i]);
    let nested = 0;
    const send = t.send.bind(t);
    t.send = (bytes: Uint8Array): void => {
      send(bytes);
      if (nested++ === 0) equal(rig.client.send(5, inner), inner.length);
    };
    const outer: number[][] = [];
    for (let i = 0; i < 40; i++) outer.push([1000 + i, i / 3, -i]);
    equal(rig.client.send(31, outer), 40);
    const got = t.sent.map((b) => bytesToHex(b));
    const expected = [...bundlesAsBefore(31, outer.slice(0, 32), 1024), ...bundlesAsBefore(5, inner, 1024), ...bundlesAsBefore(31, outer.slice(32), 1024)].map(bytesToHex);
    deepEqual(got.slice(-3), expected);
  });
});

describe('client core: intents (§9.3)', () => {
  it('ECHO resolves, NACK with the request id rejects, silence times out, the budget is kept', async () => {
    const sim = new Sim();
    const cat = sim.fx.catalog;
    const a = sim.client({ name: 'a', credential: OPERATOR });
    const b = sim.client({ name: 'b', credential: OPERATOR2 });
    await sim.until(a.connect());
    await sim.until(b.connect());
    equal((await sim.until(a.takeControl())).result, 0);
    ok(a.ownsControl);
    // The robot's own result comes back in the ECHO.
    sim.fx.robot.intentResult = 3;
    const echo = await sim.until(a.intent(cat.byName('set_mode')!.id, [2]));
    equal(echo.result, 3);
    deepEqual(sim.fx.robot.intents[sim.fx.robot.intents.length - 1], { channelId: cat.byName('set_mode')!.id, args: [2] });
    // A motion intent from the session that does not own control: NACK NOT_OWNER with its request id.
    const e = await sim.rejects(b.intent(cat.byName('arm')!.id));
    equal(e.code, ClientErrorCode.NACK);
    equal(e.nack, Nack.NOT_OWNER);
    const e2 = await sim.rejects(b.intent(99));
    equal(e2.nack, Nack.UNKNOWN_CHANNEL);
    // 30 at once: the client's own bucket (20 less the jitter reserve) refuses the rest unsent.
    const pairB = sim.pairs[1]!;
    const before = pairB.sent(FrameType.INTENT).length;
    const results = await sim.until(Promise.allSettled(Array.from({ length: 30 }, () => b.intent(cat.byName('disarm')!.id))));
    const sentNow = pairB.sent(FrameType.INTENT).length - before;
    const refused = results.filter((r) => r.status === 'rejected' && (r.reason as HubClientError).code === ClientErrorCode.REFUSED).length;
    equal(sentNow, 30 - refused, 'a refused intent is never sent');
    ok(refused >= 10 && refused <= 14, `${refused} refused locally`);
    equal(results.filter((r) => r.status === 'fulfilled').length, sentNow, 'every intent sent is answered with an ECHO');
    equal(sim.hub.counters.nacks[Nack.RATE_LIMITED], 0, 'the hub never had to refuse one');
    a.close();
    b.close();
  });

  it('an intent without an answer times out; one in flight when the transport drops rejects LOST', async () => {
    const rig = new ScriptedRig({ intentTimeoutMs: 500 });
    await rig.open();
    const p = rig.client.intent(44);
    let err: unknown;
    p.catch((e: unknown) => (err = e));
    await rig.advance(499);
    equal(err, undefined);
    await rig.advance(2);
    ok(err instanceof HubClientError && err.code === ClientErrorCode.TIMEOUT);
    const q = rig.client.intent(44);
    let err2: unknown;
    q.catch((e: unknown) => (err2 = e));
    await settle();
    const t = rig.t;
    t.closed = true;
    t.onClose!();
    await settle();
    ok(err2 instanceof HubClientError && err2.code === ClientErrorCode.LOST);
    rig.client.close();
  });
});

describe('client core: ACK cadence (§13.2)', () => {
  function acks(t: Scripted): number[] {
    return t.frames(FrameType.ACK).map((f) => (f.type === FrameType.ACK && 'acked' in f ? f.acked : -1));
  }

  it('an ACK after every 32 DATA frames received on the transport', async () => {
    const rig = new ScriptedRig();
    await rig.open();
    for (let i = 1; i <= 100; i++) {
      rig.t.inject(dataFrame(i));
      // Control frames are not counted: the hub's and the binding's count is DATA frames.
      if (i % 10 === 0) rig.t.inject({ type: FrameType.GRANT, subGrants: [] });
    }
    deepEqual(acks(rig.t), [32, 64, 96]);
    equal(ACK_EVERY_FRAMES, 32);
  });

  it('at least once a second while frames arrive, and none while nothing arrives', async () => {
    const rig = new ScriptedRig({ pingIntervalMs: 60000, silenceTimeoutMs: 0 });
    await rig.open();
    await rig.advance(1000);
    deepEqual(acks(rig.t), [1], 'the WELCOME is acknowledged within the second');
    for (let s = 1; s <= 5; s++) {
      rig.t.inject(dataFrame(s));
      await rig.advance(1000, 10);
    }
    // Every frame on the transport counts (§13.2), the WELCOME first among them.
    deepEqual(acks(rig.t), [1, 2, 3, 4, 5, 6], 'within the second after each');
    await rig.advance(5000, 10);
    deepEqual(acks(rig.t), [1, 2, 3, 4, 5, 6], 'idle: nothing new to acknowledge');
    // A new transport counts from 0 again (§5.12: since the current transport was attached).
    rig.t.closed = true;
    rig.t.onClose!();
    await rig.advance(200);
    rig.t.inject(welcome());
    rig.t.inject(dataFrame(6));
    await rig.advance(1000, 10);
    deepEqual(acks(rig.t), [2], 'the WELCOME and one DATA on the new transport');
  });

  it('reaches the hub: the hub’s ack lag is exactly what the client has not yet acknowledged', async () => {
    const sim = new Sim();
    const imu = sim.fx.catalog.byName('imu')!.id;
    const c = sim.client({ name: 'scope', subscriptions: [{ channelId: imu, wishedRateHz: 50 }] });
    await sim.until(c.connect());
    const v = new Float64Array(6);
    await sim.run(3000, 5, (now) => sim.hub.publishSample(imu, now, v, 6));
    await sim.run(1100, 5);
    ok(c.counters.acksSent >= 3);
    // Every frame counts (§13.2), PONGs included, so a frame may have arrived since the last
    // timed ACK: the hub's lag must equal the client's own unacknowledged count, and stay small.
    const seen = c as unknown as { received: number; ackedSent: number };
    const lag = sim.hub.sessions()[0]!.ackLag;
    equal(lag, seen.received - seen.ackedSent, `client received ${seen.received}, acked ${seen.ackedSent}`);
    ok(lag <= 1, `lag ${lag}`);
    c.close();
  });
});

describe('client core: reconnect and resume (§6.6)', () => {
  it('after a transport loss: back-off with jitter, HELLO with the token, the same session, grants re-stated, data again', async () => {
    const sim = new Sim();
    const imu = sim.fx.catalog.byName('imu')!.id;
    const states: ClientState[] = [];
    const c = sim.client({ name: 'scope', subscriptions: [{ channelId: imu, wishedRateHz: 20 }], onState: (s) => states.push(s) });
    const w = await sim.until(c.connect());
    const token = w.resumeToken;
    const v = new Float64Array(6);
    const publish = (now: number): void => sim.hub.publishSample(imu, now, v, 6);
    await sim.run(500, 5, publish);
    const before = c.channelStats(imu)!.frames;
    ok(before > 0);
    sim.last.cut();
    await sim.run(1, 1);
    equal(c.state, 'stale');
    // The back-off is 100 ms with random() = 0.5: the retry comes after 75 ms, not before.
    const opened = sim.pairs.length;
    await sim.run(70, 1);
    equal(sim.pairs.length, opened);
    await sim.run(10, 1);
    equal(sim.pairs.length, opened + 1);
    await sim.run(20, 1, publish);
    equal(c.state, 'active');
    deepEqual(states, ['connecting', 'active', 'stale', 'active']);
    const [hello] = sim.last.sent(FrameType.HELLO);
    ok(hello && hello.type === FrameType.HELLO);
    deepEqual(hello.resumeToken, token);
    equal(hello.subWishes, undefined, 'a resume asks for nothing: the session kept its wishes');
    equal(c.sessionId, w.sessionId);
    equal(c.counters.resumes, 1);
    equal(sim.hub.counters.resumes, 1);
    ok(c.welcome && !sameToken(c.welcome.resumeToken, token), 'a fresh token');
    equal(c.grants.get(imu)?.grantedRateHz, 20);
    await sim.run(500, 5, publish);
    ok(c.channelStats(imu)!.frames > before + 5, 'data flows again');
    c.close();
  });

  it('a half-open transport (only the client notices) is replaced; the hub closes the old one', async () => {
    const sim = new Sim();
    const c = sim.client({ name: 'scope' });
    const w = await sim.until(c.connect());
    const old = sim.last;
    old.clientClosed = true; // the client's side is gone; the hub has not noticed
    old.client.onClose!();
    await sim.run(200, 1);
    equal(c.state, 'active');
    equal(c.sessionId, w.sessionId);
    ok(old.hubClosed || old.clientClosed);
    equal(sim.hub.sessions().length, 1);
    c.close();
  });

  it('silence: nothing heard for silenceTimeoutMs and the transport is taken as lost', async () => {
    const sim = new Sim();
    const c = sim.client({ name: 'scope', silenceTimeoutMs: 3000 });
    await sim.until(c.connect());
    const old = sim.last;
    // Frames from the hub stop arriving; no close is ever reported.
    old.client.onFrame = null;
    const origPump = old.pump.bind(old);
    old.pump = () => {
      old.toClient.length = 0;
      return origPump();
    };
    await sim.run(4200, 10);
    ok(sim.pairs.length >= 2, 'reconnected on a new transport');
    equal(c.state, 'active');
    equal(c.counters.resumes, 1);
    c.close();
  });

  it('UNKNOWN_SESSION after the session expired: a new session with the wishes as they are now', async () => {
    const sim = new Sim({ config: { staleTtlMs: 2000 } });
    const imu = sim.fx.catalog.byName('imu')!.id;
    const odom = sim.fx.catalog.byName('odom')!.id;
    const battery = sim.fx.catalog.byName('battery')!.id;
    const c = sim.client({ name: 'scope', subscriptions: [{ channelId: imu, wishedRateHz: 20 }] });
    const first = await sim.until(c.connect());
    await sim.until(c.subscribe([{ channelId: odom, wishedRateHz: 5 }]));
    await sim.until(c.unsubscribe([imu]));
    sim.reachable = false;
    sim.last.cut();
    await sim.run(3000, 10);
    equal(c.state, 'stale');
    // A subscribe while away is kept and asked for on return.
    const pending = c.subscribe([{ channelId: battery, wishedRateHz: 1 }]);
    sim.reachable = true;
    const ans = await sim.until(pending, 10000, 5);
    equal(c.state, 'active');
    ok(c.sessionId !== first.sessionId, 'a new session');
    equal(c.counters.newSessions, 2);
    const hellos = sim.last.sent(FrameType.HELLO);
    equal(hellos.length, 2, 'the resume was refused, then a fresh HELLO on the same transport');
    const fresh = hellos[1]!;
    ok(fresh.type === FrameType.HELLO && fresh.resumeToken === undefined);
    deepEqual(fresh.type === FrameType.HELLO ? fresh.subWishes?.map((x) => x.channelId).sort((x, y) => x - y) : [], [odom, battery]);
    deepEqual([...c.grants.keys()].sort((x, y) => x - y), [odom, battery]);
    deepEqual(ans.granted.map((g) => g.channelId), [battery]);
    c.close();
  });

  it('a request in flight when the transport drops is answered after the resume', async () => {
    const sim = new Sim({ latency: () => 30 });
    const odom = sim.fx.catalog.byName('odom')!.id;
    const c = sim.client({ name: 'scope' });
    await sim.until(c.connect());
    const p = c.subscribe([{ channelId: odom, wishedRateHz: 5 }]);
    await sim.run(5);
    sim.last.cut(); // the SUBSCRIBE was still on the wire
    const ans = await sim.until(p);
    deepEqual(ans.granted.map((g) => [g.channelId, g.grantedRateHz]), [[odom, 5]]);
    equal(c.counters.resumes, 1);
    c.close();
  });

  it('NOT_READY while active: the hub no longer ties the transport to the session; HELLO with the token at once, same transport', async () => {
    const rig = new ScriptedRig();
    const states: ClientState[] = [];
    rig.client.onState = (st) => states.push(st);
    const w = await rig.open();
    const t = rig.t;
    const intent = rig.client.intent(40);
    let intentError: HubClientError | null = null;
    intent.catch((e: HubClientError) => (intentError = e));
    t.inject({ type: FrameType.NACK, code: Nack.NOT_READY, frameType: FrameType.ACK });
    await settle();
    const hellos = t.frames(FrameType.HELLO);
    equal(hellos.length, 2, 'a second HELLO on the same transport');
    const resume = hellos[1]!;
    ok(resume.type === FrameType.HELLO && resume.resumeToken !== undefined);
    deepEqual(resume.type === FrameType.HELLO ? resume.resumeToken : undefined, w.resumeToken);
    equal(rig.client.state, 'stale');
    equal(intentError && (intentError as HubClientError).code, ClientErrorCode.LOST, 'what was asked meanwhile is lost');
    // NOT_READY answers to frames sent before the HELLO reached the hub change nothing more.
    t.inject({ type: FrameType.NACK, code: Nack.NOT_READY, frameType: FrameType.INTENT });
    await settle();
    equal(t.frames(FrameType.HELLO).length, 2);
    t.inject(welcome({ resumeToken: new Uint8Array(16).fill(0x22) }));
    await settle();
    equal(rig.client.state, 'active');
    equal(rig.client.counters.resumes, 1);
    equal(rig.transports.length, 1, 'no new transport');
    deepEqual(states, ['connecting', 'active', 'stale', 'active']);
  });

  it('a real Hub that dropped the transport’s session and took the peer back: the client resumes and data flows again', async () => {
    const sim = new Sim();
    const imu = sim.fx.catalog.byName('imu')!.id;
    const c = sim.client({ name: 'pendant', subscriptions: [{ channelId: imu, wishedRateHz: 20 }] });
    const w = await sim.until(c.connect());
    const v = new Float64Array(6);
    const publish = (now: number): void => sim.hub.publishSample(imu, now, v, 6);
    await sim.run(500, 5, publish);
    const before = c.channelStats(imu)!.frames;
    sim.last.readmit();
    equal(sim.hub.sessions()[0]!.state, SessionState.STALE);
    await sim.run(3000, 5, publish);
    equal(c.counters.resumes, 1, 'the client resumed');
    equal(c.state, 'active');
    equal(c.sessionId, w.sessionId, 'the same session');
    equal(sim.pairs.length, 1, 'on the same transport');
    equal(sim.hub.sessions()[0]!.state, SessionState.ACTIVE);
    ok(c.channelStats(imu)!.frames > before + 30, `data flows again (${c.channelStats(imu)!.frames - before} more)`);
    ok((sim.hub.counters.nacks[Nack.NOT_READY] ?? 0) <= 2, 'a NACK or two before the resume, not one a second forever');
    c.close();
  });

  it('GOODBYE SHUTDOWN: the client comes back as a new session; other reasons close it', async () => {
    const rig = new ScriptedRig();
    await rig.open();
    rig.t.inject({ type: FrameType.GOODBYE, reason: GoodbyeReason.SHUTDOWN });
    await rig.advance(200);
    equal(rig.transports.length, 2);
    const [hello] = rig.t.frames(FrameType.HELLO);
    ok(hello && hello.type === FrameType.HELLO && hello.resumeToken === undefined);
    rig.t.inject(welcome({ sessionId: 8 }));
    equal(rig.client.state, 'active');
    equal(rig.client.sessionId, 8);
    rig.t.inject({ type: FrameType.GOODBYE, reason: GoodbyeReason.EVICTED });
    equal(rig.client.state, 'closed');
    await rig.advance(10000, 100);
    equal(rig.transports.length, 2, 'no reconnect after an eviction');
  });
});

describe('client core: ESTOP (§11)', () => {
  it('estop() latches the hub: origin is the session, sequence per client; every client hears it; the owner clears, then arms', async () => {
    const sim = new Sim();
    const a = sim.client({ name: 'a', credential: OPERATOR });
    const b = sim.client({ name: 'b' });
    const heardA: EstopFrame[] = [];
    const heardB: EstopFrame[] = [];
    a.onEstop = (e) => heardA.push(e);
    b.onEstop = (e) => heardB.push(e);
    await sim.until(a.connect());
    await sim.until(b.connect());
    await sim.until(a.takeControl());
    ok(b.estop());
    const pairB = sim.pairs[1]!;
    deepEqual(pairB.estopsFromClient[0], { kind: EstopKind.ASSERT, source: EstopSource.CLIENT, flags: 1, origin: b.sessionId, seq: 1 });
    await sim.run(5);
    ok(sim.hub.latch.latched);
    equal(sim.hub.latch.origin, b.sessionId);
    equal(heardA.length, 1);
    equal(heardA[0]!.kind, EstopKind.ASSERT);
    equal(heardB[0]!.origin, b.sessionId);
    ok(a.latched && b.latched);
    b.estop();
    equal(pairB.estopsFromClient[1]!.seq, 2, 'the next ESTOP has the next sequence');
    // A new assertion while latched is announced within ESTOP_REANNOUNCE_MS (§11.2); the clear
    // names the stop in force, so the owner waits to hear it.
    await sim.run(ESTOP_REANNOUNCE_MS + 20);
    equal(heardA[heardA.length - 1]!.seq, 2, 'the owner hears the newest assertion');
    // Only the owner may clear (§11.2).
    const e = await sim.rejects(b.clearEstop());
    equal(e.nack, Nack.FORBIDDEN);
    await sim.until(a.clearEstop());
    equal(sim.hub.latch.latched, false);
    equal(a.latched, false);
    await sim.run(5);
    equal(b.latched, false);
    equal(heardB[heardB.length - 1]!.kind, EstopKind.CLEARED);
    // A clear never restarts the robot (§11.2): disarmed until the owner's arm(); disarm() again.
    equal(sim.hub.armed, false);
    await sim.until(a.arm());
    equal(sim.hub.armed, true);
    await sim.until(a.disarm());
    equal(sim.hub.armed, false);
    a.close();
    b.close();
  });

  it('a client that joins or resumes while the hub is latched hears the stop in force through onEstop', async () => {
    const sim = new Sim();
    const a = sim.client({ name: 'a' });
    await sim.until(a.connect());
    ok(a.estop());
    await sim.run(5);
    ok(sim.hub.latch.latched);
    const heard: EstopFrame[] = [];
    const late = sim.client({ name: 'late', onEstop: (e) => heard.push(e) });
    await sim.until(late.connect());
    await sim.run(5);
    equal(heard.length, 1, 'the latch in force at join is reported');
    deepEqual([heard[0]!.kind, heard[0]!.origin, heard[0]!.seq], [EstopKind.ASSERT, a.sessionId, 1]);
    ok(late.latched);
    sim.last.cut();
    await sim.run(1, 1);
    equal(late.state, 'stale');
    await sim.run(200, 1);
    equal(late.state, 'active');
    equal(late.counters.resumes, 1);
    equal(heard.length, 2, 'and again on resume');
    equal(heard[1]!.kind, EstopKind.ASSERT);
    a.close();
    late.close();
  });

  it('an ESTOP pressed while the transport is down goes first on the next one', async () => {
    const rig = new ScriptedRig();
    await rig.open(welcome({ sessionId: 9 }));
    rig.t.closed = true;
    rig.t.onClose!();
    equal(rig.client.state, 'stale');
    equal(rig.client.estop(), false);
    await rig.advance(200);
    equal(rig.transports.length, 2);
    const first = rig.t.sent[0]!;
    ok(isEstopFrame(first, 0), 'the ESTOP frame before the HELLO');
    deepEqual(decodeEstop(first, 0, 12), { kind: 1, source: 0, flags: 1, origin: 9, seq: 1 });
    equal(decodeFrame(rig.t.sent[1]!, 0, rig.t.sent[1]!.length).type, FrameType.HELLO);
    rig.client.close();
  });

  it('an ESTOP pressed before connect() is kept and goes first, ahead of the HELLO', async () => {
    const rig = new ScriptedRig();
    equal(rig.client.state, 'closed');
    equal(rig.client.estop(), false, 'nothing open yet');
    await rig.open(welcome({ sessionId: 4 }));
    const first = rig.t.sent[0]!;
    ok(isEstopFrame(first, 0), 'the ESTOP frame before the HELLO');
    deepEqual(decodeEstop(first, 0, 12), { kind: 1, source: 0, flags: 1, origin: 0, seq: 1 });
    equal(decodeFrame(rig.t.sent[1]!, 0, rig.t.sent[1]!.length).type, FrameType.HELLO);
    equal(rig.t.sent.filter((b) => isEstopFrame(b, 0)).length, 1, 'sent once');
    rig.client.close();
  });

  it('the ESTOP frame of session 7 matches the vector', async () => {
    const rig = new ScriptedRig();
    await rig.open(welcome({ sessionId: 7 }));
    rig.client.estop();
    const v = ESTOP_VECTORS.valid.find((x) => x.name === 'ASSERT from a client session')!;
    equal(bytesToHex(rig.t.sent[rig.t.sent.length - 1]!), v.hex);
  });
});

describe('client core: control ownership and keepalive (§6.8, §11.2)', () => {
  it('pings every 200 ms while owning control, every second otherwise; the deadman never fires', async () => {
    const sim = new Sim();
    const c = sim.client({ name: 'console', credential: OPERATOR });
    await sim.until(c.connect());
    const pings = (): number => sim.last.sent(FrameType.PING).length;
    let p0 = pings();
    await sim.run(5000, 5);
    const idle = pings() - p0;
    ok(idle >= 4 && idle <= 6, `about one PING a second: ${idle}`);
    equal(PING_INTERVAL_MS, 1000);
    await sim.until(c.takeControl());
    ok(c.ownsControl);
    p0 = pings();
    await sim.run(5000, 5);
    const owning = pings() - p0;
    ok(owning >= 24 && owning <= 26, `a PING every 200 ms: ${owning}`);
    equal(OWNER_PING_INTERVAL_MS, 200);
    equal(sim.hub.latch.latched, false);
    ok(c.rttMs >= 0);
    await sim.until(c.releaseControl());
    equal(c.ownsControl, false);
    equal(sim.hub.controlOwner, 0);
    c.close();
  });

  it('without its pings an owner trips the deadman (the test can fail)', async () => {
    const sim = new Sim();
    const c = sim.client({ name: 'console', credential: OPERATOR, ownerPingIntervalMs: 1000 });
    await sim.until(c.connect());
    await sim.until(c.takeControl());
    await sim.run(2000, 5);
    ok(sim.hub.latch.latched, 'a 1 s PING is too slow for the 500 ms deadman');
    c.close();
  });

  it('learns ownership from WELCOME and from the control-owner channel', async () => {
    const sim = new Sim();
    const ownerCh = sim.fx.catalog.byName('control-owner')!.id;
    const a = sim.client({ name: 'a', credential: OPERATOR });
    const b = sim.client({ name: 'b', catalog: sim.fx.catalog, subscriptions: [{ channelId: ownerCh, wishedRateHz: 2 }] });
    await sim.until(a.connect());
    await sim.until(b.connect());
    equal(b.owner, 0);
    await sim.until(a.takeControl());
    await sim.run(20);
    equal(b.owner, a.sessionId);
    const c = sim.client({ name: 'c' });
    const w = await sim.until(c.connect());
    equal(w.owner, a.sessionId);
    equal(c.owner, a.sessionId);
    a.close();
    b.close();
    c.close();
  });
});

describe('client core: catalog (§5.17, §9.2)', () => {
  it('fetches the catalog in chunks, checks the hash, and indexes it', async () => {
    const sim = new Sim();
    const c = sim.client({ name: 'scope' });
    await sim.until(c.connect());
    const cat = await sim.until(c.fetchCatalog());
    equal(cat.hashHex, sim.fx.catalog.hashHex);
    ok(sim.fx.catalog.canonicalJson.length > 3072, 'the default catalog needs more than one chunk');
    ok(sim.last.sent(FrameType.CATALOG).length >= 2);
    equal(cat.byName('imu')!.id, sim.fx.catalog.byName('imu')!.id);
    equal(c.catalog, cat);
    c.close();
  });

  it('refuses a catalog whose text does not match its hash', async () => {
    const rig = new ScriptedRig();
    await rig.open(welcome({ catalogHash: new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]) }));
    const p = rig.client.fetchCatalog();
    let err: unknown;
    p.catch((e: unknown) => (err = e));
    await settle();
    rig.t.inject({ type: FrameType.CATALOG, catalogHash: new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]), text: '{"version":1}' });
    await settle();
    ok(err instanceof HubClientError && err.code === ClientErrorCode.CATALOG);
  });
});

describe('client core: what the hub sends (§8)', () => {
  it('decodes every hub→client vector of frames.json; client→hub ones are reported, never thrown', async () => {
    let checked = 0;
    for (const v of VECTORS) {
      const rig = new ScriptedRig();
      const seen: Frame[] = [];
      rig.client.onFrame = (f) => seen.push(f);
      rig.client.connect().catch(() => undefined);
      await settle();
      rig.t.injectBytes(hexToBytes(v.hex));
      const f = fromJson(v.frame) as Frame;
      if ((FRAME_DIRECTION[f.type]! & FROM_HUB) !== 0) {
        deepEqual(seen, [f], v.name);
        checked++;
      } else {
        equal(seen.length, 0, v.name);
        equal(rig.client.counters.badFrames, 1, v.name);
      }
      rig.client.close();
    }
    ok(checked >= 25, `${checked} hub→client vectors`);
  });

  it('surfaces every valid ESTOP vector through onEstop and reports the invalid ones', async () => {
    const rig = new ScriptedRig();
    await rig.open();
    const seen: EstopFrame[] = [];
    rig.client.onEstop = (e) => seen.push(e);
    for (const v of ESTOP_VECTORS.valid) rig.t.injectBytes(hexToBytes(v.hex));
    deepEqual(seen, ESTOP_VECTORS.valid.map((v) => v.frame));
    const before = rig.client.counters.badFrames;
    for (const v of ESTOP_VECTORS.invalid) rig.t.injectBytes(hexToBytes(v.hex));
    equal(rig.client.counters.badFrames - before, ESTOP_VECTORS.invalid.length);
    equal(seen.length, ESTOP_VECTORS.valid.length);
  });

  it('never throws on what the hub sends: invalid vectors and random bytes are counted and reported', async () => {
    const rig = new ScriptedRig();
    await rig.open();
    // A hub frame may be up to 4608 bytes (§7): the 1025-byte frame is only too large from a client.
    const invalid = INVALID_VECTORS.filter((v) => v.hex.length / 2 <= 1024);
    ok(invalid.length >= INVALID_VECTORS.length - 1);
    for (const v of invalid) rig.t.injectBytes(hexToBytes(v.hex));
    equal(rig.client.counters.badFrames, invalid.length);
    equal(rig.errors.filter((e) => e.code === ClientErrorCode.BAD_FRAME).length, invalid.length);
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 0, maxLength: 64 }), (bytes) => {
        rig.t.injectBytes(bytes);
        return true;
      }),
      { numRuns: runs(2000, 300), seed: 7 },
    );
    equal(rig.client.state, 'active', 'garbage is not a reason to drop the session');
  });

  it('a throwing handler is reported, and the client carries on', async () => {
    const rig = new ScriptedRig();
    await rig.open();
    rig.client.onData = () => {
      throw new Error('boom');
    };
    rig.t.inject(dataFrame(1));
    rig.t.inject(dataFrame(2));
    equal(rig.errors.filter((e) => e.code === ClientErrorCode.HANDLER).length, 2);
    equal(rig.client.channelStats(10)!.frames, 2);
  });
});

describe('client transport: the TCP length prefix (§2)', () => {
  function frames(n: number): Uint8Array[] {
    const out: Uint8Array[] = [];
    for (let i = 0; i < n; i++) {
      const f = new Uint8Array(1 + ((i * 37) % 300));
      for (let k = 0; k < f.length; k++) f[k] = (i + k) & 0xff;
      out.push(f);
    }
    return out;
  }
  function concat(list: Uint8Array[]): Uint8Array {
    let n = 0;
    for (const b of list) n += b.length;
    const out = new Uint8Array(n);
    let p = 0;
    for (const b of list) {
      out.set(b, p);
      p += b.length;
    }
    return out;
  }

  it('reassembles frames fed one byte at a time and split anywhere', () => {
    const input = frames(40);
    const stream = concat(input.map(lengthPrefixed));
    const byByte: string[] = [];
    const r = new LengthPrefixReassembler((b) => byByte.push(bytesToHex(b)), () => fail('no error expected'));
    for (let i = 0; i < stream.length; i++) r.push(stream.subarray(i, i + 1));
    deepEqual(byByte, input.map(bytesToHex));
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: stream.length - 1 }), { maxLength: 30 }), (cuts) => {
        const got: string[] = [];
        const rr = new LengthPrefixReassembler((b) => got.push(bytesToHex(b)), () => fail('no error expected'));
        const at = Array.from(new Set(cuts)).sort((x, y) => x - y);
        let prev = 0;
        for (const c of [...at, stream.length]) {
          rr.push(stream.subarray(prev, c));
          prev = c;
        }
        deepEqual(got, input.map(bytesToHex));
      }),
      { numRuns: runs(300, 40), seed: 3 },
    );
  });

  it('a zero length or one beyond what a hub sends breaks the stream for good', () => {
    const errors: string[] = [];
    const r = new LengthPrefixReassembler(() => fail('no frame'), (code) => errors.push(code));
    r.push(new Uint8Array([0, 0, 1, 2]));
    deepEqual(errors, [ReassemblyError.EMPTY]);
    ok(r.broken);
    r.push(new Uint8Array([0, 1, 9]));
    deepEqual(errors, [ReassemblyError.EMPTY]);
    const r2 = new LengthPrefixReassembler(() => fail('no frame'), (code, len) => errors.push(`${code}:${len}`));
    r2.push(new Uint8Array([0xff, 0xff]));
    equal(errors[1], `${ReassemblyError.TOO_LARGE}:65535`);
  });
});

function sameToken(a: Uint8Array, b: Uint8Array): boolean {
  return bytesToHex(a) === bytesToHex(b);
}
