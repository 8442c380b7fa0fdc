//! Client commands: `call`, `sessions …`, `agents list`. Each opens one connection.

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use serde_json::{Value, json};

use crate::settings::GlobalArgs;
use crate::table;

#[derive(Subcommand)]
pub enum SessionsCommand {
    /// Sessions, most recently updated first.
    List(ListArgs),
    /// A session's transcript (newest page), read through the sessions_history tool as the
    /// session given with --as (so its visibility rules apply).
    History(HistoryArgs),
    /// Send a message into a session through the sessions_send tool, as the session given with
    /// --as, and print the reply.
    Send(SendArgs),
    /// Start a sub-agent for one task through the sessions_spawn tool, as the session given with
    /// --as. Answers at once; the sub-agent's report (Status, Result, Notes, Stats) arrives in
    /// that session when it is done (see `sessions history`).
    Spawn(SpawnArgs),
    /// Change a session's label, send policy, model or display name.
    Patch(PatchArgs),
    /// Remove a session (its transcript is kept on disk).
    Delete(DeleteArgs),
}

// The arguments of each `sessions` subcommand. The structs carry no doc comment of their own:
// the variant's doc comment above is the subcommand's help.

#[derive(Args)]
pub struct ListArgs {
    /// How many sessions to show (default 50, at most 200).
    #[arg(long)]
    limit: Option<u32>,
    /// Only these kinds, comma-separated: main,group,cron,hook,node,other.
    #[arg(long)]
    kinds: Option<String>,
    /// Only sessions whose key, label or display name contains this text.
    #[arg(long)]
    search: Option<String>,
    /// Only the sessions of this agent.
    #[arg(long)]
    agent: Option<String>,
    /// Only sessions updated in the last N minutes.
    #[arg(long)]
    active_minutes: Option<u32>,
    /// `nextCursor` of a previous page, for the next one.
    #[arg(long)]
    cursor: Option<String>,
}

#[derive(Args)]
pub struct HistoryArgs {
    /// The session to read: a key (e.g. discord:group:dev), `main`, a label or a sessionId.
    key: String,
    /// How many messages to show, newest last (default 50).
    #[arg(long)]
    limit: Option<u32>,
    /// Only messages before this seq (the `nextBefore` of a previous page).
    #[arg(long)]
    before: Option<i64>,
    /// Include tool results.
    #[arg(long)]
    include_tools: bool,
    /// The session to act as (default: the default agent's main session).
    #[arg(long = "as", default_value = "main")]
    acting: String,
}

#[derive(Args)]
pub struct SendArgs {
    /// The target session: a key (e.g. discord:group:dev), `main` or a sessionId.
    key: String,
    /// The message its agent receives.
    message: String,
    /// Seconds to wait for the reply (0 = do not wait).
    #[arg(long, default_value_t = 30)]
    timeout: u32,
    /// The session to act as (default: the default agent's main session).
    #[arg(long = "as", default_value = "main")]
    acting: String,
}

#[derive(Args)]
pub struct SpawnArgs {
    /// What the sub-agent should do: it is all the sub-agent is told.
    task: String,
    /// A short name for the sub-agent's session.
    #[arg(long)]
    label: Option<String>,
    /// The agent to run the sub-agent as (default: the acting session's agent).
    #[arg(long)]
    agent: Option<String>,
    /// `provider/model` for the sub-agent.
    #[arg(long)]
    model: Option<String>,
    /// Stop the sub-agent after this many seconds (default: the agent's own timeout).
    #[arg(long)]
    timeout: Option<u32>,
    /// What becomes of the sub-agent's session once it reported: keep (archived later) or
    /// delete.
    #[arg(long, value_parser = ["keep", "delete"])]
    cleanup: Option<String>,
    /// The session to act as (default: the default agent's main session).
    #[arg(long = "as", default_value = "main")]
    acting: String,
}

