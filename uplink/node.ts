// The host's MQTT client for the uplink (uplink/uplink.ts MqttPort), over the `mqtt` package:
// MQTT 3.1.1, clean session, QoS 0, the will set at CONNECT, no reconnecting of its own (the
// uplink decides when, with its backoff). `room` is what the socket takes before its write
// buffer passes `highWaterBytes`: beyond that the uplink leaves frames in its link's queue, whose
// watermark the hub's shedding reads.

import mqtt, { type IClientOptions, type MqttClient } from 'mqtt';
import type { Socket } from 'node:net';
import { CONNECT_TIMEOUT_MS, type MqttListener, type MqttOpen, type MqttPort } from './uplink.js';

/** Bytes the socket may hold unsent before the uplink is told there is no room. */
export const DEFAULT_HIGH_WATER_BYTES = 16384;

export class NodeMqtt implements MqttPort {
  listener: MqttListener | null = null;
  readonly url: string;
  readonly highWaterBytes: number;
  private client: MqttClient | null = null;
  private online = false;

  constructor(url: string, highWaterBytes = DEFAULT_HIGH_WATER_BYTES) {
    this.url = url;
    this.highWaterBytes = highWaterBytes;
  }

  open(o: MqttOpen): void {
    this.close();
    const options: IClientOptions = {
      clientId: o.clientId,
      keepalive: o.keepaliveS,
      clean: true,
      protocolVersion: 4,
      reconnectPeriod: 0,
      connectTimeout: CONNECT_TIMEOUT_MS,
      queueQoSZero: false,
      resubscribe: false,
      will: { topic: o.will.topic, payload: Buffer.from(o.will.payload), retain: o.will.retain, qos: 0 },
    };
    if (o.username !== '') options.username = o.username;
    if (o.password !== '') options.password = o.password;
    const c = mqtt.connect(this.url, options);
    this.client = c;
    c.on('connect', () => {
      if (this.client !== c) return;
      this.online = true;
      const s = c.stream as Socket;
      s.on('drain', () => {
        if (this.client === c && this.listener) this.listener.writable();
      });
      if (this.listener) this.listener.connected();
    });
    c.on('message', (topic, payload) => {
      if (this.client === c && this.listener) this.listener.message(topic, new Uint8Array(payload.buffer, payload.byteOffset, payload.length));
    });
    // Errors end in 'close'; the uplink learns of them there.
    c.on('error', () => undefined);
    c.on('close', () => {
      if (this.client !== c) return;
      this.client = null;
      this.online = false;
      c.removeAllListeners('connect');
      c.end(true);
      if (this.listener) this.listener.closed();
    });
  }

  room(): number {
    const c = this.client;
    if (!c || !this.online || !c.connected) return 0;
    const s = c.stream as Socket;
    const r = this.highWaterBytes - s.writableLength;
    return r > 0 ? r : 0;
  }

  publish(topic: string, payload: Uint8Array, retain: boolean): void {
    const c = this.client;
    if (!c || !this.online) return;
    c.publish(topic, Buffer.from(payload.buffer, payload.byteOffset, payload.length), { qos: 0, retain });
  }

  subscribe(topic: string): void {
    const c = this.client;
    if (c && this.online) c.subscribe(topic, { qos: 0 });
  }

  /** A clean DISCONNECT after what is written (the broker does not publish the will). */
  close(): void {
    const c = this.client;
    if (!c) return;
    this.client = null;
    this.online = false;
    c.end(false);
  }

  /** The connection lost without DISCONNECT (the tests' broken network): the broker publishes the will. */
  drop(): void {
    const c = this.client;
    if (c && c.stream) c.stream.destroy();
  }
}
