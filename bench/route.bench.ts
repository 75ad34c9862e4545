// Issue 3: the hub's egress hot path and what sessions cost in memory. A sample goes through
// the real Hub (grant gate, §10.4 table, decimate/conflate, encode once, copy per link) to
// sessions created the way clients create them: HELLO frames fed to hub.attach(link).frame.
import { DEFAULT_CATALOG } from '../catalog/default.js';
import { loadCatalog, type CatalogIndex } from '../catalog/index.js';
import { deepFreeze, Priority, Tier, type Catalog, type ChannelDef } from '../catalog/schema.js';
import { CborWriter } from '../hub/cbor.js';
import { encodeFrame, FrameType, PROTOCOL_VERSION, type Frame, type HelloFrame, type SubWish } from '../hub/frames.js';
import { Hub, type HubConfig } from '../hub/hub.js';
import { Tag, tagOf, type LinkSink } from '../hub/ports.js';
import { LinkFraming, TcpLink } from '../bindings/tcp/egress.js';
import type { OpBench, RetainedBench } from './case.js';
import { imuValues, IMU_CHANNEL } from './codec.bench.js';
import { BenchClock, BenchRandom, EmptyStore, IdleRobot, LeanLink } from './fixture.js';

export const SESSIONS = 8;
export const SUBS_PER_SESSION = 16;
const JOINT_STATES_CHANNEL = 12;
const FIRST_EXTRA_CHANNEL = 50;
const LINK_COPY = 'route.link-copy';
/** An IMU sample as the core tags it: a sheddable STREAM sample of channel 10. */
const SAMPLE_TAG = tagOf(FrameType.DATA, Tag.SAMPLE, IMU_CHANNEL);

// A client of the retained bench subscribes to 16 telemetry channels. The default catalog has
// fewer, so the bench catalog adds IMU-shaped streams (ids 50 and up) until there are 16.
function benchCatalog(): Catalog {
  const imu = DEFAULT_CATALOG.channels.find((c) => c.id === IMU_CHANNEL) as ChannelDef;
  const have = DEFAULT_CATALOG.channels.filter((c) => c.direction === 'telemetry').length;
  const extra: ChannelDef[] = [];
  for (let k = 0; k < SUBS_PER_SESSION - have; k++) {
    extra.push({ ...imu, id: FIRST_EXTRA_CHANNEL + k, name: `bench-stream-${k}` });
  }
  return deepFreeze({ version: 1, name: 'bench', channels: [...DEFAULT_CATALOG.channels, ...extra] });
}
export const BENCH_CATALOG: Catalog = benchCatalog();

// Operator tier: an observer is capped at 50 Hz (hub/grants.ts), the bench wants imu's full
// 200 Hz. Capacity well above 8 × 200 Hz so that the pie never thins the route.
const BENCH_CONFIG: Partial<HubConfig> = Object.freeze({ anonymousTier: Tier.operator, capacityHz: 100000 });

function frameBytes(f: Frame): Uint8Array {
  const w = new CborWriter(new Uint8Array(1024));
  encodeFrame(f, w);
  return w.buf.slice(0, w.pos);
}

function hello(k: number, subWishes?: SubWish[]): Uint8Array {
  const f: HelloFrame = { type: FrameType.HELLO, version: PROTOCOL_VERSION, name: `bench-${k}` };
  if (subWishes) f.subWishes = subWishes;
  return frameBytes(f);
}

interface World {
  readonly clock: BenchClock;
  readonly catalog: CatalogIndex;
  readonly hub: Hub;
}

function world(catalog: CatalogIndex): World {
  const clock = new BenchClock();
  const hub = new Hub({ clock, random: new BenchRandom(), store: new EmptyStore(), robot: new IdleRobot(), catalog }, BENCH_CONFIG);
  return { clock, catalog, hub };
}

