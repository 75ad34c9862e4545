// bindings/espnow: the datagram framing, one datagram in flight, the ACK bitmask feeding the
// loss detector, the ESTOP write-ahead, the §10.6 broadcast rule, and a real Hub over the
// simulated air end to end. Every run is on a virtual clock with a seeded PRNG.
import { DEFAULT_CATALOG } from '../../catalog/default.js';
import { loadCatalog } from '../../catalog/index.js';
import { CborWriter } from '../../hub/cbor.js';
import { encodeEstop, ESTOP_FRAME_BYTES, EstopKind, EstopSource, isEstopFrame } from '../../hub/estop-frame.js';
import { encodeData, encodeFrame, FrameType, MAX_HUB_FRAME_BYTES, type Frame } from '../../hub/frames.js';
import { Tag, tagOf, type GrantSet, type Link, type LinkSink } from '../../hub/ports.js';
import { SessionState } from '../../hub/session.js';
import { LOSS_ACK_TIMEOUT_MS } from '../../bindings/detector.js';
import { BroadcastSegment, effectiveRateHz, Route } from '../../bindings/espnow/broadcast.js';
import {
  AckTracker,
  ACK_BITS,
  BROADCAST_ACK_BYTES,
  DatagramCursor,
  DatagramError,
  DatagramFlag,
  DATAGRAM_MAX_BYTES,
  DATAGRAM_VERSION,
  DUPLICATE_SLOTS,
  DUPLICATE_WINDOW_MS,
  Egress,
  encodeBitmapAck,
  ESTOP_SLOTS,
  FrameQueue,
  HEADER_BYTES,
  MAX_DATAGRAM_FRAME,
  BitmapAck,
  parseBitmapAck,
  RETRANSMIT_LIMIT,
  seqNewer,
  SEQ_MASK,
  SeqWindow,
  writeBroadcastAck,
  writeHeader,
} from '../../bindings/espnow/datagram.js';
import {
  BROADCAST_MAC,
  ESPNOW_MAX_ENCRYPTED_PEERS,
  ESPNOW_MAX_PEERS,
  EspNowBinding,
  type EspNowLink,
  PEER_SILENCE_MS,
  RadioStatus,
  type Radio,
  type RadioHandler,
} from '../../bindings/espnow/link.js';
import { Mulberry32, SIM_DEFAULTS, SimAir, SimPeer } from '../../host-sim/links/espnow-air.js';
import { deepEqual, equal, ok } from '../lib/assert.js';
import { runs } from '../lib/env.js';
import { makeHub } from '../lib/hub-fixture.js';

const HUB_MAC = 0x240ac4000001;
const peerMac = (i: number): number => 0x240ac4000100 + i;
const catalog = loadCatalog(DEFAULT_CATALOG);
const IMU = catalog.byName('imu')!;
const SAFETY = catalog.byName('safety')!;
const w = new CborWriter(new Uint8Array(MAX_HUB_FRAME_BYTES));

function enc(f: Frame): Uint8Array {
  w.reset();
  encodeFrame(f, w);
  return w.subarray().slice();
}

const SIX = new Float64Array([0.5, -1.25, 9.75, 0.01, -0.02, 0.03]);
function data(channelId: number, seq: number, values: Float64Array = SIX, count = 6, gap = false): Uint8Array {
  w.reset();
  encodeData(w, channelId, seq, 1000 + seq, values, count, gap, 0);
  return w.subarray().slice();
}

/** The tags the core hands a link with (hub/ports.ts Tag): a non-critical STREAM sample of imu, its shared push, a control frame. */
const SAMPLE_TAG = tagOf(FrameType.DATA, Tag.SAMPLE, IMU.id);
const SHARED_TAG = SAMPLE_TAG | Tag.SHARED;
const control = (type: number): number => tagOf(type, Tag.CRITICAL);

/** A GrantSet as the core states one (WELCOME key 35, GRANT): priority 3 is a critical subscription. */
function grantSet(list: readonly { channelId: number; hz: number; priority?: number }[]): GrantSet {
  return {
    count: list.length,
    channelId: (i) => list[i]!.channelId,
    grantedHz: (i) => list[i]!.hz,
    priority: (i) => list[i]!.priority ?? 1,
  };
}

function estop(seq: number): Uint8Array {
  const b = new Uint8Array(ESTOP_FRAME_BYTES);
  encodeEstop(b, 0, EstopKind.ASSERT, EstopSource.HUB_BUTTON, 1, 0, seq);
  return b;
}

function hex(b: Uint8Array): string {
  let s = '';
  for (let i = 0; i < b.length; i++) s += (b[i] as number).toString(16).padStart(2, '0');
  return s;
}

/** The frames of one datagram, by a cursor. */
function framesOf(dg: Uint8Array): Uint8Array[] {
  const c = new DatagramCursor();
  equal(c.open(dg, dg.length), DatagramError.OK, 'datagram opens');
  const out: Uint8Array[] = [];
  while (c.next()) out.push(dg.slice(c.start, c.end));
  return out;
}

/** A core stand-in: records what the binding delivers. */
class StubCore {
  readonly frames: Uint8Array[] = [];
  readonly links: Link[] = [];
  lost = 0;
  levelChanges = 0;
  readonly attach = (link: Link): LinkSink => {
    this.links.push(link);
    return {
      frame: (b, s, e) => {
        this.frames.push(b.slice(s, e));
      },
      lost: () => {
        this.lost++;
      },
      levelChanged: () => {
        this.levelChanges++;
      },
    };
  };
}

/** Wraps a radio: records every datagram handed to it and how many are in flight at once. */
class RecordingRadio implements Radio, RadioHandler {
  readonly log: { mac: number; bytes: Uint8Array }[] = [];
  inFlight = 0;
  maxInFlight = 0;
  busyRefusals = 0;
  private handler: RadioHandler | null = null;
  constructor(private readonly inner: Radio) {
    inner.setHandler(this);
  }
  setHandler(h: RadioHandler): void {
    this.handler = h;
  }
  addPeer(mac: number, lmk: Uint8Array | null): number {
    return this.inner.addPeer(mac, lmk);
  }
  removePeer(mac: number): number {
    return this.inner.removePeer(mac);
  }
  /** While set, the radio answers every send BUSY (a driver that takes nothing). */
  hold = false;
  send(mac: number, d: Uint8Array, length: number): number {
    if (this.hold) return RadioStatus.BUSY;
    const r = this.inner.send(mac, d, length);
    if (r === RadioStatus.BUSY) this.busyRefusals++;
    if (r === RadioStatus.OK) {
      this.log.push({ mac, bytes: d.slice(0, length) });
      this.inFlight++;
      if (this.inFlight > this.maxInFlight) this.maxInFlight = this.inFlight;
    }
    return r;
  }
  sent(mac: number, ok: boolean): void {
    this.inFlight--;
    if (this.handler) this.handler.sent(mac, ok);
  }
  received(mac: number, d: Uint8Array, length: number): void {
    if (this.handler) this.handler.received(mac, d, length);
  }
}

interface Rig {
  air: SimAir;
  core: StubCore;
  radio: RecordingRadio;
  binding: EspNowBinding;
  /** Advances the air and ticks the binding in `stepMs` steps for `ms`, calling `each` before every step. */
  run(ms: number, stepMs: number, each?: (now: number) => void): void;
}

function rig(o: { loss?: number; retries?: number; broadcast?: boolean; seed?: number; queueBytes?: number } = {}): Rig {
  const air = new SimAir({ prng: new Mulberry32(o.seed ?? 1), loss: o.loss ?? 0, retries: o.retries ?? 0 }, 1000);
  const core = new StubCore();
  const radio = new RecordingRadio(air.radio(HUB_MAC));
  // Stations speak unencrypted here (the binding's work is the subject; test/core/link-security.test.ts has the keys).
  const opts = { clock: air, radio, attach: core.attach, broadcast: o.broadcast === true, allowUnencrypted: true } as const;
  const binding = new EspNowBinding(o.queueBytes ? { ...opts, queueBytes: o.queueBytes } : opts);
  return {
    air,
    core,
    radio,
    binding,
    run(ms, stepMs, each) {
      const end = air.now() + ms;
      while (air.now() < end) {
        if (each) each(air.now());
        air.advance(air.now() + stepMs);
        binding.tick();
      }
    },
  };
}

/** A peer that said something, so that the binding admitted it; returns its hub-side link. */
function openPeer(r: Rig, i: number): { peer: SimPeer; link: EspNowLink } {
  const peer = new SimPeer(r.air, peerMac(i), HUB_MAC);
  peer.send(enc({ type: FrameType.PING, t0: 0 }));
  r.run(10, 1);
  const link = r.binding.linkOf(peerMac(i));
  ok(link, 'the binding admitted the peer');
  return { peer, link };
}

