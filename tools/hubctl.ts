// hubctl: poke a live hub from a terminal or a script (docs/tools.md). Built on the project's own
// client library (client/node.ts); every command opens a session of its own, does its work and
// says GOODBYE. Human-readable output by default, JSON with --json.
//
//   npx hubctl COMMAND --hub tcp://HOST:PORT|ws://HOST:PORT [--credential C] [--json] [options]

import { Tier, type CatalogIndex, type ChannelInfo, type HubClient, EstopKind, nackName, type DataFrame } from '../client/index.js';
import { CHANNEL_CLASS_NAMES, DIRECTION_NAMES, PRIORITY_NAMES, STREAM_KIND_NAMES, TIER_NAMES, Direction } from '../catalog/schema.js';
import { loadCatalog } from '../catalog/index.js';
import { DEFAULT_CATALOG } from '../catalog/default.js';
import { loadNamedScenario } from '../host-sim/scenario.js';
import { nodeClock } from '../client/node.js';
import { closeQuietly, describe, httpGet, makeClient, open, parseHubUrl, sleep, tierName, ToolError, type HubAddress } from './connect.js';
import { estopSourceName, FileSink, McapRecorder, readRecording } from './mcap.js';
import { planPlayback, startReplay } from './replay.js';

const USAGE = `usage: hubctl COMMAND [options]

commands (the tier each needs is the session's, set by --credential):
  channels               the catalog: every channel, its class, rate ceiling, tiers and fields
                         with units (any tier)
  grants                 what the hub grants this session: every channel the tier may subscribe,
                         wished at its ceiling (or --rate), granted rate and priority (any tier).
                         The hub tells each session its own grants only; no tier reads another's.
  sessions               the hub's sessions: slots, ACTIVE and STALE counts, and each ACTIVE
                         session's link (binding, congestion level, queue fill, loss), from the
                         health report. Needs maintainer tier (HEALTH, §5.18), or --http with
                         HUB_OPERATIONS_TOKEN set. The report names no client.
  echo CHANNEL           decoded samples with their units as they arrive (the channel's
                         subscribe tier; --rate HZ, default 10; --count N; --duration S)
  rate CHANNEL           the delivered rate beside the granted one, each second and at the end
                         (the channel's subscribe tier; --rate HZ wished, default the ceiling;
                         --duration S, default 5)
  estop                  asserts ESTOP (any tier, any link: it is written before the HELLO and
                         never waits for anything) and waits for the hub to announce the latch
  clear                  clears the ESTOP latch: operator tier; takes control if nobody holds
                         it, clears, releases. The robot stays disarmed (§11.2): arming is the
                         owner's decision, never hubctl's
  health                 the health report: maintainer tier over the session (HEALTH), or
                         --http URL (GET /health, or /api/operations/health when
                         HUB_OPERATIONS_TOKEN is set)
  record --out FILE.mcap record DATA, grants, NACKs and ESTOPs to MCAP (--channels a,b,…, default
                         every channel the tier may subscribe; --rate HZ, default each ceiling;
                         --duration S, default until Ctrl-C)
  replay FILE.mcap       play a recording into the simulator's dashboard (no --hub; --port N,
                         --tcp-port N, --ws-port N, default 8080/7000/7001, 0: any free port;
                         --lead S before the first sample, default 2; --repeat to play it again)

options:
  --hub URL              tcp://HOST:PORT or ws://HOST:PORT[/PATH] (the simulator: tcp://127.0.0.1:7000)
  --credential C         the credential's text (or set HUB_CREDENTIAL); none: the anonymous tier
  --json                 JSON for scripts (echo: one JSON object per line)
  --name N               the session's name (default hubctl)
  --http URL             health and sessions over HTTP, e.g. http://192.168.4.1:80`;

const COMMANDS = ['channels', 'grants', 'sessions', 'echo', 'rate', 'estop', 'clear', 'health', 'record', 'replay'] as const;
type Command = (typeof COMMANDS)[number];

interface Args {
  command: Command;
  target?: string;
  hub?: HubAddress;
  credential?: string;
  json: boolean;
  name: string;
  http?: string;
  rate?: number;
  count?: number;
  durationS?: number;
  out?: string;
  channels?: string[];
  port: number;
  tcpPort: number;
  wsPort: number;
  leadS: number;
  repeat: boolean;
}

