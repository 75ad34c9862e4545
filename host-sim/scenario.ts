// The scenario: one JSON document that says everything a run depends on besides the code: the
// seed, the duration, the hub's configuration and credentials, the robot's rates, the link
// profiles and their models, the clients and their wishes, and the timeline of events and faults.
// docs/simulator.md describes every field. `validateScenario` checks a parsed document completely
// and reports every problem with its path ("events[3].client: no client named 'joy'"); what it
// returns is normalized (defaults filled in) and frozen.

import { readUplinkConfig, type UplinkConfig } from '../uplink/config.js';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { CatalogIndex } from '../catalog/index.js';
import { ChannelClass, Direction, PRIORITY_NAMES, TIER_NAMES, type PriorityName, type TierName } from '../catalog/schema.js';
import { BINDINGS, defaultsFor, type BindingName, type LinkParams } from './links/index.js';
import { ROBOT_DEFAULTS, type RobotParams } from './robot.js';

export const ROLES = Object.freeze(['console', 'joystick', 'planner', 'scope', 'logger', 'viewer', 'flooder'] as const);
export type RoleName = (typeof ROLES)[number];

export interface SubscriptionSpec {
  readonly channel: string;
  readonly rateHz: number;
  readonly priority?: PriorityName;
}

export interface PublicationSpec {
  readonly channel: string;
  readonly rateHz: number;
  readonly burst?: number;
}

export interface ClientSpec {
  readonly name: string;
  readonly role: RoleName;
  readonly link: string;
  /** A credential name from `credentials`, or null: the hub's anonymous tier. */
  readonly credential: string | null;
  readonly startMs: number;
  /** GOODBYE at this time; null: stays to the end. */
  readonly stopMs: number | null;
  readonly subscriptions: readonly SubscriptionSpec[];
  readonly publications: readonly PublicationSpec[];
  /** Reconnect (resume) when the transport is lost. */
  readonly reconnect: boolean;
}

export interface HubSpec {
  readonly slots: number;
  readonly tickMs: number;
  readonly capacityHz: number;
  readonly deadmanMs: number;
  readonly staleTtlMs: number;
  readonly neverShedBytes: number;
  readonly anonymousTier: TierName;
}

export const HUB_DEFAULTS: HubSpec = Object.freeze({
  slots: 8,
  tickMs: 10,
  capacityHz: 2000,
  deadmanMs: 500,
  staleTtlMs: 30000,
  neverShedBytes: 2048,
  anonymousTier: 'observer',
});

export type EventSpec =
  | { readonly atMs: number; readonly type: 'take-control'; readonly client: string; readonly retryForMs: number }
  | { readonly atMs: number; readonly type: 'release-control'; readonly client: string }
  | { readonly atMs: number; readonly type: 'intent'; readonly client: string; readonly channel: string; readonly args: readonly (number | string)[] }
  | { readonly atMs: number; readonly type: 'cmd-vel'; readonly client: string; readonly durationMs: number; readonly rateHz: number }
  | {
      readonly atMs: number;
      readonly type: 'trajectory';
      readonly client: string;
      readonly durationMs: number;
      readonly meanPerS: number;
      readonly peakEveryMs: number;
      readonly peakCount: number;
    }
  | { readonly atMs: number; readonly type: 'subscribe'; readonly client: string; readonly subscriptions: readonly SubscriptionSpec[] }
  | { readonly atMs: number; readonly type: 'unsubscribe'; readonly client: string; readonly channels: readonly string[] }
  | { readonly atMs: number; readonly type: 'stall'; readonly client?: string; readonly link?: string; readonly durationMs: number; readonly direction: 'down' | 'up' | 'both' }
  | { readonly atMs: number; readonly type: 'partition'; readonly client?: string; readonly link?: string; readonly durationMs: number }
  | { readonly atMs: number; readonly type: 'loss'; readonly client?: string; readonly link?: string; readonly rate: number }
  | { readonly atMs: number; readonly type: 'disconnect'; readonly client: string; readonly mode: 'reset' | 'silent' }
  | { readonly atMs: number; readonly type: 'reconnect'; readonly client: string; readonly link: string; readonly mode: 'reset' | 'silent' }
  | { readonly atMs: number; readonly type: 'button'; readonly held: boolean }
  | { readonly atMs: number; readonly type: 'heap'; readonly bytes: number | null }
  | { readonly atMs: number; readonly type: 'estop'; readonly client: string }
  | { readonly atMs: number; readonly type: 'estop-clear'; readonly client: string }
  | {
      readonly atMs: number;
      readonly type: 'join-storm';
      readonly count: number;
      readonly link: string;
      readonly credential: string | null;
      readonly spreadMs: number;
      readonly durationMs: number | null;
      readonly subscriptions: readonly SubscriptionSpec[];
    }
  | {
      readonly atMs: number;
      readonly type: 'flood';
      readonly client: string;
      readonly kind: 'intents' | 'bundles' | 'malformed';
      readonly ratePerS: number;
      readonly durationMs: number;
      readonly channel: string;
    };

