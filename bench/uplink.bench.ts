// The fleet uplink's cost on the device (docs/fleet.md "Limits", docs/performance.md "Fits the
// ESP32"): the platform-free Uplink (uplink/uplink.ts) inside the device's hub, on the device
// bench's virtual clock (bench/device.bench.ts DeviceWorld), its MQTT client a recording stand-in
// that takes every packet at once and keeps only counts. This is a measurement harness, not the
// device's adapter: what it leaves out is the SDK client's own framing of each PUBLISH and the
// socket (uplink/moddable.ts hands each message to it as one write).
//
// Computrons per message by difference, on XS: the same world (the robot's odom at 50 Hz and
// battery at 1 Hz, no other client) run without an uplink, with one that publishes only its
// status and health (its session in the hub, its PING, the health summary at 1 Hz), and with one
// that also publishes odom (JSON or CBOR). The second less the first, over the health messages,
// is a health message with the session's upkeep; the third less the second, over the telemetry
// messages, is a telemetry message, from the hub's route into the uplink's link to the PUBLISH.
import type { Store } from '../hub/ports.js';
import { DEFAULT_CATALOG } from '../catalog/default.js';
import { loadCatalog } from '../catalog/index.js';
import { readUplinkConfig, type UplinkConfig } from '../uplink/config.js';
import { Uplink, type MqttListener, type MqttOpen, type MqttPort } from '../uplink/uplink.js';
import { DEVICE_MAX_HUB_FRAME_BYTES } from '../device/config.js';
import { DeviceWorld } from './device.bench.js';
import type { RetainedBench } from './case.js';

/** What the uplink measurement's robot publishes. */
export const UPLINK_STREAMS = Object.freeze([Object.freeze({ channel: 'odom', hz: 50, fields: 5 }), Object.freeze({ channel: 'battery', hz: 1, fields: 2 })]);
/** The uplink's queue on the device (device/wiring.ts DEVICE_UPLINK_QUEUE_BYTES). */
export const BENCH_UPLINK_QUEUE_BYTES = 1600;

/** The harness's MQTT client: every packet taken at once, counted, its bytes dropped. */
export class RecordingMqtt implements MqttPort {
  listener: MqttListener | null = null;
  opens = 0;
  packets = 0;
  bytes = 0;
  /** Set by open(): the harness answers with CONNACK (listener.connected) after the tick. */
  owedConnack = false;
  open(_o: MqttOpen): void {
    this.opens++;
    this.owedConnack = true;
  }
  room(): number {
    return 1 << 20;
  }
  publish(topic: string, payload: Uint8Array, _retain: boolean): void {
    this.packets++;
    this.bytes += topic.length + payload.length;
  }
  subscribe(_topic: string): void {
    this.packets++;
  }
  close(): void {
    this.owedConnack = false;
  }
}

export type UplinkVariant = 'none' | 'health' | 'json' | 'cbor';

function configOf(variant: UplinkVariant): UplinkConfig {
  const catalog = loadCatalog(DEFAULT_CATALOG);
  const telemetry = variant === 'json' || variant === 'cbor' ? [{ channel: 'odom', rateHz: 50 }] : [];
  const { config, problems } = readUplinkConfig({ broker: 'mqtt://broker.lan', site: 'bench', telemetry, events: [], format: variant === 'cbor' ? 'cbor' : 'json' }, catalog);
  if (problems.length > 0) throw new Error(`bench: uplink config: ${problems.map((p) => p.reason).join('; ')}`);
  return { ...config, queueBytes: BENCH_UPLINK_QUEUE_BYTES };
}

/** The engine's native UTF-8 encoder (TextEncoder: xsnap and Node have it); the core's own where there is none. */
function nativeUtf8(): ((text: string) => Uint8Array) | undefined {
  const T = (globalThis as { TextEncoder?: new () => { encode(s: string): Uint8Array } }).TextEncoder;
  if (T === undefined) return undefined;
  const e = new T();
  return (text) => e.encode(text);
}

/** A world with the robot's streams and, unless `none`, an uplink online in its hub. */
export function uplinkWorld(variant: UplinkVariant): { world: DeviceWorld; uplink: Uplink | null; mqtt: RecordingMqtt } {
  const world = new DeviceWorld([], { streams: UPLINK_STREAMS, log: false });
  world.start(0);
  const mqtt = new RecordingMqtt();
  if (variant === 'none') return { world, uplink: null, mqtt };
  const uplink = addUplink(world, variant, mqtt);
  return { world, uplink, mqtt };
}

