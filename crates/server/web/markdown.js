// Markdown as elements. The vendored parser (marked, vendor/marked.esm.js) only tokenises; this
// file builds the elements from its tokens with `el`, so nothing is ever parsed as HTML: raw HTML
// in a message stays text, links go only to http(s) and mailto (others stay text), and images
// are never fetched (their alt text and address are shown instead).
import { Lexer } from './marked.esm.js';
import { el } from './dom.js';

const SAFE_LINK = /^(https?:|mailto:)/i;
const ENTITIES = { amp: '&', lt: '<', gt: '>', quot: '"', apos: "'", nbsp: '\u00a0' };

/** `text` as markdown: a `div.md` of block elements. Falls back to the text as written. */
export function markdown(text) {
  let tokens;
  try {
    tokens = Lexer.lex(String(text ?? ''), { gfm: true });
  } catch {
    return el('div', { class: 'text' }, text);
  }
  return el('div', { class: 'text md' }, blocks(tokens));
}

function blocks(tokens) {
  return (tokens || []).map(blockToken);
}

function blockToken(t) {
  switch (t.type) {
    case 'paragraph': return el('p', {}, inline(t.tokens));
    // `#` is h3 (the page's own headings are h1 and h2), `##` h4, down to h6.
    case 'heading': return el(`h${Math.min(t.depth + 2, 6)}`, {}, inline(t.tokens));
    case 'code': return codeBlock(t.text, t.lang);
    case 'blockquote': return el('blockquote', {}, blocks(t.tokens));
    case 'list': return list(t);
    case 'table': return table(t);
    case 'hr': return el('hr');
    case 'space': return null;
    case 'text': return el('p', {}, t.tokens ? inline(t.tokens) : decode(t.text));
    default: return el('p', {}, t.raw ?? t.text ?? '');
  }
}

function list(t) {
  const items = t.items.map((item) => {
    const box = item.task ? el('input', { type: 'checkbox', disabled: true, checked: item.checked, 'aria-label': item.checked ? 'done' : 'not done' }) : null;
    const body = item.tokens.filter((c) => c.type !== 'checkbox').map((c) => (c.type === 'text' && !item.loose ? inline(c.tokens || [c]) : blockToken(c)));
    return el('li', {}, box, body);
  });
  return el(t.ordered ? 'ol' : 'ul', { start: t.ordered && t.start !== '' && t.start !== 1 ? t.start : null }, items);
}

function table(t) {
  const cell = (tag, c) => el(tag, { class: c.align ? `align-${c.align}` : null }, inline(c.tokens));
  return el('div', { class: 'table-wrap' }, el('table', {},
    el('thead', {}, el('tr', {}, t.header.map((c) => cell('th', c)))),
    el('tbody', {}, t.rows.map((row) => el('tr', {}, row.map((c) => cell('td', c)))))));
}

/** A fenced or indented block: `<pre><code>` with a copy button. */
export function codeBlock(text, lang) {
  const code = el('code', { class: lang ? `lang-${lang.split(/\s/)[0]}` : null }, text);
  const copy = el('button', { type: 'button', class: 'copy', 'aria-label': 'Copy code', onclick: () => copyText(copy, text) }, 'Copy');
  return el('div', { class: 'code' }, lang ? el('span', { class: 'lang' }, lang) : null, copy, el('pre', {}, code));
}

async function copyText(button, text) {
  try {
    await navigator.clipboard.writeText(text);
    button.textContent = 'Copied';
  } catch {
    button.textContent = 'Copy failed';
  }
  setTimeout(() => { button.textContent = 'Copy'; }, 1500);
}

function inline(tokens) {
  return (tokens || []).map(inlineToken);
}

function inlineToken(t) {
  switch (t.type) {
    case 'text': return t.tokens ? inline(t.tokens) : decode(t.text);
    case 'escape': return t.text;
    case 'strong': return el('strong', {}, inline(t.tokens));
    case 'em': return el('em', {}, inline(t.tokens));
    case 'del': return el('del', {}, inline(t.tokens));
    case 'codespan': return el('code', {}, t.text);
    case 'br': return el('br');
    case 'link': return link(t);
    case 'image': return el('span', { class: 'image-ref', title: t.href }, `[image: ${t.text || 'no description'}] `, el('code', {}, t.href));
    default: return t.raw ?? t.text ?? '';
  }
}

function link(t) {
  const href = String(t.href || '').trim();
  if (!SAFE_LINK.test(href)) return el('span', { class: 'unsafe-link', title: `not a link: ${href}` }, inline(t.tokens), ` (${href})`);
  return el('a', { href, rel: 'noopener noreferrer', target: '_blank' }, inline(t.tokens));
}

/** Character references in text, as the characters they stand for. */
function decode(text) {
  return String(text).replace(/&(#x[0-9a-f]{1,6}|#[0-9]{1,7}|[a-z]+);/gi, (whole, name) => {
    if (name[0] !== '#') return ENTITIES[name.toLowerCase()] ?? whole;
    const code = name[1] === 'x' || name[1] === 'X' ? parseInt(name.slice(2), 16) : parseInt(name.slice(1), 10);
    return code > 0 && code <= 0x10ffff && !(code >= 0xd800 && code <= 0xdfff) ? String.fromCodePoint(code) : whole;
  });
}
