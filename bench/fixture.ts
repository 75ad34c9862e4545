// The world a bench hub runs in: a clock the bench steps, fixed randomness, an empty store,
// a robot that does nothing, and a lean link whose `send` copies the frame into a ring sized
// at construction and forgets it, so that a route bench measures the hub and one byte copy
// per delivery, not a test double that keeps what it receives.
import type { Clock, Link, LinkEstimate, Random, RobotPort, Store } from '../hub/ports.js';

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
  publish(_channelId: number, _samples: readonly (readonly number[])[]): void {}
  intent(_channelId: number, _args: readonly (number | string)[]): number {
    return 0;
  }
}

const NO_ESTIMATE: LinkEstimate = Object.freeze({ throughputBps: 0, rttMs: 0 });

export class LeanLink implements Link {
  readonly binding = 'bench';
  readonly mtu: number;
  readonly broadcast = false;
  lvl = 0;
  /** Frames and bytes handed to `send` (every frame type). */
  frames = 0;
  bytes = 0;
  closed = false;
  private readonly ring: Uint8Array;
  private pos = 0;

  constructor(ringBytes = 4096, mtu = 1024) {
    this.ring = new Uint8Array(ringBytes);
    this.mtu = mtu;
  }

  canSend(_length: number): boolean {
    return !this.closed;
  }
  send(frame: Uint8Array, length: number): void {
    const ring = this.ring;
    let p = this.pos;
    if (p + length > ring.length) p = 0;
    // A byte loop: `ring.set(frame.subarray(...))` would allocate a view per frame.
    for (let i = 0; i < length; i++) ring[p + i] = frame[i] as number;
    this.pos = p + length;
    this.frames++;
    this.bytes += length;
  }
  writeAhead(_frame: Uint8Array): void {}
  level(): number {
    return this.lvl;
  }
  estimate(): LinkEstimate {
    return NO_ESTIMATE;
  }
  occupancy(): number {
    return 0;
  }
  stalledMs(): number {
    return 0;
  }
  close(): void {
    this.closed = true;
  }
}
