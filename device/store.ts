// The hub's Store (hub/ports.ts) over Moddable's `preference` module: NVS on the ESP32
// (modules/files/preference/esp32/modPreference.c). Platform-free: main.ts hands it the module,
// and the host tests hand it a model with the same limits.
//
// NVS limits the names: a domain (NVS namespace) and a key have at most 15 characters. A value
// is kept as a blob: Preference takes an ArrayBuffer (not a view) and gives one back. NVS takes
// blobs far larger than the hub needs, but a value here is held to STORE_VALUE_MAX_BYTES so the
// hub's records stay well within one NVS page set. An empty value is kept as the empty string,
// which reads back as an empty value, so no zero-length blob ever reaches NVS.

import type { Store } from '../hub/ports.js';

/** What the hub uses of the `preference` module's default export. */
export interface PreferenceApi {
  get(domain: string, key: string): string | boolean | number | ArrayBuffer | undefined;
  set(domain: string, key: string, value: string | boolean | number | ArrayBuffer): void;
  delete(domain: string, key: string): void;
}

/** NVS_KEY_NAME_MAX_SIZE − 1: names longer than this are refused by NVS. */
export const STORE_NAME_MAX = 15;
export const STORE_VALUE_MAX_BYTES = 4000;
/** The NVS namespace of the hub's records (the latch, the credential table). */
export const STORE_DOMAIN = 'hub';

export class StoreError extends RangeError {
  constructor(message: string) {
    super(message);
    this.name = 'StoreError';
  }
}

function checkName(what: string, name: string): void {
  if (name.length === 0 || name.length > STORE_NAME_MAX) throw new StoreError(`${what} '${name}': 1..${STORE_NAME_MAX} characters`);
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c <= 0x20 || c >= 0x7f) throw new StoreError(`${what} '${name}': printable ASCII only`);
  }
}

export class PreferenceStore implements Store {
  constructor(
    private readonly prefs: PreferenceApi,
    readonly domain: string = STORE_DOMAIN,
  ) {
    checkName('domain', domain);
  }

  /** A copy the caller owns; undefined when the key holds nothing the hub wrote. */
  get(key: string): Uint8Array | undefined {
    checkName('key', key);
    const v = this.prefs.get(this.domain, key);
    if (v instanceof ArrayBuffer) return new Uint8Array(v);
    if (v === '') return new Uint8Array(0);
    return undefined;
  }

  set(key: string, value: Uint8Array): void {
    checkName('key', key);
    if (value.length > STORE_VALUE_MAX_BYTES) throw new StoreError(`key '${key}': ${value.length} bytes, at most ${STORE_VALUE_MAX_BYTES}`);
    if (value.length === 0) {
      this.prefs.set(this.domain, key, '');
      return;
    }
    const whole = value.byteOffset === 0 && value.byteLength === value.buffer.byteLength && value.buffer instanceof ArrayBuffer;
    this.prefs.set(this.domain, key, whole ? (value.buffer as ArrayBuffer) : value.slice().buffer);
  }

  delete(key: string): void {
    checkName('key', key);
    this.prefs.delete(this.domain, key);
  }
}
