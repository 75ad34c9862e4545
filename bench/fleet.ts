// npm run fleet-bench [-- --hubs N] [--seconds S] [--budget BYTES_PER_S] [--json]
//
// Many hubs into Debian's mosquitto (docs/fleet.md): N hubs (the real core, each with a robot
// publishing imu at 100 Hz, odom at 50 Hz and battery at 1 Hz, and no other client) uplinked to a
// mosquitto of our own on the loopback, and one subscriber to `fleet/#`. Two phases of S seconds:
// the uplinks unthrottled, then each held to BUDGET bytes a second (a throttled broker link).
// Reported per phase: messages per second published by the uplinks and received by the
// subscriber, and how the uplinks shed: their §10.3 levels over the phase, the samples the table
// decimated or dropped, the grants the hub cut, and in the throttled phase how long each hub's
// ESTOP took from the button to the subscriber. mosquitto is installed (apt-get, as root) when
// missing. Timings are the machine's, never a test's.

import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomFillSync } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import mqtt from 'mqtt';
import { loadCatalog, type CatalogIndex } from '../catalog/index.js';
import { DEFAULT_CATALOG } from '../catalog/default.js';
import { Hub } from '../hub/hub.js';
import { MemoryStore, type RobotPort } from '../hub/ports.js';
import { readUplinkConfig } from '../uplink/config.js';
import { NodeMqtt } from '../uplink/node.js';
import { Uplink, UplinkState } from '../uplink/uplink.js';

const MOSQUITTO = '/usr/sbin/mosquitto';
const TICK_MS = 10;

interface Args {
  hubs: number;
  seconds: number;
  budget: number;
  json: boolean;
}

function parse(argv: readonly string[]): Args {
  const a: Args = { hubs: 100, seconds: 10, budget: 1500, json: false };
  for (const arg of argv) {
    const m = /^--(hubs|seconds|budget)=(\d+)$/.exec(arg);
    if (m) a[m[1] as 'hubs' | 'seconds' | 'budget'] = Number(m[2]);
    else if (arg === '--json') a.json = true;
    else throw new Error(`unknown argument ${arg} (--hubs=N --seconds=S --budget=BYTES_PER_S --json)`);
  }
  if (!(a.hubs >= 1 && a.seconds >= 1 && a.budget >= 100)) throw new Error('--hubs ≥ 1, --seconds ≥ 1, --budget ≥ 100');
  return a;
}

function note(line: string): void {
  process.stderr.write(`${line}\n`);
}

// ------------------------------------------------------------------------------ mosquitto

