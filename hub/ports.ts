// Everything the hub core needs from the world comes through these interfaces
// (docs/architecture.md). The device entry, the simulator and the tests each supply their own;
// the core never imports a platform.

/** Monotonic milliseconds. The ESP32 uses its C clock (device/native/clock.c, whole ms since boot), the Linux simulator target Moddable's `time` ticks, the simulator a virtual clock. */
export interface Clock {
  now(): number;
}

/**
 * Randomness for resume tokens. The device uses the radio's RNG; the live simulator (listening
 * ports) node:crypto; only a headless simulation, with no port, the seeded PRNG, for replay.
 */
export interface Random {
  /** Fills `into` with random bytes. */
  fill(into: Uint8Array): void;
}

/**
 * Heap in use, bytes, for admission and the hub ladder (docs/operations.md "Health, admission and overload"). The device reads XS's
 * instrumentation; a build without it returns NaN (or the port is left out), which never
 * refuses a client nor lifts the ladder, and health reads -1.
 */
export type HeapUsed = () => number;

/** Small persistent key/value storage (the device's NVS Preferences: keys ≤ 15 characters). */
export interface Store {
  get(key: string): Uint8Array | undefined;
  set(key: string, value: Uint8Array): void;
  delete(key: string): void;
}

/** Credentials and the tier each grants; compared in constant time by the core. */
export interface CredentialEntry {
  readonly credential: Uint8Array;
  readonly tier: number;
}

/** Structured, bounded logging: a code and up to two numbers. Never payloads, names or credentials. */
export interface Log {
  event(code: string, a?: number, b?: number): void;
}

export const NULL_LOG: Log = Object.freeze({ event(): void {} });

/** A Store in RAM, copying in and out: the simulators', the tests' and the benches'; a device keeps NVS. */
export class MemoryStore implements Store {
  readonly map = new Map<string, Uint8Array>();
  get(key: string): Uint8Array | undefined {
    const v = this.map.get(key);
    return v ? v.slice() : undefined;
  }
  set(key: string, value: Uint8Array): void {
    this.map.set(key, value.slice());
  }
  delete(key: string): void {
    this.map.delete(key);
  }
}

/**
 * Samples a client published, as the robot port receives them: `count` samples of `width`
 * numbers each, sample i being numbers[i × width, (i + 1) × width): [t, v1, …]. A view the core
 * refills for every BUNDLE: valid only during the call.
 */
export interface SampleBlock {
  readonly count: number;
  readonly width: number;
  readonly numbers: Float64Array;
}

/**
 * Writes what follows a DATA frame's route prefix: its seq, the key of t, t, the key of values
 * and the first `count` values, byte for byte as hub/fast-frames.ts writeSampleAfter does, at
 * b[p, …); returns the end. `values` is the ArrayBuffer of a Float64Array, its first value at byte
 * `at` (a multiple of 8: the array's byteOffset); seq and t are whole numbers from 0 to 2^53 − 1. Every push of every stream is written so
 * once, so the device hands the hub one in C (device/sample-native.ts); without one the hub writes
 * in script (HubPorts.sampleWriter).
 */
export interface SampleWriter {
  writeSample(b: Uint8Array, p: number, seq: number, t: number, values: ArrayBufferLike, at: number, count: number): number;
}

/**
 * A push's route in C (device/native/route.h and route.c; the device's is
 * device/route-native.ts): exactly what Egress.publishSample does in script with `route`, `t`,
 * `values` and `count` at `now`, for a push that is not critical and not under the hub ladder's
 * level floor (for one that is it returns -1 and leaves everything as it was, and the hub has the
 * egress route it): the route's sequence, the values it carries, for each subscriber its
 * session's link, the grant gate (or the segments stream's whole-source test), the link's
 * level, a plain send of the push's one DATA frame (written once, as Egress.dataFrame writes it)
 * with the link's `send`, the bookkeeping of a delivery and the counts; each rarer turn it hands
 * to `host.turn`, as the script's loop does. It reads and writes the egress's own fields by
 * name (RouteHost). Returns the deliveries.
 */
export interface SampleRouter {
  route(host: RouteHost, route: object, t: number, values: Float64Array, count: number, now: number): number;
}

/**
 * What a SampleRouter reads, writes and calls (hub/egress.ts Egress): the push's frame once
 * written (else null), the push buffer it is written in (hub/bytes.ts SealedBytes) and the route
 * prefix that buffer holds, whether a push is being routed, the ladder's level floor, the
 * session slots, the subscription table's buffer and layout (SubscriptionTable.layout's
 * buffer), the segments streams' shedding block (shed.ts SEGMENTS_SHED_BASE), the shared
 * encoding's tag flag (Tag.SHARED), the counters it adds to, and the rarer turn.
 */
