// Recordings of a hub session as MCAP files (`hubctl record`, `hubctl replay`; docs/tools.md
// "Recordings"), written and read with @mcap/core.
//
// One topic per recorded channel (`/imu`, `/battery`, …): each DATA frame is one JSON message
// whose JSON schema is built from the catalog (the fields in order, each with its unit), logged
// at the sample's hub timestamp. Beside them, on topics of their own, the session's view of the
// hub: `/hub/grants` (every grant statement, the whole set each time), `/hub/nacks` and
// `/hub/estop` (every ESTOP frame, latch and clear). Foxglove opens such a file as it is.

import { open as openFile, type FileHandle } from 'node:fs/promises';
import { McapIndexedReader, McapWriter, type IWritable } from '@mcap/core';
import type { CatalogIndex, ChannelInfo } from '../catalog/index.js';
import { CHANNEL_CLASS_NAMES, PRIORITY_NAMES, STREAM_KIND_NAMES } from '../catalog/schema.js';
import type { DataFrame, EstopFrame, NackFrame, PubGrant, SubGrant } from '../client/index.js';
import { EstopKind, nackName } from '../client/index.js';
import { EstopSource } from '../hub/estop-frame.js';

export const GRANTS_TOPIC = '/hub/grants';
export const NACKS_TOPIC = '/hub/nacks';
export const ESTOP_TOPIC = '/hub/estop';
/** The MCAP profile and library name written in the header. */
export const MCAP_LIBRARY = 'robot-hub hubctl';
/** The name of the metadata record that describes the recording. */
export const RECORDING_METADATA = 'robot-hub';

const NS_PER_US = 1000n;

const ESTOP_SOURCE_NAMES: Record<number, string> = {};
for (const [k, v] of Object.entries(EstopSource)) ESTOP_SOURCE_NAMES[v] = k.toLowerCase().replace('_', '-');

/** An ESTOP source code in words (client, hub-button, deadman, watchdog, robot, fleet). */
export function estopSourceName(code: number): string {
  return ESTOP_SOURCE_NAMES[code] ?? String(code);
}

export function topicOf(info: ChannelInfo): string {
  return `/${info.name}`;
}

/**
 * The keys a channel message holds besides the catalog's fields. They start with `hub_`; a field
 * of that name (no catalog has one) is still recorded, in `hub_values`.
 */
export const MESSAGE_KEYS = Object.freeze({ t: 'hub_t_ms', seq: 'hub_seq', gap: 'hub_gap', dropped: 'hub_dropped', text: 'hub_text', values: 'hub_values' } as const);
const RESERVED: ReadonlySet<string> = new Set(Object.values(MESSAGE_KEYS));

/** The JSON schema of one channel's messages: the catalog's fields, each with its unit. */
export function channelSchema(info: ChannelInfo): Record<string, unknown> {
  const K = MESSAGE_KEYS;
  const properties: Record<string, unknown> = {
    [K.t]: { type: 'integer', description: 'the hub timestamp of the sample, ms on the hub clock' },
    [K.seq]: { type: 'integer', description: 'the DATA frame sequence number of this channel (§5.7)' },
  };
  for (const f of info.def.fields) {
    if (RESERVED.has(f.name)) continue;
    properties[f.name] = { type: 'number', description: f.unit === '' ? 'dimensionless' : `unit: ${f.unit}`, ...(f.unit !== '' ? { unit: f.unit } : {}) };
  }
  properties[K.gap] = { type: 'boolean', description: 'samples are missing before this one (a dropped segment stream, a resume)' };
  properties[K.dropped] = { type: 'integer', description: 'EVENTs of this channel lost from the queue before this one (§9.4)' };
  properties[K.text] = { type: 'string', description: 'the event text' };
  properties[K.values] = { type: 'array', items: { type: 'number' }, description: 'every value as sent, when they are not one per catalog field' };
  return {
    title: info.name,
    description: `robot hub channel ${info.id}: ${CHANNEL_CLASS_NAMES[info.cls]}${info.kind >= 0 ? ` (${(STREAM_KIND_NAMES as readonly string[])[info.kind]})` : ''}, ${PRIORITY_NAMES[info.priority]}, up to ${info.maxRateHz} Hz`,
    type: 'object',
    properties,
    required: [K.t, K.seq],
  };
}

