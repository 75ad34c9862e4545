// The fleet-wide stop (docs/fleet.md "The fleet stop"): a fleet operator publishes a signed stop
// on `fleet/<site>/estop`; each hub it names latches ESTOP with source FLEET. This module judges
// one such message: its form, its HMAC-SHA256 under the site's key, its target, its sequence
// (above the last one accepted, kept in the Store across reconnects and restarts) and its time
// (within a window of the hub's wall clock). It never clears anything: a fleet message can stop
// robots, never start one. Platform-free; the MAC comes in as a `MacSha256` (the core's own
// HmacSha256 by default, a native one on a device that has it).
//
// The message, UTF-8 JSON:   {"v":1,"target":"<hub id or *>","seq":<n>,"time":<unix ms>,"sig":"<64 hex>"}
// The bytes signed, UTF-8:    "robot-hub fleet estop v1\n" site "\n" target "\n" seq "\n" time
//                             (seq and time as decimal integers, no sign, no leading zeros)

import type { Store } from './ports.js';
import { equalBytes, HmacSha256, SHA256_BYTES, type MacSha256 } from './sha256.js';
import { UTF8_DECODE_CHUNK, utf8ByteLength, utf8Check, utf8Decode, utf8Write } from './utf8.js';

/** What the signed bytes begin with: the scheme and its version. */
export const FLEET_STOP_PREFIX = 'robot-hub fleet estop v1\n';
/** The message's `v`. */
export const FLEET_STOP_VERSION = 1;
/** Default freshness window: a stop whose `time` is further than this from the hub's wall clock is stale, ms. */
export const FLEET_STOP_WINDOW_MS = 30000;
/** The largest message accepted, bytes: a site and a hub id of at most 64 bytes each fit with room. */
export const FLEET_STOP_MAX_BYTES = 512;
/** A hub id or site in a fleet stop, at most, UTF-8 bytes. */
export const FLEET_NAME_MAX_BYTES = 64;
/** The target that names every hub of the site. */
export const FLEET_ALL = '*';
/** The Store key of the last sequence accepted (NVS keys are at most 15 characters). */
export const FLEET_SEQ_KEY = 'fleetSeq';

/** Why a fleet stop was not acted on (0: it was). Stable codes, in health and logs. */
export const FleetStopVerdict = Object.freeze({
  ACCEPTED: 0,
  /** Not the message's form: not JSON, a field missing or of the wrong type, too long. */
  MALFORMED: 1,
  /** The signature does not match the site's key. */
  BAD_SIGNATURE: 2,
  /** Its sequence is not above the last one accepted (a replay, or an older command). */
  REPLAYED: 3,
  /** Its time is outside the window of the hub's wall clock. */
  STALE: 4,
  /** Good, but for another hub: nothing to do here (its sequence is still taken as seen). */
  NOT_FOR_US: 5,
  /** The hub has no fleet key configured: no fleet stop can be verified, none is acted on. */
  NO_KEY: 6,
} as const);
export type FleetStopVerdictCode = (typeof FleetStopVerdict)[keyof typeof FleetStopVerdict];
export const FLEET_STOP_VERDICT_NAMES = Object.freeze(['accepted', 'malformed', 'bad-signature', 'replayed', 'stale', 'not-for-us', 'no-key'] as const);

export interface FleetStopOptions {
  readonly site: string;
  readonly hubId: string;
  /** The site's fleet key (its bytes); empty: no key, every stop is refused NO_KEY. */
  readonly key: Uint8Array;
  readonly store: Store;
  /** ± window of the wall clock, ms (FLEET_STOP_WINDOW_MS). */
  readonly windowMs?: number;
  /** A native MAC under `key`; absent: the core's HmacSha256. */
  readonly mac?: MacSha256;
}

/** One fleet stop as read from its message (before it is judged). */
export interface FleetStopMessage {
  readonly target: string;
  readonly seq: number;
  readonly time: number;
  readonly sig: Uint8Array;
}

/** The bytes a fleet stop's signature covers (see the file comment). */
export function fleetStopSigned(site: string, target: string, seq: number, time: number): Uint8Array {
  const text = `${FLEET_STOP_PREFIX}${site}\n${target}\n${decimal(seq)}\n${decimal(time)}`;
  const out = new Uint8Array(utf8ByteLength(text));
  utf8Write(text, out, 0);
  return out;
}

/** The message a fleet operator publishes (the `fleet-stop` tool's, and the tests'). */
export function fleetStopMessage(site: string, key: Uint8Array, target: string, seq: number, time: number, mac?: MacSha256): string {
  const signed = fleetStopSigned(site, target, seq, time);
  const sig = new Uint8Array(SHA256_BYTES);
  (mac ?? new HmacSha256(key)).mac(signed, signed.length, sig);
  return JSON.stringify({ v: FLEET_STOP_VERSION, target, seq, time, sig: toHex(sig) });
}

/** Reads a fleet stop message; null when it is not one (MALFORMED). */
export function parseFleetStop(bytes: Uint8Array): FleetStopMessage | null {
  if (bytes.length === 0 || bytes.length > FLEET_STOP_MAX_BYTES) return null;
  return parseText(utf8Text(bytes));
}