function num(flag: string, v: string | undefined, min: number): number {
  const n = Number(v);
  if (v === undefined || v === '' || !Number.isFinite(n) || n < min) throw new ToolError(`${flag} needs a number ≥ ${min}, got ${JSON.stringify(v ?? '')}`, 2);
  return n;
}

function parseArgs(argv: readonly string[], env: NodeJS.ProcessEnv): Args | null {
  if (argv.length === 0 || argv[0] === '-h' || argv[0] === '--help' || argv[0] === 'help') return null;
  const command = argv[0] as Command;
  if (!COMMANDS.includes(command)) throw new ToolError(`unknown command ${JSON.stringify(argv[0])}`, 2);
  const a: Args = { command, json: false, name: 'hubctl', port: 8080, tcpPort: 7000, wsPort: 7001, leadS: 2, repeat: false };
  if (env['HUB_CREDENTIAL'] !== undefined && env['HUB_CREDENTIAL'] !== '') a.credential = env['HUB_CREDENTIAL'];
  for (let i = 1; i < argv.length; i++) {
    const arg = argv[i] as string;
    const value = (): string => {
      const v = argv[++i];
      if (v === undefined) throw new ToolError(`${arg} needs a value`, 2);
      return v;
    };
    switch (arg) {
      case '--hub': a.hub = parseHubUrl(value()); break;
      case '--credential': a.credential = value(); break;
      case '--json': a.json = true; break;
      case '--name': a.name = value(); break;
      case '--http': a.http = value().replace(/\/+$/, ''); break;
      case '--rate': a.rate = num(arg, value(), 0.001); break;
      case '--count': a.count = num(arg, value(), 1); break;
      case '--duration': a.durationS = num(arg, value(), 0.001); break;
      case '--out': a.out = value(); break;
      case '--channels': a.channels = value().split(',').map((s) => s.trim()).filter((s) => s !== ''); break;
      case '--port': a.port = num(arg, value(), 0); break;
      case '--tcp-port': a.tcpPort = num(arg, value(), 0); break;
      case '--ws-port': a.wsPort = num(arg, value(), 0); break;
      case '--lead': a.leadS = num(arg, value(), 0); break;
      case '--repeat': a.repeat = true; break;
      case '-h':
      case '--help':
        return null;
      default:
        if (arg.startsWith('-') || a.target !== undefined) throw new ToolError(`unknown argument ${JSON.stringify(arg)}`, 2);
        a.target = arg;
    }
  }
  const needsTarget = command === 'echo' || command === 'rate' || command === 'replay';
  if (needsTarget && a.target === undefined) throw new ToolError(`${command} needs ${command === 'replay' ? 'a FILE.mcap' : 'a CHANNEL (name or id)'}`, 2);
  if (!needsTarget && a.target !== undefined) throw new ToolError(`unknown argument ${JSON.stringify(a.target)}`, 2);
  const httpOk = (command === 'health' || command === 'sessions') && a.http !== undefined;
  if (command !== 'replay' && a.hub === undefined && !httpOk) throw new ToolError(`${command} needs --hub tcp://HOST:PORT or ws://HOST:PORT`, 2);
  if (command === 'record' && a.out === undefined) throw new ToolError('record needs --out FILE.mcap', 2);
  return a;
}

// ---------------------------------------------------------------------------------------------

class Output {
  constructor(private readonly json: boolean) {}
  line(s = ''): void {
    process.stdout.write(`${s}\n`);
  }
  /** Human text, or the JSON value, whichever was asked for. */
  emit(human: () => string, value: unknown): void {
    this.line(this.json ? JSON.stringify(value, null, 2) : human());
  }
}

/** Resolves at SIGINT/SIGTERM, or after `ms` when given. */
function interrupted(ms: number | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      process.off('SIGINT', done);
      process.off('SIGTERM', done);
      if (timer !== undefined) clearTimeout(timer);
      resolve();
    };
    const timer = ms !== undefined ? setTimeout(done, ms) : undefined;
    process.on('SIGINT', done);
    process.on('SIGTERM', done);
  });
}

function table(rows: readonly (readonly string[])[]): string {
  const widths: number[] = [];
  for (const r of rows) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, c.length)));
  return rows.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] as number))).join('  ').trimEnd()).join('\n');
}

function hz(n: number): string {
  return `${Number.isInteger(n) ? n : n.toFixed(1)} Hz`;
}

