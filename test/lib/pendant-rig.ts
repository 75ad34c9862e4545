// The pendant (pendant/pendant.ts) against the real hub over the simulated ESP-NOW air
// (pendant/sim-world.ts PendantWorld), stepped one millisecond at a time with the promises of its
// client core settled after each: the test's hands on the buttons and the stick are the world's
// in-memory pins. Portable: used by test/core/pendant.test.ts on Node and on XS.

import { DEFAULT_CATALOG } from '../../catalog/default.js';
import { loadCatalog } from '../../catalog/index.js';
import type { HubConfig } from '../../hub/hub.js';
import { PendantWorld, SIM_PENDANT_MAC } from '../../pendant/sim-world.js';

export const PENDANT_MAC = SIM_PENDANT_MAC;
const CATALOG = loadCatalog(DEFAULT_CATALOG);

export interface PendantRigOptions {
  readonly loss?: number;
  readonly retries?: number;
  readonly seed?: number;
  readonly hub?: Partial<HubConfig>;
  readonly config?: Record<string, unknown>;
}

async function settle(): Promise<void> {
  for (let i = 0; i < 8; i++) await Promise.resolve();
}

export class PendantRig extends PendantWorld {
  constructor(o: PendantRigOptions) {
    super({ catalog: CATALOG, ...o });
  }

  /** Runs for `ms` (or until `until` holds), settling promises after every millisecond; returns the ms run. */
  async runFor(ms: number, until?: () => boolean): Promise<number> {
    const start = this.air.now();
    const end = start + ms;
    while (this.air.now() < end) {
      this.step();
      await settle();
      if (until && until()) break;
    }
    return this.air.now() - start;
  }
}

export function pendantRig(o: PendantRigOptions = {}): PendantRig {
  return new PendantRig(o);
}
