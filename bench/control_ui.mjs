// Opens the reference's Control UI (its built assets, served from loopback) against a switchboard
// gateway in headless Chromium, switches to that gateway, sends one message from the composer
// and saves a screenshot. Run by bench/compat.sh with the bench kit's Node and the reference's
// playwright-core:  node control_ui.mjs <ui url with ?gatewayUrl=…#token=…> <message> <png>
// Prints the methods the page called and the page's text; exits 1 when a step fails.
const [uiUrl, message, shot] = process.argv.slice(2);
const { chromium } = await import(process.env.PLAYWRIGHT_CORE);
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
});
const calls = {};
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
  page.on('websocket', (ws) => ws.on('framesent', (f) => {
    try {
      const frame = JSON.parse(f.payload);
      if (frame.method) calls[frame.method] = (calls[frame.method] || 0) + 1;
    } catch {}
  }));
  await page.goto(uiUrl);
  // The page asks before it follows a link to another gateway.
  await page.getByRole('button', { name: /Switch to/ }).click({ timeout: 30000 });
  const box = page.getByPlaceholder(/Message/);
  await box.waitFor({ timeout: 30000 });
  await page.waitForTimeout(3000);
  await box.fill(message);
  await box.press('Enter');
  await page.waitForTimeout(6000);
  await page.screenshot({ path: shot });
  console.log('calls', JSON.stringify(calls));
  // A method the page keeps calling means it did not like our answer (it retries in a loop).
  const looping = Object.entries(calls).filter(([, n]) => n > 6);
  if (looping.length > 0) throw new Error(`called in a loop: ${JSON.stringify(looping)}`);
  console.log('page', (await page.innerText('body')).replace(/\s+/g, ' ').slice(0, 2000));
} catch (e) {
  console.log('calls', JSON.stringify(calls));
  console.log('failed:', e.message.split('\n')[0]);
  process.exitCode = 1;
} finally {
  await browser.close();
}