#[derive(Args)]
pub struct PatchArgs {
    /// The session to change: a key, `main` or a sessionId.
    key: String,
    /// A short name for the session (unique per agent; empty clears it).
    #[arg(long)]
    label: Option<String>,
    /// Whether agents and replies may send into it: allow | deny | inherit.
    #[arg(long)]
    send_policy: Option<String>,
    /// `provider/model` for its next runs.
    #[arg(long)]
    model: Option<String>,
    /// The name shown for it (at most 200 characters).
    #[arg(long)]
    display_name: Option<String>,
}

#[derive(Args)]
pub struct DeleteArgs {
    /// The session to remove: a key or a sessionId (a main session cannot be removed).
    key: String,
}

#[derive(Subcommand)]
pub enum AgentsCommand {
    /// Configured agents.
    List,
}

#[derive(Subcommand)]
pub enum ToolsCommand {
    /// The tools an agent may call (built-in, session and MCP servers' tools), by group.
    List(ToolsListArgs),
}

#[derive(Args)]
pub struct ToolsListArgs {
    /// Whose tools, in its main session (default: the default agent).
    #[arg(long)]
    agent: Option<String>,
    /// In this session instead (any key form or a sessionId).
    #[arg(long, conflicts_with = "agent")]
    session: Option<String>,
}

pub async fn tools(global: &GlobalArgs, cmd: ToolsCommand) -> Result<ExitCode> {
    let ToolsCommand::List(args) = cmd;
    let params = json!({"sessionKey": args.session, "agentId": args.agent});
    let result = request(global, "tools.list", params).await?;
    if global.json {
        return print_json(&result);
    }
    let rows: Vec<Vec<String>> = result["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            let description = t["description"].as_str().unwrap_or_default();
            let first = description.split(". ").next().unwrap_or_default();
            vec![
                t["group"].as_str().unwrap_or("-").to_string(),
                t["name"].as_str().unwrap_or_default().to_string(),
                shortened(first, 60),
            ]
        })
        .collect();
    outln!("{}", text_of(&result["sessionKey"]));
    outln!(
        "{}",
        table::render(&["GROUP", "TOOL", "WHAT IT DOES"], &rows)
    );
    Ok(ExitCode::SUCCESS)
}

/// `text` cut to at most `max` characters at a word boundary, with an ellipsis when cut: a
/// table cell never ends mid-word.
pub(crate) fn shortened(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_string();
    }
    // Room for the ellipsis; then back to the last space inside what fits.
    let fits: String = text.chars().take(max.saturating_sub(1)).collect();
    let cut = match fits.rfind(char::is_whitespace) {
        Some(space) if space > 0 => &fits[..space],
        _ => fits.as_str(),
    };
    format!("{}…", cut.trim_end_matches([',', ';', ':', ' ']))
}

fn text_of(v: &Value) -> String {
    v.as_str().unwrap_or_default().to_string()
}

pub(crate) async fn request(global: &GlobalArgs, method: &str, params: Value) -> Result<Value> {
    let mut client = crate::settings::connect(global).await?;
    let result = client.request(method, params).await;
    client.close().await;
    Ok(result?)
}

/// Runs a session tool as `acting` through `tools.invoke`; answers the tool's JSON result.
/// The acting session is created first (idempotent): the operator acts as it, while the tools
/// themselves never create the sessions they name.
async fn invoke(global: &GlobalArgs, acting: &str, tool: &str, args: Value) -> Result<Value> {
    let mut client = crate::settings::connect(global).await?;
    client
        .request("sessions.create", json!({"key": acting}))
        .await?;
    let params = json!({"sessionKey": acting, "tool": tool, "args": args});
    let answer = client.request("tools.invoke", params).await;
    client.close().await;
    Ok(answer?["result"].clone())
}

/// Prints a tool's status answer; a refusal or an error is a failed command.
fn tool_answer(global: &GlobalArgs, result: &Value) -> Result<ExitCode> {
    match result["status"].as_str() {
        Some(status @ ("error" | "forbidden" | "timeout")) => {
            if global.json {
                print_json(result)?;
            } else {
                eprintln!("{status}: {}", result["error"].as_str().unwrap_or_default());
            }
            Ok(ExitCode::FAILURE)
        }
        _ => print_json(result),
    }
}

