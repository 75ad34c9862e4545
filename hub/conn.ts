// One attached transport as the core sees it (docs/architecture.md "The send contract"): the
// LinkSink its binding feeds every frame and its loss through, and what the transport carries
// before a session takes it (§6.1 the handshake deadline and the pre-HELLO byte budget, §12 the
// malformed-frame count and the NACK throttle, which the session it opens restarts as its own).

import type { Hub } from './hub.js';
import type { Guard } from './limits.js';
import type { Link, LinkSink } from './ports.js';
import type { Session } from './session.js';

/** One attached transport, and the LinkSink its binding feeds. */
export class Conn implements LinkSink {
  session: Session | null = null;
  closed = false;
  /** Frames handed to this transport before a session took it (the session's count starts there). */
  sent = 0;
  /**
   * §12 and §6.1 before HELLO: the malformed-frame counter, the INGRESS_BUDGET answers' throttle
   * (no NACK flood) and the bytes the transport may still send (sessions.ts connGuard). The
   * session this transport opens starts counters of its own, as this one's would be restarted
   * (a resumed session keeps the ones it has).
   */
  readonly guard: Guard;

  constructor(
    private readonly hub: Hub,
    readonly link: Link,
    now: number,
  ) {
    this.guard = hub.keeper.connGuard(now);
  }

  /** §6.1: when the transport was attached; read while it waits for its HELLO (its guard's row may serve another transport after). */
  get attachedAt(): number {
    return this.guard.madeAt;
  }

  /** §12: malformed frames before HELLO. */
  get malformed(): Guard {
    return this.guard;
  }

  /** INGRESS_BUDGET answers before HELLO, throttled like a session's. */
  get nackThrottle(): Guard {
    return this.guard;
  }

  /** §6.1: the bytes the transport may still send before HELLO (null once it has a session). */
  get preSession(): Guard | null {
    return this.session === null ? this.guard : null;
  }

  /** The transport carries `s` from now on (a HELLO opened or resumed it): its pre-HELLO budget is done with. */
  bind(s: Session): void {
    this.session = s;
  }

  frame(bytes: Uint8Array, start: number, end: number): void {
    // No local: on XS one costs at every call about what a few field reads do.
    if (this.hub.observer !== null) this.hub.observer.entered();
    this.hub.ingress.frame(this, bytes, start, end);
  }

  lost(): void {
    const o = this.hub.observer;
    if (o !== null) o.entered();
    this.hub.onLost(this);
  }

  levelChanged(): void {
    // Noted only: the tick re-reads the level (§10.3 re-grant); the table reads it per push.
    this.hub.due(-Infinity);
  }
}
