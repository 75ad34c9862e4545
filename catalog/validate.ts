// §9.2: the catalog is data, checked once at load. Every error is reported with the
// path of the offending value, so that a team fixing a hand-edited catalog sees all of its
// mistakes in one run. On success the caller gets a deep-frozen copy it can trust and keep.

import {
  CATALOG_VERSION,
  CHANNEL_CLASS_NAMES,
  DIRECTION_NAMES,
  MAX_BURST_MULTIPLE,
  MAX_CATALOG_NAME_LENGTH,
  MAX_CHANNEL_ID,
  MAX_CHANNELS,
  MAX_FIELDS,
  MAX_NAME_LENGTH,
  MAX_QUEUE_DEPTH,
  MAX_RATE_HZ,
  MAX_UNIT_LENGTH,
  MIN_CHANNEL_ID,
  MIN_QUEUE_DEPTH,
  PRIORITY_NAMES,
  REQUIRED_CRITICAL_CHANNELS,
  STREAM_KIND_NAMES,
  TIER_NAMES,
  deepFreeze,
} from './schema.js';
import type { Catalog, ChannelDef, FieldDef } from './schema.js';

export interface CatalogError {
  readonly path: string;
  readonly reason: string;
}

export type CatalogValidation =
  | { readonly ok: true; readonly catalog: Catalog }
  | { readonly ok: false; readonly errors: CatalogError[] };

const CATALOG_KEYS: readonly string[] = Object.freeze(['version', 'name', 'channels']);
const CHANNEL_KEYS: readonly string[] = Object.freeze([
  'id',
  'name',
  'class',
  'stream_kind',
  'direction',
  'max_rate_hz',
  'priority',
  'critical',
  'subscribe_tier',
  'publish_tier',
  'motion',
  'fields',
  'queue_depth',
  'max_burst',
]);
const FIELD_KEYS: readonly string[] = Object.freeze(['name', 'unit']);

type Rec = Record<string, unknown>;

function isRecord(x: unknown): x is Rec {
  return typeof x === 'object' && x !== null && !Array.isArray(x);
}

function has(o: Rec, k: string): boolean {
  return Object.prototype.hasOwnProperty.call(o, k);
}

function isFiniteNumber(x: unknown): x is number {
  return typeof x === 'number' && Number.isFinite(x);
}

function isInteger(x: unknown): x is number {
  return typeof x === 'number' && Number.isInteger(x);
}

// [a-z][a-z0-9_-]*, at most MAX_NAME_LENGTH: a name fits a small display and a short CBOR string.
export function isChannelName(x: unknown): x is string {
  if (typeof x !== 'string' || x.length === 0 || x.length > MAX_NAME_LENGTH) return false;
  for (let i = 0; i < x.length; i++) {
    const c = x.charCodeAt(i);
    const lower = c >= 0x61 && c <= 0x7a;
    if (i === 0 ? !lower : !(lower || (c >= 0x30 && c <= 0x39) || c === 0x5f || c === 0x2d)) return false;
  }
  return true;
}

// Printable ASCII only: the catalog is shown on small device screens and hashed as bytes.
function isPrintableAscii(x: string): boolean {
  for (let i = 0; i < x.length; i++) {
    const c = x.charCodeAt(i);
    if (c < 0x20 || c > 0x7e) return false;
  }
  return true;
}

function oneOf<T extends string>(x: unknown, names: readonly T[]): x is T {
  return typeof x === 'string' && (names as readonly string[]).indexOf(x) >= 0;
}

function show(x: unknown): string {
  if (x === undefined) return 'undefined';
  if (typeof x === 'number') return Number.isNaN(x) ? 'NaN' : String(x);
  if (Array.isArray(x)) return 'an array';
  if (typeof x === 'object' && x !== null) return 'an object';
  const s = JSON.stringify(x);
  return s.length > 40 ? s.slice(0, 40) + '…' : s;
}

function quoteAll(names: readonly string[]): string {
  return names.map((n) => `'${n}'`).join(', ');
}

function keyPath(base: string, key: string): string {
  let plain = key.length > 0;
  for (let i = 0; i < key.length && plain; i++) {
    const c = key.charCodeAt(i);
    plain = (c >= 0x61 && c <= 0x7a) || (c >= 0x41 && c <= 0x5a) || c === 0x5f || (i > 0 && c >= 0x30 && c <= 0x39);
  }
  const part = plain ? key : `[${JSON.stringify(key)}]`;
  return base === '' ? part : plain ? `${base}.${part}` : base + part;
}

