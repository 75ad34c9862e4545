"""The hub client (docs/client.md "Python"): one session, kept alive across transport losses.

    async with connect("tcp://127.0.0.1:7000", name="planner") as hub:
        await hub.subscribe([SubWish(IMU, 50)])
        async for sample in hub.data(IMU):
            ...

What the protocol asks of a client, it does by itself: HELLO and WELCOME (§6.1), PINGs at least
once a second and every 200 ms while it owns control (§6.5, §6.8), the stream ACK after every 32
frames and at least once a second while frames arrive (§5.12, §13.2), resume with backoff after
a loss (§6.6), metering of its own publications and intents (§10.5).
"""

from __future__ import annotations

import asyncio
import collections
import json
import math
import random
import time
import weakref
from dataclasses import dataclass, field
from typing import (Any, Awaitable, Callable, Deque, Dict, Generic, List, Optional,
                    Sequence, Set, TypeVar, Union)

from .estop import (ESTOP_FLAG_LATCHED, EstopFrame, EstopFrameError, EstopKind, EstopSource,
                    decode_estop, encode_estop, is_estop)
from .frames import (MAX_FRAME_BYTES, Ack, Arg, Bundle, Catalog, Data, Echo, EstopClear,
                     FrameError, FrameType, Goodbye, GoodbyeReason, Grant, Health, Hello, Intent,
                     Nack, NackFrame, Ping, Pong, PubGrant, Publish, PubWish, SubGrant, Subscribe,
                     SubWish, Unsubscribe, Welcome, decode_frame, encode_frame, is_frame_from_hub,
                     nack_name)
from .transport import Transport, open_transport

T = TypeVar("T")

MAX_BUNDLE_SAMPLES = 32
INTENT_RATE = 20.0  # the hub's intent bucket (§9.3): 20 per second, 20 deep


class HubError(Exception):
    """``code``: NACK, TIMEOUT, LOST, CLOSED, NOT_CONNECTED, REFUSED, BAD_FRAME, TRANSPORT,
    CATALOG. ``nack`` is the NACK frame when the hub refused."""

    def __init__(self, code: str, message: str, nack: Optional[NackFrame] = None) -> None:
        super().__init__(message)
        self.code = code
        self.nack = nack


@dataclass
class Grants:
    """The hub's latest statement of this session's grants (§10.2): show these, never the wishes."""

    sub: Dict[int, SubGrant] = field(default_factory=dict)
    pub: Dict[int, PubGrant] = field(default_factory=dict)


@dataclass
class EstopState:
    latched: bool
    frame: Optional[EstopFrame]


@dataclass
class RequestResult(Generic[T]):
    """What answered a SUBSCRIBE or PUBLISH: the GRANT, the grants of the channels asked for,
    and the wishes refused with a NACK naming their channel (channel id, NACK code)."""

    grant: Optional[Grant]
    granted: List[T]
    refused: List[tuple[int, int]]


@dataclass
class Counters:
    frames: int = 0
    bad_frames: int = 0
    acks_sent: int = 0
    pings_sent: int = 0
    connects: int = 0
    resumes: int = 0
    new_sessions: int = 0
    estops: int = 0


@dataclass
class ChannelInfo:
    id: int
    name: str
    cls: str
    fields: List[Dict[str, str]]
    raw: Dict[str, Any]


class CatalogIndex:
    """The hub's catalog (§9.2), by id and by name."""

    def __init__(self, text: str, hash_: bytes) -> None:
        self.text = text
        self.hash = hash_
        doc = json.loads(text)
        self.channels: Dict[int, ChannelInfo] = {}
        self._names: Dict[str, ChannelInfo] = {}
        for c in doc.get("channels", []):
            info = ChannelInfo(int(c["id"]), str(c["name"]), str(c.get("class", "")), list(c.get("fields", [])), c)
            self.channels[info.id] = info
            self._names[info.name] = info

    def by_name(self, name: str) -> ChannelInfo:
        try:
            return self._names[name]
        except KeyError:
            raise KeyError(f"no channel named {name!r} in the hub's catalog") from None

    def id(self, name: str) -> int:
        return self.by_name(name).id


def fnv1a64(data: bytes) -> bytes:
    h = 0xCBF29CE484222325
    for b in data:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return h.to_bytes(8, "big")


class _Bucket:
    """The hub's token bucket rule (§10.5), less a reserve for bunching on the way."""

    def __init__(self, rate: float, capacity: float, now: float) -> None:
        self.rate = rate
        self.capacity = max(capacity, 0.0)
        self.tokens = self.capacity
        self.at = now

    def regrant(self, rate: float, capacity: float) -> None:
        self.rate = rate
        self.capacity = max(capacity, 0.0)
        self.tokens = min(self.tokens, self.capacity)

    def available(self, now: float) -> float:
        self.tokens = min(self.capacity, self.tokens + (now - self.at) * self.rate)
        self.at = now
        return self.tokens

    def take(self, n: float, now: float) -> bool:
        if self.available(now) + 1e-9 < n:
            return False
        self.tokens -= n
        return True


