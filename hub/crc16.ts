// CRC-16/CCITT-FALSE: poly 0x1021, init 0xFFFF, no reflection, no final xor.
// Check value: crc16("123456789") === 0x29B1. It covers the 10 bytes of an ESTOP frame (§11.2)
// and every frame of the robot link (device/robot-link.ts), whose telemetry runs at hundreds of
// frames a second: so it is table-driven, one lookup a byte. The table (256 × 16 bits) is made
// when the module is evaluated; on the device this module is preloaded, so it lies in flash.

export const CRC16_INIT = 0xffff;
export const CRC16_POLY = 0x1021;

/** The bit-by-bit update of one byte: what the table holds for each byte value from a zero CRC. */
function crc16Bits(crc: number, byte: number): number {
  crc ^= (byte & 0xff) << 8;
  for (let i = 0; i < 8; i++) {
    crc = crc & 0x8000 ? ((crc << 1) ^ CRC16_POLY) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

/** The update of a zero CRC by each byte value: a byte updates `crc` to `((crc << 8) & 0xffff) ^ table[((crc >>> 8) ^ byte) & 0xff]`. */
function crc16Table(): Uint16Array {
  const t = new Uint16Array(256);
  for (let b = 0; b < 256; b++) t[b] = crc16Bits(0, b);
  return t;
}

// Read only, and never handed out: preloaded on the device, it is read-only there.
const TABLE = crc16Table();

export function crc16Update(crc: number, byte: number): number {
  return ((crc << 8) & 0xffff) ^ (TABLE[((crc >>> 8) ^ byte) & 0xff] as number);
}

/** The CRC of buf[start, end), continuing from `crc`. */
export function crc16(buf: Uint8Array, start = 0, end = buf.length, crc: number = CRC16_INIT): number {
  const t = TABLE;
  for (let i = start; i < end; i++) crc = ((crc << 8) & 0xffff) ^ (t[((crc >>> 8) ^ (buf[i] as number)) & 0xff] as number);
  return crc;
}

/**
 * Copies src[from, from + n) to dst[at, …) and returns `crc` continued over those bytes: one loop
 * for both (the robot link's reader gathers a frame's payload so).
 */
export function crc16Copy(src: Uint8Array, from: number, dst: Uint8Array, at: number, n: number, crc: number): number {
  const t = TABLE;
  const end = from + n;
  let x = 0;
  while (from < end) {
    x = src[from++] as number;
    dst[at++] = x;
    crc = ((crc << 8) & 0xffff) ^ (t[((crc >>> 8) ^ x) & 0xff] as number);
  }
  return crc;
}
