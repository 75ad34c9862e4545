// The BLE link (bindings/ble/link.ts, notify-queue.ts, sim.ts): the notification queue and its
// congestion signal, ESTOP write-ahead, retries, and a real Hub over a simulated connection.
import { deepEqual, equal, ok } from '../lib/assert.js';
import { makeHub, VirtualClock } from '../lib/hub-fixture.js';
import { AckForm, Tag, tagOf, type LinkSink } from '../../hub/ports.js';
import { CborWriter } from '../../hub/cbor.js';
import { decodeEstop, encodeEstop, ESTOP_FRAME_BYTES, ESTOP_MAGIC, EstopKind, EstopSource } from '../../hub/estop-frame.js';
import { decodeFrame, encodeFrame, FrameType, MAX_FRAME_BYTES, MAX_HUB_FRAME_BYTES, type Frame } from '../../hub/frames.js';
import { Nack } from '../../hub/nack.js';
import { SessionState } from '../../hub/session.js';
import { FragmentPosition, header, HUB_REASSEMBLY } from '../../bindings/ble/fragment.js';
import { BLE_NOTIFY_RETRY_MS, BLE_NOTIFY_TIMEOUT_MS, BLE_SAMPLE_BUDGET_DEFAULT_MS, BLE_SAMPLE_BUDGET_FLOOR_MS, BleLink, type BleTransport } from '../../bindings/ble/link.js';
import { ESTOP_AHEAD_SLOTS, NOTIFY_QUEUE_BYTES, NOTIFY_QUEUE_NOTIFICATIONS } from '../../bindings/ble/notify-queue.js';
import { SimBleConnection } from '../../bindings/ble/sim.js';
import { ThroughputEstimator } from '../../bindings/link.js';
import { BLE_UUIDS } from '../../bindings/ble/uuids.js';

/** A transport the test completes by hand. */
class ManualTransport implements BleTransport {
  mw = 20;
  /** How often the link asked for the maximum write. */
  mwReads = 0;
  sent: Uint8Array[] = [];
  closed = false;
  maximumWrite(): number {
    this.mwReads++;
    return this.mw;
  }
  notify(value: Uint8Array, length: number): void {
    // The link hands out exactly the notification (NotifyQueue.out), never a larger buffer.
    if (value.length !== length) throw new Error(`notify: a view of ${value.length} bytes for a ${length}-byte notification`);
    this.sent.push(value.slice());
  }
  close(): void {
    this.closed = true;
  }
}

// Tags as the core computes them (hub/ports.ts Tag): KEEP is a frame the link may never drop
// unsent; SAMPLE a non-critical STREAM sample; VALUE a non-critical STATE value.
const KEEP = tagOf(FrameType.DATA, 0, 1);
const SAMPLE = tagOf(FrameType.DATA, Tag.SAMPLE, 1);
const VALUE = tagOf(FrameType.DATA, Tag.VALUE, 2);

function frameOf(length: number, seed = 0): Uint8Array {
  const f = new Uint8Array(length);
  for (let i = 0; i < length; i++) f[i] = (i * 13 + seed * 101) & 0xff;
  f[0] = seed & 0xff;
  return f;
}

function estop(seq: number): Uint8Array {
  const b = new Uint8Array(ESTOP_FRAME_BYTES);
  encodeEstop(b, 0, EstopKind.ASSERT, EstopSource.HUB_BUTTON, 1, 0, seq);
  return b;
}

const writer = new CborWriter(new Uint8Array(8192));
function encode(f: Frame): Uint8Array {
  writer.reset();
  encodeFrame(f, writer);
  return writer.buf.slice(0, writer.pos);
}

function decoded(sim: SimBleConnection): Frame[] {
  const out: Frame[] = [];
  for (const b of sim.take()) if (b[0] !== ESTOP_MAGIC) out.push(decodeFrame(b, 0, b.length, MAX_HUB_FRAME_BYTES));
  return out;
}

describe('BLE: the GATT service', () => {
  it('has three 128-bit UUIDs on one base, lower case, frozen', () => {
    deepEqual(Object.keys(BLE_UUIDS), ['service', 'write', 'notify']);
    const re = /^df7800(0[123])-9766-403f-a18a-24a57e2d20da$/;
    equal(re.exec(BLE_UUIDS.service)?.[1], '01');
    equal(re.exec(BLE_UUIDS.write)?.[1], '02');
    equal(re.exec(BLE_UUIDS.notify)?.[1], '03');
    ok(Object.isFrozen(BLE_UUIDS));
  });
});

