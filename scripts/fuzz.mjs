#!/usr/bin/env node
// The hub fuzz soak (issue 7): the machinery of test/lib/fuzz.ts run for as many inputs as asked,
// through every binding (the core's sink, TCP framing, device WebSocket framing, host WebSocket
// messages, BLE fragments, ESP-NOW datagrams), with every invariant checked after every input.
//
//   node scripts/fuzz.mjs [--inputs N] [--seed S] [--bindings core,tcp,ws,ws-host,ble,espnow]
//                         [--episode-inputs E] [--replay INDEX [--trace-lines N]] [--strict-malformed]
//                         [--loopback N] [--slots N]
//
// The sources are bundled with esbuild on each run (as scripts/xs-run.mjs does), so no compile
// step is needed and what runs is what is checked out. Progress goes to stderr; the summary to
// stdout. Memory: the V8 heap is measured after a full collection before the run, every
// --heap-every inputs, and after the run, together with the hub's retained structures (sessions,
// subscriptions, never-shed bytes, binding queues), so that a leak shows as growth.
// On a failure: the seed, the input index, the invariant, the input's bytes and the command that
// replays it (--replay runs only that input's episode, with a trace of what each client sent and
// received). After the in-memory run, --loopback N inputs (default inputs / 50, at most 20,000) go
// through real loopback TCP and WebSocket sockets (bindings/tcp/node.ts). --strict-malformed and
// --slots are explained where they are read. Exit code 1 on a failure.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import v8 from 'node:v8';
import vm from 'node:vm';
import * as esbuild from 'esbuild';
import WebSocket from 'ws';

const repo = resolve(fileURLToPath(new URL('..', import.meta.url)));

function arg(name, fallback) {
  const args = process.argv.slice(2);
  const i = args.indexOf(`--${name}`);
  if (i >= 0 && i + 1 < args.length) return args[i + 1];
  const eq = args.find((a) => a.startsWith(`--${name}=`));
  return eq ? eq.slice(name.length + 3) : fallback;
}

function usage(msg) {
  console.error(`fuzz: ${msg}`);
  console.error('usage: node scripts/fuzz.mjs [--inputs N] [--seed S] [--bindings core,tcp,ws,ws-host,ble,espnow] [--episode-inputs E] [--replay INDEX] [--strict-malformed] [--slots N] [--loopback N]');
  process.exit(2);
}

const inputs = Number(arg('inputs', '1000000'));
const seed = Number(arg('seed', String((Date.now() ^ (process.pid << 16)) >>> 0))) >>> 0;
const episodeInputs = Number(arg('episode-inputs', '5000'));
const heapEvery = Number(arg('heap-every', '100000'));
const replayArg = arg('replay', undefined);
const traceLines = Number(arg('trace-lines', '120'));
const bindingsArg = arg('bindings', arg('binding', undefined));
// §12.5 as written: a second HELLO and an out-of-range CATALOG count as malformed (test/lib/fuzz.ts strictMalformed).
const strictMalformed = process.argv.includes('--strict-malformed');
// The hubs' slot count (default: drawn per episode, 8 or 4).
const slotsArg = arg('slots', undefined);
const slots = slotsArg === undefined ? undefined : Number(slotsArg);
if (slots !== undefined && !(Number.isInteger(slots) && slots >= 1 && slots <= 255)) usage('--slots must be an integer in 1..255');
// Inputs sent over real loopback sockets after the in-memory run (0: none).
const loopbackInputs = Number(arg('loopback', String(Math.min(20000, Math.floor(inputs / 50)))));
if (!(Number.isInteger(inputs) && inputs > 0)) usage('--inputs must be a positive integer');
if (!(Number.isInteger(episodeInputs) && episodeInputs > 0)) usage('--episode-inputs must be a positive integer');

// One bundle: the fuzz machinery, the hub, and the host adapters of bindings/tcp/node.ts for the
// loopback phase. Written under build/ so that the `ws` package resolves from node_modules.
const ENTRY = `
export * from './test/lib/fuzz.ts';
export { Hub } from './hub/hub.ts';
export { encodeFrame, FrameType, PROTOCOL_VERSION } from './hub/frames.ts';
export { CborWriter } from './hub/cbor.ts';
export { loadCatalog } from './catalog/index.ts';
export { DEFAULT_CATALOG } from './catalog/default.ts';
export { credentialStore, SeededRandom, OPERATOR_CREDENTIAL } from './test/lib/hub-fixture.ts';
export { TcpListener, WsListener } from './bindings/tcp/node.ts';
`;

