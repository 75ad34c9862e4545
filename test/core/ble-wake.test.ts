// BLE's tick skipped while nothing is due (bindings/ble/link.ts TickWake, gatt-connection.ts
// tickConnections, BleBinding.tick on the device): two identical pairs of links take the same
// random run of sends, notification completions and failures, client writes (whole frames and
// partial ones left to time out), fragment-size changes and clock steps; one pair is ticked every
// millisecond, the other only when its wake says something is due. Both must hand out the same
// notifications, give the core the same frames and read the same levels and counters throughout,
// and the skipping pair must have skipped many ticks.
import fc from 'fast-check';
import { deepEqual, equal, ok } from '../lib/assert.js';
import { VirtualClock } from '../lib/hub-fixture.js';
import { Tag, tagOf, type LinkSink } from '../../hub/ports.js';
import { FrameType } from '../../hub/frames.js';
import { FragmentPosition, header } from '../../bindings/ble/fragment.js';
import { BleLink, type BleTransport, type TickWake } from '../../bindings/ble/link.js';
import { tickConnections, type GattConnection } from '../../bindings/ble/gatt-connection.js';

class Transport implements BleTransport {
  mw = 20;
  sent: number[][] = [];
  maximumWrite(): number {
    return this.mw;
  }
  notify(value: Uint8Array, length: number): void {
    this.sent.push(Array.from(value.subarray(0, length)));
  }
  close(): void {}
}

class Sink implements LinkSink {
  frames: number[][] = [];
  losses = 0;
  levels = 0;
  frame(bytes: Uint8Array, start: number, end: number): void {
    this.frames.push(Array.from(bytes.subarray(start, end)));
  }
  lost(): void {
    this.losses++;
  }
  levelChanged(): void {
    this.levels++;
  }
}

const SAMPLE = tagOf(FrameType.DATA, Tag.SAMPLE, 1);
const KEEP = tagOf(FrameType.DATA, 0, 1);

interface Side {
  clock: VirtualClock;
  links: BleLink[];
  transports: Transport[];
  sinks: Sink[];
  wake: TickWake;
  conns: GattConnection[];
  ticks: number;
}

function side(withWake: boolean): Side {
  const clock = new VirtualClock();
  const wake: TickWake = { dueAt: -Infinity };
  const links: BleLink[] = [];
  const transports: Transport[] = [];
  const sinks: Sink[] = [];
  for (let i = 0; i < 2; i++) {
    const t = new Transport();
    const sink = new Sink();
    const link = new BleLink(t, clock, withWake ? { wake, queue: { bytes: 2048 } } : { queue: { bytes: 2048 } }, true);
    link.connect(sink);
    links.push(link);
    transports.push(t);
    sinks.push(sink);
  }
  const conns = links.map((link) => ({ link }) as unknown as GattConnection);
  return { clock, links, transports, sinks, wake, conns, ticks: 0 };
}

function view(s: Side): unknown {
  return s.links.map((l, i) => ({
    sent: (s.transports[i] as Transport).sent.length,
    last: (s.transports[i] as Transport).sent.slice(-2),
    frames: (s.sinks[i] as Sink).frames,
    losses: (s.sinks[i] as Sink).losses,
    levels: (s.sinks[i] as Sink).levels,
    level: l.level,
    unconfirmed: l.unconfirmed,
    delivered: l.deliveredBytes,
    fill: l.queue.fill,
    inFlight: l.queue.inFlight,
    closed: l.closed,
  }));
}

type Op =
  | { kind: 'step'; ms: number }
  | { kind: 'send'; link: number; bytes: number; keep: boolean }
  | { kind: 'done'; link: number; status: number }
  | { kind: 'write'; link: number; whole: boolean }
  | { kind: 'mw'; link: number; mw: number };

const linkIx = fc.integer({ min: 0, max: 1 });
const op: fc.Arbitrary<Op> = fc.oneof(
  { weight: 6, arbitrary: fc.record({ kind: fc.constant('step' as const), ms: fc.oneof({ weight: 5, arbitrary: fc.integer({ min: 1, max: 30 }) }, { weight: 1, arbitrary: fc.constantFrom(250, 1200, 2500) }) }) },
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('send' as const), link: linkIx, bytes: fc.integer({ min: 5, max: 120 }), keep: fc.boolean() }) },
  { weight: 4, arbitrary: fc.record({ kind: fc.constant('done' as const), link: linkIx, status: fc.oneof({ weight: 5, arbitrary: fc.constant(0) }, { weight: 1, arbitrary: fc.constant(7) }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('write' as const), link: linkIx, whole: fc.boolean() }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('mw' as const), link: linkIx, mw: fc.constantFrom(20, 60, 182) }) },
);

