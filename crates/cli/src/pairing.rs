//! `switchboard pairing list|approve`: DM pairing requests of a running gateway
//! (`pairing.list`, `pairing.approve`), as the reference's `openclaw pairing` takes them.

use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use serde_json::{Value, json};

use crate::client_cmds::{print_json, request};
use crate::settings::GlobalArgs;
use crate::table;

#[derive(Subcommand)]
pub enum PairingCommand {
    /// Pending requests of every channel, or of one: `switchboard pairing list [telegram]`.
    List(ListArgs),
    /// Let a sender in by the code they were given: `switchboard pairing approve telegram CODE`.
    Approve(ApproveArgs),
}

#[derive(Args)]
pub struct ListArgs {
    /// The channel (default: every channel with pairing).
    channel: Option<String>,
    #[arg(long = "channel", conflicts_with = "channel")]
    channel_flag: Option<String>,
    /// One bot's requests (channels.telegram.accounts.<id>).
    #[arg(long)]
    account: Option<String>,
}

#[derive(Args)]
pub struct ApproveArgs {
    /// `[CHANNEL] CODE`: the channel may be left out (telegram).
    #[arg(num_args = 1..=2, required = true, value_names = ["CHANNEL", "CODE"])]
    words: Vec<String>,
    #[arg(long = "channel")]
    channel_flag: Option<String>,
    /// Needed only when the same code is pending on two bots.
    #[arg(long)]
    account: Option<String>,
    /// Tell the sender in their chat that they may talk to the bot now.
    #[arg(long)]
    notify: bool,
}

pub async fn run(global: &GlobalArgs, cmd: PairingCommand) -> Result<ExitCode> {
    match cmd {
        PairingCommand::List(args) => list(global, args).await,
        PairingCommand::Approve(args) => approve(global, args).await,
    }
}

async fn list(global: &GlobalArgs, args: ListArgs) -> Result<ExitCode> {
    let channel = args.channel.or(args.channel_flag).unwrap_or("*".into());
    let params = json!({"channel": channel, "accountId": args.account});
    let result = request(global, "pairing.list", params).await?;
    if global.json {
        return print_json(&result);
    }
    let requests = result["requests"].as_array().cloned().unwrap_or_default();
    if requests.is_empty() {
        let channel = match text(&result["channel"]).as_str() {
            "*" => String::new(),
            one => format!("{one} "),
        };
        outln!("No pending {channel}pairing requests.");
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<Vec<String>> = requests
        .iter()
        .map(|r| {
            let username = r["username"].as_str().map(|u| format!("@{u}"));
            vec![
                text(&r["channel"]),
                text(&r["code"]),
                text(&r["id"]),
                username.unwrap_or_default(),
                text(&r["accountId"]),
                minutes_left(r["expiresAt"].as_i64().unwrap_or(0)),
            ]
        })
        .collect();
    let headers = [
        "CHANNEL", "CODE", "SENDER", "USERNAME", "ACCOUNT", "EXPIRES",
    ];
    outln!("{}", table::render(&headers, &rows));
    Ok(ExitCode::SUCCESS)
}

async fn approve(global: &GlobalArgs, args: ApproveArgs) -> Result<ExitCode> {
    let (channel, code) = match args.words.as_slice() {
        [code] => (args.channel_flag, code.clone()),
        [channel, code] if args.channel_flag.is_none() => (Some(channel.clone()), code.clone()),
        [_, _] => bail!("name the channel once: positionally or with --channel"),
        _ => bail!("approve takes [CHANNEL] CODE"),
    };
    let params = json!({
        "channel": channel, "code": code, "accountId": args.account, "notify": args.notify,
    });
    let result = request(global, "pairing.approve", params).await?;
    if global.json {
        return print_json(&result);
    }
    let approved = &result["approved"];
    let who = approved["username"].as_str().map_or_else(
        || text(&approved["id"]),
        |u| format!("@{u} ({})", text(&approved["id"])),
    );
    outln!(
        "Approved {who} on {} (account {}).",
        text(&approved["channel"]),
        text(&approved["accountId"])
    );
    if result["noticeDeliveryId"].is_string() {
        outln!("They were told in their chat.");
    }
    Ok(ExitCode::SUCCESS)
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

fn minutes_left(expires_at: i64) -> String {
    let now = table::now_ms();
    format!("in {} min", ((expires_at - now) / 60_000).max(0))
}
