// Host adapters for the Wi-Fi binding (§13): real TCP (node:net) and WebSocket (the `ws`
// package) listeners, loopback by default, one TcpLink per connection attached to the hub.
// Node only: the simulator and the host tests use these; the device uses device.ts.
//
// A socket is handed bytes only while its own buffer (socket.writableLength, ws.bufferedAmount)
// is below `socketLimitBytes`, so that a slow client's backlog waits in the link's egress
// queue, where the §10.3 watermark sees it, and not in Node's stream buffers.

import net from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Clock, Log } from '../../hub/ports.js';
import type { WatermarkOptions } from '../detector.js';
import type { HubAttach } from '../link.js';
import { LinkFraming, TcpLink, type DirectTransport } from './egress.js';

/** Egress queue capacity per connection on the host. */
export const NODE_QUEUE_BYTES = 16384;
/** Bytes a socket may hold in its own buffer before the link stops handing it more. */
export const NODE_SOCKET_LIMIT_BYTES = 4096;
/** A graceful close that has not finished after this long is cut (a client that never reads its FIN). */
export const NODE_CLOSE_GRACE_MS = 2000;
/** The `ws` package refuses messages above this itself (close 1009); up to it the link answers NACK TOO_LARGE. */
export const WS_MAX_PAYLOAD = 65536;

export interface NodeListenerOptions {
  readonly hub: HubAttach;
  /** The hub's clock: levels and estimates are judged in hub time. */
  readonly clock: Clock;
  readonly host?: string;
  /** 0 lets the OS choose. */
  readonly port?: number;
  readonly queueBytes?: number;
  readonly socketLimitBytes?: number;
  readonly ackWindowFrames?: number;
  readonly maxFrameBytes?: number;
  readonly closeGraceMs?: number;
  readonly detector?: WatermarkOptions;
  readonly log?: Log;
  /** The highest tier over these connections (TcpLinkOptions.tierCeiling; default maintainer). */
  readonly tierCeiling?: number;
}

interface Resolved {
  readonly limit: number;
  readonly graceMs: number;
}

function resolve(o: NodeListenerOptions): Resolved {
  const limit = o.socketLimitBytes ?? NODE_SOCKET_LIMIT_BYTES;
  if (!(limit >= 1)) throw new RangeError('socketLimitBytes must be ≥ 1');
  return { limit, graceMs: o.closeGraceMs ?? NODE_CLOSE_GRACE_MS };
}

function makeLink(o: NodeListenerOptions, framing: typeof LinkFraming.LENGTH_PREFIX | typeof LinkFraming.MESSAGE, binding: string): TcpLink {
  return new TcpLink({
    hub: o.hub,
    clock: o.clock,
    framing,
    binding,
    queueBytes: o.queueBytes ?? NODE_QUEUE_BYTES,
    maxFrameBytes: o.maxFrameBytes,
    ackWindowFrames: o.ackWindowFrames,
    detector: o.detector,
    log: o.log,
    tierCeiling: o.tierCeiling,
  });
}

// ---------------------------------------------------------------------------------------------
// TCP

class NetTransport implements DirectTransport {
  private scheduled = false;
  private giving = false;
  private readonly pumpBound = (): void => this.pump();
  private readonly writtenBound = (): void => this.kick();

  constructor(
    readonly socket: net.Socket,
    readonly link: TcpLink,
    private readonly r: Resolved,
  ) {}

  /** DirectTransport.room: Node drains the socket on its own, so it is read from the socket each time. */
  get room(): number {
    const s = this.socket;
    if (this.giving || s.destroyed || !s.writable) return 0;
    const room = this.r.limit - s.writableLength;
    return room > 0 ? room : 0;
  }

  writeFrame(header: Uint8Array | null, frame: Uint8Array): void {
    const b = Buffer.allocUnsafe((header ? header.length : 0) + frame.length);
    if (header) b.set(header, 0);
    b.set(frame, header ? header.length : 0);
    this.socket.write(b, this.writtenBound);
  }

  kick(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    // One pump per burst of sends: the frames of one hub call go out in one write.
    queueMicrotask(this.pumpBound);
  }

  pump(): void {
    this.scheduled = false;
    const s = this.socket;
    const link = this.link;
    while (!s.destroyed && s.writable) {
      const room = this.r.limit - s.writableLength;
      const pending = link.pendingBytes();
      const want = room < pending ? room : pending;
      if (want <= 0) break;
      const buf = Buffer.allocUnsafe(want);
      const n = link.pull(buf, 0, want);
      if (n === 0) break;
      s.write(n === want ? buf : buf.subarray(0, n), this.writtenBound);
    }
  }

  close(_wsCode: number): void {
    if (this.giving) return;
    this.giving = true;
    this.pump();
    const s = this.socket;
    if (s.destroyed) return;
    if (this.link.pendingBytes() > 0) {
      // The socket cannot take what is left now: the link is wedged (a park) or the client is
      // not reading; a graceful close would only wait on it.
      s.destroy();
      return;
    }
    s.end();
    setTimeout(() => s.destroy(), this.r.graceMs).unref();
  }
}

/** Length-prefixed frames over TCP (binding name 'tcp'). */
export class TcpListener {
  readonly links = new Set<TcpLink>();
  private readonly sockets = new Set<net.Socket>();

  private constructor(
    private readonly server: net.Server,
    readonly host: string,
    readonly port: number,
  ) {}

