// Hosts view (#/hosts): every host as a table row, filtered by state, pod, building, label,
// reason and id prefix, sorted by a column, in keyset pages (GET /hosts); and the header's
// shortcuts to the hosts out of service (GET /hosts/counts).
import { useEffect, useState } from 'preact/hooks';
import { api, qs } from './api.js';
import {
  ariaSort,
  HOST_FILTER_KEYS,
  HOST_SORTS,
  hostsQuery,
  nextSort,
  pageBack,
  pageForward,
  parseSort,
  queryKey,
  shortcutItems,
  sortParam,
} from './hosts-model.js';
import { usePoll } from './live.js';
import { ago, fmtInt, fmtTime, HOST_STATES } from './model.js';
import { navigate } from './route.js';
import { ErrorBox, HostStateChip } from './ui.jsx';

const PAGE = 50;
const COUNTS_INTERVAL_MS = 10000;

// Text filters: typed, applied on Enter or when the field loses focus.
const TEXT_FILTERS = [
  { key: 'pod', label: 'Pod', placeholder: 'pod id' },
  { key: 'building', label: 'Building', placeholder: 'building id' },
  { key: 'label', label: 'Pod label', placeholder: 'key=value' },
  { key: 'reason', label: 'Reason contains', placeholder: 'e.g. xid' },
  { key: 'id_prefix', label: 'Host id starts with', placeholder: 'prn-b01-p0002-h0' },
];

