// The layering rules of the project, enforced (docs/architecture.md): the core that runs on the
// ESP32 must not be able to reach Node, the DOM, Moddable or the simulator.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const repo = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');

function sources(dir: string): string[] {
  const full = join(repo, dir);
  const out: string[] = [];
  for (const name of readdirSync(full)) {
    const p = join(full, name);
    if (statSync(p).isDirectory()) out.push(...sources(join(dir, name)));
    else if (name.endsWith('.ts') && !name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

// Comments may name what the code must not use; only code counts. One pass in order, so that
// a `/*` inside a line comment (or a string) does not open a block comment.
function code(text: string): string {
  let out = '';
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    const next = text[i + 1];
    if (c === '/' && next === '/') {
      while (i < text.length && text[i] !== '\n') i++;
    } else if (c === '/' && next === '*') {
      const end = text.indexOf('*/', i + 2);
      i = end < 0 ? text.length : end + 2;
    } else if (c === "'" || c === '"' || c === '`') {
      const start = i++;
      while (i < text.length && text[i] !== c) i += text[i] === '\\' ? 2 : 1;
      out += text.slice(start, ++i);
    } else {
      out += c;
      i++;
    }
  }
  return out;
}

function imports(text: string): string[] {
  const out: string[] = [];
  const re = /(?:import|export)\s[^'"`;]*?from\s*['"]([^'"]+)['"]|import\s*\(\s*['"]([^'"]+)['"]\s*\)|import\s+['"]([^'"]+)['"]/g;
  for (let m = re.exec(text); m; m = re.exec(text)) out.push((m[1] ?? m[2] ?? m[3]) as string);
  return out;
}

const BANNED: [RegExp, string][] = [
  [/\bDate\.now\b/, 'Date.now (time comes through the Clock)'],
  [/\bMath\.random\b/, 'Math.random (randomness comes through an interface)'],
  [/\bsetTimeout\b|\bsetInterval\b|\bsetImmediate\b/, 'timers (the device uses Moddable timer; time comes through the Clock)'],
  [/\bconsole\b/, 'console (the device has trace(); logging comes through Log)'],
  [/\bprocess\b/, 'process (Node only)'],
  [/\bBuffer\b/, 'Buffer (Node only)'],
  [/\bTextEncoder\b|\bTextDecoder\b/, 'TextEncoder/TextDecoder (not global on the device)'],
  [/\b(?:window|document|navigator)\b/, 'DOM globals'],
  [/\brequire\s*\(/, 'require'],
];

function checkTree(dir: string, allowed: string[], skip: (rel: string) => boolean = () => false): string[] {
  const problems: string[] = [];
  for (const file of sources(dir)) {
    if (skip(relative(repo, file))) continue;
    const rel = relative(repo, file);
    const text = code(readFileSync(file, 'utf8'));
    for (const spec of imports(text)) {
      if (!spec.startsWith('.')) {
        problems.push(`${rel}: imports '${spec}' (only relative imports inside ${allowed.join(', ')})`);
        continue;
      }
      const target = relative(repo, resolve(dirname(file), spec));
      if (!allowed.some((a) => target === a || target.startsWith(a + '/'))) {
        problems.push(`${rel}: imports '${spec}' which is outside ${allowed.join(', ')}`);
      }
    }
    for (const [re, what] of BANNED) {
      if (re.test(text)) problems.push(`${rel}: uses ${what}`);
    }
  }
  return problems;
}

describe('tidy: the platform-free core', () => {
  it('hub/ imports only hub/ and catalog/, and uses no platform globals', () => {
    assert.deepEqual(checkTree('hub', ['hub', 'catalog']), []);
  });
  it('catalog/ imports only catalog/, and uses no platform globals', () => {
    assert.deepEqual(checkTree('catalog', ['catalog']), []);
  });
  it('bindings/ is platform-free except its device adapters (Moddable) and host adapters (Node)', () => {
    // device.ts talks to Moddable modules, node.ts to Node's net and ws; everything else in a
    // binding (framing, queues, detectors, simulated adapters) runs on every engine.
    const platformSpecific = (rel: string) => /\/(device|node)\.ts$/.test(rel);
    assert.deepEqual(checkTree('bindings', ['hub', 'catalog', 'bindings'], platformSpecific), []);
  });
  it('uplink/ is platform-free except its host MQTT client (node.ts)', () => {
    // The uplink speaks to the hub through a binding's link and to the broker through MqttPort;
    // node.ts is the host's MQTT client over the `mqtt` package.
    assert.deepEqual(checkTree('uplink', ['hub', 'catalog', 'bindings', 'uplink'], (rel) => rel === 'uplink/node.ts'), []);
  });
  it('pendant/ is platform-free except its entries (Moddable), and only its simulated world reaches the simulator', () => {
    // main.ts and main-lin.ts open pins, radios and timers; boot.ts reads mc/config; sim-world.ts
    // puts the pendant on the simulated air with a hub (the lin target, the tests, the budget).
    const entries = (rel: string) => /^pendant\/(main|main-lin|boot)\.ts$/.test(rel);
    assert.deepEqual(checkTree('pendant', ['hub', 'catalog', 'bindings', 'client', 'pendant'], (rel) => entries(rel) || rel === 'pendant/sim-world.ts'), []);
    assert.deepEqual(checkTree('pendant', ['hub', 'catalog', 'bindings', 'client', 'pendant', 'host-sim'], (rel) => entries(rel)), []);
  });
  it('device adapters never reach simulator, host or Node code', () => {
    const problems: string[] = [];
    for (const file of sources('bindings')) {
      const rel = relative(repo, file);
      if (!rel.endsWith('/device.ts')) continue;
      for (const spec of imports(code(readFileSync(file, 'utf8')))) {
        if (/(^|\/)(sim|node)(\.js)?$|host-sim|^node:|^ws$/.test(spec)) problems.push(`${rel}: imports '${spec}'`);
      }
    }
    assert.deepEqual(problems, []);
  });
  it('the checker itself catches a violation', () => {
    const text = code("import { x } from 'node:fs';\nconst t = Date.now(); // Math.random() and bindings/*/x in a comment are fine\nconsole.log(t);\n");
    assert.deepEqual(imports(text), ['node:fs']);
    assert.ok(BANNED[0]![0].test(text));
    assert.ok(!BANNED[1]![0].test(text));
    assert.ok(BANNED[3]![0].test(text), 'code after a line comment holding /* is still checked');
  });
});

// The egress layers (docs/architecture.md "The send contract"): the core hands a link its frame
// with a tag saying what it is, so no binding decodes a frame and the core never asks which
// binding a link belongs to. test/core/link-opaque.test.ts holds the same from the other side:
// every binding carries frames of random bytes unchanged.
const DECODERS = /\b(?:decodeFrame|FrameDecoder|FieldReader|peekFrameType|decodeValue|decodeData|CborReader|FastReader|decodeEstop)\b/;
const BINDING_BRANCH = /\.binding\s*[!=]==|[!=]==\s*[\w.]*\.binding\b|switch\s*\([^)]*\.binding\s*\)/;

