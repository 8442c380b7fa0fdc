//! `switchboard demo` (SPEC §11): a gateway in this process on a fresh state dir, two agents on
//! the scripted model, and every session tool at work end to end, printed step by step.
//!
//! The demo is a client like any other: it talks to its gateway over a real loopback WebSocket
//! through `tools.invoke` (acting as `main`), so what it prints is what a client would see. The
//! agents' system prompts hold `@when` rules (docs/scripted-model.md) that answer each block the
//! runtime adds — an agent-to-agent message, a reply-back turn, an announce step, a sub-agent task
//! and its announce step — so every run is deterministic. Background steps are awaited by polling
//! `chat.history` up to a deadline: a step that never comes fails the demo instead of hanging it.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use serde_json::{Value, json};
use switchboard_core::Engine;
use switchboard_core::config::{self, Config};
use switchboard_server::client::GatewayClient;
use switchboard_server::{GatewayAuth, ServerState};
use tokio::sync::oneshot;

use crate::client_cmds::message_text;
use crate::settings::GlobalArgs;

#[derive(Args)]
pub struct DemoArgs {
    /// Keep the state dir (database, transcripts, token) instead of removing it at the end.
    #[arg(long)]
    keep: bool,
}

/// How long one background step may take before the demo gives up. A hang guard: with the
/// scripted model each step takes milliseconds.
const STEP_DEADLINE: Duration = Duration::from_secs(60);

const RESEARCH: &str = "agent:research:main";
const GROUP: &str = "discord:group:dev";

