// npm start [-- --scenario NAME] [--seed N] [--port N] [--no-external] [--tcp-port N] [--ws-port N] [--health-port N] [--loop] [--state PATH]
//           [--broker mqtt://HOST:PORT [--site S] [--key K] [--hub-id ID]]
//
// Runs a scenario (default: `default`) in real time: the simulator stepped by the wall clock, the
// hub core, the simulated robot and the simulated clients, with the dashboard on
// http://127.0.0.1:PORT (default 8080, or $PORT; a free port when that one is taken) and loopback
// TCP and WebSocket listeners through which your own client joins the same hub. Ctrl-C stops.
// docs/operations.md "Running the simulator and the dashboard".

import net from 'node:net';
import { loadCatalog } from '../catalog/index.js';
import { HttpHealthServer } from '../bindings/tcp/http-node.js';
import { DEFAULT_CATALOG } from '../catalog/default.js';
import { DEFAULT_PORT, DEFAULT_TCP_PORT, DEFAULT_WS_PORT, startDashboard, type Dashboard } from './dashboard/server.js';
import { loadNamedScenario, ScenarioError } from './scenario.js';
import { ArgReader, brokerOf, notAFlag, seedOf, siteOf, UsageError } from './args.js';
import { defaultStatePath, FileStore } from './file-store.js';
import { startHostUplink, uplinkConfigOf, type HostUplink } from './uplink-host.js';
import { FleetView } from './fleet-view.js';
import { topicLevelProblem } from '../uplink/config.js';
import { FLEET_STOP_VERDICT_NAMES } from '../hub/fleet-stop.js';

interface Args {
  scenario: string;
  seed?: number;
  port: number;
  external: boolean;
  tcpPort: number;
  wsPort: number;
  healthPort: number;
  loop: boolean;
  /** The hub's Store file (the latch survives a restart); undefined: defaultStatePath. */
  state?: string;
  /** The fleet uplink's broker (docs/fleet.md); undefined: no uplink. */
  broker?: string;
  site?: string;
  key?: string;
  hubId: string;
}

const USAGE = `usage: npm start -- [--scenario NAME] [--seed N] [--port N] [--no-external] [--tcp-port N] [--ws-port N] [--health-port N] [--loop] [--state PATH]
  --scenario NAME  a scenario of host-sim/scenarios (default: default)
  --seed N         overrides the scenario's seed
  --port N         the dashboard's port (default: $PORT or ${DEFAULT_PORT}; 0: any free port)
  --no-external    no TCP/WebSocket listeners for external clients
  --tcp-port N     external clients over TCP (default ${DEFAULT_TCP_PORT}; 0: any free port)
  --ws-port N      external clients over WebSocket (default ${DEFAULT_WS_PORT}; 0: any free port)
  --health-port N  health over HTTP (default 0: any free port; the printout names it)
  --loop           start the scenario again when it is over (default: it runs on)
  --state PATH     the hub's Store file, where the ESTOP latch survives a restart
                   (default: robot-hub-sim/SCENARIO.state.json under the OS temp dir)
  --broker URL     uplink the hub to this MQTT broker, mqtt://HOST[:PORT] (docs/fleet.md)
  --site S         the uplink's site (default: the scenario's, else "site")
  --key K          the fleet-stop key (default: the scenario's; none: fleet stops are refused)
  --hub-id ID      the hub's id in the uplink's topics (default: robot-hub)`;

function portOf(flag: string, v: string): number {
  const n = Number(v);
  if (!/^\d+$/.test(v) || n > 65535) throw new UsageError(`${flag} must be a port number 0–65535, got ${JSON.stringify(v)}`);
  return n;
}

