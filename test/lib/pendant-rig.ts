// A pendant (pendant/pendant.ts) against the real hub over the simulated ESP-NOW air: the hub's
// EspNowBinding on its radio, the pendant's client core on an EspNowConnector (client/espnow.ts)
// on its own, paired (encrypted with its LMK), one virtual clock for all. The pins are in-memory
// ECMA-419 classes whose levels the test sets: the test's hands on the buttons and the stick.
// Portable: used by test/core/pendant.test.ts (Node and XS) and the device bench.

import { EspNowBinding, type Radio, type RadioHandler } from '../../bindings/espnow/link.js';
import { ESPNOW_MAX_ENCRYPTED_LIMIT } from '../../bindings/espnow/pairing.js';
import { EspNowConnector } from '../../client/espnow.js';
import type { ClientClock } from '../../client/transport.js';
import type { HubConfig } from '../../hub/hub.js';
import { Mulberry32, SimAir, type SimRadio } from '../../host-sim/links/espnow-air.js';
import type { AnalogPin, DigitalOptions, DigitalPin, PendantIo } from '../../pendant/inputs.js';
import { Pendant } from '../../pendant/pendant.js';
import { resolvePendantConfig, type PendantSettings } from '../../pendant/settings.js';
import { makeHub, type Fixture } from './hub-fixture.js';

export const HUB_MAC = 0x24_6f_28_00_00_01;
export const PENDANT_MAC = 0x24_6f_28_00_00_42;
export const PENDANT_LMK = new Uint8Array(16).fill(0x5a);
const MAX_ADC = 4095;

/** The board's pins: levels the test sets, outputs the pendant writes. */
export class Board {
  readonly levels = new Map<number, number>();
  readonly analog = new Map<number, number>();
  readonly edges = new Map<number, () => void>();
  /** Every level written to each output, and the modes pins were opened with. */
  readonly written = new Map<number, number[]>();
  readonly modes = new Map<number, number>();

  /** Sets an input's level; an input opened with an edge hears it at once (its interrupt). */
  set(pin: number, level: number): void {
    const was = this.levels.get(pin);
    this.levels.set(pin, level);
    const e = this.edges.get(pin);
    if (e && was !== level) e();
  }

  io(): PendantIo {
    const board = this;
    class Digital implements DigitalPin {
      static readonly Input = 0;
      static readonly InputPullUp = 1;
      static readonly InputPullDown = 2;
      static readonly Output = 8;
      static readonly Rising = 1;
      static readonly Falling = 2;
      private readonly pin: number;
      constructor(o: DigitalOptions) {
        this.pin = o.pin;
        board.modes.set(o.pin, o.mode);
        if (o.mode === Digital.Output) board.written.set(o.pin, []);
        else if (!board.levels.has(o.pin)) board.levels.set(o.pin, o.mode === Digital.InputPullDown ? 0 : 1);
        const h = o.onReadable;
        if (h && o.edge) board.edges.set(o.pin, () => h.call(this));
      }
      read(): number {
        return board.levels.get(this.pin) ?? 0;
      }
      write(v: 0 | 1): void {
        const w = board.written.get(this.pin);
        if (w) w.push(v);
      }
      close(): void {}
    }
    class Analog implements AnalogPin {
      readonly resolution: number;
      private readonly pin: number;
      constructor(o: { pin: number; resolution?: number }) {
        this.pin = o.pin;
        this.resolution = o.resolution ?? 12;
      }
      read(): number {
        return board.analog.get(this.pin) ?? (MAX_ADC + 1) / 2;
      }
      close(): void {}
    }
    return { Digital, Analog };
  }
}

interface Timer {
  at: number;
  fn: () => void;
  live: boolean;
}

/** A ClientClock over the air's clock: its timers are the air's events. */
export class AirClock implements ClientClock {
  constructor(private readonly air: SimAir) {}
  now(): number {
    return this.air.now();
  }
  setTimer(ms: number, fn: () => void): unknown {
    const t: Timer = { at: this.air.now() + (ms > 0 ? ms : 0), fn, live: true };
    this.air.schedule(t.at, () => {
      if (t.live) {
        t.live = false;
        t.fn();
      }
    });
    return t;
  }
  clearTimer(h: unknown): void {
    (h as Timer).live = false;
  }
}

/** A MAC in the pendant's table that no radio on the air has. */
const NOWHERE = 0x02_00_00_00_00_99;

