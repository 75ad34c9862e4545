// As the SDK's own typing of embedded:io/analog (its ESP32 ADC): read() returns 0 .. 2^resolution − 1.
declare module 'embedded:io/analog' {
  import type { PinSpecifier } from 'embedded:io/_common';

  class Analog {
    constructor(options: { pin: PinSpecifier; resolution?: number; format?: 'number'; onReadable?: (this: Analog) => void });
    readonly resolution: number;
    read(): number;
    close(): void;
    get format(): 'number';
    set format(value: 'number');
  }

  export default Analog;
}