export type EventType = EventSpec['type'];

export interface Scenario {
  readonly name: string;
  readonly description: string;
  readonly seed: number;
  readonly durationMs: number;
  readonly hub: HubSpec;
  /** Credential name → tier; the credential's bytes are the UTF-8 of its name. */
  readonly credentials: Readonly<Record<string, TierName>>;
  readonly robot: RobotParams;
  readonly links: Readonly<Record<string, LinkParams>>;
  readonly clients: readonly ClientSpec[];
  readonly events: readonly EventSpec[];
  /** The fleet uplink's configuration (docs/fleet.md); null: the scenario names none (defaults apply). */
  readonly uplink: UplinkConfig | null;
}

/** What each role subscribes to and publishes unless the client says otherwise. */
export const ROLE_PRESETS: Readonly<Record<RoleName, { subscriptions: SubscriptionSpec[]; publications: PublicationSpec[] }>> = Object.freeze({
  console: {
    subscriptions: [
      { channel: 'safety', rateHz: 10 },
      { channel: 'safety-events', rateHz: 20 },
      { channel: 'control-owner', rateHz: 2 },
      { channel: 'battery', rateHz: 1 },
      { channel: 'joint_states', rateHz: 20 },
      { channel: 'odom', rateHz: 20 },
      { channel: 'fault', rateHz: 10, priority: 'elevated' },
    ],
    publications: [],
  },
  joystick: {
    subscriptions: [
      { channel: 'safety', rateHz: 10 },
      { channel: 'control-owner', rateHz: 2 },
    ],
    publications: [{ channel: 'cmd_vel', rateHz: 50 }],
  },
  planner: {
    subscriptions: [
      { channel: 'safety', rateHz: 10 },
      { channel: 'control-owner', rateHz: 2 },
      { channel: 'odom', rateHz: 10 },
    ],
    publications: [{ channel: 'trajectory', rateHz: 5, burst: 20 }],
  },
  scope: {
    subscriptions: [
      { channel: 'safety', rateHz: 10 },
      { channel: 'imu', rateHz: 200, priority: 'elevated' },
    ],
    publications: [],
  },
  logger: {
    subscriptions: [
      { channel: 'safety', rateHz: 10 },
      { channel: 'safety-events', rateHz: 20 },
      { channel: 'control-owner', rateHz: 2 },
      { channel: 'imu', rateHz: 200, priority: 'background' },
      { channel: 'odom', rateHz: 50, priority: 'background' },
      { channel: 'joint_states', rateHz: 50, priority: 'background' },
      { channel: 'battery', rateHz: 1, priority: 'background' },
      { channel: 'scan', rateHz: 10, priority: 'background' },
      { channel: 'path', rateHz: 25, priority: 'background' },
      { channel: 'log', rateHz: 50, priority: 'background' },
      { channel: 'fault', rateHz: 10, priority: 'background' },
    ],
    publications: [],
  },
  viewer: {
    subscriptions: [
      { channel: 'safety', rateHz: 10 },
      { channel: 'battery', rateHz: 1 },
      { channel: 'odom', rateHz: 10 },
      { channel: 'path', rateHz: 25 },
    ],
    publications: [],
  },
  flooder: { subscriptions: [{ channel: 'safety', rateHz: 10 }], publications: [] },
});

