// One transcript message as elements: text as markdown (markdown.js builds elements, never
// HTML), tool calls and results as cards with the tool's name, status, duration and indented
// JSON, images only from inline image data, a compaction summary as a divider, and where a
// message came from when it was not a person here.
import { el, pretty, sessionLink, when } from './dom.js';
import { markdown, codeBlock } from './markdown.js';

const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/** Where a user-role message came from (SPEC §4.2 provenance), as elements. */
export function origin(message, row) {
  const p = message.provenance;
  if (!p) {
    const channel = row && row.channel && !['unknown', 'internal', 'webchat'].includes(row.channel) ? row.channel : null;
    return channel ? ['via channel ', channel] : ['operator'];
  }
  const from = p.fromSessionKey ? sessionLink(p.fromSessionKey) : 'another session';
  switch (p.kind) {
    case 'agent': return ['from ', from, ' via sessions_send'];
    case 'subagent-announce': return ['sub-agent report from ', from];
    case 'announce': return ['announce from ', from];
    case 'reply': return ['reply from ', from];
    case 'send': return ['sent by ', from];
    case 'cron': return [`cron job ${p.jobId || ''}`, p.trigger === 'manual' ? ' (run by hand)' : ''];
    case 'hook': return ['hook'];
    case 'inject': return ['injected by an operator'];
    default: return [String(p.kind)];
  }
}

function blocks(content) {
  if (typeof content === 'string') return [{ type: 'text', text: content }];
  return Array.isArray(content) ? content : [];
}

function block(b, ctx) {
  switch (b.type) {
    case 'text': return markdown(b.text);
    case 'thinking': return el('details', { class: 'thinking' }, el('summary', {}, 'thinking'), el('div', { class: 'text' }, b.thinking));
    case 'toolCall': return toolCall(b.name, b.arguments, b.id, ctx);
    case 'image': return image(b);
    default: return el('pre', { class: 'unknown' }, pretty(b));
  }
}

function image(b) {
  if (!IMAGE_TYPES.has(b.mimeType) || typeof b.data !== 'string') return el('span', { class: 'badge' }, `image (${b.mimeType})`);
  return el('img', { class: 'image', alt: 'image from the conversation', src: `data:${b.mimeType};base64,${b.data}` });
}

/** The other session a session tool call names: its key, and a link to it. */
function target(name, args) {
  if (!args || typeof args !== 'object') return null;
  const key = args.sessionKey || args.label;
  if ((name === 'sessions_send' || name === 'sessions_history') && typeof key === 'string') return { text: ` → ${key}`, links: ['to ', sessionLink(key)] };
  if (name === 'sessions_spawn' && typeof args.agentId === 'string') return { text: ` as agent ${args.agentId}`, links: null };
  return null;
}

/** A tool card: the folding part (a summary holds no links), then links to the sessions it names. */
function card(details, links) {
  return links ? el('div', { class: 'tool-card' }, details, el('p', { class: 'tool-links' }, links)) : details;
}

/** A tool's text as indented JSON when it is JSON, else as written. */
function prettyText(text) {
  if (typeof text !== 'string') return pretty(text);
  const t = text.trim();
  if (!(t.startsWith('{') || t.startsWith('['))) return text;
  try { return JSON.stringify(JSON.parse(t), null, 2); } catch { return text; }
}

/** `1.2 s`, `340 ms`, `2 min 5 s`. */
export function duration(ms) {
  if (!(ms >= 0)) return '';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(ms < 10000 ? 1 : 0)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

export function toolCall(name, args, id, ctx) {
  const state = ctx?.results?.get(id);
  const status = state ? (state.isError ? 'error' : 'done') : 'called';
  const named = target(name, args);
  return card(el('details', { class: 'tool call', 'data-call': id || '' },
    el('summary', {}, el('span', { class: 'tool-kind' }, 'tool call'), el('code', {}, name), named?.text,
      el('span', { class: `badge ${status}` }, status)),
    codeBlock(pretty(args), 'json')), named?.links);
}

export function toolResult(name, text, isError, details, took) {
  const child = details && typeof details.childSessionKey === 'string' ? ['child ', sessionLink(details.childSessionKey)] : null;
  return card(el('details', { class: `tool result${isError ? ' error' : ''}` },
    el('summary', {}, el('span', { class: 'tool-kind' }, isError ? 'tool error' : 'tool result'), el('code', {}, name),
      el('span', { class: `badge ${isError ? 'error' : 'ok'}` }, isError ? 'error' : 'ok'),
      typeof took === 'number' && took >= 0 ? el('span', { class: 'took' }, duration(took)) : null),
    codeBlock(prettyText(text), null)), child);
}

function resultText(m) {
  return blocks(m.content).map((b) => (b.type === 'text' ? b.text : pretty(b))).join('\n');
}

function head(m, who, ...rest) {
  return el('div', { class: 'head' }, el('strong', {}, who), ...rest, el('time', {}, when(m.timestamp)));
}

/** How a run that did not end well ended, in words: one line. */
export function runEnd(status, error) {
  const words = { aborted: 'Run aborted', timeout: 'Run timed out', error: 'Run failed' }[status] || `Run ${status}`;
  const why = error && error.toLowerCase() !== status && error.toLowerCase() !== words.toLowerCase() ? `: ${error}` : '';
  return el('p', { class: `run-end ${status}`, role: 'note' }, `${words}${why}`);
}

/** A stored message (`chat.history`) as an element; `row` is its session's row; `ctx.calls`
 * maps a tool call id to when it was made, `ctx.results` to its result. */
export function message(m, row, ctx = {}) {
  if (m.role === 'toolResult') {
    const at = ctx.calls?.get(m.toolCallId);
    return el('article', { class: 'msg tool-result', 'data-seq': m.seq, 'data-ts': m.timestamp },
      toolResult(m.toolName, resultText(m), m.isError, m.details, at !== undefined ? m.timestamp - at : null));
  }
  if (m.role === 'assistant') {
    const stopped = m.stopReason === 'aborted' ? runEnd('aborted', m.errorMessage) : null;
    const error = !stopped && m.errorMessage ? el('p', { class: 'error' }, m.errorMessage) : null;
    return el('article', { class: 'msg assistant', 'data-seq': m.seq, 'data-ts': m.timestamp },
      head(m, 'assistant', m.model ? el('span', { class: 'model', title: 'the model that answered' }, m.model) : null),
      blocks(m.content).map((b) => block(b, ctx)), error, stopped);
  }
  if (m.provenance?.kind === 'compaction') return compaction(m);
  const from = origin(m, row);
  const kind = m.provenance ? `msg user from-${m.provenance.kind}` : 'msg user';
  return el('article', { class: kind, 'data-seq': m.seq, 'data-ts': m.timestamp },
    head(m, 'user', el('span', { class: 'origin' }, ' · ', from)), blocks(m.content).map((b) => block(b, ctx)));
}

/** A compaction summary: a divider, the summary folded under it. */
function compaction(m) {
  const covers = m.provenance.coversUntilSeq;
  return el('section', { class: 'compaction', 'data-seq': m.seq, 'data-ts': m.timestamp, 'aria-label': 'Context compacted' },
    el('div', { class: 'divider', role: 'separator' }, el('span', {}, 'Context compacted'),
      el('time', {}, when(m.timestamp))),
    el('details', {}, el('summary', {}, covers ? `Summary of the messages before #${covers}` : 'Summary'),
      blocks(m.content).map((b) => block(b, {}))));
}