// ------------------------------------------------------------------------------------------

describe('bindings/espnow: numbers', () => {
  it('datagram ≤ 250 bytes (ESP-NOW v1), header 3 bytes, frame ≤ 246 (the session mtu), version 1', () => {
    equal(DATAGRAM_MAX_BYTES, 250);
    equal(HEADER_BYTES, 3);
    equal(MAX_DATAGRAM_FRAME, 246);
    equal(BROADCAST_ACK_BYTES, 6);
    equal(DATAGRAM_VERSION, 1);
    equal(DatagramFlag.BROADCAST, 1);
    equal(DatagramFlag.BROADCAST_ACK, 2);
    equal(SEQ_MASK, 0xffff);
    equal(ACK_BITS, 32);
    equal(ESTOP_SLOTS, 4);
    equal(RETRANSMIT_LIMIT, 3);
    ok(Object.isFrozen(DatagramFlag) && Object.isFrozen(DatagramError) && Object.isFrozen(RadioStatus));
  });

  it('ESP-NOW limits: 20 peers (broadcast address included), 7 encrypted; 1 Mbps default PHY in the sim', () => {
    equal(ESPNOW_MAX_PEERS, 20);
    equal(ESPNOW_MAX_ENCRYPTED_PEERS, 7);
    equal(BROADCAST_MAC, 0xffffffffffff);
    equal(SIM_DEFAULTS.phyBps, 1_000_000);
    equal(SIM_DEFAULTS.maxPeers, 20);
    equal(SIM_DEFAULTS.maxEncrypted, 7);
    equal(PEER_SILENCE_MS, 3000);
  });

  it('the header byte is never 0xE5 (ESTOP) nor 0xA0–0xBF (a CBOR map) for any flags', () => {
    const b = new Uint8Array(3);
    for (let f = 0; f < 16; f++) {
      writeHeader(b, f, 0);
      ok(b[0] !== 0xe5 && !((b[0] as number) >= 0xa0 && (b[0] as number) <= 0xbf), `flags ${f}`);
    }
  });
});

describe('bindings/espnow: datagram packing', () => {
  it('bundles queued frames greedily into one datagram: 41-byte frames go six to a datagram (249 bytes)', () => {
    const e = new Egress(4096, 64);
    const frame = new Uint8Array(40).fill(0xa5);
    for (let i = 0; i < 20; i++) ok(e.queue.push(frame, SAMPLE_TAG));
    const out = e.datagram;
    const sizes: number[] = [];
    const counts: number[] = [];
    while (e.pending()) {
      const n = e.pack(HEADER_BYTES);
      writeHeader(out, 0, e.packedSeq());
      e.commit();
      sizes.push(n);
      counts.push(framesOf(out.slice(0, n)).length);
    }
    deepEqual(counts, [6, 6, 6, 2]);
    deepEqual(sizes, [249, 249, 249, 3 + 2 * 41]);
  });

  it('random frame sizes: never over 250 bytes, frames whole and in order, greedy (the next frame would not have fit)', () => {
    const rnd = new Mulberry32(42);
    const cases = runs(200, 40);
    for (let k = 0; k < cases; k++) {
      const e = new Egress(8192, 64);
      const out = e.datagram;
      const sent: Uint8Array[] = [];
      const n = 1 + Math.floor(rnd.next() * 40);
      for (let i = 0; i < n; i++) {
        const len = 1 + Math.floor(rnd.next() * MAX_DATAGRAM_FRAME);
        const f = new Uint8Array(len);
        for (let j = 0; j < len; j++) f[j] = (i * 31 + j) & 0xff;
        if (!e.queue.push(f, SAMPLE_TAG)) break;
        sent.push(f);
      }
      const got: Uint8Array[] = [];
      while (e.pending()) {
        const len = e.pack(HEADER_BYTES);
        ok(len > HEADER_BYTES && len <= DATAGRAM_MAX_BYTES, `datagram of ${len} bytes`);
        writeHeader(out, 0, e.packedSeq());
        e.commit();
        const fs = framesOf(out.slice(0, len));
        got.push(...fs);
        const next = sent[got.length];
        if (next) ok(len + 1 + next.length > DATAGRAM_MAX_BYTES, 'greedy: the next frame did not fit');
      }
      equal(got.length, sent.length);
      for (let i = 0; i < sent.length; i++) equal(hex(got[i]!), hex(sent[i]!), `frame ${i}`);
    }
  });

  it('a frame written into the datagram area as it is queued (pushPacked) packs, resends and refuses as one queued in the ring', () => {
    // Two streams fed alike: one queues every frame in its ring, the other as the binding does
    // (into an empty queue whose datagram area is free, straight into it). Every datagram, every
    // refusal and every resend must be the same, with frames and ESTOP frames queued while a
    // datagram is in the air and its send status (a failure or not) coming later.
    const rnd = new Mulberry32(7);
    const cases = runs(200, 40);
    for (let k = 0; k < cases; k++) {
      const a = new Egress(600, 8);
      const b = new Egress(600, 8);
      let estops = 0;
      let packed = 0;
      // The datagram in the air (its length), -1: none.
      let flying = -1;
      for (let step = 0; step < 200; step++) {
        const x = rnd.next();
        if (flying >= 0 && rnd.next() < 0.4) {
          // Its send status: every MAC retry failed, or not.
          if (rnd.next() < 0.4) {
            a.failed(a.datagram, HEADER_BYTES, flying);
            b.failed(b.datagram, HEADER_BYTES, flying);
          }
          flying = -1;
        } else if (x < 0.5) {
          const len = 1 + Math.floor(rnd.next() * MAX_DATAGRAM_FRAME);
          const f = new Uint8Array(len);
          for (let j = 0; j < len; j++) f[j] = (step * 17 + j) & 0xff;
          const tag = rnd.next() < 0.3 ? tagOf(FrameType.DATA, Tag.CRITICAL, SAFETY.id) : SAMPLE_TAG;
          const q = b.queue;
          if (q.frames === 0 && !b.hot && b.committed === 0) packed++;
          const okA = a.queue.push(f, tag);
          const okB = q.frames === 0 && !b.hot && b.committed === 0 ? q.pushPacked(f, tag) : q.push(f, tag);
          equal(okB, okA, `case ${k} step ${step}: taken alike`);
        } else if (x < 0.55) {
          const f = estop(estops++);
          a.writeAhead(f);
          b.writeAhead(f);
        } else if (flying < 0) {
          const la = a.pack(HEADER_BYTES);
          const lb = b.pack(HEADER_BYTES);
          equal(lb, la, `case ${k} step ${step}: datagram length`);
          if (la === 0) continue;
          equal(b.packedSeq(), a.packedSeq());
          equal(hex(b.datagram.subarray(HEADER_BYTES, lb)), hex(a.datagram.subarray(HEADER_BYTES, la)), `case ${k} step ${step}: datagram`);
          if (rnd.next() < 0.2) continue; // the radio refused it: nothing consumed
          equal(b.commit(), a.commit());
          flying = la;
        }
        deepEqual([b.queue.frames, b.queue.bytes, b.abandoned, b.urgent()], [a.queue.frames, a.queue.bytes, a.abandoned, a.urgent()]);
      }
      ok(packed > 0, 'some frames went into the datagram area');
    }
  });

  it('the queue is bounded in bytes and frames and refuses, never overwrites; it wraps its ring, frames kept whole', () => {
    const q = new FrameQueue(100, 4);
    ok(q.push(new Uint8Array(60).fill(1), 1));
    ok(!q.canPush(41));
    ok(q.push(new Uint8Array(40).fill(2), 2));
    ok(!q.push(new Uint8Array(1), 3), 'bytes full');
    q.shift(1);
    ok(q.push(new Uint8Array(50).fill(3), 4), 'wraps');
    deepEqual([q.frames, q.bytes, q.lengthAt(0), q.lengthAt(1), q.tagAt(0), q.tagAt(1)], [2, 90, 40, 50, 2, 4]);
    q.copyFrame(0, q.capacityBytes);
    ok(q.datagram.subarray(0, 40).every((x) => x === 2), 'the older frame');
    q.copyFrame(1, q.capacityBytes);
    ok(q.datagram.subarray(0, 50).every((x) => x === 3), 'the wrapped frame, whole');
    q.shift(1);
    q.copyFrame(0, q.capacityBytes);
    ok(q.datagram.subarray(0, 50).every((x) => x === 3), 'still the wrapped frame after the gap is passed');
    equal(q.tagAt(0), 4);
    // Contiguous records: 40 bytes are free (10 at the end, 30 at the front), yet no 35-byte frame fits.
    const q3 = new FrameQueue(100, 8);
    for (let i = 0; i < 3; i++) ok(q3.push(new Uint8Array(30).fill(i + 1)));
    q3.shift(1);
    equal(q3.capacityBytes - q3.bytes, 40);
    ok(!q3.canPush(35) && !q3.push(new Uint8Array(35)), 'a frame is never split across the ring’s end');
    ok(q3.push(new Uint8Array(30).fill(9)), 'but one that fits at the front goes there');
    q3.copyFrame(2, q3.capacityBytes);
    ok(q3.datagram.subarray(0, 30).every((x) => x === 9));
    const q2 = new FrameQueue(1000, 2);
    ok(q2.push(new Uint8Array(1)) && q2.push(new Uint8Array(1)));
    ok(!q2.canPush(1), 'frames full');
    ok(!q2.canPush(0), 'an empty frame is refused');
  });

  it('sequences: +1 per committed datagram, wrapping 65535 → 0; a refused pack consumes nothing', () => {
    const e = new Egress(1024, 8);
    e.seq = 65534;
    const out = e.datagram;
    const seen: number[] = [];
    for (let i = 0; i < 4; i++) {
      e.queue.push(new Uint8Array([0xa1, 0, 13]), control(FrameType.PING));
      const n = e.pack(HEADER_BYTES);
      ok(n > 0);
      if (i === 1) {
        // packed but not committed (the radio refused): the same frames go in the next pack
        const first = hex(out.slice(HEADER_BYTES, n));
        equal(e.pack(HEADER_BYTES), n);
        equal(hex(out.slice(HEADER_BYTES, n)), first);
      }
      seen.push(e.commit());
    }
    deepEqual(seen, [65534, 65535, 0, 1]);
    equal(e.seq, 2);
    ok(seqNewer(0, 65535) && seqNewer(5, 65530) && !seqNewer(65535, 0) && !seqNewer(7, 7));
  });

  it('the documented examples (docs/_espnow.md §1), byte for byte', () => {
    const e = new Egress(256, 4);
    e.seq = 7;
    const ping = enc({ type: FrameType.PING, t0: 0 });
    e.queue.push(ping, control(FrameType.PING));
    const out = e.datagram;
    const n = e.pack(HEADER_BYTES);
    writeHeader(out, 0, e.packedSeq());
    equal(hex(out.slice(0, n)), '10000706a2000d181f00');
    const o = new Uint8Array(DATAGRAM_MAX_BYTES);
    writeHeader(o, DatagramFlag.BROADCAST_ACK, 12);
    writeBroadcastAck(o, 65534, 0xffffffff);
    w.reset();
    encodeBitmapAck(w, 300, 4294967291);
    o[HEADER_BYTES + BROADCAST_ACK_BYTES] = w.pos;
    o.set(w.subarray(), HEADER_BYTES + BROADCAST_ACK_BYTES + 1);
    const len = HEADER_BYTES + BROADCAST_ACK_BYTES + 1 + w.pos;
    equal(hex(o.slice(0, len)), '12000cfffeffffffff0fa3000c181d19012c181e1afffffffb');
    const c = new DatagramCursor();
    equal(c.open(o, len), DatagramError.OK);
    deepEqual([c.flags, c.seq, c.ackBase, c.ackBitmap], [DatagramFlag.BROADCAST_ACK, 12, 65534, 0xffffffff]);
    const parsed = new BitmapAck();
    ok(c.next() && parseBitmapAck(o, c.start, c.end, parsed));
    deepEqual([parsed.base, parsed.bitmap], [300, 4294967291]);
  });

  it('the cursor refuses a malformed datagram whole and reads bare ESTOP and CBOR frames', () => {
    const c = new DatagramCursor();
    const ok3 = new Uint8Array([0x10, 0, 7, 3, 0xa1, 0, 13]);
    equal(c.open(ok3, ok3.length), DatagramError.OK);
    equal(c.seq, 7);
    ok(c.next());
    deepEqual([c.start, c.end, c.next()], [4, 7, false]);
    equal(c.open(new Uint8Array([0x20, 0, 0, 1, 0]), 5), DatagramError.VERSION);
    equal(c.open(new Uint8Array([0x14, 0, 0, 1, 0]), 5), DatagramError.FLAGS);
    equal(c.open(new Uint8Array([0x10, 0, 0, 0]), 4), DatagramError.LENGTH, 'zero length');
    equal(c.open(new Uint8Array([0x10, 0, 0, 1, 0xa0, 5, 1]), 7), DatagramError.LENGTH, 'overrun after a good frame');
    equal(c.open(new Uint8Array([0x10, 0, 0]), 3), DatagramError.NO_FRAME);
    equal(c.open(new Uint8Array(251), 251), DatagramError.TOO_LONG);
    equal(c.open(new Uint8Array(0), 0), DatagramError.EMPTY);
    const e = estop(9);
    equal(c.open(e, e.length), DatagramError.OK);
    ok(c.bare && c.next());
    deepEqual([c.start, c.end, c.next()], [0, 12, false]);
    const ba = new Uint8Array(9);
    writeHeader(ba, DatagramFlag.BROADCAST_ACK, 300);
    writeBroadcastAck(ba, 0xfffe, 0xfffffffb);
    equal(c.open(ba, ba.length), DatagramError.OK, 'a broadcast ACK alone is a datagram');
    equal(c.ackBase, 0xfffe);
    equal(c.ackBitmap, 0xfffffffb);
    ok(!c.next());
  });
});

