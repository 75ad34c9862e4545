// The budget guard (docs/performance.md "Fits the ESP32"): a smaller, fixed version of the device
// budget, run on the real XS engine, against the ceilings in bench/device-ceilings.json. XS counts
// computrons (one per bytecode) and slots exactly and the workloads run on a virtual clock, so
// every figure here is the same on every run and machine: a guard fails only when the code does
// more work or keeps more alive, never because the machine is busy.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

interface Ceilings {
  perDelivery: Record<string, number>;
  perDeliveryAllScript: Record<string, number>;
  tickNothingDue: number;
  workload: { perTick: number; perSecond: number; allScriptPerSecond: number; routeReadsPerPush: number; routeCallsPerPush: number; readerReadsPerFrame: number };
  retained: { slots: number; chunkBytes: number };
  pendant: { perPeriod: number; retained: { slots: number; chunkBytes: number } };
  uplink: { health: number; telemetryJson: number; telemetryCbor: number; retainedSlots: number; retainedChunkBytes: number };
  robotLink: { perImuSample: number; perPublish: number; perSecond: number; device: { perImuSample: number; perPublish: number; perSecond: number } };
  espnowC: { perStatus: number; perSend: number };
}

interface Budget {
  BINDINGS: readonly string[];
  bundleDevice(repo: string): Promise<string>;
  onXs(bundle: string, code: string): Promise<any>;
  allocationPerDelivery(bundle: string, binding: string, ms: number): Promise<{ slots: number; deliveries: number }>;
  retainedDevice(bundle: string): Promise<{ slots: number; chunkBytes: number }>;
  bundlePendant(repo: string): Promise<string>;
  pendantComputrons(bundle: string, seconds: number): Promise<{ perPeriod: number; periods: number; commands: number }>;
  pendantRetained(bundle: string, ms: number): Promise<{ slots: number; chunkBytes: number }>;
  pendantCreation(repo: string): { slots: number; chunkBytes: number };
  creation(repo: string): { slots: number; chunkBytes: number };
  retainedUplink(bundle: string): Promise<{ slots: number; chunkBytes: number }>;
  ESPNOW_PRICE: { read: number; element: number; call: number };
}

function within(measured: number, ceiling: number, what: string): void {
  assert.ok(Number.isFinite(measured) && measured > 0, `${what}: measured ${measured}`);
  assert.ok(measured <= ceiling, `${what}: ${Math.round(measured)} exceeds its ceiling ${ceiling} (bench/device-ceilings.json)`);
}

