//! One run: the tool-call loop (SPEC §6.2).
//!
//! Every message is appended to the transcript as it happens, as a typed `TranscriptMessage`
//! (the store turns it into JSON at its edge). The run's result is the final assistant text,
//! stored with the run record; nothing later re-reads the transcript to find "the reply". A
//! timeout or an abort stops the loop wherever it is; text streamed so far is appended as an
//! `aborted` assistant message, so partial output is never lost.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::Value;
use switchboard_protocol::message::{
    ContentBlock, MessageOrigin, StopReason, ToolResultMessage, TranscriptMessage, Usage,
};
use switchboard_protocol::sessions::Patch;

use super::cut::{self, assistant_message};
use super::end::{Ending, Reply, finish};
use super::fence::{fence_of, fenced};
use super::hold::{Hold, after_start, hold_session};
use super::pieces::Partial;
use super::providers::{ModelRequest, ModelResponse, ModelTarget, ProviderError, StreamEvent};
use super::queue::Queued;
use super::tool::{self, Caller, Tool, ToolContext, ToolOutput};
use super::window;
use super::{RunEventData, RunRequest, Runtime, lock};
use crate::RunId;
use crate::config::ThinkingLevel;
use crate::keys::SessionKey;
use crate::store::{EntryPatch, RunStatus, TokenDelta, WriteOp, WriteOutcome};

mod beside;
mod left;

/// Model calls per run before it is stopped as runaway.
const MAX_MODEL_CALLS: usize = 32;

pub(super) async fn execute(rt: &Runtime, job: Queued) {
    let Queued {
        request,
        message,
        cancel,
        mut record,
        starts,
        ..
    } = job;
    let key = request.session_key.clone();

    // An abort wins over a free slot: a run aborted while queued never starts. A run that did
    // not start before shutdown began stays queued in the store and starts at the next start.
    let lease = tokio::select! {
        biased;
        () = rt.inner.closing.cancelled() => {
            // Cancelled by someone (not by the shutdown's abort of everything): an abort.
            if !cancel.is_cancelled() || rt.inner.abort_all.is_cancelled() {
                return rt.forget(&record);
            }
            None
        }
        () = cancel.cancelled() => None,
        lease = rt.inner.lanes.lease(request.lane) => Some(lease),
    };
    // Runs of one session never overlap, on any gateway sharing the store; an abort while
    // waiting ends the run as one aborted while queued, a shutdown leaves it queued, and a
    // store that cannot lock fails the run (it never runs unlocked).
    let mut unlocked = None;
    let (lease, mut held) = match lease {
        Some(lease) => match hold_session(rt, &key, &cancel).await {
            Hold::Held(held) => (Some(lease), held),
            Hold::Aborted => (None, None),
            Hold::Closing => return rt.forget(&record),
            Hold::Failed(e) => {
                unlocked = Some(e);
                (Some(lease), None)
            }
        },
        None => (None, None),
    };
    // The run's message was acknowledged with the run: it enters the transcript however the run
    // ends, appended here outside the abort/timeout select so it is written exactly once, in the
    // same commit that marks the run running (and clears its stored input).
    // A running run keeps its request (not its message) to be resumed after a stop.
    let run = match lease.is_some() {
        true => {
            record.status = RunStatus::Running;
            record.started_at = record
                .started_at
                .filter(|_| starts > 0)
                .or(Some(rt.now_ms()));
            let input = super::queue::resume_input(&request, starts + 1);
            WriteOp::QueueRun(record.clone(), Box::new(input))
        }
        false => WriteOp::PutRun(record.clone()),
    };
    let start = super::start::writes(&key, run, message.clone(), None);
    // A resumed run's start was told when it first started.
    let told = lease.is_some() && starts == 0;
    let input = message.as_ref();
    let started = super::start::commit(rt, &request, &record, start, &mut held, told, input).await;
    let Some(keep) = after_start(rt, &record, &started, message).await else {
        return rt.forget(&record);
    };
    let started = match unlocked {
        Some(e) => Err(crate::store::StoreError::Backend(format!(
            "could not lock the session against other gateways: {e}"
        ))),
        None => started,
    };
    let begun = Begun {
        request,
        record,
        cancel,
        lease,
        held,
        started,
        keep,
        starts,
    };
    carry_out(rt, begun).await;
}

