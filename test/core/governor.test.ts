import fc from 'fast-check';
import {
  DEFAULT_GOVERNOR_OPTIONS,
  DEFAULT_HUB_BYTES_PER_S,
  DEFAULT_SESSION_BYTES_PER_S,
  GOVERNOR_DOWNSAMPLE_RATIO,
  GOVERNOR_HINTS,
  GOVERNOR_NACK,
  GOVERNOR_REASONS,
  GOVERNOR_SLICE_MS,
  GOVERNOR_SLICES,
  GOVERNOR_WINDOW_MS,
  GovernorVerdict,
  IngressGovernor,
} from '../../hub/governor.js';
import { MAX_FRAME_BYTES } from '../../hub/frames.js';
import { isRetryable, Nack } from '../../hub/nack.js';
import { deepEqual, equal, ok, throws } from '../lib/assert.js';
import { runs } from '../lib/env.js';

const { ACCEPT, ACCEPT_DOWNSAMPLE, REJECT_SESSION, REJECT_HUB } = GovernorVerdict;
const S = DEFAULT_SESSION_BYTES_PER_S; // 32768
const H = DEFAULT_HUB_BYTES_PER_S; // 98304

describe('hub/governor: constants', () => {
  it('one-second windows, downsample hint from 0.8', () => {
    equal(GOVERNOR_WINDOW_MS, 1000);
    equal(GOVERNOR_DOWNSAMPLE_RATIO, 0.8);
  });

  it('our decisions: 10 slices of 100 ms; 32 KiB/s per session, 96 KiB/s per hub (provisional)', () => {
    equal(GOVERNOR_SLICES, 10);
    equal(GOVERNOR_SLICE_MS, 100);
    equal(DEFAULT_SESSION_BYTES_PER_S, 32768);
    equal(DEFAULT_HUB_BYTES_PER_S, 98304);
    deepEqual({ ...DEFAULT_GOVERNOR_OPTIONS }, { sessionBytesPerS: 32768, hubBytesPerS: 98304 });
  });

  it('verdict codes, typed reasons and hints; the NACK is INGRESS_BUDGET (15), retryable', () => {
    deepEqual({ ...GovernorVerdict }, { ACCEPT: 0, ACCEPT_DOWNSAMPLE: 1, REJECT_SESSION: 2, REJECT_HUB: 3 });
    deepEqual([...GOVERNOR_REASONS], ['', '', 'session_byte_budget_exceeded', 'hub_byte_budget_exceeded']);
    deepEqual([...GOVERNOR_HINTS], ['', 'downsample', 'downsample', 'downsample']);
    equal(GOVERNOR_NACK, Nack.INGRESS_BUDGET);
    equal(GOVERNOR_NACK, 15);
    ok(isRetryable(GOVERNOR_NACK));
  });
});

