//! `switchboard chat`: type a message, watch the agent's reply stream in.
//!
//! The chat follows its session, not one connection: what arrives in the session while the
//! prompt waits (a sub-agent's report, an announce, a run started elsewhere) is printed, and what
//! arrives while a reply streams is printed after that reply. When the gateway goes away (a
//! restart, a deploy) the chat says so, connects again as soon as it can and goes on — a line
//! typed meanwhile is sent once it is back (under the same idempotency key, so never twice), and
//! a reply that was streaming is followed to its end: its run is resumed by the gateway (SPEC
//! §6.3).

use std::collections::HashSet;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use serde_json::{Value, json};
use switchboard_protocol::{ErrorCode, EventFrame};
use switchboard_server::client::{ClientError, GatewayClient};
use tokio::signal::unix::{Signal, SignalKind, signal};

use crate::settings::GlobalArgs;

/// How long the chat tries to connect again after the gateway went away.
const RECONNECT_FOR: Duration = Duration::from_secs(120);
/// The wait between two tries.
const RECONNECT_EVERY: Duration = Duration::from_millis(500);

#[derive(Args)]
pub struct ChatArgs {
    /// Session to talk in (default: the default agent's main session).
    #[arg(long, default_value = "main")]
    session: String,
}

pub async fn run(global: &GlobalArgs, args: ChatArgs) -> Result<ExitCode> {
    let mut chat = Chat::open(global, args.session).await?;
    let mut lines = typed_lines();
    // One stream for the whole chat: a Ctrl-C between two waits is kept for the next one (a
    // `ctrl_c()` made at each wait misses one that comes before it).
    let mut interrupts = signal(SignalKind::interrupt())?;
    eprintln!(
        "chatting in {} — type a message; Ctrl-C stops a reply, Ctrl-D (or Ctrl-C here) leaves",
        chat.session
    );
    loop {
        eprint!("> ");
        let line = tokio::select! {
            line = lines.recv() => line.transpose()?,
            _ = interrupts.recv() => None,
            watched = chat.watch() => {
                watched?;
                continue;
            }
        };
        let Some(line) = line else {
            break;
        };
        if line.trim().is_empty() {
            continue;
        }
        chat.say(line, &mut interrupts).await?;
    }
    chat.client.close().await;
    Ok(ExitCode::SUCCESS)
}

/// One chat: its session, its connection, the runs it started.
struct Chat<'a> {
    global: &'a GlobalArgs,
    session: String,
    /// The session's canonical key (events name it so).
    key: String,
    client: GatewayClient,
    mine: HashSet<String>,
}

impl<'a> Chat<'a> {
    async fn open(global: &'a GlobalArgs, session: String) -> Result<Self> {
        let (client, key) = subscribed(global, &session).await?;
        Ok(Self {
            global,
            session,
            key,
            client,
            mine: HashSet::new(),
        })
    }

    /// Connects again after the gateway went away, for up to [`RECONNECT_FOR`].
    async fn reconnect(&mut self) -> Result<()> {
        eprintln!("\n[the gateway went away; connecting again…]");
        let deadline = tokio::time::Instant::now() + RECONNECT_FOR;
        loop {
            tokio::time::sleep(RECONNECT_EVERY).await;
            match subscribed(self.global, &self.session).await {
                Ok((client, key)) => {
                    (self.client, self.key) = (client, key);
                    eprintln!("[connected again]");
                    return Ok(());
                }
                Err(e) if tokio::time::Instant::now() >= deadline => return Err(e),
                Err(_) => {}
            }
        }
    }

