// Live updates: polling hooks and the "live" status the header shows (last answer from kilnd,
// or the error once kilnd has not answered for a few polls in a row). A 4xx is an answer: a
// missing pod (404) or a refused action says nothing about whether kilnd is up. Only network
// errors and 5xx count as "kilnd does not answer". Polls pause while the tab is hidden.
import { useEffect, useRef, useState } from 'preact/hooks';

// Consecutive failed polls (network error or 5xx) before the header turns to "Reconnecting".
export const FAILS_BEFORE_DOWN = 3;

// True when the error means kilnd itself is unreachable or failing (not a 4xx answer).
export function isOutage(e) {
  const st = e && typeof e.status === 'number' ? e.status : 0;
  return !(st >= 400 && st < 500);
}

// The next live status after a poll: ok (kilnd answered, maybe with a 4xx) or failed with e.
// Pure; {lastOk, error, fails}.
export function nextLiveStatus(prev, ok, e, now) {
  if (ok || !isOutage(e)) return { lastOk: now, error: null, fails: 0 };
  const fails = (prev.fails || 0) + 1;
  return { lastOk: prev.lastOk, fails, error: fails >= FAILS_BEFORE_DOWN ? (e && e.message ? e.message : String(e)) : prev.error };
}

const listeners = new Set();
const status = { lastOk: 0, error: null, fails: 0 };

export function liveStatus() {
  return status;
}
export function useLiveStatus() {
  const [, setTick] = useState(0);
  useEffect(() => {
    const fn = () => setTick((t) => t + 1);
    listeners.add(fn);
    return () => listeners.delete(fn);
  }, []);
  return status;
}
function notify() {
  for (const fn of listeners) fn();
}
export function reportOk() {
  Object.assign(status, nextLiveStatus(status, true, null, Date.now()));
  notify();
}
export function reportError(e) {
  Object.assign(status, nextLiveStatus(status, false, e, Date.now()));
  notify();
}

// Runs `fn(isCurrent)` now and then `intervalMs` after each completion, until deps change or
// the component unmounts. Returns refresh(): run again now (after an action). A result that
// arrives after deps changed is dropped by checking isCurrent() before setting state.
export function usePoll(fn, intervalMs, deps) {
  const kick = useRef(() => {});
  const fnRef = useRef(fn);
  fnRef.current = fn;
  const intervalRef = useRef(intervalMs);
  intervalRef.current = intervalMs;
  useEffect(() => {
    let stopped = false;
    let timer = null;
    let running = false;
    let again = false;
    const isCurrent = () => !stopped;
    const run = async () => {
      clearTimeout(timer);
      if (stopped) return;
      if (running) {
        again = true;
        return;
      }
      if (document.hidden) {
        timer = setTimeout(run, 1000);
        return;
      }
      running = true;
      try {
        await fnRef.current(isCurrent);
        if (!stopped) reportOk();
      } catch (e) {
        if (!stopped) reportError(e);
      }
      running = false;
      if (stopped) return;
      if (again) {
        again = false;
        run();
        return;
      }
      timer = setTimeout(run, typeof intervalRef.current === 'function' ? intervalRef.current() : intervalRef.current);
    };
    kick.current = run;
    run();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, deps);
  return () => kick.current();
}

// Re-renders every `ms` (for "3 s ago" texts).
export function useTicker(ms) {
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}
