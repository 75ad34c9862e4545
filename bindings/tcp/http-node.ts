// The host adapter of the health endpoints (bindings/tcp/http.ts): plain TCP from Node's `net`,
// not `http`, so that the parser and answers the device runs are the ones tested here. Loopback
// by default, on its own port.
//
// `net` is handed in (`HttpHealthServer.listen({ net, … })` with `import net from 'node:net'`):
// typed by the little of it used, this file imports no platform, so it stays out of the device
// build's way and inside tidy's rules for bindings/ (test/host/tidy.test.ts).

import { HttpHealthService, type HttpExchange, type HttpHealthOptions, type HttpOwner } from './http.js';

/** The part of a `net.Socket` used. */
export interface NetSocketLike {
  readonly remoteAddress?: string | undefined;
  on(event: 'data', listener: (chunk: Uint8Array) => void): unknown;
  on(event: 'close' | 'error', listener: () => void): unknown;
  write(data: Uint8Array): boolean;
  end(): unknown;
  destroy(): unknown;
}

/** The part of a `net.Server` used. */
export interface NetServerLike {
  listen(port: number, host: string, callback: () => void): unknown;
  once(event: 'error', listener: (error: Error) => void): unknown;
  off(event: 'error', listener: (error: Error) => void): unknown;
  address(): unknown;
  close(callback: () => void): unknown;
}

/** The part of `node:net` used. */
export interface NetLike {
  createServer(connectionListener: (socket: NetSocketLike) => void): NetServerLike;
}

export interface HttpHealthServerOptions extends HttpHealthOptions {
  readonly net: NetLike;
  readonly host?: string;
  /** 0 lets the OS choose. */
  readonly port?: number;
}

class NetConnection implements HttpOwner {
  ex: HttpExchange | null = null;
  constructor(readonly socket: NetSocketLike) {}
  abort(): void {
    this.ex = null;
    this.socket.destroy();
  }
}

export class HttpHealthServer {
  private readonly connections = new Set<NetConnection>();

  private constructor(
    readonly service: HttpHealthService,
    private readonly server: NetServerLike,
    readonly host: string,
    readonly port: number,
  ) {}

  static listen(o: HttpHealthServerOptions): Promise<HttpHealthServer> {
    const service = new HttpHealthService(o);
    const host = o.host ?? '127.0.0.1';
    let self: HttpHealthServer | null = null;
    const server = o.net.createServer((socket) => {
      if (!self) {
        socket.destroy();
        return;
      }
      self.accept(socket);
    });
    return new Promise((ok, bad) => {
      server.once('error', bad);
      server.listen(o.port ?? 0, host, () => {
        server.off('error', bad);
        const addr = server.address() as { port: number };
        self = new HttpHealthServer(service, server, host, addr.port);
        ok(self);
      });
    });
  }

  /** Why the configured operator token was refused ('' when it was not). */
  get tokenProblem(): string {
    return this.service.tokenProblem;
  }

  private accept(socket: NetSocketLike): void {
    const service = this.service;
    const c = new NetConnection(socket);
    c.ex = service.open(c, socket.remoteAddress ?? '');
    this.connections.add(c);
    socket.on('data', (chunk: Uint8Array) => {
      const ex = c.ex;
      if (!ex || ex.status !== 0) return;
      if (service.input(ex, chunk, 0, chunk.length)) {
        // Node keeps the bytes until they are written; the slot is not reused before 'close'.
        socket.write(ex.response.subarray(0, ex.responseLength));
        socket.end();
      }
    });
    socket.on('error', () => {
      socket.destroy();
    });
    socket.on('close', () => {
      this.connections.delete(c);
      const ex = c.ex;
      c.ex = null;
      if (ex) service.release(ex, c);
    });
  }

  /** Stops listening and ends every connection. */
  close(): Promise<void> {
    for (const c of this.connections) c.socket.destroy();
    return new Promise((ok) => this.server.close(() => ok()));
  }
}
