// Issue 2: the frame codec on its hot paths. Encoding one DATA frame is what the hub does once
// per telemetry sample (then copies the bytes to each subscriber); decoding is what it does for
// every client frame (BUNDLE being the frequent one) and what every client does per DATA frame.
import { CborWriter } from '../hub/cbor.js';
import { decodeFrame, encodeData, encodeFrame, FrameDecoder, FrameType, MAX_HUB_FRAME_BYTES, type DataFrame, type Frame } from '../hub/frames.js';
import type { OpBench } from './case.js';

export const IMU_CHANNEL = 10;
export const CMD_VEL_CHANNEL = 30;

// An IMU sample as a sensor driver hands it over: none of these is exact in float32, so each
// value costs the 9-byte float64 encoding, the worst case of §9.2's field budget.
export function imuValues(): Float64Array {
  return Float64Array.of(0.0123, -0.0456, 9.8067, 0.0012, -0.0007, 0.0301);
}

function check(ok: boolean, what: string): void {
  if (!ok) throw new Error(`bench setup: ${what}`);
}

export function encodeDataBench(): OpBench {
  const values = imuValues();
  const w = new CborWriter(new Uint8Array(MAX_HUB_FRAME_BYTES));
  let seq = 0;
  let t = 1000;
  let sink = 0;
  return {
    kind: 'op',
    name: 'codec.encode-data',
    title: 'encodeData: one 6-float IMU DATA frame into a reused writer',
    issue: 2,
    op: 'frame',
    item: 'frame',
    xsOps: 2000,
    setup() {
      w.reset();
      encodeData(w, IMU_CHANNEL, 7, 1234, values, values.length, false, 0);
      const f = decodeFrame(w.buf, 0, w.pos) as DataFrame;
      check(f.type === FrameType.DATA && f.values.length === 6 && f.values[2] === values[2], 'encodeData does not round-trip');
    },
    run(n) {
      for (let i = 0; i < n; i++) {
        w.reset();
        encodeData(w, IMU_CHANNEL, seq, t, values, 6, false, 0);
        seq = (seq + 1) >>> 0;
        t += 5;
      }
      sink += w.pos;
      return n;
    },
  };
}

export function decodeDataBench(): OpBench {
  const buf = new Uint8Array(256);
  // The decoder a client keeps (FrameDecoder), as the hub's ingress keeps its own.
  const decoder = new FrameDecoder();
  let len = 0;
  let sink = 0;
  return {
    kind: 'op',
    name: 'codec.decode-data',
    title: 'FrameDecoder.decode: that DATA frame (validated, into a Frame object)',
    issue: 2,
    op: 'frame',
    item: 'frame',
    xsOps: 1000,
    setup() {
      const w = new CborWriter(buf);
      const values = imuValues();
      encodeData(w, IMU_CHANNEL, 123456, 98765432, values, values.length, false, 0);
      len = w.pos;
      const f = decodeFrame(buf, 0, len) as DataFrame;
      check(f.type === FrameType.DATA && f.values.length === 6, 'DATA frame does not decode');
    },
    run(n) {
      for (let i = 0; i < n; i++) {
        const f = decoder.decode(buf, 0, len);
        sink += f.type;
      }
      return n;
    },
  };
}

export function decodeBundleBench(): OpBench {
  const buf = new Uint8Array(256);
  const decoder = new FrameDecoder();
  let len = 0;
  let sink = 0;
  return {
    kind: 'op',
    name: 'codec.decode-bundle',
    title: 'FrameDecoder.decode: a 1-sample cmd_vel BUNDLE (the frequent client frame)',
    issue: 2,
    op: 'frame',
    item: 'frame',
    xsOps: 1000,
    setup() {
      const w = new CborWriter(buf);
      const f: Frame = { type: FrameType.BUNDLE, channelId: CMD_VEL_CHANNEL, samples: [[123456, 0.25, -0.125]] };
      encodeFrame(f, w);
      len = w.pos;
      const back = decodeFrame(buf, 0, len);
      check(back.type === FrameType.BUNDLE && back.samples.length === 1, 'BUNDLE frame does not decode');
    },
    run(n) {
      for (let i = 0; i < n; i++) {
        const f = decoder.decode(buf, 0, len);
        sink += f.type;
      }
      return n;
    },
  };
}