function sumFrames(links: readonly LeanLink[]): number {
  let n = 0;
  for (let i = 0; i < links.length; i++) n += (links[i] as LeanLink).frames;
  return n;
}

interface RouteOptions {
  readonly name: string;
  readonly title: string;
  readonly channelId: number;
  readonly wish: SubWish;
  readonly level: number;
  /** Values change every `changeEvery` samples (conflation sends only changes). */
  readonly changeEvery: number;
}

function routeBench(o: RouteOptions): OpBench {
  let w: World | null = null;
  const links: LeanLink[] = [];
  const values = imuValues();
  const base0 = values[0] as number;
  let count = 6;
  let stepMs = 5;
  let k = 0;
  return {
    kind: 'op',
    name: o.name,
    title: o.title,
    issue: 3,
    op: 'sample',
    item: 'delivery',
    baseline: LINK_COPY,
    xsOps: 500,
    setup() {
      const catalog = loadCatalog(BENCH_CATALOG);
      w = world(catalog);
      const ch = catalog.byId(o.channelId);
      if (!ch) throw new Error(`bench setup: no channel ${o.channelId}`);
      count = ch.fieldCount;
      for (let s = 0; s < SESSIONS; s++) {
        const link = new LeanLink();
        links.push(link);
        w.hub.attach(link).frame(...whole(hello(s, [o.wish])));
      }
      for (const view of w.hub.sessions()) {
        const sub = view.subs[0];
        if (!sub || sub.grantedHz !== o.wish.wishedRateHz) {
          throw new Error(`bench setup: session ${view.id} granted ${sub ? sub.grantedHz : 'nothing'} Hz, wished ${o.wish.wishedRateHz}`);
        }
      }
      // One push per grant period: every sample is due, so the grant gate never thins the route.
      stepMs = 1000 / o.wish.wishedRateHz;
      // Level 0 first: every subscriber must get the sample (the bench measures delivery, not refusal).
      const before = sumFrames(links);
      w.clock.t += stepMs;
      w.hub.publishSample(o.channelId, w.clock.t, values, count);
      const got = sumFrames(links) - before;
      if (got !== SESSIONS) throw new Error(`bench setup: one sample reached ${got} of ${SESSIONS} subscribers`);
      for (const link of links) link.level = o.level;
    },
    run(n) {
      const hub = (w as World).hub;
      const clock = (w as World).clock;
      const before = sumFrames(links);
      for (let i = 0; i < n; i++) {
        clock.t += stepMs;
        k++;
        values[0] = base0 + (((k / o.changeEvery) | 0) & 1);
        hub.publishSample(o.channelId, clock.t, values, count);
      }
      return sumFrames(links) - before;
    },
  };
}

function whole(bytes: Uint8Array): [Uint8Array, number, number] {
  return [bytes, 0, bytes.length];
}

export function routeImuLevel0Bench(): OpBench {
  return routeBench({
    name: 'route.imu-level0',
    title: `publishSample: imu to ${SESSIONS} subscribers at full rate, level 0 (every push sent)`,
    channelId: IMU_CHANNEL,
    wish: { channelId: IMU_CHANNEL, wishedRateHz: 200 },
    level: 0,
    changeEvery: 1,
  });
}

export function routeImuLevel1Bench(): OpBench {
  return routeBench({
    name: 'route.imu-level1',
    title: `publishSample: imu to ${SESSIONS} subscribers, level 1 (row 10: decimate 2×)`,
    channelId: IMU_CHANNEL,
    wish: { channelId: IMU_CHANNEL, wishedRateHz: 200 },
    level: 1,
    changeEvery: 1,
  });
}

export function routeStateLevel1Bench(): OpBench {
  return routeBench({
    name: 'route.state-level1',
    title: `publishSample: joint_states to ${SESSIONS} background subscribers, level 1 (row 8: conflate; values change every 2nd)`,
    channelId: JOINT_STATES_CHANNEL,
    wish: { channelId: JOINT_STATES_CHANNEL, wishedRateHz: 50, priority: Priority.background },
    level: 1,
    changeEvery: 2,
  });
}

