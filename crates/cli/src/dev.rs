//! `switchboard dev …`: hidden developer commands. `dev seed` fills a state dir with synthetic
//! sessions for the benchmarks (BENCHMARKS.md, `bench/foundation.sh`).
//!
//! Seeding goes through the engine's `Store` in this process, not through a gateway, so it must
//! not run while a gateway uses the same state dir (two writers would wait on each other's locks).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};
use switchboard_core::clock::{Clock, SystemClock};

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use serde_json::json;
use switchboard_core::Engine;
use switchboard_core::store::NewSession;
use switchboard_protocol::message::{
    AssistantMessage, ContentBlock, StopReason, TranscriptMessage, Usage, UserContent, UserMessage,
};
use tokio::task::JoinSet;

use crate::settings::GlobalArgs;

/// Appends in flight at once. The store's writer commits up to 512 queued jobs per transaction,
/// so keeping about two groups queued lets every commit carry a full group.
const IN_FLIGHT: usize = 1024;

/// Messages per `append` call when filling one big transcript.
const BIG_BATCH: usize = 1000;

#[derive(Subcommand)]
pub enum DevCommand {
    /// Fill the state dir with synthetic sessions (stop the gateway first). Adds to what is there:
    /// an existing key gets more messages.
    Seed(SeedArgs),
}

#[derive(Args)]
pub struct SeedArgs {
    /// Sessions to write: `agent:main:bench-000000`, `agent:main:bench-000001`, …
    #[arg(long, default_value_t = 0)]
    sessions: usize,
    /// Messages per session, alternating user and assistant.
    #[arg(long, default_value_t = 2)]
    messages_per_session: usize,
    /// Key of one extra session that gets `--big-messages` messages, e.g. `bench-big`.
    #[arg(long, requires = "big_messages")]
    big_session: Option<String>,
    /// Messages in the big session.
    #[arg(long, requires = "big_session")]
    big_messages: Option<usize>,
}

pub async fn run(global: &GlobalArgs, command: DevCommand) -> Result<ExitCode> {
    match command {
        DevCommand::Seed(args) => seed(global, args).await,
    }
}

/// What one part of the seed wrote.
struct Written {
    sessions: usize,
    messages: usize,
    elapsed: Duration,
}

