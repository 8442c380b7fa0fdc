// The Usage screen (`sessions.usage`, the browser's zone): totals, a bar a day (a table row with
// its figures), and the cuts by agent, model and session.
import { el, sessionLink } from './dom.js';

const DOLLARS = new Intl.NumberFormat(undefined, { style: 'currency', currency: 'USD', maximumFractionDigits: 4 });
const COUNT = new Intl.NumberFormat();

/** The browser's offset from UTC as the gateway reads it: `UTC+2`, `UTC-5:30`. */
function utcOffset() {
  const minutes = -new Date().getTimezoneOffset();
  const sign = minutes < 0 ? '-' : '+';
  const abs = Math.abs(minutes);
  const rest = abs % 60 ? `:${String(abs % 60).padStart(2, '0')}` : '';
  return `UTC${sign}${Math.floor(abs / 60)}${rest}`;
}

export class Usage {
  constructor(gateway, { range, totals, days, agents, models, sessions, status }) {
    Object.assign(this, { gateway, range, totals, days, agents, models, sessions, status });
    range.addEventListener('change', () => this.load().catch(() => {}));
  }

  async load() {
    const params = { range: this.range.value, mode: 'specific', utcOffset: utcOffset(), limit: 20 };
    this.status.textContent = 'Loading…';
    this.status.classList.remove('error');
    try {
      this.show(await this.gateway.request('sessions.usage', params));
      this.status.textContent = '';
    } catch (e) {
      this.status.textContent = `Could not read the usage: ${e.message}`;
      this.status.classList.add('error');
    }
  }

  show(u) {
    const t = u.totals;
    const a = u.aggregates;
    this.totals.replaceChildren(
      fact('Tokens', COUNT.format(t.totalTokens), `${COUNT.format(t.input)} in, ${COUNT.format(t.output)} out`),
      fact('Cost', DOLLARS.format(t.totalCost), t.missingCostEntries ? `${t.missingCostEntries} calls without prices` : 'every call priced'),
      fact('Messages', COUNT.format(a.messages.total), `${a.messages.assistant} replies, ${a.messages.toolCalls} tool calls`),
      fact('Sessions', COUNT.format(a.sessionCount), `${u.startDate} to ${u.endDate}`),
    );
    const most = Math.max(1, ...a.daily.map((d) => d.tokens));
    this.days.replaceChildren(...(a.daily.length ? a.daily.map((d) => el('tr', {},
      el('th', { scope: 'row' }, d.date),
      el('td', { class: 'bar-cell' }, el('span', { class: 'day-bar', 'data-share': share(d.tokens, most) })),
      el('td', { class: 'num' }, COUNT.format(d.tokens)),
      el('td', { class: 'num' }, DOLLARS.format(d.cost)),
      el('td', { class: 'num' }, String(d.messages)),
    )) : [empty(5, 'No model calls in this range.')]));
    for (const bar of this.days.querySelectorAll('.day-bar')) bar.style.width = `${bar.dataset.share}%`;
    this.agents.replaceChildren(...rows(a.byAgent, (r) => [r.agentId], 2));
    this.models.replaceChildren(...rows(a.byModel, (r) => [`${r.provider}/${r.model}`, String(r.count)], 3));
    this.sessions.replaceChildren(...(u.sessions.length ? u.sessions.map((s) => el('tr', {},
      el('td', {}, sessionLink(s.key, s.label || s.key)),
      el('td', {}, s.agentId),
      el('td', { class: 'num' }, COUNT.format(s.usage.totalTokens)),
      el('td', { class: 'num' }, DOLLARS.format(s.usage.totalCost)),
    )) : [empty(4, 'No session called a model in this range.')]));
  }
}

function share(value, most) {
  return Math.max(1, Math.round((value / most) * 100));
}

function fact(name, value, detail) {
  return el('div', { class: 'card' }, el('div', { class: 'card-name' }, name), el('div', { class: 'card-value' }, value),
    el('div', { class: 'card-detail' }, detail));
}

function rows(list, cells, width) {
  if (!list.length) return [empty(width + 1, 'Nothing in this range.')];
  return list.map((r) => el('tr', {}, ...cells(r).map((c) => el('td', {}, c)),
    el('td', { class: 'num' }, `${COUNT.format(r.totals.totalTokens)} · ${DOLLARS.format(r.totals.totalCost)}`)));
}

function empty(span, text) {
  return el('tr', {}, el('td', { colspan: span, class: 'hint' }, text));
}
