// Security of the hub's client surface (issue 7 item 3): the tier rules on every frame a client
// can send, control ownership, the authority to clear an ESTOP, credentials (compared in constant
// time, never logged, reported or echoed), and a flooding client that can neither delay another
// client's critical traffic nor escape its own limits (§6.8, §9.3, §10.5, §11.2, §12.5, §12.6).
import { loadCatalog, type CatalogIndex } from '../../catalog/index.js';
import { DEFAULT_CATALOG } from '../../catalog/default.js';
import { ChannelClass, Direction, Tier } from '../../catalog/schema.js';
import { CborWriter } from '../../hub/cbor.js';
import { CREDENTIALS_KEY, saveCredentials } from '../../hub/credentials.js';
import { decodeEstop, EstopKind, EstopSource } from '../../hub/estop-frame.js';
import {
  decodeFrame,
  encodeFrame,
  FrameType,
  GoodbyeReason,
  MAX_HUB_FRAME_BYTES,
  PROTOCOL_VERSION,
  type DataFrame,
  type EchoFrame,
  type Frame,
  type GoodbyeFrame,
  type GrantFrame,
  type HelloFrame,
  type NackFrame,
  type WelcomeFrame,
} from '../../hub/frames.js';
import { Hub, type HubConfig } from '../../hub/hub.js';
import { Nack } from '../../hub/nack.js';
import type { Log, SampleBlock, Store } from '../../hub/ports.js';
import { SessionState } from '../../hub/session.js';
import { FrameReassembler, writeLengthPrefix } from '../../bindings/tcp/framing.js';
import { LinkFraming, TcpLink, type LinkTransport } from '../../bindings/tcp/egress.js';
import { deepEqual, equal, fail, ok } from '../lib/assert.js';
import { runs } from '../lib/env.js';
import { ascii, MAINTAINER_CREDENTIAL, MemoryStore, OPERATOR_CREDENTIAL, RecordingRobot, SeededRandom, TestClient, VirtualClock } from '../lib/hub-fixture.js';
import { bytesToHex } from '../lib/vector-json.js';

// ---------------------------------------------------------------------------------------------
// A catalog with every tier in use: channels to subscribe at observer, operator and maintainer
// tier; publications and intents at all three publish tiers.

const SAFETY = 1;
const SAFETY_EVENTS = 2;
const CONTROL_OWNER = 3;
const IMU = 10;
const ODOM = 11;
const BATTERY = 13; // subscribe: operator
const SCAN = 14; // subscribe: maintainer
const FAULT = 21; // subscribe: maintainer (EVENT)
const CMD_VEL = 30; // publish: operator, motion
const TRAJECTORY = 31; // publish: maintainer, motion
const MARKER = 32; // publish: observer, not motion
const ARM = 40;
const DISARM = 41;
const TAKE_CONTROL = 42;
const SET_MODE = 43; // publish: maintainer, motion
const RELEASE_CONTROL = 45;
const BEEP = 46; // publish: observer, not motion

function securityCatalog(): CatalogIndex {
  const c = JSON.parse(JSON.stringify(DEFAULT_CATALOG)) as { channels: Record<string, unknown>[] };
  const byId = (id: number): Record<string, unknown> => c.channels.find((ch) => ch['id'] === id) as Record<string, unknown>;
  byId(BATTERY)['subscribe_tier'] = 'operator';
  byId(SCAN)['subscribe_tier'] = 'maintainer';
  byId(FAULT)['subscribe_tier'] = 'maintainer';
  byId(TRAJECTORY)['publish_tier'] = 'maintainer';
  byId(SET_MODE)['publish_tier'] = 'maintainer';
  c.channels.push({
    id: MARKER,
    name: 'marker',
    class: 'STREAM',
    stream_kind: 'samples',
    direction: 'publication',
    max_rate_hz: 10,
    priority: 'normal',
    critical: false,
    subscribe_tier: 'observer',
    publish_tier: 'observer',
    motion: false,
    fields: [{ name: 'x', unit: 'm' }],
  });
  c.channels.push({
    id: BEEP,
    name: 'beep',
    class: 'INTENT',
    direction: 'publication',
    max_rate_hz: 5,
    priority: 'critical',
    critical: true,
    subscribe_tier: 'observer',
    publish_tier: 'observer',
    motion: false,
    fields: [],
  });
  return loadCatalog(c);
}

const CATALOG = securityCatalog();

interface Tiered {
  readonly name: string;
  readonly tier: number;
  readonly credential: Uint8Array | undefined;
}

const TIERS: readonly Tiered[] = Object.freeze([
  { name: 'observer', tier: Tier.observer, credential: undefined },
  { name: 'operator', tier: Tier.operator, credential: OPERATOR_CREDENTIAL },
  { name: 'maintainer', tier: Tier.maintainer, credential: MAINTAINER_CREDENTIAL },
]);

// A second credential per tier, of the same length as the first, for the differential checks.
const OPERATOR_CREDENTIAL_2 = ascii('operator-token-0002');
const MAINTAINER_CREDENTIAL_2 = ascii('maintainer-token-02');

function storeWithCredentials(): MemoryStore {
  const store = new MemoryStore();
  saveCredentials(store, [
    { tier: Tier.operator, credential: OPERATOR_CREDENTIAL },
    { tier: Tier.maintainer, credential: MAINTAINER_CREDENTIAL },
    { tier: Tier.operator, credential: OPERATOR_CREDENTIAL_2 },
    { tier: Tier.maintainer, credential: MAINTAINER_CREDENTIAL_2 },
  ]);
  return store;
}

interface Rig {
  hub: Hub;
  clock: VirtualClock;
  robot: RecordingRobot;
  store: Store;
}

function rig(config: Partial<HubConfig> = {}, store: Store = storeWithCredentials(), log?: Log): Rig {
  const clock = new VirtualClock();
  const robot = new RecordingRobot();
  const hub = new Hub({ clock, random: new SeededRandom(7), store, robot, catalog: CATALOG, log }, config);
  return { hub, clock, robot, store };
}

function join(r: Rig, t: Tiered, extra: Partial<HelloFrame> = {}): { c: TestClient; w: WelcomeFrame } {
  const c = new TestClient(r.hub);
  const w = c.hello(t.credential ? { credential: t.credential, ...extra } : extra);
  equal(w.tier, t.tier, `${t.name} WELCOME tier`);
  return { c, w };
}

function nacks(frames: readonly Frame[]): NackFrame[] {
  return frames.filter((f): f is NackFrame => f.type === FrameType.NACK);
}

function only<T extends Frame>(frames: readonly Frame[], type: number, what: string): T {
  const got = frames.filter((f) => f.type === type);
  equal(got.length, 1, `${what}: one frame of type ${type} in ${JSON.stringify(frames).slice(0, 300)}`);
  return got[0] as T;
}

/** The one answer to an intent: its ECHO or its NACK. */
function answer(c: TestClient): EchoFrame | NackFrame {
  const got = c.take().filter((f): f is EchoFrame | NackFrame => f.type === FrameType.ECHO || f.type === FrameType.NACK);
  equal(got.length, 1, `one answer per intent, got ${JSON.stringify(got)}`);
  return got[0] as EchoFrame | NackFrame;
}

function takeControl(c: TestClient, requestId = 1): void {
  c.intent(TAKE_CONTROL, requestId);
  const a = answer(c);
  equal(a.type, FrameType.ECHO, `take_control answered ${JSON.stringify(a)}`);
}