// ---------------------------------------------------------------------------------------------
// Validation.

export interface ScenarioProblem {
  readonly path: string;
  readonly reason: string;
}

export class ScenarioError extends Error {
  readonly problems: readonly ScenarioProblem[];
  constructor(problems: readonly ScenarioProblem[], source = 'scenario') {
    super(`invalid ${source} (${problems.length} problem${problems.length === 1 ? '' : 's'}):\n${problems.map((p) => `  ${p.path}: ${p.reason}`).join('\n')}`);
    this.name = 'ScenarioError';
    this.problems = problems;
  }
}

type Obj = Record<string, unknown>;

class Checker {
  readonly problems: ScenarioProblem[] = [];
  fail(path: string, reason: string): void {
    this.problems.push({ path, reason });
  }
  isObj(x: unknown): x is Obj {
    return typeof x === 'object' && x !== null && !Array.isArray(x);
  }
  obj(x: unknown, path: string): Obj | undefined {
    if (!this.isObj(x)) {
      this.fail(path, `must be an object, got ${kind(x)}`);
      return undefined;
    }
    return x;
  }
  only(o: Obj, path: string, keys: readonly string[]): void {
    for (const k of Object.keys(o)) if (!keys.includes(k)) this.fail(join2(path, k), `unknown field (expected one of: ${keys.join(', ')})`);
  }
  str(o: Obj, k: string, path: string, dflt?: string): string {
    const v = o[k];
    if (v === undefined && dflt !== undefined) return dflt;
    if (typeof v !== 'string' || v.length === 0) {
      this.fail(join2(path, k), v === undefined ? 'required' : `must be a non-empty string, got ${kind(v)}`);
      return dflt ?? '';
    }
    return v;
  }
  num(o: Obj, k: string, path: string, opts: { min?: number; max?: number; int?: boolean; gt?: number; dflt?: number }): number {
    const v = o[k];
    if (v === undefined && opts.dflt !== undefined) return opts.dflt;
    const p = join2(path, k);
    if (typeof v !== 'number' || !Number.isFinite(v)) {
      this.fail(p, v === undefined ? 'required' : `must be a finite number, got ${kind(v)}`);
      return opts.dflt ?? 0;
    }
    if (opts.int && !Number.isInteger(v)) this.fail(p, `must be an integer, got ${v}`);
    if (opts.min !== undefined && v < opts.min) this.fail(p, `must be ≥ ${opts.min}, got ${v}`);
    if (opts.gt !== undefined && !(v > opts.gt)) this.fail(p, `must be > ${opts.gt}, got ${v}`);
    if (opts.max !== undefined && v > opts.max) this.fail(p, `must be ≤ ${opts.max}, got ${v}`);
    return v;
  }
  bool(o: Obj, k: string, path: string, dflt?: boolean): boolean {
    const v = o[k];
    if (v === undefined && dflt !== undefined) return dflt;
    if (typeof v !== 'boolean') {
      this.fail(join2(path, k), v === undefined ? 'required' : `must be true or false, got ${kind(v)}`);
      return dflt ?? false;
    }
    return v;
  }
  oneOf<T extends string>(o: Obj, k: string, path: string, options: readonly T[], dflt?: T): T {
    const v = o[k];
    if (v === undefined && dflt !== undefined) return dflt;
    if (typeof v !== 'string' || !(options as readonly string[]).includes(v)) {
      this.fail(join2(path, k), v === undefined ? `required (one of: ${options.join(', ')})` : `must be one of ${options.join(', ')}, got ${JSON.stringify(v)}`);
      return dflt ?? (options[0] as T);
    }
    return v as T;
  }
  arr(o: Obj, k: string, path: string, dflt?: unknown[]): unknown[] {
    const v = o[k];
    if (v === undefined && dflt !== undefined) return dflt;
    if (!Array.isArray(v)) {
      this.fail(join2(path, k), v === undefined ? 'required' : `must be an array, got ${kind(v)}`);
      return [];
    }
    return v;
  }
}

function kind(x: unknown): string {
  if (x === null) return 'null';
  if (Array.isArray(x)) return 'an array';
  if (typeof x === 'string') return `the string ${JSON.stringify(x.length > 40 ? x.slice(0, 40) + '…' : x)}`;
  if (typeof x === 'number') return `the number ${x}`;
  return typeof x;
}

