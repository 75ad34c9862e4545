// ESP-NOW datagram framing (§13.3; docs/_espnow.md has the byte-by-byte layout). Platform-free
// and shared by the hub side (link.ts), the simulated peers (sim.ts) and any client.
//
//   byte 0     0x10 | flags: version 1 in the high nibble, flag bits in the low nibble
//   bytes 1–2  datagram sequence number, uint16 big-endian, +1 per datagram per stream, wraps
//   [6 bytes]  only with BROADCAST_ACK (peer → hub): ack_base uint16 BE, ack_bitmap uint32 BE
//   then       one or more whole frames, each a 1-byte length (1–246) followed by the frame
//
// A datagram never exceeds ESP-NOW's 250-byte payload. Byte 0 can never be 0xE5 (the ESTOP
// frame) nor 0xA0–0xBF (a CBOR map): a receiver tells a bare frame sent as a whole datagram
// (a minimal ESTOP button, say) from a framed datagram by that byte alone.
//
// Nothing here allocates after construction: queues are byte rings sized at setup.

import type { CborWriter } from '../../hub/cbor.js';
import { ESTOP_FRAME_BYTES, ESTOP_MAGIC } from '../../hub/estop-frame.js';
import { FrameType, Key } from '../../hub/frames.js';
import { Tag } from '../../hub/ports.js';
import { EstopAhead, ownValue } from '../link.js';

// The keys and type of the bitmap ACK (parseBitmapAck), as plain numbers.
const KEY_TYPE = Key.TYPE;
const KEY_ACK_BASE = Key.ACK_BASE;
const KEY_ACK_BITMAP = Key.ACK_BITMAP;
const TYPE_ACK = FrameType.ACK;

/** The tag bit of a frame that must survive a failed send (reliableTag). */
const CRITICAL = Tag.CRITICAL;

/** ESP-NOW v1 payload limit (ESP_NOW_MAX_DATA_LEN). */
export const DATAGRAM_MAX_BYTES = 250;
export const DATAGRAM_VERSION = 1;
/** Version/flags byte + 16-bit sequence. */
export const HEADER_BYTES = 3;
/** Each frame's length prefix. */
export const LENGTH_BYTES = 1;
/** The inline broadcast acknowledgement a peer may carry (BROADCAST_ACK). */
export const BROADCAST_ACK_BYTES = 6;
/** Largest frame in a hub → peer datagram: the session's `mtu` on ESP-NOW (key 22). */
export const MAX_DATAGRAM_FRAME = DATAGRAM_MAX_BYTES - HEADER_BYTES - LENGTH_BYTES;
/** Largest frame a peer can send next to an inline broadcast acknowledgement. */
export const MAX_PEER_FRAME_WITH_ACK = MAX_DATAGRAM_FRAME - BROADCAST_ACK_BYTES;

export const DatagramFlag = Object.freeze({
  /** Hub → peer: this datagram is in the segment's broadcast stream (its own sequence space). */
  BROADCAST: 0x01,
  /** Peer → hub: the header carries ack_base and ack_bitmap for the broadcast stream. */
  BROADCAST_ACK: 0x02,
} as const);
const KNOWN_FLAGS = DatagramFlag.BROADCAST | DatagramFlag.BROADCAST_ACK;

/** Datagram sequence numbers are 16-bit (§13.3). */
export const SEQ_MASK = 0xffff;
/** The ACK bitmap covers the newest datagram and the 31 before it (§5.12, §13.3). */
export const ACK_BITS = 32;

/**
 * Write-ahead ESTOP frames held per stream. ASSERT then CLEARED can both be waiting while the
 * previous datagram is still in the air; more than that means the newest ones matter.
 */
export const ESTOP_SLOTS = 4;
/**
 * A frame the sender must not lose (never-shed on the hub side, §10.1) goes out again when the
 * radio reports that every MAC retry of its datagram failed, at most this many more times. The
 * MAC already retried; a few more attempts cover a burst of interference without letting a dead
 * peer hold the radio.
 */
export const RETRANSMIT_LIMIT = 3;
/**
 * A receiver drops a datagram whose sequence number it received from the same sender within this
 * long (§13.3.3): the sender resends a datagram under its own number when only the MAC's
 * acknowledgement was lost. A resend follows its original within tens of ms (RETRANSMIT_LIMIT
 * attempts, each one datagram's MAC retries); a stream that starts over at 0 has been silent for
 * far longer (a new transport comes after PEER_SILENCE_MS).
 */
export const DUPLICATE_WINDOW_MS = 1000;
/** Sequence numbers a receiver remembers per stream: a resend comes next in its stream, or one datagram later. */
export const DUPLICATE_SLOTS = 32;

/** a is newer than b in 16-bit serial arithmetic (RFC 1982). */
export function seqNewer(a: number, b: number): boolean {
  const d = (a - b) & SEQ_MASK;
  return d !== 0 && d < 0x8000;
}

export function writeHeader(out: Uint8Array, flags: number, seq: number): void {
  out[0] = (DATAGRAM_VERSION << 4) | (flags & 0x0f);
  out[1] = (seq >>> 8) & 0xff;
  out[2] = seq & 0xff;
}

export function writeBroadcastAck(out: Uint8Array, base: number, bitmap: number): void {
  out[3] = (base >>> 8) & 0xff;
  out[4] = base & 0xff;
  out[5] = (bitmap >>> 24) & 0xff;
  out[6] = (bitmap >>> 16) & 0xff;
  out[7] = (bitmap >>> 8) & 0xff;
  out[8] = bitmap & 0xff;
}

export const DatagramError = Object.freeze({
  OK: 0,
  EMPTY: 1,
  TOO_LONG: 2,
  VERSION: 3,
  FLAGS: 4,
  /** A zero length, or a length running past the datagram's end. */
  LENGTH: 5,
  /** A header with no frame after it. */
  NO_FRAME: 6,
} as const);

/**
 * Reads one received datagram without allocating. `open` checks the whole datagram first, so
 * that a malformed one delivers no frame at all; `next` then steps through its frames.
 */
