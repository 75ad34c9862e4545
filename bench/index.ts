// Every bench case, in report order. scripts/bench.mjs runs them on Node (compiled) and on the
// XS engine (this module bundled); a new issue's cases are added here and nowhere else.
import type { Bench } from './case.js';
import { decodeBundleBench, decodeDataBench, encodeDataBench } from './codec.bench.js';
import { deviceBundleBench, deviceDeliveryBench, deviceMemoryBench } from './device.bench.js';
import {
  linkCopyBench,
  routeImuLevel0Bench,
  routeImuLevel1Bench,
  routeStateLevel1Bench,
  sessionsRetainedBench,
  tcpLinkBench,
} from './route.bench.js';
import { shedDecideBench } from './shed.bench.js';

export type { Bench, OpBench, RetainedBench, RetainedStep } from './case.js';

/** Factories, so that each run starts from fresh state. */
export const BENCHES: readonly (() => Bench)[] = Object.freeze([
  encodeDataBench,
  decodeDataBench,
  decodeBundleBench,
  shedDecideBench,
  linkCopyBench,
  routeImuLevel0Bench,
  routeImuLevel1Bench,
  routeStateLevel1Bench,
  tcpLinkBench,
  deviceDeliveryBench('tcp'),
  deviceDeliveryBench('ws'),
  deviceDeliveryBench('ble'),
  deviceDeliveryBench('espnow'),
  deviceBundleBench,
  sessionsRetainedBench,
  deviceMemoryBench,
]);
