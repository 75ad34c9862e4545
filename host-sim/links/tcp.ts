// Wi-Fi TCP and WebSocket (§13.2) on the kernel: the hub side is the binding's real TcpLink
// (bindings/tcp/egress.ts: egress queue, watermark and ack-lag detector, ESTOP write-ahead, ack
// window); this file is its socket and the network behind it.
//
// Model, hub → client:
//   socket    the adapter hands the socket one TCP segment (`segmentBytes`, WebSocket: one
//             message) when the previous one has left, so what waits, waits in the link's egress
//             queue where the watermark sees it (as bindings/tcp/node.ts keeps a socket below a
//             small limit). A write-ahead ESTOP goes in a segment of its own with the rest of a
//             record partly sent before it (TCP_NODELAY), so it waits behind at most the segment
//             on the wire and that remainder.
//   wire      bytes are serialized at `bandwidthKbps` and arrive `latencyMs` plus a uniform
//             jitter in [0, `jitterMs`) later, in order. A segment hit by `lossRate` is
//             retransmitted `rtoMs` later and holds up everything behind it (head of line).
//   receiver  bytes on the wire plus bytes the client has not read never exceed `rwndBytes`;
//             with `readerKbps` > 0 the client application reads that slowly (a slow reader).
// Client → hub: the same wire at `upBandwidthKbps`; the hub reads at once.
// Framing: TCP frames carry the 2-byte length prefix (§2), bytes of the stream are what travel;
// WebSocket messages travel whole, with a 2- or 4-byte header (6 or 8 from the client, masked).

import { Tier } from '../../catalog/schema.js';
import { lengthPrefixed, LengthPrefixReassembler } from '../../client/transport.js';
import { LinkFraming, TcpLink, type LinkTransport } from '../../bindings/tcp/egress.js';
import { type Task, US_PER_MS } from '../kernel.js';
import { Connection, type ConnectionEnv } from './connection.js';
import { FrameDeque } from './deque.js';

export interface TcpParams {
  readonly binding: 'tcp' | 'ws';
  readonly bandwidthKbps: number;
  readonly upBandwidthKbps: number;
  readonly latencyMs: number;
  readonly jitterMs: number;
  /** The binding's egress queue (TcpLink queueBytes). */
  readonly queueBytes: number;
  readonly segmentBytes: number;
  readonly lossRate: number;
  readonly rtoMs: number;
  /** 0: the client reads at once. */
  readonly readerKbps: number;
  readonly rwndBytes: number;
  /**
   * 1: the network the client joins is open (an access point without a password): the link
   * carries the observer tier ceiling, as the device's does unless `wifi_open_ceiling` says
   * otherwise (docs/security.md "Wi-Fi"); 0: a WPA2 network, any tier.
   */
  readonly openNetwork: number;
}

export const TCP_DEFAULTS = Object.freeze({
  bandwidthKbps: 8000,
  upBandwidthKbps: 8000,
  latencyMs: 4,
  jitterMs: 2,
  queueBytes: 16384,
  segmentBytes: 1460,
  lossRate: 0,
  rtoMs: 200,
  readerKbps: 0,
  rwndBytes: 65535,
  openNetwork: 0,
});

/** What a closing socket still takes from the link at once (bindings/tcp/node.ts NODE_SOCKET_LIMIT_BYTES). */
const SOCKET_BUFFER_BYTES = 4096;

const PUMP = 1;
const TX_DONE = 2;
const ARRIVE = 3;
const READ_DONE = 4;
const UP_TX_DONE = 5;
const UP_ARRIVE = 6;

