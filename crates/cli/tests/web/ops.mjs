// The page's operator screens (Usage, Cron, Channels, Logs) against real data, and what a
// message looks like in dark mode and on a phone (code blocks, headings, a long label), each
// screen checked with axe-core. Scenarios of page.mjs, which hands in its helpers as `t`.
import { createHmac } from 'node:crypto';

/** A stranger's WhatsApp message to the gateway's webhook, signed with the app secret. */
async function whatsappStranger(t, from, text) {
  const body = JSON.stringify({ object: 'whatsapp_business_account', entry: [{ id: '1', changes: [{
    field: 'messages', value: { messaging_product: 'whatsapp',
      metadata: { display_phone_number: '15550009999', phone_number_id: '1065000' },
      contacts: [{ profile: { name: 'Stranger' }, wa_id: from }],
      messages: [{ from, id: `wamid.${Math.random()}`, timestamp: String(Math.floor(Date.now() / 1000)),
        type: 'text', text: { body: text } }] } }] }] });
  const signature = 'sha256=' + createHmac('sha256', t.WA_SECRET).update(body).digest('hex');
  const res = await fetch(t.gateway.base + 'channels/whatsapp', {
    method: 'POST', body, headers: { 'content-type': 'application/json', 'x-hub-signature-256': signature },
  });
  t.check(res.ok, `the webhook took the message (${res.status})`);
}

/** Shows `tab`'s screen and checks it with axe-core in light and dark. */
async function screen(t, tab, ready, name) {
  const { page } = t;
  await page.click(`#show-${tab}`);
  await ready();
  await t.accessible(page, `the ${name} screen (light)`);
  await page.emulateMedia({ colorScheme: 'dark' });
  await t.accessible(page, `the ${name} screen (dark)`);
  await t.shot(page, `ops-${tab}`);
  await page.emulateMedia({ colorScheme: 'light' });
}

