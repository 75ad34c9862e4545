// The dashboard's fleet view (host-sim/fleet-view.ts, docs/fleet.md): two uplinked hubs on an
// in-process aedes broker as the view reads them from their retained topics, and the page's Fleet
// card in headless Chromium.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { DEFAULT_CATALOG } from '../../catalog/default.js';
import { loadCatalog } from '../../catalog/index.js';
import { fleetStopMessage } from '../../hub/fleet-stop.js';
import { startDashboard, type Dashboard } from '../../host-sim/dashboard/server.js';
import { applyFleetMessage, fleetEntries, FleetView } from '../../host-sim/fleet-view.js';
import { validateScenario } from '../../host-sim/scenario.js';
import { ascii } from '../lib/hub-fixture.js';
import { Broker, until, UplinkRig, Watcher } from '../lib/uplink-rig.js';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const text = (s: string): Uint8Array => ascii(s);

describe('fleet view: reading the site from the broker', function () {
  this.timeout(120000);

  it('takes status, safety and health per hub, of its site only, and ignores what it cannot read', () => {
    const hubs = new Map();
    assert.ok(applyFleetMessage(hubs, 'north', 'fleet/north/hub-2/status', text('online'), 0));
    assert.ok(applyFleetMessage(hubs, 'north', 'fleet/north/hub-2/safety', text('{"latched":true,"kind":"assert","source":"fleet","origin":0,"seq":1}'), 0));
    assert.ok(applyFleetMessage(hubs, 'north', 'fleet/north/hub-2/health', text('{"version":1,"atMs":5,"latched":1,"estops":2,"sessions":{"slots":8,"active":3,"stale":0},"uplink":{"level":1}}'), 0));
    assert.ok(applyFleetMessage(hubs, 'north', 'fleet/north/hub-10/status', text('offline'), 0));
    assert.ok(!applyFleetMessage(hubs, 'north', 'fleet/south/hub-3/status', text('online'), 0));
    assert.ok(!applyFleetMessage(hubs, 'north', 'fleet/north/hub-2/telemetry/odom', text('{}'), 0));
    assert.ok(!applyFleetMessage(hubs, 'north', 'fleet/north/hub-2/health', text('{not json'), 0));
    assert.deepEqual(fleetEntries(hubs, 1000), [
      { id: 'hub-2', status: 'online', latched: true, source: 'fleet', sessions: 3, estops: 2, uplinkLevel: 1, heardMsAgo: 1000 },
      { id: 'hub-10', status: 'offline', latched: null, source: null, sessions: null, estops: null, uplinkLevel: null, heardMsAgo: 1000 },
    ]);
  });

  it('shows two uplinked hubs, one stopped by the fleet, and the other gone offline by its will; the dashboard page shows the same', async () => {
    const broker = await new Broker().start(0);
    const watcher = await Watcher.connect(broker.url);
    const a = new UplinkRig(broker, { clientId: 'hub-1', fleetKey: 'k' }, { hubId: 'hub-1' });
    const b = new UplinkRig(broker, { clientId: 'hub-2', fleetKey: 'k' }, { hubId: 'hub-2' });
    const tick = (): void => {
      a.tick();
      b.tick();
    };
    const view = new FleetView(broker.url, 'north');
    let dash: Dashboard | null = null;
    let context: BrowserContext | null = null;
    const profile = mkdtempSync(join(tmpdir(), 'hub-fleet-chromium-'));
    try {
      const on = (id: string): boolean => view.entries().some((e) => e.id === id && e.status === 'online');
      await until(() => on('hub-1') && on('hub-2'), 'both hubs online in the view', tick);
      watcher.publish('fleet/north/estop', fleetStopMessage('north', ascii('k'), 'hub-2', 1, b.wallMs));
      await until(() => view.entries().some((e) => e.id === 'hub-2' && e.latched === true && e.source === 'fleet'), 'hub-2 latched by the fleet', tick);
      a.mqtt.drop();
      await until(() => view.entries().some((e) => e.id === 'hub-1' && e.status === 'offline'), 'hub-1 offline by its will', tick);
      // A late viewer learns it all from the retained topics.
      const late = new FleetView(broker.url, 'north');
      await until(() => late.entries().length === 2 && late.entries().every((e) => e.status !== '?' && e.latched !== null), 'the retained state', tick);
      assert.deepEqual(
        late.entries().map((e) => [e.id, e.status, e.latched, e.source]),
        [
          ['hub-1', 'offline', false, null],
          ['hub-2', 'online', true, 'fleet'],
        ],
      );
      await late.close();

      if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: npm test installs it when run as root (scripts/lib/prepare.mjs)`);
      const catalog = loadCatalog(DEFAULT_CATALOG);
      const scenario = validateScenario({ name: 'fleet-view', description: 'the fleet card', seed: 1, durationMs: 600000, links: { wifi: { binding: 'tcp' } }, clients: [] }, catalog);
      dash = await startDashboard({ scenario, port: 0, external: false, fleet: () => view.entries() });
      context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
      const page = await context.newPage();
      await page.goto(dash.url, { timeout: 20000 });
      await page.waitForSelector('#fleet-table tbody tr[data-hub="hub-2"]', { timeout: 20000 });
      assert.equal(await page.isVisible('#fleet-card'), true);
      const rows = await page.$$eval('#fleet-table tbody tr', (trs) => trs.map((tr) => [...tr.querySelectorAll('td')].slice(0, 3).map((td) => td.textContent)));
      assert.deepEqual(rows, [
        ['hub-1', 'offline', 'clear'],
        ['hub-2', 'online', 'LATCHED (fleet)'],
      ]);
    } finally {
      if (context) await context.close();
      if (dash) await dash.close();
      rmSync(profile, { recursive: true, force: true });
      a.stop();
      b.stop();
      await view.close();
      await watcher.close();
      await broker.stop();
    }
  });
});
