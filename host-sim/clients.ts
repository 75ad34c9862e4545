// Simulated clients: the project's client library (client/core.ts, HubClient) given the simulator's
// transport, clock, timers and PRNG, with the behaviour of an operator console, a teleop joystick,
// a trajectory planner, a scope, a logger, a viewer or a misbehaving flooder on top. What a
// behaviour does over time comes from the scenario's events (take control, drive, plan, ESTOP,
// flood); what each client received is counted here for the report (grants over time, sample
// ages, NACKs, intent outcomes).

import type { CatalogIndex } from '../catalog/index.js';
import { ChannelClass, Priority } from '../catalog/schema.js';
import { HubClient, HubClientError, type ClientState } from '../client/core.js';
import type { ClientClock } from '../client/transport.js';
import { CborWriter } from '../hub/cbor.js';
import { encodeFrame, FrameType, type DataFrame, type GrantFrame, type NackFrame, type SubWish } from '../hub/frames.js';
import { nackName } from '../hub/nack.js';
import type { EstopFrame } from '../hub/estop-frame.js';
import { type Kernel, type Task, US_PER_MS } from './kernel.js';
import type { Connection, LinkFactory } from './links/index.js';
import type { ClientSpec, SubscriptionSpec } from './scenario.js';
import { Samples } from './stats.js';

export interface ClientEnv {
  readonly kernel: Kernel;
  readonly catalog: CatalogIndex;
  readonly links: LinkFactory;
  requestYield(): void;
  /** A new connection of this client (the simulation keeps every one for the report). */
  opened(conn: Connection, client: SimClient): void;
}

/** What one client received on one channel. */
export class SubStats {
  frames = 0;
  gaps = 0;
  dropped = 0;
  /** Age at arrival (client's receipt − the sample's t) of STREAM and STATE samples, ms. */
  readonly ages = new Samples();
  /** Same for EVENTs, which may wait in their bounded queue (§9.4). */
  readonly eventAges = new Samples();
  /** Grants as the client was told them: [tMs, session, grantedHz, priority]; -1 priority: unsubscribed. */
  readonly grants: [number, number, number, number][] = [];
}

export class IntentStats {
  sent = 0;
  echoed = 0;
  /** Answered by ECHO with a non-zero result or by NACK: by code name. */
  readonly refused = new Map<string, number>();
  timeouts = 0;
  lost = 0;
  /** Not sent: over the client's own budget. */
  held = 0;
  readonly latencyMs = new Samples();
}

export function wishesOf(specs: readonly SubscriptionSpec[], catalog: CatalogIndex): SubWish[] {
  return specs.map((s) => {
    const ch = catalog.byName(s.channel);
    if (!ch) throw new Error(`no channel ${s.channel}`);
    const w: SubWish = { channelId: ch.id, wishedRateHz: s.rateHz };
    if (s.priority !== undefined) w.priority = Priority[s.priority];
    return w;
  });
}

const ACT_CMD_VEL = 1;
const ACT_TRAJ_ARRIVAL = 2;
const ACT_TRAJ_PEAK = 3;
const ACT_TRAJ_FLUSH = 4;
const ACT_FLOOD = 5;
const ACT_TRAJ_PEAK_STEP = 6;

const CONTROL_RETRY_MS = 250;
const TRAJ_FLUSH_MS = 40;
const TRAJ_SEGMENT_S = 0.3;

