// The client library's transports over real loopback sockets against the hub's own host
// listeners (bindings/tcp/node.ts): Node TCP and WebSocket (client/node.ts), the browser
// WebSocket transport driven by the `ws` package's WebSocket, and the Web Bluetooth transport
// against the hub's real BleLink behind an in-process GATT stand-in (client/browser.ts).
// Real clock; every wait is bounded; everything is closed in after hooks.
import assert from 'node:assert/strict';
import type net from 'node:net';
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';
import { DEFAULT_CATALOG } from '../../catalog/default.js';
import { loadCatalog } from '../../catalog/index.js';
import { BLE_UUIDS } from '../../bindings/ble/uuids.js';
import { BleLink, type BleTransport } from '../../bindings/ble/link.js';
import { FragmentPosition } from '../../bindings/ble/fragment.js';
import { TcpListener, WsListener } from '../../bindings/tcp/node.js';
import { saveCredentials } from '../../hub/credentials.js';
import { decodeEstop, EstopKind, ESTOP_MAGIC } from '../../hub/estop-frame.js';
import { Hub } from '../../hub/hub.js';
import { Nack } from '../../hub/nack.js';
import type { ClientState, HubClient } from '../../client/core.js';
import {
  createBluetoothClient,
  createWebSocketClient,
  requestHubDevice,
  type BluetoothDeviceLike,
  type GattCharacteristicLike,
  type GattServerLike,
  type GattServiceLike,
  type WebSocketConstructor,
} from '../../client/browser.js';
import { connectTcp, connectWs, createTcpClient } from '../../client/node.js';
import { MemoryStore, RecordingRobot, SeededRandom } from '../lib/hub-fixture.js';

const OPERATOR = new Uint8Array([0x0b, 0x0e, 0x0a, 0x70]);

/** Resolves with p, or fails after `ms`. */
function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

/** Polls `cond` every 5 ms; fails after `ms`. */
async function waitFor(cond: () => boolean, ms: number, what: string): Promise<void> {
  const end = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > end) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------
// A GATT stand-in for the Web Bluetooth transport: the hub side is the real BleLink; writes and
// notifications cross on the next turn of the event loop, one at a time, as a stack would.

class FakeCharacteristic implements GattCharacteristicLike {
  value: DataView | null = null;
  private readonly listeners: ((ev: unknown) => void)[] = [];
  constructor(
    private readonly onWrite: ((v: Uint8Array) => void) | null,
    private readonly onSubscribe: (() => void) | null,
  ) {}
  async writeValueWithoutResponse(v: Uint8Array<ArrayBuffer>): Promise<void> {
    await new Promise((r) => setImmediate(r));
    if (!this.onWrite) throw new Error('not writable');
    this.onWrite(v.slice());
  }
  writeValueWithResponse(v: Uint8Array<ArrayBuffer>): Promise<void> {
    return this.writeValueWithoutResponse(v);
  }
  async startNotifications(): Promise<unknown> {
    if (this.onSubscribe) this.onSubscribe();
    return this;
  }
  addEventListener(_type: 'characteristicvaluechanged', l: (ev: unknown) => void): void {
    this.listeners.push(l);
  }
  notify(value: Uint8Array): void {
    this.value = new DataView(value.buffer, value.byteOffset, value.byteLength);
    for (const l of this.listeners) l({ target: this });
  }
}

class FakeConnection implements BleTransport {
  readonly link: BleLink;
  readonly writes: Uint8Array[] = [];
  readonly write: FakeCharacteristic;
  readonly notifyChar: FakeCharacteristic;
  open = true;

  constructor(hub: Hub, clock: { now(): number }, private readonly device: FakeDevice, private readonly mtu: number) {
    // A paired central (docs/security.md "BLE"): the operator's credential gives its tier.
    this.link = new BleLink(this, clock, { tierCeiling: 2 });
    this.link.connect(hub.attach(this.link));
    this.write = new FakeCharacteristic((v) => {
      this.writes.push(v);
      if (this.open) this.link.written(v, 0, v.length);
    }, null);
    this.notifyChar = new FakeCharacteristic(null, () => this.link.subscribed(true));
  }
  maximumWrite(): number {
    return this.mtu - 3;
  }
  notify(value: Uint8Array, length: number): void {
    const copy = value.slice(0, length);
    setImmediate(() => {
      if (!this.open) return;
      this.notifyChar.notify(copy);
      this.link.notified(0);
    });
  }
  /** The hub closed the connection (park, teardown). */
  close(): void {
    this.drop(false);
  }
  /** The connection is gone; `tellHub`: the hub's stack reports it (supervision timeout). */
  drop(tellHub: boolean): void {
    if (!this.open) return;
    this.open = false;
    if (tellHub) this.link.disconnected();
    this.device.server.current = null;
    setImmediate(() => this.device.fireDisconnected());
  }
}

