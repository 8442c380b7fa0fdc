// The Channels screen: each account's state and last error, and the strangers waiting for
// pairing (`channels.pairing.list`), each with Approve (`pairing.approve`, telling the sender).
import { el, when } from './dom.js';

export class Channels {
  constructor(gateway, { accounts, requests, status }) {
    Object.assign(this, { gateway, accounts, requests, status });
  }

  async load() {
    const [channels, pairing] = await Promise.all([
      this.gateway.request('channels.status', {}),
      this.gateway.request('channels.pairing.list', {}),
    ]);
    const rows = channels.channelOrder.flatMap((id) => (channels.channelAccounts[id] || []).map((a) => el('tr', {},
      el('td', {}, channels.channelLabels[id] || id),
      el('td', {}, a.accountId),
      el('td', {}, el('span', { class: `badge ${stateClass(a)}` }, a.state || (a.enabled === false ? 'disabled' : 'configured'))),
      el('td', { class: a.lastError ? 'error' : 'hint' }, a.lastError || '—'),
    )));
    this.accounts.replaceChildren(...(rows.length ? rows
      : [el('tr', {}, el('td', { colspan: 4, class: 'hint' }, 'No channel is configured (docs/channels).'))]));
    this.requests.replaceChildren(...(pairing.requests.length ? pairing.requests.map((r) => el('tr', {},
      el('td', {}, r.channelLabel),
      el('td', {}, r.accountId),
      el('td', {}, r.senderLabel ? `${r.senderLabel} (${r.senderId})` : r.senderId),
      el('td', {}, el('code', {}, r.code)),
      el('td', {}, when(Date.parse(r.expiresAt))),
      el('td', {}, el('button', { type: 'button', onclick: () => this.approve(r) }, 'Approve')),
    )) : [el('tr', {}, el('td', { colspan: 6, class: 'hint' }, 'Nobody waits for pairing.'))]));
  }

  async approve(r) {
    this.status.classList.remove('error');
    try {
      await this.gateway.request('pairing.approve', { channel: r.channel, code: r.code, accountId: r.accountId, notify: true });
      this.status.textContent = `Approved ${r.senderLabel || r.senderId} on ${r.channelLabel}; they were told.`;
    } catch (e) {
      this.status.textContent = e.message;
      this.status.classList.add('error');
    }
    await this.load().catch(() => {});
  }
}

function stateClass(account) {
  if (account.lastError) return 'failed';
  return account.running ? 'ok' : 'pending';
}