describe('BLE: the notification queue', () => {
  it('holds 16 notifications beyond the one in flight; canSend says whether all of a frame’s fragments fit', () => {
    const clock = new VirtualClock();
    const t = new ManualTransport();
    const link = new BleLink(t, clock, {}, true);
    equal(NOTIFY_QUEUE_NOTIFICATIONS, 16);
    equal(link.fragmentSize, 20);
    link.send(frameOf(19), KEEP, 0);
    equal(t.sent.length, 1, 'handed out at once: nothing was in flight');
    equal(link.queue.depth(20), 0);
    for (let i = 0; i < 15; i++) link.send(frameOf(19, i), KEEP, 0);
    equal(link.queue.depth(20), 15);
    ok(link.canSend(19), 'one more notification fits');
    ok(!link.canSend(20), 'a 20-byte frame takes two fragments at MTU 23: it does not');
    ok(link.send(frameOf(19), KEEP, 0));
    equal(link.queue.depth(20), 16);
    ok(!link.canSend(1));
    equal(link.counters.refusedSends, 0);
    ok(!link.send(frameOf(1), KEEP, 0), 'a full queue refuses: send says false');
    equal(link.queue.depth(20), 16, 'and queued nothing');
    equal(link.queue.frames, 16);
    equal(link.counters.refusedSends, 1);
    equal(link.occupancy(), 1);
    equal(t.sent.length, 1, 'still one in flight');
    link.notified(0);
    equal(t.sent.length, 2);
    equal(link.queue.depth(20), 15);
    ok(link.canSend(19));
  });

  it('an MTU exchange that completes while nothing is queued is taken at the next hand-out, and read at once', () => {
    const clock = new VirtualClock();
    const t = new ManualTransport();
    const link = new BleLink(t, clock, {}, true);
    link.send(frameOf(19), KEEP, 0);
    t.mw = 244;
    clock.advance(10);
    link.tick();
    equal(link.fragmentSize, 244);
    link.notified(0);
    ok(link.send(frameOf(100, 1), KEEP, 0));
    equal(t.sent.length, 2);
    equal((t.sent[1] as Uint8Array).length, 101, 'one ONLY notification at the new size');
    t.mw = 20;
    link.send(frameOf(100, 2), KEEP, 0);
    equal(link.queue.depth(20), 6, 'a frame queued behind the one in flight is counted at the size of the moment');
  });

  it('after an MTU exchange nobody asked about, a frame only the new size takes whole still goes as one notification', () => {
    const clock = new VirtualClock();
    const t = new ManualTransport();
    const link = new BleLink(t, clock, {}, true);
    ok(link.send(frameOf(19), KEEP, 0));
    link.notified(0);
    t.mw = 244;
    ok(link.send(frameOf(100, 1), KEEP, 0));
    equal(t.sent.length, 2);
    equal((t.sent[1] as Uint8Array).length, 101, 'one ONLY notification at the new size');
    equal((t.sent[1] as Uint8Array)[0], header(FragmentPosition.ONLY, 1));
    link.notified(0);
    const reads = t.mwReads;
    ok(link.send(frameOf(200, 2), KEEP, 0));
    equal((t.sent[2] as Uint8Array).length, 201, 'and straight out from then on');
    equal(t.mwReads, reads, 'straight out: the size the queue took is known, not asked again');
  });

  it('an empty queue takes any frame its storage holds, the largest hub frame included (243 notifications at MTU 23)', () => {
    const clock = new VirtualClock();
    const t = new ManualTransport();
    const link = new BleLink(t, clock, {}, true);
    equal(NOTIFY_QUEUE_BYTES, MAX_HUB_FRAME_BYTES);
    ok(link.canSend(MAX_HUB_FRAME_BYTES));
    ok(!link.canSend(MAX_HUB_FRAME_BYTES + 1));
    ok(link.send(frameOf(MAX_HUB_FRAME_BYTES), KEEP, 0));
    equal(link.queue.depth(20), 242);
    ok(!link.canSend(1), 'nothing joins a queue over its capacity');
    ok(link.queue.ratio(20) > 1);
    // The storage bound: a queue of 100 bytes takes 100 and not 101.
    const small = new BleLink(new ManualTransport(), clock, { queue: { bytes: 100 } }, false);
    ok(small.canSend(100));
    ok(!small.canSend(101));
    ok(!small.send(frameOf(101), KEEP, 0), 'beyond the storage: refused');
    ok(small.send(frameOf(60), KEEP, 0));
    ok(!small.canSend(41));
    ok(small.canSend(40));
    ok(!small.send(frameOf(41), KEEP, 0));
    ok(small.send(frameOf(40), KEEP, 0));
    equal(small.queuedBytes(), 100);
  });

  it('recounts the depth when the MTU exchange completes; the rest of a frame goes in bigger pieces', () => {
    const clock = new VirtualClock();
    const t = new ManualTransport();
    const link = new BleLink(t, clock, {}, true);
    link.send(frameOf(100, 1), KEEP, 0);
    link.send(frameOf(100, 2), KEEP, 0);
    equal(link.queue.depth(20), 11);
    t.mw = 244;
    link.tick();
    equal(link.fragmentSize, 244);
    equal(link.queue.depth(244), 2);
    link.notified(0);
    const second = t.sent[1] as Uint8Array;
    equal(second[0], header(FragmentPosition.LAST, 0));
    equal(second.length, 1 + 83);
    link.notified(0);
    equal((t.sent[2] as Uint8Array)[0], header(FragmentPosition.ONLY, 1));
    equal((t.sent[2] as Uint8Array).length, 101);
  });

  it('nothing is notified before the client subscribes', () => {
    const clock = new VirtualClock();
    const t = new ManualTransport();
    const link = new BleLink(t, clock, {}, false);
    link.send(frameOf(19), KEEP, 0);
    link.writeAhead(estop(1));
    link.tick();
    equal(t.sent.length, 0);
    link.subscribed(true);
    equal(t.sent.length, 1);
    equal((t.sent[0] as Uint8Array)[1], ESTOP_MAGIC, 'the ESTOP first');
  });

  it('a failed notification is handed out again, unchanged, after the retry pause', () => {
    const clock = new VirtualClock();
    const t = new ManualTransport();
    const link = new BleLink(t, clock, {}, true);
    link.send(frameOf(100), KEEP, 0);
    link.notified(6);
    equal(t.sent.length, 1);
    clock.advance(BLE_NOTIFY_RETRY_MS - 1);
    link.tick();
    equal(t.sent.length, 1);
    clock.advance(1);
    link.tick();
    equal(t.sent.length, 2);
    deepEqual(t.sent[1], t.sent[0]);
    equal(link.queue.counters.failures, 1);
    // A notify that throws counts as a failure too.
    let throwing = true;
    const tt: BleTransport = {
      maximumWrite: () => 20,
      notify: () => {
        if (throwing) throw new Error('no memory');
      },
      close: () => {},
    };
    const l2 = new BleLink(tt, clock, {}, true);
    l2.send(frameOf(10), KEEP, 0);
    equal(l2.queue.counters.failures, 1);
    ok(l2.queue.retryPending);
    throwing = false;
    clock.advance(BLE_NOTIFY_RETRY_MS);
    l2.tick();
    ok(l2.queue.inFlight);
  });

  it('a completion that never comes counts as done after the notify timeout', () => {
    const clock = new VirtualClock();
    const t = new ManualTransport();
    const link = new BleLink(t, clock, {}, true);
    link.send(frameOf(19), KEEP, 0);
    link.send(frameOf(19), KEEP, 0);
    clock.advance(BLE_NOTIFY_TIMEOUT_MS - 1);
    link.tick();
    equal(t.sent.length, 1);
    clock.advance(1);
    link.tick();
    equal(t.sent.length, 2);
    equal(link.counters.unconfirmed, 1);
  });

  it('a notification sent straight out after quiet ticks times out exactly on time, each of many in turn', () => {
    const clock = new VirtualClock();
    const t = new ManualTransport();
    const link = new BleLink(t, clock, {}, true);
    // Quiet ticks first: nothing in flight, nothing queued.
    for (let i = 0; i < 2500; i++) {
      clock.advance(1);
      link.tick();
    }
    for (const wait of [0, 3, 700, 1999]) {
      for (let i = 0; i < wait; i++) {
        clock.advance(1);
        link.tick();
      }
      const before = link.counters.unconfirmed;
      ok(link.send(frameOf(19, wait), KEEP, 0));
      equal(link.queue.counters.handedOut, t.sent.length, 'sent straight out');
      const sentAt = clock.now();
      while (link.counters.unconfirmed === before && clock.now() - sentAt < 2 * BLE_NOTIFY_TIMEOUT_MS) {
        clock.advance(1);
        link.tick();
      }
      equal(clock.now() - sentAt, BLE_NOTIFY_TIMEOUT_MS, `counted unconfirmed ${BLE_NOTIFY_TIMEOUT_MS} ms after it went, after ${wait} quiet ms`);
    }
    // And with a coarser tick (every 7 ms): at the first tick at or after the timeout.
    ok(link.send(frameOf(19, 9), KEEP, 0));
    const sentAt = clock.now();
    const before = link.counters.unconfirmed;
    while (link.counters.unconfirmed === before && clock.now() - sentAt < 2 * BLE_NOTIFY_TIMEOUT_MS) {
      clock.advance(7);
      link.tick();
    }
    equal(clock.now() - sentAt, 7 * Math.ceil(BLE_NOTIFY_TIMEOUT_MS / 7));
  });

  it('the throughput estimate follows the frame bytes the stack reported sent', () => {
    const clock = new VirtualClock();
    const t = new ManualTransport();
    const link = new BleLink(t, clock, {}, true);
    equal(link.estimate().throughputBps, 0, 'unknown at first');
    for (let i = 0; i < 200; i++) {
      link.send(frameOf(19), KEEP, 0);
      link.notified(0);
      clock.advance(10);
    }
    const bps = link.estimate().throughputBps;
    ok(Math.abs(bps - 1900) < 1, `19 bytes every 10 ms read ${bps} B/s`);
    link.send(frameOf(19), KEEP, 0); // sent, never completed: not counted
    clock.advance(3000);
    ok(link.estimate().throughputBps < 100, 'a link that carries nothing decays toward 0');
    equal(link.estimate().rttMs, 0);
    equal(link.counters.deliveredBytes, 200 * 19);
  });

  it('the estimate is exactly an estimator fed every completion as it came, whenever it is read', () => {
    const clock = new VirtualClock();
    const t = new ManualTransport();
    const link = new BleLink(t, clock, {}, true);
    const reference = new ThroughputEstimator(clock.now());
    let x = 0x1234567;
    const next = (n: number): number => {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      return x % n;
    };
    for (let i = 0; i < 2000; i++) {
      const length = 1 + next(19);
      link.send(frameOf(length), KEEP, 0);
      clock.advance(next(4) === 0 ? 60 + next(200) : 0.5 + next(30));
      link.notified(0);
      reference.add(length, clock.now());
      if (next(7) === 0) equal(link.estimate().throughputBps, reference.bps(clock.now()), `read ${i}`);
    }
    clock.advance(150);
    equal(link.estimate().throughputBps, reference.bps(clock.now()));
  });

  it('counts every notification handed out: completed, failed and handed out again, in flight when the link closed', () => {
    const clock = new VirtualClock();
    const t = new ManualTransport();
    const link = new BleLink(t, clock, {}, true);
    link.send(frameOf(10), KEEP, 0);
    link.send(frameOf(10), KEEP, 0);
    equal(link.queue.counters.handedOut, 1);
    link.notified(0);
    link.notified(5);
    equal(link.queue.counters.handedOut, 2);
    clock.advance(BLE_NOTIFY_RETRY_MS);
    link.tick();
    link.send(estop(1), KEEP, 0);
    equal(t.sent.length, 3);
    deepEqual([link.queue.counters.handedOut, link.queue.counters.completed, link.queue.counters.failures], [3, 1, 1]);
    link.close();
    equal(link.queue.counters.handedOut, 3, 'the one in flight when the link closed was handed out');
  });

  it('keeps its scalar helpers in the link: the counters are fields of the link, the queue and the reassembler, and reassembly uses the queue’s buffer', () => {
    const link = new BleLink(new ManualTransport(), new VirtualClock(), {}, true);
    equal(link.counters, link);
    equal(link.queue.counters, link.queue);
    equal(link.reassembler.counters, link.reassembler);
    equal(link.reassembler.buffer.buffer, link.queue.all.buffer);
    equal(link.reassembler.buffer.length, HUB_REASSEMBLY.maxFrameBytes + 1);
  });
});