function editDistance(a: string, b: string): number {
  let prev: number[] = [];
  for (let j = 0; j <= b.length; j++) prev.push(j);
  for (let i = 1; i <= a.length; i++) {
    const cur: number[] = [i];
    for (let j = 1; j <= b.length; j++) {
      const sub = (prev[j - 1] as number) + (a.charCodeAt(i - 1) === b.charCodeAt(j - 1) ? 0 : 1);
      cur.push(Math.min(sub, (prev[j] as number) + 1, (cur[j - 1] as number) + 1));
    }
    prev = cur;
  }
  return prev[b.length] as number;
}

function unknownKeyReason(key: string, known: readonly string[]): string {
  let best = '';
  let bestDistance = 3;
  for (const k of known) {
    const d = editDistance(key.toLowerCase(), k);
    if (d < bestDistance) {
      best = k;
      bestDistance = d;
    }
  }
  return best !== ''
    ? `unknown key (a typo of '${best}'?)`
    : `unknown key; expected one of ${quoteAll(known)}`;
}

class Collector {
  readonly errors: CatalogError[] = [];

  add(path: string, reason: string): void {
    this.errors.push(Object.freeze({ path, reason }));
  }

  unknownKeys(o: Rec, base: string, known: readonly string[]): void {
    for (const k of Object.keys(o)) {
      if (known.indexOf(k) < 0) this.add(keyPath(base, k), unknownKeyReason(k, known));
    }
  }
}

function validateFields(x: unknown, base: string, out: Collector): FieldDef[] {
  const fields: FieldDef[] = [];
  if (!Array.isArray(x)) {
    out.add(base, `must be an array of {name, unit} (got ${show(x)})`);
    return fields;
  }
  if (x.length > MAX_FIELDS) out.add(base, `must have at most ${MAX_FIELDS} fields (got ${x.length})`);
  const seen = new Map<string, number>();
  for (let i = 0; i < x.length; i++) {
    const p = `${base}[${i}]`;
    const f: unknown = x[i];
    if (!isRecord(f)) {
      out.add(p, `must be an object {name, unit} (got ${show(f)})`);
      continue;
    }
    out.unknownKeys(f, p, FIELD_KEYS);
    const name = f['name'];
    const unit = f['unit'];
    if (!isChannelName(name)) {
      out.add(`${p}.name`, `must match [a-z][a-z0-9_-]* and be 1..${MAX_NAME_LENGTH} characters (got ${show(name)})`);
    } else {
      const j = seen.get(name);
      if (j !== undefined) out.add(`${p}.name`, `duplicate field name '${name}': also ${base}[${j}]`);
      else seen.set(name, i);
    }
    if (typeof unit !== 'string' || unit.length > MAX_UNIT_LENGTH || !isPrintableAscii(unit)) {
      out.add(`${p}.unit`, `must be printable ASCII of at most ${MAX_UNIT_LENGTH} characters, '' when dimensionless (got ${show(unit)})`);
    }
    if (typeof name === 'string' && typeof unit === 'string') fields.push({ name, unit });
  }
  return fields;
}

