// Device adapters for the Wi-Fi binding (§13) over the ECMA-419 sockets of the Moddable
// SDK (lwIP on the ESP32): a listener per port, one TcpLink per accepted connection, attached
// to the hub. TCP carries length-prefixed frames; WebSocket is the RFC 6455 server subset of
// framing.ts spoken over the same TCP socket, its upgrade hashed with the SDK's `crypt` SHA-1.
// Type-checked by the device build only (tsconfig.json excludes bindings/*/device.ts).
//
// lwIP facts this relies on (the SDK's lwIP TCP socket): `onWritable(free)` fires when the
// socket is accepted and on every ACK with the free send-buffer bytes; `write` throws "would
// block" when given more than that and otherwise returns what is still free; `read()` returns
// everything received as one ArrayBuffer. The largest `free` ever seen is the send buffer
// (8192 bytes by default), so `total − free` is what lwIP still holds unacknowledged: the
// adapter keeps that below `socketLimitBytes`, so the backlog of a slow client waits in the
// link's egress queue, where the §10.3 watermark sees it.

import Listener from 'embedded:io/socket/listener';
import TCP from 'embedded:io/socket/tcp';
import Timer from 'timer';
import { Digest } from 'crypt';
import type { Clock, Log } from '../../hub/ports.js';
import type { WatermarkOptions } from '../detector.js';
import type { HubAttach } from '../link.js';
import { MAX_HUB_FRAME_BYTES } from '../../hub/frames.js';
import { WS_MAX_HEADER_BYTES } from './framing.js';
import { LinkFraming, TakePool, TcpLink } from './egress.js';
import { SocketPort } from './socket-port.js';

/**
 * Egress queue capacity per connection on the device, where the hub writes frames of at most
 * `maxHubFrameBytes` (the device entry's 1536: docs/operations.md "Memory"); never less than one
 * such frame and its header. It holds only what the socket could not take at once (a frame goes
 * straight to lwIP when it has room), and lwIP holds up to DEVICE_SOCKET_LIMIT_BYTES more behind
 * it. Allocated per connection.
 */
export const DEVICE_QUEUE_BYTES = 1600;
/** Unacknowledged bytes lwIP may hold per connection: two segments of the ESP32's 1436-byte MSS. */
export const DEVICE_SOCKET_LIMIT_BYTES = 2872;
/**
 * The most one take hands the socket (the link's staging area, allocated per connection): one
 * segment. The pump takes again while the socket has room, so this bounds a write, not what goes.
 */
export const DEVICE_TAKE_BYTES = 1436;
/** Connections served at once per listener; lwIP on the ESP32 has 8 active TCP sockets in all. */
export const DEVICE_MAX_CONNECTIONS = 4;

/** A connection's egress queue for a hub writing frames up to `maxHubFrameBytes`. */
export function deviceQueueBytes(maxHubFrameBytes: number = MAX_HUB_FRAME_BYTES): number {
  return Math.max(DEVICE_QUEUE_BYTES, maxHubFrameBytes + WS_MAX_HEADER_BYTES);
}

/** One take: at most one segment, and never more than the socket may hold. */
export function deviceTakeBytes(socketLimitBytes: number = DEVICE_SOCKET_LIMIT_BYTES): number {
  return Math.min(socketLimitBytes, DEVICE_TAKE_BYTES);
}

/**
 * The egress memory of `connections` connections across the TCP and WebSocket listeners, made
 * once at start: their queues and one staging area (TakePool), which a take fills and the socket
 * copies out at once, so one serves them all in turn. Pass it to every listener.
 */
export function deviceTakePool(connections: number, maxHubFrameBytes?: number, socketLimitBytes?: number): TakePool {
  return new TakePool(connections, deviceQueueBytes(maxHubFrameBytes), deviceTakeBytes(socketLimitBytes));
}

export const DeviceLinkKind = Object.freeze({ TCP: 'tcp', WS: 'ws' } as const);
export type DeviceLinkKindName = (typeof DeviceLinkKind)[keyof typeof DeviceLinkKind];

export interface DeviceListenerOptions {
  readonly hub: HubAttach;
  readonly clock: Clock;
  readonly port: number;
  readonly kind: DeviceLinkKindName;
  readonly queueBytes?: number;
  readonly socketLimitBytes?: number;
  readonly ackWindowFrames?: number;
  readonly maxFrameBytes?: number;
  /** The largest frame the hub writes (its HubConfig.maxFrameBytes; default MAX_HUB_FRAME_BYTES). */
  readonly maxHubFrameBytes?: number;
  readonly maxConnections?: number;
  /**
   * The egress memory its connections share (deviceTakePool: one staging area for all of them,
   * every listener's); without it each connection makes its own.
   */
  readonly takePool?: TakePool;
  readonly detector?: WatermarkOptions;
  readonly log?: Log;
  /**
   * The highest tier over these connections (docs/security.md): the Wi-Fi network's protection,
   * as the device entry judges it from its configuration (default maintainer).
   */
  readonly tierCeiling?: number;
}

