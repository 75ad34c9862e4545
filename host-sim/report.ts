// The run's report: one JSON document, the same bytes for the same scenario and seed. Keys are
// sorted, numbers rounded to a fixed precision (ms to the µs), nothing from the wall clock.
// docs/simulator.md "The report" describes every field and "Invariant checks" every check.

import { CHANNEL_CLASS_NAMES, PRIORITY_NAMES, TIER_NAMES } from '../catalog/schema.js';
import { EstopKind } from '../hub/estop-frame.js';
import { nackName } from '../hub/nack.js';
import { SESSION_STATE_NAMES } from '../hub/session.js';
import type { SimClient, SubStats } from './clients.js';
import { US_PER_MS } from './kernel.js';
import type { Connection, EstopRecord, SampleLateStats, Violation } from './links/index.js';
import { WATCH_INVARIANTS } from './invariants.js';
import type { EstopCause, Simulation } from './sim.js';
import type { Samples } from './stats.js';

export const REPORT_SCHEMA = 'robot-hub-sim-report/2';

/** The report as built (plain JSON data). */
export type Report = Record<string, unknown>;

/** How many examples of each violated invariant the report lists. */
const EXAMPLES = 5;
/** An ESTOP not received this long after it was written on a link that stayed open counts as missed. */
export const ESTOP_MISSED_AFTER_MS = 1000;
/** Latches the report lists with their deliveries; every latch is still judged (docs/simulator.md "The report"). */
export const ESTOP_REPORT_LATCHES = 200;

export const INVARIANTS = Object.freeze([
  'criticalShed',
  'segmentsDecimated',
  'lateDelivery',
  'eventLossInvisible',
  'estopOverBound',
  'estopMissed',
  // judged per sample at the client (links/tap.ts sampleReceived), as ESTOP deliveries are:
  'sampleLate',
  'motionWhileLatched',
  'hubInternalErrors',
  // host-sim/invariants.ts, after every instant:
  ...WATCH_INVARIANTS,
] as const);
export type InvariantName = (typeof INVARIANTS)[number];

const ESTOP_SOURCES = ['client', 'hub-button', 'deadman', 'watchdog', 'robot', 'fleet'];
/** GOODBYE reasons (§5.15) by code, for the closes timeline. */
const GOODBYE_REASONS = ['normal', 'shutdown', 'misbehaving', 'evicted', 'resumed-elsewhere'];
/** The ladder's rungs (docs/operations.md "Health, admission and overload"). */
export const LADDER_RUNGS = ['calm', 'thin', 'reduce_rates', 'pause_non_essential', 'refuse_joins', 'park_lowest'];

function summary(s: Samples): Record<string, number | null> {
  const x = s.summary();
  return { count: x.count, p50: num(x.p50), p95: num(x.p95), p99: num(x.p99), max: num(x.max) };
}

function num(x: number): number | null {
  return Number.isFinite(x) ? x : null;
}

function ms(us: number): number {
  return us / US_PER_MS;
}

function mapObj(m: ReadonlyMap<string, number>): Record<string, number> {
  const o: Record<string, number> = {};
  for (const [k, v] of m) o[k] = v;
  return o;
}

function channelName(sim: Simulation, id: number): string {
  return sim.catalog.byId(id)?.name ?? `#${id}`;
}

function subReport(sim: Simulation, s: SubStats, id: number): Record<string, unknown> {
  const ch = sim.catalog.byId(id);
  return {
    class: ch ? CHANNEL_CLASS_NAMES[ch.cls] : 'unknown',
    frames: s.frames,
    gaps: s.gaps,
    dropped: s.dropped,
    age: summary(s.ages),
    eventAge: summary(s.eventAges),
    grants: s.grants.map(([t, session, hz, p]) => ({ tMs: t, session, grantedHz: hz, priority: p < 0 ? 'unsubscribed' : (PRIORITY_NAMES[p] ?? p) })),
  };
}