function parse(argv: readonly string[], env: NodeJS.ProcessEnv): Args {
  const a: Args = {
    scenario: 'default',
    port: env['PORT'] ? portOf('PORT', env['PORT']) : DEFAULT_PORT,
    external: true,
    tcpPort: DEFAULT_TCP_PORT,
    wsPort: DEFAULT_WS_PORT,
    healthPort: 0,
    loop: false,
    hubId: 'robot-hub',
  };
  const r = new ArgReader(argv);
  for (let arg = r.next(); arg !== undefined; arg = r.next()) {
    switch (arg) {
      case '--scenario':
        a.scenario = r.value(arg);
        break;
      case '--seed':
        a.seed = seedOf(r.value(arg));
        break;
      case '--port':
        a.port = portOf(arg, r.value(arg));
        break;
      case '--tcp-port':
        a.tcpPort = portOf(arg, r.value(arg));
        break;
      case '--ws-port':
        a.wsPort = portOf(arg, r.value(arg));
        break;
      case '--health-port':
        a.healthPort = portOf(arg, r.value(arg));
        break;
      case '--no-external':
        a.external = false;
        break;
      case '--loop':
        a.loop = true;
        break;
      case '--state':
        a.state = r.value(arg);
        break;
      case '--broker':
        a.broker = brokerOf(r.value(arg));
        break;
      case '--site':
        a.site = siteOf(r.value(arg));
        break;
      case '--key':
        a.key = r.value(arg);
        break;
      case '--hub-id': {
        a.hubId = r.value(arg);
        const problem = topicLevelProblem(a.hubId);
        if (problem) throw new UsageError(`--hub-id ${problem}`);
        break;
      }
      default:
        notAFlag(arg);
    }
  }
  return a;
}

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

