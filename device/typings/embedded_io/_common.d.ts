// As typings/embedded_io/_common.d.ts of the SDK.
declare module 'embedded:io/_common' {
  export type PinSpecifier = number;
  export type PortSpecifier = number;
}
