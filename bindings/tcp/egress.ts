// The Wi-Fi egress path (§13, §10.3, §10.4): the bounded per-client egress queue whose
// watermark is the TCP and WebSocket congestion signal, the ESTOP write-ahead, and the Link
// that the host (node.ts) and the device (device.ts) adapters wrap around their sockets.
// Platform-free: the adapters bring the socket; time comes from the hub's Clock.
//
// Where bytes wait. The core drops what a link cannot take at once (§10.4: never delay and
// burst), so the queue must be where a slow client's backlog shows. Two things keep bytes out
// of places the watermark cannot see: the adapters hand a socket more only while its own
// buffer is below a small limit, and once a client acknowledges (ACK key 28) no DATA frame is
// handed over while `ackWindowFrames` frames are unacknowledged, so that megabytes of kernel
// buffer cannot hide a client that stopped reading (docs/protocol.md §13.2).

import { ACK_LAG_CONGESTED_FRAMES, ACK_LAG_RECOVERED_FRAMES, WatermarkDetector, type WatermarkOptions } from '../detector.js';
import { StagedBytes } from '../../hub/bytes.js';
import { CborWriter } from '../../hub/cbor.js';
import { encodeFrame, FrameType, MAX_FRAME_BYTES, MAX_HUB_FRAME_BYTES } from '../../hub/frames.js';
import { MALFORMED_CLOSE_PER_S } from '../../hub/constants.js';
import { Tier } from '../../catalog/schema.js';
import { ESTOP_FRAME_BYTES } from '../../hub/estop-frame.js';
import { Nack } from '../../hub/nack.js';
import type { Clock, GrantSet, LinkCaps, LinkEstimate, LinkSink, Log } from '../../hub/ports.js';
import { AckForm, NULL_LOG, Tag, tagChannel, tagType } from '../../hub/ports.js';
import { AckCounter, ownValue, ESTOP_AHEAD_SLOTS, EstopAhead, MIN_RTT_WINDOW_MS, MinRttFilter, RTT_NUMBERS, RttEstimator, WINDOWED_NUMBERS, sampleBudgetMs, THROUGHPUT_WINDOW_MS, ThroughputEstimator, type BindingLink, type HubAttach } from '../link.js';
import {
  FrameReassembler,
  FramingError,
  FramingErrorCode,
  LENGTH_PREFIX_BYTES,
  wsRefusedResponse,
  WS_MAX_HEADER_BYTES,
  WsCloseCode,
  WsFrameParser,
  wsParserBytes,
  MAX_HANDSHAKE_BYTES,
  WsHandshake,
  WsOpcode,
  wsAccept,
  wsHeaderLength,
  wsUpgradeResponse,
  writeAscii,
  writeLengthPrefix,
  writeWsHeader,
  type FrameConsumer,
  type FramingErrorCodeValue,
  type Sha1,
  type WsConsumer,
} from './framing.js';

// ---------------------------------------------------------------------------------------------
// The queue.

/**
 * What a queued record is. CONTROL and DATA records are protocol frames: they count toward the
 * client's ACK (§5.12 key 28 counts every frame received), and DATA records wait while the ack
 * window is full. RAW records are not frames (the HTTP upgrade answer, WebSocket control
 * frames): neither counted nor held. SAMPLE and VALUE records are DATA records the core tagged
 * sheddable (hub/ports.ts Tag, docs/protocol.md §13.6), held by the ack window like DATA: a
 * SAMPLE is dropped unsent once older than the link's sample budget; a VALUE becomes SUPERSEDED
 * when a newer VALUE of its channel is queued behind it, and is dropped unsent when reached.
 */
export const RecordKind = Object.freeze({ CONTROL: 0, DATA: 1, RAW: 2, SAMPLE: 3, VALUE: 4, SUPERSEDED: 5 } as const);

/** ESTOP frames waiting ahead of the queue at once (bindings/link.ts EstopAhead). */
export const AHEAD_SLOTS = ESTOP_AHEAD_SLOTS;
/** Room for one framed ESTOP: the largest header (WebSocket, 4) plus the 12-byte frame. */
export const AHEAD_SLOT_BYTES = WS_MAX_HEADER_BYTES + ESTOP_FRAME_BYTES;

// Channels a VALUE record may name: 1..255 (hub/ports.ts tagChannel), indexed directly.
const CHANNELS = 256;
// A record's kind (RecordKind, 0..5) in the low 3 bits of its entry, its length above them: 16
// bits hold lengths up to 8191, 32 bits up to 2^29 − 1 (the largest capacity).
const KIND_BITS = 3;
const KINDS = 1 << KIND_BITS;
const KIND_MASK = KINDS - 1;
const REC_LENGTH_16 = 0xffff >>> KIND_BITS;
const REC_LENGTH_32 = 0xffffffff >>> KIND_BITS;

// An EgressQueue's numbers other than the hot ones (num[no + Q_*]): where the gap at the ring's
// end starts (-1: none), ESTOPs handed over, samples dropped stale, values dropped superseded,
// the instant and budget samples are expired against (`setExpiry`), its TakePool region (-1:
// memory of its own), whether it gave its memory back (1), and the records it handed over whole.
const Q_GAP_AT = 0;
const Q_AHEAD_OUT = 1;
const Q_EXPIRED = 2;
const Q_CONFLATED = 3;
const Q_EXPIRE_AT = 4;
const Q_BUDGET = 5;
const Q_REGION = 6;
const Q_RELEASED = 7;
const Q_RECORDS_OUT = 8;
/** The numbers an EgressQueue keeps in its store. */
export const QUEUE_NUMBERS = 9;

/**
 * Where an EgressQueue keeps what it knows of its records and its numbers when its owner keeps
 * them with other things: EgressQueue.metaBytes bytes of `buffer` at `metaAt` (a multiple of 4),
 * QUEUE_NUMBERS numbers of `numbers` at `numbersAt`.
 */
/** Frames an owner started, counted by the owner (bindings/link.ts AckCounter is one). */
export interface FrameStarts {
  readonly started: number;
}

export interface QueueStore {
  readonly buffer: ArrayBuffer;
  readonly metaAt: number;
  readonly numbers: Float64Array;
  readonly numbersAt: number;
}

/** DATA records of every kind wait while the ack window is full. */
function held(kind: number): boolean {
  return kind === RecordKind.DATA || kind === RecordKind.SAMPLE || kind === RecordKind.VALUE || kind === RecordKind.SUPERSEDED;
}

/**
 * Room for the egress queues of up to `regions` connections in one StagedBytes, with one staging
 * area for all of them (docs/performance.md "Fits the ESP32"): a take copies a queue's bytes
 * there and the transport writes them out before anything else runs (the engine is single-
 * threaded, and no adapter keeps `out` past the call that took it), so one staging area serves
 * every connection in turn. A connection claims a region as its link is made and gives it back
 * when its transport is gone; with none free, a link makes its own memory as it would alone.
 */
export class TakePool {
  readonly mem: StagedBytes;
  /** Bytes of each region: a queue's capacity and its ESTOP slots. */
  readonly regionBytes: number;
  readonly capacity: number;
  readonly regions: number;
  private free: number;
  /**
   * What the pool's links share besides memory, made at run time (on the device a module's own
   * objects are frozen with it): one LinkCaps per binding name and mtu, and the estimate every
   * link's estimate() fills in and returns (the core reads it at once).
   */
  readonly caps: LinkCaps[] = [];
  readonly estimate: LinkEstimate = { throughputBps: 0, rttMs: 0 };

  constructor(regions: number, capacity: number, takeBytes: number) {
    if (!Number.isInteger(regions) || regions < 1 || regions > 30) throw new RangeError('TakePool regions must be an integer in 1..30');
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('TakePool capacity must be an integer ≥ 1');
    this.capacity = capacity;
    this.regions = regions;
    this.regionBytes = capacity + AHEAD_SLOTS * AHEAD_SLOT_BYTES;
    this.mem = new StagedBytes(regions * this.regionBytes, takeBytes);
    this.free = 2 ** regions - 1;
  }

  /** Regions not claimed. */
  get available(): number {
    let n = 0;
    for (let f = this.free; f !== 0; f &= f - 1) n++;
    return n;
  }

  /** A free region's index (claimed), or -1. */
  claim(): number {
    const f = this.free;
    if (f === 0) return -1;
    const i = 31 - Math.clz32(f & -f);
    this.free = f & ~(1 << i);
    return i;
  }

  release(region: number): void {
    if (region >= 0 && region < this.regions) this.free |= 1 << region;
  }
}

