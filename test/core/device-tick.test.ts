// device/tick.ts: the device's tick (what the SDK's timer runs every tick_ms, and what the device
// budget counts). The order (stop paths, hub, button, BLE, the ESP-NOW radio's backstop drain and
// binding, the uplink), the hub's tick failing (the robot stopped), an upkeep failing (counted,
// the hub's tick goes on), and the ESTOP button's debounce, with a real hub.
import { EstopSource } from '../../hub/estop-frame.js';
import { NULL_LOG, type Log, type RobotPort } from '../../hub/ports.js';
import { NativeStopPath, TripBit, type StopLineNative } from '../../device/stop-path.js';
import { ButtonSampler, DeviceTick, StopPathLatch } from '../../device/tick.js';
import { deepEqual, equal, ok } from '../lib/assert.js';
import { makeHub } from '../lib/hub-fixture.js';

class Line {
  trips = 0;
  feeds = 0;
  readonly calls: string[];
  constructor(calls: string[]) {
    this.calls = calls;
  }
  take(): number {
    this.calls.push('take');
    const t = this.trips;
    this.trips = 0;
    return t;
  }
  feed(): void {
    this.calls.push('feed');
    this.feeds++;
  }
}

function robotOf(calls: string[]): RobotPort {
  return { stop: (source: number) => void calls.push(`robot-stop ${source}`) } as unknown as RobotPort;
}

describe('device/tick: the device’s tick', () => {
  it('runs the stop paths, the hub, the button, BLE, the radio’s drain, ESP-NOW and the uplink, in that order', () => {
    const { hub, clock } = makeHub();
    const calls: string[] = [];
    const line = new Line(calls);
    const sampler = new ButtonSampler(hub, clock, 0, 50);
    const path = new NativeStopPath(line as unknown as StopLineNative, new StopPathLatch(hub, sampler));
    const hubTick = hub.tick.bind(hub);
    (hub as { tick(): void }).tick = () => {
      calls.push('hub');
      hubTick();
    };
    const ticker = new DeviceTick(
      hub,
      robotOf(calls),
      {
        stopPath: path,
        button: { read: () => (calls.push('button'), 1) },
        sampler,
        ble: { tick: () => void calls.push('ble') },
        radio: { drain: () => void calls.push('drain') },
        espnow: { tick: () => void calls.push('espnow') },
        after: { tick: () => void calls.push('uplink') },
      },
      NULL_LOG,
    );
    ticker.run();
    deepEqual(calls, ['take', 'feed', 'hub', 'button', 'ble', 'drain', 'espnow', 'uplink']);
  });

  it('latches the hub on a trip the stop line took before the hub ticks: a button trip as a press, a guard trip as the watchdog', () => {
    const { hub, clock } = makeHub();
    const calls: string[] = [];
    const line = new Line(calls);
    const sampler = new ButtonSampler(hub, clock, 0, 50);
    const path = new NativeStopPath(line as unknown as StopLineNative, new StopPathLatch(hub, sampler));
    const ticker = new DeviceTick(hub, robotOf(calls), { stopPath: path, button: null, sampler: null, ble: null, radio: null, espnow: null, after: null }, NULL_LOG);
    line.trips = TripBit.GUARD;
    ticker.run();
    ok(hub.latch.latched, 'the guard trip latched the hub');
    equal(hub.latch.source, EstopSource.WATCHDOG);
    const b = makeHub();
    const s2 = new ButtonSampler(b.hub, b.clock, 0, 50);
    const line2 = new Line([]);
    line2.trips = TripBit.BUTTON;
    new DeviceTick(b.hub, robotOf([]), { stopPath: new NativeStopPath(line2 as unknown as StopLineNative, new StopPathLatch(b.hub, s2)), button: null, sampler: null, ble: null, radio: null, espnow: null, after: null }, NULL_LOG).run();
    ok(b.hub.buttonAsserting, 'the button trip is a press: the button holds the stop');
  });

  it('stops the robot when the hub’s tick throws, and keeps ticking the upkeep; a throwing upkeep is counted and never stops the next tick', () => {
    const { hub } = makeHub();
    const calls: string[] = [];
    const events: string[] = [];
    const log: Log = { event: (code: string) => void events.push(code) };
    (hub as { tick(): void }).tick = () => {
      throw new Error('broken');
    };
    let failUpkeep = true;
    const ticker = new DeviceTick(
      hub,
      robotOf(calls),
      {
        stopPath: null,
        button: null,
        sampler: null,
        ble: {
          tick: () => {
            calls.push('ble');
            if (failUpkeep) throw new Error('ble');
          },
        },
        radio: null,
        espnow: null,
        after: null,
      },
      log,
    );
    ticker.run();
    ok(hub.latch.latched, 'the hub latched itself: its deadman cannot be kept');
    equal(hub.latch.source, EstopSource.WATCHDOG);
    equal(ticker.tickErrors, 1);
    equal(ticker.linkErrors, 1);
    failUpkeep = false;
    ticker.run();
    equal(ticker.tickErrors, 2);
    equal(ticker.linkErrors, 1);
    deepEqual(calls, ['ble', 'ble'], 'the upkeep ran both times');
    deepEqual(events, ['tick-error', 'link-tick-error', 'tick-error']);
  });

  it('the button: a press counts at once, a release only after it has read released for the debounce time', () => {
    const { hub, clock } = makeHub();
    const sampler = new ButtonSampler(hub, clock, 0, 50);
    sampler.sample(0);
    ok(hub.buttonAsserting, 'pressed');
    sampler.sample(1);
    clock.t += 30;
    sampler.sample(0);
    sampler.sample(1);
    clock.t += 49;
    sampler.sample(1);
    ok(hub.buttonAsserting, 'a bounce restarts the debounce: still held');
    clock.t += 1;
    sampler.sample(1);
    ok(!hub.buttonAsserting, 'released for 50 ms: released');
  });
});

