// The robot link's cost on the device (docs/performance.md "Fits the ESP32", docs/operations.md
// "The robot link"): the robot's telemetry reaching the hub as SAMPLE frames on the UART, and
// the joystick's commands leaving for the robot as PUBLISH frames, through device/robot-link.ts
// on XS. The mix (bench/device.bench.ts) hands the robot's samples to the hub and takes its
// publications directly; on the device each one also crosses this link, so the report adds it.
//
// What is counted: the link's own work. A received frame from its bytes to the hub's
// `publishSample` (the reader, the CRC, the catalog checks, the values read): the hub's side
// stands in for nothing and counts nothing (the mix counts the delivery). A publication from the
// hub's `publish` to the UART's `write` (the encoding, the CRC, the queue, the pump): the UART
// stand-in takes every byte. The robot's own encoding of its frames is done before the count.
// On Node meter() reads 0, and this only checks that it runs.
//
// Two codecs (device/robot-link.ts RobotCodec): the script one, and the device's, whose byte
// work (each frame's CRC, a sample's values) is C (device/native/robotframe.c). For the device's
// the call into the codec is counted and the work inside it is not (NativeCodecStandIn does the
// work in script with the meter paused): the C's own time is measured on this host
// (bench/native/native-host.c, scripts/lib/native-host.mjs) and added by the report, per byte
// of CRC and per value read, which `work` gives for each frame.

import { DEFAULT_CATALOG } from '../catalog/default.js';
import { loadCatalog } from '../catalog/index.js';
import { RobotFrameType, RobotInbound, RobotLink, ScriptRobotCodec, type RobotCodec, type RobotHub, type RobotTx } from '../device/robot-link.js';
import { crc16 } from '../hub/crc16.js';
import type { SampleBlock } from '../hub/ports.js';
import { JOYSTICK_HZ, meter, ROBOT_STREAMS } from './device.bench.js';

/** A hub that takes what the link hands it and does nothing with it (the mix counts the hub's side). */
export class NullHub implements RobotHub {
  samples = 0;
  publishSample(): void {
    this.samples++;
  }
  publishEvent(): void {}
  estop(): void {}
}

/** A UART whose FIFO always has room (the device's `Serial.write` is a native call). */
class OpenUart implements RobotTx {
  bytes = 0;
  room(): number {
    return 4096;
  }
  write(_buf: Uint8Array, start: number, end: number): boolean {
    this.bytes += end - start;
    return true;
  }
}

/** A SAMPLE frame as the robot sends it: channel, count, count × f32 little-endian, CRC. */
export function sampleFrame(channelId: number, values: readonly number[]): Uint8Array {
  const n = 2 + 4 * values.length;
  const b = new Uint8Array(n + 5);
  const dv = new DataView(b.buffer);
  b[0] = 0xa5;
  b[1] = RobotFrameType.SAMPLE;
  b[2] = n;
  b[3] = channelId;
  b[4] = values.length;
  for (let i = 0; i < values.length; i++) dv.setFloat32(5 + 4 * i, values[i] as number, true);
  const crc = crc16(b, 1, 3 + n);
  b[3 + n] = crc >>> 8;
  b[4 + n] = crc & 0xff;
  return b;
}

/**
 * The device's codec as the bench counts it: the call into it counts, the byte work inside does
 * not (it is C on the device, timed on the host instead). The work runs in script between two
 * reads of the meter; what was counted before it is carried (`carried`), what it costs is not.
 */
export class NativeCodecStandIn implements RobotCodec {
  carried = 0;
  calls = 0;
  private readonly inner = new ScriptRobotCodec();
  crc16(bytes: Uint8Array, start: number, end: number, crc: number): number {
    this.carried += meter();
    this.calls++;
    const r = this.inner.crc16(bytes, start, end, crc);
    meter();
    return r;
  }
  crc16Copy(src: Uint8Array, from: number, dst: Uint8Array, at: number, n: number, crc: number): number {
    this.carried += meter();
    this.calls++;
    const r = this.inner.crc16Copy(src, from, dst, at, n, crc);
    meter();
    return r;
  }
  floats32(bytes: Uint8Array, at: number, count: number, out: Uint8Array): void {
    this.carried += meter();
    this.calls++;
    this.inner.floats32(bytes, at, count, out);
    meter();
  }
  /** The meter's reading since it was last read, with what was carried, which it clears. */
  take(): number {
    const c = meter() + this.carried;
    this.carried = 0;
    return c;
  }
}

/** The C's work per frame: bytes its CRC covers (type, length, payload) and values it reads. */
export interface FrameWork {
  readonly crcBytes: number;
  readonly values: number;
}

