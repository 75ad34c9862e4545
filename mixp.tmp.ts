import { DeviceWorld, DEFAULT_MIX, meter } from './bench/device.bench.ts';
import { TcpLink } from './bindings/tcp/egress.ts';
import { BleLink } from './bindings/ble/link.ts';
import { Hub } from './hub/hub.ts';
import { Ingress } from './hub/ingress.ts';
import { Reassembler } from './bindings/ble/fragment.ts';
import { IngressGovernor } from './hub/governor.ts';
import { EspNowBinding } from './bindings/espnow/link.ts';
const acc: Record<string, number> = {}; const cnt: Record<string, number> = {};
let probe = 0; let depth = 0;
function wrap(proto: any, k: string, label: string) {
  const d = Object.getOwnPropertyDescriptor(proto, k)!;
  if (d.get) { const g = d.get; Object.defineProperty(proto, k, { ...d, get() { if (depth) return g.call(this); depth++; meter(); const r = g.call(this); const c = meter() - probe; depth--; acc[label] = (acc[label] ?? 0) + c; cnt[label] = (cnt[label] ?? 0) + 1; return r; } }); return; }
  const f = d.value; proto[k] = function (this: any, a: any, b: any, c: any, e: any, g: any, h: any) { if (depth) return f.call(this, a, b, c, e, g, h); depth++; meter(); const r = f.call(this, a, b, c, e, g, h); const x = meter() - probe; depth--; acc[label] = (acc[label] ?? 0) + x; cnt[label] = (cnt[label] ?? 0) + 1; return r; };
}
(globalThis as any).go = (which: string) => {
  const w: any = new DeviceWorld(DEFAULT_MIX, {});
  w.start(1000);
  w.pausing = false;
  meter(); let s = 0; for (let i = 0; i < 32; i++) { meter(); s += meter(); } probe = s / 32;
  const sets: Record<string, () => void> = {
    a: () => { wrap(TcpLink.prototype, 'send', 'tcp.send'); wrap(TcpLink.prototype, 'level', 'tcp.level'); wrap(BleLink.prototype, 'send', 'ble.send'); wrap(BleLink.prototype, 'level', 'ble.level'); wrap(Hub.prototype, 'tick', 'hub.tick'); wrap(IngressGovernor.prototype, 'admit', 'gov.admit'); },
    c: () => { wrap(Reassembler.prototype, 'push', 'reas.push'); wrap(BleLink.prototype, 'written', 'ble.written'); wrap(Ingress.prototype, 'frame', 'ing.frame'); wrap(IngressGovernor.prototype, 'admit', 'gov.admit'); wrap(Hub.prototype, 'tick', 'hub.tick'); wrap(EspNowBinding.prototype, 'received', 'esp.received'); },
    b: () => { wrap(Ingress.prototype, 'frame', 'ing.frame'); wrap(Reassembler.prototype, 'push', 'reas.push'); wrap(BleLink.prototype, 'tick', 'ble.tick'); wrap(EspNowBinding.prototype, 'received', 'esp.received'); wrap(EspNowBinding.prototype, 'tick', 'esp.tick'); wrap(Hub.prototype, 'publishSample', 'hub.publishSample'); },
  };
  sets[which]!();
  w.run(2000);
  const out: Record<string, string> = {};
  for (const k in acc) out[k] = `${Math.round(acc[k]! / 2)}/s ${cnt[k]! / 2}/s ${(acc[k]! / cnt[k]!).toFixed(1)} each`;
  return JSON.stringify(out);
};
