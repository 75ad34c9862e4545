// One BLE connection as the hub core sees it: the core's Link (hub/ports.ts) over a GATT
// connection. Platform-free: the device adapter (device.ts, Moddable's GATTServer) and the
// simulator (sim.ts) each supply a BleTransport and feed the link the connection's events;
// everything else (fragmentation, reassembly, the notification queue, the §10.3 detector) is
// this one implementation on both.

import { WatermarkDetector } from '../detector.js';
import { DrainClock, SAMPLE_BUDGET_MAX_MS, ThroughputEstimator, WindowedMax, type BindingLink, type HubAttach } from '../link.js';
import { ESTOP_FRAME_BYTES } from '../../hub/estop-frame.js';
import { SendShed, type Clock, type LinkEstimate, type LinkSink } from '../../hub/ports.js';
import { fragmentSize, HUB_REASSEMBLY, Reassembler, type ReassemblyLimits, type ReassemblySink } from './fragment.js';
import { NotifyQueue, type NotifyQueueOptions } from './notify-queue.js';

/** What the link needs of the connection underneath. */
export interface BleTransport {
  /** ATT MTU − 3 as negotiated so far (it grows once the MTU exchange completes). */
  maximumWrite(): number;
  /**
   * Hands one notification, value[0, length), to the stack; the stack copies it. Its completion
   * comes back through `BleLink.notified`, synchronously or later. May throw: that counts as a
   * failed notification.
   */
  notify(value: Uint8Array, length: number): void;
  /** Ends the connection (the core parks or closes the session). */
  close(): void;
  /**
   * Where the link builds notifications, if the transport has a preference (at least
   * FRAGMENT_MAX_BYTES long): `notify` is then always called with this very array.
   */
  readonly buffer?: Uint8Array;
}

/**
 * The sample budget of a link that has not completed a notification yet, ms: two connection
 * events at 50 ms, the longest interval phones commonly grant (docs/protocol.md §13.6).
 */
export const BLE_SAMPLE_BUDGET_DEFAULT_MS = 100;
/** No BLE sample budget is shorter, ms: two connection events at 7.5 ms, the shortest interval. */
export const BLE_SAMPLE_BUDGET_FLOOR_MS = 15;

export interface BleLinkOptions {
  readonly queue?: NotifyQueueOptions;
  /** Client → hub reassembly limits (default HUB_REASSEMBLY). */
  readonly reassembly?: ReassemblyLimits;
  /** A failed notification is handed out again after this (default BLE_NOTIFY_RETRY_MS). */
  readonly retryMs?: number;
  /** A notification not completed within this counts as done, unconfirmed (default BLE_NOTIFY_TIMEOUT_MS). */
  readonly notifyTimeoutMs?: number;
}

/** Pause before a failed notification (stack out of buffers) is tried again. */
export const BLE_NOTIFY_RETRY_MS = 20;
/**
 * A completion that never comes must not wedge the link: after this the notification counts as
 * sent. Far longer than a completion takes (as we read NimBLE, it reports a notification once
 * its host has passed it down, not when the peer has it); a link this slow to complete already
 * reads congested by its depth.
 */
export const BLE_NOTIFY_TIMEOUT_MS = 1000;

export class BleLinkCounters {
  /** Frames the core sent that the queue could not take (the core asks canSend first: 0). */
  refusedSends = 0;
  /** Notifications counted done by the timeout, without a completion. */
  unconfirmed = 0;
  /** Frame bytes the transport has completed. */
  deliveredBytes = 0;
}

export class BleLink implements BindingLink {
  readonly binding = 'ble';
  readonly broadcast = false;
  /** WELCOME `mtu`: the largest frame the client may send, which reassembly takes whole (§7). */
  readonly mtu: number;
  readonly queue: NotifyQueue;
  readonly reassembler: Reassembler;
  readonly detector: WatermarkDetector;
  readonly counters = new BleLinkCounters();
  /** §10.2 link estimate: frame bytes the stack reported sent. */
  readonly throughput: ThroughputEstimator;
  readonly drain: DrainClock;
  /** The longest a notification took from hand-out to completion lately: about one connection interval. */
  readonly service = new WindowedMax();
  private readonly transport: BleTransport;
  private readonly clock: Clock;
  private readonly retryMs: number;
  private readonly notifyTimeoutMs: number;
  private sink: LinkSink | null = null;
  private shutDown = false;
  private subscribedOn: boolean;
  private pumping = false;
  private size: number;
  private flightSince = 0;
  private retryAt = 0;
  private judgedAt = -Infinity;
  private sampled = 0;
  private readonly est: LinkEstimate = { throughputBps: 0, rttMs: 0 };