/// A run whose start commit was made (or failed): what carrying it out needs.
pub(super) struct Begun {
    pub request: RunRequest,
    pub record: crate::store::RunRecord,
    pub cancel: tokio_util::sync::CancellationToken,
    /// Its lane slot; `None` when it was aborted while queued.
    pub lease: Option<super::lanes::LeaseHolder>,
    /// The session's lock across gateways, kept until the run ended.
    pub held: Option<crate::store::SessionLock>,
    /// The start commit: the session's entry after it appended the run's input, or after it
    /// created the session for a run without one (as that write left it: a later write of the
    /// same batch, a patch of the session, is not in it).
    pub started: Result<Option<crate::store::SessionEntry>, crate::store::StoreError>,
    /// The input to append with the run's end (its start's write did not land).
    pub keep: Option<switchboard_protocol::message::TranscriptMessage>,
    /// How many times the run started before (a resumed run: at least one).
    pub starts: u32,
}

/// Runs a started run until it ends (its reply, a failure, a timeout or an abort), and ends it.
pub(super) async fn carry_out(rt: &Runtime, begun: Begun) {
    let Begun {
        request,
        mut record,
        cancel,
        lease,
        held,
        started,
        keep,
        starts,
    } = begun;
    let partial = Arc::new(Mutex::new(Partial::default()));
    let ending = match (lease, started) {
        (_, Err(e)) => Ending::failed(e.to_string()),
        (None, Ok(_)) => rt.aborted_before_start(&record, starts).await,
        (Some(lease), Ok(entry)) => {
            rt.publish(&record);
            rt.emit(&record.run_id, &record.session_key, RunEventData::Started);
            let timeout = request.timeout.unwrap_or(Duration::from_secs(
                rt.config().agents.defaults.timeout_seconds,
            ));
            let looped = run_loop(rt, &request, &record, lease, partial.clone(), entry, starts);
            // The cancellation first: a run the stop cut off goes no further.
            let stopped = tokio::select! {
                biased;
                () = cancel.cancelled() => Err((RunStatus::Aborted, rt.abort_reason())),
                ending = looped => Ok(ending),
                () = tokio::time::sleep(timeout) => Err((RunStatus::Timeout, format!("timed out after {}s", timeout.as_secs_f64()))),
            };
            let left = match &stopped {
                Ok(ending) => ending.left(),
                Err(_) => rt.inner.abort_all.is_cancelled(),
            };
            if left {
                // The gateway's stop (its grace ran out): the run stays `running` in the
                // store, and the next start resumes it (SPEC §6.3).
                drop(held);
                return rt.forget(&record);
            }
            match stopped {
                Ok(ending) => ending,
                Err((status, reason)) => {
                    cut::keep_partial(rt, &record, &partial, status, reason).await
                }
            }
        }
    };
    let spent = lock(&partial).spent.clone();
    record.model = spent.model;
    record.cost_usd = spent.cost_usd;
    finish(rt, &request, record, ending, keep, held).await;
}

/// What one run works with once its session is read.
struct Turn<'a> {
    rt: &'a Runtime,
    key: &'a SessionKey,
    ctx: ToolContext,
    tools: Vec<Arc<dyn Tool>>,
    target: ModelTarget,
    /// The models that run the turn, in order, when the current one fails.
    fallbacks: Vec<ModelTarget>,
    partial: Arc<Mutex<Partial>>,
    /// The transcript's newest seq as this run appends, one message at a time; the window is
    /// kept for the next run when the run ends well. A write from elsewhere in between (an
    /// announce) leaves a gap the window does not hold: then it is not kept.
    last_seq: Option<i64>,
    /// Heads every write of the run: it commits only while the run is held here.
    fence: WriteOp,
    /// The run: its replies carry its id (`__openclaw.runId`).
    run_id: RunId,
    /// The output tokens of the run's model calls so far (the `usage` event).
    output_tokens: u64,
}

