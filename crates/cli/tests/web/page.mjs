// The web page in real headless Chromium (Playwright's playwright-core), against a real
// `switchboard gateway` process this script starts and restarts itself. Run by
// crates/cli/tests/suite/web.rs, which installs playwright-core, writes the config and serves
// the mock model; each scenario prints `ok <name>`, the first failure exits 1 with a
// screenshot next to the state dir.
//
// Every screen it visits is checked with axe-core (no serious or critical finding), and the
// pictures of docs/web.md are taken here: desktop and phone, light and dark.
//
// Environment: SWITCHBOARD_BIN, STATE_DIR, CHROMIUM, and SHOTS (the folder for the pictures).
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { readFileSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { createRequire } from 'node:module';
import { chromium } from 'playwright-core';
import { opsScenarios } from './ops.mjs';

const { SWITCHBOARD_BIN: BIN, STATE_DIR: HOME, CHROMIUM, SHOTS } = process.env;
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const PHONE = { width: 390, height: 844 };
/** The WhatsApp app secret of the test's config (web.rs): a stranger's message is signed with it. */
const WA_SECRET = 'page-app-secret';
const WAIT = { timeout: 20000 };
const problems = [];
let gateway = null;
let page = null;

/** Starts the gateway (on `port`, 0 = any); answers its page's address and the link with the token. */
async function startGateway(port = 0) {
  const child = spawn(BIN, ['--state-dir', HOME, 'gateway', '--port', String(port)], {
    // Warnings, and each run's end (the Logs screen shows them).
    env: { ...process.env, SWITCHBOARD_LOG: 'warn,switchboard_core::runtime::end=info' },
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

/** axe-core on what `p` shows now: no serious or critical finding. The script goes in through
 * the driver (the page's policy allows no script of ours, and stays as it is). */
async function accessible(p, screen) {
  await p.evaluate(AXE);
  const found = await p.evaluate(async () => {
    const result = await globalThis.axe.run(document, { resultTypes: ['violations'] });
    return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`);
  });
  check(found.length === 0, `accessibility findings on ${screen}: ${found.join('; ')}`);
}

/** A picture for docs/web.md, named e.g. `desktop-dark.png`. */
async function shot(p, name) {
  mkdirSync(SHOTS, { recursive: true });
  await p.screenshot({ path: join(SHOTS, `${name}.png`) });
}

/** Sends `text` to `key` through the gateway and waits for the run to end. */
async function turn(key, text) {
  const { runId } = await rpc('chat.send', { sessionKey: key, message: text, idempotencyKey: `${key}-${Math.random()}` });
  await rpc('agent.wait', { runId, timeoutMs: 20000 });
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
    const files = [];
    const seen = (r) => r.url().includes('/ui/') && files.push([r.url(), r.headers()['content-encoding']]);
    page.on('response', seen);
    await page.goto(gateway.url);
    await row('agent:main:demo').waitFor(WAIT);
    page.off('response', seen);
    check(files.length >= 10 && files.every(([, enc]) => enc === 'br' || enc === 'gzip'), `the files come compressed: ${JSON.stringify(files)}`);
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
    await page.locator('#session-title').filter({ hasText: 'agent:writer:main' }).waitFor(WAIT);
    await page.locator('#session-facts .context').waitFor(WAIT);
    const context = await page.locator('#session-facts .context').textContent();
    check(/^[\d,]+ \/ 32,000 tokens/.test(context), `the header shows the context used of the window: ${context}`);
    const cost = await page.locator('#session-facts .cost').textContent();
    check(/^\$\d/.test(cost), `the header shows the cost so far: ${cost}`);
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
    await page.locator('.list .run-end').filter({ hasText: 'Run aborted' }).waitFor(WAIT);
    await row('agent:main:demo').locator('.badge.state.idle').waitFor(WAIT);
    await page.locator('#run-timeline .step.aborted').waitFor(WAIT);
    const said = await page.evaluate(() => document.getElementById('messages').textContent.match(/abort/gi) || []);
    check(said.length === 1, `the abort is said once in the transcript, not ${said.length} times`);
    const status = await page.textContent('#composer-status');
    check(!/[0-9a-f]{8}-[0-9a-f]{4}/.test(status), `the status line names no run id: ${status}`);
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
    const exchange = page.locator('.list details.exchange').first();
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

  async 'chips have labels and name kinds and channels as sessions_list does'() {
    await openSession('agent:main:demo');
    // The header shows the key at once and the session's chips once its row is read.
    await page.locator('#session-meta').filter({ hasText: 'channel webchat' }).waitFor(WAIT).catch(() => {});
    const chips = await row('agent:main:demo').locator('.badges .badge').evaluateAll((all) => all.map((b) => b.textContent));
    for (const [label, value] of [['kind', 'other'], ['channel', 'webchat'], ['agent', 'main'], ['state', 'idle']]) {
      check(chips.includes(`${label} ${value}`), `the row has the chip "${label} ${value}": ${JSON.stringify(chips)}`);
    }
    const header = await page.locator('#session-meta').textContent();
    check(header.includes('channel webchat'), `the header shows the channel as webchat: ${header}`);
    const child = row('agent:main:main').locator('ul.children li.session').filter({ hasText: 'kid' }).first();
    const kind = await child.locator('.badge.kind').first().textContent();
    const channel = await child.locator('.badge.channel').first().textContent();
    check(kind === 'kind other' && channel === 'channel internal', `a sub-agent's chips: ${kind}, ${channel}`);
    check(await child.locator('.badge.subagent').count() === 1, 'a sub-agent has its sub-agent chip');
    // The tool's own rows, read by the page's client: every chip says what sessions_list says.
    const listed = (await rpc('sessions.list', { limit: 200 })).sessions;
    check(listed.length > 3, `sessions.list answered rows: ${listed.length}`);
    for (const r of listed) {
      const shown = await row(r.key).locator('.badges .badge').evaluateAll((all) => all.map((b) => b.textContent));
      for (const [label, value] of [['kind', r.kind], ['channel', r.channel]]) {
        check(shown.includes(`${label} ${value}`), `${r.key}: the page says "${label} ${value}" as sessions.list does: ${JSON.stringify(shown)}`);
      }
    }
  },

  async 'markdown and tool calls render as elements'() {
    const text = [
      'A **bold** word and `code`.', '', '```rust', 'fn main() {}', '```', '',
      '[do not click](javascript:alert(3)) and [a page](https://example.org/docs)', '',
      '| tool | calls |', '|---|---|', '| sessions_send | 2 |', '', '- one', '- two', '',
      '![a picture](http://127.0.0.2:9/picture.png)',
    ].join('\n');
    const fetched = [];
    const watch = (r) => r.url().includes('picture.png') && fetched.push(r.url());
    page.on('request', watch);
    await rpc('chat.inject', { sessionKey: 'agent:main:md', message: text });
    await openSession('agent:main:md');
    const md = page.locator('.list .msg.assistant .md').first();
    await md.waitFor(WAIT);
    check((await md.locator('strong').textContent()) === 'bold', 'a bold word is a <strong>');
    check((await md.locator('pre').textContent()).includes('fn main() {}'), 'a fenced block is a <pre>');
    check(await md.locator('a[href^="javascript"]').count() === 0, 'a javascript: link is not a link');
    check((await md.locator('.unsafe-link').textContent()).includes('do not click'), 'its text stays');
    const safe = md.locator('a[href="https://example.org/docs"]');
    check((await safe.getAttribute('rel')) === 'noopener noreferrer', 'an http(s) link is a link, noopener noreferrer');
    check(await md.locator('table td').filter({ hasText: 'sessions_send' }).count() === 1, 'a table is a <table>');
    check(await md.locator('ul li').count() === 2, 'a list is a <ul>');
    check(await md.locator('img').count() === 0 && fetched.length === 0, 'an image is not fetched');
    check(await md.locator('.code button.copy').count() === 1, 'a code block has a copy button');
    page.off('request', watch);

    await send('@tool sessions_list {"limit": 1}');
    const call = page.locator('.list .tool.call').filter({ hasText: 'sessions_list' }).first();
    await call.waitFor(WAIT);
    await page.locator('.list .tool.result').filter({ hasText: 'sessions_list' }).first().waitFor(WAIT);
    await page.locator('.list .tool.call .badge.done').first().waitFor(WAIT);
    const args = await call.locator('pre').textContent();
    check(args === '{\n  "limit": 1\n}', `the arguments are indented JSON: ${JSON.stringify(args)}`);
    const result = page.locator('.list .tool.result').first();
    check(await result.locator('.badge.ok').count() === 1, 'the result says it is ok');
    check((await result.locator('pre').textContent()).includes('\n  "'), 'the result is indented JSON');
    check(/\d+ (ms|s)/.test(await result.locator('.took').textContent()), 'the result says how long the call took');
  },

  async 'the header names the model that answered after a fallback'() {
    await openSession('agent:fallback:main');
    await send('@reply saved by the fallback');
    await waitText('.list .msg.assistant .text', 'saved by the fallback');
    await page.locator('#session-facts .answered').filter({ hasText: 'builtin/scripted' }).waitFor(WAIT);
    const configured = await page.locator('#session-facts .configured').textContent();
    check(configured === 'dead/gone', `the header names the agent's model: ${configured}`);
  },

  async 'a compaction divider appears after sessions.compact'() {
    for (const n of [1, 2, 3]) await turn('agent:main:compacted', `@reply answer ${n}`);
    const compacted = await rpc('sessions.compact', { key: 'agent:main:compacted' });
    check(compacted.compacted, `the session was compacted: ${JSON.stringify(compacted)}`);
    await openSession('agent:main:compacted');
    const divider = page.locator('.list .compaction .divider');
    await divider.waitFor(WAIT);
    check((await divider.textContent()).includes('Context compacted'), 'the divider says so');
    check(await page.locator('.list .compaction').count() === 1, 'one divider for one summary');
    await waitText('.list .msg.assistant .text', 'answer 3');
    const facts = await page.locator('#session-facts').textContent();
    check(facts.includes('Model') && facts.includes('Context') && facts.includes('Cost'), `the header shows model, context and cost: ${facts}`);
    check(await page.locator('#run-timeline .step').count() >= 2, 'the header shows the last run');
  },

  async 'the keyboard moves through the list'() {
    await page.evaluate(() => { history.pushState(null, '', location.pathname); dispatchEvent(new HashChangeEvent('hashchange')); });
    await page.locator('#transcript-empty').waitFor({ state: 'visible', ...WAIT });
    await page.locator('body').click({ position: { x: 5, y: 5 } });
    await page.keyboard.press('/');
    check(await page.evaluate(() => document.activeElement.id) === 'search', '/ focuses the search');
    await page.keyboard.press('ArrowDown');
    const first = await page.evaluate(() => document.activeElement.closest('li.session')?.dataset.key);
    await page.keyboard.press('ArrowDown');
    const second = await page.evaluate(() => document.activeElement.closest('li.session')?.dataset.key);
    check(first && second && first !== second, `arrows move through the rows (${first}, ${second})`);
    const outline = await page.evaluate(() => getComputedStyle(document.activeElement).outlineStyle);
    check(outline !== 'none', 'the focus is visible');
    await page.keyboard.press('Enter');
    await page.waitForFunction((k) => new URLSearchParams(location.hash.slice(1)).get('s') === k, second, WAIT);
    await page.locator('#transcript-view').waitFor({ state: 'visible', ...WAIT });
    await page.fill('#message', 'a draft');
    await page.keyboard.press('Escape');
    check(await page.locator('#transcript-view').isVisible(), 'Esc in the composer only leaves it');
    check((await page.inputValue('#message')) === 'a draft', 'the draft is kept');
    await page.keyboard.press('Escape');
    await page.locator('#transcript-empty').waitFor({ state: 'visible', ...WAIT });
    check(!(await page.evaluate(() => location.hash.includes('s='))), 'Esc goes back to the list');
  },

  async 'dark mode applies and every desktop screen is accessible'() {
    const background = () => page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
    const dark = (rgb) => rgb.match(/\d+/g).slice(0, 3).reduce((a, b) => a + Number(b), 0) < 150;
    await accessible(page, 'the list (light)');
    await openSession('agent:main:main');
    await page.locator('.list details.exchange').first().waitFor(WAIT);
    await accessible(page, 'a transcript (light)');
    await shot(page, 'desktop-light');
    await openSession('agent:main:md');
    await page.locator('.list .md table').first().waitFor(WAIT);
    await accessible(page, 'markdown and tool cards (light)');
    await page.locator('.list .md').first().evaluate((n) => n.closest('article').scrollIntoView({ block: 'start' }));
    await shot(page, 'desktop-markdown');
    await openSession('agent:main:main');
    await page.locator('.list details.exchange').first().waitFor(WAIT);
    await page.emulateMedia({ colorScheme: 'dark' });
    check(dark(await background()), `the page is dark under prefers-color-scheme: dark (${await background()})`);
    await accessible(page, 'a transcript (dark)');
    await shot(page, 'desktop-dark');
    await page.click('#show-agents');
    await accessible(page, 'the agents (dark)');
    await page.click('#show-sessions');
    await page.emulateMedia({ colorScheme: 'light' });
    check(!dark(await background()), `the page is light again (${await background()})`);
    const context = await page.context().browser().newContext();
    const login = await context.newPage();
    await login.goto(gateway.base);
    await login.locator('#login-why').filter({ hasText: 'needs the gateway token' }).waitFor(WAIT);
    await accessible(login, 'the token form');
    await context.close();
  },

  async 'on a phone the list and the transcript are two views'() {
    const context = await page.context().browser().newContext({ viewport: PHONE, hasTouch: true, isMobile: true });
    const phone = await context.newPage();
    phone.on('pageerror', (e) => problems.push(`phone page error: ${e.message}`));
    await phone.goto(gateway.url);
    const mainRow = phone.locator('#session-list li.session[data-key="agent:main:main"] > a.row');
    await mainRow.waitFor(WAIT);
    check(await phone.locator('#transcript').isHidden(), 'with nothing open the list is the only view');
    await accessible(phone, 'the list on a phone');
    await shot(phone, 'phone-list');
    await mainRow.click();
    await phone.locator('#messages').waitFor({ state: 'visible', ...WAIT });
    await phone.locator('.list .msg').first().waitFor(WAIT);
    check(await phone.locator('#sessions').isHidden(), 'the open transcript is a view of its own');
    const box = await phone.locator('#messages').boundingBox();
    check(box.height >= 0.6 * PHONE.height, `the transcript takes ${box.height} px of ${PHONE.height}`);
    await phone.fill('#message', Array.from({ length: 40 }, (_, n) => `line ${n}`).join('\n'));
    const composer = await phone.locator('#composer').boundingBox();
    check(composer.height <= PHONE.height / 4, `a long message keeps the composer to ${composer.height} px`);
    await phone.fill('#message', '');
    const small = await phone.evaluate(() => [...document.querySelectorAll('button, select, input, textarea, summary, #session-list a.row')]
      .filter((n) => n.offsetParent !== null)
      .map((n) => ({ n: n.id || n.className || n.tagName, h: n.getBoundingClientRect().height }))
      .filter((t) => t.h < 44));
    check(small.length === 0, `touch targets under 44 px: ${JSON.stringify(small)}`);
    await accessible(phone, 'a transcript on a phone');
    await shot(phone, 'phone-light');
    await phone.emulateMedia({ colorScheme: 'dark' });
    await shot(phone, 'phone-dark');
    await phone.emulateMedia({ colorScheme: 'light' });
    await phone.reload();
    await phone.locator('#messages .msg').first().waitFor(WAIT);
    check(await phone.locator('#sessions').isHidden(), 'a reload keeps the open session');
    await phone.click('#back');
    await mainRow.waitFor({ state: 'visible', ...WAIT });
    check(await phone.locator('#transcript').isHidden(), 'back shows the list');
    await phone.goBack();
    await phone.locator('#messages').waitFor({ state: 'visible', ...WAIT });
    check(await phone.locator('#sessions').isHidden(), "the browser's back opens the session again");
    await context.close();
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

  async 'a held command is approved and denied on the Approvals screen'() {
    // The default agent may run commands (tools.profile "full"); outside a sandbox each waits.
    const run = (command) => rpc('tools.invoke', { sessionKey: 'main', tool: 'exec', args: { command } });
    const held = (command) => page.locator('#approval-rows tr').filter({ hasText: command });
    const approved = run('echo from the page');
    await page.locator('#approval-count').filter({ hasText: '1' }).waitFor(WAIT);
    await page.click('#show-approvals');
    await held('echo from the page').waitFor(WAIT);
    const row = await held('echo from the page').textContent();
    check(row.includes('main') && row.includes('agent:main:main'), `the row names the agent and session: ${row}`);
    await page.emulateMedia({ colorScheme: 'dark' });
    await accessible(page, 'the approvals (dark)');
    await page.emulateMedia({ colorScheme: 'light' });
    await accessible(page, 'the approvals (light)');
    await held('echo from the page').getByRole('button', { name: 'Approve', exact: true }).click();
    const ran = (await approved).result;
    check(ran.output === 'from the page\n', `the approved command ran: ${JSON.stringify(ran)}`);
    await held('echo from the page').waitFor({ state: 'detached', ...WAIT });
    await waitText('#approvals-status', 'approved: echo from the page');
    const denied = run('touch denied-on-the-page');
    await held('touch denied-on-the-page').waitFor(WAIT);
    await held('touch denied-on-the-page').getByRole('button', { name: 'Deny', exact: true }).click();
    const refused = (await denied).result;
    check(String(refused.error).startsWith('an operator denied'), `the denied command was refused: ${JSON.stringify(refused)}`);
    await page.locator('#approvals-empty').waitFor({ state: 'visible', ...WAIT });
    check(await page.locator('#approval-count').isHidden(), 'no count once nothing waits');
    await page.click('#show-sessions');
  },

  ...opsScenarios({
    get page() { return page; },
    get gateway() { return gateway; },
    rpc, check, accessible, shot, turn, waitText, openSession, WAIT, PHONE, WA_SECRET,
  }),

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
