// The Foxglove bridge (`npm run foxglove -- --hub URL`; docs/tools.md "Foxglove"): one session
// on a hub through the project's client library, served to Foxglove Studio (or any client of
// the Foxglove WebSocket protocol, `foxglove.websocket.v1`) with @foxglove/ws-protocol's
// FoxgloveServer over `ws`.
//
// Every telemetry channel of the hub's catalog is a Foxglove channel `/NAME` with the JSON schema
// the recordings use (tools/mcap.ts: the fields in order, each with its unit). A channel's first
// Foxglove subscriber subscribes the hub session to it, wished at the catalog's ceiling; its
// last unsubscribes it. Beside them `/hub/grants` (the session's grant set), `/hub/levels` (what
// this session can see of the links: below) and `/hub/estop` (the latch). Foxglove's client
// publish on `/INTENT_NAME` sends that INTENT; the hub's ECHO or NACK comes back to the
// publisher as a status message.
//
// FoxgloveServer writes every message to every subscriber at once; it has no backpressure. So
// each viewer's socket is wrapped here: while its WebSocket holds more than `maxBufferBytes`
// unsent, the viewer keeps only the newest message per subscription and the older ones are
// dropped and counted. The hub session and every other viewer go on at their own pace.

import { WebSocketServer, WebSocket, type RawData } from 'ws';
import wsProtocol from '@foxglove/ws-protocol';
import type { IWebSocket, ChannelId } from '@foxglove/ws-protocol';
import type { CatalogIndex, ChannelInfo } from '../catalog/index.js';
import { ChannelClass, Direction, TIER_NAMES, Tier } from '../catalog/schema.js';
import type { Arg, DataFrame, EchoFrame, HubClient } from '../client/index.js';
import { nackName } from '../client/index.js';
import { ToolError, closeQuietly, describe, makeClient, open, parseHubUrl, tierName, type HubAddress } from './connect.js';
import { ESTOP_SCHEMA, ESTOP_TOPIC, GRANTS_SCHEMA, GRANTS_TOPIC, channelSchema, dataMessage, estopMessage, grantsMessage, topicOf } from './mcap.js';

const { FoxgloveServer, StatusLevel } = wsProtocol;
type Server = InstanceType<typeof FoxgloveServer>;

export const LEVELS_TOPIC = '/hub/levels';
/** Foxglove's usual port for a WebSocket bridge. */
export const DEFAULT_PORT = 8765;
/** A viewer's unsent bytes above which it gets only the newest message per channel. */
export const DEFAULT_MAX_BUFFER = 256 * 1024;
export const LEVELS_INTERVAL_MS = 1000;
const MESSAGE_DATA = 1;
const FLUSH_MS = 10;

const LEVELS_SCHEMA = {
  title: 'hub levels',
  description:
    'what this session can see of the links: with a maintainer credential the health report’s per-link rows (§10.3 level, egress queue fill, loss); at any tier this session’s own view (gaps and drops per channel, round trip) and the bridge’s shedding per viewer',
  type: 'object',
  properties: {
    tier: { type: 'string' },
    source: { type: 'string', enum: ['health', 'session'] },
    links: {
      type: 'array',
      items: { type: 'object', properties: { slot: { type: 'integer' }, binding: { type: 'integer' }, level: { type: 'integer', description: '§10.3 congestion level: 0 clear, 1 congested, 2 severe' }, occupancy: { type: 'number' }, loss: { type: 'number' } } },
    },
    estopLatched: { type: 'boolean' },
    admitting: { type: 'boolean', description: 'the hub admits new sessions (health report, maintainer)' },
    ladderRung: { type: 'integer', description: 'the hub’s overload ladder rung, 0 calm (health report, maintainer)' },
    session: {
      type: 'object',
      properties: {
        state: { type: 'string' },
        rttMs: { type: 'number', unit: 'ms' },
        channels: { type: 'array', items: { type: 'object', properties: { channel: { type: 'string' }, frames: { type: 'integer' }, gaps: { type: 'integer' }, dropped: { type: 'integer' } } } },
      },
    },
    viewers: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' }, sent: { type: 'integer' }, shed: { type: 'integer' }, pending: { type: 'integer' } } } },
  },
};

