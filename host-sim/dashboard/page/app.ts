/// <reference lib="dom" />
// The dashboard page: bundled by esbuild at start (host-sim/dashboard/bundle.ts), no framework.
// It keeps the samples and levels it is pushed over /ws for the plot window, draws them with
// uPlot, and evaluates the §10.4 demo with hub/shed.ts `shedDecide` itself, bundled in.

import uPlot from 'uplot';
import { ChannelClass, Priority, PRIORITY_NAMES } from '../../../catalog/schema.js';
import { NO_STREAM_KIND, SHED_DECISION_NAME, shedDecide, shedDecision, shedRow } from '../../../hub/shed.js';
import type { ChannelMeta, HelloMsg, LogLine, PageMsg, Sample, ServerMsg, SessionMsg, StateMsg, SubMsg } from '../messages.js';

// The hub-wide ladder's rungs (hub/ladder.ts), for the health card.
const LADDER_RUNGS = ['calm', 'thin', 'reduce_rates', 'pause_non_essential', 'refuse_joins', 'park_lowest'];
import { EFFECT_CLASSES, SEGMENT_EXCEPTION, SHED_ROW_TEXT, decisionEffect } from '../rows.js';

const LEVEL_WINDOW_S = 60;
const COLORS = ['#1a73e8', '#e8710a', '#188038', '#9334e6', '#d93025', '#12b5cb', '#f9ab00', '#5f6368', '#b31412', '#174ea6'];
const FLASH_MS = 1500;

function $(id: string): HTMLElement {
  const el = document.getElementById(id);
  if (!el) throw new Error(`no #${id}`);
  return el;
}

function h<K extends keyof HTMLElementTagNameMap>(tag: K, attrs: Record<string, string> = {}, text?: string): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  if (text !== undefined) el.textContent = text;
  return el;
}

function fmt(x: number, d = 2): string {
  return Number.isFinite(x) ? x.toFixed(d) : '—';
}

function hz(x: number): string {
  return Number.isInteger(x) ? String(x) : x.toFixed(1);
}

// ---------------------------------------------------------------------------------------------
// What the server told us.

let hello: HelloMsg | null = null;
let last: StateMsg | null = null;
const channelsById = new Map<number, ChannelMeta>();

/** Samples kept for the plot window: raw by channel, delivered by client then channel. */
class Series {
  readonly t: number[] = [];
  readonly v: (readonly number[])[] = [];
  push(s: Sample, offset: number): void {
    this.t.push(s[0] as number);
    this.v.push(s.slice(offset));
  }
  trim(fromT: number): void {
    let i = 0;
    while (i < this.t.length && (this.t[i] as number) < fromT) i++;
    if (i > 0) {
      this.t.splice(0, i);
      this.v.splice(0, i);
    }
  }
}

const raw = new Map<number, Series>();
const delivered = new Map<string, Map<number, Series>>();

function rawSeries(ch: number): Series {
  let s = raw.get(ch);
  if (!s) raw.set(ch, (s = new Series()));
  return s;
}

function deliveredSeries(client: string, ch: number): Series {
  let byCh = delivered.get(client);
  if (!byCh) delivered.set(client, (byCh = new Map()));
  let s = byCh.get(ch);
  if (!s) byCh.set(ch, (s = new Series()));
  return s;
}

// Congestion level history by session label.
const levelT: number[] = [];
const levelSeries = new Map<string, (number | null)[]>();

// ---------------------------------------------------------------------------------------------
// The WebSocket.

let socket: WebSocket | null = null;
/** This page's control secret, from the server's hello on this socket; control messages carry it. */
let secret = '';

function send(m: PageMsg): void {
  if (socket && socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(m.type === 'watch' ? m : { ...m, secret }));
}

function connect(): void {
  const ws = new WebSocket(`ws://${location.host}/ws`);
  socket = ws;
  ws.onopen = () => setConn('live', 'ok');
  ws.onclose = () => {
    setConn('disconnected: retrying', 'bad');
    socket = null;
    setTimeout(connect, 1000);
  };
  ws.onmessage = (ev: MessageEvent) => {
    const m = JSON.parse(String(ev.data)) as ServerMsg;
    if (m.type === 'hello') {
      secret = m.secret ?? '';
      onHello(m);
    } else if (m.type === 'state') onState(m);
    else if (m.type === 'refused') setConn(`refused ${m.command}: ${m.reason}`, 'bad');
  };
}

function setConn(text: string, cls: string): void {
  const el = $('run-state');
  el.textContent = text;
  el.className = `badge ${cls}`;
}

// ---------------------------------------------------------------------------------------------
// Plots.

interface PlotPanel {
  readonly key: 'a' | 'b';
  readonly channelSel: HTMLSelectElement;
  readonly fieldSel: HTMLSelectElement;
  readonly subscriberSel: HTMLSelectElement;
  readonly box: HTMLElement;
  readonly foot: HTMLElement;
  plot: uPlot | null;
  points: number;
  /** Frozen by Pause: new samples are kept but not drawn. */
  paused: boolean;
  /** A dragged x range is shown: the plot holds still until Reset zoom. */
  zoomed: boolean;
  /** What the plot shows now, for the CSV: x (s), raw, delivered, gap flag. */
  shown: { xs: number[]; ys: (number | null | undefined)[]; zs: (number | null | undefined)[]; gaps: (0 | 1 | undefined)[] };
}

