// The Cron screen: the jobs with Run now, Enable/Disable, Edit and Remove, a form that adds or
// saves a job, and every job's last runs (`cron.runs`), each linked to its session.
import { el, sessionLink, when } from './dom.js';

export class Cron {
  constructor(gateway, { jobs, runs, form, status }) {
    Object.assign(this, { gateway, jobs, runs, form, status });
    this.editing = null;
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      this.save();
    });
    form.querySelector('[data-cancel]').addEventListener('click', () => this.edit(null));
  }

  async load() {
    const [list, runs] = await Promise.all([
      this.gateway.request('cron.list', { includeDisabled: true }),
      this.gateway.request('cron.runs', { scope: 'all', limit: 20 }),
    ]);
    this.jobs.replaceChildren(...(list.jobs.length ? list.jobs.map((j) => this.job(j))
      : [el('tr', {}, el('td', { colspan: 6, class: 'hint' }, 'No jobs yet: add one below.'))]));
    this.runs.replaceChildren(...(runs.entries.length ? runs.entries.map((r) => el('tr', {},
      el('td', {}, when(r.ts)),
      el('td', {}, r.jobName),
      el('td', {}, el('span', { class: `badge ${r.status}` }, r.status)),
      el('td', {}, r.durationMs != null ? `${(r.durationMs / 1000).toFixed(1)} s` : ''),
      el('td', { class: 'summary' }, r.error || r.summary || ''),
      el('td', {}, sessionLink(r.sessionKey, 'transcript')),
    )) : [el('tr', {}, el('td', { colspan: 6, class: 'hint' }, 'No job has run yet.'))]));
  }

  job(j) {
    const last = j.state?.lastRunStatus;
    return el('tr', { 'data-id': j.id },
      el('td', {}, el('strong', {}, j.name || j.id), j.name && j.name !== j.id ? ` (${j.id})` : ''),
      el('td', {}, el('code', {}, j.scheduleText), ' · ', j.agentId),
      el('td', {}, j.enabled ? when(j.state?.nextRunAtMs) || '—' : 'disabled'),
      el('td', {}, last ? el('span', { class: `badge ${last}` }, last) : '—'),
      el('td', { class: 'message' }, j.message),
      el('td', { class: 'decide' },
        el('button', { type: 'button', onclick: () => this.act(`Run ${j.id}`, 'cron.run', { id: j.id }) }, 'Run now'),
        el('button', { type: 'button', onclick: () => this.act(`${j.enabled ? 'Disable' : 'Enable'} ${j.id}`, 'cron.update', { id: j.id, patch: { enabled: !j.enabled } }) },
          j.enabled ? 'Disable' : 'Enable'),
        el('button', { type: 'button', onclick: () => this.edit(j) }, 'Edit'),
        el('button', { type: 'button', class: 'deny', onclick: () => this.act(`Remove ${j.id}`, 'cron.remove', { id: j.id }) }, 'Remove')));
  }

  /** Fills the form with `job` to save it (`null`: the form adds a new job again). */
  edit(job) {
    this.editing = job ? job.id : null;
    const f = this.form.elements;
    f.id.value = job ? job.id : '';
    f.id.disabled = Boolean(job);
    f.schedule.value = job ? job.scheduleText : '';
    f.message.value = job ? job.message : '';
    f.agent.value = job ? job.agentId : '';
    f.agent.disabled = Boolean(job);
    this.form.querySelector('[type=submit]').textContent = job ? `Save ${job.id}` : 'Add job';
    this.form.querySelector('[data-cancel]').hidden = !job;
    if (job) f.schedule.focus();
  }

  async save() {
    const f = this.form.elements;
    const fields = { schedule: f.schedule.value.trim(), message: f.message.value };
    if (this.editing) {
      if (await this.act(`Saved ${this.editing}`, 'cron.update', { id: this.editing, patch: fields })) this.edit(null);
      return;
    }
    const add = { ...fields, ...(f.id.value.trim() ? { id: f.id.value.trim() } : {}), ...(f.agent.value.trim() ? { agentId: f.agent.value.trim() } : {}) };
    if (await this.act('Added', 'cron.add', add)) this.form.reset();
  }

  /** Calls `method`; says `done` or the gateway's refusal, then reads the jobs again. */
  async act(done, method, params) {
    this.status.classList.remove('error');
    try {
      await this.gateway.request(method, params);
      this.status.textContent = `${done}.`;
      return true;
    } catch (e) {
      this.status.textContent = e.message;
      this.status.classList.add('error');
      return false;
    } finally {
      await this.load().catch(() => {});
    }
  }
}
