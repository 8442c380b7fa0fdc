//! The operator's runs: `chat.send` (with the `/send` command), `agent` (answered twice),
//! `agent.wait` and `chat.abort`. Keys are resolved by the resolver, send policy is checked
//! before anything is stored, runs are the runtime's.

use std::time::Duration;
use switchboard_protocol::delivery::DeliveryKind;

use serde::Deserialize;
use switchboard_protocol::message::{AssistantMessage, ContentBlock, TranscriptMessage};
use switchboard_protocol::runs::RunStatus as WireRunStatus;
use switchboard_protocol::runs::{
    AgentAccepted, AgentMeta, AgentParams, AgentResult, AgentWaitParams, ChatAbortParams,
    ChatAbortResult, ChatAttachment, ChatSendAnswer, ChatSendParams, ChatSendResult, RunMeta,
    RunResult, RunTokens,
};
use switchboard_protocol::sessions::{DeliveryContext, Patch};

use super::commands::Command;
use super::{Sessions, attachments};
use crate::channel;
use crate::config::ModelRef;
use crate::error::{CoreError, CoreResult};
use crate::ids::RunId;
use crate::keys::{SessionKey, SessionKind};
use crate::resolve::Resolver;
use crate::runtime::lanes::Lane;
use crate::runtime::{Accepted, Deliver, RunRequest, Runtime, WaitOutcome};
use crate::store::{EntryPatch, RunStatus, SessionEntry, StoreError, WriteOp};

const DEFAULT_WAIT_MS: i64 = 30_000;
const MAX_WAIT_MS: i64 = 600_000;

impl Sessions {
    /// `chat.send`: an operator message into a session (created when the key is new) starts a
    /// run, answered `started` once it is committed; a slash command is answered instead
    /// (`commands.rs`; `owner`: the caller has `operator.admin`). Errors: `Forbidden` when the
    /// send policy refuses.
    pub async fn chat_send(&self, p: ChatSendParams, owner: bool) -> CoreResult<ChatSendAnswer> {
        let agent_id = p.agent_id.as_deref();
        let key = self.resolver.target_key(&p.session_key, agent_id).await?;
        if let Some(command) = Command::of_text(&p.message) {
            let id = p.idempotency_key.as_deref();
            return Ok(ChatSendAnswer::Command(
                self.operator_command(&key, command, id, owner).await?,
            ));
        }
        let build = |entry: Option<SessionEntry>| {
            check_message("chat.send", &p.message)?;
            let images =
                self.images_for(&key, entry.as_ref(), None, "chat.send", &p.attachments)?;
            let message = p.message.clone();
            let mut request = self.operator_run(&key, message, Lane::Main, entry, true);
            request.add_images(images);
            request.run_id = run_id_of(p.idempotency_key.as_deref());
            request.idempotency_key = p.idempotency_key.clone();
            request.timeout = p
                .timeout_ms
                .filter(|ms| *ms > 0)
                .map(|ms| Duration::from_millis(ms as u64));
            Ok(request)
        };
        let accepted = submit_checked(&self.resolver, &self.runtime, &key, build).await?;
        Ok(ChatSendAnswer::Started(ChatSendResult {
            run_id: accepted.run_id.into_string(),
            status: "started".into(),
            session_key: accepted.session_key.display().to_string(),
        }))
    }

