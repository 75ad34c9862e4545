"""The frames of the hub protocol (docs/protocol.md §4, §5): typed dataclasses, the canonical
encoder and the validating decoder. The decoder refuses what the hub's decoder refuses, with
the same NACK code (the conformance vectors of §8 hold both to it)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from enum import IntEnum
from typing import Any, Callable, Dict, List, Optional, Union

from . import cbor

PROTOCOL_VERSION = 1
MAX_FRAME_BYTES = 1024
MAX_HUB_FRAME_BYTES = 4608
MAX_RATE_HZ = 1000
MAX_BURST = 4000
MAX_LIST = 32
MAX_VALUES = 32
MAX_BUNDLE_SAMPLES = 32
U8, U16, U32 = 0xFF, 0xFFFF, 0xFFFFFFFF
MAX_UINT = 2**53 - 1


class FrameType(IntEnum):
    HELLO = 1
    WELCOME = 2
    SUBSCRIBE = 3
    UNSUBSCRIBE = 4
    PUBLISH = 5
    GRANT = 6
    DATA = 7
    BUNDLE = 8
    INTENT = 9
    ECHO = 10
    NACK = 11
    ACK = 12
    PING = 13
    PONG = 14
    GOODBYE = 15
    ESTOP_CLEAR = 16
    CATALOG = 17
    HEALTH = 18


class Nack(IntEnum):
    """NACK codes (§12.2)."""

    MALFORMED = 1
    TOO_LARGE = 2
    VERSION = 3
    UNKNOWN_CHANNEL = 4
    FORBIDDEN = 5
    NOT_GRANTED = 6
    NOT_OWNER = 7
    RATE_LIMITED = 8
    NO_SLOTS = 9
    HUB_PRESSURE = 10
    UNKNOWN_SESSION = 11
    ESTOP_LATCHED = 12
    SESSION_EVICTED = 13
    NOT_READY = 14
    INGRESS_BUDGET = 15
    NOT_ARMED = 16


def nack_name(code: int) -> str:
    try:
        return Nack(code).name
    except ValueError:
        return f"NACK_{code}"


class GoodbyeReason(IntEnum):
    NORMAL = 0
    SHUTDOWN = 1
    MISBEHAVING = 2
    EVICTED = 3
    RESUMED_ELSEWHERE = 4


# Who sends each frame type (§5): the client treats a frame only a client sends as a bad frame.
FROM_HUB = frozenset({2, 6, 7, 10, 11, 13, 14, 15, 17, 18})


@dataclass
class SubWish:
    channel_id: int
    wished_rate_hz: float
    priority: Optional[int] = None


@dataclass
class PubWish:
    channel_id: int
    wished_rate_hz: float
    burst: Optional[float] = None


@dataclass
class SubGrant:
    channel_id: int
    granted_rate_hz: float
    priority: int


@dataclass
class PubGrant:
    channel_id: int
    granted_rate_hz: float
    burst: float


Arg = Union[int, float, str]


@dataclass
class Hello:
    name: str
    version: int = PROTOCOL_VERSION
    credential: Optional[bytes] = None
    resume_token: Optional[bytes] = None
    sub_wishes: Optional[List[SubWish]] = None
    pub_wishes: Optional[List[PubWish]] = None
    type: int = field(default=FrameType.HELLO, init=False)


@dataclass
class Welcome:
    session_id: int
    resume_token: bytes
    hub_id: str
    mtu: int
    slots: int
    catalog_hash: bytes
    tier: int
    owner: int
    latched: bool
    sub_grants: List[SubGrant]
    pub_grants: List[PubGrant]
    stale_ttl_ms: int
    type: int = field(default=FrameType.WELCOME, init=False)


@dataclass
class Subscribe:
    wishes: List[SubWish]
    type: int = field(default=FrameType.SUBSCRIBE, init=False)


@dataclass
class Unsubscribe:
    channels: List[int]
    type: int = field(default=FrameType.UNSUBSCRIBE, init=False)


@dataclass
class Publish:
    wishes: List[PubWish]
    type: int = field(default=FrameType.PUBLISH, init=False)


@dataclass
class Grant:
    sub_grants: Optional[List[SubGrant]] = None
    pub_grants: Optional[List[PubGrant]] = None
    type: int = field(default=FrameType.GRANT, init=False)


@dataclass
class Data:
    channel_id: int
    seq: int
    t: int
    values: List[float]
    gap: Optional[bool] = None
    dropped: Optional[int] = None
    text: Optional[str] = None
    type: int = field(default=FrameType.DATA, init=False)


@dataclass
class Bundle:
    channel_id: int
    samples: List[List[float]]
    type: int = field(default=FrameType.BUNDLE, init=False)


@dataclass
class Intent:
    channel_id: int
    request_id: int
    args: Optional[List[Arg]] = None
    type: int = field(default=FrameType.INTENT, init=False)


@dataclass
class Echo:
    channel_id: int
    request_id: int
    result: int
    args: Optional[List[Arg]] = None
    type: int = field(default=FrameType.ECHO, init=False)


@dataclass
class NackFrame:
    code: int
    channel_id: Optional[int] = None
    retry_after_ms: Optional[int] = None
    frame_type: Optional[int] = None
    request_id: Optional[int] = None
    type: int = field(default=FrameType.NACK, init=False)


@dataclass
class Ack:
    acked: Optional[int] = None
    ack_base: Optional[int] = None
    ack_bitmap: Optional[int] = None
    type: int = field(default=FrameType.ACK, init=False)


@dataclass
class Ping:
    t0: int
    type: int = field(default=FrameType.PING, init=False)


@dataclass
class Pong:
    t0: int
    t1: int
    level: Optional[int] = None
    type: int = field(default=FrameType.PONG, init=False)


@dataclass
class Goodbye:
    reason: Optional[int] = None
    type: int = field(default=FrameType.GOODBYE, init=False)


@dataclass
class EstopClear:
    estop_seq: Optional[int] = None
    type: int = field(default=FrameType.ESTOP_CLEAR, init=False)


@dataclass
class Catalog:
    catalog_hash: Optional[bytes] = None
    text: Optional[str] = None
    offset: Optional[int] = None
    total: Optional[int] = None
    type: int = field(default=FrameType.CATALOG, init=False)


@dataclass
class Health:
    text: Optional[str] = None
    offset: Optional[int] = None
    total: Optional[int] = None
    type: int = field(default=FrameType.HEALTH, init=False)


Frame = Union[Hello, Welcome, Subscribe, Unsubscribe, Publish, Grant, Data, Bundle, Intent, Echo,
              NackFrame, Ack, Ping, Pong, Goodbye, EstopClear, Catalog, Health]

# The key registry (§4): field name → key.
KEYS: Dict[str, int] = {
    "version": 1, "session_id": 2, "channel_id": 3, "seq": 4, "t": 5, "values": 6, "samples": 6,
    "name": 7, "credential": 8, "resume_token": 9, "sub_wishes": 10, "pub_wishes": 11,
    "wished_rate_hz": 12, "priority": 13, "granted_rate_hz": 14, "code": 15, "retry_after_ms": 16,
    "frame_type": 17, "args": 18, "request_id": 19, "result": 20, "hub_id": 21, "mtu": 22,
    "slots": 23, "catalog_hash": 24, "tier": 25, "gap": 26, "dropped": 27, "acked": 28,
    "ack_base": 29, "ack_bitmap": 30, "t0": 31, "t1": 32, "owner": 33, "latched": 34,
    "sub_grants": 35, "pub_grants": 36, "text": 37, "stale_ttl_ms": 38, "estop_seq": 39,
    "reason": 40, "channels": 41, "burst": 42, "offset": 43, "total": 44, "level": 45,
}

CLASSES: Dict[int, type] = {
    1: Hello, 2: Welcome, 3: Subscribe, 4: Unsubscribe, 5: Publish, 6: Grant, 7: Data, 8: Bundle,
    9: Intent, 10: Echo, 11: NackFrame, 12: Ack, 13: Ping, 14: Pong, 15: Goodbye, 16: EstopClear,
    17: Catalog, 18: Health,
}


class FrameError(Exception):
    """A frame refused: ``code`` is the NACK code the hub answers it with."""

    def __init__(self, code: Nack, message: str, frame_type: Optional[int] = None) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code = code
        self.frame_type = frame_type


# ---------------------------------------------------------------- encoding


def _entry(e: Any) -> Dict[int, Any]:
    return {KEYS[f.name]: getattr(e, f.name) for f in fields(e) if getattr(e, f.name) is not None}


def frame_to_map(f: Frame) -> Dict[int, Any]:
    m: Dict[int, Any] = {0: int(f.type)}
    for fd in fields(f):
        if fd.name == "type":
            continue
        v = getattr(f, fd.name)
        if v is None:
            continue
        if fd.name == "gap" and v is False:
            continue
        if fd.name == "dropped" and v == 0:
            continue
        if fd.name == "wishes":
            key = 10 if f.type == FrameType.SUBSCRIBE else 11
        else:
            key = KEYS[fd.name]
        if isinstance(v, list) and v and not isinstance(v[0], (int, float, str, list)):
            v = [_entry(e) for e in v]
        m[key] = v
    return m


def encode_frame(f: Frame) -> bytes:
    """The canonical bytes of a frame (§3.2)."""
    return cbor.encode(frame_to_map(f))


# ---------------------------------------------------------------- decoding


class _Bad(Exception):
    pass


def _bad(message: str) -> _Bad:
    return _Bad(message)


def _uint(v: Any, lo: int, hi: int, what: str) -> int:
    if type(v) is not int or v < 0:
        raise _bad(f"{what}: not an unsigned integer")
    if v < lo or v > hi:
        raise _bad(f"{what}: {v} out of range [{lo}, {hi}]")
    return v


def _number(v: Any, what: str) -> float:
    if type(v) not in (int, float):
        raise _bad(f"{what}: not a number")
    return v  # type: ignore[no-any-return]


def _rate(v: Any, what: str, zero_allowed: bool, hi: float) -> float:
    x = _number(v, what)
    neg_zero = isinstance(x, float) and x == 0 and math.copysign(1.0, x) < 0
    if not math.isfinite(x) or x > hi or (x < 0 if zero_allowed else not x > 0) or neg_zero:
        raise _bad(f"{what}: {x} out of range")
    return x


def _text(v: Any, lo: int, hi: int, what: str) -> str:
    if type(v) is not str:
        raise _bad(f"{what}: not a text")
    n = len(v.encode("utf-8"))
    if n < lo or n > hi:
        raise _bad(f"{what}: {n} bytes out of range [{lo}, {hi}]")
    return v


def _bytes(v: Any, lo: int, hi: int, what: str) -> bytes:
    if type(v) is not bytes:
        raise _bad(f"{what}: not a byte string")
    if len(v) < lo or len(v) > hi:
        raise _bad(f"{what}: {len(v)} bytes out of range")
    return v


def _array(v: Any, lo: int, hi: int, what: str) -> List[Any]:
    if type(v) is not list:
        raise _bad(f"{what}: not an array")
    if len(v) < lo or len(v) > hi:
        raise _bad(f"{what}: {len(v)} items out of range [{lo}, {hi}]")
    return v


def _bool(v: Any, what: str) -> bool:
    if type(v) is not bool:
        raise _bad(f"{what}: not a boolean")
    return v


def _entries(v: Any, kind: str, lo: int) -> List[Any]:
    items = _array(v, lo, MAX_LIST, "list")
    out: List[Any] = []
    seen: set[int] = set()
    for m in items:
        if type(m) is not dict:
            raise _bad("list entry: not a map")
        ch: Optional[int] = None
        rate: Optional[float] = None
        prio: Optional[int] = None
        burst: Optional[float] = None
        for k, x in m.items():
            if type(k) is not int or k < 0:
                raise _bad("map key is not an unsigned integer")
            if k == 3:
                ch = _uint(x, 1, 255, "channel_id")
            elif k == 12 and kind in ("sw", "pw"):
                rate = _rate(x, "wished_rate_hz", False, MAX_RATE_HZ)
            elif k == 14 and kind in ("sg", "pg"):
                rate = _rate(x, "granted_rate_hz", True, MAX_RATE_HZ)
            elif k == 13 and kind in ("sw", "sg"):
                prio = _uint(x, 0, 3, "priority")
            elif k == 42 and kind == "pw":
                burst = _rate(x, "burst", False, MAX_BURST)
            elif k == 42 and kind == "pg":
                burst = _rate(x, "burst", True, MAX_BURST)
        if ch is None:
            raise _bad("entry without channel_id")
        if rate is None:
            raise _bad("entry without a rate")
        if ch in seen:
            raise _bad(f"channel {ch} listed twice")
        seen.add(ch)
        if kind == "sw":
            out.append(SubWish(ch, rate, prio))
        elif kind == "pw":
            out.append(PubWish(ch, rate, burst))
        elif kind == "sg":
            if prio is None:
                raise _bad("grant without priority")
            out.append(SubGrant(ch, rate, prio))
        else:
            if burst is None:
                raise _bad("grant without burst")
            out.append(PubGrant(ch, rate, burst))
    return out


def _numbers(v: Any, lo: int, hi: int, what: str) -> List[float]:
    return [_number(x, what) for x in _array(v, lo, hi, what)]


class _TooManySamples(Exception):
    pass


def _samples(v: Any) -> List[List[float]]:
    if type(v) is not list:
        raise _bad("samples: not an array")
    if len(v) > MAX_BUNDLE_SAMPLES:
        raise _TooManySamples(f"bundle of {len(v)} samples (max {MAX_BUNDLE_SAMPLES})")
    if not v:
        raise _bad("empty bundle")
    out = []
    for s in v:
        nums = _numbers(s, 1, MAX_VALUES + 1, "sample")
        t = nums[0]
        if type(t) is not int or t < 0:
            raise _bad("sample time is not an unsigned integer")
        out.append(nums)
    return out


def _args(v: Any) -> List[Arg]:
    out: List[Arg] = []
    for x in _array(v, 0, 16, "args"):
        out.append(_text(x, 0, 64, "arg") if type(x) is str else _number(x, "arg"))
    return out


def _channels(v: Any) -> List[int]:
    out = [_uint(x, 1, 255, "channel_id") for x in _array(v, 1, MAX_LIST, "channels")]
    if len(set(out)) != len(out):
        raise _bad("channel listed twice")
    return out


READERS: Dict[int, Callable[[Any, int], Any]] = {
    1: lambda v, t: _uint(v, 0, U16, "version"),
    2: lambda v, t: _uint(v, 1, U32, "session_id"),
    3: lambda v, t: _uint(v, 1, 255, "channel_id"),
    4: lambda v, t: _uint(v, 0, U32, "seq"),
    5: lambda v, t: _uint(v, 0, MAX_UINT, "t"),
    6: lambda v, t: _samples(v) if t == FrameType.BUNDLE else _numbers(v, 0, MAX_VALUES, "values"),
    7: lambda v, t: _text(v, 1, 32, "name"),
    8: lambda v, t: _bytes(v, 0, 64, "credential"),
    9: lambda v, t: _bytes(v, 16, 16, "resume_token"),
    10: lambda v, t: _entries(v, "sw", 1 if t == FrameType.SUBSCRIBE else 0),
    11: lambda v, t: _entries(v, "pw", 1 if t == FrameType.PUBLISH else 0),
    15: lambda v, t: _uint(v, 1, U8, "code"),
    16: lambda v, t: _uint(v, 0, U32, "retry_after_ms"),
    17: lambda v, t: _uint(v, 0, U8, "frame_type"),
    18: lambda v, t: _args(v),
    19: lambda v, t: _uint(v, 0, U32, "request_id"),
    20: lambda v, t: _uint(v, 0, U8, "result"),
    21: lambda v, t: _text(v, 1, 32, "hub_id"),
    22: lambda v, t: _uint(v, 1, U16, "mtu"),
    23: lambda v, t: _uint(v, 1, U8, "slots"),
    24: lambda v, t: _bytes(v, 8, 8, "catalog_hash"),
    25: lambda v, t: _uint(v, 0, 2, "tier"),
    26: lambda v, t: _bool(v, "gap"),
    27: lambda v, t: _uint(v, 0, U32, "dropped"),
    28: lambda v, t: _uint(v, 0, U32, "acked"),
    29: lambda v, t: _uint(v, 0, U16, "ack_base"),
    30: lambda v, t: _uint(v, 0, U32, "ack_bitmap"),
    31: lambda v, t: _uint(v, 0, MAX_UINT, "t0"),
    32: lambda v, t: _uint(v, 0, MAX_UINT, "t1"),
    33: lambda v, t: _uint(v, 0, U32, "owner"),
    34: lambda v, t: _bool(v, "latched"),
    35: lambda v, t: _entries(v, "sg", 0),
    36: lambda v, t: _entries(v, "pg", 0),
    37: lambda v, t: _text(v, 0, 4096, "text"),
    38: lambda v, t: _uint(v, 0, U32, "stale_ttl_ms"),
    39: lambda v, t: _uint(v, 0, U16, "estop_seq"),
    40: lambda v, t: _uint(v, 0, U8, "reason"),
    41: lambda v, t: _channels(v),
    43: lambda v, t: _uint(v, 0, U32, "offset"),
    44: lambda v, t: _uint(v, 0, U32, "total"),
    45: lambda v, t: _uint(v, 0, 3, "level"),
}

# The keys each frame type reads (§5); every other key is skipped (§3.3).
FRAME_KEYS: Dict[int, frozenset[int]] = {
    1: frozenset({1, 7, 8, 9, 10, 11}),
    2: frozenset({2, 9, 21, 22, 23, 24, 25, 33, 34, 35, 36, 38}),
    3: frozenset({10}),
    4: frozenset({41}),
    5: frozenset({11}),
    6: frozenset({35, 36}),
    7: frozenset({3, 4, 5, 6, 26, 27, 37}),
    8: frozenset({3, 6}),
    9: frozenset({3, 18, 19}),
    10: frozenset({3, 18, 19, 20}),
    11: frozenset({3, 15, 16, 17, 19}),
    12: frozenset({28, 29, 30}),
    13: frozenset({31}),
    14: frozenset({31, 32, 45}),
    15: frozenset({40}),
    16: frozenset({39}),
    17: frozenset({24, 37, 43, 44}),
    18: frozenset({37, 43, 44}),
}


def _build(t: int, f: Dict[int, Any]) -> Frame:
    def need(k: int) -> Any:
        if k not in f:
            raise _bad(f"missing required key {k}")
        return f[k]

    if t == FrameType.GRANT and 35 not in f and 36 not in f:
        raise _bad("GRANT carries neither key 35 nor key 36")
    if t == FrameType.ACK:
        if 28 in f:
            if 29 in f or 30 in f:
                raise _bad("ACK mixes the stream and bitmap forms")
            return Ack(acked=f[28])
        if 29 not in f or 30 not in f:
            raise _bad("ACK needs acked, or both ack_base and ack_bitmap")
        return Ack(ack_base=f[29], ack_bitmap=f[30])
    if t == FrameType.CATALOG and ((24 in f) != (37 in f)):
        raise _bad("CATALOG response needs both catalog_hash and text")
    if t in (FrameType.CATALOG, FrameType.HEALTH) and 44 in f:
        if 37 not in f:
            raise _bad("total without text")
        if f.get(43, 0) + len(f[37].encode("utf-8")) > f[44]:
            raise _bad("chunk extends past total")
    cls = CLASSES[t]
    kwargs: Dict[str, Any] = {}
    for fd in fields(cls):
        if fd.name == "type":
            continue
        key = (10 if t == FrameType.SUBSCRIBE else 11) if fd.name == "wishes" else KEYS[fd.name]
        if key in f:
            kwargs[fd.name] = f[key]
        elif fd.default is not None:  # no default, or HELLO's version: required on the wire
            kwargs[fd.name] = need(key)
    if t == FrameType.DATA:
        if kwargs.get("gap") is not True:
            kwargs["gap"] = None
        if not kwargs.get("dropped"):
            kwargs["dropped"] = None
    return cls(**kwargs)  # type: ignore[no-any-return]


def decode_frame(buf: bytes, max_bytes: int = MAX_HUB_FRAME_BYTES) -> Frame:
    """Decodes and validates one CBOR frame; raises :class:`FrameError` with the NACK code the
    hub's decoder gives the same bytes (``max_bytes`` 1024 is the hub's own limit, §7)."""
    buf = bytes(buf)
    if len(buf) > max_bytes:
        raise FrameError(Nack.TOO_LARGE, f"frame of {len(buf)} bytes (max {max_bytes})")
    try:
        cbor.check_frame_map(buf)
    except cbor.CborError as e:
        raise FrameError(Nack.TOO_LARGE if e.code == "TOO_LARGE" else Nack.MALFORMED, str(e)) from None
    m: Dict[int, Any] = cbor.decode(buf)
    items = list(m.items())
    t: Optional[int] = None
    try:
        if not items:
            raise _bad("empty map")
        if items[0][0] != 0:
            raise _bad("first key is not 0 (type)")
        t = _uint(items[0][1], 0, MAX_UINT, "type")
        if t < 1 or t > 18:
            raise _bad(f"unknown frame type {t}")
        wanted = FRAME_KEYS[t]
        got: Dict[int, Any] = {}
        for k, v in items[1:]:
            if k in wanted:
                got[k] = READERS[k](v, t)
                if k == 1 and t == FrameType.HELLO and got[k] != PROTOCOL_VERSION:
                    raise FrameError(Nack.VERSION, f"protocol version {got[k]}", t)
        return _build(t, got)
    except _Bad as e:
        raise FrameError(Nack.MALFORMED, str(e), t if t is not None and t <= U8 else None) from None
    except _TooManySamples as e:
        raise FrameError(Nack.TOO_LARGE, str(e), t) from None


def is_frame_from_hub(f: Frame) -> bool:
    return int(f.type) in FROM_HUB
