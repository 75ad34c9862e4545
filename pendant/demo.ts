// The scripted hands of the pendant's Linux simulator target (pendant/main-lin.ts): take control,
// drive, press the stop, clear in the documented sequence, arm, drive again, let go. Platform-free:
// test/core/pendant.test.ts runs the same script and checks what it shows.

import type { PendantWorld } from './sim-world.js';

/** One scripted step: at `at` ms from the start, what the hands do. */
export interface DemoStep {
  readonly at: number;
  readonly say: string;
  readonly act: (w: PendantWorld) => void;
}

export const DEMO_SCRIPT: readonly DemoStep[] = Object.freeze([
  { at: 500, say: 'take control', act: (w) => w.press(w.settings.pins.take) },
  { at: 600, say: '', act: (w) => w.release(w.settings.pins.take) },
  { at: 1000, say: 'enable held, stick forward', act: (w) => w.press(w.settings.pins.enable) },
  { at: 1100, say: '', act: (w) => w.stick(0, 0.6) },
  { at: 2500, say: 'stop pressed', act: (w) => w.stop(true) },
  { at: 3000, say: 'stick centred, enable and stop released', act: (w) => (w.stick(0, 0), w.release(w.settings.pins.enable), w.stop(false)) },
  { at: 3500, say: 'enable held, clear', act: (w) => w.press(w.settings.pins.enable) },
  { at: 3600, say: '', act: (w) => w.press(w.settings.pins.clear) },
  { at: 3700, say: '', act: (w) => (w.release(w.settings.pins.clear), w.release(w.settings.pins.enable)) },
  { at: 4200, say: 'arm', act: (w) => w.press(w.settings.pins.arm) },
  { at: 4300, say: '', act: (w) => w.release(w.settings.pins.arm) },
  { at: 4600, say: 'enable held, stick forward', act: (w) => w.press(w.settings.pins.enable) },
  { at: 4700, say: '', act: (w) => w.stick(0, 0.6) },
  { at: 6000, say: 'enable released', act: (w) => w.release(w.settings.pins.enable) },
]);

/** The script runs out at this time from the start, and the summary line follows. */
export const DEMO_END_MS = 7000;

/** Plays DEMO_SCRIPT on a world: call `advance` after each stretch of the world's time. */
export class DemoRunner {
  private readonly t0: number;
  private next = 0;
  private shown = -1;
  done = false;

  constructor(
    private readonly w: PendantWorld,
    private readonly say: (line: string) => void,
  ) {
    this.t0 = w.now();
  }

  /** Does what is due and reports what changed; true once the summary line was said. */
  advance(): boolean {
    const w = this.w;
    const t = w.now() - this.t0;
    while (this.next < DEMO_SCRIPT.length && (DEMO_SCRIPT[this.next] as DemoStep).at <= t) {
      const s = DEMO_SCRIPT[this.next++] as DemoStep;
      s.act(w);
      if (s.say) this.say(`pendant: ${t} ms: ${s.say}`);
    }
    // A line whenever the LED's status or the hub's latch or arming changes.
    const st = w.pendant.status();
    const shown = st * 4 + (w.hub.latch.latched ? 2 : 0) + (w.hub.armed ? 1 : 0);
    if (shown !== this.shown) {
      this.shown = shown;
      const c = w.robot.commands[w.robot.commands.length - 1];
      this.say(`pendant: ${t} ms: status ${st}, hub ${w.hub.latch.latched ? 'latched' : 'clear'} ${w.hub.armed ? 'armed' : 'disarmed'}, robot got ${w.robot.received} commands, last ${c ? `${c[1]} ${c[2]}` : 'none'}`);
    }
    if (!this.done && this.next === DEMO_SCRIPT.length && t >= DEMO_END_MS) {
      this.done = true;
      const p = w.pendant.counters;
      this.say(`pendant: done: ${p.commands} commands, ${p.zeros} zeros, ${p.estops} ESTOP, ${p.requests} requests (${p.failures} failed), robot ${w.robot.received}`);
    }
    return this.done;
  }
}
