// The simulation: one hub (the real core), the simulated robot, the scenario's clients (the real
// client library) and their links (the real binding code over simulated media), all on one
// kernel and one seed. Headless, `run()` goes to the scenario's end as fast as the host allows;
// the dashboard steps it in real time with `step(untilMs)` and watches through `hooks`.
//
// The client library is promise-based: whenever a promise may have settled, the kernel stops
// after the current event and `step` lets the microtasks run before virtual time moves on
// (Kernel.requestYield), so every continuation happens at the virtual instant that caused it.

import { loadCatalog, type CatalogIndex } from '../catalog/index.js';
import { DEFAULT_CATALOG } from '../catalog/default.js';
import { Tier } from '../catalog/schema.js';
import { saveCredentials } from '../hub/credentials.js';
import { EstopSource } from '../hub/estop-frame.js';
import { Hub } from '../hub/hub.js';
import { MemoryStore, type Log, type Random, type Store } from '../hub/ports.js';
import { SimClient, type ClientEnv } from './clients.js';
import { Kernel, SimClock, type Task, US_PER_MS, usOf } from './kernel.js';
import { Direction, LinkFactory, type Connection, type ConnectionEnv, type LinkParams, type LinkTap } from './links/index.js';
import { buildReport, lossyDuring, sharedAirImpaired, type Report } from './report.js';
import { Watch } from './invariants.js';
import { SimRobot } from './robot.js';
import { Playback, type PlaybackOptions } from './playback.js';
import type { ClientSpec, EventSpec, Scenario } from './scenario.js';

/** Observers the dashboard (or a test) attaches; all optional, all called synchronously. */
export interface SimHooks {
  /** After every hub tick. */
  onTick?(nowMs: number): void;
  /** A scenario event is applied. */
  onEvent?(event: EventSpec, nowMs: number): void;
  /** A link's congestion level changed. */
  onLevel?(link: string, level: number, nowMs: number): void;
  /** The hub logged something (session open/park/resume/close, estop, ...). */
  onLog?(code: string, a: number | undefined, b: number | undefined, nowMs: number): void;
  /** A connection opened. */
  onConnection?(conn: Connection, client: SimClient): void;
  /** A hub-side link of a connection, before the hub attaches it (a reconnect or an ESP-NOW re-admission adds more). */
  onTap?(tap: LinkTap, conn: Connection): void;
}

export interface SimOptions {
  /** Overrides the scenario's seed. */
  readonly seed?: number;
  readonly hooks?: SimHooks;
  /**
   * Where resume tokens come from. Absent: the scenario's seeded generator, for bit-for-bit
   * replay, which only a headless run with no listening port may use; the live simulator passes
   * a cryptographic source (docs/simulator.md "Resume tokens").
   */
  readonly random?: Random;
  /**
   * The hub's Store (the device's NVS), where the ESTOP latch and the credential table live.
   * Absent: one in memory for this run. `npm start` passes a file store so that the latch
   * survives a restart of the process (docs/operations.md).
   */
  readonly store?: Store;
  /**
   * Recorded telemetry the hub publishes at its recorded times, beside (or, with the robot's
   * rates at 0, instead of) the simulated robot's: `hubctl replay` (host-sim/playback.ts).
   */
  readonly playback?: PlaybackOptions;
  /** The hub's id (WELCOME, the fleet uplink's topics); absent: the hub's default. */
  readonly hubId?: string;
}

export interface LogRecord {
  readonly tMs: number;
  readonly code: string;
  readonly a: number | undefined;
  readonly b: number | undefined;
}

/** A change of a medium's loss (a `loss` event, or a profile's loss applied to a new connection). */
export interface LossChange {
  readonly tUs: number;
  readonly profile: string;
  /** The connection it was applied to; null: the profile as a whole. */
  readonly conn: Connection | null;
  readonly rate: number;
}

/** What set off an ESTOP, for the cause → latch part of its latency. */
export interface EstopCause {
  readonly tMs: number;
  readonly source: number;
  /** The client that sent it (source CLIENT). */
  readonly client: string | null;
}

export { MemoryStore };

const TICK = 1;
/** Hub log records a simulation keeps (a headless scenario stays far below; `npm start` runs on). */
export const LOG_KEEP = 100000;

export function credentialBytes(name: string): Uint8Array {
  return new TextEncoder().encode(name);
}

