// The device adapter of the health endpoints (bindings/tcp/http.ts) over the ECMA-419 sockets:
// `embedded:io/socket/listener` and `embedded:io/socket/tcp` (lwIP on the ESP32, docs/architecture.md
// "The device runtime"). Their constructors are handed in, as the SDK's own mqttclient takes its socket:
// device/main.ts passes `Listener` and `TCP`, and this file imports no platform, so
// the Node build compiles it and a test can drive it with fakes.
//
// lwIP facts this relies on (the SDK's lwIP TCP socket): `onWritable(free)` fires when the
// socket is accepted and on every ACK; `write` throws "would block" when given more than `free`
// and otherwise returns what is still free; `read()` returns everything received as one
// ArrayBuffer; `close()` sends what lwIP already holds, then FIN. No timer: a connection that
// never finishes its request is ended when a newer one needs its slot.

import { HttpHealthService, type HttpExchange, type HttpHealthOptions, type HttpOwner } from './http.js';

/** The part of an `embedded:io/socket/tcp` instance used. */
export interface DeviceTcpLike {
  readonly remoteAddress: string | undefined;
  read(): number | ArrayBuffer;
  write(value: Uint8Array): number;
  close(): void;
}

/** The part of an `embedded:io/socket/listener` instance used; `S` is what it hands out (a TCP). */
export interface DeviceListenerLike<S> {
  read(): S | undefined;
  close(): void;
}

export interface DeviceTcpOptions<S> {
  from: S;
  nodelay: boolean;
  onReadable: (bytes: number) => void;
  onWritable: (free: number) => void;
  onError: () => void;
}

export interface HttpDeviceOptions<S> extends HttpHealthOptions {
  /** `embedded:io/socket/listener`'s default export. */
  readonly Listener: new (options: { port: number; onReadable: (count: number) => void }) => DeviceListenerLike<S>;
  /** `embedded:io/socket/tcp`'s default export. */
  readonly TCP: new (options: DeviceTcpOptions<S>) => DeviceTcpLike;
  readonly port: number;
}

class DeviceConnection<S> implements HttpOwner {
  tcp: DeviceTcpLike | null = null;
  ex: HttpExchange | null = null;
  private free = 0;

  constructor(
    private readonly service: HttpHealthService,
    private readonly gone: (c: DeviceConnection<S>) => void,
  ) {}

  open(TCP: HttpDeviceOptions<S>['TCP'], from: S): void {
    this.tcp = new TCP({
      from,
      nodelay: true,
      onReadable: () => this.readable(),
      onWritable: (free: number) => this.writable(free),
      onError: () => this.end(),
    });
    this.ex = this.service.open(this, this.tcp.remoteAddress ?? '');
  }

  abort(): void {
    this.ex = null;
    this.end();
  }

  private readable(): void {
    const tcp = this.tcp;
    const ex = this.ex;
    if (!tcp) return;
    const got = tcp.read();
    if (typeof got === 'number' || !got || !ex || ex.status !== 0) return;
    if (this.service.input(ex, new Uint8Array(got), 0, got.byteLength)) this.pump();
  }

  private writable(free: number): void {
    this.free = free;
    this.pump();
  }

  private pump(): void {
    const tcp = this.tcp;
    const ex = this.ex;
    if (!tcp || !ex || ex.status === 0) return;
    while (ex.sent < ex.responseLength) {
      let n = ex.responseLength - ex.sent;
      if (n > this.free) n = this.free;
      if (n <= 0) return;
      try {
        this.free = tcp.write(ex.response.subarray(ex.sent, ex.sent + n));
      } catch {
        // "would block" cannot happen (n ≤ free); anything else is a dead socket.
        this.end();
        return;
      }
      ex.sent += n;
    }
    this.end();
  }

  end(): void {
    const tcp = this.tcp;
    if (!tcp) return;
    this.tcp = null;
    try {
      tcp.close();
    } catch {
      // already closed by lwIP
    }
    const ex = this.ex;
    this.ex = null;
    if (ex) this.service.release(ex, this);
    this.gone(this);
  }
}

/** Accepts connections on one port and answers each with one health response. */
export class HttpDeviceServer<S> {
  readonly service: HttpHealthService;
  private readonly listener: DeviceListenerLike<S>;
  private readonly TCP: HttpDeviceOptions<S>['TCP'];
  private readonly live = new Set<DeviceConnection<S>>();
  private readonly forget = (c: DeviceConnection<S>): void => {
    this.live.delete(c);
  };

  constructor(o: HttpDeviceOptions<S>) {
    this.service = new HttpHealthService(o);
    this.TCP = o.TCP;
    this.listener = new o.Listener({ port: o.port, onReadable: (count: number) => this.accept(count) });
  }

  /** Connections currently open. */
  get connections(): number {
    return this.live.size;
  }

  close(): void {
    this.listener.close();
    for (const c of Array.from(this.live)) c.end();
  }

  private accept(count: number): void {
    for (let i = 0; i < count; i++) {
      const from = this.listener.read();
      if (from === undefined) return;
      const c = new DeviceConnection<S>(this.service, this.forget);
      this.live.add(c);
      c.open(this.TCP, from);
    }
  }
}
