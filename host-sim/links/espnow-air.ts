// The simulated ESP-NOW air for host-sim and the tests: radios that implement the same Radio the
// device adapter does (link.ts), so the binding runs unchanged over it, and simulated peers that
// speak the datagram framing of datagram.ts the way a client must.
//
// The model (all knobs in SimAirOptions, docs/_espnow.md "Simulation"):
//   - one shared channel: transmissions take turns, FIFO by start time, no collisions;
//   - airtime per attempt = attemptUs + (length + overheadBytes) × 8 / phyBps, plus ackUs for a
//     unicast attempt (SIFS and the MAC acknowledgement);
//   - every frame on the air (datagram or MAC acknowledgement) is lost with probability `loss`
//     (`ackLoss` for acknowledgements), drawn from the PRNG passed in;
//   - unicast: up to 1 + `retries` attempts until one is acknowledged; the send status is true
//     only then (a datagram whose acknowledgements were all lost arrived but reports failure);
//     broadcast: one attempt, each receiver draws its own loss, the status is always true;
//   - peer tables of `maxPeers` (20) entries, `maxEncrypted` (7) of them encrypted;
//   - keys (docs/security.md "ESP-NOW"): a unicast datagram goes out encrypted when the sender
//     holds the receiver as an encrypted peer, with that peer's key. The receiver takes it only
//     when it holds the sender with the same key; an encrypted datagram it cannot decrypt (no
//     key, another key: a station spoofing a paired peer's MAC) and an unencrypted unicast one
//     from a MAC it holds as encrypted are dropped by its radio and counted (`cryptoDrops`), as
//     the ESP32's radio drops them. A broadcast datagram is never encrypted; a radio marked
//     `hub` drops one from a MAC it holds as encrypted (the device adapter's check, device.ts);
//   - the MAC acknowledgement is the radio's, before any decryption: a datagram dropped for its
//     key is still acknowledged, as ESP-NOW does;
//   - a virtual clock: nothing happens until advance(now), which completes transmissions whose
//     airtime has passed, in time order, and runs the peers' ACK timers.
//
// Platform-free and deterministic for a given PRNG seed. Simulation only: it allocates per datagram.

import { decodeFrame, FrameType, MAX_HUB_FRAME_BYTES, peekFrameType, type Frame } from '../../hub/frames.js';
import { Tag, type Clock } from '../../hub/ports.js';
import { DATAGRAM_MAX_BYTES } from '../../bindings/espnow/datagram.js';
import { EspNowPeer, PEER_DEFAULTS, type EspNowPeerHost, type EspNowPeerOptions } from '../../bindings/espnow/peer.js';
import { BROADCAST_MAC, ESPNOW_MAX_ENCRYPTED_PEERS, ESPNOW_MAX_PEERS, RadioStatus, type Radio, type RadioHandler } from '../../bindings/espnow/link.js';

/** Uniform numbers in [0, 1) from a seeded generator: the only source of chance in the simulation. */
export interface Prng {
  next(): number;
}

