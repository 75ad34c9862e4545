// The platform-free parts of the device entry, on Node: the configuration (device/config.ts),
// the Store over NVS preferences (device/store.ts) and the robot link's framing, queue and
// stop line (device/robot-link.ts). The Moddable bindings around them (device/main.ts,
// device/robot.ts) are type-checked by tsconfig.device.json and checked by device-build.test.ts.
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { readFileSync } from 'node:fs';
import { loadCatalog, type CatalogIndex } from '../../catalog/index.js';
import { DEFAULT_CATALOG } from '../../catalog/default.js';
import { Tier } from '../../catalog/schema.js';
import { crc16 } from '../../hub/crc16.js';
import { CREDENTIALS_KEY, decodeCredentials, encodeCredentials, MAX_CREDENTIALS } from '../../hub/credentials.js';
import { EstopSource } from '../../hub/estop-frame.js';
import { Nack } from '../../hub/nack.js';
import type { SampleBlock } from '../../hub/ports.js';
import { DeviceConfigError, DEVICE_DEFAULTS, resolveDeviceConfig, WifiMode } from '../../device/config.js';
import {
  ROBOT_FRAME_OVERHEAD,
  ROBOT_SYNC,
  RobotDecoder,
  RobotEncoder,
  RobotFrameType,
  RobotInbound,
  RobotLink,
  type RobotHub,
  type RobotTx,
  type StopLine,
} from '../../device/robot-link.js';
import { PreferenceStore, STORE_VALUE_MAX_BYTES, StoreError, type PreferenceApi } from '../../device/store.js';
import { GattConnection, gattWritten, type GattPeer } from '../../bindings/ble/gatt-connection.js';
import { BLE_NOTIFY_RETRY_MS, BLE_NOTIFY_TIMEOUT_MS, BleLink } from '../../bindings/ble/link.js';
import { FragmentPosition, header } from '../../bindings/ble/fragment.js';
import { FrameType } from '../../hub/frames.js';
import { tagOf } from '../../hub/ports.js';
import { credentialStore, makeHub, MemoryStore, RecordingRobot, SeededRandom, TestClient, VirtualClock } from '../lib/hub-fixture.js';
import { configuredCredentials, createDeviceHub, deviceHubWiring, deviceUplinkConfig, DEVICE_UPLINK_QUEUE_BYTES, HEAP_COUNTERS, storeConfiguredCredentials, type InstrumentationApi } from '../../device/wiring.js';
import { AdmissionReason } from '../../hub/admission.js';
import { DEFAULT_HEAP_LIMIT_BYTES } from '../../hub/admission.js';
import { LadderRung, LadderTrigger } from '../../hub/ladder.js';
import { LOAD_PERIOD_MS } from '../../hub/hub.js';
import { PROTOCOL_VERSION, type NackFrame } from '../../hub/frames.js';
import { DEVICE_MAX_HUB_FRAME_BYTES } from '../../device/config.js';
import { SimulatedRobot, SimStopLine } from '../../device/sim-robot.js';
import type { DataFrame } from '../../hub/frames.js';

// ------------------------------------------------------------------------------ configuration

function problemsOf(raw: Record<string, unknown>): readonly string[] {
  try {
    resolveDeviceConfig(raw);
  } catch (e) {
    assert.ok(e instanceof DeviceConfigError, String(e));
    return e.problems;
  }
  return [];
}


/** Samples as the robot port receives them (hub/ports.ts SampleBlock). */
function blockOf(samples: number[][]): SampleBlock {
  const width = samples.length > 0 ? (samples[0] as number[]).length : 0;
  return { count: samples.length, width, numbers: Float64Array.from(samples.flat()) };
}

/** One sample [t, v…] through the encoder. */
function encPublish(enc: { publish(ch: number, numbers: ArrayLike<number>, at: number, width: number): number }, channelId: number, sample: number[]): number {
  return enc.publish(channelId, sample, 0, sample.length);
}

