// As typings/embedded_io/socket/listener.d.ts of the SDK, with one deviation read from the
// implementation (the SDK's lwIP listener): `close()` exists; the SDK typing omits it.
// manifest.json hands mcconfig this file in place of the SDK's (device/typings/README.md).
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
