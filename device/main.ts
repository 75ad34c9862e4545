// The device entry (docs/architecture.md): the only place that wires Moddable modules to the core.
// `creation.main` in manifest.json names this module; after the SDK's setup modules have run,
// the runtime calls its default export. Not preloaded: it opens
// pins, radios and sockets. device/boot.ts, which is, brings the configuration and the catalog.
//
// Order matters for safety: the stop line is driven to stop first (a stop pin that cannot be
// opened ends the start here: the line floats, which the robot reads as stop); the hub comes
// next (a latch restored from the Store stops the robot again, §11.2), then the ESTOP button,
// and only then the robot is released, when nothing latched. The links come last, each on its
// own, so that a radio failing to start leaves the others and the ESTOP path running.
//
// Each link says how it is protected, and a session's tier is capped by it (docs/security.md):
// TCP and WebSocket by the Wi-Fi network's (open: `wifi_open_ceiling`), BLE by the connection's
// pairing, ESP-NOW by the station's key.

import Digital from 'embedded:io/digital';
import Instrumentation from 'instrumentation';
import Preference from 'preference';
import Timer from 'timer';
import WiFi from 'wifi';
import { BleBinding } from '../bindings/ble/device.js';
import { createDeviceEspNow, WifiInterface, type DeviceRadio } from '../bindings/espnow/device.js';
import type { EspNowBinding } from '../bindings/espnow/link.js';
import { EstopSource } from '../hub/estop-frame.js';
import { CATALOG, CONFIG } from './boot.js';
import { DEVICE_BLE_QUEUE_BYTES, DEVICE_ESPNOW_QUEUE_BYTES, Pull, WifiMode, type DeviceConfig } from './config.js';
import { provisionCredentials, ProvisionSource } from './provision.js';
import { openDeviceRobot } from './robot.js';
import { attempt, keep, log, openNetworkListeners, random, tickEvery } from './runtime.js';
import { ClockNative } from './clock-native.js';
import { openStopLineNative } from './stop-native.js';
import { EspNowBindingNative } from './espnow-native.js';
import { FrameReaderNative } from './fast-native.js';
import { SampleRouterNative } from './route-native.js';
import { SampleWriterNative } from './sample-native.js';
import { latchesAfterReset, NativeStopPath, ResetCause } from './stop-path.js';
import { PreferenceStore } from './store.js';
import { ButtonSampler, DeviceTick, StopPathLatch } from './tick.js';
import { startDeviceUplink } from './uplink.js';
import { createDeviceHub, espnowKeys, wifiTierCeiling } from './wiring.js';

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
  // The time in C (device/native/clock.c): every part of the hub reads it, and a host function
  // costs XS a call where the script clock over Time.ticks runs its own steps at every read.
  const clock = new ClockNative();
  const store = new PreferenceStore(Preference);

  // 1. The stop line, driven to stop before anything else can fail.
  const robot = openDeviceRobot(config, CATALOG, clock);

  // 2. The native stop paths (docs/operations.md "Stops that do not need JavaScript"). The
  //    module also says why the chip last reset and whether this build has the task watchdog.
  const stopNative = attempt('stop-native', () => openStopLineNative());
  const resetCause = stopNative ? stopNative.resetCause() : ResetCause.UNKNOWN;
  log.event('reset-cause', resetCause);
  log.event('watchdog-s', stopNative ? stopNative.watchdogSeconds() : 0);

  // 3. The hub; a latch persisted before the restart stops the robot again here.
  //    The tick period and the heap reading feed loop-delay admission and the heap rung.
  // Each push's DATA frame is written in C (device/native/samplewriter.c), byte for byte what the hub writes in script.
  const hub = createDeviceHub({ clock, random, store, robot: robot.port, catalog: CATALOG, log, sampleWriter: new SampleWriterNative(), sampleRouter: new SampleRouterNative(), frameReader: (w) => new FrameReaderNative(w) }, config, Instrumentation);
  attempt('robot-uart', () => robot.connect(hub));
  //    A reset nobody chose (a panic, a watchdog, a brown-out) comes up latched: the robot does
  //    not resume after a crash until an operator has cleared (device/stop-path.ts).
  if (latchesAfterReset(resetCause)) hub.estop(EstopSource.WATCHDOG);

  // 4. The ESTOP button. A press counts at once, from the edge or, should an edge be missed,
  //    from the tick's poll; a release only after the input has read released for the debounce
  //    time, so a bouncing contact cannot latch again and again. A button that cannot be opened
  //    counts as held for good: without its ESTOP input the robot must not run.
  const e = config.estop;
  const mode = e.pull === Pull.UP ? Digital.InputPullUp : e.pull === Pull.DOWN ? Digital.InputPullDown : Digital.Input;
  const sampler = new ButtonSampler(hub, clock, e.level, e.debounceMs);
  const button = attempt('estop-button', () => {
    return new Digital({
      pin: e.pin,
      mode,
      edge: Digital.Rising | Digital.Falling,
      onReadable(this: Digital): void {
        sampler.sample(this.read());
      },
    });
  });
  if (button) {
    sampler.sample(button.read());
    keep.push(button);
  } else hub.setButton(true);

  // 4b. The native stop paths: the button's interrupt, and a guard on this loop's heartbeat,
  //     drive the stop line without JavaScript; their trips latch the hub here as a press (or
  //     the watchdog) would. Releases go through the native module from now on, which refuses
  //     while a trip is not yet latched. The JavaScript path above stays as the second path.
  let stopPath: NativeStopPath | null = null;
  if (stopNative) {
    const path = new NativeStopPath(stopNative, new StopPathLatch(hub, sampler));
    stopPath = attempt('stop-native-line', () => {
      stopNative.line(config.stop.pin, config.stop.level, () => {
        try {
          path.poll();
        } catch {
          log.event('stop-native-error');
        }
      });
      robot.gateRelease(stopNative);
      return path;
    });
    if (stopPath && button) attempt('stop-native-button', () => stopNative.watch(button, e.pin, e.level));
    keep.push(stopNative);
  }

  // 5. Nothing latched and the button up: the robot may move when commanded.
  if (!hub.latch.latched) robot.port.release();

  // 6. The links, each on its own.
  let ble: BleBinding | null = null;
  let espnow: { radio: DeviceRadio; binding: EspNowBinding } | null = null;
  let uplink: ReturnType<typeof startDeviceUplink> = null;
  const wifiUp = attempt('wifi', () => {
    startWifi(config);
    return true;
  });
  if (wifiUp) {
    const tierCeiling = wifiTierCeiling(config);
    if (config.wifi.password === '') log.event('wifi-open', tierCeiling);
    openNetworkListeners(hub, clock, config, tierCeiling);
    // The fleet uplink (`uplink_broker`; docs/fleet.md): it connects at its first tick, and
    // retries with backoff while the network or the broker is away.
    if (config.uplink) uplink = attempt('uplink', () => startDeviceUplink(hub, { clock, store, random, log }, config, CATALOG));
    if (config.espnow.enabled) {
      const e = config.espnow;
      espnow = attempt('espnow', () => {
        const keys = espnowKeys(config);
        return createDeviceEspNow({
          clock,
          attach: (link) => hub.attach(link),
          catalog: CATALOG,
          broadcast: e.broadcast,
          wifiInterface: config.wifi.mode === WifiMode.AP ? WifiInterface.ACCESS_POINT : WifiInterface.STATION,
          ...(keys.pmk ? { pmk: keys.pmk } : {}),
          peers: keys.peers,
          allowUnencrypted: e.allowUnencrypted,
          maxEncrypted: e.maxEncrypted,
          queueBytes: DEVICE_ESPNOW_QUEUE_BYTES,
          Binding: EspNowBindingNative,
          // §11.2: a station that is not paired may still stop the robot.
          strayEstop: (bytes, start, end) => {
            hub.estopFrame(bytes, start, end);
          },
        });
      });
      if (espnow) log.event('espnow-peers', e.peers.length, e.allowUnencrypted ? 1 : 0);
    }
  }
  if (config.ble.enabled) {
    ble = attempt(
      'ble',
      () =>
        new BleBinding({
          hub,
          clock,
          name: config.ble.name,
          link: { queue: { bytes: DEVICE_BLE_QUEUE_BYTES } },
          pairing: config.ble.pairing,
          tierCeiling: config.ble.ceiling,
          // The passkey is the pairing's display: the operator types it on the central.
          onPasskey: (passkey) => trace(`hub: ble passkey ${String(passkey).padStart(6, '0')}\n`),
          onWarning: (m) => trace(`hub: ble: ${m}\n`),
        }),
    );
  }
  // 6b. The credential table (device/provision.ts): the configured list, else the stored table,
  //     else a pairing token of operator tier, drawn here, once a radio runs, because the ESP32's
  //     RNG is truly random only then. The hub reads the table again. The pairing token is the
  //     one credential ever printed: on the debug console, which needs the USB cable (a release
  //     build prints nothing; docs/operations.md "The first operator credential").
  const prov = attempt('credentials', () => provisionCredentials(store, config.credentials, random));
  if (prov) {
    hub.reloadCredentials();
    log.event(`credentials-${prov.source}`, prov.entitled);
    if (prov.source === ProvisionSource.PAIRED && !wifiUp && !ble) log.event('pairing-without-radio');
    if (prov.pairingToken) trace(`hub: pairing operator ${prov.pairingToken}\n`);
  }
  log.event('ready', hub.latch.latched ? 1 : 0, config.slots);

  // 7. The tick: the native trips first, so that they latch before anything else runs (then the
  //    heartbeat the guard watches), the hub, then the button's poll and the radios' upkeep.
  //    A hub whose tick throws can no longer keep its deadman: it stops the robot.
  if (stopPath) attempt('stop-guard', () => stopPath.native.guard(config.stop.guardMs));
  const ticker = new DeviceTick(hub, robot.port, { stopPath, button, sampler, ble, radio: espnow ? espnow.radio : null, espnow: espnow ? espnow.binding : null, after: uplink }, log);
  tickEvery(config.tickMs, ticker);
}
