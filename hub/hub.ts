// The hub core's orchestration (docs/architecture.md "Layers"): it owns the state every layer
// shares (the session slots and the transports, the channel routes and the subscription table,
// the credentials, the control owner) and wires the layers together: ingress.ts takes frames in,
// sessions.ts opens, resumes and closes sessions, plan.ts grants, egress.ts sends, safety.ts
// holds the ESTOP latch, the deadman and the control ownership and answers INTENTs, chunks.ts
// serves CATALOG and HEALTH, load.ts measures and reports. The tick is here: it does work when a
// deadline falls due, not on every period.
// Platform-free: everything it needs arrives through the interfaces in ports.ts (the ports and
// the configuration: hub-config.ts; one attached transport: conn.ts).
import type { CatalogIndex } from '../catalog/index.js';
import { decodeCredentials, type Credential, CREDENTIALS_KEY } from './credentials.js';
import { Conn } from './conn.js';
import { EstopLatch } from './estop.js';
import { decodeEstop, EstopFrameError, EstopKind, EstopSource, type EstopFrame } from './estop-frame.js';
import { Egress } from './egress.js';
import { GoodbyeReason, MAX_HUB_FRAME_BYTES, type HelloFrame } from './frame-types.js';
import { Admission, ADMISSION_MIN_TICK_OBSERVATIONS, defaultAdmissionLimits } from './admission.js';
import { IngressGovernor } from './governor.js';
import { createHubLoad, HealthMetrics, type HealthReport, type HubLoad } from './health.js';
import { DEFAULT_HUB_CONFIG, MIN_MAX_FRAME_BYTES, type HubConfig, type HubObserver, type HubPorts } from './hub-config.js';
import { Ingress } from './ingress.js';
import { Ladder, parkCandidate } from './ladder.js';
import { Load, type HealthSummary, type HubFootprint, type SessionView } from './load.js';
import { Nack } from './nack.js';
import { Plan } from './plan.js';
import { NULL_LOG, type Clock, type HeapUsed, type Link, type LinkSink, type Log, type Random, type RobotPort, type SampleRouter, type Store } from './ports.js';
import { Safety } from './safety.js';
import { makeRoutes, type ChannelRoute, Session, SessionState, type SubscriptionTable } from './session.js';
import { SessionKeeper } from './sessions.js';

export { HubCounters } from './counters.js';
export { SafetyEventKind } from './safety.js';
export type { HealthSummary, HubFootprint, SessionView, SubView } from './load.js';
export { DEFAULT_HUB_CONFIG, type HubConfig, type HubObserver, type HubPorts } from './hub-config.js';

/**
 * How often the tick measures the hub's own load and moves the ladder, ms
 * (docs/operations.md "The hub-wide ladder"): its windows are seconds long, and admission
 * measures afresh whenever a HELLO asks.
 */
export const LOAD_PERIOD_MS = 100;

/**
 * The hub. Its public methods are what a host calls: `attach` a transport, `publishSample` and
 * `publishEvent` for the robot, `tick` periodically, the ESTOP inputs, and inspection. Fields
 * marked internal are the layers' shared state.
 */
export class Hub {
  readonly config: HubConfig;
  readonly catalog: CatalogIndex;
  readonly latch: EstopLatch;
  /** docs/operations.md "Health, admission and overload": the measurements, and what admission and the ladder read (one object, refilled). */
  readonly health: HealthMetrics;
  readonly admission: Admission;
  readonly ladder: Ladder;
  readonly governor: IngressGovernor;
  /** Told of every entry into the hub; null (the default) costs one comparison per entry. */
  observer: HubObserver | null = null;
  /** @internal */ readonly clock: Clock;
  /** @internal */ readonly random: Random;
  /** @internal */ readonly store: Store;
  /** @internal */ readonly robot: RobotPort;
  /** @internal */ readonly log: Log;
  /** @internal */ readonly heap: HeapUsed | undefined;
  /** @internal */ readonly slots: (Session | null)[];
  /** @internal */ readonly conns: Conn[] = [];
  /** @internal The channels a client can subscribe to. */
  readonly routes: readonly ChannelRoute[];
  /** @internal Every subscription's state, one row per (route, session slot). */
  readonly table: SubscriptionTable;
  /** @internal */ readonly load: HubLoad = createHubLoad();
  /** @internal */ credentials: Credential[];
  /** @internal */ owner: Session | null = null;
  /** @internal The layers. */
  readonly egress: Egress;
  /** @internal Routes a push's common case in C on the device (HubPorts.sampleRouter); null: the egress routes every push. */
  readonly router: SampleRouter | null;
  /** @internal */ readonly ingress: Ingress;
  /** @internal */ readonly keeper: SessionKeeper;
  /** @internal */ readonly plan: Plan;
  /** @internal */ readonly safety: Safety;
  /** @internal */ readonly inspect: Load;
  /** Each route by channel id (index + 1; 0: none). */
  private readonly routeIds: Uint16Array;
  /** The tick's next deadline: before it a tick only measures itself. */
  private dueAt = -Infinity;
  private loadAt = -Infinity;
  /** Transports lost, and sessions to park, while a push was being routed (taken up after it). */
  private readonly lostLater: Conn[] = [];
  private readonly parkLater: Session[] = [];
  /** Something waits in lostLater or parkLater. */
  private deferred = false;
  /** A transport may still be waiting for its HELLO (set at attach; a transport never loses its session). */
  private handshaking = false;