describe('device/config: the device configuration', () => {
  it('resolves the defaults alone, frozen all the way down', () => {
    const c = resolveDeviceConfig({});
    assert.equal(c.hubId, 'robot-hub');
    assert.equal(c.slots, 8);
    assert.equal(c.tickMs, 10);
    assert.equal(c.deadmanMs, 500);
    assert.equal(c.neverShedBytes, 768);
    assert.equal(c.anonymousTier, Tier.observer);
    assert.equal(c.credentials, null);
    assert.deepEqual(c.wifi, { mode: WifiMode.AP, ssid: 'robot-hub', password: 'robot-hub-setup', channel: 6, maxClients: 4, openCeiling: Tier.observer });
    assert.deepEqual(c.ble, { enabled: true, name: 'robot-hub', pairing: 'just-works', ceiling: Tier.maintainer });
    assert.deepEqual(c.espnow, { enabled: true, broadcast: false, pmk: '', peers: [], allowUnencrypted: false, maxEncrypted: 7 });
    assert.equal(c.tcpPort, 7000);
    assert.equal(c.wsPort, 7001);
    assert.deepEqual(c.estop, { pin: 4, level: 1, pull: 'up', debounceMs: 50 });
    assert.deepEqual(c.stop, { pin: 13, level: 0, guardMs: 1000 });
    assert.deepEqual(c.robotUart, { port: 1, transmit: 18, receive: 19, baud: 921600 });
    for (const o of [c, c.wifi, c.ble, c.espnow, c.espnow.peers, c.estop, c.stop, c.robotUart]) assert.ok(Object.isFrozen(o));
    assert.ok(Object.isFrozen(DEVICE_DEFAULTS));
  });

  it('takes the strings mcconfig’s key=value arguments give', () => {
    const c = resolveDeviceConfig({ wifi_mode: 'station', wifi_ssid: 'lab', wifi_password: 'x', wifi_channel: '11', ble: 'off', espnow_broadcast: '1', robot_uart: '-1', slots: '4', sntp: 'pool.ntp.org' });
    assert.equal(c.wifi.mode, WifiMode.STATION);
    assert.equal(c.wifi.password, 'x', 'a station password may be short: the network decides');
    assert.equal(c.wifi.channel, 11);
    assert.equal(c.ble.enabled, false);
    assert.equal(c.espnow.broadcast, true);
    assert.equal(c.robotUart, null);
    assert.equal(c.slots, 4);
  });

  it('parses credentials into tiers and tokens, and keeps the Store’s table when there are none', () => {
    const c = resolveDeviceConfig({ credentials: 'operator:op-key,maintainer:mx-key', anonymous_tier: 'none' });
    assert.deepEqual(c.credentials, [
      { tier: Tier.operator, token: 'op-key' },
      { tier: Tier.maintainer, token: 'mx-key' },
    ]);
    assert.equal(c.anonymousTier, -1);
    assert.equal(resolveDeviceConfig({ credentials: '  ' }).credentials, null);
  });

  it('takes the fleet uplink’s keys: off by default, on with a broker, each checked', () => {
    assert.equal(resolveDeviceConfig({}).uplink, null);
    const c = resolveDeviceConfig({ uplink_broker: 'broker.lan', uplink_port: '1884', uplink_site: 'north', uplink_telemetry: 'odom:5, imu:20', uplink_events: 'fault', uplink_format: 'cbor', uplink_fleet_key: 'k' });
    assert.deepEqual(c.uplink, {
      host: 'broker.lan',
      port: 1884,
      clientId: '',
      username: '',
      password: '',
      site: 'north',
      telemetry: [
        { channel: 'odom', rateHz: 5 },
        { channel: 'imu', rateHz: 20 },
      ],
      events: ['fault'],
      format: 'cbor',
      fleetKey: 'k',
      maxBytesPerS: 0,
    });
    assert.ok(Object.isFrozen(c.uplink));
    const problems = problemsOf({ uplink_broker: 'a b', uplink_site: 'north/x', uplink_telemetry: 'odom', uplink_format: 'xml', hub_id: 'hub#1' });
    for (const key of ['uplink_broker', 'uplink_site', 'uplink_telemetry', 'uplink_format', 'hub_id']) assert.ok(problems.some((x) => x.startsWith(key)), `${key} in ${problems.join('; ')}`);
  });

  it('takes a never-shed queue of 512 to 16384 bytes', () => {
    assert.equal(resolveDeviceConfig({ never_shed_bytes: '512' }).neverShedBytes, 512);
    assert.equal(resolveDeviceConfig({ never_shed_bytes: 16384 }).neverShedBytes, 16384);
    for (const bad of ['511', 16385]) assert.ok(problemsOf({ never_shed_bytes: bad }).some((x) => x.startsWith('never_shed_bytes')), String(bad));
  });

  it('lists every problem at once', () => {
    const problems = problemsOf({
      wifi_channel: 14,
      wifi_password: 'short',
      tcp_port: 7001,
      ws_port: '7001',
      ble_name: 'a name far too long for a BLE scan response',
      estop_pin: 13,
      robot_uart: 0,
      estop_pull: 'sideways',
      ble: 'maybe',
      credentials: 'admin:x,operator:,operator:k,maintainer:k',
    });
    const expect = [
      /^wifi_channel: 14 /,
      /^wifi_password: an access point’s|^wifi_password: an access point's/,
      /^tcp_port and ws_port: both 7001/,
      /^ble_name: \d+ bytes/,
      /^estop_pin and stop_pin: both GPIO 13/,
      /^robot_uart: 0 is the console UART/,
      /^estop_pull: "sideways"/,
      /^ble: "maybe" is not a boolean/,
      /^credentials: entry 1 /,
      /^credentials: entry 2 has a token of 0 bytes/,
      /^credentials: entry 4 repeats a token/,
    ];
    for (const re of expect) assert.ok(problems.some((p) => re.test(p)), `${re} in:\n${problems.join('\n')}`);
    assert.equal(problems.length, expect.length, problems.join('\n'));
  });

  it('refuses the SDK’s own ssid key, which would hold the start until Wi-Fi joins', () => {
    const problems = problemsOf({ ssid: 'lab' });
    assert.equal(problems.length, 1);
    assert.match(problems[0] as string, /^ssid: .*wifi_mode=station/);
  });

  it('refuses more credentials than the hub keeps, and an open AP only when asked for', () => {
    const many = Array.from({ length: MAX_CREDENTIALS + 1 }, (_, i) => `observer:k${i}`).join(',');
    assert.ok(problemsOf({ credentials: many }).some((p) => p.includes(`at most ${MAX_CREDENTIALS}`)));
    assert.equal(resolveDeviceConfig({ wifi_password: '' }).wifi.password, '');
  });
});

// ------------------------------------------------------------------------------ the Store

/** A model of modules/files/preference/esp32/modPreference.c over NVS. */
class FakePreference implements PreferenceApi {
  readonly nvs = new Map<string, string | boolean | number | ArrayBuffer>();
  sets = 0;

  get(domain: string, key: string): string | boolean | number | ArrayBuffer | undefined {
    const v = this.nvs.get(`${domain}/${key}`);
    // NVS hands back a fresh copy of a blob.
    return v instanceof ArrayBuffer ? v.slice(0) : v;
  }

  set(domain: string, key: string, value: string | boolean | number | ArrayBuffer): void {
    if (domain.length > 15 || key.length > 15) throw new Error('nvs set fail');
    if (typeof value === 'object' && !(value instanceof ArrayBuffer)) throw new Error('unsupported type');
    if (value instanceof ArrayBuffer && value.byteLength === 0) throw new Error('a zero-length blob');
    this.sets++;
    this.nvs.set(`${domain}/${key}`, value instanceof ArrayBuffer ? value.slice(0) : value);
  }

  delete(domain: string, key: string): void {
    this.nvs.delete(`${domain}/${key}`);
  }
}

describe('device/store: the Store over Moddable preferences', () => {
  it('keeps bytes as a blob and gives back a copy, a view’s bytes only', () => {
    const prefs = new FakePreference();
    const store = new PreferenceStore(prefs);
    const big = new Uint8Array([9, 9, 1, 2, 3, 9]);
    store.set('estop', big.subarray(2, 5));
    const stored = prefs.nvs.get('hub/estop');
    assert.ok(stored instanceof ArrayBuffer);
    assert.equal(stored.byteLength, 3);
    const got = store.get('estop');
    assert.deepEqual(got, new Uint8Array([1, 2, 3]));
    (got as Uint8Array)[0] = 7;
    assert.deepEqual(store.get('estop'), new Uint8Array([1, 2, 3]));
  });

  it('keeps an empty value without a zero-length blob, and reads back nothing for a missing key', () => {
    const prefs = new FakePreference();
    const store = new PreferenceStore(prefs);
    store.set(CREDENTIALS_KEY, encodeCredentials([]));
    assert.deepEqual(store.get(CREDENTIALS_KEY), new Uint8Array(0));
    assert.equal(store.get('missing'), undefined);
    store.delete(CREDENTIALS_KEY);
    assert.equal(store.get(CREDENTIALS_KEY), undefined);
    // Something the hub did not write (a number, another string) is no record of the hub's.
    prefs.set('hub', 'other', 5);
    assert.equal(store.get('other'), undefined);
  });

  it('refuses NVS-invalid names and values over 4000 bytes before NVS sees them', () => {
    const prefs = new FakePreference();
    const store = new PreferenceStore(prefs);
    assert.throws(() => store.set('a-key-of-16-char', new Uint8Array(1)), StoreError);
    assert.throws(() => store.get(''), StoreError);
    assert.throws(() => store.set('sp ace', new Uint8Array(1)), StoreError);
    assert.throws(() => store.set('big', new Uint8Array(STORE_VALUE_MAX_BYTES + 1)), StoreError);
    store.set('big', new Uint8Array(STORE_VALUE_MAX_BYTES));
    assert.equal(prefs.sets, 1);
    assert.throws(() => new PreferenceStore(prefs, 'a-domain-too-long'), StoreError);
  });

  it('round-trips the credential table the hub reads at boot', () => {
    const store = new PreferenceStore(new FakePreference());
    const list = [{ tier: Tier.operator, credential: new Uint8Array([1, 2, 3]) }];
    store.set(CREDENTIALS_KEY, encodeCredentials(list));
    assert.deepEqual(decodeCredentials(store.get(CREDENTIALS_KEY)), list);
  });
});

