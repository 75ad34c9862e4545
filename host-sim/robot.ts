// The simulated robot: a differential-drive base with a six-joint arm, behind the hub's RobotPort.
// It streams the default catalog's telemetry (imu 200 Hz, odom 50 Hz, joint_states 50 Hz,
// battery 1 Hz, scan 10 Hz, the path segments of the trajectory it executes, log and fault
// events), executes cmd_vel and trajectory segments, and stops at once on RobotPort.stop (ESTOP),
// reporting it as a fault. Values are float32 (sensor words) so DATA frames carry 5-byte floats.
// Every sample is stamped with the hub's clock at the instant it is produced; every random
// choice comes from the kernel's PRNG.

import type { CatalogIndex } from '../catalog/index.js';
import type { Hub } from '../hub/hub.js';
import type { RobotPort, SampleBlock } from '../hub/ports.js';
import { type Kernel, type Task, US_PER_MS } from './kernel.js';

export interface RobotParams {
  readonly imuHz: number;
  readonly odomHz: number;
  readonly jointHz: number;
  readonly batteryHz: number;
  readonly scanHz: number;
  /** A cmd_vel older than this no longer drives the base (the robot core's own watchdog). */
  readonly cmdVelTimeoutMs: number;
  /** Mean interval between log events (exponential); 0: none. */
  readonly logMeanMs: number;
  /** Mean interval between spontaneous faults (exponential); 0: none. */
  readonly faultMeanMs: number;
  /** Segments the robot keeps queued at most; more are refused (counted, not executed). */
  readonly maxQueuedSegments: number;
}

export const ROBOT_DEFAULTS: RobotParams = Object.freeze({
  imuHz: 200,
  odomHz: 50,
  jointHz: 50,
  batteryHz: 1,
  scanHz: 10,
  cmdVelTimeoutMs: 250,
  logMeanMs: 1000,
  faultMeanMs: 0,
  maxQueuedSegments: 64,
});

const IMU = 1;
const ODOM = 2;
const JOINT = 3;
const BATTERY = 4;
const SCAN = 5;
const LOG = 6;
const FAULT = 7;

// Fault codes the robot reports on `fault` (code, severity, active).
export const RobotFault = Object.freeze({ ESTOP: 100, CMD_TIMEOUT: 2, BATTERY_LOW: 10, MOTOR_TEMP: 20 } as const);

const ROOM_HALF_M = 5;
const MAX_ACCEL = 1.5; // m/s²
const MAX_ALPHA = 3; // rad/s²

interface Segment {
  tStart: number;
  duration: number;
  x: number;
  y: number;
  theta: number;
  v: number;
}

export class RobotStats {
  stops = 0;
  releases = 0;
  readonly stopTimesMs: number[] = [];
  readonly stopSources: number[] = [];
  cmdVelApplied = 0;
  segmentsAccepted = 0;
  segmentsRefused = 0;
  intents = 0;
  /** Motion commands the robot received while stopped by ESTOP: the hub must refuse them all. */
  motionWhileStopped = 0;
  pathPublished = 0;
  /** When each trajectory segment reached the robot (ms). */
  readonly segmentTimesMs: number[] = [];

  /** The most segments that reached the robot within any one second (§10.5: at most burst + rate). */
  maxSegmentsPerSecond(): number {
    const t = this.segmentTimesMs;
    let best = 0;
    let lo = 0;
    for (let hi = 0; hi < t.length; hi++) {
      while ((t[hi] as number) - (t[lo] as number) >= 1000) lo++;
      if (hi - lo + 1 > best) best = hi - lo + 1;
    }
    return best;
  }
}

export class SimRobot implements RobotPort, Task {
  readonly params: RobotParams;
  readonly stats = new RobotStats();
  private hub: Hub | null = null;
  private readonly v64 = new Float64Array(16);
  private readonly periods = new Float64Array(8);
  private readonly next = new Float64Array(8);
  // Base state.
  private x = 0;
  private y = 0;
  private theta = 0;
  private v = 0;
  private w = 0;
  private lastAccel = 0;
  private cmdV = 0;
  private cmdW = 0;
  private cmdAtUs = -Infinity;
  private armed = false;
  private stopped = false;
  private mode = 0;
  private readonly joints = new Float64Array(6);
  private battery = 25.2;
  private readonly segments: Segment[] = [];
  private segmentEndUs = 0;
  private current: Segment | null = null;
  private timeoutReported = false;
  private lowReported = false;
  private readonly ids: { imu: number; odom: number; joint: number; battery: number; scan: number; path: number; log: number; fault: number; cmdVel: number; trajectory: number; arm: number; disarm: number; setMode: number; goHome: number };

