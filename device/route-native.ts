// A push's common route in C on the ESP32 (hub/ports.ts SampleRouter): native/route.c, the route
// itself native/route.h. Only the device entry imports this module; the host build leaves device/
// out and scripts/check-native.mjs type-checks it without Node types. The method's body is only
// its native call, which xsc compiles into the host function itself (no step between).

import type { RouteHost, SampleRouter } from '../hub/ports.js';

// The XS global (the SDK's xs.d.ts declares it the same way), scoped to this module.
declare const native: (name: string) => (...args: any[]) => any;

export class SampleRouterNative implements SampleRouter {
  route(host: RouteHost, route: object, t: number, values: Float64Array, count: number, now: number): number {
    return native('xs_route_push').call(this, host, route, t, values, count, now);
  }
}
