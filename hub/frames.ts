// Every CBOR frame of the hub protocol (docs/protocol.md "Frames"), in one import: the typed
// frames, the key registry, the limits and a cheap peek at a frame's type (frame-types.ts); one
// encoder and a hot-path DATA encoder that allocates nothing (frame-encode.ts); one validating
// decoder (frame-decode.ts, reading with frame-fields.ts). The 12-byte ESTOP frame is not CBOR:
// see estop-frame.ts. The core's own modules import each part from where it lives; this module
// is the protocol's face for everything else (bindings, client, simulator, tests, tools).
//
// A frame is one CBOR map with unsigned-integer keys in strictly ascending order; key 0 is
// the frame type. One key registry serves every frame: a key number means the same field
// wherever it appears. Unknown keys are skipped (forward compatibility) but must still be
// valid CBOR within the reader's limits.

export * from './frame-types.js';
export { encodeData, encodeFrame } from './frame-encode.js';
export { decodeFrame, FrameDecoder } from './frame-decode.js';
