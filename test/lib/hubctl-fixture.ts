// Running hubctl as its own process, the way a user or a script does, against a simulator
// scenario with a maintainer credential (test/host/hubctl.test.ts, test/host/recording.test.ts).
import { spawn } from 'node:child_process';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadCatalog } from '../../catalog/index.js';
import { DEFAULT_CATALOG } from '../../catalog/default.js';
import { loadNamedScenario, type Scenario } from '../../host-sim/scenario.js';

export const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
export const HUBCTL = join(repo, 'build', 'tools', 'hubctl.js');
/** A bound on one command, far above what it takes; the test waits for the exit, not the time. */
const RUN_MS = 90000;

export interface Ran {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs a command to its end; fails when it has not ended within RUN_MS. */
export function run(cmd: string, args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<Ran> {
  return new Promise((ok, bad) => {
    const child = spawn(cmd, args, { cwd: repo, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      bad(new Error(`${cmd} ${args.join(' ')}: not ended within ${RUN_MS} ms\n${stdout}\n${stderr}`));
    }, RUN_MS);
    child.once('error', bad);
    child.once('close', (code) => {
      clearTimeout(timer);
      ok({ code, stdout, stderr });
    });
  });
}

export function hubctl(args: readonly string[], env: NodeJS.ProcessEnv = {}): Promise<Ran> {
  return run(process.execPath, [HUBCTL, ...args], env);
}

/** calm with a maintainer credential and no scripted events: nobody takes control. */
export function testScenario(): Scenario {
  const calm = loadNamedScenario('calm', loadCatalog(DEFAULT_CATALOG));
  return { ...calm, durationMs: 600000, credentials: { ...calm.credentials, 'maintainer-key': 'maintainer' }, events: [] };
}
