// Fleet view: every pod as a heatmap cell, grouped by site and building (one canvas per
// building, so 13,900 pods cost ~50 canvases, not 13,900 DOM nodes), filters, legend, and
// the pod panel.
import { memo } from 'preact/compat';
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api } from './api.js';
import { cellAt, cellMetrics, LARGE_FLEET, columnsFor, drawBuilding, drawCell } from './heatmap.js';
import { usePoll } from './live.js';
import {
  countStates,
  heatmapPods,
  filterChoices,
  filterPods,
  fmtInt,
  platformOptions,
  groupPods,
  podState,
  POD_STATES,
  stateSummary,
} from './model.js';
import { navigate } from './route.js';
import { RunShortcuts } from './runs.jsx';
import { setSearchPods } from './search.jsx';
import { ErrorBox, EventTable, HostStateChip, KeyValues, PodStateChip } from './ui.jsx';
import {
  classesOf,
  classSummary,
  COLOUR_MODES,
  complianceCountsText,
  complianceMap,
  countClasses,
  complianceClass,
  downgradedComponents,
  hasReasons,
  healthClass,
  HOSTS_OUT_CLASS,
  STATE_CLASSES,
  styleFor,
} from './colour-model.js';
import { bundleLabel } from './rollouts-model.js';

// out=1: only pods with hosts out of service (the legend's "In service, hosts out" toggles it).
const FILTER_KEYS = ['site', 'building', 'platform', 'state', 'label', 'out'];
const COMPLIANCE_INTERVAL_MS = 10000;

// Timings for tests and bench-fleet-render.mjs (ms since navigation start).
const perf = (window.__kilnPerf = window.__kilnPerf || {});

// Polling every few seconds; a large fleet (13,900 pods in one answer) less often, and never
// keeping kilnd busy with this console more than a third of the time.
function fleetInterval(n, lastFetchMs) {
  return Math.max(n > 5000 ? 10000 : 4000, 2 * lastFetchMs);
}

