import { deepEqual, equal, throws, ok } from '../lib/assert.js';
import { ON_XS } from '../lib/env.js';

// The assertions and the harness are themselves checked: a broken deepEqual would
// make every other portable suite pass vacuously.
describe('portable assertions', () => {
  it('deepEqual tells Maps, typed arrays, NaN and -0 apart', () => {
    deepEqual(new Map([[1, [1, 2]]]), new Map([[1, [1, 2]]]));
    throws(() => deepEqual(new Map([[1, 1]]), new Map([[2, 1]])));
    deepEqual(new Uint8Array([1, 2]), new Uint8Array([1, 2]));
    throws(() => deepEqual(new Uint8Array([1, 2]), new Uint8Array([1, 3])));
    throws(() => deepEqual(new Uint8Array([1]), [1]));
    deepEqual([NaN], [NaN]);
    throws(() => equal(0, -0));
    throws(() => deepEqual({ a: 1 }, { a: 1, b: undefined }));
  });
  it('throws returns the error and fails when nothing is thrown', () => {
    const e = throws(() => { throw new RangeError('x'); }, (x) => x instanceof RangeError);
    ok(e instanceof RangeError);
    throws(() => throws(() => 1));
  });
  it('async cases are awaited', async () => {
    const v = await Promise.resolve(41).then((x) => x + 1);
    equal(v, 42);
  });
  it('knows which engine it runs on', () => {
    equal(ON_XS, typeof (globalThis as { process?: unknown }).process === 'undefined');
  });
});