pub(crate) fn print_json(value: &Value) -> Result<ExitCode> {
    outln!("{}", serde_json::to_string_pretty(value)?);
    Ok(ExitCode::SUCCESS)
}

pub async fn call(global: &GlobalArgs, method: &str, params: &str) -> Result<ExitCode> {
    let given = params;
    let params: Value = serde_json::from_str(given)
        .with_context(|| format!("--params must be a JSON object, got {given:?}"))?;
    if !params.is_object() {
        anyhow::bail!(
            "--params must be a JSON object of named fields (for example '{{\"limit\": 5}}'), got {}: {given}",
            switchboard_protocol::decode::kind_of(&params)
        );
    }
    let result = request(global, method, params).await?;
    print_json(&result)?;
    Ok(run_outcome(method, &result))
}

/// `call agent` and `call agent.wait` answer a run's outcome: a run that ended `error`,
/// `timeout` or `aborted` (or a wait that ended first) is a failed command, said on stderr, so
/// a script's `&&` does not go on as if the agent had answered.
fn run_outcome(method: &str, result: &Value) -> ExitCode {
    if !matches!(method, "agent" | "agent.wait") {
        return ExitCode::SUCCESS;
    }
    match result["status"].as_str() {
        Some(status @ ("error" | "timeout" | "aborted")) => {
            let why = result["error"].as_str().unwrap_or_default();
            let waited = if result["waitTimedOut"] == true {
                " (the wait ended first; the run goes on)"
            } else {
                ""
            };
            eprintln!("the run ended with status {status}{waited}: {why}");
            ExitCode::FAILURE
        }
        _ => ExitCode::SUCCESS,
    }
}

pub async fn sessions(global: &GlobalArgs, cmd: SessionsCommand) -> Result<ExitCode> {
    match cmd {
        SessionsCommand::List(args) => sessions_list(global, args).await,
        SessionsCommand::History(args) => sessions_history(global, args).await,
        SessionsCommand::Send(args) => sessions_send(global, args).await,
        SessionsCommand::Spawn(args) => sessions_spawn(global, args).await,
        SessionsCommand::Patch(args) => sessions_patch(global, args).await,
        SessionsCommand::Delete(args) => sessions_delete(global, args).await,
    }
}

/// `sessions list`: a page of `sessions.list` as a table, with the cursor of the next page.
async fn sessions_list(global: &GlobalArgs, args: ListArgs) -> Result<ExitCode> {
    let ListArgs {
        limit,
        kinds,
        search,
        agent,
        active_minutes,
        cursor,
    } = args;
    let kinds: Option<Vec<&str>> = kinds
        .as_deref()
        .map(|k| k.split(',').map(str::trim).collect());
    let params = json!({
        "limit": limit, "kinds": kinds, "search": search, "agentId": agent,
        "activeMinutes": active_minutes, "cursor": cursor,
    });
    let result = request(global, "sessions.list", without_nulls(params)).await?;
    if global.json {
        return print_json(&result);
    }
    outln!("{}", sessions_table(&result));
    if let Some(next) = result.get("nextCursor").and_then(Value::as_str) {
        outln!("(more: --cursor '{next}')");
    }
    Ok(ExitCode::SUCCESS)
}

/// `sessions history`: the `sessions_history` tool's messages, one a line.
async fn sessions_history(global: &GlobalArgs, args: HistoryArgs) -> Result<ExitCode> {
    let HistoryArgs {
        key,
        limit,
        before,
        include_tools,
        acting,
    } = args;
    let args = without_nulls(json!({
        "sessionKey": key, "limit": limit, "before": before, "includeTools": include_tools,
    }));
    let result = invoke(global, &acting, "sessions_history", args).await?;
    if global.json || result.get("status").is_some() {
        return tool_answer(global, &result);
    }
    for m in result
        .get("messages")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        outln!("#{} {}: {}", m["seq"], speaker(m), shown_text(m));
    }
    if let Some(next) = result.get("nextBefore").and_then(Value::as_i64) {
        outln!("(older: --before {next})");
    }
    Ok(ExitCode::SUCCESS)
}