function clientReport(sim: Simulation, c: SimClient): Record<string, unknown> {
  const subs: Record<string, unknown> = {};
  for (const [id, s] of c.subs) subs[channelName(sim, id)] = subReport(sim, s, id);
  const lib = c.lib;
  return {
    role: c.spec.role,
    link: c.spec.link,
    credential: c.spec.credential,
    sessions: c.sessionIds.slice(),
    states: c.states.map(([t, s]) => ({ tMs: t, state: s })),
    connections: c.connections.map((x) => x.id),
    subscriptions: subs,
    nacks: mapObj(c.nacks),
    errors: mapObj(c.errors),
    intents: {
      sent: c.intents.sent,
      echoed: c.intents.echoed,
      refused: mapObj(c.intents.refused),
      timeouts: c.intents.timeouts,
      lost: c.intents.lost,
      held: c.intents.held,
      latencyMs: summary(c.intents.latencyMs),
    },
    estopsAsserted: c.estopsAsserted,
    estopsCleared: c.estopsCleared,
    controlGained: c.controlGained,
    cmdVelSent: c.cmdVelSent,
    segmentsSent: c.segmentsSent,
    segmentsHeld: c.segmentsHeld,
    floodSent: c.floodSent,
    library: { ...lib.counters },
  };
}

/** sampleLate on one link (docs/simulator.md "sampleLate"): judged samples against idle + one link latency. */
function lateReport(l: SampleLateStats): Record<string, unknown> {
  return {
    samples: l.samples,
    judged: l.judged,
    over: l.over,
    worstMs: l.judged > 0 ? l.worstMs : null,
    worstAgeMs: l.judged > 0 ? l.worstAgeMs : null,
    worstBoundMs: l.judged > 0 ? l.worstBoundMs : null,
    p95Ratio: num(l.ratio.percentile(0.95)),
  };
}

function linkReports(sim: Simulation): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const conn of sim.connections) {
    const common = {
      client: conn.client,
      profile: conn.profile,
      binding: conn.binding,
      openedMs: ms(conn.openedUs),
      closedMs: Number.isNaN(conn.closedUs) ? null : ms(conn.closedUs),
      closeCause: conn.closeCause || null,
      framesToClient: conn.framesToClient,
      lostUp: conn.lostUp,
      faults: conn.faults().map(([a, b]) => ({ fromMs: ms(a), toMs: Number.isFinite(b) ? ms(b) : null })),
      readerLimited: conn.readerLimited(),
    };
    if (conn.taps.length === 0) out[conn.id] = { ...common, attached: false };
    for (const tap of conn.taps) {
      const st = tap.stats;
      out[tap.id] = {
        ...common,
        attached: true,
        closedByHub: tap.closedByHub,
        levels: tap.levels.map(([t, l]) => ({ tMs: t, level: l })),
        maxLevel: tap.levels.reduce((m, [, l]) => (l > m ? l : m), 0),
        framesHanded: st.frames,
        bytesHanded: st.bytes,
        dataFrames: st.dataFrames,
        estopsWritten: st.estops,
        refused: st.refused,
        maxFrameBytes: st.maxFrameBytes,
        maxOccupancy: st.maxOccupancy,
        framesReceived: st.received,
        sampleLate: lateReport(tap.late),
      };
    }
  }
  return out;
}

/** After a medium lost something, how long its retransmissions may still hold up what follows (ms). */
export const LOSS_SETTLE_MS = 1000;
/** How long an ESP-NOW peer that went silent stays in the binding's table, sent to with every retry (ms; §6.6 3 s, and slack). */
const ESPNOW_DEPARTED_MS = 3500;

/**
 * Whether the medium of `conn` lost (or could still be retransmitting) during [fromUs, toUs]: a
 * loss rate above 0 in force at some time from LOSS_SETTLE_MS before. The ESTOP bound of a lossy
 * medium allows a fixed number of losses (docs/simulator.md §7); more happen at up to 50 %, and
 * a loss that ended just before the ESTOP can still hold it behind a retransmission.
 */
export function lossyDuring(sim: Simulation, conn: Connection, fromUs: number, toUs: number): boolean {
  const p = sim.scenario.links[conn.profile] as unknown as Record<string, number> | undefined;
  const shared = conn.binding === 'espnow';
  const start = fromUs - LOSS_SETTLE_MS * US_PER_MS;
  let rate = p ? (p['lossRate'] ?? p['eventLossRate'] ?? 0) : 0;
  for (const x of sim.lossChanges) {
    if (!(x.conn === conn || (x.profile === conn.profile && (x.conn === null || shared)))) continue;
    if (x.tUs > toUs) break;
    if (x.tUs <= start) rate = x.rate;
    else if (x.rate > 0) return true;
  }
  return rate > 0;
}

/**
 * ESP-NOW shares one air per profile: a peer cut off it (a fault) or gone without the binding
 * knowing yet (its client left; the binding waits 3 s of silence) is still sent to with every MAC
 * retry, and that airtime comes before this peer's ESTOP. The bound counts only the peers present.
 */
