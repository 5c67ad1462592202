// Bundles: the list (pick two to compare), a bundle's page (components, workflow, who made it
// and when, and the fleet's compliance with it per pod, needs_downgrade included), and the diff
// of two bundles per component kind (bundles-model.js compares versions as kilnd does).
import { useEffect, useState } from 'preact/hooks';
import { api, fetchAll } from './api.js';
import { Actor } from './actors.jsx';
import { COMPLIANCE_STATES, RELATION_TEXT, complianceState, compliancePods, complianceSummary, diffBundles } from './bundles-model.js';
import { ago, fmtTime } from './model.js';
import { href, navigate } from './route.js';
import { ErrorBox, KeyValues, ToneChip } from './ui.jsx';

const POD_ROWS = 100;
const bundleLink = (id) => `#/bundles/${encodeURIComponent(id)}`;
const label = (b) => `${b.name} ${b.version}`;

// Every bundle, newest first (GET /bundles read whole); reload() after a change.
function useBundleList() {
  const [state, setState] = useState({ items: null, error: null });
  const [gen, setGen] = useState(0);
  useEffect(() => {
    let live = true;
    fetchAll('/bundles').then(
      (items) => live && setState({ items, error: null }),
      (error) => live && setState({ items: null, error }),
    );
    return () => {
      live = false;
    };
  }, [gen]);
  return { ...state, reload: () => setGen((g) => g + 1) };
}