function ensureMosquitto(): void {
  if (existsSync(MOSQUITTO)) return;
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) throw new Error(`${MOSQUITTO} is missing and we are not root: apt-get install mosquitto first`);
  note(`${MOSQUITTO} is missing: apt-get update && apt-get install -y mosquitto`);
  const opts = { stdio: ['ignore', 2, 2] as ['ignore', number, number], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } };
  for (const [cmd, args] of [['apt-get', ['update']], ['apt-get', ['install', '-y', 'mosquitto']]] as const) {
    const r = spawnSync(cmd, args, opts);
    if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (exit ${r.status ?? r.signal})`);
  }
}

function freePort(): Promise<number> {
  return new Promise((ok, bad) => {
    const s = net.createServer();
    s.once('error', bad);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => ok(port));
    });
  });
}

async function startMosquitto(): Promise<{ port: number; stop: () => Promise<void> }> {
  const dir = mkdtempSync(join(os.tmpdir(), 'fleet-bench-mosquitto-'));
  const port = await freePort();
  const conf = join(dir, 'mosquitto.conf');
  writeFileSync(conf, [`listener ${port} 127.0.0.1`, 'allow_anonymous true', 'persistence false', 'max_queued_messages 100000', 'log_dest stderr', 'log_type error', ''].join('\n'));
  const child: ChildProcess = spawn(MOSQUITTO, ['-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
  let exited: number | string | null = null;
  child.once('exit', (code, signal) => (exited = code ?? signal));
  const stop = async (): Promise<void> => {
    if (exited === null) {
      const gone = new Promise((ok) => child.once('exit', ok));
      child.kill('SIGTERM');
      await gone;
    }
    rmSync(dir, { recursive: true, force: true });
  };
  for (let i = 0; i < 100; i++) {
    const up = await new Promise<boolean>((ok) => {
      const s = net.connect({ host: '127.0.0.1', port });
      s.once('connect', () => (s.destroy(), ok(true)));
      s.once('error', () => ok(false));
    });
    if (up) return { port, stop };
    if (exited !== null) break;
    await new Promise((r) => setTimeout(r, 50));
  }
  await stop();
  throw new Error(`mosquitto did not start on port ${port}`);
}

// ------------------------------------------------------------------------------ the hubs

const QUIET_ROBOT: RobotPort = { stop: () => undefined, release: () => undefined, publish: () => undefined, intent: () => 0 };

class BenchHub {
  readonly hub: Hub;
  readonly uplink: Uplink;
  readonly mqtt: NodeMqtt;
  readonly levelMs = [0, 0, 0];
  estopAt = -1;
  private readonly imu = new Float64Array(6);
  private readonly odom = new Float64Array(5);
  private readonly battery = new Float64Array(2);

  constructor(
    readonly id: string,
    catalog: CatalogIndex,
    url: string,
    budget: number,
    now: () => number,
  ) {
    const clock = { now };
    this.hub = new Hub({ clock, random: { fill: (b) => void randomFillSync(b) }, store: new MemoryStore(), robot: QUIET_ROBOT, catalog }, { hubId: id });
    const { config, problems } = readUplinkConfig(
      {
        broker: url,
        site: 'bench',
        telemetry: [
          { channel: 'imu', rateHz: 50 },
          { channel: 'odom', rateHz: 10 },
          { channel: 'battery', rateHz: 1 },
        ],
        events: ['safety-events'],
        maxBytesPerS: budget,
      },
      catalog,
    );
    if (problems.length > 0) throw new Error(JSON.stringify(problems));
    this.mqtt = new NodeMqtt(url);
    this.uplink = new Uplink(config, { hub: this.hub, clock, wallMs: () => Date.now(), store: new MemoryStore(), mqtt: this.mqtt, random: { fill: (b) => void randomFillSync(b) } });
    this.mqtt.listener = this.uplink;
  }

  /** One tick of the hub's time: the robot's samples due since `from`, the hub, the uplink. */
  step(from: number, to: number, ids: { imu: number; odom: number; battery: number }): void {
    for (let t = Math.floor(from / 10) * 10 + 10; t <= to; t += 10) {
      this.imu[2] = 9.81 + (t % 7) * 0.001;
      this.hub.publishSample(ids.imu, t, this.imu, 6);
      if (t % 20 === 0) {
        this.odom[0] = t / 1000;
        this.hub.publishSample(ids.odom, t, this.odom, 5);
      }
      if (t % 1000 === 0) {
        this.battery[0] = 24;
        this.battery[1] = 80;
        this.hub.publishSample(ids.battery, t, this.battery, 2);
      }
    }
    this.hub.tick();
    this.uplink.tick();
    const l = this.uplink.level;
    this.levelMs[l >= 2 ? 2 : l] = (this.levelMs[l >= 2 ? 2 : l] as number) + (to - from);
  }
}

interface Phase {
  readonly name: string;
  readonly budgetBytesPerS: number;
  readonly hubs: number;
  readonly seconds: number;
  readonly online: number;
  readonly publishedPerS: number;
  readonly receivedPerS: number;
  readonly receivedTelemetryPerS: number;
  readonly receivedBytesPerS: number;
  readonly levelShare: { readonly level0: number; readonly level1: number; readonly level2: number };
  readonly table: { readonly delivered: number; readonly decimated: number; readonly shedDrops: number; readonly egressDrops: number; readonly unsent: number };
  readonly imuGrantHz: { readonly min: number; readonly mean: number };
  readonly estopToSubscriberMs: { readonly median: number; readonly max: number; readonly heard: number } | null;
}

async function phase(name: string, a: Args, url: string, budget: number, catalog: CatalogIndex): Promise<Phase> {
  const t0 = performance.now();
  const now = (): number => Math.floor(performance.now() - t0);
  const ids = { imu: catalog.byName('imu')!.id, odom: catalog.byName('odom')!.id, battery: catalog.byName('battery')!.id };
  const hubs: BenchHub[] = [];
  for (let i = 0; i < a.hubs; i++) hubs.push(new BenchHub(`hub-${i + 1}`, catalog, url, budget, now));
  const sub = mqtt.connect(url, { protocolVersion: 4, reconnectPeriod: 0, clean: true });
  let received = 0;
  let receivedTelemetry = 0;
  let receivedBytes = 0;
  let counting = false;
  const safetyHeard = new Map<string, number>();
  sub.on('message', (topic, payload) => {
    if (topic.endsWith('/safety')) {
      const id = topic.split('/')[2] as string;
      if (!safetyHeard.has(id) && payload.toString().includes('"latched":true')) safetyHeard.set(id, performance.now());
    }
    if (!counting) return;
    received++;
    receivedBytes += payload.length + topic.length;
    if (topic.includes('/telemetry/')) receivedTelemetry++;
  });
  await new Promise<void>((ok, bad) => {
    sub.once('connect', () => sub.subscribe('fleet/#', { qos: 0 }, (e) => (e ? bad(e) : ok())));
    sub.once('error', bad);
  });
  // Every uplink online before the clock of the phase starts.
  let last = now();
  const tickAll = (): void => {
    const t = now();
    if (t <= last) return;
    for (const h of hubs) h.step(last, t, ids);
    last = t;
  };
  const deadline = performance.now() + 30000;
  while (hubs.some((h) => h.uplink.state !== UplinkState.ONLINE)) {
    if (performance.now() > deadline) throw new Error(`${name}: not every uplink came online within 30 s`);
    tickAll();
    await new Promise((r) => setTimeout(r, TICK_MS));
  }
  for (const h of hubs) h.levelMs.fill(0);
  const c0 = hubs.map((h) => ({ ...h.hub.counters }));
  const p0 = hubs.reduce((s, h) => s + h.uplink.published, 0);
  const u0 = hubs.reduce((s, h) => s + h.uplink.unsent, 0);
  counting = true;
  const start = performance.now();
  const end = start + a.seconds * 1000;
  let pressed = false;
  const estopPressed = new Map<string, number>();
  while (performance.now() < end) {
    tickAll();
    if (budget > 0 && !pressed && performance.now() >= start + (a.seconds * 1000) / 2) {
      // Half-way through the throttled phase: every hub's button, under the uplinks' full queues.
      pressed = true;
      for (const h of hubs) {
        estopPressed.set(h.id, performance.now());
        h.hub.setButton(true);
        h.hub.setButton(false);
      }
    }
    await new Promise((r) => setTimeout(r, TICK_MS));
  }
  counting = false;
  const elapsedS = (performance.now() - start) / 1000;
  const published = hubs.reduce((s, h) => s + h.uplink.published, 0) - p0;
  const table = { delivered: 0, decimated: 0, shedDrops: 0, egressDrops: 0, unsent: hubs.reduce((s, h) => s + h.uplink.unsent, 0) - u0 };
  hubs.forEach((h, i) => {
    const c = h.hub.counters;
    const b = c0[i] as typeof c;
    table.delivered += c.delivered - b.delivered;
    table.decimated += c.decimated - b.decimated;
    table.shedDrops += c.shedDrops - b.shedDrops;
    table.egressDrops += c.egressDrops - b.egressDrops;
  });
  const levels = [0, 0, 0];
  for (const h of hubs) for (let l = 0; l < 3; l++) levels[l] = (levels[l] as number) + (h.levelMs[l] as number);
  const total = levels.reduce((x, y) => x + y, 0) || 1;
  const grants = hubs.map((h) => h.uplink.grants.get(ids.imu) ?? 0);
  let estop: Phase['estopToSubscriberMs'] = null;
  if (pressed) {
    // The safety messages still on their way get a moment (they are ahead of everything queued).
    const wait = performance.now() + 2000;
    while (safetyHeard.size < hubs.length && performance.now() < wait) {
      tickAll();
      await new Promise((r) => setTimeout(r, TICK_MS));
    }
    const lat = hubs.filter((h) => safetyHeard.has(h.id)).map((h) => (safetyHeard.get(h.id) as number) - (estopPressed.get(h.id) as number)).sort((x, y) => x - y);
    estop = { median: round(lat[lat.length >> 1] ?? NaN), max: round(lat[lat.length - 1] ?? NaN), heard: lat.length };
  }
  const result: Phase = {
    name,
    budgetBytesPerS: budget,
    hubs: hubs.length,
    seconds: round(elapsedS),
    online: hubs.filter((h) => h.uplink.state === UplinkState.ONLINE).length,
    publishedPerS: round(published / elapsedS),
    receivedPerS: round(received / elapsedS),
    receivedTelemetryPerS: round(receivedTelemetry / elapsedS),
    receivedBytesPerS: round(receivedBytes / elapsedS),
    levelShare: { level0: round(levels[0]! / total, 3), level1: round(levels[1]! / total, 3), level2: round(levels[2]! / total, 3) },
    table,
    imuGrantHz: { min: round(Math.min(...grants)), mean: round(grants.reduce((x, y) => x + y, 0) / grants.length) },
    estopToSubscriberMs: estop,
  };
  for (const h of hubs) h.uplink.stop();
  await new Promise((r) => setTimeout(r, 200));
  for (const h of hubs) h.hub.shutdown();
  sub.end(true);
  return result;
}

function round(x: number, digits = 1): number {
  const f = 10 ** digits;
  return Math.round(x * f) / f;
}

async function main(): Promise<number> {
  const a = parse(process.argv.slice(2));
  ensureMosquitto();
  const version = /mosquitto version (\S+)/.exec(String(spawnSync(MOSQUITTO, ['-h'], { encoding: 'utf8' }).stdout))?.[1] ?? 'unknown';
  const broker = await startMosquitto();
  const url = `mqtt://127.0.0.1:${broker.port}`;
  const catalog = loadCatalog(DEFAULT_CATALOG);
  note(`fleet bench: ${a.hubs} hubs into mosquitto ${version} at ${url}, ${a.seconds} s per phase`);
  try {
    const clear = await phase('clear', a, url, 0, catalog);
    note(`  clear: ${clear.publishedPerS} published/s, ${clear.receivedPerS} received/s`);
    const throttled = await phase('throttled', a, url, a.budget, catalog);
    note(`  throttled: ${throttled.publishedPerS} published/s, ${throttled.receivedPerS} received/s`);
    const report = { version: 1, mosquitto: version, hubs: a.hubs, secondsPerPhase: a.seconds, wished: { imuHz: 50, odomHz: 10, batteryHz: 1, robotImuHz: 100, robotOdomHz: 50 }, phases: [clear, throttled] };
    if (a.json) process.stdout.write(`${JSON.stringify(report)}\n`);
    else printTable(report.phases);
  } finally {
    await broker.stop();
  }
  return 0;
}