export function HostsView({ route }) {
  const query = hostsQuery(route.params);
  const key = queryKey(query);
  const sort = parseSort(route.params.sort);
  const [cursors, setCursors] = useState({ key, stack: [''] });
  const stack = cursors.key === key ? cursors.stack : [''];
  const cursor = stack[stack.length - 1];
  const [page, setPage] = useState(null); // {key, cursor, items, next_cursor}
  const [error, setError] = useState(null);

  usePoll(
    async (isCurrent) => {
      try {
        const r = await api(`/hosts${qs({ ...query, limit: PAGE, cursor })}`);
        if (!isCurrent()) return;
        setPage({ key, cursor, ...r });
        setError(null);
      } catch (e) {
        if (isCurrent()) setError(e);
        throw e;
      }
    },
    5000,
    [key, cursor],
  );

  const setParam = (k, v) => navigate('/hosts', { ...route.params, [k]: v }, true);
  const sortBy = (col) => setParam('sort', sortParam(nextSort(sort, col)));
  const shown = page && page.key === key && page.cursor === cursor ? page : null;
  const filtering = HOST_FILTER_KEYS.some((k) => query[k]);
  return (
    <div class="hosts-view" data-testid="hosts-view">
      <div class="fleet-head">
        <h1>Hosts</h1>
        <p class="muted" data-testid="hosts-summary">
          {shown ? `${fmtInt(shown.items.length)} on page ${stack.length}${shown.next_cursor ? ', more follow' : ''}` : 'Loading…'}
        </p>
      </div>
      <div class="filters" role="group" aria-label="Filters">
        <label class="filter" for="h-state">
          <span>State</span>
          <select id="h-state" value={query.state || ''} onChange={(e) => setParam('state', e.currentTarget.value)}>
            <option value="">All</option>
            {Object.entries(HOST_STATES).map(([id, s]) => (
              <option value={id}>{s.label}</option>
            ))}
          </select>
        </label>
        {TEXT_FILTERS.map((f) => (
          <TextFilter key={f.key} spec={f} value={query[f.key] || ''} onChange={(v) => setParam(f.key, v)} />
        ))}
        {filtering && (
          <button class="link" type="button" onClick={() => navigate('/hosts', { sort: route.params.sort }, true)}>
            Clear filters
          </button>
        )}
      </div>
      <ErrorBox error={error} what="Could not load the hosts" />
      {shown && shown.items.length === 0 && <p class="muted">{filtering ? 'No host matches these filters.' : 'No hosts yet.'}</p>}
      {shown && shown.items.length > 0 && (
        <section class="card">
          <table class="table hosts-table" data-testid="hosts" data-sort={sortParam(sort) || 'id'}>
            <thead>
              <tr>
                {HOST_SORTS.map((c) => (
                  <th scope="col" aria-sort={ariaSort(sort, c.key)}>
                    <button type="button" class="link sort" data-sort={c.key} onClick={() => sortBy(c.key)}>
                      {c.label}
                      <span aria-hidden="true">{sort.key === c.key ? (sort.desc ? ' ▼' : ' ▲') : ''}</span>
                    </button>
                  </th>
                ))}
                <th scope="col">Rack / tray</th>
              </tr>
            </thead>
            <tbody>
              {shown.items.map((h) => (
                <tr key={h.id} data-host={h.id} data-state={h.state}>
                  <td>
                    <a href={`#/hosts/${encodeURIComponent(h.id)}`}>{h.id}</a>
                    {h.spare && <span class="tag">spare</span>}
                  </td>
                  <td>
                    <a href={`#/fleet?pod=${encodeURIComponent(h.pod)}`}>{h.pod}</a>
                  </td>
                  <td>
                    <HostStateChip state={h.state} />
                  </td>
                  <td title={fmtTime(h.state_since)} data-since={h.state_since}>
                    {ago(h.state_since)}
                  </td>
                  <td class="reason">{h.state_reason}</td>
                  <td class="muted">
                    {h.rack} / {h.tray}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      )}
      {(stack.length > 1 || (shown && shown.next_cursor)) && (
        <div class="buttons pager">
          <button type="button" data-page="prev" disabled={stack.length <= 1} onClick={() => setCursors({ key, stack: pageBack(stack) })}>
            ‹ Previous
          </button>
          <span class="muted small" data-testid="hosts-page">
            page {stack.length}
          </span>
          <button
            type="button"
            data-page="next"
            disabled={!shown || !shown.next_cursor}
            onClick={() => setCursors({ key, stack: pageForward(stack, shown.next_cursor) })}
          >
            Next ›
          </button>
        </div>
      )}
    </div>
  );
}

function TextFilter({ spec, value, onChange }) {
  const [text, setText] = useState(value);
  useEffect(() => setText(value), [value]);
  const id = `h-${spec.key}`;
  return (
    <form
      class="filter"
      onSubmit={(e) => {
        e.preventDefault();
        onChange(text.trim());
      }}
    >
      <label for={id}>{spec.label}</label>
      <input
        id={id}
        type="text"
        placeholder={spec.placeholder}
        value={text}
        onInput={(e) => setText(e.currentTarget.value)}
        onBlur={() => text.trim() !== value && onChange(text.trim())}
      />
    </form>
  );
}

// The header's shortcuts: failed, repair, quarantined and draining hosts, each a count and a
// link to the hosts view filtered by that state.
export function HostShortcuts() {
  const [counts, setCounts] = useState(null);
  usePoll(
    async (isCurrent) => {
      const c = await api('/hosts/counts');
      if (isCurrent()) setCounts(c);
    },
    COUNTS_INTERVAL_MS,
    [],
  );
  return (
    <nav class="shortcuts" aria-label="Hosts out of service" data-testid="host-shortcuts">
      {shortcutItems(counts).map((s) => (
        <a
          href={s.href}
          class={`shortcut${s.count ? ' shortcut-on' : ''}`}
          data-shortcut={s.state}
          data-count={s.count === null ? '' : String(s.count)}
          aria-label={`${s.label} hosts: ${s.count === null ? 'loading' : s.count}`}
          title={`${s.label} hosts`}
        >
          <span class="shortcut-label">{s.label}</span> <span class="shortcut-count">{s.count === null ? '…' : fmtInt(s.count)}</span>
        </a>
      ))}
    </nav>
  );
}