/** An Uplink in `world`'s hub, ticked after the hub's tick; CONNACK answered at once. */
export function addUplink(world: DeviceWorld, variant: UplinkVariant, mqtt: RecordingMqtt): Uplink {
  const store: Store = world.store;
  const uplink = new Uplink(configOf(variant), {
    hub: world.hub,
    clock: world.clock,
    wallMs: () => NaN,
    store,
    mqtt,
    random: world.random,
    maxHubFrameBytes: DEVICE_MAX_HUB_FRAME_BYTES,
    // The device encodes payloads natively (ArrayBuffer.fromString, device/uplink.ts), which this
    // engine lacks: its TextEncoder is the same one native call.
    utf8: nativeUtf8(),
  });
  mqtt.listener = uplink;
  world.afterTick = () => {
    uplink.tick();
    if (mqtt.owedConnack) {
      mqtt.owedConnack = false;
      uplink.connected();
    }
  };
  return uplink;
}

export interface UplinkRun {
  readonly variant: UplinkVariant;
  readonly seconds: number;
  /** Every computron of the world's hub, bindings and uplink over the run. */
  readonly computrons: number;
  /** Of which the uplink's own tick (the health summary, the pump outside a hub call). */
  readonly tickComputrons: number;
  readonly published: { status: number; health: number; telemetry: number; events: number; safety: number };
  readonly bytes: number;
  readonly unsent: number;
  readonly level: number;
}

/** `seconds` simulated seconds of a variant, after 3 s to settle; every computron counted. */
export function uplinkRun(variant: UplinkVariant, seconds: number): UplinkRun {
  const { world, uplink, mqtt } = uplinkWorld(variant);
  world.run(3000);
  if (uplink && uplink.welcomes === 0) throw new Error('bench: the uplink has no session in the hub');
  const before = uplink ? { ...uplink.publishedBy } : { status: 0, health: 0, telemetry: 0, events: 0, safety: 0 };
  const bytes0 = mqtt.bytes;
  world.calibrate();
  world.split.reset();
  world.run(seconds * 1000);
  const after = uplink ? uplink.publishedBy : before;
  return {
    variant,
    seconds,
    computrons: world.split.total(),
    tickComputrons: world.split.byBinding['uplink'] ?? 0,
    published: {
      status: after.status - before.status,
      health: after.health - before.health,
      telemetry: after.telemetry - before.telemetry,
      events: after.events - before.events,
      safety: after.safety - before.safety,
    },
    bytes: mqtt.bytes - bytes0,
    unsent: uplink ? uplink.unsent : 0,
    level: uplink ? uplink.level : 0,
  };
}

/** Computrons per uplink message by difference of the four runs (see the header). */
export function uplinkCost(seconds: number): {
  runs: UplinkRun[];
  perMessage: { health: number; telemetryJson: number; telemetryCbor: number };
  bytesPerMessage: { health: number; telemetryJson: number; telemetryCbor: number };
} {
  const none = uplinkRun('none', seconds);
  const health = uplinkRun('health', seconds);
  const json = uplinkRun('json', seconds);
  const cbor = uplinkRun('cbor', seconds);
  const per = (extra: number, n: number): number => (n > 0 ? extra / n : NaN);
  return {
    runs: [none, health, json, cbor],
    perMessage: {
      health: per(health.computrons - none.computrons, health.published.health),
      telemetryJson: per(json.computrons - health.computrons, json.published.telemetry),
      telemetryCbor: per(cbor.computrons - health.computrons, cbor.published.telemetry),
    },
    bytesPerMessage: {
      health: per(health.bytes, health.published.health + health.published.status),
      telemetryJson: per(json.bytes - health.bytes, json.published.telemetry),
      telemetryCbor: per(cbor.bytes - health.bytes, cbor.published.telemetry),
    },
  };
}

/**
 * What an uplink keeps alive in the device's hub: the Uplink and its session (its link with the
 * device's 2 KB queue, its grants), online and publishing odom as JSON for 2 s. The world (hub,
 * robot streams) is made and run in setup, so only the uplink is counted.
 */
export function uplinkMemoryBench(): RetainedBench {
  let world: DeviceWorld | null = null;
  const mqtt = new RecordingMqtt();
  const steps = [{ name: 'uplink', count: 1, per: 'uplink online, its session in the hub, 2 s of odom at 50 Hz published as JSON with the health summary' }] as const;
  return {
    kind: 'retained',
    name: 'memory.uplink',
    title: 'retained heap of the fleet uplink in the device hub (off by default: uplink_broker empty)',
    issue: 14,
    steps,
    totals: [{ name: 'uplink', steps: ['uplink'] }],
    setup() {
      world = new DeviceWorld([], { streams: UPLINK_STREAMS, log: false });
      world.start(2000);
    },
    step(i) {
      const w = world as DeviceWorld;
      if (i !== 0) throw new Error(`bench: no step ${i}`);
      const uplink = addUplink(w, 'json', mqtt);
      w.run(2000);
      if (uplink.welcomes === 0 || uplink.publishedBy.telemetry === 0) throw new Error('bench: the uplink published no telemetry');
    },
  };
}
