// Pure helpers of the reliability view (no DOM: `npm test` covers them).
// Shapes: orchestrator/reliability/reliability_service.cc report(); the maths is kilnd's.

// Interruption causes kilnd accepts (api/openapi.yaml POST /interruptions).
export const CAUSES = [
  'nvlink_signal_integrity',
  'hbm',
  'lpddr',
  'nvswitch_fabric',
  'backend_network',
  'storage',
  'thermal',
  'power',
  'software',
  'gpu',
  'host_maintenance',
  'unknown',
];
export function causeLabel(c) {
  const special = { nvlink_signal_integrity: 'NVLink signal integrity', hbm: 'HBM', lpddr: 'LPDDR', nvswitch_fabric: 'NVSwitch fabric', gpu: 'GPU' };
  if (special[c]) return special[c];
  const s = String(c || '').replace(/_/g, ' ');
  return s.charAt(0).toUpperCase() + s.slice(1);
}

// The north star is kilnd's (its reliability_target setting): the report carries it as
// north_star {per_8k_gpus_per_day, mtbi_gpu_hours}; the console has no number of its own.

// A span of days as words: "2 h 57 min", "3.5 days", "40 s".
export function fmtSpan(days) {
  const s = Math.max(0, Math.round(days * 86400));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min`;
  if (s < 86400) {
    const h = Math.floor(s / 3600);
    const m = Math.floor((s % 3600) / 60);
    return m ? `${h} h ${m} min` : `${h} h`;
  }
  return `${fmtNumber(s / 86400)} days`;
}

// How much of the report's window the fleet's history covers (history_start, covered_days of
// GET /reliability): {partial, none, covered_days, days, short, text}. partial: the window
// starts before the history, so its rates are over covered_days, not days; short: under a
// day of history, too little to judge against a target.
export function coverage(r, fmtTime = (t) => t) {
  const days = Number(r.days) || 0;
  const covered = r.covered_days === undefined || r.covered_days === null ? days : Number(r.covered_days);
  const none = !r.history_start || covered <= 0;
  // Within a second of the whole window: covered (kilnd computes both from the same times).
  const partial = none || covered < days - 1 / 86400;
  const short = none || covered < 1;
  let text = '';
  if (none && !r.history_start) text = 'No host in this scope has been in service yet: there is no history to measure.';
  else if (none) text = `The fleet's history starts ${fmtTime(r.history_start)}, after this window: nothing in it to measure.`;
  else if (partial)
    text = `The fleet's history starts ${fmtTime(r.history_start)}: this ${fmtNumber(days)}-day window holds only ${fmtSpan(covered)} of it. The rates below are over those ${fmtSpan(covered)}, not ${fmtNumber(days)} days${short ? ', too short to judge against the north star' : ''}.`;
  return { partial, none, short, covered_days: none ? 0 : covered, days, text };
}

// Against the north star: lower is better for the rate, higher for MTBI. Returns {ok, text}
// (text says how far, so it does not depend on a colour). `cov` (coverage()): with under a
// day of history the figure is not judged; with a partial window the text says over what span.
export function rateVerdict(rate, target, cov) {
  if (rate === null || rate === undefined) return { ok: null, text: 'no GPU-hours in the window' };
  if (cov && cov.partial && cov.short) return { ok: null, text: `over ${fmtSpan(cov.covered_days)} of history only: not judged against the north star of ${target}` };
  const over = cov && cov.partial ? ` (over ${fmtSpan(cov.covered_days)} of history, not ${fmtNumber(cov.days)} days)` : '';
  if (rate <= target) return { ok: true, text: `at or below the north star of ${target}${over}` };
  return { ok: false, text: `${fmtNumber(rate / target)}× the north star of ${target}${over}` };
}
export function mtbiVerdict(mtbi, interruptions, target, cov) {
  if (mtbi === null || mtbi === undefined)
    return interruptions ? { ok: null, text: 'no GPU-hours in the window' } : { ok: true, text: `no interruption: above the north star of ${fmtNumber(target)}` };
  if (cov && cov.partial && cov.short)
    return { ok: null, text: `over ${fmtSpan(cov.covered_days)} of history only: not judged against the north star of ${fmtNumber(target)}` };
  const over = cov && cov.partial ? ` (over ${fmtSpan(cov.covered_days)} of history)` : '';
  if (mtbi >= target) return { ok: true, text: `at or above the north star of ${fmtNumber(target)}${over}` };
  return { ok: false, text: `${fmtNumber((100 * mtbi) / target)}% of the north star of ${fmtNumber(target)}${over}` };
}

export const WINDOWS = [
  { id: '7', label: 'Last 7 days', days: 7 },
  { id: '28', label: 'Last 28 days', days: 28 },
  { id: '90', label: 'Last 90 days', days: 90 },
  { id: 'custom', label: 'From / to' },
];