describe('bindings/espnow: the ACK bitmask (§13.3)', () => {
  it('encodes ACK {0:12, 29:300, 30:4294967291} exactly as docs/protocol.md §5.12 and encodeFrame do, and parses it back', () => {
    w.reset();
    encodeBitmapAck(w, 300, 4294967291);
    const mine = w.subarray().slice();
    equal(hex(mine), 'a3000c181d19012c181e1afffffffb');
    equal(hex(enc({ type: FrameType.ACK, ackBase: 300, ackBitmap: 4294967291 })), hex(mine));
    const parsed = new BitmapAck();
    ok(parseBitmapAck(mine, 0, mine.length, parsed));
    equal(parsed.base, 300);
    equal(parsed.bitmap, 4294967291);
    const stream = enc({ type: FrameType.ACK, acked: 5 });
    ok(!parseBitmapAck(stream, 0, stream.length, parsed), 'the stream form goes to the core');
    ok(!parseBitmapAck(mine, 0, mine.length - 1, parsed), 'truncated');
    // The long way: an ACK whose base is not in its shortest head.
    const long = Uint8Array.from([0xa3, 0x00, 0x0c, 0x18, 0x1d, 0x1a, 0, 0, 0x01, 0x2c, 0x18, 0x1e, 0x07]);
    ok(parseBitmapAck(long, 0, long.length, parsed));
    deepEqual([parsed.base, parsed.bitmap, parsed.at], [300, 7, long.length]);
    ok(!parseBitmapAck(long, 0, long.length - 1, parsed), 'a head past the end');
  });

  it('the tracker: bit i ⇔ datagram base − i received, across the 16-bit wrap; duplicates and late arrivals', () => {
    const t = new AckTracker();
    for (const s of [65533, 65534, 0, 1]) t.record(s); // 65535 missing
    equal(t.base, 1);
    equal(t.bitmap, 0b11011);
    t.record(65535); // late
    equal(t.bitmap, 0b11111);
    t.record(1); // duplicate
    equal(t.bitmap, 0b11111);
    t.record(40); // 39 ahead: everything older falls out of the window
    equal(t.base, 40);
    equal(t.bitmap, 1);
    t.record(35);
    equal(t.bitmap, 0b100001);
    t.record(0); // 40 behind: the sender started over
    equal(t.base, 0);
    equal(t.bitmap, 1);
  });

  it('the documented example: base 300, bitmap 0xFFFFFFFB acknowledges 269–300 except 298', () => {
    const t = new AckTracker();
    for (let s = 269; s <= 300; s++) if (s !== 298) t.record(s);
    equal(t.base, 300);
    equal(t.bitmap, 4294967291);
  });
});

