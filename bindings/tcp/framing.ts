// Wi-Fi framing (§13; docs/protocol.md "Framing", TCP and WebSocket). Platform-free and
// apart from any connection: these state machines never touch a socket.
//
//   TCP        every frame (CBOR or the 12-byte ESTOP) is preceded by its length, 2 bytes
//              big-endian; FrameReassembler takes the stream back apart.
//   WebSocket  one binary message per frame. On the host the `ws` package speaks RFC 6455; on
//              the device the hub speaks the small server subset below itself: the upgrade
//              handshake (WsHandshake), masked client frames (WsFrameParser) and unmasked
//              server frames (writeWsHeader). No extensions, no subprotocols, no text messages.
//
// Inputs are fed in whatever pieces the transport delivers, down to one byte at a time. Each
// parser owns one buffer sized at construction; a whole frame that arrives in one piece is
// handed on in place without a copy. A frame the framing refuses (too large, a text message)
// is reported with a typed code and discarded whole, so the stream stays in step (§2); only a
// WebSocket protocol violation or a refused upgrade is fatal (FramingError).

import { MAX_FRAME_BYTES } from '../../hub/frames.js';

/** The TCP length prefix: 2 bytes, big-endian, the length of the frame that follows. */
export const LENGTH_PREFIX_BYTES = 2;
/** The largest frame a 2-byte prefix can announce. */
export const MAX_PREFIXED_FRAME_BYTES = 0xffff;

export const FramingErrorCode = Object.freeze({
  /** A frame (or WebSocket message) announced longer than the receiver's limit: refused, discarded. */
  TOO_LARGE: 1,
  /** A WebSocket text message (frames are binary only): refused, discarded. */
  TEXT_MESSAGE: 2,
  /** An RFC 6455 violation: unmasked client frame, reserved bits, unknown opcode, bad control frame or continuation. */
  PROTOCOL: 3,
  /** A WebSocket upgrade request the hub does not accept. */
  HANDSHAKE: 4,
} as const);
export type FramingErrorCodeValue = (typeof FramingErrorCode)[keyof typeof FramingErrorCode];

/** A fatal framing failure (PROTOCOL, HANDSHAKE): the connection cannot be parsed further. */
export class FramingError extends Error {
  readonly code: FramingErrorCodeValue;
  constructor(code: FramingErrorCodeValue, message: string) {
    super(message);
    this.name = 'FramingError';
    this.code = code;
  }
}

/** Where reassembled frames go. */
export interface FrameConsumer {
  frame(bytes: Uint8Array, start: number, end: number): void;
  /**
   * A frame refused by the framing (`code`: TOO_LARGE or TEXT_MESSAGE; `length`: what its
   * header announced) and discarded whole. Called as soon as the header is read.
   */
  refuse(code: FramingErrorCodeValue, length: number): void;
}

// ---------------------------------------------------------------------------------------------
// TCP: length-prefixed frames.

/** Writes the 2-byte prefix for a frame of `length` bytes at `at`; returns the offset after it. */
export function writeLengthPrefix(length: number, into: Uint8Array, at: number): number {
  if (!(length >= 0 && length <= MAX_PREFIXED_FRAME_BYTES) || length !== Math.floor(length)) {
    throw new RangeError('frame length must be an integer in 0..65535');
  }
  into[at] = length >>> 8;
  into[at + 1] = length & 0xff;
  return at + LENGTH_PREFIX_BYTES;
}

const RS_LEN_HI = 0;
const RS_LEN_LO = 1;
const RS_BODY = 2;
const RS_SKIP = 3;

// What a zero-length frame is handed on as: no byte, and no stale byte that could read as ESTOP.
const EMPTY = new Uint8Array(0);

/**
 * Takes a TCP byte stream apart into frames (§2). A frame announced longer than
 * `maxFrameBytes` is refused (`out.refuse(TOO_LARGE, length)`, at once) and its bytes are
 * skipped as they arrive, which keeps the stream in step. A zero-length frame is handed on as
 * an empty frame, which the core answers MALFORMED.
 */
export class FrameReassembler {
  readonly maxFrameBytes: number;
  private readonly buf: Uint8Array;
  private state = RS_LEN_HI;
  private need = 0;
  private have = 0;

