// MCAP recordings (docs/tools.md "Recordings"): the recorder's file read back with @mcap/core's
// own indexed reader and compared with what it was given; `hubctl record` against the live
// simulator over loopback, compared with what a second client received from the same hub; and
// `hubctl replay` of that file, whose simulator delivers the recorded values to a client.
// Every wait is on an event (a line printed, a sample received, a process's exit), bounded.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { open as openFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { McapIndexedReader, type McapTypes } from '@mcap/core';
import { loadCatalog } from '../../catalog/index.js';
import { DEFAULT_CATALOG } from '../../catalog/default.js';
import { connectTcp } from '../../client/node.js';
import type { DataFrame } from '../../client/index.js';
import { EstopKind, EstopSource } from '../../hub/estop-frame.js';
import { Nack } from '../../hub/nack.js';
import { startDashboard, type Dashboard } from '../../host-sim/dashboard/server.js';
import { ESTOP_TOPIC, FileSink, GRANTS_TOPIC, McapRecorder, MESSAGE_KEYS, NACKS_TOPIC } from '../../tools/mcap.js';
import { HUBCTL, testScenario } from '../lib/hubctl-fixture.js';

const catalog = loadCatalog(DEFAULT_CATALOG);
const WAIT_MS = 60000;

async function until(what: string, check: () => boolean, ms = WAIT_MS): Promise<void> {
  const deadline = performance.now() + ms;
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

interface Read {
  readonly reader: McapIndexedReader;
  readonly messages: { topic: string; logTime: bigint; sequence: number; body: Record<string, unknown> }[];
  readonly schemas: Map<string, Record<string, unknown>>;
  readonly metadata: McapTypes.Metadata[];
}

/** The whole file through @mcap/core's indexed reader. */
async function readBack(path: string): Promise<Read> {
  const fh = await openFile(path, 'r');
  try {
    const size = BigInt((await fh.stat()).size);
    const readable = {
      size: async (): Promise<bigint> => size,
      read: async (offset: bigint, length: bigint): Promise<Uint8Array> => {
        const out = new Uint8Array(Number(length));
        await fh.read(out, 0, out.length, Number(offset));
        return out;
      },
    };
    const reader = await McapIndexedReader.Initialize({ readable });
    const dec = new TextDecoder();
    const schemas = new Map<string, Record<string, unknown>>();
    for (const ch of reader.channelsById.values()) {
      const schema = reader.schemasById.get(ch.schemaId) as McapTypes.Schema;
      assert.equal(schema.encoding, 'jsonschema');
      assert.equal(ch.messageEncoding, 'json');
      schemas.set(ch.topic, JSON.parse(dec.decode(schema.data)) as Record<string, unknown>);
    }
    const messages = [];
    for await (const m of reader.readMessages()) {
      const topic = reader.channelsById.get(m.channelId)!.topic;
      messages.push({ topic, logTime: m.logTime, sequence: m.sequence, body: JSON.parse(dec.decode(m.data)) as Record<string, unknown> });
    }
    const metadata = [];
    for await (const m of reader.readMetadata()) metadata.push(m);
    return { reader, messages, schemas, metadata };
  } finally {
    await fh.close();
  }
}

describe('recordings: MCAP', function () {
  this.timeout(300000);
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'hub-rec-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('the recorder writes what it is given: DATA at hub time with a schema of fields and units, grants, NACKs and ESTOPs', async () => {
    const path = join(dir, 'unit.mcap');
    const imu = catalog.byName('imu')!;
    const log = catalog.byName('log')!;
    let local = 1000;
    const rec = new McapRecorder(await FileSink.create(path), catalog, [imu, log], () => local);
    await rec.start({ hubId: 'hub-7', hubUrl: 'tcp://10.0.0.2:7000', tier: 1, catalogName: catalog.catalog.name, catalogHash: catalog.hashHex });
    // Before any DATA the recorder has no hub time: the grant waits for the first sample's.
    rec.grants(new Map([[10, { channelId: 10, grantedRateHz: 50, priority: 1 }]]), new Map());
    const sent: DataFrame[] = [
      { type: 7, channelId: 10, seq: 4, t: 5000, values: [0.5, -0.25, 9.8125, 0, 0.125, -1] },
      { type: 7, channelId: 10, seq: 5, t: 5020, values: [0.5, -0.25, 9.8125, 0, 0.125, -2], gap: true },
      { type: 7, channelId: 20, seq: 1, t: 5030, values: [2, 1017], text: 'tick' },
    ];
    local = 1010; // the first sample arrives 10 ms after the grant: hub 5000 ≈ local 1010
    rec.data(10, sent[0]!);
    local = 1031;
    rec.data(10, sent[1]!);
    rec.data(20, sent[2]!);
    local = 1040;
    rec.nack({ type: 11, code: Nack.RATE_LIMITED, channelId: 30, retryAfterMs: 200 });
    rec.estop({ kind: EstopKind.ASSERT, source: EstopSource.HUB_BUTTON, flags: 1, origin: 0, seq: 3 });
    await rec.finish();

    const r = await readBack(path);
    const meta = r.metadata;
    assert.equal(meta[0]!.metadata.get('hub_id'), 'hub-7');
    assert.equal(meta[0]!.metadata.get('catalog_hash'), catalog.hashHex);

    const imuSchema = r.schemas.get('/imu')!;
    const props = imuSchema['properties'] as Record<string, { unit?: string; description: string }>;
    assert.equal(props['ax']!.unit, 'm/s^2');
    assert.equal(props['gz']!.unit, 'rad/s');
    assert.match(props[MESSAGE_KEYS.t]!.description, /hub timestamp/);

    const data = r.messages.filter((m) => m.topic === '/imu' || m.topic === '/log');
    assert.deepEqual(
      data.map((m) => [m.topic, m.logTime, m.sequence, m.body]),
      [
        ['/imu', 5000_000_000n, 4, { hub_t_ms: 5000, hub_seq: 4, ax: 0.5, ay: -0.25, az: 9.8125, gx: 0, gy: 0.125, gz: -1 }],
        ['/imu', 5020_000_000n, 5, { hub_t_ms: 5020, hub_seq: 5, ax: 0.5, ay: -0.25, az: 9.8125, gx: 0, gy: 0.125, gz: -2, hub_gap: true }],
        ['/log', 5030_000_000n, 1, { hub_t_ms: 5030, hub_seq: 1, level: 2, code: 1017, hub_text: 'tick' }],
      ],
    );
    // Control frames on the hub clock estimated from the samples, offset = max(t − local): the
    // grant waited for the first sample (3990), the NACK came after the log sample (3999).
    const grant = r.messages.find((m) => m.topic === GRANTS_TOPIC)!;
    assert.equal(grant.logTime, 4990_000_000n);
    assert.deepEqual(grant.body, { subscriptions: [{ channel: 'imu', channelId: 10, grantedRateHz: 50, priority: 'normal' }], publications: [] });
    const nack = r.messages.find((m) => m.topic === NACKS_TOPIC)!;
    assert.equal(nack.logTime, 5039_000_000n);
    assert.deepEqual(nack.body, { code: Nack.RATE_LIMITED, name: 'RATE_LIMITED', channelId: 30, channel: 'cmd_vel', retryAfterMs: 200 });
    const estop = r.messages.find((m) => m.topic === ESTOP_TOPIC)!;
    assert.deepEqual(estop.body, { kind: 'assert', latched: true, source: 'hub-button', origin: 0, seq: 3 });
    assert.equal(r.reader.statistics?.messageCount, 6n);
  });

  describe('against the simulator', () => {
    let dash: Dashboard;
    let file: string;
    before(async () => {
      dash = await startDashboard({ scenario: testScenario(), port: 0, tcpPort: 0, wsPort: 0 });
      file = join(dir, 'live.mcap');
    });
    after(async () => {
      await dash.close();
    });

    it('hubctl record: the samples a second client received, at their hub times, with the grants and the ESTOP', async () => {
      const tcp = `tcp://127.0.0.1:${dash.tcp!.port}`;
      const seen = new Map<number, number[]>(); // battery t → values, as another client got them
      const other = await connectTcp('127.0.0.1', dash.tcp!.port, {
        name: 'witness',
        subscriptions: [{ channelId: catalog.byName('battery')!.id, wishedRateHz: 1 }],
        onData: (id, f) => {
          if (id === catalog.byName('battery')!.id) seen.set(f.t, f.values.slice());
        },
      });
      const hub = dash.live.sim.hub;
      let stdout = '';
      const child = spawn(process.execPath, [HUBCTL, 'record', '--hub', tcp, '--out', file, '--channels', 'imu,battery,fault', '--duration', '4'], { stdio: ['ignore', 'pipe', 'pipe'] });
      child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      const exited = new Promise<number | null>((ok) => child.once('close', ok));
      try {
        await until('recording begins', () => stdout.includes('recording imu, battery, fault'));
        await until('a battery sample', () => seen.size >= 1);
        hub.estop(EstopSource.HUB_BUTTON);
        assert.equal(await exited, 0, stdout);
      } finally {
        child.kill();
        other.close();
      }
      assert.match(stdout, /wrote .*live\.mcap: .*\/battery \d+.*\/hub\/estop \d+.*\/imu \d+/);

      const r = await readBack(file);
      const imu = r.messages.filter((m) => m.topic === '/imu');
      assert.ok(imu.length > 20, `${imu.length} imu samples`);
      for (const m of imu) assert.equal(m.logTime, BigInt(m.body[MESSAGE_KEYS.t] as number) * 1_000_000n);
      for (let i = 1; i < imu.length; i++) assert.ok((imu[i]!.body[MESSAGE_KEYS.seq] as number) > (imu[i - 1]!.body[MESSAGE_KEYS.seq] as number));
      // battery is granted its whole 1 Hz: both sessions got the same samples.
      const battery = r.messages.filter((m) => m.topic === '/battery');
      let compared = 0;
      for (const m of battery) {
        const v = seen.get(m.body[MESSAGE_KEYS.t] as number);
        if (v === undefined) continue;
        assert.deepEqual([m.body['voltage'], m.body['percent']], v);
        compared++;
      }
      assert.ok(compared >= 2, `${compared} battery samples compared`);
      const grants = r.messages.filter((m) => m.topic === GRANTS_TOPIC).map((m) => m.body['subscriptions'] as { channel: string; grantedRateHz: number }[]);
      assert.deepEqual(
        grants[grants.length - 1]!.map((g) => [g.channel, g.grantedRateHz]),
        [['imu', 50], ['battery', 1], ['fault', 10]],
      );
      const estops = r.messages.filter((m) => m.topic === ESTOP_TOPIC);
      assert.deepEqual(estops.map((m) => [m.body['kind'], m.body['source']]), [['assert', 'hub-button']]);
      // The robot reports the stop on `fault`, recorded beside it.
      assert.ok(r.messages.some((m) => m.topic === '/fault' && m.body['code'] === 100 && m.body['active'] === 1));
      // Nothing in the file is out of its time order by more than the control frames' estimate.
      assert.ok(r.reader.statistics!.messageCount >= BigInt(imu.length + battery.length + 2));
    });

    it('hubctl replay: the simulator publishes the recorded samples, which a client receives', async () => {
      const r = await readBack(file);
      const recorded = new Set(r.messages.filter((m) => m.topic === '/imu').map((m) => JSON.stringify(['ax', 'ay', 'az', 'gx', 'gy', 'gz'].map((k) => m.body[k]))));
      let stdout = '';
      const child: ChildProcess = spawn(process.execPath, [HUBCTL, 'replay', file, '--port', '0', '--tcp-port', '0', '--ws-port', '0', '--repeat', '--lead', '0.5'], { stdio: ['ignore', 'pipe', 'pipe'] });
      child.stdout!.setEncoding('utf8').on('data', (d: string) => (stdout += d));
      const exited = new Promise<number | null>((ok) => child.once('close', ok));
      const got: number[][] = [];
      let client: Awaited<ReturnType<typeof connectTcp>> | null = null;
      try {
        await until('the replay serves', () => /hub over TCP +127\.0\.0\.1:\d+/.test(stdout));
        assert.match(stdout, /channels +imu \d+, battery \d+, fault \d+/);
        const port = Number(/hub over TCP +127\.0\.0\.1:(\d+)/.exec(stdout)![1]);
        client = await connectTcp('127.0.0.1', port, {
          name: 'viewer',
          subscriptions: [{ channelId: catalog.byName('imu')!.id, wishedRateHz: 50 }],
          onData: (id, f) => {
            if (id === catalog.byName('imu')!.id) got.push(f.values.slice());
          },
        });
        await until('replayed imu samples', () => got.length >= 10);
        // The simulator's dashboard serves the replay: its own scope is delivered the recorded imu.
        const dashboard = /dashboard +(http:\/\/127\.0\.0\.1:\d+\/)/.exec(stdout);
        assert.ok(dashboard, stdout);
        type SimReport = { scenario: { name: string }; clients: Record<string, { subscriptions: Record<string, { frames: number }> }> };
        const report = async (): Promise<SimReport> => (await (await fetch(new URL('/api/report', dashboard[1]))).json()) as SimReport;
        assert.equal((await report()).scenario.name, 'replay');
        let scopeImu = 0;
        const deadline = performance.now() + WAIT_MS;
        while ((scopeImu = (await report()).clients['scope']?.subscriptions['imu']?.frames ?? 0) < 10 && performance.now() < deadline) await new Promise((r) => setTimeout(r, 100));
        assert.ok(scopeImu >= 10, `the dashboard's scope was delivered ${scopeImu} replayed imu samples`);
      } finally {
        client?.close();
        child.kill('SIGTERM');
      }
      assert.equal(await exited, 0);
      for (const v of got) assert.ok(recorded.has(JSON.stringify(v)), `a sample that was never recorded: ${JSON.stringify(v)}`);
      assert.ok(new Set(got.map((v) => JSON.stringify(v))).size >= 5, 'distinct recorded samples, not one repeated');
    });
  });
});
