"""The Python client against the simulator over real sockets (TCP and WebSocket): HELLO and
WELCOME, imu DATA at the granted rate, a publication, an intent's ECHO, an ESTOP latched and
cleared by the control owner, a resume after the transport drops, and a session kept alive by
the client's PINGs and ACKs alone. Rates are measured on the hub's own timestamps (DATA `t`)."""

from __future__ import annotations

import asyncio
import json
from typing import Any, AsyncIterator, Awaitable, Callable, List, TypeVar

import pytest

from robot_hub import Nack, PubWish, SubWish
from robot_hub.client import HubClient, HubError, connect
from robot_hub.estop import EstopKind, EstopSource
from robot_hub.transport import Transport, open_transport

T = TypeVar("T")
WAIT = 10.0


async def within(aw: Awaitable[T], what: str, s: float = WAIT) -> T:
    try:
        return await asyncio.wait_for(aw, s)
    except asyncio.TimeoutError:
        raise AssertionError(f"{what}: not within {s} s") from None


async def take(it: AsyncIterator[T], n: int) -> List[T]:
    out: List[T] = []
    async for x in it:
        out.append(x)
        if len(out) >= n:
            break
    return out


async def until(what: str, check: Callable[[], bool], s: float = WAIT) -> None:
    async def loop() -> None:
        while not check():
            await asyncio.sleep(0.02)

    await within(loop(), what, s)


async def test_hello_welcome(hub_url: str, operator: bytes) -> None:
    async with connect(hub_url, name="py-hello", credential=operator) as hub:
        w = hub.welcome
        assert w is not None and hub.state == "active"
        assert w.session_id > 0 and hub.session_id == w.session_id
        assert len(w.resume_token) == 16 and len(w.catalog_hash) == 8 and w.hub_id
        assert w.tier == 1, "the operator credential gives the operator tier on loopback"
        assert hub.counters.new_sessions == 1
        cat = await within(hub.fetch_catalog(), "catalog")
        assert cat.by_name("imu").id == 10 and cat.hash == w.catalog_hash
    assert hub.state == "closed"
    async with connect(hub_url, name="py-anon") as anon:
        assert anon.tier == 0, "without a credential: observer"


async def test_imu_data_at_the_granted_rate(hub_url: str) -> None:
    async with connect(hub_url, name="py-scope") as hub:
        imu = (await hub.fetch_catalog()).id("imu")
        data = hub.data(imu)
        r = await within(hub.subscribe([SubWish(imu, 25)]), "subscribe")
        assert [(g.channel_id, g.granted_rate_hz) for g in r.granted] == [(imu, 25)]
        assert r.refused == []
        grants = await within(take(hub.grant_updates(), 1), "grants")
        assert grants[0].sub[imu].granted_rate_hz == 25
        frames = await within(take(data, 60), "60 imu samples")
        assert all(f.channel_id == imu and len(f.values) >= 3 for f in frames)
        # Skip the first push after the grant (always sent, §6.4); measure on the hub's clock.
        ts = [f.t for f in frames[5:]]
        rate = (len(ts) - 1) * 1000.0 / (ts[-1] - ts[0])
        assert 20 <= rate <= 30, f"delivered {rate:.1f} Hz for a 25 Hz grant"
        seqs = [f.seq for f in frames]
        assert seqs == sorted(seqs), "seq rises"
        assert hub.counters.acks_sent >= 1, "an ACK after every 32 frames"
        await within(hub.unsubscribe([imu]), "unsubscribe")
        assert imu not in hub.grants.sub