  constructor(ports: HubPorts, config: Partial<HubConfig> = {}) {
    this.config = Object.freeze({ ...DEFAULT_HUB_CONFIG, ...config });
    const cfg = this.config;
    this.catalog = ports.catalog;
    this.clock = ports.clock;
    this.random = ports.random;
    this.store = ports.store;
    this.robot = ports.robot;
    this.log = ports.log ?? NULL_LOG;
    this.heap = ports.heap;
    this.slots = [];
    for (let i = 0; i < cfg.slots; i++) this.slots.push(null);
    const made = makeRoutes(this.catalog.channels, cfg.slots);
    this.routes = made.routes;
    this.table = made.table;
    let maxId = 0;
    let maxFields = 0;
    for (const r of this.routes) {
      if (r.ch.id > maxId) maxId = r.ch.id;
      if (r.ch.fieldCount > maxFields) maxFields = r.ch.fieldCount;
    }
    this.routeIds = new Uint16Array(maxId + 1);
    for (const r of this.routes) this.routeIds[r.ch.id] = r.index + 1;
    this.credentials = decodeCredentials(this.store.get(CREDENTIALS_KEY));
    this.health = new HealthMetrics(cfg.tickPeriodMs);
    const budgets = { tickBudgetMs: cfg.tickBudgetMs, heapLimitBytes: cfg.heapLimitBytes };
    this.admission = new Admission(defaultAdmissionLimits(cfg.slots, cfg.neverShedBytes, budgets));
    this.ladder = new Ladder({ ...budgets, minTickObservations: ADMISSION_MIN_TICK_OBSERVATIONS }, this.clock.now());
    this.governor = new IngressGovernor(cfg.slots, { sessionBytesPerS: cfg.sessionIngressBytesPerS, hubBytesPerS: cfg.hubIngressBytesPerS });
    if (!(cfg.maxFrameBytes >= MIN_MAX_FRAME_BYTES && cfg.maxFrameBytes <= MAX_HUB_FRAME_BYTES)) {
      throw new RangeError(`HubConfig.maxFrameBytes must be within ${MIN_MAX_FRAME_BYTES}..${MAX_HUB_FRAME_BYTES}`);
    }
    this.egress = new Egress(this.clock, this.table, this.slots, this.health, this, maxFields, cfg.neverShedBytes, cfg.maxFrameBytes, ports.sampleWriter ?? null);
    this.router = ports.sampleRouter ?? null;
    this.ingress = new Ingress(this, ports.frameReader);
    this.keeper = new SessionKeeper(this);
    this.plan = new Plan(this);
    this.inspect = new Load(this);
    // §11.2: the latch is restored from the Store; a restored latch stops the robot at once.
    this.latch = new EstopLatch(this.store, this.robot, this.clock);
    this.safety = new Safety(this, this.latch, cfg.deadmanMs);
  }

  get counters(): Egress['counters'] {
    return this.egress.counters;
  }

  /** §11.2: whether motion is accepted from the owner (false from any latch until the owner's `arm`). */
  get armed(): boolean {
    return this.safety.armed;
  }

  // ------------------------------------------------------------------ links

  /** A binding hands the core a new transport; the core answers with where to feed its frames. */
  attach(link: Link): LinkSink {
    if (this.observer !== null) this.observer.entered();
    const now = this.clock.now();
    const conn = new Conn(this, link, now);
    this.conns.push(conn);
    this.handshaking = true;
    this.due(now + this.config.handshakeTimeoutMs);
    return conn;
  }

