import { DEFAULT_CATALOG } from '../../catalog/default.js';
import { canonicalCatalogJson, catalogHash, catalogHashHex, fnv1a64, fnv1a64Utf8, hashHex } from '../../catalog/hash.js';
import { CatalogIndex, loadCatalog } from '../../catalog/index.js';
import {
  ChannelClass,
  Direction,
  MAX_BURST_MULTIPLE,
  Priority,
  StreamKind,
  Tier,
  deepFreeze,
} from '../../catalog/schema.js';
import type { Catalog } from '../../catalog/schema.js';
import { validateCatalog } from '../../catalog/validate.js';
import type { CatalogError } from '../../catalog/validate.js';
import { NO_STREAM_KIND } from '../../hub/shed.js';
import { deepEqual, equal, fail, ok, throws } from '../lib/assert.js';
import { runs } from '../lib/env.js';

// The default catalog's hash, pinned: a change here is a change every cached client sees.
const DEFAULT_HASH_HEX = '8e56ba4d5e177e22';

type Mutable = Record<string, unknown>;

function clone(): Mutable {
  return JSON.parse(JSON.stringify(DEFAULT_CATALOG)) as Mutable;
}

function chans(c: Mutable): Mutable[] {
  return c['channels'] as Mutable[];
}

function ch(c: Mutable, i: number): Mutable {
  const x = chans(c)[i];
  if (x === undefined) return fail(`no channel ${i}`);
  return x;
}

// Channel positions in DEFAULT_CATALOG.channels, as the table below names them.
const SAFETY = 0;
const CONTROL_OWNER = 2;
const IMU = 3;
const ODOM = 4;
const BATTERY = 6;
const LOG = 9;
const CMD_VEL = 11;
const TRAJECTORY = 12;
const ARM = 13;

interface BadCase {
  name: string;
  make: () => unknown;
  // Every error expected, as [path, a word its reason must contain].
  errors: [string, string][];
}

function mutate(f: (c: Mutable) => void): () => unknown {
  return () => {
    const c = clone();
    f(c);
    return c;
  };
}

