// The world a bench hub runs in: a clock the bench steps, fixed randomness, an empty store,
// a robot that does nothing, and a lean link whose `send` copies the frame into a ring sized
// at construction and forgets it, so that a route bench measures the hub and one byte copy
// per delivery, not a test double that keeps what it receives.
import { AckForm, type Clock, type GrantSet, type Link, type LinkCaps, type LinkEstimate, type Random, type RobotPort, type SampleBlock, type Store } from '../hub/ports.js';

export class BenchClock implements Clock {
  t = 1000;
  now(): number {
    return this.t;
  }
}

/** Deterministic bytes: a resume token need not be secret in a bench. */
export class BenchRandom implements Random {
  private x = 0x2545f491;
  fill(into: Uint8Array): void {
    for (let i = 0; i < into.length; i++) {
      let x = this.x;
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      this.x = x >>> 0;
      into[i] = x & 0xff;
    }
  }
}

export class EmptyStore implements Store {
  get(_key: string): Uint8Array | undefined {
    return undefined;
  }
  set(_key: string, _value: Uint8Array): void {}
  delete(_key: string): void {}
}

export class IdleRobot implements RobotPort {
  stop(_source: number): void {}
  release(): void {}
  publish(_channelId: number, _samples: SampleBlock): void {}
  intent(_channelId: number, _args: readonly (number | string)[]): number {
    return 0;
  }
}

const NO_ESTIMATE: LinkEstimate = Object.freeze({ throughputBps: 0, rttMs: 0 });

export class LeanLink implements Link {
  readonly caps: LinkCaps;
  level = 0;
  /** Frames and bytes handed to `send` (every frame type). */
  frames = 0;
  bytes = 0;
  closed = false;
  private readonly ring: Uint8Array;
  private pos = 0;

  constructor(ringBytes = 4096, mtu = 1024) {
    this.ring = new Uint8Array(ringBytes);
    this.caps = Object.freeze({ binding: 'bench', broadcast: false, datagram: false, mtu, writeAheadSlots: 4, ackForm: AckForm.STREAM });
  }

  /** The copy every binding makes: the core hands exact frames, taken with one native copy. */
  send(frame: Uint8Array, _tag: number, _seq: number): boolean {
    if (this.closed) return false;
    const ring = this.ring;
    const length = frame.length;
    let p = this.pos;
    if (p + length > ring.length) p = 0;
    ring.set(frame, p);
    this.pos = p + length;
    this.frames++;
    this.bytes += length;
    return true;
  }
  writeAhead(_frame: Uint8Array): void {}
  /** A protected link: its sessions get the tier their credential gives. */
  tierCeiling(): number {
    return 2;
  }
  acked(_count: number): void {}
  granted(_grants: GrantSet): void {}
  estimate(): LinkEstimate {
    return NO_ESTIMATE;
  }
  occupancy(): number {
    return 0;
  }
  stalledMs(): number {
    return 0;
  }
  ackLag(): number {
    return 0;
  }
  lossRate(): number {
    return NaN;
  }
  close(): void {
    this.closed = true;
  }
}
