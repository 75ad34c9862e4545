// hubctl against the live simulator over real loopback sockets (docs/tools.md): each command is
// run as its own process (the compiled entry, and once through the package's bin with npx), the
// way a user or a script runs it, and what it prints is checked against the hub's own state.
// Every wait is on an event (a process's exit, a line printed) with a generous bound.
import assert from 'node:assert/strict';
import net from 'node:net';
import { loadCatalog } from '../../catalog/index.js';
import { DEFAULT_CATALOG } from '../../catalog/default.js';
import { HttpHealthServer } from '../../bindings/tcp/http-node.js';
import { startDashboard, type Dashboard } from '../../host-sim/dashboard/server.js';
import { hubctl, run, testScenario } from '../lib/hubctl-fixture.js';

const TOKEN = 'z'.repeat(40);

describe('hubctl against the simulator', function () {
  this.timeout(240000);
  let dash: Dashboard;
  let http: HttpHealthServer;
  let tcp: string;
  let ws: string;

  before(async () => {
    dash = await startDashboard({ scenario: testScenario(), port: 0, tcpPort: 0, wsPort: 0 });
    tcp = `tcp://127.0.0.1:${dash.tcp!.port}`;
    ws = dash.ws!.url;
    http = await HttpHealthServer.listen({
      net,
      port: 0,
      token: TOKEN,
      clock: { now: () => Math.floor(dash.live.hubNowMs()) },
      source: { healthReport: () => dash.live.sim.hub.healthReport(), ready: () => dash.live.sim.hub.ready() },
    });
  });
  after(async () => {
    await http.close();
    await dash.close();
  });

  it('npx hubctl rate imu prints the delivered rate beside the granted one', async () => {
    const r = await run('npx', ['--no', 'hubctl', 'rate', 'imu', '--hub', tcp, '--duration', '2']);
    assert.equal(r.code, 0, r.stderr);
    const m = /imu: delivered (\d+\.\d) Hz, granted (\d+) Hz \(wished 200 Hz; (\d+) samples/.exec(r.stdout);
    assert.ok(m, r.stdout);
    // An observer is granted at most 50 Hz (§10.2); the robot streams imu at 200 Hz.
    assert.equal(Number(m[2]), 50);
    const delivered = Number(m[1]);
    assert.ok(delivered >= 25 && delivered <= 55, `delivered ${delivered} Hz against a 50 Hz grant`);
    assert.ok(Number(m[3]) > 10);
    // The per-second lines carry both too.
    assert.match(r.stdout, /^imu {2}delivered \d+\.\d Hz {2}granted 50 Hz/m);
  });

  it('rate --json: one object with the wished, granted and delivered rates', async () => {
    const r = await hubctl(['rate', 'odom', '--hub', ws, '--duration', '1.5', '--rate', '20', '--json']);
    assert.equal(r.code, 0, r.stderr);
    const j = JSON.parse(r.stdout) as { channel: string; wishedRateHz: number; grantedRateHz: number; deliveredRateHz: number; samples: number };
    assert.equal(j.channel, 'odom');
    assert.equal(j.wishedRateHz, 20);
    assert.equal(j.grantedRateHz, 20);
    assert.ok(j.deliveredRateHz > 10 && j.deliveredRateHz <= 22, String(j.deliveredRateHz));
  });

  it('channels: the catalog with units, as text and as JSON', async () => {
    const text = await hubctl(['channels', '--hub', tcp]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /^10 +imu +STREAM\/samples +out +200 Hz +normal +observer +ax \[m\/s\^2\], ay/m);
    assert.match(text.stdout, /this session: observer/);
    const r = await hubctl(['channels', '--hub', ws, '--json']);
    const j = JSON.parse(r.stdout) as { channels: { name: string; fields: { name: string; unit: string }[]; maxRateHz: number }[] };
    assert.equal(j.channels.length, loadCatalog(DEFAULT_CATALOG).size);
    const battery = j.channels.find((c) => c.name === 'battery')!;
    assert.deepEqual(battery.fields[0], { name: 'voltage', unit: 'V' });
  });

  it('grants: what the hub grants this tier, per channel', async () => {
    const observer = JSON.parse((await hubctl(['grants', '--hub', tcp, '--json'])).stdout) as { tier: string; subscriptions: { channel: string; grantedRateHz: number; wishedRateHz: number; priority: string }[] };
    const operator = JSON.parse((await hubctl(['grants', '--hub', tcp, '--credential', 'operator-key', '--json'])).stdout) as typeof observer;
    assert.equal(observer.tier, 'observer');
    assert.equal(operator.tier, 'operator');
    const imu = (g: typeof observer): { grantedRateHz: number; wishedRateHz: number } => g.subscriptions.find((s) => s.channel === 'imu')!;
    assert.deepEqual(imu(observer), { channel: 'imu', channelId: 10, wishedRateHz: 200, grantedRateHz: 50, priority: 'normal' });
    assert.equal(imu(operator).grantedRateHz, 200);
    const text = await hubctl(['grants', '--hub', tcp, '--rate', '5']);
    assert.match(text.stdout, /^imu +5 Hz +5 Hz +normal$/m);
  });

  it('echo: decoded samples with their units', async () => {
    const text = await hubctl(['echo', 'imu', '--hub', tcp, '--count', '3']);
    assert.equal(text.code, 0, text.stderr);
    const lines = text.stdout.split('\n').filter((l) => / imu #\d+ /.test(l));
    assert.equal(lines.length, 3, text.stdout);
    for (const l of lines) assert.match(l, /ax=-?[\d.e+-]+ m\/s\^2 .* gz=-?[\d.e+-]+ rad\/s/);
    const r = await hubctl(['echo', 'battery', '--hub', ws, '--count', '2', '--json']);
    const rows = r.stdout.trim().split('\n').map((l) => JSON.parse(l) as { channel: string; t: number; values: Record<string, number>; units: Record<string, string> });
    assert.equal(rows.length, 2);
    for (const row of rows) {
      assert.equal(row.channel, 'battery');
      assert.equal(typeof row.values['voltage'], 'number');
      assert.deepEqual(row.units, { voltage: 'V', percent: '%' });
    }
    assert.ok(rows[1]!.t > rows[0]!.t);
    const bad = await hubctl(['echo', 'cmd_vel', '--hub', tcp, '--count', '1']);
    assert.equal(bad.code, 2);
    assert.match(bad.stderr, /cmd_vel is a publication/);
  });

  it('estop latches the hub from an observer; clear needs an operator and leaves the robot disarmed', async () => {
    const hub = dash.live.sim.hub;
    assert.equal(hub.latch.latched, false);
    const stop = await hubctl(['estop', '--hub', tcp]);
    assert.equal(stop.code, 0, stop.stderr);
    // The stop in force as the hub announced it (written before the HELLO, so no session is its origin).
    assert.match(stop.stdout, new RegExp(`ESTOP latched on ${tcp} \\(source client, origin ${hub.latch.origin}, sequence ${hub.latch.originSeq}\\)`));
    assert.equal(hub.latch.latched, true);
    assert.equal(hub.armed, false);

    const refused = await hubctl(['clear', '--hub', tcp]);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /operator tier/);
    assert.equal(hub.latch.latched, true);

    const cleared = await hubctl(['clear', '--hub', ws, '--credential', 'operator-key', '--json']);
    assert.equal(cleared.code, 0, cleared.stderr);
    assert.deepEqual(JSON.parse(cleared.stdout), { cleared: true, wasLatched: true, latched: false });
    assert.equal(hub.latch.latched, false);
    assert.equal(hub.armed, false, 'a clear never restarts the robot');

    // --json: the latch as the hub announced it (source, origin and that origin's sequence).
    const again = await hubctl(['estop', '--hub', ws, '--json']);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(hub.latch.latched, true);
    assert.deepEqual(JSON.parse(again.stdout), { latched: true, source: 'client', origin: hub.latch.origin, seq: hub.latch.originSeq });
    const cleared2 = await hubctl(['clear', '--hub', tcp, '--credential', 'operator-key', '--json']);
    assert.deepEqual(JSON.parse(cleared2.stdout), { cleared: true, wasLatched: true, latched: false });
    assert.equal(hub.latch.latched, false);
  });

  it('health and sessions: the report over HEALTH for a maintainer, refused below', async () => {
    const r = await hubctl(['health', '--hub', tcp, '--credential', 'maintainer-key', '--json']);
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout) as { metrics: { version: number; sessions: { active: number } } };
    assert.equal(report.metrics.version, 1);
    const text = await hubctl(['health', '--hub', tcp, '--credential', 'maintainer-key']);
    assert.match(text.stdout, /^ {2}ESTOP +not latched$/m);
    assert.match(text.stdout, /^ {2}sessions +\d+ active, \d+ stale, 8 slots$/m);
    const observer = await hubctl(['health', '--hub', tcp]);
    assert.equal(observer.code, 1);
    assert.match(observer.stderr, /maintainer tier/);

    const s = await hubctl(['sessions', '--hub', ws, '--credential', 'maintainer-key', '--json']);
    const sessions = JSON.parse(s.stdout) as { active: number; slots: number; links: { slot: number; binding: number }[] };
    // The four simulated clients and hubctl's own session.
    assert.ok(sessions.active >= 5, s.stdout);
    assert.equal(sessions.links.length, sessions.active);
    assert.ok(sessions.links.some((l) => l.binding === 2), 'hubctl over WebSocket is one of them');
    const human = await hubctl(['sessions', '--hub', tcp, '--credential', 'maintainer-key']);
    assert.match(human.stdout, /^ {2}slot +binding +level +queue +loss$/m);
    assert.match(human.stdout, /^ {2}\d+ +espnow +\d/m);
  });

  it('health and sessions over HTTP: public without a token, detailed with it', async () => {
    const base = `http://127.0.0.1:${http.port}`;
    const pub = await hubctl(['health', '--http', base], { HUB_OPERATIONS_TOKEN: '' });
    assert.equal(pub.code, 0, pub.stderr);
    assert.match(pub.stdout, /ready: admitting new sessions/);
    const s = await hubctl(['sessions', '--http', base, '--json'], { HUB_OPERATIONS_TOKEN: TOKEN });
    assert.equal(s.code, 0, s.stderr);
    const j = JSON.parse(s.stdout) as { active: number; slots: number };
    assert.ok(j.active >= 4);
    assert.equal(j.slots, 8);
    const wrong = await hubctl(['sessions', '--http', base], { HUB_OPERATIONS_TOKEN: 'w'.repeat(40) });
    assert.equal(wrong.code, 1);
    assert.match(wrong.stderr, /401/);
  });

  it('usage: a missing hub, a bad URL and an unknown command are refused with status 2', async () => {
    const help = await hubctl(['--help']);
    assert.equal(help.code, 0);
    assert.match(help.stdout, /sessions +the hub's sessions/);
    assert.equal((await hubctl(['rate', 'imu'])).code, 2);
    const url = await hubctl(['channels', '--hub', 'http://127.0.0.1:1']);
    assert.equal(url.code, 2);
    assert.match(url.stderr, /tcp:\/\/ or ws:\/\//);
    assert.equal((await hubctl(['frobnicate', '--hub', tcp])).code, 2);
  });
});