describe('bindings/espnow: duplicates (§13.3.3)', () => {
  it(`a receiver drops a number it got within ${DUPLICATE_WINDOW_MS} ms, in ${DUPLICATE_SLOTS} slots, across the wrap`, () => {
    equal(DUPLICATE_WINDOW_MS, 1000);
    equal(DUPLICATE_SLOTS, 32);
    const w = new SeqWindow();
    ok(!w.seen(65534, 0));
    ok(!w.seen(65535, 1));
    ok(!w.seen(0, 2), '0 follows 65535: new');
    ok(w.seen(65535, 3), 'a resend of 65535 after 0 arrived');
    ok(w.seen(0, 4));
    ok(w.seen(0, 4 + DUPLICATE_WINDOW_MS), 'at the edge of the window');
    ok(!w.seen(1, 5));
    ok(!w.seen(1 + DUPLICATE_SLOTS, 6), 'a number 32 later takes the slot');
    ok(!w.seen(1, 7), 'and the older one is forgotten');
    ok(!w.seen(65534, 2000), 'long after: a sender that started over');
    w.reset();
    ok(!w.seen(1, 2001));
  });

  it('a real Hub over an air that loses every MAC acknowledgement: one WELCOME, no NACK, one PONG per PING', () => {
    const fx = makeHub();
    const air = new SimAir({ prng: new Mulberry32(5), loss: 0, ackLoss: 1, retries: 1 }, fx.clock.t);
    const binding = new EspNowBinding({ clock: air, radio: air.radio(HUB_MAC), attach: (l) => fx.hub.attach(l), allowUnencrypted: true });
    const peer = new SimPeer(air, peerMac(1), HUB_MAC);
    peer.send(enc({ type: FrameType.HELLO, version: 1, name: 'pendant', subWishes: [{ channelId: SAFETY.id, wishedRateHz: 10 }] }));
    const step = (ms: number): void => {
      fx.clock.advance(ms);
      air.advance(fx.clock.t);
      binding.tick();
      fx.hub.tick();
    };
    for (let i = 0; i < 40; i++) step(5);
    for (let k = 0; k < 5; k++) {
      peer.send(enc({ type: FrameType.PING, t0: k }));
      for (let i = 0; i < 40; i++) step(5);
    }
    const got = peer.take();
    equal(got.filter((f) => f.type === FrameType.WELCOME).length, 1, 'WELCOME once, though every datagram was resent');
    equal(got.filter((f) => f.type === FrameType.NACK).length, 0, 'no second HELLO reached the hub (it would be MALFORMED, §6.1)');
    deepEqual(
      got.filter((f) => f.type === FrameType.PONG).map((f) => (f.type === FrameType.PONG ? f.t0 : -1)),
      [0, 1, 2, 3, 4],
    );
    ok(peer.duplicates > 0 && binding.counters.duplicates > 0, 'both sides dropped resends');
    equal(fx.hub.sessions().length, 1);
  });
});

