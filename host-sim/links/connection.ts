// One simulated transport between one client and the hub, whatever the binding: the hub side is
// the binding's real Link behind a LinkTap; the client side is a ClientTransport (client/transport.ts)
// for the client library; between them, the medium of the binding (links/tcp.ts, ble.ts,
// espnow.ts), driven by the kernel. Faults (stall, partition, loss, disconnect) act on the medium.

import type { CatalogIndex } from '../../catalog/index.js';
import { ESTOP_FRAME_BYTES, ESTOP_MAGIC } from '../../hub/estop-frame.js';
import type { Link, LinkSink } from '../../hub/ports.js';
import type { HubAttach } from '../../bindings/link.js';
import type { ClientTransport } from '../../client/transport.js';
import { type Kernel, US_PER_MS } from '../kernel.js';
import { DataHead, LinkTap, readDataHead } from './tap.js';

export const Direction = Object.freeze({ down: 1, up: 2, both: 3 } as const);

/** What a connection needs from the simulation around it. */
export interface ConnectionEnv {
  readonly kernel: Kernel;
  readonly hub: HubAttach;
  readonly catalog: CatalogIndex;
  /** The hub's clock in whole ms (what the bindings judge levels in). */
  readonly hubClock: { now(): number };
  /** A clock in fractional ms of virtual time (BLE connection events at 7.5 ms, ESP-NOW airtime). */
  readonly fineClock: { now(): number };
  /** The kernel should let pending promise continuations run (the client library is promise-based). */
  requestYield(): void;
  /** A new hub-side link, before the hub sees it (the dashboard's level override hooks in here). */
  tapped?(tap: LinkTap, conn: Connection): void;
  /**
   * Nothing outside `conn` stood in the way during [fromUs, toUs]: its medium did not lose (nor
   * could still be retransmitting), no other peer on a shared air was faulted or gone (report.ts,
   * as the ESTOP bound is judged). Absent: nothing did.
   */
  mediumClear?(conn: Connection, fromUs: number, toUs: number): boolean;
}

/** The head of a DATA frame the client receives (one at a time: delivery is synchronous). */
const RECEIVED = new DataHead();

/** The client library's transport over a simulated connection. */
export class SimTransport implements ClientTransport {
  onFrame: ((bytes: Uint8Array) => void) | null = null;
  onClose: (() => void) | null = null;
  readonly maxFrameBytes?: number;
  constructor(
    private readonly conn: Connection,
    maxFrameBytes?: number,
  ) {
    if (maxFrameBytes !== undefined) this.maxFrameBytes = maxFrameBytes;
  }
  send(bytes: Uint8Array): void {
    this.conn.clientSend(bytes, false);
  }
  sendAhead(bytes: Uint8Array): void {
    this.conn.clientSend(bytes, true);
  }
  close(): void {
    this.conn.clientClose();
  }
}

export abstract class Connection {
  abstract readonly binding: string;
  readonly transport: SimTransport;
  readonly openedUs: number;
  closedUs = NaN;
  closeCause = '';
  /** The hub side's current link, and every one this connection had (ESP-NOW re-admits a peer). */
  tap: LinkTap | null = null;
  readonly taps: LinkTap[] = [];
  /** Frames the client received. */
  framesToClient = 0;
  /** Frames the client sent that never reached the hub (a full peer queue, a dropped write). */
  lostUp = 0;
  protected readonly kernel: Kernel;
  protected readonly env: ConnectionEnv;
  protected blackHole = false;
  protected partitionUntilUs = 0;
  protected stallDownUntilUs = 0;
  protected stallUpUntilUs = 0;
  private clientTold = false;
  private readonly impairments: [number, number][] = [];
  /** Called once when the connection has ended on both sides (the simulation's bookkeeping). */
  onEnded: ((c: Connection) => void) | null = null;

  constructor(
    env: ConnectionEnv,
    /** Unique in the run: `<client>#<n>`. */
    readonly id: string,
    readonly client: string,
    readonly profile: string,
    maxFrameBytes?: number,
  ) {
    this.env = env;
    this.kernel = env.kernel;
    this.openedUs = env.kernel.nowUs;
    this.transport = new SimTransport(this, maxFrameBytes);
  }

  get ended(): boolean {
    return !Number.isNaN(this.closedUs);
  }

  // ---------------------------------------------------------------- the medium

  /** The client writes a whole frame; `ahead`: its ESTOP, ahead of what it has queued. */
  abstract clientSend(bytes: Uint8Array, ahead: boolean): void;
  /** The client closes the transport; the hub learns it as the medium allows. */
  abstract clientClose(): void;
  /** The ESTOP bound for this connection now (ms): docs/simulator.md "ESTOP bound". */
  abstract estopBoundMs(): number;
  /**
   * How long a hub frame of `frameBytes` takes to reach the client on this connection when
   * nothing else is queued or in flight (ms): docs/simulator.md "sampleLate".
   */
  abstract idleDeliveryMs(frameBytes: number): number;
  /** Changes the medium's loss (per frame, per connection event, per attempt: by binding). */
  abstract setLoss(p: number): void;
  /** The transport dies: `reset` tells both sides, `silent` tells nobody (the medium goes dead). */
  abstract disconnect(mode: 'reset' | 'silent'): void;
  /** A stall or partition ended: the medium resumes. */
  protected abstract resume(): void;
  /** Upkeep at the hub's tick. */
  abstract upkeep(nowMs: number): void;

  /** Whether a slow reader limits delivery (its ESTOP latency is reported, not checked). */
  readerLimited(): boolean {
    return false;
  }