export class TcpConnection extends Connection implements LinkTransport, Task {
  readonly binding: string;
  readonly link: TcpLink;
  readonly params: TcpParams;
  private lossRate: number;
  private readonly ws: boolean;
  private readonly scratch: Uint8Array;
  private readonly down = new FrameDeque();
  private readonly recv = new FrameDeque();
  private readonly up = new FrameDeque();
  private readonly upFlight = new FrameDeque();
  private pumpScheduled = false;
  private txBusy = false;
  private reading = false;
  private upBusy = false;
  private inFlight = 0;
  private lastArrivalUs = 0;
  private txEndUs = 0;
  private lastUpArrivalUs = 0;
  private giving = false;
  private hubSideClosed = false;
  private readonly reasm: LengthPrefixReassembler | null;

  constructor(env: ConnectionEnv, id: string, client: string, profile: string, params: TcpParams) {
    super(env, id, client, profile);
    this.params = params;
    this.binding = params.binding;
    this.ws = params.binding === 'ws';
    this.lossRate = params.lossRate;
    this.scratch = new Uint8Array(Math.max(params.segmentBytes, 8192));
    this.reasm = this.ws
      ? null
      : new LengthPrefixReassembler(
          (frame) => this.deliver(frame),
          () => this.reset('client-framing'),
        );
    this.link = new TcpLink({
      hub: { attach: (l) => this.attachTap(l) },
      clock: env.hubClock,
      framing: this.ws ? LinkFraming.MESSAGE : LinkFraming.LENGTH_PREFIX,
      binding: params.binding,
      queueBytes: params.queueBytes,
      tierCeiling: params.openNetwork ? Tier.observer : Tier.maintainer,
    });
    this.link.start(this);
  }

  private txUs(bytes: number, kbps: number): number {
    return (bytes * 8 * US_PER_MS) / kbps;
  }

  private wsHeader(len: number, fromClient: boolean): number {
    return (len <= 125 ? 2 : 4) + (fromClient ? 4 : 0);
  }

  private arrivalUs(txEndUs: number, last: number): number {
    const p = this.params;
    let a = txEndUs + p.latencyMs * US_PER_MS + (p.jitterMs > 0 ? this.kernel.rng.float() * p.jitterMs * US_PER_MS : 0);
    if (this.lossRate > 0 && this.kernel.rng.chance(this.lossRate)) a += p.rtoMs * US_PER_MS;
    return a < last ? last : a;
  }

  // ---------------------------------------------------------------- LinkTransport (the socket)

  kick(): void {
    if (this.pumpScheduled) return;
    this.pumpScheduled = true;
    // As the Node adapter does: one pump per burst of sends, after the hub's call returns.
    this.kernel.after(0, this, PUMP);
  }

  close(_wsCode: number): void {
    if (this.giving) return;
    this.giving = true;
    this.hubSideClosed = true;
    // The link gives up the transport: what the socket takes now (up to its buffer, as the Node
    // adapter's socket limit) still goes; a link that still holds more is wedged (a park) or its
    // client does not read, and the socket is cut.
    this.flushOnClose();
    const cut = this.link.pendingBytes() > 0;
    this.link.transportClosed();
    const lastUs = Math.max(this.kernel.nowUs, this.lastArrivalUs);
    this.kernel.timeout((cut ? this.kernel.nowUs : lastUs) - this.kernel.nowUs + this.params.latencyMs * US_PER_MS, () => {
      if (cut) this.down.clear();
      this.tellClientClosed();
      this.end(cut ? 'hub-reset' : 'hub-close');
    });
  }

  /** Everything the socket's buffer takes at once, serialized behind what is on the wire. */
  private flushOnClose(): void {
    const p = this.params;
    let at = Math.max(this.kernel.nowUs, this.txEndUs);
    let taken = 0;
    while (taken < SOCKET_BUFFER_BYTES && !this.downBlocked) {
      const len = this.ws ? this.link.nextMessageLength() : Math.min(p.segmentBytes, SOCKET_BUFFER_BYTES - taken);
      if (len === 0) break;
      const n = this.link.pull(this.scratch, 0, len);
      if (n <= 0) break;
      taken += n;
      at += this.txUs(n + (this.ws ? this.wsHeader(n, false) : 0), p.bandwidthKbps);
      const arrival = this.arrivalUs(at, this.lastArrivalUs);
      this.lastArrivalUs = arrival;
      this.down.push(this.scratch, n, this.kernel.nowUs, arrival);
      this.inFlight += n;
      this.kernel.at(arrival, this, ARRIVE);
    }
    this.txEndUs = at;
  }

