// The ESP-NOW binding (§13.3; docs/_espnow.md): one Link per peer over one radio, the same code
// on the device (device.ts: the native esp_now module) and in the simulator (sim.ts).
//
// - Frames queued for a peer are packed into its next datagram (≤ 250 bytes, datagram.ts); the
//   12-byte ESTOP frame goes ahead of everything queued (§10.4, §11.2).
// - One datagram in flight on the radio: the next is packed when the radio reports the send
//   status of the last (ESP-NOW answers a faster sender with ESP_ERR_ESPNOW_NO_MEM). ESTOP and
//   owed retransmissions are served before plain traffic; plain traffic round-robin by stream.
// - Congestion (§10.3): the loss rate from the radio's send status and the peer's ACK bitmask
//   (§13.3) through a LossDetector, per peer and, on a broadcast segment, per peer for the
//   broadcast stream too; plus the egress queue's watermark (ours: a radio that cannot carry the
//   offered load loses nothing, it only falls behind, which no loss signal shows).
// - Broadcast segments (§10.6): broadcast.ts decides which DATA goes on air once for all.
//
// Platform-free: the radio, the clock and the core's attach come in through EspNowOptions.

import type { CatalogIndex } from '../../catalog/index.js';
import { FrameType, peekFrameType } from '../../hub/frames.js';
import type { Clock, Link, LinkEstimate, LinkSink } from '../../hub/ports.js';
import { LossDetector, WatermarkDetector } from '../detector.js';
import { DrainClock } from '../link.js';
import { BroadcastSegment, Route } from './broadcast.js';
import {
  DatagramCursor,
  DatagramFlag,
  DATAGRAM_MAX_BYTES,
  Egress,
  HEADER_BYTES,
  MAX_DATAGRAM_FRAME,
  parseBitmapAck,
  parseDataHead,
  parsedAck,
  parsedData,
  SeqWindow,
  writeHeader,
  type ReliableTest,
} from './datagram.js';

/** ESP_NOW_MAX_TOTAL_PEER_NUM: the radio's peer table, the broadcast address included. */
/** Closed peers whose next datagram sequence the binding remembers (twice the ESP-NOW peer limit). */
const MAX_REMEMBERED_PEERS = 40;

export const ESPNOW_MAX_PEERS = 20;
/**
 * Encrypted peers the radio holds (CONFIG_ESP_WIFI_ESPNOW_MAX_ENCRYPT_NUM, default 7 in the
 * sdkconfig; older headers name 6 as ESP_NOW_MAX_ENCRYPT_PEER_NUM).
 */
export const ESPNOW_MAX_ENCRYPTED_PEERS = 7;
/** The broadcast address FF:FF:FF:FF:FF:FF as a 48-bit number (MACs are numbers here). */
export const BROADCAST_MAC = 0xffffffffffff;
/** Egress queue per peer: about four full datagrams, 12 ms of air at 1 Mbps. Late is worse than lost (§10.4). */
export const DEFAULT_QUEUE_BYTES = 1024;
export const DEFAULT_QUEUE_FRAMES = 32;
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
  addPeer(mac: number, encrypt: boolean): number;
  removePeer(mac: number): number;
  /** Starts one datagram; RadioStatus.OK or the reason it was refused. */
  send(mac: number, data: Uint8Array, length: number): number;
}

export interface EspNowOptions {
  readonly clock: Clock;
  readonly radio: Radio;
  /** Hands a new peer's link to the core and returns where its frames go (Hub.attach). */
  readonly attach: (link: Link) => LinkSink;
  /** Tells which DATA channels are never-shed, EVENT or INTENT (routing and retransmission). */
  readonly catalog?: CatalogIndex;
  /** This binding is one broadcast segment (§10.6). */
  readonly broadcast?: boolean;
  /** The radio's peer table size, the broadcast address included (default 20). */
  readonly maxPeers?: number;
  readonly queueBytes?: number;
  readonly queueFrames?: number;
  readonly silenceMs?: number;
  /** Whether a new peer is added encrypted (its key is the radio adapter's business). */
  readonly encrypt?: (mac: number) => boolean;
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

/** Bytes delivered over the last second, in 100 ms buckets: the link estimate's throughput. */
class RateMeter {
  private readonly ids = new Float64Array(METER_BUCKETS);
  private readonly bytes = new Float64Array(METER_BUCKETS);

  constructor() {
    this.ids.fill(-Infinity);
  }

