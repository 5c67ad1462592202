// Reliability: interruptions per 8K GPUs per day and MTBI in GPU-hours against kilnd's north
// star (its reliability_target), GPU-hours in service, and how much of the window the fleet's
// history covers; the weekly rate against the north-star
// line; causes with their shares; lemon hosts (send one to quarantine validation); and a form
// to record an interruption. Window and scope in the URL; live by polling.
import { useEffect, useState } from 'preact/hooks';
import { api, qs } from './api.js';
import { usePoll } from './live.js';
import { fmtInt, fmtTime, platformOptions, roleAtLeast } from './model.js';
import { href, navigate } from './route.js';
import {
  CAUSES,
  causeLabel,
  fmtNumber,
  fmtSpan,
  interruptionBody,
  mtbiVerdict,
  newInterruptionId,
  coverage,
  rateVerdict,
  reportQuery,
  weeklyChart,
  WINDOWS,
} from './reliability-model.js';
import { fieldErrors } from './runs-model.js';
import { ConfirmDialog, ErrorBox, HostStateChip, useFleetPlatforms } from './ui.jsx';

// Host states the `quarantine` action accepts (core/host_lifecycle.cc).
const QUARANTINABLE = ['available', 'allocated', 'draining', 'maintenance', 'validating', 'failed'];

export function ReliabilityView({ route, role }) {
  const params = route.params;
  const [report, setReport] = useState(null); // {key, data}
  const [error, setError] = useState(null);
  const [sites, setSites] = useState([]);
  const [lemon, setLemon] = useState(null); // the lemon to quarantine
  const [notice, setNotice] = useState('');
  const platforms = useFleetPlatforms();
  const key = JSON.stringify(params);

  useEffect(() => {
    api('/sites').then(
      (r) => setSites(r.items.map((s) => s.id)),
      () => undefined,
    );
  }, []);

  const refresh = usePoll(
    async (isCurrent) => {
      try {
        const data = await api(`/reliability${qs(reportQuery(params, Date.now()))}`);
        if (!isCurrent()) return;
        setReport({ key, data });
        setError(null);
      } catch (e) {
        if (isCurrent()) setError(e);
        throw e;
      }
    },
    10000,
    [key],
  );

  const set = (k, v) => navigate('/reliability', { ...params, [k]: v }, true);
  const shown = report && report.key === key ? report.data : null;
  const win = params.window || '28';
  const canAct = roleAtLeast(role, 'operator');
  return (
    <div class="reliability-view">
      <div class="fleet-head">
        <h1>Reliability</h1>
        <p class="muted" data-testid="reliability-window">
          {shown ? `${fmtTime(shown.from)} → ${fmtTime(shown.to)} (${fmtNumber(shown.days)} days)` : 'Loading…'}
        </p>
      </div>
      <div class="filters" role="group" aria-label="Window and scope">
        <span class="filter">
          <span>Window</span>
          <span class="buttons seg-buttons">
            {WINDOWS.map((w) => (
              <button type="button" class={win === w.id ? 'on' : ''} aria-pressed={win === w.id} data-window={w.id} onClick={() => set('window', w.id === '28' ? '' : w.id)}>
                {w.label}
              </button>
            ))}
          </span>
        </span>
        {win === 'custom' && (
          <>
            <label class="filter" for="rel-from">
              <span>From (UTC)</span>
              <input id="rel-from" type="date" value={params.from || ''} onChange={(e) => set('from', e.currentTarget.value)} />
            </label>
            <label class="filter" for="rel-to">
              <span>To (UTC)</span>
              <input id="rel-to" type="date" value={params.to || ''} onChange={(e) => set('to', e.currentTarget.value)} />
            </label>
          </>
        )}
        <label class="filter" for="rel-site">
          <span>Site</span>
          <select id="rel-site" value={params.site || ''} onChange={(e) => set('site', e.currentTarget.value)}>
            <option value="">All</option>
            {sites.map((s) => (
              <option value={s}>{s}</option>
            ))}
            {params.site && !sites.includes(params.site) && <option value={params.site}>{params.site}</option>}
          </select>
        </label>
        <TextFilter id="rel-building" label="Building" value={params.building || ''} placeholder="prn-b01" onChange={(v) => set('building', v)} />
        <label class="filter" for="rel-platform">
          <span>Platform</span>
          <select id="rel-platform" value={params.platform || ''} onChange={(e) => set('platform', e.currentTarget.value)}>
            <option value="">All</option>
            {platformOptions(platforms, params.platform).map((p) => (
              <option value={p}>{p}</option>
            ))}
          </select>
        </label>
        <TextFilter
          id="rel-lemon"
          label="Lemon threshold"
          value={params.lemon_threshold || ''}
          placeholder="2"
          type="number"
          onChange={(v) => set('lemon_threshold', v)}
        />
      </div>
      <ErrorBox error={error} what="Could not load the report" />
      {notice && (
        <p class="notice" role="status">
          {notice}
        </p>
      )}
      {shown && <Report r={shown} canAct={canAct} onQuarantine={setLemon} />}
      {canAct && (
        <RecordInterruption
          onRecorded={(it) => {
            setNotice(`Interruption ${it.id} recorded (${causeLabel(it.cause)}).`);
            refresh();
          }}
        />
      )}
      {lemon && shown && (
        <QuarantineDialog
          lemon={lemon}
          report={shown}
          onDone={(msg) => {
            setLemon(null);
            setNotice(msg);
            refresh();
          }}
          onCancel={() => setLemon(null)}
        />
      )}
    </div>
  );
}