export class SimClient implements Task {
  readonly name: string;
  readonly spec: ClientSpec;
  readonly lib: HubClient;
  /** The link profile the next connection uses (a reconnect event moves it). */
  profile: string;
  readonly connections: Connection[] = [];
  readonly subs = new Map<number, SubStats>();
  readonly nacks = new Map<string, number>();
  readonly errors = new Map<string, number>();
  readonly states: [number, ClientState][] = [];
  readonly sessionIds: number[] = [];
  readonly intents = new IntentStats();
  estopsAsserted = 0;
  estopsCleared = 0;
  controlGained = 0;
  cmdVelSent = 0;
  segmentsSent = 0;
  segmentsHeld = 0;
  floodSent = 0;
  private readonly env: ClientEnv;
  private readonly kernel: Kernel;
  private readonly catalog: CatalogIndex;
  private pending = 0;
  private readonly lastGrant = new Map<number, string>();
  // Activities.
  private cmdVelUntilUs = 0;
  private cmdVelRateHz = 50;
  private cmdVelOn = false;
  private trajUntilUs = 0;
  private trajMeanPerS = 3;
  private trajPeakEveryUs = 0;
  private trajPeakLeft = 0;
  private trajPeakCount = 0;
  private trajOn = false;
  private trajFlushing = false;
  private trajN = 0;
  private readonly backlog: number[][] = [];
  private floodUntilUs = 0;
  private floodPeriodUs = 0;
  private floodKind: 'intents' | 'bundles' | 'malformed' = 'intents';
  private floodChannel = 0;
  private floodOn = false;
  private floodId = 1_000_000_000;
  private readonly rawW = new CborWriter(new Uint8Array(1100));
  private readonly ids: { cmdVel: number; trajectory: number };

  constructor(env: ClientEnv, spec: ClientSpec, credential: Uint8Array | undefined) {
    this.env = env;
    this.kernel = env.kernel;
    this.catalog = env.catalog;
    this.spec = spec;
    this.name = spec.name;
    this.profile = spec.link;
    const kernel = env.kernel;
    this.ids = { cmdVel: env.catalog.byName('cmd_vel')?.id ?? 0, trajectory: env.catalog.byName('trajectory')?.id ?? 0 };
    const clock: ClientClock = {
      now: () => kernel.nowUs / US_PER_MS,
      setTimer: (ms, fn) =>
        kernel.timeout(ms * US_PER_MS, () => {
          fn();
          // A timer may settle the library's promises; their continuations run at this instant.
          env.requestYield();
        }),
      clearTimer: (h) => {
        kernel.cancel(h as number);
      },
    };
    const pubs = spec.publications.map((p) => {
      const ch = env.catalog.byName(p.channel);
      if (!ch) throw new Error(`no channel ${p.channel}`);
      return p.burst !== undefined ? { channelId: ch.id, wishedRateHz: p.rateHz, burst: p.burst } : { channelId: ch.id, wishedRateHz: p.rateHz };
    });
    this.lib = new HubClient({
      name: spec.name,
      ...(credential ? { credential } : {}),
      subscriptions: wishesOf(spec.subscriptions, env.catalog),
      publications: pubs,
      transport: () => {
        const conn = env.links.open(this.name, this.profile);
        this.connections.push(conn);
        env.opened(conn, this);
        env.requestYield();
        return Promise.resolve(conn.transport);
      },
      clock,
      random: () => kernel.rng.float(),
      catalog: env.catalog,
      reconnect: spec.reconnect,
      onState: (s) => this.onState(s),
      onGrant: (g) => this.onGrant(g),
      onData: (ch, f) => this.onData(ch, f),
      onEstop: (e) => this.onEstop(e),
      onNack: (f) => this.onNack(f),
      onError: (e) => this.count(this.errors, e.code),
      onFrame: () => {
        if (this.pending > 0) env.requestYield();
      },
    });
  }

  /** The connection in use, if any. */
  get connection(): Connection | null {
    const c = this.connections[this.connections.length - 1];
    return c && !c.ended ? c : null;
  }

  private nowMs(): number {
    return this.kernel.nowUs / US_PER_MS;
  }

  private count(m: Map<string, number>, k: string): void {
    m.set(k, (m.get(k) ?? 0) + 1);
  }

  /** Follows a promise of the library; its continuation runs at the virtual instant it settles. */
  private track<T>(p: Promise<T>, ok: (v: T) => void, fail: (e: unknown) => void): void {
    this.pending++;
    this.env.requestYield();
    p.then(
      (v) => {
        this.pending--;
        ok(v);
      },
      (e: unknown) => {
        this.pending--;
        fail(e);
      },
    );
  }

  // ---------------------------------------------------------------- what the library reports

  private onState(s: ClientState): void {
    this.states.push([this.nowMs(), s]);
    if (s === 'active' && this.sessionIds[this.sessionIds.length - 1] !== this.lib.sessionId) this.sessionIds.push(this.lib.sessionId);
  }