export function opsScenarios(t) {
  return {
    async 'the usage screen shows the turns by day, agent and model'() {
      const { page } = t;
      // The Agents screen shows each agent's resolved settings.
      await page.click('#show-agents');
      const main = await t.waitText('#agent-rows tr', 'thinking');
      t.check(main.includes('sandbox off') && main.includes('tools full'), `main's settings: ${main}`);
      await t.turn('agent:main:main', '@reply counted on the usage screen');
      await t.turn('agent:writer:main', 'a priced call');
      await screen(t, 'usage', () => page.locator('#usage-models tr').filter({ hasText: 'mock/writer' }).waitFor(t.WAIT), 'usage');
      const totals = await page.locator('#usage-totals').textContent();
      t.check(/Tokens\s*[1-9]/.test(totals) && totals.includes('$'), `the totals show tokens and cost: ${totals}`);
      const today = await page.locator('#usage-days tr').first().textContent();
      t.check(/\d{4}-\d{2}-\d{2}/.test(today), `a row a day: ${today}`);
      const width = await page.locator('#usage-days .day-bar').first().evaluate((b) => b.getBoundingClientRect().width);
      t.check(width > 2, `the day's bar has a length (${width} px)`);
      await page.locator('#usage-agents tr').filter({ hasText: 'writer' }).waitFor(t.WAIT);
      // A session's link opens it on the Sessions screen.
      await page.locator('#usage-sessions a.session-link').first().click();
      await page.locator('#messages').waitFor({ state: 'visible', ...t.WAIT });
      t.check(await page.locator('#usage').isHidden(), 'the Usage screen gave way to the session');
    },

    async 'a cron job is added, run, disabled and edited on the cron screen'() {
      const { page } = t;
      const job = () => page.locator('#cron-jobs tr[data-id="page-job"]');
      await screen(t, 'cron', () => page.locator('#cron-form').waitFor(t.WAIT), 'cron');
      await page.fill('#cron-form [name=id]', 'page-job');
      await page.fill('#cron-form [name=schedule]', 'every 1h');
      await page.fill('#cron-form [name=message]', '@reply from the cron screen');
      await page.click('#cron-form [type=submit]');
      await job().waitFor(t.WAIT);
      await job().getByRole('button', { name: 'Run now' }).click();
      await t.waitText('#cron-status', 'Run page-job.');
      // The run ends on its own; the screen shows it when read again.
      for (let i = 0; i < 40; i++) {
        await page.click('#show-cron');
        if (await page.locator('#cron-runs tr').filter({ hasText: 'from the cron screen' }).count()) break;
        await page.waitForTimeout(250);
      }
      const run = await t.waitText('#cron-runs tr', 'from the cron screen');
      t.check(run.includes('ok') && run.includes('page-job'), `the run is listed as ok: ${run}`);
      await job().getByRole('button', { name: 'Disable' }).click();
      await job().filter({ hasText: 'disabled' }).waitFor(t.WAIT);
      await job().getByRole('button', { name: 'Edit' }).click();
      await page.fill('#cron-form [name=schedule]', 'every 2h');
      await page.click('#cron-form [type=submit]');
      await job().filter({ hasText: 'every 2h' }).waitFor(t.WAIT);
      const stored = (await t.rpc('cron.get', { id: 'page-job' }));
      t.check(stored.everyMs === 7200000 && stored.enabled === false, `the job was changed: ${JSON.stringify(stored)}`);
      await t.accessible(page, 'the cron screen with a job');
      await t.shot(page, 'ops-cron');
    },

    async 'a stranger waiting for pairing is approved on the channels screen'() {
      const { page } = t;
      await whatsappStranger(t, '15550002222', 'hello, may I talk to the agent?');
      await screen(t, 'channels', () => page.locator('#pairing-requests tr').filter({ hasText: '15550002222' }).waitFor(t.WAIT), 'channels');
      const account = await page.locator('#channel-accounts').textContent();
      t.check(account.includes('WhatsApp'), `the WhatsApp account is listed: ${account}`);
      await page.locator('#pairing-requests tr').filter({ hasText: '15550002222' }).getByRole('button', { name: 'Approve' }).click();
      await t.waitText('#channels-status', 'Approved');
      const left = await t.rpc('pairing.list', { channel: 'whatsapp' });
      t.check(left.requests.length === 0, `nothing waits any more: ${JSON.stringify(left)}`);
      await page.locator('#pairing-requests').filter({ hasText: 'Nobody waits' }).waitFor(t.WAIT);
    },

    async 'the log screen follows the log and filters by level'() {
      const { page } = t;
      await screen(t, 'logs', () => page.locator('#log-lines li').filter({ hasText: 'run ended' }).first().waitFor(t.WAIT), 'logs');
      // A new run's end arrives while the screen is shown.
      const ended = () => page.locator('#log-lines li').filter({ hasText: 'run ended' }).count();
      const before = await ended();
      await t.turn('agent:main:main', '@reply one more for the log');
      await page.waitForFunction((n) => [...document.querySelectorAll('#log-lines li')]
        .filter((li) => li.textContent.includes('run ended')).length > n, before, t.WAIT);
      await page.selectOption('#log-level', 'warn');
      const infos = await page.locator('#log-lines li.info').count();
      t.check(infos === 0, `warnings and errors only: ${infos} info lines shown`);
      await page.selectOption('#log-level', 'info');
      await page.click('#show-sessions');
    },

    async 'code, headings, a long label and the operator screens read well in dark mode and on a phone'() {
      const { page } = t;
      const key = 'agent:main:looks';
      const text = '# Top heading\n\n## Second heading\n\nSome `inline code` here.\n\n```rust\nfn main() { println!("hi"); }\n```';
      await t.rpc('chat.inject', { sessionKey: key, message: text });
      await t.rpc('sessions.patch', { key, label: 'A label of thirty-seven characters!!' });
      await t.openSession(key);
      await page.locator('.list .msg .md h4').waitFor(t.WAIT);
      const sizes = await page.evaluate(() => ['h3', 'h4'].map((h) => parseFloat(getComputedStyle(document.querySelector(`.list .msg .md ${h}`)).fontSize)));
      t.check(sizes[0] > sizes[1], `# is larger than ## (${sizes})`);
      await page.emulateMedia({ colorScheme: 'dark' });
      await t.accessible(page, 'code and headings (dark)');
      await t.shot(page, 'desktop-dark-code');
      await page.emulateMedia({ colorScheme: 'light' });
      const context = await page.context().browser().newContext({ viewport: t.PHONE, hasTouch: true, isMobile: true });
      const phone = await context.newPage();
      await phone.goto(t.gateway.url + `&s=${encodeURIComponent(key)}`);
      await phone.locator('.list .msg .md h4').waitFor(t.WAIT);
      for (const scheme of ['light', 'dark']) {
        await phone.emulateMedia({ colorScheme: scheme });
        const abort = await phone.locator('#abort').boundingBox();
        t.check(abort && abort.x + abort.width <= t.PHONE.width, `Abort is on the screen (${JSON.stringify(abort)}) (${scheme})`);
        const wide = await phone.evaluate(() => document.documentElement.scrollWidth);
        t.check(wide <= t.PHONE.width, `the page is no wider than the phone (${wide} px) (${scheme})`);
        await t.accessible(phone, `a long label and code on a phone (${scheme})`);
        await t.shot(phone, `phone-code-${scheme}`);
      }
      // The operator screens on the phone, in both schemes: on the screen, and accessible.
      for (const tab of ['usage', 'cron', 'channels', 'logs']) {
        await phone.click(`#show-${tab}`);
        await phone.locator(`#${tab} h2`).waitFor(t.WAIT);
        for (const scheme of ['light', 'dark']) {
          await phone.emulateMedia({ colorScheme: scheme });
          const wide = await phone.evaluate(() => document.documentElement.scrollWidth);
          t.check(wide <= t.PHONE.width, `the ${tab} screen is no wider than the phone (${wide} px, ${scheme})`);
          await t.accessible(phone, `the ${tab} screen on a phone (${scheme})`);
        }
      }
      await context.close();
    },
  };
}
