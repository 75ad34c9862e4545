// The hub's side of the robot's real-time core (README.md, hub/ports.ts RobotPort): a stop line
// and a small serial framing. Platform-free: device/robot.ts binds the line to a GPIO output
// and the byte stream to a UART; the host tests bind them to arrays.
//
// The stop line is the safety path. `stop()` drives it before anything else and never waits
// for the UART, the queue or the robot's answer; the serial STOP frame that follows only tells
// the robot's software why. Everything else (publications, intents, telemetry) rides the UART.
//
// Frame, both directions (docs/operations.md "The robot link"):
//   0      0xA5 sync
//   1      type
//   2      n, payload length 0..255
//   3..    payload (multi-byte numbers little-endian, as the robot's MCU stores them)
//   3+n    CRC-16/CCITT-FALSE (hub/crc16.ts) over bytes 1 .. 2+n, big-endian
// Hub → robot: STOP [source u8], RELEASE [], PUBLISH [channel u8, count u8, t f64, count × f32]
// (one frame per sample of a bundle), INTENT [channel u8, argc u8, per argument: 0x00 f64 or
// 0x01 len u8 UTF-8 bytes]. Robot → hub: SAMPLE [channel u8, count u8, count × f32], EVENT
// [channel u8, count u8, count × f32, UTF-8 text to the end], ESTOP [] (the robot's own safety
// chain tripped: the hub latches with source ROBOT).

import type { CatalogIndex } from '../catalog/index.js';
import { ChannelClass, Direction } from '../catalog/schema.js';
import { crc16, crc16Copy, crc16Update, CRC16_INIT } from '../hub/crc16.js';
import { EstopSource } from '../hub/estop-frame.js';
import { Nack } from '../hub/nack.js';
import type { SampleBlock, Clock, RobotPort } from '../hub/ports.js';
import { utf8ByteLength, utf8Check, utf8Decode, utf8Write, UTF8_DECODE_CHUNK } from '../hub/utf8.js';

/**
 * The link's byte work: a frame's CRC and a SAMPLE frame's values. At hundreds of frames a
 * second this is most of what the link costs in script (the CRC one table lookup a byte), so the
 * device does it in C (device/robot-native.ts, device/native/robotframe.c); the script codec is
 * the default everywhere else and the reference the C is checked against. Both give the same
 * results for every input; neither allocates.
 */
export interface RobotCodec {
  /** The CRC-16/CCITT-FALSE of bytes[start, end), continuing from `crc`. */
  crc16(bytes: Uint8Array, start: number, end: number, crc: number): number;
  /** Copies src[from, from + n) to dst[at, …), two ranges that do not overlap, and returns `crc` continued over those bytes. */
  crc16Copy(src: Uint8Array, from: number, dst: Uint8Array, at: number, n: number, crc: number): number;
  /** `count` little-endian float32 from bytes[at, …) into `out`, the bytes of a Float64Array (whole, from its start). */
  floats32(bytes: Uint8Array, at: number, count: number, out: Uint8Array): void;
}

/**
 * The codec in script: hub/crc16.ts and DataViews. Its views are made when a buffer is new: it
 * keeps two (a frame is read from the UART's buffer or from the decoder's own), and the values'
 * Float64Array over `out`.
 */
export class ScriptRobotCodec implements RobotCodec {
  declare crc16: (bytes: Uint8Array, start: number, end: number, crc: number) => number;
  declare crc16Copy: (src: Uint8Array, from: number, dst: Uint8Array, at: number, n: number, crc: number) => number;
  private a: DataView | null = null;
  private b: DataView | null = null;
  private out: Float64Array | null = null;

  floats32(bytes: Uint8Array, at: number, count: number, out: Uint8Array): void {
    const buffer = bytes.buffer;
    let v = this.a;
    if (v === null || v.buffer !== buffer) {
      v = this.b;
      if (v === null || v.buffer !== buffer) v = new DataView(buffer);
      // The view found or made first, the other kept.
      this.b = this.a;
      this.a = v;
    }
    let o = this.out;
    if (o === null || o.buffer !== out.buffer || o.byteOffset !== out.byteOffset) this.out = o = new Float64Array(out.buffer, out.byteOffset, out.length >>> 3);
    const base = bytes.byteOffset + at;
    for (let i = 0; i < count; i++) o[i] = v.getFloat32(base + 4 * i, true);
  }
}
// The CRCs are hub/crc16.ts's functions themselves (a method call reaches them with no step between).
Object.assign(ScriptRobotCodec.prototype, { crc16, crc16Copy });

