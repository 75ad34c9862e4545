// The live heap of an xsnap-worker, read the way the engine itself records it: a heap snapshot
// (written after a full collection) whose HEAP section holds the live slots and whose BLOC
// section holds the live chunks. Used by the bench's retained cases and the device budget.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// xsnap's 'w' command: writes a heap snapshot (after a full collection) and answers its size.
export function writeSnapshot(xs, path) {
  return new Promise((resolveSnap, reject) => {
    xs.waiters.push({ resolve: resolveSnap, reject });
    xs.send('w' + path);
  });
}

// The live heap recorded in a snapshot: HEAP holds the live slots, BLOC the live chunks.
export function readSnapshot(path) {
  const b = readFileSync(path);
  if (b.toString('latin1', 4, 8) !== 'XS_M') throw new Error('not an XS snapshot');
  let hostSlotBytes = 0;
  let heapBytes = -1;
  let chunkBytes = -1;
  for (let p = 8; p + 8 <= b.length; ) {
    const size = b.readUInt32BE(p);
    const type = b.toString('latin1', p + 4, p + 8);
    if (type === 'VERS') hostSlotBytes = Math.abs(b.readInt8(p + 11));
    else if (type === 'HEAP') heapBytes = size - 8;
    else if (type === 'BLOC') chunkBytes = size - 8;
    if (size < 8) break;
    p += size;
  }
  if (!hostSlotBytes || heapBytes < 0 || chunkBytes < 0) throw new Error('snapshot without VERS, HEAP or BLOC');
  return { slots: heapBytes / hostSlotBytes, chunkBytes, hostSlotBytes };
}

/**
 * The live heap now: slots as the engine counts them after a gc() evaluation (currentHeapCount),
 * chunk bytes from a snapshot.
 */
export async function liveHeap(xs) {
  const slots = (await xs.evaluate('gc();')).meter.currentHeapCount;
  const dir = mkdtempSync(join(tmpdir(), 'hub-heap-'));
  try {
    const path = join(dir, 'h.xss');
    await writeSnapshot(xs, path);
    const s = readSnapshot(path);
    return { slots, chunkBytes: s.chunkBytes, hostSlotBytes: s.hostSlotBytes };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
