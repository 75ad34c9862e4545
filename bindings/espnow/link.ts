// The ESP-NOW binding (§13.3; docs/_espnow.md): one Link per peer over one radio, the same code
// on the device (device.ts: the native esp_now module) and in the simulator (sim.ts).
//
// - Frames queued for a peer are packed into its next datagram (≤ 250 bytes, datagram.ts); the
//   12-byte ESTOP frame goes ahead of everything queued (§10.4, §11.2).
// - One datagram in flight on the radio: the next is packed when the radio reports the send
//   status of the last (ESP-NOW answers a faster sender with ESP_ERR_ESPNOW_NO_MEM). ESTOP and
//   owed retransmissions are served before plain traffic; plain traffic round-robin by stream.
//   A frame handed over while nothing waits anywhere and the radio is free is that next datagram
//   whatever the order: it goes out at once, packed straight from the core's buffer.
// - Congestion (§10.3): the loss rate from the radio's send status and the peer's ACK bitmask
//   (§13.3) through a LossDetector, per peer and, on a broadcast segment, per peer for the
//   broadcast stream too; plus the egress queue's watermark (ours: a radio that cannot carry the
//   offered load loses nothing, it only falls behind, which no loss signal shows).
// - Broadcast segments (§10.6): broadcast.ts decides which DATA goes on air once for all.
// - Nothing is done for nothing: a tick before any detector is due (their `quietUntil`) with no
//   link's level moved costs a few comparisons, and a link's level is judged again only once a
//   detector it reads has moved away from it.
//
// Platform-free: the radio, the clock and the core's attach come in through EspNowOptions.

import { Tier } from '../../catalog/schema.js';
import { ESTOP_MAGIC } from '../../hub/estop-frame.js';
import { RECOVERED_WATERMARK } from '../../hub/constants.js';
import { AckForm, Tag, type Clock, type GrantSet, type Link, type LinkCaps, type LinkEstimate, type LinkSink } from '../../hub/ports.js';
import { LOSS_BYTES, LOSS_NUMBERS, LossDetector, WatermarkDetector } from '../detector.js';
import { ownValue } from '../link.js';
import { BroadcastSegment, Route } from './broadcast.js';
import {
  DatagramCursor,
  DatagramFlag,
  DEFAULT_QUEUE_BYTES,
  DEFAULT_QUEUE_FRAMES,
  DATAGRAM_MAX_BYTES,
  DATAGRAM_VERSION,
  Egress,
  ESTOP_SLOTS,
  HEADER_BYTES,
  MAX_DATAGRAM_FRAME,
  BitmapAck,
  DUPLICATE_SLOTS,
  DUPLICATE_WINDOW_MS,
  EGRESS_WORDS,
  egressTailAt,
  parseBitmapAck,
  PLAIN_STAGE_OFFSET,
  COMMITTED_PLAIN,
  seqSeen,
} from './datagram.js';
import { PairingTable, type EspNowPairing } from './pairing.js';

/** ESP_NOW_MAX_TOTAL_PEER_NUM: the radio's peer table, the broadcast address included. */
/** Closed peers whose next datagram sequence the binding remembers (twice the ESP-NOW peer limit). */
const MAX_REMEMBERED_PEERS = 40;

export const ESPNOW_MAX_PEERS = 20;
/** Peer slots a binding can have: one bit each in the scheduler's masks, the broadcast stream's after them. */
const MAX_SLOTS = 30;
/**
 * Encrypted peers the radio holds (CONFIG_ESP_WIFI_ESPNOW_MAX_ENCRYPT_NUM, default 7 in the
 * sdkconfig, at most 17: pairing.ts ESPNOW_MAX_ENCRYPTED_LIMIT; older headers name 6 as
 * ESP_NOW_MAX_ENCRYPT_PEER_NUM).
 */
export const ESPNOW_MAX_ENCRYPTED_PEERS = 7;
/** The broadcast address FF:FF:FF:FF:FF:FF as a 48-bit number (MACs are numbers here). */
export const BROADCAST_MAC = 0xffffffffffff;
/** Byte 0 of a plain datagram: version 1, no flags. */
const DATAGRAM_HEADER_BYTE = DATAGRAM_VERSION << 4;
/** The tag bit of a frame that must survive a failed send (datagram.ts reliableTag). */
const CRITICAL = Tag.CRITICAL;
/** Egress queue per peer (datagram.ts): about four full datagrams, 12 ms of air at 1 Mbps. Late is worse than lost (§10.4). */
export { DEFAULT_QUEUE_BYTES, DEFAULT_QUEUE_FRAMES };
/**
 * A peer sends something (at least a keepalive ACK, docs/_espnow.md) every second; silence for
 * this long is a lost transport (§6.6): ESP-NOW has no connection whose end would say so.
 */
export const PEER_SILENCE_MS = 3000;
/** Smoothing of the send-status latency that stands for the round-trip time (1/8, as TCP's SRTT). */
const RTT_GAIN = 0.125;
/** Delivered bytes are counted over 1 s in 100 ms buckets. */
const METER_BUCKETS = 10;
const METER_BUCKET_MS = 100;

/** What the radio answers a request with (device.ts maps esp_err_t onto these). */
export const RadioStatus = Object.freeze({
  OK: 0,
  /** A datagram is still in flight. */
  BUSY: 1,
  NOT_FOUND: 2,
  /** The peer table is full (ESP_ERR_ESPNOW_FULL): 20 peers, about 7 encrypted. */
  FULL: 3,
  TOO_LONG: 4,
  /** ESP_ERR_ESPNOW_NO_MEM: the radio's own queue is full; try again later. */
  NO_MEM: 5,
  EXISTS: 6,
  ERROR: 7,
} as const);

// The statuses the scheduler tells apart, as plain numbers.
const OK = RadioStatus.OK;
const BUSY = RadioStatus.BUSY;
const NOT_FOUND = RadioStatus.NOT_FOUND;
const NO_MEM = RadioStatus.NO_MEM;
const EXISTS = RadioStatus.EXISTS;

/** The radio's events. On the device they arrive from the Wi-Fi task through the native ring. */
export interface RadioHandler {
  /** The send status of the datagram in flight: for unicast the MAC acknowledged it (after its retries); broadcast always reports true. */
  sent(mac: number, ok: boolean): void;
  /** A datagram from `mac`; `data` is only valid during the call. */
  received(mac: number, data: Uint8Array, length: number): void;
}

/** The ESP-NOW radio as the binding drives it: esp_now_* with one datagram in flight. */
export interface Radio {
  setHandler(handler: RadioHandler): void;
  /**
   * Adds `mac` to the radio's peer table: encrypted with `lmk` (16 bytes, copied), or unencrypted
   * when it is null. A station's encrypted frames decrypt only while it is in the table so.
   */
  addPeer(mac: number, lmk: Uint8Array | null): number;
  removePeer(mac: number): number;
  /** Starts one datagram; RadioStatus.OK or the reason it was refused. */
  send(mac: number, data: Uint8Array, length: number): number;
}

