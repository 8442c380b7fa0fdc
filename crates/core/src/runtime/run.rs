//! One run: the tool-call loop (SPEC §6.2).
//!
//! Every message is appended to the transcript as it happens. The run's result is the final
//! assistant text, stored with the run record; nothing later re-reads the transcript to find
//! "the reply". A timeout or an abort stops the loop wherever it is; text streamed so far is
//! appended as an `aborted` assistant message, so partial output is never lost.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use switchboard_protocol::message::{ContentBlock, StopReason, TranscriptMessage, Usage};
use switchboard_protocol::sessions::Patch;

use super::cancel::CancelToken;
use super::providers::{ModelRequest, ModelResponse, StreamEvent, complete_with_retries};
use super::{Queued, RunEventData, lock, now_ms};
use crate::delivery::{NO_REPLY, Outbound, route_of};
use crate::engine::Engine;
use crate::store::{EntryPatch, RunStatus, TokenDelta, WriteOp, WriteOutcome};
use crate::tools::sessions::ANNOUNCE_SKIP;
use crate::tools::{self, ToolContext, ToolOutput};

/// Model calls per run before it is stopped as runaway.
const MAX_MODEL_CALLS: usize = 32;

/// How a run ended, before it is written down.
struct Ending {
    status: RunStatus,
    result: Option<String>,
    error: Option<String>,
}

/// Text streamed in the current model turn that is not in the transcript yet.
#[derive(Default)]
struct Partial {
    text: String,
    model: String,
    provider: String,
}

pub(super) async fn execute(engine: &Arc<Engine>, job: Queued) {
    let rt = engine.runtime();
    let Queued {
        run_id,
        request,
        cancel,
        mut record,
    } = job;
    let key = request.session_key.clone();

    // An abort wins over a free slot: a run aborted while queued never starts.
    let lease = tokio::select! {
        biased;
        () = cancel.cancelled() => None,
        lease = engine.lease(request.lane) => Some(lease),
    };
    // The run's message was acknowledged with the run: it enters the transcript however the run
    // ends, appended here outside the abort/timeout select so it is written exactly once, in the
    // same commit that marks the run running.
    let mut start = Vec::new();
    if let Some(message) = &request.message {
        start.push(WriteOp::Append {
            key: key.clone(),
            create: None,
            messages: vec![message.clone()],
        });
    }
    if lease.is_some() {
        record.status = RunStatus::Running;
        record.started_at = Some(now_ms());
        start.push(WriteOp::PutRun(record.clone()));
    }
    let started = match start.is_empty() {
        true => Ok(()),
        false => engine.store().write_batch(start).await.map(|_| ()),
    };
    let ending = match (lease, started) {
        (_, Err(e)) => Ending {
            status: RunStatus::Error,
            result: None,
            error: Some(e.to_string()),
        },
        (None, Ok(())) => Ending {
            status: RunStatus::Aborted,
            result: None,
            error: Some("aborted before it started".into()),
        },
        (Some(lease), Ok(())) => {
            rt.publish(&record);
            rt.emit(&run_id, &key, RunEventData::Started);

            let timeout = request.timeout.unwrap_or(Duration::from_secs(
                engine.config().agents.defaults.timeout_seconds,
            ));
            let partial = Arc::new(Mutex::new(Partial::default()));
            let ctx = ToolContext {
                engine: engine.clone(),
                session_key: key.clone(),
                agent_id: String::new(),
                run_id: run_id.clone(),
                chain: request.chain.clone(),
                lease,
                stop_waiting: CancelToken::default(),
            };
            let stopped = tokio::select! {
                ending = run_loop(engine, &request, ctx, partial.clone()) => Ok(ending),
                () = tokio::time::sleep(timeout) => Err((RunStatus::Timeout, format!("timed out after {}s", timeout.as_secs_f64()))),
                () = cancel.cancelled() => Err((RunStatus::Aborted, "aborted".to_string())),
            };
            match stopped {
                Ok(ending) => ending,
                Err((status, reason)) => keep_partial(engine, &key, &partial, status, reason).await,
            }
        }
    };

    record.status = ending.status;
    record.result = ending.result.clone();
    record.error = ending.error.clone();
    record.ended_at = Some(now_ms());
    let flag = EntryPatch {
        aborted_last_run: Some(record.status == RunStatus::Aborted),
        ..EntryPatch::default()
    };
    let mut end = vec![
        WriteOp::PutRun(record.clone()),
        WriteOp::Patch {
            key: key.clone(),
            patch: Box::new(flag),
        },
    ];
    // The reply's delivery is committed with the run's end: an acknowledged reply is never
    // left undelivered by a crash.
    let delivery = reply_delivery(engine, &request, &record).await;
    end.extend(delivery.clone().map(|d| WriteOp::Enqueue(Box::new(d))));
    match engine.store().write_batch(end).await {
        Ok(_) => {
            if let Some(delivery) = delivery {
                engine.settled(&delivery);
                engine.wake_outbox();
            }
        }
        Err(e) => {
            // The session may have been deleted meanwhile; the run record alone must still land.
            tracing::debug!(%run_id, error = %e, "could not store the run's end with its session flag");
            if let Err(e) = engine.store().put_run(record.clone()).await {
                tracing::error!(%run_id, error = %e, "could not store the run's end");
            }
        }
    }
    rt.retire(&record);
    rt.emit(
        &run_id,
        &key,
        RunEventData::Ended {
            status: record.status,
            result: ending.result,
            error: ending.error,
        },
    );
}

