// The device build's manifest, checked without a Moddable SDK: what mcconfig would only find
// out on the build machine, or the device only at runtime (docs/architecture.md "The device runtime").
// Each check runs for both targets the manifest builds: esp32 (the device) and lin (the SDK's
// Linux simulator, docs/operations.md "The Linux simulator target").
//   - the manifest parses, targets esp32 and lin and refuses every other platform;
//   - every module it lists exists, with the kind of file its name promises;
//   - every import the device code makes resolves, the way XS resolves it (against the
//     importing module's *name*), to a module the manifest lists: an unlisted one would be
//     missing from the archive and fail only at runtime;
//   - every SDK module imported comes from a manifest the root includes and has a declaration
//     in device/typings;
//   - preload lists real modules (a wrong name is silently ignored), covers hub/ and catalog/,
//     is closed under imports, and no preloaded module writes to a typed array, Map or Set it
//     made at module scope (preloaded, those are read-only and the write throws on the device);
//   - the TypeScript options make mcconfig's tsc strict and stop on the first error.
// Each checker also runs on a broken copy of the manifest or a source snippet, to show it fails.
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, posix, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
const ROOT_MANIFEST = join(repo, 'manifest.json');

type Json = Record<string, unknown>;

// ------------------------------------------------------------------------------ the SDK side

/**
 * The SDK modules the device code may import, each with the SDK manifest (as the root includes
 * it) that brings it, as read in Moddable-OpenSource/moddable v8.2.3. null: mcconfig makes it.
 */
/** An SDK module the root manifest maps by its own `modules` entry to a source of the SDK. */
const SDK_MAPPED = 'mapped by the root manifest';

const SDK_MODULES: Readonly<Record<string, string | null>> = Object.freeze({
  // modules/io/manifests/esp32/manifest.json (socket/lwip/*), modules/io/digital, modules/io/serial
  'embedded:io/socket/tcp': '$(MODDABLE)/modules/io/manifest.json',
  'embedded:io/socket/listener': '$(MODDABLE)/modules/io/manifest.json',
  'embedded:io/digital': '$(MODDABLE)/modules/io/manifest.json',
  // modules/io/analog/manifest.json, which modules/io/manifests/esp32 includes (the pendant's joystick)
  'embedded:io/analog': '$(MODDABLE)/modules/io/manifest.json',
  'embedded:io/serial': '$(MODDABLE)/modules/io/manifest.json',
  // modules/io/ble/server/esp32/manifest.json (bleserver)
  'embedded:io/bluetoothle/peripheral': '$(MODDABLE)/modules/io/ble/server/manifest.json',
  // build/devices/esp32/manifest.json, which manifest_base includes on esp32: base/time, base/timer
  timer: '$(MODDABLE)/examples/manifest_base.json',
  time: '$(MODDABLE)/examples/manifest_base.json',
  preference: '$(MODDABLE)/modules/files/preference/manifest.json',
  crypt: '$(MODDABLE)/modules/crypt/digest/manifest.json',
  // the legacy module: access-point mode (modules/network/wifi/esp32/wifi.js)
  wifi: '$(MODDABLE)/modules/network/wifi/manifest.json',
  // modules/base/instrumentation (counters read undefined in a release build)
  instrumentation: '$(MODDABLE)/modules/base/instrumentation/manifest.json',
  // tools/mcconfig.js: mc.config.js, preloaded whenever anything is
  'mc/config': null,
  // the network's state and name lookup, which the SDK's network manifest brings on esp32 and lin (the io manifest includes it there)
  net: '$(MODDABLE)/modules/io/manifest.json',
  // the ECMA-419 MQTT client, which no SDK manifest the root includes brings: the root's own
  // `modules` maps it to the client's source in the SDK
  'embedded:network/mqtt/client': SDK_MAPPED,
});

/** SDK modules the SDK preloads itself, so that a preloaded module of ours may import them. */
const SDK_PRELOADED = new Set(['mc/config', 'timer', 'time', 'preference', 'crypt', 'embedded:io/socket/tcp', 'embedded:io/socket/listener', 'embedded:io/digital', 'embedded:io/analog', 'embedded:io/serial', 'embedded:io/bluetoothle/peripheral', 'wifi', 'instrumentation', 'net']);

// Mirrors the SDK's creation figures for its ESP32 board targets (e.g. build/devices/esp32/
// targets/nodemcu/manifest.json): 78,848 chunk bytes + 4,928 slots × 16 + 512 stack slots × 16.
const SDK_ESP32_XS_BYTES = 78848 + 4928 * 16 + 512 * 16;
const SLOT_BYTES = 16;

/**
 * Simulator modules the lin targets may list, all platform-free: the hub's runs the simulated
 * robot; the pendant's, the simulated ESP-NOW air.
 */
const LIN_SIMULATOR_MODULES: readonly string[] = ['host-sim/kernel', 'host-sim/robot', 'host-sim/links/espnow-air'];
/** The client library's platform-free modules, which the pendant runs on the device. */
const DEVICE_CLIENT_MODULES: readonly string[] = ['client/core', 'client/espnow'];
const PENDANT_MANIFEST = join(repo, 'pendant', 'manifest.json');

// ------------------------------------------------------------------------------ the manifests

interface ModuleEntry {
  name: string;
  /** Absolute paths of the files the entry matched (a .c may come with .h files). */
  files: string[];
  kind: 'ts' | 'dts' | 'js' | 'c';
  /** The manifest that lists it. */
  manifest: string;
}

type Platform = 'esp32' | 'lin';
const PLATFORMS: readonly Platform[] = ['esp32', 'lin'];

interface Manifests {
  platform: Platform;
  root: Json;
  /** The root's `creation` with its platform's merged over it (mcmanifest.js mergePlatform). */
  creation: Json;
  /** Every manifest of the project read (the root and its ./ includes). */
  files: string[];
  modules: Map<string, ModuleEntry>;
  /** Specifiers given a replacement typing (kind dts) — not runtime modules. */
  typings: Map<string, ModuleEntry>;
  /** Module names mapped to a source of the SDK (`$(MODDABLE)/…`), with that source. */
  sdkSources: Map<string, string>;
  preload: { name: string; manifest: string }[];
  excluded: string[];
  sdkIncludes: string[];
  problems: string[];
}

const KIND_OF: Readonly<Record<string, ModuleEntry['kind'] | 'h'>> = Object.freeze({ '.ts': 'ts', '.d.ts': 'dts', '.js': 'js', '.c': 'c', '.h': 'h' });

function extOf(file: string): string {
  return file.endsWith('.d.ts') ? '.d.ts' : posix.extname(file);
}

