//! `switchboard chat`: type a message, watch the agent's reply stream in.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use serde_json::{Value, json};
use switchboard_server::client::{ClientError, GatewayClient};

use crate::settings::GlobalArgs;

#[derive(Args)]
pub struct ChatArgs {
    /// Session to talk in (default: the default agent's main session).
    #[arg(long, default_value = "main")]
    session: String,
}

pub async fn run(global: &GlobalArgs, args: ChatArgs) -> Result<ExitCode> {
    let mut client = crate::settings::connect(global).await?;
    let mut lines = typed_lines();
    eprintln!(
        "chatting in {} — type a message; Ctrl-C stops a reply, Ctrl-D (or Ctrl-C here) leaves",
        args.session
    );
    loop {
        eprint!("> ");
        let line = tokio::select! {
            line = lines.recv() => line.transpose()?,
            _ = tokio::signal::ctrl_c() => None,
        };
        let Some(line) = line else {
            break;
        };
        if line.trim().is_empty() {
            continue;
        }
        let params = json!({
            "sessionKey": args.session,
            "message": line,
            "idempotencyKey": format!("cli-{}", uuid_like()),
        });
        // A refused message (bad input, a policy) is said, and the chat goes on.
        let started = match client.request("chat.send", params).await {
            Ok(started) => started,
            Err(ClientError::Gateway(error)) => {
                eprintln!("[refused: {}]", error.message);
                continue;
            }
            Err(e) => return Err(e.into()),
        };
        let Some(run_id) = started["runId"].as_str().map(str::to_string) else {
            // A command such as `/send off` answers at once, with no run.
            outln!("{}", started["reply"].as_str().unwrap_or_default());
            continue;
        };
        let interrupted = tokio::select! {
            streamed = stream_reply(&mut client, &run_id) => {
                streamed?;
                false
            }
            _ = tokio::signal::ctrl_c() => true,
        };
        if interrupted {
            abort(&mut client, &args.session, &run_id).await;
        }
    }
    client.close().await;
    Ok(ExitCode::SUCCESS)
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

/// Prints assistant deltas and tool activity of `run_id` until it ends.
async fn stream_reply(client: &mut GatewayClient, run_id: &str) -> Result<()> {
    let mut out = std::io::stdout();
    loop {
        let event = client.next_event().await?;
        if event.event != "agent" || event.payload["runId"] != run_id {
            continue;
        }
        let data = &event.payload["data"];
        match event.payload["stream"].as_str() {
            Some("assistant") => {
                write!(out, "{}", data["delta"].as_str().unwrap_or_default())?;
                out.flush()?;
            }
            Some("tool") if data["phase"] == "call" => {
                writeln!(
                    out,
                    "\n[tool {} {}]",
                    data["name"].as_str().unwrap_or("?"),
                    data["arguments"]
                )?;
            }
            Some("tool") if data["phase"] == "result" => {
                let marker = if data["isError"] == Value::Bool(true) {
                    "error"
                } else {
                    "result"
                };
                writeln!(
                    out,
                    "[{marker}: {}]",
                    clip(data["text"].as_str().unwrap_or_default(), 300)
                )?;
            }
            Some("lifecycle") if data["phase"] == "end" => {
                match data["status"].as_str() {
                    Some("ok") => writeln!(out)?,
                    Some(status) => writeln!(
                        out,
                        "\n[run {status}: {}]",
                        data["error"].as_str().unwrap_or("")
                    )?,
                    None => writeln!(out)?,
                }
                return Ok(());
            }
            _ => {}
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
