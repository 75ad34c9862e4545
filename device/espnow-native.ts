// The ESP-NOW binding with its send status's common course, and its links' send of a frame into
// an empty queue, in C on the ESP32: native/espnowsent.c, the courses themselves
// native/espnowsent.h, which hand every other status and frame to the script's EspNowBinding.sent
// and EspNowLink.send (as `sentInScript` and `sendInScript`). Only the device entry imports this module; the host
// build leaves device/ out and scripts/check-native.mjs type-checks it without Node types. The
// method's body is only its native call, which xsc compiles into the host function itself (no
// step between).

import { EspNowBinding, EspNowLink } from '../bindings/espnow/link.js';

// The XS global (the SDK's xs.d.ts declares it the same way), scoped to this module.
declare const native: (name: string) => (...args: any[]) => any;

/** A link whose send of a frame into its empty queue is C (espnowsent.h espnowSend). */
export class EspNowLinkNative extends EspNowLink {
  override send(frame: Uint8Array, tag: number, seq: number): boolean {
    return native('xs_espnow_send').call(this, frame, tag, seq);
  }
}

/** The binding whose send status is C (espnowsent.h espnowSent), its links EspNowLinkNative. */
export class EspNowBindingNative extends EspNowBinding {
  override sent(mac: number, ok: boolean): void {
    return native('xs_espnow_sent').call(this, mac, ok);
  }
}
Object.defineProperty(EspNowBindingNative.prototype, 'Link', { value: EspNowLinkNative });
