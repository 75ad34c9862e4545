#!/usr/bin/env node
// The hub and mosquitto side by side on one workload (bench/side-by-side.ts, issue 7 item 5).
//
//   node scripts/side-by-side.mjs [--json] [--quick] [--no-hub] [--no-mosquitto] [--slow-bps=N]
//                                 [--duration-ms=N] [--critical-qos=0|1] [--build=DIR] [--out=FILE]
//
// Compile first (`npx tsc -p tsconfig.json`): this runs build/bench/side-by-side.js, or
// DIR/bench/side-by-side.js with --build=DIR (a private `tsc --outDir`, out of reach of a
// concurrent `npm test`, which deletes build/; outside the repo DIR needs a package.json with
// "type": "module" and a node_modules link to the repo's).
// mosquitto: Debian's package. When /usr/sbin/mosquitto is missing, a full run installs it
// (`apt-get update && apt-get install -y mosquitto`) if we are root and stops with a clear error
// otherwise; --quick never installs: it skips the mosquitto side and says so. The broker is our
// own: a generated config in a temp dir (a listener on 127.0.0.1 and a free port only, anonymous
// clients allowed, no persistence), started before its half of the run and stopped after it.
// Never part of `npm test`.
// `--json` prints one JSON object; otherwise a table (and `--out=FILE` writes the JSON there too).
// Exit code 1 if a side failed.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const MOSQUITTO = '/usr/sbin/mosquitto';
const repo = resolve(fileURLToPath(new URL('..', import.meta.url)));
const args = process.argv.slice(2);
const json = args.includes('--json');
const quick = args.includes('--quick');
const runHubSide = !args.includes('--no-hub');
const runMqttSide = !args.includes('--no-mosquitto');
const numArg = (name) => {
  const a = args.find((x) => x.startsWith(`--${name}=`));
  if (!a) return undefined;
  const v = Number(a.slice(name.length + 3));
  if (!Number.isFinite(v) || v < 0) throw new Error(`--${name} needs a number`);
  return v;
};

const log = (line) => {
  if (!json) process.stdout.write(line + '\n');
};
const warn = (line) => process.stderr.write(line + '\n');

async function loadBench() {
  const dirArg = args.find((a) => a.startsWith('--build='));
  const dir = dirArg ? resolve(dirArg.slice('--build='.length)) : join(repo, 'build');
  const file = join(dir, 'bench', 'side-by-side.js');
  if (!existsSync(file)) throw new Error(`${file} is missing: compile first (\`npx tsc -p tsconfig.json\`)`);
  return import(pathToFileURL(file).href);
}

// ------------------------------------------------------------------------------------ mosquitto

function mosquittoVersion() {
  const r = spawnSync(MOSQUITTO, ['-h'], { encoding: 'utf8' });
  const m = /mosquitto version (\S+)/.exec(`${r.stdout}${r.stderr}`);
  return m ? m[1] : null;
}

/** Returns null when mosquitto is there (installing it if allowed), else why it is not. */
function ensureMosquitto() {
  if (existsSync(MOSQUITTO)) return null;
  if (quick) return `${MOSQUITTO} is not installed; --quick does not install it, so the mosquitto side is skipped (a full run installs Debian's package when run as root)`;
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) {
    throw new Error(`${MOSQUITTO} is not installed and we are not root: install Debian's package first (apt-get install mosquitto), then run again`);
  }
  warn(`${MOSQUITTO} is missing: apt-get update && apt-get install -y mosquitto`);
  // apt's output goes to stderr, so that --json keeps stdout to the one object.
  const opts = { stdio: ['ignore', 2, 2], env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } };
  for (const cmd of [['apt-get', ['update']], ['apt-get', ['install', '-y', 'mosquitto']]]) {
    const r = spawnSync(cmd[0], cmd[1], opts);
    if (r.status !== 0) throw new Error(`${cmd[0]} ${cmd[1].join(' ')} failed (exit ${r.status ?? r.signal})`);
  }
  if (!existsSync(MOSQUITTO)) throw new Error(`apt-get installed mosquitto but ${MOSQUITTO} is still missing`);
  return null;
}

function freePort() {
  return new Promise((ok, bad) => {
    const s = net.createServer();
    s.once('error', bad);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => ok(port));
    });
  });
}

function canConnect(port) {
  return new Promise((ok) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      ok(true);
    });
    s.once('error', () => ok(false));
  });
}

