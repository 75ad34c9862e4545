// hub/sha256.ts: SHA-256 against FIPS 180-4's examples and HMAC-SHA256 against RFC 4231's test
// cases (the property test against Node's crypto is test/host/sha256-node.test.ts).
import { equalBytes, HmacSha256, hmacSha256, sha256, Sha256, SHA256_BYTES } from '../../hub/sha256.js';
import { toHex } from '../../hub/fleet-stop.js';
import { equal, ok } from '../lib/assert.js';

const ascii = (s: string): Uint8Array => Uint8Array.from(s, (c) => c.charCodeAt(0));
const hex = (s: string): Uint8Array => Uint8Array.from(s.match(/../g) ?? [], (h) => parseInt(h, 16));
const repeat = (byte: number, n: number): Uint8Array => new Uint8Array(n).fill(byte);

describe('SHA-256 (hub/sha256.ts)', () => {
  it('hashes the FIPS 180-4 examples', () => {
    equal(toHex(sha256(new Uint8Array(0))), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    equal(toHex(sha256(ascii('abc'))), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
    equal(toHex(sha256(ascii('abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq'))), '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1');
    equal(
      toHex(sha256(ascii('abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu'))),
      'cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1',
    );
  });

  it('gives the same digest whatever the pieces it is fed in', () => {
    const msg = new Uint8Array(300);
    for (let i = 0; i < msg.length; i++) msg[i] = (i * 7 + 3) & 0xff;
    const whole = toHex(sha256(msg));
    const h = new Sha256();
    for (const cut of [1, 55, 56, 63, 64, 65, 119, 128]) {
      let at = 0;
      while (at < msg.length) {
        const end = Math.min(msg.length, at + cut);
        h.update(msg, at, end);
        at = end;
      }
      equal(toHex(h.digest(new Uint8Array(SHA256_BYTES))), whole, `pieces of ${cut}`);
    }
  });
});

describe('HMAC-SHA256 (RFC 4231)', () => {
  const cases: [string, Uint8Array, Uint8Array, string][] = [
    ['1', repeat(0x0b, 20), ascii('Hi There'), 'b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7'],
    ['2', ascii('Jefe'), ascii('what do ya want for nothing?'), '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843'],
    ['3', repeat(0xaa, 20), repeat(0xdd, 50), '773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe'],
    [
      '4',
      hex('0102030405060708090a0b0c0d0e0f10111213141516171819'),
      repeat(0xcd, 50),
      '82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b',
    ],
    ['6', repeat(0xaa, 131), ascii('Test Using Larger Than Block-Size Key - Hash Key First'), '60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54'],
    [
      '7',
      repeat(0xaa, 131),
      ascii('This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.'),
      '9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2',
    ],
  ];
  for (const [name, key, data, mac] of cases) {
    it(`test case ${name}`, () => equal(toHex(hmacSha256(key, data)), mac));
  }

  it('test case 5: the first 128 bits', () => {
    equal(toHex(hmacSha256(repeat(0x0c, 20), ascii('Test With Truncation'))).slice(0, 32), 'a3b6167473100ee06e0c796c2955552b');
  });

  it('reuses one keyed MAC for many messages, each over its given length only', () => {
    const mac = new HmacSha256(ascii('Jefe'));
    const out = new Uint8Array(SHA256_BYTES);
    const msg = ascii('what do ya want for nothing?XXXX');
    for (let i = 0; i < 3; i++) {
      mac.mac(msg, msg.length - 4, out);
      equal(toHex(out), '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843');
    }
  });

  it('compares MACs over all their bytes', () => {
    const a = hmacSha256(ascii('k'), ascii('m'));
    const b = a.slice();
    ok(equalBytes(a, b, SHA256_BYTES));
    for (const i of [0, 15, 31]) {
      const c = a.slice();
      c[i] = (c[i] as number) ^ 1;
      ok(!equalBytes(a, c, SHA256_BYTES), `byte ${i}`);
    }
    ok(!equalBytes(a, a.subarray(0, 16), SHA256_BYTES));
  });
});
