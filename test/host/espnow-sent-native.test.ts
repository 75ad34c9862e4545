// The ESP-NOW binding's C (device/native/espnowsent.h, which the device runs as the binding's
// `sent` and its links' `send` through device/espnow-native.ts) against the binding's own script
// (bindings/espnow/link.ts EspNowBinding.sent and pump, EspNowLink.send), in two steps:
//  - the C against its line-for-line script model (bench/espnow-sent.ts, which the device budget
//    prices): both run over the same store of numbers with the same answers to their calls into
//    script, for random stores, and must leave the store the same, answer the same and make the
//    same calls with the same arguments in the same order; on the host build and a 32-bit one
//    (-m32). Copies of the C broken in the meter, the watermark's test, the loss detector's bits
//    or where a frame's length goes answer otherwise;
//  - the model, run as the binding's `sent` and its links' `send` over the binding's real
//    objects, against the script's, in two worlds alike but for that (the simulated air with
//    losses and MAC retries, a radio that now and then answers busy, out of memory, peer not
//    found or an error, light and heavy traffic, frames critical and not, ESTOP written ahead,
//    peers closed and opened): the radio must carry the same datagrams, byte for byte and in the
//    same order, and the binding count and judge the same.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { encodeEstop, ESTOP_FRAME_BYTES, EstopKind, EstopSource } from '../../hub/estop-frame.js';
import { FrameType, encodeFrame } from '../../hub/frames.js';
import { CborWriter } from '../../hub/cbor.js';
import { Tag, type Link, type LinkSink } from '../../hub/ports.js';
import { EspNowBinding, EspNowLink, ESPNOW_COLUMNS, RadioStatus, type Radio, type RadioHandler } from '../../bindings/espnow/link.js';
import { Mulberry32, SimAir, SimPeer } from '../../host-sim/links/espnow-air.js';
import { Es, EsCall, EsField, ES_COL_METER, ES_COL_RTT, ES_FIELDS, EsObjects, esCounts, espnowSend, espnowSent, type EsCalls } from '../../bench/espnow-sent.js';
import { buildBroken, useNativeHost } from '../lib/native-host.js';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

// ------------------------------------------------------------------ the store of numbers

const ELEMENTS = 1024;
const SLOTS = 100 + ELEMENTS;
type Cell = { k: 'num'; v: number } | { k: 'ref'; v: number } | { k: 'null' };

function bitsOf(d: number): string {
  const v = new DataView(new ArrayBuffer(8));
  v.setFloat64(0, d);
  return v.getBigUint64(0).toString(16).padStart(16, '0');
}
function doubleOf(h: string): number {
  const v = new DataView(new ArrayBuffer(8));
  v.setBigUint64(0, BigInt(`0x${h}`));
  return v.getFloat64(0);
}