export class DatagramCursor {
  flags = 0;
  seq = 0;
  /** Whether the datagram was one bare frame (no header, no sequence). */
  bare = false;
  ackBase = 0;
  ackBitmap = 0;
  /** The current frame, bytes [start, end) of the buffer given to open. */
  start = 0;
  end = 0;
  private buf: Uint8Array = new Uint8Array(0);
  private pos = 0;
  private limit = 0;

  open(buf: Uint8Array, length: number): number {
    this.buf = buf;
    this.pos = this.limit = this.start = this.end = 0;
    this.flags = this.seq = this.ackBase = this.ackBitmap = 0;
    this.bare = false;
    if (length <= 0 || length > buf.length) return DatagramError.EMPTY;
    if (length > DATAGRAM_MAX_BYTES) return DatagramError.TOO_LONG;
    const b0 = buf[0] as number;
    if (b0 === ESTOP_MAGIC || (b0 >= 0xa0 && b0 <= 0xbf)) {
      this.bare = true;
      this.limit = length;
      return DatagramError.OK;
    }
    if (b0 >>> 4 !== DATAGRAM_VERSION) return DatagramError.VERSION;
    const flags = b0 & 0x0f;
    if ((flags & ~KNOWN_FLAGS) !== 0) return DatagramError.FLAGS;
    let p = HEADER_BYTES;
    if (length < p) return DatagramError.LENGTH;
    this.flags = flags;
    this.seq = ((buf[1] as number) << 8) | (buf[2] as number);
    if (flags & DatagramFlag.BROADCAST_ACK) {
      if (length < p + BROADCAST_ACK_BYTES) return DatagramError.LENGTH;
      this.ackBase = ((buf[3] as number) << 8) | (buf[4] as number);
      this.ackBitmap = (((buf[5] as number) << 24) | ((buf[6] as number) << 16) | ((buf[7] as number) << 8) | (buf[8] as number)) >>> 0;
      p += BROADCAST_ACK_BYTES;
    }
    const first = p;
    while (p < length) {
      const n = buf[p] as number;
      if (n === 0 || p + 1 + n > length) return DatagramError.LENGTH;
      p += 1 + n;
    }
    // A bare acknowledgement (BROADCAST_ACK and nothing else) is a whole datagram.
    if (first === length && (flags & DatagramFlag.BROADCAST_ACK) === 0) return DatagramError.NO_FRAME;
    this.pos = first;
    this.limit = length;
    return DatagramError.OK;
  }

  next(): boolean {
    if (this.bare) {
      if (this.pos !== 0 || this.limit === 0) return false;
      this.start = 0;
      this.end = this.pos = this.limit;
      return true;
    }
    if (this.pos >= this.limit) return false;
    const n = this.buf[this.pos] as number;
    this.start = this.pos + 1;
    this.end = this.start + n;
    this.pos = this.end;
    return true;
  }
}

/** Egress queue of a stream by default: about four full datagrams, 12 ms of air at 1 Mbps. Late is worse than lost (§10.4). */
export const DEFAULT_QUEUE_BYTES = 1024;
export const DEFAULT_QUEUE_FRAMES = 32;

/**
 * A bounded FIFO of whole frames, each with the tag it was queued with (hub/ports.ts Tag), every
 * frame contiguous in a ring of `capacityBytes` (one that does not fit before the end goes to the
 * front, the tail end left as a gap, as the hub's never-shed ring does). Its memory is one array
 * with the stream's datagram buffer after the ring, so that packing a datagram copies each frame
 * with one native copy, and after that whatever room its owner asks for (`roomBytes`); the
 * frames' lengths and tags share its buffer. Push only after canPush; a full queue refuses, it
 * never overwrites (the core decides what is dropped, §10.4).
 */
export class FrameQueue {
  // Its capacities: the prototype's (DEFAULT_QUEUE_BYTES, DEFAULT_QUEUE_FRAMES) unless given
  // otherwise (an own property each only then: on XS every property costs a heap slot).
  declare readonly capacityBytes: number;
  declare readonly capacityFrames: number;
  /** [ring | one datagram | the owner's room]: `datagram` is the view of the second part. */
  readonly mem: Uint8Array;
  readonly datagram: Uint8Array;
  // Each frame's length and tag by frame slot. Where a frame starts follows from the lengths:
  // the frames lie end to end from `head`, and the one after the frame ending at `gapAt` at 0.
  /** @internal The lengths, then the owner's `extraWords` from [capacityFrames]. */
  readonly lens: Uint16Array;
  /** @internal The tags (the binding's scheduler reads the head frame's). */
  readonly tags: Uint32Array;
  /** @internal The ring's state (Egress.commit and the binding's scheduler empty it inline). */
  headFrame = 0;
  /** @internal Frames and bytes queued (`frames`, `bytes`), read as fields by the binding's scheduler. */
  nFrames = 0;
  nBytes = 0;
  /** @internal */
  head = 0;
  /** @internal */
  tail = 0;
  /** @internal */
  gapAt = -1;
  /**
   * @internal Whether the head frame lies in the datagram area already, as packInto would write
   * it there ([length][frame] from HEADER_BYTES), and not in the ring (pushPacked). Its place in
   * the ring is kept all the same (head, tail and the gap count it as if it were there), so that
   * what the queue takes and refuses is what it would be with the frame in the ring.
   */
  pre = false;

