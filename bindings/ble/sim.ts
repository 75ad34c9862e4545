// A simulated BLE connection for host-sim and the tests, on a virtual clock: the hub side is
// the real BleLink (the same queue, fragmentation and detector as the device); the radio is
// connection events every `intervalMs`, each carrying up to `perEvent` notifications hub →
// client and up to `perEvent` writes client → hub; the client side is a reassembler and a
// fragmenter, as a client library has. Platform-free; deterministic for a given seed.
//
// The stack is modelled as the SDK's GATT server behaves on the ESP32: one notification in
// flight, completed through BleLink.notified at the connection event that carries it (status 0)
// or fails it (SIM_STATUS_NO_BUFFERS), so the queue's depth is driven by completions. A share
// of completions may be lost (`completionLossRate`): the notification goes out but its callback
// never comes, and the link's completion timeout (BLE_NOTIFY_TIMEOUT_MS) stands in for it.

import type { Clock } from '../../hub/ports.js';
import type { HubAttach } from '../link.js';
import { CLIENT_REASSEMBLY, FRAGMENT_MAX_BYTES, Fragmenter, fragmentSize, header, FragmentPosition, Reassembler, type ReassemblyLimits } from './fragment.js';
import { BleLink, type BleLinkOptions, type BleTransport } from './link.js';

export interface SimBleOptions {
  /** Connection interval (default 30 ms, a typical phone). */
  readonly intervalMs?: number;
  /** Negotiated ATT MTU (default 247: one notification fills one 251-byte LE data packet). */
  readonly attMtu?: number;
  /** Notifications, and separately writes, per connection event (default 4). */
  readonly perEvent?: number;
  /** Seed of the drop decisions (default 1). */
  readonly seed?: number;
  /** Share of notifications sent whose completion callback never comes (default 0). */
  readonly completionLossRate?: number;
  /** Hub → client reassembly limits (default CLIENT_REASSEMBLY). */
  readonly clientLimits?: ReassemblyLimits;
  /** The hub side's link options. */
  readonly link?: BleLinkOptions;
}

/** The status a stalled connection completes notifications with (NimBLE's BLE_HS_ENOMEM). */
export const SIM_STATUS_NO_BUFFERS = 6;

/** What the client received: frames in order, and what its reassembler refused. */
export interface SimReceived {
  readonly frames: Uint8Array[];
  readonly refused: number[];
}

export class SimBleConnection implements BleTransport {
  readonly link: BleLink;
  /** The client's reassembler (hub → client). */
  readonly client: Reassembler;
  readonly received: SimReceived = { frames: [], refused: [] };
  /**
   * The radio is up but nothing gets through (the peer out of range, not yet timed out): each
   * event completes the notification in flight with SIM_STATUS_NO_BUFFERS and carries no write.
   */
  stalled = false;
  /**
   * Share of notifications the client's stack loses after the hub's stack reported them sent
   * (a phone OS dropping notifications its app did not take): the client's reassembler sees a gap.
   */
  dropRate = 0;
  /** Notifications delivered to the client, writes delivered to the hub. */
  notificationsDelivered = 0;
  writesDelivered = 0;
  /** Notifications a stalled event completed with SIM_STATUS_NO_BUFFERS. */
  notificationsFailed = 0;
  /** Share of notifications sent whose completion never comes (the link's timeout stands in). */
  completionLossRate: number;
  /** Notifications sent whose completion was lost. */
  completionsLost = 0;
  /** The link was closed by the hub (park or session close). */
  closedByHub = false;
  private readonly clock: Clock;
  private readonly intervalMs: number;
  private readonly perEvent: number;
  private attMtu: number;
  private nextEvent: number;
  private connected = true;
  private rng: number;
  private readonly flight = new Uint8Array(FRAGMENT_MAX_BYTES);
  private flightLength = 0;
  private readonly fragmenter = new Fragmenter();
  /** Client → hub writes waiting for a connection event, oldest first. */
  private readonly writes: Uint8Array[] = [];

  constructor(clock: Clock, options: SimBleOptions = {}, subscribed = true) {
    this.clock = clock;
    this.intervalMs = options.intervalMs ?? 30;
    this.perEvent = options.perEvent ?? 4;
    this.attMtu = options.attMtu ?? 247;
    this.rng = (options.seed ?? 1) >>> 0 || 1;
    this.completionLossRate = options.completionLossRate ?? 0;
    if (!(this.intervalMs > 0)) throw new RangeError('SimBleConnection: intervalMs must be > 0');
    if (!(this.perEvent >= 1)) throw new RangeError('SimBleConnection: perEvent must be ≥ 1');
    this.nextEvent = clock.now() + this.intervalMs;
    const received = this.received;
    this.client = new Reassembler(
      {
        frame: (bytes, start, end) => {
          received.frames.push(bytes.slice(start, end));
        },
        refuse: (code) => {
          received.refused.push(code);
        },
      },
      options.clientLimits ?? CLIENT_REASSEMBLY,
    );
    this.link = new BleLink(this, clock, options.link, subscribed);
  }