async function load() {
  const out = await esbuild.build({
    stdin: { contents: ENTRY, resolveDir: repo, sourcefile: 'fuzz-entry.ts', loader: 'ts' },
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'es2022',
    external: ['ws'],
    write: false,
    logLevel: 'silent',
    sourcemap: 'inline',
  });
  mkdirSync(join(repo, 'build'), { recursive: true });
  const dir = mkdtempSync(join(repo, 'build', '.fuzz-'));
  const file = join(dir, 'fuzz.mjs');
  writeFileSync(file, out.outputFiles[0].text);
  try {
    return await import(pathToFileURL(file).href);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc');
function heapMb() {
  gc();
  gc();
  return process.memoryUsage().heapUsed / (1024 * 1024);
}

const fmt = (x, d = 1) => (Number.isFinite(x) ? x.toFixed(d) : String(x));

function bindingsOf(fz) {
  if (!bindingsArg) return [...fz.BINDINGS];
  const list = bindingsArg.split(',').map((s) => s.trim()).filter(Boolean);
  for (const b of list) if (!fz.BINDINGS.includes(b)) usage(`unknown binding ${b} (known: ${fz.BINDINGS.join(', ')})`);
  return list;
}

function replayCommand(f, bindings) {
  const parts = ['node scripts/fuzz.mjs', `--seed ${f.seed}`];
  if (bindingsArg) parts.push(`--bindings ${bindings.join(',')}`);
  if (episodeInputs !== 5000) parts.push(`--episode-inputs ${episodeInputs}`);
  if (strictMalformed) parts.push('--strict-malformed');
  if (slots !== undefined) parts.push(`--slots ${slots}`);
  parts.push(`--replay ${f.index}`);
  return parts.join(' ');
}

function reportFailure(fz, f, bindings) {
  console.log('');
  console.log(`FAILED at seed ${f.seed}, input ${f.index} (episode ${f.episode}, binding ${f.binding})`);
  console.log(`  invariant: ${f.invariant}`);
  console.log(`  detail:    ${f.detail.split('\n').join('\n             ')}`);
  console.log(`  input:     ${f.inputHex || '(none)'}`);
  console.log(`  replay:    ${replayCommand(f, bindings)}`);
  console.log(`             (replays inputs ${fz.episodeStart(f.index, episodeInputs)}..${f.index}, the failing input's episode, with a trace)`);
}

async function replay(fz, index, bindings) {
  const lines = [];
  const from = fz.episodeStart(index, episodeInputs);
  const t0 = process.hrtime.bigint();
  try {
    fz.runFuzz({ seed, bindings, episodeInputs, strictMalformed, slots, trace: (l) => lines.push(l) }, from, index + 1);
  } catch (e) {
    if (!(e instanceof fz.FuzzFailure)) throw e;
    console.log(lines.slice(-traceLines).join('\n'));
    reportFailure(fz, e, bindings);
    process.exitCode = 1;
    return;
  }
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  console.log(lines.slice(-traceLines).join('\n'));
  console.log(`\nreplayed inputs ${from}..${index} of seed ${seed} in ${fmt(ms, 0)} ms: no invariant failed`);
}


// ------------------------------------------------------------------------------------ loopback

/**
 * The same fuzz traffic through real sockets: bindings/tcp/node.ts's TCP and WebSocket listeners
 * on loopback, real clients (node:net, the `ws` package), the hub on the wall clock. Timing is the
 * operating system's, so a failure here names its seed and input but may not replay exactly. The
 * checks run every CHECK_EVERY inputs and at the end: nothing thrown (hub, adapters, timers), no
 * fault the core caught, every frame any client got is valid, the latch moved only with a valid
 * ESTOP frame or an ESTOP_CLEAR in between, slots and never-shed queues bounded, and an observer on
 * its own connection kept receiving its data with no refusal.
 */
async function loopback(fz, n, bindings) {
  const CHECK_EVERY = 200;
  const CLIENTS = 4;
  const rng = new fz.Prng(fz.mixSeed(seed, 0x100b));
  const catalog = fz.loadCatalog(fz.DEFAULT_CATALOG);
  const origin = performance.now();
  const clock = { now: () => 1000 + Math.floor(performance.now() - origin) };
  const log = new fz.CountingLog();
  const robot = new fz.CheckingRobot(catalog, new fz.Prng(seed ^ 0x77));
  // No deadman here: with real timing its latches could not be told from the ones a frame caused.
  const hub = new fz.Hub({ clock, random: new fz.SeededRandom(seed || 1), store: fz.credentialStore(), robot, catalog, log }, { capacityHz: 1e6, deadmanMs: 1e9 });
  robot.hub = hub;
  const spy = new fz.Spy();
  const attach = fz.spyAttach(hub, spy);
  const tcp = await fz.TcpListener.listen({ hub: attach, clock });
  const wsl = await fz.WsListener.listen({ hub: attach, clock });
  const kinds = [];
  if (bindings.includes('tcp')) kinds.push('tcp');
  if (bindings.includes('ws') || bindings.includes('ws-host')) kinds.push('ws');
  if (kinds.length === 0) return null;
  const problems = [];
  const fail = (what) => {
    if (problems.length < 10) problems.push(what);
  };
  const onUncaught = (e) => fail(`uncaught exception: ${e && e.stack ? e.stack : e}`);
  process.on('uncaughtException', onUncaught);
  const guard = (what, fn) => {
    try {
      fn();
    } catch (e) {
      fail(`${what} threw: ${e && e.stack ? e.stack : e}`);
    }
  };
  const tickTimer = setInterval(() => guard('hub.tick', () => hub.tick()), 10);
  const v6 = new Float64Array(6);
  const pubTimer = setInterval(
    () =>
      guard('publishSample', () => {
        for (let i = 0; i < 6; i++) v6[i] = Math.random();
        hub.publishSample(10, clock.now(), v6, 6);
        hub.publishSample(11, clock.now(), v6, 5);
        hub.publishSample(15, clock.now(), v6, 6);
      }),
    5,
  );
  const w = new fz.CborWriter(new Uint8Array(16384));
  const encode = (f) => {
    w.reset();
    fz.encodeFrame(f, w);
    return w.buf.slice(0, w.pos);
  };
  const stats = { inputs: 0, connections: 0, frames: 0, nacks: 0, welcomes: 0, latches: 0, clears: 0, observerData: 0, coreFrames: 0 };
  const crafter = new fz.Crafter(catalog);
  const corpus = fz.vectorCorpus();

  // A length-prefixed TCP client or a `ws` client; every frame it gets is checked.
  function connect(kind, onFrame, share = true) {
    const c = { kind, open: false, closed: false, socket: null, ws: null, ctx: new fz.ClientContext() };
    const take = (bytes) => {
      let r;
      try {
        r = fz.checkHubFrame(bytes, 0, bytes.length, `loopback ${kind}`);
      } catch (e) {
        fail(`${e.message}`);
        return;
      }
      stats.frames++;
      c.ctx.received++;
      if (r.estop) {
        c.ctx.estopSeq = r.estop.seq;
        c.ctx.latched = r.estop.kind === 1;
      } else if (r.frame.type === fz.FrameType.WELCOME) {
        c.ctx.welcomed = true;
        c.ctx.sessionId = r.frame.sessionId;
        c.ctx.tier = r.frame.tier;
        // The observer's token stays its own: a fuzz client resuming its session is no attack.
        if (share) crafter.rememberToken(r.frame.resumeToken);
        stats.welcomes++;
      } else if (r.frame.type === fz.FrameType.GOODBYE) c.ctx.welcomed = false;
      else if (r.frame.type === fz.FrameType.NACK) stats.nacks++;
      if (onFrame) onFrame(r);
    };
    if (kind === 'tcp') {
      const socket = net.connect(tcp.port, '127.0.0.1');
      socket.setNoDelay(true);
      let buf = Buffer.alloc(0);
      socket.on('connect', () => (c.open = true));
      socket.on('data', (d) => {
        buf = buf.length ? Buffer.concat([buf, d]) : d;
        while (buf.length >= 2) {
          const len = buf.readUInt16BE(0);
          if (buf.length < 2 + len) break;
          take(new Uint8Array(buf.subarray(2, 2 + len)));
          buf = buf.subarray(2 + len);
        }
      });
      socket.on('error', () => {});
      socket.on('close', () => (c.closed = true));
      c.socket = socket;
    } else {
      const ws = new WebSocket(`ws://127.0.0.1:${wsl.port}/hub`);
      ws.binaryType = 'nodebuffer';
      ws.on('open', () => (c.open = true));
      ws.on('message', (d, binary) => {
        if (!binary) fail('the hub sent a WebSocket text message');
        else take(new Uint8Array(d));
      });
      ws.on('error', () => {});
      ws.on('close', () => (c.closed = true));
      c.ws = ws;
    }
    stats.connections++;
    return c;
  }

  async function opened(c) {
    for (let i = 0; i < 200 && !c.open && !c.closed; i++) await sleep(1);
    return c.open && !c.closed;
  }

  function frames(c) {
    const out = [];
    const k = 1 + rng.below(3);
    for (let i = 0; i < k; i++) {
      const r = rng.float();
      if (r < 0.45) out.push(crafter.frame(rng, c.ctx));
      else if (r < 0.75) out.push(fz.mutateFrame(rng, crafter.frame(rng, c.ctx), corpus));
      else if (r < 0.9) out.push(fz.mutateFrame(rng, rng.pick(corpus), corpus));
      else if (r < 0.95) out.push(rng.pick(corpus).slice());
      else out.push(rng.bytes(rng.below(rng.chance(0.9) ? 64 : 1400)));
    }
    return out;
  }

  function send(c, list) {
    if (c.kind === 'tcp') {
      const parts = [];
      for (const f of list) {
        let len = f.length;
        if (rng.chance(0.02)) len = rng.pick([0, f.length + 1, 1025, 0xffff]);
        const head = Buffer.alloc(2);
        head.writeUInt16BE(Math.max(0, Math.min(0xffff, len)));
        parts.push(head, Buffer.from(f));
      }
      if (!c.socket.destroyed) c.socket.write(Buffer.concat(parts));
    } else if (c.ws.readyState === WebSocket.OPEN) {
      for (const f of list) c.ws.send(f, { binary: !rng.chance(0.03) });
    }
  }

  // The observer's frames, framed as a well-behaved client frames them: never mangled, and
  // drawing nothing from the fuzzer's random stream (its pings come on real time).
  function sendClean(c, list) {
    const parts = [];
    for (const f of list) {
      const head = Buffer.alloc(2);
      head.writeUInt16BE(f.length);
      parts.push(head, Buffer.from(f));
    }
    if (!c.socket.destroyed) c.socket.write(Buffer.concat(parts));
  }

  function drop(c) {
    if (c.socket) c.socket.destroy();
    if (c.ws) c.ws.terminate();
  }

  // The observer: its own TCP connection, valid frames only.
  let observerBad = 0;
  let observerBadFrame = null;
  const observer = connect('tcp', (r) => {
    if (r.frame && r.frame.type === fz.FrameType.DATA && !catalog.byId(r.frame.channelId).critical) stats.observerData++;
    if (r.frame && (r.frame.type === fz.FrameType.NACK || r.frame.type === fz.FrameType.GOODBYE)) {
      observerBad++;
      if (observerBadFrame === null) observerBadFrame = r.frame;
    }
  }, false);
  if (!(await opened(observer))) throw new Error('loopback: the observer could not connect');
  sendClean(observer, [encode({ type: fz.FrameType.HELLO, version: fz.PROTOCOL_VERSION, name: 'observer', subWishes: [{ channelId: 10, wishedRateHz: 50 }, { channelId: 11, wishedRateHz: 20 }, { channelId: 1, wishedRateHz: 10 }, { channelId: 3, wishedRateHz: 2 }] })]);
  await sleep(20);
  // The observer pings every second as a client does (§5.13), so that the hub's liveness
  // timeout (§6.5, 5 s) never reads a long run on a busy machine as a silent client.
  const pingTimer = setInterval(() => sendClean(observer, [encode({ type: fz.FrameType.PING, t0: Math.floor(performance.now()) })]), 1000);

  const clients = [];
  let latched = hub.latch.latched;
  let lastData = stats.observerData;
  let lastCheckAt = performance.now();
  const check = (index) => {
    stats.coreFrames += spy.frames;
    if (log.internalErrors > 0) fail(`no-internal-error: the core caught ${log.internalErrors} fault(s) of its own`);
    if (robot.problems.length) fail(`robot: ${robot.problems.join('; ')}`);
    const sessions = hub.sessions();
    if (sessions.length > hub.config.slots) fail(`slots: ${sessions.length} sessions`);
    for (const x of sessions) if (x.neverShedBytes > hub.config.neverShedBytes) fail(`never-shed-bounded: ${x.neverShedBytes}`);
    const now = hub.latch.latched;
    if (now && !latched) {
      stats.latches++;
      if (spy.asserts === 0) fail('latch: latched without a valid ESTOP frame since the last check');
    }
    if (!now && latched) {
      stats.clears++;
      if (spy.clears === 0) fail('latch: cleared without an ESTOP_CLEAR since the last check');
    }
    latched = now;
    spy.reset();
    if (observer.closed) fail('observer: its connection was closed');
    if (observerBad > 0) fail(`observer: it was sent ${observerBad} NACK/GOODBYE frame(s), the first ${JSON.stringify(observerBadFrame, (_k, v) => (v instanceof Uint8Array ? Array.from(v) : v))}`);
    const t = performance.now();
    if (t - lastCheckAt > 100 && stats.observerData === lastData) fail(`observer: no data for ${(t - lastCheckAt).toFixed(0)} ms`);
    lastData = stats.observerData;
    lastCheckAt = t;
    if (problems.length) throw Object.assign(new Error(problems.join('\n')), { index });
  };

  let failure = null;
  try {
    for (let i = 0; i < n; i++) {
      const k = rng.below(CLIENTS);
      let c = clients[k];
      if (!c || c.closed || rng.chance(0.005)) {
        if (c) drop(c);
        c = connect(rng.pick(kinds));
        clients[k] = c;
        if (!(await opened(c))) continue;
      }
      send(c, frames(c));
      stats.inputs++;
      if (i % 8 === 0) await sleep(0);
      else await new Promise((r) => setImmediate(r));
      if ((i + 1) % CHECK_EVERY === 0) check(i);
      if ((i + 1) % 5000 === 0) process.stderr.write(`  loopback: ${i + 1} inputs, ${stats.connections} connections, ${stats.welcomes} sessions opened\n`);
    }
    await sleep(200);
    check(n - 1);
  } catch (e) {
    failure = e;
  } finally {
    clearInterval(tickTimer);
    clearInterval(pubTimer);
    clearInterval(pingTimer);
    for (const c of clients) if (c) drop(c);
    drop(observer);
    await tcp.close();
    await wsl.close();
    await sleep(50);
    process.off('uncaughtException', onUncaught);
  }
  return { stats, failure, kinds };
}

async function main() {
  const fz = await load();
  const bindings = bindingsOf(fz);
  if (replayArg !== undefined) {
    const index = Number(replayArg);
    if (!(Number.isInteger(index) && index >= 0)) usage('--replay takes an input index');
    await replay(fz, index, bindings);
    return;
  }
  // Every refused frame constructs an Error; capturing its stack is most of what one costs on V8.
  // The soak runs without stacks; a replay (--replay) has them.
  Error.stackTraceLimit = 0;
  const heapBefore = heapMb();
  const heapSamples = [];
  const stats = new fz.FuzzStats();
  const t0 = process.hrtime.bigint();
  process.stderr.write(`fuzz: seed ${seed}, ${inputs} inputs, episodes of ${episodeInputs}, bindings ${bindings.join(',')}${strictMalformed ? ', strict §12.5' : ''}; heap ${fmt(heapBefore)} MB\n`);
  let failure = null;
  try {
    fz.runFuzz({ seed, bindings, episodeInputs, strictMalformed, slots }, 0, inputs, stats, (done) => {
      if (done % 10000 === 0) {
        const s = Number(process.hrtime.bigint() - t0) / 1e9;
        process.stderr.write(`  ${done} inputs, ${fmt(s)} s, ${fmt(done / s, 0)}/s, ${stats.welcomes} sessions opened, ${stats.latches} latches\n`);
      }
      if (done % heapEvery === 0) {
        // Measured while an episode's hubs are live: what they retain is in the number.
        const h = heapMb();
        heapSamples.push([done, h]);
        process.stderr.write(`  heap at ${done} inputs: ${fmt(h)} MB after a full collection; the live hub holds ${stats.lastSessions} sessions, ${stats.lastSubscriptions} subscriptions\n`);
      }
    });
  } catch (e) {
    if (!(e instanceof fz.FuzzFailure)) throw e;
    failure = e;
  }
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  const heapAfterRun = heapMb();
  let lb = null;
  let lbSeconds = 0;
  if (!failure && loopbackInputs > 0) {
    process.stderr.write(`fuzz: loopback, ${loopbackInputs} inputs over real TCP and WebSocket sockets (bindings/tcp/node.ts)\n`);
    const l0 = process.hrtime.bigint();
    lb = await loopback(fz, loopbackInputs, bindings);
    lbSeconds = Number(process.hrtime.bigint() - l0) / 1e9;
  }
  const heapAfter = lb ? heapMb() : heapAfterRun;
  if (failure) {
    reportFailure(fz, failure, bindings);
    process.exitCode = 1;
  }
  const nackNames = Object.fromEntries(Object.entries(fz.NACK_CODES).map(([k, v]) => [v, k]));
  const nacks = stats.nacks.map((n, code) => (n ? `${nackNames[code] ?? code} ${n}` : null)).filter(Boolean).join(', ');
  const heapValues = heapSamples.map(([, h]) => h);
  console.log('');
  console.log(`hub fuzz soak: seed ${seed}`);
  console.log(`  inputs          ${stats.inputs}${failure ? ` (stopped by a failure at ${failure.index})` : ''} in ${stats.episodes} episodes of ${episodeInputs}, ${fmt(seconds)} s (${fmt(stats.inputs / seconds, 0)} inputs/s)`);
  console.log(`  per binding     ${Object.entries(stats.perBinding).map(([k, v]) => `${k} ${v}`).join(', ')}`);
  console.log(`  reached core    ${stats.coreFrames} frames; ${stats.welcomes} WELCOMEs, ${stats.goodbyes} GOODBYEs, ${stats.parks} parks`);
  console.log(`  NACKs           ${nacks}`);
  console.log(`  ESTOP           ${stats.latches} latches, ${stats.unlatches} clears; control changed hands ${stats.ownerChanges} times`);
  console.log(`  robot           ${stats.robotPublished} bundles, ${stats.robotIntents} intents accepted`);
  console.log(`  observer        ${stats.observerData} DATA frames, identical to the control hub's after every input`);
  console.log(`  hub structures  max ${stats.maxSessions} sessions, ${stats.maxSubscriptions} subscriptions, ${stats.maxNeverShedBytes} never-shed bytes in one session; at the end ${stats.lastSessions} sessions, ${stats.lastSubscriptions} subscriptions`);
  console.log(`  heap            ${fmt(heapBefore)} MB before, ${fmt(heapAfterRun)} MB after${heapValues.length ? `; while running min ${fmt(Math.min(...heapValues))}, max ${fmt(Math.max(...heapValues))} MB over ${heapValues.length} samples (each after a full collection, with an episode's hubs live)` : ''}${lb ? `; ${fmt(heapAfter)} MB after the loopback phase` : ''}`);
  if (lb) {
    const x = lb.stats;
    console.log(`  loopback        ${x.inputs} inputs over real ${lb.kinds.join(' and ')} sockets in ${fmt(lbSeconds)} s: ${x.connections} connections, ${x.welcomes} sessions, ${x.coreFrames} frames reached the core, ${x.frames} frames back (${x.nacks} NACKs), ${x.latches} latches / ${x.clears} clears, observer got ${x.observerData} DATA`);
    if (lb.failure) {
      console.log(`  loopback FAILED near input ${lb.failure.index ?? '?'} of seed ${seed} (real timing: the replay may differ): ${lb.failure.message}`);
      process.exitCode = 1;
    }
  }
  console.log(`  result          ${failure ? `FAILED (${failure.invariant})` : lb && lb.failure ? 'FAILED (loopback)' : 'every invariant held after every input'}`);
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : e);
  process.exitCode = 1;
});
