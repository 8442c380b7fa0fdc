//! Operating a running gateway with the reference's command names: `health`, `status`, `logs`,
//! `channels status` and `usage`. Each prints a readable summary, or with `--json` the
//! gateway's answers themselves. Channels are named by their ids (`telegram`, `discord`), as
//! `sessions_list` and the web page name them.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use serde_json::{Value, json};
use switchboard_protocol::agents::{HealthResult, QueueHealth, StoreHealthInfo};

use crate::client_cmds::{print_json, request};
use crate::settings::GlobalArgs;
use crate::table;

#[derive(Args)]
pub struct LogsArgs {
    /// Keep printing new lines as the gateway logs them (Ctrl-C stops).
    #[arg(long, short = 'f')]
    follow: bool,
    /// Only lines at this level or worse: trace, debug, info, warn, error.
    #[arg(long, value_parser = LEVELS)]
    level: Option<String>,
    /// How many of the most recent lines to show first.
    #[arg(long, short = 'n', default_value_t = 50)]
    lines: usize,
}

#[derive(Subcommand)]
pub enum ChannelsCommand {
    /// Each channel's accounts: whether they run, their state and their last error.
    Status,
}

#[derive(Args)]
pub struct UsageArgs {
    /// Group the tokens and cost by day, by agent or by model.
    #[arg(long, value_parser = ["day", "agent", "model"], default_value = "day")]
    by: String,
    /// The last N days (today included).
    #[arg(long, default_value_t = 30)]
    days: u32,
}

/// Log levels, least severe first.
const LEVELS: [&str; 5] = ["trace", "debug", "info", "warn", "error"];

/// `health`: one line per part; a gateway that is not ok is a failed command.
pub async fn health(global: &GlobalArgs) -> Result<ExitCode> {
    let answer = request(global, "health", json!({})).await?;
    let health = typed_health(&answer)?;
    if global.json {
        print_json(&answer)?;
    } else {
        outln!("{}", health_text(&health));
    }
    Ok(match health.ok {
        true => ExitCode::SUCCESS,
        false => ExitCode::FAILURE,
    })
}

/// The gateway's `health` answer as the protocol types it: a field renamed or retyped on one
/// side is an error here, not a blank or a zero in the output.
fn typed_health(answer: &Value) -> Result<HealthResult> {
    serde_json::from_value(answer.clone())
        .context("the gateway's answer to health is not the one this CLI reads (another version?)")
}

fn health_text(h: &HealthResult) -> String {
    let mut lines = vec![gateway_line(h)];
    lines.push(format!("store     {}", store_text(h.store.as_ref())));
    lines.push(format!("sessions  {}", sessions_text(h)));
    lines.push(format!("channels  {}", channels_text(h)));
    for (name, server) in &h.mcp {
        let tools = server.tools.len();
        let error = error_suffix(server.last_error.as_deref());
        lines.push(format!(
            "mcp       {name}: {} ({tools} {}){error}",
            server.state,
            plural(tools as u64, "tool")
        ));
    }
    lines.join("\n")
}

fn gateway_line(h: &HealthResult) -> String {
    let ok = match h.ok {
        true => "ok",
        false => "NOT OK",
    };
    let up = table::age(0, i64::try_from(h.uptime_ms).unwrap_or(i64::MAX));
    format!(
        "gateway   {ok}: switchboard {} (protocol {}), up {up}, {} {}",
        h.version,
        h.protocol,
        h.connections,
        plural(h.connections, "connection"),
    )
}

fn store_text(store: Option<&StoreHealthInfo>) -> String {
    let Some(store) = store else {
        return "-".into();
    };
    let detail = store
        .detail
        .as_deref()
        .map(|d| format!(" ({d})"))
        .unwrap_or_default();
    format!("{}, {}{detail}", store.kind, store.state)
}

fn sessions_text(h: &HealthResult) -> String {
    let per_agent: Vec<String> = h
        .agents
        .iter()
        .map(|a| format!("{} {}", a.agent_id, a.sessions.count))
        .collect();
    format!("{} ({})", h.session_count, per_agent.join(", "))
}

/// The configured channels and their state, in the gateway's order.
fn channels_text(h: &HealthResult) -> String {
    let shown: Vec<String> = h
        .channel_order
        .iter()
        .filter_map(|id| Some((id, h.channels.get(id)?)))
        .filter(|(_, channel)| channel["configured"] == true)
        .map(|(id, channel)| {
            format!(
                "{id} {}{}",
                table::cell(&channel["state"]),
                error_suffix(channel["lastError"].as_str())
            )
        })
        .collect();
    match shown.is_empty() {
        true => "none configured".into(),
        false => shown.join("; "),
    }
}