/** bench/native/native-host.c EsStore in script: objects of properties and elements, the calls answered from `results` and logged. */
class FlatStore implements EsCalls {
  readonly cells = new Map<number, Cell>();
  private readonly held: number[] = new Array(Es.OBJECTS).fill(-1);
  private next = 0;
  readonly log: string[] = [];
  constructor(cells: ReadonlyMap<number, Cell>, private readonly results: readonly number[], send = false) {
    for (const [k, c] of cells) this.cells.set(k, c);
    if (send) {
      this.held[Es.LINK] = 0;
      this.held[Es.FRAME] = 1;
    } else this.held[Es.BINDING] = 0;
  }
  private key(o: number, slot: number): number {
    const obj = o >= 0 && o < Es.OBJECTS ? (this.held[o] as number) : -1;
    return obj < 0 || slot < 0 || slot >= SLOTS ? -1 : obj * SLOTS + slot;
  }
  private hold(to: number, from: number, slot: number): boolean {
    const c = this.cells.get(this.key(from, slot));
    if (c === undefined || c.k !== 'ref') {
      this.held[to] = -1;
      return false;
    }
    this.held[to] = c.v;
    return true;
  }
  private read(o: number, slot: number): number {
    const c = this.cells.get(this.key(o, slot));
    return c === undefined || c.k === 'ref' ? NaN : c.k === 'null' ? 0 : c.v;
  }
  private write(o: number, slot: number, c: Cell): void {
    const k = this.key(o, slot);
    if (k >= 0) this.cells.set(k, c);
  }
  load(to: number, from: number, f: number): boolean {
    return this.hold(to, from, f);
  }
  loadAt(to: number, from: number, i: number): void {
    this.hold(to, from, 100 + Math.min(i, ELEMENTS));
  }
  get(o: number, f: number): number {
    return this.read(o, f);
  }
  set(o: number, f: number, v: number): void {
    this.write(o, f, { k: 'num', v });
  }
  setBool(o: number, f: number, v: boolean): void {
    this.write(o, f, { k: 'num', v: v ? 1 : 0 });
  }
  setRef(o: number, f: number, ref: number): void {
    const obj = ref < 0 ? -1 : (this.held[ref] as number);
    this.write(o, f, obj < 0 ? { k: 'null' } : { k: 'ref', v: obj });
  }
  at(o: number, i: number): number {
    return this.read(o, 100 + Math.min(i, ELEMENTS));
  }
  setAt(o: number, i: number, v: number): void {
    this.write(o, 100 + Math.min(i, ELEMENTS), { k: 'num', v });
  }
  setByte(o: number, i: number, v: number): void {
    this.write(o, 100 + Math.min(i, ELEMENTS), { k: 'num', v });
  }
  bytes(o: number): number {
    const n = this.read(o, F.length);
    return n >= 0 && n <= ELEMENTS ? Math.floor(n) : 0;
  }
  copy(to: number, at: number, from: number): boolean {
    const n = this.bytes(from);
    const room = this.bytes(to);
    if (at > room || n > room - at) return false;
    for (let i = 0; i < n; i++) this.write(to, 100 + at + i, { k: 'num', v: this.read(from, 100 + i) });
    return true;
  }
  call(what: number, a: number, b: number, d: number): number {
    this.log.push(`${what}.${bitsOf(a)}.${bitsOf(b)}.${bitsOf(d)}`);
    if (what === EsCall.PUMP || what === EsCall.PUMP_LATER || what === EsCall.IN_SCRIPT) return 0;
    return this.next < this.results.length ? (this.results[this.next++] as number) : NaN;
  }
  /** The store as the host program prints it, then the log. */
  dump(): string {
    return `${cellsText(this.cells)} ${this.log.length ? this.log.join(',') : '-'}`;
  }
}

function cellsText(cells: ReadonlyMap<number, Cell>): string {
  return [...cells.keys()]
    .sort((a, b) => a - b)
    .map((k) => {
      const c = cells.get(k) as Cell;
      const head = `${Math.floor(k / SLOTS)}.${k % SLOTS}.`;
      return head + (c.k === 'ref' ? `r${c.v}` : c.k === 'null' ? 'n' : bitsOf(c.v));
    })
    .join(',');
}

interface StoreCase {
  mac: number;
  ok: boolean;
  cells: Map<number, Cell>;
  results: number[];
}

const F = EsField;

