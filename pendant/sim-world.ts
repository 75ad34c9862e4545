// The pendant against a real hub on the simulated ESP-NOW air, in one process on one virtual
// clock: the Hub with its EspNowBinding on the hub's radio, the pendant paired (encrypted with its
// LMK) on its own, the pins in memory (sim-io.ts). What the tests drive (test/lib/pendant-rig.ts),
// what the device budget measures (bench/pendant.bench.ts) and what the pendant's Linux simulator
// target runs with scripted hands (pendant/main-lin.ts). Platform-free; simulation only (the air
// allocates per datagram).

import type { CatalogIndex } from '../catalog/index.js';
import { Tier } from '../catalog/schema.js';
import { EspNowBinding, type Radio, type RadioHandler } from '../bindings/espnow/link.js';
import { ESPNOW_MAX_ENCRYPTED_LIMIT } from '../bindings/espnow/pairing.js';
import { EspNowConnector } from '../client/espnow.js';
import type { ClientClock } from '../client/transport.js';
import { saveCredentials } from '../hub/credentials.js';
import { Hub, type HubConfig } from '../hub/hub.js';
import { MemoryStore, type Clock, type RobotPort, type SampleBlock } from '../hub/ports.js';
import { Mulberry32, SimAir, type SimRadio } from '../host-sim/links/espnow-air.js';
import { Pendant } from './pendant.js';
import { resolvePendantConfig, type PendantSettings } from './settings.js';
import { Board } from './sim-io.js';

export const SIM_HUB_MAC = 0x24_6f_28_00_00_01;
export const SIM_PENDANT_MAC = 0x24_6f_28_00_00_42;
/** The simulated pairing: the pendant's key, and the text its configuration and the hub's carry. */
export const SIM_LMK_HEX = '5a'.repeat(16);
export const SIM_CREDENTIAL = 'operator-token-0001';
const HALF_12 = 2048;

/** The hub's clock: the air's. */
class AirTime implements Clock {
  constructor(private readonly air: SimAir) {}
  now(): number {
    return this.air.now();
  }
}

interface AirTimer {
  at: number;
  fn: () => void;
  live: boolean;
}

/** A ClientClock over the air's clock: its timers are the air's events, run through `wrap`. */
export class AirClock implements ClientClock {
  constructor(
    private readonly air: SimAir,
    private readonly wrap: (fn: () => void) => void,
  ) {}
  now(): number {
    return this.air.now();
  }
  setTimer(ms: number, fn: () => void): unknown {
    const t: AirTimer = { at: this.air.now() + (ms > 0 ? ms : 0), fn, live: true };
    this.air.schedule(t.at, () => {
      if (!t.live) return;
      t.live = false;
      this.wrap(t.fn);
    });
    return t;
  }
  clearTimer(h: unknown): void {
    (h as AirTimer).live = false;
  }
}

/** A MAC in the pendant's table that no radio on the air has. */
const NOWHERE = 0x02_00_00_00_00_99;

/** The pendant's radio with a hand on it: `deaf` drops what it receives, `cut` everything. */
export class CutRadio implements Radio {
  deaf = false;
  cut = false;
  private handler: RadioHandler | null = null;
  constructor(
    readonly inner: SimRadio,
    wrap: (fn: () => void) => void,
  ) {
    inner.addPeer(NOWHERE, null);
    inner.setHandler({
      received: (mac, data, length) => {
        const h = this.handler;
        if (!this.deaf && !this.cut && h) wrap(() => h.received(mac, data, length));
      },
      sent: (mac, ok) => {
        const h = this.handler;
        if (h) wrap(() => h.sent(mac, ok && !this.cut));
      },
    });
  }
  setHandler(h: RadioHandler): void {
    this.handler = h;
  }
  addPeer(mac: number, lmk: Uint8Array | null): number {
    return this.inner.addPeer(mac, lmk);
  }
  removePeer(mac: number): number {
    return this.inner.removePeer(mac);
  }
  send(mac: number, data: Uint8Array, length: number): number {
    // Cut: the datagram goes to a station that is not on the air, and every retry of it fails.
    return this.inner.send(this.cut ? NOWHERE : mac, data, length);
  }
}

/** The robot: its stops, and the cmd_vel samples it was given ([t, v, w], all or the last `keep`). */
export class CommandRobot implements RobotPort {
  readonly stops: number[] = [];
  readonly commands: number[][] = [];
  received = 0;
  constructor(
    private readonly cmdVel: number,
    private readonly keep: number,
  ) {}
  stop(source: number): void {
    this.stops.push(source);
  }
  release(): void {}
  publish(channelId: number, samples: SampleBlock): void {
    if (channelId !== this.cmdVel) return;
    for (let i = 0; i < samples.count; i++) {
      this.received++;
      const at = i * samples.width;
      this.commands.push([samples.numbers[at] as number, samples.numbers[at + 1] as number, samples.numbers[at + 2] as number]);
      if (this.commands.length > this.keep) this.commands.shift();
    }
  }
  intent(): number {
    return 0;
  }
}

function ascii(s: string): Uint8Array {
  const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i) & 0x7f;
  return out;
}

