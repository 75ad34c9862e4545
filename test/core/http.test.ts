// bindings/tcp/http.ts: the GET parser fed whole, byte by byte and split at every boundary; every
// refusal and every limit at its edge; the answers of both health endpoints with a fake source
// and a fake clock (token configuration, 401 without saying why, the per-address rate, 404s);
// the exchange slots; and the device adapter over fake ECMA-419 sockets.
import { deepEqual, equal, ok } from '../lib/assert.js';
import {
  HTTP_AUTH_KEEP,
  HTTP_DEFAULT_MAX_CONNECTIONS,
  HTTP_MAX_HEADER_BYTES,
  HTTP_MAX_HEADERS,
  HTTP_MAX_REQUEST_LINE,
  HTTP_PATH_KEEP,
  HTTP_RESPONSE_BYTES,
  HealthPath,
  HttpHealthService,
  HttpParse,
  HttpRequestParser,
  HttpStatus,
  operatorTokenProblem,
  type HealthSource,
  type HttpOwner,
} from '../../bindings/tcp/http.js';
import { HttpDeviceServer, type DeviceTcpLike, type DeviceTcpOptions } from '../../bindings/tcp/http-device.js';
import { OPERATIONS_RATE_LIMIT, OPERATIONS_RATE_WINDOW_MS, OPERATOR_TOKEN_MAX_CHARS, OPERATOR_TOKEN_MIN_CHARS } from '../../hub/health.js';

function bytes(s: string): Uint8Array {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}

function text(b: Uint8Array, start = 0, end = b.length): string {
  let s = '';
  for (let i = start; i < end; i++) s += String.fromCharCode(b[i] as number);
  return s;
}

function parse(req: string): HttpRequestParser {
  const p = new HttpRequestParser();
  const b = bytes(req);
  p.push(b, 0, b.length);
  return p;
}

const GOOD = 'GET /api/operations/health?x=1 HTTP/1.1\r\nHost: hub\r\nAuthorization:   Bearer abc \t\r\nAccept: */*\r\n\r\n';