describe('bindings/espnow: the link over the simulated air', () => {
  it('one datagram in flight: the next is packed only after the send status, bundling what queued meanwhile', () => {
    const r = rig();
    const { peer, link } = openPeer(r, 1);
    const before = r.radio.log.length;
    const f = data(IMU.id, 1);
    for (let i = 0; i < 15; i++) ok(link.send(f, SAMPLE_TAG, i + 1), 'the link takes it');
    r.run(200, 1);
    equal(r.radio.maxInFlight, 1);
    equal(r.radio.busyRefusals, 0);
    const dgs = r.radio.log.slice(before).filter((s) => s.mac === peerMac(1));
    // the first went alone the moment it arrived; the other 14 waited for its status and were bundled
    equal(framesOf(dgs[0]!.bytes).length, 1);
    equal(dgs.length, 1 + Math.ceil(14 / Math.floor((DATAGRAM_MAX_BYTES - HEADER_BYTES) / (f.length + 1))));
    for (const d of dgs) ok(d.bytes.length <= DATAGRAM_MAX_BYTES);
    equal(peer.take(FrameType.DATA).length, 15);
    const seqs = dgs.map((d) => ((d.bytes[1] as number) << 8) | (d.bytes[2] as number));
    for (let i = 1; i < seqs.length; i++) equal(seqs[i], (seqs[i - 1]! + 1) & 0xffff, 'consecutive datagram numbers');
  });

  it('stalledMs: a backlog the radio takes nothing from counts up; a datagram sent resets it; empty reads 0', () => {
    const r = rig();
    const { link } = openPeer(r, 1);
    r.run(50, 1);
    equal(link.stalledMs(), 0, 'empty');
    r.radio.hold = true;
    const f = data(IMU.id, 1);
    for (let i = 0; i < 3; i++) ok(link.send(f, SAMPLE_TAG, i + 1));
    r.run(600, 1);
    ok(link.stalledMs() >= 599 && link.stalledMs() <= 600, `stalled ${link.stalledMs()} ms`);
    r.radio.hold = false;
    r.run(20, 1);
    equal(link.stalledMs(), 0, 'sent, and nothing left');
  });

  it('send refuses (false, nothing queued) a frame over the mtu and any frame a full queue has no room for (the core then drops, §10.4)', () => {
    const r = rig({ queueBytes: 256 });
    const { link } = openPeer(r, 1);
    equal(link.mtu, 246);
    equal(link.caps.mtu, 246);
    ok(link.caps.datagram && !link.caps.broadcast);
    r.radio.hold = true; // nothing leaves: what the queue holds stays there
    ok(!link.canSend(247));
    ok(!link.send(new Uint8Array(247).fill(0xa0), SAMPLE_TAG, 1), 'over the mtu');
    equal(link.egress.queue.frames, 0, 'and nothing was queued');
    ok(link.canSend(246));
    const f = new Uint8Array(100).fill(0xa0);
    let n = 0;
    while (link.send(f, SAMPLE_TAG, n + 1)) n++;
    ok(n >= 2 && n <= 4, `queued ${n}`);
    equal(link.egress.queue.frames, n, 'the refused frame was not queued');
    ok(!link.canSend(100));
    ok(link.occupancy() > 0.5);
  });

  for (const [loss, lo, hi, level] of [
    [0, 0, 0, 0],
    [0.05, 0.01, 0.1, 0],
    [0.15, 0.1, 0.22, 1],
    [0.4, 0.3, 0.6, 2],
  ] as const) {
    it(`loss ${loss * 100} % per frame on the air (no MAC retries): the detector reads it from send status + ACK bitmask and reaches level ${level}`, () => {
      const r = rig({ loss, retries: 0, seed: 11 });
      const { link } = openPeer(r, 1);
      const el = r.binding.linkOf(peerMac(1))!;
      const f = data(IMU.id, 1);
      let maxLevel = 0;
      let reachedAt = -1;
      const start = r.air.now();
      r.run(8000, 5, (now) => {
        link.send(f, SAMPLE_TAG, 0);
        const l = link.level;
        if (l > maxLevel) {
          maxLevel = l;
          reachedAt = now - start;
        }
      });
      const rate = el.loss.ratio();
      ok(rate >= lo && rate <= hi, `loss read ${rate}`);
      equal(maxLevel, level, `highest level (reached after ${reachedAt} ms)`);
      if (loss === 0) equal(el.loss.lostInWindow(), 0);
      ok(el.loss.resolvedInWindow() > 100, 'the window is full of evidence');
    });
  }

  it('MAC retries hide per-frame loss: 40 % per frame with 5 retries delivers almost everything (level 0)', () => {
    const r = rig({ loss: 0.4, retries: 5, seed: 3 });
    const { link } = openPeer(r, 1);
    const el = r.binding.linkOf(peerMac(1))!;
    const f = data(IMU.id, 1);
    let maxLevel = 0;
    r.run(4000, 5, () => {
      link.send(f, SAMPLE_TAG, 0);
      maxLevel = Math.max(maxLevel, link.level);
    });
    ok(el.loss.ratio() < 0.05, `loss read ${el.loss.ratio()}`);
    equal(maxLevel, 0);
    ok(r.air.counters.attempts > r.air.counters.transmissions * 1.3, 'the retries cost airtime');
  });

  it('a radio that cannot keep up loses nothing, yet the queue’s watermark raises the level; it clears when the load goes', () => {
    const r = rig();
    const { link } = openPeer(r, 1);
    const el = r.binding.linkOf(peerMac(1))!;
    const f = new Uint8Array(200).fill(0xa0);
    let refused = 0;
    // 200 kB/s offered to a channel that carries about 77 kB/s of payload
    const changes0 = r.core.levelChanges;
    r.run(2500, 1, () => {
      if (!link.send(f, SAMPLE_TAG, 0)) refused++;
    });
    ok(refused > 1000, `the full queue refused ${refused} frames`);
    equal(el.loss.ratio(), 0);
    equal(link.level, 2, 'above 90 % for a second');
    ok(r.core.levelChanges > changes0, 'the core was told the level changed');
    r.run(1200, 10);
    equal(link.level, 1, 'the queue drained: back to 1 after 1 s');
    r.run(5000, 10);
    equal(link.level, 0, 'and to 0 after 5 s');
  });

  it('an unanswered peer reads 100 % loss after the ACK timeout and is closed as lost after 3 s of silence (§6.6)', () => {
    const r = rig();
    const { peer, link } = openPeer(r, 1);
    const el = r.binding.linkOf(peerMac(1))!;
    peer.radio.setHandler({ sent() {}, received() {} }); // the peer goes deaf and mute
    const f = data(IMU.id, 1);
    r.run(LOSS_ACK_TIMEOUT_MS + 1500, 5, () => {
      link.send(f, SAMPLE_TAG, 0);
    });
    ok(el.loss.ratio() > 0.9, `loss ${el.loss.ratio()}`);
    equal(link.level, 2);
    equal(r.core.lost, 0);
    r.run(PEER_SILENCE_MS, 10);
    equal(r.core.lost, 1);
    equal(r.radio.addPeer(peerMac(1), null), RadioStatus.OK, 'the radio forgot the peer (removePeer)');
    ok(!link.canSend(10));
    ok(!link.send(f, SAMPLE_TAG, 0), 'a closed link takes nothing');
  });

  it('ESTOP write-ahead: the very next datagram to the peer is the ESTOP, ahead of a full queue; the wait is the datagram in flight', () => {
    const r = rig();
    const { peer, link } = openPeer(r, 1);
    r.run(100, 1);
    const big = new Uint8Array(200).fill(0xa0);
    // one 200-byte datagram goes on air at once; the queue then fills up behind it
    while (link.send(big, SAMPLE_TAG, 0));
    ok(link.occupancy() > 0.5);
    const atWrite = r.air.now();
    const before = r.radio.log.length;
    const e = estop(77);
    link.writeAhead(e);
    r.run(60, 0.1);
    const next = r.radio.log[before]!;
    equal(next.mac, peerMac(1));
    const fs = framesOf(next.bytes);
    deepEqual(fs.map(hex), [hex(e)], 'the next datagram is the ESTOP, alone');
    const got = peer.inbox.findIndex((x) => x.bytes.length === 12 && isEstopFrame(x.bytes, 0));
    ok(got >= 0);
    const waited = peer.inbox[got]!.at - atWrite;
    const bound = r.air.airtimeMs(DATAGRAM_MAX_BYTES, true) * 2;
    ok(waited <= bound, `ESTOP arrived ${waited} ms after the write (bound ${bound} ms)`);
    // only the datagram already in flight reached the peer before it; the queue follows it
    const datasBefore = peer.inbox.slice(0, got).filter((x) => x.bytes.length === 200).length;
    equal(datasBefore, 1, 'queued frames that overtook it');
    ok(peer.inbox.slice(got).filter((x) => x.bytes.length === 200).length > 0);
  });

  it('an ESTOP whose resends all failed while the peer was out of reach goes again when the peer is heard (§11.2)', () => {
    const r = rig();
    const { peer, link } = openPeer(r, 1);
    r.run(100, 1);
    const el = r.binding.linkOf(peerMac(1))!;
    const heard = peer.inbox.length;
    r.air.loss = 1; // the peer is out of reach: nothing arrives, no MAC acknowledgement comes back
    r.air.ackLoss = 1;
    const e = estop(91);
    link.writeAhead(e);
    r.run(200, 1);
    ok(el.egress.abandoned >= 1, 'the resends ran out');
    equal(peer.inbox.slice(heard).filter((x) => isEstopFrame(x.bytes, 0)).length, 0);
    r.air.loss = 0;
    r.air.ackLoss = 0;
    r.run(200, 1);
    equal(peer.inbox.slice(heard).filter((x) => isEstopFrame(x.bytes, 0)).length, 0, 'nothing sends it until the peer is heard');
    peer.send(enc({ type: FrameType.PING, t0: 1 }));
    r.run(50, 1);
    const got = peer.inbox.slice(heard).filter((x) => isEstopFrame(x.bytes, 0));
    equal(got.length, 1, 'heard again: the ESTOP it is owed goes ahead');
    deepEqual(hex(got[0]!.bytes), hex(e));
    equal(el.egress.estopsReowed, 1);
    // A newer ESTOP written while the first was owed replaces it: only the newest state is sent.
    r.air.loss = 1;
    r.air.ackLoss = 1;
    link.writeAhead(estop(92));
    r.run(200, 1);
    link.writeAhead(estop(93));
    r.run(200, 1);
    r.air.loss = 0;
    r.air.ackLoss = 0;
    const before = peer.inbox.length;
    peer.send(enc({ type: FrameType.PING, t0: 2 }));
    r.run(50, 1);
    deepEqual(peer.inbox.slice(before).filter((x) => isEstopFrame(x.bytes, 0)).map((x) => hex(x.bytes)), [hex(estop(93))]);
  });

  it('ESTOP goes before other peers’ queued traffic too (urgent streams are served first, round-robin after)', () => {
    const r = rig();
    const a = openPeer(r, 1);
    const b = openPeer(r, 2);
    const c = openPeer(r, 3);
    r.run(100, 1);
    const big = new Uint8Array(200).fill(0xa0);
    while (a.link.send(big, SAMPLE_TAG, 0)); // the first is on air, the rest queue
    while (b.link.send(big, SAMPLE_TAG, 0)); // round-robin would serve peer 2 next
    const before = r.radio.log.length;
    c.link.writeAhead(estop(5));
    r.run(40, 0.1);
    deepEqual(r.radio.log.slice(before, before + 3).map((x) => x.mac), [peerMac(3), peerMac(2), peerMac(1)]);
  });

  it('a datagram whose every MAC retry failed: control frames and ESTOP go again (at most 3 more times), DATA never does', () => {
    const r = rig();
    const { link } = openPeer(r, 1);
    r.run(100, 1);
    r.air.loss = 1;
    const filler = data(IMU.id, 4);
    const grant = enc({ type: FrameType.GRANT, subGrants: [] });
    const d = data(IMU.id, 5);
    const e = estop(3);
    link.send(filler, SAMPLE_TAG, 4); // on air at once: the rest queues behind it
    link.send(grant, control(FrameType.GRANT), 0);
    link.send(d, SAMPLE_TAG, 5);
    link.writeAhead(e);
    r.run(300, 1);
    const sent = r.radio.log.filter((x) => x.mac === peerMac(1));
    const mine = sent.map((x) => framesOf(x.bytes).map(hex));
    deepEqual(mine, [
      [hex(filler)], // failed, and gone
      [hex(e)], // the ESTOP alone, then its three retransmissions
      [hex(e)],
      [hex(e)],
      [hex(e)],
      [hex(grant), hex(d)], // then the queue
      [hex(grant)], // the GRANT again, three times; the DATA never
      [hex(grant)],
      [hex(grant)],
    ]);
    // §13.3.3: a resend carries its datagram's own number, so a peer that has it drops it.
    const seqs = sent.map((x) => ((x.bytes[1] as number) << 8) | (x.bytes[2] as number));
    const s0 = seqs[0]!;
    deepEqual(seqs, [s0, s0 + 1, s0 + 1, s0 + 1, s0 + 1, s0 + 2, s0 + 2, s0 + 2, s0 + 2]);
    equal(r.binding.linkOf(peerMac(1))!.egress.abandoned, 2, 'after the last attempt the ESTOP and the GRANT are abandoned');
  });

  it('what a failed datagram owes follows the tags its frames were queued with, never their bytes: CRITICAL and ESTOP go again', () => {
    const e = new Egress(1024, 16);
    const crit = data(SAFETY.id, 1, new Float64Array([1, 0, 2]), 3);
    const sample = data(IMU.id, 2);
    const health = enc({ type: FrameType.HEALTH, text: 'x' }); // a control frame the core queued without CRITICAL (a HEALTH chunk)
    const grant = enc({ type: FrameType.GRANT, subGrants: [] });
    ok(e.queue.push(crit, tagOf(FrameType.DATA, Tag.CRITICAL, SAFETY.id)));
    ok(e.queue.push(sample, SAMPLE_TAG));
    ok(e.queue.push(health, tagOf(FrameType.HEALTH, 0)));
    ok(e.queue.push(grant, control(FrameType.GRANT)));
    const n = e.pack(HEADER_BYTES);
    writeHeader(e.datagram, 0, e.packedSeq());
    const seq = e.commit();
    deepEqual(framesOf(e.datagram.slice(0, n)).map(hex), [crit, sample, health, grant].map(hex));
    ok(!e.pending());
    e.failed(e.datagram, HEADER_BYTES, n);
    ok(e.urgent() && e.resendNext(), 'a resend is owed');
    let m = e.pack(HEADER_BYTES);
    writeHeader(e.datagram, 0, e.packedSeq());
    equal(e.packedSeq(), seq, 'under the failed datagram’s own number');
    deepEqual(framesOf(e.datagram.slice(0, m)).map(hex), [crit, grant].map(hex), 'the CRITICAL DATA and the GRANT; not the sample, not the untagged HEALTH');
    equal(e.commit(), seq);
    for (let k = 2; k <= RETRANSMIT_LIMIT; k++) {
      e.failed(e.datagram, HEADER_BYTES, m);
      m = e.pack(HEADER_BYTES);
      writeHeader(e.datagram, 0, e.packedSeq());
      deepEqual(framesOf(e.datagram.slice(0, m)).map(hex), [crit, grant].map(hex), `attempt ${k}`);
      equal(e.commit(), seq);
    }
    equal(e.abandoned, 0);
    e.failed(e.datagram, HEADER_BYTES, m);
    ok(!e.pending(), `no more than ${RETRANSMIT_LIMIT} resends`);
    equal(e.abandoned, 2);
    equal(e.seq, (seq + 1) & SEQ_MASK, 'resends took no new number');
  });

  it('a frame sent straight from the caller’s buffer (direct) owes a resend as if it had been queued: CRITICAL yes, a sample no', () => {
    const e = new Egress(1024, 16);
    const crit = data(SAFETY.id, 1, new Float64Array([1, 0, 2]), 3);
    const seq = e.direct(crit, tagOf(FrameType.DATA, Tag.CRITICAL, SAFETY.id));
    e.failed(e.datagram, HEADER_BYTES, HEADER_BYTES + 1 + crit.length);
    ok(e.resendNext(), 'a resend is owed');
    const m = e.pack(HEADER_BYTES);
    equal(e.packedSeq(), seq);
    deepEqual(framesOf(e.datagram.slice(0, m)).map(hex), [hex(crit)]);
    equal(e.commit(), seq);
    const sample = data(IMU.id, 2);
    e.direct(sample, SAMPLE_TAG);
    e.failed(e.datagram, HEADER_BYTES, HEADER_BYTES + 1 + sample.length);
    ok(!e.pending(), 'a sample is gone with its datagram');
  });

  it('frames queued across the ring’s end pack whole and in order, and the reliable ones among them are owed again', () => {
    const e = new Egress(300, 8);
    const q = e.queue;
    const a = new Uint8Array(200).fill(1);
    const b = new Uint8Array(80).fill(2);
    const c = new Uint8Array(50).fill(3);
    const d = new Uint8Array(30).fill(4);
    ok(q.push(a, SAMPLE_TAG) && q.push(b, control(FrameType.PONG)));
    let n = e.pack(HEADER_BYTES);
    writeHeader(e.datagram, 0, e.packedSeq());
    e.commit();
    equal(n, HEADER_BYTES + 1 + a.length, 'a alone: b does not fit after it');
    // b lies at 200–280: c does not fit before the ring's end and goes to the front, d after it.
    ok(q.push(c, SAMPLE_TAG) && q.push(d, control(FrameType.GRANT)));
    n = e.pack(HEADER_BYTES);
    writeHeader(e.datagram, 0, e.packedSeq());
    const seq = e.commit();
    deepEqual(framesOf(e.datagram.slice(0, n)).map(hex), [b, c, d].map(hex));
    e.failed(e.datagram, HEADER_BYTES, n);
    n = e.pack(HEADER_BYTES);
    equal(e.packedSeq(), seq);
    deepEqual(framesOf(e.datagram.slice(0, n)).map(hex), [b, d].map(hex), 'the PONG and the GRANT, not the sample');
  });

  it('an air that loses every MAC acknowledgement: the hub resends never-shed frames, the peer takes each once (§13.3.3)', () => {
    const r = rig();
    const { peer, link } = openPeer(r, 1);
    r.run(100, 1);
    r.air.ackLoss = 1; // every datagram arrives; no send status ever says so
    const before = r.radio.log.length;
    const grant = enc({ type: FrameType.GRANT, subGrants: [] });
    const welcome = enc({ type: FrameType.PONG, t0: 7, t1: 8 });
    link.send(grant, control(FrameType.GRANT), 0);
    link.send(welcome, control(FrameType.PONG), 0);
    r.run(200, 1);
    const got = peer.take();
    equal(got.filter((f) => f.type === FrameType.GRANT).length, 1, 'the GRANT once');
    equal(got.filter((f) => f.type === FrameType.PONG).length, 1, 'the PONG once');
    const sent = r.radio.log.slice(before).filter((x) => x.mac === peerMac(1));
    ok(sent.length >= 1 + RETRANSMIT_LIMIT, `${sent.length} datagrams on the air`);
    equal(peer.duplicates, sent.length - 2, 'two datagrams (the GRANT went at once, the PONG after it), every resend dropped whole');
    equal(r.binding.linkOf(peerMac(1))!.loss.ratio(), 0, 'the peer’s ACK bitmap says every datagram arrived');
  });

  it('the other way: a peer’s INTENT resent for a lost MAC acknowledgement reaches the core once', () => {
    const r = rig();
    const { peer } = openPeer(r, 1);
    r.run(100, 1);
    const already = r.core.frames.length;
    r.air.ackLoss = 1;
    peer.send(enc({ type: FrameType.INTENT, channelId: 40, requestId: 9 }));
    r.run(200, 1);
    const intents = r.core.frames.slice(already).filter((b) => b[2] === FrameType.INTENT);
    equal(intents.length, 1, 'a resent INTENT must not run twice');
    equal(peer.failedSends, 1 + RETRANSMIT_LIMIT);
    equal(r.binding.counters.duplicates, RETRANSMIT_LIMIT);
  });

  it('estimate: throughput is what the peer acknowledged over the last second; rtt is the send-status latency', () => {
    const r = rig();
    const { link } = openPeer(r, 1);
    const f = data(IMU.id, 1);
    r.run(2000, 10, () => {
      link.send(f, SAMPLE_TAG, 0);
    });
    const est = link.estimate();
    const expect = (1 + f.length) * 100; // one framed DATA per 10 ms
    ok(Math.abs(est.throughputBps - expect) <= expect * 0.15, `throughput ${est.throughputBps} vs ${expect}`);
    const one = r.air.airtimeMs(HEADER_BYTES + 1 + f.length, true);
    ok(est.rttMs >= one * 0.99 && est.rttMs < one * 3, `rtt ${est.rttMs} vs airtime ${one}`);
  });

  it('peer limits: 20 entries including the broadcast address; the 20th client is refused; 7 encrypted', () => {
    const r = rig({ broadcast: true });
    for (let i = 1; i <= 20; i++) {
      const p = new SimPeer(r.air, peerMac(i), HUB_MAC);
      p.send(enc({ type: FrameType.PING, t0: 0 }));
    }
    r.run(100, 1);
    equal(r.binding.peers().length, 19);
    equal(r.binding.counters.refusedPeers, 1);
    const air = new SimAir({ prng: new Mulberry32(1) });
    const radio = air.radio(1);
    let enc7 = 0;
    for (let i = 0; i < 10; i++) if (radio.addPeer(100 + i, new Uint8Array(16)) === RadioStatus.OK) enc7++;
    equal(enc7, 7);
    equal(radio.addPeer(100, new Uint8Array(16)), RadioStatus.EXISTS);
  });

  it('malformed datagrams are counted and deliver nothing; a bare ESTOP datagram from a button reaches the core', () => {
    const r = rig();
    const button = r.air.radio(peerMac(9));
    button.setHandler({ sent() {}, received() {} });
    button.addPeer(HUB_MAC, null);
    button.send(HUB_MAC, new Uint8Array([0x10, 0, 0, 9, 0xa1]), 5);
    r.run(10, 1);
    equal(r.binding.counters.malformed, 1);
    equal(r.core.frames.length, 0);
    const e = estop(1);
    button.send(HUB_MAC, e, e.length);
    r.run(10, 1);
    equal(r.core.frames.length, 1);
    equal(hex(r.core.frames[0]!), hex(e));
  });

  it('the simulation replays bit for bit from its seed', () => {
    const trace = (seed: number): string => {
      const r = rig({ loss: 0.2, retries: 1, seed });
      const { link } = openPeer(r, 1);
      const f = data(IMU.id, 1);
      r.run(500, 3, () => {
        link.send(f, SAMPLE_TAG, 0);
      });
      const el = r.binding.linkOf(peerMac(1))!;
      return JSON.stringify([r.air.counters, el.loss.ratio(), r.radio.log.length]);
    };
    equal(trace(5), trace(5));
    ok(trace(5) !== trace(6));
  });
});