function join2(path: string, k: string | number): string {
  if (typeof k === 'number') return `${path}[${k}]`;
  return path ? `${path}.${k}` : k;
}

const MAX_DURATION_MS = 24 * 3600 * 1000;
const NAME_RE = /^[A-Za-z0-9_.-]{1,32}$/;

const EVENT_FIELDS: Readonly<Record<EventType, readonly string[]>> = Object.freeze({
  'take-control': ['client', 'retryForMs'],
  'release-control': ['client'],
  intent: ['client', 'channel', 'args'],
  'cmd-vel': ['client', 'durationMs', 'rateHz'],
  trajectory: ['client', 'durationMs', 'meanPerS', 'peakEveryMs', 'peakCount'],
  subscribe: ['client', 'subscriptions'],
  unsubscribe: ['client', 'channels'],
  stall: ['client', 'link', 'durationMs', 'direction'],
  partition: ['client', 'link', 'durationMs'],
  loss: ['client', 'link', 'rate'],
  disconnect: ['client', 'mode'],
  reconnect: ['client', 'link', 'mode'],
  button: ['held'],
  heap: ['bytes'],
  estop: ['client'],
  'estop-clear': ['client'],
  'join-storm': ['count', 'link', 'credential', 'spreadMs', 'durationMs', 'subscriptions'],
  flood: ['client', 'kind', 'ratePerS', 'durationMs', 'channel'],
});
const EVENT_TYPES = Object.keys(EVENT_FIELDS) as EventType[];

/**
 * Checks a parsed scenario against the schema and the catalog. Throws ScenarioError listing every
 * problem (path and reason); returns the scenario with every default filled in.
 */
