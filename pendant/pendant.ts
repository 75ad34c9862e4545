// The handheld pendant (docs/pendant.md): a stop button, an enable (deadman) button, a two-axis
// joystick and three buttons (take/release control, arm, clear) driving the hub through the
// client library's core (client/core.ts) over any transport; on the device, ESP-NOW
// (client/espnow.ts). Platform-free: the pins come in as ECMA-419 constructors (inputs.ts), time
// as a ClientClock, the transport as a factory; the device entry (pendant/main.ts) calls `tick`
// once per control period and `stopEdge` from the stop input's interrupt.
//
// Safety, as the hub's own rules put it (docs/protocol.md §11.2):
//   - The stop button is normally closed: an open contact or a cut wire reads pressed. A press
//     writes ESTOP through the transport's write-ahead path at once and again every
//     `estopRepeatMs` until an ESTOP frame of kind ASSERT comes back from the hub (its latch
//     seen). While the button stays down, a clear announced by the hub is answered by another
//     ESTOP: the button is a source that still asserts.
//   - cmd_vel goes out only while the enable button is held: at the grant's rate, the joystick
//     read through a dead zone. Its release sends zero commands at once (`zeroTail` of them) and
//     then nothing. Enabling with the stick off centre, a latch, a clear, an arm and a refusal
//     all wait for the stick to come back to the centre before any command moves.
//   - A command the hub refuses (NOT_OWNER, NOT_ARMED, ESTOP_LATCHED) stops the stream until the
//     enable button is released and pressed again: one refusal per press, shown on the LED.
//   - Clear needs the stop button up and the enable button held; it never restarts motion (the
//     hub comes back disarmed): ARM is its own press, with the stop up and the stick centred.

import type { CatalogIndex } from '../catalog/index.js';
import type { HubClientError, HubClientOptions } from '../client/core.js';
import { HubClient } from '../client/core.js';
import type { ClientClock, RandomSource, TransportFactory } from '../client/transport.js';
import { EstopKind, type EstopFrame } from '../hub/estop-frame.js';
import { FrameType, type NackFrame } from '../hub/frames.js';
import { Nack } from '../hub/nack.js';
import { Axis, Button, inputMode, type DigitalPin, type PendantIo } from './inputs.js';
import { ledLevel, LED_PATTERNS, linkPattern, PendantStatus, type PendantStatusCode } from './led.js';
import type { PendantSettings } from './settings.js';

export class PendantCounters {
  /** ESTOP frames handed to the client core (the first of each press and its repeats). */
  estops = 0;
  /** Presses of the stop button. */
  stopPresses = 0;
  /** cmd_vel samples sent (zeros included). */
  commands = 0;
  /** Zero commands sent after the enable was released (or motion otherwise stopped). */
  zeros = 0;
  /** cmd_vel bundles the hub refused (NACK), and the last code. */
  refusals = 0;
  lastRefusal = 0;
  /** Presses refused by the pendant itself: clear without the stop up and the enable held; arm out of sequence. */
  clearsRefused = 0;
  armsRefused = 0;
  /** Requests sent: take, release, arm, clear; and those that failed (NACK, timeout). */
  requests = 0;
  failures = 0;
}

export interface PendantOptions {
  readonly io: PendantIo;
  readonly settings: PendantSettings;
  readonly clock: ClientClock;
  readonly transport: TransportFactory;
  readonly catalog: CatalogIndex;
  readonly random?: RandomSource;
  /** The hub's congestion level for this pendant's link (client/espnow.ts EspNowConnector.level). */
  readonly linkLevel?: () => number;
  /** Overrides of the client core's options (timeouts, for a test). */
  readonly client?: Partial<Omit<HubClientOptions, 'transport' | 'clock' | 'catalog'>>;
}

export class Pendant {
  readonly client: HubClient;
  readonly counters = new PendantCounters();
  readonly cmdVel: number;
  private readonly s: PendantSettings;
  private readonly clock: ClientClock;
  private readonly stopPin: DigitalPin;
  readonly enable: Button;
  readonly takeButton: Button;
  readonly armButton: Button;
  readonly clearButton: Button;
  private readonly x: Axis;
  private readonly y: Axis;
  private readonly led: DigitalPin | null;
  private readonly linkLed: DigitalPin | null;
  private readonly linkLevel: () => number;
  /** Debounced: the stop contact is open (pressed, or its wire cut). */
  stopDown = false;
  private stopUpSince = -1;
  /** An ESTOP is being repeated until the hub's latch is seen. */
  estopWanted = false;
  private lastEstopAt = -Infinity;
  /** Motion waits for the stick to come back to the centre. */
  needNeutral = true;
  /** The hub refused a command: nothing more until the enable is pressed again. */
  refusedHold = false;
  private wasEnabled = false;
  private driving = false;
  private tail = 0;
  private nextDue = -Infinity;
  private readonly sample = [0, 0, 0];
  private readonly samples = [this.sample];
  /** The last command sent: [v, w]. */
  readonly last = new Float64Array(2);