/** mulberry32: small, fast, seedable; good enough for fault injection. */
export class Mulberry32 implements Prng {
  private s: number;
  constructor(seed: number) {
    this.s = seed >>> 0;
  }
  next(): number {
    let t = (this.s = (this.s + 0x6d2b79f5) | 0);
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
}

export interface SimAirOptions {
  readonly prng: Prng;
  /** PHY rate in bit/s; ESP-NOW's default is 1 Mbps. */
  readonly phyBps?: number;
  /** Bytes on the air besides the payload: 802.11 header 24, action/vendor element 15, FCS 4. */
  readonly overheadBytes?: number;
  /** Per attempt: long PLCP preamble and header 192 µs, DIFS 50 µs, mean backoff 310 µs. */
  readonly attemptUs?: number;
  /** Per unicast attempt: SIFS 10 µs and the 14-byte MAC acknowledgement at 1 Mbps with its preamble, 304 µs. */
  readonly ackUs?: number;
  /** Probability that one frame on the air is lost. */
  readonly loss?: number;
  /** Probability that a MAC acknowledgement is lost (default: `loss`). */
  readonly ackLoss?: number;
  /** MAC retries after the first attempt. The Wi-Fi driver sets the real number; measure it. */
  readonly retries?: number;
  readonly maxPeers?: number;
  readonly maxEncrypted?: number;
}

export const SIM_DEFAULTS = Object.freeze({
  phyBps: 1_000_000,
  overheadBytes: 43,
  attemptUs: 552,
  ackUs: 314,
  loss: 0,
  retries: 5,
  maxPeers: ESPNOW_MAX_PEERS,
  maxEncrypted: ESPNOW_MAX_ENCRYPTED_PEERS,
});

interface SimEvent {
  readonly t: number;
  readonly n: number;
  readonly run: () => void;
}

export class SimAirCounters {
  transmissions = 0;
  attempts = 0;
  /** Datagram copies that reached a receiver. */
  deliveries = 0;
  /** Frames (datagram attempts, broadcast copies, MAC acknowledgements) the air lost. */
  lostFrames = 0;
  /** Total time the channel was busy, ms. */
  busyMs = 0;
}

/** The shared channel and its clock. */
export class SimAir implements Clock {
  readonly counters = new SimAirCounters();
  loss: number;
  ackLoss: number;
  retries: number;
  readonly phyBps: number;
  readonly overheadBytes: number;
  readonly attemptUs: number;
  readonly ackUs: number;
  readonly maxPeers: number;
  readonly maxEncrypted: number;
  private readonly prng: Prng;
  private t: number;
  private freeAt: number;
  private seq = 0;
  private readonly events: SimEvent[] = [];
  private readonly nodes = new Map<number, SimRadio>();

  constructor(options: SimAirOptions, start = 0) {
    this.prng = options.prng;
    this.phyBps = options.phyBps ?? SIM_DEFAULTS.phyBps;
    this.overheadBytes = options.overheadBytes ?? SIM_DEFAULTS.overheadBytes;
    this.attemptUs = options.attemptUs ?? SIM_DEFAULTS.attemptUs;
    this.ackUs = options.ackUs ?? SIM_DEFAULTS.ackUs;
    this.loss = options.loss ?? SIM_DEFAULTS.loss;
    this.ackLoss = options.ackLoss ?? this.loss;
    this.retries = options.retries ?? SIM_DEFAULTS.retries;
    this.maxPeers = options.maxPeers ?? SIM_DEFAULTS.maxPeers;
    this.maxEncrypted = options.maxEncrypted ?? SIM_DEFAULTS.maxEncrypted;
    this.t = start;
    this.freeAt = start;
  }

  now(): number {
    return this.t;
  }

  /** A radio with this MAC on the air (created on first use). */
  radio(mac: number): SimRadio {
    let r = this.nodes.get(mac);
    if (!r) {
      r = new SimRadio(this, mac);
      this.nodes.set(mac, r);
    }
    return r;
  }

  /** Airtime of one attempt of a `length`-byte datagram, in ms. */
  airtimeMs(length: number, unicast: boolean): number {
    const us = this.attemptUs + ((length + this.overheadBytes) * 8 * 1e6) / this.phyBps + (unicast ? this.ackUs : 0);
    return us / 1000;
  }

  /** Runs `run` at time `t` (not before the current time). */
  schedule(t: number, run: () => void): void {
    const ev: SimEvent = { t: t < this.t ? this.t : t, n: this.seq++, run };
    const q = this.events;
    let i = q.length;
    while (i > 0) {
      const p = q[i - 1] as SimEvent;
      if (p.t < ev.t || (p.t === ev.t && p.n < ev.n)) break;
      i--;
    }
    q.splice(i, 0, ev);
  }

  /** Completes everything due up to `to`, in time order; the clock then reads `to`. */
  advance(to: number): void {
    const q = this.events;
    while (q.length > 0 && (q[0] as SimEvent).t <= to) {
      const ev = q.shift() as SimEvent;
      if (ev.t > this.t) this.t = ev.t;
      ev.run();
    }
    if (to > this.t) this.t = to;
  }

