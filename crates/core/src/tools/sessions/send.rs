//! `sessions_send` (SPEC §7.3): a message into another session, optionally waiting for the reply.
//!
//! The message enters the target as a user-role message with provenance; the target's run gets
//! an agent-to-agent block in its system prompt and runs on lane `nested`. With a wait the tool
//! answers `ok` with the run's stored result, `timeout` (the run goes on; its state says queued or
//! running), or `error`. Either way the reply-back loop and the announce step then run in the
//! background (`flow.rs`).
//!
//! Cycle guard (SPEC §6.3): the run this send starts carries `chain + [requester]`. A waiting send
//! into any session of that chain (the requester included) could only deadlock, so it fails at
//! once naming the chain; any send whose chain would exceed `session.agentToAgent.maxHops` fails
//! the same way, so no loop through any number of agents runs forever.

use std::time::Duration;

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use switchboard_protocol::lenient;

use super::{flow, resolve};
use crate::access::{self, Operation, SendDecision};
use crate::keys::SessionKey;
use crate::runtime::lanes::Lane;
use crate::runtime::{RunRequest, user_message};
use crate::store::{RunStatus, SessionEntry};
use crate::tools::{Tool, ToolContext, ToolFuture, ToolOutput, parse_args};

const DEFAULT_TIMEOUT_SECONDS: i64 = 30;
const MAX_TIMEOUT_SECONDS: i64 = 600;

pub struct SessionsSend;

/// Arguments of `sessions_send`.
#[derive(Deserialize, JsonSchema, Default)]
#[serde(rename_all = "camelCase", default)]
struct Params {
    /// The target session: its key from sessions_list (e.g. "agent:main:discord:group:dev"),
    /// "main" for your agent's main session, or its sessionId. Give this or `label`, not both.
    session_key: Option<String>,
    /// The target session's label, instead of sessionKey.
    label: Option<String>,
    /// With `label`: the agent whose session carries the label (default: yours).
    agent_id: Option<String>,
    /// The message to send. Required.
    message: Option<String>,
    /// Seconds to wait for the reply (default 30, at most 600). 0 sends without waiting.
    #[serde(deserialize_with = "lenient::opt_int")]
    #[schemars(with = "Option<f64>")]
    timeout_seconds: Option<i64>,
}

impl Tool for SessionsSend {
    fn name(&self) -> &str {
        "sessions_send"
    }

    fn description(&self) -> &str {
        "Send a message into another session and (by default) wait for its agent's reply. \
         Name the target with sessionKey (from sessions_list) or label. Returns status \"ok\" with \
         the reply, \"accepted\" when timeoutSeconds is 0, \"timeout\" when the reply did not \
         arrive in time (the other agent keeps working; read its reply later with \
         sessions_history), \"error\" or \"forbidden\"."
    }

    fn parameters(&self) -> Value {
        resolve::schema::<Params>()
    }

    fn call<'a>(&'a self, ctx: &'a ToolContext, arguments: Value) -> ToolFuture<'a> {
        Box::pin(async move {
            match parse_args::<Params>(self, arguments) {
                Ok(params) => send(ctx, params).await,
                Err(message) => ToolOutput::error(message),
            }
        })
    }
}

fn status(status: &str, fields: Value) -> ToolOutput {
    let mut result = json!({"status": status});
    if let (Value::Object(out), Value::Object(extra)) = (&mut result, fields) {
        out.extend(extra);
    }
    ToolOutput {
        is_error: status == "error" || status == "forbidden",
        content: result,
    }
}

fn error(message: impl Into<String>) -> ToolOutput {
    status("error", json!({"error": message.into()}))
}