  constructor(o: PendantOptions) {
    const s = o.settings;
    this.s = s;
    this.clock = o.clock;
    this.linkLevel = o.linkLevel ?? (() => 0);
    const cmd = o.catalog.byName('cmd_vel');
    const owner = o.catalog.byName('control-owner');
    if (!cmd || !owner) throw new Error('pendant: the catalog has no cmd_vel or control-owner channel');
    this.cmdVel = cmd.id;
    const io = o.io;
    const D = io.Digital;
    const p = s.pins;
    const stopMode = inputMode(io, s.stopPull);
    this.stopPin = new D({
      pin: p.stop,
      mode: stopMode,
      edge: D.Rising | D.Falling,
      onReadable: () => this.stopEdge(),
    });
    const mode = inputMode(io, s.buttonPull);
    // The enable's release is the safe way: it counts at the first reading, never debounced.
    this.enable = new Button(new D({ pin: p.enable, mode }), s.buttonLevel, 0);
    this.takeButton = new Button(new D({ pin: p.take, mode }), s.buttonLevel, s.debounceMs);
    this.armButton = new Button(new D({ pin: p.arm, mode }), s.buttonLevel, s.debounceMs);
    this.clearButton = new Button(new D({ pin: p.clear, mode }), s.buttonLevel, s.debounceMs);
    this.x = new Axis(new io.Analog({ pin: p.joyX, resolution: s.adcResolution }), s.joyCenter, s.deadZone, s.invertX);
    this.y = new Axis(new io.Analog({ pin: p.joyY, resolution: s.adcResolution }), s.joyCenter, s.deadZone, s.invertY);
    this.led = p.led >= 0 ? new D({ pin: p.led, mode: D.Output }) : null;
    this.linkLed = p.linkLed >= 0 ? new D({ pin: p.linkLed, mode: D.Output }) : null;
    this.client = new HubClient({
      ...o.client,
      name: s.name,
      ...(s.credential ? { credential: s.credential } : {}),
      publications: [{ channelId: cmd.id, wishedRateHz: s.cmdRateHz, burst: 2 }],
      subscriptions: [{ channelId: owner.id, wishedRateHz: owner.maxRateHz }],
      transport: o.transport,
      clock: o.clock,
      catalog: o.catalog,
      ...(o.random ? { random: o.random } : {}),
      onEstop: (f) => this.onEstop(f),
      onNack: (f) => this.onNack(f),
    });
  }

  /**
   * Opens the session (and keeps it: the core reconnects and resumes on its own). A stop already
   * open at power-up asserts at once: the core writes it first thing on the transport.
   */
  start(): void {
    this.client.connect().catch(() => undefined);
    this.sampleStop(this.clock.now());
  }

  close(): void {
    this.client.close();
  }

  /** The stop input's edge (its interrupt, `onReadable`): a press asserts now, not at the next period. */
  stopEdge(): void {
    this.sampleStop(this.clock.now());
  }

  private sampleStop(now: number): void {
    if (this.stopPin.read() !== this.s.stopClosedLevel) {
      this.stopUpSince = -1;
      if (!this.stopDown) {
        this.stopDown = true;
        this.counters.stopPresses++;
        this.halt();
        this.assertStop(now);
      }
    } else if (this.stopDown) {
      if (this.stopUpSince < 0) this.stopUpSince = now;
      if (now - this.stopUpSince >= this.s.debounceMs) {
        this.stopDown = false;
        this.stopUpSince = -1;
      }
    }
  }

  private assertStop(now: number): void {
    this.estopWanted = true;
    this.lastEstopAt = now;
    this.counters.estops++;
    // Written ahead of everything the transport holds; owed to the next transport when none is open.
    this.client.estop();
  }

  private onEstop(f: EstopFrame): void {
    if (f.kind === EstopKind.ASSERT) {
      // The latch is seen: the repeats end. Motion waits for a centred stick after the clear.
      this.estopWanted = false;
      this.halt();
    } else if (this.stopDown) {
      // Cleared while the button is still down: it still asserts.
      this.assertStop(this.clock.now());
    }
  }

  private onNack(f: NackFrame): void {
    if (f.frameType !== FrameType.BUNDLE || f.channelId !== this.cmdVel || f.code === Nack.RATE_LIMITED) return;
    this.counters.refusals++;
    this.counters.lastRefusal = f.code;
    this.refusedHold = true;
    this.driving = false;
    this.tail = 0;
  }

