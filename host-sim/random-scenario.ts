// A seeded random scenario for the soak (issue 7 item 2): one integer gives one valid scenario
// (checked by validateScenario) mixing bindings, clients and roles, the control hand-overs that
// make the hub work (take control, drive, plan, ESTOP and clear), and faults drawn from the same
// seed: loss up to 50 %, stalls, partitions, disconnects (reset and silent), reconnects across
// bindings, join storms, floods and ESTOP presses. Runs are short (6–10 s of virtual time, at
// most eight clients) so that a hundred of them fit in npm test.
//
// The generator draws from its own PRNG (the kernel's xoshiro128**, seeded with the seed); the
// run draws from the simulation's, seeded with the same integer, so the scenario file and the
// seed replay the run exactly.

import type { CatalogIndex } from '../catalog/index.js';
import { Prng } from './kernel.js';
import { validateScenario, type RoleName, type Scenario } from './scenario.js';

/** Virtual time of one soak run, ms: the bounds the generator draws from. */
export const SOAK_DURATION_MS = Object.freeze({ min: 6000, max: 10000 });
/** Largest loss rate a fault sets (issue 7: up to 50 %). */
export const MAX_LOSS = 0.5;

type Json = Record<string, unknown>;

class Draw {
  private readonly rng: Prng;
  constructor(seed: number) {
    this.rng = new Prng(seed);
  }
  /** Integer in [lo, hi]. */
  int(lo: number, hi: number): number {
    return lo + this.rng.int(hi - lo + 1);
  }
  /** Uniform in [lo, hi), rounded to `step`. */
  num(lo: number, hi: number, step = 1): number {
    return Math.round(this.rng.range(lo, hi) / step) * step;
  }
  chance(p: number): boolean {
    return this.rng.chance(p);
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.rng.int(xs.length)] as T;
  }
}

/** The link profiles a scenario may draw: names are the binding's, parameters drawn per seed. */
function drawLinks(d: Draw): Record<string, Json> {
  const links: Record<string, Json> = {};
  const bindings = ['tcp', 'ws', 'ble', 'espnow'] as const;
  // At least two bindings, so that a reconnect can cross from one to another.
  const chosen = bindings.filter(() => d.chance(0.7));
  while (chosen.length < 2) {
    const b = d.pick(bindings);
    if (!chosen.includes(b)) chosen.push(b);
  }
  for (const b of chosen) {
    if (b === 'tcp' || b === 'ws') {
      const thin = d.chance(0.35);
      const p: Json = {
        binding: b,
        bandwidthKbps: thin ? d.pick([64, 128, 256]) : d.pick([1000, 4000, 8000]),
        latencyMs: d.int(1, 12),
        jitterMs: d.int(0, 4),
        queueBytes: d.pick([4612, 6144, 16384]),
      };
      if (thin) p['upBandwidthKbps'] = 256;
      if (d.chance(0.1)) p['readerKbps'] = d.pick([16, 32, 64]);
      links[b === 'tcp' ? 'wifi' : 'ws'] = p;
    } else if (b === 'ble') {
      links['ble'] = {
        binding: 'ble',
        connIntervalMs: d.pick([7.5, 15, 30, 45, 50]),
        attMtu: d.pick([64, 185, 247]),
        perEvent: d.int(2, 6),
        queueNotifications: d.pick([8, 16, 32]),
      };
    } else {
      links['air'] = { binding: 'espnow', lossRate: d.pick([0, 0, 0.02, 0.1]), retries: d.int(1, 5) };
    }
  }
  return links;
}

const ROLE_WEIGHTS: readonly RoleName[] = ['console', 'console', 'joystick', 'planner', 'scope', 'logger', 'viewer', 'viewer', 'flooder'];

/**
 * The scenario of `seed` as a plain JSON document (what a scenario file holds). Deterministic:
 * the same seed gives the same document.
 */
