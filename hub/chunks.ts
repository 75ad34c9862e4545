// CATALOG and HEALTH on request (§5.17, §5.18): the catalog's canonical text and the detailed
// health report, each in one frame when it fits the link, else in chunks with offset and total,
// every chunk cut to fit one frame of the link (an ESP-NOW datagram is 250 bytes). Neither is
// never-shed traffic: a link without room now is answered HUB_PRESSURE and the client asks
// again. Functions over the hub's layers, run on request only (ingress.ts dispatch); the frames
// go out through the egress layer's control writer.

import { Tier } from '../catalog/schema.js';
import type { Egress } from './egress.js';
import { encodeFrame } from './frame-encode.js';
import { FrameType, type Frame } from './frame-types.js';
import type { Hub } from './hub.js';
import { Nack } from './nack.js';
import { tagOf, type Link } from './ports.js';
import type { Session } from './session.js';
import { utf8ByteLength } from './utf8.js';

/** CATALOG and HEALTH chunks: at most this many bytes of text, and never more than the link's MTU less the frame around it. */
export const CATALOG_CHUNK_BYTES = 3072;
const CATALOG_FRAME_OVERHEAD = 40;

/** The text budget of one CATALOG or HEALTH chunk on a link of `mtu`. */
export function chunkBudget(mtu: number): number {
  return Math.max(16, Math.min(CATALOG_CHUNK_BYTES, mtu - CATALOG_FRAME_OVERHEAD));
}

/**
 * One CATALOG chunk, at `offset` UTF-8 bytes into the catalog's canonical text, cut at a
 * character boundary so that it fits one frame of this link (an ESP-NOW datagram is 250
 * bytes). False when the offset lies past the text or inside a character (the caller NACKs).
 * The catalog is not never-shed traffic: a link without room gets HUB_PRESSURE.
 */
export function catalogChunk(hub: Hub, s: Session, offset: number): boolean {
  const link = s.link;
  if (!link) return true;
  const text = hub.catalog.canonicalJson;
  const total = utf8ByteLength(text);
  const budget = chunkBudget(link.caps.mtu);
  let from = 0;
  let at = 0;
  while (from < text.length && at < offset) at += utf8CharBytes(text, from++);
  if (offset > total || at !== offset) return false;
  let to = from;
  let bytes = 0;
  while (to < text.length) {
    const n = utf8CharBytes(text, to);
    if (bytes + n > budget) break;
    bytes += n;
    to += n === 4 ? 2 : 1;
  }
  chunk(hub.egress, s, { type: FrameType.CATALOG, catalogHash: hub.catalog.hash, text: text.slice(from, to), offset, total });
  return true;
}

/**
 * §5.18: the report as JSON text, in one frame when it fits the link, else in chunks with
 * offset/total as CATALOG's (§5.17). The chunks of one reading are cut from the text made at
 * offset 0, kept on the session until its last chunk went, so that they join into one report.
 */
export function sendHealth(hub: Hub, s: Session, offset: number, now: number): void {
  if (s.tier < Tier.maintainer) {
    hub.egress.nack(s, Nack.FORBIDDEN, FrameType.HEALTH);
    return;
  }
  const kept = hub.keeper.healthTexts;
  let text = kept[s.slot] as string | null;
  if (offset === 0) text = JSON.stringify(hub.inspect.report(now));
  if (text === null || offset > text.length || !s.link) {
    kept[s.slot] = null;
    hub.egress.nack(s, Nack.MALFORMED, FrameType.HEALTH);
    return;
  }
  const end = healthChunk(hub.egress, s, text, offset);
  if (end >= 0) kept[s.slot] = end >= text.length ? null : text;
  else kept[s.slot] = offset === 0 ? null : text;
}

/**
 * One chunk of the report text. The text is ASCII (fixed keys and numbers), so its UTF-8 bytes
 * are its characters. Returns where the chunk ended in the text, or −1 when it could not go
 * (the caller keeps the text for the next chunk).
 */
function healthChunk(egress: Egress, s: Session, text: string, offset: number): number {
  const link = s.link;
  if (!link) return -1;
  const total = text.length;
  const budget = chunkBudget(link.caps.mtu);
  const whole = offset === 0 && total <= budget;
  const end = Math.min(total, offset + budget);
  const f: Frame = whole ? { type: FrameType.HEALTH, text } : { type: FrameType.HEALTH, text: text.slice(offset, end), offset, total };
  return chunk(egress, s, f) ? end : -1;
}

function chunk(egress: Egress, s: Session, f: Frame): boolean {
  const w = egress.beginControl();
  encodeFrame(f, w);
  const link = s.link as Link;
  const went = s.neverShed.size === 0 && link.send(egress.arena.seal(w.pos), tagOf(f.type, 0), 0);
  egress.arena.unstage();
  if (went) {
    s.sentFrames = (s.sentFrames + 1) >>> 0;
    return true;
  }
  egress.nack(s, Nack.HUB_PRESSURE, f.type, undefined, undefined, 200);
  return false;
}

/** UTF-8 bytes of the character starting at code unit i (a surrogate pair counts 4, a lone surrogate 3). */
function utf8CharBytes(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c < 0x80) return 1;
  if (c < 0x800) return 2;
  if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
    const d = text.charCodeAt(i + 1);
    if (d >= 0xdc00 && d <= 0xdfff) return 4;
  }
  return 3;
}