describe('http: request parser', () => {
  it('pins its limits', () => {
    equal(HTTP_MAX_REQUEST_LINE, 1024);
    equal(HTTP_MAX_HEADER_BYTES, 2048);
    equal(HTTP_MAX_HEADERS, 32);
    equal(HTTP_PATH_KEEP, 64);
    equal(HTTP_AUTH_KEEP, 7 + OPERATOR_TOKEN_MAX_CHARS);
  });

  it('reads a GET whole: the path before the query, the Authorization value trimmed', () => {
    const p = parse(GOOD);
    equal(p.status, HttpParse.DONE);
    ok(p.pathIs(HealthPath.DETAILED));
    ok(!p.pathIs(HealthPath.COARSE));
    equal(p.authorization(), 'Bearer abc');
    equal(p.consumed, GOOD.length);
  });

  it('gives the same result fed one byte at a time', () => {
    const p = new HttpRequestParser();
    const b = bytes(GOOD);
    for (let i = 0; i < b.length; i++) {
      const r = p.push(b, i, i + 1);
      equal(r, i === b.length - 1 ? HttpParse.DONE : HttpParse.MORE, `byte ${i}`);
    }
    ok(p.pathIs(HealthPath.DETAILED));
    equal(p.authorization(), 'Bearer abc');
  });

  it('gives the same result split at every boundary, for requests and refusals alike', () => {
    const cases: [string, number][] = [
      [GOOD, HttpParse.DONE],
      ['GET /health HTTP/1.0\r\n\r\n', HttpParse.DONE],
      ['POST /health HTTP/1.1\r\nHost: h\r\n\r\n', HttpStatus.METHOD_NOT_ALLOWED],
      ['GET /health HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n', HttpStatus.CONTENT_TOO_LARGE],
      ['GET /health HTTP/1.1\nHost: h\r\n\r\n', HttpStatus.BAD_REQUEST],
    ];
    for (const [req, want] of cases) {
      const b = bytes(req);
      for (let cut = 0; cut <= b.length; cut++) {
        const p = new HttpRequestParser();
        let r = p.push(b, 0, cut);
        if (r === HttpParse.MORE) r = p.push(b, cut, b.length);
        equal(r, want, `${JSON.stringify(req)} cut at ${cut}`);
      }
    }
  });

  it('ignores bytes after the request (one request per connection)', () => {
    const p = new HttpRequestParser();
    const b = bytes('GET /health HTTP/1.1\r\nHost: h\r\n\r\nGET /x HTTP/1.1\r\n\r\n');
    equal(p.push(b, 0, b.length), HttpParse.DONE);
    equal(p.consumed, 'GET /health HTTP/1.1\r\nHost: h\r\n\r\n'.length);
    equal(p.push(b, 0, b.length), HttpParse.DONE);
    equal(p.consumed, 0);
    ok(p.pathIs(HealthPath.COARSE));
  });

  it('refuses with the right status, and the refusal is sticky', () => {
    const H = 'Host: h\r\n';
    const cases: [string, number][] = [
      // request line
      [`GET  /health HTTP/1.1\r\n${H}\r\n`, HttpStatus.BAD_REQUEST],
      [`GET health HTTP/1.1\r\n${H}\r\n`, HttpStatus.BAD_REQUEST],
      [`GET http://hub/health HTTP/1.1\r\n${H}\r\n`, HttpStatus.BAD_REQUEST],
      [`GET * HTTP/1.1\r\n${H}\r\n`, HttpStatus.BAD_REQUEST],
      [`GET /he\x01alth HTTP/1.1\r\n${H}\r\n`, HttpStatus.BAD_REQUEST],
      [`GET /h\xe9 HTTP/1.1\r\n${H}\r\n`, HttpStatus.BAD_REQUEST],
      [`GET /health\r\n${H}\r\n`, HttpStatus.BAD_REQUEST],
      [`GET /health HTTP/1.1 \r\n${H}\r\n`, HttpStatus.BAD_REQUEST],
      [`GET /health http/1.1\r\n${H}\r\n`, HttpStatus.BAD_REQUEST],
      [`GET /health HTTP/1.10\r\n${H}\r\n`, HttpStatus.BAD_REQUEST],
      [`GET /health HTTP/2.0\r\n${H}\r\n`, HttpStatus.VERSION_NOT_SUPPORTED],
      [`GET /health HTTP/1.1\r\r\n${H}\r\n`, HttpStatus.BAD_REQUEST],
      [`\nGET /health HTTP/1.1\r\n${H}\r\n`, HttpStatus.BAD_REQUEST],
      [`G\x7fT /health HTTP/1.1\r\n${H}\r\n`, HttpStatus.BAD_REQUEST],
      // the method, once the line is known good
      [`HEAD /health HTTP/1.1\r\n${H}\r\n`, HttpStatus.METHOD_NOT_ALLOWED],
      [`get /health HTTP/1.1\r\n${H}\r\n`, HttpStatus.METHOD_NOT_ALLOWED],
      [`GE /health HTTP/1.1\r\n${H}\r\n`, HttpStatus.METHOD_NOT_ALLOWED],
      [`GETS /health HTTP/1.1\r\n${H}\r\n`, HttpStatus.METHOD_NOT_ALLOWED],
      [`POST /health HTTP/2.0\r\n${H}\r\n`, HttpStatus.VERSION_NOT_SUPPORTED],
      // headers
      [`GET /health HTTP/1.1\r\n Host: h\r\n\r\n`, HttpStatus.BAD_REQUEST],
      [`GET /health HTTP/1.1\r\n${H}X-A: 1\r\n continued\r\n\r\n`, HttpStatus.BAD_REQUEST],
      [`GET /health HTTP/1.1\r\nHost : h\r\n\r\n`, HttpStatus.BAD_REQUEST],
      [`GET /health HTTP/1.1\r\n${H}NoColon\r\n\r\n`, HttpStatus.BAD_REQUEST],
      [`GET /health HTTP/1.1\r\n${H}X-A: a\x00b\r\n\r\n`, HttpStatus.BAD_REQUEST],
      [`GET /health HTTP/1.1\r\n${H}X-A: a\nb\r\n\r\n`, HttpStatus.BAD_REQUEST],
      [`GET /health HTTP/1.1\r\n${H}X-A: a\r\r\n\r\n`, HttpStatus.BAD_REQUEST],
      [`GET /health HTTP/1.1\r\n${H}\r\r\n`, HttpStatus.BAD_REQUEST],
      [`GET /health HTTP/1.1\r\n\r\n`, HttpStatus.BAD_REQUEST],
      [`GET /health HTTP/1.1\r\n${H}host: again\r\n\r\n`, HttpStatus.BAD_REQUEST],
      [`GET /health HTTP/1.1\r\n${H}Content-Length: abc\r\n\r\n`, HttpStatus.BAD_REQUEST],
      [`GET /health HTTP/1.1\r\n${H}Content-Length: 1 2\r\n\r\n`, HttpStatus.BAD_REQUEST],
      [`GET /health HTTP/1.1\r\n${H}Content-Length:\r\n\r\n`, HttpStatus.BAD_REQUEST],
      // a body announced
      [`GET /health HTTP/1.1\r\n${H}Content-Length: 1\r\n\r\n`, HttpStatus.CONTENT_TOO_LARGE],
      [`GET /health HTTP/1.1\r\n${H}content-length: 007\r\n\r\n`, HttpStatus.CONTENT_TOO_LARGE],
      [`GET /health HTTP/1.1\r\n${H}Transfer-Encoding: chunked\r\n\r\n`, HttpStatus.CONTENT_TOO_LARGE],
    ];
    for (const [req, want] of cases) {
      const p = parse(req);
      equal(p.status, want, JSON.stringify(req));
      const more = bytes('GET /health HTTP/1.1\r\n\r\n');
      equal(p.push(more, 0, more.length), want, `sticky: ${JSON.stringify(req)}`);
    }
  });

  it('accepts what RFC 9112 allows: empty lines before the request, HTTP/1.0 without Host, Content-Length 0, OWS around values, obs-text', () => {
    const cases = [
      'GET /health HTTP/1.0\r\n\r\n',
      '\r\n\r\nGET /health HTTP/1.1\r\nHost: h\r\n\r\n',
      'GET /health HTTP/1.1\r\nHost: h\r\nContent-Length:  0 \r\n\r\n',
      'GET /health HTTP/1.1\r\nHost:\r\nX-Empty:\r\nX-Latin: caf\xe9\r\n\r\n',
      'GET /health HTTP/1.1\r\nHOST: h\r\n\r\n',
    ];
    for (const req of cases) {
      const p = parse(req);
      equal(p.status, HttpParse.DONE, JSON.stringify(req));
      ok(p.pathIs(HealthPath.COARSE), JSON.stringify(req));
    }
  });

  it('takes a request line of exactly 1024 bytes and refuses 1025 with 414', () => {
    const fixed = 'GET /health? HTTP/1.1'.length;
    for (const [extra, want] of [
      [HTTP_MAX_REQUEST_LINE - fixed, HttpParse.DONE],
      [HTTP_MAX_REQUEST_LINE - fixed + 1, HttpStatus.URI_TOO_LONG],
    ] as const) {
      const line = `GET /health?${'q'.repeat(extra)} HTTP/1.1`;
      const p = parse(`${line}\r\nHost: h\r\n\r\n`);
      equal(p.status, want, `line of ${line.length}`);
    }
    // Empty lines before it count.
    equal(parse(`${'\r\n'.repeat(HTTP_MAX_REQUEST_LINE / 2)}GET /health HTTP/1.1\r\nHost: h\r\n\r\n`).status, HttpStatus.URI_TOO_LONG);
    // The refusal comes at the 1025th byte: the parser never waits for the end of a long line.
    const p = new HttpRequestParser();
    const b = bytes(`GET /${'x'.repeat(5000)}`);
    equal(p.push(b, 0, b.length), HttpStatus.URI_TOO_LONG);
    equal(p.consumed, HTTP_MAX_REQUEST_LINE + 1);
  });

  it('takes a header section of exactly 2048 bytes and refuses 2049 with 431', () => {
    const head = 'GET /health HTTP/1.1\r\n';
    // 'Host: h\r\n' (9) + 'X-Pad: ' (7) + pad + '\r\n' (2) + '\r\n' (2)
    const padFor = (n: number) => n - 9 - 7 - 2 - 2;
    equal(parse(`${head}Host: h\r\nX-Pad: ${'p'.repeat(padFor(HTTP_MAX_HEADER_BYTES))}\r\n\r\n`).status, HttpParse.DONE);
    equal(parse(`${head}Host: h\r\nX-Pad: ${'p'.repeat(padFor(HTTP_MAX_HEADER_BYTES + 1))}\r\n\r\n`).status, HttpStatus.HEADERS_TOO_LARGE);
    const p = new HttpRequestParser();
    const b = bytes(`${head}X-Pad: ${'p'.repeat(10000)}`);
    equal(p.push(b, 0, b.length), HttpStatus.HEADERS_TOO_LARGE);
    equal(p.consumed, head.length + HTTP_MAX_HEADER_BYTES + 1);
  });

  it('takes 32 headers and refuses the 33rd with 431', () => {
    const headers = (n: number) => {
      let s = 'Host: h\r\n';
      for (let i = 1; i < n; i++) s += `X-${i}: v\r\n`;
      return s;
    };
    equal(parse(`GET /health HTTP/1.1\r\n${headers(HTTP_MAX_HEADERS)}\r\n`).status, HttpParse.DONE);
    equal(parse(`GET /health HTTP/1.1\r\n${headers(HTTP_MAX_HEADERS + 1)}\r\n`).status, HttpStatus.HEADERS_TOO_LARGE);
  });

  it('keeps a 64-byte path and routes a longer one nowhere', () => {
    const path = '/' + 'a'.repeat(HTTP_PATH_KEEP - 1);
    ok(parse(`GET ${path} HTTP/1.1\r\nHost: h\r\n\r\n`).pathIs(path));
    const longer = path + 'a';
    const p = parse(`GET ${longer} HTTP/1.1\r\nHost: h\r\n\r\n`);
    equal(p.status, HttpParse.DONE);
    ok(!p.pathIs(longer));
    ok(!p.pathIs(path));
  });

  it('reads no Authorization from a duplicate or an over-long one', () => {
    equal(parse('GET / HTTP/1.1\r\nHost: h\r\n\r\n').authorization(), undefined);
    equal(parse('GET / HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer a\r\nauthorization: Bearer a\r\n\r\n').authorization(), undefined);
    const max = 'Bearer ' + 't'.repeat(OPERATOR_TOKEN_MAX_CHARS);
    equal(parse(`GET / HTTP/1.1\r\nHost: h\r\nAuthorization: ${max}   \r\n\r\n`).authorization(), max);
    equal(parse(`GET / HTTP/1.1\r\nHost: h\r\nAuthorization: ${max}t\r\n\r\n`).authorization(), undefined);
    // Names that merely begin like a known one are other headers.
    equal(parse('GET / HTTP/1.1\r\nHost: h\r\nAuthorizations: Bearer a\r\n\r\n').authorization(), undefined);
    equal(parse('GET / HTTP/1.1\r\nHost: h\r\nContent-Lengthy: 5\r\nHosts: x\r\n\r\n').status, HttpParse.DONE);
  });

  it('is reusable after reset', () => {
    const p = parse('POST / HTTP/1.1\r\n\r\n');
    equal(p.status, HttpStatus.METHOD_NOT_ALLOWED);
    p.reset();
    const b = bytes('GET /health HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer z\r\n\r\n');
    equal(p.push(b, 0, b.length), HttpParse.DONE);
    equal(p.authorization(), 'Bearer z');
  });
});

