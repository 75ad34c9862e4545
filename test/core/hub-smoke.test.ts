import { equal, ok, deepEqual } from '../lib/assert.js';
import { makeHub, TestClient } from '../lib/hub-fixture.js';
import { FrameType, type DataFrame } from '../../hub/frames.js';

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
