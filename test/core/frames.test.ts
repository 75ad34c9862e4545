// hub/frames.ts and hub/nack.ts: the key registry and codes by value, round trips of every
// frame, what the decoder refuses and with which NACK, the hot-path DATA encoder, and peek.
import fc from 'fast-check';
import { CborWriter, encodeValue, type CborMap, type CborValue } from '../../hub/cbor.js';
import { decodeValue } from '../../hub/cbor-reader.js';
import {
  decodeFrame,
  encodeData,
  encodeFrame,
  FRAME_DIRECTION,
  FRAME_TYPE_NAMES,
  FrameError,
  FrameType,
  FROM_CLIENT,
  FROM_HUB,
  GoodbyeReason,
  Key,
  MAX_FRAME_BYTES,
  MAX_HUB_FRAME_BYTES,
  peekFrameType,
  PROTOCOL_VERSION,
  type Frame,
} from '../../hub/frames.js';
import { isNackCode, isRetryable, Nack, nackCode, nackName, type NackName } from '../../hub/nack.js';
import { deepEqual, equal, ok, throws } from '../lib/assert.js';
import { runs } from '../lib/env.js';
import { bytesToHex, fromJson, hexToBytes } from '../lib/vector-json.js';
import framesJson from '../vectors/frames.json' with { type: 'json' };

const valid = framesJson as { name: string; frame: unknown; hex: string }[];
const w = new CborWriter(new Uint8Array(65536));
const ANY_SIZE = 65536;

function enc(f: Frame): Uint8Array {
  w.reset();
  encodeFrame(f, w);
  return w.subarray().slice();
}

function dec(b: Uint8Array, max = MAX_FRAME_BYTES): Frame {
  return decodeFrame(b, 0, b.length, max);
}

function cbor(v: CborValue): Uint8Array {
  const buf = new Uint8Array(16384);
  return buf.slice(0, encodeValue(v, buf));
}

function m(...entries: [number, CborValue][]): CborMap {
  return new Map(entries);
}

function nackOf(b: Uint8Array, max = MAX_FRAME_BYTES): FrameError {
  return throws(() => dec(b, max), (e) => e instanceof FrameError) as FrameError;
}

function expectNack(b: Uint8Array, name: NackName, msg?: string): FrameError {
  const e = nackOf(b);
  equal(nackName(e.nack), name, msg);
  return e;
}

describe('frames: pinned numbers', () => {
  it('frame types', () => {
    deepEqual({ ...FrameType }, {
      HELLO: 1, WELCOME: 2, SUBSCRIBE: 3, UNSUBSCRIBE: 4, PUBLISH: 5, GRANT: 6, DATA: 7, BUNDLE: 8, INTENT: 9,
      ECHO: 10, NACK: 11, ACK: 12, PING: 13, PONG: 14, GOODBYE: 15, ESTOP_CLEAR: 16, CATALOG: 17, HEALTH: 18,
    });
    for (const [name, code] of Object.entries(FrameType)) equal(FRAME_TYPE_NAMES[code], name);
    equal(PROTOCOL_VERSION, 1);
  });

  it('the key registry', () => {
    deepEqual({ ...Key }, {
      TYPE: 0, VERSION: 1, SESSION_ID: 2, CHANNEL_ID: 3, SEQ: 4, T: 5, VALUES: 6, NAME: 7, CREDENTIAL: 8,
      RESUME_TOKEN: 9, SUB_WISHES: 10, PUB_WISHES: 11, WISHED_RATE_HZ: 12, PRIORITY: 13, GRANTED_RATE_HZ: 14,
      CODE: 15, RETRY_AFTER_MS: 16, FRAME_TYPE: 17, ARGS: 18, REQUEST_ID: 19, RESULT: 20, HUB_ID: 21, MTU: 22,
      SLOTS: 23, CATALOG_HASH: 24, TIER: 25, GAP: 26, DROPPED: 27, ACKED: 28, ACK_BASE: 29, ACK_BITMAP: 30,
      T0: 31, T1: 32, OWNER: 33, LATCHED: 34, SUB_GRANTS: 35, PUB_GRANTS: 36, TEXT: 37, STALE_TTL_MS: 38,
      ESTOP_SEQ: 39, REASON: 40, CHANNELS: 41, BURST: 42, OFFSET: 43, TOTAL: 44, LEVEL: 45,
    });
  });

  it('limits', () => {
    equal(MAX_FRAME_BYTES, 1024);
    equal(MAX_HUB_FRAME_BYTES, 4608);
  });

  it('directions', () => {
    const c = FROM_CLIENT;
    const h = FROM_HUB;
    const b = c | h;
    deepEqual(FRAME_DIRECTION.slice(1), [c, h, c, c, c, h, h, c, c, h, h, c, b, b, b, c, b, b]);
  });

  it('GOODBYE reasons', () => {
    deepEqual({ ...GoodbyeReason }, { NORMAL: 0, SHUTDOWN: 1, MISBEHAVING: 2, EVICTED: 3, RESUMED_ELSEWHERE: 4 });
  });
});