export interface EspNowOptions {
  readonly clock: Clock;
  readonly radio: Radio;
  /** Hands a new peer's link to the core and returns where its frames go (Hub.attach). */
  readonly attach: (link: Link) => LinkSink;
  /** This binding is one broadcast segment (§10.6). */
  readonly broadcast?: boolean;
  /** The radio's peer table size, the broadcast address included (default 20; at most 30 peer slots besides it). */
  readonly maxPeers?: number;
  readonly queueBytes?: number;
  readonly queueFrames?: number;
  readonly silenceMs?: number;
  /**
   * The paired stations (docs/security.md "ESP-NOW"): each in the radio's table, encrypted with
   * its key, from the start; more can be paired later (`pair`).
   */
  readonly peers?: readonly EspNowPairing[];
  /**
   * Whether a station that is not paired may speak to the hub at all, unencrypted and at
   * observer tier at most (default false: its datagrams are ignored and counted, and only an
   * ESTOP frame among them goes on, to `strayEstop`).
   */
  readonly allowUnencrypted?: boolean;
  /** Encrypted peers the radio holds (CONFIG_ESP_WIFI_ESPNOW_MAX_ENCRYPT_NUM; default 7, at most 17). */
  readonly maxEncrypted?: number;
  /**
   * Where an ESTOP frame from a station the binding admits no link for goes (Hub.estopFrame): a
   * stop is never refused for want of a link (§11.2). Nothing is sent back to the station.
   */
  readonly strayEstop?: (bytes: Uint8Array, start: number, end: number) => void;
}

export class EspNowCounters {
  datagramsSent = 0;
  datagramsFailed = 0;
  broadcastDatagrams = 0;
  datagramsReceived = 0;
  /** Received datagrams the cursor refused (bad version, flags or lengths). */
  malformed = 0;
  /** Received datagrams dropped as resends of one already delivered (§13.3.3). */
  duplicates = 0;
  /** New peers refused: the peer table or the radio's was full. */
  refusedPeers = 0;
  /**
   * Datagrams from stations neither paired nor allowed unencrypted: ignored, never answered
   * (docs/security.md). An ESTOP frame among them still reaches the hub (`strayEstops`).
   */
  unpaired = 0;
  /** ESTOP frames from such stations handed to EspNowOptions.strayEstop. */
  strayEstops = 0;
  /** Pairings the radio refused (its encrypted peers full, or no key accepted). */
  refusedPairings = 0;
  /** Frames a full egress queue refused (the core asks canSend first: this stays 0 unless misused). */
  queueDrops = 0;
  /** Sends the radio refused for want of memory; retried on the next tick. */
  radioNoMem = 0;
  /** Datagrams abandoned because the radio refused them outright. */
  radioRefused = 0;
  /** Peers closed after PEER_SILENCE_MS of silence. */
  silentPeers = 0;
}

/** A stream's queue watermark: bytes queued ÷ capacity. */
function fill(e: Egress): number {
  return e.queue.bytes / e.queue.capacityBytes;
}

/** What every link of a binding can do: one object per binding, not per link. */
function capsOf(broadcast: boolean): LinkCaps {
  return Object.freeze({ binding: 'espnow', broadcast, datagram: true, mtu: MAX_DATAGRAM_FRAME, writeAheadSlots: ESTOP_SLOTS, ackForm: AckForm.BITMAP });
}

// A link's numbers besides its detectors', in its unicast loss detector's view of numbers after
// the detector's own (LOSS_NUMBERS; on XS every object, field and view costs heap slots): its
// duplicate window's arrival times, the delivered bytes by 100 ms bucket (each bucket's number,
// −∞: none yet, then its bytes), then single numbers. The window's sequence numbers are words
// of its egress queue.
const COL_INBOUND = LOSS_NUMBERS;
const COL_METER = COL_INBOUND + DUPLICATE_SLOTS;
const COL_RTT = COL_METER + 2 * METER_BUCKETS;
const COL_THROUGHPUT = COL_RTT + 1;
const COL_LAST_HEARD = COL_THROUGHPUT + 1;
const COL_OPENED_AT_TICK = COL_LAST_HEARD + 1;
const COL_CEILING = COL_OPENED_AT_TICK + 1;
const COLS = COL_CEILING + 1 - LOSS_NUMBERS;
/** The bytes of a link's numbers (a multiple of 8). */
const COLS_BYTES = COLS * 8;

/** `n` bytes delivered at `now`, into the meter of a link's columns `c`. */
function meterAdd(c: Float64Array, n: number, now: number): void {
  const id = Math.floor(now / METER_BUCKET_MS);
  const b = COL_METER + (id % METER_BUCKETS);
  if (c[b] !== id) {
    if ((c[b] as number) > id) return;
    c[b] = id;
    c[b + METER_BUCKETS] = 0;
  }
  c[b + METER_BUCKETS] = (c[b + METER_BUCKETS] as number) + n;
}

/** Bytes per second delivered over the last second as of `now`, from the meter of a link's columns `c`. */
function meterPerSecond(c: Float64Array, now: number): number {
  const newest = Math.floor(now / METER_BUCKET_MS);
  let sum = 0;
  for (let b = COL_METER; b < COL_METER + METER_BUCKETS; b++) {
    const id = c[b] as number;
    if (id > newest - METER_BUCKETS && id <= newest) sum += c[b + METER_BUCKETS] as number;
  }
  return (sum * 1000) / (METER_BUCKETS * METER_BUCKET_MS);
}

/**
 * One peer: the Link the core sees. It is its own LinkEstimate: `estimate` brings
 * `throughputBps` up to date and returns the link (`rttMs` is kept as send statuses come).
 */
export class EspNowLink implements Link, LinkEstimate {
  readonly mac: number;
  /** Its slot in the binding's peer table (and the broadcast segment's peer index). */
  readonly index: number;
  readonly egress: Egress;
  /** §10.3 loss rate of the unicast stream (send status + ACK bitmask, §13.3). */
  readonly loss: LossDetector;
  /**
   * Loss of the segment's broadcast stream as this peer acknowledges it; null off a segment (the
   * prototype's: an own property only on a segment, as on XS every property costs a heap slot).
   */
  declare readonly broadcastLoss: LossDetector | null;
  /** The egress queue's watermark. */
  readonly queueLevel: WatermarkDetector;
  /** @internal When the radio last took from the queue, or a backlog began in it (Link.stalledMs). */
  movedAt: number;
  /**
   * @internal Its numbers (COL_*: its loss detector's view of numbers), and the view in which its
   * duplicate window's sequence numbers (§13.3.3) lie from the binding's `seqsAt` (its egress
   * queue's words).
   */
  readonly cols: Float64Array;
  readonly inboundSeqs: Uint16Array;
  sink: LinkSink | null = null;
  closed = false;
  /** @internal The judged level. */
  lvl = 0;
  /**
   * @internal A detector's level moved away from `lvl` since the last judgement (the binding
   * sets it as it feeds them): only then can a judgement find anything new.
   */
  dirty = false;
  // The last instant the level was asked for (a tick since the link opened stands for one at its
  // instant): a field, as the core asks at every delivery.
  private judgedAt = -Infinity;
  private readonly owner: EspNowBinding;

