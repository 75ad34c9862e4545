// The simulation in real time, for `npm start` and its dashboard: one Simulation (host-sim/sim.ts)
// stepped by the wall clock, watched without changing what it does. It records, for the page,
// the robot's raw samples as they enter the hub, the samples each simulated client received,
// every GRANT a client received, the hub's log and the scenario's events; it presses the hub's
// ESTOP button, asks the control owner to clear, and can force one congestion level onto every
// link so that the live §10.4 counters move.
//
// When the scenario's scripted part is over the kernel runs on (the hub, the robot and the
// clients go on, with no more scripted events), so external clients stay connected.

import { performance } from 'node:perf_hooks';
import { CHANNEL_CLASS_NAMES, ChannelClass, Direction, PRIORITY_NAMES, STREAM_KIND_NAMES, StreamKind, TIER_NAMES } from '../../catalog/schema.js';
import type { HubAttach } from '../../bindings/link.js';
import { EstopSource } from '../../hub/estop-frame.js';
import type { Link, LinkSink, Random, Store } from '../../hub/ports.js';
import type { PlaybackOptions } from '../playback.js';
import { SESSION_STATE_NAMES } from '../../hub/session.js';
import type { DataFrame } from '../../hub/frames.js';
import type { SimClient } from '../clients.js';
import { US_PER_MS, usOf } from '../kernel.js';
import { ForwardingLink } from '../links/forwarding.js';
import type { LinkTap } from '../links/index.js';
import type { EventSpec, Scenario } from '../scenario.js';
import { Simulation } from '../sim.js';
import { describeHubLog } from './words.js';
import type { ChannelMeta, ClientMeta, LogLine, Sample, SessionMsg, StateMsg } from './messages.js';

/** Wall-clock period of the stepping loop. */
export const STEP_MS = 10;
/** Behind real time by more than this, the simulation gives up catching up (it never bursts). */
export const MAX_LAG_MS = 500;
/** Samples kept per channel (or client and channel) between two drains. */
export const PENDING_LIMIT = 2000;
/** Log lines kept between two drains. */
const LOG_LIMIT = 200;

export const ESTOP_SOURCE_NAMES = Object.freeze(['client', 'hub-button', 'deadman', 'watchdog', 'robot', 'fleet'] as const);

export interface Drained {
  readonly raw: Map<number, number[][]>;
  readonly delivered: Map<string, Map<number, number[][]>>;
  readonly log: LogLine[];
}

interface GrantSeen {
  count: number;
  lastMs: number | null;
}

function push(list: number[][], s: number[]): void {
  if (list.length >= PENDING_LIMIT) list.shift();
  list.push(s);
}

