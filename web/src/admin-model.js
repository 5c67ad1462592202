// Pure helpers of the admin and shift views: who acted (token names), the audit feed's query
// and links, the capacity planner's inputs, token creation. No DOM here (node --test).

// Token ids as kilnd makes them (randomHex(6) in orchestrator/db): 12 lower-case hex digits.
export const TOKEN_ID_RE = /\b[0-9a-f]{12}\b/g;

// The name to show for an actor as stored: a token's name when `names` (Map id -> name) knows
// the id, else the actor itself (system actors such as "system", "kilnd", "agent:<host>").
export function actorLabel(actor, names) {
  if (!actor) return '';
  const n = names && names.get(actor);
  return n || actor;
}

// A text that names token ids ("aborted by 3f9a1c2b7d4e: bad NIC") with the known ones
// replaced by their token's name; unknown ids stay as they are.
export function nameActorsIn(text, names) {
  if (!text || !names || names.size === 0) return text || '';
  return String(text).replace(TOKEN_ID_RE, (id) => names.get(id) || id);
}

// True when `text` holds a token-like id that `names` does not know (the console then reloads
// the names: a token made since they were read).
export function hasUnknownIds(texts, names) {
  for (const t of texts) {
    if (!t) continue;
    for (const m of String(t).matchAll(TOKEN_ID_RE)) if (!names || !names.has(m[0])) return true;
  }
  return false;
}

// Action prefixes the audit feed offers (what kilnd writes: orchestrator/db writeAudit callers).
export const AUDIT_ACTION_PREFIXES = ['rollout.', 'host.', 'bundle.', 'run.', 'workflow.', 'token.', 'fleet.', 'agent.', 'interruption.', 'slurm.', 'scheduler.'];

// The audit feed's query from its form: {actor, action, target, since, until} where since and
// until come from datetime-local inputs (local time, "2026-12-02T10:00") and go out as UTC ISO.
// Returns {params, errors: {field: message}}.
export function auditParams(form) {
  const f = form || {};
  const params = {};
  const errors = {};
  for (const k of ['actor', 'action', 'target']) {
    const v = (f[k] || '').trim();
    if (v) params[k] = v;
  }
  if (params.action && !/^[A-Za-z0-9_-][A-Za-z0-9._-]*$/.test(params.action))
    errors.action = 'an action like rollout.create, or a prefix ending in "." like rollout.';
  for (const k of ['since', 'until']) {
    const v = (f[k] || '').trim();
    if (!v) continue;
    const t = new Date(v);
    if (Number.isNaN(t.getTime())) errors[k] = 'not a time';
    else params[k] = t.toISOString();
  }
  if (params.since && params.until && params.since >= params.until) errors.until = 'must be after since';
  return { params, errors };
}

// Where an audit record's target lives in the console, or null.
export function auditTargetHref(action, target) {
  if (!target) return null;
  const area = String(action || '').split('.')[0];
  const enc = encodeURIComponent;
  switch (area) {
    case 'host':
      return `#/hosts/${enc(target)}`;
    case 'rollout':
      return `#/rollouts/${enc(target.split('/')[0])}`;
    case 'run':
      return `#/runs/${enc(target)}`;
    case 'bundle':
      return `#/bundles/${enc(target)}`;
    case 'agent':
      return `#/hosts/${enc(target)}`;
    default:
      return null;
  }
}

// An audit record's details as one short line: "from=running reason=Xid 79" (objects as JSON).
export function detailsText(details) {
  if (!details || typeof details !== 'object') return '';
  return Object.entries(details)
    .filter(([, v]) => v !== '' && v !== null && v !== undefined)
    .map(([k, v]) => `${k}=${typeof v === 'object' ? JSON.stringify(v) : String(v)}`)
    .join(' ');
}

