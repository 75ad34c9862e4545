// The health endpoints over real HTTP on loopback: bindings/tcp/http-node.ts on node:net, asked by
// Node's own `http` client (an independent HTTP implementation), with a real Hub on a virtual
// clock and a named, credentialed client connected. Bearer authentication with a missing, a
// wrong, a short (refused at configuration) and the correct token; the per-address rate limit;
// the public coarse answer ready and not ready; a raw socket for what `http` will not send.
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { HttpHealthServer } from '../../bindings/tcp/http-node.js';
import type { HealthSource } from '../../bindings/tcp/http.js';
import { findInReport, OPERATIONS_FAILED_LIMIT, OPERATIONS_RATE_LIMIT, OPERATIONS_RATE_WINDOW_MS } from '../../hub/health.js';
import { makeHub, OPERATOR_CREDENTIAL, TestClient, type Fixture } from '../lib/hub-fixture.js';

const WAIT_MS = 5000; // every real-time wait fails after this
const TOKEN = 'op-token-4f9c2e71b8d05a3c6e1f92d7a4b8c0e5'; // 42 characters
const CLIENT_NAME = 'operator-console-Alice';
const CREDENTIAL_TEXT = String.fromCharCode(...OPERATOR_CREDENTIAL);

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

function bounded<T>(p: Promise<T>, what: string, ms = WAIT_MS): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const limit = new Promise<never>((_, bad) => {
    timer = setTimeout(() => bad(new Error(`timed out after ${ms} ms waiting for ${what}`)), ms);
  });
  return Promise.race([p, limit]).finally(() => clearTimeout(timer));
}

