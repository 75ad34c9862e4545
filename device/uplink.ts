// The fleet uplink on the device (docs/fleet.md "On the device"): the platform-free Uplink over
// the SDK's ECMA-419 MQTT client (uplink/moddable.ts), its socket the SDK's TCP socket, the
// broker's name looked up by the SDK's `net` module, ticked after the hub by the entry's tick.
// Used by device/main.ts (once Wi-Fi is up) and device/main-lin.ts. Preloaded with the SDK's
// client, so that a device without an uplink (`uplink_broker` empty, the default) spends no RAM
// on either: nothing of it is made then.

import MQTTClient from 'embedded:network/mqtt/client';
import TCP from 'embedded:io/socket/tcp';
import Net from 'net';
import Timer from 'timer';
import type { CatalogIndex } from '../catalog/index.js';
import type { Hub } from '../hub/hub.js';
import type { Clock, Log, Random, Store } from '../hub/ports.js';
import { ModdableMqtt, type ModdableMqttPorts } from '../uplink/moddable.js';
import { Uplink } from '../uplink/uplink.js';
import { DEVICE_MAX_HUB_FRAME_BYTES, type DeviceConfig } from './config.js';
import { deviceUplinkConfig } from './wiring.js';

/** Unix ms before this are a clock SNTP has not set (the ESP32 starts at 1970). */
const WALL_CLOCK_SET_MS = Date.UTC(2020, 0, 1);

/** The device's wall clock for the fleet stop's time: NaN until SNTP has set it. */
function wallMs(): number {
  const t = Date.now();
  return t >= WALL_CLOCK_SET_MS ? t : NaN;
}

/** The uplink the configuration asks for, started (it connects at its first tick); null when there is none or its keys are wrong. */
export function startDeviceUplink(hub: Hub, env: { clock: Clock; store: Store; random: Random; log: Log }, config: DeviceConfig, catalog: CatalogIndex): Uplink | null {
  const { clock, store, random, log } = env;
  const { config: uc, problems } = deviceUplinkConfig(config, catalog);
  for (const p of problems) trace(`hub: uplink: ${p}\n`);
  const u = config.uplink;
  if (!uc || !u) return null;
  const ports: ModdableMqttPorts = {
    Client: MQTTClient as unknown as ModdableMqttPorts['Client'],
    TCP,
    host: u.host,
    port: u.port,
    resolve: (host, done) => {
      try {
        Net.resolve(host, (_name, address) => done(address));
      } catch {
        // lwIP's lookup table is full: the uplink tries again after its backoff.
        Timer.set(() => done(undefined));
      }
    },
    later: (f) => {
      Timer.set(f);
    },
  };
  const mqtt = new ModdableMqtt(ports);
  // The hub's kicks pump from the event loop: inside an ESTOP's announcement the pump's work
  // overflowed XS's stack (uplink/uplink.ts UplinkPorts.later).
  // Payloads encoded by XS itself (ArrayBuffer.fromString), not a character at a time in script.
  const utf8 = (text: string): Uint8Array => new Uint8Array(ArrayBuffer.fromString(text));
  const uplink = new Uplink(uc, { hub, clock, wallMs, store, mqtt, random, log, maxHubFrameBytes: DEVICE_MAX_HUB_FRAME_BYTES, later: ports.later, utf8 });
  mqtt.listener = uplink;
  log.event('uplink', u.port, uc.telemetry.length);
  return uplink;
}
