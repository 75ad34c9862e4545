// As the SDK's own typing of the `time` module. On the ESP32 `ticks` is
// modMilliseconds(), a uint32 count of FreeRTOS ticks in ms handed to JS as an int32
// (the SDK's ESP32 time module): it turns negative after 24.8 days and wraps after 49.7.
declare module 'time' {
  var Time: {
    set: (seconds: number) => void;
    timezone: number;
    dst: number;
    ticks: number;
    delta(start: number, end?: number): number;
    readonly microseconds?: number;
  };
  export { Time as default };
}
