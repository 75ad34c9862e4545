// The credential table at boot (device/provision.ts), with the real hub reading the Store the
// way it does on the device: a first boot with empty storage pairs one operator credential that
// can clear a latch, a second boot keeps it, a configured list overrides it, and a configured
// list that nobody could clear a latch with is refused at build time.
import { Tier } from '../../catalog/schema.js';
import { CREDENTIALS_KEY, decodeCredentials, encodeCredentials, MAX_CREDENTIALS, saveCredentials } from '../../hub/credentials.js';
import { FrameType } from '../../hub/frames.js';
import { Nack } from '../../hub/nack.js';
import type { Random } from '../../hub/ports.js';
import { DeviceConfigError, resolveDeviceConfig } from '../../device/config.js';
import { PAIRING_KEY, PAIRING_TOKEN_BYTES, provisionCredentials, ProvisionSource } from '../../device/provision.js';
import { deepEqual, equal, notEqual, ok } from '../lib/assert.js';
import { ascii, makeHub, MemoryStore, SeededRandom, TestClient, type Fixture } from '../lib/hub-fixture.js';

const TAKE_CONTROL = 42;

/** Counts the bytes drawn, so a test can say that a boot drew none. */
class CountingRandom implements Random {
  drawn = 0;
  constructor(private readonly inner: Random) {}
  fill(into: Uint8Array): void {
    this.drawn += into.length;
    this.inner.fill(into);
  }
}

/** Counts the Store's writes from now on. */
function countWrites(store: MemoryStore): { n: number } {
  const count = { n: 0 };
  const set = store.set.bind(store);
  store.set = (key, value) => {
    count.n++;
    set(key, value);
  };
  return count;
}

/** The device entry's order: the hub on the Store, then the table settled, then read again. */
function bootWith(store: MemoryStore, credentials: string, random: Random = new SeededRandom(11)): { fx: Fixture; outcome: ReturnType<typeof provisionCredentials> } {
  const config = resolveDeviceConfig(credentials ? { credentials } : {});
  const fx = makeHub({}, store);
  const outcome = provisionCredentials(store, config.credentials, random);
  fx.hub.reloadCredentials();
  return { fx, outcome };
}

/** HELLO with `credential`, the tier WELCOME grants. */
function tierOf(fx: Fixture, credential: Uint8Array): number {
  return new TestClient(fx.hub).hello({ credential }).tier;
}

/** Latches with the hub's button, releases it, and has a client with `credential` take control and clear. */
function clearsWith(fx: Fixture, credential: Uint8Array): boolean {
  fx.hub.setButton(true);
  fx.hub.setButton(false);
  ok(fx.hub.latch.latched);
  const c = new TestClient(fx.hub);
  c.hello({ credential });
  c.intent(TAKE_CONTROL, 1);
  c.take();
  c.send({ type: FrameType.ESTOP_CLEAR });
  return !fx.hub.latch.latched;
}