/** One DATA frame as the JSON message of its channel. */
export function dataMessage(info: ChannelInfo, f: DataFrame): Record<string, unknown> {
  const K = MESSAGE_KEYS;
  const m: Record<string, unknown> = { [K.t]: f.t, [K.seq]: f.seq };
  const fields = info.def.fields;
  let whole = f.values.length === fields.length;
  for (let i = 0; i < fields.length && i < f.values.length; i++) {
    const name = (fields[i] as { name: string }).name;
    if (RESERVED.has(name)) whole = false;
    else m[name] = f.values[i];
  }
  if (!whole) m[K.values] = f.values.slice();
  if (f.gap === true) m[K.gap] = true;
  if (f.dropped !== undefined && f.dropped > 0) m[K.dropped] = f.dropped;
  if (f.text !== undefined) m[K.text] = f.text;
  return m;
}

export const GRANTS_SCHEMA = {
  title: 'hub grants',
  description: 'the hub’s whole statement of this session’s grants, at every GRANT and WELCOME (§6.4, §10.2)',
  type: 'object',
  properties: {
    subscriptions: {
      type: 'array',
      items: { type: 'object', properties: { channel: { type: 'string' }, channelId: { type: 'integer' }, grantedRateHz: { type: 'number', unit: 'Hz' }, priority: { type: 'string' } } },
    },
    publications: {
      type: 'array',
      items: { type: 'object', properties: { channel: { type: 'string' }, channelId: { type: 'integer' }, grantedRateHz: { type: 'number', unit: 'Hz' }, burst: { type: 'integer' } } },
    },
  },
};
const NACKS_SCHEMA = {
  title: 'hub NACKs',
  description: 'every NACK the hub sent this session (§12)',
  type: 'object',
  properties: {
    code: { type: 'integer' },
    name: { type: 'string' },
    channelId: { type: 'integer' },
    channel: { type: 'string' },
    frameType: { type: 'integer' },
    requestId: { type: 'integer' },
    retryAfterMs: { type: 'integer' },
  },
};
export const ESTOP_SCHEMA = {
  title: 'hub ESTOP',
  description: 'every ESTOP frame the hub sent this session, latch and clear (§11)',
  type: 'object',
  properties: {
    kind: { type: 'string', enum: ['assert', 'cleared'] },
    latched: { type: 'boolean' },
    source: { type: 'string' },
    origin: { type: 'integer', description: 'the session id that asserted it; 0: the hub, the robot or the deadman' },
    seq: { type: 'integer' },
  },
};

/** The session's whole grant set as the `/hub/grants` message. */
export function grantsMessage(catalog: CatalogIndex, subs: ReadonlyMap<number, SubGrant>, pubs: ReadonlyMap<number, PubGrant>): Record<string, unknown> {
  const name = (id: number): string => catalog.byId(id)?.name ?? `#${id}`;
  return {
    subscriptions: [...subs.values()].map((g) => ({ channel: name(g.channelId), channelId: g.channelId, grantedRateHz: g.grantedRateHz, priority: PRIORITY_NAMES[g.priority] ?? String(g.priority) })),
    publications: [...pubs.values()].map((g) => ({ channel: name(g.channelId), channelId: g.channelId, grantedRateHz: g.grantedRateHz, burst: g.burst })),
  };
}

/** One ESTOP frame as the `/hub/estop` message. */
export function estopMessage(e: EstopFrame): Record<string, unknown> {
  return {
    kind: e.kind === EstopKind.ASSERT ? 'assert' : 'cleared',
    latched: (e.flags & 1) === 1,
    source: ESTOP_SOURCE_NAMES[e.source] ?? String(e.source),
    origin: e.origin,
    seq: e.seq,
  };
}

/** An MCAP sink over a file. */
export class FileSink implements IWritable {
  private pos = 0n;
  private constructor(private readonly fh: FileHandle) {}

  static async create(path: string): Promise<FileSink> {
    return new FileSink(await openFile(path, 'w'));
  }

  async write(buffer: Uint8Array): Promise<void> {
    let done = 0;
    while (done < buffer.length) {
      const { bytesWritten } = await this.fh.write(buffer, done, buffer.length - done);
      done += bytesWritten;
    }
    this.pos += BigInt(buffer.length);
  }

  position(): bigint {
    return this.pos;
  }

  close(): Promise<void> {
    return this.fh.close();
  }
}

export interface RecordingInfo {
  readonly hubId: string;
  readonly hubUrl: string;
  readonly tier: number;
  readonly catalogName: string;
  readonly catalogHash: string;
}

