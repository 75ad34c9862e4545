// The send contract (docs/architecture.md "The send contract"): a link carries the core's frame as
// opaque bytes. What it needs to know (frame type, class, channel, sequence) comes with the tag;
// no binding reads it from the bytes. Each binding is given frames of random bytes, none of them
// CBOR, under tags of every class, and its client must receive exactly those bytes, in order: a
// binding that parsed what the core encoded would stumble on them.
import { FrameType } from '../../hub/frames.js';
import { Tag, tagOf, type Link, type LinkSink } from '../../hub/ports.js';
import { LinkFraming, TcpLink, type DirectTransport } from '../../bindings/tcp/egress.js';
import { BleLink, type BleTransport } from '../../bindings/ble/link.js';
import { CLIENT_REASSEMBLY, Reassembler } from '../../bindings/ble/fragment.js';
import { EspNowBinding, RadioStatus, type Radio, type RadioHandler } from '../../bindings/espnow/link.js';
import { DatagramCursor, HEADER_BYTES, MAX_DATAGRAM_FRAME, writeHeader } from '../../bindings/espnow/datagram.js';
import { deepEqual, equal, ok } from '../lib/assert.js';

class Clock {
  t = 1000;
  now(): number {
    return this.t;
  }
}

const SINK: LinkSink = { frame() {}, lost() {}, levelChanged() {} };
const hubOf = (links: Link[]) => ({
  attach(link: Link): LinkSink {
    links.push(link);
    return SINK;
  },
});