export const ROBOT_SYNC = 0xa5;
export const RobotFrameType = Object.freeze({
  STOP: 0x01,
  RELEASE: 0x02,
  PUBLISH: 0x03,
  INTENT: 0x04,
  SAMPLE: 0x81,
  EVENT: 0x82,
  ESTOP: 0x83,
} as const);
export const ROBOT_PAYLOAD_MAX = 255;
/** Sync, type, length, CRC. */
export const ROBOT_FRAME_OVERHEAD = 5;
export const ROBOT_FRAME_MAX = ROBOT_PAYLOAD_MAX + ROBOT_FRAME_OVERHEAD;
/** INTENT argument tags. */
export const RobotArg = Object.freeze({ NUMBER: 0x00, TEXT: 0x01 } as const);

// Byte offsets inside a frame.
const TYPE = 1;
const LENGTH = 2;
const PAYLOAD = 3;

/** Finishes a frame whose payload of `n` bytes sits at PAYLOAD: header and CRC. Returns its length. */
function seal(buf: Uint8Array, type: number, n: number, codec: RobotCodec): number {
  buf[0] = ROBOT_SYNC;
  buf[TYPE] = type;
  buf[LENGTH] = n;
  const crc = codec.crc16(buf, TYPE, PAYLOAD + n, CRC16_INIT);
  buf[PAYLOAD + n] = crc >>> 8;
  buf[PAYLOAD + n + 1] = crc & 0xff;
  return PAYLOAD + n + 2;
}

/** Encodes hub → robot frames into one buffer it owns (valid until the next call). */
export class RobotEncoder {
  readonly buf: Uint8Array;
  private readonly view: DataView;
  private readonly codec: RobotCodec;

  /** `buf`: ROBOT_FRAME_MAX bytes to encode into, when its owner keeps them in a buffer of its own. */
  constructor(buf?: Uint8Array, codec: RobotCodec = new ScriptRobotCodec()) {
    if (buf !== undefined && buf.length !== ROBOT_FRAME_MAX) throw new RangeError(`RobotEncoder: the buffer must be ${ROBOT_FRAME_MAX} bytes`);
    this.codec = codec;
    this.buf = buf ?? new Uint8Array(ROBOT_FRAME_MAX);
    this.view = new DataView(this.buf.buffer, this.buf.byteOffset, ROBOT_FRAME_MAX);
  }

  stop(source: number): number {
    this.buf[PAYLOAD] = source & 0xff;
    return seal(this.buf, RobotFrameType.STOP, 1, this.codec);
  }

  release(): number {
    return seal(this.buf, RobotFrameType.RELEASE, 0, this.codec);
  }

  /** One sample `[t, v1, …]`: numbers[at, at + width); -1 when it does not fit one frame. */
  publish(channelId: number, numbers: ArrayLike<number>, at: number, width: number): number {
    const count = width - 1;
    const n = 2 + 8 + 4 * count;
    if (count < 0 || n > ROBOT_PAYLOAD_MAX) return -1;
    const v = this.view;
    this.buf[PAYLOAD] = channelId;
    this.buf[PAYLOAD + 1] = count;
    v.setFloat64(PAYLOAD + 2, numbers[at] as number, true);
    for (let i = 0; i < count; i++) v.setFloat32(PAYLOAD + 10 + 4 * i, numbers[at + i + 1] as number, true);
    return seal(this.buf, RobotFrameType.PUBLISH, n, this.codec);
  }