/**
 * Writes one session's frames to MCAP as they arrive. Writes are queued in arrival order on one
 * promise chain; `finish()` waits for them and writes the summary.
 *
 * DATA carries the hub's timestamp; GRANTs, NACKs and ESTOP frames do not. They are logged on the
 * hub's clock as the recorder estimates it: the local arrival time plus the largest
 * (hub timestamp − local arrival) seen so far, the sample that arrived soonest after it was
 * stamped. Until the first DATA frame gives that offset they wait in memory.
 */
export class McapRecorder {
  /** Messages written, by topic. */
  readonly counts = new Map<string, number>();
  private readonly writer: McapWriter;
  private tail: Promise<void> = Promise.resolve();
  private failure: unknown = null;
  private readonly channelIds = new Map<number, number>();
  private grantsId = 0;
  private nacksId = 0;
  private estopId = 0;
  private offsetMs = -Infinity;
  private lastHubMs = 0;
  private pending: { topicId: number; topic: string; localMs: number; msg: unknown }[] = [];
  private readonly seqs = new Map<number, number>();
  private readonly enc = new TextEncoder();

  constructor(
    private readonly sink: FileSink,
    private readonly catalog: CatalogIndex,
    private readonly channels: readonly ChannelInfo[],
    private readonly now: () => number,
  ) {
    this.writer = new McapWriter({ writable: sink });
  }

  async start(info: RecordingInfo): Promise<void> {
    const w = this.writer;
    await w.start({ profile: '', library: MCAP_LIBRARY });
    await w.addMetadata({
      name: RECORDING_METADATA,
      metadata: new Map([
        ['hub_id', info.hubId],
        ['hub_url', info.hubUrl],
        ['tier', String(info.tier)],
        ['catalog_name', info.catalogName],
        ['catalog_hash', info.catalogHash],
        ['recorded_at', new Date().toISOString()],
        ['time_base', 'hub clock, ms since the hub started, as ns'],
      ]),
    });
    for (const c of this.channels) {
      const schemaId = await w.registerSchema({ name: `robot_hub.${c.name}`, encoding: 'jsonschema', data: this.json(channelSchema(c)) });
      const units: [string, string][] = c.def.fields.map((f) => [`unit.${f.name}`, f.unit]);
      const id = await w.registerChannel({
        topic: topicOf(c),
        messageEncoding: 'json',
        schemaId,
        metadata: new Map([['channel_id', String(c.id)], ['class', CHANNEL_CLASS_NAMES[c.cls]], ['fields', c.def.fields.map((f) => f.name).join(',')], ...units]),
      });
      this.channelIds.set(c.id, id);
    }
    const plain = async (topic: string, name: string, schema: unknown): Promise<number> => {
      const schemaId = await w.registerSchema({ name, encoding: 'jsonschema', data: this.json(schema) });
      return w.registerChannel({ topic, messageEncoding: 'json', schemaId, metadata: new Map() });
    };
    this.grantsId = await plain(GRANTS_TOPIC, 'robot_hub.Grants', GRANTS_SCHEMA);
    this.nacksId = await plain(NACKS_TOPIC, 'robot_hub.Nack', NACKS_SCHEMA);
    this.estopId = await plain(ESTOP_TOPIC, 'robot_hub.Estop', ESTOP_SCHEMA);
  }

  data(channelId: number, f: DataFrame): void {
    const id = this.channelIds.get(channelId);
    const info = this.catalog.byId(channelId);
    if (id === undefined || info === undefined) return;
    const local = this.now();
    if (f.t - local > this.offsetMs) this.offsetMs = f.t - local;
    if (this.pending.length > 0) this.flushPending();
    this.lastHubMs = Math.max(this.lastHubMs, f.t);
    this.add(id, topicOf(info), f.t, f.seq, dataMessage(info, f));
  }

  grants(subs: ReadonlyMap<number, SubGrant>, pubs: ReadonlyMap<number, PubGrant>): void {
    this.control(this.grantsId, GRANTS_TOPIC, grantsMessage(this.catalog, subs, pubs));
  }

  nack(n: NackFrame): void {
    const m: Record<string, unknown> = { code: n.code, name: nackName(n.code) ?? 'UNKNOWN' };
    if (n.channelId !== undefined) {
      m['channelId'] = n.channelId;
      const c = this.catalog.byId(n.channelId);
      if (c) m['channel'] = c.name;
    }
    if (n.frameType !== undefined) m['frameType'] = n.frameType;
    if (n.requestId !== undefined) m['requestId'] = n.requestId;
    if (n.retryAfterMs !== undefined) m['retryAfterMs'] = n.retryAfterMs;
    this.control(this.nacksId, NACKS_TOPIC, m);
  }

