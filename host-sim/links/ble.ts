// BLE GATT (§13.4) on the kernel: the binding's own simulated connection (bindings/ble/sim.ts:
// the real BleLink with its notification queue, fragmentation and detector on the hub side; the
// client's reassembler and fragmenter on the other), its connection events run by the kernel.
//
// Model: at each connection event, every `connIntervalMs`, up to `perEvent` notifications go
// hub → client and up to `perEvent` writes client → hub (SimBleConnection). An event is lost with
// `eventLossRate` (the notification in flight completes with an error and is retried, no write
// goes: the link layer's retransmission as the host sees it); a stall or partition loses every
// event; after `supervisionTimeoutMs` without a good event both sides drop the connection (§6.6).
// Frames reach the client `latencyMs` (host stack) after their event. Each notification's
// completion comes at its event and frees the queue for the next, as the SDK's GATT server
// calls notify's callback on the device; with `completionLossRate` a completion is lost and the
// link's completion timeout (BLE_NOTIFY_TIMEOUT_MS) stands in for it.

import { Tier } from '../../catalog/schema.js';
import { fragmentCount } from '../../bindings/ble/fragment.js';
import { BLE_NOTIFY_RETRY_MS, BLE_NOTIFY_TIMEOUT_MS } from '../../bindings/ble/link.js';
import { SimBleConnection } from '../../bindings/ble/sim.js';
import { type Task, US_PER_MS } from '../kernel.js';
import { Connection, type ConnectionEnv } from './connection.js';
import { FrameDeque } from './deque.js';

export interface BleParams {
  readonly binding: 'ble';
  readonly connIntervalMs: number;
  readonly attMtu: number;
  readonly perEvent: number;
  /** The notification queue's capacity in notifications (the §10.3 denominator). */
  readonly queueNotifications: number;
  readonly eventLossRate: number;
  /** Share of notifications whose completion callback never comes (the stack losing it). */
  readonly completionLossRate: number;
  readonly latencyMs: number;
  readonly supervisionTimeoutMs: number;
  /**
   * 1: the central paired (LE Secure Connections, bonded) before it said HELLO: the connection's
   * tier ceiling is the hub's (maintainer); 0: it never pairs and stays at observer tier
   * (docs/security.md "BLE").
   */
  readonly paired: number;
}

export const BLE_DEFAULTS = Object.freeze({
  connIntervalMs: 30,
  attMtu: 247,
  perEvent: 4,
  queueNotifications: 16,
  eventLossRate: 0,
  completionLossRate: 0,
  latencyMs: 2,
  supervisionTimeoutMs: 4000,
  paired: 1,
});

/** Notices the hub's close: the stack ends the connection and the client hears of it. */
class KernelBleConnection extends SimBleConnection {
  onHubClose: (() => void) | null = null;
  override close(): void {
    super.close();
    if (this.onHubClose) this.onHubClose();
  }
}

const EVENT = 1;
const ARRIVE = 2;

export class BleConnection extends Connection implements Task {
  readonly binding = 'ble';
  readonly params: BleParams;
  readonly conn: KernelBleConnection;
  private lossRate: number;
  private lastGoodUs: number;
  private readonly intervalUs: number;
  private readonly inbound = new FrameDeque();
  private closing = false;
  /** When a fault last failed the notification in flight (kernel µs; NaN: never). */
  private faultFailedUs = NaN;
  /** [heal, end of the retry pause] of a notification a fault failed just before it healed, µs. */
  private readonly retryPauses: [number, number][] = [];

  constructor(env: ConnectionEnv, id: string, client: string, profile: string, params: BleParams) {
    super(env, id, client, profile);
    this.params = params;
    this.lossRate = params.eventLossRate;
    this.intervalUs = Math.round(params.connIntervalMs * US_PER_MS);
    this.lastGoodUs = this.kernel.nowUs;
    this.conn = new KernelBleConnection(
      env.fineClock,
      {
        intervalMs: params.connIntervalMs,
        attMtu: params.attMtu,
        perEvent: params.perEvent,
        completionLossRate: params.completionLossRate,
        // Drawn only when completions are lost, so that other runs keep their random sequence.
        ...(params.completionLossRate > 0 ? { seed: 1 + Math.floor(env.kernel.rng.float() * 0x7fffffff) } : {}),
        link: { queue: { notifications: params.queueNotifications }, tierCeiling: params.paired ? Tier.maintainer : Tier.observer },
      },
      true,
    );
    this.conn.onHubClose = () => this.hubClosed();
    this.conn.link.connect(this.attachTap(this.conn.link));
    this.kernel.after(this.intervalUs, this, EVENT);
  }