  constructor(owner: EspNowBinding, index: number, mac: number, queueBytes: number, queueFrames: number, now: number, ceiling: number = Tier.observer) {
    this.owner = owner;
    this.index = index;
    this.mac = mac;
    // The egress queue's buffer holds everything of the link's (on XS every buffer and view
    // costs heap slots of its own): the duplicate window's numbers in words after the frames'
    // lengths, and after the queue [loss with the columns | broadcast loss].
    const broadcast = owner.caps.broadcast;
    const lossBytes = broadcast ? 2 * LOSS_BYTES : LOSS_BYTES;
    const e = new Egress(queueBytes, queueFrames, DUPLICATE_SLOTS, lossBytes + COLS_BYTES);
    this.egress = e;
    const buffer = e.queue.mem.buffer as ArrayBuffer;
    const at = egressTailAt(queueBytes, queueFrames, DUPLICATE_SLOTS);
    const loss = new LossDetector(now, undefined, buffer, at, COLS);
    this.loss = loss;
    if (broadcast) ownValue(this, 'broadcastLoss', new LossDetector(now, undefined, buffer, at + LOSS_BYTES + COLS_BYTES));
    const c = loss.numbers;
    this.cols = c;
    this.inboundSeqs = e.queue.lens;
    c.fill(-Infinity, COL_INBOUND, COL_INBOUND + DUPLICATE_SLOTS);
    c.fill(-Infinity, COL_METER, COL_METER + METER_BUCKETS);
    c[COL_LAST_HEARD] = now;
    c[COL_OPENED_AT_TICK] = owner.ticks;
    c[COL_CEILING] = ceiling;
    this.queueLevel = new WatermarkDetector(now);
    this.movedAt = now;
  }

  /** What every link of the binding can do (one object for all of them). */
  get caps(): LinkCaps {
    return this.owner.caps;
  }

  /** The send-status latency smoothed (RTT_GAIN): the estimate's round trip. */
  get rttMs(): number {
    return this.cols[COL_RTT] as number;
  }

  /** Bytes per second delivered over the last second, as of the last `estimate`. */
  get throughputBps(): number {
    return this.cols[COL_THROUGHPUT] as number;
  }

  /** When the peer was last heard. */
  get lastHeard(): number {
    return this.cols[COL_LAST_HEARD] as number;
  }

  get binding(): string {
    return this.caps.binding;
  }

  /** Whether the link is a peer of a broadcast segment (§10.6). */
  get broadcast(): boolean {
    return this.caps.broadcast;
  }

  get mtu(): number {
    return this.caps.mtu;
  }

  /** Whether a frame of `length` bytes would be queued now (for tests and tools; the core just sends). */
  canSend(length: number): boolean {
    return !this.closed && length <= MAX_DATAGRAM_FRAME && this.egress.queue.canPush(length) && this.owner.broadcastRoom(length, false);
  }

  /**
   * A frame the core hands the link (true when it was taken). With every stream idle and the
   * radio free, the frame is the next datagram whatever the order of service: it goes out
   * straight from the caller's buffer, as the scheduler would have sent it had it been queued
   * first (the watermark sees it queued and taken). Otherwise it joins the queue, or (§13.5.5) is
   * turned away, which reads as a full queue: the room found once, as the binding's route does.
   */
  send(frame: Uint8Array, tag: number, seq: number): boolean {
    const length = frame.length;
    if (this.closed || length > MAX_DATAGRAM_FRAME) return false;
    const o = this.owner;
    if (o.segment !== null) return o.offerSegment(this, frame, tag, seq);
    const e = this.egress;
    const q = e.queue;
    if (o.dry && !o.txBusy && !o.radioWait && length > 0 && length <= q.capacityBytes && q.capacityFrames > 0) return o.direct(this, frame, tag);
    const now = o.clock.now();
    if (q.nFrames === 0 && !e.hot && e.committed === COMMITTED_PLAIN && length > 0 && length <= q.capacityBytes && q.capacityFrames !== 0) {
      // FrameQueue.pushPacked, inline: into an empty queue of a stream whose datagram area is
      // free (its datagram in the air, if any, plain), the frame is written where packing its
      // datagram would copy it to.
      q.mem[q.capacityBytes + HEADER_BYTES] = length;
      q.mem.set(frame, q.capacityBytes + HEADER_BYTES + 1);
      q.head = 0;
      q.lens[0] = length;
      q.tags[0] = tag;
      q.nFrames = 1;
      q.nBytes = length;
      q.tail = length;
      q.pre = true;
      this.movedAt = now;
      o.queuedMask |= 1 << this.index;
    } else {
      const empty = q.nBytes === 0;
      if (!q.push(frame, tag)) {
        const ql = this.queueLevel;
        ql.refused(now);
        o.fed(this, ql.level(), ql.quietUntil);
        return false;
      }
      if (empty) {
        this.movedAt = now;
        o.queuedMask |= 1 << this.index;
      }
    }
    // fed(), inline. A queue below the recovery threshold, before and after, before the
    // watermark's next deadline, meets the conditions it last judged: it is not told.
    const r = q.nBytes / q.capacityBytes;
    const ql = this.queueLevel;
    if (!(r < RECOVERED_WATERMARK && ql.queue < RECOVERED_WATERMARK && now < ql.quietUntil)) {
      if (ql.queued(r, now) !== this.lvl) {
        this.dirty = true;
        o.wakeAt = -Infinity;
      } else if (ql.quietUntil < o.wakeAt) o.wakeAt = ql.quietUntil;
    }
    o.dry = false;
    if (!o.txBusy && !o.radioWait) o.pump();
    return true;
  }

  /** ESP-NOW peers acknowledge by bitmap (§13.3), which the binding reads itself: a stream ACK says nothing here. */
  acked(_count: number): void {}

  /** On a broadcast segment the grants set the channels' effective rates (§10.6). */
  granted(grants: GrantSet): void {
    const seg = this.owner.segment;
    if (seg && !this.closed) seg.granted(this.index, grants);
  }

  ackLag(): number {
    return NaN;
  }

  lossRate(): number {
    return this.loss.ratio();
  }

  writeAhead(frame: Uint8Array): void {
    if (this.closed) return;
    this.egress.writeAhead(frame);
    this.owner.work();
  }

  /**
   * The §10.3 level: the worst of the loss rates and the queues' watermarks, judged once per
   * instant (a tick judges at its own). A detector's level changes only as the binding feeds or
   * ticks it, which marks the link `dirty` when it moves away from the judged one: a link that is
   * not dirty would judge what it holds.
   */
  get level(): number {
    const owner = this.owner;
    const now = owner.clock.now();
    if (now !== this.judgedAt && (now !== owner.tickedAt || owner.ticks === this.cols[COL_OPENED_AT_TICK])) {
      this.judgedAt = now;
      if (this.dirty) this.judge();
    }
    return this.lvl;
  }

  /** @internal Judges the level from the detectors as they stand; a new one is reported to the core. */
  judge(): void {
    this.dirty = false;
    let l = this.loss.level();
    const bl = this.broadcastLoss;
    if (bl !== null) {
      const b = bl.level();
      if (b > l) l = b;
    }
    const q = this.queueLevel.level();
    if (q > l) l = q;
    const s = this.owner.broadcastLevel;
    if (s > l) l = s;
    if (l !== this.lvl) {
      this.lvl = l;
      if (this.sink) this.sink.levelChanged();
    }
  }

  estimate(): LinkEstimate {
    const c = this.cols;
    c[COL_THROUGHPUT] = meterPerSecond(c, this.owner.now());
    return this;
  }

  occupancy(): number {
    return this.egress.queue.bytes / this.egress.queue.capacityBytes;
  }

  stalledMs(): number {
    if (this.egress.queue.bytes === 0) return 0;
    const d = this.owner.now() - this.movedAt;
    return d > 0 ? d : 0;
  }

  /** Fixed for the link's life: the key the station was admitted with decides it (docs/security.md). */
  tierCeiling(): number {
    return this.cols[COL_CEILING] as number;
  }

