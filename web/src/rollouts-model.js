// Pure helpers of the rollout views (no DOM: `npm test` covers them).
// Shapes: orchestrator/rollouts/rollout_service.cc (view, pods, list, create) and policy.cc.

import { parseIdList } from './runs-model.js';

// Rollout states (rollout store), with chip tones of ui.jsx.
export const ROLLOUT_STATES = {
  created: { label: 'Created', tone: 'new' },
  running: { label: 'Running', tone: 'work' },
  paused: { label: 'Paused', tone: 'warn' },
  halted: { label: 'Halted', tone: 'bad' },
  completed: { label: 'Completed', tone: 'good' },
  aborting: { label: 'Aborting', tone: 'warn' },
  aborted: { label: 'Aborted', tone: 'off' },
};
export const FINISHED_ROLLOUT_STATES = ['completed', 'aborted'];

// Pod phases of a rollout (policy.h PodPhase). `seg` is the progress/timeline style: each has
// a pattern in styles.css, and every bar carries its phase in text too.
export const POD_PHASES = {
  pending: { label: 'Pending', tone: 'new', seg: 'seg-pending' },
  draining: { label: 'Draining', tone: 'work', seg: 'seg-drain' },
  upgrading: { label: 'Upgrading', tone: 'work', seg: 'seg-work' },
  validating: { label: 'Validating', tone: 'work', seg: 'seg-validate' },
  succeeded: { label: 'Succeeded', tone: 'good', seg: 'seg-good' },
  failed: { label: 'Failed', tone: 'bad', seg: 'seg-bad' },
  skipped: { label: 'Skipped', tone: 'off', seg: 'seg-off' },
  aborted: { label: 'Aborted', tone: 'off', seg: 'seg-off' },
};
export const PHASE_ORDER = ['succeeded', 'failed', 'skipped', 'aborted', 'validating', 'upgrading', 'draining', 'pending'];
const IN_FLIGHT = new Set(['draining', 'upgrading', 'validating']);
const POD_DONE = new Set(['succeeded', 'failed', 'skipped', 'aborted']);

function lookup(table, id) {
  return table[id] || { label: id || 'unknown', tone: 'off', seg: 'seg-off' };
}
export const rolloutState = (id) => lookup(ROLLOUT_STATES, id);
export const podPhase = (id) => lookup(POD_PHASES, id);

// Why a pending pod waits: the class before the colon of its waiting_reason (policy.cc
// admit(): wave, budget, paused, window, repair, soak, allocated, concurrency, capacity, power).
export const WAIT_CLASSES = {
  wave: 'its wave has not started',
  budget: 'the failure budget halted the rollout',
  paused: 'the rollout is paused',
  window: 'outside the maintenance windows',
  repair: 'too few of its hosts can serve (repair, quarantine)',
  soak: 'soaking after the previous wave',
  allocated: 'a job holds the pod',
  concurrency: 'max_concurrent_pods in flight',
  capacity: 'building capacity floor',
  power: 'building power (reboots at once)',
};
export function waitClass(reason) {
  // "concurrency: 2 of ..." -> concurrency; "wave 2 starts after wave 0" -> wave; "paused".
  return String(reason || '').split(':')[0].trim().split(' ')[0];
}

// The view's waiting map ({reason text before a colon -> pods}) by class: [{cls, n, texts}].
export function waitingByClass(waiting) {
  const out = new Map();
  for (const [text, n] of Object.entries(waiting || {})) {
    const cls = waitClass(text);
    const e = out.get(cls) || { cls, n: 0, texts: [] };
    e.n += n;
    if (text !== cls) e.texts.push(text);
    out.set(cls, e);
  }
  return [...out.values()];
}

