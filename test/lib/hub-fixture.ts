// A hub on a virtual clock with in-memory ports, and clients that speak frames over TestLinks.
import { loadCatalog, type CatalogIndex } from '../../catalog/index.js';
import { DEFAULT_CATALOG } from '../../catalog/default.js';
import { Tier } from '../../catalog/schema.js';
import { CborWriter } from '../../hub/cbor.js';
import { saveCredentials } from '../../hub/credentials.js';
import { encodeEstop, ESTOP_FRAME_BYTES, EstopKind, EstopSource } from '../../hub/estop-frame.js';
import { encodeFrame, FrameType, PROTOCOL_VERSION, type Frame, type HelloFrame, type NackFrame, type WelcomeFrame } from '../../hub/frames.js';
import { Hub, type HubConfig } from '../../hub/hub.js';
import { MemoryStore, type Clock, type LinkSink, type Random, type RobotPort, type SampleBlock, type Store } from '../../hub/ports.js';
import { fail } from './assert.js';
import { TestLink } from './test-link.js';

export class VirtualClock implements Clock {
  t = 1000;
  now(): number {
    return this.t;
  }
  advance(ms: number): void {
    this.t += ms;
  }
}

/** xorshift32: deterministic bytes for resume tokens. */
export class SeededRandom implements Random {
  private s: number;
  constructor(seed = 1) {
    this.s = seed >>> 0 || 1;
  }
  fill(into: Uint8Array): void {
    for (let i = 0; i < into.length; i++) {
      let x = this.s;
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      this.s = x >>> 0;
      into[i] = this.s & 0xff;
    }
  }
}

export { MemoryStore };

export class RecordingRobot implements RobotPort {
  stops: number[] = [];
  releases = 0;
  published: { channelId: number; samples: number[][] }[] = [];
  intents: { channelId: number; args: (number | string)[] }[] = [];
  intentResult = 0;
  stop(source: number): void {
    this.stops.push(source);
  }
  release(): void {
    this.releases++;
  }
  publish(channelId: number, samples: SampleBlock): void {
    this.published.push({ channelId, samples: samplesOf(samples) });
  }
  intent(channelId: number, args: readonly (number | string)[]): number {
    this.intents.push({ channelId, args: args.slice() });
    return this.intentResult;
  }
}

/** The samples of a block as arrays [t, v1, …] (a copy: the block is the hub's, reused). */
export function samplesOf(block: SampleBlock): number[][] {
  const out: number[][] = [];
  for (let i = 0; i < block.count; i++) out.push(Array.from(block.numbers.subarray(i * block.width, (i + 1) * block.width)));
  return out;
}

export class TestClient {
  readonly link: TestLink;
  readonly sink: LinkSink;
  private readonly w = new CborWriter(new Uint8Array(8192));
  /** How much of link.received take() has already returned. */
  private cursor = 0;
  constructor(hub: Hub, link = new TestLink()) {
    this.link = link;
    this.link.sink = this.sink = hub.attach(link);
  }
  send(f: Frame): void {
    this.w.reset();
    encodeFrame(f, this.w);
    this.sink.frame(this.w.buf.slice(0, this.w.pos), 0, this.w.pos);
  }
  sendBytes(bytes: Uint8Array): void {
    this.sink.frame(bytes, 0, bytes.length);
  }
  /** Drains the link and returns every CBOR frame received since the last call (of one type if given). */
  take(type?: number): Frame[] {
    this.link.drain();
    const out: Frame[] = [];
    for (let i = this.cursor; i < this.link.received.length; i++) {
      const f = this.link.received[i]!.frame;
      if (f && (type === undefined || f.type === type)) out.push(f);
    }
    this.cursor = this.link.received.length;
    return out;
  }
  /** take() narrowed to NACKs. */
  nacks(): NackFrame[] {
    return this.take(FrameType.NACK) as NackFrame[];
  }
  /** Sends HELLO and returns the WELCOME (fails the test when there is none). */
  hello(extra: Partial<HelloFrame> = {}): WelcomeFrame {
    this.send({ type: FrameType.HELLO, version: PROTOCOL_VERSION, name: 'test', ...extra });
    const got = this.take();
    for (const f of got) if (f.type === FrameType.WELCOME) return f;
    return fail(`no WELCOME: got ${JSON.stringify(got)}`);
  }
  intent(channelId: number, requestId: number, args?: (number | string)[]): void {
    const f: Frame = args ? { type: FrameType.INTENT, channelId, requestId, args } : { type: FrameType.INTENT, channelId, requestId };
    this.send(f);
  }
  /** A client ESTOP frame (§11.2) with its own sequence. */
  estop(seq: number, origin = 0): void {
    this.sendBytes(estopBytes(EstopKind.ASSERT, EstopSource.CLIENT, origin, seq));
  }
}

export function estopBytes(kind: number, source: number, origin: number, seq: number): Uint8Array {
  const b = new Uint8Array(ESTOP_FRAME_BYTES);
  encodeEstop(b, 0, kind, source, 0, origin, seq);
  return b;
}

/** ASCII text as bytes (portable: no TextEncoder on every engine). */
export function ascii(s: string): Uint8Array {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i) & 0x7f;
  return out;
}

export const OPERATOR_CREDENTIAL = ascii('operator-token-0001');
export const MAINTAINER_CREDENTIAL = ascii('maintainer-token-01');

/** A Store holding one operator and one maintainer credential (hub/credentials.ts). */
export function credentialStore(): MemoryStore {
  const store = new MemoryStore();
  saveCredentials(store, [
    { tier: Tier.operator, credential: OPERATOR_CREDENTIAL },
    { tier: Tier.maintainer, credential: MAINTAINER_CREDENTIAL },
  ]);
  return store;
}

export interface Fixture {
  hub: Hub;
  clock: VirtualClock;
  store: MemoryStore;
  robot: RecordingRobot;
  catalog: CatalogIndex;
}

/**
 * A hub on a virtual clock; the default store holds the operator and maintainer credentials.
 * The test clients here speak only when a test makes them, so the §6.5 liveness timeout is off
 * unless the config sets it (test/core/hub-liveness.test.ts and the loopback suites do).
 */
export function makeHub(config: Partial<HubConfig> = {}, store: MemoryStore = credentialStore(), clock = new VirtualClock()): Fixture {
  const catalog = loadCatalog(DEFAULT_CATALOG);
  const robot = new RecordingRobot();
  const hub = new Hub({ clock, random: new SeededRandom(7), store, robot, catalog }, { livenessTimeoutMs: Infinity, ...config });
  return { hub, clock, store, robot, catalog };
}
