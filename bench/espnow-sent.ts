// device/native/espnowsent.h in script, line for line: the ESP-NOW send status's common course
// and a link's send of a frame into its empty queue, as the device runs them in C, over the same
// calls (EsCalls). The device bench prices them by what they read, write and call
// (bench/device.bench.ts NativeEspNowSentStandIn, over the binding's real objects);
// test/host/espnow-sent-native.test.ts holds them to the script's EspNowBinding.sent and
// EspNowLink.send in whole worlds, and the C to them over a store of numbers (native-host
// `espsent`, `espsend`). A change to the C changes this, or those tests fail.

/** The objects the course reaches (espnowsent.h kEsBinding…). */
export const Es = Object.freeze({
  BINDING: 0, TX: 1, TX_LOSS: 2, TX_COLS: 3, OPEN: 4, LINK: 5, EGRESS: 6, QUEUE: 7, LENS: 8, TAGS: 9,
  DATAGRAM: 10, LEVEL: 11, LOSS: 12, SEQS: 13, TIMES: 14, COUNTERS: 15, MEM: 16, FRAME: 17, SCRATCH: 18, OBJECTS: 19,
} as const);

/** The properties, in espnowsent.h's order (ES_NAMES). */
export const ES_FIELDS = Object.freeze([
  'txBusy', 'radioWait', 'dry', 'txLink', 'txAt', 'txLen', 'urgentMask', 'queuedMask', 'rrAfter', 'slots', 'open', 'wakeAt', 'counters',
  'closed', 'mac', 'loss', 'cols', 'index', 'egress', 'queueLevel', 'lvl', 'dirty', 'movedAt',
  'quietUntil', 'latest', 'seqs', 'times', 'timeoutMs', 'expiry', 'pendingLo', 'pendingHi', 'openLo', 'openHi', 'calmUntil', 'judgedAt',
  'hot', 'seq', 'committed', 'committedGen', 'committedSeq', 'queue',
  'pre', 'nFrames', 'headFrame', 'lens', 'tags', 'staged', 'packed', 'datagram', 'nBytes', 'capacityBytes', 'head', 'tail', 'gapAt',
  'radioNoMem', 'radioRefused', 'datagramsSent', 'length',
  'owner', 'segment', 'capacityFrames', 'mem',
] as const);

const F = Object.fromEntries(ES_FIELDS.map((n, i) => [n, i])) as { readonly [K in (typeof ES_FIELDS)[number]]: number };
export { F as EsField };

/** The calls into script (espnowsent.h kEsNow…). */
export const EsCall = Object.freeze({ NOW: 0, RADIO_SEND: 1, SEND_AGAIN: 2, DRAINED: 3, JUDGE: 4, SENT_IN_FLIGHT: 5, PUMP: 6, IN_SCRIPT: 7, PUMP_LATER: 8, SEND_IN_SCRIPT: 9, QUEUED: 10 } as const);

export interface EsCalls {
  load(to: number, from: number, f: number): boolean;
  loadAt(to: number, from: number, i: number): void;
  get(o: number, f: number): number;
  set(o: number, f: number, v: number): void;
  setBool(o: number, f: number, v: boolean): void;
  setRef(o: number, f: number, ref: number): void;
  at(o: number, i: number): number;
  setAt(o: number, i: number, v: number): void;
  setByte(o: number, i: number, v: number): void;
  bytes(o: number): number;
  copy(to: number, at: number, from: number): boolean;
  call(what: number, a: number, b: number, d: number): number;
}

const OK = 0;
const BUSY = 1;
const NOT_FOUND = 2;
const NO_MEM = 5;
const HEADER_BYTES = 3;
const HEADER_BYTE = 0x10;
const CRITICAL = 0x80;
const COMMITTED_PLAIN = 0;
const RECOVERED = 0.2;
const RTT_GAIN = 0.125;
const METER_BUCKETS = 10;
const METER_BUCKET_MS = 100;
const RING_MASK = 63;
const MAX_FRAME = 246;
/** A link's numbers (bindings/espnow/link.ts COL_METER, COL_RTT). */
export const ES_COL_METER = 126;
export const ES_COL_RTT = 146;