  /** -1 when the arguments do not fit one frame. */
  intent(channelId: number, args: readonly (number | string)[]): number {
    const b = this.buf;
    if (args.length > 255) return -1;
    b[PAYLOAD] = channelId;
    b[PAYLOAD + 1] = args.length;
    let p = PAYLOAD + 2;
    const end = PAYLOAD + ROBOT_PAYLOAD_MAX;
    for (let i = 0; i < args.length; i++) {
      const a = args[i] as number | string;
      if (typeof a === 'number') {
        if (p + 9 > end) return -1;
        b[p] = RobotArg.NUMBER;
        this.view.setFloat64(p + 1, a, true);
        p += 9;
      } else {
        const len = utf8ByteLength(a);
        if (len > 255 || p + 2 + len > end) return -1;
        b[p] = RobotArg.TEXT;
        b[p + 1] = len;
        utf8Write(a, b, p + 2);
        p += 2 + len;
      }
    }
    return seal(b, RobotFrameType.INTENT, p - PAYLOAD, this.codec);
  }
}

export interface RobotFrameSink {
  /** One frame that passed its CRC: its payload is `bytes[start, start + length)`, valid during the call. */
  frame(type: number, bytes: Uint8Array, start: number, length: number): void;
}

const HUNT = 0;
const HEADER = 1;
const BODY = 2;

/**
 * Byte-at-a-time frame reader. A frame whose CRC fails is dropped, and the bytes after its sync
 * byte are read again, so that a sync value inside a damaged frame cannot hide the frame after
 * it. Iterative (the re-read bytes wait in `replay`, never in the call stack) and allocation-free
 * after construction.
 */
export class RobotDecoder {
  crcErrors = 0;
  /** Bytes skipped while hunting for a sync byte. */
  skipped = 0;
  frames = 0;
  /** The frame being read; `frame` callbacks get their payload in it. */
  readonly buf = new Uint8Array(ROBOT_FRAME_MAX);
  private state = HUNT;
  private have = 0;
  private need = 0;
  // The CRC of the frame's bytes gathered so far (those it covers).
  private crc = CRC16_INIT;
  // Bytes to read again before the next new one. Only a bad frame's bytes land here, and a bad
  // frame met while reading them consists of bytes already read from here, so it never holds
  // more than one frame.
  private readonly replay = new Uint8Array(ROBOT_FRAME_MAX);
  private rpos = 0;
  private rend = 0;

  constructor(
    private readonly sink: RobotFrameSink,
    private readonly codec: RobotCodec = new ScriptRobotCodec(),
  ) {}

  push(bytes: Uint8Array, start: number, end: number): void {
    const b = this.buf;
    let i = start;
    let h = 0;
    let k = 0;
    while (i < end) {
      if (this.state === BODY) {
        // A frame's payload, copied and taken into its CRC in one loop, then its CRC's two bytes,
        // up to the frame's end or the input's (nothing waits to be read again here: the replay
        // is always read to its end before the next input byte).
        h = this.have;
        k = this.need - 2 - h;
        if (end - i < k) k = end - i;
        if (k > 0) {
          this.crc = this.codec.crc16Copy(bytes, i, b, h, k, this.crc);
          i += k;
          h += k;
        }
        while (h < this.need && i < end) b[h++] = bytes[i++] as number;
        this.have = h;
        if (h < this.need) return;
        this.complete();
      } else if (this.state === HUNT && bytes[i] === ROBOT_SYNC && end - i >= PAYLOAD + 2 && (k = bytes[i + LENGTH] as number) <= end - i - PAYLOAD - 2 && this.codec.crc16(bytes, i + TYPE, i + PAYLOAD + k, CRC16_INIT) === (((bytes[i + PAYLOAD + k] as number) << 8) | (bytes[i + PAYLOAD + k + 1] as number))) {
        // A whole frame in the input whose CRC holds: handed on where it lies, as gathering it
        // would hand it on (a frame whose CRC fails is read a byte at a time, and read again).
        this.frames++;
        h = i;
        i += PAYLOAD + k + 2;
        this.sink.frame(bytes[h + TYPE] as number, bytes, h + PAYLOAD, k);
      } else this.byte(bytes[i++] as number);
      while (this.rpos < this.rend) this.byte(this.replay[this.rpos++] as number);
    }
  }

