// Nothing a client sends can crash the decoder (§12): mutated and truncated copies of
// the conformance vectors either decode to a frame that re-encodes canonically, or throw
// FrameError with one of the decoder's NACK codes. Seeded; FUZZ_SEED=<n> replays a run.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { Decoder } from 'cbor-x';
import { CborWriter } from '../../hub/cbor.js';
import { decodeEstop, EstopFrameError } from '../../hub/estop-frame.js';
import { decodeFrame, encodeFrame, FrameError, peekFrameType, type Frame } from '../../hub/frames.js';
import { Nack } from '../../hub/nack.js';
import { bytesToHex, hexToBytes } from '../lib/vector-json.js';
import framesJson from '../vectors/frames.json' with { type: 'json' };
import lenientJson from '../vectors/lenient.json' with { type: 'json' };
import estopJson from '../vectors/estop.json' with { type: 'json' };

const SEED = Number(process.env.FUZZ_SEED ?? 0x5eed2024) >>> 0;
const MUTANTS = 20000;
const DECODER_NACKS = new Set<number>([Nack.MALFORMED, Nack.TOO_LARGE, Nack.VERSION]);

// mulberry32: small, seeded, good enough to pick mutations.
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const corpus = [
  ...(framesJson as { hex: string }[]).map((v) => hexToBytes(v.hex)),
  ...(lenientJson as { hex: string }[]).map((v) => hexToBytes(v.hex)),
];

function mutate(rand: () => number): Uint8Array {
  const pick = (n: number): number => Math.floor(rand() * n);
  let b = Array.from(corpus[pick(corpus.length)] as Uint8Array);
  const rounds = 1 + pick(4);
  for (let r = 0; r < rounds; r++) {
    const at = pick(b.length + 1);
    switch (pick(7)) {
      case 0: // bit flip
        if (b.length > 0) b[at % b.length] = (b[at % b.length] as number) ^ (1 << pick(8));
        break;
      case 1: // byte replaced, biased towards CBOR heads that change structure
        if (b.length > 0) b[at % b.length] = rand() < 0.5 ? pick(256) : [0x00, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1f, 0x40, 0x60, 0x80, 0x98, 0xa0, 0xb8, 0xbf, 0xc0, 0xf4, 0xf5, 0xf6, 0xf7, 0xf9, 0xfb, 0xff][pick(22)] as number;
        break;
      case 2: // byte inserted
        b.splice(at, 0, pick(256));
        break;
      case 3: // byte deleted
        if (b.length > 0) b.splice(at % b.length, 1);
        break;
      case 4: // truncated
        b = b.slice(0, at);
        break;
      case 5: { // spliced with another vector
        const other = Array.from(corpus[pick(corpus.length)] as Uint8Array);
        b = b.slice(0, at).concat(other.slice(pick(other.length + 1)));
        break;
      }
      case 6: // a run duplicated
        b.splice(at, 0, ...b.slice(at, at + 1 + pick(16)));
        break;
    }
  }
  return Uint8Array.from(b);
}

const cborx = new Decoder({ mapsAsObjects: false, useRecords: false } as ConstructorParameters<typeof Decoder>[0]);
const w = new CborWriter(new Uint8Array(16384));

function reencode(f: Frame): Uint8Array {
  w.reset();
  encodeFrame(f, w);
  return w.subarray().slice();
}