// ------------------------------------------------------------------------------ the service

class FakeClock {
  t = 50000;
  now(): number {
    return this.t;
  }
}

class FakeSource implements HealthSource {
  isReady = true;
  reports = 0;
  report: object = { metrics: { version: 1, sessions: 2 } };
  throws = false;
  healthReport(): object {
    this.reports++;
    if (this.throws) throw new Error('boom');
    return this.report;
  }
  ready(): boolean {
    return this.isReady;
  }
}

class FakeOwner implements HttpOwner {
  aborted = 0;
  abort(): void {
    this.aborted++;
  }
}

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
  raw: string;
}

function answerOf(b: Uint8Array, length: number): Answer {
  const raw = text(b, 0, length);
  const split = raw.indexOf('\r\n\r\n');
  ok(split > 0, 'a head');
  const lines = raw.slice(0, split).split('\r\n');
  const m = /^HTTP\/1\.1 (\d{3}) [A-Za-z ]+$/.exec(lines[0] as string);
  ok(m, `status line ${lines[0]}`);
  const headers: Record<string, string> = {};
  for (const l of lines.slice(1)) {
    const c = l.indexOf(': ');
    headers[l.slice(0, c).toLowerCase()] = l.slice(c + 2);
  }
  const body = raw.slice(split + 4);
  equal(Number(headers['content-length']), body.length, 'Content-Length');
  return { status: Number(m[1]), headers, body, raw };
}

