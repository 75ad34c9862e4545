// One attached transport as the core sees it (docs/architecture.md "The send contract"): the
// LinkSink its binding feeds every frame and its loss through, and what the transport carries
// before a session takes it (§6.1 the handshake deadline and the pre-HELLO byte budget, §12 the
// malformed-frame count and the NACK throttle, which the session it opens takes over).

import { MALFORMED_CLOSE_PER_S, PRE_SESSION_BYTES_DEPTH, PRE_SESSION_BYTES_PER_S, STREAM_INGRESS_OVERAGE_NACK_PER_S } from './constants.js';
import type { Hub } from './hub.js';
import { NackThrottle, TokenBucket, WindowCounter } from './limits.js';
import type { Link, LinkSink } from './ports.js';
import type { Session } from './session.js';

/** One attached transport, and the LinkSink its binding feeds. */
export class Conn implements LinkSink {
  session: Session | null = null;
  closed = false;
  /**
   * §12: malformed frames before HELLO. The session this transport opens takes the counter
   * over, restarted, rather than a counter of its own (a resumed session keeps the one it has).
   */
  readonly malformed: WindowCounter;
  /** Frames handed to this transport before a session took it (the session's count starts there). */
  sent = 0;
  /**
   * INGRESS_BUDGET answers before HELLO, throttled like a session's (no NACK flood). The session
   * this transport opens takes it over, restarted, as it does `malformed`.
   */
  readonly nackThrottle: NackThrottle;
  /** §6.1: when the transport was attached, and the bytes it may still send before HELLO (null once it has a session). */
  readonly attachedAt: number;
  preSession: TokenBucket | null;

  constructor(
    private readonly hub: Hub,
    readonly link: Link,
    now: number,
  ) {
    this.attachedAt = now;
    // The two counters' timestamps share one array (on XS each typed array costs heap slots).
    const times = new Float64Array(MALFORMED_CLOSE_PER_S + 1 + STREAM_INGRESS_OVERAGE_NACK_PER_S);
    this.malformed = new WindowCounter(MALFORMED_CLOSE_PER_S + 1, undefined, times, 0);
    this.nackThrottle = new NackThrottle(STREAM_INGRESS_OVERAGE_NACK_PER_S, undefined, times, MALFORMED_CLOSE_PER_S + 1);
    this.preSession = new TokenBucket(PRE_SESSION_BYTES_PER_S, PRE_SESSION_BYTES_DEPTH, now);
  }

  /** The transport carries `s` from now on (a HELLO opened or resumed it): its pre-HELLO budget is done with. */
  bind(s: Session): void {
    this.session = s;
    this.preSession = null;
  }

  frame(bytes: Uint8Array, start: number, end: number): void {
    const o = this.hub.observer;
    if (o !== null) o.entered();
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
