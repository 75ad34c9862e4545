// The Python client (clients/python, package robot_hub) inside `npm test`: its pytest suite runs
// with Debian's python3 against the simulator served on loopback (TCP and WebSocket, as
// `npm start` serves it, with no simulated clients of its own so that control is free), and
// against the conformance vectors. Each pytest case is one case here, so the totals line
// counts them; a case pytest did not report as passed (failed, errored, skipped) fails here
// with pytest's own words. scripts/lib/prepare.mjs installs the Debian packages when missing.
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadCatalog } from '../../catalog/index.js';
import { DEFAULT_CATALOG } from '../../catalog/default.js';
import { startDashboard, type Dashboard } from '../../host-sim/dashboard/server.js';
import { loadNamedScenario } from '../../host-sim/scenario.js';
import { Nack } from '../../hub/nack.js';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const pkg = join(repo, 'clients', 'python');
/** Debian's interpreter, where apt puts python3-cbor2 and the rest (another python3 may come first on PATH). */
const PYTHON = '/usr/bin/python3';
const PYTEST_ARGS = ['-m', 'pytest', 'tests', '-p', 'no:cacheprovider'];
const ENV = { ...process.env, PYTHONPATH: pkg, PYTHONDONTWRITEBYTECODE: '1' };

function collect(): { ids: string[]; problem: string | null } {
  const r = spawnSync(PYTHON, [...PYTEST_ARGS, '--collect-only', '-q'], { cwd: pkg, env: ENV, encoding: 'utf8', timeout: 60000 });
  const ids = (r.stdout ?? '').split('\n').filter((l) => l.startsWith('tests/') && l.includes('::'));
  if (r.status !== 0 || ids.length === 0) {
    return { ids, problem: `pytest could not collect the Python client's tests (exit ${r.status ?? r.signal}):\n${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}` };
  }
  return { ids, problem: null };
}

const { ids, problem } = collect();

describe('Python client (clients/python) under pytest, against the simulator on loopback', function () {
  let dash: Dashboard;
  let output = '';
  const outcome = new Map<string, string>();

  before(async function () {
    this.timeout(300000);
    if (problem) return;
    const catalog = loadCatalog(DEFAULT_CATALOG);
    const calm = loadNamedScenario('calm', catalog);
    dash = await startDashboard({
      scenario: {
        ...calm,
        name: 'python-client',
        credentials: { ...calm.credentials, 'maint-key': 'maintainer' },
        clients: [],
        events: [],
        durationMs: 3_600_000,
      },
      port: 0,
      tcpPort: 0,
      wsPort: 0,
    });
    assert.ok(dash.tcp && dash.ws, 'the simulator listens for external clients');
    const env = {
      ...ENV,
      HUB_TCP: `tcp://127.0.0.1:${dash.tcp.port}`,
      HUB_WS: `ws://127.0.0.1:${dash.ws.port}/`,
      HUB_OPERATOR_CREDENTIAL: 'operator-key', // the calm scenario's operator credential
      HUB_MAINTAINER_CREDENTIAL: 'maint-key', // added above: the health report is for maintainers
    };
    // Asynchronous: the simulator runs on this process's event loop while pytest talks to it.
    const code = await new Promise<number | null>((ok) => {
      const p = spawn(PYTHON, [...PYTEST_ARGS, '-q', '-rA', '--tb=short'], { cwd: pkg, env });
      p.stdout.on('data', (b: Buffer) => (output += b.toString('utf8')));
      p.stderr.on('data', (b: Buffer) => (output += b.toString('utf8')));
      p.on('error', (e) => {
        output += String(e);
        ok(null);
      });
      p.on('close', (c) => ok(c));
    });
    for (const line of output.split('\n')) {
      const m = /^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (tests\/\S.*?)(?: - .*)?$/.exec(line);
      if (m) outcome.set(m[2]!, m[1]!);
    }
    output += `\n(pytest exit ${code})`;
  });

  after(async function () {
    if (dash) await dash.close();
  });

  if (problem) {
    it('pytest collects the Python client tests', function () {
      assert.fail(problem);
    });
    return;
  }

  it('robot_hub and its tests type-check under mypy --strict (the package ships py.typed)', function () {
    this.timeout(180000);
    const r = spawnSync(PYTHON, ['-m', 'mypy', 'robot_hub', 'tests'], { cwd: pkg, env: { ...ENV, MYPY_CACHE_DIR: '/dev/null' }, encoding: 'utf8', timeout: 170000 });
    assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
    assert.match(r.stdout, /^Success: no issues found/m);
  });

  it('the Python example in docs/client.md type-checks under mypy --strict against robot_hub', function () {
    this.timeout(180000);
    const doc = readFileSync(join(repo, 'docs', 'client.md'), 'utf8');
    const section = doc.slice(doc.indexOf('\n## Python'));
    const m = /\n```python\n([\s\S]*?)\n```\n/.exec(section);
    assert.ok(m, 'docs/client.md has a Python example under "## Python"');
    assert.match(m[1]!, /async with connect\(/);
    const dir = mkdtempSync(join(tmpdir(), 'hub-py-example-'));
    try {
      const file = join(dir, 'client_md_example.py');
      writeFileSync(file, m[1]! + '\n');
      const r = spawnSync(PYTHON, ['-m', 'mypy', file], { cwd: pkg, env: { ...ENV, MYPY_CACHE_DIR: '/dev/null' }, encoding: 'utf8', timeout: 170000 });
      assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
      assert.match(r.stdout, /^Success: no issues found/m);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the hub refused no frame of the Python client as MALFORMED or TOO_LARGE (the client checks its frames first)', function () {
    const nacks = dash.live.sim.hub.counters.nacks;
    assert.equal(nacks[Nack.MALFORMED], 0);
    assert.equal(nacks[Nack.TOO_LARGE], 0);
    assert.ok((nacks[Nack.NOT_OWNER] ?? 0) >= 2, 'the suite drew NACKs of other kinds, so the counters were read');
  });

  it(`pytest collected the suite (${ids.length} cases) and exited 0`, function () {
    assert.ok(ids.length >= 150, `${ids.length} cases`);
    assert.match(output, /\(pytest exit 0\)$/, output.slice(-4000));
  });

  for (const id of ids) {
    it(id, function () {
      const got = outcome.get(id);
      if (got === 'PASSED') return;
      const mine = output.split('\n').filter((l) => l.includes(id.split('::')[1]!.split('[')[0]!)).join('\n');
      assert.fail(`${id}: ${got ?? 'not reported'} by pytest\n${mine}\n--- pytest output (tail) ---\n${output.slice(-4000)}`);
    });
  }
});