async function main(): Promise<number> {
  let args: Args;
  try {
    args = parse(process.argv.slice(2), process.env);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    if (e.message) process.stderr.write(`start: ${e.message}\n`);
    process.stderr.write(`${USAGE}\n`);
    return e.message ? 2 : 0;
  }
  const catalog = loadCatalog(DEFAULT_CATALOG);
  let scenario;
  try {
    scenario = loadNamedScenario(args.scenario, catalog);
  } catch (e) {
    if (!(e instanceof ScenarioError)) throw e;
    process.stderr.write(`start: ${e.message}\n`);
    return 2;
  }
  const store = new FileStore(args.state ?? defaultStatePath(scenario.name));
  if (store.problem) process.stderr.write(`start: ${store.path} could not be read (${store.problem}): set aside; the hub starts latched (WATCHDOG)\n`);
  // The fleet view (docs/fleet.md): the site's hubs as the broker shows them, on the dashboard.
  const uplinkConfig = args.broker !== undefined ? uplinkConfigOf(scenario.uplink, { broker: args.broker, site: args.site, fleetKey: args.key }) : null;
  const fleetView = uplinkConfig ? new FleetView(uplinkConfig.broker, uplinkConfig.site) : null;
  const dash: Dashboard = await startDashboard({
    ...(fleetView ? { fleet: () => fleetView.entries() } : {}),
    scenario,
    store,
    ...(process.env['HUB_OPERATIONS_TOKEN'] !== undefined ? { operationsToken: process.env['HUB_OPERATIONS_TOKEN'] } : {}),
    ...(args.seed !== undefined ? { seed: args.seed } : {}),
    port: args.port,
    external: args.external,
    tcpPort: args.tcpPort,
    wsPort: args.wsPort,
    loop: args.loop,
    say,
  });
  const sim = dash.live.sim;
  say(`robot hub simulator: scenario ${scenario.name}, seed ${sim.seed}, ${scenario.durationMs / 1000} s scripted, in real time`);
  say(`  ${scenario.description}`);
  say(`  dashboard        ${dash.url}${dash.portFallback ? `   (port ${args.port} was taken)` : ''}`);
  if (dash.tcp && dash.ws) {
    say(`  hub over TCP     ${dash.tcp.host}:${dash.tcp.port}   (length-prefixed frames, §2; e.g. client/node.ts connectTcp)`);
    say(`  hub over WS      ${dash.ws.url}   (one binary message per frame; e.g. client/node.ts connectWs)`);
  } else {
    say('  external clients: off (--no-external)');
  }
  // Health over HTTP, as on the device's Wi-Fi (docs/operations.md "Reading health over HTTP"):
  // the detailed endpoint needs HUB_OPERATIONS_TOKEN (32–256 characters) and is off without it.
  const token = process.env['HUB_OPERATIONS_TOKEN'];
  const health = await HttpHealthServer.listen({
    net,
    port: args.healthPort,
    ...(token !== undefined ? { token } : {}),
    clock: { now: () => Math.floor(dash.live.hubNowMs()) },
    source: { healthReport: () => dash.live.sim.hub.healthReport(), ready: () => dash.live.sim.hub.ready() },
  });
  say(`  health over HTTP http://${health.host}:${health.port}/health   (detailed: /api/operations/health, ${token === undefined ? 'off: set HUB_OPERATIONS_TOKEN' : health.tokenProblem ? `off: ${health.tokenProblem}` : 'bearer token required'})`);
  say(`  state            ${store.path}   (the ESTOP latch ${dash.live.sim.hub.latch.latched ? 'is restored: LATCHED' : 'is kept here'}; --state PATH)`);
  // The fleet uplink (docs/fleet.md): whichever hub the dashboard runs now, a restart's included.
  let uplink: HostUplink | null = null;
  if (uplinkConfig) {
    const config = uplinkConfig;
    uplink = startHostUplink(
      config,
      {
        catalog,
        hubId: args.hubId,
        nowMs: () => dash.live.hubNowMs(),
        attach: (link) => dash.live.attachExternal().attach(link),
        estop: (source) => dash.live.sim.hub.estop(source),
        healthSummary: (out) => dash.live.sim.hub.healthSummary(out),
      },
      store,
      (code, a) => {
        if (code === 'uplink-online') say(`uplink: online at ${args.broker} (connection ${a})`);
        else if (code === 'uplink-offline') say('uplink: lost the broker; retrying with backoff');
        else if (code === 'fleet-estop') say(`uplink: fleet stop accepted (seq ${a}): ESTOP latched, source fleet`);
        else if (code === 'fleet-estop-refused') say(`uplink: fleet stop refused: ${FLEET_STOP_VERDICT_NAMES[a ?? 0] ?? a}`);
      },
    );
    say(`  fleet uplink     ${args.broker} as fleet/${config.site}/${args.hubId}/   (fleet stop: ${config.fleetKey === '' ? 'off, no key' : 'key set'}); the dashboard's Fleet card shows every hub of the site`);
  }
  say(`  serving ${Math.round(dash.startupMs)} ms after start; Ctrl-C stops`);

  return new Promise<number>((resolveExit) => {
    let stopping = false;
    const stop = (signal: string): void => {
      if (stopping) {
        process.stderr.write(`start: ${signal} again: exiting at once\n`);
        process.exit(130);
      }
      stopping = true;
      say(`\n${signal}: stopping at ${(dash.live.sim.nowMs / 1000).toFixed(1)} s simulated; every session is told GOODBYE SHUTDOWN`);
      Promise.all([uplink ? uplink.stop() : Promise.resolve(), fleetView ? fleetView.close() : Promise.resolve(), dash.close(), health.close()]).then(
        () => resolveExit(0),
        (e: unknown) => {
          process.stderr.write(`start: while stopping: ${e instanceof Error ? e.message : String(e)}\n`);
          resolveExit(1);
        },
      );
    };
    process.on('SIGINT', () => stop('SIGINT'));
    process.on('SIGTERM', () => stop('SIGTERM'));
  });
}

main().then(
  (code) => {
    process.exitCode = code;
    // Nothing should be left, but a stray handle must not keep a stopped simulator alive.
    setTimeout(() => process.exit(code), 1000).unref();
  },
  (e: unknown) => {
    process.stderr.write(`start: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  },
);
