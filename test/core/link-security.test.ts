// Link security (docs/security.md; docs/protocol.md §6.10): each link states how it is protected
// (Link.tierCeiling), a session's tier is capped by its link's protection when it opens, a
// session cannot resume onto a link that allows less than its tier, and ESTOP is accepted over
// every link, protected or not, and from stations the hub admits no link for. Then each binding
// states its protection as docs/security.md says: TCP and WebSocket from the network, BLE from the
// connection's pairing, ESP-NOW from the station's key, with the simulated radio's decryption
// (an unencrypted or spoofed station gets no more than its tier). Portable: runs on XS too.
import { Tier } from '../../catalog/schema.js';
import { CborWriter } from '../../hub/cbor.js';
import { encodeEstop, ESTOP_FRAME_BYTES, EstopKind, EstopSource } from '../../hub/estop-frame.js';
import { decodeFrame, encodeFrame, FrameType, MAX_HUB_FRAME_BYTES, PROTOCOL_VERSION, type Frame, type HelloFrame, type NackFrame, type WelcomeFrame } from '../../hub/frames.js';
import { Nack } from '../../hub/nack.js';
import { SessionState } from '../../hub/session.js';
import type { Log } from '../../hub/ports.js';
import { FrameReassembler, writeLengthPrefix } from '../../bindings/tcp/framing.js';
import { LinkFraming, TcpLink } from '../../bindings/tcp/egress.js';
import { BleLink, type BleTransport } from '../../bindings/ble/link.js';
import { BLE_MIN_KEY_BYTES, BlePairing, bleTierCeiling, gattSecurity } from '../../bindings/ble/security.js';
import { BROADCAST_MAC, EspNowBinding, PEER_SILENCE_MS, RadioStatus, type Radio } from '../../bindings/espnow/link.js';
import { ESPNOW_KEY_BYTES, ESPNOW_MAX_ENCRYPTED_LIMIT, parseHexKey, parseMac } from '../../bindings/espnow/pairing.js';
import { Mulberry32, SimAir, SimPeer, SimRadio } from '../../host-sim/links/espnow-air.js';
import { deepEqual, equal, ok, throws } from '../lib/assert.js';
import { Hub } from '../../hub/hub.js';
import { estopBytes, makeHub, MAINTAINER_CREDENTIAL, OPERATOR_CREDENTIAL, SeededRandom, TestClient, type Fixture } from '../lib/hub-fixture.js';
import { TestLink } from '../lib/test-link.js';

const TIERS = [Tier.observer, Tier.operator, Tier.maintainer] as const;
const CREDENTIAL_OF: readonly (Uint8Array | undefined)[] = [undefined, OPERATOR_CREDENTIAL, MAINTAINER_CREDENTIAL];

/** A client on a link whose tier ceiling the test sets. */
function clientOn(fx: Fixture, ceiling: number): TestClient {
  const link = new TestLink();
  link.ceiling = ceiling;
  return new TestClient(fx.hub, link);
}

function helloFrame(credential?: Uint8Array, extra: Partial<HelloFrame> = {}): HelloFrame {
  const f: HelloFrame = { type: FrameType.HELLO, version: PROTOCOL_VERSION, name: 'c', ...extra };
  if (credential) f.credential = credential;
  return f;
}

function nacksOf(frames: readonly Frame[]): NackFrame[] {
  return frames.filter((f): f is NackFrame => f.type === FrameType.NACK);
}

class RecordingLog implements Log {
  readonly events: [string, number | undefined, number | undefined][] = [];
  event(code: string, a?: number, b?: number): void {
    this.events.push([code, a, b]);
  }
}

function idOf(fx: Fixture, name: string): number {
  const ch = fx.catalog.byName(name);
  ok(ch, name);
  return ch.id;
}

// =============================================================================================