  add(n: number, now: number): void {
    const id = Math.floor(now / METER_BUCKET_MS);
    const b = id % METER_BUCKETS;
    if (this.ids[b] !== id) {
      if ((this.ids[b] as number) > id) return;
      this.ids[b] = id;
      this.bytes[b] = 0;
    }
    this.bytes[b] = (this.bytes[b] as number) + n;
  }

  perSecond(now: number): number {
    const newest = Math.floor(now / METER_BUCKET_MS);
    let sum = 0;
    for (let b = 0; b < METER_BUCKETS; b++) {
      const id = this.ids[b] as number;
      if (id > newest - METER_BUCKETS && id <= newest) sum += this.bytes[b] as number;
    }
    return (sum * 1000) / (METER_BUCKETS * METER_BUCKET_MS);
  }
}

/** One peer: the Link the core sees. */
export class EspNowLink implements Link {
  readonly binding = 'espnow';
  readonly mtu = MAX_DATAGRAM_FRAME;
  readonly broadcast: boolean;
  readonly mac: number;
  /** Its slot in the binding's peer table (and the broadcast segment's peer index). */
  readonly index: number;
  readonly egress: Egress;
  /** §10.3 loss rate of the unicast stream (send status + ACK bitmask, §13.3). */
  readonly loss: LossDetector;
  /** Loss of the segment's broadcast stream as this peer acknowledges it; null off a segment. */
  readonly broadcastLoss: LossDetector | null;
  /** The egress queue's watermark. */
  readonly queueLevel: WatermarkDetector;
  /** Since when a backlog has waited with nothing taken from it (Link.stalledMs). */
  readonly drain: DrainClock;
  /** The peer's datagram numbers lately received: its resends are dropped (§13.3.3). */
  readonly inbound = new SeqWindow();
  sink: LinkSink | null = null;
  closed = false;
  lastHeard: number;
  readonly meter = new RateMeter();
  private readonly owner: EspNowBinding;
  private readonly est: LinkEstimate = { throughputBps: 0, rttMs: 0 };
  private srtt = 0;

  constructor(owner: EspNowBinding, index: number, mac: number, broadcast: boolean, queueBytes: number, queueFrames: number, now: number) {
    this.owner = owner;
    this.index = index;
    this.mac = mac;
    this.broadcast = broadcast;
    this.egress = new Egress(queueBytes, queueFrames);
    this.loss = new LossDetector(now);
    this.broadcastLoss = broadcast ? new LossDetector(now) : null;
    this.queueLevel = new WatermarkDetector(now);
    this.drain = new DrainClock(now);
    this.lastHeard = now;
  }

  canSend(length: number): boolean {
    if (this.closed || length > MAX_DATAGRAM_FRAME) return false;
    // §13.5.5: a frame turned away reads as a full queue.
    if (!this.egress.queue.canPush(length)) {
      this.queueLevel.refused(this.owner.now());
      return false;
    }
    return this.owner.broadcastRoom(length);
  }

  send(frame: Uint8Array, length: number): void {
    if (this.closed) return;
    if (this.egress.queue.bytes === 0) this.drain.moved(this.owner.now());
    this.owner.route(this, frame, length);
  }

  writeAhead(frame: Uint8Array): void {
    if (this.closed) return;
    this.egress.writeAhead(frame);
    this.owner.pump();
  }

  level(): number {
    let l = this.loss.level();
    const b = this.broadcastLoss ? this.broadcastLoss.level() : 0;
    if (b > l) l = b;
    const q = this.queueLevel.level();
    if (q > l) l = q;
    const s = this.owner.broadcastQueueLevel();
    return s > l ? s : l;
  }

  estimate(): LinkEstimate {
    const now = this.owner.now();
    this.est.throughputBps = this.meter.perSecond(now);
    this.est.rttMs = this.srtt;
    return this.est;
  }

  occupancy(): number {
    return this.egress.queue.bytes / this.egress.queue.capacityBytes;
  }

  stalledMs(): number {
    return this.drain.stalledMs(this.owner.now(), this.egress.queue.bytes > 0);
  }

  close(): void {
    if (this.closed) return;
    this.owner.detach(this);
  }

  /** @internal a unicast send status arrived after `latencyMs`. */
  statusLatency(latencyMs: number): void {
    this.srtt = this.srtt === 0 ? latencyMs : this.srtt + RTT_GAIN * (latencyMs - this.srtt);
  }

