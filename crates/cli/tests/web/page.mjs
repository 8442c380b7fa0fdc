// The web page in real headless Chromium (Playwright's playwright-core), against a real
// `switchboard gateway` process this script starts and restarts itself. Run by
// crates/cli/tests/suite/web.rs, which installs playwright-core, writes the config and serves
// the mock model; each scenario prints `ok <name>`, the first failure exits 1 with a
// screenshot next to the state dir.
//
// Environment: SWITCHBOARD_BIN, STATE_DIR, CHROMIUM, and SCREENSHOT (optional: where to save a
// picture of the page for the docs).
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium } from 'playwright-core';

const { SWITCHBOARD_BIN: BIN, STATE_DIR: HOME, CHROMIUM, SCREENSHOT } = process.env;
const WAIT = { timeout: 20000 };
const problems = [];
let gateway = null;
let page = null;

/** Starts the gateway (on `port`, 0 = any); answers its page's address and the link with the token. */
async function startGateway(port = 0) {
  const child = spawn(BIN, ['--state-dir', HOME, 'gateway', '--port', String(port)], {
    env: { ...process.env, SWITCHBOARD_LOG: 'warn' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = createInterface({ input: child.stdout });
  const url = await new Promise((resolve, reject) => {
    child.on('exit', (code) => reject(new Error(`the gateway exited (${code}) before printing its URL`)));
    lines.on('line', (line) => {
      const found = line.match(/^\s*web:\s+(\S+)/);
      if (found) resolve(found[1]);
    });
  });
  // Stdout is a pipe, so the printed address carries no token: it is in the state dir.
  const base = url.split('#')[0];
  const token = readFileSync(join(HOME, 'gateway-token'), 'utf8').trim();
  gateway = { child, url: `${base}#token=${encodeURIComponent(token)}`, base, token };
  return gateway;
}

function stopGateway(signal) {
  const { child } = gateway;
  return new Promise((resolve) => {
    child.on('exit', resolve);
    child.kill(signal);
  });
}

async function rpc(method, params = {}) {
  const res = await fetch(gateway.base + 'rpc', {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${gateway.token}` },
    body: JSON.stringify({ method, params }),
  });
  const body = await res.json();
  if (!body.ok) throw new Error(`${method}: ${body.error.message}`);
  return body.payload;
}

function check(condition, message) {
  if (!condition) throw new Error(message);
}

const row = (key) => page.locator(`#session-list li.session[data-key="${key}"]`).first();
const openSession = (key) => page.evaluate((k) => { location.hash = 's=' + encodeURIComponent(k); }, key);
const rows = () => page.locator('#session-list li.session').count();

async function send(text) {
  await page.fill('#message', text);
  await page.click('#send');
}

/** The text of the first element matching `selector` whose text contains `needle`. */
async function waitText(selector, needle) {
  const found = page.locator(selector).filter({ hasText: needle }).first();
  await found.waitFor(WAIT);
  return found.textContent();
}

const scenarios = {
  async 'load with the token shows the sessions'() {
    await rpc('sessions.create', { key: 'agent:main:demo', label: 'Demo session' });
    await page.goto(gateway.url);
    await row('agent:main:demo').waitFor(WAIT);
    check((await row('agent:main:demo').locator('.title').textContent()) === 'Demo session', 'the label is the row title');
    check(await row('agent:main:main').isVisible(), 'the main session is listed');
    const hash = await page.evaluate(() => location.hash);
    check(!hash.includes('token'), `the token left the address bar (hash ${hash})`);
    check(await page.evaluate(() => localStorage.getItem('switchboard.token')) === gateway.token, 'the token is remembered');
    await page.click('#show-agents');
    const writer = page.locator('#agent-rows tr').filter({ hasText: 'writer' });
    await writer.waitFor(WAIT);
    check((await writer.textContent()).includes('mock/writer'), 'the agents screen shows each model');
    const main = await page.locator('#agent-rows tr').filter({ hasText: 'default' }).textContent();
    check(main.includes('builtin/scripted') && main.includes('main'), `the default agent and what it may spawn: ${main}`);
    check(main.includes('5 session tools'), `the default agent's tools: ${main}`);
    await page.click('#show-sessions');
    await row('agent:main:demo').waitFor(WAIT);
  },

  async 'a refused token asks for the token'() {
    const context = await page.context().browser().newContext();
    const other = await context.newPage();
    await other.goto(gateway.base);
    await other.locator('#login-why').filter({ hasText: 'needs the gateway token' }).waitFor(WAIT);
    await other.goto('about:blank');
    await other.goto(gateway.base + '#token=wrong-token');
    await other.locator('#login').waitFor({ state: 'visible', ...WAIT });
    check((await other.textContent('#login-why')).includes('refused'), 'the form says the token was refused');
    await other.fill('#token-input', gateway.token);
    await other.click('#token-form button[type=submit]');
    await other.locator('#session-list li.session[data-key="agent:main:demo"]').waitFor(WAIT);
    check(await other.locator('#login').isHidden(), 'the form is gone once connected');
    await context.close();
  },

  async 'a sent message streams its reply'() {
    await openSession('agent:writer:main');
    await send('Tell me something');
    const partial = await page.waitForFunction(() => {
      const t = document.querySelector('.live .msg.streaming .text');
      return t && t.textContent.length > 0 && t.textContent;
    }, null, WAIT);
    const seen = await partial.jsonValue();
    const full = 'Streaming replies arrive word by word.';
    check(full.startsWith(seen) && seen.length < full.length, `a part of the reply was shown while written (${seen})`);
    await waitText('.list .msg.assistant .text', full);
    await waitText('.list .msg.user .text', 'Tell me something');
    await page.locator('.live .msg.streaming').waitFor({ state: 'detached', ...WAIT });
  },

  async 'deny policy refuses the send on screen'() {
    await openSession('agent:writer:main');
    await page.locator('#session-meta').filter({ hasText: 'agent:writer:main' }).waitFor(WAIT);
    await page.selectOption('#policy', 'deny');
    await page.locator('#composer-status').filter({ hasText: 'Send policy: deny' }).waitFor(WAIT);
    await row('agent:writer:main').locator('.badge.deny').waitFor(WAIT);
    await send('Are you there?');
    const status = page.locator('#composer-status.error');
    await status.filter({ hasText: 'Send refused' }).waitFor(WAIT);
    check((await status.textContent()).toLowerCase().includes('policy'), 'the refusal names the send policy');
    await page.selectOption('#policy', 'inherit');
    await page.locator('#composer-status').filter({ hasText: 'Send policy: inherit' }).waitFor(WAIT);
  },

  async 'labels are edited and runs aborted from the composer'() {
    await openSession('agent:main:demo');
    await page.locator('#session-meta').filter({ hasText: 'agent:main:demo' }).waitFor(WAIT);
    await page.fill('#label', 'Renamed on the page');
    await page.click('#save-label');
    await row('agent:main:demo').locator('.title').filter({ hasText: 'Renamed on the page' }).waitFor(WAIT);
    await send('@delay 60000\n@reply too late');
    await row('agent:main:demo').locator('.badge.state.running').waitFor(WAIT);
    await page.click('#abort');
    await page.locator('#composer-status').filter({ hasText: 'Aborted' }).waitFor(WAIT);
    await page.locator('.list .run-end').filter({ hasText: 'run aborted' }).waitFor(WAIT);
    await row('agent:main:demo').locator('.badge.state.idle').waitFor(WAIT);
  },

  async 'older messages load on scroll'() {
    for (let n = 0; n < 120; n++) await rpc('chat.inject', { sessionKey: 'agent:main:long', message: `note ${n}` });
    await openSession('agent:main:long');
    await row('agent:main:long').waitFor(WAIT);
    await waitText('.list .msg .text', 'note 119');
    check(await page.locator('.list .msg').count() === 50, 'the newest page first');
    check(!(await page.locator('.list .msg').filter({ hasText: /^.*note 0$/ }).count()), 'not the oldest yet');
    for (const shown of [100, 120]) {
      await page.evaluate(() => { document.getElementById('messages').scrollTop = 0; });
      await page.waitForFunction((n) => document.querySelectorAll('.list .msg').length === n, shown, WAIT);
    }
    check((await page.locator('.list .msg .text').first().textContent()) === 'note 0', 'the oldest message comes last, at the top');
    check(await page.locator('.older').isHidden(), 'nothing older is offered');
  },

  async 'a spawned sub-agent appears under its parent and reports'() {
    await openSession('agent:main:main');
    await send('@tool sessions_spawn {"task": "@reply child report ready", "label": "kid"}');
    const child = row('agent:main:main').locator('ul.children li.session').filter({ hasText: 'kid' }).first();
    await child.waitFor(WAIT);
    await child.locator('.badge.subagent').filter({ hasText: /announced|done/ }).waitFor(WAIT);
    await waitText('.list .msg.user.from-subagent-announce', 'child report ready');
  },

  async 'a sessions_send exchange shows in both transcripts'() {
    await rpc('sessions.create', { key: 'agent:main:peer', label: 'peer' });
    await openSession('agent:main:main');
    await send('@tool sessions_send {"sessionKey": "agent:main:peer", "message": "@reply pong from peer", "timeoutSeconds": 30}');
    await waitText('.list .msg.tool-result', 'pong from peer');
    const exchange = page.locator('#exchanges details.exchange').first();
    await exchange.waitFor(WAIT);
    await exchange.locator('summary').click();
    await exchange.locator('.thread-item').filter({ hasText: 'pong from peer' }).first().waitFor(WAIT);
    await openSession('agent:main:peer');
    const asked = page.locator('.list .msg.user.from-agent').first();
    await asked.waitFor(WAIT);
    check(await asked.locator('a.session-link', { hasText: 'agent:main:main' }).count() > 0, 'the request links to its sender');
    await waitText('.list .msg.assistant .text', 'pong from peer');
    await row('agent:main:peer').locator('.title').filter({ hasText: 'peer' }).waitFor(WAIT);
  },

  async 'hostile text stays text'() {
    const hostile = '<img src=x onerror=alert(1)>';
    await rpc('chat.inject', { sessionKey: 'agent:main:hostile', message: hostile });
    await rpc('chat.inject', { sessionKey: 'agent:main:hostile', message: `<script>window.pwned = 1</script>${hostile}`, role: 'user' });
    await rpc('sessions.patch', { key: 'agent:main:hostile', label: '<b onmouseover=alert(2)>bold</b>' });
    await openSession('agent:main:hostile');
    await waitText('.list .msg.assistant .text', hostile);
    await waitText('.list .msg.user .text', '<script>');
    await row('agent:main:hostile').locator('.title').filter({ hasText: '<b onmouseover' }).waitFor(WAIT);
    await openSession('agent:main:main');
    await send(hostile);
    await waitText('.list .msg.assistant .text', `You said: ${hostile}`);
    const injected = await page.evaluate(() => ({
      images: document.querySelectorAll('img[src="x"]').length,
      bold: document.querySelectorAll('#session-list b').length,
      pwned: 'pwned' in window,
    }));
    check(injected.images === 0 && injected.bold === 0 && !injected.pwned, `nothing was injected: ${JSON.stringify(injected)}`);
  },

  async '10,000 sessions page through the cursor'() {
    const total = 10000;
    let next = 0;
    const worker = async () => {
      while (next < total) {
        const n = next++;
        await rpc('sessions.create', { key: `agent:main:bulk-${String(n).padStart(5, '0')}`, label: `bulk ${n}` });
      }
    };
    await Promise.all(Array.from({ length: 24 }, worker));
    await page.reload();
    await page.locator('#list-end').filter({ hasText: 'scroll for more' }).waitFor(WAIT);
    await page.waitForFunction(() => document.querySelectorAll('#session-list li.session').length >= 100, null, WAIT);
    const first = await rows();
    check(first >= 100 && first < 150, `one page at first (${first} rows)`);
    for (let pages = 1; pages <= 5; pages++) {
      await page.locator('#list-end').scrollIntoViewIfNeeded();
      await page.waitForFunction((n) => document.querySelectorAll('#session-list li.session').length >= n, 100 + pages * 100, WAIT);
    }
    check(await page.evaluate(() => 1 + 1) === 2, 'the page answers while paging');
    await page.fill('#search', 'bulk 9999');
    await page.waitForFunction(() => document.querySelectorAll('#session-list li.session').length === 1, null, WAIT);
    check((await row('agent:main:bulk-09999').locator('.title').textContent()) === 'bulk 9999', 'search finds a session far down the list');
    await page.fill('#search', '');
    await page.waitForFunction(() => document.querySelectorAll('#session-list li.session').length >= 100, null, WAIT);
  },

  async 'the page reconnects after a gateway restart'() {
    await openSession('agent:main:main');
    const port = new URL(gateway.base).port;
    await stopGateway('SIGKILL');
    await page.locator('#conn[data-state="reconnecting"]').waitFor(WAIT);
    await startGateway(port);
    await page.locator('#conn[data-state="connected"]').waitFor(WAIT);
    await row('agent:main:bulk-09999').waitFor(WAIT);
    await send('@reply back again');
    await waitText('.list .msg.assistant .text', 'back again');
  },
};

async function main() {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--no-first-run'],
  });
  page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('dialog', (d) => {
    problems.push(`a dialog opened: ${d.message()}`);
    d.dismiss();
  });
  page.on('console', (m) => {
    if (m.type() === 'error' && /Content.Security.Policy/i.test(m.text())) problems.push(`CSP: ${m.text()}`);
  });
  await startGateway();
  let failed = false;
  for (const [name, run] of Object.entries(scenarios)) {
    try {
      await run();
      check(problems.length === 0, problems.join('; '));
      console.log(`ok ${name}`);
      if (SCREENSHOT && name.startsWith('a sessions_send')) await page.screenshot({ path: SCREENSHOT });
    } catch (e) {
      console.log(`FAIL ${name}: ${e.message}`);
      writeFileSync(`${HOME}/failure.png`, await page.screenshot());
      failed = true;
      break;
    }
  }
  await browser.close();
  await stopGateway('SIGTERM');
  process.exit(failed ? 1 : 0);
}

main().catch((e) => {
  console.log(`FAIL setup: ${e.stack || e.message}`);
  if (gateway) gateway.child.kill('SIGKILL');
  process.exit(1);
});
