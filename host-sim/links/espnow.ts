// ESP-NOW (§13.3) on the kernel: the hub side is the binding's real EspNowBinding (one per link
// profile: its peer table, egress queues, datagram packing, retransmission of never-shed frames,
// LossDetector and watermark); the air, the radios and the client peers are the binding's own
// simulation (bindings/espnow/sim.ts: SimAir, SimRadio, SimPeer), re-timed onto the kernel.
//
// Model (SimAir): one shared channel per profile; transmissions take turns with no collisions;
// airtime per attempt = attemptUs + (bytes + overheadBytes) × 8 / phy, plus ackUs for unicast;
// every frame on the air is lost with `lossRate` (MAC acknowledgements too); up to 1 + `retries`
// attempts. The peer acknowledges with bitmap ACKs every `ackPeriodMs` (§13.3). The binding
// declares a peer silent for PEER_SILENCE_MS gone (§6.6); a peer that the hub closed hears
// nothing more and notices by its own silence timeout. A client that reconnects comes back as a
// new peer (a fresh MAC), so that the hub never sees a HELLO on a transport it still holds.
//
// Faults: a partition (or a stall: ESP-NOW has no queue the peer could hold) of one client makes
// every frame to or from its MAC lost; of a whole profile, every frame on that air.
//
// Keys (docs/security.md "ESP-NOW"): with `encrypted` (the default) every client is a paired
// station: the binding pairs its MAC with a key of its own when it connects (and forgets it once
// the connection ended and the binding closed its link), and the peer holds the hub with that
// key; the radios decrypt as the ESP32's do (espnow-air.ts). Without, the profile lets stations
// speak unencrypted, at observer tier at most. The simulated hub is built with the largest
// encrypted-peer setting (17), so that reconnecting clients (each a fresh MAC) are not refused.

import type { CatalogIndex } from '../../catalog/index.js';
import type { HubAttach } from '../../bindings/link.js';
import { HEADER_BYTES, LENGTH_BYTES, MAX_DATAGRAM_FRAME } from '../../bindings/espnow/datagram.js';
import { EspNowBinding, type EspNowLink, type Radio } from '../../bindings/espnow/link.js';
import { ESPNOW_MAX_ENCRYPTED_LIMIT } from '../../bindings/espnow/pairing.js';
import { SimAir, SimPeer, type SimRadio } from './espnow-air.js';
import type { LinkSink } from '../../hub/ports.js';
import { type Kernel, type Task, US_PER_MS } from '../kernel.js';
import { Connection, type ConnectionEnv } from './connection.js';

export interface EspNowParams {
  readonly binding: 'espnow';
  readonly phyKbps: number;
  readonly lossRate: number;
  readonly retries: number;
  /** Per-peer egress queue of the binding. */
  readonly queueBytes: number;
  readonly queueFrames: number;
  /** The peer's bitmap-ACK period. */
  readonly ackPeriodMs: number;
  /** 1: clients are paired stations, encrypted with keys of their own; 0: unencrypted, observer tier at most. */
  readonly encrypted: number;
}

export const ESPNOW_DEFAULTS = Object.freeze({
  phyKbps: 1000,
  lossRate: 0,
  retries: 5,
  queueBytes: 1024,
  queueFrames: 32,
  ackPeriodMs: 50,
  encrypted: 1,
});

export const HUB_MAC = 0x02_00_00_00_00_01;

class AirEvent implements Task {
  constructor(
    private readonly air: KernelAir,
    private readonly fn: () => void,
  ) {}
  run(): void {
    this.air.sync();
    this.fn();
  }
}

/** SimAir whose clock is the kernel's and whose events are kernel events. */
export class KernelAir extends SimAir {
  /** MACs cut off the air (partition, a silenced peer). */
  readonly cut = new Set<number>();

  constructor(
    private readonly kernel: Kernel,
    params: EspNowParams,
  ) {
    super(
      { prng: { next: () => kernel.rng.float() }, phyBps: params.phyKbps * 1000, loss: params.lossRate, retries: params.retries, maxEncrypted: ESPNOW_MAX_ENCRYPTED_LIMIT },
      kernel.nowUs / US_PER_MS,
    );
  }

  /** Brings the air's clock to the kernel's (its own queue stays empty: every event is the kernel's). */
  sync(): void {
    super.advance(this.kernel.nowUs / US_PER_MS);
  }

  override now(): number {
    this.sync();
    return super.now();
  }

  override schedule(t: number, run: () => void): void {
    this.sync();
    this.kernel.at(Math.ceil(t * US_PER_MS), new AirEvent(this, run));
  }