export class Simulation {
  readonly scenario: Scenario;
  readonly seed: number;
  readonly kernel: Kernel;
  readonly catalog: CatalogIndex;
  readonly store: Store;
  /** Where the hub's resume tokens come from: the kernel's seeded generator unless `random` was given. */
  readonly random: Random;
  readonly robot: SimRobot;
  /** The recording played back into the hub, when the options gave one. */
  readonly playback: Playback | null = null;
  readonly hub: Hub;
  readonly links: LinkFactory;
  readonly clients: SimClient[] = [];
  readonly connections: Connection[] = [];
  /** The hub's log, newest LOG_KEEP records at most (`logDropped` counts those let go). */
  readonly log: LogRecord[] = [];
  logDropped = 0;
  /** Records per code over the whole run. */
  readonly logCounts = new Map<string, number>();
  readonly estopCauses: EstopCause[] = [];
  /** Every loss change, for judging the ESTOP bound (report.ts: a medium that lost is not judged against it). */
  readonly lossChanges: LossChange[] = [];
  readonly hooks: SimHooks;
  /** The checks made after every instant (host-sim/invariants.ts). */
  readonly watch: Watch;
  private readonly byName = new Map<string, SimClient>();
  private readonly open = new Set<Connection>();
  private readonly tickUs: number;
  private readonly profiles: Map<string, LinkParams>;
  private readonly lossOverride = new Map<string, number>();
  private readonly lastLevels = new Map<Connection, number>();
  private stormCount = 0;
  /** The hub's heap in use as the `heap` event sets it (null: unknown, the hub's default). */
  private heapBytes: number | null = null;
  /** [ms, rung] at every change of the hub-wide ladder, and [ms, 1 open / 0 paused] of admission. */
  readonly ladderTimeline: [number, number][] = [];
  readonly admissionTimeline: [number, number][] = [];
  private finished = false;

  constructor(scenario: Scenario, options: SimOptions = {}) {
    this.scenario = scenario;
    this.seed = options.seed ?? scenario.seed;
    this.hooks = options.hooks ?? {};
    this.store = options.store ?? new MemoryStore();
    this.kernel = new Kernel(this.seed);
    this.random = options.random ?? this.kernel.rng;
    this.catalog = loadCatalog(DEFAULT_CATALOG);
    const kernel = this.kernel;
    const hubClock = new SimClock(kernel);
    saveCredentials(
      this.store,
      Object.entries(scenario.credentials).map(([name, tier]) => ({ credential: credentialBytes(name), tier: Tier[tier] })),
    );
    const log: Log = {
      event: (code, a, b) => {
        const tMs = kernel.nowUs / US_PER_MS;
        this.logCounts.set(code, (this.logCounts.get(code) ?? 0) + 1);
        if (this.log.length >= LOG_KEEP) {
          // A long live run keeps the newest records only; the counts stay whole.
          const n = LOG_KEEP >> 1;
          this.log.splice(0, n);
          this.logDropped += n;
        }
        this.log.push({ tMs, code, a, b });
        if (this.hooks.onLog) this.hooks.onLog(code, a, b, tMs);
      },
    };
    this.robot = new SimRobot(kernel, this.catalog, scenario.robot);
    const h = scenario.hub;
    this.hub = new Hub(
      { clock: hubClock, random: this.random, store: this.store, robot: this.robot, catalog: this.catalog, log, heap: () => (this.heapBytes === null ? NaN : this.heapBytes) },
      {
        slots: h.slots,
        staleTtlMs: h.staleTtlMs,
        deadmanMs: h.deadmanMs,
        capacityHz: h.capacityHz,
        neverShedBytes: h.neverShedBytes,
        anonymousTier: Tier[h.anonymousTier],
        ...(options.hubId !== undefined ? { hubId: options.hubId } : {}),
      },
    );
    this.profiles = new Map(Object.entries(scenario.links));
    const env: ConnectionEnv = {
      kernel,
      hub: this.hub,
      catalog: this.catalog,
      hubClock,
      fineClock: { now: () => kernel.nowUs / US_PER_MS },
      requestYield: () => kernel.requestYield(),
      tapped: (tap, conn) => {
        this.watch.tapped(tap, conn);
        if (this.hooks.onTap) this.hooks.onTap(tap, conn);
      },
      // sampleLate is judged where the ESTOP bound is: no loss on the medium, no impaired shared air.
      mediumClear: (conn, fromUs, toUs) => !lossyDuring(this, conn, fromUs, toUs) && !sharedAirImpaired(this, conn, fromUs, toUs),
    };
    this.links = new LinkFactory(env, this.profiles);
    this.watch = new Watch(this);
    this.robot.start(this.hub);
    if (options.playback !== undefined) {
      this.playback = new Playback(kernel, this.hub, this.catalog, options.playback);
      this.playback.start();
    }
    this.tickUs = usOf(h.tickMs);
    kernel.after(this.tickUs, this.tickTask, TICK);
    for (const spec of scenario.clients) this.addClient(spec);
    for (const e of scenario.events) kernel.timeout(usOf(e.atMs), () => this.apply(e));
  }

