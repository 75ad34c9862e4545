// The handheld pendant (pendant/, docs/pendant.md) against the real hub over the simulated
// ESP-NOW air, with loss: the pendant's own code (its client core, its ESP-NOW transport, its
// state machine) with in-memory pins the test sets (test/lib/pendant-rig.ts). Portable: runs on
// Node and on the XS engine.
import { EstopSource } from '../../hub/estop-frame.js';
import { Nack } from '../../hub/nack.js';
import { DemoRunner } from '../../pendant/demo.js';
import { Axis } from '../../pendant/inputs.js';
import { LED_PATTERNS, ledLevel, PendantStatus } from '../../pendant/led.js';
import { PendantConfigError, resolvePendantConfig } from '../../pendant/settings.js';
import { deepEqual, equal, ok } from '../lib/assert.js';
import { PENDANT_MAC, pendantRig, type PendantRig } from '../lib/pendant-rig.js';

const CMD_VEL = 30;

/** The rig with the pendant's session open (and control taken, when asked). */
async function ready(o: Parameters<typeof pendantRig>[0] = {}, take = true): Promise<PendantRig> {
  const r = pendantRig(o);
  r.pendant.start();
  await r.runFor(2000, () => r.pendant.client.state === 'active');
  equal(r.pendant.client.state, 'active', 'the pendant opened its session over ESP-NOW');
  if (take) {
    r.press(r.settings.pins.take);
    await r.runFor(60);
    r.release(r.settings.pins.take);
    await r.runFor(1000, () => r.pendant.client.ownsControl);
    ok(r.pendant.client.ownsControl, 'take_control carried out');
    equal(r.hub.controlOwner, r.pendant.client.sessionId);
  }
  return r;
}

/** cmd_vel samples [t, v, w] the robot received, in order. */
function commands(r: PendantRig): number[][] {
  return r.robot.commands;
}

/** The hub's ESTOP bound for one ESP-NOW peer (docs/simulator.md "ESTOP bound"): with every retry when the air loses. */
function estopBoundMs(r: PendantRig): number {
  const tries = r.air.loss > 0 ? r.air.retries + 1 : 1;
  return 3 * tries * r.air.airtimeMs(250, true) + tries * r.air.airtimeMs(16, true);
}

describe('pendant: the stop button', () => {
  for (const seed of [1, 2, 3]) {
    it(`reaches the hub within the ESTOP bound over an air losing 30 % of frames (seed ${seed}), and stops repeating once the latch is seen`, async () => {
      const r = await ready({ loss: 0.3, seed }, false);
      // The stick moving and the enable held: traffic queued behind which the stop must not wait.
      r.press(r.settings.pins.enable);
      await r.runFor(60);
      r.stick(0.5, 0.5);
      await r.runFor(200);
      const t0 = r.air.now();
      r.stop(true); // the normally closed contact opens
      const took = await r.runFor(1000, () => r.hub.latch.latched);
      ok(r.hub.latch.latched, 'the hub latched');
      equal(r.hub.latch.source, EstopSource.CLIENT);
      ok(took <= Math.ceil(estopBoundMs(r)) + 1, `latched after ${took} ms, bound ${estopBoundMs(r).toFixed(1)} ms`);
      ok(r.air.now() - t0 === took);
      await r.runFor(500);
      equal(r.pendant.estopWanted, false, 'the latch came back: no more repeats');
      ok(r.pendant.counters.estops <= 2, `${r.pendant.counters.estops} ESTOP frames for one press`);
      equal(r.pendant.status(), PendantStatus.LATCHED);
    });
  }

  it('repeats ESTOP every estop_repeat_ms until the hub’s latch comes back', async () => {
    const r = await ready({}, false);
    r.radio.deaf = true; // the pendant hears nothing from the hub
    r.stop(true);
    await r.runFor(1000);
    ok(r.hub.latch.latched, 'the first ESTOP latched the hub');
    const sent = r.pendant.counters.estops;
    ok(sent >= 9 && sent <= 11, `${sent} ESTOPs in 1 s without a latch seen (every 100 ms)`);
    r.radio.deaf = false;
    await r.runFor(500);
    equal(r.pendant.estopWanted, false, 'the hub’s announcement of the newest assertion was heard');
    const after = r.pendant.counters.estops;
    await r.runFor(500);
    equal(r.pendant.counters.estops, after, 'no repeats once seen');
  });

  it('a stop contact already open at power-up (a cut wire reads the same) latches the hub as the session opens', async () => {
    const r = pendantRig();
    r.stop(true);
    r.pendant.start();
    await r.runFor(1000, () => r.hub.latch.latched);
    ok(r.hub.latch.latched, 'latched');
    equal(r.hub.latch.source, EstopSource.CLIENT);
    equal(r.pendant.status(), PendantStatus.LATCHED);
  });

  it('held down through a clear by another session, it asserts again', async () => {
    const r = await ready();
    r.stop(true);
    await r.runFor(300);
    ok(r.hub.latch.latched);
    // The hub's owner clears (the pendant owns control, so its client core asks, as a console would).
    r.pendant.client.clearEstop().catch(() => undefined);
    await r.runFor(300);
    ok(r.hub.latch.latched, 'latched again: the pendant’s button still asserts');
    ok(r.pendant.counters.estops >= 2);
  });
});

