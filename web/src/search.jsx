// The header's search box, on every view ("/" focuses it): pods by id as before (findIds,
// model.js: any case, numbers as numbers, tails), and hosts by the start of their id in any
// case (GET /hosts?id_prefix=). One match, or an exact one, opens directly; several are listed.
import { useEffect, useRef, useState } from 'preact/hooks';
import { isSearchShortcut } from './a11y.js';
import { api, qs } from './api.js';
import { searchOutcome } from './hosts-model.js';
import { findIds, heatmapPods, pickFound } from './model.js';
import { navigate } from './route.js';
import { HostStateChip } from './ui.jsx';

const HOST_MATCHES = 20;
const PODS_FRESH_MS = 60000;

// The pods to search: the fleet view hands over what it loaded; other views load the heatmap
// answer once a minute at most, and only when someone searches.
let podCache = { at: 0, pods: null };
export function setSearchPods(pods) {
  podCache = { at: Date.now(), pods };
}
async function searchPods() {
  if (podCache.pods && Date.now() - podCache.at < PODS_FRESH_MS) return podCache.pods;
  const pods = heatmapPods(await api('/fleet/heatmap'));
  setSearchPods(pods);
  return pods;
}

export function HeaderSearch({ route }) {
  const [text, setText] = useState('');
  const [msg, setMsg] = useState('');
  const [result, setResult] = useState(null); // {list, more, query}
  const [busy, setBusy] = useState(false);
  const input = useRef(null);
  const box = useRef(null);
  useEffect(() => {
    const fn = (e) => {
      if (!isSearchShortcut(e) || !input.current) return;
      e.preventDefault();
      input.current.focus();
      input.current.select();
    };
    document.addEventListener('keydown', fn);
    return () => document.removeEventListener('keydown', fn);
  }, []);
  // A click elsewhere closes the list.
  useEffect(() => {
    if (!result) return undefined;
    const fn = (e) => box.current && !box.current.contains(e.target) && setResult(null);
    document.addEventListener('mousedown', fn);
    return () => document.removeEventListener('mousedown', fn);
  }, [result]);

  const open = ({ kind, id }) => {
    setMsg('');
    setResult(null);
    if (kind === 'pod') navigate('/fleet', route.segments[0] === 'fleet' ? { ...route.params, pod: id } : { pod: id });
    else navigate(`/hosts/${encodeURIComponent(id)}`, {});
  };
  const submit = async (ev) => {
    ev.preventDefault();
    const q = text.trim();
    if (!q) return;
    setBusy(true);
    setMsg('');
    try {
      const pods = await searchPods();
      const found = findIds(pods, q);
      const pick = pickFound(found);
      if (pick) {
        open({ kind: 'pod', id: pick });
        return;
      }
      const hosts = /\s/.test(q) ? { items: [], next_cursor: null } : await api(`/hosts${qs({ id_prefix: q, limit: HOST_MATCHES })}`);
      const out = searchOutcome(q, '', found, hosts.items);
      if (out.open) open(out.open);
      else if (out.none) {
        setResult(null);
        setMsg(`No pod or host matches ${q}`);
      } else setResult({ list: out.list, more: !!hosts.next_cursor, query: q });
    } catch (e) {
      setMsg(e.message);
    } finally {
      setBusy(false);
    }
  };
  const onKeyDown = (e) => {
    if (e.key === 'Escape' && result) {
      e.preventDefault();
      setResult(null);
    }
  };
  return (
    <form class="find header-find" ref={box} onSubmit={submit} role="search" onKeyDown={onKeyDown}>
      <label class="sr-only" for="find">
        Find a pod or host by id
      </label>
      <input
        id="find"
        ref={input}
        type="search"
        placeholder="Find pod or host ( / )"
        aria-keyshortcuts="/"
        autocomplete="off"
        spellcheck={false}
        value={text}
        onInput={(e) => setText(e.currentTarget.value)}
      />
      <button type="submit" disabled={busy}>
        Go
      </button>
      {msg && (
        <span class="find-msg small" role="alert">
          {msg}
        </span>
      )}
      {result && (
        <div class="find-results card" data-testid="find-results">
          <p class="muted small">
            {result.list.length}
            {result.more ? '+' : ''} matches for “{result.query}”
          </p>
          <ul class="find-matches" aria-label="Matching pods and hosts" data-testid="find-matches">
            {result.list.map((m) => (
              <li key={`${m.kind}:${m.id}`} data-kind={m.kind} data-id={m.id}>
                <button type="button" class="link" onClick={() => open(m)}>
                  {m.id}
                </button>
                <span class="tag">{m.kind}</span>
                {m.state && <HostStateChip state={m.state} />}
              </li>
            ))}
          </ul>
          {result.more && (
            <p class="small">
              More hosts start with {result.query}:{' '}
              <a href={`#/hosts?id_prefix=${encodeURIComponent(result.query)}`} onClick={() => setResult(null)}>
                all of them in the hosts view
              </a>
            </p>
          )}
        </div>
      )}
    </form>
  );
}
