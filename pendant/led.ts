// The pendant's status LED (docs/pendant.md "The LED"): one pattern per state, eight slots of
// 125 ms each second, the first slot in the pattern's high bit. The state shown is the most
// urgent that holds, in this order. Platform-free; no allocation.

export const LED_SLOT_MS = 125;
export const LED_SLOTS = 8;

/** What the status LED can show, most urgent first. */
export const PendantStatus = Object.freeze({
  /** The stop button is down, or the hub is latched: fast blink, 4 Hz. */
  LATCHED: 0,
  /** No session with the hub: one short flash a second. */
  DISCONNECTED: 1,
  /** The link is congested (level ≥ 1, §10.3): commands may be shed. 2 Hz blink. */
  CONGESTED: 2,
  /** This pendant owns control: steady on. */
  OWNER: 3,
  /** cmd_vel is granted, control owned by nobody or another session: 1 Hz, half on. */
  GRANTED: 4,
  /** A session, but no cmd_vel grant: two short flashes a second. */
  CONNECTED: 5,
} as const);
export type PendantStatusCode = (typeof PendantStatus)[keyof typeof PendantStatus];

/** The eight-slot pattern of each status, indexed by its code. */
export const LED_PATTERNS: readonly number[] = Object.freeze([
  0b10101010, // LATCHED
  0b10000000, // DISCONNECTED
  0b11001100, // CONGESTED
  0b11111111, // OWNER
  0b11110000, // GRANTED
  0b10100000, // CONNECTED
]);

/**
 * The link LED: the hub's congestion level for this pendant's link. Off: no session; steady:
 * level 0; 1 Hz blink: level 1 (congested); 4 Hz: level 2 or above (severe).
 */
export const LINK_PATTERNS: readonly number[] = Object.freeze([0b11111111, 0b11110000, 0b10101010]);

/** The level of `pattern` at `now` (1 on, 0 off). */
export function ledLevel(pattern: number, now: number): 0 | 1 {
  const slot = Math.floor(now / LED_SLOT_MS) % LED_SLOTS;
  return ((pattern >>> (LED_SLOTS - 1 - slot)) & 1) as 0 | 1;
}

export function linkPattern(active: boolean, level: number): number {
  if (!active) return 0;
  return LINK_PATTERNS[level >= 2 ? 2 : level <= 0 ? 0 : 1] as number;
}