export function FleetView({ route, role }) {
  const params = route.params;
  const filters = useMemo(() => {
    const f = {};
    for (const k of FILTER_KEYS) f[k] = params[k] || '';
    return f;
  }, [params.site, params.building, params.platform, params.state, params.label, params.out]);
  const podId = params.pod || '';
  const mode = COLOUR_MODES.some((c) => c.id === params.colour) ? params.colour : 'state';
  const bundleId = mode === 'compliance' ? params.bundle || '' : '';
  const [bundles, setBundles] = useState(null);
  const [compliance, setCompliance] = useState(null); // {bundle, map: Map pod -> entry}
  const [complianceError, setComplianceError] = useState(null);

  const [pods, setPods] = useState(null);
  const [progress, setProgress] = useState({ loaded: 0, total: 0 });
  const [error, setError] = useState(null);
  const countRef = useRef(0);
  const fetchMsRef = useRef(0);
  const rootRef = useRef(null);
  const announceRef = useRef(null);

  usePoll(
    async (isCurrent) => {
      try {
        const first = countRef.current === 0;
        const started = performance.now();
        if (first) perf.fetchStart = started;
        // One answer with every pod (GET /fleet/heatmap): at 13,900 pods, 14 keyset pages of
        // /pods cost round trips and a subquery per pod; this is one query and ~1 MB.
        const heat = await api('/fleet/heatmap');
        const items = heatmapPods(heat);
        if (first && isCurrent()) setProgress({ loaded: items.length, total: heat.count });
        fetchMsRef.current = performance.now() - started;
        if (!isCurrent()) return;
        if (first) perf.fetchEnd = performance.now();
        countRef.current = items.length || -1;
        perf.setAt = performance.now();
        setSearchPods(items);
        setPods(items);
        setError(null);
      } catch (e) {
        if (isCurrent()) setError(e);
        throw e;
      }
    },
    () => fleetInterval(countRef.current, fetchMsRef.current),
    [],
  );

  // Bundles for the compliance picker; the chosen bundle's compliance, polled (a rollout
  // changes it as pods finish).
  usePoll(
    async (isCurrent) => {
      if (mode !== 'compliance') return;
      const r = await api('/bundles');
      if (isCurrent()) setBundles(r.items);
    },
    30000,
    [mode],
  );
  usePoll(
    async (isCurrent) => {
      if (!bundleId) return;
      try {
        const r = await api(`/bundles/${encodeURIComponent(bundleId)}/compliance`);
        if (!isCurrent()) return;
        setCompliance({ bundle: bundleId, map: complianceMap(r), counts: r.counts, hostCounts: r.host_counts });
        setComplianceError(null);
      } catch (e) {
        if (isCurrent()) setComplianceError(e);
        throw e;
      }
    },
    COMPLIANCE_INTERVAL_MS,
    [bundleId],
  );
  const complianceShown = compliance && compliance.bundle === bundleId ? compliance : null;
  const styleOf = useMemo(
    () => styleFor(mode, complianceShown ? complianceShown.map : null),
    [mode, complianceShown],
  );

  const all = pods || [];
  const filtered = useMemo(() => filterPods(all, filters), [pods, filters]);
  const groups = useMemo(() => groupPods(filtered), [filtered]);
  const m = useMemo(() => cellMetrics(all.length), [all.length > LARGE_FLEET]);
  const classCounts = useMemo(() => countClasses(filtered, styleOf), [filtered, styleOf]);
  const choices = useMemo(() => filterChoices(all, filters.site), [pods, filters.site]);
  // An NVL72 pod is 72 GPUs; healthy_gpus counts those on hosts that can serve jobs.
  const healthy = useMemo(() => filtered.reduce((n, p) => n + (p.healthy_gpus || 0), 0), [filtered]);
  const gpus = filtered.length * 72;

  // After the building canvases drew (their layout effects run first): timings and counters.
  useLayoutEffect(() => {
    if (!pods || !rootRef.current) return;
    const now = performance.now();
    const seq = Number(rootRef.current.dataset.renderSeq || 0) + 1;
    rootRef.current.dataset.renderSeq = String(seq);
    if (!perf.firstRender) perf.firstRender = now;
    if (perf.setAt) {
      perf.lastCommitMs = now - perf.setAt; // data in -> every changed building redrawn
      if (!perf.firstCommitMs) perf.firstCommitMs = perf.lastCommitMs;
      perf.setAt = 0;
    }
    if (perf.filterStart) {
      perf.lastFilterMs = now - perf.filterStart;
      perf.filterStart = 0;
    }
  }, [groups, pods]);

  const setFilter = (k, v) => {
    perf.filterStart = performance.now();
    const next = { ...params, [k]: v };
    if (k === 'site') next.building = '';
    navigate('/fleet', next, true);
  };
  const clearFilters = () => {
    perf.filterStart = performance.now();
    navigate('/fleet', { pod: params.pod }, true);
  };
  const openPod = (id) => navigate('/fleet', { ...params, pod: id });
  const closePod = () => navigate('/fleet', { ...params, pod: '' });
  const announce = (text) => {
    if (announceRef.current) announceRef.current.textContent = text;
  };

  const filtering = FILTER_KEYS.some((k) => filters[k]);
  return (
    <div class={`fleet ${podId ? 'with-panel' : ''}`}>
      <section class="fleet-main" aria-labelledby="fleet-title">
        <div class="fleet-head">
          <h1 id="fleet-title">Fleet</h1>
          <p class="muted" data-testid="fleet-summary">
            {pods === null
              ? `Loading pods… ${fmtInt(progress.loaded)}${progress.total ? ` of ${fmtInt(progress.total)}` : ''}`
              : `${fmtInt(filtered.length)} ${filtering ? `of ${fmtInt(all.length)} ` : ''}pods · ${fmtInt(gpus)} GPUs (${fmtInt(healthy)} healthy)${
                  groups.length ? ` · ${groups.length} site${groups.length > 1 ? 's' : ''}` : ''
                }`}
          </p>
        </div>
        <Filters filters={filters} choices={choices} onChange={setFilter} onClear={clearFilters} />
        <ColourBy
          mode={mode}
          bundleId={bundleId}
          bundles={bundles}
          onChange={(next) => navigate('/fleet', { ...params, colour: next.colour === 'state' ? '' : next.colour, bundle: next.bundle ?? params.bundle }, true)}
        />
        {mode === 'state' ? (
          <Legend
            counts={classCounts}
            active={filters.state}
            outActive={!!filters.out}
            onToggle={(s) => setFilter('state', filters.state === s ? '' : s)}
            onToggleOut={() => setFilter('out', filters.out ? '' : '1')}
          />
        ) : (
          <ClassLegend mode={mode} counts={classCounts} />
        )}
        {mode === 'compliance' && complianceShown && complianceShown.counts && (
          <p class="muted small" data-testid="compliance-counts">
            Whole fleet: {complianceCountsText(complianceShown.counts) || 'no pod'} pods
            {complianceShown.hostCounts ? ` · hosts: ${complianceCountsText(complianceShown.hostCounts) || 'none'}` : ''}.
          </p>
        )}
        {mode === 'compliance' && complianceShown && complianceShown.counts && complianceShown.counts.needs_downgrade > 0 && (
          <p class="notice small" data-testid="compliance-downgrade">
            {fmtInt(complianceShown.counts.needs_downgrade)} pod{complianceShown.counts.needs_downgrade === 1 ? '' : 's'} run newer versions than {bundleId}: a
            rollout of it would move them back (a downgrade, not an upgrade).
          </p>
        )}
        {mode === 'compliance' && !bundleId && <p class="notice small">Choose a bundle to colour the pods by their compliance with it.</p>}
        <ErrorBox error={complianceError} what="Could not load the compliance" />
        <ErrorBox error={error} what="Could not load the pods" />
        <div ref={announceRef} class="sr-only" aria-live="polite" />
        <div
          class="heatmap"
          ref={rootRef}
          data-testid="heatmap"
          data-pods={pods === null ? '' : String(filtered.length)}
          data-total-pods={pods === null ? '' : String(all.length)}
        >
          {pods !== null && filtered.length === 0 && (
            <p class="muted">{all.length === 0 ? 'No pods yet: an admin imports a fleet file (POST /api/v1/fleet/import).' : 'No pod matches these filters.'}</p>
          )}
          {groups.map((site) => (
            <section class="site" key={site.site} aria-label={`Site ${site.site}`}>
              <h2>
                {site.site} <span class="muted small">{fmtInt(site.pods)} pods · {site.buildings.length} buildings</span>
              </h2>
              <div class="buildings">
                {site.buildings.map((b) => (
                  <Building
                    key={b.id}
                    b={b}
                    sig={signature(b.pods, styleOf)}
                    styleOf={styleOf}
                    classes={classesOf(mode)}
                    compliance={complianceShown ? complianceShown.map : null}
                    m={m}
                    selectedId={podId}
                    onOpen={openPod}
                    announce={announce}
                  />
                ))}
              </div>
            </section>
          ))}
        </div>
      </section>
      {podId && (
        <PodPanel
          podId={podId}
          role={role}
          onClose={closePod}
          compliance={complianceShown ? { bundle: bundleId, entry: complianceShown.map.get(podId) } : null}
        />
      )}
    </div>
  );
}