// The verbs the console offers, by rollout state (rollout_service.cc verb(), rollback()).
// `confirm` names the consequence in the confirmation dialog.
export const ROLLOUT_VERBS = [
  {
    id: 'start',
    label: 'Start',
    from: ['created'],
    confirm: 'Start rollout',
    consequence: 'Pods start draining for the upgrade, canary first, within the policy limits.',
  },
  {
    id: 'pause',
    label: 'Pause',
    from: ['running'],
    confirm: 'Pause rollout',
    consequence: 'No new pod starts. Pods in flight finish their upgrade and validation.',
  },
  {
    id: 'resume',
    label: 'Resume',
    from: ['paused', 'halted'],
    confirm: 'Resume rollout',
    consequence: 'Pending pods start again within the policy limits.',
    haltedConsequence: 'Resuming a halted rollout retries its failed pods: clear their fault first, or skip them.',
  },
  {
    id: 'abort',
    label: 'Abort',
    from: ['created', 'running', 'paused', 'halted'],
    confirm: 'Abort rollout',
    danger: true,
    consequence:
      'No new step starts. Pods in flight stop at a safe point and are LEFT DRAINED (hosts in maintenance) until someone undrains or retries them. This cannot be undone: a new rollout is needed to continue.',
  },
  {
    id: 'rollback',
    label: 'Roll back',
    from: ['paused', 'halted', 'completed', 'aborted'],
    confirm: 'Start the rollback',
    danger: true,
    consequence:
      'A new rollout of the previous bundle starts at once on every pod this rollout changed (the upgraded ones, and failed or aborted ones whose upgrade had started), with the same policy (drain, install, validate).',
  },
];
export function offeredVerbs(state, counts) {
  // Rollback: once a pod was upgraded, or failed or aborted (perhaps part-flashed; kilnd answers
  // 409 when none of those had started its upgrade).
  const changed = counts ? (counts.succeeded || 0) + (counts.failed || 0) + (counts.aborted || 0) : 0;
  return ROLLOUT_VERBS.filter((v) => v.from.includes(state) && (v.id !== 'rollback' || changed > 0));
}
// Per-pod verbs: retry a failed or aborted pod, skip a pending or failed one.
export function podVerbs(phase) {
  const out = [];
  if (phase === 'failed' || phase === 'aborted') out.push('retry');
  if (phase === 'pending' || phase === 'failed') out.push('skip');
  return out;
}

// Policy fields with kilnd's defaults (api/openapi.yaml POST /rollouts; policy.h Policy).
// Every field is text in the form; policyBody() sends only what differs from the default.
export const POLICY_FIELDS = [
  { name: 'canary_pods', label: 'Canary pods', type: 'int', default: '1', help: 'Pods in the first wave.' },
  { name: 'waves', label: 'Waves (cumulative)', type: 'waves', default: '10%, 50%, 100%', help: 'Share or count done by the end of each wave; the last takes the rest.' },
  { name: 'soak', label: 'Soak between waves', type: 'duration', default: '10m', help: 'e.g. 30s, 10m, 2h' },
  { name: 'max_concurrent_pods', label: 'Max concurrent pods', type: 'int', default: '2', help: 'Pods in flight at once.' },
  { name: 'max_percent_down', label: 'Capacity floor: max % of a building down', type: 'number', default: '25', help: 'Counting pods already down.' },
  { name: 'max_pods_down', label: 'Capacity floor: max pods of a building down', type: 'int', default: '', help: 'Empty: no count limit.' },
  { name: 'failure_budget_pods', label: 'Failure budget (pods)', type: 'int', default: '1', help: 'Halt when more pods fail.' },
  { name: 'failure_budget_percent', label: 'Failure budget (% of pods)', type: 'number', default: '', help: 'Empty: no percentage budget.' },
  { name: 'max_rebooting_pods_per_building', label: 'Max rebooting pods per building', type: 'int', default: '2', help: 'Power: pods flashing and rebooting at once.' },
  { name: 'allocated', label: 'Pods allocated to jobs', type: 'choice', choices: ['wait', 'skip'], default: 'wait', help: 'wait for the scheduler, or skip them' },
  { name: 'order', label: 'Order', type: 'choice', choices: ['spread', 'name'], default: 'spread', help: 'spread: round-robin over buildings' },
  { name: 'windows', label: 'Maintenance windows (UTC)', type: 'windows', default: '', help: 'New pods start only inside one, e.g. mon-fri 22:00-06:00; sat,sun 00:00-24:00. Empty: any time.' },
];
export function policyDefaults() {
  const v = {};
  for (const f of POLICY_FIELDS) v[f.name] = f.default;
  return v;
}