async fn run_loop(
    rt: &Runtime,
    request: &RunRequest,
    record: &crate::store::RunRecord,
    lease: super::lanes::LeaseHolder,
    partial: Arc<Mutex<Partial>>,
    entry: Option<crate::store::SessionEntry>,
    starts: u32,
) -> Ending {
    let (mut turn, mut model_request, session_id) =
        match Turn::prepare(rt, request, record, lease, partial, entry).await {
            Ok(prepared) => prepared,
            Err(ending) => return ending,
        };
    if starts > 0 {
        match turn.resume(&mut model_request, starts).await {
            Ok(None) => {}
            Ok(Some(lost)) => {
                return cut::keep_partial(rt, record, &turn.partial, RunStatus::Aborted, lost)
                    .await;
            }
            Err(ending) => return ending,
        }
    }
    // The last tool result of a reply commits while the next model call is made.
    let mut beside = None;
    for _ in 0..MAX_MODEL_CALLS {
        let response = match turn
            .call_model_beside(&mut model_request, beside.take())
            .await
        {
            Ok(response) => response,
            Err(ending) => return ending,
        };
        let calls: Vec<(String, String, Value)> = response
            .tool_calls()
            .map(|(id, name, args)| (id.to_string(), name.to_string(), args.clone()))
            .collect();
        // Noted before the reply is written, and each call crossed off before its result is:
        // a write is sent to the store in the same poll that starts it, and commits even when
        // the run is cut off while it waits, so the cut-off run's closing (`keep_partial`)
        // answers exactly the calls that have no result in the transcript.
        lock(&turn.partial).unanswered = calls
            .iter()
            .map(|(id, name, _)| (id.clone(), name.clone()))
            .collect();
        if calls.is_empty() {
            // The last reply is written with the run's end, in one commit.
            let (append, tokens, message) = turn.reply(&response, &model_request);
            model_request.messages.push(message);
            let mut ending = Ending::new(RunStatus::Ok, Some(response.text()), None);
            ending.reply = Some(Reply {
                fence: turn.fence.clone(),
                append,
                tokens,
                last_seq: turn.last_seq,
                session_id,
                messages: model_request.messages,
            });
            return ending;
        }
        if let Err(ending) = turn
            .record_calls(&response, &mut model_request, &calls)
            .await
        {
            return ending;
        }
        let last = calls.len() - 1;
        for (n, (id, name, arguments)) in calls.into_iter().enumerate() {
            let result = turn.call_tool(id.clone(), name, arguments, false).await;
            if let Err(ending) = turn.settle_reply(&session_id).await {
                return ending;
            }
            lock(&turn.partial)
                .unanswered
                .retain(|(call, _)| *call != id);
            let appended = match n == last {
                true => turn.append_beside(result, &mut model_request).await,
                false => turn.append(result, &mut model_request).await.map(|()| None),
            };
            match appended {
                Ok(appended) => beside = appended,
                Err(ending) => return ending,
            }
        }
    }
    if let Some(beside) = beside
        && let Err(ending) = turn.settle(beside).await
    {
        return ending;
    }
    Ending::failed(format!(
        "stopped after {MAX_MODEL_CALLS} model calls without a final reply"
    ))
}