function signature(pods, styleOf) {
  let s = '';
  for (const p of pods) s += `${p.id}:${p.state}:${styleOf(p).id};`;
  return s;
}

// The "colour by" switch: state | compliance with a bundle | health. In the URL (colour,
// bundle), so a link shares the view.
function ColourBy({ mode, bundleId, bundles, onChange }) {
  return (
    <div class="filters colour-by" role="group" aria-label="Colour the pods by">
      <span class="filter">
        <span>Colour by</span>
        <span class="buttons seg-buttons">
          {COLOUR_MODES.map((c) => (
            <button type="button" class={mode === c.id ? 'on' : ''} aria-pressed={mode === c.id} data-colour={c.id} onClick={() => onChange({ colour: c.id })}>
              {c.label}
            </button>
          ))}
        </span>
      </span>
      {mode === 'compliance' && (
        <label class="filter" for="f-bundle">
          <span>Bundle</span>
          <select id="f-bundle" value={bundleId} onChange={(e) => onChange({ colour: 'compliance', bundle: e.currentTarget.value })}>
            <option value="">Choose…</option>
            {(bundles || []).map((b) => (
              <option value={b.id}>
                {bundleLabel(b)} ({b.platforms.join(', ')})
              </option>
            ))}
            {bundleId && bundles && !bundles.some((b) => b.id === bundleId) && <option value={bundleId}>{bundleId}</option>}
          </select>
        </label>
      )}
      {mode === 'health' && <span class="muted small">Healthy GPUs of each pod against the 64 a slice needs (72 with every spare).</span>}
    </div>
  );
}

