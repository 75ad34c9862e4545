import * as C from '../../hub/constants.js';
import { equal, deepEqual, ok } from '../lib/assert.js';

describe('hub/constants: numbers the protocol pins', () => {
  it('§10.1 priority codes: background 0, normal 1, elevated 2, critical 3', () => {
    deepEqual({ ...C.PRIORITY }, { background: 0, normal: 1, elevated: 2, critical: 3 });
    deepEqual([...C.PRIORITY_NAMES], ['background', 'normal', 'elevated', 'critical']);
    for (let code = 0; code < C.PRIORITY_NAMES.length; code++) {
      equal(C.PRIORITY[C.PRIORITY_NAMES[code]!], code, C.PRIORITY_NAMES[code]);
    }
    ok(Object.isFrozen(C.PRIORITY), 'PRIORITY frozen');
    ok(Object.isFrozen(C.PRIORITY_NAMES), 'PRIORITY_NAMES frozen');
  });

  it('§10.2 grant wire keys: priority 13, granted_rate_hz 14, burst 42, WELCOME batches 35 / 36', () => {
    equal(C.KEY_PRIORITY, 13);
    equal(C.KEY_GRANTED_RATE_HZ, 14);
    equal(C.KEY_BURST, 42);
    equal(C.KEY_SUB_GRANTS, 35);
    equal(C.KEY_PUB_GRANTS, 36);
  });

  it('§10.3 congestion levels: 0 clear, 1 congested, 2 severe', () => {
    equal(C.LEVEL_CLEAR, 0);
    equal(C.LEVEL_CONGESTED, 1);
    equal(C.LEVEL_SEVERE, 2);
  });

  it('§10.3 congested: > 50 % watermark or > 10 % loss over 1 s', () => {
    equal(C.CONGESTED_WATERMARK, 0.5);
    equal(C.CONGESTED_LOSS, 0.1);
    equal(C.CONGESTION_WINDOW_MS, 1000);
  });

  it('§10.3 recovered: < 20 % watermark and < 2 % loss for 5 s', () => {
    equal(C.RECOVERED_WATERMARK, 0.2);
    equal(C.RECOVERED_LOSS, 0.02);
    equal(C.RECOVERY_WINDOW_MS, 5000);
  });

  it('§10.3 congestion sustained > 5 s re-grants downward', () => {
    equal(C.REGRANT_AFTER_CONGESTED_MS, 5000);
  });

  it('§10.4 never_shed_stall_eviction_ms is 2 s', () => {
    equal(C.NEVER_SHED_STALL_EVICTION_MS, 2000);
  });

  it('§10.5 stream_ingress_overage_nack_per_s is 5', () => {
    equal(C.STREAM_INGRESS_OVERAGE_NACK_PER_S, 5);
  });

  it('§10.5 max_burst_multiple is 4', () => {
    equal(C.MAX_BURST_MULTIPLE, 4);
  });

  it('§10.5 a bundle batches up to 32 samples', () => {
    equal(C.MAX_BUNDLE_SAMPLES, 32);
  });

  it('§6 session slots default to 8', () => {
    equal(C.DEFAULT_SLOTS, 8);
  });

  it('§6 stale_ttl_ms defaults to 30 s', () => {
    equal(C.STALE_TTL_MS, 30000);
  });

  it('§9 intent bucket: 20/s, depth 20', () => {
    equal(C.INTENT_RATE_PER_S, 20);
    equal(C.INTENT_BUCKET_DEPTH, 20);
  });

  it('§11 deadman_ms defaults to 500 ms', () => {
    equal(C.DEADMAN_MS, 500);
  });

  it('§12 more than 10 malformed frames in 1 s closes the session', () => {
    equal(C.MALFORMED_CLOSE_PER_S, 10);
  });
});