describe('pendant: the enable (deadman) button and the joystick', () => {
  it('commands move only with the enable held; its release sends zeros at once and then nothing, with loss on the air', async () => {
    const r = await ready({ loss: 0.2, seed: 5 });
    r.stick(0, 0.8);
    await r.runFor(300);
    equal(commands(r).length, 0, 'nothing without the enable');
    r.stick(0, 0);
    r.press(r.settings.pins.enable);
    await r.runFor(100);
    r.stick(0, 0.8);
    await r.runFor(500);
    const moving = commands(r);
    ok(moving.length >= 6, `${moving.length} commands in 0.5 s at 20 Hz over a lossy air`);
    const last = moving[moving.length - 1] as number[];
    ok(Math.abs((last[1] as number) - 0.8 * ((0.8 - 0.1) / 0.9) * 0.5 / 0.8) < 0.01, `v ${last[1]}`);
    const before = moving.length;
    const releasedAt = Math.floor(r.air.now());
    r.release(r.settings.pins.enable);
    await r.runFor(150);
    const after = commands(r);
    ok(after.length > before, 'a stop command arrived');
    deepEqual(after[after.length - 1]!.slice(1), [0, 0], 'the robot’s last command is zero');
    // Commands are stamped with the pendant's clock: every one sent after the release is a zero.
    for (const s of after) if ((s[0] as number) > releasedAt) deepEqual(s.slice(1), [0, 0], 'nothing but zeros after the release');
    await r.runFor(1000);
    ok(commands(r).length - after.length <= r.settings.zeroTail, 'then nothing');
    deepEqual(commands(r)[commands(r).length - 1]!.slice(1), [0, 0]);
  });

  it('enabling with the stick off centre moves nothing until the stick has come back to the centre', async () => {
    const r = await ready();
    r.stick(0.9, 0);
    r.press(r.settings.pins.enable);
    await r.runFor(400);
    equal(commands(r).filter((s) => s[1] !== 0 || s[2] !== 0).length, 0);
    r.stick(0, 0);
    await r.runFor(100);
    r.stick(0.9, 0);
    await r.runFor(200);
    ok(commands(r).some((s) => (s[2] as number) < 0), 'turning once the stick was centred (right is clockwise: w < 0)');
  });

  it('joystick commands without ownership are refused by the hub (NOT_OWNER); the pendant stops until the enable is pressed again', async () => {
    const r = await ready({}, false);
    r.press(r.settings.pins.enable);
    await r.runFor(60);
    r.stick(0, 0.5);
    await r.runFor(600);
    equal(commands(r).length, 0, 'the robot received nothing');
    equal(r.pendant.counters.refusals, 1, 'one refusal per press of the enable');
    equal(r.pendant.counters.lastRefusal, Nack.NOT_OWNER);
    ok(r.pendant.client.publication(CMD_VEL)!.nacked >= 1);
    equal(r.pendant.status(), PendantStatus.GRANTED);
    r.release(r.settings.pins.enable);
    r.stick(0, 0);
    await r.runFor(100);
    r.press(r.settings.pins.enable);
    await r.runFor(60);
    r.stick(0, 0.5);
    await r.runFor(200);
    equal(r.pendant.counters.refusals, 2);
    equal(commands(r).length, 0);
  });

  it('link loss past the deadman latches the hub (source deadman); back on the air, the pendant learns the latch', async () => {
    const r = await ready();
    r.press(r.settings.pins.enable);
    await r.runFor(60);
    r.stick(0, 0.3);
    await r.runFor(300);
    ok(commands(r).length > 0);
    const t0 = r.air.now();
    r.radio.cut = true;
    const took = await r.runFor(2000, () => r.hub.latch.latched);
    ok(r.hub.latch.latched);
    equal(r.hub.latch.source, EstopSource.DEADMAN);
    // The deadman (500 ms) counts from the owner's last frame, which left before the cut.
    ok(took <= 500 + 10, `latched ${took} ms after the cut`);
    ok(r.air.now() - t0 >= 300, 'not before the owner had been silent for most of deadman_ms');
    r.radio.cut = false;
    await r.runFor(6000, () => r.pendant.client.latched);
    ok(r.pendant.client.latched, 'the pendant heard the latch');
    equal(r.pendant.status(), PendantStatus.LATCHED);
  });
});