describe('BLE: stalledMs', () => {
  it('counts from when a backlog starts until a notification completes; 0 once empty', () => {
    const clock = new VirtualClock();
    const t = new ManualTransport();
    const link = new BleLink(t, clock, {}, true);
    equal(link.stalledMs(), 0);
    clock.advance(400);
    for (let i = 0; i < 3; i++) link.send(frameOf(19, i), KEEP, 0);
    equal(link.stalledMs(), 0, 'the backlog starts now');
    clock.advance(700);
    equal(link.stalledMs(), 700, 'nothing completed: a reader (or a radio) that does not take');
    link.notified(0);
    equal(link.stalledMs(), 0, 'one completed');
    clock.advance(250);
    equal(link.stalledMs(), 250);
    link.notified(0);
    link.notified(0);
    equal(link.stalledMs(), 0, 'empty');
    clock.advance(5000);
    equal(link.stalledMs(), 0, 'empty, however long');
  });
});

describe('BLE: the Link surface (hub/ports.ts)', () => {
  it('caps: a reliable stream link, WELCOME mtu from reassembly, ESTOP slots, stream ACKs; no loss rate', () => {
    const link = new BleLink(new ManualTransport(), new VirtualClock(), {}, true);
    deepEqual({ ...link.caps }, { binding: 'ble', broadcast: false, datagram: false, mtu: HUB_REASSEMBLY.maxFrameBytes, writeAheadSlots: ESTOP_AHEAD_SLOTS, ackForm: AckForm.STREAM });
    ok(Object.isFrozen(link.caps));
    equal(link.binding, 'ble');
    equal(link.mtu, HUB_REASSEMBLY.maxFrameBytes);
    ok(Number.isNaN(link.lossRate()));
  });

  it('ack lag counts frames whose first fragment went, ESTOP frames included, until the ACKs the core hands on cover them', () => {
    const clock = new VirtualClock();
    const t = new ManualTransport();
    const link = new BleLink(t, clock, {}, true);
    equal(link.ackLag(), 0);
    for (let i = 0; i < 3; i++) ok(link.send(frameOf(50, i), KEEP, 0)); // 3 notifications each at MTU 23
    equal(link.ackLag(), 1, 'one frame begun: a frame, not a notification');
    for (let i = 0; i < 2; i++) link.notified(0);
    equal(link.ackLag(), 1, 'the rest of its fragments are the same frame');
    link.writeAhead(estop(1));
    link.notified(0);
    equal(link.ackLag(), 2, 'the ESTOP went next, and the client counts it');
    link.notified(0);
    equal(link.ackLag(), 3);
    while (link.queue.inFlight) link.notified(0);
    equal(link.ackLag(), 4);
    link.acked(2);
    equal(link.ackLag(), 2);
    link.acked(4);
    equal(link.ackLag(), 0);
    link.acked(9);
    equal(link.ackLag(), 0, 'an ACK beyond what went reads as no lag');
  });

  it('a change of level is reported to the sink once; reading it again is not a change', () => {
    const clock = new VirtualClock();
    const link = new BleLink(new ManualTransport(), clock, {}, true);
    let changes = 0;
    const sink: LinkSink = { frame: () => {}, lost: () => {}, levelChanged: () => void changes++ };
    link.connect(sink);
    for (let i = 0; i <= 9; i++) link.send(frameOf(19, i), KEEP, 0); // 9 of 16 waiting: > 50 %
    clock.advance(999);
    link.tick();
    equal(link.level, 0);
    equal(changes, 0);
    clock.advance(1);
    link.tick();
    equal(changes, 1, 'the tick judged the new level and told the core');
    equal(link.level, 1);
    clock.advance(1);
    equal(link.level, 1);
    link.tick();
    equal(changes, 1);
  });

  it('a closed link refuses every send', () => {
    const t = new ManualTransport();
    const link = new BleLink(t, new VirtualClock(), {}, true);
    link.close();
    ok(t.closed);
    ok(link.closed);
    ok(!link.send(frameOf(19), KEEP, 0));
    equal(t.sent.length, 0);
  });
});