  override transmit(from: SimRadio, to: number, bytes: Uint8Array): void {
    this.sync();
    if (this.cut.has(from.mac) || this.cut.has(to)) {
      const loss = this.loss;
      const ackLoss = this.ackLoss;
      this.loss = 1;
      this.ackLoss = 1;
      super.transmit(from, to, bytes);
      this.loss = loss;
      this.ackLoss = ackLoss;
      return;
    }
    super.transmit(from, to, bytes);
  }
}

/** One ESP-NOW link profile: its air, the hub's radio on it and the binding. */
export class EspNowMedium {
  readonly air: KernelAir;
  readonly binding: EspNowBinding;
  readonly params: EspNowParams;
  private readonly byMac = new Map<number, EspNowConnection>();
  /** The clients' stations the binding has paired, until they are unpaired (upkeep). */
  private readonly paired = new Set<number>();
  private nextMac = 1;

  constructor(
    private readonly kernel: Kernel,
    readonly profile: string,
    index: number,
    params: EspNowParams,
    hub: HubAttach,
    catalog: CatalogIndex,
    hubClock: { now(): number },
  ) {
    this.params = params;
    this.air = new KernelAir(kernel, params);
    const radio = this.air.radio(HUB_MAC + index * 0x100);
    radio.hub = true;
    this.hubMac = HUB_MAC + index * 0x100;
    this.binding = new EspNowBinding({
      clock: hubClock,
      radio: radio as Radio,
      queueBytes: params.queueBytes,
      queueFrames: params.queueFrames,
      attach: (link) => this.attach(link as EspNowLink, hub),
      allowUnencrypted: !params.encrypted,
      maxEncrypted: ESPNOW_MAX_ENCRYPTED_LIMIT,
    });
    this.peerBase = 0x0a_00_00_00_00_00 + index * 0x1_00_00_00;
  }

  readonly hubMac: number;
  private readonly peerBase: number;

  newMac(): number {
    return this.peerBase + this.nextMac++;
  }

  register(c: EspNowConnection): void {
    this.byMac.set(c.mac, c);
  }

  /**
   * The key a new client's station is paired with (its own, made from its MAC), or null on an
   * unencrypted profile. The binding pairs it now; a pairing the binding refuses leaves the
   * station with a key the hub's radio does not hold, so nothing it sends gets through.
   */
  pairStation(mac: number): Uint8Array | null {
    if (!this.params.encrypted) return null;
    const lmk = new Uint8Array(16);
    for (let i = 0; i < 16; i++) lmk[i] = (Math.floor(mac / 2 ** ((i % 6) * 8)) + i * 37) & 0xff;
    this.binding.pair({ mac, lmk });
    this.paired.add(mac);
    return lmk;
  }

  private attach(link: EspNowLink, hub: HubAttach): LinkSink {
    const c = this.byMac.get(link.mac);
    if (!c) return { frame: () => undefined, lost: () => undefined, levelChanged: () => undefined };
    return c.hubLinkOpened(link, hub);
  }

  /** Connections currently open on this air. */
  stations(): number {
    let n = 0;
    for (const c of this.byMac.values()) if (!c.ended) n++;
    return n;
  }

  setLoss(p: number): void {
    this.air.loss = p;
    this.air.ackLoss = p;
  }

  /**
   * How long the air may stay taken after a fault ends by transmissions begun during it: every
   * station (the hub and each peer ever on this air) has at most one transmission reserved, and
   * one to or from a MAC cut off the air is lost on every attempt (1 + retries full datagrams).
   */
  faultSettleMs(): number {
    return (1 + this.byMac.size) * (this.air.retries + 1) * this.air.airtimeMs(250, true);
  }

  upkeep(): void {
    this.air.sync();
    this.binding.tick();
    // A station whose connection ended is unpaired once the binding closed its link (silence).
    for (const mac of this.paired) {
      const c = this.byMac.get(mac);
      if (c && c.ended && this.binding.linkOf(mac) === undefined) {
        this.binding.unpair(mac);
        this.paired.delete(mac);
      }
    }
  }

}

export class EspNowConnection extends Connection {
  readonly binding = 'espnow';
  readonly mac: number;
  readonly peer: SimPeer;
  private readonly medium: EspNowMedium;