function channelOf(catalog: CatalogIndex, name: string): ChannelInfo {
  const info = /^\d+$/.test(name) ? catalog.byId(Number(name)) : catalog.byName(name);
  if (info === undefined) throw new ToolError(`no channel ${JSON.stringify(name)} in the hub's catalog (hubctl channels lists them)`, 2);
  if (info.direction !== Direction.telemetry) throw new ToolError(`${info.name} is a publication: clients send it, nobody subscribes to it`, 2);
  return info;
}

function withUnit(v: number, unit: string): string {
  const s = Number.isInteger(v) ? String(v) : Math.abs(v) >= 1000 || Math.abs(v) < 0.001 ? v.toExponential(3) : v.toFixed(4).replace(/\.?0+$/, '');
  return unit === '' ? s : `${s} ${unit}`;
}

// ---------------------------------------------------------------------------------------------

/** Opens a session and fetches the catalog. */
async function session(a: Args, extra: Partial<Parameters<typeof makeClient>[0]> = {}): Promise<{ client: HubClient; catalog: CatalogIndex }> {
  const hub = a.hub as HubAddress;
  const client = makeClient({ hub, name: a.name, ...(a.credential !== undefined ? { credential: a.credential } : {}), ...extra });
  await open(client, hub);
  try {
    return { client, catalog: await client.fetchCatalog() };
  } catch (e) {
    await closeQuietly(client);
    throw new ToolError(`the catalog could not be read: ${describe(e)}`);
  }
}

async function channels(a: Args, out: Output): Promise<number> {
  const { client, catalog } = await session(a);
  const tier = client.tier;
  await closeQuietly(client);
  const list = catalog.channels.map((c) => ({
    id: c.id,
    name: c.name,
    class: CHANNEL_CLASS_NAMES[c.cls],
    ...(c.kind >= 0 ? { kind: (STREAM_KIND_NAMES as readonly string[])[c.kind] } : {}),
    direction: DIRECTION_NAMES[c.direction],
    maxRateHz: c.maxRateHz,
    priority: PRIORITY_NAMES[c.priority],
    critical: c.critical,
    subscribeTier: TIER_NAMES[c.subscribeTier],
    ...(c.publishTier >= 0 ? { publishTier: (TIER_NAMES as readonly string[])[c.publishTier] } : {}),
    motion: c.motion,
    fields: c.def.fields.map((f) => ({ name: f.name, unit: f.unit })),
  }));
  out.emit(
    () =>
      `catalog ${catalog.catalog.name} (${catalog.size} channels, hash ${catalog.hashHex}); this session: ${tierName(tier)}\n` +
      table([
        ['id', 'name', 'class', 'dir', 'max', 'priority', 'tier', 'fields'],
        ...catalog.channels.map((c) => [
          String(c.id),
          c.name,
          CHANNEL_CLASS_NAMES[c.cls] + (c.kind >= 0 ? `/${(STREAM_KIND_NAMES as readonly string[])[c.kind]}` : ''),
          c.direction === Direction.telemetry ? 'out' : 'in',
          hz(c.maxRateHz),
          PRIORITY_NAMES[c.priority] + (c.motion ? ' motion' : ''),
          (TIER_NAMES as readonly string[])[c.direction === Direction.telemetry ? c.subscribeTier : c.publishTier] ?? '',
          c.def.fields.map((f) => (f.unit === '' ? f.name : `${f.name} [${f.unit}]`)).join(', '),
        ]),
      ]),
    { catalog: catalog.catalog.name, hash: catalog.hashHex, tier: tierName(tier), channels: list },
  );
  return 0;
}

