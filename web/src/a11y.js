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

// The elements to make inert while a modal dialog is open: every sibling of the dialog and of
// each of its ancestors up to (not including) `root`, so that the rest of the app takes no
// focus, clicks or screen-reader reading, wherever the dialog sits in the page. Nodes:
// {parentElement, children} (DOM elements, or plain objects in tests). Already inert ones are
// left out, so that closing the dialog gives back only what opening it took.
export function inertOutside(el, root) {
  const out = [];
  for (let node = el; node && node !== root && node.parentElement; node = node.parentElement) {
    for (const sib of Array.from(node.parentElement.children)) {
      if (sib === node || sib.inert || (sib.hasAttribute && sib.hasAttribute('inert'))) continue;
      out.push(sib);
    }
  }
  return out;
}