// ISO UTC time without milliseconds, as kilnd's parser wants: 2026-12-02T10:00:00Z.
export function isoSeconds(ms) {
  return new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

// The query of GET /reliability for the view's params: {window, from, to, site, building,
// platform, lemon_threshold}. A named window is counted back from `now`; custom passes the
// dates (YYYY-MM-DD, which kilnd reads as 00:00 UTC) as given.
export function reportQuery(params, now) {
  const q = {};
  const w = params.window || '28';
  if (w === 'custom') {
    if (params.from) q.from = params.from;
    if (params.to) q.to = params.to;
  } else {
    const days = (WINDOWS.find((x) => x.id === w) || WINDOWS[1]).days;
    // Rounded down to the minute, so polls within a minute ask the same question.
    const t = Math.floor(now / 60000) * 60000;
    q.from = isoSeconds(t - days * 86400000);
  }
  for (const k of ['site', 'building', 'platform', 'lemon_threshold']) if (params[k] !== undefined && params[k] !== '') q[k] = params[k];
  return q;
}

// "1,234", "12.3", "0.042": numbers for big figures, 3 significant digits below 100.
export function fmtNumber(v) {
  if (v === null || v === undefined || Number.isNaN(Number(v))) return '—';
  const n = Number(v);
  if (Math.abs(n) >= 100) return Math.round(n).toLocaleString('en-US');
  if (n === 0) return '0';
  return Number(n.toPrecision(3)).toLocaleString('en-US', { maximumFractionDigits: 6 });
}

// Chart geometry for the weekly rate against the north-star line: points [{x, y, week,
// value}] in a w x h box with padding, a y scale (linear, or log10 when the values span more
// than two decades, as a rate cut by 99% does) and its ticks.
export function weeklyChart(weekly, { w = 640, h = 220, pad = { l: 56, r: 16, t: 12, b: 36 }, target } = {}) {
  const vals = weekly.map((x) => x.per_8k_gpus_per_day).filter((v) => v !== null && v !== undefined);
  const positive = vals.filter((v) => v > 0);
  const max = Math.max(target, ...vals, 0);
  const minPos = Math.min(target, ...positive);
  const log = positive.length > 0 && max / minPos > 100;
  const lo = log ? Math.pow(10, Math.floor(Math.log10(minPos))) : 0;
  const hi = log ? Math.pow(10, Math.ceil(Math.log10(max))) : niceCeil(max * 1.1);
  const iw = w - pad.l - pad.r;
  const ih = h - pad.t - pad.b;
  const y = (v) => {
    if (log) {
      const c = Math.max(v, lo);
      return pad.t + ih - (ih * (Math.log10(c) - Math.log10(lo))) / (Math.log10(hi) - Math.log10(lo));
    }
    return pad.t + ih - (ih * v) / hi;
  };
  const n = weekly.length;
  const x = (i) => pad.l + (n <= 1 ? iw / 2 : (iw * i) / (n - 1));
  const points = weekly.map((wk, i) => ({
    x: x(i),
    y: wk.per_8k_gpus_per_day === null || wk.per_8k_gpus_per_day === undefined ? null : y(wk.per_8k_gpus_per_day),
    week: wk.week,
    value: wk.per_8k_gpus_per_day,
  }));
  const ticks = [];
  if (log) for (let v = lo; v <= hi * 1.0001; v *= 10) ticks.push({ v, y: y(v) });
  else for (let i = 0; i <= 4; i++) ticks.push({ v: (hi * i) / 4, y: y((hi * i) / 4) });
  return { w, h, pad, log, points, ticks, targetY: y(target), lo, hi };
}

function niceCeil(v) {
  if (v <= 0) return 1;
  const p = Math.pow(10, Math.floor(Math.log10(v)));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= v) return m * p;
  return 10 * p;
}

// The body of POST /interruptions from the form: {id, at (ISO), cause, hosts, pod, job,
// job_gpus, owner, description}; empty fields left out.
export function interruptionBody(f) {
  const out = { id: String(f.id || '').trim(), at: f.at, cause: f.cause };
  const hosts = String(f.hosts || '')
    .split(/[\s,]+/)
    .filter(Boolean);
  if (hosts.length) out.hosts = hosts;
  for (const k of ['pod', 'job', 'owner', 'description']) if (String(f[k] || '').trim()) out[k] = String(f[k]).trim();
  if (String(f.job_gpus || '').trim()) out.job_gpus = /^\d+$/.test(String(f.job_gpus).trim()) ? Number(f.job_gpus) : f.job_gpus;
  return out;
}

// A fresh client id for an interruption recorded from the console (kilnd is idempotent on it).
export function newInterruptionId(now, rand = Math.random) {
  return `console-${isoSeconds(now).replace(/[-:]/g, '').replace('T', '-').replace('Z', '')}-${Math.floor(rand() * 0x10000)
    .toString(16)
    .padStart(4, '0')}`;
}
