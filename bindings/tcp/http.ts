// Health over HTTP on the Wi-Fi binding (docs/operations.md "Health, admission and overload", docs/operations.md "Health"): a coarse public
// `GET /health` and the detailed `GET /api/operations/health` behind a bearer operator token.
// Platform-free: the same request parser and answers run on Node (http-node.ts over node:net) and
// on the device (http-device.ts over the ECMA-419 sockets). Not a web server: GET only, one
// request per connection, every answer `Connection: close`.
//
// The parser is a byte-at-a-time state machine with numeric states over fixed buffers: it keeps
// only what routing and the gate read (the path up to 64 bytes, the Authorization value up to
// "Bearer " + 256) and counts everything else against the limits. Per connection it holds about
// 340 bytes of typed arrays, made once per exchange slot at setup.

import { coarseReport, OPERATOR_TOKEN_MAX_CHARS, OPERATOR_TOKEN_MIN_CHARS, OperatorGate, OperatorStatus } from '../../hub/health.js';
import { NULL_LOG, type Clock, type Log } from '../../hub/ports.js';
import { utf8ByteLength, utf8Write } from '../../hub/utf8.js';

/** Bytes of the request line before its CRLF, any empty lines before it included (our decision). */
export const HTTP_MAX_REQUEST_LINE = 1024;
/** Bytes of the header section, every line end and the closing empty line included (our decision). */
export const HTTP_MAX_HEADER_BYTES = 2048;
export const HTTP_MAX_HEADERS = 32;
/** Bytes of the path kept for routing; a longer path routes nowhere (404). */
export const HTTP_PATH_KEEP = 64;
/** Bytes of the Authorization value kept: "Bearer " and the longest token; a longer value is wrong (401). */
export const HTTP_AUTH_KEEP = 7 + OPERATOR_TOKEN_MAX_CHARS;
/** Room per exchange for every answer but the detailed report (which gets its own array). */
export const HTTP_RESPONSE_BYTES = 384;
/** Exchanges served at once; a new connection beyond them ends the oldest (no timer needed). */
export const HTTP_DEFAULT_MAX_CONNECTIONS = 4;

export const HealthPath = Object.freeze({ COARSE: '/health', DETAILED: '/api/operations/health' } as const);

/** What `HttpRequestParser.push` returns besides a refusal status (≥ 400). */
export const HttpParse = Object.freeze({ MORE: 0, DONE: 1 } as const);

export const HttpStatus = Object.freeze({
  OK: 200,
  BAD_REQUEST: 400,
  UNAUTHORIZED: 401,
  NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  CONTENT_TOO_LARGE: 413,
  URI_TOO_LONG: 414,
  TOO_MANY_REQUESTS: 429,
  HEADERS_TOO_LARGE: 431,
  INTERNAL_ERROR: 500,
  NOT_READY: 503,
  VERSION_NOT_SUPPORTED: 505,
} as const);

const REASONS: Readonly<Record<number, string>> = Object.freeze({
  200: 'OK',
  400: 'Bad Request',
  401: 'Unauthorized',
  404: 'Not Found',
  405: 'Method Not Allowed',
  413: 'Content Too Large',
  414: 'URI Too Long',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  503: 'Service Unavailable',
  505: 'HTTP Version Not Supported',
});

// Parser states.
const S = Object.freeze({
  LINE_START: 0,
  LEADING_LF: 1,
  METHOD: 2,
  TARGET: 3,
  VERSION: 4,
  LINE_LF: 5,
  HEADER_START: 6,
  NAME: 7,
  VALUE_OWS: 8,
  VALUE: 9,
  HEADER_LF: 10,
  END_LF: 11,
  DONE: 12,
  FAILED: 13,
} as const);

// Header names the parser reads (lower case), by bit in the candidate mask.
const KNOWN_NAMES: readonly string[] = Object.freeze(['authorization', 'content-length', 'transfer-encoding', 'host']);
const H_AUTH = 0;
const H_LENGTH = 1;
const H_TE = 2;
const H_HOST = 3;
const ALL_KNOWN = (1 << KNOWN_NAMES.length) - 1;

const CR = 0x0d;
const LF = 0x0a;
const SP = 0x20;
const HT = 0x09;

/** RFC 9110 §5.6.2 tchar. */
function isTchar(b: number): boolean {
  if ((b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a)) return true;
  // ! # $ % & ' * + - . ^ _ ` | ~
  return b === 0x21 || (b >= 0x23 && b <= 0x27) || b === 0x2a || b === 0x2b || b === 0x2d || b === 0x2e || b === 0x5e || b === 0x5f || b === 0x60 || b === 0x7c || b === 0x7e;
}