/// `status`: the gateway, its store, agents, channels, run queue and the recent log's warnings
/// and errors, from `health`, `status` and `logs.tail`.
pub async fn status(global: &GlobalArgs) -> Result<ExitCode> {
    let mut client = crate::settings::connect(global).await?;
    let health = client.request("health", json!({})).await;
    let status = client.request("status", json!({})).await;
    let log = client.request("logs.tail", json!({"limit": 500})).await;
    client.close().await;
    let (answer, status, log) = (health?, status?, log?);
    let problems: Vec<Value> = log_lines(&log)
        .into_iter()
        .filter(|line| at_least(line, "warn"))
        .collect();
    let recent = &problems[problems.len().saturating_sub(5)..];
    if global.json {
        let answer = json!({"health": answer, "status": status, "recentProblems": recent});
        return print_json(&answer);
    }
    let health = typed_health(&answer)?;
    outln!("{}", gateway_line(&health));
    outln!("store     {}", store_text(health.store.as_ref()));
    for (i, agent) in health.agents.iter().enumerate() {
        let count = agent.sessions.count;
        outln!(
            "{}{}{}: {count} {}",
            if i == 0 { "agents    " } else { "          " },
            agent.agent_id,
            if agent.is_default { " (default)" } else { "" },
            plural(count, "session"),
        );
    }
    let defaults = &status["sessions"]["defaults"];
    outln!(
        "model     {}/{} (the default)",
        table::cell(&defaults["modelProvider"]),
        table::cell(&defaults["model"])
    );
    outln!("channels  {}", channels_text(&health));
    let queue = health.queue.unwrap_or(QueueHealth {
        active_sessions: 0,
        queued_runs: 0,
    });
    outln!(
        "queue     {} running, {} queued",
        queue.active_sessions,
        queue.queued_runs
    );
    match recent.is_empty() {
        true => outln!("problems  none in the recent log"),
        false => {
            outln!("problems  the last {} warnings and errors:", recent.len());
            for line in recent {
                outln!("  {}", line_text(line));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// `logs`: the gateway's recent log, then (`--follow`) what it logs next.
pub async fn logs(global: &GlobalArgs, args: LogsArgs) -> Result<ExitCode> {
    let level = args.level.as_deref().unwrap_or("trace");
    let mut client = crate::settings::connect(global).await?;
    let mut answer = client.request("logs.tail", json!({"limit": 5000})).await?;
    let mut first: Vec<Value> = log_lines(&answer);
    first.retain(|line| at_least(line, level));
    let skip = first.len().saturating_sub(args.lines);
    print_lines(global, &first[skip..]);
    if !args.follow {
        client.close().await;
        return Ok(ExitCode::SUCCESS);
    }
    // Until Ctrl-C, or an error (the gateway went away).
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let cursor = answer["cursor"].clone();
        answer = client
            .request("logs.tail", json!({"cursor": cursor, "limit": 5000}))
            .await?;
        let mut next = log_lines(&answer);
        next.retain(|line| at_least(line, level));
        print_lines(global, &next);
    }
}

fn print_lines(global: &GlobalArgs, lines: &[Value]) {
    for line in lines {
        match global.json {
            true => outln!("{line}"),
            false => outln!("{}", line_text(line)),
        }
    }
}

/// A `logs.tail` answer's lines as objects: a JSON line as it is, any other as its text.
fn log_lines(answer: &Value) -> Vec<Value> {
    (answer["lines"].as_array().into_iter().flatten())
        .filter_map(Value::as_str)
        .map(|line| match serde_json::from_str::<Value>(line) {
            Ok(object) if object.is_object() => object,
            _ => json!({"message": line}),
        })
        .collect()
}

/// Whether a line is at `level` or worse; a line without a level is shown.
fn at_least(line: &Value, level: &str) -> bool {
    let rank = |l: &str| LEVELS.iter().position(|x| x.eq_ignore_ascii_case(l));
    match (line["level"].as_str().and_then(rank), rank(level)) {
        (Some(it), Some(wanted)) => it >= wanted,
        _ => true,
    }
}

/// `2026-11-29T23:36:10Z WARN subsystem: message key=value`.
fn line_text(line: &Value) -> String {
    let Some(fields) = line.as_object() else {
        return line.to_string();
    };
    let time = line["time"].as_str().unwrap_or_default();
    let time = time.split_once('.').map_or(time, |(whole, _)| whole);
    let mut out = format!(
        "{time} {:>5} {}: {}",
        table::cell(&line["level"]).to_uppercase(),
        table::cell(&line["subsystem"]),
        table::cell(&line["message"])
    );
    for (key, value) in fields {
        if !matches!(
            key.as_str(),
            "time" | "level" | "subsystem" | "message" | "spans"
        ) {
            out.push_str(&format!(
                " {key}={}",
                value.as_str().map_or(value.to_string(), str::to_string)
            ));
        }
    }
    out.trim().to_string()
}

/// `channels status`: one row per account (a channel without accounts: one row of its own).
pub async fn channels(global: &GlobalArgs, cmd: ChannelsCommand) -> Result<ExitCode> {
    let ChannelsCommand::Status = cmd;
    let answer = request(global, "channels.status", json!({})).await?;
    if global.json {
        return print_json(&answer);
    }
    let mut rows = Vec::new();
    for id in (answer["channelOrder"].as_array().into_iter().flatten()).filter_map(Value::as_str) {
        let channel = &answer["channels"][id];
        let accounts = answer["channelAccounts"][id].as_array().cloned();
        let accounts = accounts.filter(|a| !a.is_empty()).unwrap_or_default();
        if accounts.is_empty() {
            rows.push(channel_row(id, "-", channel));
        }
        for account in &accounts {
            rows.push(channel_row(
                id,
                &table::cell(&account["accountId"]),
                account,
            ));
        }
    }
    let header = ["CHANNEL", "ACCOUNT", "STATE", "ENABLED", "LAST ERROR"];
    outln!("{}", table::render(&header, &rows));
    Ok(ExitCode::SUCCESS)
}

fn channel_row(id: &str, account: &str, status: &Value) -> Vec<String> {
    let state = match (status["configured"] == true, status["state"].as_str()) {
        (false, _) => "not configured".to_string(),
        (true, Some(state)) => state.to_string(),
        (true, None) => "configured".to_string(),
    };
    let enabled = if status["enabled"] == true {
        "yes"
    } else {
        "no"
    };
    let error = status["lastError"].as_str().unwrap_or("-");
    vec![
        id.into(),
        account.into(),
        state,
        enabled.into(),
        crate::client_cmds::shortened(error, 60),
    ]
}

/// `usage`: tokens and cost of the last `--days` days, by day, agent or model (`usage.cost`).
pub async fn usage(global: &GlobalArgs, args: UsageArgs) -> Result<ExitCode> {
    let days = args.days.max(1);
    let mut client = crate::settings::connect(global).await?;
    let answer = match args.by.as_str() {
        "agent" => by_agent(&mut client, days).await,
        _ => client
            .request("usage.cost", json!({"days": days}))
            .await
            .map_err(Into::into),
    };
    client.close().await;
    let answer = answer?;
    if global.json {
        return print_json(&answer);
    }
    let rows: Vec<Vec<String>> = match args.by.as_str() {
        "day" => (answer["daily"].as_array().into_iter().flatten())
            .filter(|d| d["totalTokens"].as_u64().unwrap_or(0) > 0)
            .map(|d| usage_row(&table::cell(&d["date"]), d))
            .collect(),
        "model" => (answer["byModel"].as_object().into_iter().flatten())
            .map(|(model, totals)| usage_row(model, totals))
            .collect(),
        _ => (answer["byAgent"].as_object().into_iter().flatten())
            .map(|(agent, totals)| usage_row(agent, &totals["totals"]))
            .collect(),
    };
    let first = args.by.to_uppercase();
    let header = [first.as_str(), "INPUT", "OUTPUT", "TOKENS", "COST (USD)"];
    outln!("{}", table::render(&header, &rows));
    let total = usage_row("", &answer["totals"]);
    outln!("total over {days} days: {} tokens, ${}", total[3], total[4]);
    Ok(ExitCode::SUCCESS)
}

/// `usage.cost` for each configured agent: `{byAgent: {<id>: answer}, totals}`.
async fn by_agent(
    client: &mut switchboard_server::client::GatewayClient,
    days: u32,
) -> Result<Value> {
    let agents = client.request("agents.list", json!({})).await?;
    let all = client.request("usage.cost", json!({"days": days})).await?;
    let mut by_agent = serde_json::Map::new();
    for agent in
        (agents["agents"].as_array().into_iter().flatten()).filter_map(|a| a["id"].as_str())
    {
        let params = json!({"days": days, "agentId": agent});
        by_agent.insert(agent.into(), client.request("usage.cost", params).await?);
    }
    Ok(json!({"byAgent": by_agent, "totals": all["totals"], "days": days}))
}

fn usage_row(name: &str, totals: &Value) -> Vec<String> {
    let count = |k: &str| totals[k].as_u64().unwrap_or(0).to_string();
    vec![
        name.into(),
        count("input"),
        count("output"),
        count("totalTokens"),
        format!("{:.4}", totals["totalCost"].as_f64().unwrap_or(0.0)),
    ]
}

fn error_suffix(error: Option<&str>) -> String {
    error
        .map(|e| format!(" (last error: {e})"))
        .unwrap_or_default()
}

fn plural(n: u64, word: &str) -> String {
    match n {
        1 => word.into(),
        _ => format!("{word}s"),
    }
}
