//! `switchboard bench`: a load client of the gateway protocol (v4) that runs the standard
//! workload in interleaved rounds against several gateways at once (ours, the reference) and the
//! floor, a do-nothing v4 server in this binary, and prints every figure beside the floor's
//! (docs/benchmarks.md).

mod agents;
mod conn;
mod floor;
mod report;
mod target;
mod workload;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use serde_json::json;

use floor::FloorProcess;
use target::Target;
use workload::{Plan, Workload};

#[derive(Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct BenchArgs {
    #[command(subcommand)]
    command: Option<BenchCommand>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Subcommand)]
enum BenchCommand {
    /// The floor server alone (the bench starts it as its child).
    #[command(hide = true)]
    Floor(floor::FloorArgs),
}

#[derive(Args)]
struct RunArgs {
    /// A target: `NAME=ws://HOST:PORT[,token=TOKEN][,pid=PID]` (the PID to read its CPU from
    /// /proc), or `floor`. Repeat for several; each round visits them in this order.
    #[arg(long = "target", value_name = "SPEC")]
    targets: Vec<String>,
    /// The workloads, in the order each round runs them.
    #[arg(
        long,
        value_delimiter = ',',
        value_enum,
        default_value = "health,list,history,turn,parallel,send,spawn"
    )]
    workloads: Vec<Workload>,
    /// Rounds: each runs every workload's block on every target.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Calls per block of `health`, `list` and `history`.
    #[arg(long, default_value_t = 50)]
    calls: usize,
    /// Warm turns per `turn` block.
    #[arg(long, default_value_t = 20)]
    turns: usize,
    /// Sessions (one connection each) of a `parallel` block.
    #[arg(long, default_value_t = 20)]
    parallel: usize,
    /// Turns of a `parallel` block, over all its sessions.
    #[arg(long, default_value_t = 200)]
    parallel_turns: usize,
    /// `sessions_send` samples per `send` block.
    #[arg(long, default_value_t = 5)]
    sends: usize,
    /// After each `sessions_send` sample, how long both transcripts must stay unchanged before
    /// the next: its reply-back loop and announce run in the background after the timed turn.
    #[arg(long, default_value_t = 1.0)]
    send_settle_s: f64,
    /// Spawns per `spawn` block.
    #[arg(long, default_value_t = 20)]
    spawns: usize,
    /// Requester sessions of a `spawn` block.
    #[arg(long, default_value_t = 5)]
    spawn_requesters: usize,
    /// How long a `spawn` block may take until every child has announced.
    #[arg(long, default_value_t = 300.0)]
    spawn_timeout_s: f64,
    /// The session of the warm turns (`parallel` uses `KEY-par-N`).
    #[arg(long, default_value = "agent:main:bench-turn")]
    turn_session: String,
    /// The session `history` reads (default: the turn session).
    #[arg(long)]
    history_session: Option<String>,
    /// Leave the other targets running during a block. By default each block runs with every
    /// other target's process stopped (`SIGSTOP`, resumed after it): one gateway's background
    /// work ran inside another's timed blocks on the same two cores.
    #[arg(long)]
    no_hold: bool,
    /// Also write every block and summary as JSON lines to this file.
    #[arg(long)]
    out: Option<PathBuf>,
}

pub async fn run(args: BenchArgs) -> Result<ExitCode> {
    match args.command {
        Some(BenchCommand::Floor(floor)) => floor::serve(floor).await,
        None => bench(args.run).await,
    }
}

async fn bench(args: RunArgs) -> Result<ExitCode> {
    let mut targets = args
        .targets
        .iter()
        .map(|spec| Target::parse(spec))
        .collect::<Result<Vec<_>>>()?;
    if targets.is_empty() {
        bail!("no target: give --target NAME=ws://HOST:PORT (and --target floor)");
    }
    let plan = Plan {
        calls: args.calls,
        turns: args.turns,
        parallel: args.parallel,
        parallel_turns: args.parallel_turns,
        sends: args.sends,
        send_settle: std::time::Duration::from_secs_f64(args.send_settle_s),
        spawns: args.spawns,
        requesters: args.spawn_requesters,
        spawn_timeout_s: args.spawn_timeout_s,
        history_session: args
            .history_session
            .unwrap_or_else(|| args.turn_session.clone()),
        turn_session: args.turn_session,
    };
    // Warm every gateway up; the last one's answers are the floor's (compare.sh lists
    // switchboard after the reference).
    let mut answers = None;
    for target in targets.iter().filter(|t| !t.is_floor()) {
        eprintln!("bench: warming up {}", target.name);
        answers = Some(workload::warm_up(target, &plan).await?);
    }
    let floor = match targets.iter_mut().find(|t| t.is_floor()) {
        Some(target) => {
            let floor = FloorProcess::start(&answers.unwrap_or_default()).await?;
            target.url = floor.url.clone();
            target.pid = Some(floor.pid());
            Some(floor)
        }
        None => None,
    };
    let mut out = report::Out::open(args.out.as_deref())?;
    let mut blocks = Vec::new();
    let mirrored = targets.iter().rfind(|t| !t.is_floor());
    for round in 1..=args.rounds {
        for target in &targets {
            for &workload in &args.workloads {
                if let (true, Some(mirrored)) = (target.is_floor(), mirrored) {
                    floor::match_answer(mirrored, target, workload, &plan).await?;
                }
                eprintln!("bench: round {round}, {}, {}", target.name, workload.name());
                let held = (!args.no_hold).then(|| Held::all_but(&targets, target));
                if held.is_some() {
                    target.settle_cpu().await;
                }
                let block = workload::run_block(target, workload, &plan, round).await?;
                drop(held);
                out.line(&report::block_line(&block))?;
                blocks.push(block);
            }
        }
    }
    if let Some(target) = targets.iter().find(|t| t.is_floor()) {
        out.line(&floor_check(target).await?)?;
    }
    drop(floor);
    let mut summaries = Vec::new();
    for &workload in &args.workloads {
        for target in &targets {
            summaries.push(report::summarise(&blocks, workload, &target.name));
        }
    }
    for s in &summaries {
        let floor = summaries
            .iter()
            .find(|f| f.workload == s.workload && f.target == target::FLOOR);
        out.line(&report::summary_line(s, floor))?;
    }
    outln!("{}", report::table(&summaries));
    let failed = blocks.iter().any(|b| b.errors > 0);
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// While it lives, every target but the measured one is stopped; dropped, they go on.
struct Held<'a> {
    others: Vec<&'a Target>,
}

impl<'a> Held<'a> {
    fn all_but(targets: &'a [Target], measured: &Target) -> Self {
        // By process: one gateway under two names is not stopped while measured, nor is the
        // bench itself, and a target without a PID cannot be held.
        let own = Some(std::process::id());
        let others: Vec<&Target> = targets
            .iter()
            .filter(|t| t.pid.is_some() && t.pid != measured.pid && t.pid != own)
            .collect();
        for other in &others {
            other.signal("STOP");
        }
        Self { others }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        for other in &self.others {
            other.signal("CONT");
        }
    }
}

/// Whether the floor answered every request sent to it: its own count against ours.
async fn floor_check(target: &Target) -> Result<serde_json::Value> {
    let uncounted = std::sync::Arc::new(AtomicU64::new(0));
    let mut conn = conn::Conn::connect(&target.url, None, uncounted).await?;
    let answered = conn.call("floor.stats", json!({})).await?["answered"].as_u64();
    conn.close().await;
    let sent = target.sent.load(Ordering::Relaxed);
    Ok(json!({"floor": true, "sent": sent, "answered": answered}))
}