/**
 * The bounded egress queue of one client: whole records (the binding's header and one frame),
 * each contiguous in a ring of `capacity` bytes (a record that does not fit before the end goes
 * to the front, the tail end left as a gap, as the hub's never-shed ring does), at most
 * `maxRecords` of them. A record is accepted whole or not at all. The transport takes bytes
 * from the front in any amounts (`take`): they are copied, one native copy per record, into a
 * staging area after the ring, and `out` is then exactly those bytes (hub/bytes.ts); a record
 * may be partly handed over. The ratio counts the bytes not yet handed.
 *
 * ESTOP write-ahead (§10.4, §11.2): the framed ESTOPs wait in EstopAhead slots between the ring
 * and the staging area, outside the capacity. The next byte the transport takes after one is
 * written is the ESTOP's first byte, unless a record is partly handed over: that record is
 * finished first, so the receiver's framing stays in step. ESTOPs go in the order written.
 */
export class EgressQueue {
  readonly capacity: number;
  readonly maxRecords: number;
  /**
   * [ring | ESTOP slots | staging area], the ring at `base` (0 unless the queue has a region of a
   * TakePool, whose other regions lie between its own and the staging area): `mem.out` is what
   * the last take handed over.
   */
  readonly mem: StagedBytes;
  readonly base: number;
  readonly ahead: EstopAhead;
  // What is known of each record, by slot, and per channel, in views of one buffer made once
  // (EgressQueue.metaBytes; its owner's, or the queue's own): each record's length and kind, as
  // length × 8 + kind (16 bits while the capacity is under 2^13); its stamp, which for a VALUE
  // record is its channel and for any other when it was queued, whole ms modulo 2^32 (ages are
  // taken modulo 2^32 too; only a SAMPLE record's age is read); and per channel, the slot of its
  // newest VALUE plus one (0: none), so that a newer one supersedes it in O(1): a byte each while
  // the slots number at most 254.
  private readonly recs: Uint16Array | Uint32Array;
  private readonly stamps: Uint32Array;
  private readonly latest: Uint8Array | Uint16Array;
  private first = 0; // slot of the head record
  /** Records held, the one partly handed over included. */
  count = 0;
  /** Records and ESTOP frames held (a field: read on every send, which goes straight to the transport at 0). */
  held = 0;
  private head = 0; // byte offset of the head record
  private tail = 0; // where the next record goes
  private used = 0; // bytes of records held, gaps not counted
  private headDone = 0;
  private aDone = 0;
  /** @internal Protocol frames (CONTROL and DATA records, ESTOPs) whose first byte a take handed over, or its owner wrote straight to the transport ahead of everything (an ESTOP). */
  framesTaken = 0;
  /**
   * The owner's count of every frame it started (TcpLink: its AckCounter), when it also hands
   * frames straight to the transport, past the queue: those are the frames it counts and no take
   * did, each a record handed over and a frame started. (The send path then counts nothing
   * here.) Null for a queue alone (the prototype's, no own property).
   */
  declare readonly starts: FrameStarts | null;
  // The queue's other numbers, num[no + Q_*] (QUEUE_NUMBERS of them, its owner's or its own):
  // the gap's start, the counters, the expiry and the TakePool region (-1: memory of its own).
  private readonly num: Float64Array;
  private readonly no: number;
  private readonly pool: TakePool | null;

  /** The records a queue of `capacity` bytes holds unless told otherwise. */
  static defaultRecords(capacity: number): number {
    return Math.max(16, capacity >>> 4);
  }

  /** Records handed over completely (ESTOPs not counted), those handed straight to the transport included. */
  get recordsOut(): number {
    const s = this.starts;
    return (this.num[this.no + Q_RECORDS_OUT] as number) + (s !== null ? s.started - this.framesTaken : 0);
  }

  /** Protocol frames (CONTROL and DATA records, ESTOPs) whose first byte has been handed over, straight to the transport or from the queue. */
  get framesStarted(): number {
    const s = this.starts;
    return s !== null ? s.started : this.framesTaken;
  }

  /** ESTOP frames handed over completely. */
  get aheadOut(): number {
    return this.num[this.no + Q_AHEAD_OUT] as number;
  }

  /** SAMPLE records dropped unsent for waiting longer than the budget. */
  get expired(): number {
    return this.num[this.no + Q_EXPIRED] as number;
  }

  /** SUPERSEDED records dropped unsent: a newer value of the channel was queued. */
  get conflated(): number {
    return this.num[this.no + Q_CONFLATED] as number;
  }

  /** The bytes of what a queue knows of its records (a multiple of 4; see `QueueStore`). */
  static metaBytes(capacity: number, maxRecords: number): number {
    const recBytes = capacity <= REC_LENGTH_16 ? 2 : 4;
    const latestBytes = maxRecords < 0xff ? 1 : 2;
    const n = maxRecords * (4 + recBytes) + CHANNELS * latestBytes;
    return (n + 3) & ~3;
  }

  /**
   * `takeBytes`: the most one take hands over (the staging area); by default everything the queue
   * can hold, ESTOPs included. `store`: where it keeps what it knows of its records and its
   * numbers when its owner keeps them with other things (on XS every buffer and every view costs
   * heap slots); else in memory of its own. `starts`: the owner's count of the frames it started,
   * when it hands some straight to the transport (see `starts`).
   */
  constructor(capacity: number, maxRecords: number = EgressQueue.defaultRecords(capacity), takeBytes?: number, pool?: TakePool, store?: QueueStore, starts?: FrameStarts) {
    if (!Number.isInteger(capacity) || capacity < 1 || capacity > REC_LENGTH_32) throw new RangeError(`EgressQueue capacity must be an integer in 1..${REC_LENGTH_32}`);
    if (!Number.isInteger(maxRecords) || maxRecords < 1) throw new RangeError('EgressQueue maxRecords must be an integer ≥ 1');
    if (maxRecords > 0x7fff) throw new RangeError('EgressQueue maxRecords must be ≤ 32767');
    const aheadBytes = AHEAD_SLOTS * AHEAD_SLOT_BYTES;
    const take = takeBytes ?? capacity + aheadBytes;
    if (!Number.isInteger(take) || take < AHEAD_SLOT_BYTES) throw new RangeError(`EgressQueue takeBytes must be an integer ≥ ${AHEAD_SLOT_BYTES}`);
    this.capacity = capacity;
    this.maxRecords = maxRecords;
    // A pool's region when it fits (same capacity, a staging area as large as this queue's take) and one is free.
    const region = pool !== undefined && pool.capacity === capacity && pool.mem.stageBytes === take ? pool.claim() : -1;
    this.pool = region >= 0 ? (pool as TakePool) : null;
    this.mem = region >= 0 ? (pool as TakePool).mem : new StagedBytes(capacity + aheadBytes, take);
    this.base = region >= 0 ? region * (pool as TakePool).regionBytes : 0;
    this.ahead = new EstopAhead(AHEAD_SLOT_BYTES, AHEAD_SLOTS, this.mem.all, this.base + capacity);
    // A record is at most `capacity` bytes: 16 bits hold its length and kind up to 8191 bytes.
    const metaBytes = EgressQueue.metaBytes(capacity, maxRecords);
    if (store !== undefined && !(store.metaAt % 4 === 0 && store.metaAt >= 0 && store.metaAt + metaBytes <= store.buffer.byteLength)) throw new RangeError('EgressQueue: its meta lies outside the buffer');
    if (store !== undefined && !(store.numbersAt >= 0 && store.numbersAt + QUEUE_NUMBERS <= store.numbers.length)) throw new RangeError('EgressQueue: its numbers lie outside the store');
    // Its own: the numbers first, then the meta.
    const m = store !== undefined ? store.buffer : new ArrayBuffer(QUEUE_NUMBERS * 8 + metaBytes);
    this.num = store !== undefined ? store.numbers : new Float64Array(m, 0, QUEUE_NUMBERS);
    this.no = store !== undefined ? store.numbersAt : 0;
    const n = this.num;
    const o = this.no;
    n[o + Q_GAP_AT] = -1;
    n[o + Q_AHEAD_OUT] = n[o + Q_EXPIRED] = n[o + Q_CONFLATED] = n[o + Q_EXPIRE_AT] = n[o + Q_RELEASED] = n[o + Q_RECORDS_OUT] = 0;
    n[o + Q_BUDGET] = Infinity;
    n[o + Q_REGION] = region;
    let at = store !== undefined ? store.metaAt : QUEUE_NUMBERS * 8;
    // [stamps (4 per slot) | length and kind (2 or 4 per slot) | newest VALUE per channel (1 or 2 each)]: each view aligned.
    this.stamps = new Uint32Array(m, at, maxRecords);
    at += maxRecords * 4;
    this.recs = capacity <= REC_LENGTH_16 ? new Uint16Array(m, at, maxRecords) : new Uint32Array(m, at, maxRecords);
    at += maxRecords * (capacity <= REC_LENGTH_16 ? 2 : 4);
    this.latest = maxRecords < 0xff ? new Uint8Array(m, at, CHANNELS) : new Uint16Array(m, at, CHANNELS);
    if (starts !== undefined) ownValue(this, 'starts', starts);
  }

