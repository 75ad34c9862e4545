// The ingress layer (docs/architecture.md "Layers"): every frame a binding hands the core goes
// through here once. In order: the 12-byte ESTOP frame (never metered, never refused for want of
// a session); the ingress governor's byte budgets and, before HELLO, the transport's own byte
// bucket; the frame's size; decoding (the canonical ACK, PING and BUNDLE read in place without
// allocating, hub/fast-frames.ts, everything else by decodeFrame); its direction; and the
// typed frame dispatched to the hub. Malformed frames are answered NACK with a stable code and
// counted toward the persistent-misbehaviour close (§12); nothing here can touch another session.
// BUNDLE's §10.5 publication buckets live here too: they meter what clients push in.

import { ChannelClass, Direction } from '../catalog/schema.js';
import { CborError } from './cbor.js';
import { MALFORMED_CLOSE_PER_S } from './constants.js';
import { ESTOP_MAGIC, ESTOP_NACK_FRAME_TYPE, EstopFrameError, EstopKind, EstopSource, decodeEstop, type EstopFrame } from './estop-frame.js';
import { Fast, FastReader } from './fast-reader.js';
import { catalogChunk, sendHealth } from './chunks.js';
import type { Conn } from './conn.js';
import { FrameDecoder } from './frame-decode.js';
import { FRAME_DIRECTION, FrameError, FrameType, FROM_CLIENT, GoodbyeReason, MAX_FRAME_BYTES, peekFrameType, type Frame } from './frame-types.js';
import { GovernorVerdict } from './governor.js';
import type { Hub } from './hub.js';
import type { TokenBucket } from './limits.js';
import { Nack } from './nack.js';
import type { FrameReader, SampleBlock } from './ports.js';
import type { Publication, Session } from './session.js';

/**
 * A BUNDLE decoded by decodeFrame, as the robot port receives samples; null when the samples are
 * not all of one length. Allocates, and keeps nothing: only a BUNDLE not in canonical form comes
 * here (the canonical form is read in place).
 */
function slowBlock(samples: readonly (readonly number[])[]): SampleBlock | null {
  const n = samples.length;
  const w = n > 0 ? (samples[0] as readonly number[]).length : 0;
  const numbers = new Float64Array(n * w);
  for (let i = 0; i < n; i++) {
    const s = samples[i] as readonly number[];
    if (s.length !== w) return null;
    for (let j = 0; j < w; j++) numbers[i * w + j] = s[j] as number;
  }
  return { count: n, width: w, numbers };
}

const NONE = Fast.NONE;
const REJECT_SESSION = GovernorVerdict.REJECT_SESSION;

/** Every number after a sample's time is finite (x − x is 0 exactly when x is finite). */
function finiteValues(block: SampleBlock): boolean {
  const numbers = block.numbers;
  const w = block.width;
  for (let i = 0; i < block.count; i++) {
    for (let k = 1; k < w; k++) {
      const x = numbers[i * w + k] as number;
      if (x - x !== 0) return false;
    }
  }
  return true;
}

export class Ingress {
  private readonly fast: FrameReader;
  /** The validating decoder for every frame the fast readers do not take. */
  private readonly decoder = new FrameDecoder();

  constructor(
    private readonly hub: Hub,
    /** HubPorts.frameReader: the device's reader in C; absent, FastReader. */
    frameReader?: (keepWidth: number) => FrameReader,
  ) {
    // The fast reader keeps samples as wide as a publication of the catalog takes: [t, fields…].
    let width = 1;
    for (const ch of hub.catalog.channels) {
      if (ch.direction === Direction.publication && ch.cls !== ChannelClass.INTENT && ch.fieldCount + 1 > width) width = ch.fieldCount + 1;
    }
    this.fast = frameReader !== undefined ? frameReader(width) : new FastReader(width);
  }