function get(server: HttpHealthServer, path: string, headers: Record<string, string> = {}): Promise<Reply> {
  const p = new Promise<Reply>((ok, bad) => {
    const req = http.get({ host: server.host, port: server.port, path, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => ok({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', bad);
    });
    req.on('error', bad);
  });
  return bounded(p, `GET ${path}`);
}

/** Raw bytes, one write per piece; resolves with everything the server sent before closing. */
function raw(server: HttpHealthServer, pieces: string[]): Promise<string> {
  const p = new Promise<string>((ok, bad) => {
    const s = net.connect(server.port, server.host);
    const got: Buffer[] = [];
    s.on('data', (c: Buffer) => got.push(c));
    s.on('error', bad);
    s.on('close', () => ok(Buffer.concat(got).toString('latin1')));
    s.on('connect', async () => {
      for (const piece of pieces) {
        if (s.destroyed) break;
        s.write(piece);
        await new Promise((r) => setImmediate(r));
      }
    });
  });
  return bounded(p, 'a raw exchange');
}

async function until(cond: () => boolean, what: string): Promise<void> {
  const end = performance.now() + WAIT_MS;
  while (!cond()) {
    if (performance.now() > end) throw new Error(`timed out after ${WAIT_MS} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

function common(r: Reply): void {
  assert.equal(r.headers['content-type'], 'application/json');
  assert.equal(r.headers['cache-control'], 'no-store');
  assert.equal(r.headers['connection'], 'close');
}

describe('health over HTTP on loopback (node:net server, node:http client)', function () {
  this.timeout(20000);
  let fx: Fixture;
  let client: TestClient;
  let notReady = false;
  const servers: HttpHealthServer[] = [];

  async function serve(token: string | undefined): Promise<HttpHealthServer> {
    const hub = fx.hub;
    const source: HealthSource = {
      healthReport: () => hub.healthReport(),
      // The real hub admits; the not-ready answer is forced here (admission's own triggers are tested in core).
      ready: () => !notReady && hub.ready(),
    };
    const s = await HttpHealthServer.listen({ net, source, clock: fx.clock, token });
    servers.push(s);
    return s;
  }

  beforeEach(() => {
    notReady = false;
    fx = makeHub();
    client = new TestClient(fx.hub);
    const welcome = client.hello({ name: CLIENT_NAME, credential: OPERATOR_CREDENTIAL });
    assert.ok(welcome.sessionId >= 0);
    assert.equal(fx.hub.sessions().length, 1);
  });

  afterEach(async () => {
    await Promise.all(servers.splice(0).map((s) => bounded(s.close(), 'server close')));
  });

  it('serves on 127.0.0.1 on its own port', async () => {
    const s = await serve(TOKEN);
    assert.equal(s.host, '127.0.0.1');
    assert.ok(s.port > 0);
  });

  it('GET /health: 200 ready, 503 not-ready, no token needed', async () => {
    const s = await serve(TOKEN);
    assert.equal(fx.hub.ready(), true);
    const a = await get(s, '/health');
    assert.equal(a.status, 200);
    common(a);
    assert.deepEqual(JSON.parse(a.body), { status: 'ready', ready: 1, metrics: { version: 1 } });
    notReady = true;
    const b = await get(s, '/health');
    assert.equal(b.status, 503);
    common(b);
    assert.deepEqual(JSON.parse(b.body), { status: 'not-ready', ready: 0, metrics: { version: 1 } });
  });

  it('GET /api/operations/health without a token: 401 with WWW-Authenticate: Bearer', async () => {
    const s = await serve(TOKEN);
    const r = await get(s, '/api/operations/health');
    assert.equal(r.status, 401);
    assert.equal(r.headers['www-authenticate'], 'Bearer');
    common(r);
    assert.deepEqual(JSON.parse(r.body), { error: 'unauthorized' });
  });

  it('with a wrong token: 401, the same answer as a missing one', async () => {
    const s = await serve(TOKEN);
    const missing = await get(s, '/api/operations/health');
    const wrong = await get(s, '/api/operations/health', { Authorization: `Bearer ${TOKEN.slice(0, -1)}0` });
    const basic = await get(s, '/api/operations/health', { Authorization: `Basic ${TOKEN}` });
    for (const r of [wrong, basic]) {
      assert.equal(r.status, 401);
      assert.equal(r.headers['www-authenticate'], 'Bearer');
      assert.equal(r.body, missing.body);
    }
  });

  it('with a 31-character token configured: refused at configuration, the endpoint disabled (404)', async () => {
    const short = TOKEN.slice(0, 31);
    const s = await serve(short);
    assert.equal(s.service.detailedEnabled, false);
    assert.match(s.tokenProblem, /too short: 31 characters/);
    assert.ok(!s.tokenProblem.includes(short));
    const r = await get(s, '/api/operations/health', { Authorization: `Bearer ${short}` });
    assert.equal(r.status, 404);
    common(r);
    // Disabled outright: the coarse endpoint still answers.
    assert.equal((await get(s, '/health')).status, 200);
  });

  it('without a token configured: 404', async () => {
    const s = await serve(undefined);
    assert.equal(s.tokenProblem, '');
    assert.equal((await get(s, '/api/operations/health', { Authorization: `Bearer ${TOKEN}` })).status, 404);
  });

  it('with the correct token: 200 and the metrics.version 1 report, free of the client’s name and credential and of the token', async () => {
    const s = await serve(TOKEN);
    const r = await get(s, '/api/operations/health', { Authorization: `Bearer ${TOKEN}` });
    assert.equal(r.status, 200);
    common(r);
    assert.equal(Number(r.headers['content-length']), Buffer.byteLength(r.body));
    const report = JSON.parse(r.body) as { metrics: { version: number; sessions?: unknown } };
    assert.equal(report.metrics.version, 1);
    // The report is the hub's own (the session is counted), not a canned body.
    assert.deepEqual(JSON.parse(JSON.stringify(fx.hub.healthReport())), report);
    assert.ok(r.body.length > 200);
    assert.deepEqual(findInReport(report, [CLIENT_NAME, 'Alice', CREDENTIAL_TEXT, TOKEN, '127.0.0.1']), []);
  });

  it('rate limit: 5 requests per 10 s from one address, then 429 with Retry-After, until the window passes', async () => {
    const s = await serve(TOKEN);
    const auth = { Authorization: `Bearer ${TOKEN}` };
    const statuses: number[] = [];
    statuses.push((await get(s, '/api/operations/health', { Authorization: 'Bearer guess' })).status);
    for (let i = 1; i < OPERATIONS_RATE_LIMIT; i++) statuses.push((await get(s, '/api/operations/health', auth)).status);
    assert.deepEqual(statuses, [401, 200, 200, 200, 200]);
    const over = await get(s, '/api/operations/health', auth);
    assert.equal(over.status, 429);
    assert.equal(over.headers['retry-after'], '10');
    common(over);
    // The public endpoint is not rate-limited.
    assert.equal((await get(s, '/health')).status, 200);
    fx.clock.advance(OPERATIONS_RATE_WINDOW_MS);
    assert.equal((await get(s, '/api/operations/health', auth)).status, 200);
  });

  it('rate limit over every address: wrong tokens from 60 rotated loopback sources stop at the failed-attempt limit', async () => {
    const s = await serve(TOKEN);
    const statuses: number[] = [];
    for (let a = 2; a < 62; a++) {
      const p = new Promise<number>((ok, bad) => {
        const req = http.get(
          { host: s.host, port: s.port, path: '/api/operations/health', localAddress: `127.0.0.${a}`, headers: { Authorization: 'Bearer guess' }, agent: false },
          (res) => {
            res.resume();
            res.on('end', () => ok(res.statusCode ?? 0));
          },
        );
        req.on('error', bad);
      });
      statuses.push(await bounded(p, `GET from 127.0.0.${a}`));
    }
    assert.equal(statuses.filter((x) => x === 401).length, OPERATIONS_FAILED_LIMIT);
    assert.equal(statuses.filter((x) => x === 429).length, 60 - OPERATIONS_FAILED_LIMIT);
  });

  it('refuses what `http` will not send, over a raw socket fed a byte at a time, and closes', async () => {
    const s = await serve(TOKEN);
    const req = 'GET /health HTTP/1.1\r\nHost: hub\r\n\r\n';
    const ok = await raw(s, req.split(''));
    assert.match(ok, /^HTTP\/1\.1 200 OK\r\n/);
    assert.match(await raw(s, ['POST /health HTTP/1.1\r\nHost: hub\r\n\r\n']), /^HTTP\/1\.1 405 Method Not Allowed\r\n[^]*Allow: GET\r\n/);
    assert.match(await raw(s, ['GET /health HTTP/1.1\nHost: hub\n\n']), /^HTTP\/1\.1 400 Bad Request\r\n/);
    assert.match(await raw(s, [`GET /${'x'.repeat(2000)} HTTP/1.1\r\n`]), /^HTTP\/1\.1 414 URI Too Long\r\n/);
    assert.match(await raw(s, ['GET /health HTTP/1.1\r\n', `X-Pad: ${'p'.repeat(3000)}`]), /^HTTP\/1\.1 431 /);
    assert.match(await raw(s, ['GET /health HTTP/1.1\r\nHost: hub\r\nContent-Length: 4\r\n\r\nbody']), /^HTTP\/1\.1 413 /);
    await until(() => s.service.connections === 0, 'every slot released');
  });
});
