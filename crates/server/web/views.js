// Which view shows, and the keyboard. On a narrow screen the list and the open transcript are
// two views (`#app[data-view]`, the stylesheet hides the other one); the URL fragment names
// the open session (`#s=<key>`), so a reload or the browser's back button lands where it was.
// Keys: `/` focuses the search, arrows move through the list, Enter opens (the rows are links),
// Esc leaves a field, else goes back to the list.

const $ = (id) => document.getElementById(id);
const NARROW = '(max-width: 760px)';

/** Shows the list or the transcript (on a narrow screen only one of them is seen). */
export function showView(key) {
  $('app').dataset.view = key ? 'session' : 'list';
  // A phone opens with the transcript's room for messages; the details fold away.
  if (key && window.matchMedia(NARROW).matches) $('session-details').open = false;
}

/** Back to the list: the fragment forgets the session, the row keeps the focus. */
export function back(onChange) {
  const key = new URLSearchParams(location.hash.slice(1)).get('s');
  history.pushState(null, '', location.pathname + location.search);
  onChange();
  const row = key && document.querySelector(`#session-list li.session[data-key="${CSS.escape(key)}"] > a.row`);
  (row || $('search')).focus();
}

function typing(target) {
  return target instanceof HTMLElement && (target.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(target.tagName));
}

/** The rows as they are shown (children included), in order. */
function rows() {
  return [...document.querySelectorAll('#session-list a.row')].filter((a) => a.offsetParent !== null);
}

function move(by) {
  const all = rows();
  if (!all.length) return;
  const at = all.indexOf(document.activeElement);
  const next = at < 0 ? (by > 0 ? 0 : all.length - 1) : Math.min(Math.max(at + by, 0), all.length - 1);
  all[next].focus();
  all[next].scrollIntoView({ block: 'nearest' });
}

/** The page's keys; `onChange` re-reads the fragment. */
export function keyboard(onChange) {
  document.addEventListener('keydown', (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (e.key === 'Escape') {
      if (!$('login').hidden) return;
      if (e.target === $('search') && $('search').value) return;
      // In a field, Esc only leaves it (a draft is not thrown away); the next Esc goes back.
      if (typing(e.target)) return e.target.blur();
      if ($('app').dataset.view === 'session') {
        e.preventDefault();
        back(onChange);
      }
      return;
    }
    if (typing(e.target)) {
      if (e.target === $('search') && e.key === 'ArrowDown') {
        e.preventDefault();
        move(1);
      }
      return;
    }
    if (e.key === '/') {
      e.preventDefault();
      $('search').focus();
      $('search').select();
    } else if ((e.key === 'ArrowDown' || e.key === 'ArrowUp') && ($('sessions').contains(e.target) || e.target === document.body)) {
      e.preventDefault();
      move(e.key === 'ArrowDown' ? 1 : -1);
    }
  });
  $('back').addEventListener('click', () => back(onChange));
}
