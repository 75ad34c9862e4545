// What the dashboard's server and page say to each other over the WebSocket at /ws: JSON text
// messages. Types only; the page and the server both import them.

export interface ChannelMeta {
  readonly id: number;
  readonly name: string;
  /** STREAM, STATE, EVENT or INTENT. */
  readonly cls: string;
  readonly clsCode: number;
  /** samples, segments, or null when not a STREAM. */
  readonly kind: string | null;
  readonly kindCode: number;
  readonly priority: string;
  readonly critical: boolean;
  readonly telemetry: boolean;
  readonly fields: readonly string[];
  readonly units: readonly string[];
}

export interface ClientMeta {
  readonly name: string;
  readonly role: string;
  readonly link: string;
  readonly binding: string;
}

/** Server → page, once per connection and again after a restart. */
export interface HelloMsg {
  readonly type: 'hello';
  readonly scenario: { readonly name: string; readonly description: string; readonly seed: number; readonly durationMs: number };
  readonly channels: readonly ChannelMeta[];
  readonly clients: readonly ClientMeta[];
  /** Loopback endpoints for external clients; null with --no-external. */
  readonly external: { readonly tcp: string; readonly ws: string } | null;
  /** Plot window, seconds of simulated time. */
  readonly windowS: number;
  readonly run: number;
  /** The recent hub log and scenario events, oldest first. */
  readonly log: readonly LogLine[];
  /** This page's control secret (over /ws only): every control message carries it back. */
  readonly secret?: string;
}

/** Server → page: a control message without this page's secret was not carried out. */
export interface RefusedMsg {
  readonly type: 'refused';
  readonly command: string;
  readonly reason: string;
}

export interface SubMsg {
  readonly channel: number;
  readonly wishHz: number;
  readonly grantedHz: number;
  /** Granted priority code (§10.1). */
  readonly priority: number;
}

export interface SessionMsg {
  readonly id: number;
  /** The simulated client that owns it, or null: an external client. */
  readonly client: string | null;
  readonly state: string;
  readonly tier: string;
  readonly binding: string;
  /** The congestion level the hub reads from the session's link now (§10.3). */
  readonly level: number;
  readonly owner: boolean;
  readonly subs: readonly SubMsg[];
  /** GRANTs this session's client has received, and the last one's simulated time (ms); simulated clients only. */
  readonly grants: number;
  readonly lastGrantMs: number | null;
}

/** A hub log record or scenario event: [sequence, tMs, text]. */
export type LogLine = readonly [number, number, string];

/** One sample: [t (hub ms), ...values]; a delivered one is [t, gap (0/1), ...values]. */
export type Sample = readonly number[];

/** One hub of the site as the broker shows it (the fleet view, docs/fleet.md; `npm start -- --broker`). */
export interface FleetEntryMsg {
  readonly id: string;
  /** `online`, `offline` (the will, or a clean stop), `?` before its status is heard. */
  readonly status: string;
  readonly latched: boolean | null;
  readonly source: string | null;
  readonly sessions: number | null;
  readonly estops: number | null;
  readonly uplinkLevel: number | null;
  readonly heardMsAgo: number;
}

export interface StateMsg {
  readonly type: 'state';
  readonly run: number;
  readonly simMs: number;
  /** The scenario's scripted part is over; the simulation runs on freely. */
  readonly scriptEnded: boolean;
  readonly robot: {
    readonly stopped: boolean;
    readonly stops: number;
    readonly x: number;
    readonly y: number;
    readonly theta: number;
    readonly v: number;
    readonly w: number;
  };
  readonly latch: {
    readonly latched: boolean;
    /** §11.2: false from a latch until the control owner's arm. */
    readonly armed: boolean;
    readonly source: string;
    readonly button: boolean;
    /** The simulated client whose ESTOP latched it (source `client`), when known; null otherwise. */
    readonly by: string | null;
    readonly ownerSession: number;
    /** A simulated client that owns control and could clear, or null. */
    readonly clearer: string | null;
  };
  /** Pushes by table row, index 1..15 (index 0 unused). */
  readonly rows: readonly number[];
  /** The hub's health (docs/operations.md "Health, admission and overload"): ladder rung, admission, the metrics v1 report. */
  readonly health: { readonly rung: number; readonly ready: boolean; readonly report: unknown };
  readonly totals: Readonly<Record<string, number>>;
  readonly sessions: readonly SessionMsg[];
  /** The level the dashboard forces onto every link, or null. */
  readonly forced: number | null;
  /** New raw samples since the last message, by channel id (only watched channels). */
  readonly raw: Readonly<Record<string, readonly Sample[]>>;
  /** New delivered samples by client then channel id: [t, gap (0/1), ...values]. */
  readonly delivered: Readonly<Record<string, Readonly<Record<string, readonly Sample[]>>>>;
  /** New hub log records and scenario events. */
  readonly log: readonly LogLine[];
  /** Every hub of the site on the broker (`npm start -- --broker`); null without a broker. */
  readonly fleet?: readonly FleetEntryMsg[] | null;
}

export type ServerMsg = HelloMsg | StateMsg | RefusedMsg;

/** Page → server. Every message but `watch` carries `secret`, the page's control secret from its hello. */
export type PageMsg =
  | { readonly type: 'watch'; readonly channels: readonly number[] }
  | { readonly type: 'estop'; readonly secret?: string }
  | { readonly type: 'clear'; readonly secret?: string }
  | { readonly type: 'arm'; readonly secret?: string }
  | { readonly type: 'force'; readonly level: number | null; readonly secret?: string }
  | { readonly type: 'restart'; readonly secret?: string };