export function validateScenario(x: unknown, catalog: CatalogIndex, source = 'scenario'): Scenario {
  const c = new Checker();
  const root = c.obj(x, '(root)') ?? {};
  c.only(root, '', ['name', 'description', 'seed', 'durationMs', 'hub', 'credentials', 'robot', 'links', 'clients', 'events', 'uplink']);
  const name = c.str(root, 'name', '');
  const description = c.str(root, 'description', '', '-');
  const seed = c.num(root, 'seed', '', { min: 0, max: Number.MAX_SAFE_INTEGER, int: true, dflt: 1 });
  const durationMs = c.num(root, 'durationMs', '', { gt: 0, max: MAX_DURATION_MS });

  // hub
  const hubIn = root['hub'] === undefined ? {} : (c.obj(root['hub'], 'hub') ?? {});
  c.only(hubIn, 'hub', Object.keys(HUB_DEFAULTS));
  const hub: HubSpec = {
    slots: c.num(hubIn, 'slots', 'hub', { min: 1, max: 255, int: true, dflt: HUB_DEFAULTS.slots }),
    tickMs: c.num(hubIn, 'tickMs', 'hub', { min: 1, max: 1000, dflt: HUB_DEFAULTS.tickMs }),
    capacityHz: c.num(hubIn, 'capacityHz', 'hub', { min: 0, max: 1e6, dflt: HUB_DEFAULTS.capacityHz }),
    deadmanMs: c.num(hubIn, 'deadmanMs', 'hub', { min: 1, max: 60000, int: true, dflt: HUB_DEFAULTS.deadmanMs }),
    staleTtlMs: c.num(hubIn, 'staleTtlMs', 'hub', { min: 0, max: MAX_DURATION_MS, int: true, dflt: HUB_DEFAULTS.staleTtlMs }),
    neverShedBytes: c.num(hubIn, 'neverShedBytes', 'hub', { min: 64, max: 1 << 20, int: true, dflt: HUB_DEFAULTS.neverShedBytes }),
    anonymousTier: c.oneOf(hubIn, 'anonymousTier', 'hub', TIER_NAMES, HUB_DEFAULTS.anonymousTier),
  };

  // credentials
  const credentials: Record<string, TierName> = {};
  const credIn = root['credentials'] === undefined ? {} : (c.obj(root['credentials'], 'credentials') ?? {});
  for (const [k, v] of Object.entries(credIn)) {
    const p = join2('credentials', k);
    if (!NAME_RE.test(k)) c.fail(p, 'a credential name is 1–32 letters, digits, _ . -');
    if (typeof v !== 'string' || !(TIER_NAMES as readonly string[]).includes(v)) c.fail(p, `must be a tier (${TIER_NAMES.join(', ')}), got ${kind(v)}`);
    else credentials[k] = v as TierName;
  }

  // robot
  const robotIn = root['robot'] === undefined ? {} : (c.obj(root['robot'], 'robot') ?? {});
  c.only(robotIn, 'robot', Object.keys(ROBOT_DEFAULTS));
  const robot: Record<string, number> = {};
  for (const [k, d] of Object.entries(ROBOT_DEFAULTS)) robot[k] = c.num(robotIn, k, 'robot', { min: 0, max: 1e6, dflt: d as number });

  // links
  const links: Record<string, LinkParams> = {};
  const linksIn = c.obj(root['links'], 'links') ?? {};
  if (Object.keys(linksIn).length === 0 && c.isObj(root['links'])) c.fail('links', 'at least one link profile is required');
  for (const [k, v] of Object.entries(linksIn)) {
    const p = join2('links', k);
    if (!NAME_RE.test(k)) c.fail(p, 'a link name is 1–32 letters, digits, _ . -');
    const o = c.obj(v, p);
    if (!o) continue;
    const binding = c.oneOf(o, 'binding', p, BINDINGS);
    const defaults = defaultsFor(binding);
    c.only(o, p, ['binding', ...Object.keys(defaults)]);
    const params: Record<string, unknown> = { binding };
    for (const [pk, d] of Object.entries(defaults)) params[pk] = c.num(o, pk, p, linkBounds(binding, pk, d));
    links[k] = params as unknown as LinkParams;
  }

  // clients
  const clients: ClientSpec[] = [];
  const names = new Set<string>();
  c.arr(root, 'clients', '').forEach((v, i) => {
    const p = join2('clients', i);
    const o = c.obj(v, p);
    if (!o) return;
    c.only(o, p, ['name', 'role', 'link', 'credential', 'startMs', 'stopMs', 'subscriptions', 'publications', 'reconnect']);
    const cname = c.str(o, 'name', p);
    if (cname && !NAME_RE.test(cname)) c.fail(join2(p, 'name'), 'a client name is 1–32 letters, digits, _ . -');
    if (names.has(cname)) c.fail(join2(p, 'name'), `duplicate client name '${cname}'`);
    names.add(cname);
    const role = c.oneOf(o, 'role', p, ROLES);
    const link = c.str(o, 'link', p);
    if (link && !(link in links) && c.isObj(root['links'])) c.fail(join2(p, 'link'), `no link profile named '${link}'`);
    const credential = credentialOf(c, o, p, credentials);
    const startMs = c.num(o, 'startMs', p, { min: 0, dflt: 0 });
    const stopMs = o['stopMs'] === undefined || o['stopMs'] === null ? null : c.num(o, 'stopMs', p, { min: 0 });
    if (stopMs !== null && stopMs <= startMs) c.fail(join2(p, 'stopMs'), `must be after startMs (${startMs})`);
    const preset = ROLE_PRESETS[role];
    const subscriptions = o['subscriptions'] === undefined ? preset.subscriptions : subs(c, c.arr(o, 'subscriptions', p), join2(p, 'subscriptions'), catalog);
    const publications = o['publications'] === undefined ? preset.publications : pubs(c, c.arr(o, 'publications', p), join2(p, 'publications'), catalog);
    const reconnect = c.bool(o, 'reconnect', p, true);
    clients.push({ name: cname, role, link, credential, startMs, stopMs, subscriptions, publications, reconnect });
  });

  // events
  const events: EventSpec[] = [];
  c.arr(root, 'events', '', []).forEach((v, i) => {
    const p = join2('events', i);
    const o = c.obj(v, p);
    if (!o) return;
    const type = c.oneOf(o, 'type', p, EVENT_TYPES);
    c.only(o, p, ['atMs', 'type', ...(EVENT_FIELDS[type] ?? [])]);
    const atMs = c.num(o, 'atMs', p, { min: 0 });
    if (atMs > durationMs) c.fail(join2(p, 'atMs'), `is after the end of the run (durationMs ${durationMs})`);
    const e = event(c, o, p, type, atMs, names, links, credentials, catalog);
    if (e) events.push(e);
  });

  // uplink (docs/fleet.md): checked here, used by `npm run fleet` and `npm start -- --broker`
  let uplink: UplinkConfig | null = null;
  if (root['uplink'] !== undefined && root['uplink'] !== null) {
    const read = readUplinkConfig(root['uplink'], catalog);
    for (const pr of read.problems) c.fail(pr.path, pr.reason);
    uplink = read.config;
  }

  if (c.problems.length > 0) throw new ScenarioError(c.problems, source);
  const ordered = events.map((e, i) => [e, i] as const).sort((a, b) => a[0].atMs - b[0].atMs || a[1] - b[1]).map((x) => x[0]);
  return deepFreeze({ name, description, seed, durationMs, hub, credentials, robot: robot as unknown as RobotParams, links, clients, events: ordered, uplink });
}