describe('link security: the tier ceiling caps a new session (§6.10)', () => {
  it('every credential tier on every ceiling: the session gets the lesser, and WELCOME says which', () => {
    const fx = makeHub();
    for (const ceiling of TIERS) {
      for (const tier of TIERS) {
        const c = clientOn(fx, ceiling);
        const w = c.hello(CREDENTIAL_OF[tier] ? { credential: CREDENTIAL_OF[tier] } : {});
        equal(w.tier, Math.min(tier, ceiling), `credential ${tier} over a link of ceiling ${ceiling}`);
        c.send({ type: FrameType.GOODBYE });
      }
    }
    // Capped: operator and maintainer over observer (2), maintainer over operator (1).
    equal(fx.hub.counters.tierCapped, 3);
  });

  it('a capped session is counted in health and logged by number only: no credential reaches the log', () => {
    const log = new RecordingLog();
    const fx = makeHub();
    const hub = new Hub({ clock: fx.clock, random: new SeededRandom(3), store: fx.store, robot: fx.robot, catalog: fx.catalog, log }, { livenessTimeoutMs: Infinity });
    const link = new TestLink();
    link.ceiling = Tier.observer;
    const c = new TestClient(hub, link);
    const w = c.hello({ credential: MAINTAINER_CREDENTIAL });
    equal(w.tier, Tier.observer);
    deepEqual(
      log.events.filter((e) => e[0] === 'tier-capped'),
      [['tier-capped', w.sessionId, Tier.observer]],
    );
    for (const e of log.events) for (const v of [e[1], e[2]]) ok(v === undefined || typeof v === 'number', `log ${e[0]} carries numbers only`);
    const metrics = hub.healthReport().metrics as Record<string, unknown>;
    equal(metrics['tierCapped'], 1);
    equal(JSON.stringify(hub.healthReport()).includes('maintainer-token'), false, 'the credential is in no report');
  });

  it('the anonymous tier is capped as well', () => {
    const fx = makeHub({ anonymousTier: Tier.operator });
    equal(clientOn(fx, Tier.maintainer).hello().tier, Tier.operator);
    equal(clientOn(fx, Tier.observer).hello().tier, Tier.observer);
    equal(fx.hub.counters.tierCapped, 1);
  });

  it('a refused credential is refused on any link: the ceiling never lets anybody in', () => {
    const fx = makeHub({ anonymousTier: -1 });
    for (const ceiling of TIERS) {
      const c = clientOn(fx, ceiling);
      c.send(helloFrame());
      deepEqual(nacksOf(c.take()).map((n) => [n.code, n.frameType]), [[Nack.FORBIDDEN, FrameType.HELLO]]);
    }
    equal(fx.hub.sessions().length, 0);
    // A valid credential over an observer link gets an observer session, although anonymous clients are refused.
    equal(clientOn(fx, Tier.observer).hello({ credential: OPERATOR_CREDENTIAL }).tier, Tier.observer);
  });

  it('a value that is not a tier counts as the lowest it could mean', () => {
    const fx = makeHub();
    for (const [ceiling, expect] of [
      [NaN, Tier.observer],
      [-1, Tier.observer],
      [0.5, Tier.observer],
      [1.5, Tier.operator],
      [7, Tier.maintainer],
      [Infinity, Tier.maintainer],
    ] as const) {
      equal(clientOn(fx, ceiling).hello({ credential: MAINTAINER_CREDENTIAL }).tier, expect, `ceiling ${ceiling}`);
    }
  });

  it('a capped session has the lower tier’s rights only: no control, no clear, no maintainer HEALTH', () => {
    const fx = makeHub();
    const c = clientOn(fx, Tier.observer);
    equal(c.hello({ credential: MAINTAINER_CREDENTIAL }).tier, Tier.observer);
    c.intent(idOf(fx, 'take_control'), 1);
    deepEqual(nacksOf(c.take()).map((n) => n.code), [Nack.FORBIDDEN]);
    equal(fx.hub.controlOwner, 0);
    c.send({ type: FrameType.PUBLISH, wishes: [{ channelId: idOf(fx, 'cmd_vel'), wishedRateHz: 10 }] });
    deepEqual(nacksOf(c.take()).map((n) => [n.code, n.channelId]), [[Nack.FORBIDDEN, idOf(fx, 'cmd_vel')]]);
    c.send({ type: FrameType.HEALTH });
    deepEqual(nacksOf(c.take()).map((n) => n.code), [Nack.FORBIDDEN]);
    fx.hub.setButton(true);
    fx.hub.setButton(false);
    c.send({ type: FrameType.ESTOP_CLEAR });
    deepEqual(nacksOf(c.take()).map((n) => n.code), [Nack.FORBIDDEN]);
    ok(fx.hub.latch.latched, 'the latch stands');
  });

  it('the ceiling is read when HELLO opens the session: a link secured later does not raise it', () => {
    const fx = makeHub();
    const c = clientOn(fx, Tier.observer);
    equal(c.hello({ credential: OPERATOR_CREDENTIAL }).tier, Tier.observer);
    c.link.ceiling = Tier.maintainer;
    c.intent(idOf(fx, 'take_control'), 1);
    deepEqual(nacksOf(c.take()).map((n) => n.code), [Nack.FORBIDDEN]);
    equal(fx.hub.sessions()[0]?.tier, Tier.observer);
    // A new HELLO on a new connection over the secured link gets the credential's tier.
    equal(clientOn(fx, Tier.maintainer).hello({ credential: OPERATOR_CREDENTIAL }).tier, Tier.operator);
  });
});