describe('BLE: the sample budget (§13.6)', () => {
  it('two notification service times, within 15..250 ms; 100 ms before the first completion', () => {
    const clock = new VirtualClock();
    const t = new ManualTransport();
    const link = new BleLink(t, clock, {}, true);
    equal(link.sampleBudgetMs(), BLE_SAMPLE_BUDGET_DEFAULT_MS);
    link.send(frameOf(19), KEEP, 0);
    clock.advance(30);
    link.notified(0);
    equal(link.sampleBudgetMs(), 60, 'a notification that waited 30 ms for its connection event');
    link.send(frameOf(19), KEEP, 0);
    link.notified(0);
    equal(link.sampleBudgetMs(), 60, 'the longest lately');
    const fast = new BleLink(new ManualTransport(), clock, {}, true);
    fast.send(frameOf(19), KEEP, 0);
    fast.notified(0);
    equal(fast.sampleBudgetMs(), BLE_SAMPLE_BUDGET_FLOOR_MS, 'a stack that completes at once');
  });

  it('a STREAM sample frame that waited past the budget is dropped unsent when its turn comes; others are not', () => {
    const clock = new VirtualClock();
    const t = new ManualTransport();
    const link = new BleLink(t, clock, {}, true);
    // Frame 1 goes at once; each notification completes 10 ms after it went (one per connection
    // event), so the budget is 20 ms and frame k goes 10·(k − 1) ms after it was queued.
    link.send(frameOf(19, 1), SAMPLE, 1);
    link.send(frameOf(19, 2), SAMPLE, 2);
    link.send(frameOf(19, 3), KEEP, 3);
    link.send(frameOf(19, 4), SAMPLE, 4);
    link.send(frameOf(19, 5), SAMPLE, 5);
    link.send(frameOf(19, 6), VALUE, 6);
    for (let i = 0; i < 6; i++) {
      clock.advance(10);
      link.notified(0);
    }
    equal(link.sampleBudgetMs(), 20);
    deepEqual(
      t.sent.map((v) => v[1]),
      [1, 2, 3, 6],
      'frame 3 waited 20 ms (the budget) and went; 4 and 5 waited 30 ms and were dropped; 6, a STATE value, is not dropped here (§13.6: no conflation in a notification queue)',
    );
    equal(link.queue.counters.expired, 2);
  });
});

