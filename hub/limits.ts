// Ingress limits: the §10.5 per-publication token bucket (and the §9 intent limiter,
// which has the same shape), the RATE_LIMITED NACK throttle, the sliding one-second event
// counter behind "persistently malformed ⇒ close" (§12), the §10.5 burst clamp and
// the constant-time credential comparison. Plain numbers and typed arrays sized at
// construction: nothing here allocates per call.

import {
  INTENT_BUCKET_DEPTH,
  INTENT_RATE_PER_S,
  MALFORMED_CLOSE_PER_S,
  MAX_BURST_MULTIPLE,
  STREAM_INGRESS_OVERAGE_NACK_PER_S,
} from './constants.js';

// A unit, not a protocol number: rates are per second, the clock counts milliseconds.
const MS_PER_S = 1000;

/**
 * §10.5 token bucket: refills continuously at `ratePerS` tokens per second up to
 * `capacity`, starts full. A take of n either takes all n tokens or none (a bundle of n
 * samples is accepted whole or dropped whole).
 *
 * Tokens are kept in milli-tokens (tokens × 1000) so that integer rates on an integer
 * millisecond clock refill exactly: 50 ms at 20/s is exactly one token, never 0.99999….
 *
 * While the rate is positive the bucket holds at least one token of depth: a grant below
 * 1 Hz (capacity = granted rate < 1) would otherwise refuse every single sample of a sender
 * that keeps to its rate, and §10.5 wants legal-rate bundles delivered.
 *
 * Intent limiter (§9, §9.3): `new TokenBucket(INTENT_RATE_PER_S, INTENT_BUCKET_DEPTH,
 * now)`, one per session, `take(1, now)` per INTENT; see `intentBucket`. A publication
 * (§10.5): `new TokenBucket(grantedRate, burstFor(grantedRate, wishedBurst), now)`,
 * `take(samplesInBundle, now)`.
 */
export class TokenBucket {
  private rate = 0; // milli-tokens per ms, numerically the same as tokens per second
  private depth = 0; // milli-tokens
  private level = 0; // milli-tokens
  private last = 0; // ms

  constructor(ratePerS: number, capacity: number, now: number) {
    this.last = now;
    this.set(ratePerS, capacity);
    this.level = this.depth;
  }

  /** A re-grant (§10.2): the tokens held so far are kept, clamped to the new capacity. */
  configure(ratePerS: number, capacity: number, now: number): void {
    this.refill(now);
    this.set(ratePerS, capacity);
    if (this.level > this.depth) this.level = this.depth;
  }

  /** Takes n tokens, or none and returns false when that would overdraw. */
  take(n: number, now: number): boolean {
    // refill(), written out: this runs for every bundle a client publishes.
    // (Few locals: on XS each costs at every call about what a few reads of a field do.)
    let level = this.level;
    if (now - this.last > 0) {
      if (level < this.depth) {
        level += (now - this.last) * this.rate;
        if (!(level < this.depth)) level = this.depth;
        this.level = level;
      }
      this.last = now;
    }
    if (!(n >= 0) || n * MS_PER_S > level) return false;
    this.level = level - n * MS_PER_S;
    return true;
  }

  /** Tokens available at `now` (for tests and health). */
  tokens(now: number): number {
    this.refill(now);
    return this.level / MS_PER_S;
  }

  /**
   * Milliseconds until a take of n would succeed (0: now), for a NACK's retry_after_ms
   * (§12). Infinity when it never can: n above the capacity, or a zero rate.
   */
  msUntil(n: number, now: number): number {
    this.refill(now);
    const cost = n * MS_PER_S;
    if (cost <= this.level) return 0;
    if (cost > this.depth || !(this.rate > 0)) return Infinity;
    return Math.ceil((cost - this.level) / this.rate);
  }

  get ratePerS(): number {
    return this.rate;
  }

  get capacity(): number {
    return this.depth / MS_PER_S;
  }

  private set(ratePerS: number, capacity: number): void {
    this.rate = ratePerS > 0 ? ratePerS : 0;
    let cap = capacity > 0 ? capacity : 0;
    if (this.rate > 0 && cap < 1) cap = 1;
    this.depth = cap * MS_PER_S;
  }

  // A clock that steps backwards refills nothing and does not move `last` back, so a later
  // forward step is not credited twice.
  private refill(now: number): void {
    const elapsed = now - this.last;
    if (!(elapsed > 0)) return;
    this.last = now;
    if (this.level >= this.depth) return;
    const level = this.level + elapsed * this.rate;
    this.level = level < this.depth ? level : this.depth;
  }
}

/** §9.3: one per session; take(1, now) per INTENT, NACK RATE_LIMITED on false. */
export function intentBucket(now: number): TokenBucket {
  return new TokenBucket(INTENT_RATE_PER_S, INTENT_BUCKET_DEPTH, now);
}