function stem(file: string): string {
  const b = basename(file);
  return b.slice(0, b.length - extOf(b).length);
}

/** mcmanifest.js matchPlatform for a bare platform ("esp32", "lin"): its entry, "platform/*", or "...". */
function platformPart(platforms: unknown, platform: Platform): Json | undefined {
  if (!platforms || typeof platforms !== 'object') return undefined;
  const p = platforms as Record<string, Json>;
  return p[platform] ?? p[`${platform}/*`] ?? p['...'];
}

function asList(v: unknown): string[] {
  if (typeof v === 'string') return [v];
  if (Array.isArray(v)) return v.filter((x): x is string => typeof x === 'string');
  return [];
}

/** Reads the root manifest and the project's own included manifests as mcconfig would for `platform`. */
function loadManifests(rootFile: string, root?: Json, platform: Platform = 'esp32'): Manifests {
  const out: Manifests = { platform, root: {}, creation: {}, files: [], modules: new Map(), typings: new Map(), sdkSources: new Map(), preload: [], excluded: [], sdkIncludes: [], problems: [] };
  const visit = (file: string, given?: Json): void => {
    let json: Json;
    try {
      json = given ?? (JSON.parse(readFileSync(file, 'utf8')) as Json);
    } catch (e) {
      out.problems.push(`${relative(repo, file)}: ${(e as Error).message}`);
      return;
    }
    const part = platformPart(json['platforms'], platform) ?? {};
    if (out.files.length === 0) {
      out.root = json;
      out.creation = { ...((json['creation'] as Json | undefined) ?? {}), ...((part['creation'] as Json | undefined) ?? {}) };
    }
    out.files.push(file);
    const dir = dirname(file);
    for (const inc of [...asList(json['include']), ...asList(part['include'])]) {
      if (inc.startsWith('$(')) out.sdkIncludes.push(inc);
      else visit(resolve(dir, inc));
    }
    for (const modules of [json['modules'], part['modules']]) {
      if (!modules || typeof modules !== 'object') continue;
      for (const [key, value] of Object.entries(modules as Record<string, unknown>)) {
        for (const source of asList(value)) {
          if (key === '~') {
            out.excluded.push(source);
            continue;
          }
          if (source.startsWith('$(')) {
            out.sdkSources.set(key, source);
            continue;
          }
          expand(out, file, key, resolve(dir, source));
        }
      }
    }
    for (const name of [...asList(json['preload']), ...asList(part['preload'])]) out.preload.push({ name, manifest: file });
  };
  visit(rootFile, root);
  return out;
}

function expand(out: Manifests, manifest: string, key: string, source: string): void {
  const where = relative(repo, manifest);
  const dir = dirname(source);
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    out.problems.push(`${where}: "${key}": directory ${relative(repo, dir)} not found`);
    return;
  }
  const names = readdirSync(dir).filter((n) => !n.startsWith('.') && statSync(join(dir, n)).isFile());
  const add = (name: string, files: string[]): void => {
    const kinds = new Set(files.map((f) => KIND_OF[extOf(f)]).filter((k) => k !== undefined));
    const code = [...kinds].filter((k) => k !== 'h');
    if (code.length !== 1) {
      out.problems.push(`${where}: "${name}" matches ${files.map((f) => relative(repo, f)).join(', ') || 'no file'}: ${code.length === 0 ? 'nothing to build' : 'more than one kind of source (a stale .js beside a .ts?)'}`);
      return;
    }
    const kind = code[0] as ModuleEntry['kind'];
    const entry: ModuleEntry = { name, files, kind, manifest };
    // Our replacements for SDK typings (the "~" overrides) are declarations, not modules.
    const map = kind === 'dts' && (files[0] as string).startsWith(join(repo, 'device/typings') + '/') ? out.typings : out.modules;
    if (map.has(name)) out.problems.push(`${where}: "${name}" listed twice`);
    map.set(name, entry);
  };
  const star = key.endsWith('*');
  if (basename(source) === '*') {
    if (!star) {
      out.problems.push(`${where}: "${key}" names one module but its source is a wildcard`);
      return;
    }
    const prefix = key.slice(0, -1);
    const byStem = new Map<string, string[]>();
    for (const n of names) {
      if (KIND_OF[extOf(n)] === undefined) continue;
      const s = stem(n);
      byStem.set(s, [...(byStem.get(s) ?? []), join(dir, n)]);
    }
    for (const [s, files] of byStem) add(prefix + s, files);
    return;
  }
  const want = basename(source);
  const files = names.filter((n) => stem(n) === want && KIND_OF[extOf(n)] !== undefined).map((n) => join(dir, n));
  add(star ? key.slice(0, -1) + want : key, files);
}

// ------------------------------------------------------------------------------ source reading

/**
 * The text with comments blanked, read in order (so that a `/*` inside a line comment or a
 * string starts nothing), and with the insides of string and template literals blanked too
 * unless `keepStrings`.
 */
function codeOnly(text: string, keepStrings = false): string {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i] as string;
    const next = text[i + 1];
    if (c === '/' && next === '/') {
      while (i < text.length && text[i] !== '\n') {
        out += ' ';
        i++;
      }
      continue;
    }
    if (c === '/' && next === '*') {
      const end = text.indexOf('*/', i + 2);
      const stop = end < 0 ? text.length : end + 2;
      out += text.slice(i, stop).replace(/[^\n]/g, ' ');
      i = stop;
      continue;
    }
    if (c === "'" || c === '"' || c === '`') {
      out += c;
      i++;
      while (i < text.length && text[i] !== c) {
        if (text[i] === '\\') {
          out += keepStrings ? text.slice(i, i + 2) : '  ';
          i += 2;
          continue;
        }
        out += keepStrings || text[i] === '\n' ? (text[i] as string) : ' ';
        i++;
      }
      out += c;
      i++;
      continue;
    }
    out += c;
    i++;
  }
  return out;
}

interface ImportRef {
  spec: string;
  /** Erased by tsc: `import type`, `export type`, or braces holding only `type` names. */
  typeOnly: boolean;
}

function importsOf(text: string): ImportRef[] {
  // Comments go; strings stay (the specifiers are strings).
  const noComments = codeOnly(text, true);
  const out: ImportRef[] = [];
  const re = /\b(import|export)\s+(type\s+)?((?:(?!\b(?:import|export)\b)[^'"`;])*?)\s*from\s*['"]([^'"]+)['"]|\bimport\s*['"]([^'"]+)['"]|\bimport\s*\(\s*['"]([^'"]+)['"]\s*\)/g;
  for (let m = re.exec(noComments); m; m = re.exec(noComments)) {
    if (m[4] !== undefined) {
      const clause = (m[3] ?? '').trim();
      const braces = /^\{([^}]*)\}$/.exec(clause);
      const allTypes = braces !== null && (braces[1] as string).split(',').map((s) => s.trim()).filter(Boolean).every((s) => s.startsWith('type '));
      out.push({ spec: m[4], typeOnly: m[2] !== undefined || allTypes });
    } else out.push({ spec: (m[5] ?? m[6]) as string, typeOnly: false });
  }
  return out;
}