describe('BLE: queue depth drives the §10.3 detector', () => {
  function filled(depth: number): { link: BleLink; t: ManualTransport; clock: VirtualClock } {
    const clock = new VirtualClock();
    const t = new ManualTransport();
    const link = new BleLink(t, clock, {}, true);
    for (let i = 0; i <= depth; i++) link.send(frameOf(19, i), KEEP, 0); // one in flight, `depth` waiting
    equal(link.queue.depth(20), depth);
    return { link, t, clock };
  }

  it('under half full (7 of 16) is not congested, however long', () => {
    const { link, clock } = filled(7);
    equal(link.signal(), 7 / 16);
    clock.advance(10000);
    equal(link.level, 0);
  });

  it('> 50 % for 1 s ⇒ 1; full for 500 ms ⇒ 2; drained: 2 → 1 after 1 s, → 0 after 5 s', () => {
    const { link, clock } = filled(9);
    const t0 = clock.now();
    clock.advance(999);
    equal(link.level, 0);
    clock.advance(1);
    equal(link.level, 1);
    equal(link.detector.since(), t0 + 1000);
    for (let i = 0; i < 7; i++) link.send(frameOf(19), KEEP, 0);
    equal(link.queue.ratio(20), 1);
    ok(!link.canSend(1));
    clock.advance(499);
    equal(link.level, 1);
    clock.advance(1);
    equal(link.level, 2);
    clock.advance(500);
    for (let i = 0; i < 16; i++) link.notified(0);
    equal(link.queue.depth(20), 0);
    ok(link.queue.inFlight);
    clock.advance(999);
    equal(link.level, 2);
    clock.advance(1);
    equal(link.level, 1);
    clock.advance(3999);
    equal(link.level, 1);
    clock.advance(1);
    equal(link.level, 0);
  });

  it('sustained overload: a queue the core refills between connection events reaches level 2 (§13.5.1)', () => {
    // Four notifications per 30 ms event (133/s) against 400/s offered: each event leaves 12 of
    // 16 queued, and the core fills it again before the next.
    const clock = new VirtualClock();
    const sim = new SimBleConnection(clock, { attMtu: 23, intervalMs: 30, perEvent: 4 });
    let trough = 1;
    let reached = -1;
    const t0 = clock.now();
    for (let k = 0; k < 300; k++) {
      clock.advance(10);
      // The core just sends (hub/ports.ts: the send contract); a refusal counts in the detector.
      for (let i = 0; i < 4; i++) if (!sim.link.send(frameOf(19, k), KEEP, 0)) break;
      const before = sim.notificationsDelivered;
      sim.advance();
      if (k >= 20 && sim.notificationsDelivered > before) trough = Math.min(trough, sim.link.queue.ratio(20));
      if (reached < 0 && sim.link.level === 2) reached = clock.now() - t0;
    }
    equal(trough, 12 / 16, 'once full, the queue is at 75 % right after each event');
    ok(reached > 0 && reached <= 1000, `level 2 after ${reached} ms`);
    equal(sim.link.level, 2);
    equal(sim.link.signal(), 1, 'every event finds the queue full');
  });

  it('overload with frames of three notifications: the queue refuses at 14 of 16 (87.5 %), which reads full (§13.5.5)', () => {
    const clock = new VirtualClock();
    const sim = new SimBleConnection(clock, { attMtu: 23, intervalMs: 30, perEvent: 4 });
    let lowRefusals = 0;
    let reached = -1;
    const t0 = clock.now();
    for (let k = 0; k < 300; k++) {
      clock.advance(10);
      // Until the queue refuses one: that refusal is what reads full (§13.5.5).
      const refusedBefore = sim.link.counters.refusedSends;
      while (sim.link.send(frameOf(50, k), KEEP, 0));
      equal(sim.link.counters.refusedSends, refusedBefore + 1);
      // A 50-byte frame is three notifications: a queue of 14 has no room for one.
      if (sim.link.queue.depth(20) <= 14) lowRefusals++;
      sim.advance();
      if (reached < 0 && sim.link.level === 2) reached = clock.now() - t0;
    }
    ok(lowRefusals > 50, `${lowRefusals} refusals with the queue at 87.5 % or less`);
    ok(reached > 0 && reached <= 1000, `level 2 after ${reached} ms`);
    equal(sim.link.level, 2);
  });

  it('a healthy link whose queue cycles stays at level 0: 16 frames every 150 ms, drained in four events', () => {
    const clock = new VirtualClock();
    const sim = new SimBleConnection(clock, { attMtu: 23, intervalMs: 30, perEvent: 4 });
    let peak = 0;
    let maxLevel = 0;
    for (let k = 0; k < 2000; k++) {
      clock.advance(10);
      if (k % 15 === 0) for (let i = 0; i < 16; i++) sim.link.send(frameOf(19, i), KEEP, 0);
      peak = Math.max(peak, sim.link.queue.ratio(20));
      sim.advance();
      maxLevel = Math.max(maxLevel, sim.link.level);
    }
    equal(peak, 15 / 16, 'the queue rises above 90 % at every burst');
    equal(maxLevel, 0, 'and drains before it is congested');
    equal(sim.link.counters.refusedSends, 0);
  });

  it('a stalled simulated connection reaches level 2 and recovers once it moves again', () => {
    const clock = new VirtualClock();
    const sim = new SimBleConnection(clock, { attMtu: 23, intervalMs: 30, perEvent: 2 });
    sim.stalled = true;
    let sent = 0;
    for (let k = 0; k < 100; k++) {
      clock.advance(10);
      while (sim.link.send(frameOf(19, sent), KEEP, 0)) sent++;
      sim.advance();
    }
    equal(sim.link.level, 2);
    ok(sim.link.queue.counters.failures > 10);
    sim.stalled = false;
    for (let k = 0; k < 700; k++) {
      clock.advance(10);
      sim.advance();
    }
    equal(sim.link.level, 0);
    equal(sim.received.frames.length, sent, 'every frame delivered once, in order, after the stall');
    for (let i = 0; i < sent; i++) equal((sim.received.frames[i] as Uint8Array)[0], i & 0xff);
  });
});