/// Appends what was streamed before a timeout or abort, and ends the run.
async fn keep_partial(
    engine: &Engine,
    key: &str,
    partial: &Mutex<Partial>,
    status: RunStatus,
    reason: String,
) -> Ending {
    let Partial {
        text,
        model,
        provider,
    } = std::mem::take(&mut *lock(partial));
    if !text.is_empty() {
        let cut = ModelResponse {
            content: vec![ContentBlock::text(text.clone())],
            usage: Usage::default(),
            stop_reason: StopReason::Aborted,
        };
        let message = assistant_message(&provider, &model, &cut, Some(&reason));
        if let Err(e) = engine.store().append(key, None, vec![message]).await {
            tracing::warn!(error = %e, "could not keep the partial reply");
        }
    }
    Ending {
        status,
        result: Some(text).filter(|t| !t.is_empty()),
        error: Some(reason),
    }
}

async fn run_loop(
    engine: &Arc<Engine>,
    request: &super::RunRequest,
    mut ctx: ToolContext,
    partial: Arc<Mutex<Partial>>,
) -> Ending {
    let fail = |error: String| Ending {
        status: RunStatus::Error,
        result: None,
        error: Some(error),
    };
    let store = engine.store();
    let key = request.session_key.as_str();
    let entry = match store.get(key).await {
        Ok(Some(entry)) => entry,
        Ok(None) => return fail(format!("the session {key} no longer exists")),
        Err(e) => return fail(e.to_string()),
    };
    ctx.agent_id = entry.agent_id.clone();
    let agent = engine.config().agent(&entry.agent_id);
    let model_ref = request
        .model
        .clone()
        .or(entry.model.clone())
        .unwrap_or(agent.model.clone());
    let target = match engine.runtime().providers.resolve(&model_ref) {
        Ok(target) => target,
        Err(e) => return fail(e),
    };
    let conversations = &engine.runtime().conversations;
    let history = match conversations
        .take(store, &entry.session_id, entry.last_seq)
        .await
    {
        Ok(history) => history,
        Err(e) => return fail(e.to_string()),
    };
    // The transcript's newest seq as this run appends, one message at a time; the window is
    // kept for the next run when the run ends well. A write from elsewhere in between (an
    // announce) leaves a gap the window does not hold: then it is not kept.
    let mut last_seq = Some(entry.last_seq);
    let follow = |last: Option<i64>, seq: i64| last.filter(|&l| seq == l + 1).map(|_| seq);
    // The same set tools.invoke allows: the agent's allow/deny, minus session tools for
    // sub-agents unless tools.subagents.tools allows them.
    let tools = tools::invoke::callable_tools(engine, key, &entry.agent_id);
    let specs: Vec<_> = tools.iter().map(|t| tools::spec(t.as_ref())).collect();
    let system = system_prompt(
        agent.system_prompt.as_deref(),
        request.extra_system_prompt.as_deref(),
    );
    let rt = engine.runtime();
    // One request for the whole run: each new message is pushed into it, never copied.
    let mut model_request = ModelRequest {
        model: target.model.clone(),
        system,
        messages: history,
        tools: specs,
        max_tokens: target.max_tokens,
    };

    for _ in 0..MAX_MODEL_CALLS {
        *lock(&partial) = Partial {
            text: String::new(),
            model: target.model.clone(),
            provider: target.provider_id.clone(),
        };
        let sink = |event: StreamEvent| match event {
            StreamEvent::TextDelta(text) => {
                let accumulated = {
                    let mut p = lock(&partial);
                    p.text.push_str(&text);
                    p.text.clone()
                };
                rt.emit(&ctx.run_id, key, RunEventData::Delta { text, accumulated });
            }
            StreamEvent::ThinkingDelta(text) => {
                rt.emit(&ctx.run_id, key, RunEventData::Thinking { text })
            }
            StreamEvent::ToolCallStarted { .. } => {}
        };
        let outcome = complete_with_retries(
            target.provider.as_ref(),
            &model_request,
            &sink,
            &target.retry,
        )
        .await;
        let response = match outcome {
            Ok(response) => response,
            Err(error) => {
                let text = std::mem::take(&mut lock(&partial).text);
                let message = assistant_message(
                    &target.provider_id,
                    &target.model,
                    &ModelResponse {
                        content: if text.is_empty() {
                            Vec::new()
                        } else {
                            vec![ContentBlock::text(text)]
                        },
                        usage: Usage::default(),
                        stop_reason: StopReason::Error,
                    },
                    Some(&format!("{}: {error}", target.provider_id)),
                );
                let _ = store.append(key, None, vec![message]).await;
                return fail(format!("{}: {error}", target.reference));
            }
        };
        let message = assistant_message(&target.provider_id, &target.model, &response, None);
        lock(&partial).text.clear();
        let tokens = EntryPatch {
            add_tokens: Some(TokenDelta {
                input: response.usage.input,
                output: response.usage.output,
            }),
            context_tokens: Patch::Set(response.usage.input + response.usage.output),
            ..EntryPatch::default()
        };
        let turn = vec![
            WriteOp::Append {
                key: key.to_string(),
                create: None,
                messages: vec![message.clone()],
            },
            WriteOp::Patch {
                key: key.to_string(),
                patch: Box::new(tokens),
            },
        ];
        match store.write_batch(turn).await {
            Ok(outcomes) => {
                last_seq = appended_seq(&outcomes).and_then(|seq| follow(last_seq, seq))
            }
            Err(e) => return fail(e.to_string()),
        }
        model_request
            .messages
            .extend(serde_json::from_value::<TranscriptMessage>(message).ok());

        let calls: Vec<(String, String, Value)> = response
            .tool_calls()
            .map(|(id, name, args)| (id.to_string(), name.to_string(), args.clone()))
            .collect();
        if calls.is_empty() {
            if let Some(seq) = last_seq {
                conversations.put(&entry.session_id, seq, model_request.messages);
            }
            return Ending {
                status: RunStatus::Ok,
                result: Some(response.text()),
                error: None,
            };
        }
        for (id, name, arguments) in calls {
            rt.emit(
                &ctx.run_id,
                key,
                RunEventData::ToolCall {
                    id: id.clone(),
                    name: name.clone(),
                    arguments: arguments.clone(),
                },
            );
            let output = match tools.iter().find(|t| t.name() == name) {
                Some(tool) if arguments.is_object() || arguments.is_null() => {
                    tool.call(&ctx, arguments).await
                }
                Some(tool) => {
                    ToolOutput::error(match tools::parse_args::<Value>(tool.as_ref(), arguments) {
                        Err(message) => message,
                        Ok(_) => format!("The arguments of {name} must be a JSON object."),
                    })
                }
                None => ToolOutput::error(format!(
                    "Unknown tool {name:?}. Available tools: {}.",
                    if tools.is_empty() {
                        "none".to_string()
                    } else {
                        tools
                            .iter()
                            .map(|t| t.name())
                            .collect::<Vec<_>>()
                            .join(", ")
                    }
                )),
            };
            let text = output.text();
            let result = json!({
                "role": "toolResult",
                "toolCallId": id,
                "toolName": name,
                "content": [{"type": "text", "text": text}],
                "isError": output.is_error,
                "timestamp": now_ms(),
            });
            match store.append(key, None, vec![result.clone()]).await {
                Ok(appended) => last_seq = follow(last_seq, appended.entry.last_seq),
                Err(e) => return fail(e.to_string()),
            }
            model_request
                .messages
                .extend(serde_json::from_value::<TranscriptMessage>(result).ok());
            rt.emit(
                &ctx.run_id,
                key,
                RunEventData::ToolResult {
                    id,
                    name,
                    is_error: output.is_error,
                    text,
                },
            );
        }
    }
    fail(format!(
        "stopped after {MAX_MODEL_CALLS} model calls without a final reply"
    ))
}