  /** Reloads the credential table after an operator changed it in the Store. */
  reloadCredentials(): void {
    this.credentials = decodeCredentials(this.store.get(CREDENTIALS_KEY));
  }

  /** @internal A transport was lost (LinkSink.lost). */
  onLost(conn: Conn): void {
    if (conn.closed) return;
    if (this.egress.routing) {
      this.lostLater.push(conn);
      this.deferred = true;
      return;
    }
    const s = conn.session;
    this.dropConn(conn);
    // §6.6: a reported transport loss makes the session STALE; it is not torn down.
    if (s && s.link === conn.link) this.keeper.stale(s, false);
  }

  /** @internal */
  dropConn(conn: Conn): void {
    conn.closed = true;
    const i = this.conns.indexOf(conn);
    if (i >= 0) this.conns.splice(i, 1);
  }

  /** @internal */
  connOf(s: Session): Conn | undefined {
    for (let i = 0; i < this.conns.length; i++) if ((this.conns[i] as Conn).session === s) return this.conns[i];
    return undefined;
  }

  /** @internal The route of a channel a client can subscribe to (telemetry, not INTENT). */
  routeOf(channelId: number): ChannelRoute | undefined {
    const r = this.routeIds[channelId];
    return r === undefined || r === 0 ? undefined : this.routes[r - 1];
  }

  /** @internal Work falls due at `t`: the first tick at or after it does it. */
  due(t: number): void {
    if (t < this.dueAt) this.dueAt = t;
  }

  /** @internal The egress layer's never-shed queue overflowed: the session is parked (after the push being routed, if any). */
  overflowed(s: Session): void {
    if (this.egress.routing) {
      this.parkLater.push(s);
      this.deferred = true;
    } else this.keeper.stale(s, true);
  }

  /** What a push could not do while it was being routed: the losses and parks it met. */
  private afterRouting(): void {
    this.deferred = false;
    while (this.lostLater.length > 0) this.onLost(this.lostLater.shift() as Conn);
    while (this.parkLater.length > 0) this.keeper.stale(this.parkLater.shift() as Session, true);
  }

  // ------------------------------------------------------------------ the robot's side

  /** A robot's STREAM sample or STATE value to its subscribers (egress.ts; on the device route.c). `values` is the host's, reused: none of it is kept. */
  publishSample(channelId: number, t: number, values: Float64Array, count: number): void {
    if (this.observer !== null) this.observer.entered();
    // No route (an id of 0, or none: routes[-1], routes[NaN]) reads undefined; one local only.
    const route = this.routes[(this.routeIds[channelId] as number) - 1];
    if (route === undefined || route.events !== null) return;
    // On the device in C (HubPorts.sampleRouter), but for a critical push or one under the ladder's level floor (-1).
    if (this.router === null || this.router.route(this.egress, route, t, values, count, this.clock.now()) < 0) this.egress.publishSample(route, t, values, count);
    if (this.deferred) this.afterRouting();
  }

  /** One EVENT (§9.4): queued per subscriber, bounded, oldest dropped and counted. */
  publishEvent(channelId: number, t: number, values: readonly number[], text?: string): void {
    if (this.observer !== null) this.observer.entered();
    const route = this.routeOf(channelId);
    // An EVENT channel nobody can subscribe to (not telemetry) has nobody to queue for.
    if (route === undefined || route.events === null) return;
    this.egress.publishEvent(route, t, values, text);
    if (this.deferred) this.afterRouting();
  }

  // ------------------------------------------------------------------ sessions

  /** @internal */
  onHello(conn: Conn, f: HelloFrame, now: number): void {
    this.keeper.hello(conn, f, now);
  }

  /**
   * The hub is stopping (the host at SIGINT/SIGTERM, the device before a restart): every session
   * is told GOODBYE SHUTDOWN (§5.15) and closed, a parked one with nothing sent. The latch, in
   * the Store, is not touched. Idempotent; the host stops feeding the hub afterwards.
   */
  shutdown(): void {
    for (const s of this.slots) if (s) this.keeper.close(s, GoodbyeReason.SHUTDOWN);
  }

  /**
   * An operator's teardown (§6.9): the one path that sends NACK SESSION_EVICTED (§12.7).
   * Returns false when no such session is open.
   */
  evict(sessionId: number): boolean {
    if (this.observer !== null) this.observer.entered();
    const s = this.keeper.byId(sessionId);
    if (!s || s.state === SessionState.CLOSED) return false;
    if (s.link) this.egress.nack(s, Nack.SESSION_EVICTED);
    this.keeper.close(s, GoodbyeReason.EVICTED);
    return true;
  }