  /**
   * `buf`: where a frame split across pieces is gathered (at least `maxFrameBytes`), when its
   * owner keeps it in a buffer of its own with other things (on XS every buffer costs heap slots).
   */
  constructor(maxFrameBytes: number = MAX_FRAME_BYTES, buf?: Uint8Array) {
    if (!Number.isInteger(maxFrameBytes) || maxFrameBytes < 1 || maxFrameBytes > MAX_PREFIXED_FRAME_BYTES) {
      throw new RangeError('FrameReassembler: maxFrameBytes must be an integer in 1..65535');
    }
    if (buf !== undefined && buf.length < maxFrameBytes) throw new RangeError('FrameReassembler: buf is smaller than maxFrameBytes');
    this.maxFrameBytes = maxFrameBytes;
    this.buf = buf ?? new Uint8Array(maxFrameBytes);
  }

  /** Bytes of the frame in progress held (or skipped) so far; 0 between frames. */
  get pending(): number {
    return this.state === RS_BODY || this.state === RS_SKIP ? this.have : 0;
  }

  /** True while the bytes of a refused frame are being skipped. */
  get skipping(): boolean {
    return this.state === RS_SKIP;
  }

  /** Feeds bytes[start, end); each complete frame (or refusal) goes to `out` in order. */
  push(bytes: Uint8Array, start: number, end: number, out: FrameConsumer): void {
    let i = start;
    while (i < end) {
      const st = this.state;
      if (st === RS_LEN_HI) {
        this.need = (bytes[i++] as number) << 8;
        this.state = RS_LEN_LO;
      } else if (st === RS_LEN_LO) {
        const need = this.need | (bytes[i++] as number);
        this.need = need;
        this.have = 0;
        this.state = RS_LEN_HI;
        if (need > this.maxFrameBytes) {
          this.state = RS_SKIP;
          out.refuse(FramingErrorCode.TOO_LARGE, need);
        } else if (need === 0) {
          out.frame(EMPTY, 0, 0);
        } else if (end - i >= need) {
          // The whole frame is in this piece: handed on in place.
          out.frame(bytes, i, i + need);
          i += need;
        } else {
          this.state = RS_BODY;
        }
      } else {
        const want = this.need - this.have;
        const n = end - i < want ? end - i : want;
        if (st === RS_BODY) this.buf.set(bytes.subarray(i, i + n), this.have);
        this.have += n;
        i += n;
        if (this.have === this.need) {
          this.state = RS_LEN_HI;
          if (st === RS_BODY) out.frame(this.buf, 0, this.need);
        }
      }
    }
  }

  /** Back to the start of a frame (a new connection). */
  reset(): void {
    this.state = RS_LEN_HI;
    this.need = 0;
    this.have = 0;
  }
}

// ---------------------------------------------------------------------------------------------
// WebSocket (RFC 6455), server side, the subset the hub needs.

export const WsOpcode = Object.freeze({
  CONTINUATION: 0x0,
  TEXT: 0x1,
  BINARY: 0x2,
  CLOSE: 0x8,
  PING: 0x9,
  PONG: 0xa,
} as const);

/** RFC 6455 §7.4.1 status codes the hub sends. */
export const WsCloseCode = Object.freeze({
  NORMAL: 1000,
  GOING_AWAY: 1001,
  PROTOCOL_ERROR: 1002,
  UNSUPPORTED_DATA: 1003,
  MESSAGE_TOO_BIG: 1009,
} as const);

/** RFC 6455 §1.3: appended to Sec-WebSocket-Key before hashing. */
export const WS_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11';
/** A server frame header: payloads up to 65535 bytes need at most 4 bytes (no mask). */
export const WS_MAX_HEADER_BYTES = 4;
/** RFC 6455 §5.5: a control frame carries at most 125 bytes. */
export const WS_MAX_CONTROL_PAYLOAD = 125;

/** Header bytes of an unmasked server frame with a payload of `length` bytes. */
export function wsHeaderLength(length: number): number {
  return length < 126 ? 2 : 4;
}

/**
 * Writes the header of a final, unmasked server frame (RFC 6455 §5.2) with `opcode` and a
 * payload of `length` bytes (≤ 65535) at `at`; returns the offset after it.
 */