const telemetry = CATALOG.channels.filter((ch) => ch.direction === Direction.telemetry);
const pubStreams = CATALOG.channels.filter((ch) => ch.direction === Direction.publication && ch.cls !== ChannelClass.INTENT);
const intents = CATALOG.channels.filter((ch) => ch.cls === ChannelClass.INTENT);

// =============================================================================================

describe('security: tier rules on every client frame', () => {
  it('the catalog used here has every tier in use for subscribing, publishing and intents', () => {
    for (const t of TIERS) {
      ok(telemetry.some((ch) => ch.subscribeTier === t.tier), `a channel subscribed at ${t.name}`);
      ok(pubStreams.some((ch) => ch.publishTier === t.tier), `a stream published at ${t.name}`);
      ok(intents.some((ch) => ch.publishTier === t.tier), `an intent at ${t.name}`);
    }
  });

  describe('HELLO', () => {
    it('gives the tier its credential maps to; no credential or an unknown one gets the anonymous tier', () => {
      const r = rig();
      for (const t of TIERS) join(r, t);
      const c = new TestClient(r.hub);
      for (const bad of [ascii('operator-token-000'), ascii('operator-token-00011'), ascii('Operator-token-0001'), new Uint8Array(0), new Uint8Array(64)]) {
        const d = new TestClient(r.hub);
        equal(d.hello({ credential: bad }).tier, Tier.observer, `credential ${bytesToHex(bad)}`);
        d.send({ type: FrameType.GOODBYE });
      }
      equal(c.hello({ credential: OPERATOR_CREDENTIAL_2 }).tier, Tier.operator);
    });

    it('refuses a client without a valid credential with FORBIDDEN when the hub has no anonymous tier, and opens no session', () => {
      const r = rig({ anonymousTier: -1 });
      for (const cred of [undefined, ascii('nope'), ascii('operator-token-0003')]) {
        const c = new TestClient(r.hub);
        c.send({ type: FrameType.HELLO, version: PROTOCOL_VERSION, name: 'x', ...(cred ? { credential: cred } : {}) });
        const n = only<NackFrame>(c.take(), FrameType.NACK, 'refused HELLO');
        deepEqual([n.code, n.frameType], [Nack.FORBIDDEN, FrameType.HELLO]);
        equal(r.hub.sessions().length, 0);
      }
      join(r, TIERS[1] as Tiered);
      join(r, TIERS[2] as Tiered);
      equal(r.hub.sessions().length, 2);
    });
  });

  describe('SUBSCRIBE (and HELLO sub_wishes) at each channel\'s subscribe tier', () => {
    for (const t of TIERS) {
      it(`${t.name}: granted exactly the telemetry channels at or below its tier; FORBIDDEN above, UNKNOWN_CHANNEL for non-telemetry`, () => {
        const r = rig();
        const { c } = join(r, t);
        const allowed: number[] = [];
        for (const ch of CATALOG.channels) {
          c.send({ type: FrameType.SUBSCRIBE, wishes: [{ channelId: ch.id, wishedRateHz: 1 }] });
          const got = c.take();
          const g = only<GrantFrame>(got, FrameType.GRANT, `SUBSCRIBE ${ch.name}`);
          const listed = (g.subGrants ?? []).some((s) => s.channelId === ch.id);
          const n = nacks(got);
          if (ch.direction !== Direction.telemetry) {
            ok(!listed, `${ch.name} is no telemetry and is not granted`);
            deepEqual(n.map((x) => [x.code, x.channelId, x.frameType]), [[Nack.UNKNOWN_CHANNEL, ch.id, FrameType.SUBSCRIBE]]);
          } else if (t.tier < ch.subscribeTier) {
            ok(!listed, `${t.name} is not granted ${ch.name}`);
            deepEqual(n.map((x) => [x.code, x.channelId, x.frameType]), [[Nack.FORBIDDEN, ch.id, FrameType.SUBSCRIBE]]);
          } else {
            ok(listed, `${t.name} is granted ${ch.name}`);
            equal(n.length, 0);
            allowed.push(ch.id);
          }
        }
        deepEqual(r.hub.sessions()[0]?.subs.map((s) => s.channelId).sort((x, y) => x - y), allowed);
        // The same through HELLO.
        const d = new TestClient(r.hub);
        d.send({ type: FrameType.HELLO, version: PROTOCOL_VERSION, name: 'd', ...(t.credential ? { credential: t.credential } : {}), subWishes: telemetry.map((ch) => ({ channelId: ch.id, wishedRateHz: 1 })) });
        const got = d.take();
        const w = only<WelcomeFrame>(got, FrameType.WELCOME, 'HELLO with every channel');
        deepEqual(w.subGrants.map((s) => s.channelId).sort((x, y) => x - y), allowed);
        deepEqual(nacks(got).map((x) => [x.code, x.channelId, x.frameType]), telemetry.filter((ch) => t.tier < ch.subscribeTier).map((ch) => [Nack.FORBIDDEN, ch.id, FrameType.SUBSCRIBE]));
      });
    }

    it('a forbidden channel\'s data never reaches the lower tier', () => {
      const r = rig();
      const wishes = [{ channelId: SCAN, wishedRateHz: 10 }, { channelId: BATTERY, wishedRateHz: 1 }, { channelId: FAULT, wishedRateHz: 10 }];
      const clients = TIERS.map((t) => join(r, t, { subWishes: wishes }).c);
      for (const c of clients) c.take();
      r.clock.advance(200);
      r.hub.publishSample(SCAN, r.clock.now(), new Float64Array(16), 16);
      r.hub.publishSample(BATTERY, r.clock.now(), new Float64Array(2), 2);
      r.hub.publishEvent(FAULT, r.clock.now(), [1, 2, 1], 'fault');
      const seen = clients.map((c) => (c.take(FrameType.DATA) as DataFrame[]).map((f) => f.channelId).sort((x, y) => x - y));
      deepEqual(seen, [[], [BATTERY], [BATTERY, SCAN, FAULT].sort((x, y) => x - y)]);
    });
  });

  describe('UNSUBSCRIBE', () => {
    for (const t of TIERS) {
      it(`${t.name}: drops its own subscriptions only, and is always answered by GRANT`, () => {
        const r = rig();
        const other = join(r, TIERS[0] as Tiered, { subWishes: [{ channelId: IMU, wishedRateHz: 50 }] }).c;
        const { c } = join(r, t, { subWishes: [{ channelId: IMU, wishedRateHz: 50 }, { channelId: ODOM, wishedRateHz: 10 }] });
        other.take();
        c.send({ type: FrameType.UNSUBSCRIBE, channels: [IMU, SCAN, 99] });
        const g = only<GrantFrame>(c.take(), FrameType.GRANT, 'UNSUBSCRIBE');
        deepEqual(g.subGrants?.map((s) => s.channelId), [ODOM]);
        equal(other.take().length, 0, 'the other session hears nothing of it');
        r.clock.advance(100);
        r.hub.publishSample(IMU, r.clock.now(), new Float64Array(6), 6);
        equal(other.take(FrameType.DATA).length, 1, 'and keeps its data');
        equal(c.take(FrameType.DATA).length, 0);
      });
    }
  });

  describe('PUBLISH at each channel\'s publish tier', () => {
    for (const t of TIERS) {
      it(`${t.name}: granted exactly the publication streams at or below its tier; always answered by GRANT`, () => {
        const r = rig();
        const { c } = join(r, t);
        for (const ch of CATALOG.channels) {
          c.send({ type: FrameType.PUBLISH, wishes: [{ channelId: ch.id, wishedRateHz: 1 }] });
          const got = c.take();
          const g = only<GrantFrame>(got, FrameType.GRANT, `PUBLISH ${ch.name}`);
          ok(g.pubGrants !== undefined, 'a PUBLISH is always answered with key 36 (§10.2)');
          const granted = (g.pubGrants ?? []).map((p) => p.channelId);
          const n = nacks(got).map((x) => [x.code, x.channelId, x.frameType]);
          if (ch.direction !== Direction.publication || ch.cls === ChannelClass.INTENT) {
            deepEqual([granted, n], [[], [[Nack.UNKNOWN_CHANNEL, ch.id, FrameType.PUBLISH]]], ch.name);
          } else if (t.tier < ch.publishTier) {
            deepEqual([granted, n], [[], [[Nack.FORBIDDEN, ch.id, FrameType.PUBLISH]]], ch.name);
          } else {
            deepEqual([granted, n], [[ch.id], []], ch.name);
          }
        }
      });
    }
  });

  describe('BUNDLE', () => {
    for (const t of TIERS) {
      it(`${t.name}: only on a publication it was granted; motion only as the control owner`, () => {
        const r = rig();
        const { c } = join(r, t);
        const sample = (ch: number): number[] => [1000, ...new Array<number>(CATALOG.byId(ch)?.fieldCount ?? 0).fill(0.5)];
        // Refused bundles share the session's RATE_LIMITED throttle (5 NACKs a second): one a second
        // is always answered.
        const bundle = (ch: number): void => {
          r.clock.advance(1000);
          c.send({ type: FrameType.BUNDLE, channelId: ch, samples: [sample(ch)] });
        };
        // Not granted yet: NOT_GRANTED; an unknown channel: UNKNOWN_CHANNEL.
        for (const ch of pubStreams) {
          bundle(ch.id);
          deepEqual(nacks(c.take()).map((x) => [x.code, x.channelId]), [[Nack.NOT_GRANTED, ch.id]], ch.name);
        }
        c.send({ type: FrameType.BUNDLE, channelId: 99, samples: [[1, 2]] });
        equal(nacks(c.take())[0]?.code, Nack.UNKNOWN_CHANNEL);
        c.send({ type: FrameType.PUBLISH, wishes: pubStreams.map((ch) => ({ channelId: ch.id, wishedRateHz: 5 })) });
        c.take();
        const tryAll = (): number[] => {
          const accepted: number[] = [];
          for (const ch of pubStreams) {
            const before = r.robot.published.length;
            bundle(ch.id);
            const n = nacks(c.take());
            if (r.robot.published.length > before) {
              equal(n.length, 0);
              accepted.push(ch.id);
            } else {
              const expected = t.tier < ch.publishTier ? Nack.NOT_GRANTED : Nack.NOT_OWNER;
              deepEqual(n.map((x) => x.code), [expected], `${t.name} BUNDLE on ${ch.name}`);
            }
          }
          return accepted;
        };
        const free = pubStreams.filter((ch) => t.tier >= ch.publishTier && !ch.motion).map((ch) => ch.id);
        deepEqual(tryAll(), free, 'without control: non-motion streams of its tier only');
        if (t.tier >= Tier.operator) {
          takeControl(c);
          deepEqual(tryAll(), pubStreams.filter((ch) => t.tier >= ch.publishTier).map((ch) => ch.id), 'as the owner: every stream of its tier');
        }
      });
    }
  });

  describe('INTENT at each intent\'s publish tier', () => {
    for (const t of TIERS) {
      it(`${t.name}: FORBIDDEN above its tier, NOT_OWNER for motion without control, NOT_ARMED after a disarm, ECHO otherwise`, () => {
        const r = rig();
        const { c } = join(r, t);
        // take_control goes last, so that the first pass runs without control.
        const order = intents.filter((ch) => ch.name !== 'take_control').concat(intents.filter((ch) => ch.name === 'take_control'));
        // §11.2: the owner's disarm disarms the hub; the owner's arm arms it.
        let armed = true;
        const expect = (owner: boolean): [string, number][] =>
          order.map((ch) => {
            if (ch.name === 'release_control') return [ch.name, -2]; // tried on its own below
            if (t.tier < ch.publishTier) return [ch.name, Nack.FORBIDDEN];
            if (ch.name === 'take_control') return [ch.name, owner ? 0 : -1];
            if (ch.motion && !owner) return [ch.name, Nack.NOT_OWNER];
            if (ch.name === 'arm') armed = true;
            else if (ch.name === 'disarm' && owner) armed = false;
            else if (ch.motion && !armed) return [ch.name, Nack.NOT_ARMED];
            return [ch.name, 0];
          });
        const results = (skipTake: boolean): [string, number][] =>
          order.map((ch, i) => {
            if (skipTake && ch.name === 'take_control') return [ch.name, 0];
            if (ch.name === 'release_control') return [ch.name, -2];
            c.intent(ch.id, 100 + i);
            const a = answer(c);
            equal(a.requestId, 100 + i, 'the answer carries the request id');
            return [ch.name, a.type === FrameType.ECHO ? (ch.name === 'take_control' ? -1 : a.result) : a.code];
          });
        deepEqual(results(false), expect(false));
        const owner = r.hub.controlOwner !== 0;
        equal(owner, t.tier >= Tier.operator, 'only operator and maintainer can take control');
        if (owner) {
          deepEqual(results(true), expect(true));
          c.intent(RELEASE_CONTROL, 9);
          equal(answer(c).type, FrameType.ECHO);
          equal(r.hub.controlOwner, 0);
        }
        // release_control: FORBIDDEN below its tier, NOT_OWNER from anyone not owning control.
        c.intent(RELEASE_CONTROL, 10);
        const rel = answer(c) as NackFrame;
        equal(rel.code, t.tier < (CATALOG.byId(RELEASE_CONTROL)?.publishTier ?? 0) ? Nack.FORBIDDEN : Nack.NOT_OWNER);
      });
    }
  });

  describe('ACK, PING, GOODBYE, CATALOG and HEALTH', () => {
    for (const t of TIERS) {
      it(`${t.name}: ACK and PONG unanswered, hub-only frames MALFORMED, PING → PONG, CATALOG served, HEALTH only for maintainer, GOODBYE closes only itself`, () => {
        const r = rig();
        const bystander = join(r, TIERS[1] as Tiered, { subWishes: [{ channelId: CONTROL_OWNER, wishedRateHz: 2 }] }).c;
        takeControl(bystander);
        bystander.take();
        const { c, w } = join(r, t);
        c.send({ type: FrameType.ACK, acked: 1 });
        c.send({ type: FrameType.ACK, ackBase: 3, ackBitmap: 7 });
        c.send({ type: FrameType.PONG, t0: 1, t1: 2 });
        equal(c.take().length, 0, 'an ACK or a PONG is not answered');
        // Frames only the hub sends are MALFORMED from any client, whatever its tier (§1.3).
        const hubOnly: Frame[] = [
          { type: FrameType.WELCOME, sessionId: 1, resumeToken: new Uint8Array(16), hubId: 'h', mtu: 1024, slots: 8, catalogHash: new Uint8Array(8), tier: 2, owner: 0, latched: false, subGrants: [], pubGrants: [], staleTtlMs: 1 },
          { type: FrameType.GRANT, subGrants: [] },
          { type: FrameType.DATA, channelId: IMU, seq: 1, t: 1, values: [] },
          { type: FrameType.ECHO, channelId: ARM, requestId: 1, result: 0 },
          { type: FrameType.NACK, code: Nack.FORBIDDEN },
        ];
        for (const f of hubOnly) {
          c.send(f);
          deepEqual(nacks(c.take()).map((n) => [n.code, n.frameType]), [[Nack.MALFORMED, f.type]], `a client's type ${f.type}`);
        }
        equal(r.hub.sessions().find((x) => x.id === w.sessionId)?.tier, t.tier, 'and its tier is what its credential gave');
        c.send({ type: FrameType.PING, t0: 42 });
        deepEqual(c.take(), [{ type: FrameType.PONG, t0: 42, t1: r.clock.now(), level: 0 }], 'a PONG in a session carries the level of its link (§5.14)');
        c.send({ type: FrameType.CATALOG });
        const cat = only<Frame>(c.take(), FrameType.CATALOG, 'CATALOG');
        ok(cat.type === FrameType.CATALOG && cat.text !== undefined && cat.text.length > 0);
        c.send({ type: FrameType.HEALTH });
        const h = c.take();
        if (t.tier >= Tier.maintainer) ok(h.length === 1 && h[0]?.type === FrameType.HEALTH && typeof h[0].text === 'string', JSON.stringify(h));
        else deepEqual(h, [{ type: FrameType.NACK, code: Nack.FORBIDDEN, frameType: FrameType.HEALTH }]);
        c.send({ type: FrameType.GOODBYE });
        deepEqual(r.hub.sessions().map((s) => s.id).indexOf(w.sessionId), -1, 'its own session is closed');
        equal(r.hub.controlOwner !== 0, true, 'the owner keeps control');
        equal(r.hub.sessions().length, 1);
        equal(bystander.take().length, 0, 'the other session hears nothing of it');
      });
    }

    it('before HELLO only PING is answered; HEALTH and CATALOG are NOT_READY', () => {
      const r = rig();
      const c = new TestClient(r.hub);
      c.send({ type: FrameType.PING, t0: 5 });
      equal(c.take()[0]?.type, FrameType.PONG);
      for (const f of [{ type: FrameType.HEALTH }, { type: FrameType.CATALOG }, { type: FrameType.ESTOP_CLEAR }, { type: FrameType.ACK, acked: 0 }] as Frame[]) {
        c.send(f);
        deepEqual(nacks(c.take()).map((n) => [n.code, n.frameType]), [[Nack.NOT_READY, f.type]]);
      }
    });
  });

  describe('ESTOP_CLEAR', () => {
    function latchedRig(): { r: Rig; byTier: TestClient[] } {
      const r = rig();
      const byTier = TIERS.map((t) => join(r, t).c);
      r.hub.setButton(true);
      r.hub.setButton(false);
      ok(r.hub.latch.latched);
      for (const c of byTier) c.take();
      return { r, byTier };
    }

    it('observer: FORBIDDEN; operator and maintainer without control: NOT_OWNER; the latch stays', () => {
      const { r, byTier } = latchedRig();
      const codes = byTier.map((c) => {
        c.send({ type: FrameType.ESTOP_CLEAR });
        return nacks(c.take()).map((n) => [n.code, n.frameType]);
      });
      deepEqual(codes, [[[Nack.FORBIDDEN, FrameType.ESTOP_CLEAR]], [[Nack.NOT_OWNER, FrameType.ESTOP_CLEAR]], [[Nack.NOT_OWNER, FrameType.ESTOP_CLEAR]]]);
      ok(r.hub.latch.latched);
      equal(r.robot.releases, 0);
    });

    for (const t of TIERS.slice(1)) {
      it(`${t.name} owning control clears it when no source asserts, and every session hears CLEARED`, () => {
        const { r, byTier } = latchedRig();
        const owner = byTier[t.tier] as TestClient;
        takeControl(owner);
        owner.send({ type: FrameType.ESTOP_CLEAR });
        ok(!r.hub.latch.latched);
        equal(r.robot.releases, 1);
        for (const c of byTier) {
          const e = c.link.estops();
          equal(e[e.length - 1]?.kind, EstopKind.CLEARED, 'every session hears the clear');
        }
      });
    }

    it('the owner is refused ESTOP_LATCHED while the hub button is held, and for a stale estop_seq', () => {
      const r = rig();
      const { c } = join(r, TIERS[1] as Tiered);
      takeControl(c);
      r.hub.setButton(true);
      c.send({ type: FrameType.ESTOP_CLEAR });
      deepEqual(nacks(c.take()).map((n) => n.code), [Nack.ESTOP_LATCHED]);
      r.hub.setButton(false);
      c.send({ type: FrameType.ESTOP_CLEAR, estopSeq: (r.hub.latch.originSeq + 1) & 0xffff });
      deepEqual(nacks(c.take()).map((n) => n.code), [Nack.ESTOP_LATCHED]);
      ok(r.hub.latch.latched);
      c.send({ type: FrameType.ESTOP_CLEAR, estopSeq: r.hub.latch.originSeq });
      ok(!r.hub.latch.latched);
    });

    it('a clear when nothing is latched answers the current CLEARED frame to the asker alone, at any tier', () => {
      const r = rig();
      const clients = TIERS.map((t) => join(r, t).c);
      for (const [i, c] of clients.entries()) {
        c.send({ type: FrameType.ESTOP_CLEAR });
        clients.forEach((d, j) => equal(d.link.estops().length, j <= i ? 1 : 0, `${i}: only the askers heard`));
        ok(!r.hub.latch.latched);
      }
      equal(r.robot.releases, 0);
    });

    it('after a deadman latch the owner\'s clear is its next frame: heard, and the clear goes through', () => {
      const r = rig();
      const { c } = join(r, TIERS[1] as Tiered);
      takeControl(c);
      r.clock.advance(501);
      r.hub.tick();
      ok(r.hub.latch.latched);
      equal(r.hub.latch.source, EstopSource.DEADMAN);
      c.send({ type: FrameType.ESTOP_CLEAR });
      ok(!r.hub.latch.latched);
    });
  });

  describe('the ESTOP frame: anyone may assert', () => {
    for (const who of ['before HELLO', ...TIERS.map((t) => t.name)]) {
      it(`${who}: latches, stops the robot, and every session hears it`, () => {
        const r = rig();
        const watcher = join(r, TIERS[0] as Tiered).c;
        const t = TIERS.find((x) => x.name === who);
        const c = t ? join(r, t).c : new TestClient(r.hub);
        c.estop(1, 77);
        ok(r.hub.latch.latched);
        deepEqual(r.robot.stops, [EstopSource.CLIENT]);
        equal(watcher.link.estops()[0]?.kind, EstopKind.ASSERT);
        equal(c.link.estops()[0]?.kind, EstopKind.ASSERT);
        equal(nacks(c.take()).length, 0);
      });
    }
  });
});

