// The frame encoder (docs/protocol.md "Frames"): encodeFrame writes any typed frame as its one
// canonical CBOR map (keys ascending, an optional key only when present), and encodeData writes
// a DATA frame from a reused Float64Array without allocating. Both write what they are given:
// the hub builds its frames from validated state, and decodeFrame is where everything is
// checked. The hot path writes its DATA frames in place (fast-frames.ts writeData), byte for byte
// what encodeData writes.

import type { CborWriter } from './cbor.js';
import {
  FrameType,
  Key,
  type Arg,
  type CatalogFrame,
  type Frame,
  type PubGrant,
  type PubWish,
  type SubGrant,
  type SubWish,
} from './frame-types.js';

function writeSubWishes(w: CborWriter, list: readonly SubWish[]): void {
  w.array(list.length);
  for (const x of list) {
    const hasPriority = x.priority !== undefined;
    w.map(hasPriority ? 3 : 2);
    w.uint(Key.CHANNEL_ID);
    w.uint(x.channelId);
    w.uint(Key.WISHED_RATE_HZ);
    w.number(x.wishedRateHz);
    if (hasPriority) {
      w.uint(Key.PRIORITY);
      w.uint(x.priority as number);
    }
  }
}

function writePubWishes(w: CborWriter, list: readonly PubWish[]): void {
  w.array(list.length);
  for (const x of list) {
    const hasBurst = x.burst !== undefined;
    w.map(hasBurst ? 3 : 2);
    w.uint(Key.CHANNEL_ID);
    w.uint(x.channelId);
    w.uint(Key.WISHED_RATE_HZ);
    w.number(x.wishedRateHz);
    if (hasBurst) {
      w.uint(Key.BURST);
      w.number(x.burst as number);
    }
  }
}

function writeSubGrants(w: CborWriter, list: readonly SubGrant[]): void {
  w.array(list.length);
  for (const x of list) {
    w.map(3);
    w.uint(Key.CHANNEL_ID);
    w.uint(x.channelId);
    w.uint(Key.PRIORITY);
    w.uint(x.priority);
    w.uint(Key.GRANTED_RATE_HZ);
    w.number(x.grantedRateHz);
  }
}

function writePubGrants(w: CborWriter, list: readonly PubGrant[]): void {
  w.array(list.length);
  for (const x of list) {
    w.map(3);
    w.uint(Key.CHANNEL_ID);
    w.uint(x.channelId);
    w.uint(Key.GRANTED_RATE_HZ);
    w.number(x.grantedRateHz);
    w.uint(Key.BURST);
    w.number(x.burst);
  }
}

function writeNumbers(w: CborWriter, list: readonly number[]): void {
  w.array(list.length);
  for (const x of list) w.number(x);
}

function writeArgs(w: CborWriter, list: readonly Arg[]): void {
  w.array(list.length);
  for (const x of list) {
    if (typeof x === 'string') w.text(x);
    else w.number(x);
  }
}

function count(...present: boolean[]): number {
  let n = 0;
  for (const p of present) if (p) n++;
  return n;
}