export function randomScenarioDoc(seed: number): Json {
  const d = new Draw(seed);
  const duration = d.int(SOAK_DURATION_MS.min / 100, SOAK_DURATION_MS.max / 100) * 100;
  const links = drawLinks(d);
  const linkNames = Object.keys(links);
  const slots = d.int(4, 10);
  const hub: Json = {
    slots,
    // Short TTLs so that expiry happens within a run; long ones so that reclaim is the way out.
    staleTtlMs: d.pick([1500, 3000, 5000, 30000]),
  };
  if (d.chance(0.3)) {
    // 1024 drawn on an odd seed stands for the device's 768 (not another draw: a seed's scenario
    // stays what it was otherwise).
    const bytes = d.pick([1024, 2048, 4096]);
    hub['neverShedBytes'] = bytes === 1024 && seed % 2 === 1 ? 768 : bytes;
  }
  if (d.chance(0.2)) hub['capacityHz'] = d.pick([400, 1000]);
  const credentials = { 'operator-key': 'operator', 'maint-key': 'maintainer', 'guest-key': 'observer' };

  const clients: Json[] = [];
  const nClients = d.int(2, Math.min(8, slots + 1));
  const names: string[] = [];
  const byRole = new Map<RoleName, string[]>();
  for (let i = 0; i < nClients; i++) {
    const role = i === 0 ? 'console' : d.pick(ROLE_WEIGHTS);
    const name = `${role}${i}`;
    names.push(name);
    const list = byRole.get(role) ?? [];
    list.push(name);
    byRole.set(role, list);
    const operatorRole = role === 'console' || role === 'joystick' || role === 'planner';
    const c: Json = {
      name,
      role,
      link: d.pick(linkNames),
      credential: operatorRole ? (d.chance(0.85) ? 'operator-key' : 'maint-key') : d.pick([null, 'guest-key', 'operator-key']),
      startMs: d.int(0, 1500),
    };
    if (i > 0 && d.chance(0.15)) c['stopMs'] = (c['startMs'] as number) + d.int(1000, duration - 1600);
    if (d.chance(0.1)) c['reconnect'] = false;
    clients.push(c);
  }

  const events: Json[] = [];
  const at = (lo: number, hi: number): number => d.int(Math.min(lo, duration), Math.min(hi, duration));
  // Control: someone drives or plans, ESTOPs come from the button and from clients, an owner clears.
  const drivers = [...(byRole.get('joystick') ?? []), ...(byRole.get('planner') ?? []), ...(byRole.get('console') ?? [])];
  let t = at(1500, 2500);
  for (const who of drivers.slice(0, 3)) {
    if (t >= duration - 500) break;
    events.push({ atMs: t, type: 'take-control', client: who, retryForMs: 2000 });
    events.push({ atMs: Math.min(duration, t + 200), type: 'intent', client: who, channel: 'arm' });
    const span = d.int(1000, 3000);
    if (who.startsWith('joystick')) events.push({ atMs: Math.min(duration, t + 300), type: 'cmd-vel', client: who, durationMs: span, rateHz: d.pick([20, 50]) });
    else if (who.startsWith('planner')) {
      events.push({ atMs: Math.min(duration, t + 300), type: 'trajectory', client: who, durationMs: span, meanPerS: d.pick([3, 8]), peakEveryMs: d.pick([0, 1500]), peakCount: 25 });
    }
    t = Math.min(duration, t + span + 400);
    events.push({ atMs: t, type: 'release-control', client: who });
    t += 200;
  }
  const nEstops = d.int(0, 2);
  for (let i = 0; i < nEstops; i++) {
    const when = at(1000, duration - 1000);
    if (d.chance(0.5)) {
      events.push({ atMs: when, type: 'button', held: true });
      events.push({ atMs: Math.min(duration, when + d.int(100, 800)), type: 'button', held: false });
    } else events.push({ atMs: when, type: 'estop', client: d.pick(names) });
    const owner = d.pick(drivers.length > 0 ? drivers : names);
    events.push({ atMs: Math.min(duration, when + 1000), type: 'take-control', client: owner, retryForMs: 1000 });
    events.push({ atMs: Math.min(duration, when + 1300), type: 'estop-clear', client: owner });
    // §11.2: a clear leaves the hub disarmed; the owner arms before anyone drives again.
    events.push({ atMs: Math.min(duration, when + 1500), type: 'intent', client: owner, channel: 'arm' });
  }

  // Faults.
  const nFaults = d.int(2, 8);
  let storms = 0;
  const target = (): Json => (d.chance(0.6) ? { client: d.pick(names) } : { link: d.pick(linkNames) });
  for (let i = 0; i < nFaults; i++) {
    const when = at(500, duration - 300);
    switch (d.pick(['loss', 'loss', 'stall', 'partition', 'disconnect', 'reconnect', 'reconnect', 'join-storm', 'flood', 'subscribe'] as const)) {
      case 'loss': {
        const tg = target();
        events.push({ atMs: when, type: 'loss', ...tg, rate: d.num(0.05, MAX_LOSS, 0.05) });
        if (d.chance(0.7)) events.push({ atMs: at(when + 500, duration), type: 'loss', ...tg, rate: 0 });
        break;
      }
      case 'stall':
        events.push({ atMs: when, type: 'stall', ...target(), durationMs: d.int(100, 3000), direction: d.pick(['both', 'down', 'up']) });
        break;
      case 'partition':
        events.push({ atMs: when, type: 'partition', ...target(), durationMs: d.int(100, 4000) });
        break;
      case 'disconnect':
        events.push({ atMs: when, type: 'disconnect', client: d.pick(names), mode: d.pick(['reset', 'silent']) });
        break;
      case 'reconnect':
        events.push({ atMs: when, type: 'reconnect', client: d.pick(names), link: d.pick(linkNames), mode: d.pick(['reset', 'silent']) });
        break;
      case 'join-storm':
        if (storms++ >= 2) break;
        events.push({
          atMs: when,
          type: 'join-storm',
          count: d.int(2, 8),
          link: d.pick(linkNames),
          credential: d.pick([null, 'guest-key']),
          spreadMs: d.pick([0, 20, 100]),
          durationMs: d.chance(0.5) ? null : d.int(500, 3000),
        });
        break;
      case 'flood':
        events.push({
          atMs: when,
          type: 'flood',
          client: d.pick(names),
          kind: d.pick(['intents', 'bundles', 'malformed']),
          ratePerS: d.pick([20, 100, 300]),
          durationMs: d.int(300, 2000),
        });
        break;
      case 'subscribe':
        events.push({ atMs: when, type: 'subscribe', client: d.pick(names), subscriptions: [{ channel: 'imu', rateHz: d.pick([50, 100, 200]), priority: d.pick(['background', 'normal', 'elevated']) }] });
        if (d.chance(0.5)) events.push({ atMs: at(when + 200, duration), type: 'unsubscribe', client: d.pick(names), channels: ['imu'] });
        break;
    }
  }
  return {
    name: `soak-${seed}`,
    description: `A random faulted scenario drawn from seed ${seed} (host-sim/random-scenario.ts).`,
    seed,
    durationMs: duration,
    hub,
    credentials,
    links,
    clients,
    events,
  };
}

/** The scenario of `seed`, validated (a generator bug shows as a ScenarioError naming the path). */
export function randomScenario(seed: number, catalog: CatalogIndex): Scenario {
  return validateScenario(randomScenarioDoc(seed), catalog, `random scenario ${seed}`);
}