// "10%, 50%, 100%" -> ["10%", "50%", "100%"]; "5, 20" -> [5, 20]; other tokens as text
// (kilnd names the bad one in its 422).
export function parseWaves(text) {
  return String(text || '')
    .split(/[\s,]+/)
    .filter(Boolean)
    .map((t) => (/^\d+$/.test(t) ? Number(t) : t));
}

// "mon-fri 22:00-06:00; sat,sun 00:00-24:00" (or one per line) -> ["mon-fri 22:00-06:00", "sat,sun 00:00-24:00"]
export function parseWindows(text) {
  return String(text || '')
    .split(/[;\n]+/)
    .map((t) => t.trim().replace(/\s+/g, ' '))
    .filter(Boolean);
}

function num(text) {
  const t = String(text).trim();
  return t !== '' && Number.isFinite(Number(t)) ? Number(t) : t;
}

// The policy object of POST /rollouts: only the fields that differ from the defaults (kilnd
// fills in the rest), grouped as kilnd expects (capacity_floor, failure_budget).
export function policyBody(values) {
  const v = { ...policyDefaults(), ...values };
  const changed = (k) => String(v[k] ?? '').trim() !== POLICY_FIELDS.find((f) => f.name === k).default;
  const out = {};
  for (const k of ['canary_pods', 'max_concurrent_pods', 'max_rebooting_pods_per_building'])
    if (changed(k)) out[k] = num(v[k]);
  if (changed('waves')) out.waves = parseWaves(v.waves);
  if (changed('soak')) out.soak = String(v.soak).trim();
  if (changed('windows')) out.windows = parseWindows(v.windows);
  for (const k of ['allocated', 'order']) if (changed(k)) out[k] = v[k];
  // capacity_floor and failure_budget replace the default as a whole: send every part set.
  if (changed('max_percent_down') || changed('max_pods_down')) {
    const c = {};
    if (String(v.max_percent_down).trim() !== '') c.max_percent_down = num(v.max_percent_down);
    if (String(v.max_pods_down).trim() !== '') c.max_pods_down = num(v.max_pods_down);
    out.capacity_floor = c;
  }
  if (changed('failure_budget_pods') || changed('failure_budget_percent')) {
    const b = {};
    if (String(v.failure_budget_pods).trim() !== '') b.pods = num(v.failure_budget_pods);
    if (String(v.failure_budget_percent).trim() !== '') b.percent = num(v.failure_budget_percent);
    out.failure_budget = b;
  }
  return out;
}

// "row=a, rack=3" -> {row: 'a', rack: '3'}
export function parseLabels(text) {
  const out = {};
  for (const part of String(text || '').split(/[,\n]+/)) {
    const p = part.trim();
    if (!p) continue;
    const eq = p.indexOf('=');
    if (eq < 0) out[p] = '';
    else out[p.slice(0, eq).trim()] = p.slice(eq + 1).trim();
  }
  return out;
}

// The selector of POST /rollouts from the form's texts; empty lists are left out (any).
export function selectorBody({ sites, buildings, platforms, pods, labels }) {
  const out = {};
  const s = parseIdList(sites);
  const b = parseIdList(buildings);
  const p = parseIdList(pods);
  const l = parseLabels(labels);
  if (s.length) out.sites = s;
  if (b.length) out.buildings = b;
  if (platforms && platforms.length) out.platforms = [...platforms];
  if (p.length) out.pods = p;
  if (Object.keys(l).length) out.labels = l;
  return out;
}

