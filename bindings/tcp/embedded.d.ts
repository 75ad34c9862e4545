// Ambient declarations for the Moddable SDK modules bindings/tcp/device.ts uses, matching the
// SDK's own typings (Moddable-OpenSource/moddable v8.2.3: typings/embedded_io/socket/listener.d.ts,
// typings/embedded_io/socket/tcp.d.ts, typings/timer.d.ts, typings/crypt.d.ts), which the npm
// package @moddable/typings 5.6.0 lacks. Two deliberate differences, both read from the
// implementation: TCP `write` returns a number (the SDK typing says void, but lwIP's
// xs_tcp_write in modules/io/socket/lwip/tcp.c returns the send-buffer bytes still free, and
// throws "would block" when the data exceeds them; the adapter relies on that count), and
// Listener has `close()` (modules/io/socket/lwip/listener.js).
//
// If the device build ever includes the SDK typings themselves, drop this file.

declare module 'embedded:io/socket/tcp' {
  type ByteBuffer = ArrayBufferLike | ArrayBufferView;
  export type Options = (
    | (({ address: string } | { host: string }) & { port: number })
    | { from: TCP }
  ) & {
    nodelay?: boolean;
    onReadable?: (this: TCP, bytes: number) => void;
    onWritable?: (this: TCP, bytes: number) => void;
    onError?: (this: TCP) => void;
    format?: 'number' | 'buffer';
    target?: any;
  };

  export default class TCP {
    constructor(options: Options);
    readonly remoteAddress: string | undefined;
    readonly remotePort: number | undefined;
    read(byteLength?: number): number | ArrayBuffer;
    read(buffer: ByteBuffer): void;
    /** Returns the send-buffer bytes still free; throws "would block" when `value` exceeds them. */
    write(value: number | ByteBuffer): number;
    close(): void;
    get format(): 'number' | 'buffer';
    set format(value: 'number' | 'buffer');
  }
}

declare module 'embedded:io/socket/listener' {
  import TCP from 'embedded:io/socket/tcp';
  class Listener {
    constructor(options: {
      port?: number;
      address?: string;
      onReadable?: (this: Listener, requests: number) => void;
      format?: 'socket/tcp';
      target?: any;
    });
    read(): TCP | undefined;
    close(): void;
    get format(): 'socket/tcp';
    set format(value: 'socket/tcp');
    readonly port: number;
  }
  export default Listener;
}

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

declare module 'crypt' {
  type DigestType = 'MD5' | 'SHA1' | 'SHA224' | 'SHA256' | 'SHA384' | 'SHA512';
  export class Digest {
    constructor(type: DigestType);
    write(message: string | ArrayBuffer): void;
    close(): ArrayBuffer;
    reset(): void;
    get blockSize(): number;
    get outputSize(): number;
    update(message: string | ArrayBuffer): void;
  }
}
