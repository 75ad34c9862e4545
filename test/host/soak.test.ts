// The faulted simulation soak (issue 7 item 2) inside npm test: a fixed range of seeds of random
// scenarios (host-sim/random-scenario.ts), each run with every invariant checked after every
// instant; a failure names the commands that replay it. Also: the generator's range of faults, and
// that each check the soak adds (host-sim/invariants.ts) does fire when what it guards breaks.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadCatalog } from '../../catalog/index.js';
import { DEFAULT_CATALOG } from '../../catalog/default.js';
import { FrameType, peekFrameType } from '../../hub/frames.js';
import type { HubFootprint } from '../../hub/hub.js';
import { MAX_LOSS, randomScenario, randomScenarioDoc } from '../../host-sim/random-scenario.js';
import { INVARIANTS } from '../../host-sim/report.js';
import { validateScenario } from '../../host-sim/scenario.js';
import { Simulation, type SimHooks } from '../../host-sim/sim.js';
import { describeFailure, replayCommand, runSeed, summarize, writeReplayFile, type SeedResult } from '../../host-sim/soak.js';

const catalog = loadCatalog(DEFAULT_CATALOG);
const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

/** The seeds npm test runs (docs/performance.md "Simulator"); `node scripts/soak.mjs` runs 1..1000. */
export const TEST_SEEDS = Object.freeze({ from: 1, count: 100 });

type Doc = Record<string, unknown> & { events: Record<string, unknown>[]; clients: Record<string, unknown>[]; links: Record<string, Record<string, unknown>> };

describe('soak: the random scenario generator', () => {
  it('gives the same valid scenario for the same seed and another for another seed', () => {
    assert.deepEqual(randomScenarioDoc(42), randomScenarioDoc(42));
    assert.notDeepEqual(randomScenarioDoc(42), randomScenarioDoc(43));
    const s = randomScenario(42, catalog);
    assert.equal(s.seed, 42);
    assert.equal(s.name, 'soak-42');
  });

  it(`draws every kind of fault over seeds ${TEST_SEEDS.from}..${TEST_SEEDS.from + TEST_SEEDS.count - 1}, loss never above 50 %`, () => {
    const types = new Map<string, number>();
    let crossBinding = 0;
    let maxLoss = 0;
    let roles = new Set<string>();
    const bindings = new Set<string>();
    for (let seed = TEST_SEEDS.from; seed < TEST_SEEDS.from + TEST_SEEDS.count; seed++) {
      const doc = randomScenarioDoc(seed) as Doc;
      validateScenario(doc, catalog);
      const linkOf = new Map(doc.clients.map((c) => [c['name'] as string, c['link'] as string]));
      for (const c of doc.clients) roles = roles.add(c['role'] as string);
      for (const l of Object.values(doc.links)) bindings.add(l['binding'] as string);
      for (const e of doc.events) {
        const type = e['type'] as string;
        types.set(type, (types.get(type) ?? 0) + 1);
        if (type === 'loss') maxLoss = Math.max(maxLoss, e['rate'] as number);
        if (type === 'reconnect') {
          const from = doc.links[linkOf.get(e['client'] as string) as string]?.['binding'];
          if (from !== doc.links[e['link'] as string]?.['binding']) crossBinding++;
        }
      }
    }
    for (const t of ['loss', 'stall', 'partition', 'disconnect', 'reconnect', 'join-storm', 'flood', 'button', 'estop', 'estop-clear', 'take-control', 'cmd-vel', 'trajectory']) {
      assert.ok((types.get(t) ?? 0) > 0, `no ${t} event in the range`);
    }
    assert.ok(crossBinding >= 10, `${crossBinding} reconnects across bindings`);
    assert.ok(maxLoss <= MAX_LOSS && maxLoss >= 0.4, `largest loss ${maxLoss}`);
    assert.deepEqual([...bindings].sort(), ['ble', 'espnow', 'tcp', 'ws']);
    assert.deepEqual([...roles].sort(), ['console', 'flooder', 'joystick', 'logger', 'planner', 'scope', 'viewer']);
  });
});

