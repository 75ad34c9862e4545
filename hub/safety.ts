// The emergency stop (§10.4, §11.2), the deadman (§11) and who may move the robot (§9): the
// latch, who may assert and who may clear it, arming, and how every link hears of it; the
// INTENTs, each answered once, with the control ownership they move and the gate a motion intent
// passes (the owner, no latch, armed). The ESTOP frame goes ahead of every queue on every
// attached transport the moment a fresh assertion latches; the robot is stopped by the latch
// itself, before any link hears of it, and a clear never restarts it (the control owner's arm
// intent does, §11.2).

import type { ChannelInfo } from '../catalog/index.js';
import { ChannelClass, Tier } from '../catalog/schema.js';
import { ESTOP_REANNOUNCE_MS } from './constants.js';
import { Deadman, type EstopLatch } from './estop.js';
import { ESTOP_FRAME_BYTES, EstopSource } from './estop-frame.js';
import { FrameType } from './frame-types.js';
import type { Hub } from './hub.js';
import { Nack } from './nack.js';
import { SessionState, type Session } from './session.js';

/** The deadman's bit in the latch's mask of asserting sources (EstopLatch.assertingSources). */
const DEADMAN_BIT = 1 << EstopSource.DEADMAN;

// safety-events `kind` (catalog comment): what happened to the latch.
export const SafetyEventKind = Object.freeze({ LATCH: 1, CLEAR: 2 } as const);

export class Safety {
  /**
   * §11.2 arming: false from any latch until the control owner's accepted `arm` intent while
   * unlatched, so a clear never restarts the robot. True on a boot that comes up unlatched.
   */
  armedFlag = true;
  buttonHeld = false;
  readonly deadman: Deadman;
  private readonly latch: EstopLatch;
  private readonly frame: Uint8Array;
  /** When the latched state was last announced to every link; -Infinity while it was not. */
  private announcedAt = -Infinity;
  /** An assertion arrived while latched and inside ESTOP_REANNOUNCE_MS: the tick announces it. */
  private owed = false;
  /** The hub's own samples: safety (3 values) and control-owner (1). */
  readonly scratch: Float64Array;

  constructor(
    private readonly hub: Hub,
    latch: EstopLatch,
    deadmanMs: number,
  ) {
    this.latch = latch;
    this.deadman = new Deadman(deadmanMs);
    const c = hub.catalog;
    const safety = c.byName('safety');
    const owner = c.byName('control-owner');
    // The samples' numbers and the ESTOP frame share one buffer (on XS a buffer costs heap slots of its own).
    const n = Math.max(3, safety ? safety.fieldCount : 0, owner ? owner.fieldCount : 0);
    const buffer = new ArrayBuffer(n * 8 + ESTOP_FRAME_BYTES);
    this.scratch = new Float64Array(buffer, 0, n);
    this.frame = new Uint8Array(buffer, n * 8, ESTOP_FRAME_BYTES);
    if (latch.latched) this.armedFlag = false;
  }

  /** §11.2: whether motion is accepted from the owner (false from any latch until the owner's `arm`). */
  get armed(): boolean {
    return this.armedFlag && !this.latch.latched;
  }

  /**
   * Asserts the latch from any source: the robot stops, every link hears it ahead of all
   * queues. With `seq` the assertion is (origin, seq) and a repeat counts once; without it
   * the hub originates it (watchdog, robot) and it is always new.
   */
  assert(source: number, origin = 0, seq = -1): void {
    const fresh = seq < 0 ? this.assertLocal(source) : this.latch.assert(source, origin, seq);
    if (fresh) this.announce(true);
  }

  /** An assertion the hub originates: origin 0 and the hub's next ESTOP sequence, so always new. */
  assertLocal(source: number): boolean {
    return this.latch.assert(source, 0, (this.latch.seq + 1) & 0xffff);
  }

  /** The hub's own button: held means asserting (a clear is refused while held). */
  setButton(held: boolean): void {
    this.buttonHeld = held;
    const was = this.latch.isAsserting(EstopSource.HUB_BUTTON);
    this.latch.setSourceAsserting(EstopSource.HUB_BUTTON, held);
    // The press latches; holding only keeps the latch from being cleared.
    if (held && !was && this.assertLocal(EstopSource.HUB_BUTTON)) this.announce(true);
  }

