// Pure keyboard helpers of the console (node --test): dialog focus trap, the "/" shortcut.

// Where Tab (shift: Shift+Tab) goes inside a dialog of n focusable elements with element i
// focused (-1: focus is outside): the index to focus, or -1 to let the browser move on as
// usual (it stays inside). Wraps from the last to the first and back.
export function trapTab(n, i, shift) {
  if (n <= 0) return -1;
  if (i < 0) return shift ? n - 1 : 0;
  if (shift && i === 0) return n - 1;
  if (!shift && i === n - 1) return 0;
  return -1;
}

// Whether a "/" keydown should focus the search box: not while typing in a field, not with
// Ctrl/Alt/Meta. target: {tagName, isContentEditable}.
export function isSearchShortcut(e) {
  if (e.key !== '/' || e.ctrlKey || e.altKey || e.metaKey || e.defaultPrevented) return false;
  const t = e.target || {};
  const tag = (t.tagName || '').toUpperCase();
  return !(tag === 'INPUT' || tag === 'TEXTAREA' || tag === 'SELECT' || t.isContentEditable);
}
