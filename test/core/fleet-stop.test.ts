// hub/fleet-stop.ts: the signed fleet-wide stop judged byte by byte: form, signature, target,
// sequence (kept in the Store), and time against the hub's wall clock (docs/fleet.md).
import {
  FLEET_SEQ_KEY,
  FLEET_STOP_MAX_BYTES,
  FLEET_STOP_WINDOW_MS,
  FleetStopGuard,
  FleetStopVerdict,
  fleetStopMessage,
  fleetStopSigned,
  parseFleetStop,
  toHex,
} from '../../hub/fleet-stop.js';
import { hmacSha256 } from '../../hub/sha256.js';
import type { Store } from '../../hub/ports.js';
import { equal, ok } from '../lib/assert.js';

class MapStore implements Store {
  readonly map = new Map<string, Uint8Array>();
  get(key: string): Uint8Array | undefined {
    return this.map.get(key);
  }
  set(key: string, value: Uint8Array): void {
    this.map.set(key, value.slice());
  }
  delete(key: string): void {
    this.map.delete(key);
  }
}

const ascii = (s: string): Uint8Array => Uint8Array.from(s, (c) => c.charCodeAt(0));
const utf8 = (s: string): Uint8Array => {
  // Only what these tests write: ASCII and the two-byte 'é'.
  const out: number[] = [];
  for (const ch of s) {
    const c = ch.charCodeAt(0);
    if (c < 0x80) out.push(c);
    else out.push(0xc0 | (c >> 6), 0x80 | (c & 0x3f));
  }
  return Uint8Array.from(out);
};
const KEY = ascii('site key of the north hall');
const NOW = 1764662400000;

function guard(store: Store = new MapStore(), hubId = 'hub-3'): FleetStopGuard {
  return new FleetStopGuard({ site: 'north', hubId, key: KEY, store });
}

