import { equal, ok, deepEqual } from '../lib/assert.js';
import { makeHub, TestClient } from '../lib/hub-fixture.js';
import { FrameType } from '../../hub/frames.js';

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
});
