"""The live tests reach a hub at the addresses in HUB_TCP (tcp://HOST:PORT) and HUB_WS
(ws://HOST:PORT/), with an operator-tier credential in HUB_OPERATOR_CREDENTIAL and a maintainer-tier one in
HUB_MAINTAINER_CREDENTIAL; `npm test`
(test/host/python-client.test.ts) serves the simulator on loopback and sets them."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def _need(name: str) -> str:
    v = os.environ.get(name)
    if not v:
        pytest.fail(f"{name} is not set: the live tests need a hub (run them through npm test, or set HUB_TCP, HUB_WS, HUB_OPERATOR_CREDENTIAL and HUB_MAINTAINER_CREDENTIAL)", pytrace=False)
    return v


@pytest.fixture(params=["tcp", "ws"])
def hub_url(request: pytest.FixtureRequest) -> str:
    return _need("HUB_TCP" if request.param == "tcp" else "HUB_WS")


@pytest.fixture
def tcp_url() -> str:
    return _need("HUB_TCP")


@pytest.fixture
def operator() -> bytes:
    return _need("HUB_OPERATOR_CREDENTIAL").encode()


@pytest.fixture
def maintainer() -> bytes:
    return _need("HUB_MAINTAINER_CREDENTIAL").encode()
