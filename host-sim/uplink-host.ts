// The fleet uplink on the host (docs/fleet.md): one Uplink per simulated hub over the `mqtt`
// package, ticked every 10 ms of the wall clock on the hub's own clock, with the machine's wall
// clock for the fleet stop's time. Used by `npm run fleet` and `npm start -- --broker`.

import { randomFillSync } from 'node:crypto';
import type { CatalogIndex } from '../catalog/index.js';
import type { LinkSink, Link, Store } from '../hub/ports.js';
import type { HealthSummary } from '../hub/load.js';
import { UPLINK_DEFAULTS, type UplinkConfig } from '../uplink/config.js';
import { NodeMqtt } from '../uplink/node.js';
import { Uplink, type UplinkHub } from '../uplink/uplink.js';

const UTF8 = new TextEncoder();

/** How often the host ticks an uplink, ms of the wall clock. */
export const UPLINK_TICK_MS = 10;

/** What an uplink on the host needs of the hub it serves (the current one: a dashboard restart makes a new hub). */
export interface HostHub {
  readonly catalog: CatalogIndex;
  readonly hubId: string;
  nowMs(): number;
  attach(link: Link): LinkSink;
  estop(source: number): void;
  healthSummary(out: HealthSummary): HealthSummary;
}

export interface HostUplink {
  readonly uplink: Uplink;
  readonly mqtt: NodeMqtt;
  /** Announces offline and disconnects; resolves once the client has let go. */
  stop(): Promise<void>;
}

/** The config with the command line's overrides. */
export function uplinkConfigOf(base: UplinkConfig | null, overrides: Partial<UplinkConfig>): UplinkConfig {
  const c: Record<string, unknown> = { ...(base ?? UPLINK_DEFAULTS) };
  for (const [k, v] of Object.entries(overrides)) if (v !== undefined) c[k] = v;
  return c as unknown as UplinkConfig;
}

export function startHostUplink(config: UplinkConfig, hub: HostHub, store: Store, log?: (code: string, a?: number, b?: number) => void): HostUplink {
  const mqtt = new NodeMqtt(config.broker);
  const view: UplinkHub = {
    get catalog() {
      return hub.catalog;
    },
    config: { hubId: hub.hubId },
    attach: (link) => hub.attach(link),
    estop: (source) => hub.estop(source),
    healthSummary: (out) => hub.healthSummary(out),
  };
  const uplink = new Uplink(config, {
    hub: view,
    clock: { now: () => hub.nowMs() },
    wallMs: () => Date.now(),
    store,
    mqtt,
    random: { fill: (into) => void randomFillSync(into) },
    ...(log ? { log: { event: log } } : {}),
    utf8: (text) => UTF8.encode(text),
  });
  mqtt.listener = uplink;
  const timer = setInterval(() => uplink.tick(), UPLINK_TICK_MS);
  uplink.tick();
  return {
    uplink,
    mqtt,
    stop: async (): Promise<void> => {
      clearInterval(timer);
      uplink.stop();
      // The client flushes `offline` and DISCONNECT; give it a moment to write them.
      await new Promise((r) => setTimeout(r, 50));
    },
  };
}
