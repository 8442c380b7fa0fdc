//! The standard workload, one block at a time: `health`, `sessions.list {limit:200}`,
//! `chat.history {limit:50}`, warm turns, and N sessions' turns in parallel. `send` and `spawn`
//! are in `agents.rs`.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use anyhow::Result;
use serde_json::{Value, json};
use tokio::task::JoinSet;

use super::conn::Conn;
use super::target::Target;

#[derive(Clone, Copy, PartialEq, Eq, Debug, clap::ValueEnum)]
pub enum Workload {
    Health,
    List,
    History,
    Turn,
    Parallel,
    Send,
    Spawn,
}

impl Workload {
    /// The method and parameters of a call workload (`health`, `list`, `history`); `None` for
    /// the others.
    pub fn call(self, plan: &Plan) -> Option<(&'static str, Value)> {
        match self {
            Workload::Health => Some(("health", json!({}))),
            Workload::List => Some(("sessions.list", json!({"limit": 200}))),
            Workload::History => Some((
                "chat.history",
                json!({"sessionKey": plan.history_session, "limit": 50}),
            )),
            _ => None,
        }
    }

    /// Its name on the command line (`--workloads`) and in the JSON lines' `key`.
    pub fn key(self) -> &'static str {
        match self {
            Self::Health => "health",
            Self::List => "list",
            Self::History => "history",
            Self::Turn => "turn",
            Self::Parallel => "parallel",
            Self::Send => "send",
            Self::Spawn => "spawn",
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::Health => "health",
            Self::List => "sessions.list {limit:200}",
            Self::History => "chat.history {limit:50}",
            Self::Turn => "warm turn",
            Self::Parallel => "parallel turns",
            Self::Send => "sessions_send with wait",
            Self::Spawn => "spawn burst",
        }
    }
}

/// How much of each workload a block does, and on which sessions.
pub struct Plan {
    pub calls: usize,
    pub turns: usize,
    pub parallel: usize,
    pub parallel_turns: usize,
    pub sends: usize,
    pub send_settle: std::time::Duration,
    pub spawns: usize,
    pub requesters: usize,
    pub spawn_timeout_s: f64,
    pub turn_session: String,
    pub history_session: String,
}

/// What one block measured.
pub struct Block {
    pub workload: Workload,
    pub target: String,
    pub round: usize,
    pub latencies_ms: Vec<f64>,
    pub errors: usize,
    pub first_error: Option<String>,
    pub wall_ms: f64,
    /// The target's CPU over the block, when its PID is known.
    pub cpu_ms: Option<f64>,
    /// `spawn`: from the first turn until every child had announced (`None`: not all did, or
    /// the floor, which announces nothing).
    pub announced_ms: Option<f64>,
}

impl Block {
    pub fn new(workload: Workload, target: &Target, round: usize) -> Self {
        Self {
            workload,
            target: target.name.clone(),
            round,
            latencies_ms: Vec::new(),
            errors: 0,
            first_error: None,
            wall_ms: 0.0,
            cpu_ms: None,
            announced_ms: None,
        }
    }

    pub fn error(&mut self, e: &anyhow::Error) {
        self.errors += 1;
        self.first_error.get_or_insert_with(|| format!("{e:#}"));
    }

    /// Adds what a task of the block measured.
    pub fn merge(&mut self, part: Block) {
        self.latencies_ms.extend(part.latencies_ms);
        self.errors += part.errors;
        if self.first_error.is_none() {
            self.first_error = part.first_error;
        }
    }
}

/// Wall clock and the target's CPU from `start` to `stop`.
pub struct Meter {
    t0: Instant,
    cpu0: Option<f64>,
}

impl Meter {
    pub fn start(target: &Target) -> Self {
        Self {
            cpu0: target.cpu_ms(),
            t0: Instant::now(),
        }
    }

    pub fn stop(self, target: &Target, block: &mut Block) {
        block.wall_ms = ms_since(self.t0);
        block.cpu_ms = target.cpu_ms().zip(self.cpu0).map(|(b, a)| b - a);
    }
}

pub fn ms_since(t0: Instant) -> f64 {
    t0.elapsed().as_secs_f64() * 1000.0
}

