// The device report's host calibration with a CoreMark binary (docs/performance.md "Fits the
// ESP32", Method): the bench runs the binary between its XS calibration runs and takes the median
// of the scores of that run, and it takes a score only from CoreMark's 2K performance run with
// its known CRCs. CoreMark itself is not built here (bench/README.md says how to build it), so a
// script stands in for the binary: it prints CoreMark's own output of such a run (captured from
// EEMBC CoreMark d5fad6b built by its makefile) with a score that grows by 1,000 at each call.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

// A real 2K performance run's output, the score left for the stand-in to fill in.
const OUTPUT = (score: string, crclist = '0xe714'): string => `2K performance run parameters for coremark.
CoreMark Size    : 666
Total ticks      : 207
Total time (secs): 0.207000
Iterations/Sec   : ${score}
ERROR! Must execute for at least 10 secs for a valid result!
Iterations       : 3000
Compiler version : GCC12.2.0
Compiler flags   : -O2   -lrt
Memory location  : Please put data memory location here
			(e.g. code in flash, data on heap etc)
seedcrc          : 0xe9f5
[0]crclist       : ${crclist}
[0]crcmatrix     : 0x1fd7
[0]crcstate      : 0x8e3a
[0]crcfinal      : 0xcc42
Errors detected
`;

interface Budget {
  runCoreMark(bin: string, iterations: number): number;
}

describe('the device report calibrated with a CoreMark binary', function () {
  this.timeout(180000);
  let dir = '';
  let budget: Budget;

  before(async function () {
    dir = mkdtempSync(join(tmpdir(), 'coremark-'));
    budget = (await import(pathToFileURL(join(repo, 'scripts', 'lib', 'device-budget.mjs')).href)) as Budget;
  });
  after(function () {
    rmSync(dir, { recursive: true, force: true });
  });

  // A stand-in that prints OUTPUT with 10,000 + 1,000 × (its calls) as the score, and its arguments to a file.
  function standIn(name: string, crclist = '0xe714'): string {
    const bin = join(dir, name);
    const text = OUTPUT('$SCORE.000000', crclist);
    writeFileSync(
      bin,
      `#!/bin/sh\nN=$(($(cat "${bin}.n" 2>/dev/null || echo 0) + 1))\necho $N > "${bin}.n"\necho "$@" > "${bin}.args"\nSCORE=$((10000 + 1000 * N))\ncat <<END\n${text}END\n`,
    );
    chmodSync(bin, 0o755);
    return bin;
  }

  it("reads the score of CoreMark's 2K performance run and runs it with that run's seeds", function () {
    const bin = standIn('good');
    assert.equal(budget.runCoreMark(bin, 60000), 11000);
    assert.equal(budget.runCoreMark(bin, 60000), 12000);
    const args = spawnSync('cat', [`${bin}.args`], { encoding: 'utf8' }).stdout.trim();
    assert.equal(args, '0x0 0x0 0x66 60000 7 1 2000');
  });

  it('refuses the output of another run (a CRC that is not the performance run’s)', function () {
    const bin = standIn('validation', '0xe3c1');
    assert.throws(() => budget.runCoreMark(bin, 60000), /2K performance run with its known CRCs/);
  });

  it('refuses a build that runs several threads (its score is every thread’s together)', function () {
    const bin = standIn('parallel', '0xe714\n[1]crclist       : 0xe714');
    assert.throws(() => budget.runCoreMark(bin, 60000), /2K performance run with its known CRCs/);
  });

  it('takes a relative path as a path, not a name to look up on PATH', function () {
    const bin = standIn('relative');
    const r = spawnSync(process.execPath, [join(repo, 'scripts', 'bench.mjs'), '--quick', '--json', '--only=device', '--no-node', '--coremark=relative'], { cwd: dir, encoding: 'utf8' });
    assert.equal(r.status, 0, `bench exited ${r.status}: ${r.stderr}`);
    const c = (JSON.parse(r.stdout) as { device: { calibration: { hostCoreMarkMeasured: boolean; source: string[] } } }).device.calibration;
    assert.equal(c.hostCoreMarkMeasured, true);
    assert.ok((c.source[0] as string).includes(bin), c.source[0]);
  });

  it('bench --coremark: one CoreMark run for each calibration run, the host score their median, and the ratio follows it', function () {
    const bin = standIn('bench');
    const r = spawnSync(process.execPath, [join(repo, 'scripts', 'bench.mjs'), '--quick', '--json', '--only=device', '--no-node', `--coremark=${bin}`], { cwd: repo, encoding: 'utf8' });
    assert.equal(r.status, 0, `bench exited ${r.status}: ${r.stderr}`);
    const c = (JSON.parse(r.stdout) as { device: { calibration: { hostCoreMark: number; hostCoreMarkMeasured: boolean; hostCoreMarkRuns: number[]; runsNsPerComputron: number[]; esp32HostRatio: { low: number; high: number }; esp32CoreMark: { low: number; high: number }; source: string[] } } }).device.calibration;
    assert.equal(c.hostCoreMarkMeasured, true);
    assert.deepEqual(c.hostCoreMarkRuns, [11000, 12000, 13000], 'one CoreMark run after each XS calibration run');
    assert.equal(c.runsNsPerComputron.length, 3);
    assert.equal(c.hostCoreMark, 12000);
    assert.equal(c.esp32HostRatio.high, Math.round((12000 / c.esp32CoreMark.low) * 100) / 100);
    assert.match(c.source[0] as string, /measured|interleaved/);
  });

  it('bench without --coremark says the host score was not measured', function () {
    const r = spawnSync(process.execPath, [join(repo, 'scripts', 'bench.mjs'), '--quick', '--only=device', '--no-node'], { cwd: repo, encoding: 'utf8', env: { ...process.env, COREMARK: '' } });
    assert.equal(r.status, 0, `bench exited ${r.status}: ${r.stderr}`);
    assert.match(r.stdout + r.stderr, /not measured in this run/);
  });
});