describe('nack codes', () => {
  it('numbers', () => {
    deepEqual({ ...Nack }, {
      MALFORMED: 1, TOO_LARGE: 2, VERSION: 3, UNKNOWN_CHANNEL: 4, FORBIDDEN: 5, NOT_GRANTED: 6, NOT_OWNER: 7,
      RATE_LIMITED: 8, NO_SLOTS: 9, HUB_PRESSURE: 10, UNKNOWN_SESSION: 11, ESTOP_LATCHED: 12,
      SESSION_EVICTED: 13, NOT_READY: 14, INGRESS_BUDGET: 15, NOT_ARMED: 16,
    });
  });

  it('name ↔ code', () => {
    for (const [name, code] of Object.entries(Nack)) {
      equal(nackName(code), name);
      equal(nackCode(name), code);
      ok(isNackCode(code));
    }
    equal(nackName(0), undefined);
    equal(nackName(17), undefined);
    equal(nackName(1.5), undefined);
    equal(nackCode('toString'), undefined);
    equal(nackCode('malformed'), undefined);
  });

  it('retryable: exactly the codes that pass with time', () => {
    const retryable: string[] = [];
    for (const [name, code] of Object.entries(Nack)) if (isRetryable(code)) retryable.push(name);
    deepEqual(retryable, ['RATE_LIMITED', 'NO_SLOTS', 'HUB_PRESSURE', 'INGRESS_BUDGET']);
  });
});

// Required keys per frame type, as docs/protocol.md states them; GRANT, ACK and CATALOG
// have rules over several keys, checked in `decodes` below.
const REQUIRED: readonly (readonly number[])[] = [
  [],
  [0, 1, 7],
  [0, 2, 9, 21, 22, 23, 24, 25, 33, 34, 35, 36, 38],
  [0, 10],
  [0, 41],
  [0, 11],
  [0],
  [0, 3, 4, 5, 6],
  [0, 3, 6],
  [0, 3, 19],
  [0, 3, 19, 20],
  [0, 15],
  [0],
  [0, 31],
  [0, 31, 32],
  [0],
  [0],
  [0],
  [0],
];

function decodes(type: number, keys: Set<number>): boolean {
  for (const k of REQUIRED[type] as number[]) if (!keys.has(k)) return false;
  if (type === FrameType.GRANT) return keys.has(35) || keys.has(36);
  if (type === FrameType.ACK) return keys.has(28) ? !keys.has(29) && !keys.has(30) : keys.has(29) && keys.has(30);
  if (type === FrameType.CATALOG) return keys.has(24) === keys.has(37) && (!keys.has(44) || keys.has(37));
  if (type === FrameType.HEALTH) return !keys.has(44) || keys.has(37);
  return true;
}

describe('frames: required keys and types', () => {
  for (const v of valid) {
    it(`${v.name}: each key removed is refused iff it is required`, () => {
      const map = decodeValue(hexToBytes(v.hex)) as CborMap;
      const type = map.get(0) as number;
      for (const k of map.keys()) {
        const cut = new Map(map);
        cut.delete(k);
        const left = new Set(cut.keys());
        const b = cbor(cut);
        if (decodes(type, left)) {
          const f = dec(b);
          equal(f.type, type);
        } else {
          const e = expectNack(b, 'MALFORMED', `without key ${k}`);
          if (k !== 0) equal(e.frameType, type);
        }
      }
    });

    it(`${v.name}: each key holding a value of the wrong type is MALFORMED`, () => {
      const map = decodeValue(hexToBytes(v.hex)) as CborMap;
      for (const k of map.keys()) {
        const was = map.get(k) as CborValue;
        const wrong: CborValue[] = typeof was === 'string' ? [1, null] : typeof was === 'boolean' ? [1, 'x'] : ['x', null, true];
        for (const x of wrong) {
          const changed = new Map(map);
          changed.set(k, x);
          expectNack(cbor(changed), 'MALFORMED', `key ${k} = ${String(x)}`);
        }
      }
    });
  }
});