describe('device budget guard (XS engine)', function () {
  this.timeout(300000);
  const ceilings = JSON.parse(readFileSync(join(repo, 'bench', 'device-ceilings.json'), 'utf8')) as Ceilings;
  let budget: Budget;
  let bundle: string;

  before(async function () {
    budget = (await import(pathToFileURL(join(repo, 'scripts', 'lib', 'device-budget.mjs')).href)) as Budget;
    bundle = await budget.bundleDevice(repo);
  });

  it("counts the device's opcodes: the bundle is nearly one line, so XS compiles no LINE opcode for each new source line", function () {
    // xsnap's XS is built with its debugger support and compiles a LINE opcode (a computron)
    // wherever the code reaches a new line; the device's release build compiles none
    // (docs/performance.md "Fits the ESP32", Method). Only template literals' line breaks stay.
    const lines = bundle.split('\n').length;
    assert.ok(lines < 50, `the device bundle has ${lines} lines: its computrons would include a LINE opcode for each`);
    assert.ok(bundle.length > 100000, 'the whole device bundle');
  });

  for (const binding of ['tcp', 'ws', 'ble', 'espnow']) {
    it(`one delivery through ${binding} stays under its computron ceiling, with the device's DATA writer and all in script, and allocates nothing`, async function () {
      const r = await budget.onXs(bundle, `__D.perDelivery('${binding}', 1, 'device')`);
      assert.ok(r.deliveries > 100, `${binding}: only ${r.deliveries} deliveries`);
      assert.ok(r.native.frames > 0 && r.native.frames * 8 === r.deliveries, `${binding}: the device's writer wrote ${r.native.frames} DATA frames for ${r.deliveries} deliveries to 8 subscribers`);
      within(r.perDelivery, ceilings.perDelivery[binding] as number, `computrons per delivery through ${binding} (the device's C left out)`);
      if (binding === 'espnow') {
        // The binding's C (device/native/espnowsent.c): the radio's send statuses and the links' sends, priced as the report prices them.
        const p = budget.ESPNOW_PRICE;
        const priced = (t: { reads: number; elements: number; calls: number }): number => t.reads * p.read + t.elements * p.element + t.calls * p.call;
        assert.ok(r.espnow.statuses > 100 && r.espnow.sends > 100, `the ESP-NOW C saw ${r.espnow.statuses} send statuses and ${r.espnow.sends} sends`);
        within(priced(r.espnow.sent) / r.espnow.statuses, ceilings.espnowC.perStatus, "the ESP-NOW C's computrons per send status, priced");
        within(priced(r.espnow.send) / r.espnow.sends, ceilings.espnowC.perSend, "the ESP-NOW C's computrons per send, priced");
      }
      const s = await budget.onXs(bundle, `__D.perDelivery('${binding}', 1, 'script')`);
      assert.equal(s.native.frames, 0);
      within(s.perDelivery, ceilings.perDeliveryAllScript[binding] as number, `computrons per delivery through ${binding}, all in script`);
      const a = await budget.allocationPerDelivery(bundle, binding, 500);
      assert.ok(a.deliveries > 100, `${binding}: only ${a.deliveries} deliveries in the allocation run`);
      assert.equal(a.slots, 0, `${binding}: ${a.slots} slots allocated over ${a.deliveries} deliveries and their clients' ACKs and PINGs`);
    });
  }

  it('a tick with 8 sessions and nothing due stays under its ceiling', async function () {
    const t = await budget.onXs(bundle, '__D.idleTicks(50)');
    assert.equal(t.sessions, 8);
    within(t.median, ceilings.tickNothingDue, 'computrons of a tick with nothing due (median of 50)');
  });

  it('the robot link: computrons per sample received, per command sent and per second of the default streams stay under their ceilings', async function () {
    const r = await budget.onXs(bundle, "__D.robotLink(50, 'script')");
    assert.equal(r.frames, 5 * 51 + 51, 'every frame reached the hub or the UART');
    within(r.perSample.imu, ceilings.robotLink.perImuSample, 'computrons per imu SAMPLE frame the robot link reads');
    within(r.perPublish, ceilings.robotLink.perPublish, 'computrons per PUBLISH frame the robot link sends');
    within(r.perSecond.total, ceilings.robotLink.perSecond, 'computrons per second of the robot link at the default streams and cmd_vel');
  });

  it("the robot link with the device's codec: the script around the C stays under its ceilings, with one call for a frame's CRC and one for its values", async function () {
    const r = await budget.onXs(bundle, "__D.robotLink(50, 'device')");
    assert.equal(r.codec, 'device');
    assert.equal(r.frames, 5 * 51 + 51, 'every frame reached the hub or the UART');
    assert.deepEqual([r.codecCalls.perSample.imu, r.codecCalls.perPublish], [2, 1], 'codec calls per imu frame and per publication');
    const d = ceilings.robotLink.device;
    within(r.perSample.imu, d.perImuSample, "computrons per imu SAMPLE frame the robot link reads, the C's work left out");
    within(r.perPublish, d.perPublish, "computrons per PUBLISH frame the robot link sends, the C's work left out");
    within(r.perSecond.total, d.perSecond, "computrons per second of the robot link at the default streams and cmd_vel, the C's work left out");
  });

  it("the default mix's computrons per tick and per simulated second stay under their ceilings, with the device's DATA writer and all in script", async function () {
    const w = await budget.onXs(bundle, "__D.workload(2, 1000, 'device')");
    assert.ok(w.metered, 'the meter reads the engine');
    assert.ok(w.deliveries > 500, `only ${w.deliveries} deliveries`);
    assert.ok(w.native.frames > 500, `the device's writer wrote only ${w.native.frames} DATA frames`);
    within(w.perSecond.tick / (w.ticks / w.seconds), ceilings.workload.perTick, 'computrons per tick in the default mix');
    within(w.perSecond.total, ceilings.workload.perSecond, "computrons per simulated second of the default mix (the device's C left out)");
    // The device's route (device/native/route.c): every push that is not critical goes through it; what it reads of script objects and calls is held too.
    assert.ok(w.route.pushes > 500, `the device's route took only ${w.route.pushes} pushes`);
    within(w.route.reads / w.route.pushes, ceilings.workload.routeReadsPerPush, "the device's route's reads and writes of script objects' properties per push");
    within(w.route.calls / w.route.pushes, ceilings.workload.routeCallsPerPush, "the device's route's calls into script per push");
    // The device's reader of the frequent client frames (device/native/fastreader.c): every client frame but an ESTOP comes through it.
    assert.ok(w.reader.frames >= w.counts.framesFromClients, `the device's reader read only ${w.reader.frames} of ${w.counts.framesFromClients} client frames`);
    within(w.reader.reads / w.reader.frames, ceilings.workload.readerReadsPerFrame, "the device's reader's reads and writes of its fields per frame");
    const s = await budget.onXs(bundle, "__D.workload(2, 1000, 'script')");
    assert.equal(s.deliveries, w.deliveries, 'the same deliveries either way');
    within(s.perSecond.total, ceilings.workload.allScriptPerSecond, 'computrons per simulated second of the default mix, all in script');
  });

  it('the fleet uplink’s computrons per health and telemetry message and its retained heap stay under their ceilings', async function () {
    const u = await budget.onXs(bundle, '__D.uplinkCost(2)');
    const [, health, json, cbor] = u.runs as { published: { health: number; telemetry: number } }[];
    assert.ok(health && json && cbor && health.published.health >= 2 && json.published.telemetry >= 80 && cbor.published.telemetry >= 80, JSON.stringify(u.runs));
    within(u.perMessage.health, ceilings.uplink.health, 'computrons per uplink health message');
    within(u.perMessage.telemetryJson, ceilings.uplink.telemetryJson, 'computrons per uplink telemetry message as JSON');
    within(u.perMessage.telemetryCbor, ceilings.uplink.telemetryCbor, 'computrons per uplink telemetry message as CBOR');
    const m = await budget.retainedUplink(bundle);
    within(m.slots, ceilings.uplink.retainedSlots, 'slots an uplink online keeps alive');
    within(m.chunkBytes, ceilings.uplink.retainedChunkBytes, 'chunk bytes an uplink online keeps alive');
  });

  it('the retained heap with every binding live stays under its ceilings, within 70 % of manifest.json’s creation', async function () {
    const creation = budget.creation(repo);
    // The target is 70 % of both (docs/performance.md "Fits the ESP32"): the ceilings hold it.
    assert.ok(ceilings.retained.chunkBytes <= 0.7 * creation.chunkBytes, 'the chunk ceiling lies within 70 % of the creation');
    assert.ok(ceilings.retained.slots <= 0.7 * creation.slots, 'the slot ceiling lies within 70 % of the creation');
    const m = await budget.retainedDevice(bundle);
    within(m.slots, ceilings.retained.slots, 'slots retained at the device configuration');
    within(m.chunkBytes, ceilings.retained.chunkBytes, 'chunk bytes retained at the device configuration');
  });

  it('the pendant: computrons per control period and the heap it keeps stay under their ceilings, within pendant/manifest.json', async function () {
    const pendantBundle = await budget.bundlePendant(repo);
    const c = await budget.pendantComputrons(pendantBundle, 2);
    assert.ok(c.commands >= 35, `only ${c.commands} commands reached the robot in 2 s at 20 Hz`);
    within(c.perPeriod, ceilings.pendant.perPeriod, 'computrons per pendant control period (driving)');
    const m = await budget.pendantRetained(pendantBundle, 1000);
    const creation = budget.pendantCreation(repo);
    assert.ok(ceilings.pendant.retained.slots <= creation.slots && ceilings.pendant.retained.chunkBytes <= creation.chunkBytes, 'the ceilings lie within the creation');
    within(m.slots, ceilings.pendant.retained.slots, 'slots the pendant keeps (upper bound)');
    within(m.chunkBytes, ceilings.pendant.retained.chunkBytes, 'chunk bytes the pendant keeps (upper bound)');
  });
});