describe('hub/governor: the session scope', () => {
  it('accepts up to the budget exactly; one byte more is session_byte_budget_exceeded', () => {
    const g = new IngressGovernor(8);
    equal(g.admit(0, 1000, 0), ACCEPT);
    equal(g.admit(0, S - 1000, 10), ACCEPT_DOWNSAMPLE, 'at the budget: accepted, with the hint');
    equal(g.sessionUsed(0, 10), S);
    equal(g.admit(0, 1, 20), REJECT_SESSION);
    equal(GOVERNOR_REASONS[REJECT_SESSION], 'session_byte_budget_exceeded');
    ok(g.retryAfterMs > 0);
    equal(g.sessionUsed(0, 20), S, 'rejected bytes are not counted');
    equal(g.bytesRejected, 1);
  });

  it('the downsample hint starts at 80 % utilisation after the frame', () => {
    const g = new IngressGovernor(8);
    // 0.8 × 32768 = 26214.4
    equal(g.admit(0, 26214, 0), ACCEPT);
    ok(g.utilisation < 0.8);
    equal(g.admit(0, 1, 0), ACCEPT_DOWNSAMPLE);
    ok(g.utilisation >= 0.8);
    equal(g.retryAfterMs, 0);
  });

  it('at exactly 80 % the hint is given (≥, our design\'s "reached")', () => {
    const g = new IngressGovernor(8, { sessionBytesPerS: 5000, hubBytesPerS: 50_000 });
    equal(g.admit(0, 3999, 0), ACCEPT);
    equal(g.admit(0, 1, 0), ACCEPT_DOWNSAMPLE);
    equal(g.utilisation, 0.8);
    const h = new IngressGovernor(8, { sessionBytesPerS: 5000, hubBytesPerS: 10_000 });
    equal(h.admit(-1, 7999, 0), ACCEPT);
    equal(h.admit(-1, 1, 0), ACCEPT_DOWNSAMPLE, 'the hub scope\'s utilisation counts too');
  });

  it('a byte leaves the window exactly one second after the start of its 100 ms slice', () => {
    const g = new IngressGovernor(8);
    g.admit(0, 1000, 50); // slice 0
    g.admit(0, 300, 150); // slice 1
    equal(g.sessionUsed(0, 999), 1300);
    equal(g.sessionUsed(0, 1000), 300);
    equal(g.sessionUsed(0, 1099), 300);
    equal(g.sessionUsed(0, 1100), 0);
    equal(g.sessionUsed(0, 50_000), 0, 'long idle clears the ring');
  });

  it('retryAfterMs is exactly when enough bytes have aged out: one ms sooner is still rejected', () => {
    const g = new IngressGovernor(8);
    g.admit(0, 500, 0); // slice 0, leaves at 1000
    g.admit(0, 10_000, 300); // slice 3, leaves at 1300
    g.admit(0, 10_000, 600);
    g.admit(0, 12_268, 900); // 32 768 in all
    equal(g.admit(0, 400, 950), REJECT_SESSION);
    equal(g.retryAfterMs, 50, 'slice 0 alone frees enough at 1000');
    equal(g.admit(0, 1024, 950), REJECT_SESSION);
    equal(g.retryAfterMs, 350, 'slice 0 frees 500 only; slice 3 leaves at 1300');
    equal(g.admit(0, 1024, 950 + 350 - 1), REJECT_SESSION);
    equal(g.admit(0, 1024, 950 + 350), ACCEPT);
    equal(g.sessionUsed(0, 1300), 10_000 + 12_268 + 1024);
  });

  it('sessions are isolated: one over its budget does not touch another\'s', () => {
    const g = new IngressGovernor(8);
    g.admit(0, S, 0);
    equal(g.admit(0, 100, 10), REJECT_SESSION);
    equal(g.admit(1, 100, 10), ACCEPT);
    equal(g.sessionUsed(1, 10), 100);
  });

  it('resetSession: a new session in the slot starts with nothing used', () => {
    const g = new IngressGovernor(8);
    g.admit(2, S, 0);
    equal(g.admit(2, 10, 1), REJECT_SESSION);
    g.resetSession(2);
    equal(g.sessionUsed(2, 1), 0);
    equal(g.admit(2, 10, 1), ACCEPT);
    equal(g.hubUsed(1), S + 10, 'the hub scope keeps the bytes: they were taken in');
    g.resetSession(-1);
    g.resetSession(99);
  });

  it('a clock that steps back counts into the newest slice', () => {
    const g = new IngressGovernor(8);
    g.admit(0, 100, 5000); // slice 50
    g.admit(0, 200, 4000); // written into slice 50 too
    equal(g.sessionUsed(0, 5999), 300);
    equal(g.sessionUsed(0, 6000), 0);
  });
});

describe('hub/governor: the hub scope', () => {
  it('sessions within their budgets together exceed the hub\'s: hub_byte_budget_exceeded', () => {
    const g = new IngressGovernor(8);
    for (let s = 0; s < 3; s++) equal(g.admit(s, 30_000, 100 * s), ACCEPT_DOWNSAMPLE, `session ${s} at 92 % of its own`);
    equal(g.hubUsed(300), 90_000);
    equal(g.admit(3, 9000, 300), REJECT_HUB);
    equal(GOVERNOR_REASONS[REJECT_HUB], 'hub_byte_budget_exceeded');
    equal(g.retryAfterMs, 700, 'session 0\'s slice leaves at 1000');
    equal(g.sessionUsed(3, 300), 0, 'a hub rejection counts nowhere');
    equal(g.admit(3, 9000, 999), REJECT_HUB);
    equal(g.admit(3, 9000, 1000), ACCEPT, 'hub at 70 %, session at 27 %');
  });

  it('hubScope false (non-BUNDLE frames): counted in the hub window, never refused by it', () => {
    const g = new IngressGovernor(8);
    g.admit(0, 30_000, 0);
    g.admit(1, 30_000, 0);
    g.admit(2, 30_000, 0);
    equal(g.admit(3, 9000, 0), REJECT_HUB);
    equal(g.admit(3, 9000, 0, false), ACCEPT_DOWNSAMPLE);
    equal(g.hubUsed(0), 99_000, 'over the hub budget: BUNDLEs wait, control frames pass');
    equal(g.admit(4, 10, 0, false), ACCEPT_DOWNSAMPLE);
    equal(g.admit(4, 10, 0, true), REJECT_HUB);
    equal(g.admit(3, S, 0, false), REJECT_SESSION, 'the session scope still applies');
  });

  it('frames without a session (slot -1) meet the hub scope only', () => {
    const g = new IngressGovernor(2);
    equal(g.admit(-1, 50_000, 0), ACCEPT);
    equal(g.admit(-1, 48_304, 0), ACCEPT_DOWNSAMPLE);
    equal(g.admit(-1, 1, 0), REJECT_HUB);
    equal(g.admit(5, 1, 0, false), ACCEPT_DOWNSAMPLE, 'a slot out of range is no session either');
  });

  it('counters for health', () => {
    const g = new IngressGovernor(8);
    g.admit(0, 100, 0);
    g.admit(0, S, 0);
    g.admit(1, 30_000, 0);
    g.admit(2, 30_000, 0);
    g.admit(3, 30_000, 0);
    g.admit(4, 30_000, 0);
    deepEqual([g.accepted, g.downsampleHints, g.rejectedSession, g.rejectedHub], [4, 3, 1, 1]);
    equal(g.bytesAccepted, 100 + 3 * 30_000);
    equal(g.bytesRejected, S + 30_000);
  });

  it('refuses budgets below one largest client frame, or a hub budget below a session\'s', () => {
    throws(() => new IngressGovernor(8, { sessionBytesPerS: MAX_FRAME_BYTES - 1 }), (e) => e instanceof RangeError);
    throws(() => new IngressGovernor(8, { sessionBytesPerS: 5000, hubBytesPerS: 4000 }), (e) => e instanceof RangeError);
    throws(() => new IngressGovernor(0), (e) => e instanceof RangeError);
    const g = new IngressGovernor(1, { sessionBytesPerS: MAX_FRAME_BYTES, hubBytesPerS: MAX_FRAME_BYTES });
    equal(g.admit(0, MAX_FRAME_BYTES, 0), ACCEPT_DOWNSAMPLE);
  });
});