/**
 * One GET request, fed in any pieces. `push` returns MORE until the request is whole (DONE) or
 * refused (the status to answer with); after either it ignores what follows. Strict framing:
 * lines end in CRLF (a bare CR or LF is 400), no obs-fold, no whitespace before a header's colon.
 */
export class HttpRequestParser {
  private state: number = S.LINE_START;
  private result = 0;
  private lineBytes = 0;
  private headerBytes = 0;
  private headers = 0;
  private methodLen = 0;
  private methodGet = true;
  private targetLen = 0;
  private inQuery = false;
  private readonly pathBuf = new Uint8Array(HTTP_PATH_KEEP);
  private pathLen = 0;
  private pathOverflow = false;
  private readonly versionBuf = new Uint8Array(8);
  private versionLen = 0;
  private minor = 1;
  private nameLen = 0;
  private candidates = 0;
  private kind = -1;
  // The value of the header being read.
  private valueDigits = 0;
  private valueTrailing = false;
  private valueBad = false;
  private readonly authBuf = new Uint8Array(HTTP_AUTH_KEEP);
  private authLen = 0;
  private authTrimmed = 0;
  private authCount = 0;
  private authOverflow = false;
  private hosts = 0;
  private bodyAnnounced = false;
  /** Bytes of the last `push` that belonged to the request (what follows DONE is not). */
  consumed = 0;

  reset(): void {
    this.state = S.LINE_START;
    this.result = 0;
    this.lineBytes = 0;
    this.headerBytes = 0;
    this.headers = 0;
    this.methodLen = 0;
    this.methodGet = true;
    this.targetLen = 0;
    this.inQuery = false;
    this.pathLen = 0;
    this.pathOverflow = false;
    this.versionLen = 0;
    this.minor = 1;
    this.nameLen = 0;
    this.candidates = 0;
    this.kind = -1;
    this.authLen = 0;
    this.authTrimmed = 0;
    this.authCount = 0;
    this.authOverflow = false;
    this.hosts = 0;
    this.bodyAnnounced = false;
    this.consumed = 0;
  }

  /** MORE, DONE, or the refusal status (400, 405, 413, 414, 431, 505); sticky once not MORE. */
  get status(): number {
    return this.result;
  }

  push(bytes: Uint8Array, start: number, end: number): number {
    let i = start;
    while (i < end && this.result === HttpParse.MORE) {
      this.step(bytes[i] as number);
      i++;
    }
    this.consumed = i - start;
    return this.result;
  }

  /** Whether the path (before any `?`) is exactly `path` (ASCII). */
  pathIs(path: string): boolean {
    if (this.pathOverflow || this.pathLen !== path.length) return false;
    for (let k = 0; k < path.length; k++) if (this.pathBuf[k] !== path.charCodeAt(k)) return false;
    return true;
  }

  /**
   * The Authorization value with its surrounding whitespace removed, or undefined when there was
   * none, more than one, or one longer than any bearer credential we accept. Allocates the string.
   */
  authorization(): string | undefined {
    if (this.authCount !== 1 || this.authOverflow) return undefined;
    let s = '';
    for (let k = 0; k < this.authTrimmed; k++) s += String.fromCharCode(this.authBuf[k] as number);
    return s;
  }

  private fail(status: number): void {
    this.state = S.FAILED;
    this.result = status;
  }

