//! What a connection receives beyond its own answers: run events of the sessions it subscribed
//! to (`sessions.subscribe {sessionKeys | all}`, the reference's `sessions.messages.subscribe
//! {key}`) or started runs in, and `sessions.changed` once it called `sessions.subscribe` (the
//! reference's clients call it with `{}` to keep their session lists live).

use std::collections::HashSet;

use serde_json::Value;
use switchboard_core::keys::SessionKey;
use switchboard_core::runtime::{RunEvent, RunEventData};
use switchboard_protocol::events::SessionsChanged;
use switchboard_protocol::sessions::{SessionsSubscribeParams, SessionsSubscribeResult};
use switchboard_protocol::{ErrorShape, RequestFrame};

use super::Conn;
use crate::ServerState;
use crate::methods;

/// Run events go only to the connections that want them: sessions named with
/// `sessions.subscribe`, every session with `{all: true}`, and the sessions this connection
/// starts runs in (`chat.send`, `agent`). `changes`: the connection gets `sessions.changed` and every `delivery` event.
#[derive(Default)]
pub(super) struct Subscriptions {
    pub(super) all: bool,
    pub(super) keys: HashSet<String>,
    pub(super) changes: bool,
}

pub(super) fn is_subscription(method: &str) -> bool {
    matches!(
        method,
        "sessions.subscribe"
            | "sessions.unsubscribe"
            | "sessions.messages.subscribe"
            | "sessions.messages.unsubscribe"
    )
}

/// `sessions.subscribe {sessionKeys?, all?}` / `sessions.unsubscribe {sessionKeys?, all?}`, and
/// the reference's `sessions.messages.subscribe {key}` / `…unsubscribe {key}` (one session's run
/// events): connection state, so answered here rather than by the method table.
pub(super) fn subscribe(
    state: &ServerState,
    conn: &Conn,
    req: &RequestFrame,
) -> Result<Value, ErrorShape> {
    methods::authorize(state, conn.grant(), &req.method, req.params.as_ref())?;
    let one_session = req.method.starts_with("sessions.messages.");
    let p: SessionsSubscribeParams = match one_session {
        true => {
            let p: methods::KeyParams = methods::parse(&req.method, req.params.clone())?;
            SessionsSubscribeParams {
                session_keys: vec![p.key],
                all: None,
            }
        }
        false => methods::parse(&req.method, req.params.clone())?,
    };
    let resolver = state.engine.resolver();
    let mut keys = Vec::with_capacity(p.session_keys.len());
    for key in &p.session_keys {
        let key = resolver.canonical(key, None).map_err(|e| e.to_shape())?;
        keys.push(key.into_string());
    }
    let mut subs = conn.subscriptions();
    if req.method.ends_with(".subscribe") {
        subs.all |= p.all.unwrap_or(false);
        subs.changes |= !one_session;
        subs.keys.extend(keys);
    } else {
        if p.all.unwrap_or(false) {
            subs.all = false;
            subs.keys.clear();
        }
        if !one_session && (p.all.unwrap_or(false) || keys.is_empty()) {
            subs.changes = false;
        }
        for key in &keys {
            subs.keys.remove(key);
        }
    }
    let shown = |k: &String| SessionKey::from_canonical(k.clone()).display().to_string();
    let mut listed: Vec<String> = subs.keys.iter().map(shown).collect();
    listed.sort();
    methods::to_value(SessionsSubscribeResult {
        ok: true,
        all: subs.all,
        session_keys: listed,
        // The subscription this call asked for is active (false after an unsubscribe).
        subscribed: req.method.ends_with(".subscribe"),
    })
}

/// A client that starts a run in a session receives that session's events (when it may).
pub(super) fn follow_own_runs(state: &ServerState, conn: &Conn, req: &RequestFrame) {
    if !matches!(req.method.as_str(), "chat.send" | "agent")
        || methods::authorize(state, conn.grant(), &req.method, req.params.as_ref()).is_err()
    {
        return;
    }
    let params = req.params.as_ref();
    let key = params
        .and_then(|p| p.get("sessionKey"))
        .and_then(Value::as_str);
    let agent = params
        .and_then(|p| p.get("agentId"))
        .and_then(Value::as_str);
    if let Some(Ok(key)) = key.map(|k| state.engine.resolver().canonical(k, agent)) {
        conn.subscriptions().keys.insert(key.into_string());
    }
}

/// The `sessions.changed` a run's lifecycle makes (queued, started, ended), if any.
pub(super) fn run_change(event: &RunEvent, ts: i64) -> Option<SessionsChanged> {
    let phase = match event.data {
        RunEventData::Queued => "queued",
        RunEventData::Started => "start",
        RunEventData::Ended { .. } => "end",
        _ => return None,
    };
    Some(SessionsChanged {
        session_key: event.session_key.display().to_string(),
        agent_id: event.session_key.agent_id().map(str::to_string),
        reason: "update".into(),
        phase: Some(phase.into()),
        run_id: Some(event.run_id.as_str().to_string()),
        ts,
    })
}