  close(): void {
    if (this.closed) return;
    this.owner.detach(this);
  }

  /** @internal frames joined the queue. */
  queued(now: number): void {
    const ql = this.queueLevel;
    ql.queued(this.occupancy(), now);
    this.owner.fed(this, ql.level(), ql.quietUntil);
  }
}

Object.assign(EspNowLink.prototype, { broadcastLoss: null });

/**
 * The binding: the peer table, the broadcast stream of a segment, the one-in-flight scheduler
 * and the radio's events. Call `tick` at least every hub tick.
 */
export class EspNowBinding implements RadioHandler {
  readonly counters = new EspNowCounters();
  /** The §10.6 router of a broadcast segment, null on a unicast binding. */
  readonly segment: BroadcastSegment | null;
  /** @internal The broadcast queue's watermark level, part of every link's (0 on a unicast binding). */
  broadcastLevel = 0;
  /** @internal The instant of the last tick, which judged every link open then at it, and how many ticks so far. */
  tickedAt = -Infinity;
  ticks = 0;
  /** @internal */
  readonly clock: Clock;
  private readonly radio: Radio;
  private readonly attachFn: (link: Link) => LinkSink;
  /** The peer table's slots: a link takes the lowest one no open link holds. */
  private readonly slots: number;
  /** The open links, in slot order: what the scheduler and the tick walk. */
  private readonly open: EspNowLink[] = [];
  private readonly byMac = new Map<number, EspNowLink>();
  /**
   * The next datagram sequence of peers whose link was closed, so that a re-admitted peer's new
   * link carries on from there: starting again at 0 would reuse numbers the peer's duplicate
   * window (§13.3.3) still holds, and it would drop the new link's datagrams, an ESTOP among them.
   */
  private readonly nextSeqByMac = new Map<number, number>();
  private readonly queueBytes: number;
  private readonly queueFrames: number;
  // Where a link's duplicate window's numbers start in its `inboundSeqs`.
  private readonly seqsAt: number;
  private readonly silenceMs: number;
  /** The paired stations and their keys; their radio entries stay while they are paired. */
  private readonly pairings: PairingTable;
  private readonly allowUnencrypted: boolean;
  private readonly strayEstop: ((bytes: Uint8Array, start: number, end: number) => void) | null;
  /** @internal Every link's caps. */
  readonly caps: LinkCaps;
  /** The segment's broadcast stream and its queue's watermark; null on a unicast binding. */
  private readonly bcast: Egress | null;
  private readonly bcastLevel: WatermarkDetector | null;
  private readonly cursor = new DatagramCursor();
  /** The bitmap ACK last read (parseBitmapAck). */
  private readonly ack = new BitmapAck();
  // The one datagram in flight: its stream's datagram area holds it; its stream (a link, or the
  // broadcast stream), its length, when it left.
  private txLen = 0;
  /** @internal */
  txBusy = false;
  private txLink: EspNowLink | null = null;
  private txAt = 0;
  // The radio said BUSY or NO_MEM: wait for its next status or the next tick.
  /** @internal */
  radioWait = false;
  // The slot of the stream served last (the broadcast stream: the slot count).
  private rrAfter = -1;
  // Which streams wait, a bit per slot (the broadcast stream's is bit `slots`): with queued
  // frames, and urgent (an ESTOP or a resend owed). The scheduler picks the next stream in turn
  // from these in a few operations instead of asking every stream.
  /** @internal */
  queuedMask = 0;
  private urgentMask = 0;
  // Every stream was found with nothing waiting, and nothing has been queued, written ahead or
  // owed a resend since: the scheduler has nothing to look for, and a frame offered to a free
  // radio goes straight into a datagram of its own (EspNowLink.send).
  /** @internal */
  dry = true;
  // No open link was heard later than this: before silenceMs past it, no peer can be silent.
  private oldestHeard = Infinity;
  // Before this instant no detector is due for a tick and no link needs judging: the earliest
  // of their `quietUntil` as fed (an input can only bring one nearer), −∞ once a link is dirty.
  /** @internal */
  wakeAt = -Infinity;

  constructor(options: EspNowOptions) {
    this.clock = options.clock;
    this.radio = options.radio;
    this.attachFn = options.attach;
    this.queueBytes = options.queueBytes ?? DEFAULT_QUEUE_BYTES;
    this.queueFrames = options.queueFrames ?? DEFAULT_QUEUE_FRAMES;
    this.seqsAt = this.queueFrames + EGRESS_WORDS;
    this.silenceMs = options.silenceMs ?? PEER_SILENCE_MS;
    this.pairings = new PairingTable(options.maxEncrypted ?? ESPNOW_MAX_ENCRYPTED_PEERS);
    this.allowUnencrypted = options.allowUnencrypted === true;
    this.strayEstop = options.strayEstop ?? null;
    const broadcast = options.broadcast === true;
    this.caps = capsOf(broadcast);
    // The broadcast address takes one entry of the radio's peer table.
    const slots = (options.maxPeers ?? ESPNOW_MAX_PEERS) - (broadcast ? 1 : 0);
    // The scheduler's masks hold a bit per slot and one for the broadcast stream.
    if (slots > MAX_SLOTS) throw new RangeError(`ESP-NOW: ${slots} peer slots, at most ${MAX_SLOTS}`);
    this.slots = slots > 0 ? slots : 0;
    const now = this.clock.now();
    if (broadcast) {
      this.segment = new BroadcastSegment(slots);
      this.bcast = new Egress(this.queueBytes, this.queueFrames);
      this.bcastLevel = new WatermarkDetector(now);
      this.radio.addPeer(BROADCAST_MAC, null);
    } else {
      this.segment = null;
      this.bcast = null;
      this.bcastLevel = null;
    }
    this.radio.setHandler(this);
    const peers = options.peers ?? [];
    if (peers.length > this.pairings.capacity) throw new RangeError(`ESP-NOW: ${peers.length} paired peers, the radio holds ${this.pairings.capacity} encrypted`);
    for (let i = 0; i < peers.length; i++) this.pair(peers[i] as EspNowPairing);
  }

  /**
   * Pairs a station (docs/security.md "ESP-NOW"): its key goes into the radio's table now, so its
   * encrypted datagrams decrypt from the first; its links get its tier ceiling. A station paired
   * again gets the new key and ceiling (a link open now keeps the ceiling it was admitted with).
   * Returns a RadioStatus: FULL when the radio holds its most encrypted peers.
   */
  pair(p: EspNowPairing): number {
    const t = this.pairings;
    const known = t.has(p.mac);
    if (!t.set(p)) {
      this.counters.refusedPairings++;
      return RadioStatus.FULL;
    }
    const key = t.key(p.mac) as Uint8Array;
    // A station already in the table (paired before, or an unencrypted peer now paired) is
    // added again with its key.
    if (known || this.byMac.has(p.mac)) this.radio.removePeer(p.mac);
    const added = this.radio.addPeer(p.mac, key);
    if (added !== RadioStatus.OK && added !== RadioStatus.EXISTS) {
      t.delete(p.mac);
      this.counters.refusedPairings++;
      return added;
    }
    return RadioStatus.OK;
  }

  /**
   * Forgets a station's pairing: its link, if open, is closed (the core hears it lost) and its
   * radio entry removed. Returns false when it was not paired.
   */
  unpair(mac: number): boolean {
    if (!this.pairings.delete(mac)) return false;
    const link = this.byMac.get(mac);
    if (link) {
      const sink = link.sink;
      this.detach(link);
      if (sink) sink.lost();
    } else this.radio.removePeer(mac);
    return true;
  }

