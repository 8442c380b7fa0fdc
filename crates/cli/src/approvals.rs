//! `switchboard approvals list|approve|deny`: the commands a running gateway holds for an
//! operator (`tools.exec.ask`; `exec.approvals.*`), as the reference's `openclaw approvals`
//! manages its approvals.

use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};
use serde_json::{Value, json};

use crate::client_cmds::{print_json, request};
use crate::settings::GlobalArgs;
use crate::table;

#[derive(Subcommand)]
pub enum ApprovalsCommand {
    /// The commands waiting, oldest first.
    List,
    /// Let a command run: `switchboard approvals approve ID [--always]`.
    Approve(DecideArgs),
    /// Refuse it: `switchboard approvals deny ID`.
    Deny(DecideArgs),
}

#[derive(Args)]
pub struct DecideArgs {
    /// The approval's id (`switchboard approvals list` shows them).
    id: String,
    /// Approve, and add the program to the agent's allowlist (exec-approvals.json).
    #[arg(long)]
    always: bool,
}

pub async fn run(global: &GlobalArgs, cmd: ApprovalsCommand) -> Result<ExitCode> {
    let (method, args) = match cmd {
        ApprovalsCommand::List => return list(global).await,
        ApprovalsCommand::Approve(args) => ("exec.approvals.approve", args),
        ApprovalsCommand::Deny(args) => ("exec.approvals.deny", args),
    };
    let params = json!({"id": args.id, "allowAlways": args.always});
    let result = request(global, method, params).await?;
    if global.json {
        return print_json(&result);
    }
    outln!(
        "{} {}: {}",
        text(&result["decision"]),
        text(&result["id"]),
        text(&result["command"])
    );
    Ok(ExitCode::SUCCESS)
}

async fn list(global: &GlobalArgs) -> Result<ExitCode> {
    let result = request(global, "exec.approvals.list", Value::Null).await?;
    if global.json {
        return print_json(&result);
    }
    let waiting = result["approvals"].as_array().cloned().unwrap_or_default();
    if waiting.is_empty() {
        outln!("No command waits for approval.");
        return Ok(ExitCode::SUCCESS);
    }
    let rows: Vec<Vec<String>> = waiting
        .iter()
        .map(|a| {
            vec![
                text(&a["id"]),
                text(&a["agentId"]),
                text(&a["sessionKey"]),
                text(&a["command"]),
            ]
        })
        .collect();
    outln!(
        "{}",
        table::render(&["ID", "AGENT", "SESSION", "COMMAND"], &rows)
    );
    Ok(ExitCode::SUCCESS)
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_string()
}