// A frame with one field replaced: [frame, key, value, nack or null when accepted].
const HELLO = m([0, 1], [1, 1], [7, 'c']);
const WELCOME = decodeValue(hexToBytes((valid.find((v) => v.name.startsWith('WELCOME')) as { hex: string }).hex)) as CborMap;
const DATA = m([0, 7], [3, 1], [4, 0], [5, 0], [6, [1]]);
const sub = (rate: CborValue, prio?: CborValue): CborMap => m([0, 3], [10, [prio === undefined ? m([3, 1], [12, rate]) : m([3, 1], [12, rate], [13, prio])]]);
const pub = (rate: CborValue, burst: CborValue): CborMap => m([0, 5], [11, [m([3, 1], [12, rate], [42, burst])]]);
const subGrant = (rate: CborValue, prio: CborValue): CborMap => m([0, 6], [35, [m([3, 1], [13, prio], [14, rate])]]);
const pubGrant = (rate: CborValue, burst: CborValue): CborMap => m([0, 6], [36, [m([3, 1], [14, rate], [42, burst])]]);
const nums = (n: number): number[] => Array.from({ length: n }, (_, i) => i);
function withKey(base: CborMap, k: number, v: CborValue): CborMap {
  const c = new Map(base);
  c.set(k, v);
  return new Map([...c.entries()].sort((a, b) => a[0] - b[0]));
}

