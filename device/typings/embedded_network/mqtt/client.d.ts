// As typings/embedded_network/mqtt/client.d.ts of the SDK, with the deviations read from the
// implementation (the SDK's ECMA-419 MQTT client, as it is written): onControl
// is called with one argument, the message (the typing has an opcode first); the message's
// `returnCode` is there for CONNACK; `read()` returns undefined once nothing is left; `write`
// takes `null` for a control packet and throws "overflow" when the socket has not the room; the
// will's `message` must be a buffer or a string (a typed array would be stringified); `dns` is
// `{ io }`, a resolver class whose instances `resolve({ host, onResolved, onError })`.
// manifest.json hands mcconfig this file in place of the SDK's (device/typings/README.md).
declare module 'embedded:network/mqtt/client' {
  export interface ReadableOptions {
    more: boolean;
    topic?: string;
    QoS?: number;
    byteLength?: number;
  }

  export interface ControlMessage {
    operation: number;
    id?: number;
    returnCode?: number;
    payload?: number[];
  }

  export interface Will {
    topic: string;
    message: string | ArrayBuffer;
    QoS?: number;
    retain?: boolean;
  }

  export interface ResolveRequest {
    readonly host: string;
    onResolved(host: string, address: string): void;
    onError(): void;
  }

  export interface Options {
    host: string;
    port?: number;
    user?: string;
    password?: string;
    id?: string;
    clean?: boolean;
    will?: Will;
    /** Milliseconds. */
    keepalive?: number;
    onReadable?: (this: MQTTClient, count: number, options: ReadableOptions) => void;
    onWritable?: (this: MQTTClient, count: number) => void;
    onControl?: (this: MQTTClient, message: ControlMessage) => void;
    onError?: (this: MQTTClient) => void;
    dns: { io: new (options: any) => { resolve(request: ResolveRequest): void } };
    socket: { io: any };
  }

  export interface WriteOptions {
    operation?: number;
    id?: number;
    topic?: string;
    QoS?: number;
    retain?: boolean;
    duplicate?: boolean;
    byteLength?: number;
    items?: readonly { topic: string; QoS?: number }[];
  }

  export default class MQTTClient {
    constructor(options: Options);
    read(count?: number): ArrayBuffer | undefined;
    read(buffer: ArrayBuffer | ArrayBufferView): number | undefined;
    /** Returns the bytes the socket still takes (less the client's margin); throws "overflow" when the packet needs more. */
    write(data: ArrayBuffer | ArrayBufferView | null, options?: WriteOptions): number;
    close(): void;

    static readonly CONNECT: 1;
    static readonly CONNACK: 2;
    static readonly PUBLISH: 3;
    static readonly PUBACK: 4;
    static readonly PUBREC: 5;
    static readonly PUBREL: 6;
    static readonly PUBCOMP: 7;
    static readonly SUBSCRIBE: 8;
    static readonly SUBACK: 9;
    static readonly UNSUBSCRIBE: 10;
    static readonly UNSUBACK: 11;
    static readonly PINGREQ: 12;
    static readonly PINGRESP: 13;
    static readonly DISCONNECT: 14;
  }
}