    /// Sends a typed line and follows its reply.
    async fn say(&mut self, line: String, interrupts: &mut Signal) -> Result<()> {
        let params = json!({
            "sessionKey": self.session,
            "message": line,
            "idempotencyKey": format!("cli-{}", uuid_like()),
        });
        let started = loop {
            match self.client.request("chat.send", params.clone()).await {
                Ok(started) => break started,
                // A refused message (bad input, a policy) is said, and the chat goes on.
                Err(ClientError::Gateway(error)) => {
                    eprintln!("[refused: {}]", error.message);
                    return Ok(());
                }
                // Sent again once connected: the same key makes it one message.
                Err(e) if lost(&e) => self.reconnect().await?,
                Err(e) => return Err(e.into()),
            }
        };
        // A slash command (`/status`, `/send off`) is answered at once: no run to follow.
        let command = started["command"].is_string();
        if command {
            // Its reply is also told as a run's events: printed here once, not again.
            if let Some(id) = started["runId"].as_str() {
                self.mine.insert(id.to_string());
            }
            outln!("{}", started["reply"].as_str().unwrap_or_default());
            return Ok(());
        }
        let Some(run_id) = started["runId"].as_str() else {
            return Ok(());
        };
        let run_id = run_id.to_string();
        self.mine.insert(run_id.clone());
        self.follow(&run_id, interrupts).await
    }