  get controlOwner(): number {
    return this.owner ? this.owner.id : 0;
  }

  // ------------------------------------------------------------------ ESTOP (§10.4, §11.2)

  /**
   * Asserts the latch from any source: the robot stops, every link hears it ahead of all
   * queues. With `seq` the assertion is (origin, seq) and a repeat counts once; without it
   * the hub originates it (watchdog, robot) and it is always new.
   */
  estop(source: number, origin = 0, seq = -1): void {
    if (this.observer !== null) this.observer.entered();
    this.safety.assert(source, origin, seq);
  }

  /**
   * An ESTOP frame (§11.1) that reached the hub outside any transport: a binding heard a stop
   * from a sender it admits no link for (an ESP-NOW station that is not paired,
   * docs/security.md). A stop is never refused for want of a link (§11.2): an assertion latches
   * as any client's does, (origin, seq) counted once; anything else is ignored, since there is
   * nobody to answer. Returns whether the frame was a valid assertion.
   */
  estopFrame(bytes: Uint8Array, start: number, end: number): boolean {
    if (this.observer !== null) this.observer.entered();
    let e: EstopFrame;
    try {
      e = decodeEstop(bytes, start, end - start);
    } catch (err) {
      if (err instanceof EstopFrameError) return false;
      throw err;
    }
    if (e.kind !== EstopKind.ASSERT) return false;
    this.safety.assert(EstopSource.CLIENT, e.origin, e.seq);
    return true;
  }

  /** The hub's own button: held means asserting (a clear is refused while held). */
  setButton(held: boolean): void {
    if (this.observer !== null) this.observer.entered();
    this.safety.setButton(held);
  }

  get buttonAsserting(): boolean {
    return this.safety.buttonHeld;
  }

  // ------------------------------------------------------------------ time

  /**
   * Periodic work, called every `tickPeriodMs`. It does work only when something falls due:
   * handshakes and liveness to expire, a never-shed queue to drain or park (§10.4), events to
   * flush, a stale session to expire, the re-grant controller (§10.3), an ESTOP to re-announce,
   * the deadman (§11), and every LOAD_PERIOD_MS the hub's load and its ladder. A tick with
   * nothing due only measures itself (loop delay, duration).
   */
  tick(): void {
    if (this.observer !== null) this.observer.entered();
    const now = this.clock.now();
    if (now >= this.dueAt) this.sweep(now);
    // The tick's loop delay and duration, both at its end: the sweep reads the tick view alone
    // (the ladder's), never the loop delay.
    this.health.tickSpan(now, this.clock.now());
  }