describe('device provisioning: the first operator credential (device/provision.ts)', () => {
  it('a first boot with empty storage pairs exactly one operator credential, from the RNG, and it clears a latch', () => {
    const store = new MemoryStore();
    const { fx, outcome } = bootWith(store, '');
    equal(outcome.source, ProvisionSource.PAIRED);
    const token = outcome.pairingToken;
    ok(token !== null);
    equal(token.length, PAIRING_TOKEN_BYTES * 2);
    ok(/^[0-9a-f]+$/.test(token), token);
    const table = decodeCredentials(store.get(CREDENTIALS_KEY));
    deepEqual(
      table.map((c) => c.tier),
      [Tier.operator],
    );
    deepEqual(table[0]!.credential, ascii(token));
    deepEqual(store.get(PAIRING_KEY), ascii(token));
    equal(tierOf(fx, ascii(token)), Tier.operator);
    ok(clearsWith(fx, ascii(token)), 'the paired operator clears the latch');
  });

  it('nobody else can: without the token a client is anonymous and its clear is refused', () => {
    const { fx } = bootWith(new MemoryStore(), '');
    fx.hub.setButton(true);
    fx.hub.setButton(false);
    const c = new TestClient(fx.hub);
    equal(c.hello({ credential: ascii('0123456789abcdef0123456789abcdef') }).tier, Tier.observer);
    c.send({ type: FrameType.ESTOP_CLEAR });
    deepEqual(
      c.nacks().map((n) => n.code),
      [Nack.FORBIDDEN],
    );
    ok(fx.hub.latch.latched);
  });

  it('a second boot keeps the paired credential, draws nothing and writes nothing, and names the token again for the console', () => {
    const store = new MemoryStore();
    const first = bootWith(store, '').outcome;
    const table = store.get(CREDENTIALS_KEY);
    const random = new CountingRandom(new SeededRandom(99));
    const writes = countWrites(store);
    const { fx, outcome } = bootWith(store, '', random);
    equal(outcome.source, ProvisionSource.STORED);
    equal(outcome.pairingToken, first.pairingToken);
    equal(random.drawn, 0);
    equal(writes.n, 0);
    deepEqual(store.get(CREDENTIALS_KEY), table);
    ok(clearsWith(fx, ascii(first.pairingToken!)));
  });

  it('two hubs pair with different tokens', () => {
    const a = bootWith(new MemoryStore(), '', new SeededRandom(1)).outcome.pairingToken;
    const b = bootWith(new MemoryStore(), '', new SeededRandom(2)).outcome.pairingToken;
    notEqual(a, b);
  });

  it('a configured list overrides it: the table is the list, the pairing ends, and the paired token no longer clears', () => {
    const store = new MemoryStore();
    const paired = bootWith(store, '').outcome.pairingToken!;
    const { fx, outcome } = bootWith(store, 'maintainer:shift-lead,observer:logger');
    equal(outcome.source, ProvisionSource.CONFIGURED);
    equal(outcome.pairingToken, null);
    equal(outcome.entitled, 1);
    deepEqual(
      decodeCredentials(store.get(CREDENTIALS_KEY)).map((c) => c.tier),
      [Tier.maintainer, Tier.observer],
    );
    equal(store.get(PAIRING_KEY), undefined);
    equal(tierOf(fx, ascii(paired)), Tier.observer, 'the paired token is anonymous now');
    ok(clearsWith(fx, ascii('shift-lead')));
  });

  it('a configured list stands on later boots without one, and no pairing comes back', () => {
    const store = new MemoryStore();
    bootWith(store, 'operator:console-a');
    const { fx, outcome } = bootWith(store, '');
    equal(outcome.source, ProvisionSource.STORED);
    equal(outcome.pairingToken, null);
    ok(clearsWith(fx, ascii('console-a')));
  });

  it('a configured list already stored is not written again', () => {
    const store = new MemoryStore();
    bootWith(store, 'operator:console-a');
    const writes = countWrites(store);
    bootWith(store, 'operator:console-a');
    equal(writes.n, 0);
  });

  it('a stored table of observers only, or one damaged before any operator, pairs and keeps what it holds', () => {
    const store = new MemoryStore();
    saveCredentials(store, [{ tier: Tier.observer, credential: ascii('logger') }]);
    const { fx, outcome } = bootWith(store, '');
    equal(outcome.source, ProvisionSource.PAIRED);
    deepEqual(
      decodeCredentials(store.get(CREDENTIALS_KEY)).map((c) => c.tier),
      [Tier.observer, Tier.operator],
    );
    equal(tierOf(fx, ascii('logger')), Tier.observer);

    const damaged = new MemoryStore();
    const bytes = encodeCredentials([
      { tier: Tier.observer, credential: ascii('logger') },
      { tier: Tier.operator, credential: ascii('lost') },
    ]);
    damaged.set(CREDENTIALS_KEY, bytes.subarray(0, bytes.length - 2)); // the operator's bytes cut short
    const again = bootWith(damaged, '');
    equal(again.outcome.source, ProvisionSource.PAIRED);
    ok(clearsWith(again.fx, ascii(again.outcome.pairingToken!)));
  });

  it('a full table of observers gives up its last entry to the pairing credential', () => {
    const store = new MemoryStore();
    saveCredentials(
      store,
      Array.from({ length: MAX_CREDENTIALS }, (_, i) => ({ tier: Tier.observer, credential: ascii(`obs-${i}`) })),
    );
    const { outcome } = bootWith(store, '');
    const table = decodeCredentials(store.get(CREDENTIALS_KEY));
    equal(table.length, MAX_CREDENTIALS);
    deepEqual(table[MAX_CREDENTIALS - 1]!.credential, ascii(outcome.pairingToken!));
    deepEqual(table[MAX_CREDENTIALS - 2]!.credential, ascii(`obs-${MAX_CREDENTIALS - 2}`));
  });

  it('the build refuses a configured list without an operator or maintainer: nobody could clear a latch', () => {
    let problems: readonly string[] = [];
    try {
      resolveDeviceConfig({ credentials: 'observer:logger,observer:viewer' });
    } catch (e) {
      ok(e instanceof DeviceConfigError);
      problems = e.problems;
    }
    deepEqual(problems, ['credentials: no operator or maintainer entry: nobody could clear a latch']);
    equal(resolveDeviceConfig({ credentials: 'observer:logger,operator:console' }).credentials!.length, 2);
  });
});