class FakeServer implements GattServerLike {
  current: FakeConnection | null = null;
  connects = 0;
  constructor(private readonly device: FakeDevice) {}
  get connected(): boolean {
    return this.current !== null;
  }
  async connect(): Promise<GattServerLike> {
    this.connects++;
    this.current = new FakeConnection(this.device.hub, this.device.clock, this.device, this.device.attMtu);
    this.device.connections.push(this.current);
    return this;
  }
  disconnect(): void {
    if (this.current) this.current.drop(true);
  }
  async getPrimaryService(uuid: string): Promise<GattServiceLike> {
    assert.equal(uuid, BLE_UUIDS.service);
    const conn = this.current;
    if (!conn) throw new Error('not connected');
    return {
      getCharacteristic: async (u: string): Promise<GattCharacteristicLike> => {
        if (u === BLE_UUIDS.write) return conn.write;
        if (u === BLE_UUIDS.notify) return conn.notifyChar;
        throw new Error(`no characteristic ${u}`);
      },
    };
  }
}

class FakeDevice implements BluetoothDeviceLike {
  readonly name = 'hub-a1';
  readonly server: FakeServer;
  readonly connections: FakeConnection[] = [];
  private readonly listeners: ((ev: unknown) => void)[] = [];
  constructor(
    readonly hub: Hub,
    readonly clock: { now(): number },
    readonly attMtu: number,
  ) {
    this.server = new FakeServer(this);
  }
  get gatt(): GattServerLike {
    return this.server;
  }
  addEventListener(_type: 'gattserverdisconnected', l: (ev: unknown) => void): void {
    this.listeners.push(l);
  }
  fireDisconnected(): void {
    for (const l of this.listeners) l({});
  }
  get last(): FakeConnection {
    const c = this.connections[this.connections.length - 1];
    assert.ok(c, 'no connection');
    return c;
  }
}

// ---------------------------------------------------------------------------------------------