  /**
   * §11 clear: the control owner, at operator tier, when no source asserts. A clear
   * that names an ESTOP sequence (key 39) other than the latch's current one was made for an
   * older stop than the one in force and is refused. With nothing latched the answer is the
   * current (CLEARED) ESTOP frame, written ahead to the asker alone.
   */
  clearFrom(s: Session, estopSeq: number | undefined): void {
    const hub = this.hub;
    if (!this.latch.latched) {
      this.toSession(s);
      return;
    }
    if (s.tier < Tier.operator) {
      hub.egress.nack(s, Nack.FORBIDDEN, FrameType.ESTOP_CLEAR);
      return;
    }
    if (hub.owner !== s) {
      hub.egress.nack(s, Nack.NOT_OWNER, FrameType.ESTOP_CLEAR);
      return;
    }
    if ((estopSeq !== undefined && estopSeq !== this.latch.originSeq) || !this.latch.clear()) {
      hub.egress.nack(s, Nack.ESTOP_LATCHED, FrameType.ESTOP_CLEAR);
      return;
    }
    hub.log.event('estop-clear', s.id);
    this.announce(false);
  }

  /** The latch's current state, ahead of every queue on every attached transport (§10.4, §11.2). */
  announce(asserted: boolean, fresh = true): void {
    const hub = this.hub;
    // §11.2: a latch disarms, and a clear leaves the hub disarmed until the owner's arm.
    this.armedFlag = false;
    if (asserted) {
      if (fresh) hub.egress.counters.estops++;
      // §11.2: the robot is stopped already (the latch told it); while the links have heard the
      // latch within ESTOP_REANNOUNCE_MS a further assertion is owed, not written to every queue.
      const now = hub.clock.now();
      if (now - this.announcedAt < ESTOP_REANNOUNCE_MS) {
        this.owed = true;
        hub.due(this.announcedAt + ESTOP_REANNOUNCE_MS);
        return;
      }
      this.announcedAt = now;
      this.owed = false;
      hub.log.event('estop', this.latch.source, this.latch.origin);
    } else {
      this.announcedAt = -Infinity;
      this.owed = false;
    }
    this.latch.encode(this.frame, 0);
    const conns = hub.conns;
    for (let i = 0; i < conns.length; i++) hub.egress.estop(conns[i] as (typeof conns)[number], this.frame);
    this.announceSafety();
  }

  /** The latch's current ESTOP frame, ahead of every queue, to one session alone. */
  toSession(s: Session): void {
    if (!s.link) return;
    this.latch.encode(this.frame, 0);
    s.link.writeAhead(this.frame);
    s.sentFrames = (s.sentFrames + 1) >>> 0;
  }

  /** The time-driven part: an owed re-announcement, and the deadman (§11). Returns when it is next due. */
  tick(now: number): number {
    let next = Infinity;
    if (this.owed && this.latch.latched) {
      const at = this.announcedAt + ESTOP_REANNOUNCE_MS;
      if (now >= at) this.announce(true, false);
      else next = at;
    }
    // §11: the control owner must be heard from within deadman_ms.
    if (this.hub.owner) {
      if (this.deadman.expired(now)) {
        if (!this.latch.isAsserting(EstopSource.DEADMAN)) {
          this.latch.setSourceAsserting(EstopSource.DEADMAN, true);
          if (this.assertLocal(EstopSource.DEADMAN)) this.announce(true);
        }
      } else {
        const at = this.deadman.deadline();
        if (at < next) next = at;
      }
    }
    return next;
  }

  /** Any frame from the control owner: the deadman is fed and its hold released. */
  ownerHeard(now: number): void {
    this.deadman.heard(now);
    // The deadman's hold ends: usually there is none to end (this runs for every frame of the owner's).
    if ((this.latch.assertingSources & DEADMAN_BIT) !== 0) this.latch.setSourceAsserting(EstopSource.DEADMAN, false);
  }

  /** A new owner (or none): the deadman starts (or stops) and the old owner's hold ends; the latch stays. */
  ownerChanged(owner: Session | null, now: number): void {
    if (owner) {
      this.deadman.arm(now);
      this.hub.due(this.deadman.deadline());
    } else this.deadman.disarm();
    this.latch.setSourceAsserting(EstopSource.DEADMAN, false);
  }

