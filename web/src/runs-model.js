// Pure helpers of the workflow-run and quarantine views (no DOM: `npm test` covers them).
// Shapes: orchestrator/runs/run_service.cc (runView, listRuns, quarantineView).

// Run states (GET /workflow-runs?state=) and per-host statuses, with chip tones of ui.jsx.
export const RUN_STATES = {
  running: { label: 'Running', tone: 'work' },
  passed: { label: 'Passed', tone: 'good' },
  failed: { label: 'Failed', tone: 'bad' },
  cancelled: { label: 'Cancelled', tone: 'off' },
};
export const HOST_RUN_STATUSES = {
  pending: { label: 'Pending', tone: 'new' },
  running: { label: 'Running', tone: 'work' },
  passed: { label: 'Passed', tone: 'good' },
  failed: { label: 'Failed', tone: 'bad' },
  cancelled: { label: 'Cancelled', tone: 'off' },
};
// Step outcomes of a host's history (runs/engine.h StepRecord.outcome).
export const STEP_OUTCOMES = {
  passed: { label: 'Passed', tone: 'good' },
  failed: { label: 'Failed', tone: 'bad' },
  warned: { label: 'Warned', tone: 'warn' },
  skipped: { label: 'Skipped', tone: 'off' },
  shared: { label: "Leader's result", tone: 'work' },
};
function lookup(table, id) {
  return table[id] || { label: id || 'unknown', tone: 'off' };
}
export const runState = (id) => lookup(RUN_STATES, id);
export const hostRunStatus = (id) => lookup(HOST_RUN_STATUSES, id);
export const stepOutcome = (id) => lookup(STEP_OUTCOMES, id);

// The fleet-view shortcuts: the workflow a pod panel or host view preselects.
export const PRE_JOB_WORKFLOW = 'pre-job-health';
export const BURN_IN_WORKFLOW = 'l11-burn-in';

// "a, b\nc  a" -> ['a', 'b', 'c']: ids separated by commas or white space, duplicates dropped.
export function parseIdList(text) {
  const out = [];
  for (const id of String(text || '').split(/[\s,]+/)) if (id && !out.includes(id)) out.push(id);
  return out;
}

// 850 -> "850 ms", 12345 -> "12.3 s", 250000 -> "4 min 10 s", 7500000 -> "2 h 5 min".
export function fmtDuration(ms) {
  if (ms === null || ms === undefined || Number.isNaN(Number(ms))) return '';
  const n = Math.max(0, Number(ms));
  if (n < 1000) return `${Math.round(n)} ms`;
  if (n < 60000) return `${(n / 1000).toFixed(n < 10000 ? 2 : 1)} s`;
  return fmtSeconds(Math.round(n / 1000));
}

// Whole seconds as the two largest units: "45 s", "4 min 10 s", "2 h 5 min", "3 d 4 h".
export function fmtSeconds(total) {
  const s = Math.max(0, Math.floor(Number(total) || 0));
  if (s < 60) return `${s} s`;
  const units = [
    [86400, 'd'],
    [3600, 'h'],
    [60, 'min'],
    [1, 's'],
  ];
  const i = units.findIndex(([u]) => s >= u);
  const [u1, n1] = units[i];
  const [u2, n2] = units[i + 1];
  const a = Math.floor(s / u1);
  const b = Math.floor((s % u1) / u2);
  return b ? `${a} ${n1} ${b} ${n2}` : `${a} ${n1}`;
}

