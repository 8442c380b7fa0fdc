//! The agent workloads of `bench/agent_load.py`, made by real tool calls: the model is asked for
//! them with `@tool NAME {JSON}` (bench/tool_mock.py on either gateway, or our `builtin/scripted`).
//!
//! send:  per sample, a warm-up turn creates the target session, then the timed turn in a caller
//!        session asks for `sessions_send` to it with a wait; the target's transcript must then
//!        hold the message. Keys carry the round, so each sample has a fresh pair. Before the
//!        next sample both transcripts must stay unchanged for `--send-settle-s`: the sample's
//!        reply-back loop and announce (six more model calls by default) run in the background,
//!        and measured back to back they ran inside the next sample's timed turn, or inside the
//!        next target's block, on the same cores and the same mock model.
//! spawn: N turns over R requester sessions (one connection each), each asking for one
//!        `sessions_spawn`, then the requesters' transcripts are read until every child has
//!        announced back. Ops are the turns; the block's CPU runs until all announced.

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use serde_json::{Value, json};
use tokio::task::JoinSet;

use super::conn::Conn;
use super::target::Target;
use super::workload::{Block, Meter, Plan, ms_since};

pub async fn send(target: &Target, plan: &Plan, block: &mut Block) -> Result<()> {
    let mut conn = target.connect().await?;
    let mut cpu_ms = 0.0;
    let t0 = Instant::now();
    for i in 0..plan.sends {
        let round = block.round;
        let to = format!("agent:main:bench-target-r{round}-{i}");
        let from = format!("agent:main:bench-caller-r{round}-{i}");
        let marker = format!("ping r{round}-{i} {}", std::process::id());
        let call = json!({"sessionKey": to, "message": marker, "timeoutSeconds": 30});
        let sample = async {
            conn.turn(&to, "hello").await?;
            let cpu0 = target.cpu_ms();
            let t0 = Instant::now();
            conn.turn(&from, &format!("@tool sessions_send {call}"))
                .await?;
            let elapsed = ms_since(t0);
            cpu_ms += target.cpu_ms().zip(cpu0).map_or(0.0, |(b, a)| b - a);
            if !target.is_floor()
                && !history(&mut conn, &to, 20)
                    .await?
                    .to_string()
                    .contains(&marker)
            {
                bail!("the target's transcript lacks the sent message");
            }
            if !target.is_floor() {
                settle(&mut conn, &[&to, &from], plan.send_settle).await?;
            }
            Ok::<f64, anyhow::Error>(elapsed)
        };
        match sample.await {
            Ok(ms) => block.latencies_ms.push(ms),
            Err(e) => block.error(&e),
        }
    }
    block.wall_ms = ms_since(t0);
    block.cpu_ms = target.pid.map(|_| cpu_ms);
    conn.close().await;
    Ok(())
}

/// Waits until the sessions' transcripts stay unchanged for `quiet` (five minutes at most).
async fn settle(conn: &mut Conn, keys: &[&str], quiet: Duration) -> Result<()> {
    let (mut seen, mut since, t0) = (Vec::new(), Instant::now(), Instant::now());
    while t0.elapsed() < Duration::from_secs(300) {
        let mut now = Vec::with_capacity(keys.len());
        for key in keys {
            // The reference answers UNAVAILABLE while it rebuilds a history: not quiet yet.
            now.push(
                history(conn, key, 200)
                    .await
                    .ok()
                    .map(|m| m.to_string().len()),
            );
        }
        if now != seen || now.contains(&None) {
            (seen, since) = (now, Instant::now());
        } else if since.elapsed() >= quiet {
            return Ok(());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bail!("the sessions {keys:?} did not settle within 300 s")
}

async fn history(conn: &mut Conn, key: &str, limit: usize) -> Result<Value> {
    let mut history = conn
        .call("chat.history", json!({"sessionKey": key, "limit": limit}))
        .await?;
    Ok(history["messages"].take())
}

/// Child session keys of the sub-agent announces among these messages: ours are marked
/// `provenance.kind == "subagent-announce"`; the reference runs them as requester runs whose id
/// is `announce:v1:<child session key>:<child run id>` (as bench/agent_load.py counts them).
fn announces(messages: &Value) -> HashSet<String> {
    let mut children = HashSet::new();
    for m in messages.as_array().into_iter().flatten() {
        if m["provenance"]["kind"] == "subagent-announce" {
            children.insert(m["provenance"]["fromSessionKey"].to_string());
        } else if m["role"] == "assistant"
            && let Some(run) = m["__openclaw"]["runId"].as_str()
            && let Some(rest) = run.strip_prefix("announce:v1:")
        {
            children.insert(
                rest.rsplit_once(':')
                    .map_or(rest, |(child, _)| child)
                    .into(),
            );
        }
    }
    children
}

pub async fn spawn(target: &Target, plan: &Plan, block: &mut Block) -> Result<()> {
    let keys: Vec<String> = (0..plan.requesters.clamp(1, plan.spawns.max(1)))
        .map(|w| format!("agent:main:bench-spawner-r{}-{w}", block.round))
        .collect();
    let mut conns = Vec::new();
    for _ in &keys {
        conns.push(target.connect().await?);
    }
    let deadline = Instant::now() + Duration::from_secs_f64(plan.spawn_timeout_s);
    let next = Arc::new(AtomicUsize::new(0));
    let meter = Meter::start(target);
    let t0 = Instant::now();
    let mut tasks = JoinSet::new();
    for (key, mut conn) in keys.iter().cloned().zip(conns) {
        let (next, total) = (next.clone(), plan.spawns);
        let mut part = Block::new(block.workload, target, block.round);
        tasks.spawn(async move {
            let mut i = next.fetch_add(1, Ordering::Relaxed);
            while i < total && Instant::now() < deadline {
                let task = json!({"task": format!("child task {i}")});
                let t0 = Instant::now();
                match conn
                    .turn(&key, &format!("@tool sessions_spawn {task}"))
                    .await
                {
                    Ok(_) => part.latencies_ms.push(ms_since(t0)),
                    Err(e) => part.error(&e),
                }
                i = next.fetch_add(1, Ordering::Relaxed);
            }
            conn.close().await;
            (key, part)
        });
    }
    let mut done = Vec::new();
    while let Some(joined) = tasks.join_next().await {
        let (key, part) = joined?;
        done.push((key, part.latencies_ms.len()));
        block.merge(part);
    }
    if !target.is_floor() && until_announced(target, &done, deadline).await? {
        block.announced_ms = Some(ms_since(t0));
    }
    meter.stop(target, block);
    Ok(())
}

/// Reads the requesters' transcripts until each holds an announce per spawn that succeeded;
/// answers whether all came before the deadline.
async fn until_announced(
    target: &Target,
    done: &[(String, usize)],
    deadline: Instant,
) -> Result<bool> {
    let mut conn = target.connect().await?;
    let mut seen = vec![0; done.len()];
    loop {
        for ((key, spawned), seen) in done.iter().zip(seen.iter_mut()) {
            if *seen < *spawned {
                // The reference may answer "history is rebuilding" under load: try again later.
                if let Ok(messages) = history(&mut conn, key, 1000).await {
                    *seen = announces(&messages).len();
                }
            }
        }
        if done
            .iter()
            .zip(&seen)
            .all(|((_, spawned), seen)| seen >= spawned)
        {
            conn.close().await;
            return Ok(true);
        }
        if Instant::now() >= deadline {
            conn.close().await;
            return Ok(false);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}
