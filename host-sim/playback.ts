// Recorded telemetry played back through the simulated hub (`hubctl replay`, docs/tools.md): each
// sample enters the hub at its recorded offset from the start of the recording, exactly as the
// robot's own samples do (Hub.publishSample for streams and states, Hub.publishEvent for events),
// stamped with the hub's clock at that instant. The hub then grants, sheds and delivers them to
// the scenario's clients and to external ones like anything else. The hub's own channels (safety,
// safety-events, control-owner) are never played back: the simulated hub states its own.

import type { CatalogIndex } from '../catalog/index.js';
import { ChannelClass, Direction, REQUIRED_CRITICAL_CHANNELS } from '../catalog/schema.js';
import type { Hub } from '../hub/hub.js';
import { type Kernel, type Task, US_PER_MS } from './kernel.js';

/** One recorded sample: when (ms after the playback starts), which channel, its values. */
export interface PlaybackSample {
  readonly atMs: number;
  readonly channelId: number;
  readonly values: readonly number[];
  readonly text?: string;
}

/** Whether `channelId` is telemetry the robot side publishes, so that a recording may replay it. */
export function playable(catalog: CatalogIndex, channelId: number): boolean {
  const info = catalog.byId(channelId);
  if (info === undefined || info.direction !== Direction.telemetry) return false;
  return !(REQUIRED_CRITICAL_CHANNELS as readonly string[]).includes(info.name);
}

/** The pause between the end of a recording and its next pass, when it repeats. */
export const PLAYBACK_REPEAT_PAUSE_MS = 1000;

export interface PlaybackOptions {
  readonly samples: readonly PlaybackSample[];
  /** Play the recording again after each pass, PLAYBACK_REPEAT_PAUSE_MS after its last sample. */
  readonly repeat?: boolean;
}

/** Publishes the samples (in `atMs` order) into the hub; one kernel event per instant. */
export class Playback implements Task {
  /** Samples published so far. */
  published = 0;
  /** Passes begun. */
  passes = 0;
  private next = 0;
  /** The kernel time of the pass's `atMs` 0, µs. */
  private baseUs = 0;
  private readonly v64 = new Float64Array(32);
  private readonly samples: readonly PlaybackSample[];

  constructor(
    private readonly kernel: Kernel,
    private readonly hub: Hub,
    private readonly catalog: CatalogIndex,
    private readonly options: PlaybackOptions,
  ) {
    this.samples = options.samples;
  }

  start(): void {
    this.passes = 1;
    this.schedule();
  }

  private dueUs(s: PlaybackSample): number {
    return this.baseUs + s.atMs * US_PER_MS;
  }

  private schedule(): void {
    let s = this.samples[this.next];
    if (s === undefined && this.options.repeat === true && this.samples.length > 0) {
      const first = this.samples[0] as PlaybackSample;
      this.next = 0;
      this.baseUs = this.kernel.nowUs + PLAYBACK_REPEAT_PAUSE_MS * US_PER_MS - first.atMs * US_PER_MS;
      this.passes++;
      s = first;
    }
    if (s !== undefined) this.kernel.at(Math.max(this.kernel.nowUs, this.dueUs(s)), this, 0);
  }

  run(): void {
    // Every sample due now goes in this event, in order.
    for (;;) {
      const s = this.samples[this.next];
      if (s === undefined || this.dueUs(s) > this.kernel.nowUs) break;
      this.next++;
      this.publish(s);
    }
    this.schedule();
  }

  private publish(s: PlaybackSample): void {
    const info = this.catalog.byId(s.channelId);
    if (info === undefined || !playable(this.catalog, s.channelId)) return;
    const t = Math.floor(this.kernel.nowUs / US_PER_MS);
    if (info.cls === ChannelClass.EVENT) {
      this.hub.publishEvent(s.channelId, t, s.values.slice(0, info.fieldCount), s.text);
    } else {
      const n = Math.min(s.values.length, info.fieldCount, this.v64.length);
      for (let i = 0; i < n; i++) this.v64[i] = s.values[i] as number;
      this.hub.publishSample(s.channelId, t, this.v64, n);
    }
    this.published++;
  }
}
