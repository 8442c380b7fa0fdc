// Opens the reference's Control UI (its built assets, served from loopback) against a switchboard
// gateway in headless Chromium, switches to that gateway and sends two turns from the composer:
// an instant reply (`@reply <text>`) and one that takes 1.5 s (`@delay 1500`, `@reply
// <text>-slow`). Each must reach the UI's done state: the reply shown, "Done in …" under it, and
// neither "Sending message..." nor "Working…" left. Run by bench/compat.sh with the bench kit's
// Node and the reference's playwright-core:
//   node control_ui.mjs <ui url with ?gatewayUrl=…#token=…> <reply text> <png>
// Prints the methods the page called, those answered with an error, and the page's text; exits 1
// when a step fails, a method was answered with an error, or one was called in a loop.
import { launch, watchFrames } from './control_ui_lib.mjs';

const [uiUrl, text, shot] = process.argv.slice(2);
const browser = await launch();
let page;
let watch = { calls: {}, failed: {} };

// Waits until the page shows `reply` as the latest turn, done; throws with what it shows.
async function done(reply, timeoutMs) {
  const until = Date.now() + timeoutMs;
  let body = '';
  while (Date.now() < until) {
    body = (await page.innerText('body')).replace(/\s+/g, ' ');
    const at = body.lastIndexOf(reply);
    const recap = body.lastIndexOf('Done in');
    const busy = body.includes('Sending message') || body.includes('Working…');
    if (at >= 0 && recap > at && !busy) return;
    await page.waitForTimeout(250);
  }
  throw new Error(`"${reply}" did not reach the done state; the page shows: ${body.slice(-400)}`);
}

// While a reply of `words` streams (one a piece), waits until the page shows the first five of
// them as the reply, with the last one not yet there: the page rebuilt the text so far, not
// only the last piece (our events carry the new piece; the whole rides along at most every
// 75 ms). The user's own message shows each word once, so the reply is each word's second copy.
async function streamed(words, timeoutMs) {
  const until = Date.now() + timeoutMs;
  const count = (body, w) => body.split(w + ' ').length - 1 + (body.endsWith(w) ? 1 : 0);
  while (Date.now() < until) {
    const body = (await page.innerText('body')).replace(/\s+/g, ' ') + ' ';
    const shown = words.filter((w) => count(body, w) >= 2).length;
    if (shown >= 5 && shown < words.length) {
      const first = words.slice(0, 5).every((w) => count(body, w) >= 2);
      if (!first) throw new Error(`the streamed reply lost its start: ${body.slice(-300)}`);
      return shown;
    }
    if (shown === words.length) throw new Error('the reply was never shown while it streamed');
    await page.waitForTimeout(40);
  }
  throw new Error('no part of the reply was shown while it streamed');
}

async function send(message) {
  const box = page.getByPlaceholder(/Message/);
  await box.fill(message);
  await box.press('Enter');
}

try {
  page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  watch = watchFrames(page);
  await page.goto(uiUrl);
  // The page asks before it follows a link to another gateway.
  await page.getByRole('button', { name: /Switch to/ }).click({ timeout: 30000 });
  await page.getByPlaceholder(/Message/).waitFor({ timeout: 30000 });
  await page.waitForTimeout(3000);
  await send(`@reply ${text}`);
  await done(text, 20000);
  console.log(`done: instant reply "${text}"`);
  await send(`@delay 1500\n@reply ${text}-slow`);
  await done(`${text}-slow`, 20000);
  console.log(`done: 1.5 s reply "${text}-slow"`);
  const words = Array.from({ length: 16 }, (_, i) => `${text}-w${i}`);
  await send(`@slow 150\n@reply ${words.join(' ')}`);
  console.log(`streaming: the page showed ${await streamed(words, 20000)} words of the reply while it was written`);
  await done(words.at(-1), 20000);
  // The transcript scrolls in a pane of its own: show its end, where the done state is.
  await page.evaluate(() => {
    for (const el of document.querySelectorAll('*')) {
      if (el.scrollHeight > el.clientHeight + 10) el.scrollTop = el.scrollHeight;
    }
  });
  await page.waitForTimeout(500);
  await page.screenshot({ path: shot });
  console.log('calls', JSON.stringify(watch.calls));
  console.log('page', (await page.innerText('body')).replace(/\s+/g, ' ').slice(0, 2000));
  // A method the page keeps calling means it did not like our answer (it retries in a loop).
  const looping = Object.entries(watch.calls).filter(([, n]) => n > 10);
  if (looping.length > 0) throw new Error(`called in a loop: ${JSON.stringify(looping)}`);
  if (Object.keys(watch.failed).length > 0) throw new Error(`answered with an error: ${JSON.stringify(watch.failed)}`);
} catch (e) {
  console.log('calls', JSON.stringify(watch.calls));
  console.log('errors', JSON.stringify(watch.failed));
  console.log('failed:', e.message.split('\n')[0]);
  if (page) await page.screenshot({ path: shot }).catch(() => {});
  process.exitCode = 1;
} finally {
  await browser.close();
}
