// uplink/moddable.ts: the device's MQTT adapter, its own logic, on Node and XS. The SDK's ECMA-419
// MQTT client is played by ScriptedClient, which keeps that client's contract as read in its
// source (docs/fleet.md "On the device"): callbacks called with the client as `this`, a name
// resolved through the `dns.io` class it is given, CONNACK as onControl then onWritable with the
// room, `write` returning the room left and throwing when the packet needs more, a PUBLISH
// handed over in pieces (`onReadable(count, { topic, more })`) that must be read whole, errors
// as onError. The adapter over the real client runs in `npm run check-moddable` (its `uplink`
// step: the lin firmware against a broker).
import { FLEET_STOP_MAX_BYTES } from '../../hub/fleet-stop.js';
import { MqttOperation, ModdableMqtt, type MqttClientLike, type MqttClientOptions, type ModdableMqttPorts, type ResolveRequest } from '../../uplink/moddable.js';
import { readUplinkConfig } from '../../uplink/config.js';
import { STATUS_OFFLINE } from '../../uplink/messages.js';
import { Uplink, UplinkState, type MqttListener, type MqttOpen } from '../../uplink/uplink.js';
import { deepEqual, equal, ok, throws } from '../lib/assert.js';
import { makeHub, SeededRandom } from '../lib/hub-fixture.js';

/** The client's margin: `write` and onWritable report the socket's room less this. */
const OVERHEAD = 8;

interface Written {
  readonly operation: number;
  readonly topic?: string;
  readonly retain?: boolean;
  readonly payload?: number[];
  readonly items?: readonly { topic: string; QoS?: number }[];
}

class ScriptedClient implements MqttClientLike {
  static made: ScriptedClient[] = [];
  readonly options: MqttClientOptions;
  readonly written: Written[] = [];
  closed = 0;
  /** The socket's room as the client sees it. */
  socketRoom = 0;
  resolved: string | null = null;
  resolveFailed = false;
  private inbox: number[] = [];

  constructor(options: MqttClientOptions) {
    this.options = options;
    ScriptedClient.made.push(this);
    const dns = new options.dns.io(options.dns);
    const request: ResolveRequest = {
      host: options.host,
      onResolved: (_host, address) => {
        this.resolved = address;
      },
      onError: () => {
        this.resolveFailed = true;
        options.onError.call(this);
      },
    };
    dns.resolve(request);
  }

  /** The broker's CONNACK, then the socket's room reported as the client does after it. */
  connack(room = 1460): void {
    this.socketRoom = room;
    this.options.onControl.call(this, { operation: MqttOperation.CONNACK, returnCode: 0 });
    this.options.onWritable.call(this, room - OVERHEAD);
  }

  drained(room: number): void {
    this.socketRoom = room;
    this.options.onWritable.call(this, room - OVERHEAD);
  }

  /** A PUBLISH from the broker, its payload handed over in `pieces` as the socket has them. */
  deliver(topic: string, payload: Uint8Array, pieces: number[]): void {
    let at = 0;
    pieces.forEach((n, i) => {
      for (let k = 0; k < n; k++) this.inbox.push(payload[at + k] as number);
      const info: { more: boolean; topic?: string; byteLength?: number; QoS?: number } = { more: i < pieces.length - 1 };
      if (i === 0) {
        info.topic = topic;
        info.byteLength = payload.length;
        info.QoS = 0;
      }
      at += n;
      this.options.onReadable.call(this, n, info);
      if (this.inbox.length !== 0) throw new Error('the adapter left bytes unread: the client would stall');
    });
  }

  error(): void {
    this.options.onError.call(this);
  }

  write(data: ArrayBuffer | Uint8Array | null, options: { operation?: number; topic?: string; QoS?: number; retain?: boolean; items?: readonly { topic: string; QoS?: number }[] }): number {
    const operation = options.operation ?? MqttOperation.PUBLISH;
    let length = 2;
    if (operation === MqttOperation.PUBLISH) length = 5 + (options.topic ?? '').length + (data ? data.byteLength : 0);
    else if (operation === MqttOperation.SUBSCRIBE) length = 7 + (options.items ?? []).reduce((n, x) => n + x.topic.length, 0);
    if (operation === MqttOperation.PUBLISH && data === null) throw new TypeError('no data');
    if (length > this.socketRoom) throw new Error('overflow');
    this.socketRoom -= length;
    const bytes = data === null ? undefined : Array.from(data instanceof Uint8Array ? data : new Uint8Array(data));
    this.written.push({ operation, ...(options.topic !== undefined ? { topic: options.topic, retain: options.retain === true } : {}), ...(bytes ? { payload: bytes } : {}), ...(options.items ? { items: options.items } : {}) });
    return this.socketRoom > OVERHEAD ? this.socketRoom - OVERHEAD : 0;
  }