function validateChannel(
  c: Rec,
  p: string,
  out: Collector,
): ChannelDef | undefined {
  const before = out.errors.length;
  out.unknownKeys(c, p, CHANNEL_KEYS);

  const id = c['id'];
  if (!isInteger(id) || id < MIN_CHANNEL_ID || id > MAX_CHANNEL_ID) {
    out.add(`${p}.id`, `must be an integer in ${MIN_CHANNEL_ID}..${MAX_CHANNEL_ID} (got ${show(id)})`);
  }
  const name = c['name'];
  if (!isChannelName(name)) {
    out.add(`${p}.name`, `must match [a-z][a-z0-9_-]* and be 1..${MAX_NAME_LENGTH} characters (got ${show(name)})`);
  }

  const cls = c['class'];
  const classOk = oneOf(cls, CHANNEL_CLASS_NAMES);
  if (!classOk) out.add(`${p}.class`, `must be one of ${quoteAll(CHANNEL_CLASS_NAMES)} (got ${show(cls)})`);

  // §10.4 rows 4–6: the shedding table reads the segments kind from here, never from a heuristic.
  const kind = c['stream_kind'];
  if (has(c, 'stream_kind')) {
    if (classOk && cls !== 'STREAM') out.add(`${p}.stream_kind`, `only allowed on STREAM channels (class is '${cls}')`);
    else if (!oneOf(kind, STREAM_KIND_NAMES)) out.add(`${p}.stream_kind`, `must be one of ${quoteAll(STREAM_KIND_NAMES)} (got ${show(kind)})`);
  } else if (cls === 'STREAM') {
    out.add(`${p}.stream_kind`, `required on STREAM channels: one of ${quoteAll(STREAM_KIND_NAMES)}`);
  }

  const direction = c['direction'];
  const directionOk = oneOf(direction, DIRECTION_NAMES);
  if (!directionOk) {
    out.add(`${p}.direction`, `must be one of ${quoteAll(DIRECTION_NAMES)} (got ${show(direction)})`);
  } else if (cls === 'INTENT' && direction !== 'publication') {
    out.add(`${p}.direction`, `must be 'publication': INTENT channels carry client→hub commands (§9.3)`);
  }
  const isPublication = direction === 'publication';

  const rate = c['max_rate_hz'];
  const rateOk = isFiniteNumber(rate) && rate > 0 && rate <= MAX_RATE_HZ;
  if (!rateOk) out.add(`${p}.max_rate_hz`, `must be a finite number > 0 and <= ${MAX_RATE_HZ} (got ${show(rate)})`);

  const priority = c['priority'];
  const priorityOk = oneOf(priority, PRIORITY_NAMES);
  if (!priorityOk) out.add(`${p}.priority`, `must be one of ${quoteAll(PRIORITY_NAMES)} (got ${show(priority)})`);

  // §10.1: the never-shed set is exactly the channels of priority class critical(3).
  const critical = c['critical'];
  const requiredCritical = typeof name === 'string' && (REQUIRED_CRITICAL_CHANNELS as readonly string[]).indexOf(name) >= 0;
  if (typeof critical !== 'boolean') {
    out.add(`${p}.critical`, `must be true or false (got ${show(critical)})`);
  } else if (!critical) {
    if (requiredCritical) out.add(`${p}.critical`, `must be true: '${name as string}' is in the never-shed set (§10.1)`);
    else if (cls === 'INTENT') out.add(`${p}.critical`, `must be true: INTENT is in the never-shed set (§10.1)`);
    else if (priority === 'critical') out.add(`${p}.critical`, `must be true when priority is 'critical' (§10.1 never-shed set)`);
  } else if (priorityOk && priority !== 'critical') {
    out.add(`${p}.priority`, `must be 'critical' on a critical channel (§10.1), got '${priority}'`);
  }
  if (requiredCritical && directionOk && direction !== 'telemetry') {
    out.add(`${p}.direction`, `must be 'telemetry': the hub itself publishes '${name as string}'`);
  }

  const subscribeTier = c['subscribe_tier'];
  if (!oneOf(subscribeTier, TIER_NAMES)) {
    out.add(`${p}.subscribe_tier`, `must be one of ${quoteAll(TIER_NAMES)} (got ${show(subscribeTier)})`);
  }
  const publishTier = c['publish_tier'];
  if (has(c, 'publish_tier')) {
    if (directionOk && !isPublication) out.add(`${p}.publish_tier`, `only allowed on publication channels (direction is 'telemetry')`);
    else if (!oneOf(publishTier, TIER_NAMES)) out.add(`${p}.publish_tier`, `must be one of ${quoteAll(TIER_NAMES)} (got ${show(publishTier)})`);
  } else if (isPublication) {
    out.add(`${p}.publish_tier`, `required on publication channels: one of ${quoteAll(TIER_NAMES)}`);
  }

  const motion = c['motion'];
  if (has(c, 'motion')) {
    if (typeof motion !== 'boolean') out.add(`${p}.motion`, `must be true or false (got ${show(motion)})`);
    else if (directionOk && !isPublication) out.add(`${p}.motion`, `only allowed on publication channels: telemetry never moves the robot`);
  }

  const fields = validateFields(c['fields'], `${p}.fields`, out);

  // §9.4: every EVENT subscription gets a bounded queue of this depth.
  const depth = c['queue_depth'];
  if (has(c, 'queue_depth')) {
    if (classOk && cls !== 'EVENT') out.add(`${p}.queue_depth`, `only allowed on EVENT channels (class is '${cls}')`);
    else if (!isInteger(depth) || depth < MIN_QUEUE_DEPTH || depth > MAX_QUEUE_DEPTH) {
      out.add(`${p}.queue_depth`, `must be an integer in ${MIN_QUEUE_DEPTH}..${MAX_QUEUE_DEPTH} (got ${show(depth)})`);
    }
  } else if (cls === 'EVENT') {
    out.add(`${p}.queue_depth`, `required on EVENT channels: an integer in ${MIN_QUEUE_DEPTH}..${MAX_QUEUE_DEPTH} (§9.4)`);
  }

  // §10.5: the burst of a granted publication; intents have their own bucket (§9.3).
  const burst = c['max_burst'];
  if (has(c, 'max_burst')) {
    if (directionOk && !isPublication) out.add(`${p}.max_burst`, `only allowed on publication channels (direction is 'telemetry')`);
    else if (cls === 'INTENT') out.add(`${p}.max_burst`, `not allowed on INTENT channels: intents are limited per session (§9.3)`);
    else if (!isInteger(burst) || burst < 1) out.add(`${p}.max_burst`, `must be an integer >= 1 (got ${show(burst)})`);
    else if (rateOk && (burst < rate || burst > rate * MAX_BURST_MULTIPLE)) {
      out.add(`${p}.max_burst`, `must lie in [max_rate_hz, max_rate_hz × ${MAX_BURST_MULTIPLE}] = [${rate}, ${rate * MAX_BURST_MULTIPLE}], the range §10.5 clamps a burst into (got ${burst})`);
    }
  }

  if (out.errors.length !== before) return undefined;
  const def: Record<string, unknown> = {
    id,
    name,
    class: cls,
  };
  if (has(c, 'stream_kind')) def['stream_kind'] = kind;
  def['direction'] = direction;
  def['max_rate_hz'] = rate;
  def['priority'] = priority;
  def['critical'] = critical;
  def['subscribe_tier'] = subscribeTier;
  if (has(c, 'publish_tier')) def['publish_tier'] = publishTier;
  if (has(c, 'motion')) def['motion'] = motion;
  def['fields'] = fields;
  if (has(c, 'queue_depth')) def['queue_depth'] = depth;
  if (has(c, 'max_burst')) def['max_burst'] = burst;
  return def as unknown as ChannelDef;
}

