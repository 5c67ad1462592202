// Pure helpers of the hosts view, the header's host shortcuts and search, and the host page's
// actions (issue 18). No DOM here: `npm test` (node --test) covers it.

import { hostState } from './model.js';

// The filters of the hosts view (route params = GET /hosts query parameters).
export const HOST_FILTER_KEYS = ['state', 'pod', 'building', 'label', 'reason', 'id_prefix'];

// Sortable columns of the hosts view: GET /hosts `sort` (a leading '-' for descending).
export const HOST_SORTS = [
  { key: 'id', label: 'Host' },
  { key: 'pod', label: 'Pod' },
  { key: 'state', label: 'State' },
  { key: 'state_since', label: 'Since' },
  { key: 'reason', label: 'Reason' },
];
const SORT_KEYS = new Set(HOST_SORTS.map((s) => s.key));

// "-state_since" -> {key: 'state_since', desc: true}; anything unknown -> id ascending.
export function parseSort(text) {
  const t = String(text || '');
  const desc = t.startsWith('-');
  const key = desc ? t.slice(1) : t;
  return SORT_KEYS.has(key) ? { key, desc } : { key: 'id', desc: false };
}

// The `sort` parameter for {key, desc}: '' for the default (id ascending), so URLs stay short.
export function sortParam(s) {
  if (!s || !SORT_KEYS.has(s.key) || (s.key === 'id' && !s.desc)) return '';
  return `${s.desc ? '-' : ''}${s.key}`;
}

// Clicking a column header: the same column flips its direction; another column starts
// ascending, except "since", which starts with the newest change first.
export function nextSort(current, key) {
  if (current.key === key) return { key, desc: !current.desc };
  return { key, desc: key === 'state_since' };
}

// aria-sort of a column header.
export function ariaSort(current, key) {
  if (current.key !== key) return 'none';
  return current.desc ? 'descending' : 'ascending';
}

// Route params -> the GET /hosts query: every filter given (trimmed), and the sort.
export function hostsQuery(params) {
  const q = {};
  for (const k of HOST_FILTER_KEYS) {
    const v = String((params && params[k]) || '').trim();
    if (v) q[k] = v;
  }
  const sort = sortParam(parseSort(params && params.sort));
  if (sort) q.sort = sort;
  return q;
}

// The key of a query (filters + sort): a new key starts the paging over.
export function queryKey(q) {
  return [...HOST_FILTER_KEYS, 'sort'].map((k) => q[k] || '').join('|');
}

// Keyset paging state: a stack of the cursors of the pages seen ('' = the first page).
export function pageForward(stack, nextCursor) {
  return nextCursor ? [...stack, nextCursor] : stack;
}
export function pageBack(stack) {
  return stack.length > 1 ? stack.slice(0, -1) : stack;
}

// The header's shortcuts: hosts out of service for a fault or on their way out, one click away.
export const SHORTCUT_STATES = ['failed', 'repair', 'quarantine', 'draining'];

// GET /hosts/counts -> [{state, label, count, href}] in SHORTCUT_STATES order (count 0 when
// the answer lacks the state; null counts while loading).
export function shortcutItems(counts) {
  const by = (counts && counts.by_state) || null;
  return SHORTCUT_STATES.map((state) => ({
    state,
    label: hostState(state).label,
    count: by ? Number(by[state] || 0) : null,
    href: `#/hosts?state=${encodeURIComponent(state)}`,
  }));
}

// The search box: what to do with the pods found (findIds, model.js) and the hosts that start
// with the query (GET /hosts?id_prefix=). Returns {open: {kind, id}} to go straight to one
// thing, or {list: [{kind, id}]} to show, or {none: true}.
//   - one pod picked by pickFound (an exact or the only match) wins;
//   - a host whose id is the query (any case) is opened;
//   - a single match of either kind is opened;
//   - otherwise pods first, then hosts.
export function searchOutcome(query, podPick, pods, hosts) {
  const q = String(query || '').trim().toLowerCase();
  if (podPick) return { open: { kind: 'pod', id: podPick } };
  const exactHost = (hosts || []).find((h) => h.id.toLowerCase() === q);
  if (exactHost) return { open: { kind: 'host', id: exactHost.id } };
  const list = [...(pods || []).map((p) => ({ kind: 'pod', id: p.id })), ...(hosts || []).map((h) => ({ kind: 'host', id: h.id, state: h.state }))];
  if (list.length === 1) return { open: list[0] };
  if (list.length === 0) return { none: true };
  return { list };
}

// The running quarantine validation of a host among its runs (GET /workflow-runs?host=), or
// null: starting another one beside it doubles the soak and confuses the verdict.
export const QUARANTINE_WORKFLOW = 'quarantine-validation';
export function runningValidation(runs) {
  for (const r of runs || []) if (r.workflow === QUARANTINE_WORKFLOW && r.state === 'running') return r;
  return null;
}

// Host actions that start a quarantine validation run on the host (routes_fleet.cc).
export function startsValidation(actionId) {
  return actionId === 'quarantine' || actionId === 'repair_complete';
}