  /** One whole frame from a transport (LinkSink.frame). */
  frame(conn: Conn, bytes: Uint8Array, start: number, end: number): void {
    if (conn.closed) return;
    const now = this.hub.clock.now();
    const s = conn.session;
    try {
      if (bytes[start] === ESTOP_MAGIC) {
        this.estopFrame(conn, bytes, start, end - start, now);
        return;
      }
      const fastType = this.fast.read(bytes, start, end);
      // The ingress governor, before any decoding (docs/operations.md "Health, admission and
      // overload"; the ESTOP frame is never metered): a session's BUNDLEs meet both byte
      // budgets, its other frames the session's only; a frame before HELLO has no session and
      // meets the hub's. The control owner's BUNDLEs meet its session's budget only: others'
      // traffic (a sessionless flood included) filling the hub's window must not refuse the
      // motion of the one driving the robot (§12.6 isolation).
      if (fastType !== NONE && s !== null) {
        // A session's ACK, PING or BUNDLE in canonical form, the frames that come all the time:
        // the same steps as any frame's below, each in its shortest form, the frame read in place.
        if (this.hub.governor.admit(s.slot, end - start, now, fastType === FrameType.BUNDLE && s !== this.hub.owner) >= REJECT_SESSION) {
          this.ingressRefused(conn, fastType, now);
          return;
        }
        if (end - start > MAX_FRAME_BYTES) {
          this.malformed(conn, Nack.TOO_LARGE, fastType, now);
          return;
        }
        // Heard (see heard()).
        s.lastHeard = now;
        s.priorValid = false;
        if (s === this.hub.owner) this.hub.safety.ownerHeard(now);
        if (fastType === FrameType.ACK) {
          if (s.link !== null) s.link.acked(this.fast.value);
        } else if (fastType === FrameType.PING) this.hub.egress.pong(conn, this.fast.value, wholeMs(now));
        else this.bundle(conn, s, this.fast.channelId, this.fast.block, this.fast.finite, now);
        return;
      }
      const type = fastType !== NONE ? fastType : s ? peekFrameType(bytes, start, Math.min(end, start + 16)) : -1;
      // Before HELLO a transport meets its own byte bucket, and is closed when it overdraws it;
      // its frames are counted in the hub's window but never refused by it (HELLOs and resumes
      // are not starved by a flood on another transport).
      if (!s && !(conn.preSession as TokenBucket).take(end - start, now)) {
        this.preSessionFlood(conn, bytes, start, end);
        return;
      }
      const hubScope = !!s && type === FrameType.BUNDLE && s !== this.hub.owner;
      if (this.hub.governor.admit(s ? s.slot : -1, end - start, now, hubScope) >= REJECT_SESSION) {
        this.ingressRefused(conn, s ? type : peekFrameType(bytes, start, Math.min(end, start + 16)), now);
        return;
      }
      if (end - start > MAX_FRAME_BYTES) {
        // frame_type (key 17) is 0–255 on the wire: a peeked value outside that is left out.
        const t = peekFrameType(bytes, start, Math.min(end, start + 16));
        this.malformed(conn, Nack.TOO_LARGE, t >= 0 && t <= 0xff ? t : undefined, now);
        return;
      }
      if (fastType !== NONE) {
        // Before HELLO: a PING is answered, anything else is not ready.
        if (fastType === FrameType.PING) this.hub.egress.pong(conn, this.fast.value, wholeMs(now));
        else this.malformed(conn, Nack.NOT_READY, fastType, now);
        return;
      }
      let f: Frame;
      try {
        f = this.decoder.decode(bytes, start, end);
      } catch (e) {
        if (e instanceof FrameError) this.malformed(conn, e.nack, e.frameType, now);
        else if (e instanceof CborError) this.malformed(conn, Nack.MALFORMED, undefined, now);
        else throw e;
        return;
      }
      if (((FRAME_DIRECTION[f.type] ?? 0) & FROM_CLIENT) === 0) {
        this.malformed(conn, Nack.MALFORMED, f.type, now);
        return;
      }
      if (!s) {
        if (f.type === FrameType.HELLO) this.hub.onHello(conn, f, now);
        else if (f.type === FrameType.PING) this.hub.egress.pong(conn, f.t0, wholeMs(now));
        // A transport that talks before HELLO counts towards the same misbehaviour limit.
        else this.malformed(conn, Nack.NOT_READY, f.type, now);
        return;
      }
      this.heard(s, f.type, now);
      this.dispatch(conn, s, f, now);
    } catch (e) {
      // A fault in the core must never take the hub down or touch another session.
      this.hub.log.event('internal-error', s ? s.id : 0);
      if (!conn.closed) this.hub.egress.nackConn(conn, Nack.MALFORMED, undefined);
    }
  }