const BAD: BadCase[] = [
  { name: 'not an object', make: () => null, errors: [['', 'must be an object']] },
  { name: 'an array', make: () => [], errors: [['', 'must be an object']] },
  { name: 'version 2', make: mutate((c) => { c['version'] = 2; }), errors: [['version', 'must be 1']] },
  {
    name: 'a misspelt top-level key',
    make: mutate((c) => { c['chanels'] = c['channels']; delete c['channels']; }),
    errors: [['chanels', "'channels'"], ['channels', 'must be an array']],
  },
  { name: 'an empty catalog name', make: mutate((c) => { c['name'] = ''; }), errors: [['name', 'printable ASCII']] },
  {
    name: 'no channels',
    make: mutate((c) => { c['channels'] = []; }),
    errors: [['channels', '1..255'], ['channels', "'safety'"], ['channels', "'safety-events'"], ['channels', "'control-owner'"]],
  },
  {
    name: 'a channel that is not an object',
    make: mutate((c) => { (chans(c) as unknown[])[CONTROL_OWNER] = 3; }),
    errors: [['channels[2]', 'must be an object'], ['channels', "'control-owner'"]],
  },
  { name: 'max_rate_hz 0', make: mutate((c) => { ch(c, IMU)['max_rate_hz'] = 0; }), errors: [['channels[3].max_rate_hz', '> 0']] },
  { name: 'max_rate_hz above 1000', make: mutate((c) => { ch(c, IMU)['max_rate_hz'] = 1001; }), errors: [['channels[3].max_rate_hz', '<= 1000']] },
  { name: 'max_rate_hz NaN', make: mutate((c) => { ch(c, IMU)['max_rate_hz'] = NaN; }), errors: [['channels[3].max_rate_hz', 'got NaN']] },
  { name: 'max_rate_hz Infinity', make: mutate((c) => { ch(c, IMU)['max_rate_hz'] = Infinity; }), errors: [['channels[3].max_rate_hz', 'finite']] },
  { name: 'max_rate_hz a string', make: mutate((c) => { ch(c, IMU)['max_rate_hz'] = '200'; }), errors: [['channels[3].max_rate_hz', 'finite number']] },
  { name: 'id 0', make: mutate((c) => { ch(c, IMU)['id'] = 0; }), errors: [['channels[3].id', '1..255']] },
  { name: 'id 256', make: mutate((c) => { ch(c, IMU)['id'] = 256; }), errors: [['channels[3].id', '1..255']] },
  { name: 'id 1.5', make: mutate((c) => { ch(c, IMU)['id'] = 1.5; }), errors: [['channels[3].id', 'integer']] },
  { name: 'a duplicate id', make: mutate((c) => { ch(c, ODOM)['id'] = 10; }), errors: [['channels[4].id', 'also channels[3]']] },
  { name: 'a duplicate name', make: mutate((c) => { ch(c, ODOM)['name'] = 'imu'; }), errors: [['channels[4].name', 'also channels[3]']] },
  { name: 'an upper-case name', make: mutate((c) => { ch(c, IMU)['name'] = 'IMU'; }), errors: [['channels[3].name', '[a-z]']] },
  { name: 'a name starting with a digit', make: mutate((c) => { ch(c, IMU)['name'] = '9axis'; }), errors: [['channels[3].name', '[a-z]']] },
  { name: 'a 33-character name', make: mutate((c) => { ch(c, IMU)['name'] = 'a'.repeat(33); }), errors: [['channels[3].name', '1..32']] },
  { name: 'an unknown class', make: mutate((c) => { ch(c, BATTERY)['class'] = 'STREEM'; }), errors: [['channels[6].class', "'STREAM'"]] },
  { name: 'a STREAM without stream_kind', make: mutate((c) => { delete ch(c, IMU)['stream_kind']; }), errors: [['channels[3].stream_kind', 'required']] },
  { name: 'stream_kind on a STATE', make: mutate((c) => { ch(c, BATTERY)['stream_kind'] = 'samples'; }), errors: [['channels[6].stream_kind', 'only allowed on STREAM']] },
  { name: 'an unknown stream_kind', make: mutate((c) => { ch(c, IMU)['stream_kind'] = 'frames'; }), errors: [['channels[3].stream_kind', "'segments'"]] },
  { name: 'an EVENT without queue_depth', make: mutate((c) => { delete ch(c, LOG)['queue_depth']; }), errors: [['channels[9].queue_depth', 'required']] },
  { name: 'queue_depth 0', make: mutate((c) => { ch(c, LOG)['queue_depth'] = 0; }), errors: [['channels[9].queue_depth', '1..64']] },
  { name: 'queue_depth 65', make: mutate((c) => { ch(c, LOG)['queue_depth'] = 65; }), errors: [['channels[9].queue_depth', '1..64']] },
  { name: 'queue_depth on a STREAM', make: mutate((c) => { ch(c, IMU)['queue_depth'] = 4; }), errors: [['channels[3].queue_depth', 'only allowed on EVENT']] },
  { name: 'a publication without publish_tier', make: mutate((c) => { delete ch(c, CMD_VEL)['publish_tier']; }), errors: [['channels[11].publish_tier', 'required']] },
  { name: 'publish_tier on telemetry', make: mutate((c) => { ch(c, IMU)['publish_tier'] = 'operator'; }), errors: [['channels[3].publish_tier', 'only allowed on publication']] },
  { name: 'an unknown subscribe_tier', make: mutate((c) => { ch(c, IMU)['subscribe_tier'] = 'admin'; }), errors: [['channels[3].subscribe_tier', "'maintainer'"]] },
  { name: 'an unknown priority', make: mutate((c) => { ch(c, IMU)['priority'] = 'high'; }), errors: [['channels[3].priority', "'elevated'"]] },
  { name: 'critical not a boolean', make: mutate((c) => { ch(c, IMU)['critical'] = 'no'; }), errors: [['channels[3].critical', 'true or false']] },
  { name: 'motion on telemetry', make: mutate((c) => { ch(c, ODOM)['motion'] = true; }), errors: [['channels[4].motion', 'only allowed on publication']] },
  { name: 'motion not a boolean', make: mutate((c) => { ch(c, CMD_VEL)['motion'] = 1; }), errors: [['channels[11].motion', 'true or false']] },
  {
    name: 'an INTENT sent as telemetry',
    make: mutate((c) => { ch(c, ARM)['direction'] = 'telemetry'; }),
    errors: [
      ['channels[13].direction', "'publication'"],
      ['channels[13].publish_tier', 'only allowed on publication'],
      ['channels[13].motion', 'only allowed on publication'],
    ],
  },
  {
    name: 'an INTENT outside the never-shed set',
    make: mutate((c) => { ch(c, ARM)['critical'] = false; ch(c, ARM)['priority'] = 'elevated'; }),
    errors: [['channels[13].critical', 'INTENT']],
  },
  { name: 'safety not critical', make: mutate((c) => { ch(c, SAFETY)['critical'] = false; }), errors: [['channels[0].critical', "'safety'"]] },
  { name: 'safety at normal priority', make: mutate((c) => { ch(c, SAFETY)['priority'] = 'normal'; }), errors: [['channels[0].priority', "'critical'"]] },
  {
    name: 'safety missing',
    make: mutate((c) => { chans(c).splice(SAFETY, 1); }),
    errors: [['channels', "'safety'"]],
  },
  {
    name: 'control-owner published by clients',
    make: mutate((c) => { ch(c, CONTROL_OWNER)['direction'] = 'publication'; }),
    errors: [['channels[2].direction', "'telemetry'"], ['channels[2].publish_tier', 'required']],
  },
  { name: 'priority critical on a non-critical channel', make: mutate((c) => { ch(c, BATTERY)['priority'] = 'critical'; }), errors: [['channels[6].critical', 'must be true']] },
  { name: 'a critical channel at normal priority', make: mutate((c) => { ch(c, BATTERY)['critical'] = true; }), errors: [['channels[6].priority', "'critical'"]] },
  {
    name: 'a misspelt channel key',
    make: mutate((c) => { const x = ch(c, IMU); x['max_rate'] = x['max_rate_hz']; delete x['max_rate_hz']; }),
    errors: [['channels[3].max_rate', "'max_rate_hz'"], ['channels[3].max_rate_hz', 'finite number']],
  },
  { name: 'an unknown key far from any known one', make: mutate((c) => { ch(c, IMU)['colour'] = 'red'; }), errors: [['channels[3].colour', 'expected one of']] },
  { name: 'a key that is not an identifier', make: mutate((c) => { ch(c, IMU)['max rate'] = 1; }), errors: [['channels[3]["max rate"]', 'unknown key']] },
  { name: 'fields not an array', make: mutate((c) => { ch(c, IMU)['fields'] = {}; }), errors: [['channels[3].fields', 'must be an array']] },
  {
    name: 'a duplicate field and a field with an unknown key',
    make: mutate((c) => {
      const f = ch(c, ODOM)['fields'] as Mutable[];
      (f[1] as Mutable)['name'] = 'x';
      (f[2] as Mutable)['scale'] = 2;
    }),
    errors: [['channels[4].fields[1].name', "'x'"], ['channels[4].fields[2].scale', 'unknown key']],
  },
  { name: 'a non-ASCII unit', make: mutate((c) => { ((ch(c, IMU)['fields'] as Mutable[])[0] as Mutable)['unit'] = 'm/s²'; }), errors: [['channels[3].fields[0].unit', 'ASCII']] },
  { name: 'a missing unit', make: mutate((c) => { delete ((ch(c, IMU)['fields'] as Mutable[])[0] as Mutable)['unit']; }), errors: [['channels[3].fields[0].unit', "''"]] },
  {
    name: '33 fields',
    make: mutate((c) => {
      const f: Mutable[] = [];
      for (let i = 0; i < 33; i++) f.push({ name: `f${i}`, unit: '' });
      ch(c, IMU)['fields'] = f;
    }),
    errors: [['channels[3].fields', 'at most 32']],
  },
  { name: 'max_burst on telemetry', make: mutate((c) => { ch(c, IMU)['max_burst'] = 200; }), errors: [['channels[3].max_burst', 'only allowed on publication']] },
  { name: 'max_burst on an INTENT', make: mutate((c) => { ch(c, ARM)['max_burst'] = 5; }), errors: [['channels[13].max_burst', 'INTENT']] },
  { name: 'max_burst above rate × 4', make: mutate((c) => { ch(c, TRAJECTORY)['max_burst'] = 21; }), errors: [['channels[12].max_burst', '[5, 20]']] },
  { name: 'max_burst below the rate', make: mutate((c) => { ch(c, TRAJECTORY)['max_burst'] = 4; }), errors: [['channels[12].max_burst', '[5, 20]']] },
  { name: 'a fractional max_burst', make: mutate((c) => { ch(c, TRAJECTORY)['max_burst'] = 7.5; }), errors: [['channels[12].max_burst', 'integer']] },
  {
    name: 'many mistakes at once, all reported',
    make: mutate((c) => {
      c['version'] = 0;
      ch(c, SAFETY)['critical'] = false;
      ch(c, IMU)['max_rate_hz'] = -5;
      ch(c, ODOM)['id'] = 1;
      delete ch(c, LOG)['queue_depth'];
      ch(c, TRAJECTORY)['stream_kind'] = 'segment';
      ch(c, ARM)['publish_tier'] = 'root';
    }),
    errors: [
      ['version', 'must be 1'],
      ['channels[0].critical', "'safety'"],
      ['channels[3].max_rate_hz', '> 0'],
      ['channels[4].id', 'also channels[0]'],
      ['channels[9].queue_depth', 'required'],
      ['channels[12].stream_kind', "'segments'"],
      ['channels[13].publish_tier', "'operator'"],
    ],
  },
];

