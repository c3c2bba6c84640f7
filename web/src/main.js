// trialform's dashboard: a small single-page app over the read-only JSON
// API of internal/ui. Every value from the state reaches the page through
// textContent or attribute setters (the h() helper), never innerHTML, and
// chart tooltips render as rich text on the canvas, so a param value like
// <img src=x onerror=alert(1)> shows as text.
import { echarts } from './charts.js';
import { frontPoints, scatter, parallel, axisName } from './front.js';

// ---------- small helpers ----------

function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'style') el.style.cssText = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of kids.flat(Infinity)) {
    if (c == null || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

// put replaces el's children, skipping null and false (as h does).
function put(el, ...kids) {
  el.replaceChildren(...kids.flat(Infinity).filter((c) => c != null && c !== false));
}

const enc = encodeURIComponent;

async function api(path) {
  const r = await fetch(path, { credentials: 'same-origin' });
  let body = null;
  try { body = await r.json(); } catch (e) { body = null; }
  if (!r.ok) {
    const err = new Error((body && body.error) || `${r.status} ${r.statusText}`);
    err.status = r.status;
    err.body = body;
    throw err;
  }
  return body;
}

function fmtNum(v) {
  if (v == null || Number.isNaN(v)) return '–';
  if (typeof v !== 'number') return String(v);
  if (Number.isInteger(v)) return String(v);
  const a = Math.abs(v);
  if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(3);
  return String(Number(v.toPrecision(5)));
}

function fmtVal(v) {
  if (v == null) return '–';
  if (typeof v === 'number') return fmtNum(v);
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

function fmtDur(s) {
  if (s == null || s < 0) return '–';
  s = Math.round(s);
  const d = Math.floor(s / 86400), hh = Math.floor(s % 86400 / 3600), m = Math.floor(s % 3600 / 60), ss = s % 60;
  if (d) return `${d}d${hh}h`;
  if (hh) return `${hh}h${String(m).padStart(2, '0')}m`;
  if (m) return `${m}m${String(ss).padStart(2, '0')}s`;
  return `${ss}s`;
}

function ago(t) {
  if (!t) return '–';
  const s = (Date.now() - new Date(t).getTime()) / 1000;
  return s < 1 ? 'just now' : `${fmtDur(s)} ago`;
}

function fmtTime(ms) {
  if (!ms) return '–';
  return new Date(ms).toISOString().replace('T', ' ').slice(0, 19);
}

// provenance shows what a trial was created from: the definitions' and
// code_dir's git commits (12 digits, "-dirty" with uncommitted changes)
// and the trialform version; a trial of an older state has none.
function provenance(p) {
  if (!p) return h('p', { class: 'muted small', id: 'provenance' }, 'not recorded (created before trialform recorded it, or imported)');
  const short = (c, dirty) => (c ? c.slice(0, 12) + (dirty ? '-dirty' : '') : 'not in a git repository');
  const rows = { definitions: short(p.commit, p.dirty), code_dir: short(p.code_commit, p.code_dirty), trialform: p.version || '–' };
  return h('table', { class: 'kv', id: 'provenance' }, h('tbody', {}, Object.keys(rows).map((k) => h('tr', {}, h('th', {}, k), h('td', {}, h('code', {}, rows[k]))))));
}

function link(href, ...kids) {
  return h('a', { href, 'data-nav': true }, ...kids);
}

function statusBadge(s) {
  return h('span', { class: `badge s-${String(s).toLowerCase()}` }, s);
}

const better = (goal, a, b) => (goal === 'minimize' ? a < b : a > b);

// ---------- charts ----------

// Every chart made is registered here so the browser tests can count its
// series (window.__trialform.charts[name].getOption().series.length).
const charts = {};
window.__trialform = { charts, ready: false, renders: 0, boot: Math.round(performance.now()) };

const palette = ['#5470c6', '#91cc75', '#fac858', '#ee6666', '#73c0de', '#3ba272', '#fc8452', '#9a60b4', '#ea7ccc'];

function chart(name, el, option) {
  let c = charts[name];
  if (c && c.getDom() !== el) { c.dispose(); c = null; }
  if (!c) {
    c = echarts.init(el, null, { renderer: 'canvas' });
    charts[name] = c;
    el.dataset.chart = name;
  }
  option = Object.assign({ animation: false, color: palette }, option);
  option.tooltip = Object.assign({ renderMode: 'richText', confine: true }, option.tooltip || {});
  c.setOption(option, { notMerge: true });
  el.dataset.series = String((option.series || []).length);
  return c;
}

function disposeCharts() {
  for (const k of Object.keys(charts)) { charts[k].dispose(); delete charts[k]; }
}

window.addEventListener('resize', () => { for (const c of Object.values(charts)) c.resize(); });

function panel(title, ...kids) {
  return h('section', { class: 'panel' }, h('h3', {}, title), ...kids);
}

function chartBox(name, extraClass) {
  return h('div', { class: `chart ${extraClass || ''}`, id: `chart-${name}` });
}

// ---------- live updates ----------

// A page's refresh function loads everything it shows again; its patch
// function (the experiment page's) applies one "state" event in place and
// returns false when it cannot (the event says "full", or the page missed
// a version), and the page is then loaded again once.
let refreshCurrent = null;
let patchCurrent = null;
let refreshing = false, pending = false;

async function refresh() {
  if (!refreshCurrent) return;
  if (refreshing) { pending = true; return; }
  refreshing = true;
  try { await refreshCurrent(); } catch (e) { console.warn('refresh', e); }
  refreshing = false;
  if (pending) { pending = false; refresh(); }
}

function connectEvents() {
  const live = document.getElementById('live');
  const es = new EventSource('/api/events');
  let opened = false;
  es.addEventListener('hello', (ev) => {
    const d = JSON.parse(ev.data);
    live.className = 'live on';
    live.textContent = `live · serial ${d.serial}`;
    // A reconnection: what changed meanwhile is unknown.
    if (opened) refresh();
    opened = true;
  });
  es.addEventListener('state', (ev) => {
    // (The browser tests make the page miss events: __trialform.drop.)
    if (window.__trialform.drop > 0) { window.__trialform.drop--; window.__trialform.dropped = (window.__trialform.dropped || 0) + 1; return; }
    window.__trialform.eventAt = Date.now(); // (the benchmark's breakdown)
    const d = JSON.parse(ev.data);
    live.className = 'live on';
    live.textContent = `live · serial ${d.serial} · ${new Date().toLocaleTimeString()}`;
    window.__trialform.serial = d.serial;
    window.__trialform.events = (window.__trialform.events || 0) + 1;
    let patched = false;
    if (patchCurrent && !refreshing) {
      try { patched = patchCurrent(d); } catch (e) { console.warn('patch', e); }
    }
    if (patched) {
      window.__trialform.patched = (window.__trialform.patched || 0) + 1;
      window.__trialform.patchedAt = Date.now();
    }
    else refresh();
  });
  es.onerror = () => { live.className = 'live off'; live.textContent = 'reconnecting…'; };
}

// ---------- router ----------

const app = document.getElementById('app');
let cleanup = [];

function navigate(path, push) {
  if (push) history.pushState(null, '', path);
  route();
}

document.addEventListener('click', (ev) => {
  const a = ev.target.closest && ev.target.closest('a[data-nav]');
  if (!a || ev.ctrlKey || ev.metaKey || ev.shiftKey || ev.button !== 0) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin) return;
  ev.preventDefault();
  navigate(url.pathname + url.search, true);
});
window.addEventListener('popstate', () => route());

async function route() {
  for (const f of cleanup) f();
  cleanup = [];
  disposeCharts();
  refreshCurrent = null;
  patchCurrent = null;
  window.__trialform.ready = false;
  put(app, h('p', { class: 'muted' }, 'loading…'));
  const p = location.pathname.split('/').filter(Boolean).map(decodeURIComponent);
  try {
    if (p.length === 0) await pageOverview();
    else if (p[0] === 'e' && p.length === 2) await pageExperiment(p[1]);
    else if (p[0] === 'e' && p.length === 4 && p[2] === 't') await pageTrial(p[1], p[3]);
    else if (p[0] === 'compare') await pageCompare();
    else if (p[0] === 'plan') await pagePlan();
    else if (p[0] === 'history') await pageHistory();
    else put(app, h('p', { class: 'error' }, 'No such page.'));
  } catch (e) {
    put(app, h('p', { class: 'error' }, e.status === 404 ? 'Not found.' : `Error: ${e.message}`));
  }
  window.__trialform.ready = true;
  window.__trialform.renders++;
}

// ---------- overview ----------

async function pageOverview() {
  const root = h('div', {});
  put(app, root);
  refreshCurrent = async () => {
    const d = await api('/api/overview');
    const rows = d.experiments.map((e) => {
      const used = e.max_trials ? Math.min(100, 100 * e.budget_used / e.max_trials) : 0;
      return h('tr', {},
        h('td', {}, link(`/e/${enc(e.name)}`, e.name), h('div', { class: 'muted small' }, e.id)),
        h('td', {}, Object.entries(e.counts).sort().map(([s, n]) => h('span', { class: 'count' }, statusBadge(s), ' ', n))),
        h('td', { class: 'num' }, e.front ? frontLinks(e) : e.best ? [fmtNum(e.best.value), ' ', link(`/e/${enc(e.name)}/t/${enc(e.best.id)}`, e.best.id)] : '–',
          h('div', { class: 'muted small' }, objectivesText(e))),
        h('td', {}, h('div', { class: 'bar' }, h('div', { style: `width:${used}%` })), h('div', { class: 'small' }, e.budget)),
        h('td', {}, fmtDur(e.elapsed_s), e.done_reason ? h('div', { class: 'muted small' }, `${e.failed ? 'failed' : 'done'}: ${e.done_reason}`) : null,
          e.paused && !e.done_reason ? h('div', { class: 'small paused' }, 'paused') : null),
        h('td', {}, e.platform), h('td', {}, e.tuner || '–'), h('td', { class: 'num' }, e.generation),
        h('td', { title: e.refreshed || 'never refreshed from the platform' }, e.refreshed ? ago(e.refreshed) : 'never',
          h('div', { class: 'muted small', title: e.written }, `state written ${ago(e.written)}`)));
    });
    put(root, 
      h('h2', {}, 'Experiments'),
      d.experiments.length === 0
        ? h('p', { class: 'muted' }, 'No experiment in the state yet: run ', h('code', {}, 'trialform apply'), '.')
        : h('table', { class: 'grid', id: 'overview' },
          h('thead', {}, h('tr', {}, ['experiment', 'status', 'best', 'budget used', 'elapsed', 'platform', 'tuner', 'gen', 'refreshed'].map((c) => h('th', {}, c)))),
          h('tbody', {}, rows)),
      h('p', { class: 'muted small', id: 'backend' }, `state: ${d.backend.kind} backend, ${d.backend.location} · serial ${d.serial}`),
      d.backend.locks.map((l) => h('p', { class: 'muted small lock' },
        `locked: ${l.experiments && l.experiments.length ? 'experiment ' + l.experiments.join(', ') : 'the whole state'} by ${l.operation || 'a command'} (${l.who}, pid ${l.pid}, since ${new Date(l.since).toLocaleString()})`)),
      d.backend.locks_error ? h('p', { class: 'muted small' }, `its locks cannot be read: ${d.backend.locks_error}`) : null);
    const extra = [];
    const ctl = d.controller;
    if (ctl && ctl.sync_error) {
      const se = ctl.sync_error;
      extra.push(h('div', { class: 'query-error', id: 'sync-error' },
        h('div', {}, `controller: the last ${se.stage} sync failed ${ago(se.at)}`, se.commit ? ` (commit ${se.commit.slice(0, 12)})` : '',
          ctl.commit ? `; the definitions of commit ${ctl.commit.slice(0, 12)} stay in force` : ''),
        h('pre', {}, se.message)));
    }
    if (d.held && d.held.length) {
      extra.push(h('h2', {}, 'Held until approved'),
        h('table', { class: 'grid', id: 'held' },
          h('thead', {}, h('tr', {}, ['experiment', 'change', 'tears down', 'why', 'held by', 'since', 'approval'].map((c) => h('th', {}, c)))),
          h('tbody', {}, d.held.map((x) => h('tr', {},
            h('td', {}, link(`/e/${enc(x.experiment)}`, x.experiment)),
            h('td', {}, x.hold.removed ? 'removal' : `generation ${x.hold.generation} (spec ${x.hold.spec_hash.slice(0, 12)})`),
            h('td', { class: 'num' }, `${x.hold.teardowns} trial(s)`),
            h('td', {}, (x.hold.reasons || []).join('; ')),
            h('td', {}, x.hold.by, x.hold.commit ? h('div', { class: 'muted small' }, `commit ${x.hold.commit.slice(0, 12)}`) : null),
            h('td', { title: x.hold.since }, ago(x.hold.since)),
            h('td', {}, x.approved
              ? `approved by ${x.approval.by} ${ago(x.approval.at)}: applied at the controller's next pass`
              : h('code', {}, `trialform approve ${x.experiment} ${x.hold.spec_hash.slice(0, 12)}`)))))));
    }
    if (extra.length) root.prepend(...extra);
  };
  await refreshCurrent();
}

// ---------- experiment ----------

const ROW_H = 26;

function caretBox(src, err) {
  const col = err.column >= 0 ? err.column : 0;
  return h('div', { class: 'query-error', id: 'query-error' },
    h('pre', {}, `${src}\n${' '.repeat(col)}^`), h('div', {}, `${err.param === 'sort' ? 'sort' : 'query'}: ${err.error}`));
}

async function pageExperiment(name) {
  const base = `/api/experiments/${enc(name)}`;
  const st = {
    q: new URLSearchParams(location.search).get('q') || '',
    sort: new URLSearchParams(location.search).get('sort') || '',
    rows: [], all: [], selected: new Set(), meta: null, imp: null,
    version: null, // the server's version of the state st.all shows
  };
  const header = h('div', {});
  const qInput = h('input', { id: 'q', type: 'search', placeholder: 'query, e.g. status:succeeded, params.lr:<0.01', value: st.q, spellcheck: 'false' });
  const sInput = h('input', { id: 'sort', type: 'search', placeholder: 'sort, e.g. -metric,params.lr', value: st.sort, spellcheck: 'false' });
  const errBox = h('div', {});
  const countBox = h('span', { class: 'muted', id: 'row-count' });
  const chooser = h('details', { class: 'chooser' }, h('summary', {}, 'Columns'));
  const chooserList = h('div', { class: 'chooser-list', id: 'column-chooser' });
  chooser.append(chooserList);
  const thead = h('div', { class: 'vt-head', id: 'trials-head' });
  const spacer = h('div', { class: 'vt-spacer' });
  const body = h('div', { class: 'vt-rows' });
  const viewport = h('div', { class: 'vt-viewport', id: 'trials' }, spacer, body);
  const selInfo = h('span', { class: 'muted small', id: 'selection' });

  const boxes = {
    seq: chartBox('history-seq'), time: chartBox('history-time'), curves: chartBox('curves'),
    parallel: chartBox('parallel', 'wide'), slice: chartBox('slice', 'wide'), importance: chartBox('importance'),
  };
  const impNote = h('p', { class: 'muted small', id: 'importance-method' });
  const curvesNote = h('p', { class: 'muted small' });
  const seqNote = h('p', { class: 'muted small', id: 'history-note' });
  const timeNote = h('p', { class: 'muted small' });
  const parallelNote = h('p', { class: 'muted small' });
  const sliceNote = h('p', { class: 'muted small' });
  // Several objectives: the front's scatter and parallel coordinates
  // (front.js), shown once the experiment is known to have them.
  const frontPanel = h('section', { class: 'panel wide-panel', id: 'front-panel', hidden: true });
  const frontPick = { x: 0, y: 1 };

  put(app, 
    header,
    h('section', { class: 'panel' },
      h('div', { class: 'toolbar' },
        h('label', {}, 'Query ', qInput), h('label', {}, 'Sort ', sInput), chooser, countBox),
      errBox, thead, viewport, selInfo),
    frontPanel,
    h('div', { class: 'charts' },
      panel('Objective by trial sequence', boxes.seq, seqNote),
      panel('Objective over time', boxes.time, timeNote),
      panel('Intermediate values', boxes.curves, curvesNote),
      panel('Parameter importance', boxes.importance, impNote),
      panel('Parallel coordinates', boxes.parallel, parallelNote),
      panel('Each parameter against the objective', boxes.slice, sliceNote)));

  // --- columns ---
  let columns = [];
  const storeKey = `trialform.columns.${name}`;
  function buildColumns() {
    const m = st.meta;
    const cols = [
      { key: 'sel', label: '', w: 28, fixed: true, cell: (r) => h('input', { type: 'checkbox', checked: st.selected.has(r.id), 'aria-label': `select ${r.id}`, onchange: (ev) => { if (ev.target.checked) st.selected.add(r.id); else st.selected.delete(r.id); drawCurves(); } }) },
      { key: 'id', label: 'id', sort: 'id', w: 120, cell: (r) => link(`/e/${enc(name)}/t/${enc(r.id)}`, r.id, r.best ? ' ★' : '') },
      { key: 'seq', label: 'seq', sort: 'seq', w: 60, num: true, cell: (r) => r.seq },
      { key: 'status', label: 'status', sort: 'status', w: 140, cell: (r) => statusBadge(r.status) },
      // The objective's column: each trial's value of the current objective
      // (an earlier generation's from its final result), as `trials` shows it.
      { key: 'metric', label: m.experiment.metric, sort: 'metric', w: 100, num: true, cell: (r) => fmtNum(r.objective_value) },
      { key: 'gen', label: 'gen', sort: 'generation', w: 50, num: true, cell: (r) => r.gen },
    ];
    for (const p of m.params) cols.push({ key: `p.${p.name}`, label: p.name, sort: `params.${p.name}`, w: 110, num: p.scale !== 'category', cell: (r) => fmtVal(r.params[p.name]) });
    for (const k of m.metrics) if (k !== m.experiment.metric) cols.push({ key: `m.${k}`, label: k, sort: `metrics.${k}`, w: 100, num: true, cell: (r) => fmtNum(r.metrics && r.metrics[k]) });
    cols.push(
      { key: 'intermediate', label: 'interm.', sort: 'intermediate', w: 70, num: true, cell: (r) => r.intermediate },
      { key: 'attempts', label: 'attempts', sort: 'attempts', w: 70, num: true, cell: (r) => r.attempts },
      { key: 'duration', label: 'duration', sort: 'duration', w: 80, num: true, cell: (r) => (r.start ? fmtDur(((r.end || Date.now()) - r.start) / 1000) : '–') },
      { key: 'started', label: 'started', sort: 'started_at', w: 160, cell: (r) => fmtTime(r.start) },
      { key: 'reason', label: 'reason', sort: 'reason', w: 220, cell: (r) => r.reason || '' });
    let hidden = new Set(['attempts', 'reason']);
    try { const s = JSON.parse(localStorage.getItem(storeKey)); if (Array.isArray(s)) hidden = new Set(s); } catch (e) { /* default */ }
    for (const c of cols) c.hidden = !c.fixed && hidden.has(c.key);
    columns = cols;
    put(chooserList, ...cols.filter((c) => !c.fixed).map((c) => h('label', {},
      h('input', { type: 'checkbox', checked: !c.hidden, 'data-column': c.key, onchange: (ev) => {
        c.hidden = !ev.target.checked;
        localStorage.setItem(storeKey, JSON.stringify(columns.filter((x) => x.hidden).map((x) => x.key)));
        drawHead(); drawRows(true);
      } }), ' ', c.label)));
  }
  const visible = () => columns.filter((c) => !c.hidden);
  const template = () => visible().map((c) => `${c.w}px`).join(' ');

  function sortState(c) {
    const fields = st.sort.split(',').map((s) => s.trim());
    if (fields[0] === c.sort) return ' ▲';
    if (fields[0] === `-${c.sort}`) return ' ▼';
    return '';
  }
  function drawHead() {
    thead.style.gridTemplateColumns = template();
    put(thead, ...visible().map((c) => h('div', {
      class: `vt-cell ${c.num ? 'num' : ''} ${c.sort ? 'sortable' : ''}`, title: c.sort ? `sort by ${c.sort} (click again to reverse)` : '',
      onclick: c.sort ? () => {
        const cur = st.sort.split(',')[0].trim();
        st.sort = cur === `-${c.sort}` ? c.sort : `-${c.sort}`;
        sInput.value = st.sort;
        loadRows();
      } : null,
    }, c.label, c.sort ? sortState(c) : '')));
    spacer.style.width = `${visible().reduce((a, c) => a + c.w, 0)}px`;
  }
  let drawn = { first: -1, last: -1 };
  function drawRows(force) {
    const n = st.rows.length;
    spacer.style.height = `${n * ROW_H}px`;
    const top = viewport.scrollTop, hgt = viewport.clientHeight || 400;
    const first = Math.max(0, Math.floor(top / ROW_H) - 10);
    const last = Math.min(n, Math.ceil((top + hgt) / ROW_H) + 10);
    if (!force && first === drawn.first && last === drawn.last) return;
    drawn = { first, last };
    const tpl = template();
    const out = [];
    for (let i = first; i < last; i++) {
      const r = st.rows[i];
      out.push(h('div', { class: `vt-row ${r.best ? 'best' : ''}`, style: `top:${i * ROW_H}px;grid-template-columns:${tpl}`, 'data-id': r.id },
        visible().map((c) => h('div', { class: `vt-cell ${c.num ? 'num' : ''}` }, c.cell(r)))));
    }
    put(body, ...out);
  }
  viewport.addEventListener('scroll', () => drawRows(false), { passive: true });

  let reqNo = 0;
  async function loadRows(pre) {
    const my = ++reqNo;
    const qs = new URLSearchParams();
    if (st.q) qs.set('q', st.q);
    if (st.sort) qs.set('sort', st.sort);
    const url = new URL(location.href);
    url.search = qs.toString();
    history.replaceState(null, '', url.pathname + url.search);
    try {
      const d = (pre && !st.q && !st.sort) ? pre : await api(`${base}/trials?${qs}`);
      if (my !== reqNo) return;
      st.rows = d.rows;
      put(errBox);
      countBox.textContent = `${d.rows.length} of ${d.total} trials`;
    } catch (e) {
      if (my !== reqNo) return;
      if (e.status === 400 && e.body) {
        put(errBox, caretBox(e.body.param === 'sort' ? st.sort : st.q, e.body));
        return;
      }
      throw e;
    }
    drawHead();
    drawRows(true);
  }
  let qTimer = null;
  const onQuery = () => {
    clearTimeout(qTimer);
    qTimer = setTimeout(() => { st.q = qInput.value; st.sort = sInput.value; loadRows(); }, 250);
  };
  qInput.addEventListener('input', onQuery);
  sInput.addEventListener('input', onQuery);
  cleanup.push(() => clearTimeout(qTimer));

  // --- charts ---
  // A result counts as the CLI counts it (and the importance chart): a
  // SUCCEEDED trial's. A trial that reported a value and then failed has
  // no result: it never makes the best so far. The charts plot a row's
  // objective (the server's value of the current first objective, as
  // /api/compare and the importance take it), not its value: an earlier
  // generation's value is its own first objective's, which may have been
  // another metric (objectives reordered or renamed).
  const hasResult = (r) => r.objective != null;
  // lacking is a note on the succeeded trials of earlier generations left
  // out because their final result has no value of the current objective.
  const lacking = () => {
    const n = st.all.filter((r) => r.status === 'SUCCEEDED' && r.value != null && r.objective == null).length;
    return n ? `${n} succeeded trial${n > 1 ? 's' : ''} of earlier generations ${n > 1 ? 'have' : 'has'} no ${st.meta.experiment.metric} in their final result: not plotted.` : '';
  };

  // The best so far is the current generation's, as the best trial is
  // (state.Experiment.BestOf): an earlier generation measured another
  // search space or objective, so its values do not compete.
  const inBestGen = (r) => r.gen == null || r.gen === st.meta.experiment.generation;

  function drawHistory() {
    const goal = st.meta.experiment.goal;
    const done = st.all.filter(hasResult).sort((a, b) => a.seq - b.seq);
    let best = null;
    const pts = [], bestLine = [];
    for (const r of done) {
      if (inBestGen(r) && (best == null || better(goal, r.objective, best))) { best = r.objective; bestLine.push([r.seq, best]); }
      pts.push([r.seq, r.objective]);
    }
    if (best != null) bestLine.push([done[done.length - 1].seq, best]);
    const metric = st.meta.experiment.metric;
    seqNote.textContent = timeNote.textContent = lacking();
    chart('history-seq', boxes.seq, {
      legend: { top: 0 }, grid: { left: 60, right: 20, top: 30, bottom: 40 },
      tooltip: { trigger: 'item' },
      xAxis: { type: 'value', name: 'trial sequence', nameLocation: 'middle', nameGap: 25, scale: true },
      yAxis: { type: 'value', name: metric, scale: true },
      series: [
        { name: metric, type: 'scatter', data: pts, symbolSize: 5, large: pts.length > 2000 },
        { name: 'best so far', type: 'line', step: 'end', data: bestLine, showSymbol: false, lineStyle: { width: 2 } },
      ],
    });
    const byTime = st.all.filter((r) => hasResult(r) && r.end).sort((a, b) => a.end - b.end);
    best = null;
    const tp = [], tb = [];
    for (const r of byTime) {
      if (inBestGen(r) && (best == null || better(goal, r.objective, best))) { best = r.objective; tb.push([r.end, best]); }
      tp.push([r.end, r.objective]);
    }
    if (best != null) tb.push([byTime[byTime.length - 1].end, best]);
    chart('history-time', boxes.time, {
      legend: { top: 0 }, grid: { left: 60, right: 20, top: 30, bottom: 40 },
      tooltip: { trigger: 'item' },
      xAxis: { type: 'time', name: 'ended at', nameLocation: 'middle', nameGap: 25 },
      yAxis: { type: 'value', name: metric, scale: true },
      series: [
        { name: metric, type: 'scatter', data: tp, symbolSize: 5, large: tp.length > 2000 },
        { name: 'best so far', type: 'line', step: 'end', data: tb, showSymbol: false, lineStyle: { width: 2 } },
      ],
    });
  }

  let curvesReq = 0;
  const curvesURL = () => `${base}/curves${st.selected.size ? `?trials=${[...st.selected].map(enc).join(',')}` : ''}`;
  async function drawCurves(prefetched) {
    const my = ++curvesReq;
    const ids = [...st.selected];
    selInfo.textContent = ids.length ? `${ids.length} selected: the intermediate chart shows them` : 'select trials (checkboxes) to compare their intermediate values; none selected: all trials, the best highlighted';
    const d = await (prefetched || api(curvesURL()));
    if (my !== curvesReq) return;
    const series = [];
    const early = (c) => c.status === 'EARLY_STOPPED';
    // A curve of several attempts ([step, value, attempt]) is broken where
    // the attempt changes: each attempt numbers its steps from 0 again.
    const byAttempt = (pts) => { const out = []; pts.forEach((p, i) => { if (i > 0 && p.length > 2 && p[2] !== pts[i - 1][2]) out.push(null); out.push(p); }); return out; };
    if (ids.length) {
      for (const c of d.curves) {
        series.push({
          name: `${c.id}${early(c) ? ' (early stopped)' : ''}`, type: 'line', data: byAttempt(c.points), showSymbol: false, connectNulls: false,
          lineStyle: { type: early(c) ? 'dashed' : 'solid', width: c.best ? 3 : 1.5 },
          markPoint: early(c) ? { symbol: 'pin', symbolSize: 30, data: [{ coord: c.points[c.points.length - 1], value: '✕' }] } : undefined,
        });
      }
    } else {
      // All curves in three series (others, early stopped, best), broken
      // by nulls, so thousands of trials stay one series each.
      const join = (cs) => { const out = []; for (const c of cs) { out.push(...byAttempt(c.points), null); } return out; };
      const others = d.curves.filter((c) => !c.best && !early(c));
      const stopped = d.curves.filter((c) => !c.best && early(c));
      const best = d.curves.filter((c) => c.best);
      if (others.length) series.push({ name: `trials (${others.length})`, type: 'line', data: join(others), showSymbol: false, connectNulls: false, lineStyle: { width: 1, opacity: 0.35 }, color: '#7a8aa6', silent: true });
      if (stopped.length) {
        series.push({ name: `early stopped (${stopped.length})`, type: 'line', data: join(stopped), showSymbol: false, connectNulls: false, lineStyle: { width: 1, type: 'dashed', opacity: 0.7 }, color: '#ee6666', silent: true,
          markPoint: { symbol: 'circle', symbolSize: 6, label: { show: false }, data: stopped.slice(0, 200).map((c) => ({ coord: c.points[c.points.length - 1] })) } });
      }
      if (best.length) series.push({ name: `best: ${best[0].id}`, type: 'line', data: byAttempt(best[0].points), showSymbol: false, connectNulls: false, lineStyle: { width: 3 }, color: '#3ba272' });
    }
    curvesNote.textContent = d.curves.length === 0 ? 'No trial has reported intermediate values.'
      : [d.sampled ? `Showing ${d.sampled[0]} of ${d.sampled[1]} curves: the best, the early-stopped and an even sample; select trials to see others.` : '',
        d.thinned ? 'Curves thinned evenly to keep the chart fast.' : ''].join(' ');
    chart('curves', boxes.curves, {
      legend: { top: 0, type: 'scroll' }, grid: { left: 60, right: 20, top: 30, bottom: 40 },
      tooltip: { trigger: 'item' },
      xAxis: { type: 'value', name: 'step', nameLocation: 'middle', nameGap: 25, scale: true },
      yAxis: { type: 'value', name: d.metric, scale: true },
      series,
    });
  }

  // sample keeps at most SAMPLE rows (evenly, the best always) for the
  // charts that draw one mark per trial per axis; the note says so.
  const SAMPLE = 4000;
  function sample(rows) {
    if (rows.length <= SAMPLE) return rows;
    const out = [], step = rows.length / SAMPLE;
    for (let k = 0; k < rows.length; k += step) out.push(rows[Math.floor(k)]);
    const b = rows.find((r) => r.best);
    if (b && !out.includes(b)) out.push(b);
    return out;
  }
  const sampleNote = (n) => (n > SAMPLE ? `An even sample of ${SAMPLE} of the ${n} trials with a value (the best always).` : '');

  function axisOf(p, i) {
    if (p.scale === 'category') return { dim: i, name: p.name, type: 'category', data: p.options };
    if (p.scale === 'log') return { dim: i, name: p.name, type: 'log' };
    return { dim: i, name: p.name, type: 'value', scale: true };
  }
  function paramValue(p, v) {
    if (v == null) return null;
    if (p.scale === 'category') return typeof v === 'object' ? (v._name || JSON.stringify(v)) : fmtVal(v);
    return typeof v === 'number' ? v : null;
  }

  function drawParallel() {
    const ps = st.meta.params;
    const metric = st.meta.experiment.metric;
    const axes = ps.map(axisOf);
    axes.push({ dim: ps.length, name: metric, type: 'value', scale: true, nameTextStyle: { fontWeight: 'bold' } });
    const line = (r) => [...ps.map((p) => paramValue(p, r.params[p.name])), r.objective];
    const all = st.all.filter(hasResult);
    const done = sample(all);
    parallelNote.textContent = [sampleNote(all.length), lacking()].filter(Boolean).join(' ');
    chart('parallel', boxes.parallel, {
      parallel: { left: 60, right: 80, top: 40, bottom: 30 },
      parallelAxis: axes,
      legend: { top: 0 },
      series: [
        { name: 'trials', type: 'parallel', data: done.filter((r) => !r.best).map(line), lineStyle: { width: 1, opacity: done.length > 2000 ? 0.1 : 0.4 } },
        { name: 'best', type: 'parallel', data: done.filter((r) => r.best).map(line), lineStyle: { width: 3, opacity: 1, color: '#3ba272' } },
      ],
    });
  }

  function drawSlice() {
    const ps = st.meta.params;
    const metric = st.meta.experiment.metric;
    const n = Math.max(1, ps.length);
    const cols = Math.min(n, 4);
    const rowsN = Math.ceil(n / cols);
    boxes.slice.style.height = `${Math.max(260, rowsN * 220)}px`;
    const grids = [], xs = [], ys = [], series = [];
    const all = st.all.filter(hasResult);
    const done = sample(all);
    sliceNote.textContent = [sampleNote(all.length), lacking()].filter(Boolean).join(' ');
    ps.forEach((p, i) => {
      const c = i % cols, r = Math.floor(i / cols);
      grids.push({ left: `${c * (100 / cols) + 5}%`, width: `${100 / cols - 8}%`, top: `${r * (100 / rowsN) + 6}%`, height: `${100 / rowsN - 16}%` });
      const ax = axisOf(p, i);
      xs.push(Object.assign({ gridIndex: i, name: p.name, nameLocation: 'middle', nameGap: 22 }, ax.type === 'category' ? { type: 'category', data: p.options } : { type: ax.type, scale: true, axisLine: { onZero: false } }));
      ys.push({ gridIndex: i, type: 'value', scale: true, axisLine: { onZero: false } });
      series.push({ name: p.name, type: 'scatter', xAxisIndex: i, yAxisIndex: i, symbolSize: 4, large: done.length > 2000,
        data: done.map((r) => [paramValue(p, r.params[p.name]), r.objective]).filter((d) => d[0] != null) });
    });
    chart('slice', boxes.slice, { grid: grids, xAxis: xs, yAxis: ys, series, tooltip: { trigger: 'item' } });
  }

  async function drawImportance(prefetched) {
    const d = await (prefetched || api(`${base}/importance`));
    st.imp = d;
    const ps = [...d.params].reverse();
    impNote.textContent = `Fitted on ${d.objective} (${d.goal}): ${d.method}; ${d.trials} succeeded trials.${d.skipped && d.skipped.length ? ` Not placed on an axis: ${d.skipped.join(', ')}.` : ''}`;
    chart('importance', boxes.importance, {
      grid: { left: 100, right: 30, top: 10, bottom: 30 },
      tooltip: { trigger: 'item' },
      xAxis: { type: 'value', max: 1 },
      yAxis: { type: 'category', data: ps.map((p) => p.name) },
      series: [{ name: 'importance', type: 'bar', data: ps.map((p) => Number(p.importance.toFixed(4))), label: { show: true, position: 'right', formatter: (x) => x.value.toFixed(2) } }],
    });
  }

  function drawFront() {
    const objs = st.meta.experiment.objectives || [];
    if (objs.length < 2) { frontPanel.hidden = true; return; }
    frontPanel.hidden = false;
    const pts = frontPoints(objs, st.all);
    const nFront = pts.filter((p) => p.front).length;
    const pick = (which) => h('label', {}, `${which} `, h('select', { id: `front-${which}`, onchange: (ev) => { frontPick[which] = Number(ev.target.value); drawFront(); } },
      objs.map((o, k) => h('option', { value: k, selected: frontPick[which] === k }, axisName(o)))));
    put(frontPanel,
      h('h3', {}, 'Pareto front'),
      h('p', { class: 'muted small', id: 'front-note' }, `${pts.length} trials with every objective, ${nFront} on the front (highlighted; \`trialform trials ${st.meta.experiment.name} -q pareto:1\` lists them).`,
        objs.length > 2 ? ' The scatter shows two objectives; the front is that of all of them.' : ''),
      objs.length > 2 ? h('div', { class: 'toolbar' }, pick('x'), pick('y')) : null,
      pts.length ? scatter(objs, pts, frontPick.x, frontPick.y) : h('p', { class: 'muted' }, 'No trial has a value of every objective yet.'),
      objs.length > 2 && pts.length ? parallel(objs, pts) : null);
  }

  function drawHeader() {
    const e = st.meta.experiment;
    const edit = e.edit ? `${e.edit.file}:${e.edit.line}` : 'its experiment block';
    put(header, 
      h('h2', {}, e.name, ' ', h('span', { class: 'muted small' }, `${e.id} · ${e.platform} · ${e.tuner || '?'} · generation ${e.generation}`)),
      h('div', { class: 'summary' },
        Object.entries(e.counts).sort().map(([s, n]) => h('span', { class: 'count' }, statusBadge(s), ' ', n)),
        e.front ? h('span', {}, `Pareto front (${objectivesText(e)}): `, frontLinks(e))
          : h('span', {}, `best ${e.goal === 'minimize' ? '↓' : '↑'} ${e.metric}: `, e.best ? [h('b', {}, fmtNum(e.best.value)), ' (', link(`/e/${enc(e.name)}/t/${enc(e.best.id)}`, e.best.id), ')'] : '–'),
        h('span', {}, `budget: ${e.budget} · concurrency ${e.concurrency} · elapsed ${fmtDur(e.elapsed_s)}`),
        e.done_reason ? h('span', { class: 'muted' }, `${e.failed ? 'failed' : 'done'}: ${e.done_reason}`) : null,
        e.paused && !e.done_reason ? h('span', { class: 'paused' }, `paused: no trial runs until ${edit} no longer sets paused = true and it is applied`) : null),
      e.hold ? h('div', { class: 'query-error', id: 'held-change' },
        `Held by ${e.hold.by} ${ago(e.hold.since)}${e.hold.commit ? ` (commit ${e.hold.commit.slice(0, 12)})` : ''}: `,
        e.hold.removed ? 'the removal of this experiment' : `generation ${e.hold.generation} (spec ${e.hold.spec_hash.slice(0, 12)})`,
        ` tears down ${e.hold.teardowns} trial(s)`, (e.hold.reasons || []).length ? ` (${e.hold.reasons.join('; ')})` : '', '. ',
        e.approved ? `Approved by ${e.approval.by} ${ago(e.approval.at)}: the controller applies it at its next pass.`
          : ['Approve it with ', h('code', {}, `trialform approve ${e.name} ${e.hold.spec_hash.slice(0, 12)}`), '.']) : null,
      h('details', { class: 'hint' }, h('summary', {}, 'Change this experiment'),
        h('p', {}, 'The dashboard is read-only: the HCL files are the source of truth. Edit ', h('code', {}, edit), ', then run ', h('code', {}, 'trialform plan'), ' and ', h('code', {}, 'trialform apply'), '.'),
        h('ul', {},
          h('li', {}, 'more or fewer trials at once: ', h('code', {}, `concurrency = ${e.concurrency}`)),
          h('li', {}, 'a larger or smaller budget: ', h('code', {}, `max_trials = ${e.max_trials}`)),
          h('li', {}, 'stop launching trials: ', h('code', {}, `max_trials = ${e.budget_used}`), ', or ', h('code', {}, 'trialform destroy'), ' to tear every trial down'))));
  }

  // Each step's milliseconds, for the benchmark (bench_test.go).
  const timings = window.__trialform.timings = {};
  const timed = async (name, f) => { const t0 = performance.now(); const v = await f(); timings[name] = Math.round(performance.now() - t0); return v; };
  // The charts are redrawn after the table is painted, a few at a time;
  // a live update that arrives while they draw marks them dirty instead
  // of waiting, so the table follows the state at once whatever the
  // charts cost.
  let chartsBusy = null, chartsDirty = false;
  // painted resolves once the current changes were painted: a task
  // queued from an animation frame callback runs after that frame's paint
  // (code run in the callback itself would delay the table's paint).
  // Between charts the page paints and handles what arrived (a live
  // update waits for one chart at most, not for all of them).
  const painted = () => new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)));
  async function drawCharts(curvesData, impData) {
    await painted();
    await timed('front', drawFront);
    await timed('history', drawHistory);
    await painted();
    await timed('curves', () => drawCurves(curvesData));
    await timed('importance', () => drawImportance(impData));
    await painted();
    await timed('parallel', drawParallel);
    await painted();
    await timed('slice', drawSlice);
  }
  function scheduleCharts(curvesData, impData) {
    if (chartsBusy) { chartsDirty = true; return chartsBusy; }
    chartsBusy = (async () => {
      try {
        await drawCharts(curvesData, impData);
        while (chartsDirty) {
          // Large experiments: charts at most every 3 s, so the main
          // thread stays free for the table.
          if (st.all.length > 2000) await new Promise((r) => setTimeout(r, 3000));
          chartsDirty = false;
          await drawCharts();
        }
      } finally { chartsBusy = null; }
    })();
    return chartsBusy;
  }
  async function load(first) {
    // The charts' data is fetched at the same time as the table's.
    const curvesData = first ? api(curvesURL()) : null;
    const impData = first ? api(`${base}/importance`) : null;
    if (first) { curvesData.catch(() => {}); impData.catch(() => {}); }
    const [meta, all] = await timed('fetch', () => Promise.all([api(base), api(`${base}/trials`)]));
    st.meta = meta;
    st.all = all.rows;
    st.version = all.version;
    if (first) buildColumns();
    drawHeader();
    await timed('table', () => loadRows(all));
    const charts = scheduleCharts(curvesData, impData);
    if (first) await charts; // a refresh returns once the table is current
    else charts.catch((e) => console.warn('charts', e));
  }
  // A live update patches the rows it carries into st.all (every trial,
  // in sequence order, as /trials answers), then the table and the
  // charts; only a filtered or sorted table asks the server for its rows
  // again (the query language is the server's). The header (counts, best,
  // budget) is fetched again: it is small.
  let headerReq = 0;
  async function refreshHeader() {
    const my = ++headerReq;
    const meta = await api(base);
    if (my !== headerReq || !st.meta) return;
    st.meta = meta;
    drawHeader();
  }
  function patch(ev) {
    if (st.version == null || ev.full || ev.from > st.version) return false;
    if (ev.version <= st.version) return true; // this page shows that version already
    const x = ev.experiments[name];
    if (x && (x.reload || x.gone)) return false;
    st.version = ev.version;
    refreshHeader().catch((e) => console.warn('header', e));
    if (!x) return true;
    let all = st.all;
    if (x.removed.length) {
      const gone = new Set(x.removed);
      all = all.filter((r) => !gone.has(r.id));
    }
    const at = new Map();
    all.forEach((r, i) => at.set(r.id, i));
    let added = false;
    for (const r of x.rows) {
      const i = at.get(r.id);
      if (i != null) all[i] = r;
      else { all.push(r); added = true; }
    }
    if (added) all.sort((a, b) => a.seq - b.seq || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    st.all = all;
    if (!st.q && !st.sort) {
      st.rows = all;
      countBox.textContent = `${all.length} of ${x.total} trials`;
      drawRows(true);
    } else {
      loadRows().catch((e) => console.warn('rows', e));
    }
    scheduleCharts().catch((e) => console.warn('charts', e));
    return true;
  }
  refreshCurrent = () => load(false);
  patchCurrent = patch;
  await load(true);
}