  /** A session's client spoke: liveness, the spent prior token, the deadman. */
  private heard(s: Session, type: number, now: number): void {
    s.lastHeard = now;
    // A client speaks after HELLO only once it has its WELCOME: the prior token is spent.
    if (type !== FrameType.HELLO) s.priorValid = false;
    if (s === this.hub.owner) this.hub.safety.ownerHeard(now);
  }

  private dispatch(conn: Conn, s: Session, f: Frame, now: number): void {
    const hub = this.hub;
    switch (f.type) {
      case FrameType.HELLO:
        // A second HELLO on an attached session is a client bug, not a resume; it counts
        // toward the persistent-misbehaviour close like any malformed frame (§12.5).
        this.malformed(conn, Nack.MALFORMED, f.type, now);
        return;
      case FrameType.SUBSCRIBE:
        hub.plan.subscribeFrame(s, f.wishes);
        return;
      case FrameType.UNSUBSCRIBE:
        hub.plan.unsubscribeFrame(s, f.channels);
        return;
      case FrameType.PUBLISH:
        hub.plan.publishFrame(s, f.wishes, now);
        return;
      case FrameType.BUNDLE: {
        const block = slowBlock(f.samples);
        if (block) this.bundle(conn, s, f.channelId, block, finiteValues(block), now);
        else this.malformed(conn, Nack.MALFORMED, FrameType.BUNDLE, now, f.channelId);
        return;
      }
      case FrameType.INTENT:
        hub.safety.intent(s, f.channelId, f.requestId, f.args ?? [], now);
        return;
      case FrameType.ACK:
        if ('acked' in f && s.link) s.link.acked(f.acked);
        return;
      case FrameType.PING:
        // §5.14: t1 is an unsigned integer; a host clock with a fraction is floored.
        hub.egress.pong(conn, f.t0, wholeMs(now));
        return;
      case FrameType.PONG:
        return;
      case FrameType.GOODBYE:
        hub.keeper.close(s, GoodbyeReason.NORMAL);
        return;
      case FrameType.ESTOP_CLEAR:
        hub.safety.clearFrom(s, f.estopSeq);
        return;
      case FrameType.CATALOG:
        if (!catalogChunk(hub, s, f.offset ?? 0)) this.malformed(conn, Nack.MALFORMED, FrameType.CATALOG, now);
        return;
      case FrameType.HEALTH:
        // §5.18: the detailed report is the maintainer's.
        sendHealth(hub, s, f.offset ?? 0, now);
        return;
      default:
        hub.egress.nack(s, Nack.MALFORMED, f.type);
    }
  }

  // ------------------------------------------------------------------ refusals (§12)

  /**
   * A frame the ingress governor refused: dropped, answered INGRESS_BUDGET with the time until
   * it would fit, at most as often as RATE_LIMITED (the session's throttle; before HELLO, the
   * transport's), so that a flood is not answered by a flood.
   */
  private ingressRefused(conn: Conn, frameType: number, now: number): void {
    const s = conn.session;
    if (!(s ? s.rateNacks : conn.nackThrottle).allow(now)) return;
    this.hub.egress.nackConn(conn, Nack.INGRESS_BUDGET, frameType >= 0 && frameType <= 0xff ? frameType : undefined, undefined, this.hub.governor.retryAfterMs);
  }

  /** A transport that overdrew its pre-HELLO byte bucket: answered INGRESS_BUDGET, closed. */
  private preSessionFlood(conn: Conn, bytes: Uint8Array, start: number, end: number): void {
    const type = peekFrameType(bytes, start, Math.min(end, start + 16));
    this.hub.egress.nackConn(conn, Nack.INGRESS_BUDGET, type >= 0 && type <= 0xff ? type : undefined, undefined, 1000);
    this.hub.log.event('pre-session-flood-close', 0);
    this.hub.dropConn(conn);
    conn.link.close();
  }

  malformed(conn: Conn, code: number, frameType: number | undefined, now: number, channelId?: number): void {
    const hub = this.hub;
    hub.egress.nackConn(conn, code, frameType !== undefined && frameType >= 0 ? frameType : undefined, channelId);
    const s = conn.session;
    const count = s ? s.malformed.add(now) : conn.malformed.add(now);
    // §12: a session that sends malformed frames persistently is closed.
    if (count > MALFORMED_CLOSE_PER_S) {
      hub.log.event('malformed-close', s ? s.id : 0, count);
      if (s) hub.keeper.close(s, GoodbyeReason.MISBEHAVING);
      else {
        hub.dropConn(conn);
        conn.link.close();
      }
    }
  }

