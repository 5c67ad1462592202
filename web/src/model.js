// Pure fleet-model helpers of the console: state vocabularies, filtering and grouping of pods.
// No DOM here, so `npm test` (node --test) covers it.

// Pod states (api/openapi.yaml Pod.state). Every state has a text label, a two-letter short
// label and a pattern, so a state never depends on colour alone.
export const POD_STATES = [
  { id: 'in_service', label: 'In service', short: 'OK', color: '#2e7d32', ink: '#ffffff', pattern: 'solid' },
  { id: 'degraded', label: 'Degraded', short: 'DG', color: '#f2b705', ink: '#1a1a1a', pattern: 'stripes' },
  { id: 'maintenance', label: 'Maintenance', short: 'MT', color: '#1f6fd1', ink: '#ffffff', pattern: 'bars' },
  { id: 'incoming', label: 'Incoming', short: 'IN', color: '#8e44ad', ink: '#8e44ad', pattern: 'hollow' },
  { id: 'down', label: 'Down', short: 'DN', color: '#c62828', ink: '#ffffff', pattern: 'cross' },
  { id: 'retired', label: 'Retired', short: 'RT', color: '#6b6b6b', ink: '#ffffff', pattern: 'slash' },
];
export const UNKNOWN_POD_STATE = { id: 'unknown', label: 'Unknown', short: '??', color: '#bdbdbd', ink: '#1a1a1a', pattern: 'dots' };
const POD_STATE_BY_ID = new Map(POD_STATES.map((s) => [s.id, s]));
export function podState(id) {
  return POD_STATE_BY_ID.get(id) || { ...UNKNOWN_POD_STATE, label: id || 'Unknown' };
}

// Host states (api/openapi.yaml Host.state), grouped by tone for chips.
export const HOST_STATES = {
  incoming: { label: 'Incoming', tone: 'new' },
  burn_in: { label: 'Burn-in', tone: 'work' },
  available: { label: 'Available', tone: 'good' },
  allocated: { label: 'Allocated', tone: 'good' },
  draining: { label: 'Draining', tone: 'work' },
  maintenance: { label: 'Maintenance', tone: 'work' },
  validating: { label: 'Validating', tone: 'work' },
  failed: { label: 'Failed', tone: 'bad' },
  repair: { label: 'Repair', tone: 'bad' },
  quarantine: { label: 'Quarantine', tone: 'warn' },
  retired: { label: 'Retired', tone: 'off' },
};
export function hostState(id) {
  return HOST_STATES[id] || { label: id || 'unknown', tone: 'off' };
}

// Host lifecycle actions (host_lifecycle.cc, in its table order): the console offers every one
// that GET /hosts/{id} allows now (allocate too: an operator can stand in for the scheduler).
// `confirm` is the button text in the confirmation dialog; `danger` styles it.
export const HOST_ACTIONS = [
  { id: 'allocate', label: 'Allocate', confirm: 'Allocate host', help: 'Mark the host as taken by a job (as the scheduler does).' },
  { id: 'drain', label: 'Drain', confirm: 'Drain host', help: 'Stop new jobs; the host goes to maintenance when empty.' },
  { id: 'undrain', label: 'Undrain', confirm: 'Undrain host', help: 'Cancel the drain; the host returns to available.' },
  { id: 'release', label: 'Release', confirm: 'Release host', help: 'Release the allocation; the host returns to available.' },
  { id: 'fail', label: 'Fail', confirm: 'Mark failed', danger: true, help: 'Take the host out of service as failed.' },
  { id: 'repair', label: 'Send to repair', confirm: 'Send to repair', help: 'Hand the failed host to repair.' },
  { id: 'repair_complete', label: 'Repair complete', confirm: 'Repair complete', help: 'Repair is done; the host goes to quarantine for validation.' },
  {
    id: 'quarantine',
    label: 'Quarantine',
    confirm: 'Quarantine host',
    danger: true,
    help: 'Pull the host (a lemon) into quarantine; a quarantine validation starts, and only a pass returns it to the pool.',
  },
  { id: 'retire', label: 'Retire', confirm: 'Retire host', danger: true, help: 'Retire the host for good (terminal).' },
];
export const OVERRIDE_TARGETS = Object.keys(HOST_STATES);

