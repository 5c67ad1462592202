// The console shell: sign-in, header (role, live indicator), and the views by hash route.
import { useEffect, useState } from 'preact/hooks';
import { ApiError, clearToken, getToken, onUnauthorized, setToken, whoami } from './api.js';
import { useLiveStatus, useTicker } from './live.js';
import { useRoute } from './route.js';
import { FleetView } from './fleet.jsx';
import { HostView } from './host.jsx';
import { HostShortcuts, HostsView } from './hosts.jsx';
import { HeaderSearch } from './search.jsx';
import { QuarantineView } from './quarantine.jsx';
import { ReliabilityView } from './reliability.jsx';
import { NewRolloutView, RolloutsView, RolloutView } from './rollouts.jsx';
import { RunsView, RunView, StartRunView } from './runs.jsx';
import { AuditView, CapacityView, TokensView } from './admin.jsx';
import { BundleDiffView, BundlesView, BundleView } from './bundles.jsx';
import { roleAtLeast } from './model.js';

// The views in the navigation ({id, label, href, match, render}).
const VIEWS = [
  {
    id: 'fleet',
    label: 'Fleet',
    href: '#/fleet',
    match: (r) => r.segments[0] === 'fleet',
    render: (r, role) => <FleetView route={r} role={role} />,
  },
  {
    id: 'hosts',
    label: 'Hosts',
    href: '#/hosts',
    match: (r) => r.segments[0] === 'hosts',
    render: (r, role) => (r.segments[1] ? <HostView hostId={r.segments[1]} role={role} /> : <HostsView route={r} role={role} />),
  },
  {
    id: 'rollouts',
    label: 'Rollouts',
    href: '#/rollouts',
    match: (r) => r.segments[0] === 'rollouts',
    render: (r, role) => {
      const id = r.segments[1];
      if (id === 'new') return <NewRolloutView route={r} role={role} />;
      if (id) return <RolloutView rolloutId={id} role={role} />;
      return <RolloutsView route={r} role={role} />;
    },
  },
  {
    id: 'runs',
    label: 'Workflow runs',
    href: '#/runs',
    match: (r) => r.segments[0] === 'runs',
    render: (r, role) => {
      const id = r.segments[1];
      if (id === 'new') return <StartRunView route={r} role={role} />;
      if (id) return <RunView runId={id} role={role} />;
      return <RunsView route={r} role={role} />;
    },
  },
  {
    id: 'quarantine',
    label: 'Quarantine',
    href: '#/quarantine',
    match: (r) => r.segments[0] === 'quarantine',
    render: () => <QuarantineView />,
  },
  {
    id: 'reliability',
    label: 'Reliability',
    href: '#/reliability',
    match: (r) => r.segments[0] === 'reliability',
    render: (r, role) => <ReliabilityView route={r} role={role} />,
  },
  {
    id: 'bundles',
    label: 'Bundles',
    href: '#/bundles',
    match: (r) => r.segments[0] === 'bundles',
    render: (r, role) => {
      const id = r.segments[1];
      if (id === 'diff') return <BundleDiffView route={r} />;
      if (id) return <BundleView bundleId={id} route={r} role={role} />;
      return <BundlesView route={r} role={role} />;
    },
  },
  {
    id: 'capacity',
    label: 'Capacity',
    href: '#/capacity',
    match: (r) => r.segments[0] === 'capacity',
    render: (r) => <CapacityView route={r} />,
  },
  // minRole: the link shows only for that role and above; the page itself refuses politely.
  {
    id: 'audit',
    label: 'Audit',
    href: '#/audit',
    minRole: 'operator',
    match: (r) => r.segments[0] === 'audit',
    render: (r, role) => <AuditView route={r} role={role} />,
  },
  {
    id: 'tokens',
    label: 'Tokens',
    href: '#/tokens',
    minRole: 'admin',
    match: (r) => r.segments[0] === 'tokens',
    render: (r, role) => <TokensView role={role} />,
  },
];

export function App() {
  const [session, setSession] = useState(null); // GET /whoami: {token_id, name, role}
  const [checking, setChecking] = useState(!!getToken());
  const [signInError, setSignInError] = useState('');

  const signOut = (why) => {
    clearToken();
    setSession(null);
    setSignInError(why || '');
  };

  useEffect(() => {
    onUnauthorized(() => signOut('kilnd no longer accepts this token (revoked?). Sign in again.'));
    const t = getToken();
    if (!t) return;
    whoami(t)
      .then((me) => setSession(me))
      .catch((e) => {
        if (e instanceof ApiError && (e.status === 401 || e.status === 403)) signOut('The saved token is no longer accepted.');
        else setSignInError(e.message);
      })
      .finally(() => setChecking(false));
  }, []);

  if (checking) return <main class="center muted">Checking the saved token…</main>;
  if (!session)
    return (
      <SignIn
        error={signInError}
        onSignedIn={(token, me) => {
          setToken(token);
          setSignInError('');
          setSession(me);
        }}
      />
    );
  return <Shell me={session} onSignOut={() => signOut('')} />;
}