  constructor(
    private readonly kernel: Kernel,
    catalog: CatalogIndex,
    params: Partial<RobotParams> = {},
  ) {
    this.params = Object.freeze({ ...ROBOT_DEFAULTS, ...params });
    const id = (name: string): number => catalog.byName(name)?.id ?? 0;
    this.ids = {
      imu: id('imu'),
      odom: id('odom'),
      joint: id('joint_states'),
      battery: id('battery'),
      scan: id('scan'),
      path: id('path'),
      log: id('log'),
      fault: id('fault'),
      cmdVel: id('cmd_vel'),
      trajectory: id('trajectory'),
      arm: id('arm'),
      disarm: id('disarm'),
      setMode: id('set_mode'),
      goHome: id('go_home'),
    };
  }

  /** Connects the robot's telemetry to the hub and starts its streams. */
  start(hub: Hub): void {
    this.hub = hub;
    const p = this.params;
    const rates = [0, p.imuHz, p.odomHz, p.jointHz, p.batteryHz, p.scanHz];
    for (let k = IMU; k <= SCAN; k++) {
      const hz = rates[k] as number;
      if (!(hz > 0)) continue;
      this.periods[k] = (1000 / hz) * US_PER_MS;
      // Streams start on the next whole millisecond grid point of their period.
      this.next[k] = this.kernel.nowUs + (this.periods[k] as number);
      this.kernel.at(this.next[k] as number, this, k);
    }
    if (p.logMeanMs > 0) this.kernel.after(this.kernel.rng.exp(p.logMeanMs) * US_PER_MS, this, LOG);
    if (p.faultMeanMs > 0) this.kernel.after(this.kernel.rng.exp(p.faultMeanMs) * US_PER_MS, this, FAULT);
  }

  get isStopped(): boolean {
    return this.stopped;
  }

  get pose(): { x: number; y: number; theta: number; v: number; w: number } {
    return { x: this.x, y: this.y, theta: this.theta, v: this.v, w: this.w };
  }

  private nowMs(): number {
    return Math.floor(this.kernel.nowUs / US_PER_MS);
  }

  run(kind: number): void {
    const hub = this.hub;
    if (!hub) return;
    if (kind >= IMU && kind <= SCAN) {
      this.next[kind] = (this.next[kind] as number) + (this.periods[kind] as number);
      this.kernel.at(Math.round(this.next[kind] as number), this, kind);
    }
    const v = this.v64;
    const rng = this.kernel.rng;
    const t = this.nowMs();
    switch (kind) {
      case IMU: {
        this.step(this.periods[IMU] as number);
        v[0] = f32(this.lastAccel + 0.02 * rng.normal());
        v[1] = f32(this.v * this.w + 0.02 * rng.normal());
        v[2] = f32(9.81 + 0.02 * rng.normal());
        v[3] = f32(0.002 * rng.normal());
        v[4] = f32(0.002 * rng.normal());
        v[5] = f32(this.w + 0.002 * rng.normal());
        hub.publishSample(this.ids.imu, t, v, 6);
        return;
      }
      case ODOM:
        v[0] = f32(this.x);
        v[1] = f32(this.y);
        v[2] = f32(this.theta);
        v[3] = f32(this.v);
        v[4] = f32(this.w);
        hub.publishSample(this.ids.odom, t, v, 5);
        return;
      case JOINT: {
        // The arm moves only while armed and running; at rest its encoders read constant values,
        // which is what lets a conflating subscriber skip them (§10.4 row 8).
        if (this.armed && !this.stopped) {
          const s = t / 1000;
          for (let j = 0; j < 6; j++) this.joints[j] = f32(0.4 * Math.sin(0.3 * s + j));
        }
        for (let j = 0; j < 6; j++) v[j] = this.joints[j] as number;
        hub.publishSample(this.ids.joint, t, v, 6);
        return;
      }
      case BATTERY: {
        const draw = 0.0004 + 0.002 * Math.abs(this.v);
        this.battery = Math.max(19, this.battery - draw);
        v[0] = Math.round(this.battery * 100) / 100;
        v[1] = Math.round(((this.battery - 19) / (25.2 - 19)) * 100);
        hub.publishSample(this.ids.battery, t, v, 2);
        if (v[1] < 20 && !this.lowReported) {
          this.lowReported = true;
          hub.publishEvent(this.ids.fault, t, [RobotFault.BATTERY_LOW, 2, 1], 'battery low');
        }
        return;
      }
      case SCAN: {
        for (let k = 0; k < 16; k++) v[k] = f32(this.range(this.theta + (k * Math.PI) / 8) + 0.01 * rng.normal());
        hub.publishSample(this.ids.scan, t, v, 16);
        return;
      }
      case LOG:
        this.kernel.after(rng.exp(this.params.logMeanMs) * US_PER_MS, this, LOG);
        hub.publishEvent(this.ids.log, t, [rng.int(3), 1000 + rng.int(50)], 'tick');
        return;
      case FAULT:
        this.kernel.after(rng.exp(this.params.faultMeanMs) * US_PER_MS, this, FAULT);
        hub.publishEvent(this.ids.fault, t, [RobotFault.MOTOR_TEMP, 1, 1], 'motor warm');
        return;
    }
  }

