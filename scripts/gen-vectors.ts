// Writes the conformance vectors test/vectors/{frames,lenient,invalid,estop}.json.
// Run once after a deliberate wire change: `npx tsc -p tsconfig.json && node build/scripts/gen-vectors.js`.
// The stored vectors are the contract: review every changed hex by hand (docs/protocol.md)
// before committing; the tests compare against the stored bytes, not a fresh encode.

import { writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CborWriter, encodeValue, type CborValue } from '../hub/cbor.js';
import { decodeFrame, encodeFrame, FrameError, type Frame } from '../hub/frames.js';
import { nackName } from '../hub/nack.js';
import { decodeEstop, encodeEstop, EstopKind, EstopSource, EstopFrameError, ESTOP_FLAG_LATCHED } from '../hub/estop-frame.js';
import { crc16 } from '../hub/crc16.js';
import { bytesToHex, hexToBytes, toJson } from '../test/lib/vector-json.js';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const out = join(repo, 'test/vectors');

const b = hexToBytes;
const TOKEN = b('00112233445566778899aabbccddeeff');
const HASH = b('0123456789abcdef');
const CATALOG_TEXT = '{"version":1,"channels":[{"id":1,"name":"safety"}]}';
const HEALTH_TEXT = '{"metrics":{"version":1},"sessions":2}';