  /** Nothing starts on the medium in `dir` for `durationMs`; queues build, nothing is lost. */
  stall(dir: number, durationMs: number): void {
    const until = this.kernel.nowUs + durationMs * US_PER_MS;
    if (dir & Direction.down) this.stallDownUntilUs = Math.max(this.stallDownUntilUs, until);
    if (dir & Direction.up) this.stallUpUntilUs = Math.max(this.stallUpUntilUs, until);
    this.impair(until);
    this.kernel.timeout(until - this.kernel.nowUs, () => this.healed());
  }

  /** The medium carries nothing for `durationMs` in either direction. */
  partition(durationMs: number): void {
    const until = this.kernel.nowUs + durationMs * US_PER_MS;
    this.partitionUntilUs = Math.max(this.partitionUntilUs, until);
    this.impair(until);
    this.kernel.timeout(until - this.kernel.nowUs, () => this.healed());
  }

  /**
   * A stall or partition ended: the medium resumes, and what the fault left queued at the hub
   * drains first (frames never dropped: control, critical, segments) — until then a sample is not
   * judged by sampleLate, which is about congestion, not about a fault's aftermath.
   */
  private healed(): void {
    this.resume();
    const ms = this.backlogDrainMs();
    if (ms > 0) this.aftermaths.push([this.kernel.nowUs, this.kernel.nowUs + ms * US_PER_MS]);
  }

  /** How long what the hub holds queued for this connection takes on the medium, ms (0: nothing). */
  protected backlogDrainMs(): number {
    return 0;
  }

  /** Whether `atUs` falls in the drain of a fault's backlog (see `healed`). */
  inAftermath(atUs: number): boolean {
    for (const [a, b] of this.aftermaths) if (atUs >= a && atUs <= b) return true;
    return false;
  }

  protected goSilent(): void {
    this.blackHole = true;
    this.impair(Infinity);
  }

  protected get downBlocked(): boolean {
    const t = this.kernel.nowUs;
    return this.blackHole || t < this.stallDownUntilUs || t < this.partitionUntilUs;
  }

  protected get upBlocked(): boolean {
    const t = this.kernel.nowUs;
    return this.blackHole || t < this.stallUpUntilUs || t < this.partitionUntilUs;
  }

  protected get partitioned(): boolean {
    return this.blackHole || this.kernel.nowUs < this.partitionUntilUs;
  }

  impairedNow(): boolean {
    const t = this.kernel.nowUs;
    return this.blackHole || t < this.stallDownUntilUs || t < this.stallUpUntilUs || t < this.partitionUntilUs || this.readerLimited();
  }

  /** Fault intervals [fromUs, toUs] (Infinity: never healed), in the order they began. */
  faults(): readonly (readonly [number, number])[] {
    return this.impairments;
  }

  /** Whether a fault overlapped [fromUs, toUs]. */
  impairedDuring(fromUs: number, toUs: number): boolean {
    if (this.readerLimited()) return true;
    for (const [a, b] of this.impairments) if (a <= toUs && b >= fromUs) return true;
    return false;
  }

  private readonly aftermaths: [number, number][] = [];

  private impair(untilUs: number): void {
    this.impairments.push([this.kernel.nowUs, untilUs]);
  }

  // ---------------------------------------------------------------- the two ends

  /** Wraps the binding's link in a tap and attaches it to the hub. */
  protected attachTap(inner: Link): LinkSink {
    const tap = new LinkTap(inner, this.kernel, this.env.catalog, this.taps.length === 0 ? this.id : `${this.id}.${this.taps.length + 1}`, {
      estopBoundMs: () => this.estopBoundMs(),
      impairedNow: () => this.impairedNow(),
      idleDeliveryMs: (n) => this.idleDeliveryMs(n),
      judgeable: (fromUs, toUs) => !this.impairedDuring(fromUs, toUs) && !this.inAftermath(fromUs) && (!this.env.mediumClear || this.env.mediumClear(this, fromUs, toUs)),
    });
    if (this.tap) this.tap.ended();
    this.tap = tap;
    this.taps.push(tap);
    if (this.env.tapped) this.env.tapped(tap, this);
    return this.env.hub.attach(tap);
  }

  /** A whole frame reaches the client. */
  protected deliver(bytes: Uint8Array): void {
    if (this.clientTold) return;
    this.framesToClient++;
    const tap = this.tap;
    if (tap) {
      tap.stats.received++;
      const b0 = bytes[0] as number;
      if (bytes.length === ESTOP_FRAME_BYTES && b0 === ESTOP_MAGIC) {
        const origin = (((bytes[4] as number) << 24) >>> 0) + ((bytes[5] as number) << 16) + ((bytes[6] as number) << 8) + (bytes[7] as number);
        tap.estopReceived(bytes[1] as number, origin, ((bytes[8] as number) << 8) | (bytes[9] as number));
      } else if (b0 >= 0xa0 && b0 <= 0xbf && readDataHead(bytes, bytes.length, RECEIVED)) {
        // sampleLate: the link that handed it, the newest first (ESP-NOW re-admits a peer).
        for (let i = this.taps.length - 1; i >= 0; i--) if ((this.taps[i] as LinkTap).sampleReceived(RECEIVED)) break;
      }
    }
    const f = this.transport.onFrame;
    if (f) f(bytes);
  }

  /** The client learns that the transport is gone (once). */
  protected tellClientClosed(): void {
    if (this.clientTold) return;
    this.clientTold = true;
    const f = this.transport.onClose;
    this.transport.onFrame = null;
    this.transport.onClose = null;
    this.env.requestYield();
    if (f) f();
  }

  /** Both sides are done with this connection. */
  protected end(cause: string): void {
    if (this.ended) return;
    this.closedUs = this.kernel.nowUs;
    this.closeCause = cause;
    if (this.tap) this.tap.ended();
    if (this.onEnded) this.onEnded(this);
  }
}