// =============================================================================================

describe('security: control ownership (§6.8)', () => {
  it('only the owner\'s motion intents and bundles pass; the others get NOT_OWNER and nothing reaches the robot', () => {
    const r = rig();
    const a = join(r, TIERS[1] as Tiered, { pubWishes: [{ channelId: CMD_VEL, wishedRateHz: 20 }] }).c;
    const b = join(r, TIERS[2] as Tiered, { pubWishes: [{ channelId: CMD_VEL, wishedRateHz: 20 }, { channelId: TRAJECTORY, wishedRateHz: 5 }] }).c;
    a.take();
    b.take();
    takeControl(a);
    for (const [c, mine] of [[b, false], [a, true]] as [TestClient, boolean][]) {
      const intentsBefore = r.robot.intents.length;
      const pubsBefore = r.robot.published.length;
      c.intent(ARM, 1);
      const x = answer(c);
      c.send({ type: FrameType.BUNDLE, channelId: CMD_VEL, samples: [[1, 0.1, 0.2]] });
      const y = nacks(c.take());
      if (mine) {
        equal(x.type, FrameType.ECHO);
        equal(y.length, 0);
        deepEqual(r.robot.intents.slice(intentsBefore).map((i) => i.channelId), [ARM]);
        deepEqual(r.robot.published.slice(pubsBefore).map((p) => p.channelId), [CMD_VEL]);
      } else {
        deepEqual([(x as NackFrame).code, y.map((n) => n.code)], [Nack.NOT_OWNER, [Nack.NOT_OWNER]]);
        equal(r.robot.intents.length, intentsBefore);
        equal(r.robot.published.length, pubsBefore);
      }
    }
    // A non-motion intent needs no control.
    b.intent(DISARM, 2);
    equal(answer(b).type, FrameType.ECHO);
  });

  it('take: refused while another ACTIVE session owns; allowed once the owner is STALE; the old owner resumes without control', () => {
    const r = rig();
    const watcher = join(r, TIERS[0] as Tiered, { subWishes: [{ channelId: CONTROL_OWNER, wishedRateHz: 2 }] }).c;
    const a = join(r, TIERS[1] as Tiered);
    const b = join(r, TIERS[1] as Tiered);
    takeControl(a.c);
    b.c.intent(TAKE_CONTROL, 2);
    equal((answer(b.c) as NackFrame).code, Nack.NOT_OWNER);
    equal(r.hub.controlOwner, a.w.sessionId);
    a.c.sink.lost();
    equal(r.hub.sessions().find((s) => s.id === a.w.sessionId)?.state, SessionState.STALE);
    takeControl(b.c, 3);
    equal(r.hub.controlOwner, b.w.sessionId);
    const back = new TestClient(r.hub);
    equal(back.hello({ credential: OPERATOR_CREDENTIAL, resumeToken: a.w.resumeToken }).sessionId, a.w.sessionId);
    back.intent(ARM, 4);
    equal((answer(back) as NackFrame).code, Nack.NOT_OWNER);
    back.intent(TAKE_CONTROL, 5);
    equal((answer(back) as NackFrame).code, Nack.NOT_OWNER);
    deepEqual((watcher.take(FrameType.DATA) as DataFrame[]).filter((f) => f.channelId === CONTROL_OWNER).map((f) => f.values[0]), [a.w.sessionId, b.w.sessionId]);
  });

  it('release: only the owner; GOODBYE and teardown release too; an observer can never take', () => {
    const r = rig();
    const obs = join(r, TIERS[0] as Tiered).c;
    obs.intent(TAKE_CONTROL, 1);
    equal((answer(obs) as NackFrame).code, Nack.FORBIDDEN);
    const a = join(r, TIERS[1] as Tiered);
    const b = join(r, TIERS[2] as Tiered);
    takeControl(a.c);
    b.c.intent(RELEASE_CONTROL, 2);
    equal((answer(b.c) as NackFrame).code, Nack.NOT_OWNER);
    equal(r.hub.controlOwner, a.w.sessionId);
    a.c.intent(RELEASE_CONTROL, 3);
    equal(answer(a.c).type, FrameType.ECHO);
    equal(r.hub.controlOwner, 0);
    takeControl(b.c, 4);
    b.c.send({ type: FrameType.GOODBYE });
    equal(r.hub.controlOwner, 0, 'GOODBYE releases control');
    takeControl(a.c, 5);
    ok(r.hub.evict(a.w.sessionId));
    equal(r.hub.controlOwner, 0, 'an operator\'s teardown releases control');
  });
});