  get nowMs(): number {
    return this.kernel.nowUs / US_PER_MS;
  }

  client(name: string): SimClient | undefined {
    return this.byName.get(name);
  }

  private clientEnv(): ClientEnv {
    return {
      kernel: this.kernel,
      catalog: this.catalog,
      links: this.links,
      requestYield: () => this.kernel.requestYield(),
      opened: (conn, client) => this.opened(conn, client),
    };
  }

  private addClient(spec: ClientSpec): SimClient {
    const c = new SimClient(this.clientEnv(), spec, spec.credential ? credentialBytes(spec.credential) : undefined);
    this.clients.push(c);
    this.byName.set(spec.name, c);
    const now = this.kernel.nowUs;
    this.kernel.timeout(usOf(spec.startMs) - now, () => c.start());
    if (spec.stopMs !== null) this.kernel.timeout(usOf(spec.stopMs) - now, () => c.stop());
    return c;
  }

  private opened(conn: Connection, client: SimClient): void {
    this.connections.push(conn);
    this.open.add(conn);
    conn.onEnded = (c) => this.open.delete(c);
    const loss = this.lossOverride.get(conn.profile);
    if (loss !== undefined) {
      conn.setLoss(loss);
      this.lossChanges.push({ tUs: this.kernel.nowUs, profile: conn.profile, conn, rate: loss });
    }
    if (this.hooks.onConnection) this.hooks.onConnection(conn, client);
  }

  // ---------------------------------------------------------------- time

  private readonly tickTask: Task = { run: () => this.tick() };

  /** The hub's periodic tick, with the bindings' upkeep before it and the levels recorded after. */
  private tick(): void {
    this.kernel.after(this.tickUs, this.tickTask, TICK);
    const nowMs = this.nowMs;
    this.links.upkeep();
    for (const c of this.open) c.upkeep(nowMs);
    this.hub.tick();
    for (const c of this.open) {
      const tap = c.tap;
      if (!tap) continue;
      tap.observe(Math.floor(nowMs));
      const l = tap.levels.length > 0 ? (tap.levels[tap.levels.length - 1] as [number, number])[1] : 0;
      if (this.hooks.onLevel && this.lastLevels.get(c) !== l) {
        this.lastLevels.set(c, l);
        this.hooks.onLevel(tap.id, l, nowMs);
      }
    }
    this.recordHubState(Math.floor(nowMs));
    if (this.hooks.onTick) this.hooks.onTick(nowMs);
  }

  private recordHubState(tMs: number): void {
    const rung = this.hub.ladder.rung;
    const lastRung = this.ladderTimeline[this.ladderTimeline.length - 1];
    if (!lastRung ? rung !== 0 : lastRung[1] !== rung) this.ladderTimeline.push([tMs, rung]);
    const open = this.hub.ready() ? 1 : 0;
    const lastOpen = this.admissionTimeline[this.admissionTimeline.length - 1];
    if (!lastOpen ? open !== 1 : lastOpen[1] !== open) this.admissionTimeline.push([tMs, open]);
  }

  /** Runs virtual time up to `untilMs` (never past the scenario's end), letting promise continuations run as they become due. */
  async step(untilMs: number): Promise<void> {
    const until = usOf(Math.min(untilMs, this.scenario.durationMs));
    // One instant at a time, so that the watch looks after each (the same events in the same
    // order as one runUntil(until): a yield is honoured where it was asked for).
    const k = this.kernel;
    for (;;) {
      const next = k.nextUs;
      const to = next < until ? next : until;
      while (!k.runUntil(to)) {
        this.watch.after();
        await microtasks();
      }
      this.watch.after();
      if (to >= until) break;
    }
    await microtasks();
    this.watch.after();
  }