const TOKEN = 'T0k3n-' + 'x'.repeat(OPERATOR_TOKEN_MIN_CHARS);

function setup(token?: string, source = new FakeSource(), events: string[] = []) {
  const clock = new FakeClock();
  const service = new HttpHealthService({
    source,
    clock,
    token,
    log: { event: (code: string, a?: number) => void events.push(a === undefined ? code : `${code} ${a}`) },
  });
  const ask = (req: string, address = '10.0.0.2'): Answer => {
    const owner = new FakeOwner();
    const ex = service.open(owner, address);
    const b = bytes(req);
    ok(service.input(ex, b, 0, b.length), 'answered');
    const a = answerOf(ex.response, ex.responseLength);
    service.release(ex, owner);
    return a;
  };
  const get = (path: string, authorization?: string, address?: string): Answer =>
    ask(`GET ${path} HTTP/1.1\r\nHost: hub\r\n${authorization === undefined ? '' : `Authorization: ${authorization}\r\n`}\r\n`, address);
  return { clock, service, source, events, ask, get };
}

function common(a: Answer): void {
  equal(a.headers['content-type'], 'application/json');
  equal(a.headers['cache-control'], 'no-store');
  equal(a.headers['connection'], 'close');
}

describe('http: GET /health', () => {
  it('answers 200 ready and 503 not-ready from ready(), with the coarse report', () => {
    const { get, source } = setup();
    const a = get('/health');
    equal(a.status, 200);
    common(a);
    deepEqual(JSON.parse(a.body), { status: 'ready', ready: 1, metrics: { version: 1 } });
    source.isReady = false;
    const b = get('/health?probe=1');
    equal(b.status, 503);
    common(b);
    deepEqual(JSON.parse(b.body), { status: 'not-ready', ready: 0, metrics: { version: 1 } });
    equal(source.reports, 0, 'the coarse answer never builds the detailed report');
  });

  it('is public: no token needed, none looked at, no rate limit', () => {
    const { get } = setup(TOKEN);
    for (let i = 0; i < OPERATIONS_RATE_LIMIT * 3; i++) equal(get('/health', 'Bearer wrong').status, 200);
  });

  it('answers 404 elsewhere and names every refusal in the same JSON shape', () => {
    const { get, ask } = setup(TOKEN);
    for (const path of ['/', '/health/', '/healthz', '/api/operations/health/', '/api/operations', '/HEALTH']) {
      const a = get(path, `Bearer ${TOKEN}`);
      equal(a.status, 404, path);
      common(a);
      deepEqual(JSON.parse(a.body), { error: 'not-found' });
    }
    const refusals: [string, number, string, string?][] = [
      ['POST /health HTTP/1.1\r\nHost: h\r\n\r\n', 405, 'method-not-allowed', 'allow'],
      ['GET /health HTTP/1.1\r\n\r\n', 400, 'bad-request'],
      ['GET /health HTTP/1.1\r\nHost: h\r\nContent-Length: 2\r\n\r\n', 413, 'content-too-large'],
      [`GET /${'x'.repeat(HTTP_MAX_REQUEST_LINE)} HTTP/1.1\r\n`, 414, 'uri-too-long'],
      [`GET /health HTTP/1.1\r\nX: ${'x'.repeat(HTTP_MAX_HEADER_BYTES)}`, 431, 'headers-too-large'],
      ['GET /health HTTP/3.0\r\n\r\n', 505, 'version-not-supported'],
    ];
    for (const [req, status, error, header] of refusals) {
      const a = ask(req);
      equal(a.status, status, error);
      common(a);
      deepEqual(JSON.parse(a.body), { error });
      if (header) equal(a.headers[header], 'GET');
    }
  });
});

