// npm run fleet -- --hubs N [--broker mqtt://HOST:PORT] [--duration S] [--scenario NAME] [--seed N]
//                  [--site S] [--key K] [--format json|cbor] [--port P]
//
// Runs N simulated hubs in real time, each with its own robot and clients (the scenario's,
// seeded `seed + i`), each uplinked to one MQTT broker as `hub-1` … `hub-N` of one site
// (docs/fleet.md). Without --broker an aedes broker starts in this process and its port is
// printed. A summary line every 5 s; at the end (or Ctrl-C) every uplink announces `offline`
// and a table of what each published.

import { randomFillSync } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { loadCatalog } from '../catalog/index.js';
import { DEFAULT_CATALOG } from '../catalog/default.js';
import { ArgReader, brokerOf, notAFlag, seedOf, siteOf, UsageError } from './args.js';
import { Broker } from './mqtt-broker.js';
import { loadNamedScenario, ScenarioError, type Scenario } from './scenario.js';
import { MemoryStore, Simulation } from './sim.js';
import { US_PER_MS, usOf } from './kernel.js';
import { startHostUplink, uplinkConfigOf, type HostUplink } from './uplink-host.js';
import { UplinkFormat, type UplinkFormatName } from '../uplink/config.js';
import { SOURCE_NAMES } from '../uplink/messages.js';
import { UPLINK_STATE_NAMES } from '../uplink/uplink.js';
import { FLEET_STOP_VERDICT_NAMES } from '../hub/fleet-stop.js';

const USAGE = `usage: npm run fleet -- --hubs N [--broker mqtt://HOST:PORT] [--duration S] [--scenario NAME] [--seed N]
                      [--site S] [--key K] [--format json|cbor] [--port P]
  --hubs N        simulated hubs, hub-1 … hub-N (1–200)
  --broker URL    the broker to uplink to; absent: an aedes broker in this process (its port is printed)
  --port P        the in-process broker's port (default 0: any free port)
  --duration S    seconds to run (default: until Ctrl-C)
  --scenario NAME each hub's robot and clients (default: calm); the scenario's own "uplink" key applies
  --seed N        hub i runs seed N + i (default: the scenario's)
  --site S        the topic's site level (default: the scenario's, else "site")
  --key K         the fleet-stop key (default: the scenario's; none: fleet stops are refused)
  --format F      telemetry as json or cbor (default: the scenario's, else json)`;

interface Args {
  hubs: number;
  broker?: string;
  port: number;
  durationS: number;
  scenario: string;
  seed?: number;
  site?: string;
  key?: string;
  format?: UplinkFormatName;
}

function parse(argv: readonly string[]): Args {
  const a: Args = { hubs: 0, port: 0, durationS: Infinity, scenario: 'calm' };
  const r = new ArgReader(argv);
  for (let arg = r.next(); arg !== undefined; arg = r.next()) {
    switch (arg) {
      case '--hubs': {
        const v = r.value(arg);
        a.hubs = Number(v);
        if (!/^\d+$/.test(v) || a.hubs < 1 || a.hubs > 200) throw new UsageError(`--hubs must be 1–200, got ${JSON.stringify(v)}`);
        break;
      }
      case '--broker':
        a.broker = brokerOf(r.value(arg));
        break;
      case '--port': {
        const v = r.value(arg);
        a.port = Number(v);
        if (!/^\d+$/.test(v) || a.port > 65535) throw new UsageError(`--port must be 0–65535, got ${JSON.stringify(v)}`);
        break;
      }
      case '--duration': {
        const v = r.value(arg);
        a.durationS = Number(v);
        if (!(a.durationS > 0)) throw new UsageError(`--duration must be a number of seconds > 0, got ${JSON.stringify(v)}`);
        break;
      }
      case '--scenario':
        a.scenario = r.value(arg);
        break;
      case '--seed':
        a.seed = seedOf(r.value(arg));
        break;
      case '--site':
        a.site = siteOf(r.value(arg));
        break;
      case '--key':
        a.key = r.value(arg);
        break;
      case '--format': {
        const v = r.value(arg);
        if (v !== UplinkFormat.JSON && v !== UplinkFormat.CBOR) throw new UsageError(`--format must be json or cbor, got ${JSON.stringify(v)}`);
        a.format = v;
        break;
      }
      default:
        notAFlag(arg);
    }
  }
  if (a.hubs === 0) throw new UsageError('--hubs is required');
  return a;
}

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** When the simulation falls this far behind the wall clock, the time is given up, not caught up in a burst. */
const MAX_LAG_MS = 250;
const STEP_MS = 10;

/** One simulated hub stepped by the wall clock, and its uplink. */
class FleetHub {
  readonly sim: Simulation;
  readonly id: string;
  up: HostUplink | null = null;
  private sim0 = 0;
  private wall0 = 0;
  latchedSeen = false;

  constructor(scenario: Scenario, seed: number, id: string) {
    this.id = id;
    this.sim = new Simulation(scenario, { seed, hubId: id, store: new MemoryStore(), random: { fill: (b) => void randomFillSync(b) } });
  }

  start(): void {
    this.wall0 = performance.now();
    this.sim0 = this.sim.nowMs;
  }

  /** Virtual time up to the wall clock: the scenario's script, then the kernel alone. */
  async advance(): Promise<void> {
    const sim = this.sim;
    const target = this.sim0 + (performance.now() - this.wall0);
    if (target > sim.nowMs) {
      const end = sim.scenario.durationMs;
      if (sim.nowMs < end) await sim.step(Math.min(target, end));
      if (target > end) {
        const until = usOf(target);
        while (!sim.kernel.runUntil(until)) await microtasks();
        await microtasks();
      }
    }
    const lag = this.sim0 + (performance.now() - this.wall0) - sim.nowMs;
    if (lag > MAX_LAG_MS) this.sim0 -= lag;
  }
}

