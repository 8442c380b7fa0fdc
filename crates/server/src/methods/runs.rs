//! `chat.send`, `agent`, `agent.wait`, `chat.abort`.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_core::runtime::lanes::Lane;
use switchboard_core::runtime::{Deliver, RunRequest, WaitOutcome, user_message};
use switchboard_core::store::EntryPatch;
use switchboard_core::store::RunStatus;
use switchboard_core::{Engine, access, keys, sessions};
use switchboard_protocol::runs::{
    AgentParams, AgentWaitParams, ChatAbortParams, ChatSendParams, RunResult,
};
use switchboard_protocol::sessions::{DeliveryContext, Patch};
use switchboard_protocol::{ErrorCode, ErrorShape};

use super::{Interim, MethodResult, core_err, to_value};

const DEFAULT_WAIT_MS: i64 = 30_000;
const MAX_WAIT_MS: i64 = 600_000;

/// The canonical key of a reference (key or sessionId); a new key's session is created by the run.
async fn target_key(
    engine: &Engine,
    reference: &str,
    agent_id: Option<&str>,
) -> Result<String, ErrorShape> {
    if keys::looks_like_session_id(reference.trim()) {
        return Ok(sessions::find(engine, reference, agent_id)
            .await
            .map_err(core_err)?
            .key);
    }
    Ok(engine
        .canonical_key(reference, agent_id)
        .map_err(core_err)?
        .into_string())
}

fn new_run(engine: &Engine, key: &str, message: &str, lane: Lane) -> RunRequest {
    let mut request = RunRequest::new(key, lane);
    request.create = Some(engine.new_session(&keys::SessionKey::from_canonical(key.to_string())));
    request.message = Some(user_message(message, None));
    request
}

/// The operator's standalone `/send on|off|inherit`: sets the session's override, no run.
async fn send_command(engine: &Engine, key: &str, message: &str) -> Option<MethodResult> {
    let policy = match access::send_command(message)? {
        Ok(policy) => policy,
        Err(e) => return Some(Err(ErrorShape::new(ErrorCode::InvalidRequest, e))),
    };
    let patch = EntryPatch {
        send_policy: policy.map_or(Patch::Clear, |p| Patch::Set(p.to_string())),
        ..EntryPatch::default()
    };
    let session = keys::SessionKey::from_canonical(key.to_string());
    let result = async {
        engine.store().create(engine.new_session(&session)).await?;
        engine.store().patch(key, patch).await
    }
    .await;
    Some(match result {
        Ok(_) => {
            let shown = policy.unwrap_or("inherit (the configured policy)");
            Ok(json!({
                "status": "ok",
                "command": "/send",
                "sessionKey": session.display(),
                "sendPolicy": policy,
                "reply": format!("Send policy for {}: {shown}.", session.display()),
            }))
        }
        Err(e) => Err(core_err(e.into())),
    })
}

pub async fn chat_send(engine: &Arc<Engine>, p: ChatSendParams) -> MethodResult {
    let key = target_key(engine, &p.session_key, None).await?;
    if let Some(answer) = send_command(engine, &key, &p.message).await {
        return answer;
    }
    access::check_send(engine, &key).await.map_err(core_err)?;
    let mut request = new_run(engine, &key, &p.message, Lane::Main);
    request.idempotency_key = p.idempotency_key;
    request.timeout = p
        .timeout_ms
        .filter(|ms| *ms > 0)
        .map(|ms| Duration::from_millis(ms as u64));
    let accepted = engine.submit_run(request).await.map_err(core_err)?;
    Ok(json!({"runId": accepted.run_id, "status": "started", "sessionKey": accepted.session_key}))
}