  /**
   * `extraWords` after the frames' lengths in `lens` and `tailBytes` at the end of its buffer
   * (`mem.buffer`, from queueTailAt) are its owner's, which keeps numbers of its own there
   * rather than in a buffer of their own.
   */
  constructor(capacityBytes: number, capacityFrames: number, roomBytes = 0, extraWords = 0, tailBytes = 0) {
    if (!(capacityBytes >= 1 && capacityBytes <= 0xffff)) throw new RangeError('FrameQueue: capacityBytes must be 1..65535');
    if (capacityBytes !== DEFAULT_QUEUE_BYTES) ownValue(this, 'capacityBytes', capacityBytes);
    if (capacityFrames !== DEFAULT_QUEUE_FRAMES) ownValue(this, 'capacityFrames', capacityFrames);
    // [tags | lengths, extra words | ring | datagram | room | tail], each part aligned for its
    // element size (the tail for 8-byte numbers).
    const tagBytes = capacityFrames * 4;
    const lenBytes = (capacityFrames + extraWords) * 2;
    const memAt = tagBytes + lenBytes;
    const buffer = new ArrayBuffer(queueTailAt(capacityBytes, capacityFrames, roomBytes, extraWords) + tailBytes);
    this.tags = new Uint32Array(buffer, 0, capacityFrames);
    this.lens = new Uint16Array(buffer, tagBytes, capacityFrames + extraWords);
    this.mem = new Uint8Array(buffer, memAt, capacityBytes + DATAGRAM_MAX_BYTES + roomBytes);
    this.datagram = new Uint8Array(buffer, memAt + capacityBytes, DATAGRAM_MAX_BYTES);
  }

  get frames(): number {
    return this.nFrames;
  }

  get bytes(): number {
    return this.nBytes;
  }

  canPush(length: number): boolean {
    return length > 0 && this.nFrames < this.capacityFrames && this.placeFor(length) >= 0;
  }

  /** Queues `frame` (exactly the frame) with its tag; false when it does not fit. */
  push(frame: Uint8Array, tag = 0): boolean {
    const length = frame.length;
    const n = this.nFrames;
    const cap = this.capacityFrames;
    // canPush, with the place found once. An empty queue starts at 0 (clear and shift leave it so).
    if (!(length > 0) || n >= cap) return false;
    let at = 0;
    let f = 0;
    if (n === 0) {
      if (length > this.capacityBytes) return false;
      this.head = 0;
    } else {
      at = this.placeFor(length);
      if (at < 0) return false;
      if (at === 0) this.gapAt = this.tail;
      f = this.headFrame + n;
      if (f >= cap) f -= cap;
    }
    this.mem.set(frame, at);
    this.lens[f] = length;
    this.tags[f] = tag;
    this.nFrames = n + 1;
    this.nBytes += length;
    this.tail = at + length;
    return true;
  }

  /**
   * push into an empty queue, the frame written straight into the datagram area as the first of
   * the next datagram (packInto then leaves it where it is), for an owner with nothing else to
   * write there before that datagram is packed (Egress.committed says when); a frame that would
   * not fit a datagram is pushed as push does. (EspNowLink.send has this case inline, relying on
   * its own refusal of frames over MAX_DATAGRAM_FRAME: a change here changes it there too.)
   */
  pushPacked(frame: Uint8Array, tag: number): boolean {
    const length = frame.length;
    if (this.nFrames !== 0 || !(length > 0) || length > MAX_DATAGRAM_FRAME || length > this.capacityBytes || this.capacityFrames === 0) return this.push(frame, tag);
    const at = this.capacityBytes + HEADER_BYTES;
    const mem = this.mem;
    mem[at] = length;
    mem.set(frame, at + 1);
    this.head = 0;
    this.lens[0] = length;
    this.tags[0] = tag;
    this.nFrames = 1;
    this.nBytes = length;
    this.tail = length;
    this.pre = true;
    return true;
  }

  /** @internal The head frame pushPacked left in the datagram area goes to its place in the ring, before anything else is written there. */
  unpack(): void {
    if (!this.pre) return;
    this.pre = false;
    const at = this.capacityBytes + HEADER_BYTES + 1;
    this.mem.copyWithin(this.head, at, at + (this.lens[this.headFrame] as number));
  }

  /** Length of the k-th frame from the head (0 is the oldest). */
  lengthAt(k: number): number {
    return this.lens[this.slot(k)] as number;
  }

  /** The tag the k-th frame was queued with. */
  tagAt(k: number): number {
    return this.tags[this.slot(k)] as number;
  }

  /** Copies the k-th frame into mem[at…] (the datagram area): one native copy. */
  copyFrame(k: number, at: number): void {
    this.unpack();
    const cap = this.capacityFrames;
    let f = this.headFrame;
    let from = this.head;
    for (let i = 0; i < k; i++) {
      from += this.lens[f] as number;
      if (from === this.gapAt) from = 0;
      f = f + 1 === cap ? 0 : f + 1;
    }
    this.mem.copyWithin(at, from, from + (this.lens[f] as number));
  }

  /**
   * @internal Writes whole frames from the head as [length][frame]… into the datagram area from
   * `p` (an offset in `datagram`) while they fit below `max`, and those that must survive a failed
   * send (`reliableTag`) the same way from mem[stageAt]; returns where they end in the datagram.
   * `packed` says how many frames it took, `staged` how many bytes it wrote from stageAt.
   * Nothing is consumed (shift does that). (EspNowBinding's scheduler has the first case, one
   * frame already in the datagram area, inline: a change here changes it there too.)
   */
  packInto(p: number, max: number, stageAt: number): number {
    // A head frame already in the datagram area is where this would write it only from HEADER_BYTES.
    let pre = this.pre;
    if (pre && p !== HEADER_BYTES) {
      this.unpack();
      pre = false;
    }
    const n = this.nFrames;
    if (pre && n === 1) {
      // The one frame, in the datagram area already (what the loop below does with it).
      const f = this.headFrame;
      const len = this.lens[f] as number;
      if (p + 1 + len <= max) {
        if (((this.tags[f] as number) & CRITICAL) !== 0) {
          const at = this.capacityBytes + p;
          this.mem.copyWithin(stageAt, at, at + 1 + len);
          this.staged = 1 + len;
        } else this.staged = 0;
        this.packed = 1;
        return p + 1 + len;
      }
    }
    const mem = this.mem;
    const lens = this.lens;
    let at = this.capacityBytes + p;
    let from = this.head;
    let f = this.headFrame;
    let k = 0;
    let s = stageAt;
    while (k < n) {
      const len = lens[f] as number;
      if (p + 1 + len > max) break;
      if (pre) pre = false;
      else {
        mem[at] = len;
        mem.copyWithin(at + 1, from, from + len);
      }
      if (((this.tags[f] as number) & CRITICAL) !== 0) {
        mem.copyWithin(s, at, at + 1 + len);
        s += 1 + len;
      }
      p += 1 + len;
      if (++k === n) break;
      at += 1 + len;
      f = f + 1 === this.capacityFrames ? 0 : f + 1;
      from += len;
      if (from === this.gapAt) from = 0;
    }
    this.packed = k;
    this.staged = s - stageAt;
    return p;
  }

