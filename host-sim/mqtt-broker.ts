// An MQTT broker in this process, for `npm run fleet` without `--broker` and for the uplink's
// tests: aedes (MQTT 3.1.1 and 5, in memory) on a TCP port of the loopback or any address.
import net from 'node:net';
import { createRequire } from 'node:module';

/** What is used of an aedes broker (the package is CommonJS: loaded through require). */
interface Aedes {
  handle(socket: net.Socket): void;
  close(done: () => void): void;
}
const aedes = createRequire(import.meta.url)('aedes') as () => Aedes;

export class Broker {
  port = 0;
  host = '127.0.0.1';
  private broker: Aedes | null = null;
  private server: net.Server | null = null;
  private readonly sockets = new Set<net.Socket>();

  /** Listens on `port` (0: any free one; the same one again after a `stop`). */
  async start(port = this.port, host = this.host): Promise<this> {
    const broker = aedes();
    const server = net.createServer((s) => {
      this.sockets.add(s);
      s.on('close', () => this.sockets.delete(s));
      broker.handle(s);
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    this.port = (server.address() as net.AddressInfo).port;
    this.host = host;
    this.broker = broker;
    this.server = server;
    return this;
  }

  get url(): string {
    return `mqtt://${this.host}:${this.port}`;
  }

  /** The broker goes away: every connection cut, the port closed. */
  async stop(): Promise<void> {
    const server = this.server;
    const broker = this.broker;
    this.server = null;
    this.broker = null;
    for (const s of this.sockets) s.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
    if (broker) await new Promise<void>((resolve) => broker.close(() => resolve()));
  }
}
