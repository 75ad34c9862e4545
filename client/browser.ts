// Browser transports for the hub client (docs/client.md): WebSocket (one binary message per
// frame, §2) and Web Bluetooth (the hub's GATT service, frames cut into fragments, §13.4).
//
// The browser objects are described here by the few members the transports use, not by the
// DOM's own types, so this file type-checks in the Node build too and its tests run on Node:
// the DOM's WebSocket, `navigator.bluetooth` and a BluetoothDevice (@types/web-bluetooth)
// are all assignable to these shapes, as are the `ws` package's WebSocket and test fakes.

import { BLE_UUIDS } from '../bindings/ble/uuids.js';
import { CLIENT_REASSEMBLY, Fragmenter, fragmentSize, FRAGMENT_MIN_BYTES, Reassembler } from '../bindings/ble/fragment.js';
import { HubClient, type HubClientOptions } from './core.js';
import type { ClientClock, ClientTransport, TransportFactory } from './transport.js';

/** Monotonic milliseconds and the page's timers. */
export const browserClock: ClientClock = Object.freeze({
  now: () => performance.now(),
  setTimer: (ms: number, fn: () => void): unknown => setTimeout(fn, ms),
  clearTimer: (h: unknown): void => clearTimeout(h as Parameters<typeof clearTimeout>[0]),
});

// ---------------------------------------------------------------------------------------------
// WebSocket

/** What the transport uses of a WebSocket (the DOM's, or the `ws` package's on Node). */
export interface WebSocketLike {
  binaryType: string;
  readonly readyState: number;
  send(data: Uint8Array<ArrayBuffer>): void;
  close(code?: number): void;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  addEventListener(type: 'open' | 'message' | 'close' | 'error', listener: (ev: any) => void): void;
}

export type WebSocketConstructor = new (url: string) => WebSocketLike;

const WS_OPEN = 1;

class WebSocketTransport implements ClientTransport {
  onFrame: ((bytes: Uint8Array) => void) | null = null;
  onClose: (() => void) | null = null;
  private closed = false;

  constructor(private readonly ws: WebSocketLike) {
    ws.addEventListener('message', (ev: { data: unknown }) => {
      if (this.closed || !this.onFrame) return;
      const d = ev.data;
      // A text message is no frame (§2): handed on empty, the core counts and reports it.
      if (d instanceof ArrayBuffer) this.onFrame(new Uint8Array(d));
      else if (ArrayBuffer.isView(d)) this.onFrame(new Uint8Array(d.buffer, d.byteOffset, d.byteLength));
      else this.onFrame(new Uint8Array(0));
    });
    ws.addEventListener('close', () => this.ended());
  }

  send(bytes: Uint8Array): void {
    if (!this.closed && this.ws.readyState === WS_OPEN) this.ws.send(bytes.slice());
  }

  close(): void {
    if (this.closed) return;
    this.ws.close(1000);
    this.ended();
  }

  private ended(): void {
    if (this.closed) return;
    this.closed = true;
    const h = this.onClose;
    this.onClose = null;
    if (h) h();
  }
}

/** Opens a WebSocket to the hub for each (re)connect; binary messages only. */
export function webSocketTransport(url: string, WebSocketClass?: WebSocketConstructor): TransportFactory {
  return () =>
    new Promise<ClientTransport>((resolve, reject) => {
      const Ctor = WebSocketClass ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
      if (!Ctor) {
        reject(new Error('no WebSocket in this environment'));
        return;
      }
      const ws = new Ctor(url);
      ws.binaryType = 'arraybuffer';
      let open = false;
      ws.addEventListener('open', () => {
        open = true;
        resolve(new WebSocketTransport(ws));
      });
      const failed = (): void => {
        if (!open) reject(new Error(`cannot open ${url}`));
      };
      ws.addEventListener('error', failed);
      ws.addEventListener('close', failed);
    });
}

// ---------------------------------------------------------------------------------------------
// Web Bluetooth

