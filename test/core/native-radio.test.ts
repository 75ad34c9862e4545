// bindings/espnow/native-radio.ts: the binding's Radio over the ESP-NOW native module's face, what
// the device runs (bindings/espnow/device.ts DeviceRadio) and the device bench counts. Driven here
// over a module that behaves as native/espnow.c does (docs/protocol.md §13.3.8): one status slot
// polled before a ring of datagrams, the MAC's bytes and, into a large enough buffer, the MAC as a
// number, POLL_LAST on the event after which nothing waits, and onReady to wake the VM.
import { deepEqual, equal, ok, throws } from '../lib/assert.js';
import type { EspNowNativeApi } from '../../bindings/espnow/embedded.js';
import { RadioStatus, type RadioHandler } from '../../bindings/espnow/link.js';
import { MAC_BYTES, NativeRadio, POLL_BYTES, POLL_EMPTY, POLL_LAST, POLL_SENT, POLL_SENT_FAILED, POLL_TO_BROADCAST, readMac, writeMac } from '../../bindings/espnow/native-radio.js';

const A = 0x24000000001;
const B = 0xfedcba987654;

interface Event {
  readonly mac: number;
  /** A datagram's bytes, or null for a send status. */
  readonly data: Uint8Array | null;
  readonly ok?: boolean;
  readonly toBroadcast?: boolean;
}

class Module implements EspNowNativeApi {
  onReady: () => void = () => {};
  readonly events: Event[] = [];
  readonly sends: { mac: number; bytes: number[] }[] = [];
  readonly peers: { mac: number[]; encrypt: boolean }[] = [];
  polls = 0;
  addStatus = RadioStatus.OK as number;
  addPeer(mac: Uint8Array, encrypt: boolean, _lmk: Uint8Array | undefined): number {
    this.peers.push({ mac: Array.from(mac), encrypt });
    return this.addStatus;
  }
  removePeer(_mac: Uint8Array): number {
    return RadioStatus.OK;
  }
  send(mac: number | Uint8Array, data: Uint8Array, length: number): number {
    this.sends.push({ mac: typeof mac === 'number' ? mac : readMac(mac), bytes: Array.from(data.subarray(0, length)) });
    return RadioStatus.OK;
  }
  poll(into: Uint8Array): number {
    this.polls++;
    if (into.length < POLL_BYTES) throw new RangeError('poll buffer needs 256 bytes');
    const e = this.events.shift();
    if (e === undefined) return POLL_EMPTY;
    writeMac(e.mac, into);
    let r: number;
    if (e.data === null) r = e.ok ? POLL_SENT : POLL_SENT_FAILED;
    else {
      into.set(e.data, MAC_BYTES);
      r = e.data.length | (e.toBroadcast ? POLL_TO_BROADCAST : 0);
    }
    if (into.length >= POLL_BYTES + 8) new DataView(into.buffer, into.byteOffset + POLL_BYTES, 8).setFloat64(0, e.mac, true);
    if (this.events.length === 0) r |= POLL_LAST;
    return r;
  }
  dropped(): number {
    return 3;
  }
  postFailures(): number {
    return 1;
  }
  close(): void {}
}

class Handler implements RadioHandler {
  readonly got: string[] = [];
  throwOn = -1;
  sent(mac: number, ok: boolean): void {
    this.got.push(`sent ${mac.toString(16)} ${ok}`);
  }
  received(mac: number, data: Uint8Array, length: number): void {
    if (length === this.throwOn) throw new Error('handler failed');
    this.got.push(`received ${mac.toString(16)} ${Array.from(data.subarray(0, length)).join(',')}`);
  }
}

function rig(): { radio: NativeRadio; module: Module; handler: Handler } {
  const module = new Module();
  const radio = new NativeRadio((onReady) => {
    module.onReady = onReady;
    return module;
  });
  const handler = new Handler();
  radio.setHandler(handler);
  return { radio, module, handler };
}