  /**
   * @internal The frames the last packInto took (what commit consumes: an owner that packs
   * something else sets it to 0), and the bytes it staged.
   */
  packed = 0;
  staged = 0;

  /** Drops the `frames` oldest frames. */
  shift(frames: number): void {
    if (frames > 0) this.pre = false;
    if (frames >= this.nFrames) {
      // All of them: the queue is empty, as the loop would leave it (clear).
      this.head = this.tail = this.headFrame = this.nFrames = this.nBytes = 0;
      this.gapAt = -1;
      return;
    }
    for (let i = 0; i < frames && this.nFrames > 0; i++) {
      const len = this.lens[this.headFrame] as number;
      this.nBytes -= len;
      this.nFrames--;
      this.headFrame = this.headFrame + 1 === this.capacityFrames ? 0 : this.headFrame + 1;
      if (this.nFrames === 0) {
        this.head = this.tail = 0;
        this.gapAt = -1;
        this.headFrame = 0;
      } else if (this.head + len === this.gapAt) {
        this.head = 0;
        this.gapAt = -1;
      } else this.head += len;
    }
  }

  clear(): void {
    this.head = this.tail = this.headFrame = this.nFrames = this.nBytes = this.packed = 0;
    this.gapAt = -1;
    this.pre = false;
  }

  private slot(k: number): number {
    const f = this.headFrame + k;
    return f >= this.capacityFrames ? f - this.capacityFrames : f;
  }

  // Where a frame of `length` bytes would start, or -1.
  private placeFor(length: number): number {
    const capacity = this.capacityBytes;
    if (this.nFrames === 0) return length <= capacity ? 0 : -1;
    if (this.head < this.tail) {
      if (length <= capacity - this.tail) return this.tail;
      return length <= this.head ? 0 : -1;
    }
    return length <= this.head - this.tail ? this.tail : -1;
  }
}

Object.assign(FrameQueue.prototype, { capacityBytes: DEFAULT_QUEUE_BYTES, capacityFrames: DEFAULT_QUEUE_FRAMES });

/** Where a FrameQueue's tail (its owner's bytes) starts in its buffer: after everything else, 8-aligned. */
export function queueTailAt(capacityBytes: number, capacityFrames: number, roomBytes: number, extraWords: number): number {
  const end = capacityFrames * 4 + (capacityFrames + extraWords) * 2 + capacityBytes + DATAGRAM_MAX_BYTES + roomBytes;
  return (end + 7) & ~7;
}

/** Whether a queued frame must survive a failed send status: ESTOP and the sender's never-shed set (its tag says CRITICAL, or it is no DATA at all). */
export function reliableTag(tag: number): boolean {
  return (tag & CRITICAL) !== 0;
}

/** The frames of any datagram, its header excluded: what a resend of one can hold. */
const RESEND_BYTES = DATAGRAM_MAX_BYTES - HEADER_BYTES;
const ESTOP_RESEND_BYTES = ESTOP_SLOTS * (LENGTH_BYTES + ESTOP_FRAME_BYTES);
// An Egress keeps in its queue's room after the datagram area: the ESTOP slots, the ESTOP owed
// and the frames of its two resends.
const ESTOPS_ROOM = ESTOP_SLOTS * ESTOP_FRAME_BYTES;
const EGRESS_ROOM = ESTOPS_ROOM + ESTOP_FRAME_BYTES + ESTOP_RESEND_BYTES + RESEND_BYTES;

// Which resend the last pack took (Egress.pTaken, negated): the ESTOP datagram's, any other's.
const RESEND_ESTOP = 1;
const RESEND_PLAIN = 2;
// What the datagram last committed holds (Egress.committed): frames of which only those staged
// must survive a failure; a resend's, every one of which must; ESTOP frames (an ESTOP datagram
// holds nothing else), every one of which must.
/** @internal Egress.committed of a plain datagram (what may be pushed into the datagram area after it). */
export const COMMITTED_PLAIN = 0;
const COMMITTED_RESEND = 1;
const COMMITTED_ESTOP = 2;
// Where the resends keep their frames in the queue's memory, from the end of its ring: after the
// datagram area, the ESTOP slots and the ESTOP owed, the ESTOP datagram's resend, then any other's.
const OWED_OFFSET = DATAGRAM_MAX_BYTES + ESTOPS_ROOM;
const ESTOP_RESEND_OFFSET = OWED_OFFSET + ESTOP_FRAME_BYTES;
const RESEND_OFFSET = ESTOP_RESEND_OFFSET + ESTOP_RESEND_BYTES;
/**
 * Where, from the end of its ring, a stream's queue stages the frames of the datagram being
 * packed that must survive a failure (FrameQueue.packInto's `stageAt`, as Egress.pack gives it).
 */
export const PLAIN_STAGE_OFFSET = RESEND_OFFSET;
// Each resend's numbers, in the words after the queue's frame lengths: its frames' bytes (0: none
// owed), its number, the attempt it is on (all below 65536: a resend holds at most a datagram).
const W_ESTOP = 0;
const W_PLAIN = 3;
const W_BYTES = 0;
const W_SEQ = 1;
const W_GEN = 2;
const RESEND_WORDS = 6;
/** The words an Egress keeps after its queue's frame lengths; its owner's extra words follow. */
export const EGRESS_WORDS = RESEND_WORDS;

