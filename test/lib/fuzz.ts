// Whole-hub fuzzing (issue 7 item 1; §12.6 "nothing a client sends can crash the hub or affect
// another session"). Mutated client traffic goes in through each binding's real ingress path
// (the core's LinkSink, TCP length-prefix framing, device WebSocket framing, host WebSocket
// messages, BLE fragments, ESP-NOW datagrams) and these invariants are checked after every input
// (the names are what a failure reports):
//   no-exception        nothing thrown out of the hub or a binding, now or in the tick after
//   no-internal-error   no fault the core caught itself (its `internal-error` log event)
//   observer-data       the observer's non-critical frames equal the control hub's, byte for byte
//   observer-grants     the observer's session is ACTIVE and its grants equal the control's
//   latch               the latch sets only on a valid ESTOP ASSERT (or the deadman, with an
//                       owner, in a tick) and clears only on an ESTOP_CLEAR; every valid ASSERT
//                       latches and tells the robot to stop
//   estop-announced     a latch change reaches the observer as an ESTOP frame and on `safety`
//   owner-announced     a change of control owner reaches the observer on `control-owner`
//   slots, subs-bounded, never-shed-bounded, binding-bounded   what the hub and the binding hold
//   egress-valid        every frame the hub sends anyone decodes as a hub → client frame
//   robot               the robot gets well-formed samples, and motion only unlatched, with an owner
//   rate-limited-throttle, malformed-close   §10.5 / §12.5 (core binding, timed at hand-over while
//                       the core answers the input; a NACK from the never-shed queue is not timed)
//
// One run is a sequence of inputs numbered 0, 1, 2, …; inputs are grouped in episodes of
// EPISODE_INPUTS, each with a fresh hub pair and its own PRNG drawn from (seed, episode), so any
// input replays from the start of its episode alone. An episode runs two hubs on identical virtual
// clocks: hub A takes the fuzz traffic and a well-behaved observer client; hub B (the control)
// takes only the observer. Both get the same robot samples and ticks, so the observer's view of
// A must equal its view of B wherever the fuzz traffic has no right to change it.
//
// Portable (Node and XS): no node: modules, no timers, no console.

import { loadCatalog, type CatalogIndex } from '../../catalog/index.js';
import { DEFAULT_CATALOG } from '../../catalog/default.js';
import { ChannelClass, Direction, Tier } from '../../catalog/schema.js';
import { CborWriter } from '../../hub/cbor.js';
import { decodeEstop, encodeEstop, ESTOP_FRAME_BYTES, ESTOP_MAGIC, EstopKind, EstopSource, type EstopFrame } from '../../hub/estop-frame.js';
import {
  decodeFrame,
  encodeFrame,
  FRAME_DIRECTION,
  FROM_HUB,
  FrameType,
  MAX_FRAME_BYTES,
  MAX_HUB_FRAME_BYTES,
  peekFrameType,
  PROTOCOL_VERSION,
  RESUME_TOKEN_BYTES,
  type Frame,
  type PubWish,
  type SubWish,
} from '../../hub/frames.js';
import { Hub, type HubConfig, type SubView } from '../../hub/hub.js';
import { Nack } from '../../hub/nack.js';
import { AckForm, Tag, tagChannel, tagType, type GrantSet, type Link, type LinkCaps, type LinkEstimate, type LinkSink, type Log, type RobotPort, type SampleBlock } from '../../hub/ports.js';
import { SessionState } from '../../hub/session.js';
import { MALFORMED_CLOSE_PER_S, STREAM_INGRESS_OVERAGE_NACK_PER_S } from '../../hub/constants.js';
import { DEVICE_DEFAULTS } from '../../device/config.js';
import type { HubAttach } from '../../bindings/link.js';
import { FrameReassembler, writeLengthPrefix, type FrameConsumer } from '../../bindings/tcp/framing.js';
import { AHEAD_SLOTS, LinkFraming, LinkState, MIN_QUEUE_BYTES, TcpLink, type LinkTransport } from '../../bindings/tcp/egress.js';
import { CLIENT_REASSEMBLY, FragmentPosition, fragmentSize, header as fragmentHeader, Reassembler, HUB_REASSEMBLY } from '../../bindings/ble/fragment.js';
import { BleLink, type BleTransport } from '../../bindings/ble/link.js';
import {
  DatagramCursor,
  DatagramFlag,
  DATAGRAM_MAX_BYTES,
  encodeBitmapAck,
  MAX_DATAGRAM_FRAME,
  writeBroadcastAck,
  writeHeader as writeDatagramHeader,
} from '../../bindings/espnow/datagram.js';
import { BROADCAST_MAC, EspNowBinding, ESPNOW_MAX_PEERS, RadioStatus, type Radio, type RadioHandler } from '../../bindings/espnow/link.js';
import { credentialStore, MAINTAINER_CREDENTIAL, OPERATOR_CREDENTIAL, SeededRandom, VirtualClock } from './hub-fixture.js';
import { bytesToHex, hexToBytes } from './vector-json.js';
import framesJson from '../vectors/frames.json' with { type: 'json' };
import lenientJson from '../vectors/lenient.json' with { type: 'json' };
import invalidJson from '../vectors/invalid.json' with { type: 'json' };
import estopJson from '../vectors/estop.json' with { type: 'json' };

// ============================================================================ randomness

/** mulberry32: small, seeded, deterministic on every engine. */
export class Prng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0;
  }
  u32(): number {
    let t = (this.s = (this.s + 0x6d2b79f5) >>> 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (t ^ (t >>> 14)) >>> 0;
  }
  float(): number {
    return this.u32() / 4294967296;
  }
  /** An integer in [0, n). */
  below(n: number): number {
    return Math.floor(this.float() * n);
  }
  /** An integer in [lo, hi]. */
  between(lo: number, hi: number): number {
    return lo + this.below(hi - lo + 1);
  }
  chance(p: number): boolean {
    return this.float() < p;
  }
  pick<T>(a: readonly T[]): T {
    return a[this.below(a.length)] as T;
  }
  bytes(n: number): Uint8Array {
    const b = new Uint8Array(n);
    for (let i = 0; i < n; i++) b[i] = this.u32() & 0xff;
    return b;
  }
}

/** A well-mixed 32-bit value from (seed, k): the PRNG seed of episode k. */
export function mixSeed(seed: number, k: number): number {
  let h = (seed ^ Math.imul((k + 0x9e3779b9) >>> 0, 0x85ebca6b)) >>> 0;
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d) >>> 0;
  h ^= h >>> 15;
  h = Math.imul(h, 0x846ca68b) >>> 0;
  h ^= h >>> 16;
  return h >>> 0;
}

// ============================================================================ the seed corpus

interface HexVector {
  hex: string;
}

/** Every stored conformance vector as bytes: valid, lenient and invalid frames, ESTOP frames. */
export function vectorCorpus(): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (const v of framesJson as HexVector[]) out.push(hexToBytes(v.hex));
  for (const v of lenientJson as HexVector[]) out.push(hexToBytes(v.hex));
  for (const v of invalidJson as HexVector[]) out.push(hexToBytes(v.hex));
  const e = estopJson as { valid: HexVector[]; invalid: HexVector[] };
  for (const v of e.valid) out.push(hexToBytes(v.hex));
  for (const v of e.invalid) out.push(hexToBytes(v.hex));
  return out;
}

// ============================================================================ mutators

/** Bytes that change CBOR structure when they land on a head: counts, widths, specials. */
const INTERESTING = Object.freeze([
  0x00, 0x01, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1f, 0x20, 0x38, 0x3b, 0x40, 0x57, 0x58, 0x5b, 0x5f, 0x60, 0x77, 0x78, 0x7b, 0x7f,
  0x80, 0x97, 0x98, 0x9b, 0x9f, 0xa0, 0xb7, 0xb8, 0xbb, 0xbf, 0xc0, 0xd8, 0xe5, 0xf4, 0xf5, 0xf6, 0xf7, 0xf8, 0xf9, 0xfa, 0xfb, 0xff,
]);

