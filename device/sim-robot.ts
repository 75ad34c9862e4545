// The robot of the Linux simulator target (device/main-lin.ts): a simulated stop line in place of
// the GPIO output and the simulator's robot (host-sim/robot.ts: a differential-drive base with an
// arm, streaming the default catalog's telemetry and executing cmd_vel and trajectories) in place
// of the serial link to the robot's real-time core. The robot runs on the simulator's event
// kernel, advanced to the hub's clock at every tick, so its samples are stamped with the hub's
// milliseconds as the device's robot link stamps them.
//
// As on the device (device/robot-link.ts RobotLink), the stop line goes to stop before the robot
// hears of a stop, and to run before it hears of a release. Platform-free: a Node test drives it.

import type { CatalogIndex } from '../catalog/index.js';
import type { Hub } from '../hub/hub.js';
import type { Clock, Log, RobotPort, SampleBlock } from '../hub/ports.js';
import { Kernel, US_PER_MS } from '../host-sim/kernel.js';
import { SimRobot, type RobotParams } from '../host-sim/robot.js';
import type { StopLine } from './robot-link.js';

/** The stop output, simulated: its level, and a log line at each change. */
export class SimStopLine implements StopLine {
  /** true: the line says stop. Stop from the start, as the GPIO output is driven at boot. */
  stopped = true;
  /** Changes of level since start. */
  changes = 0;
  private readonly log: Log | undefined;

  constructor(log?: Log) {
    this.log = log;
  }

  set(stopped: boolean): void {
    if (stopped === this.stopped) return;
    this.stopped = stopped;
    this.changes++;
    if (this.log) this.log.event(stopped ? 'stop-line-stop' : 'stop-line-run');
  }
}

export interface SimulatedRobotOptions {
  /** The robot's noise and event times (the simulator's PRNG). Default 1. */
  readonly seed?: number;
  readonly params?: Partial<RobotParams>;
  readonly log?: Log;
}

/** Events the robot keeps scheduled at once (its streams and a few one-off reports). */
const KERNEL_EVENTS = 16;

export class SimulatedRobot implements RobotPort {
  readonly line: SimStopLine;
  readonly robot: SimRobot;
  private readonly kernel: Kernel;
  private readonly clock: Clock;

  constructor(catalog: CatalogIndex, clock: Clock, options: SimulatedRobotOptions = {}) {
    this.clock = clock;
    this.line = new SimStopLine(options.log);
    this.kernel = new Kernel(options.seed ?? 1, KERNEL_EVENTS);
    // The kernel's time is the hub's: it jumps to now with nothing to run.
    this.kernel.runUntil(clock.now() * US_PER_MS);
    this.robot = new SimRobot(this.kernel, catalog, options.params);
  }

  /** Starts the telemetry streams into `hub`. */
  start(hub: Hub): void {
    this.advance(this.clock.now());
    this.robot.start(hub);
  }

  /** Runs the robot up to `nowMs` on the hub's clock: call at every tick. */
  advance(nowMs: number): void {
    this.kernel.runUntil(nowMs * US_PER_MS);
  }

  stop(source: number): void {
    this.line.set(true);
    this.robot.stop(source);
  }

  release(): void {
    this.line.set(false);
    this.robot.release();
  }

  publish(channelId: number, samples: SampleBlock): void {
    this.robot.publish(channelId, samples);
  }

  intent(channelId: number, args: readonly (number | string)[]): number {
    return this.robot.intent(channelId, args);
  }
}
