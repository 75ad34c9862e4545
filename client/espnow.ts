// The client library's ESP-NOW transport (docs/protocol.md §13.3, docs/pendant.md): a HubClient
// (core.ts) speaks to the hub's ESP-NOW binding from another station over any Radio, on any
// ClientClock. Platform-free: on the pendant's ESP32 the radio is the hub's own device adapter
// (bindings/espnow/device.ts DeviceRadio) and the clock Moddable's timers; in the tests and the
// simulator it is a simulated radio on the simulated air (host-sim/links/espnow-air.ts).
//
// The datagram work is the binding's own peer side (bindings/espnow/peer.ts EspNowPeer, which the
// simulator's peers are too): frames packed into numbered datagrams, one in flight; the hub's
// streams acknowledged by bitmap; a keepalive at least every second; ESTOP written ahead of
// everything queued (`sendAhead`); frames that must not be lost resent when every MAC retry of
// their datagram failed (all but BUNDLE and ACK).
//
// ESP-NOW has no connection: "opening" a transport starts a new datagram stream (numbered from 0)
// towards the hub's MAC; closing it stops the stream. The hub admits the station on its first
// datagram (a paired station: encrypted with its own key, docs/security.md "ESP-NOW") and takes
// it as gone after 3 s of silence; the core's silence timeout (5 s) and resume do the rest.
//
// The transport also reads the link's congestion level with the hub's own detector (§13.3.4,
// bindings/detector.ts LossDetector, the §10.3 thresholds and hysteresis), in both directions:
// the hub's datagrams to this station, judged from the very ACK bitmaps this station sends the
// hub (what the hub's detector reads), and this station's datagrams to the hub, judged from the
// radio's send status: the same evidence read the same way. The hub's own level for the link comes
// in its PONGs (§5.14 `level`, HubClient.linkLevel); this reading covers the time before the first
// PONG and a hub that has stopped answering (pendant/pendant.ts shows the higher of the two).

import { LossDetector } from '../bindings/detector.js';
import { MAX_DATAGRAM_FRAME } from '../bindings/espnow/datagram.js';
import { RadioStatus, type Radio } from '../bindings/espnow/link.js';
import { EspNowPeer, type EspNowPeerHost, type EspNowPeerOptions } from '../bindings/espnow/peer.js';
import { FrameType, peekFrameType } from '../hub/frames.js';
import { Tag } from '../hub/ports.js';
import type { ClientClock, ClientTransport, TimerHandle, TransportFactory } from './transport.js';

/** A radio that refused a datagram for its own queue (NO_MEM) is asked again this much later. */
export const RADIO_RETRY_MS = 5;
/** A gap of more hub datagram numbers than one ACK bitmap covers is a stream that started over. */
const MAX_GAP = 32;

export interface EspNowTransportOptions {
  readonly radio: Radio;
  /** The hub's MAC, a 48-bit number (bindings/espnow/pairing.ts parseMac). */
  readonly hubMac: number;
  /** The pairing's local master key (16 bytes): the station is a paired one, encrypted. Null: unencrypted. */
  readonly lmk: Uint8Array | null;
  readonly clock: ClientClock;
  readonly peer?: EspNowPeerOptions;
}

// What must survive a failed send (§13.3.3): every frame but BUNDLE (a late sample is worse than
// a missing one) and ACK (a newer one follows).
function tagOf(bytes: Uint8Array): number {
  const t = peekFrameType(bytes, 0, bytes.length);
  return t !== FrameType.BUNDLE && t !== FrameType.ACK ? Tag.CRITICAL : 0;
}

/** The peer side with the hub's loss reading mirrored, and a retry after a refused send. */
class ClientPeer extends EspNowPeer {
  /** The hub's datagrams to this station, judged from the ACK bitmaps this station sends (the hub's reading). */
  readonly loss: LossDetector;
  /** This station's datagrams to the hub, judged from the radio's send status (every MAC retry failed: lost). */
  readonly own: LossDetector;
  private last = -1;
  private sentSeq = 0;

  constructor(radio: Radio, hubMac: number, host: EspNowPeerHost, options: EspNowPeerOptions | undefined, now: number) {
    super(radio, hubMac, host, options);
    this.loss = new LossDetector(now);
    this.own = new LossDetector(now);
  }

  protected override committed(seq: number, at: number): void {
    this.sentSeq = seq;
    this.own.sent(seq, at);
  }

  protected override sendStatus(ok: boolean, at: number): void {
    // The MAC's acknowledgement is the hub's receipt; its absence after every retry, a loss.
    if (ok) this.own.ack(this.sentSeq, 1, at);
    else this.own.sendStatus(false, at);
  }