function microtasks(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

async function main(): Promise<number> {
  let args: Args;
  try {
    args = parse(process.argv.slice(2));
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    if (e.message) process.stderr.write(`fleet: ${e.message}\n`);
    process.stderr.write(`${USAGE}\n`);
    return e.message ? 2 : 0;
  }
  const catalog = loadCatalog(DEFAULT_CATALOG);
  let scenario: Scenario;
  try {
    scenario = loadNamedScenario(args.scenario, catalog);
  } catch (e) {
    if (!(e instanceof ScenarioError)) throw e;
    process.stderr.write(`fleet: ${e.message}\n`);
    return 2;
  }
  let broker: Broker | null = null;
  let url = args.broker;
  if (url === undefined) {
    broker = await new Broker().start(args.port);
    url = broker.url;
    say(`fleet: an MQTT broker (aedes) in this process on port ${broker.port}: ${url}`);
  }
  const config = uplinkConfigOf(scenario.uplink, { broker: url, site: args.site, fleetKey: args.key, format: args.format });
  say(`fleet: ${args.hubs} hubs (scenario ${scenario.name}, seeds ${args.seed ?? scenario.seed}…) uplinked to ${url} as fleet/${config.site}/hub-1…hub-${args.hubs}`);
  say(`  telemetry ${config.telemetry.map((t) => `${t.channel}@${t.rateHz}Hz`).join(', ') || 'none'} as ${config.format}; events ${config.events.join(', ') || 'none'}`);
  say(`  fleet stop on fleet/${config.site}/estop: ${config.fleetKey === '' ? 'no key (--key K): every fleet stop is refused' : 'signed with the --key given'}`);

  const hubs: FleetHub[] = [];
  for (let i = 0; i < args.hubs; i++) {
    const h = new FleetHub(scenario, (args.seed ?? scenario.seed) + i, `hub-${i + 1}`);
    const sim = h.sim;
    h.up = startHostUplink(
      config,
      {
        catalog: sim.catalog,
        hubId: h.id,
        nowMs: () => Math.floor(sim.kernel.nowUs / US_PER_MS),
        attach: (link) => sim.hub.attach(link),
        estop: (source) => sim.hub.estop(source),
        healthSummary: (out) => sim.hub.healthSummary(out),
      },
      sim.store,
      (code, a) => {
        if (code === 'fleet-estop') say(`  ${h.id}: fleet stop accepted (seq ${a}): ESTOP latched, source fleet`);
        else if (code === 'fleet-estop-refused') say(`  ${h.id}: fleet stop refused: ${FLEET_STOP_VERDICT_NAMES[a ?? 0] ?? a}`);
        else if (code === 'uplink-online' && (a ?? 0) > 1) say(`  ${h.id}: uplink online again (connection ${a})`);
        else if (code === 'uplink-offline') say(`  ${h.id}: uplink lost the broker; retrying with backoff`);
      },
    );
    h.start();
    hubs.push(h);
  }

  const started = performance.now();
  let stopping = false;
  const stop = (): void => {
    stopping = true;
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  let nextSummary = started + 5000;
  while (!stopping && performance.now() - started < args.durationS * 1000) {
    for (const h of hubs) await h.advance();
    if (performance.now() >= nextSummary) {
      nextSummary += 5000;
      say(summaryLine(hubs, (performance.now() - started) / 1000));
    }
    await new Promise((r) => setTimeout(r, STEP_MS));
  }
  say(summaryLine(hubs, (performance.now() - started) / 1000));
  say('\nhub      uplink   connects  status health telemetry events safety  latched  fleet stops (accepted/refused)');
  for (const h of hubs) {
    const u = (h.up as HostUplink).uplink;
    const p = u.publishedBy;
    const v = u.healthView().fleetStops;
    const latch = h.sim.hub.latch;
    say(
      `${h.id.padEnd(8)} ${UPLINK_STATE_NAMES[u.state]!.padEnd(8)} ${String(u.connects).padStart(8)}  ${String(p.status).padStart(6)} ${String(p.health).padStart(6)} ${String(p.telemetry).padStart(9)} ${String(p.events).padStart(6)} ${String(p.safety).padStart(6)}  ${(latch.latched ? `yes (${SOURCE_NAMES[latch.source] ?? latch.source})` : 'no').padEnd(8)} ${v.accepted}/${v.refused}`,
    );
  }
  for (const h of hubs) await (h.up as HostUplink).stop();
  for (const h of hubs) h.sim.hub.shutdown();
  if (broker) await broker.stop();
  return 0;
}

function summaryLine(hubs: readonly FleetHub[], s: number): string {
  let online = 0;
  let published = 0;
  let latched = 0;
  let level = 0;
  for (const h of hubs) {
    const u = (h.up as HostUplink).uplink;
    if (UPLINK_STATE_NAMES[u.state] === 'online') online++;
    published += u.published;
    if (h.sim.hub.latch.latched) latched++;
    level = Math.max(level, u.level);
  }
  return `  ${s.toFixed(0)} s: ${online}/${hubs.length} uplinks online, ${published} messages published, ${latched} latched, highest uplink level ${level}`;
}

main().then(
  (code) => {
    process.exitCode = code;
    setTimeout(() => process.exit(code), 1000).unref();
  },
  (e: unknown) => {
    process.stderr.write(`fleet: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  },
);