// ------------------------------------------------------------------------------ the robot link

class Frames {
  readonly got: { type: number; payload: number[] }[] = [];
  frame(type: number, bytes: Uint8Array, start: number, length: number): void {
    this.got.push({ type, payload: Array.from(bytes.subarray(start, start + length)) });
  }
}

class FakeLine implements StopLine {
  readonly levels: boolean[] = [];
  set(stopped: boolean): void {
    this.levels.push(stopped);
  }
}

/** A UART that takes `room` bytes per drain, like the ESP32's 128-byte FIFO. */
class FakeTx implements RobotTx {
  readonly out: number[] = [];
  free: number;
  constructor(free = 128) {
    this.free = free;
  }
  room(): number {
    return this.free;
  }
  write(buf: Uint8Array, start: number, end: number): boolean {
    if (end - start > this.free) return false;
    for (let i = start; i < end; i++) this.out.push(buf[i] as number);
    this.free -= end - start;
    return true;
  }
}

function decodeAll(bytes: readonly number[]): { type: number; payload: number[] }[] {
  const f = new Frames();
  new RobotDecoder(f).push(Uint8Array.from(bytes), 0, bytes.length);
  return f.got;
}

describe('device/robot-link: the serial framing', () => {
  it('seals a frame with sync, type, length and a CRC-16 over type to payload', () => {
    const enc = new RobotEncoder();
    const n = enc.stop(EstopSource.DEADMAN);
    assert.equal(n, 1 + ROBOT_FRAME_OVERHEAD);
    const b = enc.buf;
    assert.deepEqual(Array.from(b.subarray(0, 4)), [ROBOT_SYNC, RobotFrameType.STOP, 1, EstopSource.DEADMAN]);
    const crc = crc16(b, 1, 4);
    assert.deepEqual(Array.from(b.subarray(4, 6)), [crc >>> 8, crc & 0xff]);
  });

  it('encodes a published sample as t (f64) then float32 values, little-endian', () => {
    const enc = new RobotEncoder();
    const n = encPublish(enc, 30, [1234.5, 0.25, -2]);
    const [f] = decodeAll(Array.from(enc.buf.subarray(0, n)));
    assert.equal(f?.type, RobotFrameType.PUBLISH);
    const p = Uint8Array.from(f?.payload ?? []);
    const v = new DataView(p.buffer);
    assert.equal(p[0], 30);
    assert.equal(p[1], 2);
    assert.equal(v.getFloat64(2, true), 1234.5);
    assert.equal(v.getFloat32(10, true), 0.25);
    assert.equal(v.getFloat32(14, true), -2);
    assert.equal(encPublish(enc, 30, [0, ...new Array<number>(62).fill(1)]), -1, '2 + 8 + 4 × 62 > 255');
  });

  it('encodes intent arguments as tagged numbers and texts, and refuses what one frame cannot hold', () => {
    const enc = new RobotEncoder();
    const n = enc.intent(41, [2, 'héllo']);
    const [f] = decodeAll(Array.from(enc.buf.subarray(0, n)));
    const p = f?.payload ?? [];
    assert.deepEqual(p.slice(0, 3), [41, 2, 0x00]);
    assert.deepEqual(p.slice(11), [0x01, 6, 0x68, 0xc3, 0xa9, 0x6c, 0x6c, 0x6f]);
    assert.equal(enc.intent(41, new Array<string>(16).fill('x'.repeat(64))), -1);
  });

  it('reads frames split anywhere, one byte at a time included', () => {
    const enc = new RobotEncoder();
    const bytes = [0x00, 0x13, ...enc.buf.subarray(0, enc.stop(2)), ...enc.buf.subarray(0, enc.release()), ...enc.buf.subarray(0, encPublish(enc, 31, [5, 1, 2]))];
    const whole = decodeAll(bytes);
    assert.deepEqual(
      whole.map((f) => f.type),
      [RobotFrameType.STOP, RobotFrameType.RELEASE, RobotFrameType.PUBLISH],
    );
    for (let cut = 1; cut < bytes.length; cut++) {
      const f = new Frames();
      const d = new RobotDecoder(f);
      const u = Uint8Array.from(bytes);
      d.push(u, 0, cut);
      d.push(u, cut, u.length);
      assert.deepEqual(f.got, whole, `cut at ${cut}`);
    }
    const f = new Frames();
    const d = new RobotDecoder(f);
    for (const x of bytes) d.push(Uint8Array.of(x), 0, 1);
    assert.deepEqual(f.got, whole);
    assert.equal(d.skipped, 2);
  });

  it('drops a damaged frame and still finds the frame that a sync byte inside it hides', () => {
    const enc = new RobotEncoder();
    const good = Array.from(enc.buf.subarray(0, encPublish(enc, 31, [1, 2])));
    // A damaged frame whose length byte swallows the good frame that follows it.
    const bad = [ROBOT_SYNC, RobotFrameType.SAMPLE, 12, 0x00];
    const f = new Frames();
    const d = new RobotDecoder(f);
    const u = Uint8Array.from([...bad, ...good]);
    d.push(u, 0, u.length);
    assert.equal(d.crcErrors, 1);
    assert.equal(f.got.length, 1);
    assert.deepEqual(f.got[0]?.payload, good.slice(3, good.length - 2));
    // Flipped payload bits fail the CRC.
    const flipped = good.slice();
    flipped[5] = (flipped[5] as number) ^ 0x10;
    const f2 = new Frames();
    const d2 = new RobotDecoder(f2);
    d2.push(Uint8Array.from(flipped), 0, flipped.length);
    assert.equal(f2.got.length, 0);
    assert.equal(d2.crcErrors, 1);
  });

  it('never loses a good frame after random damage, once a frame’s worth of bytes has followed (property)', () => {
    // A sync byte in the noise may claim a long frame that swallows the good one: its CRC fails
    // only once that many bytes have come, and then the good frame is read again from them.
    const enc = new RobotEncoder();
    let seed = 7;
    const rnd = (n: number): number => {
      seed = (seed * 1103515245 + 12345) >>> 0;
      return seed % n;
    };
    for (let run = 0; run < 200; run++) {
      const noise = Array.from({ length: rnd(40) }, () => (rnd(4) === 0 ? ROBOT_SYNC : rnd(256)));
      const good = Array.from(enc.buf.subarray(0, encPublish(enc, 30 + rnd(5), [rnd(1000), rnd(7), rnd(9)])));
      const got = decodeAll([...noise, ...good, ...new Array<number>(ROBOT_FRAME_OVERHEAD + 255).fill(0)]);
      assert.ok(got.some((g) => g.type === RobotFrameType.PUBLISH && g.payload.length === good.length - ROBOT_FRAME_OVERHEAD && g.payload.every((x, i) => x === good[3 + i])), `run ${run}`);
    }
  });
});