describe('bindings/espnow: §10.6 broadcast segments', () => {
  it('the rule: the effective rate is the highest grant among the subscribers on the segment', () => {
    equal(effectiveRateHz([10, 50, 20]), 50);
    equal(effectiveRateHz([]), 0);
    equal(effectiveRateHz([0, 0.5]), 0.5);
  });

  it('three peers granted 10, 50 and 20 Hz: pushes offered at their own grants go on air at 50 Hz, once each', () => {
    const seg = new BroadcastSegment(4);
    const hz = [10, 50, 20];
    for (let p = 0; p < 3; p++) {
      seg.join(p);
      // The hub states the grants (Link.granted) before it sends the WELCOME, which goes unicast.
      seg.granted(p, grantSet([{ channelId: IMU.id, hz: hz[p]! }, { channelId: SAFETY.id, hz: 100, priority: 3 }]));
      equal(seg.grantOf(p, IMU.id), hz[p]);
      equal(seg.route(p, control(FrameType.WELCOME), 0, 120, 0), Route.UNICAST);
    }
    equal(seg.effectiveRateHz(IMU.id), 50);
    equal(seg.effectiveRateHz(SAFETY.id), 0, 'a critical subscription sets no broadcast rate');
    // The hub offers each peer its own grant from 200 Hz samples (its nextDue logic).
    const due = [0, 0, 0];
    let offers = 0;
    let onAir = 0;
    for (let k = 0; k < 400; k++) {
      const t = k * 5;
      const f = data(IMU.id, k + 1);
      for (let p = 0; p < 3; p++) {
        if (t < due[p]!) continue;
        due[p] = due[p]! + 1000 / hz[p]!;
        offers++;
        const route = seg.route(p, SHARED_TAG, k + 1, f.length, t);
        ok(route !== Route.UNICAST);
        if (route === Route.BROADCAST) onAir++;
      }
    }
    equal(offers, 20 + 100 + 40);
    equal(onAir, 100, 'two seconds at 50 Hz');
  });

  it('what the core did not tag SHARED goes to its peer alone: control frames, gap variants, critical channels', () => {
    const seg = new BroadcastSegment(2);
    seg.join(0);
    seg.join(1);
    // A per-subscriber variant (gap, dropped, text): the core tags it without SHARED.
    const variant = data(IMU.id, 3, SIX, 6, true);
    equal(seg.route(0, SAMPLE_TAG, 3, variant.length, 0), Route.UNICAST);
    // A never-shed channel keeps the MAC's acknowledgement and retries, SHARED or not.
    const crit = data(SAFETY.id, 3, new Float64Array([1, 0, 2]), 3);
    const critTag = tagOf(FrameType.DATA, Tag.CRITICAL, SAFETY.id);
    equal(seg.route(0, critTag | Tag.SHARED, 3, crit.length, 0), Route.UNICAST);
    equal(seg.route(1, critTag | Tag.SHARED, 3, crit.length, 0), Route.UNICAST, 'never coalesced either');
    // Control frames, even if mis-tagged SHARED: only DATA is ever broadcast.
    const ping = enc({ type: FrameType.PING, t0: 0 });
    equal(seg.route(0, control(FrameType.PING), 0, ping.length, 0), Route.UNICAST);
    equal(seg.route(0, control(FrameType.PING) | Tag.SHARED, 0, ping.length, 0), Route.UNICAST);
    equal(seg.counters.unicast, 5);
    // A peer that is not on the segment (never joined, or left) gets its frames alone.
    seg.leave(1);
    const plain = data(IMU.id, 4);
    equal(seg.route(1, SHARED_TAG, 4, plain.length, 0), Route.UNICAST);
    // The shared push: on air once, a second offer of the same push rides on it.
    equal(seg.route(0, SHARED_TAG, 4, plain.length, 0), Route.BROADCAST);
    equal(seg.route(0, SHARED_TAG, 4, plain.length, 0), Route.COALESCED);
    // A push is told by its channel (the tag) and its sequence: not by the bytes.
    equal(seg.route(0, SHARED_TAG, 5, plain.length, 0), Route.BROADCAST, 'the next push of the channel');
    equal(seg.route(0, tagOf(FrameType.DATA, Tag.SAMPLE, 200) | Tag.SHARED, 5, plain.length, 0), Route.BROADCAST, 'the same seq on another channel');
    equal(seg.counters.broadcast, 3);
    equal(seg.counters.coalesced, 1);
  });

  it('a peer adopting a new grant gets its first push even through a closed gate (§9.1, row 3)', () => {
    const seg = new BroadcastSegment(2);
    const grant = (hz: number): GrantSet => grantSet([{ channelId: IMU.id, hz }]);
    seg.join(0);
    seg.join(1);
    seg.granted(0, grant(10));
    const len = data(IMU.id, 1).length;
    equal(seg.route(0, SHARED_TAG, 1, len, 0), Route.BROADCAST);
    equal(seg.route(0, SHARED_TAG, 2, len, 20), Route.GATED, '20 ms after a push at 10 Hz');
    seg.granted(1, grant(5));
    equal(seg.effectiveRateHz(IMU.id), 10);
    equal(seg.route(1, SHARED_TAG, 3, len, 30), Route.BROADCAST, 'peer 1 adopts its grant');
    equal(seg.route(1, SHARED_TAG, 4, len, 40), Route.GATED);
    equal(seg.counters.adoptions, 1);
    seg.leave(0);
    equal(seg.effectiveRateHz(IMU.id), 5);
    // A GRANT that withdraws the grant takes the channel off the schedule: nothing gates it.
    seg.granted(1, grantSet([]));
    equal(seg.effectiveRateHz(IMU.id), 0);
    equal(seg.grantOf(1, IMU.id), 0);
  });

  it('a real Hub: three sim peers subscribed to imu at 10, 50 and 20 Hz hear it at 50 Hz, each push on air once', () => {
    const fx = makeHub();
    const air = new SimAir({ prng: new Mulberry32(2), retries: 0 }, fx.clock.t);
    const binding = new EspNowBinding({ clock: air, radio: air.radio(HUB_MAC), attach: (l) => fx.hub.attach(l), broadcast: true, allowUnencrypted: true });
    const peers: SimPeer[] = [];
    [10, 50, 20].forEach((hz, i) => {
      const p = new SimPeer(air, peerMac(i + 1), HUB_MAC);
      p.send(enc({ type: FrameType.HELLO, version: 1, name: `p${i}`, subWishes: [{ channelId: IMU.id, wishedRateHz: hz }] }));
      peers.push(p);
    });
    const step = (ms: number): void => {
      fx.clock.advance(ms);
      air.advance(fx.clock.t);
      binding.tick();
      fx.hub.tick();
    };
    for (let i = 0; i < 20; i++) step(5);
    const granted = peers.map((p) => {
      const wel = p.take(FrameType.WELCOME)[0];
      ok(wel && wel.type === FrameType.WELCOME);
      return wel.subGrants[0]!.grantedRateHz;
    });
    deepEqual(granted, [10, 50, 20]);
    equal(binding.segment!.effectiveRateHz(IMU.id), 50);
    const bcast0 = binding.counters.broadcastDatagrams;
    const delivered0 = fx.hub.counters.delivered;
    for (let i = 0; i < 400; i++) {
      fx.hub.publishSample(IMU.id, fx.clock.t, SIX, 6);
      step(5);
    }
    const onAir = binding.counters.broadcastDatagrams - bcast0;
    const offered = fx.hub.counters.delivered - delivered0;
    equal(offered, 20 + 100 + 40, 'the hub offered each peer its own grant');
    equal(onAir, 100, 'the segment carried imu at 50 Hz');
    for (const p of peers) {
      const d = p.inbox.filter((x) => x.broadcast);
      equal(d.length, 100, 'every peer heard every broadcast');
      equal(p.take(FrameType.DATA).length, 100);
    }
    equal(binding.segment!.counters.unicast, 3, 'only the three WELCOMEs went unicast');
    for (const l of binding.peers()) equal(l.level, 0);
  });
});

