// Opens the reference's Control UI (its built assets, served from loopback) against a switchboard
// gateway in headless Chromium, switches to that gateway, then visits the pages around the chat:
// Usage, Automations, Sessions, Channels, Devices and nodes, Logs. On each it waits for the page
// to settle and fails when a method the page called was answered with an error, when the page
// shows an error callout or banner, or when it shows `expect` text that is not there. Run by
// bench/compat.sh with the bench kit's Node and the reference's playwright-core:
//   node control_ui_pages.mjs <ui url with ?gatewayUrl=…#token=…> <png prefix>
// Prints, per page, the methods it called, those answered with an error and the page's text.
import { launch, watchFrames } from './control_ui_lib.mjs';

const [uiUrl, shots] = process.argv.slice(2);
const browser = await launch();

// The pages, their paths in the UI's router, and what each must show from our gateway.
const PAGES = [
  { name: 'usage', path: '/usage', expect: /tokens/i },
  { name: 'automations', path: '/automations', expect: /nightly/ },
  { name: 'sessions', path: '/sessions', expect: /agent:main:main|main/ },
  { name: 'channels', path: '/settings/channels', expect: /WhatsApp/i },
  // No device paired (`device.pair.list`), and the allowlist file's section (`exec.approvals.get`).
  { name: 'devices', path: '/settings/devices', expect: /0 of 0 connected.*EXEC APPROVALS/i },
  { name: 'logs', path: '/logs', expect: /run ended|gateway ready/ },
];
// What an error looks like on these pages: the UI's danger callouts and its banners' words.
const ERROR_TEXT = /invalid inventory page|unknown method|missing field|is not a function|Cannot read properties/i;

let page;
let bad = 0;

try {
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  const watch = watchFrames(page);
  await page.goto(uiUrl);
  await page.getByRole('button', { name: /Switch to/ }).click({ timeout: 30000 });
  await page.getByPlaceholder(/Message/).waitFor({ timeout: 30000 });
  await page.waitForTimeout(2000);
  for (const { name, path, expect } of PAGES) {
    watch.reset();
    // The UI routes in the page (a static server has no such paths).
    await page.evaluate((to) => {
      history.pushState({}, '', to);
      dispatchEvent(new PopStateEvent('popstate'));
    }, path);
    await page.waitForTimeout(4000);
    const text = (await page.innerText('body')).replace(/\s+/g, ' ');
    // Only what shows: the page keeps a hidden "did not start" alert for a failed boot.
    const dangers = await page.$$eval('.callout.danger, [role="alert"]', (els) =>
      els.filter((e) => e.checkVisibility()).map((e) => e.innerText.trim()).filter(Boolean));
    await page.screenshot({ path: `${shots}-${name}.png` });
    const problems = [];
    if (Object.keys(watch.failed).length > 0) problems.push(`answered with an error: ${JSON.stringify(watch.failed)}`);
    if (dangers.length > 0) problems.push(`error callouts: ${JSON.stringify(dangers)}`);
    if (ERROR_TEXT.test(text)) problems.push(`error text: ${text.match(ERROR_TEXT)[0]}`);
    if (!expect.test(text)) problems.push(`does not show ${expect}`);
    const looping = Object.entries(watch.calls).filter(([, n]) => n > 10);
    if (looping.length > 0) problems.push(`called in a loop: ${JSON.stringify(looping)}`);
    console.log(`${problems.length ? 'FAIL' : 'ok  '} ${name} ${path} calls ${JSON.stringify(watch.calls)}`);
    for (const p of problems) console.log(`     ${p}`);
    console.log(`     page: ${text.slice(0, 600)}`);
    bad += problems.length ? 1 : 0;
  }
  if (bad > 0) process.exitCode = 1;
  else console.log('every page answered');
} catch (e) {
  console.log('failed:', e.message.split('\n')[0]);
  if (page) await page.screenshot({ path: `${shots}-error.png` }).catch(() => {});
  process.exitCode = 1;
} finally {
  await browser.close();
}
