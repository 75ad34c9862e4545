// BLE fragmentation (docs/protocol.md §13.4): a frame travels as one or more fragments, each
// one GATT write (client → hub) or one notification (hub → client) of at most ATT MTU − 3
// bytes. Platform-free and allocation-free after construction: the sender cuts fragments out
// of the frame's own bytes, the receiver reassembles into one buffer sized at setup.
//
//   byte 0       header: bits 7–6 position, bit 5 reserved (0), bits 4–0 message counter
//   bytes 1–2    first fragment only: the frame's total length, uint16 big-endian
//   then         the frame's next bytes (at least one)
//
// A header never has bit 5 set, so a fragment never begins with 0xE5 (the ESTOP magic, §11.1)
// nor with 0xA0–0xBF (a CBOR map head, §2): a write that begins with 0xE5 is a whole ESTOP
// frame sent raw, and the receiver takes it as one.

import { ESTOP_MAGIC } from '../../hub/estop-frame.js';
import { MAX_FRAME_BYTES, MAX_HUB_FRAME_BYTES } from '../../hub/frames.js';
import { Nack } from '../../hub/nack.js';

export const FragmentPosition = Object.freeze({
  /** The whole frame in one fragment. */
  ONLY: 0,
  /** The first of several; carries the total length. */
  FIRST: 1,
  MIDDLE: 2,
  LAST: 3,
} as const);

export const FRAGMENT_HEADER_BYTES = 1;
/** The total length a FIRST fragment carries after its header. */
export const FRAGMENT_LENGTH_BYTES = 2;
export const FRAGMENT_RESERVED_BIT = 0x20;
export const FRAGMENT_COUNTER_MASK = 0x1f;
// The position bits and the reserved bit: 0 in an ONLY fragment's header, and only there.
const ONLY_MASK = 0xe0;
/** Message counters run modulo this (5 bits). */
export const FRAGMENT_COUNTERS = 32;

/** The smallest ATT MTU (Core spec: LE default) and so the smallest fragment, MTU − 3. */
export const ATT_MTU_MIN = 23;
export const FRAGMENT_MIN_BYTES = ATT_MTU_MIN - 3;
/**
 * The largest fragment: an attribute value is at most 512 bytes (Core spec Vol 3 Part F
 * 3.2.9), whatever MTU NimBLE negotiates (it allows up to 527).
 */
export const FRAGMENT_MAX_BYTES = 512;

export function header(position: number, counter: number): number {
  return ((position & 3) << 6) | (counter & FRAGMENT_COUNTER_MASK);
}

export function nextCounter(counter: number): number {
  return (counter + 1) & FRAGMENT_COUNTER_MASK;
}

/** The fragment size a link uses for a transport's maximum write (ATT MTU − 3). */
export function fragmentSize(maximumWrite: number): number {
  if (!(maximumWrite >= FRAGMENT_MIN_BYTES)) return FRAGMENT_MIN_BYTES;
  return maximumWrite > FRAGMENT_MAX_BYTES ? FRAGMENT_MAX_BYTES : Math.floor(maximumWrite);
}

/** Fragments a frame of `length` bytes takes at fragment size `size`. */
export function fragmentCount(length: number, size: number): number {
  if (length + FRAGMENT_HEADER_BYTES <= size) return 1;
  const first = size - FRAGMENT_HEADER_BYTES - FRAGMENT_LENGTH_BYTES;
  const rest = size - FRAGMENT_HEADER_BYTES;
  return 1 + Math.ceil((length - first) / rest);
}

/** Fragments still to send of a frame of `length` bytes whose first `sent` bytes went. */
export function fragmentsLeft(length: number, sent: number, size: number): number {
  if (sent <= 0) return fragmentCount(length, size);
  const left = length - sent;
  return left <= 0 ? 0 : Math.ceil(left / (size - FRAGMENT_HEADER_BYTES));
}

/** Bytes on the air (headers included) for a frame of `length` bytes at fragment size `size`. */
export function fragmentedBytes(length: number, size: number): number {
  const n = fragmentCount(length, size);
  return length + n * FRAGMENT_HEADER_BYTES + (n > 1 ? FRAGMENT_LENGTH_BYTES : 0);
}

/** How many of the frame's bytes the fragment that starts `sent` bytes in carries. */
export function fragmentPayload(length: number, sent: number, size: number): number {
  const left = length - sent;
  if (sent === 0) return left + FRAGMENT_HEADER_BYTES <= size ? left : size - FRAGMENT_HEADER_BYTES - FRAGMENT_LENGTH_BYTES;
  return left + FRAGMENT_HEADER_BYTES <= size ? left : size - FRAGMENT_HEADER_BYTES;
}

