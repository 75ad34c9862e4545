// The stop line's native paths (device/stop-path.ts) with the real hub, the real robot port
// (device/robot-link.ts) and the real gated stop line, on a virtual clock. The native module
// itself (device/native/stopline.c) cannot run here; NativeModel below does what its interrupt,
// its guard timer and its release do to the pin, so that these cases show what the device entry
// makes of them: a trip stops the line before any JavaScript runs, the hub latches when the trip
// is taken, a release never overwrites a trip the hub has not latched, and releasing the button
// never releases the line.
import { Tier } from '../../catalog/schema.js';
import { saveCredentials } from '../../hub/credentials.js';
import { EstopSource } from '../../hub/estop-frame.js';
import { FrameType } from '../../hub/frames.js';
import { Hub } from '../../hub/hub.js';
import { loadCatalog } from '../../catalog/index.js';
import { DEFAULT_CATALOG } from '../../catalog/default.js';
import { RobotLink } from '../../device/robot-link.js';
import { GatedStopLine, latchesAfterReset, NativeStopPath, ResetCause, TripBit, type LevelOutput, type StopLineNative } from '../../device/stop-path.js';
import { deepEqual, equal, ok } from '../lib/assert.js';
import { MemoryStore, OPERATOR_CREDENTIAL, SeededRandom, TestClient, VirtualClock } from '../lib/hub-fixture.js';

const TAKE_CONTROL = 42;
const STOP = 0;
const RUN = 1;

/** The stop pin: every level written to it, in order. */
class Pin implements LevelOutput {
  level: 0 | 1 = STOP;
  readonly writes: (0 | 1)[] = [];
  write(value: 0 | 1): void {
    this.level = value;
    this.writes.push(value);
  }
}

/** What device/native/stopline.c does to the pin and its trip bits (its interrupt, its guard timer, its release). */
class NativeModel implements StopLineNative {
  private pending = 0;
  private stopLevel: 0 | 1 = 0;
  private pressedLevel: 0 | 1 = 1;
  private guardMs = 0;
  private fedAt = 0;
  feeds = 0;
  tripCount = 0;
  onTrip: (() => void) | null = null;

  constructor(
    private readonly pin: Pin,
    private readonly clock: VirtualClock,
  ) {}

  line(_stopPin: number, stopLevel: 0 | 1, onTrip: () => void): void {
    this.stopLevel = stopLevel;
    this.onTrip = onTrip;
  }
  watch(_button: object, _pin: number, pressedLevel: 0 | 1): void {
    this.pressedLevel = pressedLevel;
  }
  guard(ms: number): void {
    this.guardMs = ms;
    this.fedAt = this.clock.now();
  }
  feed(): void {
    this.feeds++;
    this.fedAt = this.clock.now();
  }
  take(): number {
    const bits = this.pending;
    this.pending = 0;
    return bits;
  }
  release(): boolean {
    if (this.pending) return false;
    this.pin.write(this.stopLevel === 0 ? 1 : 0);
    return true;
  }
  trips(): number {
    return this.tripCount;
  }
  postFailures(): number {
    return 0;
  }
  watchdogSeconds(): number {
    return 3;
  }
  resetCause(): number {
    return ResetCause.POWER_ON;
  }
  close(): void {}

  /** The interrupt, on an edge of the button that reads `level`: a pressed level stops the line. */
  edge(level: 0 | 1): void {
    if (level !== this.pressedLevel) return;
    this.pin.write(this.stopLevel);
    this.pending |= TripBit.BUTTON;
    this.tripCount++;
  }
  /** The guard timer's check. */
  guardCheck(): void {
    if (this.guardMs && !(this.pending & TripBit.GUARD) && this.clock.now() - this.fedAt > this.guardMs) {
      this.pin.write(this.stopLevel);
      this.pending |= TripBit.GUARD;
      this.tripCount++;
    }
  }
}

interface Device {
  clock: VirtualClock;
  hub: Hub;
  pin: Pin;
  native: NativeModel;
  path: NativeStopPath;
  line: GatedStopLine;
  robot: RobotLink;
  /** The button as the device entry's JavaScript path holds it. */
  button: { held: boolean };
}

/** The device entry's start-up, with a model of the native module: stop first, hub, arm, release. */
function boot(): Device {
  const clock = new VirtualClock();
  const pin = new Pin();
  const line = new GatedStopLine(pin, STOP);
  const robot = new RobotLink({ line, tx: null });
  const store = new MemoryStore();
  saveCredentials(store, [{ tier: Tier.operator, credential: OPERATOR_CREDENTIAL }]);
  const hub = new Hub({ clock, random: new SeededRandom(3), store, robot, catalog: loadCatalog(DEFAULT_CATALOG) }, { livenessTimeoutMs: Infinity });
  const native = new NativeModel(pin, clock);
  const button = { held: false };
  const path = new NativeStopPath(native, {
    // main.ts: sampleButton(pressed level)
    buttonPressed: () => {
      if (!button.held) {
        button.held = true;
        hub.setButton(true);
      }
    },
    estop: (source) => hub.estop(source),
  });
  native.line(13, STOP, () => path.poll());
  native.watch({}, 4, 1);
  line.gate = native;
  if (!hub.latch.latched) robot.release();
  native.guard(1000);
  return { clock, hub, pin, native, path, line, robot, button };
}

