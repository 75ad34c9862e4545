// What the uplink publishes, topic by topic (docs/fleet.md "Topics and payloads"): the topic
// names under `fleet/<site>/<hub-id>/`, and the payloads made from the hub's frames and its
// health report. Platform-free.

import type { CatalogIndex, ChannelInfo } from '../catalog/index.js';
import { ESTOP_FLAG_LATCHED, EstopKind, type EstopFrame } from '../hub/estop-frame.js';
import type { DataFrame } from '../hub/frames.js';
import { METRICS_VERSION } from '../hub/health.js';
import type { HealthSummary } from '../hub/load.js';
import { utf8ByteLength, utf8Write } from '../hub/utf8.js';

export const TOPIC_ROOT = 'fleet';
export const STATUS_ONLINE = 'online';
export const STATUS_OFFLINE = 'offline';

/** ESTOP sources by code, as the `safety` payload names them (hub/estop-frame.ts EstopSource). */
export const SOURCE_NAMES = Object.freeze(['client', 'hub-button', 'deadman', 'watchdog', 'robot', 'fleet'] as const);

/** The topics of one hub. */
export class Topics {
  readonly base: string;
  readonly status: string;
  readonly health: string;
  readonly safety: string;
  /** Where fleet stops for the whole site arrive. */
  readonly estop: string;
  private readonly byChannel: (string | undefined)[] = [];

  constructor(site: string, hubId: string, catalog: CatalogIndex, telemetry: readonly string[], events: readonly string[]) {
    this.base = `${TOPIC_ROOT}/${site}/${hubId}`;
    this.status = `${this.base}/status`;
    this.health = `${this.base}/health`;
    this.safety = `${this.base}/safety`;
    this.estop = `${TOPIC_ROOT}/${site}/estop`;
    for (const name of telemetry) {
      const ch = catalog.byName(name);
      if (ch) this.byChannel[ch.id] = `${this.base}/telemetry/${name}`;
    }
    for (const name of events) {
      const ch = catalog.byName(name);
      if (ch) this.byChannel[ch.id] = `${this.base}/events/${name}`;
    }
  }

  /** The topic a channel's DATA goes to; undefined for a channel the config does not name. */
  ofChannel(channelId: number): string | undefined {
    return this.byChannel[channelId];
  }
}

/** UTF-8 bytes of a string. */
export function utf8Bytes(s: string): Uint8Array {
  const out = new Uint8Array(utf8ByteLength(s));
  utf8Write(s, out, 0);
  return out;
}

/** A number as JSON has it (non-finite numbers are not JSON: null). */
function jsonNumber(x: number): number | null {
  return Number.isFinite(x) ? x : null;
}

/** A DATA frame as JSON: `{"seq","t","values":{field: value}}`, with `gap`, `dropped`, `text` when the frame has them. */
export function dataJson(f: DataFrame, ch: ChannelInfo | undefined): string {
  const values: Record<string, number | null> = {};
  const fields = ch ? ch.def.fields : [];
  for (let i = 0; i < f.values.length; i++) {
    const field = fields[i];
    values[field ? field.name : `v${i}`] = jsonNumber(f.values[i] as number);
  }
  const o: Record<string, unknown> = { seq: f.seq, t: f.t, values };
  if (f.gap) o['gap'] = true;
  if (f.dropped !== undefined) o['dropped'] = f.dropped;
  if (f.text !== undefined) o['text'] = f.text;
  return JSON.stringify(o);
}

/** An ESTOP frame as the `safety` topic's JSON. */
export function safetyJson(e: EstopFrame): string {
  const latched = (e.flags & ESTOP_FLAG_LATCHED) !== 0;
  return JSON.stringify({
    latched,
    kind: e.kind === EstopKind.ASSERT ? 'assert' : 'cleared',
    source: latched ? (SOURCE_NAMES[e.source] ?? e.source) : null,
    origin: e.origin,
    seq: e.seq,
  });
}

/** What the uplink adds to the health summary about itself. */
export interface UplinkHealth {
  readonly level: number;
  readonly occupancy: number;
  readonly published: number;
  readonly publishedBytes: number;
  readonly unsent: number;
  readonly healthReplaced: number;
  readonly connects: number;
  readonly fleetStops: { readonly accepted: number; readonly refused: number };
}

/**
 * The public health summary (metrics v1): counts and levels from the hub's report, no names,
 * credentials, tokens or payload values (docs/fleet.md "health").
 */
export function healthJson(h: HealthSummary, uplink: UplinkHealth): string {
  return JSON.stringify({
    version: METRICS_VERSION,
    atMs: h.atMs,
    ready: h.ready,
    latched: h.latched,
    estops: h.estops,
    sessions: { slots: h.slots, active: h.active, stale: h.stale },
    pushes: {
      delivered: h.delivered,
      decimated: h.decimated,
      conflated: h.conflated,
      shedDrops: h.shedDrops,
      egressDrops: h.egressDrops,
      rateGated: h.rateGated,
    },
    parks: h.parks,
    resumes: h.resumes,
    ladder: { rung: h.rung, changes: h.ladderChanges },
    egress: { occupancy: h.egressOccupancy, readerStalledLinks: h.readerStalledLinks },
    heap: { usedBytes: h.heapUsedBytes, limitBytes: h.heapLimitBytes },
    loopDelayMs: { p95: h.loopDelayP95, max: h.loopDelayMax },
    uplink: {
      level: uplink.level,
      occupancy: Math.round(uplink.occupancy * 1000) / 1000,
      published: uplink.published,
      publishedBytes: uplink.publishedBytes,
      unsent: uplink.unsent,
      healthReplaced: uplink.healthReplaced,
      connects: uplink.connects,
      fleetStops: uplink.fleetStops,
    },
  });
}
