// The capacity planner, API tokens (admin only) and the audit feed (operator and admin).
import { useEffect, useState } from 'preact/hooks';
import { api, fetchAll, qs } from './api.js';
import { Actor, reloadActorNames, useActorNames } from './actors.jsx';
import {
  AUDIT_ACTION_PREFIXES,
  capacityPlatforms,
  TOKEN_ROLES,
  auditParams,
  auditTargetHref,
  capacityParams,
  detailsText,
  fmtPercent,
  tokenBody,
  visibleTokens,
  workflowChange,
} from './admin-model.js';
import { ago, fmtInt, fmtTime, roleAtLeast } from './model.js';
import { navigate } from './route.js';
import { ConfirmDialog, ErrorBox, ErrorStatus, useFleetPlatforms } from './ui.jsx';

// A view a role may not use: said plainly, with what to do instead.
function Refused({ what, need, role, testid }) {
  return (
    <section class="card" data-testid={testid}>
      <h1>{what}</h1>
      <p>
        {what} is for {need === 'admin' ? 'admins' : 'operators and admins'}; you are signed in with a{role === 'admin' || role === 'operator' ? 'n' : ''}{' '}
        <strong>{role}</strong> token.
      </p>
      <p class="muted">Ask an admin for a token with that role if your work needs it.</p>
    </section>
  );
}

// ---------------------------------------------------------------- capacity plan

export function CapacityView({ route }) {
  const p = route.params;
  const [form, setForm] = useState({
    active_gpus: p.active_gpus || '',
    reserve_percent: p.reserve_fraction ? String(Math.round(Number(p.reserve_fraction) * 1e6) / 1e4) : '2',
    platform: p.platform || 'clemente',
  });
  const [plan, setPlan] = useState(null);
  const [error, setError] = useState(null);
  const [errors, setErrors] = useState({});
  const [busy, setBusy] = useState(false);
  // kilnd's own list comes with each plan; the fleet's platforms before the first one.
  const [known, setKnown] = useState(null);
  const fleetPlatforms = useFleetPlatforms();
  const ask = async (f) => {
    const { params, errors: bad } = capacityParams(f, known);
    setErrors(bad);
    if (Object.keys(bad).length) return;
    setBusy(true);
    try {
      const answer = await api(`/capacity/plan${qs(params)}`);
      setPlan(answer);
      if (Array.isArray(answer.platforms)) setKnown(answer.platforms);
      setError(null);
      navigate('/capacity', params, true);
    } catch (e) {
      setError(e);
      setPlan(null);
    } finally {
      setBusy(false);
    }
  };
  useEffect(() => {
    if (p.active_gpus) ask(form);
  }, []);
  const set = (k) => (e) => setForm({ ...form, [k]: e.currentTarget.value });
  return (
    <div class="capacity-view">
      <h1>Capacity plan</h1>
      <p class="muted">
        For N GPUs a job keeps busy: the NVL72 pods to provision in 64-GPU slices of 72-GPU domains, plus whole racks in reserve, and
        how many healthy pods of the platform there are now.
      </p>
      <form
        class="card filters"
        noValidate
        onSubmit={(e) => {
          e.preventDefault();
          ask(form);
        }}
        data-testid="capacity-form"
      >
        <label class="filter">
          Active GPUs
          <input
            type="number"
            name="active_gpus"
            min="1"
            max="100000000"
            step="1"
            required
            value={form.active_gpus}
            onInput={set('active_gpus')}
            aria-invalid={errors.active_gpus ? 'true' : undefined}
            aria-describedby={errors.active_gpus ? 'cap-err-active' : undefined}
          />
          {errors.active_gpus && (
            <span class="error small" id="cap-err-active">
              {errors.active_gpus}
            </span>
          )}
        </label>
        <label class="filter">
          Reserve (% of slices, whole racks)
          <input
            type="number"
            name="reserve_percent"
            min="0"
            max="100"
            step="0.1"
            value={form.reserve_percent}
            onInput={set('reserve_percent')}
            aria-invalid={errors.reserve_percent ? 'true' : undefined}
          />
          {errors.reserve_percent && <span class="error small">{errors.reserve_percent}</span>}
        </label>
        <label class="filter">
          Platform
          <select name="platform" value={form.platform} onChange={set('platform')}>
            {capacityPlatforms(fleetPlatforms, known, form.platform).map((x) => (
              <option value={x}>{x}</option>
            ))}
          </select>
        </label>
        <button type="submit" class="primary" disabled={busy}>
          {busy ? 'Planning…' : 'Plan'}
        </button>
      </form>
      <ErrorBox error={error} what="kilnd refused the plan" />
      {plan && (
        <section class="card" data-testid="capacity-plan">
          <p class="plan-headline" data-testid="capacity-headline">
            {fmtInt(plan.active_gpus)} active GPUs on {plan.platform}: <strong>{fmtInt(plan.pods)} pods</strong> ({fmtInt(plan.racks)} racks,{' '}
            {fmtInt(plan.gpus)} GPUs), {fmtPercent(plan.overhead_fraction)} overhead.
          </p>
          <dl class="kv">
            <dt>64-GPU slices</dt>
            <dd data-testid="cap-slices">{fmtInt(plan.slices)}</dd>
            <dt>Pods to provision</dt>
            <dd data-testid="cap-pods">{fmtInt(plan.pods)}</dd>
            <dt>Racks</dt>
            <dd>{fmtInt(plan.racks)}</dd>
            <dt>GPUs</dt>
            <dd>{fmtInt(plan.gpus)}</dd>
            <dt>Spare GPUs</dt>
            <dd>{fmtInt(plan.spare_gpus)}</dd>
            <dt>Overhead</dt>
            <dd>
              {fmtPercent(plan.overhead_fraction)} = {fmtPercent(plan.geometry_fraction)} slice geometry (8 of 72) +{' '}
              {fmtPercent(plan.reserve_fraction)} reserve (asked: {fmtPercent(plan.requested_reserve_fraction)})
            </dd>
            <dt>Healthy {plan.platform} pods now</dt>
            <dd data-testid="cap-healthy">{fmtInt(plan.healthy_pods_now)}</dd>
            <dt>Shortfall</dt>
            <dd data-testid="cap-shortfall" class={plan.pod_shortfall > 0 ? 'error' : ''}>
              {plan.pod_shortfall > 0 ? `${fmtInt(plan.pod_shortfall)} pods short` : 'none: enough healthy pods now'}
            </dd>
          </dl>
        </section>
      )}
    </div>
  );
}

