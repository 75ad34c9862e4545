// A minimal MQTT 3.1.1 client for the side-by-side bench (bench/side-by-side.ts): CONNECT/CONNACK,
// SUBSCRIBE/SUBACK, PUBLISH at QoS 0 and 1 (PUBACK both ways), PINGREQ/PINGRESP, DISCONNECT,
// over one node:net socket. No will, no retain, no QoS 2, no reconnect: the bench needs the
// broker's delivery and nothing else. Node only; never used by the hub.
//
// Bytes from the broker come in through `input()`, not from the socket directly, so that the
// bench decides how fast the socket is read (a slow subscriber reads it at a fixed byte rate).

import net from 'node:net';

export const MqttPacket = Object.freeze({
  CONNECT: 1,
  CONNACK: 2,
  PUBLISH: 3,
  PUBACK: 4,
  SUBSCRIBE: 8,
  SUBACK: 9,
  PINGREQ: 12,
  PINGRESP: 13,
  DISCONNECT: 14,
} as const);

export type Qos = 0 | 1;

/** Opens a TCP connection with Nagle off (the hub's listener and client set the same). */
export function openSocket(host: string, port: number): Promise<net.Socket> {
  return new Promise((ok, bad) => {
    const s = net.connect({ host, port, noDelay: true });
    s.once('error', bad);
    s.once('connect', () => {
      s.off('error', bad);
      ok(s);
    });
  });
}

/** The MQTT "Remaining Length": 1–4 bytes, 7 bits each, least significant first. */
function lengthBytes(n: number): number[] {
  const out: number[] = [];
  do {
    let b = n % 128;
    n = Math.floor(n / 128);
    if (n > 0) b |= 0x80;
    out.push(b);
  } while (n > 0);
  return out;
}

function packet(first: number, body: Uint8Array): Buffer {
  const len = lengthBytes(body.length);
  const out = Buffer.allocUnsafe(1 + len.length + body.length);
  out[0] = first;
  for (let i = 0; i < len.length; i++) out[1 + i] = len[i] as number;
  out.set(body, 1 + len.length);
  return out;
}

function utf8(s: string): Buffer {
  const b = Buffer.from(s, 'utf8');
  const out = Buffer.allocUnsafe(2 + b.length);
  out.writeUInt16BE(b.length, 0);
  b.copy(out, 2);
  return out;
}

export class MqttClient {
  /** One application message; `payload` is valid only during the call. */
  onMessage: ((topic: string, payload: Uint8Array, qos: number) => void) | null = null;
  closed = false;
  pingsSent = 0;
  pingsAnswered = 0;
  /** Bytes handed to `input()` so far. */
  bytesIn = 0;
  private buf = Buffer.allocUnsafe(4096);
  private have = 0;
  private nextId = 1;
  private readonly pending = new Map<number, (body: Buffer) => void>();
  private connack: ((rc: number) => void) | null = null;
  private pinger: ReturnType<typeof setInterval> | null = null;

  constructor(readonly socket: net.Socket) {
    socket.on('error', () => undefined); // 'close' follows
    socket.on('close', () => this.ended());
  }

  /** CONNECT with a clean session; resolves on CONNACK 0, and PINGREQs every half keep-alive. */
  connect(clientId: string, keepAliveS = 60): Promise<void> {
    const body = Buffer.concat([utf8('MQTT'), Buffer.from([4, 0x02, keepAliveS >>> 8, keepAliveS & 0xff]), utf8(clientId)]);
    const p = new Promise<void>((ok, bad) => {
      this.connack = (rc) => (rc === 0 ? ok() : bad(new Error(`CONNACK return code ${rc}`)));
    });
    this.socket.write(packet(MqttPacket.CONNECT << 4, body));
    this.pinger = setInterval(() => this.ping(), (keepAliveS * 1000) / 2);
    this.pinger.unref();
    return p;
  }

  /** SUBSCRIBE; resolves with the granted QoS per topic (0x80 is a refusal). */
  subscribe(topics: readonly { topic: string; qos: Qos }[]): Promise<number[]> {
    const id = this.packetId();
    const parts: Buffer[] = [Buffer.from([id >>> 8, id & 0xff])];
    for (const t of topics) parts.push(utf8(t.topic), Buffer.from([t.qos]));
    const p = new Promise<number[]>((ok) => this.pending.set(id, (body) => ok(Array.from(body.subarray(2)))));
    this.socket.write(packet((MqttPacket.SUBSCRIBE << 4) | 0x02, Buffer.concat(parts)));
    return p;
  }

