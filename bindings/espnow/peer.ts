// The peer's side of the ESP-NOW binding (§13.3, docs/protocol.md "13.3.4 The ACK bitmask"): what
// a client station does so that the hub's binding hears it, acknowledges it and keeps its link.
// Platform-free, over any Radio (link.ts) and any clock: the simulator's peers
// (host-sim/links/espnow-air.ts SimPeer) and the client library's ESP-NOW transport
// (client/espnow.ts, which the pendant runs on a second ESP32) are both this class.
//
//   - the frames it is given are packed into numbered datagrams (datagram.ts Egress), one in
//     flight; an ESTOP frame written ahead goes before everything queued, alone;
//   - a datagram whose every MAC retry failed is resent under its own number with the frames
//     that must not be lost (the caller tags them: all but BUNDLE and ACK, §13.3.3);
//   - the hub's unicast stream is acknowledged by ACK frames {29, 30}, its broadcast stream by the
//     header's BROADCAST_ACK, ackPeriodMs after the oldest datagram not yet acknowledged arrived
//     or as soon as ackEvery have, and at least every keepaliveMs once the hub was heard;
//   - the hub's resends of a datagram it already has are dropped by number (SeqWindow).
//
// Time comes from the host: `now()`, and `schedule(at)`, after which the host calls `wake(at)`
// at `at` or later. Frames from the hub go to the host's `frame` as views valid during the call.
// Nothing is allocated per datagram.

import { CborWriter } from '../../hub/cbor.js';
import {
  AckTracker,
  BROADCAST_ACK_BYTES,
  DatagramCursor,
  DatagramFlag,
  Egress,
  encodeBitmapAck,
  HEADER_BYTES,
  SeqWindow,
  writeBroadcastAck,
  writeHeader,
} from './datagram.js';
import { RadioStatus, type Radio, type RadioHandler } from './link.js';

/** Tolerance when a peer compares a due time with its clock (1 ns, far below any modelled delay). */
const DUE_SLACK_MS = 1e-6;

export interface EspNowPeerOptions {
  /** An ACK goes out at most this long after a datagram arrived (the LossDetector waits 200 ms). */
  readonly ackPeriodMs?: number;
  /** ... or as soon as this many datagrams arrived since the last one. */
  readonly ackEvery?: number;
  /** Something goes to the hub at least this often once it has heard from it. */
  readonly keepaliveMs?: number;
  readonly queueBytes?: number;
  readonly queueFrames?: number;
}

export const PEER_DEFAULTS = Object.freeze({
  ackPeriodMs: 50,
  ackEvery: 16,
  keepaliveMs: 1000,
  queueBytes: 1024,
  queueFrames: 32,
});

/** What the peer needs from its owner: the time, wake-ups, and where the hub's frames go. */
export interface EspNowPeerHost {
  now(): number;
  /** Call the peer's `wake(at)` at `at` (or later). A later schedule may make an earlier one moot. */
  schedule(at: number): void;
  /** One frame from the hub, bytes [start, end) of `bytes`, valid during the call. */
  frame(bytes: Uint8Array, start: number, end: number, broadcast: boolean): void;
}

/**
 * A client station as the hub's ESP-NOW binding expects one (docs/protocol.md §13.3): frames
 * packed into numbered datagrams with one in flight, the hub's unicast stream acknowledged by ACK
 * frames and its broadcast stream by the header's BROADCAST_ACK, every ackPeriodMs while datagrams
 * arrive and at least every keepaliveMs. Set it as the radio's handler (it is a RadioHandler).
 */
