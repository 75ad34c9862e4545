// A minimal mocha-compatible BDD harness for the XS engine, where mocha itself does
// not run. The portable suites in test/core/ use only describe/it and the hooks below,
// so the very same files run under mocha on Node and under this harness on XS.

type Fn = (this: Ctx) => void | Promise<void>;
interface Ctx { timeout(ms?: number): Ctx; slow(ms?: number): Ctx; retries(n?: number): Ctx }
interface Test { name: string; fn: Fn }
interface Suite {
  name: string;
  tests: Test[];
  suites: Suite[];
  before: Fn[];
  after: Fn[];
  beforeEach: Fn[];
  afterEach: Fn[];
}
export interface CaseResult { name: string; ok: boolean; error?: string; ms?: number }

// xsnap has no timers. Libraries the suites use (fast-check) read them at load; the suites
// themselves run on virtual clocks and never wait, so a timer that fires on the next turn
// is enough for the engine and honest about what it is.
const timers = globalThis as Record<string, unknown>;
if (typeof timers.setTimeout !== 'function') {
  let nextId = 1;
  const live = new Set<number>();
  timers.setTimeout = (fn: (...a: unknown[]) => void, _ms?: number, ...args: unknown[]): number => {
    const id = nextId++;
    live.add(id);
    Promise.resolve().then(() => {
      if (live.delete(id)) fn(...args);
    });
    return id;
  };
  timers.clearTimeout = (id: number): void => {
    live.delete(id);
  };
}

const root: Suite = { name: '', tests: [], suites: [], before: [], after: [], beforeEach: [], afterEach: [] };
let current = root;
const ctx: Ctx = { timeout: () => ctx, slow: () => ctx, retries: () => ctx };

function describe(name: string, fn: () => void): void {
  const s: Suite = { name, tests: [], suites: [], before: [], after: [], beforeEach: [], afterEach: [] };
  current.suites.push(s);
  const parent = current;
  current = s;
  try {
    fn.call(ctx);
  } finally {
    current = parent;
  }
}
function it(name: string, fn: Fn): void {
  current.tests.push({ name, fn });
}
function unsupported(what: string): never {
  throw new Error(`${what} is not supported by the XS harness: portable suites never skip`);
}

const g = globalThis as Record<string, unknown>;
g.describe = describe;
g.context = describe;
g.it = it;
g.specify = it;
g.before = (fn: Fn) => current.before.push(fn);
g.after = (fn: Fn) => current.after.push(fn);
g.beforeEach = (fn: Fn) => current.beforeEach.push(fn);
g.afterEach = (fn: Fn) => current.afterEach.push(fn);
(describe as unknown as Record<string, unknown>).skip = () => unsupported('describe.skip');
(describe as unknown as Record<string, unknown>).only = () => unsupported('describe.only');
(it as unknown as Record<string, unknown>).skip = () => unsupported('it.skip');
(it as unknown as Record<string, unknown>).only = () => unsupported('it.only');

function message(e: unknown): string {
  if (e instanceof Error) return `${e.name}: ${e.message}${e.stack ? '\n' + e.stack : ''}`;
  return String(e);
}

async function runSuite(s: Suite, path: string[], eachBefore: Fn[], eachAfter: Fn[], out: CaseResult[]): Promise<void> {
  const here = s.name ? [...path, s.name] : path;
  const befores = [...eachBefore, ...s.beforeEach];
  const afters = [...s.afterEach, ...eachAfter];
  try {
    for (const h of s.before) await h.call(ctx);
  } catch (e) {
    out.push({ name: [...here, '"before all" hook'].join(' › '), ok: false, error: message(e) });
    return;
  }
  for (const t of s.tests) {
    const name = [...here, t.name].join(' › ');
    try {
      for (const h of befores) await h.call(ctx);
      await t.fn.call(ctx);
      for (const h of afters) await h.call(ctx);
      out.push({ name, ok: true });
    } catch (e) {
      out.push({ name, ok: false, error: message(e) });
    }
  }
  for (const c of s.suites) await runSuite(c, here, befores, afters, out);
  try {
    for (const h of s.after) await h.call(ctx);
  } catch (e) {
    out.push({ name: [...here, '"after all" hook'].join(' › '), ok: false, error: message(e) });
  }
}

export async function runAll(): Promise<CaseResult[]> {
  const out: CaseResult[] = [];
  await runSuite(root, [], [], [], out);
  return out;
}
