//! `cron.add` in the reference's shape: `{name, enabled, schedule: {kind, …}, sessionTarget,
//! wakeMode, payload: {kind: "agentTurn", message}, delivery: {mode}}` is read into ours
//! (`schedule`, `message`, `deliver`, `tz`). What this gateway cannot do as asked (a one-shot
//! `at`, a main-session job, a command payload, a per-job model, webhook delivery) is refused
//! with an error that says what is accepted, never stored half-understood.

use serde_json::{Map, Value, json};
use switchboard_protocol::cron::CronAddParams;

use crate::error::{CoreError, CoreResult};

/// `p` with the reference's fields folded into ours.
pub(super) fn fold(mut p: CronAddParams) -> CoreResult<CronAddParams> {
    if let Value::Object(schedule) = &p.schedule
        && schedule.contains_key("kind")
    {
        let (ours, tz) = schedule_of(schedule)?;
        p.schedule = ours;
        if tz.is_some() {
            p.tz = tz;
        }
    }
    match p.session_target.as_deref().map(str::trim) {
        None | Some("isolated") => {}
        Some(other) => {
            return Err(invalid(format!(
                "sessionTarget: {other:?} is not supported; expected \"isolated\" (each job \
                 runs in a session of its own, agent:<agentId>:cron:<id>)"
            )));
        }
    }
    match p.wake_mode.as_deref().map(str::trim) {
        None | Some("now" | "next-heartbeat") => {}
        Some(other) => {
            return Err(invalid(format!(
                "wakeMode: {other:?} is not a wake mode; expected \"now\" or \"next-heartbeat\""
            )));
        }
    }
    if let Some(payload) = p.payload.take() {
        let message = payload_message(&payload)?;
        if !p.message.is_empty() && p.message != message {
            return Err(invalid(
                "message and payload.message differ; give the text once".to_string(),
            ));
        }
        p.message = message;
    }
    if let Some(delivery) = p.delivery.take() {
        let deliver = delivery_mode(&delivery)?;
        if p.deliver.is_some_and(|d| d != deliver) {
            return Err(invalid(
                "deliver and delivery.mode disagree; give one of them".to_string(),
            ));
        }
        p.deliver = Some(deliver);
    }
    Ok(p)
}

fn invalid(message: String) -> CoreError {
    CoreError::Invalid(message)
}

/// `{kind: "every", everyMs}` / `{kind: "cron", expr, tz?}` → our schedule object and its tz.
fn schedule_of(schedule: &Map<String, Value>) -> CoreResult<(Value, Option<String>)> {
    let kind = schedule.get("kind").and_then(Value::as_str).unwrap_or("");
    let stagger = schedule.get("staggerMs").and_then(Value::as_i64);
    if stagger.is_some_and(|ms| ms != 0) {
        return Err(invalid(
            "schedule.staggerMs: staggered slots are not supported; every job fires at its slot"
                .to_string(),
        ));
    }
    let allowed: &[&str] = match kind {
        "every" => &["kind", "everyMs", "anchorMs"],
        "cron" => &["kind", "expr", "tz", "staggerMs"],
        "at" => {
            return Err(invalid(
                "schedule.kind: one-shot \"at\" schedules are not supported; expected \
                 {kind: \"every\", everyMs} or {kind: \"cron\", expr}"
                    .to_string(),
            ));
        }
        other => {
            return Err(invalid(format!(
                "schedule.kind: {other:?} is not a schedule kind; expected \"every\" (with \
                 everyMs) or \"cron\" (with expr)"
            )));
        }
    };
    if let Some(extra) = schedule.keys().find(|k| !allowed.contains(&k.as_str())) {
        return Err(invalid(format!(
            "schedule.{extra}: not supported for kind {kind:?}; expected only {}",
            allowed.join(", ")
        )));
    }
    let tz = schedule
        .get("tz")
        .and_then(Value::as_str)
        .map(str::to_string);
    let ours = match kind {
        "every" => json!({"everyMs": schedule.get("everyMs").cloned().unwrap_or(Value::Null)}),
        _ => json!({"cron": schedule.get("expr").cloned().unwrap_or(Value::Null)}),
    };
    Ok((ours, tz))
}

/// The text of `{kind: "agentTurn", message}`.
fn payload_message(payload: &Value) -> CoreResult<String> {
    let Value::Object(map) = payload else {
        return Err(invalid(format!(
            "payload: {payload} is not an object; expected {{kind: \"agentTurn\", message}}"
        )));
    };
    let kind = map.get("kind").and_then(Value::as_str).unwrap_or("");
    if kind != "agentTurn" {
        return Err(invalid(format!(
            "payload.kind: {kind:?} is not supported; expected \"agentTurn\" (a message the \
             agent answers)"
        )));
    }
    // `toolsAllow: ["*"]` (what the reference writes for a job by default) is every tool the
    // agent has: what a job here runs with.
    let every_tool = |k: &str, v: &Value| k == "toolsAllow" && *v == serde_json::json!(["*"]);
    if let Some((extra, _)) = map
        .iter()
        .find(|(k, v)| !["kind", "message"].contains(&k.as_str()) && !every_tool(k, v))
    {
        return Err(invalid(format!(
            "payload.{extra}: not supported per job; expected only kind and message (the job \
             runs with its agent's settings)"
        )));
    }
    match map.get("message") {
        Some(Value::String(text)) => Ok(text.clone()),
        other => Err(invalid(format!(
            "payload.message: expected the text the agent receives, got {}",
            other.map_or("nothing".to_string(), Value::to_string)
        ))),
    }
}

