// The stop line's native paths on the ESP32: native/stopline.c behind stop-path.ts's
// StopLineNative. Only the device entry imports this module; the host build leaves device/ out
// and scripts/check-native.mjs type-checks it without Node types.

import type { StopLineNative } from './stop-path.js';

// The XS globals (the SDK's xs.d.ts declares them the same way), scoped to this module.
declare const native: (name: string) => (...args: any[]) => any;
declare const Native: (name: string) => new (...args: any[]) => any;

class StopLineHost extends Native('xs_stopline_destructor') implements StopLineNative {
  constructor() {
    super();
    native('xs_stopline').call(this);
  }
  line(stopPin: number, stopLevel: 0 | 1, onTrip: () => void): void {
    native('xs_stopline_line').call(this, stopPin, stopLevel, onTrip);
  }
  watch(button: object, pin: number, pressedLevel: 0 | 1): void {
    native('xs_stopline_watch').call(this, button, pin, pressedLevel);
  }
  guard(ms: number): void {
    native('xs_stopline_guard').call(this, ms);
  }
  feed(): void {
    native('xs_stopline_feed').call(this);
  }
  take(): number {
    return native('xs_stopline_take').call(this);
  }
  release(): boolean {
    return native('xs_stopline_release').call(this);
  }
  trips(): number {
    return native('xs_stopline_trips').call(this);
  }
  postFailures(): number {
    return native('xs_stopline_post_failures').call(this);
  }
  watchdogSeconds(): number {
    return native('xs_stopline_watchdog_seconds').call(this);
  }
  resetCause(): number {
    return native('xs_stopline_reset_cause').call(this);
  }
  close(): void {
    native('xs_stopline_close').call(this);
  }
}

/** The program's one stop line, not yet armed (StopLineNative.line, watch, guard). */
export function openStopLineNative(): StopLineNative {
  return new StopLineHost();
}
