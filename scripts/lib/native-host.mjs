// The device's native byte work (device/native/robotframe.h, device/native/samplewriter.h) built
// for this host: the program in bench/native/native-host.c, which the tests check against the
// script and the device budget times. Needs a C compiler (`cc`, or $CC), as
// scripts/check-native.mjs does.
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * Compiles the host program into a fresh temporary directory and returns its path; throws with the
 * compiler's output when it fails. `bits: 32` builds it with `-m32`, a 32-bit little-endian program
 * as the ESP32's (its `long` and pointers 32 bits wide; Debian's gcc-multilib).
 */
export function buildNativeHost(repo, { bits = 0 } = {}) {
  const cc = process.env.CC || 'cc';
  const out = join(mkdtempSync(join(tmpdir(), 'native-host-')), 'native-host');
  const argv = [...(bits === 32 ? ['-m32'] : []), '-std=gnu11', '-O2', '-Wall', '-Wextra', '-Werror', '-o', out, join(repo, 'bench/native/native-host.c'), '-lm'];
  const r = spawnSync(cc, argv, { encoding: 'utf8' });
  if (r.error) throw new Error(`native-host: cannot run ${cc}: ${r.error.message} (a C compiler is needed: apt-get install gcc${bits === 32 ? ' gcc-multilib' : ''})`);
  if (r.status !== 0) throw new Error(`native-host: ${cc} ${argv.join(' ')} failed\n${r.stdout}${r.stderr}`);
  return out;
}

/** The host program's `check` over `lines` (one request each); its answers, one a line. */
export function nativeCheck(program, lines) {
  const r = spawnSync(program, ['check'], { input: lines.join('\n') + '\n', encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`native-host check exited ${r.status}: ${r.stderr}`);
  const out = r.stdout.endsWith('\n') ? r.stdout.slice(0, -1) : r.stdout;
  return out.split('\n');
}

/**
 * Nanoseconds of the C on this host, each the median of `runs` timings of `rounds` frames: an imu
 * SAMPLE frame's CRC and values, a cmd_vel PUBLISH frame's CRC, per byte of CRC and per value
 * read (from a 256-byte CRC and a 32-value read), and a DATA frame's seq, t and values written.
 */
export function nativeTiming(program, { rounds = 2_000_000, runs = 5 } = {}) {
  const imu = [];
  const pub = [];
  const perByte = [];
  const perValue = [];
  const dataFrame = [];
  const dataValue = [];
  for (let i = 0; i < runs; i++) {
    const r = spawnSync(program, ['time', String(rounds)], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`native-host time exited ${r.status}: ${r.stderr}`);
    const j = JSON.parse(r.stdout);
    imu.push(j.nsPerImuSample);
    pub.push(j.nsPerPublish);
    perByte.push(j.nsPerCrcByte);
    perValue.push(j.nsPerValue);
    dataFrame.push(j.nsPerDataFrame);
    dataValue.push(j.nsPerDataValue);
  }
  const med = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  return {
    nsPerImuSample: med(imu),
    nsPerPublish: med(pub),
    nsPerCrcByte: med(perByte),
    nsPerValue: med(perValue),
    // A DATA frame's seq, t and values: a part per frame and a part per value (from 6 and 32 values).
    nsPerDataFrame: med(dataFrame),
    nsPerDataValue: med(dataValue),
    rounds,
    runs,
  };
}