export function sharedAirImpaired(sim: Simulation, conn: Connection, fromUs: number, toUs: number): boolean {
  if (conn.binding !== 'espnow') return false;
  for (const other of sim.connections) {
    if (other === conn || other.profile !== conn.profile) continue;
    if (other.openedUs > toUs) continue;
    if (other.impairedDuring(fromUs, toUs)) return true;
    if (other.ended && other.closedUs <= toUs && other.closedUs >= fromUs - ESPNOW_DEPARTED_MS * US_PER_MS) return true;
  }
  return false;
}

interface EstopDelivery {
  link: string;
  level: number;
  client: string;
  binding: string;
  latencyMs: number | null;
  boundMs: number;
  outcome: string;
  impaired: boolean;
  /** Judged against the bound: no fault, no slow reader, no loss, no impaired peer on a shared air. */
  judged: boolean;
}

/** Time within [fromUs, toUs] that no fault of the connection covers, µs. */
function clearUs(conn: Connection, fromUs: number, toUs: number): number {
  if (!(toUs > fromUs)) return 0;
  let covered = 0;
  let reach = fromUs;
  const faults = [...conn.faults()].sort((a, b) => a[0] - b[0]);
  for (const [a, b] of faults) {
    const start = a > reach ? a : reach;
    const end = b < toUs ? b : toUs;
    if (end > start) {
      covered += end - start;
      reach = end;
    }
  }
  return toUs - fromUs - covered;
}

/**
 * Every latch the hub announced, with its cause and its delivery on every link it was written to.
 * The k-th latch of an instant is paired with each link's k-th ASSERT written at that instant, so
 * the work is linear in latches and records. Every latch is judged; the first
 * ESTOP_REPORT_LATCHES are listed with their deliveries, the rest only counted (`estopsUnlisted`).
 */
function estopReport(sim: Simulation, violations: Violation[]): { listed: unknown[]; unlisted: number } {
  const endUs = sim.kernel.nowUs;
  const out: unknown[] = [];
  type Rec = { conn: Connection; link: string; r: EstopRecord; tapClosedUs: number };
  // instant → ordinal within (link, instant) → the records.
  const byInstant = new Map<number, Rec[][]>();
  for (const conn of sim.connections) {
    for (const tap of conn.taps) {
      const tapClosedUs = sim.watch.closedAtUs(tap);
      let lastUs = NaN;
      let ord = 0;
      for (const r of tap.estops) {
        if (r.kind !== EstopKind.ASSERT) continue;
        ord = r.handoffUs === lastUs ? ord + 1 : 0;
        lastUs = r.handoffUs;
        let ords = byInstant.get(r.handoffUs);
        if (!ords) byInstant.set(r.handoffUs, (ords = []));
        (ords[ord] ??= []).push({ conn, link: tap.id, r, tapClosedUs });
      }
    }
  }
  let unlisted = 0;
  let lastLatchUs = NaN;
  let latchOrd = 0;
  let causeAt = 0;
  const causes = sim.estopCauses;
  for (const latch of sim.log) {
    if (latch.code !== 'estop') continue;
    const atUs = Math.round(latch.tMs * US_PER_MS);
    latchOrd = atUs === lastLatchUs ? latchOrd + 1 : 0;
    lastLatchUs = atUs;
    const source = latch.a ?? 0;
    const deliveries: EstopDelivery[] = [];
    for (const { conn, link, r, tapClosedUs } of byInstant.get(atUs)?.[latchOrd] ?? []) {
      const latency = r.outcome === 'delivered' ? ms(r.deliveredUs - r.handoffUs) : null;
      // Judged only where nothing else stood in the way: no fault, no slow reader, and (for a miss) the link open long enough.
      const impaired = r.impaired || conn.impairedDuring(r.handoffUs, r.handoffUs + r.boundMs * US_PER_MS);
      const windowEndUs = r.handoffUs + Math.max(r.boundMs, latency ?? 0) * US_PER_MS;
      const judged = !impaired && !lossyDuring(sim, conn, r.handoffUs, windowEndUs) && !sharedAirImpaired(sim, conn, r.handoffUs, windowEndUs);
      deliveries.push({ link, level: r.level, client: conn.client, binding: conn.binding, latencyMs: latency, boundMs: r.boundMs, outcome: r.outcome, impaired, judged });
      if (impaired) continue;
      if (judged && latency !== null && latency > r.boundMs) {
        violations.push({ check: 'estopOverBound', tMs: latch.tMs, link, channel: 'estop', detail: `${latency.toFixed(3)} ms > bound ${r.boundMs.toFixed(3)} ms` });
      }
      // The link ends when the connection does or when the hub closes it (ESP-NOW re-admits a peer on the same connection).
      const closedUs = Math.min(Number.isNaN(conn.closedUs) ? endUs : conn.closedUs, Number.isNaN(tapClosedUs) ? endUs : tapClosedUs);
      // Owed only when the link stayed open and reachable that long after the write, all faults
      // (a stall, a partition, a medium gone silent) taken out: a lossy link that goes dead soon
      // after had no fair chance, one that heals and stays up has.
      if (latency === null && clearUs(conn, r.handoffUs, closedUs) >= ESTOP_MISSED_AFTER_MS * US_PER_MS) {
        violations.push({ check: 'estopMissed', tMs: latch.tMs, link, channel: 'estop', detail: `not received (${r.outcome}); the link stayed open and reachable` });
      }
    }
    if (out.length >= ESTOP_REPORT_LATCHES) {
      unlisted++;
      continue;
    }
    // The latest cause of this source at or before the latch (causes are in time order).
    while (causeAt < causes.length && (causes[causeAt] as EstopCause).tMs <= latch.tMs) causeAt++;
    let cause: EstopCause | undefined;
    for (let i = causeAt - 1; i >= 0; i--) {
      const c = causes[i] as EstopCause;
      if (c.source === source) {
        cause = c;
        break;
      }
    }
    let maxLatency: number | null = null;
    for (const d of deliveries) if (d.latencyMs !== null && (maxLatency === null || d.latencyMs > maxLatency)) maxLatency = d.latencyMs;
    out.push({
      latchMs: latch.tMs,
      source: ESTOP_SOURCES[source] ?? source,
      origin: latch.b ?? 0,
      causeMs: cause ? cause.tMs : latch.tMs,
      causeClient: cause ? cause.client : null,
      causeToLatchMs: cause ? latch.tMs - cause.tMs : 0,
      maxLatencyMs: maxLatency,
      deliveries,
    });
  }
  return { listed: out, unlisted };
}