  private onGrant(g: GrantFrame): void {
    if (!g.subGrants) return;
    const t = this.nowMs();
    const session = this.lib.sessionId;
    const seen = new Set<number>();
    for (const sg of g.subGrants) {
      seen.add(sg.channelId);
      const key = `${session}/${sg.grantedRateHz}/${sg.priority}`;
      if (this.lastGrant.get(sg.channelId) === key) continue;
      this.lastGrant.set(sg.channelId, key);
      this.stats(sg.channelId).grants.push([t, session, sg.grantedRateHz, sg.priority]);
    }
    for (const [ch, key] of this.lastGrant) {
      if (seen.has(ch) || key.endsWith('/-1')) continue;
      const k = `${session}/0/-1`;
      this.lastGrant.set(ch, k);
      this.stats(ch).grants.push([t, session, 0, -1]);
    }
  }

  stats(channelId: number): SubStats {
    let s = this.subs.get(channelId);
    if (!s) {
      s = new SubStats();
      this.subs.set(channelId, s);
    }
    return s;
  }

  private onData(channelId: number, f: DataFrame): void {
    const s = this.stats(channelId);
    s.frames++;
    if (f.gap) s.gaps++;
    if (f.dropped) s.dropped += f.dropped;
    const age = this.nowMs() - f.t;
    const ch = this.catalog.byId(channelId);
    if (ch && ch.cls === ChannelClass.EVENT) s.eventAges.add(age);
    else s.ages.add(age);
  }

  private onEstop(e: EstopFrame): void {
    if (e.kind === 1) this.estopsAsserted++;
    else this.estopsCleared++;
    if (this.pending > 0) this.env.requestYield();
  }

  private onNack(f: NackFrame): void {
    this.count(this.nacks, nackName(f.code) ?? `code${f.code}`);
  }

  // ---------------------------------------------------------------- lifecycle

  start(): void {
    this.track(
      this.lib.connect(),
      () => undefined,
      (e: unknown) => this.count(this.errors, e instanceof HubClientError ? `connect-${e.code}` : 'connect'),
    );
  }

  stop(): void {
    this.cmdVelOn = this.trajOn = this.floodOn = false;
    this.lib.close();
    this.env.requestYield();
  }

  // ---------------------------------------------------------------- behaviours (scenario events)

  takeControl(retryForMs: number): void {
    const deadline = this.kernel.nowUs + retryForMs * US_PER_MS;
    const attempt = (): void => {
      if (this.lib.ownsControl) return;
      const retry = (): void => {
        if (this.kernel.nowUs + CONTROL_RETRY_MS * US_PER_MS <= deadline) this.kernel.timeout(CONTROL_RETRY_MS * US_PER_MS, attempt);
      };
      if (this.lib.state !== 'active') {
        retry();
        return;
      }
      this.intents.sent++;
      const sentUs = this.kernel.nowUs;
      this.track(
        this.lib.takeControl(),
        (echo) => {
          this.intentAnswered(sentUs, echo.result);
          if (echo.result === 0) this.controlGained++;
          else retry();
        },
        (e) => {
          this.intentFailed(e);
          retry();
        },
      );
    };
    attempt();
  }

  releaseControl(): void {
    if (this.lib.state !== 'active') return;
    this.intents.sent++;
    const sentUs = this.kernel.nowUs;
    this.track(
      this.lib.releaseControl(),
      (echo) => this.intentAnswered(sentUs, echo.result),
      (e) => this.intentFailed(e),
    );
  }

  intent(channel: string, args: readonly (number | string)[]): void {
    const ch = this.catalog.byName(channel);
    if (!ch || this.lib.state !== 'active') return;
    this.intents.sent++;
    const sentUs = this.kernel.nowUs;
    this.track(
      this.lib.intent(ch.id, args),
      (echo) => this.intentAnswered(sentUs, echo.result),
      (e) => this.intentFailed(e),
    );
  }

  private intentAnswered(sentUs: number, result: number): void {
    this.intents.latencyMs.add((this.kernel.nowUs - sentUs) / US_PER_MS);
    if (result === 0) this.intents.echoed++;
    else this.count(this.intents.refused, nackName(result) ?? `code${result}`);
  }

