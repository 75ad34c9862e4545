// The command-line reading the simulator's entries share (cli.ts: `npm run sim`; main.ts:
// `npm start`; fleet.ts and fleet-stop.ts): flags with a value, the seed, the broker and site,
// help and unknown arguments.

import { brokerParts, topicLevelProblem } from '../uplink/config.js';

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

/** `--broker`: an MQTT broker's address, mqtt://HOST[:PORT] (the fleet commands and `npm start`). */
export function brokerOf(v: string): string {
  if (!brokerParts(v)) throw new UsageError(`--broker must be mqtt://HOST[:PORT], got ${JSON.stringify(v)}`);
  return v;
}

/** `--site`: one MQTT topic level (fleet/<site>/…). */
export function siteOf(v: string): string {
  const problem = topicLevelProblem(v);
  if (problem) throw new UsageError(`--site ${problem}`);
  return v;
}