  run(kind: number): void {
    if (kind === ARRIVE) {
      const q = this.inbound;
      if (q.size === 0) return;
      this.deliver(q.headBytes.subarray(0, q.headLen));
      q.shift();
      return;
    }
    if (this.ended || this.closing || !this.conn.isConnected) return;
    this.kernel.after(this.intervalUs, this, EVENT);
    const now = this.kernel.nowUs;
    const faulted = this.partitioned || this.downBlocked || this.upBlocked;
    const bad = faulted || this.kernel.rng.chance(this.lossRate);
    this.conn.stalled = bad;
    const failed = this.conn.notificationsFailed;
    // A microsecond of slack: the connection counts its events in fractional ms.
    this.conn.advance(now / US_PER_MS + 0.001);
    this.conn.stalled = false;
    if (faulted && this.conn.notificationsFailed !== failed) this.faultFailedUs = now;
    if (bad) {
      if (now - this.lastGoodUs >= this.params.supervisionTimeoutMs * US_PER_MS) this.supervisionTimeout();
      return;
    }
    this.lastGoodUs = now;
    const frames = this.conn.take();
    const at = now + this.params.latencyMs * US_PER_MS;
    for (const f of frames) {
      this.inbound.push(f, f.length, now);
      this.kernel.at(at, this, ARRIVE);
    }
  }

  /** §6.6: the link layer gives up; both hosts learn it at once. */
  private supervisionTimeout(): void {
    this.closing = true;
    this.conn.disconnect();
    this.tellClientClosed();
    this.end('supervision-timeout');
  }

  private hubClosed(): void {
    if (this.closing) return;
    this.closing = true;
    // The client's stack hears the termination at the next connection event.
    this.kernel.timeout(this.intervalUs + this.params.latencyMs * US_PER_MS, () => {
      this.tellClientClosed();
      this.end('hub-close');
    });
  }

  clientSend(bytes: Uint8Array, ahead: boolean): void {
    if (this.ended || this.closing) return;
    if (ahead) this.conn.clientEstop(bytes);
    else this.conn.clientSend(bytes);
  }

  clientClose(): void {
    if (this.ended || this.closing) return;
    this.closing = true;
    this.tellClientClosed();
    this.inbound.clear();
    this.kernel.timeout(this.intervalUs, () => {
      this.conn.disconnect();
      this.end('client-close');
    });
  }

  disconnect(mode: 'reset' | 'silent'): void {
    if (mode === 'silent') {
      // A peer that vanishes: no event gets through until the supervision timeout ends it.
      this.goSilent();
      return;
    }
    this.supervisionTimeout();
  }

  setLoss(p: number): void {
    this.lossRate = p;
  }

  /**
   * Traffic moves again at the next connection event, except for the notification a fault failed
   * last: the binding hands it out again only BLE_NOTIFY_RETRY_MS after the failure (§13.4.4),
   * and every ESTOP written ahead goes after it. Until then the fault still stands in the way.
   */
  protected resume(): void {
    const now = this.kernel.nowUs;
    const until = this.faultFailedUs + BLE_NOTIFY_RETRY_MS * US_PER_MS;
    if (until > now) this.retryPauses.push([now, until]);
  }

  /**
   * A fault, or the retry pause it left behind (`resume`), overlapped [fromUs, toUs]: for the
   * ESTOP bound and sampleLate alike. Once the pause is over, the failed notification goes at the
   * next hand-out like any notification in flight, which the bound already counts.
   */
  override impairedDuring(fromUs: number, toUs: number): boolean {
    if (super.impairedDuring(fromUs, toUs)) return true;
    for (const [a, b] of this.retryPauses) if (a <= toUs && b >= fromUs) return true;
    return false;
  }

  /**
   * One RTT (a connection interval and the host latency each way) plus one frame time: the
   * ESTOP goes right after the notification in flight, in the next event; a link that loses
   * events adds two intervals (two lost events in a row and the 20 ms notification retry).
   */
  estopBoundMs(): number {
    const p = this.params;
    // A lost completion holds the notification in flight, and the ESTOP behind it, until the
    // link's completion timeout.
    return 2 * (p.connIntervalMs + p.latencyMs) + (this.lossRate > 0 ? 2 * p.connIntervalMs + 20 : 0) + (p.completionLossRate > 0 ? BLE_NOTIFY_TIMEOUT_MS + p.connIntervalMs : 0);
  }

  /**
   * The frame alone on an idle connection: the wait for the next event, one more interval per
   * `perEvent` notifications its fragments need beyond the first event's, then the host latency.
   */
  idleDeliveryMs(frameBytes: number): number {
    const p = this.params;
    const events = Math.ceil(fragmentCount(frameBytes, this.conn.link.fragmentSize) / p.perEvent);
    return events * p.connIntervalMs + p.latencyMs;
  }

  upkeep(): void {
    // The connection's events run the link's tick (SimBleConnection.advance).
  }
}
