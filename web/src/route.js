// Hash routes: #/fleet?site=..&pod=.., #/hosts/<id>. The server only ever serves index.html.
import { useEffect, useState } from 'preact/hooks';

export function parseHash(hash) {
  const h = (hash || '').replace(/^#/, '') || '/fleet';
  const q = h.indexOf('?');
  const path = q < 0 ? h : h.slice(0, q);
  const params = {};
  if (q >= 0) {
    for (const part of h.slice(q + 1).split('&')) {
      if (!part) continue;
      const eq = part.indexOf('=');
      const k = decodeURIComponent(eq < 0 ? part : part.slice(0, eq));
      params[k] = eq < 0 ? '' : decodeURIComponent(part.slice(eq + 1));
    }
  }
  return { path, segments: path.split('/').filter(Boolean).map(decodeURIComponent), params };
}

export function href(path, params = {}) {
  const q = Object.entries(params)
    .filter(([, v]) => v !== undefined && v !== null && v !== '')
    .map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`)
    .join('&');
  return `#${path}${q ? `?${q}` : ''}`;
}

// replace: update the URL without a history entry (filters typing).
export function navigate(path, params, replace = false) {
  const h = href(path, params);
  if (replace) {
    history.replaceState(null, '', h);
    window.dispatchEvent(new HashChangeEvent('hashchange'));
  } else {
    location.hash = h;
  }
}

export function useRoute() {
  const [route, setRoute] = useState(() => parseHash(location.hash));
  useEffect(() => {
    const fn = () => setRoute(parseHash(location.hash));
    window.addEventListener('hashchange', fn);
    return () => window.removeEventListener('hashchange', fn);
  }, []);
  return route;
}