/// `sessions send`: the `sessions_send` tool's reply, or the run it started.
async fn sessions_send(global: &GlobalArgs, args: SendArgs) -> Result<ExitCode> {
    let SendArgs {
        key,
        message,
        timeout,
        acting,
    } = args;
    let args = json!({"sessionKey": key, "message": message, "timeoutSeconds": timeout});
    let result = invoke(global, &acting, "sessions_send", args).await?;
    if global.json {
        return print_json(&result);
    }
    match result["status"].as_str() {
        Some("ok") => outln!("{}", result["reply"].as_str().unwrap_or_default()),
        Some("accepted") => {
            outln!(
                "sent (run {})",
                result["runId"].as_str().unwrap_or_default()
            )
        }
        _ => return tool_answer(global, &for_the_cli(result)),
    }
    Ok(ExitCode::SUCCESS)
}

/// The tools' advice is written for a model ("send with timeoutSeconds 0"); at the command line
/// the same thing is the `--timeout 0` flag.
fn for_the_cli(mut result: Value) -> Value {
    if let Some(error) = result["error"].as_str() {
        result["error"] = json!(error.replace("with timeoutSeconds 0", "with --timeout 0"));
    }
    result
}

/// `sessions spawn`: the run and child session the `sessions_spawn` tool started.
async fn sessions_spawn(global: &GlobalArgs, args: SpawnArgs) -> Result<ExitCode> {
    let SpawnArgs {
        task,
        label,
        agent,
        model,
        timeout,
        cleanup,
        acting,
    } = args;
    let args = without_nulls(json!({
        "task": task, "label": label, "agentId": agent, "model": model,
        "runTimeoutSeconds": timeout, "cleanup": cleanup,
    }));
    let result = invoke(global, &acting, "sessions_spawn", args).await?;
    if global.json || result["status"] != "accepted" {
        return tool_answer(global, &result);
    }
    let text = |k: &str| result[k].as_str().unwrap_or_default().to_string();
    outln!("status:          accepted");
    outln!("runId:           {}", text("runId"));
    outln!("childSessionKey: {}", text("childSessionKey"));
    outln!("(its report will arrive in {acting}: switchboard sessions history {acting})");
    Ok(ExitCode::SUCCESS)
}

/// `sessions patch`: `sessions.patch` with the fields given; `--send-policy inherit` clears it.
async fn sessions_patch(global: &GlobalArgs, args: PatchArgs) -> Result<ExitCode> {
    let PatchArgs {
        key,
        label,
        send_policy,
        model,
        display_name,
    } = args;
    let mut params = json!({"key": key});
    if let Some(label) = label {
        params["label"] = json!(label);
    }
    if let Some(policy) = send_policy {
        params["sendPolicy"] = if policy == "inherit" {
            Value::Null
        } else {
            json!(policy)
        };
    }
    if let Some(model) = model {
        params["model"] = json!(model);
    }
    if let Some(name) = display_name {
        params["displayName"] = json!(name);
    }
    let result = request(global, "sessions.patch", params).await?;
    if global.json {
        return print_json(&result);
    }
    outln!("patched {}", result["key"].as_str().unwrap_or_default());
    Ok(ExitCode::SUCCESS)
}

/// `sessions delete`: `sessions.delete`, and where the transcript was kept.
async fn sessions_delete(global: &GlobalArgs, args: DeleteArgs) -> Result<ExitCode> {
    let DeleteArgs { key } = args;
    let result = request(global, "sessions.delete", json!({"key": key})).await?;
    if global.json {
        return print_json(&result);
    }
    outln!(
        "deleted {} (transcript kept at {})",
        result["key"].as_str().unwrap_or_default(),
        result["archivedTranscriptPath"]
            .as_str()
            .unwrap_or_default()
    );
    Ok(ExitCode::SUCCESS)
}