export interface PendantWorldOptions {
  readonly catalog: CatalogIndex;
  readonly loss?: number;
  readonly retries?: number;
  readonly seed?: number;
  readonly start?: number;
  readonly hub?: Partial<HubConfig>;
  /** The pendant's configuration over the simulated pairing's. */
  readonly config?: Readonly<Record<string, unknown>>;
  /** cmd_vel samples the robot keeps (default all). */
  readonly keepCommands?: number;
  /** Runs each piece of the pendant's own work (its period, its timers, its radio events): a meter. */
  readonly wrap?: (fn: () => void) => void;
  /** Builds the hub's side only; `attachPendant` adds the pendant (a heap measurement's baseline). */
  readonly defer?: boolean;
}

export class PendantWorld {
  readonly air: SimAir;
  readonly hub: Hub;
  readonly robot: CommandRobot;
  readonly binding: EspNowBinding;
  readonly board = new Board();
  readonly settings: PendantSettings;
  connector!: EspNowConnector;
  radio!: CutRadio;
  pendant!: Pendant;
  private readonly catalog: CatalogIndex;
  private readonly wrap: (fn: () => void) => void;
  private nextTick: number;
  private nextHub: number;
  private tickFn: (() => void) | null = null;

  constructor(o: PendantWorldOptions) {
    const wrap = o.wrap ?? ((fn: () => void): void => fn());
    this.wrap = wrap;
    this.air = new SimAir({ prng: new Mulberry32(o.seed ?? 1), loss: o.loss ?? 0, retries: o.retries ?? 5, maxEncrypted: ESPNOW_MAX_ENCRYPTED_LIMIT }, o.start ?? 1000);
    const cmd = o.catalog.byName('cmd_vel');
    this.robot = new CommandRobot(cmd ? cmd.id : 0, o.keepCommands ?? Infinity);
    const store = new MemoryStore();
    saveCredentials(store, [{ tier: Tier.operator, credential: ascii(SIM_CREDENTIAL) }]);
    let seed = 7;
    const random = {
      fill(into: Uint8Array): void {
        for (let i = 0; i < into.length; i++) {
          seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
          into[i] = seed >>> 24;
        }
      },
    };
    this.hub = new Hub({ clock: new AirTime(this.air), random, store, robot: this.robot, catalog: o.catalog }, { livenessTimeoutMs: 5000, ...o.hub });
    const hubRadio = this.air.radio(SIM_HUB_MAC);
    hubRadio.hub = true;
    const hub = this.hub;
    const lmk = new Uint8Array(16).fill(0x5a);
    this.binding = new EspNowBinding({
      clock: this.air,
      radio: hubRadio,
      attach: (l) => hub.attach(l),
      peers: [{ mac: SIM_PENDANT_MAC, lmk }],
      strayEstop: (b, s, e) => void hub.estopFrame(b, s, e),
    });
    this.settings = resolvePendantConfig({ hub_mac: '24:6f:28:00:00:01', lmk: SIM_LMK_HEX, pmk: '11'.repeat(16), credential: SIM_CREDENTIAL, ...o.config });
    // The stop's normally closed contact is closed: the button is up.
    this.board.levels.set(this.settings.pins.stop, this.settings.stopClosedLevel);
    this.catalog = o.catalog;
    this.nextTick = this.nextHub = this.air.now();
    if (o.defer !== true) this.attachPendant();
  }

  /** The pendant on its radio, paired, its pins on the board (not started). */
  attachPendant(): void {
    const wrap = this.wrap;
    const clock = new AirClock(this.air, wrap);
    this.radio = new CutRadio(this.air.radio(SIM_PENDANT_MAC), wrap);
    this.connector = new EspNowConnector({ radio: this.radio, hubMac: this.settings.hubMac, lmk: this.settings.lmk, clock });
    let r = 0x9e3779b9;
    const jitter = (): number => {
      r = (Math.imul(r ^ (r >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
      return r / 4294967296;
    };
    const connector = this.connector;
    this.pendant = new Pendant({ io: this.board.io(), settings: this.settings, clock, transport: connector.factory, catalog: this.catalog, random: jitter, linkLevel: () => connector.level() });
    const pendant = this.pendant;
    this.tickFn = () => pendant.tick();
  }

  now(): number {
    return this.air.now();
  }

  /** One millisecond: the air, the binding and the hub every 5 ms, the pendant every control period. */
  step(): void {
    const t = this.air.now() + 1;
    this.air.advance(t);
    if (t >= this.nextHub) {
      this.binding.tick();
      this.hub.tick();
      this.nextHub = t + 5;
    }
    if (t >= this.nextTick && this.tickFn) {
      this.wrap(this.tickFn);
      this.nextTick = t + this.settings.periodMs;
    }
  }

  /** `ms` milliseconds of steps (promises settle only between calls: the caller yields). */
  run(ms: number): void {
    for (let i = 0; i < ms; i++) this.step();
  }

  press(pin: number): void {
    this.board.set(pin, this.settings.buttonLevel);
  }

  release(pin: number): void {
    this.board.set(pin, 1 - this.settings.buttonLevel);
  }

  /** The stop button down (its normally closed contact open) or up. */
  stop(down: boolean): void {
    this.board.set(this.settings.pins.stop, down ? 1 - this.settings.stopClosedLevel : this.settings.stopClosedLevel);
  }

  /** The stick at (x, y) in −1..1 of its travel (a 12-bit ADC). */
  stick(x: number, y: number): void {
    this.board.analog.set(this.settings.pins.joyX, Math.round(HALF_12 + x * (HALF_12 - 1)));
    this.board.analog.set(this.settings.pins.joyY, Math.round(HALF_12 + y * (HALF_12 - 1)));
  }
}
