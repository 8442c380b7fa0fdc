// One transcript message as elements: text as text, tool calls and results collapsible, images
// only from inline image data, and where a message came from when it was not a person here.
import { el, pretty, sessionLink, when } from './dom.js';

const IMAGE_TYPES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/** Where a user-role message came from (SPEC §4.2 provenance), as elements. */
export function origin(message, row) {
  const p = message.provenance;
  if (!p) {
    const channel = row && row.channel && !['unknown', 'internal'].includes(row.channel) ? row.channel : null;
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

function block(b) {
  switch (b.type) {
    case 'text': return el('div', { class: 'text' }, b.text);
    case 'thinking': return el('details', { class: 'thinking' }, el('summary', {}, 'thinking'), el('div', { class: 'text' }, b.thinking));
    case 'toolCall': return toolCall(b.name, b.arguments, b.id);
    case 'image': return image(b);
    default: return el('pre', { class: 'unknown' }, pretty(b));
  }
}

function image(b) {
  if (!IMAGE_TYPES.has(b.mimeType) || typeof b.data !== 'string') return el('span', { class: 'badge' }, `image (${b.mimeType})`);
  return el('img', { class: 'image', alt: 'image from the conversation', src: `data:${b.mimeType};base64,${b.data}` });
}

/** Links to the other session a session tool call names. */
function target(name, args) {
  if (!args || typeof args !== 'object') return null;
  const key = args.sessionKey || args.label;
  if ((name === 'sessions_send' || name === 'sessions_history') && typeof key === 'string') return [' → ', sessionLink(key)];
  if (name === 'sessions_spawn' && typeof args.agentId === 'string') return [' as agent ', args.agentId];
  return null;
}

export function toolCall(name, args, id) {
  return el('details', { class: 'tool call', 'data-call': id || '' },
    el('summary', {}, 'tool call ', el('code', {}, name), target(name, args)),
    el('pre', {}, pretty(args)));
}

export function toolResult(name, text, isError, details) {
  const child = details && typeof details.childSessionKey === 'string' ? [' — child ', sessionLink(details.childSessionKey)] : null;
  return el('details', { class: `tool result${isError ? ' error' : ''}` },
    el('summary', {}, isError ? 'tool error ' : 'tool result ', el('code', {}, name), child),
    el('pre', {}, text));
}

function resultText(m) {
  return blocks(m.content).map((b) => (b.type === 'text' ? b.text : pretty(b))).join('\n');
}

/** A stored message (`chat.history`) as an element; `row` is its session's row. */
export function message(m, row) {
  const head = (who, ...rest) => el('div', { class: 'head' }, el('strong', {}, who), ...rest, el('time', {}, when(m.timestamp)));
  if (m.role === 'toolResult') {
    return el('article', { class: 'msg tool-result', 'data-seq': m.seq }, toolResult(m.toolName, resultText(m), m.isError, m.details));
  }
  if (m.role === 'assistant') {
    const error = m.errorMessage ? el('p', { class: 'error' }, m.errorMessage) : null;
    const stop = m.stopReason === 'aborted' ? el('span', { class: 'badge' }, 'aborted') : null;
    return el('article', { class: 'msg assistant', 'data-seq': m.seq },
      head('assistant', m.model ? el('span', { class: 'model' }, m.model) : null, stop),
      blocks(m.content).map(block), error);
  }
  const from = origin(m, row);
  const kind = m.provenance ? `msg user from-${m.provenance.kind}` : 'msg user';
  return el('article', { class: kind, 'data-seq': m.seq },
    head('user', el('span', { class: 'origin' }, ' · ', from)), blocks(m.content).map(block));
}