describe('http: GET /api/operations/health', () => {
  it('is disabled (404) without a token, and the report is never built', () => {
    const { get, source, service } = setup(undefined);
    equal(service.detailedEnabled, false);
    equal(service.tokenProblem, '');
    equal(get('/api/operations/health', `Bearer ${TOKEN}`).status, 404);
    equal(get('/api/operations/health').status, 404);
    equal(source.reports, 0);
    equal(setup('').service.detailedEnabled, false);
  });

  it('refuses a token outside 32–256 characters or with invisible characters at configuration: disabled, and says why without the token', () => {
    const refused = ['s'.repeat(OPERATOR_TOKEN_MIN_CHARS - 1), 'l'.repeat(OPERATOR_TOKEN_MAX_CHARS + 1), `${'a'.repeat(20)} ${'b'.repeat(20)}`, `${'a'.repeat(40)}\u00e9`];
    for (const token of refused) {
      const events: string[] = [];
      const { get, service, source } = setup(token, new FakeSource(), events);
      equal(service.detailedEnabled, false, token);
      ok(service.tokenProblem !== '', token);
      equal(service.tokenProblem.indexOf(token), -1, 'the reason never carries the token');
      deepEqual(events, [`http-token-refused ${token.length}`]);
      equal(get('/api/operations/health', `Bearer ${token}`).status, 404);
      equal(source.reports, 0);
    }
    ok(/too short: 31 characters, at least 32/.test(operatorTokenProblem('s'.repeat(31))));
    ok(/too long: 257 characters, at most 256/.test(operatorTokenProblem('s'.repeat(257))));
    for (const n of [OPERATOR_TOKEN_MIN_CHARS, OPERATOR_TOKEN_MAX_CHARS]) {
      const token = 'k'.repeat(n);
      const { get, service } = setup(token);
      ok(service.detailedEnabled, `${n} characters`);
      equal(get('/api/operations/health', `Bearer ${token}`).status, 200, `${n} characters`);
    }
  });

  it('answers 200 with the report for the right bearer token', () => {
    const source = new FakeSource();
    const { get } = setup(TOKEN, source);
    const a = get('/api/operations/health', `Bearer ${TOKEN}`);
    equal(a.status, 200);
    common(a);
    deepEqual(JSON.parse(a.body), { metrics: { version: 1, sessions: 2 } });
    equal(source.reports, 1);
  });

  it('answers 401 with WWW-Authenticate: Bearer, the same answer whatever is wrong', () => {
    const source = new FakeSource();
    const { get, clock } = setup(TOKEN, source);
    const wrong: (string | undefined)[] = [
      undefined,
      '',
      'Bearer',
      'Bearer ',
      `bearer ${TOKEN}`,
      `Basic ${TOKEN}`,
      `Bearer  ${TOKEN}`,
      `Bearer ${TOKEN}x`,
      `Bearer ${TOKEN.slice(0, -1)}`,
      `Bearer ${TOKEN.slice(0, -1)}y`,
      `Bearer ${TOKEN}${'x'.repeat(OPERATOR_TOKEN_MAX_CHARS)}`,
    ];
    let first: string | null = null;
    for (const auth of wrong) {
      clock.t += OPERATIONS_RATE_WINDOW_MS; // each on a fresh rate window
      const a = get('/api/operations/health', auth);
      equal(a.status, 401, String(auth));
      equal(a.headers['www-authenticate'], 'Bearer');
      common(a);
      first ??= a.raw;
      equal(a.raw, first, 'every 401 reads the same');
    }
    const dup = setup(TOKEN);
    const a = dup.ask(`GET /api/operations/health HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer ${TOKEN}\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`);
    equal(a.status, 401, 'two Authorization headers');
    equal(source.reports, 0);
  });

  it('allows 5 requests per 10 s per address, wrong tokens included, then 429 with Retry-After', () => {
    const source = new FakeSource();
    const { get, clock } = setup(TOKEN, source);
    const path = '/api/operations/health';
    equal(get(path, 'Bearer nope').status, 401);
    for (let i = 1; i < OPERATIONS_RATE_LIMIT; i++) equal(get(path, `Bearer ${TOKEN}`).status, 200, `request ${i + 1}`);
    const over = get(path, `Bearer ${TOKEN}`);
    equal(over.status, 429);
    equal(over.headers['retry-after'], '10');
    common(over);
    deepEqual(JSON.parse(over.body), { error: 'too-many-requests' });
    equal(source.reports, OPERATIONS_RATE_LIMIT - 1, 'no report for a refused request');
    equal(get(path, `Bearer ${TOKEN}`, '10.0.0.3').status, 200, 'another address has its own budget');
    clock.t += OPERATIONS_RATE_WINDOW_MS - 1;
    equal(get(path, `Bearer ${TOKEN}`).status, 429, '1 ms early');
    clock.t += 1;
    equal(get(path, `Bearer ${TOKEN}`).status, 200, 'the first request has left the window');
  });

  it('answers 500 when the report cannot be made, and carries on', () => {
    const source = new FakeSource();
    const events: string[] = [];
    const { get } = setup(TOKEN, source, events);
    source.throws = true;
    const a = get('/api/operations/health', `Bearer ${TOKEN}`);
    equal(a.status, 500);
    deepEqual(events, ['http-report-failed']);
    source.throws = false;
    equal(get('/api/operations/health', `Bearer ${TOKEN}`).status, 200);
  });

  it('sends a report larger than the exchange buffer whole, and a multi-byte one by its UTF-8 length', () => {
    const source = new FakeSource();
    const big: Record<string, number> = {};
    for (let i = 0; i < 200; i++) big[`k${i}`] = i;
    source.report = { metrics: { version: 1, big }, note: 'é€' };
    const { get } = setup(TOKEN, source);
    const a = get('/api/operations/health', `Bearer ${TOKEN}`);
    equal(a.status, 200);
    ok(a.body.length > HTTP_RESPONSE_BYTES);
    // answerOf checked Content-Length against the byte count; the bytes decode to the report.
    deepEqual(JSON.parse(decodeUtf8(bytes(a.body))), source.report);
  });
});