async fn send(ctx: &ToolContext, p: Params) -> ToolOutput {
    let engine = &ctx.engine;
    let config = engine.config();
    let Some(message) = p.message.filter(|m| !m.trim().is_empty()) else {
        return error("message required");
    };
    let target = match resolve::reference(
        ctx,
        p.session_key.as_deref(),
        p.label.as_deref(),
        p.agent_id.as_deref(),
        Operation::Send,
    )
    .await
    {
        Ok(entry) => entry,
        Err(output) => return output,
    };
    let shown = display_key(&target);
    if let SendDecision::Deny { reason } = access::send_policy(config, &target.key, Some(&target)) {
        return status("forbidden", json!({"error": reason, "sessionKey": shown}));
    }

    let timeout = lenient::clamp_or(
        p.timeout_seconds,
        DEFAULT_TIMEOUT_SECONDS,
        0,
        MAX_TIMEOUT_SECONDS,
    );
    let mut chain = ctx.chain.clone();
    chain.push(ctx.session_key.clone());
    if let Some(problem) = cycle(
        &chain,
        &target.key,
        timeout > 0,
        u64::from(config.session.agent_to_agent.max_hops),
    ) {
        return error(problem);
    }

    let requester_entry = engine.store().get(&ctx.session_key).await.ok().flatten();
    let mut request = RunRequest::new(target.key.clone(), Lane::Nested);
    request.message = Some(user_message(
        &message,
        Some(json!({"kind": "agent", "fromSessionKey": ctx.session_key, "runId": ctx.run_id})),
    ));
    request.extra_system_prompt = Some(flow::context_block(
        &ctx.session_key,
        requester_entry.as_ref(),
        &target,
    ));
    request.chain = chain.clone();
    let accepted = match engine.submit_run(request).await {
        Ok(accepted) => accepted,
        Err(e) => return error(e.to_string()),
    };
    let exchange = flow::Exchange {
        requester: ctx.session_key.clone(),
        target: target.key.clone(),
        request: message,
        primary_run: accepted.run_id.clone(),
        chain,
    };
    // The follow-up waits for the primary run on its own, so it starts before this call waits:
    // a caller that stops waiting (or goes away) never loses the reply-back loop or announce.
    flow::spawn(engine.clone(), exchange);
    if timeout == 0 {
        return status(
            "accepted",
            json!({"runId": accepted.run_id, "sessionKey": shown}),
        );
    }

    let waited = ctx
        .wait_run(&accepted.run_id, Duration::from_secs(timeout as u64))
        .await;
    let outcome = match waited {
        Ok(outcome) => outcome,
        Err(e) => return error(e.to_string()),
    };
    let run = outcome.record;
    if outcome.wait_timed_out {
        return status(
            "timeout",
            json!({
                "runId": run.run_id,
                "sessionKey": shown,
                "run": {"state": run.status.as_str()},
                "error": format!(
                    "the reply did not arrive within {timeout}s; the run is {} and goes on — read \
                     its reply later with sessions_history",
                    run.status.as_str()
                ),
            }),
        );
    }
    match run.status {
        RunStatus::Ok => status(
            "ok",
            json!({"runId": run.run_id, "reply": run.result.unwrap_or_default(), "sessionKey": shown}),
        ),
        other => status(
            "error",
            json!({
                "runId": run.run_id,
                "sessionKey": shown,
                "error": format!(
                    "the target run ended {}: {}",
                    other.as_str(),
                    run.error.unwrap_or_default()
                ),
            }),
        ),
    }
}

/// Why this send must not start, if it must not: a waiting send into its own chain, or too many
/// hops. `chain` already ends with the requester.
fn cycle(chain: &[String], target: &str, waits: bool, max_hops: u64) -> Option<String> {
    let shown = |keys: &[String]| keys.join(" → ");
    let mut path = chain.to_vec();
    path.push(target.to_string());
    if waits && chain.iter().any(|k| k == target) {
        return Some(format!(
            "refused: a waiting send into a session already in this chain can only deadlock \
             ({}); send with timeoutSeconds 0, or answer in your own reply",
            shown(&path)
        ));
    }
    if chain.len() as u64 > max_hops {
        return Some(format!(
            "refused: this send would be hop {} of agent-to-agent traffic, over \
             session.agentToAgent.maxHops ({max_hops}) ({})",
            chain.len(),
            shown(&path)
        ));
    }
    None
}

/// The key the caller sees (`main` for the global bucket).
fn display_key(entry: &SessionEntry) -> String {
    SessionKey::from_canonical(entry.key.clone())
        .display()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::cycle;

    fn chain(keys: &[&str]) -> Vec<String> {
        keys.iter().map(|k| k.to_string()).collect()
    }

    #[test]
    fn waiting_into_the_chain_and_too_many_hops_are_refused() {
        let abc = chain(&["a", "b", "c"]);
        let refused = cycle(&abc, "a", true, 6).unwrap();
        assert!(refused.contains("a → b → c → a"), "{refused}");
        assert!(
            cycle(&abc, "a", false, 6).is_none(),
            "fire-and-forget into the chain queues"
        );
        assert!(
            cycle(&chain(&["a"]), "a", true, 6).is_some(),
            "waiting on itself"
        );
        assert!(cycle(&abc, "d", true, 6).is_none());
        let hops = cycle(&abc, "d", false, 2).unwrap();
        assert!(
            hops.contains("maxHops (2)") && hops.contains("a → b → c → d"),
            "{hops}"
        );
    }
}
