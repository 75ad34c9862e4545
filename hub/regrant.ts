// §10.3 re-grant: one session's link budget (bytes/s), the "link estimate" clamp of §10.2 that
// planGrants (hub/grants.ts) reads. When update() reports a change the hub re-plans and re-states
// the session's grants in an unsolicited GRANT (§10.2).
//
// The controller, rule by rule (each held by a test in test/core/regrant.test.ts):
//
//  1. The budget starts unlimited (Infinity), and reset() (on resume: a new transport, a new
//     link) returns it there.
//  2. Cut. While the level is ≥ 1 continuously for more than REGRANT_AFTER_CONGESTED_MS (strictly
//     more: at exactly 5000 ms nothing happens, at 5001 the cut; §10.3 "sustained > 5 s"), the
//     budget becomes the delivered throughput × REGRANT_HEADROOM, so that the advertised grants
//     match what the link carries. The headroom leaves room for the never-shed traffic and the
//     binding's framing, which the budget does not count. A cut never raises the budget and never
//     takes it below REGRANT_FLOOR_BPS. Each cut (or a cut that found nothing to lower) restarts
//     the timer, so congestion that persists cuts again more than 5 s later.
//  3. Probe. While the level is 0 (the detector has already waited out §10.3's 5 s recovery) and
//     the budget is finite, every PROBE_INTERVAL_MS (at exactly the interval, not after it) the
//     budget is multiplied by PROBE_STEP, counted from the first clear update; once it exceeds
//     the session's demand it returns to unlimited (§10.2 "the probe justified a raise").
//  4. A level ≥ 1 during probing stops the probe and starts the cut timer afresh; a later
//     level 0 restarts the probe interval from that moment.
//  A level that is NaN reads as 0, as the shedding table reads it.

import { MAX_FIELDS } from '../catalog/schema.js';
import { LEVEL_CONGESTED, REGRANT_AFTER_CONGESTED_MS } from './constants.js';
import type { LinkEstimate } from './ports.js';
import { frameBytesFor } from './grants.js';

// Our decisions (the protocol pins only the 5 s, REGRANT_AFTER_CONGESTED_MS).
/** A cut sets the budget to this share of the delivered throughput. */
export const REGRANT_HEADROOM = 0.8;
/** Recovery raises the budget this often ... */
export const PROBE_INTERVAL_MS = 2000;
/** ... by this factor. */
export const PROBE_STEP = 1.25;
/** The lowest rate the floor keeps open for one normal-priority subscription. */
export const REGRANT_FLOOR_HZ = 1;
/** No cut goes below this: one normal subscription of the largest catalog sample at REGRANT_FLOOR_HZ. */
export const REGRANT_FLOOR_BPS = frameBytesFor(MAX_FIELDS) * REGRANT_FLOOR_HZ;

export class LinkBudget {
  private budget = Infinity;
  // When the current run of level ≥ 1 began, or the last cut; NaN while clear.
  private congestedSince = NaN;
  // When the probe last raised the budget (or began); NaN while not probing.
  private probedAt = NaN;
  private readonly floorBps: number;

  constructor(floorBps: number = REGRANT_FLOOR_BPS) {
    this.floorBps = floorBps;
  }

  /** The session's link budget in bytes/s; Infinity is unlimited. */
  get budgetBps(): number {
    return this.budget;
  }

  /**
   * One observation of the session's link at `now` (ms). `demandBps` is what the session's
   * non-critical subscriptions ask of the link (linkDemandBps). Returns true when the budget
   * changed: the hub then re-plans and announces an unsolicited GRANT.
   */
  update(level: number, estimate: Readonly<Pick<LinkEstimate, 'throughputBps'>>, demandBps: number, now: number): boolean {
    if (level >= LEVEL_CONGESTED) {
      this.probedAt = NaN;
      if (Number.isNaN(this.congestedSince)) {
        this.congestedSince = now;
        return false;
      }
      if (!(now - this.congestedSince > REGRANT_AFTER_CONGESTED_MS)) return false;
      this.congestedSince = now;
      const throughput = estimate.throughputBps > 0 ? estimate.throughputBps : 0;
      const target = Math.max(this.floorBps, throughput * REGRANT_HEADROOM);
      if (!(target < this.budget)) return false;
      this.budget = target;
      return true;
    }

    this.congestedSince = NaN;
    if (this.budget === Infinity) return false;
    if (Number.isNaN(this.probedAt)) {
      this.probedAt = now;
      return false;
    }
    if (!(now - this.probedAt >= PROBE_INTERVAL_MS)) return false;
    this.probedAt = now;
    const raised = this.budget * PROBE_STEP;
    if (raised > demandBps) {
      this.budget = Infinity;
      this.probedAt = NaN;
    } else {
      this.budget = raised;
    }
    return true;
  }

  /**
   * When `update` could next change anything while the level stays `level` (ms; Infinity: not
   * until the level changes). The hub calls `update` at that time, and whenever the level
   * changes, instead of at every tick: the controller acts only on those.
   */
  nextAt(level: number): number {
    if (level >= LEVEL_CONGESTED) return Number.isNaN(this.congestedSince) ? -Infinity : this.congestedSince + REGRANT_AFTER_CONGESTED_MS;
    if (this.budget === Infinity) return Infinity;
    return Number.isNaN(this.probedAt) ? -Infinity : this.probedAt + PROBE_INTERVAL_MS;
  }

  /** On resume: a fresh link starts unlimited (rule 1). */
  reset(): void {
    this.budget = Infinity;
    this.congestedSince = NaN;
    this.probedAt = NaN;
  }
}
