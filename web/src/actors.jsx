// Who acted, by token name: GET /actors (viewer) read once per session and again when a view
// shows a token id it does not know (a token made since). <Actor id> and <ActorText text>.
import { useEffect, useState } from 'preact/hooks';
import { fetchAll } from './api.js';
import { actorLabel, hasUnknownIds, nameActorsIn } from './admin-model.js';

// Reloads at most this often when unknown ids keep turning up (an id that is no token).
const RELOAD_MS = 30000;

let names = new Map();
let loadedAt = 0;
let loading = null;
const listeners = new Set();

function load() {
  if (loading) return loading;
  loading = fetchAll('/actors')
    .then((items) => {
      names = new Map(items.map((i) => [i.id, i.name]));
      for (const fn of listeners) fn(names);
    })
    .catch(() => {
      // Names are a nicety: without them the views show ids.
    })
    .finally(() => {
      loadedAt = Date.now();
      loading = null;
    });
  return loading;
}

// The id -> name map; re-renders when it changes. `texts`: what the caller shows, so an id not
// yet known triggers a reload (throttled).
export function useActorNames(texts = []) {
  const [map, setMap] = useState(names);
  useEffect(() => {
    listeners.add(setMap);
    if (loadedAt === 0) load();
    return () => listeners.delete(setMap);
  }, []);
  useEffect(() => {
    if (loadedAt !== 0 && Date.now() - loadedAt > RELOAD_MS && hasUnknownIds(texts, names)) load();
  });
  return map;
}

// Forget the names (after a token is created or revoked here).
export function reloadActorNames() {
  loadedAt = Date.now();
  return load();
}

// An actor as stored (token id or system actor), shown by name; the id in the tooltip.
export function Actor({ id }) {
  const map = useActorNames([id]);
  if (!id) return <span class="muted">—</span>;
  const label = actorLabel(id, map);
  return (
    <span data-actor={id} title={label === id ? id : `token ${id}`}>
      {label}
    </span>
  );
}

// A text that may name token ids ("aborted by 3f9a1c2b7d4e: ..."), with names in their place.
export function ActorText({ text }) {
  const map = useActorNames([text]);
  return nameActorsIn(text, map);
}