/**
 * Counts events inside a sliding window: an event at time t is inside at `now` while
 * now − t < windowMs. A fixed ring of `capacity` timestamps holds them, so the count is
 * exact up to `capacity` and saturates there (an event beyond it pushes out the oldest):
 * to detect "more than L in the window", size the ring L + 1.
 *
 * §12: `new WindowCounter(MALFORMED_CLOSE_PER_S + 1)`; close the session when
 * `add(now) > MALFORMED_CLOSE_PER_S`.
 */
export class WindowCounter {
  // The timestamps: times[at, at + capacity), in an array of the counter's own or one it shares
  // with other counters of the same owner (on XS every typed array costs heap slots of its own).
  private readonly times: Float64Array;
  private readonly at: number;
  private head = 0; // index of the oldest timestamp, relative to at
  private n = 0;

  constructor(
    readonly capacity: number,
    readonly windowMs: number = MS_PER_S,
    store?: Float64Array,
    at = 0,
  ) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('WindowCounter capacity must be an integer ≥ 1');
    if (store !== undefined && !(Number.isInteger(at) && at >= 0 && at + capacity <= store.length)) throw new RangeError('WindowCounter: the store is too small');
    this.times = store ?? new Float64Array(capacity);
    this.at = store !== undefined ? at : 0;
  }

  /** Records an event at `now`; returns how many are inside the window, this one included. */
  add(now: number): number {
    this.expire(now);
    const cap = this.capacity;
    if (this.n === cap) {
      this.times[this.at + this.head] = now;
      this.head = this.head + 1 === cap ? 0 : this.head + 1;
    } else {
      const i = this.head + this.n;
      this.times[this.at + (i < cap ? i : i - cap)] = now;
      this.n++;
    }
    return this.n;
  }

  /** How many events are inside the window at `now`. */
  count(now: number): number {
    this.expire(now);
    return this.n;
  }

  reset(): void {
    this.head = 0;
    this.n = 0;
  }

  private expire(now: number): void {
    const cap = this.capacity;
    while (this.n > 0 && now - (this.times[this.at + this.head] as number) >= this.windowMs) {
      this.head = this.head + 1 === cap ? 0 : this.head + 1;
      this.n--;
    }
  }
}

/**
 * §10.5: NACK RATE_LIMITED is back-pressure feedback, not a per-drop echo: at most
 * `perWindow` (default STREAM_INGRESS_OVERAGE_NACK_PER_S = 5) per session in any sliding
 * one-second window. Sliding rather than fixed windows, so that no burst straddling a
 * window edge can send twice the limit. One per session.
 */
export class NackThrottle {
  private readonly sent: WindowCounter;
  private dropped = 0;

  /** `store`, `at`: where its counter keeps its timestamps (WindowCounter). */
  constructor(perWindow: number = STREAM_INGRESS_OVERAGE_NACK_PER_S, windowMs: number = MS_PER_S, store?: Float64Array, at = 0) {
    this.sent = new WindowCounter(perWindow, windowMs, store, at);
  }

  /** True: send this NACK (it is counted). False: suppress it (counted in `suppressed`). */
  allow(now: number): boolean {
    if (this.sent.count(now) < this.sent.capacity) {
      this.sent.add(now);
      return true;
    }
    this.dropped++;
    return false;
  }

  /** NACKs suppressed since construction (or the last `reset`). */
  get suppressed(): number {
    return this.dropped;
  }

  reset(): void {
    this.sent.reset();
    this.dropped = 0;
  }
}

// A Guard's row of its store: the malformed-frame counter (head, count, then its
// MALFORMED_CLOSE_PER_S + 1 timestamps), the NACK throttle's counter (head, count, then its
// STREAM_INGRESS_OVERAGE_NACK_PER_S timestamps), the NACKs it suppressed and when it was made.
const MALFORMED_CAP = MALFORMED_CLOSE_PER_S + 1;
const NACK_CAP = STREAM_INGRESS_OVERAGE_NACK_PER_S;
const NACK_AT = 2 + MALFORMED_CAP;
const SUPPRESSED_AT = NACK_AT + 2 + NACK_CAP;
const MADE_AT = SUPPRESSED_AT + 1;
/** The numbers of one Guard's row. */
export const GUARD_ROW = MADE_AT + 1;

/**
 * What one transport (before its HELLO) or one session carries against misbehaviour (§12), in
 * one object: the malformed-frame counter (a WindowCounter of MALFORMED_CLOSE_PER_S + 1, one
 * second: `add`, `count`), the RATE_LIMITED / INGRESS_BUDGET NACK throttle (a NackThrottle of
 * STREAM_INGRESS_OVERAGE_NACK_PER_S: `allow`, `suppressed`) and, being a TokenBucket, a byte
 * or intent bucket (a transport's pre-HELLO bytes, a session's intents). The counters' state
 * is a row of a store the hub shares between its transports and sessions (on XS every typed
 * array and every object costs heap slots of its own).
 */