async function grants(a: Args, out: Output): Promise<number> {
  const { client, catalog } = await session(a);
  try {
    const tier = client.tier;
    const wanted = catalog.channels.filter((c) => c.direction === Direction.telemetry && c.subscribeTier <= tier);
    const wishes = wanted.map((c) => ({ channelId: c.id, wishedRateHz: a.rate !== undefined ? Math.min(a.rate, c.maxRateHz) : c.maxRateHz }));
    const answer = await client.subscribe(wishes);
    const rows = wanted.map((c, i) => {
      const g = client.grants.get(c.id);
      const refused = answer.refused.find((r) => r.channelId === c.id);
      return {
        channel: c.name,
        channelId: c.id,
        wishedRateHz: (wishes[i] as { wishedRateHz: number }).wishedRateHz,
        grantedRateHz: g?.grantedRateHz ?? 0,
        priority: g !== undefined ? (PRIORITY_NAMES[g.priority] ?? String(g.priority)) : null,
        ...(refused !== undefined ? { refused: nackName(refused.code) ?? String(refused.code) } : {}),
      };
    });
    const pubs = [...client.pubGrants.values()].map((g) => ({ channel: catalog.byId(g.channelId)?.name ?? `#${g.channelId}`, channelId: g.channelId, grantedRateHz: g.grantedRateHz, burst: g.burst }));
    out.emit(
      () =>
        `grants of session ${client.sessionId} (${tierName(tier)}) on ${a.hub?.url}: every channel this tier may subscribe, wished at ${a.rate !== undefined ? `${a.rate} Hz` : 'its ceiling'}\n` +
        table([
          ['channel', 'wished', 'granted', 'priority'],
          ...rows.map((r) => [r.channel, hz(r.wishedRateHz), r.refused !== undefined ? `refused ${r.refused}` : hz(r.grantedRateHz), r.priority ?? '']),
        ]) +
        (tier < Tier.maintainer ? `\n(${catalog.channels.filter((c) => c.direction === Direction.telemetry && c.subscribeTier > tier).length} channel(s) need a higher tier)` : ''),
      { sessionId: client.sessionId, tier: tierName(tier), subscriptions: rows, publications: pubs },
    );
    return 0;
  } finally {
    await closeQuietly(client);
  }
}

async function healthReport(a: Args): Promise<{ report: Record<string, unknown>; source: string }> {
  if (a.http !== undefined) {
    const token = process.env['HUB_OPERATIONS_TOKEN'];
    const url = `${a.http}${token !== undefined && token !== '' ? '/api/operations/health' : '/health'}`;
    let r;
    try {
      r = await httpGet(url, token !== '' ? token : undefined);
    } catch (e) {
      throw new ToolError(`${url}: ${describe(e)}`);
    }
    if (r.status !== 200 && r.status !== 503) throw new ToolError(`${url} answered ${r.status}${r.status === 401 ? ' (the operations token was refused)' : r.status === 404 ? ' (no operations token is configured on the hub)' : ''}`);
    return { report: JSON.parse(r.body) as Record<string, unknown>, source: url };
  }
  const { client } = await session(a);
  try {
    if (client.tier < Tier.maintainer) {
      throw new ToolError(`the health report needs maintainer tier and this session is ${tierName(client.tier)} (give a maintainer --credential, or read it over HTTP with --http and HUB_OPERATIONS_TOKEN)`);
    }
    const text = await client.health().catch((e: unknown) => {
      throw new ToolError(`HEALTH refused: ${describe(e)}`);
    });
    return { report: JSON.parse(text) as Record<string, unknown>, source: `${a.hub?.url} (HEALTH)` };
  } finally {
    await closeQuietly(client);
  }
}

type Obj = Record<string, unknown>;
const obj = (x: unknown): Obj => (typeof x === 'object' && x !== null ? (x as Obj) : {});
const n = (x: unknown): number => (typeof x === 'number' ? x : NaN);
const BINDINGS = ['other', 'tcp', 'ws', 'ble', 'espnow'];
const RUNGS = ['calm', 'thin', 'reduce_rates', 'pause_non_essential', 'refuse_joins', 'park_lowest'];
const TRIGGERS = ['none', 'tick', 'heap', 'egress', 'sustained'];
const ADMISSION = ['admitting', 'event-loop', 'tick', 'never-shed-backlog', 'memory', 'ladder'];

function linksTable(m: Obj): string {
  const links = Array.isArray(m['links']) ? (m['links'] as Obj[]) : [];
  if (links.length === 0) return '  (no ACTIVE session)';
  const pct = (v: number): string => (v < 0 ? '-' : `${Math.round(v * 100)}%`);
  return table([
    ['slot', 'binding', 'level', 'queue', 'loss'],
    ...links.map((l) => [String(l['slot']), BINDINGS[n(l['binding'])] ?? String(l['binding']), String(l['level']), pct(n(l['occupancy'])), pct(n(l['loss']))]),
  ])
    .split('\n')
    .map((s) => `  ${s}`)
    .join('\n');
}