/** A random store shaped as a binding with up to three links (each of 10 objects), its answers to the calls random too. */
export function storeCase(r: Mulberry32): StoreCase {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r.next() * xs.length)] as T;
  const chance = (p: number): boolean => r.next() < p;
  const time = (): number => pick([0, 1, 2, 3, 5, 8, 10, 13, 20, 150, 250, 0.5, -1, Infinity, -Infinity, NaN]);
  const cells = new Map<number, Cell>();
  const num = (o: number, s: number, v: number): void => void cells.set(o * SLOTS + s, { k: 'num', v });
  const ref = (o: number, s: number, to: number): void => void cells.set(o * SLOTS + s, { k: 'ref', v: to });
  const bool = (o: number, s: number, p: number): void => num(o, s, chance(p) ? 1 : 0);
  const slots = pick([1, 2, 3, 4, 8, 19, 20]);
  const nLinks = pick([0, 1, 2, 3, 3]);
  const indexes = [...new Set(Array.from({ length: nLinks }, () => Math.floor(r.next() * slots)))].sort((a, b) => a - b);
  const linkObj = (k: number): number => 3 + 10 * k;
  // The binding (0), the open links (1), the counters (2).
  bool(0, F.txBusy, 0.9);
  bool(0, F.radioWait, 0.1);
  bool(0, F.dry, 0.1);
  if (indexes.length > 0 && chance(0.9)) ref(0, F.txLink, linkObj(Math.floor(r.next() * indexes.length)));
  else cells.set(F.txLink, { k: 'null' });
  num(0, F.txAt, time());
  num(0, F.txLen, pick([4, 10, 40, 250]));
  num(0, F.urgentMask, chance(0.1) ? 1 << Math.floor(r.next() * slots) : 0);
  let queued = 0;
  for (const i of indexes) if (chance(0.85)) queued |= 1 << i;
  if (chance(0.05)) queued |= 1 << slots;
  num(0, F.queuedMask, queued | 0);
  num(0, F.rrAfter, chance(0.05) ? pick([NaN, Infinity, -Infinity, 2.5]) : pick([-1, ...indexes, slots, Math.floor(r.next() * slots)]));
  num(0, F.slots, slots);
  ref(0, F.open, 1);
  num(0, F.wakeAt, time());
  ref(0, F.counters, 2);
  // Now and then no open link, or the open links out of slot order (the lookup then runs down to the first).
  num(1, F.length, chance(0.03) ? 0 : indexes.length);
  const order = chance(0.1) ? indexes.map((_, k) => indexes.length - 1 - k) : indexes.map((_, k) => k);
  for (const f of [F.radioNoMem, F.radioRefused, F.datagramsSent]) num(2, f, Math.floor(r.next() * 5));
  indexes.forEach((index, k) => {
    const l = linkObj(k);
    const [e, q, lens, tags, dg, ql, loss, seqs, times] = [l + 1, l + 2, l + 3, l + 4, l + 5, l + 6, l + 7, l + 8, l + 9];
    ref(1, 100 + (order[k] as number), l);
    bool(l, F.closed, 0.05);
    num(l, F.mac, chance(0.9) ? 0x240ac4000100 + index : 0x240ac4000fff);
    ref(l, F.loss, loss);
    ref(l, F.cols, times);
    num(l, F.index, index);
    ref(l, F.egress, e);
    ref(l, F.queueLevel, ql);
    num(l, F.lvl, pick([0, 0, 1, 2]));
    bool(l, F.dirty, 0.2);
    num(l, F.movedAt, time());
    bool(e, F.hot, 0.1);
    num(e, F.seq, pick([0, 1, 63, 64, 255, 256, 0xfffe, 0xffff, Math.floor(r.next() * 0x10000)]));
    num(e, F.committed, pick([0, 1]));
    num(e, F.committedGen, pick([0, 3]));
    num(e, F.committedSeq, Math.floor(r.next() * 0x10000));
    ref(e, F.queue, q);
    bool(q, F.pre, 0.9);
    num(q, F.nFrames, pick([1, 1, 1, 1, 1, 0, 2]));
    const head = Math.floor(r.next() * 4);
    num(q, F.headFrame, head);
    ref(q, F.lens, lens);
    ref(q, F.tags, tags);
    num(q, F.staged, pick([0, 5]));
    num(q, F.packed, pick([0, 1]));
    ref(q, F.datagram, dg);
    num(q, F.nBytes, pick([0, 10, 40, 100, 200]));
    num(q, F.capacityBytes, pick([200, 400]));
    num(q, F.head, 7);
    num(q, F.tail, 9);
    num(q, F.gapAt, pick([-1, 30]));
    for (let i = 0; i < 4; i++) {
      num(lens, 100 + i, pick([1, 20, 40, 246]));
      num(tags, 100 + i, pick([Tag.SAMPLE, Tag.SAMPLE, Tag.SAMPLE | Tag.CRITICAL, 0, Tag.VALUE | (7 << Tag.CHANNEL_SHIFT)]));
    }
    for (let i = 0; i < 3; i++) num(dg, 100 + i, Math.floor(r.next() * 256));
    num(ql, F.queue, pick([0, 0.1, 0.19, 0.2, 0.5, 1]));
    num(ql, F.quietUntil, time());
    num(loss, F.quietUntil, chance(0.7) ? pick([20, 150, Infinity]) : time());
    num(loss, F.latest, time());
    ref(loss, F.seqs, seqs);
    ref(loss, F.times, times);
    num(loss, F.timeoutMs, pick([200, 50]));
    num(loss, F.expiry, time());
    for (const f of [F.pendingLo, F.pendingHi, F.openLo, F.openHi]) num(loss, f, pick([0, -1, 1, 0x40000000, -0x80000000, (r.next() * 0x100000000) | 0]));
    num(loss, F.calmUntil, time());
    num(loss, F.judgedAt, time());
    num(loss, F.lvl, pick([0, 1, 2]));
    // The ring's numbers: some the stream's next, so that a slot is found taken.
    const seq = (cells.get(e * SLOTS + F.seq) as { v: number }).v;
    for (let i = 0; i < 64; i++) num(seqs, 100 + i, chance(0.3) ? (seq & ~63) | i : Math.floor(r.next() * 0x10000));
    for (let i = 0; i < 64; i += 7) num(times, 100 + i, time());
    num(times, 100 + ES_COL_RTT, pick([0, 3.5, 12]));
    for (let b = 0; b < 10; b++) {
      num(times, 100 + ES_COL_METER + b, pick([-Infinity, b, 10 + b, 0, 1]));
      num(times, 100 + ES_COL_METER + 10 + b, Math.floor(r.next() * 500));
    }
  });
  // The first answer is the time (mostly one the detectors are quiet past), the next the radio's status (mostly OK).
  const results = [pick([0, 1, 2, 3, 5, 8, 0.5, -1]), pick([0, 0, 0, 0, 1, 2, 5, 7]), ...Array.from({ length: 6 }, () => pick([0, 0, 1, 2, 5, 7, 6, 3, 8, 10, 20, 0.5]))];
  const macs = indexes.map((i) => 0x240ac4000100 + i);
  // Mostly the link in flight's own MAC (its status), else another's or a stranger's.
  const tx = cells.get(F.txLink);
  const txMac = tx?.k === 'ref' ? (cells.get(tx.v * SLOTS + F.mac) as { v: number }).v : NaN;
  const mac = txMac === txMac && chance(0.85) ? txMac : macs.length > 0 && chance(0.7) ? pick(macs) : 0x240ac4000fff;
  return { mac, ok: chance(0.9), cells, results };
}

