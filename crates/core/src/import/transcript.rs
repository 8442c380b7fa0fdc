//! A reference transcript (one JSONL file: a `session` header, then events linked by
//! `parentId`) read as this gateway's transcript: the `message` events of its active branch —
//! from the last event back to the first through `parentId` — in order. User, assistant and
//! tool-result messages keep their content, tool calls and results; the reference's
//! provenance is read as ours. Other events (model and thinking changes, the reference's own
//! state) are not messages here.

use std::path::Path;

use serde_json::{Map, Value};
use switchboard_protocol::message::TranscriptMessage;

/// The events of the JSONL transcript at `path`, and how many lines could not be read (a
/// missing file: none, and one unread).
pub(super) fn events(path: &Path) -> (Vec<Value>, usize) {
    let Ok(text) = std::fs::read_to_string(path) else {
        return (Vec::new(), 1);
    };
    let mut unread = 0;
    let events = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| {
            let event = serde_json::from_str(l).ok();
            unread += usize::from(event.is_none());
            event
        })
        .collect();
    (events, unread)
}

/// The messages of a transcript's `events`; what is not a message here goes to `left_out`.
pub(super) fn messages(
    events: &[Value],
    key: &str,
    left_out: &mut Vec<String>,
) -> Vec<TranscriptMessage> {
    let mut skipped = 0;
    let messages: Vec<TranscriptMessage> = active_branch(events)
        .into_iter()
        .filter(|e| e["type"] == "message")
        .filter_map(|e| {
            let message = message(&e["message"]);
            skipped += usize::from(message.is_none());
            message
        })
        .collect();
    if skipped > 0 {
        left_out.push(format!(
            "{key}: {skipped} transcript messages that are not user, assistant or tool-result messages (the reference's custom ones)"
        ));
    }
    messages
}

/// The events from the first to the last one, following `parentId` back from the last.
fn active_branch(events: &[Value]) -> Vec<&Value> {
    let by_id: std::collections::HashMap<&str, &Value> = events
        .iter()
        .filter_map(|e| Some((e["id"].as_str()?, e)))
        .collect();
    let mut branch = Vec::new();
    let mut at = events.iter().rev().find(|e| e["type"] != "session");
    while let Some(event) = at {
        branch.push(event);
        if branch.len() > events.len() {
            break;
        }
        at = event["parentId"]
            .as_str()
            .and_then(|p| by_id.get(p).copied());
    }
    branch.reverse();
    branch
}

/// One reference message as ours, if it is a user, assistant or tool-result message.
fn message(raw: &Value) -> Option<TranscriptMessage> {
    let mut message = raw.as_object()?.clone();
    if message.get("role")?.as_str()? == "user" {
        provenance(&mut message);
    }
    message.remove("__openclaw");
    serde_json::from_value(Value::Object(message)).ok()
}

/// The reference's provenance (`kind`, `sourceSessionKey`, `sourceTool`, `jobId`, `runId`) as
/// ours: a cron job's prompt is `cron`, another session's message `agent`.
fn provenance(message: &mut Map<String, Value>) {
    let Some(Value::Object(theirs)) = message.remove("provenance") else {
        return;
    };
    let kind = match (
        theirs.get("sourceTool").and_then(Value::as_str),
        theirs.get("kind").and_then(Value::as_str),
    ) {
        (Some("cron"), _) => "cron",
        (_, Some("inter_session")) => "agent",
        (_, Some("external_user")) => return,
        (_, Some(other)) => other,
        _ => return,
    };
    let mut ours = Map::new();
    ours.insert("kind".into(), Value::String(kind.into()));
    for (theirs_name, ours_name) in [
        ("sourceSessionKey", "fromSessionKey"),
        ("jobId", "jobId"),
        ("runId", "runId"),
    ] {
        if let Some(value) = theirs.get(theirs_name) {
            ours.insert(ours_name.into(), value.clone());
        }
    }
    message.insert("provenance".into(), Value::Object(ours));
}