/** One IMU DATA frame, exactly (as the core hands frames to links). */
function imuDataFrame(): Uint8Array {
  const w = new CborWriter(new Uint8Array(256));
  encodeFrame({ type: FrameType.DATA, channelId: IMU_CHANNEL, seq: 1, t: 1005, values: Array.from(imuValues()) }, w);
  return w.buf.slice(0, w.pos);
}

/** The link's own share of a delivery: the byte copy every route case includes once per delivery. */
export function linkCopyBench(): OpBench {
  const link = new LeanLink();
  let frame: Uint8Array = new Uint8Array(0);
  return {
    kind: 'op',
    name: LINK_COPY,
    title: 'LeanLink.send alone: copy one IMU DATA frame into the ring (subtract from route.*)',
    issue: 3,
    op: 'frame',
    item: 'frame',
    xsOps: 2000,
    setup() {
      frame = imuDataFrame();
    },
    run(n) {
      for (let i = 0; i < n; i++) link.send(frame, SAMPLE_TAG, i);
      return n;
    },
  };
}

/**
 * The Wi-Fi binding's share of a delivery (docs/protocol.md §13.6): one IMU DATA frame into a
 * real TcpLink as a sheddable sample (the egress queue's copy, its queue time and the watermark)
 * and out to a socket buffer (the sample-budget check, the hand-over); the clock moves 1 ms a
 * frame. Not part of route.*, whose link is the bench's LeanLink.
 */
export function tcpLinkBench(): OpBench {
  const clock = new BenchClock();
  const sink: LinkSink = { frame() {}, lost() {}, levelChanged() {} };
  const link = new TcpLink({ hub: { attach: () => sink }, clock, framing: LinkFraming.LENGTH_PREFIX, binding: 'tcp' });
  let frame: Uint8Array = new Uint8Array(0);
  return {
    kind: 'op',
    name: 'route.tcp-link',
    title: 'TcpLink: one IMU DATA frame queued as a sample, then taken by the socket (the binding’s share)',
    issue: 7,
    op: 'frame',
    item: 'frame',
    xsOps: 2000,
    setup() {
      frame = imuDataFrame();
      link.start({ kick() {}, close() {} });
    },
    run(n) {
      let taken = 0;
      for (let i = 0; i < n; i++) {
        clock.t += 1;
        link.send(frame, SAMPLE_TAG, i);
        taken += link.take(4096);
      }
      if (taken !== n * (frame.length + 2)) throw new Error(`bench: the socket took ${taken} bytes of ${n * (frame.length + 2)}`);
      return n;
    },
  };
}

/**
 * Retained heap: the catalog, an idle hub, then 8 sessions and their 16 subscriptions each.
 * Totals: the sessions, the idle hub, and both together, which is what the device's RAM must
 * hold (the catalog is preloaded into flash there). Every step's figure also holds what the
 * harness keeps of the step's own evaluation, 2 slots and 48 chunk bytes (docs/architecture.md
 * "Memory").
 */