export function writeWsHeader(opcode: number, length: number, into: Uint8Array, at: number): number {
  if (!(length >= 0 && length <= 0xffff) || length !== Math.floor(length)) {
    throw new RangeError('WebSocket payload must be an integer in 0..65535 bytes');
  }
  into[at] = 0x80 | (opcode & 0x0f);
  if (length < 126) {
    into[at + 1] = length;
    return at + 2;
  }
  into[at + 1] = 126;
  into[at + 2] = length >>> 8;
  into[at + 3] = length & 0xff;
  return at + 4;
}

/**
 * Where WsFrameParser delivers what it takes apart: `frame` is one whole binary message
 * (reassembled from its fragments); `refuse` a message refused (TOO_LARGE, TEXT_MESSAGE) and
 * discarded whole, `length` as far as announced.
 */
export interface WsConsumer extends FrameConsumer {
  /** A control frame: CLOSE, PING or PONG, its payload unmasked. */
  control(opcode: number, bytes: Uint8Array, start: number, end: number): void;
}

/** A client frame's masking key (RFC 6455 §5.3). */
const MASK_BYTES = 4;

/** The bytes a WsFrameParser keeps: the mask, the largest message and a control frame's payload. */
export function wsParserBytes(maxMessageBytes: number): number {
  return MASK_BYTES + maxMessageBytes + WS_MAX_CONTROL_PAYLOAD;
}

const WS_H0 = 0;
const WS_H1 = 1;
const WS_LEN = 2;
const WS_MASK = 3;
const WS_PAYLOAD = 4;
const WS_FAILED = 5;

/**
 * Client-to-server WebSocket frames, one byte at a time if need be. Every client frame must be
 * masked (RFC 6455 §5.1); no extension is negotiated, so reserved bits must be 0. Binary
 * messages may be fragmented. A text message, or a message that a header announces longer
 * than `maxMessageBytes`, is refused through `out.refuse` and its fragments are skipped, so
 * the connection stays in step (§2). Any RFC 6455 violation throws FramingError PROTOCOL;
 * after that every push is ignored.
 */
export class WsFrameParser {
  readonly maxMessageBytes: number;
  // The mask of the frame being read (at 0, MASK_BYTES of them), the message from MASK_BYTES and
  // after it a control frame's payload (from MASK_BYTES + maxMessageBytes): one view of one buffer
  // made once (on XS every view costs heap slots).
  private readonly msg: Uint8Array;
  private state = WS_H0;
  private fin = false;
  private opcode = 0;
  private lenBytes = 0;
  private lenLeft = 0;
  private len = 0;
  private maskAt = 0;
  private got = 0;
  private msgLen = 0;
  private inMessage = false;
  // The current message was refused: its remaining fragments are skipped, not kept.
  private discarding = false;

  /**
   * `buffer`, `byteOffset`: where its wsParserBytes(maxMessageBytes) bytes live when its owner
   * keeps them in a buffer of its own with other things (on XS every buffer costs heap slots).
   */
  constructor(maxMessageBytes: number = MAX_FRAME_BYTES, buffer?: ArrayBuffer, byteOffset = 0) {
    if (!Number.isInteger(maxMessageBytes) || maxMessageBytes < 1) throw new RangeError('WsFrameParser: maxMessageBytes must be an integer ≥ 1');
    this.maxMessageBytes = maxMessageBytes;
    const bytes = wsParserBytes(maxMessageBytes);
    if (buffer !== undefined && !(byteOffset >= 0 && byteOffset + bytes <= buffer.byteLength)) throw new RangeError('WsFrameParser: its bytes lie outside the buffer');
    const buf = buffer ?? new ArrayBuffer(bytes);
    this.msg = new Uint8Array(buf, buffer !== undefined ? byteOffset : 0, bytes);
  }

  get failed(): boolean {
    return this.state === WS_FAILED;
  }

