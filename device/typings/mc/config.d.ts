// As typings/mc/config.d.ts of the SDK: the manifest's `config`, merged with `key=value`
// arguments of mcconfig (whose values arrive as strings), frozen.
declare module 'mc/config' {
  var Config: { file: { root: string } } & Record<string, any>;
  export { Config as default };
}