/** CRC-16/CCITT-FALSE bit by bit: the reference the table-driven one (hub/crc16.ts) is held to. */
function crcBits(bytes: ArrayLike<number>, start: number, end: number): number {
  let crc = 0xffff;
  for (let i = start; i < end; i++) {
    crc ^= ((bytes[i] as number) & 0xff) << 8;
    for (let k = 0; k < 8; k++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff;
  }
  return crc;
}

/**
 * The robot link's reader one byte at a time, as it was before it copied a frame's body in one
 * loop: the reference the reader is held to (frames, CRC errors, skipped bytes).
 */
class ByteReader {
  readonly got: { type: number; payload: number[] }[] = [];
  crcErrors = 0;
  skipped = 0;
  private buf: number[] = [];
  private need = 0;
  private replay: number[] = [];
  push(bytes: ArrayLike<number>): void {
    for (let i = 0; i < bytes.length; i++) {
      this.byte(bytes[i] as number);
      while (this.replay.length > 0) this.byte(this.replay.shift() as number);
    }
  }
  private byte(x: number): void {
    if (this.buf.length === 0) {
      if (x !== ROBOT_SYNC) this.skipped++;
      else this.buf.push(x);
      return;
    }
    this.buf.push(x);
    if (this.buf.length === 3) this.need = 3 + (this.buf[2] as number) + 2;
    if (this.buf.length < 3 || this.buf.length < this.need) return;
    const b = this.buf;
    const n = b[2] as number;
    this.buf = [];
    if (crcBits(b, 1, 3 + n) === (((b[3 + n] as number) << 8) | (b[4 + n] as number))) this.got.push({ type: b[1] as number, payload: b.slice(3, 3 + n) });
    else {
      this.crcErrors++;
      this.replay = [...b.slice(1), ...this.replay];
    }
  }
}

describe('device/robot-link: the reader and the CRC against references (property)', () => {
  it('the table-driven CRC-16 is the bitwise one, from any start and continued', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), fc.nat(), (bytes, cut) => {
        const c = bytes.length === 0 ? 0 : cut % bytes.length;
        assert.equal(crc16(bytes), crcBits(bytes, 0, bytes.length));
        assert.equal(crc16(bytes, c, bytes.length, crc16(bytes, 0, c)), crcBits(bytes, 0, bytes.length));
      }),
      { numRuns: 300 },
    );
    assert.equal(crc16(Uint8Array.from('123456789', (ch) => ch.charCodeAt(0))), 0x29b1);
  });

  it('reads what the byte-at-a-time reader reads, from good, damaged and noisy streams cut into any pieces', () => {
    const enc = new RobotEncoder();
    const piece = fc.oneof(
      { weight: 4, arbitrary: fc.tuple(fc.integer({ min: 1, max: 60 }), fc.array(fc.float({ noNaN: true }), { maxLength: 40 })).map(([ch, v]) => Array.from(enc.buf.subarray(0, encPublish(enc, ch, [ch, ...v])))) },
      { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 1, max: 60 }), fc.array(fc.float({ noNaN: true }), { maxLength: 10 }), fc.nat(), fc.integer({ min: 1, max: 255 })).map(([ch, v, at, flip]) => {
        const f = Array.from(enc.buf.subarray(0, encPublish(enc, ch, [ch, ...v])));
        const k = 1 + (at % (f.length - 1));
        f[k] = (f[k] as number) ^ flip;
        return f;
      }) },
      { weight: 1, arbitrary: fc.array(fc.oneof(fc.constant(ROBOT_SYNC), fc.integer({ min: 0, max: 255 })), { maxLength: 12 }) },
    );
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 12 }), fc.array(fc.integer({ min: 1, max: 80 }), { minLength: 1, maxLength: 8 }), (pieces, cuts) => {
        const bytes = Uint8Array.from(pieces.flat());
        const ref = new ByteReader();
        ref.push(bytes);
        const f = new Frames();
        const d = new RobotDecoder(f);
        for (let at = 0, k = 0; at < bytes.length; k++) {
          const end = Math.min(bytes.length, at + (cuts[k % cuts.length] as number));
          d.push(bytes, at, end);
          at = end;
        }
        assert.deepEqual(f.got, ref.got);
        assert.equal(d.crcErrors, ref.crcErrors);
        assert.equal(d.skipped, ref.skipped);
      }),
      { numRuns: 300 },
    );
  });

  it('a ring that wraps hands the transmitter every publication whole and in order', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 1, max: 20 }), fc.integer({ min: 0, max: 10 })), { minLength: 1, maxLength: 60 }), fc.array(fc.integer({ min: 0, max: 90 }), { minLength: 1, maxLength: 10 }), (pubs, rooms) => {
        const tx = new FakeTx(0);
        const port = new RobotLink({ line: new FakeLine(), tx, queueBytes: 200 });
        const sent: number[][] = [];
        for (let i = 0; i < pubs.length; i++) {
          const [ch, width] = pubs[i] as [number, number];
          const sample = [i, ...Array.from({ length: width }, (_, k) => k + 0.5)];
          const before = port.counters.published;
          port.publish(ch, blockOf([sample]));
          if (port.counters.published > before) sent.push([ch, ...sample]);
          tx.free = rooms[i % rooms.length] as number;
          port.pump();
        }
        tx.free = 1 << 20;
        port.pump();
        const got = decodeAll(tx.out).map((g) => {
          const p = Uint8Array.from(g.payload);
          const v = new DataView(p.buffer);
          return [p[0] as number, v.getFloat64(2, true), ...Array.from({ length: p[1] as number }, (_, k) => v.getFloat32(10 + 4 * k, true))];
        });
        assert.deepEqual(got, sent);
      }),
      { numRuns: 200 },
    );
  });
});

describe('device/robot-link: the robot port', () => {
  it('holds the stop line at stop from construction, and stop() drives it before any byte is sent', () => {
    const line = new FakeLine();
    const tx = new FakeTx(0);
    const port = new RobotLink({ line, tx });
    assert.deepEqual(line.levels, [true]);
    port.release();
    port.stop(EstopSource.HUB_BUTTON);
    assert.deepEqual(line.levels, [true, false, true]);
    assert.equal(tx.out.length, 0, 'the UART had no room: the line alone carried the stop');
    assert.ok(port.isStopped);
  });

  it('sends STOP ahead of every queued publication, after the frame already begun', () => {
    const tx = new FakeTx(10);
    const port = new RobotLink({ line: new FakeLine(), tx });
    port.publish(30, blockOf([
      [1, 0.5, 0.5],
      [2, 0.5, 0.5],
    ]));
    assert.equal(tx.out.length, 10, 'the first frame is begun');
    port.stop(EstopSource.CLIENT);
    tx.free = 1000;
    port.pump();
    const frames = decodeAll(tx.out);
    assert.deepEqual(
      frames.map((f) => f.type),
      [RobotFrameType.PUBLISH, RobotFrameType.STOP, RobotFrameType.PUBLISH],
    );
    assert.equal(port.backlog, 0);
  });

  it('drops publications the queue cannot hold, and answers intents with the reason', () => {
    const tx = new FakeTx(0);
    // Two 23-byte samples fit 60 bytes; a third does not, nor a 16-byte intent after them.
    const port = new RobotLink({ line: new FakeLine(), tx, queueBytes: 60 });
    port.publish(30, blockOf([
      [1, 1, 1],
      [2, 2, 2],
      [3, 3, 3],
    ]));
    assert.equal(port.counters.published, 2);
    assert.equal(port.counters.publishDrops, 1);
    assert.equal(port.intent(41, [1]), Nack.HUB_PRESSURE);
    assert.equal(port.intent(41, new Array<string>(16).fill('y'.repeat(64))), Nack.TOO_LARGE);
    tx.free = 1000;
    port.pump();
    assert.equal(port.intent(41, [1]), 0);
    assert.equal(decodeAll(tx.out).length, 3);
    const lineOnly = new RobotLink({ line: new FakeLine(), tx: null });
    assert.equal(lineOnly.intent(41, []), Nack.NOT_READY);
    lineOnly.publish(30, blockOf([[1, 1, 1]]));
    assert.equal(lineOnly.counters.publishDrops, 1);
  });

  it('keeps the newest STOP/RELEASE frames when more wait than it holds', () => {
    const tx = new FakeTx(0);
    const port = new RobotLink({ line: new FakeLine(), tx });
    for (let i = 0; i < 3; i++) {
      port.stop(i);
      port.release();
    }
    assert.equal(port.counters.urgentDrops, 2);
    tx.free = 1000;
    port.pump();
    const frames = decodeAll(tx.out);
    assert.deepEqual(
      frames.map((f) => [f.type, f.payload[0]]),
      [
        [RobotFrameType.STOP, 1],
        [RobotFrameType.RELEASE, undefined],
        [RobotFrameType.STOP, 2],
        [RobotFrameType.RELEASE, undefined],
      ],
    );
  });
});

