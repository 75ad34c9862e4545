/// <reference lib="dom" />
// The dashboard of `npm start` in Debian's Chromium (playwright-core), against the real-time
// simulation started in-process, and `npm start`'s own entry (build/host-sim/main.js) as a child
// process: it serves, prints its endpoints, takes an external client over loopback TCP into the
// same hub, and exits cleanly on SIGINT. Every wait is bounded; everything is closed in `after`.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { ChannelClass, Priority, StreamKind } from '../../catalog/schema.js';
import { DEFAULT_CATALOG } from '../../catalog/default.js';
import { loadCatalog } from '../../catalog/index.js';
import { connectTcp } from '../../client/node.js';
import type { HubClient } from '../../client/core.js';
import { NO_STREAM_KIND, SHED_DECISION_NAME, shedDecide, shedDecision, shedRow } from '../../hub/shed.js';
import { SHED_ROW_TEXT } from '../../host-sim/dashboard/rows.js';
import { startDashboard, type Dashboard } from '../../host-sim/dashboard/server.js';
import { validateScenario, type EventSpec } from '../../host-sim/scenario.js';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];
const WAIT_MS = 20000;
const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

const catalog = loadCatalog(DEFAULT_CATALOG);

// The §10.4 demo needs a mix with imu background (logger), imu elevated (scope), path normal
// (a viewer) and path elevated (an operator-tier viewer); long enough never to end in a test.
const scenario = validateScenario(
  {
    name: 'dashboard-test',
    description: 'the dashboard suite: every priority of a samples and a segments stream',
    seed: 7,
    durationMs: 600000,
    credentials: { 'operator-key': 'operator' },
    links: { wifi: { binding: 'tcp' }, ws: { binding: 'ws' } },
    clients: [
      // The console also plans: its trajectory, once armed, comes back on `path` (a segments stream).
      { name: 'console', role: 'console', link: 'wifi', credential: 'operator-key', publications: [{ channel: 'trajectory', rateHz: 5, burst: 20 }] },
      { name: 'scope', role: 'scope', link: 'ws', credential: 'operator-key', startMs: 100 },
      { name: 'logger', role: 'logger', link: 'wifi', startMs: 200 },
      { name: 'viewer', role: 'viewer', link: 'wifi', startMs: 300 },
      {
        name: 'planview',
        role: 'viewer',
        link: 'ws',
        credential: 'operator-key',
        startMs: 400,
        subscriptions: [
          { channel: 'safety', rateHz: 10 },
          { channel: 'path', rateHz: 25, priority: 'elevated' },
        ],
      },
    ],
    events: [
      { atMs: 500, type: 'take-control', client: 'console' },
      { atMs: 800, type: 'intent', client: 'console', channel: 'arm' },
    ],
  },
  catalog,
);

function needChromium(): void {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: the dashboard suite drives Debian's Chromium. npm test installs it when run as root (scripts/lib/prepare.mjs); otherwise run \`apt-get install -y chromium\` as root.`);
  }
}

