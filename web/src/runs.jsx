// Workflow runs: the list (filters, newest first, cursor paging), a run's detail (progress,
// per-host rows, per-step timelines with checks and output tails, the pod spares verdict,
// Cancel) and the Start-run form. Everything live by polling; mutations for operators only.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { api, qs } from './api.js';
import { Actor } from './actors.jsx';
import { usePoll } from './live.js';
import { ago, fmtTime, roleAtLeast } from './model.js';
import { href, navigate } from './route.js';
import {
  appendLiveOutput,
  BURN_IN_WORKFLOW,
  fieldErrors,
  fillTemplate,
  fmtDuration,
  hostRunStatus,
  liveOutputQuery,
  paramFields,
  podsText,
  PRE_JOB_WORKFLOW,
  progressText,
  rolloutText,
  RUN_STATES,
  runState,
  sparesText,
  startBody,
  STEP_STATES,
  stepOutcome,
  stepProgress,
  stepProgressText,
} from './runs-model.js';
import { ConfirmDialog, ErrorBox, KeyValues, ToneChip } from './ui.jsx';

const PAGE = 50;
const HOST_ROWS = 200; // rows drawn before "Show all" (a pod run has 18, a big one thousands)

// What a run of the workflow does to its hosts' lifecycle (api/openapi.yaml POST /workflow-runs).
const EFFECTS = {
  'l11-burn-in': 'Burn-in: incoming hosts enter burn-in; passing hosts become available, failing ones failed.',
  'quarantine-validation': 'Quarantine validation: quarantined hosts that pass become available, the others go back to repair.',
  'pre-job-health': 'Pre-job check: an unhealthy host is marked failed and leaves the pool.',
  'firmware-upgrade': 'Maintenance run.',
};

function useWorkflows() {
  const [items, setItems] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    let live = true;
    api('/workflows').then(
      (r) => live && setItems(r.items),
      (e) => live && setError(e),
    );
    return () => {
      live = false;
    };
  }, []);
  return [items, error];
}

export function RunStateChip({ state }) {
  return <ToneChip info={runState(state)} state={state} testid="run-state" />;
}

function runLink(id) {
  return `#/runs/${encodeURIComponent(id)}`;
}

function rolloutHref(id) {
  return `#/rollouts/${encodeURIComponent(id)}`;
}

function summaryCell(r) {
  const s = r.summary || {};
  if (r.state === 'cancelled' && s.hosts === undefined) return 'cancelled before its verdict';
  if (r.state === 'running' || s.hosts === undefined) return '';
  return `${s.healthy} of ${s.hosts} healthy${s.cancelled ? `, ${s.cancelled} cancelled` : ''}`;
}