    /// `agent`: starts a run; `accepted` is told as soon as it is committed, and the answer is the
    /// run's outcome once it ends (its own timeout bounds it). A slash command is answered at
    /// once instead (`owner`: the caller has `operator.admin`).
    pub async fn agent(
        &self,
        p: AgentParams,
        owner: bool,
        accepted: impl FnOnce(AgentAccepted),
    ) -> CoreResult<AgentResult> {
        let lane = match p.lane.as_deref() {
            None => Lane::Main,
            Some(name) => Lane::parse(name).ok_or_else(|| {
                CoreError::Invalid(format!(
                    "agent: lane {name:?} is not a lane; expected main, nested, subagent or cron"
                ))
            })?,
        };
        let agent_id = p.agent_id.as_deref();
        let by_id = p
            .session_id
            .as_deref()
            .map(str::trim)
            .filter(|id| !id.is_empty());
        let session = match p.session_key.trim() {
            "" => by_id.unwrap_or("main"),
            given => given,
        };
        let key = self.resolver.target_key(session, agent_id).await?;
        if let Some(command) = Command::of_text(&p.message) {
            let caller = (p.idempotency_key.as_deref(), owner);
            return self.agent_command(&key, command, caller, accepted).await;
        }
        let build = |entry| self.agent_request(&key, &p, lane, entry);
        let run = submit_checked(&self.resolver, &self.runtime, &key, build).await?;
        accepted(AgentAccepted {
            session_key: Some(key.display().to_string()),
            agent_id: key.agent_id().map(str::to_string),
            ..AgentAccepted::new(run.run_id.as_str(), run.accepted_at)
        });
        let outcome = self.runtime.wait(&run.run_id, Duration::MAX).await?;
        let meta = self.run_meta(&outcome).await;
        let mut answer = AgentResult::new(run_result(outcome));
        if let Some(result) = &mut answer.result {
            result.meta = Some(meta);
        }
        Ok(answer)
    }

    /// `result.meta` of `agent`: the run's duration, its session, and the model of the
    /// session's last call (this run's, unless another run followed it at once).
    async fn run_meta(&self, outcome: &WaitOutcome) -> RunMeta {
        let r = &outcome.record;
        // Only the model's name is read from the entry, for display: the run has ended and its
        // result is answered whatever becomes of this read.
        let entry = match self.store.get(&r.session_key).await {
            Ok(entry) => entry,
            Err(e) => {
                tracing::warn!(session = %r.session_key, error = %e, "could not read the session for the agent result's model");
                None
            }
        };
        let model = entry.and_then(|e| e.last_model);
        let (provider, model) = match model.as_deref().and_then(ModelRef::split) {
            Some((provider, name)) => (Some(provider.to_string()), Some(name.to_string())),
            None => (None, model),
        };
        let usage = match &r.session_id {
            Some(session_id) => self.run_tokens(session_id, &r.run_id).await,
            None => None,
        };
        RunMeta {
            duration_ms: r.ended_at.map_or(0, |end| end - r.created_at),
            agent_meta: AgentMeta {
                session_id: r.session_id.clone(),
                provider,
                model,
                usage,
            },
        }
    }

    /// The tokens of `run_id`'s replies, summed from the newest page of its transcript (a run's
    /// replies are at its end); `None` when none is found or the page cannot be read.
    async fn run_tokens(&self, session_id: &str, run_id: &RunId) -> Option<RunTokens> {
        let page = match self.store.history(session_id, 200, None).await {
            Ok(page) => page,
            Err(e) => {
                tracing::warn!(session_id, error = %e, "could not read the run's replies for its usage");
                return None;
            }
        };
        let replies: Vec<AssistantMessage> = page
            .messages
            .into_iter()
            .filter_map(|m| match TranscriptMessage::deserialize(&m.message) {
                Ok(TranscriptMessage::Assistant(reply)) => Some(reply),
                _ => None,
            })
            .filter(|reply| {
                let origin = reply.origin.as_ref().and_then(|o| o.run_id.as_deref());
                origin == Some(run_id.as_str())
            })
            .collect();
        if replies.is_empty() {
            return None;
        }
        let mut tokens = RunTokens::default();
        for reply in replies {
            let u = &reply.usage;
            tokens.input += u.input;
            tokens.output += u.output;
            tokens.cache_read += u.cache_read;
            tokens.cache_write += u.cache_write;
        }
        tokens.total = tokens.input + tokens.output + tokens.cache_read + tokens.cache_write;
        Some(tokens)
    }

    /// `agent.wait`: the run's outcome, or its state when the wait (default 30 s, at most
    /// 10 min) ends first.
    pub async fn agent_wait(&self, p: AgentWaitParams) -> CoreResult<RunResult> {
        let ms = p
            .timeout_ms
            .unwrap_or(DEFAULT_WAIT_MS)
            .clamp(0, MAX_WAIT_MS) as u64;
        let run_id = RunId::from_string(p.run_id.trim());
        let outcome = self
            .runtime
            .wait(&run_id, Duration::from_millis(ms))
            .await?;
        Ok(run_result(outcome))
    }