impl<'a> Turn<'a> {
    /// Reads the session, resolves its model, loads its conversation and builds the tool
    /// context: everything a run works with, complete before the first model call. Answers the
    /// turn, the model request of the whole run, and the transcript's id. `entry`: the session
    /// as the run's start commit left it, when it has it (read otherwise).
    async fn prepare(
        rt: &'a Runtime,
        request: &'a RunRequest,
        record: &crate::store::RunRecord,
        lease: super::lanes::LeaseHolder,
        partial: Arc<Mutex<Partial>>,
        entry: Option<crate::store::SessionEntry>,
    ) -> Result<(Self, ModelRequest, String), Ending> {
        let key = &request.session_key;
        let read = match entry {
            Some(entry) => Ok(Some(entry)),
            None => rt.store().get(key).await,
        };
        let entry = match read {
            Ok(Some(entry)) => entry,
            Ok(None) => {
                return Err(Ending::failed(format!(
                    "the session {key} no longer exists"
                )));
            }
            Err(e) => return Err(Ending::failed(e.to_string())),
        };
        let agent = rt.config().agent(&entry.agent_id);
        let model_ref = request
            .model
            .clone()
            .or(entry.model.clone())
            .unwrap_or(agent.model.clone());
        let target = rt.providers().resolve(&model_ref).map_err(Ending::failed)?;
        let fallbacks = fallbacks(rt, &target.reference, &agent.model_fallbacks);
        let (history, last_seq) = rt
            .conversation_for(&entry, &target)
            .await
            .map_err(|e| Ending::failed(e.to_string()))?;
        // The same set tools.invoke allows: access decides (the agent's allow/deny, minus session
        // tools for sub-agents unless tools.subagents.tools allows them).
        rt.tools_ready().await;
        let tools = rt.tools_for(key, &agent);
        let caller = Caller {
            session_key: key.clone(),
            agent_id: entry.agent_id.clone(),
            run_id: record.run_id.clone(),
            chain: request.chain.clone(),
            origin: request
                .deliver
                .as_ref()
                .filter(|d| d.kind == switchboard_protocol::delivery::DeliveryKind::Reply)
                .and_then(|d| d.route.clone())
                .map_or(tool::Origin::Elsewhere, tool::Origin::Chat),
        };
        let reply = lock(&partial).joined.clone();
        let ctx = ToolContext::new(
            caller,
            rt.clone(),
            lease,
            tokio_util::sync::CancellationToken::new(),
        )
        .with_reply(reply);
        // One request for the whole run: each new message is pushed into it, never copied.
        let model_request = ModelRequest {
            model: target.model.clone(),
            system: system_prompt(
                agent.system_prompt.as_deref(),
                request.extra_system_prompt.as_deref(),
            ),
            messages: history,
            tools: tools.iter().map(|t| t.spec()).collect(),
            max_tokens: target.max_tokens,
            // The session's level, else its agent's.
            thinking: entry
                .thinking_level
                .as_deref()
                .and_then(ThinkingLevel::parse)
                .unwrap_or(agent.thinking_level),
        };
        let turn = Turn {
            rt,
            key,
            ctx,
            tools,
            target,
            fallbacks,
            partial,
            last_seq: Some(last_seq),
            fence: fence_of(record),
            run_id: record.run_id.clone(),
            output_tokens: 0,
        };
        Ok((turn, model_request, entry.session_id))
    }
}