// A table of run summaries (GET /workflow-runs items); the list view and the host view use it.
export function RunTable({ runs, testid = 'runs' }) {
  return (
    <table class="table" data-testid={testid}>
      <thead>
        <tr>
          <th scope="col">Run</th>
          <th scope="col">Workflow</th>
          <th scope="col">Purpose</th>
          <th scope="col">Pod</th>
          <th scope="col">Rollout</th>
          <th scope="col">State</th>
          <th scope="col">Result</th>
          <th scope="col">Started</th>
          <th scope="col">Took</th>
          <th scope="col">By</th>
        </tr>
      </thead>
      <tbody>
        {runs.map((r) => (
          <tr key={r.id} data-run={r.id}>
            <td>
              <a href={runLink(r.id)}>{r.id}</a>
            </td>
            <td>{r.workflow}</td>
            <td>{r.purpose}</td>
            <td data-testid="run-pods">{podsText(r)}</td>
            <td data-testid="run-rollout">
              {r.rollout ? (
                <a href={rolloutHref(r.rollout.id)} title={rolloutText(r.rollout)}>
                  {r.rollout.id}
                </a>
              ) : (
                ''
              )}
            </td>
            <td>
              <RunStateChip state={r.state} />
            </td>
            <td>{summaryCell(r)}</td>
            <td title={fmtTime(r.created_at_ms)}>{ago(r.created_at_ms)}</td>
            <td>{r.finished_at_ms ? fmtDuration(r.finished_at_ms - r.created_at_ms) : <span class="muted">running</span>}</td>
            <td>
              <Actor id={r.created_by} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function RunsView({ route, role }) {
  const f = { state: route.params.state || '', workflow: route.params.workflow || '', host: route.params.host || '' };
  const key = `${f.state}|${f.workflow}|${f.host}`;
  const [workflows] = useWorkflows();
  const [cursors, setCursors] = useState({ key, stack: [''] }); // cursors of the pages seen
  const stack = cursors.key === key ? cursors.stack : [''];
  const cursor = stack[stack.length - 1];
  const [page, setPage] = useState(null); // {key, cursor, items, next_cursor}
  const [error, setError] = useState(null);
  const [hostText, setHostText] = useState(f.host);
  useEffect(() => setHostText(f.host), [f.host]);

  usePoll(
    async (isCurrent) => {
      try {
        const r = await api(`/workflow-runs${qs({ ...f, limit: PAGE, cursor })}`);
        if (!isCurrent()) return;
        setPage({ key, cursor, ...r });
        setError(null);
      } catch (e) {
        if (isCurrent()) setError(e);
        throw e;
      }
    },
    4000,
    [key, cursor],
  );

  const setFilter = (k, v) => navigate('/runs', { ...f, [k]: v }, true);
  const shown = page && page.key === key && page.cursor === cursor ? page : null;
  const canStart = roleAtLeast(role, 'operator');
  return (
    <div class="runs-view">
      <div class="fleet-head">
        <h1>Workflow runs</h1>
        <p class="muted">Newest first{shown ? ` · ${shown.items.length} on this page` : ''}</p>
        {canStart && (
          <a class="button primary push-right" href="#/runs/new" data-testid="start-run">
            Start run
          </a>
        )}
      </div>
      <div class="filters" role="group" aria-label="Filters">
        <label class="filter" for="r-state">
          <span>State</span>
          <select id="r-state" value={f.state} onChange={(e) => setFilter('state', e.currentTarget.value)}>
            <option value="">All</option>
            {Object.entries(RUN_STATES).map(([id, s]) => (
              <option value={id}>{s.label}</option>
            ))}
          </select>
        </label>
        <label class="filter" for="r-workflow">
          <span>Workflow</span>
          <select id="r-workflow" value={f.workflow} onChange={(e) => setFilter('workflow', e.currentTarget.value)}>
            <option value="">All</option>
            {(workflows || []).map((w) => (
              <option value={w.name}>{w.name}</option>
            ))}
            {f.workflow && !(workflows || []).some((w) => w.name === f.workflow) && <option value={f.workflow}>{f.workflow}</option>}
          </select>
        </label>
        <form
          class="filter"
          onSubmit={(e) => {
            e.preventDefault();
            setFilter('host', hostText.trim());
          }}
        >
          <label for="r-host">Host</label>
          <input
            id="r-host"
            type="text"
            placeholder="host id"
            value={hostText}
            onInput={(e) => setHostText(e.currentTarget.value)}
            onBlur={() => hostText.trim() !== f.host && setFilter('host', hostText.trim())}
          />
        </form>
        {(f.state || f.workflow || f.host) && (
          <button class="link" type="button" onClick={() => navigate('/runs', {}, true)}>
            Clear filters
          </button>
        )}
      </div>
      <ErrorBox error={error} what="Could not load the runs" />
      {!shown && !error && <p class="muted">Loading…</p>}
      {shown && shown.items.length === 0 && (
        <p class="muted">{f.state || f.workflow || f.host ? 'No run matches these filters.' : 'No workflow run yet.'}</p>
      )}
      {shown && shown.items.length > 0 && (
        <section class="card">
          <RunTable runs={shown.items} />
        </section>
      )}
      {(stack.length > 1 || (shown && shown.next_cursor)) && (
        <div class="buttons pager">
          <button type="button" disabled={stack.length <= 1} onClick={() => setCursors({ key, stack: stack.slice(0, -1) })}>
            ‹ Newer
          </button>
          <span class="muted small">page {stack.length}</span>
          <button
            type="button"
            disabled={!shown || !shown.next_cursor}
            onClick={() => setCursors({ key, stack: [...stack, shown.next_cursor] })}
          >
            Older ›
          </button>
        </div>
      )}
    </div>
  );
}

export function RunView({ runId, role }) {
  const [run, setRun] = useState(null);
  const [error, setError] = useState(null);
  const [confirm, setConfirm] = useState(false);
  const [busy, setBusy] = useState(false);
  const [cancelError, setCancelError] = useState('');
  const [notice, setNotice] = useState('');
  const [denied, setDenied] = useState(false);

  const shown = run && run.id === runId ? run : null;
  const refresh = usePoll(
    async (isCurrent) => {
      try {
        const r = await api(`/workflow-runs/${encodeURIComponent(runId)}`);
        if (!isCurrent()) return;
        setRun(r);
        setError(null);
      } catch (e) {
        if (isCurrent()) setError(e);
        throw e;
      }
    },
    // Every 2 s while it runs; a finished run changes no more, but stays live for the header.
    () => (shown && shown.state !== 'running' ? 15000 : 2000),
    [runId],
  );

  const cancel = async () => {
    setBusy(true);
    setCancelError('');
    try {
      const r = await api(`/workflow-runs/${encodeURIComponent(runId)}/cancel`, { method: 'POST' });
      setRun(r);
      setConfirm(false);
      setNotice(`${runId} is ${runState(r.state).label.toLowerCase()}.`);
      refresh();
    } catch (e) {
      if (e.status === 403) {
        setDenied(true);
        setConfirm(false);
        setNotice(`Not allowed: ${e.message}`);
      } else if (e.status === 409) setCancelError(`Cannot cancel: ${e.message}`);
      else setCancelError(e.message);
    }
    setBusy(false);
  };

  const canCancel = !denied && roleAtLeast(role, 'operator') && shown && shown.state === 'running';
  return (
    <div class="run-view">
      <nav class="crumbs" aria-label="Breadcrumb">
        <a href="#/runs">Workflow runs</a>
        {shown && (
          <>
            {' › '}
            <a href={href('/runs', { workflow: shown.workflow })}>{shown.workflow}</a>
          </>
        )}
      </nav>
      <h1>
        {runId} {shown && <RunStateChip state={shown.state} />}
        {shown && <span class="muted small">{shown.workflow}</span>}
        {canCancel && (
          <button type="button" class="danger push-right" data-testid="cancel-run" onClick={() => setConfirm(true)}>
            Cancel run…
          </button>
        )}
      </h1>
      <ErrorBox error={error} what={error && error.status === 404 ? 'No such run' : 'Could not load the run'} />
      {!shown && !error && <p class="muted">Loading…</p>}
      {notice && (
        <p class="notice" role="status">
          {notice}
        </p>
      )}
      {shown && <RunDetail run={shown} />}
      {confirm && shown && (
        <ConfirmDialog
          title={`Cancel ${runId}?`}
          confirmLabel="Cancel run"
          danger
          busy={busy}
          error={cancelError}
          onConfirm={cancel}
          onCancel={() => {
            setConfirm(false);
            setCancelError('');
          }}
        >
          <p>
            {shown.workflow} on {shown.progress.hosts} host{shown.progress.hosts === 1 ? '' : 's'}: {progressText(shown.progress)}.
          </p>
          <p class="muted">Steps running on agents are killed. Hosts that already finished keep their result; the others end cancelled.</p>
        </ConfirmDialog>
      )}
    </div>
  );
}

// The run's bar: every host-step (hosts × steps of the current pass) done, failed, not run,
// running or pending, so a run whose 18 hosts all run their first step shows that step's share
// running, not a bar full of "running" at "0 of 18 hosts done".
function StepBar({ counts, units, label, testid }) {
  const total = Math.max(1, units);
  return (
    <div class="progress" role="img" aria-label={label} data-testid={testid}>
      {['done', 'failed', 'notrun', 'running', 'pending'].map(
        (k) =>
          counts[k] > 0 && (
            <span class={`seg ${STEP_STATES[k].seg}`} data-seg={k} style={{ width: `${(100 * counts[k]) / total}%` }} title={`${counts[k]} ${STEP_STATES[k].label.toLowerCase()}`} />
          ),
      )}
    </div>
  );
}

function StepProgress({ run }) {
  const sp = useMemo(() => stepProgress(run), [run]);
  if (!sp.steps.length) return null;
  const hosts = sp.total.hosts;
  return (
    <div data-testid="step-progress">
      <StepBar counts={sp.total} units={sp.total.units} label={stepProgressText(sp)} testid="step-bar" />
      <p class="small" data-testid="step-progress-text">
        {stepProgressText(sp)}
      </p>
      <table class="table step-table" data-testid="step-table">
        <thead>
          <tr>
            <th scope="col">Step</th>
            <th scope="col">Hosts on it</th>
            <th scope="col">Done</th>
            <th scope="col">Running</th>
            <th scope="col">Pending</th>
            <th scope="col">Failed</th>
          </tr>
        </thead>
        <tbody>
          {sp.steps.map((st) => (
            <tr data-step={st.step} data-done={st.done} data-running={st.running} data-pending={st.pending} data-failed={st.failed}>
              <td class="mono">{st.step}</td>
              <td class="bar-cell">
                <StepBar counts={st} units={hosts} label={`${st.step}: ${st.done} of ${hosts} done, ${st.running} running`} />
              </td>
              <td>{st.done}</td>
              <td>{st.running}</td>
              <td>{st.pending}</td>
              <td>{st.failed ? st.failed : ''}{st.notrun ? <span class="muted small">{st.failed ? ', ' : ''}{st.notrun} not run</span> : ''}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

function RunDetail({ run }) {
  const p = run.progress;
  const params = Object.entries(run.params || {})
    .map(([k, v]) => `${k}=${v}`)
    .join(', ');
  const took = run.finished_at_ms ? fmtDuration(run.finished_at_ms - run.created_at_ms) : '';
  return (
    <>
      <div class="host-grid">
        <section class="card" aria-labelledby="run-about">
          <h2 id="run-about">Run</h2>
          <KeyValues
            rows={[
              ['Workflow', <a href={href('/runs', { workflow: run.workflow })}>{run.workflow}</a>],
              ['Version', <span class="mono">{run.workflow_hash}</span>],
              ['Purpose', run.purpose],
              ...(run.rollout
                ? [
                    [
                      'Rollout',
                      <a href={rolloutHref(run.rollout.id)} data-testid="run-rollout-link">
                        {rolloutText(run.rollout)}
                      </a>,
                    ],
                  ]
                : []),
              ['Scope', run.scope === 'pod' ? 'pod (whole pods)' : 'host'],
              [
                'Started',
                <>
                  {fmtTime(run.created_at_ms)} ({ago(run.created_at_ms)}) by <Actor id={run.created_by} />
                </>,
              ],
              ['Finished', run.finished_at_ms ? `${fmtTime(run.finished_at_ms)} (took ${took})` : ''],
              ['Params', params || 'defaults'],
              ['Steps', (run.steps || []).join(' → ')],
            ]}
          />
        </section>
        <section class="card" aria-labelledby="run-progress">
          <h2 id="run-progress">Progress</h2>
          <StepProgress run={run} />
          <p data-testid="run-progress">{progressText(p)}</p>
          <ul class="counts">
            <li>
              <strong>{p.hosts}</strong> hosts
            </li>
            <li>
              <strong>{p.passed}</strong> passed
            </li>
            <li>
              <strong>{p.failed}</strong> failed
            </li>
            <li>
              <strong>{p.running}</strong> running
            </li>
            <li>
              <strong>{p.cancelled}</strong> cancelled
            </li>
          </ul>
        </section>
      </div>
      {run.state !== 'running' && run.summary && run.summary.pods && <RunSummary s={run.summary} />}
      <RunHosts run={run} />
    </>
  );
}

function RunSummary({ s }) {
  return (
    <section class="card" aria-labelledby="run-summary" data-testid="run-summary">
      <h2 id="run-summary">Verdict</h2>
      <p>
        {s.healthy} of {s.hosts} hosts healthy{s.cancelled ? `, ${s.cancelled} cancelled` : ''}.
      </p>
      {s.pods.length > 0 && (
        <table class="table" data-testid="run-pods">
          <thead>
            <tr>
              <th scope="col">Pod</th>
              <th scope="col">Hosts</th>
              <th scope="col">Healthy</th>
              <th scope="col">Spares</th>
              <th scope="col">Failed hosts</th>
            </tr>
          </thead>
          <tbody>
            {s.pods.map((pod) => (
              <tr data-pod={pod.pod} class={pod.spares_cover === false ? 'row-bad' : ''}>
                <td>
                  <a href={href('/fleet', { pod: pod.pod })}>{pod.pod}</a>
                </td>
                <td>{pod.hosts}</td>
                <td>{pod.healthy_hosts}</td>
                <td data-testid="spares">
                  {pod.spares_cover === false && <span class="tag warn">no cover</span>} {sparesText(pod)}
                </td>
                <td>
                  {(pod.failed_hosts || []).map((h, i) => (
                    <>
                      {i > 0 && ', '}
                      <a href={`#/hosts/${encodeURIComponent(h)}`}>{h}</a>
                    </>
                  ))}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {s.unhealthy && s.unhealthy.length > 0 && (
        <>
          <h3>Unhealthy hosts</h3>
          <ul class="reasons">
            {s.unhealthy.map((u) => (
              <li>
                <a href={`#/hosts/${encodeURIComponent(u.host)}`}>{u.host}</a> ({u.pod}): {(u.reasons || []).join('; ') || 'no reason recorded'}
              </li>
            ))}
          </ul>
        </>
      )}
    </section>
  );
}

const STATUS_FILTERS = ['', 'running', 'pending', 'failed', 'passed', 'cancelled'];

function RunHosts({ run }) {
  const [status, setStatus] = useState('');
  const [open, setOpen] = useState(() => new Set(run.hosts.length === 1 ? [run.hosts[0].host] : []));
  const [all, setAll] = useState(false);
  const counts = useMemo(() => {
    const c = {};
    for (const h of run.hosts) c[h.status] = (c[h.status] || 0) + 1;
    return c;
  }, [run]);
  const rows = status ? run.hosts.filter((h) => h.status === status) : run.hosts;
  const drawn = all ? rows : rows.slice(0, HOST_ROWS);
  const toggle = (id) => {
    const next = new Set(open);
    if (next.has(id)) next.delete(id);
    else next.add(id);
    setOpen(next);
  };
  const multiPod = run.scope === 'pod' || new Set(run.hosts.map((h) => h.group)).size < run.hosts.length;
  return (
    <section class="card" aria-labelledby="run-hosts">
      <h2 id="run-hosts">Hosts ({run.hosts.length})</h2>
      <div class="buttons" role="group" aria-label="Show hosts by status">
        {STATUS_FILTERS.filter((s) => !s || counts[s]).map((s) => (
          <button type="button" class={status === s ? 'on' : ''} aria-pressed={status === s} onClick={() => setStatus(s)}>
            {s ? `${hostRunStatus(s).label} (${counts[s]})` : `All (${run.hosts.length})`}
          </button>
        ))}
      </div>
      <table class="table run-hosts" data-testid="run-hosts">
        <thead>
          <tr>
            <th scope="col">
              <span class="sr-only">Expand</span>
            </th>
            <th scope="col">Host</th>
            {multiPod && <th scope="col">Group</th>}
            <th scope="col">Status</th>
            <th scope="col">Healthy</th>
            <th scope="col">Current step</th>
            <th scope="col">Pass</th>
            <th scope="col">Attempt</th>
            <th scope="col">Failures</th>
            <th scope="col">Warnings</th>
          </tr>
        </thead>
        <tbody>
          {drawn.map((h) => {
            const isOpen = open.has(h.host);
            return (
              <>
                <tr key={h.host} data-host={h.host} class={h.status === 'failed' ? 'row-bad' : ''}>
                  <td>
                    <button
                      type="button"
                      class="link expand"
                      aria-expanded={isOpen}
                      aria-controls={`steps-${h.host}`}
                      aria-label={`${isOpen ? 'Hide' : 'Show'} the steps of ${h.host}`}
                      onClick={() => toggle(h.host)}
                    >
                      {isOpen ? '▾' : '▸'}
                    </button>
                  </td>
                  <td>
                    <a href={`#/hosts/${encodeURIComponent(h.host)}`}>{h.host}</a>
                  </td>
                  {multiPod && <td>{h.group}</td>}
                  <td>
                    <ToneChip info={hostRunStatus(h.status)} state={h.status} testid="host-run-status" />
                  </td>
                  <td data-testid="healthy">{h.status === 'cancelled' ? '—' : h.healthy === true ? 'yes' : h.healthy === false ? 'no' : '—'}</td>
                  <td data-testid="current-step">
                    {h.current_step ? <span class="mono">{h.current_step}</span> : '—'}
                    {h.waiting_for ? (
                      <span class="tag warn" data-testid="waiting-for" title={h.waiting_for}>
                        {' '}
                        held for the job scheduler: {h.waiting_for}
                      </span>
                    ) : (
                      h.waiting_until_ms && <span class="muted small"> waiting until {fmtTime(h.waiting_until_ms)}</span>
                    )}
                    {h.retest && <span class="tag">retest round {h.retest.round}</span>}
                  </td>
                  <td>{h.pass}</td>
                  <td>{h.attempt}</td>
                  <td>{(h.failures || []).join('; ')}</td>
                  <td>{(h.warnings || []).join('; ')}</td>
                </tr>
                {isOpen && (
                  <tr class="expanded" id={`steps-${h.host}`}>
                    <td colSpan={multiPod ? 10 : 9}>
                      <HostSteps h={h} />
                    </td>
                  </tr>
                )}
              </>
            );
          })}
        </tbody>
      </table>
      {rows.length > drawn.length && (
        <button type="button" class="link" onClick={() => setAll(true)}>
          Show all {rows.length} hosts
        </button>
      )}
    </section>
  );
}

function Output({ label, text }) {
  if (!text) return null;
  const lines = text.replace(/\n$/, '').split('\n').length;
  return (
    <details class="output">
      <summary>
        {label} ({lines} line{lines === 1 ? '' : 's'}, tail)
      </summary>
      <pre>{text}</pre>
    </details>
  );
}

function Checks({ checks }) {
  if (!checks || !checks.length) return null;
  return (
    <ul class="checks">
      {checks.map((c) => {
        const word = c.skipped ? 'skipped' : c.passed ? 'pass' : 'FAIL';
        return (
          <li class={c.skipped ? 'muted' : c.passed ? '' : 'error'}>
            <span class="check-word">{word}</span> {c.name}
            {c.message ? `: ${c.message}` : ''}
          </li>
        );
      })}
    </ul>
  );
}

// A failed check's message is the step's message too: say it once, in the checks.
function repeatsACheck(s) {
  return (s.checks || []).some((c) => !c.passed && !c.skipped && `${c.name}: ${c.message}` === s.message);
}

// The output of the step a host runs now, while it runs: GET /assignments/{id}/output about
// once a second from the offsets already shown (polling, not a stream: see
// orchestrator/runs/live_output.h). Once the step is over, the step's history shows its tails.
function LiveOutput({ assignment, step }) {
  const [live, setLive] = useState({ id: assignment, out: null, err: null, state: '', updated: null, error: null });
  const shown = live.id === assignment ? live : { id: assignment, out: null, err: null, state: '', updated: null, error: null };
  usePoll(
    async (isCurrent) => {
      const cur = shown;
      try {
        const r = await api(`/assignments/${encodeURIComponent(assignment)}/output${liveOutputQuery(cur.out, cur.err)}`);
        if (!isCurrent()) return;
        setLive({
          id: assignment,
          out: appendLiveOutput(cur.out, r.stdout),
          err: appendLiveOutput(cur.err, r.stderr),
          state: r.state,
          updated: r.updated_at_ms,
          error: null,
        });
      } catch (e) {
        if (isCurrent()) setLive({ ...cur, error: e });
        throw e;
      }
    },
    () => (shown.state && shown.state !== 'dispatched' && shown.state !== 'pending' ? 30000 : 1000),
    // fn is the latest render's (usePoll keeps it current): it asks from the offsets shown now.
    [assignment],
  );
  const out = shown.out ? shown.out.text : '';
  const err = shown.err ? shown.err.text : '';
  return (
    <div class="live-output" data-testid="live-output" data-assignment={assignment} data-state={shown.state}>
      <p class="muted small">
        Live output of <span class="mono">{step}</span>
        {shown.state === 'pending' ? ': waiting for the host\'s agent to take the step' : ''}
        {shown.updated ? ` · last sent ${ago(shown.updated)}` : shown.state === 'dispatched' ? ' · nothing printed yet' : ''}
      </p>
      {shown.error && <ErrorBox error={shown.error} what="Could not read the live output" />}
      {out && (
        <pre class="live-out" data-testid="live-stdout" aria-live="polite">
          {out}
        </pre>
      )}
      {err && (
        <pre class="live-out live-err" data-testid="live-stderr">
          {err}
        </pre>
      )}
    </div>
  );
}

// One host's step history (attempts, retests and passes in order) and its parsed values.
function HostSteps({ h }) {
  const parsed = Object.entries(h.parsed || {});
  return (
    <div class="host-steps" data-testid="host-steps">
      {h.steps.length === 0 ? (
        <p class="muted">
          No step finished yet{h.current_step ? `; ${h.current_step} (attempt ${h.attempt}) is dispatched to the host's agent.` : '.'}
        </p>
      ) : (
        <ol class="timeline">
          {h.steps.map((s) => (
            <li data-step={s.step} data-outcome={s.outcome}>
              <div class="timeline-head">
                <span class="mono">{s.step}</span>
                <ToneChip info={stepOutcome(s.outcome)} state={s.outcome} />
                <span class="muted small">
                  pass {s.pass} · attempt {s.attempt}
                  {s.retest_round ? ` · retest round ${s.retest_round}` : ''} · {fmtDuration(s.duration_ms)} · exit code{' '}
                  {s.exit_code} · {fmtTime(s.finished_at_ms)}
                </span>
              </div>
              {s.message && !repeatsACheck(s) && <p class="step-message">{s.message}</p>}
              <Checks checks={s.checks} />
              <Output label="stdout" text={s.stdout_tail} />
              <Output label="stderr" text={s.stderr_tail} />
            </li>
          ))}
        </ol>
      )}
      {h.current_step && h.steps.length > 0 && (
        <p class="muted small">
          Now: <span class="mono">{h.current_step}</span> (pass {h.pass}, attempt {h.attempt})
        </p>
      )}
      {h.assignment && h.status === 'running' && <LiveOutput assignment={h.assignment} step={h.current_step} />}
      {parsed.length > 0 && (
        <details class="parsed">
          <summary>Parsed values ({parsed.map(([k]) => k).join(', ')})</summary>
          {parsed.map(([step, v]) => (
            <>
              <h4 class="mono">{step}</h4>
              <pre>{JSON.stringify(v, null, 2)}</pre>
            </>
          ))}
        </details>
      )}
    </div>
  );
}

export function StartRunView({ route, role }) {
  const pre = route.params;
  const [workflows, listError] = useWorkflows();
  const [name, setName] = useState(pre.workflow || '');
  const [spec, setSpec] = useState(null);
  const [specError, setSpecError] = useState(null);
  const [hostsText, setHostsText] = useState((pre.hosts || '').split(',').filter(Boolean).join('\n'));
  const [podsText, setPodsText] = useState((pre.pods || '').split(',').filter(Boolean).join('\n'));
  const [values, setValues] = useState({});
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);

  useEffect(() => {
    setSpec(null);
    setSpecError(null);
    if (!name) return undefined;
    let live = true;
    api(`/workflows/${encodeURIComponent(name)}`).then(
      (s) => {
        if (!live) return;
        setSpec(s);
        const v = {};
        for (const f of paramFields(s.params)) v[f.name] = f.default;
        setValues(v);
      },
      (e) => live && setSpecError(e),
    );
    return () => {
      live = false;
    };
  }, [name]);

  if (!roleAtLeast(role, 'operator'))
    return (
      <div>
        <h1>Start a workflow run</h1>
        <p class="notice">Starting runs needs the operator role; this token is a {role}.</p>
      </div>
    );

  const fields = spec && spec.name === name ? paramFields(spec.params) : [];
  const podScope = spec && spec.scope === 'pod';
  const errs = error && error.status === 422 ? fieldErrors(error.details, error.message) : {};
  const submit = async (ev) => {
    ev.preventDefault();
    if (!spec) return;
    const body = startBody({ workflow: name, scope: spec.scope, hostsText, podsText, fields, values });
    if (!body.hosts && !body.pods) {
      setError({ message: podScope ? 'Give at least one pod.' : 'Give at least one host or pod.', details: {} });
      return;
    }
    setBusy(true);
    setError(null);
    try {
      const run = await api('/workflow-runs', { method: 'POST', body });
      navigate(`/runs/${encodeURIComponent(run.id)}`, {});
    } catch (e) {
      setError(e);
      setBusy(false);
    }
  };
  const what = error && error.status === 409 ? 'Not possible now' : error && error.status === 422 ? 'Kilnd refused the run' : error && error.status ? 'Could not start the run' : '';
  const fieldError = (k) =>
    errs[k] && (
      <span class="error small" role="alert">
        {errs[k]}
      </span>
    );
  return (
    <div class="start-run">
      <nav class="crumbs" aria-label="Breadcrumb">
        <a href="#/runs">Workflow runs</a> › new
      </nav>
      <h1>Start a workflow run</h1>
      <form class="card form" onSubmit={submit} data-testid="start-run-form">
        <ErrorBox error={listError} what="Could not load the workflows" />
        <label for="run-workflow">Workflow</label>
        <select id="run-workflow" value={name} onChange={(e) => setName(e.currentTarget.value)}>
          <option value="">Choose…</option>
          {(workflows || []).map((w) => (
            <option value={w.name}>
              {w.name}
              {w.scope ? ` (${w.scope})` : ''}
            </option>
          ))}
          {name && workflows && !workflows.some((w) => w.name === name) && <option value={name}>{name}</option>}
        </select>
        {fieldError('workflow')}
        <ErrorBox error={specError} what={`Could not load ${name}`} />
        {spec && spec.name === name && (
          <>
            <p class="muted">
              {fillTemplate(spec.description, fields, values)} {spec.steps.length} steps
              {typeof spec.repeat === 'number' && spec.repeat > 1 ? `, ${spec.repeat} passes` : ''}
              {typeof spec.repeat === 'string' ? `, passes: ${fillTemplate(spec.repeat, fields, values)}` : ''}
              {(typeof spec.repeat === 'string' || spec.repeat > 1) && spec.soak_between && !/^0+[a-z]*$/.test(fillTemplate(spec.soak_between, fields, values))
                ? `, ${fillTemplate(spec.soak_between, fields, values)} apart`
                : ''}
              .
            </p>
            <p class="notice small" data-testid="run-effect">
              {EFFECTS[name] || 'Manual run: the hosts keep their lifecycle state whatever the outcome.'}
            </p>
            <fieldset>
              <legend>Targets</legend>
              {!podScope && (
                <>
                  <label for="run-hosts">Hosts (ids, one a line or comma separated)</label>
                  <textarea id="run-hosts" rows={3} value={hostsText} onInput={(e) => setHostsText(e.currentTarget.value)} spellcheck={false} />
                  {fieldError('hosts')}
                </>
              )}
              <label for="run-pods">{podScope ? 'Pods (this workflow runs on whole pods)' : 'Pods (every host of each pod)'}</label>
              <textarea id="run-pods" rows={2} value={podsText} onInput={(e) => setPodsText(e.currentTarget.value)} spellcheck={false} />
              {fieldError('pods')}
              {podScope && hostsText.trim() && (
                <p class="muted small">
                  Hosts given ({hostsText.trim().split(/\s+/).join(', ')}) are ignored: give their pods.
                </p>
              )}
            </fieldset>
            <fieldset>
              <legend>Params</legend>
              {fields.length === 0 && <p class="muted">This workflow declares no params.</p>}
              <div class="params">
                {fields.map((f) => (
                  <div class="param" data-param={f.name}>
                    <label for={`param-${f.name}`}>
                      <span class="mono">{f.name}</span> = <span class="muted small">({f.type}{f.required ? ', required' : `, default ${f.default === '' ? 'empty' : f.default}`})</span>
                    </label>
                    {f.type === 'bool' ? (
                      <select id={`param-${f.name}`} value={values[f.name]} onChange={(e) => setValues({ ...values, [f.name]: e.currentTarget.value })}>
                        <option value="true">true</option>
                        <option value="false">false</option>
                      </select>
                    ) : (
                      <input
                        id={`param-${f.name}`}
                        type="text"
                        inputMode={f.type === 'int' ? 'numeric' : undefined}
                        placeholder={f.type === 'duration' ? 'e.g. 30m' : ''}
                        value={values[f.name] ?? ''}
                        onInput={(e) => setValues({ ...values, [f.name]: e.currentTarget.value })}
                        aria-invalid={errs[`param:${f.name}`] ? 'true' : undefined}
                      />
                    )}
                    {f.description && <span class="muted small">{fillTemplate(f.description, fields, values)}</span>}
                    {fieldError(`param:${f.name}`)}
                  </div>
                ))}
              </div>
              {fieldError('params')}
            </fieldset>
          </>
        )}
        {error && (
          <div class="error-box" role="alert" data-testid="start-error">
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
          <a class="button" href="#/runs">
            Back
          </a>
          <button class="primary" type="submit" disabled={busy || !spec} data-testid="start-run-submit">
            {busy ? 'Starting…' : 'Start run'}
          </button>
        </div>
      </form>
    </div>
  );
}

// Links to the Start-run form with targets preselected (pod panel, host view). Operators only.
// l11-burn-in runs on whole pods, so a host's burn-in shortcut preselects its pod (burnInPods).
export function RunShortcuts({ role, hosts, pods, burnInPods }) {
  if (!roleAtLeast(role, 'operator')) return null;
  const t = { hosts: (hosts || []).join(','), pods: (pods || []).join(',') };
  const b = { pods: (burnInPods || pods || []).join(',') };
  return (
    <div class="buttons" data-testid="run-shortcuts">
      <a class="button" data-start-run="pre-job" href={href('/runs/new', { workflow: PRE_JOB_WORKFLOW, ...t })}>
        Run pre-job check
      </a>
      <a class="button" data-start-run="burn-in" href={href('/runs/new', { workflow: BURN_IN_WORKFLOW, ...b })}>
        Run burn-in
      </a>
    </div>
  );
}