async function sessions(a: Args, out: Output): Promise<number> {
  const { report, source } = await healthReport(a);
  const m = obj(report['metrics']);
  if (m['sessions'] === undefined) throw new ToolError(`${source} gave the public report only (ready: ${String(report['ready'])}): set HUB_OPERATIONS_TOKEN for the detailed one`);
  const s = obj(m['sessions']);
  const links = Array.isArray(m['links']) ? m['links'] : [];
  out.emit(
    () => `sessions on ${source}: ${String(s['active'])} active, ${String(s['stale'])} stale, ${String(s['slots'])} slots (the health report names no client)\n${linksTable(m)}`,
    { source, slots: s['slots'], active: s['active'], stale: s['stale'], links },
  );
  return 0;
}

function durationLine(label: string, d: unknown): string {
  const o = obj(d);
  return `  ${label.padEnd(12)}p95 ${String(o['p95'])} ms, max ${String(o['max'])} ms, mean ${String(o['mean'])} ms over ${String(o['count'])}`;
}

async function health(a: Args, out: Output): Promise<number> {
  const { report, source } = await healthReport(a);
  const m = obj(report['metrics']);
  if (m['sessions'] === undefined) {
    out.emit(() => `${source}: ${report['ready'] === 1 ? 'ready: admitting new sessions' : 'NOT READY: new sessions are refused HUB_PRESSURE'} (the public report; set HUB_OPERATIONS_TOKEN for the detailed one)`, report);
    return report['ready'] === 1 ? 0 : 1;
  }
  const adm = obj(m['admission']);
  const lad = obj(m['ladder']);
  const s = obj(m['sessions']);
  const p = obj(m['pushes']);
  const nacks = Object.entries(obj(m['nacks'])).filter(([, v]) => n(v) > 0);
  const heap = obj(m['heap']);
  out.emit(
    () =>
      [
        `health of ${source}, at ${(n(m['atMs']) / 1000).toFixed(1)} s hub time (metrics v${String(m['version'])}, ${String(m['windowS'])} s window)`,
        `  ESTOP       ${m['latched'] === 1 ? 'LATCHED' : 'not latched'}`,
        `  admission   ${adm['admitting'] === 1 ? 'admitting' : `PAUSED: ${ADMISSION[n(adm['reason'])] ?? String(adm['reason'])}, retry after ${String(adm['retryAfterMs'])} ms`}`,
        `  ladder      rung ${String(lad['rung'])} ${RUNGS[n(lad['rung'])] ?? ''}${n(lad['rung']) > 0 ? ` (trigger ${TRIGGERS[n(lad['trigger'])] ?? String(lad['trigger'])})` : ''}`,
        `  sessions    ${String(s['active'])} active, ${String(s['stale'])} stale, ${String(s['slots'])} slots`,
        durationLine('tick', m['tickMs']),
        durationLine('loop delay', m['loopDelayMs']),
        durationLine('intent echo', m['intentEchoMs']),
        durationLine('egress wait', m['egressWaitMs']),
        `  pushes      delivered ${String(p['delivered'])}, decimated ${String(p['decimated'])}, conflated ${String(p['conflated'])}, shed ${String(p['shedDrops'])}, egress drops ${String(p['egressDrops'])}, held by grants ${String(p['rateGated'])}`,
        `  NACKs       ${nacks.length === 0 ? 'none' : nacks.map(([k, v]) => `${k} ${String(v)}`).join(', ')}`,
        `  heap        ${n(heap['usedBytes']) < 0 ? 'not measured' : `${String(heap['usedBytes'])} of ${String(heap['limitBytes'])} bytes`}`,
        `  links`,
        linksTable(m),
      ].join('\n'),
    report,
  );
  return 0;
}

/** Subscribes to one channel and waits for its grant. */
async function subscribeOne(client: HubClient, info: ChannelInfo, wishedRateHz: number): Promise<number> {
  const answer = await client.subscribe([{ channelId: info.id, wishedRateHz }]).catch((e: unknown) => {
    throw new ToolError(`SUBSCRIBE ${info.name}: ${describe(e)}`);
  });
  const refused = answer.refused.find((r) => r.channelId === info.id);
  if (refused !== undefined) throw new ToolError(`the hub refused ${info.name}: ${nackName(refused.code) ?? refused.code}${refused.code === 5 ? ` (it needs ${TIER_NAMES[info.subscribeTier]} tier; this session is ${tierName(client.tier)})` : ''}`);
  return client.grants.get(info.id)?.grantedRateHz ?? 0;
}