  /** @internal frames joined the queue. */
  queued(now: number): void {
    this.queueLevel.queued(this.occupancy(), now);
  }
}

/**
 * The binding: the peer table, the broadcast stream of a segment, the one-in-flight scheduler
 * and the radio's events. Call `tick` at least every hub tick.
 */
export class EspNowBinding implements RadioHandler {
  readonly counters = new EspNowCounters();
  /** The §10.6 router of a broadcast segment, null on a unicast binding. */
  readonly segment: BroadcastSegment | null;
  private readonly clock: Clock;
  private readonly radio: Radio;
  private readonly attachFn: (link: Link) => LinkSink;
  private readonly catalog: CatalogIndex | undefined;
  private readonly links: (EspNowLink | null)[] = [];
  private readonly byMac = new Map<number, EspNowLink>();
  /**
   * The next datagram sequence of peers whose link was closed, so that a re-admitted peer's new
   * link carries on from there: starting again at 0 would reuse numbers the peer's duplicate
   * window (§13.3.3) still holds, and it would drop the new link's datagrams, an ESTOP among them.
   */
  private readonly nextSeqByMac = new Map<number, number>();
  private readonly queueBytes: number;
  private readonly queueFrames: number;
  private readonly silenceMs: number;
  private readonly encrypt: (mac: number) => boolean;
  /** The segment's broadcast stream and its queue's watermark; null on a unicast binding. */
  private readonly bcast: Egress | null;
  private readonly bcastLevel: WatermarkDetector | null;
  private readonly cursor = new DatagramCursor();
  private readonly reliable: ReliableTest;
  // The one datagram in flight: its bytes, its stream (a link, or the broadcast stream), when it left.
  private readonly tx = new Uint8Array(DATAGRAM_MAX_BYTES);
  private txLen = 0;
  private txBusy = false;
  private txLink: EspNowLink | null = null;
  private txAt = 0;
  // The radio said BUSY or NO_MEM: wait for its next status or the next tick.
  private radioWait = false;
  private rr = 0;

  constructor(options: EspNowOptions) {
    this.clock = options.clock;
    this.radio = options.radio;
    this.attachFn = options.attach;
    this.catalog = options.catalog;
    this.queueBytes = options.queueBytes ?? DEFAULT_QUEUE_BYTES;
    this.queueFrames = options.queueFrames ?? DEFAULT_QUEUE_FRAMES;
    this.silenceMs = options.silenceMs ?? PEER_SILENCE_MS;
    this.encrypt = options.encrypt ?? (() => false);
    const broadcast = options.broadcast === true;
    // The broadcast address takes one entry of the radio's peer table.
    const slots = (options.maxPeers ?? ESPNOW_MAX_PEERS) - (broadcast ? 1 : 0);
    for (let i = 0; i < slots; i++) this.links.push(null);
    const now = this.clock.now();
    if (broadcast) {
      this.segment = new BroadcastSegment(slots, this.catalog);
      this.bcast = new Egress(this.queueBytes, this.queueFrames);
      this.bcastLevel = new WatermarkDetector(now);
      this.radio.addPeer(BROADCAST_MAC, false);
    } else {
      this.segment = null;
      this.bcast = null;
      this.bcastLevel = null;
    }
    const catalog = this.catalog;
    // The hub's never-shed set (§10.1): every control frame, and DATA on critical channels.
    this.reliable = (bytes, start, end) => {
      if (peekFrameType(bytes, start, end) !== FrameType.DATA) return true;
      if (!catalog || !parseDataHead(bytes, start, end)) return false;
      const ch = catalog.byId(parsedData.channelId);
      return ch !== undefined && ch.critical;
    };
    this.radio.setHandler(this);
  }

  now(): number {
    return this.clock.now();
  }

  /** Links currently open. */
  peers(): EspNowLink[] {
    const out: EspNowLink[] = [];
    for (let i = 0; i < this.links.length; i++) {
      const l = this.links[i];
      if (l) out.push(l);
    }
    return out;
  }

  linkOf(mac: number): EspNowLink | undefined {
    return this.byMac.get(mac);
  }

  /** The broadcast stream's sequence number of its next datagram (for tests and health). */
  broadcastSeq(): number {
    return this.bcast ? this.bcast.seq : 0;
  }