describe('link security: resume onto a link that allows less (§6.10)', () => {
  it('is refused FORBIDDEN; the session stays STALE with its token and resumes on a link that allows its tier', () => {
    const fx = makeHub();
    const a = clientOn(fx, Tier.maintainer);
    const w = a.hello({ credential: OPERATOR_CREDENTIAL, subWishes: [{ channelId: idOf(fx, 'odom'), wishedRateHz: 10 }] });
    equal(w.tier, Tier.operator);
    a.intent(idOf(fx, 'take_control'), 1);
    a.take();
    equal(fx.hub.controlOwner, w.sessionId);
    a.sink.lost();
    equal(fx.hub.sessions()[0]?.state, SessionState.STALE);
    const weak = clientOn(fx, Tier.observer);
    weak.send(helloFrame(undefined, { resumeToken: w.resumeToken }));
    const got = weak.take();
    deepEqual(nacksOf(got).map((n) => [n.code, n.frameType]), [[Nack.FORBIDDEN, FrameType.HELLO]]);
    equal(got.filter((f) => f.type === FrameType.WELCOME).length, 0);
    const s = fx.hub.keeper.byId(w.sessionId);
    equal(s?.state, SessionState.STALE, 'untouched: still STALE');
    equal(fx.hub.controlOwner, w.sessionId, 'and still the control owner');
    equal(fx.hub.sessions().length, 1, 'no session was opened on the weak link');
    const strong = clientOn(fx, Tier.operator);
    const back = strong.hello({ resumeToken: w.resumeToken });
    deepEqual([back.sessionId, back.tier], [w.sessionId, Tier.operator]);
    deepEqual(back.subGrants.map((g) => g.channelId), [idOf(fx, 'odom')], 'its grants came along');
  });

  it('is refused while the session is still ACTIVE elsewhere: its transport is left alone', () => {
    const fx = makeHub();
    const a = clientOn(fx, Tier.maintainer);
    const w = a.hello({ credential: MAINTAINER_CREDENTIAL });
    const weak = clientOn(fx, Tier.operator);
    weak.send(helloFrame(undefined, { resumeToken: w.resumeToken }));
    deepEqual(nacksOf(weak.take()).map((n) => n.code), [Nack.FORBIDDEN]);
    equal(a.link.closed, false);
    equal(a.take().filter((f) => f.type === FrameType.GOODBYE).length, 0, 'no RESUMED_ELSEWHERE');
    a.send({ type: FrameType.PING, t0: 1 });
    equal(a.take(FrameType.PONG).length, 1, 'the session carries on');
  });

  it('onto a link that allows more keeps the session’s tier: a resume never raises it', () => {
    const fx = makeHub();
    const a = clientOn(fx, Tier.observer);
    const w = a.hello({ credential: MAINTAINER_CREDENTIAL });
    equal(w.tier, Tier.observer);
    a.sink.lost();
    const back = clientOn(fx, Tier.maintainer).hello({ resumeToken: w.resumeToken });
    deepEqual([back.sessionId, back.tier], [w.sessionId, Tier.observer]);
  });
});