async def test_publish_on_a_publication_channel(hub_url: str, operator: bytes) -> None:
    async with connect(hub_url, name="py-teleop", credential=operator) as hub:
        cat = await hub.fetch_catalog()
        cmd_vel = cat.id("cmd_vel")
        r = await within(hub.publish([PubWish(cmd_vel, 20)]), "publish")
        assert [(g.channel_id, g.granted_rate_hz) for g in r.granted] == [(cmd_vel, 20)]
        # Without control the hub refuses motion: the bundles do reach it.
        nacks = hub.nacks()
        assert hub.send(cmd_vel, [[hub.now_ms(), 0.1, 0.0]]) == 1
        n = (await within(take(nacks, 1), "NOT_OWNER"))[0]
        assert n.code == Nack.NOT_OWNER and n.channel_id == cmd_vel
        assert hub.publications[cmd_vel].nacked == 1 and hub.publications[cmd_vel].sent == 1
        # Samples the hub would refuse MALFORMED are refused here and never sent (§6.7, §12.5).
        bad: List[List[Any]] = [[hub.now_ms(), float("nan"), 0.0], [hub.now_ms(), 0.1], [-1, 0.1, 0.0], [1.5, 0.1, 0.0], [hub.now_ms(), "x", 0.0]]
        assert hub.send(cmd_vel, bad) == 0
        assert hub.publications[cmd_vel].invalid == 5 and hub.publications[cmd_vel].sent == 1
        with pytest.raises(HubError) as refused:
            await hub.intent(cat.id("set_mode"), list(range(17)))
        assert refused.value.code == "REFUSED", "17 args: MALFORMED at the hub, so never sent"
        assert (await within(hub.take_control(), "take_control")).result == 0
        assert (await within(hub.arm(), "arm")).result == 0
        before = hub.publications[cmd_vel].nacked
        sent = 0
        for _ in range(40):  # 2 s asking for 50 Hz against a 20 Hz grant
            sent += hub.send(cmd_vel, [[hub.now_ms(), 0.2, 0.05]])
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.3)
        st = hub.publications[cmd_vel]
        assert 20 <= sent <= 45, f"the client's meter sent {sent} in 2 s at 20 Hz"
        assert st.refused > 0, "asked over the grant: the client refused some itself"
        assert st.nacked == before and st.rate_limited == 0, "the hub refused none"
        await within(hub.release_control(), "release")


async def test_intent_echoed(hub_url: str, operator: bytes) -> None:
    async with connect(hub_url, name="py-intent", credential=operator) as hub:
        cat = await hub.fetch_catalog()
        e = await within(hub.intent(cat.id("take_control")), "take_control")
        assert e.channel_id == cat.id("take_control") and e.result == 0
        assert hub.owns_control and hub.welcome is not None
        e2 = await within(hub.intent(cat.id("release_control")), "release_control")
        assert e2.result == 0 and e2.request_id == e.request_id + 1
        assert not hub.owns_control
        # An observer may not: the hub's refusal is a NACK carrying the request id.
    async with connect(hub_url, name="py-observer") as obs:
        with pytest.raises(HubError) as err:
            await within(obs.intent(cat.id("take_control")), "refused")
        assert err.value.code == "NACK" and err.value.nack is not None and err.value.nack.code == Nack.FORBIDDEN


async def test_estop_latched_and_cleared_by_the_owner(hub_url: str, operator: bytes) -> None:
    async with connect(hub_url, name="py-console", credential=operator) as owner, connect(hub_url, name="py-viewer") as viewer:
        assert not owner.latched
        await within(owner.take_control(), "take_control")
        seen = viewer.estop_states()
        first = (await within(take(seen, 1), "the state now"))[0]
        assert first.latched is False
        try:
            assert viewer.estop(), "any tier may stop"
            latch = (await within(take(seen, 1), "the latch announced"))[0]
            assert latch.latched and latch.frame is not None and latch.frame.kind == EstopKind.ASSERT
            assert latch.frame.source == EstopSource.CLIENT and latch.frame.origin == viewer.session_id
            await until("the owner sees the latch", lambda: owner.latched)
            with pytest.raises(HubError) as err:
                await within(viewer.clear_estop(), "observer clear")
            assert err.value.nack is not None and err.value.nack.code == Nack.FORBIDDEN
            cleared = await within(owner.clear_estop(), "clear")
            assert cleared.kind == EstopKind.CLEARED
            after = (await within(take(seen, 1), "the clear announced"))[0]
            assert after.latched is False
            assert not owner.latched
            # A clear never restarts the robot: motion is refused until the owner arms.
            cmd_vel = (await owner.fetch_catalog()).id("cmd_vel")
            await within(owner.publish([PubWish(cmd_vel, 10)]), "publish")
            nacks = owner.nacks()
            owner.send(cmd_vel, [[owner.now_ms(), 0.1, 0.0]])
            assert (await within(take(nacks, 1), "NOT_ARMED"))[0].code == Nack.NOT_ARMED
        finally:
            if owner.latched:
                await owner.clear_estop()
            await within(owner.release_control(), "release")


