// The simulator report in words (`npm run sim` without --json; docs/simulator.md "The summary"):
// the verdict, the hub's counters, every ESTOP, and per client what each subscription was granted
// beside what it delivered, per link its congestion levels over time. Read from the report itself,
// so that the summary never says anything the JSON does not.

import type { Report } from './report.js';

type J = Record<string, unknown>;
const obj = (x: unknown): J => (typeof x === 'object' && x !== null ? (x as J) : {});
const arr = (x: unknown): J[] => (Array.isArray(x) ? (x as J[]) : []);
const n = (x: unknown): number => (typeof x === 'number' ? x : NaN);

function s(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}

function hz(x: number): string {
  if (!Number.isFinite(x)) return '-';
  return `${x >= 100 || Number.isInteger(x) ? x.toFixed(0) : x.toFixed(1)} Hz`;
}

function table(rows: readonly (readonly string[])[], indent: string): string[] {
  const widths: number[] = [];
  for (const r of rows) r.forEach((c, i) => (widths[i] = Math.max(widths[i] ?? 0, c.length)));
  return rows.map((r) => indent + r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] as number))).join('  ').trimEnd());
}

/** "0, then 1 at 3.2 s, 0 at 5.0 s" for a timeline; at most `max` changes listed. */
function changes<T>(items: readonly T[], at: (x: T) => number, what: (x: T) => string, start: string, max = 6): string {
  if (items.length === 0) return `${start} throughout`;
  const shown = items.slice(0, max).map((x) => `${what(x)} at ${s(at(x))}`);
  const more = items.length > max ? `, … ${items.length - max} more` : '';
  return `${start}, then ${shown.join(', ')}${more}`;
}

/** Granted (the latest grant) against delivered (frames over the time since the first grant). */
function subscriptionRows(c: J, endMs: number): string[][] {
  const rows: string[][] = [['channel', 'granted', 'delivered', 'frames', 'gaps', 'dropped', 'age p95']];
  for (const [name, sub] of Object.entries(obj(c['subscriptions']))) {
    const x = obj(sub);
    const grants = arr(x['grants']);
    const last = grants[grants.length - 1];
    const first = grants.find((g) => n(g['grantedHz']) > 0);
    const unsubscribed = last !== undefined && last['priority'] === 'unsubscribed';
    const granted = last === undefined ? '-' : unsubscribed ? 'unsubscribed' : `${hz(n(last['grantedHz']))}${grants.length > 1 ? ` (${grants.length} grants)` : ''}`;
    const untilMs = unsubscribed ? n(last?.['tMs']) : endMs;
    const span = first === undefined ? 0 : untilMs - n(first['tMs']);
    const delivered = span > 0 ? hz((n(x['frames']) * 1000) / span) : '-';
    const age = obj(x['class'] === 'EVENT' ? x['eventAge'] : x['age']);
    rows.push([name, granted, delivered, String(x['frames']), String(x['gaps']), String(x['dropped']), age['p95'] === null || age['p95'] === undefined ? '-' : `${n(age['p95']).toFixed(1)} ms`]);
  }
  return rows;
}

