// The device's MQTT client for the uplink (uplink/uplink.ts MqttPort), over the Moddable SDK's
// ECMA-419 MQTT client (`embedded:network/mqtt/client`; docs/fleet.md "On the device"): MQTT
// 3.1.1, clean session, QoS 0, the will set at CONNECT, no reconnecting of its own (the uplink
// decides when, with its backoff). Platform-free: the client class, the TCP socket class and a
// name resolver come in as `ModdableMqttPorts` (device/runtime.ts hands it the SDK's), so that
// the adapter's own logic runs on Node and XS in test/core/uplink-moddable.test.ts.
//
// Why this client and not the SDK's older `mqtt` module: both set a retained will and publish
// retained, but only this one says how much its socket takes. Its `write` returns the bytes the
// socket can still take and `onWritable(count)` reports them again as the socket drains, which
// is what `MqttPort.room` and the uplink's `writable` need. The older client writes each packet
// into its socket and throws when the socket is full, and reports nothing when it drains.
//
// What the adapter does about the client's limits:
//   - the will's message and the publishes' payloads must be buffers: a Uint8Array handed as the
//     will would be turned into the text of its numbers, so the will goes as an ArrayBuffer;
//   - the client resolves the broker's name itself through a resolver class it is given: here one
//     over `resolve` (the SDK's `net` module on the device), cancelled with the session;
//   - a PUBLISH arrives in pieces as the socket has them (`onReadable(count, { topic, more })`);
//     the pieces are gathered up to FLEET_STOP_MAX_BYTES, a longer message is read and dropped
//     (the only subscription is the fleet stop's topic);
//   - SUBSCRIBE is written at CONNACK; should the socket have no room for it then, it is written
//     at the next `onWritable`;
//   - its `close()` sends nothing: `close` here writes DISCONNECT first (the broker then keeps
//     the will to itself), as MqttPort says;
//   - it calls onControl and onReadable from inside its parser, itself inside the socket's
//     callback: CONNACK and a message are handed to the uplink from the event loop (`later`)
//     instead, where the uplink's work (a session opened in the hub, the health summary, a fleet
//     stop's ESTOP) starts on a shallow stack. XS's stack on the device is 512 slots, and the
//     uplink's CONNACK work run inside the parser overflowed it on the lin target.

import { FLEET_STOP_MAX_BYTES } from '../hub/fleet-stop.js';
import type { MqttListener, MqttOpen, MqttPort } from './uplink.js';

/** The client's operation codes (MQTT control packet types), as its static fields have them. */
export const MqttOperation = Object.freeze({ CONNACK: 2, PUBLISH: 3, SUBSCRIBE: 8, SUBACK: 9, PINGREQ: 12, PINGRESP: 13, DISCONNECT: 14 } as const);

/** What the client is told when it is made (device/typings/embedded_network/mqtt/client.d.ts). */
export interface MqttClientOptions {
  readonly host: string;
  readonly port: number;
  readonly id: string;
  readonly user?: string;
  readonly password?: string;
  readonly clean: boolean;
  /** Milliseconds; the client sends PINGREQ within it and gives up after 1.5 × it without an answer. */
  readonly keepalive: number;
  readonly will: { readonly topic: string; readonly message: ArrayBuffer; readonly QoS: number; readonly retain: boolean };
  readonly onControl: (this: MqttClientLike, msg: { operation: number; id?: number; returnCode?: number }) => void;
  readonly onReadable: (this: MqttClientLike, count: number, options: { more: boolean; topic?: string; byteLength?: number; QoS?: number }) => void;
  readonly onWritable: (this: MqttClientLike, count: number) => void;
  readonly onError: (this: MqttClientLike) => void;
  readonly dns: { readonly io: new (options: unknown) => { resolve(request: ResolveRequest): void } };
  readonly socket: { readonly io: unknown };
}

export interface ResolveRequest {
  readonly host: string;
  onResolved(host: string, address: string): void;
  onError(): void;
}