  /** Whether `mac` is paired. */
  paired(mac: number): boolean {
    return this.pairings.has(mac);
  }

  /** The stations paired now. */
  pairedPeers(): number[] {
    return this.pairings.list();
  }

  now(): number {
    return this.clock.now();
  }

  /** Links currently open, in slot order. */
  peers(): EspNowLink[] {
    return this.open.slice();
  }

  linkOf(mac: number): EspNowLink | undefined {
    return this.byMac.get(mac);
  }

  /** The broadcast stream's sequence number of its next datagram (for tests and health). */
  broadcastSeq(): number {
    return this.bcast ? this.bcast.seq : 0;
  }

  /** @internal room for a frame in the broadcast queue, which any DATA on a segment may need; `refuse` counts a refusal. */
  broadcastRoom(length: number, refuse: boolean): boolean {
    if (this.bcast === null || this.bcast.queue.canPush(length)) return true;
    if (refuse) {
      const bl = this.bcastLevel as WatermarkDetector;
      bl.refused(this.clock.now());
      this.broadcastJudged(bl);
    }
    return false;
  }

  // The broadcast watermark was fed or ticked: a new level of it is part of every link's.
  private broadcastJudged(bl: WatermarkDetector): void {
    if (bl.quietUntil < this.wakeAt) this.wakeAt = bl.quietUntil;
    const b = bl.level();
    if (b === this.broadcastLevel) return;
    this.broadcastLevel = b;
    const open = this.open;
    for (let i = 0; i < open.length; i++) (open[i] as EspNowLink).dirty = true;
    this.wakeAt = -Infinity;
  }

  /**
   * @internal One of `link`'s detectors was fed: it stands at `level` and is quiet until
   * `quietUntil`. A level other than the link's makes the link's worth judging again (any other
   * leaves the worst of them where it was).
   */
  fed(link: EspNowLink, level: number, quietUntil: number): void {
    if (level !== link.lvl) {
      link.dirty = true;
      this.wakeAt = -Infinity;
    } else if (quietUntil < this.wakeAt) this.wakeAt = quietUntil;
  }

  /** @internal EspNowLink.send on a broadcast segment. */
  offerSegment(link: EspNowLink, frame: Uint8Array, tag: number, seq: number): boolean {
    const length = frame.length;
    const q = link.egress.queue;
    // §13.5.5: a frame turned away reads as a full queue.
    if (!q.canPush(length)) {
      const ql = link.queueLevel;
      ql.refused(this.clock.now());
      this.fed(link, ql.level(), ql.quietUntil);
      return false;
    }
    if (!this.broadcastRoom(length, true)) return false;
    const now = this.clock.now();
    if (q.nBytes === 0) link.movedAt = now;
    this.route(link, frame, tag, seq, now);
    return true;
  }

  /** @internal EspNowLink.send with every stream idle and the radio free: the frame is the next datagram. */
  direct(link: EspNowLink, frame: Uint8Array, tag: number): boolean {
    const e = link.egress;
    const q = e.queue;
    const now = this.clock.now();
    const n = e.direct(frame, tag);
    const len = HEADER_BYTES + 1 + frame.length;
    // The stream served: pump would have picked it (the only one with anything) in its turn.
    this.rrAfter = link.index;
    let status = this.radio.send(link.mac, q.datagram, len);
    if (status === NOT_FOUND) status = this.sendAgain(link.mac, q.datagram, len);
    const after = this.clock.now();
    const ql = link.queueLevel;
    const ratio = frame.length / q.capacityBytes;
    if (status === BUSY || status === NO_MEM) {
      // Not taken: the number is the stream's again, and the frame waits in the queue as any other.
      e.seq = n;
      if (status === NO_MEM) this.counters.radioNoMem++;
      q.push(frame, tag);
      this.queuedMask |= 1 << link.index;
      link.movedAt = now;
      ql.queued(ratio, now);
      this.fed(link, ql.level(), ql.quietUntil);
      this.dry = false;
      this.radioWait = true;
      return true;
    }
    link.movedAt = after;
    // §13.5.1: the watermark is the backlog this datagram found queued: the frame alone. Below
    // the recovery threshold, with the watermark reading so, before its next deadline, that
    // changes nothing it judges (EspNowLink.send): it is not told.
    if (!(ratio < RECOVERED_WATERMARK && ql.queue < RECOVERED_WATERMARK && after < ql.quietUntil)) {
      if (after === now) ql.through(ratio, now);
      else {
        ql.queued(ratio, now);
        ql.drained(ratio, 0, after);
      }
      // fed(), inline.
      if (ql.level() !== link.lvl) {
        link.dirty = true;
        this.wakeAt = -Infinity;
      } else if (ql.quietUntil < this.wakeAt) this.wakeAt = ql.quietUntil;
    }
    if (status !== OK) {
      this.counters.radioRefused++;
      return true;
    }
    this.txBusy = true;
    this.txLen = len;
    this.txLink = link;
    this.txAt = after;
    this.counters.datagramsSent++;
    const loss = link.loss;
    // fed(), inline.
    if (loss.sentInFlight(n, after) !== link.lvl) {
      link.dirty = true;
      this.wakeAt = -Infinity;
    } else if (loss.quietUntil < this.wakeAt) this.wakeAt = loss.quietUntil;
    return true;
  }

  // The radio lost the peer (a Wi-Fi restart clears its table): it is added back once and the
  // datagram sent again; the status of that.
  private sendAgain(mac: number, tx: Uint8Array, len: number): number {
    const added = this.radio.addPeer(mac, this.pairings.key(mac));
    return added === OK || added === EXISTS ? this.radio.send(mac, tx, len) : NOT_FOUND;
  }

  /** @internal a frame the core handed `link`, with its tag and push sequence; the caller found room. */
  route(link: EspNowLink, frame: Uint8Array, tag: number, seq: number, now: number): void {
    const seg = this.segment;
    if (seg && this.bcast) {
      const r = seg.route(link.index, tag, seq, frame.length, now);
      if (r === Route.COALESCED || r === Route.GATED) return;
      if (r === Route.BROADCAST) {
        if (!this.bcast.queue.push(frame, tag)) this.counters.queueDrops++;
        else this.queuedMask |= 1 << this.slots;
        const bl = this.bcastLevel as WatermarkDetector;
        bl.queued(fill(this.bcast), now);
        this.broadcastJudged(bl);
        this.dry = false;
        this.pump();
        return;
      }
    }
    if (!link.egress.queue.push(frame, tag)) this.counters.queueDrops++;
    else this.queuedMask |= 1 << link.index;
    link.queued(now);
    this.dry = false;
    this.pump();
  }

  /**
   * @internal Something was written ahead or owed a resend (or queued behind the scheduler's
   * back): which streams wait is taken afresh from each, and the scheduler looks again.
   */
  work(): void {
    let queued = 0;
    let urgent = 0;
    const open = this.open;
    for (let i = 0; i < open.length; i++) {
      const l = open[i] as EspNowLink;
      const e = l.egress;
      if (e.queue.nFrames > 0) queued |= 1 << l.index;
      if (e.urgent()) urgent |= 1 << l.index;
    }
    const bc = this.bcast;
    if (bc !== null) {
      if (bc.queue.nFrames > 0) queued |= 1 << this.slots;
      if (bc.urgent()) urgent |= 1 << this.slots;
    }
    this.queuedMask = queued;
    this.urgentMask = urgent;
    this.dry = false;
    this.pump();
  }