export function sessionsRetainedBench(): RetainedBench {
  let catalog: CatalogIndex | null = null;
  let w: World | null = null;
  const links: LeanLink[] = [];
  const sinks: LinkSink[] = [];
  const hellos: Uint8Array[] = [];
  const subscribes: Uint8Array[] = [];
  // Everything the steps feed the hub is built in setup and kept to the end, so that no step
  // frees what an earlier one counted.
  let warm: { link: LeanLink; hello: Uint8Array; subscribe: Uint8Array; goodbye: Uint8Array } | null = null;
  const steps = [
    { name: 'catalog', count: 1, per: `catalog (loadCatalog, ${BENCH_CATALOG.channels.length} channels)` },
    { name: 'hub', count: 1, per: 'idle hub (new Hub)' },
    { name: 'first-use', count: 1, per: 'one-time state (a session opened, subscribed, closed)' },
    { name: 'attach', count: SESSIONS, per: 'attached link (hub.attach)' },
    { name: 'hello', count: SESSIONS, per: 'session (HELLO, no subscriptions)' },
    { name: 'subscribe', count: SESSIONS * SUBS_PER_SESSION, per: `subscription (SUBSCRIBE, ${SUBS_PER_SESSION} channels each)` },
  ] as const;
  const idle = ['hub', 'first-use'];
  const sessions = ['attach', 'hello', 'subscribe'];
  return {
    kind: 'retained',
    name: 'memory.sessions',
    title: `retained heap of ${SESSIONS} sessions × ${SUBS_PER_SESSION} subscriptions`,
    issue: 3,
    steps,
    totals: [
      { name: `${SESSIONS} sessions × ${SUBS_PER_SESSION} subscriptions`, steps: sessions },
      { name: 'idle hub', steps: idle },
      // The device's budget: the catalog is preloaded into flash, the rest is RAM.
      { name: `idle hub + ${SESSIONS} sessions × ${SUBS_PER_SESSION} subscriptions (no catalog)`, steps: [...idle, ...sessions] },
    ],
    setup() {
      const wishes: SubWish[] = [];
      for (const c of BENCH_CATALOG.channels) {
        if (c.direction === 'telemetry' && wishes.length < SUBS_PER_SESSION) wishes.push({ channelId: c.id, wishedRateHz: c.max_rate_hz });
      }
      for (let s = 0; s < SESSIONS; s++) {
        links.push(new LeanLink());
        hellos.push(hello(s));
        subscribes.push(frameBytes({ type: FrameType.SUBSCRIBE, wishes }));
      }
      // The warm-up session leaves out STATE channels: the values a STATE subscription last sent
      // are kept per (channel, slot) for the slot's later sessions, so subscribing them here
      // would charge the slot's first STATE arrays to `first-use` rather than to `subscribe`.
      const warmWishes = wishes.filter((x) => BENCH_CATALOG.channels.find((c) => c.id === x.channelId)?.class !== 'STATE');
      warm = {
        link: new LeanLink(),
        hello: hello(99),
        subscribe: frameBytes({ type: FrameType.SUBSCRIBE, wishes: warmWishes }),
        goodbye: frameBytes({ type: FrameType.GOODBYE }),
      };
    },
    step(i) {
      const name = steps[i]?.name;
      if (name === 'catalog') {
        catalog = loadCatalog(BENCH_CATALOG);
      } else if (name === 'hub') {
        w = world(catalog as CatalogIndex);
      } else if (name === 'first-use') {
        // Lazily created singletons (the frame decoder's reader, ...) are not per-session costs.
        const x = warm as NonNullable<typeof warm>;
        const sink = (w as World).hub.attach(x.link);
        sink.frame(...whole(x.hello));
        sink.frame(...whole(x.subscribe));
        sink.frame(...whole(x.goodbye));
      } else if (name === 'attach') {
        for (const link of links) sinks.push((w as World).hub.attach(link));
      } else if (name === 'hello') {
        for (let s = 0; s < SESSIONS; s++) (sinks[s] as LinkSink).frame(...whole(hellos[s] as Uint8Array));
        if ((w as World).hub.sessions().length !== SESSIONS) throw new Error('bench: not every HELLO opened a session');
      } else if (name === 'subscribe') {
        for (let s = 0; s < SESSIONS; s++) (sinks[s] as LinkSink).frame(...whole(subscribes[s] as Uint8Array));
        for (const v of (w as World).hub.sessions()) {
          if (v.subs.length !== SUBS_PER_SESSION) throw new Error(`bench: session ${v.id} holds ${v.subs.length} subscriptions`);
        }
      } else {
        throw new Error(`bench: no step ${i}`);
      }
    },
  };
}