function decodeUtf8(b: Uint8Array): string {
  let s = '';
  for (let i = 0; i < b.length; ) {
    const c = b[i] as number;
    if (c < 0x80) {
      s += String.fromCharCode(c);
      i++;
    } else if (c < 0xe0) {
      s += String.fromCharCode(((c & 0x1f) << 6) | ((b[i + 1] as number) & 0x3f));
      i += 2;
    } else {
      s += String.fromCharCode(((c & 0x0f) << 12) | (((b[i + 1] as number) & 0x3f) << 6) | ((b[i + 2] as number) & 0x3f));
      i += 3;
    }
  }
  return s;
}

describe('http: exchange slots', () => {
  it('has a fixed number of slots; a connection beyond them ends the oldest', () => {
    const { service } = setup(TOKEN);
    equal(service.maxConnections, HTTP_DEFAULT_MAX_CONNECTIONS);
    const owners: FakeOwner[] = [];
    const exs = [];
    for (let i = 0; i < HTTP_DEFAULT_MAX_CONNECTIONS; i++) {
      owners.push(new FakeOwner());
      exs.push(service.open(owners[i] as FakeOwner, `a${i}`));
    }
    equal(service.connections, HTTP_DEFAULT_MAX_CONNECTIONS);
    // A half-sent request on the oldest.
    const half = bytes('GET /hea');
    equal(service.input(exs[0]!, half, 0, half.length), false);
    const late = new FakeOwner();
    const ex = service.open(late, 'b');
    equal(owners[0]!.aborted, 1, 'the oldest was ended');
    equal(ex, exs[0], 'and its slot reused');
    equal(service.evictions, 1);
    // The evicted connection's late close frees nothing.
    service.release(ex, owners[0]!);
    equal(service.connections, HTTP_DEFAULT_MAX_CONNECTIONS);
    // The reused slot starts clean.
    const req = bytes('GET /health HTTP/1.1\r\nHost: h\r\n\r\n');
    ok(service.input(ex, req, 0, req.length));
    equal(answerOf(ex.response, ex.responseLength).status, 200);
    // The next one ends the next oldest.
    service.open(new FakeOwner(), 'c');
    equal(owners[1]!.aborted, 1);
    equal(owners[2]!.aborted, 0);
    service.release(exs[2]!, owners[2]!);
    equal(service.connections, HTTP_DEFAULT_MAX_CONNECTIONS - 1);
    service.open(new FakeOwner(), 'd');
    equal(owners[3]!.aborted, 0, 'a free slot is taken before anyone is ended');
  });
});