  push(bytes: Uint8Array, start: number, end: number, out: WsConsumer): void {
    let i = start;
    while (i < end) {
      const st = this.state;
      if (st === WS_H0) {
        const b = bytes[i++] as number;
        const op = b & 0x0f;
        this.fin = (b & 0x80) !== 0;
        this.opcode = op;
        if ((b & 0x70) !== 0) this.fail(FramingErrorCode.PROTOCOL, 'reserved bits set');
        if (op >= 0x8) {
          if (op !== WsOpcode.CLOSE && op !== WsOpcode.PING && op !== WsOpcode.PONG) this.fail(FramingErrorCode.PROTOCOL, 'unknown control opcode');
          if (!this.fin) this.fail(FramingErrorCode.PROTOCOL, 'fragmented control frame');
        } else if (op === WsOpcode.TEXT || op === WsOpcode.BINARY) {
          if (this.inMessage) this.fail(FramingErrorCode.PROTOCOL, 'new message inside a fragmented one');
        } else if (op === WsOpcode.CONTINUATION) {
          if (!this.inMessage) this.fail(FramingErrorCode.PROTOCOL, 'continuation without a message');
        } else {
          this.fail(FramingErrorCode.PROTOCOL, 'unknown data opcode');
        }
        this.state = WS_H1;
      } else if (st === WS_H1) {
        const b = bytes[i++] as number;
        if ((b & 0x80) === 0) this.fail(FramingErrorCode.PROTOCOL, 'unmasked client frame');
        const l7 = b & 0x7f;
        if (this.opcode >= 0x8 && l7 > WS_MAX_CONTROL_PAYLOAD) this.fail(FramingErrorCode.PROTOCOL, 'control frame too long');
        if (l7 < 126) {
          this.len = l7;
          this.lenDone(out);
        } else {
          this.len = 0;
          this.lenBytes = l7 === 126 ? 2 : 8;
          this.lenLeft = this.lenBytes;
          this.state = WS_LEN;
        }
      } else if (st === WS_LEN) {
        const b = bytes[i++] as number;
        if (this.lenBytes === 8 && this.lenLeft === 8 && b > 0x7f) this.fail(FramingErrorCode.PROTOCOL, '64-bit length with the top bit set');
        // Exact while below 2^53; anything that large fails the size check below anyway.
        this.len = this.len * 256 + b;
        if (--this.lenLeft === 0) {
          if (this.lenBytes === 2 && this.len < 126) this.fail(FramingErrorCode.PROTOCOL, 'length not in its shortest form');
          if (this.lenBytes === 8 && this.len < 0x10000) this.fail(FramingErrorCode.PROTOCOL, 'length not in its shortest form');
          this.lenDone(out);
        }
      } else if (st === WS_MASK) {
        this.msg[this.maskAt++] = bytes[i++] as number;
        if (this.maskAt === 4) {
          this.got = 0;
          this.state = WS_PAYLOAD;
          if (this.len === 0) this.frameDone(out);
        }
      } else if (st === WS_PAYLOAD && this.discarding && this.opcode < 0x8) {
        const want = this.len - this.got;
        const n = end - i < want ? end - i : want;
        this.got += n;
        i += n;
        if (this.got === this.len) this.frameDone(out);
      } else if (st === WS_PAYLOAD) {
        const control = this.opcode >= 0x8;
        const dst = this.msg;
        const base = MASK_BYTES + (control ? this.maxMessageBytes : this.msgLen);
        const want = this.len - this.got;
        const n = end - i < want ? end - i : want;
        let g = this.got;
        for (let k = 0; k < n; k++, g++) dst[base + g] = (bytes[i + k] as number) ^ (dst[g & 3] as number);
        this.got = g;
        i += n;
        if (g === this.len) this.frameDone(out);
      } else {
        return;
      }
    }
  }

  /** Back to the start, failure and any partial message forgotten. */
  reset(): void {
    this.state = WS_H0;
    this.msgLen = 0;
    this.inMessage = false;
    this.discarding = false;
  }

  private lenDone(out: WsConsumer): void {
    this.maskAt = 0;
    this.state = WS_MASK;
    if (this.opcode >= 0x8 || this.discarding) return;
    if (this.opcode === WsOpcode.TEXT) {
      this.discarding = true;
      out.refuse(FramingErrorCode.TEXT_MESSAGE, this.len);
    } else if (this.msgLen + this.len > this.maxMessageBytes) {
      this.discarding = true;
      out.refuse(FramingErrorCode.TOO_LARGE, this.msgLen + this.len);
    }
  }

  private frameDone(out: WsConsumer): void {
    this.state = WS_H0;
    const op = this.opcode;
    if (op >= 0x8) {
      const c = MASK_BYTES + this.maxMessageBytes;
      out.control(op, this.msg, c, c + this.len);
      return;
    }
    if (!this.fin) {
      this.inMessage = true;
      if (!this.discarding) this.msgLen += this.len;
      return;
    }
    const n = this.msgLen + this.len;
    const refused = this.discarding;
    this.msgLen = 0;
    this.inMessage = false;
    this.discarding = false;
    if (!refused) out.frame(this.msg, MASK_BYTES, MASK_BYTES + n);
  }