// ---------- trial ----------

async function pageTrial(exp, id) {
  const base = `/api/experiments/${enc(exp)}/trials/${enc(id)}`;
  const top = h('div', {});
  const curveBox = chartBox('trial-curve');
  const scalarBox = chartBox('scalars', 'wide');
  const scalarNote = h('p', { class: 'muted small', id: 'scalars-note' });
  const logPre = h('pre', { class: 'logs', id: 'logs' });
  const logState = h('span', { class: 'muted small', id: 'logs-state' }, 'connecting…');
  put(app, top,
    h('div', { class: 'charts' },
      panel('Intermediate values', curveBox),
      panel('TensorBoard scalars', scalarBox, scalarNote)),
    panel('Logs (stdout, then stderr; followed while the trial runs)', logState, logPre));

  // Logs: a stream that first carries the tail of what exists. A stream
  // that ended in an error (a trial not started yet) starts again when a
  // live update shows the trial running.
  const MAX_LOG = 1 << 20;
  let follow = true, es = null, logFailed = false;
  function startLogs() {
    if (es) es.close();
    put(logPre);
    logFailed = false;
    logState.textContent = 'connecting…';
    const src = new EventSource(`${base}/logs`);
    es = src;
    src.addEventListener('cut', () => { logPre.append(h('span', { class: 'muted' }, '[… earlier output not shown …]\n')); });
    src.addEventListener('log', (ev) => {
      const text = JSON.parse(ev.data);
      if (text) logPre.append(text);
      if (logPre.textContent.length > MAX_LOG) logPre.textContent = logPre.textContent.slice(-MAX_LOG / 2);
      logState.textContent = 'following';
      if (follow) logPre.scrollTop = logPre.scrollHeight;
    });
    src.addEventListener('end', (ev) => {
      const msg = JSON.parse(ev.data);
      logFailed = !!msg;
      logState.textContent = msg ? `ended: ${msg}` : 'end of output';
      src.close();
    });
    src.onopen = () => { if (!logFailed) logState.textContent = 'following'; };
    src.onerror = () => { if (src.readyState === EventSource.CLOSED) logState.textContent = 'disconnected'; };
  }
  cleanup.push(() => { if (es) es.close(); });
  startLogs();
  logPre.addEventListener('scroll', () => { follow = logPre.scrollTop + logPre.clientHeight >= logPre.scrollHeight - 4; });

  async function load() {
    const [t, sc] = await Promise.all([api(base), api(`${base}/scalars`)]);
    if (logFailed && t.status === 'RUNNING') startLogs();
    const kv = (obj) => h('table', { class: 'kv' }, h('tbody', {}, Object.keys(obj).sort().map((k) => h('tr', {}, h('th', {}, k), h('td', {}, fmtVal(obj[k]))))));
    put(top, 
      h('p', {}, link(`/e/${enc(exp)}`, `← ${exp}`)),
      h('h2', {}, `Trial ${t.id} `, statusBadge(t.status), t.best ? h('span', { class: 'badge best' }, 'best') : null),
      h('div', { class: 'cols' },
        h('section', { class: 'panel' }, h('h3', {}, 'Parameters'), h('div', { id: 'params' }, kv(t.params))),
        h('section', { class: 'panel' }, h('h3', {}, 'Result'),
          kv(Object.assign({ [`${t.metric} (objective)`]: t.objective_value, sequence: t.seq, generation: t.gen, attempts: t.attempts, 'exit code': t.exit_code, started: fmtTime(t.start), ended: fmtTime(t.end), duration: t.start ? fmtDur(((t.end || Date.now()) - t.start) / 1000) : null, 'intermediate values': t.intermediate, reason: t.reason || null },
            Object.fromEntries(Object.entries(t.metrics || {}).map(([k, v]) => [`final ${k}`, v]))))),
        h('section', { class: 'panel' }, h('h3', {}, 'Where it runs'),
          kv(Object.assign({ platform: t.platform }, Object.fromEntries(Object.entries(t.handle).map(([k, v]) => [`handle.${k}`, v])))),
          h('h3', {}, 'Created from'),
          provenance(t.provenance),
          h('h3', {}, 'Command line'),
          t.command ? h('pre', { class: 'cmd', id: 'command' }, t.command) : null,
          t.command_error ? h('p', { class: 'muted small' }, t.command_error) : null)));
    chart('trial-curve', curveBox, {
      grid: { left: 60, right: 20, top: 20, bottom: 40 }, tooltip: { trigger: 'axis' },
      xAxis: { type: 'value', name: 'step', nameLocation: 'middle', nameGap: 25, scale: true },
      yAxis: { type: 'value', name: t.metric, scale: true },
      // A resumed trial numbers its steps from 0 again: one line per attempt.
      series: [...new Set(t.points.map((p) => p.attempt || 0))].map((a, _, all) => ({
        name: all.length > 1 ? `${t.metric} (attempt ${a || '?'})` : t.metric, type: 'line',
        data: t.points.filter((p) => (p.attempt || 0) === a).map((p) => [p.seq, p.value]), showSymbol: t.points.length < 50 })),
    });
    const tags = Object.keys(sc.tags).sort();
    scalarNote.textContent = sc.files.length
      ? `${sc.files.length} event file(s): ${sc.files.join(', ')}${sc.errors ? `; problems: ${sc.errors.join('; ')}` : ''}`
      : `No TensorBoard event file in ${sc.dirs.length ? sc.dirs.join(', ') : 'this platform\'s trial directory (only local trials are read)'}.`;
    scalarBox.style.display = tags.length ? '' : 'none';
    if (!tags.length) {
      if (charts.scalars) { charts.scalars.dispose(); delete charts.scalars; }
      return;
    }
    chart('scalars', scalarBox, {
      legend: { top: 0, type: 'scroll' }, grid: { left: 60, right: 20, top: 30, bottom: 40 }, tooltip: { trigger: 'axis' },
      xAxis: { type: 'value', name: 'step', nameLocation: 'middle', nameGap: 25, scale: true },
      yAxis: { type: 'value', scale: true },
      series: tags.map((tag) => ({ name: tag, type: 'line', showSymbol: false, data: sc.tags[tag].map((p) => [p.step, p.value]) })),
    });
  }
  refreshCurrent = load;
  await load();
}