  /** @internal the core closed `link` (park, close) or the binding did (silence). */
  detach(link: EspNowLink): void {
    link.closed = true;
    link.egress.clear();
    const at = this.open.indexOf(link);
    if (at >= 0) {
      this.open.splice(at, 1);
      const bit = 1 << link.index;
      this.queuedMask &= ~bit;
      this.urgentMask &= ~bit;
    }
    if (this.byMac.get(link.mac) === link) {
      this.byMac.delete(link.mac);
      // A paired station keeps its entry (its next datagram must decrypt); an unencrypted one's goes.
      if (!this.pairings.has(link.mac)) this.radio.removePeer(link.mac);
      this.nextSeqByMac.delete(link.mac);
      this.nextSeqByMac.set(link.mac, link.egress.seq);
      // Bounded: the oldest closed peers are forgotten first (a Map iterates in insertion order).
      if (this.nextSeqByMac.size > MAX_REMEMBERED_PEERS) {
        const oldest = this.nextSeqByMac.keys().next();
        if (!oldest.done) this.nextSeqByMac.delete(oldest.value);
      }
    }
    if (this.segment) this.segment.leave(link.index);
  }

  // ------------------------------------------------------------------ egress

  /**
   * Sends the next datagram if the radio is free: ESTOP and retransmissions first, then
   * round-robin. `at`: the instant, when the caller has it (a send status: the datagram goes at
   * the instant that freed the radio); else the clock's after the radio took it.
   */
  pump(at?: number): void {
    if (this.txBusy || this.radioWait || this.dry) return;
    // The streams in slot order, the broadcast stream last; the turn passes on from the last
    // served (after the broadcast stream, it is first again). An urgent datagram (ESTOP, a resend)
    // goes first and does not take its stream's turn: the round-robin order stands; else the
    // first stream in turn with anything queued. (Few locals: this runs for every datagram.)
    const urgent = this.urgentMask;
    let m = urgent !== 0 ? urgent : this.queuedMask;
    if (m === 0) {
      this.dry = true;
      return;
    }
    // Whether the stream served is the only one with anything.
    const sole = urgent === 0 && (m & (m - 1)) === 0;
    let pick = this.rrAfter;
    pick = m & (-1 << (pick < this.slots ? pick + 1 : this.slots));
    if (pick !== 0) m = pick;
    pick = 31 - Math.clz32(m & -m);
    if (urgent === 0) this.rrAfter = pick;
    if (pick >= this.slots) {
      this.pumpBroadcast(pick, urgent, sole, at);
      return;
    }
    // The open link in that slot: the open links are in slot order, none later in `open` than
    // its slot (at it while no lower slot is free).
    const open = this.open;
    m = pick < open.length ? pick : open.length - 1;
    let link = open[m] as EspNowLink;
    while (link.index !== pick && m > 0) link = open[--m] as EspNowLink;
    const e = link.egress;
    const q = e.queue;
    // Egress.pack; plain traffic (nothing `hot`) straight from the queue.
    const plain = !e.hot;
    let len: number;
    if (!plain) len = e.pack(HEADER_BYTES);
    else if (q.pre && q.nFrames === 1) {
      // FrameQueue.packInto's first case, inline: the one frame lies in the datagram area
      // already, where packing writes it (a frame pushed there fits a datagram).
      len = q.capacityBytes + HEADER_BYTES;
      m = q.lens[q.headFrame] as number;
      if (((q.tags[q.headFrame] as number) & CRITICAL) !== 0) {
        q.mem.copyWithin(q.capacityBytes + PLAIN_STAGE_OFFSET, len, len + 1 + m);
        q.staged = 1 + m;
      } else q.staged = 0;
      q.packed = 1;
      len = HEADER_BYTES + 1 + m;
    } else {
      len = q.packInto(HEADER_BYTES, DATAGRAM_MAX_BYTES, q.capacityBytes + PLAIN_STAGE_OFFSET);
      if (len === HEADER_BYTES) len = 0;
    }
    if (len === 0) return;
    const tx = q.datagram;
    // The header (writeHeader's three bytes); plain traffic is numbered from the stream's next.
    m = plain ? e.seq : e.packedSeq();
    tx[0] = DATAGRAM_HEADER_BYTE;
    tx[1] = m >>> 8;
    tx[2] = m & 0xff;
    let status = this.radio.send(link.mac, tx, len);
    if (status !== OK) {
      if (status === NOT_FOUND) status = this.sendAgain(link.mac, tx, len);
      if (status === BUSY || status === NO_MEM) {
        if (status === NO_MEM) this.counters.radioNoMem++;
        this.radioWait = true;
        return;
      }
    }
    const now = at === undefined ? this.clock.now() : at;
    // §13.5.1: the watermark is the backlog this datagram found queued.
    const found = q.nBytes / q.capacityBytes;
    if (plain) {
      // Egress.commitQueued, inline: the frames packed consumed (all of them: the queue is
      // empty, as FrameQueue.shift leaves it), the stream's next number taken.
      e.committed = COMMITTED_PLAIN;
      e.committedGen = 0;
      m = e.seq;
      e.committedSeq = m;
      e.seq = (m + 1) & 0xffff;
      if (q.packed >= q.nFrames) {
        q.head = q.tail = q.headFrame = q.nFrames = q.nBytes = q.packed = 0;
        q.gapAt = -1;
        q.pre = false;
      } else {
        q.shift(q.packed);
        q.packed = 0;
      }
    } else m = e.commit();
    if (q.nBytes === 0) {
      this.queuedMask &= ~(1 << pick);
      // The only stream with anything took all it had: every stream is idle.
      if (sole) this.dry = true;
    }
    if (urgent !== 0 && !e.hot) this.urgentMask &= ~(1 << pick);
    link.movedAt = now;
    let d: WatermarkDetector | LossDetector = link.queueLevel;
    // fed(), inline; a take that empties a queue the watermark reads below the recovery
    // threshold, before its next deadline, is not told (EspNowLink.send).
    if (q.nBytes === 0 && found < RECOVERED_WATERMARK && d.queue < RECOVERED_WATERMARK && now < d.quietUntil) {
      // (nothing changes)
    } else if (d.drained(found, q.nBytes / q.capacityBytes, now) !== link.lvl) {
      link.dirty = true;
      this.wakeAt = -Infinity;
    } else if (d.quietUntil < this.wakeAt) this.wakeAt = d.quietUntil;
    if (status !== OK) {
      this.counters.radioRefused++;
      return;
    }
    this.txBusy = true;
    this.txLen = len;
    this.txLink = link;
    this.txAt = now;
    this.counters.datagramsSent++;
    d = link.loss;
    // fed(), inline.
    if (d.sentInFlight(m, now) !== link.lvl) {
      link.dirty = true;
      this.wakeAt = -Infinity;
    } else if (d.quietUntil < this.wakeAt) this.wakeAt = d.quietUntil;
  }

