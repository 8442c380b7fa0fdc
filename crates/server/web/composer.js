// The message box of the open session: send (`chat.send`), abort its run (`chat.abort`), its
// send policy (allow / deny / inherit) and its label (`sessions.patch`), both in the session's
// header. Every refusal the gateway gives is shown as it was given; run ids are not shown.
import { newId } from './dom.js';

const $ = (id) => document.getElementById(id);

export class Composer {
  constructor(gateway, transcript) {
    this.gateway = gateway;
    this.key = null;
    transcript.onRow((row) => this.showRow(row));
    $('composer').addEventListener('submit', (e) => {
      e.preventDefault();
      this.send();
    });
    $('message').addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        this.send();
      }
    });
    $('abort').addEventListener('click', () => this.abort());
    $('policy').addEventListener('change', () => this.policy());
    $('save-label').addEventListener('click', () => this.label());
  }

  show(key) {
    this.key = key;
    $('message').value = '';
    $('label').value = '';
    $('policy').value = 'inherit';
    this.say('');
  }

  showRow(row) {
    $('policy').value = row.sendPolicy || 'inherit';
    if (document.activeElement !== $('label')) $('label').value = row.label || '';
  }

  say(text, error = false) {
    const status = $('composer-status');
    status.textContent = text;
    status.classList.toggle('error', error);
  }

  async call(doing, method, params) {
    try {
      return await this.gateway.request(method, params);
    } catch (e) {
      this.say(`${doing} refused: ${e.message}`, true);
      return null;
    }
  }

  async send() {
    const text = $('message').value.trim();
    if (!text || !this.key) return;
    $('send').disabled = true;
    const params = { sessionKey: this.key, message: text, idempotencyKey: newId() };
    const sent = await this.call('Send', 'chat.send', params);
    $('send').disabled = false;
    if (!sent) return;
    $('message').value = '';
    // A slash command (`/status`, `/model …`) is answered by the gateway itself.
    this.say(sent.command ? sent.reply : 'Sent; the reply shows in the transcript.');
  }

  async abort() {
    const done = await this.call('Abort', 'chat.abort', { sessionKey: this.key });
    if (done) this.say(done.aborted ? 'Aborted: the run stopped.' : 'No run to abort.');
  }

  async policy() {
    const value = $('policy').value;
    const sendPolicy = value === 'inherit' ? null : value;
    const done = await this.call('Changing the send policy', 'sessions.patch', { key: this.key, sendPolicy });
    if (done) this.say(`Send policy: ${value}.`);
  }

  async label() {
    const label = $('label').value.trim();
    const done = await this.call('Changing the label', 'sessions.patch', { key: this.key, label: label || null });
    if (done) this.say(label ? `Label: ${label}.` : 'Label removed.');
  }
}