// A 422 of POST /rollouts as {field name of the form -> message}: policy.capacity_floor.x ->
// max_percent_down etc., selector.x -> selector:x, bundle -> bundle.
export function rolloutFieldErrors(details, message) {
  const out = {};
  const key = (path) => {
    const p = String(path || '').replace(/\[\d+\]$/, '');
    if (p === 'policy.capacity_floor.max_percent_down' || p === 'policy.capacity_floor') return 'max_percent_down';
    if (p === 'policy.capacity_floor.max_pods_down') return 'max_pods_down';
    if (p === 'policy.failure_budget.percent') return 'failure_budget_percent';
    if (p.startsWith('policy.failure_budget')) return 'failure_budget_pods';
    if (p.startsWith('policy.')) return p.slice(7);
    if (p.startsWith('selector.')) return `selector:${p.slice(9)}`;
    return p;
  };
  for (const f of (details && details.fields) || []) if (!(key(f.path) in out)) out[key(f.path)] = f.message;
  if (details && details.field && !(key(details.field) in out)) out[key(details.field)] = message || 'invalid';
  return out;
}

// A plan (dry run) in one line: "4 eligible pods in 3 waves (1, 1, 2); 2 excluded".
export function planSummary(plan) {
  if (!plan) return '';
  const sizes = plan.waves.map((w) => w.pods.length);
  const waves = `${plan.waves.length} wave${plan.waves.length === 1 ? '' : 's'}${sizes.length ? ` (${sizes.join(', ')})` : ''}`;
  return `${plan.eligible} eligible pod${plan.eligible === 1 ? '' : 's'} in ${waves}; ${plan.excluded.length} excluded`;
}

// Excluded pods grouped by reason class ("compliant", "incompatible", "not in service", ...).
export function exclusionCounts(excluded) {
  const out = {};
  for (const e of excluded || []) {
    const r = String(e.reason || '');
    const cls = r.startsWith('in rollout') ? 'in another rollout' : r.startsWith('not in service') ? 'not in service' : r.split(':')[0].split(' (')[0];
    out[cls] = (out[cls] || 0) + 1;
  }
  return out;
}

// Progress of a rollout view: {done, total, text}.
export function rolloutProgress(view) {
  const c = (view && view.counts) || {};
  const total = view ? view.total || 0 : 0;
  let done = 0;
  for (const k of POD_DONE) done += c[k] || 0;
  let inFlight = 0;
  for (const k of IN_FLIGHT) inFlight += c[k] || 0;
  const parts = [`${c.succeeded || 0} succeeded`];
  if (c.failed) parts.push(`${c.failed} failed`);
  if (c.skipped) parts.push(`${c.skipped} skipped`);
  if (c.aborted) parts.push(`${c.aborted} aborted`);
  if (inFlight) parts.push(`${inFlight} in flight`);
  if (c.pending) parts.push(`${c.pending} pending`);
  return { done, total, inFlight, text: `${done} of ${total} pods done · ${parts.join(', ')}` };
}

