// The Pareto front of an experiment with several objectives, drawn as
// plain SVG (no chart library: every point is an element a test or a
// screen reader can find): a scatter of two objectives with the front's
// members highlighted and, with two objectives, joined by the front line;
// with three or more, parallel coordinates (an axis per objective) and a
// choice of the two objectives the scatter shows. Values reach the page
// through textContent and attribute setters only.

const NS = 'http://www.w3.org/2000/svg';

function s(tag, attrs, ...kids) {
  const el = document.createElementNS(NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) if (v != null) el.setAttribute(k, String(v));
  for (const c of kids.flat(Infinity)) if (c != null) el.append(c instanceof Node ? c : String(c));
  return el;
}

const fmt = (v) => (v == null ? '–' : Math.abs(v) >= 1e5 || (v !== 0 && Math.abs(v) < 1e-3) ? v.toExponential(3) : String(Number(v.toPrecision(6))));

// axisName is an objective's name with its direction: "latency (minimize ↓)".
export const axisName = (o) => `${o.metric} (${o.goal} ${o.goal === 'minimize' ? '↓' : '↑'})`;

// valueOf is the trial's value of objective metric m: the first
// objective's is the row's objective (the server's value of it, as
// /api/compare takes it: not the row's value, which an earlier generation
// took of its own first objective), another's its final result's.
function valueOf(r, m, first) {
  if (m === first) return r.objective;
  return r.metrics ? r.metrics[m] : null;
}

// frontPoints is the rows with a finite value of every objective: their
// values in objective order and whether they are on the front (rank 1).
export function frontPoints(objectives, rows) {
  const first = objectives[0].metric;
  const out = [];
  for (const r of rows) {
    const vs = objectives.map((o) => valueOf(r, o.metric, first));
    if (vs.every((v) => typeof v === 'number' && Number.isFinite(v))) out.push({ id: r.id, vs, front: r.pareto_rank === 1 });
  }
  return out;
}

function scale(vals, lo, hi) {
  let a = Math.min(...vals), b = Math.max(...vals);
  if (!(b > a)) { a -= 1; b += 1; }
  const pad = (b - a) * 0.05;
  a -= pad; b += pad;
  const f = (v) => lo + ((v - a) / (b - a)) * (hi - lo);
  f.ticks = [0, 1, 2, 3, 4].map((k) => a + pad + ((b - a - 2 * pad) * k) / 4);
  return f;
}

const title = (p, objectives) => `${p.id}${p.front ? ' (Pareto front)' : ''}: ${objectives.map((o, k) => `${o.metric}=${fmt(p.vs[k])}`).join(', ')}`;

// scatter draws objectives i (x) and j (y) of the points.
export function scatter(objectives, pts, i, j) {
  const W = 640, H = 360, L = 70, R = 20, T = 16, B = 50;
  const x = scale(pts.map((p) => p.vs[i]), L, W - R);
  const y = scale(pts.map((p) => p.vs[j]), H - B, T);
  const svg = s('svg', { id: 'front-scatter', viewBox: `0 0 ${W} ${H}`, class: 'svgchart', role: 'img', 'aria-label': `Pareto front: ${objectives[j].metric} against ${objectives[i].metric}` });
  const g = s('g', { class: 'axes' });
  g.append(s('line', { x1: L, y1: H - B, x2: W - R, y2: H - B }), s('line', { x1: L, y1: T, x2: L, y2: H - B }));
  for (const t of x.ticks) g.append(s('text', { x: x(t), y: H - B + 16, 'text-anchor': 'middle', class: 'tick' }, fmt(t)));
  for (const t of y.ticks) g.append(s('text', { x: L - 6, y: y(t) + 4, 'text-anchor': 'end', class: 'tick' }, fmt(t)));
  g.append(s('text', { x: (L + W - R) / 2, y: H - 8, 'text-anchor': 'middle', class: 'axis-name axis-x', 'data-metric': objectives[i].metric }, axisName(objectives[i])),
    s('text', { x: 14, y: (T + H - B) / 2, 'text-anchor': 'middle', transform: `rotate(-90 14 ${(T + H - B) / 2})`, class: 'axis-name axis-y', 'data-metric': objectives[j].metric }, axisName(objectives[j])));
  svg.append(g);
  const front = pts.filter((p) => p.front);
  if (objectives.length === 2 && front.length > 1) {
    const line = [...front].sort((a, b) => a.vs[i] - b.vs[i] || a.vs[j] - b.vs[j]);
    svg.append(s('polyline', { class: 'front-line', points: line.map((p) => `${x(p.vs[i])},${y(p.vs[j])}`).join(' ') }));
  }
  // The front is drawn last so that it is on top.
  for (const p of [...pts.filter((q) => !q.front), ...front]) {
    svg.append(s('circle', { class: p.front ? 'pt front' : 'pt', cx: x(p.vs[i]), cy: y(p.vs[j]), r: p.front ? 5 : 3.5, 'data-id': p.id }, s('title', {}, title(p, objectives))));
  }
  return svg;
}

// parallel draws an axis per objective and a line per point.
export function parallel(objectives, pts) {
  const W = 640, H = 320, L = 90, R = 90, T = 36, B = 24;
  const n = objectives.length;
  const ax = (k) => L + ((W - L - R) * k) / (n - 1);
  const ys = objectives.map((_, k) => scale(pts.map((p) => p.vs[k]), H - B, T));
  const svg = s('svg', { id: 'front-parallel', viewBox: `0 0 ${W} ${H}`, class: 'svgchart', role: 'img', 'aria-label': `Parallel coordinates of ${n} objectives` });
  const g = s('g', { class: 'axes' });
  objectives.forEach((o, k) => {
    g.append(s('line', { x1: ax(k), y1: T, x2: ax(k), y2: H - B }),
      s('text', { x: ax(k), y: T - 14, 'text-anchor': 'middle', class: 'axis-name', 'data-metric': o.metric }, axisName(o)));
    for (const t of [ys[k].ticks[0], ys[k].ticks[4]]) g.append(s('text', { x: ax(k) + 4, y: ys[k](t) + 4, class: 'tick' }, fmt(t)));
  });
  svg.append(g);
  for (const p of [...pts.filter((q) => !q.front), ...pts.filter((q) => q.front)]) {
    svg.append(s('polyline', { class: p.front ? 'pc-line front' : 'pc-line', points: p.vs.map((v, k) => `${ax(k)},${ys[k](v)}`).join(' '), 'data-id': p.id }, s('title', {}, title(p, objectives))));
  }
  return svg;
}