describe('fleet stop (hub/fleet-stop.ts)', () => {
  it('signs exactly the documented bytes', () => {
    const signed = fleetStopSigned('north', '*', 17, NOW);
    equal(String.fromCharCode(...signed), `robot-hub fleet estop v1\nnorth\n*\n17\n${NOW}`);
    const m = JSON.parse(fleetStopMessage('north', KEY, '*', 17, NOW)) as Record<string, unknown>;
    equal(m['v'], 1);
    equal(m['sig'], toHex(hmacSha256(KEY, signed)));
  });

  it('accepts a good stop for this hub or for every hub, once each', () => {
    const g = guard();
    equal(g.judge(ascii(fleetStopMessage('north', KEY, 'hub-3', 1, NOW)), NOW), FleetStopVerdict.ACCEPTED);
    equal(g.judge(ascii(fleetStopMessage('north', KEY, '*', 2, NOW + 1000)), NOW), FleetStopVerdict.ACCEPTED);
    equal(g.lastSeq, 2);
    equal(g.verdicts[FleetStopVerdict.ACCEPTED], 2);
  });

  it('refuses a replay, and an older sequence, also after a restart (the Store keeps the last one)', () => {
    const store = new MapStore();
    const g = guard(store);
    const msg = ascii(fleetStopMessage('north', KEY, '*', 40, NOW));
    equal(g.judge(msg, NOW), FleetStopVerdict.ACCEPTED);
    equal(g.judge(msg, NOW), FleetStopVerdict.REPLAYED);
    equal(g.judge(ascii(fleetStopMessage('north', KEY, '*', 39, NOW)), NOW), FleetStopVerdict.REPLAYED);
    ok(store.get(FLEET_SEQ_KEY));
    const again = guard(store);
    equal(again.lastSeq, 40);
    equal(again.judge(msg, NOW), FleetStopVerdict.REPLAYED);
    equal(again.judge(ascii(fleetStopMessage('north', KEY, '*', 41, NOW)), NOW), FleetStopVerdict.ACCEPTED);
  });

  it('refuses a wrong key, another site, a changed field or signature', () => {
    const g = guard();
    equal(g.judge(ascii(fleetStopMessage('north', ascii('another key'), '*', 1, NOW)), NOW), FleetStopVerdict.BAD_SIGNATURE);
    equal(g.judge(ascii(fleetStopMessage('south', KEY, '*', 1, NOW)), NOW), FleetStopVerdict.BAD_SIGNATURE);
    const good = JSON.parse(fleetStopMessage('north', KEY, 'hub-9', 1, NOW)) as Record<string, unknown>;
    for (const change of [{ target: '*' }, { target: 'hub-3' }, { seq: 2 }, { time: NOW + 1 }, { sig: (good['sig'] as string).replace(/^./, (c) => (c === '0' ? '1' : '0')) }]) {
      equal(g.judge(ascii(JSON.stringify({ ...good, ...change })), NOW), FleetStopVerdict.BAD_SIGNATURE, JSON.stringify(change));
    }
    equal(g.lastSeq, 0);
  });

  it('refuses a stale stop either side of the window, and judges none without a wall clock', () => {
    const g = guard();
    equal(g.judge(ascii(fleetStopMessage('north', KEY, '*', 1, NOW - FLEET_STOP_WINDOW_MS - 1)), NOW), FleetStopVerdict.STALE);
    equal(g.judge(ascii(fleetStopMessage('north', KEY, '*', 2, NOW + FLEET_STOP_WINDOW_MS + 1)), NOW), FleetStopVerdict.STALE);
    equal(g.lastSeq, 0, 'a stale stop does not move the sequence');
    equal(g.judge(ascii(fleetStopMessage('north', KEY, '*', 3, NOW - FLEET_STOP_WINDOW_MS)), NOW), FleetStopVerdict.ACCEPTED);
    equal(g.judge(ascii(fleetStopMessage('north', KEY, '*', 4, 5)), NaN), FleetStopVerdict.ACCEPTED);
    equal(g.untimed, 1);
  });

  it('takes a good stop for another hub as seen, and does nothing with it', () => {
    const g = guard();
    equal(g.judge(ascii(fleetStopMessage('north', KEY, 'hub-4', 7, NOW)), NOW), FleetStopVerdict.NOT_FOR_US);
    equal(g.lastSeq, 7);
    equal(g.judge(ascii(fleetStopMessage('north', KEY, 'hub-3', 7, NOW)), NOW), FleetStopVerdict.REPLAYED);
  });

  it('names a hub by any UTF-8 id', () => {
    const g = guard(new MapStore(), 'hub-é');
    equal(g.judge(utf8(fleetStopMessage('north', KEY, 'hub-é', 1, NOW)), NOW), FleetStopVerdict.ACCEPTED);
  });

  it('refuses what is not a fleet stop as MALFORMED, without a crash', () => {
    const g = guard();
    const good = JSON.parse(fleetStopMessage('north', KEY, '*', 1, NOW)) as Record<string, unknown>;
    const bad: Uint8Array[] = [
      new Uint8Array(0),
      ascii('stop'),
      ascii('[1,2]'),
      ascii('null'),
      new Uint8Array([0x7b, 0xff, 0x7d]),
      new Uint8Array(FLEET_STOP_MAX_BYTES + 1).fill(0x20),
    ];
    for (const change of [{ v: 2 }, { target: '' }, { target: 7 }, { seq: 0 }, { seq: -1 }, { seq: 1.5 }, { seq: '1' }, { time: -1 }, { sig: 'zz' }, { sig: 'g'.repeat(64) }, { sig: 'ab'.repeat(31) }]) {
      bad.push(ascii(JSON.stringify({ ...good, ...change })));
    }
    for (const b of bad) equal(g.judge(b, NOW), FleetStopVerdict.MALFORMED, String.fromCharCode(...b.subarray(0, 40)));
    equal(parseFleetStop(ascii(JSON.stringify({ ...good, target: 'x'.repeat(65) }))), null);
  });

  it('refuses everything when no key is configured', () => {
    const g = new FleetStopGuard({ site: 'north', hubId: 'hub-3', key: new Uint8Array(0), store: new MapStore() });
    equal(g.judge(ascii(fleetStopMessage('north', new Uint8Array(0), '*', 1, NOW)), NOW), FleetStopVerdict.NO_KEY);
  });
});
