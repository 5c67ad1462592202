// Host view: state, state history, GPUs, components, the host's workflow runs, and the
// lifecycle actions the token's role and the host's state allow (each with a reason and a
// confirmation), plus shortcuts to start a pre-job check or burn-in on it.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, qs } from './api.js';
import { usePoll } from './live.js';
import { QUARANTINE_WORKFLOW, runningValidation, startsValidation } from './hosts-model.js';
import { ago, fmtTime, hostState, offeredActions, OVERRIDE_TARGETS, roleAtLeast } from './model.js';
import { href, navigate } from './route.js';
import { RunShortcuts, RunTable } from './runs.jsx';
import { ConfirmDialog, ErrorBox, EventTable, HostStateChip, KeyValues, useDialog } from './ui.jsx';

export function HostView({ hostId, role }) {
  const [host, setHost] = useState(null);
  const [events, setEvents] = useState(null);
  const [error, setError] = useState(null);
  const [dialog, setDialog] = useState(null); // {action} | {override: true}
  const [notice, setNotice] = useState('');
  // A 403 on a mutation means the token lost rights since sign-in: stop offering actions.
  const [denied, setDenied] = useState(false);
  // The quarantine validation running on this host now, if any ({host, run}): a second one
  // beside it is almost always a mistake, so starting one warns first.
  const [validation, setValidation] = useState(null);
  const [confirmValidation, setConfirmValidation] = useState(false);
  usePoll(
    async (isCurrent) => {
      const r = await api(`/workflow-runs${qs({ host: hostId, workflow: QUARANTINE_WORKFLOW, state: 'running', limit: 5 })}`);
      if (isCurrent()) setValidation({ host: hostId, run: runningValidation(r.items) });
    },
    5000,
    [hostId],
  );
  const runningRun = validation && validation.host === hostId ? validation.run : null;
  const newValidationHref = href('/runs/new', { workflow: QUARANTINE_WORKFLOW, hosts: hostId });

  const refresh = usePoll(
    async (isCurrent) => {
      try {
        const [h, ev] = await Promise.all([
          api(`/hosts/${encodeURIComponent(hostId)}`),
          api(`/hosts/${encodeURIComponent(hostId)}/events?limit=100`),
        ]);
        if (!isCurrent()) return;
        setHost(h);
        setEvents(ev.items);
        setError(null);
      } catch (e) {
        if (isCurrent()) setError(e);
        throw e;
      }
    },
    4000,
    [hostId],
  );

  const shown = host && host.id === hostId ? host : null;
  const actions = denied ? [] : offeredActions(role, shown ? shown.allowed_actions : []);
  const canOverride =
    !denied && roleAtLeast(role, 'admin') && shown && (shown.allowed_actions || []).includes('override');

  const onDone = (result) => {
    setDialog(null);
    if (result.denied) setDenied(true);
    if (result.host) setHost(result.host);
    setNotice(result.message || '');
    refresh();
  };

  return (
    <div class="host-view">
      <nav class="crumbs" aria-label="Breadcrumb">
        <a href="#/fleet">Fleet</a>
        {shown && (
          <>
            {' › '}
            <a href={href('/fleet', { site: shown.site })}>{shown.site}</a>
            {' › '}
            <a href={href('/fleet', { site: shown.site, building: shown.building })}>{shown.building}</a>
            {' › '}
            <a href={href('/fleet', { site: shown.site, building: shown.building, pod: shown.pod })}>{shown.pod}</a>
          </>
        )}
      </nav>
      <h1>
        {hostId} {shown && <HostStateChip state={shown.state} />}
      </h1>
      <ErrorBox error={error} what={error && error.status === 404 ? 'No such host' : 'Could not load the host'} />
      {!shown && !error && <p class="muted">Loading…</p>}
      {shown && (
        <>
          {notice && (
            <p class="notice" role="status">
              {notice}
            </p>
          )}
          {(actions.length > 0 || canOverride || (!denied && roleAtLeast(role, 'operator'))) && (
            <section class="actions card" aria-label="Host actions" data-testid="host-actions">
              <h2>Actions</h2>
              <div class="buttons">
                {actions.map((a) => (
                  <button type="button" class={a.danger ? 'danger' : ''} data-action={a.id} title={a.help} onClick={() => setDialog({ action: a })}>
                    {a.label}
                  </button>
                ))}
                {canOverride && (
                  <button type="button" class="danger" data-action="override" title="Admin: force a state (audited)" onClick={() => setDialog({ override: true })}>
                    Override state…
                  </button>
                )}
              </div>
              {!denied && (
                <>
                  <h3>Workflows</h3>
                  <div class="buttons">
                    <RunShortcuts role={role} hosts={[shown.id]} burnInPods={[shown.pod]} />
                    {shown.state === 'quarantine' && (
                      <a
                        class="button"
                        data-start-run="quarantine"
                        href={newValidationHref}
                        onClick={(e) => {
                          if (!runningRun) return;
                          e.preventDefault();
                          setConfirmValidation(true);
                        }}
                      >
                        Run quarantine validation
                      </a>
                    )}
                  </div>
                  {runningRun && (
                    <p class="validation-running small" data-testid="validation-running" role="status">
                      A quarantine validation is running on this host: <a href={`#/runs/${encodeURIComponent(runningRun.id)}`}>{runningRun.id}</a> (started{' '}
                      {ago(runningRun.created_at)}).
                    </p>
                  )}
                </>
              )}
            </section>
          )}
          <div class="host-grid">
            <section class="card" aria-labelledby="h-summary">
              <h2 id="h-summary">Host</h2>
              <KeyValues
                rows={[
                  ['State', <HostStateChip state={shown.state} />],
                  ['Since', `${fmtTime(shown.state_since)} (${ago(shown.state_since)})`],
                  ['Reason', shown.state_reason],
                  ['Pod', <a href={href('/fleet', { pod: shown.pod })}>{shown.pod}</a>],
                  ['Rack / tray', `${shown.rack} / tray ${shown.tray}`],
                  ['Spare', shown.spare ? 'yes (pod spare)' : 'no'],
                  ['Platform', shown.platform],
                  ['Agent last seen', shown.last_seen ? `${fmtTime(shown.last_seen)} (${ago(shown.last_seen)})` : 'never'],
                  ['Agent version', shown.agent_version ? <span class="mono">{shown.agent_version}</span> : <span class="muted">none registered</span>],
                  [
                    'BMC',
                    shown.bmc ? (
                      <span data-testid="host-bmc">
                        <span class="mono">{`${shown.bmc.address}:${shown.bmc.port}`}</span> ({shown.bmc.protocol}, credential{' '}
                        <span class="mono">{shown.bmc.credential}</span>)
                      </span>
                    ) : (
                      <span class="muted">none in the fleet file</span>
                    ),
                  ],
                ]}
              />
            </section>
            <section class="card" aria-labelledby="h-components">
              <h2 id="h-components">Components</h2>
              <table class="table">
                <tbody>
                  {Object.entries(shown.components || {}).map(([k, v]) => (
                    <tr>
                      <th scope="row">{k}</th>
                      <td>{v}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </section>
            <section class="card" aria-labelledby="h-gpus">
              <h2 id="h-gpus">GPUs ({(shown.gpus || []).length})</h2>
              <table class="table" data-testid="gpus">
                <thead>
                  <tr>
                    <th scope="col">Index</th>
                    <th scope="col">Serial</th>
                    <th scope="col">UUID</th>
                  </tr>
                </thead>
                <tbody>
                  {(shown.gpus || []).map((g) => (
                    <tr>
                      <td>{g.index}</td>
                      <td>{g.serial}</td>
                      <td class="mono">{g.uuid}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </section>
          </div>
          <HostRuns hostId={hostId} />
          <section class="card" aria-labelledby="h-history">
            <h2 id="h-history">State history</h2>
            {events && events.length ? <EventTable events={events} /> : <p class="muted">No events.</p>}
          </section>
        </>
      )}
      {dialog && shown && <ActionDialog host={shown} spec={dialog} running={runningRun} onCancel={() => setDialog(null)} onDone={onDone} />}
      {confirmValidation && runningRun && (
        <ConfirmDialog
          title={`A quarantine validation is already running on ${hostId}`}
          confirmLabel="Start another anyway"
          danger
          onCancel={() => setConfirmValidation(false)}
          onConfirm={() => {
            setConfirmValidation(false);
            location.hash = newValidationHref;
          }}
        >
          <p data-testid="validation-warning">
            <a href={`#/runs/${encodeURIComponent(runningRun.id)}`}>{runningRun.id}</a> ({runningRun.workflow}) started {ago(runningRun.created_at)} and has not
            finished. A second run beside it repeats the soak, and either verdict moves the host: open the running one instead, or cancel it first.
          </p>
          <p>
            <button type="button" class="link" onClick={() => navigate(`/runs/${encodeURIComponent(runningRun.id)}`, {})}>
              Open {runningRun.id}
            </button>
          </p>
        </ConfirmDialog>
      )}
    </div>
  );
}

// The host's workflow runs, newest first (GET /workflow-runs?host=ID), live.
function HostRuns({ hostId }) {
  const [runs, setRuns] = useState(null);
  const [more, setMore] = useState(false);
  const [error, setError] = useState(null);
  usePoll(
    async (isCurrent) => {
      try {
        const r = await api(`/workflow-runs${qs({ host: hostId, limit: 20 })}`);
        if (!isCurrent()) return;
        setRuns({ host: hostId, items: r.items });
        setMore(!!r.next_cursor);
        setError(null);
      } catch (e) {
        if (isCurrent()) setError(e);
        throw e;
      }
    },
    5000,
    [hostId],
  );
  const shown = runs && runs.host === hostId ? runs.items : null;
  return (
    <section class="card" aria-labelledby="h-runs" data-testid="host-runs">
      <h2 id="h-runs">Workflow runs</h2>
      <ErrorBox error={error} what="Could not load the host's runs" />
      {shown && shown.length === 0 && <p class="muted">No workflow run on this host yet.</p>}
      {shown && shown.length > 0 && <RunTable runs={shown} testid="host-run-list" />}
      {more && (
        <p>
          <a href={href('/runs', { host: hostId })}>All runs of {hostId}</a>
        </p>
      )}
    </section>
  );
}

function ActionDialog({ host, spec, running, onCancel, onDone }) {
  const override = !!spec.override;
  const a = spec.action;
  const [reason, setReason] = useState('');
  const [to, setTo] = useState('');
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState('');
  const dlg = useDialog(onCancel);
  const first = useRef(null);
  useEffect(() => {
    if (first.current) first.current.focus();
  }, []);
  const title = override ? `Override the state of ${host.id}` : `${a.label}: ${host.id}`;
  const submit = async (ev) => {
    ev.preventDefault();
    if (!reason.trim()) {
      setErr('A reason is required: it is recorded in the host history.');
      return;
    }
    if (override && !to) {
      setErr('Choose the target state.');
      return;
    }
    setBusy(true);
    setErr('');
    const body = override ? { action: 'override', to, reason: reason.trim() } : { action: a.id, reason: reason.trim() };
    try {
      const h = await api(`/hosts/${encodeURIComponent(host.id)}/actions`, { method: 'POST', body });
      onDone({ host: h, message: `${override ? 'override' : a.id}: ${host.id} is now ${hostState(h.state).label.toLowerCase()}.` });
    } catch (e) {
      setBusy(false);
      if (e.status === 403) onDone({ denied: true, message: `Not allowed: ${e.message}` });
      else if (e.status === 409)
        setErr(`Not possible from ${e.details.state || 'the current state'}${e.details.allowed_actions ? ` (allowed: ${e.details.allowed_actions.join(', ')})` : ''}: ${e.message}`);
      else setErr(e.message);
    }
  };
  return (
    <div class="modal-backdrop" onKeyDown={dlg.onKeyDown}>
      <form ref={dlg.ref} class="modal card" role="dialog" aria-modal="true" aria-labelledby="dlg-title" onSubmit={submit}>
        <h2 id="dlg-title">{title}</h2>
        <p class="muted">
          Now <HostStateChip state={host.state} />. {override ? 'Admin override: forces the state, audited.' : a.help}
        </p>
        {!override && running && startsValidation(a.id) && (
          <p class="validation-running small" data-testid="validation-warning" role="alert">
            This starts a quarantine validation, and one is already running on {host.id}: {running.id} (started {ago(running.created_at)}).
          </p>
        )}
        {override && (
          <label>
            Target state
            <select ref={first} value={to} onChange={(e) => setTo(e.currentTarget.value)} name="to">
              <option value="">Choose…</option>
              {OVERRIDE_TARGETS.filter((s) => s !== host.state).map((s) => (
                <option value={s}>{hostState(s).label}</option>
              ))}
            </select>
          </label>
        )}
        <label for="dlg-reason">Reason (recorded in the host history)</label>
        <textarea
          id="dlg-reason"
          name="reason"
          ref={override ? undefined : first}
          rows={3}
          maxLength={1000}
          value={reason}
          onInput={(e) => setReason(e.currentTarget.value)}
          placeholder="e.g. XID 79 on GPU 2, ticket OPS-1234"
        />
        {err && (
          <p class="error" role="alert">
            {err}
          </p>
        )}
        <div class="buttons right">
          <button type="button" onClick={onCancel}>
            Cancel
          </button>
          <button type="submit" class={override || (a && a.danger) ? 'danger' : 'primary'} disabled={busy} data-confirm="1">
            {busy ? 'Working…' : override ? 'Override state' : a.confirm}
          </button>
        </div>
      </form>
    </div>
  );
}