function SignIn({ error, onSignedIn }) {
  const [token, setTok] = useState('');
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState(error);
  useEffect(() => setErr(error), [error]);
  const submit = async (ev) => {
    ev.preventDefault();
    const t = token.trim();
    if (!t) {
      setErr('Paste an API token.');
      return;
    }
    setBusy(true);
    try {
      onSignedIn(t, await whoami(t));
    } catch (e) {
      if (e.status === 401) setErr('kilnd does not accept this token.');
      else if (e.code === 'not_a_console_token') setErr(`${e.message} Sign in with a viewer, operator or admin token.`);
      else if (e.status === 403) setErr('This token cannot use the console (agent and enrol tokens cannot).');
      else setErr(e.message);
      setBusy(false);
    }
  };
  return (
    <main class="signin">
      <form class="card signin-card" onSubmit={submit} aria-labelledby="signin-title">
        <h1 id="signin-title">
          <span class="logo" aria-hidden="true" /> Kiln
        </h1>
        <p class="muted">Fleet maintenance and firmware rollouts. Sign in with an API token (kilnd prints the admin token at start; admins create others).</p>
        <label for="token">API token</label>
        <input id="token" name="token" type="password" autocomplete="off" spellcheck={false} value={token} onInput={(e) => setTok(e.currentTarget.value)} autofocus />
        {err && (
          <p class="error" role="alert">
            {err}
          </p>
        )}
        <button class="primary" type="submit" disabled={busy}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
        <p class="muted small">The token stays in this browser tab only (session storage).</p>
      </form>
    </main>
  );
}

function Shell({ me, onSignOut }) {
  const role = me.role;
  const route = useRoute();
  const view = route.segments.length === 0 ? VIEWS[0] : VIEWS.find((v) => v.match(route));
  return (
    <div class="shell">
      <a class="skip-link" href="#main" onClick={skipToMain}>
        Skip to main content
      </a>
      <header class="topbar">
        <a class="brand" href="#/fleet">
          <span class="logo" aria-hidden="true" /> Kiln
        </a>
        <nav aria-label="Views">
          {VIEWS.filter((v) => !v.minRole || roleAtLeast(role, v.minRole)).map((v) => (
            <a href={v.href} class={v === view ? 'active' : ''} aria-current={v === view ? 'page' : undefined}>
              {v.label}
            </a>
          ))}
        </nav>
        <div class="spacer" />
        <HostShortcuts />
        <HeaderSearch route={route} />
        <LiveIndicator />
        {me.name && (
          <span class="muted small" data-testid="token-name" title={`token ${me.token_id}`}>
            {me.name}
          </span>
        )}
        <span class={`role role-${role}`} data-testid="role" title={`Role of the signed-in token${me.token_id ? ` (${me.token_id})` : ''}`}>
          {role}
        </span>
        <button class="link" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      <main class="content" id="main" tabindex={-1}>
        {view ? view.render(route, role) : <NotFound path={route.path} />}
      </main>
    </div>
  );
}

// The skip link: focus the main region without changing the hash route.
function skipToMain(ev) {
  ev.preventDefault();
  const main = document.getElementById('main');
  if (main) main.focus();
}

function NotFound({ path }) {
  return (
    <section class="card not-found" data-testid="not-found">
      <h1>No such page</h1>
      <p>
        The console has no page at <code>#{path}</code>.
      </p>
      <p>
        <a href="#/fleet">Go to the fleet overview</a>
      </p>
    </section>
  );
}

function LiveIndicator() {
  const live = useLiveStatus();
  const now = useTicker(1000);
  const age = live.lastOk ? Math.max(0, Math.round((now - live.lastOk) / 1000)) : null;
  const stale = live.error || age === null || age > 30;
  const text = live.error ? 'Reconnecting' : age === null ? 'Connecting' : 'Live';
  return (
    <span class={`live ${stale ? 'live-bad' : 'live-ok'}`} data-testid="live" title={live.error || (age !== null ? `last update ${age} s ago` : '')}>
      <span class="dot" aria-hidden="true" />
      <span role="status">{text}</span>
      {age !== null && <span class="muted small"> · {age} s ago</span>}
    </span>
  );
}