/**
 * Writes into `into` (from 0) the fragment of frame[start, start + length) that begins `sent`
 * bytes into the frame, with message counter `counter`, and returns the fragment's length.
 * The caller advances `sent` by fragmentPayload(length, sent, size).
 */
export function writeFragment(
  into: Uint8Array,
  frame: Uint8Array,
  start: number,
  length: number,
  sent: number,
  counter: number,
  size: number,
): number {
  const left = length - sent;
  let p = 0;
  let n: number;
  if (sent === 0 && left + FRAGMENT_HEADER_BYTES <= size) {
    into[p++] = header(FragmentPosition.ONLY, counter);
    n = left;
  } else if (sent === 0) {
    into[p++] = header(FragmentPosition.FIRST, counter);
    into[p++] = (length >>> 8) & 0xff;
    into[p++] = length & 0xff;
    n = size - FRAGMENT_HEADER_BYTES - FRAGMENT_LENGTH_BYTES;
  } else if (left + FRAGMENT_HEADER_BYTES <= size) {
    into[p++] = header(FragmentPosition.LAST, counter);
    n = left;
  } else {
    into[p++] = header(FragmentPosition.MIDDLE, counter);
    n = size - FRAGMENT_HEADER_BYTES;
  }
  const from = start + sent;
  for (let i = 0; i < n; i++) into[p + i] = frame[from + i] as number;
  return p + n;
}

/**
 * A sender's side for one direction: message counters and the cursor through one frame.
 * `begin` a frame, then call `next` until it returns 0; each call writes one fragment into
 * `into` from 0. The size may change between calls (an MTU exchange mid-frame is harmless:
 * the receiver never relies on fragment sizes).
 */
export class Fragmenter {
  private frame: Uint8Array = EMPTY;
  private start = 0;
  private length = 0;
  private sent = 0;
  private counter = FRAGMENT_COUNTER_MASK;

  /** Starts a frame; returns the message counter it travels under. */
  begin(frame: Uint8Array, start: number, length: number): number {
    if (!(length >= 1) || length > 0xffff) throw new RangeError('Fragmenter.begin: a frame is 1 to 65535 bytes');
    this.frame = frame;
    this.start = start;
    this.length = length;
    this.sent = 0;
    this.counter = nextCounter(this.counter);
    return this.counter;
  }

  /** Takes the next message counter for a message sent whole by other means (write-ahead). */
  takeCounter(): number {
    this.counter = nextCounter(this.counter);
    return this.counter;
  }

  get done(): boolean {
    return this.sent >= this.length;
  }

  next(into: Uint8Array, size: number): number {
    if (this.sent >= this.length) return 0;
    const carried = fragmentPayload(this.length, this.sent, size);
    const n = writeFragment(into, this.frame, this.start, this.length, this.sent, this.counter, size);
    this.sent += carried;
    if (this.sent >= this.length) this.frame = EMPTY;
    return n;
  }
}

const EMPTY = new Uint8Array(0);

// ---------------------------------------------------------------------------------------------
// Reassembly.

export interface ReassemblyLimits {
  /** The largest frame accepted; a FIRST fragment declaring more is refused at once, TOO_LARGE. */
  readonly maxFrameBytes: number;
  /** The most fragments one frame may take. */
  readonly maxFragments: number;
  /** A frame not complete this long after its first fragment is discarded (MALFORMED). */
  readonly timeoutMs: number;
}

/**
 * Client → hub, as the hub enforces it: at most MAX_FRAME_BYTES (§7); at most the fragments
 * that frame needs at the smallest MTU (54), so a sender cutting smaller than MTU − 3 can not
 * stretch a frame out; complete within 5 s. The timeout covers the slowest legitimate case
 * with room: 54 writes at one write per 50 ms connection event take 2.7 s.
 */
export const HUB_REASSEMBLY: ReassemblyLimits = Object.freeze({
  maxFrameBytes: MAX_FRAME_BYTES,
  maxFragments: fragmentCount(MAX_FRAME_BYTES, FRAGMENT_MIN_BYTES),
  timeoutMs: 5000,
});

/**
 * Hub → client, for client libraries and the simulator: at most MAX_HUB_FRAME_BYTES, 243
 * fragments at the smallest MTU, and 20 s (243 notifications at one per 50 ms event take 12 s).
 */
export const CLIENT_REASSEMBLY: ReassemblyLimits = Object.freeze({
  maxFrameBytes: MAX_HUB_FRAME_BYTES,
  maxFragments: fragmentCount(MAX_HUB_FRAME_BYTES, FRAGMENT_MIN_BYTES),
  timeoutMs: 20000,
});

/**
 * Where reassembled frames go. `refuse` reports a frame the binding threw away, with the NACK
 * code it deserves, and `bytes[start, end)` chosen so that handing exactly these bytes to the
 * core as a frame draws that NACK from the core's own checks: for TOO_LARGE a view longer than
 * the limit that begins with the frame's first bytes (the core refuses on length first and
 * peeks the frame type from those bytes; nothing past the first fragment is meaningful), for
 * MALFORMED an empty view.
 */