export interface ViewerStats {
  readonly name: string;
  /** Messages written to the viewer's socket. */
  readonly sent: number;
  /** Messages dropped for a newer one of the same subscription while the viewer lagged. */
  readonly shed: number;
  /** Messages waiting (at most one per subscription). */
  readonly pending: number;
}

/**
 * One Foxglove viewer's socket as FoxgloveServer sees it. Text (control) frames go straight out;
 * message data goes out while the WebSocket's unsent bytes are within the bound, and otherwise
 * waits, newest per subscription only.
 */
class Viewer implements IWebSocket {
  binaryType = 'arraybuffer';
  onerror: ((event: unknown) => void) | null | undefined = null;
  onopen: ((event: unknown) => void) | null | undefined = null;
  onclose: ((event: unknown) => void) | null | undefined = null;
  onmessage: ((event: unknown) => void) | null | undefined = null;
  sent = 0;
  shed = 0;
  private readonly pending = new Map<number, Uint8Array>();
  private timer: ReturnType<typeof setInterval> | null = null;

  constructor(
    readonly ws: WebSocket,
    readonly name: string,
    private readonly maxBuffer: number,
    onSubscribed: (viewer: Viewer, subs: { id: number; channelId: number }[]) => void,
  ) {
    ws.on('message', (data: RawData, isBinary: boolean) => {
      if (isBinary) {
        const b = Buffer.isBuffer(data) ? data : Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
        this.onmessage?.({ data: b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) });
        return;
      }
      const text = (Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as Buffer)).toString('utf8');
      this.onmessage?.({ data: text });
      let m: unknown;
      try {
        m = JSON.parse(text);
      } catch {
        return;
      }
      const o = m as { op?: unknown; subscriptions?: unknown };
      if (o.op === 'subscribe' && Array.isArray(o.subscriptions)) onSubscribed(this, o.subscriptions as { id: number; channelId: number }[]);
    });
    ws.on('close', (code: number, reason: Buffer) => {
      this.stop();
      this.onclose?.({ code, reason: reason.toString(), wasClean: true });
    });
    ws.on('error', (e: Error) => this.onerror?.(e));
  }

  get protocol(): string {
    return this.ws.protocol;
  }

  get stats(): ViewerStats {
    return { name: this.name, sent: this.sent, shed: this.shed, pending: this.pending.size };
  }

  close(): void {
    this.stop();
    this.ws.close();
  }

  /** Ends the connection at once: a viewer that does not read cannot hold up the bridge's end. */
  terminate(): void {
    this.stop();
    this.ws.terminate();
  }

  send(data: string | ArrayBuffer | ArrayBufferView): void {
    if (this.ws.readyState !== WebSocket.OPEN) return;
    if (typeof data === 'string') {
      this.ws.send(data);
      return;
    }
    const bytes = data instanceof ArrayBuffer ? new Uint8Array(data) : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    if (bytes.length < 5 || bytes[0] !== MESSAGE_DATA) {
      this.ws.send(bytes);
      return;
    }
    this.offer(new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(1, true), bytes);
  }

  /** One message of a subscription: out now, or held as that subscription's newest. */
  offer(subId: number, bytes: Uint8Array): void {
    if (this.pending.size === 0 && this.ws.bufferedAmount <= this.maxBuffer) {
      this.ws.send(bytes);
      this.sent++;
      return;
    }
    if (this.pending.delete(subId)) this.shed++;
    this.pending.set(subId, bytes);
    if (this.timer === null) this.timer = setInterval(() => this.flush(), FLUSH_MS);
  }

  private flush(): void {
    if (this.ws.readyState !== WebSocket.OPEN) {
      this.stop();
      return;
    }
    for (const [subId, bytes] of this.pending) {
      if (this.ws.bufferedAmount > this.maxBuffer) return;
      this.pending.delete(subId);
      this.ws.send(bytes);
      this.sent++;
    }
    this.stop();
  }

  private stop(): void {
    if (this.timer !== null) clearInterval(this.timer);
    this.timer = null;
    if (this.ws.readyState !== WebSocket.OPEN) this.pending.clear();
  }
}

