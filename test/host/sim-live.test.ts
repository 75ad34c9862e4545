// The live simulator's doors and its long runs: the report stays bounded however many ESTOPs a
// run holds; resume tokens on listening ports come from a cryptographic source; the dashboard's
// /ws and HTTP answer only their own page, every control message carries the page's secret, a
// Restart never clears a latch, /api/state gives the detailed health report only to the bearer
// of the operations token; the latch survives a kill -9 in the state file; and a SIGTERM to
// `npm start` tells every session GOODBYE SHUTDOWN and leaves no process nor port behind.
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { ESTOP_REANNOUNCE_MS } from '../../hub/constants.js';
import { loadCatalog } from '../../catalog/index.js';
import { DEFAULT_CATALOG } from '../../catalog/default.js';
import { FrameReassembler } from '../../bindings/tcp/framing.js';
import { CborWriter } from '../../hub/cbor.js';
import { EstopSource, isEstopFrame } from '../../hub/estop-frame.js';
import { decodeFrame, encodeFrame, FrameType, GoodbyeReason, type Frame } from '../../hub/frames.js';
import { startDashboard, type Dashboard } from '../../host-sim/dashboard/server.js';
import { FileStore } from '../../host-sim/file-store.js';
import { reportJson, ESTOP_REPORT_LATCHES } from '../../host-sim/report.js';
import { loadNamedScenario } from '../../host-sim/scenario.js';
import { Simulation } from '../../host-sim/sim.js';

const WAIT_MS = 30000;
const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const catalog = loadCatalog(DEFAULT_CATALOG);
const calm = loadNamedScenario('calm', catalog);
const TOKEN = 'x'.repeat(40);

