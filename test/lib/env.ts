// Where a portable suite is running: on the XS engine (xsnap) or on Node.
// xsnap has `print` and no `process`; Node has `process` and no `print`.
const g = globalThis as { print?: unknown; process?: unknown };

export const ON_XS: boolean = typeof g.print === 'function' && typeof g.process === 'undefined';

// Property-test counts: full size on Node, a smaller sample on XS (it is an interpreter).
export function runs(nodeCount: number, xsCount: number): number {
  return ON_XS ? xsCount : nodeCount;
}