  static listen(options: NodeListenerOptions): Promise<TcpListener> {
    const r = resolve(options);
    const host = options.host ?? '127.0.0.1';
    let self: TcpListener | null = null;
    const server = net.createServer({ noDelay: true }, (socket) => {
      if (!self) {
        socket.destroy();
        return;
      }
      const listener = self;
      const link = makeLink(options, LinkFraming.LENGTH_PREFIX, 'tcp');
      const t = new NetTransport(socket, link, r);
      listener.links.add(link);
      listener.sockets.add(socket);
      socket.on('data', (chunk: Buffer) => link.input(chunk, 0, chunk.length));
      socket.on('error', () => options.log?.event('tcp-error'));
      socket.on('close', () => {
        listener.links.delete(link);
        listener.sockets.delete(socket);
        link.transportClosed();
      });
      link.start(t);
    });
    return new Promise((ok, bad) => {
      server.once('error', bad);
      server.listen(options.port ?? 0, host, () => {
        server.off('error', bad);
        const addr = server.address() as net.AddressInfo;
        self = new TcpListener(server, host, addr.port);
        ok(self);
      });
    });
  }

  /** Stops listening and destroys every connection (the hub hears each as lost). */
  close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    return new Promise((ok) => this.server.close(() => ok()));
  }
}

// ---------------------------------------------------------------------------------------------
// WebSocket

class WsTransport implements DirectTransport {
  private scheduled = false;
  private giving = false;
  private readonly pumpBound = (): void => this.pump();
  private readonly sentBound = (): void => this.kick();

  constructor(
    readonly ws: WebSocket,
    readonly link: TcpLink,
    private readonly r: Resolved,
  ) {}

  /** DirectTransport.room: Node drains the socket on its own, so it is read from the socket each time. */
  get room(): number {
    const ws = this.ws;
    if (this.giving || ws.readyState !== ws.OPEN) return 0;
    const room = this.r.limit - ws.bufferedAmount;
    return room > 0 ? room : 0;
  }

  /** One whole frame per message: the link hands a frame over with no header (MESSAGE framing). */
  writeFrame(_header: Uint8Array | null, frame: Uint8Array): void {
    this.ws.send(Buffer.from(frame), { binary: true }, this.sentBound);
  }

  kick(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(this.pumpBound);
  }

  pump(): void {
    this.scheduled = false;
    const ws = this.ws;
    const link = this.link;
    while (ws.readyState === ws.OPEN && ws.bufferedAmount < this.r.limit) {
      const len = link.nextMessageLength();
      if (len === 0) break;
      const buf = Buffer.allocUnsafe(len);
      // One whole record per message: anything else would cut a frame in two, so the
      // connection ends instead (1011: the server met a condition it cannot go on from).
      if (link.pull(buf, 0, len) !== len) {
        ws.close(1011);
        break;
      }
      ws.send(buf, { binary: true }, this.sentBound);
    }
  }

  close(wsCode: number): void {
    if (this.giving) return;
    this.giving = true;
    this.pump();
    const ws = this.ws;
    if (ws.readyState !== ws.OPEN) {
      ws.terminate();
      return;
    }
    if (this.link.pendingBytes() > 0) {
      ws.terminate();
      return;
    }
    ws.close(wsCode);
    setTimeout(() => ws.terminate(), this.r.graceMs).unref();
  }
}

/** One binary WebSocket message per frame (binding name 'ws'). */
export class WsListener {
  readonly links = new Set<TcpLink>();
  private readonly sockets = new Set<WebSocket>();

  private constructor(
    private readonly server: WebSocketServer,
    readonly host: string,
    readonly port: number,
  ) {}

  static listen(options: NodeListenerOptions): Promise<WsListener> {
    const r = resolve(options);
    const host = options.host ?? '127.0.0.1';
    // §13.2, as the device's own upgrade (framing.ts WsHandshake): version 13 only (`ws` also
    // takes 8), no subprotocol chosen (`ws` would pick the first asked), and a text message is
    // refused by the link whatever its bytes (so `ws` does not close on invalid UTF-8 first).
    const server = new WebSocketServer({
      host,
      port: options.port ?? 0,
      maxPayload: WS_MAX_PAYLOAD,
      perMessageDeflate: false,
      clientTracking: false,
      skipUTF8Validation: true,
      handleProtocols: () => false,
      verifyClient: (info, done) => {
        if (info.req.headers['sec-websocket-version'] === '13') done(true);
        else done(false, 400, 'Sec-WebSocket-Version 13 required', { 'Sec-WebSocket-Version': '13' });
      },
    });
    let self: WsListener | null = null;
    server.on('connection', (ws: WebSocket, req) => {
      if (!self) {
        ws.terminate();
        return;
      }
      const listener = self;
      req.socket.setNoDelay(true);
      ws.binaryType = 'nodebuffer';
      const link = makeLink(options, LinkFraming.MESSAGE, 'ws');
      const t = new WsTransport(ws, link, r);
      listener.links.add(link);
      listener.sockets.add(ws);
      ws.on('message', (data: Buffer, isBinary: boolean) => link.message(data, 0, data.length, isBinary));
      ws.on('error', () => options.log?.event('ws-error'));
      ws.on('close', () => {
        listener.links.delete(link);
        listener.sockets.delete(ws);
        link.transportClosed();
      });
      link.start(t);
    });
    return new Promise((ok, bad) => {
      server.once('error', bad);
      server.once('listening', () => {
        server.off('error', bad);
        const addr = server.address() as net.AddressInfo;
        self = new WsListener(server, host, addr.port);
        ok(self);
      });
    });
  }

  close(): Promise<void> {
    for (const ws of this.sockets) ws.terminate();
    return new Promise((ok) => this.server.close(() => ok()));
  }
}