@dataclass
class PublicationStats:
    """Per publication: samples sent, refused by the client's own meter (or while not active),
    invalid (not ``[t, one finite number per catalog field]``, never sent), and the NACKs the hub
    sent anyway (``rate_limited``: RATE_LIMITED; ``nacked``: every other code)."""

    sent: int = 0
    refused: int = 0
    invalid: int = 0
    nacked: int = 0
    rate_limited: int = 0


class Feed(Generic[T]):
    """An async iterator over one of the client's feeds. It takes items from the moment it is
    made (not from its first ``__anext__``), keeps at most ``depth`` of them, and drops the oldest
    when its reader falls behind (counted in ``lost``): a slow reader never slows the session. It
    ends when the client closes. Drop it, or call :meth:`close`, to stop taking items."""

    def __init__(self, owner: "_Broadcast[T]", depth: int) -> None:
        self._owner = owner
        self._queue: Deque[Optional[T]] = collections.deque()
        self._wake = asyncio.Event()
        self._depth = depth
        self.lost = 0

    def _put(self, item: Optional[T]) -> None:
        if len(self._queue) >= self._depth:
            self._queue.popleft()
            self.lost += 1
        self._queue.append(item)
        self._wake.set()

    def __aiter__(self) -> "Feed[T]":
        return self

    async def __anext__(self) -> T:
        while not self._queue:
            self._wake.clear()
            await self._wake.wait()
        item = self._queue.popleft()
        if item is None:
            self.close()
            raise StopAsyncIteration
        return item

    def close(self) -> None:
        self._owner.feeds.discard(self)


class _Broadcast(Generic[T]):
    """Fan-out to :class:`Feed` iterators; feeds nobody holds any more are forgotten."""

    def __init__(self, depth: int) -> None:
        self.depth = depth
        self.feeds: "weakref.WeakSet[Feed[T]]" = weakref.WeakSet()

    def put(self, item: T) -> None:
        for f in list(self.feeds):
            f._put(item)

    def end(self) -> None:
        for f in list(self.feeds):
            f._put(None)

    def iterate(self, first: Optional[T] = None, closed: bool = False) -> Feed[T]:
        f: Feed[T] = Feed(self, self.depth)
        if first is not None:
            f._put(first)
        if closed:
            f._put(None)
        else:
            self.feeds.add(f)
        return f


@dataclass
class _Fence:
    """A request followed by a PING: the GRANT and NACKs before its PONG are its answer."""

    frame: Union[Subscribe, Unsubscribe, Publish]
    future: "asyncio.Future[tuple[Optional[Grant], List[NackFrame]]]"
    sent: bool = False
    grant: Optional[Grant] = None
    nacks: List[NackFrame] = field(default_factory=list)