// Phase spans of one pod over time for the timeline, from the rollout's events (oldest first
// or not; kinds admitted/upgrading/validating/succeeded/failed/aborted/skip/retry) and the
// pod's started/finished timestamps when events are missing. Returns [{phase, from, to}] in
// ms; an open span ends at `now`.
export function podSpans(pod, events, now) {
  const evs = (events || []).filter((e) => e.pod === pod.pod).sort((a, b) => a.at_ms - b.at_ms || a.id - b.id);
  const starts = { admitted: 'draining', draining: 'draining', upgrading: 'upgrading', validating: 'validating' };
  const ends = new Set(['succeeded', 'failed', 'aborted', 'skipped', 'skip', 'retry', 'pending']);
  const spans = [];
  let open = null;
  const close = (at) => {
    if (open) {
      spans.push({ phase: open.phase, from: open.from, to: Math.max(open.from, at) });
      open = null;
    }
  };
  for (const e of evs) {
    if (starts[e.kind]) {
      close(e.at_ms);
      open = { phase: starts[e.kind], from: e.at_ms };
    } else if (ends.has(e.kind)) {
      const phase = e.kind === 'skip' ? 'skipped' : e.kind;
      const wasOpen = !!open;
      close(e.at_ms);
      if (wasOpen && POD_DONE.has(phase)) spans.push({ phase, from: e.at_ms, to: e.at_ms, mark: true });
    }
  }
  if (open) {
    if (POD_DONE.has(pod.phase) && pod.finished_at_ms) close(pod.finished_at_ms);
    else if (pod.phase === 'pending') close(now);
    else {
      // Still in flight: the span runs on until now.
      spans.push({ phase: open.phase, from: open.from, to: now, open: true });
      open = null;
    }
  }
  if (!spans.length && pod.started_at_ms) {
    const to = pod.finished_at_ms || now;
    spans.push({ phase: POD_DONE.has(pod.phase) ? 'draining' : pod.phase, from: pod.started_at_ms, to, open: !pod.finished_at_ms });
  }
  return spans;
}

// The timeline's time range: from the earliest pod start (or the rollout's start) to the
// latest end (or now while it runs).
export function timelineRange(view, pods, now) {
  let from = Infinity;
  let to = -Infinity;
  for (const p of pods || []) {
    if (p.started_at_ms) from = Math.min(from, p.started_at_ms);
    if (p.finished_at_ms) to = Math.max(to, p.finished_at_ms);
    if (p.started_at_ms && !p.finished_at_ms) to = Math.max(to, now);
  }
  if (view && view.started_at_ms) from = Math.min(from, view.started_at_ms);
  if (!Number.isFinite(from)) return null;
  if (!Number.isFinite(to) || (view && !view.finished_at_ms)) to = Math.max(to, now);
  if (to <= from) to = from + 1000;
  return { from, to };
}

// Seconds as a short duration for P50/P90/ETA: "2 h 5 min", "45 s"; null -> "—".
export function fmtEta(seconds) {
  if (seconds === null || seconds === undefined || !Number.isFinite(Number(seconds))) return '—';
  const s = Math.max(0, Math.round(Number(seconds)));
  if (s < 60) return `${s} s`;
  const units = [
    [86400, 'd'],
    [3600, 'h'],
    [60, 'min'],
  ];
  const i = units.findIndex(([u]) => s >= u);
  const [u1, n1] = units[i];
  const a = Math.floor(s / u1);
  if (i === units.length - 1) return `${a} min`;
  const [u2, n2] = units[i + 1];
  const b = Math.floor((s % u1) / u2);
  return b ? `${a} ${n1} ${b} ${n2}` : `${a} ${n1}`;
}

// A bundle's label: "gb200-fw-2026.12@1.0.0".
export function bundleLabel(b) {
  if (!b) return '';
  if (typeof b === 'string') return b;
  return b.name ? `${b.name}@${b.version}` : b.id;
}

// ---------------------------------------------------------------- downgrades (issue 18)

// A dry run's downgrades: plan.downgrades [{pod, reasons}] (pods some component of which would
// go back to an OLDER version) and the answer's warnings [text]. Older kilnds send neither.
export function planDowngrades(answer) {
  const plan = (answer && answer.plan) || {};
  const pods = (plan.downgrades || []).map((d) => ({ pod: d.pod, reasons: d.reasons || [] }));
  const warnings = [...((answer && answer.warnings) || [])];
  return { pods, warnings, count: pods.length };
}