describe('frames fuzz (Node)', () => {
  it(`${MUTANTS} mutated vectors: a valid frame or a FrameError with a decoder NACK, never anything else`, () => {
    const rand = prng(SEED);
    let accepted = 0;
    const refused = new Map<number, number>();
    for (let i = 0; i < MUTANTS; i++) {
      const b = mutate(rand);
      let f: Frame;
      try {
        f = decodeFrame(b, 0, b.length);
      } catch (e) {
        if (!(e instanceof FrameError)) {
          assert.fail(`seed ${SEED} mutant ${i} ${bytesToHex(b)}: threw ${String(e)}`);
        }
        assert.ok(DECODER_NACKS.has(e.nack), `seed ${SEED} mutant ${i}: NACK ${e.nack}`);
        refused.set(e.nack, (refused.get(e.nack) ?? 0) + 1);
        continue;
      }
      accepted++;
      // What we accept is well-formed CBOR to an independent decoder, keyed 0 by its type.
      const other = cborx.decode(b) as Map<number, unknown>;
      assert.ok(other instanceof Map, `seed ${SEED} mutant ${i} ${bytesToHex(b)}`);
      assert.equal(other.get(0), f.type);
      assert.equal(peekFrameType(b, 0, b.length), f.type);
      // And it re-encodes to a canonical frame that decodes to the same thing.
      const again = reencode(f);
      assert.deepEqual(decodeFrame(again, 0, again.length, 16384), f, `seed ${SEED} mutant ${i} ${bytesToHex(b)}`);
    }
    const total = accepted + [...refused.values()].reduce((a, x) => a + x, 0);
    assert.equal(total, MUTANTS);
    process.stdout.write(
      `      seed ${SEED}: ${accepted} decoded, ${MUTANTS - accepted} refused (` +
        [...refused.entries()].map(([k, n]) => `${k === Nack.MALFORMED ? 'MALFORMED' : k === Nack.TOO_LARGE ? 'TOO_LARGE' : 'VERSION'} ${n}`).join(', ') +
        ')\n',
    );
    // Both outcomes must occur, or the mutator is not exercising the decoder.
    assert.ok(accepted > 100, `only ${accepted} mutants decoded`);
    assert.ok(MUTANTS - accepted > 1000);
  });

  it('every prefix of every vector is refused with MALFORMED', () => {
    let n = 0;
    for (const full of corpus) {
      for (let len = 0; len < full.length; len++) {
        assert.throws(() => decodeFrame(full, 0, len), (e: unknown) => e instanceof FrameError && e.nack === Nack.MALFORMED);
        n++;
      }
    }
    assert.ok(n > 1000);
  });

  it('the decoders agree with cbor-x on every valid vector', () => {
    for (const v of framesJson as { name: string; hex: string }[]) {
      const b = hexToBytes(v.hex);
      const other = cborx.decode(b) as Map<number, unknown>;
      const keys = [...other.keys()];
      assert.ok(keys.every((k, i) => Number.isInteger(k) && k >= 0 && (i === 0 || k > (keys[i - 1] as number))), v.name);
      assert.equal(other.get(0), decodeFrame(b, 0, b.length).type, v.name);
    }
  });

  it('mutated ESTOP frames: a frame or an EstopFrameError, never anything else', () => {
    const rand = prng(SEED ^ 0xe5);
    const vectors = (estopJson as { valid: { hex: string }[] }).valid.map((v) => hexToBytes(v.hex));
    let ok = 0;
    let bad = 0;
    for (let i = 0; i < 10000; i++) {
      const original = vectors[Math.floor(rand() * vectors.length)] as Uint8Array;
      const b = Array.from(original);
      const flips = 1 + Math.floor(rand() * 3);
      for (let j = 0; j < flips; j++) {
        const at = Math.floor(rand() * 12);
        b[at] = (b[at] as number) ^ (1 + Math.floor(rand() * 255));
      }
      const len = rand() < 0.1 ? Math.floor(rand() * 14) : 12;
      const buf = Uint8Array.from(b.slice(0, len));
      if (bytesToHex(buf) === bytesToHex(original)) {
        i--;
        continue;
      }
      try {
        decodeEstop(buf, 0, buf.length);
        ok++;
      } catch (e) {
        assert.ok(e instanceof EstopFrameError, String(e));
        bad++;
      }
    }
    assert.equal(ok + bad, 10000);
    // One corrupted byte is a burst of at most 8 bits, which CRC-16 always catches; two or
    // three slip through about 1 in 65536.
    assert.ok(ok < 3, `${ok} corrupted ESTOP frames accepted`);
  });
});

describe('docs/protocol.md examples', () => {
  it('every hex example is a stored vector, and every frame type has one', () => {
    const full = readFileSync(new URL('../../../docs/protocol.md', import.meta.url), 'utf8');
    // Frame and ESTOP examples (§5, §11); §13 shows binding-level bytes (fragments, datagrams).
    const doc = full.slice(0, full.indexOf('## 13. Bindings'));
    const blocks = doc.match(/```\n[\s\S]*?```/g) ?? [];
    const stored = new Set([
      ...(framesJson as { hex: string }[]).map((v) => v.hex),
      ...(estopJson as { valid: { hex: string }[] }).valid.map((v) => v.hex),
    ]);
    const types = new Set<number>();
    let examples = 0;
    for (const block of blocks) {
      for (const line of block.split('\n')) {
        if (!/^[0-9a-f]{2}[0-9a-f ]*$/.test(line)) continue;
        const hex = line.replace(/ /g, '');
        assert.ok(stored.has(hex), `docs example not among the vectors: ${hex}`);
        examples++;
        const b = hexToBytes(hex);
        if (b[0] !== 0xe5) types.add(decodeFrame(b, 0, b.length, 16384).type);
      }
    }
    assert.ok(examples >= 19);
    assert.equal(types.size, 18);
  });
});