  /** Bytes queued and not yet handed over. */
  get bytes(): number {
    return this.used;
  }

  /** Records held, the one partly handed over included. */
  get records(): number {
    return this.count;
  }

  /** ESTOP frames waiting ahead (the one partly handed over included). */
  get aheadWaiting(): number {
    return this.ahead.count;
  }

  /** ESTOP frames dropped for newer ones while every slot was full. */
  get aheadReplaced(): number {
    return this.ahead.dropped;
  }

  /** The §10.3 watermark: bytes queued ÷ capacity. */
  ratio(): number {
    return this.used / this.capacity;
  }

  /** Everything the transport still has to take, the ESTOPs included. */
  pendingBytes(): number {
    return this.used + this.ahead.bytes() - this.aDone;
  }

  /** True while a record or an ESTOP is partly handed over. */
  inFlight(): boolean {
    return this.headDone > 0 || this.aDone > 0;
  }

  /** Whether a record of `total` bytes (header included) would be accepted now. */
  fits(total: number): boolean {
    return total >= 1 && this.count < this.maxRecords && this.placeFor(total) >= 0;
  }

  /**
   * Appends header[0, hlen) + frame (its first `flen` bytes) as one record, queued at `now` (whole
   * ms: what `expire` ages SAMPLE records from); false (nothing changes) when it does not fit. A
   * VALUE record names its `channel` (1..255): the channel's previous VALUE, still queued and not
   * started, becomes SUPERSEDED. The frame is copied with one native copy when it is exactly
   * `flen` long (the core hands exact frames).
   */
  push(header: Uint8Array, hlen: number, frame: Uint8Array, flen: number, kind: number, now = 0, channel = 0): boolean {
    const total = hlen + flen;
    if (!(total >= 1) || this.count >= this.maxRecords || this.num[this.no + Q_RELEASED] !== 0) return false;
    const place = this.placeFor(total);
    if (place < 0) return false;
    const at = this.base + place;
    let slot = this.first + this.count;
    if (slot >= this.maxRecords) slot -= this.maxRecords;
    if (kind === RecordKind.VALUE) {
      if (channel > 0 && channel < CHANNELS) {
        const prev = (this.latest[channel] as number) - 1;
        if (prev >= 0 && ((this.recs[prev] as number) & KIND_MASK) === RecordKind.VALUE && this.stamps[prev] === channel && !(prev === this.first && this.headDone > 0)) {
          let offset = prev - this.first;
          if (offset < 0) offset += this.maxRecords;
          // The kind's 3 bits: VALUE (4) becomes SUPERSEDED (5).
          if (offset < this.count) this.recs[prev] = (this.recs[prev] as number) + (RecordKind.SUPERSEDED - RecordKind.VALUE);
        }
        this.latest[channel] = slot + 1;
      }
      this.stamps[slot] = channel;
    } else this.stamps[slot] = now >>> 0;
    const all = this.mem.all;
    for (let k = 0; k < hlen; k++) all[at + k] = header[k] as number;
    if (flen > 0) all.set(flen === frame.length ? frame : frame.subarray(0, flen), at + hlen);
    this.recs[slot] = total * KINDS + kind;
    if (this.count === 0) this.head = place;
    else if (place === 0) this.num[this.no + Q_GAP_AT] = this.tail;
    this.count++;
    this.held++;
    this.tail = place + total;
    this.used += total;
    return true;
  }

  /** Puts header[0, hlen) + the ESTOP frame ahead of every queued record (see the class comment). */
  writeAhead(header: Uint8Array, hlen: number, frame: Uint8Array, flen: number = frame.length): void {
    if (this.num[this.no + Q_RELEASED] !== 0) return;
    this.ahead.write(header, hlen, flen === frame.length ? frame : frame.subarray(0, flen));
    this.held = this.count + this.ahead.count;
  }

  /**
   * Hands the transport up to `max` bytes, in order, as `mem.out` (exactly them, until the next
   * take) and returns how many. `frameStarts` is how many more frames the ack window allows: each
   * frame started uses one, and a DATA record is not started once none is left.
   */
  take(max: number, frameStarts: number): number {
    if (this.num[this.no + Q_RELEASED] !== 0) return 0;
    const mem = this.mem;
    mem.unstage();
    const all = mem.all;
    const out = mem.capacity;
    const room = max < mem.stageBytes ? max : mem.stageBytes;
    let p = 0;
    let allowance = frameStarts;
    const a = this.ahead;
    const num = this.num;
    const no = this.no;
    while (p < room) {
      // ESTOPs first, unless a record is partly handed over (it finishes first).
      if (this.aDone > 0 || (this.headDone === 0 && a.count > 0)) {
        const len = a.frontLength() - this.aDone;
        const k = len < room - p ? len : room - p;
        const from = a.frontOffset() + this.aDone;
        all.copyWithin(out + p, from, from + k);
        if (this.aDone === 0) {
          this.framesTaken++;
          a.started = true;
        }
        this.aDone += k;
        p += k;
        if (this.aDone === a.frontLength()) {
          this.aDone = 0;
          a.shift();
          this.held--;
          this.num[this.no + Q_AHEAD_OUT] = (this.num[this.no + Q_AHEAD_OUT] as number) + 1;
        }
        continue;
      }
      // A sample is dropped stale only when it would go now: behind a shut ack window the queue
      // fills, and shows a client that stopped reading by its watermark (§13.2, §10.4).
      if (this.headDone === 0 && num[no + Q_BUDGET] !== Infinity && allowance > 0) this.expire(num[no + Q_EXPIRE_AT] as number, num[no + Q_BUDGET] as number);
      if (this.count === 0) break;
      const rec = this.recs[this.first] as number;
      const kind = rec & KIND_MASK;
      if (this.headDone === 0 && held(kind) && !(allowance > 0)) break;
      const len = (rec >>> KIND_BITS) - this.headDone;
      const k = len < room - p ? len : room - p;
      const from = this.base + this.head + this.headDone;
      all.copyWithin(out + p, from, from + k);
      if (this.headDone === 0 && kind !== RecordKind.RAW) {
        this.framesTaken++;
        allowance--;
      }
      this.headDone += k;
      this.used -= k;
      p += k;
      if (this.headDone === rec >>> KIND_BITS) this.shiftHead(true);
    }
    // Nothing to hand over: the staging area stays whole (a resizable buffer is shrunk only
    // while its view is handed on, hub/bytes.ts).
    if (p === 0) return 0;
    return mem.seal(p).length;
  }

  /**
   * Copies up to `max` bytes, in order, into dst[at, …); returns how many (`take`, then one
   * native copy out of the staging area).
   */
  copyOut(dst: Uint8Array, at: number, max: number, frameStarts: number): number {
    const n = this.take(max, frameStarts);
    if (n > 0) {
      dst.set(this.mem.out, at);
      this.mem.unstage();
    }
    return n;
  }

  /**
   * For message transports (one record per message): the length of what a take would hand over
   * as the next whole record, 0 if none may go. Call only when nothing is in flight.
   */
  nextRecordLength(frameStarts: number): number {
    const a = this.ahead;
    if (a.count > 0) return a.frontLength() - this.aDone;
    const num = this.num;
    const no = this.no;
    if (this.headDone === 0 && num[no + Q_BUDGET] !== Infinity && frameStarts > 0) this.expire(num[no + Q_EXPIRE_AT] as number, num[no + Q_BUDGET] as number);
    if (this.count === 0) return 0;
    const rec = this.recs[this.first] as number;
    if (this.headDone === 0 && held(rec & KIND_MASK) && !(frameStarts > 0)) return 0;
    return (rec >>> KIND_BITS) - this.headDone;
  }

  /**
   * From now on, takes drop each SAMPLE record they reach at the front, when the ack window
   * would let it go, that was queued more than `budgetMs` before `now` (Infinity: never), so that
   * stale samples behind a record that must go are dropped too once it has gone.
   */
  setExpiry(now: number, budgetMs: number): void {
    this.num[this.no + Q_EXPIRE_AT] = now;
    this.num[this.no + Q_BUDGET] = budgetMs;
  }

  /**
   * Drops the records at the front, not yet started, that need not go: SAMPLE records queued
   * more than `budgetMs` before `now`, and SUPERSEDED ones; stops at the first record that must
   * go. Returns how many SAMPLE records it dropped stale (`expired`; `conflated` counts the rest).
   */
  expire(now: number, budgetMs: number): number {
    let dropped = 0;
    while (this.count > 0 && this.headDone === 0) {
      const rec = this.recs[this.first] as number;
      const kind = rec & KIND_MASK;
      if (kind === RecordKind.SUPERSEDED) this.num[this.no + Q_CONFLATED] = (this.num[this.no + Q_CONFLATED] as number) + 1;
      else if (kind === RecordKind.SAMPLE && ((now >>> 0) - (this.stamps[this.first] as number)) >>> 0 > budgetMs) dropped++;
      else break;
      this.used -= rec >>> KIND_BITS;
      this.shiftHead(false);
    }
    this.num[this.no + Q_EXPIRED] = (this.num[this.no + Q_EXPIRED] as number) + dropped;
    return dropped;
  }