/** Seeded frames of random bytes; the first byte is never a CBOR map head, so nothing reads as a frame. */
function opaqueFrames(count: number, maxLength: number, seed: number): Uint8Array[] {
  let x = seed >>> 0 || 1;
  const next = (): number => {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
  const out: Uint8Array[] = [];
  for (let i = 0; i < count; i++) {
    const f = new Uint8Array(1 + (next() % maxLength));
    for (let k = 0; k < f.length; k++) f[k] = next() & 0xff;
    // 0xa0–0xbf would be a CBOR map head; 0x00–0x1f an unsigned integer: use 0xc0–0xdf (tags).
    f[0] = 0xc0 | ((f[0] as number) & 0x1f);
    out.push(f);
  }
  return out;
}

/** Tags of every kind a link is handed: a sheddable sample, a STATE value, a critical control frame, a critical DATA (an EVENT or a safety value). */
const TAGS = [tagOf(FrameType.DATA, Tag.SAMPLE, 10), tagOf(FrameType.DATA, Tag.VALUE, 15), tagOf(FrameType.GRANT, Tag.CRITICAL), tagOf(FrameType.DATA, Tag.CRITICAL, 20)];

function hex(b: Uint8Array): string {
  let s = '';
  for (let i = 0; i < b.length; i++) s += (b[i] as number).toString(16).padStart(2, '0');
  return s;
}

describe('links carry frames as opaque bytes (the tag says what they are)', function () {
  it('TCP, length-prefixed: every frame arrives whole, in order, whatever its bytes', function () {
    const clock = new Clock();
    const links: Link[] = [];
    const got: string[] = [];
    const transport: DirectTransport = {
      room: 65536,
      writeFrame(header, frame) {
        ok(header !== null && header.length === 2, 'a length prefix');
        equal(((header[0] as number) << 8) | (header[1] as number), frame.length, 'the prefix is the frame length');
        got.push(hex(frame));
      },
      kick() {},
      close() {},
    };
    const link = new TcpLink({ hub: hubOf(links), clock, framing: LinkFraming.LENGTH_PREFIX, binding: 'tcp' });
    link.start(transport);
    const frames = opaqueFrames(60, 300, 7);
    frames.forEach((f, i) => {
      clock.t += 1;
      ok(link.send(f, TAGS[i % TAGS.length] as number, i + 1), `frame ${i} was taken`);
    });
    deepEqual(got, frames.map(hex));
  });

  it('WebSocket: one binary message per frame, its payload the frame', function () {
    const clock = new Clock();
    const links: Link[] = [];
    const got: string[] = [];
    let upgraded = false;
    const transport: DirectTransport = {
      room: 65536,
      writeFrame(header, frame) {
        ok(header !== null, 'a WebSocket header');
        equal(header[0], 0x82, 'FIN, binary');
        const len7 = (header[1] as number) & 0x7f;
        const len = len7 === 126 ? ((header[2] as number) << 8) | (header[3] as number) : len7;
        equal(len, frame.length);
        got.push(hex(frame));
      },
      kick() {
        upgraded = true;
      },
      close() {},
    };
    const link = new TcpLink({ hub: hubOf(links), clock, framing: LinkFraming.WS_SERVER, binding: 'ws', sha1: () => new Uint8Array(20) });
    link.start(transport);
    const req = 'GET / HTTP/1.1\r\nHost: hub\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n';
    const bytes = new Uint8Array(req.length);
    for (let i = 0; i < req.length; i++) bytes[i] = req.charCodeAt(i);
    link.input(bytes, 0, bytes.length);
    // The 101 answer waits in the queue for the transport to pull it.
    ok(upgraded, 'the upgrade answer is ready');
    while (link.take(4096) > 0);
    equal(links.length, 1, 'the upgraded link is attached');
    const frames = opaqueFrames(60, 300, 11);
    frames.forEach((f, i) => {
      clock.t += 1;
      ok(link.send(f, TAGS[i % TAGS.length] as number, i + 1), `frame ${i} was taken`);
    });
    deepEqual(got, frames.map(hex));
  });

  it('BLE: notifications reassemble to exactly the frames sent', function () {
    const clock = new Clock();
    const links: Link[] = [];
    const got: string[] = [];
    const client = new Reassembler(
      {
        frame: (b, start, end) => got.push(hex(b.subarray(start, end))),
        refuse: () => {
          throw new Error('the client refused a notification');
        },
      },
      CLIENT_REASSEMBLY,
    );
    const pending: Uint8Array[] = [];
    const transport: BleTransport = {
      maximumWrite: () => 244,
      notify(value, length) {
        pending.push(value.slice(0, length));
      },
      close() {},
    };
    const link = BleLink.attach(hubOf(links), transport, clock, {}, true);
    const frames = opaqueFrames(40, 600, 13);
    frames.forEach((f, i) => {
      clock.t += 1;
      ok(link.send(f, TAGS[i % TAGS.length] as number, i + 1), `frame ${i} was taken`);
      // The stack completes each notification before the next frame: nothing is shed.
      while (pending.length > 0) {
        const n = pending.shift() as Uint8Array;
        client.push(n, 0, n.length, clock.now());
        clock.t += 1;
        link.notified(0);
      }
    });
    deepEqual(got, frames.map(hex));
  });

  it('ESP-NOW unicast: the datagrams carry exactly the frames sent', function () {
    const clock = new Clock();
    const links: Link[] = [];
    const got: string[] = [];
    let handler: RadioHandler | null = null;
    const sent: { mac: number; data: Uint8Array }[] = [];
    const radio: Radio = {
      setHandler(h) {
        handler = h;
      },
      addPeer: () => RadioStatus.OK,
      removePeer: () => RadioStatus.OK,
      send(mac, data, length) {
        sent.push({ mac, data: data.slice(0, length) });
        return RadioStatus.OK;
      },
    };
    const binding = new EspNowBinding({ clock, radio, attach: (link) => hubOf(links).attach(link), allowUnencrypted: true });
    const PEER = 0x240ac4000101;
    // The peer's first datagram opens its link (its one frame goes to the sink above).
    const hello = new Uint8Array(HEADER_BYTES + 2);
    writeHeader(hello, 0, 1);
    hello[HEADER_BYTES] = 1;
    hello[HEADER_BYTES + 1] = 0xa0;
    binding.received(PEER, hello, hello.length);
    equal(links.length, 1, 'the peer has a link');
    const link = links[0] as Link;
    const cursor = new DatagramCursor();
    const frames = opaqueFrames(40, MAX_DATAGRAM_FRAME - 8, 17);
    frames.forEach((f, i) => {
      clock.t += 3;
      ok(link.send(f, TAGS[i % TAGS.length] as number, i + 1), `frame ${i} was taken`);
      while (sent.length > 0) {
        const d = sent.shift() as { mac: number; data: Uint8Array };
        equal(d.mac, PEER);
        equal(cursor.open(d.data, d.data.length), 0, 'a well-formed datagram');
        while (cursor.next()) got.push(hex(d.data.subarray(cursor.start, cursor.end)));
        clock.t += 2;
        (handler as unknown as RadioHandler).sent(PEER, true);
      }
    });
    deepEqual(got, frames.map(hex));
  });
});
