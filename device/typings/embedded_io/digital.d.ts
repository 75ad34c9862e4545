// As the SDK's own typing of embedded:io/digital (its ESP32 digital bank).
// Rising = 1, Falling = 2 (digital.js). Edges are delivered to onReadable once JS runs, coalesced,
// without debounce. An output cannot be read ("can't read output"); `initialValue` is written
// before the pin is switched to output, so an output starts at a known level.
declare module 'embedded:io/digital' {
  import type { PinSpecifier } from 'embedded:io/_common';

  type Edge = number;

  type Mode =
    | typeof Digital.Input
    | typeof Digital.InputPullUp
    | typeof Digital.InputPullDown
    | typeof Digital.InputPullUpDown
    | typeof Digital.Output
    | typeof Digital.OutputOpenDrain
    | typeof Digital.ActiveLow;

  class Digital {
    static readonly Input: number;
    static readonly InputPullUp: number;
    static readonly InputPullDown: number;
    static readonly InputPullUpDown: number;
    static readonly Output: number;
    static readonly OutputOpenDrain: number;
    static readonly ActiveLow: number;
    static readonly Rising: Edge;
    static readonly Falling: Edge;

    constructor(
      options: {
        pin: PinSpecifier;
        mode: Mode;
        activeLow?: boolean;
        initialValue?: 0 | 1;
        format?: 'number';
        target?: any;
      } & (
        | {
            onReadable: (this: Digital) => void;
            edge: Edge;
          }
        | {
            edge?: Edge;
          }
      ),
    );

    write(value: 0 | 1): void;
    read(): 0 | 1;
    close(): void;

    get format(): 'number';
    set format(value: 'number');
  }

  export default Digital;
}
