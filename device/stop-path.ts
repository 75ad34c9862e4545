// The stop line's native paths as the device entry sees them (docs/operations.md "Stops that do
// not need JavaScript"). Platform-free: device/native/stopline.ts is the ESP32's
// StopLineNative, and the host tests hand a model of it with the same contract.
//
// The native module drives the stop line to stop without the event loop (from the ESTOP button's
// interrupt, or when the JavaScript heartbeat stops) and leaves a trip bit. JavaScript takes the
// bits and latches the hub as the JavaScript path would have: a button trip is a press of the
// hub's button (source HUB_BUTTON), a guard trip is the watchdog (source WATCHDOG). Until the
// bits are taken the native release refuses, so no release can overwrite a trip that the hub
// has not latched yet. Nothing here ever releases the line: only the hub's clear does, through
// the robot port.

import { EstopSource } from '../hub/estop-frame.js';
import type { StopLine } from './robot-link.js';

/** Bits of StopLineNative.take(): which native path drove the line to stop. */
export const TripBit = Object.freeze({ BUTTON: 1, GUARD: 2 } as const);

/** StopLineNative.resetCause(): why the chip last reset, ESP-IDF's reasons grouped. */
export const ResetCause = Object.freeze({
  /** Power applied. */
  POWER_ON: 0,
  /** esp_restart(): the firmware chose to restart (the debugger's restart, an update). */
  SOFTWARE: 1,
  /** A panic, a CPU lock-up, an eFuse fault. */
  PANIC: 2,
  /** The task, interrupt or another hardware watchdog. */
  WATCHDOG: 3,
  /** The supply dipped: brown-out or a detected power glitch. */
  BROWNOUT: 4,
  /** The reset pin, USB, JTAG, SDIO, deep-sleep wake. */
  EXTERNAL: 5,
  UNKNOWN: 6,
} as const);

/** The guard's range (stopline.c kGuardMinMs..kGuardMaxMs). */
export const STOP_GUARD_MIN_MS = 100;
export const STOP_GUARD_MAX_MS = 10000;

/**
 * Whether the hub comes up latched after this reset: a panic, a watchdog, a brown-out or a reset
 * nobody can name was not chosen by anyone, and the robot must not resume after it until an
 * operator has looked (source WATCHDOG). Power-on, a restart the firmware chose and an external
 * reset keep the latch as the Store has it. A cause this build does not know counts as unknown.
 */
export function latchesAfterReset(cause: number): boolean {
  return !(cause === ResetCause.POWER_ON || cause === ResetCause.SOFTWARE || cause === ResetCause.EXTERNAL);
}

/** The native module's face (device/native/stopline.c). */
export interface StopLineNative extends ReleaseGate {
  /** The output the native paths drive, already opened at its stop level, and what a trip's message calls. */
  line(stopPin: number, stopLevel: 0 | 1, onTrip: () => void): void;
  /** Hooks the interrupt of `button` (a Digital input opened with onReadable) on `pin`, which reads `pressedLevel` while pressed. */
  watch(button: object, pin: number, pressedLevel: 0 | 1): void;
  /** The line goes to stop when feed() has not run for `ms` (STOP_GUARD_MIN_MS..STOP_GUARD_MAX_MS); 0: off. */
  guard(ms: number): void;
  feed(): void;
  /** The trip bits since the last take, cleared. */
  take(): number;
  trips(): number;
  postFailures(): number;
  /** The task watchdog's timeout, seconds, when the build has it (with a reset on timeout); 0 otherwise. */
  watchdogSeconds(): number;
  resetCause(): number;
  close(): void;
}

/** A release the native stop path may refuse (StopLineNative.release). */
export interface ReleaseGate {
  /** Drives the run level itself, or refuses and leaves the line at stop. */
  release(): boolean;
}

/** The output the stop line is written to (an ECMA-419 Digital output on the device). */
export interface LevelOutput {
  write(value: 0 | 1): void;
}

/**
 * The stop line (device/robot-link.ts StopLine) over an output. Stop is written straight to the
 * output, always. A release is written straight too until a gate is set; from then on the gate
 * (the native module) writes it, or refuses while a trip it has not handed over is pending, so a
 * release can never overwrite a stop the hub has not latched yet.
 */
export class GatedStopLine implements StopLine {
  gate: ReleaseGate | null = null;
  /** Releases the gate refused. */
  refusedReleases = 0;

  constructor(
    private readonly out: LevelOutput,
    readonly stopLevel: 0 | 1,
  ) {}

  set(stopped: boolean): void {
    if (stopped) {
      this.out.write(this.stopLevel);
      return;
    }
    if (this.gate) {
      if (!this.gate.release()) this.refusedReleases++;
      return;
    }
    this.out.write(this.stopLevel === 0 ? 1 : 0);
  }
}

/** What a trip does in the hub. */
export interface StopPathHub {
  /** A press of the hub's own button, as the JavaScript path reports one. */
  buttonPressed(): void;
  /** The hub latches with this source. */
  estop(source: number): void;
}

/**
 * Takes the native trips and latches the hub. The trip's message calls poll(); the tick calls
 * tick(), which polls too (a message the VM's queue refused, a guard trip, which posts none)
 * and then feeds the heartbeat.
 */
export class NativeStopPath {
  /** Trips taken, by bit, since start. */
  buttonTrips = 0;
  guardTrips = 0;

  constructor(
    readonly native: StopLineNative,
    private readonly hub: StopPathHub,
  ) {}

  /** Hands pending trips to the hub; returns the bits taken. */
  poll(): number {
    const bits = this.native.take();
    if (bits & TripBit.BUTTON) {
      this.buttonTrips++;
      this.hub.buttonPressed();
    }
    if (bits & TripBit.GUARD) {
      this.guardTrips++;
      this.hub.estop(EstopSource.WATCHDOG);
    }
    return bits;
  }

  /** Once per tick: the trips first, then the heartbeat. */
  tick(): number {
    const bits = this.poll();
    this.native.feed();
    return bits;
  }
}