describe('BLE: the simulated stack drives the queue by completions', () => {
  it('completes each notification at the connection event that carries it: the queue drains by completions, never by the timeout', () => {
    const clock = new VirtualClock();
    const sim = new SimBleConnection(clock, { attMtu: 23, intervalMs: 30, perEvent: 4 });
    for (let i = 0; i < 12; i++) ok(sim.link.send(frameOf(19, i), KEEP, 0));
    ok(sim.link.queue.inFlight, 'the first one is with the stack at once');
    equal(sim.link.queue.depth(20), 11);
    clock.advance(30);
    sim.advance();
    deepEqual([sim.notificationsDelivered, sim.link.queue.counters.completed, sim.link.queue.depth(20)], [4, 4, 7], 'one event: four completions, four gone from the queue');
    clock.advance(60);
    sim.advance();
    equal(sim.notificationsDelivered, 12);
    ok(!sim.link.queue.inFlight);
    equal(sim.link.counters.unconfirmed, 0);
    equal(sim.completionsLost, 0);
    equal(sim.received.frames.length, 12);
  });

  it('a lost completion holds the queue until the completion timeout, which counts it unconfirmed and lets the next one go', () => {
    const clock = new VirtualClock();
    const sim = new SimBleConnection(clock, { attMtu: 23, intervalMs: 30, perEvent: 4, completionLossRate: 1 });
    const t0 = clock.now();
    for (let i = 0; i < 3; i++) ok(sim.link.send(frameOf(19, i), KEEP, 0));
    while (clock.now() < t0 + BLE_NOTIFY_TIMEOUT_MS - 10) {
      clock.advance(10);
      sim.advance();
    }
    deepEqual([sim.notificationsDelivered, sim.completionsLost, sim.link.counters.unconfirmed], [1, 1, 0], 'sent at the first event; its completion never came');
    ok(sim.link.queue.inFlight, 'the queue waits for it');
    equal(sim.link.queue.depth(20), 2);
    clock.advance(10);
    sim.advance();
    equal(sim.link.counters.unconfirmed, 1, 'the timeout stands in for the lost completion');
    ok(sim.link.queue.inFlight, 'and the next notification is with the stack');
    equal(sim.link.queue.depth(20), 1);
    // Completions come again: the rest goes at the next event.
    sim.completionLossRate = 0;
    clock.advance(30);
    sim.advance();
    deepEqual([sim.notificationsDelivered, sim.link.counters.unconfirmed], [3, 1]);
    ok(!sim.link.queue.inFlight);
    deepEqual(sim.received.frames.map((f) => f[0]), [0, 1, 2], 'every frame once, in order');
  });
});