class HubClient:
    """One session with a hub over TCP or WebSocket. Use :func:`connect`."""

    def __init__(
        self,
        url: str,
        *,
        name: str,
        credential: Optional[Union[bytes, str]] = None,
        subscriptions: Sequence[SubWish] = (),
        publications: Sequence[PubWish] = (),
        ping_interval: float = 1.0,
        owner_ping_interval: float = 0.2,
        ack_interval: float = 1.0,
        ack_every_frames: int = 32,
        request_timeout: float = 5.0,
        intent_timeout: float = 2.0,
        silence_timeout: float = 5.0,
        reconnect: bool = True,
        backoff_min: float = 0.1,
        backoff_max: float = 5.0,
        jitter_reserve: float = 0.1,
        queue_depth: int = 1024,
        transport: Optional[Callable[[], Awaitable[Transport]]] = None,
    ) -> None:
        self.url = url
        self.name = name
        self.credential = credential.encode() if isinstance(credential, str) else credential
        self._sub_wishes: Dict[int, SubWish] = {w.channel_id: w for w in subscriptions}
        self._pub_wishes: Dict[int, PubWish] = {w.channel_id: w for w in publications}
        self.ping_interval = ping_interval
        self.owner_ping_interval = owner_ping_interval
        self.ack_interval = ack_interval
        self.ack_every_frames = ack_every_frames
        self.request_timeout = request_timeout
        self.intent_timeout = intent_timeout
        self.silence_timeout = silence_timeout
        self.reconnect = reconnect
        self.backoff_min = backoff_min
        self.backoff_max = backoff_max
        self.jitter_reserve = jitter_reserve
        self._open = transport or (lambda: open_transport(url))

        self.state = "closed"
        self.welcome: Optional[Welcome] = None
        self.session_id = 0
        self.tier = 0
        self.owner = 0
        self.latched = False
        self.last_estop: Optional[EstopFrame] = None
        self.grants = Grants()
        self.counters = Counters()
        self.rtt_ms: Optional[float] = None
        # The §10.3 level the hub reads this session's link at, from its last PONG (§5.14 level).
        self.link_level: Optional[int] = None
        self.catalog: Optional[CatalogIndex] = None
        self.publications: Dict[int, PublicationStats] = {}
        self.error: Optional[BaseException] = None
        self.channel_seq: Dict[int, int] = {}
        #: The last 16 waits before a reconnect, in seconds (the backoff of §6.6).
        self.reconnect_delays: List[float] = []

        self._token: Optional[bytes] = None
        self._tr: Optional[Transport] = None
        self._task: Optional[asyncio.Task[None]] = None
        self._first: Optional[asyncio.Future[Welcome]] = None
        self._closing = False
        self._received = 0  # frames on the current transport (§5.12)
        self._acked_sent = 0
        self._last_ack = 0.0
        self._last_ping = 0.0
        self._last_heard = 0.0
        self._pings: Deque[Optional[_Fence]] = collections.deque()  # one entry per PING in flight
        self._fences: Deque[_Fence] = collections.deque()  # requests waiting for their answer
        self._open_fence: Optional[_Fence] = None
        self._intents: Dict[int, asyncio.Future[Echo]] = {}
        self._next_request = 1
        self._intent_bucket = _Bucket(INTENT_RATE, INTENT_RATE * (1 - jitter_reserve), self._now())
        self._buckets: Dict[int, _Bucket] = {}
        self._estop_seq = 0
        self._estop_pending: Optional[bytes] = None
        self._clears: List[asyncio.Future[EstopFrame]] = []
        self._chunks: Optional[asyncio.Future[Union[Catalog, Health]]] = None
        self._chunk_lock = asyncio.Lock()
        self._data: Dict[Optional[int], _Broadcast[Data]] = {}
        self._grant_feed: _Broadcast[Grants] = _Broadcast(64)
        self._estop_feed: _Broadcast[EstopState] = _Broadcast(64)
        self._nack_feed: _Broadcast[NackFrame] = _Broadcast(64)
        self._state_feed: _Broadcast[str] = _Broadcast(64)
        self._queue_depth = queue_depth
        self._rng = random.Random()

    # ------------------------------------------------------------ session

    @staticmethod
    def _now() -> float:
        return time.monotonic()

    def now_ms(self) -> int:
        """The client's clock in whole milliseconds (PING t0, sample times)."""
        return int(time.monotonic() * 1000)

    @property
    def owns_control(self) -> bool:
        return self.session_id != 0 and self.owner == self.session_id

    async def connect(self) -> Welcome:
        """HELLO, answered by WELCOME. Raises :class:`HubError` when the transport cannot open or
        the HELLO is refused for good (VERSION, FORBIDDEN); NO_SLOTS and HUB_PRESSURE are
        retried after ``retry_after_ms``. After that every loss is repaired by resuming."""
        if self._task is not None:
            raise HubError("REFUSED", "connect() was called already")
        loop = asyncio.get_running_loop()
        self._first = loop.create_future()
        self._set_state("connecting")
        self._task = asyncio.ensure_future(self._run())
        return await self._first

    async def close(self) -> None:
        """GOODBYE, then the transport is closed; everything pending fails CLOSED."""
        if self._closing:
            return
        self._closing = True
        if self._tr is not None and self.state == "active":
            self._write(Goodbye(reason=GoodbyeReason.NORMAL))
            await asyncio.sleep(0.05)
        if self._tr is not None:
            self._tr.close()
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
        self._finish(HubError("CLOSED", "the client was closed"))

    async def __aenter__(self) -> "HubClient":
        if self._task is None:
            await self.connect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def _set_state(self, s: str) -> None:
        if s != self.state:
            self.state = s
            self._state_feed.put(s)

    def _finish(self, err: BaseException) -> None:
        self._closing = True
        if self.error is None and not (isinstance(err, HubError) and err.code == "CLOSED"):
            self.error = err
        self._set_state("closed")
        if self._first is not None and not self._first.done():
            self._first.set_exception(err)
        self._fail_pending(err, include_requests=True)
        feeds: List[_Broadcast[Any]] = [*self._data.values(), self._grant_feed, self._estop_feed, self._nack_feed, self._state_feed]
        for b in feeds:
            b.end()

    def _fail_pending(self, err: BaseException, include_requests: bool) -> None:
        for fut in self._intents.values():
            if not fut.done():
                fut.set_exception(err if include_requests else HubError("LOST", "the transport was lost with the intent in flight; it is never re-sent"))
        self._intents.clear()
        if self._chunks is not None and not self._chunks.done():
            self._chunks.set_exception(err if include_requests else HubError("LOST", "the transport was lost"))
        if include_requests:
            for f in self._fences:
                if not f.future.done():
                    f.future.set_exception(err)
            self._fences.clear()
            for c in self._clears:
                if not c.done():
                    c.set_exception(err)
            self._clears.clear()

    async def _run(self) -> None:
        delay = self.backoff_min
        welcomed_once = False
        while not self._closing:
            try:
                tr = await asyncio.wait_for(self._open(), self.request_timeout)
            except Exception as e:  # any failure to open: refused, unreachable, timed out, a bad address
                if not welcomed_once or not self.reconnect:
                    self._finish(HubError("TRANSPORT", f"cannot open {self.url}: {e}"))
                    return
                await self._backoff(delay)
                delay = min(delay * 2, self.backoff_max)
                continue
            self.counters.connects += 1
            outcome = await self._serve(tr)
            if self._closing:
                return
            if outcome == "welcomed-then-lost":
                welcomed_once = True
                delay = self.backoff_min
            if isinstance(outcome, BaseException):
                self._finish(outcome)
                return
            if isinstance(outcome, float):  # NO_SLOTS / HUB_PRESSURE: the hub named the wait
                await asyncio.sleep(outcome)
                continue
            if not self.reconnect and welcomed_once:
                self._finish(HubError("LOST", "the transport was lost and reconnect is off"))
                return
            if self.welcome is None and not welcomed_once and outcome == "lost":
                self._finish(HubError("TRANSPORT", f"{self.url} closed before WELCOME"))
                return
            await self._backoff(delay)
            delay = min(delay * 2, self.backoff_max)

    async def _backoff(self, step: float) -> None:
        d = self._jitter(step)
        self.reconnect_delays.append(d)
        del self.reconnect_delays[:-16]
        await asyncio.sleep(d)

    def _jitter(self, step: float) -> float:
        """Each delay is drawn in [½, 1] of its step (docs/client.md)."""
        return step * (0.5 + 0.5 * self._rng.random())

    def _hello(self) -> Hello:
        if self._token is not None:
            return Hello(name=self.name, credential=self.credential, resume_token=self._token)
        return Hello(
            name=self.name,
            credential=self.credential,
            sub_wishes=list(self._sub_wishes.values()) or None,
            pub_wishes=list(self._pub_wishes.values()) or None,
        )

    async def _serve(self, tr: Transport) -> Union[str, float, BaseException]:
        """One transport's life: HELLO, WELCOME, traffic, until it is lost."""
        self._tr = tr
        self._received = 0
        self._acked_sent = 0
        self._pings.clear()
        for f in self._fences:
            f.sent = False
        self._open_fence = None
        now = self._now()
        self._last_heard = now
        self._last_ack = now
        self._last_ping = now
        self._handshake: asyncio.Future[Union[str, float, BaseException]] = asyncio.get_running_loop().create_future()
        self._active_here = False
        if self._estop_pending is not None:
            tr.send_ahead(self._estop_pending)
            self._estop_pending = None
        self._write(self._hello())
        pacer = asyncio.ensure_future(self._pace(tr))
        try:
            while True:
                b = await tr.recv()
                if b is None:
                    break
                self._on_bytes(b)
                if self._handshake.done() and not self._active_here:
                    break
        finally:
            pacer.cancel()
            tr.close()
            self._tr = None
        if self._handshake.done():
            outcome = self._handshake.result()
            if not isinstance(outcome, str) or outcome != "welcomed":
                return outcome
        if self._active_here:
            if not self._closing:
                self._set_state("stale")
                self._fail_pending(HubError("LOST", "transport lost"), include_requests=False)
            return "welcomed-then-lost"
        return "lost"

    async def _pace(self, tr: Transport) -> None:
        """PINGs (§5.13, §6.5), ACKs (§5.12), the silence timeout and intent timeouts."""
        while True:
            await asyncio.sleep(0.05)
            now = self._now()
            if self.silence_timeout > 0 and now - self._last_heard > self.silence_timeout:
                tr.close()
                return
            if not self._active_here:
                continue
            every = self.owner_ping_interval if self.owns_control else self.ping_interval
            if now - self._last_ping >= every:
                self._ping(None)
            if self._received != self._acked_sent and now - self._last_ack >= self.ack_interval:
                self._ack()

    def _ping(self, fence: Optional[_Fence]) -> None:
        self._last_ping = self._now()
        self._pings.append(fence)
        self.counters.pings_sent += 1
        self._write(Ping(t0=self.now_ms()))

    def _ack(self) -> None:
        self._acked_sent = self._received
        self._last_ack = self._now()
        self.counters.acks_sent += 1
        self._write(Ack(acked=self._received % 2**32))

    def _write(self, f: Any) -> bool:
        tr = self._tr
        if tr is None:
            return False
        b = encode_frame(f)
        limit = self.welcome.mtu if self.welcome is not None and self._active_here else MAX_FRAME_BYTES
        if len(b) > min(limit, MAX_FRAME_BYTES):
            raise HubError("REFUSED", f"a frame of {len(b)} bytes is over the session's mtu ({limit})")
        # A frame the hub would refuse MALFORMED or TOO_LARGE is refused here instead, so that it
        # never counts toward the hub's misbehaviour limit (§12.5).
        try:
            decode_frame(b, MAX_FRAME_BYTES)
        except FrameError as e:
            raise HubError("REFUSED", f"the hub would refuse this {FrameType(f.type).name}: {e}") from None
        tr.send(b)
        return True

    # ------------------------------------------------------------ receiving

    def _on_bytes(self, b: bytes) -> None:
        self._received += 1
        self.counters.frames += 1
        self._last_heard = self._now()
        if is_estop(b):
            try:
                self._on_estop(decode_estop(b))
            except EstopFrameError:
                self.counters.bad_frames += 1
        else:
            try:
                f = decode_frame(b)
            except FrameError:
                self.counters.bad_frames += 1
                f = None
            if f is not None:
                if not is_frame_from_hub(f):
                    self.counters.bad_frames += 1
                else:
                    self._dispatch(f)
        if self._active_here and self._received - self._acked_sent >= self.ack_every_frames:
            self._ack()

    def _dispatch(self, f: Any) -> None:
        t = f.type
        if t == FrameType.WELCOME:
            self._on_welcome(f)
        elif t == FrameType.DATA:
            self._on_data(f)
        elif t == FrameType.GRANT:
            self._on_grant(f)
        elif t == FrameType.NACK:
            self._on_nack(f)
        elif t == FrameType.ECHO:
            self._on_echo(f)
        elif t == FrameType.PING:
            self._write(Pong(t0=f.t0, t1=self.now_ms()))
        elif t == FrameType.PONG:
            self._on_pong(f)
        elif t == FrameType.GOODBYE:
            self._on_goodbye(f)
        elif t in (FrameType.CATALOG, FrameType.HEALTH):
            if self._chunks is not None and not self._chunks.done():
                self._chunks.set_result(f)

    def _on_welcome(self, w: Welcome) -> None:
        resumed = self._token is not None and self.session_id == w.session_id
        if self._handshake.done() or self._active_here:
            self.counters.bad_frames += 1
            return
        self.welcome = w
        self._token = w.resume_token
        if resumed:
            self.counters.resumes += 1
        else:
            self.counters.new_sessions += 1
            self._estop_seq = 0
        self.session_id = w.session_id
        self.tier = w.tier
        self.owner = w.owner
        self.latched = w.latched
        if self.catalog is not None and self.catalog.hash != w.catalog_hash:
            self.catalog = None
        self._active_here = True
        self._handshake.set_result("welcomed")
        self._apply_grants(w.sub_grants, w.pub_grants, replace_pub=True)
        self._set_state("active")
        if self._first is not None and not self._first.done():
            self._first.set_result(w)
        # Requests still waiting when the transport was lost are asked again (docs/client.md).
        for fence in self._fences:
            self._send_fence(fence)

    def _apply_grants(self, subs: Optional[List[SubGrant]], pubs: Optional[List[PubGrant]], replace_pub: bool) -> None:
        now = self._now()
        if subs is not None:
            self.grants.sub = {g.channel_id: g for g in subs}
        if pubs is not None:
            if replace_pub:
                self.grants.pub = {}
            for g in pubs:
                self.grants.pub[g.channel_id] = g
            for g in pubs:
                cap = (g.burst if g.burst > 0 else g.granted_rate_hz) - g.granted_rate_hz * self.jitter_reserve
                b = self._buckets.get(g.channel_id)
                if b is None:
                    self._buckets[g.channel_id] = _Bucket(g.granted_rate_hz, cap, now)
                else:
                    b.available(now)
                    b.regrant(g.granted_rate_hz, cap)
        self._grant_feed.put(Grants(dict(self.grants.sub), dict(self.grants.pub)))

    def _on_grant(self, g: Grant) -> None:
        fence = self._open_fence
        if fence is not None:
            fence.grant = g
            if g.pub_grants is not None and isinstance(fence.frame, Publish):
                # The answer to a PUBLISH lists that PUBLISH's grants: a wish left out was withdrawn.
                for w in fence.frame.wishes:
                    if w.channel_id not in {x.channel_id for x in g.pub_grants}:
                        self.grants.pub.pop(w.channel_id, None)
        self._apply_grants(g.sub_grants, g.pub_grants, replace_pub=False)

    def _on_data(self, d: Data) -> None:
        self.channel_seq[d.channel_id] = d.seq
        if self.catalog is not None and d.values:
            info = self.catalog.channels.get(d.channel_id)
            if info is not None and info.name == "control-owner":
                self.owner = int(d.values[0])
        for key in (d.channel_id, None):
            b = self._data.get(key)
            if b is not None:
                b.put(d)

    def _on_nack(self, n: NackFrame) -> None:
        self._nack_feed.put(n)
        if not self._handshake.done():
            self._on_hello_nack(n)
            return
        if n.request_id is not None and n.request_id in self._intents:
            fut = self._intents.pop(n.request_id)
            if n.code == Nack.NOT_OWNER:
                self.owner = 0 if self.owns_control else self.owner
            if not fut.done():
                fut.set_exception(HubError("NACK", f"intent refused: {nack_name(n.code)}", n))
            return
        if n.frame_type == FrameType.ESTOP_CLEAR:
            for c in self._clears:
                if not c.done():
                    c.set_exception(HubError("NACK", f"clear refused: {nack_name(n.code)}", n))
            self._clears.clear()
            return
        if n.frame_type == FrameType.BUNDLE and n.channel_id is not None:
            st = self.publications.setdefault(n.channel_id, PublicationStats())
            if n.code == Nack.RATE_LIMITED:
                st.rate_limited += 1
            else:
                st.nacked += 1
        if n.code == Nack.NOT_OWNER and self.owns_control:
            self.owner = 0
        if self._open_fence is not None and n.frame_type in (FrameType.SUBSCRIBE, FrameType.UNSUBSCRIBE, FrameType.PUBLISH):
            self._open_fence.nacks.append(n)
        if self._chunks is not None and not self._chunks.done() and n.frame_type in (FrameType.CATALOG, FrameType.HEALTH):
            self._chunks.set_exception(HubError("NACK", f"{FrameType(n.frame_type).name} refused: {nack_name(n.code)}", n))
        if n.code == Nack.NOT_READY and self.state == "active" and self._tr is not None:
            # The hub no longer ties this transport to the session: resume at once on it.
            self._active_here = False
            self._handshake = asyncio.get_running_loop().create_future()
            self._write(self._hello())

    def _on_hello_nack(self, n: NackFrame) -> None:
        if n.code == Nack.UNKNOWN_SESSION and self._token is not None:
            # The session expired or was reclaimed: a new one, on the same transport.
            self._token = None
            self.session_id = 0
            self.owner = 0
            self._write(self._hello())
            return
        if n.code in (Nack.NO_SLOTS, Nack.HUB_PRESSURE):
            self._handshake.set_result(max(n.retry_after_ms or 1000, 100) / 1000.0)
            return
        if n.code in (Nack.VERSION, Nack.FORBIDDEN, Nack.MALFORMED):
            self._handshake.set_result(HubError("NACK", f"HELLO refused: {nack_name(n.code)}", n))
            return

    def _on_echo(self, e: Echo) -> None:
        fut = self._intents.pop(e.request_id, None)
        if fut is None:
            self.counters.bad_frames += 1
            return
        if self.catalog is not None and e.result == 0:
            info = self.catalog.channels.get(e.channel_id)
            if info is not None and info.name == "take_control":
                self.owner = self.session_id
            elif info is not None and info.name == "release_control" and self.owns_control:
                self.owner = 0
        if not fut.done():
            fut.set_result(e)

    def _on_pong(self, p: Pong) -> None:
        if p.level is not None:
            self.link_level = p.level
        if not self._pings:
            return
        fence = self._pings.popleft()
        self.rtt_ms = max(0.0, self.now_ms() - p.t0)
        if fence is None:
            return
        if self._open_fence is None:
            # The PING before the request: from here on, GRANTs and NACKs are its answer.
            self._open_fence = fence
            return
        if self._open_fence is fence:
            self._open_fence = None
            if fence in self._fences:
                self._fences.remove(fence)
            if not fence.future.done():
                fence.future.set_result((fence.grant, fence.nacks))

    def _on_goodbye(self, g: Goodbye) -> None:
        reason = g.reason or 0
        if reason == GoodbyeReason.SHUTDOWN:
            # The hub is stopping: its tokens go with it; come back as a new session.
            self._token = None
            self.session_id = 0
            self.owner = 0
            if self._tr is not None:
                self._tr.close()
            return
        if self._tr is not None:
            self._tr.close()
        self._closing = True
        self._finish(HubError("CLOSED", f"the hub said GOODBYE ({GoodbyeReason(reason).name if reason <= 4 else reason})"))

    def _on_estop(self, e: EstopFrame) -> None:
        self.last_estop = e
        self.latched = e.kind == EstopKind.ASSERT
        self._estop_feed.put(EstopState(self.latched, e))
        if e.kind == EstopKind.CLEARED:
            for c in self._clears:
                if not c.done():
                    c.set_result(e)
            self._clears.clear()

    # ------------------------------------------------------------ iterators

    def data(self, channel_id: Optional[int] = None) -> Feed[Data]:
        """DATA frames of one channel (or of every channel), as they arrive. ``gap`` is set when
        what came before is missing; ``seq`` jumps show what shedding or a resume left out."""
        b = self._data.get(channel_id)
        if b is None:
            b = self._data[channel_id] = _Broadcast(self._queue_depth)
        return b.iterate(closed=self._closing)

    def grant_updates(self) -> Feed[Grants]:
        """The current grants first, then every GRANT (answered or unsolicited) and WELCOME."""
        return self._grant_feed.iterate(Grants(dict(self.grants.sub), dict(self.grants.pub)), self._closing)

    def estop_states(self) -> Feed[EstopState]:
        """The ESTOP state now, then every ESTOP frame (a latch in force when the client joins or
        resumes arrives right after WELCOME, §11.2)."""
        return self._estop_feed.iterate(EstopState(self.latched, self.last_estop), self._closing)

    def nacks(self) -> Feed[NackFrame]:
        return self._nack_feed.iterate(None, self._closing)

    def states(self) -> Feed[str]:
        return self._state_feed.iterate(self.state, self._closing)

    # ------------------------------------------------------------ requests

    def _require_active(self) -> None:
        if self._closing:
            raise HubError("CLOSED", "the client is closed")
        if self.state != "active":
            raise HubError("NOT_CONNECTED", f"the session is {self.state}")

    def _send_fence(self, fence: _Fence) -> None:
        if self._tr is None or not self._active_here:
            return
        fence.sent = True
        fence.grant = None
        fence.nacks = []
        self._ping(fence)
        self._write(fence.frame)
        self._ping(fence)

    async def _request(self, frame: Union[Subscribe, Unsubscribe, Publish]) -> tuple[Optional[Grant], List[NackFrame]]:
        if self._closing:
            raise HubError("CLOSED", "the client is closed")
        fence = _Fence(frame, asyncio.get_running_loop().create_future())
        self._fences.append(fence)
        self._send_fence(fence)
        try:
            return await asyncio.wait_for(asyncio.shield(fence.future), self.request_timeout)
        except asyncio.TimeoutError:
            if fence in self._fences:
                self._fences.remove(fence)
            raise HubError("TIMEOUT", f"no answer to {FrameType(frame.type).name} in {self.request_timeout} s") from None

    async def subscribe(self, wishes: Sequence[SubWish]) -> RequestResult[SubGrant]:
        """SUBSCRIBE (§6.4): the GRANT that answered, the grants of these channels, the refusals."""
        for w in wishes:
            self._sub_wishes[w.channel_id] = w
        grant, nacks = await self._request(Subscribe(list(wishes)))
        refused = [(n.channel_id or 0, n.code) for n in nacks if n.channel_id is not None]
        for ch, _ in refused:
            self._sub_wishes.pop(ch, None)
        asked = {w.channel_id for w in wishes}
        return RequestResult(grant, [g for g in (grant.sub_grants or []) if g.channel_id in asked] if grant else [], refused)

    async def unsubscribe(self, channel_ids: Sequence[int]) -> Optional[Grant]:
        for c in channel_ids:
            self._sub_wishes.pop(c, None)
        grant, _ = await self._request(Unsubscribe(list(channel_ids)))
        return grant

    async def publish(self, wishes: Sequence[PubWish]) -> RequestResult[PubGrant]:
        """PUBLISH (§6.7): always answered by a GRANT; ``granted`` may be empty."""
        for w in wishes:
            self._pub_wishes[w.channel_id] = w
        grant, nacks = await self._request(Publish(list(wishes)))
        refused = [(n.channel_id or 0, n.code) for n in nacks if n.channel_id is not None]
        for ch, _ in refused:
            self._pub_wishes.pop(ch, None)
        return RequestResult(grant, list(grant.pub_grants or []) if grant else [], refused)

    def budget(self, channel_id: int) -> int:
        """How many samples :meth:`send` would let through now on this publication."""
        b = self._buckets.get(channel_id)
        if b is None or channel_id not in self.grants.pub:
            return 0
        return int(b.available(self._now()) + 1e-9)

    def send(self, channel_id: int, samples: Sequence[Sequence[float]]) -> int:
        """BUNDLE (§5.8): samples ``[t, v1, …]`` (t in ms, an unsigned integer) on a granted
        publication, in bundles of at most 32 that fit the mtu. Metered by the client's own bucket
        at the granted rate: a bundle the bucket cannot pay for is refused here, whole, and never
        sent; nothing is queued for later. Returns the number of samples sent."""
        st = self.publications.setdefault(channel_id, PublicationStats())
        rows: List[List[float]] = []
        for sample in samples:
            row = self._valid_sample(channel_id, sample)
            if row is None:
                st.invalid += 1
            else:
                rows.append(row)
        if self.state != "active" or self._tr is None or channel_id not in self.grants.pub:
            st.refused += len(rows)
            return 0
        b = self._buckets[channel_id]
        sent = 0
        now = self._now()
        i = 0
        while i < len(rows):
            chunk = rows[i : i + MAX_BUNDLE_SAMPLES]
            frame = Bundle(channel_id, chunk)
            while len(encode_frame(frame)) > (self.welcome.mtu if self.welcome else MAX_FRAME_BYTES) and len(chunk) > 1:
                chunk = chunk[: len(chunk) // 2]
                frame = Bundle(channel_id, chunk)
            i += len(chunk)
            if not b.take(len(chunk), now):
                st.refused += len(chunk)
                continue
            try:
                self._write(frame)
            except HubError:
                st.refused += len(chunk)
                continue
            sent += len(chunk)
        st.sent += sent
        return sent

    def _valid_sample(self, channel_id: int, sample: Sequence[float]) -> Optional[List[float]]:
        """``[t, v1, …]``: t an unsigned integer (ms), then finite numbers, as many as the
        catalog's fields when the catalog is known (§6.7); None when it is not."""
        row = list(sample)
        if not row or len(row) > 33 or any(isinstance(x, bool) or not isinstance(x, (int, float)) for x in row):
            return None
        t = row[0]
        if not math.isfinite(t) or t < 0 or t != int(t):
            return None
        row[0] = int(t)
        if not all(math.isfinite(x) for x in row[1:]):
            return None
        info = self.catalog.channels.get(channel_id) if self.catalog is not None else None
        if info is not None and len(row) - 1 != len(info.fields):
            return None
        return row

    async def intent(self, channel_id: int, args: Optional[Sequence[Arg]] = None) -> Echo:
        """INTENT (§9.3): the ECHO whatever its result (0: done). Raises :class:`HubError` NACK
        when the hub refuses it, TIMEOUT, LOST (never re-sent: it may or may not have run), or
        REFUSED when the client's own intent bucket (20/s) is empty."""
        self._require_active()
        if not self._intent_bucket.take(1, self._now()):
            raise HubError("REFUSED", "over the hub's intent rate (20/s): not sent")
        rid = self._next_request
        self._next_request = (self._next_request + 1) % 2**32
        fut: asyncio.Future[Echo] = asyncio.get_running_loop().create_future()
        self._intents[rid] = fut
        self._write(Intent(channel_id, rid, list(args) if args is not None else None))
        try:
            return await asyncio.wait_for(asyncio.shield(fut), self.intent_timeout)
        except asyncio.TimeoutError:
            self._intents.pop(rid, None)
            raise HubError("TIMEOUT", f"no ECHO for intent {rid} in {self.intent_timeout} s") from None

    async def fetch_catalog(self) -> CatalogIndex:
        """CATALOG in chunks (§5.17), checked against the response's hash and WELCOME's."""
        if self.catalog is not None:
            return self.catalog
        parts: List[bytes] = []
        offset = 0
        h: Optional[bytes] = None
        while True:
            f = await self._chunk(Catalog(offset=offset or None))
            assert isinstance(f, Catalog)
            text = (f.text or "").encode("utf-8")
            h = f.catalog_hash
            parts.append(text)
            offset += len(text)
            if f.total is None or offset >= f.total or not text:
                break
        whole = b"".join(parts)
        if h is None or fnv1a64(whole) != h or (self.welcome is not None and self.welcome.catalog_hash != h):
            raise HubError("CATALOG", "the catalog's hash does not match")
        self.catalog = CatalogIndex(whole.decode("utf-8"), h)
        return self.catalog

    async def health(self) -> str:
        """The health report (maintainer tier only, §5.18)."""
        parts: List[bytes] = []
        offset: Optional[int] = None
        while True:
            f = await self._chunk(Health(offset=offset))
            text = (f.text or "").encode("utf-8")
            parts.append(text)
            if f.total is None:
                break
            offset = (f.offset or 0) + len(text)
            if offset >= f.total or not text:
                break
        return b"".join(parts).decode("utf-8")

    async def _chunk(self, req: Union[Catalog, Health]) -> Union[Catalog, Health]:
        async with self._chunk_lock:
            self._require_active()
            self._chunks = asyncio.get_running_loop().create_future()
            self._write(req)
            try:
                return await asyncio.wait_for(asyncio.shield(self._chunks), self.request_timeout)
            except asyncio.TimeoutError:
                raise HubError("TIMEOUT", f"no answer to {FrameType(req.type).name}") from None

    async def take_control(self) -> Echo:
        """The catalog intent ``take_control`` (§6.8); from then on the client pings every 200 ms."""
        cat = await self.fetch_catalog()
        e = await self.intent(cat.id("take_control"))
        if e.result == 0:
            self.owner = self.session_id
        return e

    async def release_control(self) -> Echo:
        cat = await self.fetch_catalog()
        return await self.intent(cat.id("release_control"))

    async def arm(self) -> Echo:
        """After a clear the hub refuses motion (NOT_ARMED) until the owner arms (§11.2)."""
        cat = await self.fetch_catalog()
        return await self.intent(cat.id("arm"))

    async def disarm(self) -> Echo:
        cat = await self.fetch_catalog()
        return await self.intent(cat.id("disarm"))

    def estop(self) -> bool:
        """ASSERT, written ahead of anything the transport still holds (§11.2). Any tier may stop.
        Returns False when no transport is open: the frame then goes first on the next one."""
        self._estop_seq = (self._estop_seq + 1) & 0xFFFF
        self.counters.estops += 1
        b = encode_estop(EstopFrame(EstopKind.ASSERT, EstopSource.CLIENT, ESTOP_FLAG_LATCHED, self.session_id, self._estop_seq))
        tr = self._tr
        if tr is None:
            self._estop_pending = b
            return False
        tr.send_ahead(b)
        return True

    async def clear_estop(self) -> EstopFrame:
        """ESTOP_CLEAR naming the ESTOP last seen (§5.16); returns the CLEARED announcement.
        Raises NACK FORBIDDEN, NOT_OWNER or ESTOP_LATCHED. A clear never restarts the robot."""
        self._require_active()
        seq = self.last_estop.seq if self.last_estop is not None and self.last_estop.kind == EstopKind.ASSERT else None
        fut: asyncio.Future[EstopFrame] = asyncio.get_running_loop().create_future()
        self._clears.append(fut)
        self._write(EstopClear(estop_seq=seq))
        try:
            return await asyncio.wait_for(asyncio.shield(fut), self.request_timeout)
        except asyncio.TimeoutError:
            raise HubError("TIMEOUT", "no answer to ESTOP_CLEAR") from None

    def drop_transport(self) -> None:
        """Closes the transport as a loss would (the session resumes): for tests and for links
        the application knows went bad."""
        if self._tr is not None:
            self._tr.close()


def connect(url: str, *, name: str = "python", **options: Any) -> HubClient:
    """A client for the hub at ``tcp://HOST:PORT`` or ``ws://HOST:PORT/``; ``async with`` it to
    open the session (HELLO/WELCOME) and close it (GOODBYE). Options: see :class:`HubClient`."""
    return HubClient(url, name=name, **options)