/** A MESSAGE_DATA frame of the Foxglove protocol: opcode, subscription, timestamp (ns), payload. */
function messageData(subId: number, timeNs: bigint, payload: Uint8Array): Uint8Array {
  const b = new Uint8Array(13 + payload.length);
  const v = new DataView(b.buffer);
  v.setUint8(0, MESSAGE_DATA);
  v.setUint32(1, subId, true);
  v.setBigUint64(5, timeNs, true);
  b.set(payload, 13);
  return b;
}

export interface BridgeOptions {
  readonly hub: HubAddress;
  readonly credential?: string;
  /** The Foxglove WebSocket port; 0 for any free one. */
  readonly port: number;
  readonly host?: string;
  readonly name?: string;
  readonly maxBufferBytes?: number;
  readonly levelsIntervalMs?: number;
  /** Messages for the operator (stderr in the command). */
  readonly log?: (line: string) => void;
}

/** One hub session served as a Foxglove WebSocket server. */
export class FoxgloveBridge {
  readonly server: Server;
  private readonly wss: WebSocketServer;
  private readonly viewers = new Set<Viewer>();
  private readonly fgByHub = new Map<number, ChannelId>();
  private readonly hubByFg = new Map<ChannelId, ChannelInfo>();
  /** The subscriptions the viewers want, and the chain that brings the hub session to them. */
  private readonly wanted = new Set<number>();
  private subscribeChain: Promise<void> = Promise.resolve();
  private readonly state = new Map<ChannelId, Uint8Array>();
  private grantsId = 0;
  private levelsId = 0;
  private estopId = 0;
  private offsetMs: number;
  private levelsTimer: ReturnType<typeof setInterval> | null = null;
  private readonly enc = new TextEncoder();
  private closed = false;

  private constructor(
    readonly client: HubClient,
    readonly catalog: CatalogIndex,
    readonly options: BridgeOptions,
    wss: WebSocketServer,
    server: Server,
  ) {
    this.wss = wss;
    this.server = server;
    this.offsetMs = -Date.now();
  }

  /** Opens the hub session, reads the catalog and starts serving Foxglove. */
  static async start(o: BridgeOptions): Promise<FoxgloveBridge> {
    let bridge: FoxgloveBridge | null = null;
    const client = makeClient({
      hub: o.hub,
      name: o.name ?? 'foxglove',
      reconnect: true,
      ...(o.credential !== undefined ? { credential: o.credential } : {}),
      handlers: {
        onData: (id, f) => bridge?.data(id, f),
        onGrant: () => queueMicrotask(() => bridge?.grantsChanged()),
        onEstop: (e) => bridge?.estopChanged(estopMessage(e), (e.flags & 1) === 1),
      },
    });
    await open(client, o.hub);
    let catalog: CatalogIndex;
    try {
      catalog = await client.fetchCatalog();
    } catch (e) {
      await closeQuietly(client);
      throw new ToolError(`the catalog could not be read: ${describe(e)}`);
    }
    const welcome = client.welcome;
    const server = new FoxgloveServer({
      name: `robot hub ${welcome?.hubId ?? ''} via robot-hub foxglove bridge`.trim(),
      capabilities: ['clientPublish'],
      supportedEncodings: ['json'],
      metadata: { hub_url: o.hub.url, tier: tierName(client.tier), catalog: catalog.catalog.name, catalog_hash: catalog.hashHex },
    });
    const wss = new WebSocketServer({ port: o.port, host: o.host ?? '127.0.0.1', handleProtocols: (protocols: Set<string>) => server.handleProtocols(protocols) });
    await new Promise<void>((resolve, reject) => {
      wss.once('listening', resolve);
      wss.once('error', reject);
    });
    bridge = new FoxgloveBridge(client, catalog, o, wss, server);
    bridge.setUp();
    return bridge;
  }

  /** The Foxglove WebSocket URL. */
  get url(): string {
    const a = this.wss.address();
    const port = typeof a === 'object' && a !== null ? a.port : this.options.port;
    return `ws://${this.options.host ?? '127.0.0.1'}:${port}`;
  }

  get port(): number {
    const a = this.wss.address();
    return typeof a === 'object' && a !== null ? a.port : this.options.port;
  }

