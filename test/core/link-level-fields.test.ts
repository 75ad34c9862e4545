// hub/ports.ts LinkLevelFields: the device's route (device/native/route.c) reads a link's level as
// its `lvl` field whenever the link's detector's `judgements` equal its `judgementsSeen`, instead of
// running the `level` getter. That holds only while the getter would say the same: TcpLink and
// BleLink are driven here through random sends, acknowledgements, hand-outs, completions, ticks and
// time, and at every step where the fields say the level stands, the getter must read `lvl`.
import { equal, ok } from '../lib/assert.js';
import { BleLink, type BleTransport } from '../../bindings/ble/link.js';
import { LinkFraming, MIN_QUEUE_BYTES, TcpLink } from '../../bindings/tcp/egress.js';
import { FrameType } from '../../hub/frames.js';
import { Tag, tagOf, type Link, type LinkLevelFields, type LinkSink } from '../../hub/ports.js';
import { Prng } from '../lib/fuzz.js';

class Clock {
  t = 1000;
  now(): number {
    return this.t;
  }
}

const hub = {
  attach(_link: Link): LinkSink {
    return { frame: () => {}, lost: () => {}, levelChanged: () => {} };
  },
};

const SAMPLE = tagOf(FrameType.DATA, Tag.SAMPLE, 3);
const KEEP = tagOf(FrameType.DATA, 0, 4);

function frame(n: number, seed: number): Uint8Array {
  const f = new Uint8Array(n);
  for (let i = 0; i < n; i++) f[i] = (seed + i * 7) & 0xff;
  return f;
}

/** How many steps the fields said the level stands, and the getter agreed. */
function check(link: Link, standing: { n: number }, step: number): void {
  const f = link as unknown as LinkLevelFields;
  if (f.detector.judgements === f.judgementsSeen) {
    const lvl = f.lvl;
    equal(link.level, lvl, `step ${step}: the fields say the level stands at ${lvl}`);
    standing.n++;
  }
}

describe('hub/ports LinkLevelFields: a link whose level stands reads as its field', () => {
  it('TcpLink: the getter reads `lvl` at every step the fields say so', () => {
    for (const seed of [1, 7, 99]) {
      const rng = new Prng(seed * 2654435761);
      const clock = new Clock();
      const link = new TcpLink({ hub, clock, framing: LinkFraming.LENGTH_PREFIX, binding: 'tcp', queueBytes: MIN_QUEUE_BYTES });
      // A socket that takes frames straight over while it has room, and sometimes has none.
      const transport = { room: 65536, writeFrame(): void {}, kick(): void {}, close(): void {} };
      link.start(transport);
      const buf = new Uint8Array(1 << 16);
      const standing = { n: 0 };
      let sent = 0;
      for (let step = 0; step < 3000; step++) {
        const op = rng.below(10);
        if (op < 4) {
          if (link.send(frame(20 + rng.below(300), step), rng.float() < 0.5 ? SAMPLE : KEEP, step)) sent++;
        } else if (op === 4) transport.room = rng.float() < 0.3 ? 0 : 65536;
        else if (op === 5) link.pull(buf, 0, 1 + rng.below(2000));
        else if (op === 6) link.acked(Math.max(0, sent - rng.below(40)));
        else clock.t += rng.below(op === 9 ? 800 : 30);
        // Now and then a quiet spell: everything handed over and acknowledged, time passes, the level judged.
        if (step % 150 === 149) {
          transport.room = 65536;
          while (link.pull(buf, 0, buf.length) > 0);
          link.acked(sent);
          clock.t += 3000;
          void link.level;
        }
        check(link, standing, step);
      }
      ok(standing.n > 100, `seed ${seed}: the level stood at ${standing.n} steps`);
    }
  });

  it('BleLink: the getter reads `lvl` at every step the fields say so', () => {
    for (const seed of [3, 11, 42]) {
      const rng = new Prng(seed * 2246822519);
      const clock = new Clock();
      let pending = 0;
      const transport: BleTransport = {
        maximumWrite: () => 180,
        notify: () => {
          pending++;
        },
        close: () => {},
      };
      const link = new BleLink(transport, clock, {}, true);
      link.connect(hub.attach(link));
      const standing = { n: 0 };
      for (let step = 0; step < 3000; step++) {
        const op = rng.below(10);
        if (op < 4) link.send(frame(10 + rng.below(400), step), rng.float() < 0.5 ? SAMPLE : KEEP, step);
        else if (op < 6 && pending > 0) {
          pending--;
          link.notified(rng.float() < 0.95 ? 0 : 1);
        } else if (op === 6) link.tick(clock.now());
        else clock.t += rng.below(op === 9 ? 600 : 25);
        check(link, standing, step);
      }
      ok(standing.n > 100, `seed ${seed}: the level stood at ${standing.n} steps`);
    }
  });
});