// A plain model: every accepted frame kept as (slot, slice, bytes), windows summed by brute force.
interface Accepted { slot: number; slice: number; bytes: number }
function modelUsed(log: readonly Accepted[], slot: number, slice: number): number {
  let sum = 0;
  for (const a of log) if ((slot < 0 || a.slot === slot) && a.slice > slice - 10 && a.slice <= slice) sum += a.bytes;
  return sum;
}
function modelRetry(log: readonly Accepted[], slot: number, bytes: number, now: number, budget: number): number {
  const cur = Math.floor(now / 100);
  for (let s = cur - 9; s <= cur; s++) {
    let left = 0;
    for (const a of log) if ((slot < 0 || a.slot === slot) && a.slice > s && a.slice <= cur) left += a.bytes;
    if (left + bytes <= budget) return Math.max(1, Math.ceil((s + 10) * 100 - now));
  }
  return 1000;
}

describe('hub/governor: against a brute-force model', () => {
  it('every verdict, utilisation and retry hint agrees, and no window ever holds more than its budget', () => {
    const frame = fc.record({
      slot: fc.integer({ min: -1, max: 3 }),
      bytes: fc.integer({ min: 1, max: 1024 }),
      dt: fc.oneof(fc.integer({ min: 0, max: 30 }), fc.integer({ min: 0, max: 1500 })),
      hubScope: fc.boolean(),
    });
    fc.assert(
      fc.property(fc.array(frame, { minLength: 1, maxLength: 400 }), (frames) => {
        // Budgets whose 80 % is a whole number of bytes, so that the hint's edge is reached exactly.
        const sessionBudget = 5000;
        const hubBudget = 10_000;
        const g = new IngressGovernor(4, { sessionBytesPerS: sessionBudget, hubBytesPerS: hubBudget });
        const log: Accepted[] = [];
        let now = 0;
        for (const f of frames) {
          now += f.dt;
          const slice = Math.floor(now / 100);
          const su = f.slot >= 0 ? modelUsed(log, f.slot, slice) : 0;
          const hu = modelUsed(log, -1, slice);
          let want: number;
          let retry = 0;
          if (f.slot >= 0 && su + f.bytes > sessionBudget) {
            want = REJECT_SESSION;
            retry = modelRetry(log, f.slot, f.bytes, now, sessionBudget);
          } else if (f.hubScope && hu + f.bytes > hubBudget) {
            want = REJECT_HUB;
            retry = modelRetry(log, -1, f.bytes, now, hubBudget);
          } else {
            const u = Math.max(f.slot >= 0 ? (su + f.bytes) / sessionBudget : 0, (hu + f.bytes) / hubBudget);
            want = u >= 0.8 ? ACCEPT_DOWNSAMPLE : ACCEPT;
            log.push({ slot: f.slot, slice, bytes: f.bytes });
          }
          const got = g.admit(f.slot, f.bytes, now, f.hubScope);
          if (got !== want || g.retryAfterMs !== retry) return false;
          if (got <= ACCEPT_DOWNSAMPLE) {
            const u = Math.max(f.slot >= 0 ? (su + f.bytes) / sessionBudget : 0, (hu + f.bytes) / hubBudget);
            if (g.utilisation !== u) return false;
          }
          for (let s = 0; s < 4; s++) {
            const used = g.sessionUsed(s, now);
            if (used !== modelUsed(log, s, slice) || used > sessionBudget) return false;
          }
          if (g.hubUsed(now) !== modelUsed(log, -1, slice)) return false;
        }
        return true;
      }),
      { numRuns: runs(200, 25) },
    );
  });
});
