// The Approvals screen: commands held for an operator (`tools.exec.ask`, docs/tools.md), each
// with Approve, Always (approve and add its program to the agent's allowlist) and Deny. The
// list is read with `exec.approvals.list` every few seconds while the page is visible, so the
// tab's count shows a waiting command on any screen; a decision answers at once.
import { el, sessionLink } from './dom.js';

/** How often the waiting commands are read while the page is visible. */
const POLL_MS = 2000;

export class Approvals {
  constructor(gateway, { rows, count, empty, status }) {
    this.gateway = gateway;
    this.rows = rows;
    this.count = count;
    this.empty = empty;
    this.status = status;
    this.timer = null;
  }

  /** Reads the list now, then every POLL_MS while the page is visible. */
  start() {
    clearInterval(this.timer);
    this.timer = setInterval(() => {
      if (document.visibilityState === 'visible') this.load().catch(() => {});
    }, POLL_MS);
    return this.load();
  }

  async load() {
    const { approvals } = await this.gateway.request('exec.approvals.list', {});
    this.show(approvals);
  }

  show(approvals) {
    this.count.textContent = approvals.length ? String(approvals.length) : '';
    this.count.hidden = approvals.length === 0;
    this.empty.hidden = approvals.length > 0;
    const now = Date.now();
    this.rows.replaceChildren(...approvals.map((a) => el('tr', { 'data-id': a.id },
      el('td', {}, el('code', { class: 'command' }, a.command)),
      el('td', {}, a.agentId),
      el('td', {}, sessionLink(a.sessionKey)),
      el('td', {}, el('code', {}, a.cwd)),
      el('td', {}, `${Math.max(0, Math.round((a.expiresAt - now) / 1000))} s`),
      el('td', { class: 'decide' },
        el('button', { type: 'button', onclick: () => this.decide(a, 'approve') }, 'Approve'),
        el('button', { type: 'button', title: 'Approve, and allow this program from now on', onclick: () => this.decide(a, 'always') }, 'Always'),
        el('button', { type: 'button', class: 'deny', onclick: () => this.decide(a, 'deny') }, 'Deny')),
    )));
  }

  async decide(approval, how) {
    const method = how === 'deny' ? 'exec.approvals.deny' : 'exec.approvals.approve';
    const params = how === 'always' ? { id: approval.id, allowAlways: true } : { id: approval.id };
    this.status.classList.remove('error');
    try {
      const { decision } = await this.gateway.request(method, params);
      this.status.textContent = `${decision}: ${approval.command}`;
    } catch (e) {
      this.status.textContent = e.message;
      this.status.classList.add('error');
    }
    await this.load().catch(() => {});
  }
}