  private byte(x: number): void {
    const b = this.buf;
    if (this.state === HUNT) {
      if (x !== ROBOT_SYNC) {
        this.skipped++;
        return;
      }
      b[0] = x;
      this.have = 1;
      this.state = HEADER;
      this.crc = CRC16_INIT;
      return;
    }
    b[this.have++] = x;
    // The CRC covers the type, the length and the payload: every byte but the sync and its own two.
    if (this.have <= this.need - 2 || this.state === HEADER) this.crc = crc16Update(this.crc, x);
    if (this.state === HEADER) {
      if (this.have === PAYLOAD) {
        this.need = PAYLOAD + (b[LENGTH] as number) + 2;
        this.state = BODY;
      }
      return;
    }
    if (this.have === this.need) this.complete();
  }

  /** The frame gathered in `buf` is whole: handed on if its CRC holds, else its bytes after the sync are read again. */
  private complete(): void {
    const b = this.buf;
    const n = b[LENGTH] as number;
    this.state = HUNT;
    if (this.crc === (((b[PAYLOAD + n] as number) << 8) | (b[PAYLOAD + n + 1] as number))) {
      this.frames++;
      this.sink.frame(b[TYPE] as number, b, PAYLOAD, n);
      return;
    }
    this.crcErrors++;
    // Read again: this frame's bytes after its sync, then whatever was still waiting.
    const back = this.have - 1;
    const keep = this.rend - this.rpos;
    this.replay.copyWithin(back, this.rpos, this.rend);
    this.replay.set(b.subarray(1, this.have), 0);
    this.rpos = 0;
    this.rend = back + keep;
    this.have = 0;
  }
}

/** The stop line to the robot's safety chain. */
export interface StopLine {
  /** true: stop; false: motion permitted. Takes effect before it returns. */
  set(stopped: boolean): void;
}

/** The byte stream to the robot. */
export interface RobotTx {
  /** Bytes the transmitter takes right now without blocking. */
  room(): number;
  /** Hands over `buf[start, end)`, at most room() bytes; false when the transmitter refused (its room was less than thought). */
  write(buf: Uint8Array, start: number, end: number): boolean;
}

export class RobotLinkCounters {
  stops = 0;
  releases = 0;
  /** Samples sent on to the robot (frames queued). */
  published = 0;
  /** Samples dropped: the queue was full, there was no UART, or a sample did not fit one frame. */
  publishDrops = 0;
  intents = 0;
  /** Intents refused (their NACK code went back in the ECHO). */
  intentRefusals = 0;
  /** STOP/RELEASE frames the urgent queue had to drop (the stop line carried the state regardless). */
  urgentDrops = 0;
}

export interface RobotLinkOptions {
  readonly line: StopLine;
  /** null: the stop line only; publications are dropped and intents answered NOT_READY. */
  readonly tx: RobotTx | null;
  /** Bytes of frames waiting for the UART (default 2048: a few ms of a fast link). */
  readonly queueBytes?: number;
  /** The CRC of each frame (default the script codec; the device's is native). */
  readonly codec?: RobotCodec;
}

export const ROBOT_QUEUE_BYTES = 2048;
/** STOP and RELEASE frames waiting to overtake the queue. */
const URGENT_FRAMES = 4;
const URGENT_FRAME_BYTES = ROBOT_FRAME_OVERHEAD + 1;

/**
 * The RobotPort of the device. Frames wait in a ring until the transmitter has room; STOP and
 * RELEASE overtake every queued frame at the next frame boundary (a frame already begun is
 * finished first, or the robot would lose both).
 */
export class RobotLink implements RobotPort {
  readonly counters = new RobotLinkCounters();
  private readonly line: StopLine;
  private readonly tx: RobotTx | null;
  // [the queue's ring | the encoder's frame]: one buffer, so that a frame joins the ring with a native copy.
  private readonly mem: Uint8Array;
  private readonly enc: RobotEncoder;
  private readonly ring: Uint8Array;
  private head = 0;
  private queued = 0;
  /** Bytes of the frame at the ring's head already handed to the transmitter. */
  private begun = 0;
  // STOP/RELEASE frames in order, each in a slot of URGENT_FRAME_BYTES; the first may be begun.
  private readonly urgent = new Uint8Array(URGENT_FRAMES * URGENT_FRAME_BYTES);
  private readonly urgentLength = new Uint8Array(URGENT_FRAMES);
  private urgentCount = 0;
  private urgentBegun = 0;
  private stopped = true;