export interface ReassemblySink {
  frame(bytes: Uint8Array, start: number, end: number): void;
  refuse(code: number, bytes: Uint8Array, start: number, end: number): void;
}

/** The reassembler's counters (`Reassembler.counters`: fields of the reassembler itself, no object of their own). */
export interface ReassemblyCounters {
  /** Frames handed to the sink (single-fragment ones included). */
  readonly frames: number;
  /** Frames refused MALFORMED: broken fragment sequences, bad headers, timeouts. */
  readonly malformed: number;
  /** Frames refused TOO_LARGE. */
  readonly tooLarge: number;
  /** Of the malformed: frames discarded by the timeout. */
  readonly timeouts: number;
  /** Fragments dropped silently because their message was already refused. */
  readonly skipped: number;
}

/**
 * The receiving side of one direction of one connection. Rules (docs/protocol.md §13.4):
 * - ONLY: a whole frame, handed on at once without copying, even between the fragments of
 *   another message (the write-ahead ESTOP overtakes a frame being sent); the partial is kept.
 * - FIRST: starts a partial frame under its counter; one already pending is abandoned (MALFORMED).
 * - MIDDLE/LAST: must continue the partial (same counter); LAST must complete exactly the
 *   declared length, MIDDLE must leave at least one byte for a LAST.
 * - A message refused once is refused once: its later fragments are dropped silently until a
 *   FIRST or ONLY reuses its counter, so one broken frame draws one NACK, not one per fragment.
 * - The partial frame holds the one buffer sized at setup; `pendingBytes` is 0 again as soon
 *   as a frame completes, is refused or times out.
 */
export class Reassembler {
  /** maxFrameBytes + 1: the partial frame, and the TOO_LARGE view refuse() hands on. */
  readonly buffer: Uint8Array;
  readonly limits: ReassemblyLimits;
  /** ReassemblyCounters. */
  frames = 0;
  malformed = 0;
  tooLarge = 0;
  timeouts = 0;
  skipped = 0;
  /**
   * While a partial frame is held, its first fragment's time plus the timeout (`tick` discards it
   * once more than the timeout has passed); Infinity while none is.
   */
  expiresAt = Infinity;
  private readonly sink: ReassemblySink;
  private readonly timeoutMs: number;
  private readonly maxFrameBytes: number;
  private total = 0; // declared length of the partial frame; 0: none
  private got = 0;
  private fragments = 0;
  private counter = 0;
  private began = 0;
  private skip = 0; // bit c set: drop MIDDLE/LAST fragments of counter c silently

  /**
   * `buffer`: the maxFrameBytes + 1 bytes to reassemble in, when its owner has them to spare in
   * a buffer of its own (BleLink: in its notification queue's); else the reassembler makes them.
   */
  constructor(sink: ReassemblySink, limits: ReassemblyLimits = HUB_REASSEMBLY, buffer?: Uint8Array) {
    if (!(limits.maxFrameBytes >= 1 && limits.maxFrameBytes <= 0xffff)) throw new RangeError('Reassembler: maxFrameBytes must be 1..65535');
    if (!(limits.maxFragments >= 2)) throw new RangeError('Reassembler: maxFragments must be ≥ 2');
    if (buffer !== undefined && buffer.length !== limits.maxFrameBytes + 1) throw new RangeError('Reassembler: the buffer must be maxFrameBytes + 1 bytes');
    this.sink = sink;
    this.limits = limits;
    this.timeoutMs = limits.timeoutMs;
    this.maxFrameBytes = limits.maxFrameBytes;
    this.buffer = buffer ?? new Uint8Array(limits.maxFrameBytes + 1);
  }

  /** The reassembler's counters: the reassembler itself. */
  get counters(): ReassemblyCounters {
    return this;
  }

  /** Bytes of a partial frame held; 0 when none. */
  get pendingBytes(): number {
    return this.total > 0 ? this.got : 0;
  }