const panels: PlotPanel[] = (['a', 'b'] as const).map((key) => ({
  key,
  channelSel: $(`plot-${key}-channel`) as HTMLSelectElement,
  fieldSel: $(`plot-${key}-field`) as HTMLSelectElement,
  subscriberSel: $(`plot-${key}-subscriber`) as HTMLSelectElement,
  box: $(`plot-${key}`),
  foot: $(`plot-${key}-foot`),
  plot: null,
  points: 0,
  paused: false,
  zoomed: false,
  shown: { xs: [], ys: [], zs: [], gaps: [] },
}));

function plotWidth(box: HTMLElement): number {
  return Math.max(240, box.clientWidth - 4);
}

/**
 * The y range of a signal plot: a flat signal gets a small band around its value (5 % of it, at
 * least ±0.1 of its unit) instead of uPlot's default span; a varying one its extent plus 10 %.
 */
function yRange(_u: uPlot, min: number | null, max: number | null): uPlot.Range.MinMax {
  if (min === null || max === null || !Number.isFinite(min) || !Number.isFinite(max)) return [-1, 1];
  const span = max - min;
  if (span <= Math.max(Math.abs(min), Math.abs(max)) * 1e-9) {
    const pad = Math.max(Math.abs(min) * 0.05, 0.1);
    return [min - pad, max + pad];
  }
  return [min - span * 0.1, max + span * 0.1];
}

/** A hole between delivered samples longer than this breaks the line: ten granted periods, at least 1 s. */
function deliveredHoleMs(grantedHz: number): number {
  return Math.max(1000, grantedHz > 0 ? 10000 / grantedHz : 0);
}

function makePlot(p: PlotPanel): void {
  if (p.plot) p.plot.destroy();
  const ch = channelsById.get(Number(p.channelSel.value));
  const field = Number(p.fieldSel.value);
  const unit = ch ? (ch.units[field] ?? '') : '';
  const opts: uPlot.Options = {
    width: plotWidth(p.box),
    height: 200,
    legend: { show: false },
    // Drag across x to zoom (uPlot sets the x scale on release).
    cursor: { show: true, x: true, y: false, points: { show: false }, drag: { x: true, y: false, setScale: true } },
    hooks: {
      // A drag selected a range: uPlot zooms x to it; the plot holds still until Reset zoom.
      setSelect: [
        (u: uPlot) => {
          if (u.select.width <= 0) return;
          p.zoomed = true;
          showPlotState(p);
        },
      ],
    },
    scales: { x: { time: false }, y: { range: yRange } },
    axes: [
      { label: 'simulated time (s)', size: 36, labelSize: 16 },
      { label: unit, size: 52, labelSize: 16 },
    ],
    series: [
      {},
      { label: 'raw', stroke: '#bdc1c6', width: 2.5, points: { show: false } },
      { label: 'delivered', stroke: '#1a73e8', width: 1, spanGaps: false, points: { show: true, size: 3, fill: '#1a73e8' } },
    ],
  };
  p.plot = new uPlot(opts, [[], [], []], p.box);
  p.zoomed = false;
  showPlotState(p);
}

function showPlotState(p: PlotPanel): void {
  p.box.dataset['paused'] = String(p.paused);
  p.box.dataset['zoomed'] = String(p.zoomed);
  $(`plot-${p.key}-pause`).textContent = p.paused ? 'Resume' : 'Pause';
  $(`plot-${p.key}-reset`).hidden = !p.zoomed;
}