// What the create buttons of a previewed plan may do. A plan with downgrades is created only
// when the operator ticks "Allow downgrade" and gives a reason (kilnd answers 422 on
// allow_downgrade otherwise, and audits the reason); without downgrades nothing changes.
// -> {downgrades, enabled, why, createLabel, startLabel}
export function createGate(answer, ack) {
  const plan = (answer && answer.plan) || {};
  const eligible = plan.eligible || 0;
  const n = planDowngrades(answer).count;
  const allow = !!(ack && ack.allow);
  const reason = String((ack && ack.reason) || '').trim();
  const pods = (k) => `${k} pod${k === 1 ? '' : 's'}`;
  if (n === 0)
    return {
      downgrades: 0,
      enabled: eligible > 0,
      why: eligible > 0 ? '' : 'No pod needs this bundle in the selection.',
      createLabel: 'Create (start later)',
      startLabel: 'Create and start',
    };
  const up = eligible - n;
  const what = `Downgrade ${pods(n)}${up > 0 ? `, upgrade ${up}` : ''}`;
  let why = '';
  if (!allow) why = 'Tick "Allow downgrade" to create a rollout that moves pods to older versions.';
  else if (!reason) why = 'Give the reason for the downgrade (it is recorded in the audit log).';
  return {
    downgrades: n,
    enabled: allow && reason !== '',
    why,
    createLabel: `${what} (create, start later)`,
    startLabel: `${what} now (create and start)`,
  };
}

// The body of the real POST /rollouts after a preview: the previewed body, start, and for a
// plan with downgrades the operator's allow_downgrade and reason.
export function createBody(body, { start, downgrades, allow, reason }) {
  const out = { ...body, start: !!start };
  if (downgrades > 0 && allow) {
    out.allow_downgrade = true;
    out.reason = String(reason || '').trim();
  }
  return out;
}

// A refused create's details.fields as [{path, message}] (every field kilnd names).
export function refusedFields(details) {
  const out = (details && details.fields ? details.fields : []).map((f) => ({ path: f.path, message: f.message }));
  if (details && details.field && !out.some((f) => f.path === details.field)) out.push({ path: details.field, message: '' });
  return out;
}

// ---------------------------------------------------------------- a rollout's targets and marks

// A P90 pod time against kilnd's target (GET /targets rollouts.pod_p90_s): {ok, text}, or null
// without a finished pod or a target.
export function p90Verdict(p90s, count, targetS) {
  if (!count || targetS === null || targetS === undefined) return null;
  if (p90s <= targetS) return { ok: true, text: `within the target of ${fmtEta(targetS)}` };
  return { ok: false, text: `${fmtEta(p90s - targetS)} over the target of ${fmtEta(targetS)}` };
}

// Whether a rollout moves pods to older versions: its stored plan's downgrades, and the reason
// its created event carries (", a downgrade allowed because: ..."), or that it is a rollback.
// -> null, or {pods, reason, rollback_of}
export function downgradeMark(view, events) {
  const pods = ((view && view.plan && view.plan.downgrades) || []).length;
  const rollbackOf = (view && view.rollback_of) || null;
  if (!pods && !rollbackOf) return null;
  const created = (events || []).find((e) => e.kind === 'created' && !e.pod);
  const m = created && /, a downgrade allowed because: ([\s\S]*)$/.exec(created.message || '');
  return { pods, reason: m ? m[1] : '', rollback_of: rollbackOf };
}

// ---------------------------------------------------------------- rollback preview

// The pods a rollback of this rollout would put back, by kilnd's rule (RolloutService::rollback):
// the succeeded ones, and the failed or aborted ones whose upgrade run started.
export function rollbackPods(pods) {
  const changed = [];
  const touched = [];
  for (const p of pods || []) {
    if (p.phase === 'succeeded') changed.push(p.pod);
    else if ((p.phase === 'failed' || p.phase === 'aborted') && p.run_id) touched.push(p.pod);
  }
  return { changed, touched };
}