async fn seed(global: &GlobalArgs, args: SeedArgs) -> Result<ExitCode> {
    if args.sessions == 0 && args.big_session.is_none() {
        anyhow::bail!(
            "nothing to seed: pass --sessions N and/or --big-session KEY --big-messages K"
        );
    }
    let home = global.home();
    let _lock = crate::state_lock::take_to_write(&home, "switchboard dev seed")?;
    let loaded = global.load_config()?;
    loaded.warn_unknown_paths();
    let started = Instant::now();
    let engine = Engine::open(&home, loaded.config)
        .await
        .with_context(|| format!("opening the store in {}", home.display()))?;
    let opened = started.elapsed();

    // The big transcript first and alone, so its time is its own.
    let big = match (&args.big_session, args.big_messages) {
        (Some(key), Some(count)) => Some((key.clone(), seed_big(&engine, key, count).await?)),
        _ => None,
    };
    let many = if args.sessions > 0 {
        Some(seed_many(&engine, args.sessions, args.messages_per_session).await?)
    } else {
        None
    };
    let close_started = Instant::now();
    engine.close().await;
    let closed = close_started.elapsed();
    let total = started.elapsed();

    if global.json {
        let part = |w: &Written| json!({"sessions": w.sessions, "messages": w.messages, "ms": millis(w.elapsed)});
        let out = json!({
            "stateDir": home.display().to_string(),
            "openMs": millis(opened),
            "sessions": many.as_ref().map(part),
            "bigSession": big.as_ref().map(|(key, w)| json!({"key": key, "messages": w.messages, "ms": millis(w.elapsed)})),
            "closeMs": millis(closed),
            "totalMs": millis(total),
        });
        outln!("{out}");
        return Ok(ExitCode::SUCCESS);
    }
    if let Some((key, w)) = &big {
        outln!(
            "seeded {key} with {} messages in {:.2} s ({:.0} messages/s)",
            w.messages,
            w.elapsed.as_secs_f64(),
            per_second(w.messages, w.elapsed)
        );
    }
    if let Some(w) = &many {
        outln!(
            "seeded {} sessions × {} messages ({} messages) in {:.2} s ({:.0} sessions/s)",
            w.sessions,
            args.messages_per_session,
            w.messages,
            w.elapsed.as_secs_f64(),
            per_second(w.sessions, w.elapsed)
        );
    }
    outln!(
        "total {:.2} s (open {:.0} ms, final commit {:.0} ms) in {}",
        total.as_secs_f64(),
        millis(opened),
        millis(closed),
        home.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// `count` sessions of `per_session` messages each, one `append` per session, up to `IN_FLIGHT`
/// of them queued at once so the writer's group commits stay full.
async fn seed_many(engine: &Arc<Engine>, count: usize, per_session: usize) -> Result<Written> {
    let started = Instant::now();
    let base = SystemClock.now_ms() - (count * per_session.max(1)) as i64;
    let mut tasks = JoinSet::new();
    let mut messages = 0;
    for i in 0..count {
        if tasks.len() >= IN_FLIGHT {
            messages += joined(tasks.join_next().await)?;
        }
        let key = engine
            .resolver()
            .canonical(&format!("bench-{i:06}"), None)?;
        let new = engine.resolver().new_session(&key);
        let batch: Vec<TranscriptMessage> = (0..per_session)
            .map(|m| synthetic_message(m, base + (i * per_session + m) as i64))
            .collect();
        let engine = engine.clone();
        tasks.spawn(async move { append(&engine, new, batch).await });
    }
    while let Some(done) = tasks.join_next().await {
        messages += joined(Some(done))?;
    }
    Ok(Written {
        sessions: count,
        messages,
        elapsed: started.elapsed(),
    })
}

/// One session of `count` messages, appended in order in batches of `BIG_BATCH`.
async fn seed_big(engine: &Arc<Engine>, key: &str, count: usize) -> Result<Written> {
    let started = Instant::now();
    let key = engine.resolver().canonical(key, None)?;
    let new = engine.resolver().new_session(&key);
    let base = SystemClock.now_ms() - count as i64;
    let mut written = 0;
    while written < count {
        let end = (written + BIG_BATCH).min(count);
        let batch = (written..end)
            .map(|m| synthetic_message(m, base + m as i64))
            .collect();
        written += append(engine, new.clone(), batch).await?;
    }
    if count == 0 {
        engine.store().create(new).await?;
    }
    Ok(Written {
        sessions: 1,
        messages: written,
        elapsed: started.elapsed(),
    })
}

/// Appends `batch` to `new.key`, creating the session when it is absent; answers how many
/// messages were written.
async fn append(engine: &Engine, new: NewSession, batch: Vec<TranscriptMessage>) -> Result<usize> {
    let key = new.key.clone();
    let appended = engine
        .store()
        .append(&key, Some(new), batch)
        .await
        .with_context(|| format!("appending to {key}"))?;
    Ok(appended.seqs.len())
}

fn joined(done: Option<Result<Result<usize>, tokio::task::JoinError>>) -> Result<usize> {
    match done {
        Some(result) => result.context("a seeding task failed")?,
        None => Ok(0),
    }
}

/// Message `n` of a transcript: even ones from the user, odd ones the mock model's reply.
fn synthetic_message(n: usize, timestamp: i64) -> TranscriptMessage {
    if n.is_multiple_of(2) {
        TranscriptMessage::User(UserMessage {
            content: UserContent::Text(format!(
                "bench message {n}: what is the status of item {}?",
                n / 2
            )),
            timestamp,
            provenance: None,
            origin: None,
        })
    } else {
        TranscriptMessage::Assistant(AssistantMessage {
            content: vec![ContentBlock::text(format!(
                "bench reply {n}: item {} is fine.",
                n / 2
            ))],
            provider: "mock".into(),
            model: "mock".into(),
            usage: Usage {
                input: 10,
                output: 5,
                total_tokens: 15,
                ..Usage::default()
            },
            stop_reason: StopReason::Stop,
            error_message: None,
            timestamp,
            origin: None,
        })
    }
}

fn millis(d: Duration) -> f64 {
    (d.as_secs_f64() * 10_000.0).round() / 10.0
}

fn per_second(n: usize, d: Duration) -> f64 {
    n as f64 / d.as_secs_f64().max(1e-9)
}
