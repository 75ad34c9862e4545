// CATALOG (§9.2): clients fetch the catalog in chunks that fit their link; the hash checks it.
import { fnv1a64Utf8, hashHex } from '../../catalog/hash.js';
import { FrameType, type CatalogFrame, type NackFrame } from '../../hub/frames.js';
import { Nack } from '../../hub/nack.js';
import { deepEqual, equal, ok } from '../lib/assert.js';
import { makeHub, TestClient } from '../lib/hub-fixture.js';
import { TestLink } from '../lib/test-link.js';

function utf8Bytes(s: string): number {
  let n = 0;
  for (const ch of s) {
    const c = ch.codePointAt(0) as number;
    n += c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
  }
  return n;
}

describe('hub CATALOG frames (§9.2)', () => {
  for (const mtu of [240, 1024, 4096]) {
    it(`serves the whole catalog in chunks that fit a ${mtu}-byte link, and the hash matches`, () => {
      const fx = makeHub();
      const c = new TestClient(fx.hub, new TestLink('test', 1 << 20, mtu));
      c.hello({});
      let text = '';
      let total = -1;
      for (let i = 0; i < 200 && text.length !== total; i++) {
        c.send({ type: FrameType.CATALOG, offset: utf8Bytes(text) });
        const frames = c.take(FrameType.CATALOG) as CatalogFrame[];
        equal(frames.length, 1);
        const f = frames[0] as CatalogFrame;
        equal(f.offset ?? 0, utf8Bytes(text));
        ok(f.text !== undefined && f.text.length > 0);
        total = f.total ?? -1;
        text += f.text;
        const last = c.link.received[c.link.received.length - 1]!;
        ok(last.bytes.length <= mtu, `frame of ${last.bytes.length} bytes on a ${mtu}-byte link`);
        deepEqual(f.catalogHash, fx.catalog.hash);
      }
      equal(utf8Bytes(text), total);
      equal(text, fx.catalog.canonicalJson);
      equal(hashHex(fnv1a64Utf8(text)), fx.catalog.hashHex);
    });
  }

  it('refuses an offset that is not a character boundary or lies past the end', () => {
    const fx = makeHub();
    const c = new TestClient(fx.hub);
    c.hello({});
    c.send({ type: FrameType.CATALOG, offset: 1 << 30 });
    const nacks = c.take(FrameType.NACK) as NackFrame[];
    equal(nacks.length, 1);
    equal(nacks[0]!.code, Nack.MALFORMED);
  });

  it('answers an offset equal to the total with an empty chunk, and one past it MALFORMED (§5.17)', () => {
    const fx = makeHub();
    const c = new TestClient(fx.hub);
    c.hello({});
    const total = utf8Bytes(fx.catalog.canonicalJson);
    c.send({ type: FrameType.CATALOG, offset: total });
    const at = c.take(FrameType.CATALOG) as CatalogFrame[];
    equal(at.length, 1);
    equal(at[0]!.text, '');
    equal(at[0]!.offset, total);
    equal(at[0]!.total, total);
    c.send({ type: FrameType.CATALOG, offset: total + 1 });
    const after = c.take();
    equal(after.length, 1);
    const n = after[0] as NackFrame;
    equal(n.type, FrameType.NACK);
    equal(n.code, Nack.MALFORMED);
    equal(n.frameType, FrameType.CATALOG);
  });

  it('names no frame type in the TOO_LARGE NACK when the oversized bytes do not start with one', () => {
    const fx = makeHub();
    const c = new TestClient(fx.hub);
    c.hello({});
    // A map whose first key is 0 with a 32-bit type value: not a frame type (0–255).
    const big = new Uint8Array(2000);
    big.set([0xa1, 0x00, 0x1a, 0xff, 0xff, 0xff, 0xff]);
    c.sendBytes(big);
    const nacks = c.take(FrameType.NACK) as NackFrame[];
    equal(nacks.length, 1);
    equal(nacks[0]!.code, Nack.TOO_LARGE);
    equal(nacks[0]!.frameType, undefined);
  });
});
