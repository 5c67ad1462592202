// Live updates: polling hooks and the "live" status the header shows (last good answer, or
// the error of the last failed poll). Polls pause while the tab is hidden.
import { useEffect, useRef, useState } from 'preact/hooks';

const listeners = new Set();
const status = { lastOk: 0, error: null };

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
  status.lastOk = Date.now();
  status.error = null;
  notify();
}
export function reportError(e) {
  status.error = e && e.message ? e.message : String(e);
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