  private step(b: number): void {
    switch (this.state) {
      case S.LINE_START:
        if (!this.countLine()) return;
        // RFC 9112 §2.2: empty lines before the request line are ignored.
        if (b === CR) this.state = S.LEADING_LF;
        else if (isTchar(b)) {
          this.state = S.METHOD;
          this.method(b);
        } else this.fail(HttpStatus.BAD_REQUEST);
        return;
      case S.LEADING_LF:
        if (!this.countLine()) return;
        if (b === LF) this.state = S.LINE_START;
        else this.fail(HttpStatus.BAD_REQUEST);
        return;
      case S.METHOD:
        if (!this.countLine()) return;
        if (b === SP) this.state = S.TARGET;
        else if (isTchar(b)) this.method(b);
        else this.fail(HttpStatus.BAD_REQUEST);
        return;
      case S.TARGET:
        if (!this.countLine()) return;
        if (b === SP) {
          if (this.targetLen === 0) this.fail(HttpStatus.BAD_REQUEST);
          else this.state = S.VERSION;
        } else if (b > SP && b < 0x7f) this.target(b);
        else this.fail(HttpStatus.BAD_REQUEST);
        return;
      case S.VERSION:
        if (b === CR) {
          this.version();
          return;
        }
        if (!this.countLine()) return;
        if (b <= SP || b >= 0x7f || this.versionLen >= this.versionBuf.length) this.fail(HttpStatus.BAD_REQUEST);
        else this.versionBuf[this.versionLen++] = b;
        return;
      case S.LINE_LF:
        if (b !== LF) this.fail(HttpStatus.BAD_REQUEST);
        // Only now is the request line known good: a bad version outranks the method.
        else if (!this.methodGet || this.methodLen !== 3) this.fail(HttpStatus.METHOD_NOT_ALLOWED);
        else this.state = S.HEADER_START;
        return;
      case S.HEADER_START:
        if (!this.countHeader()) return;
        if (b === CR) this.state = S.END_LF;
        else if (isTchar(b)) {
          if (this.headers >= HTTP_MAX_HEADERS) {
            this.fail(HttpStatus.HEADERS_TOO_LARGE);
            return;
          }
          this.headers++;
          this.nameLen = 0;
          this.candidates = ALL_KNOWN;
          this.state = S.NAME;
          this.name(b);
        } else this.fail(HttpStatus.BAD_REQUEST); // obs-fold (SP/HT) or junk
        return;
      case S.NAME:
        if (!this.countHeader()) return;
        if (b === 0x3a) this.nameEnd();
        else if (isTchar(b)) this.name(b);
        else this.fail(HttpStatus.BAD_REQUEST); // RFC 9112 §5.1: no whitespace before the colon
        return;
      case S.VALUE_OWS:
        if (!this.countHeader()) return;
        if (b === SP || b === HT) return;
        if (b === CR) {
          this.state = S.HEADER_LF;
          return;
        }
        this.state = S.VALUE;
        this.value(b);
        return;
      case S.VALUE:
        if (!this.countHeader()) return;
        if (b === CR) this.state = S.HEADER_LF;
        else this.value(b);
        return;
      case S.HEADER_LF:
        if (!this.countHeader()) return;
        if (b !== LF) this.fail(HttpStatus.BAD_REQUEST);
        else this.headerEnd();
        return;
      case S.END_LF:
        if (!this.countHeader()) return;
        if (b !== LF) this.fail(HttpStatus.BAD_REQUEST);
        else this.finish();
        return;
      default:
        return;
    }
  }

  private countLine(): boolean {
    if (++this.lineBytes > HTTP_MAX_REQUEST_LINE) {
      this.fail(HttpStatus.URI_TOO_LONG);
      return false;
    }
    return true;
  }

  private countHeader(): boolean {
    if (++this.headerBytes > HTTP_MAX_HEADER_BYTES) {
      this.fail(HttpStatus.HEADERS_TOO_LARGE);
      return false;
    }
    return true;
  }

  private method(b: number): void {
    const k = this.methodLen++;
    // "GET", case-sensitive (RFC 9110 §9.1).
    if (k >= 3 || b !== 'GET'.charCodeAt(k)) this.methodGet = false;
  }

  private target(b: number): void {
    // Origin form only: a path from '/' (absolute and asterisk forms are refused).
    if (this.targetLen++ === 0 && b !== 0x2f) {
      this.fail(HttpStatus.BAD_REQUEST);
      return;
    }
    if (this.inQuery) return;
    if (b === 0x3f) {
      this.inQuery = true;
      return;
    }
    if (this.pathLen < HTTP_PATH_KEEP) this.pathBuf[this.pathLen++] = b;
    else this.pathOverflow = true;
  }

  private version(): void {
    const v = this.versionBuf;
    const n = this.versionLen;
    const prefix = 'HTTP/';
    let shaped = n === 8 && v[6] === 0x2e && isDigit(v[5] as number) && isDigit(v[7] as number);
    for (let k = 0; shaped && k < prefix.length; k++) if (v[k] !== prefix.charCodeAt(k)) shaped = false;
    if (!shaped) this.fail(HttpStatus.BAD_REQUEST);
    else if (v[5] !== 0x31) this.fail(HttpStatus.VERSION_NOT_SUPPORTED);
    else {
      this.minor = (v[7] as number) - 0x30;
      this.state = S.LINE_LF;
    }
  }

