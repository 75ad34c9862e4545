#!/usr/bin/env node
// Checks the firmware against a Moddable SDK the user installed ($MODDABLE, its Linux tools built
// as the SDK's own Getting Started guide says; docs/operations.md "Checking against the Moddable
// SDK"). Not part of `npm test`: it needs the SDK and takes several minutes. One line per step:
//
//   esp32  the JavaScript half of the device build: `mcconfig -p esp32` writes the makefile, whose
//          mc.xs.c target runs tsc, xsc and xsl with the preload; it stops there, before anything
//          needs ESP-IDF;
//   lin    `mcconfig -m -p lin -t build`: the Linux simulator target, mc.so;
//   mcsim  that firmware run headless in mcsim under Xvfb and answered by the client library from
//          Node: HELLO over TCP and WebSocket, a subscription that receives DATA, /health, an
//          ESTOP latched (the stop line at stop) and cleared by the control owner;
//   uplink a second lin build with the fleet uplink (device/uplink.ts over the SDK's ECMA-419 MQTT
//          client) to an aedes broker in this process on the loopback, on the device's own
//          creation: an operator over TCP, and what the broker sees:
//          the retained `online` status, 1 Hz health, telemetry, the ESTOP and its clear on
//          `safety`, a signed fleet stop that latches the hub (its replay refused), and the will,
//          `offline`, once mcsim is killed;
//   xst    the portable suites (test/core) on the SDK's xst, bundled as scripts/xs-run.mjs
//          bundles them for xsnap;
//   pendant-esp32, pendant-lin, pendant-mcsim
//          the same for the pendant's firmware (pendant/manifest.json, docs/pendant.md): the
//          JavaScript half of its device build, its lin build, and that build run in mcsim, where
//          it drives the hub on the simulated air with scripted hands to its end.
//
// Both builds fail on any xsl warning that names a module of the project (a module-level `let`,
// an unfrozen object: preloaded, each stays in RAM). Exit status 0 only when every step passed;
// 2 when there is no SDK or a tool is missing.
//
// Usage: MODDABLE=/path/to/moddable node scripts/check-moddable.mjs [--keep] [--pendant] [--uplink-only]
//   --keep         keep the build directories (printed) instead of deleting them
//   --pendant      the pendant's three steps only
//   --uplink-only  the uplink step alone (its lin build and run)
import { spawn } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const keep = process.argv.includes('--keep');
const pendantOnly = process.argv.includes('--pendant');
/** Only the uplink's lin build and run (and nothing else): for working on the uplink. */
const uplinkOnly = process.argv.includes('--uplink-only');
const NAME = 'robot-hub';
const PENDANT_NAME = 'robot-pendant';
/** The pendant's build needs the hub it pairs with: any MAC and keys do for a build. */
const PENDANT_SETTINGS = Object.freeze({ hub_mac: '24:6f:28:00:00:01', lmk: '5a'.repeat(16), pmk: '11'.repeat(16), wifi_ssid: 'robot-hub' });
/** What mcsim's Preference on lin keeps its values in (the SDK's file root on lin is /tmp/). */
const LIN_PREFERENCES = '/tmp/modpreferences.json';

function say(line) {
  process.stdout.write(`${line}\n`);
}

