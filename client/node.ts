// Node transports for the hub client (docs/client.md): TCP with the 16-bit length prefix of §2
// (node:net) and WebSocket with one binary message per frame (the `ws` package), and helpers
// that build a HubClient on them with the real clock.

import net from 'node:net';
import { performance } from 'node:perf_hooks';
import WebSocket from 'ws';
import { HubClient, type HubClientOptions } from './core.js';
import { LengthPrefixReassembler, lengthPrefixed, type ClientClock, type ClientTransport, type TransportFactory } from './transport.js';

/** A graceful close (the GOODBYE flushed, then FIN) that has not finished after this is cut. */
export const CLOSE_GRACE_MS = 1000;

/** Monotonic milliseconds and Node's timers. */
export const nodeClock: ClientClock = Object.freeze({
  now: () => performance.now(),
  setTimer: (ms: number, fn: () => void): unknown => setTimeout(fn, ms),
  clearTimer: (h: unknown): void => clearTimeout(h as ReturnType<typeof setTimeout>),
});

class TcpTransport implements ClientTransport {
  onFrame: ((bytes: Uint8Array) => void) | null = null;
  onClose: (() => void) | null = null;
  private closed = false;
  private readonly reassembler: LengthPrefixReassembler;

  constructor(private readonly socket: net.Socket) {
    this.reassembler = new LengthPrefixReassembler(
      (bytes) => {
        if (this.onFrame) this.onFrame(bytes);
      },
      // §2: a stream out of step cannot be resynchronised; the session resumes on a new one.
      () => socket.destroy(),
    );
    socket.on('data', (chunk: Buffer) => {
      if (!this.closed) this.reassembler.push(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.length));
    });
    socket.on('error', () => undefined); // 'close' follows
    socket.on('close', () => this.ended());
  }

  send(bytes: Uint8Array): void {
    if (this.closed || this.socket.destroyed) return;
    this.socket.write(lengthPrefixed(bytes));
  }

  close(): void {
    if (this.closed) return;
    const s = this.socket;
    s.end();
    setTimeout(() => s.destroy(), CLOSE_GRACE_MS).unref();
    this.ended();
  }

  private ended(): void {
    if (this.closed) return;
    this.closed = true;
    const h = this.onClose;
    this.onClose = null;
    if (h) h();
  }
}

/** Opens a TCP connection to the hub for each (re)connect. */
export function tcpTransport(host: string, port: number): TransportFactory {
  return () =>
    new Promise<ClientTransport>((resolve, reject) => {
      const socket = net.connect({ host, port, noDelay: true });
      const fail = (e: Error): void => {
        socket.destroy();
        reject(e);
      };
      socket.once('error', fail);
      socket.once('connect', () => {
        socket.off('error', fail);
        resolve(new TcpTransport(socket));
      });
    });
}

class WsTransport implements ClientTransport {
  onFrame: ((bytes: Uint8Array) => void) | null = null;
  onClose: (() => void) | null = null;
  private closed = false;

  constructor(private readonly ws: WebSocket) {
    ws.on('message', (data: Buffer) => {
      // A text message is no frame (§2); the core reports what does not decode.
      if (!this.closed && this.onFrame) this.onFrame(new Uint8Array(data.buffer, data.byteOffset, data.length));
    });
    ws.on('error', () => undefined); // 'close' follows
    ws.on('close', () => this.ended());
  }

  send(bytes: Uint8Array): void {
    if (this.closed || this.ws.readyState !== WebSocket.OPEN) return;
    this.ws.send(bytes, { binary: true });
  }

  close(): void {
    if (this.closed) return;
    const ws = this.ws;
    ws.close(1000);
    setTimeout(() => ws.terminate(), CLOSE_GRACE_MS).unref();
    this.ended();
  }

  private ended(): void {
    if (this.closed) return;
    this.closed = true;
    const h = this.onClose;
    this.onClose = null;
    if (h) h();
  }
}

/** Opens a WebSocket (`ws://` or `wss://`) to the hub for each (re)connect. */
export function wsTransport(url: string): TransportFactory {
  return () =>
    new Promise<ClientTransport>((resolve, reject) => {
      const ws = new WebSocket(url, { perMessageDeflate: false });
      ws.binaryType = 'nodebuffer';
      const fail = (e: Error): void => {
        ws.terminate();
        reject(e);
      };
      ws.once('error', fail);
      ws.once('open', () => {
        ws.off('error', fail);
        resolve(new WsTransport(ws));
      });
    });
}

/** HubClientOptions without the transport; the clock and jitter default to Node's. */
export type NodeClientOptions = Omit<HubClientOptions, 'transport' | 'clock'> & Partial<Pick<HubClientOptions, 'clock'>>;

function options(o: NodeClientOptions, transport: TransportFactory): HubClientOptions {
  return { random: Math.random, ...o, clock: o.clock ?? nodeClock, transport };
}

/** A client for the hub's TCP listener; call `connect()`. */
export function createTcpClient(host: string, port: number, o: NodeClientOptions): HubClient {
  return new HubClient(options(o, tcpTransport(host, port)));
}

/** A client for the hub's WebSocket listener; call `connect()`. */
export function createWsClient(url: string, o: NodeClientOptions): HubClient {
  return new HubClient(options(o, wsTransport(url)));
}

/** Connects over TCP and resolves once the session is open (WELCOME in `client.welcome`). */
export async function connectTcp(host: string, port: number, o: NodeClientOptions): Promise<HubClient> {
  const c = createTcpClient(host, port, o);
  await c.connect();
  return c;
}

/** Connects over WebSocket and resolves once the session is open. */
export async function connectWs(url: string, o: NodeClientOptions): Promise<HubClient> {
  const c = createWsClient(url, o);
  await c.connect();
  return c;
}