/** A GATT characteristic as the transport uses it (BluetoothRemoteGATTCharacteristic). */
export interface GattCharacteristicLike {
  readonly value?: DataView | null | undefined;
  writeValueWithoutResponse(value: Uint8Array<ArrayBuffer>): Promise<void>;
  writeValueWithResponse(value: Uint8Array<ArrayBuffer>): Promise<void>;
  startNotifications(): Promise<unknown>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  addEventListener(type: 'characteristicvaluechanged', listener: (ev: any) => void): void;
}

export interface GattServiceLike {
  getCharacteristic(uuid: string): Promise<GattCharacteristicLike>;
}

export interface GattServerLike {
  readonly connected: boolean;
  connect(): Promise<GattServerLike>;
  disconnect(): void;
  getPrimaryService(uuid: string): Promise<GattServiceLike>;
}

/** A BluetoothDevice: what `navigator.bluetooth.requestDevice` resolves with. */
export interface BluetoothDeviceLike {
  readonly name?: string | undefined;
  readonly gatt?: GattServerLike | undefined;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  addEventListener(type: 'gattserverdisconnected', listener: (ev: any) => void): void;
}

export interface BluetoothLike {
  requestDevice(options: { filters: { services: string[] }[]; optionalServices?: string[] }): Promise<BluetoothDeviceLike>;
}

/**
 * Asks the user to pick a hub (the browser's chooser, filtered on the hub's service). Call it
 * from a user gesture (a click); `navigator.bluetooth` is the argument.
 */
export function requestHubDevice(bluetooth: BluetoothLike): Promise<BluetoothDeviceLike> {
  return bluetooth.requestDevice({ filters: [{ services: [BLE_UUIDS.service] }] });
}

export interface BluetoothTransportOptions {
  /**
   * Bytes per write, ATT MTU − 3. Web Bluetooth does not tell the negotiated MTU, so the
   * default is the smallest (20), which every stack carries; set it when the MTU is known
   * (an ESP32 hub and Chrome on Android typically agree on 247: 244).
   */
  fragmentBytes?: number;
  /** Write with response: each fragment acknowledged by the hub's stack. Default without. */
  withResponse?: boolean;
  /** For the reassembly timeout of notifications (§13.4). Default performance.now. */
  now?: () => number;
}

class BluetoothTransport implements ClientTransport {
  onFrame: ((bytes: Uint8Array) => void) | null = null;
  onClose: (() => void) | null = null;
  private closed = false;
  private readonly queue: Uint8Array<ArrayBuffer>[] = [];
  private writing = false;
  private readonly fragmenter = new Fragmenter();
  private readonly size: number;
  private readonly scratch: Uint8Array;
  private readonly reassembler: Reassembler;
  private readonly now: () => number;

  constructor(
    private readonly server: GattServerLike,
    private readonly write: GattCharacteristicLike,
    notify: GattCharacteristicLike,
    device: BluetoothDeviceLike,
    private readonly withResponse: boolean,
    fragmentBytes: number,
    now: () => number,
  ) {
    this.size = fragmentSize(fragmentBytes);
    this.scratch = new Uint8Array(this.size);
    this.now = now;
    // A refused reassembly is handed on as bytes that fail the core's own checks the same
    // way (fragment.ts ReassemblySink), so the core counts and reports it.
    const deliver = (b: Uint8Array, s: number, e: number): void => {
      if (!this.closed && this.onFrame) this.onFrame(b.subarray(s, e));
    };
    this.reassembler = new Reassembler({ frame: deliver, refuse: (_code, b, s, e) => deliver(b, s, e) }, CLIENT_REASSEMBLY);
    notify.addEventListener('characteristicvaluechanged', () => {
      const v = notify.value;
      if (this.closed || !v) return;
      this.reassembler.push(new Uint8Array(v.buffer, v.byteOffset, v.byteLength), 0, v.byteLength, this.now());
    });
    device.addEventListener('gattserverdisconnected', () => this.ended());
  }

