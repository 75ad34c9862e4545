// What `npm test` needs beyond `npm ci`, checked (and installed where it can be)
// before any suite runs, so that nothing is skipped silently.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { xsnapWorkerPath } from './xsnap.mjs';

/** Debian's Chromium: the browser the dashboard suite drives through playwright-core (docs/simulator.md). */
export const CHROMIUM_PATH = '/usr/bin/chromium';

function chromiumVersion() {
  const r = spawnSync(CHROMIUM_PATH, ['--version'], { encoding: 'utf8', timeout: 30000 });
  return r.status === 0 ? r.stdout.trim() : 'version unknown';
}

function sh(cmd, args) {
  console.log(`  $ ${[cmd, ...args].join(' ')}`);
  const r = spawnSync(cmd, args, { stdio: 'inherit', env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  return r.status === 0;
}

/**
 * Finds Chromium, or installs Debian's package when running as root (npm's registry cannot
 * supply a browser: a tool's own browser download fails here). Returns null when Chromium is
 * there, otherwise the reason it is not, which fails `npm test`.
 */
export function ensureChromium(log = (line) => console.log(`  ${line}`)) {
  if (existsSync(CHROMIUM_PATH)) return null;
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!root) {
    return `${CHROMIUM_PATH} is missing and this is not root, so it cannot be installed here; run \`apt-get install -y chromium\` as root (Debian's package), then npm test again`;
  }
  if (!existsSync('/usr/bin/apt-get')) return `${CHROMIUM_PATH} is missing and there is no apt-get to install Debian's chromium with`;
  log(`Chromium: ${CHROMIUM_PATH} is missing; installing Debian's chromium package (for test/host/dashboard.test.ts)`);
  if (!sh('apt-get', ['update'])) return `apt-get update failed, so ${CHROMIUM_PATH} could not be installed`;
  // Recommends would bring udev, upower and Mesa, which a headless browser does not use; a font it does.
  if (!sh('apt-get', ['install', '-y', '--no-install-recommends', 'chromium', 'fonts-liberation'])) return `apt-get install -y chromium failed, so ${CHROMIUM_PATH} is missing`;
  if (!existsSync(CHROMIUM_PATH)) return `apt-get install chromium succeeded but ${CHROMIUM_PATH} is still missing`;
  return null;
}

/** Debian's python3 and the packages the Python client's suite needs (clients/python, docs/client.md "Python"); mypy checks its type hints. */
export const PYTHON_PATH = '/usr/bin/python3';
export const PYTHON_PACKAGES = ['python3', 'python3-cbor2', 'python3-websockets', 'python3-pytest', 'python3-pytest-asyncio', 'python3-mypy'];
const PYTHON_MODULES = ['cbor2', 'websockets', 'pytest', 'pytest_asyncio', 'mypy'];

function pythonReady() {
  if (!existsSync(PYTHON_PATH)) return `${PYTHON_PATH} is missing`;
  const r = spawnSync(PYTHON_PATH, ['-c', `import ${PYTHON_MODULES.join(', ')}`], { encoding: 'utf8', timeout: 60000 });
  return r.status === 0 ? null : `${PYTHON_PATH} cannot import ${PYTHON_MODULES.join(', ')}: ${(r.stderr || '').trim().split('\n').pop()}`;
}

function pythonVersions() {
  const code = `import sys, cbor2, websockets, pytest, pytest_asyncio as a; print(sys.version.split()[0], 'pytest', pytest.__version__, 'pytest-asyncio', a.__version__, 'websockets', websockets.__version__)`;
  const r = spawnSync(PYTHON_PATH, ['-c', code], { encoding: 'utf8', timeout: 60000 });
  return r.status === 0 ? r.stdout.trim() : 'versions unknown';
}

/**
 * Finds Debian's python3 with cbor2, websockets, pytest and pytest-asyncio, or installs Debian's
 * packages when running as root (PyPI is not used: the Python suite runs on what Debian ships).
 * Returns null when they are there, otherwise the reason they are not, which fails `npm test`.
 */
export function ensurePython(log = (line) => console.log(`  ${line}`)) {
  const missing = pythonReady();
  if (missing === null) return null;
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  const cmd = `apt-get install -y ${PYTHON_PACKAGES.join(' ')}`;
  if (!root) return `${missing}, and this is not root, so they cannot be installed here; run \`${cmd}\` as root (Debian's packages), then npm test again`;
  if (!existsSync('/usr/bin/apt-get')) return `${missing}, and there is no apt-get to install Debian's ${PYTHON_PACKAGES.join(', ')} with`;
  log(`Python: ${missing}; installing Debian's ${PYTHON_PACKAGES.join(' ')} (for test/host/python-client.test.ts)`);
  if (!sh('apt-get', ['update'])) return `apt-get update failed, so ${PYTHON_PACKAGES.join(', ')} could not be installed`;
  if (!sh('apt-get', ['install', '-y', '--no-install-recommends', ...PYTHON_PACKAGES])) return `${cmd} failed`;
  const still = pythonReady();
  return still === null ? null : `${cmd} succeeded but ${still}`;
}

/**
 * A C compiler that builds for a 32-bit little-endian target with `-m32` (Debian's gcc-multilib):
 * the device's C is also checked as a 32-bit program, as the ESP32 runs it
 * (test/host/sample-native.test.ts, test/host/robot-native.test.ts). Installs gcc-multilib when
 * running as root; returns null when it works, otherwise the reason, which fails `npm test`.
 */
export function ensureCompiler32() {
  const cc = process.env.CC || 'cc';
  const works = () => spawnSync(cc, ['-m32', '-x', 'c', '-o', '/dev/null', '-'], { input: '#include <stdint.h>\n#include <math.h>\nint main(void) { return (int)sizeof(void *) - 4; }\n', encoding: 'utf8' }).status === 0;
  if (works()) return null;
  // gcc-multilib is Debian's for x86-64 hosts (its -m32 builds i386 programs); elsewhere, say so.
  if (process.arch !== 'x64') return `${cc} -m32 cannot build a 32-bit program; on a ${process.arch} host set CC to a compiler that builds 32-bit little-endian programs this machine runs, then npm test again`;
  const root = typeof process.getuid === 'function' && process.getuid() === 0;
  if (!root) return `${cc} -m32 cannot build a 32-bit program and this is not root; run \`apt-get install -y gcc-multilib\` as root (Debian's package), then npm test again`;
  if (!existsSync('/usr/bin/apt-get')) return `${cc} -m32 cannot build a 32-bit program and there is no apt-get to install Debian's gcc-multilib with`;
  // --no-remove: gcc-multilib conflicts with Debian's cross compilers, and none is removed for it.
  const install = ['install', '-y', '--no-install-recommends', '--no-remove', 'gcc-multilib'];
  if (!sh('apt-get', install) && !(sh('apt-get', ['update']) && sh('apt-get', install))) {
    return 'apt-get install -y --no-remove gcc-multilib failed (a cross compiler it conflicts with is installed?)';
  }
  return works() ? null : `gcc-multilib is installed but ${cc} -m32 still cannot build a 32-bit program`;
}

export async function prepareEnvironment() {
  const notes = [];
  const extraChecks = [];
  notes.push(`XS engine: ${xsnapWorkerPath()}`);
  const missing = ensureChromium();
  if (missing === null) {
    notes.push(`Chromium: ${CHROMIUM_PATH} (${chromiumVersion()})`);
  } else {
    notes.push(`Chromium: MISSING: ${missing}`);
    // A check that fails with the reason, so the totals line counts it: the dashboard suite is never skipped silently.
    extraChecks.push({
      cmd: process.execPath,
      args: ['-e', `console.error(${JSON.stringify(`Chromium for the dashboard suite: ${missing}`)}); process.exit(1)`],
      label: `Chromium at ${CHROMIUM_PATH} (dashboard suite)`,
    });
  }
  const noPython = ensurePython();
  if (noPython === null) {
    notes.push(`Python: ${PYTHON_PATH} (${pythonVersions()})`);
  } else {
    notes.push(`Python: MISSING: ${noPython}`);
    // As for Chromium: a failing check with the reason; the Python client's suite also fails on its own.
    extraChecks.push({
      cmd: process.execPath,
      args: ['-e', `console.error(${JSON.stringify(`Python for the Python client's suite: ${noPython}`)}); process.exit(1)`],
      label: `Debian's python3 with ${PYTHON_MODULES.join(', ')} (Python client suite)`,
    });
  }
  const no32 = ensureCompiler32();
  if (no32 === null) {
    notes.push('C for a 32-bit target: cc -m32');
  } else {
    notes.push(`C for a 32-bit target: MISSING: ${no32}`);
    extraChecks.push({
      cmd: process.execPath,
      args: ['-e', `console.error(${JSON.stringify(`A 32-bit C build for the native checks: ${no32}`)}); process.exit(1)`],
      label: 'cc -m32 (the device C checked as a 32-bit program)',
    });
  }
  return { notes, extraChecks };
}
