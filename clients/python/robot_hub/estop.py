"""The 12-byte binary ESTOP frame (docs/protocol.md §11.1).

    0      magic 0xE5
    1      kind    (EstopKind)
    2      source  (EstopSource)
    3      flags   (bit 0: latched)
    4..7   origin  uint32 big-endian: the originating session id, 0 for the hub itself
    8..9   seq     uint16 big-endian
    10..11 CRC-16/CCITT-FALSE over bytes 0..9, big-endian
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

ESTOP_FRAME_BYTES = 12
ESTOP_MAGIC = 0xE5
ESTOP_FLAG_LATCHED = 0x01


class EstopKind(IntEnum):
    ASSERT = 1
    CLEARED = 2


class EstopSource(IntEnum):
    CLIENT = 0
    HUB_BUTTON = 1
    DEADMAN = 2
    WATCHDOG = 3
    ROBOT = 4
    #: A signed fleet-wide stop received over the hub's uplink (docs/fleet.md).
    FLEET = 5


class EstopFrameError(Exception):
    """``code`` is BAD_LENGTH, BAD_MAGIC, BAD_CRC, BAD_KIND or BAD_SOURCE."""

    def __init__(self, code: str) -> None:
        super().__init__(f"ESTOP frame: {code}")
        self.code = code


@dataclass(frozen=True)
class EstopFrame:
    kind: int
    source: int
    flags: int
    origin: int
    seq: int

    @property
    def latched(self) -> bool:
        return self.kind == EstopKind.ASSERT


def crc16(data: bytes) -> int:
    """CRC-16/CCITT-FALSE: poly 0x1021, init 0xFFFF, no reflection, no final xor."""
    crc = 0xFFFF
    for b in data:
        crc ^= b << 8
        for _ in range(8):
            crc = ((crc << 1) ^ 0x1021) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
    return crc


def encode_estop(f: EstopFrame) -> bytes:
    head = bytes([ESTOP_MAGIC, f.kind & 0xFF, f.source & 0xFF, f.flags & 0xFF]) + (f.origin & 0xFFFFFFFF).to_bytes(4, "big") + (f.seq & 0xFFFF).to_bytes(2, "big")
    return head + crc16(head).to_bytes(2, "big")


def decode_estop(b: bytes) -> EstopFrame:
    """The CRC is checked before kind and source, so a corrupted kind reads as BAD_CRC."""
    if len(b) != ESTOP_FRAME_BYTES:
        raise EstopFrameError("BAD_LENGTH")
    if b[0] != ESTOP_MAGIC:
        raise EstopFrameError("BAD_MAGIC")
    if crc16(b[:10]) != int.from_bytes(b[10:12], "big"):
        raise EstopFrameError("BAD_CRC")
    if b[1] not in (EstopKind.ASSERT, EstopKind.CLEARED):
        raise EstopFrameError("BAD_KIND")
    if b[2] > EstopSource.FLEET:
        raise EstopFrameError("BAD_SOURCE")
    return EstopFrame(b[1], b[2], b[3], int.from_bytes(b[4:8], "big"), int.from_bytes(b[8:10], "big"))


def is_estop(b: bytes) -> bool:
    return len(b) > 0 and b[0] == ESTOP_MAGIC