const valid: [string, Frame][] = [
  ['HELLO minimal', { type: 1, version: 1, name: 'console' }],
  ['HELLO with credential and wishes', {
    type: 1, version: 1, name: 'scope', credential: b('c0ffee'),
    subWishes: [{ channelId: 10, wishedRateHz: 50 }, { channelId: 11, wishedRateHz: 12.5, priority: 2 }],
    pubWishes: [{ channelId: 40, wishedRateHz: 10, burst: 25 }],
  }],
  ['HELLO resume', { type: 1, version: 1, name: 'teleop', resumeToken: TOKEN }],
  ['HELLO empty wish lists', { type: 1, version: 1, name: 'logger', subWishes: [], pubWishes: [] }],
  ['WELCOME with grants', {
    type: 2, sessionId: 7, resumeToken: TOKEN, hubId: 'hub-a1', mtu: 244, slots: 8, catalogHash: HASH,
    tier: 1, owner: 7, latched: false,
    subGrants: [{ channelId: 10, grantedRateHz: 20, priority: 1 }, { channelId: 1, grantedRateHz: 10, priority: 3 }],
    pubGrants: [{ channelId: 40, grantedRateHz: 10, burst: 25 }],
    staleTtlMs: 30000,
  }],
  ['WELCOME observer while latched', {
    type: 2, sessionId: 4294967295, resumeToken: TOKEN, hubId: 'h', mtu: 1436, slots: 8, catalogHash: HASH,
    tier: 0, owner: 0, latched: true, subGrants: [], pubGrants: [], staleTtlMs: 30000,
  }],
  ['SUBSCRIBE', { type: 3, wishes: [{ channelId: 12, wishedRateHz: 100, priority: 0 }, { channelId: 13, wishedRateHz: 0.5 }] }],
  ['UNSUBSCRIBE', { type: 4, channels: [12, 13, 255] }],
  ['PUBLISH', { type: 5, wishes: [{ channelId: 40, wishedRateHz: 5, burst: 20 }, { channelId: 41, wishedRateHz: 1 }] }],
  ['GRANT subscriptions (unsolicited re-grant)', { type: 6, subGrants: [{ channelId: 10, grantedRateHz: 12.5, priority: 1 }] }],
  ['GRANT answering PUBLISH, nothing granted', { type: 6, pubGrants: [] }],
  ['GRANT both', {
    type: 6,
    subGrants: [{ channelId: 10, grantedRateHz: 0, priority: 0 }],
    pubGrants: [{ channelId: 40, grantedRateHz: 2.5, burst: 10 }],
  }],
  ['DATA sample', { type: 7, channelId: 10, seq: 42, t: 123456, values: [1.5, -2, 0.1] }],
  ['DATA first push after a gap', { type: 7, channelId: 10, seq: 0, t: 0, values: [0], gap: true }],
  ['DATA event with message and drops', { type: 7, channelId: 3, seq: 9, t: 60000, values: [2], dropped: 4, text: 'motor 2 over temperature' }],
  ['DATA gap and drops', { type: 7, channelId: 3, seq: 10, t: 61000, values: [], gap: true, dropped: 1 }],
  ['DATA float widths', { type: 7, channelId: 20, seq: 1, t: 1, values: [0.5, 1.100000023841858, 0.1, 65504, 100000, -1e300] }],
  ['DATA special numbers', { type: 7, channelId: 20, seq: 2, t: 2, values: [NaN, Infinity, -Infinity, -0] }],
  ['DATA large counters', { type: 7, channelId: 255, seq: 4294967295, t: 1099511627776, values: [-9007199254740991, 9007199254740991] }],
  ['BUNDLE one sample', { type: 8, channelId: 40, samples: [[1000, 0.25, -0.25]] }],
  ['BUNDLE three samples', { type: 8, channelId: 40, samples: [[1000, 1], [1010, 2], [1020, 3.5]] }],
  ['BUNDLE 32 samples', { type: 8, channelId: 41, samples: Array.from({ length: 32 }, (_, i) => [i * 10, i]) }],
  ['INTENT without args', { type: 9, channelId: 50, requestId: 1 }],
  ['INTENT with args', { type: 9, channelId: 51, requestId: 4294967295, args: ['auto', 2.5, -1] }],
  ['ECHO ok', { type: 10, channelId: 50, requestId: 1, result: 0 }],
  ['ECHO refused NOT_OWNER with args', { type: 10, channelId: 51, requestId: 2, result: 7, args: ['auto'] }],
  ['NACK code only', { type: 11, code: 1 }],
  ['NACK MALFORMED about a frame type', { type: 11, code: 1, frameType: 3 }],
  ['NACK RATE_LIMITED with channel and retry', { type: 11, code: 8, channelId: 40, retryAfterMs: 200 }],
  ['NACK NOT_OWNER for an intent', { type: 11, code: 7, channelId: 51, frameType: 9, requestId: 77 }],
  ['NACK about an ESTOP frame', { type: 11, code: 1, frameType: 229 }],
  ['NACK NO_SLOTS', { type: 11, code: 9, frameType: 1, retryAfterMs: 1000 }],
  ['ACK stream', { type: 12, acked: 1234 }],
  ['ACK bitmap', { type: 12, ackBase: 300, ackBitmap: 0xfffffffb }],
  ['ACK bitmap at wrap', { type: 12, ackBase: 1, ackBitmap: 0x00000007 }],
  ['PING', { type: 13, t0: 5000 }],
  ['PONG', { type: 14, t0: 5000, t1: 5012 }],
  ['PONG with level', { type: 14, t0: 5000, t1: 5012, level: 1 }],
  ['GOODBYE', { type: 15 }],
  ['GOODBYE with reason', { type: 15, reason: 1 }],
  ['ESTOP_CLEAR', { type: 16 }],
  ['ESTOP_CLEAR with seq', { type: 16, estopSeq: 513 }],
  ['CATALOG request', { type: 17 }],
  ['CATALOG response', { type: 17, catalogHash: HASH, text: CATALOG_TEXT }],
  ['CATALOG request for a later chunk', { type: 17, offset: 200 }],
  ['CATALOG response chunk', { type: 17, catalogHash: HASH, text: CATALOG_TEXT, offset: 200, total: 2000 }],
  ['HEALTH request', { type: 18 }],
  ['HEALTH response', { type: 18, text: HEALTH_TEXT }],
];

function cbor(v: CborValue): string {
  const buf = new Uint8Array(4096);
  return bytesToHex(buf.subarray(0, encodeValue(v, buf)));
}
function m(...entries: [number, CborValue][]): Map<number, CborValue> {
  return new Map(entries);
}