describe('bindings/espnow: a real Hub end to end over the simulated air', () => {
  it('HELLO → WELCOME (mtu 246) → DATA, with the peer acknowledging and the link clear', () => {
    const fx = makeHub();
    const air = new SimAir({ prng: new Mulberry32(9) }, fx.clock.t);
    const binding = new EspNowBinding({ clock: air, radio: air.radio(HUB_MAC), attach: (l) => fx.hub.attach(l), allowUnencrypted: true });
    const peer = new SimPeer(air, peerMac(1), HUB_MAC);
    peer.send(enc({ type: FrameType.HELLO, version: 1, name: 'scope', subWishes: [{ channelId: IMU.id, wishedRateHz: 100 }] }));
    const step = (ms: number): void => {
      fx.clock.advance(ms);
      air.advance(fx.clock.t);
      binding.tick();
      fx.hub.tick();
    };
    for (let i = 0; i < 10; i++) step(5);
    const [welcome] = peer.take(FrameType.WELCOME);
    ok(welcome && welcome.type === FrameType.WELCOME);
    equal(welcome.mtu, MAX_DATAGRAM_FRAME);
    deepEqual(welcome.subGrants.map((g) => [g.channelId, g.grantedRateHz]), [[IMU.id, 50]]);
    const sessions = fx.hub.sessions();
    equal(sessions.length, 1);
    equal(sessions[0]!.binding, 'espnow');
    for (let i = 0; i < 200; i++) {
      fx.hub.publishSample(IMU.id, fx.clock.t, SIX, 6);
      step(5);
    }
    const got = peer.take(FrameType.DATA);
    equal(got.length, 50);
    const first = got[0]!;
    ok(first.type === FrameType.DATA);
    deepEqual(first.values, Array.from(SIX));
    const link = binding.linkOf(peerMac(1))!;
    ok(link.loss.resolvedInWindow() > 0, 'the peer acknowledged');
    equal(link.loss.ratio(), 0);
    equal(link.level, 0);
    ok(peer.acksSent > 0);
    equal(fx.hub.counters.egressDrops, 0);
  });

  it('a peer that falls silent makes its session STALE (§6.6), and a resume on the same MAC reattaches', () => {
    const fx = makeHub();
    const air = new SimAir({ prng: new Mulberry32(9) }, fx.clock.t);
    const binding = new EspNowBinding({ clock: air, radio: air.radio(HUB_MAC), attach: (l) => fx.hub.attach(l), allowUnencrypted: true });
    const peer = new SimPeer(air, peerMac(1), HUB_MAC);
    peer.send(enc({ type: FrameType.HELLO, version: 1, name: 'scope' }));
    const step = (ms: number): void => {
      fx.clock.advance(ms);
      air.advance(fx.clock.t);
      binding.tick();
      fx.hub.tick();
    };
    for (let i = 0; i < 10; i++) step(5);
    const [welcome] = peer.take(FrameType.WELCOME);
    ok(welcome && welcome.type === FrameType.WELCOME);
    for (let i = 0; i < 30; i++) step(100);
    equal(fx.hub.sessions()[0]!.state, SessionState.ACTIVE, 'keepalive ACKs keep it');
    peer.radio.setHandler({ sent() {}, received() {} });
    for (let i = 0; i < 40; i++) step(100);
    equal(fx.hub.sessions()[0]!.state, SessionState.STALE);
    const back = new SimPeer(air, peerMac(1), HUB_MAC);
    back.send(enc({ type: FrameType.HELLO, version: 1, name: 'scope', resumeToken: welcome.resumeToken }));
    for (let i = 0; i < 10; i++) step(5);
    const [again] = back.take(FrameType.WELCOME);
    ok(again && again.type === FrameType.WELCOME);
    equal(again.sessionId, welcome.sessionId);
    equal(fx.hub.sessions()[0]!.state, SessionState.ACTIVE);
  });

  it('ESTOP from the hub reaches every peer ahead of their queues, one short datagram after another', () => {
    const fx = makeHub();
    const air = new SimAir({ prng: new Mulberry32(4) }, fx.clock.t);
    const binding = new EspNowBinding({ clock: air, radio: air.radio(HUB_MAC), attach: (l) => fx.hub.attach(l), allowUnencrypted: true });
    const peers = [1, 2, 3].map((i) => {
      const p = new SimPeer(air, peerMac(i), HUB_MAC);
      p.send(enc({ type: FrameType.HELLO, version: 1, name: `c${i}` }));
      return p;
    });
    const step = (ms: number): void => {
      fx.clock.advance(ms);
      air.advance(fx.clock.t);
      binding.tick();
      fx.hub.tick();
    };
    for (let i = 0; i < 10; i++) step(5);
    const link = binding.linkOf(peerMac(1))!;
    const big = new Uint8Array(240).fill(0xa0);
    while (link.send(big, SAMPLE_TAG, 0)); // one on air, a full queue behind it
    const at = fx.clock.t;
    fx.hub.setButton(true);
    for (let i = 0; i < 40; i++) step(1);
    ok(fx.robot.stops.length > 0);
    // The bound (docs/_espnow.md §5): the datagram in flight, then one ESTOP-only datagram per
    // peer, and the peers' own acknowledgements that share the channel meanwhile (one each).
    const ackDatagram = HEADER_BYTES + 1 + 15;
    const bound = air.airtimeMs(DATAGRAM_MAX_BYTES, true) + peers.length * (air.airtimeMs(HEADER_BYTES + 1 + ESTOP_FRAME_BYTES, true) + air.airtimeMs(ackDatagram, true));
    // Without the write-ahead, peer 1's ESTOP would wait for the four 240-byte datagrams queued before it.
    ok(bound < 4 * air.airtimeMs(HEADER_BYTES + 1 + 240, true));
    for (const p of peers) {
      const es = p.inbox.filter((x) => isEstopFrame(x.bytes, 0));
      equal(es.length, 1, 'one ESTOP each');
      ok(es[0]!.at - at <= bound, `ESTOP after ${es[0]!.at - at} ms (bound ${bound} ms)`);
    }
    // peer 1's full queue reached it only after its ESTOP
    const first = peers[0]!.inbox;
    const e1 = first.findIndex((x) => isEstopFrame(x.bytes, 0));
    equal(first.slice(0, e1).filter((x) => x.bytes.length === 240).length, 1, 'only the datagram in flight came first');
  });
});