  private fail(code: FramingErrorCodeValue, why: string): never {
    this.state = WS_FAILED;
    throw new FramingError(code, `WebSocket: ${why}`);
  }
}

// ---------------------------------------------------------------------------------------------
// The upgrade handshake (RFC 6455 §4.2).

/** An upgrade request longer than this is refused (a browser's is about 500 bytes). */
export const MAX_HANDSHAKE_BYTES = 2048;

const CR = 13;
const LF = 10;

/**
 * Reads the client's HTTP upgrade request up to its blank line and checks it: `GET` with
 * HTTP/1.1 or later, `Upgrade: websocket`, a `Connection` that lists `upgrade`,
 * `Sec-WebSocket-Version: 13` and a `Sec-WebSocket-Key` of 16 bytes in base64. Any path is
 * accepted (the listener serves one endpoint). Header names are case-insensitive.
 */
export class WsHandshake {
  private readonly buf: Uint8Array;
  private n = 0;
  private matched = 0; // how much of CR LF CR LF has been seen
  private done = false;
  /** The client's Sec-WebSocket-Key once the request is complete and valid. */
  key = '';
  /** The request target (path), once complete. */
  path = '';
  /**
   * The HTTP status a refused request is answered with (§13.2): 426 for a request that is not
   * an upgrade, 405 for an upgrade by a method other than GET, 400 for any other refusal.
   */
  refusal = 400;
  /** What the answer's accept key is hashed with, when its owner keeps it here until then. */
  readonly sha1: Sha1 | undefined;

  /**
   * `buf`: where the request is read, its first MAX_HANDSHAKE_BYTES bytes (by default a buffer of
   * its own; a link lends storage that is idle until the upgrade is answered). `sha1`: the hash
   * the answer needs, kept with the handshake (which is dropped once answered).
   */
  constructor(buf?: Uint8Array, sha1?: Sha1) {
    if (buf && buf.length < MAX_HANDSHAKE_BYTES) throw new RangeError(`WsHandshake: the buffer must hold ${MAX_HANDSHAKE_BYTES} bytes`);
    this.buf = buf ?? new Uint8Array(MAX_HANDSHAKE_BYTES);
    this.sha1 = sha1;
  }

  get complete(): boolean {
    return this.done;
  }

  /**
   * Feeds request bytes. Returns the offset in `bytes` just past the blank line that ends the
   * request (bytes after it are the first WebSocket frames), or -1 while incomplete. Throws
   * FramingError HANDSHAKE for an oversize or unacceptable request.
   */
  push(bytes: Uint8Array, start: number, end: number): number {
    if (this.done) return start;
    for (let i = start; i < end; i++) {
      const b = bytes[i] as number;
      if (this.n === MAX_HANDSHAKE_BYTES) throw new FramingError(FramingErrorCode.HANDSHAKE, 'upgrade request too long');
      this.buf[this.n++] = b;
      const expect = this.matched === 0 || this.matched === 2 ? CR : LF;
      if (b === expect) this.matched++;
      else this.matched = b === CR ? 1 : 0;
      if (this.matched === 4) {
        this.parse();
        this.done = true;
        return i + 1;
      }
    }
    return -1;
  }

