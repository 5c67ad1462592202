// Canvas drawing of pod cells: one canvas per building, one cell per pod. Each state has its
// colour AND a pattern (and, on large cells, a two-letter label), so colour is never the only
// cue. Plain functions on a 2D context: no framework here.

import { podState } from './model.js';

// Large cells (with labels) for small fleets; small ones past this many pods.
export const LARGE_FLEET = 400;

export function cellMetrics(totalPods) {
  return totalPods > LARGE_FLEET ? { size: 10, gap: 2, labels: false } : { size: 24, gap: 3, labels: true };
}

// Columns for a building of n pods: 24 per row (a 288-pod building is 24 x 12) or fewer.
export function columnsFor(n, m) {
  const max = m.labels ? 16 : 24;
  return Math.max(1, Math.min(n, max));
}

export function canvasSize(n, cols, m) {
  const rows = Math.max(1, Math.ceil(n / cols));
  return { width: cols * (m.size + m.gap) + m.gap, height: rows * (m.size + m.gap) + m.gap, rows };
}

export function cellOrigin(i, cols, m) {
  return { x: m.gap + (i % cols) * (m.size + m.gap), y: m.gap + Math.floor(i / cols) * (m.size + m.gap) };
}

// Index of the cell under (x, y) in CSS pixels, or -1.
export function cellAt(x, y, n, cols, m) {
  const step = m.size + m.gap;
  const c = Math.floor((x - m.gap) / step);
  const r = Math.floor((y - m.gap) / step);
  if (c < 0 || c >= cols || r < 0) return -1;
  if (x - m.gap - c * step > m.size || y - m.gap - r * step > m.size) return -1;
  const i = r * cols + c;
  return i < n ? i : -1;
}

// One cell at (x, y) of size s in the given state.
export function drawCell(ctx, x, y, s, st, withLabel) {
  if (st.pattern === 'hollow') {
    ctx.fillStyle = '#ffffff';
    ctx.fillRect(x, y, s, s);
    ctx.strokeStyle = st.color;
    ctx.lineWidth = Math.max(1.5, s / 6);
    const w = ctx.lineWidth;
    ctx.strokeRect(x + w / 2, y + w / 2, s - w, s - w);
  } else {
    ctx.fillStyle = st.color;
    ctx.fillRect(x, y, s, s);
  }
  if (withLabel) {
    ctx.fillStyle = st.ink;
    ctx.font = `600 ${Math.round(s * 0.42)}px system-ui, sans-serif`;
    ctx.textAlign = 'center';
    ctx.textBaseline = 'middle';
    ctx.fillText(st.short, x + s / 2, y + s / 2 + 0.5);
    // Large cells keep a pattern mark in a corner too, so the legend matches.
    drawPattern(ctx, x, y, s, st, true);
    return;
  }
  drawPattern(ctx, x, y, s, st, false);
}

function drawPattern(ctx, x, y, s, st, corner) {
  ctx.strokeStyle = st.pattern === 'stripes' ? 'rgba(0,0,0,0.55)' : 'rgba(255,255,255,0.9)';
  ctx.lineWidth = Math.max(1, s / 10);
  ctx.beginPath();
  if (!corner || st.pattern === 'notch') patternPath(ctx, x, y, s, st.pattern);
  else if (st.pattern === 'stripes') {
    ctx.moveTo(x, y + s * 0.3);
    ctx.lineTo(x + s * 0.3, y);
  } else if (st.pattern === 'bars') {
    ctx.moveTo(x + 2, y + 2.5);
    ctx.lineTo(x + s - 2, y + 2.5);
  } else if (st.pattern === 'cross') {
    ctx.moveTo(x + 2, y + 2);
    ctx.lineTo(x + 6, y + 6);
    ctx.moveTo(x + 6, y + 2);
    ctx.lineTo(x + 2, y + 6);
  }
  if (st.pattern === 'dots') {
    ctx.fillStyle = 'rgba(0,0,0,0.6)';
    ctx.fill();
  } else if (st.pattern === 'notch') {
    ctx.fillStyle = NOTCH_FILL;
    ctx.fill();
  } else ctx.stroke();
}

// The notch (a pod in service with hosts out, colour-model.js): a filled white corner.
const NOTCH_FILL = 'rgba(255,255,255,0.95)';

