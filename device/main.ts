// The device entry (docs/architecture.md): the only place that wires Moddable modules to the core.
// `creation.main` in manifest.json names this module; after the SDK's setup modules have run,
// the runtime calls its default export (xs/platforms/mc/xsHosts.c). Not preloaded: it opens
// pins, radios and sockets. device/boot.ts, which is, brings the configuration and the catalog.
//
// Order matters for safety: the stop line is driven to stop first (a stop pin that cannot be
// opened ends the start here: the line floats, which the robot reads as stop); the hub comes
// next (a latch restored from the Store stops the robot again, §11.2), then the ESTOP button,
// and only then the robot is released, when nothing latched. The links come last, each on its
// own, so that a radio failing to start leaves the others and the ESTOP path running.

import Digital from 'embedded:io/digital';
import Instrumentation from 'instrumentation';
import Preference from 'preference';
import Timer from 'timer';
import WiFi from 'wifi';
import { BleBinding } from '../bindings/ble/device.js';
import { createDeviceEspNow, WifiInterface, type DeviceRadio } from '../bindings/espnow/device.js';
import type { EspNowBinding } from '../bindings/espnow/link.js';
import { CATALOG, CONFIG } from './boot.js';
import { DEVICE_BLE_QUEUE_BYTES, Pull, WifiMode, type DeviceConfig } from './config.js';
import { openDeviceRobot } from './robot.js';
import { attempt, keep, log, openNetworkListeners, random, tickEvery, TicksClock } from './runtime.js';
import { PreferenceStore } from './store.js';
import { createDeviceHub, storeConfiguredCredentials } from './wiring.js';

function startWifi(config: DeviceConfig): void {
  const w = config.wifi;
  if (w.mode === WifiMode.AP) {
    // xs_wifi_accessPoint: no password means an open network; a given one must be 8–64 bytes.
    WiFi.accessPoint(
      w.password === ''
        ? { ssid: w.ssid, channel: w.channel, max: w.maxClients }
        : { ssid: w.ssid, password: w.password, channel: w.channel, max: w.maxClients },
    );
    log.event('wifi-ap', w.channel, w.maxClients);
    return;
  }
  // Station: join, and join again whenever the network drops the hub.
  const join = w.password === '' ? { ssid: w.ssid } : { ssid: w.ssid, password: w.password };
  let retry: Timer | null = null;
  const station = new WiFi(join, (message) => {
    if (message === WiFi.gotIP) log.event('wifi-ip');
    else if (message === WiFi.disconnected) {
      log.event('wifi-lost');
      if (retry) return;
      retry = Timer.set(() => {
        retry = null;
        try {
          WiFi.connect(join);
        } catch {
          log.event('wifi-retry-failed');
        }
      }, 2000);
    }
  });
  keep.push(station);
}

export default function main(): void {
  const config = CONFIG;
  const clock = new TicksClock();
  const store = new PreferenceStore(Preference);

  // 1. The stop line, driven to stop before anything else can fail.
  const robot = openDeviceRobot(config, CATALOG, clock);

  // 2. Credentials from the configuration replace the stored table when they differ.
  attempt('credentials', () => storeConfiguredCredentials(store, config));

  // 3. The hub; a latch persisted before the restart stops the robot again here.
  //    The tick period and the heap reading feed loop-delay admission and the heap rung.
  const hub = createDeviceHub({ clock, random, store, robot: robot.port, catalog: CATALOG, log }, config, Instrumentation);
  attempt('robot-uart', () => robot.connect(hub));

  // 4. The ESTOP button. A press counts at once, from the edge or, should an edge be missed,
  //    from the tick's poll; a release only after the input has read released for the debounce
  //    time, so a bouncing contact cannot latch again and again. A button that cannot be opened
  //    counts as held for good: without its ESTOP input the robot must not run.
  const e = config.estop;
  const mode = e.pull === Pull.UP ? Digital.InputPullUp : e.pull === Pull.DOWN ? Digital.InputPullDown : Digital.Input;
  let held = false;
  let releasedSince = -1;
  const button = attempt('estop-button', () => {
    return new Digital({
      pin: e.pin,
      mode,
      edge: Digital.Rising | Digital.Falling,
      onReadable(this: Digital): void {
        sampleButton(this.read());
      },
    });
  });
  function sampleButton(level: number): void {
    if (level === e.level) {
      releasedSince = -1;
      if (!held) {
        held = true;
        hub.setButton(true);
      }
    } else if (held) {
      const now = clock.now();
      if (releasedSince < 0) releasedSince = now;
      else if (now - releasedSince >= e.debounceMs) {
        held = false;
        releasedSince = -1;
        hub.setButton(false);
      }
    }
  }
  if (button) {
    sampleButton(button.read());
    keep.push(button);
  } else hub.setButton(true);

  // 5. Nothing latched and the button up: the robot may move when commanded.
  if (!hub.latch.latched) robot.port.release();

  // 6. The links, each on its own.
  let ble: BleBinding | null = null;
  let espnow: { radio: DeviceRadio; binding: EspNowBinding } | null = null;
  const wifiUp = attempt('wifi', () => {
    startWifi(config);
    return true;
  });
  if (wifiUp) {
    openNetworkListeners(hub, clock, config);
    if (config.espnow.enabled) {
      espnow = attempt('espnow', () =>
        createDeviceEspNow({
          clock,
          attach: (link) => hub.attach(link),
          catalog: CATALOG,
          broadcast: config.espnow.broadcast,
          wifiInterface: config.wifi.mode === WifiMode.AP ? WifiInterface.ACCESS_POINT : WifiInterface.STATION,
        }),
      );
    }
  }
  if (config.ble.enabled) {
    ble = attempt('ble', () => new BleBinding({ hub, clock, name: config.ble.name, link: { queue: { bytes: DEVICE_BLE_QUEUE_BYTES } }, onWarning: (m) => trace(`hub: ble: ${m}\n`) }));
  }
  log.event('ready', hub.latch.latched ? 1 : 0, config.slots);

  // 7. The tick, then the button's poll and the radios' upkeep.
  tickEvery(config.tickMs, hub, robot.port, () => {
    if (button) sampleButton(button.read());
    if (ble) ble.tick();
    if (espnow) {
      espnow.radio.drain();
      espnow.binding.tick();
    }
  });
}
