// One BLE connection as the hub core sees it: the core's Link (hub/ports.ts) over a GATT
// connection. Platform-free: the device adapter (device.ts, Moddable's GATTServer) and the
// simulator (sim.ts) each supply a BleTransport and feed the link the connection's events;
// everything else (fragmentation, reassembly, the notification queue, the §10.3 detector) is
// this one implementation on both.

import { WatermarkDetector } from '../detector.js';
import { AckCounter, MIN_RTT_WINDOW_MS, ownValue, SAMPLE_BUDGET_MAX_MS, THROUGHPUT_WINDOW_MS, ThroughputEstimator, type BindingLink, type HubAttach } from '../link.js';
import { ESTOP_FRAME_BYTES } from '../../hub/estop-frame.js';
import { Tier } from '../../catalog/schema.js';
import { AckForm, Tag, type Clock, type GrantSet, type LinkCaps, type LinkEstimate, type LinkSink } from '../../hub/ports.js';
import { FRAGMENT_COUNTER_MASK, FRAGMENT_HEADER_BYTES, FRAGMENT_MAX_BYTES, FragmentPosition, fragmentSize, header, HUB_REASSEMBLY, Reassembler, type ReassemblyLimits, type ReassemblySink } from './fragment.js';
import { ESTOP_AHEAD_SLOTS, NotifyQueue, type NotifyQueueOptions } from './notify-queue.js';

// An ONLY fragment's header without the message counter (fragment.ts `header`).
const ONLY_HEADER = header(FragmentPosition.ONLY, 0);

/** What the link needs of the connection underneath. */
export interface BleTransport {
  /**
   * ATT MTU − 3 as negotiated so far: it grows once the MTU exchange completes, and never shrinks
   * during a connection (the ATT MTU is exchanged once and an L2CAP reconfiguration may not lower
   * it): a frame that fits one fragment at the size the link last took fits one now.
   */
  maximumWrite(): number;
  /**
   * Hands one notification to the stack: `value` is exactly it (`length` bytes), a view the
   * link reuses once the notification completed; the stack copies it. Its completion comes
   * back through `BleLink.notified`, synchronously or later. May throw: that counts as a failed
   * notification.
   */
  notify(value: Uint8Array, length: number): void;
  /** Ends the connection (the core parks or closes the session). */
  close(): void;
}

/**
 * The sample budget of a link that has not completed a notification yet, ms: two connection
 * events at 50 ms, the longest interval phones commonly grant (docs/protocol.md §13.6).
 */
export const BLE_SAMPLE_BUDGET_DEFAULT_MS = 100;
/** No BLE sample budget is shorter, ms: two connection events at 7.5 ms, the shortest interval. */
export const BLE_SAMPLE_BUDGET_FLOOR_MS = 15;

/**
 * When a binding's tick next has work for its links (BleBinding's): each link lowers it whenever
 * something makes its own tick due sooner (an event lowers the link's `dueAt`), and the binding's
 * tick sets it to the earliest of its links' after ticking them (bindings/ble/gatt-connection.ts
 * tickConnections), so that a tick before it skips the links, which would each find nothing due.
 */
export interface TickWake {
  dueAt: number;
}