/** XS: a relative specifier resolves against the importing module's name; a trailing .js/.mjs goes. */
function xsResolve(fromName: string, spec: string): string {
  const bare = spec.replace(/\.m?js$/, '');
  return posix.normalize(posix.join(posix.dirname(fromName), bare));
}

/** tsc (bundler resolution): the file a relative `.js` specifier means. */
function tsResolve(fromFile: string, spec: string): string | undefined {
  const base = resolve(dirname(fromFile), spec.replace(/\.m?js$/, ''));
  for (const ext of ['.ts', '.d.ts', '.js']) if (existsSync(base + ext)) return base + ext;
  return undefined;
}

interface Graph {
  /** Module names reached from the entry, with their files. */
  reached: Map<string, string>;
  sdkImports: Map<string, string[]>;
  problems: string[];
  /** Runtime imports by module name. */
  edges: Map<string, string[]>;
}

/** Walks the runtime imports from `entry` the way the device resolves them. */
function walk(m: Manifests, entry: string): Graph {
  const g: Graph = { reached: new Map(), sdkImports: new Map(), problems: [], edges: new Map() };
  const queue = [entry];
  while (queue.length > 0) {
    const name = queue.shift() as string;
    if (g.reached.has(name)) continue;
    const mod = m.modules.get(name);
    if (!mod) {
      g.problems.push(`module "${name}" is not listed in the manifest`);
      continue;
    }
    const file = mod.files.find((f) => KIND_OF[extOf(f)] === mod.kind) as string;
    g.reached.set(name, file);
    if (mod.kind !== 'ts' && mod.kind !== 'js') continue;
    const deps: string[] = [];
    for (const ref of importsOf(readFileSync(file, 'utf8'))) {
      if (!ref.spec.startsWith('.')) {
        g.sdkImports.set(ref.spec, [...(g.sdkImports.get(ref.spec) ?? []), name]);
        if (!ref.typeOnly) deps.push(ref.spec);
        continue;
      }
      const target = tsResolve(file, ref.spec);
      if (!target) {
        g.problems.push(`${name}: '${ref.spec}' names no file`);
        continue;
      }
      if (ref.typeOnly) continue;
      const xsName = xsResolve(name, ref.spec);
      const listed = m.modules.get(xsName);
      if (!listed) {
        g.problems.push(`${name}: '${ref.spec}' is module "${xsName}" on the device, which the manifest does not list (tsc finds ${relative(repo, target)}; the device would not)`);
        continue;
      }
      if (!listed.files.includes(target)) {
        g.problems.push(`${name}: '${ref.spec}' is "${xsName}" on the device, which is ${relative(repo, listed.files[0] as string)}, but tsc checked ${relative(repo, target)}`);
        continue;
      }
      deps.push(xsName);
      queue.push(xsName);
    }
    g.edges.set(name, deps);
  }
  return g;
}

// ------------------------------------------------------------------------------ preload safety

const WRITABLE_CTORS = /^(?:Uint8Array|Uint8ClampedArray|Int8Array|Uint16Array|Int16Array|Uint32Array|Int32Array|Float32Array|Float64Array|BigInt64Array|BigUint64Array|DataView|Map|Set|WeakMap|WeakSet)$/;

/**
 * Module-scope typed arrays, DataViews, Maps and Sets that code writes to, or hands out where
 * it could be written (XS linker warnings: preloaded instances are read-only, and for typed
 * arrays an indexed assignment throws). Empty ones (`new Uint8Array(0)`) hold nothing to write.
 */
export function preloadWrites(text: string): string[] {
  const code = codeOnly(text);
  const problems: string[] = [];
  // Module scope: brace depth 0 (comments and strings blanked, so braces are code).
  let depth = 0;
  const scopeOf: number[] = [];
  for (let i = 0; i < code.length; i++) {
    scopeOf.push(depth);
    if (code[i] === '{') depth++;
    else if (code[i] === '}') depth--;
  }
  const decl = /\b(?:const|let|var)\s+([A-Za-z_$][\w$]*)\s*(?::[^=;]+)?=\s*new\s+([A-Za-z_$][\w$]*)\s*(?:<[^>(]*>)?\s*\(([^)]*)\)\s*;/g;
  for (let m = decl.exec(code); m; m = decl.exec(code)) {
    if (scopeOf[m.index] !== 0) continue;
    const [, id, ctor, args] = m as unknown as [string, string, string, string];
    if (/^\s*0\s*$/.test(args)) continue;
    const name = id.replace(/\$/g, '\\$');
    if (ctor === 'ArrayBuffer') {
      // Views made at runtime over a preloaded buffer see a read-only buffer.
      const inside = new RegExp(`\\b${name}\\b`, 'g');
      for (let u = inside.exec(code); u; u = inside.exec(code)) {
        if ((scopeOf[u.index] as number) > 0) {
          problems.push(`module-scope ArrayBuffer '${id}' is used inside a function: preloaded, it is read-only on the device`);
          break;
        }
      }
      continue;
    }
    if (!WRITABLE_CTORS.test(ctor)) continue;
    const uses = [
      [new RegExp(`\\b${name}\\s*\\[[^\\]]*\\]\\s*(?:=(?!=)|[-+*/%|&^]=|<<=|>>>?=|\\+\\+|--)`), 'an indexed assignment'],
      [new RegExp(`(?:\\+\\+|--)\\s*${name}\\s*\\[`), 'an indexed increment'],
      [new RegExp(`\\b${name}\\s*\\.\\s*(?:set|fill|copyWithin|sort|reverse|add|delete|clear|setUint8|setInt8|setUint16|setInt16|setUint32|setInt32|setFloat32|setFloat64|setBigInt64|setBigUint64)\\s*\\(`), 'a writing method'],
      [new RegExp(`(?:(?<![=!<>])=(?!=)|[,(:?]|\\breturn)\\s*${name}\\b(?!\\s*(?:[.\\[(]|[=!]==?))`), 'a reference handed out (it may be written through)'],
    ] as const;
    for (const [re, what] of uses) {
      // The declaration itself is no use.
      const rest = code.slice(0, m.index) + ' '.repeat(m[0].length) + code.slice(m.index + m[0].length);
      if (re.test(rest)) {
        problems.push(`module-scope ${ctor} '${id}' meets ${what}: preloaded, it is read-only on the device (keep it in an object made at run time, as hub/frame-fields.ts FieldReader is)`);
        break;
      }
    }
  }
  // Static properties of preloaded classes are read-only too.
  const cls = /\bclass\s+([A-Za-z_$][\w$]*)/g;
  for (let m = cls.exec(code); m; m = cls.exec(code)) {
    if (scopeOf[m.index] !== 0) continue;
    const className = m[1] as string;
    const statics = new RegExp(`\\bstatic\\s+(?!readonly\\b)(?!(?:get|set|async)\\b)([A-Za-z_$][\\w$]*)\\s*[=:;]`, 'g');
    for (let s = statics.exec(code); s; s = statics.exec(code)) {
      const prop = s[1] as string;
      if (new RegExp(`\\b${className}\\s*\\.\\s*${prop}\\s*(?:=(?!=)|[-+*/%|&^]=|\\+\\+|--)`).test(code)) {
        problems.push(`static ${className}.${prop} is assigned: preloaded, a class's static properties are read-only`);
      }
    }
  }
  return problems;
}