  /** Integrates the base over `dtUs`: commands, then acceleration limits, then the pose. */
  private step(dtUs: number): void {
    const dt = dtUs / 1e6;
    const now = this.kernel.nowUs;
    let tv = 0;
    let tw = 0;
    if (!this.stopped && this.armed) {
      if (now - this.cmdAtUs <= this.params.cmdVelTimeoutMs * US_PER_MS) {
        tv = this.cmdV;
        tw = this.cmdW;
        this.timeoutReported = false;
      } else {
        if (this.cmdAtUs > 0 && !this.timeoutReported && this.hub && this.current === null) {
          this.timeoutReported = true;
          this.hub.publishEvent(this.ids.fault, this.nowMs(), [RobotFault.CMD_TIMEOUT, 1, 1], 'cmd_vel timeout');
        }
        const seg = this.advanceTrajectory(now);
        if (seg) {
          tv = seg.v;
          tw = clamp(angleDiff(seg.theta, this.theta) * 2, -1, 1);
        }
      }
    }
    const prevV = this.v;
    if (this.stopped) {
      // ESTOP: the drives stop at once.
      this.v = 0;
      this.w = 0;
    } else {
      this.v += clamp(tv - this.v, -MAX_ACCEL * dt, MAX_ACCEL * dt);
      this.w += clamp(tw - this.w, -MAX_ALPHA * dt, MAX_ALPHA * dt);
    }
    this.lastAccel = (this.v - prevV) / dt;
    this.theta = wrap(this.theta + this.w * dt);
    this.x = clamp(this.x + this.v * Math.cos(this.theta) * dt, -ROOM_HALF_M + 0.3, ROOM_HALF_M - 0.3);
    this.y = clamp(this.y + this.v * Math.sin(this.theta) * dt, -ROOM_HALF_M + 0.3, ROOM_HALF_M - 0.3);
  }

  private advanceTrajectory(nowUs: number): Segment | null {
    while (this.current === null || nowUs >= this.segmentEndUs) {
      const s = this.segments.shift();
      if (!s) {
        this.current = null;
        return null;
      }
      this.current = s;
      this.segmentEndUs = nowUs + Math.max(0.05, s.duration) * 1e6;
    }
    return this.current;
  }

  /** Distance from the pose to the room's walls along `bearing`. */
  private range(bearing: number): number {
    const c = Math.cos(bearing);
    const s = Math.sin(bearing);
    let d = 12;
    if (c > 1e-6) d = Math.min(d, (ROOM_HALF_M - this.x) / c);
    if (c < -1e-6) d = Math.min(d, (-ROOM_HALF_M - this.x) / c);
    if (s > 1e-6) d = Math.min(d, (ROOM_HALF_M - this.y) / s);
    if (s < -1e-6) d = Math.min(d, (-ROOM_HALF_M - this.y) / s);
    return d;
  }

  // ---------------------------------------------------------------- RobotPort

