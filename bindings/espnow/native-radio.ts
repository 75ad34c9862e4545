// The binding's Radio (link.ts) over the ESP-NOW native module's face (native/espnow.c,
// embedded.d.ts EspNowNativeApi), without the SDK: the MACs turned to and from bytes, the sends,
// and the drain of the module's ring in the VM's thread. bindings/espnow/device.ts's DeviceRadio
// opens the native module under it; the device bench (bench/device.bench.ts) runs this same code
// over a stand-in module, so that the device budget counts what the device runs for every
// datagram and send status (docs/performance.md "Fits the ESP32").
//
// A datagram addressed to the broadcast address cannot have been encrypted: one that claims to
// come from a paired station is dropped here and counted (`spoofed`).

import type { EspNowNativeApi } from './embedded.js';
import type { Radio, RadioHandler } from './link.js';
import { RadioStatus } from './link.js';

/** poll() results besides a datagram's length (native/espnow.c). */
export const POLL_EMPTY = -1;
export const POLL_SENT = 0x10000;
export const POLL_SENT_FAILED = 0x10001;
/** Set in a datagram's result when it was addressed to the broadcast address (the length is the low byte). */
export const POLL_TO_BROADCAST = 0x100;
export const POLL_LENGTH = 0xff;
/** Set in any event's result when nothing else waits after it: the drain stops without polling again. */
export const POLL_LAST = 0x20000;
/** An event's result without POLL_LAST. */
export const POLL_EVENT = 0x1ffff;
/** poll() writes the MAC and then up to 250 bytes; into a buffer of POLL_BYTES + 8, the MAC as a number at POLL_BYTES too. */
export const POLL_BYTES = 256;
export const MAC_BYTES = 6;
/** Events handled per wake-up: the ring (8) and the status, twice over; the rest posts again. */
const DRAIN_LIMIT = 18;

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

/** The binding's Radio over the native module. Allocation-free after construction. */
export class NativeRadio implements Radio {
  /** Exceptions a handler threw while draining (they must not reach the native callback). */
  errors = 0;
  /** Datagrams addressed to broadcast that claimed a paired station's MAC: dropped. */
  spoofed = 0;
  protected readonly radio: EspNowNativeApi;
  /** The MACs in the radio's table as encrypted peers. */
  private readonly encrypted = new Set<number>();
  private handler: RadioHandler | null = null;
  private readonly mac = new Uint8Array(MAC_BYTES);
  /** What poll() writes: the MAC's bytes, the datagram, and the MAC as a number (`from`). */
  private readonly pollBuf = new Uint8Array(POLL_BYTES + 8);
  private readonly datagram = this.pollBuf.subarray(MAC_BYTES);
  private readonly from = new Float64Array(this.pollBuf.buffer, POLL_BYTES, 1);

  /** `open`: the native module, given the function it calls when its ring goes non-empty. */
  constructor(open: (onReady: () => void) => EspNowNativeApi) {
    this.radio = open(() => {
      try {
        this.drain();
      } catch {
        this.errors++;
      }
    });
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

  /** The module takes the MAC as the number the binding keeps it as. */
  send(mac: number, data: Uint8Array, length: number): number {
    return this.radio.send(mac, data, length);
  }

  /** Hands the waiting radio events to the binding, oldest first, in the VM's thread. */
  drain(): void {
    const h = this.handler;
    // (Declared once, out of the loop: a block that declares its own opens a scope on XS.)
    let r = 0;
    let e = 0;
    let mac = 0;
    for (let n = 0; n < DRAIN_LIMIT; n++) {
      r = this.radio.poll(this.pollBuf);
      if (r === POLL_EMPTY) return;
      if (h !== null) {
        e = r & POLL_EVENT;
        mac = this.from[0] as number;
        if (e === POLL_SENT || e === POLL_SENT_FAILED) h.sent(mac, e === POLL_SENT);
        else if ((e & POLL_TO_BROADCAST) !== 0 && this.encrypted.has(mac)) this.spoofed++;
        else h.received(mac, this.datagram, e & POLL_LENGTH);
      }
      if ((r & POLL_LAST) !== 0) return;
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