  constructor(options: RobotLinkOptions) {
    this.line = options.line;
    this.tx = options.tx;
    const cap = options.queueBytes ?? ROBOT_QUEUE_BYTES;
    this.mem = new Uint8Array(cap + ROBOT_FRAME_MAX);
    this.ring = this.mem.subarray(0, cap);
    this.enc = new RobotEncoder(this.mem.subarray(cap), options.codec);
    // A hub that has just booted lets nothing move until it says so (main.ts releases when no latch was restored).
    this.line.set(true);
  }

  /** Whether the stop line says stop. */
  get isStopped(): boolean {
    return this.stopped;
  }

  /** Bytes waiting for the transmitter (urgent frames included). */
  get backlog(): number {
    let n = this.queued - this.begun - this.urgentBegun;
    for (let i = 0; i < this.urgentCount; i++) n += this.urgentLength[i] as number;
    return n;
  }

  stop(source: number): void {
    this.line.set(true);
    this.stopped = true;
    this.counters.stops++;
    this.urgentFrame(this.enc.stop(source));
  }

  release(): void {
    this.line.set(false);
    this.stopped = false;
    this.counters.releases++;
    this.urgentFrame(this.enc.release());
  }

  publish(channelId: number, samples: SampleBlock): void {
    for (let i = 0; i < samples.count; i++) {
      const n = this.tx ? this.enc.publish(channelId, samples.numbers, i * samples.width, samples.width) : -1;
      if (n < 0 || !this.enqueue(n)) this.counters.publishDrops++;
      else this.counters.published++;
    }
    this.pump();
  }

  intent(channelId: number, args: readonly (number | string)[]): number {
    this.counters.intents++;
    let code = 0;
    if (!this.tx) code = Nack.NOT_READY;
    else {
      const n = this.enc.intent(channelId, args);
      if (n < 0) code = Nack.TOO_LARGE;
      else if (!this.enqueue(n)) code = Nack.HUB_PRESSURE;
    }
    if (code !== 0) this.counters.intentRefusals++;
    else this.pump();
    return code;
  }

  /** Hands the transmitter what it has room for: call when it reports room (onWritable). */
  pump(): void {
    const tx = this.tx;
    if (!tx) return;
    for (;;) {
      const room = tx.room();
      if (room <= 0) return;
      // A regular frame already begun is finished before anything overtakes it.
      if (this.begun === 0 && this.urgentCount > 0) {
        const len = this.urgentLength[0] as number;
        const take = Math.min(room, len - this.urgentBegun);
        if (!tx.write(this.urgent, this.urgentBegun, this.urgentBegun + take)) return;
        this.urgentBegun += take;
        if (this.urgentBegun === len) {
          this.urgentBegun = 0;
          this.removeUrgent(0);
        }
        continue;
      }
      if (this.urgentBegun > 0 || this.queued === 0) return;
      const frame = this.frameLength(this.head);
      const cap = this.ring.length;
      let take = Math.min(room, frame - this.begun);
      const from = (this.head + this.begun) % cap;
      if (from + take > cap) take = cap - from;
      if (!tx.write(this.ring, from, from + take)) return;
      this.begun += take;
      if (this.begun === frame) {
        this.head = (this.head + frame) % cap;
        this.queued -= frame;
        this.begun = 0;
      }
    }
  }

  private frameLength(at: number): number {
    return (this.ring[(at + LENGTH) % this.ring.length] as number) + ROBOT_FRAME_OVERHEAD;
  }

  private enqueue(n: number): boolean {
    const cap = this.ring.length;
    if (this.queued + n > cap) return false;
    // The encoder's frame (at `cap` in mem) into the ring, in two native copies where it wraps.
    const at = (this.head + this.queued) % cap;
    const first = cap - at < n ? cap - at : n;
    this.mem.copyWithin(at, cap, cap + first);
    if (first < n) this.mem.copyWithin(0, cap + first, cap + n);
    this.queued += n;
    return true;
  }

  private urgentFrame(n: number): void {
    if (!this.tx) return;
    if (this.urgentCount === URGENT_FRAMES) {
      // The oldest not yet begun gives way: the stop line already carries the newest state.
      this.removeUrgent(this.urgentBegun > 0 ? 1 : 0);
      this.counters.urgentDrops++;
    }
    const k = this.urgentCount++;
    this.urgent.set(this.enc.buf.subarray(0, n), k * URGENT_FRAME_BYTES);
    this.urgentLength[k] = n;
    this.pump();
  }