// Decodes to `frame`, but is not what the encoder writes: unknown keys, non-shortest floats,
// explicit defaults. Re-encoding gives the canonical bytes in `canonical`.
const lenient: [string, string, Frame][] = [
  ['unknown key skipped', cbor(m([0, 13], [31, 5000], [99, 'future field'])), { type: 13, t0: 5000 }],
  ['unknown key holding a nested map', cbor(m([0, 15], [50, m([1, [1, 2, 3]], [2, b('00')])])), { type: 15 }],
  ['known key not used by this frame type', cbor(m([0, 13], [7, 'name'], [31, 1])), { type: 13, t0: 1 }],
  ['gap false and dropped 0 read as absent', cbor(m([0, 7], [3, 1], [4, 2], [5, 3], [6, [4]], [26, false], [27, 0])),
    { type: 7, channelId: 1, seq: 2, t: 3, values: [4] }],
  ['value as float64 where float16 would do', 'a500070301040205030681fb3fe0000000000000', { type: 7, channelId: 1, seq: 2, t: 3, values: [0.5] }],
  ['integral rate written as float16', 'a200030a81a203010cf94000', { type: 3, wishes: [{ channelId: 1, wishedRateHz: 2 }] }],
];

// Each must be refused with the NACK code named.
const invalid: [string, string, string][] = [
  ['empty input', '', 'MALFORMED'],
  ['not a map', cbor([0, 13]), 'MALFORMED'],
  ['empty map', 'a0', 'MALFORMED'],
  ['first key not 0', cbor(m([1, 1], [7, 'x'])), 'MALFORMED'],
  ['type 0', cbor(m([0, 0])), 'MALFORMED'],
  ['unknown type 19', cbor(m([0, 19])), 'MALFORMED'],
  ['type as text', cbor(m([0, 'HELLO'])), 'MALFORMED'],
  ['text map key', 'a2000d6174181f', 'MALFORMED'],
  ['keys not ascending', 'a3000d182001181f01', 'MALFORMED'],
  ['duplicate key', 'a3000d181f01181f02', 'MALFORMED'],
  ['integer not in shortest form', 'a200180d181f01', 'MALFORMED'],
  ['indefinite-length map', 'bf000d181f01ff', 'MALFORMED'],
  ['tag inside an unknown key', cbor(m([0, 13], [31, 1])).replace(/^a2/, 'a3') + '1863c101', 'MALFORMED'],
  ['truncated HELLO', cbor(m([0, 1], [1, 1], [7, 'console'])).slice(0, 16), 'MALFORMED'],
  ['truncated inside a float', 'a500070301040205030681f93e', 'MALFORMED'],
  ['bytes after the frame', cbor(m([0, 13], [31, 1])) + '00', 'MALFORMED'],
  ['invalid UTF-8 in name', 'a3000101010762c328', 'MALFORMED'],
  ['HELLO version 2', cbor(m([0, 1], [1, 2], [7, 'console'])), 'VERSION'],
  ['HELLO version 2 without a name', cbor(m([0, 1], [1, 2])), 'VERSION'],
  ['HELLO missing version', cbor(m([0, 1], [7, 'console'])), 'MALFORMED'],
  ['HELLO missing name', cbor(m([0, 1], [1, 1])), 'MALFORMED'],
  ['HELLO empty name', cbor(m([0, 1], [1, 1], [7, ''])), 'MALFORMED'],
  ['HELLO name of 33 bytes', cbor(m([0, 1], [1, 1], [7, 'x'.repeat(33)])), 'MALFORMED'],
  ['HELLO name as bytes', cbor(m([0, 1], [1, 1], [7, b('41')])), 'MALFORMED'],
  ['HELLO credential of 65 bytes', cbor(m([0, 1], [1, 1], [7, 'c'], [8, new Uint8Array(65)])), 'MALFORMED'],
  ['HELLO resume token of 15 bytes', cbor(m([0, 1], [1, 1], [7, 'c'], [9, new Uint8Array(15)])), 'MALFORMED'],
  ['SUBSCRIBE missing wishes', cbor(m([0, 3])), 'MALFORMED'],
  ['SUBSCRIBE empty wish list', cbor(m([0, 3], [10, []])), 'MALFORMED'],
  ['SUBSCRIBE rate 0', cbor(m([0, 3], [10, [m([3, 1], [12, 0])]])), 'MALFORMED'],
  ['SUBSCRIBE rate 1001', cbor(m([0, 3], [10, [m([3, 1], [12, 1001])]])), 'MALFORMED'],
  ['SUBSCRIBE negative rate', cbor(m([0, 3], [10, [m([3, 1], [12, -5])]])), 'MALFORMED'],
  ['SUBSCRIBE rate NaN', cbor(m([0, 3], [10, [m([3, 1], [12, NaN])]])), 'MALFORMED'],
  ['SUBSCRIBE rate Infinity', cbor(m([0, 3], [10, [m([3, 1], [12, Infinity])]])), 'MALFORMED'],
  ['SUBSCRIBE priority 4', cbor(m([0, 3], [10, [m([3, 1], [12, 5], [13, 4])]])), 'MALFORMED'],
  ['SUBSCRIBE channel 0', cbor(m([0, 3], [10, [m([3, 0], [12, 5])]])), 'MALFORMED'],
  ['SUBSCRIBE channel 256', cbor(m([0, 3], [10, [m([3, 256], [12, 5])]])), 'MALFORMED'],
  ['SUBSCRIBE wish without rate', cbor(m([0, 3], [10, [m([3, 1])]])), 'MALFORMED'],
  ['SUBSCRIBE same channel twice', cbor(m([0, 3], [10, [m([3, 1], [12, 5]), m([3, 1], [12, 6])]])), 'MALFORMED'],
  ['SUBSCRIBE wish not a map', cbor(m([0, 3], [10, [[1, 5]]])), 'MALFORMED'],
  ['SUBSCRIBE 33 wishes', cbor(m([0, 3], [10, Array.from({ length: 33 }, (_, i) => m([3, i + 1], [12, 1]))])), 'MALFORMED'],
  ['UNSUBSCRIBE empty channel list', cbor(m([0, 4], [41, []])), 'MALFORMED'],
  ['UNSUBSCRIBE same channel twice', cbor(m([0, 4], [41, [5, 5]])), 'MALFORMED'],
  ['PUBLISH burst 0', cbor(m([0, 5], [11, [m([3, 40], [12, 5], [42, 0])]])), 'MALFORMED'],
  ['PUBLISH burst 4001', cbor(m([0, 5], [11, [m([3, 40], [12, 5], [42, 4001])]])), 'MALFORMED'],
  ['GRANT with neither list', cbor(m([0, 6])), 'MALFORMED'],
  ['GRANT subscription without priority', cbor(m([0, 6], [35, [m([3, 1], [14, 5])]])), 'MALFORMED'],
  ['GRANT publication without burst', cbor(m([0, 6], [36, [m([3, 1], [14, 5])]])), 'MALFORMED'],
  ['GRANT negative granted rate', cbor(m([0, 6], [35, [m([3, 1], [13, 1], [14, -1])]])), 'MALFORMED'],
  ['DATA missing seq', cbor(m([0, 7], [3, 1], [5, 3], [6, [4]])), 'MALFORMED'],
  ['DATA value as text', cbor(m([0, 7], [3, 1], [4, 2], [5, 3], [6, ['4']])), 'MALFORMED'],
  ['DATA 33 values', cbor(m([0, 7], [3, 1], [4, 2], [5, 3], [6, Array.from({ length: 33 }, (_, i) => i)])), 'MALFORMED'],
  ['DATA seq above uint32', cbor(m([0, 7], [3, 1], [4, 4294967296], [5, 3], [6, [4]])), 'MALFORMED'],
  ['DATA negative t', cbor(m([0, 7], [3, 1], [4, 2], [5, -3], [6, [4]])), 'MALFORMED'],
  ['DATA gap as integer', cbor(m([0, 7], [3, 1], [4, 2], [5, 3], [6, [4]], [26, 1])), 'MALFORMED'],
  ['BUNDLE 33 samples', cbor(m([0, 8], [3, 40], [6, Array.from({ length: 33 }, (_, i) => [i])])), 'TOO_LARGE'],
  ['BUNDLE no samples', cbor(m([0, 8], [3, 40], [6, []])), 'MALFORMED'],
  ['BUNDLE empty sample', cbor(m([0, 8], [3, 40], [6, [[]]])), 'MALFORMED'],
  ['BUNDLE sample of 34 numbers', cbor(m([0, 8], [3, 40], [6, [Array.from({ length: 34 }, (_, i) => i)]])), 'MALFORMED'],
  ['BUNDLE sample time negative', cbor(m([0, 8], [3, 40], [6, [[-1, 2]]])), 'MALFORMED'],
  ['BUNDLE sample time fractional', cbor(m([0, 8], [3, 40], [6, [[1.5, 2]]])), 'MALFORMED'],
  ['BUNDLE missing channel', cbor(m([0, 8], [6, [[1, 2]]])), 'MALFORMED'],
  ['INTENT missing request_id', cbor(m([0, 9], [3, 50])), 'MALFORMED'],
  ['INTENT 17 args', cbor(m([0, 9], [3, 50], [18, Array.from({ length: 17 }, (_, i) => i)], [19, 1])), 'MALFORMED'],
  ['INTENT arg of 65 bytes', cbor(m([0, 9], [3, 50], [18, ['a'.repeat(65)]], [19, 1])), 'MALFORMED'],
  ['INTENT boolean arg', cbor(m([0, 9], [3, 50], [18, [true]], [19, 1])), 'MALFORMED'],
  ['ECHO missing result', cbor(m([0, 10], [3, 50], [19, 1])), 'MALFORMED'],
  ['NACK code 0', cbor(m([0, 11], [15, 0])), 'MALFORMED'],
  ['ACK mixing both forms', cbor(m([0, 12], [28, 1], [29, 1], [30, 1])), 'MALFORMED'],
  ['ACK base without bitmap', cbor(m([0, 12], [29, 1])), 'MALFORMED'],
  ['ACK base 65536', cbor(m([0, 12], [29, 65536], [30, 1])), 'MALFORMED'],
  ['ACK bitmap above uint32', cbor(m([0, 12], [29, 1], [30, 4294967296])), 'MALFORMED'],
  ['PING missing t0', cbor(m([0, 13])), 'MALFORMED'],
  ['PONG missing t1', cbor(m([0, 14], [31, 1])), 'MALFORMED'],
  ['PONG level above 3', cbor(m([0, 14], [31, 1], [32, 2], [45, 4])), 'MALFORMED'],
  ['CATALOG hash without text', cbor(m([0, 17], [24, HASH])), 'MALFORMED'],
  ['CATALOG hash of 7 bytes', cbor(m([0, 17], [24, new Uint8Array(7)], [37, '{}'])), 'MALFORMED'],
  ['CATALOG chunk past total', cbor(m([0, 17], [24, HASH], [37, '{}'], [43, 10], [44, 11])), 'MALFORMED'],
  ['unknown key holding 300 items', cbor(m([0, 13], [31, 1], [60, Array.from({ length: 300 }, () => 0)])), 'TOO_LARGE'],
  ['unknown key nested 9 deep', cbor(m([0, 13], [31, 1], [60, [[[[[[[[[0]]]]]]]]]])), 'MALFORMED'],
  ['frame of 1025 bytes', cbor(m([0, 13], [31, 1], [60, new Uint8Array(1014)])), 'TOO_LARGE'],
];

