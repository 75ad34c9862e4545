import fc from 'fast-check';
import { NEVER_SHED_STALL_EVICTION_MS } from '../../hub/constants.js';
import { AckForm, type Link, type LinkCaps, type LinkEstimate } from '../../hub/ports.js';
import { StagedBytes } from '../../hub/bytes.js';
import { EventQueue, FrameRing, RingColumns, StallClock } from '../../hub/queues.js';
import { deepEqual, equal, ok, throws } from '../lib/assert.js';
import { runs } from '../lib/env.js';

function frame(len: number, fill: number): Uint8Array {
  const f = new Uint8Array(len);
  for (let i = 0; i < len; i++) f[i] = (fill + i) & 0xff;
  return f;
}

/** The head frame, a copy of what stageHead hands out (exactly the frame). */
function head(r: FrameRing): Uint8Array {
  const staged = r.stageHead();
  if (staged === null) return new Uint8Array(0);
  equal(staged.length, r.headLength, 'the staged head is exactly the frame');
  const out = staged.slice();
  r.arena.unstage();
  return out;
}

// A link that takes `budget` bytes and copies what it is given, as Link.send promises: with no
// room for a frame it queues nothing and returns false (the send contract, hub/ports.ts).
class FakeLink implements Link {
  readonly caps: LinkCaps = Object.freeze({ binding: 'fake', broadcast: false, datagram: false, mtu: 1024, writeAheadSlots: 4, ackForm: AckForm.STREAM });
  readonly level = 0;
  budget = 0;
  refused = 0;
  readonly sent: Uint8Array[] = [];
  /** What send was handed: the view itself, its length and offset at the call, the tag and seq. */
  readonly given: { view: Uint8Array; length: number; byteOffset: number; tag: number; seq: number }[] = [];
  send(f: Uint8Array, tag: number, seq: number): boolean {
    if (f.length > this.budget) {
      this.refused++;
      return false;
    }
    this.budget -= f.length;
    this.given.push({ view: f, length: f.length, byteOffset: f.byteOffset, tag, seq });
    this.sent.push(f.slice());
    return true;
  }
  writeAhead(): void {}
  acked(): void {}
  granted(): void {}
  estimate(): LinkEstimate {
    return { throughputBps: 0, rttMs: 0 };
  }
  occupancy(): number {
    return 0;
  }
  stalledMs(): number {
    return 0;
  }
  ackLag(): number {
    return 0;
  }
  lossRate(): number {
    return NaN;
  }
  tierCeiling(): number {
    return 2;
  }
  close(): void {}
}

/** The head frame as it lies in the ring's region of its arena: arena.all[base + headStart, … + headLength). */
function inPlace(r: FrameRing): Uint8Array {
  return r.arena.all.slice(r.base + r.headStart, r.base + r.headStart + r.headLength);
}