  private name(b: number): void {
    const lower = b >= 0x41 && b <= 0x5a ? b + 0x20 : b;
    const k = this.nameLen++;
    let m = this.candidates;
    for (let h = 0; m !== 0 && h < KNOWN_NAMES.length; h++) {
      const bit = 1 << h;
      if ((m & bit) === 0) continue;
      const known = KNOWN_NAMES[h] as string;
      if (k >= known.length || known.charCodeAt(k) !== lower) m &= ~bit;
    }
    this.candidates = m;
  }

  private nameEnd(): void {
    this.kind = -1;
    for (let h = 0; h < KNOWN_NAMES.length; h++) {
      if ((this.candidates & (1 << h)) !== 0 && (KNOWN_NAMES[h] as string).length === this.nameLen) this.kind = h;
    }
    this.valueDigits = 0;
    this.valueTrailing = false;
    this.valueBad = false;
    if (this.kind === H_AUTH) {
      this.authCount++;
      this.authLen = 0;
      this.authTrimmed = 0;
    }
    this.state = S.VALUE_OWS;
  }

  private value(b: number): void {
    // RFC 9110 §5.5: field values are VCHAR, obs-text and inner SP/HT; any other control is refused.
    if (b !== HT && (b < SP || b === 0x7f)) {
      this.fail(HttpStatus.BAD_REQUEST);
      return;
    }
    const ows = b === SP || b === HT;
    switch (this.kind) {
      case H_AUTH:
        if (this.authLen >= HTTP_AUTH_KEEP) {
          if (!ows) this.authOverflow = true;
          return;
        }
        this.authBuf[this.authLen++] = b;
        if (!ows) this.authTrimmed = this.authLen;
        return;
      case H_LENGTH:
        if (ows) this.valueTrailing = true;
        else if (!isDigit(b) || this.valueTrailing) this.valueBad = true;
        else {
          this.valueDigits++;
          if (b !== 0x30) this.bodyAnnounced = true;
        }
        return;
      default:
        return;
    }
  }

  private headerEnd(): void {
    switch (this.kind) {
      case H_LENGTH:
        if (this.valueBad || this.valueDigits === 0) {
          this.fail(HttpStatus.BAD_REQUEST);
          return;
        }
        break;
      case H_TE:
        this.bodyAnnounced = true;
        break;
      case H_HOST:
        this.hosts++;
        break;
      default:
        break;
    }
    this.state = S.HEADER_START;
  }

  private finish(): void {
    // RFC 9112 §3.2: an HTTP/1.1 request has exactly one Host.
    if (this.hosts > 1 || (this.minor === 1 && this.hosts === 0)) this.fail(HttpStatus.BAD_REQUEST);
    // A GET with a body: we read none.
    else if (this.bodyAnnounced) this.fail(HttpStatus.CONTENT_TOO_LARGE);
    else {
      this.state = S.DONE;
      this.result = HttpParse.DONE;
    }
  }
}

function isDigit(b: number): boolean {
  return b >= 0x30 && b <= 0x39;
}

// ------------------------------------------------------------------------------ the answers

/** What the endpoints read from the hub (hub/hub.ts `healthReport()` and `ready()`). */
export interface HealthSource {
  /** The detailed `metrics.version: 1` report. */
  healthReport(): object;
  /** True while new sessions would be admitted. */
  ready(): boolean;
}

/**
 * Why a configured operator token is refused (the endpoint then stays disabled), or '' when it
 * is usable or none is set. 32–256 characters, each visible ASCII: the bearer
 * credential travels in a header value, where anything else would not survive unchanged.
 */
export function operatorTokenProblem(token: string | undefined): string {
  if (token === undefined || token === '') return '';
  if (token.length < OPERATOR_TOKEN_MIN_CHARS) return `operator token too short: ${token.length} characters, at least ${OPERATOR_TOKEN_MIN_CHARS}`;
  if (token.length > OPERATOR_TOKEN_MAX_CHARS) return `operator token too long: ${token.length} characters, at most ${OPERATOR_TOKEN_MAX_CHARS}`;
  for (let i = 0; i < token.length; i++) {
    const c = token.charCodeAt(i);
    if (c <= SP || c >= 0x7f) return `operator token character ${i} is not visible ASCII`;
  }
  return '';
}

/** The end of a connection an exchange belongs to: the service ends it to free its slot. */
export interface HttpOwner {
  /** Close the connection at once; `release` must not be expected afterwards. */
  abort(): void;
}