describe('link security: ESTOP over every link, protected or not (§11.2)', () => {
  it('an observer link stops the robot before HELLO and from a capped session; the latch is re-announced on it', () => {
    const fx = makeHub();
    const before = clientOn(fx, Tier.observer);
    before.estop(1, 0);
    ok(fx.hub.latch.latched);
    deepEqual(fx.robot.stops, [EstopSource.CLIENT]);
    ok(before.link.estops().length >= 1, 'the link hears the stop in force');
    const fx2 = makeHub();
    const c = clientOn(fx2, Tier.observer);
    equal(c.hello({ credential: OPERATOR_CREDENTIAL }).tier, Tier.observer);
    c.estop(1, 0);
    ok(fx2.hub.latch.latched);
  });

  it('Hub.estopFrame: a stop from outside any transport latches; a damaged frame or a clear does nothing', () => {
    const fx = makeHub();
    const clear = estopBytes(EstopKind.CLEARED, EstopSource.CLIENT, 9, 1);
    equal(fx.hub.estopFrame(clear, 0, clear.length), false);
    const bad = estopBytes(EstopKind.ASSERT, EstopSource.CLIENT, 9, 1);
    bad[11] = (bad[11] as number) ^ 0xff;
    equal(fx.hub.estopFrame(bad, 0, bad.length), false);
    equal(fx.hub.estopFrame(bad, 0, 5), false);
    equal(fx.hub.latch.latched, false);
    const good = estopBytes(EstopKind.ASSERT, EstopSource.CLIENT, 9, 2);
    const framed = new Uint8Array(20);
    framed.set(good, 4);
    equal(fx.hub.estopFrame(framed, 4, 4 + ESTOP_FRAME_BYTES), true);
    ok(fx.hub.latch.latched);
    deepEqual(fx.robot.stops, [EstopSource.CLIENT]);
    const watcher = clientOn(fx, Tier.maintainer);
    watcher.hello();
    ok(watcher.link.estops().some((e) => e.kind === EstopKind.ASSERT), 'a session that joins hears of it');
  });
});

// =============================================================================================
// The bindings state their protection.

/** A TCP client over a TcpLink (length-prefixed), reading what the hub sends. */
class TcpPeer {
  readonly link: TcpLink;
  private readonly w = new CborWriter(new Uint8Array(2048));
  private readonly out = new Uint8Array(1 << 16);
  private readonly reasm = new FrameReassembler(MAX_HUB_FRAME_BYTES);
  constructor(fx: Fixture, tierCeiling?: number) {
    this.link = new TcpLink({ hub: fx.hub, clock: fx.clock, framing: LinkFraming.LENGTH_PREFIX, binding: 'tcp', ...(tierCeiling !== undefined ? { tierCeiling } : {}) });
    this.link.start({ kick() {}, close() {} });
  }
  send(f: Frame): void {
    this.w.reset();
    encodeFrame(f, this.w);
    const rec = new Uint8Array(2 + this.w.pos);
    writeLengthPrefix(this.w.pos, rec, 0);
    rec.set(this.w.buf.subarray(0, this.w.pos), 2);
    this.link.input(rec, 0, rec.length);
  }
  frames(): Frame[] {
    const got: Frame[] = [];
    for (;;) {
      const n = this.link.pull(this.out, 0, this.out.length);
      if (n === 0) break;
      this.reasm.push(this.out, 0, n, {
        frame: (b, s, e) => {
          if (b[s] !== 0xe5) got.push(decodeFrame(b, s, e, MAX_HUB_FRAME_BYTES));
        },
        refuse: () => undefined,
      });
    }
    return got;
  }
}