// Appends the frame at w.pos. It writes what it is given (the hub builds its frames from
// validated state); decodeFrame is where everything is checked.
export function encodeFrame(f: Frame, w: CborWriter): void {
  switch (f.type) {
    case FrameType.HELLO: {
      const cred = f.credential !== undefined;
      const tok = f.resumeToken !== undefined;
      const subs = f.subWishes !== undefined;
      const pubs = f.pubWishes !== undefined;
      w.map(3 + count(cred, tok, subs, pubs));
      w.uint(Key.TYPE);
      w.uint(f.type);
      w.uint(Key.VERSION);
      w.uint(f.version);
      w.uint(Key.NAME);
      w.text(f.name);
      if (cred) {
        w.uint(Key.CREDENTIAL);
        w.bytes(f.credential as Uint8Array);
      }
      if (tok) {
        w.uint(Key.RESUME_TOKEN);
        w.bytes(f.resumeToken as Uint8Array);
      }
      if (subs) {
        w.uint(Key.SUB_WISHES);
        writeSubWishes(w, f.subWishes as SubWish[]);
      }
      if (pubs) {
        w.uint(Key.PUB_WISHES);
        writePubWishes(w, f.pubWishes as PubWish[]);
      }
      return;
    }
    case FrameType.WELCOME:
      w.map(13);
      w.uint(Key.TYPE);
      w.uint(f.type);
      w.uint(Key.SESSION_ID);
      w.uint(f.sessionId);
      w.uint(Key.RESUME_TOKEN);
      w.bytes(f.resumeToken);
      w.uint(Key.HUB_ID);
      w.text(f.hubId);
      w.uint(Key.MTU);
      w.uint(f.mtu);
      w.uint(Key.SLOTS);
      w.uint(f.slots);
      w.uint(Key.CATALOG_HASH);
      w.bytes(f.catalogHash);
      w.uint(Key.TIER);
      w.uint(f.tier);
      w.uint(Key.OWNER);
      w.uint(f.owner);
      w.uint(Key.LATCHED);
      w.bool(f.latched);
      w.uint(Key.SUB_GRANTS);
      writeSubGrants(w, f.subGrants);
      w.uint(Key.PUB_GRANTS);
      writePubGrants(w, f.pubGrants);
      w.uint(Key.STALE_TTL_MS);
      w.uint(f.staleTtlMs);
      return;
    case FrameType.SUBSCRIBE:
      w.map(2);
      w.uint(Key.TYPE);
      w.uint(f.type);
      w.uint(Key.SUB_WISHES);
      writeSubWishes(w, f.wishes);
      return;
    case FrameType.UNSUBSCRIBE:
      w.map(2);
      w.uint(Key.TYPE);
      w.uint(f.type);
      w.uint(Key.CHANNELS);
      w.array(f.channels.length);
      for (const c of f.channels) w.uint(c);
      return;
    case FrameType.PUBLISH:
      w.map(2);
      w.uint(Key.TYPE);
      w.uint(f.type);
      w.uint(Key.PUB_WISHES);
      writePubWishes(w, f.wishes);
      return;
    case FrameType.GRANT: {
      const subs = f.subGrants !== undefined;
      const pubs = f.pubGrants !== undefined;
      w.map(1 + count(subs, pubs));
      w.uint(Key.TYPE);
      w.uint(f.type);
      if (subs) {
        w.uint(Key.SUB_GRANTS);
        writeSubGrants(w, f.subGrants as SubGrant[]);
      }
      if (pubs) {
        w.uint(Key.PUB_GRANTS);
        writePubGrants(w, f.pubGrants as PubGrant[]);
      }
      return;
    }
    case FrameType.DATA: {
      const gap = f.gap === true;
      const dropped = f.dropped !== undefined && f.dropped > 0;
      const text = f.text !== undefined;
      w.map(5 + count(gap, dropped, text));
      writeDataHead(w, f.channelId, f.seq, f.t, f.values.length);
      for (const x of f.values) w.number(x);
      writeDataTail(w, gap, dropped ? (f.dropped as number) : 0);
      if (text) {
        w.uint(Key.TEXT);
        w.text(f.text as string);
      }
      return;
    }
    case FrameType.BUNDLE:
      w.map(3);
      w.uint(Key.TYPE);
      w.uint(f.type);
      w.uint(Key.CHANNEL_ID);
      w.uint(f.channelId);
      w.uint(Key.VALUES);
      w.array(f.samples.length);
      for (const s of f.samples) writeNumbers(w, s);
      return;
    case FrameType.INTENT: {
      const args = f.args !== undefined;
      w.map(3 + count(args));
      w.uint(Key.TYPE);
      w.uint(f.type);
      w.uint(Key.CHANNEL_ID);
      w.uint(f.channelId);
      if (args) {
        w.uint(Key.ARGS);
        writeArgs(w, f.args as Arg[]);
      }
      w.uint(Key.REQUEST_ID);
      w.uint(f.requestId);
      return;
    }
    case FrameType.ECHO: {
      const args = f.args !== undefined;
      w.map(4 + count(args));
      w.uint(Key.TYPE);
      w.uint(f.type);
      w.uint(Key.CHANNEL_ID);
      w.uint(f.channelId);
      if (args) {
        w.uint(Key.ARGS);
        writeArgs(w, f.args as Arg[]);
      }
      w.uint(Key.REQUEST_ID);
      w.uint(f.requestId);
      w.uint(Key.RESULT);
      w.uint(f.result);
      return;
    }
    case FrameType.NACK: {
      const ch = f.channelId !== undefined;
      const retry = f.retryAfterMs !== undefined;
      const ft = f.frameType !== undefined;
      const req = f.requestId !== undefined;
      w.map(2 + count(ch, retry, ft, req));
      w.uint(Key.TYPE);
      w.uint(f.type);
      if (ch) {
        w.uint(Key.CHANNEL_ID);
        w.uint(f.channelId as number);
      }
      w.uint(Key.CODE);
      w.uint(f.code);
      if (retry) {
        w.uint(Key.RETRY_AFTER_MS);
        w.uint(f.retryAfterMs as number);
      }
      if (ft) {
        w.uint(Key.FRAME_TYPE);
        w.uint(f.frameType as number);
      }
      if (req) {
        w.uint(Key.REQUEST_ID);
        w.uint(f.requestId as number);
      }
      return;
    }
    case FrameType.ACK:
      if ('acked' in f) {
        w.map(2);
        w.uint(Key.TYPE);
        w.uint(f.type);
        w.uint(Key.ACKED);
        w.uint(f.acked);
      } else {
        w.map(3);
        w.uint(Key.TYPE);
        w.uint(f.type);
        w.uint(Key.ACK_BASE);
        w.uint(f.ackBase);
        w.uint(Key.ACK_BITMAP);
        w.uint(f.ackBitmap);
      }
      return;
    case FrameType.PING:
      w.map(2);
      w.uint(Key.TYPE);
      w.uint(f.type);
      w.uint(Key.T0);
      w.uint(f.t0);
      return;
    case FrameType.PONG:
      w.map(f.level === undefined ? 3 : 4);
      w.uint(Key.TYPE);
      w.uint(f.type);
      w.uint(Key.T0);
      w.uint(f.t0);
      w.uint(Key.T1);
      w.uint(f.t1);
      if (f.level !== undefined) {
        w.uint(Key.LEVEL);
        w.uint(f.level);
      }
      return;
    case FrameType.GOODBYE: {
      const reason = f.reason !== undefined;
      w.map(1 + count(reason));
      w.uint(Key.TYPE);
      w.uint(f.type);
      if (reason) {
        w.uint(Key.REASON);
        w.uint(f.reason as number);
      }
      return;
    }
    case FrameType.ESTOP_CLEAR: {
      const seq = f.estopSeq !== undefined;
      w.map(1 + count(seq));
      w.uint(Key.TYPE);
      w.uint(f.type);
      if (seq) {
        w.uint(Key.ESTOP_SEQ);
        w.uint(f.estopSeq as number);
      }
      return;
    }
    case FrameType.CATALOG:
    case FrameType.HEALTH: {
      const hash = f.type === FrameType.CATALOG && f.catalogHash !== undefined;
      const text = f.text !== undefined;
      const offset = f.offset !== undefined;
      const total = f.total !== undefined;
      w.map(1 + count(hash, text, offset, total));
      w.uint(Key.TYPE);
      w.uint(f.type);
      if (hash) {
        w.uint(Key.CATALOG_HASH);
        w.bytes((f as CatalogFrame).catalogHash as Uint8Array);
      }
      if (text) {
        w.uint(Key.TEXT);
        w.text(f.text as string);
      }
      if (offset) {
        w.uint(Key.OFFSET);
        w.uint(f.offset as number);
      }
      if (total) {
        w.uint(Key.TOTAL);
        w.uint(f.total as number);
      }
      return;
    }
  }
  throw new TypeError(`encodeFrame: unknown frame type ${String((f as { type: unknown }).type)}`);
}