export interface BleLinkOptions {
  /** The binding's tick time, which the link lowers with its own (TickWake). */
  readonly wake?: TickWake;
  readonly queue?: NotifyQueueOptions;
  /** Client → hub reassembly limits (default HUB_REASSEMBLY). */
  readonly reassembly?: ReassemblyLimits;
  /** A failed notification is handed out again after this (default BLE_NOTIFY_RETRY_MS). */
  readonly retryMs?: number;
  /** A notification not completed within this counts as done, unconfirmed (default BLE_NOTIFY_TIMEOUT_MS). */
  readonly notifyTimeoutMs?: number;
  /**
   * The connection's tier ceiling when it opens (Link.tierCeiling; default observer: a connection
   * that has not paired, docs/security.md "BLE"). `setTierCeiling` raises it once the stack
   * reports the connection secured.
   */
  readonly tierCeiling?: number;
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

/** The link's counters (`BleLink.counters`: fields of the link itself, no object of their own). */
export interface BleLinkCounters {
  /** Frames the core sent that the queue could not take (the core asks canSend first: 0). */
  readonly refusedSends: number;
  /** Notifications counted done by the timeout, without a completion. */
  readonly unconfirmed: number;
  /** Frame bytes the transport has completed. */
  readonly deliveredBytes: number;
}

/**
 * The longest service time is kept over about MIN_RTT_WINDOW_MS as bindings/link.ts WindowedMax
 * keeps it, in two buckets of this long each (here in the link's fields: a completion that
 * changes nothing there then costs a comparison, not a call).
 */
const SERVICE_HALF_MS = MIN_RTT_WINDOW_MS / 2;

/** The caps of a link with the default reassembly limits. */
const BLE_CAPS: LinkCaps = Object.freeze({ binding: 'ble', broadcast: false, datagram: false, mtu: HUB_REASSEMBLY.maxFrameBytes, writeAheadSlots: ESTOP_AHEAD_SLOTS, ackForm: AckForm.STREAM });

export class BleLink implements ReassemblySink, BindingLink {
  /** WELCOME `mtu` (caps.mtu): the largest frame the client may send, which reassembly takes whole (§7). */
  readonly caps: LinkCaps;
  readonly queue: NotifyQueue;
  /**
   * What the client's ACKs cover (bindings/link.ts). Its `started` is the queue's `framesStarted`
   * (frames whose first fragment went out, ESTOP frames included), copied in when it is read.
   */
  readonly acks = new AckCounter();
  readonly reassembler: Reassembler;
  readonly detector: WatermarkDetector;
  /** BleLinkCounters. */
  refusedSends = 0;
  unconfirmed = 0;
  deliveredBytes = 0;
  /** §10.2 link estimate: frame bytes the stack reported sent. */
  readonly throughput: ThroughputEstimator;
  private readonly transport: BleTransport;
  private readonly clock: Clock;
  // The retry pause and the completion timeout, and from how long after a hand-out its timeout is
  // the tick's to watch (1 ms early, see dueAt): the prototype's defaults unless given otherwise
  // (an own property each only then: on XS every property costs a heap slot).
  private declare readonly retryMs: number;
  private declare readonly notifyTimeoutMs: number;
  private declare readonly dueAfterMs: number;
  private ceiling: number;
  private sink: LinkSink | null = null;
  private shutDown = false;
  // Whether notifications may go, and how long a frame may go straight out (send, one ONLY
  // fragment): frames shorter than the fragment size and than capacityBytes + 1, while the client
  // is subscribed and the link open (`direct`), else 0.
  private directBelow = 0;
  private pumping = false;
  // The fragment size in use, and the transport's maximum write it was taken from.
  private size: number;
  private mw: number;
  private flightSince = 0;
  private retryAt = 0;
  private judgedAt = -Infinity;
  // The detector's judgements as of the link's last judgement when the detector then had no
  // deadline ahead (quietUntil Infinity: only an input moves that), else NaN. While the detector's
  // count equals it, the level stands.
  private judgementsSeen = NaN;
  private lvl = 0;
  // The queue's fill as the pump last sampled it (0 whenever the queue is vacant).
  private sampled = 0;
  private readonly est: LinkEstimate = { throughputBps: 0, rttMs: 0 };
  // The delivered bytes handed to the estimator so far, and from when on a completion hands them
  // over (`carried`): 1 ms before the estimator's window closes, so that float rounding never
  // makes it late (carried then adds exactly as the estimator would).
  private handedBytes = 0;
  private windowDue: number;
  // Stalled time (bindings/link.ts DrainClock): when the stack last took a notification, or a
  // backlog began.
  private movedAt: number;
  // The longest a notification took from hand-out to completion lately (about one connection
  // interval), as bindings/link.ts WindowedMax keeps it (−1: none in the bucket; the current
  // bucket is half a window old from serviceEnd on), and the sample budget taken from it, worked
  // out when a sample changes it.
  private serviceCur = -1;
  private servicePrev = -1;
  private serviceEnd = -Infinity;
  private budgetMs = BLE_SAMPLE_BUDGET_DEFAULT_MS;
  // The periodic work (tick) has nothing to do before this: the earliest a notification can time
  // out, a failed one be retried, or a partial client frame time out (1 ms early, so that float
  // rounding never makes it late: the tick then checks exactly), or the detector's deadline while
  // an input to it was judged since the link last compared its level; −Infinity while frames are
  // queued (the tick reads the fragment size then) or once the detector had an input, until a
  // tick works it out again (`idle`). Events only lower it. A tick never sets it later than
  // dueAfterMs after itself: a notification handed out since times out after it (so a hand-out
  // need not lower it), and one in flight then is timed by it.
  /** @internal */
  dueAt = -Infinity;
  // The binding's tick time (BleLinkOptions.wake), lowered with `dueAt`; null without one.
  private readonly wake: TickWake | null;
  // The detector judged an input since the link last compared its level (tick, level).
  private fed = false;
  // While the detector's queue signal is known to be 0 (a refusal raises it, and a take that
  // leaves the queue empty lowers it to 0), the detector's next deadline (its quietUntil, kept
  // here as it moves), else NaN: before it such a take changes nothing in the detector (see take).
  private zeroUntil = -Infinity;
  // The instant of such a take left out: another input at that instant first hands it over.
  private takeOwedAt = NaN;

