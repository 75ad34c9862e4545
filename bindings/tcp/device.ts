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
import { LinkFraming, TakePool, TcpLink, type DirectTransport } from './egress.js';

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

class DeviceTransport implements DirectTransport {
  private tcp: TCP | null = null;
  private free = 0;
  private total = 0;
  private scheduled = false;
  private giving = false;
  private readonly timer: Timer;

  constructor(
    readonly link: TcpLink,
    private readonly limit: number,
    private readonly gone: (t: DeviceTransport) => void,
  ) {
    // One timer per connection, re-armed rather than re-created: a kick allocates nothing.
    this.timer = Timer.repeat(() => {
      Timer.schedule(this.timer);
      this.scheduled = false;
      this.pump();
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
    this.link.start(this);
  }

  /** What lwIP takes now within the limit: the link hands a frame straight over when it fits (no queue, no copy). */
  room(): number {
    if (!this.tcp || this.giving || this.scheduled) return 0;
    let room = this.limit - (this.total - this.free);
    if (room > this.free) room = this.free;
    return room > 0 ? room : 0;
  }

  writeFrame(header: Uint8Array | null, frame: Uint8Array): void {
    const tcp = this.tcp;
    if (!tcp) return;
    let left: number;
    try {
      if (header !== null) tcp.write(header);
      left = tcp.write(frame);
    } catch {
      this.end();
      return;
    }
    this.free = typeof left === 'number' ? left : 0;
  }

  kick(): void {
    if (this.scheduled || this.giving) return;
    this.scheduled = true;
    // Deferred to the next turn of the run loop: the frames of one hub call go out in one write.
    Timer.schedule(this.timer, 0, IDLE_MS);
  }

  close(_wsCode: number): void {
    if (this.giving) return;
    this.giving = true;
    this.pump();
    // lwIP sends what it already holds, then FIN; what the link still queues is dropped.
    this.end();
  }

  private readable(): void {
    const tcp = this.tcp;
    if (!tcp) return;
    const got = tcp.read();
    if (typeof got === 'number' || !got) return;
    this.link.input(new Uint8Array(got), 0, got.byteLength);
  }

  private writable(free: number): void {
    this.free = free;
    if (free > this.total) this.total = free;
    this.pump();
  }

  private pump(): void {
    const tcp = this.tcp;
    if (!tcp) return;
    const link = this.link;
    for (;;) {
      let room = this.limit - (this.total - this.free);
      if (room > this.free) room = this.free;
      if (room <= 0) return;
      // The link hands over exactly what goes, as a view of its own staging area: nothing is
      // allocated or copied again here (lwIP copies it, TCP_WRITE_FLAG_COPY).
      const n = link.take(room);
      if (n === 0) return;
      let left: number;
      try {
        left = tcp.write(link.out);
      } catch {
        // "would block" cannot happen (room ≤ free); anything else is a dead socket.
        link.wrote();
        this.end();
        return;
      }
      link.wrote();
      this.free = typeof left === 'number' ? left : 0;
    }
  }

  private end(): void {
    const tcp = this.tcp;
    if (!tcp) return;
    this.tcp = null;
    Timer.clear(this.timer);
    try {
      tcp.close();
    } catch {
      // already closed by lwIP
    }
    this.link.transportClosed();
    this.gone(this);
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