describe('BLE: ESTOP write-ahead', () => {
  it('overtakes a full queue: it goes right after the notification in flight, between two fragments of a frame', () => {
    const clock = new VirtualClock();
    const sim = new SimBleConnection(clock, { attMtu: 23, intervalMs: 30, perEvent: 1 });
    const link = sim.link;
    const frames = [frameOf(100, 1), frameOf(100, 2)];
    for (const f of frames) link.send(f, KEEP, 0);
    for (let i = 0; ; i++) {
      const f = frameOf(19, 10 + i);
      if (!link.send(f, KEEP, 0)) break; // refused: not queued, so not expected
      frames.push(f);
    }
    equal(link.queue.depth(20), 16);
    clock.advance(60);
    sim.advance(); // two events: fragments 1 and 2 of the first frame arrived, the third is in flight
    equal(sim.client.pendingBytes, 36);
    for (let i = 0; ; i++) {
      const f = frameOf(19, 30 + i);
      if (!link.send(f, KEEP, 0)) break;
      frames.push(f);
    }
    const depth = link.queue.depth(20);
    equal(depth, 16);
    const e = estop(42);
    link.writeAhead(e);
    equal(link.queue.depth(20), depth, 'the ESTOP is not queue depth: it is exempt (§10.4)');
    ok(!link.canSend(1), 'and the queue is still full');
    clock.advance(30);
    sim.advance();
    equal(sim.received.frames.length, 0, 'the notification in flight goes first');
    clock.advance(30);
    sim.advance();
    deepEqual(sim.received.frames, [e], 'then the ESTOP, before every queued fragment');
    equal(sim.client.pendingBytes, 55, 'the client kept the partial frame');
    for (let k = 0; k < 100; k++) {
      clock.advance(30);
      sim.advance();
    }
    deepEqual(sim.received.frames, [e, ...frames], 'everything else intact and in order');
    equal(sim.received.refused.length, 0);
  });

  it('goes at once when nothing is in flight; beyond 4 waiting the oldest is dropped', () => {
    const clock = new VirtualClock();
    const t = new ManualTransport();
    const link = new BleLink(t, clock, {}, true);
    link.writeAhead(estop(1));
    equal(t.sent.length, 1);
    deepEqual((t.sent[0] as Uint8Array).slice(1), estop(1));
    equal((t.sent[0] as Uint8Array)[0] as number >>> 6, FragmentPosition.ONLY);
    for (let s = 2; s <= 2 + ESTOP_AHEAD_SLOTS; s++) link.writeAhead(estop(s));
    equal(link.queue.counters.estopsDropped, 1);
    for (let i = 0; i < ESTOP_AHEAD_SLOTS + 1; i++) link.notified(0);
    const seqs = t.sent.map((w) => decodeEstop(w, 1, ESTOP_FRAME_BYTES).seq);
    deepEqual(seqs, [1, 3, 4, 5, 6]);
  });
});