function parseText(text: string | null): FleetStopMessage | null {
  if (text === null) return null;
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return null;
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return null;
  const o = v as Record<string, unknown>;
  if (o['v'] !== FLEET_STOP_VERSION) return null;
  const target = o['target'];
  const seq = o['seq'];
  const time = o['time'];
  const sig = o['sig'];
  if (typeof target !== 'string' || target.length === 0 || utf8ByteLength(target) > FLEET_NAME_MAX_BYTES) return null;
  if (!isCount(seq) || (seq as number) < 1 || !isCount(time)) return null;
  if (typeof sig !== 'string' || sig.length !== 2 * SHA256_BYTES) return null;
  const raw = fromHex(sig);
  if (!raw) return null;
  return { target, seq: seq as number, time: time as number, sig: raw };
}

/**
 * Judges fleet stops for one hub of one site. `judge` returns ACCEPTED only for a message that is
 * well formed, signed with the site's key, names this hub or every hub, carries a sequence above
 * the last accepted and a time within the window; the caller then latches (source FLEET).
 */
export class FleetStopGuard {
  readonly site: string;
  readonly hubId: string;
  readonly windowMs: number;
  /** Messages judged, by verdict (FleetStopVerdict). */
  readonly verdicts = new Uint32Array(FLEET_STOP_VERDICT_NAMES.length);
  /** Accepted while the hub had no wall time (judged on signature and sequence alone: docs/fleet.md). */
  untimed = 0;
  private readonly mac: MacSha256 | null;
  private readonly store: Store;
  private readonly sig = new Uint8Array(SHA256_BYTES);
  private last: number;

  constructor(options: FleetStopOptions) {
    if (utf8ByteLength(options.site) > FLEET_NAME_MAX_BYTES || utf8ByteLength(options.hubId) > FLEET_NAME_MAX_BYTES) {
      throw new RangeError(`fleet stop: site and hub id must be at most ${FLEET_NAME_MAX_BYTES} bytes`);
    }
    this.site = options.site;
    this.hubId = options.hubId;
    this.windowMs = options.windowMs ?? FLEET_STOP_WINDOW_MS;
    this.store = options.store;
    this.mac = options.key.length === 0 ? null : (options.mac ?? new HmacSha256(options.key));
    this.last = readSeq(options.store.get(FLEET_SEQ_KEY));
  }

  /** The last sequence accepted (0: none). */
  get lastSeq(): number {
    return this.last;
  }

  /**
   * Judges one message. `wallMs`: the hub's wall clock, Unix ms; NaN when the hub has none (no
   * time source yet), and then the time is not judged (docs/fleet.md: a stop only stops).
   */
  judge(bytes: Uint8Array, wallMs: number): FleetStopVerdictCode {
    const v = this.verdict(bytes, wallMs);
    this.verdicts[v] = ((this.verdicts[v] as number) + 1) >>> 0;
    return v;
  }

  private verdict(bytes: Uint8Array, wallMs: number): FleetStopVerdictCode {
    if (this.mac === null) return FleetStopVerdict.NO_KEY;
    const m = parseFleetStop(bytes);
    if (!m) return FleetStopVerdict.MALFORMED;
    const signed = fleetStopSigned(this.site, m.target, m.seq, m.time);
    this.mac.mac(signed, signed.length, this.sig);
    if (!equalBytes(this.sig, m.sig, SHA256_BYTES)) return FleetStopVerdict.BAD_SIGNATURE;
    if (!(m.seq > this.last)) return FleetStopVerdict.REPLAYED;
    const timed = wallMs === wallMs;
    if (timed && Math.abs(wallMs - m.time) > this.windowMs) return FleetStopVerdict.STALE;
    // Signed and fresh: its sequence is the site's newest, whether or not it names this hub.
    this.last = m.seq;
    this.store.set(FLEET_SEQ_KEY, writeSeq(m.seq));
    if (m.target !== FLEET_ALL && m.target !== this.hubId) return FleetStopVerdict.NOT_FOR_US;
    if (!timed) this.untimed++;
    return FleetStopVerdict.ACCEPTED;
  }
}

function isCount(x: unknown): boolean {
  return typeof x === 'number' && Number.isSafeInteger(x) && x >= 0;
}

function decimal(n: number): string {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError('fleet stop: seq and time must be non-negative safe integers');
  return String(n);
}

const HEX = '0123456789abcdef';

export function toHex(bytes: Uint8Array): string {
  let s = '';
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i] as number;
    s += (HEX[b >>> 4] as string) + (HEX[b & 15] as string);
  }
  return s;
}

/** Lower- or upper-case hex to bytes; null if any character is not hex or the length is odd. */
export function fromHex(s: string): Uint8Array | null {
  if (s.length % 2 !== 0) return null;
  const out = new Uint8Array(s.length / 2);
  for (let i = 0; i < out.length; i++) {
    const hi = nibble(s.charCodeAt(2 * i));
    const lo = nibble(s.charCodeAt(2 * i + 1));
    if (hi < 0 || lo < 0) return null;
    out[i] = (hi << 4) | lo;
  }
  return out;
}

function nibble(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

// The stored sequence: 8 bytes, a float64 big-endian (exact for every safe integer).
function writeSeq(seq: number): Uint8Array {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setFloat64(0, seq);
  return b;
}

function readSeq(b: Uint8Array | undefined): number {
  if (!b || b.length !== 8) return 0;
  const v = new DataView(b.buffer, b.byteOffset, 8).getFloat64(0);
  return Number.isSafeInteger(v) && v > 0 ? v : 0;
}

// UTF-8 to a string, null if not well formed.
function utf8Text(bytes: Uint8Array): string | null {
  if (utf8Check(bytes, 0, bytes.length) >= 0) return null;
  return utf8Decode(bytes, 0, bytes.length, new Uint32Array(UTF8_DECODE_CHUNK));
}