interface SendCase {
  tag: number;
  seq: number;
  cells: Map<number, Cell>;
  results: number[];
}

/** A random store shaped as a link (0) handed a frame (1), its binding (2), egress (3), queue (4), the queue's bytes (5), lengths (6), tags (7), watermark (8). */
export function sendCase(r: Mulberry32): SendCase {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(r.next() * xs.length)] as T;
  const chance = (p: number): boolean => r.next() < p;
  const time = (): number => pick([0, 1, 2, 5, 10, 20, 0.5, -1, Infinity, -Infinity, NaN]);
  const cells = new Map<number, Cell>();
  const num = (o: number, s: number, v: number): void => void cells.set(o * SLOTS + s, { k: 'num', v });
  const ref = (o: number, s: number, to: number): void => void cells.set(o * SLOTS + s, { k: 'ref', v: to });
  const bool = (o: number, s: number, p: number): void => num(o, s, chance(p) ? 1 : 0);
  const cap = pick([100, 200, 400]);
  const length = pick([0, 1, 20, 70, 246, 247, 150, 300]);
  bool(0, F.closed, 0.05);
  ref(0, F.owner, 2);
  ref(0, F.egress, 3);
  ref(0, F.queueLevel, 8);
  num(0, F.index, Math.floor(r.next() * 20));
  num(0, F.lvl, pick([0, 0, 1, 2]));
  bool(0, F.dirty, 0.2);
  num(0, F.movedAt, time());
  num(1, F.length, length);
  for (let i = 0; i < Math.min(length, ELEMENTS); i++) num(1, 100 + i, Math.floor(r.next() * 256));
  if (chance(0.1)) ref(2, F.segment, 9);
  else cells.set(2 * SLOTS + F.segment, { k: 'null' });
  bool(2, F.dry, 0.3);
  bool(2, F.txBusy, 0.7);
  bool(2, F.radioWait, 0.1);
  num(2, F.queuedMask, pick([0, 1, -0x80000000, (r.next() * 0x100000000) | 0]));
  num(2, F.wakeAt, time());
  bool(3, F.hot, 0.1);
  num(3, F.committed, pick([0, 0, 0, 1]));
  ref(3, F.queue, 4);
  num(4, F.capacityBytes, cap);
  num(4, F.capacityFrames, pick([4, 4, 4, 0]));
  num(4, F.nFrames, pick([0, 0, 0, 1]));
  ref(4, F.mem, 5);
  ref(4, F.lens, 6);
  ref(4, F.tags, 7);
  num(4, F.head, 9);
  num(4, F.tail, 11);
  num(5, F.length, chance(0.95) ? cap + 250 : cap + 10);
  num(8, F.queue, pick([0, 0.1, 0.19, 0.2, 0.6]));
  num(8, F.quietUntil, time());
  const results = [pick([0, 1, 2, 5, 0.5]), pick([0, 1, 2]), pick([0, 1, 2])];
  return { tag: pick([Tag.SAMPLE, Tag.SAMPLE | Tag.CRITICAL, Tag.VALUE | (9 << Tag.CHANNEL_SHIFT)]), seq: Math.floor(r.next() * 1000), cells, results };
}