impl Turn<'_> {
    /// Goes on with a run resumed after a stop (`resume.rs`): the calls of its last reply that
    /// have no result are made again, when that is safe. `Some` says why the run cannot go on
    /// (the caller closes its transcript, those calls unanswered, and ends it `aborted`).
    async fn resume(
        &mut self,
        request: &mut ModelRequest,
        starts: u32,
    ) -> Result<Option<String>, Ending> {
        let pending = super::resume::pending_calls(&request.messages);
        tracing::info!(run_id = %self.run_id, starts, calls = pending.len(), "a run cut off by a stop goes on");
        if let Some(reason) = super::resume::refusal(starts, &pending, &self.tools) {
            let mut partial = lock(&self.partial);
            partial.unanswered = pending
                .into_iter()
                .map(|(id, name, _)| (id, name))
                .collect();
            partial.model.clone_from(&self.target.model);
            partial.provider.clone_from(&self.target.provider_id);
            return Ok(Some(reason));
        }
        for (id, name, arguments) in pending {
            let result = self.call_tool(id, name, arguments, true).await;
            self.append(result, request).await?;
        }
        Ok(None)
    }

    /// One model call, its stream reported as events. When the model fails after its retries
    /// (or at once on an auth error), the next of its fallbacks runs the call, and the rest of
    /// the run; the last failure is kept in the transcript and ends the run.
    async fn call_model(&mut self, request: &mut ModelRequest) -> Result<ModelResponse, Ending> {
        self.call_model_from(request, None).await
    }

    /// [`Turn::call_model`] whose first call to the current model was made already (`first`).
    async fn call_model_from(
        &mut self,
        request: &mut ModelRequest,
        mut first: Option<Result<ModelResponse, ProviderError>>,
    ) -> Result<ModelResponse, Ending> {
        let mut refused = false;
        loop {
            let called = match first.take() {
                Some(called) => called,
                None => self.call_target(request, refused).await,
            };
            let error = match called {
                Ok(response) => return Ok(response),
                Err(error) => error,
            };
            if let (ProviderError::ContextLength { message }, false) = (&error, refused) {
                // Too long for the model: compact, and try once more (cutting if need be).
                refused = true;
                self.compact_for_refusal(request, message).await;
                continue;
            }
            if !falls_back(&error) || self.fallbacks.is_empty() {
                return Err(self.keep_failure(&error).await);
            }
            let next = self.fallbacks.remove(0);
            tracing::warn!(from = %self.target.reference, to = %next.reference, %error, "the model failed; its fallback runs the turn");
            crate::measure::fell_back(&self.target.reference, &next.reference);
            request.model = next.model.clone();
            request.max_tokens = next.max_tokens;
            self.target = next;
        }
    }

    /// After the model refused the request as too long: compaction, and the request's messages
    /// become the compacted conversation.
    async fn compact_for_refusal(&mut self, request: &mut ModelRequest, refusal: &str) {
        let (rt, key) = (self.rt, self.key);
        let compacted = rt
            .compact_after_refusal(key, refusal, &mut request.messages, &mut self.last_seq)
            .await;
        if compacted {
            tracing::info!(session = %key, "the conversation was compacted after the model refused it as too long");
        }
    }

    /// One call to the current model.
    async fn call_target(
        &self,
        request: &mut ModelRequest,
        cut_on_refusal: bool,
    ) -> Result<ModelResponse, ProviderError> {
        let (rt, key, run_id) = (self.rt, self.key, &self.ctx.caller().run_id);
        {
            let mut partial = lock(&self.partial);
            partial.text.clear();
            partial.pieces.call_starts();
            partial.model.clone_from(&self.target.model);
            partial.provider.clone_from(&self.target.provider_id);
            partial.unanswered.clear();
        }
        let sink = |event: StreamEvent| {
            let mut partial = lock(&self.partial);
            let event = match event {
                StreamEvent::TextDelta(text) => partial.piece(text),
                StreamEvent::ThinkingDelta(text) => RunEventData::Thinking { text },
                StreamEvent::ToolCallStarted { .. } => return,
            };
            if let Some(event) = partial.report(event) {
                drop(partial);
                rt.emit(run_id, key, event);
            }
        };
        let calibration = &rt.inner.calibration;
        let response =
            window::complete(calibration, &self.target, request, &sink, cut_on_refusal).await?;
        lock(&self.partial).text.clear();
        Ok(response)
    }

    /// The failed model turn in the transcript (with what it streamed); the run's ending.
    async fn keep_failure(&self, error: &ProviderError) -> Ending {
        let (rt, target) = (self.rt, &self.target);
        let text = std::mem::take(&mut lock(&self.partial).text);
        let failed = ModelResponse {
            content: if text.is_empty() {
                Vec::new()
            } else {
                vec![ContentBlock::text(text)]
            },
            usage: Usage::default(),
            stop_reason: StopReason::Error,
        };
        let reason = format!("{}: {error}", target.provider_id);
        let message = assistant_message(
            &target.provider_id,
            &target.model,
            &failed,
            Some(&reason),
            rt.now_ms(),
        );
        let failed = fenced(&self.fence, vec![append(self.key, message)]);
        if let Err(e) = rt.store().write_batch(failed).await {
            tracing::warn!(error = %e, "could not keep the failed model turn");
        }
        Ending::failed(format!("{}: {error}", target.reference))
    }

    /// The model's reply: its append, the session's token counts, and the reply itself;
    /// reports the run's usage and notes what the reply cost.
    fn reply(
        &mut self,
        response: &ModelResponse,
        request: &ModelRequest,
    ) -> (WriteOp, EntryPatch, TranscriptMessage) {
        let mut message = assistant_message(
            &self.target.provider_id,
            &self.target.model,
            response,
            None,
            self.rt.now_ms(),
        );
        // The reply names its run, and the run's output so far is reported (the reference's
        // Control UI shows it when the turn is done).
        if let TranscriptMessage::Assistant(reply) = &mut message {
            reply.origin = Some(MessageOrigin::run_output(self.run_id.as_str()));
        }
        self.output_tokens += response.usage.output;
        self.rt.emit(
            &self.run_id,
            self.key,
            RunEventData::Usage {
                output_tokens: self.output_tokens,
            },
        );
        // Priced with the model that answered (a fallback's own prices).
        let mut cost_usd = None;
        if let (TranscriptMessage::Assistant(reply), Some(cost)) = (&mut message, &self.target.cost)
        {
            let u = &reply.usage;
            let priced = cost.breakdown(u.input, u.output, u.cache_read, u.cache_write);
            cost_usd = priced["total"].as_f64();
            reply.usage.cost = Some(priced);
        }
        let (agent, usage) = (self.key.agent_id().unwrap_or("unknown"), &response.usage);
        let (provider, model) = (&self.target.provider_id, &self.target.model);
        crate::measure::model_replied(agent, provider, model, usage.input, usage.output, cost_usd);
        let tokens = EntryPatch {
            add_tokens: Some(TokenDelta {
                input: response.usage.input,
                output: response.usage.output,
            }),
            add_cost: cost_usd,
            context_tokens: Patch::Set(response.usage.input + response.usage.output),
            last_model: Patch::Set(self.target.reference.clone()),
            // The model has now seen the session's system prompt, if it has one.
            system_sent: (!request.system.is_empty()).then_some(true),
            ..EntryPatch::default()
        };
        let append = append(self.key, message.clone());
        let spent = &mut lock(&self.partial).spent;
        spent.model = Some(self.target.reference.clone());
        if let Some(cost) = cost_usd {
            spent.cost_usd = Some(spent.cost_usd.unwrap_or(0.0) + cost);
        }
        (append, tokens, message)
    }

    /// Runs one tool call (an unknown tool or unusable arguments answer an error the model can
    /// act on); answers the result message and the event that reports it once it is recorded.
    /// `again`: the call is made again by the run resumed after a stop.
    async fn call_tool(
        &self,
        id: String,
        name: String,
        arguments: Value,
        again: bool,
    ) -> (TranscriptMessage, RunEventData) {
        let (rt, key, run_id) = (self.rt, self.key, &self.ctx.caller().run_id);
        rt.emit(
            run_id,
            key,
            RunEventData::ToolCall {
                id: id.clone(),
                name: name.clone(),
                arguments: arguments.clone(),
            },
        );
        self.ctx.calling(&id, again);
        let output = match self.tools.iter().find(|t| t.name() == name) {
            Some(tool) if arguments.is_object() || arguments.is_null() => {
                tool::traced(&name, &id, tool.call(&self.ctx, arguments)).await
            }
            Some(tool) => tool.invalid(match tool::parse_args::<Value>(tool.as_ref(), arguments) {
                Err(message) => message,
                Ok(_) => format!("The arguments of {name} must be a JSON object."),
            }),
            None => ToolOutput::error(format!(
                "Unknown tool {name:?}. Available tools: {}.",
                if self.tools.is_empty() {
                    "none".to_string()
                } else {
                    let names: Vec<&str> = self.tools.iter().map(|t| t.name()).collect();
                    names.join(", ")
                }
            )),
        };
        let text = output.text();
        let event = RunEventData::ToolResult {
            id: id.clone(),
            name: name.clone(),
            is_error: output.is_error,
            text: text.clone(),
        };
        let mut content = vec![ContentBlock::text(text)];
        content.extend(output.images);
        let message = TranscriptMessage::ToolResult(ToolResultMessage {
            tool_call_id: id,
            tool_name: name,
            content,
            is_error: output.is_error,
            details: output.details,
            timestamp: rt.now_ms(),
        });
        (message, event)
    }

    /// Appends a tool result to the transcript and to the model's view, then reports it. Not
    /// once the gateway's stop began: what a call saw then (a run it waited on, let go by the
    /// stop) is not its result; the call is made again when the run is resumed.
    async fn append(
        &mut self,
        (message, event): (TranscriptMessage, RunEventData),
        request: &mut ModelRequest,
    ) -> Result<(), Ending> {
        let ops = self
            .result_ops(&message)
            .ok_or_else(Ending::left_for_resumption)?;
        self.write_result(ops, (message, event), request).await
    }

    /// The writes that append a tool result (after its call's reply, when the call left it
    /// unwritten); `None` once the gateway's stop began.
    fn result_ops(&self, message: &TranscriptMessage) -> Option<Vec<WriteOp>> {
        if self.rt.inner.abort_all.is_cancelled() {
            return None;
        }
        // The ends the call was told before they committed are checked first (`told.rs`).
        let mut ops = self.ctx.take_required();
        ops.extend(lock(&self.partial).joined.take_left());
        ops.push(append(self.key, message.clone()));
        Some(fenced(&self.fence, ops))
    }

    /// Writes `ops` (a tool result's append) and waits for them, then gives the result to the
    /// model's view and reports it.
    async fn write_result(
        &mut self,
        ops: Vec<WriteOp>,
        (message, event): (TranscriptMessage, RunEventData),
        request: &mut ModelRequest,
    ) -> Result<(), Ending> {
        let written = self.rt.store().write_batch(ops).await;
        self.note_written(written)
            .map_err(|e| Ending::failed(e.to_string()))?;
        request.messages.push(message);
        self.rt.emit(&self.ctx.caller().run_id, self.key, event);
        Ok(())
    }

    /// Notes the transcript's newest seq after an append's write.
    fn note_written(
        &mut self,
        written: Result<Vec<WriteOutcome>, crate::store::StoreError>,
    ) -> Result<(), crate::store::StoreError> {
        let outcomes = written?;
        self.last_seq = appended_seq(&outcomes).and_then(|seq| follow(self.last_seq, seq));
        Ok(())
    }
}

