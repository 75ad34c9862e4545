"""A Python client for the robot hub (docs/client.md "Python"): asyncio, typed.

    async with connect("tcp://127.0.0.1:7000", name="planner") as hub:
        ...
"""

from .client import (CatalogIndex, Counters, EstopState, Feed, Grants, HubClient, HubError,
                     PublicationStats, RequestResult, connect)
from .estop import EstopFrame, EstopFrameError, EstopKind, EstopSource, decode_estop, encode_estop
from .frames import (Data, Echo, FrameError, FrameType, GoodbyeReason, Grant, Nack, NackFrame,
                     PubGrant, PubWish, SubGrant, SubWish, Welcome, decode_frame, encode_frame,
                     nack_name)
from .transport import Transport, TransportError, open_transport

__all__ = [
    "CatalogIndex", "Counters", "Data", "Echo", "EstopFrame", "EstopFrameError", "EstopKind",
    "EstopSource", "EstopState", "Feed", "FrameError", "FrameType", "GoodbyeReason", "Grant",
    "Grants", "HubClient", "HubError", "Nack", "NackFrame", "PubGrant", "PubWish",
    "PublicationStats", "RequestResult", "SubGrant", "SubWish", "Transport", "TransportError",
    "Welcome", "connect", "decode_estop", "decode_frame", "encode_estop", "encode_frame",
    "nack_name", "open_transport",
]
