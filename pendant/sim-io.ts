// In-memory pins for the pendant (pendant/inputs.ts): ECMA-419-shaped Digital and Analog classes
// over a Board whose input levels and ADC readings its owner sets and whose outputs it records.
// What the tests drive (test/lib/pendant-rig.ts) and what the pendant's Linux simulator target
// scripts (pendant/main-lin.ts). Platform-free.

import type { AnalogPin, DigitalOptions, DigitalPin, PendantIo } from './inputs.js';

/** Mid-scale of a 12-bit ADC: a centred stick. */
const MID_12 = 2048;

/** The board's pins: levels the test sets, outputs the pendant writes. */
export class Board {
  readonly levels = new Map<number, number>();
  readonly analog = new Map<number, number>();
  readonly edges = new Map<number, () => void>();
  /** Every level written to each output, and the modes pins were opened with. */
  readonly written = new Map<number, number[]>();
  /** Keep only the last level written to each output (a long run). */
  lastOnly = false;
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
        if (!w) return;
        if (board.lastOnly) w[0] = v;
        else w.push(v);
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
        return board.analog.get(this.pin) ?? MID_12;
      }
      close(): void {}
    }
    return { Digital, Analog };
  }
}

