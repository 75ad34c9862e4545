// The hub's log records in words for the dashboard's event list: the hub logs compact codes
// with up to two numbers (hub/ports.ts `event`); the page shows what they mean.

import { TIER_NAMES } from '../../catalog/schema.js';
import { GoodbyeReason } from '../../hub/frame-types.js';

const ESTOP_SOURCES = ['a client', "the hub's button", 'the deadman', 'the watchdog', 'the robot', 'a fleet stop'];

const GOODBYE_WORDS: Record<number, string> = {
  [GoodbyeReason.NORMAL]: 'goodbye',
  [GoodbyeReason.SHUTDOWN]: 'hub shutting down',
  [GoodbyeReason.MISBEHAVING]: 'misbehaving',
  [GoodbyeReason.EVICTED]: 'evicted for a slot',
  [GoodbyeReason.RESUMED_ELSEWHERE]: 'resumed on another link',
};

/** One hub log record in words; `who` names a session's simulated client when known. */
export function describeHubLog(code: string, a: number | undefined, b: number | undefined, who: (session: number) => string | null): string {
  const s = (id: number | undefined): string => {
    if (id === undefined || id === 0) return 'a connection before its session';
    const name = who(id);
    return name ? `session ${id} (${name})` : `session ${id}`;
  };
  switch (code) {
    case 'session-open':
      return `${s(a)} opened at ${TIER_NAMES[b ?? -1] ?? `tier ${b}`} tier`;
    case 'session-resume':
      return `${s(a)} resumed`;
    case 'session-close':
      return `${s(a)} closed: ${GOODBYE_WORDS[b ?? -1] ?? `reason ${b}`}`;
    case 'session-stale':
      return `${s(a)} went stale (its link fell silent; it may resume)`;
    case 'session-park':
      return `${s(a)} parked (it may resume)`;
    case 'session-silent':
      return `${s(a)} is silent`;
    case 'estop':
      return `ESTOP latched by ${ESTOP_SOURCES[a ?? -1] ?? `source ${a}`}${b ? ` (origin ${b})` : ''}`;
    case 'estop-clear':
      return `ESTOP cleared by ${s(a)}; the robot stays disarmed until the owner arms`;
    case 'ladder-park':
      return `overload ladder parked ${s(a)}, the lowest priority`;
    case 'tier-capped':
      return `${s(a)} capped at ${TIER_NAMES[b ?? -1] ?? `tier ${b}`} tier by its link`;
    case 'resume-refused':
      return `${s(a)} refused a resume above its link's ${TIER_NAMES[b ?? -1] ?? `tier ${b}`} ceiling`;
    case 'malformed-close':
      return `${s(a)} closed after ${b ?? '?'} malformed frames`;
    case 'handshake-timeout':
      return 'a connection closed: no HELLO in time';
    case 'pre-session-flood-close':
      return 'a connection closed: it flooded before its HELLO';
    case 'internal-error':
      return `internal error in ${s(a)}`;
    default:
      return `${code}${a !== undefined ? ` ${a}` : ''}${b !== undefined ? ` ${b}` : ''}`;
  }
}