// A text filter applied on Enter or blur (not on every key: each is a report query).
function TextFilter({ id, label, value, placeholder, type = 'text', onChange }) {
  const [text, setText] = useState(value);
  useEffect(() => setText(value), [value]);
  return (
    <form
      class="filter"
      onSubmit={(e) => {
        e.preventDefault();
        onChange(text.trim());
      }}
    >
      <label for={id}>{label}</label>
      <input
        id={id}
        type={type}
        min={type === 'number' ? 0 : undefined}
        placeholder={placeholder}
        value={text}
        onInput={(e) => setText(e.currentTarget.value)}
        onBlur={() => text.trim() !== value && onChange(text.trim())}
      />
    </form>
  );
}

function BigNumber({ label, value, unit, verdict, testid }) {
  return (
    <div class="big-number" data-testid={testid} data-ok={verdict ? String(verdict.ok) : undefined}>
      <div class="big-label">{label}</div>
      <div class="big-value">
        {value} {unit && <span class="big-unit">{unit}</span>}
      </div>
      {verdict && (
        <div class={`small verdict ${verdict.ok === true ? 'good' : verdict.ok === false ? 'bad' : ''}`}>
          <span aria-hidden="true">{verdict.ok === true ? '✓ ' : verdict.ok === false ? '✗ ' : ''}</span>
          {verdict.text}
        </div>
      )}
    </div>
  );
}