describe(`soak: seeds ${TEST_SEEDS.from}..${TEST_SEEDS.from + TEST_SEEDS.count - 1}, every invariant after every instant`, function () {
  this.timeout(60000);
  const results: SeedResult[] = [];
  for (let seed = TEST_SEEDS.from; seed < TEST_SEEDS.from + TEST_SEEDS.count; seed++) {
    it(`seed ${seed}`, async () => {
      const r = await runSeed(seed, catalog);
      results.push(r);
      if (!r.ok) {
        const replay = writeReplayFile(seed);
        assert.fail(`invariant violated\n${describeFailure(r, replay)}`);
      }
      assert.deepEqual(r.violations, []);
    });
  }

  // Seeds of the 1,000-seed soak that once failed, kept as regressions: 334 and 539 hung the
  // simulated ESP-NOW peer on a microsecond clock; 781, 860 and 941 lost an ESTOP to the peer's
  // duplicate window after the binding re-admitted it with its sequence restarted at 0; 1215 (of
  // seeds 1001..2000) lost an ESTOP whose resends all failed while its ESP-NOW peer was stalled;
  // 2207 refused a resume whose previous WELCOME was lost with its transport; 2527 counted an ESTOP
  // as missed on a lossy BLE link whose medium went silent 317 ms after the write; 20212 judged an
  // ESTOP written on a BLE link 3.5 ms after a partition healed, while the notification the
  // partition failed last still waited out the binding's 20 ms retry pause ahead of it.
  for (const seed of [334, 539, 781, 860, 941, 1215, 2207, 2527, 20212]) {
    it(`regression seed ${seed}`, async () => {
      const r = await runSeed(seed, catalog);
      if (!r.ok) assert.fail(`invariant violated\n${describeFailure(r, writeReplayFile(seed))}`);
      assert.deepEqual(r.violations, []);
    });
  }

  it('exercised what the faults are for: parks, stale and resumed sessions, reclaims, ESTOPs and samples judged against their bounds, level 2, shedding', () => {
    assert.equal(results.length, TEST_SEEDS.count);
    const s = summarize(TEST_SEEDS.from, results, 0);
    const x = s.exercised;
    for (const k of ['parks', 'stale', 'resumes', 'reclaims', 'estops', 'estopDeliveriesJudged', 'samplesJudged', 'grantsAnnounced', 'decimated', 'shedDrops', 'level2Links', 'malformedCloses', 'noSlots']) {
      assert.ok((x[k] ?? 0) > 0, `${k}: ${x[k]} over ${TEST_SEEDS.count} seeds`);
    }
    assert.deepEqual(Object.keys(s.byInvariant), [...INVARIANTS]);
  });
});

describe('soak: replay and the command line', function () {
  this.timeout(120000);

  it('a failure names both replay commands, and the scenario file replays the seed', () => {
    const replay = writeReplayFile(7);
    const fake: SeedResult = {
      seed: 7,
      ok: false,
      violations: [{ check: 'criticalShed', count: 1, examples: [{ tMs: 5, link: 'a#1', channel: 'safety', detail: 'seq 3 after 1' }] }],
      simulatedMs: 0,
      kernelEvents: 0,
      wallMs: 0,
      exercised: {},
    };
    const text = describeFailure(fake, replay);
    assert.match(text, /^seed 7: criticalShed ×1/);
    assert.ok(text.includes(replayCommand(7)) && replayCommand(7) === 'node scripts/soak.mjs --count 1 --from 7');
    assert.ok(text.includes(`npm run -s sim -- --scenario-file ${replay.file} --json`));
    assert.deepEqual(JSON.parse(readFileSync(replay.file, 'utf8')), randomScenarioDoc(7));
  });

  it('the simulator CLI on the written scenario gives the report the soak judged', async () => {
    const replay = writeReplayFile(3);
    const cli = join(repo, 'build', 'host-sim', 'cli.js');
    const res = spawnSync(process.execPath, [cli, '--scenario-file', replay.file, '--json'], { encoding: 'utf8' });
    assert.equal(res.status, 0, res.stderr);
    const r = JSON.parse(res.stdout);
    const mine = await runSeed(3, catalog);
    assert.equal(r.scenario.seed, 3);
    assert.equal(r.run.kernelEvents, mine.kernelEvents, 'the same run, event for event');
    assert.equal(r.ok, mine.ok);
  });

  it('node scripts/soak.mjs --count 2 --from 5 --json prints one summary', () => {
    const res = spawnSync(process.execPath, [join(repo, 'scripts', 'soak.mjs'), '--count', '2', '--from', '5', '--json'], { cwd: repo, encoding: 'utf8' });
    assert.equal(res.status, 0, res.stderr);
    const lines = res.stdout.trim().split('\n');
    assert.equal(lines.length, 1);
    const s = JSON.parse(lines[0] as string);
    assert.equal(s.from, 5);
    assert.equal(s.count, 2);
    assert.equal(s.passed, 2);
    assert.deepEqual(s.failed, []);
    assert.match(res.stderr, /soak: 2\/2 seeds \(5\.\.6\), 0 failed/);
    const bad = spawnSync(process.execPath, [join(repo, 'scripts', 'soak.mjs'), '--count', 'x'], { cwd: repo, encoding: 'utf8' });
    assert.equal(bad.status, 2);
  });
});