// What a rollback would do, from what the console can read: `view` and `pods` of the rollout,
// `others` [{id, bundle, created_at_ms, pods: [pod rows]}] the other rollouts. Mirrors kilnd:
// each pod's previous bundle is the bundle of its newest succeeded pod row elsewhere that
// finished before this rollout's first pod started; a later rollout (created after this one)
// that changed a pod (succeeded there, or its run started) makes kilnd refuse.
// -> {asked, pods, bundle, bundles, unknown, left, later: {pod, rollout} | null, refusal}
// (asked: how many pods it changed; unknown: changed pods with no earlier bundle, which make
// kilnd refuse; left: part-upgraded ones with none, which it leaves out; refusal: why kilnd
// will answer 409, or '' when it should not.)
export function rollbackPreview(view, pods, others) {
  const { changed, touched } = rollbackPods(pods);
  const asked = [...changed, ...touched];
  const out = { asked: asked.length, pods: [], bundle: null, bundles: [], unknown: [], left: [], later: null, refusal: '' };
  if (asked.length === 0) {
    out.refusal = `rollout ${view.id} changed no pod: nothing to roll back`;
    return out;
  }
  const starts = (pods || []).map((p) => p.started_at_ms).filter((t) => t !== null && t !== undefined);
  const startedAt = starts.length ? Math.min(...starts) : Infinity;
  const want = new Set(asked);
  const prev = {}; // pod -> {bundle, at}
  let later = null;
  for (const o of others || []) {
    if (o.id === view.id) continue;
    for (const p of o.pods || []) {
      if (!want.has(p.pod)) continue;
      if (p.phase === 'succeeded' && p.finished_at_ms !== null && p.finished_at_ms !== undefined && p.finished_at_ms < startedAt) {
        if (!prev[p.pod] || p.finished_at_ms > prev[p.pod].at) prev[p.pod] = { bundle: o.bundle, at: p.finished_at_ms };
      }
      if (o.created_at_ms > view.created_at_ms && (p.phase === 'succeeded' || p.run_id)) {
        if (!later || o.created_at_ms > later.created_at_ms || (o.created_at_ms === later.created_at_ms && p.pod < later.pod))
          later = { pod: p.pod, rollout: o.id, created_at_ms: o.created_at_ms };
      }
    }
  }
  if (later) {
    out.later = { pod: later.pod, rollout: later.rollout };
    out.refusal = `pod ${later.pod} was changed again by rollout ${later.rollout} after ${view.id}: roll back ${later.rollout} first`;
  }
  const bundles = new Set();
  for (const pod of changed) {
    if (prev[pod]) {
      bundles.add(prev[pod].bundle);
      out.pods.push(pod);
    } else out.unknown.push(pod);
  }
  if (out.unknown.length && !out.refusal)
    out.refusal = `no earlier bundle is known for pod ${out.unknown[0]} (it was never upgraded by a Kiln rollout before ${view.id})`;
  for (const pod of touched) {
    if (prev[pod]) {
      bundles.add(prev[pod].bundle);
      out.pods.push(pod);
    } else out.left.push(pod);
  }
  if (!out.pods.length && !out.refusal) out.refusal = `no earlier bundle is known for pod ${out.left[0]}`;
  out.bundles = [...bundles].sort();
  if (out.bundles.length === 1) out.bundle = out.bundles[0];
  else if (out.bundles.length > 1 && !out.refusal)
    out.refusal = `the changed pods came from ${out.bundles.length} different bundles: roll them back one rollout per bundle`;
  return out;
}

// Component versions before and after: `from` and `to` bundles ({components: [{kind,
// version}]}) -> [{kind, from, to}] by kind, in `from`'s order then `to`'s new kinds.
export function versionChanges(from, to) {
  const a = new Map(((from && from.components) || []).map((c) => [c.kind, c.version]));
  const b = new Map(((to && to.components) || []).map((c) => [c.kind, c.version]));
  const kinds = [...a.keys(), ...[...b.keys()].filter((k) => !a.has(k))];
  return kinds.map((kind) => ({ kind, from: a.has(kind) ? a.get(kind) : null, to: b.has(kind) ? b.get(kind) : null }));
}
