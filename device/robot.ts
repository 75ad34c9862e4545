// The robot port on the ESP32: device/robot-link.ts bound to a GPIO output (the stop line) and
// an ECMA-419 UART (the SDK's ESP32 serial).
//
// The UART writes straight into its hardware transmit FIFO and throws "output full" when the
// data exceeds the FIFO's free bytes; onWritable(free) fires when the FIFO drains below its
// threshold, once a write has armed the transmit interrupt. So the transmitter's room is the
// last count it reported less what was written since, starting from the FIFO's size; a refused
// write sets it to 0 until the next report.

import Digital from 'embedded:io/digital';
import Serial from 'embedded:io/serial';
import type { CatalogIndex } from '../catalog/index.js';
import type { Clock } from '../hub/ports.js';
import type { DeviceConfig } from './config.js';
import { RobotInbound, RobotLink, type RobotHub, type RobotTx } from './robot-link.js';
import { RobotCodecNative } from './robot-native.js';
import { GatedStopLine, type ReleaseGate } from './stop-path.js';

/** The ESP32's UART FIFO (SOC_UART_FIFO_LEN): what a new port can take before its first report. */
const UART_FIFO_BYTES = 128;
/** Received bytes read per onReadable (the receive FIFO is also 128 bytes). */
const RX_BYTES = 128;

/** The stop line on a GPIO output; its releases go through the native stop path once armed (gateRelease). */
function openStopLine(pin: number, stopLevel: 0 | 1): GatedStopLine {
  // initialValue is driven before the pin becomes an output: it never glitches to "run".
  return new GatedStopLine(new Digital({ pin, mode: Digital.Output, initialValue: stopLevel }), stopLevel);
}

class UartTx implements RobotTx {
  serial: Serial | null = null;
  private free = UART_FIFO_BYTES;

  room(): number {
    return this.free;
  }

  write(buf: Uint8Array, start: number, end: number): boolean {
    const serial = this.serial;
    if (!serial) return false;
    try {
      serial.write(start === 0 && end === buf.length ? buf : buf.subarray(start, end));
    } catch {
      this.free = 0;
      return false;
    }
    this.free -= end - start;
    return true;
  }

  writable(free: number): void {
    this.free = free;
  }
}

export interface DeviceRobot {
  readonly port: RobotLink;
  /** null when no UART is configured. */
  readonly inbound: RobotInbound | null;
}

/**
 * The stop line (driven to stop at once) and, when configured, the UART. The inbound side
 * needs the hub, which needs the port first: call `connect(hub)` once the hub exists.
 */
export function openDeviceRobot(config: DeviceConfig, catalog: CatalogIndex, clock: Clock): DeviceRobot & { connect(hub: RobotHub): void; gateRelease(gate: ReleaseGate): void } {
  const line = openStopLine(config.stop.pin, config.stop.level);
  const uart = config.robotUart;
  const tx = uart ? new UartTx() : null;
  // The frames' CRC and a sample's values in C (device/native/robotframe.c): the link's byte work.
  const codec = new RobotCodecNative();
  const port = new RobotLink({ line, tx, codec });
  let inbound: RobotInbound | null = null;
  const rx = new Uint8Array(RX_BYTES);
  return {
    port,
    get inbound(): RobotInbound | null {
      return inbound;
    },
    /** Releases from now on go through `gate` (the native stop path), which refuses while a trip is pending. */
    gateRelease(gate: ReleaseGate): void {
      line.gate = gate;
    },
    connect(hub: RobotHub): void {
      if (!uart || !tx) return;
      const sink = new RobotInbound(hub, catalog, clock, codec);
      inbound = sink;
      tx.serial = new Serial({
        port: uart.port,
        transmit: uart.transmit,
        receive: uart.receive,
        baud: uart.baud,
        format: 'buffer',
        onReadable(this: Serial): void {
          for (;;) {
            const n = this.read(rx);
            if (!n) return;
            sink.input(rx, 0, n);
          }
        },
        onWritable(free: number): void {
          tx.writable(free);
          port.pump();
        },
      });
      port.pump();
    },
  };
}