const ROLE_RANK = { viewer: 1, operator: 2, admin: 3 };
export function roleAtLeast(role, needed) {
  return (ROLE_RANK[role] || 0) >= ROLE_RANK[needed];
}

// The actions to offer for a host: every one its state allows now (GET /hosts/{id}
// allowed_actions, in that order), only to operators and up. The admin override has its own
// control. An action this console does not know yet is offered under its own name.
export function offeredActions(role, allowed) {
  if (!roleAtLeast(role, 'operator')) return [];
  const out = [];
  for (const id of allowed || []) {
    if (id === 'override' || out.some((a) => a.id === id)) continue;
    const known = HOST_ACTIONS.find((a) => a.id === id);
    if (known) out.push(known);
    else {
      const label = id.replace(/_/g, ' ').replace(/^./, (c) => c.toUpperCase());
      out.push({ id, label, confirm: label, help: `The "${id}" lifecycle action.` });
    }
  }
  return out;
}

// GET /fleet/heatmap ({count, columns, rows}) -> pod objects {id, site, building, platform,
// state, healthy_gpus, labels}, whatever order the columns come in; unknown columns are kept.
export function heatmapPods(doc) {
  const cols = Array.isArray(doc && doc.columns) ? doc.columns : [];
  const rows = Array.isArray(doc && doc.rows) ? doc.rows : [];
  const out = new Array(rows.length);
  for (let r = 0; r < rows.length; r++) {
    const row = rows[r];
    const p = {};
    for (let c = 0; c < cols.length; c++) p[cols[c]] = row[c];
    if (!p.labels) p.labels = {};
    out[r] = p;
  }
  return out;
}

// The platforms of the fleet from GET /fleet/heatmap's platform column, sorted; [] without one.
export function heatmapPlatforms(doc) {
  const i = Array.isArray(doc && doc.columns) ? doc.columns.indexOf('platform') : -1;
  if (i < 0 || !Array.isArray(doc.rows)) return [];
  const set = new Set();
  for (const row of doc.rows) if (row[i]) set.add(row[i]);
  return [...set].sort(byText);
}

// A platform menu's choices: the fleet's platforms, and the chosen one even when the fleet has
// none of it (a link from elsewhere), so the menu shows what the view is filtered by.
export function platformOptions(platforms, current) {
  const out = [...(platforms || [])];
  for (const c of [].concat(current || [])) if (c && !out.includes(c)) out.push(c);
  return out;
}

// filters: {site, building, platform, state, label ("key=value" or "key"), out (any value:
// only pods with hosts out of service, hosts_out > 0)}; empty = any.
export function filterPods(pods, f) {
  let labelKey = '';
  let labelValue = null;
  if (f.label) {
    const eq = f.label.indexOf('=');
    labelKey = (eq < 0 ? f.label : f.label.slice(0, eq)).trim();
    labelValue = eq < 0 ? null : f.label.slice(eq + 1).trim();
  }
  if (!f.site && !f.building && !f.platform && !f.state && !labelKey && !f.out) return pods;
  return pods.filter((p) => {
    if (f.site && p.site !== f.site) return false;
    if (f.building && p.building !== f.building) return false;
    if (f.platform && p.platform !== f.platform) return false;
    if (f.state && p.state !== f.state) return false;
    if (f.out && !(Number(p.hosts_out || 0) > 0)) return false;
    if (labelKey) {
      const v = p.labels ? p.labels[labelKey] : undefined;
      if (v === undefined || (labelValue !== null && v !== labelValue)) return false;
    }
    return true;
  });
}

const byText = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

// [{site, pods, buildings: [{id, site, pods: [...] (sorted by id)}]}], sites and buildings sorted.
export function groupPods(pods) {
  const sites = new Map();
  for (const p of pods) {
    let site = sites.get(p.site);
    if (!site) sites.set(p.site, (site = new Map()));
    let b = site.get(p.building);
    if (!b) site.set(p.building, (b = []));
    b.push(p);
  }
  return [...sites.keys()].sort(byText).map((siteId) => {
    const bmap = sites.get(siteId);
    const buildings = [...bmap.keys()].sort(byText).map((id) => {
      const list = bmap.get(id);
      list.sort((a, b) => byText(a.id, b.id));
      return { id, site: siteId, pods: list };
    });
    return { site: siteId, buildings, pods: buildings.reduce((n, b) => n + b.pods.length, 0) };
  });
}

