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

// Slot kinds whose chunk is an array of slots (xsAll.h: XS_ARGUMENTS_SLOPPY_KIND,
// XS_ARGUMENTS_STRICT_KIND, XS_ARRAY_KIND, XS_STACK_KIND) and whose chunk is a table of slot
// pointers (XS_GLOBAL_KIND, XS_MAP_KIND, XS_SET_KIND).
const SLOT_ARRAY_KINDS = new Set([14, 15, 16, 47]);
const TABLE_KINDS = new Set([25, 27, 33]);
/** The device's slot (ESP32: 32-bit pointers) and chunk header (txChunk: a size and a pointer). */
export const DEVICE_SLOT_BYTES = 16;
export const DEVICE_CHUNK_HEADER_BYTES = 8;

/**
 * The live heap recorded in a snapshot: HEAP holds the live slots, BLOC the live chunks.
 *
 * `hostChunkBytes` is BLOC as this host has it. `chunkBytes` is the same chunks as the device
 * would hold them: every chunk has a txChunk header (16 bytes here, 8 on the 32-bit ESP32); a
 * chunk holding an array's slots (found from the HEAP slots that point at it) has 16-byte slots
 * there, not this host's 32; a Map's or Set's table holds 4-byte pointers there, not 8. Any other
 * chunk (an ArrayBuffer's bytes, a string) has the same payload; its rounding (to 8 bytes here,
 * 4 there) is kept as it is here, so the figure is an upper bound by at most 4 bytes a chunk.
 */
export function readSnapshot(path) {
  const b = readFileSync(path);
  if (b.toString('latin1', 4, 8) !== 'XS_M') throw new Error('not an XS snapshot');
  let hostSlotBytes = 0;
  let heapAt = -1;
  let heapBytes = -1;
  let blocAt = -1;
  let hostChunkBytes = -1;
  for (let p = 8; p + 8 <= b.length; ) {
    const size = b.readUInt32BE(p);
    const type = b.toString('latin1', p + 4, p + 8);
    if (type === 'VERS') hostSlotBytes = Math.abs(b.readInt8(p + 11));
    else if (type === 'HEAP') {
      heapAt = p + 8;
      heapBytes = size - 8;
    } else if (type === 'BLOC') {
      blocAt = p + 8;
      hostChunkBytes = size - 8;
    }
    if (size < 8) break;
    p += size;
  }
  if (!hostSlotBytes || heapBytes < 0 || hostChunkBytes < 0) throw new Error('snapshot without VERS, HEAP or BLOC');
  return { slots: heapBytes / hostSlotBytes, chunkBytes: deviceChunkBytes(b, heapAt, heapBytes, blocAt, hostChunkBytes, hostSlotBytes), hostChunkBytes, hostSlotBytes };
}

// BLOC's chunks at the device's sizes (see readSnapshot). Only a 64-bit little-endian host's
// layout is read (slot: next pointer, then kind at byte 8, the value from byte 16; chunk: a
// 4-byte size, the projected payload offset being the chunk's offset + the 16-byte header).
function deviceChunkBytes(b, heapAt, heapBytes, blocAt, blocBytes, slotBytes) {
  if (slotBytes !== 32) throw new Error(`xs-heap: a ${slotBytes}-byte slot host is not read (64-bit little-endian only)`);
  const hostHeader = 16;
  const arrays = new Set();
  const tables = new Set();
  for (let p = heapAt; p + slotBytes <= heapAt + heapBytes; p += slotBytes) {
    const kind = b.readInt8(p + 8);
    if (!SLOT_ARRAY_KINDS.has(kind) && !TABLE_KINDS.has(kind)) continue;
    const address = Number(b.readBigUInt64LE(p + 16));
    if (address === 0) continue;
    (SLOT_ARRAY_KINDS.has(kind) ? arrays : tables).add(address);
  }
  let total = 0;
  for (let q = 0; q < blocBytes; ) {
    const size = b.readUInt32LE(blocAt + q);
    if (size < hostHeader || q + size > blocBytes) throw new Error(`xs-heap: a chunk of ${size} bytes at ${q} of BLOC`);
    const payload = size - hostHeader;
    const at = q + hostHeader;
    // Slots and pointers are half as wide on the device.
    total += DEVICE_CHUNK_HEADER_BYTES + (arrays.has(at) || tables.has(at) ? payload / 2 : payload);
    q += size;
  }
  return total;
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
    return { slots, chunkBytes: s.chunkBytes, hostChunkBytes: s.hostChunkBytes, hostSlotBytes: s.hostSlotBytes };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