  /** @internal room for a frame in the broadcast queue, which any DATA on a segment may need. */
  broadcastRoom(length: number): boolean {
    if (this.bcast === null || this.bcast.queue.canPush(length)) return true;
    (this.bcastLevel as WatermarkDetector).refused(this.clock.now());
    return false;
  }

  /** @internal the broadcast queue's watermark level; 0 on a unicast binding. */
  broadcastQueueLevel(): number {
    return this.bcastLevel ? this.bcastLevel.level() : 0;
  }

  /** @internal a frame the core handed `link`. */
  route(link: EspNowLink, frame: Uint8Array, length: number): void {
    const now = this.clock.now();
    const seg = this.segment;
    if (seg && this.bcast) {
      const r = seg.route(link.index, frame, length, now);
      if (r === Route.COALESCED || r === Route.GATED) return;
      if (r === Route.BROADCAST) {
        if (!this.bcast.queue.push(frame, length)) this.counters.queueDrops++;
        (this.bcastLevel as WatermarkDetector).queued(fill(this.bcast), now);
        this.pump();
        return;
      }
    }
    if (!link.egress.queue.push(frame, length)) this.counters.queueDrops++;
    link.queued(now);
    this.pump();
  }

  /** @internal the core closed `link` (park, close) or the binding did (silence). */
  detach(link: EspNowLink): void {
    link.closed = true;
    link.egress.clear();
    if (this.links[link.index] === link) this.links[link.index] = null;
    if (this.byMac.get(link.mac) === link) {
      this.byMac.delete(link.mac);
      this.radio.removePeer(link.mac);
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

  private streamCount(): number {
    return this.links.length + (this.bcast ? 1 : 0);
  }

  private streamAt(i: number): Egress | null {
    if (i < this.links.length) {
      const l = this.links[i];
      return l ? l.egress : null;
    }
    return this.bcast;
  }

  /** Sends the next datagram if the radio is free: ESTOP and retransmissions first, then round-robin. */
  pump(): void {
    if (this.txBusy || this.radioWait) return;
    const n = this.streamCount();
    let pick = -1;
    for (let k = 0; k < n && pick < 0; k++) {
      const i = (this.rr + k) % n;
      const e = this.streamAt(i);
      if (e && e.urgent()) pick = i;
    }
    // An urgent datagram does not take its stream's turn: the round-robin order stands.
    if (pick < 0) {
      for (let k = 0; k < n && pick < 0; k++) {
        const i = (this.rr + k) % n;
        const e = this.streamAt(i);
        if (e && e.pending()) pick = i;
      }
      if (pick < 0) return;
      this.rr = (pick + 1) % n;
    }
    const e = this.streamAt(pick) as Egress;
    const link = pick < this.links.length ? (this.links[pick] as EspNowLink) : null;
    const len = e.pack(this.tx, HEADER_BYTES);
    if (len === 0) return;
    writeHeader(this.tx, link ? 0 : DatagramFlag.BROADCAST, e.packedSeq());
    const mac = link ? link.mac : BROADCAST_MAC;
    let status = this.radio.send(mac, this.tx, len);
    if (status === RadioStatus.NOT_FOUND && link) {
      // The radio lost the peer (a Wi-Fi restart clears its table): add it back once.
      const added = this.radio.addPeer(mac, this.encrypt(mac));
      if (added === RadioStatus.OK || added === RadioStatus.EXISTS) status = this.radio.send(mac, this.tx, len);
    }
    const now = this.clock.now();
    if (status === RadioStatus.BUSY || status === RadioStatus.NO_MEM) {
      if (status === RadioStatus.NO_MEM) this.counters.radioNoMem++;
      this.radioWait = true;
      return;
    }
    // §13.5.1: the watermark is the backlog this datagram found queued.
    const found = fill(e);
    const seq = e.commit();
    if (link) link.drain.moved(now);
    const level = link ? link.queueLevel : this.bcastLevel;
    if (level) level.drained(found, fill(e), now);
    if (status !== RadioStatus.OK) {
      this.counters.radioRefused++;
      return;
    }
    this.txBusy = true;
    this.txLen = len;
    this.txLink = link;
    this.txAt = now;
    this.counters.datagramsSent++;
    if (link) {
      link.loss.sent(seq, now);
    } else {
      this.counters.broadcastDatagrams++;
      for (let i = 0; i < this.links.length; i++) {
        const l = this.links[i];
        if (l && l.broadcastLoss) l.broadcastLoss.sent(seq, now);
      }
    }
  }

  // ------------------------------------------------------------------ radio events

  sent(mac: number, ok: boolean): void {
    this.radioWait = false;
    if (!this.txBusy) {
      this.pump();
      return;
    }
    this.txBusy = false;
    const now = this.clock.now();
    const link = this.txLink;
    this.txLink = null;
    const payload = this.txLen - HEADER_BYTES;
    if (link) {
      if (!link.closed && link.mac === mac) {
        link.loss.sendStatus(ok, now);
        link.statusLatency(now - this.txAt);
        if (ok) link.meter.add(payload, now);
        else {
          this.counters.datagramsFailed++;
          link.egress.failed(this.tx, HEADER_BYTES, this.txLen, this.reliable);
        }
      }
    } else {
      for (let i = 0; i < this.links.length; i++) {
        const l = this.links[i];
        if (!l || !l.broadcastLoss) continue;
        l.broadcastLoss.sendStatus(ok, now);
        // Broadcast has no acknowledgement: what a peer got is the payload less its loss rate.
        l.meter.add(payload * (1 - l.broadcastLoss.ratio()), now);
      }
    }
    this.pump();
  }

  received(mac: number, data: Uint8Array, length: number): void {
    const now = this.clock.now();
    const c = this.cursor;
    if (c.open(data, length) !== 0) {
      this.counters.malformed++;
      return;
    }
    this.counters.datagramsReceived++;
    let link = this.byMac.get(mac);
    if (!link) {
      // Acknowledgements alone do not open a transport: they are echoes of one that was closed.
      let opens = false;
      while (c.next()) {
        if (!parseBitmapAck(data, c.start, c.end)) {
          opens = true;
          break;
        }
      }
      if (!opens) return;
      const admitted = this.admit(mac, now);
      if (!admitted) return;
      link = admitted;
      c.open(data, length);
    }
    link.lastHeard = now;
    // §11.2: the peer is back within reach; an ESTOP whose resends failed while it was not goes again.
    if (link.egress.takeOwedEstop()) this.pump();
    // §13.3.3: a resend of a datagram already delivered (only its MAC acknowledgement was lost).
    if (!c.bare && link.inbound.seen(c.seq, now)) {
      this.counters.duplicates++;
      return;
    }
    if (c.flags & DatagramFlag.BROADCAST_ACK && link.broadcastLoss) link.broadcastLoss.ack(c.ackBase, c.ackBitmap, now);
    const sink = link.sink;
    while (c.next()) {
      // §13.3: the bitmap ACK is the binding's own signal; the core needs only the stream form.
      if (parseBitmapAck(data, c.start, c.end)) {
        link.loss.ack(parsedAck.base, parsedAck.bitmap, now);
        continue;
      }
      if (sink) sink.frame(data, c.start, c.end);
      if (link.closed) return;
    }
  }

  private admit(mac: number, now: number): EspNowLink | null {
    let slot = -1;
    for (let i = 0; i < this.links.length && slot < 0; i++) if (this.links[i] === null) slot = i;
    if (slot < 0) {
      this.counters.refusedPeers++;
      return null;
    }
    const added = this.radio.addPeer(mac, this.encrypt(mac));
    if (added !== RadioStatus.OK && added !== RadioStatus.EXISTS) {
      this.counters.refusedPeers++;
      return null;
    }
    const link = new EspNowLink(this, slot, mac, this.segment !== null, this.queueBytes, this.queueFrames, now);
    const seq = this.nextSeqByMac.get(mac);
    if (seq !== undefined) link.egress.seq = seq;
    this.links[slot] = link;
    this.byMac.set(mac, link);
    if (this.segment) this.segment.join(slot);
    link.sink = this.attachFn(link);
    return link;
  }

  // ------------------------------------------------------------------ time

  /** Ages the detectors' windows, closes silent peers (§6.6), retries a radio that was out of memory. */
  tick(): void {
    const now = this.clock.now();
    for (let i = 0; i < this.links.length; i++) {
      const l = this.links[i];
      if (!l) continue;
      if (now - l.lastHeard > this.silenceMs) {
        this.counters.silentPeers++;
        const sink = l.sink;
        this.detach(l);
        if (sink) sink.lost();
        continue;
      }
      l.loss.tick(now);
      if (l.broadcastLoss) l.broadcastLoss.tick(now);
      l.queueLevel.tick(now);
    }
    if (this.bcastLevel) this.bcastLevel.tick(now);
    this.radioWait = false;
    this.pump();
  }
}