  private pump(): void {
    this.pumpScheduled = false;
    if (this.txBusy || this.ended || this.downBlocked) return;
    const p = this.params;
    const room = p.rwndBytes - this.inFlight;
    let n: number;
    let onWire: number;
    if (this.ws) {
      const len = this.link.nextMessageLength();
      if (len === 0 || (len > room && this.inFlight > 0)) return;
      n = this.link.pull(this.scratch, 0, len);
      onWire = n + this.wsHeader(n, false);
    } else {
      const max = Math.min(p.segmentBytes, this.inFlight > 0 ? room : p.segmentBytes);
      if (max <= 0) return;
      const q = this.link.queue;
      if (q.aheadWaiting > 0) {
        // A write-ahead ESTOP leaves in a segment of its own, right after the rest of a record
        // already partly sent (TCP delivers a segment whole: filling it would hold the ESTOP
        // back by one more segment time).
        const target = q.aheadOut + 1;
        n = 0;
        while (n < max && q.aheadOut < target) {
          const k = this.link.pull(this.scratch, n, 1);
          if (k === 0) break;
          n += k;
        }
      } else n = this.link.pull(this.scratch, 0, max);
      onWire = n;
    }
    if (n <= 0) return;
    const txEnd = this.kernel.nowUs + this.txUs(onWire, p.bandwidthKbps);
    this.txEndUs = txEnd;
    const arrival = this.arrivalUs(txEnd, this.lastArrivalUs);
    this.lastArrivalUs = arrival;
    this.down.push(this.scratch, n, this.kernel.nowUs, arrival);
    this.inFlight += n;
    this.txBusy = true;
    this.kernel.at(txEnd, this, TX_DONE);
    this.kernel.at(arrival, this, ARRIVE);
  }

  run(kind: number): void {
    switch (kind) {
      case PUMP:
        this.pump();
        return;
      case TX_DONE:
        this.txBusy = false;
        this.pump();
        return;
      case ARRIVE: {
        const q = this.down;
        if (q.size === 0) return;
        if (this.params.readerKbps > 0) {
          q.moveHeadTo(this.recv, 0);
          this.read();
          return;
        }
        const len = q.headLen;
        this.toClient(q.headBytes, len);
        q.shift();
        this.inFlight -= len;
        this.kick();
        return;
      }
      case READ_DONE: {
        this.reading = false;
        const q = this.recv;
        if (q.size === 0) return;
        const len = q.headLen;
        this.toClient(q.headBytes, len);
        q.shift();
        this.inFlight -= len;
        this.read();
        this.kick();
        return;
      }
      case UP_TX_DONE:
        this.upBusy = false;
        this.pumpUp();
        return;
      case UP_ARRIVE: {
        const q = this.upFlight;
        if (q.size === 0) return;
        const len = q.headLen;
        const b = q.headBytes;
        if (!this.hubSideClosed) {
          if (this.ws) this.link.message(b, 0, len, true);
          else this.link.input(b, 0, len);
        }
        q.shift();
        return;
      }
    }
  }

  private read(): void {
    if (this.reading || this.recv.size === 0) return;
    this.reading = true;
    this.kernel.after(this.txUs(this.recv.headLen, this.params.readerKbps), this, READ_DONE);
  }

  private toClient(bytes: Uint8Array, len: number): void {
    if (this.ws) this.deliver(bytes.subarray(0, len));
    else if (this.reasm && !this.reasm.broken) this.reasm.push(bytes.subarray(0, len));
  }

  // ---------------------------------------------------------------- the client's socket