function robotReport(sim: Simulation): Record<string, unknown> {
  const r = sim.robot.stats;
  return {
    stops: r.stops,
    stopTimesMs: r.stopTimesMs.slice(),
    releases: r.releases,
    cmdVelApplied: r.cmdVelApplied,
    segmentsAccepted: r.segmentsAccepted,
    segmentsRefused: r.segmentsRefused,
    maxSegmentsPerS: r.maxSegmentsPerSecond(),
    pathPublished: r.pathPublished,
    intents: r.intents,
    motionWhileStopped: r.motionWhileStopped,
  };
}

function hubReport(sim: Simulation): Record<string, unknown> {
  const k = sim.hub.counters;
  const rows: Record<string, number> = {};
  for (let i = 1; i <= 15; i++) rows[String(i)] = k.rows[i] as number;
  const nacks: Record<string, number> = {};
  for (let code = 0; code < k.nacks.length; code++) {
    const n = k.nacks[code] as number;
    if (n > 0) nacks[nackName(code) ?? `code${code}`] = n;
  }
  const logCounts: Record<string, number> = {};
  for (const [code, n] of sim.logCounts) logCounts[code] = n;
  const sessions = sim.hub.sessions().map((s) => ({
    id: s.id,
    state: SESSION_STATE_NAMES[s.state] ?? s.state,
    binding: s.binding || null,
    tier: TIER_NAMES[s.tier] ?? s.tier,
    level: s.level,
    grants: Object.fromEntries(s.subs.map((g) => [channelName(sim, g.channelId), { grantedHz: g.grantedHz, priority: PRIORITY_NAMES[g.priority] ?? g.priority }])),
  }));
  return {
    rows,
    delivered: k.delivered,
    rateGated: k.rateGated,
    decimated: k.decimated,
    conflated: k.conflated,
    shedDrops: k.shedDrops,
    egressDrops: k.egressDrops,
    parks: k.parks,
    resumes: k.resumes,
    estops: k.estops,
    reclaims: k.reclaims,
    neverShedOverflows: k.neverShedOverflows,
    grantsAnnounced: k.grantsAnnounced,
    tierCapped: k.tierCapped,
    nacks,
    log: logCounts,
    latched: sim.hub.latch.latched,
    controlOwner: sim.hub.controlOwner,
    sessionsAtEnd: sessions,
    // The hub-wide ladder and admission over time (docs/operations.md "Health, admission and overload").
    ladder: sim.ladderTimeline.map(([t, r]) => ({ tMs: t, rung: r, name: LADDER_RUNGS[r] ?? String(r) })),
    admission: sim.admissionTimeline.map(([t, o]) => ({ tMs: t, admitting: o === 1 })),
  };
}