function Report({ r, canAct, onQuarantine }) {
  const ns = r.north_star;
  const cov = coverage(r, fmtTime);
  return (
    <>
      {cov.partial && (
        <p class="notice caveat" role="note" data-testid="coverage-caveat" data-covered-days={String(cov.covered_days)}>
          <strong>Short history:</strong> {cov.text}
        </p>
      )}
      <section class="big-numbers" aria-label="Headline figures">
        <BigNumber
          testid="rate"
          label={cov.partial && !cov.none ? `Interruptions per 8K GPUs per day (over ${fmtSpan(cov.covered_days)})` : 'Interruptions per 8K GPUs per day'}
          value={fmtNumber(r.per_8k_gpus_per_day)}
          verdict={rateVerdict(r.per_8k_gpus_per_day, ns.per_8k_gpus_per_day, cov)}
        />
        <BigNumber
          testid="mtbi"
          label="MTBI"
          value={r.mtbi_gpu_hours === null ? '∞' : fmtNumber(r.mtbi_gpu_hours)}
          unit="GPU-hours"
          verdict={mtbiVerdict(r.mtbi_gpu_hours, r.interruptions, ns.mtbi_gpu_hours, cov)}
        />
        <BigNumber testid="gpu-hours" label="GPU-hours in service" value={fmtNumber(r.gpu_hours)} verdict={{ ok: null, text: 'hosts available or allocated' }} />
        <BigNumber
          testid="interruptions"
          label="Interruptions"
          value={fmtInt(r.interruptions)}
          verdict={{ ok: null, text: r.candidates ? `+ ${r.candidates} candidate${r.candidates === 1 ? '' : 's'} (allocated host failed; not counted)` : 'recorded in the window' }}
        />
      </section>
      <div class="host-grid">
        <section class="card" aria-labelledby="rel-weekly">
          <h2 id="rel-weekly">Weekly rate against the north star</h2>
          <WeeklyChart weekly={r.weekly} target={ns.per_8k_gpus_per_day} />
        </section>
        <section class="card" aria-labelledby="rel-causes">
          <h2 id="rel-causes">Causes</h2>
          <Causes causes={r.causes} />
        </section>
      </div>
      <section class="card" aria-labelledby="rel-lemons">
        <h2 id="rel-lemons">
          Lemons <span class="muted small">(interruptions + repairs in the window above {r.lemon_threshold})</span>
        </h2>
        {r.lemons.length === 0 ? (
          <p class="muted">No lemon host in this window.</p>
        ) : (
          <table class="table" data-testid="lemons">
            <thead>
              <tr>
                <th scope="col">Host</th>
                <th scope="col">Pod</th>
                <th scope="col">State</th>
                <th scope="col">Interruptions</th>
                <th scope="col">Repairs</th>
                {canAct && <th scope="col">Action</th>}
              </tr>
            </thead>
            <tbody>
              {r.lemons.map((l) => (
                <tr data-host={l.host}>
                  <td>
                    <a href={`#/hosts/${encodeURIComponent(l.host)}`}>{l.host}</a>
                  </td>
                  <td>
                    <a href={href('/fleet', { pod: l.pod })}>{l.pod}</a>
                  </td>
                  <td>
                    <HostStateChip state={l.state} />
                  </td>
                  <td data-testid="lemon-interruptions">{l.interruptions}</td>
                  <td>{l.repairs}</td>
                  {canAct && (
                    <td>
                      {QUARANTINABLE.includes(l.state) ? (
                        <button type="button" data-action="quarantine" onClick={() => onQuarantine(l)}>
                          Send to quarantine…
                        </button>
                      ) : (
                        <span class="muted small">{l.state === 'quarantine' ? 'in quarantine' : `not from ${l.state}`}</span>
                      )}
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </>
  );
}

function WeeklyChart({ weekly, target }) {
  if (!weekly.length) return <p class="muted">No week in the window.</p>;
  const c = weeklyChart(weekly, { target });
  const drawn = c.points.filter((p) => p.y !== null);
  const path = drawn.map((p, i) => `${i ? 'L' : 'M'}${p.x.toFixed(1)},${p.y.toFixed(1)}`).join(' ');
  const label = (v) => (v >= 1000 ? `${fmtNumber(v / 1000)}k` : fmtNumber(v));
  const day = (iso) => String(iso).slice(5, 10);
  const every = Math.max(1, Math.ceil(weekly.length / 8));
  return (
    <figure class="chart" data-testid="weekly-chart">
      <svg viewBox={`0 0 ${c.w} ${c.h}`} role="img" aria-label={`Interruptions per 8K GPUs per day by week${c.log ? ' (log scale)' : ''}, north star ${target}`}>
        {c.ticks.map((t) => (
          <g>
            <line x1={c.pad.l} x2={c.w - c.pad.r} y1={t.y} y2={t.y} class="grid" />
            <text x={c.pad.l - 6} y={t.y + 4} text-anchor="end" class="tick">
              {label(t.v)}
            </text>
          </g>
        ))}
        <line x1={c.pad.l} x2={c.w - c.pad.r} y1={c.targetY} y2={c.targetY} class="north-star" data-testid="north-star-line" />
        <text x={c.w - c.pad.r} y={c.targetY - 5} text-anchor="end" class="north-star-label">
          north star {target}
        </text>
        {path && <path d={path} class="series" />}
        {drawn.map((p) => (
          <circle cx={p.x} cy={p.y} r="4" class="point">
            <title>
              week of {day(p.week)}: {fmtNumber(p.value)} per 8K GPUs per day
            </title>
          </circle>
        ))}
        {c.points.map((p, i) =>
          i % every === 0 ? (
            <text x={p.x} y={c.h - c.pad.b + 16} text-anchor="middle" class="tick">
              {day(p.week)}
            </text>
          ) : null,
        )}
      </svg>
      <figcaption class="muted small">
        Solid line: the weekly rate{c.log ? ' (log scale)' : ''}; dashed line: the north star of {target} per 8K GPUs per day. Weeks start on Monday (UTC).
      </figcaption>
      <details>
        <summary class="small">As a table</summary>
        <table class="table small" data-testid="weekly">
          <thead>
            <tr>
              <th scope="col">Week of</th>
              <th scope="col">GPU-hours</th>
              <th scope="col">Interruptions</th>
              <th scope="col">Per 8K GPUs per day</th>
              <th scope="col">MTBI (GPU-hours)</th>
            </tr>
          </thead>
          <tbody>
            {weekly.map((w) => (
              <tr>
                <td>{String(w.week).slice(0, 10)}</td>
                <td>{fmtNumber(w.gpu_hours)}</td>
                <td>{w.interruptions}</td>
                <td>{fmtNumber(w.per_8k_gpus_per_day)}</td>
                <td>{w.mtbi_gpu_hours === null ? '∞' : fmtNumber(w.mtbi_gpu_hours)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </details>
    </figure>
  );
}

function Causes({ causes }) {
  if (!causes.length) return <p class="muted">No interruption in the window.</p>;
  const top = Math.max(...causes.map((c) => c.share));
  return (
    <ul class="bars" data-testid="causes">
      {causes.map((c) => (
        <li data-cause={c.cause}>
          <span class="bar-label">{causeLabel(c.cause)}</span>
          <span class="bar-track" aria-hidden="true">
            <span class="bar" style={{ width: `${(100 * c.share) / (top || 1)}%` }} />
          </span>
          <span class="bar-value">
            {c.count} · {fmtNumber(100 * c.share)}%
          </span>
        </li>
      ))}
    </ul>
  );
}

function QuarantineDialog({ lemon, report, onDone, onCancel }) {
  const [reason, setReason] = useState(
    `lemon: ${lemon.interruptions} interruption${lemon.interruptions === 1 ? '' : 's'} and ${lemon.repairs} repair${lemon.repairs === 1 ? '' : 's'} ${report.days ? `in ${fmtNumber(report.days)} days` : ''}`.trim(),
  );
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const confirm = async () => {
    if (!reason.trim()) {
      setError('Give a reason (it is kept in the host history).');
      return;
    }
    setBusy(true);
    setError('');
    try {
      const h = await api(`/hosts/${encodeURIComponent(lemon.host)}/actions`, { method: 'POST', body: { action: 'quarantine', reason: reason.trim() } });
      onDone(`${lemon.host} is ${h.state === 'quarantine' ? 'in quarantine' : h.state}${h.quarantine_run ? `; validation run ${h.quarantine_run} started` : ''}.`);
    } catch (e) {
      setError(e.status === 409 ? `Not possible now: ${e.message}` : e.message);
      setBusy(false);
    }
  };
  return (
    <ConfirmDialog title={`Send ${lemon.host} to quarantine?`} confirmLabel="Send to quarantine" danger busy={busy} error={error} onConfirm={confirm} onCancel={onCancel}>
      <p>
        {lemon.host} (pod {lemon.pod}, now {lemon.state}) had {lemon.interruptions} interruption{lemon.interruptions === 1 ? '' : 's'} and {lemon.repairs} repair
        {lemon.repairs === 1 ? '' : 's'} in the window.
      </p>
      <p class="muted">
        The host leaves the job pool now{lemon.state === 'allocated' ? ' (its job loses it)' : ''} and returns only when a quarantine-validation run passes.
      </p>
      <label for="q-reason">
        Reason
        <input id="q-reason" type="text" value={reason} onInput={(e) => setReason(e.currentTarget.value)} />
      </label>
    </ConfirmDialog>
  );
}

function localInput(ms) {
  const d = new Date(ms);
  return new Date(ms - d.getTimezoneOffset() * 60000).toISOString().slice(0, 16);
}

function RecordInterruption({ onRecorded }) {
  const blank = () => ({ id: newInterruptionId(Date.now()), at: localInput(Date.now()), cause: 'unknown', hosts: '', pod: '', job: '', job_gpus: '', owner: '', description: '' });
  const [open, setOpen] = useState(false);
  const [f, setF] = useState(blank);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState(null);
  if (!open)
    return (
      <p>
        <button type="button" onClick={() => setOpen(true)} data-testid="record-interruption">
          Record an interruption…
        </button>
      </p>
    );
  const errs = error && error.status === 422 ? fieldErrors(error.details, error.message) : {};
  const submit = async (e) => {
    e.preventDefault();
    setBusy(true);
    setError(null);
    try {
      const at = new Date(f.at);
      if (Number.isNaN(at.getTime())) throw Object.assign(new Error('Give the time of the interruption.'), { status: 422, details: { field: 'at' } });
      const it = await api('/interruptions', { method: 'POST', body: interruptionBody({ ...f, at: at.toISOString().replace(/\.\d{3}Z$/, 'Z') }) });
      setF(blank());
      setOpen(false);
      onRecorded(it);
    } catch (err) {
      setError(err);
    }
    setBusy(false);
  };
  const field = (k, label, props = {}) => (
    <div class="param">
      <label for={`int-${k}`}>{label}</label>
      <input id={`int-${k}`} type="text" value={f[k]} onInput={(e) => setF({ ...f, [k]: e.currentTarget.value })} aria-invalid={errs[k] ? 'true' : undefined} {...props} />
      {errs[k] && (
        <span class="error small" role="alert">
          {errs[k]}
        </span>
      )}
    </div>
  );
  return (
    <form class="card form record-interruption" onSubmit={submit} data-testid="interruption-form" aria-labelledby="int-title">
      <h2 id="int-title">Record an interruption</h2>
      <p class="muted small">A job lost to a hardware or software fault. Give the affected hosts or the pod. The id makes a retry harmless.</p>
      <div class="params">
        {field('id', 'Id')}
        {field('at', 'When (your local time)', { type: 'datetime-local' })}
        <div class="param">
          <label for="int-cause">Cause</label>
          <select id="int-cause" value={f.cause} onChange={(e) => setF({ ...f, cause: e.currentTarget.value })}>
            {CAUSES.map((c) => (
              <option value={c}>{causeLabel(c)}</option>
            ))}
          </select>
        </div>
        {field('hosts', 'Hosts (ids, comma separated)')}
        {field('pod', 'Pod')}
        {field('job', 'Job')}
        {field('job_gpus', 'Job GPUs', { inputMode: 'numeric' })}
        {field('owner', 'Owner')}
      </div>
      <label for="int-description">Description</label>
      <textarea id="int-description" rows={2} value={f.description} onInput={(e) => setF({ ...f, description: e.currentTarget.value })} />
      {error && (
        <div class="error-box" role="alert" data-testid="interruption-error">
          {error.message}
          {error.status ? <span class="muted small"> ({error.status} {error.code})</span> : null}
        </div>
      )}
      <div class="buttons right">
        <button type="button" onClick={() => setOpen(false)}>
          Cancel
        </button>
        <button type="submit" class="primary" disabled={busy} data-testid="record-submit">
          {busy ? 'Recording…' : 'Record interruption'}
        </button>
      </div>
    </form>
  );
}