export function validateCatalog(x: unknown): CatalogValidation {
  const out = new Collector();
  if (!isRecord(x)) {
    out.add('', `the catalog must be an object {version, name, channels} (got ${show(x)})`);
    return { ok: false, errors: out.errors };
  }
  out.unknownKeys(x, '', CATALOG_KEYS);

  const version = x['version'];
  if (version !== CATALOG_VERSION) out.add('version', `must be ${CATALOG_VERSION} (got ${show(version)})`);

  const name = x['name'];
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_CATALOG_NAME_LENGTH || !isPrintableAscii(name)) {
    out.add('name', `must be printable ASCII of 1..${MAX_CATALOG_NAME_LENGTH} characters (got ${show(name)})`);
  }

  const channels: ChannelDef[] = [];
  const list = x['channels'];
  if (!Array.isArray(list)) {
    out.add('channels', `must be an array of channels (got ${show(list)})`);
    return { ok: false, errors: out.errors };
  }
  if (list.length === 0 || list.length > MAX_CHANNELS) {
    out.add('channels', `must list 1..${MAX_CHANNELS} channels (got ${list.length})`);
  }

  const byId = new Map<number, number>();
  const byName = new Map<string, number>();
  for (let i = 0; i < list.length; i++) {
    const p = `channels[${i}]`;
    const c: unknown = list[i];
    if (!isRecord(c)) {
      out.add(p, `must be an object (got ${show(c)})`);
      continue;
    }
    const def = validateChannel(c, p, out);
    if (def !== undefined) channels.push(def);

    const id = c['id'];
    if (isInteger(id) && id >= MIN_CHANNEL_ID && id <= MAX_CHANNEL_ID) {
      const j = byId.get(id);
      if (j !== undefined) out.add(`${p}.id`, `duplicate id ${id}: also channels[${j}]`);
      else byId.set(id, i);
    }
    const n = c['name'];
    if (isChannelName(n)) {
      const j = byName.get(n);
      if (j !== undefined) out.add(`${p}.name`, `duplicate name '${n}': also channels[${j}]`);
      else byName.set(n, i);
    }
  }

  for (const required of REQUIRED_CRITICAL_CHANNELS) {
    if (!byName.has(required)) out.add('channels', `missing the critical channel '${required}' (§10.1 never-shed set)`);
  }

  if (out.errors.length > 0) return { ok: false, errors: out.errors };
  const catalog: Catalog = { version: CATALOG_VERSION, name: name as string, channels };
  return { ok: true, catalog: deepFreeze(catalog) };
}

export function formatCatalogErrors(errors: readonly CatalogError[]): string {
  return errors.map((e) => `  ${e.path === '' ? '(catalog)' : e.path}: ${e.reason}`).join('\n');
}