  // pump, for the segment's broadcast stream (slot `pick`).
  private pumpBroadcast(pick: number, urgent: number, sole: boolean, at: number | undefined): void {
    const e = this.bcast as Egress;
    const q = e.queue;
    const plain = !e.hot;
    let len: number;
    if (!plain) len = e.pack(HEADER_BYTES);
    else {
      len = q.packInto(HEADER_BYTES, DATAGRAM_MAX_BYTES, q.capacityBytes + PLAIN_STAGE_OFFSET);
      if (len === HEADER_BYTES) len = 0;
    }
    if (len === 0) return;
    const tx = q.datagram;
    const number = plain ? e.seq : e.packedSeq();
    tx[0] = DATAGRAM_HEADER_BYTE | DatagramFlag.BROADCAST;
    tx[1] = number >>> 8;
    tx[2] = number & 0xff;
    const status = this.radio.send(BROADCAST_MAC, tx, len);
    if (status === BUSY || status === NO_MEM) {
      if (status === NO_MEM) this.counters.radioNoMem++;
      this.radioWait = true;
      return;
    }
    const now = at === undefined ? this.clock.now() : at;
    const cap = q.capacityBytes;
    const found = q.nBytes / cap;
    const seq = plain ? e.commitQueued(COMMITTED_PLAIN) : e.commit();
    const left = q.nBytes;
    if (left === 0) {
      this.queuedMask &= ~(1 << pick);
      if (sole) this.dry = true;
    }
    if (urgent !== 0 && !e.hot) this.urgentMask &= ~(1 << pick);
    const bl = this.bcastLevel as WatermarkDetector;
    bl.drained(found, left / cap, now);
    this.broadcastJudged(bl);
    if (status !== OK) {
      this.counters.radioRefused++;
      return;
    }
    this.txBusy = true;
    this.txLen = len;
    this.txLink = null;
    this.txAt = now;
    this.counters.datagramsSent++;
    this.counters.broadcastDatagrams++;
    const open = this.open;
    for (let i = 0; i < open.length; i++) {
      const l = open[i] as EspNowLink;
      const bll = l.broadcastLoss;
      if (bll !== null) this.fed(l, bll.sent(seq, now), bll.quietUntil);
    }
  }

  // ------------------------------------------------------------------ radio events

  /**
   * The radio's send status of the datagram in flight. The device runs its common course in C
   * (device/espnow-native.ts EspNowBindingNative), which hands every other status to this one
   * under its second name, `sentInScript`, with the instant it read (`at`) when it read one.
   */
  sent(mac: number, ok: boolean, at?: number): void {
    this.radioWait = false;
    if (!this.txBusy) {
      this.pump();
      return;
    }
    this.txBusy = false;
    const now = at === undefined ? this.clock.now() : at;
    const link = this.txLink;
    if (link === null) this.sentBroadcast(ok, now);
    else if (!link.closed && link.mac === mac) {
      this.txLink = null;
      // The datagram in flight is the link's last committed: a status that it went changes
      // nothing the detector judges until its next deadline (sentInFlight).
      const loss = link.loss;
      if (!ok || now >= loss.quietUntil) {
        if ((ok ? loss.tick(now) : loss.failed(link.egress.committedSeq, now)) !== link.lvl) {
          link.dirty = true;
          this.wakeAt = -Infinity;
        } else if (loss.quietUntil < this.wakeAt) this.wakeAt = loss.quietUntil;
      }
      const c = link.cols;
      // The send-status latency, smoothed (RTT_GAIN).
      c[COL_RTT] = c[COL_RTT] === 0 ? now - this.txAt : (c[COL_RTT] as number) + RTT_GAIN * (now - this.txAt - (c[COL_RTT] as number));
      if (ok) {
        // meterAdd, inline: the payload delivered in the bucket of `now`.
        const id = Math.floor(now / METER_BUCKET_MS);
        const b = COL_METER + (id % METER_BUCKETS);
        if (c[b] !== id && (c[b] as number) < id) {
          c[b] = id;
          c[b + METER_BUCKETS] = 0;
        }
        if (c[b] === id) c[b + METER_BUCKETS] = (c[b + METER_BUCKETS] as number) + (this.txLen - HEADER_BYTES);
      } else this.sendFailed(link);
    } else this.txLink = null;
    if (!this.dry) this.pump(now);
  }

  // The datagram in flight of `link` failed: what must survive it is owed a resend.
  private sendFailed(link: EspNowLink): void {
    this.counters.datagramsFailed++;
    const e = link.egress;
    e.failed(e.queue.datagram, HEADER_BYTES, this.txLen);
    if (e.hot) this.urgentMask |= 1 << link.index;
    this.dry = false;
  }

  // The broadcast datagram in flight went (`ok`) or failed at `now`.
  private sentBroadcast(ok: boolean, now: number): void {
    const payload = this.txLen - HEADER_BYTES;
    const open = this.open;
    for (let i = 0; i < open.length; i++) {
      const l = open[i] as EspNowLink;
      const bl = l.broadcastLoss;
      if (bl === null) continue;
      this.fed(l, bl.sendStatus(ok, now), bl.quietUntil);
      // Broadcast has no acknowledgement: what a peer got is the payload less its loss rate.
      meterAdd(l.cols, payload * (1 - bl.ratio()), now);
    }
  }

  received(mac: number, data: Uint8Array, length: number): void {
    const now = this.clock.now();
    const link = this.byMac.get(mac);
    // One frame in a plain datagram (what nearly every peer sends: an ACK, a PING, a command),
    // read without the cursor: the checks DatagramCursor.open makes of it, in a few comparisons.
    if (link !== undefined && data[0] === DATAGRAM_HEADER_BYTE && length <= DATAGRAM_MAX_BYTES && length <= data.length && length === HEADER_BYTES + 1 + (data[HEADER_BYTES] as number) && length > HEADER_BYTES + 1) {
      this.counters.datagramsReceived++;
      // As heard() does.
      const c = link.cols;
      c[COL_LAST_HEARD] = now;
      if (now < this.oldestHeard) this.oldestHeard = now;
      if (link.egress.owedEstop && link.egress.takeOwedEstop()) this.work();
      // §13.3.3: a resend of a datagram already delivered (only its MAC acknowledgement was lost);
      // seqSeen, inline.
      const s = ((data[1] as number) << 8) | (data[2] as number);
      const k = s & (DUPLICATE_SLOTS - 1);
      const seqs = link.inboundSeqs;
      const w = this.seqsAt + k;
      const dup = seqs[w] === s && now - (c[COL_INBOUND + k] as number) <= DUPLICATE_WINDOW_MS;
      seqs[w] = s;
      c[COL_INBOUND + k] = now;
      if (dup) {
        this.counters.duplicates++;
        return;
      }
      const start = HEADER_BYTES + 1;
      // §13.3: the bitmap ACK is the binding's own signal; the core needs only the stream form.
      if (parseBitmapAck(data, start, length, this.ack)) {
        const loss = link.loss;
        if (loss.ack(this.ack.base, this.ack.bitmap, now) !== link.lvl) {
          link.dirty = true;
          this.wakeAt = -Infinity;
        } else if (loss.quietUntil < this.wakeAt) this.wakeAt = loss.quietUntil;
      } else if (link.sink) link.sink.frame(data, start, length);
      return;
    }
    const c = this.cursor;
    if (c.open(data, length) !== 0) {
      this.counters.malformed++;
      return;
    }
    this.counters.datagramsReceived++;
    let l = link;
    if (!l) {
      if (!this.allowUnencrypted && !this.pairings.has(mac)) {
        this.stranger(c, data);
        return;
      }
      // Acknowledgements alone do not open a transport: they are echoes of one that was closed.
      let opens = false;
      while (c.next()) {
        if (!parseBitmapAck(data, c.start, c.end, this.ack)) {
          opens = true;
          break;
        }
      }
      if (!opens) return;
      const admitted = this.admit(mac, now);
      if (!admitted) return;
      l = admitted;
      c.open(data, length);
    }
    this.heard(l, now);
    // §13.3.3: a resend of a datagram already delivered (only its MAC acknowledgement was lost).
    if (!c.bare && seqSeen(l.cols, COL_INBOUND, l.inboundSeqs, this.seqsAt, c.seq, now)) {
      this.counters.duplicates++;
      return;
    }
    const bl = l.broadcastLoss;
    if (c.flags & DatagramFlag.BROADCAST_ACK && bl) {
      this.fed(l, bl.ack(c.ackBase, c.ackBitmap, now), bl.quietUntil);
    }
    const sink = l.sink;
    while (c.next()) {
      if (parseBitmapAck(data, c.start, c.end, this.ack)) {
        this.fed(l, l.loss.ack(this.ack.base, this.ack.bitmap, now), l.loss.quietUntil);
        continue;
      }
      if (sink) sink.frame(data, c.start, c.end);
      if (l.closed) return;
    }
  }

