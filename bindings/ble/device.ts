// The BLE binding on the device: Moddable's ECMA-419 GATT server (NimBLE) under the
// platform-free BleLink. One hub service with a write and a notify characteristic
// (uuids.ts, docs/protocol.md §13.4); one BleLink per connection, attached to the hub.
// Excluded from the host build; the device entry constructs a BleBinding and calls its
// `tick` from the same timer that ticks the hub.
//
// The notification queue is paced by the completion callback of `connection.notify`
// (gatt-connection.ts): the SDK's `notify` is compiled into its host function, which takes a
// third argument as the callback and calls it with 0 or a NimBLE status for each notification.
// BleLink's timeout (BLE_NOTIFY_TIMEOUT_MS) only stands in for a completion that never comes.
//
// Security (docs/security.md "BLE"): the GATT server asks every central for LE Secure Connections
// pairing as it connects, and keeps the keys (bonding), unless pairing is off. A connection's
// tier ceiling is observer until the server reports it secured (`onSecured`: encrypted, and
// authenticated when pairing is by passkey), then the configured ceiling (security.ts). The
// passkey, when pairing asks for one, goes to `onPasskey` (the device entry prints it).

import { GATTServer, type GATTServerCharacteristic, type GATTServerConnection } from 'embedded:io/bluetoothle/peripheral';
import { Tier } from '../../catalog/schema.js';
import type { Clock } from '../../hub/ports.js';
import type { HubAttach } from '../link.js';
import { utf8ByteLength, utf8Write } from '../../hub/utf8.js';
import { GattConnection, gattWritten, tickConnections } from './gatt-connection.js';
import { BleLink, type BleLinkOptions } from './link.js';
import { BlePairing, bleTierCeiling, gattSecurity, type BlePairingName, type BleSecurityState } from './security.js';
import { BLE_UUIDS } from './uuids.js';

/**
 * Preferred ATT MTU: 247 makes a 244-byte notification, which with its 4-byte L2CAP and 3-byte
 * ATT headers fills one 251-byte LE data packet exactly (the largest with Data Length Extension).
 */
export const BLE_PREFERRED_MTU = 247;

export { BLE_STATUS_THREW } from './gatt-connection.js';

type Conn = GattConnection<GATTServerCharacteristic, GATTServerConnection>;

export interface BleBindingOptions {
  readonly hub: HubAttach;
  readonly clock: Clock;
  /** The advertised name (in the scan response; the advertisement carries the service UUID). */
  readonly name: string;
  readonly mtu?: number;
  readonly link?: BleLinkOptions;
  readonly onWarning?: (message: string) => void;
  /** How centrals pair (default just-works). */
  readonly pairing?: BlePairingName;
  /** The highest tier over a secured connection (default maintainer). */
  readonly tierCeiling?: number;
  /** The six-digit passkey to show the operator, when pairing is by passkey. */
  readonly onPasskey?: (passkey: number) => void;
}

export class BleBinding {
  private readonly server: GATTServer;
  private readonly hub: HubAttach;
  private readonly clock: Clock;
  private readonly linkOptions: BleLinkOptions | undefined;
  private readonly conns: Conn[] = [];
  private readonly warn: (message: string) => void;
  private warnedUnconfirmed = false;
  private readonly pairing: BlePairingName;
  private readonly securedCeiling: number;
  private readonly passkey: ((passkey: number) => void) | undefined;