function linkBounds(binding: BindingName, k: string, dflt: number): { min?: number; max?: number; int?: boolean; gt?: number; dflt: number } {
  if (k === 'lossRate' || k === 'eventLossRate' || k === 'completionLossRate') return { min: 0, max: 1, dflt };
  if (k === 'retries') return { min: 0, max: 15, int: true, dflt };
  // Link security (docs/security.md): 0 or 1.
  if (k === 'openNetwork' || k === 'paired' || k === 'encrypted') return { min: 0, max: 1, int: true, dflt };
  if (k === 'attMtu') return { min: 23, max: 517, int: true, dflt };
  if (k === 'connIntervalMs') return { min: 7.5, max: 4000, dflt };
  if (k === 'perEvent') return { min: 1, max: 64, int: true, dflt };
  if (k === 'readerKbps' || k === 'latencyMs' || k === 'jitterMs') return { min: 0, max: 1e7, dflt };
  if (k === 'queueBytes' && binding !== 'espnow') return { min: 4612, max: 1 << 24, int: true, dflt };
  if (k.endsWith('Bytes') || k.endsWith('Frames') || k.endsWith('Notifications')) return { min: 1, max: 1 << 24, int: true, dflt };
  return { gt: 0, max: 1e9, dflt };
}

function credentialOf(c: Checker, o: Obj, p: string, credentials: Record<string, TierName>): string | null {
  const v = o['credential'];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string') {
    c.fail(join2(p, 'credential'), `must be a credential name or null, got ${kind(v)}`);
    return null;
  }
  if (!(v in credentials)) c.fail(join2(p, 'credential'), `no credential named '${v}'`);
  return v;
}

function channelOf(c: Checker, o: Obj, k: string, p: string, catalog: CatalogIndex, want: 'telemetry' | 'publication' | 'intent'): string {
  const name = c.str(o, k, p);
  if (!name) return name;
  const ch = catalog.byName(name);
  const path = join2(p, k);
  if (!ch) c.fail(path, `no channel named '${name}' in the catalog`);
  else if (want === 'intent' && ch.cls !== ChannelClass.INTENT) c.fail(path, `'${name}' is not an INTENT channel`);
  else if (want === 'publication' && (ch.direction !== Direction.publication || ch.cls === ChannelClass.INTENT)) c.fail(path, `'${name}' is not a publication channel`);
  else if (want === 'telemetry' && ch.direction !== Direction.telemetry) c.fail(path, `'${name}' is not a telemetry channel`);
  return name;
}

function subs(c: Checker, list: unknown[], p: string, catalog: CatalogIndex): SubscriptionSpec[] {
  const out: SubscriptionSpec[] = [];
  list.forEach((v, i) => {
    const q = join2(p, i);
    const o = c.obj(v, q);
    if (!o) return;
    c.only(o, q, ['channel', 'rateHz', 'priority']);
    const channel = channelOf(c, o, 'channel', q, catalog, 'telemetry');
    const rateHz = c.num(o, 'rateHz', q, { gt: 0, max: 1000 });
    const s: { channel: string; rateHz: number; priority?: PriorityName } = { channel, rateHz };
    if (o['priority'] !== undefined) s.priority = c.oneOf(o, 'priority', q, PRIORITY_NAMES);
    out.push(s);
  });
  if (list.length > 32) c.fail(p, `at most 32 subscriptions, got ${list.length}`);
  return out;
}