  constructor(env: ConnectionEnv, id: string, client: string, profile: string, medium: EspNowMedium) {
    super(env, id, client, profile, MAX_DATAGRAM_FRAME);
    this.medium = medium;
    this.mac = medium.newMac();
    medium.register(this);
    medium.air.sync();
    const lmk = medium.pairStation(this.mac);
    this.peer = new SimPeer(medium.air, this.mac, medium.hubMac, lmk ? { ackPeriodMs: medium.params.ackPeriodMs, lmk } : { ackPeriodMs: medium.params.ackPeriodMs });
    const peer = this.peer;
    // The peer's radio events pass through here so that its frames reach the client library.
    peer.radio.setHandler({
      received: (mac, data, length) => {
        if (this.ended) return;
        peer.received(mac, data, length);
        const inbox = peer.inbox;
        for (let i = 0; i < inbox.length; i++) this.deliver((inbox[i] as { bytes: Uint8Array }).bytes);
        inbox.length = 0;
      },
      sent: (mac, ok) => peer.sent(mac, ok),
    });
  }

  /** The binding admitted this peer: its link goes to the hub through the tap. */
  hubLinkOpened(link: EspNowLink, hub: HubAttach): LinkSink {
    void hub;
    const sink = this.attachTap(link);
    return {
      frame: (b, s, e) => sink.frame(b, s, e),
      levelChanged: () => sink.levelChanged(),
      lost: () => {
        // The binding declared the peer silent (§6.6): this attachment is over on the hub's
        // side. The peer may still be on the air; a datagram from it opens a new one.
        sink.lost();
        if (this.tap) this.tap.ended();
      },
    };
  }

  clientSend(bytes: Uint8Array, ahead: boolean): void {
    if (this.ended) return;
    this.medium.air.sync();
    if (ahead) this.peer.writeAhead(bytes);
    else if (!this.peer.send(bytes)) this.lostUp++;
  }

  /** The client walks away: its peer falls silent, and the binding notices (PEER_SILENCE_MS). */
  clientClose(): void {
    if (this.ended) return;
    this.tellClientClosed();
    this.mute();
    this.maybeEnd('client-close');
  }

  private mute(): void {
    this.peer.radio.setHandler({ received: () => undefined, sent: () => undefined });
    this.peer.radio.removePeer(this.medium.hubMac);
    this.medium.air.cut.add(this.mac);
  }

  private maybeEnd(cause: string): void {
    if (this.ended) return;
    this.end(cause);
  }

  disconnect(mode: 'reset' | 'silent'): void {
    void mode;
    // ESP-NOW has no connection to reset: the peer is gone from the air either way.
    this.goSilent();
    this.medium.air.cut.add(this.mac);
  }

  override partition(durationMs: number): void {
    super.partition(durationMs);
    this.medium.air.cut.add(this.mac);
  }

  override stall(dir: number, durationMs: number): void {
    void dir;
    this.partition(durationMs);
  }

  protected resume(): void {
    if (!this.partitioned && !this.ended) this.medium.air.cut.delete(this.mac);
  }

  /**
   * A fault's hold on the air outlasts it (KernelAir.transmit: a datagram to or from a cut MAC
   * takes every retry's airtime, reserved when it was sent), so a fault stands in the way until
   * those reservations are spent: for the ESTOP bound and sampleLate alike (report.ts).
   */
  override impairedDuring(fromUs: number, toUs: number): boolean {
    return super.impairedDuring(fromUs - this.medium.faultSettleMs() * US_PER_MS, toUs);
  }

  setLoss(p: number): void {
    this.medium.setLoss(p);
  }

  /**
   * One RTT plus one frame time per station on the air: the datagram in flight, then one
   * datagram from each peer and one ESTOP datagram per peer ahead of this one, each with every
   * MAC retry when the air loses frames.
   */
  estopBoundMs(): number {
    const air = this.medium.air;
    const tries = air.loss > 0 ? air.retries + 1 : 1;
    const full = tries * air.airtimeMs(250, true);
    return (1 + 2 * this.medium.stations()) * full + 2 * air.airtimeMs(16, true);
  }

  /**
   * The frame alone on an idle air: one exchange of the datagram that carries it (its header and
   * length byte, the MAC acknowledgement), with every retry when the air loses frames, as the
   * ESTOP bound counts one.
   */
  idleDeliveryMs(frameBytes: number): number {
    const air = this.medium.air;
    const tries = air.loss > 0 ? air.retries + 1 : 1;
    return tries * air.airtimeMs(HEADER_BYTES + LENGTH_BYTES + frameBytes, true);
  }

  upkeep(): void {
    // The binding's tick (EspNowMedium.upkeep) ages the peer's detectors.
  }
}

export { MAX_DATAGRAM_FRAME };
export type { Task };
