// The §10.4 table's rows as text, for people: the dashboard's counters and its congestion demo
// show which row fired. The decisions themselves always come from hub/shed.ts `shedDecide`;
// test/host/dashboard.test.ts holds each row's decision here against it.

export interface ShedRowText {
  readonly row: number;
  readonly condition: string;
  /** SHED_DECISION_NAME of the row's decision. */
  readonly decision: string;
  readonly note: string;
}

export const SHED_ROW_TEXT: readonly ShedRowText[] = Object.freeze(
  [
    { row: 1, condition: 'congestion level 0', decision: 'send', note: '' },
    { row: 2, condition: 'priority critical', decision: 'send', note: 'all levels, all classes: the never-shed set (§10.1)' },
    { row: 3, condition: 'first push since this grant', decision: 'send', note: '§9.1: never strand a session mid-adoption' },
    { row: 4, condition: 'segments-kind STREAM, level 1', decision: 'send', note: 'a shed segment is a lost command' },
    { row: 5, condition: 'segments-kind STREAM, level ≥ 2, priority elevated', decision: 'send', note: 'segments: whole source or nothing' },
    { row: 6, condition: 'segments-kind STREAM, level ≥ 2, priority background or normal', decision: 'drop_source', note: 'segments are never decimated' },
    { row: 7, condition: 'level 1, background, STREAM', decision: 'decimate4', note: 'newest-biased' },
    { row: 8, condition: 'level 1, background, STATE', decision: 'conflate', note: 'toward on-change only' },
    { row: 9, condition: 'level 1, background, other classes', decision: 'send', note: '' },
    { row: 10, condition: 'level 1, normal, STREAM', decision: 'decimate2', note: 'newest-biased' },
    { row: 11, condition: 'level 1, normal, other classes', decision: 'send', note: '' },
    { row: 12, condition: 'level 1, elevated', decision: 'send', note: '' },
    { row: 13, condition: 'level ≥ 2, background', decision: 'drop', note: '' },
    { row: 14, condition: 'level ≥ 2, normal', decision: 'decimate4', note: 'newest-biased' },
    { row: 15, condition: 'level ≥ 2, elevated', decision: 'decimate2', note: 'newest-biased' },
  ].map((r) => Object.freeze(r)),
);

/** Why the table treats the two stream kinds differently (§10.4, "the segment exception"). */
export const SEGMENT_EXCEPTION =
  'Dropped samples are recoverable by interpolation (timestamps bridge the gap), so a samples-kind stream is decimated, newest-biased. ' +
  'A shed segment is a permanently lost command, so a segments-kind stream is delivered whole or dropped whole source, never decimated (rows 4–6).';

/** The classes the §10.4 table tells apart, as the effect table's columns. */
export const EFFECT_CLASSES = Object.freeze(['STREAM samples', 'STREAM segments', 'STATE', 'EVENT'] as const);

/**
 * What the hub does with a push when the table answers `decision` for a channel of `cls`
 * (STREAM, STATE, EVENT, INTENT) and `kind` (samples, segments or null): hub/egress.ts's actions
 * in words. An EVENT is queued per subscriber (§9.4): only `drop` sheds it.
 */
export function decisionEffect(decision: string, cls: string, kind: string | null): string {
  const segments = cls === 'STREAM' && kind === 'segments';
  const event = cls === 'EVENT';
  switch (decision) {
    case 'send':
      return event ? 'queued and sent in full' : 'sent, at its granted rate';
    case 'decimate4':
    case 'decimate2': {
      const n = decision === 'decimate4' ? 4 : 2;
      if (event) return 'no effect: events are queued and sent in full; only drop sheds an event';
      if (segments) return 'never reached: rows 4–6 answer for segments, which are never decimated';
      if (cls === 'STATE') return `every ${n}th value sent (the newest), the rest dropped: the client holds the last value ${n}× longer`;
      return `every ${n}th push of the granted stream sent (the newest): delivered rate = grant ÷ ${n}`;
    }
    case 'conflate':
      return cls === 'STATE' ? 'sent only when its values change' : 'never reached: row 8 conflates STATE only';
    case 'drop':
      return event ? 'dropped and counted; the next delivered event carries the count' : segments ? 'never reached: rows 4–6 answer for segments' : 'not sent; the next push that goes out is fresh';
    case 'drop_source':
      return segments ? 'the whole source dropped; the next segment sent carries gap' : 'never reached: row 6 is for segments only';
    default:
      return '';
  }
}
