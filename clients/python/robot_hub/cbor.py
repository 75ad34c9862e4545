"""The CBOR subset of the hub protocol (docs/protocol.md §3), on top of ``cbor2``.

``cbor2`` builds the values; before it runs, :func:`check` walks the bytes and enforces what
the hub's decoder enforces and ``cbor2`` does not: shortest integers and lengths, integer map
keys in strictly ascending order, no tags, no indefinite lengths, no simple values other than
false/true/null, integers within ±(2^53 − 1), well-formed UTF-8, and the limits of §7 (nesting,
entries, string bytes). :func:`encode` writes the canonical form of §3.2.
"""

from __future__ import annotations

import math
from typing import Any, Dict, List, Union

import cbor2

MAX_SAFE = 2**53 - 1
MAX_DEPTH = 8
MAX_ITEMS = 256
MAX_STRING_BYTES = 4096

CborValue = Union[int, float, bool, None, bytes, str, List[Any], Dict[int, Any]]


class CborError(Exception):
    """A breach of §3 or §7. ``code`` is ``MALFORMED`` or ``TOO_LARGE`` (the NACK it earns)."""

    def __init__(self, code: str, offset: int, message: str) -> None:
        super().__init__(f"CBOR {code} at {offset}: {message}")
        self.code = code
        self.offset = offset


class _Walker:
    def __init__(self, buf: bytes, start: int, end: int) -> None:
        self.buf = buf
        self.pos = start
        self.end = end

    def fail(self, message: str, code: str = "MALFORMED", at: int | None = None) -> CborError:
        return CborError(code, self.pos if at is None else at, message)

    def head(self) -> tuple[int, int, int]:
        """(major, additional information, argument) of the head at pos, checked shortest."""
        p = self.pos
        if p >= self.end:
            raise self.fail("truncated")
        ib = self.buf[p]
        major, ai = ib >> 5, ib & 0x1F
        if ai < 24:
            self.pos = p + 1
            return major, ai, ai
        if ai > 27:
            raise self.fail("indefinite length" if ai == 31 else "reserved additional information")
        size = 1 << (ai - 24)
        if p + 1 + size > self.end:
            raise self.fail("truncated")
        n = int.from_bytes(self.buf[p + 1 : p + 1 + size], "big")
        if major != 7:
            floor = {1: 24, 2: 0x100, 4: 0x10000, 8: 0x100000000}[size]
            if n < floor:
                raise self.fail("argument not in shortest form")
        self.pos = p + 1 + size
        return major, ai, n

    def item(self, depth: int) -> int | None:
        """Checks one item; returns its value when it is an integer (for map keys)."""
        p = self.pos
        major, ai, n = self.head()
        if major == 0:
            if n > MAX_SAFE:
                raise self.fail("integer beyond 2^53-1", at=p)
            return n
        if major == 1:
            if n >= MAX_SAFE:
                raise self.fail("integer beyond -(2^53-1)", at=p)
            return -1 - n
        if major in (2, 3):
            if n > MAX_STRING_BYTES:
                raise self.fail("string longer than 4096 bytes", "TOO_LARGE", p)
            if n > self.end - self.pos:
                raise self.fail("truncated", at=p)
            if major == 3:
                try:
                    bytes(self.buf[self.pos : self.pos + n]).decode("utf-8", "strict")
                except UnicodeDecodeError:
                    raise self.fail("invalid UTF-8", at=p) from None
            self.pos += n
            return None
        if major in (4, 5):
            if depth >= MAX_DEPTH:
                raise self.fail("nested too deep", at=p)
            if n > MAX_ITEMS:
                raise self.fail("more than 256 entries", "TOO_LARGE", p)
            width = 1 if major == 4 else 2
            if n * width > self.end - self.pos:
                raise self.fail("truncated", at=p)
            prev: int | None = None
            for _ in range(n):
                if major == 5:
                    kp = self.pos
                    if kp >= self.end:
                        raise self.fail("truncated")
                    if self.buf[kp] >> 5 > 1:
                        raise self.fail("map key not an integer")
                    k = self.item(depth + 1)
                    assert k is not None
                    if prev is not None and k == prev:
                        raise self.fail("duplicate map key", at=kp)
                    if prev is not None and k < prev:
                        raise self.fail("map keys not ascending", at=kp)
                    prev = k
                self.item(depth + 1)
            return None
        if major == 6:
            raise self.fail("tag", at=p)
        # major 7
        if ai in (20, 21, 22, 25, 26, 27):
            return None
        raise self.fail("simple value outside the subset", at=p)


def check(buf: bytes, start: int = 0, end: int | None = None) -> int:
    """Checks exactly one item at ``start`` (limits counted within it); returns where it ends."""
    w = _Walker(buf, start, len(buf) if end is None else end)
    w.item(0)
    return w.pos


def check_frame_map(buf: bytes) -> None:
    """Checks a frame: one map whose entries are each checked as values of their own (§7: the
    frame's map is not counted in the nesting), and nothing after it."""
    w = _Walker(buf, 0, len(buf))
    if not buf:
        raise w.fail("empty input")
    major, _, n = w.head()
    if major != 5:
        raise CborError("MALFORMED", 0, "frame is not a map")
    if n > MAX_ITEMS:
        raise CborError("TOO_LARGE", 0, "more than 256 entries")
    if n * 2 > w.end - w.pos:
        raise w.fail("truncated")
    prev = -1
    for _ in range(n):
        kp = w.pos
        if kp >= w.end:
            raise w.fail("truncated")
        if buf[kp] >> 5 != 0:
            raise w.fail("map key is not an unsigned integer")
        k = w.item(0)
        assert k is not None
        if k <= prev:
            raise w.fail("map keys not ascending" if k < prev else "duplicate map key", at=kp)
        prev = k
        w.item(0)
    if w.pos != w.end:
        raise w.fail("bytes after the frame")


def decode(buf: bytes) -> Any:
    """The values of a frame already checked with :func:`check_frame_map`."""
    return cbor2.loads(buf)


def normalize(v: Any) -> Any:
    """§3.2: a number that is a safe integer (and not −0) is written as an integer."""
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, float):
        if math.isfinite(v) and v == int(v) and abs(v) <= MAX_SAFE and not (v == 0 and math.copysign(1.0, v) < 0):
            return int(v)
        return v
    if isinstance(v, int):
        if abs(v) > MAX_SAFE:
            return float(v)
        return v
    if isinstance(v, (list, tuple)):
        return [normalize(x) for x in v]
    if isinstance(v, dict):
        return {k: normalize(x) for k, x in sorted(v.items())}
    return v


def encode(v: Any) -> bytes:
    """Canonical CBOR (§3.2): shortest heads, ascending integer keys, shortest exact floats."""
    out: bytes = cbor2.dumps(normalize(v), canonical=True)
    return out
