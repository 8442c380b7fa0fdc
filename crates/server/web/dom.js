// Building the page's elements. Text always goes in as text nodes: nothing a model, a channel
// or a tool wrote is ever parsed as HTML (no page file assigns markup to an element).

/** An element with attributes (`class`, `title`, `on<event>` handlers, `data-*`, others as
 * attributes) and children (strings become text nodes; null and false are skipped). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith('on')) node.addEventListener(name.slice(2), value);
    else if (name === 'class') node.className = value;
    else node.setAttribute(name, value === true ? '' : String(value));
  }
  append(node, children);
  return node;
}

function append(node, children) {
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

/** A link that opens another session in this page. */
export function sessionLink(key, text = key) {
  return el('a', { href: '#s=' + encodeURIComponent(key), class: 'session-link' }, text);
}

/** `12:03:04` today, else the date and time. */
export function when(ms) {
  if (!ms) return '';
  const d = new Date(ms);
  const today = new Date().toDateString() === d.toDateString();
  return today ? d.toLocaleTimeString() : d.toLocaleString();
}

/** A value for people: strings as they are, anything else as indented JSON. */
export function pretty(value) {
  if (typeof value === 'string') return value;
  try { return JSON.stringify(value, null, 2); } catch { return String(value); }
}

/** An id for idempotency keys (crypto.randomUUID needs a secure context; a LAN address is not). */
export function newId() {
  if (globalThis.crypto?.randomUUID) return crypto.randomUUID();
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (b) => b.toString(16).padStart(2, '0')).join('');
}

/** `fn` at most once per `ms`, with the last arguments. */
export function debounce(fn, ms) {
  let timer = null;
  return (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
}