const RANGES: [string, CborMap, NackName | null][] = [
  ['name of 32 ASCII bytes', withKey(HELLO, 7, 'n'.repeat(32)), null],
  ['name of 32 UTF-8 bytes', withKey(HELLO, 7, 'é'.repeat(16)), null],
  ['name of 34 UTF-8 bytes', withKey(HELLO, 7, 'é'.repeat(17)), 'MALFORMED'],
  ['name of 4-byte characters, 32 bytes', withKey(HELLO, 7, '🤖'.repeat(8)), null],
  ['name of 4-byte characters, 36 bytes', withKey(HELLO, 7, '🤖'.repeat(9)), 'MALFORMED'],
  ['credential of 64 bytes', withKey(HELLO, 8, new Uint8Array(64)), null],
  ['credential of 0 bytes', withKey(HELLO, 8, new Uint8Array(0)), null],
  ['resume token of 17 bytes', withKey(HELLO, 9, new Uint8Array(17)), 'MALFORMED'],
  ['version 0', withKey(HELLO, 1, 0), 'VERSION'],
  ['version 65536', withKey(HELLO, 1, 65536), 'MALFORMED'],
  ['version 2 with a name of 40 bytes', withKey(withKey(HELLO, 1, 2), 7, 'n'.repeat(40)), 'VERSION'],
  ['version 2 with a malformed sub-wish', withKey(withKey(HELLO, 1, 2), 10, [m([3, 0])]), 'VERSION'],
  ['version 2 without a name', m([0, 1], [1, 2]), 'VERSION'],
  // §7: the frame's own map is not counted; a value nests up to 8 arrays/maps from its own outermost.
  ['an unknown key holding 8 nested arrays', withKey(HELLO, 45, [[[[[[[[1]]]]]]]]), null],
  ['an unknown key holding 9 nested arrays', withKey(HELLO, 45, [[[[[[[[[1]]]]]]]]]), 'MALFORMED'],
  ['wished rate 1000', sub(1000), null],
  ['wished rate just above 1000', sub(1000.0000000001), 'MALFORMED'],
  ['wished rate of the smallest double', sub(5e-324), null],
  ['wished rate -0', sub(-0), 'MALFORMED'],
  ['priority 3', sub(1, 3), null],
  ['priority 4', sub(1, 4), 'MALFORMED'],
  ['priority -1', sub(1, -1), 'MALFORMED'],
  ['priority 1.5', sub(1, 1.5), 'MALFORMED'],
  ['burst 4000', pub(1, 4000), null],
  ['burst 4000.5', pub(1, 4000.5), 'MALFORMED'],
  ['wish burst 0', pub(1, 0), 'MALFORMED'],
  ['granted rate 0', subGrant(0, 0), null],
  ['granted rate 1000', subGrant(1000, 0), null],
  ['granted rate 1001', subGrant(1001, 0), 'MALFORMED'],
  ['granted rate NaN', subGrant(NaN, 0), 'MALFORMED'],
  ['granted burst 0', pubGrant(0, 0), null],
  ['granted burst -1', pubGrant(0, -1), 'MALFORMED'],
  ['channel 255', withKey(DATA, 3, 255), null],
  ['channel 0', withKey(DATA, 3, 0), 'MALFORMED'],
  ['channel 256', withKey(DATA, 3, 256), 'MALFORMED'],
  ['seq 2^32−1', withKey(DATA, 4, 4294967295), null],
  ['seq 2^32', withKey(DATA, 4, 4294967296), 'MALFORMED'],
  ['t 2^53−1', withKey(DATA, 5, Number.MAX_SAFE_INTEGER), null],
  ['t fractional', withKey(DATA, 5, 1.5), 'MALFORMED'],
  ['32 values', withKey(DATA, 6, nums(32)), null],
  ['33 values', withKey(DATA, 6, nums(33)), 'MALFORMED'],
  ['dropped 2^32−1', withKey(DATA, 27, 4294967295), null],
  ['dropped 2^32', withKey(DATA, 27, 4294967296), 'MALFORMED'],
  ['event text of 4096 bytes', withKey(DATA, 37, 'x'.repeat(4096)), null],
  ['bundle of 32 samples', m([0, 8], [3, 1], [6, nums(32).map((i) => [i])]), null],
  ['bundle of 33 samples', m([0, 8], [3, 1], [6, nums(33).map((i) => [i])]), 'TOO_LARGE'],
  ['bundle sample of 33 numbers', m([0, 8], [3, 1], [6, [nums(33)]]), null],
  ['bundle sample of 34 numbers', m([0, 8], [3, 1], [6, [nums(34)]]), 'MALFORMED'],
  ['bundle sample time NaN', m([0, 8], [3, 1], [6, [[NaN, 1]]]), 'MALFORMED'],
  ['bundle sample with NaN value', m([0, 8], [3, 1], [6, [[0, NaN]]]), null],
  ['16 args', m([0, 9], [3, 1], [18, nums(16)], [19, 0]), null],
  ['17 args', m([0, 9], [3, 1], [18, nums(17)], [19, 0]), 'MALFORMED'],
  ['arg text of 64 bytes', m([0, 9], [3, 1], [18, ['a'.repeat(64)]], [19, 0]), null],
  ['arg text of 65 bytes', m([0, 9], [3, 1], [18, ['a'.repeat(65)]], [19, 0]), 'MALFORMED'],
  ['arg null', m([0, 9], [3, 1], [18, [null]], [19, 0]), 'MALFORMED'],
  ['request id 2^32', m([0, 9], [3, 1], [19, 4294967296]), 'MALFORMED'],
  ['ECHO result 255', m([0, 10], [3, 1], [19, 0], [20, 255]), null],
  ['ECHO result 256', m([0, 10], [3, 1], [19, 0], [20, 256]), 'MALFORMED'],
  ['NACK code 255', m([0, 11], [15, 255]), null],
  ['NACK code 256', m([0, 11], [15, 256]), 'MALFORMED'],
  ['NACK frame type 256', m([0, 11], [15, 1], [17, 256]), 'MALFORMED'],
  ['session id 0', withKey(WELCOME, 2, 0), 'MALFORMED'],
  ['session id 2^32', withKey(WELCOME, 2, 4294967296), 'MALFORMED'],
  ['mtu 0', withKey(WELCOME, 22, 0), 'MALFORMED'],
  ['mtu 65535', withKey(WELCOME, 22, 65535), null],
  ['mtu 65536', withKey(WELCOME, 22, 65536), 'MALFORMED'],
  ['slots 0', withKey(WELCOME, 23, 0), 'MALFORMED'],
  ['slots 256', withKey(WELCOME, 23, 256), 'MALFORMED'],
  ['tier 2', withKey(WELCOME, 25, 2), null],
  ['tier 3', withKey(WELCOME, 25, 3), 'MALFORMED'],
  ['owner 2^32', withKey(WELCOME, 33, 4294967296), 'MALFORMED'],
  ['hub id empty', withKey(WELCOME, 21, ''), 'MALFORMED'],
  ['33 subscription grants', withKey(WELCOME, 35, nums(33).map((i) => m([3, i + 1], [13, 0], [14, 1]))), 'MALFORMED'],
  ['32 subscription grants', withKey(WELCOME, 35, nums(32).map((i) => m([3, i + 1], [13, 0], [14, 1]))), null],
  ['same channel granted twice', withKey(WELCOME, 36, [m([3, 1], [14, 1], [42, 1]), m([3, 1], [14, 1], [42, 1])]), 'MALFORMED'],
  ['estop seq 65535', m([0, 16], [39, 65535]), null],
  ['estop seq 65536', m([0, 16], [39, 65536]), 'MALFORMED'],
  ['reason 256', m([0, 15], [40, 256]), 'MALFORMED'],
  ['ack base 65535', m([0, 12], [29, 65535], [30, 0]), null],
  ['acked 2^32', m([0, 12], [28, 4294967296]), 'MALFORMED'],
  ['32 channels to unsubscribe', m([0, 4], [41, nums(32).map((i) => i + 1)]), null],
  ['33 channels to unsubscribe', m([0, 4], [41, nums(33).map((i) => i + 1)]), 'MALFORMED'],
  ['catalog chunk ending at total', m([0, 17], [24, new Uint8Array(8)], [37, 'abc'], [43, 7], [44, 10]), null],
  ['health total without text', m([0, 18], [44, 10]), 'MALFORMED'],
  ['health chunk past total', m([0, 18], [37, 'abc'], [44, 2]), 'MALFORMED'],
];

