// The hub's counters (docs/operations.md "Health, admission and overload"): what its pushes
// became by §10.4 table row (sent, decimated, conflated, dropped), the drops at the links, the
// NACKs sent by code, parks, resumes, ESTOPs, reclaims, never-shed overflows and GRANTs
// announced. Each is counted where it happens (the egress layer holds the one object; sessions,
// safety and the plan count theirs in it); the health report reads them as HealthCounterView
// (health.ts) and the simulator as they are. Numbers only: no names, no payloads.

/** Counters the health report and the simulator read (free of names and payloads). */
export class HubCounters {
  /** Pushes by shedding-table row, index 1..15 (§10.4). */
  readonly rows: Float64Array;
  /** Pushes the table sent but the link could not take (dropped at once, never held). */
  egressDrops = 0;
  /** Pushes held back by the granted rate (not shedding: the grant itself). */
  rateGated = 0;
  /** Pushes a decimating row dropped (counted in `rows` too). */
  decimated = 0;
  /** STATE pushes a conflating row dropped as unchanged (counted in `rows` too). */
  conflated = 0;
  /** Pushes a dropping row discarded, whole-source drops included (counted in `rows` too). */
  shedDrops = 0;
  /** Deliveries made (frames handed to links, DATA only). */
  delivered = 0;
  /** NACKs sent, by code. */
  readonly nacks: Float64Array;
  parks = 0;
  resumes = 0;
  estops = 0;
  reclaims = 0;
  neverShedOverflows = 0;
  grantsAnnounced = 0;
  /** Sessions opened at their link's tier ceiling, below the tier their credential (or the anonymous tier) gives (§6.10). */
  tierCapped = 0;
  /** EVENTs the robot published whose frame would exceed the hub's `maxFrameBytes`: refused, never sent. */
  eventsTooLarge = 0;

  constructor() {
    // Both arrays in one buffer (on XS a buffer costs heap slots of its own).
    const buffer = new ArrayBuffer((16 + 32) * 8);
    this.rows = new Float64Array(buffer, 0, 16);
    this.nacks = new Float64Array(buffer, 16 * 8, 32);
  }
}
