// The dashboard's fleet view (docs/fleet.md): every hub of a site as the broker shows it, read
// from the retained `status`, `health` and `safety` topics. `applyFleetMessage` is the pure part;
// `FleetView` subscribes with the `mqtt` package and keeps the newest of each hub.

import mqtt, { type MqttClient } from 'mqtt';
import type { FleetEntryMsg } from './dashboard/messages.js';

/** What the view knows of one hub. */
interface Entry {
  status: string;
  latched: boolean | null;
  source: string | null;
  sessions: number | null;
  estops: number | null;
  uplinkLevel: number | null;
  healthAtMs: number | null;
  seenAt: number;
}

/** One message under `fleet/<site>/…` taken into `hubs`; false when it is not one the view reads. */
export function applyFleetMessage(hubs: Map<string, Entry>, site: string, topic: string, payload: Uint8Array, now: number): boolean {
  const parts = topic.split('/');
  if (parts.length !== 4 || parts[0] !== 'fleet' || parts[1] !== site) return false;
  const id = parts[2] as string;
  const kind = parts[3];
  if (kind !== 'status' && kind !== 'health' && kind !== 'safety') return false;
  const text = Buffer.from(payload).toString('utf8');
  let e = hubs.get(id);
  if (!e) {
    e = { status: '?', latched: null, source: null, sessions: null, estops: null, uplinkLevel: null, healthAtMs: null, seenAt: now };
    hubs.set(id, e);
  }
  e.seenAt = now;
  if (kind === 'status') {
    e.status = text === 'online' || text === 'offline' ? text : '?';
    return true;
  }
  let o: Record<string, unknown>;
  try {
    const v = JSON.parse(text) as unknown;
    if (typeof v !== 'object' || v === null) return false;
    o = v as Record<string, unknown>;
  } catch {
    return false;
  }
  const num = (x: unknown): number | null => (typeof x === 'number' && Number.isFinite(x) ? x : null);
  if (kind === 'safety') {
    e.latched = o['latched'] === true;
    e.source = typeof o['source'] === 'string' ? o['source'] : null;
  } else {
    const sessions = o['sessions'] as Record<string, unknown> | undefined;
    const uplink = o['uplink'] as Record<string, unknown> | undefined;
    e.sessions = sessions ? num(sessions['active']) : null;
    e.estops = num(o['estops']);
    e.uplinkLevel = uplink ? num(uplink['level']) : null;
    e.healthAtMs = num(o['atMs']);
    if (e.latched === null && typeof o['latched'] === 'number') e.latched = o['latched'] === 1;
  }
  return true;
}

/** The hubs in the order of their ids, as the dashboard shows them. */
export function fleetEntries(hubs: Map<string, Entry>, now: number): FleetEntryMsg[] {
  return Array.from(hubs.entries())
    .sort((a, b) => a[0].localeCompare(b[0], 'en', { numeric: true }))
    .map(([id, e]) => ({ id, status: e.status, latched: e.latched, source: e.source, sessions: e.sessions, estops: e.estops, uplinkLevel: e.uplinkLevel, heardMsAgo: Math.max(0, Math.round(now - e.seenAt)) }));
}

export class FleetView {
  private readonly hubs = new Map<string, Entry>();
  private readonly client: MqttClient;

  constructor(
    url: string,
    readonly site: string,
  ) {
    this.client = mqtt.connect(url, { protocolVersion: 4, clean: true, reconnectPeriod: 2000, connectTimeout: 10000 });
    this.client.on('connect', () => {
      for (const k of ['status', 'health', 'safety']) this.client.subscribe(`fleet/${site}/+/${k}`, { qos: 0 });
    });
    this.client.on('error', () => undefined);
    this.client.on('message', (topic, payload) => void applyFleetMessage(this.hubs, site, topic, payload, performance.now()));
  }

  get connected(): boolean {
    return this.client.connected;
  }

  entries(): FleetEntryMsg[] {
    return fleetEntries(this.hubs, performance.now());
  }

  close(): Promise<void> {
    return new Promise((resolve) => this.client.end(true, {}, () => resolve()));
  }
}