/**
 * One sender's stream of datagrams: its queue, its write-ahead ESTOP slots (bindings/link.ts
 * EstopAhead) and the datagrams owed a resend, ESTOP first (§10.4: ESTOP ahead of every queue).
 * `pack` builds a datagram in the queue's own datagram area (`datagram`) without consuming
 * anything; `commit` consumes it once the radio accepted it, so a refused send loses nothing.
 * One datagram is built and in the air at a time: the next pack (or `direct`) takes the place of
 * the last, which `failed` must have been told of by then. As a datagram of queued frames is
 * built, the frames of it that must survive a failure are staged in the resend area (free
 * whenever the queue is packed: an owed resend goes first), so that its failure has the resend
 * ready.
 *
 * A resend (§13.3.3) carries the failed datagram's own sequence number and only the frames of it
 * that must not be lost (their tags said so, `reliableTag`), nothing newer: a receiver that did
 * get the original (only the MAC's acknowledgement was lost) drops the whole resend as a
 * duplicate, and nothing is lost with it. ESTOP datagrams hold ESTOP frames only, so a stream
 * owes at most two resends at once: one of an ESTOP datagram, one of any other.
 */
export class Egress {
  readonly queue: FrameQueue;
  /** The sequence number the next new datagram carries. */
  seq = 0;
  /** Frames dropped because their retransmission budget ran out or the slots were full. */
  abandoned = 0;
  /** @internal Whether an ESTOP frame is owed (takeOwedEstop), for a receiver's one-comparison check. */
  owedEstop = false;
  /** ESTOP frames written again to a peer heard after their resends had failed. */
  estopsReowed = 0;
  readonly estops: EstopAhead;
  /**
   * @internal Whether an ESTOP or a resend waits (`urgent`), kept as they come and go, so that
   * packing plain traffic asks one field.
   */
  hot = false;
  // What the last pack took, consumed by commit: a resend (−RESEND_ESTOP, −RESEND_PLAIN) or that
  // many ESTOP frames (0: neither); queued frames are the queue's `packed` (the bytes of those
  // staged for a resend its `staged`).
  private pTaken = 0;
  /**
   * @internal What the datagram last committed holds (COMMITTED_*): which of its frames survive a
   * failure. While it is a plain one (0) and nothing is `hot`, nothing but the queue's frames is
   * written into the datagram area before the next pack, and a frame for an empty queue may be
   * written there at once (FrameQueue.pushPacked): a failure of a plain datagram reads only what
   * was staged, and pack builds an ESTOP datagram or a resend only while `hot`.
   */
  committed = COMMITTED_PLAIN;
  /** The attempt number of the datagram last committed (0: first transmission of its frames). */
  committedGen = 0;
  /** The sequence number of the datagram last committed. */
  committedSeq = 0;

  /**
   * `extraWords` and `tailBytes` are the owner's, in its queue's buffer (FrameQueue): the words
   * from `queue.lens[queueFrames + EGRESS_WORDS]`, the bytes from `egressTailAt`.
   */
  constructor(queueBytes: number, queueFrames: number, extraWords = 0, tailBytes = 0) {
    const q = new FrameQueue(queueBytes, queueFrames, EGRESS_ROOM, RESEND_WORDS + extraWords, tailBytes);
    this.queue = q;
    this.estops = new EstopAhead(ESTOP_FRAME_BYTES, ESTOP_SLOTS, q.mem, queueBytes + DATAGRAM_MAX_BYTES);
  }

  /** The datagram the last pack built, from [0]: the caller writes the header before `start`. */
  get datagram(): Uint8Array {
    return this.queue.datagram;
  }

  // A number of resend `r` (W_ESTOP, W_PLAIN): W_BYTES, W_SEQ or W_GEN, in the words after the
  // queue's frame lengths.
  private word(r: number, k: number): number {
    const q = this.queue;
    return q.lens[q.capacityFrames + r + k] as number;
  }
  private setResend(r: number, bytes: number, seq: number, gen: number): void {
    const q = this.queue;
    const w = q.lens;
    const at = q.capacityFrames + r;
    w[at + W_BYTES] = bytes;
    w[at + W_SEQ] = seq;
    w[at + W_GEN] = gen;
  }
  // Whether resend `r` is owed.
  private owes(r: number): boolean {
    return this.word(r, W_BYTES) !== 0;
  }

  pending(): boolean {
    return this.urgent() || this.queue.nFrames > 0;
  }

  /** An ESTOP or a resend is waiting: this stream goes before plain traffic. */
  urgent(): boolean {
    return this.estops.count > 0 || this.owes(W_ESTOP) || this.owes(W_PLAIN);
  }

  // `hot` taken afresh after ESTOP frames or resends came or went.
  private rehot(): void {
    this.hot = this.urgent();
  }

  estopsWaiting(): number {
    return this.estops.count;
  }

  /** @internal What waits, for the scheduler in one call: 2 urgent (`urgent`), 1 queued frames only, 0 nothing. */
  work(): number {
    if (this.urgent()) return 2;
    return this.queue.nFrames > 0 ? 1 : 0;
  }

  /** The next pack is a resend: the sender adds nothing of its own to it (no acknowledgement). */
  resendNext(): boolean {
    return this.nextResend() !== 0;
  }

  /** The sequence number of the datagram the last pack built. */
  packedSeq(): number {
    const r = this.pTaken;
    return r >= 0 ? this.seq : this.word(r === -RESEND_ESTOP ? W_ESTOP : W_PLAIN, W_SEQ);
  }

  /** The 12-byte ESTOP frame, ahead of everything queued; the oldest waiting one yields when full. */
  writeAhead(frame: Uint8Array): void {
    this.owedEstop = false;
    const dropped = this.estops.dropped;
    this.estops.write(NO_HEADER, 0, frame);
    this.abandoned += this.estops.dropped - dropped;
    this.hot = true;
  }