describe('BLE: a real hub over a simulated connection', () => {
  function run(clock: VirtualClock, hub: { tick(): void }, sims: SimBleConnection[], ms: number): void {
    for (let t = 0; t < ms; t += 10) {
      clock.advance(10);
      for (const s of sims) s.advance();
      hub.tick();
    }
  }

  for (const attMtu of [23, 247]) {
    it(`HELLO → WELCOME → SUBSCRIBE → DATA over fragments at ATT MTU ${attMtu}`, () => {
      const { hub, clock, catalog } = makeHub();
      const imu = catalog.byName('imu')!;
      const odom = catalog.byName('odom')!;
      const sim = new SimBleConnection(clock, { attMtu }).attach(hub);
      sim.clientSend(encode({ type: FrameType.HELLO, version: 1, name: 'phone-console', subWishes: [{ channelId: imu.id, wishedRateHz: 20 }] }));
      run(clock, hub, [sim], 200);
      const got = decoded(sim);
      const welcome = got.find((f) => f.type === FrameType.WELCOME);
      ok(welcome && welcome.type === FrameType.WELCOME, 'WELCOME');
      equal(welcome.mtu, MAX_FRAME_BYTES, 'WELCOME mtu: what reassembly takes');
      deepEqual(welcome.subGrants.map((g) => [g.channelId, g.grantedRateHz]), [[imu.id, 20]]);
      sim.clientSend(encode({ type: FrameType.SUBSCRIBE, wishes: [{ channelId: odom.id, wishedRateHz: 10 }] }));
      run(clock, hub, [sim], 100);
      const grant = decoded(sim).find((f) => f.type === FrameType.GRANT);
      ok(grant && grant.type === FrameType.GRANT && grant.subGrants?.some((g) => g.channelId === odom.id));
      const v = new Float64Array([1.5, -2, 3, 4, 5, 6]);
      for (let i = 0; i < 20; i++) {
        run(clock, hub, [sim], 50);
        hub.publishSample(imu.id, clock.now(), v, 6);
      }
      run(clock, hub, [sim], 200);
      const data = decoded(sim).filter((f) => f.type === FrameType.DATA);
      equal(data.length, 20);
      for (const d of data) if (d.type === FrameType.DATA) deepEqual(d.values, [1.5, -2, 3, 4, 5, 6]);
      if (attMtu === 23) {
        ok(sim.writesDelivered > 2, 'the HELLO went in several writes');
        ok(sim.link.queue.counters.handedOut > 2 + 20, 'frames went in several notifications');
      }
      equal(sim.received.refused.length, 0);
      equal(sim.link.reassembler.counters.malformed, 0);
    });
  }

  it('a client ESTOP latches the hub, and every link hears it ahead of its queue', () => {
    const { hub, clock, robot } = makeHub();
    const a = new SimBleConnection(clock, { attMtu: 23 }).attach(hub);
    const b = new SimBleConnection(clock, { attMtu: 23, seed: 2 }).attach(hub);
    a.clientSend(encode({ type: FrameType.HELLO, version: 1, name: 'a' }));
    b.clientSend(encode({ type: FrameType.HELLO, version: 1, name: 'b' }));
    run(clock, hub, [a, b], 200);
    a.take();
    b.take();
    // b's queue holds a multi-fragment frame when the ESTOP comes.
    b.link.send(frameOf(300, 5), KEEP, 0);
    const e = new Uint8Array(ESTOP_FRAME_BYTES);
    encodeEstop(e, 0, EstopKind.ASSERT, EstopSource.CLIENT, 0, 0, 1);
    a.clientEstop(e);
    run(clock, hub, [a, b], 30);
    ok(hub.latch.latched);
    deepEqual(robot.stops.length > 0, true);
    run(clock, hub, [a, b], 60);
    const first = (sim: SimBleConnection): Uint8Array => sim.received.frames[0] as Uint8Array;
    equal(first(a)[0], ESTOP_MAGIC);
    equal(first(b)[0], ESTOP_MAGIC, 'the ESTOP overtook the 300-byte frame');
    equal(decodeEstop(first(b), 0, ESTOP_FRAME_BYTES).kind, EstopKind.ASSERT);
    run(clock, hub, [a, b], 500);
    ok(b.received.frames.some((f) => f.length === 300), 'which still arrived whole');
  });

  it('an oversized client frame draws NACK TOO_LARGE with its frame type; a never-completed one NACK MALFORMED', () => {
    const { hub, clock } = makeHub();
    const sim = new SimBleConnection(clock, { attMtu: 185 }).attach(hub);
    sim.clientSend(encode({ type: FrameType.HELLO, version: 1, name: 'x' }));
    run(clock, hub, [sim], 100);
    sim.take();
    const big = frameOf(1500);
    big[0] = 0xa3;
    big[1] = 0x00;
    big[2] = FrameType.BUNDLE;
    sim.clientSend(big);
    run(clock, hub, [sim], 200);
    const nacks = decoded(sim).filter((f) => f.type === FrameType.NACK);
    deepEqual(nacks.map((n) => (n.type === FrameType.NACK ? [n.code, n.frameType] : [])), [[Nack.TOO_LARGE, FrameType.BUNDLE]]);
    equal(sim.link.reassembler.pendingBytes, 0);
    // A FIRST fragment whose frame never completes.
    sim.clientWrite(Uint8Array.from([header(FragmentPosition.FIRST, 9), 0x01, 0x00, ...frameOf(17)]));
    run(clock, hub, [sim], 100);
    equal(sim.link.reassembler.pendingBytes, 17);
    run(clock, hub, [sim], HUB_REASSEMBLY.timeoutMs - 100);
    equal(decoded(sim).filter((f) => f.type === FrameType.NACK).length, 0, 'not before the timeout');
    run(clock, hub, [sim], 100);
    const late = decoded(sim).filter((f) => f.type === FrameType.NACK);
    deepEqual(late.map((n) => (n.type === FrameType.NACK ? n.code : 0)), [Nack.MALFORMED]);
    equal(sim.link.reassembler.pendingBytes, 0);
    equal(hub.sessions()[0]?.state, SessionState.ACTIVE, 'the session carries on');
  });

  it('a lost connection makes the session STALE; HELLO with its token on a new connection resumes it', () => {
    const { hub, clock } = makeHub();
    const a = new SimBleConnection(clock).attach(hub);
    a.clientSend(encode({ type: FrameType.HELLO, version: 1, name: 'x' }));
    run(clock, hub, [a], 100);
    const w = decoded(a).find((f) => f.type === FrameType.WELCOME);
    ok(w && w.type === FrameType.WELCOME);
    a.disconnect();
    equal(hub.sessions()[0]?.state, SessionState.STALE);
    const b = new SimBleConnection(clock).attach(hub);
    b.clientSend(encode({ type: FrameType.HELLO, version: 1, name: 'x', resumeToken: w.resumeToken }));
    run(clock, hub, [b], 100);
    const w2 = decoded(b).find((f) => f.type === FrameType.WELCOME);
    ok(w2 && w2.type === FrameType.WELCOME);
    equal(w2.sessionId, w.sessionId);
    equal(hub.sessions()[0]?.state, SessionState.ACTIVE);
  });

  it('a stalled link whose never-shed traffic cannot drain is parked after 2 s, and its connection closed', () => {
    const { hub, clock, catalog } = makeHub();
    const safety = catalog.byName('safety')!;
    const imu = catalog.byName('imu')!;
    const sim = new SimBleConnection(clock, { attMtu: 23 }).attach(hub);
    sim.clientSend(encode({ type: FrameType.HELLO, version: 1, name: 'x', subWishes: [{ channelId: safety.id, wishedRateHz: 10 }, { channelId: imu.id, wishedRateHz: 50 }] }));
    run(clock, hub, [sim], 200);
    ok(decoded(sim).some((f) => f.type === FrameType.WELCOME));
    sim.stalled = true;
    const v = new Float64Array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6]);
    for (let i = 0; i < 40 && sim.link.canSend(40); i++) {
      hub.publishSample(imu.id, clock.now(), v, 6);
      run(clock, hub, [sim], 20);
    }
    ok(!sim.link.canSend(40), 'the stalled queue is full');
    hub.publishSample(safety.id, clock.now(), v, 3);
    run(clock, hub, [sim], 1900);
    equal(hub.sessions()[0]?.state, SessionState.ACTIVE, 'not parked before 2 s');
    ok(!sim.closedByHub);
    run(clock, hub, [sim], 200);
    equal(hub.sessions()[0]?.state, SessionState.STALE, 'parked: STALE, not closed (§10.4)');
    ok(sim.closedByHub, 'the transport was closed');
    ok(sim.link.closed);
    equal(hub.counters.parks, 1);
  });
});