describe('tidy: the egress layers', () => {
  it('no file under bindings/ uses a frame decoder of the core', () => {
    const problems: string[] = [];
    for (const file of sources('bindings')) {
      const m = DECODERS.exec(code(readFileSync(file, 'utf8')));
      if (m) problems.push(`${relative(repo, file)}: ${m[0]}`);
    }
    assert.deepEqual(problems, []);
  });
  it('the core never branches on a binding name (links say what they are in their capabilities)', () => {
    const problems: string[] = [];
    for (const file of sources('hub')) {
      const rel = relative(repo, file);
      const text = code(readFileSync(file, 'utf8'));
      if (BINDING_BRANCH.test(text)) problems.push(`${rel}: compares a link's binding`);
      // The health report's table of binding codes is the one place the names appear.
      if (rel !== join('hub', 'health.ts') && /'(?:tcp|ws|ble|espnow)'/.test(text)) problems.push(`${rel}: names a binding`);
    }
    assert.deepEqual(problems, []);
  });
  it('no file under hub/ is over 500 lines: the core stays in layers a reader can hold', () => {
    const long = sources('hub')
      .map((file) => ({ rel: relative(repo, file), lines: readFileSync(file, 'utf8').split('\n').length }))
      .filter((f) => f.lines > 500)
      .map((f) => `${f.rel}: ${f.lines} lines`);
    assert.deepEqual(long, []);
  });
  it('the checks catch what they look for', () => {
    assert.ok(DECODERS.test(code("import { decodeFrame } from '../../hub/frames.js';")));
    assert.ok(!DECODERS.test(code('// decodeFrame in a comment is fine\n')));
    assert.ok(BINDING_BRANCH.test(code("if (link.caps.binding === 'ble') x();")));
    assert.ok(BINDING_BRANCH.test(code("if ('ble' === s.link.binding) x();")));
    assert.ok(BINDING_BRANCH.test(code('switch (link.caps.binding) {}')));
    assert.ok(!BINDING_BRANCH.test(code('views.push({ binding: link.caps.binding });')), 'reporting the name is not branching on it');
  });
});

// The project speaks of itself: every reference a reader follows lands inside the repository.
// Documents kept outside it (design notes, reference designs) are never cited.
// Spelled in pieces, so that this file does not itself hold the references it looks for.
const OUTSIDE = new RegExp(['\\bBR' + 'IEF\\b', '\\bST' + 'YLE\\.md\\b', '\\bMOD' + 'DABLE\\.md\\b', '\\brefer' + 'ence 00\\d\\b', '\\.\\./sha' + 'red/'].join('|'));

function projectFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(join(repo, dir))) {
    if (name === 'node_modules' || name === 'build' || name === '.git' || name === 'test-results') continue;
    const rel = dir ? join(dir, name) : name;
    const p = join(repo, rel);
    if (statSync(p).isDirectory()) out.push(...projectFiles(rel));
    else if (/\.(ts|mjs|js|json|md|html|css|c|h|py|txt)$/.test(name) && name !== 'package-lock.json') out.push(rel);
  }
  return out;
}

describe('tidy: the project cites only itself', () => {
  it('no file names a document that is not in the repository', () => {
    const problems = projectFiles('')
      .filter((rel) => OUTSIDE.test(readFileSync(join(repo, rel), 'utf8')))
      .map((rel) => `${rel}: ${readFileSync(join(repo, rel), 'utf8').split('\n').find((l) => OUTSIDE.test(l))!.trim().slice(0, 100)}`);
    assert.deepEqual(problems, []);
  });
  it('the check catches such a reference', () => {
    assert.ok(OUTSIDE.test('see BR' + 'IEF §3'));
    assert.ok(OUTSIDE.test('(MOD' + 'DABLE.md "Links")'));
    assert.ok(OUTSIDE.test('after refer' + 'ence 001'));
    assert.ok(!OUTSIDE.test('docs/protocol.md §6'));
  });
});
