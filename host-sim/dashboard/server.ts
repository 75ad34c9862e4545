// The dashboard: a small HTTP server on loopback for the page (bundled at start), a WebSocket
// at /ws that pushes the live state ten times a second and takes the page's commands (ESTOP,
// clear, forced congestion level, restart), and the loopback TCP and WebSocket listeners through
// which external clients reach the same hub the simulated ones use (bindings/tcp/node.ts).

import type { PlaybackOptions } from '../playback.js';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import type { HubAttach } from '../../bindings/link.js';
import { TcpListener, WsListener } from '../../bindings/tcp/node.js';
import { randomBytes, randomFillSync } from 'node:crypto';
import { bearerMatches, coarseReport, operatorTokenUsable } from '../../hub/health.js';
import type { Link, LinkSink, Random, Store } from '../../hub/ports.js';
import { MemoryStore } from '../sim.js';
import { reportJson } from '../report.js';
import type { Scenario } from '../scenario.js';
import { bundlePage, type PageFiles } from './bundle.js';
import { LiveSim } from './live.js';
import type { FleetEntryMsg, HelloMsg, PageMsg } from './messages.js';

export const DEFAULT_PORT = 8080;
export const DEFAULT_TCP_PORT = 7000;
export const DEFAULT_WS_PORT = 7001;
/** How often the page is told the state. */
export const PUSH_MS = 100;
/** Seconds of simulated time the page's plots show. */
export const WINDOW_S = 10;
/** A page that has this much unsent is skipped for a round rather than buffered without bound. */
const PAGE_BACKLOG_BYTES = 1 << 20;
const PAGE_MSG_BYTES = 4096;

export interface DashboardOptions {
  readonly scenario: Scenario;
  /** Overrides the scenario's seed. */
  readonly seed?: number;
  readonly host?: string;
  /** The page's port; 0: any free port. When the port is taken another free one is used. */
  readonly port?: number;
  /** Listen for external clients over TCP and WebSocket. */
  readonly external?: boolean;
  readonly tcpPort?: number;
  readonly wsPort?: number;
  /** Start the scenario again when its scripted part is over (otherwise it runs on). */
  readonly loop?: boolean;
  /**
   * The hub's Store, kept across Restart: the latch lives there (a restart never clears it).
   * `npm start` passes a file store; absent, one in memory for this dashboard's life.
   */
  readonly store?: Store;
  /**
   * The operations token (HUB_OPERATIONS_TOKEN): /api/state carries the detailed health report
   * only to `Authorization: Bearer <token>`, the rule of /api/operations/health; without a usable
   * token, never (docs/operations.md "The dashboard's doors").
   */
  readonly operationsToken?: string;
  /**
   * Recorded telemetry the hub publishes at its recorded times (`hubctl replay`,
   * host-sim/playback.ts); every restart plays it again from the start.
   */
  readonly playback?: PlaybackOptions;
  /** Progress lines (scenario over, restarts). */
  readonly say?: (line: string) => void;
  /** The fleet view's hubs (docs/fleet.md), sent with every state message; absent: no fleet view. */
  readonly fleet?: () => readonly FleetEntryMsg[];
}

export interface Dashboard {
  readonly url: string;
  readonly port: number;
  /** The page's port was taken and another was used. */
  readonly portFallback: boolean;
  readonly tcp: { readonly host: string; readonly port: number } | null;
  readonly ws: { readonly url: string; readonly port: number } | null;
  /** The simulation running now (a restart replaces it). */
  readonly live: LiveSim;
  /** Milliseconds from the call to serving. */
  readonly startupMs: number;
  restart(): Promise<void>;
  close(): Promise<void>;
}

interface Page {
  readonly ws: WebSocket;
  watch: Set<number>;
  /** This page's control secret, told in its hello: every control message must carry it. */
  readonly secret: string;
}

/** Page messages that act on the hub or the simulation (everything but `watch`). */
const CONTROL = new Set(['estop', 'clear', 'arm', 'force', 'restart']);

/** The names this server answers to: its host and the loopback names, on its port. */
function ownHosts(host: string, port: number): Set<string> {
  const names = new Set([host, '127.0.0.1', 'localhost', '[::1]']);
  return new Set([...names].map((n) => `${n}:${port}`));
}

/**
 * A browser's request is the dashboard's own when its Host is one of ours (a rebound DNS name is
 * not) and its Origin, if any, is http:// that Host. A request without Origin comes from a
 * program, not from a web page.
 */
export function ownRequest(hosts: ReadonlySet<string>, hostHeader: string | undefined, origin: string | undefined): boolean {
  if (hostHeader === undefined || !hosts.has(hostHeader)) return false;
  return origin === undefined || origin === `http://${hostHeader}`;
}

function listenHttp(server: http.Server, host: string, port: number): Promise<number> {
  return new Promise((ok, bad) => {
    const onError = (e: Error): void => bad(e);
    server.once('error', onError);
    server.listen(port, host, () => {
      server.off('error', onError);
      ok((server.address() as AddressInfo).port);
    });
  });
}