  private parse(): void {
    let text = '';
    for (let i = 0; i < this.n; i++) {
      const c = this.buf[i] as number;
      if (c > 0x7e || (c < 0x20 && c !== CR && c !== LF && c !== 9)) throw new FramingError(FramingErrorCode.HANDSHAKE, 'non-ASCII byte in the request');
      text += String.fromCharCode(c);
    }
    const lines = text.split('\r\n');
    const request = (lines[0] as string).split(' ');
    if (request.length !== 3) throw new FramingError(FramingErrorCode.HANDSHAKE, 'malformed request line');
    const version = /^HTTP\/(\d+)\.(\d+)$/.exec(request[2] as string);
    if (!version || Number(version[1]) * 10 + Number(version[2]) < 11) throw new FramingError(FramingErrorCode.HANDSHAKE, 'HTTP/1.1 or later required');
    this.path = request[1] as string;
    let upgrade: string | null = null;
    let connection = false;
    let wsVersion = '';
    let key = '';
    for (let l = 1; l < lines.length; l++) {
      const line = lines[l] as string;
      if (line.length === 0) continue;
      const colon = line.indexOf(':');
      if (colon <= 0) throw new FramingError(FramingErrorCode.HANDSHAKE, 'malformed header line');
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      if (name === 'upgrade') upgrade = value.toLowerCase();
      else if (name === 'connection') {
        for (const token of value.split(',')) if (token.trim().toLowerCase() === 'upgrade') connection = true;
      } else if (name === 'sec-websocket-version') wsVersion = value;
      else if (name === 'sec-websocket-key') key = value;
    }
    // §13.2: the statuses of a refused upgrade, in this order, as the host's listener answers.
    if (upgrade === null || !connection) {
      this.refusal = 426;
      throw new FramingError(FramingErrorCode.HANDSHAKE, 'not an upgrade request');
    }
    if (request[0] !== 'GET') {
      this.refusal = 405;
      throw new FramingError(FramingErrorCode.HANDSHAKE, 'not a GET request');
    }
    if (upgrade !== 'websocket') throw new FramingError(FramingErrorCode.HANDSHAKE, 'not a WebSocket upgrade');
    if (!/^[A-Za-z0-9+/]{22}==$/.test(key)) throw new FramingError(FramingErrorCode.HANDSHAKE, 'Sec-WebSocket-Key is not 16 bytes of base64');
    if (wsVersion !== '13') throw new FramingError(FramingErrorCode.HANDSHAKE, 'Sec-WebSocket-Version 13 required');
    this.key = key;
  }
}

/** SHA-1 of an ASCII string, 20 bytes: the device's `crypt` Digest, node:crypto on the host. */
export type Sha1 = (text: string) => Uint8Array;

/** RFC 6455 §4.2.2: Sec-WebSocket-Accept = base64(SHA-1(key + GUID)). */
export function wsAccept(key: string, sha1: Sha1): string {
  return base64Encode(sha1(key + WS_GUID));
}

/** The 101 response that completes the upgrade. */
export function wsUpgradeResponse(accept: string): string {
  return 'HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ' + accept + '\r\n\r\n';
}

/** The answer to a refused upgrade; the connection is closed after it. */
export const WS_BAD_REQUEST_RESPONSE = 'HTTP/1.1 400 Bad Request\r\nConnection: close\r\nSec-WebSocket-Version: 13\r\nContent-Length: 0\r\n\r\n';

/** The answer to a refused upgrade with `status` (WsHandshake.refusal: 400, 405 or 426). */
export function wsRefusedResponse(status: number): string {
  if (status === 405) return 'HTTP/1.1 405 Method Not Allowed\r\nConnection: close\r\nContent-Length: 0\r\n\r\n';
  if (status === 426) return 'HTTP/1.1 426 Upgrade Required\r\nConnection: close\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nContent-Length: 0\r\n\r\n';
  return WS_BAD_REQUEST_RESPONSE;
}

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** RFC 4648 §4 base64 with padding. */
export function base64Encode(bytes: Uint8Array): string {
  let out = '';
  let i = 0;
  for (; i + 2 < bytes.length; i += 3) {
    const v = ((bytes[i] as number) << 16) | ((bytes[i + 1] as number) << 8) | (bytes[i + 2] as number);
    out += B64.charAt(v >>> 18) + B64.charAt((v >>> 12) & 63) + B64.charAt((v >>> 6) & 63) + B64.charAt(v & 63);
  }
  const rest = bytes.length - i;
  if (rest === 1) {
    const v = (bytes[i] as number) << 16;
    out += B64.charAt(v >>> 18) + B64.charAt((v >>> 12) & 63) + '==';
  } else if (rest === 2) {
    const v = ((bytes[i] as number) << 16) | ((bytes[i + 1] as number) << 8);
    out += B64.charAt(v >>> 18) + B64.charAt((v >>> 12) & 63) + B64.charAt((v >>> 6) & 63) + '=';
  }
  return out;
}

/** Writes an ASCII string as bytes at `at`; returns the offset after it. */
export function writeAscii(text: string, into: Uint8Array, at: number): number {
  for (let i = 0; i < text.length; i++) into[at + i] = text.charCodeAt(i) & 0x7f;
  return at + text.length;
}