function sendRequest(c: SendCase): string {
  return `espsend ${bitsOf(c.tag)} ${c.seq} ${cellsText(c.cells)} ${c.results.map(bitsOf).join(',')}`;
}

function sendModelled(c: SendCase): string {
  const s = new FlatStore(c.cells, c.results, true);
  const took = espnowSend(s, c.tag, c.seq);
  return `${took ? 1 : 0} ${s.dump()}`;
}

export function request(c: StoreCase): string {
  return `espsent ${bitsOf(c.mac)} ${c.ok ? 1 : 0} ${cellsText(c.cells)} ${c.results.length ? c.results.map(bitsOf).join(',') : '-'}`;
}

function modelled(c: StoreCase): string {
  const s = new FlatStore(c.cells, c.results);
  espnowSent(s, c.mac, c.ok);
  return s.dump();
}

describe('device/native/espnowsent: the ESP-NOW send status and send in C against their script model', function () {
  this.timeout(180000);
  const native = useNativeHost(repo, 'espnowsent');
  const header = readFileSync(resolve(repo, 'device/native/espnowsent.h'), 'utf8');

  it('names the properties, objects and calls as the model does, and keeps a link’s numbers where the binding does', () => {
    const names = /#define ES_NAMES \\\n([\s\S]*?)\n\n/.exec(header);
    assert.ok(names, 'ES_NAMES in espnowsent.h');
    assert.deepEqual([...(names[1] as string).matchAll(/"([A-Za-z]+)"/g)].map((m) => m[1]), [...ES_FIELDS]);
    const objects = /enum \{\n\tkEsBinding,([\s\S]*?)kEsObjects\n\};/.exec(header);
    assert.ok(objects);
    const objectNames = ['kEsBinding', ...[...(objects[1] as string).matchAll(/(kEs[A-Za-z]+),/g)].map((m) => m[1])];
    assert.equal(objectNames.length, Es.OBJECTS);
    const calls = /enum \{\n\tkEsNow,([\s\S]*?)kEsCalls\n\};/.exec(header);
    assert.ok(calls);
    assert.equal(1 + [...(calls[1] as string).matchAll(/(kEs[A-Za-z]+),/g)].length, Object.keys(EsCall).length);
    assert.equal(ES_COL_METER, ESPNOW_COLUMNS.meter);
    assert.equal(ES_COL_RTT, ESPNOW_COLUMNS.rtt);
    assert.match(header, new RegExp(`#define kEsColMeter ${ESPNOW_COLUMNS.meter}\\n`));
    assert.match(header, new RegExp(`#define kEsColRtt ${ESPNOW_COLUMNS.rtt}\\n`));
    assert.match(header, new RegExp(`#define kEsMeterBuckets ${ESPNOW_COLUMNS.meterBuckets}\\n`));
  });

  it('leaves the store and makes the calls as the model does, for random stores', () => {
    const r = new Mulberry32(20261203);
    const cases = Array.from({ length: 3000 }, () => storeCase(r));
    const answers = native.check(cases.map(request));
    cases.forEach((c, i) => assert.equal(answers[i], modelled(c), `case ${i}: ${request(c)}`));
    // The cases reach every call and course: each call into script, the script's whole, the pump's fast course.
    const logs = answers.map((a) => a.split(' ')[1] as string);
    for (let w = 0; w < 8; w++) assert.ok(logs.some((l) => l.split(',').some((e) => e.startsWith(`${w}.`))), `some case calls ${w}`);
    assert.ok(logs.some((l) => l.split(',').length >= 3 && !l.includes('6.') && !l.includes('7.')), 'some case takes the whole course in C');
  });

  it('takes a frame into the link’s empty queue, or hands it to the script, as the model does, for random stores', () => {
    const r = new Mulberry32(20261204);
    const cases = Array.from({ length: 3000 }, () => sendCase(r));
    const answers = native.check(cases.map(sendRequest));
    cases.forEach((c, i) => assert.equal(answers[i], sendModelled(c), `case ${i}: ${sendRequest(c)}`));
    const logs = answers.map((a) => a.split(' ')[2] as string);
    for (const w of [EsCall.NOW, EsCall.SEND_IN_SCRIPT, EsCall.QUEUED, EsCall.PUMP_LATER]) assert.ok(logs.some((l) => l.split(',').some((e) => e.startsWith(`${w}.`))), `some case calls ${w}`);
    assert.ok(answers.some((a) => a.startsWith('1 ') && !(a.split(' ')[2] as string).includes(`${EsCall.SEND_IN_SCRIPT}.`)), 'some frame joins its queue in C');
  });

  it('a copy of the C that meters the header too, judges the watermark at 25 %, takes a time before 0, marks the loss detector’s open bit pending or writes a frame’s length over it answers otherwise', () => {
    const r = new Mulberry32(7);
    const cases = Array.from({ length: 1500 }, () => storeCase(r));
    const lines = cases.map(request);
    const sendCases = Array.from({ length: 1500 }, () => sendCase(r));
    const sendLines = sendCases.map(sendRequest);
    {
      const broken = buildBroken(native.host, repo, native.scratch, 'espnowsent.h', 'c->setByte(c, kEsMem, cap + kEsHeaderBytes, (uint8_t)length);', 'c->setByte(c, kEsMem, cap + kEsHeaderBytes + 1, (uint8_t)length);');
      const answers = native.host.nativeCheck(broken, sendLines);
      assert.ok(sendCases.some((c, i) => answers[i] !== sendModelled(c)), 'the copy that writes the frame’s length over its first byte differs from the model somewhere');
    }
    for (const [from, to] of [
      ['(c->get(c, kEsBinding, fTxLen) - kEsHeaderBytes)', '(c->get(c, kEsBinding, fTxLen))'],
      ['#define kEsRecovered 0.2', '#define kEsRecovered 0.25'],
      ['if (!(now >= 0 && now < c->get(c, kEsTxLoss, fQuietUntil))) {', 'if (!(now < c->get(c, kEsTxLoss, fQuietUntil))) {'],
      ['c->set(c, kEsLoss, lo ? fOpenLo : fOpenHi, esMask(esU32(c->get(c, kEsLoss, lo ? fOpenLo : fOpenHi)) | bit));', 'c->set(c, kEsLoss, lo ? fPendingLo : fPendingHi, esMask(esU32(c->get(c, kEsLoss, lo ? fOpenLo : fOpenHi)) | bit));'],
    ] as const) {
      const broken = buildBroken(native.host, repo, native.scratch, 'espnowsent.h', from, to);
      const answers = native.host.nativeCheck(broken, lines);
      assert.ok(
        cases.some((c, i) => answers[i] !== modelled(c)),
        `the copy with ${to} differs from the model somewhere`,
      );
    }
  });
});

