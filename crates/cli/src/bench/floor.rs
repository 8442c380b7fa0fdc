//! The `floor` target: a do-nothing protocol-v4 server. It answers the handshake and every
//! request at once with a canned payload: for a call (`health`, `sessions.list`,
//! `chat.history`) the very payload the last real target (in `--target` order) answered, for a
//! turn's answers one padded to the size it answered. So what the floor costs is the client
//! (parsing the same text), the socket and the frames: the least any gateway can cost for that
//! answer. A payload padded to the size alone was parsed by the client several times faster
//! than 200 rows of a list. It runs as a child process (`switchboard bench floor`) so its CPU
//! is read on its own.

use std::collections::HashMap;
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use anyhow::{Context, Result, anyhow};
use clap::Args;
use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};
use tokio_tungstenite::tungstenite::Message;

use super::conn::Conn;
use super::target::Target;
use super::workload::{Learned, Plan, Workload};

/// The bytes of an answer frame around its payload: `{"type":"res","id":"b12","ok":true,"payload":}`.
const FRAME_OVERHEAD: usize = 48;

#[derive(Args)]
pub struct FloorArgs {
    /// Where to listen; port 0 picks a free one. The first line printed is `listening ws://ADDR`.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: String,
    /// An answer's size: `METHOD=BYTES` (the whole frame), e.g. `sessions.list=61234`.
    #[arg(long = "size", value_name = "METHOD=BYTES")]
    sizes: Vec<String>,
    /// An answer's payload: `METHOD=FILE`, the file holding its JSON text (over `--size`).
    #[arg(long = "answer", value_name = "METHOD=FILE")]
    answers: Vec<String>,
}

/// The canned payloads, by method, already serialised.
struct Answers {
    /// Replaced at run time by `floor.answer` (`match_answer`).
    by_method: RwLock<HashMap<String, String>>,
    default: String,
    /// Requests answered, `connect` and `floor.stats` excluded.
    answered: AtomicU64,
}

/// `base` with a `pad` string that brings the whole frame to `bytes`.
fn padded(mut base: Value, bytes: usize) -> String {
    let plain = base.to_string().len() + FRAME_OVERHEAD;
    let pad = ",\"pad\":\"\"".len();
    if bytes > plain + pad {
        base["pad"] = Value::String("x".repeat(bytes - plain - pad));
    }
    base.to_string()
}

fn base_payload(method: &str) -> Value {
    match method {
        "chat.send" => json!({"runId": "floor-run", "status": "started"}),
        "agent.wait" => json!({"runId": "floor-run", "status": "ok"}),
        _ => json!({"ok": true}),
    }
}

impl Answers {
    fn new(sizes: &[String], answers: &[String]) -> Result<Self> {
        let mut by_method = HashMap::new();
        for size in sizes {
            let (method, bytes) = size
                .split_once('=')
                .with_context(|| format!("--size wants METHOD=BYTES, got {size:?}"))?;
            let bytes: usize = bytes.parse().with_context(|| format!("--size {size:?}"))?;
            by_method.insert(method.to_string(), padded(base_payload(method), bytes));
        }
        for answer in answers {
            let (method, file) = answer
                .split_once('=')
                .with_context(|| format!("--answer wants METHOD=FILE, got {answer:?}"))?;
            let text = std::fs::read_to_string(file).with_context(|| format!("--answer {file}"))?;
            serde_json::from_str::<Value>(&text)
                .with_context(|| format!("--answer {file}: not JSON"))?;
            by_method.insert(method.to_string(), text);
        }
        for method in ["chat.send", "agent.wait"] {
            by_method
                .entry(method.to_string())
                .or_insert_with(|| base_payload(method).to_string());
        }
        Ok(Self {
            by_method: RwLock::new(by_method),
            default: base_payload("").to_string(),
            answered: AtomicU64::new(0),
        })
    }

    fn payload(&self, method: &str) -> String {
        match method {
            "connect" => json!({"type": "hello-ok", "protocol": 4, "server": {"version": "floor"},
                                "features": {"methods": [], "events": []}, "snapshot": {},
                                "policy": {"tickIntervalMs": 30000}})
            .to_string(),
            "floor.stats" => json!({"answered": self.answered.load(Ordering::Relaxed)}).to_string(),
            _ => {
                self.answered.fetch_add(1, Ordering::Relaxed);
                let by_method = self
                    .by_method
                    .read()
                    .unwrap_or_else(PoisonError::into_inner);
                by_method.get(method).unwrap_or(&self.default).clone()
            }
        }
    }

    /// `floor.answer {method, payload}`: `method` is answered with `payload` from now on.
    fn set(&self, params: &Value) -> String {
        let (Some(method), Some(payload)) = (params["method"].as_str(), params.get("payload"))
        else {
            return json!({"ok": false, "error": "floor.answer wants {method, payload}"})
                .to_string();
        };
        let mut by_method = self
            .by_method
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        by_method.insert(method.to_string(), payload.to_string());
        json!({"ok": true}).to_string()
    }
}