describe('pendant: clear and arm', () => {
  it('clear needs the stop released and the enable held; it never restarts motion; ARM is its own press', async () => {
    const r = await ready({ loss: 0.1, seed: 9 });
    const p = r.settings.pins;
    r.press(p.enable);
    await r.runFor(60);
    r.stick(0, 0.5);
    await r.runFor(300);
    r.stop(true);
    await r.runFor(300);
    ok(r.hub.latch.latched);
    r.release(p.enable);
    r.stick(0, 0);
    // 1. Clear with the stop still down: refused by the pendant.
    r.press(p.clear);
    await r.runFor(60);
    r.release(p.clear);
    await r.runFor(300);
    equal(r.pendant.counters.clearsRefused, 1);
    ok(r.hub.latch.latched);
    // 2. The stop up, the enable not held: refused.
    r.stop(false);
    await r.runFor(100);
    r.press(p.clear);
    await r.runFor(60);
    r.release(p.clear);
    await r.runFor(300);
    equal(r.pendant.counters.clearsRefused, 2);
    ok(r.hub.latch.latched);
    // 3. The stop up and the enable held: cleared. The hub is disarmed; the stick moved, nothing moves.
    r.press(p.enable);
    await r.runFor(60);
    r.press(p.clear);
    await r.runFor(60);
    r.release(p.clear);
    await r.runFor(500, () => !r.hub.latch.latched);
    equal(r.hub.latch.latched, false, 'cleared');
    equal(r.hub.armed, false, 'a clear leaves the hub disarmed');
    const n = commands(r).length;
    r.stick(0, 0.6);
    await r.runFor(500);
    equal(commands(r).slice(n).filter((s) => s[1] !== 0).length, 0, 'the clear restarted nothing');
    // 4. Arm refused off centre, then pressed with the stick centred.
    r.press(p.arm);
    await r.runFor(60);
    r.release(p.arm);
    equal(r.pendant.counters.armsRefused, 1);
    r.stick(0, 0);
    r.release(p.enable);
    await r.runFor(100);
    r.press(p.arm);
    await r.runFor(60);
    r.release(p.arm);
    await r.runFor(500, () => r.hub.armed);
    ok(r.hub.armed, 'armed by its own press');
    // 5. The enable pressed again and the stick moved: motion.
    r.press(p.enable);
    await r.runFor(60);
    r.stick(0, 0.6);
    await r.runFor(400);
    ok(commands(r).slice(n).some((s) => (s[1] as number) > 0), 'moving after arm');
  });
});

