// The Agents screen: each agent's models, the agents it may spawn, its tools (session tools, then
// MCP servers' `<server>__<tool>`) and resolved settings; also fills the list's agent filter.
import { el, sessionLink } from './dom.js';

export class Agents {
  constructor(gateway, rows, filter) {
    this.gateway = gateway;
    this.rows = rows;
    this.filter = filter;
    this.models = new Map();
    this.onLoad = () => {};
  }

  /** An agent's configured (primary) model, once loaded. */
  model(id) {
    return this.models.get(id) || null;
  }

  async load() {
    const { agents } = await this.gateway.request('agents.list', {});
    this.models = new Map(agents.map((a) => [a.id, a.model.primary]));
    this.rows.replaceChildren(...agents.map((a) => el('tr', {},
      el('td', {}, el('strong', {}, a.name || a.id), a.name ? ` (${a.id})` : '', a.default ? ' · default' : ''),
      el('td', {}, el('code', {}, a.model.primary)),
      el('td', {}, a.model.fallbacks.join(', ') || '—'),
      el('td', {}, spawnable(a)),
      el('td', { class: 'tools' }, tools(a)),
      el('td', { class: 'settings' }, settings(a.settings)),
      el('td', {}, sessionLink(a.mainKey)),
    )));
    const chosen = this.filter.value;
    this.filter.replaceChildren(el('option', { value: '' }, 'all agents'),
      ...agents.map((a) => el('option', { value: a.id }, a.id)));
    this.filter.value = chosen;
    this.onLoad();
  }
}

function spawnable(agent) {
  if (agent.allowAgents.some((a) => a.trim() === '*')) return 'any agent';
  const others = agent.allowAgents.filter((a) => a !== agent.id);
  return [agent.id, ...others].join(', ');
}

// The session tools in one word, every other tool by name.
function tools(agent) {
  const names = agent.tools || [];
  const session = names.filter((n) => n.startsWith('sessions_') || n === 'agents_list');
  const others = names.filter((n) => !session.includes(n));
  const parts = [];
  if (session.length) parts.push(el('span', { title: session.join(', ') }, `${session.length} session tools`));
  for (const name of others) parts.push(' ', el('code', {}, name));
  return parts.length ? parts : ['none'];
}

// The resolved settings, a short line each.
function settings(s) {
  if (!s) return '—';
  const lines = [
    `thinking ${s.thinkingLevel}`,
    `sandbox ${s.sandboxMode}${s.sandboxMode === 'off' ? '' : s.sandboxNetwork ? ', network' : ', no network'}`,
    `tools ${s.toolsProfile || 'all'}${s.toolsAllow.length ? `, only ${s.toolsAllow.join(' ')}` : ''}${s.toolsDeny.length ? `, not ${s.toolsDeny.join(' ')}` : ''}`,
    s.workspace ? `workspace ${s.workspace}` : null,
    s.subagentModel ? `sub-agents on ${s.subagentModel}` : null,
    s.systemPromptChars ? `system prompt: ${s.systemPromptChars} characters` : null,
    s.configured ? null : 'not configured: the defaults',
  ];
  return lines.filter(Boolean).map((l) => el('div', {}, l));
}