function welcomeIn(frames: readonly Frame[]): WelcomeFrame {
  const w = frames.find((f): f is WelcomeFrame => f.type === FrameType.WELCOME);
  ok(w, `a WELCOME in ${JSON.stringify(frames).slice(0, 200)}`);
  return w;
}

describe('link security: TCP and WebSocket carry their network’s protection', () => {
  it('a protected network (the default) allows every tier; an open one (observer ceiling) caps an operator', () => {
    const fx = makeHub();
    const wpa = new TcpPeer(fx);
    equal(wpa.link.tierCeiling(), Tier.maintainer);
    wpa.send(helloFrame(MAINTAINER_CREDENTIAL));
    equal(welcomeIn(wpa.frames()).tier, Tier.maintainer);
    const open = new TcpPeer(fx, Tier.observer);
    equal(open.link.tierCeiling(), Tier.observer);
    open.send(helloFrame(OPERATOR_CREDENTIAL));
    equal(welcomeIn(open.frames()).tier, Tier.observer);
    equal(fx.hub.counters.tierCapped, 1);
  });
});

/** A BLE connection that takes every notification at once. */
class NullBle implements BleTransport {
  maximumWrite(): number {
    return 244;
  }
  notify(): void {}
  close(): void {}
}

describe('link security: BLE is observer until the connection is secured', () => {
  it('a new connection is at observer; the pairing the stack reports sets the ceiling the next HELLO reads', () => {
    const fx = makeHub();
    const link = BleLink.attach(fx.hub, new NullBle(), fx.clock);
    equal(link.tierCeiling(), Tier.observer, 'unpaired');
    link.setTierCeiling(bleTierCeiling(BlePairing.JUST_WORKS, Tier.maintainer, { encrypted: true, authenticated: false, bonded: true, keySize: 16 }));
    equal(link.tierCeiling(), Tier.maintainer);
  });

  it('the policy: encryption with a full key; with passkey pairing, authentication too; off: observer always', () => {
    const states = [
      { encrypted: false, authenticated: false, keySize: 0 },
      { encrypted: true, authenticated: false, keySize: 7 },
      { encrypted: true, authenticated: false, keySize: BLE_MIN_KEY_BYTES },
      { encrypted: true, authenticated: true, keySize: BLE_MIN_KEY_BYTES },
    ];
    const table = [BlePairing.OFF, BlePairing.JUST_WORKS, BlePairing.PASSKEY].map((p) => states.map((s) => bleTierCeiling(p, Tier.operator, s)));
    deepEqual(table, [
      [0, 0, 0, 0],
      [0, 0, 1, 1],
      [0, 0, 0, 1],
    ]);
    equal(gattSecurity(BlePairing.OFF), undefined);
    deepEqual(gattSecurity(BlePairing.JUST_WORKS), { bond: true, immediate: true, authenticate: false, display: false });
    deepEqual(gattSecurity(BlePairing.PASSKEY), { bond: true, immediate: true, authenticate: true, display: true });
  });
});

// ------------------------------------------------------------------------------ ESP-NOW

const HUB = 0x02_00_00_00_00_01;
const STATION = 0x24_6f_28_00_00_01;
const OTHER = 0x24_6f_28_00_00_02;
const KEY_A = new Uint8Array(ESPNOW_KEY_BYTES).fill(0xa1);
const KEY_B = new Uint8Array(ESPNOW_KEY_BYTES).fill(0xb2);

interface Air {
  fx: Fixture;
  air: SimAir;
  radio: SimRadio;
  binding: EspNowBinding;
  strays: Uint8Array[];
  /** Datagrams the hub's radio was asked to send. */
  sends: () => number;
  step(ms: number): void;
}

