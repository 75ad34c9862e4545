// What the ESP-NOW device adapter (device.ts) needs from Moddable's XS that the host typings do
// not describe. Types only: `import type` erases every use, so nothing here becomes a module on
// the device. The XS globals themselves are declared in device.ts, scoped to that module, with
// the signatures of the SDK's xs/includes/xs.d.ts (`native`, `Native`), so that the host build
// never sees them as globals.

/** XS `native(name)`: the host function named `name` (XS in C, "Native"). */
export type NativeLookup = (name: string) => (...args: any[]) => any;

/** XS `Native(name)`: a base class whose instances are host objects with the destructor `name`. */
export type NativeClassLookup = (name: string) => new (...args: any[]) => any;

/** The native module's face (native/espnow.c); every status is a RadioStatus (link.ts). */
export interface EspNowNativeApi {
  /** Adds a peer on the interface ESP-NOW was opened on; an encrypted one needs its 16-byte LMK. */
  addPeer(mac: Uint8Array, encrypt: boolean, lmk: Uint8Array | undefined): number;
  removePeer(mac: Uint8Array): number;
  /**
   * Starts one datagram of `length` bytes (≤ 250) to `mac` (its 6 bytes, or the 48-bit number the
   * binding keeps it as); BUSY until the previous one's status was polled in.
   */
  send(mac: number | Uint8Array, data: Uint8Array, length: number): number;
  /**
   * The next event into `into` (≥ 256 bytes): −1 nothing; 0x10000 / 0x10001 the send status
   * (ok / failed) for the MAC in into[0, 6); 1..250 a datagram of that length from the MAC in
   * into[0, 6), its bytes in into[6, …), with 0x100 or'ed in when it was addressed to the
   * broadcast address (it cannot have been encrypted); with 0x20000 or'ed into any event after
   * which nothing else waits. Into 264 bytes or more it also writes the MAC as a number (a
   * double in the machine's byte order) at [256, 264).
   */
  poll(into: Uint8Array): number;
  /** Datagrams lost inside the module: its ring was full, or they were over 250 bytes. */
  dropped(): number;
  /** Wake-ups the VM's queue refused (the events stay in the ring for the next poll). */
  postFailures(): number;
  close(): void;
}
