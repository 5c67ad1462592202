// Small shared pieces: state chips, error boxes, tables of key/values, modal dialogs.
import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { inertOutside, trapTab } from './a11y.js';
import { api } from './api.js';
import { Actor } from './actors.jsx';
import { ago, fmtTime, heatmapPlatforms, hostState, podState } from './model.js';

const FOCUSABLE = 'a[href], button:not([disabled]), input:not([disabled]), select:not([disabled]), textarea:not([disabled]), [tabindex]:not([tabindex="-1"])';

// A modal dialog's focus handling: focuses into the dialog when it opens (an [autofocus]
// element, else the first focusable one, unless the caller already did), keeps Tab and
// Shift+Tab inside it, closes on Escape, makes the rest of the app inert while it is open, and
// gives focus back to what opened it on close.
// Returns {ref} for the dialog element and onKeyDown for it (or its backdrop).
export function useDialog(onCancel) {
  const ref = useRef(null);
  // Read during the first render, before the dialog takes the focus: the opener.
  const [opener] = useState(() => (typeof document !== 'undefined' ? document.activeElement : null));
  const cancel = useRef(onCancel);
  cancel.current = onCancel;
  // A layout effect: it runs as the dialog enters the DOM, before the browser paints it or
  // handles another key. With useEffect (after paint) a Tab pressed the moment the dialog
  // showed still moved focus on the page behind it (the browser tier caught it under load).
  useLayoutEffect(() => {
    const el = ref.current;
    // The page behind the dialog: no focus, no clicks, not read out (the backdrop only dims it).
    const behind = el ? inertOutside(el, document.body) : [];
    for (const node of behind) node.setAttribute('inert', '');
    if (el && !el.contains(document.activeElement)) {
      const target = el.querySelector('[autofocus]') || el.querySelector(FOCUSABLE);
      if (target) target.focus();
    }
    return () => {
      for (const node of behind) node.removeAttribute('inert');
      if (opener && opener !== document.body && opener.isConnected && typeof opener.focus === 'function') opener.focus();
      else {
        const main = document.getElementById('main');
        if (main) main.focus();
      }
    };
  }, []);
  const onKeyDown = (e) => {
    if (e.key === 'Escape') {
      e.preventDefault();
      e.stopPropagation();
      cancel.current();
      return;
    }
    if (e.key !== 'Tab' || !ref.current) return;
    const items = Array.from(ref.current.querySelectorAll(FOCUSABLE)).filter((x) => x.offsetParent !== null || x === document.activeElement);
    if (items.length === 0) {
      e.preventDefault();
      return;
    }
    const next = trapTab(items.length, items.indexOf(document.activeElement), e.shiftKey);
    if (next >= 0) {
      e.preventDefault();
      items[next].focus();
    }
  };
  return { ref, onKeyDown };
}

export function PodStateChip({ state }) {
  const s = podState(state);
  return (
    <span class={`chip pod-${s.id}`} data-state={state}>
      <span class="chip-code" aria-hidden="true">
        {s.short}
      </span>
      {s.label}
    </span>
  );
}

export function HostStateChip({ state }) {
  const s = hostState(state);
  return (
    <span class={`chip tone-${s.tone}`} data-state={state} data-testid="host-state">
      {s.label}
    </span>
  );
}

export function ErrorBox({ error, what }) {
  if (!error) return null;
  return (
    <div class="error-box" role="alert">
      {what ? `${what}: ` : ''}
      {error.message || String(error)}
      {error.code && error.status ? <span class="muted small"> ({error.status} {error.code})</span> : null}
    </div>
  );
}

// " (422 invalid_content)" after an API error's message; nothing for an error kilnd did not send.
export function ErrorStatus({ error }) {
  return error && error.status ? (
    <span class="muted small">
      {' '}
      ({error.status} {error.code})
    </span>
  ) : null;
}

export function KeyValues({ rows }) {
  return (
    <dl class="kv">
      {rows
        .filter((r) => r && r[1] !== undefined && r[1] !== null && r[1] !== '')
        .map(([k, v]) => (
          <>
            <dt>{k}</dt>
            <dd>{v}</dd>
          </>
        ))}
    </dl>
  );
}

export function EventTable({ events, showHost }) {
  return (
    <table class="table events" data-testid="events">
      <thead>
        <tr>
          <th scope="col">When</th>
          {showHost && <th scope="col">Host</th>}
          <th scope="col">Action</th>
          <th scope="col">From → to</th>
          <th scope="col">By</th>
          <th scope="col">Reason</th>
        </tr>
      </thead>
      <tbody>
        {events.map((e) => (
          <tr key={e.id}>
            <td title={fmtTime(e.at)}>{ago(e.at)}</td>
            {showHost && (
              <td>
                <a href={`#/hosts/${encodeURIComponent(e.host)}`}>{e.host}</a>
              </td>
            )}
            <td>{e.action}</td>
            <td>
              {e.from || '—'} → {e.to}
            </td>
            <td>
              <Actor id={e.actor} />
            </td>
            <td>{e.reason}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

// A chip for a {label, tone} of a state vocabulary (runs-model.js); data-state for tests.
export function ToneChip({ info, state, testid }) {
  return (
    <span class={`chip tone-${info.tone}`} data-state={state} data-testid={testid}>
      {info.label}
    </span>
  );
}

// A modal confirmation: title, body, a confirm button (danger styling optional), an error
// line, Escape or the Back button to close. onConfirm may be async; busy disables the button.
export function ConfirmDialog({ title, children, confirmLabel, danger, busy, error, onConfirm, onCancel }) {
  const dlg = useDialog(onCancel);
  return (
    <div class="modal-backdrop" onKeyDown={dlg.onKeyDown}>
      <form
        ref={dlg.ref}
        class="modal card"
        role="dialog"
        aria-modal="true"
        aria-labelledby="confirm-title"
        onSubmit={(e) => {
          e.preventDefault();
          onConfirm();
        }}
      >
        <h2 id="confirm-title">{title}</h2>
        {children}
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <div class="buttons right">
          <button type="button" onClick={onCancel} autofocus>
            Back
          </button>
          <button type="submit" class={danger ? 'danger' : 'primary'} disabled={busy} data-confirm="1">
            {busy ? 'Working…' : confirmLabel}
          </button>
        </div>
      </form>
    </div>
  );
}

// The fleet's platforms (GET /fleet/heatmap's platform column), for the platform menus of views
// that do not load the fleet themselves. One request a minute at most across views; [] until
// it answers (or when it fails: the menus then offer only "All").
let platformsCache = { at: 0, promise: null };
export function useFleetPlatforms() {
  const [platforms, setPlatforms] = useState([]);
  useEffect(() => {
    let live = true;
    if (!platformsCache.promise || Date.now() - platformsCache.at > 60000) {
      platformsCache = { at: Date.now(), promise: api('/fleet/heatmap').then(heatmapPlatforms) };
      platformsCache.promise.catch(() => (platformsCache = { at: 0, promise: null }));
    }
    platformsCache.promise.then(
      (p) => live && setPlatforms(p),
      () => undefined,
    );
    return () => {
      live = false;
    };
  }, []);
  return platforms;
}

// kilnd's configured targets (GET /targets): {reliability: {per_8k_gpus_per_day,
// mtbi_gpu_hours}, rollouts: {pod_p90_s}}, or null until it answers.
export function useTargets() {
  const [targets, setTargets] = useState(null);
  useEffect(() => {
    let live = true;
    api('/targets').then(
      (t) => live && setTargets(t),
      () => undefined,
    );
    return () => {
      live = false;
    };
  }, []);
  return targets;
}