const B = Es.BINDING;
const L = Es.LINK;

function fed(c: EsCalls, level: number, quiet: number): void {
  if (level !== c.get(L, F.lvl)) {
    c.setBool(L, F.dirty, true);
    c.set(B, F.wakeAt, -Infinity);
  } else if (quiet < c.get(B, F.wakeAt)) c.set(B, F.wakeAt, quiet);
}

function lowest(m: number): number {
  return 31 - Math.clz32(m & -m);
}

function pump(c: EsCalls, now: number): void {
  const urgent = c.get(B, F.urgentMask) | 0;
  if (urgent !== 0) {
    c.call(EsCall.PUMP, now, 0, 0);
    return;
  }
  let m = c.get(B, F.queuedMask) | 0;
  if (m === 0) {
    c.setBool(B, F.dry, true);
    return;
  }
  const sole = (m & (m - 1)) === 0;
  const slots = c.get(B, F.slots) >>> 0;
  const after = c.get(B, F.rrAfter);
  const shift = after < slots ? (after + 1) | 0 : slots;
  let pick = m & (-1 << (shift & 31));
  if (pick !== 0) m = pick;
  pick = lowest(m);
  if (pick >= slots) {
    c.call(EsCall.PUMP, now, 0, 0);
    return;
  }
  c.load(Es.OPEN, B, F.open);
  const n = c.get(Es.OPEN, F.length) >>> 0;
  if (n === 0) {
    c.call(EsCall.PUMP, now, 0, 0);
    return;
  }
  m = pick < n ? pick : n - 1;
  c.loadAt(L, Es.OPEN, m);
  while (c.get(L, F.index) >>> 0 !== pick && m > 0) c.loadAt(L, Es.OPEN, --m);
  c.load(Es.EGRESS, L, F.egress);
  c.load(Es.QUEUE, Es.EGRESS, F.queue);
  if (c.get(Es.EGRESS, F.hot) !== 0 || c.get(Es.QUEUE, F.pre) === 0 || c.get(Es.QUEUE, F.nFrames) !== 1) {
    c.call(EsCall.PUMP, now, 0, 0);
    return;
  }
  const h = c.get(Es.QUEUE, F.headFrame) >>> 0;
  c.load(Es.TAGS, Es.QUEUE, F.tags);
  if ((c.at(Es.TAGS, h) & CRITICAL) !== 0) {
    c.call(EsCall.PUMP, now, 0, 0);
    return;
  }
  c.set(B, F.rrAfter, pick);
  c.load(Es.LENS, Es.QUEUE, F.lens);
  const len = HEADER_BYTES + 1 + (c.at(Es.LENS, h) >>> 0);
  c.set(Es.QUEUE, F.staged, 0);
  c.set(Es.QUEUE, F.packed, 1);
  let seq = c.get(Es.EGRESS, F.seq) >>> 0;
  c.load(Es.DATAGRAM, Es.QUEUE, F.datagram);
  c.setByte(Es.DATAGRAM, 0, HEADER_BYTE);
  c.setByte(Es.DATAGRAM, 1, (seq >>> 8) & 0xff);
  c.setByte(Es.DATAGRAM, 2, seq & 0xff);
  const mac = c.get(L, F.mac);
  let status = c.call(EsCall.RADIO_SEND, mac, len, 0);
  if (status !== OK) {
    if (status === NOT_FOUND) status = c.call(EsCall.SEND_AGAIN, mac, len, 0);
    if (status === BUSY || status === NO_MEM) {
      if (status === NO_MEM) {
        c.load(Es.COUNTERS, B, F.counters);
        c.set(Es.COUNTERS, F.radioNoMem, c.get(Es.COUNTERS, F.radioNoMem) + 1);
      }
      c.setBool(B, F.radioWait, true);
      return;
    }
  }
  const found = c.get(Es.QUEUE, F.nBytes) / c.get(Es.QUEUE, F.capacityBytes);
  c.set(Es.EGRESS, F.committed, COMMITTED_PLAIN);
  c.set(Es.EGRESS, F.committedGen, 0);
  seq = c.get(Es.EGRESS, F.seq) >>> 0;
  c.set(Es.EGRESS, F.committedSeq, seq);
  c.set(Es.EGRESS, F.seq, (seq + 1) & 0xffff);
  c.set(Es.QUEUE, F.head, 0);
  c.set(Es.QUEUE, F.tail, 0);
  c.set(Es.QUEUE, F.headFrame, 0);
  c.set(Es.QUEUE, F.nFrames, 0);
  c.set(Es.QUEUE, F.nBytes, 0);
  c.set(Es.QUEUE, F.packed, 0);
  c.set(Es.QUEUE, F.gapAt, -1);
  c.setBool(Es.QUEUE, F.pre, false);
  c.set(B, F.queuedMask, (c.get(B, F.queuedMask) | 0) & ~(1 << pick));
  if (sole) c.setBool(B, F.dry, true);
  c.set(L, F.movedAt, now);
  c.load(Es.LEVEL, L, F.queueLevel);
  if (!(found < RECOVERED && c.get(Es.LEVEL, F.queue) < RECOVERED && now < c.get(Es.LEVEL, F.quietUntil))) {
    const level = c.call(EsCall.DRAINED, found, 0, now);
    fed(c, level, c.get(Es.LEVEL, F.quietUntil));
  }
  if (status !== OK) {
    c.load(Es.COUNTERS, B, F.counters);
    c.set(Es.COUNTERS, F.radioRefused, c.get(Es.COUNTERS, F.radioRefused) + 1);
    return;
  }
  c.setBool(B, F.txBusy, true);
  c.set(B, F.txLen, len);
  c.setRef(B, F.txLink, L);
  c.set(B, F.txAt, now);
  c.load(Es.COUNTERS, B, F.counters);
  c.set(Es.COUNTERS, F.datagramsSent, c.get(Es.COUNTERS, F.datagramsSent) + 1);
  c.load(Es.LOSS, L, F.loss);
  c.load(Es.SEQS, Es.LOSS, F.seqs);
  const i = seq & RING_MASK;
  const bit = 1 << (i & 31);
  const lo = i < 32;
  const fresh = c.at(Es.SEQS, i) !== seq;
  let level: number;
  if (fresh && (c.get(Es.LOSS, lo ? F.pendingLo : F.pendingHi) & bit) !== 0) level = c.call(EsCall.SENT_IN_FLIGHT, seq, now, 0);
  else {
    let t = c.get(Es.LOSS, F.latest);
    if (now > t) {
      c.set(Es.LOSS, F.latest, now);
      t = now;
    }
    if (fresh) {
      c.setAt(Es.SEQS, i, seq);
      c.load(Es.TIMES, Es.LOSS, F.times);
      c.setAt(Es.TIMES, i, t);
      const e = t + c.get(Es.LOSS, F.timeoutMs);
      if (e < c.get(Es.LOSS, F.expiry)) {
        c.set(Es.LOSS, F.expiry, e);
        if (e + 1e-9 < c.get(Es.LOSS, F.quietUntil)) c.set(Es.LOSS, F.quietUntil, e + 1e-9);
      }
      c.set(Es.LOSS, lo ? F.pendingLo : F.pendingHi, c.get(Es.LOSS, lo ? F.pendingLo : F.pendingHi) | bit);
      c.set(Es.LOSS, lo ? F.openLo : F.openHi, c.get(Es.LOSS, lo ? F.openLo : F.openHi) | bit);
    }
    if (t < c.get(Es.LOSS, F.calmUntil) && t <= c.get(Es.LOSS, F.expiry)) {
      c.set(Es.LOSS, F.judgedAt, t);
      level = c.get(Es.LOSS, F.lvl);
    } else level = c.call(EsCall.JUDGE, t, 0, 0);
  }
  fed(c, level, c.get(Es.LOSS, F.quietUntil));
}