  /**
   * Writes frames into `datagram` from `start` (the caller writes the header before it, numbered
   * `packedSeq()`) and returns the datagram's length, or 0 when nothing is waiting; nothing is
   * consumed until commit. In order: the resend of an ESTOP datagram; the ESTOP frames written
   * ahead, alone (the shortest datagram on the air, so that the hub's ESTOP to every peer, §11.2,
   * goes out one short datagram after another); the resend of any other datagram; the queue in
   * order while whole frames fit.
   */
  pack(start: number): number {
    const q = this.queue;
    const dg = q.capacityBytes;
    // Plain traffic, nearly always: no ESTOP waiting, no resend owed (and so none packed: only
    // commit and clear end `hot`, and both forget what was packed).
    if (!this.hot) {
      const end = q.packInto(start, DATAGRAM_MAX_BYTES, dg + RESEND_OFFSET);
      return end === start ? 0 : end;
    }
    this.pTaken = q.packed = 0;
    // What is built here goes where a frame pushed into the datagram area lies.
    q.unpack();
    const mem = q.mem;
    const r = this.nextResend();
    if (r !== 0) {
      const at = dg + (r === RESEND_ESTOP ? ESTOP_RESEND_OFFSET : RESEND_OFFSET);
      const bytes = this.word(r === RESEND_ESTOP ? W_ESTOP : W_PLAIN, W_BYTES);
      mem.copyWithin(dg + start, at, at + bytes);
      this.pTaken = -r;
      return start + bytes;
    }
    let p = start;
    const max = DATAGRAM_MAX_BYTES;
    const n = ESTOP_FRAME_BYTES;
    let e = 0;
    const estops = this.estops;
    // The ESTOP slots lie in the same memory, a ring of them from estops.base.
    const first = estops.frontOffset();
    const ring = estops.slots * n;
    const end = estops.base + ring;
    while (e < estops.count && p + 1 + n <= max) {
      mem[dg + p] = n;
      let at = first + e * n;
      if (at >= end) at -= ring;
      mem.copyWithin(dg + p + 1, at, at + n);
      p += 1 + n;
      e++;
    }
    if (e === 0) p = q.packInto(p, max, dg + RESEND_OFFSET);
    this.pTaken = e;
    return p === start ? 0 : p;
  }

  /**
   * @internal The datagram of `frame` (queued with `tag`) alone, header and all, built in
   * `datagram` straight from the caller's buffer and committed: what pack, writing the header,
   * and commit would have made of it had it been queued, for a stream with nothing else waiting
   * (no ESTOP, no resend, an empty queue: the caller knows) and no datagram of its in the air.
   * Returns its sequence number; its length is HEADER_BYTES + 1 + the frame's. A radio that does
   * not take it hands the number back (`seq = ` the one returned) and queues the frame instead.
   */
  direct(frame: Uint8Array, tag: number): number {
    const q = this.queue;
    const out = q.datagram;
    const seq = this.seq;
    out[0] = DATAGRAM_VERSION << 4;
    out[1] = seq >>> 8;
    out[2] = seq & 0xff;
    out[HEADER_BYTES] = frame.length;
    out.set(frame, HEADER_BYTES + 1);
    // Staged for a resend if it must survive a failure (reliableTag), as pack would have.
    if ((tag & CRITICAL) !== 0) {
      const at = q.capacityBytes + RESEND_OFFSET;
      q.mem[at] = frame.length;
      q.mem.set(frame, at + 1);
      q.staged = 1 + frame.length;
    } else q.staged = 0;
    this.committed = COMMITTED_PLAIN;
    this.committedGen = 0;
    this.committedSeq = seq;
    this.seq = (seq + 1) & SEQ_MASK;
    return seq;
  }

  /** Consumes what the last pack took; returns the sequence number that datagram carries. */
  commit(): number {
    const r = this.pTaken;
    if (r < 0) {
      this.pTaken = 0;
      const isEstop = r === -RESEND_ESTOP;
      const w = isEstop ? W_ESTOP : W_PLAIN;
      const seq = this.word(w, W_SEQ);
      this.committedGen = this.word(w, W_GEN);
      // Owed no more (its number and attempt stand).
      this.setResend(w, 0, seq, this.committedGen);
      this.committedSeq = seq;
      // Every frame of a resend is one that must survive (only those were kept for it).
      this.committed = isEstop ? COMMITTED_ESTOP : COMMITTED_RESEND;
      this.rehot();
      return seq;
    }
    if (r > 0) {
      for (let i = 0; i < r; i++) this.estops.shift();
      this.pTaken = 0;
      this.rehot();
    }
    // The ESTOP frames of an ESTOP datagram survive; of the queue's frames, those pack staged.
    return this.commitQueued(r > 0 ? COMMITTED_ESTOP : COMMITTED_PLAIN);
  }

  /**
   * @internal commit of a datagram of ESTOP frames or of the queue's (`committed` says which):
   * the queue's frames packed are consumed and the stream's next number taken. The binding's
   * scheduler calls it after a plain pack, which leaves nothing else to consume.
   */
  commitQueued(committed: number): number {
    this.committed = committed;
    const q = this.queue;
    const pf = q.packed;
    if (pf > 0) {
      q.packed = 0;
      q.shift(pf);
    }
    this.committedGen = 0;
    const seq = this.seq;
    this.committedSeq = seq;
    this.seq = (seq + 1) & SEQ_MASK;
    return seq;
  }

  /**
   * Every MAC retry of the last committed datagram (bytes [start, end) of `datagram`, its frames)
   * failed, though the peer may have it (only the acknowledgement lost): its ESTOP frames and the
   * frames its tags marked reliable are owed a resend under that datagram's number, up to
   * RETRANSMIT_LIMIT more attempts. Everything else is gone: a late sample is worse than a
   * missing one (§10.4).
   */
  failed(datagram: Uint8Array, start: number, end: number): void {
    const gen = this.committedGen + 1;
    const mem = this.queue.mem;
    const dg = this.queue.capacityBytes;
    // Which frames survive comes from what pack and commit took, never from the frames' bytes.
    const committed = this.committed;
    if (committed === COMMITTED_PLAIN) {
      // Queued frames (or one sent direct): those that must survive were staged as it was built.
      const n = this.queue.staged;
      if (n === 0) return;
      if (gen > RETRANSMIT_LIMIT) {
        const at = dg + RESEND_OFFSET;
        for (let q = at; q < at + n; q += 1 + (mem[q] as number)) this.abandoned++;
        return;
      }
      this.setResend(W_PLAIN, n, this.committedSeq, gen);
      this.hot = true;
      return;
    }
    // ESTOP frames, or a resend's: every frame survives.
    let into = -1;
    let at = 0;
    let p = start;
    const isEstop = committed === COMMITTED_ESTOP;
    const owedAt = dg + OWED_OFFSET;
    while (p < end) {
      const len = datagram[p] as number;
      const fs = p + 1;
      const fe = fs + len;
      p = fe;
      if (len === 0 || fe > end) break;
      if (gen > RETRANSMIT_LIMIT) {
        this.abandoned++;
        if (isEstop) {
          for (let j = 0; j < ESTOP_FRAME_BYTES; j++) mem[owedAt + j] = datagram[fs + j] as number;
          this.owedEstop = true;
        }
        continue;
      }
      // An ESTOP datagram holds nothing else (pack), so its first frame says which resend it is.
      if (into < 0) into = dg + (isEstop ? ESTOP_RESEND_OFFSET : RESEND_OFFSET);
      if (at + 1 + len > (isEstop ? ESTOP_RESEND_BYTES : RESEND_BYTES)) {
        this.abandoned++;
        continue;
      }
      for (let j = fs - 1; j < fe; j++) mem[into + at++] = datagram[j] as number;
    }
    if (into < 0 || at === 0) return;
    this.setResend(isEstop ? W_ESTOP : W_PLAIN, at, this.committedSeq, gen);
    this.hot = true;
  }