  /** One write or notification, bytes[start, end), received at `now`. */
  push(bytes: Uint8Array, start: number, end: number, now: number): void {
    // tick(now), without the call when no partial frame is held.
    if (this.total > 0 && now - this.began > this.timeoutMs) {
      this.timeouts++;
      this.fail(this.counter);
    }
    if (end <= start) {
      this.refuseMalformed();
      return;
    }
    // The usual write is a whole frame of at most maxFrameBytes: an ONLY fragment (position 0,
    // reserved bit clear) of 2 to maxFrameBytes + 1 bytes. It clears its counter's refusal and goes
    // on whole (deliverWhole, inline; no locals: on XS each costs at every call).
    if (((bytes[start] as number) & ONLY_MASK) === 0 && end - start > FRAGMENT_HEADER_BYTES && end - start <= this.maxFrameBytes + FRAGMENT_HEADER_BYTES) {
      this.skip &= ~(1 << (bytes[start] as number));
      this.frames++;
      this.sink.frame(bytes, start + FRAGMENT_HEADER_BYTES, end);
      return;
    }
    const h = bytes[start] as number;
    if (h & FRAGMENT_RESERVED_BIT) {
      if (h === ESTOP_MAGIC) this.deliverWhole(bytes, start, end);
      else this.refuseMalformed();
      return;
    }
    const c = h & FRAGMENT_COUNTER_MASK;
    const position = h >>> 6;
    if (position === FragmentPosition.ONLY) {
      this.skip &= ~(1 << c);
      const n = end - start - FRAGMENT_HEADER_BYTES;
      if (n < 1) this.refuseMalformed();
      else this.refuseTooLarge(bytes, start + FRAGMENT_HEADER_BYTES, end, -1);
      return;
    }
    if (position === FragmentPosition.FIRST) {
      if (this.total > 0) this.fail(this.counter);
      this.skip &= ~(1 << c);
      this.first(bytes, start, end, c, now);
      return;
    }
    if (this.skip & (1 << c)) {
      this.skipped++;
      return;
    }
    if (this.total === 0 || c !== this.counter) {
      // A fragment of a message whose FIRST never came (or of another message mid-frame):
      // whatever was pending is broken too. One refusal for the lot.
      if (this.total > 0) this.skip |= 1 << this.counter;
      this.fail(c);
      return;
    }
    const n = end - start - FRAGMENT_HEADER_BYTES;
    const got = this.got + n;
    const last = position === FragmentPosition.LAST;
    if (n < 1 || this.fragments + 1 > this.limits.maxFragments || (last ? got !== this.total : got >= this.total)) {
      this.fail(c);
      return;
    }
    const buf = this.buffer;
    const from = start + FRAGMENT_HEADER_BYTES;
    const at = this.got;
    for (let i = 0; i < n; i++) buf[at + i] = bytes[from + i] as number;
    this.got = got;
    this.fragments++;
    if (last) {
      const total = this.total;
      this.clear();
      this.frames++;
      this.sink.frame(buf, 0, total);
    }
  }

  /** Discards a partial frame older than the timeout; call it at least every hub tick. */
  tick(now: number): void {
    if (this.total > 0 && now - this.began > this.timeoutMs) {
      this.timeouts++;
      this.fail(this.counter);
    }
  }

  /** Forgets everything (the transport is gone); nothing is refused. */
  reset(): void {
    this.clear();
    this.skip = 0;
  }

  private first(bytes: Uint8Array, start: number, end: number, c: number, now: number): void {
    const head = FRAGMENT_HEADER_BYTES + FRAGMENT_LENGTH_BYTES;
    const n = end - start - head;
    if (n < 1) {
      this.fail(c);
      return;
    }
    const total = ((bytes[start + 1] as number) << 8) | (bytes[start + 2] as number);
    const from = start + head;
    if (total > this.maxFrameBytes) {
      this.refuseTooLarge(bytes, from, end, c);
      return;
    }
    if (total <= n) {
      this.fail(c);
      return;
    }
    const buf = this.buffer;
    for (let i = 0; i < n; i++) buf[i] = bytes[from + i] as number;
    this.total = total;
    this.got = n;
    this.fragments = 1;
    this.counter = c;
    this.began = now;
    this.expiresAt = now + this.timeoutMs;
  }

  private deliverWhole(bytes: Uint8Array, start: number, end: number): void {
    if (end - start > this.maxFrameBytes) {
      this.refuseTooLarge(bytes, start, end, -1);
      return;
    }
    this.frames++;
    this.sink.frame(bytes, start, end);
  }

  private refuseTooLarge(bytes: Uint8Array, from: number, end: number, c: number): void {
    if (c >= 0) this.skip |= 1 << c;
    const buf = this.buffer;
    const n = Math.min(end - from, buf.length);
    for (let i = 0; i < n; i++) buf[i] = bytes[from + i] as number;
    this.tooLarge++;
    this.sink.refuse(Nack.TOO_LARGE, buf, 0, buf.length);
  }

  /** Refuses the message under counter `c` (MALFORMED) and drops whatever was pending. */
  private fail(c: number): void {
    this.skip |= 1 << c;
    this.clear();
    this.refuseMalformed();
  }

  private refuseMalformed(): void {
    this.malformed++;
    this.sink.refuse(Nack.MALFORMED, this.buffer, 0, 0);
  }

  private clear(): void {
    this.total = 0;
    this.got = 0;
    this.fragments = 0;
    this.expiresAt = Infinity;
  }
}