pub async fn agent(engine: &Arc<Engine>, p: AgentParams, interim: Interim<'_>) -> MethodResult {
    let lane = match p.lane.as_deref() {
        None => Lane::Main,
        Some(name) => Lane::parse(name).ok_or_else(|| {
            ErrorShape::new(
                ErrorCode::InvalidRequest,
                format!(
                    "agent: lane {name:?} is not a lane; expected main, nested, subagent or cron"
                ),
            )
        })?,
    };
    let key = target_key(engine, &p.session_key, p.agent_id.as_deref()).await?;
    access::check_send(engine, &key).await.map_err(core_err)?;
    let mut request = new_run(engine, &key, &p.message, lane);
    if let Some(new) = &mut request.create {
        new.label = p.label;
        new.spawned_by = match p.spawned_by {
            Some(parent) => Some(
                engine
                    .canonical_key(&parent, p.agent_id.as_deref())
                    .map_err(core_err)?
                    .into_string(),
            ),
            None => None,
        };
    }
    if p.deliver {
        request.deliver = Some(Deliver {
            kind: "reply",
            route: explicit_route(p.channel, p.to, p.account_id)?,
        });
    }
    request.idempotency_key = p.idempotency_key;
    request.extra_system_prompt = p.extra_system_prompt;
    request.model = p.model;
    request.timeout = p
        .timeout
        .filter(|s| *s > 0)
        .map(|s| Duration::from_secs(s as u64));
    let accepted = engine.submit_run(request).await.map_err(core_err)?;
    interim(
        json!({"runId": accepted.run_id, "status": "accepted", "acceptedAt": accepted.accepted_at}),
    );
    // The run ends by itself (its own timeout bounds it); wait for as long as it takes.
    let outcome = engine
        .wait_run(&accepted.run_id, Duration::MAX)
        .await
        .map_err(core_err)?;
    let result = run_result(outcome);
    let summary = result
        .reply
        .as_deref()
        .or(result.error.as_deref())
        .map(|s| s.chars().take(200).collect::<String>())
        .unwrap_or_default();
    let mut payload = to_value(&result)?;
    if let Value::Object(map) = &mut payload {
        map.insert("summary".into(), Value::from(summary));
        if let Some(reply) = &result.reply {
            map.insert("result".into(), json!({"text": reply}));
        }
    }
    Ok(payload)
}

/// `channel` + `to` of `agent {deliver: true}`: both or neither (then the session's route).
fn explicit_route(
    channel: Option<String>,
    to: Option<String>,
    account_id: Option<String>,
) -> Result<Option<DeliveryContext>, ErrorShape> {
    match (channel, to) {
        (None, None) => Ok(None),
        (Some(channel), Some(to)) => Ok(Some(DeliveryContext {
            channel: channel.trim().to_lowercase(),
            to,
            account_id,
            thread_id: None,
        })),
        _ => Err(ErrorShape::new(
            ErrorCode::InvalidRequest,
            "agent: give channel and to together (or neither, to deliver to the session's route)",
        )),
    }
}

pub async fn agent_wait(engine: &Engine, p: AgentWaitParams) -> MethodResult {
    let ms = p
        .timeout_ms
        .unwrap_or(DEFAULT_WAIT_MS)
        .clamp(0, MAX_WAIT_MS) as u64;
    let outcome = engine
        .wait_run(p.run_id.trim(), Duration::from_millis(ms))
        .await
        .map_err(core_err)?;
    to_value(run_result(outcome))
}

pub async fn chat_abort(engine: &Engine, p: ChatAbortParams) -> MethodResult {
    let key = target_key(engine, &p.session_key, None).await?;
    let aborted = engine.abort_runs(&key, p.run_id.as_deref());
    Ok(json!({"ok": true, "aborted": !aborted.is_empty(), "runIds": aborted, "sessionKey": key}))
}

fn run_result(outcome: WaitOutcome) -> RunResult {
    let r = outcome.record;
    let (status, state) = if outcome.wait_timed_out {
        ("timeout".to_string(), Some(r.status.as_str().to_string()))
    } else {
        (r.status.as_str().to_string(), None)
    };
    RunResult {
        run_id: r.run_id,
        status,
        session_key: r.session_key,
        state,
        wait_timed_out: outcome.wait_timed_out,
        started_at: r.started_at,
        ended_at: r.ended_at,
        error: r.error,
        reply: if r.status == RunStatus::Ok || r.result.is_some() {
            r.result
        } else {
            None
        },
    }
}