    /// `chat.abort`: stops the session's running run (or the named one, queued or running).
    pub async fn chat_abort(&self, p: ChatAbortParams) -> CoreResult<ChatAbortResult> {
        let agent_id = p.agent_id.as_deref();
        let key = self.resolver.target_key(&p.session_key, agent_id).await?;
        let run_id = p.run_id.as_deref().map(RunId::from_string);
        let aborted = self.runtime.abort(&key, run_id.as_ref()).await?;
        Ok(ChatAbortResult {
            ok: true,
            aborted: !aborted.is_empty(),
            run_ids: aborted.into_iter().map(RunId::into_string).collect(),
            session_key: key.display().to_string(),
        })
    }

    /// The image blocks of `attachments`, refused when the model the run would use (`model`,
    /// else the session's (`entry`, as the send's check read it), else its agent's) does not
    /// take images.
    fn images_for(
        &self,
        key: &SessionKey,
        entry: Option<&SessionEntry>,
        model: Option<&str>,
        method: &str,
        attachments: &[ChatAttachment],
    ) -> CoreResult<Vec<ContentBlock>> {
        let images = attachments::image_blocks(method, attachments)?;
        if images.is_empty() {
            return Ok(images);
        }
        let model = match (model, entry) {
            (Some(model), _) => model.to_string(),
            (None, Some(entry)) => entry
                .model
                .clone()
                .unwrap_or_else(|| self.config.agent(&entry.agent_id).model.clone()),
            (None, None) => {
                let agent = key.agent_id().map(str::to_string);
                let agent = agent.unwrap_or_else(|| self.config.default_agent_id());
                self.config.agent(&agent).model.clone()
            }
        };
        match self.runtime.providers().resolve(&model) {
            Ok(target) if !target.images => Err(CoreError::invalid(format!(
                "{method}: the model {model} does not take images (its input in \
                 models.providers has no \"image\"); send text only or use a model that does"
            ))),
            _ => Ok(images),
        }
    }

    /// The run an `agent` call makes from the session's entry (`entry`, judged already).
    fn agent_request(
        &self,
        key: &SessionKey,
        p: &AgentParams,
        lane: Lane,
        entry: Option<SessionEntry>,
    ) -> CoreResult<RunRequest> {
        check_message("agent", &p.message)?;
        if let Some(model) = &p.model {
            self.check_model(model)?;
        }
        let images = self.images_for(
            key,
            entry.as_ref(),
            p.model.as_deref(),
            "agent",
            &p.attachments,
        )?;
        // A message routed to a channel by its caller (`channel` + `to`) is not a webchat one.
        let webchat = p.channel.is_none();
        let mut request = self.operator_run(key, p.message.clone(), lane, entry, webchat);
        request.add_images(images);
        if let Some(new) = &mut request.create {
            new.label = p.label.clone();
            new.spawned_by = match &p.spawned_by {
                Some(parent) => Some(self.resolver.canonical(parent, p.agent_id.as_deref())?),
                None => None,
            };
        }
        if p.deliver {
            let (channel, to, account) = (p.channel.clone(), p.to.clone(), p.account_id.clone());
            request.deliver = Some(Deliver {
                kind: DeliveryKind::Reply,
                route: explicit_route(channel, to, account)?,
            });
        }
        request.run_id = run_id_of(p.idempotency_key.as_deref());
        request.idempotency_key = p.idempotency_key.clone();
        request.extra_system_prompt = p.extra_system_prompt.clone();
        request.model = p.model.clone();
        request.timeout = p
            .timeout
            .filter(|s| *s > 0)
            .map(|s| Duration::from_secs(s as u64));
        Ok(request)
    }