  /** Runs to the scenario's end and returns the report. `progress` is told each simulated second. */
  async run(progress?: (simMs: number) => void): Promise<Report> {
    const end = this.scenario.durationMs;
    for (let t = Math.min(1000, end); ; t = Math.min(t + 1000, end)) {
      await this.step(t);
      if (progress) progress(t);
      if (t >= end) break;
    }
    return this.report();
  }

  report(): Report {
    if (!this.finished) {
      this.finished = true;
      for (const c of this.open) if (c.tap) c.tap.observe(Math.floor(this.nowMs));
    }
    return buildReport(this);
  }

  // ---------------------------------------------------------------- scenario events

  private apply(e: EventSpec): void {
    if (this.hooks.onEvent) this.hooks.onEvent(e, this.nowMs);
    const c = 'client' in e && e.client !== undefined ? this.byName.get(e.client) : undefined;
    switch (e.type) {
      case 'take-control':
        c?.takeControl(e.retryForMs);
        return;
      case 'release-control':
        c?.releaseControl();
        return;
      case 'intent':
        c?.intent(e.channel, e.args);
        return;
      case 'cmd-vel':
        c?.cmdVel(e.durationMs, e.rateHz);
        return;
      case 'trajectory':
        c?.trajectory(e.durationMs, e.meanPerS, e.peakEveryMs, e.peakCount);
        return;
      case 'subscribe':
        c?.subscribe(e.subscriptions);
        return;
      case 'unsubscribe':
        c?.unsubscribe(e.channels);
        return;
      case 'stall':
        for (const t of this.targets(e)) t.stall(Direction[e.direction], e.durationMs);
        return;
      case 'partition':
        for (const t of this.targets(e)) t.partition(e.durationMs);
        return;
      case 'loss':
        if (e.link !== undefined) {
          this.lossOverride.set(e.link, e.rate);
          this.links.medium(e.link)?.setLoss(e.rate);
          this.lossChanges.push({ tUs: this.kernel.nowUs, profile: e.link, conn: null, rate: e.rate });
        }
        for (const t of this.targets(e)) {
          t.setLoss(e.rate);
          this.lossChanges.push({ tUs: this.kernel.nowUs, profile: t.profile, conn: t, rate: e.rate });
        }
        return;
      case 'disconnect':
        c?.connection?.disconnect(e.mode);
        return;
      case 'reconnect':
        if (!c) return;
        c.profile = e.link;
        c.connection?.disconnect(e.mode);
        return;
      case 'heap':
        this.heapBytes = e.bytes;
        return;
      case 'button':
        if (e.held) this.estopCauses.push({ tMs: this.nowMs, source: EstopSource.HUB_BUTTON, client: null });
        this.hub.setButton(e.held);
        return;
      case 'estop':
        if (!c) return;
        this.estopCauses.push({ tMs: this.nowMs, source: EstopSource.CLIENT, client: c.name });
        c.estop();
        return;
      case 'estop-clear':
        c?.estopClear();
        return;
      case 'join-storm': {
        const k = ++this.stormCount;
        for (let i = 0; i < e.count; i++) {
          const startMs = this.nowMs + i * e.spreadMs;
          this.addClient({
            name: `storm${k}-${i + 1}`,
            role: 'viewer',
            link: e.link,
            credential: e.credential,
            startMs,
            stopMs: e.durationMs === null ? null : startMs + e.durationMs,
            subscriptions: e.subscriptions,
            publications: [],
            reconnect: true,
          });
        }
        return;
      }
      case 'flood':
        c?.flood(e.kind, e.ratePerS, e.durationMs, e.channel);
        return;
    }
  }

  /** The open connections an event names: one client's, or every one over a link profile. */
  private targets(e: { client?: string; link?: string }): Connection[] {
    if (e.client !== undefined) {
      const conn = this.byName.get(e.client)?.connection;
      return conn ? [conn] : [];
    }
    const out: Connection[] = [];
    for (const c of this.open) if (c.profile === e.link) out.push(c);
    return out;
  }
}

/** Lets every pending promise continuation run (a macrotask turn drains the microtask queue). */
function microtasks(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