async function echo(a: Args, out: Output): Promise<number> {
  let onData: ((id: number, f: DataFrame) => void) | null = null;
  const { client, catalog } = await session(a, { reconnect: true, handlers: { onData: (id, f) => onData?.(id, f) } });
  try {
    const info = channelOf(catalog, a.target as string);
    const wished = Math.min(a.rate ?? 10, info.maxRateHz);
    const fields = info.def.fields;
    let seen = 0;
    let enough: () => void = () => undefined;
    const counted = new Promise<void>((r) => (enough = r));
    let ready = false;
    onData = (id, f) => {
      // Samples from before the grant is known are left out, so that the grant line comes first.
      if (id !== info.id || !ready) return;
      seen++;
      if (a.json) {
        const values: Record<string, number> = {};
        const units: Record<string, string> = {};
        fields.forEach((fd, i) => {
          if (i < f.values.length) values[fd.name] = f.values[i] as number;
          units[fd.name] = fd.unit;
        });
        out.line(JSON.stringify({ channel: info.name, t: f.t, seq: f.seq, values, units, ...(f.values.length !== fields.length ? { raw: f.values } : {}), ...(f.gap ? { gap: true } : {}), ...(f.dropped ? { dropped: f.dropped } : {}), ...(f.text !== undefined ? { text: f.text } : {}) }));
      } else {
        const parts = fields.slice(0, f.values.length).map((fd, i) => `${fd.name}=${withUnit(f.values[i] as number, fd.unit)}`);
        if (f.values.length > fields.length) parts.push(`+${f.values.length - fields.length} values`);
        out.line(`${(f.t / 1000).toFixed(3)} s  ${info.name} #${f.seq}  ${parts.join('  ')}${f.text !== undefined ? `  "${f.text}"` : ''}${f.gap ? '  (gap before)' : ''}${f.dropped ? `  (${f.dropped} dropped before)` : ''}`);
      }
      if (a.count !== undefined && seen >= a.count) enough();
    };
    const granted = await subscribeOne(client, info, wished);
    if (!a.json) out.line(`${info.name}: wished ${hz(wished)}, granted ${hz(granted)}; Ctrl-C stops`);
    ready = true;
    await Promise.race([counted, interrupted(a.durationS !== undefined ? a.durationS * 1000 : undefined)]);
    return seen > 0 || a.count === undefined ? 0 : 1;
  } finally {
    onData = null;
    await closeQuietly(client);
  }
}

async function rate(a: Args, out: Output): Promise<number> {
  let onData: ((id: number, f: DataFrame) => void) | null = null;
  const { client, catalog } = await session(a, { reconnect: true, handlers: { onData: (id, f) => onData?.(id, f) } });
  try {
    const info = channelOf(catalog, a.target as string);
    const wished = Math.min(a.rate ?? info.maxRateHz, info.maxRateHz);
    // Delivered rate: samples over the span of their hub timestamps, so that a network that
    // bunches frames does not make the rate look faster or slower than the hub delivered it.
    let frames = 0;
    let gaps = 0;
    let first = NaN;
    let last = NaN;
    let winFrames = 0;
    let winFirst = NaN;
    let winLast = NaN;
    onData = (id, f) => {
      if (id !== info.id) return;
      frames++;
      winFrames++;
      if (f.gap) gaps++;
      if (Number.isNaN(first)) first = f.t;
      last = f.t;
      if (Number.isNaN(winFirst)) winFirst = f.t;
      winLast = f.t;
    };
    const measured = (count: number, t0: number, t1: number): number => (count >= 2 && t1 > t0 ? ((count - 1) * 1000) / (t1 - t0) : 0);
    await subscribeOne(client, info, wished);
    const durationMs = (a.durationS ?? 5) * 1000;
    const stop = interrupted(durationMs);
    let stopped = false;
    void stop.then(() => (stopped = true));
    const started = nodeClock.now();
    while (!stopped) {
      await Promise.race([sleep(1000), stop]);
      if (a.json || stopped) continue;
      const g = client.grants.get(info.id)?.grantedRateHz ?? 0;
      out.line(`${info.name}  delivered ${measured(winFrames, winFirst, winLast).toFixed(1)} Hz  granted ${hz(g)}  (wished ${hz(wished)}, ${winFrames} samples this second)`);
      winFrames = 0;
      winFirst = NaN;
      winLast = NaN;
    }
    const granted = client.grants.get(info.id)?.grantedRateHz ?? 0;
    const delivered = measured(frames, first, last);
    const result = { channel: info.name, channelId: info.id, wishedRateHz: wished, grantedRateHz: granted, deliveredRateHz: Math.round(delivered * 100) / 100, samples: frames, gaps, seconds: Math.round(nodeClock.now() - started) / 1000 };
    out.emit(() => `${info.name}: delivered ${delivered.toFixed(1)} Hz, granted ${hz(granted)} (wished ${hz(wished)}; ${frames} samples, ${gaps} gaps, over ${result.seconds.toFixed(1)} s)`, result);
    return frames > 0 ? 0 : 1;
  } finally {
    onData = null;
    await closeQuietly(client);
  }
}