  read(count?: number): ArrayBuffer | undefined {
    const n = count ?? this.inbox.length;
    if (n === 0) return undefined;
    return Uint8Array.from(this.inbox.splice(0, n)).buffer as ArrayBuffer;
  }

  close(): void {
    this.closed++;
  }
}

class Heard implements MqttListener {
  readonly events: string[] = [];
  readonly messages: { topic: string; text: string }[] = [];
  connected(): void {
    this.events.push('connected');
  }
  closed(): void {
    this.events.push('closed');
  }
  message(topic: string, payload: Uint8Array): void {
    this.messages.push({ topic, text: String.fromCharCode(...payload) });
  }
  writable(): void {
    this.events.push('writable');
  }
}

interface Rig {
  mqtt: ModdableMqtt;
  heard: Heard;
  later: (() => void)[];
  lookups: { host: string; done: (address: string | undefined) => void }[];
  client(): ScriptedClient;
  runLater(): void;
}

function rig(host = '192.168.4.2'): Rig {
  ScriptedClient.made = [];
  const later: (() => void)[] = [];
  const lookups: { host: string; done: (address: string | undefined) => void }[] = [];
  const ports: ModdableMqttPorts = {
    Client: ScriptedClient,
    TCP: { name: 'the TCP socket class' },
    host,
    port: 1884,
    resolve: (h, done) => lookups.push({ host: h, done }),
    later: (f) => later.push(f),
  };
  const mqtt = new ModdableMqtt(ports);
  const heard = new Heard();
  mqtt.listener = heard;
  return {
    mqtt,
    heard,
    later,
    lookups,
    client: () => {
      const c = ScriptedClient.made[ScriptedClient.made.length - 1];
      ok(c, 'a client was made');
      return c;
    },
    runLater: () => {
      for (const f of later.splice(0)) f();
    },
  };
}

const OFFLINE = Uint8Array.from(STATUS_OFFLINE, (c) => c.charCodeAt(0));

function opening(over: Partial<MqttOpen> = {}): MqttOpen {
  return { clientId: 'hub-7', username: '', password: '', keepaliveS: 30, will: { topic: 'fleet/north/hub-7/status', payload: OFFLINE, retain: true }, ...over };
}

const bytes = (s: string): Uint8Array => Uint8Array.from(s, (c) => c.charCodeAt(0));

