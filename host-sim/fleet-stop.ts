// npm run fleet-stop -- --broker mqtt://HOST:PORT --site S --key K [--hub ID] [--seq N] [--time MS]
//
// Publishes one signed fleet-wide stop on fleet/<site>/estop (docs/fleet.md "The fleet stop"):
// every hub it names (--hub ID, default every hub: *) latches ESTOP with source fleet. The
// sequence defaults to the current Unix time in ms, which rises with every stop one operator
// sends without keeping any state; --seq and --time give the same message again (a replay,
// which every hub refuses). The message is printed. A fleet stop never clears a latch.

import mqtt from 'mqtt';
import { FLEET_ALL, fleetStopMessage } from '../hub/fleet-stop.js';
import { utf8Bytes } from '../uplink/messages.js';
import { ArgReader, brokerOf, notAFlag, siteOf, UsageError } from './args.js';

const USAGE = 'usage: npm run fleet-stop -- --broker mqtt://HOST:PORT --site S --key K [--hub ID] [--seq N] [--time MS]';

interface Args {
  broker: string;
  site: string;
  key: string;
  hub: string;
  seq?: number;
  time?: number;
}

function count(flag: string, v: string): number {
  const n = Number(v);
  if (!/^\d+$/.test(v) || !Number.isSafeInteger(n)) throw new UsageError(`${flag} must be a non-negative integer, got ${JSON.stringify(v)}`);
  return n;
}

function parse(argv: readonly string[]): Args {
  const a: Partial<Args> & { hub: string } = { hub: FLEET_ALL };
  const r = new ArgReader(argv);
  for (let arg = r.next(); arg !== undefined; arg = r.next()) {
    switch (arg) {
      case '--broker':
        a.broker = brokerOf(r.value(arg));
        break;
      case '--site':
        a.site = siteOf(r.value(arg));
        break;
      case '--key':
        a.key = r.value(arg);
        if (a.key === '') throw new UsageError('--key must not be empty');
        break;
      case '--hub':
        a.hub = r.value(arg);
        break;
      case '--seq':
        a.seq = count(arg, r.value(arg));
        if (a.seq < 1) throw new UsageError('--seq must be at least 1');
        break;
      case '--time':
        a.time = count(arg, r.value(arg));
        break;
      default:
        notAFlag(arg);
    }
  }
  if (a.broker === undefined || a.site === undefined || a.key === undefined) throw new UsageError('--broker, --site and --key are required');
  return a as Args;
}

async function main(): Promise<number> {
  let a: Args;
  try {
    a = parse(process.argv.slice(2));
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    if (e.message) process.stderr.write(`fleet-stop: ${e.message}\n`);
    process.stderr.write(`${USAGE}\n`);
    return e.message ? 2 : 0;
  }
  const now = Date.now();
  const seq = a.seq ?? now;
  const time = a.time ?? now;
  const message = fleetStopMessage(a.site, utf8Bytes(a.key), a.hub, seq, time);
  const topic = `fleet/${a.site}/estop`;
  const client = mqtt.connect(a.broker, { protocolVersion: 4, reconnectPeriod: 0, connectTimeout: 5000, clean: true });
  try {
    await new Promise<void>((resolve, reject) => {
      client.once('connect', () => resolve());
      client.once('error', reject);
      client.once('close', () => reject(new Error('the broker closed the connection')));
    });
    await new Promise<void>((resolve, reject) => client.publish(topic, message, { qos: 1 }, (e) => (e ? reject(e) : resolve())));
  } catch (e) {
    process.stderr.write(`fleet-stop: ${a.broker}: ${e instanceof Error ? e.message : String(e)}\n`);
    client.end(true);
    return 1;
  }
  await new Promise<void>((resolve) => client.end(false, {}, () => resolve()));
  process.stdout.write(`fleet-stop: published on ${topic} (target ${a.hub}, seq ${seq}, time ${time}):\n${message}\n`);
  process.stdout.write(`  again: npm run fleet-stop -- --broker ${a.broker} --site ${a.site} --key … --hub ${a.hub === FLEET_ALL ? "'*'" : a.hub} --seq ${seq} --time ${time}\n`);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (e: unknown) => {
    process.stderr.write(`fleet-stop: ${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);
    process.exit(1);
  },
);
