// The live session list: pages of `sessions.list` through its cursor (more as the list is
// scrolled), kept current by `sessions.changed` and `delivery` events, filtered on the server,
// with sub-agents nested under the session that spawned them.
import { el, when, debounce } from './dom.js';
import { chip } from './header.js';

const PAGE = 100;
const DELIVERY_OPEN = new Set(['pending', 'failed']);

export class SessionList {
  constructor(gateway, list, end) {
    this.gateway = gateway;
    this.list = list;
    this.end = end;
    this.rows = new Map();
    this.nodes = new Map();
    this.loadedAt = new Map();
    this.deliveries = new Map();
    this.describing = new Map();
    this.filters = { search: '', kind: '', agent: '' };
    this.cursor = null;
    this.generation = 0;
    this.selected = null;
    this.listeners = [];
    this.render = debounce(() => this.draw(), 16);
    this.reloadSoon = debounce(() => this.reload(), 250);
    gateway.on('sessions.changed', (ev) => this.changed(ev));
    gateway.on('delivery', (d) => this.delivery(d));
    new IntersectionObserver((seen) => {
      if (seen.some((e) => e.isIntersecting)) this.more();
    }).observe(end);
  }

  /** Called on every (re)connect: follow changes, then load the first page and deliveries. */
  async start() {
    await this.gateway.request('sessions.subscribe', {});
    await Promise.all([this.reload(), this.loadDeliveries()]);
  }

  /** The first page over HTTP (`POST /rpc`), before the page's load completes: the first
   * paint has the list, and so does anything that reads the page once it loaded (headless
   * Chromium's `--dump-dom`). Synchronous on purpose: one loopback round trip, made once. */
  prefetch(token) {
    const request = new XMLHttpRequest();
    try {
      request.open('POST', '/rpc', false);
      request.setRequestHeader('content-type', 'application/json');
      request.setRequestHeader('authorization', `Bearer ${token}`);
      request.send(JSON.stringify({ method: 'sessions.list', params: this.params() }));
      const body = JSON.parse(request.responseText);
      if (body.ok && this.rows.size === 0) {
        this.take(body.payload);
        this.draw();
      }
    } catch {
      // The socket's first page follows anyway.
    }
  }

  /** A row by key, if loaded. */
  row(key) {
    return this.rows.get(key);
  }

  /** Tells `fn(row)` whenever a row changes. */
  onRow(fn) {
    this.listeners.push(fn);
  }

  filter(change) {
    Object.assign(this.filters, change);
    this.reloadSoon();
  }

  params() {
    const p = { limit: PAGE };
    if (this.filters.search.trim()) p.search = this.filters.search.trim();
    if (this.filters.kind) p.kinds = [this.filters.kind];
    if (this.filters.agent) p.agentId = this.filters.agent;
    return p;
  }

  async reload() {
    const generation = ++this.generation;
    this.loading = true;
    try {
      // The first page asks for the total (the list's end says "n of total").
      const page = await this.gateway.request('sessions.list', { ...this.params(), includeTotal: true });
      if (generation !== this.generation) return;
      this.rows.clear();
      this.loadedAt.clear();
      this.take(page);
    } catch (e) {
      this.end.textContent = `Could not load sessions: ${e.message}`;
    } finally {
      if (generation === this.generation) this.loading = false;
    }
    if (this.selected) this.loadChildren(this.selected);
  }

  /** The next page, when there is one and none is loading. */
  async more() {
    if (!this.cursor || this.loading || !this.gateway.ready) return;
    const generation = this.generation;
    this.loading = true;
    try {
      const page = await this.gateway.request('sessions.list', { ...this.params(), cursor: this.cursor });
      if (generation === this.generation) this.take(page);
    } catch (e) {
      this.end.textContent = `Could not load more sessions: ${e.message}`;
    } finally {
      if (generation === this.generation) this.loading = false;
    }
  }

  take(page) {
    for (const row of page.sessions) this.put(row);
    this.cursor = page.nextCursor || null;
    if (typeof page.totalCount === 'number') this.total = page.totalCount;
    this.render();
  }

  moreIfVisible() {
    const box = this.end.getBoundingClientRect();
    if (box.top < window.innerHeight) this.more();
  }

  put(row) {
    if (!this.loadedAt.has(row.key)) this.loadedAt.set(row.key, this.loadedAt.size);
    this.rows.set(row.key, row);
    this.nodes.delete(row.key);
    for (const fn of this.listeners) fn(row);
  }

  remove(key) {
    this.rows.delete(key);
    this.nodes.delete(key);
    this.render();
  }

  matches(row) {
    const { search, kind, agent } = this.filters;
    if (kind && row.kind !== kind) return false;
    if (agent && row.agentId !== agent) return false;
    const needle = search.trim().toLowerCase();
    if (!needle) return true;
    return [row.key, row.label, row.displayName].some((t) => t && t.toLowerCase().includes(needle));
  }

  changed(ev) {
    const key = ev.sessionKey;
    if (ev.reason === 'delete') return this.remove(key);
    const row = this.rows.get(key);
    if (row && ev.phase) {
      this.put({ ...row, runState: ev.phase === 'end' ? undefined : ev.phase === 'start' ? 'running' : 'queued' });
      this.render();
    }
    this.describeSoon(key);
  }

  /** Fetches the row of `key` now, and once more after that when it changed again meanwhile:
   * one request in flight per session however many events arrive. */
  describeSoon(key) {
    const pending = this.describing.get(key);
    if (pending) {
      pending.again = true;
      return;
    }
    const state = { again: false };
    this.describing.set(key, state);
    this.describe(key).finally(() => {
      this.describing.delete(key);
      if (state.again) this.describeSoon(key);
    });
  }