export interface RouteHost {
  frame: Uint8Array | null;
  prefixed: Uint8Array | null;
  routing: boolean;
  /** The push buffer (hub/bytes.ts SealedBytes: route.c reads its `bytes`, `rab`, `capacity` and `sealedAt` by name). */
  readonly data: object;
  /** The counters it adds to (hub/counters.ts: `rateGated`, `egressDrops`, `delivered`, `rows`). */
  readonly counters: object;
  readonly slots: readonly unknown[];
  readonly levelFloor: number;
  readonly tableBuffer: ArrayBufferLike;
  readonly layout: ArrayBufferLike;
  readonly segmentsBase: number;
  readonly sharedFlag: number;
  turn(route: object, s: object, link: Link, k: number, slot: number, level: number, seq: number, t: number, values: Float64Array, n: number, now: number): boolean;
}

/**
 * Reads the frequent client frames in place (hub/fast-reader.ts FastReader, whose fields and
 * `read` this is): the canonical ACK, PING and BUNDLE, anything else Fast.NONE for the general
 * decoder. Every client frame that is not an ESTOP is read here first, so the device reads them
 * in C (device/fast-native.ts over device/native/fastreader.h); without one the hub reads in
 * script (HubPorts.frameReader, made with the widest sample the catalog's publications take).
 */
export interface FrameReader {
  /** ACK: acked; PING: t0. */
  value: number;
  /** BUNDLE: the channel. */
  channelId: number;
  /** BUNDLE: the samples. */
  readonly block: { count: number; width: number; readonly numbers: Float64Array };
  /** BUNDLE: every number after a sample's time is finite. */
  finite: boolean;
  read(buf: Uint8Array, start: number, end: number): number;
}

/**
 * The robot's real-time core as the hub sees it. Telemetry flows the other way:
 * the host calls `Hub.publishSample` when the robot produces a sample.
 */
export interface RobotPort {
  /** Stop at once (ESTOP latch, deadman). Must not depend on any client observing it. */
  stop(source: number): void;
  /** Resume permission after an ESTOP clear (the robot stays still until commanded). */
  release(): void;
  /** A motion or other publication accepted from a client: up to 32 samples (§10.5). */
  publish(channelId: number, samples: SampleBlock): void;
  /** An intent accepted from a client; returns 0 on success or a NACK code. */
  intent(channelId: number, args: readonly (number | string)[]): number;
}

/** Congestion levels as the shedding table reads them (§10.3). */
export const LinkLevel = Object.freeze({ CLEAR: 0, CONGESTED: 1, SEVERE: 2 } as const);

/**
 * What the core knows of a frame it hands a link, packed into one number (`Link.send`'s `tag`)
 * so that the hot path passes it without allocating; a route computes its tags once, not per
 * delivery. No binding learns any of this by reading the frame (docs/architecture.md "The
 * send contract").
 *
 *   bits 0–4    the frame type (FrameType)
 *   SAMPLE      a non-critical STREAM sample: the binding may drop it unsent once it waited
 *               longer than the link's sample budget (docs/protocol.md §13.6)
 *   VALUE       a non-critical STATE value: the binding may drop it unsent once a newer value of
 *               its channel is queued behind it
 *   CRITICAL    in the never-shed set (§10.1): a datagram binding sends it again when every
 *               MAC retry of its datagram failed
 *   SHARED      the push's one encoding, the same bytes for every subscriber (a DATA frame
 *               without gap, dropped or text): a broadcast segment may carry it once for all
 *   bits 16–23  the channel of a DATA frame (1–255); 0 for any other frame
 */
export const Tag = Object.freeze({
  TYPE: 0x1f,
  SAMPLE: 0x20,
  VALUE: 0x40,
  CRITICAL: 0x80,
  SHARED: 0x100,
  CHANNEL_SHIFT: 16,
} as const);

/** A tag from its parts. */
export function tagOf(frameType: number, flags: number, channelId = 0): number {
  return (frameType & Tag.TYPE) | flags | ((channelId & 0xff) << Tag.CHANNEL_SHIFT);
}

/** The frame type a tag carries. */
export function tagType(tag: number): number {
  return tag & Tag.TYPE;
}

/** The channel a tag carries (0: none). */
export function tagChannel(tag: number): number {
  return (tag >>> Tag.CHANNEL_SHIFT) & 0xff;
}

/** How a binding's clients acknowledge what the hub sends (§5.12). */
export const AckForm = Object.freeze({
  /** ACK key 28: a cumulative count of the frames received on the transport (TCP, WebSocket, BLE). */
  STREAM: 0,
  /** ACK keys 29–30: the datagrams received, as a base and a bitmap (ESP-NOW, §13.3). */
  BITMAP: 1,
} as const);

/**
 * What a link is, as the core acts on it: capabilities, never a binding's name (the name is for
 * health and logs only). Every field is fixed for the link's life.
 */
export interface LinkCaps {
  /** The binding's name in health reports and logs: 'tcp', 'ws', 'ble', 'espnow'. */
  readonly binding: string;
  /** One transmission serves every peer of a segment (§10.6). */
  readonly broadcast: boolean;
  /** Frames travel in datagrams that can be lost whole (ESP-NOW); false: a reliable stream. */
  readonly datagram: boolean;
  /** The largest frame the link carries in one piece, after its own framing (WELCOME key 22). */
  readonly mtu: number;
  /** ESTOP frames the link holds ahead of its queue at once (§10.4, §11.2). */
  readonly writeAheadSlots: number;
  /** How its client acknowledges (AckForm). */
  readonly ackForm: number;
}

