// `hubctl replay FILE.mcap`: a recording played back into the simulator's dashboard. The
// simulator runs the `replay` scenario (host-sim/scenarios/replay.json: the robot silent, a
// console, a scope and a phone on clear links) and its hub publishes the recorded samples at
// their recorded times (host-sim/playback.ts), so the dashboard, the scenario's clients and
// external clients (hubctl echo, your own) see them as they were recorded. docs/tools.md.

import type { CatalogIndex } from '../catalog/index.js';
import { startDashboard, type Dashboard } from '../host-sim/dashboard/server.js';
import { playable, type PlaybackSample } from '../host-sim/playback.js';
import type { Scenario } from '../host-sim/scenario.js';
import { MESSAGE_KEYS, type Recording } from './mcap.js';

/** What a recording gives the simulator, and what it leaves out. */
export interface PlaybackPlan {
  readonly samples: PlaybackSample[];
  /** From the first sample to the last, ms. */
  readonly spanMs: number;
  /** Messages not played, by topic, with the reason. */
  readonly skipped: Map<string, { count: number; why: string }>;
}

/**
 * Turns a recording's channel messages into playback samples, the first `leadMs` after the start.
 * Channels are matched by name to the simulator's catalog and must have the same fields; the
 * hub's own channels and the `/hub/…` topics (grants, NACKs, ESTOPs: the recorder's view of that
 * hub, which the simulated hub makes anew) are not played.
 */
export function planPlayback(rec: Recording, catalog: CatalogIndex, leadMs: number): PlaybackPlan {
  const skipped = new Map<string, { count: number; why: string }>();
  const skip = (topic: string, why: string): void => {
    const s = skipped.get(topic);
    if (s) s.count++;
    else skipped.set(topic, { count: 1, why });
  };
  const chosen: { timeMs: number; channelId: number; values: number[]; text?: string }[] = [];
  for (const m of rec.messages) {
    if (m.channelId === undefined) {
      skip(m.topic, 'the session’s own view of the recorded hub, not telemetry');
      continue;
    }
    const info = catalog.byName(m.topic.replace(/^\//, ''));
    if (info === undefined) {
      skip(m.topic, 'no channel of that name in the simulator’s catalog');
      continue;
    }
    if (!playable(catalog, info.id)) {
      skip(m.topic, 'the hub’s own channel: the simulated hub states its own');
      continue;
    }
    const raw = m.message[MESSAGE_KEYS.values];
    let values: number[];
    if (Array.isArray(raw)) values = raw.filter((v): v is number => typeof v === 'number');
    else values = info.def.fields.map((f) => m.message[f.name]).filter((v): v is number => typeof v === 'number');
    if (values.length !== info.fieldCount) {
      skip(m.topic, `${values.length} values where the catalog has ${info.fieldCount} fields`);
      continue;
    }
    const text = m.message[MESSAGE_KEYS.text];
    chosen.push({ timeMs: m.timeMs, channelId: info.id, values, ...(typeof text === 'string' ? { text } : {}) });
  }
  chosen.sort((a, b) => a.timeMs - b.timeMs);
  const t0 = chosen.length > 0 ? (chosen[0] as { timeMs: number }).timeMs : 0;
  const samples = chosen.map((c) => ({ atMs: c.timeMs - t0 + leadMs, channelId: c.channelId, values: c.values, ...(c.text !== undefined ? { text: c.text } : {}) }));
  const spanMs = chosen.length > 0 ? (chosen[chosen.length - 1] as { timeMs: number }).timeMs - t0 : 0;
  return { samples, spanMs, skipped };
}

export interface ReplayOptions {
  readonly scenario: Scenario;
  readonly plan: PlaybackPlan;
  readonly leadMs: number;
  readonly repeat: boolean;
  readonly port: number;
  readonly tcpPort: number;
  readonly wsPort: number;
  readonly say: (line: string) => void;
}

/** Starts the simulator with the recording; the scenario's script lasts as long as the recording. */
export function startReplay(o: ReplayOptions): Promise<Dashboard> {
  const durationMs = Math.max(1000, Math.ceil(o.leadMs + o.plan.spanMs + 1000));
  return startDashboard({
    scenario: { ...o.scenario, durationMs },
    playback: { samples: o.plan.samples, repeat: o.repeat },
    port: o.port,
    tcpPort: o.tcpPort,
    wsPort: o.wsPort,
    say: o.say,
  });
}