export function buildReport(sim: Simulation): Report {
  const violations: Violation[] = [];
  // Violations a tap counted without listing them (sampleLate lists its first few per link).
  const unlisted: Record<string, number> = {};
  for (const conn of sim.connections) {
    for (const tap of conn.taps) {
      violations.push(...tap.violations);
      unlisted['sampleLate'] = (unlisted['sampleLate'] ?? 0) + tap.late.over - tap.late.listed;
    }
  }
  violations.push(...sim.watch.violations);
  const estops = estopReport(sim, violations);
  if (sim.robot.stats.motionWhileStopped > 0) {
    violations.push({ check: 'motionWhileLatched', tMs: sim.nowMs, link: '-', channel: '-', detail: `${sim.robot.stats.motionWhileStopped} motion command(s) reached the stopped robot` });
  }
  for (const r of sim.log) {
    if (r.code === 'internal-error') violations.push({ check: 'hubInternalErrors', tMs: r.tMs, link: '-', channel: '-', detail: `session ${r.a ?? 0}` });
  }
  const invariants: Record<string, unknown> = {};
  let total = 0;
  for (const name of INVARIANTS) {
    const v = violations.filter((x) => x.check === name).sort((a, b) => a.tMs - b.tMs || (a.link < b.link ? -1 : a.link > b.link ? 1 : 0));
    const count = v.length + (unlisted[name] ?? 0);
    total += count;
    invariants[name] = { count, examples: v.slice(0, EXAMPLES).map((x) => ({ tMs: x.tMs, link: x.link, channel: x.channel, detail: x.detail })) };
  }
  const clients: Record<string, unknown> = {};
  for (const c of sim.clients) clients[c.name] = clientReport(sim, c);
  const sessions: Record<string, string> = {};
  for (const c of sim.clients) for (const id of c.sessionIds) sessions[String(id)] = c.name;
  const timeline = (code: string): unknown[] => sim.log.filter((r) => r.code === code).map((r) => ({ tMs: r.tMs, session: r.a ?? 0 }));
  return {
    schema: REPORT_SCHEMA,
    scenario: { name: sim.scenario.name, description: sim.scenario.description, seed: sim.seed, durationMs: sim.scenario.durationMs },
    run: { simulatedMs: sim.nowMs, kernelEvents: sim.kernel.processed, prngDraws: sim.kernel.rng.draws },
    ok: total === 0,
    invariants,
    hub: hubReport(sim),
    sessions,
    parks: timeline('session-park'),
    resumes: timeline('session-resume'),
    stale: timeline('session-stale'),
    closes: sim.log.filter((r) => r.code === 'session-close').map((r) => ({ tMs: r.tMs, session: r.a ?? 0, reason: GOODBYE_REASONS[r.b ?? 0] ?? String(r.b ?? 0) })),
    estops: estops.listed,
    estopsUnlisted: estops.unlisted,
    robot: robotReport(sim),
    clients,
    links: linkReports(sim),
  };
}

// ---------------------------------------------------------------------------------------------
// Canonical JSON.

/** Decimal places numbers are rounded to (ms values keep their µs). */
export const REPORT_DECIMALS = 3;
const SCALE = 10 ** REPORT_DECIMALS;

function canon(x: unknown): unknown {
  if (typeof x === 'number') {
    if (!Number.isFinite(x)) return null;
    const r = Math.round(x * SCALE) / SCALE;
    return Object.is(r, -0) ? 0 : r;
  }
  if (Array.isArray(x)) return x.map(canon);
  if (x !== null && typeof x === 'object') {
    const o: Record<string, unknown> = {};
    for (const k of Object.keys(x).sort()) {
      const v = (x as Record<string, unknown>)[k];
      if (v !== undefined) o[k] = canon(v);
    }
    return o;
  }
  return x;
}

/** The report as text: keys sorted at every level, numbers rounded, two-space indent, final newline. */
export function reportJson(r: Report): string {
  return JSON.stringify(canon(r), null, 2) + '\n';
}