/** What a link can tell about itself: delivered throughput and round-trip time (§10.2 "link estimate"). */
export interface LinkEstimate {
  /** Bytes per second the link has recently delivered (or can deliver), 0 if unknown. */
  throughputBps: number;
  /** Smoothed round-trip time in ms, 0 if unknown. */
  rttMs: number;
}

/**
 * A session's subscription grants as the core states them (WELCOME key 35, GRANT): a view the
 * core refills, valid only during the call. Critical subscriptions are listed with priority 3.
 */
export interface GrantSet {
  readonly count: number;
  channelId(i: number): number;
  grantedHz(i: number): number;
  priority(i: number): number;
}

/**
 * One transport to one client, as the core sees it (the binding layer implements it). The core
 * hands it whole frames with what it knows of each (`Tag`); framing, fragmentation, the egress
 * queue and the congestion detector are the binding's.
 *
 * The send contract (docs/architecture.md), the same on every binding: `send` either copies the
 * frame into the link's queue and returns true, or, when there is no room for it right now,
 * queues nothing, counts the refusal in its §10.3 detector (a frame turned away reads as a full
 * queue, §13.5.5) and returns false. It never throws for want of room and never keeps a frame it
 * refused; what happens to a refused frame is the core's decision (a sample is dropped, a
 * never-shed frame waits in the session's never-shed queue).
 */
export interface Link {
  readonly caps: LinkCaps;
  /**
   * The §10.3 congestion level as the binding last judged it (0, 1, ≥ 2): judged once per
   * instant from the link's own events and its tick, never per frame; a change is reported to
   * the core through `LinkSink.levelChanged`.
   */
  readonly level: number;
  /**
   * Queues `frame` (exactly the frame: its length is the frame's) with its `tag`; `seq` is the
   * push's sequence for a DATA frame (one push: one seq across its subscribers), 0 otherwise.
   * See the send contract above.
   */
  send(frame: Uint8Array, tag: number, seq: number): boolean;
  /** The 12-byte ESTOP frame, written ahead of every queue (§10.4, §11.2). */
  writeAhead(frame: Uint8Array): void;
  /** The client's cumulative ACK (key 28, §5.12), as the core decoded it. */
  acked(count: number): void;
  /** The grants the core is about to state to this link's client (WELCOME or GRANT, §10.2). */
  granted(grants: GrantSet): void;
  estimate(): LinkEstimate;
  /** Egress-queue occupancy 0..1, for health and the hub ladder's aggregate egress signal (docs/operations.md "Health, admission and overload"). */
  occupancy(): number;
  /**
   * How long, in ms, the egress queue has held bytes without the transport taking any; 0 while
   * the queue is empty or moving. A client that stopped reading shows here: its backlog is its
   * own (§10.3, §10.4: its table level, then the never-shed stall's park), so the hub ladder
   * leaves such a link out of the aggregate egress occupancy (docs/operations.md, "The hub-wide ladder").
   */
  stalledMs(): number;
  /**
   * Frames handed to the transport and not yet covered by the client's ACK (§5.12 stream form);
   * NaN on a link whose client acknowledges by bitmap (AckForm.BITMAP).
   */
  ackLag(): number;
  /** Datagram loss 0..1 over the binding's recent window (§13.3); NaN on a link that does not measure loss. */
  lossRate(): number;
  /**
   * The highest tier the link's protection allows now (docs/security.md, §6.10): a Tier code,
   * observer (0) to maintainer (2). The core reads it when a HELLO opens or resumes a session on
   * the link, never per frame: a session gets at most this tier, and a session above it cannot
   * resume here. A link whose protection is fixed (a Wi-Fi network's, an ESP-NOW peer's key)
   * returns a constant; one whose protection can rise during its life (BLE pairing that
   * completes after the connection) returns what holds now.
   */
  tierCeiling(): number;
  /** Closes the transport. The core calls it when it parks or closes a session. */
  close(): void;
}

/**
 * What a link may also keep so that the device's route (device/native/route.c) reads its level as
 * a field instead of running the `level` getter, which would say the same: while
 * `detector.judgements === judgementsSeen`, `level` is `lvl` (TcpLink and BleLink keep them;
 * test/core/link-level-fields.test.ts holds both to it). A link without them is read through
 * `level`.
 */
export interface LinkLevelFields {
  readonly detector: { readonly judgements: number };
  readonly judgementsSeen: number;
  readonly lvl: number;
}

/** The core's side of an attached link: the binding feeds it frames and tells it of loss. */
export interface LinkSink {
  /** One whole frame from the client (after the binding's framing/reassembly). */
  frame(bytes: Uint8Array, start: number, end: number): void;
  /** The transport was lost or reported lost (§6.6). */
  lost(): void;
  /** The link's `level` changed. The core only notes it: it never re-enters the link from here. */
  levelChanged(): void;
}