  async describe(key) {
    let answer;
    try {
      answer = await this.gateway.request('sessions.describe', { key });
    } catch {
      return;
    }
    const row = answer.session;
    if (!row) return this.remove(key);
    if (!this.rows.has(row.key) && !this.matches(row)) return;
    this.put(row);
    this.render();
  }

  /** The sub-agents of `key`, loaded even when they are on a later page. */
  async loadChildren(key) {
    try {
      const page = await this.gateway.request('sessions.list', { spawnedBy: key, limit: PAGE });
      for (const row of page.sessions) if (this.matches(row)) this.put(row);
      this.render();
    } catch {
      // Not a session (yet): nothing to nest.
    }
  }

  async loadDeliveries() {
    this.deliveries.clear();
    for (const status of DELIVERY_OPEN) {
      const page = await this.gateway.request('deliveries.list', { status, limit: 500 });
      for (const d of page.deliveries) this.deliveries.set(d.id, d);
    }
    this.nodes.clear();
    this.render();
  }

  delivery(d) {
    const before = this.deliveries.get(d.id);
    if (DELIVERY_OPEN.has(d.status)) this.deliveries.set(d.id, d);
    else this.deliveries.delete(d.id);
    for (const key of [before?.sessionKey, d.sessionKey]) if (key) this.nodes.delete(key);
    // A message delivered into a listed session (an announce, a reply) updated it; a sub-agent's
    // report also moved its child on (announced), which no session event says.
    if (d.status === 'delivered' && this.rows.has(d.to)) this.describeSoon(d.to);
    if (d.kind === 'subagent-announce') {
      for (const row of this.rows.values()) {
        if (row.spawnedBy === d.to && row.subagent && row.subagent.state !== 'done') this.describeSoon(row.key);
      }
    }
    this.render();
  }

  select(key) {
    this.selected = key;
    for (const [k, node] of this.nodes) mark(node, k === key);
    if (key && this.gateway.ready) this.loadChildren(key);
  }

  /** Loaded rows, newest first; a row whose parent is loaded goes under it. */
  draw() {
    const byUpdate = [...this.rows.values()].sort(
      (a, b) => b.updatedAt - a.updatedAt || this.loadedAt.get(a.key) - this.loadedAt.get(b.key),
    );
    const children = new Map();
    const top = [];
    for (const row of byUpdate) {
      const parent = row.spawnedBy && this.rows.has(row.spawnedBy) ? row.spawnedBy : null;
      if (!parent) top.push(row);
      else {
        if (!children.has(parent)) children.set(parent, []);
        children.get(parent).push(row);
      }
    }
    const tree = (row, depth) => {
      const node = this.node(row);
      const kids = (children.get(row.key) || []).map((r) => (depth < 8 ? tree(r, depth + 1) : this.node(r)));
      node.lastChild.replaceChildren(...kids);
      return node;
    };
    this.list.replaceChildren(...top.map((row) => tree(row, 0)));
    const n = this.rows.size;
    const total = this.cursor && this.total ? ` of ${this.total}` : '';
    this.end.textContent = this.cursor ? `${n}${total} sessions loaded; scroll for more` : `${n} sessions`;
    // A short list may not fill the screen: keep paging while its end is in view.
    if (this.cursor) requestAnimationFrame(() => this.moreIfVisible());
  }

  node(row) {
    let node = this.nodes.get(row.key);
    if (node) return node;
    const title = row.label || row.displayName || row.key;
    node = el('li', { class: 'session', 'data-key': row.key },
      el('a', { href: '#s=' + encodeURIComponent(row.key), class: 'row' },
        el('span', { class: 'title' }, title),
        el('span', { class: 'badges' }, this.badges(row)),
        el('span', { class: 'sub' }, title === row.key ? '' : row.key),
        el('time', { class: 'updated', datetime: new Date(row.updatedAt).toISOString() }, when(row.updatedAt)),
      ),
      el('ul', { class: 'children' }),
    );
    mark(node, row.key === this.selected);
    this.nodes.set(row.key, node);
    return node;
  }

  badges(row) {
    const state = row.runState || 'idle';
    const out = [chip('kind', row.kind), chip('channel', row.channel), chip('agent', row.agentId), chip('state', state, state)];
    if (row.subagent) {
      const s = row.subagent;
      const text = s.outcome ? `${s.state} · ${s.outcome}` : s.state;
      const node = chip('sub-agent', text, `subagent ${s.outcome || s.state}`);
      node.setAttribute('title', `sub-agent ${text}: ${s.task}`);
      out.push(node);
    }
    let pending = 0;
    let failed = 0;
    for (const d of this.deliveries.values()) {
      if (d.sessionKey !== row.key) continue;
      if (d.status === 'failed') failed += 1;
      else pending += 1;
    }
    if (pending) out.push(chip('deliveries', `${pending} pending`, 'pending'));
    if (failed) out.push(chip('deliveries', `${failed} failed`, 'failed'));
    if (row.sendPolicy === 'deny') out.push(el('span', { class: 'badge deny' }, 'send: deny'));
    return out;
  }
}

/** The open session's row: marked for the eye and for screen readers. */
function mark(node, selected) {
  node.classList.toggle('selected', selected);
  const link = node.firstElementChild;
  if (selected) link.setAttribute('aria-current', 'page');
  else link.removeAttribute('aria-current');
}