async function until(what: string, check: () => boolean | Promise<boolean>, ms = WAIT_MS): Promise<void> {
  const deadline = performance.now() + ms;
  for (;;) {
    if (await check()) return;
    if (performance.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** A raw client over loopback TCP: HELLO, then every frame it is sent, decoded. */
class RawTcp {
  readonly frames: Frame[] = [];
  closed = false;
  private readonly sock: net.Socket;
  private readonly reasm = new FrameReassembler(0xffff);
  private constructor(port: number) {
    this.sock = net.connect(port, '127.0.0.1');
    this.sock.on('data', (chunk: Buffer) =>
      this.reasm.push(chunk, 0, chunk.length, {
        frame: (b: Uint8Array, s: number, e: number) => {
          if (!isEstopFrame(b, s)) this.frames.push(decodeFrame(b, s, e, 1 << 16));
        },
        refuse: () => undefined,
      }),
    );
    this.sock.on('close', () => (this.closed = true));
    this.sock.on('error', () => undefined);
  }
  static async hello(port: number, name: string): Promise<RawTcp> {
    const c = new RawTcp(port);
    await new Promise<void>((ok, bad) => {
      c.sock.once('connect', ok);
      c.sock.once('error', bad);
    });
    const w = new CborWriter(new Uint8Array(512));
    encodeFrame({ type: FrameType.HELLO, version: 1, name }, w);
    const out = Buffer.alloc(2 + w.pos);
    out.writeUInt16BE(w.pos, 0);
    out.set(w.buf.subarray(0, w.pos), 2);
    c.sock.write(out);
    await until('WELCOME', () => c.frames.some((f) => f.type === FrameType.WELCOME));
    return c;
  }
  welcome(): Extract<Frame, { type: typeof FrameType.WELCOME }> {
    return this.frames.find((f) => f.type === FrameType.WELCOME) as Extract<Frame, { type: typeof FrameType.WELCOME }>;
  }
  goodbye(): number | undefined {
    const g = this.frames.find((f) => f.type === FrameType.GOODBYE) as { reason?: number } | undefined;
    return g === undefined ? undefined : (g.reason ?? GoodbyeReason.NORMAL);
  }
  close(): void {
    this.sock.destroy();
  }
}

/** A /ws connection with the given Origin (undefined: none, as a program connects). */
function pageSocket(url: string, origin: string | undefined): Promise<{ ws: WebSocket; msgs: { type: string; secret?: string }[] }> {
  return new Promise((ok, bad) => {
    const ws = new WebSocket(url.replace(/^http/, 'ws') + 'ws', origin === undefined ? {} : { origin });
    const msgs: { type: string; secret?: string }[] = [];
    ws.on('message', (d) => msgs.push(JSON.parse(String(d)) as { type: string }));
    ws.once('open', () => ok({ ws, msgs }));
    ws.once('error', bad);
    ws.once('unexpected-response', (_req, res) => bad(new Error(`refused: HTTP ${res.statusCode}`)));
  });
}

function portFree(port: number): Promise<boolean> {
  return new Promise((ok) => {
    const s = net.createServer();
    s.once('error', () => ok(false));
    s.listen(port, '127.0.0.1', () => s.close(() => ok(true)));
  });
}

describe('simulator: the report stays bounded', function () {
  this.timeout(120000);
  it('20,000 ESTOPs of one instant make a report of bounded size; latches over time are listed up to the cap, every latch judged', async () => {
    const flood = new Simulation(calm);
    await flood.step(1000);
    for (let i = 0; i < 20000; i++) flood.hub.estop(EstopSource.WATCHDOG);
    await flood.step(500);
    const floodText = reportJson(flood.report());
    assert.ok(floodText.length < 8 * 1024 * 1024, `report of ${floodText.length} characters`);
    assert.equal(flood.hub.counters.estops, 20000, 'every assertion is counted');
    for (const conn of flood.connections) for (const tap of conn.taps) assert.ok(tap.estops.length <= 1024, `tap keeps ${tap.estops.length}`);

    // Many latches at many instants: each new assertion re-announced every ESTOP_REANNOUNCE_MS.
    const sim = new Simulation({ ...calm, durationMs: 60000 });
    await sim.step(1000);
    for (let i = 0; i < 300; i++) {
      sim.hub.estop(EstopSource.WATCHDOG);
      await sim.step(1000 + (i + 1) * ESTOP_REANNOUNCE_MS);
    }
    const latches = sim.log.filter((r) => r.code === 'estop').length;
    assert.ok(latches >= 300, `${latches} latches announced`);
    const text = reportJson(sim.report());
    assert.ok(text.length < 8 * 1024 * 1024, `report of ${text.length} characters`);
    const r = JSON.parse(text) as { estops: { deliveries: unknown[] }[]; estopsUnlisted: number };
    assert.equal(r.estops.length, ESTOP_REPORT_LATCHES);
    assert.equal(r.estops.length + r.estopsUnlisted, latches);
    // Each latch is paired with its own write on each link, not with every write of the instant.
    for (const e of r.estops) assert.ok(e.deliveries.length <= sim.connections.length * 2, `${e.deliveries.length} deliveries`);
    for (const conn of sim.connections) for (const tap of conn.taps) assert.ok(tap.estops.length <= 1024, `tap keeps ${tap.estops.length}`);
  });
});

describe('simulator: resume tokens on listening ports', function () {
  this.timeout(60000);
  it('the dashboard hub draws tokens from a cryptographic source; a headless run from its seed', async () => {
    const headless = new Simulation(calm);
    assert.equal(headless.random, headless.kernel.rng, 'headless: the seeded generator, for replay');
    const dash = await startDashboard({ scenario: calm, port: 0, tcpPort: 0, wsPort: 0 });
    try {
      assert.notEqual(dash.live.sim.random, dash.live.sim.kernel.rng);
      const draws = dash.live.sim.kernel.rng.draws;
      const a = await RawTcp.hello(dash.tcp!.port, 'tok-a');
      const b = await RawTcp.hello(dash.tcp!.port, 'tok-b');
      const ta = Buffer.from(a.welcome().resumeToken).toString('hex');
      const tb = Buffer.from(b.welcome().resumeToken).toString('hex');
      assert.equal(ta.length, 32);
      assert.notEqual(ta, tb);
      assert.ok(dash.live.sim.kernel.rng.draws >= draws);
      a.close();
      b.close();
    } finally {
      await dash.close();
    }
  });
});

describe('dashboard: its doors', function () {
  this.timeout(60000);
  let dash: Dashboard;
  before(async () => {
    dash = await startDashboard({ scenario: calm, port: 0, external: false, operationsToken: TOKEN });
  });
  after(async () => {
    await dash.close();
  });

  it('/ws refuses another site’s page and a rebound host name', async () => {
    await assert.rejects(pageSocket(dash.url, 'http://evil.example'), /HTTP 40[13]/);
    await assert.rejects(pageSocket(dash.url, 'null'), /HTTP 40[13]/);
    const rebound = await new Promise<number>((ok, bad) =>
      http.get({ host: '127.0.0.1', port: dash.port, path: '/api/state', headers: { host: `evil.example:${dash.port}` } }, (res) => {
        res.resume();
        ok(res.statusCode ?? 0);
      }).once('error', bad),
    );
    assert.equal(rebound, 403);
    const { ws } = await pageSocket(dash.url, dash.url.replace(/\/$/, ''));
    ws.close();
  });

  it('a control message without the page’s secret is refused; with it, it acts; Restart keeps the latch', async () => {
    const { ws, msgs } = await pageSocket(dash.url, undefined);
    await until('hello', () => msgs.some((m) => m.type === 'hello'));
    const secret = msgs.find((m) => m.type === 'hello')!.secret!;
    assert.match(secret, /^[0-9a-f]{32}$/);
    ws.send(JSON.stringify({ type: 'estop' }));
    ws.send(JSON.stringify({ type: 'estop', secret: 'f'.repeat(32) }));
    ws.send(JSON.stringify({ type: 'restart' }));
    await until('two refusals', () => msgs.filter((m) => m.type === 'refused').length >= 3);
    assert.equal(dash.live.sim.hub.latch.latched, false);
    assert.equal(dash.live.run, 1);
    ws.send(JSON.stringify({ type: 'estop', secret }));
    await until('the hub latches', () => dash.live.sim.hub.latch.latched);
    const before = dash.live;
    ws.send(JSON.stringify({ type: 'restart', secret }));
    await until('a new run', () => dash.live !== before && dash.live.run === 2);
    assert.equal(dash.live.sim.hub.latch.latched, true, 'a restart never clears the latch');
    assert.ok(dash.live.history.some((l) => /latch carries over/.test(l[2])));
    ws.close();
  });

  it('/api/state gives the detailed health report only to the operations token, as /api/operations/health does', async () => {
    type S = { health: { report: { metrics: Record<string, unknown> } } };
    const anon = (await (await fetch(new URL('/api/state', dash.url))).json()) as S;
    assert.deepEqual(Object.keys(anon.health.report.metrics), ['version']);
    const wrong = (await (await fetch(new URL('/api/state', dash.url), { headers: { authorization: `Bearer ${'y'.repeat(40)}` } })).json()) as S;
    assert.deepEqual(Object.keys(wrong.health.report.metrics), ['version']);
    const op = (await (await fetch(new URL('/api/state', dash.url), { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as S;
    assert.ok('pushes' in op.health.report.metrics, Object.keys(op.health.report.metrics).join());
  });
});

describe('simulator: the state file', () => {
  it('keeps the latch across a new FileStore; an unreadable file comes back latched', () => {
    const dir = mkdtempSync(join(tmpdir(), 'hub-state-'));
    try {
      const path = join(dir, 'state.json');
      const a = new Simulation(calm, { store: new FileStore(path) });
      a.hub.estop(EstopSource.WATCHDOG);
      assert.equal(new Simulation(calm, { store: new FileStore(path) }).hub.latch.latched, true);
      writeFileSync(path, '{not json');
      const c = new Simulation(calm, { store: new FileStore(path) });
      assert.equal(c.hub.latch.latched, true);
      assert.equal(c.hub.latch.source, EstopSource.WATCHDOG);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** A child process and what it prints. */
class Proc {
  out = '';
  exited = false;
  constructor(readonly child: ChildProcess) {
    child.stdout!.on('data', (b: Buffer) => (this.out += b.toString()));
    child.stderr!.on('data', (b: Buffer) => (this.out += b.toString()));
    child.once('exit', () => (this.exited = true));
  }
  async serving(): Promise<void> {
    await until('it serves', () => /serving \d+ ms after start/.test(this.out) || this.exited, 90000);
    assert.ok(!this.exited, this.out);
  }
  port(re: RegExp): number {
    const m = re.exec(this.out);
    assert.ok(m, this.out);
    return Number(m[1]);
  }
  kill(): void {
    if (!this.exited) this.child.kill('SIGKILL');
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The pids whose parent is `pid` (Linux /proc). */
function childrenOf(pid: number): number[] {
  try {
    return execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' })
      .split('\n')
      .map((x) => Number(x.trim()))
      .filter((x) => x > 0);
  } catch {
    return [];
  }
}

describe('npm start: the latch survives kill -9; SIGTERM says GOODBYE SHUTDOWN and stops the whole tree', function () {
  this.timeout(240000);
  const procs: Proc[] = [];
  let dir = '';
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'hub-start-'));
  });
  after(() => {
    for (const p of procs) p.kill();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('comes back latched after kill -9, and a SIGTERM to npm ends every process and frees every port', async () => {
    const state = join(dir, 'state.json');
    const args = ['--scenario', 'calm', '--port', '0', '--tcp-port', '0', '--ws-port', '0', '--state', state];
    const first = new Proc(spawn(process.execPath, [join(repo, 'build/host-sim/main.js'), ...args], { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] }));
    procs.push(first);
    await first.serving();
    const url1 = `http://127.0.0.1:${first.port(/dashboard\s+http:\/\/127\.0\.0\.1:(\d+)\//)}/`;
    const { ws, msgs } = await pageSocket(url1, undefined);
    await until('hello', () => msgs.some((m) => m.type === 'hello'));
    ws.send(JSON.stringify({ type: 'estop', secret: msgs.find((m) => m.type === 'hello')!.secret }));
    await until('latched', async () => ((await (await fetch(new URL('/api/state', url1))).json()) as { latch: { latched: boolean } }).latch.latched);
    ws.terminate();
    first.child.kill('SIGKILL');
    await until('the first is gone', () => first.exited);

    const npm = new Proc(spawn('npm', ['start', '--', ...args], { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] }));
    procs.push(npm);
    await npm.serving();
    const dashPort = npm.port(/dashboard\s+http:\/\/127\.0\.0\.1:(\d+)\//);
    const tcpPort = npm.port(/hub over TCP\s+127\.0\.0\.1:(\d+)/);
    const wsPort = npm.port(/hub over WS\s+ws:\/\/127\.0\.0\.1:(\d+)\//);
    const s = (await (await fetch(`http://127.0.0.1:${dashPort}/api/state`)).json()) as { latch: { latched: boolean } };
    assert.equal(s.latch.latched, true, 'the latch came back from the state file');
    assert.match(npm.out, /ESTOP latch is restored: LATCHED/);

    const client = await RawTcp.hello(tcpPort, 'shutdown-test');
    const tree = [npm.child.pid!, ...childrenOf(npm.child.pid!)];
    for (const p of [...tree]) tree.push(...childrenOf(p));
    assert.ok(tree.length >= 2, `npm and the simulator: ${tree.join(' ')}`);
    npm.child.kill('SIGTERM');
    await until('GOODBYE SHUTDOWN', () => client.goodbye() !== undefined);
    assert.equal(client.goodbye(), GoodbyeReason.SHUTDOWN);
    await until('the connection ends', () => client.closed);
    await until('npm exits', () => npm.exited);
    await until('every process of the tree is gone', () => tree.every((p) => !pidAlive(p)));
    for (const port of [dashPort, tcpPort, wsPort]) await until(`port ${port} is free`, () => portFree(port));
    client.close();
  });
});
