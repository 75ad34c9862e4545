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
  return { notes, extraChecks };
}
