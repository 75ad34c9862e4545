// A Link that passes everything to the binding's own Link: what the simulator's wrappers (the
// tap that checks what the hub hands over, the dashboard's level override) start from, so that
// each overrides only what it watches or changes.
import type { Link, LinkEstimate } from '../../hub/ports.js';

export class ForwardingLink implements Link {
  readonly binding: string;
  readonly mtu: number;
  readonly broadcast: boolean;

  constructor(readonly inner: Link) {
    this.binding = inner.binding;
    this.mtu = inner.mtu;
    this.broadcast = inner.broadcast;
  }

  canSend(length: number): boolean {
    return this.inner.canSend(length);
  }
  send(frame: Uint8Array, length: number, shed?: number): void {
    this.inner.send(frame, length, shed);
  }
  writeAhead(frame: Uint8Array): void {
    this.inner.writeAhead(frame);
  }
  level(): number {
    return this.inner.level();
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
  unsent(): number {
    return this.inner.unsent ? this.inner.unsent() : 0;
  }
  lossRate(): number {
    return this.inner.lossRate ? this.inner.lossRate() : NaN;
  }
  close(): void {
    this.inner.close();
  }
}
