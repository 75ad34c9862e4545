// The retained-heap reader (scripts/lib/xs-heap.mjs) on the real XS engine: chunk bytes are
// counted at the ESP32's sizes (8-byte chunk headers, 16-byte slots in an array's chunk, 4-byte
// pointers in a Map's table), the host's own figure kept beside them.
import assert from 'node:assert/strict';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

interface Heap {
  slots: number;
  chunkBytes: number;
  hostChunkBytes: number;
  hostSlotBytes: number;
}
interface Worker {
  evaluate(code: string): Promise<unknown>;
  close(): Promise<void>;
}

describe('xs-heap: chunk bytes at the device sizes', function () {
  this.timeout(60000);
  let xs: Worker;
  let liveHeap: (xs: Worker) => Promise<Heap>;
  let n = 0;

  before(async () => {
    const { Xsnap } = (await import(pathToFileURL(join(repo, 'scripts', 'lib', 'xsnap.mjs')).href)) as { Xsnap: new (o: object) => Worker };
    liveHeap = ((await import(pathToFileURL(join(repo, 'scripts', 'lib', 'xs-heap.mjs')).href)) as { liveHeap: typeof liveHeap }).liveHeap;
    xs = new Xsnap({});
  });
  after(async () => {
    await xs.close();
  });

  // What keeping `expr` alive in a global adds, host and device.
  async function growth(expr: string): Promise<{ device: number; host: number; slotBytes: number }> {
    const name = `kept${n++}`;
    await xs.evaluate(`globalThis.${name} = undefined;`);
    const a = await liveHeap(xs);
    await xs.evaluate(`globalThis.${name} = ${expr};`);
    const b = await liveHeap(xs);
    return { device: b.chunkBytes - a.chunkBytes, host: b.hostChunkBytes - a.hostChunkBytes, slotBytes: b.hostSlotBytes };
  }

  it('an ArrayBuffer keeps its bytes and an 8-byte header, not the host\'s 16', async () => {
    const g = await growth('new ArrayBuffer(4000)');
    assert.equal(g.slotBytes, 32, 'the reader knows the 64-bit host only');
    assert.ok(g.device >= 4008 && g.device <= 4008 + 64, `device ${g.device}`);
    // One chunk or more, each 8 bytes smaller on the device.
    assert.ok(g.host - g.device >= 8 && (g.host - g.device) % 8 === 0, `host ${g.host}, device ${g.device}`);
  });

  it('an array\'s elements take 16 bytes each on the device, 32 on the host', async () => {
    const g = await growth('Array.from({ length: 64 }, (_, i) => i)');
    // 64 slots of 16 bytes and a header, plus at most a few small chunks of the evaluation.
    assert.ok(g.device >= 64 * 16 + 8 && g.device <= 64 * 16 + 8 + 64, `device ${g.device}`);
    assert.ok(g.host >= 64 * 32 + 16, `host ${g.host}`);
    assert.ok(g.host - g.device >= 64 * 16 + 8, `host ${g.host}, device ${g.device}`);
  });

  it('a Map\'s table holds pointers at half the host\'s width', async () => {
    const entries = Array.from({ length: 200 }, (_, i) => `[${i}, ${i}]`).join(',');
    const device = await growth(`new Map([${entries}])`);
    // Its entries are slots; its table has grown to at least a pointer an entry, 8 bytes here and 4 there.
    assert.ok(device.host - device.device >= 200 * 4 + 8, `host ${device.host}, device ${device.device}`);
  });
});