class FakeHub implements RobotHub {
  readonly samples: [number, number, number[]][] = [];
  readonly events: [number, number[], string | undefined][] = [];
  readonly estops: number[] = [];
  publishSample(channelId: number, t: number, values: Float64Array, count: number): void {
    this.samples.push([channelId, t, Array.from(values.subarray(0, count))]);
  }
  publishEvent(channelId: number, _t: number, values: readonly number[], text?: string): void {
    this.events.push([channelId, values.slice(), text]);
  }
  estop(source: number): void {
    this.estops.push(source);
  }
}

function frame(type: number, payload: readonly number[]): number[] {
  const b = new Uint8Array(payload.length + ROBOT_FRAME_OVERHEAD);
  b[0] = ROBOT_SYNC;
  b[1] = type;
  b[2] = payload.length;
  b.set(payload, 3);
  const crc = crc16(b, 1, 3 + payload.length);
  b[3 + payload.length] = crc >>> 8;
  b[4 + payload.length] = crc & 0xff;
  return Array.from(b);
}

function f32s(values: readonly number[]): number[] {
  return Array.from(new Uint8Array(Float32Array.from(values).buffer));
}

describe('device/robot-link: telemetry from the robot', () => {
  const catalog: CatalogIndex = loadCatalog(DEFAULT_CATALOG);
  const stream = catalog.channels.find((c) => c.direction === 0 && c.cls === 0 && c.fieldCount > 1);
  const event = catalog.channels.find((c) => c.direction === 0 && c.name !== 'safety-events' && c.queueDepth > 0);
  const publication = catalog.channels.find((c) => c.direction === 1);

  it('hands samples to the hub stamped with the hub’s clock, and a robot ESTOP to the latch', () => {
    assert.ok(stream);
    const hub = new FakeHub();
    const inbound = new RobotInbound(hub, catalog, { now: () => 4242 });
    const values = Array.from({ length: stream.fieldCount }, (_, i) => i + 0.5);
    const bytes = Uint8Array.from([...frame(RobotFrameType.SAMPLE, [stream.id, stream.fieldCount, ...f32s(values)]), ...frame(RobotFrameType.ESTOP, [])]);
    inbound.input(bytes, 0, bytes.length);
    assert.deepEqual(hub.samples, [[stream.id, 4242, values]]);
    assert.deepEqual(hub.estops, [EstopSource.ROBOT]);
  });

  it('hands events with their text to the hub', () => {
    assert.ok(event);
    const hub = new FakeHub();
    const inbound = new RobotInbound(hub, catalog, { now: () => 1 });
    const values = Array.from({ length: event.fieldCount }, (_, i) => i);
    const text = Array.from(Buffer.from('motor 2 hot', 'utf8'));
    const bytes = Uint8Array.from(frame(RobotFrameType.EVENT, [event.id, event.fieldCount, ...f32s(values), ...text]));
    inbound.input(bytes, 0, bytes.length);
    assert.deepEqual(hub.events, [[event.id, values, 'motor 2 hot']]);
  });

  it('refuses what names no telemetry channel or has the catalog’s field count wrong', () => {
    assert.ok(stream && publication);
    const hub = new FakeHub();
    const inbound = new RobotInbound(hub, catalog, { now: () => 0 });
    const bad = [
      frame(RobotFrameType.SAMPLE, [250, 1, ...f32s([1])]),
      frame(RobotFrameType.SAMPLE, [publication.id, publication.fieldCount, ...f32s(new Array<number>(publication.fieldCount).fill(0))]),
      frame(RobotFrameType.SAMPLE, [stream.id, stream.fieldCount + 1, ...f32s(new Array<number>(stream.fieldCount + 1).fill(0))]),
      frame(RobotFrameType.SAMPLE, [stream.id, stream.fieldCount, ...f32s(new Array<number>(stream.fieldCount).fill(0)), 0]),
      frame(RobotFrameType.STOP, [0]),
    ];
    for (const b of bad) inbound.input(Uint8Array.from(b), 0, b.length);
    assert.equal(inbound.counters.refused, bad.length);
    assert.equal(hub.samples.length, 0);
  });
});

// ------------------------------------------------------------------------------ hub wiring

class FakeInstrumentation implements InstrumentationApi {
  readonly values = new Map<number, number | undefined>();
  private readonly names: readonly string[];
  constructor(names: readonly string[]) {
    this.names = names;
  }
  map(name: string): number | undefined {
    const i = this.names.indexOf(name);
    return i >= 0 ? i + 1 : undefined;
  }
  get(what: number): number | undefined {
    return this.values.get(what);
  }
}

describe('device/wiring: what the device entry hands the hub', () => {
  it('passes the tick period and a heap reading summed over the XS heap counters', () => {
    const instr = new FakeInstrumentation(HEAP_COUNTERS);
    instr.values.set(1, 40_000);
    instr.values.set(2, 30_000);
    const w = deviceHubWiring(DEVICE_DEFAULTS.tick_ms, instr);
    assert.equal(w.tickPeriodMs, DEVICE_DEFAULTS.tick_ms);
    assert.ok(w.heap);
    assert.equal(w.heap(), 70_000);
    instr.values.set(1, 50_000);
    assert.equal(w.heap(), 80_000, 'read at each call');
  });

  it('reads NaN in a release build, whose counters read undefined, and leaves the port out without counters', () => {
    const release = new FakeInstrumentation(HEAP_COUNTERS);
    const heap = deviceHubWiring(20, release).heap;
    assert.ok(heap);
    assert.ok(Number.isNaN(heap()));
    assert.equal(deviceHubWiring(20, new FakeInstrumentation([])).heap, undefined);
    assert.equal(deviceHubWiring(20, undefined).heap, undefined);
  });

  it('is what both device entries give the Hub: createDeviceHub with the instrumentation module', () => {
    for (const entry of ['main.ts', 'main-lin.ts']) {
      const text = readFileSync(new URL(`../../../device/${entry}`, import.meta.url), 'utf8');
      assert.match(text, /import Instrumentation from 'instrumentation';/, entry);
      assert.match(text, /const hub = createDeviceHub\(\{ clock, random, store, robot[^}]*\}, config, Instrumentation\);/, entry);
      assert.ok(!/new Hub\(/.test(text), `${entry} makes its hub only through createDeviceHub`);
    }
  });
});

