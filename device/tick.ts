// The device's tick (device/main.ts, step 7): what the SDK's timer runs every tick_ms, platform-free
// so that the device budget (bench/device.bench.ts) runs this very code and counts it. In order: the
// native stop paths' trips and heartbeat, the hub's tick, then the inputs' and radios' upkeep (the
// ESTOP button's poll, BLE, the ESP-NOW radio's drain as a backstop and its binding, the uplink).
// One object with its parts as fields, its work in methods: on XS a closure keeps an environment
// of its own and costs more heap than a field.

import { EstopSource } from '../hub/estop-frame.js';
import type { Hub } from '../hub/hub.js';
import type { Clock, Log, RobotPort } from '../hub/ports.js';
import type { NativeStopPath, StopPathHub } from './stop-path.js';

/** Something ticked after the hub. */
export interface Ticking {
  tick(): void;
}

/** The ESTOP button as the tick polls it (an ECMA-419 Digital input on the device). */
export interface ButtonInput {
  read(): number;
}

/** What the tick runs besides the hub, each null when the device has none. */
export interface TickParts {
  /** The native stop paths: their trips first, then the heartbeat their guard watches. */
  readonly stopPath: NativeStopPath | null;
  /** The ESTOP button, polled into its sampler (both or neither). */
  readonly button: ButtonInput | null;
  readonly sampler: ButtonSampler | null;
  readonly ble: Ticking | null;
  /** The ESP-NOW radio (drained as a backstop for a wake-up the VM refused) and its binding. */
  readonly radio: { drain(): void } | null;
  readonly espnow: Ticking | null;
  /** The last upkeep: the fleet uplink on the device; the simulated robot and the uplink on the Linux simulator. */
  readonly after: Ticking | null;
}

/**
 * The ESTOP button's level, sampled at its edges and at every tick. A press counts at once; a
 * release only after the input has read released for `debounceMs`, so a bouncing contact cannot
 * latch again and again.
 */
export class ButtonSampler {
  private held = false;
  private releasedSince = -1;

  constructor(
    private readonly hub: { setButton(held: boolean): void },
    private readonly clock: Clock,
    /** The level the input reads while pressed. */
    readonly pressedLevel: number,
    private readonly debounceMs: number,
  ) {}

  sample(level: number): void {
    if (level === this.pressedLevel) {
      this.releasedSince = -1;
      if (!this.held) {
        this.held = true;
        this.hub.setButton(true);
      }
    } else if (this.held) {
      const now = this.clock.now();
      if (this.releasedSince < 0) this.releasedSince = now;
      else if (now - this.releasedSince >= this.debounceMs) {
        this.held = false;
        this.releasedSince = -1;
        this.hub.setButton(false);
      }
    }
  }
}

/** Where the native stop paths' trips go: a button trip as a press, a guard trip as the watchdog's stop. */
export class StopPathLatch implements StopPathHub {
  constructor(
    private readonly hub: Hub,
    private readonly sampler: ButtonSampler,
  ) {}
  buttonPressed(): void {
    this.sampler.sample(this.sampler.pressedLevel);
  }
  estop(source: number): void {
    this.hub.estop(source);
  }
}

/**
 * The timer's work. A hub whose tick throws can no longer keep its deadman: it stops the robot. A
 * throwing stop path is logged; a throwing upkeep is counted and logged at powers of two, and
 * never stops the hub's tick.
 */
export class DeviceTick {
  tickErrors = 0;
  linkErrors = 0;
  private readonly stopPath: NativeStopPath | null;
  private readonly button: ButtonInput | null;
  private readonly sampler: ButtonSampler | null;
  private readonly ble: Ticking | null;
  private readonly radio: { drain(): void } | null;
  private readonly espnow: Ticking | null;
  private readonly after: Ticking | null;

  constructor(
    private readonly hub: Hub,
    private readonly robot: RobotPort,
    parts: TickParts,
    private readonly log: Log,
  ) {
    this.stopPath = parts.stopPath;
    this.button = parts.button;
    this.sampler = parts.sampler;
    this.ble = parts.ble;
    this.radio = parts.radio;
    this.espnow = parts.espnow;
    this.after = parts.after;
  }

  run(): void {
    if (this.stopPath !== null) {
      try {
        this.stopPath.tick();
      } catch {
        this.log.event('stop-native-error');
      }
    }
    try {
      this.hub.tick();
    } catch {
      this.tickErrors++;
      this.log.event('tick-error', this.tickErrors);
      if (!this.hub.latch.latched) {
        try {
          this.hub.estop(EstopSource.WATCHDOG);
        } catch {
          this.robot.stop(EstopSource.WATCHDOG);
        }
      }
    }
    try {
      this.links();
    } catch {
      this.linkErrors++;
      if ((this.linkErrors & (this.linkErrors - 1)) === 0) this.log.event('link-tick-error', this.linkErrors);
    }
  }

  private links(): void {
    if (this.button !== null && this.sampler !== null) this.sampler.sample(this.button.read());
    if (this.ble !== null) this.ble.tick();
    if (this.radio !== null) this.radio.drain();
    if (this.espnow !== null) this.espnow.tick();
    if (this.after !== null) this.after.tick();
  }
}