  private sweep(now: number): void {
    // What this sweep makes due (an ESTOP owed, a queue filled) lowers dueAt again through due().
    this.dueAt = Infinity;
    let next = this.expireHandshakes(now);
    let at = this.safety.tick(now); // a time something falls due: the safety's, then each session's
    if (at < next) next = at;
    let replan = false;
    // On a load sweep the walk moves each ACTIVE session's hand-off mark on and looks for a link
    // keeping up, for the ladder's signals (Load.ladderSignals), as long as nothing it does could
    // change a session it has passed (a close, a park, a send): then Load walks them again.
    const loadDue = now >= this.loadAt;
    let quiet = true;
    let keeping = false;
    // Whether a session is owed a GRANT: every re-plan elsewhere announces at once, so the
    // announcement below is needed only after this sweep's own re-plan or for one seen owed here.
    let owed = false;
    const livenessMs = this.config.livenessTimeoutMs;
    const slots = this.slots;
    // Declared once out here: a block that declares its own makes XS open a scope on every pass.
    let i = 0;
    let s: Session | null;
    let link: Link | null;
    let level = 0;
    for (i = 0; i < slots.length; i++) {
      s = slots[i] as Session | null;
      if (!s) continue;
      if (s.grantOwed) owed = true;
      if (s.state === SessionState.STALE) {
        at = s.staleSince + this.config.staleTtlMs;
        if (now >= at) {
          quiet = false;
          this.keeper.close(s, GoodbyeReason.EVICTED);
        } else if (at < next) next = at;
        continue;
      }
      link = s.link;
      if (!link) continue;
      // §6.5: a client that has sent nothing for the liveness timeout is treated as gone.
      at = s.lastHeard + livenessMs;
      if (now >= at) {
        quiet = false;
        this.log.event('session-silent', s.id);
        this.keeper.stale(s, false);
        continue;
      }
      if (at < next) next = at;
      if (s.neverShed.size > 0) {
        quiet = false;
        if (this.egress.drain(s, now)) {
          this.keeper.stale(s, true);
          continue;
        }
        // While critical frames wait, every tick tries the link again.
        if (s.neverShed.size > 0) next = now;
      }
      // §10.3: sustained congestion cuts the grants to the throughput; recovery probes upward.
      level = link.level;
      if (level !== s.levelSeen || now >= s.budgetAt) {
        s.levelSeen = level;
        if (s.budgetUpdate(level, link.estimate(), this.plan.demandBps(s), now)) replan = true;
        s.budgetAt = s.budgetNextAt(level);
      }
      at = s.budgetAt;
      if (at < next) next = at <= now ? now : at;
      if (s.eventsOwed) {
        s.eventsOwed = false;
        const t = this.table;
        for (let j = 0; j < t.routeCount[s.slot]!; j++) {
          const route = this.plan.subscribedRoute(s, j);
          if (route.events && route.events.size(s.slot) > 0) {
            quiet = false;
            this.egress.flushEvents(route, s);
          }
        }
        if (s.eventsOwed) next = now;
      }
      if (loadDue && s.state === SessionState.ACTIVE) {
        at = this.inspect.handOff(s, now);
        if (!keeping) keeping = this.inspect.keepsUp(at, link, level, now);
      }
    }
    // docs/operations.md "Health, admission and overload": the hub's own load moves the ladder; a new rung re-plans and announces grants.
    if (loadDue) {
      this.loadAt = now + LOAD_PERIOD_MS;
      const ladder = this.ladder;
      if (ladder.update(this.inspect.ladderSignals(now, this.load, quiet ? (keeping ? 1 : 0) : -1), now)) {
        replan = true;
        this.egress.levelFloor = ladder.levelFloor;
        // Only a new rung changes it (nothing else writes it).
        this.load.refuseJoins = ladder.refusesJoins;
      }
      if (ladder.parkDue(now)) {
        const id = parkCandidate(this.inspect.ladderViews());
        const s = id > 0 ? this.keeper.byId(id) : undefined;
        if (s) {
          this.log.event('ladder-park', s.id);
          this.keeper.stale(s, true);
          ladder.markParked(now);
        }
      }
    }
    if (this.loadAt < next) next = this.loadAt;
    if (replan) this.plan.replan();
    if (replan || owed) this.plan.announce();
    this.due(next);
  }

  /** §6.1: transports that have not completed HELLO within the handshake timeout are closed. Returns the next expiry. */
  private expireHandshakes(now: number): number {
    let next = Infinity;
    if (!this.handshaking) return next;
    this.handshaking = false;
    for (let i = this.conns.length - 1; i >= 0; i--) {
      const c = this.conns[i] as Conn;
      if (c.session) continue;
      const at = c.attachedAt + this.config.handshakeTimeoutMs;
      if (now < at) {
        this.handshaking = true;
        if (at < next) next = at;
        continue;
      }
      this.log.event('handshake-timeout', 0);
      this.dropConn(c);
      c.link.close();
    }
    return next;
  }

  // ------------------------------------------------------------------ load and inspection

  /** @internal Fills `load` (admission and the ladder read it), allocation-free. */
  measureLoad(now: number): HubLoad {
    return this.inspect.measure(now, this.load);
  }

  /** Sessions as operators may see them: ids, states, tiers, grants — no names or credentials. */
  sessions(): SessionView[] {
    return this.inspect.sessions();
  }

  /** What the hub holds, by structure: the sizes fixed at setup and what its sessions made (docs/architecture.md "Memory"). */
  footprint(): HubFootprint {
    return this.inspect.footprint();
  }

  /** The detailed health report (docs/operations.md "Health, admission and overload", `metrics.version: 1`), the HEALTH frame's text and the operators' HTTP endpoint: numbers under fixed keys only, no names, credentials, tokens or payloads. Allocates: on request only. */
  healthReport(): HealthReport {
    return this.inspect.report(this.clock.now());
  }

  /** `healthReport`'s and `ready`'s numbers a summary publishes (the fleet uplink), into `out` without allocating. */
  healthSummary(out: HealthSummary): HealthSummary {
    return this.inspect.summary(this.clock.now(), out);
  }

  /** New sessions would be admitted now (the coarse public GET /health's `ready`). */
  ready(): boolean {
    return this.admission.peek(this.measureLoad(this.clock.now())).admit;
  }
}
