// Ambient declarations for the one Moddable module the BLE device adapter uses: the ECMA-419
// GATT server, `embedded:io/bluetoothle/peripheral` (Moddable SDK modules/io/ble/server/esp32/
// bleserver.{js,c}; typings/embedded_io/ble/peripheral.d.ts). The npm package @moddable/typings
// reachable here predates it. Only what device.ts uses is declared, as the implementation
// behaves, which differs from the SDK's own typings in two places:
//   - the connection's getter is `maximumWrite` (the SDK typings spell it `maxinumWrite`);
//   - the notify callback receives a number, 0 or a NimBLE status (the typings say an Error).

declare module 'embedded:io/bluetoothle/peripheral' {
  /** Anything the native side reads with xsmcGetBufferReadable. */
  type BufferSource = ArrayBuffer | ArrayBufferView;

  interface GATTServerConnection {
    /** Ends the connection (ble_gap_terminate). No onDisconnect follows for it. */
    close(): void;
    /**
     * Queues a notification (the value is copied at once) on the server's single FIFO; throws
     * "disabled" when notifications are off on the characteristic, "no memory" when out of it.
     */
    notify(characteristic: GATTServerCharacteristic, value: BufferSource, callback?: (status: number) => void): void;
    /** ATT MTU − 3: 20 at connection, updated when the MTU exchange completes. */
    readonly maximumWrite: number;
  }

  /**
   * A characteristic as given in `services`, and, as `this` inside its callbacks, the host
   * object `notify` needs (the native side makes one per characteristic with callbacks).
   */
  interface GATTServerCharacteristic {
    uuid: string;
    properties: number;
    value?: BufferSource;
    onRead?(this: GATTServerCharacteristic, connection: GATTServerConnection): BufferSource;
    onWrite?(this: GATTServerCharacteristic, value: ArrayBuffer, connection: GATTServerConnection): void;
    onSubscribe?(this: GATTServerCharacteristic, connection: GATTServerConnection): void;
    onUnsubscribe?(this: GATTServerCharacteristic, connection: GATTServerConnection): void;
  }

  interface GATTServerService {
    uuid: string;
    characteristics: GATTServerCharacteristic[];
  }

  interface GATTServerAdvertisingRecords {
    name?: string;
    services?: string[];
    flags?: number;
  }

  interface GATTServerOptions {
    /** Preferred ATT MTU, clamped to 23..527. */
    mtu?: number;
    services: GATTServerService[];
    onReady?(this: GATTServer): void;
    onConnect?(this: GATTServer, connection: GATTServerConnection): void;
    onDisconnect?(this: GATTServer, connection: GATTServerConnection): void;
    onWarning?(this: GATTServer, message: string): void;
  }

  class GATTServer {
    constructor(options: GATTServerOptions);
    close(): void;
    startAdvertising(scan: GATTServerAdvertisingRecords, response?: GATTServerAdvertisingRecords): void;
    stopAdvertising(): void;
    static readonly properties: {
      readonly read: 2;
      readonly writeWithOutResponse: 4;
      readonly write: 8;
      readonly notify: 16;
      readonly indicate: 32;
    };
  }

  export { GATTServer, GATTServerCharacteristic, GATTServerConnection, GATTServerOptions, GATTServerService };
}
