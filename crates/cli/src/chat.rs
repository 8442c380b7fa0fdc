//! `switchboard chat`: type a message, watch the agent's reply stream in.

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use serde_json::{Value, json};
use switchboard_server::client::GatewayClient;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::settings::GlobalArgs;

#[derive(Args)]
pub struct ChatArgs {
    /// Session to talk in (default: the default agent's main session).
    #[arg(long, default_value = "main")]
    session: String,
}

pub async fn run(global: &GlobalArgs, args: ChatArgs) -> Result<ExitCode> {
    let (url, token) = global.target()?;
    let mut client = GatewayClient::connect(&url, token.as_deref())
        .await
        .with_context(|| format!("is the gateway running? (switchboard gateway; url {url})"))?;
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    eprintln!(
        "chatting in {} — type a message, Ctrl-D to leave",
        args.session
    );
    loop {
        eprint!("> ");
        let Some(line) = lines.next_line().await? else {
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
        let started = client.request("chat.send", params).await?;
        let run_id = started["runId"].as_str().unwrap_or_default().to_string();
        stream_reply(&mut client, &run_id).await?;
    }
    client.close().await;
    Ok(ExitCode::SUCCESS)
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