/** GOODBYE SHUTDOWN to every session of a stopped simulation's hub, then one turn for the sockets to take it. */
async function shutdownHub(l: LiveSim): Promise<void> {
  l.sim.hub.shutdown();
  await new Promise<void>((ok) => setImmediate(ok));
}

function taken(e: unknown): boolean {
  return (e as NodeJS.ErrnoException).code === 'EADDRINUSE';
}

export async function startDashboard(o: DashboardOptions): Promise<Dashboard> {
  const started = performance.now();
  const host = o.host ?? '127.0.0.1';
  const say = o.say ?? ((): void => undefined);
  const files: PageFiles = await bundlePage();

  // Resume tokens handed out on listening ports come from a cryptographic source, never from the
  // scenario's seeded generator, whose seed is printed (docs/simulator.md "Resume tokens").
  const random: Random = { fill: (into: Uint8Array): void => void randomFillSync(into) };
  const store: Store = o.store ?? new MemoryStore();
  let run = 1;
  let live = new LiveSim(o.scenario, o.seed, run, { random, store, ...(o.playback !== undefined ? { playback: o.playback } : {}) });
  const pages = new Set<Page>();

  // External clients reach whichever simulation runs now, through its level override.
  const attach: HubAttach = { attach: (link: Link): LinkSink => live.attachExternal().attach(link) };
  const clock = { now: (): number => live.hubNowMs() };
  let tcp: TcpListener | null = null;
  let wsl: WsListener | null = null;
  const listenTcp = async (port: number): Promise<TcpListener> => {
    try {
      return await TcpListener.listen({ hub: attach, clock, host, port });
    } catch (e) {
      if (!taken(e) || port === 0) throw e;
      return TcpListener.listen({ hub: attach, clock, host, port: 0 });
    }
  };
  const listenWs = async (port: number): Promise<WsListener> => {
    try {
      return await WsListener.listen({ hub: attach, clock, host, port });
    } catch (e) {
      if (!taken(e) || port === 0) throw e;
      return WsListener.listen({ hub: attach, clock, host, port: 0 });
    }
  };
  if (o.external !== false) {
    tcp = await listenTcp(o.tcpPort ?? DEFAULT_TCP_PORT);
    wsl = await listenWs(o.wsPort ?? DEFAULT_WS_PORT);
  }

  const hello = (): HelloMsg => ({
    type: 'hello',
    scenario: { name: live.scenario.name, description: live.scenario.description, seed: live.sim.seed, durationMs: live.scenario.durationMs },
    channels: live.channels(),
    clients: live.clients(),
    external: tcp && wsl ? { tcp: `${host}:${tcp.port}`, ws: `ws://${host}:${wsl.port}/` } : null,
    windowS: WINDOW_S,
    run,
    log: live.history.slice(),
  });

  const token = o.operationsToken !== undefined && operatorTokenUsable(o.operationsToken) ? o.operationsToken : null;
  let hosts = new Set<string>();
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (!ownRequest(hosts, req.headers.host, req.headers.origin)) {
      res.writeHead(403, { 'content-type': 'text/plain; charset=utf-8' }).end('forbidden: not the dashboard\'s own host or origin\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    const f = files.files.get(url.pathname);
    if (f) {
      res.writeHead(200, { 'content-type': f.type, 'content-length': f.body.length, 'cache-control': 'no-store' });
      res.end(req.method === 'HEAD' ? undefined : f.body);
      return;
    }
    if (url.pathname === '/favicon.ico') {
      res.writeHead(204).end();
      return;
    }
    if (url.pathname === '/api/state') {
      const st = live.state({ raw: new Map(), delivered: new Map(), log: [] }, new Set());
      // The detailed health report under the rule of /api/operations/health: the bearer token, or the public /health body.
      const detailed = token !== null && bearerMatches(req.headers.authorization, token);
      const health = detailed ? st.health : { ...st.health, report: coarseReport(st.health.ready) };
      const body = JSON.stringify({ ...hello(), ...st, health, log: live.history, type: 'snapshot' });
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' }).end(body);
      return;
    }
    if (url.pathname === '/api/report') {
      res.writeHead(200, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' }).end(reportJson(live.sim.report()));
      return;
    }
    res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
  });

  function command(page: Page, m: PageMsg): void {
    if (CONTROL.has(m.type) && (m as { secret?: unknown }).secret !== page.secret) {
      // Not from the page this socket was given to: refused, and said so.
      if (page.ws.readyState === page.ws.OPEN) page.ws.send(JSON.stringify({ type: 'refused', command: String(m.type), reason: 'the control secret is missing or wrong' }));
      return;
    }
    switch (m.type) {
      case 'watch':
        if (Array.isArray(m.channels)) page.watch = new Set(m.channels.filter((x) => Number.isInteger(x)).slice(0, 16));
        return;
      case 'estop':
        live.pressEstop();
        return;
      case 'clear':
        live.requestClear();
        return;
      case 'arm':
        live.requestArm();
        return;
      case 'force':
        live.force(m.level === null || typeof m.level !== 'number' ? null : m.level);
        return;
      case 'restart':
        void restart();
        return;
    }
  }

  let restarting: Promise<void> | null = null;
  async function restart(): Promise<void> {
    if (restarting) return restarting;
    restarting = (async () => {
      const forced = live.forced;
      await live.stop();
      // The old hub stops: every session is told GOODBYE SHUTDOWN (§5.15) before its link goes.
      await shutdownHub(live);
      // External clients are cut so that they reconnect to the new hub (their resume fails: a new session).
      if (tcp) {
        const port = tcp.port;
        await tcp.close();
        tcp = await listenTcp(port);
      }
      if (wsl) {
        const port = wsl.port;
        await wsl.close();
        wsl = await listenWs(port);
      }
      run++;
      live = new LiveSim(o.scenario, o.seed, run, { random, store, ...(o.playback !== undefined ? { playback: o.playback } : {}) });
      if (forced !== null) live.force(forced);
      wire(live);
      live.start();
      // The latch is in the Store the new hub read: a restart never clears it, and says so.
      const latch = live.sim.hub.latch;
      say(`restarted scenario ${o.scenario.name} (run ${run})${latch.latched ? '; the ESTOP latch carries over (only the control owner clears it, §11.2)' : ''}`);
      if (latch.latched) live.noteLine('dashboard: restarted; the ESTOP latch carries over: the control owner must clear it');
      const h = hello();
      for (const p of pages) if (p.ws.readyState === p.ws.OPEN) p.ws.send(JSON.stringify({ ...h, secret: p.secret }));
    })();
    try {
      await restarting;
    } finally {
      restarting = null;
    }
  }

  function wire(l: LiveSim): void {
    l.onScriptEnd = () => {
      if (o.loop) {
        say(`scenario ${o.scenario.name}: its ${o.scenario.durationMs / 1000} s are over; starting again (--loop)`);
        void restart();
      } else {
        say(`scenario ${o.scenario.name}: its scripted ${o.scenario.durationMs / 1000} s are over; the hub, robot and clients run on (Restart on the page runs it again)`);
      }
    };
  }

  let port: number;
  let portFallback = false;
  try {
    try {
      port = await listenHttp(server, host, o.port ?? DEFAULT_PORT);
    } catch (e) {
      if (!taken(e) || o.port === 0) throw e;
      portFallback = true;
      port = await listenHttp(server, host, 0);
    }
  } catch (e) {
    if (tcp) await tcp.close();
    if (wsl) await wsl.close();
    throw e;
  }
  // Made once the port is held: a WebSocketServer on an http server re-emits its listen errors.
  hosts = ownHosts(host, port);
  // Another site's page (or a rebound DNS name) is refused at the upgrade.
  const wss = new WebSocketServer({
    server,
    path: '/ws',
    maxPayload: PAGE_MSG_BYTES,
    perMessageDeflate: false,
    verifyClient: (info: { req: http.IncomingMessage }) => ownRequest(hosts, info.req.headers.host, info.req.headers.origin),
  });
  wss.on('connection', (ws: WebSocket) => {
    const page: Page = { ws, watch: new Set(), secret: randomBytes(16).toString('hex') };
    pages.add(page);
    ws.on('close', () => pages.delete(page));
    ws.on('error', () => pages.delete(page));
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      let m: PageMsg;
      try {
        m = JSON.parse(String(data)) as PageMsg;
      } catch {
        return;
      }
      command(page, m);
    });
    ws.send(JSON.stringify({ ...hello(), secret: page.secret }));
  });

  const push = setInterval(() => {
    const d = live.drain();
    for (const p of pages) {
      if (p.ws.readyState !== p.ws.OPEN || p.ws.bufferedAmount > PAGE_BACKLOG_BYTES) continue;
      p.ws.send(JSON.stringify(o.fleet ? { ...live.state(d, p.watch), fleet: o.fleet() } : live.state(d, p.watch)));
    }
  }, PUSH_MS);

  wire(live);
  live.start();
  const startupMs = performance.now() - started;

  let closing: Promise<void> | null = null;
  const dash: Dashboard = {
    url: `http://${host}:${port}/`,
    port,
    portFallback,
    get tcp() {
      return tcp ? { host, port: tcp.port } : null;
    },
    get ws() {
      return wsl ? { url: `ws://${host}:${wsl.port}/`, port: wsl.port } : null;
    },
    get live() {
      return live;
    },
    startupMs,
    restart,
    close(): Promise<void> {
      if (closing) return closing;
      closing = (async () => {
        clearInterval(push);
        if (restarting) await restarting.catch(() => undefined);
        await live.stop();
        await shutdownHub(live);
        for (const p of pages) p.ws.terminate();
        await new Promise<void>((ok) => wss.close(() => ok()));
        server.closeAllConnections();
        await new Promise<void>((ok) => server.close(() => ok()));
        if (tcp) await tcp.close();
        if (wsl) await wsl.close();
      })();
      return closing;
    },
  };
  return dash;
}