function seconds(ms) {
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)} min ${s % 60} s`;
}

/** One line of output, shortened: a reason fits on the step's line. */
function oneLine(text, max = 300) {
  const t = String(text).replace(/\s+/g, ' ').trim();
  return t.length > max ? `${t.slice(0, max - 1)}…` : t;
}

// ------------------------------------------------------------------------------ the tools

function which(name, path) {
  for (const dir of path.split(delimiter)) {
    if (dir && existsSync(join(dir, name))) return join(dir, name);
  }
  return null;
}

function noSdk(message) {
  say(`check-moddable: ${message}`);
  say('check-moddable: nothing checked (set MODDABLE to a Moddable SDK whose Linux tools are built: docs/operations.md "Checking against the Moddable SDK")');
  process.exit(2);
}

if (process.platform !== 'linux') noSdk(`runs on Linux hosts only (this is ${process.platform}): it drives the SDK's lin tools and mcsim under Xvfb`);
const MODDABLE = process.env.MODDABLE;
if (!MODDABLE) noSdk('MODDABLE is not set');
if (!existsSync(join(MODDABLE, 'tools', 'mcconfig')) && !existsSync(join(MODDABLE, 'xs'))) noSdk(`MODDABLE=${MODDABLE} is not a Moddable SDK`);
const binRelease = join(MODDABLE, 'build', 'bin', 'lin', 'release');
const binDebug = join(MODDABLE, 'build', 'bin', 'lin', 'debug');
const localBin = join(repo, 'node_modules', '.bin');
// mcconfig's makefiles call xsc, xsl, mcrez and tsc by name.
const PATH = [binRelease, localBin, process.env.PATH ?? ''].join(delimiter);
const missing = ['mcconfig', 'xsc', 'xsl', 'mcrez', 'mcsim'].filter((t) => !existsSync(join(binRelease, t)));
if (missing.length > 0) noSdk(`the SDK's Linux tools are not built: no ${missing.join(', ')} in ${binRelease}`);
const xst = [join(binRelease, 'xst'), join(binDebug, 'xst')].find((p) => existsSync(p));
if (!xst) noSdk(`no xst in ${binRelease} or ${binDebug} (build it as the SDK's documentation of xst says)`);
if (!which('tsc', PATH)) noSdk('no tsc: run npm ci (mcconfig compiles each .ts module with tsc)');
if (!which('make', PATH)) noSdk('no make on the PATH');

// The child processes get the SDK's tools first, and no ESP-IDF: the esp32 step must stop before it.
const env = { ...process.env, MODDABLE, PATH };
delete env.IDF_PATH;

/** Runs a command to its end; resolves { code, out } with stdout and stderr together. */
function run(cmd, args, options = {}) {
  return new Promise((done) => {
    const child = spawn(cmd, args, { cwd: options.cwd ?? repo, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('error', (e) => done({ code: -1, out: `${out}${e.message}` }));
    child.on('close', (code) => done({ code: code ?? -1, out }));
  });
}

/** The xsl warnings that name a module of the project (a file of the repository). */
function projectWarnings(out) {
  const found = [];
  for (const line of out.split('\n')) {
    const m = /^### warning: ([^:]+):/.exec(line.trim());
    if (!m) continue;
    const name = m[1];
    if (existsSync(join(repo, `${name}.ts`)) || existsSync(join(repo, `${name}.js`))) found.push(line.trim().slice('### warning: '.length));
  }
  return found;
}

function instances(out) {
  const m = /### (\d+) instances/.exec(out);
  return m ? Number(m[1]) : null;
}

function lastLines(out, n = 6) {
  return oneLine(out.trim().split('\n').slice(-n).join(' | '));
}

async function freePort() {
  return new Promise((done, fail) => {
    const s = createServer();
    s.on('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => done(port));
    });
  });
}

// ------------------------------------------------------------------------------ the steps

const work = mkdtempSync(join(tmpdir(), 'robot-hub-moddable-'));
const results = [];

function report(step, ok, detail, ms) {
  results.push(ok);
  say(`${ok ? 'ok  ' : 'FAIL'}  ${step.padEnd(13)}  ${detail}${ms === undefined ? '' : ` (${seconds(ms)})`}`);
}

/** The mcconfig arguments of the hub's build (no manifest: ./manifest.json) or the pendant's. */
const HUB = Object.freeze({ dir: 'esp32', name: NAME, args: [] });
const PENDANT = Object.freeze({ dir: 'pendant-esp32', name: PENDANT_NAME, args: ['pendant/manifest.json', ...Object.entries(PENDANT_SETTINGS).map(([k, v]) => `${k}=${v}`)] });

/** esp32: the makefile from mcconfig, then its mc.xs.c target (tsc, xsc, xsl with the preload). */
async function esp32(target = HUB) {
  const t0 = Date.now();
  const out = join(work, target.dir);
  mkdirSync(out, { recursive: true });
  // Without -m, mcconfig writes the makefile and runs nothing.
  const gen = await run('mcconfig', ['-p', 'esp32', '-o', out, '-t', 'build', ...target.args]);
  const tmp = join(out, 'tmp', 'esp32', 'release', target.name);
  const makefile = join(tmp, 'makefile');
  if (gen.code !== 0 || !existsSync(makefile)) return { ok: false, detail: `mcconfig -p esp32 failed: ${lastLines(gen.out)}`, ms: Date.now() - t0 };
  // ESP-IDF is checked only where it is used: an empty IDF_PATH and the version the SDK expects
  // let make reach mc.xs.c, whose recipe needs neither (SDKCONFIG_H= drops its one IDF input).
  const noIdf = join(out, 'no-esp-idf');
  mkdirSync(noIdf, { recursive: true });
  const made = await run('make', ['-f', makefile, `IDF_PATH=${noIdf}`, 'IDF_VERSION=v6.0', 'SDKCONFIG_H=', join(tmp, 'mc.xs.c')], { cwd: tmp });
  const ms = Date.now() - t0;
  writeFileSync(join(out, 'make.log'), made.out);
  if (made.code !== 0 || !existsSync(join(tmp, 'mc.xs.c'))) return { ok: false, detail: `make mc.xs.c failed: ${lastLines(made.out)}`, ms };
  const warnings = projectWarnings(made.out);
  if (warnings.length > 0) return { ok: false, detail: `xsl warns about the project: ${oneLine(warnings.join('; '))}`, ms };
  return { ok: true, detail: `mcconfig -p esp32, then tsc, xsc and xsl with the preload (${instances(made.out) ?? '?'} instances); no xsl warning from the project; stopped before ESP-IDF`, ms };
}

/** lin: the whole build, mc.so, with the ports and credentials the run uses. */
async function lin(settings, target = { dir: 'lin', name: NAME, args: [] }) {
  const t0 = Date.now();
  const out = join(work, target.dir);
  mkdirSync(out, { recursive: true });
  const args = ['-m', '-p', 'lin', '-o', out, '-t', 'build', ...target.args, ...Object.entries(settings).map(([k, v]) => `${k}=${v}`)];
  const r = await run('mcconfig', args);
  const ms = Date.now() - t0;
  writeFileSync(join(out, 'build.log'), r.out);
  const so = join(out, 'bin', 'lin', 'mc', 'release', target.name, 'mc.so');
  const found = existsSync(so) ? so : findFile(join(out, 'bin'), 'mc.so');
  if (r.code !== 0 || !found) return { ok: false, detail: `mcconfig -m -p lin -t build failed: ${lastLines(r.out)}`, ms };
  const warnings = projectWarnings(r.out);
  if (warnings.length > 0) return { ok: false, detail: `xsl warns about the project: ${oneLine(warnings.join('; '))}`, ms, so: found };
  const said = /BLE and ESP-NOW are not built for lin/.test(r.out)
    ? '; the build says BLE and ESP-NOW are left out'
    : /has no radio and no pins/.test(r.out)
      ? '; the build says it has no radio and no pins'
      : '';
  return { ok: true, detail: `mcconfig -m -p lin -t build: mc.so (${instances(r.out) ?? '?'} instances); no xsl warning from the project${said}`, ms, so: found };
}

function findFile(dir, name) {
  if (!existsSync(dir)) return null;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) {
      const f = findFile(p, name);
      if (f) return f;
    } else if (e.name === name) return p;
  }
  return null;
}