function espnow(options: { peers?: { mac: number; lmk: Uint8Array; tierCeiling?: number }[]; allowUnencrypted?: boolean; maxEncrypted?: number } = {}): Air {
  const fx = makeHub();
  const air = new SimAir({ prng: new Mulberry32(3), maxEncrypted: ESPNOW_MAX_ENCRYPTED_LIMIT }, fx.clock.t);
  const radio = air.radio(HUB);
  radio.hub = true;
  const strays: Uint8Array[] = [];
  let sends = 0;
  const counting: Radio = {
    setHandler: (h) => radio.setHandler(h),
    addPeer: (mac, lmk) => radio.addPeer(mac, lmk),
    removePeer: (mac) => radio.removePeer(mac),
    send: (mac, data, length) => {
      sends++;
      return radio.send(mac, data, length);
    },
  };
  const binding = new EspNowBinding({
    clock: air,
    radio: counting,
    attach: (l) => fx.hub.attach(l),
    peers: options.peers ?? [],
    allowUnencrypted: options.allowUnencrypted === true,
    ...(options.maxEncrypted !== undefined ? { maxEncrypted: options.maxEncrypted } : {}),
    strayEstop: (b, s, e) => {
      strays.push(b.slice(s, e));
      fx.hub.estopFrame(b, s, e);
    },
  });
  return {
    fx,
    air,
    radio,
    binding,
    strays,
    sends: () => sends,
    step(ms) {
      for (let i = 0; i < ms; i += 5) {
        fx.clock.advance(5);
        air.advance(fx.clock.t);
        binding.tick();
        fx.hub.tick();
      }
    },
  };
}

const encW = new CborWriter(new Uint8Array(1024));
function enc(f: Frame): Uint8Array {
  encW.reset();
  encodeFrame(f, encW);
  return encW.buf.slice(0, encW.pos);
}