/** Our own broker: loopback only, anonymous, nothing persisted; resolves once it accepts connections. */
async function startMosquitto() {
  const dir = mkdtempSync(join(os.tmpdir(), 'side-by-side-mosquitto-'));
  const port = await freePort();
  const conf = join(dir, 'mosquitto.conf');
  writeFileSync(
    conf,
    [
      '# Generated by scripts/side-by-side.mjs; removed when the run ends.',
      `listener ${port} 127.0.0.1`,
      'allow_anonymous true',
      'persistence false',
      // Nagle off, as the hub's listener and every client here: otherwise small messages wait
      // for the peer's delayed ACK (40 ms on Linux) and latency measures Nagle, not the broker.
      'set_tcp_nodelay true',
      'log_dest stderr',
      'log_type error',
      'log_type warning',
      '',
    ].join('\n'),
  );
  const child = spawn(MOSQUITTO, ['-c', conf], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (b) => (stderr += b.toString()));
  let exited = null;
  child.once('exit', (code, signal) => (exited = code ?? signal));
  const stop = async () => {
    if (exited === null) {
      const gone = new Promise((ok) => child.once('exit', ok));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
      await gone;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  const deadline = Date.now() + 5000;
  while (!(await canConnect(port))) {
    if (exited !== null || Date.now() > deadline) {
      await stop();
      throw new Error(`mosquitto did not start on 127.0.0.1:${port} (exit ${exited}): ${stderr.trim()}`);
    }
    await new Promise((ok) => setTimeout(ok, 50));
  }
  return { port, pid: child.pid, stop, stderr: () => stderr };
}

// ------------------------------------------------------------------------------------ report

function fmt(x, digits = 1) {
  if (x === null || x === undefined) return '—';
  if (typeof x !== 'number') return String(x);
  return x.toFixed(digits);
}

function criticalCell(c, key) {
  // An undelivered message counts with the time it had waited: the statistic is then a lower bound.
  return c.lowerBound[key] ? `≥${fmt(c[key])}` : fmt(c[key]);
}

const BOUND_MARK = { exact: '', 'at most': '≤', 'at least': '≥', unknown: '?' };

function ratioCell(r, key) {
  if (!r || r[key] === undefined) return '';
  const b = r[`${key}Bound`];
  return `${b ? BOUND_MARK[b] : ''}${fmt(r[key], 3)}`;
}

function printTable(report) {
  const w = report.workload;
  const hub = report.peers.hub;
  const mq = report.peers.mosquitto;
  log(`side by side over loopback TCP: ${w.rateHz} Hz imu (6 float64) + 1 critical message every ${w.criticalEveryMs} ms,`);
  log(`  ${w.durationMs / 1000} s measured after ${w.warmupMs / 1000} s warm-up; slow subscriber reads ${w.slowBytesPerSecond} B/s, once every ${w.slowPeriodMs} ms`);
  log(`  hub: TcpListener + client library, tick ${w.tickMs} ms; mosquitto ${report.environment.mosquitto ?? '(skipped)'}, critical topic QoS ${w.criticalQos}`);
  const e = report.environment;
  log(`  ${e.cpus} CPUs, load average ${e.loadAvgAtStart[0]} at start, ${e.loadAvgAtEnd[0]} at end (1 min)`);
  if (report.skipped) log(`  NOTE: ${report.skipped}`);
  log('');
  const rows = [];
  const row = (label, get, ratio = '') => rows.push([label, hub ? get(hub) : '—', mq ? get(mq) : '—', ratio]);
  for (const who of ['fast', 'slow']) {
    const r = report.ratios ? report.ratios[who] : null;
    row(`${who}: critical latency p50 ms`, (p) => criticalCell(p[who].criticalMs, 'p50'), ratioCell(r, 'criticalP50'));
    row(`${who}: critical latency max ms`, (p) => criticalCell(p[who].criticalMs, 'max'), ratioCell(r, 'criticalMax'));
    row(`${who}: critical delivered`, (p) => `${p[who].criticalMs.delivered}/${p[who].criticalMs.sent}`);
    row(`${who}: sample age p50 ms`, (p) => fmt(p[who].ageMs.p50, 2), ratioCell(r, 'ageP50'));
    row(`${who}: sample age p95 ms`, (p) => fmt(p[who].ageMs.p95, 2), ratioCell(r, 'ageP95'));
    row(`${who}: sample age max ms`, (p) => fmt(p[who].ageMs.max, 2), ratioCell(r, 'ageMax'));
    row(`${who}: samples/s delivered`, (p) => fmt(p[who].samplesPerSecond), ratioCell(r, 'samplesPerSecond'));
    row(`${who}: age max, first → last second`, (p) => {
      const s = p[who].agePerSecond;
      return s.length ? `${fmt(s[0][2], 0)} → ${fmt(s[s.length - 1][2], 0)}` : '—';
    });
  }
  row('published samples/s', (p) => fmt(p.published.samplesPerSecond));
  row('bytes per sample on the wire', (p) => String(p.sampleWireBytes));
  const widths = [0, 1, 2, 3].map((i) => Math.max(...rows.map((x) => String(x[i]).length), ['', 'hub', 'mosquitto', 'hub/mosq'][i].length));
  const line = (cells) => log(cells.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join('  '));
  line(['', 'hub', 'mosquitto', 'hub/mosq']);
  for (const r of rows) line(r);
  if (hub) log(`\nhub: ${JSON.stringify(hub.notes.hubCountersInWindow)}\n     slow session ${JSON.stringify(hub.notes.slowSession)}`);
  if (hub) log(`     slow backlog at window end ${JSON.stringify(hub.slow.backlogAtEnd)}`);
  if (mq) log(`mosquitto: rss ${JSON.stringify(mq.notes.brokerRssKb)} kB; slow backlog at window end ${JSON.stringify(mq.slow.backlogAtEnd)}`);
}

// ------------------------------------------------------------------------------------ main

async function main() {
  const bench = await loadBench();
  const base = quick ? bench.QUICK_WORKLOAD : bench.FULL_WORKLOAD;
  const workload = { ...base };
  const slowBps = numArg('slow-bps');
  if (slowBps !== undefined) workload.slowBytesPerSecond = slowBps;
  const duration = numArg('duration-ms');
  if (duration !== undefined) workload.durationMs = duration;
  const qos = numArg('critical-qos');
  if (qos !== undefined) {
    if (qos !== 0 && qos !== 1) throw new Error('--critical-qos is 0 or 1');
    workload.criticalQos = qos;
  }

  let skipped = null;
  if (runMqttSide) skipped = ensureMosquitto();
  else skipped = 'the mosquitto side was not asked for (--no-mosquitto)';
  const report = {
    version: 1,
    quick,
    workload,
    environment: {
      node: process.version,
      kernel: `${os.type()} ${os.release()}`,
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0] ? os.cpus()[0].model : null,
      mosquitto: skipped ? null : mosquittoVersion(),
      // Other work on the machine moves the fast subscriber's numbers (not the slow one's).
      loadAvgAtStart: os.loadavg().map((x) => Math.round(x * 100) / 100),
      loadAvgAtEnd: null,
    },
    skipped,
    peers: { hub: null, mosquitto: null },
    ratios: null,
    failed: [],
  };

  if (runHubSide) {
    log('hub: running…');
    try {
      report.peers.hub = await bench.runHub(workload);
    } catch (e) {
      report.failed.push({ peer: 'hub', error: e && e.stack ? e.stack : String(e) });
    }
  }
  if (!skipped) {
    log('mosquitto: starting our own broker…');
    const broker = await startMosquitto();
    const onSignal = () => broker.stop().then(() => process.exit(130));
    process.once('SIGINT', onSignal);
    try {
      log(`mosquitto: 127.0.0.1:${broker.port} (pid ${broker.pid}), running…`);
      report.peers.mosquitto = await bench.runMqtt(workload, { host: '127.0.0.1', port: broker.port, pid: broker.pid });
      report.peers.mosquitto.notes.brokerLog = broker.stderr().trim().split('\n').filter(Boolean).slice(-10);
    } catch (e) {
      report.failed.push({ peer: 'mosquitto', error: e && e.stack ? e.stack : String(e), brokerLog: broker.stderr() });
    } finally {
      process.off('SIGINT', onSignal);
      await broker.stop();
    }
  }
  report.environment.loadAvgAtEnd = os.loadavg().map((x) => Math.round(x * 100) / 100);
  if (report.peers.hub && report.peers.mosquitto) report.ratios = bench.ratios(report.peers.hub, report.peers.mosquitto);

  const outArg = args.find((a) => a.startsWith('--out='));
  if (outArg) writeFileSync(outArg.slice('--out='.length), JSON.stringify(report, null, 1) + '\n');
  if (json) process.stdout.write(JSON.stringify(report) + '\n');
  else {
    log('');
    printTable(report);
    for (const f of report.failed) warn(`\n${f.peer} FAILED: ${f.error}`);
  }
  // Sockets and timers of the clients are closed; nothing else should keep us.
  process.exit(report.failed.length > 0 ? 1 : 0);
}

main().catch((e) => {
  warn(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
