// Link profiles by binding and the factory that opens connections over them.

import { BLE_DEFAULTS, BleConnection, type BleParams } from './ble.js';
import type { Connection, ConnectionEnv } from './connection.js';
import { ESPNOW_DEFAULTS, EspNowConnection, EspNowMedium, type EspNowParams } from './espnow.js';
import { TCP_DEFAULTS, TcpConnection, type TcpParams } from './tcp.js';

export { Connection, Direction, SimTransport, type ConnectionEnv } from './connection.js';
export { LinkTap, SampleLateStats, type EstopRecord, type Violation } from './tap.js';
export { BLE_DEFAULTS, ESPNOW_DEFAULTS, TCP_DEFAULTS };
export type { BleParams, EspNowParams, TcpParams };

export type LinkParams = TcpParams | BleParams | EspNowParams;
export type BindingName = LinkParams['binding'];
export const BINDINGS: readonly BindingName[] = Object.freeze(['tcp', 'ws', 'ble', 'espnow'] as const);

/** Each binding's parameters and their defaults (docs/simulator.md lists them with their meaning). */
export function defaultsFor(binding: BindingName): Readonly<Record<string, number>> {
  if (binding === 'ble') return BLE_DEFAULTS;
  if (binding === 'espnow') return ESPNOW_DEFAULTS;
  return TCP_DEFAULTS;
}

/** Opens connections over named link profiles; the ESP-NOW peers of one profile share its air. */
export class LinkFactory {
  private readonly media = new Map<string, EspNowMedium>();
  private readonly counts = new Map<string, number>();

  constructor(
    private readonly env: ConnectionEnv,
    private readonly profiles: ReadonlyMap<string, LinkParams>,
  ) {
    let i = 0;
    for (const [name, p] of profiles) {
      if (p.binding === 'espnow') this.media.set(name, new EspNowMedium(env.kernel, name, i++, p, env.hub, env.catalog, env.hubClock));
    }
  }

  params(profile: string): LinkParams {
    const p = this.profiles.get(profile);
    if (!p) throw new Error(`no link profile '${profile}'`);
    return p;
  }

  medium(profile: string): EspNowMedium | undefined {
    return this.media.get(profile);
  }

  open(client: string, profile: string): Connection {
    const p = this.params(profile);
    const n = (this.counts.get(client) ?? 0) + 1;
    this.counts.set(client, n);
    const id = `${client}#${n}`;
    switch (p.binding) {
      case 'tcp':
      case 'ws':
        return new TcpConnection(this.env, id, client, profile, p);
      case 'ble':
        return new BleConnection(this.env, id, client, profile, p);
      case 'espnow':
        return new EspNowConnection(this.env, id, client, profile, this.media.get(profile) as EspNowMedium);
    }
  }

  /** Binding upkeep at the hub's tick (the ESP-NOW bindings' silence and windows). */
  upkeep(): void {
    for (const m of this.media.values()) m.upkeep();
  }
}