  private intentFailed(e: unknown): void {
    if (!(e instanceof HubClientError)) {
      this.count(this.errors, 'intent');
      return;
    }
    if (e.code === 'NACK') this.count(this.intents.refused, nackName(e.nack) ?? `code${e.nack}`);
    else if (e.code === 'TIMEOUT') this.intents.timeouts++;
    else if (e.code === 'LOST') this.intents.lost++;
    else if (e.code === 'REFUSED') this.intents.held++;
    else this.count(this.errors, `intent-${e.code}`);
  }

  subscribe(specs: readonly SubscriptionSpec[]): void {
    this.track(
      this.lib.subscribe(wishesOf(specs, this.catalog)),
      () => undefined,
      (e) => this.count(this.errors, e instanceof HubClientError ? `subscribe-${e.code}` : 'subscribe'),
    );
  }

  unsubscribe(channels: readonly string[]): void {
    const ids = channels.map((n) => this.catalog.byName(n)?.id ?? 0).filter((x) => x > 0);
    this.track(
      this.lib.unsubscribe(ids),
      () => undefined,
      (e) => this.count(this.errors, e instanceof HubClientError ? `unsubscribe-${e.code}` : 'unsubscribe'),
    );
  }

  estop(): void {
    this.lib.estop();
  }

  estopClear(): void {
    if (this.lib.state !== 'active') return;
    this.track(
      this.lib.clearEstop(),
      () => undefined,
      (e) => this.count(this.errors, e instanceof HubClientError ? `estop-clear-${e.code}` : 'estop-clear'),
    );
  }

  /** Teleop: cmd_vel at `rateHz` (never above the grant) while this client owns control and nothing is latched. */
  cmdVel(durationMs: number, rateHz: number): void {
    this.cmdVelUntilUs = this.kernel.nowUs + durationMs * US_PER_MS;
    this.cmdVelRateHz = rateHz;
    if (!this.cmdVelOn) {
      this.cmdVelOn = true;
      this.kernel.after(0, this, ACT_CMD_VEL);
    }
  }

  /** A planner: segments at `meanPerS` (Poisson) with a peak of `peakCount` in one second every `peakEveryMs`. */
  trajectory(durationMs: number, meanPerS: number, peakEveryMs: number, peakCount: number): void {
    this.trajUntilUs = this.kernel.nowUs + durationMs * US_PER_MS;
    this.trajMeanPerS = meanPerS;
    this.trajPeakEveryUs = peakEveryMs * US_PER_MS;
    this.trajPeakCount = peakCount;
    if (this.trajOn) return;
    this.trajOn = true;
    this.kernel.after(this.kernel.rng.exp(1000 / meanPerS) * US_PER_MS, this, ACT_TRAJ_ARRIVAL);
    if (this.trajPeakEveryUs > 0 && peakCount > 0) this.kernel.after(this.trajPeakEveryUs, this, ACT_TRAJ_PEAK);
  }

  /** Misbehaviour, past the library: raw frames at `ratePerS` on the current transport. */
  flood(kind: 'intents' | 'bundles' | 'malformed', ratePerS: number, durationMs: number, channel: string): void {
    this.floodKind = kind;
    this.floodPeriodUs = US_PER_MS * (1000 / ratePerS);
    this.floodUntilUs = this.kernel.nowUs + durationMs * US_PER_MS;
    this.floodChannel = this.catalog.byName(channel)?.id ?? 0;
    if (!this.floodOn) {
      this.floodOn = true;
      this.kernel.after(0, this, ACT_FLOOD);
    }
  }