  /** §12: RATE_LIMITED is back-pressure, at most STREAM_INGRESS_OVERAGE_NACK_PER_S per session. */
  rateLimited(s: Session, frameType: number, channelId: number, requestId: number | undefined, retryMs: number, now: number): void {
    if (!s.rateNacks.allow(now)) return;
    this.hub.egress.nack(s, Nack.RATE_LIMITED, frameType, channelId, requestId, Number.isFinite(retryMs) ? retryMs : undefined);
  }

  // ------------------------------------------------------------------ BUNDLE (§10.5)

  /** A BUNDLE from a session: `finite` tells whether every number after a sample's time is finite. */
  private bundle(conn: Conn, s: Session, channelId: number, block: SampleBlock, finite: boolean, now: number): void {
    // The session's publication of the channel (a few per session: found by a scan, Session.publication).
    const pubs = s.pubs;
    let i = 0;
    while (i < pubs.length && (pubs[i] as Publication).ch.id !== channelId) i++;
    if (i === pubs.length) {
      if (!this.hub.catalog.byId(channelId)) this.hub.egress.nack(s, Nack.UNKNOWN_CHANNEL, FrameType.BUNDLE, channelId);
      else this.bundleRefused(s, Nack.NOT_GRANTED, channelId, now);
      return;
    }
    const pub = pubs[i] as Publication;
    // A sample is [t, one finite number per catalog field]: anything else would reach the robot
    // as a command it cannot read.
    if (block.width !== pub.ch.fieldCount + 1 || !finite) {
      this.malformed(conn, Nack.MALFORMED, FrameType.BUNDLE, now, channelId);
      return;
    }
    if (pub.ch.motion) {
      const refusal = this.hub.latch.latched ? Nack.ESTOP_LATCHED : this.hub.owner !== s ? Nack.NOT_OWNER : !this.hub.safety.armedFlag ? Nack.NOT_ARMED : 0;
      if (refusal !== 0) {
        this.bundleRefused(s, refusal, channelId, now);
        return;
      }
    }
    // §10.5: n samples take n tokens; a bundle that would overdraw is dropped whole.
    if (!pub.bucket.take(block.count, now)) {
      this.rateLimited(s, FrameType.BUNDLE, channelId, undefined, pub.bucket.msUntil(block.count, now), now);
      return;
    }
    this.hub.robot.publish(channelId, block);
  }

  /**
   * A BUNDLE refused by a hub rule. Bundles stream (up to 50 a second), so their refusals share
   * the session's RATE_LIMITED throttle: one NACK per bundle would fill the sender's own
   * never-shed queue and park it.
   */
  private bundleRefused(s: Session, code: number, channelId: number, now: number): void {
    if (s.rateNacks.allow(now)) this.hub.egress.nack(s, code, FrameType.BUNDLE, channelId);
  }

  // ------------------------------------------------------------------ the ESTOP frame (§11.2)

  private estopFrame(conn: Conn, bytes: Uint8Array, start: number, len: number, now: number): void {
    let e: EstopFrame;
    try {
      e = decodeEstop(bytes, start, len);
    } catch (err) {
      if (err instanceof EstopFrameError) this.malformed(conn, Nack.MALFORMED, ESTOP_NACK_FRAME_TYPE, now);
      else throw err;
      return;
    }
    if (e.kind !== EstopKind.ASSERT) {
      // A clear is a CBOR ESTOP_CLEAR from the control owner, never a bare frame.
      this.malformed(conn, Nack.MALFORMED, ESTOP_NACK_FRAME_TYPE, now);
      return;
    }
    const s = conn.session;
    if (s) {
      s.lastHeard = now;
      if (s === this.hub.owner) this.hub.safety.ownerHeard(now);
    }
    // Any ESTOP latches, whoever sends it: a stop is never refused for want of a session.
    this.hub.safety.assert(EstopSource.CLIENT, s ? s.id : e.origin, e.seq);
  }
}

/** A clock reading as the wire's unsigned integer ms (§5.14 t1). */
export function wholeMs(t: number): number {
  return t > 0 && t <= Number.MAX_SAFE_INTEGER ? Math.floor(t) : 0;
}