// ------------------------------------------------------------------ the model in a real binding

const HUB_MAC = 0x240ac4000001;
const peerMac = (i: number): number => 0x240ac4000100 + i;

/** A radio over the air that now and then answers a send otherwise, by its own seeded draw. */
class MoodyRadio implements Radio {
  readonly log: string[] = [];
  private readonly draw: Mulberry32;
  constructor(private readonly inner: Radio, seed: number) {
    this.draw = new Mulberry32(seed);
  }
  setHandler(h: RadioHandler): void {
    this.inner.setHandler(h);
  }
  addPeer(mac: number, lmk: Uint8Array | null): number {
    return this.inner.addPeer(mac, lmk);
  }
  removePeer(mac: number): number {
    return this.inner.removePeer(mac);
  }
  send(mac: number, d: Uint8Array, length: number): number {
    const x = this.draw.next();
    const mood = x < 0.04 ? RadioStatus.BUSY : x < 0.07 ? RadioStatus.NO_MEM : x < 0.09 ? RadioStatus.ERROR : x < 0.11 ? RadioStatus.NOT_FOUND : RadioStatus.OK;
    if (mood === RadioStatus.NOT_FOUND) {
      // The driver lost the peer: it must be added again.
      this.inner.removePeer(mac);
      this.log.push(`lost ${mac}`);
    } else if (mood !== RadioStatus.OK) {
      this.log.push(`${mood} ${mac}`);
      return mood;
    }
    const r = this.inner.send(mac, d, length);
    this.log.push(`${r} ${mac} ${Buffer.from(d.subarray(0, length)).toString('hex')}`);
    return r;
  }
}

