// The page: where the token comes from, the connection, and which screen shows what.
import { Gateway } from './gateway.js';
import { SessionList } from './sessions.js';
import { Transcript } from './transcript.js';
import { Composer } from './composer.js';
import { Agents } from './agents.js';
import { Approvals } from './approvals.js';
import { Usage } from './usage.js';
import { Cron } from './cron.js';
import { Channels } from './channels.js';
import { Logs } from './logs.js';
import { showView, keyboard } from './views.js';

const TOKEN_KEY = 'switchboard.token';
const $ = (id) => document.getElementById(id);

/** The token of a `#token=…` fragment (then removed from the address bar), else the stored one. */
function takeToken() {
  const params = new URLSearchParams(location.hash.slice(1));
  const given = params.get('token');
  if (given) {
    localStorage.setItem(TOKEN_KEY, given);
    params.delete('token');
    const rest = params.toString();
    history.replaceState(null, '', location.pathname + (rest ? '#' + rest : ''));
  }
  return localStorage.getItem(TOKEN_KEY);
}

function selectedKey() {
  return new URLSearchParams(location.hash.slice(1)).get('s');
}

function main() {
  const token = takeToken();
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const gateway = new Gateway(`${scheme}//${location.host}/`, status);
  const sessions = new SessionList(gateway, $('session-list'), $('list-end'));
  const agents = new Agents(gateway, $('agent-rows'), $('agent-filter'));
  const transcript = new Transcript(gateway, sessions, (id) => agents.model(id));
  const composer = new Composer(gateway, transcript);
  const approvals = new Approvals(gateway, {
    rows: $('approval-rows'), count: $('approval-count'), empty: $('approvals-empty'), status: $('approvals-status'),
  });
  const usage = new Usage(gateway, {
    range: $('usage-range'), totals: $('usage-totals'), days: $('usage-days'), agents: $('usage-agents'),
    models: $('usage-models'), sessions: $('usage-sessions'), status: $('usage-status'),
  });
  const cron = new Cron(gateway, { jobs: $('cron-jobs'), runs: $('cron-runs'), form: $('cron-form'), status: $('cron-status') });
  const channels = new Channels(gateway, { accounts: $('channel-accounts'), requests: $('pairing-requests'), status: $('channels-status') });
  const logs = new Logs(gateway, { lines: $('log-lines'), level: $('log-level'), status: $('logs-status') });
  agents.onLoad = () => transcript.header.refresh();

  function status(state, text) {
    const conn = $('conn');
    conn.textContent = text;
    conn.dataset.state = state;
    if (state === 'refused') {
      askToken(gateway.token ? `The gateway refused the token: ${text}` : 'This page needs the gateway token.');
    }
  }

  function askToken(why) {
    $('login').hidden = false;
    $('login-why').textContent = why;
    $('token-input').focus();
  }

  function open() {
    const key = selectedKey();
    // A session link on another screen (Usage, Cron, Approvals) opens it on the Sessions screen.
    if (key && $('transcript').hidden) $('show-sessions').click();
    sessions.select(key);
    showView(key);
    transcript.open(key);
    composer.show(key);
  }

  gateway.onReady = async () => {
    $('login').hidden = true;
    await Promise.allSettled([sessions.start(), agents.load(), approvals.start()]);
    transcript.reconnected();
  };

  $('token-form').addEventListener('submit', (e) => {
    e.preventDefault();
    const value = $('token-input').value.trim();
    if (!value) return;
    localStorage.setItem(TOKEN_KEY, value);
    $('token-input').value = '';
    $('login').hidden = true;
    gateway.start(value);
  });
  // The screens: each tab shows its sections and hides the others'.
  const screens = {
    'show-sessions': ['sessions', 'transcript'], 'show-agents': ['agents'], 'show-approvals': ['approvals'],
    'show-usage': ['usage'], 'show-cron': ['cron'], 'show-channels': ['channels'], 'show-logs': ['logs'],
  };
  // What a screen reads when it is shown (the log keeps reading while it is shown).
  const shown = {
    'show-approvals': () => approvals.load(), 'show-usage': () => usage.load(), 'show-cron': () => cron.load(),
    'show-channels': () => channels.load(), 'show-logs': () => logs.start(),
  };
  for (const tab of Object.keys(screens)) {
    $(tab).addEventListener('click', () => {
      for (const [other, sections] of Object.entries(screens)) {
        for (const section of sections) $(section).hidden = other !== tab;
        $(other).setAttribute('aria-pressed', String(other === tab));
      }
      if (tab !== 'show-logs') logs.stop();
      shown[tab]?.().catch((e) => console.warn(tab, e));
    });
  }
  $('search').addEventListener('input', () => sessions.filter({ search: $('search').value }));
  $('kind-filter').addEventListener('change', () => sessions.filter({ kind: $('kind-filter').value }));
  $('agent-filter').addEventListener('change', () => sessions.filter({ agent: $('agent-filter').value }));
  window.addEventListener('hashchange', open);
  // A link to the session already open changes no hash: it still shows the Sessions screen.
  document.addEventListener('click', (e) => {
    const link = e.target instanceof Element && e.target.closest('a.session-link');
    if (link && new URL(link.href).hash === location.hash) open();
  });
  keyboard(open);

  open();
  // Without a token the gateway may still be open (gateway.auth.mode "none" on loopback).
  gateway.start(token);
  if (token) sessions.prefetch(token);
  else askToken('This page needs the gateway token.');
}

main();
