// hub/sha256.ts against Node's crypto, over random keys and messages (the portable vectors are
// test/core/sha256.test.ts).
import { createHash, createHmac } from 'node:crypto';
import fc from 'fast-check';
import { hmacSha256, sha256 } from '../../hub/sha256.js';
import { toHex } from '../../hub/fleet-stop.js';
import { equal } from '../lib/assert.js';

describe('SHA-256 and HMAC-SHA256 against node:crypto', () => {
  it('SHA-256 of any message up to 1000 bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 1000 }), (msg) => {
        equal(toHex(sha256(msg)), createHash('sha256').update(msg).digest('hex'));
      }),
      { numRuns: 2000 },
    );
  });

  it('HMAC-SHA256 under any key up to 200 bytes, of any message up to 600 bytes', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), fc.uint8Array({ maxLength: 600 }), (key, msg) => {
        equal(toHex(hmacSha256(key, msg)), createHmac('sha256', key).update(msg).digest('hex'));
      }),
      { numRuns: 2000 },
    );
  });
});