describe('frames: ranges', () => {
  for (const [name, map, nack] of RANGES) {
    it(`${name}: ${nack ?? 'accepted'}`, () => {
      const b = cbor(map);
      if (nack === null) equal(dec(b, MAX_HUB_FRAME_BYTES).type, map.get(0));
      else equal(nackName(nackOf(b, MAX_HUB_FRAME_BYTES).nack), nack);
    });
  }

  it('keeps the reported values exactly', () => {
    const f = dec(cbor(m([0, 5], [11, [m([3, 7], [12, 0.001], [42, 3999.5])]]))) ;
    deepEqual(f, { type: 5, wishes: [{ channelId: 7, wishedRateHz: 0.001, burst: 3999.5 }] });
  });
});

describe('frames: size, errors and forward compatibility', () => {
  it('MAX_FRAME_BYTES is the largest client frame accepted', () => {
    const pad = (n: number): Uint8Array => cbor(m([0, 13], [31, 1], [60, new Uint8Array(n)]));
    const at = pad(1024 - 11);
    equal(at.length, 1024);
    equal(dec(at).type, FrameType.PING);
    const over = pad(1024 - 10);
    equal(over.length, 1025);
    const e = nackOf(over);
    equal(e.nack, Nack.TOO_LARGE);
    equal(e.frameType, FrameType.PING);
    equal(dec(over, MAX_HUB_FRAME_BYTES).type, FrameType.PING);
  });

  it('a text longer than the CBOR string limit is TOO_LARGE', () => {
    const b = cbor(m([0, 18], [37, 'x'.repeat(4097)]));
    equal(nackOf(b, 8192).nack, Nack.TOO_LARGE);
  });

  it('FrameError carries the frame type once key 0 is read, and the key at fault', () => {
    const e1 = expectNack(cbor(sub(2000)), 'MALFORMED');
    equal(e1.frameType, FrameType.SUBSCRIBE);
    equal(e1.key, Key.SUB_WISHES);
    const e2 = expectNack(cbor(m([0, 13])), 'MALFORMED');
    equal(e2.frameType, FrameType.PING);
    equal(e2.key, Key.T0);
    const e3 = expectNack(hexToBytes('83000d01'), 'MALFORMED');
    equal(e3.frameType, undefined);
    const e4 = expectNack(cbor(m([0, 99])), 'MALFORMED');
    equal(e4.frameType, 99);
    const e5 = expectNack(cbor(m([0, 70000])), 'MALFORMED');
    equal(e5.frameType, undefined);
    const e6 = nackOf(cbor(m([0, 1], [1, 9], [7, 'x'])));
    equal(e6.nack, Nack.VERSION);
    equal(e6.frameType, FrameType.HELLO);
    equal(e6.key, Key.VERSION);
  });

  it('ignores unknown keys anywhere, at any number, with any valid value', () => {
    const f = dec(cbor(m([0, 3], [10, [m([3, 1], [5, 'x'], [12, 5], [99, m([1, [1]])])]], [11, 'not read by SUBSCRIBE'], [255, null], [4294967296, 1])));
    deepEqual(f, { type: 3, wishes: [{ channelId: 1, wishedRateHz: 5 }] });
  });

  it('a negative or text map key is MALFORMED', () => {
    expectNack(hexToBytes('a3000d181f012000'), 'MALFORMED');
    expectNack(hexToBytes('a3000d181f0161780a'), 'MALFORMED');
  });

  it('decoder state does not leak from one frame to the next', () => {
    const bad = cbor(m([0, 7], [3, 1], [4, 0], [5, 0], [6, [1]], [37, 7]));
    expectNack(bad, 'MALFORMED');
    deepEqual(dec(cbor(DATA)), { type: 7, channelId: 1, seq: 0, t: 0, values: [1] });
    // A frame type's optional key from a previous frame never shows up in the next.
    dec(cbor(m([0, 11], [3, 9], [15, 1])));
    deepEqual(dec(cbor(m([0, 11], [15, 1]))), { type: 11, code: 1 });
  });

  it('bytes fields are copies, safe after the input buffer is reused', () => {
    const b = cbor(m([0, 1], [1, 1], [7, 'c'], [8, Uint8Array.from([1, 2, 3])]));
    const f = dec(b) as { credential: Uint8Array };
    b.fill(0);
    deepEqual(f.credential, Uint8Array.from([1, 2, 3]));
  });

  it('respects start and end inside a larger buffer', () => {
    const inner = enc({ type: 13, t0: 7 });
    const buf = new Uint8Array(inner.length + 2);
    buf.set(inner, 1);
    buf[0] = 0xa1;
    buf[inner.length + 1] = 0x00;
    deepEqual(decodeFrame(buf, 1, 1 + inner.length), { type: 13, t0: 7 });
    expectNack(buf.subarray(1), 'MALFORMED');
    equal(nackOf(buf.subarray(0, inner.length)).nack, Nack.MALFORMED);
  });
});