  stop(source: number): void {
    const first = !this.stopped;
    this.stopped = true;
    this.v = 0;
    this.w = 0;
    this.cmdV = 0;
    this.cmdW = 0;
    this.segments.length = 0;
    this.current = null;
    if (!first) return;
    this.stats.stops++;
    this.stats.stopTimesMs.push(this.kernel.nowUs / US_PER_MS);
    this.stats.stopSources.push(source);
    // The robot reports the stop; the hub is mid-latch, so the report waits for the next instant.
    const hub = this.hub;
    if (hub) this.kernel.timeout(0, () => hub.publishEvent(this.ids.fault, this.nowMs(), [RobotFault.ESTOP, 3, 1], 'estop'));
  }

  release(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.stats.releases++;
    const hub = this.hub;
    if (hub) this.kernel.timeout(0, () => hub.publishEvent(this.ids.fault, this.nowMs(), [RobotFault.ESTOP, 3, 0], 'estop cleared'));
  }

  publish(channelId: number, samples: SampleBlock): void {
    if (this.stopped) this.stats.motionWhileStopped++;
    const w = samples.width;
    const x = samples.numbers;
    if (channelId === this.ids.cmdVel) {
      if (samples.count < 1) return;
      const last = (samples.count - 1) * w;
      this.cmdV = clamp(w > 1 ? (x[last + 1] as number) : 0, -1.5, 1.5);
      this.cmdW = clamp(w > 2 ? (x[last + 2] as number) : 0, -2, 2);
      this.cmdAtUs = this.kernel.nowUs;
      this.stats.cmdVelApplied++;
    } else if (channelId === this.ids.trajectory) {
      for (let i = 0; i < samples.count; i++) this.acceptSegment(Array.from(x.subarray(i * w, i * w + w)));
    }
  }

  private acceptSegment(s: readonly number[]): void {
    if (this.segments.length >= this.params.maxQueuedSegments) {
      this.stats.segmentTimesMs.push(this.kernel.nowUs / US_PER_MS);
      this.stats.segmentsRefused++;
      return;
    }
    const seg: Segment = { tStart: s[1] ?? 0, duration: s[2] ?? 0, x: s[3] ?? 0, y: s[4] ?? 0, theta: s[5] ?? 0, v: s[6] ?? 0 };
    this.segments.push(seg);
    this.stats.segmentsAccepted++;
    this.stats.segmentTimesMs.push(this.kernel.nowUs / US_PER_MS);
    // The accepted plan is relayed on `path` (a segments stream, §10.4 rows 4–6).
    const hub = this.hub;
    if (hub && this.ids.path) {
      const v = this.v64;
      v[0] = f32(seg.tStart);
      v[1] = f32(seg.duration);
      v[2] = f32(seg.x);
      v[3] = f32(seg.y);
      v[4] = f32(seg.theta);
      v[5] = f32(seg.v);
      this.stats.pathPublished++;
      hub.publishSample(this.ids.path, this.nowMs(), v, 6);
    }
  }

  intent(channelId: number, args: readonly (number | string)[]): number {
    this.stats.intents++;
    if (channelId === this.ids.arm) {
      if (this.stopped) this.stats.motionWhileStopped++;
      this.armed = true;
    } else if (channelId === this.ids.disarm) {
      this.armed = false;
    } else if (channelId === this.ids.setMode) {
      if (this.stopped) this.stats.motionWhileStopped++;
      const m = args[0];
      this.mode = typeof m === 'number' ? m : 0;
    } else if (channelId === this.ids.goHome) {
      if (this.stopped) this.stats.motionWhileStopped++;
      this.segments.length = 0;
      this.segments.push({ tStart: 0, duration: 2, x: 0, y: 0, theta: Math.atan2(-this.y, -this.x), v: 0.3 });
    }
    return 0;
  }

  get currentMode(): number {
    return this.mode;
  }
}

function f32(x: number): number {
  return Math.fround(x);
}

function clamp(x: number, lo: number, hi: number): number {
  return x < lo ? lo : x > hi ? hi : x;
}

function wrap(a: number): number {
  while (a > Math.PI) a -= 2 * Math.PI;
  while (a < -Math.PI) a += 2 * Math.PI;
  return a;
}

function angleDiff(a: number, b: number): number {
  return wrap(a - b);
}
