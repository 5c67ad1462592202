// Rollouts: the list (state, bundle, progress), the New-rollout form (bundle, selector, policy
// with kilnd's defaults, a dry-run Preview of every wave and every excluded pod before
// anything starts, then Create or Create and start), and a rollout's page (state and halt
// reason, waves, per-pod timeline, why pods wait, P50/P90 and ETA, events, verbs with a
// confirmation naming the consequence, retry/skip per pod). Live by polling.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, fetchAll, qs } from './api.js';
import { Actor, ActorText } from './actors.jsx';
import { usePoll, useTicker } from './live.js';
import { ago, fmtInt, fmtTime, platformOptions, roleAtLeast } from './model.js';
import { href, navigate } from './route.js';
import {
  bundleLabel,
  createBody,
  createGate,
  downgradeMark,
  exclusionCounts,
  FINISHED_ROLLOUT_STATES,
  fmtEta,
  offeredVerbs,
  p90Verdict,
  PHASE_ORDER,
  planDowngrades,
  planSummary,
  podPhase,
  podSpans,
  podVerbs,
  POLICY_FIELDS,
  policyBody,
  policyDefaults,
  refusedFields,
  ROLLOUT_STATES,
  rolloutFieldErrors,
  rolloutProgress,
  rolloutState,
  rollbackPreview,
  selectorBody,
  timelineRange,
  versionChanges,
  waitClass,
  waitingByClass,
  WAIT_CLASSES,
} from './rollouts-model.js';
import { ConfirmDialog, ErrorBox, ErrorStatus, KeyValues, ToneChip, useFleetPlatforms, useTargets } from './ui.jsx';

const PAGE = 50;
const POD_ROWS = 200;
const LIVE_MS = 3000;

export function RolloutStateChip({ state }) {
  return <ToneChip info={rolloutState(state)} state={state} testid="rollout-state" />;
}
function PhaseChip({ phase }) {
  return <ToneChip info={podPhase(phase)} state={phase} testid="pod-phase" />;
}
const rolloutLink = (id) => `#/rollouts/${encodeURIComponent(id)}`;

// A bar of pod counts by phase, each segment with its own pattern and a text title.
function PhaseBar({ counts, total, label }) {
  const t = Math.max(1, total);
  return (
    <div class="progress" role="img" aria-label={label}>
      {PHASE_ORDER.filter((ph) => counts[ph] > 0).map((ph) => (
        <span class={`seg ${podPhase(ph).seg}`} style={{ width: `${(100 * counts[ph]) / t}%` }} title={`${counts[ph]} ${podPhase(ph).label.toLowerCase()}`} />
      ))}
    </div>
  );
}

// ---------------------------------------------------------------- list