function sha1(text: string): Uint8Array {
  const d = new Digest('SHA1');
  d.write(text);
  return new Uint8Array(d.close());
}

// An unscheduled timer's intervals; the pump timer is re-armed by each kick.
const IDLE_MS = 0x3fffffff;

/** One connection's socket (the SDK's lwIP TCP) and pump timer around its SocketPort. */
class DeviceTransport extends SocketPort {
  private tcp: TCP | null = null;
  private readonly timer: Timer;

  constructor(
    link: TcpLink,
    limit: number,
    private readonly gone: (t: DeviceTransport) => void,
  ) {
    super(link, limit);
    // One timer per connection, re-armed rather than re-created: a kick allocates nothing.
    this.timer = Timer.repeat(() => {
      Timer.schedule(this.timer);
      this.turn();
    }, IDLE_MS);
    Timer.schedule(this.timer);
  }

  open(from: TCP): void {
    try {
      this.tcp = new TCP({
        from,
        nodelay: true,
        onReadable: () => this.readable(),
        onWritable: (free: number) => this.writable(free),
        onError: () => this.end(),
      });
    } catch {
      // No socket (lwIP out of memory): the timer, the link's pool region and the listener's
      // record go back now, as when a socket ends.
      Timer.clear(this.timer);
      try {
        from.close();
      } catch {
        // already gone
      }
      this.link.transportClosed();
      this.gone(this);
      return;
    }
    this.opened(this.tcp);
  }

  protected schedule(): void {
    Timer.schedule(this.timer, 0, IDLE_MS);
  }

  protected released(): void {
    this.tcp = null;
    Timer.clear(this.timer);
    this.gone(this);
  }

  private readable(): void {
    const tcp = this.tcp;
    if (!tcp) return;
    const got = tcp.read();
    if (typeof got === 'number' || !got) return;
    this.link.input(new Uint8Array(got), 0, got.byteLength);
  }
}

/** Accepts connections on one port and serves each as a TCP or WebSocket link to the hub. */
export class DeviceListener {
  readonly kind: DeviceLinkKindName;
  private readonly listener: Listener;
  private readonly transports = new Set<DeviceTransport>();
  private readonly options: DeviceListenerOptions;
  private readonly forget = (t: DeviceTransport): void => {
    this.transports.delete(t);
  };

  constructor(options: DeviceListenerOptions) {
    this.options = options;
    this.kind = options.kind;
    this.listener = new Listener({ port: options.port, onReadable: (count: number) => this.accept(count) });
  }

  /** Links currently served. */
  get connections(): number {
    return this.transports.size;
  }

  close(): void {
    this.listener.close();
    for (const t of Array.from(this.transports)) t.close(1001);
  }

  private accept(count: number): void {
    const o = this.options;
    for (let i = 0; i < count; i++) {
      const from = this.listener.read();
      if (!from) return;
      if (this.transports.size >= (o.maxConnections ?? DEVICE_MAX_CONNECTIONS)) {
        from.close();
        o.log?.event('tcp-refused', this.transports.size);
        continue;
      }
      const ws = o.kind === DeviceLinkKind.WS;
      const maxHub = o.maxHubFrameBytes ?? MAX_HUB_FRAME_BYTES;
      const link = new TcpLink({
        hub: o.hub,
        clock: o.clock,
        framing: ws ? LinkFraming.WS_SERVER : LinkFraming.LENGTH_PREFIX,
        binding: o.kind,
        queueBytes: o.queueBytes ?? deviceQueueBytes(maxHub),
        maxHubFrameBytes: maxHub,
        takeBytes: deviceTakeBytes(o.socketLimitBytes),
        takePool: o.takePool,
        maxFrameBytes: o.maxFrameBytes,
        ackWindowFrames: o.ackWindowFrames,
        detector: o.detector,
        sha1: ws ? sha1 : undefined,
        log: o.log,
        tierCeiling: o.tierCeiling,
      });
      const t = new DeviceTransport(link, o.socketLimitBytes ?? DEVICE_SOCKET_LIMIT_BYTES, this.forget);
      this.transports.add(t);
      t.open(from);
    }
  }
}