function printTable(phases: readonly Phase[]): void {
  const out = (s: string): void => void process.stdout.write(`${s}\n`);
  out('phase      budget B/s  online  published/s  received/s  telemetry/s  received B/s  level 0/1/2 share    decimated  shed  refused  unsent  imu grant min/mean Hz  ESTOP→subscriber median/max ms');
  for (const p of phases) {
    const l = p.levelShare;
    out(
      `${p.name.padEnd(10)} ${String(p.budgetBytesPerS || 'none').padStart(10)}  ${String(p.online).padStart(6)}  ${String(p.publishedPerS).padStart(11)}  ${String(p.receivedPerS).padStart(10)}  ${String(p.receivedTelemetryPerS).padStart(11)}  ${String(p.receivedBytesPerS).padStart(12)}  ${`${l.level0}/${l.level1}/${l.level2}`.padEnd(19)} ${String(p.table.decimated).padStart(10)}  ${String(p.table.shedDrops).padStart(4)}  ${String(p.table.egressDrops).padStart(7)}  ${String(p.table.unsent).padStart(6)}  ${`${p.imuGrantHz.min}/${p.imuGrantHz.mean}`.padStart(22)}  ${p.estopToSubscriberMs ? `${p.estopToSubscriberMs.median}/${p.estopToSubscriberMs.max} (${p.estopToSubscriberMs.heard} heard)` : '—'}`,
    );
  }
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`fleet-bench: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  },
);