export class EspNowPeer implements RadioHandler {
  readonly radio: Radio;
  readonly hubMac: number;
  readonly unicast = new AckTracker();
  readonly bcast = new AckTracker();
  /** The hub's datagram numbers lately received, per stream: its resends are dropped (§13.3.3). */
  readonly unicastSeen = new SeqWindow();
  readonly bcastSeen = new SeqWindow();
  readonly egress: Egress;
  datagrams = 0;
  broadcastDatagrams = 0;
  malformed = 0;
  /** Datagrams dropped as resends of one already delivered. */
  duplicates = 0;
  failedSends = 0;
  acksSent = 0;
  /** Frames refused because the queue was full. */
  refused = 0;
  /** Set false to stop: nothing more is sent, received datagrams are ignored, wake-ups do nothing. */
  open = true;
  protected readonly host: EspNowPeerHost;
  private readonly ackPeriodMs: number;
  private readonly ackEvery: number;
  private readonly keepaliveMs: number;
  private readonly ackW = new CborWriter(new Uint8Array(16));
  private readonly cursor = new DatagramCursor();
  private outLen = 0;
  private outStart = 0;
  private busy = false;
  private lastSentAt = -Infinity;
  // When the oldest datagram not yet acknowledged arrived.
  private firstFreshAt = 0;
  private wakeAt = Infinity;

  constructor(radio: Radio, hubMac: number, host: EspNowPeerHost, options: EspNowPeerOptions = {}) {
    this.radio = radio;
    this.hubMac = hubMac;
    this.host = host;
    this.ackPeriodMs = options.ackPeriodMs ?? PEER_DEFAULTS.ackPeriodMs;
    this.ackEvery = options.ackEvery ?? PEER_DEFAULTS.ackEvery;
    this.keepaliveMs = options.keepaliveMs ?? PEER_DEFAULTS.keepaliveMs;
    this.egress = new Egress(options.queueBytes ?? PEER_DEFAULTS.queueBytes, options.queueFrames ?? PEER_DEFAULTS.queueFrames);
  }

  /** Datagrams are built in the egress's own datagram area. */
  private get out(): Uint8Array {
    return this.egress.datagram;
  }

  /** Queues one frame for the hub with its tag (Tag.CRITICAL: resent on a failed send); false when the queue is full. */
  queue(frame: Uint8Array, tag: number): boolean {
    const ok = this.egress.queue.push(frame, tag);
    if (!ok) this.refused++;
    this.pump();
    return ok;
  }

  /** The 12-byte ESTOP frame, ahead of everything queued. */
  writeAhead(frame: Uint8Array): void {
    this.egress.writeAhead(frame);
    this.pump();
  }

  received(mac: number, data: Uint8Array, length: number): void {
    if (mac !== this.hubMac || !this.open) return;
    const c = this.cursor;
    if (c.open(data, length) !== 0 || c.bare) {
      this.malformed++;
      return;
    }
    const broadcast = (c.flags & DatagramFlag.BROADCAST) !== 0;
    const at = this.host.now();
    if ((broadcast ? this.bcastSeen : this.unicastSeen).seen(c.seq, at)) {
      // The hub resent a datagram this peer has (its MAC acknowledgement was lost): §13.3.3.
      this.duplicates++;
      return;
    }
    if (this.unicast.fresh + this.bcast.fresh === 0) this.firstFreshAt = at;
    this.datagrams++;
    if (broadcast) {
      this.broadcastDatagrams++;
      this.bcast.record(c.seq);
    } else {
      this.unicast.record(c.seq);
    }
    this.arrived(c.seq, broadcast, at);
    while (c.next()) this.host.frame(data, c.start, c.end, broadcast);
    if (!this.open) return;
    if (this.unicast.fresh + this.bcast.fresh >= this.ackEvery) this.pump();
    else this.arm(this.firstFreshAt + this.ackPeriodMs);
  }

  /** A datagram of the hub's arrived (not a resend): a subclass may watch the stream. */
  protected arrived(_seq: number, _broadcast: boolean, _at: number): void {}

  sent(_mac: number, ok: boolean): void {
    this.busy = false;
    if (!ok) {
      this.failedSends++;
      this.egress.failed(this.out, this.outStart, this.outLen);
    }
    this.sendStatus(ok, this.host.now());
    this.pump();
  }

  /** A datagram of this peer's went on the air under `seq` (a resend under its original's): a subclass may watch it. */
  protected committed(_seq: number, _at: number): void {}

  /** The radio's status of this peer's last datagram: a subclass may watch it. */
  protected sendStatus(_ok: boolean, _at: number): void {}

  /** The host's wake-up for `at` (see EspNowPeerHost.schedule): a stale one does nothing. */
  wake(at: number): void {
    if (this.wakeAt !== at) return;
    this.wakeAt = Infinity;
    this.pump();
  }