// {state id -> count}
export function countStates(pods) {
  const out = {};
  for (const p of pods) out[p.state] = (out[p.state] || 0) + 1;
  return out;
}

// The distinct values the filter menus offer, from the whole (unfiltered) fleet.
export function filterChoices(pods, site) {
  const sites = new Set();
  const buildings = new Set();
  const platforms = new Set();
  for (const p of pods) {
    sites.add(p.site);
    if (!site || p.site === site) buildings.add(p.building);
    platforms.add(p.platform);
  }
  return {
    sites: [...sites].sort(byText),
    buildings: [...buildings].sort(byText),
    platforms: [...platforms].sort(byText),
  };
}

// A short human summary: "280 in service, 8 degraded".
export function stateSummary(counts) {
  return POD_STATES.filter((s) => counts[s.id])
    .map((s) => `${counts[s.id]} ${s.label.toLowerCase()}`)
    .concat(Object.keys(counts).filter((k) => !POD_STATES.some((s) => s.id === k)).map((k) => `${counts[k]} ${k}`))
    .join(', ');
}

export function fmtInt(n) {
  return Number(n || 0).toLocaleString('en-US');
}

// "12 s ago", "3 min ago", "2 h ago", "4 d ago"
export function ago(iso, now = Date.now()) {
  if (!iso) return 'never';
  const t = typeof iso === 'number' ? iso : Date.parse(iso);
  if (Number.isNaN(t)) return String(iso);
  const s = Math.max(0, Math.round((now - t) / 1000));
  if (s < 60) return `${s} s ago`;
  if (s < 3600) return `${Math.floor(s / 60)} min ago`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ago`;
  return `${Math.floor(s / 86400)} d ago`;
}

export function fmtTime(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return d.toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

// Search ids case-insensitively, by prefix, with the numbers of an id compared as numbers
// ("PRN-B01-P02" and "p05" find prn-b01-p0002 and ...-p0005): normalises "p0005" to "p5".
function normId(s) {
  return s.toLowerCase().replace(/\d+/g, (n) => n.replace(/^0+(?=\d)/, ''));
}

// The ids of `items` ({id}) matching `query`, best first, at most `limit`:
//   0 the id exactly (any case), 1 the id with numbers compared as numbers,
//   2 a dash-separated tail of the id exactly ("p05", "b01-p0002"),
//   3 a prefix of the id, 4 a prefix of the id or of a tail with numbers as numbers.
// Returns [{id, rank}] sorted by rank then id.
export function findIds(items, query, limit = 20) {
  const q = (query || '').trim().toLowerCase();
  if (!q) return [];
  const nq = normId(q);
  const out = [];
  for (const it of items) {
    const id = it.id;
    const low = id.toLowerCase();
    const n = normId(id);
    let rank = -1;
    if (low === q) rank = 0;
    else if (n === nq) rank = 1;
    else {
      const tails = [];
      for (let i = n.indexOf('-'); i >= 0; i = n.indexOf('-', i + 1)) tails.push(n.slice(i + 1));
      if (tails.includes(nq)) rank = 2;
      else if (low.startsWith(q)) rank = 3;
      else if (n.startsWith(nq) || tails.some((t) => t.startsWith(nq))) rank = 4;
    }
    if (rank >= 0) out.push({ id, rank });
  }
  out.sort((a, b) => a.rank - b.rank || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  return out.slice(0, limit);
}

// The one id a search should open directly: the only match, or the only best match when that
// is an exact one (ranks 0 to 2). Otherwise '' (show the list).
export function pickFound(found) {
  if (found.length === 1) return found[0].id;
  if (found.length > 1 && found[0].rank <= 2 && found[1].rank > found[0].rank) return found[0].id;
  return '';
}