pub async fn agents(global: &GlobalArgs, cmd: AgentsCommand) -> Result<ExitCode> {
    let AgentsCommand::List = cmd;
    let result = request(global, "agents.list", json!({})).await?;
    if global.json {
        return print_json(&result);
    }
    let rows: Vec<Vec<String>> = result["agents"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| {
            vec![
                a["id"].as_str().unwrap_or_default().to_string(),
                a["name"].as_str().unwrap_or("").to_string(),
                a["model"]["primary"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                if a["default"].as_bool() == Some(true) {
                    "yes".into()
                } else {
                    String::new()
                },
            ]
        })
        .collect();
    outln!(
        "{}",
        table::render(&["ID", "NAME", "MODEL", "DEFAULT"], &rows)
    );
    Ok(ExitCode::SUCCESS)
}

fn sessions_table(result: &Value) -> String {
    let now = table::now_ms();
    let rows: Vec<Vec<String>> = result["sessions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| {
            let text = |k: &str| s[k].as_str().unwrap_or("").to_string();
            vec![
                text("key"),
                text("kind"),
                text("channel"),
                table::age(s["updatedAt"].as_i64().unwrap_or(now), now),
                text("label"),
                text("sessionId"),
            ]
        })
        .collect();
    table::render(
        &["KEY", "KIND", "CHANNEL", "UPDATED", "LABEL", "SESSION ID"],
        &rows,
    )
}

/// Who a history line is from: the role, and for a user-role message that no person typed here,
/// where it came from (its provenance, in the web page's words).
fn speaker(m: &Value) -> String {
    let role = m["role"].as_str().unwrap_or("?");
    let p = &m["provenance"];
    let Some(kind) = p["kind"].as_str() else {
        return role.to_string();
    };
    let from = p["fromSessionKey"].as_str().unwrap_or("another session");
    let origin = match kind {
        "agent" => format!("from {from} via sessions_send"),
        "subagent-announce" => format!("sub-agent report from {from}"),
        "announce" => format!("announce from {from}"),
        "reply" => format!("reply from {from}"),
        "send" => format!("sent by {from}"),
        "cron" => format!("cron job {}", p["jobId"].as_str().unwrap_or_default()),
        "inject" => "injected by an operator".to_string(),
        other => other.to_string(),
    };
    format!("{role} ({origin})")
}

/// A message's text; a skip token is marked as one (it ends a reply-back or an announce), not
/// shown as if it were a reply.
fn shown_text(m: &Value) -> String {
    let text = message_text(m);
    let what = match text.trim() {
        "REPLY_SKIP" => "ends the reply-back",
        "ANNOUNCE_SKIP" => "nothing announced",
        _ => return text,
    };
    format!("{} [skip token: {what}]", text.trim())
}

/// The readable text of a transcript message.
pub(crate) fn message_text(m: &Value) -> String {
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| match b["type"].as_str() {
                Some("text") => b["text"].as_str().unwrap_or_default().to_string(),
                Some("toolCall") => format!(
                    "[tool call {} {}]",
                    b["name"].as_str().unwrap_or("?"),
                    b["arguments"]
                ),
                Some("thinking") => "[thinking]".to_string(),
                Some(other) => format!("[{other}]"),
                None => String::new(),
            })
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    }
}

pub(crate) fn without_nulls(mut value: Value) -> Value {
    if let Value::Object(map) = &mut value {
        map.retain(|_, v| !v.is_null());
    }
    value
}

#[cfg(test)]
mod tests {
    use super::shortened;

    #[test]
    fn shortened_cuts_at_a_word_boundary_with_an_ellipsis() {
        assert_eq!(shortened("Send a message", 72), "Send a message");
        assert_eq!(
            shortened("Read another session's transcript, newest page first", 30),
            "Read another session's…"
        );
        assert_eq!(shortened("abcdefghij", 5), "abcd…");
    }
}
