"""A Python client for the robot hub (docs/client.md "Python"): asyncio, typed."""

from .estop import EstopFrame, EstopKind, EstopSource, decode_estop, encode_estop
from .frames import (
    Data,
    Echo,
    FrameError,
    FrameType,
    Nack,
    NackFrame,
    PubGrant,
    PubWish,
    SubGrant,
    SubWish,
    Welcome,
    decode_frame,
    encode_frame,
    nack_name,
)

__all__ = [
    "Data", "Echo", "EstopFrame", "EstopKind", "EstopSource", "FrameError", "FrameType", "Nack",
    "NackFrame", "PubGrant", "PubWish", "SubGrant", "SubWish", "Welcome", "decode_estop",
    "decode_frame", "encode_estop", "encode_frame", "nack_name",
]