  /**
   * `subscribed`: whether the client has enabled notifications already (the device learns it
   * from the CCCD write; nothing is notified before, the SDK refuses it).
   */
  constructor(transport: BleTransport, clock: Clock, options: BleLinkOptions = {}, subscribed = false) {
    this.transport = transport;
    this.clock = clock;
    this.queue = new NotifyQueue(options.queue, transport.buffer);
    const limits = options.reassembly ?? HUB_REASSEMBLY;
    this.mtu = limits.maxFrameBytes;
    this.retryMs = options.retryMs ?? BLE_NOTIFY_RETRY_MS;
    this.notifyTimeoutMs = options.notifyTimeoutMs ?? BLE_NOTIFY_TIMEOUT_MS;
    this.subscribedOn = subscribed;
    this.size = fragmentSize(transport.maximumWrite());
    // Refusals go to the core as the frames that draw the same NACK from its own checks
    // (ReassemblySink): LinkSink has no other way to be told.
    const sink: ReassemblySink = {
      frame: (bytes, start, end) => {
        if (this.sink && !this.shutDown) this.sink.frame(bytes, start, end);
      },
      refuse: (_code, bytes, start, end) => {
        if (this.sink && !this.shutDown) this.sink.frame(bytes, start, end);
      },
    };
    this.reassembler = new Reassembler(sink, limits);
    const now = clock.now();
    this.detector = new WatermarkDetector(now);
    this.throughput = new ThroughputEstimator(now);
    this.drain = new DrainClock(now);
  }

  /** A link attached to `hub` at once: the usual way to make one. */
  static attach(hub: HubAttach, transport: BleTransport, clock: Clock, options?: BleLinkOptions, subscribed?: boolean): BleLink {
    const link = new BleLink(transport, clock, options, subscribed);
    link.connect(hub.attach(link));
    return link;
  }

  /** Where the link feeds the client's frames: what `hub.attach(link)` returned. */
  connect(sink: LinkSink): void {
    this.sink = sink;
  }

  /** True once the transport is gone, whichever side closed it. */
  get closed(): boolean {
    return this.shutDown;
  }

  /** Bytes of queued frames not yet handed out (the ESTOP frames ahead excluded). */
  queuedBytes(): number {
    return this.queue.bytes;
  }

  /** The §10.3 signal as judged: the notification-queue depth ÷ capacity found at the last hand-out (§13.5.1). */
  signal(): number {
    return this.detector.ratio();
  }

  /** The fragment size in use (ATT MTU − 3, at most 512). */
  get fragmentSize(): number {
    return this.size;
  }

  // ------------------------------------------------------------------ the transport's events

  /** One GATT write from the client: one fragment, value[start, end). */
  written(value: Uint8Array, start: number, end: number): void {
    if (this.shutDown) return;
    this.reassembler.push(value, start, end, this.clock.now());
  }

  /** The notification in flight completed: status 0 sent, anything else failed. */
  notified(status: number): void {
    if (this.shutDown || !this.queue.inFlight) return;
    const now = this.clock.now();
    if (status === 0) {
      this.service.sample(now - this.flightSince, now);
      this.delivered(this.queue.done(true), now);
    } else {
      this.queue.done(false);
      this.retryAt = now + this.retryMs;
    }
    this.pump();
  }

  /** The client enabled (true) or disabled notifications on the notify characteristic. */
  subscribed(on: boolean): void {
    if (this.shutDown) return;
    this.subscribedOn = on;
    if (on) this.pump();
  }

  /** The connection is gone (supervision timeout, the client disconnected): §6.6 transport lost. */
  disconnected(): void {
    if (this.shutDown) return;
    this.shut();
    if (this.sink) this.sink.lost();
  }

  /**
   * Periodic work: reassembly timeout, a notification retry or completion timeout, the
   * detector's windows. Call at least every hub tick.
   */
  tick(now: number = this.clock.now()): void {
    if (this.shutDown) return;
    this.reassembler.tick(now);
    if (this.queue.inFlight && now - this.flightSince >= this.notifyTimeoutMs) {
      this.counters.unconfirmed++;
      this.delivered(this.queue.done(true), now);
    }
    this.pump();
    this.judgedAt = now;
    this.detector.tick(now);
  }

  // ------------------------------------------------------------------ Link

  canSend(length: number): boolean {
    if (this.shutDown) return false;
    if (this.queue.fits(length, this.size)) return true;
    // §13.5.5: a frame turned away reads as a full queue.
    this.detector.refused(this.clock.now());
    return false;
  }