  constructor(options: BleBindingOptions) {
    this.hub = options.hub;
    this.clock = options.clock;
    this.linkOptions = options.link;
    this.warn = options.onWarning ?? ((): void => {});
    this.pairing = options.pairing ?? BlePairing.JUST_WORKS;
    this.securedCeiling = options.tierCeiling ?? Tier.maintainer;
    this.passkey = options.onPasskey;
    const security = gattSecurity(this.pairing);
    const name = options.name;
    const nameBytes = new Uint8Array(utf8ByteLength(name));
    utf8Write(name, nameBytes, 0);
    const self = this;
    const P = GATTServer.properties;
    this.server = new GATTServer({
      mtu: options.mtu ?? BLE_PREFERRED_MTU,
      ...(security ? { security } : {}),
      services: [
        // Generic Access: NimBLE takes the device name as a static value only.
        { uuid: '1800', characteristics: [{ uuid: '2a00', properties: P.read, value: nameBytes }] },
        {
          uuid: BLE_UUIDS.service,
          characteristics: [
            {
              uuid: BLE_UUIDS.write,
              properties: P.writeWithOutResponse | P.write,
              onWrite(value: ArrayBuffer, connection: GATTServerConnection): void {
                // NimBLE's host task waits for this callback: the core handles the frame and returns.
                gattWritten(self.conns, value, connection);
              },
            },
            {
              uuid: BLE_UUIDS.notify,
              properties: P.notify,
              onSubscribe(this: GATTServerCharacteristic, connection: GATTServerConnection): void {
                self.onSubscribe(this, connection, true);
              },
              onUnsubscribe(this: GATTServerCharacteristic, connection: GATTServerConnection): void {
                self.onSubscribe(this, connection, false);
              },
            },
          ],
        },
      ],
      onReady(): void {
        this.startAdvertising({ flags: 6, services: [BLE_UUIDS.service] }, { name });
      },
      onConnect(connection: GATTServerConnection): void {
        self.onConnect(connection);
      },
      onDisconnect(connection: GATTServerConnection): void {
        self.onDisconnect(connection);
      },
      onWarning(message: string): void {
        self.warn(message);
      },
      onSecured(connection: GATTServerConnection, state: BleSecurityState): void {
        self.onSecured(connection, state);
      },
      onPasskey(connection: GATTServerConnection, action: string, data?: number | ArrayBuffer): void {
        self.onPasskey(connection, action, data);
      },
    });
  }

  /**
   * When the links' ticks next have work (link.ts TickWake: the links lower it, tickConnections
   * sets it): a tick before it has nothing to do.
   */
  dueAt = -Infinity;

  /** Reassembly timeouts, notification retries, the detectors' windows: call every hub tick. */
  tick(now: number = this.clock.now()): void {
    if (now < this.dueAt) return;
    if (tickConnections(this.conns, now, this) && !this.warnedUnconfirmed) {
      this.warnedUnconfirmed = true;
      this.warn('BLE: notify completions are not arriving; notifications are paced by the timeout');
    }
  }

  /** Connections open now. */
  get connections(): number {
    return this.conns.length;
  }

  close(): void {
    const open = this.conns.slice();
    for (let i = 0; i < open.length; i++) {
      const c = open[i] as Conn;
      if (c.link) c.link.close();
      else this.forget(c);
    }
    this.server.close();
  }

  /** A connection the link closed (the core parked or closed its session). */
  forget(conn: Conn): void {
    const i = this.conns.indexOf(conn);
    if (i >= 0) this.conns.splice(i, 1);
  }

  private find(connection: GATTServerConnection): Conn | undefined {
    for (let i = 0; i < this.conns.length; i++) if ((this.conns[i] as Conn).connection === connection) return this.conns[i];
    return undefined;
  }

  private onConnect(connection: GATTServerConnection): void {
    const conn = new GattConnection<GATTServerCharacteristic, GATTServerConnection>(connection, (c) => this.forget(c));
    this.conns.push(conn);
    // Observer until the stack reports the connection secured (onSecured).
    conn.link = BleLink.attach(this.hub, conn, this.clock, { ...this.linkOptions, tierCeiling: Tier.observer, wake: this }, false);
  }

  /** The stack finished encrypting the connection (a new pairing, or a bonded central's keys): its ceiling follows. */
  private onSecured(connection: GATTServerConnection, state: BleSecurityState): void {
    const conn = this.find(connection);
    if (!conn || !conn.link) return;
    const ceiling = bleTierCeiling(this.pairing, this.securedCeiling, state);
    conn.link.setTierCeiling(ceiling);
    if (ceiling === Tier.observer && this.pairing !== BlePairing.OFF) this.warn('BLE: a connection secured below what pairing asks for stays at observer tier');
  }

  private onPasskey(connection: GATTServerConnection, action: string, data: number | ArrayBuffer | undefined): void {
    if (action === 'display' && typeof data === 'number') {
      if (this.passkey) this.passkey(data);
      return;
    }
    // The hub has no keys nor a confirm button: a numeric comparison is declined.
    if (action === 'compareNumber') {
      try {
        connection.replyToPasskey('compareNumber', false);
      } catch {
        this.warn('BLE: declining a numeric comparison failed');
      }
    }
  }

  private onDisconnect(connection: GATTServerConnection): void {
    const conn = this.find(connection);
    if (!conn) return;
    this.forget(conn);
    conn.link?.disconnected();
  }

  private onSubscribe(characteristic: GATTServerCharacteristic, connection: GATTServerConnection, on: boolean): void {
    const conn = this.find(connection);
    if (!conn || !conn.link) return;
    if (on) conn.characteristic = characteristic;
    conn.link.subscribed(on);
  }
}