  clientSend(bytes: Uint8Array, ahead: boolean): void {
    if (this.ended || this.hubSideClosed) return;
    const b = this.ws ? bytes : lengthPrefixed(bytes);
    if (ahead) this.up.unshift(b, b.length, this.kernel.nowUs);
    else this.up.push(b, b.length, this.kernel.nowUs);
    this.pumpUp();
  }

  private pumpUp(): void {
    if (this.upBusy || this.ended || this.upBlocked) return;
    const q = this.up;
    if (q.size === 0) return;
    const len = q.headLen;
    const onWire = len + (this.ws ? this.wsHeader(len, true) : 0);
    const txEnd = this.kernel.nowUs + this.txUs(onWire, this.params.upBandwidthKbps);
    const arrival = this.arrivalUs(txEnd, this.lastUpArrivalUs);
    this.lastUpArrivalUs = arrival;
    q.moveHeadTo(this.upFlight, arrival);
    this.upBusy = true;
    this.kernel.at(txEnd, this, UP_TX_DONE);
    this.kernel.at(arrival, this, UP_ARRIVE);
  }

  clientClose(): void {
    if (this.ended) return;
    this.tellClientClosed();
    this.down.clear();
    this.recv.clear();
    // The FIN reaches the hub after what the client already sent.
    const at = Math.max(this.kernel.nowUs, this.lastUpArrivalUs) + this.params.latencyMs * US_PER_MS;
    this.kernel.timeout(at - this.kernel.nowUs, () => {
      this.hubSideClosed = true;
      this.link.transportClosed();
      this.end('client-close');
    });
  }

  private reset(cause: string): void {
    if (this.ended) return;
    this.kernel.timeout(this.params.latencyMs * US_PER_MS, () => {
      this.down.clear();
      this.recv.clear();
      this.upFlight.clear();
      this.up.clear();
      this.hubSideClosed = true;
      this.link.transportClosed();
      this.tellClientClosed();
      this.end(cause);
    });
  }

  // ---------------------------------------------------------------- faults

  disconnect(mode: 'reset' | 'silent'): void {
    if (mode === 'silent') this.goSilent();
    else this.reset('reset');
  }

  setLoss(p: number): void {
    this.lossRate = p;
  }

  protected resume(): void {
    this.kick();
    this.pumpUp();
  }

  protected override backlogDrainMs(): number {
    const bytes = this.link.pendingBytes() + this.inFlight;
    return bytes > 0 ? this.txUs(bytes, this.params.bandwidthKbps) / US_PER_MS : 0;
  }

  override readerLimited(): boolean {
    return this.params.readerKbps > 0;
  }

  /**
   * One RTT (the latency and the worst jitter each way, and one retransmission timeout when the
   * link loses) plus one frame time: on WebSocket the message on the wire, on TCP the segment on
   * the wire and the rest of a record partly sent before the ESTOP (at most the largest frame
   * handed over); then the ESTOP's own time on the wire.
   */
  estopBoundMs(): number {
    const p = this.params;
    const rtt = 2 * (p.latencyMs + p.jitterMs) + (this.lossRate > 0 ? p.rtoMs : 0);
    const largest = Math.max(this.tap ? this.tap.stats.maxFrameBytes : 0, 12) + 4;
    const frame = this.ws ? largest : p.segmentBytes + largest;
    return rtt + (this.txUs(frame, p.bandwidthKbps) + this.txUs(16, p.bandwidthKbps)) / US_PER_MS;
  }

  /**
   * The frame alone on an idle socket: its bytes with their framing (the 2-byte length prefix;
   * WebSocket, the message header) on the wire at `bandwidthKbps`, then the latency and the
   * worst jitter.
   */
  idleDeliveryMs(frameBytes: number): number {
    const p = this.params;
    const onWire = frameBytes + (this.ws ? this.wsHeader(frameBytes, false) : 2);
    return p.latencyMs + p.jitterMs + this.txUs(onWire, p.bandwidthKbps) / US_PER_MS;
  }

  upkeep(): void {
    // TcpLink judges its level on every level() call; nothing to age here.
  }
}
