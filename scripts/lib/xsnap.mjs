// Drives the real XS engine: the `xsnap-worker` binary that `@agoric/xsnap` builds
// from Moddable's XS sources at install. We speak its netstring protocol on fds 3/4
// directly, so that SES lockdown (which the package's JS API needs) never enters a
// Node process of ours.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

const require = createRequire(import.meta.url);

export function xsnapWorkerPath() {
  let pkg;
  try {
    pkg = dirname(require.resolve('@agoric/xsnap/package.json'));
  } catch {
    throw new Error('@agoric/xsnap is not installed: run `npm ci` first');
  }
  const platform = process.platform === 'darwin' ? 'mac' : 'lin';
  const bin = join(pkg, 'xsnap-native', 'xsnap', 'build', 'bin', platform, 'release', 'xsnap-worker');
  if (!existsSync(bin)) {
    throw new Error(
      `the XS engine binary is missing (${bin}). Its build runs at install; ` +
        'package.json must allow it with "allowScripts": {"@agoric/xsnap": true}, then run `npm ci` again.',
    );
  }
  return bin;
}

const enc = new TextEncoder();
const dec = new TextDecoder();

export class Xsnap {
  /** @param {{ onPrint?: (line: string) => void, onCommand?: (msg: Uint8Array) => Uint8Array }} [opts] */
  constructor(opts = {}) {
    this.proc = spawn(xsnapWorkerPath(), ['hub-xs'], {
      stdio: ['ignore', 'pipe', 'pipe', 'pipe', 'pipe', 'ignore', 'ignore', 'ignore', 'ignore'],
    });
    this.toWorker = this.proc.stdio[3];
    this.fromWorker = this.proc.stdio[4];
    this.buf = Buffer.alloc(0);
    this.waiters = [];
    this.onCommand = opts.onCommand ?? (() => new Uint8Array(0));
    this.stderr = '';
    const onPrint = opts.onPrint ?? ((line) => process.stdout.write(line + '\n'));
    let out = '';
    this.proc.stdout.on('data', (d) => {
      out += d.toString('utf8');
      let i;
      while ((i = out.indexOf('\n')) >= 0) {
        onPrint(out.slice(0, i));
        out = out.slice(i + 1);
      }
    });
    this.proc.stderr.on('data', (d) => (this.stderr += d.toString('utf8')));
    this.exited = new Promise((resolve) => this.proc.on('exit', (code, signal) => resolve({ code, signal })));
    this.exited.then(({ code, signal }) => {
      for (const w of this.waiters.splice(0)) {
        w.reject(new Error(`xsnap-worker exited (code ${code}, signal ${signal}) ${this.stderr.trim()}`));
      }
    });
    this.fromWorker.on('data', (d) => {
      this.buf = Buffer.concat([this.buf, d]);
      this.drain();
    });
  }

  drain() {
    for (;;) {
      const colon = this.buf.indexOf(0x3a);
      if (colon < 0) return;
      const len = Number(this.buf.subarray(0, colon).toString('ascii'));
      if (this.buf.length < colon + 1 + len + 1) return;
      const msg = this.buf.subarray(colon + 1, colon + 1 + len);
      this.buf = this.buf.subarray(colon + 1 + len + 1);
      this.handle(new Uint8Array(msg));
    }
  }

  handle(msg) {
    const kind = msg[0];
    if (kind === 0x3f /* '?' command from the script */) {
      const reply = this.onCommand(msg.subarray(1));
      this.send(Buffer.concat([Buffer.from('/'), Buffer.from(reply)]));
      return;
    }
    const w = this.waiters.shift();
    if (!w) return;
    if (kind === 0x2e /* '.' ok */) {
      const sep = msg.indexOf(1);
      const meter = sep > 0 ? JSON.parse(dec.decode(msg.subarray(1, sep))) : {};
      w.resolve({ reply: msg.subarray(sep > 0 ? sep + 1 : 1), meter });
    } else {
      w.reject(new Error(`XS evaluation failed: ${dec.decode(msg.subarray(1))}`));
    }
  }

  send(payload) {
    const body = typeof payload === 'string' ? Buffer.from(enc.encode(payload)) : payload;
    this.toWorker.write(Buffer.concat([Buffer.from(`${body.length}:`), body, Buffer.from(',')]));
  }

  /** Evaluates a script; resolves with the ArrayBuffer it returned (as bytes) and the meter. */
  evaluate(code) {
    return new Promise((resolve, reject) => {
      this.waiters.push({ resolve, reject });
      this.send('e' + code);
    });
  }

  /** Evaluates an expression whose value is JSON-serialisable; returns it parsed. */
  async evaluateJson(expr) {
    const { reply, meter } = await this.evaluate(
      `(() => { const v = (${expr}); return new TextEncoder().encode(JSON.stringify(v === undefined ? null : v)).buffer; })()`,
    );
    return { value: JSON.parse(dec.decode(reply)), meter };
  }

  async close() {
    this.toWorker.end();
    const t = setTimeout(() => this.proc.kill('SIGKILL'), 2000);
    await this.exited;
    clearTimeout(t);
  }
}