describe('hub/queues: FrameRing (§10.4 never-shed queue)', () => {
  it('holds whole frames in order, with their tags, and gives them back byte for byte', () => {
    const r = new FrameRing(64, 8);
    ok(r.push(frame(5, 1), 0x87));
    ok(r.push(frame(7, 50), 0x8b));
    ok(r.push(frame(9, 100).subarray(2, 5), 0x00ff_0087), 'a view into a larger buffer: exactly the view');
    equal(r.size, 3);
    equal(r.bytes, 15);
    deepEqual(head(r), frame(5, 1));
    equal(r.headTag, 0x87);
    ok(r.shift());
    deepEqual(head(r), frame(7, 50));
    equal(r.headTag, 0x8b);
    ok(r.shift());
    deepEqual(head(r), frame(9, 100).slice(2, 5));
    equal(r.headTag, 0x00ff_0087, 'a tag with a channel survives whole');
    ok(r.shift());
    equal(r.size, 0);
    equal(r.bytes, 0);
    ok(!r.shift(), 'shift on empty');
    equal(r.headLength, 0);
    equal(r.headStart, -1);
    equal(r.headTag, 0);
    equal(r.copyHead(new Uint8Array(4)), 0);
  });

  it('copyHead copies the head frame and returns its length; a short destination throws', () => {
    const r = new FrameRing(32, 4);
    r.push(frame(6, 10));
    r.push(frame(4, 20));
    const into = new Uint8Array(8).fill(0xee);
    equal(r.copyHead(into), 6, 'the head frame is 6 bytes');
    deepEqual(into, Uint8Array.of(...frame(6, 10), 0xee, 0xee), 'exactly the head frame was copied');
    r.shift();
    equal(r.copyHead(into), 4);
    deepEqual(into.subarray(0, 4), frame(4, 20));
    throws(() => r.copyHead(new Uint8Array(3)), (e) => e instanceof RangeError);
    equal(r.stageHead()?.length, 4, 'a refused copy leaves the head as it was');
    r.arena.unstage();
    r.shift();
    equal(r.copyHead(into), 0, 'empty');
  });

  it('the head frame is readable in place: arena.all[base + headStart, base + headStart + headLength)', () => {
    const r = new FrameRing(32, 4);
    r.push(frame(6, 10));
    r.push(frame(4, 20));
    r.shift();
    equal(r.headStart, 6);
    equal(r.headLength, 4);
    equal(r.base, 0, 'a ring that made its own arena starts at 0');
    deepEqual(inPlace(r), frame(4, 20));
  });

  it('a ring in a region of a shared arena stays inside its region', () => {
    const arena = new StagedBytes(40, 16);
    const a = new FrameRing(16, 4, arena, 0);
    const b = new FrameRing(24, 4, arena, 16);
    ok(a.push(frame(16, 1)));
    ok(b.push(frame(10, 2)));
    ok(b.push(frame(14, 3)));
    ok(!a.push(frame(1, 0)), 'a is full: it does not spill into b');
    ok(!b.push(frame(1, 0)), 'b is full: it does not spill past the arena capacity');
    deepEqual(inPlace(a), frame(16, 1));
    deepEqual(inPlace(b), frame(10, 2));
    equal(b.base + b.headStart, 16);
    b.shift();
    deepEqual(inPlace(b), frame(14, 3));
    deepEqual(head(a), frame(16, 1), 'a is untouched by b');
    throws(() => new FrameRing(24, 4, arena, 17), (e) => e instanceof RangeError);
  });

  it('rings sharing one set of per-frame columns keep their own frames, tags, counts and waits', () => {
    const arena = new StagedBytes(64, 32);
    const cols = new RingColumns(2, 3, 32);
    const a = new FrameRing(32, 3, arena, 0, cols, 0);
    const b = new FrameRing(32, 3, arena, 32, cols, 1);
    ok(a.push(frame(5, 1), 11, 100));
    ok(b.push(frame(7, 2), 22, 200));
    ok(a.push(frame(6, 3), 33, 150));
    ok(b.push(frame(4, 4), 44, 250));
    ok(b.push(frame(3, 5), 55, 260));
    ok(!b.push(frame(1, 6)), 'b holds its 3 frames: it does not take a slot of a');
    ok(a.push(frame(2, 7), 66, 170), 'a still has its third slot');
    equal(a.headTag, 11);
    equal(b.headTag, 22);
    equal(a.headWaitMs(300), 200);
    equal(b.headWaitMs(300), 100);
    deepEqual(head(a), frame(5, 1));
    deepEqual(head(b), frame(7, 2));
    a.shift();
    b.shift();
    equal(a.headTag, 33);
    equal(b.headTag, 44);
    deepEqual(head(a), frame(6, 3));
    deepEqual(head(b), frame(4, 4));
    throws(() => new FrameRing(32, 4, arena, 0, cols, 0), (e) => e instanceof RangeError);
    throws(() => new FrameRing(32, 3, arena, 0, cols, 2), (e) => e instanceof RangeError);
  });

  it('refuses what does not fit, by bytes or by frame count, and changes nothing', () => {
    const r = new FrameRing(10, 2);
    ok(!r.push(frame(11, 0)), 'larger than the ring');
    equal(r.size, 0);
    ok(r.push(frame(6, 0)));
    ok(!r.fits(5));
    ok(!r.push(frame(5, 0)), '6 + 5 > 10');
    ok(r.fits(4));
    ok(r.push(frame(4, 9)));
    ok(!r.push(frame(1, 0)), 'full by bytes');
    const s = new FrameRing(100, 2);
    s.push(frame(1, 0));
    s.push(frame(1, 0));
    ok(!s.fits(1));
    ok(!s.push(frame(1, 0)), 'full by frame count');
    equal(s.size, 2);
    equal(s.bytes, 2);
    deepEqual(head(r), frame(6, 0));
  });

  it('wraps by leaving a gap at the end: frames stay contiguous', () => {
    const r = new FrameRing(10, 8);
    r.push(frame(4, 1)); // [0, 4)
    r.push(frame(4, 2)); // [4, 8)
    r.shift(); // head at 4
    ok(!r.fits(5), '2 bytes after the tail, 4 before the head');
    ok(r.push(frame(4, 3)), 'goes to the front');
    equal(r.bytes, 8);
    ok(!r.fits(1), 'wrapped: nothing between tail 4 and head 4');
    equal(r.headStart, 4);
    deepEqual(head(r), frame(4, 2));
    r.shift();
    equal(r.headStart, 0, 'past the gap, the head is back at the front');
    deepEqual(head(r), frame(4, 3));
    ok(r.push(frame(6, 4)), 'unwrapped again: [4, 10)');
    equal(r.bytes, 10);
    r.shift();
    deepEqual(head(r), frame(6, 4));
    equal(r.headStart, 4);
  });

  it('an emptied ring starts over at offset 0 (all its room contiguous again)', () => {
    const r = new FrameRing(10, 4);
    r.push(frame(7, 0));
    r.shift();
    ok(r.push(frame(10, 5)));
    equal(r.headStart, 0);
    deepEqual(head(r), frame(10, 5));
  });

  it('clear empties it', () => {
    const r = new FrameRing(16, 4);
    r.push(frame(5, 0));
    r.push(frame(5, 0));
    r.clear();
    equal(r.size, 0);
    equal(r.bytes, 0);
    ok(r.push(frame(16, 3)));
  });

  it('rejects bad sizes and an empty frame', () => {
    throws(() => new FrameRing(0, 1), (e) => e instanceof RangeError);
    throws(() => new FrameRing(10, 0), (e) => e instanceof RangeError);
    const r = new FrameRing(10, 2);
    throws(() => r.push(new Uint8Array(0)), (e) => e instanceof RangeError);
    throws(() => r.push(frame(3, 0).subarray(1, 1)), (e) => e instanceof RangeError);
    equal(r.size, 0);
    r.push(frame(3, 0));
    throws(() => r.copyHead(new Uint8Array(2)), (e) => e instanceof RangeError);
  });

  it('drainTo sends head frames while the link takes them, in order, each exact and staged, with its tag', () => {
    const r = new FrameRing(16, 8);
    r.push(frame(6, 1), 0x81, 100); // [0, 6)
    r.push(frame(6, 2), 0x0007_00a7, 103); // [6, 12)
    r.push(frame(3, 3), 0x8e, 110); // [12, 15)
    const link = new FakeLink();
    const waits: [number, number][] = [];
    const sink = { recordEgressWait: (ms: number, now: number): void => void waits.push([ms, now]) };
    link.budget = 11;
    equal(r.drainTo(link, 120, sink), 1, 'room for one 6-byte frame, not two');
    equal(link.refused, 1, 'the second frame was offered, refused, and drainTo stopped');
    equal(r.size, 2, 'a refused frame stays queued');
    equal(r.drainTo(link, 125, sink), 0, '5 bytes left, the head needs 6');
    deepEqual(head(r), frame(6, 2), 'still at the head after being refused twice');
    link.budget = 100;
    equal(r.drainTo(link, 130, sink), 2);
    deepEqual(link.sent, [frame(6, 1), frame(6, 2), frame(3, 3)]);
    // Each frame was handed as an exact view staged in the ring's arena, after its fixed storage.
    for (const g of link.given) {
      equal(g.view.buffer, r.arena.all.buffer, 'a view into the arena, not a copy');
      equal(g.byteOffset, r.arena.capacity, 'in the staging area');
    }
    deepEqual(
      link.given.map((g) => g.length),
      [6, 6, 3],
      'exactly each frame',
    );
    deepEqual(
      link.given.map((g) => g.tag),
      [0x81, 0x0007_00a7, 0x8e],
      'with the tag it was pushed with',
    );
    deepEqual(
      link.given.map((g) => g.seq),
      [0, 0, 0],
      'and no push sequence',
    );
    deepEqual(waits, [
      [20, 120],
      [27, 130],
      [20, 130],
    ], 'the wait of each frame that went, from its push');
    equal(r.size, 0);
    equal(r.drainTo(link, 140), 0);
    equal(link.given.length, 3, 'an empty ring offers nothing');
  });

  it('property: against a plain array of frames, through pushes, shifts and wraps', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 64 }),
        fc.integer({ min: 1, max: 8 }),
        fc.array(fc.oneof(fc.integer({ min: 1, max: 40 }), fc.constant(0)), { maxLength: 120 }),
        (cap, maxFrames, ops) => {
          const r = new FrameRing(cap, maxFrames);
          const model: { f: Uint8Array; tag: number }[] = [];
          let seq = 0;
          for (const op of ops) {
            if (op === 0) {
              const want = model.shift();
              if (want === undefined) {
                if (r.shift()) return false;
                continue;
              }
              const got = new Uint8Array(r.headLength);
              r.copyHead(got);
              if (!sameBytes(got, want.f)) return false;
              if (!sameBytes(inPlace(r), want.f)) return false;
              if (r.headTag !== want.tag) return false;
              if (!r.shift()) return false;
            } else {
              const tag = seq * 0x10001;
              const f = frame(op, seq++ * 7);
              const fits = r.fits(op);
              const took = r.push(f, tag);
              if (took !== fits) return false;
              if (model.length === 0 && op <= cap && !took) return false; // an empty ring takes any frame ≤ cap
              if (model.length === maxFrames && took) return false;
              if (took) model.push({ f, tag });
            }
            let bytes = 0;
            for (const m of model) bytes += m.f.length;
            if (r.size !== model.length || r.bytes !== bytes || bytes > cap) return false;
          }
          return true;
        },
      ),
      { numRuns: runs(1000, 80) },
    );
  });
});

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