/// One block of `workload` against `target`; an error only when it could not connect.
pub async fn run_block(
    target: &Target,
    workload: Workload,
    plan: &Plan,
    round: usize,
) -> Result<Block> {
    let mut block = Block::new(workload, target, round);
    if let Some((method, params)) = workload.call(plan) {
        calls(target, method, params, plan.calls, &mut block).await?;
        return Ok(block);
    }
    match workload {
        Workload::Health | Workload::List | Workload::History => {} // calls, above
        Workload::Turn => turns(target, plan, &mut block).await?,
        Workload::Parallel => parallel(target, plan, &mut block).await?,
        Workload::Send => super::agents::send(target, plan, &mut block).await?,
        Workload::Spawn => super::agents::spawn(target, plan, &mut block).await?,
    }
    Ok(block)
}

async fn calls(
    target: &Target,
    method: &str,
    params: Value,
    n: usize,
    block: &mut Block,
) -> Result<()> {
    let call = async |conn: &mut Conn| conn.call(method, params.clone()).await.map(drop);
    sequential(target, n, block, call).await
}

/// Warm turns, one after the other, in the plan's turn session.
async fn turns(target: &Target, plan: &Plan, block: &mut Block) -> Result<()> {
    let turn = async |conn: &mut Conn| conn.turn(&plan.turn_session, "warm turn").await.map(drop);
    sequential(target, plan.turns, block, turn).await
}

/// `n` operations one after the other on one connection, each timed.
async fn sequential(
    target: &Target,
    n: usize,
    block: &mut Block,
    mut op: impl AsyncFnMut(&mut Conn) -> Result<()>,
) -> Result<()> {
    let mut conn = target.connect().await?;
    let meter = Meter::start(target);
    for _ in 0..n {
        let t0 = Instant::now();
        match op(&mut conn).await {
            Ok(()) => block.latencies_ms.push(ms_since(t0)),
            Err(e) => block.error(&e),
        }
    }
    meter.stop(target, block);
    conn.close().await;
    Ok(())
}

/// `parallel_turns` turns spread over `parallel` sessions, one connection each.
async fn parallel(target: &Target, plan: &Plan, block: &mut Block) -> Result<()> {
    let mut conns = Vec::new();
    for _ in 0..plan.parallel.max(1) {
        conns.push(target.connect().await?);
    }
    let next = Arc::new(AtomicUsize::new(0));
    let meter = Meter::start(target);
    let mut tasks = JoinSet::new();
    for (w, mut conn) in conns.into_iter().enumerate() {
        let (next, total) = (next.clone(), plan.parallel_turns);
        let key = format!("{}-par-{w}", plan.turn_session);
        let mut part = Block::new(block.workload, target, block.round);
        tasks.spawn(async move {
            while next.fetch_add(1, Ordering::Relaxed) < total {
                let t0 = Instant::now();
                match conn.turn(&key, "parallel turn").await {
                    Ok(_) => part.latencies_ms.push(ms_since(t0)),
                    Err(e) => part.error(&e),
                }
            }
            conn.close().await;
            part
        });
    }
    while let Some(part) = tasks.join_next().await {
        block.merge(part?);
    }
    meter.stop(target, block);
    Ok(())
}

/// What the floor answers ([`super::floor`]): a turn's answers padded to the sizes the last real
/// target answered, and every call's the very payload it answered.
#[derive(Default)]
pub struct Learned {
    pub sizes: HashMap<String, usize>,
    pub payloads: HashMap<String, String>,
}

/// Before the rounds: one turn (the session's first) and one call of each method, so every
/// round measures a warm gateway; answers what it answered (the floor's answers).
pub async fn warm_up(target: &Target, plan: &Plan) -> Result<Learned> {
    let mut conn: Conn = target.connect().await?;
    let mut learned = Learned::default();
    let [send, wait] = conn.turn(&plan.turn_session, "first turn").await?;
    learned.sizes.insert("chat.send".to_string(), send);
    learned.sizes.insert("agent.wait".to_string(), wait);
    let calls = [Workload::Health, Workload::List, Workload::History];
    for (method, params) in calls.iter().filter_map(|w| w.call(plan)) {
        let payload = conn.call(method, params).await?;
        learned
            .payloads
            .insert(method.to_string(), payload.to_string());
    }
    conn.close().await;
    Ok(learned)
}
