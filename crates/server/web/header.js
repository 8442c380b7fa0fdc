// The open session's header: what it is (labelled chips), its model and the model that answered
// last, how full its context window is, what it cost so far, its send policy, and a timeline of
// its current or last run (queued → running → ended, with durations and the outcome).
import { el, sessionLink, when } from './dom.js';
import { duration } from './messages.js';

const $ = (id) => document.getElementById(id);

/** A chip that says what it shows: `kind main`. */
export function chip(label, value, cls = '') {
  return el('span', { class: `badge ${label} ${cls}`.trim(), title: `${label}: ${value}` },
    el('span', { class: 'chip-label' }, label), ' ', el('span', { class: 'chip-value' }, value));
}

function number(n) {
  return Number(n).toLocaleString('en-US');
}

function fact(name, ...value) {
  return el('div', { class: 'fact' }, el('dt', {}, name), el('dd', {}, ...value));
}

export class SessionHeader {
  /** `agentModel(agentId)`: the agent's configured model, when the agents are loaded. */
  constructor(agentModel = () => null) {
    this.agentModel = agentModel;
    this.answered = null;
    this.run = null;
  }

  /** Draws the figures again (the agents' models arrived). */
  refresh() {
    if (this.row) this.facts();
  }

  reset(key) {
    this.row = null;
    this.answered = null;
    this.run = null;
    $('session-title').textContent = key || '';
    $('session-meta').replaceChildren(key || '');
    $('session-facts').replaceChildren();
    $('run-timeline').replaceChildren();
  }

  say(text) {
    $('session-meta').replaceChildren(text);
  }

  show(row) {
    this.row = row;
    $('session-title').textContent = row.label || row.displayName || row.key;
    const meta = $('session-meta');
    const title = row.label || row.displayName || row.key;
    meta.replaceChildren(title === row.key ? '' : el('span', { class: 'key' }, row.key), ' ',
      chip('kind', row.kind), chip('channel', row.channel), chip('agent', row.agentId),
      chip('state', row.runState || 'idle', row.runState || 'idle'));
    if (row.spawnedBy) meta.append(' spawned by ', sessionLink(row.spawnedBy));
    if (row.subagent) meta.append(' ', chip('sub-agent', row.subagent.state + (row.subagent.outcome ? ` · ${row.subagent.outcome}` : ''), row.subagent.outcome || row.subagent.state));
    this.facts();
    this.timeline();
  }

  /** The model of the newest assistant message (after a fallback it differs from the row's). */
  modelAnswered(model) {
    if (!model || model === this.answered) return;
    this.answered = model;
    if (this.row) this.facts();
  }

  /** The agent's model, and the one that answered last where that is another (a fallback):
   * the row's `model` is its last call's, a message's `model` the id without its provider. */
  facts() {
    const row = this.row;
    const configured = this.agentModel(row.agentId) || row.model;
    const answered = row.model || this.answered;
    const same = (a, b) => a === b || (a || '').endsWith(`/${b}`) || (b || '').endsWith(`/${a}`);
    const model = [el('code', { class: 'configured' }, configured || 'agent default')];
    if (answered && !same(answered, configured)) model.push(' · last answer by ', el('code', { class: 'answered' }, answered));
    const used = row.totalTokens;
    const window = row.contextTokens;
    const context = window ? `${number(used || 0)} / ${number(window)} tokens (${Math.round((100 * (used || 0)) / window)} %)`
      : used ? `${number(used)} tokens` : 'nothing sent yet';
    const cost = typeof row.costUsd === 'number' ? `$${row.costUsd.toFixed(row.costUsd < 1 ? 4 : 2)}` : 'not priced';
    $('session-facts').replaceChildren(
      fact('Model', ...model),
      fact('Context', el('span', { class: 'context' }, context)),
      fact('Cost', el('span', { class: 'cost' }, cost)));
  }

  /** A run's lifecycle event (`queued`, `start`, `end`) with its time. */
  lifecycle(runId, data, ts) {
    if (!this.run || this.run.id !== runId) this.run = { id: runId };
    const run = this.run;
    if (data.phase === 'queued') run.queuedAt = ts;
    if (data.phase === 'start') run.startedAt = ts;
    if (data.phase === 'end') Object.assign(run, { endedAt: ts, status: data.status });
    this.timeline();
  }

  /** The live run when there is one, else the row's last run. */
  timeline() {
    const box = $('run-timeline');
    const row = this.row || {};
    const run = this.run || (row.startedAt ? {
      id: row.lastRunId, startedAt: row.startedAt, endedAt: row.endedAt,
      status: row.hasActiveRun ? null : { done: 'ok', killed: 'aborted', failed: 'error' }[row.status] || row.status,
    } : null);
    if (!run) return box.replaceChildren();
    const steps = [];
    if (run.queuedAt) steps.push(step('queued', when(run.queuedAt), run.startedAt ? `waited ${duration(run.startedAt - run.queuedAt)}` : 'waiting'));
    if (run.startedAt) steps.push(step('running', when(run.startedAt), run.endedAt ? `ran ${duration(run.endedAt - run.startedAt)}` : 'working'));
    if (run.endedAt) steps.push(step(run.status || 'ended', when(run.endedAt), null));
    const arrows = steps.flatMap((s, i) => (i ? [el('span', { 'aria-hidden': 'true' }, '→'), s] : [s]));
    box.replaceChildren(el('span', { class: 'timeline-title' }, 'Run'), ...arrows);
  }
}

/** What a step is called: a run that ended well is `done`, the others say how they ended. */
const STEP = { ok: 'done', aborted: 'aborted', timeout: 'timed out', error: 'failed' };

function step(name, at, note) {
  return el('span', { class: `step ${name}` }, el('strong', {}, STEP[name] || name), ' ', el('time', {}, at), note ? ` · ${note}` : '');
}