  viewerStats(): ViewerStats[] {
    return [...this.viewers].map((v) => v.stats);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.levelsTimer !== null) clearInterval(this.levelsTimer);
    for (const v of this.viewers) v.terminate();
    await new Promise<void>((r) => this.wss.close(() => r()));
    await closeQuietly(this.client);
  }

  private log(line: string): void {
    this.options.log?.(line);
  }

  private setUp(): void {
    const server = this.server;
    for (const c of this.catalog.channels) {
      if (c.direction !== Direction.telemetry) continue;
      const id = server.addChannel({ topic: topicOf(c), encoding: 'json', schemaName: `robot_hub.${c.name}`, schema: JSON.stringify(channelSchema(c)), schemaEncoding: 'jsonschema' });
      this.fgByHub.set(c.id, id);
      this.hubByFg.set(id, c);
    }
    const plain = (topic: string, name: string, schema: unknown): ChannelId => server.addChannel({ topic, encoding: 'json', schemaName: name, schema: JSON.stringify(schema), schemaEncoding: 'jsonschema' });
    this.grantsId = plain(GRANTS_TOPIC, 'robot_hub.Grants', GRANTS_SCHEMA);
    this.levelsId = plain(LEVELS_TOPIC, 'robot_hub.Levels', LEVELS_SCHEMA);
    this.estopId = plain(ESTOP_TOPIC, 'robot_hub.Estop', ESTOP_SCHEMA);

    server.on('subscribe', (id) => {
      const info = this.hubByFg.get(id);
      if (info !== undefined) this.want(info, true);
    });
    server.on('unsubscribe', (id) => {
      const info = this.hubByFg.get(id);
      if (info !== undefined) this.want(info, false);
    });
    server.on('message', ({ client, channel, data }) => this.clientPublish(client.connection as Viewer, channel.topic, data));
    server.on('advertise', ({ client, topic }) => {
      const info = this.catalog.byName(topic.replace(/^\//, ''));
      if (info === undefined || info.cls !== ChannelClass.INTENT) {
        server.sendStatus({ level: StatusLevel.WARNING, message: `${topic}: only the hub's INTENT channels take a client publish (${this.intentNames()})` }, client.connection);
      }
    });
    server.on('error', (e) => this.log(`foxglove: ${e.message}`));

    this.wss.on('connection', (ws, req) => {
      const name = `${req.socket.remoteAddress ?? '?'}:${req.socket.remotePort ?? 0}`;
      const viewer = new Viewer(ws, name, this.options.maxBufferBytes ?? DEFAULT_MAX_BUFFER, (v, subs) => this.sendState(v, subs));
      this.viewers.add(viewer);
      ws.on('close', () => this.viewers.delete(viewer));
      server.handleConnection(viewer, name);
    });

    this.grantsChanged();
    const last = this.client.lastEstop;
    this.estopChanged(last !== null ? estopMessage(last) : { kind: 'cleared', latched: this.client.latched, source: 'none', origin: 0, seq: 0 }, this.client.latched);
    this.levels();
    this.levelsTimer = setInterval(() => this.levels(), this.options.levelsIntervalMs ?? LEVELS_INTERVAL_MS);
  }

  private intentNames(): string {
    return this.catalog.channels
      .filter((c) => c.cls === ChannelClass.INTENT)
      .map((c) => topicOf(c))
      .join(', ');
  }

  /** The hub clock as this session estimates it, in ns (docs/tools.md "Recordings"). */
  private hubNowNs(): bigint {
    return BigInt(Math.max(0, Math.round(Date.now() + this.offsetMs))) * 1000000n;
  }

  private want(info: ChannelInfo, on: boolean): void {
    if (on) this.wanted.add(info.id);
    else this.wanted.delete(info.id);
    this.subscribeChain = this.subscribeChain.then(async () => {
      const subscribed = this.client.grants.has(info.id);
      const wanted = this.wanted.has(info.id);
      if (this.closed || subscribed === wanted) return;
      try {
        if (wanted) {
          const a = await this.client.subscribe([{ channelId: info.id, wishedRateHz: info.maxRateHz }]);
          for (const r of a.refused) {
            const why = nackName(r.code) ?? `NACK ${r.code}`;
            this.server.sendStatus({ level: StatusLevel.ERROR, message: `${topicOf(info)}: the hub refused the subscription: ${why}${r.code === 5 ? ` (needs the ${TIER_NAMES[info.subscribeTier]} tier; this bridge's session is ${tierName(this.client.tier)})` : ''}` });
          }
        } else {
          await this.client.unsubscribe([info.id]);
        }
      } catch (e) {
        this.server.sendStatus({ level: StatusLevel.ERROR, message: `${topicOf(info)}: ${describe(e)}` });
      }
    });
  }

  private data(channelId: number, f: DataFrame): void {
    const id = this.fgByHub.get(channelId);
    const info = this.catalog.byId(channelId);
    if (id === undefined || info === undefined) return;
    const off = f.t - Date.now();
    if (off > this.offsetMs || this.offsetMs === -Infinity) this.offsetMs = off;
    this.server.sendMessage(id, BigInt(f.t) * 1000000n, this.enc.encode(JSON.stringify(dataMessage(info, f))));
  }

  /** A `/hub/...` message: sent to its subscribers and kept for the next one. */
  private stateMessage(id: ChannelId, msg: unknown): void {
    const payload = this.enc.encode(JSON.stringify(msg));
    this.state.set(id, payload);
    this.server.sendMessage(id, this.hubNowNs(), payload);
  }

  /** A viewer's new subscriptions to `/hub/...` get the current state at once. */
  private sendState(viewer: Viewer, subs: { id: number; channelId: number }[]): void {
    for (const s of subs) {
      const p = typeof s?.channelId === 'number' ? this.state.get(s.channelId) : undefined;
      if (p !== undefined && typeof s.id === 'number') viewer.offer(s.id, messageData(s.id, this.hubNowNs(), p));
    }
  }

  private grantsChanged(): void {
    this.stateMessage(this.grantsId, grantsMessage(this.catalog, this.client.grants, this.client.pubGrants));
  }

  private estopChanged(msg: Record<string, unknown>, latched: boolean): void {
    this.stateMessage(this.estopId, msg);
    if (latched) this.server.sendStatus({ level: StatusLevel.ERROR, message: `ESTOP latched (source ${String(msg['source'])}${msg['origin'] ? `, session ${String(msg['origin'])}` : ''})`, id: 'hub-estop' });
    else this.server.removeStatus(['hub-estop']);
  }

  private levels(): void {
    const c = this.client;
    const session = {
      state: c.state,
      rttMs: c.rttMs,
      channels: [...c.grants.keys()].map((id) => {
        const s = c.channelStats(id);
        return { channel: this.catalog.byId(id)?.name ?? `#${id}`, frames: s?.frames ?? 0, gaps: s?.gaps ?? 0, dropped: s?.dropped ?? 0 };
      }),
    };
    const base = { tier: tierName(c.tier), session, viewers: this.viewerStats() };
    if (c.tier < Tier.maintainer || c.state !== 'active') {
      this.stateMessage(this.levelsId, { ...base, source: 'session', links: [], estopLatched: c.latched });
      return;
    }
    c.health().then(
      (text) => {
        const r = JSON.parse(text) as { metrics?: { links?: unknown[]; admission?: { admitting?: number }; ladder?: { rung?: number } } };
        const m = r.metrics ?? {};
        this.stateMessage(this.levelsId, {
          ...base,
          source: 'health',
          links: Array.isArray(m.links) ? m.links : [],
          estopLatched: c.latched,
          ...(m.admission !== undefined ? { admitting: m.admission.admitting === 1 } : {}),
          ...(typeof m.ladder?.rung === 'number' ? { ladderRung: m.ladder.rung } : {}),
        });
      },
      () => this.stateMessage(this.levelsId, { ...base, source: 'session', links: [], estopLatched: c.latched }),
    );
  }

  /** A Foxglove client publish: an INTENT on the hub, answered by a status message. */
  private clientPublish(viewer: Viewer, topic: string, data: ArrayBufferView): void {
    const status = (level: number, message: string): void => this.server.sendStatus({ level, message }, viewer);
    const info = this.catalog.byName(topic.replace(/^\//, ''));
    if (info === undefined || info.cls !== ChannelClass.INTENT) {
      status(StatusLevel.ERROR, `${topic}: refused: not an INTENT channel of the hub (${this.intentNames()})`);
      return;
    }
    let args: Arg[] | undefined;
    try {
      args = intentArgs(info, new TextDecoder().decode(new Uint8Array(data.buffer, data.byteOffset, data.byteLength)));
    } catch (e) {
      status(StatusLevel.ERROR, `${topic}: refused: ${e instanceof Error ? e.message : String(e)}`);
      return;
    }
    this.client.intent(info.id, args).then(
      (echo: EchoFrame) => {
        if (echo.result === 0) status(StatusLevel.INFO, `${topic}: ECHO, carried out (request ${echo.requestId})`);
        else status(StatusLevel.WARNING, `${topic}: ECHO, the robot did not carry it out: result ${echo.result} (${nackName(echo.result) ?? 'robot code'})`);
      },
      (e: unknown) => status(StatusLevel.ERROR, `${topic}: refused: ${describe(e)}`),
    );
  }
}

/**
 * An intent's arguments from a published JSON message: `{"args": [...]}`, or an object with the
 * catalog's field names (`{"mode": 2}`), or `{}` for an intent without fields.
 */
export function intentArgs(info: ChannelInfo, text: string): Arg[] | undefined {
  const m: unknown = text.trim() === '' ? {} : JSON.parse(text);
  if (m === null || typeof m !== 'object' || Array.isArray(m)) throw new Error('the message must be a JSON object');
  const o = m as Record<string, unknown>;
  const ok = (v: unknown): v is Arg => typeof v === 'number' || typeof v === 'string';
  if (Array.isArray(o['args'])) {
    if (!o['args'].every(ok)) throw new Error('args must be numbers or texts');
    return o['args'] as Arg[];
  }
  const args: Arg[] = [];
  for (const f of info.def.fields) {
    const v = o[f.name];
    if (v === undefined) break;
    if (!ok(v)) throw new Error(`${f.name} must be a number or a text`);
    args.push(v);
  }
  return args.length > 0 ? args : undefined;
}

const USAGE = `usage: npm run foxglove -- --hub tcp://HOST:PORT|ws://HOST:PORT [--port P] [--host H] [--credential C] [--max-buffer BYTES]

Serves one hub session to Foxglove Studio (Open connection → Foxglove WebSocket → ws://HOST:P).
  --port P            the Foxglove WebSocket port (default ${DEFAULT_PORT}; 0 for any free one)
  --host H            the address to listen on (default 127.0.0.1; 0.0.0.0 for every interface)
  --credential C      the hub credential (or HUB_CREDENTIAL); none: the anonymous tier
  --max-buffer BYTES  a viewer's unsent bytes above which it gets only the newest message per channel (default ${DEFAULT_MAX_BUFFER})
  --name NAME         the hub session's name (default foxglove)
`;

export async function main(argv: readonly string[], env: NodeJS.ProcessEnv): Promise<number> {
  const val = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i] as string;
    if (a === '--help' || a === '-h') {
      process.stdout.write(USAGE);
      return 0;
    }
    const v = argv[i + 1];
    if (!['--hub', '--port', '--host', '--credential', '--max-buffer', '--name'].includes(a) || v === undefined) throw new ToolError(`${a}: unknown option or missing value\n${USAGE}`, 2);
    val.set(a, v);
    i++;
  }
  const hubText = val.get('--hub');
  if (hubText === undefined) throw new ToolError(`--hub is needed\n${USAGE}`, 2);
  const hub = parseHubUrl(hubText);
  const port = Number(val.get('--port') ?? DEFAULT_PORT);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new ToolError('--port must be 0–65535', 2);
  const maxBuffer = Number(val.get('--max-buffer') ?? DEFAULT_MAX_BUFFER);
  if (!(maxBuffer >= 0)) throw new ToolError('--max-buffer must be a number of bytes', 2);
  const credential = val.get('--credential') ?? (env['HUB_CREDENTIAL'] || undefined);
  const bridge = await FoxgloveBridge.start({
    hub,
    port,
    host: val.get('--host') ?? '127.0.0.1',
    name: val.get('--name') ?? 'foxglove',
    maxBufferBytes: maxBuffer,
    ...(credential !== undefined ? { credential } : {}),
    log: (l) => process.stderr.write(`${l}\n`),
  });
  const telemetry = bridge.catalog.channels.filter((c) => c.direction === Direction.telemetry).length;
  process.stdout.write(`Foxglove bridge on ${bridge.url} for ${hub.url} (session ${tierName(bridge.client.tier)}, ${telemetry} channels); Ctrl-C stops\n`);
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await bridge.close();
  return 0;
}