describe('hub/queues: EventQueue (§9.4 drop oldest, visible count)', () => {
  it('delivers in order while there is room', () => {
    const q = new EventQueue<string>(3);
    ok(q.push('a'));
    ok(q.push('b'));
    equal(q.size, 2);
    equal(q.peek(), 'a');
    equal(q.shift(), 'a');
    equal(q.takeDropped(), 0);
    equal(q.shift(), 'b');
    equal(q.shift(), undefined);
    equal(q.peek(), undefined);
  });

  it('when full drops the oldest and counts it; the next delivery carries the count and resets it', () => {
    const q = new EventQueue<number>(3);
    for (let i = 1; i <= 3; i++) ok(q.push(i));
    ok(!q.push(4), 'drops 1');
    ok(!q.push(5), 'drops 2');
    equal(q.size, 3);
    equal(q.shift(), 3, 'the oldest survivor');
    equal(q.takeDropped(), 2);
    equal(q.shift(), 4);
    equal(q.takeDropped(), 0, 'reset by the previous delivery');
    q.push(6);
    q.push(7);
    q.push(8);
    equal(q.shift(), 6, 'dropped 5');
    equal(q.takeDropped(), 1);
    equal(q.droppedTotal, 3, 'health keeps the running total');
    deepEqual([q.shift(), q.shift(), q.shift()], [7, 8, undefined]);
  });

  it('holds references: the shared record is delivered itself, not a copy', () => {
    const rec = Object.freeze({ code: 7 });
    const q = new EventQueue<typeof rec>(1);
    q.push(rec);
    equal(q.shift(), rec);
  });

  it('capacity 1 keeps only the newest', () => {
    const q = new EventQueue<number>(1);
    for (let i = 0; i < 10; i++) q.push(i);
    equal(q.shift(), 9);
    equal(q.takeDropped(), 9);
  });

  it('clear empties it and forgets the pending count; the total stays', () => {
    const q = new EventQueue<number>(2);
    q.push(1);
    q.push(2);
    q.push(3);
    q.clear();
    equal(q.size, 0);
    equal(q.takeDropped(), 0);
    equal(q.droppedTotal, 1);
    q.push(4);
    equal(q.shift(), 4);
  });

  it('rejects a capacity below 1', () => {
    throws(() => new EventQueue<number>(0), (e) => e instanceof RangeError);
  });

  it('property: against a plain array', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 6 }), fc.array(fc.boolean(), { maxLength: 100 }), (cap, ops) => {
        const q = new EventQueue<number>(cap);
        const model: number[] = [];
        let dropped = 0;
        let next = 0;
        for (const isPush of ops) {
          if (isPush) {
            q.push(next);
            model.push(next++);
            if (model.length > cap) {
              model.shift();
              dropped++;
            }
          } else {
            if (q.shift() !== model.shift()) return false;
            if (q.takeDropped() !== dropped) return false;
            dropped = 0;
          }
          if (q.size !== model.length) return false;
        }
        return true;
      }),
      { numRuns: runs(500, 60) },
    );
  });
});