/** One connection's slot: its parser, its answer, and whom it belongs to. */
export class HttpExchange {
  readonly parser = new HttpRequestParser();
  /** The answer's bytes are `response[0 .. responseLength)`: `out`, or a larger array for the report. */
  readonly out = new Uint8Array(HTTP_RESPONSE_BYTES);
  response: Uint8Array = this.out;
  responseLength = 0;
  /** Bytes of the answer the adapter has written (its own bookkeeping). */
  sent = 0;
  /** The answer's status; 0 until there is one. */
  status = 0;
  owner: HttpOwner | null = null;
  address = '';
  /** Order of opening, for ending the oldest first. */
  opened = 0;
}

export interface HttpHealthOptions {
  readonly source: HealthSource;
  /** Drives the operator gate's per-address rate window. */
  readonly clock: Clock;
  /** The operator token; unset, empty or refused: the detailed endpoint is disabled (404). */
  readonly token?: string;
  readonly maxConnections?: number;
  readonly log?: Log;
}

// Bodies, fixed at load (strings: nothing written later). The coarse one carries coarseReport's fields.
const READY_BODY = JSON.stringify({ status: 'ready', ...coarseReport(true) });
const NOT_READY_BODY = JSON.stringify({ status: 'not-ready', ...coarseReport(false) });

function errorBody(status: number): string {
  switch (status) {
    case HttpStatus.BAD_REQUEST:
      return '{"error":"bad-request"}';
    case HttpStatus.UNAUTHORIZED:
      return '{"error":"unauthorized"}';
    case HttpStatus.NOT_FOUND:
      return '{"error":"not-found"}';
    case HttpStatus.METHOD_NOT_ALLOWED:
      return '{"error":"method-not-allowed"}';
    case HttpStatus.CONTENT_TOO_LARGE:
      return '{"error":"content-too-large"}';
    case HttpStatus.URI_TOO_LONG:
      return '{"error":"uri-too-long"}';
    case HttpStatus.TOO_MANY_REQUESTS:
      return '{"error":"too-many-requests"}';
    case HttpStatus.HEADERS_TOO_LARGE:
      return '{"error":"headers-too-large"}';
    case HttpStatus.VERSION_NOT_SUPPORTED:
      return '{"error":"version-not-supported"}';
    default:
      return '{"error":"internal"}';
  }
}

function writeAscii(buf: Uint8Array, pos: number, s: string): number {
  for (let i = 0; i < s.length; i++) buf[pos++] = s.charCodeAt(i);
  return pos;
}

function writeUint(buf: Uint8Array, pos: number, n: number): number {
  let div = 1;
  while (div * 10 <= n) div *= 10;
  for (; div >= 1; div /= 10) buf[pos++] = 0x30 + (Math.floor(n / div) % 10);
  return pos;
}

const HEAD_FIXED = '\r\nContent-Type: application/json\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\nConnection: close\r\nContent-Length: ';

/**
 * The two endpoints and the exchange slots. Adapters `open` an exchange per connection, feed it
 * with `input` until it says the answer is ready, write `response[0 .. responseLength)`, close,
 * and `release`. Slots are made at construction; a connection beyond them ends the oldest.
 */
export class HttpHealthService {
  readonly detailedEnabled: boolean;
  /** Why the configured token was refused; '' when it was not. Never the token itself. */
  readonly tokenProblem: string;
  readonly maxConnections: number;
  private readonly source: HealthSource;
  private readonly clock: Clock;
  private readonly gate: OperatorGate;
  private readonly log: Log;
  private readonly slots: HttpExchange[] = [];
  private openings = 0;
  /** Connections ended to make room for newer ones. */
  evictions = 0;

  constructor(o: HttpHealthOptions) {
    this.source = o.source;
    this.clock = o.clock;
    this.log = o.log ?? NULL_LOG;
    this.tokenProblem = operatorTokenProblem(o.token);
    const usable = this.tokenProblem === '' && o.token !== undefined && o.token !== '';
    this.gate = new OperatorGate(usable ? o.token : undefined);
    this.detailedEnabled = this.gate.enabled;
    if (this.tokenProblem !== '') this.log.event('http-token-refused', o.token?.length ?? 0);
    const n = o.maxConnections ?? HTTP_DEFAULT_MAX_CONNECTIONS;
    if (!(Number.isInteger(n) && n >= 1 && n <= 64)) throw new RangeError('maxConnections must be an integer in 1..64');
    this.maxConnections = n;
    for (let i = 0; i < n; i++) this.slots.push(new HttpExchange());
  }