class SinkCore {
  readonly links: Link[] = [];
  events = 0;
  readonly attach = (link: Link): LinkSink => {
    this.links.push(link);
    return {
      frame: () => void this.events++,
      lost: () => void (this.events += 1000),
      levelChanged: () => void (this.events += 1000000),
    };
  };
}

const linkModel = new EsObjects();

/** A link whose `send` runs the model over its own objects (as the device runs the C). */
class ModelledLink extends EspNowLink {
  override send(frame: Uint8Array, tag: number, seq: number): boolean {
    return linkModel.send(this, frame, tag, seq);
  }
}

/** The binding whose `sent` runs the model over its own objects, and whose links are ModelledLink. */
class ModelledBinding extends EspNowBinding {
  readonly model = new EsObjects();
  override sent(mac: number, ok: boolean): void {
    this.model.sent(this, mac, ok);
  }
}
Object.defineProperty(ModelledBinding.prototype, 'Link', { value: ModelledLink });

interface World {
  air: SimAir;
  radio: MoodyRadio;
  binding: EspNowBinding;
  core: SinkCore;
  peers: SimPeer[];
}

/**
 * The binding's clock: the air's, or (`creep`) the air's moved on a hair at every read, as a
 * device's clock moves while the binding works: a binding that read it more or fewer times, or
 * at other moments, would see other instants.
 */
function clockOf(air: SimAir, creep: boolean): { now(): number } {
  if (!creep) return air;
  let reads = 0;
  return { now: () => air.now() + ++reads * 1e-6 };
}

export function world(seed: number, modelled: boolean, loss: number, creep = false): World {
  const air = new SimAir({ prng: new Mulberry32(seed), loss, retries: 1 }, 1000);
  const radio = new MoodyRadio(air.radio(HUB_MAC), seed + 1);
  const core = new SinkCore();
  const options = { clock: clockOf(air, creep), radio, attach: core.attach, allowUnencrypted: true, queueBytes: 600 };
  const binding = modelled ? new ModelledBinding(options) : new EspNowBinding(options);
  return { air, radio, binding, core, peers: [] };
}

const w = new CborWriter(new Uint8Array(256));
function ping(t0: number): Uint8Array {
  w.reset();
  encodeFrame({ type: FrameType.PING, t0 }, w);
  return w.subarray().slice();
}

/** What a world's binding holds, beyond what it reports: its scheduler's, and each link's timing, queue, numbering and detectors. */
function insides(b: EspNowBinding): string {
  const o = b as unknown as Record<string, unknown>;
  const head = ['txBusy', 'radioWait', 'dry', 'txAt', 'txLen', 'urgentMask', 'queuedMask', 'rrAfter', 'wakeAt'].map((k) => String(o[k]));
  const links = b.peers().map((l) => {
    const x = l as unknown as { egress: Record<string, unknown> & { queue: Record<string, unknown> }; loss: Record<string, unknown>; queueLevel: Record<string, unknown>; movedAt: number; dirty: boolean };
    const e = x.egress;
    const q = e.queue;
    return [l.rttMs, l.throughputBps, l.stalledMs(), x.movedAt, x.dirty, e['seq'], e['committedSeq'], e['committed'], e['hot'], q['nFrames'], q['nBytes'], q['head'], q['tail'], q['pre'], x.loss['quietUntil'], x.loss['expiry'], x.loss['latest'], x.loss['pendingLo'], x.loss['openLo'], x.queueLevel['queue'], x.queueLevel['quietUntil']].join(':');
  });
  return `${head.join(',')} ${links.join(' ')}`;
}