function owner(d: Device): TestClient {
  const c = new TestClient(d.hub);
  c.hello({ credential: OPERATOR_CREDENTIAL });
  c.intent(TAKE_CONTROL, 1);
  c.take();
  return c;
}

describe('device stop path: native trips with the hub (device/stop-path.ts)', () => {
  it('boots with the line at stop, and the release after a clean boot goes through the native module', () => {
    const d = boot();
    deepEqual(d.pin.writes, [STOP, RUN], 'stop from the robot port first, then the release');
    equal(d.line.refusedReleases, 0);
  });

  it('a press stops the line in the interrupt, before any JavaScript; taking the trip latches the hub with the button as source', () => {
    const d = boot();
    d.native.edge(1);
    equal(d.pin.level, STOP, 'the line is at stop before the event loop has run');
    ok(!d.hub.latch.latched, 'the hub has not seen it yet');
    equal(d.path.poll(), TripBit.BUTTON);
    ok(d.hub.latch.latched);
    equal(d.hub.latch.source, EstopSource.HUB_BUTTON);
    equal(d.robot.counters.stops, 1);
    equal(d.path.poll(), 0, 'a trip is taken once');
  });

  it('a press shorter than the event loop still latches: the trip does not depend on the level JavaScript reads later', () => {
    const d = boot();
    d.native.edge(1); // pressed
    d.native.edge(0); // released before JavaScript ran: the interrupt does nothing on a release
    equal(d.pin.level, STOP);
    d.path.poll();
    ok(d.hub.latch.latched);
  });

  it('a release edge does not trip, and releasing the button never releases the line: only the owner’s clear does', () => {
    const d = boot();
    const c = owner(d);
    d.native.edge(0);
    equal(d.path.poll(), 0);
    equal(d.pin.level, RUN);

    d.native.edge(1);
    d.path.poll();
    d.hub.setButton(false); // the JavaScript path's debounced release
    d.button.held = false;
    ok(d.hub.latch.latched);
    equal(d.pin.level, STOP, 'the released button left the line at stop');

    c.send({ type: FrameType.ESTOP_CLEAR });
    ok(!d.hub.latch.latched);
    equal(d.pin.level, RUN, 'the clear released it, through the native module');
  });

  it('a clear that races a trip the hub has not taken yet is refused at the pin: the line never reads run after the press', () => {
    const d = boot();
    const c = owner(d);
    c.estop(1); // an earlier stop, which the owner is about to clear
    ok(d.hub.latch.latched);
    const before = d.pin.writes.length;

    d.native.edge(1); // the interrupt: its message is behind the clear in the VM's queue
    c.send({ type: FrameType.ESTOP_CLEAR }); // the hub clears the older stop and releases the robot port…
    ok(!d.hub.latch.latched);
    equal(d.line.refusedReleases, 1, '…but the native module refuses the release while the trip is pending');
    ok(!d.pin.writes.slice(before).includes(RUN), `the line never went to run: ${JSON.stringify(d.pin.writes.slice(before))}`);

    d.path.poll(); // the trip's message
    ok(d.hub.latch.latched, 'the press latched');
    equal(d.hub.latch.source, EstopSource.HUB_BUTTON);
    equal(d.pin.level, STOP);
  });

  it('a loop that goes quiet past the guard time has the line stopped by the guard, and the hub latches with source watchdog when it runs again', () => {
    const d = boot();
    for (let i = 0; i < 100; i++) {
      d.clock.advance(10);
      d.path.tick();
      d.native.guardCheck();
    }
    equal(d.native.trips(), 0, 'a loop that ticks is never tripped');
    equal(d.pin.level, RUN);

    d.clock.advance(1000);
    d.native.guardCheck();
    equal(d.pin.level, RUN, 'not yet: the guard time has not passed');
    d.clock.advance(1);
    d.native.guardCheck();
    equal(d.pin.level, STOP, 'the guard stopped the line with no JavaScript running');
    ok(!d.hub.latch.latched);

    equal(d.path.tick(), TripBit.GUARD);
    ok(d.hub.latch.latched);
    equal(d.hub.latch.source, EstopSource.WATCHDOG);
    d.native.guardCheck();
    equal(d.native.trips(), 1, 'the tick fed the heartbeat again');
  });

  it('the tick takes the trips before it feeds, so a trip whose message was lost latches at the next tick', () => {
    const d = boot();
    d.native.edge(1);
    const feeds = d.native.feeds;
    equal(d.path.tick(), TripBit.BUTTON);
    ok(d.hub.latch.latched);
    equal(d.native.feeds, feeds + 1);
  });
});

describe('device stop path: a reset nobody chose comes up latched', () => {
  it('latches after a panic, a watchdog, a brown-out or an unknown reset; not after power-on, a chosen restart or an external reset', () => {
    const latching = Object.entries(ResetCause)
      .filter(([, cause]) => latchesAfterReset(cause))
      .map(([name]) => name)
      .sort();
    deepEqual(latching, ['BROWNOUT', 'PANIC', 'UNKNOWN', 'WATCHDOG']);
    ok(latchesAfterReset(99), 'a cause this build does not know counts as unknown');
  });
});
