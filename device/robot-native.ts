// The robot link's byte work in C on the ESP32 (device/robot-link.ts RobotCodec): native/robotframe.c.
// Only the device entry (through device/robot.ts) imports this module; the host build leaves
// device/ out and scripts/check-native.mjs type-checks it without Node types. Each method's body
// is only its native call, which xsc compiles into the host function itself (no step between).

import type { RobotCodec } from './robot-link.js';

// The XS global (the SDK's xs.d.ts declares it the same way), scoped to this module.
declare const native: (name: string) => (...args: any[]) => any;

export class RobotCodecNative implements RobotCodec {
  crc16(bytes: Uint8Array, start: number, end: number, crc: number): number {
    return native('xs_robot_crc16').call(this, bytes, start, end, crc);
  }
  crc16Copy(src: Uint8Array, from: number, dst: Uint8Array, at: number, n: number, crc: number): number {
    return native('xs_robot_crc16_copy').call(this, src, from, dst, at, n, crc);
  }
  floats32(bytes: Uint8Array, at: number, count: number, out: Uint8Array): void {
    return native('xs_robot_floats32').call(this, bytes, at, count, out);
  }
}