// ---------- compare ----------

async function pageCompare() {
  const ov = await api('/api/overview');
  const chosen = new Set(new URLSearchParams(location.search).getAll('exp'));
  if (chosen.size === 0) ov.experiments.forEach((e) => chosen.add(e.name));
  const box = chartBox('compare', 'wide');
  const note = h('p', { class: 'muted small' });
  const picks = h('div', { class: 'toolbar', id: 'compare-picks' }, ov.experiments.map((e) => h('label', {},
    h('input', { type: 'checkbox', checked: chosen.has(e.name), onchange: (ev) => { if (ev.target.checked) chosen.add(e.name); else chosen.delete(e.name); load(); } }), ' ', e.name)));
  put(app, h('h2', {}, 'Compare experiments'), picks, panel('Best so far against trials finished', box, note));
  async function load() {
    const qs = [...chosen].map((n) => `exp=${enc(n)}`).join('&');
    const d = chosen.size ? await api(`/api/compare?${qs}`) : { experiments: [] };
    const goals = new Set(d.experiments.map((e) => `${e.goal} ${e.metric}`));
    note.textContent = goals.size > 1 ? `Careful: the experiments optimise different objectives (${[...goals].join('; ')}).` : '';
    chart('compare', box, {
      legend: { top: 0, type: 'scroll' }, grid: { left: 60, right: 20, top: 30, bottom: 40 }, tooltip: { trigger: 'axis' },
      xAxis: { type: 'value', name: 'trials finished', nameLocation: 'middle', nameGap: 25 },
      yAxis: { type: 'value', scale: true, name: [...goals].join(', ') },
      series: d.experiments.map((e) => ({ name: e.name, type: 'line', step: 'end', showSymbol: false, data: e.points })),
    });
  }
  refreshCurrent = load;
  await load();
}