  /** One ESTOP frame handed over whole by its owner, straight to the transport (counted in aheadOut). */
  aheadDone(): void {
    this.num[this.no + Q_AHEAD_OUT] = (this.num[this.no + Q_AHEAD_OUT] as number) + 1;
  }

  /** Drops everything, the ESTOPs included (the transport is gone). Counters are kept. */
  clear(): void {
    this.first = 0;
    this.count = 0;
    this.head = 0;
    this.tail = 0;
    this.used = 0;
    this.num[this.no + Q_GAP_AT] = -1;
    this.headDone = 0;
    this.aDone = 0;
    this.ahead.clear();
    this.held = 0;
    this.mem.unstage();
  }

  /**
   * The queue's own memory, for a use before anything is queued (the WebSocket upgrade is read
   * there): everything when it has memory of its own, else its region of the pool.
   */
  ownBytes(): Uint8Array {
    return this.pool === null ? this.mem.all : this.mem.all.subarray(this.base, this.base + this.capacity + AHEAD_SLOTS * AHEAD_SLOT_BYTES);
  }

  /**
   * Clears the queue and gives its TakePool region back, for good: it takes nothing more (the
   * transport is gone). Nothing to give back for a queue with memory of its own.
   */
  release(): void {
    this.clear();
    const n = this.num;
    const o = this.no;
    if (n[o + Q_RELEASED] !== 0) return;
    n[o + Q_RELEASED] = 1;
    if (this.pool !== null) this.pool.release(n[o + Q_REGION] as number);
  }

  // The head record is gone: handed over whole (`out`), or dropped unsent.
  private shiftHead(out: boolean): void {
    const len = (this.recs[this.first] as number) >>> KIND_BITS;
    this.headDone = 0;
    this.first = this.first + 1 === this.maxRecords ? 0 : this.first + 1;
    this.count--;
    this.held--;
    if (out) this.num[this.no + Q_RECORDS_OUT] = (this.num[this.no + Q_RECORDS_OUT] as number) + 1;
    if (this.count === 0) {
      this.head = 0;
      this.tail = 0;
      this.num[this.no + Q_GAP_AT] = -1;
    } else if (this.head + len === this.num[this.no + Q_GAP_AT]) {
      this.head = 0;
      this.num[this.no + Q_GAP_AT] = -1;
    } else this.head += len;
  }

  // Where a record of `length` bytes would start, or -1 (hub/queues.ts FrameRing's rule).
  private placeFor(length: number): number {
    const capacity = this.capacity;
    if (this.count === 0) return length <= capacity ? 0 : -1;
    if (this.head < this.tail) {
      if (length <= capacity - this.tail) return this.tail;
      return length <= this.head ? 0 : -1;
    }
    return length <= this.head - this.tail ? this.tail : -1;
  }
}

// ---------------------------------------------------------------------------------------------
// The link.

/** How a link delimits frames on its transport. */
// The framings as plain numbers, for the send path, and a final binary WebSocket frame's first byte.
const LENGTH_PREFIX = 0;
const WS_SERVER = 1;
const WS_FINAL_BINARY = 0x80 | WsOpcode.BINARY;

export const LinkFraming = Object.freeze({
  /** TCP: a 2-byte big-endian length before every frame. */
  LENGTH_PREFIX,
  /** WebSocket spoken by the hub itself over a TCP stream (the device): upgrade, then RFC 6455 frames. */
  WS_SERVER,
  /** A message transport that delimits frames itself (the `ws` package on the host): one record per message. */
  MESSAGE: 2,
} as const);
export type LinkFramingCode = (typeof LinkFraming)[keyof typeof LinkFraming];

/** Default queue capacity where the adapter does not choose one. */
export const DEFAULT_QUEUE_BYTES = 16384;
/**
 * The smallest capacity a link accepts: the largest hub frame plus the largest header. A queue
 * that could never hold some frame would stall the never-shed path on it and park a healthy
 * session.
 */
export const MIN_QUEUE_BYTES = MAX_HUB_FRAME_BYTES + WS_MAX_HEADER_BYTES;
/**
 * Frames a client that acknowledges may have outstanding beyond its last ACK before DATA waits
 * in the queue. Twice the detector's ack-lag threshold (ACK_LAG_CONGESTED_FRAMES, 64) and four
 * times the ACK interval of §13.2 (32 frames): a healthy client never reaches it, and a client
 * that stops reading is held to about half a second of 200 Hz samples in transit before its
 * backlog builds in the queue, where the watermark sees it.
 */
export const DEFAULT_ACK_WINDOW_FRAMES = 128;
/**
 * §13.2: a client acknowledges after every 32 frames, at once, or on a 1 s timer. An ACK that
 * covers at least this many new frames was sent at once: only such an ACK feeds the least RTT
 * the sample budget is taken from (docs/protocol.md §13.6).
 */
export { PROMPT_ACK_FRAMES } from '../link.js';
/** WebSocket status for a connection closed for persistent misbehaviour (RFC 6455 §7.4.1). */
export const WS_POLICY_VIOLATION = 1008;

/** Link states. */
export const LinkState = Object.freeze({
  /** WebSocket upgrade in progress (WS_SERVER only): not attached to the hub yet. */
  HANDSHAKE: 0,
  OPEN: 1,
  /** The link gave up the transport (hub close, fatal framing error); the adapter is closing it. */
  CLOSING: 2,
  CLOSED: 3,
} as const);

/**
 * A transport that can take bytes at once (`room`, `write`): the link then hands a frame straight
 * to it when nothing is queued ahead of it, the ack window allows and the socket has room, with
 * no copy into the queue and none out of it (docs/architecture.md "Copies"). The device and Node
 * adapters are; the simulator's modelled socket pulls everything through the queue.
 */
export interface DirectTransport extends LinkTransport {
  /**
   * Bytes the socket takes right now, within its adapter's limit: a field the adapter keeps
   * current (bindings/tcp/socket-port.ts), read for every frame the link hands straight over.
   */
  readonly room: number;
  /**
   * Takes one frame at once, after its framing header (null: none, a message transport sends
   * the frame as one message); together at most `room`. The stack copies them before
   * returning.
   */
  writeFrame(header: Uint8Array | null, frame: Uint8Array): void;
}

/** The socket side of a link, implemented by each adapter. */
export interface LinkTransport {
  /** There are bytes to send: pull them now or when the socket can take them. */
  kick(): void;
  /**
   * The link gives up the transport: hand over what it will still yield if the socket takes
   * it now, then close; close at once if it cannot. `wsCode` is the WebSocket status for a
   * message transport. The adapter reports the socket's end with `transportClosed()`.
   */
  close(wsCode: number): void;
}

export interface TcpLinkOptions {
  readonly hub: HubAttach;
  /** The most one take hands the transport (default: everything the queue holds); the device adapter takes its socket's limit. */
  readonly takeBytes?: number;
  readonly clock: Clock;
  readonly framing: LinkFramingCode;
  /** The Link.binding name: 'tcp' or 'ws'. */
  readonly binding: string;
  /**
   * The largest frame the hub this link serves writes (HubConfig.maxFrameBytes; default
   * MAX_HUB_FRAME_BYTES): the queue must hold one with its header.
   */
  readonly maxHubFrameBytes?: number;
  /** Egress queue capacity in bytes (≥ the largest hub frame and its header: MIN_QUEUE_BYTES by default). */
  readonly queueBytes?: number;
  readonly maxRecords?: number;
  /**
   * Where the egress queue's memory comes from when it has room (TakePool: one staging area for
   * every connection of the pool); without one, or with no region free, the link makes its own.
   */
  readonly takePool?: TakePool;
  /** Largest inbound frame; a larger one is answered NACK TOO_LARGE and discarded. */
  readonly maxFrameBytes?: number;
  readonly ackWindowFrames?: number;
  readonly detector?: WatermarkOptions;
  /** SHA-1 for the WebSocket upgrade (WS_SERVER only). */
  readonly sha1?: Sha1;
  readonly log?: Log;
  /**
   * The highest tier a session may have over this connection (Link.tierCeiling, docs/security.md):
   * what the network it arrives through protects. Default maintainer: a network the host trusts
   * (a WPA2 access point, the simulator's loopback); observer on an open Wi-Fi network.
   */
  readonly tierCeiling?: number;
}

const NO_LIMIT = 0x7fffffff;

