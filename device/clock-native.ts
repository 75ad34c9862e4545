// The hub's clock in C on the ESP32 (hub/ports.ts Clock): native/clock.c, whole milliseconds since
// boot from the ESP-IDF high resolution timer. Only the device entry imports this module; the host
// build leaves device/ out and scripts/check-native.mjs type-checks it without Node types. The
// method's body is only its native call, which xsc compiles into the host function itself (no step
// between): a read of the time costs XS one call, where the script clock over Time.ticks
// (./runtime.ts TicksClock, the Linux simulator's) runs its own steps every time.

import type { Clock } from '../hub/ports.js';

// The XS global (the SDK's xs.d.ts declares it the same way), scoped to this module.
declare const native: (name: string) => (...args: any[]) => any;

export class ClockNative implements Clock {
  now(): number {
    return native('xs_clock_now').call(this);
  }
}
