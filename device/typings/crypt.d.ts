// As typings/crypt.d.ts of the SDK (modules/crypt/digest): the Digest the WebSocket upgrade
// hashes with (SHA-1, RFC 6455 §4.2.2).
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
