// What the device entry hands the hub besides its bindings: the tick period, for loop-delay
// admission and health, and a heap reading, for admission and the ladder's heap rung
// (docs/operations.md "Health, admission and overload"). Platform-free, so that a Node test can
// drive it with a fake of Moddable's `instrumentation` module.
import type { HeapUsed } from '../hub/ports.js';

/** The part of Moddable's `instrumentation` module the wiring reads. */
export interface InstrumentationApi {
  get(what: number): number | undefined;
  map(name: string): number | undefined;
}

/** The XS counters that together make the heap in use, bytes. */
export const HEAP_COUNTERS = Object.freeze(['XS Chunk Heap Used', 'XS Slot Heap Used'] as const);

export interface DeviceHubWiring {
  /** HubConfig.tickPeriodMs: the period the entry's timer ticks the hub at. */
  readonly tickPeriodMs: number;
  /** HubPorts.heap; undefined where the build knows none of the counters. */
  readonly heap: HeapUsed | undefined;
}

/**
 * The heap port over the instrumentation counters: their sum, or NaN while any of them reads
 * undefined (a release build), which the hub reports as -1 and which never refuses a client
 * nor lifts the ladder.
 */
export function instrumentedHeap(instrumentation: InstrumentationApi | undefined): HeapUsed | undefined {
  if (!instrumentation) return undefined;
  const indexes: number[] = [];
  for (let i = 0; i < HEAP_COUNTERS.length; i++) {
    const index = instrumentation.map(HEAP_COUNTERS[i] as string);
    if (typeof index === 'number') indexes.push(index);
  }
  if (indexes.length === 0) return undefined;
  return (): number => {
    let used = 0;
    for (let i = 0; i < indexes.length; i++) {
      const v = instrumentation.get(indexes[i] as number);
      if (typeof v !== 'number') return NaN;
      used += v;
    }
    return used;
  };
}

export function deviceHubWiring(tickMs: number, instrumentation: InstrumentationApi | undefined): DeviceHubWiring {
  return { tickPeriodMs: tickMs, heap: instrumentedHeap(instrumentation) };
}