  /**
   * `subscribed`: whether the client has enabled notifications already (the device learns it
   * from the CCCD write; nothing is notified before, the SDK refuses it).
   */
  constructor(transport: BleTransport, clock: Clock, options: BleLinkOptions = {}, subscribed = false) {
    this.transport = transport;
    this.clock = clock;
    const limits = options.reassembly ?? HUB_REASSEMBLY;
    // The reassembly buffer lives in the queue's buffer.
    this.queue = new NotifyQueue({ ...options.queue, spareBytes: limits.maxFrameBytes + 1 });
    const mtu = limits.maxFrameBytes;
    const ahead = this.queue.aheadSlots;
    // Links of the same caps share one frozen object.
    this.caps = mtu === BLE_CAPS.mtu && ahead === BLE_CAPS.writeAheadSlots ? BLE_CAPS : Object.freeze({ binding: 'ble', broadcast: false, datagram: false, mtu, writeAheadSlots: ahead, ackForm: AckForm.STREAM });
    if (options.retryMs !== undefined && options.retryMs !== BLE_NOTIFY_RETRY_MS) ownValue(this, 'retryMs', options.retryMs);
    if (options.notifyTimeoutMs !== undefined && options.notifyTimeoutMs !== BLE_NOTIFY_TIMEOUT_MS) {
      ownValue(this, 'notifyTimeoutMs', options.notifyTimeoutMs);
      ownValue(this, 'dueAfterMs', options.notifyTimeoutMs - 1);
    }
    this.ceiling = options.tierCeiling ?? Tier.observer;
    this.mw = transport.maximumWrite();
    this.size = fragmentSize(this.mw);
    if (subscribed) this.direct();
    // The link is its reassembler's sink (frame, refuse): no closures of its own to keep.
    this.reassembler = new Reassembler(this, limits, this.queue.spare);
    const now = clock.now();
    this.detector = new WatermarkDetector(now);
    this.zeroUntil = this.detector.quietUntil;
    this.throughput = new ThroughputEstimator(now);
    this.windowDue = now + (THROUGHPUT_WINDOW_MS - 1);
    this.movedAt = now;
    this.wake = options.wake ?? null;
    if (this.wake !== null) this.wake.dueAt = -Infinity;
  }

  // Something makes the tick due at `at` or sooner: the link's, and its binding's.
  private soon(at: number): void {
    if (at < this.dueAt) this.dueAt = at;
    const w = this.wake;
    if (w !== null && at < w.dueAt) w.dueAt = at;
  }

  /** @internal ReassemblySink: a whole frame from the client, for the core. */
  frame(bytes: Uint8Array, start: number, end: number): void {
    if (this.sink && !this.shutDown) this.sink.frame(bytes, start, end);
  }

