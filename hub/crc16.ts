// CRC-16/CCITT-FALSE: poly 0x1021, init 0xFFFF, no reflection, no final xor.
// Check value: crc16("123456789") === 0x29B1. Bitwise rather than table-driven: it runs over
// the 10 covered bytes of an ESTOP frame (§11.2) only, and needs no table in RAM.

export const CRC16_INIT = 0xffff;
export const CRC16_POLY = 0x1021;

export function crc16Update(crc: number, byte: number): number {
  crc ^= (byte & 0xff) << 8;
  for (let i = 0; i < 8; i++) {
    crc = crc & 0x8000 ? ((crc << 1) ^ CRC16_POLY) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

export function crc16(buf: Uint8Array, start = 0, end = buf.length): number {
  let crc = CRC16_INIT;
  for (let i = start; i < end; i++) crc = crc16Update(crc, buf[i] as number);
  return crc;
}
