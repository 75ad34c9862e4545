// The ESP-NOW radio on the ESP32: the native module native/espnow.c behind the binding's Radio
// (link.ts), so the same EspNowBinding runs here and over the simulator (sim.ts). Only the
// device entry imports this module; the host build leaves it out (tsconfig.json) and
// scripts/check-native.mjs type-checks it without Node types.
//
// Events arrive from the Wi-Fi task through the module's ring: the module posts one message to
// the VM when the ring goes non-empty, and onReady drains it here, in the VM's thread. `drain`
// is also safe to call from the hub's tick, as a backstop for a post the VM's queue refused.
//
// Wi-Fi must be started (station or access point) before the radio is opened: ESP-NOW uses the
// channel of that interface.
//
// Keys (docs/security.md "ESP-NOW"): the primary master key is set when the radio opens; each
// paired station's local master key goes with its esp_now_add_peer (`encrypt`, `lmk`). The radio
// decrypts a paired station's datagrams and drops what does not decrypt. A datagram addressed to
// the broadcast address cannot have been encrypted: one that claims to come from a paired
// station is dropped by the radio (native-radio.ts NativeRadio) and counted (`spoofed`).

import type { CatalogIndex } from '../../catalog/index.js';
import type { Clock, Link, LinkSink } from '../../hub/ports.js';
import type { EspNowNativeApi, NativeClassLookup, NativeLookup } from './embedded.js';
import { EspNowBinding, ESPNOW_MAX_ENCRYPTED_PEERS, type EspNowOptions } from './link.js';
import { NativeRadio } from './native-radio.js';
import type { EspNowPairing } from './pairing.js';

// The XS globals (the SDK's xs.d.ts declares them the same way), scoped to this module.
declare const native: NativeLookup;
declare const Native: NativeClassLookup;

export const WifiInterface = Object.freeze({ STATION: 0, ACCESS_POINT: 1 } as const);

class EspNowNative extends Native('xs_espnow_destructor') implements EspNowNativeApi {
  constructor(onReady: () => void, ifidx: number, pmk: Uint8Array | undefined) {
    super();
    native('xs_espnow').call(this, onReady, ifidx, pmk);
  }
  addPeer(mac: Uint8Array, encrypt: boolean, lmk: Uint8Array | undefined): number {
    return native('xs_espnow_add_peer').call(this, mac, encrypt, lmk);
  }
  removePeer(mac: Uint8Array): number {
    return native('xs_espnow_remove_peer').call(this, mac);
  }
  send(mac: Uint8Array, data: Uint8Array, length: number): number {
    return native('xs_espnow_send').call(this, mac, data, length);
  }
  poll(into: Uint8Array): number {
    return native('xs_espnow_poll').call(this, into);
  }
  dropped(): number {
    return native('xs_espnow_dropped').call(this);
  }
  postFailures(): number {
    return native('xs_espnow_post_failures').call(this);
  }
  close(): void {
    native('xs_espnow_close').call(this);
  }
}

export interface DeviceRadioOptions {
  /** The Wi-Fi interface ESP-NOW rides on (WifiInterface; default the station). */
  readonly wifiInterface?: number;
  /** The 16-byte primary master key (esp_now_set_pmk), when any peer is paired. */
  readonly pmk?: Uint8Array;
}

/** The binding's Radio over esp_now_*: the native module opened under a NativeRadio. */
export class DeviceRadio extends NativeRadio {
  constructor(options: DeviceRadioOptions = {}) {
    super((onReady) => new EspNowNative(onReady, options.wifiInterface ?? WifiInterface.STATION, options.pmk));
  }
}

export interface DeviceEspNowOptions extends DeviceRadioOptions {
  readonly clock: Clock;
  readonly attach: (link: Link) => LinkSink;
  readonly catalog?: CatalogIndex;
  /** One broadcast segment (§10.6) for every peer of this radio. */
  readonly broadcast?: boolean;
  /** The paired stations, their keys and tier ceilings (EspNowOptions.peers). */
  readonly peers?: readonly EspNowPairing[];
  /** Unpaired stations speak unencrypted at observer tier (default false: ignored). */
  readonly allowUnencrypted?: boolean;
  /** Encrypted peers the build's radio holds (CONFIG_ESP_WIFI_ESPNOW_MAX_ENCRYPT_NUM; default 7). */
  readonly maxEncrypted?: number;
  /** An unpaired station's ESTOP frame (Hub.estopFrame). */
  readonly strayEstop?: (bytes: Uint8Array, start: number, end: number) => void;
  /** Each peer's egress queue in bytes (EspNowOptions.queueBytes; the device's is DEVICE_ESPNOW_QUEUE_BYTES). */
  readonly queueBytes?: number;
  /** The binding's class: EspNowBinding, or the device's with its send status in C (device/espnow-native.ts EspNowBindingNative). */
  readonly Binding?: new (options: EspNowOptions) => EspNowBinding;
}

/**
 * The device entry's one call: the radio and the binding over it. Call `binding.tick()` and
 * `radio.drain()` from the hub's tick.
 */
export function createDeviceEspNow(options: DeviceEspNowOptions): { radio: DeviceRadio; binding: EspNowBinding } {
  const radio = new DeviceRadio(options);
  try {
    const Binding = options.Binding ?? EspNowBinding;
    const binding = new Binding({
      clock: options.clock,
      radio,
      attach: options.attach,
      broadcast: options.broadcast === true,
      peers: options.peers ?? [],
      allowUnencrypted: options.allowUnencrypted === true,
      maxEncrypted: options.maxEncrypted ?? ESPNOW_MAX_ENCRYPTED_PEERS,
      ...(options.queueBytes !== undefined ? { queueBytes: options.queueBytes } : {}),
      ...(options.strayEstop ? { strayEstop: options.strayEstop } : {}),
    });
    return { radio, binding };
  } catch (e) {
    radio.close();
    throw e;
  }
}