// =============================================================================================
// Credentials.

/** Every index read of a Uint8Array, counted through a Proxy (as the limits tests do for constantTimeEqual). */
interface Probe {
  readonly bytes: Uint8Array;
  readonly reads: number[];
}

function counting(target: Uint8Array, probe: Probe): Uint8Array {
  return new Proxy(target, {
    get(t, prop) {
      if (typeof prop === 'string' && /^\d+$/.test(prop)) {
        const i = Number(prop);
        if (i < probe.reads.length) probe.reads[i] = (probe.reads[i] as number) + 1;
      }
      const v = (t as unknown as Record<string | symbol, unknown>)[prop];
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(t) : v;
    },
  });
}

/**
 * A Store whose credential record hands out instrumented arrays: the record itself is a Proxy
 * whose `slice` (what decodeCredentials cuts each credential with) returns counting Proxies,
 * so every read of every stored credential the hub makes is counted, index by index.
 */
class ProbeStore extends MemoryStore {
  readonly probes: Probe[] = [];
  override get(key: string): Uint8Array | undefined {
    const v = super.get(key);
    if (!v || key !== CREDENTIALS_KEY) return v;
    const probes = this.probes;
    return new Proxy(v, {
      get(t, prop) {
        if (prop === 'slice') {
          return (from?: number, to?: number): Uint8Array => {
            const part = t.slice(from, to);
            const probe: Probe = { bytes: part.slice(), reads: new Array<number>(part.length).fill(0) };
            probes.push(probe);
            return counting(part, probe);
          };
        }
        const x = (t as unknown as Record<string | symbol, unknown>)[prop];
        return typeof x === 'function' ? (x as (...a: unknown[]) => unknown).bind(t) : x;
      },
    });
  }
}