  estop(e: EstopFrame): void {
    this.control(this.estopId, ESTOP_TOPIC, estopMessage(e));
  }

  /** Waits for every queued write, writes the summary and closes the file. */
  async finish(): Promise<void> {
    if (this.pending.length > 0) {
      // No DATA ever came: the control messages keep their order on a clock that starts at 0.
      if (this.offsetMs === -Infinity) this.offsetMs = -Math.min(...this.pending.map((p) => p.localMs));
      this.flushPending();
    }
    this.tail = this.tail.then(() => this.writer.end());
    await this.tail;
    await this.sink.close();
    if (this.failure !== null) throw this.failure;
  }

  private control(topicId: number, topic: string, msg: unknown): void {
    const localMs = this.now();
    if (this.offsetMs === -Infinity) {
      this.pending.push({ topicId, topic, localMs, msg });
      return;
    }
    // Never before the newest sample already logged from this moment's past.
    this.add(topicId, topic, Math.max(0, localMs + this.offsetMs), undefined, msg);
  }

  private flushPending(): void {
    const p = this.pending;
    this.pending = [];
    for (const c of p) this.add(c.topicId, c.topic, Math.max(0, c.localMs + this.offsetMs), undefined, c.msg);
  }

  private add(channelId: number, topic: string, hubMs: number, seq: number | undefined, msg: unknown): void {
    const s = seq ?? this.seqs.get(channelId) ?? 0;
    this.seqs.set(channelId, s + 1);
    const time = BigInt(Math.round(hubMs * 1000)) * NS_PER_US;
    const data = this.json(msg);
    this.counts.set(topic, (this.counts.get(topic) ?? 0) + 1);
    this.tail = this.tail.then(
      () => this.writer.addMessage({ channelId, sequence: s >>> 0, logTime: time, publishTime: time, data }),
    ).catch((e: unknown) => {
      if (this.failure === null) this.failure = e;
    });
  }

  private json(x: unknown): Uint8Array {
    return this.enc.encode(JSON.stringify(x));
  }
}

/** A file opened for @mcap/core's indexed reader. */
export class FileSource {
  private constructor(
    private readonly fh: FileHandle,
    private readonly bytes: bigint,
  ) {}

  static async open(path: string): Promise<FileSource> {
    const fh = await openFile(path, 'r');
    const st = await fh.stat();
    return new FileSource(fh, BigInt(st.size));
  }

  size(): Promise<bigint> {
    return Promise.resolve(this.bytes);
  }

  async read(offset: bigint, size: bigint): Promise<Uint8Array> {
    const out = new Uint8Array(Number(size));
    let done = 0;
    while (done < out.length) {
      const { bytesRead } = await this.fh.read(out, done, out.length - done, Number(offset) + done);
      if (bytesRead === 0) throw new Error(`the file ends at ${Number(offset) + done} bytes`);
      done += bytesRead;
    }
    return out;
  }

  close(): Promise<void> {
    return this.fh.close();
  }
}

/** One message of a recording: its topic, hub time (ms) and decoded JSON. */
export interface RecordedMessage {
  readonly topic: string;
  readonly timeMs: number;
  readonly channelId: number | undefined;
  readonly message: Record<string, unknown>;
}

export interface Recording {
  readonly metadata: ReadonlyMap<string, string>;
  /** Every message in log-time order. */
  readonly messages: readonly RecordedMessage[];
}

/** Reads a whole recording with @mcap/core's indexed reader. */
export async function readRecording(path: string): Promise<Recording> {
  const src = await FileSource.open(path);
  try {
    const reader = await McapIndexedReader.Initialize({ readable: src });
    let metadata: ReadonlyMap<string, string> = new Map();
    for await (const m of reader.readMetadata({ name: RECORDING_METADATA })) metadata = m.metadata;
    const dec = new TextDecoder();
    const messages: RecordedMessage[] = [];
    for await (const m of reader.readMessages()) {
      const ch = reader.channelsById.get(m.channelId);
      if (ch === undefined) continue;
      const idText = ch.metadata.get('channel_id');
      messages.push({
        topic: ch.topic,
        timeMs: Number(m.logTime / 1000n) / 1000,
        channelId: idText === undefined ? undefined : Number(idText),
        message: JSON.parse(dec.decode(m.data)) as Record<string, unknown>,
      });
    }
    return { metadata, messages };
  } finally {
    await src.close();
  }
}
