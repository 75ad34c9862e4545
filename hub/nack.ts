// NACK codes (docs/protocol.md "NACK codes", §12). The numbers are wire values:
// never renumber one, only add new ones at the end.

export const Nack = Object.freeze({
  MALFORMED: 1,
  TOO_LARGE: 2,
  VERSION: 3,
  UNKNOWN_CHANNEL: 4,
  FORBIDDEN: 5,
  NOT_GRANTED: 6,
  NOT_OWNER: 7,
  RATE_LIMITED: 8,
  NO_SLOTS: 9,
  HUB_PRESSURE: 10,
  UNKNOWN_SESSION: 11,
  ESTOP_LATCHED: 12,
  SESSION_EVICTED: 13,
  NOT_READY: 14,
  INGRESS_BUDGET: 15,
  NOT_ARMED: 16,
} as const);

export type NackName = keyof typeof Nack;
export type NackCode = (typeof Nack)[NackName];

// Code → name; index 0 is unused (0 is "ok" in an ECHO result, never a NACK code).
const NAMES: readonly (NackName | undefined)[] = Object.freeze(
  (() => {
    const out: (NackName | undefined)[] = [];
    for (const name of Object.keys(Nack) as NackName[]) out[Nack[name]] = name;
    return out;
  })(),
);

export const NACK_MAX_CODE = 16;

export function isNackCode(code: number): code is NackCode {
  return Number.isInteger(code) && code >= 1 && code <= NACK_MAX_CODE;
}

export function nackName(code: number): NackName | undefined {
  return isNackCode(code) ? NAMES[code] : undefined;
}

export function nackCode(name: string): NackCode | undefined {
  return Object.prototype.hasOwnProperty.call(Nack, name) ? Nack[name as NackName] : undefined;
}

// Retryable: the same frame may succeed later without the client changing anything, so the
// hub sends `retry_after_ms` with these. RATE_LIMITED (§10.5), NO_SLOTS (slot pressure),
// HUB_PRESSURE (admission paused) and INGRESS_BUDGET (byte budgets refill) all pass with
// time. ESTOP_LATCHED does not: it needs an explicit clear, not waiting.
export function isRetryable(code: number): boolean {
  return (
    code === Nack.RATE_LIMITED ||
    code === Nack.NO_SLOTS ||
    code === Nack.HUB_PRESSURE ||
    code === Nack.INGRESS_BUDGET
  );
}
