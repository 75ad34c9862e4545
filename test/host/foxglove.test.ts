// The Foxglove bridge (tools/foxglove.ts, docs/tools.md "Foxglove") in front of the live
// simulator, over real loopback sockets: @foxglove/ws-protocol's own FoxgloveClient is the
// viewer. Rates are counted over the hub's timestamps, not wall time; every wait is for an event
// (a message, a status, a counter) with a generous bound.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import wsProtocol from '@foxglove/ws-protocol';
import type { Channel, IWebSocket, MessageData, StatusMessage } from '@foxglove/ws-protocol';
import { loadCatalog } from '../../catalog/index.js';
import { DEFAULT_CATALOG } from '../../catalog/default.js';
import { Direction } from '../../catalog/schema.js';
import { EstopSource } from '../../hub/estop-frame.js';
import { startDashboard, type Dashboard } from '../../host-sim/dashboard/server.js';
import { parseHubUrl } from '../../tools/connect.js';
import { FoxgloveBridge } from '../../tools/foxglove.js';
import { repo, testScenario } from '../lib/hubctl-fixture.js';

const { FoxgloveClient, StatusLevel } = wsProtocol;
const catalog = loadCatalog(DEFAULT_CATALOG);
const WAIT_MS = 60000;

async function until(what: string, check: () => boolean, ms = WAIT_MS): Promise<void> {
  const deadline = performance.now() + ms;
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A FoxgloveClient on the bridge, collecting what it is sent. */
class View {
  readonly fox: InstanceType<typeof FoxgloveClient>;
  readonly channels = new Map<string, Channel>();
  readonly byTopic = new Map<string, Record<string, unknown>[]>();
  readonly times = new Map<string, bigint[]>();
  readonly status: StatusMessage[] = [];
  private readonly topicOfSub = new Map<number, string>();
  private readonly subOfTopic = new Map<string, number>();
  private readonly pubs = new Map<string, number>();
  private readonly dec = new TextDecoder();

  constructor(url: string) {
    const ws = new WebSocket(url, [FoxgloveClient.SUPPORTED_SUBPROTOCOL]);
    this.fox = new FoxgloveClient({ ws: ws as unknown as IWebSocket });
    this.fox.on('advertise', (chs) => {
      for (const c of chs) this.channels.set(c.topic, c);
    });
    this.fox.on('status', (s) => this.status.push(s));
    this.fox.on('message', (m: MessageData) => {
      const topic = this.topicOfSub.get(m.subscriptionId);
      if (topic === undefined) return;
      const body = JSON.parse(this.dec.decode(m.data)) as Record<string, unknown>;
      (this.byTopic.get(topic) ?? this.byTopic.set(topic, []).get(topic)!).push(body);
      (this.times.get(topic) ?? this.times.set(topic, []).get(topic)!).push(m.timestamp);
    });
  }

  static async open(url: string): Promise<View> {
    const v = new View(url);
    await until('the advertisement', () => v.channels.has('/hub/estop'));
    return v;
  }

  subscribe(topic: string): void {
    const c = this.channels.get(topic);
    assert.ok(c, `${topic} advertised`);
    const id = this.fox.subscribe(c.id);
    this.topicOfSub.set(id, topic);
    this.subOfTopic.set(topic, id);
  }

  unsubscribe(topic: string): void {
    this.fox.unsubscribe(this.subOfTopic.get(topic)!);
    this.subOfTopic.delete(topic);
  }

  messages(topic: string): Record<string, unknown>[] {
    return this.byTopic.get(topic) ?? [];
  }

  publish(topic: string, msg: unknown): void {
    let id = this.pubs.get(topic);
    if (id === undefined) {
      id = this.fox.advertise({ topic, encoding: 'json', schemaName: topic });
      this.pubs.set(topic, id);
    }
    this.fox.sendMessage(id, new TextEncoder().encode(JSON.stringify(msg)));
  }

  close(): void {
    this.fox.close();
  }
}

/** Samples per second over the hub timestamps of the messages from index `from` on. */
function hubRate(msgs: readonly Record<string, unknown>[], from = 0): number {
  const m = msgs.slice(from);
  const t0 = m[0]!['hub_t_ms'] as number;
  const t1 = m[m.length - 1]!['hub_t_ms'] as number;
  return ((m.length - 1) * 1000) / (t1 - t0);
}

/**
 * A viewer that subscribes and then never reads: a raw WebSocket handshake on a TCP socket,
 * one subscribe frame, and the socket paused.
 */
async function stalledViewer(port: number, channels: readonly { id: number }[]): Promise<net.Socket> {
  const sock = net.connect(port, '127.0.0.1');
  await new Promise<void>((ok, bad) => sock.once('connect', ok).once('error', bad));
  sock.write(
    `GET / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: foxglove.websocket.v1\r\n\r\n`,
  );
  let head = '';
  await new Promise<void>((ok) => {
    const on = (d: Buffer): void => {
      head += d.toString('latin1');
      if (head.includes('\r\n\r\n')) {
        sock.off('data', on);
        ok();
      }
    };
    sock.on('data', on);
  });
  assert.match(head, /^HTTP\/1\.1 101/);
  const text = Buffer.from(JSON.stringify({ op: 'subscribe', subscriptions: channels.map((c, i) => ({ id: i + 1, channelId: c.id })) }));
  // A masked text frame (a client's frames are masked); the mask is zero, so the bytes are as they are.
  const len = text.length;
  const header = len < 126 ? Buffer.from([0x81, 0x80 | len]) : Buffer.from([0x81, 0x80 | 126, len >> 8, len & 0xff]);
  sock.write(Buffer.concat([header, Buffer.alloc(4), text]));
  sock.pause();
  return sock;
}

describe('Foxglove bridge against the simulator', function () {
  this.timeout(300000);
  let dash: Dashboard;
  let observer: FoxgloveBridge;
  let operator: FoxgloveBridge;
  const open: View[] = [];
  const view = async (b: FoxgloveBridge): Promise<View> => {
    const v = await View.open(b.url);
    open.push(v);
    return v;
  };

  before(async () => {
    dash = await startDashboard({ scenario: testScenario(), port: 0, tcpPort: 0, wsPort: 0 });
    observer = await FoxgloveBridge.start({ hub: parseHubUrl(`tcp://127.0.0.1:${dash.tcp!.port}`), port: 0, levelsIntervalMs: 250 });
    operator = await FoxgloveBridge.start({ hub: parseHubUrl(dash.ws!.url), credential: 'operator-key', port: 0, maxBufferBytes: 16 * 1024, levelsIntervalMs: 250 });
  });
  afterEach(() => {
    for (const v of open.splice(0)) v.close();
  });
  after(async () => {
    await observer?.close();
    await operator?.close();
    await dash?.close();
  });

  it('advertises every telemetry channel with a JSON schema of its fields and units, and the /hub channels', async () => {
    const v = await view(observer);
    const telemetry = catalog.channels.filter((c) => c.direction === Direction.telemetry);
    for (const c of telemetry) {
      const ch = v.channels.get(`/${c.name}`);
      assert.ok(ch, `/${c.name} advertised`);
      assert.equal(ch.encoding, 'json');
      assert.equal(ch.schemaEncoding, 'jsonschema');
    }
    assert.equal(v.channels.size, telemetry.length + 3);
    for (const t of ['/hub/grants', '/hub/levels', '/hub/estop']) assert.ok(v.channels.has(t), t);
    assert.ok(!v.channels.has('/cmd_vel'), 'publications are not advertised as server channels');
    const imu = JSON.parse(v.channels.get('/imu')!.schema) as { properties: Record<string, { unit?: string }> };
    assert.equal(imu.properties['ax']!.unit, 'm/s^2');
    assert.equal(imu.properties['gz']!.unit, 'rad/s');
    const battery = JSON.parse(v.channels.get('/battery')!.schema) as { properties: Record<string, { unit?: string }> };
    assert.equal(battery.properties['voltage']!.unit, 'V');
  });

  it('a viewer subscribed to imu receives it at the granted rate; the hub subscription follows the viewers', async () => {
    const imuId = catalog.byName('imu')!.id;
    assert.equal(observer.client.grants.has(imuId), false, 'nobody wants imu yet');
    const a = await view(observer);
    const b = await view(observer);
    a.subscribe('/hub/grants');
    a.subscribe('/imu');
    await until('150 imu samples', () => a.messages('/imu').length >= 150);
    // An observer is granted at most 50 Hz (§10.2) of the 200 Hz source.
    const granted = observer.client.grants.get(imuId)!.grantedRateHz;
    assert.equal(granted, 50);
    const rate = hubRate(a.messages('/imu'), 20);
    assert.ok(rate > 0.8 * granted && rate < 1.1 * granted, `${rate.toFixed(1)} Hz against a ${granted} Hz grant`);
    // Foxglove's timestamp is the sample's hub time.
    const first = a.messages('/imu')[0]!;
    assert.equal(a.times.get('/imu')![0], BigInt(first['hub_t_ms'] as number) * 1000000n);
    assert.equal(typeof first['ax'], 'number');
    await until('/hub/grants names imu', () =>
      a.messages('/hub/grants').some((g) => (g['subscriptions'] as { channel: string; grantedRateHz: number }[]).some((s) => s.channel === 'imu' && s.grantedRateHz === 50)),
    );
    // A second viewer shares the subscription; the last one leaving ends it.
    b.subscribe('/imu');
    await until('b gets imu', () => b.messages('/imu').length >= 5);
    a.unsubscribe('/imu');
    const before = b.messages('/imu').length;
    await until('b still gets imu', () => b.messages('/imu').length >= before + 10);
    assert.equal(observer.client.grants.has(imuId), true);
    b.unsubscribe('/imu');
    await until('the hub subscription is dropped', () => !observer.client.grants.has(imuId));
  });

  it('/hub/levels says what this session can see: its own view below maintainer, every link with the health report', async () => {
    const v = await view(observer);
    v.subscribe('/hub/levels');
    await until('two level reports', () => v.messages('/hub/levels').length >= 2);
    const l = v.messages('/hub/levels').at(-1)!;
    assert.equal(l['tier'], 'observer');
    assert.equal(l['source'], 'session', 'below maintainer the health report is not readable');
    assert.ok(Array.isArray(l['viewers']) && (l['viewers'] as unknown[]).length >= 1);

    // A maintainer's session reads the health report: one row per ACTIVE session's link.
    const maintainer = await FoxgloveBridge.start({ hub: parseHubUrl(`tcp://127.0.0.1:${dash.tcp!.port}`), credential: 'maintainer-key', port: 0, levelsIntervalMs: 250 });
    try {
      const m = await view(maintainer);
      m.subscribe('/hub/levels');
      await until('a health-based report', () => m.messages('/hub/levels').some((x) => x['source'] === 'health'));
      const h = m.messages('/hub/levels').find((x) => x['source'] === 'health')!;
      assert.equal(h['tier'], 'maintainer');
      const links = h['links'] as { slot: number; binding: number; level: number }[];
      // The scenario's four clients, the two bridges and this one.
      assert.ok(links.length >= 5, JSON.stringify(links));
      for (const link of links) assert.ok(Number.isInteger(link.level) && link.level >= 0 && link.level <= 3, JSON.stringify(link));
      assert.equal(h['admitting'], true);
    } finally {
      await maintainer.close();
    }
  });

  it('a viewer that stops reading is shed on its own: a second viewer keeps the granted rate', async () => {
    const imu = catalog.byName('imu')!;
    const fast = await view(operator);
    fast.subscribe('/imu');
    const subs = [...fast.channels.values()].filter((c) => !c.topic.startsWith('/hub/'));
    const stalled = await stalledViewer(operator.port, subs);
    try {
      await until('the stalled viewer is shed', () => operator.viewerStats().some((s) => s.shed > 50), 180000);
      const from = fast.messages('/imu').length;
      const sessionFrom = operator.client.channelStats(imu.id)!.frames;
      await until('400 more imu samples for the reading viewer', () => fast.messages('/imu').length >= from + 400);
      const sessionGot = operator.client.channelStats(imu.id)!.frames - sessionFrom;
      const viewerGot = fast.messages('/imu').length - from;
      // Every sample the bridge's session received in that span reached the reading viewer
      // (give or take the few in flight between the two counts).
      assert.ok(viewerGot >= sessionGot - 10, `the reading viewer got ${viewerGot} of the session's ${sessionGot}`);
      const granted = operator.client.grants.get(imu.id)!.grantedRateHz;
      assert.equal(granted, 200, 'an operator is granted the whole 200 Hz');
      const rate = hubRate(fast.messages('/imu'), from);
      assert.ok(rate > 0.8 * granted && rate < 1.1 * granted, `${rate.toFixed(1)} Hz against a ${granted} Hz grant`);
      const stats = operator.viewerStats();
      const stalledStats = stats.find((s) => s.shed > 50)!;
      assert.ok(stalledStats.pending <= subs.length, 'a lagging viewer holds at most one message per subscription');
      assert.equal(stats.filter((s) => s.shed > 0).length, 1, JSON.stringify(stats));
    } finally {
      stalled.destroy();
    }
  });

  it('a client publish on an intent channel is sent as the INTENT: echoed or refused per ownership', async () => {
    const status = async (v: View, re: RegExp): Promise<StatusMessage> => {
      await until(`status ${re}`, () => v.status.some((s) => re.test(s.message)));
      return v.status.find((s) => re.test(s.message))!;
    };
    const op = await view(operator);
    op.publish('/go_home', {});
    assert.equal((await status(op, /\/go_home: refused: NOT_OWNER/)).level, StatusLevel.ERROR);
    op.publish('/take_control', {});
    assert.equal((await status(op, /\/take_control: ECHO, carried out/)).level, StatusLevel.INFO);
    assert.equal(dash.live.sim.hub.owner?.id, operator.client.sessionId);
    op.publish('/arm', {});
    await status(op, /\/arm: ECHO, carried out/);
    assert.equal(dash.live.sim.hub.armed, true);
    op.publish('/release_control', {});
    await status(op, /\/release_control: ECHO, carried out/);
    op.publish('/imu', { ax: 1 });
    await status(op, /\/imu: refused: not an INTENT channel/);

    const obs = await view(observer);
    obs.publish('/take_control', {});
    assert.equal((await status(obs, /\/take_control: refused: FORBIDDEN/)).level, StatusLevel.ERROR);
    assert.equal(dash.live.sim.hub.owner, null);
  });

  it('npm run foxglove: the command serves a bridge on its own port, a viewer gets imu through it, and SIGINT ends it with 0', async () => {
    // The package's script, run as npm runs it (node and the esbuild runner, no tsc).
    const pkg = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')) as { scripts: Record<string, string> };
    const [cmd, ...script] = (pkg.scripts['foxglove'] ?? '').split(' ');
    assert.equal(cmd, 'node');
    assert.deepEqual(script, ['scripts/run-ts.mjs', 'tools/foxglove-cli.ts']);
    const child = spawn(process.execPath, [...script, '--hub', `tcp://127.0.0.1:${dash.tcp!.port}`, '--port', '0', '--credential', 'operator-key'], { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
    const exited = new Promise<number | null>((ok) => child.once('close', ok));
    try {
      await until('the command serves', () => /Foxglove bridge on ws:\/\/127\.0\.0\.1:\d+/.test(out) || child.exitCode !== null);
      const m = /Foxglove bridge on (ws:\/\/127\.0\.0\.1:\d+\/?) for tcp:\/\/127\.0\.0\.1:\d+ \(session operator, (\d+) channels\)/.exec(out);
      assert.ok(m, out);
      assert.equal(Number(m[2]), catalog.channels.filter((c) => c.direction === Direction.telemetry).length);
      const v = await View.open(m[1]!);
      open.push(v);
      v.subscribe('/imu');
      await until('imu through the command', () => v.messages('/imu').length >= 20);
      v.close();
      child.kill('SIGINT');
      assert.equal(await exited, 0, out);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  });

  it('/hub/estop reflects an ESTOP, for a viewer already subscribed and one that comes after', async () => {
    const v = await view(observer);
    v.subscribe('/hub/estop');
    await until('the ESTOP state', () => v.messages('/hub/estop').length >= 1);
    assert.equal(v.messages('/hub/estop').at(-1)!['latched'], false);
    dash.live.sim.hub.estop(EstopSource.HUB_BUTTON);
    await until('the latch', () => v.messages('/hub/estop').some((m) => m['latched'] === true));
    assert.deepEqual(v.messages('/hub/estop').at(-1), { kind: 'assert', latched: true, source: 'hub-button', origin: 0, seq: v.messages('/hub/estop').at(-1)!['seq'] });
    assert.ok(v.status.some((s) => /ESTOP latched \(source hub-button/.test(s.message)));
    const late = await view(observer);
    late.subscribe('/hub/estop');
    await until('the state for a late viewer', () => late.messages('/hub/estop').length >= 1);
    assert.equal(late.messages('/hub/estop')[0]!['latched'], true);
  });
});