describe('link security: ESP-NOW speaks to paired stations, encrypted', () => {
  it('a paired station is in the radio’s table with its key from the start, and its session gets its credential’s tier', () => {
    const r = espnow({ peers: [{ mac: STATION, lmk: KEY_A }] });
    ok(r.radio.encryptedPeer(STATION), 'added encrypted before it spoke');
    const peer = new SimPeer(r.air, STATION, HUB, { lmk: KEY_A });
    peer.send(enc(helloFrame(MAINTAINER_CREDENTIAL)));
    r.step(100);
    equal(welcomeIn(peer.take()).tier, Tier.maintainer);
    equal(r.binding.linkOf(STATION)?.tierCeiling(), Tier.maintainer);
    equal(r.radio.cryptoDrops, 0);
  });

  it('a pairing’s tier ceiling caps its station’s sessions', () => {
    const r = espnow({ peers: [{ mac: STATION, lmk: KEY_A, tierCeiling: Tier.operator }] });
    const peer = new SimPeer(r.air, STATION, HUB, { lmk: KEY_A });
    peer.send(enc(helloFrame(MAINTAINER_CREDENTIAL)));
    r.step(100);
    equal(welcomeIn(peer.take()).tier, Tier.operator);
    equal(r.fx.hub.counters.tierCapped, 1);
  });

  it('a station that is not paired, unencrypted peers not allowed: ignored and counted, nothing sent back, no link', () => {
    const r = espnow({ peers: [{ mac: STATION, lmk: KEY_A }] });
    const stranger = new SimPeer(r.air, OTHER, HUB);
    stranger.send(enc(helloFrame(OPERATOR_CREDENTIAL)));
    r.step(100);
    stranger.send(enc({ type: FrameType.PING, t0: 1 }));
    r.step(100);
    equal(r.binding.counters.unpaired, 2, 'each datagram counted');
    equal(r.binding.linkOf(OTHER), undefined);
    equal(r.fx.hub.sessions().length, 0);
    equal(r.fx.hub.conns.length, 0, 'no transport attached');
    equal(r.radio.hasPeer(OTHER), false, 'not added to the radio');
    equal(r.sends(), 0, 'the hub’s radio sent nothing: not an acknowledgement, not a NACK');
    equal(stranger.datagrams, 0, 'the station heard nothing');
  });

  it('a station that is not paired may still stop the robot: its ESTOP frame reaches the hub and nothing goes back', () => {
    const r = espnow();
    const button = r.air.radio(OTHER);
    button.setHandler({ sent() {}, received() {} });
    button.addPeer(HUB, null);
    const e = new Uint8Array(ESTOP_FRAME_BYTES);
    encodeEstop(e, 0, EstopKind.ASSERT, EstopSource.CLIENT, 0, 77, 1);
    button.send(HUB, e, e.length);
    r.step(20);
    ok(r.fx.hub.latch.latched, 'latched');
    equal(r.strays.length, 1);
    equal(r.binding.counters.strayEstops, 1);
    equal(r.binding.peers().length, 0, 'no link was opened for it');
    equal(r.fx.hub.conns.length, 0);
    equal(r.sends(), 0, 'nothing was sent back to it');
  });

  it('unencrypted peers allowed: a station that is not paired speaks, at observer tier at most', () => {
    const r = espnow({ allowUnencrypted: true });
    const peer = new SimPeer(r.air, OTHER, HUB);
    peer.send(enc(helloFrame(MAINTAINER_CREDENTIAL)));
    r.step(100);
    equal(welcomeIn(peer.take()).tier, Tier.observer);
    equal(r.binding.linkOf(OTHER)?.tierCeiling(), Tier.observer);
    equal(r.radio.encryptedPeer(OTHER), false);
    equal(r.fx.hub.counters.tierCapped, 1);
  });

  it('a station spoofing a paired station’s MAC, without its key or with another, is dropped by the radio: the real station keeps control', () => {
    const r = espnow({ peers: [{ mac: STATION, lmk: KEY_A }] });
    const real = new SimPeer(r.air, STATION, HUB, { lmk: KEY_A });
    real.send(enc(helloFrame(OPERATOR_CREDENTIAL)));
    r.step(100);
    const w = welcomeIn(real.take());
    const takeControl = idOf(r.fx, 'take_control');
    real.send(enc({ type: FrameType.INTENT, channelId: takeControl, requestId: 1 }));
    r.step(100);
    equal(r.fx.hub.controlOwner, w.sessionId);
    real.take();
    // The spoofers: radios of their own with the paired station's MAC (not on the air's map,
    // so they only send), one without a key, one with the wrong key. A HELLO that got through
    // would be answered MALFORMED on the real station's transport (§6.1), a release_control
    // would take its control away.
    const sessionsBefore = r.fx.hub.sessions().length;
    for (const key of [null, KEY_B]) {
      const spoof = new SimRadio(r.air, STATION);
      spoof.setHandler({ sent() {}, received() {} });
      spoof.addPeer(HUB, key);
      const hello = enc(helloFrame(MAINTAINER_CREDENTIAL));
      const clear = enc({ type: FrameType.INTENT, channelId: idOf(r.fx, 'release_control'), requestId: 9 });
      for (const frame of [hello, clear]) {
        const dg = new Uint8Array(4 + frame.length);
        dg[0] = 0x10;
        dg[1] = 0x7f;
        dg[2] = key === null ? 1 : 2;
        dg[3] = frame.length;
        dg.set(frame, 4);
        equal(spoof.send(HUB, dg, dg.length), RadioStatus.OK);
        r.step(20);
      }
    }
    equal(r.radio.cryptoDrops, 4, 'every spoofed datagram dropped by the hub’s radio');
    equal(r.fx.hub.sessions().length, sessionsBefore);
    equal(r.fx.hub.controlOwner, w.sessionId, 'the real station still owns control');
    equal(nacksOf(real.take()).length, 0, 'and heard no NACK for frames it never sent');
  });

  it('a datagram addressed to broadcast from a paired MAC cannot be that station’s: the hub’s radio drops it', () => {
    const r = espnow({ peers: [{ mac: STATION, lmk: KEY_A }] });
    const spoof = new SimRadio(r.air, STATION);
    spoof.setHandler({ sent() {}, received() {} });
    spoof.addPeer(BROADCAST_MAC, null);
    const frame = enc(helloFrame(OPERATOR_CREDENTIAL));
    const dg = new Uint8Array(4 + frame.length);
    dg[0] = 0x10;
    dg[3] = frame.length;
    dg.set(frame, 4);
    spoof.send(BROADCAST_MAC, dg, dg.length);
    r.step(20);
    equal(r.radio.cryptoDrops, 1);
    equal(r.fx.hub.sessions().length, 0);
    equal(RadioStatus.ERROR, spoof.addPeer(0x0a0000000099, new Uint8Array(3)), 'a key is 16 bytes');
    equal(new SimAir({ prng: new Mulberry32(1) }).radio(9).addPeer(BROADCAST_MAC, KEY_A), RadioStatus.ERROR, 'broadcast cannot be encrypted');
  });

  it('the encrypted peers are bounded: more pairings than the radio holds are refused at start and counted later', () => {
    throws(() => espnow({ peers: [1, 2, 3].map((i) => ({ mac: STATION + i, lmk: KEY_A })), maxEncrypted: 2 }));
    throws(() => espnow({ maxEncrypted: ESPNOW_MAX_ENCRYPTED_LIMIT + 1 }));
    const r = espnow({ maxEncrypted: 2 });
    equal(r.binding.pair({ mac: STATION, lmk: KEY_A }), RadioStatus.OK);
    equal(r.binding.pair({ mac: OTHER, lmk: KEY_B }), RadioStatus.OK);
    equal(r.binding.pair({ mac: OTHER + 1, lmk: KEY_B }), RadioStatus.FULL);
    equal(r.binding.counters.refusedPairings, 1);
    deepEqual(r.binding.pairedPeers().sort((a, b) => a - b), [STATION, OTHER]);
    throws(() => r.binding.pair({ mac: OTHER, lmk: new Uint8Array(8) }), undefined, 'a key is 16 bytes');
    throws(() => r.binding.pair({ mac: BROADCAST_MAC, lmk: KEY_A }), undefined, 'the broadcast address is no station');
  });

  it('a paired station keeps its radio entry across silence; unpairing closes its link and forgets the key', () => {
    const r = espnow({ peers: [{ mac: STATION, lmk: KEY_A }] });
    const peer = new SimPeer(r.air, STATION, HUB, { lmk: KEY_A });
    peer.send(enc(helloFrame(OPERATOR_CREDENTIAL)));
    r.step(100);
    const first = welcomeIn(peer.take());
    // Silence: the station stops sending; the binding closes its link, the radio keeps its key.
    peer.radio.setHandler({ sent() {}, received() {} });
    peer.radio.removePeer(HUB);
    r.step(PEER_SILENCE_MS + 200);
    equal(r.binding.linkOf(STATION), undefined, 'closed for silence');
    ok(r.radio.encryptedPeer(STATION), 'still held encrypted');
    peer.radio.setHandler(peer);
    peer.radio.addPeer(HUB, KEY_A);
    peer.send(enc(helloFrame(undefined, { resumeToken: first.resumeToken })));
    r.step(100);
    const w = welcomeIn(peer.take());
    deepEqual([w.sessionId, w.tier], [first.sessionId, Tier.operator], 'its first datagram decrypted: resumed');
    ok(r.binding.linkOf(STATION));
    r.binding.unpair(STATION);
    equal(r.binding.linkOf(STATION), undefined);
    equal(r.radio.hasPeer(STATION), false);
    equal(r.fx.hub.keeper.byId(w.sessionId)?.state, SessionState.STALE, 'its session lost its transport (§6.6)');
    // Its datagrams no longer decrypt: the radio drops them, the hub hears nothing.
    peer.send(enc({ type: FrameType.PING, t0: 5 }));
    r.step(50);
    ok(r.radio.cryptoDrops > 0);
    equal(r.binding.linkOf(STATION), undefined);
  });

  it('keys and MACs as the configuration writes them', () => {
    equal(parseMac('24:6f:28:00:00:01'), STATION);
    equal(parseMac('24-6F-28-00-00-01'), STATION);
    ok(Number.isNaN(parseMac('24:6f:28:00:00')));
    ok(Number.isNaN(parseMac('24:6f:28:00:00:0g')));
    deepEqual(Array.from(parseHexKey('a1'.repeat(16)) ?? []), Array.from(KEY_A));
    equal(parseHexKey('a1'.repeat(15)), null);
    equal(parseHexKey('zz'.repeat(16)), null);
  });
});