// A workflow change's audit record (workflow.put) for the feed: {from, to, source, added,
// removed, truncated, lines: [{kind: 'add' | 'remove' | 'hunk' | 'file' | 'same', text}]}; from is
// null for a new workflow. Records written before diffs were kept have no lines.
export function workflowChange(details) {
  const d = details && typeof details === 'object' ? details : {};
  const diff = typeof d.diff === 'string' ? d.diff : '';
  const lines = diff
    .split('\n')
    .filter((text, i, all) => text !== '' || i < all.length - 1)
    .map((text) => {
      if (text.startsWith('--- ') || text.startsWith('+++ ')) return { kind: 'file', text };
      if (text.startsWith('@@')) return { kind: 'hunk', text };
      if (text.startsWith('+')) return { kind: 'add', text };
      if (text.startsWith('-')) return { kind: 'remove', text };
      return { kind: 'same', text };
    });
  return {
    from: typeof d.previous_hash === 'string' ? d.previous_hash : null,
    to: typeof d.hash === 'string' ? d.hash : '',
    source: typeof d.source === 'string' ? d.source : '',
    added: Number.isInteger(d.lines_added) ? d.lines_added : lines.filter((l) => l.kind === 'add').length,
    removed: Number.isInteger(d.lines_removed) ? d.lines_removed : lines.filter((l) => l.kind === 'remove').length,
    truncated: d.diff_truncated === true,
    lines,
  };
}

// The capacity planner's query from its form {active_gpus, reserve_percent, platform}; the
// reserve is typed as a percentage (2 = 2 %) and sent as reserve_fraction. `known`: the
// platforms kilnd plans for (its last answer's `platforms`); until kilnd has answered, kilnd
// alone judges the platform. {params, errors}.
export function capacityParams(form, known) {
  const f = form || {};
  const params = {};
  const errors = {};
  const n = String(f.active_gpus ?? '').trim();
  if (!/^\d+$/.test(n) || Number(n) < 1 || Number(n) > 100000000) errors.active_gpus = 'a whole number of GPUs from 1 to 100,000,000';
  else params.active_gpus = Number(n);
  const r = String(f.reserve_percent ?? '').trim();
  if (r !== '') {
    const x = Number(r);
    if (!Number.isFinite(x) || x < 0 || x > 100) errors.reserve_percent = 'a percentage from 0 to 100';
    else params.reserve_fraction = Math.round(x * 1e4) / 1e6;
  }
  if (f.platform) {
    if (Array.isArray(known) && known.length && !known.includes(f.platform)) errors.platform = `one of ${known.join(', ')}`;
    else params.platform = f.platform;
  }
  return { params, errors };
}

export function fmtPercent(fraction, digits = 1) {
  if (typeof fraction !== 'number' || !Number.isFinite(fraction)) return '—';
  return `${(fraction * 100).toFixed(digits)} %`;
}

// Roles a token may have (api/openapi.yaml Role) and what each may do, for the create form.
export const TOKEN_ROLES = [
  { id: 'viewer', help: 'read everything but tokens' },
  { id: 'operator', help: 'rollouts, workflow runs, host actions' },
  { id: 'admin', help: 'tokens, fleet import, overrides, workflow changes' },
  { id: 'agent', help: "one host's agent endpoints only (needs the host)" },
  { id: 'enroll', help: 'agent registration only' },
];

// The POST /tokens body from the create form, or {errors}.
export function tokenBody(form) {
  const f = form || {};
  const name = (f.name || '').trim();
  const role = f.role || 'viewer';
  const host = (f.host || '').trim();
  const errors = {};
  if (!name) errors.name = 'give the token a name that says who or what uses it';
  if (!TOKEN_ROLES.some((r) => r.id === role)) errors.role = 'pick a role';
  if (role === 'agent' && !host) errors.host = 'an agent token needs its host';
  if (role !== 'agent' && host) errors.host = 'only agent tokens are bound to a host';
  if (Object.keys(errors).length) return { errors };
  const body = { role, name };
  if (role === 'agent') body.host = host;
  return { body };
}

// Tokens as the list shows them: revoked ones last unless hidden, agent tokens only when asked.
export function visibleTokens(tokens, { showRevoked = true, showAgents = false } = {}) {
  return (tokens || [])
    .filter((t) => (showAgents || t.role !== 'agent') && (showRevoked || !t.revoked_at))
    .slice()
    .sort((a, b) => (!!a.revoked_at - !!b.revoked_at) || (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0));
}

// The platform menu: the fleet's platforms, those kilnd plans for, and the chosen one, sorted.
export function capacityPlatforms(fleet, known, chosen) {
  const all = new Set([...(fleet || []), ...(known || [])]);
  if (chosen) all.add(chosen);
  return [...all].sort();
}