  /** @internal a radio starts a datagram. */
  transmit(from: SimRadio, to: number, bytes: Uint8Array): void {
    const c = this.counters;
    const start = this.freeAt > this.t ? this.freeAt : this.t;
    const unicast = to !== BROADCAST_MAC;
    const one = this.airtimeMs(bytes.length, unicast);
    c.transmissions++;
    if (!unicast) {
      c.attempts++;
      const receivers: SimRadio[] = [];
      for (const node of this.nodes.values()) {
        if (node === from) continue;
        if (this.prng.next() < this.loss) c.lostFrames++;
        else receivers.push(node);
      }
      const end = start + one;
      this.freeAt = end;
      c.busyMs += one;
      this.schedule(end, () => {
        for (let i = 0; i < receivers.length; i++) {
          c.deliveries++;
          (receivers[i] as SimRadio).deliverBroadcast(from.mac, bytes);
        }
        from.complete(to, true);
      });
      return;
    }
    const target = this.nodes.get(to);
    // The sender's key for the receiver, taken when the datagram leaves (null: unencrypted).
    const key = from.keyFor(to);
    let delivered = false;
    let acked = false;
    let attempts = 0;
    while (attempts <= this.retries && !acked) {
      attempts++;
      if (this.prng.next() < this.loss || !target) {
        c.lostFrames++;
        continue;
      }
      delivered = true;
      if (this.prng.next() < this.ackLoss) c.lostFrames++;
      else acked = true;
    }
    c.attempts += attempts;
    const end = start + attempts * one;
    this.freeAt = end;
    c.busyMs += attempts * one;
    this.schedule(end, () => {
      if (delivered && target) {
        c.deliveries++;
        target.deliver(from.mac, bytes, key);
      }
      from.complete(to, acked);
    });
  }
}

function sameKey(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** One station's ESP-NOW: the Radio the binding drives, with the device's limits. */
export class SimRadio implements Radio {
  readonly mac: number;
  /**
   * Datagrams this radio dropped for their keys: encrypted ones it could not decrypt, unencrypted
   * unicast ones from a MAC it holds as encrypted, and (a `hub` radio) broadcast ones from such a MAC.
   */
  cryptoDrops = 0;
  /**
   * The hub's radio with its adapter (bindings/espnow/device.ts): a broadcast datagram from a MAC
   * held as encrypted cannot be that peer's (its peers speak to the hub unicast, encrypted), so
   * it is dropped. A client's radio takes the hub's broadcast segment whatever its table says.
   */
  hub = false;
  private readonly air: SimAir;
  private handler: RadioHandler | null = null;
  /** MAC → the key it is held with (null: unencrypted). */
  private readonly table = new Map<number, Uint8Array | null>();
  private encrypted = 0;
  private busy = false;

  constructor(air: SimAir, mac: number) {
    this.air = air;
    this.mac = mac;
  }

  setHandler(handler: RadioHandler): void {
    this.handler = handler;
  }

  addPeer(mac: number, lmk: Uint8Array | null): number {
    if (this.table.has(mac)) return RadioStatus.EXISTS;
    if (this.table.size >= this.air.maxPeers) return RadioStatus.FULL;
    if (lmk !== null) {
      // The broadcast address cannot be encrypted (ESP_ERR_ESPNOW_ARG).
      if (mac === BROADCAST_MAC || lmk.length !== 16) return RadioStatus.ERROR;
      if (this.encrypted >= this.air.maxEncrypted) return RadioStatus.FULL;
    }
    this.table.set(mac, lmk === null ? null : lmk.slice());
    if (lmk !== null) this.encrypted++;
    return RadioStatus.OK;
  }

  removePeer(mac: number): number {
    const key = this.table.get(mac);
    if (key === undefined) return RadioStatus.NOT_FOUND;
    this.table.delete(mac);
    if (key !== null) this.encrypted--;
    return RadioStatus.OK;
  }

  /** The key this radio encrypts a unicast datagram to `mac` with (null: unencrypted, or not in the table). */
  keyFor(mac: number): Uint8Array | null {
    return this.table.get(mac) ?? null;
  }

  /** Whether `mac` is in the table as an encrypted peer. */
  encryptedPeer(mac: number): boolean {
    const k = this.table.get(mac);
    return k !== undefined && k !== null;
  }

  peerCount(): number {
    return this.table.size;
  }

  hasPeer(mac: number): boolean {
    return this.table.has(mac);
  }

  get inFlight(): boolean {
    return this.busy;
  }

  send(mac: number, data: Uint8Array, length: number): number {
    if (this.busy) return RadioStatus.BUSY;
    if (length <= 0 || length > DATAGRAM_MAX_BYTES) return RadioStatus.TOO_LONG;
    if (!this.table.has(mac)) return RadioStatus.NOT_FOUND;
    this.busy = true;
    this.air.transmit(this, mac, data.slice(0, length));
    return RadioStatus.OK;
  }

  /** @internal A unicast datagram from `from`, encrypted with `key` (null: unencrypted). */
  deliver(from: number, bytes: Uint8Array, key: Uint8Array | null): void {
    const mine = this.table.get(from);
    const held = mine !== undefined && mine !== null;
    if (key !== null ? !(held && sameKey(mine, key)) : held) {
      this.cryptoDrops++;
      return;
    }
    if (this.handler) this.handler.received(from, bytes, bytes.length);
  }

  /** @internal A broadcast datagram from `from` (never encrypted). */
  deliverBroadcast(from: number, bytes: Uint8Array): void {
    if (this.hub && this.encryptedPeer(from)) {
      this.cryptoDrops++;
      return;
    }
    if (this.handler) this.handler.received(from, bytes, bytes.length);
  }

  /** @internal */
  complete(to: number, ok: boolean): void {
    this.busy = false;
    if (this.handler) this.handler.sent(to, ok);
  }
}

export interface SimPeerOptions extends EspNowPeerOptions {
  /** The key the peer holds the hub with (its pairing's LMK); absent: unencrypted. */
  readonly lmk?: Uint8Array;
}

export { PEER_DEFAULTS };

export interface Received {
  readonly bytes: Uint8Array;
  /** Came in the segment's broadcast stream. */
  readonly broadcast: boolean;
  readonly at: number;
}

// What a client must not lose when every MAC retry failed: all but BUNDLE (a late sample is worse
// than a missing one) and ACK (a newer one follows). The client tags its own frames so.
function peerTag(bytes: Uint8Array, length: number): number {
  const t = peekFrameType(bytes, 0, length);
  return t !== FrameType.BUNDLE && t !== FrameType.ACK ? Tag.CRITICAL : 0;
}

/** The air as a peer's host: its clock, its events, and the frames into the peer's inbox. */
class AirHost implements EspNowPeerHost {
  peer: SimPeer | null = null;
  constructor(private readonly air: SimAir) {}
  now(): number {
    return this.air.now();
  }
  schedule(at: number): void {
    this.air.schedule(at, () => {
      if (this.peer) this.peer.wake(at);
    });
  }
  frame(bytes: Uint8Array, start: number, end: number, broadcast: boolean): void {
    if (this.peer) this.peer.inbox.push({ bytes: bytes.slice(start, end), broadcast, at: this.air.now() });
  }
}

/**
 * A client station as the hub's ESP-NOW binding expects one (docs/_espnow.md "The peer's side"):
 * the binding's own peer side (bindings/espnow/peer.ts EspNowPeer, which the client library's
 * ESP-NOW transport also is) on the simulated air, with the frames it receives kept in `inbox`
 * and each frame it sends tagged as a client tags it.
 */
export class SimPeer extends EspNowPeer {
  override readonly radio: SimRadio;
  readonly inbox: Received[] = [];
  private taken = 0;

  constructor(air: SimAir, mac: number, hubMac: number, options: SimPeerOptions = {}) {
    const host = new AirHost(air);
    const radio = air.radio(mac);
    super(radio, hubMac, host, options);
    host.peer = this;
    this.radio = radio;
    radio.setHandler(this);
    radio.addPeer(hubMac, options.lmk ?? null);
  }

  get mac(): number {
    return this.radio.mac;
  }

  /** Queues one frame for the hub; false when the queue is full. */
  send(frame: Uint8Array, length = frame.length): boolean {
    return this.queue(length === frame.length ? frame : frame.subarray(0, length), peerTag(frame, length));
  }

  /** Frames received since the last take(), decoded (ESTOP frames are skipped), optionally one type. */
  take(type?: number): Frame[] {
    const out: Frame[] = [];
    for (; this.taken < this.inbox.length; this.taken++) {
      const r = this.inbox[this.taken] as Received;
      if (peekFrameType(r.bytes, 0, r.bytes.length) < 0) continue;
      const f = decodeFrame(r.bytes, 0, r.bytes.length, MAX_HUB_FRAME_BYTES);
      if (type === undefined || f.type === type) out.push(f);
    }
    return out;
  }
}
