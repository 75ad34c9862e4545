// One GATT server connection as a BleTransport: the link's notifications go out through
// `connection.notify(characteristic, value, callback)`, and the callback's status completes the
// notification in flight (BleLink.notified), which frees the queue's slot for the next one.
//
// In Moddable's ESP32 GATT server the JavaScript `notify` is
// `return native(…).call(this, characteristic, value)`; xsc compiles such a body into the host
// function itself, which receives every argument the caller passes, and the C side takes the
// third as the callback and calls it with 0 or a NimBLE status for each notification. It keeps
// the function without xsRemember, so the JavaScript side must keep it alive: one callback per
// connection, held in a field for the connection's life. BleLink's completion timeout only
// stands in for a completion that never comes.
//
// Platform-free (the connection is typed by what is used of it), so a Node test can drive it.
import type { BleLink, BleTransport, TickWake } from './link.js';

/** The status a notify that threw, or a callback handed something other than a number, reports (NimBLE statuses are positive). */
export const BLE_STATUS_THREW = -1;

/** What the binding uses of the stack's connection object. */
export interface GattPeer<Ch> {
  readonly maximumWrite: number;
  /** The SDK reads `value` as a buffer (xsmcGetBufferReadable): an ArrayBuffer or any view of one, exactly the notification. */
  notify(characteristic: Ch, value: ArrayBuffer | Uint8Array, callback: (status: number) => void): void;
  close(): void;
}

export class GattConnection<Ch = unknown, P extends GattPeer<Ch> = GattPeer<Ch>> implements BleTransport {
  readonly connection: P;
  /** The notify characteristic's host object, known once the client subscribes. */
  characteristic: Ch | null = null;
  link: BleLink | null = null;
  /** The completion handed to every notify: referenced here while any notification is in flight. */
  readonly completed: (status: number) => void;
  private readonly onClose: (conn: GattConnection<Ch, P>) => void;

  constructor(connection: P, onClose: (conn: GattConnection<Ch, P>) => void) {
    this.connection = connection;
    this.onClose = onClose;
    this.completed = (status: number): void => {
      if (this.link) this.link.notified(typeof status === 'number' ? status : status ? BLE_STATUS_THREW : 0);
    };
  }

  maximumWrite(): number {
    return this.connection.maximumWrite;
  }

  /**
   * `value` is exactly the notification (the link's queue hands out a view of its own staging
   * area, hub/bytes.ts): the stack copies it at once, and nothing is copied or allocated here.
   */
  notify(value: Uint8Array, _length: number): void {
    const ch = this.characteristic;
    if (ch === null) throw new Error('notifications not enabled');
    this.connection.notify(ch, value, this.completed);
  }

  close(): void {
    this.onClose(this);
    this.connection.close();
  }
}

/**
 * A GATT write from `connection` (the SDK's onWrite on the device, bindings/ble/device.ts): its
 * bytes to that connection's link. The SDK hands every write over as a new ArrayBuffer; the one
 * view made over it here is the only allocation per write besides the SDK's own buffer (the link
 * and the core allocate nothing for it). The device budget counts what this costs per write
 * (bench/device.bench.ts DeviceWorld.gattWriteCost).
 */
export function gattWritten<Ch, P extends GattPeer<Ch>>(conns: readonly GattConnection<Ch, P>[], value: ArrayBuffer, connection: P): void {
  for (let i = 0; i < conns.length; i++) {
    const c = conns[i] as GattConnection<Ch, P>;
    if (c.connection === connection) {
      if (c.link !== null) c.link.written(new Uint8Array(value), 0, value.byteLength);
      return;
    }
  }
}

/**
 * Every connection's link ticked at `now` (BleBinding.tick on the device, every hub tick),
 * backwards: a tick may end a connection. True when a link has counted a notification whose
 * completion never came (the stack's completions are not arriving). `wake` (the links'
 * BleLinkOptions.wake) becomes the earliest of the links' next tick times: before it, the binding
 * skips this (each link would find nothing due).
 */
export function tickConnections<Ch, P extends GattPeer<Ch>>(conns: readonly GattConnection<Ch, P>[], now: number, wake: TickWake): boolean {
  let unconfirmed = false;
  // (Declared once, out of the loop: a block that declares its own opens a scope on XS.)
  let link: BleLink | null;
  let due = Infinity;
  wake.dueAt = Infinity;
  try {
    for (let i = conns.length - 1; i >= 0; i--) {
      link = (conns[i] as GattConnection<Ch, P>).link;
      if (link === null) continue;
      link.tick(now);
      if (link.unconfirmed > 0) unconfirmed = true;
      if (link.dueAt < due) due = link.dueAt;
    }
  } catch (e) {
    // A link's tick threw (the device's tick counts it): every tick runs again until one completes.
    wake.dueAt = -Infinity;
    throw e;
  }
  // What the ticks made due (an event lowers `wake` too) stays.
  if (due < wake.dueAt) wake.dueAt = due;
  return unconfirmed;
}
