// The pendant's pins as it opens them (docs/pendant.md "Wiring"): ECMA-419 `embedded:io/digital`
// and `embedded:io/analog` classes come in as constructors, so that the device passes the SDK's
// and a test passes classes whose levels it sets. Platform-free. What a level means (the
// normally closed stop contact, the buttons to GND with pull-ups, the joystick's dead zone) is
// decided here, once per control period, without allocating.

/** An input or output pin as `embedded:io/digital` makes one. */
export interface DigitalPin {
  read(): number;
  write(value: 0 | 1): void;
  close(): void;
}

export interface DigitalOptions {
  pin: number;
  mode: number;
  edge?: number;
  onReadable?: (this: DigitalPin) => void;
}

/** The `embedded:io/digital` class: a constructor with its mode and edge constants. */
export interface DigitalClass {
  new (options: DigitalOptions): DigitalPin;
  readonly Input: number;
  readonly InputPullUp: number;
  readonly InputPullDown: number;
  readonly Output: number;
  readonly Rising: number;
  readonly Falling: number;
}

/** An ADC channel as `embedded:io/analog` makes one: read() in 0 .. 2^resolution − 1. */
export interface AnalogPin {
  read(): number;
  readonly resolution: number;
  close(): void;
}

export interface AnalogClass {
  new (options: { pin: number; resolution?: number }): AnalogPin;
}

export interface PendantIo {
  readonly Digital: DigitalClass;
  readonly Analog: AnalogClass;
}

export const Pull = Object.freeze({ UP: 'up', DOWN: 'down', NONE: 'none' } as const);
export type PullName = (typeof Pull)[keyof typeof Pull];

export function inputMode(io: PendantIo, pull: PullName): number {
  return pull === Pull.UP ? io.Digital.InputPullUp : pull === Pull.DOWN ? io.Digital.InputPullDown : io.Digital.Input;
}

/**
 * A push button (normally open): a press counts on the first reading at `pressedLevel`, a release
 * once it has read released for `debounceMs`, so a bouncing contact gives one press.
 */
export class Button {
  /** Debounced state. */
  down = false;
  /** A press happened since the last take(). */
  private pressed = false;
  private releasedSince = -1;

  constructor(
    readonly pin: DigitalPin,
    private readonly pressedLevel: number,
    private readonly debounceMs: number,
  ) {}

  /** Reads the pin at `now`; returns the debounced state. */
  sample(now: number): boolean {
    if (this.pin.read() === this.pressedLevel) {
      this.releasedSince = -1;
      if (!this.down) {
        this.down = true;
        this.pressed = true;
      }
    } else if (this.down) {
      if (this.releasedSince < 0) this.releasedSince = now;
      if (now - this.releasedSince >= this.debounceMs) {
        this.down = false;
        this.releasedSince = -1;
      }
    }
    return this.down;
  }

  /** Whether it was pressed since the last call (one press, one true). */
  take(): boolean {
    const p = this.pressed;
    this.pressed = false;
    return p;
  }
}

/**
 * One joystick axis on an ADC channel: the reading's offset from `center` as a fraction of the
 * half range, with a dead zone around the centre (read as exactly 0) and the rest of the travel
 * rescaled to 0..1 so that the output is continuous at the edge of the dead zone.
 */
export class Axis {
  private readonly half: number;
  private readonly center: number;

  constructor(
    readonly pin: AnalogPin,
    center: number,
    private readonly deadZone: number,
    private readonly invert: boolean,
  ) {
    const full = 2 ** pin.resolution - 1;
    this.center = center >= 0 ? center : full / 2;
    this.half = full / 2;
  }

  /** −1..1, 0 inside the dead zone. */
  read(): number {
    let x = (this.pin.read() - this.center) / this.half;
    if (x > 1) x = 1;
    else if (x < -1) x = -1;
    const a = x < 0 ? -x : x;
    if (a <= this.deadZone) return 0;
    const out = (a - this.deadZone) / (1 - this.deadZone);
    const signed = x < 0 ? -out : out;
    return this.invert ? -signed : signed;
  }
}