/** The hub a device entry makes (device/wiring.ts createDeviceHub), on a virtual clock. */
function deviceHub(instrumentation: InstrumentationApi | undefined, raw: Record<string, unknown> = {}, store: MemoryStore = credentialStore()): { hub: ReturnType<typeof createDeviceHub>; clock: VirtualClock; store: MemoryStore } {
  const clock = new VirtualClock();
  const hub = createDeviceHub({ clock, random: new SeededRandom(5), store, robot: new RecordingRobot(), catalog: loadCatalog(DEFAULT_CATALOG) }, resolveDeviceConfig(raw), instrumentation);
  return { hub, clock, store };
}

/** The health report's heap.usedBytes. */
function heapUsed(hub: ReturnType<typeof createDeviceHub>): number {
  return (hub.healthReport().metrics as unknown as { heap: { usedBytes: number } }).heap.usedBytes;
}

/** A HELLO from a new client: the NACK code and its retry hint, or 'welcome'. */
function hello(hub: ReturnType<typeof createDeviceHub>): [number, number] | 'welcome' {
  const c = new TestClient(hub);
  c.send({ type: FrameType.HELLO, version: PROTOCOL_VERSION, name: 'late' });
  for (const f of c.take()) {
    if (f.type === FrameType.WELCOME) return 'welcome';
    if (f.type === FrameType.NACK) return [(f as NackFrame).code, (f as NackFrame).retryAfterMs ?? -1];
  }
  return assert.fail('neither WELCOME nor NACK');
}

describe('device/wiring: the hub the device entries make (createDeviceHub)', () => {
  it('takes the configuration: identity, slots, deadman, never-shed queues, anonymous tier, the device frame size and the tick period', () => {
    const { hub } = deviceHub(undefined, { hub_id: 'arm-7', slots: '4', deadman_ms: 300, never_shed_bytes: 2048, anonymous_tier: 'none', tick_ms: 20 });
    const c = hub.config;
    assert.deepEqual(
      [c.hubId, c.slots, c.deadmanMs, c.neverShedBytes, c.anonymousTier, c.maxFrameBytes, c.tickPeriodMs],
      ['arm-7', 4, 300, 2048, -1, DEVICE_MAX_HUB_FRAME_BYTES, 20],
    );
  });

  it('runs loop-delay admission at the tick period: a tick 300 ms after the last at 10 ms refuses HELLO (event loop)', () => {
    const { hub, clock } = deviceHub(undefined);
    assert.equal(hub.config.tickPeriodMs, DEVICE_DEFAULTS.tick_ms);
    clock.t = 5000;
    hub.tick();
    clock.t = 5100; // 90 ms late: within the 250 ms allowed
    hub.tick();
    assert.equal(hello(hub), 'welcome');
    clock.t = 5400; // 290 ms late
    hub.tick();
    const r = hello(hub);
    assert.ok(Array.isArray(r) && r[0] === Nack.HUB_PRESSURE, `refused: ${JSON.stringify(r)}`);
    assert.equal(hub.admission.refusals[AdmissionReason.EVENT_LOOP], 1);
    // A hub told no period (the core's default) would have admitted it: the wiring is what turns it on.
    const clock2 = new VirtualClock();
    const plain = makeHub({}, credentialStore(), clock2).hub;
    clock2.t = 5000;
    plain.tick();
    clock2.t = 5400;
    plain.tick();
    assert.equal(hello(plain), 'welcome');
  });

  it('reads the heap through instrumentation: above the limit HELLO is refused (memory) and the ladder climbs on its heap rung', () => {
    const instr = new FakeInstrumentation(HEAP_COUNTERS);
    instr.values.set(1, 60_000);
    instr.values.set(2, 30_000);
    const { hub, clock } = deviceHub(instr);
    assert.equal(hello(hub), 'welcome', '90,000 bytes: under the limit');
    assert.equal(heapUsed(hub), 90_000);
    instr.values.set(1, DEFAULT_HEAP_LIMIT_BYTES); // with the slot heap: above the limit
    clock.advance(LOAD_PERIOD_MS);
    hub.tick();
    const r = hello(hub);
    assert.ok(Array.isArray(r) && r[0] === Nack.HUB_PRESSURE, `refused: ${JSON.stringify(r)}`);
    assert.ok(hub.admission.refusals[AdmissionReason.MEMORY] === 1 || hub.admission.refusals[AdmissionReason.LADDER] === 1);
    assert.equal(hub.ladder.rung, LadderRung.PARK_LOWEST, 'heap ratio above 1: the top rung');
    assert.equal(hub.ladder.state.trigger, LadderTrigger.HEAP);
    assert.equal(heapUsed(hub), DEFAULT_HEAP_LIMIT_BYTES + 30_000);
  });

  it('in a release build (the counters read undefined) the heap never refuses and reads -1; loop-delay admission still runs', () => {
    const release = new FakeInstrumentation(HEAP_COUNTERS);
    const { hub, clock } = deviceHub(release);
    clock.advance(LOAD_PERIOD_MS);
    hub.tick();
    assert.equal(heapUsed(hub), -1);
    assert.equal(hub.ladder.rung, LadderRung.CALM);
    assert.equal(hello(hub), 'welcome');
    clock.advance(400);
    hub.tick();
    const r = hello(hub);
    assert.ok(Array.isArray(r) && r[0] === Nack.HUB_PRESSURE, `refused: ${JSON.stringify(r)}`);
    assert.equal(hub.admission.refusals[AdmissionReason.EVENT_LOOP], 1);
  });

  it('writes the configured credentials to the Store when they differ, once, and keeps the stored table when none are configured', () => {
    const store = new MemoryStore();
    let writes = 0;
    const counting = { get: (k: string) => store.get(k), set: (k: string, v: Uint8Array) => { writes++; store.set(k, v); }, delete: (k: string) => store.delete(k) };
    const config = resolveDeviceConfig({ credentials: 'operator:op-key,maintainer:mx-key' });
    assert.equal(storeConfiguredCredentials(counting, config), true);
    assert.equal(storeConfiguredCredentials(counting, config), false, 'the same table: no second write to NVS');
    assert.equal(writes, 1);
    assert.deepEqual(decodeCredentials(store.get(CREDENTIALS_KEY)), configuredCredentials(config));
    assert.deepEqual(configuredCredentials(config)?.map((c) => c.tier), [Tier.operator, Tier.maintainer]);
    assert.equal(storeConfiguredCredentials(counting, resolveDeviceConfig({})), false);
    assert.equal(writes, 1, 'none configured: the stored table stands');
    // An unreadable record is written afresh.
    const broken = { get: (): Uint8Array => { throw new Error('nvs read'); }, set: (k: string, v: Uint8Array) => store.set(k, v), delete: () => {} };
    assert.equal(storeConfiguredCredentials(broken, resolveDeviceConfig({ credentials: 'operator:other' })), true);
    // The hub made after it grants the configured tier, as the entries make it.
    const fresh = new MemoryStore();
    storeConfiguredCredentials(fresh, config);
    const { hub } = deviceHub(undefined, {}, fresh);
    const c = new TestClient(hub);
    assert.equal(c.hello({ credential: new TextEncoder().encode('op-key') }).tier, Tier.operator);
  });
});

