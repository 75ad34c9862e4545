// The fleet uplink (uplink/, docs/fleet.md) against an in-process aedes broker over real loopback
// TCP: status and will, the health rate, telemetry and its shedding by the §10.4 table when the
// broker link is throttled, the signed fleet stop, reconnection, and local clients untouched
// while the broker is down. The hub runs on a virtual clock; the tests wait on what arrives.
import { decodeFrame, FrameType, type DataFrame, type Frame } from '../../hub/frames.js';
import { EstopSource } from '../../hub/estop-frame.js';
import { FleetStopVerdict, fleetStopMessage } from '../../hub/fleet-stop.js';
import { UplinkState } from '../../uplink/uplink.js';
import { deepEqual, equal, ok } from '../lib/assert.js';
import { ascii, OPERATOR_CREDENTIAL, TestClient } from '../lib/hub-fixture.js';
import { Broker, until, UplinkRig, Watcher } from '../lib/uplink-rig.js';

const KEY = 'north hall fleet key';

function odom(rig: UplinkRig, t: number): void {
  const ch = rig.fx.catalog.byName('odom')!;
  rig.fx.hub.publishSample(ch.id, t, Float64Array.from([t / 1000, 2, 0.5, 0.1, 0]), 5);
}

function imu(rig: UplinkRig, t: number): void {
  const ch = rig.fx.catalog.byName('imu')!;
  rig.fx.hub.publishSample(ch.id, t, Float64Array.from([0.1, 0.2, 9.81, 0.01, 0.02, 0.03]), 6);
}

async function online(rig: UplinkRig, w: Watcher, times = 1): Promise<void> {
  await until(() => w.texts('fleet/north/hub-1/status').filter((s) => s === 'online').length >= times, `status online ×${times}`, () => rig.tick());
}

