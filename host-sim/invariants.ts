// The checks the simulator makes after every instant of virtual time (issue 7 item 2), besides
// the tap's per-frame checks (links/tap.ts, sampleLate among them: judged as the client receives
// each sample) and the ESTOP bound judged in the report:
//
//   grantUnannounced    a session's grants in the hub differ from the last WELCOME/GRANT the hub
//                       handed its link while nothing waits in its never-shed queue (§10.2: every
//                       grant change is announced), or, once the client has received everything
//                       handed on its link, from what the client holds; a segments grant other
//                       than 0 or the whole source (§10.4 rows 4–6);
//   estopNotWritten     an ESTOP latched and an ACTIVE session's link got no write-ahead ESTOP
//                       at that instant (§10.4, §11.2: every attached session);
//   parkedNotResumable  a STALE session closed before its TTL without slot pressure, or a resume
//                       refused UNKNOWN_SESSION while the hub still held the session (§6.6);
//   heapUnbounded       hub.footprint() or a never-shed queue outside the bounds its config fixes.
//
// Everything is read through the hub's public inspection (sessions(), footprint(), counters),
// the log, and the frames the hub hands each tap; nothing here changes what the run does.

import { ChannelClass, StreamKind } from '../catalog/schema.js';
import { decodeFrame, FrameType, MAX_HUB_FRAME_BYTES, type SubGrant } from '../hub/frames.js';
import type { HubFootprint, SessionView } from '../hub/hub.js';
import { Nack } from '../hub/nack.js';
import { SessionState } from '../hub/session.js';
import { US_PER_MS } from './kernel.js';
import type { Connection, LinkTap, Violation } from './links/index.js';
import type { Simulation } from './sim.js';

export const WATCH_INVARIANTS = Object.freeze(['grantUnannounced', 'estopNotWritten', 'parkedNotResumable', 'heapUnbounded'] as const);

/** A grant set as a comparable key: "channel:hz:priority" sorted by channel. */
function grantKey(list: readonly { channelId: number; grantedHz: number; priority: number }[]): string {
  return list
    .map((g) => [g.channelId, g.grantedHz, g.priority] as const)
    .sort((a, b) => a[0] - b[0])
    .map((g) => `${g[0]}:${g[1]}:${g[2]}`)
    .join(' ');
}

function wireKey(list: readonly SubGrant[]): string {
  return grantKey(list.map((g) => ({ channelId: g.channelId, grantedHz: g.grantedRateHz, priority: g.priority })));
}

/** The hub's view of a session's grants equals a set on the wire: in order (both list the subscriptions in the hub's order), else as sets. */
function sameGrants(subs: readonly { channelId: number; grantedHz: number; priority: number }[], wire: readonly SubGrant[]): boolean {
  if (subs.length !== wire.length) return false;
  let inOrder = true;
  for (let i = 0; i < subs.length && inOrder; i++) {
    const a = subs[i] as (typeof subs)[number];
    const b = wire[i] as SubGrant;
    inOrder = a.channelId === b.channelId && a.grantedHz === b.grantedRateHz && a.priority === b.priority;
  }
  return inOrder || grantKey(subs) === wireKey(wire);
}

/** What the watch knows of one hub-side link from the frames handed to it. */
interface TapInfo {
  readonly tap: LinkTap;
  readonly conn: Connection;
  /** The session its last WELCOME named; 0 before one. */
  session: number;
  /** Set when a NACK UNKNOWN_SESSION was handed, judged after the instant. */
  refusedResume: boolean;
}

export class Watch {
  readonly violations: Violation[] = [];
  private readonly sim: Simulation;
  private readonly taps: TapInfo[] = [];
  private readonly byTap = new Map<LinkTap, TapInfo>();
  /** Per session: the last sub-grant set handed in WELCOME or GRANT, and on which link. */
  private readonly announced = new Map<number, { grants: readonly SubGrant[]; tap: LinkTap }>();
  /** Whether the hub ran since the last look: only what the hub does changes what is checked. */
  private dirty = true;
  /** Per session: a mismatch already reported (one violation per episode, not per instant). */
  private readonly reported = new Set<string>();
  private readonly staleSince = new Map<number, number>();
  private logRead = 0;
  private reclaimsSeen = 0;
  private readonly initial: HubFootprint;
  private readonly segments = new Map<number, number>();
  private readonly closedAt = new Map<LinkTap, number>();

  constructor(sim: Simulation) {
    this.sim = sim;
    this.initial = sim.hub.footprint();
    this.watchHub();
    for (const ch of sim.catalog.channels) {
      if (ch.kind === StreamKind.segments && !ch.critical && ch.cls !== ChannelClass.INTENT) this.segments.set(ch.id, ch.maxRateHz);
    }
  }

