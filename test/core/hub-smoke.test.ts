import { equal, ok, deepEqual } from '../lib/assert.js';
import { credentialStore, makeHub, RecordingRobot, SeededRandom, TestClient, VirtualClock } from '../lib/hub-fixture.js';
import { FrameType, type DataFrame } from '../../hub/frames.js';
import { Hub } from '../../hub/hub.js';
import { ScriptSampleWriter } from '../../hub/fast-frames.js';
import type { SampleWriter } from '../../hub/ports.js';
import { loadCatalog } from '../../catalog/index.js';
import { DEFAULT_CATALOG } from '../../catalog/default.js';

describe('hub smoke', () => {
  it('HELLO, WELCOME with grants, DATA delivered', () => {
    const { hub, catalog, clock } = makeHub();
    const imu = catalog.byName('imu')!;
    const c = new TestClient(hub);
    c.send({ type: FrameType.HELLO, version: 1, name: 'scope', subWishes: [{ channelId: imu.id, wishedRateHz: 100 }] });
    const [welcome] = c.take(FrameType.WELCOME);
    ok(welcome && welcome.type === FrameType.WELCOME);
    deepEqual(welcome.subGrants.map((g) => [g.channelId, g.grantedRateHz]), [[imu.id, 50]]); // observer tier cap
    const v = new Float64Array([1, 2, 3, 4, 5, 6]);
    for (let i = 0; i < 20; i++) {
      clock.advance(5);
      hub.publishSample(imu.id, clock.now(), v, 6);
    }
    const data = c.take(FrameType.DATA);
    equal(data.length, 5);
    equal(hub.counters.rows[1], data.length);
  });

  it('pushes of channels in turn: each DATA frame carries its own channel, seq and values', () => {
    const { hub, catalog, clock } = makeHub();
    const imu = catalog.byName('imu')!;
    const odom = catalog.byName('odom')!;
    const c = new TestClient(hub);
    c.send({ type: FrameType.HELLO, version: 1, name: 'scope', subWishes: [{ channelId: imu.id, wishedRateHz: 10 }, { channelId: odom.id, wishedRateHz: 10 }] });
    c.take(FrameType.WELCOME);
    // The push's buffer keeps the last route's prefix: a change of channel must rewrite it.
    const order = [imu, odom, odom, imu, odom, imu, imu];
    for (let i = 0; i < order.length; i++) {
      clock.advance(200);
      const ch = order[i]!;
      hub.publishSample(ch.id, clock.now(), new Float64Array([i + 0.5, 2, 3, 4, 5, 6]), ch.fieldCount);
    }
    const data = c.take(FrameType.DATA) as DataFrame[];
    deepEqual(
      data.map((f) => f.channelId),
      order.map((ch) => ch.id),
    );
    deepEqual(
      data.map((f) => f.values[0]),
      order.map((_, i) => i + 0.5),
    );
    deepEqual(
      data.map((f) => f.values.length),
      order.map((ch) => ch.fieldCount),
    );
  });
});

describe('hub: the DATA writer port (HubPorts.sampleWriter)', () => {
  /** Every DATA frame's bytes a client receives from pushes of imu, odom and scan with awkward values. */
  function frames(sampleWriter: SampleWriter | undefined): { bytes: string[]; calls: number } {
    const catalog = loadCatalog(DEFAULT_CATALOG);
    const clock = new VirtualClock();
    let calls = 0;
    const counted: SampleWriter | undefined =
      sampleWriter === undefined
        ? undefined
        : {
            writeSample(b, p, seq, t, values, at, count) {
              calls++;
              return sampleWriter.writeSample(b, p, seq, t, values, at, count);
            },
          };
    const hub = new Hub({ clock, random: new SeededRandom(7), store: credentialStore(), robot: new RecordingRobot(), catalog, sampleWriter: counted }, { livenessTimeoutMs: Infinity });
    const chans = ['imu', 'odom', 'scan'].map((n) => catalog.byName(n)!);
    const c = new TestClient(hub);
    c.send({ type: FrameType.HELLO, version: 1, name: 'scope', subWishes: chans.map((ch) => ({ channelId: ch.id, wishedRateHz: 1000 })) });
    c.take(FrameType.WELCOME);
    const awkward = [0.1, -0, NaN, Infinity, -Infinity, 65504, 2 ** -24, 2 ** 53 - 1, -(2 ** 31) - 1, 1e300, Math.fround(0.3), 7];
    // Values from a longer array at an offset: the writer reads the first `count` from where the array starts.
    const store = new Float64Array(40);
    const values = new Float64Array(store.buffer, 8 * 3, 20);
    for (let i = 0; i < 30; i++) {
      clock.advance(i === 10 ? 70000 : 200);
      const ch = chans[i % 3]!;
      for (let k = 0; k < values.length; k++) values[k] = awkward[(i + k) % awkward.length] as number;
      hub.publishSample(ch.id, clock.now(), values, ch.fieldCount);
    }
    c.link.drain();
    const bytes = c.link.received.filter((w) => w.frame?.type === FrameType.DATA).map((w) => Array.from(w.bytes, (x) => x.toString(16).padStart(2, '0')).join(''));
    return { bytes, calls };
  }

  it('delivers byte for byte the frames the hub writes itself, one writer call per push', () => {
    const own = frames(undefined);
    const given = frames(new ScriptSampleWriter());
    equal(own.bytes.length, 30);
    deepEqual(given.bytes, own.bytes);
    equal(given.calls, 30);
    equal(own.calls, 0);
  });

  it('sends what the writer writes (a writer that writes something else is seen)', () => {
    const own = frames(undefined);
    const inner = new ScriptSampleWriter();
    const wrong: SampleWriter = {
      writeSample(b, p, seq, t, values, at, count) {
        return inner.writeSample(b, p, seq + 1, t, values, at, count);
      },
    };
    const other = frames(wrong);
    equal(other.bytes.length, own.bytes.length);
    ok(other.bytes.every((b, i) => b !== own.bytes[i]));
  });
});
