"""The conformance vectors of docs/protocol.md §8 (test/vectors/), decoded and encoded by the
Python client's codec exactly as the hub's own decoder and encoder do."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from robot_hub.estop import EstopFrame, EstopFrameError, decode_estop, encode_estop
from robot_hub.frames import CLASSES, FrameError, MAX_FRAME_BYTES, SubGrant, PubGrant, SubWish, PubWish, decode_frame, encode_frame

VECTORS = Path(__file__).resolve().parents[3] / "test" / "vectors"


def load(name: str) -> Any:
    return json.loads((VECTORS / f"{name}.json").read_text())


def snake(name: str) -> str:
    return re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), name)


def from_json(v: Any) -> Any:
    """The vectors' JSON (§8): {"$bytes": hex} and {"$num": "NaN" | "Infinity" | "-Infinity" | "-0"}."""
    if isinstance(v, dict):
        if set(v) == {"$bytes"}:
            return bytes.fromhex(v["$bytes"])
        if set(v) == {"$num"}:
            return {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf, "-0": -0.0}[v["$num"]]
        return {snake(k): from_json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [from_json(x) for x in v]
    return v


ENTRY = {"sub_wishes": SubWish, "pub_wishes": PubWish, "sub_grants": SubGrant, "pub_grants": PubGrant}


def build(frame: dict[str, Any]) -> Any:
    """The vector's frame as the client's dataclass."""
    d = from_json(frame)
    t = d.pop("type")
    cls = CLASSES[t]
    for k, v in list(d.items()):
        if k in ENTRY:
            d[k] = [ENTRY[k](**e) for e in v]
        elif k == "wishes":
            d[k] = [(SubWish if t == 3 else PubWish)(**e) for e in v]
    return cls(**d)


def same(a: Any, b: Any) -> bool:
    """Equal, with NaN equal to NaN, −0 told from 0, and 1 not equal to True."""
    if isinstance(a, float) or isinstance(b, float):
        if not isinstance(a, (int, float)) or not isinstance(b, (int, float)) or isinstance(a, bool) or isinstance(b, bool):
            return False
        if math.isnan(a) or math.isnan(b):
            return math.isnan(a) and math.isnan(b)
        return a == b and math.copysign(1, a) == math.copysign(1, b)
    if dataclasses.is_dataclass(a) and dataclasses.is_dataclass(b):
        return type(a) is type(b) and all(same(getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    return type(a) is type(b) and a == b


FRAMES = load("frames")
LENIENT = load("lenient")
INVALID = load("invalid")
ESTOP = load("estop")


def test_vectors_are_there() -> None:
    assert len(FRAMES) >= 18 and len(INVALID) > 0 and len(LENIENT) > 0 and len(ESTOP["valid"]) > 0
    assert {v["frame"]["type"] for v in FRAMES} == set(range(1, 19)), "every frame type at least once"


@pytest.mark.parametrize("v", FRAMES, ids=[v["name"] for v in FRAMES])
def test_frames_decode_and_encode_exactly(v: dict[str, Any]) -> None:
    want = build(v["frame"])
    got = decode_frame(bytes.fromhex(v["hex"]), MAX_FRAME_BYTES if v["frame"]["type"] != 18 else 4608)
    assert same(got, want), f"{got!r} != {want!r}"
    assert encode_frame(want).hex() == v["hex"]


@pytest.mark.parametrize("v", LENIENT, ids=[v["name"] for v in LENIENT])
def test_lenient_decode_and_encode_canonically(v: dict[str, Any]) -> None:
    want = build(v["frame"])
    got = decode_frame(bytes.fromhex(v["hex"]), MAX_FRAME_BYTES)
    assert same(got, want), f"{got!r} != {want!r}"
    assert encode_frame(got).hex() == v["canonical"]


@pytest.mark.parametrize("v", INVALID, ids=[v["name"] for v in INVALID])
def test_invalid_refused_with_its_nack(v: dict[str, Any]) -> None:
    with pytest.raises(FrameError) as e:
        decode_frame(bytes.fromhex(v["hex"]), MAX_FRAME_BYTES)
    assert e.value.code.name == v["nack"], str(e.value)


@pytest.mark.parametrize("v", ESTOP["valid"], ids=[v["name"] for v in ESTOP["valid"]])
def test_estop_valid(v: dict[str, Any]) -> None:
    f = EstopFrame(**v["frame"])
    assert decode_estop(bytes.fromhex(v["hex"])) == f
    assert encode_estop(f).hex() == v["hex"]


@pytest.mark.parametrize("v", ESTOP["invalid"], ids=[v["name"] for v in ESTOP["invalid"]])
def test_estop_invalid(v: dict[str, Any]) -> None:
    with pytest.raises(EstopFrameError) as e:
        decode_estop(bytes.fromhex(v["hex"]))
    assert e.value.code == v["error"]