/** The client as the adapter uses it. */
export interface MqttClientLike {
  /** A PUBLISH (`options.topic`), or a control packet (`options.operation`); returns the bytes the socket still takes. Throws when they are too few. */
  write(data: ArrayBuffer | Uint8Array | null, options: { operation?: number; topic?: string; QoS?: number; retain?: boolean; items?: readonly { topic: string; QoS?: number }[] }): number;
  read(count?: number): ArrayBuffer | undefined;
  close(): void;
}

export interface ModdableMqttPorts {
  readonly Client: new (options: MqttClientOptions) => MqttClientLike;
  /** The ECMA-419 TCP socket class the client opens its connection with. */
  readonly TCP: unknown;
  readonly host: string;
  readonly port: number;
  /** The broker's address from its name; `done(undefined)` when it has none. Called only for names that are not IPv4 addresses. */
  resolve(host: string, done: (address: string | undefined) => void): void;
  /** Runs `f` later, from the event loop (the SDK's Timer): an address is handed to the client the way a lookup would. */
  later(f: () => void): void;
}

const IPV4 = /^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;

export class ModdableMqtt implements MqttPort {
  listener: MqttListener | null = null;
  // Counters, for the tests and the device's log.
  /** Sessions opened (CONNACK received). */
  connacks = 0;
  /** Writes the client refused (no room, or the socket gone): each ends the session. */
  writeFailures = 0;
  /** Messages longer than the adapter keeps, read and dropped. */
  oversized = 0;
  private readonly ports: ModdableMqttPorts;
  private client: MqttClientLike | null = null;
  /** Bumped by every open and close: callbacks of an older client are ignored. */
  private generation = 0;
  private online = false;
  /** CONNACK handed to the uplink: from then on it hears of the socket draining. */
  private announced = false;
  private free = 0;
  private owedSubscriptions: string[] = [];
  // The PUBLISH being gathered from its pieces.
  private inTopic = '';
  private inBytes: Uint8Array | null = null;
  private inAt = 0;
  private inDrop = false;

  constructor(ports: ModdableMqttPorts) {
    this.ports = ports;
  }

  open(o: MqttOpen): void {
    this.close();
    const generation = ++this.generation;
    const self = this;
    const ports = this.ports;
    const current = (c: MqttClientLike): boolean => self.generation === generation && self.client === c;
    // The client makes one resolver per session; its answer is dropped once the session is over.
    class Resolver {
      resolve(r: ResolveRequest): void {
        const answer = (address: string | undefined): void => {
          if (self.generation !== generation) return;
          if (address) r.onResolved(r.host, address);
          else r.onError();
        };
        if (IPV4.test(r.host)) ports.later(() => answer(r.host));
        else ports.resolve(r.host, answer);
      }
    }
    const will = o.will.payload;
    const options: MqttClientOptions = {
      host: ports.host,
      port: ports.port,
      id: o.clientId,
      ...(o.username !== '' ? { user: o.username } : {}),
      ...(o.password !== '' ? { password: o.password } : {}),
      clean: true,
      keepalive: o.keepaliveS * 1000,
      will: { topic: o.will.topic, message: Uint8Array.from(will).buffer as ArrayBuffer, QoS: 0, retain: o.will.retain },
      onControl(msg) {
        if (!current(this)) return;
        if (msg.operation !== MqttOperation.CONNACK || self.online) return;
        // A refused CONNACK never gets here: the client reports it as an error.
        self.online = true;
        self.connacks++;
        ports.later(() => {
          if (self.generation !== generation) return;
          self.announced = true;
          if (self.listener) self.listener.connected();
        });
      },
      onReadable(count, info) {
        if (!current(this)) {
          this.read(count);
          return;
        }
        self.received(this, count, info, generation);
      },
      onWritable(count) {
        if (!current(this)) return;
        self.free = count;
        self.subscribeOwed(this);
        if (self.announced && self.listener) self.listener.writable();
      },
      onError() {
        if (!current(this)) return;
        self.lost();
      },
      dns: { io: Resolver },
      socket: { io: ports.TCP },
    };
    this.online = false;
    this.announced = false;
    this.free = 0;
    this.owedSubscriptions = [];
    this.inBytes = null;
    this.inDrop = false;
    try {
      this.client = new ports.Client(options);
    } catch {
      // No client (no memory, a bad host): the session is over before it began.
      this.client = null;
      ports.later(() => {
        if (self.generation === generation && self.listener) self.listener.closed();
      });
    }
  }

