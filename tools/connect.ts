// How the tools reach a hub: the `--hub` URL (tcp://HOST:PORT, ws://HOST:PORT[/PATH],
// wss://…), a HubClient of the project's own library (client/node.ts) on it, and health over
// HTTP (docs/operations.md "Reading health over HTTP"). docs/tools.md.

import http from 'node:http';
import https from 'node:https';
import { HubClient, HubClientError, nackName, type SubWish } from '../client/index.js';
import { createTcpClient, createWsClient, type NodeClientOptions } from '../client/node.js';
import { TIER_NAMES } from '../catalog/schema.js';

/** A command line the tool cannot act on; the message says why. */
export class ToolError extends Error {
  constructor(
    message: string,
    /** The exit status: 2 for a usage problem, 1 for everything else. */
    readonly status = 1,
  ) {
    super(message);
  }
}

export interface HubAddress {
  readonly kind: 'tcp' | 'ws';
  /** tcp: host and port; ws: the whole URL. */
  readonly host: string;
  readonly port: number;
  readonly url: string;
}

/** Reads `tcp://HOST:PORT` or `ws://HOST:PORT[/PATH]` (`wss://` too). */
export function parseHubUrl(text: string): HubAddress {
  let u: URL;
  try {
    u = new URL(text);
  } catch {
    throw new ToolError(`--hub ${JSON.stringify(text)} is not a URL: give tcp://HOST:PORT or ws://HOST:PORT`, 2);
  }
  const host = u.hostname.replace(/^\[(.*)\]$/, '$1');
  if (u.protocol === 'tcp:') {
    const port = Number(u.port);
    if (!u.port || !(port > 0 && port < 65536)) throw new ToolError(`--hub ${text}: a TCP hub needs its port (tcp://HOST:PORT; the device's tcp_port is 7000)`, 2);
    return { kind: 'tcp', host, port, url: text };
  }
  if (u.protocol === 'ws:' || u.protocol === 'wss:') {
    const port = u.port ? Number(u.port) : u.protocol === 'ws:' ? 80 : 443;
    return { kind: 'ws', host, port, url: u.href };
  }
  throw new ToolError(`--hub ${text}: the scheme must be tcp:// or ws:// (wss://), not ${u.protocol}`, 2);
}

export interface SessionOptions {
  readonly hub: HubAddress;
  /** UTF-8 credential; undefined: the hub's anonymous tier. */
  readonly credential?: string;
  readonly name: string;
  readonly subscriptions?: readonly SubWish[];
  /** The client's own handlers, set before the HELLO so that none is missed. */
  readonly handlers?: Pick<NodeClientOptions, 'onData' | 'onGrant' | 'onEstop' | 'onNack' | 'onState'>;
  /** Reconnect and resume after a loss (record, echo and rate do; one-shot commands do not). */
  readonly reconnect?: boolean;
}

/** Builds the client without connecting (a caller that must write ESTOP first does so). */
export function makeClient(o: SessionOptions): HubClient {
  const opts: NodeClientOptions = {
    name: o.name,
    reconnect: o.reconnect ?? false,
    ...(o.credential !== undefined ? { credential: new TextEncoder().encode(o.credential) } : {}),
    ...(o.subscriptions !== undefined ? { subscriptions: [...o.subscriptions] } : {}),
    ...o.handlers,
  };
  return o.hub.kind === 'tcp' ? createTcpClient(o.hub.host, o.hub.port, opts) : createWsClient(o.hub.url, opts);
}

/** Connects `client`; a refusal becomes a ToolError that names the NACK. */
export async function open(client: HubClient, hub: HubAddress): Promise<void> {
  try {
    await client.connect();
  } catch (e) {
    throw new ToolError(`cannot open a session on ${hub.url}: ${describe(e)}`);
  }
}

/** A client error in words: the NACK's name when the hub refused. */
export function describe(e: unknown): string {
  if (e instanceof HubClientError) {
    if (e.code === 'NACK') return `${nackName(e.nack) ?? `NACK ${e.nack}`} (${e.message})`;
    return `${e.code}: ${e.message}`;
  }
  if (e instanceof Error) return e.message;
  return String(e);
}

export function tierName(tier: number): string {
  return TIER_NAMES[tier] ?? `tier ${tier}`;
}

/** Resolves after `ms` of the real clock (a tool's measuring window; tests never wait on it). */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Closes the session and lets the GOODBYE reach the hub before the process ends. */
export async function closeQuietly(client: HubClient): Promise<void> {
  if (client.state === 'closed') return;
  client.close();
  await sleep(20);
}

/** One GET of the hub's health over HTTP: status and body. */
export function httpGet(url: string, token: string | undefined): Promise<{ status: number; body: string }> {
  const get = url.startsWith('https:') ? https.get : http.get;
  return new Promise((resolve, reject) => {
    const req = get(url, { headers: token !== undefined ? { authorization: `Bearer ${token}` } : {} }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      res.on('error', reject);
    });
    req.setTimeout(10000, () => req.destroy(new Error(`no answer from ${url} within 10 s`)));
    req.on('error', reject);
  });
}