// ---------- plan ----------

async function pagePlan() {
  const pre = h('pre', { class: 'plan', id: 'plan' }, 'computing the plan…');
  const err = h('div', {});
  put(app, h('h2', {}, 'What apply would do next'),
    h('p', { class: 'muted' }, 'The same plan as ', h('code', {}, 'trialform plan'), ' (refreshed from the platforms, including drift notes). The dashboard never applies it: run ', h('code', {}, 'trialform apply'), '.'),
    err, pre);
  async function load() {
    const d = await api('/api/plan');
    pre.textContent = d.text || '';
    put(err, d.error ? h('p', { class: 'error' }, d.error) : '');
  }
  refreshCurrent = load;
  await load();
}

// ---------- history ----------

async function pageHistory() {
  const root = h('div', {});
  put(app, h('h2', {}, 'History of the definitions'),
    h('p', { class: 'muted' }, h('code', {}, 'git log'), ' of the HCL files, with the generations each change started (a generation starts when the search space, tuner, objective or trial changes).'), root);
  async function load() {
    const d = await api('/api/history');
    put(root, 
      d.error ? h('p', { class: 'muted', id: 'history-error' }, d.error) : null,
      d.error && d.commits.length === 0 ? null : h('table', { class: 'grid', id: 'history' },
        h('thead', {}, h('tr', {}, ['date', 'commit', 'author', 'subject', 'files', 'started'].map((c) => h('th', {}, c)))),
        h('tbody', {}, d.commits.map((c) => h('tr', {},
          h('td', {}, new Date(c.date).toLocaleString()), h('td', {}, h('code', {}, c.hash.slice(0, 10))), h('td', {}, c.author), h('td', {}, c.subject),
          h('td', {}, c.files.join(', ')),
          h('td', {}, c.generations.map((g) => h('div', {}, link(`/e/${enc(g.experiment)}`, g.experiment), ` generation ${g.generation}`))))))),
      d.commits.length === 0 && d.generations.length
        ? h('ul', {}, d.generations.map((g) => h('li', {}, `${g.experiment} generation ${g.generation} started ${new Date(g.started).toLocaleString()}`)))
        : null);
  }
  refreshCurrent = load;
  await load();
}

connectEvents();
route();

// Several objectives: the objectives as written, and links to the trials
// of the Pareto front with their values (what the best-trial card shows
// for one objective).
function objectivesText(e) {
  return e.objectives ? e.objectives.map((o) => `${o.goal} ${o.metric}`).join(', ') : `${e.goal} ${e.metric}`;
}
function frontLinks(e) {
  return [`${e.front.length} trial${e.front.length === 1 ? '' : 's'}: `,
    ...e.front.slice(0, 5).flatMap((f, k) => [k ? ', ' : '', link(`/e/${enc(e.name)}/t/${enc(f.id)}`, f.id, ` (${f.values.map(fmtNum).join(', ')})`)]),
    e.front.length > 5 ? ` +${e.front.length - 5}` : ''];
}