/** CBOR heads announcing enormous counts: arrays, maps, byte and text strings, integers. */
const HUGE_HEADS: readonly (readonly number[])[] = Object.freeze([
  [0x9a, 0xff, 0xff, 0xff, 0xff],
  [0x9b, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00],
  [0x9b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
  [0x99, 0xff, 0xff],
  [0x99, 0x01, 0x01],
  [0x98, 0xff],
  [0xba, 0x7f, 0xff, 0xff, 0xff],
  [0xbb, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
  [0xb9, 0x01, 0x00],
  [0x5a, 0xff, 0xff, 0xff, 0xff],
  [0x5b, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00],
  [0x7a, 0x00, 0x10, 0x00, 0x00],
  [0x7b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
  [0x1b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
  [0x1b, 0x00, 0x20, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00],
  [0x3b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff],
  [0x9f],
  [0xbf],
  [0x5f],
]);

/** Names of the frame mutators, for statistics. */
export const MUTATORS = Object.freeze([
  'bit-flip',
  'byte-set',
  'byte-insert',
  'byte-delete',
  'truncate',
  'splice',
  'duplicate-run',
  'length-lie',
  'huge-count',
  'valid-then-garbage',
  'nest-deep',
] as const);

/** One to four rounds of mutation of `src`; returns a fresh array. */
export function mutateFrame(rng: Prng, src: Uint8Array, corpus: readonly Uint8Array[], counts?: number[]): Uint8Array {
  let b = Array.from(src);
  const rounds = 1 + rng.below(4);
  for (let r = 0; r < rounds; r++) {
    const m = rng.below(MUTATORS.length);
    if (counts) counts[m] = (counts[m] ?? 0) + 1;
    const at = rng.below(b.length + 1);
    switch (m) {
      case 0:
        if (b.length > 0) b[at % b.length] = (b[at % b.length] as number) ^ (1 << rng.below(8));
        break;
      case 1:
        if (b.length > 0) b[at % b.length] = rng.chance(0.5) ? rng.below(256) : rng.pick(INTERESTING);
        break;
      case 2:
        b.splice(at, 0, rng.chance(0.5) ? rng.below(256) : rng.pick(INTERESTING));
        break;
      case 3:
        if (b.length > 0) b.splice(at % b.length, 1);
        break;
      case 4:
        b = b.slice(0, at);
        break;
      case 5: {
        const other = Array.from(rng.pick(corpus));
        b = b.slice(0, at).concat(other.slice(rng.below(other.length + 1)));
        break;
      }
      case 6:
        b.splice(at, 0, ...b.slice(at, at + 1 + rng.below(16)));
        break;
      case 7: {
        // A count or length that lies: find a head with a small inline count and move it.
        const heads: number[] = [];
        for (let i = 0; i < b.length; i++) {
          const x = b[i] as number;
          const major = x >> 5;
          if (major >= 2 && major <= 5 && (x & 0x1f) < 24) heads.push(i);
          else if (major >= 2 && major <= 5 && (x & 0x1f) === 24 && i + 1 < b.length) heads.push(i + 1);
        }
        if (heads.length === 0) break;
        const h = rng.pick(heads);
        const x = b[h] as number;
        const delta = rng.pick([-3, -2, -1, 1, 2, 3, 17]);
        if (x >> 5 >= 2 && x >> 5 <= 5 && (x & 0x1f) < 24) b[h] = (x & 0xe0) | (((x & 0x1f) + delta + 24) % 24);
        else b[h] = (x + delta) & 0xff;
        break;
      }
      case 8:
        b.splice(at, rng.below(3), ...rng.pick(HUGE_HEADS));
        break;
      case 9: {
        const n = 1 + rng.below(24);
        for (let i = 0; i < n; i++) b.push(rng.chance(0.3) ? rng.pick(INTERESTING) : rng.below(256));
        break;
      }
      case 10: {
        // Nesting past the decoder's depth limit (§7: 8 levels).
        const depth = 6 + rng.below(10);
        const open: number[] = [];
        for (let i = 0; i < depth; i++) open.push(rng.chance(0.5) ? 0x81 : 0xa1, ...(rng.chance(0.5) ? [] : [0x00]));
        b.splice(at, 0, ...open, 0x00);
        break;
      }
    }
  }
  return Uint8Array.from(b);
}

// ============================================================================ crafted client frames

/** What a fuzz client knows about its connection: enough to aim valid frames at the hub. */
export class ClientContext {
  /** A WELCOME arrived on this transport (and no GOODBYE since). */
  welcomed = false;
  sessionId = 0;
  /** Frames received from the hub on this transport (a truthful ACK key 28). */
  received = 0;
  /** The newest ESTOP sequence the hub announced to this client. */
  estopSeq = 0;
  /** The newest hub→peer datagram sequence (ESP-NOW). */
  datagramSeq = 0;
  /** The catalog text's total length, once a CATALOG chunk said it. */
  catalogTotal = 0;
  /** This client's own ESTOP sequence. */
  ownEstopSeq = 0;
  /** The tier its WELCOME stated. */
  tier = 0;
  /** Channels it holds a publication grant for. */
  readonly granted: number[] = [];
  /** The latch as the hub last announced it to this client. */
  latched = false;
}

const NAMES = Object.freeze(['console', 'teleop', 'scope', 'logger', 'planner', 'x', 'a'.repeat(32), 'é✓ robot', 'fuzz-client']);

/**
 * Valid and near-valid client frames aimed at the default catalog's real channels, with values
 * drawn around every range boundary of §4 and §7: the traffic that reaches deep into the hub.
 */
export class Crafter {
  readonly catalog: CatalogIndex;
  private readonly w = new CborWriter(new Uint8Array(16384));
  private readonly telemetry: number[] = [];
  private readonly publications: number[] = [];
  private readonly intents: number[] = [];
  private readonly allIds: number[] = [];
  /** Resume tokens seen in WELCOMEs of this episode (the newest last), shared by its clients. */
  readonly tokens: Uint8Array[] = [];

  constructor(catalog: CatalogIndex) {
    this.catalog = catalog;
    for (const ch of catalog.channels) {
      this.allIds.push(ch.id);
      if (ch.cls === ChannelClass.INTENT) this.intents.push(ch.id);
      else if (ch.direction === Direction.publication) this.publications.push(ch.id);
      else this.telemetry.push(ch.id);
    }
  }

  /** A token seen in some WELCOME: later HELLOs may try to resume with it. */
  rememberToken(t: Uint8Array): void {
    this.tokens.push(t.slice());
    if (this.tokens.length > 8) this.tokens.shift();
  }

  encode(f: Frame): Uint8Array {
    const w = this.w;
    w.reset();
    encodeFrame(f, w);
    return w.buf.slice(0, w.pos);
  }

  channel(rng: Prng, prefer: readonly number[]): number {
    const r = rng.float();
    if (r < 0.7) return rng.pick(prefer);
    if (r < 0.9) return rng.pick(this.allIds);
    return rng.pick([0, 1, 4, 99, 254, 255, 256, 1000]);
  }

  rate(rng: Prng): number {
    const r = rng.float();
    if (r < 0.75) return rng.pick([0.5, 1, 5, 10, 12.5, 20, 25, 40, 50, 100, 200]);
    if (r < 0.9) return Math.round(rng.float() * 10000) / 10 + 0.1;
    return rng.pick([0, -1, 1000, 1000.5, 1e9, 0.05, 1e-9, NaN, Infinity]);
  }

  uint(rng: Prng): number {
    return rng.pick([0, 1, 2, 23, 24, 255, 256, 65535, 65536, 0xffffffff, 0x100000000, Number.MAX_SAFE_INTEGER, rng.u32(), rng.below(1000)]);
  }

  hello(rng: Prng, ctx: ClientContext): Uint8Array {
    const f: { type: 1; version: number; name: string; credential?: Uint8Array; resumeToken?: Uint8Array; subWishes?: SubWish[]; pubWishes?: PubWish[] } = {
      type: FrameType.HELLO,
      version: rng.chance(0.95) ? PROTOCOL_VERSION : rng.pick([0, 2, 65535, 65536]),
      name: rng.chance(0.97) ? rng.pick(NAMES) : rng.pick(['', 'b'.repeat(33)]),
    };
    const c = rng.float();
    if (c < 0.4) f.credential = OPERATOR_CREDENTIAL;
    else if (c < 0.55) f.credential = MAINTAINER_CREDENTIAL;
    else if (c < 0.7) f.credential = rng.bytes(rng.below(70));
    if (this.tokens.length > 0 && rng.chance(0.25)) f.resumeToken = rng.pick(this.tokens);
    else if (rng.chance(0.04)) f.resumeToken = rng.bytes(rng.chance(0.8) ? RESUME_TOKEN_BYTES : rng.below(20));
    if (rng.chance(0.6)) f.subWishes = this.subWishes(rng, 0);
    if (rng.chance(0.4)) f.pubWishes = this.pubWishes(rng, 0);
    void ctx;
    return this.encode(f);
  }

  subWishes(rng: Prng, min: number): SubWish[] {
    const n = rng.chance(0.95) ? min + rng.below(6) : rng.pick([32, 33, 40]);
    const out: SubWish[] = [];
    const seen = new Set<number>();
    for (let i = 0; i < n; i++) {
      let id = this.channel(rng, this.telemetry);
      if (seen.has(id) && rng.chance(0.9)) id = rng.below(256);
      seen.add(id);
      const wish: SubWish = { channelId: id, wishedRateHz: this.rate(rng) };
      if (rng.chance(0.4)) wish.priority = rng.chance(0.9) ? rng.below(4) : rng.pick([4, 255]);
      out.push(wish);
    }
    return out;
  }

  pubWishes(rng: Prng, min: number): PubWish[] {
    const n = rng.chance(0.95) ? min + rng.below(4) : rng.pick([32, 33]);
    const out: PubWish[] = [];
    for (let i = 0; i < n; i++) {
      const wish: PubWish = { channelId: this.channel(rng, this.publications), wishedRateHz: this.rate(rng) };
      if (rng.chance(0.5)) wish.burst = rng.chance(0.85) ? rng.pick([1, 5, 20, 25, 100, 4000]) : rng.pick([0, 4001, -5, NaN]);
      out.push(wish);
    }
    return out;
  }

  sample(rng: Prng, fields: number): number[] {
    const width = rng.chance(0.95) ? fields + 1 : rng.below(36);
    const s: number[] = [];
    for (let i = 0; i < width; i++) {
      if (i === 0) s.push(rng.chance(0.95) ? rng.below(100000) : rng.pick([-1, 1.5, NaN, Number.MAX_SAFE_INTEGER]));
      else s.push(rng.chance(0.98) ? (rng.float() - 0.5) * 4 : rng.pick([NaN, Infinity, -Infinity, -0, 1e300]));
    }
    return s;
  }

  /** One crafted client frame (never HELLO unless `hello`), mostly valid. */
  frame(rng: Prng, ctx: ClientContext): Uint8Array {
    if (!ctx.welcomed && rng.chance(0.6)) return this.hello(rng, ctx);
    // A latched hub is cleared now and then, or motion (and the robot's side of it) is never reached.
    if (ctx.latched && ctx.tier >= Tier.operator && rng.chance(0.2)) return this.encode({ type: FrameType.ESTOP_CLEAR });
    const r = rng.below(100);
    if (r < 10) return this.encode({ type: FrameType.SUBSCRIBE, wishes: this.subWishes(rng, 1) });
    if (r < 15) {
      const n = rng.chance(0.95) ? 1 + rng.below(5) : 33;
      const channels: number[] = [];
      for (let i = 0; i < n; i++) channels.push(this.channel(rng, this.telemetry));
      return this.encode({ type: FrameType.UNSUBSCRIBE, channels });
    }
    if (r < 23) return this.encode({ type: FrameType.PUBLISH, wishes: this.pubWishes(rng, 1) });
    if (r < 38) {
      const channelId = ctx.granted.length > 0 && rng.chance(0.8) ? rng.pick(ctx.granted) : this.channel(rng, this.publications);
      const ch = this.catalog.byId(channelId);
      const fields = ch ? ch.fieldCount : rng.below(8);
      const n = rng.chance(0.9) ? 1 + rng.below(rng.chance(0.7) ? 3 : 12) : rng.pick([0, 32, 33, 64]);
      const samples: number[][] = [];
      for (let i = 0; i < n; i++) samples.push(this.sample(rng, fields));
      return this.encode({ type: FrameType.BUNDLE, channelId, samples });
    }
    if (r < 55) {
      // take_control (42) often enough that ownership, and with it motion, is reached.
      const channelId = ctx.tier >= Tier.operator && rng.chance(0.25) ? 42 : this.channel(rng, this.intents);
      const f: { type: 9; channelId: number; requestId: number; args?: (number | string)[] } = { type: FrameType.INTENT, channelId, requestId: this.uint(rng) };
      if (rng.chance(0.4)) {
        const args: (number | string)[] = [];
        const n = rng.chance(0.95) ? rng.below(4) : 17;
        for (let i = 0; i < n; i++) args.push(rng.chance(0.6) ? rng.below(10) : rng.chance(0.9) ? 'auto' : 'z'.repeat(65));
        f.args = args;
      }
      return this.encode(f);
    }
    if (r < 62) {
      if (rng.chance(0.8)) return this.encode({ type: FrameType.ACK, acked: rng.chance(0.7) ? ctx.received % 0x100000000 : this.uint(rng) });
      return this.encode({ type: FrameType.ACK, ackBase: rng.chance(0.7) ? ctx.datagramSeq : rng.below(65536), ackBitmap: rng.chance(0.5) ? 0xffffffff : rng.u32() });
    }
    if (r < 70) return this.encode({ type: FrameType.PING, t0: this.uint(rng) });
    if (r < 72) return this.encode({ type: FrameType.PONG, t0: 1, t1: 2 });
    if (r < 73) return this.encode({ type: FrameType.GOODBYE, reason: rng.below(6) });
    if (r < 79) return this.encode(rng.chance(0.6) ? { type: FrameType.ESTOP_CLEAR, estopSeq: rng.chance(0.8) ? ctx.estopSeq : rng.below(65536) } : { type: FrameType.ESTOP_CLEAR });
    if (r < 85) {
      const total = ctx.catalogTotal;
      const offset = rng.chance(0.5) ? 0 : total > 0 && rng.chance(0.7) ? rng.below(total + 2) : this.uint(rng);
      return this.encode(offset === 0 && rng.chance(0.5) ? { type: FrameType.CATALOG } : { type: FrameType.CATALOG, offset });
    }
    if (r < 89) return this.encode({ type: FrameType.HEALTH });
    if (r < 92) return this.hello(rng, ctx);
    if (r < 95) return this.estop(rng, ctx);
    // Hub → client frames the hub must refuse as arriving the wrong way.
    const w = rng.below(4);
    if (w === 0) return this.encode({ type: FrameType.DATA, channelId: 10, seq: 1, t: 1, values: [1, 2] });
    if (w === 1) return this.encode({ type: FrameType.GRANT, subGrants: [] });
    if (w === 2) return this.encode({ type: FrameType.NACK, code: Nack.MALFORMED });
    return this.encode({ type: FrameType.ECHO, channelId: 42, requestId: 1, result: 0 });
  }

  /** An ESTOP frame: mostly a valid ASSERT, sometimes CLEARED or damaged. */
  estop(rng: Prng, ctx: ClientContext): Uint8Array {
    const b = new Uint8Array(ESTOP_FRAME_BYTES);
    const kind = rng.chance(0.85) ? EstopKind.ASSERT : rng.chance(0.7) ? EstopKind.CLEARED : rng.pick([0, 3, 255]);
    const source = rng.chance(0.8) ? EstopSource.CLIENT : rng.below(7);
    ctx.ownEstopSeq = (ctx.ownEstopSeq + (rng.chance(0.8) ? 1 : 0)) & 0xffff;
    encodeEstop(b, 0, kind, source, rng.below(256), rng.chance(0.7) ? ctx.sessionId : rng.u32(), ctx.ownEstopSeq);
    if (rng.chance(0.15)) {
      const at = rng.below(12);
      b[at] = (b[at] as number) ^ (1 << rng.below(8));
    }
    if (rng.chance(0.05)) return b.slice(0, rng.below(12));
    return b;
  }
}

// ============================================================================ invariant failures

export class FuzzViolation extends Error {
  readonly invariant: string;
  readonly detail: string;
  constructor(invariant: string, detail: string) {
    super(`${invariant}: ${detail}`);
    this.name = 'FuzzViolation';
    this.invariant = invariant;
    this.detail = detail;
  }
}

function violate(invariant: string, detail: string): never {
  throw new FuzzViolation(invariant, detail);
}

// Links and transports are called from inside the hub and the bindings, which catch what their
// callees throw (the hub logs it as internal-error, a BLE link takes a throwing notify for a
// failed one). A violation found there is kept here and raised by the driver after the call.
let stashed: FuzzViolation | null = null;

function guard(fn: () => void): void {
  try {
    fn();
  } catch (e) {
    if (!stashed) stashed = e instanceof FuzzViolation ? e : new FuzzViolation('no-exception', e instanceof Error ? e.stack ?? e.message : String(e));
  }
}

/**
 * §12.5 counts a second HELLO as a malformed frame, and §12.2 calls every frame answered
 * MALFORMED one, a CATALOG whose offset is out of range included. The malformed-close
 * invariant counts them all; `strictMalformed: false` (only for bisecting an old hub) leaves
 * those two refusals out.
 */
let strictMalformed = true;

/** Where a replay prints what happened (null: nowhere). */
let tracer: ((line: string) => void) | null = null;

function trace(line: string): void {
  if (tracer) tracer(line);
}

/** A short description of a frame for traces. */
export function describeFrame(f: Frame): string {
  switch (f.type) {
    case FrameType.NACK:
      return `NACK code ${f.code}${f.frameType !== undefined ? ` frame_type ${f.frameType}` : ''}${f.channelId !== undefined ? ` channel ${f.channelId}` : ''}`;
    case FrameType.WELCOME:
      return `WELCOME session ${f.sessionId} tier ${f.tier}`;
    case FrameType.GOODBYE:
      return `GOODBYE reason ${f.reason ?? 0}`;
    case FrameType.DATA:
      return `DATA channel ${f.channelId} seq ${f.seq}`;
    case FrameType.ECHO:
      return `ECHO channel ${f.channelId} result ${f.result}`;
    default:
      return `type ${f.type}`;
  }
}

function raiseStashed(): void {
  const v = stashed;
  stashed = null;
  if (v) throw v;
}

/** A failed input: everything needed to replay it. */
export class FuzzFailure extends Error {
  constructor(
    readonly seed: number,
    readonly index: number,
    readonly episode: number,
    readonly binding: BindingName,
    readonly invariant: string,
    readonly detail: string,
    readonly inputHex: string,
  ) {
    super(`fuzz failure at seed ${seed} input ${index} (episode ${episode}, ${binding}): ${invariant}: ${detail}`);
    this.name = 'FuzzFailure';
  }
}

// ============================================================================ ports

/** Counts log events and never keeps payloads; an `internal-error` is a fault the core caught. */
export class CountingLog implements Log {
  readonly counts = new Map<string, number>();
  internalErrors = 0;
  event(code: string, _a?: number, _b?: number): void {
    this.counts.set(code, (this.counts.get(code) ?? 0) + 1);
    if (code === 'internal-error') this.internalErrors++;
  }
}

/**
 * The robot as the fuzz sees it: checks what reaches it (§6.7: a BUNDLE's samples are [t, one
 * finite number per field]; motion is refused while latched and from non-owners) and keeps
 * nothing but counts. Integer results of every kind come back from intents, to exercise ECHO.
 */
export class CheckingRobot implements RobotPort {
  stops = 0;
  releases = 0;
  published = 0;
  intents = 0;
  problems: string[] = [];
  hub: Hub | null = null;
  private readonly catalog: CatalogIndex;
  private readonly rng: Prng;
  constructor(catalog: CatalogIndex, rng: Prng) {
    this.catalog = catalog;
    this.rng = rng;
  }
  stop(_source: number): void {
    this.stops++;
  }
  release(): void {
    this.releases++;
  }
  publish(channelId: number, samples: SampleBlock): void {
    this.published++;
    const ch = this.catalog.byId(channelId);
    if (!ch || ch.direction !== Direction.publication || ch.cls === ChannelClass.INTENT) {
      this.problems.push(`robot.publish on channel ${channelId}, which is no publication stream`);
      return;
    }
    const { count, width, numbers } = samples;
    if (!(Number.isInteger(count) && count >= 1 && count <= 32)) this.problems.push(`robot.publish with ${count} samples`);
    if (width !== ch.fieldCount + 1) this.problems.push(`robot.publish samples of width ${width} on ${ch.name} (${ch.fieldCount} fields)`);
    if (!(count * width <= numbers.length)) this.problems.push(`robot.publish block of ${count} × ${width} numbers in ${numbers.length}`);
    else {
      for (let k = 0; k < count; k++) {
        const t = numbers[k * width] as number;
        if (!(Number.isSafeInteger(t) && t >= 0)) this.problems.push(`robot.publish sample time ${t}`);
        for (let i = 1; i < width; i++) {
          const v = numbers[k * width + i] as number;
          if (!Number.isFinite(v)) this.problems.push(`robot.publish non-finite value ${v}`);
        }
      }
    }
    const hub = this.hub;
    if (ch.motion && hub && hub.latch.latched) this.problems.push(`motion publication on ${ch.name} while latched`);
    if (ch.motion && hub && hub.controlOwner === 0) this.problems.push(`motion publication on ${ch.name} with no control owner`);
  }
  intent(channelId: number, args: readonly (number | string)[]): number {
    this.intents++;
    const ch = this.catalog.byId(channelId);
    if (!ch || ch.cls !== ChannelClass.INTENT) this.problems.push(`robot.intent on channel ${channelId}, which is no INTENT`);
    else {
      const hub = this.hub;
      if (ch.motion && hub && hub.latch.latched) this.problems.push(`motion intent ${ch.name} while latched`);
      if (ch.motion && hub && hub.controlOwner === 0) this.problems.push(`motion intent ${ch.name} with no control owner`);
    }
    if (args.length > 16) this.problems.push(`robot.intent with ${args.length} args`);
    return this.rng.chance(0.8) ? 0 : this.rng.pick([Nack.NOT_OWNER, Nack.ESTOP_LATCHED, 255, 256, -1, 1e6]);
  }
}

/** What crossed the core's LinkSink during one input: the oracle for the latch invariants. */
export class Spy {
  frames = 0;
  asserts = 0;
  clears = 0;
  /** 1 when the last latch-relevant frame delivered was a valid ASSERT, 2 an ESTOP_CLEAR, 0 neither. */
  last = 0;
  reset(): void {
    this.frames = this.asserts = this.clears = this.last = 0;
  }
  saw(bytes: Uint8Array, start: number, end: number): void {
    this.frames++;
    if (end - start === ESTOP_FRAME_BYTES && bytes[start] === ESTOP_MAGIC) {
      let e: EstopFrame | null = null;
      try {
        e = decodeEstop(bytes, start, end - start);
      } catch {
        e = null;
      }
      if (e && e.kind === EstopKind.ASSERT) {
        this.asserts++;
        this.last = 1;
      }
      return;
    }
    if (peekFrameType(bytes, start, end) !== FrameType.ESTOP_CLEAR) return;
    try {
      decodeFrame(bytes, start, end);
      this.clears++;
      this.last = 2;
    } catch {
      // a refused ESTOP_CLEAR clears nothing
    }
  }
}

/** Wraps the hub's attach so every frame a binding hands the core passes the Spy first. */
export function spyAttach(hub: Hub, spy: Spy): HubAttach {
  return {
    attach(link: Link): LinkSink {
      const sink = hub.attach(link);
      return {
        frame(bytes: Uint8Array, start: number, end: number): void {
          spy.saw(bytes, start, end);
          sink.frame(bytes, start, end);
        },
        lost(): void {
          sink.lost();
        },
        levelChanged(): void {
          sink.levelChanged();
        },
      };
    },
  };
}

// ============================================================================ what the hub sends

/** One frame the hub sent a client, checked, with what the fuzz driver needs to know of it. */
export interface Received {
  readonly estop: EstopFrame | null;
  readonly frame: Frame | null;
  readonly bytes: Uint8Array;
}

/**
 * §1.2-3 for egress: every frame the hub writes to any client is a well-formed hub → client
 * frame within MAX_HUB_FRAME_BYTES (or a valid ESTOP frame, kind ASSERT latched or CLEARED).
 */
export function checkHubFrame(bytes: Uint8Array, start: number, end: number, where: string): Received {
  const b = bytes.slice(start, end);
  if (b.length === 0) violate('egress-valid', `${where}: an empty frame`);
  if (b[0] === ESTOP_MAGIC) {
    let e: EstopFrame;
    try {
      e = decodeEstop(b, 0, b.length);
    } catch (err) {
      return violate('egress-valid', `${where}: an invalid ESTOP frame ${bytesToHex(b)} (${String(err)})`);
    }
    const latchedFlag = (e.flags & 1) === 1;
    if (e.kind === EstopKind.ASSERT ? !latchedFlag : latchedFlag) violate('egress-valid', `${where}: ESTOP kind ${e.kind} with flags ${e.flags}`);
    return { estop: e, frame: null, bytes: b };
  }
  if (b.length > MAX_HUB_FRAME_BYTES) violate('egress-valid', `${where}: a ${b.length}-byte frame exceeds ${MAX_HUB_FRAME_BYTES}`);
  let f: Frame;
  try {
    f = decodeFrame(b, 0, b.length, MAX_HUB_FRAME_BYTES);
  } catch (err) {
    return violate('egress-valid', `${where}: undecodable frame ${bytesToHex(b).slice(0, 200)} (${String(err)})`);
  }
  if (((FRAME_DIRECTION[f.type] ?? 0) & FROM_HUB) === 0) violate('egress-valid', `${where}: the hub sent frame type ${f.type}, which only clients send`);
  return { estop: null, frame: f, bytes: b };
}

/**
 * The send contract (hub/ports.ts `Tag`): what the core says of a frame it hands `Link.send`
 * agrees with the frame. ESTOP frames go only by `writeAhead`; the tag carries the frame's type,
 * a DATA frame's channel (0 for every other frame) and SHARED only on DATA; `seq` is the DATA
 * frame's own sequence, or 0 (a frame handed on from the never-shed queue carries no push).
 */
export function checkSend(r: Received, tag: number, seq: number, where: string): void {
  if (r.estop) violate('egress-valid', `${where}: an ESTOP frame handed to send (ESTOP frames go by writeAhead)`);
  const f = r.frame as Frame;
  if (tagType(tag) !== f.type) violate('egress-valid', `${where}: a frame of type ${f.type} sent with tag type ${tagType(tag)} (tag 0x${tag.toString(16)})`);
  if (f.type === FrameType.DATA) {
    if (tagChannel(tag) !== f.channelId) violate('egress-valid', `${where}: DATA on channel ${f.channelId} sent with tag channel ${tagChannel(tag)}`);
    if (seq !== 0 && seq !== f.seq) violate('egress-valid', `${where}: DATA seq ${f.seq} sent with push seq ${seq}`);
  } else {
    if (tagChannel(tag) !== 0) violate('egress-valid', `${where}: a frame of type ${f.type} sent with tag channel ${tagChannel(tag)}`);
    if ((tag & Tag.SHARED) !== 0) violate('egress-valid', `${where}: a frame of type ${f.type} tagged SHARED`);
    if (seq !== 0) violate('egress-valid', `${where}: a frame of type ${f.type} sent with push seq ${seq}`);
  }
  if ((tag & ~(Tag.TYPE | Tag.SAMPLE | Tag.VALUE | Tag.CRITICAL | Tag.SHARED | (0xff << Tag.CHANNEL_SHIFT))) !== 0) violate('egress-valid', `${where}: tag 0x${tag.toString(16)} has unknown bits`);
}

/** Per-client bookkeeping of what the hub sent: context updates and the rate invariants. */
class ReceiveBook {
  readonly ctx = new ClientContext();
  /** The client's number in traces. */
  label = '';
  /** When each RATE_LIMITED NACK was handed to the link, per session id. */
  readonly rateNacks = new Map<number, number[]>();
  /** When each frame-counting NACK (MALFORMED, TOO_LARGE, NOT_READY) was handed to this transport. */
  readonly malformedNacks: number[] = [];
  /** A WELCOME was handed to this transport and no GOODBYE since. */
  private sessionOpen = false;
  nacks = 0;
  constructor(
    private readonly crafter: Crafter,
    private readonly stats: FuzzStats,
  ) {}

  take(r: Received, now: number, timed: boolean): void {
    const ctx = this.ctx;
    if (tracer) trace(`    ${this.label} ← ${r.estop ? `ESTOP kind ${r.estop.kind} seq ${r.estop.seq}` : describeFrame(r.frame as Frame)}${timed ? ' (handed to the link)' : ''}`);
    ctx.received++;
    if (r.estop) {
      ctx.estopSeq = r.estop.seq;
      ctx.latched = r.estop.kind === EstopKind.ASSERT;
      return;
    }
    const f = r.frame as Frame;
    if (f.type === FrameType.WELCOME) {
      ctx.welcomed = true;
      ctx.sessionId = f.sessionId;
      ctx.tier = f.tier;
      ctx.latched = f.latched;
      ctx.granted.length = 0;
      for (const g of f.pubGrants) ctx.granted.push(g.channelId);
      this.crafter.rememberToken(f.resumeToken);
      this.stats.welcomes++;
    } else if (f.type === FrameType.GOODBYE) {
      ctx.welcomed = false;
      this.stats.goodbyes++;
    } else if (f.type === FrameType.GRANT && f.pubGrants) {
      for (const g of f.pubGrants) if (ctx.granted.indexOf(g.channelId) < 0) ctx.granted.push(g.channelId);
    } else if (f.type === FrameType.CATALOG && f.total !== undefined) {
      ctx.catalogTotal = f.total;
    } else if (f.type === FrameType.NACK) {
      this.nacks++;
      this.stats.nacks[f.code] = (this.stats.nacks[f.code] ?? 0) + 1;
      if (!timed || !(now >= 0)) return;
      if (f.code === Nack.RATE_LIMITED && ctx.sessionId > 0) {
        let list = this.rateNacks.get(ctx.sessionId);
        if (!list) this.rateNacks.set(ctx.sessionId, (list = []));
        list.push(now);
        while (list.length > 0 && (list[0] as number) <= now - 1000) list.shift();
        // §10.5, §12: RATE_LIMITED NACKs of a session are throttled to 5 per second.
        if (list.length > STREAM_INGRESS_OVERAGE_NACK_PER_S) violate('rate-limited-throttle', `session ${ctx.sessionId} got ${list.length} RATE_LIMITED NACKs within 1 s`);
      }
    }
  }

  /**
   * §12.5: a frame answered MALFORMED (a second HELLO included), TOO_LARGE or NOT_READY is a
   * malformed frame; more than 10 within one second close the session or the transport.
   * `now` NaN: a NACK handed over late from the never-shed queue, not timed.
   */
  countMalformed(f: Frame, now: number, closedNow: () => boolean): void {
    const list = this.malformedNacks;
    // A session begins: its count is its own (the frames before HELLO were the transport's).
    if (f.type === FrameType.WELCOME) {
      list.length = 0;
      this.sessionOpen = true;
    } else if (f.type === FrameType.GOODBYE) this.sessionOpen = false;
    if (f.type !== FrameType.NACK) return;
    if (f.code !== Nack.MALFORMED && f.code !== Nack.TOO_LARGE && f.code !== Nack.NOT_READY) return;
    if (!strictMalformed && f.code === Nack.MALFORMED && (f.frameType === FrameType.HELLO || f.frameType === FrameType.CATALOG) && this.sessionOpen) return;
    if (!(now >= 0)) return; // not timed (see CoreHarness)
    list.push(now);
    while (list.length > 0 && (list[0] as number) <= now - 1000) list.shift();
    if (list.length > MALFORMED_CLOSE_PER_S + 1 && !closedNow()) {
      violate('malformed-close', `${list.length} malformed frames answered within 1 s and the transport is still open`);
    }
  }
}

// ============================================================================ the observer

/**
 * The well-behaved client's link: unbounded, clear, and recording what arrives in this step.
 * The same class serves hub A and hub B, so the two recordings can be compared.
 */
class ObserverLink implements Link {
  readonly caps: LinkCaps = Object.freeze({ binding: 'observer', broadcast: false, datagram: false, mtu: MAX_FRAME_BYTES, writeAheadSlots: 4, ackForm: AckForm.STREAM });
  /** Unbounded and clear: the level never changes. */
  readonly level = 0;
  closed = false;
  /** CBOR frames of this step, in order. */
  frames: Received[] = [];
  /** ESTOP frames of this step, in order. */
  estops: EstopFrame[] = [];
  private readonly est: LinkEstimate = { throughputBps: 0, rttMs: 0 };
  send(frame: Uint8Array, tag: number, seq: number): boolean {
    if (this.closed) return false;
    guard(() => {
      const r = checkHubFrame(frame, 0, frame.length, 'observer');
      checkSend(r, tag, seq, 'observer');
      if (r.estop) this.estops.push(r.estop);
      else this.frames.push(r);
    });
    return true;
  }
  writeAhead(frame: Uint8Array): void {
    guard(() => {
      const r = checkHubFrame(frame, 0, frame.length, 'observer write-ahead');
      if (!r.estop) violate('egress-valid', 'observer: a write-ahead frame that is no ESTOP frame');
      this.estops.push(r.estop);
    });
  }
  acked(_count: number): void {}
  granted(_grants: GrantSet): void {}
  estimate(): LinkEstimate {
    return this.est;
  }
  occupancy(): number {
    return 0;
  }
  stalledMs(): number {
    return 0;
  }
  ackLag(): number {
    return 0;
  }
  lossRate(): number {
    return NaN;
  }
  tierCeiling(): number {
    return 2;
  }
  close(): void {
    this.closed = true;
  }
  clearStep(): void {
    this.frames = [];
    this.estops = [];
  }
}

// ============================================================================ bindings

/**
 * core: the core's LinkSink itself. tcp: length-prefixed TCP. ws: WebSocket as the device speaks
 * it (the hub's own RFC 6455 parser over a TCP stream). ws-host: WebSocket on the host, where the
 * `ws` package hands over one message per frame (node.ts). ble: GATT fragments. espnow: datagrams.
 */
export const BINDINGS = Object.freeze(['core', 'tcp', 'ws', 'ws-host', 'ble', 'espnow'] as const);
export type BindingName = (typeof BINDINGS)[number];

/** One fuzz client's connection through a binding. */
interface Endpoint {
  readonly book: ReceiveBook;
  /** The client can still send on this transport. */
  alive(): boolean;
  /** Sends these client frames through the binding's framing, mutated at the binding's level. */
  send(rng: Prng, frames: Uint8Array[], record: number[]): void;
  /** Moves what the hub sent toward the client, as far as the client reads. */
  pump(rng: Prng): void;
  /** The transport dies under the client (§6.6). */
  lose(): void;
  /** Binding-level bounds. */
  check(): void;
}

interface Harness {
  readonly name: BindingName;
  connect(rng: Prng, book: ReceiveBook): Endpoint;
  /** The binding's periodic work (before the hub's tick). */
  tick(): void;
  /** How many frames one input carries at most. */
  readonly framesPerInput: number;
}

/** What a harness is built on: hub A's attach (through the Spy), its clock, the episode's PRNG. */
interface HarnessEnv {
  readonly attach: HubAttach;
  readonly clock: VirtualClock;
  readonly catalog: CatalogIndex;
  readonly rng: Prng;
}

// ---------------------------------------------------------------------------- the core's own sink

/** A link straight onto the core's LinkSink: capacity, level and reading as the episode sets them. */
class CoreLink implements Link {
  readonly caps: LinkCaps;
  private lvlNow = 0;
  /** The hub's sink, told when the episode changes the level (LinkSink.levelChanged). */
  sink: LinkSink | null = null;
  closed = false;
  queued: Uint8Array[] = [];
  queuedBytes = 0;
  /** Frames send turned away for want of room. */
  refused = 0;
  /** When the client last read, or a backlog last started (Link.stalledMs). */
  movedAt = 0;
  /** True while the core handles one of this client's inputs. */
  answering = false;
  private readonly est: LinkEstimate = { throughputBps: 0, rttMs: 0 };
  constructor(
    readonly capacity: number,
    mtu: number,
    private readonly clock: VirtualClock,
    private readonly onSend: (bytes: Uint8Array, tag: number, seq: number) => void,
  ) {
    this.caps = Object.freeze({ binding: 'core', broadcast: false, datagram: false, mtu, writeAheadSlots: 4, ackForm: AckForm.STREAM });
    this.movedAt = clock.now();
  }
  get level(): number {
    return this.lvlNow;
  }
  /** Sets the level as a binding would judge it, and tells the core of a change. */
  set lvl(v: number) {
    if (v === this.lvlNow) return;
    this.lvlNow = v;
    if (this.sink) this.sink.levelChanged();
  }
  /** The send contract (hub/ports.ts): no room, nothing queued, false; never a throw. */
  send(frame: Uint8Array, tag: number, seq: number): boolean {
    if (this.closed || this.queuedBytes + frame.length > this.capacity) {
      this.refused++;
      return false;
    }
    guard(() => this.onSend(frame, tag, seq));
    if (this.queued.length === 0) this.movedAt = this.clock.now();
    this.queued.push(frame.slice());
    this.queuedBytes += frame.length;
    return true;
  }
  writeAhead(frame: Uint8Array): void {
    if (this.closed) return;
    this.queued.unshift(frame.slice());
  }
  acked(_count: number): void {}
  granted(_grants: GrantSet): void {}
  ackLag(): number {
    return 0;
  }
  lossRate(): number {
    return NaN;
  }
  estimate(): LinkEstimate {
    return this.est;
  }
  occupancy(): number {
    return this.queuedBytes / this.capacity;
  }
  stalledMs(): number {
    return this.queued.length > 0 ? this.clock.now() - this.movedAt : 0;
  }
  tierCeiling(): number {
    return 2;
  }
  close(): void {
    this.closed = true;
  }
}

class CoreHarness implements Harness {
  readonly name = 'core';
  readonly framesPerInput = 1;
  constructor(private readonly env: HarnessEnv) {}
  tick(): void {}
  connect(rng: Prng, book: ReceiveBook): Endpoint {
    const env = this.env;
    const reading = rng.pick([1, 1, 0.3, 0]);
    const capacity = rng.pick([1 << 20, 4096, 700, 300]);
    const mtu = rng.pick([MAX_FRAME_BYTES, MAX_DATAGRAM_FRAME]);
    let sink: LinkSink | null = null;
    const link: CoreLink = new CoreLink(capacity, mtu, env.clock, (bytes, tag, seq) => {
      // Checked when handed over, so that the throttles are judged at the hub's own times.
      // A frame handed over while the core answers an input is timed then: the hub counted its
      // cause at that instant. One that waited in the never-shed queue (a link without room) is
      // handed over at a later tick, its cause's instant unknown here: it is not timed (NaN).
      const r = checkHubFrame(bytes, 0, bytes.length, 'core link');
      checkSend(r, tag, seq, 'core link');
      const at = link.answering ? env.clock.now() : NaN;
      if (tracer && r.frame) trace(`    ${book.label} ⇐ ${describeFrame(r.frame)} handed over at t=${env.clock.now()}${link.answering ? '' : ' (from the never-shed queue)'}`);
      if (r.frame) book.countMalformed(r.frame, at, () => link.closed);
      if (r.frame && r.frame.type === FrameType.NACK && r.frame.code === Nack.RATE_LIMITED) book.take(r, at, true);
    });
    sink = env.attach.attach(link);
    link.sink = sink;
    const s = sink;
    return {
      book,
      alive: () => !link.closed,
      send: (rng2, frames, record) => {
        const f = frames[0] as Uint8Array;
        for (let i = 0; i < f.length; i++) record.push(f[i] as number);
        if (rng2.chance(0.1)) link.lvl = rng2.pick([0, 0, 1, 2, 3]);
        if (rng2.chance(0.2)) {
          // The frame inside a larger buffer: the core must read only [start, end).
          const pre = rng2.below(8);
          const buf = new Uint8Array(pre + f.length + rng2.below(8));
          for (let i = 0; i < buf.length; i++) buf[i] = rng2.chance(0.5) ? 0xe5 : rng2.below(256);
          buf.set(f, pre);
          link.answering = true;
          s.frame(buf, pre, pre + f.length);
        } else {
          link.answering = true;
          s.frame(f, 0, f.length);
        }
        link.answering = false;
      },
      pump: (rng2) => {
        if (!(rng2.float() < reading)) return;
        const q = link.queued;
        const n = rng2.chance(0.7) ? q.length : rng2.below(q.length + 1);
        if (n > 0) link.movedAt = env.clock.now();
        for (let i = 0; i < n; i++) {
          const b = q.shift() as Uint8Array;
          if (b[0] !== ESTOP_MAGIC) link.queuedBytes -= b.length;
          const r = checkHubFrame(b, 0, b.length, 'core link');
          // RATE_LIMITED was counted when handed over; everything else now.
          if (!(r.frame && r.frame.type === FrameType.NACK && r.frame.code === Nack.RATE_LIMITED)) book.take(r, env.clock.now(), false);
        }
      },
      lose: () => {
        if (link.closed) return;
        link.closed = true;
        s.lost();
      },
      check: () => {
        if (link.queuedBytes > link.capacity) violate('binding-bounded', `core link holds ${link.queuedBytes} > ${link.capacity} bytes`);
      },
    };
  }
}

// ---------------------------------------------------------------------------- TCP and device WebSocket

/** The client's side of a server WebSocket stream: the 101 answer, then unmasked frames. */
class WsClientParser {
  private head = '';
  private upgraded = false;
  private buf: number[] = [];
  closeSeen = false;
  push(bytes: Uint8Array, n: number, out: (payload: Uint8Array) => void): void {
    let i = 0;
    if (!this.upgraded) {
      for (; i < n && !this.upgraded; i++) {
        this.head += String.fromCharCode(bytes[i] as number);
        if (this.head.endsWith('\r\n\r\n')) {
          this.upgraded = true;
          if (!/^HTTP\/1\.1 (101|400|405|426) /.test(this.head)) violate('egress-valid', `ws: unexpected upgrade answer ${JSON.stringify(this.head.slice(0, 40))}`);
        }
        if (this.head.length > 4096) violate('egress-valid', 'ws: an upgrade answer of more than 4096 bytes');
      }
    }
    for (; i < n; i++) this.buf.push(bytes[i] as number);
    for (;;) {
      const b = this.buf;
      if (b.length < 2) return;
      const b0 = b[0] as number;
      const b1 = b[1] as number;
      if ((b1 & 0x80) !== 0) violate('egress-valid', 'ws: a masked server frame (RFC 6455 §5.1)');
      if ((b0 & 0x80) === 0 || (b0 & 0x70) !== 0) violate('egress-valid', `ws: server frame head ${b0.toString(16)}`);
      let len = b1 & 0x7f;
      let at = 2;
      if (len === 126) {
        if (b.length < 4) return;
        len = ((b[2] as number) << 8) | (b[3] as number);
        at = 4;
      } else if (len === 127) violate('egress-valid', 'ws: a 64-bit length from the hub');
      if (b.length < at + len) return;
      const payload = Uint8Array.from(b.slice(at, at + len));
      this.buf = b.slice(at + len);
      const op = b0 & 0x0f;
      if (op === 0x2) out(payload);
      else if (op === 0x8) this.closeSeen = true;
      else if (op !== 0xa) violate('egress-valid', `ws: server opcode ${op}`);
    }
  }
}

const WS_REQUEST =
  'GET /hub HTTP/1.1\r\nHost: hub.local\r\nUpgrade: websocket\r\nConnection: keep-alive, Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n';

/** dst.push(...src) without the spread: XS limits the arguments a call may take. */
function append(dst: number[], src: ArrayLike<number>): void {
  for (let i = 0; i < src.length; i++) dst.push(src[i] as number);
}

function asciiBytes(s: string): number[] {
  const out: number[] = [];
  for (let i = 0; i < s.length; i++) out.push(s.charCodeAt(i) & 0xff);
  return out;
}

/** One masked client WebSocket frame (RFC 6455 §5.2), with the lies the fuzz may tell. */
function wsClientFrame(rng: Prng, opcode: number, payload: Uint8Array, fin: boolean): number[] {
  const out: number[] = [];
  let b0 = (fin ? 0x80 : 0) | (opcode & 0x0f);
  if (rng.chance(0.01)) b0 |= 0x10 << rng.below(3);
  out.push(b0);
  const masked = !rng.chance(0.01);
  const n = payload.length;
  const form = rng.chance(0.97) ? (n < 126 ? 0 : n < 0x10000 ? 1 : 2) : rng.below(3);
  const m = masked ? 0x80 : 0;
  if (form === 0 && n < 126) out.push(m | n);
  else if (form === 0 || form === 1) out.push(m | 126, (n >> 8) & 0xff, n & 0xff);
  else out.push(m | 127, 0, 0, 0, 0, (n >>> 24) & 0xff, (n >> 16) & 0xff, (n >> 8) & 0xff, n & 0xff);
  const mask = masked ? [rng.below(256), rng.below(256), rng.below(256), rng.below(256)] : [0, 0, 0, 0];
  if (masked) out.push(...mask);
  for (let i = 0; i < n; i++) out.push((payload[i] as number) ^ (mask[i & 3] as number));
  return out;
}

/**
 * The in-memory socket under a TcpLink. As the host and device adapters do (node.ts, device.ts),
 * a kick is served once control returns, handing the socket bytes while it holds less than its
 * limit; the client reads from the socket as its reading policy says.
 */
class MemSocket implements LinkTransport {
  closing = false;
  dead = false;
  readonly buf: Uint8Array;
  held = 0;
  constructor(readonly limit: number) {
    this.buf = new Uint8Array(limit + (1 << 16));
  }
  kick(): void {}
  close(_wsCode: number): void {
    this.closing = true;
  }
  /** The adapter's pump: the link's bytes into the socket while it holds less than its limit. */
  fill(link: TcpLink): void {
    if (this.dead) return;
    while (this.held < this.limit) {
      const n = link.pull(this.buf, this.held, this.limit - this.held);
      if (n === 0) break;
      this.held += n;
    }
  }
  /** The client reads up to `max` bytes. */
  read(max: number, into: (bytes: Uint8Array, n: number) => void): void {
    const n = max < this.held ? max : this.held;
    if (n === 0) return;
    into(this.buf, n);
    this.buf.copyWithin(0, n, this.held);
    this.held -= n;
  }
}

class TcpHarness implements Harness {
  readonly framesPerInput = 4;
  constructor(
    readonly name: 'tcp' | 'ws',
    private readonly env: HarnessEnv,
  ) {}
  tick(): void {}
  connect(rng: Prng, book: ReceiveBook): Endpoint {
    const env = this.env;
    const ws = this.name === 'ws';
    const name = this.name;
    const link = new TcpLink({
      hub: env.attach,
      clock: env.clock,
      framing: ws ? LinkFraming.WS_SERVER : LinkFraming.LENGTH_PREFIX,
      binding: name,
      queueBytes: rng.pick([16384, 6144, MIN_QUEUE_BYTES]),
      ackWindowFrames: rng.pick([128, 128, 4]),
      // Any 20 bytes do: the fuzz client does not check Sec-WebSocket-Accept.
      sha1: () => new Uint8Array(20),
    });
    const t = new MemSocket(rng.pick([4096, 2872, 300]));
    link.start(t);
    const reading = rng.pick([1, 1, 0.3, 0]);
    const readMax = rng.pick([1 << 20, 4096, 300, 7]);
    const reasm = new FrameReassembler(MAX_HUB_FRAME_BYTES);
    const wsClient = new WsClientParser();
    let handshaken = false;
    const deliver = (bytes: Uint8Array, start: number, end: number): void => {
      book.take(checkHubFrame(bytes, start, end, name), env.clock.now(), false);
    };
    const consumer: FrameConsumer = {
      frame: deliver,
      refuse: (_code, length) => violate('egress-valid', `${name}: the hub announced a ${length}-byte frame`),
    };
    const parse = (bytes: Uint8Array, n: number): void => {
      if (ws) wsClient.push(bytes, n, (p) => deliver(p, 0, p.length));
      else reasm.push(bytes, 0, n, consumer);
    };
    const alive = (): boolean => !t.closing && !t.dead && link.state !== LinkState.CLOSED;
    const settle = (): void => {
      t.fill(link);
      if (t.closing && !t.dead) {
        // The adapter hands the socket what it takes at once, then the transport ends.
        t.dead = true;
        link.transportClosed();
      }
    };
    return {
      book,
      alive,
      send: (rng2, frames, record) => {
        const wire: number[] = [];
        if (ws && !handshaken) {
          // RFC 6455 §4.1: the client waits for the server's answer before it sends any frame.
          handshaken = true;
          let req = asciiBytes(WS_REQUEST);
          if (rng2.chance(0.05)) req = Array.from(mutateFrame(rng2, Uint8Array.from(req), [Uint8Array.from(req)]));
          append(wire, req);
        } else {
          for (const f of frames) {
            if (ws) {
              const r = rng2.float();
              if (r < 0.85) append(wire, wsClientFrame(rng2, 0x2, f, true));
              else if (r < 0.9 && f.length > 1) {
                // A message in two fragments.
                const cut = 1 + rng2.below(f.length - 1);
                append(wire, wsClientFrame(rng2, 0x2, f.subarray(0, cut), false));
                append(wire, wsClientFrame(rng2, 0x0, f.subarray(cut), true));
              } else if (r < 0.93) append(wire, wsClientFrame(rng2, 0x1, f, true));
              else if (r < 0.97) append(wire, wsClientFrame(rng2, rng2.pick([0x9, 0xa]), f.subarray(0, Math.min(f.length, rng2.chance(0.9) ? 125 : 200)), true));
              else if (r < 0.98) append(wire, wsClientFrame(rng2, 0x8, Uint8Array.from([0x03, 0xe8]), true));
              else append(wire, wsClientFrame(rng2, rng2.pick([0x0, 0x3, 0xb]), f, rng2.chance(0.5)));
            } else {
              let len = f.length;
              if (rng2.chance(0.02)) len = rng2.pick([0, 1, f.length - 1, f.length + 1, f.length + 5, MAX_FRAME_BYTES + 1, MAX_FRAME_BYTES + 1, 0xffff]);
              const pre = new Uint8Array(2);
              writeLengthPrefix(Math.max(0, Math.min(0xffff, len)), pre, 0);
              wire.push(pre[0] as number, pre[1] as number);
              append(wire, f);
            }
            if (rng2.chance(0.02)) for (let i = rng2.below(12); i > 0; i--) wire.push(rng2.below(256));
          }
        }
        let bytes: Uint8Array = Uint8Array.from(wire);
        if (rng2.chance(0.05)) bytes = mutateFrame(rng2, bytes, frames);
        for (let i = 0; i < bytes.length; i++) record.push(bytes[i] as number);
        // Delivered in arbitrary pieces, each inside a larger buffer.
        let at = 0;
        while (at < bytes.length && alive()) {
          const n = rng2.chance(0.6) ? bytes.length - at : 1 + rng2.below(bytes.length - at);
          const pad = rng2.below(4);
          const buf = new Uint8Array(pad + n + 3);
          buf.fill(0xe5);
          buf.set(bytes.subarray(at, at + n), pad);
          link.input(buf, pad, pad + n);
          at += n;
        }
        settle();
      },
      pump: (rng2) => {
        settle();
        if (rng2.float() < reading) t.read(readMax, parse);
        settle();
      },
      lose: () => {
        if (t.dead) return;
        t.dead = true;
        link.transportClosed();
      },
      check: () => {
        if (link.queuedBytes() > link.queue.capacity) violate('binding-bounded', `${name} egress queue holds ${link.queuedBytes()} > ${link.queue.capacity}`);
        if (link.queue.aheadWaiting > AHEAD_SLOTS) violate('binding-bounded', `${name}: ${link.queue.aheadWaiting} ESTOP frames waiting ahead`);
        if (t.held > t.limit) violate('binding-bounded', `${name}: the socket was handed ${t.held} > ${t.limit} bytes`);
      },
    };
  }
}

/** The host WebSocket: the `ws` package delimits messages; the link sees one message per frame (node.ts). */
class WsHostHarness implements Harness {
  readonly name = 'ws-host';
  readonly framesPerInput = 3;
  constructor(private readonly env: HarnessEnv) {}
  tick(): void {}
  connect(rng: Prng, book: ReceiveBook): Endpoint {
    const env = this.env;
    const link = new TcpLink({
      hub: env.attach,
      clock: env.clock,
      framing: LinkFraming.MESSAGE,
      binding: 'ws',
      queueBytes: rng.pick([16384, MIN_QUEUE_BYTES]),
      ackWindowFrames: rng.pick([128, 128, 4]),
    });
    let closing = false;
    let dead = false;
    link.start({
      kick() {},
      close() {
        closing = true;
      },
    });
    const reading = rng.pick([1, 1, 0.3, 0]);
    // ws.bufferedAmount's limit: whole messages are handed over while the socket holds less.
    const limit = rng.pick([4096, 300]);
    const socket: Uint8Array[] = [];
    let held = 0;
    const fill = (): void => {
      while (!dead && held < limit) {
        const len = link.nextMessageLength();
        if (len === 0) break;
        const m = new Uint8Array(len);
        if (link.pull(m, 0, len) !== len) violate('egress-valid', 'ws-host: a message pulled short');
        socket.push(m);
        held += len;
      }
      if (closing && !dead) {
        dead = true;
        link.transportClosed();
      }
    };
    const alive = (): boolean => !closing && !dead && link.state !== LinkState.CLOSED;
    return {
      book,
      alive,
      send: (rng2, frames, record) => {
        for (const f0 of frames) {
          if (!alive()) break;
          let f = f0;
          if (rng2.chance(0.03)) f = rng2.bytes(rng2.chance(0.5) ? MAX_FRAME_BYTES + 1 + rng2.below(4000) : rng2.below(8));
          for (let i = 0; i < f.length; i++) record.push(f[i] as number);
          const pad = rng2.below(3);
          const buf = new Uint8Array(pad + f.length + 2);
          buf.fill(0xe5);
          buf.set(f, pad);
          link.message(buf, pad, pad + f.length, !rng2.chance(0.03));
        }
        fill();
      },
      pump: (rng2) => {
        fill();
        if (rng2.float() < reading) {
          for (const m of socket.splice(0)) book.take(checkHubFrame(m, 0, m.length, 'ws-host'), env.clock.now(), false);
          held = 0;
        }
        fill();
      },
      lose: () => {
        if (dead) return;
        dead = true;
        link.transportClosed();
      },
      check: () => {
        if (link.queuedBytes() > link.queue.capacity) violate('binding-bounded', `ws-host egress queue holds ${link.queuedBytes()} > ${link.queue.capacity}`);
      },
    };
  }
}

// ---------------------------------------------------------------------------- BLE

class FakeBle implements BleTransport {
  attMtu: number;
  dropped = 0;
  closedByHub = false;
  inFlight: Uint8Array | null = null;
  throwNext = false;
  constructor(attMtu: number) {
    this.attMtu = attMtu;
  }
  maximumWrite(): number {
    return this.attMtu - 3;
  }
  notify(value: Uint8Array, length: number): void {
    // A second notification while one is held: the link timed the first out (BLE_NOTIFY_TIMEOUT_MS)
    // and counts it unconfirmed; this stack never delivers it.
    if (this.inFlight) this.dropped++;
    if (this.throwNext) {
      this.throwNext = false;
      throw new Error('stack out of buffers');
    }
    this.inFlight = value.slice(0, length);
  }
  close(): void {
    this.closedByHub = true;
  }
}

class BleHarness implements Harness {
  readonly name = 'ble';
  readonly framesPerInput = 3;
  private readonly links: BleLink[] = [];
  constructor(private readonly env: HarnessEnv) {}
  tick(): void {
    const now = this.env.clock.now();
    for (let i = this.links.length - 1; i >= 0; i--) {
      const l = this.links[i] as BleLink;
      if (l.closed) this.links.splice(i, 1);
      else l.tick(now);
    }
  }
  connect(rng: Prng, book: ReceiveBook): Endpoint {
    const env = this.env;
    const t = new FakeBle(rng.pick([23, 23, 185, 247, 517]));
    const link = BleLink.attach(env.attach, t, env.clock, {}, rng.chance(0.95));
    this.links.push(link);
    const reading = rng.pick([1, 1, 0.3, 0]);
    const received: Uint8Array[] = [];
    const client = new Reassembler(
      {
        frame: (b, s, e) => {
          received.push(b.slice(s, e));
        },
        refuse: (code) => {
          refusals.push(code);
        },
      },
      CLIENT_REASSEMBLY,
    );
    const refusals: number[] = [];
    let counter = 0;
    let unconfirmedAtStart = link.counters.unconfirmed;
    return {
      book,
      alive: () => !link.closed && !t.closedByHub,
      send: (rng2, frames, record) => {
        if (rng2.chance(0.05)) t.attMtu = rng2.pick([23, 100, 247, 517]);
        if (rng2.chance(0.02)) link.subscribed(rng2.chance(0.8));
        const size = fragmentSize(rng2.chance(0.8) ? t.attMtu - 3 : rng2.between(1, 600));
        const writes: Uint8Array[] = [];
        for (const f of frames) {
          counter = (counter + 1) & 0x1f;
          if (f.length === 0 || rng2.chance(0.02)) {
            writes.push(f.slice());
            continue;
          }
          if (f[0] === ESTOP_MAGIC && rng2.chance(0.3)) {
            writes.push(f.slice()); // a raw ESTOP write, no header (§13.4.2)
            continue;
          }
          if (f.length + 1 <= size) {
            const w = new Uint8Array(f.length + 1);
            w[0] = fragmentHeader(FragmentPosition.ONLY, counter);
            w.set(f, 1);
            writes.push(w);
            continue;
          }
          const lie = rng2.chance(0.05) ? rng2.pick([-1, 1, 100, HUB_REASSEMBLY.maxFrameBytes + 1 - f.length, 0xffff - f.length]) : 0;
          const total = Math.max(0, Math.min(0xffff, f.length + lie));
          let sent = 0;
          while (sent < f.length) {
            const first = sent === 0;
            const room = first ? size - 3 : size - 1;
            const n = Math.min(room, f.length - sent);
            const last = sent + n >= f.length;
            const w = new Uint8Array((first ? 3 : 1) + n);
            w[0] = fragmentHeader(first ? FragmentPosition.FIRST : last ? FragmentPosition.LAST : FragmentPosition.MIDDLE, counter);
            if (first) {
              w[1] = total >> 8;
              w[2] = total & 0xff;
            }
            w.set(f.subarray(sent, sent + n), first ? 3 : 1);
            writes.push(w);
            sent += n;
          }
        }
        // Fragment-level damage: headers, order, loss, duplicates.
        if (writes.length > 0 && rng2.chance(0.15)) {
          const k = rng2.below(writes.length);
          const w = writes[k] as Uint8Array;
          const m = rng2.below(6);
          if (m === 0 && w.length > 0) w[0] = (w[0] as number) ^ (1 << rng2.below(8));
          else if (m === 1) writes.splice(k, 1);
          else if (m === 2) writes.splice(k, 0, w.slice());
          else if (m === 3 && writes.length > 1) {
            const j = rng2.below(writes.length);
            writes[k] = writes[j] as Uint8Array;
            writes[j] = w;
          } else if (m === 4) writes[k] = w.subarray(0, rng2.below(w.length + 1));
          else writes[k] = mutateFrame(rng2, w, frames);
        }
        for (const w of writes) {
          for (let i = 0; i < w.length; i++) record.push(w[i] as number);
          if (link.closed) break;
          link.written(w, 0, w.length);
        }
      },
      pump: (rng2) => {
        if (!(rng2.float() < reading)) {
          if (t.inFlight && rng2.chance(0.05)) {
            t.inFlight = null;
            link.notified(6); // the stack out of buffers: sent again later, unchanged
          }
          return;
        }
        for (let k = 0; k < 400 && t.inFlight && !link.closed; k++) {
          if (rng2.chance(0.03)) {
            t.inFlight = null;
            link.notified(6);
            continue;
          }
          if (rng2.chance(0.01)) t.throwNext = true;
          const n = t.inFlight;
          t.inFlight = null;
          client.push(n, 0, n.length, env.clock.now());
          link.notified(0);
        }
        for (const f of received.splice(0)) book.take(checkHubFrame(f, 0, f.length, 'ble'), env.clock.now(), false);
        // A notification counted done by the completion timeout never reached the client, so
        // its reassembler may rightly refuse what follows; otherwise the hub's fragments must be whole.
        if (refusals.length > 0) {
          if (link.counters.unconfirmed === unconfirmedAtStart) violate('egress-valid', `ble: the client refused the hub's fragments (${refusals.join(',')})`);
          refusals.length = 0;
          unconfirmedAtStart = link.counters.unconfirmed;
        }
      },
      lose: () => {
        link.disconnected();
      },
      check: () => {
        if (link.queuedBytes() > link.queue.capacityBytes) violate('binding-bounded', `ble queue holds ${link.queuedBytes()} > ${link.queue.capacityBytes}`);
        if (link.reassembler.pendingBytes > HUB_REASSEMBLY.maxFrameBytes) violate('binding-bounded', `ble reassembly holds ${link.reassembler.pendingBytes} bytes`);
      },
    };
  }
}

// ---------------------------------------------------------------------------- ESP-NOW

class FakeRadio implements Radio {
  handler: RadioHandler | null = null;
  readonly peers = new Map<number, boolean>();
  inFlight: { mac: number; bytes: Uint8Array } | null = null;
  noMem = 0;
  constructor(
    private readonly rng: Prng,
    readonly maxPeers: number,
  ) {}
  setHandler(h: RadioHandler): void {
    this.handler = h;
  }
  addPeer(mac: number, _lmk: Uint8Array | null): number {
    if (this.peers.has(mac)) return RadioStatus.EXISTS;
    if (this.peers.size >= this.maxPeers) return RadioStatus.FULL;
    this.peers.set(mac, true);
    return RadioStatus.OK;
  }
  removePeer(mac: number): number {
    return this.peers.delete(mac) ? RadioStatus.OK : RadioStatus.NOT_FOUND;
  }
  send(mac: number, data: Uint8Array, length: number): number {
    if (this.inFlight) return RadioStatus.BUSY;
    if (length <= 0 || length > DATAGRAM_MAX_BYTES) {
      guard(() => violate('egress-valid', `espnow: a ${length}-byte datagram`));
      return RadioStatus.TOO_LONG;
    }
    if (!this.peers.has(mac)) return RadioStatus.NOT_FOUND;
    if (this.rng.chance(0.02)) {
      this.noMem++;
      return RadioStatus.NO_MEM;
    }
    this.inFlight = { mac, bytes: data.slice(0, length) };
    return RadioStatus.OK;
  }
}

class EspNowHarness implements Harness {
  readonly name = 'espnow';
  readonly framesPerInput = 3;
  readonly radio: FakeRadio;
  readonly binding: EspNowBinding;
  private readonly endpoints = new Map<number, { reading: number; deliver: (bytes: Uint8Array, broadcast: boolean) => void }>();
  private nextMac = 0x020000000001;
  private readonly cursor = new DatagramCursor();
  constructor(private readonly env: HarnessEnv) {
    this.radio = new FakeRadio(env.rng, ESPNOW_MAX_PEERS);
    this.binding = new EspNowBinding({
      clock: env.clock,
      radio: this.radio,
      attach: (link) => env.attach.attach(link),
      broadcast: env.rng.chance(0.5),
      queueBytes: env.rng.pick([1024, 600]),
      // Stations not paired speak unencrypted (observer tier at most); some are paired (connect).
      allowUnencrypted: true,
    });
  }
  tick(): void {
    this.binding.tick();
    this.drainRadio(this.env.rng);
  }
  /** Completes datagrams in flight, delivering each to the peer(s) it was for. */
  drainRadio(rng: Prng): void {
    for (let k = 0; k < 300 && this.radio.inFlight; k++) {
      const d = this.radio.inFlight;
      this.radio.inFlight = null;
      const c = this.cursor;
      const err = c.open(d.bytes, d.bytes.length);
      if (err !== 0 || c.bare) violate('egress-valid', `espnow: the hub sent a datagram the peer cannot read (error ${err}) ${bytesToHex(d.bytes)}`);
      const broadcast = (c.flags & DatagramFlag.BROADCAST) !== 0;
      if (broadcast !== (d.mac === BROADCAST_MAC)) violate('egress-valid', 'espnow: broadcast flag and address disagree');
      if ((c.flags & ~DatagramFlag.BROADCAST) !== 0) violate('egress-valid', `espnow: hub datagram flags ${c.flags}`);
      if (broadcast) {
        for (const ep of this.endpoints.values()) if (rng.float() < ep.reading) ep.deliver(d.bytes, true);
      } else {
        const ep = this.endpoints.get(d.mac);
        if (ep && rng.float() < ep.reading) ep.deliver(d.bytes, false);
      }
      (this.radio.handler as RadioHandler).sent(d.mac, rng.chance(0.97));
    }
  }
  connect(rng: Prng, book: ReceiveBook): Endpoint {
    const env = this.env;
    const mac = this.nextMac++;
    // Some stations are paired, with a key of their own (the binding may refuse: its encrypted peers are few).
    if (rng.chance(0.3)) this.binding.pair({ mac, lmk: new Uint8Array(16).fill(mac & 0xff) });
    const reading = rng.pick([1, 1, 0.3, 0]);
    const cursor = new DatagramCursor();
    let seq = 0;
    let lost = false;
    let linkSeen: unknown = undefined;
    const ackW = new CborWriter(new Uint8Array(16));
    this.endpoints.set(mac, {
      reading,
      deliver: (bytes, broadcast) => {
        if (lost) return;
        cursor.open(bytes, bytes.length);
        if (!broadcast) book.ctx.datagramSeq = cursor.seq;
        while (cursor.next()) {
          if (cursor.end - cursor.start > MAX_DATAGRAM_FRAME) violate('egress-valid', 'espnow: a frame longer than the datagram mtu');
          book.take(checkHubFrame(bytes, cursor.start, cursor.end, 'espnow'), env.clock.now(), false);
        }
      },
    });
    return {
      book,
      alive: () => !lost,
      send: (rng2, frames, record) => {
        const l = this.binding.linkOf(mac);
        if (l !== linkSeen) {
          // A new link (the hub closed the last one, or silence did): no session on it yet.
          linkSeen = l;
          book.ctx.welcomed = book.ctx.welcomed && l !== undefined;
        }
        const out: number[] = [];
        const r = rng2.float();
        if (r < 0.05 && frames.length > 0) {
          // A bare frame as the whole datagram (a minimal ESTOP button, §13.3).
          append(out, frames[0] as Uint8Array);
        } else {
          let flags = 0;
          if (rng2.chance(0.15)) flags |= DatagramFlag.BROADCAST_ACK;
          if (rng2.chance(0.01)) flags |= rng2.pick([0x04, 0x08, DatagramFlag.BROADCAST]);
          const head = new Uint8Array(9);
          writeDatagramHeader(head, flags, seq);
          seq = (seq + 1) & 0xffff;
          if (rng2.chance(0.01)) head[0] = rng2.pick([0x00, 0x20, 0xf1, 0xa1, 0xe5]);
          out.push(head[0] as number, head[1] as number, head[2] as number);
          if (flags & DatagramFlag.BROADCAST_ACK) {
            writeBroadcastAck(head, rng2.chance(0.7) ? this.binding.broadcastSeq() - 1 : rng2.below(65536), rng2.chance(0.5) ? 0xffffffff : rng2.u32());
            for (let i = 3; i < 9; i++) out.push(head[i] as number);
          }
          if (rng2.chance(0.3)) {
            // The peer's own bitmap ACK of the hub's unicast stream (§13.3), consumed by the binding.
            ackW.reset();
            encodeBitmapAck(ackW, rng2.chance(0.8) ? book.ctx.datagramSeq : rng2.below(65536), rng2.chance(0.6) ? 0xffffffff : rng2.u32());
            out.push(ackW.pos, ...ackW.buf.subarray(0, ackW.pos));
          }
          for (const f of frames) {
            if (out.length + 1 + f.length > DATAGRAM_MAX_BYTES && rng2.chance(0.9)) break;
            let n = f.length;
            if (rng2.chance(0.04)) n = rng2.pick([0, 255, f.length + 1, f.length - 1]);
            out.push(n & 0xff);
            append(out, f);
          }
        }
        let bytes: Uint8Array = Uint8Array.from(out);
        if (rng2.chance(0.1)) bytes = mutateFrame(rng2, bytes, frames);
        if (bytes.length > DATAGRAM_MAX_BYTES && rng2.chance(0.8)) bytes = bytes.subarray(0, DATAGRAM_MAX_BYTES);
        for (let i = 0; i < bytes.length; i++) record.push(bytes[i] as number);
        (this.radio.handler as RadioHandler).received(mac, bytes, bytes.length);
        this.drainRadio(rng2);
      },
      pump: (rng2) => {
        this.drainRadio(rng2);
      },
      lose: () => {
        // ESP-NOW has no connection: the peer goes silent and the binding notices (PEER_SILENCE_MS).
        lost = true;
        this.endpoints.delete(mac);
      },
      check: () => {
        const peers = this.binding.peers();
        if (peers.length > ESPNOW_MAX_PEERS) violate('binding-bounded', `espnow: ${peers.length} peers`);
        for (const p of peers) {
          const q = p.egress.queue;
          if (q.bytes > q.capacityBytes || q.frames > q.capacityFrames) violate('binding-bounded', `espnow: peer queue ${q.bytes} bytes, ${q.frames} frames`);
        }
        if (this.radio.peers.size > ESPNOW_MAX_PEERS) violate('binding-bounded', `espnow: radio peer table ${this.radio.peers.size}`);
      },
    };
  }
}

// ============================================================================ the driver

export class FuzzStats {
  inputs = 0;
  episodes = 0;
  readonly perBinding: Record<string, number> = {};
  /** Frames the bindings handed the core. */
  coreFrames = 0;
  welcomes = 0;
  goodbyes = 0;
  latches = 0;
  unlatches = 0;
  ownerChanges = 0;
  robotPublished = 0;
  robotIntents = 0;
  parks = 0;
  observerData = 0;
  readonly nacks: number[] = [];
  readonly mutators: number[] = [];
  /** The largest values seen of the hub's retained structures. */
  maxSessions = 0;
  maxSubscriptions = 0;
  maxNeverShedBytes = 0;
  maxBindingQueuedBytes = 0;
  /** The hub's structure counts at the end of the last episode. */
  lastSessions = 0;
  lastSubscriptions = 0;
}

/** Inputs per episode: a fresh hub pair each time, so any input replays from its episode's start. */
export const EPISODE_INPUTS = 250;
/** Fuzz clients per episode (each reconnects when the hub closes its transport). */
const CLIENTS = 3;

export interface FuzzOptions {
  readonly seed: number;
  /** Receives a line per event (inputs, frames the fuzz clients got): for replays. */
  readonly trace?: (line: string) => void;
  /** Count a second HELLO and an out-of-range CATALOG toward §12.5 too (see strictMalformed). */
  readonly strictMalformed?: boolean;
  /** The hubs' session slots (default: 8 or 4, drawn per episode). */
  readonly slots?: number;
  /** The bindings to rotate through, one per episode (default: all). */
  readonly bindings?: readonly BindingName[];
  readonly episodeInputs?: number;
}

const OBSERVER_WISHES: readonly SubWish[] = Object.freeze([
  { channelId: 1, wishedRateHz: 10 },
  { channelId: 2, wishedRateHz: 20 },
  { channelId: 3, wishedRateHz: 2 },
  { channelId: 10, wishedRateHz: 40 },
  { channelId: 11, wishedRateHz: 20 },
  { channelId: 12, wishedRateHz: 10 },
  { channelId: 13, wishedRateHz: 1 },
  { channelId: 15, wishedRateHz: 25 },
  { channelId: 20, wishedRateHz: 50 },
  { channelId: 21, wishedRateHz: 10 },
]);

/** One hub with its ports and the observer attached. */
class HubSide {
  readonly clock = new VirtualClock();
  readonly log = new CountingLog();
  readonly robot: CheckingRobot;
  readonly hub: Hub;
  readonly observer = new ObserverLink();
  readonly observerSink: LinkSink;
  observerId = 0;
  constructor(catalog: CatalogIndex, config: Partial<HubConfig>, robotRng: Prng) {
    this.robot = new CheckingRobot(catalog, robotRng);
    this.hub = new Hub({ clock: this.clock, random: new SeededRandom(7), store: credentialStore(), robot: this.robot, catalog, log: this.log }, { livenessTimeoutMs: Infinity, ...config }); // the observer only listens (§6.5 off)
    this.robot.hub = this.hub;
    this.observerSink = this.hub.attach(this.observer);
    const w = new CborWriter(new Uint8Array(1024));
    encodeFrame({ type: FrameType.HELLO, version: PROTOCOL_VERSION, name: 'observer', subWishes: OBSERVER_WISHES.slice() }, w);
    this.observerSink.frame(w.buf, 0, w.pos);
    for (const r of this.observer.frames) if (r.frame && r.frame.type === FrameType.WELCOME) this.observerId = r.frame.sessionId;
    if (this.observerId === 0) violate('setup', 'the observer got no WELCOME');
  }
}

/** The robot's traffic of one step, identical on both hubs. */
class SampleSchedule {
  private readonly v6 = new Float64Array(6);
  private readonly v5 = new Float64Array(5);
  private readonly v2 = new Float64Array(2);
  private readonly v16 = new Float64Array(16);
  step(rng: Prng, hubs: readonly Hub[], now: number): void {
    const fill = (v: Float64Array): void => {
      for (let i = 0; i < v.length; i++) v[i] = rng.chance(0.98) ? Math.round((rng.float() - 0.5) * 2000) / 100 : rng.pick([NaN, Infinity, -Infinity, -0]);
    };
    fill(this.v6);
    for (const h of hubs) h.publishSample(10, now, this.v6, 6);
    if (rng.chance(0.5)) {
      fill(this.v5);
      for (const h of hubs) h.publishSample(11, now, this.v5, 5);
    }
    if (rng.chance(0.3)) {
      fill(this.v6);
      const count = rng.chance(0.9) ? 6 : rng.below(8);
      for (const h of hubs) h.publishSample(12, now, this.v6, count);
    }
    if (rng.chance(0.05)) {
      fill(this.v2);
      for (const h of hubs) h.publishSample(13, now, this.v2, 2);
    }
    if (rng.chance(0.2)) {
      fill(this.v16);
      for (const h of hubs) h.publishSample(14, now, this.v16, 16);
    }
    if (rng.chance(0.3)) {
      fill(this.v6);
      for (const h of hubs) h.publishSample(15, now, this.v6, 6);
    }
    if (rng.chance(0.15)) {
      const text = rng.chance(0.5) ? undefined : 'x'.repeat(rng.below(rng.chance(0.9) ? 120 : 4096));
      const values = [rng.below(4), rng.below(1000)];
      for (const h of hubs) h.publishEvent(20, now, values, text);
    }
    if (rng.chance(0.05)) {
      const values = [rng.below(100), rng.below(4), rng.below(2)];
      for (const h of hubs) h.publishEvent(21, now, values, 'fault');
    }
  }
}

function criticalChannel(catalog: CatalogIndex, f: Frame): boolean {
  if (f.type !== FrameType.DATA) return false;
  const ch = catalog.byId(f.channelId);
  return ch !== undefined && ch.critical;
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

function describeFrames(list: readonly Received[]): string {
  return list.map((r) => bytesToHex(r.bytes).slice(0, 80)).join(' | ').slice(0, 600);
}

/** One episode: hub A (fuzzed), hub B (control), a binding harness and its fuzz clients. */
class Episode {
  readonly rng: Prng;
  readonly binding: BindingName;
  readonly a: HubSide;
  readonly b: HubSide;
  readonly catalog: CatalogIndex;
  readonly crafter: Crafter;
  readonly corpus: Uint8Array[];
  readonly spy = new Spy();
  readonly harness: Harness;
  readonly endpoints: Endpoint[] = [];
  readonly schedule = new SampleSchedule();
  readonly config: Partial<HubConfig>;
  readonly routes: number;
  private readonly stats: FuzzStats;
  private lastStep = 0;
  private connects = 0;
  private readonly quiet: number[] = [];

  constructor(seed: number, episode: number, binding: BindingName, catalog: CatalogIndex, corpus: Uint8Array[], stats: FuzzStats, slots: number | undefined) {
    this.rng = new Prng(mixSeed(seed, episode));
    this.binding = binding;
    this.catalog = catalog;
    this.corpus = corpus;
    this.stats = stats;
    const rng = this.rng;
    // The pie (§10.2) is made large enough that no fuzz subscription can cut the observer's share:
    // a re-split for a legitimate new subscriber is not the harm §12.6 forbids.
    const drawn = rng.pick([8, 8, 4]);
    this.config = { capacityHz: 1e6, slots: slots ?? drawn, anonymousTier: rng.chance(0.9) ? Tier.observer : Tier.operator };
    // Every fourth episode runs the device's never-shed queue (768 bytes, 32 frames); chosen by
    // the episode's number, not the generator, so a seed's inputs stay what they were.
    if (episode % 4 === 3) this.config = { ...this.config, neverShedBytes: DEVICE_DEFAULTS.never_shed_bytes };
    const robotSeed = rng.u32();
    this.a = new HubSide(catalog, this.config, new Prng(robotSeed));
    this.b = new HubSide(catalog, this.config, new Prng(robotSeed));
    this.crafter = new Crafter(catalog);
    let routes = 0;
    for (const ch of catalog.channels) if (ch.direction === Direction.telemetry && ch.cls !== ChannelClass.INTENT) routes++;
    this.routes = routes;
    const env: HarnessEnv = { attach: spyAttach(this.a.hub, this.spy), clock: this.a.clock, catalog, rng };
    this.harness =
      binding === 'core'
        ? new CoreHarness(env)
        : binding === 'ble'
          ? new BleHarness(env)
          : binding === 'espnow'
            ? new EspNowHarness(env)
            : binding === 'ws-host'
              ? new WsHostHarness(env)
              : new TcpHarness(binding, env);
    this.a.observer.clearStep();
    this.b.observer.clearStep();
    this.lastStep = this.a.clock.now();
    stashed = null;
  }

  private endpoint(k: number): Endpoint {
    let ep = this.endpoints[k];
    if (!ep || !ep.alive()) {
      const book = new ReceiveBook(this.crafter, this.stats);
      book.label = `c${k}.${++this.connects}`;
      trace(`  ${book.label}: new transport`);
      ep = this.harness.connect(this.rng, book);
      this.endpoints[k] = ep;
    }
    return ep;
  }

  /** Client frames for one input: crafted, mutated, vectors or noise. */
  private frames(ep: Endpoint): Uint8Array[] {
    const rng = this.rng;
    const n = 1 + rng.below(this.harness.framesPerInput);
    const out: Uint8Array[] = [];
    for (let i = 0; i < n; i++) {
      const r = rng.float();
      let f: Uint8Array;
      if (r < 0.45) f = this.crafter.frame(rng, ep.book.ctx);
      else if (r < 0.75) f = mutateFrame(rng, this.crafter.frame(rng, ep.book.ctx), this.corpus, this.stats.mutators);
      else if (r < 0.9) f = mutateFrame(rng, rng.pick(this.corpus), this.corpus, this.stats.mutators);
      else if (r < 0.95) f = rng.pick(this.corpus).slice();
      else f = rng.bytes(rng.below(rng.chance(0.9) ? 64 : 1400));
      out.push(f);
    }
    return out;
  }

  /** One input and every invariant after it. `record` receives the bytes sent (for the report). */
  step(record: number[]): void {
    const rng = this.rng;
    const a = this.a;
    const hub = a.hub;
    // Environment: a transport dies now and then (§6.6), exercising STALE and resume.
    if (rng.chance(0.01)) {
      const ep = this.endpoints[rng.below(CLIENTS)];
      if (ep) ep.lose();
    }
    const k = rng.below(CLIENTS);
    const ep = this.endpoint(k);
    const frames = this.frames(ep);
    const latchedBefore = hub.latch.latched;
    const ownerBefore = hub.controlOwner;
    const stopsBefore = a.robot.stops;
    this.spy.reset();
    if (tracer) trace(`  ${ep.book.label} → ${frames.map((f) => bytesToHex(f)).join(' ')}  [t=${a.clock.now()}]`);
    try {
      ep.send(rng, frames, record);
      raiseStashed();
    } catch (e) {
      if (e instanceof FuzzViolation) throw e;
      violate('no-exception', `the binding or the hub threw while taking input: ${e instanceof Error ? e.stack ?? e.message : String(e)}`);
    }
    this.stats.coreFrames += this.spy.frames;
    // A client whose stream lost step (a length that lied) starts a new connection, as a real one would.
    this.quiet[k] = this.spy.frames === 0 ? (this.quiet[k] ?? 0) + 1 : 0;
    if ((this.quiet[k] as number) >= 12) {
      this.quiet[k] = 0;
      ep.lose();
    }
    // §11.2: the latch changes on a valid ESTOP frame (set) or an ESTOP_CLEAR (cleared) only.
    const latched = hub.latch.latched;
    if (!latchedBefore && latched && this.spy.asserts === 0) violate('latch', 'latched without a valid ESTOP frame');
    if (latchedBefore && !latched && this.spy.clears === 0) violate('latch', 'cleared without an ESTOP_CLEAR');
    if (this.spy.last === 1 && !latched) violate('latch', 'a valid ESTOP ASSERT reached the core and the hub is not latched');
    if (this.spy.asserts > 0 && a.robot.stops - stopsBefore < this.spy.asserts) {
      violate('latch', `${this.spy.asserts} valid ESTOP ASSERTs reached the core, robot.stop was called ${a.robot.stops - stopsBefore} times`);
    }
    if (latched !== latchedBefore) {
      if (latched) this.stats.latches++;
      else this.stats.unlatches++;
    }
    this.afterStep(latchedBefore, ownerBefore);
  }

  private pumpAll(): void {
    for (const ep of this.endpoints) if (ep) ep.pump(this.rng);
  }

  private afterStep(latchedBefore: boolean, ownerBefore: number): void {
    const rng = this.rng;
    const a = this.a;
    const b = this.b;
    const hub = a.hub;
    try {
      this.pumpAll();
      // Time passes identically for both hubs; the robot's samples go to both.
      const dt = rng.chance(0.9) ? rng.below(40) : rng.pick([0, 100, 500, 2100]);
      a.clock.advance(dt);
      b.clock.advance(dt);
      const now = a.clock.now();
      this.schedule.step(rng, [a.hub, b.hub], now);
      const ownerBeforeTick = hub.controlOwner;
      const latchedBeforeTick = hub.latch.latched;
      if (now - this.lastStep >= 20 || rng.chance(0.3)) {
        this.lastStep = now;
        this.harness.tick();
        a.hub.tick();
        b.hub.tick();
      }
      // The deadman is the only thing that latches in a tick, and only with a control owner.
      if (!latchedBeforeTick && hub.latch.latched && ownerBeforeTick === 0) violate('latch', 'latched during a tick with no control owner (not the deadman)');
      if (latchedBeforeTick && !hub.latch.latched) violate('latch', 'cleared during a tick');
      if (!latchedBeforeTick && hub.latch.latched) {
        if (hub.latch.source !== EstopSource.DEADMAN) violate('latch', `latched during a tick by source ${hub.latch.source}`);
        this.stats.latches++;
      }
      this.pumpAll();
      raiseStashed();
    } catch (e) {
      if (e instanceof FuzzViolation) throw e;
      violate('no-exception', `threw after the input: ${e instanceof Error ? e.stack ?? e.message : String(e)}`);
    }
    this.checkInvariants(latchedBefore !== hub.latch.latched, ownerBefore);
  }

  private checkInvariants(latchChanged: boolean, ownerBefore: number): void {
    const a = this.a;
    const b = this.b;
    const hub = a.hub;
    const stats = this.stats;
    if (a.log.internalErrors > 0) violate('no-internal-error', `the core caught ${a.log.internalErrors} fault(s) of its own (log event internal-error)`);
    if (a.robot.problems.length > 0) violate('robot', a.robot.problems.join('; '));
    // The observer: same non-critical view as on the control hub, same grants.
    const oa = a.observer;
    const ob = b.observer;
    if (oa.closed) violate('observer', 'the hub closed the observer\'s link');
    const fa = oa.frames.filter((r) => !criticalChannel(this.catalog, r.frame as Frame));
    const fb = ob.frames.filter((r) => !criticalChannel(this.catalog, r.frame as Frame));
    let same = fa.length === fb.length;
    for (let i = 0; same && i < fa.length; i++) same = sameBytes((fa[i] as Received).bytes, (fb[i] as Received).bytes);
    if (!same) violate('observer-data', `the observer got [${describeFrames(fa)}] with the fuzz and [${describeFrames(fb)}] without`);
    for (const r of fa) if (r.frame && r.frame.type === FrameType.DATA) stats.observerData++;
    const sa = hub.sessions();
    const sb = b.hub.sessions();
    const va = sa.find((s) => s.id === a.observerId);
    const vb = sb.find((s) => s.id === b.observerId);
    if (!va || va.state !== SessionState.ACTIVE) violate('observer-grants', 'the observer\'s session is gone or not ACTIVE');
    if (!vb) violate('setup', 'the control observer vanished');
    let sameGrants = va.subs.length === vb.subs.length;
    for (let i = 0; sameGrants && i < va.subs.length; i++) {
      const x = va.subs[i] as SubView;
      const y = vb.subs[i] as SubView;
      sameGrants = x.channelId === y.channelId && Object.is(x.wishHz, y.wishHz) && Object.is(x.grantedHz, y.grantedHz) && x.priority === y.priority;
    }
    if (!sameGrants) violate('observer-grants', `observer grants ${JSON.stringify(va.subs)} differ from the control's ${JSON.stringify(vb.subs)}`);
    // Critical traffic reached the observer: the latch and the owner as announced (§10.1, §11.2, §6.8).
    if (latchChanged) {
      const last = oa.estops[oa.estops.length - 1];
      if (!last) violate('estop-announced', 'the latch changed and the observer got no ESTOP frame');
      if ((last.kind === EstopKind.ASSERT) !== hub.latch.latched) violate('estop-announced', `the observer's last ESTOP frame is kind ${last.kind}, the latch is ${hub.latch.latched}`);
      let safety: Frame | null = null;
      for (const r of oa.frames) if (r.frame && r.frame.type === FrameType.DATA && r.frame.channelId === 1) safety = r.frame;
      if (!safety || safety.type !== FrameType.DATA || safety.values[0] !== (hub.latch.latched ? 1 : 0)) violate('estop-announced', 'the observer\'s safety channel does not state the latch');
    }
    if (hub.controlOwner !== ownerBefore) {
      stats.ownerChanges++;
      let owner: Frame | null = null;
      for (const r of oa.frames) if (r.frame && r.frame.type === FrameType.DATA && r.frame.channelId === 3) owner = r.frame;
      if (!owner || owner.type !== FrameType.DATA || owner.values[0] !== hub.controlOwner) violate('owner-announced', `control passed to ${hub.controlOwner} and the observer's control-owner channel says ${owner && owner.type === FrameType.DATA ? owner.values[0] : 'nothing'}`);
    }
    oa.clearStep();
    ob.clearStep();
    // Bounds on what the hub retains (§7, §10.4, §6).
    const slots = this.config.slots as number;
    if (sa.length > slots) violate('slots', `${sa.length} sessions in ${slots} slots`);
    let subs = 0;
    let active = 0;
    for (const s of sa) {
      if (s.state !== SessionState.ACTIVE && s.state !== SessionState.STALE) violate('slots', `session ${s.id} listed in state ${s.state}`);
      if (s.state === SessionState.ACTIVE) active++;
      if (s.subs.length > this.routes) violate('subs-bounded', `session ${s.id} holds ${s.subs.length} subscriptions (${this.routes} channels)`);
      const ids = new Set<number>();
      for (const g of s.subs) {
        if (ids.has(g.channelId)) violate('subs-bounded', `session ${s.id} holds channel ${g.channelId} twice`);
        ids.add(g.channelId);
      }
      subs += s.subs.length;
      if (s.neverShedBytes > (hub.config.neverShedBytes as number)) violate('never-shed-bounded', `session ${s.id} never-shed queue ${s.neverShedBytes} > ${hub.config.neverShedBytes}`);
      if (s.neverShedBytes > stats.maxNeverShedBytes) stats.maxNeverShedBytes = s.neverShedBytes;
    }
    if (active > CLIENTS + 1 && this.binding !== 'espnow') violate('slots', `${active} ACTIVE sessions for ${CLIENTS + 1} transports`);
    if (sa.length > stats.maxSessions) stats.maxSessions = sa.length;
    if (subs > stats.maxSubscriptions) stats.maxSubscriptions = subs;
    stats.lastSessions = sa.length;
    stats.lastSubscriptions = subs;
    for (const ep of this.endpoints) if (ep) ep.check();
  }

  finish(): void {
    this.stats.parks += this.a.hub.counters.parks;
    this.stats.robotPublished += this.a.robot.published;
    this.stats.robotIntents += this.a.robot.intents;
  }
}

let defaultCatalog: CatalogIndex | null = null;
let defaultCorpus: Uint8Array[] | null = null;

/** The binding an episode runs on. */
export function episodeBinding(episode: number, bindings: readonly BindingName[] = BINDINGS): BindingName {
  return bindings[episode % bindings.length] as BindingName;
}

/**
 * Runs inputs [from, to) of the run with `seed`; `from` must be the first input of an episode
 * (a multiple of episodeInputs). Throws FuzzFailure at the first input that breaks an invariant.
 */
export function runFuzz(options: FuzzOptions, from: number, to: number, stats: FuzzStats = new FuzzStats(), progress?: (done: number) => void): FuzzStats {
  const per = options.episodeInputs ?? EPISODE_INPUTS;
  if (from % per !== 0) throw new RangeError(`runFuzz: from (${from}) must start an episode (a multiple of ${per})`);
  const bindings = options.bindings ?? BINDINGS;
  const catalog = (defaultCatalog ??= loadCatalog(DEFAULT_CATALOG));
  const corpus = (defaultCorpus ??= vectorCorpus());
  let episode: Episode | null = null;
  const record: number[] = [];
  tracer = options.trace ?? null;
  strictMalformed = options.strictMalformed !== false;
  try {
  for (let i = from; i < to; i++) {
    const e = Math.floor(i / per);
    const binding = episodeBinding(e, bindings);
    record.length = 0;
    trace(`#${i} (episode ${e}, ${binding})`);
    try {
      if (i % per === 0) {
        if (episode) episode.finish();
        episode = new Episode(options.seed, e, binding, catalog, corpus, stats, options.slots);
        stats.episodes++;
      }
      (episode as Episode).step(record);
    } catch (err) {
      const v = err instanceof FuzzViolation ? err : new FuzzViolation('no-exception', err instanceof Error ? err.stack ?? err.message : String(err));
      throw new FuzzFailure(options.seed, i, e, binding, v.invariant, v.detail, bytesToHex(Uint8Array.from(record)));
    }
    stats.inputs++;
    stats.perBinding[binding] = (stats.perBinding[binding] ?? 0) + 1;
    if (progress && (i + 1) % 1000 === 0) progress(i + 1);
  }
  } finally {
    tracer = null;
    strictMalformed = true;
  }
  if (episode) episode.finish();
  return stats;
}

/** The first input of the episode that holds input `index`: where its replay starts. */
export function episodeStart(index: number, episodeInputs: number = EPISODE_INPUTS): number {
  return Math.floor(index / episodeInputs) * episodeInputs;
}

/** NACK codes by name, for reports. */
export const NACK_CODES = Nack;