  protected override arrived(seq: number, broadcast: boolean, at: number): void {
    if (broadcast) return;
    const loss = this.loss;
    const d = this.last < 0 ? 1 : (seq - this.last) & 0xffff;
    if (d > 0 && d < 0x8000) {
      // Newer than any before: the numbers skipped are datagrams the hub sent that never came.
      if (d <= MAX_GAP) for (let k = d - 1; k >= 1; k--) loss.sent((seq - k) & 0xffff, at);
      loss.sent(seq, at);
      this.last = seq;
    }
    loss.ack(this.unicast.base, this.unicast.bitmap, at);
  }

  protected override refusedSend(status: number, now: number): void {
    // BUSY: a status is still owed and wakes the peer when it comes. Anything else: ask again.
    if (status === RadioStatus.NOT_FOUND) this.missing = true;
    if (status !== RadioStatus.BUSY) this.wakeUp(now + RADIO_RETRY_MS);
  }

  /** The radio lost the hub from its table (a send said NOT_FOUND): the transport adds it back. */
  missing = false;
}

/**
 * One ESP-NOW "connection" to the hub: a datagram stream from this station, numbered from 0.
 * Frames from the hub reach `onFrame` as views valid during the call.
 */
export class EspNowClientTransport implements ClientTransport, EspNowPeerHost {
  onFrame: ((bytes: Uint8Array) => void) | null = null;
  onClose: (() => void) | null = null;
  readonly maxFrameBytes = MAX_DATAGRAM_FRAME;
  readonly peer: ClientPeer;
  private readonly clock: ClientClock;
  private timer: TimerHandle | null = null;
  private timerAt = Infinity;
  private closed = false;
  private readonly fire: () => void;

  constructor(private readonly o: EspNowTransportOptions) {
    this.clock = o.clock;
    this.peer = new ClientPeer(o.radio, o.hubMac, this, o.peer, o.clock.now());
    this.fire = () => {
      const at = this.timerAt;
      this.timer = null;
      this.timerAt = Infinity;
      if (this.peer.missing) this.addHub();
      this.peer.wake(at);
    };
    this.addHub();
    o.radio.setHandler(this.peer);
  }

  private addHub(): void {
    this.peer.missing = false;
    this.o.radio.addPeer(this.o.hubMac, this.o.lmk);
  }

  // ---- EspNowPeerHost

  now(): number {
    return this.clock.now();
  }

  schedule(at: number): void {
    if (this.closed) return;
    // The peer asks again only for an earlier time, or when the last one passed: one timer.
    if (this.timer !== null) this.clock.clearTimer(this.timer);
    this.timerAt = at;
    const ms = at - this.clock.now();
    this.timer = this.clock.setTimer(ms > 0 ? ms : 0, this.fire);
  }

  frame(bytes: Uint8Array, start: number, end: number): void {
    const h = this.onFrame;
    if (h && !this.closed) h(bytes.subarray(start, end));
  }

  // ---- ClientTransport

  send(bytes: Uint8Array): void {
    if (!this.closed) this.peer.queue(bytes, tagOf(bytes));
  }

  sendAhead(bytes: Uint8Array): void {
    if (!this.closed) this.peer.writeAhead(bytes);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.peer.stop();
    if (this.timer !== null) this.clock.clearTimer(this.timer);
    this.timer = null;
    const h = this.onClose;
    this.onClose = null;
    this.onFrame = null;
    if (h) h();
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * The link's loss level (0 clear, 1 congested, 2 severe, §10.3) as of now: the higher of the
   * hub's datagrams lost on the way here (what the hub reads from this station's ACK bitmaps)
   * and this station's lost on the way there (every MAC retry failed).
   */
  level(): number {
    const now = this.clock.now();
    const a = this.peer.loss.tick(now);
    const b = this.peer.own.tick(now);
    return a > b ? a : b;
  }

  /** The share of datagrams lost over the last second, the higher of the two directions. */
  lossRate(): number {
    const a = this.peer.loss.ratio();
    const b = this.peer.own.ratio();
    return a > b ? a : b;
  }
}

/**
 * Opens a new ESP-NOW transport to the hub for each (re)connect over the one radio. The radio's
 * handler is the newest transport's; `current` is it, for the link level and the counters.
 */
export class EspNowConnector {
  current: EspNowClientTransport | null = null;
  readonly factory: TransportFactory;

  constructor(private readonly o: EspNowTransportOptions) {
    this.factory = () => {
      const old = this.current;
      if (old) old.close();
      const t = new EspNowClientTransport(this.o);
      this.current = t;
      return Promise.resolve(t);
    };
  }

  /** The level of the transport in use (0 when there is none). */
  level(): number {
    const t = this.current;
    return t && !t.isClosed ? t.level() : 0;
  }
}
