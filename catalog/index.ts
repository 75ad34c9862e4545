// The catalog as the hub reads it on the hot path: one frozen ChannelInfo per channel with every
// catalog word already turned into its numeric code, found by channel id through a dense table.
// Built once at load; nothing here allocates per lookup.

import { canonicalCatalogJson, fnv1a64Utf8, hashHex } from './hash.js';
import {
  ChannelClass,
  Direction,
  MAX_CHANNEL_ID,
  Priority,
  StreamKind,
  Tier,
} from './schema.js';
import type {
  Catalog,
  ChannelClassCode,
  ChannelDef,
  DirectionCode,
  PriorityCode,
  StreamKindCode,
  TierCode,
} from './schema.js';
import { formatCatalogErrors, validateCatalog } from './validate.js';

export interface ChannelInfo {
  readonly id: number;
  readonly name: string;
  readonly cls: ChannelClassCode;
  // StreamKind code; -1 when the channel is not a STREAM.
  readonly kind: StreamKindCode | -1;
  // The default subscription priority (§10.1 code).
  readonly priority: PriorityCode;
  // §10.1 never-shed set.
  readonly critical: boolean;
  readonly subscribeTier: TierCode;
  // Tier code; -1 on telemetry channels, which nobody publishes.
  readonly publishTier: TierCode | -1;
  readonly motion: boolean;
  readonly direction: DirectionCode;
  readonly maxRateHz: number;
  // §9.4 queue depth on EVENT channels; 0 elsewhere.
  readonly queueDepth: number;
  // §10.5 catalog ceiling on a granted burst; 0 when the catalog sets none.
  readonly maxBurst: number;
  readonly fieldCount: number;
  readonly def: ChannelDef;
}

function channelInfo(def: ChannelDef): ChannelInfo {
  return Object.freeze({
    id: def.id,
    name: def.name,
    cls: ChannelClass[def.class],
    kind: def.stream_kind === undefined ? -1 : StreamKind[def.stream_kind],
    priority: Priority[def.priority],
    critical: def.critical,
    subscribeTier: Tier[def.subscribe_tier],
    publishTier: def.publish_tier === undefined ? -1 : Tier[def.publish_tier],
    motion: def.motion === true,
    direction: Direction[def.direction],
    maxRateHz: def.max_rate_hz,
    queueDepth: def.queue_depth ?? 0,
    maxBurst: def.max_burst ?? 0,
    fieldCount: def.fields.length,
    def,
  });
}

export class CatalogIndex {
  readonly catalog: Catalog;
  // In id order.
  readonly channels: readonly ChannelInfo[];
  // The CATALOG frame's text, and the hash of its UTF-8 bytes that WELCOME carries.
  readonly canonicalJson: string;
  readonly hashHex: string;
  readonly #hash: Uint8Array;
  readonly #byId: readonly (ChannelInfo | undefined)[];
  readonly #byName: ReadonlyMap<string, ChannelInfo>;

  // `catalog` must come from validateCatalog (or loadCatalog); it is not checked again here.
  constructor(catalog: Catalog) {
    this.catalog = catalog;
    const channels = catalog.channels.map(channelInfo).sort((a, b) => a.id - b.id);
    const byId: (ChannelInfo | undefined)[] = [];
    for (let i = 0; i <= MAX_CHANNEL_ID; i++) byId.push(undefined);
    const byName = new Map<string, ChannelInfo>();
    for (const info of channels) {
      byId[info.id] = info;
      byName.set(info.name, info);
    }
    this.channels = Object.freeze(channels);
    this.#byId = Object.freeze(byId);
    this.#byName = byName;
    this.canonicalJson = canonicalCatalogJson(catalog);
    this.#hash = fnv1a64Utf8(this.canonicalJson);
    this.hashHex = hashHex(this.#hash);
    Object.freeze(this);
  }

  get size(): number {
    return this.channels.length;
  }

  // A fresh copy of the 8-byte catalog hash.
  get hash(): Uint8Array {
    return this.#hash.slice();
  }

  // Copies the 8-byte catalog hash into `out` at `offset`, for encoders that own their buffer.
  writeHash(out: Uint8Array, offset: number): void {
    out.set(this.#hash, offset);
  }

  byId(id: number): ChannelInfo | undefined {
    return this.#byId[id];
  }

  byName(name: string): ChannelInfo | undefined {
    return this.#byName.get(name);
  }
}

// Validates and indexes; throws one Error that lists every problem found.
export function loadCatalog(x: unknown): CatalogIndex {
  const r = validateCatalog(x);
  if (!r.ok) {
    const n = r.errors.length;
    throw new Error(`invalid channel catalog (${n} error${n === 1 ? '' : 's'}):\n${formatCatalogErrors(r.errors)}`);
  }
  return new CatalogIndex(r.catalog);
}
