// What the hub is built with (docs/architecture.md "Layers"): HubConfig and its defaults (a host
// overrides what it sets: the simulator's scenario `hub` block, docs/simulator.md; the device
// entry's configuration), the ports a host hands the core at construction (clock, randomness,
// store, robot, catalog, log, heap: everything platform-specific arrives through them), and the
// hook an outside observer watches the hub through.

import type { CatalogIndex } from '../catalog/index.js';
import { Tier } from '../catalog/schema.js';
import { DEFAULT_HEAP_LIMIT_BYTES, DEFAULT_TICK_BUDGET_MS } from './admission.js';
import { DEADMAN_MS, DEFAULT_SLOTS, HANDSHAKE_TIMEOUT_MS, LIVENESS_TIMEOUT_MS, STALE_TTL_MS } from './constants.js';
import { DEFAULT_HUB_BYTES_PER_S, DEFAULT_SESSION_BYTES_PER_S } from './governor.js';
import { MAX_FRAME_BYTES, MAX_HUB_FRAME_BYTES } from './frame-types.js';
import type { Clock, FrameReader, HeapUsed, Log, Random, RobotPort, SampleRouter, SampleWriter, Store } from './ports.js';

/** The least `maxFrameBytes`: an ECHO or NACK about the largest client frame, and CATALOG and HEALTH chunks within the largest `mtu`, fit. */
export const MIN_MAX_FRAME_BYTES = MAX_FRAME_BYTES + 256;

export interface HubConfig {
  /** Text the hub names itself with in WELCOME. */
  readonly hubId: string;
  /** Session slots (§6). */
  readonly slots: number;
  readonly staleTtlMs: number;
  readonly deadmanMs: number;
  /** Deliveries per second the hub makes over all non-critical subscriptions (the pie, §10.2). */
  readonly capacityHz: number;
  /** Tier of a client with no or an unknown credential; -1 refuses it with FORBIDDEN. */
  readonly anonymousTier: number;
  /** Bytes of each session's never-shed queue (§10.4). */
  readonly neverShedBytes: number;
  /**
   * The largest frame the hub writes (docs/protocol.md §7: at most MAX_HUB_FRAME_BYTES, the
   * default), which sizes the staging area control frames are written in. A host whose inputs make
   * no larger frame may set less: the device's robot link carries events of at most 255 bytes,
   * so its hub writes nothing near the protocol's 4608 (docs/operations.md "Memory"). At least
   * MIN_MAX_FRAME_BYTES: a frame echoing the largest client frame must fit. An EVENT that would not
   * fit is refused when the robot publishes it (`HubCounters.eventsTooLarge`).
   */
  readonly maxFrameBytes: number;
  /**
   * The period the host calls tick() at, ms: the loop delay (docs/operations.md "Health, admission and overload") is how much later than
   * that a tick begins. 0 (the default) measures no loop delay: a host that ticks irregularly
   * (the tests' virtual clock) would read its gaps as delay.
   */
  readonly tickPeriodMs: number;
  /** Admission and the ladder's tick budget, ms (docs/operations.md "Health, admission and overload"). */
  readonly tickBudgetMs: number;
  /** The soft heap budget admission and the ladder read against HubPorts.heap, bytes. */
  readonly heapLimitBytes: number;
  /** The ingress governor's budgets, bytes per second: one session's, and the whole hub's. */
  readonly sessionIngressBytesPerS: number;
  readonly hubIngressBytesPerS: number;
  /** §6.1: a transport without a session after this long is closed, ms. */
  readonly handshakeTimeoutMs: number;
  /** §6.5: an ACTIVE session not heard from for this long becomes STALE, ms. */
  readonly livenessTimeoutMs: number;
}

export const DEFAULT_HUB_CONFIG: HubConfig = Object.freeze({
  hubId: 'robot-hub',
  slots: DEFAULT_SLOTS,
  staleTtlMs: STALE_TTL_MS,
  deadmanMs: DEADMAN_MS,
  capacityHz: 2000,
  anonymousTier: Tier.observer,
  neverShedBytes: 2048,
  maxFrameBytes: MAX_HUB_FRAME_BYTES,
  tickPeriodMs: 0,
  tickBudgetMs: DEFAULT_TICK_BUDGET_MS,
  heapLimitBytes: DEFAULT_HEAP_LIMIT_BYTES,
  sessionIngressBytesPerS: DEFAULT_SESSION_BYTES_PER_S,
  hubIngressBytesPerS: DEFAULT_HUB_BYTES_PER_S,
  handshakeTimeoutMs: HANDSHAKE_TIMEOUT_MS,
  livenessTimeoutMs: LIVENESS_TIMEOUT_MS,
});

export interface HubPorts {
  readonly clock: Clock;
  readonly random: Random;
  readonly store: Store;
  readonly robot: RobotPort;
  readonly catalog: CatalogIndex;
  readonly log?: Log;
  /** Heap in use, bytes, for admission and the ladder; absent where the platform cannot tell. */
  readonly heap?: HeapUsed;
  /** Writes each push's DATA frame after its prefix (the device's is C); absent: the hub writes it in script. */
  readonly sampleWriter?: SampleWriter;
  /** Routes each push's common case (the device's is C); absent: the hub routes it in script. */
  readonly sampleRouter?: SampleRouter;
  /** Makes the reader of the frequent client frames for samples of at most `keepWidth` numbers (the device's is C); absent: hub/fast-reader.ts, in script. */
  readonly frameReader?: (keepWidth: number) => FrameReader;
}

/**
 * A hook for whoever watches the hub from outside (the simulator's invariant checks): told
 * whenever one of the hub's entry points runs, the only moments its state can change.
 */
export interface HubObserver {
  entered(): void;
}