/** espnowsent.h espnowSent: the binding's `sent(mac, ok)` through `c`. */
export function espnowSent(c: EsCalls, mac: number, ok: boolean): void {
  if (!ok || c.get(B, F.txBusy) === 0 || !c.load(Es.TX, B, F.txLink) || c.get(Es.TX, F.closed) !== 0 || c.get(Es.TX, F.mac) !== mac) {
    c.call(EsCall.IN_SCRIPT, mac, ok ? 1 : 0, NaN);
    return;
  }
  const now = c.call(EsCall.NOW, 0, 0, 0);
  c.load(Es.TX_LOSS, Es.TX, F.loss);
  if (!(now >= 0 && now < c.get(Es.TX_LOSS, F.quietUntil))) {
    c.call(EsCall.IN_SCRIPT, mac, ok ? 1 : 0, now);
    return;
  }
  c.setBool(B, F.radioWait, false);
  c.setBool(B, F.txBusy, false);
  c.setRef(B, F.txLink, -1);
  c.load(Es.TX_COLS, Es.TX, F.cols);
  const txAt = c.get(B, F.txAt);
  const rtt = c.at(Es.TX_COLS, ES_COL_RTT);
  c.setAt(Es.TX_COLS, ES_COL_RTT, rtt === 0 ? now - txAt : rtt + RTT_GAIN * (now - txAt - rtt));
  const id = Math.floor(now / METER_BUCKET_MS);
  const b = ES_COL_METER + (id % METER_BUCKETS);
  let bucket = c.at(Es.TX_COLS, b);
  if (bucket !== id && bucket < id) {
    c.setAt(Es.TX_COLS, b, id);
    c.setAt(Es.TX_COLS, b + METER_BUCKETS, 0);
    bucket = id;
  }
  if (bucket === id) c.setAt(Es.TX_COLS, b + METER_BUCKETS, c.at(Es.TX_COLS, b + METER_BUCKETS) + (c.get(B, F.txLen) - HEADER_BYTES));
  if (c.get(B, F.dry) === 0) pump(c, now);
}

