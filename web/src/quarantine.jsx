// Quarantine: every repaired host waits here until its validation run passes (docs/FACTS.md:
// every repair goes through a mandatory quarantine). Time in quarantine, repairs (repeat
// offenders: 3 or more), the last failure, and the validation run's progress. Live.
import { useRef, useState } from 'preact/hooks';
import { api } from './api.js';
import { usePoll, useTicker } from './live.js';
import { fmtTime } from './model.js';
import { href } from './route.js';
import { fmtSeconds, repeatCount, validationText } from './runs-model.js';
import { RunStateChip } from './runs.jsx';
import { ErrorBox } from './ui.jsx';

const VALIDATION_WORKFLOW = 'quarantine-validation';

// Run details fetched per poll at most (a new validation run's params and step count).
const NEW_RUNS_PER_POLL = 20;

export function QuarantineView() {
  const [data, setData] = useState(null); // {items, at}
  const [error, setError] = useState(null);
  const [offendersOnly, setOffendersOnly] = useState(false);
  // run id -> {passes, steps}: a run's params and steps never change.
  const runInfo = useRef(new Map());
  const specs = useRef(new Map()); // workflow name -> spec (for repeat)
  const now = useTicker(1000);

  usePoll(
    async (isCurrent) => {
      try {
        const q = await api('/quarantine');
        const at = Date.now();
        const fresh = q.items.filter((it) => it.validation_run && !runInfo.current.has(it.validation_run)).slice(0, NEW_RUNS_PER_POLL);
        await Promise.all(
          fresh.map(async (it) => {
            try {
              const run = await api(`/workflow-runs/${encodeURIComponent(it.validation_run)}`);
              if (!specs.current.has(run.workflow))
                specs.current.set(run.workflow, await api(`/workflows/${encodeURIComponent(run.workflow)}`).catch(() => null));
              runInfo.current.set(run.id, {
                passes: repeatCount(specs.current.get(run.workflow), run.params),
                steps: (run.steps || []).length,
                workflow: run.workflow,
              });
            } catch {
              // shown without "of M" until a later poll gets it
            }
          }),
        );
        if (!isCurrent()) return;
        setData({ items: q.items, at });
        setError(null);
      } catch (e) {
        if (isCurrent()) setError(e);
        throw e;
      }
    },
    5000,
    [],
  );

  const items = data ? data.items : [];
  const offenders = items.filter((it) => it.repeat_offender).length;
  const shown = offendersOnly ? items.filter((it) => it.repeat_offender) : items;
  const elapsed = data ? Math.max(0, (now - data.at) / 1000) : 0;
  return (
    <div class="quarantine-view">
      <div class="fleet-head">
        <h1>Quarantine</h1>
        <p class="muted" data-testid="quarantine-summary">
          {data === null
            ? 'Loading…'
            : `${items.length} host${items.length === 1 ? '' : 's'} in quarantine${offenders ? ` · ${offenders} repeat offender${offenders === 1 ? '' : 's'}` : ''}`}
        </p>
        <label class="push-right small">
          <input type="checkbox" checked={offendersOnly} onChange={(e) => setOffendersOnly(e.currentTarget.checked)} /> Repeat offenders
          only
        </label>
      </div>
      <p class="muted small">
        A repaired host stays here until a {VALIDATION_WORKFLOW} run passes (then it is available) or fails (back to repair).
      </p>
      <ErrorBox error={error} what="Could not load the quarantine" />
      {data && shown.length === 0 && <p class="muted">{items.length ? 'No repeat offender in quarantine.' : 'No host is in quarantine.'}</p>}
      {shown.length > 0 && (
        <section class="card">
          <table class="table" data-testid="quarantine">
            <thead>
              <tr>
                <th scope="col">Host</th>
                <th scope="col">Pod</th>
                <th scope="col">In quarantine</th>
                <th scope="col">Repairs</th>
                <th scope="col">Last failure</th>
                <th scope="col">Validation run</th>
                <th scope="col">Progress</th>
              </tr>
            </thead>
            <tbody>
              {shown.map((it) => {
                const info = it.validation_run ? runInfo.current.get(it.validation_run) : null;
                const p = it.progress || {};
                return (
                  <tr key={it.host} data-host={it.host} class={it.repeat_offender ? 'row-warn' : ''}>
                    <td>
                      <a href={`#/hosts/${encodeURIComponent(it.host)}`}>{it.host}</a>
                    </td>
                    <td>
                      <a href={href('/fleet', { pod: it.pod })}>{it.pod}</a>
                    </td>
                    <td title={`since ${fmtTime(it.since_ms)}`} data-testid="time-in-quarantine">
                      {fmtSeconds(it.seconds_in_quarantine + elapsed)}
                    </td>
                    <td data-testid="repairs">
                      {it.repairs}
                      {it.repeat_offender && ' '}
                      {it.repeat_offender && <span class="tag warn">repeat offender</span>}
                    </td>
                    <td>{it.last_failure || <span class="muted">—</span>}</td>
                    <td data-testid="validation-run">
                      {it.validation_run ? (
                        <>
                          <a href={`#/runs/${encodeURIComponent(it.validation_run)}`}>{it.validation_run}</a>{' '}
                          {it.validation_state && <RunStateChip state={it.validation_state} />}
                        </>
                      ) : (
                        <span class="muted">none (start one from the host view)</span>
                      )}
                    </td>
                    <td data-testid="validation-progress">
                      {validationText(p, info && info.passes, info && info.steps)}
                      {p.waiting_until_ms && (
                        <span class="muted small"> · soaking until {fmtTime(p.waiting_until_ms)}</span>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </section>
      )}
    </div>
  );
}