/** The pendant's radio with the test's hand on it: `deaf` drops what it receives, `cut` everything. */
export class CutRadio implements Radio {
  deaf = false;
  cut = false;
  private handler: RadioHandler | null = null;
  constructor(readonly inner: SimRadio) {
    inner.addPeer(NOWHERE, null);
    inner.setHandler({
      received: (mac, data, length) => {
        if (!this.deaf && !this.cut && this.handler) this.handler.received(mac, data, length);
      },
      sent: (mac, ok) => {
        if (this.handler) this.handler.sent(mac, ok && !this.cut);
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

export interface PendantRigOptions {
  readonly loss?: number;
  readonly retries?: number;
  readonly seed?: number;
  readonly hub?: Partial<HubConfig>;
  readonly config?: Record<string, unknown>;
}

export interface PendantRig {
  readonly fx: Fixture;
  readonly air: SimAir;
  readonly binding: EspNowBinding;
  readonly board: Board;
  readonly settings: PendantSettings;
  readonly connector: EspNowConnector;
  readonly radio: CutRadio;
  readonly pendant: Pendant;
  /** Runs everything for `ms` in 1 ms steps: the air, the binding and hub every 5 ms, the pendant every period. */
  run(ms: number, until?: () => boolean): Promise<number>;
  press(pin: number): void;
  release(pin: number): void;
  /** The stick at (x, y) in −1..1 of its travel. */
  stick(x: number, y: number): void;
}

async function settle(): Promise<void> {
  for (let i = 0; i < 8; i++) await Promise.resolve();
}

export function pendantRig(o: PendantRigOptions = {}): PendantRig {
  const fx = makeHub({ livenessTimeoutMs: 5000, ...o.hub });
  const air = new SimAir({ prng: new Mulberry32(o.seed ?? 1), loss: o.loss ?? 0, retries: o.retries ?? 5, maxEncrypted: ESPNOW_MAX_ENCRYPTED_LIMIT }, fx.clock.t);
  const hubRadio = air.radio(HUB_MAC);
  hubRadio.hub = true;
  const binding = new EspNowBinding({
    clock: air,
    radio: hubRadio,
    attach: (l) => fx.hub.attach(l),
    peers: [{ mac: PENDANT_MAC, lmk: PENDANT_LMK }],
    strayEstop: (b, s, e) => void fx.hub.estopFrame(b, s, e),
  });
  const settings = resolvePendantConfig({
    hub_mac: '24:6f:28:00:00:01',
    lmk: '5a'.repeat(16),
    pmk: '11'.repeat(16),
    credential: 'operator-token-0001',
    ...o.config,
  });
  const board = new Board();
  // The stop's normally closed contact is closed: the button is up.
  board.levels.set(settings.pins.stop, settings.stopClosedLevel);
  const clock = new AirClock(air);
  const radio = new CutRadio(air.radio(PENDANT_MAC));
  const connector = new EspNowConnector({ radio, hubMac: settings.hubMac, lmk: settings.lmk, clock });
  let seed = 0x9e3779b9;
  const random = (): number => {
    seed = (Math.imul(seed ^ (seed >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
    return seed / 4294967296;
  };
  const pendant = new Pendant({ io: board.io(), settings, clock, transport: connector.factory, catalog: fx.catalog, random, linkLevel: () => connector.level() });
  const half = (MAX_ADC + 1) / 2;
  let nextTick = air.now();
  let nextHub = air.now();
  return {
    fx,
    air,
    binding,
    board,
    settings,
    connector,
    radio,
    pendant,
    async run(ms, until) {
      const start = air.now();
      const end = start + ms;
      while (air.now() < end) {
        const t = air.now() + 1;
        fx.clock.t = t;
        air.advance(t);
        if (t >= nextHub) {
          binding.tick();
          fx.hub.tick();
          nextHub = t + 5;
        }
        if (t >= nextTick) {
          pendant.tick();
          nextTick = t + settings.periodMs;
        }
        await settle();
        if (until && until()) break;
      }
      return air.now() - start;
    },
    press(pin) {
      board.set(pin, settings.buttonLevel);
    },
    release(pin) {
      board.set(pin, 1 - settings.buttonLevel);
    },
    stick(x, y) {
      board.analog.set(settings.pins.joyX, Math.round(half + x * (half - 1)));
      board.analog.set(settings.pins.joyY, Math.round(half + y * (half - 1)));
    },
  };
}