function describeErrors(errors: readonly CatalogError[]): string {
  return errors.map((e) => `${e.path}: ${e.reason}`).join('\n');
}

function walk(x: unknown, visit: (o: object, path: string) => void, path = ''): void {
  if (typeof x !== 'object' || x === null) return;
  visit(x, path);
  for (const k of Object.keys(x)) walk((x as Mutable)[k], visit, `${path}.${k}`);
}

// FNV-1a 64 written the obvious way in BigInt, as the independent reference.
function fnvReference(bytes: ArrayLike<number>): string {
  let h = 0xcbf29ce484222325n;
  for (let i = 0; i < bytes.length; i++) {
    h ^= BigInt(bytes[i] as number);
    h = (h * 0x100000001b3n) & 0xffffffffffffffffn;
  }
  return h.toString(16).padStart(16, '0');
}

function reverseKeys(x: unknown): unknown {
  if (Array.isArray(x)) return x.map(reverseKeys);
  if (typeof x !== 'object' || x === null) return x;
  const out: Mutable = {};
  for (const k of Object.keys(x).reverse()) out[k] = reverseKeys((x as Mutable)[k]);
  return out;
}

// xorshift32: a seeded, engine-independent sequence of unsigned 32-bit values.
function xorshift(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return s >>> 0;
  };
}

