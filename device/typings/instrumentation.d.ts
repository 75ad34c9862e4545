// As the SDK's own typing of the `instrumentation` module. `map` gives the
// index of a named counter; `get` reads it, and reads undefined in a build without XS
// instrumentation (a release build).
declare module 'instrumentation' {
  var Instrumentation: {
    get(what: number): number | undefined;
    map(name: string): number | undefined;
    name(index: number): string | undefined;
  };
  export { Instrumentation as default };
}