describe('device MQTT adapter (uplink/moddable.ts) over the ECMA-419 client’s contract', () => {
  it('opens the session as MqttOpen asks: clean, keepalive in ms, the will retained as a buffer, credentials only when given', () => {
    const r = rig();
    r.mqtt.open(opening());
    const o = r.client().options;
    equal(o.host, '192.168.4.2');
    equal(o.port, 1884);
    equal(o.id, 'hub-7');
    equal(o.clean, true);
    equal(o.keepalive, 30000);
    ok(!('user' in o) && !('password' in o), 'no empty credentials');
    ok(o.will.message instanceof ArrayBuffer, 'the will is a buffer (a typed array would be stringified by the client)');
    deepEqual(Array.from(new Uint8Array(o.will.message)), Array.from(OFFLINE));
    equal(o.will.retain, true);
    equal(o.will.QoS, 0);
    equal(o.will.topic, 'fleet/north/hub-7/status');
    equal(o.socket.io, (r.mqtt as unknown as { ports: ModdableMqttPorts }).ports.TCP);
    r.mqtt.open(opening({ username: 'hub', password: 'secret' }));
    equal(r.client().options.user, 'hub');
    equal(r.client().options.password, 'secret');
  });

  it('hands an IPv4 address to the client from the event loop, looks a name up, and reports a name with no address as closed', () => {
    const r = rig();
    r.mqtt.open(opening());
    equal(r.client().resolved, null, 'not inside the constructor');
    equal(r.lookups.length, 0, 'an address is not looked up');
    r.runLater();
    equal(r.client().resolved, '192.168.4.2');
    const n = rig('broker.site.lan');
    n.mqtt.open(opening());
    equal(n.lookups.length, 1);
    equal(n.lookups[0]?.host, 'broker.site.lan');
    n.lookups[0]?.done('10.0.0.5');
    equal(n.client().resolved, '10.0.0.5');
    n.mqtt.open(opening());
    n.lookups[1]?.done(undefined);
    deepEqual(n.heard.events, ['closed']);
  });

  it('drops a lookup that answers after the session was closed', () => {
    const r = rig('broker.site.lan');
    r.mqtt.open(opening());
    r.mqtt.close();
    r.lookups[0]?.done('10.0.0.5');
    equal(r.client().resolved, null);
    r.lookups[0]?.done(undefined);
    deepEqual(r.heard.events, [], 'no closed for a session the uplink closed itself');
  });

  it('is connected at CONNACK, has room only once the client reports it, and publishes within it', () => {
    const r = rig();
    r.mqtt.open(opening());
    r.runLater();
    equal(r.mqtt.room(), 0, 'no room before CONNACK');
    const c = r.client();
    c.connack(1000);
    deepEqual(r.heard.events, [], 'CONNACK is not handed on from inside the client’s parser');
    equal(r.mqtt.room(), 1000 - OVERHEAD, 'the room is known at once');
    r.runLater();
    deepEqual(r.heard.events, ['connected']);
    equal(r.mqtt.room(), 1000 - OVERHEAD);
    r.mqtt.publish('fleet/north/hub-7/status', bytes('online'), true);
    r.mqtt.publish('fleet/north/hub-7/telemetry/odom', bytes('{"seq":1}'), false);
    deepEqual(
      c.written.map((w) => [w.operation, w.topic, w.retain, w.payload ? String.fromCharCode(...w.payload) : null]),
      [
        [MqttOperation.PUBLISH, 'fleet/north/hub-7/status', true, 'online'],
        [MqttOperation.PUBLISH, 'fleet/north/hub-7/telemetry/odom', false, '{"seq":1}'],
      ],
    );
    equal(r.mqtt.room(), c.socketRoom - OVERHEAD, 'room is what the last write said');
    c.drained(1460);
    equal(r.mqtt.room(), 1452);
    deepEqual(r.heard.events, ['connected', 'writable']);
  });

  it('writes a SUBSCRIBE the socket had no room for at the next onWritable, once', () => {
    const r = rig();
    r.mqtt.open(opening());
    const c = r.client();
    c.socketRoom = 0;
    c.options.onControl.call(c, { operation: MqttOperation.CONNACK, returnCode: 0 });
    r.mqtt.subscribe('fleet/north/estop');
    equal(c.written.length, 0, 'no room: nothing written, nothing thrown');
    c.drained(200);
    c.drained(200);
    deepEqual(
      c.written.map((w) => [w.operation, w.items]),
      [[MqttOperation.SUBSCRIBE, [{ topic: 'fleet/north/estop', QoS: 0 }]]],
    );
  });

  it('gathers a PUBLISH from its pieces, and reads and drops one longer than a fleet stop may be', () => {
    const r = rig();
    r.mqtt.open(opening());
    const c = r.client();
    c.connack();
    const stop = bytes('{"v":1,"target":"*","seq":3,"time":1764662400000,"sig":"00"}');
    c.deliver('fleet/north/estop', stop, [5, 20, stop.length - 25]);
    equal(r.heard.messages.length, 0, 'handed on from the event loop, not from inside the parser');
    r.runLater();
    deepEqual(r.heard.messages, [{ topic: 'fleet/north/estop', text: String.fromCharCode(...stop) }]);
    const long = new Uint8Array(FLEET_STOP_MAX_BYTES + 1).fill(0x41);
    c.deliver('fleet/north/estop', long, [300, long.length - 300]);
    r.runLater();
    equal(r.heard.messages.length, 1, 'the long one is not handed on');
    equal(r.mqtt.oversized, 1);
    c.deliver('fleet/north/estop', bytes('{}'), [2]);
    r.runLater();
    equal(r.heard.messages.length, 2, 'the next message arrives whole');
    equal(r.heard.messages[1]?.text, '{}');
  });

  it('closes with DISCONNECT first, tells the uplink nothing, and ignores the old client from then on', () => {
    const r = rig();
    r.mqtt.open(opening());
    const c = r.client();
    c.connack();
    r.mqtt.close();
    deepEqual(
      c.written.map((w) => w.operation),
      [MqttOperation.DISCONNECT],
    );
    equal(c.closed, 1);
    equal(r.mqtt.room(), 0);
    const before = r.heard.events.length;
    c.error();
    c.drained(1000);
    equal(r.heard.events.length, before, 'callbacks of a closed client are dropped');
    r.mqtt.publish('t', bytes('x'), false);
    equal(c.written.length, 1, 'no publish after close');
  });

  it('reports an error, a refused CONNACK or a failed write as closed, once', () => {
    const r = rig();
    r.mqtt.open(opening());
    const c = r.client();
    c.connack(100);
    r.runLater();
    c.error();
    c.error();
    deepEqual(r.heard.events, ['connected', 'closed']);
    equal(r.mqtt.room(), 0);
    // A write the client refuses (the room it reported was wrong): the session is given up.
    r.mqtt.open(opening());
    const d = r.client();
    d.connack(100);
    r.runLater();
    d.socketRoom = 3;
    r.mqtt.publish('fleet/north/hub-7/health', bytes('{"version":1}'), true);
    equal(r.mqtt.writeFailures, 1);
    equal(d.closed, 1);
    deepEqual(r.heard.events.slice(2), ['connected', 'closed']);
    // A CONNACK whose session ended before the event loop came round is not handed on.
    r.mqtt.open(opening());
    const e = r.client();
    e.connack(100);
    e.error();
    r.runLater();
    deepEqual(r.heard.events.slice(4), ['closed']);
    throws(() => d.write(bytes('x'), { topic: 'longer than three' }));
  });

  it('carries the Uplink: online retained after CONNACK, the fleet-stop topic subscribed, a fleet stop judged', () => {
    const fx = makeHub({ hubId: 'hub-7' });
    const { config } = readUplinkConfig({ broker: 'mqtt://192.168.4.2:1884', site: 'north', telemetry: [], events: [], fleetKey: 'k' }, fx.catalog);
    const r = rig();
    const uplink = new Uplink(config, { hub: fx.hub, clock: fx.clock, wallMs: () => NaN, store: fx.store, mqtt: r.mqtt, random: new SeededRandom(3), later: (f) => r.later.push(f) });
    r.mqtt.listener = uplink;
    uplink.tick();
    equal(uplink.state, UplinkState.CONNECTING);
    const c = r.client();
    equal(c.options.will.topic, 'fleet/north/hub-7/status');
    deepEqual(Array.from(new Uint8Array(c.options.will.message)), Array.from(OFFLINE));
    r.runLater();
    c.connack();
    equal(uplink.state, UplinkState.CONNECTING, 'CONNACK reaches the uplink from the event loop');
    r.runLater();
    equal(uplink.state, UplinkState.ONLINE);
    const subscribed = c.written.filter((w) => w.operation === MqttOperation.SUBSCRIBE);
    deepEqual(subscribed.map((w) => w.items?.[0]?.topic), ['fleet/north/estop']);
    const status = c.written.filter((w) => w.topic === 'fleet/north/hub-7/status');
    deepEqual(status.map((w) => [w.retain, String.fromCharCode(...(w.payload ?? []))]), [[true, 'online']]);
    // The hub's ESTOP reaches the uplink inside the hub's call: published from the event loop, retained.
    r.runLater();
    fx.hub.estop(0);
    ok(fx.hub.latch.latched);
    equal(c.written.filter((w) => w.topic === 'fleet/north/hub-7/safety').length, 0, 'not from inside the hub’s call');
    r.runLater();
    const safety = c.written.filter((w) => w.topic === 'fleet/north/hub-7/safety');
    equal(safety.length, 1);
    equal(safety[0]?.retain, true);
    equal((JSON.parse(String.fromCharCode(...(safety[0]?.payload ?? []))) as { latched: boolean }).latched, true);
    // A fleet stop that is not signed with the key is refused.
    const unsigned = bytes('{"v":1,"target":"*","seq":1,"time":0,"sig":"00"}');
    c.deliver('fleet/north/estop', unsigned, [10, unsigned.length - 10]);
    r.runLater();
    equal(uplink.fleetStopCounts()['accepted'], 0);
    ok((uplink.fleetStopCounts()['malformed'] ?? 0) + (uplink.fleetStopCounts()['bad-signature'] ?? 0) + (uplink.fleetStopCounts()['stale'] ?? 0) === 1, JSON.stringify(uplink.fleetStopCounts()));
    // The broker goes away: the uplink waits for its backoff, then opens a new client.
    c.error();
    equal(uplink.state, UplinkState.WAITING);
    fx.clock.advance(31000);
    uplink.tick();
    equal(ScriptedClient.made.length, 2);
  });
});
