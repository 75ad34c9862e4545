// What the platform-free client core (core.ts) needs from the world: a transport that carries
// whole frames, a clock with one-shot timers, and randomness for reconnect jitter. Node
// (node.ts), the browser (browser.ts) and the tests each supply their own. Also the TCP
// length-prefix reassembler (§2), which is pure and shared by every stream transport.

import { MAX_HUB_FRAME_BYTES } from '../hub/frames.js';

/**
 * One connection to the hub, already open. It carries whole frames (a CBOR frame or the
 * 12-byte ESTOP frame, §2); the transport adds and removes its binding's framing.
 */
export interface ClientTransport {
  /** Sends one whole frame. The bytes become the transport's: the core never reuses them. */
  send(bytes: Uint8Array): void;
  /**
   * Sends one whole frame ahead of every frame the transport still holds queued (§11.2:
   * ESTOP). Optional: a transport without its own queue (TCP, WebSocket) just sends.
   */
  sendAhead?(bytes: Uint8Array): void;
  /** Closes the connection; `onClose` fires once, now or later. */
  close(): void;
  /** Largest frame the link carries in one piece, when it is known before WELCOME (ESP-NOW: 250). */
  readonly maxFrameBytes?: number;
  /** One whole frame from the hub; the bytes are only valid during the call. */
  onFrame: ((bytes: Uint8Array) => void) | null;
  /** The connection is gone (closed by either side or lost). Fires at most once. */
  onClose: (() => void) | null;
}

/** Opens a new connection; rejects when it cannot. The core calls it for every (re)connect. */
export type TransportFactory = () => Promise<ClientTransport>;

export type TimerHandle = unknown;

/** Monotonic milliseconds and one-shot timers. Tests pass a virtual clock. */
export interface ClientClock {
  now(): number;
  setTimer(ms: number, fn: () => void): TimerHandle;
  clearTimer(handle: TimerHandle): void;
}

/** Uniform in [0, 1): the jitter of the reconnect back-off. */
export type RandomSource = () => number;

// Byte-at-a-time parser states for the 16-bit big-endian length prefix of §2.
const HEAD_HI = 0;
const HEAD_LO = 1;
const BODY = 2;
const BROKEN = 3;

export const ReassemblyError = Object.freeze({
  /** A length of 0: MALFORMED (§2). */
  EMPTY: 'EMPTY',
  /** A length above what a hub ever sends (MAX_HUB_FRAME_BYTES, §7): the stream is not ours. */
  TOO_LARGE: 'TOO_LARGE',
} as const);
export type ReassemblyErrorCode = (typeof ReassemblyError)[keyof typeof ReassemblyError];

/**
 * Cuts a TCP byte stream into frames, each preceded by its length as an unsigned 16-bit
 * big-endian integer (§2). Chunks may split a frame (or its prefix) anywhere. The buffer
 * is sized once; each frame is handed out as a view valid only during the callback.
 *
 * A hub never sends an empty frame or one longer than MAX_HUB_FRAME_BYTES; either means
 * the stream is out of step and cannot be resynchronised, so the reassembler stops
 * (`broken`) and the transport must close.
 */
export class LengthPrefixReassembler {
  private readonly buf: Uint8Array;
  private state = HEAD_HI;
  private need = 0;
  private have = 0;

  constructor(
    private readonly onFrame: (bytes: Uint8Array) => void,
    private readonly onError: (code: ReassemblyErrorCode, length: number) => void,
    readonly maxFrameBytes: number = MAX_HUB_FRAME_BYTES,
  ) {
    this.buf = new Uint8Array(maxFrameBytes);
  }

  get broken(): boolean {
    return this.state === BROKEN;
  }

  /** Feeds one chunk as it came off the socket. */
  push(chunk: Uint8Array): void {
    let i = 0;
    const n = chunk.length;
    while (i < n) {
      switch (this.state) {
        case HEAD_HI:
          this.need = (chunk[i++] as number) << 8;
          this.state = HEAD_LO;
          break;
        case HEAD_LO: {
          const len = this.need | (chunk[i++] as number);
          if (len === 0 || len > this.maxFrameBytes) {
            this.state = BROKEN;
            this.onError(len === 0 ? ReassemblyError.EMPTY : ReassemblyError.TOO_LARGE, len);
            return;
          }
          this.need = len;
          this.have = 0;
          this.state = BODY;
          break;
        }
        case BODY: {
          const take = Math.min(this.need - this.have, n - i);
          this.buf.set(chunk.subarray(i, i + take), this.have);
          this.have += take;
          i += take;
          if (this.have === this.need) {
            this.state = HEAD_HI;
            this.onFrame(this.buf.subarray(0, this.need));
          }
          break;
        }
        default:
          return;
      }
    }
  }
}

/** The 2-byte prefix and the frame in one buffer, ready for one socket write (§2). */
export function lengthPrefixed(frame: Uint8Array): Uint8Array {
  if (frame.length === 0 || frame.length > 0xffff) throw new RangeError(`a frame of ${frame.length} bytes cannot be length-prefixed`);
  const out = new Uint8Array(frame.length + 2);
  out[0] = frame.length >>> 8;
  out[1] = frame.length & 0xff;
  out.set(frame, 2);
  return out;
}