  private removeUrgent(k: number): void {
    this.urgent.copyWithin(k * URGENT_FRAME_BYTES, (k + 1) * URGENT_FRAME_BYTES, this.urgentCount * URGENT_FRAME_BYTES);
    this.urgentLength.copyWithin(k, k + 1, this.urgentCount);
    this.urgentCount--;
  }
}

/** What the robot's telemetry is handed to (the Hub). */
export interface RobotHub {
  publishSample(channelId: number, t: number, values: Float64Array, count: number): void;
  publishEvent(channelId: number, t: number, values: readonly number[], text?: string): void;
  estop(source: number): void;
}

export class RobotInboundCounters {
  samples = 0;
  events = 0;
  estops = 0;
  /** Frames refused: unknown type, unknown or wrong-direction channel, a field count other than the catalog's, bad text. */
  refused = 0;
}

/**
 * Robot → hub frames into the hub: SAMPLE to publishSample (stamped with the hub's clock, the
 * robot's own clock being unrelated), EVENT to publishEvent, ESTOP to a latch with source ROBOT.
 * Checked against the catalog so that nothing the robot sends can name a channel the hub does
 * not route. Samples allocate nothing (the codec reads their values into one Float64Array).
 */
export class RobotInbound implements RobotFrameSink {
  readonly counters = new RobotInboundCounters();
  readonly decoder: RobotDecoder;
  private readonly values: Float64Array;
  /** The values' bytes, which the codec writes. */
  private readonly valueBytes: Uint8Array;
  private readonly units = new Uint32Array(UTF8_DECODE_CHUNK);

  constructor(
    private readonly hub: RobotHub,
    private readonly catalog: CatalogIndex,
    private readonly clock: Clock,
    private readonly codec: RobotCodec = new ScriptRobotCodec(),
  ) {
    let max = 0;
    for (const ch of catalog.channels) if (ch.fieldCount > max) max = ch.fieldCount;
    this.values = new Float64Array(max);
    this.valueBytes = new Uint8Array(this.values.buffer);
    this.decoder = new RobotDecoder(this, codec);
  }

  /** Bytes from the UART. */
  input(bytes: Uint8Array, start: number, end: number): void {
    this.decoder.push(bytes, start, end);
  }

  frame(type: number, bytes: Uint8Array, start: number, length: number): void {
    if (type === RobotFrameType.ESTOP) {
      this.counters.estops++;
      this.hub.estop(EstopSource.ROBOT);
      return;
    }
    if ((type !== RobotFrameType.SAMPLE && type !== RobotFrameType.EVENT) || length < 2) {
      this.counters.refused++;
      return;
    }
    const ch = this.catalog.byId(bytes[start] as number);
    const count = bytes[start + 1] as number;
    const isEvent = type === RobotFrameType.EVENT;
    const end = start + 2 + 4 * count;
    if (
      !ch ||
      ch.direction !== Direction.telemetry ||
      (ch.cls === ChannelClass.EVENT) !== isEvent ||
      count !== ch.fieldCount ||
      end > start + length ||
      (!isEvent && end !== start + length)
    ) {
      this.counters.refused++;
      return;
    }
    // The values, read where the frame lies (the UART's buffer, or the decoder's for a frame it gathered).
    this.codec.floats32(bytes, start + 2, count, this.valueBytes);
    if (!isEvent) {
      this.counters.samples++;
      this.hub.publishSample(ch.id, this.clock.now(), this.values, count);
      return;
    }
    if (utf8Check(bytes, end, start + length) >= 0) {
      this.counters.refused++;
      return;
    }
    // Events are rare (faults, logs): the hub keeps each one, so a fresh array is no waste.
    const values: number[] = [];
    for (let i = 0; i < count; i++) values.push(this.values[i] as number);
    const text = end < start + length ? utf8Decode(bytes, end, start + length, this.units) : undefined;
    this.counters.events++;
    this.hub.publishEvent(ch.id, this.clock.now(), values, text);
  }
}
