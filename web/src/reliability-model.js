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

// North star (FACTS.md): 2 interruptions per 8K GPUs per day = 8,000 x 24 / 2 = 96,000
// GPU-hours MTBI. kilnd sends it in the report too; these are the fallbacks.
export const NORTH_STAR = { per_8k_gpus_per_day: 2, mtbi_gpu_hours: 96000 };

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

// Against the north star: lower is better for the rate, higher for MTBI. Returns {ok, text}
// (text says how far, so it does not depend on a colour).
export function rateVerdict(rate, target = NORTH_STAR.per_8k_gpus_per_day) {
  if (rate === null || rate === undefined) return { ok: null, text: 'no GPU-hours in the window' };
  if (rate <= target) return { ok: true, text: `at or below the north star of ${target}` };
  return { ok: false, text: `${fmtNumber(rate / target)}× the north star of ${target}` };
}
export function mtbiVerdict(mtbi, interruptions, target = NORTH_STAR.mtbi_gpu_hours) {
  if (mtbi === null || mtbi === undefined)
    return interruptions ? { ok: null, text: 'no GPU-hours in the window' } : { ok: true, text: `no interruption: above the north star of ${fmtNumber(target)}` };
  if (mtbi >= target) return { ok: true, text: `at or above the north star of ${fmtNumber(target)}` };
  return { ok: false, text: `${fmtNumber((100 * mtbi) / target)}% of the north star of ${fmtNumber(target)}` };
}

// Chart geometry for the weekly rate against the north-star line: points [{x, y, week,
// value}] in a w x h box with padding, a y scale (linear, or log10 when the values span more
// than two decades, as a rate cut by 99% does) and its ticks.
export function weeklyChart(weekly, { w = 640, h = 220, pad = { l: 56, r: 16, t: 12, b: 36 }, target = 2 } = {}) {
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
