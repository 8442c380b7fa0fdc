// The Logs screen: `logs.tail` every two seconds from the last cursor while shown, newest at the
// bottom, filtered by level; each line is `{time, level, subsystem, message}`.
import { el } from './dom.js';

const POLL_MS = 2000;
const KEPT = 1000;
const RANK = { trace: 0, debug: 1, info: 2, warn: 3, error: 4 };

export class Logs {
  constructor(gateway, { lines, level, status }) {
    Object.assign(this, { gateway, lines, level, status });
    this.cursor = null;
    this.kept = [];
    this.timer = null;
    level.addEventListener('change', () => this.render());
  }

  /** Reads now, then every POLL_MS until `stop`. */
  start() {
    clearInterval(this.timer);
    this.timer = setInterval(() => this.load().catch(() => {}), POLL_MS);
    return this.load();
  }

  stop() {
    clearInterval(this.timer);
  }

  async load() {
    const params = this.cursor === null ? { limit: 500 } : { cursor: this.cursor, limit: 500 };
    const tail = await this.gateway.request('logs.tail', params);
    const parsed = tail.lines.map(parse);
    this.kept = tail.reset || this.cursor === null ? parsed : this.kept.concat(parsed);
    this.kept = this.kept.slice(-KEPT);
    this.cursor = tail.cursor;
    this.status.textContent = tail.truncated ? 'Older lines were left out.' : '';
    if (parsed.length || tail.reset) this.render();
  }

  render() {
    const least = RANK[this.level.value] ?? 0;
    const shown = this.kept.filter((l) => (RANK[l.level] ?? RANK.info) >= least);
    const atEnd = this.lines.scrollTop + this.lines.clientHeight >= this.lines.scrollHeight - 4;
    this.lines.replaceChildren(...shown.map((l) => el('li', { class: `log ${l.level || ''}` },
      l.time ? el('time', {}, l.time.replace('T', ' ').replace(/\.\d+Z$/, 'Z')) : null,
      l.level ? el('span', { class: 'level' }, l.level) : null,
      l.subsystem ? el('span', { class: 'subsystem' }, l.subsystem) : null,
      el('span', { class: 'line' }, l.message))));
    if (atEnd) this.lines.scrollTop = this.lines.scrollHeight;
  }
}

function parse(line) {
  try {
    const o = JSON.parse(line);
    if (o && typeof o === 'object') return o;
  } catch {}
  return { message: line };
}