  room(): number {
    return this.client !== null && this.online ? this.free : 0;
  }

  publish(topic: string, payload: Uint8Array, retain: boolean): void {
    const c = this.client;
    if (c === null || !this.online) return;
    try {
      this.free = c.write(payload, { topic, QoS: 0, retain });
    } catch {
      this.writeFailed();
    }
  }

  subscribe(topic: string): void {
    if (this.client === null || !this.online) return;
    this.owedSubscriptions.push(topic);
    this.subscribeOwed(this.client);
  }

  close(): void {
    const c = this.client;
    this.generation++;
    this.client = null;
    const was = this.online;
    this.online = false;
    this.announced = false;
    this.free = 0;
    this.inBytes = null;
    if (c === null) return;
    if (was) {
      try {
        c.write(null, { operation: MqttOperation.DISCONNECT });
      } catch {
        // No room for it: the broker sees the connection end and publishes the will.
      }
    }
    try {
      c.close();
    } catch {
      // Already gone.
    }
  }

  private subscribeOwed(c: MqttClientLike): void {
    const owed = this.owedSubscriptions;
    while (this.online && owed.length > 0) {
      try {
        this.free = c.write(null, { operation: MqttOperation.SUBSCRIBE, items: [{ topic: owed[0] as string, QoS: 0 }] });
      } catch {
        // No room now: written at the next onWritable.
        return;
      }
      owed.shift();
    }
  }

  /** A piece of a PUBLISH: gathered, and the whole message handed on after its last piece. */
  private received(c: MqttClientLike, count: number, info: { more: boolean; topic?: string; byteLength?: number }, generation: number): void {
    if (info.topic !== undefined) {
      const length = info.byteLength ?? count;
      this.inTopic = info.topic;
      this.inAt = 0;
      this.inDrop = length > FLEET_STOP_MAX_BYTES;
      this.inBytes = this.inDrop ? null : new Uint8Array(length);
    }
    // Every byte is read, kept or not: the client parses nothing more until it is.
    const piece = count > 0 ? c.read(count) : undefined;
    const into = this.inBytes;
    if (into !== null && piece !== undefined && !this.inDrop) {
      const bytes = new Uint8Array(piece);
      if (this.inAt + bytes.length <= into.length) into.set(bytes, this.inAt);
      this.inAt += bytes.length;
    }
    if (info.more) return;
    const whole = this.inBytes;
    this.inBytes = null;
    if (this.inDrop || whole === null) {
      if (this.inDrop) this.oversized++;
      this.inDrop = false;
      return;
    }
    if (this.inAt !== whole.length) return;
    const topic = this.inTopic;
    this.ports.later(() => {
      if (this.generation === generation && this.listener) this.listener.message(topic, whole);
    });
  }

  private writeFailed(): void {
    this.writeFailures++;
    const c = this.client;
    this.lost();
    if (c !== null) {
      try {
        c.close();
      } catch {
        // Already gone.
      }
    }
  }

  /** The session is gone (an error, refused, the broker closed it, a write that failed): the uplink is told once. */
  private lost(): void {
    if (this.client === null) return;
    this.generation++;
    this.client = null;
    this.online = false;
    this.announced = false;
    this.free = 0;
    this.inBytes = null;
    if (this.listener) this.listener.closed();
  }
}