function ClassLegend({ mode, counts }) {
  return (
    <ul class="legend" aria-label={`Pods by ${mode}`} data-testid="class-legend" data-mode={mode}>
      {classesOf(mode).map((c) => (
        <li data-class={c.id}>
          <span class="legend-item">
            <Swatch style={c} />
            <span class="legend-code">{c.short}</span>
            <span>{c.label}</span>
            <span class="count">{fmtInt(counts[c.id] || 0)}</span>
          </span>
        </li>
      ))}
    </ul>
  );
}

function Select({ id, label, value, options, onChange, format }) {
  return (
    <label class="filter" for={id}>
      <span>{label}</span>
      <select id={id} value={value} onChange={(e) => onChange(e.currentTarget.value)}>
        <option value="">All</option>
        {options.map((o) => (
          <option value={o}>{format ? format(o) : o}</option>
        ))}
        {value && !options.includes(value) && <option value={value}>{value}</option>}
      </select>
    </label>
  );
}

function Filters({ filters, choices, onChange, onClear }) {
  const [label, setLabel] = useState(filters.label);
  useLayoutEffect(() => setLabel(filters.label), [filters.label]);
  return (
    <div class="filters" role="group" aria-label="Filters">
      <Select id="f-site" label="Site" value={filters.site} options={choices.sites} onChange={(v) => onChange('site', v)} />
      <Select id="f-building" label="Building" value={filters.building} options={choices.buildings} onChange={(v) => onChange('building', v)} />
      <Select
        id="f-platform"
        label="Platform"
        value={filters.platform}
        options={platformOptions(choices.platforms, filters.platform)}
        onChange={(v) => onChange('platform', v)}
      />
      <Select
        id="f-state"
        label="State"
        value={filters.state}
        options={POD_STATES.map((s) => s.id)}
        format={(s) => podState(s).label}
        onChange={(v) => onChange('state', v)}
      />
      <form
        class="filter"
        onSubmit={(e) => {
          e.preventDefault();
          onChange('label', label.trim());
        }}
      >
        <label for="f-label">Label</label>
        <input
          id="f-label"
          type="text"
          placeholder="key=value"
          value={label}
          onInput={(e) => setLabel(e.currentTarget.value)}
          onBlur={() => label.trim() !== filters.label && onChange('label', label.trim())}
        />
      </form>
      {FILTER_KEYS.some((k) => filters[k]) && (
        <button class="link" type="button" onClick={onClear}>
          Clear filters
        </button>
      )}
    </div>
  );
}

function Swatch({ state, style, size = 18 }) {
  const st = style || podState(state);
  const ref = useRef(null);
  useLayoutEffect(() => {
    const c = ref.current;
    const dpr = window.devicePixelRatio || 1;
    c.width = size * dpr;
    c.height = size * dpr;
    const ctx = c.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    drawCell(ctx, 0, 0, size, st, false);
  }, [st.id, size]);
  return <canvas ref={ref} class="swatch" style={{ width: `${size}px`, height: `${size}px` }} aria-hidden="true" />;
}

// State mode: the pod states, and pods in service with hosts out (their own class and filter).
// counts: {class id -> pods} (colour-model.js stateClass).
function Legend({ counts, active, outActive, onToggle, onToggleOut }) {
  return (
    <ul class="legend" aria-label="Pod states (click to filter)">
      {STATE_CLASSES.map((s) => {
        const out = s === HOSTS_OUT_CLASS;
        const on = out ? outActive : active === s.id;
        return (
          <li>
            <button
              type="button"
              class={on ? 'on' : ''}
              aria-pressed={on}
              onClick={() => (out ? onToggleOut() : onToggle(s.id))}
              data-state={s.id}
              title={out ? 'In-service pods whose spares cover hosts out of service (failed, repair, quarantine, draining, maintenance, validating)' : undefined}
            >
              <Swatch style={s} />
              <span class="legend-code">{s.short}</span>
              <span>{s.label}</span>
              <span class="count">{fmtInt(counts[s.id] || 0)}</span>
            </button>
          </li>
        );
      })}
    </ul>
  );
}

