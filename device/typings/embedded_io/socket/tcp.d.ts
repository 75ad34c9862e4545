// As typings/embedded_io/socket/tcp.d.ts of the SDK, with one deviation read from the ESP32
// implementation (the SDK's lwIP TCP socket, its write): `write` returns the send-buffer
// bytes still free (tcp_sndbuf) and throws "would block" when the data exceeds them; the SDK
// typing says `void`. bindings/tcp/device.ts relies on that count. onWritable(free) fires when
// the socket is accepted and on every ACK; read() returns everything received as one ArrayBuffer.
// manifest.json hands mcconfig this file in place of the SDK's (device/typings/README.md).
declare module 'embedded:io/socket/tcp' {
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