const estopValid: [string, [number, number, number, number, number]][] = [
  ['ASSERT from a client session', [EstopKind.ASSERT, EstopSource.CLIENT, ESTOP_FLAG_LATCHED, 7, 1]],
  ['ASSERT from the hub button', [EstopKind.ASSERT, EstopSource.HUB_BUTTON, ESTOP_FLAG_LATCHED, 0, 65535]],
  ['ASSERT by the deadman', [EstopKind.ASSERT, EstopSource.DEADMAN, ESTOP_FLAG_LATCHED, 0, 2]],
  ['ASSERT by the watchdog', [EstopKind.ASSERT, EstopSource.WATCHDOG, ESTOP_FLAG_LATCHED, 0, 3]],
  ['ASSERT from the robot', [EstopKind.ASSERT, EstopSource.ROBOT, ESTOP_FLAG_LATCHED, 0, 4]],
  ['CLEARED announcement', [EstopKind.CLEARED, EstopSource.HUB_BUTTON, 0, 0, 5]],
  ['ASSERT with the largest origin', [EstopKind.ASSERT, EstopSource.CLIENT, ESTOP_FLAG_LATCHED, 0xfffffffe, 0x1234]],
  ['ASSERT by a signed fleet stop', [EstopKind.ASSERT, EstopSource.FLEET, ESTOP_FLAG_LATCHED, 0, 6]],
];