describe('pendant: the LEDs and the link level', () => {
  it('shows disconnected, granted, owner and latched as their patterns', async () => {
    const r = pendantRig();
    equal(r.pendant.status(), PendantStatus.DISCONNECTED);
    r.pendant.start();
    await r.runFor(1000, () => r.pendant.client.state === 'active');
    await r.runFor(100);
    equal(r.pendant.status(), PendantStatus.GRANTED);
    r.press(r.settings.pins.take);
    await r.runFor(300);
    equal(r.pendant.status(), PendantStatus.OWNER);
    const led = r.board.written.get(r.settings.pins.led)!;
    ok(led.length > 0 && led.slice(-5).every((v) => v === 1), 'steady on while owner');
    r.stop(true);
    await r.runFor(1000);
    equal(r.pendant.status(), PendantStatus.LATCHED);
    const seen = led.slice(-50);
    ok(seen.includes(0) && seen.includes(1), 'blinking while latched');
    equal(ledLevel(LED_PATTERNS[PendantStatus.LATCHED]!, 0), 1);
    equal(ledLevel(LED_PATTERNS[PendantStatus.LATCHED]!, 125), 0);
  });

  it('reads the link’s congestion level with the hub’s detector: clear on a clear air, congested on one losing 35 % without MAC retries', async () => {
    for (const loss of [0, 0.35]) {
      const r = await ready({ loss, retries: 0, seed: 4 });
      r.press(r.settings.pins.enable);
      await r.runFor(60);
      r.stick(0, 0.2);
      let congested = 0;
      let statusCongested = 0;
      let hubCongested = 0;
      let hubHeard = 0;
      for (let i = 0; i < 30; i++) {
        await r.runFor(100);
        if (r.connector.level() >= 1) congested++;
        if (r.pendant.status() === PendantStatus.CONGESTED) statusCongested++;
        const hub = r.pendant.client.linkLevel;
        if (hub >= 0) hubHeard++;
        // What the PONG said is the level the hub's own table reads this link at.
        if (hub >= 0) equal(hub, r.binding.linkOf(PENDANT_MAC)!.level, 'the PONG’s level is the hub’s');
        if (hub >= 1) hubCongested++;
        ok(r.pendant.level() >= hub, 'the level shown is never below the hub’s');
      }
      ok(hubHeard > 0, 'the hub reported its level for the link in a PONG');
      if (loss === 0) {
        equal(congested, 0, 'a clear air reads level 0');
        equal(hubCongested, 0, 'and the hub reads it clear too');
        equal(r.connector.current!.lossRate(), 0);
      } else {
        ok(congested > 0, 'a lossy air reads congested');
        ok(statusCongested > 0, 'and the LED says so');
        ok(r.connector.current!.lossRate() > 0.1);
      }
    }
  });
});

describe('pendant: the Linux simulator target’s script', () => {
  it('takes control, drives, stops, clears in sequence, arms and drives again, as its console says', async () => {
    const r = pendantRig({ loss: 0.1 });
    const lines: string[] = [];
    const demo = new DemoRunner(r, (l) => lines.push(l));
    r.pendant.start();
    for (let i = 0; i < 800 && !demo.done; i++) {
      await r.runFor(10);
      demo.advance();
    }
    ok(demo.done, lines.join('\n'));
    ok(lines.some((l) => / hub latched /.test(l)), 'the stop latched the hub');
    ok(lines.some((l) => / hub clear armed/.test(l) && l.includes('status 3')), 'cleared, armed, owner again');
    const p = r.pendant.counters;
    equal(p.failures, 0);
    equal(p.clearsRefused + p.armsRefused, 0, 'the script follows the sequence');
    ok(p.zeros > 0 && p.estops >= 1);
    deepEqual(r.robot.commands[r.robot.commands.length - 1]!.slice(1), [0, 0], 'it ends stopped');
    ok(r.robot.commands.some((s, i) => i > 0 && (s[1] as number) > 0 && (s[0] as number) > 4700 + 1000), 'moving again after the arm');
  });
});

describe('pendant: inputs and configuration', () => {
  it('the joystick axis: centre and dead zone read 0, full travel ±1, continuous at the dead zone’s edge', () => {
    let v = 2048;
    const axis = new Axis({ read: () => v, resolution: 12, close: () => undefined }, -1, 0.1, false);
    equal(axis.read(), 0);
    v = 2047.5 + 0.1 * 2047.5;
    equal(axis.read(), 0);
    v = 4095;
    equal(axis.read(), 1);
    v = 0;
    equal(axis.read(), -1);
    v = 2047.5 + 0.11 * 2047.5;
    ok(axis.read() > 0 && axis.read() < 0.02);
  });

  it('the configuration: defaults, and every problem listed at once', () => {
    const s = resolvePendantConfig({ hub_mac: '24:6f:28:00:00:01' });
    equal(s.hubMac, 0x24_6f_28_00_00_01);
    equal(s.lmk, null);
    equal(s.stopClosedLevel, 0);
    equal(s.cmdRateHz, 20);
    let problems: readonly string[] = [];
    try {
      resolvePendantConfig({ hub_mac: 'nope', lmk: 'zz', stop_pin: 99, enable_pin: 4, take_pin: 4, dead_zone: 0.9 });
    } catch (e) {
      ok(e instanceof PendantConfigError);
      problems = (e as PendantConfigError).problems;
    }
    ok(problems.length >= 5, problems.join(' | '));
    ok(problems.some((x) => x.startsWith('pins:')), 'two inputs on pin 4');
  });
});