// ------------------------------------------------------------------------------ device adapter

class FakeTcp implements DeviceTcpLike {
  static all: FakeTcp[] = [];
  readonly remoteAddress: string | undefined;
  inbox: Uint8Array[] = [];
  written: number[] = [];
  writes: number[] = [];
  free: number;
  closed = false;
  readonly o: DeviceTcpOptions<string>;
  constructor(o: DeviceTcpOptions<string>) {
    this.o = o;
    this.remoteAddress = o.from;
    this.free = 0;
    FakeTcp.all.push(this);
  }
  read(): number | ArrayBuffer {
    const next = this.inbox.shift();
    return next ? (next.buffer.slice(next.byteOffset, next.byteOffset + next.byteLength) as ArrayBuffer) : 0;
  }
  write(value: Uint8Array): number {
    if (this.closed) throw new Error('closed');
    if (value.length > this.free) throw new Error('would block');
    for (let i = 0; i < value.length; i++) this.written.push(value[i] as number);
    this.writes.push(value.length);
    this.free -= value.length;
    return this.free;
  }
  close(): void {
    this.closed = true;
  }
  // The peer's side.
  send(s: string): void {
    this.inbox.push(bytes(s));
    this.o.onReadable(s.length);
  }
  acked(free: number): void {
    this.free = free;
    this.o.onWritable(free);
  }
}