function apply(s: Side, o: Op, seq: number): void {
  const link = s.links[(o as { link?: number }).link ?? 0] as BleLink;
  if (o.kind === 'send') {
    const f = new Uint8Array(o.bytes);
    for (let i = 0; i < f.length; i++) f[i] = (seq * 7 + i) & 0xff;
    link.send(f, o.keep ? KEEP : SAMPLE, seq);
  } else if (o.kind === 'done') {
    if (link.queue.inFlight) link.notified(o.status);
  } else if (o.kind === 'write') {
    // A whole frame in one write, or the first of three fragments, left to time out.
    const w = new Uint8Array(12);
    w[0] = header(o.whole ? FragmentPosition.ONLY : FragmentPosition.FIRST, seq & 0x0f);
    if (!o.whole) {
      w[1] = 0;
      w[2] = 40;
    }
    for (let i = o.whole ? 1 : 3; i < w.length; i++) w[i] = (seq + i) & 0xff;
    link.written(w, 0, w.length);
  } else if (o.kind === 'mw') (s.transports[(o as { link: number }).link] as Transport).mw = o.mw;
}

describe("BLE: the binding's tick skipped while nothing is due (TickWake)", () => {
  it('leaves everything as a tick every millisecond does, for random runs, and skips many ticks', () => {
    let skipped = 0;
    let ran = 0;
    fc.assert(
      fc.property(fc.array(op, { minLength: 10, maxLength: 80, size: 'max' }), (ops) => {
        const every = side(false);
        const woken = side(true);
        let seq = 0;
        for (const o of ops) {
          seq++;
          if (o.kind === 'step') {
            for (let ms = 0; ms < o.ms; ms++) {
              every.clock.t++;
              woken.clock.t++;
              tickConnections(every.conns, every.clock.t, every.wake);
              if (woken.clock.t >= woken.wake.dueAt) {
                tickConnections(woken.conns, woken.clock.t, woken.wake);
                ran++;
              } else skipped++;
            }
          } else {
            apply(every, o, seq);
            apply(woken, o, seq);
          }
          deepEqual(view(woken), view(every), `after ${JSON.stringify(o)}`);
        }
      }),
      { numRuns: 120, seed: 0xb1e },
    );
    // A link with frames queued is ticked every time (each tick reads the fragment size); a quiet one is skipped.
    ok(skipped > 20000, `skipped ${skipped} ticks, ran ${ran}`);
    ok(ran > 1000, `ran ${ran} ticks`);
  });

  it("a link's tick that throws leaves the wake at every tick, until a tick completes", () => {
    const s = side(true);
    for (let ms = 0; ms < 50; ms++) {
      s.clock.t++;
      if (s.clock.t >= s.wake.dueAt) tickConnections(s.conns, s.clock.t, s.wake);
    }
    ok(s.wake.dueAt > s.clock.t, 'quiet');
    const link = s.links[0] as BleLink;
    const tick = link.tick;
    link.tick = (): void => {
      throw new Error('upkeep failed');
    };
    s.clock.t = s.wake.dueAt;
    let threw = false;
    try {
      tickConnections(s.conns, s.clock.t, s.wake);
    } catch {
      threw = true;
    }
    ok(threw);
    equal(s.wake.dueAt, -Infinity, 'the next tick runs');
    link.tick = tick;
    s.clock.t++;
    tickConnections(s.conns, s.clock.t, s.wake);
    ok(s.wake.dueAt > s.clock.t, 'quiet again once a tick completes');
  });

  it('an event lowers the wake: a notification sent on a quiet link makes the next tick run', () => {
    const s = side(true);
    for (let ms = 0; ms < 50; ms++) {
      s.clock.t++;
      if (s.clock.t >= s.wake.dueAt) tickConnections(s.conns, s.clock.t, s.wake);
    }
    // Quiet: nothing due before the link's own deadlines.
    ok(s.wake.dueAt > s.clock.t, `the wake after a quiet tick: ${s.wake.dueAt}`);
    (s.links[1] as BleLink).send(new Uint8Array(30), SAMPLE, 1);
    equal(s.wake.dueAt, -Infinity, 'a queued frame: every tick reads the fragment size');
  });
});