function pubs(c: Checker, list: unknown[], p: string, catalog: CatalogIndex): PublicationSpec[] {
  const out: PublicationSpec[] = [];
  list.forEach((v, i) => {
    const q = join2(p, i);
    const o = c.obj(v, q);
    if (!o) return;
    c.only(o, q, ['channel', 'rateHz', 'burst']);
    const channel = channelOf(c, o, 'channel', q, catalog, 'publication');
    const rateHz = c.num(o, 'rateHz', q, { gt: 0, max: 1000 });
    const s: { channel: string; rateHz: number; burst?: number } = { channel, rateHz };
    if (o['burst'] !== undefined) s.burst = c.num(o, 'burst', q, { gt: 0, max: 4000 });
    out.push(s);
  });
  return out;
}

function event(
  c: Checker,
  o: Obj,
  p: string,
  type: EventType,
  atMs: number,
  clients: ReadonlySet<string>,
  links: Record<string, LinkParams>,
  credentials: Record<string, TierName>,
  catalog: CatalogIndex,
): EventSpec | undefined {
  const client = (): string => {
    const n = c.str(o, 'client', p);
    if (n && !clients.has(n)) c.fail(join2(p, 'client'), `no client named '${n}'`);
    return n;
  };
  const link = (k = 'link'): string => {
    const n = c.str(o, k, p);
    if (n && !(n in links)) c.fail(join2(p, k), `no link profile named '${n}'`);
    return n;
  };
  const target = (): { client?: string; link?: string } => {
    const hasClient = o['client'] !== undefined;
    const hasLink = o['link'] !== undefined;
    if (hasClient === hasLink) {
      c.fail(p, 'needs exactly one of client or link');
      return {};
    }
    return hasClient ? { client: client() } : { link: link() };
  };
  const dur = (k = 'durationMs'): number => c.num(o, k, p, { gt: 0, max: MAX_DURATION_MS });
  switch (type) {
    case 'take-control':
      return { atMs, type, client: client(), retryForMs: c.num(o, 'retryForMs', p, { min: 0, dflt: 5000 }) };
    case 'release-control':
    case 'estop':
    case 'estop-clear':
      return { atMs, type, client: client() };
    case 'intent': {
      const args = c.arr(o, 'args', p, []);
      args.forEach((a, i) => {
        if (typeof a !== 'number' && typeof a !== 'string') c.fail(join2(join2(p, 'args'), i), `must be a number or a string, got ${kind(a)}`);
      });
      return { atMs, type, client: client(), channel: channelOf(c, o, 'channel', p, catalog, 'intent'), args: args as (number | string)[] };
    }
    case 'cmd-vel':
      return { atMs, type, client: client(), durationMs: dur(), rateHz: c.num(o, 'rateHz', p, { gt: 0, max: 1000, dflt: 50 }) };
    case 'trajectory':
      return {
        atMs,
        type,
        client: client(),
        durationMs: dur(),
        meanPerS: c.num(o, 'meanPerS', p, { gt: 0, max: 1000, dflt: 3 }),
        peakEveryMs: c.num(o, 'peakEveryMs', p, { min: 0, dflt: 10000 }),
        peakCount: c.num(o, 'peakCount', p, { min: 0, max: 1000, int: true, dflt: 25 }),
      };
    case 'subscribe':
      return { atMs, type, client: client(), subscriptions: subs(c, c.arr(o, 'subscriptions', p), join2(p, 'subscriptions'), catalog) };
    case 'unsubscribe': {
      const chans = c.arr(o, 'channels', p);
      chans.forEach((ch, i) => {
        if (typeof ch !== 'string' || !catalog.byName(ch)) c.fail(join2(join2(p, 'channels'), i), `no channel named ${kind(ch)}`);
      });
      return { atMs, type, client: client(), channels: chans as string[] };
    }
    case 'stall':
      return { atMs, type, ...target(), durationMs: dur(), direction: c.oneOf(o, 'direction', p, ['down', 'up', 'both'] as const, 'both') };
    case 'partition':
      return { atMs, type, ...target(), durationMs: dur() };
    case 'loss':
      return { atMs, type, ...target(), rate: c.num(o, 'rate', p, { min: 0, max: 1 }) };
    case 'disconnect':
      return { atMs, type, client: client(), mode: c.oneOf(o, 'mode', p, ['reset', 'silent'] as const, 'reset') };
    case 'reconnect':
      return { atMs, type, client: client(), link: link(), mode: c.oneOf(o, 'mode', p, ['reset', 'silent'] as const, 'reset') };
    case 'button':
      return { atMs, type, held: c.bool(o, 'held', p) };
    case 'heap':
      return { atMs, type, bytes: o['bytes'] === null ? null : c.num(o, 'bytes', p, { min: 0, int: true }) };
    case 'join-storm':
      return {
        atMs,
        type,
        count: c.num(o, 'count', p, { min: 1, max: 256, int: true }),
        link: link(),
        credential: credentialOf(c, o, p, credentials),
        spreadMs: c.num(o, 'spreadMs', p, { min: 0, dflt: 0 }),
        durationMs: o['durationMs'] === undefined || o['durationMs'] === null ? null : dur(),
        subscriptions: o['subscriptions'] === undefined ? ROLE_PRESETS.viewer.subscriptions : subs(c, c.arr(o, 'subscriptions', p), join2(p, 'subscriptions'), catalog),
      };
    case 'flood': {
      const kindName = c.oneOf(o, 'kind', p, ['intents', 'bundles', 'malformed'] as const);
      const channel = o['channel'] === undefined ? (kindName === 'bundles' ? 'trajectory' : 'disarm') : c.str(o, 'channel', p);
      if (!catalog.byName(channel)) c.fail(join2(p, 'channel'), `no channel named '${channel}' in the catalog`);
      return { atMs, type, client: client(), kind: kindName, ratePerS: c.num(o, 'ratePerS', p, { gt: 0, max: 10000 }), durationMs: dur(), channel };
    }
  }
}