/** espnowsent.h espnowSend: the link's `send(frame, tag, seq)` through `c` (Es.LINK: the link, Es.FRAME: the frame); true when the link took it. */
export function espnowSend(c: EsCalls, tag: number, seq: number): boolean {
  const length = c.bytes(Es.FRAME);
  if (c.get(L, F.closed) !== 0 || length > MAX_FRAME || length === 0) return c.call(EsCall.SEND_IN_SCRIPT, tag, seq, 0) !== 0;
  c.load(B, L, F.owner);
  c.load(Es.EGRESS, L, F.egress);
  c.load(Es.QUEUE, Es.EGRESS, F.queue);
  if (c.load(Es.SCRATCH, B, F.segment) || (c.get(B, F.dry) !== 0 && c.get(B, F.txBusy) === 0 && c.get(B, F.radioWait) === 0)) return c.call(EsCall.SEND_IN_SCRIPT, tag, seq, 0) !== 0;
  const cap = c.get(Es.QUEUE, F.capacityBytes) >>> 0;
  if (c.get(Es.QUEUE, F.nFrames) !== 0 || c.get(Es.EGRESS, F.hot) !== 0 || c.get(Es.EGRESS, F.committed) !== COMMITTED_PLAIN || length > cap || c.get(Es.QUEUE, F.capacityFrames) === 0) {
    return c.call(EsCall.SEND_IN_SCRIPT, tag, seq, 0) !== 0;
  }
  c.load(Es.MEM, Es.QUEUE, F.mem);
  if (c.bytes(Es.MEM) < cap + HEADER_BYTES + 1 + length) return c.call(EsCall.SEND_IN_SCRIPT, tag, seq, 0) !== 0;
  const now = c.call(EsCall.NOW, 0, 0, 0);
  c.setByte(Es.MEM, cap + HEADER_BYTES, length & 0xff);
  c.copy(Es.MEM, cap + HEADER_BYTES + 1, Es.FRAME);
  c.set(Es.QUEUE, F.head, 0);
  c.load(Es.LENS, Es.QUEUE, F.lens);
  c.setAt(Es.LENS, 0, length);
  c.load(Es.TAGS, Es.QUEUE, F.tags);
  c.setAt(Es.TAGS, 0, tag);
  c.set(Es.QUEUE, F.nFrames, 1);
  c.set(Es.QUEUE, F.nBytes, length);
  c.set(Es.QUEUE, F.tail, length);
  c.setBool(Es.QUEUE, F.pre, true);
  c.set(L, F.movedAt, now);
  const bit = 1 << ((c.get(L, F.index) >>> 0) & 31);
  c.set(B, F.queuedMask, (c.get(B, F.queuedMask) | 0) | bit);
  const r = length / cap;
  c.load(Es.LEVEL, L, F.queueLevel);
  if (!(r < RECOVERED && c.get(Es.LEVEL, F.queue) < RECOVERED && now < c.get(Es.LEVEL, F.quietUntil))) {
    if (c.call(EsCall.QUEUED, r, now, 0) !== c.get(L, F.lvl)) {
      c.setBool(L, F.dirty, true);
      c.set(B, F.wakeAt, -Infinity);
    } else if (c.get(Es.LEVEL, F.quietUntil) < c.get(B, F.wakeAt)) c.set(B, F.wakeAt, c.get(Es.LEVEL, F.quietUntil));
  }
  c.setBool(B, F.dry, false);
  if (c.get(B, F.txBusy) === 0 && c.get(B, F.radioWait) === 0) c.call(EsCall.PUMP_LATER, 0, 0, 0);
  return true;
}