  /** Attaches the hub side to `hub` (Hub.attach); returns this. */
  attach(hub: HubAttach): this {
    this.link.connect(hub.attach(this.link));
    return this;
  }

  get isConnected(): boolean {
    return this.connected;
  }

  get mtu(): number {
    return this.attMtu;
  }

  /** The MTU exchange completing (or a new one): later fragments use the new size. */
  exchangeMtu(attMtu: number): void {
    this.attMtu = attMtu;
  }

  /** Writes waiting on the client side. */
  get writesWaiting(): number {
    return this.writes.length;
  }

  // ------------------------------------------------------------------ the client side

  /** The client sends frame[start, start + length): its fragments wait for connection events. */
  clientSend(frame: Uint8Array, start = 0, length = frame.length - start): void {
    const f = this.fragmenter;
    const size = fragmentSize(this.attMtu - 3);
    f.begin(frame, start, length);
    const buf = new Uint8Array(size);
    for (let n = f.next(buf, size); n > 0; n = f.next(buf, size)) this.writes.push(buf.slice(0, n));
  }

  /** The client's ESTOP: one ONLY fragment ahead of every write it has waiting. */
  clientEstop(frame: Uint8Array): void {
    const w = new Uint8Array(frame.length + 1);
    w[0] = header(FragmentPosition.ONLY, this.fragmenter.takeCounter());
    w.set(frame, 1);
    this.writes.unshift(w);
  }

  /** A raw write, exactly these bytes (a fragment made by hand, junk, a headerless ESTOP). */
  clientWrite(bytes: Uint8Array): void {
    this.writes.push(bytes.slice());
  }

  /** Received frames since the last call. */
  take(): Uint8Array[] {
    return this.received.frames.splice(0, this.received.frames.length);
  }

  // ------------------------------------------------------------------ the radio

  /** Runs every connection event up to `now`, then the link's tick. */
  advance(now: number = this.clock.now()): void {
    while (this.connected && this.nextEvent <= now) {
      const t = this.nextEvent;
      this.nextEvent += this.intervalMs;
      this.event(t);
    }
    if (this.connected) this.link.tick(now);
  }

  /** The supervision timeout: the connection is lost without a word (§6.6). */
  disconnect(): void {
    if (!this.connected) return;
    this.connected = false;
    this.flightLength = 0;
    this.writes.length = 0;
    this.client.reset();
    this.link.disconnected();
  }

  private event(t: number): void {
    // Hub → client first: what the hub answers to this event's writes goes out at the next one.
    for (let k = 0; k < this.perEvent && this.connected && this.flightLength > 0; k++) {
      if (this.stalled) {
        this.flightLength = 0;
        this.notificationsFailed++;
        this.link.notified(SIM_STATUS_NO_BUFFERS);
        break;
      }
      const n = this.flightLength;
      this.flightLength = 0;
      this.notificationsDelivered++;
      if (!(this.dropRate > 0 && this.random() < this.dropRate)) this.client.push(this.flight, 0, n, t);
      if (this.completionLossRate > 0 && this.random() < this.completionLossRate) {
        // Sent, but the callback never comes: nothing more goes until the link times it out.
        this.completionsLost++;
        break;
      }
      this.link.notified(0);
    }
    if (this.stalled) return;
    for (let k = 0; k < this.perEvent && this.connected && this.writes.length > 0; k++) {
      const w = this.writes.shift() as Uint8Array;
      this.writesDelivered++;
      this.link.written(w, 0, w.length);
    }
    this.client.tick(t);
  }

  private random(): number {
    let x = this.rng;
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    this.rng = x >>> 0;
    return this.rng / 0x100000000;
  }

  // ------------------------------------------------------------------ BleTransport

  maximumWrite(): number {
    return this.attMtu - 3;
  }

  notify(value: Uint8Array, length: number): void {
    if (!this.connected) throw new Error('notify on a closed connection');
    if (this.flightLength > 0) throw new Error('two notifications in flight: the link must keep one');
    for (let i = 0; i < length; i++) this.flight[i] = value[i] as number;
    this.flightLength = length;
  }

  close(): void {
    if (!this.connected) return;
    this.connected = false;
    this.closedByHub = true;
    this.flightLength = 0;
    this.writes.length = 0;
  }
}