/// `{mode: "announce" | "none", channel?: "last"}` → whether replies are delivered.
fn delivery_mode(delivery: &Value) -> CoreResult<bool> {
    let Value::Object(map) = delivery else {
        return Err(invalid(format!(
            "delivery: {delivery} is not an object; expected {{mode: \"announce\" | \"none\"}}"
        )));
    };
    let mode = map.get("mode").and_then(Value::as_str).unwrap_or("");
    let deliver = match mode {
        "announce" => true,
        "none" => false,
        other => {
            return Err(invalid(format!(
                "delivery.mode: {other:?} is not supported; expected \"announce\" (the reply \
                 goes to the agent's main session route) or \"none\""
            )));
        }
    };
    // `channel: "last"` (the reference CLI's default) is what announce does here anyway.
    let targeted = ["channel", "to", "accountId", "threadId"]
        .into_iter()
        .find(|k| map.get(*k).is_some_and(|v| !v.is_null() && v != "last"));
    if let Some(field) = targeted {
        return Err(invalid(format!(
            "delivery.{field}: a per-job delivery target is not supported; an announced reply \
             goes to the agent's main session route"
        )));
    }
    Ok(deliver)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reference(extra: Value) -> CronAddParams {
        let mut base = json!({
            "name": "nightly", "enabled": true,
            "schedule": {"kind": "every", "everyMs": 600_000},
            "sessionTarget": "isolated", "wakeMode": "now",
            "payload": {"kind": "agentTurn", "message": "report"},
            "delivery": {"mode": "announce", "channel": "last"}
        });
        if let (Value::Object(base), Value::Object(extra)) = (&mut base, extra) {
            base.extend(extra);
        }
        serde_json::from_value(base).unwrap()
    }

    #[test]
    fn the_reference_shape_folds_into_ours() {
        let p = fold(reference(json!({}))).unwrap();
        assert_eq!(
            (p.schedule, p.message.as_str(), p.deliver),
            (json!({"everyMs": 600_000}), "report", Some(true))
        );
        let cron = json!({"schedule": {"kind": "cron", "expr": "0 3 * * *", "tz": "UTC"}});
        let p = fold(reference(cron)).unwrap();
        assert_eq!(
            (p.schedule, p.tz.as_deref()),
            (json!({"cron": "0 3 * * *"}), Some("UTC"))
        );
    }

    #[test]
    fn what_cannot_be_done_as_asked_is_refused_naming_the_field() {
        let cases = [
            (
                json!({"schedule": {"kind": "at", "at": "2026-01-01T00:00:00Z"}}),
                "one-shot",
            ),
            (json!({"sessionTarget": "main"}), "sessionTarget: \"main\""),
            (
                json!({"payload": {"kind": "systemEvent", "text": "x"}}),
                "payload.kind",
            ),
            (
                json!({"payload": {"kind": "agentTurn", "message": "x", "model": "a/b"}}),
                "payload.model",
            ),
            (
                json!({"delivery": {"mode": "webhook", "to": "http://x"}}),
                "delivery.mode",
            ),
            (
                json!({"delivery": {"mode": "announce", "channel": "telegram"}}),
                "delivery.channel",
            ),
            (json!({"wakeMode": "later"}), "wakeMode"),
            (json!({"delivery": 5}), "delivery: 5 is not an object"),
        ];
        for (extra, expected) in cases {
            let err = fold(reference(extra)).unwrap_err().to_string();
            assert!(err.contains(expected), "{err} should name {expected}");
        }
    }
}

#[cfg(test)]
mod stored_tests {
    use serde_json::json;

    use crate::cron::reference_record;

    #[test]
    fn a_job_the_reference_stored_becomes_ours_with_its_id_and_agent() {
        // As the reference stores a job: its `cron.add` shape with its bookkeeping beside.
        let job = json!({
            "id": "a56c3b5d-75c6-42d8-a3c6-99065e829cf7", "name": "Hourly ping", "enabled": true,
            "createdAtMs": 1_795_924_509_036_i64, "description": "every hour",
            "schedule": {"kind": "every", "everyMs": 3_600_000, "anchorMs": 1_795_924_509_036_i64},
            "sessionTarget": "isolated", "wakeMode": "now",
            "payload": {"kind": "agentTurn", "message": "check the queue", "toolsAllow": ["*"]},
            "delivery": {"mode": "announce", "channel": "last"},
            "scheduledToolPolicy": {"version": 1, "mode": "trusted"}, "state": {"nextRunAtMs": 1}
        });
        let record = reference_record(&job, "main", 1_795_924_600_000).unwrap();
        assert_eq!(
            (
                record.id.as_str(),
                record.agent_id.as_str(),
                record.name.as_deref()
            ),
            (
                "a56c3b5d-75c6-42d8-a3c6-99065e829cf7",
                "main",
                Some("Hourly ping")
            )
        );
        assert_eq!(
            (record.message.as_str(), record.deliver),
            ("check the queue", true)
        );
        let mut narrowed = job.clone();
        narrowed["payload"]["toolsAllow"] = json!(["read"]);
        let refused = reference_record(&narrowed, "main", 0)
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("payload.toolsAllow: not supported per job"),
            "{refused}"
        );
    }
}
