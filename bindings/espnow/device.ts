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
// station is dropped here and counted (`spoofed`).

import type { CatalogIndex } from '../../catalog/index.js';
import type { Clock, Link, LinkSink } from '../../hub/ports.js';
import type { EspNowNativeApi, NativeClassLookup, NativeLookup } from './embedded.js';
import { EspNowBinding, ESPNOW_MAX_ENCRYPTED_PEERS, RadioStatus, type EspNowOptions, type Radio, type RadioHandler } from './link.js';
import type { EspNowPairing } from './pairing.js';

// The XS globals (the SDK's xs.d.ts declares them the same way), scoped to this module.
declare const native: NativeLookup;
declare const Native: NativeClassLookup;

/** poll() results besides a datagram's length (native/espnow.c). */
const POLL_EMPTY = -1;
const POLL_SENT = 0x10000;
const POLL_SENT_FAILED = 0x10001;
/** Set in a datagram's result when it was addressed to the broadcast address (the length is the low byte). */
const POLL_TO_BROADCAST = 0x100;
const POLL_LENGTH = 0xff;
/** poll() writes the MAC and then up to 250 bytes. */
const POLL_BYTES = 256;
const MAC_BYTES = 6;
/** Events handled per wake-up: the ring (8) and the status, twice over; the rest posts again. */
const DRAIN_LIMIT = 18;

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

export function writeMac(mac: number, into: Uint8Array): void {
  const hi = Math.floor(mac / 0x100000000);
  const lo = mac >>> 0;
  into[0] = (hi >>> 8) & 0xff;
  into[1] = hi & 0xff;
  into[2] = lo >>> 24;
  into[3] = (lo >>> 16) & 0xff;
  into[4] = (lo >>> 8) & 0xff;
  into[5] = lo & 0xff;
}

export function readMac(from: Uint8Array): number {
  const hi = ((from[0] as number) << 8) | (from[1] as number);
  const lo = (((from[2] as number) << 24) | ((from[3] as number) << 16) | ((from[4] as number) << 8) | (from[5] as number)) >>> 0;
  return hi * 0x100000000 + lo;
}

/** The binding's Radio over esp_now_*. Allocation-free after construction. */
export class DeviceRadio implements Radio {
  /** Exceptions a handler threw while draining (they must not reach the native callback). */
  errors = 0;
  /** Datagrams addressed to broadcast that claimed a paired station's MAC: dropped. */
  spoofed = 0;
  private readonly radio: EspNowNative;
  /** The MACs in the radio's table as encrypted peers. */
  private readonly encrypted = new Set<number>();
  private handler: RadioHandler | null = null;
  private readonly mac = new Uint8Array(MAC_BYTES);
  private readonly pollBuf = new Uint8Array(POLL_BYTES);
  private readonly datagram = this.pollBuf.subarray(MAC_BYTES);

  constructor(options: DeviceRadioOptions = {}) {
    this.radio = new EspNowNative(
      () => {
        try {
          this.drain();
        } catch {
          this.errors++;
        }
      },
      options.wifiInterface ?? WifiInterface.STATION,
      options.pmk,
    );
  }

  setHandler(handler: RadioHandler): void {
    this.handler = handler;
  }

  addPeer(mac: number, lmk: Uint8Array | null): number {
    writeMac(mac, this.mac);
    const status = this.radio.addPeer(this.mac, lmk !== null, lmk ?? undefined);
    if (lmk !== null && (status === RadioStatus.OK || status === RadioStatus.EXISTS)) this.encrypted.add(mac);
    return status;
  }

  removePeer(mac: number): number {
    writeMac(mac, this.mac);
    this.encrypted.delete(mac);
    return this.radio.removePeer(this.mac);
  }

  send(mac: number, data: Uint8Array, length: number): number {
    writeMac(mac, this.mac);
    return this.radio.send(this.mac, data, length);
  }

  /** Hands the waiting radio events to the binding, oldest first, in the VM's thread. */
  drain(): void {
    const h = this.handler;
    for (let n = 0; n < DRAIN_LIMIT; n++) {
      const r = this.radio.poll(this.pollBuf);
      if (r === POLL_EMPTY) return;
      if (!h) continue;
      const mac = readMac(this.pollBuf);
      if (r === POLL_SENT || r === POLL_SENT_FAILED) h.sent(mac, r === POLL_SENT);
      else if ((r & POLL_TO_BROADCAST) !== 0 && this.encrypted.has(mac)) this.spoofed++;
      else h.received(mac, this.datagram, r & POLL_LENGTH);
    }
  }

  /** Datagrams the native ring had to refuse: loss the hub's ACK bitmask already counts. */
  dropped(): number {
    return this.radio.dropped();
  }

  postFailures(): number {
    return this.radio.postFailures();
  }

  close(): void {
    this.radio.close();
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