  /**
   * The peer was heard: an ESTOP it is owed (its resends all failed, nothing newer written
   * since) goes ahead again. Returns whether one did.
   */
  takeOwedEstop(): boolean {
    if (!this.owedEstop) return false;
    // writeAhead, from the queue's own memory.
    this.owedEstop = false;
    const dropped = this.estops.dropped;
    this.estops.writeFrom(this.queue.capacityBytes + OWED_OFFSET, ESTOP_FRAME_BYTES);
    this.abandoned += this.estops.dropped - dropped;
    this.estopsReowed++;
    this.hot = true;
    return true;
  }

  // A failed ESTOP datagram goes before everything; any other after the ESTOP frames waiting.
  private nextResend(): number {
    if (this.owes(W_ESTOP)) return RESEND_ESTOP;
    return this.estops.count === 0 && this.owes(W_PLAIN) ? RESEND_PLAIN : 0;
  }

  clear(): void {
    this.queue.clear();
    this.owedEstop = false;
    this.estops.clear();
    const q = this.queue;
    q.lens[q.capacityFrames + W_ESTOP + W_BYTES] = q.lens[q.capacityFrames + W_PLAIN + W_BYTES] = 0;
    this.pTaken = 0;
    this.hot = false;
  }
}

/** Where an Egress's tail bytes (its owner's) start in its queue's buffer (`queue.mem.buffer`). */
export function egressTailAt(queueBytes: number, queueFrames: number, extraWords: number): number {
  return queueTailAt(queueBytes, queueFrames, EGRESS_ROOM, RESEND_WORDS + extraWords);
}

const NO_HEADER = Object.freeze(new Uint8Array(0)) as Uint8Array;

/**
 * The sequence numbers one stream's receiver got lately (§13.3.3): a datagram whose number arrived
 * within DUPLICATE_WINDOW_MS is a resend of one already delivered, and is dropped whole. Exact
 * 16-bit numbers in DUPLICATE_SLOTS slots (by number mod 32), so the wrap at 65536 needs nothing
 * special; time tells a resend from a stream that started over at 0.
 */
/** The bytes one SeqWindow keeps (a multiple of 8). */
export const SEQ_WINDOW_BYTES = DUPLICATE_SLOTS * 10;

export class SeqWindow {
  // Each slot's number and when it arrived (−∞: nothing yet, which no time is within the window
  // of), in one buffer.
  private readonly at: Float64Array;
  private readonly seqs: Uint16Array;

  /** `buffer`, `byteOffset`: where its SEQ_WINDOW_BYTES live (8-aligned), in its owner's buffer; else its own. */
  constructor(buffer?: ArrayBuffer, byteOffset = 0) {
    if (buffer !== undefined && !(byteOffset % 8 === 0 && byteOffset >= 0 && byteOffset + SEQ_WINDOW_BYTES <= buffer.byteLength)) throw new RangeError('SeqWindow: its bytes lie outside the buffer');
    const b = buffer ?? new ArrayBuffer(SEQ_WINDOW_BYTES);
    const o = buffer !== undefined ? byteOffset : 0;
    this.at = new Float64Array(b, o, DUPLICATE_SLOTS);
    this.seqs = new Uint16Array(b, o + DUPLICATE_SLOTS * 8, DUPLICATE_SLOTS);
    this.at.fill(-Infinity);
  }

  /** Records datagram `seq` received at `now`; true when it is a duplicate (drop it). */
  seen(seq: number, now: number): boolean {
    return seqSeen(this.at, 0, this.seqs, 0, seq, now);
  }

  reset(): void {
    this.at.fill(-Infinity);
  }
}

/**
 * SeqWindow.seen over a window kept elsewhere: its arrival times from `at[atAt]` (DUPLICATE_SLOTS
 * of them, −∞ at first) and its numbers from `seqs[seqsAt]`, so that an owner with other numbers
 * of its own keeps the window in its views instead of an object. True when `seq` is a duplicate.
 */
export function seqSeen(at: Float64Array, atAt: number, seqs: Uint16Array, seqsAt: number, seq: number, now: number): boolean {
  const s = seq & SEQ_MASK;
  const i = s & (DUPLICATE_SLOTS - 1);
  const k = atAt + i;
  const dup = seqs[seqsAt + i] === s && now - (at[k] as number) <= DUPLICATE_WINDOW_MS;
  seqs[seqsAt + i] = s;
  at[k] = now;
  return dup;
}

/**
 * The receiving side of §13.3: which of the last 32 datagrams of one stream arrived, as the ACK
 * frame reports it. `base` is the newest sequence number received; bit i of `bitmap` is set ⇔
 * datagram (base − i) mod 65536 was received (bit 0 is base itself). A number more than 32 behind
 * the newest is taken for a sender that started over, not for a very late datagram: ESP-NOW
 * delivers in order, and a restarted hub link numbers from 0.
 */