function shuffled<T>(xs: readonly T[], seed: number): T[] {
  const out = xs.slice();
  const rng = xorshift(seed);
  for (let i = out.length - 1; i > 0; i--) {
    const j = rng() % (i + 1);
    const t = out[i] as T;
    out[i] = out[j] as T;
    out[j] = t;
  }
  return out;
}

function shuffledKeys(x: unknown, seed: number): unknown {
  if (Array.isArray(x)) return x.map((v, i) => shuffledKeys(v, seed + i + 1));
  if (typeof x !== 'object' || x === null) return x;
  const out: Mutable = {};
  for (const k of shuffled(Object.keys(x), seed)) out[k] = shuffledKeys((x as Mutable)[k], seed * 31 + k.length);
  return out;
}

describe('catalog', () => {
  describe('the default catalog', () => {
    it('validates, and the validated copy holds the same data', () => {
      const r = validateCatalog(DEFAULT_CATALOG);
      if (!r.ok) return fail(describeErrors(r.errors));
      deepEqual(r.catalog, DEFAULT_CATALOG);
    });

    it('is deeply frozen, down to every field', () => {
      let objects = 0;
      walk(DEFAULT_CATALOG, (o, path) => {
        objects++;
        ok(Object.isFrozen(o), `DEFAULT_CATALOG${path} is not frozen`);
      });
      ok(objects > 60, `walked only ${objects} objects`);
      const imu = DEFAULT_CATALOG.channels[3] as unknown as Mutable;
      // Reflect.set reports a refused write the same way in strict and sloppy code.
      equal(Reflect.set(imu, 'max_rate_hz', 1), false);
      equal(Reflect.set((imu['fields'] as object[])[0] as object, 'unit', 'g'), false);
      equal(Reflect.set(DEFAULT_CATALOG.channels, 19, {}), false);
      throws(() => { (DEFAULT_CATALOG.channels as unknown as unknown[]).push({}); }, (e) => e instanceof TypeError);
      equal(DEFAULT_CATALOG.channels[3]?.max_rate_hz, 200);
      equal(DEFAULT_CATALOG.channels[3]?.fields[0]?.unit, 'm/s^2');
      equal(DEFAULT_CATALOG.channels.length, 19);
    });

    it('has the never-shed channels and the channels a mobile manipulator team expects', () => {
      const idx = loadCatalog(DEFAULT_CATALOG);
      const expect: [string, number, number, number, number][] = [
        // name, id, class, kind, priority
        ['safety', 1, ChannelClass.STATE, -1, Priority.critical],
        ['safety-events', 2, ChannelClass.EVENT, -1, Priority.critical],
        ['control-owner', 3, ChannelClass.STATE, -1, Priority.critical],
        ['imu', 10, ChannelClass.STREAM, StreamKind.samples, Priority.normal],
        ['odom', 11, ChannelClass.STREAM, StreamKind.samples, Priority.normal],
        ['joint_states', 12, ChannelClass.STATE, -1, Priority.normal],
        ['battery', 13, ChannelClass.STATE, -1, Priority.normal],
        ['scan', 14, ChannelClass.STREAM, StreamKind.samples, Priority.background],
        ['path', 15, ChannelClass.STREAM, StreamKind.segments, Priority.normal],
        ['log', 20, ChannelClass.EVENT, -1, Priority.background],
        ['fault', 21, ChannelClass.EVENT, -1, Priority.elevated],
        ['cmd_vel', 30, ChannelClass.STREAM, StreamKind.samples, Priority.elevated],
        ['trajectory', 31, ChannelClass.STREAM, StreamKind.segments, Priority.elevated],
        ['arm', 40, ChannelClass.INTENT, -1, Priority.critical],
        ['disarm', 41, ChannelClass.INTENT, -1, Priority.critical],
        ['take_control', 42, ChannelClass.INTENT, -1, Priority.critical],
        ['set_mode', 43, ChannelClass.INTENT, -1, Priority.critical],
        ['go_home', 44, ChannelClass.INTENT, -1, Priority.critical],
        ['release_control', 45, ChannelClass.INTENT, -1, Priority.critical],
      ];
      equal(idx.size, expect.length);
      for (const [name, id, cls, kind, priority] of expect) {
        const c = idx.byName(name);
        if (c === undefined) return fail(`no channel ${name}`);
        deepEqual([c.id, c.cls, c.kind, c.priority], [id, cls, kind, priority], name);
      }
      deepEqual(
        idx.channels.filter((c) => c.critical && c.direction === Direction.telemetry).map((c) => c.name),
        ['safety', 'safety-events', 'control-owner'],
      );
      deepEqual(idx.channels.filter((c) => c.motion).map((c) => c.name), ['cmd_vel', 'trajectory', 'arm', 'set_mode', 'go_home']);
      deepEqual(idx.byName('imu')?.def.fields.map((f) => f.name), ['ax', 'ay', 'az', 'gx', 'gy', 'gz']);
      deepEqual(idx.byName('set_mode')?.def.fields.map((f) => f.name), ['mode']);
      deepEqual(idx.byName('trajectory')?.def.fields.map((f) => f.name), ['t_start', 'duration', 'x', 'y', 'theta', 'v']);
      equal(idx.byName('scan')?.fieldCount, 16);
    });

    it('has a hub→client segments stream, so §10.4 rows 4–6 can fire in a real deployment', () => {
      const idx = loadCatalog(DEFAULT_CATALOG);
      deepEqual(
        idx.channels.filter((c) => c.kind === StreamKind.segments && c.direction === Direction.telemetry).map((c) => c.name),
        ['path'],
      );
      const path = idx.byName('path');
      const trajectory = idx.byName('trajectory');
      if (path === undefined || trajectory === undefined) return fail('no path or trajectory');
      const { def: _def, ...codes } = path;
      deepEqual(codes, {
        id: 15, name: 'path', cls: ChannelClass.STREAM, kind: StreamKind.segments, priority: Priority.normal,
        critical: false, subscribeTier: Tier.observer, publishTier: -1, motion: false,
        direction: Direction.telemetry, maxRateHz: 25, queueDepth: 0, maxBurst: 0, fieldCount: 6,
      });
      // The segments it relays are the robot's own trajectory segments: the same fields and units.
      deepEqual(path.def.fields, trajectory.def.fields);
    });

    it('keeps every sample within one 250-byte ESP-NOW datagram', () => {
      // A float costs at most 9 bytes in CBOR; leave 48 bytes for the frame header and 3 for the array head.
      for (const c of DEFAULT_CATALOG.channels) {
        const worst = 48 + 3 + 9 * c.fields.length;
        ok(worst <= 250, `${c.name}: ${worst} bytes`);
      }
    });

    it('lets trajectory carry a 25-segment peak second within the §10.5 burst ceiling', () => {
      const t = loadCatalog(DEFAULT_CATALOG).byName('trajectory');
      if (t === undefined) return fail('no trajectory');
      equal(t.maxBurst, t.maxRateHz * MAX_BURST_MULTIPLE);
      equal(t.maxBurst + t.maxRateHz, 25);
    });
  });

  describe('validateCatalog', () => {
    for (const bad of BAD) {
      it(`reports ${bad.name}`, () => {
        const r = validateCatalog(bad.make());
        if (r.ok) return fail('accepted');
        const got = r.errors.map((e) => e.path).sort();
        const want = bad.errors.map((e) => e[0]).sort();
        deepEqual(got, want, describeErrors(r.errors));
        for (const [path, word] of bad.errors) {
          const hit = r.errors.some((e) => e.path === path && e.reason.indexOf(word) >= 0);
          ok(hit, `no error at ${path} mentions ${JSON.stringify(word)}:\n${describeErrors(r.errors)}`);
        }
      });
    }

    it('returns a frozen copy that later edits of the input cannot reach', () => {
      const c = clone();
      const r = validateCatalog(c);
      if (!r.ok) return fail(describeErrors(r.errors));
      ch(c, IMU)['max_rate_hz'] = 1;
      equal(r.catalog.channels[3]?.max_rate_hz, 200);
      walk(r.catalog, (o, path) => ok(Object.isFrozen(o), `catalog${path} is not frozen`));
    });

    it('accepts a minimal catalog of only the never-shed channels', () => {
      const c = clone();
      c['channels'] = chans(c).slice(0, 3);
      const r = validateCatalog(c);
      ok(r.ok, r.ok ? '' : describeErrors(r.errors));
    });

    it('accepts every limit at its boundary', () => {
      const c = clone();
      ch(c, IMU)['max_rate_hz'] = 1000;
      ch(c, ODOM)['max_rate_hz'] = 0.001;
      ch(c, BATTERY)['id'] = 255;
      ch(c, IMU)['name'] = 'a'.repeat(32);
      ch(c, ODOM)['name'] = 'z9_-';
      ch(c, LOG)['queue_depth'] = 64;
      ch(c, 1)['queue_depth'] = 1;
      ch(c, TRAJECTORY)['max_burst'] = 5;
      ch(c, CMD_VEL)['max_burst'] = 200;
      c['name'] = 'x'.repeat(64);
      const f: Mutable[] = [];
      for (let i = 0; i < 32; i++) f.push({ name: `f${i}`, unit: i === 0 ? ' !~' : '' });
      ch(c, 7)['fields'] = f;
      const r = validateCatalog(c);
      ok(r.ok, r.ok ? '' : describeErrors(r.errors));
    });

    it('accepts optional keys left out and explicit motion false', () => {
      const c = clone();
      delete ch(c, CMD_VEL)['motion'];
      delete ch(c, TRAJECTORY)['max_burst'];
      const r = validateCatalog(c);
      if (!r.ok) return fail(describeErrors(r.errors));
      equal(r.catalog.channels[11]?.motion, undefined);
      ok(!('max_burst' in (r.catalog.channels[12] as object)));
      const idx = new CatalogIndex(r.catalog);
      equal(idx.byName('cmd_vel')?.motion, false);
      equal(idx.byName('trajectory')?.maxBurst, 0);
    });
  });

  describe('loadCatalog', () => {
    it('throws one Error listing every problem', () => {
      const c = clone();
      ch(c, IMU)['max_rate_hz'] = 0;
      ch(c, LOG)['queue_depth'] = 0;
      const e = throws(() => loadCatalog(c), (x) => x instanceof Error);
      const msg = (e as Error).message;
      ok(msg.indexOf('2 errors') >= 0, msg);
      ok(msg.indexOf('channels[3].max_rate_hz: ') >= 0, msg);
      ok(msg.indexOf('channels[9].queue_depth: ') >= 0, msg);
    });
  });

  describe('hash', () => {
    it('is pinned for the default catalog', () => {
      equal(catalogHashHex(DEFAULT_CATALOG), DEFAULT_HASH_HEX);
      const h = catalogHash(DEFAULT_CATALOG);
      equal(h.length, 8);
      equal(hashHex(h), DEFAULT_HASH_HEX);
      equal(fnvReference(Array.from(canonicalCatalogJson(DEFAULT_CATALOG), (s) => s.charCodeAt(0))), DEFAULT_HASH_HEX);
    });

    it('is FNV-1a 64 (published vectors)', () => {
      equal(hashHex(fnv1a64([])), 'cbf29ce484222325');
      equal(hashHex(fnv1a64Utf8('a')), 'af63dc4c8601ec8c');
      equal(hashHex(fnv1a64Utf8('foobar')), '85944171f73967e8');
    });

    it('agrees with a BigInt FNV-1a 64 on random bytes', () => {
      const rng = xorshift(0x9e3779b9);
      for (let n = runs(500, 60); n > 0; n--) {
        const bytes = new Uint8Array(rng() % 65);
        for (let i = 0; i < bytes.length; i++) bytes[i] = rng() & 0xff;
        equal(hashHex(fnv1a64(bytes)), fnvReference(bytes), hashHex(bytes));
      }
    });

    it('hashes the UTF-8 bytes of a string', () => {
      const cases: [string, number[]][] = [
        ['é', [0xc3, 0xa9]],
        ['€', [0xe2, 0x82, 0xac]],
        ['\u{1f600}', [0xf0, 0x9f, 0x98, 0x80]],
        ['a\ud800b', [0x61, 0xef, 0xbf, 0xbd, 0x62]],
        ['\udc00', [0xef, 0xbf, 0xbd]],
        ['\u07ff\u0800', [0xdf, 0xbf, 0xe0, 0xa0, 0x80]],
      ];
      for (const [s, bytes] of cases) deepEqual(fnv1a64Utf8(s), fnv1a64(bytes), JSON.stringify(s));
    });

    it('does not depend on key order or channel order', () => {
      const reversed = reverseKeys(DEFAULT_CATALOG) as Mutable;
      chans(reversed).reverse();
      const r = validateCatalog(reversed);
      if (!r.ok) return fail(describeErrors(r.errors));
      equal(canonicalCatalogJson(r.catalog), canonicalCatalogJson(DEFAULT_CATALOG));
      equal(catalogHashHex(r.catalog), DEFAULT_HASH_HEX);
      const rng = xorshift(20240601);
      for (let n = runs(200, 20); n > 0; n--) {
        const seed = rng();
        const c = shuffledKeys(DEFAULT_CATALOG, seed) as Mutable;
        c['channels'] = shuffled(chans(c), seed);
        equal(catalogHashHex(c as unknown as Catalog), DEFAULT_HASH_HEX, `seed ${seed}`);
      }
    });

    it('changes when any channel changes', () => {
      const edits: [string, (c: Mutable) => void][] = [
        ['a rate', (c) => { ch(c, IMU)['max_rate_hz'] = 199; }],
        ['a unit', (c) => { ((ch(c, IMU)['fields'] as Mutable[])[0] as Mutable)['unit'] = 'g'; }],
        ['the order of fields', (c) => { (ch(c, IMU)['fields'] as Mutable[]).reverse(); }],
        ['a priority', (c) => { ch(c, BATTERY)['priority'] = 'elevated'; }],
        ['an id', (c) => { ch(c, BATTERY)['id'] = 16; }],
        ['an added optional key', (c) => { ch(c, CMD_VEL)['max_burst'] = 50; }],
        ['a removed channel', (c) => { chans(c).splice(BATTERY, 1); }],
        ['the catalog name', (c) => { c['name'] = 'mobile-manipulator-2'; }],
      ];
      const seen = new Set<string>([DEFAULT_HASH_HEX]);
      for (const [what, edit] of edits) {
        const c = clone();
        edit(c);
        const r = validateCatalog(c);
        if (!r.ok) return fail(`${what}: ${describeErrors(r.errors)}`);
        const hex = catalogHashHex(r.catalog);
        ok(!seen.has(hex), `${what} left the hash at ${hex}`);
        seen.add(hex);
      }
    });

    it('is of compact canonical JSON that round-trips', () => {
      const text = canonicalCatalogJson(DEFAULT_CATALOG);
      ok(text.indexOf(' ') < 0 && text.indexOf('\n') < 0, 'not compact');
      ok(text.startsWith('{"channels":[{"class":"STATE","critical":true,"direction":"telemetry","fields":[{"name":"latched","unit":""}'), text.slice(0, 120));
      const back = JSON.parse(text) as unknown;
      const r = validateCatalog(back);
      if (!r.ok) return fail(describeErrors(r.errors));
      deepEqual(r.catalog, DEFAULT_CATALOG);
      equal(canonicalCatalogJson(r.catalog), text);
    });
  });

  describe('CatalogIndex', () => {
    const idx = loadCatalog(DEFAULT_CATALOG);

    it('pins the numeric codes by value (§10.1, §10.4, §10.5)', () => {
      deepEqual({ ...ChannelClass }, { STREAM: 0, STATE: 1, EVENT: 2, INTENT: 3 });
      deepEqual({ ...StreamKind }, { samples: 0, segments: 1 });
      deepEqual({ ...Priority }, { background: 0, normal: 1, elevated: 2, critical: 3 });
      deepEqual({ ...Tier }, { observer: 0, operator: 1, maintainer: 2 });
      deepEqual({ ...Direction }, { telemetry: 0, publication: 1 });
      equal(MAX_BURST_MULTIPLE, 4);
      for (const table of [ChannelClass, StreamKind, Priority, Tier, Direction]) ok(Object.isFrozen(table));
      // A non-STREAM channel's kind is the value the shedding table takes for "no kind".
      equal(idx.byName('battery')?.kind, NO_STREAM_KIND);
    });

    it('finds channels by id through the dense table and by name', () => {
      for (const c of idx.channels) {
        equal(idx.byId(c.id), c);
        equal(idx.byName(c.name), c);
      }
      for (const id of [0, 4, 9, 46, 255, 256, -1, 1.5, NaN]) equal(idx.byId(id), undefined, `id ${id}`);
      for (const name of ['', 'IMU', 'nope', 'constructor', '__proto__', 'toString']) equal(idx.byName(name), undefined, name);
    });

    it('precomputes the numeric codes of each channel', () => {
      const info = (name: string) => {
        const c = idx.byName(name);
        if (c === undefined) return fail(`no channel ${name}`);
        const { def: _def, ...codes } = c;
        return codes;
      };
      deepEqual(info('trajectory'), {
        id: 31, name: 'trajectory', cls: ChannelClass.STREAM, kind: StreamKind.segments, priority: Priority.elevated,
        critical: false, subscribeTier: Tier.observer, publishTier: Tier.operator, motion: true,
        direction: Direction.publication, maxRateHz: 5, queueDepth: 0, maxBurst: 20, fieldCount: 6,
      });
      deepEqual(info('safety-events'), {
        id: 2, name: 'safety-events', cls: ChannelClass.EVENT, kind: -1, priority: Priority.critical,
        critical: true, subscribeTier: Tier.observer, publishTier: -1, motion: false,
        direction: Direction.telemetry, maxRateHz: 20, queueDepth: 16, maxBurst: 0, fieldCount: 3,
      });
      deepEqual(info('imu'), {
        id: 10, name: 'imu', cls: ChannelClass.STREAM, kind: StreamKind.samples, priority: Priority.normal,
        critical: false, subscribeTier: Tier.observer, publishTier: -1, motion: false,
        direction: Direction.telemetry, maxRateHz: 200, queueDepth: 0, maxBurst: 0, fieldCount: 6,
      });
      deepEqual(info('take_control'), {
        id: 42, name: 'take_control', cls: ChannelClass.INTENT, kind: -1, priority: Priority.critical,
        critical: true, subscribeTier: Tier.observer, publishTier: Tier.operator, motion: false,
        direction: Direction.publication, maxRateHz: 5, queueDepth: 0, maxBurst: 0, fieldCount: 0,
      });
      deepEqual(idx.byName('imu')?.def, DEFAULT_CATALOG.channels[3]);
    });

    it('lists channels in id order whatever the catalog order', () => {
      const c = clone();
      c['channels'] = shuffled(chans(c), 12345);
      const shuffledIdx = loadCatalog(c);
      const ids = shuffledIdx.channels.map((x) => x.id);
      deepEqual(ids, ids.slice().sort((a, b) => a - b));
      deepEqual(ids, idx.channels.map((x) => x.id));
      equal(shuffledIdx.hashHex, DEFAULT_HASH_HEX);
    });

    it('is frozen, and so is every ChannelInfo', () => {
      ok(Object.isFrozen(idx));
      ok(Object.isFrozen(idx.channels));
      for (const c of idx.channels) ok(Object.isFrozen(c), c.name);
      equal(Reflect.set(idx.channels[0] as object, 'priority', 0), false);
      equal(idx.channels[0]?.priority, Priority.critical);
      equal(Reflect.set(idx, 'hashHex', '0'), false);
    });

    it('carries the catalog hash and canonical text for WELCOME and CATALOG', () => {
      equal(idx.hashHex, DEFAULT_HASH_HEX);
      equal(idx.canonicalJson, canonicalCatalogJson(DEFAULT_CATALOG));
      const h = idx.hash;
      deepEqual(h, catalogHash(DEFAULT_CATALOG));
      h[0] = (h[0] as number) ^ 0xff;
      deepEqual(idx.hash, catalogHash(DEFAULT_CATALOG));
      const out = new Uint8Array(12);
      idx.writeHash(out, 2);
      deepEqual(out.subarray(2, 10), catalogHash(DEFAULT_CATALOG));
      equal(out[0], 0);
      equal(out[10], 0);
    });
  });

  describe('deepFreeze', () => {
    it('freezes nested data and leaves typed arrays alone', () => {
      const x = deepFreeze({ a: [{ b: 1 }], t: new Uint8Array(2) });
      ok(Object.isFrozen(x) && Object.isFrozen(x.a) && Object.isFrozen(x.a[0]));
      x.t[0] = 7;
      equal(x.t[0], 7);
    });
  });
});