function microtasks(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * A Link whose level the dashboard may override: what the hub reads (the shedding table, the
 * re-grant controller) is the forced level; everything else is the binding's own.
 */
export class LevelOverrideLink extends ForwardingLink {
  constructor(
    inner: Link,
    private readonly forced: () => number | null,
  ) {
    super(inner);
  }
  override get level(): number {
    const f = this.forced();
    return f === null ? this.inner.level : f;
  }
}

export class LiveSim {
  readonly sim: Simulation;
  readonly scenario: Scenario;
  /** Counts restarts, so a page can tell one run from the next. */
  readonly run: number;
  /** The level forced onto every link (0–3), or null: each link's own detector decides. */
  forced: number | null = null;
  scriptEnded = false;
  /** Simulated ms given up because the host could not keep up. */
  lagMs = 0;
  onScriptEnd: (() => void) | null = null;
  private raw = new Map<number, number[][]>();
  private delivered = new Map<string, Map<number, number[][]>>();
  private log: LogLine[] = [];
  /** The last LOG_LIMIT lines, for a page that connects later. */
  readonly history: LogLine[] = [];
  private logSeq = 0;
  private readonly grantsSeen = new Map<string, GrantSeen>();
  private readonly watched = new WeakSet<object>();
  private readonly sampled: boolean[] = [];
  private running = false;
  private loopDone: Promise<void> = Promise.resolve();
  private wall0 = 0;
  private sim0 = 0;

  constructor(scenario: Scenario, seed: number | undefined, run: number, ports: { readonly random: Random; readonly store: Store; readonly playback?: PlaybackOptions }) {
    this.scenario = scenario;
    this.run = run;
    this.sim = new Simulation(scenario, {
      ...(seed !== undefined ? { seed } : {}),
      random: ports.random,
      store: ports.store,
      ...(ports.playback !== undefined ? { playback: ports.playback } : {}),
      hooks: {
        onLog: (code, a, b, tMs) => this.note(tMs, `hub: ${describeHubLog(code, a, b, (id) => this.clientOfSession(id))} [${code}]`),
        onEvent: (e, tMs) => this.note(tMs, `scenario: ${describeEvent(e)}`),
      },
    });
    for (const ch of this.sim.catalog.channels) {
      this.sampled[ch.id] = ch.direction === Direction.telemetry && (ch.cls === ChannelClass.STREAM || ch.cls === ChannelClass.STATE);
    }
    this.watchHub();
    this.maintain();
  }

  // ---------------------------------------------------------------- observation

  /** The robot's samples as they enter the hub (the raw source), copied out of its reused buffer. */
  private watchHub(): void {
    const hub = this.sim.hub;
    const publish = hub.publishSample.bind(hub);
    hub.publishSample = (channelId: number, t: number, values: Float64Array, count: number): void => {
      if (this.sampled[channelId]) {
        const s = [t];
        for (let i = 0; i < count && i < values.length; i++) s.push(values[i] as number);
        let list = this.raw.get(channelId);
        if (!list) this.raw.set(channelId, (list = []));
        push(list, s);
      }
      publish(channelId, t, values, count);
    };
  }

  /** What one simulated client receives, and each GRANT it is told; chained after the simulator's own handlers. */
  private watchClient(c: SimClient): void {
    const lib = c.lib;
    const onData = lib.onData;
    lib.onData = (channelId: number, f: DataFrame): void => {
      if (onData) onData(channelId, f);
      if (!this.sampled[channelId]) return;
      let byCh = this.delivered.get(c.name);
      if (!byCh) this.delivered.set(c.name, (byCh = new Map()));
      let list = byCh.get(channelId);
      if (!list) byCh.set(channelId, (list = []));
      push(list, [f.t, f.gap ? 1 : 0, ...f.values]);
    };
    const onGrant = lib.onGrant;
    lib.onGrant = (g) => {
      if (onGrant) onGrant(g);
      const seen = this.grantsSeen.get(c.name) ?? { count: 0, lastMs: null };
      seen.count++;
      seen.lastMs = this.sim.nowMs;
      this.grantsSeen.set(c.name, seen);
    };
  }

  /** Every link the hub reads a level from answers the forced level while one is set. */
  private overrideLevel(tap: LinkTap): void {
    tap.levelOverride = () => this.forced;
  }

  /** Clients (a join storm adds some) and links (a reconnect adds some) appear as the run goes. */
  private maintain(): void {
    for (const c of this.sim.clients) {
      if (this.watched.has(c)) continue;
      this.watched.add(c);
      this.watchClient(c);
    }
    for (const conn of this.sim.connections) {
      for (const tap of conn.taps) {
        if (this.watched.has(tap)) continue;
        this.watched.add(tap);
        this.overrideLevel(tap);
      }
    }
  }

  /** The simulated client on session `id` now, or null (an external client, or none). */
  clientOfSession(id: number): string | null {
    if (!this.sim) return null;
    for (const c of this.sim.clients) if (c.lib.sessionId === id) return c.name;
    return null;
  }

  /** A line in the page's log at the current simulated time. */
  noteLine(text: string): void {
    this.note(this.sim.nowMs, text);
  }

  private note(tMs: number, text: string): void {
    const line: LogLine = [++this.logSeq, tMs, text];
    if (this.log.length >= LOG_LIMIT) this.log.shift();
    this.log.push(line);
    if (this.history.length >= LOG_LIMIT) this.history.shift();
    this.history.push(line);
  }

  /** A HubAttach for external listeners: their links, too, answer the forced level. */
  attachExternal(): HubAttach {
    return { attach: (link: Link): LinkSink => this.sim.hub.attach(new LevelOverrideLink(link, () => this.forced)) };
  }

  // ---------------------------------------------------------------- time

  /** Starts stepping the simulation by the wall clock. */
  start(): void {
    if (this.running) return;
    this.running = true;
    this.wall0 = performance.now();
    this.sim0 = this.sim.nowMs;
    this.loopDone = this.loop();
  }

  async stop(): Promise<void> {
    this.running = false;
    await this.loopDone;
  }

  private async loop(): Promise<void> {
    const duration = this.scenario.durationMs;
    while (this.running) {
      const target = this.sim0 + (performance.now() - this.wall0);
      if (target > this.sim.nowMs) await this.advance(target);
      this.maintain();
      const lag = this.sim0 + (performance.now() - this.wall0) - this.sim.nowMs;
      if (lag > MAX_LAG_MS) {
        // Running slower than real time: time in the simulation is given up, never caught up in a burst.
        this.sim0 -= lag;
        this.lagMs += lag;
      }
      if (!this.scriptEnded && this.sim.nowMs >= duration) {
        this.scriptEnded = true;
        this.note(this.sim.nowMs, `scenario ${this.scenario.name}: its scripted ${duration / 1000} s are over; running on`);
        if (this.onScriptEnd) this.onScriptEnd();
      }
      if (this.running) await sleep(STEP_MS);
    }
  }

  /** Virtual time to `targetMs`: the simulation's own step within the script, the kernel itself after it. */
  private async advance(targetMs: number): Promise<void> {
    const sim = this.sim;
    const end = this.scenario.durationMs;
    if (sim.nowMs < end) await sim.step(Math.min(targetMs, end));
    if (targetMs <= end) return;
    const until = usOf(targetMs);
    while (!sim.kernel.runUntil(until)) await microtasks();
    await microtasks();
  }

  // ---------------------------------------------------------------- actions

  /** A momentary press of the hub's own ESTOP button (§11): latches; releasing it allows a clear. */
  pressEstop(): void {
    const sim = this.sim;
    sim.estopCauses.push({ tMs: sim.nowMs, source: EstopSource.HUB_BUTTON, client: null });
    this.note(sim.nowMs, 'dashboard: ESTOP button pressed');
    sim.hub.setButton(true);
    sim.hub.setButton(false);
  }

  /** The simulated client that owns control (only it may clear, §11.2), if any. */
  clearer(): SimClient | null {
    for (const c of this.sim.clients) if (c.lib.state === 'active' && c.lib.ownsControl) return c;
    return null;
  }

  /** The simulated client whose ESTOP latched the hub now, when a client's did and the simulation knows which. */
  private latchedBy(): string | null {
    const hub = this.sim.hub;
    if (!hub.latch.latched || hub.latch.source !== EstopSource.CLIENT) return null;
    const causes = this.sim.estopCauses;
    const last = causes[causes.length - 1];
    return last && last.source === EstopSource.CLIENT ? last.client : null;
  }

  /** Asks the control owner to clear the latch; false when no simulated client owns control. */
  requestClear(): boolean {
    const c = this.clearer();
    if (!c) return false;
    this.note(this.sim.nowMs, `dashboard: ${c.name} (control owner) asked to clear the ESTOP`);
    c.estopClear();
    return true;
  }

  /** Asks the control owner to arm (§11.2: a clear leaves the hub disarmed); false without a simulated owner. */
  requestArm(): boolean {
    const c = this.clearer();
    if (!c) return false;
    this.note(this.sim.nowMs, `dashboard: ${c.name} (control owner) asked to arm`);
    c.intent('arm', []);
    return true;
  }

  force(level: number | null): void {
    this.forced = level === null ? null : Math.max(0, Math.min(3, Math.floor(level)));
    this.note(this.sim.nowMs, this.forced === null ? 'dashboard: links back to their own congestion levels' : `dashboard: level ${this.forced} forced onto every link`);
  }

  // ---------------------------------------------------------------- what the page is told

  /** Takes everything recorded since the last call. */
  drain(): Drained {
    const d: Drained = { raw: this.raw, delivered: this.delivered, log: this.log };
    this.raw = new Map();
    this.delivered = new Map();
    this.log = [];
    return d;
  }

  channels(): ChannelMeta[] {
    return this.sim.catalog.channels.map((ch) => ({
      id: ch.id,
      name: ch.name,
      cls: CHANNEL_CLASS_NAMES[ch.cls] ?? String(ch.cls),
      clsCode: ch.cls,
      kind: ch.kind === StreamKind.samples || ch.kind === StreamKind.segments ? STREAM_KIND_NAMES[ch.kind] : null,
      kindCode: ch.kind,
      priority: PRIORITY_NAMES[ch.priority] ?? String(ch.priority),
      critical: ch.critical,
      telemetry: ch.direction === Direction.telemetry,
      fields: ch.def.fields.map((f) => f.name),
      units: ch.def.fields.map((f) => f.unit),
    }));
  }

  clients(): ClientMeta[] {
    return this.sim.clients.map((c) => ({ name: c.name, role: c.spec.role, link: c.profile, binding: this.scenario.links[c.profile]?.binding ?? '?' }));
  }

  sessions(): SessionMsg[] {
    const owners = new Map<number, SimClient>();
    for (const c of this.sim.clients) for (const id of c.sessionIds) owners.set(id, c);
    const hub = this.sim.hub;
    return hub.sessions().map((s) => {
      const c = owners.get(s.id);
      const g = c ? this.grantsSeen.get(c.name) : undefined;
      return {
        id: s.id,
        client: c ? c.name : null,
        state: SESSION_STATE_NAMES[s.state] ?? String(s.state),
        tier: TIER_NAMES[s.tier] ?? String(s.tier),
        binding: s.binding,
        level: s.level,
        owner: hub.controlOwner === s.id,
        subs: s.subs.map((x) => ({ channel: x.channelId, wishHz: x.wishHz, grantedHz: x.grantedHz, priority: x.priority })),
        grants: g ? g.count : 0,
        lastGrantMs: g ? g.lastMs : null,
      };
    });
  }

  /** The page's state message; samples only for the channels in `watch`. */
  state(d: Drained, watch: ReadonlySet<number>): StateMsg {
    const sim = this.sim;
    const hub = sim.hub;
    const k = hub.counters;
    const pose = sim.robot.pose;
    const raw: Record<string, Sample[]> = {};
    for (const [ch, list] of d.raw) if (watch.has(ch)) raw[ch] = list;
    const delivered: Record<string, Record<string, Sample[]>> = {};
    for (const [client, byCh] of d.delivered) {
      const o: Record<string, Sample[]> = {};
      let any = false;
      for (const [ch, list] of byCh) {
        if (!watch.has(ch)) continue;
        o[ch] = list;
        any = true;
      }
      if (any) delivered[client] = o;
    }
    const clearer = this.clearer();
    return {
      type: 'state',
      run: this.run,
      simMs: sim.nowMs,
      scriptEnded: this.scriptEnded,
      robot: { stopped: sim.robot.isStopped, stops: sim.robot.stats.stops, x: pose.x, y: pose.y, theta: pose.theta, v: pose.v, w: pose.w },
      latch: {
        latched: hub.latch.latched,
        armed: hub.armed,
        source: ESTOP_SOURCE_NAMES[hub.latch.source] ?? String(hub.latch.source),
        button: hub.buttonAsserting,
        by: this.latchedBy(),
        ownerSession: hub.controlOwner,
        clearer: clearer ? clearer.name : null,
      },
      rows: Array.from(k.rows),
      health: { rung: hub.ladder.rung, ready: hub.ready(), report: hub.healthReport() },
      totals: {
        delivered: k.delivered,
        rateGated: k.rateGated,
        decimated: k.decimated,
        conflated: k.conflated,
        shedDrops: k.shedDrops,
        egressDrops: k.egressDrops,
        parks: k.parks,
        resumes: k.resumes,
        estops: k.estops,
        grantsAnnounced: k.grantsAnnounced,
        lagMs: this.lagMs,
      },
      sessions: this.sessions(),
      forced: this.forced,
      raw,
      delivered,
      log: d.log,
    };
  }

  /** Simulated time in whole ms: the external listeners' clock, the hub's own. */
  hubNowMs(): number {
    return Math.floor(this.sim.kernel.nowUs / US_PER_MS);
  }
}

function describeEvent(e: EventSpec): string {
  const who = 'client' in e && e.client !== undefined ? ` ${e.client}` : 'link' in e && e.link !== undefined ? ` link ${e.link}` : '';
  switch (e.type) {
    case 'button':
      return `hub ESTOP button ${e.held ? 'pressed' : 'released'}`;
    case 'loss':
      return `loss ${Math.round(e.rate * 100)} %${who}`;
    case 'stall':
    case 'partition':
      return `${e.type}${who} for ${e.durationMs} ms`;
    case 'intent':
      return `intent ${e.channel}${who}`;
    case 'reconnect':
      return `reconnect${who} over ${e.link}`;
    default:
      return `${e.type}${who}`;
  }
}
