// The entry of the pendant's Linux simulator target (`mcconfig -m -p lin pendant/manifest.json`;
// docs/pendant.md "Building and flashing"). Linux has no ESP-NOW radio and no pins, so the
// pendant's own code (its client core, its ESP-NOW transport, its state machine) runs here
// against the hub's own code on the simulated air in the same process (pendant/sim-world.ts),
// with scripted hands on its buttons and stick: take control, drive, press the stop, clear in
// the documented sequence, arm, drive again. The console shows each step and what the robot got.

import Timer from 'timer';
import { CATALOG } from './boot.js';
import { PendantWorld } from './sim-world.js';

/** One scripted step: at `at` ms from the start, what the hands do. */
interface Step {
  readonly at: number;
  readonly say: string;
  readonly act: (w: PendantWorld) => void;
}

const SCRIPT: readonly Step[] = [
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
];

const STEP_MS = 10;

export default function main(): void {
  trace('pendant: lin target: the pendant against the hub on the simulated ESP-NOW air, scripted hands\n');
  const world = new PendantWorld({ catalog: CATALOG, loss: 0.1, keepCommands: 1 });
  world.board.lastOnly = true;
  const t0 = world.now();
  let next = 0;
  let status = -1;
  world.pendant.start();
  Timer.repeat(() => {
    world.run(STEP_MS);
    const t = world.now() - t0;
    while (next < SCRIPT.length && (SCRIPT[next] as Step).at <= t) {
      const s = SCRIPT[next++] as Step;
      s.act(world);
      if (s.say) trace(`pendant: ${t} ms: ${s.say}\n`);
    }
    const st = world.pendant.status();
    if (st !== status) {
      status = st;
      const c = world.robot.commands[world.robot.commands.length - 1];
      trace(`pendant: ${t} ms: status ${st}, hub ${world.hub.latch.latched ? 'latched' : 'clear'} ${world.hub.armed ? 'armed' : 'disarmed'}, robot got ${world.robot.received} commands, last ${c ? `${c[1]} ${c[2]}` : 'none'}\n`);
    }
    if (next === SCRIPT.length && t >= 7000) {
      next++;
      const p = world.pendant.counters;
      trace(`pendant: done: ${p.commands} commands, ${p.zeros} zeros, ${p.estops} ESTOP, ${p.requests} requests (${p.failures} failed), robot ${world.robot.received}\n`);
    }
  }, STEP_MS);
}