function deepFreeze<T>(x: T): T {
  if (typeof x === 'object' && x !== null) {
    for (const k of Object.keys(x)) deepFreeze((x as Record<string, unknown>)[k]);
    Object.freeze(x);
  }
  return x;
}

// ---------------------------------------------------------------------------------------------
// The named library (host-sim/scenarios/*.json, read from the source tree).

/** host-sim/scenarios in the source tree, found from the compiled file's place (build/host-sim/). */
export function scenarioDir(): string {
  const here = dirname(fileURLToPath(import.meta.url));
  const candidates = [resolve(here, 'scenarios'), resolve(here, '../../host-sim/scenarios')];
  for (const d of candidates) {
    try {
      readdirSync(d);
      return d;
    } catch {
      // try the next
    }
  }
  return candidates[candidates.length - 1] as string;
}

/** The names of the scenario library, sorted. */
export function scenarioNames(): string[] {
  return readdirSync(scenarioDir())
    .filter((f) => f.endsWith('.json'))
    .map((f) => f.slice(0, -5))
    .sort();
}

/** Parses and validates a scenario file. */
export function loadScenarioFile(path: string, catalog: CatalogIndex): Scenario {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new ScenarioError([{ path: '(file)', reason: `cannot read ${path}: ${(e as Error).message}` }], path);
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (e) {
    throw new ScenarioError([{ path: '(file)', reason: `not JSON: ${(e as Error).message}` }], path);
  }
  return validateScenario(doc, catalog, path);
}

/** A scenario of the library by name. */
export function loadNamedScenario(name: string, catalog: CatalogIndex): Scenario {
  if (!/^[A-Za-z0-9_-]+$/.test(name) || !scenarioNames().includes(name)) {
    throw new ScenarioError([{ path: '(name)', reason: `no scenario named '${name}' (known: ${scenarioNames().join(', ')})` }]);
  }
  return loadScenarioFile(join(scenarioDir(), `${name}.json`), catalog);
}