// ---------------------------------------------------------------------------------------------
// Each added check fires when what it guards is broken (host-sim/invariants.ts).

const TWO_SCOPES = {
  name: 'two-scopes',
  durationMs: 3000,
  seed: 1,
  hub: { capacityHz: 100 },
  credentials: { 'operator-key': 'operator' },
  links: { wifi: { binding: 'tcp' } },
  clients: [
    { name: 'a', role: 'scope', link: 'wifi', credential: 'operator-key' },
    { name: 'b', role: 'scope', link: 'wifi', credential: 'operator-key', startMs: 1000 },
  ],
  events: [{ atMs: 2000, type: 'button', held: true }],
};

async function runWith(hooks: SimHooks, tamper?: (sim: Simulation) => Promise<void>): Promise<Record<string, { count: number; examples: { detail: string }[] }>> {
  const sim = new Simulation(validateScenario(TWO_SCOPES, catalog), { hooks });
  if (tamper) await tamper(sim);
  const r = await sim.run();
  return r['invariants'] as Record<string, { count: number; examples: { detail: string }[] }>;
}

function counts(inv: Record<string, { count: number }>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(inv)) if (v.count > 0) out[k] = v.count;
  return out;
}

describe('soak: the added checks fire when what they guard breaks', function () {
  this.timeout(60000);

  it('untouched, the two-scope run holds every invariant (and the second join re-grants the first)', async () => {
    let grants = 0;
    const inv = await runWith({
      onTap: (tap) => {
        const send = tap.send.bind(tap);
        tap.send = (f, tag, seq) => {
          if (tap.id === 'a#1' && peekFrameType(f, 0, f.length) === FrameType.GRANT) grants++;
          return send(f, tag, seq);
        };
      },
    });
    assert.deepEqual(counts(inv), {});
    assert.ok(grants > 0, 'the first scope was sent a GRANT');
  });

  it('grantUnannounced: a GRANT the hub hands over that never reaches the link or the client', async () => {
    const inv = await runWith({
      onTap: (tap) => {
        const send = tap.send.bind(tap);
        tap.send = (f, tag, seq) => {
          // Taken, as far as the hub can tell, and never passed on.
          if (tap.id === 'a#1' && peekFrameType(f, 0, f.length) === FrameType.GRANT) return true;
          return send(f, tag, seq);
        };
      },
    });
    assert.ok((inv['grantUnannounced']?.count ?? 0) > 0, JSON.stringify(counts(inv)));
    assert.match(inv['grantUnannounced']?.examples[0]?.detail ?? '', /session 1: hub grants \[.*\], last announced \[/);
  });

  it('estopNotWritten: an ACTIVE session whose link is skipped by the write-ahead', async () => {
    const inv = await runWith({
      onTap: (tap) => {
        if (tap.id === 'b#1') tap.writeAhead = () => undefined;
      },
    });
    assert.equal(inv['estopNotWritten']?.count, 1, JSON.stringify(counts(inv)));
  });

  it('parkedNotResumable: a STALE session closed before its TTL without slot pressure', async () => {
    const inv = await runWith({}, async (sim) => {
      await sim.step(500);
      sim.log.push({ tMs: 500, code: 'session-stale', a: 77, b: undefined });
      await sim.step(600);
      sim.log.push({ tMs: 600, code: 'session-close', a: 77, b: 4 });
    });
    assert.equal(inv['parkedNotResumable']?.count, 1, JSON.stringify(counts(inv)));
    assert.match(inv['parkedNotResumable']?.examples[0]?.detail ?? '', /STALE since 500 ms, closed at 600 ms/);
  });

  it('heapUnbounded: a footprint outside the bounds fixed by the config', async () => {
    const inv = await runWith({}, async (sim) => {
      await sim.step(1500);
      const real = sim.hub.footprint.bind(sim.hub);
      sim.hub.footprint = (): HubFootprint => ({ ...real(), neverShedBytes: sim.hub.config.slots * sim.hub.config.neverShedBytes + 1 });
    });
    assert.equal(inv['heapUnbounded']?.count, 1, JSON.stringify(counts(inv)));
  });
});