  /**
   * @internal ReassemblySink: a refused frame goes to the core as the frame that draws the same
   * NACK from its own checks (LinkSink has no other way to be told).
   */
  refuse(_code: number, bytes: Uint8Array, start: number, end: number): void {
    if (this.sink && !this.shutDown) this.sink.frame(bytes, start, end);
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

  /** The link's counters: the link itself. */
  get counters(): BleLinkCounters {
    return this;
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

  /**
   * The fragment size in use (ATT MTU − 3, at most 512). A link with nothing queued takes it from
   * the transport only when it next hands something out (tick): here, then.
   */
  get fragmentSize(): number {
    if (!this.shutDown && this.queue.fill === 0) {
      const mw = this.transport.maximumWrite();
      if (mw !== this.mw) this.resize(mw);
    }
    return this.size;
  }

  // ------------------------------------------------------------------ the transport's events

  /** One GATT write from the client: one fragment, value[start, end). */
  written(value: Uint8Array, start: number, end: number): void {
    if (this.shutDown) return;
    this.reassembler.push(value, start, end, this.clock.now());
    // A partial frame begun: its timeout is the tick's to watch. (No locals: this runs for every write.)
    if (this.reassembler.expiresAt - 1 < this.dueAt) this.soon(this.reassembler.expiresAt - 1);
  }

  /** The notification in flight completed: status 0 sent, anything else failed. */
  notified(status: number): void {
    // (Nothing is in flight once the link is shut: shut() clears the queue. Few locals: this runs
    // for every notification.)
    const q = this.queue;
    if (!q.inFlight) return;
    const now = this.clock.now();
    if (status === 0) {
      // A service time no longer than the longest in its bucket changes nothing there.
      if (now - this.flightSince > this.serviceCur || now >= this.serviceEnd) this.serviceSample(now - this.flightSince, now);
      // NotifyQueue.complete, inline (a notification carries at least one byte of a frame, so
      // `delivered`'s test is left out).
      q.inFlight = false;
      q.vacant = q.held === 0;
      q.completed++;
      this.deliveredBytes += q.flightCarried;
      this.movedAt = now;
      // ThroughputEstimator.add: within its window only the sum moves (see carried; the clock is monotonic).
      if (now >= this.windowDue) this.carried(now);
    } else {
      this.queue.done(false);
      this.retryLater(now);
    }
    // Nothing waits: the pump would only take the fragment size again, which counts nothing
    // while nothing is queued (see tick), and what is handed out next takes it first; and it
    // would sample the fill at 0, which `sampled` is whenever the queue is vacant (the pump that
    // handed out the last of what was queued found it so, and a direct send leaves it so). A
    // completion while the link pumps (in the transport's notify) is the pump's to follow up.
    if (!q.vacant) this.pump();
  }

  /**
   * The connection's protection changed (the stack reported it encrypted, authenticated):
   * `tier` is the ceiling it now allows (bindings/ble/security.ts). The core reads it at the
   * next HELLO on this link; a session opened before keeps the tier it got (§6.10).
   */
  setTierCeiling(tier: number): void {
    this.ceiling = tier;
  }

  /** The client enabled (true) or disabled notifications on the notify characteristic. */
  subscribed(on: boolean): void {
    if (this.shutDown) return;
    if (on) {
      this.direct();
      this.pump();
    } else this.directBelow = 0;
  }

  /** The connection is gone (supervision timeout, the client disconnected): §6.6 transport lost. */
  disconnected(): void {
    if (this.shutDown) return;
    this.shut();
    if (this.sink) this.sink.lost();
  }

  /**
   * Periodic work: reassembly timeout, a notification retry or completion timeout, the
   * detector's windows. Call at least every hub tick. Until the link's next deadline and the
   * detector's, with no input to the detector since and the same fragment size, there is none:
   * the tick then costs one comparison (dueAt; the clock is monotonic, hub/ports.ts Clock). While no
   * frame is queued and no notification waits to be retried (the queue's fill is 0), the fragment
   * size counts nothing (the fill is 0 at any size, an ESTOP is one fragment at any size, and what
   * is sent or completed next takes the size again first): it is not asked. `now`, when given, is
   * this link's clock's reading (what the hub's tick read): a later one would move the tick's
   * deadlines past what the clock then reads, and a notification handed out after it could time
   * out late.
   */
  tick(now: number = this.clock.now()): void {
    if (now < this.dueAt) return;
    if (this.shutDown) return;
    const q = this.queue;
    // The link's own next deadline as things stand.
    let due = this.reassembler.expiresAt - 1;
    if (q.inFlight && this.flightSince + this.dueAfterMs < due) due = this.flightSince + this.dueAfterMs;
    if (q.retryPending && this.retryAt < due) due = this.retryAt;
    // None due and the same fragment size, and no input to the detector since and no deadline of
    // its ahead (its judgements unchanged, as `level` reads them), or its deadline not reached and
    // its level compared: nothing to do until then.
    if (now < due && (q.fill === 0 || this.transport.maximumWrite() === this.mw) && (this.detector.judgements === this.judgementsSeen || (!this.fed && now < this.detector.quietUntil))) {
      this.idle(due, now);
      return;
    }
    this.reassembler.tick(now);
    if (q.inFlight && now - this.flightSince >= this.notifyTimeoutMs) {
      this.unconfirmed++;
      this.delivered(q.complete(), now);
    }
    // The pump, when it has anything to do: a notification to hand out, a frame to drop stale,
    // or a new fragment size to count the queue at. Otherwise it would find the queue's fill what
    // it sampled last (every change of the queue is followed by a pump, or sets `sampled`).
    if ((!q.inFlight && (q.held > 0 || q.retryPending)) || this.transport.maximumWrite() !== this.mw) this.pump();
    this.judge(now);
    if (this.shutDown) return;
    // The next deadline, from what is left.
    due = this.reassembler.expiresAt - 1;
    if (q.inFlight && this.flightSince + this.dueAfterMs < due) due = this.flightSince + this.dueAfterMs;
    if (q.retryPending && this.retryAt < due) due = this.retryAt;
    this.idle(due, now);
  }

  /**
   * `dueAt` once the tick at `now` found nothing to do before the link's own deadline `due`: then
   * also the detector's, while its judgements are not the ones the link has seen (its level
   * compared, `fed` clear); none while frames are queued; and at most dueAfterMs from now.
   */
  private idle(due: number, now: number): void {
    if (now + this.dueAfterMs < due) due = now + this.dueAfterMs;
    if (this.queue.fill !== 0) due = -Infinity;
    else if (this.detector.judgements !== this.judgementsSeen) {
      if (this.fed) due = -Infinity;
      else if (this.detector.quietUntil < due) due = this.detector.quietUntil;
    }
    this.dueAt = due;
    const w = this.wake;
    if (w !== null && due < w.dueAt) w.dueAt = due;
  }

  // ------------------------------------------------------------------ Link

  /** What the connection's pairing allows now (setTierCeiling). */
  tierCeiling(): number {
    return this.ceiling;
  }

  get binding(): string {
    return this.caps.binding;
  }

  get mtu(): number {
    return this.caps.mtu;
  }

  /** Whether a frame of `length` bytes would be queued now (for tests and tools; the core just sends). */
  canSend(length: number): boolean {
    return !this.shutDown && this.queue.fits(length, this.size);
  }

  // The core's sequence number is not the link's concern: the implementation leaves it unnamed
  // (on XS every parameter costs at every call).
  send(frame: Uint8Array, tag: number, seq: number): boolean;
  send(frame: Uint8Array, tag: number): boolean {
    // Nothing queued, ahead or in flight: a frame of one fragment goes straight out. The queue
    // would take it whatever the fragment size (it is empty). The size is the one last taken, not
    // asked again: the maximum write never shrinks (BleTransport), and a frame that only a grown
    // size takes whole goes by the queue, whose pump takes the size first. (Few locals, declared
    // once for both ways: on XS each costs at every call, more than reading a field a few times,
    // and a block that declares its own opens a scope; this runs for every delivery.)
    const q = this.queue;
    let now;
    if (frame.length < this.directBelow && q.vacant && !this.pumping && frame.length > 0) {
      // What pushing it and pumping would do, with one copy instead of two. A backlog starts
      // (stalledMs) and is taken at once.
      now = this.clock.now();
      this.movedAt = now;
      this.pumping = true;
      // (Its timeout is the tick's to watch: dueAt is at most dueAfterMs after the last tick.)
      this.flightSince = now;
      // NotifyQueue.notifyWhole, inline: one ONLY notification in the notification area, under
      // the next message counter (no later fragment needs it as headCounter).
      q.flight = frame.length + FRAGMENT_HEADER_BYTES;
      q.flightCarried = frame.length;
      q.rab.resize(q.outAt + q.flight);
      q.out[0] = ONLY_HEADER | (q.counter = (q.counter + 1) & FRAGMENT_COUNTER_MASK);
      q.out.set(frame, FRAGMENT_HEADER_BYTES);
      q.framesStarted++;
      q.inFlight = true;
      q.vacant = false;
      try {
        this.transport.notify(q.out, q.flight);
      } catch {
        q.rab.resize(q.outAt + FRAGMENT_MAX_BYTES);
        this.failedWhole(frame.length, now);
        return true;
      }
      q.rab.resize(q.outAt + FRAGMENT_MAX_BYTES);
      // (A link shut meanwhile has nothing in flight: shut() clears the queue.)
      if (q.inFlight && q.frames === 0) {
        // The pump's end: the queue is empty, so the take left nothing (ratio 0: `sampled`
        // already is); take()'s test first, to leave out working out what it found.
        this.pumping = false;
        if (now < this.zeroUntil) this.takeOwedAt = now;
        else this.take(this.foundWhole(frame.length), 0, now);
      } else this.drainFrom(this.foundWhole(frame.length));
      return true;
    }
    if (this.shutDown) return false;
    now = this.clock.now();
    const empty = q.frames === 0 && !q.retryPending;
    // A notification queue holds a few frames: STATE values are not conflated here (§13.6).
    if (!q.push(frame, frame.length, this.size, now, (tag & Tag.SAMPLE) !== 0)) {
      // §13.5.5: a frame turned away reads as a full queue.
      this.refusedSends++;
      if (now === this.takeOwedAt) this.repayTake(now);
      this.detector.refused(now);
      this.zeroUntil = NaN;
      this.fed = true;
      this.soon(-Infinity);
      return false;
    }
    if (empty) this.movedAt = now;
    this.pump();
    return true;
  }

  /** `send`'s direct hand-out of a frame of `length` bytes at `now` threw: the notification failed, as the pump fails one. */
  private failedWhole(length: number, now: number): void {
    if (this.queue.inFlight) {
      this.queue.done(false);
      this.retryLater(now);
    }
    this.drainFrom(this.foundWhole(length));
  }

  /** §10.4, §11.2: the ESTOP frame goes right after the notification in flight. */
  writeAhead(frame: Uint8Array): void {
    if (this.shutDown || frame.length < ESTOP_FRAME_BYTES) return;
    this.queue.pushAhead(frame);
    this.pump();
  }

  /** The §10.3 level, judged once per instant. */
  get level(): number {
    // No deadline ahead and no input since: the level stands whatever the (monotonic) clock
    // reads, and the clock is not asked (the core reads this once per delivery).
    if (this.detector.judgements === this.judgementsSeen) return this.lvl;
    return this.levelAt(this.clock.now());
  }

  /** `level` when the detector has a deadline ahead or input since the link last judged it. */
  private levelAt(now: number): number {
    if (now !== this.judgedAt) {
      // Until the detector's next deadline, and with no input since, its level stands.
      if (this.fed || !(now < this.detector.quietUntil)) this.judge(now);
      else this.judgedAt = now;
    }
    return this.lvl;
  }

  /** The client's cumulative ACK (key 28), as the core decoded it: the ack lag health reports. */
  acked(count: number): void {
    if (this.shutDown) return;
    const a = this.acks;
    a.started = this.queue.framesStarted;
    a.ack(count, this.clock.now());
  }

  /** A BLE connection carries no broadcast: the grants are the core's alone. */
  granted(_grants: GrantSet): void {}

  ackLag(): number {
    const a = this.acks;
    a.started = this.queue.framesStarted;
    return a.outstanding();
  }

  /** Notifications are acknowledged by the link layer: no loss rate. */
  lossRate(): number {
    return NaN;
  }

  /** Throughput from the completions; no round trip is timed at this layer (rttMs 0, unknown). */
  estimate(): LinkEstimate {
    const now = this.clock.now();
    if (this.deliveredBytes > this.handedBytes) this.handCarried(this.deliveredBytes);
    this.est.throughputBps = this.throughput.bps(now);
    // The estimator's roll may have started its window again.
    this.windowDue = this.throughput.windowStart + (THROUGHPUT_WINDOW_MS - 1);
    return this.est;
  }

  /**
   * How long a STREAM sample may wait here: two notification service times (a connection
   * interval each, once one has waited for the next event), within the floor and the cap.
   */
  sampleBudgetMs(): number {
    return this.budgetMs;
  }

  /** Frames this link dropped unsent (stale samples): docs/protocol.md §13.6. */
  unsent(): number {
    return this.queue.expired;
  }

  /** The queue's fill; full while samples dropped stale hold the signal so (a queue full in time, §13.6). */
  occupancy(): number {
    if (this.detector.staleHeld(this.clock.now())) return 1;
    const r = this.queue.ratio(this.size);
    return r < 1 ? r : 1;
  }

  /** How long a backlog has waited without a notification completing; 0 without one. */
  stalledMs(): number {
    const q = this.queue;
    if (q.frames === 0 && !q.retryPending) return 0;
    const d = this.clock.now() - this.movedAt;
    return d > 0 ? d : 0;
  }

  close(): void {
    if (this.shutDown) return;
    this.shut();
    this.transport.close();
  }

  // ------------------------------------------------------------------ inside

  /** Judges the detector at `now`; a new level is reported to the core. */
  private judge(now: number): void {
    if (now === this.takeOwedAt) this.repayTake(now);
    this.judgedAt = now;
    this.fed = false;
    this.soon(-Infinity);
    const d = this.detector;
    // Before its next deadline the detector's tick finds nothing new (its own test, without the call).
    if (!(now < d.quietUntil)) {
      d.tick(now);
      if (this.zeroUntil === this.zeroUntil) this.zeroUntil = d.quietUntil;
    }
    // Judged with no deadline ahead: until the detector's next input the level stands (`level`).
    this.judgementsSeen = d.quietUntil === Infinity ? d.judgements : NaN;
    const l = d.level();
    if (l !== this.lvl) {
      this.lvl = l;
      if (this.sink) this.sink.levelChanged();
    }
  }

  private shut(): void {
    this.shutDown = true;
    this.directBelow = 0;
    this.soon(-Infinity);
    this.queue.clear();
    this.reassembler.reset();
  }

  private resize(mw: number): void {
    this.mw = mw;
    this.size = fragmentSize(mw);
    if (this.directBelow !== 0) this.direct();
  }

  /** Notifications may go: `directBelow` from the fragment size and the queue's storage. */
  private direct(): void {
    const below = this.queue.capacityBytes + 1;
    this.directBelow = below < this.size ? below : this.size;
  }

  /** The depth a hand-out of a whole frame of `length` bytes found: its one notification, or its bytes of the storage. */
  private foundWhole(length: number): number {
    const q = this.queue;
    const byNotifications = 1 / q.capacityNotifications;
    const byBytes = length / q.capacityBytes;
    return byNotifications > byBytes ? byNotifications : byBytes;
  }

  /** Hands notifications to the transport while none is in flight. */
  private pump(): void {
    if (this.pumping) return;
    this.pumping = true;
    this.drainFrom(-1);
  }

  /**
   * The pump's loop, with `pumping` set (it clears it), then its report to the detector.
   * `found`: the depth found at a hand-out already made (a whole frame, send), or −1 when none was.
   */
  private drainFrom(found: number): void {
    const q = this.queue;
    try {
      if (found < 0) {
        const mw = this.transport.maximumWrite();
        if (mw !== this.mw) this.resize(mw);
      }
      // §13.5.1: the signal is the depth the link finds when it hands out a notification.
      while (this.directBelow !== 0 && !q.inFlight) {
        const now = this.clock.now();
        if (q.retryPending && now < this.retryAt) break;
        const size = this.size;
        // The queue's fill (its ratio) at this size.
        if (size !== q.countedAt) q.ratio(size);
        // §10.4 "never delay and burst", at the binding (docs/protocol.md §13.6): samples that
        // waited past the budget go unsent, and that reads as a full queue (§13.5.5). (q.stale)
        if (now - q.frontQueuedAt > this.budgetMs) {
          const ahead = q.fill;
          q.expire(now, this.budgetMs, size);
          if (now === this.takeOwedAt) this.repayTake(now);
          this.detector.stale(now);
          if (this.zeroUntil === this.zeroUntil) this.zeroUntil = this.detector.quietUntil;
          this.fed = true;
          this.soon(-Infinity);
          if (found < 0) found = ahead;
        }
        const before = found < 0 ? q.fill : 0;
        // Only read while a notification is in flight (a completion in notify reads it).
        this.flightSince = now;
        const n = q.notifyNext(size, this.transport);
        if (n === 0) break;
        if (found < 0) found = before;
        // (Its timeout is the tick's to watch: dueAt is at most dueAfterMs after the last tick.)
        if (n < 0 && q.inFlight) {
          q.done(false);
          this.retryLater(now);
        }
      }
    } finally {
      this.pumping = false;
    }
    if (this.shutDown) return;
    const size = this.size;
    const r = size === q.countedAt ? q.fill : q.ratio(size);
    // A pump that only dropped stale frames drained the queue too: what is left is judged.
    if (found >= 0) this.take(found, r, this.clock.now());
    // The detector holds a signal until the next input, so only a rise needs one.
    else if (r > this.sampled) {
      const now = this.clock.now();
      if (now === this.takeOwedAt) this.repayTake(now);
      this.detector.queued(r, now);
      this.zeroUntil = NaN;
      this.heard();
      this.soon(-Infinity);
    }
    this.sampled = r;
    // Frames left: each tick reads the fragment size (dueAt).
    if (r !== 0) this.soon(-Infinity);
  }

  /**
   * The detector's `drained(found, after, now)`. A take that leaves the queue empty while the
   * signal is 0 (so no refusal waits either), before the detector's next deadline, judges the same
   * conditions at an instant no window closes: it would change nothing but the instant of the
   * last take, which matters only to another take at the same instant. It is left out, and
   * handed over (`repayTake`) before any other input at that instant.
   */
  private take(found: number, after: number, now: number): void {
    const d = this.detector;
    if (!(after > 0) && now < this.zeroUntil) {
      this.takeOwedAt = now;
      return;
    }
    if (now === this.takeOwedAt) this.repayTake(now);
    d.drained(found, after, now);
    this.zeroUntil = after > 0 ? NaN : d.quietUntil;
    this.heard();
    this.soon(-Infinity);
  }

  /**
   * The detector judged a queue input (`queued`, `drained`). A level it left where the link last
   * reported it needs no judgement of the link's (`fed`): what one would find at a later instant,
   * the tick and `level` find from the detector's deadline alone. The link compares it here, and
   * when the detector then has no deadline ahead, `level` reads the judgements it has seen.
   */
  private heard(): void {
    const d = this.detector;
    if (d.level() !== this.lvl) this.fed = true;
    else if (!this.fed) this.judgementsSeen = d.quietUntil === Infinity ? d.judgements : NaN;
  }

  private repayTake(now: number): void {
    this.takeOwedAt = NaN;
    // With the queue left empty, drained ignores what the take found.
    this.detector.drained(0, 0, now);
    if (this.zeroUntil === this.zeroUntil) this.zeroUntil = this.detector.quietUntil;
    this.soon(-Infinity);
  }

  private retryLater(now: number): void {
    const at = now + this.retryMs;
    this.retryAt = at;
    if (at < this.dueAt) this.soon(at);
  }

  /** A notification of `bytes` frame bytes completed at `now`. */
  private delivered(bytes: number, now: number): void {
    if (bytes <= 0) return;
    this.movedAt = now;
    this.deliveredBytes += bytes;
    if (now >= this.windowDue) this.carried(now);
  }

  /**
   * The notification just completed at `now`, at the end of the estimator's window or after it,
   * into the estimator. A completion within its window only adds to the window's sum there
   * (ThroughputEstimator.add): the link leaves that sum in deliveredBytes (less `handedBytes`)
   * and hands it over in one add, dated in the same window, just before the estimator next looks
   * at the clock (here, and `estimate`). `windowDue` follows the estimator's window start as its
   * roll moves it (this add rolls it to `now` when the window has closed).
   */
  private carried(now: number): void {
    const t = this.throughput;
    // The sum first, as an add within its window would (no roll): to the estimator's field; then
    // ThroughputEstimator.add of this notification's bytes (its roll, then the sum).
    t.bytes += this.deliveredBytes - this.queue.flightCarried - this.handedBytes;
    t.roll(now);
    t.bytes += this.queue.flightCarried;
    this.handedBytes = this.deliveredBytes;
    this.windowDue = t.windowStart + (THROUGHPUT_WINDOW_MS - 1);
  }

  /** The completed bytes up to `total` that the estimator has not had, in its current window. */
  private handCarried(total: number): void {
    this.throughput.add(total - this.handedBytes, this.throughput.windowStart);
    this.handedBytes = total;
  }

  /** One notification's service time: bindings/link.ts WindowedMax.sample, and the budget from it. */
  private serviceSample(v: number, now: number): void {
    if (!(v >= 0)) return;
    if (now >= this.serviceEnd) {
      // A bucket more than one half old is forgotten outright; else it becomes the previous one.
      this.servicePrev = now >= this.serviceEnd + SERVICE_HALF_MS ? -1 : this.serviceCur;
      this.serviceCur = v;
      this.serviceEnd = now + SERVICE_HALF_MS;
    } else if (v > this.serviceCur) this.serviceCur = v;
    else return;
    const cur = this.serviceCur;
    const longest = cur > this.servicePrev ? cur : this.servicePrev;
    const b = 2 * longest;
    this.budgetMs = b < BLE_SAMPLE_BUDGET_FLOOR_MS ? BLE_SAMPLE_BUDGET_FLOOR_MS : b < SAMPLE_BUDGET_MAX_MS ? b : SAMPLE_BUDGET_MAX_MS;
  }
}

Object.assign(BleLink.prototype, { retryMs: BLE_NOTIFY_RETRY_MS, notifyTimeoutMs: BLE_NOTIFY_TIMEOUT_MS, dueAfterMs: BLE_NOTIFY_TIMEOUT_MS - 1 });