describe('hub/queues: StallClock (§10.4 park, not kill)', () => {
  it(`parks at exactly NEVER_SHED_STALL_EVICTION_MS (${NEVER_SHED_STALL_EVICTION_MS}) of no progress, not before`, () => {
    const s = new StallClock();
    equal(s.limitMs, NEVER_SHED_STALL_EVICTION_MS);
    s.update(true, false, 10_000);
    s.update(true, false, 10_500); // no progress: the stall still counts from 10 000
    equal(s.stalledFor(10_000 + 1999), 1999);
    ok(!s.parkDue(10_000 + 1999));
    equal(s.stalledFor(10_000 + 2000), 2000);
    ok(s.parkDue(10_000 + 2000));
    ok(s.parkDue(10_000 + 2001));
  });

  it('progress restarts the clock', () => {
    const s = new StallClock();
    s.update(true, false, 0);
    s.update(true, true, 1500); // one frame went out, more wait
    ok(!s.parkDue(2000));
    equal(s.stalledFor(2000), 500);
    ok(!s.parkDue(1500 + 1999));
    ok(s.parkDue(1500 + 2000));
  });

  it('an empty queue is not stalled', () => {
    const s = new StallClock();
    equal(s.stalledFor(5000), 0);
    ok(!s.parkDue(5000));
    s.update(true, false, 0);
    s.update(false, false, 1000);
    equal(s.stalledFor(9000), 0);
    ok(!s.parkDue(9000));
    s.update(true, false, 9000);
    ok(!s.parkDue(10_999));
    ok(s.parkDue(11_000));
    s.reset();
    ok(!s.parkDue(20_000));
  });

  it('with a FrameRing and a link that stops draining', () => {
    const r = new FrameRing(64, 8);
    const s = new StallClock();
    const link = new FakeLink();
    let parkedAt = -1;
    link.budget = 1000;
    for (let t = 0; t <= 5000 && parkedAt < 0; t += 50) {
      if (t === 1000) link.budget = 0; // the link wedges
      r.push(frame(4, t), 0, t);
      const sent = r.drainTo(link, t);
      s.update(r.size > 0, sent > 0, t);
      if (s.parkDue(t)) parkedAt = t;
    }
    equal(parkedAt, 1000 + NEVER_SHED_STALL_EVICTION_MS);
  });
});
