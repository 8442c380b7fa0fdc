//! `switchboard cron list|add|run|enable|disable|rm|runs`: the scheduled jobs of a running
//! gateway (`cron.*`), as the reference's `openclaw cron` takes them.

use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};
use serde_json::{Value, json};

use crate::client_cmds::{print_json, request};
use crate::settings::GlobalArgs;
use crate::table;

#[derive(Subcommand)]
pub enum CronCommand {
    /// Every job (disabled ones too), with its schedule and next run.
    List,
    /// Add a job: `switchboard cron add --every 1h --message "Summarise the inbox"`.
    Add(AddArgs),
    /// Fire a job now, whatever its schedule (a disabled one too).
    Run(JobArg),
    /// Let the schedule fire a job again.
    Enable(JobArg),
    /// Keep a job, but let the schedule no longer fire it.
    Disable(JobArg),
    /// Remove a job (its session and transcript stay).
    #[command(alias = "remove")]
    Rm(JobArg),
    /// A job's past runs, newest first: when, how it ended, how long, what it said.
    Runs(RunsArgs),
}

#[derive(Args)]
pub struct AddArgs {
    /// The job's id (default: its name when that is a valid id, else a generated one).
    #[arg(long)]
    id: Option<String>,
    /// Its name.
    #[arg(long)]
    name: Option<String>,
    /// A cron expression in UTC, e.g. "0 9 * * 1-5" or @daily.
    #[arg(long, conflicts_with = "every", required_unless_present = "every")]
    cron: Option<String>,
    /// A fixed interval: 30s, 15m, 1h, 1d.
    #[arg(long)]
    every: Option<String>,
    /// What the agent is told at each firing.
    #[arg(long)]
    message: String,
    /// The agent that runs it (default: the default agent).
    #[arg(long)]
    agent: Option<String>,
    /// Deliver the agent's reply to a channel.
    #[arg(long)]
    deliver: bool,
    /// Add it disabled.
    #[arg(long)]
    disabled: bool,
}

#[derive(Args)]
pub struct JobArg {
    /// The job's id.
    id: String,
}

#[derive(Args)]
pub struct RunsArgs {
    /// The job's id.
    id: String,
    /// How many runs to show.
    #[arg(long, default_value_t = 20)]
    limit: u32,
}

pub async fn run(global: &GlobalArgs, cmd: CronCommand) -> Result<ExitCode> {
    match cmd {
        CronCommand::List => list(global).await,
        CronCommand::Add(args) => add(global, args).await,
        CronCommand::Run(job) => one(global, "cron.run", json!({"id": job.id}), "fired").await,
        CronCommand::Enable(job) => enabled(global, job, true).await,
        CronCommand::Disable(job) => enabled(global, job, false).await,
        CronCommand::Rm(job) => one(global, "cron.remove", json!({"id": job.id}), "removed").await,
        CronCommand::Runs(args) => runs(global, args).await,
    }
}

async fn list(global: &GlobalArgs) -> Result<ExitCode> {
    let params = json!({"includeDisabled": true, "limit": 200});
    let answer = request(global, "cron.list", params).await?;
    if global.json {
        return print_json(&answer);
    }
    let jobs = answer["jobs"].as_array().cloned().unwrap_or_default();
    if jobs.is_empty() {
        outln!("No cron jobs. Add one: switchboard cron add --every 1h --message \"…\"");
        return Ok(ExitCode::SUCCESS);
    }
    let now = table::now_ms();
    let rows: Vec<Vec<String>> = jobs
        .iter()
        .map(|job| {
            let next = job["nextRunAt"]
                .as_i64()
                .map_or("-".into(), |at| in_time(at, now));
            vec![
                table::cell(&job["id"]),
                table::cell(&job["agentId"]),
                table::cell(&job["scheduleText"]),
                if job["enabled"] == true { "yes" } else { "no" }.into(),
                next,
                crate::client_cmds::shortened(&table::cell(&job["message"]), 40),
            ]
        })
        .collect();
    let header = ["ID", "AGENT", "SCHEDULE", "ENABLED", "NEXT", "MESSAGE"];
    outln!("{}", table::render(&header, &rows));
    Ok(ExitCode::SUCCESS)
}

async fn add(global: &GlobalArgs, args: AddArgs) -> Result<ExitCode> {
    let schedule = match (args.cron, args.every) {
        (Some(cron), _) => json!({"cron": cron}),
        (None, Some(every)) => json!({"every": every}),
        (None, None) => unreachable!("clap requires --cron or --every"),
    };
    let params = json!({
        "id": args.id, "name": args.name, "schedule": schedule, "message": args.message,
        "agentId": args.agent, "deliver": args.deliver, "enabled": !args.disabled,
    });
    let params = crate::client_cmds::without_nulls(params);
    let job = request(global, "cron.add", params).await?;
    if global.json {
        return print_json(&job);
    }
    outln!(
        "added {} ({}), session {}",
        table::cell(&job["id"]),
        table::cell(&job["scheduleText"]),
        table::cell(&job["sessionKey"])
    );
    Ok(ExitCode::SUCCESS)
}

async fn enabled(global: &GlobalArgs, job: JobArg, enabled: bool) -> Result<ExitCode> {
    let params = json!({"id": job.id, "patch": {"enabled": enabled}});
    let said = if enabled { "enabled" } else { "disabled" };
    one(global, "cron.update", params, said).await
}

/// A call about one job; prints "<id> <said>" or the answer with `--json`.
async fn one(global: &GlobalArgs, method: &str, params: Value, said: &str) -> Result<ExitCode> {
    let id = table::cell(&params["id"]);
    let answer = request(global, method, params).await?;
    if global.json {
        return print_json(&answer);
    }
    match answer["runId"].as_str() {
        Some(run) => outln!(
            "{id} {said}: run {run} in {}",
            table::cell(&answer["sessionKey"])
        ),
        None => outln!("{id} {said}"),
    }
    Ok(ExitCode::SUCCESS)
}

async fn runs(global: &GlobalArgs, args: RunsArgs) -> Result<ExitCode> {
    let params = json!({"id": args.id, "limit": args.limit});
    let answer = request(global, "cron.runs", params).await?;
    if global.json {
        return print_json(&answer);
    }
    let now = table::now_ms();
    let rows: Vec<Vec<String>> = (answer["entries"].as_array().into_iter().flatten())
        .map(|run| {
            vec![
                run["runAtMs"]
                    .as_i64()
                    .map_or("-".into(), |at| format!("{} ago", table::age(at, now))),
                table::cell(&run["status"]),
                format!("{} ms", run["durationMs"].as_i64().unwrap_or(0)),
                crate::client_cmds::shortened(&table::cell(&run["summary"]).replace('\n', " "), 60),
            ]
        })
        .collect();
    match rows.is_empty() {
        true => outln!("{} has not run yet.", args.id),
        false => outln!(
            "{}",
            table::render(&["WHEN", "STATUS", "TOOK", "SAID"], &rows)
        ),
    }
    Ok(ExitCode::SUCCESS)
}

/// "in 5m" for a time to come, "due" for one past.
fn in_time(at: i64, now: i64) -> String {
    match at > now {
        true => format!("in {}", table::age(now, at)),
        false => "due".into(),
    }
}