  private arm(t: number): void {
    const now = this.host.now();
    const at = t < now ? now : t;
    if (at >= this.wakeAt && this.wakeAt >= now) return;
    this.wakeAt = at;
    this.host.schedule(at);
  }

  /** Sends what is due now: ESTOP first, a resend, acknowledgements, the queue. */
  pump(): void {
    if (this.busy || !this.open) return;
    const now = this.host.now();
    const fresh = this.unicast.fresh + this.bcast.fresh;
    // Due times are compared as schedule() computes them, within DUE_SLACK_MS: a clock that keeps
    // whole microseconds reads 1067.572 for a due time of 1067.5720000000001, and a wake-up must
    // always find its work due or the peer would re-arm itself at the same instant for ever.
    const keepalive = now + DUE_SLACK_MS >= this.lastSentAt + this.keepaliveMs && (this.unicast.any || this.bcast.any);
    const ackDue = (fresh > 0 && now + DUE_SLACK_MS >= this.firstFreshAt + this.ackPeriodMs) || fresh >= this.ackEvery || keepalive;
    const data = this.egress.pending();
    if (!data && !ackDue) {
      this.next(now, fresh);
      return;
    }
    // Acknowledgements ride on every datagram that has anything new to report, but a resend
    // carries its original's frames only (a hub that has the original drops it whole).
    const resend = this.egress.resendNext();
    const withAck = !resend && (ackDue || fresh > 0);
    let flags = 0;
    let p = HEADER_BYTES;
    if (withAck && this.bcast.any && (this.bcast.fresh > 0 || keepalive)) {
      flags |= DatagramFlag.BROADCAST_ACK;
      writeBroadcastAck(this.out, this.bcast.base, this.bcast.bitmap);
      p += BROADCAST_ACK_BYTES;
    }
    if (withAck && this.unicast.any && (this.unicast.fresh > 0 || keepalive || flags === 0)) {
      const w = this.ackW;
      w.reset();
      encodeBitmapAck(w, this.unicast.base, this.unicast.bitmap);
      this.out[p] = w.pos;
      this.out.set(w.buf.subarray(0, w.pos), p + 1);
      p += 1 + w.pos;
    }
    const start = p;
    const packed = this.egress.pack(start);
    const len = packed > 0 ? packed : p;
    if (len === HEADER_BYTES) {
      this.next(now, fresh);
      return;
    }
    writeHeader(this.out, flags, this.egress.packedSeq());
    const status = this.radio.send(this.hubMac, this.out, len);
    if (status !== RadioStatus.OK) {
      this.refusedSend(status, now);
      return;
    }
    const seq = this.egress.commit();
    this.busy = true;
    this.committed(seq, now);
    this.outStart = start;
    this.outLen = len;
    this.lastSentAt = now;
    if (p > HEADER_BYTES) {
      this.acksSent++;
      this.unicast.take();
      this.bcast.take();
    }
    this.next(now, 0);
  }

  /**
   * The radio refused the datagram (nothing was consumed). The simulator's radio refuses only
   * while one is in flight, and its status wakes the peer; a subclass on a device's radio tries
   * again later (client/espnow.ts).
   */
  protected refusedSend(_status: number, _now: number): void {}

  /** Whether a datagram of this peer is in the air (its status not yet reported). */
  get inFlight(): boolean {
    return this.busy;
  }

  /** Forgets everything queued and owed, and stops (the transport is closed). */
  stop(): void {
    this.open = false;
    this.egress.clear();
    this.wakeAt = Infinity;
  }

  // Arms the next wake-up: the acknowledgement due, or the keepalive.
  private next(now: number, fresh: number): void {
    let next = Infinity;
    if (fresh > 0) next = this.firstFreshAt + this.ackPeriodMs;
    if (this.unicast.any || this.bcast.any) {
      const k = this.lastSentAt + this.keepaliveMs;
      if (k < next) next = k;
    }
    if (next < Infinity) this.arm(next < now ? now : next);
  }

  /** @internal For subclasses: a wake-up at `t` (clamped to now). */
  protected wakeUp(t: number): void {
    this.arm(t);
  }
}