  /**
   * A datagram from a station that is neither paired nor allowed unencrypted: nothing is
   * admitted, added to the radio or sent back; an ESTOP frame in it still reaches the hub
   * (§11.2: any station may stop the robot).
   */
  private stranger(c: DatagramCursor, data: Uint8Array): void {
    this.counters.unpaired++;
    const stop = this.strayEstop;
    if (stop === null) return;
    while (c.next()) {
      if (data[c.start] === ESTOP_MAGIC) {
        this.counters.strayEstops++;
        stop(data, c.start, c.end);
      }
    }
  }

  // `link` was heard at `now`.
  private heard(link: EspNowLink, now: number): void {
    link.cols[COL_LAST_HEARD] = now;
    if (now < this.oldestHeard) this.oldestHeard = now;
    // §11.2: the peer is back within reach; an ESTOP whose resends failed while it was not goes again.
    if (link.egress.owedEstop && link.egress.takeOwedEstop()) this.work();
  }

  private admit(mac: number, now: number): EspNowLink | null {
    // The lowest slot no open link holds: where the open links (in slot order) first skip one.
    const open = this.open;
    let slot = 0;
    while (slot < open.length && (open[slot] as EspNowLink).index === slot) slot++;
    if (slot >= this.slots) {
      this.counters.refusedPeers++;
      return null;
    }
    // A paired station is in the radio's table already; an unencrypted one joins it now, at
    // observer tier at most (docs/security.md).
    const paired = this.pairings.has(mac);
    if (!paired) {
      const added = this.radio.addPeer(mac, null);
      if (added !== RadioStatus.OK && added !== RadioStatus.EXISTS) {
        this.counters.refusedPeers++;
        return null;
      }
    }
    const ceiling = paired ? this.pairings.ceiling(mac) : Tier.observer;
    const link = new this.Link(this, slot, mac, this.queueBytes, this.queueFrames, now, ceiling);
    const seq = this.nextSeqByMac.get(mac);
    if (seq !== undefined) link.egress.seq = seq;
    open.splice(slot, 0, link);
    this.byMac.set(mac, link);
    if (now < this.oldestHeard) this.oldestHeard = now;
    // The segment's watermark is part of the new link's level from the start; its detectors
    // are due at the next tick.
    if (this.broadcastLevel !== link.lvl) link.dirty = true;
    this.wakeAt = -Infinity;
    if (this.segment) this.segment.join(slot);
    link.sink = this.attachFn(link);
    return link;
  }

  // ------------------------------------------------------------------ time

  /**
   * Ages the detectors' windows, closes silent peers (§6.6), retries a radio that was out of
   * memory. Each detector says until when it stays quiet without input (`quietUntil`): a link
   * none of whose detectors is due and whose level no input moved has nothing new for the tick,
   * and before the earliest of them (`wakeAt`) no link has.
   */
  tick(): void {
    const now = this.clock.now();
    const open = this.open;
    if (now - this.oldestHeard > this.silenceMs) {
      for (let i = open.length - 1; i >= 0; i--) {
        const l = open[i] as EspNowLink;
        if (now - l.lastHeard > this.silenceMs) {
          this.counters.silentPeers++;
          const sink = l.sink;
          this.detach(l);
          if (sink) sink.lost();
        }
      }
      let oldest = Infinity;
      for (let i = 0; i < open.length; i++) {
        const h = (open[i] as EspNowLink).lastHeard;
        if (h < oldest) oldest = h;
      }
      this.oldestHeard = oldest;
    }
    if (now >= this.wakeAt) this.wake(now);
    this.tickedAt = now;
    this.ticks++;
    this.radioWait = false;
    if (!this.txBusy && !this.dry) this.pump();
  }

  // The tick's detector work: each link's level from its detectors as they now stand (their
  // windows aged), a change reported to the core; then when the next is due.
  private wake(now: number): void {
    // Inputs while the core hears of a new level (levelChanged) bring it nearer again.
    this.wakeAt = Infinity;
    let wake = Infinity;
    const bcl = this.bcastLevel;
    if (bcl !== null) {
      bcl.tick(now);
      this.broadcastJudged(bcl);
      wake = bcl.quietUntil;
    }
    const open = this.open;
    for (let i = 0; i < open.length; i++) {
      const l = open[i] as EspNowLink;
      const loss = l.loss;
      const bl = l.broadcastLoss;
      const ql = l.queueLevel;
      // A detector that is not due would find what it holds (its tick's first case).
      const lvl = l.lvl;
      if (now >= loss.quietUntil && loss.tick(now) !== lvl) l.dirty = true;
      if (bl !== null && now >= bl.quietUntil && bl.tick(now) !== lvl) l.dirty = true;
      if (now >= ql.quietUntil) {
        ql.tick(now);
        if (ql.level() !== lvl) l.dirty = true;
      }
      if (l.dirty) l.judge();
      if (loss.quietUntil < wake) wake = loss.quietUntil;
      if (ql.quietUntil < wake) wake = ql.quietUntil;
      if (bl !== null && bl.quietUntil < wake) wake = bl.quietUntil;
    }
    if (wake < this.wakeAt) this.wakeAt = wake;
  }
}

export interface EspNowBinding {
  /** @internal EspNowBinding.sent, under a name a subclass's own `sent` leaves reachable (device/espnow-native.ts). */
  sentInScript(mac: number, ok: boolean, at?: number): void;
  /** @internal The class of the binding's links (a subclass's may be its own: device/espnow-native.ts). */
  readonly Link: typeof EspNowLink;
}
Object.defineProperty(EspNowBinding.prototype, 'sentInScript', { value: EspNowBinding.prototype.sent });
Object.defineProperty(EspNowBinding.prototype, 'Link', { value: EspNowLink });

export interface EspNowLink {
  /** @internal EspNowLink.send, under a name a subclass's own `send` leaves reachable (device/espnow-native.ts). */
  sendInScript(frame: Uint8Array, tag: number, seq: number): boolean;
}
Object.defineProperty(EspNowLink.prototype, 'sendInScript', { value: EspNowLink.prototype.send });

/** @internal Where a link's numbers keep its meter and its send-status latency (device/native/espnowsent.h reads them there). */
export const ESPNOW_COLUMNS = Object.freeze({ meter: COL_METER, rtt: COL_RTT, meterBuckets: METER_BUCKETS });