function encodeHex(f: Frame): string {
  const w = new CborWriter(new Uint8Array(4096));
  encodeFrame(f, w);
  return bytesToHex(w.subarray());
}

function check(name: string, cond: boolean, what: string): void {
  if (!cond) throw new Error(`${name}: ${what}`);
}

const framesJson = valid.map(([name, frame]) => {
  const hex = encodeHex(frame);
  const bytes = b(hex);
  check(name, JSON.stringify(toJson(decodeFrame(bytes, 0, bytes.length))) === JSON.stringify(toJson(frame)), 'does not round-trip');
  return { name, frame: toJson(frame), hex };
});

const lenientJson = lenient.map(([name, hex, frame]) => {
  const bytes = b(hex);
  check(name, JSON.stringify(toJson(decodeFrame(bytes, 0, bytes.length))) === JSON.stringify(toJson(frame)), 'does not decode to its frame');
  const canonical = encodeHex(frame);
  check(name, canonical !== hex, 'is canonical: belongs in frames.json');
  return { name, hex, frame: toJson(frame), canonical };
});

const invalidJson = invalid.map(([name, hex, nack]) => {
  const bytes = b(hex);
  let got = 'none';
  try {
    decodeFrame(bytes, 0, bytes.length);
  } catch (e) {
    if (!(e instanceof FrameError)) throw e;
    got = nackName(e.nack) ?? String(e.nack);
  }
  check(name, got === nack, `expected ${nack}, got ${got}`);
  return { name, hex, nack };
});