describe('device/wiring: the fleet uplink the device entries start (deviceUplinkConfig)', () => {
  const catalog = loadCatalog(DEFAULT_CATALOG);

  it('is off without a broker, the default', () => {
    assert.deepEqual(deviceUplinkConfig(resolveDeviceConfig({}), catalog), { config: null, problems: [] });
  });

  it('carries every uplink_* key into the uplink’s configuration, with the device’s smaller queue', () => {
    const { config, problems } = deviceUplinkConfig(
      resolveDeviceConfig({ hub_id: 'hub-7', uplink_broker: 'broker.site.lan', uplink_port: '1884', uplink_client_id: 'c7', uplink_user: 'u', uplink_password: 'p', uplink_site: 'north', uplink_telemetry: 'odom:5,imu:20', uplink_events: 'fault', uplink_format: 'cbor', uplink_fleet_key: 'k', uplink_max_bytes_per_s: '4000' }),
      catalog,
    );
    assert.deepEqual(problems, []);
    assert.ok(config);
    assert.equal(config.broker, 'mqtt://broker.site.lan:1884');
    assert.deepEqual([config.clientId, config.username, config.password, config.site, config.format, config.fleetKey, config.maxBytesPerS], ['c7', 'u', 'p', 'north', 'cbor', 'k', 4000]);
    assert.deepEqual(config.telemetry, [
      { channel: 'odom', rateHz: 5 },
      { channel: 'imu', rateHz: 20 },
    ]);
    assert.deepEqual(config.events, ['fault']);
    assert.equal(config.queueBytes, Math.max(DEVICE_UPLINK_QUEUE_BYTES, DEVICE_MAX_HUB_FRAME_BYTES + 4));
    assert.ok(config.queueBytes < 6144, 'smaller than the host’s least queue: the device hub’s frames are at most 1536 bytes');
  });

  it('runs no uplink when a channel is not in the catalog or not of the right class, and says why', () => {
    const { config, problems } = deviceUplinkConfig(resolveDeviceConfig({ uplink_broker: '10.0.0.2', uplink_telemetry: 'nosuch:5', uplink_events: 'odom' }), catalog);
    assert.equal(config, null);
    assert.equal(problems.length, 2, problems.join('\n'));
    assert.ok(problems.some((p) => p.includes("no channel 'nosuch'")), problems.join('\n'));
    assert.ok(problems.some((p) => p.startsWith('uplink events[0]')), problems.join('\n'));
  });

  it('is started by both entries and ticked after the hub', () => {
    for (const entry of ['device/main.ts', 'device/main-lin.ts']) {
      const text = readFileSync(new URL(`../../../${entry}`, import.meta.url), 'utf8');
      assert.match(text, /startDeviceUplink\(hub, \{ clock, store, random, log \}, config, CATALOG\)/, entry);
      // Ticked last, after the hub (device/tick.ts DeviceTick, test/core/device-tick.test.ts).
      assert.match(text, entry === 'device/main.ts' ? /after: uplink \}/ : /if \(uplink\) uplink\.tick\(\);/, entry);
      assert.match(text, /tickEvery\(config\.tickMs, /, entry);
    }
  });
});

// ------------------------------------------------------------------------------ the lin target's robot

/** A Log that keeps its event codes. */
function eventLog(): { codes: string[]; event(code: string): void } {
  const codes: string[] = [];
  return { codes, event: (code: string) => void codes.push(code) };
}

describe('device/sim-robot: the robot and stop line of the Linux simulator target', () => {
  it('holds the line at stop from construction; a stop sets the line and stops the robot, a release frees the line', () => {
    const line = new SimStopLine();
    assert.equal(line.stopped, true);
    const clock = new VirtualClock();
    const log = eventLog();
    const robot = new SimulatedRobot(loadCatalog(DEFAULT_CATALOG), clock, { log });
    assert.equal(robot.line.stopped, true, 'stop before anything else');
    robot.release();
    assert.deepEqual([robot.line.stopped, log.codes], [false, ['stop-line-run']]);
    robot.stop(EstopSource.CLIENT);
    assert.equal(robot.line.stopped, true);
    assert.equal(robot.robot.isStopped, true);
    assert.equal(robot.robot.stats.stops, 1);
    robot.stop(EstopSource.DEADMAN);
    assert.deepEqual(log.codes, ['stop-line-run', 'stop-line-stop'], 'one change of level, logged once');
    assert.equal(robot.line.changes, 2);
  });

  it('streams the catalog’s telemetry into the hub the entry makes, stamped with the hub’s clock, and a client ESTOP stops it', () => {
    const clock = new VirtualClock();
    clock.t = 1_700_000;
    const catalog = loadCatalog(DEFAULT_CATALOG);
    const robot = new SimulatedRobot(catalog, clock);
    const hub = createDeviceHub({ clock, random: new SeededRandom(9), store: new MemoryStore(), robot, catalog }, resolveDeviceConfig({}), undefined);
    robot.start(hub);
    assert.ok(!hub.latch.latched);
    robot.release();
    const imu = (catalog.byName('imu') as { id: number }).id;
    const client = new TestClient(hub);
    client.hello({ subWishes: [{ channelId: imu, wishedRateHz: 50 }] });
    client.take();
    for (let i = 0; i < 100; i++) {
      clock.advance(10);
      hub.tick();
      robot.advance(clock.now());
    }
    const data = client.take(FrameType.DATA) as DataFrame[];
    assert.ok(data.length >= 45 && data.length <= 51, `${data.length} imu samples in 1 s at 50 Hz`);
    for (const f of data) assert.ok(f.t > 1_700_000 && f.t <= clock.now(), `t ${f.t} on the hub's clock`);
    assert.equal((data[0] as DataFrame).values.length, 6);
    client.estop(1);
    assert.ok(hub.latch.latched);
    assert.equal(robot.line.stopped, true);
    assert.equal(robot.robot.isStopped, true);
  });

  it('stays stopped when the hub restores a latch from the Store', () => {
    const store = new MemoryStore();
    const clock = new VirtualClock();
    const catalog = loadCatalog(DEFAULT_CATALOG);
    const first = new SimulatedRobot(catalog, clock);
    const hub1 = createDeviceHub({ clock, random: new SeededRandom(9), store, robot: first, catalog }, resolveDeviceConfig({}), undefined);
    first.release();
    new TestClient(hub1).estop(3);
    assert.ok(hub1.latch.latched);
    // A restart: the entry makes the robot (line at stop), then the hub, and releases only when nothing latched.
    const again = new SimulatedRobot(catalog, clock);
    const hub2 = createDeviceHub({ clock, random: new SeededRandom(9), store, robot: again, catalog }, resolveDeviceConfig({}), undefined);
    assert.ok(hub2.latch.latched);
    assert.equal(again.line.stopped, true);
    assert.equal(again.robot.isStopped, true, 'the restored latch stopped the robot');
  });
});

