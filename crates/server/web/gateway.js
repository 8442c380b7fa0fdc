// The gateway connection: protocol v4 over the WebSocket on the page's own origin, the same
// handshake every client makes (connect.challenge, then connect with the token), requests
// matched to their answers by id, events to listeners, and a reconnect with backoff whenever
// the connection drops, unless the token was refused.

const SCOPES = ['operator.read', 'operator.write', 'operator.admin'];
const MAX_BACKOFF_MS = 5000;

export class Gateway {
  constructor(url, onStatus) {
    this.url = url;
    this.onStatus = onStatus;
    this.listeners = new Map();
    this.pending = new Map();
    this.nextId = 1;
    this.ready = false;
    this.backoff = 250;
    this.token = null;
    this.onReady = () => {};
  }

  /** Connects with `token`, and keeps reconnecting while it is accepted. */
  start(token) {
    this.token = token;
    this.stopped = false;
    this.open();
  }

  open() {
    if (this.ws) this.ws.onclose = null;
    const ws = new WebSocket(this.url);
    this.ws = ws;
    this.refused = null;
    ws.onmessage = (e) => this.frame(e.data);
    ws.onclose = (e) => this.closed(e);
  }

  closed(event) {
    this.ready = false;
    for (const { reject } of this.pending.values()) reject(new Error('connection lost'));
    this.pending.clear();
    if (this.refused) {
      this.stopped = true;
      this.onStatus('refused', this.refused);
      return;
    }
    const why = event.reason ? `: ${event.reason}` : '';
    this.onStatus('reconnecting', `connection lost${why}; reconnecting…`);
    setTimeout(() => this.stopped || this.open(), this.backoff);
    this.backoff = Math.min(this.backoff * 2, MAX_BACKOFF_MS);
  }

  frame(text) {
    let frame;
    try { frame = JSON.parse(text); } catch { return; }
    if (frame.type === 'res') return this.answer(frame);
    if (frame.type !== 'event') return;
    if (frame.event === 'connect.challenge') return this.connect();
    for (const fn of this.listeners.get(frame.event) || []) fn(frame.payload);
  }

  connect() {
    const params = {
      minProtocol: 4,
      maxProtocol: 4,
      client: { id: 'switchboard-web', version: '1', platform: 'web', mode: 'ui' },
      role: 'operator',
      scopes: SCOPES,
      auth: { token: this.token || undefined },
    };
    this.send('connect', params).then(
      () => {
        this.ready = true;
        this.backoff = 250;
        this.onStatus('connected', 'connected');
        this.onReady();
      },
      (error) => {
        this.refused = error.code === 'UNAUTHORIZED' ? error.message : null;
        if (!this.refused) this.onStatus('reconnecting', error.message);
      },
    );
  }

  answer(frame) {
    const waiter = this.pending.get(frame.id);
    if (!waiter) return;
    // `agent` answers twice: an interim `accepted`, then the final answer.
    if (frame.ok && frame.payload?.status === 'accepted' && waiter.method === 'agent') return;
    this.pending.delete(frame.id);
    if (frame.ok) waiter.resolve(frame.payload);
    else {
      const error = new Error(frame.error?.message || 'request failed');
      error.code = frame.error?.code;
      waiter.reject(error);
    }
  }

  send(method, params) {
    const id = String(this.nextId++);
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject, method });
      try {
        this.ws.send(JSON.stringify({ type: 'req', id, method, params }));
      } catch (e) {
        this.pending.delete(id);
        reject(e);
      }
    });
  }

  /** A method call once connected; rejects with the gateway's error (`code`, `message`). */
  request(method, params = {}) {
    if (!this.ready) return Promise.reject(new Error('not connected to the gateway'));
    return this.send(method, params);
  }

  on(event, fn) {
    if (!this.listeners.has(event)) this.listeners.set(event, []);
    this.listeners.get(event).push(fn);
  }
}
