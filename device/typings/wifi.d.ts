// As the SDK's own typing of the legacy `wifi` module (its ESP32 implementation), the
// only one with access-point mode (the ECMA-419 embedded:network/interface/wifi is station-only).
// xs_wifi_accessPoint (xs6wifi.c): a password must be 8–64 bytes (leave it out for an open
// network), channel 1–13 (default 1), max stations default 4; it throws on a bad value.
declare module 'wifi' {
  export type WiFiOptions = {
    bssid?: ArrayBuffer;
    ssid: string;
    password?: string;
  };
  export type WiFiCallback = (message: 'connect' | 'gotIP' | 'lostIP' | 'disconnect' | 'station_connect' | 'station_disconnect') => void;
  export type WiFiScanCallback = (
    item: {
      ssid: string;
      authentication: string;
      rssi: number;
      bssid: ArrayBuffer;
    } | null,
  ) => void;
  export type WiFiMode = -5 | 0 | 1 | 2 | 3;
  export type ScanOptions = { hidden?: boolean; channel?: number };
  export type AccessPointOptions = {
    ssid: string;
    password?: string;
    channel?: number;
    hidden?: boolean;
    interval?: number;
    max?: number;
  };

  class WiFi {
    static readonly gotIP: 'gotIP';
    static readonly lostIP: 'lostIP';
    static readonly connected: 'connect';
    static readonly disconnected: 'disconnect';
    static readonly station_connected: 'station_connect';
    static readonly station_disconnected: 'station_disconnect';
    static readonly Mode: {
      off: -5;
      none: 0;
      station: 1;
      accessPoint: 2;
    };

    constructor(options?: WiFiOptions, callback?: WiFiCallback);
    close(): void;
    static scan(options: ScanOptions, callback: WiFiScanCallback): void;
    static mode: WiFiMode;
    static connect(options?: WiFiOptions): void;
    static disconnect(): void;
    static accessPoint(options: AccessPointOptions): void;
  }
  export { WiFi as default };
}