/**
 * A link's capabilities: the one a TakePool's links share for this binding name and mtu (a few
 * kinds at most: a link's own would cost heap slots per connection), else its own.
 */
function capsOf(binding: string, mtu: number, pool: TakePool | undefined): LinkCaps {
  if (pool !== undefined) for (const c of pool.caps) if (c.binding === binding && c.mtu === mtu) return c;
  const caps: LinkCaps = Object.freeze({ binding, broadcast: false, datagram: false, mtu, writeAheadSlots: AHEAD_SLOTS, ackForm: AckForm.STREAM });
  if (pool !== undefined && pool.caps.length < 8) pool.caps.push(caps);
  return caps;
}

// A link's own numbers, num[lo + L_*]: frames the framing refused, the last refusal's code, the
// tier ceiling, whether the loss was reported (1), the drop counts last judged, the ack lag heeded,
// the ack window, and the refusal times' ring (its head and count; the times just before `lo`).
const L_REFUSED = 0;
const L_LAST_REFUSAL = 1;
const L_CEILING = 2;
const L_LOSS_REPORTED = 3;
const L_EXPIRED_SEEN = 4;
const L_DROPPED_SEEN = 5;
const L_LAG_HEEDED = 6;
const L_WINDOW = 7;
const L_REFUSAL_HEAD = 8;
const L_REFUSALS = 9;
const LINK_NUMBERS = 10;
/** Refusals remembered: one more than MALFORMED_CLOSE_PER_S, so that one too many shows. */
const REFUSALS = MALFORMED_CLOSE_PER_S + 1;
const MS_PER_S = 1000;


/** The transport as a DirectTransport, when it is one. */
function directOf(transport: LinkTransport): DirectTransport | null {
  const d = transport as Partial<DirectTransport>;
  return typeof d.room === 'number' && typeof d.writeFrame === 'function' ? (transport as DirectTransport) : null;
}

/** The NACK frame the binding answers a refused frame with, encoded once for every link (only read). */
function nackFrame(code: number): Uint8Array {
  const w = new CborWriter(new Uint8Array(16));
  encodeFrame({ type: FrameType.NACK, code }, w);
  return w.buf.slice(0, w.pos);
}
const NACK_TOO_LARGE = nackFrame(Nack.TOO_LARGE);
const NACK_MALFORMED = nackFrame(Nack.MALFORMED);

/**
 * One TCP or WebSocket connection as the core sees it. Outbound: `send` queues whole frames
 * with the binding's header, as the core tagged them (hub/ports.ts Tag); `writeAhead` puts
 * ESTOP ahead of them; the adapter takes bytes (`take`, or `pull` into a buffer of its own) or
 * whole messages (`nextMessageLength` + `pull`) when its socket can take them. Inbound: the
 * adapter feeds bytes (`input`) or messages (`message`); whole frames go to the hub's sink. The
 * level is the §10.3 WatermarkDetector's, fed with the queue ratio when frames join the queue
 * and as the socket finds it at every take (§13.5.1), and judged once per instant. The client's
 * ACK, which the core decodes and hands on (`acked`), gives the detector its ack lag (frames
 * handed to the socket and not yet acknowledged), opens the ack window, and times the RTT (a
 * frame's hand-over to the ACK that covers it).
 *
 * Frames the framing refuses (too large; a WebSocket text message) are answered NACK
 * TOO_LARGE / MALFORMED here and discarded, the stream kept in step (§2); more than
 * MALFORMED_CLOSE_PER_S of them within a second closes the transport (§12.5).
 */
export class TcpLink implements BindingLink, FrameConsumer, WsConsumer {
  readonly caps: LinkCaps;
  readonly queue: EgressQueue;
  readonly detector: WatermarkDetector;
  readonly throughput: ThroughputEstimator;
  readonly rtt: RttEstimator;
  /** The least RTT lately: half of it is the sample budget (docs/protocol.md §13.6). */
  readonly minRtt: MinRttFilter;
  /** When the transport last took bytes, or a backlog began (bindings/link.ts DrainClock, kept here). */
  movedAt: number;
  readonly framing: LinkFramingCode;
  /** Frames handed to the socket and what the client's ACKs cover (bindings/link.ts). */
  readonly acks: AckCounter;
  private readonly clock: Clock;
  private readonly hub: HubAttach;
  private declare readonly log: Log;
  private transport: LinkTransport | null = null;
  // The transport when it takes frames at once (DirectTransport), while the link is open; else null.
  private direct: DirectTransport | null = null;
  // Frames started below this fit the ack window, and from this on the ack lag is told to the
  // detector: the client's last ACK plus the window or the lag heeded (Infinity: no ACK yet).
  private windowEnd = Infinity;
  private lagFrom = Infinity;
  private sink: LinkSink | null = null;
  private st: number;
  private lvl = 0;
  private judgedAt = -Infinity;
  // The detector's judgements as of the link's last judgement, when its level then stood with no
  // deadline ahead (quietUntil Infinity: only a judgement moves that), else −1 − that count (NaN:
  // never judged). While the detector's count equals it, the level stands: one comparison a read.
  private judgementsSeen = NaN;
  // The inbound framing's parser: a FrameReassembler (LENGTH_PREFIX) or a WsFrameParser (WS_SERVER).
  private readonly parser: FrameReassembler | WsFrameParser | null;
  // Until the upgrade is answered (WS_SERVER only).
  // (A TCP link has none: the prototype's null, and the prototype's NULL_LOG for a link given no
  // log; an own property only otherwise, since on XS every property costs a heap slot.)
  private declare handshake: WsHandshake | null;
  // The link's numbers, one array over its buffer: the refusals' times from 0, then from `lo` its
  // own (L_*), the queue's, the least RTT's and the smoothed RTT's (the ACK timing ring follows
  // them in the buffer, as whole ms: AckCounter).
  private readonly num: Float64Array;
  private readonly lo: number;
  // A frame's header, as long as the longest one of the framing (a WebSocket header's 4 bytes, a
  // length prefix's 2), and its first 2 bytes exactly: what a frame handed straight to the socket
  // is preceded by (the same view where headers are 2 bytes long, else one made once).
  private readonly hdr: Uint8Array;
  private readonly hdr2: Uint8Array;
  // What estimate() fills in: the one its TakePool's links share, else its own.
  private readonly est: LinkEstimate;

  constructor(options: TcpLinkOptions) {
    const queueBytes = options.queueBytes ?? DEFAULT_QUEUE_BYTES;
    const least = (options.maxHubFrameBytes ?? MAX_HUB_FRAME_BYTES) + WS_MAX_HEADER_BYTES;
    if (!(queueBytes >= least)) throw new RangeError(`TcpLink: queueBytes must be ≥ ${least} (the largest hub frame and its header)`);
    const maxFrame = options.maxFrameBytes ?? MAX_FRAME_BYTES;
    const windowFrames = options.ackWindowFrames ?? DEFAULT_ACK_WINDOW_FRAMES;
    if (!Number.isInteger(windowFrames) || windowFrames < 1) throw new RangeError('TcpLink: ackWindowFrames must be an integer ≥ 1');
    if (options.framing === LinkFraming.WS_SERVER && !options.sha1) throw new RangeError('TcpLink: WS_SERVER framing needs sha1');
    const now = options.clock.now();
    this.caps = capsOf(options.binding, maxFrame, options.takePool);
    this.est = options.takePool !== undefined ? options.takePool.estimate : { throughputBps: 0, rttMs: 0 };
    this.framing = options.framing;
    this.clock = options.clock;
    this.hub = options.hub;
    if (options.log !== undefined) ownValue(this, 'log', options.log);
    // One buffer for the link's numbers and bytes (on XS every buffer and view costs heap slots):
    // [its numbers (see `num`) | the ACK ring | the queue's meta | the frame header | the inbound parser's bytes].
    const lo = REFUSALS;
    const numbers = lo + LINK_NUMBERS + QUEUE_NUMBERS + WINDOWED_NUMBERS + RTT_NUMBERS;
    const ringAt = numbers * 8;
    const ring = AckCounter.ringOf(windowFrames);
    const records = options.maxRecords ?? EgressQueue.defaultRecords(queueBytes);
    const metaAt = ringAt + ring * 4;
    const hdrAt = metaAt + EgressQueue.metaBytes(queueBytes, records);
    const ws = options.framing === LinkFraming.WS_SERVER;
    const hdrBytes = ws ? WS_MAX_HEADER_BYTES : LENGTH_PREFIX_BYTES;
    const parserAt = hdrAt + hdrBytes;
    const parserBytes = ws ? wsParserBytes(maxFrame) : options.framing === LinkFraming.LENGTH_PREFIX ? maxFrame : 0;
    const mem = new ArrayBuffer(parserAt + parserBytes);
    const num = new Float64Array(mem, 0, numbers);
    this.num = num;
    this.lo = lo;
    num[lo + L_CEILING] = options.tierCeiling ?? Tier.maintainer;
    num[lo + L_WINDOW] = windowFrames;
    // The ack lag from which the detector reads it (bindings/detector.ts): below, it says nothing.
    num[lo + L_LAG_HEEDED] = Math.min(options.detector?.ackLagRecoveredFrames ?? ACK_LAG_RECOVERED_FRAMES, options.detector?.ackLagCongestedFrames ?? ACK_LAG_CONGESTED_FRAMES);
    const qo = lo + LINK_NUMBERS;
    // Every frame the link starts counts there, the queue's included; its hand-over times in whole
    // ms, the device clock's resolution (a clock that reads finer gives the counter a ring of its own).
    this.acks = new AckCounter(windowFrames, new Uint32Array(mem, ringAt, ring));
    this.queue = new EgressQueue(queueBytes, records, options.takeBytes, options.takePool, { buffer: mem, metaAt, numbers: num, numbersAt: qo }, this.acks);
    this.minRtt = new MinRttFilter(MIN_RTT_WINDOW_MS, num, qo + QUEUE_NUMBERS);
    this.rtt = new RttEstimator(num, qo + QUEUE_NUMBERS + WINDOWED_NUMBERS);
    this.detector = new WatermarkDetector(now, options.detector);
    this.throughput = new ThroughputEstimator(now);
    this.movedAt = now;
    this.hdr = new Uint8Array(mem, hdrAt, hdrBytes);
    this.hdr2 = hdrBytes === 2 ? this.hdr : this.hdr.subarray(0, 2);
    this.parser = ws ? new WsFrameParser(maxFrame, mem, parserAt) : parserBytes > 0 ? new FrameReassembler(maxFrame, new Uint8Array(mem, parserAt, maxFrame)) : null;
    // The upgrade request is read into the egress ring: nothing is queued before it is answered.
    const room = this.queue.ownBytes();
    if (ws) ownValue(this, 'handshake', new WsHandshake(room.length >= MAX_HANDSHAKE_BYTES ? room : undefined, options.sha1));
    this.st = options.framing === LinkFraming.WS_SERVER ? LinkState.HANDSHAKE : LinkState.OPEN;
  }

