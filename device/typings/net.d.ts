// As the SDK's own typing of the `net` module (typings/net.d.ts): the network's state, and a
// name looked up asynchronously (the callback's address is undefined when there is none).
declare module 'net' {
  var Net: {
    get(what: 'IP', mode?: 'station' | 'ap' | 'ethernet'): string;
    get(what: 'MAC', mode?: 'station' | 'ap' | 'ethernet'): string;
    get(what: 'SSID'): string;
    get(what: 'BSSID'): string;
    get(what: 'RSSI'): number;
    get(what: 'DNS'): string[];
    resolve(name: string, callback: (name: string, address?: string) => void): void;
  };
  export { Net as default };
}
