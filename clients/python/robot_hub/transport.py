"""Transports: one connection to the hub carrying whole frames (docs/protocol.md §2, §13.2).

TCP frames each carry a 16-bit big-endian length prefix; WebSocket carries one binary message
per frame (the ``websockets`` package). A transport is opened by :func:`open_transport` from a
``tcp://HOST:PORT`` or ``ws://HOST:PORT/`` address.
"""

from __future__ import annotations

import asyncio
import collections
from typing import Deque, Optional, Protocol
from urllib.parse import urlparse

import websockets
import websockets.client
import websockets.exceptions

from .frames import MAX_HUB_FRAME_BYTES


class Transport(Protocol):
    """Whole frames in and out. ``send`` never blocks; ``send_ahead`` jumps the transport's own
    queue (the ESTOP frame, §11.2)."""

    def send(self, frame: bytes) -> None: ...

    def send_ahead(self, frame: bytes) -> None: ...

    async def recv(self) -> Optional[bytes]:
        """The next whole frame; None once the connection is gone."""
        ...

    def close(self) -> None: ...


class TransportError(Exception):
    pass


class TcpTransport:
    """TCP with the length prefix of §2. A length of 0, or one above the largest frame a hub
    sends (4608 bytes, §7), means the stream is not the hub's: the connection is closed."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer
        self._closed = False
        self.refused: Optional[str] = None

    @classmethod
    async def open(cls, host: str, port: int) -> "TcpTransport":
        reader, writer = await asyncio.open_connection(host, port)
        return cls(reader, writer)

    def send(self, frame: bytes) -> None:
        if self._closed or self._writer.is_closing():
            return
        self._writer.write(len(frame).to_bytes(2, "big") + frame)

    # The socket has no queue of ours in front of it: ahead of everything is now.
    send_ahead = send

    async def recv(self) -> Optional[bytes]:
        if self._closed:
            return None
        try:
            head = await self._reader.readexactly(2)
            n = int.from_bytes(head, "big")
            if n == 0 or n > MAX_HUB_FRAME_BYTES:
                self.refused = f"length prefix {n}"
                self.close()
                return None
            return await self._reader.readexactly(n)
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            self.close()
            return None

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            try:
                self._writer.close()
            except (ConnectionError, OSError, RuntimeError):
                pass


class WsTransport:
    """WebSocket: one binary message per frame. A text message is not a frame of ours: it is
    handed on as an empty frame, which the client counts as bad."""

    def __init__(self, ws: websockets.client.WebSocketClientProtocol) -> None:
        self._ws = ws
        self._queue: Deque[bytes] = collections.deque()
        self._ready = asyncio.Event()
        self._closed = False
        self._writer = asyncio.ensure_future(self._write())

    @classmethod
    async def open(cls, url: str) -> "WsTransport":
        ws = await websockets.client.connect(
            url, max_size=MAX_HUB_FRAME_BYTES, compression=None, ping_interval=None, close_timeout=1
        )
        return cls(ws)

    def send(self, frame: bytes) -> None:
        if not self._closed:
            self._queue.append(frame)
            self._ready.set()

    def send_ahead(self, frame: bytes) -> None:
        if not self._closed:
            self._queue.appendleft(frame)
            self._ready.set()

    async def _write(self) -> None:
        try:
            while not self._closed:
                await self._ready.wait()
                self._ready.clear()
                while self._queue and not self._closed:
                    await self._ws.send(self._queue.popleft())
        except (websockets.exceptions.ConnectionClosed, ConnectionError, OSError):
            self.close()

    async def recv(self) -> Optional[bytes]:
        if self._closed:
            return None
        try:
            m = await self._ws.recv()
        except (websockets.exceptions.ConnectionClosed, ConnectionError, OSError):
            self.close()
            return None
        return m if isinstance(m, bytes) else b""

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._ready.set()
            asyncio.ensure_future(self._ws.close())


async def open_transport(url: str) -> Transport:
    """``tcp://HOST:PORT`` or ``ws://HOST:PORT/PATH`` (``wss://`` too)."""
    u = urlparse(url)
    if u.scheme == "tcp":
        if not u.hostname or not u.port:
            raise TransportError(f"{url}: tcp:// needs a host and a port")
        return await TcpTransport.open(u.hostname, u.port)
    if u.scheme in ("ws", "wss"):
        return await WsTransport.open(url)
    raise TransportError(f"{url}: the address must start with tcp://, ws:// or wss://")