  /** The adapter's socket is ready: the link attaches to the hub (after the upgrade, for WS_SERVER). */
  start(transport: LinkTransport): void {
    this.transport = transport;
    if (this.st === LinkState.OPEN) {
      this.direct = directOf(transport);
      this.sink = this.hub.attach(this);
    }
  }

  get binding(): string {
    return this.caps.binding;
  }

  /** Frames a client that acknowledges may have outstanding beyond its last ACK before DATA waits. */
  get ackWindowFrames(): number {
    return this.num[this.lo + L_WINDOW] as number;
  }

  /** Frames refused by the framing (oversize, text). */
  get refused(): number {
    return this.num[this.lo + L_REFUSED] as number;
  }

  /** The last refusal's code (FramingErrorCode), 0 before any. */
  get lastRefusal(): number {
    return this.num[this.lo + L_LAST_REFUSAL] as number;
  }

  get mtu(): number {
    return this.caps.mtu;
  }

  get state(): number {
    return this.st;
  }

  get closed(): boolean {
    return this.st === LinkState.CLOSED;
  }

  /** Frames handed to the socket and not yet covered by the client's ACK. */
  outstanding(): number {
    return this.acks.outstanding();
  }

  /** The client has acknowledged at least once: the ack window and the ack lag apply from then on. */
  get ackSeen(): boolean {
    return this.acks.seen;
  }

  // ------------------------------------------------------------------ Link (the core's side)

  /** The §10.3 level, judged once per instant (on the hub's clock). */
  get level(): number {
    // No deadline ahead and no input since: the level stands whatever the (monotonic) clock
    // reads. (No local here: the core reads this at every delivery, and on XS a local costs.)
    if (this.detector.judgements === this.judgementsSeen) return this.lvl;
    return this.levelAt(this.clock.now());
  }

  /** `level` when the detector has a deadline ahead or input since it was last judged. */
  private levelAt(now: number): number {
    if (now !== this.judgedAt) {
      // Until the detector's next deadline, and with no input since, its level stands.
      const det = this.detector;
      const seen = this.judgementsSeen;
      if (now >= det.quietUntil || det.judgements !== (seen < 0 ? -1 - seen : seen) || now < this.judgedAt) this.judge(now);
      else this.judgedAt = now;
    }
    return this.lvl;
  }

  // The core's sequence number is not the link's concern: the implementation leaves it unnamed
  // (on XS every parameter costs at every call).
  send(frame: Uint8Array, tag: number, seq: number): boolean;
  send(frame: Uint8Array, tag: number): boolean {
    // Straight to the socket (a direct transport is set only while the link is open): nothing
    // waits ahead of it, the window allows a frame, there is room. (Few locals and few calls: on
    // XS each local costs at every call, more than reading a field through `this` a few times,
    // and this runs for every delivery.)
    if (this.direct !== null && this.queue.held === 0 && this.acks.started < this.windowEnd) {
      const now = this.clock.now();
      // The frame and its header, if the socket has room for both: a length prefix's 2 bytes, a
      // WebSocket header's 2 or 4, none for a message. (The frame's length read where needed: as
      // cheap as a local on XS; `bytes` is what the socket took.)
      let bytes;
      if (this.framing === LENGTH_PREFIX) {
        bytes = frame.length + 2;
        if (this.direct.room < bytes) return this.enqueue(frame, tag);
        this.hdr2[0] = frame.length >>> 8;
        this.hdr2[1] = frame.length & 0xff;
        this.direct.writeFrame(this.hdr2, frame);
      } else if (this.framing !== WS_SERVER) {
        bytes = frame.length;
        if (this.direct.room < bytes) return this.enqueue(frame, tag);
        this.direct.writeFrame(null, frame);
      } else if (frame.length < 126) {
        bytes = frame.length + 2;
        if (this.direct.room < bytes) return this.enqueue(frame, tag);
        this.hdr2[0] = WS_FINAL_BINARY;
        this.hdr2[1] = frame.length;
        this.direct.writeFrame(this.hdr2, frame);
      } else {
        bytes = frame.length + 4;
        if (this.direct.room < bytes) return this.enqueue(frame, tag);
        const hdr = this.hdr;
        hdr[0] = WS_FINAL_BINARY;
        hdr[1] = 126;
        hdr[2] = frame.length >>> 8;
        hdr[3] = frame.length & 0xff;
        this.direct.writeFrame(hdr, frame);
      }
      // One frame started (its time for the round trip), the queue found empty (a backlog of 0,
      // §13.5.1), the ack lag told to the detector only where it can matter (§13.5.6).
      // (AckCounter.startedOne inline: a time the Uint32 ring cannot keep widens it first.)
      if ((now >>> 0) !== now) this.acks.widen();
      (this.acks.handedAt as Float64Array)[this.acks.started & this.acks.mask] = now;
      this.acks.started++;
      // ThroughputEstimator.add, its open window inline (the link's estimator has the default window).
      if (now - this.throughput.windowStart < THROUGHPUT_WINDOW_MS && now >= this.throughput.windowStart) this.throughput.bytes += bytes;
      else this.throughput.add(bytes, now);
      this.movedAt = now;
      if (this.detector.queue !== 0) this.detector.drained(0, 0, now);
      if (this.acks.started >= this.lagFrom) this.detector.ackLag(this.acks.started - this.acks.acked, now);
      return true;
    }
    return this.enqueue(frame, tag);
  }

  /** `send` when the frame cannot go straight to the socket: it joins the queue, if the queue takes it. */
  private enqueue(frame: Uint8Array, tag: number): boolean {
    if (this.st !== LinkState.OPEN) return false;
    const q = this.queue;
    const length = frame.length;
    const now = this.clock.now();
    const h = this.writeHeader(WsOpcode.BINARY, length);
    const kind = tagType(tag) !== FrameType.DATA ? RecordKind.CONTROL : tag & Tag.SAMPLE ? RecordKind.SAMPLE : tag & Tag.VALUE ? RecordKind.VALUE : RecordKind.DATA;
    const empty = q.pendingBytes() === 0;
    if (!q.push(this.hdr, h, frame, length, kind, now, tagChannel(tag))) {
      // §13.5.5: a frame turned away reads as a full queue.
      this.detector.refused(now);
      return false;
    }
    // A backlog that starts now has waited 0 ms (stalledMs).
    if (empty) this.movedAt = now;
    this.detector.queued(q.ratio(), now);
    this.kick();
    return true;
  }

  /** Whether a frame of `length` bytes would be queued now (for tests and tools; the core just sends). */
  canSend(length: number): boolean {
    return this.st === LinkState.OPEN && this.queue.fits(this.headerLength(length) + length);
  }

