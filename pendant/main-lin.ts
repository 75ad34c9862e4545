// The entry of the pendant's Linux simulator target (`mcconfig -m -p lin pendant/manifest.json`;
// docs/pendant.md "Building and flashing"). Linux has no ESP-NOW radio and no pins, so the
// pendant's own code (its client core, its ESP-NOW transport, its state machine) runs here
// against the hub's own code on the simulated air in the same process (pendant/sim-world.ts),
// with scripted hands on its buttons and stick (pendant/demo.ts). The console shows each step,
// each change of the LED's status and what the robot got.

import Timer from 'timer';
import { CATALOG } from './boot.js';
import { DemoRunner } from './demo.js';
import { PendantWorld } from './sim-world.js';

const STEP_MS = 10;

export default function main(): void {
  trace('pendant: lin target: the pendant against the hub on the simulated ESP-NOW air, scripted hands\n');
  const world = new PendantWorld({ catalog: CATALOG, loss: 0.1, keepCommands: 1 });
  world.board.lastOnly = true;
  const demo = new DemoRunner(world, (line) => trace(`${line}\n`));
  world.pendant.start();
  Timer.repeat(() => {
    world.run(STEP_MS);
    demo.advance();
  }, STEP_MS);
}