  /**
   * Marks the hub dirty whenever one of its entry points runs (Hub.observer): its tick, the
   * robot's samples, the button, and every frame or loss a binding feeds a LinkSink. Between
   * those nothing the checks read can change, so an instant without any is not looked at again.
   */
  private watchHub(): void {
    this.sim.hub.observer = { entered: () => (this.dirty = true) };
  }

  /** A new hub-side link: the frames the hub hands it are read for WELCOME, GRANT and NACK. */
  tapped(tap: LinkTap, conn: Connection): void {
    const info: TapInfo = { tap, conn, session: 0, refusedResume: false };
    this.taps.push(info);
    this.byTap.set(tap, info);
    tap.watcher = {
      control: (_tap, frame) => this.control(info, frame, frame.length),
      closed: (t) => {
        if (!this.closedAt.has(t)) this.closedAt.set(t, this.sim.kernel.nowUs);
      },
    };
  }

  /** When the hub closed this link (µs), or NaN: what was written to it after that is not owed. */
  closedAtUs(tap: LinkTap): number {
    return this.closedAt.get(tap) ?? NaN;
  }

  private control(info: TapInfo, frame: Uint8Array, length: number): void {
    const f = decodeFrame(frame, 0, length, MAX_HUB_FRAME_BYTES);
    if (f.type === FrameType.WELCOME) {
      info.session = f.sessionId;
      this.announced.set(f.sessionId, { grants: f.subGrants, tap: info.tap });
    } else if (f.type === FrameType.GRANT) {
      if (f.subGrants && info.session !== 0) this.announced.set(info.session, { grants: f.subGrants, tap: info.tap });
    } else if (f.type === FrameType.NACK && f.code === Nack.UNKNOWN_SESSION) {
      info.refusedResume = true;
    }
  }

  private violate(check: string, link: string, channel: string, detail: string): void {
    this.violations.push({ check, tMs: this.sim.kernel.nowUs / US_PER_MS, link, channel, detail });
  }

  /** Once per episode: `id` names the episode; `ok` clears it so a later one counts again. */
  private episode(id: string, bad: boolean, report: () => void): void {
    if (!bad) {
      this.reported.delete(id);
      return;
    }
    if (this.reported.has(id)) return;
    this.reported.add(id);
    report();
  }

  /** After every instant of virtual time (every kernel event's time, and every microtask turn). */
  after(): void {
    if (!this.dirty) return;
    this.dirty = false;
    const hub = this.sim.hub;
    const sessions = hub.sessions();
    const byId = new Map<number, SessionView>();
    for (const s of sessions) byId.set(s.id, s);
    this.readLog(byId);
    this.grants(sessions, byId);
    this.resumes(byId);
    this.heap(sessions);
  }

  // ---------------------------------------------------------------- grants (§10.2)

  private grants(sessions: readonly SessionView[], byId: ReadonlyMap<number, SessionView>): void {
    for (const s of sessions) {
      if (s.state !== SessionState.ACTIVE) continue;
      for (const g of s.subs) {
        const whole = this.segments.get(g.channelId);
        if (whole !== undefined) {
          this.episode(`seg/${s.id}/${g.channelId}`, g.grantedHz !== 0 && g.grantedHz !== whole, () =>
            this.violate('grantUnannounced', `session ${s.id}`, this.name(g.channelId), `a segments stream granted ${g.grantedHz} Hz (whole source ${whole} Hz or nothing)`),
          );
        }
      }
      // A frame in the never-shed queue may be the announcement itself: judged once it has left.
      if (s.neverShedBytes > 0) continue;
      const a = this.announced.get(s.id);
      this.episode(`hub/${s.id}`, !a || !sameGrants(s.subs, a.grants), () =>
        this.violate('grantUnannounced', a ? a.tap.id : `session ${s.id}`, '-', `session ${s.id}: hub grants [${grantKey(s.subs)}], last announced [${a ? wireKey(a.grants) : 'none'}]`),
      );
    }
    // What the client holds, once everything handed on its link has reached it.
    for (const info of this.taps) {
      if (info.session === 0 || info.tap.closedByHub || info.conn.ended || info.conn.tap !== info.tap) continue;
      const s = byId.get(info.session);
      if (!s || s.state !== SessionState.ACTIVE || s.neverShedBytes > 0) continue;
      const st = info.tap.stats;
      if (st.received !== st.frames + st.estops) continue;
      const client = this.sim.client(info.conn.client);
      if (!client || client.lib.sessionId !== s.id || client.lib.state !== 'active') continue;
      const held = Array.from(client.lib.grants.values());
      this.episode(`client/${s.id}`, !sameGrants(s.subs, held), () =>
        this.violate('grantUnannounced', info.tap.id, '-', `session ${s.id}: hub grants [${grantKey(s.subs)}], the client holds [${wireKey(held)}] with every frame received`),
      );
    }
  }