    /// A run of an operator's message in `key`, creating the session when it is new.
    /// An operator's message is a `webchat` one (SPEC §1) unless its caller routes it to a
    /// channel: a direct session that has no channel yet records `lastChannel: "webchat"` with
    /// it, once, so `sessions_list`, the CLI and the page all name its channel alike. A channel
    /// it has (a DM's, a group's) is kept: the operator reading along does not take a chat's
    /// replies away from it.
    fn operator_run(
        &self,
        key: &SessionKey,
        message: String,
        lane: Lane,
        entry: Option<SessionEntry>,
        webchat: bool,
    ) -> RunRequest {
        let mut request = RunRequest::new(key.clone(), lane).with_message(message, None);
        request.create = Some(self.resolver.new_session(key));
        let main_key = &self.config.session.main_key;
        let direct = matches!(key.kind(main_key), SessionKind::Main | SessionKind::Other);
        let has_channel = |e: &SessionEntry| e.channel.is_some() || e.last_channel.is_some();
        if webchat && direct && key.channel().is_none() && !entry.as_ref().is_some_and(has_channel)
        {
            let patch = EntryPatch {
                last_channel: Patch::Set(channel::WEBCHAT.into()),
                ..EntryPatch::default()
            };
            request.commit_with.push(WriteOp::Patch {
                key: key.clone(),
                patch: Box::new(patch),
            });
        }
        request.entry = entry.map(Box::new);
        request
    }
}

/// Submits the run `build` makes from the session's entry once the send policy allows the
/// message on that entry ([`Resolver::check_send_for_run`], then
/// [`Runtime::submit_locked`]). A shared store may answer the entry the session's last run
/// left, its start then written only while the session is as that entry says; when it
/// changed since (or another gateway runs it), nothing was written (`Stale`) and the
/// message is judged and built again on the entry read anew, once.
pub(crate) async fn submit_checked(
    resolver: &Resolver,
    runtime: &Runtime,
    key: &SessionKey,
    mut build: impl FnMut(Option<SessionEntry>) -> CoreResult<RunRequest>,
) -> CoreResult<Accepted> {
    let mut again = true;
    loop {
        let (entry, lock) = resolver.check_send_for_run(key, !again).await?;
        let request = build(entry)?;
        match runtime.submit_locked(request, lock).await {
            Err(CoreError::Store(StoreError::Stale(why))) if again => {
                tracing::debug!(
                    why,
                    "a message's session changed since it was read; judged again"
                );
                again = false;
            }
            answered => return answered,
        }
    }
}

/// `channel` + `to` of `agent {deliver: true}`: both or neither (then the session's route).
fn explicit_route(
    channel: Option<String>,
    to: Option<String>,
    account_id: Option<String>,
) -> CoreResult<Option<DeliveryContext>> {
    match (channel, to) {
        (None, None) => Ok(None),
        (Some(channel), Some(to)) => Ok(Some(DeliveryContext {
            channel: channel.trim().to_lowercase(),
            to,
            account_id,
            thread_id: None,
        })),
        _ => Err(CoreError::invalid(
            "agent: give channel and to together (or neither, to deliver to the session's route)",
        )),
    }
}

fn run_result(outcome: WaitOutcome) -> RunResult {
    let r = outcome.record;
    let (status, state) = if outcome.wait_timed_out {
        (WireRunStatus::Timeout, crate::wire::run_state(r.status))
    } else {
        (r.status.into(), None)
    };
    RunResult {
        run_id: r.run_id.into_string(),
        status,
        session_key: r.session_key.display().to_string(),
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
        model: r.model,
        cost_usd: r.cost_usd,
    }
}

/// The run id an operator's idempotency key gives its run, as the reference does (its clients
/// wait on the key): a key of at most 128 printable characters without spaces; any other key
/// still deduplicates, and the run gets an id of its own.
fn run_id_of(idempotency_key: Option<&str>) -> Option<RunId> {
    RunId::of_idempotency_key(idempotency_key?)
}

/// A message that starts a run says something: an empty one would run the model on nothing.
fn check_message(method: &str, message: &str) -> CoreResult<()> {
    match message.trim().is_empty() {
        true => Err(CoreError::invalid(format!(
            "{method}: message is empty; send the text for the agent"
        ))),
        false => Ok(()),
    }
}
