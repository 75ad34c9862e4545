// The command-line reading the simulator's two entries share (cli.ts: `npm run sim`; main.ts:
// `npm start`): flags with a value, the seed, help and unknown arguments.

/** A command line that cannot be read; an empty message asks for the usage text alone. */
export class UsageError extends Error {}

/** Walks argv one flag at a time; `value` takes the argument after the current flag. */
export class ArgReader {
  private i = -1;

  constructor(private readonly argv: readonly string[]) {}

  /** The next argument, undefined at the end. */
  next(): string | undefined {
    this.i++;
    return this.argv[this.i];
  }

  /** The value that follows `flag`. */
  value(flag: string): string {
    const v = this.argv[++this.i];
    if (v === undefined) throw new UsageError(`${flag} needs a value`);
    return v;
  }
}

/** `--seed`: a non-negative safe integer. */
export function seedOf(v: string): number {
  const n = Number(v);
  if (!/^\d+$/.test(v) || !Number.isSafeInteger(n)) throw new UsageError(`--seed must be a non-negative integer, got ${JSON.stringify(v)}`);
  return n;
}

/** An argument no case took: `-h`/`--help` asks for the usage, anything else is refused. */
export function notAFlag(arg: string): never {
  if (arg === '-h' || arg === '--help') throw new UsageError('');
  throw new UsageError(`unknown argument ${JSON.stringify(arg)}`);
}