  private announceSafety(): void {
    const hub = this.hub;
    const latched = this.latch.latched;
    const seq = latched ? this.latch.originSeq : this.latch.seq;
    const safety = hub.catalog.byName('safety');
    if (safety) {
      const v = this.scratch;
      v[0] = latched ? 1 : 0;
      v[1] = this.latch.source;
      v[2] = seq;
      hub.publishSample(safety.id, hub.clock.now(), v, safety.fieldCount);
    }
    const events = hub.catalog.byName('safety-events');
    if (events) {
      const kind = latched ? SafetyEventKind.LATCH : SafetyEventKind.CLEAR;
      hub.publishEvent(events.id, hub.clock.now(), [kind, this.latch.source, seq], latched ? 'estop' : 'estop-clear');
    }
  }

  // ------------------------------------------------------------------ intents, ownership (§9)

  /**
   * Every INTENT is answered once: ECHO when the hub carried it out (the robot's result
   * in key 20), NACK with its request_id when a hub rule refused it. RATE_LIMITED answers are
   * throttled (§12), so a flood beyond the limit is partly unanswered.
   */
  intent(s: Session, channelId: number, requestId: number, args: readonly (number | string)[], now: number): void {
    const hub = this.hub;
    const ch = hub.catalog.byId(channelId);
    const egress = hub.egress;
    if (!ch || ch.cls !== ChannelClass.INTENT) {
      egress.nack(s, Nack.UNKNOWN_CHANNEL, FrameType.INTENT, channelId, requestId);
      return;
    }
    if (!s.intentBucket.take(1, now)) {
      hub.ingress.rateLimited(s, FrameType.INTENT, channelId, requestId, s.intentBucket.msUntil(1, now), now);
      return;
    }
    if (ch.publishTier < 0 || s.tier < ch.publishTier) {
      egress.nack(s, Nack.FORBIDDEN, FrameType.INTENT, channelId, requestId);
      return;
    }
    let refusal = 0;
    let result = 0;
    if (ch.name === 'take_control') {
      refusal = this.takeControl(s);
    } else if (ch.name === 'release_control') {
      if (hub.owner === s) this.setOwner(null);
      else refusal = Nack.NOT_OWNER;
    } else if (ch.motion && this.latch.latched) {
      refusal = Nack.ESTOP_LATCHED;
    } else if (ch.motion && hub.owner !== s) {
      refusal = Nack.NOT_OWNER;
    } else if (ch.name === 'arm') {
      // §11.2: the owner's arm, unlatched, is what lets motion resume after a stop.
      // A robot that refuses its arm (its own safety chain open) leaves the hub disarmed.
      result = hub.robot.intent(channelId, args);
      if (result === 0) this.armedFlag = true;
    } else if (ch.motion && !this.armedFlag) {
      refusal = Nack.NOT_ARMED;
    } else {
      result = hub.robot.intent(channelId, args);
      // The owner's disarm disarms the hub too; another operator's disarm reaches the robot only.
      if (ch.name === 'disarm' && hub.owner === s) this.armedFlag = false;
    }
    if (refusal !== 0) egress.nack(s, refusal, FrameType.INTENT, channelId, requestId);
    else {
      egress.control(s, { type: FrameType.ECHO, channelId, requestId, result: result >= 0 && result <= 0xff ? result : 0xff });
      // From the INTENT's arrival to its ECHO (the robot's own time included).
      const at = hub.clock.now();
      hub.health.recordIntentEcho(at - now, at);
    }
  }

  private takeControl(s: Session): number {
    const hub = this.hub;
    if (hub.owner === s) return 0;
    if (hub.owner && hub.owner.state === SessionState.ACTIVE) return Nack.NOT_OWNER;
    this.setOwner(s);
    return 0;
  }

  /** The control owner is now `s` (null: nobody): the deadman follows it, and it is announced. */
  setOwner(s: Session | null): void {
    const hub = this.hub;
    hub.owner = s;
    this.ownerChanged(s, hub.clock.now());
    // §9: ownership is announced on the critical `control-owner` channel.
    const ch: ChannelInfo | undefined = hub.catalog.byName('control-owner');
    if (ch) {
      const v = this.scratch;
      v[0] = s ? s.id : 0;
      hub.publishSample(ch.id, hub.clock.now(), v, 1);
    }
  }
}
