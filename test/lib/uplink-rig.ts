// A hub on a virtual clock uplinked to an in-process aedes broker over real loopback TCP, and a
// watcher subscribed to `fleet/#` (test/host/uplink.test.ts). The tests wait on what arrives,
// with generous bounds in real time, never on timing; the hub's own time is virtual.
import mqtt, { type MqttClient } from 'mqtt';
import { Broker } from '../../host-sim/mqtt-broker.js';
import { readUplinkConfig, type UplinkConfig } from '../../uplink/config.js';
import { NodeMqtt } from '../../uplink/node.js';
import { Uplink } from '../../uplink/uplink.js';
import type { HubConfig } from '../../hub/hub.js';
import { makeHub, SeededRandom, type Fixture } from './hub-fixture.js';
import { fail } from './assert.js';

export { Broker };

/** How long, in real time, a test waits for something to arrive before failing. */
export const WAIT_MS = 15000;

export interface Heard {
  readonly topic: string;
  readonly payload: Buffer;
  readonly retain: boolean;
}

/** An MQTT client that records everything under `fleet/#`. */
export class Watcher {
  readonly heard: Heard[] = [];
  private constructor(readonly client: MqttClient) {}

  static async connect(url: string, filter = 'fleet/#'): Promise<Watcher> {
    const client = mqtt.connect(url, { reconnectPeriod: 0, protocolVersion: 4, clean: true });
    const w = new Watcher(client);
    client.on('message', (topic, payload, packet) => w.heard.push({ topic, payload: Buffer.from(payload), retain: packet.retain }));
    client.on('error', () => undefined);
    await new Promise<void>((resolve, reject) => {
      client.once('connect', () => client.subscribe(filter, { qos: 0 }, (e) => (e ? reject(e) : resolve())));
      client.once('error', reject);
    });
    return w;
  }

  on(topic: string): Heard[] {
    return this.heard.filter((h) => h.topic === topic);
  }

  texts(topic: string): string[] {
    return this.on(topic).map((h) => h.payload.toString('utf8'));
  }

  publish(topic: string, payload: string | Uint8Array): void {
    this.client.publish(topic, typeof payload === 'string' ? payload : Buffer.from(payload), { qos: 0 });
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.client.end(true, {}, () => resolve()));
  }
}

/** Waits (real time, bounded) until `cond` holds; `each` runs between looks (the hub's ticks). */
export async function until(cond: () => boolean, what: string, each?: () => void, boundMs = WAIT_MS): Promise<void> {
  const start = performance.now();
  for (;;) {
    if (each) each();
    if (cond()) return;
    if (performance.now() - start > boundMs) fail(`waited ${boundMs} ms for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

/** One hub and its uplink. `wallMs` is the hub's wall clock (the fleet stop's time is judged against it). */
export class UplinkRig {
  readonly fx: Fixture;
  readonly mqtt: NodeMqtt;
  readonly uplink: Uplink;
  readonly config: UplinkConfig;
  wallMs = 1764662400000;

  constructor(broker: Broker, uplink: Record<string, unknown>, hub: Partial<HubConfig> = {}) {
    this.fx = makeHub({ hubId: 'hub-1', livenessTimeoutMs: 10000, ...hub });
    const { config, problems } = readUplinkConfig({ broker: broker.url, site: 'north', ...uplink }, this.fx.catalog);
    if (problems.length > 0) fail(JSON.stringify(problems));
    this.config = config;
    this.mqtt = new NodeMqtt(config.broker);
    this.uplink = new Uplink(config, {
      hub: this.fx.hub,
      clock: this.fx.clock,
      wallMs: () => this.wallMs,
      store: this.fx.store,
      mqtt: this.mqtt,
      random: new SeededRandom(3),
    });
    this.mqtt.listener = this.uplink;
  }

  /** The hub's time moves by `ms` (a tick each 10 ms), the uplink ticking after the hub as a host does. */
  advance(ms: number, each?: (t: number) => void): void {
    const end = this.fx.clock.t + ms;
    while (this.fx.clock.t < end) {
      this.fx.clock.advance(Math.min(10, end - this.fx.clock.t));
      if (each) each(this.fx.clock.t);
      this.fx.hub.tick();
      this.uplink.tick();
    }
  }

  /** Ticks at the same virtual instant (sockets move in real time in between). */
  tick(): void {
    this.fx.hub.tick();
    this.uplink.tick();
  }

  stop(): void {
    this.uplink.stop();
  }
}