describe('frames: encodeData', () => {
  it('writes exactly what encodeFrame writes for the same DATA frame', () => {
    const values = new Float64Array(32);
    const dw = new CborWriter(new Uint8Array(1024));
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 255 }),
        fc.integer({ min: 0, max: 0xffffffff }),
        fc.maxSafeNat(),
        fc.array(fc.oneof(fc.double(), fc.integer({ min: -100000, max: 100000 }), fc.maxSafeInteger()), { maxLength: 32 }),
        fc.boolean(),
        fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 0xffffffff })),
        (channelId, seq, t, vs, gap, dropped) => {
          values.fill(12345.678);
          values.set(vs);
          dw.reset();
          encodeData(dw, channelId, seq, t, values, vs.length, gap, dropped);
          const f: Frame = { type: 7, channelId, seq, t, values: vs };
          if (gap) f.gap = true;
          if (dropped > 0) f.dropped = dropped;
          equal(bytesToHex(dw.subarray()), bytesToHex(enc(f)));
          deepEqual(dec(dw.subarray()), f);
        },
      ),
      { numRuns: runs(10000, 200) },
    );
  });

  it('appends at the writer position', () => {
    const dw = new CborWriter(new Uint8Array(64));
    dw.uint(5);
    encodeData(dw, 1, 2, 3, Float64Array.of(4), 1, false, 0);
    equal(bytesToHex(dw.subarray()), '05' + bytesToHex(enc({ type: 7, channelId: 1, seq: 2, t: 3, values: [4] })));
  });
});

