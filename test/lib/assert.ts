// Portable assertions for suites that run on Node and on the XS engine alike
// (xsnap has no `node:assert`).

export class AssertionError extends Error {
  override name = 'AssertionError';
}

function show(v: unknown): string {
  if (v instanceof Uint8Array) {
    let s = '';
    for (let i = 0; i < v.length && i < 64; i++) s += (v[i] as number).toString(16).padStart(2, '0');
    return `Uint8Array<${s}${v.length > 64 ? '…' : ''}>`;
  }
  if (v instanceof Map) return `Map(${show(Array.from(v.entries()))})`;
  if (typeof v === 'number' && Object.is(v, -0)) return '-0';
  if (typeof v === 'string') return JSON.stringify(v);
  try {
    const s = JSON.stringify(v, (_k, x: unknown) =>
      x instanceof Uint8Array || x instanceof Map ? show(x) : typeof x === 'number' && !Number.isFinite(x) ? String(x) : x);
    return s === undefined ? String(v) : s.length > 400 ? s.slice(0, 400) + '…' : s;
  } catch {
    return String(v);
  }
}

export function fail(msg: string): never {
  throw new AssertionError(msg);
}

export function ok(v: unknown, msg?: string): asserts v {
  if (!v) fail(msg ?? `expected a truthy value, got ${show(v)}`);
}

// Strict equality, with NaN equal to NaN and -0 distinct from 0 (Object.is).
export function equal<T>(actual: T, expected: T, msg?: string): void {
  if (!Object.is(actual, expected)) fail(`${msg ? msg + ': ' : ''}expected ${show(expected)}, got ${show(actual)}`);
}

export function notEqual<T>(actual: T, expected: T, msg?: string): void {
  if (Object.is(actual, expected)) fail(`${msg ? msg + ': ' : ''}expected a value other than ${show(expected)}`);
}

function deepEq(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Object.getPrototypeOf(a) !== Object.getPrototypeOf(b)) return false;
  if (ArrayBuffer.isView(a)) {
    const x = a as unknown as ArrayLike<number>;
    const y = b as unknown as ArrayLike<number>;
    if (x.length !== y.length) return false;
    for (let i = 0; i < x.length; i++) if (!Object.is(x[i], y[i])) return false;
    return true;
  }
  if (a instanceof Map) {
    const m = b as Map<unknown, unknown>;
    if (a.size !== m.size) return false;
    for (const [k, v] of a) {
      if (!m.has(k) || !deepEq(v, m.get(k))) return false;
    }
    return true;
  }
  if (Array.isArray(a)) {
    const y = b as unknown[];
    if (a.length !== y.length) return false;
    for (let i = 0; i < a.length; i++) if (!deepEq(a[i], y[i])) return false;
    return true;
  }
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (const k of ka) {
    if (!Object.prototype.hasOwnProperty.call(b, k)) return false;
    if (!deepEq((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k])) return false;
  }
  return true;
}

export function deepEqual(actual: unknown, expected: unknown, msg?: string): void {
  if (!deepEq(actual, expected)) fail(`${msg ? msg + ': ' : ''}expected ${show(expected)}, got ${show(actual)}`);
}

export function throws(fn: () => unknown, check?: (e: unknown) => boolean, msg?: string): unknown {
  try {
    fn();
  } catch (e) {
    if (check && !check(e)) fail(`${msg ? msg + ': ' : ''}unexpected error ${e instanceof Error ? `${e.name}: ${e.message}` : show(e)}`);
    return e;
  }
  return fail(`${msg ? msg + ': ' : ''}expected an exception`);
}