export class AckTracker {
  base = 0;
  bitmap = 0;
  /** Datagrams recorded since the last take(). */
  fresh = 0;
  private started = false;

  record(seq: number): void {
    const s = seq & SEQ_MASK;
    this.fresh++;
    if (!this.started) {
      this.started = true;
      this.base = s;
      this.bitmap = 1;
      return;
    }
    const d = (s - this.base) & SEQ_MASK;
    if (d === 0) {
      this.bitmap = (this.bitmap | 1) >>> 0;
    } else if (d < 0x8000) {
      this.bitmap = d >= ACK_BITS ? 1 : ((this.bitmap << d) | 1) >>> 0;
      this.base = s;
    } else {
      const back = (this.base - s) & SEQ_MASK;
      if (back < ACK_BITS) this.bitmap = (this.bitmap | (1 << back)) >>> 0;
      else {
        // Far behind the newest: the sender started over (a new link numbers from 0 again).
        this.base = s;
        this.bitmap = 1;
      }
    }
  }

  /** Whether anything was ever received (an ACK before that would acknowledge nothing). */
  get any(): boolean {
    return this.started;
  }

  /** Marks the current state as reported. */
  take(): void {
    this.fresh = 0;
  }

  reset(): void {
    this.started = false;
    this.base = this.bitmap = this.fresh = 0;
  }
}

/** Encodes ACK {0: 12, 29: ack_base, 30: ack_bitmap} (§5.12) exactly as encodeFrame does. */
export function encodeBitmapAck(w: CborWriter, base: number, bitmap: number): void {
  w.map(3);
  w.uint(Key.TYPE);
  w.uint(FrameType.ACK);
  w.uint(Key.ACK_BASE);
  w.uint(base & SEQ_MASK);
  w.uint(Key.ACK_BITMAP);
  w.uint(bitmap >>> 0);
}

/**
 * A bitmap ACK read by parseBitmapAck, into an object its caller owns (the binding keeps one), so
 * that reading one allocates nothing and the module keeps no state of its own (preloaded, a
 * module-level object would stay in RAM unfrozen; docs/performance.md).
 */
export class BitmapAck {
  base = 0;
  bitmap = 0;
  /** Where the last unsigned integer head read ended (readUint). */
  at = 0;
}

/**
 * Reads a CBOR unsigned integer head at buf[pos] without allocating: the value, or −1 when the
 * byte there is no unsigned integer of at most 32 bits within `end`. Where the head ended goes
 * to `into.at`.
 */
export function readUint(buf: Uint8Array, pos: number, end: number, into: BitmapAck): number {
  if (pos >= end) return -1;
  const h = buf[pos] as number;
  if (h >> 5 !== 0) return -1;
  const ai = h & 0x1f;
  if (ai < 24) {
    into.at = pos + 1;
    return ai;
  }
  if (ai === 24) {
    if (pos + 2 > end) return -1;
    into.at = pos + 2;
    return buf[pos + 1] as number;
  }
  if (ai === 25) {
    if (pos + 3 > end) return -1;
    into.at = pos + 3;
    return ((buf[pos + 1] as number) << 8) | (buf[pos + 2] as number);
  }
  if (ai === 26) {
    if (pos + 5 > end) return -1;
    into.at = pos + 5;
    return (((buf[pos + 1] as number) << 24) | ((buf[pos + 2] as number) << 16) | ((buf[pos + 3] as number) << 8) | (buf[pos + 4] as number)) >>> 0;
  }
  return -1;
}

/**
 * Recognises the canonical bitmap ACK {0: 12, 29: base, 30: bitmap} in buf[start, end) without
 * allocating (results in `into`; untouched when false). Anything else, including a valid ACK in
 * another form, returns false and goes to the core's full decoder.
 */
export function parseBitmapAck(buf: Uint8Array, start: number, end: number, into: BitmapAck): boolean {
  if (end - start < 7 || buf[start] !== 0xa3 || buf[start + 1] !== KEY_TYPE || buf[start + 2] !== TYPE_ACK) return false;
  // Every ESP-NOW ACK takes this path: the form encodeBitmapAck writes (the keys' one-byte heads,
  // each number in its shortest head) is read inline; anything else the long way below, which
  // reads the same numbers from the same bytes (and refuses what this does not take).
  if (buf[start + 3] === 0x18 && buf[start + 4] === KEY_ACK_BASE) {
    let p = start + 5;
    let h = buf[p] as number;
    let base = -1;
    if (h < 24) {
      base = h;
      p++;
    } else if (h === 24) {
      base = buf[p + 1] as number;
      p += 2;
    } else if (h === 25) {
      base = ((buf[p + 1] as number) << 8) | (buf[p + 2] as number);
      p += 3;
    }
    // The bitmap key, then a head that ends the frame exactly.
    if (base >= 0 && buf[p] === 0x18 && buf[p + 1] === KEY_ACK_BITMAP) {
      p += 2;
      h = buf[p] as number;
      const left = end - p;
      let bitmap = -1;
      if (h === 26) {
        if (left === 5) bitmap = (((buf[p + 1] as number) << 24) | ((buf[p + 2] as number) << 16) | ((buf[p + 3] as number) << 8) | (buf[p + 4] as number)) >>> 0;
      } else if (h < 24) {
        if (left === 1) bitmap = h;
      } else if (h === 25) {
        if (left === 3) bitmap = ((buf[p + 1] as number) << 8) | (buf[p + 2] as number);
      } else if (h === 24 && left === 2) bitmap = buf[p + 1] as number;
      if (bitmap >= 0) {
        into.base = base;
        into.bitmap = bitmap;
        return true;
      }
    }
  }
  if (readUint(buf, start + 3, end, into) !== Key.ACK_BASE) return false;
  const base = readUint(buf, into.at, end, into);
  if (base < 0 || base > SEQ_MASK) return false;
  if (readUint(buf, into.at, end, into) !== Key.ACK_BITMAP) return false;
  const bitmap = readUint(buf, into.at, end, into);
  if (bitmap < 0 || into.at !== end) return false;
  into.base = base;
  into.bitmap = bitmap;
  return true;
}