describe('frames: peekFrameType', () => {
  it('reads key 0 of every vector', () => {
    for (const v of valid) {
      const b = hexToBytes(v.hex);
      equal(peekFrameType(b, 0, b.length), (fromJson(v.frame) as Frame).type, v.name);
      // Three bytes of a small map are enough.
      equal(peekFrameType(b, 0, 3), (fromJson(v.frame) as Frame).type, v.name);
    }
  });

  it('reads longer map heads and type values without validating the rest', () => {
    equal(peekFrameType(hexToBytes('b818000d'), 0, 4), 13);
    equal(peekFrameType(hexToBytes('b90100000d'), 0, 5), 13);
    equal(peekFrameType(hexToBytes('ba00010000000d'), 0, 7), 13);
    equal(peekFrameType(hexToBytes('a1001863'), 0, 4), 99);
    equal(peekFrameType(hexToBytes('a100190100'), 0, 5), 256);
    equal(peekFrameType(hexToBytes('a1001a00010000'), 0, 7), 65536);
    equal(peekFrameType(hexToBytes('a1001affffffff'), 0, 7), 0xffffffff);
    equal(peekFrameType(hexToBytes('a10007ffffff'), 0, 6), 7);
  });

  it('is −1 for anything that is not a map whose first key is 0', () => {
    const cases = [
      '', 'a0', 'a1', 'a100', 'a10118', 'a10107', '8100', 'e50100010000000700014a99', 'bf000dff', 'a1006174',
      'a10020', 'a1001b0000000000000001', 'a1001c', 'a10018', 'a1001901', 'a1001a000100', 'b8', 'bb000000000000000100', '00',
    ];
    for (const hex of cases) {
      const b = hexToBytes(hex);
      equal(peekFrameType(b, 0, b.length), -1, hex);
    }
  });

  it('honours start and end', () => {
    const b = hexToBytes('ffa1000d');
    equal(peekFrameType(b, 1, 4), 13);
    equal(peekFrameType(b, 0, 4), -1);
    equal(peekFrameType(b, 1, 3), -1);
    equal(peekFrameType(b, 1, 99), 13);
    equal(peekFrameType(b, 4, 4), -1);
  });
});

// ---------------------------------------------------------------------------------------
// Generated frames

const ch = fc.integer({ min: 1, max: 255 });
const u32 = fc.integer({ min: 0, max: 0xffffffff });
const u16 = fc.integer({ min: 0, max: 0xffff });
const u8 = fc.integer({ min: 0, max: 255 });
const uint = fc.maxSafeNat();
const rate = fc.double({ min: Number.MIN_VALUE, max: 1000, noNaN: true });
const rate0 = fc.double({ min: 0, max: 1000, noNaN: true });
const burst = fc.double({ min: Number.MIN_VALUE, max: 4000, noNaN: true });
const burst0 = fc.double({ min: 0, max: 4000, noNaN: true });
const num = fc.oneof(fc.double(), fc.integer({ min: -70000, max: 70000 }), fc.maxSafeInteger());
const text = (maxLength: number): fc.Arbitrary<string> => fc.string({ unit: 'binary', maxLength });
const name = fc.string({ unit: 'binary', minLength: 1, maxLength: 8 });
const bytes = (min: number, max: number): fc.Arbitrary<Uint8Array> => fc.uint8Array({ minLength: min, maxLength: max });
const list = <T extends { channelId: number }>(a: fc.Arbitrary<T>, minLength = 0): fc.Arbitrary<T[]> =>
  fc.uniqueArray(a, { selector: (x) => x.channelId, minLength, maxLength: 32 });
const subWish = fc.record({ channelId: ch, wishedRateHz: rate, priority: fc.integer({ min: 0, max: 3 }) }, { requiredKeys: ['channelId', 'wishedRateHz'] });
const pubWish = fc.record({ channelId: ch, wishedRateHz: rate, burst }, { requiredKeys: ['channelId', 'wishedRateHz'] });
const subGrantA = fc.record({ channelId: ch, grantedRateHz: rate0, priority: fc.integer({ min: 0, max: 3 }) });
const pubGrantA = fc.record({ channelId: ch, grantedRateHz: rate0, burst: burst0 });
const args = fc.array(fc.oneof(num, text(16)), { maxLength: 16 });
const chunk = { offset: fc.integer({ min: 0, max: 0xffffffff - 4096 }), total: fc.constant(0xffffffff) };

