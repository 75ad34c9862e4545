// The hub's GATT service (docs/protocol.md §13.4). 128-bit UUIDs on one random (version 4)
// base, df78xxxx-9766-403f-a18a-24a57e2d20da, where xxxx numbers the attribute: the same
// habit as other vendor services, so that a sniffer trace shows the three belong together.
// Lower case, as Web Bluetooth requires. These are wire constants: never change one.

export const BLE_UUIDS = Object.freeze({
  /** The hub service; advertised so that clients can filter on it. */
  service: 'df780001-9766-403f-a18a-24a57e2d20da',
  /** Client → hub fragments: write without response (write with response is accepted too). */
  write: 'df780002-9766-403f-a18a-24a57e2d20da',
  /** Hub → client fragments: notify. A client subscribes before it writes HELLO. */
  notify: 'df780003-9766-403f-a18a-24a57e2d20da',
} as const);