// ---------------------------------------------------------------- tokens

export function TokensView({ role }) {
  if (role !== 'admin') return <Refused what="Tokens" need="admin" role={role} testid="tokens-refused" />;
  return <TokensAdmin />;
}

function TokensAdmin() {
  const [tokens, setTokens] = useState(null);
  const [error, setError] = useState(null);
  const [gen, setGen] = useState(0);
  const [showRevoked, setShowRevoked] = useState(true);
  const [showAgents, setShowAgents] = useState(false);
  const [created, setCreated] = useState(null); // the answer of POST /tokens: its secret, once
  const [revoking, setRevoking] = useState(null); // {token, busy, error}
  useEffect(() => {
    let live = true;
    fetchAll('/tokens').then(
      (items) => live && (setTokens(items), setError(null)),
      (e) => live && setError(e),
    );
    return () => {
      live = false;
    };
  }, [gen]);
  const shown = visibleTokens(tokens, { showRevoked, showAgents });
  const revoke = async () => {
    const t = revoking.token;
    setRevoking({ ...revoking, busy: true, error: '' });
    try {
      await api(`/tokens/${encodeURIComponent(t.id)}`, { method: 'DELETE' });
      setRevoking(null);
      setGen((g) => g + 1);
      reloadActorNames();
    } catch (e) {
      setRevoking({ token: t, busy: false, error: `${e.message}${e.status ? ` (${e.status} ${e.code})` : ''}` });
    }
  };
  return (
    <div class="tokens-view">
      <div class="fleet-head">
        <h1>Tokens</h1>
        <p class="muted" data-testid="tokens-summary">
          {tokens ? `${tokens.filter((t) => !t.revoked_at).length} active, ${tokens.filter((t) => t.revoked_at).length} revoked` : ''}
        </p>
        <label class="push-right small">
          <input type="checkbox" checked={showRevoked} onChange={(e) => setShowRevoked(e.currentTarget.checked)} /> Show revoked
        </label>
        <label class="small">
          <input type="checkbox" checked={showAgents} onChange={(e) => setShowAgents(e.currentTarget.checked)} /> Show agent tokens
        </label>
      </div>
      <NewToken
        onCreated={(t) => {
          setCreated(t);
          setGen((g) => g + 1);
          reloadActorNames();
        }}
      />
      {created && (
        <section class="card secret-once" role="status" data-testid="token-secret">
          <h2>Token “{created.name}” created</h2>
          <p>
            Copy it now: <strong>kilnd shows the secret only this once</strong> (it keeps only a hash).
          </p>
          <p>
            <code class="secret" data-testid="secret">
              {created.token}
            </code>{' '}
            <button
              type="button"
              onClick={() => navigator.clipboard && navigator.clipboard.writeText(created.token).catch(() => {})}
            >
              Copy
            </button>
          </p>
          <button type="button" onClick={() => setCreated(null)}>
            Done, I have copied it
          </button>
        </section>
      )}
      <ErrorBox error={error} what="Could not load the tokens" />
      {tokens && (
        <section class="card">
          <table class="table" data-testid="tokens">
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Id</th>
                <th scope="col">Role</th>
                <th scope="col">Host</th>
                <th scope="col">Created</th>
                <th scope="col">By</th>
                <th scope="col">Expires</th>
                <th scope="col">Last used</th>
                <th scope="col">State</th>
                <th scope="col">
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {shown.map((t) => (
                <tr key={t.id} data-token={t.id} data-revoked={t.revoked_at ? '1' : '0'}>
                  <td>{t.name}</td>
                  <td class="mono">{t.id}</td>
                  <td>
                    <span class={`role role-${t.role} small`}>{t.role}</span>
                  </td>
                  <td>{t.host || ''}</td>
                  <td title={fmtTime(t.created_at)}>{ago(t.created_at)}</td>
                  <td>
                    <Actor id={t.created_by} />
                  </td>
                  <td data-testid="token-expires" title={fmtTime(t.expires_at)}>
                    {t.expires_at ? fmtTime(t.expires_at) : 'never'}
                  </td>
                  <td data-testid="token-last-used" title={fmtTime(t.last_used_at)}>
                    {ago(t.last_used_at)}
                  </td>
                  <td data-testid="token-state">
                    {t.revoked_at ? (
                      <span title={fmtTime(t.revoked_at)}>revoked {ago(t.revoked_at)}</span>
                    ) : t.expires_at && Date.parse(t.expires_at) <= Date.now() ? (
                      'expired'
                    ) : (
                      'active'
                    )}
                  </td>
                  <td>
                    {!t.revoked_at && (
                      <button type="button" class="link" onClick={() => setRevoking({ token: t, busy: false, error: '' })} data-testid="revoke">
                        Revoke<span class="sr-only"> {t.name}</span>
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </section>
      )}
      {revoking && (
        <ConfirmDialog
          title={`Revoke token “${revoking.token.name}”?`}
          confirmLabel="Revoke token"
          danger
          busy={revoking.busy}
          error={revoking.error}
          onConfirm={revoke}
          onCancel={() => setRevoking(null)}
        >
          <p>
            Every kilnd replica stops accepting <span class="mono">{revoking.token.id}</span> ({revoking.token.role}) within seconds. Scripts
            and people using it are signed out; this cannot be undone (create a new token instead).
          </p>
        </ConfirmDialog>
      )}
    </div>
  );
}

function NewToken({ onCreated }) {
  const [form, setForm] = useState({ name: '', role: 'viewer', host: '' });
  const [errors, setErrors] = useState({});
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const set = (k) => (e) => setForm({ ...form, [k]: e.currentTarget.value });
  const submit = async (e) => {
    e.preventDefault();
    const { body, errors: bad } = tokenBody(form);
    setErrors(bad || {});
    if (!body) return;
    setBusy(true);
    try {
      const t = await api('/tokens', { method: 'POST', body });
      setForm({ name: '', role: form.role, host: '' });
      setError(null);
      onCreated(t);
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const help = TOKEN_ROLES.find((r) => r.id === form.role);
  return (
    <form class="card filters" onSubmit={submit} aria-label="New token" data-testid="new-token">
      <label class="filter">
        Name
        <input name="name" value={form.name} onInput={set('name')} placeholder="who or what uses it" aria-invalid={errors.name ? 'true' : undefined} />
        {errors.name && <span class="error small">{errors.name}</span>}
      </label>
      <label class="filter">
        Role
        <select name="role" value={form.role} onChange={set('role')}>
          {TOKEN_ROLES.map((r) => (
            <option value={r.id}>{r.id}</option>
          ))}
        </select>
        <span class="small muted">{help && help.help}</span>
      </label>
      {form.role === 'agent' && (
        <label class="filter">
          Host
          <input name="host" value={form.host} onInput={set('host')} aria-invalid={errors.host ? 'true' : undefined} />
          {errors.host && <span class="error small">{errors.host}</span>}
        </label>
      )}
      <button type="submit" class="primary" disabled={busy}>
        {busy ? 'Creating…' : 'Create token'}
      </button>
      {error && (
        <p class="error" role="alert">
          {error.message}
          <ErrorStatus error={error} />
        </p>
      )}
    </form>
  );
}

// ---------------------------------------------------------------- audit feed

// A workflow change: old -> new hash, where it came from, and the YAML's diff (folded).
function WorkflowChange({ details }) {
  const c = workflowChange(details);
  return (
    <div data-testid="workflow-change">
      <code>{c.from ? c.from.slice(0, 12) : 'new'}</code> → <code>{c.to.slice(0, 12)}</code> from {c.source}
      {c.lines.length > 0 && (
        <details class="output">
          <summary>
            diff +{c.added} −{c.removed}
            {c.truncated ? ' (truncated)' : ''}
          </summary>
          <pre class="diff">
            {c.lines.map((l) => (
              <span class={`diff-${l.kind}`}>{l.text + '\n'}</span>
            ))}
          </pre>
        </details>
      )}
    </div>
  );
}

const AUDIT_PAGE = 100;
const SYSTEM_ACTORS = ['system', 'kilnd'];

export function AuditView({ route, role }) {
  if (!roleAtLeast(role, 'operator')) return <Refused what="The audit log" need="operator" role={role} testid="audit-refused" />;
  return <AuditFeed route={route} />;
}

function AuditFeed({ route }) {
  const p = route.params;
  const [form, setForm] = useState({
    actor: p.actor || '',
    action: p.action || '',
    target: p.target || '',
    since: p.since || '',
    until: p.until || '',
  });
  const names = useActorNames();
  const [pages, setPages] = useState(null); // {key, items, next}
  const [error, setError] = useState(null);
  const [busy, setBusy] = useState(false);
  const { params, errors } = auditParams({ actor: p.actor, action: p.action, target: p.target, since: p.since, until: p.until });
  const key = JSON.stringify(params);
  const load = async (cursor, prev) => {
    setBusy(true);
    try {
      const page = await api(`/audit${qs({ ...params, limit: AUDIT_PAGE, cursor })}`);
      setPages({ key, items: [...(prev || []), ...page.items], next: page.next_cursor });
      setError(null);
    } catch (e) {
      setError(e);
      if (!prev) setPages({ key, items: [], next: null });
    } finally {
      setBusy(false);
    }
  };
  useEffect(() => {
    if (Object.keys(errors).length === 0) load('', null);
  }, [key]);
  const apply = (e) => {
    e.preventDefault();
    const clean = Object.fromEntries(Object.entries(form).map(([k, v]) => [k, v.trim()]));
    navigate('/audit', clean, true);
  };
  const set = (k) => (e) => setForm({ ...form, [k]: e.currentTarget.value });
  const items = pages && pages.key === key ? pages.items : [];
  const actorChoices = [...names.entries()].sort((a, b) => a[1].localeCompare(b[1]));
  return (
    <div class="audit-view">
      <div class="fleet-head">
        <h1>Audit log</h1>
        <p class="muted" data-testid="audit-summary">
          {pages && pages.key === key ? `${items.length}${pages.next ? '+' : ''} record${items.length === 1 ? '' : 's'}, newest first` : 'Loading…'}
        </p>
      </div>
      <form class="card filters" onSubmit={apply} aria-label="Filter the audit log" data-testid="audit-filters">
        <label class="filter">
          Action or prefix
          <input name="action" list="audit-actions" value={form.action} onInput={set('action')} placeholder="rollout." aria-invalid={errors.action ? 'true' : undefined} />
          <datalist id="audit-actions">
            {AUDIT_ACTION_PREFIXES.map((a) => (
              <option value={a} />
            ))}
          </datalist>
          {errors.action && <span class="error small">{errors.action}</span>}
        </label>
        <label class="filter">
          Actor
          <select name="actor" value={form.actor} onChange={set('actor')}>
            <option value="">anyone</option>
            {actorChoices.map(([id, name]) => (
              <option value={id}>
                {name} ({id})
              </option>
            ))}
            {SYSTEM_ACTORS.map((a) => (
              <option value={a}>{a}</option>
            ))}
            {form.actor && !names.has(form.actor) && !SYSTEM_ACTORS.includes(form.actor) && <option value={form.actor}>{form.actor}</option>}
          </select>
        </label>
        <label class="filter">
          Target
          <input name="target" value={form.target} onInput={set('target')} placeholder="host, rollout, run id…" />
        </label>
        <label class="filter">
          Since
          <input name="since" type="datetime-local" value={form.since} onInput={set('since')} />
          {errors.since && <span class="error small">{errors.since}</span>}
        </label>
        <label class="filter">
          Until
          <input name="until" type="datetime-local" value={form.until} onInput={set('until')} />
          {errors.until && <span class="error small">{errors.until}</span>}
        </label>
        <button type="submit" class="primary">
          Filter
        </button>
        <button
          type="button"
          onClick={() => {
            setForm({ actor: '', action: '', target: '', since: '', until: '' });
            navigate('/audit', {}, true);
          }}
        >
          Clear
        </button>
      </form>
      <ErrorBox error={error} what="Could not load the audit log" />
      {pages && pages.key === key && items.length === 0 && !error && <p class="muted">No record matches.</p>}
      {items.length > 0 && (
        <section class="card">
          <table class="table" data-testid="audit">
            <thead>
              <tr>
                <th scope="col">When</th>
                <th scope="col">Who</th>
                <th scope="col">Action</th>
                <th scope="col">Target</th>
                <th scope="col">Details</th>
              </tr>
            </thead>
            <tbody>
              {items.map((a) => {
                const link = auditTargetHref(a.action, a.target);
                return (
                  <tr key={a.id} data-audit={a.id} data-action={a.action}>
                    <td title={fmtTime(a.at)}>{ago(a.at)}</td>
                    <td data-testid="audit-actor" data-actor={a.actor} title={a.actor_name === a.actor ? a.actor : `token ${a.actor}`}>
                      {a.actor_name}
                    </td>
                    <td>
                      <code>{a.action}</code>
                    </td>
                    <td>{link ? <a href={link}>{a.target}</a> : a.target}</td>
                    <td class="small">{a.action === 'workflow.put' ? <WorkflowChange details={a.details} /> : detailsText(a.details)}</td>
                  </tr>
                );
              })}
            </tbody>
          </table>
          {pages.next && (
            <div class="buttons pager">
              <button type="button" disabled={busy} onClick={() => load(pages.next, items)} data-testid="audit-more">
                {busy ? 'Loading…' : 'Older records'}
              </button>
            </div>
          )}
        </section>
      )}
    </div>
  );
}
