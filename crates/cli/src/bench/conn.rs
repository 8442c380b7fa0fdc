//! One protocol-v4 connection, made the way the bench kit's clients make it
//! (`/work/shared/bench/client/gw_client.py`): the `connect.challenge` event, then `connect` with
//! the kit's client info and the token; requests one at a time, events in between skipped. The
//! same connect params pass on our gateway and on the reference.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

/// How long one request may take before the block counts it as failed (the kit's default).
const CALL_TIMEOUT: Duration = Duration::from_secs(130);
/// What `agent.wait` is asked to wait at most, in milliseconds.
const WAIT_MS: u64 = 120_000;

pub struct Conn {
    socket: WebSocketStream<MaybeTlsStream<TcpStream>>,
    next_id: u64,
    /// Requests sent on this target's connections, `connect` excluded (the floor's count is
    /// checked against it).
    sent: Arc<AtomicU64>,
    /// The length of the last answer frame, in bytes (the floor's answers are sized from these).
    pub last_bytes: usize,
}

/// A unique idempotency key: the process id and a counter.
fn idempotency_key() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("bench-{}-{n}", std::process::id())
}

fn connect_params(token: Option<&str>) -> Value {
    json!({
        "minProtocol": 4, "maxProtocol": 4,
        "client": {"id": "gateway-client", "version": "bench-kit", "platform": std::env::consts::OS,
                   "mode": "backend"},
        "role": "operator",
        "scopes": ["operator.admin", "operator.read", "operator.write", "operator.approvals"],
        "caps": [], "commands": [], "permissions": {},
        "auth": {"token": token.unwrap_or_default()},
        "locale": "en-US", "userAgent": "switchboard-bench/1",
    })
}

impl Conn {
    /// Opens the socket and completes the handshake.
    pub async fn connect(url: &str, token: Option<&str>, sent: Arc<AtomicU64>) -> Result<Self> {
        let (socket, _) = tokio_tungstenite::connect_async_with_config(url, None, true)
            .await
            .with_context(|| format!("cannot connect to {url}"))?;
        let mut conn = Self {
            socket,
            next_id: 0,
            sent,
            last_bytes: 0,
        };
        let challenge = conn.frame().await?.1;
        if challenge["type"] != "event" || challenge["event"] != "connect.challenge" {
            bail!("{url}: expected connect.challenge, got {challenge}");
        }
        conn.request("connect", connect_params(token))
            .await
            .with_context(|| format!("{url}: connect"))?;
        Ok(conn)
    }

    /// The next text frame, as text and parsed.
    async fn frame(&mut self) -> Result<(usize, Value)> {
        loop {
            let message = self
                .socket
                .next()
                .await
                .ok_or_else(|| anyhow!("connection closed"))??;
            match message {
                Message::Text(text) => return Ok((text.len(), serde_json::from_str(&text)?)),
                Message::Close(frame) => bail!("connection closed: {frame:?}"),
                _ => {}
            }
        }
    }

    /// Sends one request and answers its payload; an error answer is an error.
    pub async fn call(&mut self, method: &str, params: Value) -> Result<Value> {
        self.sent.fetch_add(1, Ordering::Relaxed);
        tokio::time::timeout(CALL_TIMEOUT, self.request(method, params))
            .await
            .map_err(|_| anyhow!("timeout: {method}"))?
    }

    async fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        self.next_id += 1;
        let id = format!("b{}", self.next_id);
        let frame = json!({"type": "req", "id": id, "method": method, "params": params});
        self.socket.send(Message::text(frame.to_string())).await?;
        loop {
            let (bytes, mut frame) = self.frame().await?;
            // Events (ticks, agent and chat streams) and stale answers are skipped, as the kit does.
            if frame["type"] != "res" || frame["id"] != id.as_str() {
                continue;
            }
            if frame["ok"] != true {
                let error = &frame["error"];
                bail!("{method}: {} {}", error["code"], error["message"]);
            }
            self.last_bytes = bytes;
            return Ok(frame["payload"].take());
        }
    }

    /// One turn: `chat.send`, then `agent.wait` for the run's end; a run that did not end `ok`
    /// is an error. Answers the sizes of the two answers.
    pub async fn turn(&mut self, session_key: &str, message: &str) -> Result<[usize; 2]> {
        let params = json!({"sessionKey": session_key, "message": message,
                            "idempotencyKey": idempotency_key()});
        let sent = self.call("chat.send", params).await?;
        let send_bytes = self.last_bytes;
        let run_id = sent["runId"]
            .as_str()
            .with_context(|| format!("chat.send answered no runId: {sent}"))?;
        let params = json!({"runId": run_id, "timeoutMs": WAIT_MS});
        let waited = self.call("agent.wait", params).await?;
        match waited.get("status").and_then(Value::as_str) {
            None | Some("ok") => Ok([send_bytes, self.last_bytes]),
            Some(status) => bail!("run ended {status}: {waited}"),
        }
    }

    pub async fn close(mut self) {
        let _ = self.socket.close(None).await;
    }
}