const estopJson = {
  valid: estopValid.map(([name, [kind, source, flags, origin, seq]]) => {
    const buf = new Uint8Array(12);
    encodeEstop(buf, 0, kind, source, flags, origin, seq);
    return { name, frame: { kind, source, flags, origin, seq }, hex: bytesToHex(buf) };
  }),
  invalid: [] as { name: string; hex: string; error: string }[],
};
{
  const base = b(estopJson.valid[0]!.hex);
  // Re-seals bytes 0..9 with a correct CRC so that only the field under test is wrong.
  const withCrc = (bytes: Uint8Array): string => {
    const buf = bytes.slice(0, 12);
    const crc = crc16(buf, 0, 10);
    buf[10] = crc >> 8;
    buf[11] = crc & 0xff;
    return bytesToHex(buf);
  };
  const flip = (i: number, mask: number): Uint8Array => {
    const c = base.slice();
    c[i] = c[i]! ^ mask;
    return c;
  };
  const kind3 = base.slice();
  kind3[1] = 3;
  const kind0 = base.slice();
  kind0[1] = 0;
  const source6 = base.slice();
  source6[2] = 6;
  const magic = base.slice();
  magic[0] = 0xa5;
  estopJson.invalid.push(
    { name: '11 bytes', hex: bytesToHex(base.subarray(0, 11)), error: 'BAD_LENGTH' },
    { name: '13 bytes', hex: bytesToHex(base) + '00', error: 'BAD_LENGTH' },
    { name: 'magic 0xa5', hex: withCrc(magic), error: 'BAD_MAGIC' },
    { name: 'CRC low byte flipped', hex: bytesToHex(flip(11, 0x01)), error: 'BAD_CRC' },
    { name: 'seq bit flipped', hex: bytesToHex(flip(9, 0x80)), error: 'BAD_CRC' },
    { name: 'kind 3 with a valid CRC', hex: withCrc(kind3), error: 'BAD_KIND' },
    { name: 'kind 0 with a valid CRC', hex: withCrc(kind0), error: 'BAD_KIND' },
    { name: 'source 6 with a valid CRC', hex: withCrc(source6), error: 'BAD_SOURCE' },
  );
  for (const v of estopJson.invalid) {
    const bytes = b(v.hex);
    let got = 'none';
    try {
      decodeEstop(bytes, 0, bytes.length);
    } catch (e) {
      if (!(e instanceof EstopFrameError)) throw e;
      got = e.codeName;
    }
    check(v.name, got === v.error, `expected ${v.error}, got ${got}`);
  }
}

const write = (file: string, data: unknown): void => writeFileSync(join(out, file), JSON.stringify(data, null, 2) + '\n');
write('frames.json', framesJson);
write('lenient.json', lenientJson);
write('invalid.json', invalidJson);
write('estop.json', estopJson);
process.stdout.write(`wrote ${framesJson.length} frames, ${lenientJson.length} lenient, ${invalidJson.length} invalid, ${estopJson.valid.length}+${estopJson.invalid.length} estop vectors\n`);
