// As the SDK's own typing of the `timer` module.
declare module 'timer' {
  export type TimerCallback = (timer: Timer) => void;

  class Timer {
    private constructor();
    static set: (callback: TimerCallback, interval?: number, repeat?: number) => Timer;
    static repeat: (callback: TimerCallback, interval: number) => Timer;
    static schedule: (timer: Timer, interval?: number, repeat?: number) => void;
    static clear: (timer: Timer | undefined | null) => void;
    static delay: (milliseconds: number) => void;

    private brand: boolean;
  }

  export { Timer as default };
}
