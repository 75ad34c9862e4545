// As typings/embedded_io/ble/peripheral.d.ts of the SDK, with the deviations the BLE binding
// found in the SDK's ESP32 GATT server:
//   - the connection's getter is `maximumWrite` (ATT MTU − 3); the typing spells it `maxinumWrite`;
//   - `notify`'s value is any buffer (xsmcGetBufferReadable), and its callback receives a number,
//     0 or a NimBLE status, for each notification; the typing says an Error. The JS method is
//     `return native(…).call(this, characteristic, value)`, which xsc replaces by the host
//     function itself (xs/sources/xsSyntaxical.c, fxCheckNativeFunction), so a third argument
//     does reach xs_gattserverconnection_notify (it reads the callback when argc > 2);
//   - `onUnsubscribe` has `this` and one argument like `onSubscribe` (the typing declares two);
//   - `GATTServer.close()` always exists (the typing makes it optional);
//   - the `security` option is what the ESP32 server reads (`GATTServerSecurityOptions`: `bond`,
//     `immediate`, `authenticate`, `display`, `keyboard`, true or "yes/no"), not the typing's
//     `ioCapabilities`; its presence alone turns on LE Secure Connections pairing; `onSecured`
//     reports every completed encryption (a new pairing, or a bonded central's stored keys),
//     `onPasskey` may also be called with "none";
//   - the connection, characteristic, service and options interfaces are exported.
// manifest.json hands mcconfig this file in place of the SDK's (device/typings/README.md).
declare module 'embedded:io/bluetoothle/peripheral' {
  import type { GATTSecurityState } from 'embedded:io/bluetoothle/_common';

  /**
   * Pairing as the ESP32 server reads it: given at all, LE Secure Connections with these I/O
   * capabilities (none: "Just Works"; `display`: the server picks a passkey and hands it to
   * `onPasskey` with "display"; `display` and `keyboard: "yes/no"`: numeric comparison).
   * `authenticate` (MITM protection) needs `display` or `keyboard`.
   */
  interface GATTServerSecurityOptions {
    bond?: boolean;
    immediate?: boolean;
    authenticate?: boolean;
    display?: boolean;
    keyboard?: boolean | 'yes/no';
  }

  interface GATTServerOptions {
    /** Preferred ATT MTU. */
    mtu?: number;
    services: GATTServerService[];
    security?: GATTServerSecurityOptions;
    onReady?(this: GATTServer): void;
    onConnect?(this: GATTServer, connection: GATTServerConnection): void;
    onDisconnect?(this: GATTServer, connection: GATTServerConnection): void;
    onPasskey?(this: GATTServer, connection: GATTServerConnection, action: 'none' | 'input' | 'display' | 'compareNumber' | 'outOfBand', data?: number | ArrayBuffer): void;
    onSecured?(this: GATTServer, connection: GATTServerConnection, state: GATTSecurityState): void;
    onWarning?(this: GATTServer, message: string): void;
  }

  interface GATTServerConnection {
    /** Ends the connection (ble_gap_terminate). */
    close(): void;
    /**
     * Queues a notification (the value is copied at once) on the server's single FIFO; throws
     * "disabled" when notifications are off on the characteristic, "no memory" when out of it.
     */
    notify(characteristic: GATTServerCharacteristic, value: ByteBuffer, callback?: (status: number) => void): void;
    replyToPasskey(action: 'input' | 'compareNumber' | 'outOfBand', value: number | boolean | ArrayBuffer): void;
    /** ATT MTU − 3: 20 at connection, updated when the MTU exchange completes. */
    get maximumWrite(): number;
  }

  interface GATTServerService {
    uuid: string;
    characteristics?: GATTServerCharacteristic[];
  }

  interface GATTServerCharacteristic {
    uuid: string;
    properties?: number;
    value?: ByteBuffer;
    descriptors?: GATTServerDescriptor[];

    onRead?(this: GATTServerCharacteristic, connection: GATTServerConnection): ByteBuffer;
    onWrite?(this: GATTServerCharacteristic, value: ArrayBuffer, connection: GATTServerConnection): void;
    onSubscribe?(this: GATTServerCharacteristic, connection: GATTServerConnection): void;
    onUnsubscribe?(this: GATTServerCharacteristic, connection: GATTServerConnection): void;
  }

  interface GATTServerDescriptor {
    uuid: string;
    value?: ByteBuffer;

    onRead?(connection: GATTServerConnection): ByteBuffer;
    onWrite?(value: ArrayBuffer, connection: GATTServerConnection): void;
  }

  interface GATTServerAdvertisingRecords {
    name?: string;
    services?: string[];
    manufacturerData?: { manufacturer: number; data: ByteBuffer };
    flags?: number;
    [ADType: number]: ByteBuffer;
  }

  class GATTServer {
    constructor(options: GATTServerOptions);

    close(): void;
    addService(service: GATTServerService): void;
    deleteService(service: GATTServerService): void;
    startAdvertising(scan: GATTServerAdvertisingRecords, response?: GATTServerAdvertisingRecords): void;
    stopAdvertising(): void;

    static readonly properties: {
      authenticatedSignedWrites: 64;
      broadcast: 1;
      indicate: 32;
      notify: 16;
      read: 2;
      readAuthenticated: 1026;
      readEncrypted: 514;
      reliableWrite: 128;
      subscribeAuthenticated: 65552;
      subscribeEncrypted: 32784;
      write: 8;
      writeAuthenticated: 8200;
      writeEncrypted: 4104;
      writeWithOutResponse: 4;
    };
    static readonly advertise: {
      limitedDiscoverable: 1;
      generalDiscoverable: 2;
      bleOnly: 4;
      dualModeController: 8;
      dualModeHost: 16;
    };
  }

  export {
    GATTServer,
    GATTServerAdvertisingRecords,
    GATTServerCharacteristic,
    GATTServerConnection,
    GATTServerDescriptor,
    GATTServerOptions,
    GATTServerSecurityOptions,
    GATTServerService,
  };
}