function writeDataHead(w: CborWriter, channelId: number, seq: number, t: number, n: number): void {
  w.uint(Key.TYPE);
  w.uint(FrameType.DATA);
  w.uint(Key.CHANNEL_ID);
  w.uint(channelId);
  w.uint(Key.SEQ);
  w.uint(seq);
  w.uint(Key.T);
  w.uint(t);
  w.uint(Key.VALUES);
  w.array(n);
}

function writeDataTail(w: CborWriter, gap: boolean, dropped: number): void {
  if (gap) {
    w.uint(Key.GAP);
    w.bool(true);
  }
  if (dropped > 0) {
    w.uint(Key.DROPPED);
    w.uint(dropped);
  }
}

// The hot path: one sample or STATE value, encoded once and then copied to each subscriber.
// Writes exactly what encodeFrame writes for the DATA frame {channelId, seq, t,
// values: values[0..count), gap: true if gap, dropped if > 0} and allocates nothing.
export function encodeData(
  w: CborWriter,
  channelId: number,
  seq: number,
  t: number,
  values: Float64Array,
  count: number,
  gap: boolean,
  dropped: number,
): void {
  w.map(5 + (gap ? 1 : 0) + (dropped > 0 ? 1 : 0));
  writeDataHead(w, channelId, seq, t, count);
  for (let i = 0; i < count; i++) w.number(values[i] as number);
  writeDataTail(w, gap, dropped);
}