export interface RobotLinkCost {
  /** Computrons per SAMPLE frame received, by stream (the default streams, bench/device.bench.ts ROBOT_STREAMS). */
  readonly perSample: Record<string, number>;
  /** Computrons per PUBLISH frame sent (one cmd_vel sample [t, v, w]). */
  readonly perPublish: number;
  /** The default streams at their rates and the joystick's cmd_vel at JOYSTICK_HZ, per second. */
  readonly perSecond: { readonly inbound: number; readonly outbound: number; readonly total: number };
  readonly frames: number;
  /** Which codec: 'script', or 'device' (the byte work left out, see `work`). */
  readonly codec: 'script' | 'device';
  /** The byte work in each frame, by stream and for a publication (what the device's C does). */
  readonly work: { readonly perSample: Record<string, FrameWork>; readonly perPublish: FrameWork };
  /** Frames a second at the default rates, by stream and of publications (what perSecond weighs by). */
  readonly hz: { readonly perSample: Record<string, number>; readonly publish: number };
  /** Codec calls per frame, by stream and for a publication. */
  readonly codecCalls: { readonly perSample: Record<string, number>; readonly perPublish: number };
}

/** Computrons of the robot link per frame, each the mean over `n` frames; `codec` 'device': the device's codec, its byte work left out. */
export function robotLinkCost(n = 200, codec: 'script' | 'device' = 'script'): RobotLinkCost {
  const catalog = loadCatalog(DEFAULT_CATALOG);
  const hub = new NullHub();
  const standIn = codec === 'device' ? new NativeCodecStandIn() : null;
  const take = standIn === null ? meter : (): number => standIn.take();
  const inbound = new RobotInbound(hub, catalog, { now: () => 0 }, standIn ?? undefined);
  const perSample: Record<string, number> = {};
  const work: Record<string, FrameWork> = {};
  const calls: Record<string, number> = {};
  let inboundPerSecond = 0;
  for (const s of ROBOT_STREAMS) {
    const ch = catalog.byName(s.channel);
    if (!ch) throw new Error(`bench: no channel ${s.channel}`);
    const values: number[] = [];
    for (let i = 0; i < s.fields; i++) values.push(Math.fround(0.5 + 0.37 * i));
    const frame = sampleFrame(ch.id, values);
    inbound.input(frame, 0, frame.length);
    const calls0 = standIn?.calls ?? 0;
    take();
    for (let i = 0; i < n; i++) inbound.input(frame, 0, frame.length);
    const c = take() / n;
    perSample[s.channel] = c;
    work[s.channel] = { crcBytes: frame.length - 3, values: s.fields };
    calls[s.channel] = ((standIn?.calls ?? 0) - calls0) / n;
    inboundPerSecond += c * s.hz;
  }
  if (hub.samples !== ROBOT_STREAMS.length * (n + 1)) throw new Error(`bench: the robot link handed the hub ${hub.samples} samples`);
  const uart = new OpenUart();
  const link = new RobotLink({ line: { set: () => undefined }, tx: uart, codec: standIn ?? undefined });
  const cmdVel = catalog.byName('cmd_vel');
  if (!cmdVel) throw new Error('bench: no cmd_vel');
  const block: SampleBlock = { count: 1, width: 3, numbers: new Float64Array([1234, 0.2, 0.1]) };
  link.publish(cmdVel.id, block);
  const pubCalls0 = standIn?.calls ?? 0;
  take();
  for (let i = 0; i < n; i++) link.publish(cmdVel.id, block);
  const perPublish = take() / n;
  const pubCalls = ((standIn?.calls ?? 0) - pubCalls0) / n;
  if (link.counters.published !== n + 1) throw new Error(`bench: the robot link sent ${link.counters.published} publications`);
  const outbound = perPublish * JOYSTICK_HZ;
  // A PUBLISH frame's CRC covers its type, length, channel, count, t (f64) and the values (f32).
  const perPublishWork: FrameWork = { crcBytes: 2 + 2 + 8 + 4 * (block.width - 1), values: 0 };
  return {
    perSample,
    perPublish,
    perSecond: { inbound: inboundPerSecond, outbound, total: inboundPerSecond + outbound },
    frames: hub.samples + link.counters.published,
    codec,
    work: { perSample: work, perPublish: perPublishWork },
    hz: { perSample: Object.fromEntries(ROBOT_STREAMS.map((x) => [x.channel, x.hz])), publish: JOYSTICK_HZ },
    codecCalls: { perSample: calls, perPublish: pubCalls },
  };
}
