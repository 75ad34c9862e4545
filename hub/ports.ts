// Everything the hub core needs from the world comes through these interfaces
// (docs/architecture.md). The device entry, the simulator and the tests each supply their own;
// the core never imports a platform.

/** Monotonic milliseconds. The device uses Moddable's `time` ticks; the simulator a virtual clock. */
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

/**
 * The robot's real-time core as the hub sees it. Telemetry flows the other way:
 * the host calls `Hub.publishSample` when the robot produces a sample.
 */
export interface RobotPort {
  /** Stop at once (ESTOP latch, deadman). Must not depend on any client observing it. */
  stop(source: number): void;
  /** Resume permission after an ESTOP clear (the robot stays still until commanded). */
  release(): void;
  /** A motion or other publication accepted from a client: up to 32 samples, each `[t, v1, …]`. */
  publish(channelId: number, samples: readonly (readonly number[])[]): void;
  /** An intent accepted from a client; returns 0 on success or a NACK code. */
  intent(channelId: number, args: readonly (number | string)[]): number;
}

/** Congestion levels as the shedding table reads them (§10.3). */
export const LinkLevel = { CLEAR: 0, CONGESTED: 1, SEVERE: 2 } as const;

/**
 * Link.send's `shed` hint (docs/protocol.md §13.6). VALUE + channel id (1..255) marks a STATE
 * value of that channel: one number, so that the hot path passes it without allocating.
 */
export const SendShed = Object.freeze({ NEVER: 0, SAMPLE: 1, VALUE: 256 } as const);

/** The channel of a VALUE hint, or 0 when `shed` is no VALUE hint. */
export function shedValueChannel(shed: number | undefined): number {
  return shed !== undefined && shed > SendShed.VALUE && shed < SendShed.VALUE + 256 ? shed - SendShed.VALUE : 0;
}

/** What a link can tell about itself: delivered throughput and round-trip time (§10.2 "link estimate"). */
export interface LinkEstimate {
  /** Bytes per second the link has recently delivered (or can deliver), 0 if unknown. */
  throughputBps: number;
  /** Smoothed round-trip time in ms, 0 if unknown. */
  rttMs: number;
}

/**
 * One transport to one client, as the core sees it (the binding layer implements it).
 * The core hands it whole frames; framing, fragmentation and the egress queue are the
 * binding's. `send` copies the bytes: the caller reuses its buffer at once.
 */
export interface Link {
  readonly binding: string;
  /** Largest frame the binding carries in one piece (after its own framing). */
  readonly mtu: number;
  /** One transmission serves every peer (§10.6). */
  readonly broadcast: boolean;
  /** Room for a frame of `length` bytes in the egress queue right now. */
  canSend(length: number): boolean;
  /**
   * Queues a frame; only called after `canSend` said yes. `shed` (SendShed) says what the
   * binding may drop unsent (docs/protocol.md §13.6): a non-critical STREAM sample once it has
   * waited longer than the link's sample budget (§10.4 "a stale motion sample is worse than a
   * missing one"); a non-critical STATE value once a newer value of its channel waits behind it
   * (a depth-1 STATE queue conflates). Anything else, or no `shed`, goes however long it waits.
   */
  send(frame: Uint8Array, length: number, shed?: number): void;
  /** The 12-byte ESTOP frame, written ahead of every queue (§10.4, §11.2). */
  writeAhead(frame: Uint8Array): void;
  /** Current congestion level from the binding's own detector (§10.3): 0, 1, ≥ 2. */
  level(): number;
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
   * Frames the binding dropped unsent since this transport began (`shed`, docs/protocol.md §13.6).
   * The client never receives them, so they are not in its ACK: the hub's ack lag leaves them
   * out. Absent on a binding that never drops what it was handed.
   */
  unsent?(): number;
  /**
   * Datagram loss 0..1 over the binding's recent window, for health (ESP-NOW's bitmap ACKs,
   * §13.3). Absent, or NaN, on a binding that does not measure loss: health then reads -1,
   * never a healthy 0. (Not `loss`: the ESP-NOW link already names its LossDetector so; its
   * `lossRate()` is that detector's ratio().)
   */
  lossRate?(): number;
  /** Closes the transport. The core calls it when it parks or closes a session. */
  close(): void;
}

/** The core's side of an attached link: the binding feeds it frames and tells it of loss. */
export interface LinkSink {
  /** One whole frame from the client (after the binding's framing/reassembly). */
  frame(bytes: Uint8Array, start: number, end: number): void;
  /** The transport was lost or reported lost (§6.6). */
  lost(): void;
}