async function estop(a: Args, out: Output): Promise<number> {
  const hub = a.hub as HubAddress;
  let announced: (latched: boolean) => void = () => undefined;
  const seen = new Promise<boolean>((r) => (announced = r));
  const client = makeClient({
    hub,
    name: a.name,
    ...(a.credential !== undefined ? { credential: a.credential } : {}),
    handlers: { onEstop: (e) => e.kind === EstopKind.ASSERT && announced(true) },
  });
  // Owed from the moment the connection starts, so it is written first on the transport,
  // before the HELLO: a stop waits for no session (§11).
  const opened = open(client, hub);
  client.estop();
  try {
    await opened;
    const ok = await Promise.race([seen, sleep(5000).then(() => client.latched)]);
    const e = client.lastEstop;
    out.emit(
      () => (ok ? `ESTOP latched on ${hub.url}${e ? ` (source ${estopSourceName(e.source)}, origin ${e.origin}, sequence ${e.seq})` : ''}; clear it with hubctl clear (operator tier, control owner)` : `ESTOP sent to ${hub.url}, but no latch was announced within 5 s`),
      { latched: ok, ...(e ? { seq: e.seq, source: estopSourceName(e.source), origin: e.origin } : {}) },
    );
    return ok ? 0 : 1;
  } finally {
    await closeQuietly(client);
  }
}

async function clear(a: Args, out: Output): Promise<number> {
  const { client } = await session(a);
  try {
    if (client.tier < Tier.operator) throw new ToolError(`clearing needs operator tier and this session is ${tierName(client.tier)} (give an operator --credential)`);
    const wasLatched = client.latched;
    let took = false;
    if (!client.ownsControl) {
      try {
        await client.takeControl();
        took = true;
      } catch (e) {
        throw new ToolError(`cannot take control to clear: ${describe(e)}${client.owner !== 0 ? ` (session ${client.owner} owns control: the owner clears)` : ''}`);
      }
    }
    try {
      await client.clearEstop();
    } catch (e) {
      throw new ToolError(`the hub refused the clear: ${describe(e)}`);
    } finally {
      if (took) await client.releaseControl().catch(() => undefined);
    }
    out.emit(
      () => (wasLatched ? `ESTOP cleared on ${a.hub?.url}. The robot stays disarmed: the control owner arms it (the arm intent) before it moves.` : `nothing was latched on ${a.hub?.url}`),
      { cleared: true, wasLatched, latched: client.latched },
    );
    return 0;
  } finally {
    await closeQuietly(client);
  }
}