// ------------------------------------------------------------------------------ BLE completions

interface NotifyCall {
  readonly characteristic: unknown;
  /** What notify was handed, as it was handed (the stack reads it during the call). */
  readonly value: ArrayBuffer | Uint8Array;
  /** Its bytes at the call: what the stack copies. */
  readonly bytes: Uint8Array;
  readonly callback: (status: number) => void;
}

/** The ESP32 GATT server connection as the binding calls it: notify's third argument is the completion. */
class FakeGattPeer implements GattPeer<object> {
  readonly maximumWrite = 20;
  readonly calls: NotifyCall[] = [];
  closed = false;
  notify(characteristic: object, value: ArrayBuffer | Uint8Array, callback: (status: number) => void): void {
    this.calls.push({ characteristic, value, bytes: value instanceof ArrayBuffer ? new Uint8Array(value.slice(0)) : value.slice(), callback });
  }
  close(): void {
    this.closed = true;
  }
}

/** A frame the link may not drop (hub/ports.ts Tag): the tests pace the queue, not the budget. */
const KEEP = tagOf(FrameType.DATA, 0, 1);

function gattLink(): { peer: FakeGattPeer; conn: GattConnection<object, FakeGattPeer>; link: BleLink; clock: VirtualClock } {
  const { hub, clock } = makeHub();
  const peer = new FakeGattPeer();
  const conn = new GattConnection<object, FakeGattPeer>(peer, () => {});
  conn.characteristic = {};
  conn.link = BleLink.attach(hub, conn, clock, undefined, true);
  return { peer, conn, link: conn.link, clock };
}

describe('bindings/ble/gatt-connection: notify completions pace the queue', () => {
  it('hands notify a completion as its third argument, one per connection, and its status releases the slot', () => {
    const { peer, conn, link, clock } = gattLink();
    assert.ok(link.send(new Uint8Array(19).fill(1), KEEP, 0));
    assert.ok(link.send(new Uint8Array(19).fill(2), KEEP, 0));
    assert.equal(peer.calls.length, 1, 'one notification in flight');
    const first = peer.calls[0] as NotifyCall;
    assert.equal(first.characteristic, conn.characteristic);
    // The view the link handed out goes to the stack as it is: exactly the notification (one
    // ONLY fragment: the header, then the 19 frame bytes) during the call, nothing copied or
    // resized here; once the stack has copied it, the link makes its buffer whole again.
    assert.equal(first.value, link.queue.out, 'the link’s own view, passed straight on');
    assert.ok(first.value instanceof Uint8Array);
    assert.equal(first.bytes.byteLength, 20, 'exactly the notification during the call');
    assert.ok(first.value.byteLength > 20, 'whole again once the stack copied it');
    assert.deepEqual(first.bytes, Uint8Array.from([header(FragmentPosition.ONLY, 0), ...new Uint8Array(19).fill(1)]));
    assert.equal(typeof first.callback, 'function');
    assert.equal(first.callback, conn.completed, 'the callback the connection keeps referenced');
    assert.ok(link.queue.inFlight);
    clock.advance(5);
    first.callback(0);
    assert.equal(peer.calls.length, 2, 'the completion handed out the next notification');
    assert.equal((peer.calls[1] as NotifyCall).callback, first.callback, 'the same function for every notification');
    assert.equal((peer.calls[1] as NotifyCall).value, first.value, 'the same view every time, now exactly the next notification');
    assert.deepEqual((peer.calls[1] as NotifyCall).bytes, Uint8Array.from([header(FragmentPosition.ONLY, 1), ...new Uint8Array(19).fill(2)]));
    assert.equal(link.queue.counters.completed, 1);
    (peer.calls[1] as NotifyCall).callback(0);
    assert.ok(!link.queue.inFlight);
    clock.advance(BLE_NOTIFY_TIMEOUT_MS * 2);
    link.tick();
    assert.equal(link.counters.unconfirmed, 0, 'completed notifications never reach the timeout');
  });

  it('fails a notification on a nonzero status and retries it; counts one done by the timeout only when no completion comes', () => {
    const { peer, link, clock } = gattLink();
    assert.ok(link.send(new Uint8Array(19).fill(3), KEEP, 0));
    assert.ok(link.send(new Uint8Array(19).fill(4), KEEP, 0));
    (peer.calls[0] as NotifyCall).callback(6); // BLE_HS_ENOMEM
    clock.advance(BLE_NOTIFY_RETRY_MS);
    link.tick();
    assert.equal(peer.calls.length, 2);
    assert.deepEqual((peer.calls[1] as NotifyCall).bytes, (peer.calls[0] as NotifyCall).bytes, 'the failed notification again');
    assert.equal((peer.calls[1] as NotifyCall).bytes.byteLength, 20, 'exactly the notification, not the staging area');
    clock.advance(BLE_NOTIFY_TIMEOUT_MS - 1);
    link.tick();
    assert.equal(peer.calls.length, 2, 'still waiting for the completion');
    assert.equal(link.counters.unconfirmed, 0);
    clock.advance(1);
    link.tick();
    assert.equal(link.counters.unconfirmed, 1, 'the lost completion counted done by the timeout');
    assert.equal(peer.calls.length, 3, 'and the next notification handed out');
  });
});

describe('bindings/ble/gatt-connection: a GATT write reaches its own connection’s link', () => {
  it('hands the write’s bytes to the link of the connection it came from, and nothing to the others', () => {
    const a = gattLink();
    const b = gattLink();
    const got: number[][] = [];
    const sinkOf = (link: BleLink): void => {
      link.connect({ frame: (bytes, start, end) => got.push(Array.from(bytes.subarray(start, end))), lost: () => {}, levelChanged: () => {} });
    };
    sinkOf(a.link);
    const seen: number[][] = [];
    b.link.connect({ frame: (bytes, start, end) => seen.push(Array.from(bytes.subarray(start, end))), lost: () => {}, levelChanged: () => {} });
    // An ONLY fragment (header 0) carrying three bytes, as the SDK hands it: a new ArrayBuffer.
    const value = Uint8Array.of(0, 7, 8, 9).buffer;
    gattWritten([b.conn, a.conn], value, a.peer);
    assert.deepEqual(got, [[7, 8, 9]]);
    assert.deepEqual(seen, []);
    gattWritten([b.conn, a.conn], value, new FakeGattPeer());
    assert.equal(got.length + seen.length, 1, 'a connection the binding does not know: nothing');
    a.conn.link = null;
    gattWritten([a.conn], value, a.peer);
    assert.equal(got.length, 1, 'a connection whose link is gone: nothing');
  });
});