/// The demo's agents. Each rule answers a message without directives whose run carries the quoted
/// text in its system prompt; the first matching rule wins, so the sub-agent announce rule comes
/// before the general "announce step" one.
fn demo_config() -> Result<Config> {
    let main_rules = [r#"@when "Turn 1 of" @reply Thanks, research: noted."#];
    let research_rules = [
        r#"@when "Sub-agent announce step" @reply Result: 14:02 deploy shipped, all checks green, no action needed.\nNotes: written by a scripted agent from its system-prompt rules"#,
        r#"@when "You are a sub-agent" @reply Release note: the 14:02 deploy shipped with all checks green; no action needed."#,
        r#"@when "Turn 2 of" @reply REPLY_SKIP"#,
        r#"@when "announce step" @reply Announcement: main asked about the 14:02 deploy; research confirmed it passed."#,
        r#"@when "Agent-to-agent message" @reply research here. On "{{user}}": yes, it passed every check (see discord:group:dev)."#,
    ];
    let text = json!({
        "gateway": {"port": 0},
        "agents": {"list": [
            {"id": "main", "default": true, "systemPrompt": main_rules.join("\n"),
             "subagents": {"allowAgents": ["research"]}},
            {"id": "research", "systemPrompt": research_rules.join("\n")},
        ]},
        "tools": {"agentToAgent": {"enabled": true}},
    })
    .to_string();
    let loaded = config::load_str(&text, "the demo's config", &|_| None)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(loaded.config)
}

/// The gateway this process runs for the demo.
struct Gateway {
    url: String,
    token: Option<String>,
    engine: Arc<Engine>,
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<std::io::Result<()>>,
}

impl Gateway {
    async fn start(home: &Path) -> Result<Self> {
        let config = demo_config()?;
        let auth = GatewayAuth::load_or_create(&config, home)
            .with_context(|| format!("creating the token in {}", home.display()))?;
        let engine = Engine::open(home, config)
            .await
            .with_context(|| format!("opening the store in {}", home.display()))?;
        let state = ServerState::new(engine.clone(), auth);
        let loopback = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
        let (addr, listener) = switchboard_server::bind(state.clone(), loopback).await?;
        let (stop, stopped) = oneshot::channel::<()>();
        let task = tokio::spawn(switchboard_server::serve(state, listener, async {
            let _ = stopped.await;
        }));
        Ok(Self {
            url: format!("ws://{addr}"),
            token: switchboard_server::auth::stored_token(home),
            engine,
            stop,
            task,
        })
    }

    /// Graceful shutdown: connections closed, the listener stopped, the store committed.
    async fn stop(self) {
        let _ = self.stop.send(());
        if let Ok(Err(e)) = self.task.await {
            eprintln!("warning: the demo gateway stopped with an error: {e}");
        }
        self.engine.close().await;
    }
}

/// The demo's state dir: a temporary one (whatever `SWITCHBOARD_HOME` says), or the one
/// `--state-dir` named (kept: the user chose it).
enum StateDir {
    Temp(tempfile::TempDir),
    Named(PathBuf),
}

impl StateDir {
    /// A named dir must be new or empty: the demo's agents and sessions must not mix into a real
    /// gateway's state.
    fn open(named: Option<&Path>) -> Result<Self> {
        let Some(dir) = named else {
            let temp = tempfile::Builder::new()
                .prefix("switchboard-demo-")
                .tempdir()
                .context("creating a temporary state dir")?;
            return Ok(Self::Temp(temp));
        };
        let used = std::fs::read_dir(dir).is_ok_and(|mut entries| entries.next().is_some());
        if used {
            anyhow::bail!(
                "--state-dir {}: the demo needs a new or empty directory (this one holds files)",
                dir.display()
            );
        }
        std::fs::create_dir_all(dir)
            .with_context(|| format!("creating the state dir {}", dir.display()))?;
        Ok(Self::Named(dir.to_path_buf()))
    }

    fn path(&self) -> PathBuf {
        match self {
            Self::Temp(temp) => temp.path().to_path_buf(),
            Self::Named(dir) => dir.clone(),
        }
    }

    fn kept(&self, keep: bool) -> bool {
        keep || matches!(self, Self::Named(_))
    }

    /// Removes a temporary dir unless `keep`; says what became of it.
    fn finish(self, keep: bool) -> Result<String> {
        match self {
            Self::Named(dir) => Ok(format!("state dir kept at {}", dir.display())),
            Self::Temp(temp) if keep => Ok(format!("state dir kept at {}", temp.keep().display())),
            Self::Temp(temp) => {
                let home = temp.path().to_path_buf();
                temp.close()
                    .with_context(|| format!("removing the state dir {}", home.display()))?;
                Ok(format!(
                    "state dir {} removed (--keep keeps it)",
                    home.display()
                ))
            }
        }
    }

    /// Keeps the dir whatever was asked, so a failure can be read in its transcripts.
    fn keep_for_reading(self) -> PathBuf {
        match self {
            Self::Temp(temp) => temp.keep(),
            Self::Named(dir) => dir,
        }
    }
}

/// Whether `--state-dir` is on the command line (not only `SWITCHBOARD_HOME` in the
/// environment, which names a real gateway's state: the demo does not use it).
fn state_dir_given() -> bool {
    std::env::args_os().any(|arg| {
        let arg = arg.to_string_lossy();
        arg == "--state-dir" || arg.starts_with("--state-dir=")
    })
}

pub async fn run(global: &GlobalArgs, args: DemoArgs) -> Result<ExitCode> {
    let named = global.state_dir.as_deref().filter(|_| state_dir_given());
    let dir = StateDir::open(named)?;
    let home = dir.path();
    let gateway = Gateway::start(&home).await?;
    outln!("switchboard demo: every session tool, end to end, on a gateway in this process");
    outln!("  gateway  {} (loopback only)", gateway.url);
    let end = if dir.kept(args.keep) {
        "kept"
    } else {
        "removed"
    };
    outln!("  state    {} ({end} at the end)", home.display());
    outln!("  agents   main (default, may spawn research) and research, both on");
    outln!("           builtin/scripted, answering the runtime's steps by @when rules");
    outln!("           in their system prompts (docs/scripted-model.md)");
    let started = Instant::now();
    let outcome = match GatewayClient::connect(&gateway.url, gateway.token.as_deref()).await {
        Ok(client) => {
            let mut demo = Demo { client };
            let outcome = demo.steps().await;
            demo.client.close().await;
            outcome
        }
        Err(e) => Err(anyhow::Error::new(e).context("connecting to the demo gateway")),
    };
    gateway.stop().await;
    let elapsed = started.elapsed().as_secs_f64();
    match outcome {
        Ok(()) => {
            let state = dir.finish(args.keep)?;
            outln!(
                "\nDemo done in {elapsed:.1}s: sessions_list, sessions_history, sessions_send \
                 (reply-back, announce) and sessions_spawn (announce) all worked; {state}"
            );
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            let home = dir.keep_for_reading();
            Err(e.context(format!(
                "the demo failed (its state dir is kept at {})",
                home.display()
            )))
        }
    }
}

struct Demo {
    client: GatewayClient,
}

impl Demo {
    async fn steps(&mut self) -> Result<()> {
        self.set_up().await.context("set-up")?;
        self.list().await.context("step 1 (sessions_list)")?;
        self.history().await.context("step 2 (sessions_history)")?;
        self.send().await.context("step 3 (sessions_send)")?;
        self.spawn().await.context("step 4 (sessions_spawn)")
    }

    async fn set_up(&mut self) -> Result<()> {
        outln!("\nSet-up, through gateway methods:");
        for key in ["main", RESEARCH] {
            let created = self.call("sessions.create", json!({"key": key})).await?;
            outln!("  sessions.create {key} → {}", str_of(&created, "key"));
        }
        let lines = [
            ("user", "[from ana] Is the 14:02 deploy done?"),
            ("assistant", "Yes: deployed at 14:02, all checks green."),
        ];
        for (role, text) in lines {
            let params = json!({"sessionKey": GROUP, "role": role, "message": text});
            let injected = self.call("chat.inject", params).await?;
            outln!(
                "  chat.inject {GROUP} ({role}) → seq {} in {}",
                injected["seq"],
                str_of(&injected, "sessionKey")
            );
        }
        Ok(())
    }

    async fn list(&mut self) -> Result<()> {
        heading(1, "sessions_list: the sessions main can see");
        let result = self.tool("sessions_list", json!({})).await?;
        outln!("  ← count {}", result["count"]);
        for row in rows(&result, "sessions") {
            outln!(
                "      {:<28} kind {:<6} channel {}",
                str_of(row, "key"),
                str_of(row, "kind"),
                str_of(row, "channel")
            );
        }
        check(
            result["count"].as_u64().unwrap_or(0) >= 3,
            "the 3 sessions of the set-up",
            &result,
        )?;
        Ok(())
    }

    async fn history(&mut self) -> Result<()> {
        heading(2, "sessions_history: another session's transcript");
        let args = json!({"sessionKey": GROUP, "limit": 10});
        let result = self.tool("sessions_history", args).await?;
        let messages = rows(&result, "messages");
        outln!(
            "  ← {} messages of {} (truncated: {})",
            messages.len(),
            str_of(&result, "sessionKey"),
            result["truncated"]
        );
        print_messages(messages);
        check(messages.len() == 2, "the 2 injected messages", &result)?;
        Ok(())
    }

    async fn send(&mut self) -> Result<()> {
        heading(3, "sessions_send: ask another agent and wait for its reply");
        let main_seen = self.transcript("main").await?.len();
        let research_seen = self.transcript(RESEARCH).await?.len();
        let args = json!({
            "sessionKey": RESEARCH, "message": "Is the 14:02 deploy done?", "timeoutSeconds": 30,
        });
        let result = self.tool("sessions_send", args).await?;
        outln!(
            "  ← status {}, runId {}",
            str_of(&result, "status"),
            str_of(&result, "runId")
        );
        outln!("    reply: {}", short(str_of(&result, "reply"), 160));
        check(result["status"] == "ok", "status ok", &result)?;
        outln!("  Then, in the background: the reply-back loop (turn 1 in main, turn 2 in");
        outln!("  research, whose REPLY_SKIP ends it), then the announce step in research");
        outln!("  (no channel route, so it stays recorded in research's transcript).");
        self.wait_for_exchange(str_of(&result, "runId")).await?;
        let research = self.transcript(RESEARCH).await?.split_off(research_seen);
        let main = self.transcript("main").await?;
        outln!("  research transcript, new messages:");
        print_messages(&research);
        outln!("  main transcript, new messages:");
        print_messages(main.get(main_seen..).unwrap_or_default());
        Ok(())
    }

    async fn spawn(&mut self) -> Result<()> {
        heading(4, "sessions_spawn: a sub-agent for one task");
        let main_seen = self.transcript("main").await?.len();
        let args = json!({
            "task": "Write a one-line release note for the 14:02 deploy",
            "agentId": "research", "label": "release-note",
        });
        let result = self.tool("sessions_spawn", args).await?;
        let child = str_of(&result, "childSessionKey").to_string();
        outln!(
            "  ← status {} (at once), runId {}\n    childSessionKey {child}",
            str_of(&result, "status"),
            str_of(&result, "runId")
        );
        check(result["status"] == "accepted", "status accepted", &result)?;
        outln!("  The sub-agent works on lane subagent; when it ends, its announce step");
        outln!("  reports to main (no route: a user-role message, provenance subagent-announce).");
        let new = self
            .wait_for("main", "the sub-agent's announce", main_seen, |new| {
                new.iter().any(is_subagent_announce)
            })
            .await?;
        outln!("  sub-agent transcript ({child}):");
        print_messages(&self.transcript(&child).await?);
        let Some(announce) = new.iter().find(|m| is_subagent_announce(m)) else {
            bail!("the announce went missing from main");
        };
        outln!("  arrived in main, #{}:", announce["seq"]);
        let text = message_text(announce);
        for line in text.lines() {
            outln!("      {line}");
        }
        check(
            text.starts_with("Status: success"),
            "Status: success",
            &json!(text),
        )
    }

    async fn call(&mut self, method: &str, params: Value) -> Result<Value> {
        self.client
            .request(method, params.clone())
            .await
            .with_context(|| format!("{method} {params}"))
    }

    /// Runs a session tool as `main` and prints the call; a refusal or error fails the step.
    async fn tool(&mut self, tool: &str, args: Value) -> Result<Value> {
        outln!("  → tools.invoke as main: {tool} {args}");
        let params = json!({"sessionKey": "main", "tool": tool, "args": args});
        let mut answer = self.call("tools.invoke", params).await?;
        let result = answer
            .get_mut("result")
            .map(Value::take)
            .unwrap_or_default();
        if let Some(status @ ("error" | "forbidden" | "timeout")) = result["status"].as_str() {
            bail!("{tool} answered {status}: {}", str_of(&result, "error"));
        }
        Ok(result)
    }

    /// A session's whole transcript (the demo's are short), oldest first.
    async fn transcript(&mut self, key: &str) -> Result<Vec<Value>> {
        let page = self
            .call("chat.history", json!({"sessionKey": key, "limit": 1000}))
            .await?;
        Ok(page["messages"].as_array().cloned().unwrap_or_default())
    }

    /// Polls `key`'s transcript until the messages after the first `seen` satisfy `done`;
    /// answers those messages.
    /// Polls `exchanges.get` until the exchange of the send `id` ended (done or failed).
    async fn wait_for_exchange(&mut self, id: &str) -> Result<()> {
        let deadline = Instant::now() + STEP_DEADLINE;
        loop {
            let x = self.call("exchanges.get", json!({"id": id})).await?;
            match x["state"].as_str() {
                Some("done") => return Ok(()),
                Some("failed") => bail!("the exchange failed: {}", str_of(&x, "detail")),
                _ if Instant::now() >= deadline => bail!(
                    "the exchange did not end within {}s",
                    STEP_DEADLINE.as_secs()
                ),
                _ => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    async fn wait_for(
        &mut self,
        key: &str,
        what: &str,
        seen: usize,
        done: impl Fn(&[Value]) -> bool,
    ) -> Result<Vec<Value>> {
        let deadline = Instant::now() + STEP_DEADLINE;
        loop {
            let new: Vec<Value> = self.transcript(key).await?.into_iter().skip(seen).collect();
            if done(&new) {
                return Ok(new);
            }
            if Instant::now() >= deadline {
                bail!(
                    "{what} did not appear in {key} within {}s",
                    STEP_DEADLINE.as_secs()
                );
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Fails the step with what was expected and the start of what came back.
fn check(ok: bool, expected: &str, got: &Value) -> Result<()> {
    if !ok {
        bail!("expected {expected}, got {}", short(&got.to_string(), 300));
    }
    Ok(())
}

fn heading(n: u8, title: &str) {
    outln!("\n[{n}/4] {title}");
}

fn is_subagent_announce(m: &Value) -> bool {
    m["role"] == "user" && m["provenance"]["kind"] == "subagent-announce"
}

fn rows<'a>(value: &'a Value, field: &str) -> &'a [Value] {
    value[field]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn str_of<'a>(value: &'a Value, field: &str) -> &'a str {
    value[field].as_str().unwrap_or_default()
}

/// One line per message: `#seq role (from whom): text`, abbreviated.
fn print_messages(messages: &[Value]) {
    for m in messages {
        let from = match m["provenance"]["fromSessionKey"].as_str() {
            Some(from) => format!(" (from {from})"),
            None => String::new(),
        };
        outln!(
            "      #{} {}{from}: {}",
            m["seq"],
            str_of(m, "role"),
            short(&message_text(m), 110)
        );
    }
}

/// `text` on one line (line breaks shown as ` / `), cut to `max` characters.
fn short(text: &str, max: usize) -> String {
    let line = text.trim().replace('\n', " / ");
    if line.chars().count() <= max {
        return line;
    }
    let cut: String = line.chars().take(max).collect();
    format!("{cut}…")
}