class FakeListener {
  static last: FakeListener | null = null;
  pending: string[] = [];
  closed = false;
  constructor(readonly o: { port: number; onReadable: (count: number) => void }) {
    FakeListener.last = this;
  }
  read(): string | undefined {
    return this.pending.shift();
  }
  close(): void {
    this.closed = true;
  }
  connect(address: string): FakeTcp {
    this.pending.push(address);
    this.o.onReadable(1);
    return FakeTcp.all[FakeTcp.all.length - 1] as FakeTcp;
  }
}

describe('http: device adapter (fake ECMA-419 sockets)', () => {
  it('answers within the send buffer lwIP reports, then closes and frees the slot', () => {
    FakeTcp.all = [];
    const source = new FakeSource();
    const server = new HttpDeviceServer<string>({ Listener: FakeListener, TCP: FakeTcp, port: 8080, clock: new FakeClock(), source, token: TOKEN });
    const listener = FakeListener.last as FakeListener;
    equal(listener.o.port, 8080);
    const tcp = listener.connect('192.168.4.2');
    tcp.acked(100);
    tcp.send('GET /health HTTP/1.1\r\n');
    equal(tcp.writes.length, 0, 'nothing before the request is whole');
    tcp.send('Host: hub\r\n\r\n');
    deepEqual(tcp.writes, [100], 'no more than the free send buffer');
    equal(tcp.closed, false);
    tcp.acked(64);
    tcp.acked(1000);
    ok(tcp.closed, 'closed once all is written');
    const a = answerOf(Uint8Array.from(tcp.written), tcp.written.length);
    equal(a.status, 200);
    deepEqual(JSON.parse(a.body), { status: 'ready', ready: 1, metrics: { version: 1 } });
    equal(tcp.writes[1], 64);
    equal(server.connections, 0);
    equal(server.service.connections, 0);
  });

  it('rates the detailed endpoint by the socket’s remote address, and evicts the oldest connection when full', () => {
    FakeTcp.all = [];
    const server = new HttpDeviceServer<string>({ Listener: FakeListener, TCP: FakeTcp, port: 80, clock: new FakeClock(), source: new FakeSource(), token: TOKEN, maxConnections: 2 });
    const listener = FakeListener.last as FakeListener;
    const statuses: number[] = [];
    for (let i = 0; i <= OPERATIONS_RATE_LIMIT; i++) {
      const tcp = listener.connect('192.168.4.2');
      tcp.acked(8192);
      tcp.send(`GET /api/operations/health HTTP/1.1\r\nHost: hub\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`);
      statuses.push(answerOf(Uint8Array.from(tcp.written), tcp.written.length).status);
    }
    deepEqual(statuses, [200, 200, 200, 200, 200, 429]);
    const idle1 = listener.connect('192.168.4.3');
    const idle2 = listener.connect('192.168.4.4');
    equal(server.connections, 2);
    const third = listener.connect('192.168.4.5');
    ok(idle1.closed, 'the oldest idle connection was ended');
    equal(idle2.closed, false);
    equal(server.connections, 2);
    third.acked(8192);
    third.send('GET /health HTTP/1.1\r\nHost: hub\r\n\r\n');
    ok(third.closed);
    server.close();
    ok(listener.closed);
    ok(idle2.closed);
    equal(server.connections, 0);
    equal(server.service.connections, 0);
  });
});