describe('client over real loopback (Node)', function () {
  this.timeout(30000);
  // Whole milliseconds: the hub writes its clock into PONG key 32, a uint (hub.ts answers PING
  // with `t1: now`, which a fractional clock turns into an internal error and NACK MALFORMED).
  const clock = { now: () => Math.floor(performance.now()) };
  const catalog = loadCatalog(DEFAULT_CATALOG);
  const imu = catalog.byName('imu')!.id;
  const cmdVel = catalog.byName('cmd_vel')!.id;
  const odom = catalog.byName('odom')!.id;
  let hub: Hub;
  let robot: RecordingRobot;
  let tcp: TcpListener;
  let wsl: WsListener;
  let devices: FakeDevice[] = [];
  const timers: ReturnType<typeof setInterval>[] = [];
  const clients: HubClient[] = [];

  before(async () => {
    const store = new MemoryStore();
    saveCredentials(store, [{ tier: 1, credential: OPERATOR }]);
    robot = new RecordingRobot();
    hub = new Hub({ clock, random: new SeededRandom(5), store, robot, catalog });
    tcp = await TcpListener.listen({ hub, clock });
    wsl = await WsListener.listen({ hub, clock });
    const v = new Float64Array([0.1, 0.2, 9.8, 0, 0, 0.01]);
    timers.push(
      setInterval(() => {
        hub.tick();
        for (const d of devices) for (const c of d.connections) if (c.open) c.link.tick();
      }, 10),
      setInterval(() => hub.publishSample(imu, Math.floor(clock.now()), v, 6), 5),
      setInterval(() => hub.publishSample(odom, Math.floor(clock.now()), v, 5), 20),
    );
  });

  afterEach(async () => {
    for (const c of clients.splice(0)) c.close();
    devices = [];
    // A latch left by one case would refuse the next one's motion commands.
    await sleep(50);
  });

  after(async () => {
    for (const t of timers) clearInterval(t);
    await Promise.all([tcp.close(), wsl.close()]);
  });

  function track<T extends HubClient>(c: T): T {
    clients.push(c);
    return c;
  }

  function serverSockets<T>(listener: TcpListener | WsListener): Set<T> {
    // The listeners keep their sockets private; the test reaches in only to drop one from the server side.
    const s = (listener as unknown as { sockets?: Set<T> }).sockets;
    assert.ok(s instanceof Set, 'the listener keeps its sockets in `sockets`');
    return s;
  }

  it('TCP: session, grants, data, control, publishing within the grant, ESTOP and its clear', async () => {
    const c = track(
      await within(
        connectTcp('127.0.0.1', tcp.port, {
          name: 'console',
          credential: OPERATOR,
          subscriptions: [{ channelId: imu, wishedRateHz: 50 }],
          publications: [{ channelId: cmdVel, wishedRateHz: 50 }],
        }),
        3000,
        'connect',
      ),
    );
    assert.equal(c.state, 'active');
    assert.equal(c.tier, 1);
    assert.equal(c.grants.get(imu)?.grantedRateHz, 50);
    assert.equal(c.pubGrants.get(cmdVel)?.grantedRateHz, 50);
    await waitFor(() => (c.channelStats(imu)?.frames ?? 0) >= 20, 3000, 'imu data');
    const echo = await within(c.takeControl(), 3000, 'take_control');
    assert.equal(echo.result, 0);
    assert.ok(c.ownsControl);
    assert.equal(hub.controlOwner, c.sessionId);
    // 1.5 s of asking for 100 Hz: the client's meter sends at most the grant, and the hub never refuses.
    const before = robot.published.filter((p) => p.channelId === cmdVel).reduce((n, p) => n + p.samples.length, 0);
    const t0 = performance.now();
    while (performance.now() - t0 < 1500) {
      c.send(cmdVel, [[Math.floor(c.now()), 0.3, 0.05]]);
      await sleep(10);
    }
    await sleep(300);
    const pub = c.publication(cmdVel)!;
    assert.equal(pub.rateLimited, 0);
    assert.equal(pub.nacked, 0);
    assert.ok(pub.sent > 40, `sent ${pub.sent}`);
    const after = robot.published.filter((p) => p.channelId === cmdVel).reduce((n, p) => n + p.samples.length, 0);
    assert.equal(after - before, pub.sent, 'the robot got every sample sent');
    assert.equal(hub.latch.latched, false, 'the deadman was fed');
    // ESTOP: written, latched, announced back.
    assert.ok(c.estop());
    await waitFor(() => hub.latch.latched && c.latched, 2000, 'latch');
    assert.equal(c.lastEstop?.kind, EstopKind.ASSERT);
    assert.equal(hub.latch.origin, c.sessionId);
    await within(c.clearEstop(), 3000, 'clear');
    assert.equal(hub.latch.latched, false);
    await within(c.releaseControl(), 3000, 'release');
    assert.ok(c.counters.acksSent >= 1);
  });

  it('TCP: the server drops the socket; the client resumes the same session on a new one', async () => {
    const states: ClientState[] = [];
    const c = track(createTcpClient('127.0.0.1', tcp.port, { name: 'scope', subscriptions: [{ channelId: imu, wishedRateHz: 20 }], onState: (s) => states.push(s) }));
    const w = await within(c.connect(), 3000, 'connect');
    await waitFor(() => (c.channelStats(imu)?.frames ?? 0) >= 5, 3000, 'data');
    const resumesBefore = hub.counters.resumes;
    const sockets = serverSockets<net.Socket>(tcp);
    assert.equal(sockets.size, 1);
    for (const s of sockets) s.destroy();
    await waitFor(() => states.includes('stale'), 2000, 'stale');
    await waitFor(() => c.state === 'active' && c.counters.resumes === 1, 5000, 'resume');
    assert.equal(c.sessionId, w.sessionId);
    assert.equal(hub.counters.resumes, resumesBefore + 1);
    assert.deepEqual(states, ['connecting', 'active', 'stale', 'active']);
    assert.equal(c.grants.get(imu)?.grantedRateHz, 20, 'grants re-stated');
    const frames = c.channelStats(imu)!.frames;
    await waitFor(() => c.channelStats(imu)!.frames >= frames + 5, 3000, 'data after the resume');
  });

  it('WebSocket (ws): session, data, intents; the server drops it and the session resumes', async () => {
    const url = `ws://127.0.0.1:${wsl.port}`;
    const c = track(await within(connectWs(url, { name: 'scope', credential: OPERATOR, subscriptions: [{ channelId: imu, wishedRateHz: 25 }] }), 3000, 'connect'));
    await waitFor(() => (c.channelStats(imu)?.frames ?? 0) >= 10, 3000, 'imu data');
    const sub = await within(c.subscribe([{ channelId: odom, wishedRateHz: 10 }, { channelId: cmdVel, wishedRateHz: 10 }]), 3000, 'subscribe');
    assert.deepEqual(sub.granted.map((g) => [g.channelId, g.grantedRateHz]), [[odom, 10]]);
    assert.deepEqual(sub.refused, [{ channelId: cmdVel, code: Nack.UNKNOWN_CHANNEL }]);
    await assert.rejects(within(c.intent(catalog.byName('arm')!.id), 3000, 'arm'), (e: { nack?: number }) => e.nack === Nack.NOT_OWNER);
    const id = c.sessionId;
    const sockets = serverSockets<WebSocket>(wsl);
    assert.equal(sockets.size, 1);
    for (const s of sockets) s.terminate();
    await waitFor(() => c.counters.resumes === 1 && c.state === 'active', 5000, 'resume');
    assert.equal(c.sessionId, id);
    const frames = c.channelStats(odom)?.frames ?? 0;
    await waitFor(() => (c.channelStats(odom)?.frames ?? 0) >= frames + 3, 3000, 'odom after the resume');
  });

  it('browser WebSocket transport (driven by the ws package): session, data, ESTOP', async () => {
    const c = track(
      createWebSocketClient(`ws://127.0.0.1:${wsl.port}`, { name: 'page', subscriptions: [{ channelId: imu, wishedRateHz: 10 }] }, WebSocket as unknown as WebSocketConstructor),
    );
    await within(c.connect(), 3000, 'connect');
    await waitFor(() => (c.channelStats(imu)?.frames ?? 0) >= 5, 3000, 'data');
    c.estop();
    await waitFor(() => c.latched && hub.latch.latched, 2000, 'latch');
    // An observer cannot clear (§11.2); the refusal comes back as the NACK.
    await assert.rejects(within(c.clearEstop(), 3000, 'clear'), (e: { nack?: number }) => e.nack === Nack.FORBIDDEN);
    // Clean up the latch for the cases after this one: the hub's own path, as an operator would.
    const op = track(await within(connectTcp('127.0.0.1', tcp.port, { name: 'op', credential: OPERATOR }), 3000, 'op'));
    await within(op.takeControl(), 3000, 'take');
    await within(op.clearEstop(), 3000, 'clear by the owner');
    await within(op.releaseControl(), 3000, 'release');
    await waitFor(() => !c.latched, 2000, 'the page hears the clear');
  });

  it('Web Bluetooth transport against the hub’s BLE link: fragments both ways, ESTOP ahead, resume after a drop', async () => {
    const device = new FakeDevice(hub, clock, 23);
    devices.push(device);
    const chosen = await requestHubDevice({
      requestDevice: async (o) => {
        assert.deepEqual(o.filters, [{ services: [BLE_UUIDS.service] }]);
        return device;
      },
    });
    const c = track(createBluetoothClient(chosen, { name: 'phone', credential: OPERATOR, subscriptions: [{ channelId: imu, wishedRateHz: 10 }] }));
    const w = await within(c.connect(), 5000, 'connect');
    assert.equal(w.hubId, 'robot-hub', 'a WELCOME of many fragments reassembled');
    const conn = device.last;
    assert.ok(conn.writes.length > 1, 'HELLO went in several 20-byte writes');
    for (const wr of conn.writes) assert.ok(wr.length <= 20);
    assert.equal((conn.writes[0]![0]! >>> 6) & 3, FragmentPosition.FIRST);
    await waitFor(() => (c.channelStats(imu)?.frames ?? 0) >= 5, 5000, 'data');
    // A SUBSCRIBE of many fragments, then ESTOP at once: it goes right after the fragment in flight.
    const wishes = [odom, 12, 13, 14, 15, 20, 21].map((channelId) => ({ channelId, wishedRateHz: 1 }));
    const n0 = conn.writes.length;
    const sub = c.subscribe(wishes);
    c.estop();
    const ans = await within(sub, 5000, 'subscribe');
    assert.equal(ans.granted.length, wishes.length, 'the SUBSCRIBE reassembled around the ESTOP');
    const after = conn.writes.slice(n0);
    const at = after.findIndex((x) => x[0] === ESTOP_MAGIC);
    assert.equal(at, 1, 'the ESTOP is the second write: right after the first fragment, ahead of the rest');
    assert.equal(decodeEstop(after[at]!, 0, after[at]!.length).origin, c.sessionId);
    await waitFor(() => hub.latch.latched && c.latched, 3000, 'latch');
    await within(c.takeControl(), 3000, 'take');
    await within(c.clearEstop(), 3000, 'clear');
    await within(c.releaseControl(), 3000, 'release');
    // The hub's side reports the connection gone; the client reconnects through the same device.
    const id = c.sessionId;
    conn.drop(true);
    await waitFor(() => c.counters.resumes === 1 && c.state === 'active', 5000, 'resume');
    assert.equal(c.sessionId, id);
    assert.equal(device.server.connects, 2);
    const frames = c.channelStats(imu)!.frames;
    await waitFor(() => c.channelStats(imu)!.frames >= frames + 3, 5000, 'data after the resume');
  });
});