async function record(a: Args, out: Output): Promise<number> {
  let rec: McapRecorder | null = null;
  const { client, catalog } = await session(a, {
    reconnect: true,
    handlers: {
      onData: (id, f) => rec?.data(id, f),
      onGrant: () => rec?.grants(client.grants, client.pubGrants),
      onNack: (nk) => rec?.nack(nk),
      onEstop: (e) => rec?.estop(e),
    },
  });
  const tier = client.tier;
  try {
    const chosen = a.channels !== undefined ? a.channels.map((c) => channelOf(catalog, c)) : catalog.channels.filter((c) => c.direction === Direction.telemetry && c.subscribeTier <= tier);
    const sink = await FileSink.create(a.out as string);
    rec = new McapRecorder(sink, catalog, chosen, () => nodeClock.now());
    const w = client.welcome;
    await rec.start({ hubId: w?.hubId ?? '', hubUrl: (a.hub as HubAddress).url, tier, catalogName: catalog.catalog.name, catalogHash: catalog.hashHex });
    // The grants of the WELCOME (none wished yet), so the file starts with the session's state.
    rec.grants(client.grants, client.pubGrants);
    if (client.lastEstop !== null) rec.estop(client.lastEstop);
    const answer = await client.subscribe(chosen.map((c) => ({ channelId: c.id, wishedRateHz: a.rate !== undefined ? Math.min(a.rate, c.maxRateHz) : c.maxRateHz })));
    for (const r of answer.refused) process.stderr.write(`hubctl: ${catalog.byId(r.channelId)?.name ?? r.channelId} refused: ${nackName(r.code) ?? r.code}\n`);
    if (!a.json) out.line(`recording ${chosen.map((c) => c.name).join(', ')} from ${(a.hub as HubAddress).url} to ${a.out}${a.durationS !== undefined ? ` for ${a.durationS} s` : ''}; Ctrl-C stops`);
    await interrupted(a.durationS !== undefined ? a.durationS * 1000 : undefined);
  } finally {
    await closeQuietly(client);
  }
  const r = rec as McapRecorder | null;
  if (r === null) return 1;
  await r.finish();
  const counts = Object.fromEntries([...r.counts.entries()].sort());
  out.emit(() => `wrote ${a.out}: ${Object.entries(counts).map(([k, v]) => `${k} ${v}`).join(', ')}`, { out: a.out, messages: counts });
  return 0;
}

async function replay(a: Args, out: Output): Promise<number> {
  const path = a.target as string;
  let rec;
  try {
    rec = await readRecording(path);
  } catch (e) {
    throw new ToolError(`${path} is not a recording this tool can read: ${describe(e)}`);
  }
  const catalog = loadCatalog(DEFAULT_CATALOG);
  const plan = planPlayback(rec, catalog, a.leadS * 1000);
  if (plan.samples.length === 0) throw new ToolError(`${path} holds no telemetry the simulator can play (${[...plan.skipped.entries()].map(([t, s]) => `${t}: ${s.why}`).join('; ') || 'no messages'})`);
  const dash = await startReplay({
    scenario: loadNamedScenario('replay', catalog),
    plan,
    leadMs: a.leadS * 1000,
    repeat: a.repeat,
    port: a.port,
    tcpPort: a.tcpPort,
    wsPort: a.wsPort,
    say: (s) => out.line(s),
  });
  const byTopic = new Map<number, number>();
  for (const s of plan.samples) byTopic.set(s.channelId, (byTopic.get(s.channelId) ?? 0) + 1);
  out.line(`replaying ${path} (${plan.samples.length} samples over ${(plan.spanMs / 1000).toFixed(1)} s${a.repeat ? ', repeating' : ''}) in the simulator, scenario replay`);
  out.line(`  channels         ${[...byTopic.entries()].sort((x, y) => x[0] - y[0]).map(([id, k]) => `${catalog.byId(id)?.name} ${k}`).join(', ')}`);
  for (const [t, s] of plan.skipped) out.line(`  not played       ${t} (${s.count}): ${s.why}`);
  out.line(`  dashboard        ${dash.url}`);
  if (dash.tcp && dash.ws) {
    out.line(`  hub over TCP     ${dash.tcp.host}:${dash.tcp.port}`);
    out.line(`  hub over WS      ${dash.ws.url}`);
  }
  out.line('  Ctrl-C stops');
  await interrupted(undefined);
  await dash.close();
  return 0;
}

const RUN: Record<Command, (a: Args, out: Output) => Promise<number>> = { channels, grants, sessions, echo, rate, estop, clear, health, record, replay };

export async function main(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  let args: Args | null;
  try {
    args = parseArgs(argv, env);
  } catch (e) {
    if (!(e instanceof ToolError)) throw e;
    process.stderr.write(`hubctl: ${e.message}\n\n${USAGE}\n`);
    return e.status;
  }
  if (args === null) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  try {
    return await RUN[args.command](args, new Output(args.json));
  } catch (e) {
    if (!(e instanceof ToolError)) throw e;
    process.stderr.write(`hubctl: ${e.message}\n`);
    return e.status;
  }
}

main(process.argv.slice(2), process.env).then(
  (code) => {
    process.exitCode = code;
    // A socket still closing must not keep a finished command alive.
    setTimeout(() => process.exit(code), 1500).unref();
  },
  (e: unknown) => {
    process.stderr.write(`hubctl: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  },
);