interface LogEvent {
  code: unknown;
  a: unknown;
  b: unknown;
}

class CaptureLog implements Log {
  readonly events: LogEvent[] = [];
  event(code: string, a?: number, b?: number): void {
    this.events.push({ code, a, b });
  }
}

function contains(hay: Uint8Array, needle: Uint8Array): boolean {
  if (needle.length === 0) return false;
  outer: for (let i = 0; i + needle.length <= hay.length; i++) {
    for (let j = 0; j < needle.length; j++) if (hay[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}

function utf8(s: string): Uint8Array {
  const w = new CborWriter(new Uint8Array(256));
  w.text(s);
  // Skip the CBOR text head (one byte for up to 23 bytes, two up to 255).
  const head = w.buf[0]! === 0x78 ? 2 : 1;
  return w.buf.slice(head, w.pos);
}

/** Every byte the hub sent one client: its CBOR frames and its ESTOP frames. */
function sentTo(c: TestClient): Uint8Array[] {
  c.link.drain();
  return c.link.received.map((x) => x.bytes);
}

describe('security: credentials', () => {
  it('every stored credential is read in full, exactly once per byte, whatever the presented value', () => {
    const store = new ProbeStore();
    saveCredentials(store, [
      { tier: Tier.operator, credential: OPERATOR_CREDENTIAL },
      { tier: Tier.maintainer, credential: MAINTAINER_CREDENTIAL },
      { tier: Tier.operator, credential: ascii('short') },
      { tier: Tier.maintainer, credential: new Uint8Array(64).fill(0x41) },
    ]);
    const r = rig({}, store);
    equal(store.probes.length, 4, 'the hub loaded the four credentials through the probe');
    const flip = (b: Uint8Array, i: number): Uint8Array => {
      const c = b.slice();
      c[i] = (c[i] as number) ^ 0x01;
      return c;
    };
    const presented: [string, Uint8Array][] = [
      ['the operator credential', OPERATOR_CREDENTIAL],
      ['the maintainer credential', MAINTAINER_CREDENTIAL],
      ['the first stored one with its first byte changed', flip(OPERATOR_CREDENTIAL, 0)],
      ['the first stored one with its last byte changed', flip(OPERATOR_CREDENTIAL, OPERATOR_CREDENTIAL.length - 1)],
      ['a prefix of a stored one', OPERATOR_CREDENTIAL.subarray(0, 5)],
      ['a stored one with a byte more', Uint8Array.from([...OPERATOR_CREDENTIAL, 0x31])],
      ['the short one', ascii('short')],
      ['nothing (0 bytes)', new Uint8Array(0)],
      ['64 bytes of junk', new Uint8Array(64).fill(0x41).map((x, i) => (i === 63 ? 0x42 : x))],
    ];
    for (const [what, cred] of presented) {
      for (const p of store.probes) p.reads.fill(0);
      const c = new TestClient(r.hub);
      c.hello({ credential: cred });
      for (const p of store.probes) {
        deepEqual(p.reads, new Array<number>(p.bytes.length).fill(1), `${what}: stored credential ${bytesToHex(p.bytes)} read once per byte`);
      }
      c.send({ type: FrameType.GOODBYE });
    }
  });

  // One scenario touching every frame type, every refusal path that sees a credential or a name,
  // and both bindings' logs; run with different names and credentials, its logs, reports and
  // frames must not depend on either (and must not contain them).
  interface Trace {
    log: string[];
    reports: string[];
    sent: Uint8Array[];
  }

  function scenario(name: string, operatorCred: Uint8Array, maintainerCred: Uint8Array, wrongCred: Uint8Array): Trace {
    const log = new CaptureLog();
    const r = rig({ slots: 4 }, storeWithCredentials(), log);
    const clients: TestClient[] = [];
    const open = (extra: Partial<HelloFrame>): TestClient => {
      const c = new TestClient(r.hub);
      clients.push(c);
      c.send({ type: FrameType.HELLO, version: PROTOCOL_VERSION, name, ...extra });
      return c;
    };
    const op = open({ credential: operatorCred, subWishes: [{ channelId: IMU, wishedRateHz: 10 }, { channelId: SCAN, wishedRateHz: 1 }], pubWishes: [{ channelId: CMD_VEL, wishedRateHz: 10 }, { channelId: TRAJECTORY, wishedRateHz: 1 }] });
    const mt = open({ credential: maintainerCred });
    open({ credential: wrongCred });
    open({ version: 2, credential: operatorCred });
    const welcome = op.take(FrameType.WELCOME)[0] as WelcomeFrame;
    op.intent(TAKE_CONTROL, 1);
    op.send({ type: FrameType.BUNDLE, channelId: CMD_VEL, samples: [[1, 0.1, 0.2]] });
    op.send({ type: FrameType.HELLO, version: PROTOCOL_VERSION, name, credential: operatorCred });
    op.send({ type: FrameType.SUBSCRIBE, wishes: [{ channelId: ODOM, wishedRateHz: 5 }] });
    op.send({ type: FrameType.ACK, acked: 3 });
    op.send({ type: FrameType.PING, t0: 1 });
    op.send({ type: FrameType.CATALOG });
    mt.send({ type: FrameType.HEALTH });
    op.sendBytes(new Uint8Array([0xff, 0x00]));
    op.estop(1);
    op.send({ type: FrameType.ESTOP_CLEAR });
    r.hub.publishSample(IMU, r.clock.now(), new Float64Array(6), 6);
    // Slots full: a fifth HELLO is refused; then a lost transport and a resume with the same name.
    open({ credential: operatorCred });
    op.sink.lost();
    const back = open({ credential: operatorCred, resumeToken: welcome.resumeToken });
    back.send({ type: FrameType.UNSUBSCRIBE, channels: [IMU] });
    // The TCP binding logs too: a refused oversize frame, then HELLO over it.
    const tcp = new TcpLink({ hub: r.hub, clock: r.clock, framing: LinkFraming.LENGTH_PREFIX, binding: 'tcp', log });
    const sock: LinkTransport = { kick() {}, close() {} };
    tcp.start(sock);
    const w = new CborWriter(new Uint8Array(512));
    encodeFrame({ type: FrameType.HELLO, version: PROTOCOL_VERSION, name, credential: operatorCred }, w);
    const wire = new Uint8Array(2 + w.pos + 4);
    writeLengthPrefix(w.pos, wire, 0);
    wire.set(w.buf.subarray(0, w.pos), 2);
    wire.set([0x08, 0x00, 0xa0, 0x00], 2 + w.pos);
    tcp.input(wire, 0, wire.length);
    const tcpOut = new Uint8Array(1 << 16);
    const tcpN = tcp.pull(tcpOut, 0, tcpOut.length);
    back.send({ type: FrameType.GOODBYE });
    r.clock.advance(60000);
    r.hub.tick();
    const sent: Uint8Array[] = [tcpOut.slice(0, tcpN)];
    for (const c of clients) sent.push(...sentTo(c));
    const counters: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(r.hub.counters)) counters[k] = v instanceof Float64Array ? Array.from(v) : v;
    return {
      log: log.events.map((e) => JSON.stringify([e.code, e.a, e.b])),
      reports: [JSON.stringify(r.hub.sessions()), JSON.stringify(r.hub.healthReport()), JSON.stringify(counters)],
      sent,
    };
  }

  const NAME_A = 'Zq9-secret-client-name';
  const NAME_B = 'Kw4-hidden-client-nick';
  const WRONG_A = ascii('wrong-credential-000');
  const WRONG_B = ascii('other-credential-999');
  const a = (): Trace => scenario(NAME_A, OPERATOR_CREDENTIAL, MAINTAINER_CREDENTIAL, WRONG_A);
  const b = (): Trace => scenario(NAME_B, OPERATOR_CREDENTIAL_2, MAINTAINER_CREDENTIAL_2, WRONG_B);
  const secrets = [utf8(NAME_A), OPERATOR_CREDENTIAL, MAINTAINER_CREDENTIAL, WRONG_A];
  const secretText = [NAME_A, 'operator-token-0001', 'maintainer-token-01', 'wrong-credential-000'];

  it('are never logged: log events are a code and numbers, and the same whatever the name or credential', () => {
    const ta = a();
    ok(ta.log.length >= 8, `the scenario logs (${ta.log.length} events)`);
    for (const line of ta.log) {
      const [code, x, y] = JSON.parse(line) as [unknown, unknown, unknown];
      ok(typeof code === 'string', line);
      ok(x === null || x === undefined || typeof x === 'number', line);
      ok(y === null || y === undefined || typeof y === 'number', line);
      for (const s of secretText) ok(line.indexOf(s) < 0 && line.indexOf(s.slice(0, 8)) < 0, `log event ${line} shows ${s}`);
    }
    deepEqual(ta.log, b().log, 'the log does not depend on the name or the credential');
  });

  it('are never reported: sessions(), healthReport() and the counters hold neither, whatever they were', () => {
    const ta = a();
    for (const rep of ta.reports) for (const s of secretText) ok(rep.indexOf(s) < 0, `a report shows ${s}`);
    deepEqual(ta.reports, b().reports);
  });

  it('are never echoed: no frame the hub sends any client carries the name or a credential', () => {
    const ta = a();
    ok(ta.sent.length > 20, `the scenario got frames back (${ta.sent.length})`);
    for (const bytes of ta.sent) for (const s of secrets) ok(!contains(bytes, s), `a frame carries ${bytesToHex(s)}: ${bytesToHex(bytes).slice(0, 200)}`);
    const tb = b();
    deepEqual(ta.sent.map(bytesToHex), tb.sent.map(bytesToHex), 'what the hub sends does not depend on the name or the credential');
  });
});

// =============================================================================================
// Flooding (§10.5, §12.5, §12.6): a client sending at the most its link carries cannot delay
// another client's ESTOP, its critical updates or its grants by one tick, and is itself held to
// its limits.

/** A client on a TCP link (length-prefixed), reading everything the hub sends at once. */
class TcpClient {
  readonly link: TcpLink;
  readonly frames: Frame[] = [];
  readonly estops: number[] = [];
  /** When each frame arrived (ms of the virtual clock), parallel to `frames`. */
  readonly at: number[] = [];
  closing = false;
  private readonly w = new CborWriter(new Uint8Array(4096));
  private readonly reasm = new FrameReassembler(MAX_HUB_FRAME_BYTES);
  private readonly out = new Uint8Array(1 << 16);
  constructor(
    hub: Hub,
    private readonly clock: VirtualClock,
  ) {
    this.link = new TcpLink({ hub, clock, framing: LinkFraming.LENGTH_PREFIX, binding: 'tcp' });
    const self = this;
    this.link.start({
      kick() {},
      close() {
        self.closing = true;
      },
    });
  }
  get open(): boolean {
    return !this.closing;
  }
  record(f: Frame): Uint8Array {
    this.w.reset();
    encodeFrame(f, this.w);
    const rec = new Uint8Array(2 + this.w.pos);
    writeLengthPrefix(this.w.pos, rec, 0);
    rec.set(this.w.buf.subarray(0, this.w.pos), 2);
    return rec;
  }
  sendRaw(bytes: Uint8Array): void {
    if (this.open) this.link.input(bytes, 0, bytes.length);
  }
  read(): void {
    for (;;) {
      const n = this.link.pull(this.out, 0, this.out.length);
      if (n === 0) break;
      this.reasm.push(this.out, 0, n, {
        frame: (b, s, e) => {
          if (b[s] === 0xe5) this.estops.push(decodeEstop(b, s, e - s).kind);
          else {
            this.frames.push(decodeFrame(b, s, e, MAX_HUB_FRAME_BYTES));
            this.at.push(this.clock.now());
          }
        },
        refuse: () => {
          throw new Error('the hub sent an oversize frame');
        },
      });
    }
    if (this.closing) this.link.transportClosed();
  }
}

interface FloodResult {
  /** What the victim and the watcher received, stamped with the millisecond. */
  victim: string[];
  watcher: string[];
  /** The victim's motion bundles reaching the robot, by millisecond; the robot's stops. */
  robot: string[];
  flooderFrames: number;
  flooderBytes: number;
  flooderRateLimited: number[];
  flooderEchoes: number;
  flooderOpen: boolean;
  markerSamples: number;
  garbage: { connections: number; malformedPerConnection: number[]; goodbyes: number[]; closed: number };
}

const FLOOD_MS = runs(2000, 1200);
/** Bytes per millisecond the flooder's link carries: 10 Mbit/s on Node, 1.6 Mbit/s on XS. */
const FLOOD_BYTES_PER_MS = runs(1250, 200);

function floodScenario(flood: boolean): FloodResult {
  const clock = new VirtualClock();
  const robot = new RecordingRobot();
  const robotLog: string[] = [];
  const stop = robot.stop.bind(robot);
  robot.stop = (source: number): void => {
    robotLog.push(`${clock.now()} stop ${source}`);
    stop(source);
  };
  const publish = robot.publish.bind(robot);
  robot.publish = (ch: number, samples: SampleBlock): void => {
    if (ch === CMD_VEL) robotLog.push(`${clock.now()} cmd_vel ${samples.count}`);
    publish(ch, samples);
  };
  const hub = new Hub({ clock, random: new SeededRandom(7), store: storeWithCredentials(), robot, catalog: CATALOG });
  const victim = new TestClient(hub);
  victim.hello({
    credential: OPERATOR_CREDENTIAL,
    subWishes: [{ channelId: SAFETY, wishedRateHz: 10 }, { channelId: SAFETY_EVENTS, wishedRateHz: 20 }, { channelId: CONTROL_OWNER, wishedRateHz: 2 }, { channelId: IMU, wishedRateHz: 20 }],
    pubWishes: [{ channelId: CMD_VEL, wishedRateHz: 50 }],
  });
  victim.intent(TAKE_CONTROL, 1);
  const watcher = new TestClient(hub);
  watcher.hello({ subWishes: [{ channelId: SAFETY, wishedRateHz: 10 }, { channelId: CONTROL_OWNER, wishedRateHz: 2 }, { channelId: SAFETY_EVENTS, wishedRateHz: 20 }] });
  // The flooder exists in both runs (same session ids); it only floods in one.
  const flooder = new TcpClient(hub, clock);
  flooder.sendRaw(flooder.record({ type: FrameType.HELLO, version: PROTOCOL_VERSION, name: 'flood', credential: OPERATOR_CREDENTIAL, pubWishes: [{ channelId: MARKER, wishedRateHz: 10 }] }));
  flooder.read();
  const markerBefore = robot.published.filter((p) => p.channelId === MARKER).length;
  // Valid frames the flooder repeats: intents over their bucket, bundles over their grant, bundles
  // it has no control for, frames it may not send, pings.
  const floodFrames: Uint8Array[] = [
    flooder.record({ type: FrameType.INTENT, channelId: DISARM, requestId: 1 }),
    flooder.record({ type: FrameType.BUNDLE, channelId: MARKER, samples: [[1, 0.5]] }),
    flooder.record({ type: FrameType.BUNDLE, channelId: MARKER, samples: new Array(32).fill([1, 0.5]) as number[][] }),
    flooder.record({ type: FrameType.BUNDLE, channelId: CMD_VEL, samples: new Array(32).fill([1, 0.5, 0.5]) as number[][] }),
    flooder.record({ type: FrameType.INTENT, channelId: ARM, requestId: 2 }),
    flooder.record({ type: FrameType.INTENT, channelId: TAKE_CONTROL, requestId: 3 }),
    flooder.record({ type: FrameType.HEALTH }),
    flooder.record({ type: FrameType.ESTOP_CLEAR }),
    flooder.record({ type: FrameType.PING, t0: 7 }),
    flooder.record({ type: FrameType.ACK, acked: 0 }),
  ];
  const garbage = { connections: 0, malformedPerConnection: [] as number[], goodbyes: [] as number[], closed: 0 };
  let junk: TcpClient | null = null;
  let junkSeen = 0;
  let junkRound = 0;
  let floodIndex = 0;
  let credit = 0;
  let floodBytes = 0;
  const logOf = (c: TestClient, out: string[]): void => {
    c.link.drain();
    for (const x of c.link.received.splice(0)) out.push(`${clock.now()} ${x.kind} ${bytesToHex(x.bytes)}`);
  };
  const victimLog: string[] = [];
  const watcherLog: string[] = [];
  const imu = new Float64Array(6);
  const odom = new Float64Array(5);
  const start = clock.now();
  for (let ms = 0; ms <= FLOOD_MS; ms++) {
    clock.t = start + ms;
    if (flood) {
      // The flooder fills its link: whole records, round robin, as fast as the link's bytes allow.
      credit += FLOOD_BYTES_PER_MS;
      while (flooder.open) {
        const rec = floodFrames[floodIndex % floodFrames.length] as Uint8Array;
        if (rec.length > credit) break;
        credit -= rec.length;
        floodBytes += rec.length;
        floodIndex++;
        flooder.sendRaw(rec);
      }
      flooder.read();
      // A second client sends garbage at its link's rate: HELLO first every other connection.
      if (!junk || !junk.open) {
        if (junk) {
          junk.read();
          garbage.closed++;
          garbage.malformedPerConnection.push(junk.frames.filter((f) => f.type === FrameType.NACK && (f.code === Nack.MALFORMED || f.code === Nack.NOT_READY)).length);
          for (const f of junk.frames) if (f.type === FrameType.GOODBYE) garbage.goodbyes.push((f as GoodbyeFrame).reason ?? 0);
        }
        junk = new TcpClient(hub, clock);
        garbage.connections++;
        junkSeen = 0;
        if (junkRound++ % 2 === 0) junk.sendRaw(junk.record({ type: FrameType.HELLO, version: PROTOCOL_VERSION, name: 'junk' }));
      }
      let left = FLOOD_BYTES_PER_MS;
      while (left >= 8 && junk.open) {
        const g = new Uint8Array([0x00, 0x06, 0xa2, 0x00, 0x63, 0x1f, 0xff, (junkSeen++ * 7) & 0xff]);
        left -= g.length;
        junk.sendRaw(g);
      }
      junk.read();
    }
    // The victim, owning control: motion at its granted rate, a keep-alive, a new subscription, its
    // own ESTOP and clears (each followed by its arm) with a button press in between, an intent.
    if (ms > 50 && ms % 20 === 0) victim.send({ type: FrameType.BUNDLE, channelId: CMD_VEL, samples: [[ms, 0.1, 0.2]] });
    if (ms % 100 === 0) victim.send({ type: FrameType.PING, t0: ms });
    if (ms === 300) victim.send({ type: FrameType.SUBSCRIBE, wishes: [{ channelId: ODOM, wishedRateHz: 10 }] });
    if (ms === 500) victim.estop(1);
    if (ms === 700) victim.send({ type: FrameType.ESTOP_CLEAR });
    if (ms === 710) victim.intent(ARM, 3); // §11.2: a clear leaves the hub disarmed
    if (ms === 900) hub.setButton(true);
    if (ms === 1000) hub.setButton(false);
    if (ms === 1050) victim.send({ type: FrameType.ESTOP_CLEAR });
    if (ms === 1055) victim.intent(ARM, 4);
    if (ms === 1100) victim.intent(DISARM, 2);
    if (ms % 5 === 0) hub.publishSample(IMU, clock.now(), imu, 6);
    if (ms % 20 === 0) hub.publishSample(ODOM, clock.now(), odom, 5);
    if (ms % 10 === 0) hub.tick();
    logOf(victim, victimLog);
    logOf(watcher, watcherLog);
  }
  flooder.read();
  const rateLimited: number[] = [];
  for (let i = 0; i < flooder.frames.length; i++) {
    const f = flooder.frames[i] as Frame;
    if (f.type === FrameType.NACK && f.code === Nack.RATE_LIMITED) rateLimited.push(flooder.at[i] as number);
  }
  return {
    victim: victimLog,
    watcher: watcherLog,
    robot: robotLog,
    flooderFrames: floodIndex,
    flooderBytes: floodBytes,
    flooderRateLimited: rateLimited,
    flooderEchoes: flooder.frames.filter((f) => f.type === FrameType.ECHO && f.channelId === DISARM).length,
    flooderOpen: flooder.open,
    markerSamples: robot.published.filter((p) => p.channelId === MARKER).slice(markerBefore).reduce((n, p) => n + p.samples.length, 0),
    garbage,
  };
}

/** Two logs line for line; a failure names the first line that differs. */
function sameLog(flooded: readonly string[], control: readonly string[], who: string): void {
  const n = Math.min(flooded.length, control.length);
  for (let i = 0; i < n; i++) {
    if (flooded[i] !== control[i]) fail(`${who}: line ${i} differs under the flood:\n  flooded: ${flooded[i]}\n  control: ${control[i]}`);
  }
  equal(flooded.length, control.length, `${who}: lines received under the flood`);
}

describe('security: a flooding client', () => {
  let flooded: FloodResult;
  let control: FloodResult;
  before(function () {
    this.timeout(120000);
    control = floodScenario(false);
    flooded = floodScenario(true);
  });

  it('floods for real: thousands of frames at its link\'s rate, refused and answered', () => {
    ok(flooded.flooderBytes >= FLOOD_MS * FLOOD_BYTES_PER_MS * 0.95, `${flooded.flooderBytes} bytes flooded`);
    ok(flooded.flooderFrames > FLOOD_MS * 2, `${flooded.flooderFrames} flood frames`);
    ok(flooded.garbage.connections > 10, `${flooded.garbage.connections} garbage connections`);
    equal(control.flooderFrames, 0);
  });

  it('cannot delay the other client\'s ESTOP, critical updates, grants or motion by one tick', () => {
    // Everything the victim and the watcher received, at the same millisecond, byte for byte.
    ok(control.victim.some((l) => l.includes(' estop e501')), 'the victim\'s ESTOP went out');
    ok(control.watcher.filter((l) => l.includes(' estop ')).length >= 4, 'the watcher heard the ESTOPs and clears');
    ok(control.victim.some((l) => /^\d+ frame a2000618/.test(l)), 'the victim got a GRANT');
    sameLog(flooded.victim, control.victim, 'the victim');
    sameLog(flooded.watcher, control.watcher, 'the watcher');
    ok(control.robot.filter((l) => l.endsWith('cmd_vel 1')).length > 30, 'the victim\'s motion reached the robot');
    deepEqual(flooded.robot, control.robot);
  });

  it('gets at most 5 RATE_LIMITED NACKs in any second, and no more than its buckets let through', () => {
    const t = flooded.flooderRateLimited;
    ok(t.length > 0, 'the flood was rate-limited');
    for (let i = 0; i < t.length; i++) {
      let n = 0;
      for (let j = i; j < t.length && (t[j] as number) < (t[i] as number) + 1000; j++) n++;
      ok(n <= 5, `${n} RATE_LIMITED NACKs within 1 s from ${t[i]}`);
    }
    const seconds = FLOOD_MS / 1000;
    // §9.3: 20 intents per second, depth 20. §10.5: marker granted 10 Hz, capacity 10.
    ok(flooded.flooderEchoes <= 20 + 20 * seconds + 1, `${flooded.flooderEchoes} disarm intents carried out`);
    ok(flooded.markerSamples <= 10 + 10 * seconds + 1, `${flooded.markerSamples} marker samples reached the robot`);
    ok(flooded.flooderOpen, 'valid frames, however many, do not close a session');
  });

  it('is closed after more than 10 malformed frames in one second, session or not', () => {
    const g = flooded.garbage;
    ok(g.closed > 10);
    for (const n of g.malformedPerConnection) equal(n, 11, 'eleven malformed frames answered, then closed');
    ok(g.goodbyes.length >= Math.floor(g.closed / 2) - 1, 'sessions are closed with GOODBYE');
    for (const reason of g.goodbyes) equal(reason, GoodbyeReason.MISBEHAVING);
  });
});
