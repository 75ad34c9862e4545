// As typings/embedded_io/serial.d.ts of the SDK (the SDK's own misspelling `recevice` kept).
// ESP32 (the SDK's ESP32 serial implementation): `write` goes straight into the UART's hardware
// FIFO and throws "output full" when the data exceeds its free bytes; onWritable(free) fires
// when the FIFO drains below its threshold; `read(buffer)` fills the buffer with what the
// receive FIFO holds and returns the count.
declare module 'embedded:io/serial' {
  import { PinSpecifier, PortSpecifier } from 'embedded:io/_common';
  class Serial {
    constructor(
      options: (
        | {
            receive: PinSpecifier;
            transmit?: PinSpecifier;
          }
        | {
            recevice?: PinSpecifier;
            transmit: PinSpecifier;
          }
      ) & {
        baud: number;
        flowControl?: 'hardware' | 'none';
        dataTerminalReady?: PinSpecifier;
        requestToSend?: PinSpecifier;
        clearToSend?: PinSpecifier;
        dataSetReady?: PinSpecifier;
        port: PortSpecifier;
        onReadable?: (this: Serial, bytes: number) => void;
        onWritable?: (this: Serial, bytes: number) => void;
        format?: 'number' | 'buffer';
        target?: any;
      },
    );
    readonly resolution: number;
    close(): void;
    read(): number | ArrayBuffer | undefined;
    read(byteLength: number): ArrayBuffer | undefined;
    read(buffer: ByteBuffer): number | undefined;
    write(value: number | ByteBuffer): void;
    flush(): void;
    flush(input: number, output: number): void;
    set(options: { dataTerminalReady?: PinSpecifier; requestToSend?: PinSpecifier; break?: boolean }): void;
    get format(): 'number' | 'buffer';
    set format(value: 'number' | 'buffer');
  }

  export default Serial;
}