  writeAhead(frame: Uint8Array): void {
    if (this.st !== LinkState.OPEN) return;
    const len = frame.length < ESTOP_FRAME_BYTES ? frame.length : ESTOP_FRAME_BYTES;
    const h = this.writeHeader(WsOpcode.BINARY, len);
    // Nothing partly handed over and nothing waiting: the socket takes it at once, if it has room.
    const d = this.direct;
    const q = this.queue;
    if (d !== null && q.held === 0 && len === frame.length && d.room >= h + len) {
      d.writeFrame(h > 0 ? (h === 2 ? this.hdr2 : this.hdr) : null, frame);
      const now = this.clock.now();
      this.acks.startedOne(now);
      q.framesTaken++;
      q.aheadDone();
      this.throughput.add(h + len, now);
      this.movedAt = now;
      return;
    }
    this.backlogStarts();
    this.queue.writeAhead(this.hdr, h, frame, len);
    this.kick();
  }

  /** The client's cumulative ACK (key 28), as the core decoded it (§5.12, §13.2). */
  acked(count: number): void {
    if (this.st !== LinkState.OPEN) return;
    const now = this.clock.now();
    const a = this.acks;
    const fresh = a.ack(count, now);
    // The ack window and the ack lag, as the send path reads them (bindings/link.ts AckCounter).
    const heeded = this.num[this.lo + L_LAG_HEEDED] as number;
    this.windowEnd = a.acked + (this.num[this.lo + L_WINDOW] as number);
    this.lagFrom = a.acked + heeded;
    if (fresh && a.rttMs >= 0) {
      this.rtt.sample(a.rttMs);
      // Only a prompt ACK times the link itself: one sent on the client's 1 s timer also holds
      // however long the client waited (§13.2), and the budget would grow with it.
      if (a.prompt) this.minRtt.sample(a.rttMs, now);
    }
    // The detector reads the lag from ACK_LAG_RECOVERED_FRAMES on: it is told when the lag is
    // there, or when it falls back below from there.
    const lag = a.started - a.acked;
    const det = this.detector;
    if (lag >= heeded || det.lagFrames >= heeded) det.ackLag(lag, now);
    // The window opened: what it held back may go now.
    if (this.queue.count > 0) this.kick();
  }

  /** A stream link carries no broadcast: the grants are the core's alone. */
  granted(_grants: GrantSet): void {}

  /** The link estimate, in an object its TakePool's links share (read it before asking another link). */
  estimate(): LinkEstimate {
    const e = this.est;
    e.throughputBps = this.throughput.bps(this.clock.now());
    e.rttMs = this.rtt.rttMs();
    return e;
  }

  /** The queue's fill; full while samples dropped stale hold the signal so (a queue full in time, §13.6). */
  occupancy(): number {
    return this.detector.staleHeld(this.clock.now()) ? 1 : this.queue.ratio();
  }

  stalledMs(): number {
    // DrainClock.stalledMs: milliseconds since the last move while a backlog holds.
    if (!(this.queue.pendingBytes() > 0)) return 0;
    const d = this.clock.now() - this.movedAt;
    return d > 0 ? d : 0;
  }

  ackLag(): number {
    return this.acks.outstanding();
  }

  /** A stream loses nothing it carries: no loss rate. */
  lossRate(): number {
    return NaN;
  }

  /** The core closes the transport (park, teardown, persistent misbehaviour). */
  /** The network's protection, fixed for the connection's life (TcpLinkOptions.tierCeiling). */
  tierCeiling(): number {
    return this.num[this.lo + L_CEILING] as number;
  }

  close(): void {
    if (this.st === LinkState.CLOSING || this.st === LinkState.CLOSED) return;
    // The core already detached this link; reporting its loss back would be noise.
    this.num[this.lo + L_LOSS_REPORTED] = 1;
    this.giveUp(WsCloseCode.NORMAL);
  }

  queuedBytes(): number {
    return this.queue.bytes;
  }

  /** The §10.3 signal as judged: the watermark the socket found at its last take, or more since (§13.5.1). */
  signal(): number {
    return this.detector.ratio();
  }

  /** Frames this link dropped unsent (stale samples, superseded STATE values): §13.6. */
  unsent(): number {
    return this.queue.expired + this.queue.conflated;
  }

  // ------------------------------------------------------------------ the adapter's side

  /** Bytes from a stream transport (LENGTH_PREFIX, WS_SERVER). */
  input(bytes: Uint8Array, start: number, end: number): void {
    try {
      if (this.st === LinkState.HANDSHAKE) {
        const hs = this.handshake as WsHandshake;
        const after = hs.push(bytes, start, end);
        if (after < 0) return;
        this.upgrade(hs);
        start = after;
      }
      if (this.st !== LinkState.OPEN) return;
      if (this.parser !== null) this.parser.push(bytes, start, end, this);
    } catch (e) {
      if (e instanceof FramingError) this.fatal(e.code);
      else throw e;
    }
  }

  /** One message from a message transport (MESSAGE); `binary` false for a WebSocket text message. */
  message(bytes: Uint8Array, start: number, end: number, binary: boolean): void {
    if (this.st !== LinkState.OPEN) return;
    if (!binary) this.refuse(FramingErrorCode.TEXT_MESSAGE, end - start);
    else if (end - start > this.caps.mtu) this.refuse(FramingErrorCode.TOO_LARGE, end - start);
    else this.frame(bytes, start, end);
  }

  /**
   * Hands the transport up to `max` bytes of what is due next: the ESTOPs written ahead, then
   * queued records, DATA only within the ack window. They are `out` (exactly them, until the next
   * take); returns how many.
   */
  take(max: number): number {
    // Nothing queued or ahead: nothing to hand over, nothing to expire, and nothing dropped
    // unjudged (a take judges every drop it makes). The device's socket asks at every
    // acknowledgement the client's stack sends (bindings/tcp/socket-port.ts).
    if (this.st === LinkState.CLOSED || this.queue.held === 0) return 0;
    // A message transport takes the record `nextMessageLength` sized: the samples were judged
    // stale then, and judging them again at a later instant could drop that very record.
    if (this.framing !== LinkFraming.MESSAGE) this.expireSamples();
    const q = this.queue;
    const before = q.framesTaken;
    const found = q.ratio();
    const n = q.take(max, this.allowance());
    if (n > 0) this.handed(n, before, found);
    this.expiryJudged(found, n);
    return n;
  }

  /** What the last take handed over, exactly, until `wrote()`. */
  get out(): Uint8Array {
    return this.queue.mem.out;
  }

  /**
   * The transport has copied `out` (after a take that returned more than 0): the staging area is
   * made whole again. A resizable buffer is shrunk only while its view is handed on, never while
   * the engine may compact its heap (hub/bytes.ts).
   */
  wrote(): void {
    this.queue.mem.unstage();
  }

  /** `take`, copied into dst[at, …) (for adapters that write from a buffer of their own). */
  pull(dst: Uint8Array, at: number, max: number): number {
    const n = this.take(max);
    if (n > 0) {
      dst.set(this.queue.mem.out, at);
      this.queue.mem.unstage();
    }
    return n;
  }

  /** Whether any record or ESTOP frame waits in the queue (sent or not, in the ack window or not). */
  get holding(): boolean {
    return this.queue.records > 0 || this.queue.aheadWaiting > 0;
  }

  /** For message transports: the length of the next whole record that may go, 0 if none. */
  nextMessageLength(): number {
    if (this.st === LinkState.CLOSED) return 0;
    // Nothing queued or ahead: nothing to expire, and nothing dropped unjudged (a take or this
    // judges every drop it makes).
    if (!this.holding) return 0;
    this.expireSamples();
    const found = this.queue.ratio();
    const n = this.queue.nextRecordLength(this.allowance());
    this.expiryJudged(found, n);
    return n;
  }

  /** Bytes the transport still has to take, window or not (the adapter's close decision). */
  pendingBytes(): number {
    return this.queue.pendingBytes();
  }

  /** The adapter's socket is gone (closed by either side, or failed). */
  transportClosed(): void {
    if (this.st === LinkState.CLOSED) return;
    this.st = LinkState.CLOSED;
    this.direct = null;
    // The queue's memory goes back to its TakePool, if it has one: the link takes nothing more.
    this.queue.release();
    // §6.6: a lost transport makes the session STALE; the core decides, the link only reports.
    this.reportLost();
  }

  // ------------------------------------------------------------------ the framing's side

  /** A whole inbound frame, from the link's own parser (or a message transport): on to the hub. */
  frame(bytes: Uint8Array, start: number, end: number): void {
    if (this.st !== LinkState.OPEN || !this.sink) return;
    this.sink.frame(bytes, start, end);
  }