// Draws every pod of a building; highlights `selected` (index) and `focused` (index).
// styleOf(pod) gives a cell's style (colour-model.js; by default the pod's state).
// Cells are batched by style (one fill and one stroke per style, not per cell): 13,900 cells
// in ~50 canvases stay within a frame or two even on software rendering.
// Returns the number of cells drawn.
const byPodState = (p) => podState(p.state);
export function drawBuilding(canvas, pods, cols, m, selected, focused, styleOf = byPodState) {
  const { width, height } = canvasSize(pods.length, cols, m);
  const dpr = window.devicePixelRatio || 1;
  if (canvas.width !== Math.round(width * dpr) || canvas.height !== Math.round(height * dpr)) {
    canvas.width = Math.round(width * dpr);
    canvas.height = Math.round(height * dpr);
    canvas.style.width = `${width}px`;
    canvas.style.height = `${height}px`;
  }
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  ctx.clearRect(0, 0, width, height);
  if (m.labels) {
    for (let i = 0; i < pods.length; i++) {
      const { x, y } = cellOrigin(i, cols, m);
      drawCell(ctx, x, y, m.size, styleOf(pods[i]), true);
    }
  } else {
    const byStyle = new Map();
    for (let i = 0; i < pods.length; i++) {
      const st = styleOf(pods[i]);
      let entry = byStyle.get(st.id);
      if (!entry) byStyle.set(st.id, (entry = { st, list: [] }));
      entry.list.push(i);
    }
    for (const { st, list } of byStyle.values()) drawBatch(ctx, list, cols, m, st);
  }
  for (const [i, color] of [
    [selected, '#111111'],
    [focused, '#0b57d0'],
  ]) {
    if (i < 0 || i >= pods.length) continue;
    const { x, y } = cellOrigin(i, cols, m);
    ctx.strokeStyle = color;
    ctx.lineWidth = 2;
    ctx.strokeRect(x - 1.5, y - 1.5, m.size + 3, m.size + 3);
  }
  return pods.length;
}

// Small cells of one state: fills in one path, pattern marks in one path.
function drawBatch(ctx, list, cols, m, st) {
  const s = m.size;
  ctx.beginPath();
  for (const i of list) {
    const { x, y } = cellOrigin(i, cols, m);
    ctx.rect(x, y, s, s);
  }
  ctx.fillStyle = st.pattern === 'hollow' ? '#ffffff' : st.color;
  ctx.fill();
  ctx.beginPath();
  if (st.pattern === 'hollow') {
    for (const i of list) {
      const { x, y } = cellOrigin(i, cols, m);
      ctx.rect(x + 1, y + 1, s - 2, s - 2);
    }
    ctx.strokeStyle = st.color;
    ctx.lineWidth = 2;
    ctx.stroke();
    return;
  }
  for (const i of list) {
    const { x, y } = cellOrigin(i, cols, m);
    patternPath(ctx, x, y, s, st.pattern);
  }
  if (st.pattern === 'notch') {
    ctx.fillStyle = NOTCH_FILL;
    ctx.fill();
    return;
  }
  ctx.strokeStyle = st.pattern === 'stripes' ? 'rgba(0,0,0,0.55)' : 'rgba(255,255,255,0.9)';
  ctx.lineWidth = Math.max(1, s / 10);
  ctx.stroke();
}

function patternPath(ctx, x, y, s, pattern) {
  switch (pattern) {
    case 'stripes':
      ctx.moveTo(x, y + s * 0.5);
      ctx.lineTo(x + s * 0.5, y);
      ctx.moveTo(x + s * 0.5, y + s);
      ctx.lineTo(x + s, y + s * 0.5);
      ctx.moveTo(x, y + s);
      ctx.lineTo(x + s, y);
      break;
    case 'bars':
      ctx.moveTo(x, y + s * 0.33);
      ctx.lineTo(x + s, y + s * 0.33);
      ctx.moveTo(x, y + s * 0.67);
      ctx.lineTo(x + s, y + s * 0.67);
      break;
    case 'cross':
      ctx.moveTo(x + 1, y + 1);
      ctx.lineTo(x + s - 1, y + s - 1);
      ctx.moveTo(x + s - 1, y + 1);
      ctx.lineTo(x + 1, y + s - 1);
      break;
    case 'slash':
      ctx.moveTo(x + s * 0.2, y + s * 0.5);
      ctx.lineTo(x + s * 0.8, y + s * 0.5);
      break;
    case 'dots':
      ctx.rect(x + s / 2 - 1, y + s / 2 - 1, 2, 2);
      break;
    case 'notch':
      ctx.moveTo(x + s * 0.55, y);
      ctx.lineTo(x + s, y);
      ctx.lineTo(x + s, y + s * 0.45);
      ctx.closePath();
      break;
    default: // solid: the fill is the pattern
      break;
  }
}