export function BundlesView({ route }) {
  const { items, error } = useBundleList();
  const [picked, setPicked] = useState([]);
  const toggle = (id) => setPicked((p) => (p.includes(id) ? p.filter((x) => x !== id) : [...p, id].slice(-2)));
  const compare = () => navigate('/bundles/diff', { a: picked[0], b: picked[1] });
  return (
    <div class="bundles-view">
      <div class="fleet-head">
        <h1>Bundles</h1>
        <p class="muted" data-testid="bundles-summary">
          {items ? `${items.length} bundle${items.length === 1 ? '' : 's'}` : error ? '' : 'Loading…'}
        </p>
        <div class="push-right buttons">
          <span class="muted small" aria-live="polite">
            {picked.length === 2 ? 'Two picked' : `Pick ${2 - picked.length} more to compare`}
          </span>
          <button type="button" class="primary" disabled={picked.length !== 2} onClick={compare} data-testid="compare">
            Compare
          </button>
        </div>
      </div>
      <ErrorBox error={error} what="Could not load the bundles" />
      {items && items.length === 0 && <p class="muted">No bundle yet (operators publish them with POST /bundles or kilnctl).</p>}
      {items && items.length > 0 && (
        <section class="card">
          <table class="table" data-testid="bundles">
            <thead>
              <tr>
                <th scope="col">
                  <span class="sr-only">Compare</span>
                </th>
                <th scope="col">Bundle</th>
                <th scope="col">Id</th>
                <th scope="col">Platforms</th>
                <th scope="col">Components</th>
                <th scope="col">Workflow</th>
                <th scope="col">Created</th>
                <th scope="col">By</th>
              </tr>
            </thead>
            <tbody>
              {items.map((b) => (
                <tr key={b.id} data-bundle={b.id}>
                  <td>
                    <input
                      type="checkbox"
                      aria-label={`Compare ${label(b)}`}
                      checked={picked.includes(b.id)}
                      onChange={() => toggle(b.id)}
                      data-testid="pick"
                    />
                  </td>
                  <td>
                    <a href={bundleLink(b.id)}>{label(b)}</a>
                    {b.used && <span class="tag">used</span>}
                  </td>
                  <td class="mono">{b.id}</td>
                  <td>{(b.platforms || []).join(', ')}</td>
                  <td>{(b.components || []).map((c) => c.kind).join(', ')}</td>
                  <td>{b.workflow}</td>
                  <td title={fmtTime(b.created_at)}>{ago(b.created_at)}</td>
                  <td data-testid="created-by">
                    <Actor id={b.created_by} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      )}
    </div>
  );
}

export function ComplianceChip({ state }) {
  return <ToneChip info={complianceState(state)} state={state} testid="compliance-state" />;
}

export function BundleView({ bundleId, route }) {
  const [bundle, setBundle] = useState(null);
  const [createdBy, setCreatedBy] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    let live = true;
    setBundle(null);
    setError(null);
    api(`/bundles/${encodeURIComponent(bundleId)}`).then(
      (b) => live && setBundle(b),
      (e) => live && setError(e),
    );
    // GET /bundles/{id} has no created_by; the list has it.
    fetchAll('/bundles').then(
      (items) => {
        const it = items.find((x) => x.id === bundleId);
        if (live && it) setCreatedBy(it.created_by);
      },
      () => {},
    );
    return () => {
      live = false;
    };
  }, [bundleId]);
  if (error)
    return (
      <div>
        <p>
          <a href="#/bundles">‹ Bundles</a>
        </p>
        <ErrorBox error={error} what={`Could not load bundle ${bundleId}`} />
      </div>
    );
  if (!bundle) return <p class="muted">Loading bundle {bundleId}…</p>;
  return (
    <div class="bundle-view" data-testid="bundle">
      <p>
        <a href="#/bundles">‹ Bundles</a>
      </p>
      <h1>
        {label(bundle)} <span class="muted mono small">{bundle.id}</span>
        {bundle.used && <span class="tag">used by a rollout</span>}
      </h1>
      <section class="card">
        <KeyValues
          rows={[
            ['Name', bundle.name],
            ['Version', bundle.version],
            ['Platforms', (bundle.platforms || []).join(', ')],
            ['Workflow', bundle.workflow],
            [
              'Created',
              <span data-testid="bundle-created">
                {fmtTime(bundle.created_at)} ({ago(bundle.created_at)}){createdBy ? ' by ' : ''}
                {createdBy && <Actor id={createdBy} />}
              </span>,
            ],
            ['ETag', <span class="mono small">{bundle.etag}</span>],
          ]}
        />
        <h2>Components</h2>
        <table class="table" data-testid="bundle-components">
          <thead>
            <tr>
              <th scope="col">Kind</th>
              <th scope="col">Version</th>
              <th scope="col">Artifact</th>
              <th scope="col">sha256</th>
            </tr>
          </thead>
          <tbody>
            {bundle.components.map((c) => (
              <tr data-kind={c.kind}>
                <td>{c.kind}</td>
                <td class="mono">{c.version}</td>
                <td class="mono small">{c.artifact}</td>
                <td class="mono small" title={c.sha256}>
                  {c.sha256.slice(0, 12)}…
                </td>
              </tr>
            ))}
          </tbody>
        </table>
        {bundle.prerequisites && bundle.prerequisites.length > 0 && (
          <>
            <h3>Prerequisites</h3>
            <ul>
              {bundle.prerequisites.map((p) => (
                <li>
                  {p.kind} at least <span class="mono">{p.min_version}</span>
                </li>
              ))}
            </ul>
          </>
        )}
        <p class="small">
          <a href={href('/bundles/diff', { a: bundle.id })}>Compare with another bundle</a> ·{' '}
          <a href={href('/rollouts/new', { bundle: bundle.id })}>Roll it out</a>
        </p>
      </section>
      <BundleCompliance bundleId={bundle.id} route={route} />
    </div>
  );
}

function BundleCompliance({ bundleId, route }) {
  const [data, setData] = useState(null);
  const [error, setError] = useState(null);
  const [gen, setGen] = useState(0);
  const state = route.params.state || '';
  useEffect(() => {
    let live = true;
    api(`/bundles/${encodeURIComponent(bundleId)}/compliance`).then(
      (d) => live && (setData(d), setError(null)),
      (e) => live && setError(e),
    );
    return () => {
      live = false;
    };
  }, [bundleId, gen]);
  const setState = (s) => navigate(route.path, { ...route.params, state: s }, true);
  const pods = data ? compliancePods(data.pods, state) : [];
  return (
    <section class="card" aria-labelledby="compliance-title" data-testid="compliance">
      <div class="fleet-head">
        <h2 id="compliance-title">Compliance</h2>
        <p class="muted" data-testid="compliance-summary">
          {data ? complianceSummary(data.counts) : error ? '' : 'Loading…'}
        </p>
        <button type="button" class="push-right" onClick={() => setGen((g) => g + 1)}>
          Refresh
        </button>
      </div>
      <ErrorBox error={error} what="Could not load the compliance" />
      {data && (
        <>
          <div class="buttons" role="group" aria-label="Show pods by compliance">
            <button type="button" class={state === '' ? 'on' : ''} aria-pressed={state === ''} onClick={() => setState('')}>
              All
            </button>
            {COMPLIANCE_STATES.map((s) => (
              <button
                type="button"
                class={state === s.id ? 'on' : ''}
                aria-pressed={state === s.id}
                onClick={() => setState(s.id)}
                data-count={s.id}
              >
                {s.label}: <strong>{data.counts[s.id] || 0}</strong> pods
              </button>
            ))}
          </div>
          <p class="muted small" data-testid="host-counts">
            Hosts: {data.host_counts.compliant} compliant, {data.host_counts.needs_upgrade} need an upgrade,{' '}
            {data.host_counts.needs_downgrade} need a downgrade, {data.host_counts.incompatible} incompatible. A downgrade moves a
            component to an older version: a rollout of this bundle to such pods needs allow_downgrade and a reason.
          </p>
          {pods.length === 0 ? (
            <p class="muted">No pod in this state.</p>
          ) : (
            <table class="table" data-testid="compliance-pods">
              <thead>
                <tr>
                  <th scope="col">Pod</th>
                  <th scope="col">Building</th>
                  <th scope="col">Platform</th>
                  <th scope="col">State</th>
                  <th scope="col">Hosts ok / up / down / incompatible</th>
                  <th scope="col">Why</th>
                </tr>
              </thead>
              <tbody>
                {pods.slice(0, POD_ROWS).map((p) => (
                  <tr key={p.pod} data-pod={p.pod} class={p.state === 'needs_downgrade' ? 'row-warn' : ''}>
                    <td>
                      <a href={href('/fleet', { pod: p.pod })}>{p.pod}</a>
                    </td>
                    <td>{p.building}</td>
                    <td>{p.platform}</td>
                    <td>
                      <ComplianceChip state={p.state} />
                    </td>
                    <td>
                      {p.hosts_compliant} / {p.hosts_needing_upgrade} / {p.hosts_needing_downgrade} / {p.hosts_incompatible}
                    </td>
                    <td class="small">{(p.reasons || []).slice(0, 3).join('; ')}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          {pods.length > POD_ROWS && (
            <p class="muted small">
              The first {POD_ROWS} of {pods.length} pods (worst first); pick a state above to narrow.
            </p>
          )}
        </>
      )}
    </section>
  );
}

export function BundleDiffView({ route }) {
  const { items, error } = useBundleList();
  const a = route.params.a || '';
  const b = route.params.b || '';
  const [docs, setDocs] = useState({});
  const [loadError, setLoadError] = useState(null);
  useEffect(() => {
    let live = true;
    setLoadError(null);
    Promise.all([a, b].map((id) => (id ? api(`/bundles/${encodeURIComponent(id)}`) : null))).then(
      ([da, db]) => live && setDocs({ a: da, b: db }),
      (e) => live && setLoadError(e),
    );
    return () => {
      live = false;
    };
  }, [a, b]);
  const pick = (which, id) => navigate('/bundles/diff', { ...route.params, [which]: id }, true);
  const d = docs.a && docs.b && docs.a.id === a && docs.b.id === b ? diffBundles(docs.a, docs.b) : null;
  const picker = (which, value) => (
    <label class="filter">
      Bundle {which.toUpperCase()}
      <select value={value} onChange={(e) => pick(which, e.currentTarget.value)} data-testid={`diff-${which}`}>
        <option value="">(pick one)</option>
        {(items || []).map((x) => (
          <option value={x.id}>
            {label(x)} ({x.id})
          </option>
        ))}
      </select>
    </label>
  );
  return (
    <div class="bundle-diff">
      <p>
        <a href="#/bundles">‹ Bundles</a>
      </p>
      <h1>Compare bundles</h1>
      <ErrorBox error={error || loadError} what="Could not load the bundles" />
      <div class="filters">
        {picker('a', a)}
        <button
          type="button"
          disabled={!a || !b}
          onClick={() => navigate('/bundles/diff', { a: b, b: a }, true)}
          aria-label="Swap A and B"
          data-testid="swap"
        >
          ⇄ Swap
        </button>
        {picker('b', b)}
      </div>
      {!d && (a && b ? <p class="muted">Loading…</p> : <p class="muted">Pick two bundles.</p>)}
      {d && (
        <section class="card" data-testid="bundle-diff">
          <p data-testid="diff-summary">
            <strong>{label(docs.b)}</strong> against <strong>{label(docs.a)}</strong>: {d.counts.newer} newer, {d.counts.same} the same,{' '}
            {d.counts.older} older{d.counts.only_a ? `, ${d.counts.only_a} only in A` : ''}
            {d.counts.only_b ? `, ${d.counts.only_b} only in B` : ''}. Versions compare as kilnd compares them.
          </p>
          <table class="table" data-testid="diff-rows">
            <thead>
              <tr>
                <th scope="col">Component</th>
                <th scope="col">A: {label(docs.a)}</th>
                <th scope="col">B: {label(docs.b)}</th>
                <th scope="col">B against A</th>
              </tr>
            </thead>
            <tbody>
              {d.rows.map((r) => (
                <tr data-kind={r.kind} data-relation={r.relation} class={r.relation === 'older' ? 'row-warn' : ''}>
                  <td>{r.kind}</td>
                  <td class="mono">{r.a ?? <span class="muted">—</span>}</td>
                  <td class="mono">{r.b ?? <span class="muted">—</span>}</td>
                  <td>
                    <RelationChip relation={r.relation} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
          {d.prerequisites.length > 0 && (
            <>
              <h3>Prerequisites (minimum versions)</h3>
              <table class="table" data-testid="diff-prerequisites">
                <tbody>
                  {d.prerequisites.map((r) => (
                    <tr data-kind={r.kind} data-relation={r.relation}>
                      <td>{r.kind}</td>
                      <td class="mono">{r.a ?? '—'}</td>
                      <td class="mono">{r.b ?? '—'}</td>
                      <td>
                        <RelationChip relation={r.relation} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </>
          )}
          <KeyValues
            rows={[
              ['Workflow', d.workflow.same ? d.workflow.a : `${d.workflow.a} → ${d.workflow.b}`],
              ['Platforms in both', d.platforms.both.join(', ') || 'none'],
              ['Only in A', d.platforms.onlyA.join(', ')],
              ['Only in B', d.platforms.onlyB.join(', ')],
            ]}
          />
        </section>
      )}
    </div>
  );
}

const RELATION_TONE = { newer: 'work', same: 'good', older: 'warn', only_a: 'off', only_b: 'off' };
function RelationChip({ relation }) {
  return <ToneChip info={{ label: RELATION_TEXT[relation], tone: RELATION_TONE[relation] }} state={relation} testid="relation" />;
}