const Building = memo(
  function Building({ b, m, selectedId, onOpen, announce, styleOf, classes, compliance }) {
    const ref = useRef(null);
    const [focus, setFocus] = useState(-1);
    const n = b.pods.length;
    const cols = columnsFor(n, m);
    const sel = selectedId ? b.pods.findIndex((p) => p.id === selectedId) : -1;
    const summary = styleOf ? classSummary(countClasses(b.pods, styleOf), classes) : stateSummary(countStates(b.pods));
    useLayoutEffect(() => {
      drawBuilding(ref.current, b.pods, cols, m, sel, focus, styleOf);
    });
    const podAt = (ev) => {
      const r = ref.current.getBoundingClientRect();
      const i = cellAt(ev.clientX - r.left, ev.clientY - r.top, n, cols, m);
      return i < 0 ? null : b.pods[i];
    };
    const describe = (p) => {
      const st = styleOf ? styleOf(p) : podState(p.state);
      const extra = hasReasons(st) ? ` (${((compliance && compliance.get(p.id)) || {}).reasons?.join('; ') || ''})` : '';
      return `${p.id}: ${st.label}${extra}, ${p.platform}`;
    };
    const move = (i) => {
      const j = Math.max(0, Math.min(n - 1, i));
      setFocus(j);
      announce(describe(b.pods[j]));
    };
    const onKey = (ev) => {
      const f = focus < 0 ? 0 : focus;
      const keys = { ArrowRight: f + 1, ArrowLeft: f - 1, ArrowDown: f + cols, ArrowUp: f - cols, Home: 0, End: n - 1 };
      if (ev.key in keys) {
        ev.preventDefault();
        move(keys[ev.key]);
      } else if (ev.key === 'Enter' || ev.key === ' ') {
        ev.preventDefault();
        onOpen(b.pods[f].id);
      }
    };
    return (
      <figure class="building">
        <figcaption>
          <strong>{b.id}</strong> <span class="muted small">{fmtInt(n)} pods</span>
          <span class="small bsum">{summary}</span>
        </figcaption>
        <canvas
          ref={ref}
          tabIndex={0}
          role="img"
          aria-label={`Building ${b.id}, ${n} pods: ${summary}. Arrow keys move between pods, Enter opens one.`}
          data-building={b.id}
          data-cells={String(n)}
          data-cols={String(cols)}
          data-size={String(m.size)}
          data-gap={String(m.gap)}
          onClick={(ev) => {
            const p = podAt(ev);
            if (p) onOpen(p.id);
          }}
          onMouseMove={(ev) => {
            const p = podAt(ev);
            const t = p ? `${describe(p)} · ${p.healthy_gpus ?? '?'} healthy GPUs` : '';
            if (ref.current.title !== t) ref.current.title = t;
            ref.current.style.cursor = p ? 'pointer' : 'default';
          }}
          onKeyDown={onKey}
          onFocus={(ev) => focus < 0 && ev.currentTarget.matches(':focus-visible') && move(sel >= 0 ? sel : 0)}
          onBlur={() => setFocus(-1)}
        />
      </figure>
    );
  },
  (a, b) => a.sig === b.sig && a.m === b.m && a.selectedId === b.selectedId && a.compliance === b.compliance,
);