/** What `EsObjects` counted: each kind of step the C takes. */
export interface EsCounts {
  /** Properties read or written by name, objects taken by name or index (each an XS property access). */
  reads: number;
  /** Typed-array elements read or written by index. */
  elements: number;
  /** Bytes written where they lie (a Uint8Array's data, no property access). */
  bytes: number;
  /** Calls into script, by EsCall. */
  calls: number[];
}

/** New, zeroed counts. */
export function esCounts(): EsCounts {
  return { reads: 0, elements: 0, bytes: 0, calls: [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0] };
}

/** Around each call into script (the device bench's world: it counts the script's work and not the rest). */
export interface EsHooks {
  resume(): void;
  pause(): void;
}

type Obj = Record<string, unknown>;
type Script = Record<string, (...args: unknown[]) => unknown>;

/**
 * EsCalls over a binding's real objects, as ./espnowsent.c makes them XS property accesses and
 * calls, each counted: the device bench's model of the C, and the tests' way to run the course
 * inside a real binding.
 */
export class EsObjects implements EsCalls {
  private readonly held: unknown[] = new Array(Es.OBJECTS).fill(null);
  counts: EsCounts = esCounts();
  constructor(private readonly hooks: EsHooks | null = null) {}

  /** Runs the course for `binding`'s `sent(mac, ok)`. */
  sent(binding: object, mac: number, ok: boolean): void {
    this.held[Es.BINDING] = binding;
    espnowSent(this, mac, ok);
    this.held.fill(null);
  }

  /** Runs the course for `link`'s `send(frame, tag, seq)`. */
  send(link: object, frame: Uint8Array, tag: number, seq: number): boolean {
    this.held[Es.LINK] = link;
    this.held[Es.FRAME] = frame;
    const took = espnowSend(this, tag, seq);
    this.held.fill(null);
    return took;
  }