  run(kind: number): void {
    const now = this.kernel.nowUs;
    switch (kind) {
      case ACT_CMD_VEL: {
        if (now >= this.cmdVelUntilUs) {
          this.cmdVelOn = false;
          return;
        }
        const g = this.lib.pubGrants.get(this.ids.cmdVel);
        const hz = g && g.grantedRateHz > 0 ? Math.min(this.cmdVelRateHz, g.grantedRateHz) : this.cmdVelRateHz;
        this.kernel.after(US_PER_MS * (1000 / hz), this, ACT_CMD_VEL);
        if (!g || !this.lib.ownsControl || this.lib.latched || this.lib.state !== 'active') return;
        const s = now / 1e6;
        const t = Math.floor(now / US_PER_MS);
        if (this.lib.send(this.ids.cmdVel, [[t, Math.fround(0.5 * Math.sin(0.4 * s)), Math.fround(0.4 * Math.cos(0.25 * s))]]) === 1) this.cmdVelSent++;
        return;
      }
      case ACT_TRAJ_ARRIVAL:
        if (now >= this.trajUntilUs) {
          this.trajOn = false;
          return;
        }
        this.plan(1);
        this.kernel.after(this.kernel.rng.exp(1000 / this.trajMeanPerS) * US_PER_MS, this, ACT_TRAJ_ARRIVAL);
        return;
      case ACT_TRAJ_PEAK:
        if (now >= this.trajUntilUs) return;
        // A peak: peakCount segments spread over one second.
        this.trajPeakLeft = this.trajPeakCount;
        this.peakStep();
        this.kernel.after(this.trajPeakEveryUs, this, ACT_TRAJ_PEAK);
        return;
      case ACT_TRAJ_FLUSH:
        this.trajFlushing = false;
        this.flush();
        return;
      case ACT_FLOOD:
        if (now >= this.floodUntilUs) {
          this.floodOn = false;
          return;
        }
        this.kernel.after(this.floodPeriodUs, this, ACT_FLOOD);
        this.floodOnce();
        return;
      case ACT_TRAJ_PEAK_STEP:
        this.peakStep();
        return;
    }
  }

  private peakStep(): void {
    if (this.trajPeakLeft <= 0) return;
    this.trajPeakLeft--;
    this.plan(1);
    if (this.trajPeakLeft > 0) this.kernel.after((1e6 / this.trajPeakCount) | 0, this, ACT_TRAJ_PEAK_STEP);
  }

  /** Adds `n` segments to the backlog and sends what the grant allows. */
  private plan(n: number): void {
    for (let i = 0; i < n; i++) {
      const k = this.trajN++;
      const a = k * 0.15;
      const t = Math.floor(this.kernel.nowUs / US_PER_MS);
      this.backlog.push([t, Math.fround(k * TRAJ_SEGMENT_S), TRAJ_SEGMENT_S, Math.fround(2 * Math.cos(a)), Math.fround(2 * Math.sin(a)), Math.fround(a + Math.PI / 2), 0.4]);
    }
    this.flush();
  }

  private flush(): void {
    const active = this.lib.state === 'active' && this.lib.ownsControl && !this.lib.latched && this.lib.pubGrants.has(this.ids.trajectory);
    while (active && this.backlog.length > 0) {
      const seg = this.backlog[0] as number[];
      if (this.lib.send(this.ids.trajectory, [seg]) !== 1) break;
      this.backlog.shift();
      this.segmentsSent++;
    }
    if (!active) {
      // A planner that may not drive drops its plan rather than replaying a stale one later.
      this.segmentsHeld += this.backlog.length;
      this.backlog.length = 0;
      return;
    }
    if (this.backlog.length > 0 && !this.trajFlushing) {
      this.trajFlushing = true;
      this.kernel.after(TRAJ_FLUSH_MS * US_PER_MS, this, ACT_TRAJ_FLUSH);
    }
  }

  private floodOnce(): void {
    const conn = this.connection;
    if (!conn) return;
    const w = this.rawW;
    w.reset();
    const t = Math.floor(this.kernel.nowUs / US_PER_MS);
    if (this.floodKind === 'malformed') {
      // A map whose type names no frame: MALFORMED (§12.2), counted towards §12.5.
      conn.clientSend(Uint8Array.of(0xa1, 0x00, 0x18, 0x63), false);
      this.floodSent++;
      return;
    }
    if (this.floodKind === 'intents') {
      encodeFrame({ type: FrameType.INTENT, channelId: this.floodChannel, requestId: this.floodId++ }, w);
    } else {
      const ch = this.catalog.byId(this.floodChannel);
      const sample = [t];
      for (let i = 0; i < (ch ? ch.fieldCount : 1); i++) sample.push(0.1);
      encodeFrame({ type: FrameType.BUNDLE, channelId: this.floodChannel, samples: [sample] }, w);
    }
    conn.clientSend(w.buf.slice(0, w.pos), false);
    this.floodSent++;
  }
}
