// The web page's weight and its time to a usable list, in headless Chromium. Each run opens the
// page in a new browser context (no cache) and waits for the first row of the session list.
//   node web_page.mjs <page url with #token=…> <row selector> <runs>
// PLAYWRIGHT_CORE: the playwright-core folder; CHROMIUM: the browser (default /usr/bin/chromium);
// PAGE_END: a selector of the list's end, to also time the next five pages as it scrolls.
// Prints one JSON line: per-run times to the first row in the DOM and to the load event (ms
// since the navigation started, the page's own clock), the bytes and requests of a cold load, and the
// rows shown.
import { createRequire } from 'node:module';

const [url, selector, runs = '5'] = process.argv.slice(2);
const { chromium } = createRequire(import.meta.url)(process.env.PLAYWRIGHT_CORE);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
});
const listed = [];
const loaded = [];
const htmlAt = [];
const rpcMs = [];
const pages = [];
let bytes = 0;
let requests = 0;
let rows = 0;
for (let run = 0; run < Number(runs); run++) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  // The moment the first row enters the DOM, on the page's own clock.
  await page.addInitScript((sel) => {
    new MutationObserver((_, observer) => {
      if (document.querySelector(sel)) {
        window.__listedAt = performance.now();
        observer.disconnect();
      }
    }).observe(document, { childList: true, subtree: true });
  }, selector);
  const sizes = [];
  // A body that never arrives (the reference's 404 avatar) counts 0 after 2 s.
  const late = () => new Promise((resolve) => setTimeout(() => resolve(0), 2000));
  page.on('response', (r) => sizes.push(Promise.race([r.body().then((b) => b.length, () => 0), late()])));
  await page.goto(url, { waitUntil: 'commit' });
  await page.waitForSelector(selector, { timeout: 60000 });
  listed.push(await page.evaluate(() => window.__listedAt));
  await page.waitForLoadState('load');
  const timing = await page.evaluate(() => {
    const nav = performance.getEntriesByType('navigation')[0];
    const rpc = performance.getEntriesByType('resource').find((r) => r.name.endsWith('/rpc'));
    return { html: nav.responseEnd, load: nav.loadEventEnd, rpc: rpc ? rpc.duration : null };
  });
  loaded.push(timing.load);
  htmlAt.push(timing.html);
  rpcMs.push(timing.rpc);
  rows = await page.locator(selector).count();
  if (run === Number(runs) - 1 && process.env.PAGE_END) {
    // Paging: scroll the list's end into view, time until the next page's rows are in the DOM.
    for (let n = 0; n < 5; n++) {
      pages.push(await page.evaluate(([sel, end]) => new Promise((resolve) => {
        const before = document.querySelectorAll(sel).length;
        const t0 = performance.now();
        new MutationObserver((_, observer) => {
          if (document.querySelectorAll(sel).length > before) {
            observer.disconnect();
            resolve(performance.now() - t0);
          }
        }).observe(document.body, { childList: true, subtree: true });
        document.querySelector(end).scrollIntoView();
      }), [selector, process.env.PAGE_END]));
    }
  }
  const all = await Promise.all(sizes);
  bytes = all.reduce((a, b) => a + b, 0);
  requests = all.length;
  await context.close();
}
await browser.close();
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round = (xs) => xs.map((x) => Math.round(x * 10) / 10);
console.log(JSON.stringify({
  url: url.split('#')[0], selector, runs: Number(runs),
  listedMs: round(listed), listedMedianMs: Math.round(median(listed) * 10) / 10,
  loadMs: round(loaded), htmlMs: round(htmlAt), firstPageRpcMs: round(rpcMs), nextPageMs: round(pages), bytes, requests, rows,
}));