/// The outbox record of the run's reply, when the run asked for delivery and ended `ok` with a
/// reply other than `NO_REPLY` or `ANNOUNCE_SKIP` (the replies that mean "stay silent").
async fn reply_delivery(
    engine: &Engine,
    request: &super::RunRequest,
    record: &crate::store::RunRecord,
) -> Option<crate::store::DeliveryRecord> {
    let deliver = request.deliver.as_ref()?;
    let text = record.result.as_deref().unwrap_or_default();
    let silent = [NO_REPLY, ANNOUNCE_SKIP].contains(&text.trim());
    if record.status != RunStatus::Ok || text.trim().is_empty() || silent {
        return None;
    }
    let entry = engine.store().get(&record.session_key).await.ok().flatten();
    let route = deliver
        .route
        .clone()
        .or_else(|| entry.as_ref().and_then(route_of));
    let out = Outbound {
        kind: deliver.kind,
        session_key: Some(record.session_key.clone()),
        source_key: None,
        run_id: Some(record.run_id.clone()),
        route,
        text: text.to_string(),
        idempotency_key: Some(format!("{}:{}", deliver.kind, record.run_id)),
    };
    Some(engine.delivery_record(out, entry.as_ref()))
}

/// The agent's prompt, then this run's extra prompt.
fn system_prompt(agent: Option<&str>, extra: Option<&str>) -> String {
    let parts: Vec<&str> = [agent, extra]
        .into_iter()
        .flatten()
        .filter(|s| !s.trim().is_empty())
        .collect();
    parts.join("\n\n")
}