describe('ESP-NOW link: a failed send status, the inline queue and a silent peer', () => {
  const PEER = peerMac(1);
  const SAMPLE = tagOf(FrameType.DATA, Tag.SAMPLE, 1);
  const PONG = tagOf(FrameType.PONG, Tag.CRITICAL);

  /** One admitted peer on a lossless air (no MAC retries); every datagram the hub's radio started, copied. */
  function rig(): { air: SimAir; link: EspNowLink; sent: Uint8Array[]; step(ms: number): void } {
    const air = new SimAir({ prng: new Mulberry32(1), loss: 0, retries: 0 }, 1000);
    const inner = air.radio(HUB_MAC);
    const sent: Uint8Array[] = [];
    const radio: Radio = {
      setHandler: (h) => inner.setHandler(h),
      addPeer: (m, k) => inner.addPeer(m, k),
      removePeer: (m) => inner.removePeer(m),
      send: (m, d, l) => {
        const r = inner.send(m, d, l);
        if (r === RadioStatus.OK) sent.push(d.slice(0, l));
        return r;
      },
    };
    const sink: LinkSink = { frame() {}, lost() {}, levelChanged() {} } as unknown as LinkSink;
    const binding = new EspNowBinding({ clock: air, radio, attach: () => sink, allowUnencrypted: true });
    const peer = new SimPeer(air, PEER, HUB_MAC);
    peer.send(enc({ type: FrameType.PING, t0: 0 }));
    const step = (ms: number): void => {
      const end = air.now() + ms;
      while (air.now() < end) {
        air.advance(air.now() + 1);
        binding.tick();
      }
    };
    step(120); // admitted, its PONG acknowledged, everything settled
    const link = binding.linkOf(PEER);
    ok(link !== undefined, 'the peer has a link');
    return { air, link: link as EspNowLink, sent, step };
  }

  it('a failed send status counts its datagram lost at once, long before the ACK timeout', () => {
    const r = rig();
    const lost = r.link.loss.lostInWindow();
    r.air.loss = 1; // every attempt lost: the MAC gives up and the status fails
    ok(r.link.send(new Uint8Array(20).fill(0xa0), SAMPLE, 0));
    r.step(5);
    equal(r.link.loss.lostInWindow() - lost, 1, 'lost on the failed status, 5 ms after it went');
  });

  it('a control frame queued behind the datagram in flight is resent with its own datagram until the limit', () => {
    const r = rig();
    ok(r.link.send(new Uint8Array(200).fill(0xa0), SAMPLE, 0)); // straight out: in flight
    ok(r.link.send(new Uint8Array(10).fill(0xa1), PONG, 0)); // an empty queue: written into the datagram area
    ok(r.link.egress.queue.pre, 'written ahead into the datagram area');
    r.air.loss = 1;
    r.step(60);
    const carrying = r.sent.filter((d) => d.length === HEADER_BYTES + 1 + 10 && d[HEADER_BYTES + 1] === 0xa1);
    equal(carrying.length, 1 + RETRANSMIT_LIMIT, 'sent, then resent RETRANSMIT_LIMIT times');
  });

  it('a datagram the MAC took and the peer never acknowledges is lost at LOSS_ACK_TIMEOUT_MS + 1 with no other input', () => {
    const r = rig();
    const lost = r.link.loss.lostInWindow();
    ok(r.link.send(new Uint8Array(20).fill(0xa0), SAMPLE, 0)); // delivered, its status ok
    const at = r.air.now();
    r.air.loss = 1; // from now on the peer's ACKs are lost: nothing else reaches the link
    r.step(LOSS_ACK_TIMEOUT_MS);
    equal(r.link.loss.lostInWindow() - lost, 0, `not lost at ${r.air.now() - at} ms`);
    r.step(60);
    equal(r.link.loss.lostInWindow() - lost, 1, 'lost by its timeout, judged by the tick');
  });
});