const frameArb: fc.Arbitrary<Frame> = fc.oneof(
  fc.record({
    type: fc.constant(1 as const), version: fc.constant(1), name, credential: bytes(0, 64), resumeToken: bytes(16, 16),
    subWishes: list(subWish), pubWishes: list(pubWish),
  }, { requiredKeys: ['type', 'version', 'name'] }),
  fc.record({
    type: fc.constant(2 as const), sessionId: fc.integer({ min: 1, max: 0xffffffff }), resumeToken: bytes(16, 16), hubId: name,
    mtu: fc.integer({ min: 1, max: 0xffff }), slots: fc.integer({ min: 1, max: 255 }), catalogHash: bytes(8, 8),
    tier: fc.integer({ min: 0, max: 2 }), owner: u32, latched: fc.boolean(), subGrants: list(subGrantA), pubGrants: list(pubGrantA),
    staleTtlMs: u32,
  }),
  fc.record({ type: fc.constant(3 as const), wishes: list(subWish, 1) }),
  fc.record({ type: fc.constant(4 as const), channels: fc.uniqueArray(ch, { minLength: 1, maxLength: 32 }) }),
  fc.record({ type: fc.constant(5 as const), wishes: list(pubWish, 1) }),
  fc.oneof(
    fc.record({ type: fc.constant(6 as const), subGrants: list(subGrantA), pubGrants: list(pubGrantA) }, { requiredKeys: ['type', 'subGrants'] }),
    fc.record({ type: fc.constant(6 as const), pubGrants: list(pubGrantA) }),
  ),
  fc.record({
    type: fc.constant(7 as const), channelId: ch, seq: u32, t: uint, values: fc.array(num, { maxLength: 32 }),
    gap: fc.constant(true as const), dropped: fc.integer({ min: 1, max: 0xffffffff }), text: text(64),
  }, { requiredKeys: ['type', 'channelId', 'seq', 't', 'values'] }),
  fc.record({
    type: fc.constant(8 as const), channelId: ch,
    samples: fc.array(fc.tuple(uint, fc.array(num, { maxLength: 32 })).map(([t, vs]) => [t, ...vs]), { minLength: 1, maxLength: 32 }),
  }),
  fc.record({ type: fc.constant(9 as const), channelId: ch, requestId: u32, args }, { requiredKeys: ['type', 'channelId', 'requestId'] }),
  fc.record({ type: fc.constant(10 as const), channelId: ch, requestId: u32, result: u8, args }, { requiredKeys: ['type', 'channelId', 'requestId', 'result'] }),
  fc.record({
    type: fc.constant(11 as const), code: fc.integer({ min: 1, max: 255 }), channelId: ch, frameType: u8, requestId: u32, retryAfterMs: u32,
  }, { requiredKeys: ['type', 'code'] }),
  fc.oneof(
    fc.record({ type: fc.constant(12 as const), acked: u32 }),
    fc.record({ type: fc.constant(12 as const), ackBase: u16, ackBitmap: u32 }),
  ),
  fc.record({ type: fc.constant(13 as const), t0: uint }),
  fc.record({ type: fc.constant(14 as const), t0: uint, t1: uint }),
  fc.record({ type: fc.constant(15 as const), reason: u8 }, { requiredKeys: ['type'] }),
  fc.record({ type: fc.constant(16 as const), estopSeq: u16 }, { requiredKeys: ['type'] }),
  fc.oneof(
    fc.record({ type: fc.constant(17 as const), offset: u32 }, { requiredKeys: ['type'] }),
    fc.record({ type: fc.constant(17 as const), catalogHash: bytes(8, 8), text: text(64), ...chunk }, { requiredKeys: ['type', 'catalogHash', 'text'] }),
  ),
  fc.oneof(
    fc.record({ type: fc.constant(18 as const), offset: u32 }, { requiredKeys: ['type'] }),
    fc.record({ type: fc.constant(18 as const), text: text(64), ...chunk }, { requiredKeys: ['type', 'text'] }),
  ),
) as fc.Arbitrary<Frame>;

// fc.record builds null-prototype objects; decoded frames are plain ones.
function plain(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(plain);
  if (v instanceof Uint8Array || v === null || typeof v !== 'object') return v;
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v)) out[k] = plain((v as Record<string, unknown>)[k]);
  return out;
}

describe('frames: generated round trips', () => {
  it('decode(encode(f)) deep-equals f, and re-encoding gives the same bytes', () => {
    fc.assert(
      fc.property(frameArb, (f) => {
        const b = enc(f);
        equal(peekFrameType(b, 0, b.length), f.type);
        const back = dec(b, ANY_SIZE);
        deepEqual(back, plain(f));
        equal(bytesToHex(enc(back)), bytesToHex(b));
      }),
      { numRuns: runs(10000, 200) },
    );
  });

  it('every frame type is generated', () => {
    const seen = new Set<number>();
    for (const f of fc.sample(frameArb, runs(2000, 400))) seen.add(f.type);
    equal(seen.size, 18);
  });

  it('every strict prefix of an encoded frame is MALFORMED', () => {
    fc.assert(
      fc.property(frameArb, fc.nat(), (f, cut) => {
        const b = enc(f);
        const n = cut % b.length;
        const e = nackOf(b.subarray(0, n), ANY_SIZE);
        equal(e.nack, Nack.MALFORMED);
      }),
      { numRuns: runs(3000, 100) },
    );
  });
});