fn assistant_message(
    provider: &str,
    model: &str,
    response: &ModelResponse,
    error: Option<&str>,
) -> Value {
    let mut usage = response.usage.clone();
    if usage.total_tokens == 0 {
        usage.total_tokens = usage.input + usage.output + usage.cache_read + usage.cache_write;
    }
    let mut message = json!({
        "role": "assistant",
        "content": response.content,
        "provider": provider,
        "model": model,
        "usage": usage,
        "stopReason": response.stop_reason,
        "timestamp": now_ms(),
    });
    if let (Some(error), Value::Object(map)) = (error, &mut message) {
        map.insert("errorMessage".into(), Value::from(error));
    }
    message
}

/// The transcript's newest seq after a batch that appended.
fn appended_seq(outcomes: &[WriteOutcome]) -> Option<i64> {
    outcomes.iter().rev().find_map(|o| match o {
        WriteOutcome::Appended(a) => Some(a.entry.last_seq),
        _ => None,
    })
}

/// Used by tests and the runtime's callers to build a plain user message.
pub fn user_message(text: &str, provenance: Option<Value>) -> Value {
    let mut message = json!({"role": "user", "content": text, "timestamp": now_ms()});
    if let (Some(p), Value::Object(map)) = (provenance, &mut message) {
        map.insert("provenance".into(), p);
    }
    message
}