/**
 * Module-scope state the XS linker warns about in a preloaded module (`no const`, `not frozen`):
 * a `let` or `var`, and an object or array literal, Map or Set not passed through Object.freeze.
 * Preloaded, each would stay in RAM as an alias of the flash copy; state belongs in an object the
 * owner makes at run time (hub/frame-fields.ts FieldReader). `scripts/check-moddable.mjs` holds
 * the real linker to the same rule; this is the check that needs no SDK.
 */
export function preloadState(text: string): string[] {
  const code = codeOnly(text);
  const problems: string[] = [];
  let depth = 0;
  const scopeOf: number[] = [];
  for (let i = 0; i < code.length; i++) {
    scopeOf.push(depth);
    if (code[i] === '{') depth++;
    else if (code[i] === '}') depth--;
  }
  const lets = /\b(let|var)\s+([A-Za-z_$][\w$]*)/g;
  for (let m = lets.exec(code); m; m = lets.exec(code)) {
    if (scopeOf[m.index] === 0) problems.push(`module-scope ${m[1]} '${m[2]}': the linker keeps it in RAM (no const); keep state in an object made at run time`);
  }
  const objects = /\bconst\s+([A-Za-z_$][\w$]*)\s*(?::[^=;]+)?=\s*(\{|\[|new\s+(?:Map|Set|WeakMap|WeakSet|Object|Array)\b)/g;
  for (let m = objects.exec(code); m; m = objects.exec(code)) {
    if (scopeOf[m.index] === 0) problems.push(`module-scope object '${m[1]}' is not frozen: preloaded, it stays in RAM; freeze it, or keep it in an object made at run time`);
  }
  return problems;
}

// ------------------------------------------------------------------------------ the checks

function checkPlatforms(root: Json): string[] {
  const p = root['platforms'] as Record<string, Json> | undefined;
  if (!p || typeof p !== 'object') return ['no "platforms"'];
  const problems: string[] = [];
  for (const name of PLATFORMS) {
    const part = p[name];
    if (!part || typeof part !== 'object') problems.push(`no "${name}" platform`);
    else if ('error' in part) problems.push(`the "${name}" platform is an error`);
    else if (typeof (part['creation'] as Json | undefined)?.['main'] !== 'string') problems.push(`the "${name}" platform names no creation.main`);
  }
  const other = p['...'];
  if (!other || typeof other['error'] !== 'string' || (other['error'] as string).length === 0) problems.push('no "..." platform whose value is an error');
  return problems;
}

function checkTypescript(root: Json): string[] {
  const o = ((root['typescript'] as Json | undefined)?.['tsconfig'] as Json | undefined)?.['compilerOptions'] as Json | undefined;
  if (!o) return ['no typescript.tsconfig.compilerOptions'];
  const problems: string[] = [];
  if (o['strict'] !== true) problems.push('strict is not true: mcconfig does not turn it on');
  if (o['noEmitOnError'] !== true) problems.push('noEmitOnError is not true: tsc emits despite type errors, so a rebuild would pass over one');
  if (String(o['target']).toLowerCase() !== 'es2022') problems.push(`target ${String(o['target'])}: the core is ES2022 (mcconfig's default es2025 would let newer built-ins through)`);
  const lib = asList(o['lib']).map((l) => l.toLowerCase());
  if (lib.length !== 1 || lib[0] !== 'es2022') problems.push(`lib ${JSON.stringify(o['lib'])}: expected ["es2022"]`);
  return problems;
}

/**
 * The heaps a manifest gives XS: fixed (incremental 0), within the SDK's ESP32 figures on esp32.
 * A lin build that hosts a whole simulated world (the pendant's: the hub too) may take more of
 * the host's memory (`hostLin`); the hub's own lin build keeps to the device's figures.
 */
function checkCreation(m: Manifests, hostLin = false): string[] {
  const c = m.creation;
  if (Object.keys(c).length === 0) return ['no "creation"'];
  const problems: string[] = [];
  const chunk = c['chunk'] as Json | undefined;
  const heap = c['heap'] as Json | undefined;
  if (c['static'] !== 0) problems.push('creation.static is not 0: on the ESP32 one static block cannot use both RAM regions (manifest.md "creation")');
  if (!chunk || typeof chunk['initial'] !== 'number' || chunk['incremental'] !== 0) problems.push('creation.chunk needs an initial size and incremental 0');
  if (!heap || typeof heap['initial'] !== 'number' || heap['incremental'] !== 0) problems.push('creation.heap needs an initial slot count and incremental 0');
  if (typeof c['stack'] !== 'number' || (c['stack'] as number) < 384) problems.push('creation.stack below the SDK default 384');
  if (chunk && heap && typeof c['stack'] === 'number' && !(hostLin && m.platform === 'lin')) {
    const total = (chunk['initial'] as number) + (heap['initial'] as number) * SLOT_BYTES + (c['stack'] as number) * SLOT_BYTES;
    if (total > SDK_ESP32_XS_BYTES) problems.push(`XS would take ${total} bytes, more than the ${SDK_ESP32_XS_BYTES} the SDK gives its ESP32 boards`);
  }
  const main = c['main'];
  if (typeof main !== 'string') problems.push('creation.main is not set');
  else {
    const mod = m.modules.get(main);
    if (!mod) problems.push(`creation.main "${main}" is not a listed module`);
    else if (!/\bexport\s+default\s+function\b/.test(readFileSync(mod.files[0] as string, 'utf8'))) problems.push(`creation.main "${main}" exports no default function for the runtime to call`);
  }
  return problems;
}

function checkModules(m: Manifests): string[] {
  const problems = [...m.problems];
  for (const mod of m.modules.values()) {
    const file = relative(repo, mod.files[0] as string).split('\\').join('/');
    // XS resolves relative imports against names, so a module's name must mirror its path.
    if ((mod.kind === 'ts' || mod.kind === 'dts') && mod.name !== file.replace(/(\.d)?\.ts$/, '')) {
      problems.push(`module "${mod.name}" is ${file}: its name does not mirror its folder, so its relative imports would resolve elsewhere on the device`);
    }
    if (/\/(sim|node)$/.test(mod.name) || mod.name.startsWith('host-sim/') || (mod.name.startsWith('client/') && !DEVICE_CLIENT_MODULES.includes(mod.name)) || mod.name.startsWith('test/')) {
      // The Linux simulator target runs the simulator's robot on its kernel (device/sim-robot.ts).
      if (!(m.platform === 'lin' && LIN_SIMULATOR_MODULES.includes(mod.name))) problems.push(`module "${mod.name}" is host code`);
    }
  }
  return problems;
}

/** Every SDK module the entry's code imports comes from an SDK manifest the build includes. */
function checkIncludes(m: Manifests, g: Graph): string[] {
  const problems: string[] = [];
  const need = new Set<string>();
  for (const spec of g.sdkImports.keys()) {
    const inc = SDK_MODULES[spec];
    if (inc === SDK_MAPPED) {
      if (!m.sdkSources.has(spec)) problems.push(`'${spec}' is imported but the manifest's modules map it to no source of the SDK`);
    } else if (typeof inc === 'string') need.add(inc);
  }
  for (const inc of need) if (!m.sdkIncludes.includes(inc)) problems.push(`the SDK manifest ${inc} is not included`);
  return problems;
}

function typingDeclarations(): Map<string, string> {
  const out = new Map<string, string>();
  const dir = join(repo, 'device/typings');
  const visit = (d: string): void => {
    for (const n of readdirSync(d)) {
      const p = join(d, n);
      if (statSync(p).isDirectory()) visit(p);
      else if (n.endsWith('.d.ts')) {
        const re = /declare\s+module\s+['"]([^'"]+)['"]/g;
        const text = readFileSync(p, 'utf8');
        for (let x = re.exec(text); x; x = re.exec(text)) out.set(x[1] as string, p);
      }
    }
  };
  visit(dir);
  return out;
}

function checkImports(m: Manifests, g: Graph): string[] {
  const problems = [...g.problems];
  const declared = typingDeclarations();
  for (const [spec, users] of g.sdkImports) {
    if (!(spec in SDK_MODULES)) {
      problems.push(`'${spec}' (imported by ${users.join(', ')}) is no SDK module this check knows of: add it to SDK_MODULES with the manifest that brings it`);
      continue;
    }
    if (!declared.has(spec)) problems.push(`'${spec}' (imported by ${users.join(', ')}) has no declaration in device/typings`);
  }
  // Each module listed by name (device/, bindings/) must be reachable from the entry, or it is
  // dead weight in flash; hub/* and catalog/* come whole by wildcard.
  for (const name of m.modules.keys()) {
    if (m.modules.get(name)?.kind !== 'ts' || name.startsWith('hub/') || name.startsWith('catalog/')) continue;
    if (!g.reached.has(name)) problems.push(`module "${name}" is listed but nothing imports it from creation.main`);
  }
  return problems;
}

function checkPreload(m: Manifests, g: Graph): string[] {
  const problems: string[] = [];
  const preloaded = new Set<string>();
  for (const { name, manifest } of m.preload) {
    const where = relative(repo, manifest);
    if (name.includes('*')) {
      problems.push(`${where}: preload "${name}": a wildcard preloads JavaScript modules only (tools/mcconfig.js filterPreload), never these TypeScript ones`);
      continue;
    }
    if (!m.modules.has(name) && !m.sdkSources.has(name)) problems.push(`${where}: preload "${name}" names no listed module (mcconfig ignores it silently)`);
    preloaded.add(name);
  }
  for (const name of m.modules.keys()) {
    if ((name.startsWith('hub/') || name.startsWith('catalog/')) && m.modules.get(name)?.kind === 'ts' && !preloaded.has(name)) {
      problems.push(`${name} is not preloaded: the core's code and constant data belong in flash`);
    }
  }
  // Preloading a module preloads what it imports (preload.md): the list must say so.
  for (const name of preloaded) {
    for (const dep of g.edges.get(name) ?? []) {
      if (dep in SDK_MODULES) {
        if (!SDK_PRELOADED.has(dep) && !preloaded.has(dep)) problems.push(`${name} is preloaded but imports '${dep}', which the SDK does not preload`);
      } else if (!preloaded.has(dep)) problems.push(`${name} is preloaded but imports ${dep}, which is not`);
    }
  }
  for (const name of preloaded) {
    const mod = m.modules.get(name);
    if (!mod || mod.kind !== 'ts') continue;
    const text = readFileSync(mod.files[0] as string, 'utf8');
    for (const p of preloadWrites(text)) problems.push(`${name}: ${p}`);
    for (const p of preloadState(text)) problems.push(`${name}: ${p}`);
  }
  return problems;
}

function checkTypingOverrides(m: Manifests): string[] {
  const problems: string[] = [];
  for (const ex of m.excluded) {
    const match = /^\$\(MODDABLE\)\/typings\/(.+)$/.exec(ex);
    if (!match) {
      problems.push(`"~" ${ex}: only SDK typings are dropped, to hand mcconfig ours instead`);
      continue;
    }
    const ours = join(repo, 'device/typings', match[1] + '.d.ts');
    const replacement = [...m.typings.values()].find((t) => t.files.includes(ours));
    if (!replacement) {
      problems.push(`"~" ${ex}: no module entry hands mcconfig ${relative(repo, ours)} in its place`);
      continue;
    }
    if (!new RegExp(`declare\\s+module\\s+['"]${replacement.name.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}['"]`).test(readFileSync(ours, 'utf8'))) {
      problems.push(`${relative(repo, ours)} is handed to mcconfig as "${replacement.name}" but declares another module`);
    }
  }
  for (const t of m.typings.values()) {
    const rel = relative(join(repo, 'device/typings'), t.files[0] as string).replace(/\.d\.ts$/, '').split('\\').join('/');
    if (!m.excluded.includes(`$(MODDABLE)/typings/${rel}`)) problems.push(`"${t.name}" is given our typing but "~" keeps the SDK's $(MODDABLE)/typings/${rel}: both would declare the module`);
  }
  return problems;
}

function mainOf(m: Manifests): string {
  return typeof m.creation['main'] === 'string' ? (m.creation['main'] as string) : 'main';
}

function checkAll(platform: Platform, root?: Json, manifest = ROOT_MANIFEST): string[] {
  const m = loadManifests(manifest, root, platform);
  const g = walk(m, mainOf(m));
  return [...checkPlatforms(m.root), ...checkTypescript(m.root), ...checkCreation(m, manifest === PENDANT_MANIFEST), ...checkModules(m), ...checkIncludes(m, g), ...checkImports(m, g), ...checkPreload(m, g), ...checkTypingOverrides(m)];
}

function rootCopy(): Json {
  return JSON.parse(readFileSync(ROOT_MANIFEST, 'utf8')) as Json;
}

// ------------------------------------------------------------------------------ the suites

describe('device build: manifest.json', () => {
  it('parses as JSON', () => {
    assert.doesNotThrow(() => JSON.parse(readFileSync(ROOT_MANIFEST, 'utf8')));
  });

  it('targets esp32 and lin, each with its entry, and refuses every other platform with an error', () => {
    assert.deepEqual(checkPlatforms(rootCopy()), []);
    const broken = rootCopy();
    delete (broken['platforms'] as Json)['...'];
    delete ((broken['platforms'] as Record<string, Json>)['lin'] as Json)['creation'];
    assert.deepEqual(checkPlatforms(broken), ['the "lin" platform names no creation.main', 'no "..." platform whose value is an error']);
    assert.equal(mainOf(loadManifests(ROOT_MANIFEST, undefined, 'esp32')), 'device/main');
    assert.equal(mainOf(loadManifests(ROOT_MANIFEST, undefined, 'lin')), 'device/main-lin');
  });

  it('makes mcconfig’s tsc strict, ES2022 and stop on the first type error', () => {
    assert.deepEqual(checkTypescript(rootCopy()), []);
    const broken = rootCopy();
    const o = ((broken['typescript'] as Json)['tsconfig'] as Json)['compilerOptions'] as Json;
    delete o['noEmitOnError'];
    o['target'] = 'es2025';
    assert.equal(checkTypescript(broken).length, 2);
  });

  it('sizes the XS heaps within the SDK’s ESP32 figures, and names an entry the runtime can call', () => {
    for (const platform of PLATFORMS) assert.deepEqual(checkCreation(loadManifests(ROOT_MANIFEST, undefined, platform)), [], platform);
    const broken = rootCopy();
    ((broken['creation'] as Json)['chunk'] as Json)['initial'] = 200000;
    (((broken['platforms'] as Record<string, Json>)['esp32'] as Json)['creation'] as Json)['main'] = 'main';
    assert.equal(checkCreation(loadManifests(ROOT_MANIFEST, broken)).length, 2);
  });

  it('lists only files that exist, each one kind of source, named after its path', () => {
    const m = loadManifests(ROOT_MANIFEST);
    assert.deepEqual(checkModules(m), []);
    assert.deepEqual(checkModules(loadManifests(ROOT_MANIFEST, undefined, 'lin')), []);
    assert.ok(m.modules.has('hub/hub') && m.modules.get('hub/hub')?.kind === 'ts');
    assert.equal(m.modules.get('espnow')?.kind, 'c', 'the ESP-NOW native module (bindings/espnow/manifest.json) is a C file');
    const broken = rootCopy();
    (broken['modules'] as Json)['device/nothing'] = './device/nothing';
    (broken['modules'] as Json)['store'] = './device/store';
    (broken['modules'] as Json)['host-sim/robot'] = './host-sim/robot';
    const problems = checkModules(loadManifests(ROOT_MANIFEST, broken));
    assert.ok(problems.some((p) => p.includes('"device/nothing"') && p.includes('no file')), problems.join('\n'));
    assert.ok(problems.some((p) => p.includes('"store"') && p.includes('does not mirror')), problems.join('\n'));
    assert.ok(problems.some((p) => p === 'module "host-sim/robot" is host code'), 'on esp32 the simulator is host code');
  });

  it('includes the SDK manifest of every SDK module the entry’s code imports', () => {
    for (const platform of PLATFORMS) {
      const m = loadManifests(ROOT_MANIFEST, undefined, platform);
      assert.deepEqual(checkIncludes(m, walk(m, mainOf(m))), [], platform);
    }
    const broken = rootCopy();
    broken['include'] = asList(broken['include']).filter((i) => !i.includes('crypt'));
    const m = loadManifests(ROOT_MANIFEST, broken);
    assert.deepEqual(checkIncludes(m, walk(m, 'device/main')), ['the SDK manifest $(MODDABLE)/modules/crypt/digest/manifest.json is not included']);
  });

  it('lists every module the device code imports, under the name XS resolves the import to', () => {
    const m = loadManifests(ROOT_MANIFEST);
    const g = walk(m, 'device/main');
    assert.deepEqual(checkImports(m, g), []);
    // The entry reaches every device adapter and the core.
    for (const name of ['bindings/tcp/device', 'bindings/ble/device', 'bindings/espnow/device', 'hub/hub', 'catalog/default', 'device/store', 'device/robot', 'device/runtime', 'device/wiring']) {
      assert.ok(g.reached.has(name), `${name} is reached from device/main`);
    }
    const broken = rootCopy();
    delete (broken['modules'] as Json)['bindings/tcp/framing'];
    const m2 = loadManifests(ROOT_MANIFEST, broken);
    const problems = checkImports(m2, walk(m2, 'device/main'));
    assert.ok(problems.some((p) => p.includes('"bindings/tcp/framing"') && p.includes('does not list')), problems.join('\n'));
  });

  it('builds lin from the same core and Wi-Fi bindings, with a simulated robot and no BLE, ESP-NOW, GPIO or UART', () => {
    const m = loadManifests(ROOT_MANIFEST, undefined, 'lin');
    const g = walk(m, 'device/main-lin');
    assert.deepEqual(checkImports(m, g), []);
    for (const name of ['bindings/tcp/device', 'bindings/tcp/http-device', 'hub/hub', 'catalog/default', 'device/boot', 'device/store', 'device/runtime', 'device/wiring', 'device/sim-robot', 'host-sim/robot']) {
      assert.ok(g.reached.has(name), `${name} is reached from device/main-lin`);
    }
    // The configuration reads the BLE pairing names and the ESP-NOW key format (both platform-free,
    // no radio code): those two are built everywhere; nothing else of BLE or ESP-NOW is.
    const everywhere = new Set(['bindings/ble/security', 'bindings/espnow/pairing']);
    for (const name of [...m.modules.keys()]) assert.ok(everywhere.has(name) || !/^bindings\/(ble|espnow)\/|^device\/(main|robot|robot-link)$|^espnow$/.test(name), `${name} is not built for lin`);
    for (const spec of ['embedded:io/digital', 'embedded:io/serial', 'embedded:io/bluetoothle/peripheral', 'wifi']) assert.ok(!g.sdkImports.has(spec), `lin imports no ${spec}`);
    const warning = ((rootCopy()['platforms'] as Record<string, Json>)['lin'] as Json)['warning'];
    assert.match(String(warning), /BLE and ESP-NOW are not built for lin/, 'the lin build says what it leaves out');
    // The device keeps every module it had.
    const esp = loadManifests(ROOT_MANIFEST, undefined, 'esp32');
    for (const name of ['device/main', 'device/robot', 'device/robot-link', 'bindings/ble/device', 'bindings/ble/link', 'bindings/espnow/device', 'bindings/espnow/link', 'espnow']) assert.ok(esp.modules.has(name), `esp32 lists ${name}`);
    assert.ok(esp.sdkIncludes.includes('$(MODDABLE)/modules/io/ble/server/manifest.json') && !m.sdkIncludes.includes('$(MODDABLE)/modules/io/ble/server/manifest.json'), 'the GATT server on esp32 only');
  });

  it('builds the fleet uplink into both entries over the SDK’s ECMA-419 MQTT client, preloaded', () => {
    for (const platform of PLATFORMS) {
      const m = loadManifests(ROOT_MANIFEST, undefined, platform);
      const g = walk(m, mainOf(m));
      for (const name of ['device/uplink', 'uplink/moddable', 'uplink/uplink', 'uplink/config', 'uplink/messages']) assert.ok(g.reached.has(name), `${platform}: ${name} is reached from ${mainOf(m)}`);
      assert.deepEqual(g.sdkImports.get('embedded:network/mqtt/client'), ['device/uplink'], platform);
      assert.equal(m.sdkSources.get('embedded:network/mqtt/client'), '$(MODDABLE)/examples/io/tcp/mqttclient/mqttclient', platform);
      const preloaded = new Set(m.preload.map((p) => p.name));
      for (const name of ['device/uplink', 'uplink/moddable', 'uplink/uplink', 'embedded:network/mqtt/client']) assert.ok(preloaded.has(name), `${platform}: ${name} is preloaded`);
      // The host's adapter over the npm package is never built.
      assert.ok(!m.modules.has('uplink/node'), `${platform}: uplink/node is host code`);
    }
    const broken = rootCopy();
    delete (broken['modules'] as Json)['embedded:network/mqtt/client'];
    const m = loadManifests(ROOT_MANIFEST, broken);
    const g = walk(m, 'device/main');
    assert.ok(checkIncludes(m, g).some((p) => p.includes("'embedded:network/mqtt/client'") && p.includes('no source of the SDK')));
    assert.ok(checkPreload(m, g).some((p) => p.includes('preload "embedded:network/mqtt/client" names no listed module')));
  });

  it('resolves relative imports against module names, as XS does', () => {
    assert.equal(xsResolve('bindings/tcp/device', '../../hub/ports.js'), 'hub/ports');
    assert.equal(xsResolve('device/main', './boot.js'), 'device/boot');
    // A module named at the root (`"*": ["./device/main"]`) would look for `../hub/hub` above the root.
    assert.equal(xsResolve('main', '../hub/hub.js'), '../hub/hub');
  });

  it('preloads real modules, all of hub/ and catalog/, and everything they import', function () {
    this.timeout(20000);
    for (const platform of PLATFORMS) {
      const m = loadManifests(ROOT_MANIFEST, undefined, platform);
      assert.deepEqual(checkPreload(m, walk(m, mainOf(m))), [], platform);
    }
    const broken = rootCopy();
    const list = asList(broken['preload']);
    broken['preload'] = [...list.filter((n) => n !== 'hub/shed' && n !== 'device/config'), 'hub/nothing', 'catalog/*'];
    const m2 = loadManifests(ROOT_MANIFEST, broken);
    const problems = checkPreload(m2, walk(m2, 'device/main'));
    assert.ok(problems.some((p) => p.includes('"hub/nothing" names no listed module')), problems.join('\n'));
    assert.ok(problems.some((p) => p.includes('"catalog/*"') && p.includes('wildcard')), problems.join('\n'));
    assert.ok(problems.some((p) => p.startsWith('hub/shed is not preloaded')), problems.join('\n'));
    assert.ok(problems.some((p) => p.includes('device/boot is preloaded but imports device/config')), problems.join('\n'));
  });

  it('hands mcconfig our typing wherever the SDK’s is dropped, and drops it wherever ours is handed over', () => {
    const m = loadManifests(ROOT_MANIFEST);
    assert.deepEqual(checkTypingOverrides(m), []);
    assert.deepEqual([...m.typings.keys()].sort(), ['embedded:io/bluetoothle/peripheral', 'embedded:io/socket/listener', 'embedded:io/socket/tcp', 'embedded:network/mqtt/client']);
    const lin = loadManifests(ROOT_MANIFEST, undefined, 'lin');
    assert.deepEqual(checkTypingOverrides(lin), []);
    assert.deepEqual([...lin.typings.keys()].sort(), ['embedded:io/socket/listener', 'embedded:io/socket/tcp', 'embedded:network/mqtt/client']);
    const broken = rootCopy();
    (broken['modules'] as Json)['~'] = asList((broken['modules'] as Json)['~']).filter((x) => !x.endsWith('/listener'));
    assert.equal(checkTypingOverrides(loadManifests(ROOT_MANIFEST, broken)).length, 1);
  });

  it('passes every check together, for esp32 and for lin', () => {
    assert.deepEqual(checkAll('esp32'), []);
    assert.deepEqual(checkAll('lin'), []);
  });
});

// The pendant (docs/pendant.md) is a second firmware with its own manifest: the same checks.
describe('device build: pendant/manifest.json', () => {
  it('passes every check the hub’s manifest passes, for esp32 and for lin', function () {
    this.timeout(20000);
    assert.deepEqual(checkAll('esp32', undefined, PENDANT_MANIFEST), []);
    assert.deepEqual(checkAll('lin', undefined, PENDANT_MANIFEST), []);
  });

  it('runs the client core over the hub’s own ESP-NOW radio on the device, and the simulated air on lin', () => {
    const esp = loadManifests(PENDANT_MANIFEST, undefined, 'esp32');
    assert.equal(mainOf(esp), 'pendant/main');
    const g = walk(esp, 'pendant/main');
    for (const name of ['client/core', 'client/espnow', 'bindings/espnow/peer', 'bindings/espnow/device', 'pendant/pendant', 'pendant/boot']) assert.ok(g.reached.has(name), `${name} is reached from pendant/main`);
    for (const spec of ['embedded:io/digital', 'embedded:io/analog', 'wifi']) assert.ok(g.sdkImports.has(spec), `the device imports ${spec}`);
    assert.ok(esp.modules.has('espnow') && esp.modules.get('espnow')?.kind === 'c', 'the native ESP-NOW module');
    assert.ok(!esp.modules.has('pendant/sim-world') && !esp.modules.has('host-sim/links/espnow-air'), 'no simulation on the device');
    const lin = loadManifests(PENDANT_MANIFEST, undefined, 'lin');
    assert.equal(mainOf(lin), 'pendant/main-lin');
    const gl = walk(lin, 'pendant/main-lin');
    for (const name of ['pendant/sim-world', 'host-sim/links/espnow-air', 'hub/hub', 'bindings/espnow/link', 'client/espnow']) assert.ok(gl.reached.has(name), `${name} is reached from pendant/main-lin`);
    for (const spec of ['embedded:io/digital', 'embedded:io/analog', 'wifi']) assert.ok(!gl.sdkImports.has(spec), `lin imports no ${spec}`);
    assert.ok(!lin.modules.has('bindings/espnow/device') && !lin.modules.has('espnow'), 'no radio on lin');
    // The device's heaps hold the pendant alone, within the SDK's figures; lin's, the hub as well.
    assert.deepEqual(checkCreation(esp), []);
    assert.ok(checkCreation(lin).some((p) => p.startsWith('XS would take')), 'lin hosts the hub too: more than the device\'s figures');
  });

  it('fails when the pendant’s manifest leaves out what its code imports', () => {
    const broken = JSON.parse(readFileSync(PENDANT_MANIFEST, 'utf8')) as Json;
    delete (broken['modules'] as Json)['client/espnow'];
    broken['preload'] = asList(broken['preload']).filter((n) => n !== 'client/espnow');
    const problems = checkAll('esp32', broken, PENDANT_MANIFEST);
    assert.ok(problems.some((p) => p.includes('"client/espnow"')), problems.join('\n'));
  });
});

describe('device build: preload safety of module-scope data', () => {
  it('finds a write to a module-scope typed array, directly or through an alias', () => {
    const direct = preloadWrites('const SCRATCH = new Float64Array(1);\nexport function f(x: number) { SCRATCH[0] = x; return SCRATCH[0]; }\n');
    assert.equal(direct.length, 1);
    assert.match(direct[0] as string, /SCRATCH.*indexed assignment/);
    const alias = preloadWrites('const U8 = new Uint8Array(8);\nexport function f() { const u = U8; u[1] = 2; }\n');
    assert.match(alias[0] as string, /U8.*handed out/);
    const method = preloadWrites('const SEEN = new Map<number, number>();\nexport function f(k: number) { SEEN.set(k, 1); }\n');
    assert.match(method[0] as string, /SEEN.*writing method/);
    const lateView = preloadWrites('const RAW = new ArrayBuffer(8);\nexport function f(x: number) { new Float64Array(RAW)[0] = x; }\n');
    assert.match(lateView[0] as string, /ArrayBuffer 'RAW' is used inside a function/);
  });

  it('passes read-only and lazily made data', () => {
    assert.deepEqual(preloadWrites('const EMPTY = new Uint8Array(0);\nexport function f() { return EMPTY; }\n'), []);
    assert.deepEqual(preloadWrites('const TABLE = new Uint8Array([1, 2]);\nexport function f(i: number) { return TABLE[i] === 1; }\n'), []);
    assert.deepEqual(preloadWrites('let seen: Uint32Array | undefined;\nexport function f() { if (!seen) seen = new Uint32Array(8); seen[0] = 1; }\n'), []);
    assert.deepEqual(preloadWrites('export class R { readonly seen = new Uint32Array(8); f() { this.seen[0] = 1; } }\n'), []);
    assert.deepEqual(preloadWrites('export function f() { const b = new Uint8Array(4); b[0] = 1; return b; }\n'), []);
    // Text inside strings and comments is not code.
    assert.deepEqual(preloadWrites("const B = new Uint8Array(4);\n// B[0] = 1\nexport const s = 'B[0] = 1';\n"), []);
  });

  it('finds module-scope state the linker keeps in RAM: a let or var, an unfrozen object', () => {
    const p = preloadState('let seen: Uint32Array | undefined;\nvar n = 0;\nexport const parsed = { base: 0 };\nconst list: number[] = [];\nconst byId = new Map<number, number>();\nexport function f() { let x = 1; const o = { x }; return o; }\n');
    assert.equal(p.length, 5, p.join('\n'));
    assert.match(p[0] as string, /let 'seen'.*no const/);
    assert.match(p[1] as string, /var 'n'/);
    assert.match(p[2] as string, /'parsed' is not frozen/);
    assert.deepEqual(preloadState("export const K = Object.freeze({ a: 1 });\nconst T = Object.freeze([1, 2]);\nexport class C { x = 0; y = []; }\nexport function g() { let a = 0; return a; }\n"), []);
  });

  it('finds an assignment to a static property of a class', () => {
    const p = preloadWrites('export class Counter { static count = 0; bump() { Counter.count++; } }\n');
    assert.match(p[0] as string, /Counter\.count/);
    assert.deepEqual(preloadWrites('export class K { static readonly size = 4; get n() { return K.size; } }\n'), []);
  });
});

describe('device build: import reading', () => {
  it('tells type-only imports, which tsc erases, from runtime ones', () => {
    const refs = importsOf(
      [
        "import type { A } from './a.js';",
        "import { type B, type C } from './b.js';",
        "import { type D, E } from './d.js';",
        "import F from 'timer';",
        "export { G } from './g.js';",
        "// import H from './h.js';",
        '// a comment naming bindings/*/device.ts must not open a block comment',
        "import I from './i.js';",
        "const s = '/* not a comment';",
        "import J from './j.js';",
      ].join('\n'),
    );
    assert.deepEqual(
      refs.map((r) => [r.spec, r.typeOnly]),
      [
        ['./a.js', true],
        ['./b.js', true],
        ['./d.js', false],
        ['timer', false],
        ['./g.js', false],
        ['./i.js', false],
        ['./j.js', false],
      ],
    );
  });
});