export function reportSummary(r: Report): string {
  const sc = obj(r['scenario']);
  const run = obj(r['run']);
  const hub = obj(r['hub']);
  const endMs = n(run['simulatedMs']);
  const inv = Object.entries(obj(r['invariants'])).filter(([, v]) => n(obj(v)['count']) > 0);
  const lines: string[] = [];
  lines.push(`scenario ${String(sc['name'])}, seed ${String(sc['seed'])}: ${s(endMs)} simulated: ${r['ok'] ? 'every invariant held' : 'INVARIANT VIOLATED'}`);
  for (const [k, v] of inv) {
    const ex = arr(obj(v)['examples'])[0];
    lines.push(`  ${k}: ${String(obj(v)['count'])}${ex ? ` (first at ${s(n(ex['tMs']))} on ${String(ex['link'])}: ${String(ex['detail'])})` : ''}`);
  }

  lines.push('', 'hub');
  lines.push(`  pushes     delivered ${String(hub['delivered'])}, decimated ${String(hub['decimated'])}, conflated ${String(hub['conflated'])}, shed ${String(hub['shedDrops'])}, egress drops ${String(hub['egressDrops'])}, held by grants ${String(hub['rateGated'])}`);
  lines.push(`  sessions   parks ${String(hub['parks'])}, resumes ${String(hub['resumes'])}, reclaims ${String(hub['reclaims'])}; ${arr(r['closes']).length} closed (${[...new Set(arr(r['closes']).map((c) => String(c['reason'])))].join(', ') || 'none'})`);
  const nacks = Object.entries(obj(hub['nacks']));
  lines.push(`  NACKs      ${nacks.length === 0 ? 'none' : nacks.map(([k, v]) => `${k} ${String(v)}`).join(', ')}`);
  lines.push(`  ladder     ${changes(arr(hub['ladder']), (x) => n(x['tMs']), (x) => `rung ${String(x['rung'])} ${String(x['name'])}`, 'calm')}`);
  lines.push(`  admission  ${changes(arr(hub['admission']), (x) => n(x['tMs']), (x) => (x['admitting'] ? 'open' : 'paused'), 'open')}`);

  const estops = arr(r['estops']);
  lines.push('', `ESTOPs: ${String(hub['estops'])} asserted, ${estops.length + n(r['estopsUnlisted'])} latched; ${hub['latched'] ? 'LATCHED at the end' : 'not latched at the end'}`);
  for (const e of estops.slice(0, 10)) {
    const d = arr(e['deliveries']);
    const got = d.filter((x) => x['outcome'] === 'delivered').length;
    lines.push(`  ${s(n(e['latchMs']))}  ${String(e['source'])}${e['causeClient'] ? ` from ${String(e['causeClient'])}` : ''}: delivered on ${got} of ${d.length} links, slowest ${e['maxLatencyMs'] === null ? '-' : `${n(e['maxLatencyMs']).toFixed(1)} ms`}`);
  }
  if (estops.length > 10) lines.push(`  … ${estops.length - 10} more`);

  lines.push('', 'clients (granted: the latest grant; delivered: frames since the first grant, averaged; STATE and EVENT channels send on change, below their grant)');
  for (const [name, cv] of Object.entries(obj(r['clients']))) {
    const c = obj(cv);
    const states = arr(c['states']);
    const lastState = states.length > 0 ? String(states[states.length - 1]?.['state']) : 'never connected';
    const lib = obj(c['library']);
    const nk = Object.entries(obj(c['nacks']));
    lines.push(`  ${name} (${String(c['role'])} on ${String(c['link'])}${c['credential'] ? `, credential ${String(c['credential'])}` : ''}): ${lastState} at the end; ${arr(c['sessions']).length} session(s), ${String(lib['resumes'] ?? 0)} resume(s), ESTOP latches seen ${String(c['estopsAsserted'])}, clears ${String(c['estopsCleared'])}${nk.length > 0 ? `; NACKs ${nk.map(([k, v]) => `${k} ${String(v)}`).join(', ')}` : ''}`);
    const rows = subscriptionRows(c, endMs);
    if (rows.length > 1) lines.push(...table(rows, '    '));
  }

  lines.push('', 'links (congestion level over time, §10.3)');
  const linkRows: string[][] = [];
  for (const [id, lv] of Object.entries(obj(r['links']))) {
    const l = obj(lv);
    if (l['attached'] !== true) continue;
    const levels = arr(l['levels']);
    const start = levels.length > 0 && n(levels[0]?.['level']) === 0 ? levels.slice(1) : levels;
    const faults = arr(l['faults']);
    linkRows.push([id, String(l['binding']), `max ${String(l['maxLevel'])}`, changes(start, (x) => n(x['tMs']), (x) => `level ${String(x['level'])}`, 'level 0') + (faults.length > 0 ? `; ${faults.length} fault(s)` : '')]);
  }
  lines.push(...table(linkRows, '  '));
  return lines.join('\n') + '\n';
}