  // Motion stops here: no more commands until the stick is centred again.
  private halt(): void {
    this.needNeutral = true;
    if (this.driving) this.tail = this.s.zeroTail;
    this.driving = false;
  }

  /** One control period: inputs, the ESTOP repeat, the buttons, cmd_vel, the LEDs. */
  tick(): void {
    const now = this.clock.now();
    const c = this.client;
    this.sampleStop(now);
    if (this.estopWanted && now - this.lastEstopAt >= this.s.estopRepeatMs) this.assertStop(now);
    const enabled = this.enable.sample(now);
    this.takeButton.sample(now);
    this.armButton.sample(now);
    this.clearButton.sample(now);
    const vx = this.x.read();
    const vy = this.y.read();
    const neutral = vx === 0 && vy === 0;
    if (enabled && !this.wasEnabled) {
      // A fresh press of the enable: a refusal is forgotten; a stick off centre must come back first.
      this.refusedHold = false;
      if (!neutral) this.needNeutral = true;
    }
    if (!enabled && this.wasEnabled) this.halt();
    this.wasEnabled = enabled;
    if (neutral) this.needNeutral = false;
    this.buttons(enabled, neutral);

    const active = c.state === 'active';
    const grant = c.publication(this.cmdVel);
    const rate = active && grant ? grant.grant.grantedRateHz : 0;
    const may = enabled && !this.stopDown && !c.latched && !this.needNeutral && !this.refusedHold;
    if (may && rate > 0) {
      if (!this.driving) this.nextDue = now;
      this.driving = true;
      if (now >= this.nextDue) this.command(now, vy * this.s.vMax, -vx * this.s.wMax, rate);
    } else if (this.tail > 0) {
      // The zeros after motion stopped: the first at once, the rest at the grant's rate.
      if (!active || rate <= 0 || c.latched) this.tail = 0;
      else if (now >= this.nextDue || this.tail === this.s.zeroTail) {
        this.tail--;
        this.counters.zeros++;
        this.command(now, 0, 0, rate);
      }
    }
    this.lights(now, active);
  }

  private command(now: number, v: number, w: number, rate: number): void {
    const period = 1000 / rate;
    const s = this.sample;
    s[0] = Math.floor(now);
    s[1] = v === 0 ? 0 : v;
    s[2] = w === 0 ? 0 : w;
    if (this.client.send(this.cmdVel, this.samples) > 0) {
      this.counters.commands++;
      this.last[0] = s[1];
      this.last[1] = s[2];
    }
    // Keep the grant's phase across periods, never more than one period behind.
    const next = this.nextDue + period;
    this.nextDue = next > now - period ? next : now;
  }

  private buttons(enabled: boolean, neutral: boolean): void {
    const c = this.client;
    const active = c.state === 'active';
    if (this.takeButton.take() && active) {
      if (c.ownsControl) {
        this.halt();
        this.request(c.releaseControl());
      } else this.request(c.takeControl());
    }
    if (this.clearButton.take()) {
      // The documented sequence: stop up, enable held. The hub comes back disarmed.
      if (!this.stopDown && enabled && active) {
        this.halt();
        this.request(c.clearEstop());
      } else this.counters.clearsRefused++;
    }
    if (this.armButton.take()) {
      if (!this.stopDown && !c.latched && neutral && active && c.ownsControl) {
        this.halt();
        this.request(c.arm());
      } else this.counters.armsRefused++;
    }
  }

  private request(p: Promise<unknown>): void {
    this.counters.requests++;
    p.catch((e: HubClientError) => {
      void e;
      this.counters.failures++;
    });
  }

  /**
   * The link level shown: the higher of the level the hub reports for this session's link (its
   * last PONG, §5.14 `level`: the one its shedding table reads) and what the pendant's own radio
   * sees (the loss detector over its acknowledgements and send status), which also covers the
   * time before the first PONG and a hub that has stopped answering.
   */
  level(): number {
    const hub = this.client.linkLevel;
    const own = this.linkLevel();
    return hub > own ? hub : own;
  }

  /** What the status LED shows now. */
  status(): PendantStatusCode {
    const c = this.client;
    if (this.stopDown || c.latched) return PendantStatus.LATCHED;
    if (c.state !== 'active') return PendantStatus.DISCONNECTED;
    if (this.level() >= 1) return PendantStatus.CONGESTED;
    if (c.ownsControl) return PendantStatus.OWNER;
    const grant = c.publication(this.cmdVel);
    return grant && grant.grant.grantedRateHz > 0 ? PendantStatus.GRANTED : PendantStatus.CONNECTED;
  }

  private lights(now: number, active: boolean): void {
    if (this.led) this.led.write(ledLevel(LED_PATTERNS[this.status()] as number, now));
    if (this.linkLed) this.linkLed.write(ledLevel(linkPattern(active, this.level()), now));
  }
}