  load(to: number, from: number, f: number): boolean {
    this.counts.reads++;
    const v = (this.held[from] as Obj)[ES_FIELDS[f] as string];
    this.held[to] = v;
    return typeof v === 'object' && v !== null;
  }
  loadAt(to: number, from: number, i: number): void {
    this.counts.reads++;
    const v = (this.held[from] as unknown[])[i];
    if (typeof v !== 'object' || v === null) throw new TypeError('sent: no link');
    this.held[to] = v;
  }
  get(o: number, f: number): number {
    this.counts.reads++;
    return Number((this.held[o] as Obj)[ES_FIELDS[f] as string]);
  }
  set(o: number, f: number, v: number): void {
    this.counts.reads++;
    (this.held[o] as Obj)[ES_FIELDS[f] as string] = v;
  }
  setBool(o: number, f: number, v: boolean): void {
    this.counts.reads++;
    (this.held[o] as Obj)[ES_FIELDS[f] as string] = v;
  }
  setRef(o: number, f: number, ref: number): void {
    this.counts.reads++;
    (this.held[o] as Obj)[ES_FIELDS[f] as string] = ref < 0 ? null : this.held[ref];
  }
  at(o: number, i: number): number {
    this.counts.elements++;
    return Number((this.held[o] as Float64Array)[i]);
  }
  setAt(o: number, i: number, v: number): void {
    this.counts.elements++;
    (this.held[o] as Float64Array)[i] = v;
  }
  setByte(o: number, i: number, v: number): void {
    this.counts.bytes++;
    (this.held[o] as Uint8Array)[i] = v;
  }
  bytes(o: number): number {
    return (this.held[o] as Uint8Array).length;
  }
  copy(to: number, at: number, from: number): boolean {
    const dst = this.held[to] as Uint8Array;
    const src = this.held[from] as Uint8Array;
    if (at > dst.length || src.length > dst.length - at) return false;
    this.counts.bytes += src.length;
    dst.set(src, at);
    return true;
  }
  call(what: number, a: number, b: number, d: number): number {
    const counts = this.counts;
    counts.calls[what] = (counts.calls[what] ?? 0) + 1;
    const h = this.held;
    const binding = h[Es.BINDING] as Obj;
    const hooks = this.hooks;
    // The glue's own reads around a call (espnowsent.c glueCall): the clock, the radio, the queue's datagram.
    let r: unknown = 0;
    switch (what) {
      case EsCall.NOW: {
        counts.reads++;
        const clock = binding.clock as Script;
        hooks?.resume();
        r = clock.now!();
        break;
      }
      case EsCall.RADIO_SEND: {
        counts.reads += 2;
        const radio = binding.radio as Script;
        const datagram = (h[Es.QUEUE] as Obj).datagram;
        hooks?.resume();
        r = radio.send!(a, datagram, b);
        break;
      }
      case EsCall.SEND_AGAIN: {
        counts.reads++;
        const datagram = (h[Es.QUEUE] as Obj).datagram;
        hooks?.resume();
        r = (binding as Script).sendAgain!(a, datagram, b);
        break;
      }
      case EsCall.DRAINED: {
        const level = h[Es.LEVEL] as Script;
        hooks?.resume();
        r = level.drained!(a, b, d);
        break;
      }
      case EsCall.JUDGE: {
        const loss = h[Es.LOSS] as Script;
        hooks?.resume();
        r = loss.judge!(a);
        break;
      }
      case EsCall.SENT_IN_FLIGHT: {
        const loss = h[Es.LOSS] as Script;
        hooks?.resume();
        r = loss.sentInFlight!(a, b);
        break;
      }
      case EsCall.PUMP:
        hooks?.resume();
        (binding as Script).pump!(a);
        break;
      case EsCall.PUMP_LATER:
        hooks?.resume();
        (binding as Script).pump!();
        break;
      case EsCall.QUEUED: {
        const level = h[Es.LEVEL] as Script;
        hooks?.resume();
        r = level.queued!(a, b);
        break;
      }
      case EsCall.SEND_IN_SCRIPT: {
        const link = h[Es.LINK] as Script;
        const frame = h[Es.FRAME];
        hooks?.resume();
        r = link.sendInScript!(frame, a, b) ? 1 : 0;
        break;
      }
      default: {
        const ok = b !== 0;
        hooks?.resume();
        if (d !== d) (binding as Script).sentInScript!(a, ok);
        else (binding as Script).sentInScript!(a, ok, d);
      }
    }
    hooks?.pause();
    return what === EsCall.PUMP || what === EsCall.PUMP_LATER || what === EsCall.IN_SCRIPT ? 0 : Number(r);
  }
}
