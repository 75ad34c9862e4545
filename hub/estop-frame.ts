// The 12-byte binary ESTOP frame (§11.2, docs/protocol.md "The ESTOP frame"). It is not
// CBOR so that a binding can write it ahead of every queue (§10.4) and a receiver can tell
// it apart by its first byte alone.
//
//   0      magic 0xE5
//   1      kind    (EstopKind)
//   2      source  (EstopSource)
//   3      flags   (bit 0: latched; bits 1–7 reserved, sent as 0, ignored)
//   4..7   origin  uint32 big-endian: the originating session id, 0 for the hub itself
//   8..9   seq     uint16 big-endian: ESTOP sequence of that origin
//   10..11 CRC-16/CCITT-FALSE over bytes 0..9, big-endian

import { crc16 } from './crc16.js';

export const ESTOP_FRAME_BYTES = 12;

// 0xE5 is CBOR major type 7 (simple value 5): every other frame of ours is a CBOR map and so
// starts with 0xA0..0xBF; a stream of our CBOR frames can never begin with it.
export const ESTOP_MAGIC = 0xe5;

// A NACK about an ESTOP frame carries this in frame_type (key 17): it is no CBOR frame type.
export const ESTOP_NACK_FRAME_TYPE = ESTOP_MAGIC;

export const EstopKind = Object.freeze({
  ASSERT: 1,
  CLEARED: 2,
} as const);
export type EstopKindCode = (typeof EstopKind)[keyof typeof EstopKind];

export const EstopSource = Object.freeze({
  CLIENT: 0,
  HUB_BUTTON: 1,
  DEADMAN: 2,
  WATCHDOG: 3,
  ROBOT: 4,
  /** A signed fleet-wide stop received over the uplink (docs/fleet.md). */
  FLEET: 5,
} as const);
export type EstopSourceCode = (typeof EstopSource)[keyof typeof EstopSource];
const MAX_SOURCE = 5;

export const ESTOP_FLAG_LATCHED = 0x01;

export const EstopError = Object.freeze({
  BAD_LENGTH: 1,
  BAD_MAGIC: 2,
  BAD_CRC: 3,
  BAD_KIND: 4,
  BAD_SOURCE: 5,
} as const);
export type EstopErrorName = keyof typeof EstopError;
export type EstopErrorCode = (typeof EstopError)[EstopErrorName];

export class EstopFrameError extends Error {
  readonly code: EstopErrorCode;
  readonly codeName: EstopErrorName;
  constructor(codeName: EstopErrorName) {
    super(`ESTOP frame: ${codeName}`);
    this.name = 'EstopFrameError';
    this.code = EstopError[codeName];
    this.codeName = codeName;
  }
}

export interface EstopFrame {
  kind: EstopKindCode;
  source: EstopSourceCode;
  flags: number;
  origin: number;
  seq: number;
}

export function isEstopFrame(buf: Uint8Array, offset: number): boolean {
  return offset >= 0 && offset < buf.length && buf[offset] === ESTOP_MAGIC;
}

// Writes the 12 bytes at `offset` and returns the offset just past them. Allocation-free:
// a binding's write-ahead path calls it into a buffer sized at setup.
export function encodeEstop(
  into: Uint8Array,
  offset: number,
  kind: number,
  source: number,
  flags: number,
  origin: number,
  seq: number,
): number {
  if (offset < 0 || offset + ESTOP_FRAME_BYTES > into.length) throw new RangeError('ESTOP frame does not fit');
  into[offset] = ESTOP_MAGIC;
  into[offset + 1] = kind & 0xff;
  into[offset + 2] = source & 0xff;
  into[offset + 3] = flags & 0xff;
  into[offset + 4] = (origin >>> 24) & 0xff;
  into[offset + 5] = (origin >>> 16) & 0xff;
  into[offset + 6] = (origin >>> 8) & 0xff;
  into[offset + 7] = origin & 0xff;
  into[offset + 8] = (seq >>> 8) & 0xff;
  into[offset + 9] = seq & 0xff;
  const crc = crc16(into, offset, offset + 10);
  into[offset + 10] = crc >>> 8;
  into[offset + 11] = crc & 0xff;
  return offset + ESTOP_FRAME_BYTES;
}

// `len` is the length of the frame as delimited by the binding (TCP length prefix, one
// WebSocket message, one reassembled BLE message, one ESP-NOW datagram): it must be exactly
// 12. The CRC is checked before kind and source so that a corrupted kind reads as BAD_CRC.
export function decodeEstop(buf: Uint8Array, offset: number, len: number): EstopFrame {
  if (len !== ESTOP_FRAME_BYTES || offset < 0 || offset + len > buf.length) throw new EstopFrameError('BAD_LENGTH');
  if (buf[offset] !== ESTOP_MAGIC) throw new EstopFrameError('BAD_MAGIC');
  const crc = ((buf[offset + 10] as number) << 8) | (buf[offset + 11] as number);
  if (crc16(buf, offset, offset + 10) !== crc) throw new EstopFrameError('BAD_CRC');
  const kind = buf[offset + 1] as number;
  if (kind !== EstopKind.ASSERT && kind !== EstopKind.CLEARED) throw new EstopFrameError('BAD_KIND');
  const source = buf[offset + 2] as number;
  if (source > MAX_SOURCE) throw new EstopFrameError('BAD_SOURCE');
  return {
    kind,
    source: source as EstopSourceCode,
    flags: buf[offset + 3] as number,
    origin:
      (((buf[offset + 4] as number) << 24) >>> 0) +
      ((buf[offset + 5] as number) << 16) +
      ((buf[offset + 6] as number) << 8) +
      (buf[offset + 7] as number),
    seq: ((buf[offset + 8] as number) << 8) | (buf[offset + 9] as number),
  };
}
