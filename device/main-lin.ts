// The entry of the Linux simulator target (`mcconfig -m -p lin`; docs/operations.md "The Linux
// simulator target"): the same configuration, catalog, hub and Wi-Fi bindings as the device
// (device/boot.ts, device/wiring.ts, device/runtime.ts), served by the SDK's Linux simulator
// (mcsim) on the host's own TCP stack. What needs the ESP32 is replaced or left out:
//   - the robot's serial link and the stop output: a simulated robot and stop line (device/sim-robot.ts);
//   - the ESTOP button: none (a client's ESTOP, the deadman and the watchdog still latch);
//   - BLE and ESP-NOW: not built for lin (the SDK's GATT server has no Linux implementation and
//     ESP-NOW is an ESP32 radio); the start says so on the console;
//   - NVS: the SDK's Preference on lin, a JSON file in /tmp (a latch survives a restart);
//   - Wi-Fi: none; the listeners are on the host's own network, which the hub cannot judge, so
//     their connections carry the highest tier ceiling (docs/security.md): a development target,
//     never to be served on a network others share.
// The order is the device's: the stop line at stop first, then the hub (a restored latch stops
// the robot again), then the robot released when nothing latched, then the listeners.

import Instrumentation from 'instrumentation';
import Preference from 'preference';
import { CATALOG, CONFIG } from './boot.js';
import { Tier } from '../catalog/schema.js';
import { attempt, log, openNetworkListeners, random, tickEvery, TicksClock } from './runtime.js';
import { SimulatedRobot } from './sim-robot.js';
import { PreferenceStore } from './store.js';
import { startDeviceUplink } from './uplink.js';
import { createDeviceHub, storeConfiguredCredentials } from './wiring.js';
import { DeviceTick } from './tick.js';

export default function main(): void {
  const config = CONFIG;
  trace('hub: lin target: TCP, WebSocket and HTTP only; BLE and ESP-NOW are not built for lin; the robot and its stop line are simulated\n');
  const clock = new TicksClock();
  const store = new PreferenceStore(Preference);

  // 1. The stop line at stop.
  const robot = new SimulatedRobot(CATALOG, clock, { log });

  // 2. Credentials from the configuration replace the stored table when they differ.
  attempt('credentials', () => storeConfiguredCredentials(store, config));

  // 3. The hub; a latch persisted before the restart stops the robot again here.
  const hub = createDeviceHub({ clock, random, store, robot, catalog: CATALOG, log }, config, Instrumentation);
  robot.start(hub);

  // 4. Nothing latched: the robot may move when commanded.
  if (!hub.latch.latched) robot.release();

  // 5. The listeners, each on its own.
  openNetworkListeners(hub, clock, config, Tier.maintainer);
  trace(`hub: listening tcp ${config.tcpPort} ws ${config.wsPort} http ${config.httpPort}\n`);
  // 5b. The fleet uplink (`uplink_broker`; docs/fleet.md), over the host's network.
  const uplink = config.uplink ? attempt('uplink', () => startDeviceUplink(hub, { clock, store, random, log }, config, CATALOG)) : null;
  log.event('ready', hub.latch.latched ? 1 : 0, config.slots);

  // 6. The tick, then the robot up to the hub's clock, then the uplink.
  const after = {
    tick(): void {
      robot.advance(clock.now());
      if (uplink) uplink.tick();
    },
  };
  tickEvery(config.tickMs, new DeviceTick(hub, robot, { stopPath: null, button: null, sampler: null, ble: null, radio: null, espnow: null, after }, log));
}
