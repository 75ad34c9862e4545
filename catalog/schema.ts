// §9.2: the channel catalog as data, and the numeric codes the hot path uses in
// place of its names. Platform-free; imported by hub/, so it imports nothing but itself.

export const ChannelClass = Object.freeze({ STREAM: 0, STATE: 1, EVENT: 2, INTENT: 3 } as const);
export type ChannelClassCode = (typeof ChannelClass)[keyof typeof ChannelClass];
export type ChannelClassName = keyof typeof ChannelClass;

// §10.4 rows 4–6 key on the segments kind; samples may be decimated, segments never.
export const StreamKind = Object.freeze({ samples: 0, segments: 1 } as const);
export type StreamKindCode = (typeof StreamKind)[keyof typeof StreamKind];
export type StreamKindName = keyof typeof StreamKind;

// §10.1 priority classes: background sheds first; critical is the never-shed set.
export const Priority = Object.freeze({ background: 0, normal: 1, elevated: 2, critical: 3 } as const);
export type PriorityCode = (typeof Priority)[keyof typeof Priority];
export type PriorityName = keyof typeof Priority;

// Session tiers, lowest first: a tier may do what every lower tier may.
export const Tier = Object.freeze({ observer: 0, operator: 1, maintainer: 2 } as const);
export type TierCode = (typeof Tier)[keyof typeof Tier];
export type TierName = keyof typeof Tier;

// telemetry: hub→client. publication: client→hub (every INTENT channel is one).
export const Direction = Object.freeze({ telemetry: 0, publication: 1 } as const);
export type DirectionCode = (typeof Direction)[keyof typeof Direction];
export type DirectionName = keyof typeof Direction;

// Index = code, for turning a code back into its catalog word.
export const CHANNEL_CLASS_NAMES = Object.freeze(['STREAM', 'STATE', 'EVENT', 'INTENT'] as const);
export const STREAM_KIND_NAMES = Object.freeze(['samples', 'segments'] as const);
export const PRIORITY_NAMES = Object.freeze(['background', 'normal', 'elevated', 'critical'] as const);
export const TIER_NAMES = Object.freeze(['observer', 'operator', 'maintainer'] as const);
export const DIRECTION_NAMES = Object.freeze(['telemetry', 'publication'] as const);

export const CATALOG_VERSION = 1;

// A channel id is one byte on the wire and the index of a dense 256-entry table; 0 is never a channel.
export const MIN_CHANNEL_ID = 1;
export const MAX_CHANNEL_ID = 255;
export const MAX_CHANNELS = 255;
export const MAX_NAME_LENGTH = 32;
export const MAX_CATALOG_NAME_LENGTH = 64;
export const MAX_UNIT_LENGTH = 16;
export const MAX_FIELDS = 32;
export const MAX_RATE_HZ = 1000;
// §9.4: bounds of the per-(subscriber, EVENT channel) queue.
export const MIN_QUEUE_DEPTH = 1;
export const MAX_QUEUE_DEPTH = 64;
// §10.5: a granted burst lies in [granted_rate, granted_rate × 4], so a catalog max_burst outside
// [max_rate_hz, max_rate_hz × 4] could never be granted as written.
export const MAX_BURST_MULTIPLE = 4;

// The channels §10.1 names as the minimum never-shed set.
export const REQUIRED_CRITICAL_CHANNELS = Object.freeze(['safety', 'safety-events', 'control-owner'] as const);

export interface FieldDef {
  readonly name: string;
  readonly unit: string;
}

// As written in the catalog data: names, not codes.
export interface ChannelDef {
  readonly id: number;
  readonly name: string;
  readonly class: ChannelClassName;
  // Required for STREAM, forbidden otherwise.
  readonly stream_kind?: StreamKindName;
  // INTENT must be 'publication'.
  readonly direction: DirectionName;
  readonly max_rate_hz: number;
  // The default subscription priority.
  readonly priority: PriorityName;
  // §10.1 never-shed set; critical ⇔ priority 'critical'.
  readonly critical: boolean;
  readonly subscribe_tier: TierName;
  // Required on publications, forbidden on telemetry.
  readonly publish_tier?: TierName;
  // Publications that move the robot: need control ownership, refused while ESTOP is latched.
  readonly motion?: boolean;
  // One sample's fields; for segments, the fields of one segment.
  readonly fields: readonly FieldDef[];
  // EVENT only: depth of the bounded per-(subscriber, channel) queue (§9.4).
  readonly queue_depth?: number;
  // Non-INTENT publications: the largest burst the hub will grant (§10.5).
  readonly max_burst?: number;
}

export interface Catalog {
  readonly version: 1;
  readonly name: string;
  readonly channels: readonly ChannelDef[];
}

// Constant data is frozen all the way down so that XS preload can keep it in flash. For
// JSON-shaped (acyclic) data; an already frozen parent is still descended into.
export function deepFreeze<T>(x: T): T {
  if (typeof x === 'object' && x !== null && !ArrayBuffer.isView(x)) {
    for (const k of Object.keys(x)) deepFreeze((x as Record<string, unknown>)[k]);
    Object.freeze(x);
  }
  return x;
}
