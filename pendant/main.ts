// The pendant's device entry (docs/pendant.md): the only place that wires Moddable modules to the
// pendant. `creation.main` in pendant/manifest.json names this module; after the SDK's setup
// modules have run, the runtime calls its default export. Not preloaded: it opens pins and the
// radio. pendant/boot.ts, which is, brings the settings and the catalog.
//
// Order: the pins first, so that a stop contact already open asserts from the first period (the
// client core owes the ESTOP to the first transport); then Wi-Fi, joined only so that the radio
// sits on the hub's channel (ESP-NOW peers share the channel of the interface it rides on); then
// the radio with the primary master key, the hub as its one peer, encrypted with this pendant's
// key; the session; and the control period.

import Analog from 'embedded:io/analog';
import Digital from 'embedded:io/digital';
import Time from 'time';
import Timer from 'timer';
import WiFi from 'wifi';
import { DeviceRadio, WifiInterface } from '../bindings/espnow/device.js';
import { EspNowConnector } from '../client/espnow.js';
import type { ClientClock, TimerHandle } from '../client/transport.js';
import { CATALOG, SETTINGS } from './boot.js';
import type { PendantIo } from './inputs.js';
import { Pendant } from './pendant.js';

/** Monotonic milliseconds over Time.ticks (a uint32 of FreeRTOS ms read as int32: differences are exact). */
class TicksClock implements ClientClock {
  private last = Time.ticks;
  private ms = this.last >>> 0;
  now(): number {
    const t = Time.ticks;
    this.ms += (t - this.last) >>> 0;
    this.last = t;
    return this.ms;
  }
  setTimer(ms: number, fn: () => void): TimerHandle {
    return Timer.set(fn, ms);
  }
  clearTimer(handle: TimerHandle): void {
    Timer.clear(handle as Timer);
  }
}

/** Objects whose callbacks the runtime calls: referenced for the life of the program. */
const keep: object[] = [];

export default function main(): void {
  const s = SETTINGS;
  const clock = new TicksClock();
  trace(`pendant: hub ${s.hubMac.toString(16)} ${s.lmk ? 'paired' : 'unencrypted'}\n`);

  // 1. Wi-Fi on the hub's channel: join its access point (or the network it is on). Without an
  //    SSID the station starts unconnected, on channel 1: the hub must then be on channel 1.
  if (s.wifi.ssid === '') {
    WiFi.mode = WiFi.Mode.station;
    trace('pendant: no wifi_ssid: the radio stays on channel 1\n');
  } else {
    const join = s.wifi.password === '' ? { ssid: s.wifi.ssid } : { ssid: s.wifi.ssid, password: s.wifi.password };
    let retry: Timer | null = null;
    const wifi = new WiFi(join, (message) => {
      if (message === WiFi.disconnected && !retry) {
        retry = Timer.set(() => {
          retry = null;
          try {
            WiFi.connect(join);
          } catch {
            trace('pendant: wifi retry failed\n');
          }
        }, 2000);
      }
    });
    keep.push(wifi);
  }

  // 2. The radio and its transport: the hub is the one peer, encrypted with this pendant's LMK.
  const radio = new DeviceRadio({ wifiInterface: WifiInterface.STATION, ...(s.pmk ? { pmk: s.pmk } : {}) });
  const connector = new EspNowConnector({ radio, hubMac: s.hubMac, lmk: s.lmk, clock });

  // 3. The pendant: its pins come in as the SDK's ECMA-419 classes.
  const io: PendantIo = { Digital: Digital as unknown as PendantIo['Digital'], Analog: Analog as unknown as PendantIo['Analog'] };
  const pendant = new Pendant({ io, settings: s, clock, transport: connector.factory, catalog: CATALOG, random: Math.random, linkLevel: () => connector.level() });
  pendant.start();

  // 4. The control period: the radio's events (a backstop for a wake-up the VM's queue refused), then the pendant.
  let last = -1;
  keep.push(
    Timer.repeat(() => {
      try {
        radio.drain();
        pendant.tick();
      } catch (e) {
        trace(`pendant: tick failed: ${e instanceof Error ? e.message : String(e)}\n`);
      }
      const st = pendant.status();
      if (st !== last) {
        last = st;
        trace(`pendant: status ${st} level ${connector.level()}\n`);
      }
    }, s.periodMs),
  );
  keep.push(pendant, radio);
}