  private name(channelId: number): string {
    return this.sim.catalog.byId(channelId)?.name ?? `#${channelId}`;
  }

  // ---------------------------------------------------------------- the log: ESTOP writes, STALE sessions

  private readLog(byId: ReadonlyMap<number, SessionView>): void {
    const log = this.sim.log;
    const reclaims = this.sim.hub.counters.reclaims;
    const reclaimed = reclaims > this.reclaimsSeen;
    this.reclaimsSeen = reclaims;
    const ttl = this.sim.scenario.hub.staleTtlMs;
    const base = this.sim.logDropped;
    if (this.logRead < base) this.logRead = base;
    for (; this.logRead < base + log.length; this.logRead++) {
      const r = log[this.logRead - base] as (typeof log)[number];
      const id = r.a ?? 0;
      switch (r.code) {
        case 'session-park':
        case 'session-stale':
          this.staleSince.set(id, r.tMs);
          break;
        case 'session-resume':
          this.staleSince.delete(id);
          break;
        case 'session-close': {
          const since = this.staleSince.get(id);
          this.staleSince.delete(id);
          // §6.6: a STALE session goes only when its TTL has passed or a new session needs its slot.
          if (since !== undefined && !reclaimed && Math.floor(r.tMs) - Math.floor(since) < ttl) {
            this.violate('parkedNotResumable', `session ${id}`, '-', `STALE since ${since} ms, closed at ${r.tMs} ms (TTL ${ttl} ms) without slot pressure`);
          }
          break;
        }
        case 'estop':
          this.estopWritten(r.tMs, byId);
          break;
      }
    }
  }

  /** Every ACTIVE session's current link got the write-ahead ESTOP at the instant of the latch. */
  private estopWritten(tMs: number, byId: ReadonlyMap<number, SessionView>): void {
    const atUs = Math.round(tMs * US_PER_MS);
    for (const [id, s] of byId) {
      if (s.state !== SessionState.ACTIVE) continue;
      const a = this.announced.get(id);
      const info = a ? this.byTap.get(a.tap) : undefined;
      if (!info || info.tap.closedByHub) continue;
      if (!info.tap.estops.some((e) => e.handoffUs === atUs)) {
        this.violate('estopNotWritten', info.tap.id, 'estop', `session ${id} is ACTIVE and its link got no ESTOP at the latch`);
      }
    }
  }

  /** A NACK UNKNOWN_SESSION answered a resume: the session the client holds must be gone from the hub. */
  private resumes(byId: ReadonlyMap<number, SessionView>): void {
    for (const info of this.taps) {
      if (!info.refusedResume) continue;
      info.refusedResume = false;
      const client = this.sim.client(info.conn.client);
      const id = client ? client.lib.sessionId : 0;
      const s = byId.get(id);
      if (id !== 0 && s && s.state !== SessionState.CLOSED) {
        this.violate('parkedNotResumable', info.tap.id, '-', `resume of session ${id} refused UNKNOWN_SESSION while the hub holds it ${s.state === SessionState.STALE ? 'STALE' : 'ACTIVE'}`);
      }
    }
  }

  // ---------------------------------------------------------------- memory (§6 fixed sizes)

  private heap(sessions: readonly SessionView[]): void {
    const hub = this.sim.hub;
    const fp = hub.footprint();
    const i = this.initial;
    const cfg = hub.config;
    const problems: string[] = [];
    for (const k of ['routes', 'subscriptionRows', 'stateValueArraysMax', 'eventRings', 'eventCapacity', 'scratchBytes'] as const) {
      if (fp[k] !== i[k]) problems.push(`${k} ${fp[k]} (fixed at setup: ${i[k]})`);
    }
    if (fp.subscriptions > fp.subscriptionRows) problems.push(`subscriptions ${fp.subscriptions} > rows ${fp.subscriptionRows}`);
    if (fp.stateValueArrays > fp.stateValueArraysMax) problems.push(`stateValueArrays ${fp.stateValueArrays} > ${fp.stateValueArraysMax}`);
    if (fp.neverShedBytes > cfg.slots * cfg.neverShedBytes) problems.push(`never-shed capacity ${fp.neverShedBytes} B > ${cfg.slots} slots × ${cfg.neverShedBytes} B`);
    if (sessions.length > cfg.slots) problems.push(`${sessions.length} sessions > ${cfg.slots} slots`);
    for (const s of sessions) if (s.neverShedBytes > cfg.neverShedBytes) problems.push(`session ${s.id} holds ${s.neverShedBytes} never-shed bytes > ${cfg.neverShedBytes}`);
    this.episode('heap', problems.length > 0, () => this.violate('heapUnbounded', '-', '-', problems.join('; ')));
  }
}
