// A Link that passes everything to the binding's own Link: what the simulator's wrappers (the
// tap that checks what the hub hands over, the dashboard's level override) start from, so that
// each overrides only what it watches or changes.
import type { GrantSet, Link, LinkCaps, LinkEstimate } from '../../hub/ports.js';

export class ForwardingLink implements Link {
  readonly caps: LinkCaps;

  constructor(readonly inner: Link) {
    this.caps = inner.caps;
  }

  get level(): number {
    return this.inner.level;
  }
  send(frame: Uint8Array, tag: number, seq: number): boolean {
    return this.inner.send(frame, tag, seq);
  }
  writeAhead(frame: Uint8Array): void {
    this.inner.writeAhead(frame);
  }
  acked(count: number): void {
    this.inner.acked(count);
  }
  granted(grants: GrantSet): void {
    this.inner.granted(grants);
  }
  estimate(): LinkEstimate {
    return this.inner.estimate();
  }
  occupancy(): number {
    return this.inner.occupancy();
  }
  stalledMs(): number {
    return this.inner.stalledMs();
  }
  ackLag(): number {
    return this.inner.ackLag();
  }
  lossRate(): number {
    return this.inner.lossRate();
  }
  tierCeiling(): number {
    return this.inner.tierCeiling();
  }
  close(): void {
    this.inner.close();
  }
}
