// One session's transcript: the newest page of `chat.history`, older pages as it is scrolled up
// (`before`), and the runs as they stream (`agent` events of the session, subscribed with
// `sessions.messages.subscribe`): text as the model writes it, tool calls and results as they
// happen; the stored messages replace the streamed ones once the run ends. The session's
// agent-to-agent exchanges stand in the flow where they began; the header (header.js) shows
// the model, context use, cost and the run's timeline.
import { el, debounce } from './dom.js';
import { message, toolCall, toolResult, runEnd } from './messages.js';
import { Exchanges } from './exchanges.js';
import { SessionHeader } from './header.js';
import { markdown } from './markdown.js';

const PAGE = 50;
const $ = (id) => document.getElementById(id);

export class Transcript {
  constructor(gateway, sessions, agentModel) {
    this.gateway = gateway;
    this.sessions = sessions;
    this.key = null;
    this.box = $('messages');
    this.older = el('button', { type: 'button', class: 'older', onclick: () => this.loadOlder() }, 'Load older messages');
    this.list = el('div', { class: 'list' });
    this.liveArea = el('div', { class: 'live' });
    this.box.replaceChildren(this.older, this.list, this.liveArea);
    this.runs = new Map();
    this.header = new SessionHeader(agentModel);
    this.exchanges = new Exchanges(gateway, (nodes) => this.placeExchanges(nodes));
    this.newestAnswer = null;
    this.refreshSoon = debounce(() => this.refresh().catch(() => {}), 50);
    this.rowListeners = [];
    gateway.on('agent', (ev) => this.live(ev));
    // Messages written without a run of this session: deliveries into it (announces, replies)
    // and changes made by methods.
    gateway.on('delivery', (d) => (d.to === this.key || d.sessionKey === this.key) && this.refreshSoon());
    gateway.on('sessions.changed', (ev) => ev.sessionKey === this.key && !ev.phase && this.refreshSoon());
    sessions.onRow((row) => row.key === this.key && this.showRow(row));
    this.box.addEventListener('scroll', () => {
      if (this.box.scrollTop < 40) this.loadOlder();
    });
  }

  /** Tells `fn(row)` when the open session's row is known or changes. */
  onRow(fn) {
    this.rowListeners.push(fn);
  }

  async open(key) {
    if (key === this.key) return;
    const previous = this.key;
    this.key = key;
    $('transcript-empty').hidden = !!key;
    $('transcript-view').hidden = !key;
    this.reset();
    if (previous && this.gateway.ready) {
      this.gateway.request('sessions.messages.unsubscribe', { key: previous }).catch(() => {});
    }
    if (key && this.gateway.ready) await this.load();
  }

  /** After a reconnect: follow the open session again and catch up. */
  reconnected() {
    if (!this.key) return;
    this.reset();
    this.load();
  }

  reset() {
    this.messages = new Map();
    this.ctx = { calls: new Map(), results: new Map() };
    this.newestAnswer = null;
    this.sessionId = null;
    this.nextBefore = null;
    this.row = null;
    this.list.replaceChildren();
    this.liveArea.replaceChildren();
    this.runs.clear();
    this.older.hidden = true;
    this.header.reset(this.key);
  }

  async load() {
    const key = this.key;
    try {
      await this.gateway.request('sessions.messages.subscribe', { key });
      const described = await this.gateway.request('sessions.describe', { key });
      if (key !== this.key) return;
      if (!described.session) {
        this.header.say('No such session (yet): sending a message creates it.');
      } else this.showRow(described.session);
      await this.refresh(true);
      this.exchanges.show(key);
    } catch (e) {
      if (key === this.key) this.header.say(`Could not open ${key}: ${e.message}`);
    }
  }

  showRow(row) {
    this.row = row;
    this.header.show(row);
    for (const fn of this.rowListeners) fn(row);
  }

  /** The newest page; messages not shown yet are added (all of them after a reset). */
  async refresh(first = false) {
    const key = this.key;
    if (!key) return;
    const page = await this.gateway.request('chat.history', { sessionKey: key, limit: PAGE });
    if (key !== this.key) return;
    if (this.sessionId && page.sessionId !== this.sessionId) {
      this.reset();
      return this.refresh(true);
    }
    this.sessionId = page.sessionId;
    if (first) this.setOlder(page.nextBefore);
    const stick = this.atBottom();
    this.learn(page.messages);
    for (const m of page.messages) this.add(m, 'end');
    if (stick || first) this.toBottom();
  }

  setOlder(nextBefore) {
    this.nextBefore = nextBefore ?? null;
    this.older.hidden = this.nextBefore === null;
  }

