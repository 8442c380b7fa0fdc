// What the Control UI scripts share: Chromium with the kit's flags, and a watch on the page's
// WebSocket that counts the methods it calls and keeps those answered with an error.

export async function launch() {
  const { chromium } = await import(process.env.PLAYWRIGHT_CORE);
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}

/** Watches `page`'s gateway frames: `watch.calls` (method → count) and `watch.failed` (method →
 * its error), both emptied by `watch.reset()`. */
export function watchFrames(page) {
  const watch = { calls: {}, failed: {}, reset() { this.calls = {}; this.failed = {}; } };
  const pending = new Map();
  page.on('websocket', (ws) => {
    ws.on('framesent', (f) => {
      try {
        const frame = JSON.parse(f.payload);
        if (frame.method) {
          watch.calls[frame.method] = (watch.calls[frame.method] || 0) + 1;
          pending.set(frame.id, frame.method);
        }
      } catch {}
    });
    ws.on('framereceived', (f) => {
      try {
        const frame = JSON.parse(f.payload);
        if (frame.type === 'res' && frame.ok === false && pending.has(frame.id)) {
          watch.failed[pending.get(frame.id)] = `${frame.error?.code}: ${frame.error?.message}`;
        }
      } catch {}
    });
  });
  return watch;
}