/** Drives a world for `ms` by `draw` (the same draws give both worlds the same offers), the binding ticked every `tickMs`. */
export function drive(wd: World, draw: Mulberry32, ms: number, tickMs = 1): string[] {
  const trace: string[] = [];
  const estop = new Uint8Array(ESTOP_FRAME_BYTES);
  encodeEstop(estop, 0, EstopKind.ASSERT, EstopSource.HUB_BUTTON, 1, 0, 1);
  const frames = [new Uint8Array(20).fill(1), new Uint8Array(60).fill(2), new Uint8Array(140).fill(3), new Uint8Array(246).fill(4)];
  for (let i = 0; i < 4; i++) {
    const p = new SimPeer(wd.air, peerMac(i), HUB_MAC);
    p.send(ping(0));
    wd.peers.push(p);
  }
  const end = wd.air.now() + ms;
  while (wd.air.now() < end) {
    const links = wd.binding.peers();
    // Light and heavy stretches in turn: a frame now and then (each datagram one frame), or up to three a millisecond.
    const heavy = Math.floor(wd.air.now() / 500) % 2 === 1;
    const n = heavy ? Math.floor(draw.next() * 4) : draw.next() < 0.25 ? 1 : 0;
    for (let k = 0; k < n; k++) {
      const l = links[Math.floor(draw.next() * links.length)] as EspNowLink | undefined;
      const f = frames[Math.floor(draw.next() * frames.length)] as Uint8Array;
      const x = draw.next();
      if (!l) continue;
      if (x < 0.01) l.writeAhead(estop);
      else l.send(f, x < 0.1 ? Tag.CRITICAL | Tag.VALUE : Tag.SAMPLE, Math.floor(x * 1000));
    }
    const x = draw.next();
    if (x < 0.003 && links.length > 0) (links[0] as EspNowLink).close();
    // Peers speak now and then (a closed one is admitted again).
    for (const p of wd.peers) if (draw.next() < 0.02) p.send(ping(wd.air.now()));
    wd.air.advance(wd.air.now() + 1);
    if (wd.air.now() % tickMs === 0) wd.binding.tick();
    const c = wd.binding.counters;
    trace.push(`${wd.air.now()} ${links.map((l) => `${l.mac}:${l.level}:${l.occupancy().toFixed(6)}:${l.lossRate().toFixed(6)}`).join(',')} ${JSON.stringify(c)} ${wd.core.events} ${insides(wd.binding)}`);
  }
  return trace;
}

describe('bench/espnow-sent: the script model of the C as the binding’s `sent` and its links’ `send`, against the script’s', function () {
  this.timeout(180000);

  const calls = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
  after(() => {
    // Over the worlds, the model's calls into script reach every one the C makes but the loss detector's own
    // sentInFlight (a ring slot still pending from 64 datagrams before: the random stores reach it).
    for (const w of [EsCall.NOW, EsCall.RADIO_SEND, EsCall.DRAINED, EsCall.JUDGE, EsCall.PUMP, EsCall.IN_SCRIPT, EsCall.PUMP_LATER, EsCall.SEND_IN_SCRIPT, EsCall.QUEUED]) {
      assert.ok((calls[w] as number) > 0, `some world calls ${w}`);
    }
  });

  for (const [seed, loss, tickMs, creep] of [
    [11, 0.02, 1, false],
    [12, 0.2, 1, false],
    [13, 0.3, 1, false],
    [14, 0.05, 20, false],
    [15, 0.1, 7, true],
    [16, 0.02, 1, true],
  ] as const) {
    it(`carries the same datagrams and counts, judges and times the same (seed ${seed}, ${loss * 100} % lost on the air, a tick every ${tickMs} ms${creep ? ', a clock that moves at every read' : ''})`, () => {
      linkModel.counts = esCounts();
      const a = world(seed, false, loss, creep);
      const b = world(seed, true, loss, creep);
      const ta = drive(a, new Mulberry32(seed * 7), 3000, tickMs);
      const tb = drive(b, new Mulberry32(seed * 7), 3000, tickMs);
      const m0 = (b.binding as ModelledBinding).model.counts;
      for (let i = 0; i < calls.length; i++) calls[i] = (calls[i] as number) + (m0.calls[i] as number) + (linkModel.counts.calls[i] as number);
      assert.ok(a.radio.log.length > 300, `the radio carried ${a.radio.log.length} datagrams`);
      assert.deepEqual(b.radio.log, a.radio.log);
      assert.deepEqual(tb, ta);
      // The model took its own course for most statuses and handed the rest to the script.
      const m = (b.binding as ModelledBinding).model.counts;
      assert.ok((m.calls[EsCall.RADIO_SEND] as number) > 50, `the model sent ${m.calls[EsCall.RADIO_SEND]} datagrams itself`);
      assert.ok((m.calls[EsCall.IN_SCRIPT] as number) > 0 && (m.calls[EsCall.PUMP] as number) > 0, 'and handed some to the script');
      const l = linkModel.counts;
      assert.ok((l.calls[EsCall.NOW] as number) > 50, `the model queued ${l.calls[EsCall.NOW]} frames itself`);
      assert.ok((l.calls[EsCall.SEND_IN_SCRIPT] as number) > 0, 'and handed some to the script');
    });
  }
});
