// The pendant's device budget (docs/pendant.md "Budget", docs/performance.md "Fits the ESP32"):
// its XS cost per control period and the heap it keeps, against pendant/manifest.json's
// `creation`. The pendant runs its own code (pendant/pendant.ts, the client core, its ESP-NOW
// transport) against the real hub on the simulated air (pendant/sim-world.ts); only the pendant's
// work is metered: its control period, its timers and its radio's events, each wrapped so that
// the engine's computron count (bench/device.bench.ts meter) is read around it. What the pendant
// hands its radio runs inside that count (the simulated radio's bookkeeping, where the device's
// is a native call), so the figure is a little high, never low.
//
// The scenario is the pendant's busiest steady state: the session open, control owned, the hub
// armed, the enable held and the stick off centre, cmd_vel at its grant (20 Hz) with a control
// period of 20 ms, the owner's PINGs every 200 ms and the bitmap ACKs.
//
// On Node meter() reads 0 and this only checks that it runs. scripts/lib/device-budget.mjs drives
// it on XS through the `__P` functions, one evaluation per step so that the client core's
// promises settle between them.

import { DEFAULT_CATALOG } from '../catalog/default.js';
import { loadCatalog } from '../catalog/index.js';
import { PendantWorld } from '../pendant/sim-world.js';
import { meter } from './device.bench.js';

const CATALOG = loadCatalog(DEFAULT_CATALOG);

/** Computrons of the pendant's own work, per control period. */
export class PendantMeter {
  total = 0;
  pieces = 0;
  private depth = 0;
  readonly wrap = (fn: () => void): void => {
    if (this.depth > 0) {
      fn();
      return;
    }
    this.depth++;
    meter();
    try {
      fn();
    } finally {
      this.total += meter();
      this.pieces++;
      this.depth--;
    }
  };
  reset(): void {
    this.total = this.pieces = 0;
  }
}

export interface PendantBench {
  world: PendantWorld;
  meter: PendantMeter;
}

/** The world for the computron count: the pendant's work metered. */
export function pendantBench(): PendantBench {
  const m = new PendantMeter();
  const world = new PendantWorld({ catalog: CATALOG, keepCommands: 1, wrap: m.wrap });
  world.board.lastOnly = true;
  return { world, meter: m };
}

/** The steps to the steady state, each its own evaluation (the promises settle in between). */
export const STEADY_STEPS: readonly ((w: PendantWorld) => void)[] = Object.freeze([
  (w) => {
    w.pendant.start();
  },
  (w) => {
    w.run(1000);
  },
  (w) => {
    w.press(w.settings.pins.take);
    w.run(100);
  },
  (w) => {
    w.release(w.settings.pins.take);
    w.run(400);
  },
  (w) => {
    w.press(w.settings.pins.enable);
    w.run(100);
  },
  (w) => {
    w.stick(0.3, 0.6);
    w.run(1000);
  },
]);

/** Whether the world reached the steady state: owner, armed, commands reaching the robot. */
export function steady(w: PendantWorld): boolean {
  return w.pendant.client.ownsControl && w.hub.armed && !w.hub.latch.latched && w.robot.received > 0;
}

/**
 * Runs `seconds` of the steady state, metered: computrons of the pendant's work per control
 * period (mean), and the commands that reached the robot in that time.
 */
export function measureSteady(b: PendantBench, seconds: number): { perPeriod: number; periods: number; computrons: number; commands: number; pieces: number } {
  const w = b.world;
  if (!steady(w)) throw new Error('bench: the pendant is not driving (owner, armed, commands) before the measurement');
  const before = w.robot.received;
  b.meter.reset();
  const ms = seconds * 1000;
  w.run(ms);
  const periods = Math.round(ms / w.settings.periodMs);
  return { perPeriod: b.meter.total / periods, periods, computrons: b.meter.total, commands: w.robot.received - before, pieces: b.meter.pieces };
}

/** The heap measurement's baseline: the hub's side alone, run for a while. */
export function memoryBaseline(): PendantWorld {
  const w = new PendantWorld({ catalog: CATALOG, keepCommands: 1, defer: true });
  w.board.lastOnly = true;
  w.run(500);
  return w;
}