async function until(what: string, check: () => boolean | Promise<boolean>, ms = WAIT_MS): Promise<void> {
  const deadline = performance.now() + ms;
  for (;;) {
    if (await check()) return;
    if (performance.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The demo table's rows as the page shows them. */
async function demoRows(page: Page): Promise<{ client: string; channel: string; priority: string; row: number; decision: string }[]> {
  return page.$$eval('#demo-table tbody tr', (trs) =>
    trs.map((tr) => {
      const d = (tr as HTMLElement).dataset;
      return { client: d['client'] ?? '', channel: d['channel'] ?? '', priority: d['priority'] ?? '', row: Number(d['row']), decision: d['decision'] ?? '' };
    }),
  );
}

describe('dashboard: §10.4 row texts', () => {
  it('each row text names the decision shedDecide returns for that row', () => {
    // One input that reaches each row, in the table's own terms.
    const { background, normal, elevated, critical } = Priority;
    const S = ChannelClass.STREAM;
    const T = ChannelClass.STATE;
    const E = ChannelClass.EVENT;
    const seg = StreamKind.segments;
    const smp = StreamKind.samples;
    const none = NO_STREAM_KIND;
    const witness: [number, number, number, number, boolean][] = [
      [0, normal, S, smp, false],
      [2, critical, T, none, false],
      [1, normal, S, smp, true],
      [1, normal, S, seg, false],
      [2, elevated, S, seg, false],
      [2, normal, S, seg, false],
      [1, background, S, smp, false],
      [1, background, T, none, false],
      [1, background, E, none, false],
      [1, normal, S, smp, false],
      [1, normal, T, none, false],
      [1, elevated, S, smp, false],
      [2, background, S, smp, false],
      [2, normal, S, smp, false],
      [2, elevated, S, smp, false],
    ];
    assert.equal(SHED_ROW_TEXT.length, 15);
    witness.forEach(([level, p, cls, kind, first], i) => {
      const packed = shedDecide(level, p, cls, kind, first);
      const text = SHED_ROW_TEXT[i]!;
      assert.equal(shedRow(packed), text.row, `witness ${i + 1} reaches row ${text.row}`);
      assert.equal(SHED_DECISION_NAME[shedDecision(packed)], text.decision, `row ${text.row}: ${text.condition}`);
    });
  });
});

describe('dashboard: the page in headless Chromium', function () {
  this.timeout(120000);
  let dash: Dashboard | null = null;
  let context: BrowserContext | null = null;
  let profile = '';
  let page: Page;

  before(async () => {
    needChromium();
    dash = await startDashboard({ scenario, port: 0, external: false });
    profile = mkdtempSync(join(tmpdir(), 'hub-dashboard-chromium-'));
    context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, viewport: { width: 1440, height: 900 } });
    page = await context.newPage();
    await page.goto(dash.url, { timeout: WAIT_MS });
  });

  after(async () => {
    if (context) await context.close();
    if (dash) await dash.close();
    if (profile) rmSync(profile, { recursive: true, force: true });
  });

  it('loads, connects to the live push and names the scenario', async () => {
    await page.waitForFunction(() => document.querySelector('#run-state')?.textContent === 'live', undefined, { timeout: WAIT_MS });
    assert.match((await page.textContent('#scenario')) ?? '', /scenario dashboard-test · seed 7/);
    assert.equal(await page.title(), 'Robot hub — simulator dashboard');
  });

  it('the §10.4 demo opens at the level the hub reads from the links (0 here), not at level 1', async () => {
    await page.waitForFunction(() => document.querySelector('#levels')?.getAttribute('data-source') === 'live', undefined, { timeout: WAIT_MS });
    const levels = dash!.live.sim.hub.sessions().map((s) => s.level);
    assert.deepEqual([...new Set(levels)], [0], 'every link is at level 0');
    assert.equal(await page.$eval('input[name="level"]:checked', (el) => (el as HTMLInputElement).value), '0');
    assert.match((await page.textContent('#demo-explain')) ?? '', /^Level 0 \(clear; the highest level the hub reads from the links now/);
  });

  it('at 1440×900 the "Pushes by table row" card is wide enough: its /s column inside the card, each row one line', async () => {
    await until('the rows table is filled', async () => (await page.locator('#rows-table tbody tr').count()) === 15);
    const card = await page.locator('#rows-card').boundingBox();
    const rate = await page.locator('#rows-table thead th', { hasText: '/s' }).boundingBox();
    assert.ok(card && rate, 'the card and its /s header are laid out');
    assert.ok(card.width >= 700, `the card is ${card.width} px wide`);
    assert.ok(rate.x + rate.width <= card.x + card.width, `the /s column ends at ${rate.x + rate.width}, inside the card's ${card.x + card.width}`);
    const overflow = await page.$eval('#rows-card', (el) => el.scrollWidth - el.clientWidth);
    assert.ok(overflow <= 0, `the card overflows by ${overflow} px`);
    // Row 6 (drop_source): its decision is a one-line label, not a tall red cell.
    const heights = await page.$$eval('#rows-table tbody tr', (trs) => trs.map((tr) => tr.getBoundingClientRect().height));
    for (const [i, ht] of heights.entries()) assert.ok(ht <= 24, `row ${i + 1} is ${ht} px tall`);
    const red = await page.locator('#rows-table tr[data-row="6"] td.decision .pill').boundingBox();
    assert.ok(red && red.height <= 20, `row 6's red label is ${JSON.stringify(red)}`);
    const cellBg = await page.$eval('#rows-table tr[data-row="6"] td.decision', (td) => getComputedStyle(td).backgroundColor);
    assert.notEqual(cellBg, 'rgb(197, 34, 31)', 'the cell itself is not filled red');
  });

  it('says in words what the totals, the owner’s ★ and the hub’s events mean', async () => {
    await until('the totals are shown', async () => /delivered \d+/.test((await page.textContent('#totals')) ?? ''));
    const totals = (await page.textContent('#totals')) ?? '';
    assert.match(totals, /· unsolicited GRANTs \d+$/);
    assert.ok(await page.isVisible('#totals-note'));
    assert.match((await page.textContent('#totals-note')) ?? '', /WELCOME are not among them/);
    assert.match((await page.textContent('#grants-table thead')) ?? '', /grants received \(WELCOME \+ GRANTs\)/);
    // The owner's ★ has a tooltip and a legend.
    await until('the console owns control', async () => (await page.locator('#grants-table .owner-star').count()) === 1);
    assert.match((await page.getAttribute('#grants-table .owner-star', 'title')) ?? '', /^control owner/);
    assert.match((await page.textContent('#grants-card h2')) ?? '', /★ the control owner/);
    // The hub's log codes in words.
    const log = (await page.$$eval('#log li', (lis) => lis.map((li) => li.textContent ?? ''))).join('\n');
    assert.match(log, /hub: session \d+ opened at (observer|operator|maintainer) tier \[session-open\]/);
    assert.doesNotMatch(log, /hub: session-open \d/);
  });

  it('plots the raw source and what a subscriber is delivered, growing as the simulation runs', async () => {
    const points = async (): Promise<number> => Number(await page.getAttribute('#plot-a', 'data-points'));
    await until('the IMU plot has points', async () => (await points()) > 0);
    const first = await points();
    await until('the IMU plot gains points', async () => (await points()) > first + 100);
    assert.equal(await page.inputValue('#plot-a-subscriber'), 'logger');
    assert.equal(await page.$eval('#plot-a-channel', (s) => (s as HTMLSelectElement).selectedOptions[0]?.textContent), 'imu');
    await until('the logger is delivered IMU samples', async () => Number(await page.getAttribute('#plot-a', 'data-delivered')) > 0);
    // uPlot drew into its canvas.
    assert.equal(await page.locator('#plot-a canvas').count(), 1);
  });

  it('a flat signal (odometry v of a robot never driven) gets a small y range around its value, not 0–100', async () => {
    assert.equal(await page.$eval('#plot-b-field', (s) => (s as HTMLSelectElement).selectedOptions[0]?.textContent), 'v (m/s)');
    const odom = catalog.byName('odom')!.id;
    const sim = dash!.live.sim;
    assert.equal(sim.robot.pose.v, 0, 'the test scenario never drives the robot');
    await until('the odometry plot has a y range', async () => (await page.getAttribute('#plot-b', 'data-ymax')) !== '' && Number(await page.getAttribute('#plot-b', 'data-points')) > 0);
    const lo = Number(await page.getAttribute('#plot-b', 'data-ymin'));
    const hi = Number(await page.getAttribute('#plot-b', 'data-ymax'));
    assert.ok(lo < 0 && hi > 0 && hi - lo <= 1, `v = 0 m/s is shown on [${lo}, ${hi}] (channel ${odom})`);
  });

  it('the plots pause, zoom by dragging, and export what they show as CSV', async () => {
    const shownTo = async (): Promise<number> => Number(await page.getAttribute('#plot-a', 'data-shown-to'));
    await until('the IMU plot draws', async () => (await shownTo()) > 0);
    // Pause freezes the plot while the simulation runs on; Resume follows it again.
    await page.click('#plot-a-pause');
    assert.equal(await page.getAttribute('#plot-a', 'data-paused'), 'true');
    assert.equal(await page.textContent('#plot-a-pause'), 'Resume');
    const frozen = await shownTo();
    const simAt = dash!.live.sim.nowMs;
    await until('the simulation runs on 500 ms', () => dash!.live.sim.nowMs > simAt + 500);
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(await shownTo(), frozen, 'a paused plot holds still');
    await page.click('#plot-a-pause');
    await until('the resumed plot follows the simulation', async () => (await shownTo()) > frozen + 0.3);

    // A drag across the plot zooms x into that range and holds it; Reset zoom returns to live.
    const over = await page.locator('#plot-a .u-over').boundingBox();
    assert.ok(over && over.width > 300, `the plot is ${over?.width} px wide at 1440×900`);
    const y = over.y + over.height / 2;
    // The last 3 s to 1 s of the window: data there however long the simulation has run.
    await page.mouse.move(over.x + over.width * 0.7, y);
    await page.mouse.down();
    await page.mouse.move(over.x + over.width * 0.85, y, { steps: 5 });
    await page.mouse.move(over.x + over.width * 0.9, y, { steps: 5 });
    await page.mouse.up();
    await until('the plot is zoomed', async () => (await page.getAttribute('#plot-a', 'data-zoomed')) === 'true');
    assert.ok(await page.isVisible('#plot-a-reset'));
    const zoomedTo = await shownTo();
    // The CSV holds the zoomed range only: a fifth of the 10 s window at most.
    const [download] = await Promise.all([page.waitForEvent('download', { timeout: WAIT_MS }), page.click('#plot-a-csv')]);
    assert.equal(download.suggestedFilename(), 'imu-ax-logger.csv');
    const path = await download.path();
    const csv = (await import('node:fs')).readFileSync(path!, 'utf8').trim().split('\n');
    assert.equal(csv[0], 't (s),raw ax (m/s^2),delivered to logger ax (m/s^2),gap');
    assert.ok(csv.length > 20, `${csv.length - 1} rows`);
    const ts = csv.slice(1).map((l) => Number(l.split(',')[0]));
    assert.ok(ts.every((t) => Number.isFinite(t)), 'every row has a time');
    const width = (ts[ts.length - 1] as number) - (ts[0] as number);
    assert.ok(width > 0.5 && width <= 2.1, `the zoomed CSV spans ${width} s of the 10 s window`);
    assert.ok(csv.slice(1).every((l) => /^-?[\d.]+,(-?[\d.e-]+)?,(-?[\d.e-]+)?,[01]?$/.test(l)), csv.slice(1, 4).join(' | '));
    assert.equal(await shownTo(), zoomedTo, 'a zoomed plot holds still');
    await page.click('#plot-a-reset');
    assert.equal(await page.getAttribute('#plot-a', 'data-zoomed'), 'false');
    await until('the plot follows the simulation again', async () => (await shownTo()) > zoomedTo + 0.3);
  });

  it('the level control drives shedDecide over the live mix: level 0 sends everything, level 2 sheds by the table', async () => {
    await until('every client has its subscriptions in the demo', async () => {
      const rows = await demoRows(page);
      return rows.some((r) => r.client === 'planview' && r.channel === 'path') && rows.some((r) => r.client === 'logger' && r.channel === 'imu');
    });
    await page.check('#level-0');
    const at0 = await demoRows(page);
    assert.ok(at0.length >= 10, `${at0.length} subscriptions shown`);
    for (const r of at0) assert.deepEqual([r.row, r.decision], [1, 'send'], `${r.client} ${r.channel} at level 0`);

    await page.check('#level-2');
    const at2 = await demoRows(page);
    const find = (client: string, channel: string): { priority: string; row: number; decision: string } => {
      const r = at2.find((x) => x.client === client && x.channel === channel);
      assert.ok(r, `${client} ${channel} is shown`);
      return { priority: r.priority, row: r.row, decision: r.decision };
    };
    assert.deepEqual(find('logger', 'imu'), { priority: 'background', row: 13, decision: 'drop' });
    assert.deepEqual(find('scope', 'imu'), { priority: 'elevated', row: 15, decision: 'decimate2' });
    assert.deepEqual(find('planview', 'path'), { priority: 'elevated', row: 5, decision: 'send' });
    assert.deepEqual(find('viewer', 'path'), { priority: 'normal', row: 6, decision: 'drop_source' });
    assert.deepEqual(find('viewer', 'odom'), { priority: 'normal', row: 14, decision: 'decimate4' });
    // The samples-vs-segments panel: a samples stream decimates, a segments stream never does.
    const kinds = await page.$$eval('#kind-table tbody tr', (trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent)));
    assert.deepEqual(kinds, [
      ['background', 'row 13: drop', 'row 6: drop_source'],
      ['normal', 'row 14: decimate4', 'row 6: drop_source'],
      ['elevated', 'row 15: decimate2', 'row 5: send'],
    ]);
    assert.match((await page.textContent('#why')) ?? '', /never decimated/);
    // What each decision does to each class: a STATE at decimate4 and an EVENT at decimate2.
    const effectOf = async (client: string, channel: string): Promise<[string, string]> => {
      const tr = page.locator(`#demo-table tbody tr[data-client="${client}"][data-channel="${channel}"]`);
      return [(await tr.getAttribute('data-decision')) ?? '', ((await tr.locator('td.effect').textContent()) ?? '').trim()];
    };
    assert.deepEqual(await effectOf('console', 'battery'), ['decimate4', 'every 4th value sent (the newest), the rest dropped: the client holds the last value 4× longer']);
    assert.deepEqual(await effectOf('console', 'fault'), ['decimate2', 'no effect: events are queued and sent in full; only drop sheds an event']);
    assert.deepEqual(await effectOf('viewer', 'path'), ['drop_source', 'the whole source dropped; the next segment sent carries gap']);
    const matrix = await page.$$eval('#effect-table tr', (trs) => trs.map((tr) => [...tr.querySelectorAll('th, td')].map((c) => (c.textContent ?? '').trim())));
    assert.deepEqual(matrix[0], ['decision', 'STREAM samples', 'STREAM segments', 'STATE', 'EVENT']);
    assert.deepEqual(matrix.slice(1).map((r) => r[0]), ['send', 'decimate4', 'decimate2', 'conflate', 'drop', 'drop_source']);
    assert.ok(await page.isVisible('#effect-table'));

    await page.check('#level-1');
    assert.deepEqual((await demoRows(page)).find((x) => x.client === 'viewer' && x.channel === 'path')?.decision, 'send');
  });

  it('shows the hub’s health: the ladder rung, admission, and the metrics v1 report with the live counters', async () => {
    await until('the health card is filled', async () => /^rung \d — /.test((await page.textContent('#health-rung')) ?? ''));
    assert.match((await page.textContent('#health-rung')) ?? '', /^rung 0 — calm$/);
    assert.equal(await page.textContent('#health-admission'), 'open');
    await page.click('#health-card summary');
    await until('the report is shown', async () => ((await page.textContent('#health-json')) ?? '').includes('"version": 1'));
    const report = JSON.parse((await page.textContent('#health-json')) ?? '{}') as { metrics?: { pushes?: { rows?: number[] } } };
    const rows = report.metrics?.pushes?.rows ?? [];
    assert.ok(rows.length > 0 && (rows[0] ?? 0) > 0, `row 1 pushes counted in the report: ${JSON.stringify(rows).slice(0, 80)}`);
  });

  it('forcing the level onto the links moves the hub’s live row counters', async () => {
    const live = dash!.live;
    await page.check('#level-2');
    const rows = live.sim.hub.counters.rows;
    const before13 = rows[13] as number;
    const before15 = rows[15] as number;
    const forcedAt = live.sim.nowMs;
    await page.check('#force');
    await until('the server forces level 2', () => live.forced === 2);
    await until('row 13 (level ≥ 2, background: drop) fires', () => (rows[13] as number) > before13 + 20);
    await until('row 15 (level ≥ 2, elevated: decimate2) fires', () => (rows[15] as number) > before15 + 20);
    await until('the page counts row 13', async () => Number(await page.textContent('#rows-table tr[data-row="13"] .count')) > 0);
    await until('the hub reads level 2 on the sessions’ links', () => live.sim.hub.sessions().every((s) => s.level === 2));
    // The ladder stays calm, and the page says why: it reads the hub's own load, not the links.
    assert.equal(live.sim.hub.ladder.rung, 0);
    await until('the health card explains the calm ladder', async () => /links at level 2 \(forced\)/.test((await page.textContent('#health-rung-why')) ?? ''));
    assert.match((await page.textContent('#health-rung-why')) ?? '', /^The ladder reads the hub's own load .*not the links' congestion levels/);
    assert.ok(await page.isVisible('#health-rung-why'));
    // A page opened now opens its §10.4 demo at the level the links are at (2, forced), not at 0.
    const second = await context!.newPage();
    try {
      await second.goto(dash!.url, { timeout: WAIT_MS });
      await second.waitForFunction(() => document.querySelector('#levels')?.getAttribute('data-source') === 'live', undefined, { timeout: WAIT_MS });
      assert.equal(await second.$eval('input[name="level"]:checked', (el) => (el as HTMLInputElement).value), '2');
      assert.match((await second.textContent('#demo-explain')) ?? '', /^Level 2 \(severe \(≥ 2\); the level forced onto every link now\)/);
    } finally {
      await second.close();
    }
    // Level 2 drops the background logger's IMU (row 13): nothing is delivered to it meanwhile.
    const breakXs = async (): Promise<number[]> => ((await page.getAttribute('#plot-a', 'data-break-xs')) ?? '').split(' ').filter((x) => x !== '').map(Number);
    const from = live.sim.nowMs;
    await until('1.5 s of forced level 2', () => live.sim.nowMs > from + 1500);
    const inHole = (x: number): boolean => x > forcedAt / 1000 - 0.5 && x < live.sim.nowMs / 1000 + 2;
    assert.deepEqual((await breakXs()).filter(inHole), [], 'no break in the line before delivery resumes');
    await page.uncheck('#force');
    await until('the links are back to their own levels', () => live.forced === null);
    // Delivery resumes: the delivered line, as uPlot holds it, breaks (a null) inside the hole
    // instead of bridging it.
    await until('the logger’s IMU line breaks across the hole', async () => (await breakXs()).some(inHole));
  });

  it('the delivered line also breaks before a sample that carries gap, across a hole too short to break it alone', async () => {
    const live = dash!.live;
    const sim = live.sim;
    const path = catalog.byName('path')!.id;
    assert.equal(sim.hub.armed, true, 'the console armed the robot (800 ms)');
    // The console plans faster than its 5 Hz grant (the scenario event the simulator runs), so the
    // robot relays a segment on `path` every 200 ms, which the viewer subscribes at normal priority.
    (sim as unknown as { apply(e: EventSpec): void }).apply({ atMs: 0, type: 'trajectory', client: 'console', durationMs: 20000, meanPerS: 20, peakEveryMs: 0, peakCount: 0 });
    await page.selectOption('#plot-b-channel', String(path));
    await page.selectOption('#plot-b-subscriber', 'viewer');
    await until('the viewer is delivered path segments', async () => Number(await page.getAttribute('#plot-b', 'data-delivered')) > 5);
    const rows = sim.hub.counters.rows;
    const before6 = rows[6] as number;
    // Level 2 for 400 ms of simulated time, scheduled on the simulation's own clock: the viewer's
    // path is dropped whole (row 6) and the next segment sent to it carries gap. The hole, under
    // 1 s, is too short to break the line by itself (ten granted periods, at least 1 s).
    const fromMs = sim.nowMs + 50;
    const toMs = fromMs + 400;
    sim.kernel.at(Math.round(fromMs * 1000), { run: () => live.force(2) });
    sim.kernel.at(Math.round(toMs * 1000), { run: () => live.force(null) });
    await until('the forced 400 ms are over', () => sim.nowMs > toMs + 50 && live.forced === null);
    assert.ok((rows[6] as number) > before6, 'row 6 dropped the path source meanwhile');
    const breakXs = async (): Promise<number[]> => ((await page.getAttribute('#plot-b', 'data-break-xs')) ?? '').split(' ').filter((x) => x !== '').map(Number);
    await until('the viewer’s path line breaks at the gap', async () => (await breakXs()).some((x) => x > fromMs / 1000 - 0.3 && x < toMs / 1000 + 0.5));
  });

  it('ESTOP on the page latches the hub and stops the simulated robot', async () => {
    const sim = dash!.live.sim;
    assert.equal(sim.robot.isStopped, false, 'the robot runs before the press');
    assert.equal(sim.hub.latch.latched, false);
    assert.equal(await page.getAttribute('#latch', 'data-latched'), 'false');
    assert.equal(await page.isVisible('#estop-banner'), false, 'no banner while nothing is latched');
    assert.equal(await page.textContent('#clear-why'), 'Clear is disabled: nothing is latched.');
    await page.click('#estop');
    await until('the hub latches', () => sim.hub.latch.latched);
    await until('the robot stops', () => sim.robot.isStopped);
    await page.waitForFunction(() => document.querySelector('#latch')?.getAttribute('data-latched') === 'true', undefined, { timeout: WAIT_MS });
    await page.waitForFunction(() => document.querySelector('#robot-state')?.getAttribute('data-stopped') === 'true', undefined, { timeout: WAIT_MS });
    assert.match((await page.textContent('#latch')) ?? '', /LATCHED \(source: hub-button/);
    // A page-wide banner at 1440×900 names what latched it, in view without scrolling.
    await page.evaluate(() => window.scrollTo(0, 400));
    const box = await page.locator('#estop-banner').boundingBox();
    assert.ok(box && box.width >= 1400 && box.height >= 30 && box.y >= 0 && box.y < 10, `the banner spans the page at its top: ${JSON.stringify(box)}`);
    assert.equal(await page.getAttribute('#estop-banner', 'data-source'), 'hub-button');
    assert.match((await page.textContent('#estop-banner')) ?? '', /ESTOP LATCHED — latched by hub-button: the hub's own ESTOP button/);
    await page.evaluate(() => window.scrollTo(0, 0));
    assert.equal(sim.robot.stats.stops, 1);
    // The latch holds: the robot stays stopped.
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(sim.robot.isStopped, true);
  });

  it('Restart runs the scenario again on a fresh hub that keeps the latch, and the page follows it', async () => {
    const before = dash!.live;
    assert.equal(before.sim.hub.latch.latched, true, 'still latched from the ESTOP case');
    await page.click('#restart');
    await until('a new simulation runs', () => dash!.live !== before && dash!.live.run === 2);
    // The latch lives in the hub's Store, which the new run reads: a restart never clears it.
    assert.equal(dash!.live.sim.hub.latch.latched, true);
    await page.waitForFunction(() => /run 2/.test(document.querySelector('#scenario')?.textContent ?? ''), undefined, { timeout: WAIT_MS });
    await page.waitForFunction(() => document.querySelector('#latch')?.getAttribute('data-latched') === 'true' && document.querySelector('#robot-state')?.getAttribute('data-stopped') === 'true', undefined, {
      timeout: WAIT_MS,
    });
  });

  it('Clear leaves the hub disarmed (§11.2) and Arm, sent by the control owner, arms it', async () => {
    const live = dash!.live;
    // Past the script's own arm (800 ms), which the latch refused.
    await until('the console owns control and the scripted arm is past', () => live.clearer()?.name === 'console' && live.sim.nowMs > 1000);
    await page.waitForFunction(() => !(document.querySelector('#clear') as HTMLButtonElement | null)?.disabled, undefined, { timeout: WAIT_MS });
    assert.match((await page.textContent('#estop-banner')) ?? '', /console, the control owner, may clear/);
    await page.click('#clear');
    await until('the hub clears', () => !live.sim.hub.latch.latched);
    await page.waitForFunction(() => (document.querySelector('#estop-banner') as HTMLElement | null)?.hidden === true, undefined, { timeout: WAIT_MS });
    assert.equal(live.sim.hub.armed, false, 'a clear never restarts the robot');
    await page.waitForFunction(() => /disarmed/.test(document.querySelector('#latch')?.textContent ?? ''), undefined, { timeout: WAIT_MS });
    await page.waitForFunction(() => !(document.querySelector('#arm') as HTMLButtonElement | null)?.disabled, undefined, { timeout: WAIT_MS });
    await page.click('#arm');
    await until('the owner\'s arm intent arms the hub', () => live.sim.hub.armed);
    await page.waitForFunction(() => /clear · armed/.test(document.querySelector('#latch')?.textContent ?? ''), undefined, { timeout: WAIT_MS });
  });

  it('a client’s ESTOP: the banner names the client, and says why Clear is disabled while nobody owns control', async () => {
    const live = dash!.live;
    // The scenario events the simulator runs: the viewer stops the robot, the console lets go of control.
    const run = (e: EventSpec): void => (live.sim as unknown as { apply(e: EventSpec): void }).apply(e);
    run({ atMs: 0, type: 'estop', client: 'viewer' });
    await until('the hub latches', () => live.sim.hub.latch.latched);
    await page.waitForFunction(() => document.querySelector('#estop-banner')?.getAttribute('data-source') === 'client', undefined, { timeout: WAIT_MS });
    assert.match((await page.textContent('#estop-banner')) ?? '', /ESTOP LATCHED — latched by client: viewer sent ESTOP\./);
    run({ atMs: 0, type: 'release-control', client: 'console' });
    await until('nobody owns control', () => live.clearer() === null && live.sim.hub.owner === null);
    await page.waitForFunction(() => (document.querySelector('#clear') as HTMLButtonElement | null)?.disabled === true && /no simulated client owns control/.test(document.querySelector('#clear-why')?.textContent ?? ''), undefined, {
      timeout: WAIT_MS,
    });
    assert.equal(await page.textContent('#clear-why'), 'Clear is disabled: only the control owner may clear (§11.2), and no simulated client owns control now.');
    assert.match((await page.textContent('#estop-banner')) ?? '', /Clear is disabled: only the control owner may clear/);
  });
});

/** `node build/host-sim/main.js ARGS`, its output collected; resolves once it prints that it serves. */
class Main {
  readonly child: ChildProcess;
  out = '';
  /** Its own state file (the hub's Store), never the default one under the OS temp dir. */
  readonly stateDir = mkdtempSync(join(tmpdir(), 'hub-main-state-'));
  constructor(args: readonly string[]) {
    this.child = spawn(process.execPath, [join(repo, 'build/host-sim/main.js'), ...args, '--state', join(this.stateDir, 'state.json')], { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] });
    this.child.stdout!.on('data', (b: Buffer) => (this.out += b.toString()));
    this.child.stderr!.on('data', (b: Buffer) => (this.out += b.toString()));
  }
  async serving(): Promise<{ url: string; port: number }> {
    await until('main prints that it serves', () => /serving \d+ ms after start/.test(this.out) || this.child.exitCode !== null);
    const m = /dashboard\s+(http:\/\/127\.0\.0\.1:(\d+)\/)/.exec(this.out);
    assert.ok(m, this.out);
    return { url: m[1]!, port: Number(m[2]) };
  }
  tcpPort(): number {
    const m = /hub over TCP\s+127\.0\.0\.1:(\d+)/.exec(this.out);
    assert.ok(m, this.out);
    return Number(m[1]);
  }
  /** SIGINT, then the exit code (bounded). */
  async interrupt(): Promise<number | null | 'timeout'> {
    const exited = new Promise<number | null>((ok) => this.child.once('exit', (code) => ok(code)));
    this.child.kill('SIGINT');
    let timer: ReturnType<typeof setTimeout> | undefined;
    const code = await Promise.race([exited, new Promise<'timeout'>((ok) => (timer = setTimeout(() => ok('timeout'), 10000)))]);
    clearTimeout(timer);
    return code;
  }
  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL');
    rmSync(this.stateDir, { recursive: true, force: true });
  }
}

function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const t = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what}: not within ${ms} ms`)), ms)));
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

describe('dashboard: npm start (build/host-sim/main.js) as a child process', function () {
  this.timeout(60000);
  const mains: Main[] = [];
  let blocker: net.Server | null = null;
  let client: HubClient | null = null;

  after(async () => {
    if (client) client.close();
    for (const m of mains) m.kill();
    if (blocker) await new Promise<void>((ok) => blocker!.close(() => ok()));
  });

  it('runs the default scenario, serves the bundled page on a free port when its own is taken, and exits 0 on SIGINT', async () => {
    // Hold a port so that --port finds it taken.
    blocker = net.createServer();
    await new Promise<void>((ok) => blocker!.listen(0, '127.0.0.1', () => ok()));
    const takenPort = (blocker.address() as net.AddressInfo).port;
    const main = new Main(['--port', String(takenPort), '--tcp-port', '0', '--ws-port', '0']);
    mains.push(main);
    const { url, port } = await main.serving();
    assert.notEqual(port, takenPort);
    assert.match(main.out, new RegExp(`port ${takenPort} was taken`));
    assert.match(main.out, /scenario default, seed 1, 60 s scripted, in real time/);
    assert.match(main.out, /hub over TCP\s+127\.0\.0\.1:\d+/);
    assert.match(main.out, /hub over WS\s+ws:\/\/127\.0\.0\.1:\d+\//);

    const html = await (await fetch(url)).text();
    assert.match(html, /<script type="module" src="\/app.js">/);
    const js = await fetch(new URL('/app.js', url));
    assert.equal(js.status, 200);
    assert.ok((await js.arrayBuffer()).byteLength > 10000, 'the bundle carries uPlot and the page');
    const css = await (await fetch(new URL('/style.css', url))).text();
    assert.match(css, /\.uplot/, "uPlot's CSS is bundled in");
    const state = (await (await fetch(new URL('/api/state', url))).json()) as { scenario: { name: string }; simMs: number };
    assert.equal(state.scenario.name, 'default');

    assert.equal(await main.interrupt(), 0, main.out);
    assert.match(main.out, /SIGINT: stopping at/);
  });

  it('--health-port N: health over HTTP listens there, and the printout names it', async () => {
    const probe = net.createServer();
    await new Promise<void>((ok) => probe.listen(0, '127.0.0.1', () => ok()));
    const free = (probe.address() as net.AddressInfo).port;
    await new Promise<void>((ok) => probe.close(() => ok()));
    const main = new Main(['--scenario', 'calm', '--port', '0', '--tcp-port', '0', '--ws-port', '0', '--health-port', String(free)]);
    mains.push(main);
    await main.serving();
    assert.match(main.out, new RegExp(`health over HTTP http://127\\.0\\.0\\.1:${free}/health`));
    const res = await fetch(`http://127.0.0.1:${free}/health`);
    assert.ok(res.status === 200 || res.status === 503, `GET /health: ${res.status}`);
    await res.arrayBuffer();
    assert.equal(await main.interrupt(), 0, main.out);
  });

  it('takes an external client over loopback TCP into the hub the simulated clients use', async () => {
    // calm leaves session slots free (default fills all eight).
    const main = new Main(['--scenario', 'calm', '--port', '0', '--tcp-port', '0', '--ws-port', '0']);
    mains.push(main);
    const { url } = await main.serving();
    const imu = catalog.byName('imu')!.id;
    let frames = 0;
    client = await within(
      connectTcp('127.0.0.1', main.tcpPort(), {
        name: 'external-test',
        subscriptions: [{ channelId: imu, wishedRateHz: 20 }],
        onData: (ch) => {
          if (ch === imu) frames++;
        },
      }),
      WAIT_MS,
      'the external client connects',
    );
    await until('the external client receives IMU samples', () => frames >= 5);
    type Snapshot = { sessions: { id: number; client: string | null; binding: string; subs: { channel: number }[] }[] };
    const state = (await (await fetch(new URL('/api/state', url))).json()) as Snapshot;
    // The external session is the one its WELCOME named; a simulated client's may still show no name.
    const external = state.sessions.filter((s) => s.id === client!.sessionId);
    assert.equal(external.length, 1, JSON.stringify(state.sessions.map((s) => [s.client, s.binding])));
    assert.equal(external[0]!.binding, 'tcp');
    assert.ok(external[0]!.subs.some((s) => s.channel === imu));
    assert.ok(state.sessions.some((s) => s.client === 'console'), 'the simulated clients share the hub');
    client.close();
    client = null;
    assert.equal(await main.interrupt(), 0, main.out);
  });
});