  /** Exchanges in use. */
  get connections(): number {
    let n = 0;
    for (const s of this.slots) if (s.owner) n++;
    return n;
  }

  /** A slot for a new connection from `address`; when all are taken the oldest connection is aborted. */
  open(owner: HttpOwner, address: string): HttpExchange {
    let ex: HttpExchange | null = null;
    for (const s of this.slots) {
      if (!s.owner) {
        ex = s;
        break;
      }
      if (!ex || s.opened < ex.opened) ex = s;
    }
    const slot = ex as HttpExchange;
    const old = slot.owner;
    if (old) {
      slot.owner = null;
      this.evictions++;
      old.abort();
    }
    slot.owner = owner;
    slot.address = address;
    slot.opened = ++this.openings;
    slot.parser.reset();
    slot.response = slot.out;
    slot.responseLength = 0;
    slot.sent = 0;
    slot.status = 0;
    return slot;
  }

  /** Frees the slot, if `owner` still holds it (an evicted connection's late close changes nothing). */
  release(ex: HttpExchange, owner: HttpOwner): void {
    if (ex.owner !== owner) return;
    ex.owner = null;
    ex.address = '';
    if (ex.response !== ex.out) ex.response = ex.out;
  }

  /** Request bytes; true once the answer is ready (then and afterwards: further bytes are ignored). */
  input(ex: HttpExchange, bytes: Uint8Array, start: number, end: number): boolean {
    if (ex.status !== 0) return true;
    const r = ex.parser.push(bytes, start, end);
    if (r === HttpParse.MORE) return false;
    if (r === HttpParse.DONE) this.answer(ex);
    else this.write(ex, r, errorBody(r));
    return true;
  }

  private answer(ex: HttpExchange): void {
    const p = ex.parser;
    if (p.pathIs(HealthPath.COARSE)) {
      const ready = this.source.ready();
      this.write(ex, ready ? HttpStatus.OK : HttpStatus.NOT_READY, ready ? READY_BODY : NOT_READY_BODY);
      return;
    }
    if (!p.pathIs(HealthPath.DETAILED)) {
      this.write(ex, HttpStatus.NOT_FOUND, errorBody(HttpStatus.NOT_FOUND));
      return;
    }
    const verdict = this.gate.check(ex.address, p.authorization(), this.clock.now());
    if (verdict !== OperatorStatus.OK) {
      this.write(ex, verdict, errorBody(verdict));
      return;
    }
    let body: string;
    try {
      body = JSON.stringify(this.source.healthReport());
    } catch {
      this.log.event('http-report-failed');
      this.write(ex, HttpStatus.INTERNAL_ERROR, errorBody(HttpStatus.INTERNAL_ERROR));
      return;
    }
    this.write(ex, HttpStatus.OK, body);
  }

  private write(ex: HttpExchange, status: number, body: string): void {
    const bodyBytes = utf8ByteLength(body);
    let extra = '';
    if (status === HttpStatus.UNAUTHORIZED) extra = '\r\nWWW-Authenticate: Bearer';
    else if (status === HttpStatus.TOO_MANY_REQUESTS) extra = `\r\nRetry-After: ${this.gate.retryAfterS}`;
    else if (status === HttpStatus.METHOD_NOT_ALLOWED) extra = '\r\nAllow: GET';
    const reason = REASONS[status] ?? 'Error';
    // "HTTP/1.1 " + "NNN " + reason + extra + HEAD_FIXED + length digits + CRLF CRLF
    const headBytes = 9 + 4 + reason.length + extra.length + HEAD_FIXED.length + 10 + 4;
    const total = headBytes + bodyBytes;
    const buf = total <= ex.out.length ? ex.out : new Uint8Array(total);
    let pos = writeAscii(buf, 0, 'HTTP/1.1 ');
    pos = writeUint(buf, pos, status);
    buf[pos++] = SP;
    pos = writeAscii(buf, pos, reason);
    pos = writeAscii(buf, pos, extra);
    pos = writeAscii(buf, pos, HEAD_FIXED);
    pos = writeUint(buf, pos, bodyBytes);
    pos = writeAscii(buf, pos, '\r\n\r\n');
    pos = utf8Write(body, buf, pos);
    ex.response = buf;
    ex.responseLength = pos;
    ex.status = status;
  }
}