// A workflow's declared params (GET /workflows/{name}: {name: {type, description, default}})
// as form fields sorted by name, each default as the text an input shows.
export function paramFields(params) {
  return Object.entries(params || {})
    .map(([name, p]) => ({
      name,
      type: p.type || 'string',
      description: p.description || '',
      required: !('default' in p),
      default: 'default' in p && p.default !== null ? String(p.default) : '',
    }))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

// The params object of POST /workflow-runs: only the values the operator changed from the
// defaults, as text. kilnd fills in defaults, checks the types and names a missing required
// param (422 per field).
export function paramsBody(fields, values) {
  const out = {};
  for (const f of fields) {
    const v = values[f.name];
    if (v === undefined || v === null) continue;
    const text = String(v).trim();
    if (text === f.default || text === '') continue;
    out[f.name] = text;
  }
  return out;
}

// The body of POST /workflow-runs. A pod-scoped workflow takes pods only.
export function startBody({ workflow, scope, hostsText, podsText, fields, values }) {
  const body = { workflow };
  const hosts = scope === 'pod' ? [] : parseIdList(hostsText);
  const pods = parseIdList(podsText);
  if (hosts.length) body.hosts = hosts;
  if (pods.length) body.pods = pods;
  const params = paramsBody(fields, values);
  if (Object.keys(params).length) body.params = params;
  return body;
}

// A 422's field errors as {hosts: msg, pods: msg, workflow: msg, 'param:<name>': msg, ...}:
// details.fields [{path, message}] (kilnd names a param "params.<name>", or nested,
// "params.params.<name>"), or one details.field that the error's message is about.
function fieldKey(path) {
  const p = String(path || '');
  return p.startsWith('params.') ? `param:${p.split('.').pop()}` : p;
}
export function fieldErrors(details, message) {
  const out = {};
  for (const f of (details && details.fields) || []) {
    const key = fieldKey(f.path);
    if (!(key in out)) out[key] = f.message;
  }
  if (details && details.field && !(fieldKey(details.field) in out)) out[fieldKey(details.field)] = message || 'invalid';
  return out;
}

// How many passes a run of `spec` makes: spec.repeat is a number or "{{param}}", resolved
// from the run's params (kilnd stores the resolved values) or the param's default.
export function repeatCount(spec, runParams) {
  if (!spec) return null;
  const r = spec.repeat;
  if (typeof r === 'number') return r;
  const m = /^\{\{\s*([\w.-]+)\s*\}\}$/.exec(String(r || ''));
  if (!m) return Number(r) || null;
  const v = runParams && runParams[m[1]] !== undefined ? runParams[m[1]] : spec.params && spec.params[m[1]] ? spec.params[m[1]].default : undefined;
  const n = Number(v);
  return Number.isFinite(n) && n > 0 ? n : null;
}

// "spares cover: yes (healthy GPUs 68/64)" for a pod of a finished run's summary; a run that
// covered only part of the pod cannot tell (spares_cover null).
export function sparesText(p) {
  const gpus = `healthy GPUs ${p.healthy_gpus}/64`;
  if (p.spares_cover === true) return `spares cover: yes (${gpus})`;
  if (p.spares_cover === false) return `spares cover: no (${gpus})`;
  return `spares cover: unknown, the run covered ${p.hosts} of 18 hosts (${gpus})`;
}

// Progress of a run ({hosts, passed, failed, running, cancelled}) as one line.
export function progressText(p) {
  if (!p) return '';
  const parts = [`${p.passed} passed`, `${p.failed} failed`];
  if (p.running) parts.push(`${p.running} running`);
  if (p.cancelled) parts.push(`${p.cancelled} cancelled`);
  return `${p.passed + p.failed + (p.cancelled || 0)} of ${p.hosts} hosts done · ${parts.join(', ')}`;
}

// Quarantine validation progress: "pass 1 of 2 · running", "waiting (soak)", ...
export function validationText(progress, passes, steps) {
  if (!progress || progress.pass === undefined) return '';
  const parts = [`pass ${progress.pass}${passes ? ` of ${passes}` : ''}`];
  if (steps && progress.status === 'running') parts.push(`step ${Math.min(progress.step_index + 1, steps)} of ${steps}`);
  if (progress.status) parts.push(progress.status);
  return parts.join(' · ');
}

// A workflow text with "{{param}}" placeholders (a description, repeat: "{{passes}}") filled
// in from the form's values, else the param's default; a name the form does not know is shown
// bare, never with its braces. fields: paramFields(); values: {name -> text}.
export function fillTemplate(text, fields, values) {
  return String(text ?? '').replace(/\{\{\s*([\w.-]+)\s*\}\}/g, (_, name) => {
    const v = values && values[name] !== undefined && values[name] !== null ? String(values[name]).trim() : '';
    if (v !== '') return v;
    const f = (fields || []).find((x) => x.name === name);
    return f && f.default !== '' ? f.default : name;
  });
}

// ---- Step-level progress (issue 18) -------------------------------------------------------
// Where each host stands on each step of its current pass, from GET /workflow-runs/{id}: a step
// is done (recorded as passed, warned, skipped or the leader's), failed, running (the host's
// current step), pending (not reached yet) or not run (the host ended before it: failed or
// cancelled). A host that passed did every step (a step its `when` skipped leaves no record).
export const STEP_STATES = {
  done: { label: 'Done', tone: 'good', seg: 'seg-good' },
  failed: { label: 'Failed', tone: 'bad', seg: 'seg-bad' },
  notrun: { label: 'Not run', tone: 'off', seg: 'seg-off' },
  running: { label: 'Running', tone: 'work', seg: 'seg-work' },
  pending: { label: 'Pending', tone: 'new', seg: 'seg-pending' },
};
const DONE_OUTCOMES = new Set(['passed', 'warned', 'skipped', 'shared']);

export function hostStepStates(h, steps) {
  const last = {};
  for (const r of h.steps || []) if (r.pass === h.pass) last[r.step] = r;
  const current = h.current_step ? steps.indexOf(h.current_step) : -1;
  return steps.map((step, i) => {
    const r = last[step];
    if (h.status === 'passed') return 'done';
    if ((h.status === 'running' || h.status === 'pending') && i === current) return h.status === 'running' ? 'running' : 'pending';
    if (r && DONE_OUTCOMES.has(r.outcome)) return 'done';
    if (r && r.outcome === 'failed') return h.status === 'failed' ? 'failed' : 'done';
    if (h.status === 'failed' || h.status === 'cancelled') return 'notrun';
    if (current >= 0 && i < current) return 'done';
    return 'pending';
  });
}

// Per step {step, done, failed, notrun, running, pending} over every host, and the totals over
// all host-steps ({hosts, steps, units, done, ...}): what the run's bar shows.
export function stepProgress(run) {
  const steps = run.steps && run.steps.length ? run.steps : [];
  const zero = () => ({ done: 0, failed: 0, notrun: 0, running: 0, pending: 0 });
  const per = steps.map((step) => ({ step, ...zero() }));
  const total = zero();
  for (const h of run.hosts || []) {
    hostStepStates(h, steps).forEach((s, i) => {
      per[i][s] += 1;
      total[s] += 1;
    });
  }
  return { steps: per, total: { hosts: (run.hosts || []).length, steps: steps.length, units: steps.length * (run.hosts || []).length, ...total } };
}

// "step 2 of 5: 12 done, 6 running" for the step most hosts are on; the one line the bar's
// label and the progress card read.
export function stepProgressText(sp) {
  const t = sp.total;
  if (!t.units) return '';
  const parts = [`${t.done} of ${t.units} host-steps done`];
  if (t.running) parts.push(`${t.running} running`);
  if (t.failed) parts.push(`${t.failed} failed`);
  if (t.notrun) parts.push(`${t.notrun} not run`);
  if (t.pending) parts.push(`${t.pending} pending`);
  return `${parts.join(' · ')} (${t.hosts} host${t.hosts === 1 ? '' : 's'} × ${t.steps} step${t.steps === 1 ? '' : 's'})`;
}

// ---- Live output (issue 18) ------------------------------------------------------------------
// A stream as the console has it: text and the stream offset it ends at. `slice` is one stream of
// GET /assignments/{id}/output ({offset, end, data}) asked for with since = buf.end. Keeps the last
// `cap` characters. A slice that starts past buf.end (kilnd kept only the tail) says how much is
// missing; one that ends before buf.end (kilnd lost the live output, e.g. a database restart)
// starts over.
export const LIVE_CAP = 256 * 1024;
export function appendLiveOutput(buf, slice, cap = LIVE_CAP) {
  const b = buf || { text: '', end: 0 };
  if (!slice) return b;
  let text = b.text;
  if (slice.end < b.end) text = '';
  else if (slice.offset > b.end && (b.end > 0 || b.text)) text += `\n[… ${slice.offset - b.end} bytes not kept …]\n`;
  else if (slice.offset > 0 && !b.text && b.end === 0) text = `[… the first ${slice.offset} bytes are not kept …]\n`;
  text += slice.data || '';
  if (text.length > cap) text = text.slice(text.length - cap);
  return { text, end: slice.end };
}

// The query of the next read: what follows what the console has.
export function liveOutputQuery(out, err) {
  return `?stdout_since=${(out && out.end) || 0}&stderr_since=${(err && err.end) || 0}`;
}

// ---- Rollout link (issue 18) -------------------------------------------------------------------
// "r-7 upgrade of pod prn-b01-p02 (attempt 1)" for a run a rollout started (run.rollout), '' else.
export function rolloutText(ro) {
  if (!ro || !ro.id) return '';
  const phase = ro.phase === 'validate' ? 'validation' : ro.phase || 'run';
  return `${ro.id}: ${phase} of pod ${ro.pod}${ro.attempt > 1 ? ` (attempt ${ro.attempt})` : ''}`;
}

// The runs list's pod cell: the rollout's pod, else the first pods of the run's hosts.
export function podsText(r) {
  if (r.rollout && r.rollout.pod) return r.rollout.pod;
  const pods = r.pods || [];
  if (pods.length > 3) return `${pods.slice(0, 3).join(', ')} +more`;
  return pods.join(', ');
}