  send(bytes: Uint8Array): void {
    if (this.closed) return;
    const f = this.fragmenter;
    f.begin(bytes, 0, bytes.length);
    for (let n = f.next(this.scratch, this.size); n > 0; n = f.next(this.scratch, this.size)) this.queue.push(this.scratch.slice(0, n));
    this.pump();
  }

  /**
   * §11.2: the ESTOP frame goes as one raw write right after the write in flight, ahead of
   * every queued fragment; its first byte 0xE5 tells the hub it is whole (§13.4).
   */
  sendAhead(bytes: Uint8Array): void {
    if (this.closed) return;
    this.queue.unshift(bytes.slice());
    this.pump();
  }

  close(): void {
    if (this.closed) return;
    this.queue.length = 0;
    if (this.server.connected) this.server.disconnect();
    this.ended();
  }

  private pump(): void {
    if (this.writing || this.closed) return;
    const next = this.queue.shift();
    if (!next) return;
    this.writing = true;
    // Web Bluetooth allows one GATT operation at a time: the next write waits for this one.
    const p = this.withResponse ? this.write.writeValueWithResponse(next) : this.write.writeValueWithoutResponse(next);
    p.then(
      () => {
        this.writing = false;
        this.pump();
      },
      () => {
        // A lost fragment breaks the frame it belongs to; the session resumes on a new connection.
        this.writing = false;
        this.close();
      },
    );
  }

  private ended(): void {
    if (this.closed) return;
    this.closed = true;
    this.queue.length = 0;
    this.reassembler.reset();
    const h = this.onClose;
    this.onClose = null;
    if (h) h();
  }
}

/**
 * Connects to the hub's GATT service on `device` for each (re)connect: the notify
 * characteristic is subscribed before the transport is handed to the core, so that nothing
 * the hub answers to HELLO is missed. Reconnecting needs no new user gesture.
 */
export function bluetoothTransport(device: BluetoothDeviceLike, o: BluetoothTransportOptions = {}): TransportFactory {
  const now = o.now ?? (() => performance.now());
  return async () => {
    const gatt = device.gatt;
    if (!gatt) throw new Error('the device has no GATT server');
    const server = gatt.connected ? gatt : await gatt.connect();
    const service = await server.getPrimaryService(BLE_UUIDS.service);
    const write = await service.getCharacteristic(BLE_UUIDS.write);
    const notify = await service.getCharacteristic(BLE_UUIDS.notify);
    const t = new BluetoothTransport(server, write, notify, device, o.withResponse === true, o.fragmentBytes ?? FRAGMENT_MIN_BYTES, now);
    await notify.startNotifications();
    return t;
  };
}

// ---------------------------------------------------------------------------------------------
// Clients

/** HubClientOptions without the transport; the clock defaults to the page's. */
export type BrowserClientOptions = Omit<HubClientOptions, 'transport' | 'clock'> & Partial<Pick<HubClientOptions, 'clock'>>;

function options(o: BrowserClientOptions, transport: TransportFactory): HubClientOptions {
  return { random: Math.random, ...o, clock: o.clock ?? browserClock, transport };
}

export function createWebSocketClient(url: string, o: BrowserClientOptions, WebSocketClass?: WebSocketConstructor): HubClient {
  return new HubClient(options(o, webSocketTransport(url, WebSocketClass)));
}

export function createBluetoothClient(device: BluetoothDeviceLike, o: BrowserClientOptions & BluetoothTransportOptions): HubClient {
  return new HubClient(options(o, bluetoothTransport(device, o)));
}

/** Connects over WebSocket and resolves once the session is open. */
export async function connectWebSocket(url: string, o: BrowserClientOptions, WebSocketClass?: WebSocketConstructor): Promise<HubClient> {
  const c = createWebSocketClient(url, o, WebSocketClass);
  await c.connect();
  return c;
}

/** Connects over Web Bluetooth (a device from `requestHubDevice`) and resolves once the session is open. */
export async function connectBluetooth(device: BluetoothDeviceLike, o: BrowserClientOptions & BluetoothTransportOptions): Promise<HubClient> {
  const c = createBluetoothClient(device, o);
  await c.connect();
  return c;
}
