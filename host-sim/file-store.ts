// The simulator's Store in a file, as the device keeps its Store in NVS: the ESTOP latch (and the
// credential table) survive a kill and a restart of `npm start` (docs/operations.md "The
// simulator's state file"). One small JSON object, key → hex bytes, rewritten whole on every
// change through a temporary file and a rename, so that a kill mid-write leaves the old one.
// A file that cannot be read is set aside (renamed `.unreadable`) and its latch record reads as
// unreadable, so the hub comes up latched with source WATCHDOG (hub/estop.ts): not knowing
// whether the robot was stopped is taken as stopped.

import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ESTOP_STORE_KEY } from '../hub/estop.js';
import type { Store } from '../hub/ports.js';

/** `npm start`'s state file when no `--state` is given: one per scenario under the OS temp dir. */
export function defaultStatePath(scenario: string): string {
  return join(tmpdir(), 'robot-hub-sim', `${scenario.replace(/[^A-Za-z0-9_-]/g, '_')}.state.json`);
}

function hex(b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
}

export class FileStore implements Store {
  private readonly map = new Map<string, Uint8Array>();
  /** Why the file was not read (it was set aside), or null. */
  readonly problem: string | null = null;

  constructor(readonly path: string) {
    mkdirSync(dirname(path), { recursive: true });
    if (!existsSync(path)) return;
    try {
      const o = JSON.parse(readFileSync(path, 'utf8')) as unknown;
      if (o === null || typeof o !== 'object' || Array.isArray(o)) throw new Error('not a JSON object');
      for (const [k, v] of Object.entries(o as Record<string, unknown>)) {
        if (typeof v !== 'string' || !/^(?:[0-9a-f]{2})*$/.test(v)) throw new Error(`${JSON.stringify(k)} is not hex bytes`);
        this.map.set(k, new Uint8Array(Buffer.from(v, 'hex')));
      }
    } catch (e) {
      this.map.clear();
      this.problem = e instanceof Error ? e.message : String(e);
      renameSync(path, `${path}.unreadable`);
      this.map.set(ESTOP_STORE_KEY, new Uint8Array(1));
    }
  }

  get(key: string): Uint8Array | undefined {
    const v = this.map.get(key);
    return v ? v.slice() : undefined;
  }

  set(key: string, value: Uint8Array): void {
    this.map.set(key, value.slice());
    this.flush();
  }

  delete(key: string): void {
    if (this.map.delete(key)) this.flush();
  }

  private flush(): void {
    const o: Record<string, string> = {};
    for (const [k, v] of this.map) o[k] = hex(v);
    const tmp = `${this.path}.${process.pid}.tmp`;
    writeFileSync(tmp, `${JSON.stringify(o)}\n`);
    renameSync(tmp, this.path);
  }
}