  async loadOlder() {
    if (this.nextBefore === null || this.loadingOlder || !this.key) return;
    this.loadingOlder = true;
    const key = this.key;
    try {
      const page = await this.gateway.request('chat.history', { sessionKey: key, limit: PAGE, before: this.nextBefore });
      if (key !== this.key) return;
      const height = this.box.scrollHeight;
      this.learn(page.messages);
      for (const m of [...page.messages].reverse()) this.add(m, 'start');
      this.box.scrollTop += this.box.scrollHeight - height;
      this.setOlder(page.nextBefore);
    } catch {
      // Disconnected: the reconnect reloads the transcript.
    } finally {
      this.loadingOlder = false;
    }
  }

  /** Tool calls and results of a page, before its messages are drawn: a call shows whether it
   * was answered, a result how long it took. The newest answering model goes to the header. */
  learn(messages) {
    for (const m of messages) {
      if (m.role === 'toolResult') this.ctx.results.set(m.toolCallId, m);
      if (m.role !== 'assistant') continue;
      for (const b of Array.isArray(m.content) ? m.content : []) {
        if (b.type === 'toolCall') this.ctx.calls.set(b.id, m.timestamp);
      }
      if (m.model && m.seq >= (this.newestAnswer ?? -1)) {
        this.newestAnswer = m.seq;
        this.header.modelAnswered(m.model);
      }
    }
  }

  add(m, where) {
    if (this.messages.has(m.seq)) return;
    const node = message(m, this.row, this.ctx);
    if (m.__openclaw?.runId) node.dataset.run = m.__openclaw.runId;
    this.messages.set(m.seq, node);
    // A reply that stopped says how its run ended: the line said for it before it was stored goes.
    const loose = this.list.lastElementChild;
    if (where === 'end' && node.querySelector('.run-end') && loose?.matches('p.run-end')) loose.remove();
    if (where === 'start') this.list.prepend(node);
    else this.list.append(node);
  }

  /** Each exchange where it began in the flow: before the first message that came after it. */
  placeExchanges(nodes) {
    for (const old of this.list.querySelectorAll(':scope > .exchange-item')) old.remove();
    const items = [...this.list.children];
    for (const node of nodes) {
      const at = Number(node.dataset.ts);
      const next = items.find((n) => Number(n.dataset.ts) > at);
      this.list.insertBefore(node, next || null);
    }
  }

  atBottom() {
    return this.box.scrollHeight - this.box.scrollTop - this.box.clientHeight < 60;
  }

  toBottom() {
    this.box.scrollTop = this.box.scrollHeight;
  }

  live(ev) {
    if (ev.sessionKey !== this.key) return;
    const d = ev.data || {};
    if (ev.stream === 'lifecycle') return this.lifecycle(ev.runId, d, ev.ts);
    const run = this.run(ev.runId);
    const stick = this.atBottom();
    if (ev.stream === 'assistant') {
      if (!run.bubble) {
        run.text = el('div', { class: 'text md' });
        run.bubble = el('article', { class: 'msg assistant streaming' },
          el('div', { class: 'head' }, el('strong', {}, 'assistant'), el('span', { class: 'badge state running' }, 'writing…')), run.text);
        run.box.append(run.bubble);
        run.whole = '';
      }
      // Pieces, added up; drawn once a frame.
      run.whole = d.replace ? d.delta : run.whole + d.delta;
      run.drawing ||= requestAnimationFrame(() => {
        run.drawing = 0;
        run.text.replaceChildren(...markdown(run.whole).childNodes);
        if (stick) this.toBottom();
      });
      return;
    } else if (ev.stream === 'tool') {
      run.bubble = null;
      run.box.append(d.phase === 'call' ? toolCall(d.name, d.arguments, d.toolCallId) : toolResult(d.name, d.text, d.isError));
    }
    if (stick) this.toBottom();
  }

  run(runId) {
    if (!this.runs.has(runId)) {
      const box = el('div', { class: 'run', 'data-run': runId });
      this.liveArea.append(box);
      this.runs.set(runId, { box, bubble: null });
    }
    return this.runs.get(runId);
  }

  async lifecycle(runId, d, ts) {
    this.header.lifecycle(runId, d, ts);
    if (d.phase !== 'end') return this.refreshSoon();
    try {
      await this.refresh();
    } catch {
      // Disconnected: the reconnect reloads the transcript.
    } finally {
      const run = this.runs.get(runId);
      if (run) run.box.remove();
      this.runs.delete(runId);
      // Said once: a stored reply that stopped already says how its run ended.
      const said = this.list.querySelector(':scope > article:last-of-type .run-end') !== null;
      if (d.status && d.status !== 'ok' && !said) this.list.append(runEnd(d.status, d.error));
      this.exchanges.show(this.key);
    }
  }
}