function PodPanel({ podId, role, onClose, compliance }) {
  const [pod, setPod] = useState(null);
  const [events, setEvents] = useState([]);
  const [error, setError] = useState(null);
  usePoll(
    async (isCurrent) => {
      try {
        const p = await api(`/pods/${encodeURIComponent(podId)}`);
        if (!isCurrent()) return;
        setPod(p);
        setError(null);
        const pages = await Promise.all(
          p.hosts.map((h) => api(`/hosts/${encodeURIComponent(h.id)}/events?limit=5`).then((r) => r.items, () => [])),
        );
        if (!isCurrent()) return;
        setEvents(pages.flat().sort((a, b) => (a.at < b.at ? 1 : a.at > b.at ? -1 : b.id - a.id)).slice(0, 25));
      } catch (e) {
        if (isCurrent()) setError(e);
        throw e;
      }
    },
    4000,
    [podId],
  );
  const shown = pod && pod.id === podId ? pod : null;
  return (
    <aside class="panel" aria-labelledby="pod-title" data-testid="pod-panel" onKeyDown={(e) => e.key === 'Escape' && onClose()}>
      <div class="panel-head">
        <h2 id="pod-title">{podId}</h2>
        <button class="close" onClick={onClose} aria-label="Close the pod panel">
          ×
        </button>
      </div>
      <ErrorBox error={error} what="Could not load the pod" />
      {!shown && !error && <p class="muted">Loading…</p>}
      {shown && <PodDetail pod={shown} events={events} role={role} compliance={compliance} />}
    </aside>
  );
}

function PodDetail({ pod, events, role, compliance }) {
  const labels = Object.entries(pod.labels || {})
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');
  const trays = {};
  for (const t of pod.switch_trays || []) trays[t.rack] = (trays[t.rack] || 0) + 1;
  const versions = Object.entries(pod.component_versions || {}).sort(([a], [b]) => (a < b ? -1 : 1));
  return (
    <div class="pod-detail">
      <KeyValues
        rows={[
          ['State', <PodStateChip state={pod.state} />],
          ['Platform', pod.platform],
          ['Site / building', `${pod.site} / ${pod.building}`],
          ['Healthy GPUs', `${fmtInt(pod.healthy_gpus)} (64 needed for a slice) · ${healthClass(pod.healthy_gpus).label}`],
          compliance && [
            `Compliance with ${compliance.bundle}`,
            <span data-testid="pod-compliance">
              {complianceClass(compliance.entry).label}
              {compliance.entry && compliance.entry.reasons.length > 0 && `: ${compliance.entry.reasons.join('; ')}`}
              {downgradedComponents(compliance.entry).length > 0 && (
                <span class="error small" data-testid="pod-downgrade">
                  {' '}
                  (the bundle is older for{' '}
                  {downgradedComponents(compliance.entry)
                    .map((c) => `${c.kind} ${c.from.join('/')} → ${c.version}`)
                    .join(', ')}
                  )
                </span>
              )}
            </span>,
          ],
          ['Labels', labels],
          ['Racks', (pod.rack_ids || []).map((r) => `${r} (${trays[r] || 0} switch trays)`).join(', ')],
          ['Spares', (pod.spares || []).join(', ') || 'none'],
        ]}
      />
      <RunShortcuts role={role} pods={[pod.id]} />
      <h3>Hosts ({pod.hosts.length})</h3>
      <table class="table" data-testid="pod-hosts">
        <thead>
          <tr>
            <th scope="col">Host</th>
            <th scope="col">Rack</th>
            <th scope="col">Tray</th>
            <th scope="col">State</th>
          </tr>
        </thead>
        <tbody>
          {pod.hosts.map((h) => (
            <tr key={h.id} data-host={h.id}>
              <td>
                <a href={`#/hosts/${encodeURIComponent(h.id)}`}>{h.id}</a>
                {h.spare && <span class="tag">spare</span>}
              </td>
              <td>{h.rack}</td>
              <td>{h.tray}</td>
              <td>
                <HostStateChip state={h.state} />
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <h3>Component versions</h3>
      <table class="table">
        <thead>
          <tr>
            <th scope="col">Component</th>
            <th scope="col">Versions (count)</th>
          </tr>
        </thead>
        <tbody>
          {versions.map(([kind, vs]) => {
            const list = Object.entries(vs);
            return (
              <tr class={list.length > 1 ? 'mixed' : ''}>
                <td>
                  {kind}
                  {list.length > 1 && <span class="tag warn">mixed</span>}
                </td>
                <td>{list.map(([v, n]) => `${v} (${n})`).join(', ')}</td>
              </tr>
            );
          })}
        </tbody>
      </table>
      <h3>Recent host events</h3>
      {events.length === 0 ? <p class="muted">No events.</p> : <EventTable events={events} showHost />}
    </div>
  );
}