describe('fleet uplink over MQTT (aedes on loopback)', function () {
  this.timeout(60000);
  let broker: Broker;
  let watcher: Watcher;
  let rig: UplinkRig | null = null;

  beforeEach(async () => {
    broker = await new Broker().start(0);
    watcher = await Watcher.connect(broker.url);
  });

  afterEach(async () => {
    if (rig) rig.stop();
    rig = null;
    await watcher.close();
    await broker.stop();
  });

  it('announces online (retained) on connect, and the broker publishes the will offline when the link is lost; it reconnects and announces again', async () => {
    rig = new UplinkRig(broker, {});
    const r = rig;
    await online(r, watcher);
    equal(r.uplink.state, UplinkState.ONLINE);
    // Retained: a subscriber that comes later is told at once.
    const late = await Watcher.connect(broker.url, 'fleet/north/hub-1/status');
    await until(() => late.heard.length > 0, 'the retained status');
    deepEqual([late.heard[0]!.payload.toString(), late.heard[0]!.retain], ['online', true]);
    await late.close();
    // The network breaks (no DISCONNECT): the will.
    r.mqtt.drop();
    await until(() => watcher.texts('fleet/north/hub-1/status').includes('offline'), 'the will', () => r.tick());
    await until(() => r.uplink.state === UplinkState.WAITING, 'the uplink to notice');
    // It tries again after its backoff (virtual time) and re-announces.
    r.advance(1000);
    await online(r, watcher, 2);
    equal(r.uplink.connects, 2);
    const statuses = watcher.texts('fleet/north/hub-1/status');
    deepEqual(statuses.slice(-2), ['offline', 'online']);
  });

  it('publishes the health summary once a second of the hub clock, retained, metrics v1 with no names or credentials', async () => {
    rig = new UplinkRig(broker, {});
    const r = rig;
    await online(r, watcher);
    const before = r.uplink.publishedBy.health;
    r.advance(10000);
    const sent = r.uplink.publishedBy.health - before;
    ok(sent >= 10 && sent <= 11, `10 s of the hub's clock gave ${sent} health messages`);
    await until(() => watcher.on('fleet/north/hub-1/health').length >= before + sent, 'every health message', () => r.tick());
    const last = watcher.on('fleet/north/hub-1/health').at(-1)!;
    const h = JSON.parse(last.payload.toString()) as Record<string, unknown>;
    equal(h['version'], 1);
    equal(h['latched'], 0);
    ok(typeof (h['uplink'] as Record<string, unknown>)['published'] === 'number');
    const text = last.payload.toString();
    for (const secret of ['fleet-uplink', 'operator-token', KEY]) ok(!text.includes(secret), `health holds '${secret}'`);
    // The broker keeps the newest for a subscriber that comes later.
    const late = await Watcher.connect(broker.url, 'fleet/north/hub-1/health');
    await until(() => late.heard.length > 0, 'the retained health');
    ok(late.heard[0]!.retain);
    await late.close();
  });

  it('publishes the configured telemetry at the granted rate, as JSON with field names', async () => {
    rig = new UplinkRig(broker, { telemetry: [{ channel: 'odom', rateHz: 5 }] });
    const r = rig;
    await online(r, watcher);
    r.advance(50);
    const odomId = r.fx.catalog.byName('odom')!.id;
    equal(r.uplink.grants.get(odomId), 5);
    // The robot publishes odom at 50 Hz for 4 s: the uplink carries 5 Hz of it.
    r.advance(4000, (t) => {
      if (t % 20 === 0) odom(r, t);
    });
    const sent = r.uplink.publishedBy.telemetry;
    ok(sent >= 19 && sent <= 21, `4 s at 5 Hz gave ${sent}`);
    await until(() => watcher.on('fleet/north/hub-1/telemetry/odom').length >= sent, 'the telemetry', () => r.tick());
    const m = JSON.parse(watcher.texts('fleet/north/hub-1/telemetry/odom')[0]!) as { seq: number; t: number; values: Record<string, number> };
    deepEqual(Object.keys(m.values), ['x', 'y', 'theta', 'v', 'w']);
    equal(m.values['y'], 2);
  });

  it('publishes CBOR telemetry as the DATA frame itself when the config asks for it', async () => {
    rig = new UplinkRig(broker, { telemetry: [{ channel: 'odom', rateHz: 5 }], format: 'cbor' });
    const r = rig;
    await online(r, watcher);
    r.advance(1000, (t) => {
      if (t % 20 === 0) odom(r, t);
    });
    await until(() => watcher.on('fleet/north/hub-1/telemetry/odom').length >= 3, 'CBOR telemetry', () => r.tick());
    const bytes = new Uint8Array(watcher.on('fleet/north/hub-1/telemetry/odom')[0]!.payload);
    const f = decodeFrame(bytes, 0, bytes.length) as Frame;
    equal(f.type, FrameType.DATA);
    equal((f as DataFrame).channelId, r.fx.catalog.byName('odom')!.id);
    equal((f as DataFrame).values[1], 2);
  });

  it('sheds telemetry by the table when the broker link is throttled; the ESTOP still goes first', async () => {
    // 2 kB/s of the Wi-Fi for a 100 Hz imu wish (about 20 kB/s as JSON).
    rig = new UplinkRig(broker, { telemetry: [{ channel: 'imu', rateHz: 100 }], events: [], maxBytesPerS: 2000 });
    const r = rig;
    await online(r, watcher);
    const c0 = { ...r.fx.hub.counters };
    let maxLevel = 0;
    r.advance(8000, (t) => {
      if (t % 5 === 0) imu(r, t);
      maxLevel = Math.max(maxLevel, r.uplink.level);
    });
    const c = r.fx.hub.counters;
    ok(maxLevel >= 1, `the uplink's link reached level ${maxLevel}`);
    const shed = c.decimated - c0.decimated + (c.shedDrops - c0.shedDrops) + (c.egressDrops - c0.egressDrops);
    ok(shed > 100, `the table and the link shed ${shed} samples`);
    const sent = r.uplink.publishedBy.telemetry;
    ok(sent < 8 * 100 / 2, `only ${sent} of 800 wished went out`);
    ok(r.uplink.publishedBytes <= 2000 * 8 + 4096, `${r.uplink.publishedBytes} bytes within the 2 kB/s budget`);
    // Under that load the hub's ESTOP reaches the broker ahead of the queued samples.
    const tele = r.uplink.publishedBy.telemetry;
    r.fx.hub.setButton(true);
    r.fx.hub.setButton(false);
    r.advance(1000, (t) => {
      if (t % 5 === 0) imu(r, t);
    });
    await until(() => watcher.on('fleet/north/hub-1/safety').length > 0, 'the safety message', () => r.tick());
    const safety = JSON.parse(watcher.texts('fleet/north/hub-1/safety')[0]!) as Record<string, unknown>;
    deepEqual([safety['latched'], safety['source']], [true, 'hub-button']);
    ok(r.uplink.publishedBy.telemetry - tele <= 1000 / 10, 'the samples after it are still shed');
  });

  it('the byte budget never holds back an ESTOP: with the budget spent it goes at once', async () => {
    // One byte a second once the first 2 kB are spent; odom at 5 Hz spends them within a second.
    rig = new UplinkRig(broker, { telemetry: [{ channel: 'odom', rateHz: 5 }], events: [], maxBytesPerS: 1 });
    const r = rig;
    await online(r, watcher);
    r.advance(3000, (t) => {
      if (t % 20 === 0) odom(r, t);
    });
    const tele = r.uplink.publishedBy.telemetry;
    r.advance(500, (t) => {
      if (t % 20 === 0) odom(r, t);
    });
    equal(r.uplink.publishedBy.telemetry, tele, 'the budget is spent: no telemetry goes');
    r.fx.hub.setButton(true);
    r.fx.hub.setButton(false);
    equal(r.uplink.publishedBy.safety, 1, 'the ESTOP went out at the instant it latched');
    await until(() => watcher.on('fleet/north/hub-1/safety').length > 0, 'the safety message', () => r.tick());
  });

  it('latches on a good fleet stop, with source fleet; refuses a replay, a bad signature, a stale one; a fleet message never clears', async () => {
    rig = new UplinkRig(broker, { fleetKey: KEY });
    const r = rig;
    await online(r, watcher);
    const topic = 'fleet/north/estop';
    const key = ascii(KEY);
    // Bad signature and stale first: nothing latches.
    watcher.publish(topic, fleetStopMessage('north', ascii('not the key'), '*', 10, r.wallMs));
    watcher.publish(topic, fleetStopMessage('north', key, '*', 11, r.wallMs - 120000));
    watcher.publish(topic, fleetStopMessage('north', key, 'hub-2', 12, r.wallMs));
    await until(() => r.uplink.guard.verdicts.reduce((a, b) => a + b, 0) >= 3, 'three judged', () => r.tick());
    equal(r.uplink.guard.verdicts[FleetStopVerdict.BAD_SIGNATURE], 1);
    equal(r.uplink.guard.verdicts[FleetStopVerdict.STALE], 1);
    equal(r.uplink.guard.verdicts[FleetStopVerdict.NOT_FOR_US], 1);
    ok(!r.fx.hub.latch.latched);
    // The good one latches, source FLEET, and is announced as any ESTOP.
    const good = fleetStopMessage('north', key, '*', 13, r.wallMs);
    watcher.publish(topic, good);
    await until(() => r.fx.hub.latch.latched, 'the latch', () => r.tick());
    equal(r.fx.hub.latch.source, EstopSource.FLEET);
    deepEqual(r.fx.robot.stops, [EstopSource.FLEET]);
    await until(() => watcher.on('fleet/north/hub-1/safety').length > 0, 'the safety message', () => r.tick());
    equal((JSON.parse(watcher.texts('fleet/north/hub-1/safety')[0]!) as Record<string, unknown>)['source'], 'fleet');
    // The same message again changes nothing.
    watcher.publish(topic, good);
    await until(() => (r.uplink.guard.verdicts[FleetStopVerdict.REPLAYED] as number) >= 1, 'the replay judged', () => r.tick());
    deepEqual(r.fx.robot.stops, [EstopSource.FLEET]);
    // Clearing stays local: the control owner at operator tier.
    const op = new TestClient(r.fx.hub);
    op.hello({ credential: OPERATOR_CREDENTIAL });
    op.intent(r.fx.catalog.byName('take_control')!.id, 1);
    op.send({ type: FrameType.ESTOP_CLEAR });
    ok(!r.fx.hub.latch.latched);
    equal(r.fx.robot.releases, 1);
    ok(!r.fx.hub.armed, 'a clear never restarts the robot');
  });

  it('keeps the last accepted sequence across reconnects', async () => {
    rig = new UplinkRig(broker, { fleetKey: KEY });
    const r = rig;
    await online(r, watcher);
    const m = fleetStopMessage('north', ascii(KEY), 'hub-1', 5, r.wallMs);
    watcher.publish('fleet/north/estop', m);
    await until(() => r.fx.hub.latch.latched, 'the latch', () => r.tick());
    r.mqtt.drop();
    await until(() => r.uplink.state === UplinkState.WAITING, 'the loss', () => r.tick());
    r.advance(1000);
    await online(r, watcher, 2);
    watcher.publish('fleet/north/estop', m);
    await until(() => (r.uplink.guard.verdicts[FleetStopVerdict.REPLAYED] as number) >= 1, 'the replay judged', () => r.tick());
    equal(r.fx.robot.stops.length, 1);
  });

  it('a broker link that takes nothing: the hub parks the uplink’s session after the never-shed stall and resumes it, the local client untouched', async () => {
    // One byte a second once the first messages are out: the broker link carries nothing more.
    rig = new UplinkRig(broker, { telemetry: [], events: ['safety-events'], maxBytesPerS: 1 });
    const r = rig;
    await online(r, watcher);
    const local = new TestClient(r.fx.hub);
    local.hello({ subWishes: [{ channelId: r.fx.catalog.byName('odom')!.id, wishedRateHz: 50 }] });
    const ev = r.fx.catalog.byName('safety-events')!;
    const c0 = { ...r.fx.hub.counters };
    r.advance(6000, (t) => {
      // Critical events the uplink cannot pass on: its queue fills, then its never-shed ring.
      if (t < 3000) for (let i = 0; i < 5; i++) r.fx.hub.publishEvent(ev.id, t, [9, 0, i], 'x');
      if (t % 20 === 0) odom(r, t);
      if (t % 1000 === 0) local.send({ type: FrameType.PING, t0: t });
    });
    const c = r.fx.hub.counters;
    ok(c.parks - c0.parks >= 1, 'the uplink session was parked');
    ok(c.resumes - c0.resumes >= 1, 'and resumed by its token');
    equal(r.uplink.state, UplinkState.ONLINE, 'the broker session stays');
    const got = local.take(FrameType.DATA).filter((f) => (f as DataFrame).channelId === r.fx.catalog.byName('odom')!.id).length;
    ok(got >= 295, `the local client got ${got} of 300 odom samples`);
    local.estop(1);
    ok(r.fx.hub.latch.latched);
    ok(local.link.received.some((x) => x.kind === 'estop'));
  });

  it('leaves local clients untouched while the broker is down: their telemetry and their ESTOP; then reconnects', async () => {
    rig = new UplinkRig(broker, { telemetry: [{ channel: 'odom', rateHz: 5 }] });
    const r = rig;
    await online(r, watcher);
    const local = new TestClient(r.fx.hub);
    local.hello({ subWishes: [{ channelId: r.fx.catalog.byName('odom')!.id, wishedRateHz: 50 }] });
    await broker.stop();
    await until(() => r.uplink.state === UplinkState.WAITING, 'the uplink to see the broker gone', () => r.tick());
    // 3 s without a broker: the local client gets its 50 Hz, and its ESTOP latches at once.
    r.advance(3000, (t) => {
      if (t % 20 === 0) odom(r, t);
      if (t % 1000 === 0) local.send({ type: FrameType.PING, t0: t });
    });
    const got = local.take(FrameType.DATA).length;
    ok(got >= 145, `the local client got ${got} of 150 odom samples`);
    local.estop(1);
    ok(r.fx.hub.latch.latched);
    deepEqual(r.fx.robot.stops, [EstopSource.CLIENT]);
    ok(local.link.received.some((w) => w.kind === 'estop'), 'the ESTOP frame reached the local client');
    // The broker comes back on its port: the uplink reconnects within its backoff and says so.
    await broker.start();
    await watcher.close();
    watcher = await Watcher.connect(broker.url);
    await until(
      () => r.uplink.state === UplinkState.ONLINE,
      'the reconnect',
      () => r.advance(100),
    );
    await online(r, watcher, 1);
  });
});