/// Appends `message` to the session's transcript.
pub(super) fn append(key: &SessionKey, message: TranscriptMessage) -> WriteOp {
    WriteOp::Append {
        key: key.clone(),
        create: None,
        messages: vec![message],
    }
}

/// The seq after `last` when `seq` follows it directly; `None` once a gap appeared.
pub(super) fn follow(last: Option<i64>, seq: i64) -> Option<i64> {
    last.filter(|&l| seq == l + 1).map(|_| seq)
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

/// The transcript's newest seq after a batch that appended.
pub(super) fn appended_seq(outcomes: &[WriteOutcome]) -> Option<i64> {
    outcomes.iter().rev().find_map(|o| match o {
        WriteOutcome::Appended(a) => Some(a.entry.last_seq),
        _ => None,
    })
}

/// Whether the next model should run a call that failed with `error`: the provider is down, busy
/// or out of quota after its retries, or refused the key (`auth`). A request the model refuses
/// (bad request, too long) would fail on the next one too.
fn falls_back(error: &ProviderError) -> bool {
    error.is_transient()
        || matches!(
            error,
            ProviderError::Auth { .. } | ProviderError::InvalidResponse { .. }
        )
}

/// The agent's fallback models other than `primary`, resolved (an unresolvable one is skipped,
/// with a warning).
fn fallbacks(rt: &Runtime, primary: &str, configured: &[String]) -> Vec<ModelTarget> {
    configured
        .iter()
        .filter(|r| r.as_str() != primary)
        .filter_map(|r| match rt.providers().resolve(r) {
            Ok(target) => Some(target),
            Err(e) => {
                tracing::warn!(model = %r, error = %e, "a fallback model cannot be used");
                None
            }
        })
        .collect()
}