  send(frame: Uint8Array, length: number, shed?: number): void {
    if (this.shutDown) return;
    const now = this.clock.now();
    if (!(this.queue.ratio(this.size) > 0)) this.drain.moved(now);
    // A notification queue holds a few frames: STATE values are not conflated here (§13.6).
    if (!this.queue.push(frame, length, this.size, now, shed === SendShed.SAMPLE)) {
      this.counters.refusedSends++;
      return;
    }
    this.pump();
  }

  /** §10.4, §11.2: the ESTOP frame goes right after the notification in flight. */
  writeAhead(frame: Uint8Array): void {
    if (this.shutDown || frame.length < ESTOP_FRAME_BYTES) return;
    this.queue.pushAhead(frame);
    this.pump();
  }

  level(): number {
    const now = this.clock.now();
    if (now !== this.judgedAt) {
      this.judgedAt = now;
      this.detector.tick(now);
    }
    return this.detector.level();
  }

  /** Throughput from the completions; no round trip is timed at this layer (rttMs 0, unknown). */
  estimate(): LinkEstimate {
    this.est.throughputBps = this.throughput.bps(this.clock.now());
    return this.est;
  }

  /**
   * How long a STREAM sample may wait here: two notification service times (a connection
   * interval each, once one has waited for the next event), within the floor and the cap.
   */
  sampleBudgetMs(): number {
    if (!this.service.known) return BLE_SAMPLE_BUDGET_DEFAULT_MS;
    const b = 2 * this.service.value();
    if (b < BLE_SAMPLE_BUDGET_FLOOR_MS) return BLE_SAMPLE_BUDGET_FLOOR_MS;
    return b < SAMPLE_BUDGET_MAX_MS ? b : SAMPLE_BUDGET_MAX_MS;
  }

  /** Frames this link dropped unsent (stale samples): docs/protocol.md §13.6. */
  unsent(): number {
    return this.queue.counters.expired;
  }

  /** The queue's fill; full while samples dropped stale hold the signal so (a queue full in time, §13.6). */
  occupancy(): number {
    if (this.detector.staleHeld(this.clock.now())) return 1;
    const r = this.queue.ratio(this.size);
    return r < 1 ? r : 1;
  }

  stalledMs(): number {
    return this.drain.stalledMs(this.clock.now(), this.queue.ratio(this.size) > 0);
  }

  close(): void {
    if (this.shutDown) return;
    this.shut();
    this.transport.close();
  }

  // ------------------------------------------------------------------ inside

  private shut(): void {
    this.shutDown = true;
    this.queue.clear();
    this.reassembler.reset();
  }

  /** Hands notifications to the transport while none is in flight. */
  private pump(): void {
    if (this.pumping) return;
    this.pumping = true;
    // §13.5.1: the signal is the depth the link finds when it hands out a notification.
    let found = -1;
    try {
      this.size = fragmentSize(this.transport.maximumWrite());
      while (!this.shutDown && this.subscribedOn && !this.queue.inFlight) {
        const now = this.clock.now();
        if (this.queue.retryPending && now < this.retryAt) break;
        // §10.4 "never delay and burst", at the binding (docs/protocol.md §13.6): samples that
        // waited past the budget go unsent, and that reads as a full queue (§13.5.5).
        const ahead = this.queue.ratio(this.size);
        if (this.queue.expire(now, this.sampleBudgetMs(), this.size) > 0) {
          this.detector.stale(now);
          if (found < 0) found = ahead;
        }
        const before = this.queue.ratio(this.size);
        const n = this.queue.next(this.size);
        if (n === 0) break;
        if (found < 0) found = before;
        this.flightSince = now;
        try {
          this.transport.notify(this.queue.scratch, n);
        } catch {
          if (this.queue.inFlight) {
            this.queue.done(false);
            this.retryAt = now + this.retryMs;
          }
        }
      }
    } finally {
      this.pumping = false;
    }
    if (this.shutDown) return;
    const r = this.queue.ratio(this.size);
    // A pump that only dropped stale frames drained the queue too: what is left is judged.
    if (found >= 0) this.detector.drained(found, r, this.clock.now());
    // The detector holds a signal until the next input, so only a rise needs one.
    else if (r > this.sampled) this.detector.queued(r, this.clock.now());
    this.sampled = r;
  }

  private delivered(bytes: number, now: number): void {
    if (bytes <= 0) return;
    this.drain.moved(now);
    this.counters.deliveredBytes += bytes;
    this.throughput.add(bytes, now);
  }
}
