// What the two Moddable entries share: device/main.ts on the ESP32 and device/main-lin.ts in the
// SDK's Linux simulator (mcsim). The hub's clock, randomness and log over the SDK's modules, the
// start-up steps that may fail on their own, the Wi-Fi listeners (TCP, WebSocket, HTTP health)
// and the tick. Not preloaded: it reads the clock and opens sockets. The platform-free part of
// the wiring (what the hub is configured with) is device/wiring.ts, which a Node test drives.

import Listener from 'embedded:io/socket/listener';
import TCP from 'embedded:io/socket/tcp';
import Time from 'time';
import Timer from 'timer';
import { DeviceLinkKind, DeviceListener, deviceTakePool } from '../bindings/tcp/device.js';
import { HttpDeviceServer } from '../bindings/tcp/http-device.js';
import type { Hub } from '../hub/hub.js';
import type { Clock, Log, Random, RobotPort } from '../hub/ports.js';
import { DEVICE_MAX_HUB_FRAME_BYTES, type DeviceConfig } from './config.js';
import type { DeviceTick } from './tick.js';

/**
 * Monotonic integer milliseconds over Time.ticks, which on the ESP32 is a uint32 count of
 * FreeRTOS ticks in ms (CONFIG_FREERTOS_HZ=1000) read as an int32: the unsigned difference of
 * two readings is the time between them, so the clock never jumps back at the wraps (24.8 days
 * to negative, 49.7 days to zero) as long as it is read at least once per 49.7 days (every tick).
 * In the Linux simulator Time.ticks is the host's wall clock in ms; the difference of two
 * readings is the same kind of number.
 */
export class TicksClock implements Clock {
  private last = Time.ticks;
  private ms = this.last >>> 0;

  now(): number {
    const t = Time.ticks;
    this.ms += (t - this.last) >>> 0;
    this.last = t;
    return this.ms;
  }
}

/**
 * Resume tokens from Math.random. XS on the ESP32 implements it with c_rand(), which the SDK's
 * ESP32 host defines as esp_random() & 0x7fffffff: true random numbers while Wi-Fi or Bluetooth
 * is running (the hub always runs one), 31 bits per call. In the Linux simulator it is the C
 * library's rand(), not a secure source (docs/operations.md "The Linux simulator target").
 */
export const random: Random = Object.freeze({
  fill(into: Uint8Array): void {
    for (let i = 0; i < into.length; i++) into[i] = Math.floor(Math.random() * 256);
  },
});

/** Structured log lines on the debug console (xsbug, serial, mcsim's stdout). Never payloads or credentials. */
export const log: Log = Object.freeze({
  event(code: string, a?: number, b?: number): void {
    trace(a === undefined ? `hub: ${code}\n` : b === undefined ? `hub: ${code} ${a}\n` : `hub: ${code} ${a} ${b}\n`);
  },
});

/** Objects whose callbacks the runtime calls: referenced here for the life of the program. */
export const keep: object[] = [];

/** Runs one start-up step; a failure is logged and the hub carries on without that part. */
export function attempt<T>(what: string, step: () => T): T | null {
  try {
    return step();
  } catch (e) {
    trace(`hub: ${what} failed: ${e instanceof Error ? e.message : String(e)}\n`);
    return null;
  }
}

/**
 * The TCP, WebSocket and HTTP health listeners the configuration asks for, each on its own; their
 * connections carry `tierCeiling`, what the network protects (device/wiring.ts wifiTierCeiling,
 * docs/security.md).
 */
export function openNetworkListeners(hub: Hub, clock: Clock, config: DeviceConfig, tierCeiling: number): void {
  // Every TCP and WebSocket connection's egress queue, with one staging area for them all, made now.
  const connections = (config.tcpPort ? config.tcpMaxClients : 0) + (config.wsPort ? config.wsMaxClients : 0);
  const takePool = connections > 0 ? (attempt('egress memory', () => deviceTakePool(connections, DEVICE_MAX_HUB_FRAME_BYTES)) ?? undefined) : undefined;
  if (config.tcpPort) attempt('tcp', () => keep.push(new DeviceListener({ hub, clock, port: config.tcpPort, kind: DeviceLinkKind.TCP, maxConnections: config.tcpMaxClients, maxHubFrameBytes: DEVICE_MAX_HUB_FRAME_BYTES, takePool, log, tierCeiling })));
  if (config.wsPort) attempt('websocket', () => keep.push(new DeviceListener({ hub, clock, port: config.wsPort, kind: DeviceLinkKind.WS, maxConnections: config.wsMaxClients, maxHubFrameBytes: DEVICE_MAX_HUB_FRAME_BYTES, takePool, log, tierCeiling })));
  if (config.httpPort) {
    attempt('http', () =>
      keep.push(new HttpDeviceServer({ Listener, TCP, port: config.httpPort, clock, source: hub, log, ...(config.operationsToken ? { token: config.operationsToken } : {}) })),
    );
  }
}

/** Runs `ticker` (device/tick.ts: the hub's tick and the upkeep around it) every `tickMs` on the SDK's timer. */
export function tickEvery(tickMs: number, ticker: DeviceTick): void {
  keep.push(Timer.repeat(() => ticker.run(), tickMs));
}