describe('bindings/espnow/native-radio: the Radio over the native module', () => {
  it('turns MACs into their six bytes and back, big-endian, over all 48 bits', () => {
    const b = new Uint8Array(MAC_BYTES);
    writeMac(B, b);
    deepEqual(Array.from(b), [0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54]);
    equal(readMac(b), B);
    writeMac(A, b);
    equal(readMac(b), A);
  });

  it('sends with the MAC as the number the binding keeps, and adds peers by their bytes', () => {
    const { radio, module } = rig();
    equal(radio.send(B, Uint8Array.of(1, 2, 3, 4), 3), RadioStatus.OK);
    deepEqual(module.sends, [{ mac: B, bytes: [1, 2, 3] }]);
    equal(radio.addPeer(A, new Uint8Array(16)), RadioStatus.OK);
    deepEqual(module.peers, [{ mac: [0x02, 0x40, 0x00, 0x00, 0x00, 0x01], encrypt: true }]);
    equal(radio.dropped(), 3);
    equal(radio.postFailures(), 1);
  });

  it('hands every waiting event to the binding in order when the module wakes it, and stops at the last without polling again', () => {
    const { module, handler } = rig();
    module.events.push({ mac: A, data: null, ok: true }, { mac: B, data: Uint8Array.of(9, 8, 7) }, { mac: A, data: null, ok: false });
    module.onReady();
    deepEqual(handler.got, [`sent ${A.toString(16)} true`, `received ${B.toString(16)} 9,8,7`, `sent ${A.toString(16)} false`]);
    equal(module.polls, 3, 'the third event said it was the last');
    module.onReady();
    equal(module.polls, 4, 'a wake-up with nothing waiting polls once');
  });

  it('drains at most 18 events a wake-up: the rest stay for the next', () => {
    const { module, handler } = rig();
    for (let i = 0; i < 20; i++) module.events.push({ mac: A, data: Uint8Array.of(i + 1) });
    module.onReady();
    equal(handler.got.length, 18);
    equal(module.events.length, 2);
    module.onReady();
    equal(handler.got.length, 20);
  });

  it('drops a broadcast that claims an encrypted peer’s MAC and counts it; an unencrypted one’s goes on', () => {
    const { radio, module, handler } = rig();
    radio.addPeer(A, new Uint8Array(16));
    module.events.push({ mac: A, data: Uint8Array.of(1), toBroadcast: true }, { mac: B, data: Uint8Array.of(2), toBroadcast: true }, { mac: A, data: Uint8Array.of(3) });
    module.onReady();
    equal(radio.spoofed, 1);
    deepEqual(handler.got, [`received ${B.toString(16)} 2`, `received ${A.toString(16)} 3`]);
  });

  it('keeps a peer whose adding failed out of the encrypted set, and takes it out on removal', () => {
    const { radio, module, handler } = rig();
    module.addStatus = RadioStatus.FULL;
    radio.addPeer(A, new Uint8Array(16));
    module.events.push({ mac: A, data: Uint8Array.of(1), toBroadcast: true });
    module.onReady();
    equal(radio.spoofed, 0, 'not in the radio’s table as encrypted');
    module.addStatus = RadioStatus.OK;
    radio.addPeer(B, new Uint8Array(16));
    radio.removePeer(B);
    module.events.push({ mac: B, data: Uint8Array.of(2), toBroadcast: true });
    module.onReady();
    equal(radio.spoofed, 0);
    equal(handler.got.length, 2);
  });

  it('never lets a handler’s exception reach the module: counted, and the next wake-up goes on', () => {
    const { radio, module, handler } = rig();
    handler.throwOn = 2;
    module.events.push({ mac: A, data: Uint8Array.of(1, 1) }, { mac: A, data: Uint8Array.of(5) });
    module.onReady();
    equal(radio.errors, 1);
    module.onReady();
    deepEqual(handler.got, [`received ${A.toString(16)} 5`]);
    module.events.push({ mac: A, data: Uint8Array.of(1, 1) });
    throws(() => radio.drain());
    equal(radio.errors, 1, 'drain() itself throws to its caller (the tick, which has its own catch)');
  });

  it('discards events while no binding is set', () => {
    const module = new Module();
    const radio = new NativeRadio((onReady) => {
      module.onReady = onReady;
      return module;
    });
    module.events.push({ mac: A, data: null, ok: true });
    module.onReady();
    equal(module.events.length, 0);
    ok(radio.errors === 0);
  });
});