  /** PUBLISH. At QoS 1 the broker's PUBACK is awaited by nobody: the bench times delivery at the subscriber. */
  publish(topic: string, payload: Uint8Array, qos: Qos): void {
    if (this.closed) return;
    const t = utf8(topic);
    const idLen = qos > 0 ? 2 : 0;
    const body = Buffer.allocUnsafe(t.length + idLen + payload.length);
    t.copy(body, 0);
    if (qos > 0) {
      const id = this.packetId();
      body.writeUInt16BE(id, t.length);
      this.pending.set(id, () => undefined);
    }
    body.set(payload, t.length + idLen);
    this.socket.write(packet((MqttPacket.PUBLISH << 4) | (qos << 1), body));
  }

  ping(): void {
    if (this.closed) return;
    this.pingsSent++;
    this.socket.write(Buffer.from([MqttPacket.PINGREQ << 4, 0]));
  }

  /** DISCONNECT, then FIN. */
  disconnect(): void {
    if (this.closed) return;
    this.socket.end(Buffer.from([MqttPacket.DISCONNECT << 4, 0]));
    this.ended();
  }

  /** Bytes as read off the socket, in order; packets may be split anywhere. */
  input(chunk: Uint8Array): void {
    if (this.closed) return;
    this.bytesIn += chunk.length;
    if (this.have + chunk.length > this.buf.length) {
      const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.have + chunk.length));
      this.buf.copy(bigger, 0, 0, this.have);
      this.buf = bigger;
    }
    this.buf.set(chunk, this.have);
    this.have += chunk.length;
    let p = 0;
    while (this.have - p >= 2) {
      let len = 0;
      let mul = 1;
      let i = p + 1;
      let done = false;
      for (; i < this.have && i < p + 5; i++) {
        const b = this.buf[i] as number;
        len += (b & 0x7f) * mul;
        mul *= 128;
        if ((b & 0x80) === 0) {
          done = true;
          i++;
          break;
        }
      }
      if (!done) {
        if (i >= p + 5) return this.fail('malformed remaining length');
        break;
      }
      if (this.have - i < len) break;
      this.handle(this.buf[p] as number, this.buf.subarray(i, i + len));
      if (this.closed) return;
      p = i + len;
    }
    this.buf.copy(this.buf, 0, p, this.have);
    this.have -= p;
  }

  private handle(first: number, body: Buffer): void {
    switch (first >>> 4) {
      case MqttPacket.CONNACK: {
        const h = this.connack;
        this.connack = null;
        if (h) h(body[1] as number);
        return;
      }
      case MqttPacket.PUBLISH: {
        const qos = (first >>> 1) & 3;
        const tlen = body.readUInt16BE(0);
        const topic = body.toString('utf8', 2, 2 + tlen);
        let at = 2 + tlen;
        if (qos === 1) {
          const id = body.readUInt16BE(at);
          at += 2;
          this.socket.write(Buffer.from([MqttPacket.PUBACK << 4, 2, id >>> 8, id & 0xff]));
        } else if (qos !== 0) return this.fail('QoS 2 is not supported');
        if (this.onMessage) this.onMessage(topic, body.subarray(at), qos);
        return;
      }
      case MqttPacket.PUBACK:
      case MqttPacket.SUBACK: {
        const id = body.readUInt16BE(0);
        const h = this.pending.get(id);
        this.pending.delete(id);
        if (h) h(body);
        return;
      }
      case MqttPacket.PINGRESP:
        this.pingsAnswered++;
        return;
      default:
        this.fail(`unexpected packet type ${first >>> 4}`);
    }
  }

  private packetId(): number {
    const id = this.nextId;
    this.nextId = id === 0xffff ? 1 : id + 1;
    return id;
  }

  private fail(why: string): void {
    this.socket.destroy(new Error(`MQTT: ${why}`));
    this.ended();
  }

  private ended(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.pinger) clearInterval(this.pinger);
    this.pinger = null;
    const h = this.connack;
    this.connack = null;
    if (h) h(-1);
  }
}