export function RolloutsView({ route, role }) {
  const state = route.params.state || '';
  const [cursors, setCursors] = useState({ state, stack: [''] });
  const stack = cursors.state === state ? cursors.stack : [''];
  const cursor = stack[stack.length - 1];
  const [page, setPage] = useState(null);
  const [details, setDetails] = useState({}); // id -> view (counts, total, bundle)
  const [error, setError] = useState(null);

  usePoll(
    async (isCurrent) => {
      try {
        const r = await api(`/rollouts${qs({ state, limit: PAGE, cursor })}`);
        if (!isCurrent()) return;
        setPage({ state, cursor, ...r });
        setError(null);
        // Progress needs each rollout's view: active ones every poll, finished ones once.
        const want = r.items.filter((it) => !FINISHED_ROLLOUT_STATES.includes(it.state) || !details[it.id] || details[it.id].state !== it.state);
        const got = {};
        await Promise.all(
          want.map((it) =>
            api(`/rollouts/${encodeURIComponent(it.id)}`).then(
              (v) => (got[it.id] = v),
              () => undefined,
            ),
          ),
        );
        if (isCurrent() && Object.keys(got).length) setDetails((d) => ({ ...d, ...got }));
      } catch (e) {
        if (isCurrent()) setError(e);
        throw e;
      }
    },
    4000,
    [state, cursor],
  );

  const shown = page && page.state === state && page.cursor === cursor ? page : null;
  return (
    <div class="runs-view rollouts-view">
      <div class="fleet-head">
        <h1>Rollouts</h1>
        <p class="muted">Newest first</p>
        {roleAtLeast(role, 'operator') && (
          <a class="button primary push-right" href="#/rollouts/new" data-testid="new-rollout">
            New rollout
          </a>
        )}
      </div>
      <div class="filters" role="group" aria-label="Filters">
        <label class="filter" for="ro-state">
          <span>State</span>
          <select id="ro-state" value={state} onChange={(e) => navigate('/rollouts', { state: e.currentTarget.value }, true)}>
            <option value="">All</option>
            {Object.entries(ROLLOUT_STATES).map(([id, s]) => (
              <option value={id}>{s.label}</option>
            ))}
          </select>
        </label>
      </div>
      <ErrorBox error={error} what="Could not load the rollouts" />
      {!shown && !error && <p class="muted">Loading…</p>}
      {shown && shown.items.length === 0 && <p class="muted">{state ? 'No rollout in this state.' : 'No rollout yet.'}</p>}
      {shown && shown.items.length > 0 && (
        <section class="card">
          <table class="table" data-testid="rollouts">
            <thead>
              <tr>
                <th scope="col">Rollout</th>
                <th scope="col">Bundle</th>
                <th scope="col">State</th>
                <th scope="col">Progress</th>
                <th scope="col">Created</th>
                <th scope="col">By</th>
              </tr>
            </thead>
            <tbody>
              {shown.items.map((r) => {
                const v = details[r.id];
                const p = v ? rolloutProgress(v) : null;
                return (
                  <tr key={r.id} data-rollout={r.id}>
                    <td>
                      <a href={rolloutLink(r.id)}>{r.id}</a>
                    </td>
                    <td>{v ? bundleLabel(v.bundle) : r.bundle}</td>
                    <td>
                      <RolloutStateChip state={r.state} />
                      {r.state === 'halted' && r.halt_reason && <div class="small error">{r.halt_reason}</div>}
                    </td>
                    <td class="progress-cell" data-testid="rollout-progress">
                      {p ? (
                        <>
                          <PhaseBar counts={v.counts} total={v.total} label={p.text} />
                          <span class="small muted">{p.text}</span>
                        </>
                      ) : (
                        <span class="muted small">{r.pods} pods</span>
                      )}
                    </td>
                    <td title={fmtTime(r.created_at_ms)}>{ago(r.created_at_ms)}</td>
                    <td>
                      <Actor id={r.created_by} />
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </section>
      )}
      {(stack.length > 1 || (shown && shown.next_cursor)) && (
        <div class="buttons pager">
          <button type="button" disabled={stack.length <= 1} onClick={() => setCursors({ state, stack: stack.slice(0, -1) })}>
            ‹ Newer
          </button>
          <span class="muted small">page {stack.length}</span>
          <button type="button" disabled={!shown || !shown.next_cursor} onClick={() => setCursors({ state, stack: [...stack, shown.next_cursor] })}>
            Older ›
          </button>
        </div>
      )}
    </div>
  );
}

// ---------------------------------------------------------------- new rollout

function useBundles() {
  const [items, setItems] = useState(null);
  const [error, setError] = useState(null);
  const [gen, setGen] = useState(0);
  useEffect(() => {
    let live = true;
    api('/bundles').then(
      (r) => live && setItems(r.items),
      (e) => live && setError(e),
    );
    return () => {
      live = false;
    };
  }, [gen]);
  return [items, error, () => setGen((g) => g + 1)];
}

export function NewRolloutView({ route, role }) {
  const pre = route.params;
  const [bundles, bundlesError, reloadBundles] = useBundles();
  const [bundle, setBundle] = useState(pre.bundle || '');
  const [sel, setSel] = useState({
    sites: pre.sites || '',
    buildings: pre.buildings || '',
    platforms: pre.platforms ? pre.platforms.split(',') : [],
    pods: (pre.pods || '').split(',').filter(Boolean).join('\n'),
    labels: pre.labels || '',
  });
  const [policy, setPolicy] = useState(policyDefaults);
  const platforms = useFleetPlatforms();
  const [preview, setPreview] = useState(null); // {key, answer}
  const [busy, setBusy] = useState('');
  const [error, setError] = useState(null);

  const body = useMemo(() => ({ bundle, selector: selectorBody(sel), policy: policyBody(policy) }), [bundle, sel, policy]);
  const key = JSON.stringify(body);
  const current = preview && preview.key === key ? preview.answer : null;

  if (!roleAtLeast(role, 'operator'))
    return (
      <div>
        <h1>New rollout</h1>
        <p class="notice">Rollouts need the operator role; this token is a {role}.</p>
      </div>
    );

  const errs = error && error.status === 422 ? rolloutFieldErrors(error.details, error.message) : {};
  const fieldError = (k) =>
    errs[k] && (
      <span class="error small" role="alert">
        {errs[k]}
      </span>
    );
  const run = async (what, ack) => {
    if (!bundle) {
      setError({ message: 'Choose a bundle.', details: {} });
      return;
    }
    setBusy(what);
    setError(null);
    try {
      if (what === 'preview') {
        const answer = await api('/rollouts', { method: 'POST', body: { ...body, dry_run: true } });
        setPreview({ key, answer });
      } else {
        const r = await api('/rollouts', { method: 'POST', body: createBody(body, { start: what === 'start', ...ack }) });
        navigate(`/rollouts/${encodeURIComponent(r.id)}`, {});
        return;
      }
    } catch (e) {
      // A refused create is shown beside its buttons (with every field kilnd names), and the
      // form's fields still mark theirs.
      if (what !== 'preview') e.fromCreate = true;
      setError(e);
    }
    setBusy('');
  };
  const setP = (k, v) => setPolicy({ ...policy, [k]: v });
  const what = error && error.status === 409 ? 'Not possible now' : error && error.status === 422 ? 'Kilnd refused the rollout' : error && error.status ? 'Could not plan the rollout' : '';
  const chosen = (bundles || []).find((b) => b.id === bundle);
  return (
    <div class="start-run new-rollout">
      <nav class="crumbs" aria-label="Breadcrumb">
        <a href="#/rollouts">Rollouts</a> › new
      </nav>
      <h1>New rollout</h1>
      <form
        class="card form"
        data-testid="new-rollout-form"
        onSubmit={(e) => {
          e.preventDefault();
          run('preview');
        }}
      >
        <fieldset>
          <legend>Bundle</legend>
          <ErrorBox error={bundlesError} what="Could not load the bundles" />
          <label for="ro-bundle">Bundle (the versions to install, and the workflow that installs them)</label>
          <select id="ro-bundle" value={bundle} onChange={(e) => setBundle(e.currentTarget.value)}>
            <option value="">Choose…</option>
            {(bundles || []).map((b) => (
              <option value={b.id}>
                {bundleLabel(b)} · {b.platforms.join(', ')} · {b.id}
                {b.used ? ' (used)' : ''}
              </option>
            ))}
            {bundle && bundles && !chosen && <option value={bundle}>{bundle}</option>}
          </select>
          {fieldError('bundle')}
          {chosen && (
            <p class="muted small" data-testid="bundle-summary">
              {chosen.components.map((c) => `${c.kind} ${c.version}`).join(' · ')}
              {chosen.prerequisites.length > 0 && ` · needs ${chosen.prerequisites.map((p) => `${p.kind} ≥ ${p.min_version}`).join(', ')}`} · workflow{' '}
              {chosen.workflow}
            </p>
          )}
          <AddBundle
            onAdded={(b) => {
              reloadBundles();
              setBundle(b.id);
            }}
          />
        </fieldset>
        <fieldset>
          <legend>Pods (empty = any)</legend>
          <div class="params">
            <div class="param">
              <label for="ro-sites">Sites</label>
              <input id="ro-sites" type="text" placeholder="prn, ash" value={sel.sites} onInput={(e) => setSel({ ...sel, sites: e.currentTarget.value })} />
              {fieldError('selector:sites')}
            </div>
            <div class="param">
              <label for="ro-buildings">Buildings</label>
              <input id="ro-buildings" type="text" placeholder="prn-b01" value={sel.buildings} onInput={(e) => setSel({ ...sel, buildings: e.currentTarget.value })} />
              {fieldError('selector:buildings')}
            </div>
            <div class="param">
              <label for="ro-labels">Labels</label>
              <input id="ro-labels" type="text" placeholder="row=a, rack=3" value={sel.labels} onInput={(e) => setSel({ ...sel, labels: e.currentTarget.value })} />
              {fieldError('selector:labels')}
            </div>
            <div class="param" role="group" aria-labelledby="ro-platforms-label">
              <span id="ro-platforms-label">Platforms</span>
              <span class="checks-row">
                {platforms.length === 0 && sel.platforms.length === 0 && <span class="muted small">no pod in the fleet yet</span>}
                {platformOptions(platforms, sel.platforms).map((p) => (
                  <label class="inline">
                    <input
                      type="checkbox"
                      name="platform"
                      value={p}
                      checked={sel.platforms.includes(p)}
                      onChange={(e) =>
                        setSel({ ...sel, platforms: e.currentTarget.checked ? [...sel.platforms, p] : sel.platforms.filter((x) => x !== p) })
                      }
                    />{' '}
                    {p}
                  </label>
                ))}
              </span>
            </div>
          </div>
          <label for="ro-pods">Pods (ids, one a line or comma separated)</label>
          <textarea id="ro-pods" rows={2} spellcheck={false} value={sel.pods} onInput={(e) => setSel({ ...sel, pods: e.currentTarget.value })} />
          {fieldError('selector:pods')}
        </fieldset>
        <fieldset>
          <legend>Policy (kilnd's defaults shown)</legend>
          <div class="params">
            {POLICY_FIELDS.map((f) => (
              <div class="param" data-policy={f.name}>
                <label for={`pol-${f.name}`}>
                  {f.label} <span class="muted small">(default {f.default === '' ? 'none' : f.default})</span>
                </label>
                {f.type === 'choice' ? (
                  <select id={`pol-${f.name}`} value={policy[f.name]} onChange={(e) => setP(f.name, e.currentTarget.value)}>
                    {f.choices.map((c) => (
                      <option value={c}>{c}</option>
                    ))}
                  </select>
                ) : (
                  <input
                    id={`pol-${f.name}`}
                    type="text"
                    inputMode={f.type === 'int' || f.type === 'number' ? 'decimal' : undefined}
                    value={policy[f.name]}
                    onInput={(e) => setP(f.name, e.currentTarget.value)}
                    aria-invalid={errs[f.name] ? 'true' : undefined}
                  />
                )}
                <span class="muted small">{f.help}</span>
                {fieldError(f.name)}
              </div>
            ))}
          </div>
          {fieldError('policy')}
        </fieldset>
        {error && !(error.fromCreate && current) && (
          <div class="error-box" role="alert" data-testid="rollout-error">
            {what ? `${what}: ` : ''}
            {error.message}
            {error.status ? (
              <span class="muted small">
                {' '}
                ({error.status} {error.code})
              </span>
            ) : null}
          </div>
        )}
        <div class="buttons right">
          <a class="button" href="#/rollouts">
            Back
          </a>
          <button type="submit" class={current ? '' : 'primary'} disabled={!!busy || !bundle} data-testid="preview">
            {busy === 'preview' ? 'Planning…' : current ? 'Preview again' : 'Preview'}
          </button>
        </div>
      </form>
      {preview && !current && <p class="notice small">The form changed since the preview: preview again before creating the rollout.</p>}
      {current && (
        <PlanPreview
          key={preview.key}
          answer={current}
          busy={busy}
          error={error && error.fromCreate ? error : null}
          onCreate={(start, ack) => run(start ? 'start' : 'create', ack)}
        />
      )}
    </div>
  );
}

// Paste or upload a bundle file (YAML or JSON) and POST it.
function AddBundle({ onAdded }) {
  const [open, setOpen] = useState(false);
  const [text, setText] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  const [notice, setNotice] = useState('');
  if (!open)
    return (
      <p>
        <button type="button" class="link" onClick={() => setOpen(true)} data-testid="add-bundle">
          Add a bundle (paste or upload its YAML)…
        </button>
      </p>
    );
  const submit = async () => {
    setBusy(true);
    setError(null);
    try {
      const json = text.trim().startsWith('{');
      const b = await api('/bundles', { method: 'POST', raw: text, contentType: json ? 'application/json' : 'application/yaml' });
      setNotice(`Bundle ${bundleLabel(b)} is ${b.id}.`);
      setText('');
      setOpen(false);
      onAdded(b);
    } catch (e) {
      setError(e);
    }
    setBusy(false);
  };
  const errs = error && error.details && error.details.fields ? error.details.fields : [];
  return (
    <div class="add-bundle">
      <label for="bundle-text">Bundle file (YAML or JSON: name, version, platforms, workflow, components, prerequisites)</label>
      <textarea id="bundle-text" rows={10} class="mono" spellcheck={false} value={text} onInput={(e) => setText(e.currentTarget.value)} />
      <label class="small">
        or upload:{' '}
        <input
          type="file"
          accept=".yaml,.yml,.json,text/yaml,application/json"
          onChange={async (e) => {
            const f = e.currentTarget.files && e.currentTarget.files[0];
            if (f) setText(await f.text());
          }}
        />
      </label>
      {error && (
        <div class="error-box" role="alert">
          {error.message}
          {errs.length > 0 && (
            <ul class="reasons">
              {errs.map((f) => (
                <li>
                  <span class="mono">{f.path}</span>: {f.message}
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
      {notice && <p class="notice small">{notice}</p>}
      <div class="buttons">
        <button type="button" class="primary" disabled={busy || !text.trim()} onClick={submit} data-testid="add-bundle-submit">
          {busy ? 'Adding…' : 'Add bundle'}
        </button>
        <button type="button" onClick={() => setOpen(false)}>
          Cancel
        </button>
      </div>
    </div>
  );
}

function PlanPreview({ answer, busy, error, onCreate }) {
  const plan = answer.plan;
  const excl = exclusionCounts(plan.excluded);
  const pol = answer.policy || {};
  const down = planDowngrades(answer);
  const [allow, setAllow] = useState(false);
  const [reason, setReason] = useState('');
  const ack = { downgrades: down.count, allow, reason };
  const gate = createGate(answer, ack);
  return (
    <section class="card plan" aria-labelledby="plan-title" data-testid="plan" data-downgrades={String(down.count)}>
      <h2 id="plan-title">Preview: nothing has started</h2>
      {down.warnings.length > 0 && (
        <div class="error-box" role="alert" data-testid="plan-warnings">
          <strong>Warning:</strong>
          <ul class="reasons">
            {down.warnings.map((w) => (
              <li>{w}</li>
            ))}
          </ul>
        </div>
      )}
      <p data-testid="plan-summary">
        <strong>{planSummary(plan)}</strong> for {bundleLabel(answer.bundle)}.
        {Object.keys(excl).length > 0 && (
          <span class="muted">
            {' '}
            Excluded: {Object.entries(excl)
              .map(([k, n]) => `${n} ${k}`)
              .join(', ')}
            .
          </span>
        )}
      </p>
      <p class="muted small">
        Policy: canary {pol.canary_pods}, waves {(pol.waves || []).join(' → ')}, soak {pol.soak}, {pol.max_concurrent_pods} pods at once, capacity floor{' '}
        {pol.capacity_floor && pol.capacity_floor.max_percent_down !== undefined ? `${pol.capacity_floor.max_percent_down}%` : ''}
        {pol.capacity_floor && pol.capacity_floor.max_pods_down !== undefined ? ` ${pol.capacity_floor.max_pods_down} pods` : ''} per building, failure
        budget {pol.failure_budget && pol.failure_budget.pods !== undefined ? `${pol.failure_budget.pods} pods` : ''}
        {pol.failure_budget && pol.failure_budget.percent !== undefined ? ` ${pol.failure_budget.percent}%` : ''}, allocated pods: {pol.allocated}, order{' '}
        {pol.order}
        {pol.windows && pol.windows.length > 0 ? `; new pods only in ${pol.windows.join('; ')} (UTC)` : ''}.
      </p>
      <h3>Waves</h3>
      {plan.waves.length === 0 && <p class="muted">No pod needs this bundle in the selection.</p>}
      <ol class="waves-plan">
        {plan.waves.map((w) => (
          <li data-wave={w.index}>
            <strong>{w.name}</strong> <span class="muted small">({w.pods.length} pod{w.pods.length === 1 ? '' : 's'})</span>
            <div class="pod-list mono small">
              {w.pods.map((p) => (
                <span class="pod-id" data-pod={p}>
                  {p}
                </span>
              ))}
            </div>
          </li>
        ))}
      </ol>
      <h3>Excluded ({plan.excluded.length})</h3>
      {plan.excluded.length === 0 ? (
        <p class="muted">Every selected pod is in a wave.</p>
      ) : (
        <ExcludedTable excluded={plan.excluded} />
      )}
      {down.count > 0 && (
        <DowngradeAck
          down={down}
          eligible={plan.eligible}
          allow={allow}
          reason={reason}
          onAllow={setAllow}
          onReason={setReason}
        />
      )}
      {error && (
        <div class="error-box" role="alert" data-testid="create-error">
          {error.status === 409 ? 'Not possible now' : error.status === 422 ? 'Kilnd refused the rollout' : 'Could not create the rollout'}: {error.message}
          <ErrorStatus error={error} />
          {refusedFields(error.details).length > 0 && (
            <ul class="reasons" data-testid="create-error-fields">
              {refusedFields(error.details).map((f) => (
                <li data-field={f.path}>
                  <span class="mono">{f.path}</span>
                  {f.message ? `: ${f.message}` : ''}
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
      {gate.why && down.count > 0 && (
        <p class="muted small" data-testid="create-why">
          {gate.why}
        </p>
      )}
      <div class="buttons right">
        <button type="button" class={down.count ? 'danger' : ''} disabled={!!busy || !gate.enabled} onClick={() => onCreate(false, ack)} data-testid="create-rollout">
          {busy === 'create' ? 'Creating…' : gate.createLabel}
        </button>
        <button
          type="button"
          class={down.count ? 'danger' : 'primary'}
          disabled={!!busy || !gate.enabled}
          onClick={() => onCreate(true, ack)}
          data-testid="create-start-rollout"
        >
          {busy === 'start' ? 'Starting…' : gate.startLabel}
        </button>
      </div>
    </section>
  );
}

// The pods a plan would move back to older versions, and the operator's explicit consent:
// "Allow downgrade" and a reason (sent as allow_downgrade and reason; kilnd audits it).
function DowngradeAck({ down, eligible, allow, reason, onAllow, onReason }) {
  return (
    <section class="downgrade" aria-labelledby="downgrade-title" data-testid="downgrades">
      <h3 id="downgrade-title">
        Downgrades ({down.count} of {eligible} pod{eligible === 1 ? '' : 's'})
      </h3>
      <p>
        These pods run NEWER versions than this bundle: the rollout would move them back. To undo an upgrade, roll back the rollout that made it
        (its page, Roll back…); create this only if going back on purpose.
      </p>
      <PodReasonTable items={down.pods} testid="downgrade-pods" heading="What goes back" reasonTestid="downgrade-reason" reasonOf={(d) => d.reasons.join('; ')} />
      <label class="inline">
        <input type="checkbox" name="allow_downgrade" checked={allow} onChange={(e) => onAllow(e.currentTarget.checked)} data-testid="allow-downgrade" /> Allow
        downgrade: move {down.count} pod{down.count === 1 ? '' : 's'} to older versions
      </label>
      <label for="downgrade-reason">Reason (required; recorded in the audit log)</label>
      <input
        id="downgrade-reason"
        type="text"
        name="reason"
        maxLength={1000}
        value={reason}
        placeholder="e.g. NIC 28.45 drops links under load, INC-4411"
        onInput={(e) => onReason(e.currentTarget.value)}
        data-testid="downgrade-reason-input"
      />
    </section>
  );
}

function ExcludedTable({ excluded }) {
  return <PodReasonTable items={excluded} testid="excluded" heading="Why it is excluded" reasonTestid="exclusion-reason" reasonOf={(e) => e.reason} />;
}

// Pods of a plan with a reason each (excluded, downgraded), the first POD_ROWS then "Show all".
function PodReasonTable({ items, testid, heading, reasonTestid, reasonOf }) {
  const [all, setAll] = useState(false);
  const rows = all ? items : items.slice(0, POD_ROWS);
  return (
    <>
      <table class="table" data-testid={testid}>
        <thead>
          <tr>
            <th scope="col">Pod</th>
            <th scope="col">{heading}</th>
          </tr>
        </thead>
        <tbody>
          {rows.map((e) => (
            <tr data-pod={e.pod}>
              <td>
                <a href={href('/fleet', { pod: e.pod })}>{e.pod}</a>
              </td>
              <td data-testid={reasonTestid}>{reasonOf(e)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {items.length > rows.length && (
        <button type="button" class="link" onClick={() => setAll(true)}>
          Show all {items.length}
        </button>
      )}
    </>
  );
}

// ---------------------------------------------------------------- one rollout

export function RolloutView({ rolloutId, role }) {
  const [data, setData] = useState(null); // {id, view, pods, events}
  const [error, setError] = useState(null);
  const [dialog, setDialog] = useState(null); // {verb} | {pod, verb}
  const [busy, setBusy] = useState(false);
  const [dialogError, setDialogError] = useState('');
  const [reason, setReason] = useState(''); // the dialog's optional reason, sent with the verb
  const [notice, setNotice] = useState('');
  const [denied, setDenied] = useState(false);
  const now = useTicker(1000);
  const targets = useTargets();

  const shown = data && data.id === rolloutId ? data : null;
  const refresh = usePoll(
    async (isCurrent) => {
      try {
        const base = `/rollouts/${encodeURIComponent(rolloutId)}`;
        const [view, pods, events] = await Promise.all([api(base), api(`${base}/pods`), api(`${base}/events`)]);
        if (!isCurrent()) return;
        setData({ id: rolloutId, view, pods: pods.items, events: events.items, at: Date.now() });
        setError(null);
      } catch (e) {
        if (isCurrent()) setError(e);
        throw e;
      }
    },
    () => (shown && FINISHED_ROLLOUT_STATES.includes(shown.view.state) ? 15000 : LIVE_MS),
    [rolloutId],
  );

  const act = async () => {
    const d = dialog;
    setBusy(true);
    setDialogError('');
    const base = `/rollouts/${encodeURIComponent(rolloutId)}`;
    // kilnd records the reason after who acted, in the rollout's events and the audit log.
    const body = reason.trim() ? { reason: reason.trim() } : undefined;
    try {
      if (d.pod) {
        await api(`${base}/pods/${encodeURIComponent(d.pod)}/${d.verb}`, { method: 'POST', body });
        setNotice(`${d.pod}: ${d.verb === 'retry' ? 'back to pending' : 'skipped'}.`);
      } else {
        const r = await api(`${base}/${d.verb.id}`, { method: 'POST', body });
        if (d.verb.id === 'rollback') {
          setDialog(null);
          setBusy(false);
          navigate(`/rollouts/${encodeURIComponent(r.id)}`, {});
          return;
        }
        setNotice(`${rolloutId} is ${rolloutState(r.state).label.toLowerCase()}.`);
        setData((cur) => (cur && cur.id === rolloutId ? { ...cur, view: r } : cur));
      }
      setDialog(null);
      refresh();
    } catch (e) {
      if (e.status === 403) {
        setDenied(true);
        setDialog(null);
        setNotice(`Not allowed: ${e.message}`);
      } else setDialogError(e.status === 409 ? `Not possible now: ${e.message}` : e.message);
    }
    setBusy(false);
  };

  const canAct = !denied && roleAtLeast(role, 'operator');
  const view = shown ? shown.view : null;
  const verbs = canAct && view ? offeredVerbs(view.state, view.counts) : [];
  return (
    <div class="run-view rollout-view">
      <nav class="crumbs" aria-label="Breadcrumb">
        <a href="#/rollouts">Rollouts</a>
      </nav>
      <h1>
        {rolloutId} {view && <RolloutStateChip state={view.state} />}
        {view && <span class="muted small">{bundleLabel(view.bundle)}</span>}
        {verbs.length > 0 && (
          <span class="buttons push-right" data-testid="rollout-controls">
            {verbs.map((v) => (
              <button
                type="button"
                class={v.danger ? 'danger' : ''}
                data-verb={v.id}
                onClick={() => {
                  setReason('');
                  setDialog({ verb: v });
                }}
              >
                {v.label}…
              </button>
            ))}
          </span>
        )}
      </h1>
      <ErrorBox error={error} what={error && error.status === 404 ? 'No such rollout' : 'Could not load the rollout'} />
      {!shown && !error && <p class="muted">Loading…</p>}
      {notice && (
        <p class="notice" role="status">
          {notice}
        </p>
      )}
      {view && view.state === 'halted' && (
        <p class="error-box" data-testid="halt-reason">
          <strong>Halted:</strong> {view.halt_reason || 'no reason recorded'}. Resume retries the failed pods; skip the ones that cannot be fixed.
        </p>
      )}
      {shown && <DowngradeMark mark={downgradeMark(shown.view, shown.events)} />}
      {shown && (
        <RolloutDetail
          data={shown}
          now={now}
          targets={targets}
          canAct={canAct}
          onPodVerb={(pod, verb) => {
            setReason('');
            setDialog({ pod, verb });
          }}
        />
      )}
      {dialog && view && !dialog.pod && dialog.verb.id === 'rollback' && (
        <RollbackDialog
          view={view}
          pods={shown.pods}
          onDone={(id) => {
            setDialog(null);
            navigate(`/rollouts/${encodeURIComponent(id)}`, {});
          }}
          onCancel={() => setDialog(null)}
        />
      )}
      {dialog && view && (dialog.pod || dialog.verb.id !== 'rollback') && (
        <ConfirmDialog
          title={dialog.pod ? `${dialog.verb === 'retry' ? 'Retry' : 'Skip'} ${dialog.pod}?` : `${dialog.verb.label} ${rolloutId}?`}
          confirmLabel={dialog.pod ? (dialog.verb === 'retry' ? 'Retry pod' : 'Skip pod') : dialog.verb.confirm}
          danger={dialog.pod ? dialog.verb === 'skip' : dialog.verb.danger}
          busy={busy}
          error={dialogError}
          onConfirm={act}
          onCancel={() => {
            setDialog(null);
            setDialogError('');
          }}
        >
          <p>
            {bundleLabel(view.bundle)}: {rolloutProgress(view).text}.
          </p>
          <p data-testid="consequence">
            {dialog.pod
              ? dialog.verb === 'retry'
                ? 'The pod goes back to pending and is upgraded again (drain, install, validate) when the policy allows.'
                : 'The pod is left as it is and counts as finished; it keeps its current firmware.'
              : view.state === 'halted' && dialog.verb.haltedConsequence
                ? `${dialog.verb.consequence} ${dialog.verb.haltedConsequence}`
                : dialog.verb.consequence}
          </p>
          <label for="verb-reason">Reason (optional; recorded in the rollout's events and the audit log)</label>
          <input
            id="verb-reason"
            type="text"
            name="reason"
            maxLength={1000}
            value={reason}
            placeholder="e.g. CX7 28.43 drops links, INC-4411"
            onInput={(e) => setReason(e.currentTarget.value)}
          />
        </ConfirmDialog>
      )}
    </div>
  );
}

// A rollout that moves pods to older versions says so at the top of its page: a rollback, or
// a downgrade created with allow_downgrade and the reason given then.
function DowngradeMark({ mark }) {
  if (!mark) return null;
  return (
    <p class="notice downgrade-mark" data-testid="downgrade-mark" data-pods={String(mark.pods)}>
      <strong>Downgrade:</strong>{' '}
      {mark.rollback_of ? (
        <>
          this rollout rolls back <a href={rolloutLink(mark.rollback_of)}>{mark.rollback_of}</a>
          {mark.pods ? `, moving ${mark.pods} pod${mark.pods === 1 ? '' : 's'} to older versions` : ''}.
        </>
      ) : (
        <>
          this rollout moves {mark.pods} pod{mark.pods === 1 ? '' : 's'} to older versions, allowed on purpose
          {mark.reason ? (
            <>
              {' '}
              because: <q data-testid="downgrade-mark-reason">{mark.reason}</q>
            </>
          ) : (
            ''
          )}
          .
        </>
      )}
    </p>
  );
}

// Roll back…: what it would do before it is done. The bundle the pods return to and each
// component's version now and after, the dry run of the new rollout (POST /rollouts with
// dry_run over the pods kilnd would take, with this rollout's policy), what kilnd is expected
// to refuse; then kilnd's own answer (a 409 names the later rollout to roll back first).
function RollbackDialog({ view, pods, onDone, onCancel }) {
  const [preview, setPreview] = useState(null); // {pre, current, dry} | {error}
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [refused, setRefused] = useState(null);
  useEffect(() => {
    let live = true;
    (async () => {
      try {
        // The other rollouts and their pods: where each pod's previous bundle came from, and
        // whether a later rollout changed them since.
        const list = await fetchAll('/rollouts', {}, { limit: 200 });
        const others = await Promise.all(
          list
            .filter((r) => r.id !== view.id)
            .slice(0, 100)
            .map(async (r) => ({ id: r.id, bundle: r.bundle, created_at_ms: r.created_at_ms, pods: (await api(`/rollouts/${encodeURIComponent(r.id)}/pods`)).items })),
        );
        const pre = rollbackPreview(view, pods, others);
        const current = await api(`/bundles/${encodeURIComponent(view.bundle.id)}`);
        let dry = null;
        let dryError = null;
        if (pre.bundle && pre.pods.length) {
          try {
            dry = await api('/rollouts', { method: 'POST', body: { bundle: pre.bundle, selector: { pods: pre.pods }, policy: view.policy, dry_run: true } });
          } catch (e) {
            dryError = e;
          }
        }
        if (live) setPreview({ pre, current, dry, dryError });
      } catch (e) {
        if (live) setPreview({ error: e });
      }
    })();
    return () => {
      live = false;
    };
  }, [view.id]);

  const confirm = async () => {
    setBusy(true);
    setRefused(null);
    try {
      const r = await api(`/rollouts/${encodeURIComponent(view.id)}/rollback`, { method: 'POST', body: reason.trim() ? { reason: reason.trim() } : undefined });
      onDone(r.id);
      return;
    } catch (e) {
      setRefused(e);
    }
    setBusy(false);
  };
  const pre = preview && preview.pre;
  const dry = preview && preview.dry;
  const back = dry ? dry.bundle : null;
  const changes = preview && preview.current && back ? versionChanges(preview.current, back).filter((c) => c.from !== c.to) : [];
  return (
    <ConfirmDialog
      title={`Roll back ${view.id}?`}
      confirmLabel="Start the rollback"
      danger
      busy={busy || !preview}
      onConfirm={confirm}
      onCancel={onCancel}
    >
      <div data-testid="rollback-dialog">
        {!preview && <p class="muted">Working out what the rollback would do…</p>}
        {preview && preview.error && <ErrorBox error={preview.error} what="Could not work out the rollback" />}
        {pre && (
          <p data-testid="rollback-what">
            {pre.pods.length ? 'Rolls back' : 'Would roll back'} <strong>{bundleLabel(view.bundle)}</strong> ({view.bundle.id}) on{' '}
            {pre.pods.length || pre.asked} pod{(pre.pods.length || pre.asked) === 1 ? '' : 's'}
            {back ? (
              <>
                : they return to{' '}
                <strong data-testid="rollback-bundle">
                  {bundleLabel(back)}
                </strong>{' '}
                ({back.id}).
              </>
            ) : pre.bundle ? (
              <>
                : they return to <strong data-testid="rollback-bundle">{pre.bundle}</strong>.
              </>
            ) : (
              '.'
            )}{' '}
            A new rollout starts at once with this rollout's policy (drain, install, validate).
          </p>
        )}
        {changes.length > 0 && (
          <table class="table small" data-testid="rollback-versions">
            <thead>
              <tr>
                <th scope="col">Component</th>
                <th scope="col">Now ({bundleLabel(view.bundle)})</th>
                <th scope="col">After the rollback</th>
              </tr>
            </thead>
            <tbody>
              {changes.map((c) => (
                <tr data-kind={c.kind}>
                  <td>{c.kind}</td>
                  <td class="mono">{c.from || '—'}</td>
                  <td class="mono">{c.to || 'not in the bundle: left as it is'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        {dry && (
          <div data-testid="rollback-dry-run">
            <p>
              <strong>Dry run:</strong> {planSummary(dry.plan)}
              {dry.plan.excluded.length > 0 ? `; ${dry.plan.excluded.length} left out (${Object.entries(exclusionCounts(dry.plan.excluded)).map(([k, n]) => `${n} ${k}`).join(', ')})` : ''}.
            </p>
            <ol class="waves-plan small">
              {dry.plan.waves.map((w) => (
                <li data-wave={w.index}>
                  {w.name}: <span class="mono">{w.pods.join(', ')}</span>
                </li>
              ))}
            </ol>
          </div>
        )}
        {preview && preview.dryError && <ErrorBox error={preview.dryError} what="The dry run of the rollback failed" />}
        {pre && pre.left.length > 0 && (
          <p class="muted small">
            No earlier bundle is known for {pre.left.join(', ')} (upgrade started, not finished): {pre.left.length === 1 ? 'it is' : 'they are'} left as{' '}
            {pre.left.length === 1 ? 'it is' : 'they are'}.
          </p>
        )}
        {pre && pre.refusal && (
          <p class="error-box" data-testid="rollback-expected-refusal">
            kilnd is expected to refuse: {pre.refusal}.
            {pre.later && (
              <>
                {' '}
                <a href={rolloutLink(pre.later.rollout)}>Open {pre.later.rollout}</a>
              </>
            )}
          </p>
        )}
        <label for="rollback-reason">Reason (optional; recorded in the rollout's events and the audit log)</label>
        <input
          id="rollback-reason"
          type="text"
          name="reason"
          maxLength={1000}
          value={reason}
          placeholder="e.g. CX7 28.44 drops links, INC-4411"
          onInput={(e) => setReason(e.currentTarget.value)}
        />
        {refused && (
          <div class="error-box" role="alert" data-testid="rollback-refused">
            {refused.status === 409 ? 'kilnd refused the rollback' : 'Could not roll back'}: {refused.message}
            <ErrorStatus error={refused} />
            {refused.details && refused.details.rollout && (
              <>
                {' '}
                <a href={rolloutLink(refused.details.rollout)} data-testid="rollback-refused-link">
                  Open {refused.details.rollout}
                </a>
              </>
            )}
          </div>
        )}
      </div>
    </ConfirmDialog>
  );
}

function RolloutDetail({ data, now, canAct, onPodVerb, targets }) {
  const { view, pods, events } = data;
  const p = rolloutProgress(view);
  const d = view.pod_durations || {};
  const p90 = targets ? p90Verdict(d.p90_s, d.count, targets.rollouts.pod_p90_s) : null;
  const waiting = waitingByClass(view.waiting);
  const sel = view.selector || {};
  const selText = ['sites', 'buildings', 'platforms', 'pods']
    .filter((k) => sel[k] && sel[k].length)
    .map((k) => `${k}: ${sel[k].join(', ')}`)
    .concat(sel.labels && Object.keys(sel.labels).length ? [`labels: ${Object.entries(sel.labels).map(([k, v]) => `${k}=${v}`).join(', ')}`] : [])
    .join('; ');
  return (
    <>
      <div class="host-grid">
        <section class="card" aria-labelledby="ro-progress">
          <h2 id="ro-progress">Progress</h2>
          <PhaseBar counts={view.counts} total={view.total} label={p.text} />
          <p data-testid="rollout-progress">{p.text}</p>
          <ul class="counts">
            {PHASE_ORDER.map((ph) => (
              <li data-phase={ph}>
                <strong>{view.counts[ph] || 0}</strong> {podPhase(ph).label.toLowerCase()}
              </li>
            ))}
          </ul>
          <dl class="kv big-kv">
            <dt>P50 pod time</dt>
            <dd data-testid="p50">{d.count ? fmtEta(d.p50_s) : '—'}</dd>
            <dt>P90 pod time</dt>
            <dd data-testid="p90">{d.count ? fmtEta(d.p90_s) : '—'}</dd>
            <dt>ETA</dt>
            <dd data-testid="eta">
              {view.eta_s !== null && view.eta_s !== undefined
                ? `${fmtEta(view.eta_s)} (about ${fmtTime(Date.now() + view.eta_s * 1000)})`
                : FINISHED_ROLLOUT_STATES.includes(view.state)
                  ? 'finished'
                  : 'known once a pod has finished'}
            </dd>
          </dl>
          <p class="muted small">
            {d.count ? `From ${d.count} finished pod${d.count === 1 ? '' : 's'}.` : 'No pod has finished yet.'}
            {targets && (
              <span data-testid="p90-target">
                {' '}
                Target P90: {fmtEta(targets.rollouts.pod_p90_s)}
                {p90 ? (
                  <span class={`verdict ${p90.ok ? 'good' : 'error'}`}>
                    {' '}
                    <span aria-hidden="true">{p90.ok ? '✓ ' : '✗ '}</span>
                    {p90.text}
                  </span>
                ) : null}
                .
              </span>
            )}
          </p>
        </section>
        <section class="card" aria-labelledby="ro-about">
          <h2 id="ro-about">Rollout</h2>
          <KeyValues
            rows={[
              ['Bundle', `${bundleLabel(view.bundle)} (${view.bundle.id})`],
              ['Pods', selText || 'every pod'],
              [
                'Created',
                <>
                  {fmtTime(view.created_at_ms)} ({ago(view.created_at_ms)}) by <Actor id={view.created_by} />
                </>,
              ],
              ['Started', view.started_at_ms ? `${fmtTime(view.started_at_ms)} (${ago(view.started_at_ms)})` : 'not yet'],
              ['Finished', view.finished_at_ms ? fmtTime(view.finished_at_ms) : ''],
              ['Rollback of', view.rollback_of ? <a href={rolloutLink(view.rollback_of)}>{view.rollback_of}</a> : ''],
              ['Last halt', view.state !== 'halted' ? view.halt_reason : ''],
              [
                'Policy',
                `canary ${view.policy.canary_pods}, waves ${(view.policy.waves || []).join(' → ')}, soak ${view.policy.soak}, ${view.policy.max_concurrent_pods} at once, ${view.policy.max_rebooting_pods_per_building} rebooting per building${
                  view.policy.windows && view.policy.windows.length > 0 ? `; new pods only in ${view.policy.windows.join('; ')} (UTC)` : ''
                }`,
              ],
            ]}
          />
          {waiting.length > 0 && (
            <>
              <h3>Why pods wait</h3>
              <ul class="reasons" data-testid="waiting">
                {waiting.map((w) => (
                  <li data-wait={w.cls}>
                    <strong>{w.n}</strong> {w.cls}: {WAIT_CLASSES[w.cls] || ''}
                    {w.texts.length > 0 && <span class="muted small"> ({w.texts.join('; ')})</span>}
                  </li>
                ))}
              </ul>
            </>
          )}
        </section>
      </div>
      <section class="card" aria-labelledby="ro-waves">
        <h2 id="ro-waves">Waves</h2>
        <table class="table waves" data-testid="waves">
          <thead>
            <tr>
              <th scope="col">Wave</th>
              <th scope="col">State</th>
              <th scope="col">Pods</th>
              <th scope="col">Finished</th>
              <th scope="col" class="wide">Progress</th>
            </tr>
          </thead>
          <tbody>
            {view.waves.map((w) => {
              const counts = {};
              for (const pod of pods) if (pod.wave === w.index) counts[pod.phase] = (counts[pod.phase] || 0) + 1;
              return (
                <tr data-wave={w.index} class={w.state === 'current' ? 'row-current' : ''}>
                  <td>{w.name}</td>
                  <td>
                    <span class={`tag ${w.state === 'current' ? 'warn' : ''}`}>{w.state}</span>
                  </td>
                  <td>{w.pods}</td>
                  <td>{w.finished}</td>
                  <td>
                    <PhaseBar counts={counts} total={w.pods} label={`${w.finished} of ${w.pods} pods of ${w.name} finished`} />
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </section>
      <RolloutPods view={view} pods={pods} events={events} now={now} canAct={canAct} onPodVerb={onPodVerb} />
      <section class="card" aria-labelledby="ro-events">
        <h2 id="ro-events">Events</h2>
        {events.length === 0 ? (
          <p class="muted">No event yet.</p>
        ) : (
          <table class="table" data-testid="rollout-events">
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Pod</th>
                <th scope="col">What</th>
                <th scope="col">Detail</th>
              </tr>
            </thead>
            <tbody>
              {events.slice(0, 100).map((e) => (
                <tr data-kind={e.kind}>
                  <td title={fmtTime(e.at_ms)}>{ago(e.at_ms)}</td>
                  <td>{e.pod || <span class="muted">rollout</span>}</td>
                  <td>{e.kind}</td>
                  <td>
                    <ActorText text={e.message} />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </>
  );
}

const PHASE_FILTERS = ['', 'pending', 'draining', 'upgrading', 'validating', 'failed', 'succeeded', 'skipped', 'aborted'];

function RolloutPods({ view, pods, events, now, canAct, onPodVerb }) {
  const [phase, setPhase] = useState('');
  const [all, setAll] = useState(false);
  const counts = view.counts || {};
  const rows = phase ? pods.filter((p) => p.phase === phase) : pods;
  const drawn = all ? rows : rows.slice(0, POD_ROWS);
  const range = timelineRange(view, pods, now);
  const pct = (t) => (range ? (100 * (t - range.from)) / (range.to - range.from) : 0);
  return (
    <section class="card" aria-labelledby="ro-pods">
      <h2 id="ro-pods">Pods ({pods.length})</h2>
      <div class="buttons" role="group" aria-label="Show pods by phase">
        {PHASE_FILTERS.filter((s) => !s || counts[s]).map((s) => (
          <button type="button" class={phase === s ? 'on' : ''} aria-pressed={phase === s} onClick={() => setPhase(s)}>
            {s ? `${podPhase(s).label} (${counts[s]})` : `All (${pods.length})`}
          </button>
        ))}
      </div>
      <ul class="legend phase-legend" aria-label="Timeline phases">
        {['draining', 'upgrading', 'validating', 'succeeded', 'failed'].map((ph) => (
          <li>
            <span class="legend-item">
              <span class={`seg-swatch ${podPhase(ph).seg}`} aria-hidden="true" /> {podPhase(ph).label}
            </span>
          </li>
        ))}
        {range && (
          <li class="muted small">
            timeline {fmtTime(range.from)} → {view.finished_at_ms ? fmtTime(range.to) : 'now'}
          </li>
        )}
      </ul>
      <table class="table rollout-pods" data-testid="rollout-pods">
        <thead>
          <tr>
            <th scope="col">Pod</th>
            <th scope="col">Wave</th>
            <th scope="col">Phase</th>
            <th scope="col">Why / what</th>
            <th scope="col">Took</th>
            <th scope="col" class="wide">Timeline</th>
            <th scope="col">Runs</th>
            {canAct && <th scope="col">Actions</th>}
          </tr>
        </thead>
        <tbody>
          {drawn.map((p) => {
            const spans = podSpans(p, events, now);
            const verbs = canAct ? podVerbs(p.phase) : [];
            const took = p.duration_s !== null && p.duration_s !== undefined ? fmtEta(p.duration_s) : p.started_at_ms ? `${fmtEta((now - p.started_at_ms) / 1000)} so far` : '';
            return (
              <tr key={p.pod} data-pod={p.pod} data-phase={p.phase} class={p.phase === 'failed' ? 'row-bad' : ''}>
                <td>
                  <a href={href('/fleet', { pod: p.pod })}>{p.pod}</a>
                </td>
                <td>{p.wave === 0 ? 'canary' : p.wave}</td>
                <td>
                  <PhaseChip phase={p.phase} />
                  {p.attempt > 1 && <span class="tag">attempt {p.attempt}</span>}
                </td>
                <td data-testid="pod-why">
                  {p.waiting_reason && (
                    <span data-wait={waitClass(p.waiting_reason)}>
                      <span class="tag warn">{waitClass(p.waiting_reason)}</span> {p.waiting_reason}
                    </span>
                  )}
                  {p.message && <span class={p.phase === 'failed' ? 'error' : ''}> {p.message}</span>}
                </td>
                <td class="nowrap">{took}</td>
                <td>
                  <div class="gantt" role="img" aria-label={spans.map((s) => `${s.phase} ${fmtEta((s.to - s.from) / 1000)}`).join(', ') || 'not started'}>
                    {spans.map((s) => (
                      <span
                        class={`gantt-seg ${podPhase(s.phase).seg} ${s.mark ? 'mark' : ''}`}
                        style={{ left: `${pct(s.from)}%`, width: s.mark ? undefined : `${Math.max(0.5, pct(s.to) - pct(s.from))}%` }}
                        title={`${podPhase(s.phase).label}: ${fmtTime(s.from)}${s.mark ? '' : ` → ${s.open ? 'now' : fmtTime(s.to)} (${fmtEta((s.to - s.from) / 1000)})`}`}
                      />
                    ))}
                  </div>
                </td>
                <td class="small">
                  {p.run_id && <a href={`#/runs/${encodeURIComponent(p.run_id)}`}>{p.run_id}</a>}
                  {p.validation_run_id && (
                    <>
                      {' '}
                      <a href={`#/runs/${encodeURIComponent(p.validation_run_id)}`} title="validation run">
                        {p.validation_run_id}
                      </a>
                    </>
                  )}
                </td>
                {canAct && (
                  <td>
                    {verbs.map((v) => (
                      <button type="button" class="small-button" data-pod-verb={v} onClick={() => onPodVerb(p.pod, v)}>
                        {v === 'retry' ? 'Retry' : 'Skip'}
                      </button>
                    ))}
                  </td>
                )}
              </tr>
            );
          })}
        </tbody>
      </table>
      {rows.length > drawn.length && (
        <button type="button" class="link" onClick={() => setAll(true)}>
          Show all {fmtInt(rows.length)} pods
        </button>
      )}
    </section>
  );
}