export class Guard extends TokenBucket {
  readonly store: Float64Array;
  readonly at: number;

  /** `store`, `at`: the row [at, at + GUARD_ROW), emptied here. */
  constructor(ratePerS: number, capacity: number, now: number, store: Float64Array, at: number) {
    super(ratePerS, capacity, now);
    if (!(Number.isInteger(at) && at >= 0 && at + GUARD_ROW <= store.length)) throw new RangeError('Guard: the store is too small');
    this.store = store;
    this.at = at;
    this.reset();
    store[at + MADE_AT] = now;
  }

  /** When the guard was made (`now` at construction; a transport's attach time). */
  get madeAt(): number {
    return this.store[this.at + MADE_AT] as number;
  }

  /** A malformed frame at `now`: how many are inside the last second, this one included. */
  add(now: number): number {
    return record(this.store, this.at, MALFORMED_CAP, now);
  }

  /** Malformed frames inside the last second at `now`. */
  count(now: number): number {
    return expire(this.store, this.at, MALFORMED_CAP, now);
  }

  /** True: send this NACK (it is counted). False: suppress it (counted in `suppressed`). */
  allow(now: number): boolean {
    const s = this.store;
    const k = this.at + NACK_AT;
    if (expire(s, k, NACK_CAP, now) < NACK_CAP) {
      record(s, k, NACK_CAP, now);
      return true;
    }
    s[this.at + SUPPRESSED_AT] = (s[this.at + SUPPRESSED_AT] as number) + 1;
    return false;
  }

  /** NACKs suppressed since the last `reset`. */
  get suppressed(): number {
    return this.store[this.at + SUPPRESSED_AT] as number;
  }

  /** Both counters restart (the bucket is left as it is). */
  reset(): void {
    this.store.fill(0, this.at, this.at + 2);
    this.store.fill(0, this.at + NACK_AT, this.at + NACK_AT + 2);
    this.store[this.at + SUPPRESSED_AT] = 0;
  }
}

// A one-second sliding-window counter kept in a store (WindowCounter's, step for step): its head
// at k, its count at k + 1, its `cap` timestamps from k + 2. Returns the count at `now`.
function expire(s: Float64Array, k: number, cap: number, now: number): number {
  let head = s[k] as number;
  let n = s[k + 1] as number;
  while (n > 0 && now - (s[k + 2 + head] as number) >= MS_PER_S) {
    head = head + 1 === cap ? 0 : head + 1;
    n--;
  }
  s[k] = head;
  s[k + 1] = n;
  return n;
}

// Records an event at `now` in the counter at k; returns the count, this one included.
function record(s: Float64Array, k: number, cap: number, now: number): number {
  const n = expire(s, k, cap, now);
  const head = s[k] as number;
  if (n === cap) {
    s[k + 2 + head] = now;
    s[k] = head + 1 === cap ? 0 : head + 1;
    return n;
  }
  const i = head + n;
  s[k + 2 + (i < cap ? i : i - cap)] = now;
  s[k + 1] = n + 1;
  return n + 1;
}

/**
 * §10.5: the burst echoed for a publication grant, clamped into
 * [grantedRate, grantedRate × MAX_BURST_MULTIPLE]; no wish (or a NaN one) ⇒ the granted
 * rate, one second of headroom. A granted rate that is not positive grants no burst.
 */
export function burstFor(grantedRate: number, wishedBurst: number | undefined): number {
  if (!(grantedRate > 0)) return 0;
  if (wishedBurst === undefined || wishedBurst !== wishedBurst) return grantedRate;
  const max = grantedRate * MAX_BURST_MULTIPLE;
  return wishedBurst < grantedRate ? grantedRate : wishedBurst > max ? max : wishedBurst;
}

/**
 * Credential comparison whose time does not depend on where (or whether) the bytes differ:
 * every byte position up to the longer length is read and folded into one accumulator, with
 * no early exit. Different lengths give false, after that same amount of work; the lengths
 * themselves are not hidden (a credential's length is not the secret, its bytes are).
 */
export function constantTimeEqual(a: Uint8Array, b: Uint8Array): boolean {
  const la = a.length;
  const lb = b.length;
  const n = la > lb ? la : lb;
  let diff = la ^ lb;
  for (let i = 0; i < n; i++) {
    const x = i < la ? (a[i] as number) : 0;
    const y = i < lb ? (b[i] as number) : 0;
    diff |= x ^ y;
  }
  return diff === 0;
}