/// Before a floor block of a call workload: the floor answers what `mirrored` (the last real
/// target) answers now. Its answer grows after the warm-up (the `parallel` block makes
/// sessions), and the floor must answer the same text. Neither call is counted or timed.
pub async fn match_answer(
    mirrored: &Target,
    floor: &Target,
    workload: Workload,
    plan: &Plan,
) -> Result<()> {
    let Some((method, params)) = workload.call(plan) else {
        return Ok(());
    };
    let uncounted = Arc::new(AtomicU64::new(0));
    let mut conn =
        Conn::connect(&mirrored.url, mirrored.token.as_deref(), uncounted.clone()).await?;
    let payload = conn.call(method, params).await?;
    conn.close().await;
    let mut conn = Conn::connect(&floor.url, None, uncounted).await?;
    let set = json!({"method": method, "payload": payload});
    conn.call("floor.answer", set).await?;
    conn.close().await;
    Ok(())
}

/// `switchboard bench floor`: serves until killed.
pub async fn serve(args: FloorArgs) -> Result<ExitCode> {
    let answers = Arc::new(Answers::new(&args.sizes, &args.answers)?);
    let listener = TcpListener::bind(&args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    outln!("listening ws://{}", listener.local_addr()?);
    loop {
        let (stream, _) = listener.accept().await?;
        let _ = stream.set_nodelay(true);
        tokio::spawn(session(stream, answers.clone()));
    }
}

async fn session(stream: TcpStream, answers: Arc<Answers>) {
    let Ok(mut ws) = tokio_tungstenite::accept_async(stream).await else {
        return;
    };
    let challenge = json!({"type": "event", "event": "connect.challenge",
                           "payload": {"nonce": "floor", "ts": 0}});
    if ws.send(Message::text(challenge.to_string())).await.is_err() {
        return;
    }
    while let Some(Ok(message)) = ws.next().await {
        let Message::Text(text) = message else {
            continue;
        };
        let Ok(request) = serde_json::from_str::<Value>(&text) else {
            return;
        };
        let payload = match request["method"].as_str().unwrap_or_default() {
            "floor.answer" => answers.set(&request["params"]),
            method => answers.payload(method),
        };
        let frame = format!(
            "{{\"type\":\"res\",\"id\":{},\"ok\":true,\"payload\":{payload}}}",
            request["id"]
        );
        if ws.send(Message::text(frame)).await.is_err() {
            return;
        }
    }
}

/// The floor running as a child of this process; killed when dropped.
pub struct FloorProcess {
    child: Child,
    pub url: String,
}

impl FloorProcess {
    /// Starts `switchboard bench floor` with these answers and reads its address.
    pub async fn start(learned: &Learned) -> Result<Self> {
        let mut command = Command::new(std::env::current_exe()?);
        command
            .args(["bench", "floor", "--listen", "127.0.0.1:0"])
            .env("SWITCHBOARD_LOG", "warn")
            .stdout(Stdio::piped());
        for (method, bytes) in &learned.sizes {
            command.arg("--size").arg(format!("{method}={bytes}"));
        }
        // The payloads go through files: a long history page is over an argument's limit.
        let files = tempfile::TempDir::new().context("a folder for the floor's answers")?;
        for (method, payload) in &learned.payloads {
            let file = files.path().join(format!("{method}.json"));
            std::fs::write(&file, payload)?;
            command
                .arg("--answer")
                .arg(format!("{method}={}", file.display()));
        }
        let mut child = command.spawn().context("cannot start the floor")?;
        let stdout = child.stdout.take().context("the floor's stdout")?;
        let line = tokio::task::spawn_blocking(move || {
            let mut line = String::new();
            std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line)
                .map(|_| line)
        })
        .await??;
        let url = line
            .trim()
            .strip_prefix("listening ")
            .ok_or_else(|| anyhow!("the floor printed {line:?}"))?
            .to_string();
        Ok(Self { child, url })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }
}

impl Drop for FloorProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_is_answered_with_the_payload_learned_and_a_turn_padded_to_its_size() {
        let dir = tempfile::TempDir::new().unwrap();
        let file = dir.path().join("list.json");
        std::fs::write(
            &file,
            r#"{"count":1,"sessions":[{"key":"agent:main:main"}]}"#,
        )
        .unwrap();
        let answer = format!("sessions.list={}", file.display());
        let answers = Answers::new(&["agent.wait=300".into()], &[answer]).unwrap();
        let list = answers.payload("sessions.list");
        assert_eq!(
            list,
            r#"{"count":1,"sessions":[{"key":"agent:main:main"}]}"#
        );
        let wait = answers.payload("agent.wait");
        assert_eq!(wait.len() + FRAME_OVERHEAD, 300, "{wait}");
        // floor.answer: the bench matches the answer to the gateway's before each block.
        let set = json!({"method": "sessions.list", "payload": {"count": 2}});
        assert_eq!(answers.set(&set), r#"{"ok":true}"#);
        assert_eq!(answers.payload("sessions.list"), r#"{"count":2}"#);
        assert!(answers.set(&json!({"method": "health"})).contains("wants"));
        std::fs::write(&file, "not json").unwrap();
        let answer = format!("sessions.list={}", file.display());
        let refused = Answers::new(&[], &[answer]).err().unwrap();
        assert!(format!("{refused:#}").contains("not JSON"), "{refused:#}");
    }
}
