// Every number the protocol pins in §10, and the defaults the design brief fixes where the
// protocol is silent, each held by value in test/core/constants.test.ts. Each is defined once:
// here, or in catalog/schema.ts (re-exported below) where the catalog needs it too.
// A `const` number declaration already has its literal type (e.g. `2000`), the same type
// `as const` would give it.

// §10.1: subscription priority codes (background 0, normal 1, elevated 2, critical 3; critical is
// the never-shed set) and their names, index = code. The catalog owns them; named here too so
// that every §10 number can be found in one place.
export { Priority as PRIORITY, PRIORITY_NAMES } from '../catalog/schema.js';
export type { PriorityCode, PriorityName } from '../catalog/schema.js';

// §10.2: wire keys of a grant and of the WELCOME grant batch.
export const KEY_PRIORITY = 13;
export const KEY_GRANTED_RATE_HZ = 14;
export const KEY_SUB_GRANTS = 35;
export const KEY_PUB_GRANTS = 36;
export const KEY_BURST = 42;

// §10.3: per-subscriber congestion level handed to the shedding table; anything ≥ 2 is severe.
export const LEVEL_CLEAR = 0;
export const LEVEL_CONGESTED = 1;
export const LEVEL_SEVERE = 2;

// §10.3: congested when the signal stays above these over CONGESTION_WINDOW_MS.
export const CONGESTED_WATERMARK = 0.5;
export const CONGESTED_LOSS = 0.1;
export const CONGESTION_WINDOW_MS = 1000;

// §10.3: recovered only when the signal stays below these for RECOVERY_WINDOW_MS.
export const RECOVERED_WATERMARK = 0.2;
export const RECOVERED_LOSS = 0.02;
export const RECOVERY_WINDOW_MS = 5000;

// §10.3: congestion sustained longer than this re-grants downward (§10.2).
export const REGRANT_AFTER_CONGESTED_MS = 5000;

// §10.4: a never-shed queue that cannot drain this long parks the session (STALE), not kills it.
export const NEVER_SHED_STALL_EVICTION_MS = 2000;

// §10.5: NACK RATE_LIMITED for STREAM-ingress overage is back-pressure, throttled per session.
export const STREAM_INGRESS_OVERAGE_NACK_PER_S = 5;

// §10.5: a publication's burst is clamped into [granted_rate, granted_rate × MAX_BURST_MULTIPLE]
// (4). The catalog validates max_burst against it, so it is defined there.
export { MAX_BURST_MULTIPLE } from '../catalog/schema.js';

// §10.5: one STREAM bundle batches at most this many samples.
export const MAX_BUNDLE_SAMPLES = 32;

// §6: session slots; a full hub reclaims the oldest STALE session.
export const DEFAULT_SLOTS = 8;

// §6.6: a STALE session keeps its grants this long, then closes.
export const STALE_TTL_MS = 30000;

// §11.2: the control-owner must be heard from within this, or the hub latches ESTOP.
export const DEADMAN_MS = 500;
// §11.2: while latched, further new assertions are announced at most once in this period: the
// first ESTOP goes out at once, a flood of distinct-sequence ones cannot fill other sessions' queues.
export const ESTOP_REANNOUNCE_MS = 100;

// §9.3: per-session intent token bucket: refill rate and depth.
export const INTENT_RATE_PER_S = 20;
export const INTENT_BUCKET_DEPTH = 20;

// §12: a session sending more malformed frames than this in one second is closed.
export const MALFORMED_CLOSE_PER_S = 10;

// §6.1: a transport that has not completed HELLO within this is closed by the hub, so that a
// connection that never speaks cannot hold a listener's place (the device's TCP listener has one).
export const HANDSHAKE_TIMEOUT_MS = 3000;

// §6.1 / §12.5: what a transport may send before HELLO, bytes: a bucket this deep, refilled at
// this rate. A transport that overdraws it is answered INGRESS_BUDGET and closed. Frames before
// HELLO are counted in the hub's ingress window but never refused by it, so that a flood before
// HELLO cannot starve another client's HELLO or resume.
export const PRE_SESSION_BYTES_DEPTH = 4096;
export const PRE_SESSION_BYTES_PER_S = 2048;

// §6.5: an ACTIVE session whose client has sent nothing for this long becomes STALE (its transport
// is closed), so that slot pressure can reclaim it. Five of the client library's PING periods
// (client/core.ts PING_INTERVAL_MS, 1000 ms).
export const LIVENESS_TIMEOUT_MS = 5000;