async def test_resume_after_the_transport_drops(hub_url: str) -> None:
    async with connect(hub_url, name="py-resume", subscriptions=[SubWish(10, 20)]) as hub:
        sid = hub.session_id
        token = hub.welcome.resume_token if hub.welcome else b""
        data = hub.data(10)
        states = hub.states()
        await within(take(data, 5), "data")
        assert (await take(states, 1)) == ["active"]
        hub.drop_transport()
        assert (await within(take(states, 2), "stale, then active")) == ["stale", "active"]
        assert hub.session_id == sid, "the same session"
        assert hub.counters.resumes == 1 and hub.counters.new_sessions == 1 and hub.counters.connects == 2
        assert hub.welcome is not None and hub.welcome.resume_token != token, "a fresh token"
        assert hub.grants.sub[10].granted_rate_hz == 20, "grants re-stated"
        frames = await within(take(data, 10), "data after the resume")
        assert frames[-1].seq > frames[0].seq


async def test_an_unknown_session_is_opened_anew(hub_url: str) -> None:
    """A resume the hub answers UNKNOWN_SESSION (its token void, as after the hub restarted)
    opens a new session on the same transport, with the wishes as they stand (§6.6)."""
    async with connect(hub_url, name="py-renew", subscriptions=[SubWish(10, 10)]) as hub:
        await within(hub.subscribe([SubWish(11, 5)]), "subscribe")
        old = hub.session_id
        nacks = hub.nacks()
        hub._token = bytes(16)  # a token this hub never issued
        hub.drop_transport()
        n = (await within(take(nacks, 1), "UNKNOWN_SESSION"))[0]
        assert n.code == Nack.UNKNOWN_SESSION
        await until("a new session", lambda: hub.state == "active" and hub.session_id != old)
        assert hub.counters.new_sessions == 2 and hub.counters.resumes == 0 and hub.counters.connects == 2
        assert sorted(hub.grants.sub) == [10, 11], "the wishes as they stand now"
        assert hub.grants.sub[11].granted_rate_hz == 5


async def test_acks_keep_the_hubs_ack_lag_small(hub_url: str, maintainer: bytes) -> None:
    """The stream ACK counts every frame received on the transport (§5.12, §13.2): the hub's
    own ack-lag reading of the session, in its health report, stays within one ACK period."""
    async with connect(hub_url, name="py-acks", credential=maintainer, subscriptions=[SubWish(10, 200)]) as hub:
        assert hub.tier == 2
        await within(take(hub.data(10), 300), "300 imu samples")
        report = json.loads(await within(hub.health(), "health"))
        lag = report["metrics"]["ackLag"]
        assert lag["sessions"] == 1 and lag["measured"] == 1, lag
        assert 0 <= lag["max"] <= 2 * hub.ack_every_frames, lag
        assert hub.counters.acks_sent >= 300 // hub.ack_every_frames


async def test_resume_backs_off_while_the_hub_is_unreachable(hub_url: str) -> None:
    """After a loss the client retries with waits doubling from 100 ms, each drawn in [½, 1] of
    its step; here the first two reopenings fail (as a hub out of reach would), the third resumes."""
    opened = 0

    async def factory() -> Transport:
        nonlocal opened
        opened += 1
        if opened in (2, 3):
            raise ConnectionRefusedError("the hub is out of reach")
        return await open_transport(hub_url)

    async with HubClient(hub_url, name="py-backoff", transport=factory) as hub:
        sid = hub.session_id
        states = hub.states()
        hub.drop_transport()
        assert (await within(take(states, 3), "stale, then active")) == ["active", "stale", "active"]
        assert hub.session_id == sid and hub.counters.resumes == 1 and opened == 4
        d = hub.reconnect_delays
        assert len(d) == 3, d
        for wait, step in zip(d, (0.1, 0.2, 0.4)):
            assert step / 2 <= wait <= step, f"{wait} s for a {step} s step"


async def test_pings_keep_an_idle_session(tcp_url: str) -> None:
    """Nothing but the client's PINGs for 6.5 s, past the hub's 5 s liveness timeout (§6.5)."""
    async with connect(tcp_url, name="py-idle") as hub:
        sid = hub.session_id
        await asyncio.sleep(6.5)
        assert hub.state == "active" and hub.session_id == sid
        assert hub.counters.resumes == 0 and hub.counters.connects == 1
        assert hub.counters.pings_sent >= 5 and hub.rtt_ms is not None


async def test_refused_transport_is_an_error() -> None:
    hub = HubClient("tcp://127.0.0.1:1", name="nobody", request_timeout=2)
    with pytest.raises(HubError) as err:
        await hub.connect()
    assert err.value.code == "TRANSPORT" and hub.state == "closed"