  /** A WebSocket control frame from the link's own parser. */
  control(op: number, bytes: Uint8Array, start: number, end: number): void {
    if (op === WsOpcode.PING) {
      // RFC 6455 §5.5.2: a pong echoes the ping's payload; skipped if the queue is full.
      const len = end - start;
      const h = writeWsHeader(WsOpcode.PONG, len, this.hdr, 0);
      this.backlogStarts();
      if (this.queue.push(this.hdr, h, bytes.subarray(start, end), len, RecordKind.RAW)) this.kick();
    } else if (op === WsOpcode.CLOSE) {
      // The client closes: the session goes STALE (§6.6); the closing handshake is answered.
      this.reportLost();
      this.giveUp(WsCloseCode.NORMAL);
    }
  }

  /** §2: a frame the framing refused gets its NACK and is discarded; persistent refusals close (§12.5). */
  refuse(code: FramingErrorCodeValue, length: number): void {
    const n = this.num;
    const lo = this.lo;
    n[lo + L_REFUSED] = (n[lo + L_REFUSED] as number) + 1;
    n[lo + L_LAST_REFUSAL] = code;
    this.log.event('frame-refused', code, length);
    this.pushNack(code === FramingErrorCode.TOO_LARGE ? NACK_TOO_LARGE : NACK_MALFORMED);
    if (this.refusalsWithin(this.clock.now()) > MALFORMED_CLOSE_PER_S) {
      this.log.event('refusals-close', n[lo + L_REFUSED] as number);
      this.reportLost();
      this.giveUp(WS_POLICY_VIOLATION);
    }
  }

  // ------------------------------------------------------------------ internals

  /** Judges the detector at `now`; a new level is reported to the core. */
  private judge(now: number): void {
    this.judgedAt = now;
    this.detector.tick(now);
    const j = this.detector.judgements;
    this.judgementsSeen = this.detector.quietUntil === Infinity ? j : -1 - j;
    const l = this.detector.level();
    if (l !== this.lvl) {
      this.lvl = l;
      if (this.sink) this.sink.levelChanged();
    }
  }

  /**
   * One more refusal at `now`: how many fell within the last second, this one included (at most
   * REFUSALS are kept, the oldest forgotten first: hub/limits.ts WindowCounter's count, its times
   * in the link's numbers).
   */
  private refusalsWithin(now: number): number {
    const n = this.num;
    const lo = this.lo;
    const at = lo - REFUSALS;
    let head = n[lo + L_REFUSAL_HEAD] as number;
    let count = n[lo + L_REFUSALS] as number;
    while (count > 0 && now - (n[at + head] as number) >= MS_PER_S) {
      head = head + 1 === REFUSALS ? 0 : head + 1;
      count--;
    }
    const i = head + count;
    n[at + (i < REFUSALS ? i : i - REFUSALS)] = now;
    if (count === REFUSALS) head = head + 1 === REFUSALS ? 0 : head + 1;
    else count++;
    n[lo + L_REFUSAL_HEAD] = head;
    n[lo + L_REFUSALS] = count;
    return count;
  }

  private kick(): void {
    if (this.transport) this.transport.kick();
  }

  private reportLost(): void {
    if (this.num[this.lo + L_LOSS_REPORTED] !== 0) return;
    this.num[this.lo + L_LOSS_REPORTED] = 1;
    if (this.sink) this.sink.lost();
  }

  /** Called before anything joins the queue: a backlog that starts now has waited 0 ms (stalledMs). */
  private backlogStarts(): void {
    if (this.queue.pendingBytes() === 0) this.movedAt = this.clock.now();
  }

  /** How long a STREAM sample may wait here (docs/protocol.md §13.6): half the least RTT lately. */
  sampleBudgetMs(): number {
    return sampleBudgetMs(this.minRtt.value());
  }

  /**
   * §10.4 "never delay and burst", at the binding: samples that waited past the budget are
   * dropped unsent, and the drop reads as a full queue (§13.5.5): the link carries less than it
   * is handed, which is what the detector exists to say.
   */
  private expireSamples(): void {
    this.queue.setExpiry(this.clock.now(), this.sampleBudgetMs());
  }

  /**
   * After a take (`taken` bytes or a record length, 0: none) that found the queue at `found`:
   * samples dropped stale on the way tell the detector (§13.6). A take that dropped frames and
   * handed nothing over still drained the queue: the detector reads what is left, so that a
   * link that falls idle right after is not judged on the backlog it no longer has.
   */
  private expiryJudged(found: number, taken: number): void {
    const q = this.queue;
    const expired = q.expired;
    const dropped = expired + q.conflated;
    const n = this.num;
    const lo = this.lo;
    if (dropped === n[lo + L_DROPPED_SEEN]) return;
    const now = this.clock.now();
    if (taken === 0) this.detector.drained(found, q.ratio(), now);
    if (expired !== n[lo + L_EXPIRED_SEEN]) this.detector.stale(now);
    n[lo + L_EXPIRED_SEEN] = expired;
    n[lo + L_DROPPED_SEEN] = dropped;
  }

  private allowance(): number {
    return this.acks.seen ? (this.num[this.lo + L_WINDOW] as number) - this.acks.outstanding() : NO_LIMIT;
  }

  /** `found`: the watermark when the socket took these bytes, the backlog it carries (§13.5.1). */
  private handed(n: number, framesBefore: number, found: number): void {
    const now = this.clock.now();
    const q = this.queue;
    const a = this.acks;
    a.startedAt(q.framesTaken - framesBefore, now);
    this.throughput.add(n, now);
    this.movedAt = now;
    this.detector.drained(found, q.ratio(), now);
    if (a.seen && a.outstanding() >= (this.num[this.lo + L_LAG_HEEDED] as number)) this.detector.ackLag(a.outstanding(), now);
  }

  private upgrade(hs: WsHandshake): void {
    const accept = wsAccept(hs.key, hs.sha1 as Sha1);
    this.handshake = null;
    this.pushAscii(wsUpgradeResponse(accept));
    this.st = LinkState.OPEN;
    this.log.event('ws-upgrade');
    if (this.transport) {
      this.direct = directOf(this.transport);
      this.sink = this.hub.attach(this);
    }
  }

  /** A WebSocket protocol violation or a refused upgrade: the connection cannot go on. */
  private fatal(code: FramingErrorCodeValue): void {
    this.log.event('framing-close', code);
    if (this.st === LinkState.HANDSHAKE) {
      this.pushAscii(wsRefusedResponse(this.handshake ? this.handshake.refusal : 400));
      this.giveUp(WsCloseCode.PROTOCOL_ERROR);
      return;
    }
    this.reportLost();
    this.giveUp(WsCloseCode.PROTOCOL_ERROR);
  }

  private giveUp(wsCode: number): void {
    if (this.st === LinkState.CLOSING || this.st === LinkState.CLOSED) return;
    if (this.framing === LinkFraming.WS_SERVER && this.st === LinkState.OPEN) {
      // RFC 6455 §5.5.1: the closing handshake, a close frame with the status code.
      // The 2-byte header and the 2-byte body fill `hdr`: the record is all header.
      const b = this.hdr;
      const h = writeWsHeader(WsOpcode.CLOSE, 2, b, 0);
      b[h] = wsCode >>> 8;
      b[h + 1] = wsCode & 0xff;
      this.queue.push(b, h + 2, b, 0, RecordKind.RAW);
    }
    this.st = LinkState.CLOSING;
    this.direct = null;
    if (this.transport) this.transport.close(wsCode);
  }

  /** A NACK from the binding itself; dropped if the queue is full (the client is not reading anyway). */
  private pushNack(frame: Uint8Array): void {
    const h = this.writeHeader(WsOpcode.BINARY, frame.length);
    this.backlogStarts();
    if (this.queue.push(this.hdr, h, frame, frame.length, RecordKind.CONTROL)) this.kick();
  }

  /** Raw bytes with no frame header (the HTTP upgrade answer). */
  private pushAscii(text: string): void {
    const bytes = new Uint8Array(text.length);
    writeAscii(text, bytes, 0);
    this.backlogStarts();
    if (this.queue.push(this.hdr, 0, bytes, bytes.length, RecordKind.RAW)) this.kick();
  }

  private headerLength(length: number): number {
    if (this.framing === LinkFraming.LENGTH_PREFIX) return LENGTH_PREFIX_BYTES;
    if (this.framing === LinkFraming.WS_SERVER) return wsHeaderLength(length);
    return 0;
  }

  private writeHeader(opcode: number, length: number): number {
    if (this.framing === LinkFraming.LENGTH_PREFIX) return writeLengthPrefix(length, this.hdr, 0);
    if (this.framing === LinkFraming.WS_SERVER) return writeWsHeader(opcode, length, this.hdr, 0);
    return 0;
  }
}

Object.assign(EgressQueue.prototype, { starts: null });
Object.assign(TcpLink.prototype, { handshake: null, log: NULL_LOG });
