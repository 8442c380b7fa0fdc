// The agent-to-agent exchanges a session took part in (`exchanges.list`), each readable as one
// thread: the request, the reply turns and the announce, taken from both transcripts in time
// order, each message marked with the session it is in. Each stands in the transcript's flow
// where it began (the transcript places it), and its thread opens there, not in a box of its own.
import { el, sessionLink, when } from './dom.js';
import { message } from './messages.js';

const SLACK_MS = 2000;

export class Exchanges {
  constructor(gateway, place) {
    this.gateway = gateway;
    this.place = place;
    this.open = new Set();
  }

  async show(key) {
    this.key = key;
    let list;
    try {
      list = await this.gateway.request('exchanges.list', { sessionKey: key, limit: 10 });
    } catch {
      return;
    }
    if (key !== this.key) return;
    this.place(list.exchanges.map((x) => this.item(x, this.open.has(x.id))));
  }

  /** One exchange: its thread folds open in place; the links to its sessions stay outside the
   * summary (a summary holds no links). */
  item(x, open) {
    const body = el('div', { class: 'thread' });
    const turns = x.turn === 1 ? '1 reply turn' : `${x.turn} reply turns`;
    const node = el('details', { class: `exchange ${x.state}` },
      el('summary', {}, el('span', { class: 'tool-kind' }, 'exchange'), `sessions_send ${x.requesterKey} → ${x.targetKey} `,
        el('span', { class: 'badge' }, x.state), ` ${turns}`, x.detail ? ` · ${x.detail}` : '', ' · ', when(x.updatedAt)),
      body);
    node.addEventListener('toggle', () => {
      if (node.open) this.open.add(x.id);
      else this.open.delete(x.id);
      if (node.open) this.thread(x, body);
    });
    if (open) node.open = true;
    return el('div', { class: 'exchange-item', 'data-id': x.id, 'data-ts': x.createdAt }, node,
      el('p', { class: 'tool-links' }, 'between ', sessionLink(x.requesterKey), ' and ', sessionLink(x.targetKey)));
  }

  async thread(x, body) {
    const history = (sessionKey) => this.gateway.request('chat.history', { sessionKey, limit: 200 });
    let pages;
    try {
      pages = await Promise.all([history(x.requesterKey), history(x.targetKey)]);
    } catch (e) {
      body.replaceChildren(el('p', { class: 'error' }, `Could not read the thread: ${e.message}`));
      return;
    }
    const during = (m) => m.timestamp >= x.createdAt - SLACK_MS && m.timestamp <= x.updatedAt + SLACK_MS;
    const sends = (m) => m.role === 'assistant' && (m.content || []).some((b) => b.type === 'toolCall' && b.name === 'sessions_send');
    const items = [];
    for (const m of pages[0].messages.filter(during)) {
      if (m.provenance?.fromSessionKey === x.targetKey || sends(m)) items.push({ key: x.requesterKey, m });
    }
    for (const m of pages[1].messages.filter(during)) items.push({ key: x.targetKey, m });
    items.sort((a, b) => a.m.timestamp - b.m.timestamp || a.m.seq - b.m.seq);
    const ctx = { results: new Map(pages.flatMap((p) => p.messages).filter((m) => m.role === 'toolResult').map((m) => [m.toolCallId, m])) };
    body.replaceChildren(...items.map(({ key, m }) =>
      el('div', { class: 'thread-item' }, el('div', { class: 'in' }, 'in ', sessionLink(key)), message(m, null, ctx))));
    if (!items.length) body.append(el('p', {}, 'No messages of this exchange are left in the transcripts.'));
  }
}