/** The client library for Node, bundled from its TypeScript (no tsc build needed). */
async function clientLibrary() {
  const esbuild = await import('esbuild');
  const dir = join(repo, 'build', 'check-moddable');
  mkdirSync(dir, { recursive: true });
  const file = join(dir, 'client.mjs');
  await esbuild.build({
    stdin: {
      contents: [
        "export { connectTcp, connectWs } from './client/node.ts';",
        "export { EstopKind } from './client/index.ts';",
        "export { loadCatalog } from './catalog/index.ts';",
        "export { DEFAULT_CATALOG } from './catalog/default.ts';",
        "export { Tier } from './catalog/schema.ts';",
        "export { Broker } from './host-sim/mqtt-broker.ts';",
        "export { fleetStopMessage } from './hub/fleet-stop.ts';",
      ].join('\n'),
      resolveDir: repo,
      sourcefile: 'check-moddable-client.ts',
      loader: 'ts',
    },
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    packages: 'external',
    outfile: file,
    logLevel: 'silent',
  });
  return import(pathToFileURL(file).href);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function until(what, test, ms) {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (test()) return;
    await sleep(20);
  }
  throw new Error(`${what}: not within ${ms} ms`);
}

/** Starts mcsim on `so` under Xvfb in a process group of its own; resolves once the hub is ready. */
function startSimulator(so) {
  const child = spawn('xvfb-run', ['-a', 'stdbuf', '-oL', '-eL', join(binRelease, 'mcsim'), so], { cwd: dirname(so), env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const sim = { child, out: '', exited: null };
  child.stdout.on('data', (d) => (sim.out += d));
  child.stderr.on('data', (d) => (sim.out += d));
  child.on('exit', (code, signal) => (sim.exited = signal ?? code));
  child.on('error', (e) => {
    sim.out += e.message;
    sim.exited = -1;
  });
  return sim;
}

async function stopSimulator(sim) {
  if (sim.exited !== null) return;
  const group = -sim.child.pid;
  try {
    process.kill(group, 'SIGTERM');
  } catch {
    return;
  }
  const end = Date.now() + 5000;
  while (sim.exited === null && Date.now() < end) await sleep(50);
  if (sim.exited === null) {
    try {
      process.kill(group, 'SIGKILL');
    } catch {
      // gone
    }
  }
}

/**
 * The uplink's lin build: the repository's manifest as it is, the device's `creation` included
 * (the heap an uplink needs beside every binding: docs/fleet.md "Limits"), in a directory of its
 * own so that it builds beside the plain lin firmware.
 */
const UPLINK_TARGET = { dir: 'lin-uplink', name: NAME, args: [] };
const CREATION = (() => {
  const c = JSON.parse(readFileSync(join(repo, 'manifest.json'), 'utf8')).creation;
  return `${c.heap.initial} slots, ${c.chunk.initial} chunk bytes`;
})();

/** mcsim: the lin firmware serves the client library. */
async function serve(so, settings, token) {
  const t0 = Date.now();
  if (!which('xvfb-run', PATH)) return { ok: false, detail: 'no xvfb-run: mcsim needs a display (apt-get install xvfb)', ms: 0 };
  if (!which('stdbuf', PATH)) return { ok: false, detail: 'no stdbuf (coreutils): the simulator trace would be block-buffered', ms: 0 };
  const lib = await clientLibrary();
  // The run latches and clears the hub's ESTOP in lin's Preference file: it is put back as it was.
  const saved = existsSync(LIN_PREFERENCES) ? join(work, 'modpreferences.json') : null;
  if (saved) copyFileSync(LIN_PREFERENCES, saved);
  const sim = startSimulator(so);
  const clients = [];
  const facts = [];
  try {
    await until('the hub says ready', () => /hub: ready \d/.test(sim.out) || sim.exited !== null, 30000);
    if (sim.exited !== null) throw new Error(`mcsim exited (${sim.exited}): ${lastLines(sim.out)}`);
    if (!/BLE and ESP-NOW are not built for lin/.test(sim.out)) throw new Error('the start does not say BLE and ESP-NOW are left out');
    const restored = /hub: ready 1/.test(sim.out);
    const catalog = lib.loadCatalog(lib.DEFAULT_CATALOG);
    const imu = catalog.byName('imu').id;
    let data = 0;
    const operator = await lib.connectTcp('127.0.0.1', settings.tcp_port, {
      name: 'check-operator',
      credential: new TextEncoder().encode(token),
      subscriptions: [{ channelId: imu, wishedRateHz: 50 }],
      onData: (channelId) => {
        if (channelId === imu) data++;
      },
    });
    clients.push(operator);
    if (operator.tier !== lib.Tier.operator) throw new Error(`the configured credential gave tier ${operator.tier}, not operator`);
    const granted = operator.grants.get(imu)?.grantedRateHz ?? 0;
    if (!(granted > 0)) throw new Error('imu was not granted');
    facts.push(`HELLO/WELCOME over TCP (operator)`);
    await sleep(1000);
    if (data < 10) throw new Error(`${data} DATA frames of imu in 1 s at a grant of ${granted} Hz`);
    facts.push(`${data} DATA of imu in 1 s at ${granted} Hz`);
    const observer = await lib.connectWs(`ws://127.0.0.1:${settings.ws_port}/`, { name: 'check-observer' });
    clients.push(observer);
    if (observer.tier !== lib.Tier.observer) throw new Error(`a client without credential got tier ${observer.tier}`);
    facts.push('over WebSocket (observer)');
    const health = await fetch(`http://127.0.0.1:${settings.http_port}/health`);
    const body = await health.json();
    if (health.status !== 200 || body.ready !== 1) throw new Error(`/health answered ${health.status} ${JSON.stringify(body)}`);
    facts.push('/health 200');
    // Any tier may stop: the observer's ESTOP latches the hub for everyone.
    const before = sim.out.length;
    observer.estop();
    await until('the ESTOP reaches both clients', () => operator.latched && observer.latched, 3000);
    if (operator.lastEstop?.kind !== lib.EstopKind.ASSERT) throw new Error('the operator did not hear the ESTOP asserted');
    if (!restored) await until('the stop line goes to stop', () => sim.out.indexOf('hub: stop-line-stop', before) >= 0, 2000);
    facts.push(restored ? 'ESTOP latched (a latch restored from the Store was already in force)' : 'ESTOP latched, the stop line at stop');
    // The control owner clears it, which leaves the Store as a run without a stop would.
    await operator.takeControl();
    await operator.clearEstop();
    await until('the clear reaches both clients', () => !operator.latched && !observer.latched, 3000);
    facts.push('cleared by the control owner');
    for (const c of clients.splice(0)) await c.close();
    if (sim.exited !== null) throw new Error(`mcsim exited (${sim.exited})`);
    return { ok: true, detail: `mcsim under Xvfb served the client library: ${facts.join(', ')}`, ms: Date.now() - t0 };
  } catch (e) {
    return { ok: false, detail: `${e instanceof Error ? e.message : String(e)}; mcsim said: ${lastLines(sim.out, 4)}`, ms: Date.now() - t0 };
  } finally {
    for (const c of clients) {
      try {
        await c.close();
      } catch {
        // the run is over
      }
    }
    await stopSimulator(sim);
    writeFileSync(join(work, 'mcsim.log'), sim.out);
    if (saved) copyFileSync(saved, LIN_PREFERENCES);
    else rmSync(LIN_PREFERENCES, { force: true });
  }
}

/**
 * pendant-mcsim: the pendant's lin firmware runs its script to the end: the hub latched by the
 * stop, cleared in the documented sequence, armed by its own press, commands before and after.
 */
async function pendantRun(so) {
  const t0 = Date.now();
  if (!which('xvfb-run', PATH)) return { ok: false, detail: 'no xvfb-run: mcsim needs a display (apt-get install xvfb)', ms: 0 };
  const sim = startSimulator(so);
  try {
    await until('the pendant finishes its script', () => /pendant: done: /.test(sim.out) || sim.exited !== null, 60000);
    if (sim.exited !== null) throw new Error(`mcsim exited (${sim.exited}): ${lastLines(sim.out)}`);
    const lines = sim.out.split('\n').filter((l) => l.startsWith('pendant: '));
    const done = lines.find((l) => l.startsWith('pendant: done: ')) ?? '';
    const m = /(\d+) commands, (\d+) zeros, (\d+) ESTOP, (\d+) requests \((\d+) failed\), robot (\d+)/.exec(done);
    if (!m) throw new Error(`no summary: ${oneLine(done)}`);
    const [, commands, zeros, estops, requests, failures, robot] = m.map(Number);
    if (!(commands > 0 && zeros > 0 && estops >= 1 && robot > 0 && failures === 0 && requests >= 3)) throw new Error(`the script did not run as written: ${oneLine(done)}`);
    if (!lines.some((l) => /hub latched/.test(l)) || !lines.some((l) => /hub clear armed/.test(l))) throw new Error(`no latch and re-arm in the trace: ${oneLine(lines.join(' | '))}`);
    return { ok: true, detail: `mcsim under Xvfb ran the pendant's script against the hub on the simulated air: ${done.slice('pendant: done: '.length)}`, ms: Date.now() - t0 };
  } catch (e) {
    return { ok: false, detail: `${e instanceof Error ? e.message : String(e)}; mcsim said: ${lastLines(sim.out, 4)}`, ms: Date.now() - t0 };
  } finally {
    await stopSimulator(sim);
    writeFileSync(join(work, 'pendant-mcsim.log'), sim.out);
  }
}

/** The pendant's three steps. */
async function pendantSteps() {
  const [a, b] = await Promise.all([esp32(PENDANT), lin({}, { dir: 'pendant-lin', name: PENDANT_NAME, args: ['pendant/manifest.json'] })]);
  report('pendant-esp32', a.ok, a.detail, a.ms);
  report('pendant-lin', b.ok, b.detail, b.ms);
  if (b.so) {
    const c = await pendantRun(b.so);
    report('pendant-mcsim', c.ok, c.detail, c.ms);
  } else report('pendant-mcsim', false, 'no lin firmware to run (the pendant-lin step failed)');
}

/** A subscriber to `fleet/#` on the broker, keeping every message (topic, text, retain flag) in order. */
async function watchFleet(url) {
  const mqtt = (await import('mqtt')).default;
  const client = await mqtt.connectAsync(url, { clientId: `check-watch-${process.pid}`, reconnectPeriod: 0 });
  const seen = [];
  client.on('message', (topic, payload, packet) => seen.push({ topic, text: payload.toString('utf8'), retain: packet.retain === true, at: Date.now() }));
  await client.subscribeAsync('fleet/#', { qos: 0 });
  return {
    seen,
    of: (topic) => seen.filter((m) => m.topic === topic),
    close: () => client.endAsync(true).catch(() => undefined),
  };
}

/** The retained messages of `topic` as a subscriber that connects now receives them. */
async function retainedNow(url, topic) {
  const mqtt = (await import('mqtt')).default;
  const client = await mqtt.connectAsync(url, { clientId: `check-late-${process.pid}`, reconnectPeriod: 0 });
  const got = [];
  client.on('message', (t, payload, packet) => got.push({ text: payload.toString('utf8'), retain: packet.retain === true }));
  await client.subscribeAsync(topic, { qos: 0 });
  await until(`the retained ${topic}`, () => got.length > 0, 3000);
  await client.endAsync(true);
  return got[0];
}

/**
 * uplink: the lin firmware built with an uplink to an aedes broker in this process, an operator
 * connected over TCP; what the broker sees (checkUplink). `/tmp/modpreferences.json` is put back.
 */
async function serveUplink(so, settings, token) {
  const t0 = Date.now();
  if (!which('xvfb-run', PATH)) return { ok: false, detail: 'no xvfb-run: mcsim needs a display (apt-get install xvfb)', ms: 0 };
  const lib = await clientLibrary();
  const saved = existsSync(LIN_PREFERENCES) ? join(work, 'modpreferences-uplink.json') : null;
  if (saved) copyFileSync(LIN_PREFERENCES, saved);
  const broker = await new lib.Broker().start(settings.uplink_port);
  const watch = await watchFleet(broker.url);
  const sim = startSimulator(so);
  let operator = null;
  try {
    await until('the hub says ready', () => /hub: ready \d/.test(sim.out) || sim.exited !== null, 30000);
    if (sim.exited !== null) throw new Error(`mcsim exited (${sim.exited}): ${lastLines(sim.out)}`);
    const restored = /hub: ready 1/.test(sim.out);
    operator = await lib.connectTcp('127.0.0.1', settings.tcp_port, { name: 'check-operator', credential: new TextEncoder().encode(token) });
    if (operator.tier !== lib.Tier.operator) throw new Error(`the configured credential gave tier ${operator.tier}, not operator`);
    // A local ESTOP and its clear, for the uplink's safety topic.
    operator.estop();
    await until('the ESTOP reaches the operator', () => operator.latched, 3000);
    await operator.takeControl();
    await operator.clearEstop();
    await until('the clear reaches the operator', () => !operator.latched, 3000);
    const detail = await checkUplink(lib, sim, watch, broker, settings, operator, restored);
    return { ok: true, detail, ms: Date.now() - t0 };
  } catch (e) {
    return { ok: false, detail: `${e instanceof Error ? e.message : String(e)}; mcsim said: ${lastLines(sim.out, 4)}`, ms: Date.now() - t0 };
  } finally {
    if (operator) {
      try {
        operator.close();
      } catch {
        // mcsim is gone already (the will's check kills it)
      }
    }
    // Each part let go on its own: a broker left listening would keep this process alive.
    for (const end of [() => stopSimulator(sim), () => watch.close(), () => broker.stop()]) {
      try {
        await end();
      } catch {
        // gone already
      }
    }
    writeFileSync(join(work, 'mcsim-uplink.log'), sim.out);
    if (saved) copyFileSync(saved, LIN_PREFERENCES);
    else rmSync(LIN_PREFERENCES, { force: true });
  }
}

/**
 * The uplink of the running lin firmware, as the broker shows it: `online` retained on connect,
 * health at 1 Hz, telemetry, the ESTOP the mcsim step latched and cleared on `safety`, a signed
 * fleet stop that latches the hub (source fleet) and is cleared locally, and on a kill of mcsim
 * the will, `offline`. Resolves with the step's line; throws what failed.
 */
async function checkUplink(lib, sim, watch, broker, settings, operator, restored) {
  const base = `fleet/${settings.uplink_site}/${settings.hub_id}`;
  const facts = [];
  await until('status online', () => watch.of(`${base}/status`).some((m) => m.text === 'online'), 15000);
  const late = await retainedNow(broker.url, `${base}/status`);
  if (late.text !== 'online' || !late.retain) throw new Error(`a late subscriber got ${JSON.stringify(late)} on status, not a retained online`);
  facts.push('status online, retained');
  const h0 = watch.of(`${base}/health`).length;
  const from = Date.now();
  await until('3 more health messages', () => watch.of(`${base}/health`).length >= h0 + 3, 6000);
  const health = watch.of(`${base}/health`);
  const last = JSON.parse(health[health.length - 1].text);
  if (last.version !== 1 || last.ready !== 1 || typeof last.uplink?.published !== 'number') throw new Error(`health is not the public summary: ${health[health.length - 1].text.slice(0, 200)}`);
  facts.push(`health at ${(3000 / (Date.now() - from)).toFixed(2)} Hz (metrics v1, ${last.uplink.published} published so far)`);
  const odom = watch.of(`${base}/telemetry/odom`);
  if (odom.length === 0) throw new Error('no telemetry/odom');
  facts.push(`${odom.length} telemetry/odom`);
  const safety = watch.of(`${base}/safety`).map((m) => JSON.parse(m.text));
  if (!restored && !(safety.some((x) => x.latched && x.source === 'client') && safety.some((x) => !x.latched))) throw new Error(`safety did not carry the ESTOP and its clear: ${JSON.stringify(safety)}`);
  facts.push(`safety: ${safety.length} (the client's ESTOP and its clear)`);
  // A signed fleet stop latches the hub; the control owner clears it locally.
  const key = new TextEncoder().encode(settings.uplink_fleet_key);
  const stop = lib.fleetStopMessage(settings.uplink_site, key, settings.hub_id, Date.now(), Date.now());
  const mqtt = (await import('mqtt')).default;
  const pub = await mqtt.connectAsync(broker.url, { clientId: `check-stop-${process.pid}`, reconnectPeriod: 0 });
  await pub.publishAsync(`fleet/${settings.uplink_site}/estop`, stop, { qos: 0 });
  await until('the fleet stop latches the hub', () => operator.latched, 5000);
  if (operator.lastEstop?.source !== 5) throw new Error(`the fleet stop latched with source ${operator.lastEstop?.source}, not 5 (fleet)`);
  await until('safety says fleet', () => watch.of(`${base}/safety`).some((m) => JSON.parse(m.text).source === 'fleet'), 3000);
  // The same message again: a replay, which changes nothing (the hub is still latched; the log says refused).
  await pub.publishAsync(`fleet/${settings.uplink_site}/estop`, stop, { qos: 0 });
  await until('the replay is refused', () => /hub: fleet-estop-refused/.test(sim.out), 3000);
  await pub.endAsync(true);
  await operator.clearEstop();
  await until('the clear reaches the operator', () => !operator.latched, 3000);
  facts.push('a signed fleet stop latched the hub (source fleet, on safety too), its replay refused, cleared locally');
  // The will: mcsim killed without a DISCONNECT, the broker publishes offline.
  await stopSimulator(sim);
  await until('the will: status offline', () => watch.of(`${base}/status`).some((m) => m.text === 'offline'), 10000);
  const gone = await retainedNow(broker.url, `${base}/status`);
  if (gone.text !== 'offline') throw new Error(`after the kill, status is retained as ${gone.text}`);
  facts.push('mcsim killed: the will set status offline, retained');
  return `the lin firmware's uplink to aedes on ${broker.url}: ${facts.join(', ')}`;
}

/** xst: the portable suites, one script, as xs-run.mjs bundles them for xsnap. */
async function suitesOnXst() {
  const t0 = Date.now();
  const { bundleSuites } = await import(pathToFileURL(join(repo, 'scripts', 'xs-run.mjs')).href);
  const files = readdirSync(join(repo, 'test', 'core'))
    .filter((f) => f.endsWith('.test.ts'))
    .sort()
    .map((f) => join('test', 'core', f));
  const code = await bundleSuites(files);
  const file = join(work, 'xst-suites.js');
  // xst has print and real timers: report once the harness is done.
  writeFileSync(
    file,
    `${code}\n;(function report() { if (!globalThis.__xsDone) { setTimeout(report, 5); return; } print('XST-RESULT ' + JSON.stringify(globalThis.__xsError ? { error: globalThis.__xsError } : { results: globalThis.__xsResults })); })();\n`,
  );
  const version = (await run(xst, ['-v'])).out.trim();
  const r = await run(xst, ['-s', file], { cwd: work });
  const ms = Date.now() - t0;
  const at = r.out.indexOf('XST-RESULT ');
  if (r.code !== 0 || at < 0) return { ok: false, detail: `xst did not finish the suites (exit ${r.code}): ${lastLines(r.out)}`, ms };
  const value = JSON.parse(r.out.slice(at + 'XST-RESULT '.length).split('\n')[0]);
  if (value.error) return { ok: false, detail: `the suites did not run: ${oneLine(value.error)}`, ms };
  const failed = value.results.filter((x) => !x.ok);
  const passed = value.results.length - failed.length;
  if (failed.length > 0 || passed === 0) {
    return { ok: false, detail: `${passed} passed, ${failed.length} failed on xst: ${oneLine(failed.slice(0, 3).map((f) => `${f.name}: ${f.error}`).join('; '))}`, ms };
  }
  return { ok: true, detail: `${passed} passed, 0 failed (${files.length} suite files) on xst, ${version.split(',')[0]}`, ms };
}

// ------------------------------------------------------------------------------ main

const sdkVersion = (() => {
  try {
    return ` ${readFileSync(join(MODDABLE, 'tools', 'VERSION'), 'utf8').trim()}`;
  } catch {
    return '';
  }
})();
say(`check-moddable: Moddable SDK${sdkVersion} at ${MODDABLE}; builds in ${work}`);

const token = `check-${Math.random().toString(16).slice(2)}${Date.now().toString(16)}`;
const settings = { tcp_port: await freePort(), ws_port: await freePort(), http_port: await freePort(), credentials: `operator:${token}` };
while (new Set([settings.tcp_port, settings.ws_port, settings.http_port]).size < 3) settings.ws_port = await freePort();
const uplinkSettings = {
  ...settings,
  hub_id: 'check-hub',
  // The fleet uplink to the broker serve() starts on the loopback (device/uplink.ts).
  uplink_broker: '127.0.0.1',
  uplink_port: await freePort(),
  uplink_site: 'check',
  uplink_telemetry: 'odom:5',
  uplink_events: 'safety-events',
  uplink_fleet_key: `fleet-${token}`,
};
while (new Set([settings.tcp_port, settings.ws_port, settings.http_port, uplinkSettings.uplink_port]).size < 4) uplinkSettings.uplink_port = await freePort();

async function hubSteps() {
  // The two builds share nothing but the sources: they run side by side.
  const [a, b, u] = await Promise.all([esp32(), lin(settings), lin(uplinkSettings, UPLINK_TARGET)]);
  report('esp32', a.ok, a.detail, a.ms);
  report('lin', b.ok, b.detail, b.ms);
  if (b.so) {
    const c = await serve(b.so, settings, token);
    report('mcsim', c.ok, c.detail, c.ms);
  } else report('mcsim', false, 'no lin firmware to run (the lin step failed)');
  await uplinkStep(u);
  const d = await suitesOnXst();
  report('xst', d.ok, d.detail, d.ms);
}

/** uplink: the lin build with an uplink, run against an aedes broker in this process. */
async function uplinkStep(u) {
  if (u.so) {
    const c = await serveUplink(u.so, uplinkSettings, token);
    report('uplink', c.ok, `${c.detail}; built with uplink_broker=127.0.0.1 and the device's creation (${CREATION})`, c.ms);
  } else report('uplink', false, `the lin build with an uplink failed: ${u.detail}`);
}

try {
  if (uplinkOnly) await uplinkStep(await lin(uplinkSettings, UPLINK_TARGET));
  else {
    if (!pendantOnly) await hubSteps();
    await pendantSteps();
  }
} catch (e) {
  report('check', false, `stopped: ${e instanceof Error ? e.message : String(e)}`);
} finally {
  if (keep) say(`check-moddable: the builds and logs are kept in ${work}`);
  else rmSync(work, { recursive: true, force: true });
}

const failed = results.filter((ok) => !ok).length;
say(`check-moddable: ${results.length - failed} ok, ${failed} failed`);
process.exitCode = failed > 0 ? 1 : 0;