/** The plot's shown samples (within the zoomed range when zoomed) as CSV text. */
function plotCsv(p: PlotPanel): string {
  const ch = channelsById.get(Number(p.channelSel.value));
  const field = Number(p.fieldSel.value);
  const name = ch ? `${ch.fields[field] ?? field}${ch.units[field] ? ` (${ch.units[field]})` : ''}` : 'value';
  const q = (x: string): string => (/[",\n]/.test(x) ? `"${x.replace(/"/g, '""')}"` : x);
  const lines = [['t (s)', `raw ${name}`, `delivered to ${p.subscriberSel.value} ${name}`, 'gap'].map(q).join(',')];
  const sc = p.plot ? p.plot.scales['x'] : undefined;
  const lo = sc && sc.min !== undefined && sc.min !== null ? sc.min : -Infinity;
  const hi = sc && sc.max !== undefined && sc.max !== null ? sc.max : Infinity;
  const { xs, ys, zs, gaps } = p.shown;
  const cell = (v: number | null | undefined): string => (v === null || v === undefined ? '' : String(v));
  for (let i = 0; i < xs.length; i++) {
    const x = xs[i] as number;
    if (x < lo || x > hi) continue;
    const y = ys[i];
    const z = zs[i];
    if ((y === null || y === undefined) && (z === null || z === undefined)) continue;
    lines.push(`${x.toFixed(3)},${cell(y)},${cell(z)},${z === null || z === undefined ? '' : String(gaps[i] ?? 0)}`);
  }
  return lines.join('\n') + '\n';
}

function downloadCsv(p: PlotPanel): void {
  const ch = channelsById.get(Number(p.channelSel.value));
  const field = ch ? (ch.fields[Number(p.fieldSel.value)] ?? 'value') : 'value';
  const a = h('a', { href: URL.createObjectURL(new Blob([plotCsv(p)], { type: 'text/csv' })), download: `${ch ? ch.name : 'channel'}-${field}-${p.subscriberSel.value || 'none'}.csv` });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}

function fillFields(p: PlotPanel): void {
  const ch = channelsById.get(Number(p.channelSel.value));
  p.fieldSel.replaceChildren();
  if (!ch) return;
  ch.fields.forEach((f, i) => p.fieldSel.append(h('option', { value: String(i) }, `${f}${ch.units[i] ? ` (${ch.units[i]})` : ''}`)));
}

function watch(): void {
  const chans = new Set<number>();
  for (const p of panels) chans.add(Number(p.channelSel.value));
  send({ type: 'watch', channels: [...chans] });
}

function drawPlot(p: PlotPanel): void {
  if (!p.plot || !last) return;
  const ch = Number(p.channelSel.value);
  const field = Number(p.fieldSel.value);
  const r = raw.get(ch);
  const who = p.subscriberSel.value;
  const d = delivered.get(who)?.get(ch);
  const xs: number[] = [];
  // undefined: no sample at this x (the line joins over it); null: a break in the line.
  const ys: (number | null | undefined)[] = [];
  const zs: (number | null | undefined)[] = [];
  const gaps: (0 | 1 | undefined)[] = [];
  // Merge by sample time: the delivered samples are raw samples the hub let through.
  let i = 0;
  let j = 0;
  const rt = r ? r.t : [];
  const dt = d ? d.t : [];
  const dOff = 1; // delivered values follow the gap flag
  const sub = subscription(who, ch);
  const holeMs = deliveredHoleMs(sub ? sub.grantedHz : 0);
  let prevD = -Infinity;
  while (i < rt.length || j < dt.length) {
    const a = i < rt.length ? (rt[i] as number) : Infinity;
    const b = j < dt.length ? (dt[j] as number) : Infinity;
    const t = Math.min(a, b);
    if (b === t && d && prevD > -Infinity) {
      // The delivered line breaks before a sample that carries `gap` (what came before it is
      // missing) and across a hole in which nothing was delivered.
      const gap = ((d.v[j] as readonly number[])[0] ?? 0) !== 0;
      if (gap || t - prevD > holeMs) {
        const last = xs.length - 1;
        if (last >= 0 && (xs[last] as number) > prevD / 1000 && zs[last] === undefined) zs[last] = null;
        else {
          xs.push((prevD + t) / 2000);
          ys.push(undefined);
          zs.push(null);
          gaps.push(undefined);
        }
      }
    }
    xs.push(t / 1000);
    if (a === t && r) {
      ys.push((r.v[i] as readonly number[])[field] ?? null);
      i++;
    } else ys.push(undefined);
    if (b === t && d) {
      zs.push((d.v[j] as readonly number[])[field + dOff] ?? null);
      gaps.push(((d.v[j] as readonly number[])[0] ?? 0) !== 0 ? 1 : 0);
      prevD = t;
      j++;
    } else {
      zs.push(undefined);
      gaps.push(undefined);
    }
  }
  const nowS = last.simMs / 1000;
  const windowS = hello ? hello.windowS : 10;
  // The x window follows simulated time; setting it ranges y over what is in the window.
  if (!p.paused && !p.zoomed) {
    p.shown = { xs, ys, zs, gaps };
    p.plot.setData([xs, ys, zs] as uPlot.AlignedData, false);
    p.plot.setScale('x', { min: nowS - windowS, max: nowS });
    p.box.dataset['shownTo'] = String(nowS);
  }
  const n = d ? d.t.length : 0;
  const chMeta = channelsById.get(ch);
  p.foot.textContent =
    `${r ? r.t.length : 0} raw, ${n} delivered to ${who || '—'} in the last ${windowS} s` +
    (chMeta && !sub ? ` (${who} does not subscribe to ${chMeta.name})` : sub ? ` · granted ${hz(sub.grantedHz)} Hz of ${hz(sub.wishHz)} wished, ${PRIORITY_NAMES[sub.priority] ?? sub.priority}, link level ${sub.level}` : '');
  p.box.dataset['points'] = String(p.points);
  p.box.dataset['ymin'] = String(p.plot.scales['y']?.min ?? '');
  p.box.dataset['ymax'] = String(p.plot.scales['y']?.max ?? '');
  p.box.dataset['delivered'] = String(n);
  // The breaks as uPlot holds them: a null in the delivered series is where its line stops.
  const breakXs: string[] = [];
  const px = p.plot.data[0];
  const pz = p.plot.data[2] ?? [];
  for (let k = 0; k < pz.length; k++) if (pz[k] === null) breakXs.push((px[k] as number).toFixed(3));
  p.box.dataset['breaks'] = String(breakXs.length);
  p.box.dataset['breakXs'] = breakXs.join(' ');
}

function subscription(client: string, ch: number): (SubMsg & { level: number }) | null {
  if (!last) return null;
  for (const s of last.sessions) {
    if (s.client !== client || s.state !== 'ACTIVE') continue;
    const x = s.subs.find((y) => y.channel === ch);
    if (x) return { ...x, level: s.level };
  }
  return null;
}

// ---------------------------------------------------------------------------------------------
// Congestion levels over time.

let levelsPlot: uPlot | null = null;
let levelKeys: string[] = [];

function sessionLabel(s: SessionMsg): string {
  return `${s.client ?? 'external'} #${s.id} (${s.binding || '—'})`;
}

function recordLevels(m: StateMsg): void {
  const t = m.simMs / 1000;
  levelT.push(t);
  const seen = new Set<string>();
  for (const s of m.sessions) {
    const key = sessionLabel(s);
    seen.add(key);
    let ys = levelSeries.get(key);
    if (!ys) {
      ys = new Array<number | null>(levelT.length - 1).fill(null);
      levelSeries.set(key, ys);
    }
    ys.push(s.state === 'ACTIVE' ? s.level : null);
  }
  for (const [key, ys] of levelSeries) if (!seen.has(key)) ys.push(null);
  let cut = 0;
  while (cut < levelT.length && (levelT[cut] as number) < t - LEVEL_WINDOW_S) cut++;
  if (cut > 0) {
    levelT.splice(0, cut);
    for (const ys of levelSeries.values()) ys.splice(0, cut);
  }
  for (const [key, ys] of levelSeries) if (ys.every((y) => y === null)) levelSeries.delete(key);
}

function drawLevels(): void {
  const box = $('levels-plot');
  const keys = [...levelSeries.keys()].sort();
  if (!levelsPlot || keys.join('|') !== levelKeys.join('|')) {
    if (levelsPlot) levelsPlot.destroy();
    levelKeys = keys;
    const stepped = uPlot.paths.stepped ? uPlot.paths.stepped({ align: 1 }) : undefined;
    levelsPlot = new uPlot(
      {
        width: plotWidth(box),
        height: 220,
        cursor: { show: false },
        legend: { show: true, live: false },
        scales: { x: { time: false }, y: { range: [-0.2, 3.2] } },
        axes: [
          { label: 'simulated time (s)', size: 36, labelSize: 16 },
          { label: 'level', size: 40, labelSize: 16, splits: () => [0, 1, 2, 3] },
        ],
        series: [{}, ...keys.map((k, i) => ({ label: k, stroke: COLORS[i % COLORS.length] as string, width: 2, ...(stepped ? { paths: stepped } : {}), points: { show: false } }))],
      },
      [[]],
      box,
    );
  }
  const data: (number | null)[][] = [levelT.slice(), ...keys.map((k) => (levelSeries.get(k) ?? []).slice())];
  levelsPlot.setData(data as uPlot.AlignedData);
}

// ---------------------------------------------------------------------------------------------
// The §10.4 demo: the level control drives shedDecide over the live subscription mix.

/** Until someone picks a level, the control follows the level the hub reads now (the highest over active sessions, or the forced one). */
let levelPicked = false;

function liveLevel(m: StateMsg): number {
  if (m.forced !== null) return m.forced;
  let max = 0;
  for (const s of m.sessions) if (s.state === 'ACTIVE') max = Math.max(max, s.level);
  return Math.min(3, max);
}

function followLiveLevel(m: StateMsg): void {
  if (levelPicked) return;
  const el = document.getElementById(`level-${liveLevel(m)}`) as HTMLInputElement | null;
  if (el) el.checked = true;
  $('levels').dataset['source'] = 'live';
}

function chosenLevel(): number {
  const el = document.querySelector<HTMLInputElement>('input[name="level"]:checked');
  return el ? Number(el.value) : 0;
}

function decide(level: number, priority: number, ch: ChannelMeta, firstPush: boolean): { row: number; decision: string } {
  const packed = shedDecide(level, priority, ch.clsCode, ch.kindCode, firstPush);
  return { row: shedRow(packed), decision: SHED_DECISION_NAME[shedDecision(packed)] ?? '?' };
}

function decideRowForCritical(level: number, firstPush: boolean): number {
  return shedRow(shedDecide(level, Priority.critical, ChannelClass.STATE, NO_STREAM_KIND, firstPush));
}

function decisionCell(decision: string): HTMLTableCellElement {
  const td = h('td', { class: `decision d-${decision}` });
  td.append(h('span', { class: 'pill' }, decision));
  return td;
}

function renderDemo(): void {
  const level = chosenLevel();
  const firstPush = ($('first-push') as HTMLInputElement).checked;
  const body = $('demo-table').querySelector('tbody') as HTMLElement;
  const rows: HTMLTableRowElement[] = [];
  const showCritical = ($('show-critical') as HTMLInputElement).checked;
  let critical = 0;
  for (const s of last ? last.sessions : []) {
    if (s.state !== 'ACTIVE') continue;
    for (const sub of s.subs) {
      const ch = channelsById.get(sub.channel);
      if (!ch) continue;
      if (ch.critical && !showCritical) {
        critical++;
        continue;
      }
      const { row, decision } = decide(level, sub.priority, ch, firstPush);
      const text = SHED_ROW_TEXT[row - 1];
      const pr = PRIORITY_NAMES[sub.priority] ?? String(sub.priority);
      const effect = decisionEffect(decision, ch.cls, ch.kind);
      const tr = h('tr', { 'data-client': s.client ?? `#${s.id}`, 'data-channel': ch.name, 'data-priority': pr, 'data-row': String(row), 'data-decision': decision, 'data-effect': effect });
      if (ch.critical) tr.classList.add('critical');
      tr.append(
        h('td', {}, s.client ?? `external #${s.id}`),
        h('td', {}, s.binding),
        h('td', {}, ch.name),
        h('td', {}, ch.kind ? `${ch.cls} ${ch.kind}` : ch.cls),
        h('td', {}, pr),
        h('td', { class: 'num' }, String(row)),
        h('td', {}, text ? text.condition : ''),
        decisionCell(decision),
        h('td', { class: 'effect' }, effect),
      );
      rows.push(tr);
    }
  }
  body.replaceChildren(...rows);
  $('critical-note').textContent = critical > 0 ? `${critical} critical subscriptions (safety, control-owner) not shown: row ${decideRowForCritical(level, firstPush)} answers send for them at every level.` : '';

  const kinds = $('kind-table').querySelector('tbody') as HTMLElement;
  const imu = [...channelsById.values()].find((c) => c.name === 'imu');
  const path = [...channelsById.values()].find((c) => c.name === 'path');
  const krows: HTMLTableRowElement[] = [];
  if (imu && path) {
    for (const p of [Priority.background, Priority.normal, Priority.elevated]) {
      const a = decide(level, p, imu, firstPush);
      const b = decide(level, p, path, firstPush);
      const tr = h('tr', { 'data-priority': PRIORITY_NAMES[p] as string });
      const cell = (x: { row: number; decision: string }): HTMLTableCellElement => {
        const td = decisionCell(x.decision);
        td.textContent = `row ${x.row}: ${x.decision}`;
        td.title = SHED_ROW_TEXT[x.row - 1]?.condition ?? '';
        return td;
      };
      tr.append(h('td', {}, PRIORITY_NAMES[p] as string), cell(a), cell(b));
      krows.push(tr);
    }
  }
  kinds.replaceChildren(...krows);
  renderEffects();
  const severe = level >= 2 ? 'severe (≥ 2)' : level === 1 ? 'congested' : 'clear';
  const origin = levelPicked ? 'picked here' : last && last.forced !== null ? 'the level forced onto every link now' : "the highest level the hub reads from the links now; pick one to try it";
  $('demo-explain').textContent =
    `Level ${level} (${severe}; ${origin}). Each subscription is evaluated per push, rows in written order, first match wins` +
    (firstPush ? '; with "first push" ticked, row 3 answers for every non-critical subscription at levels ≥ 1 (§9.1).' : '.');
  $('why').textContent = SEGMENT_EXCEPTION;
}

/** The decision × class table: what hub/egress.ts does with each decision for each class. */
function renderEffects(): void {
  const table = $('effect-table');
  if (table.querySelector('tbody tr')) return;
  const head = table.querySelector('thead tr') as HTMLElement;
  head.append(...EFFECT_CLASSES.map((c) => h('th', {}, c)));
  const kinds: [string, string | null][] = [['STREAM', 'samples'], ['STREAM', 'segments'], ['STATE', null], ['EVENT', null]];
  (table.querySelector('tbody') as HTMLElement).replaceChildren(
    ...SHED_DECISION_NAME.map((d) => {
      const tr = h('tr', { 'data-decision': d });
      tr.append(decisionCell(d), ...kinds.map(([cls, kind]) => h('td', { 'data-class': kind ? `${cls} ${kind}` : cls }, decisionEffect(d, cls, kind))));
      return tr;
    }),
  );
}

function onLevelControl(): void {
  levelPicked = true;
  $('levels').dataset['source'] = 'picked';
  renderDemo();
  if (($('force') as HTMLInputElement).checked) send({ type: 'force', level: chosenLevel() });
}

// ---------------------------------------------------------------------------------------------
// Rows, grants, safety, log.

let lastRows: readonly number[] | null = null;
let lastRowsAt = 0;
const rowRate = new Array<number>(16).fill(0);

function renderRows(m: StateMsg): void {
  if (lastRows && m.simMs > lastRowsAt) {
    const dt = (m.simMs - lastRowsAt) / 1000;
    for (let r = 1; r <= 15; r++) rowRate[r] = 0.7 * (rowRate[r] as number) + (0.3 * ((m.rows[r] ?? 0) - (lastRows[r] ?? 0))) / dt;
  }
  lastRows = m.rows;
  lastRowsAt = m.simMs;
  const body = $('rows-table').querySelector('tbody') as HTMLElement;
  if (body.children.length !== 15) {
    body.replaceChildren(
      ...SHED_ROW_TEXT.map((r) => {
        const tr = h('tr', { 'data-row': String(r.row) });
        tr.append(h('td', { class: 'num' }, String(r.row)), h('td', { title: r.note }, r.condition), decisionCell(r.decision), h('td', { class: 'num count' }, '0'), h('td', { class: 'num rate' }, '0'));
        return tr;
      }),
    );
  }
  for (let r = 1; r <= 15; r++) {
    const tr = body.children[r - 1] as HTMLElement;
    const count = m.rows[r] ?? 0;
    (tr.querySelector('.count') as HTMLElement).textContent = String(count);
    const rate = rowRate[r] as number;
    (tr.querySelector('.rate') as HTMLElement).textContent = rate >= 0.5 ? rate.toFixed(0) : '';
    tr.classList.toggle('firing', rate >= 0.5);
  }
  const t = m.totals;
  $('totals').textContent =
    `delivered ${t['delivered'] ?? 0} · rate-gated ${t['rateGated'] ?? 0} · decimated ${t['decimated'] ?? 0} · conflated ${t['conflated'] ?? 0} · ` +
    `shed ${t['shedDrops'] ?? 0} · egress drops ${t['egressDrops'] ?? 0} · parks ${t['parks'] ?? 0} · resumes ${t['resumes'] ?? 0} · unsolicited GRANTs ${t['grantsAnnounced'] ?? 0}`;
  $('totals').title = "unsolicited GRANTs: GRANT frames the hub sent on its own to re-state a session's grants (§10.2). The grants a session is given in its WELCOME are not counted here; the Sessions table's last column counts those too.";
}

const grantSeen = new Map<string, number>();
const flashUntil = new Map<string, number>();

function ownerCell(s: SessionMsg, span: string): HTMLTableCellElement {
  const td = h('td', { rowspan: span }, s.client ?? 'external');
  if (s.owner) {
    td.append(' ', h('span', { class: 'owner-star', title: 'control owner: this session holds control (§11.2): it alone may drive, arm and clear an ESTOP' }, '★'));
  }
  return td;
}

function renderGrants(m: StateMsg): void {
  const body = $('grants-table').querySelector('tbody') as HTMLElement;
  const now = performance.now();
  const rows: HTMLTableRowElement[] = [];
  for (const s of m.sessions) {
    const subs = s.subs.filter((x) => !channelsById.get(x.channel)?.critical);
    const shown = subs.length > 0 ? subs : s.subs.slice(0, 1);
    shown.forEach((sub, i) => {
      const ch = channelsById.get(sub.channel);
      const key = `${s.id}/${sub.channel}`;
      const prev = grantSeen.get(key);
      if (prev !== undefined && prev !== sub.grantedHz) flashUntil.set(key, now + FLASH_MS);
      grantSeen.set(key, sub.grantedHz);
      const tr = h('tr', { 'data-session': String(s.id), 'data-channel': ch ? ch.name : String(sub.channel) });
      if (i === 0) {
        const span = String(shown.length);
        tr.append(
          h('td', { rowspan: span, class: 'num' }, String(s.id)),
          ownerCell(s, span),
          h('td', { rowspan: span }, s.binding || '—'),
          h('td', { rowspan: span }, `${s.state} · ${s.tier}`),
          h('td', { rowspan: span, class: `num level l${Math.min(3, s.level)}` }, String(s.level)),
        );
      }
      const granted = h('td', { class: 'num granted' }, hz(sub.grantedHz));
      if (sub.grantedHz < sub.wishHz) granted.classList.add('cut');
      if ((flashUntil.get(key) ?? 0) > now) granted.classList.add('changed');
      tr.append(h('td', {}, ch ? ch.name : `#${sub.channel}`), h('td', {}, PRIORITY_NAMES[sub.priority] ?? String(sub.priority)), h('td', { class: 'num' }, hz(sub.wishHz)), granted);
      if (i === 0) tr.append(h('td', { rowspan: String(shown.length), class: 'num' }, s.lastGrantMs === null ? String(s.grants) : `${s.grants} (last ${fmt(s.lastGrantMs / 1000, 1)} s)`));
      rows.push(tr);
    });
  }
  body.replaceChildren(...rows);
}

function renderFleet(m: StateMsg): void {
  const card = $('fleet-card');
  const fleet = m.fleet;
  card.hidden = !fleet;
  if (!fleet) return;
  const body = $('fleet-table').querySelector('tbody') as HTMLTableSectionElement;
  body.replaceChildren();
  for (const h of fleet) {
    const tr = document.createElement('tr');
    tr.dataset['hub'] = h.id;
    const cells = [
      h.id,
      h.status,
      h.latched === null ? '—' : h.latched ? `LATCHED (${h.source ?? '?'})` : 'clear',
      h.sessions === null ? '—' : String(h.sessions),
      h.estops === null ? '—' : String(h.estops),
      h.uplinkLevel === null ? '—' : String(h.uplinkLevel),
      `${(h.heardMsAgo / 1000).toFixed(1)} s ago`,
    ];
    cells.forEach((text, i) => {
      const td = document.createElement('td');
      td.textContent = text;
      if (i === 1) td.className = h.status === 'online' ? 'ok' : 'bad';
      if (i === 2 && h.latched) td.className = 'bad';
      tr.appendChild(td);
    });
    body.appendChild(tr);
  }
}

/** Who or what each ESTOP source is (§11), in words for the banner. */
const ESTOP_SOURCE_TEXT: Record<string, string> = {
  client: 'a client sent ESTOP',
  'hub-button': "the hub's own ESTOP button (on the board, or this page's ESTOP)",
  deadman: "the deadman: the control owner went silent past deadman_ms",
  watchdog: "the hub's watchdog: its loop stalled",
  robot: 'the robot reported a stop of its own',
  fleet: 'a fleet-wide stop from the site broker',
};

/** Why Clear is greyed out now, or '' when it is not. */
function clearWhy(m: StateMsg): string {
  if (!m.latch.latched) return 'Clear is disabled: nothing is latched.';
  if (m.latch.button) return "Clear is disabled: the hub's ESTOP button is still held; release it first.";
  if (m.latch.clearer === null) return 'Clear is disabled: only the control owner may clear (§11.2), and no simulated client owns control now.';
  return `${m.latch.clearer}, the control owner, may clear; clearing leaves the robot disarmed until it arms (§11.2).`;
}

function renderBanner(m: StateMsg): void {
  const banner = $('estop-banner');
  banner.hidden = !m.latch.latched;
  banner.dataset['source'] = m.latch.latched ? m.latch.source : '';
  if (!m.latch.latched) return;
  const what = ESTOP_SOURCE_TEXT[m.latch.source] ?? 'an unknown source';
  const who = m.latch.source === 'client' ? (m.latch.by ? `${m.latch.by} sent ESTOP` : 'a client sent ESTOP (an external one, or one the simulator cannot name)') : what;
  $('estop-banner-source').textContent = `— latched by ${m.latch.source}: ${who}${m.latch.button ? ' (button still held)' : ''}. The robot is ${m.robot.stopped ? 'stopped, drives off' : 'stopping'}.`;
  $('estop-banner-clear').textContent = clearWhy(m);
}

function renderSafety(m: StateMsg): void {
  renderBanner(m);
  const latch = $('latch');
  latch.dataset['latched'] = String(m.latch.latched);
  latch.textContent = m.latch.latched ? `LATCHED (source: ${m.latch.source}${m.latch.button ? ', button held' : ''})` : m.latch.armed ? 'clear · armed' : 'clear · disarmed (the owner must arm)';
  latch.className = m.latch.latched ? 'bad' : 'ok';
  const robot = $('robot-state');
  robot.dataset['stopped'] = String(m.robot.stopped);
  robot.textContent = m.robot.stopped ? 'STOPPED (drives off)' : 'running';
  robot.className = m.robot.stopped ? 'bad' : 'ok';
  $('pose').textContent = `x ${fmt(m.robot.x)} m, y ${fmt(m.robot.y)} m, θ ${fmt(m.robot.theta)} rad, v ${fmt(m.robot.v)} m/s, ω ${fmt(m.robot.w)} rad/s`;
  const owner = m.sessions.find((s) => s.owner);
  $('owner').textContent = owner ? `${owner.client ?? 'external'} (session ${owner.id})` : 'nobody';
  $('estops').textContent = `${m.totals['estops'] ?? 0} latched · robot stopped ${m.robot.stops}×`;
  $('health-rung').textContent = `rung ${m.health.rung} — ${LADDER_RUNGS[m.health.rung] ?? '?'}`;
  const why = $('health-rung-why');
  const linkLevel = liveLevel(m);
  const ownLoad = "The ladder reads the hub's own load (tick time against its budget, heap, total egress occupancy), not the links' congestion levels";
  why.textContent =
    linkLevel > 0 && m.health.rung === 0
      ? `${ownLoad}: links at level ${linkLevel}${m.forced !== null ? ' (forced)' : ''} are shed per subscription by the §10.4 table below, while the hub itself is not loaded, so the ladder stays calm.`
      : `${ownLoad}; the links' levels drive the §10.4 table per subscription.`;
  why.classList.toggle('notice', linkLevel > 0 && m.health.rung === 0);
  const admission = $('health-admission');
  admission.textContent = m.health.ready ? 'open' : 'paused: new sessions get HUB_PRESSURE (resumes still admitted)';
  admission.className = m.health.ready ? 'ok' : 'bad';
  const details = $('health-json').parentElement as HTMLDetailsElement | null;
  if (!details || details.open) $('health-json').textContent = JSON.stringify(m.health.report, null, 1);
  const clear = $('clear') as HTMLButtonElement;
  clear.disabled = !m.latch.latched || m.latch.clearer === null;
  const arm = $('arm') as HTMLButtonElement;
  arm.disabled = m.latch.latched || m.latch.armed || m.latch.clearer === null;
  arm.title = m.latch.clearer ? `${m.latch.clearer}, the control owner, sends the arm intent (§11.2)` : 'Only the control owner may arm, and no simulated client owns control';
  $('clear-why').textContent = clear.disabled ? clearWhy(m) : '';
  clear.title = m.latch.clearer ? `${m.latch.clearer}, the control owner, sends ESTOP_CLEAR (§11.2)` : 'Only the control owner may clear, and no simulated client owns control';
}

let logSeq = 0;

function renderLog(lines: readonly LogLine[]): void {
  const ol = $('log');
  for (const [seq, t, text] of lines) {
    if (seq <= logSeq) continue;
    logSeq = seq;
    ol.prepend(h('li', {}, `${fmt(t / 1000, 3)} s  ${text}`));
  }
  while (ol.children.length > 200) ol.lastElementChild?.remove();
}

// ---------------------------------------------------------------------------------------------

function onHello(m: HelloMsg): void {
  hello = m;
  last = null;
  lastRows = null;
  raw.clear();
  delivered.clear();
  levelT.length = 0;
  levelSeries.clear();
  grantSeen.clear();
  $('log').replaceChildren();
  logSeq = 0;
  renderLog(m.log);
  channelsById.clear();
  for (const c of m.channels) channelsById.set(c.id, c);
  const sc = $('scenario');
  sc.textContent = `scenario ${m.scenario.name} · seed ${m.scenario.seed} · ${m.scenario.durationMs / 1000} s scripted · run ${m.run}`;
  sc.title = m.scenario.description;
  $('external').textContent = m.external ? `external clients: tcp ${m.external.tcp} · ${m.external.ws}` : 'external clients: off';

  const plottable = m.channels.filter((c) => c.telemetry && (c.cls === 'STREAM' || c.cls === 'STATE') && !c.critical);
  // Defaults: the IMU as a background logger gets it (decimated first), odometry over ESP-NOW.
  const defaults: Record<string, [string, string, string[]]> = { a: ['imu', 'ax', ['logger', 'scope']], b: ['odom', 'v', ['pendant', 'phone', 'console']] };
  for (const p of panels) {
    const keepSub = p.subscriberSel.value;
    p.subscriberSel.replaceChildren(...m.clients.map((c) => h('option', { value: c.name }, `${c.name} (${c.role}, ${c.link})`)));
    const wanted = (defaults[p.key] as [string, string, string[]])[2];
    const who = m.clients.find((c) => c.name === keepSub) ?? wanted.map((n) => m.clients.find((c) => c.name === n)).find((c) => c !== undefined) ?? m.clients[0];
    if (who) p.subscriberSel.value = who.name;
    const keep = p.channelSel.value;
    p.channelSel.replaceChildren(...plottable.map((c) => h('option', { value: String(c.id) }, c.name)));
    const [name, field] = defaults[p.key] as [string, string, string[]];
    const pick = plottable.find((c) => String(c.id) === keep) ?? plottable.find((c) => c.name === name) ?? plottable[0];
    if (pick) p.channelSel.value = String(pick.id);
    fillFields(p);
    const fi = pick ? pick.fields.indexOf(field) : -1;
    if (fi >= 0 && !keep) p.fieldSel.value = String(fi);
    makePlot(p);
  }
  watch();
}

function onState(m: StateMsg): void {
  if (!hello || m.run !== hello.run) return;
  last = m;
  for (const [ch, list] of Object.entries(m.raw)) {
    const s = rawSeries(Number(ch));
    for (const x of list) s.push(x, 1);
  }
  for (const [client, byCh] of Object.entries(m.delivered)) {
    for (const [ch, list] of Object.entries(byCh)) {
      const s = deliveredSeries(client, Number(ch));
      for (const x of list) s.push(x, 1);
    }
  }
  const fromT = m.simMs - hello.windowS * 1000 - 500;
  for (const s of raw.values()) s.trim(fromT);
  for (const byCh of delivered.values()) for (const s of byCh.values()) s.trim(fromT);
  for (const p of panels) {
    const ch = Number(p.channelSel.value);
    p.points += (m.raw[ch]?.length ?? 0) + (m.delivered[p.subscriberSel.value]?.[ch]?.length ?? 0);
  }

  $('clock').textContent = `t = ${fmt(m.simMs / 1000, 1)} s`;
  setConn(m.scriptEnded ? 'script over: running on' : 'live', m.scriptEnded ? 'warn' : 'ok');
  renderSafety(m);
  renderFleet(m);
  for (const p of panels) drawPlot(p);
  recordLevels(m);
  drawLevels();
  renderRows(m);
  renderGrants(m);
  followLiveLevel(m);
  renderDemo();
  renderLog(m.log);
  const forced = $('force') as HTMLInputElement;
  if (document.activeElement !== forced) forced.checked = m.forced !== null;
}

function wire(): void {
  for (const p of panels) {
    p.channelSel.addEventListener('change', () => {
      fillFields(p);
      p.points = 0;
      makePlot(p);
      watch();
    });
    p.fieldSel.addEventListener('change', () => makePlot(p));
    p.subscriberSel.addEventListener('change', () => makePlot(p));
    $(`plot-${p.key}-pause`).addEventListener('click', () => {
      p.paused = !p.paused;
      showPlotState(p);
      drawPlot(p);
    });
    $(`plot-${p.key}-reset`).addEventListener('click', () => {
      p.zoomed = false;
      showPlotState(p);
      drawPlot(p);
    });
    $(`plot-${p.key}-csv`).addEventListener('click', () => downloadCsv(p));
  }
  $('estop').addEventListener('click', () => send({ type: 'estop' }));
  $('clear').addEventListener('click', () => send({ type: 'clear' }));
  $('arm').addEventListener('click', () => send({ type: 'arm' }));
  $('restart').addEventListener('click', () => send({ type: 'restart' }));
  for (const el of document.querySelectorAll<HTMLInputElement>('input[name="level"]')) el.addEventListener('change', onLevelControl);
  $('first-push').addEventListener('change', renderDemo);
  $('show-critical').addEventListener('change', renderDemo);
  $('force').addEventListener('change', () => {
    const on = ($('force') as HTMLInputElement).checked;
    send({ type: 'force', level: on ? chosenLevel() : null });
  });
  window.addEventListener('resize', () => {
    for (const p of panels) if (p.plot) p.plot.setSize({ width: plotWidth(p.box), height: 200 });
    if (levelsPlot) levelsPlot.setSize({ width: plotWidth($('levels-plot')), height: 220 });
  });
  renderDemo();
  connect();
}

wire();
