// The device's native byte work built for this host (scripts/lib/native-host.mjs): the tests
// that hold the C to the script load it here, and build copies of it with one edit to show that
// their checks fail on broken C.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';

export interface NativeHost {
  /** Compiles bench/native/native-host.c of the tree at `repo` (`bits: 32`: with -m32); the program's path (in a directory of its own). */
  buildNativeHost(repo: string, options?: { bits?: number }): string;
  /** The program's answers to `lines`, one a line. */
  nativeCheck(program: string, lines: readonly string[]): string[];
}

export async function loadNativeHost(repo: string): Promise<NativeHost> {
  return (await import(pathToFileURL(join(repo, 'scripts', 'lib', 'native-host.mjs')).href)) as NativeHost;
}

/**
 * The host program built from a copy of the C in `dir` whose `header` (a file of
 * device/native) has `from` replaced by `to`; fails the test when the edit changes nothing.
 */
export function buildBroken(host: NativeHost, repo: string, dir: string, header: string, from: string, to: string, bits = 0): string {
  mkdirSync(join(dir, 'device/native'), { recursive: true });
  mkdirSync(join(dir, 'bench/native'), { recursive: true });
  for (const f of readdirSync(join(repo, 'device/native'))) if (f.endsWith('.h')) writeFileSync(join(dir, 'device/native', f), readFileSync(join(repo, 'device/native', f)));
  const text = readFileSync(join(repo, 'device/native', header), 'utf8');
  const broken = text.replace(from, to);
  assert.notEqual(broken, text, 'the edit changed the source');
  writeFileSync(join(dir, 'device/native', header), broken);
  writeFileSync(join(dir, 'bench/native/native-host.c'), readFileSync(join(repo, 'bench/native/native-host.c')));
  return host.buildNativeHost(dir, { bits });
}

/** The program built once for a suite (in `before`), a scratch directory for broken copies, both removed after it. */
export interface NativeFixture {
  host: NativeHost;
  program: string;
  /** The same program built as a 32-bit little-endian program (-m32), as the ESP32 runs the C. */
  program32: string;
  scratch: string;
  /** The answers of the host's program to `lines`, held equal to the 32-bit program's. */
  check(lines: readonly string[]): string[];
}

/** Registers the suite's hooks that build the host program and make its scratch directory, and removes both after it. */
export function useNativeHost(repo: string, label: string): NativeFixture {
  const f: NativeFixture = {
    host: undefined as unknown as NativeHost,
    program: '',
    program32: '',
    scratch: '',
    check: (lines) => {
      const answers = f.host.nativeCheck(f.program, lines);
      assert.deepEqual(f.host.nativeCheck(f.program32, lines), answers, 'the 32-bit build answers as the host build does');
      return answers;
    },
  };
  before(async () => {
    f.host = await loadNativeHost(repo);
    f.program = f.host.buildNativeHost(repo);
    f.program32 = f.host.buildNativeHost(repo, { bits: 32 });
    f.scratch = mkdtempSync(join(tmpdir(), `${label}-broken-`));
  });
  after(() => {
    if (f.program) rmSync(dirname(f.program), { recursive: true, force: true });
    if (f.program32) rmSync(dirname(f.program32), { recursive: true, force: true });
    if (f.scratch) rmSync(f.scratch, { recursive: true, force: true });
  });
  return f;
}