    /// Streams the reply of `run_id` until the run ends; Ctrl-C aborts it. Across a restart of
    /// the gateway the run goes on (resumed): its end is waited for and its reply printed.
    async fn follow(&mut self, run_id: &str, interrupts: &mut Signal) -> Result<()> {
        // What arrives in the session while the reply streams (a sub-agent's report) is kept
        // and printed after the reply, not dropped nor written into its middle.
        let mut held = Vec::new();
        // `None`: Ctrl-C came first.
        let streamed = tokio::select! {
            streamed = stream_reply(&mut self.client, run_id, &mut held) => Some(streamed),
            _ = interrupts.recv() => None,
        };
        for event in &held {
            self.show(event)?;
        }
        match streamed {
            Some(Ok(())) => return Ok(()),
            Some(Err(e)) if lost(&e) => {}
            Some(Err(e)) => return Err(e.into()),
            None => {
                abort(&mut self.client, &self.session, run_id).await;
                return Ok(());
            }
        }
        loop {
            self.reconnect().await?;
            let wait = json!({"runId": run_id, "timeoutMs": RECONNECT_FOR.as_millis() as u64});
            match self.client.request("agent.wait", wait).await {
                Ok(waited) => {
                    print_outcome(&waited)?;
                    return Ok(());
                }
                Err(e) if lost(&e) => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Prints what arrives in the session while the prompt waits; returns once something was
    /// printed (the prompt is shown again). The gateway going away is waited out.
    async fn watch(&mut self) -> Result<()> {
        loop {
            match self.client.next_event().await {
                Ok(event) if self.show(&event)? => return Ok(()),
                Ok(_) => {}
                Err(e) if lost(&e) => {
                    self.reconnect().await?;
                    return Ok(());
                }
                Err(e) => return Err(e.into()),
            }
        }
    }

    /// Prints `event` when it is something that arrived in the session: a report or announce
    /// delivered into it, or the reply of a run this chat did not start.
    fn show(&self, event: &EventFrame) -> Result<bool> {
        let p = &event.payload;
        if p["sessionKey"] != self.key.as_str() {
            return Ok(false);
        }
        let mut out = std::io::stdout();
        match event.event.as_str() {
            "delivery" if p["status"] == "delivered" && p["channel"] == "internal" => {
                let kind = p["kind"].as_str().unwrap_or("message");
                writeln!(
                    out,
                    "\n[{kind}]\n{}",
                    p["text"].as_str().unwrap_or_default()
                )?;
                Ok(true)
            }
            "chat"
                if p["state"] == "final"
                    && !self.mine.contains(p["runId"].as_str().unwrap_or("")) =>
            {
                writeln!(out, "\n{}", text_of(&p["message"]))?;
                Ok(true)
            }
            _ => Ok(false),
        }
    }
}

/// A connection that receives the run and delivery events of `session`; with the session's
/// canonical key.
async fn subscribed(global: &GlobalArgs, session: &str) -> Result<(GatewayClient, String)> {
    let mut client = crate::settings::connect(global).await?;
    let resolved = client
        .request("sessions.resolve", json!({"key": session}))
        .await;
    let key = match resolved {
        Ok(answer) => answer["key"].as_str().unwrap_or(session).to_string(),
        // A session that does not exist yet: the first message makes it; its events name it.
        Err(ClientError::Gateway(e)) if e.code == ErrorCode::NotFound => session.to_string(),
        // A key the gateway cannot take (`::::`): said before the first prompt, in the flag's name.
        Err(ClientError::Gateway(e)) => anyhow::bail!("--session {session:?}: {}", e.message),
        Err(e) => return Err(e.into()),
    };
    let keys = json!({"sessionKeys": [session]});
    client.request("sessions.subscribe", keys).await?;
    Ok((client, key))
}

/// Whether the connection to the gateway was lost (not refused by it).
fn lost(e: &ClientError) -> bool {
    matches!(e, ClientError::Closed(_) | ClientError::Connect { .. })
}

/// The text of a transcript message (its string content, or its text blocks).
fn text_of(message: &Value) -> String {
    match &message["content"] {
        Value::String(text) => text.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// An `agent.wait` answer, printed as the end of a streamed reply would be.
fn print_outcome(waited: &Value) -> Result<()> {
    let mut out = std::io::stdout();
    match waited["status"].as_str() {
        Some("ok") => writeln!(out, "{}", waited["reply"].as_str().unwrap_or_default())?,
        Some("timeout") if waited["waitTimedOut"] == true => writeln!(
            out,
            "[the reply is still being written; it will be in the history]"
        )?,
        Some(status) => writeln!(
            out,
            "[run {status}: {}]",
            waited["error"].as_str().unwrap_or("")
        )?,
        None => writeln!(out)?,
    }
    Ok(())
}

/// The lines typed, read on a thread of their own: tokio's stdin would hold the runtime's
/// shutdown until a pending read ends, so leaving on Ctrl-C at the prompt would wait for Enter.
fn typed_lines() -> tokio::sync::mpsc::Receiver<std::io::Result<String>> {
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    std::thread::spawn(move || {
        for line in std::io::stdin().lines() {
            if tx.blocking_send(line).is_err() {
                return;
            }
        }
    });
    rx
}

/// Ctrl-C while a reply streams: aborts that run and says what became of it.
async fn abort(client: &mut GatewayClient, session: &str, run_id: &str) {
    let params = json!({"sessionKey": session, "runId": run_id});
    match client.request("chat.abort", params).await {
        Ok(answer) if answer["aborted"] == true => {
            eprintln!("\n[aborted the run {run_id}]");
        }
        Ok(_) => eprintln!("\n[the run {run_id} had already ended]"),
        Err(e) => eprintln!("\n[could not abort the run {run_id}: {e}; it keeps running]"),
    }
}

/// Prints assistant deltas and tool activity of `run_id` until it ends; other events go to
/// `held`.
async fn stream_reply(
    client: &mut GatewayClient,
    run_id: &str,
    held: &mut Vec<EventFrame>,
) -> Result<(), ClientError> {
    let mut out = std::io::stdout();
    loop {
        let event = client.next_event().await?;
        if event.payload["runId"] != run_id {
            held.push(event);
            continue;
        }
        if event.event != "agent" {
            continue;
        }
        let data = &event.payload["data"];
        let written = match event.payload["stream"].as_str() {
            Some("assistant") => write!(out, "{}", data["delta"].as_str().unwrap_or_default())
                .and_then(|()| out.flush()),
            Some("tool") if data["phase"] == "call" => writeln!(
                out,
                "\n[tool {} {}]",
                data["name"].as_str().unwrap_or("?"),
                data["arguments"]
            ),
            Some("tool") if data["phase"] == "result" => {
                let marker = match data["isError"] == Value::Bool(true) {
                    true => "error",
                    false => "result",
                };
                let text = clip(data["text"].as_str().unwrap_or_default(), 300);
                writeln!(out, "[{marker}: {text}]")
            }
            Some("lifecycle") if data["phase"] == "end" => {
                let _ = match data["status"].as_str() {
                    Some("ok") | None => writeln!(out),
                    Some(status) => writeln!(
                        out,
                        "\n[run {status}: {}]",
                        data["error"].as_str().unwrap_or("")
                    ),
                };
                return Ok(());
            }
            _ => Ok(()),
        };
        // Standard output gone (a closed pipe): nothing more to show, the reply goes on.
        if written.is_err() {
            return Ok(());
        }
    }
}

fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        format!("{}…", s.chars().take(max).collect::<String>())
    }
}

fn uuid_like() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!("{nanos:x}-{}", std::process::id())
}
