//! Compaction: when a conversation no longer fits its model's window by a wide margin, the part
//! that would be left out is summarised by the session's own model into one stored message
//! (`provenance {kind: "compaction", coversUntilSeq}`). From then on the model is sent the summary
//! and the messages after it; the originals stay in the transcript, reachable by paging. Also on
//! demand (`sessions.compact`, `/compact`): everything but the newest turn.

use switchboard_protocol::message::{
    ContentBlock, Provenance, TranscriptMessage, UserContent, UserMessage,
};

use super::Runtime;
use super::conversation::{self, COMPACTION, WINDOW, is_summary};
use super::providers::{ModelRequest, ModelTarget, StreamEvent, complete_with_retries};
use super::window::{budget, cut_point, leaving};
use crate::config::ThinkingLevel;
use crate::error::{CoreError, CoreResult};
use crate::keys::SessionKey;
use crate::store::SessionEntry;

/// A run compacts first when more than this share of the conversation since the last summary
/// has left (or is about to leave) the model's window: about once per window of new messages.
pub const SHARE: f64 = 0.5;
/// The summary's own length bound (tokens).
const SUMMARY_TOKENS: u64 = 1024;
/// What a tool result contributes to the text that is summarised, at most (characters).
const RESULT_CHARS: usize = 600;

const INSTRUCTIONS: &str = "You keep the memory of a long conversation. Summarise the \
    conversation you are given as compact notes for yourself: who wants what, facts, decisions, \
    numbers and names, what was done and its results, what is still open. If it starts with an \
    earlier summary, fold that in. Write in the conversation's language, at most 300 words, \
    notes only.";

/// The first line of a summary message.
pub const SUMMARY_HEADING: &str =
    "[Summary of the earlier conversation; its messages are in this session's history]";

/// What a compaction did.
#[derive(Debug, Clone, PartialEq)]
pub struct Compacted {
    /// Messages the summary stands for (in the model's view before it).
    pub messages: usize,
    /// The summary's text.
    pub summary: String,
}

/// When compaction runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum When {
    /// Only if more than [`SHARE`] of the conversation would leave the model's window.
    Needed,
    /// Now: everything but the newest turn.
    Asked,
}

impl Runtime {
    /// Compacts the session `key` (see the module doc); `None` when there is nothing to do.
    /// Errors: the session does not exist; the summary's model call failed.
    pub async fn compact(&self, key: &SessionKey, when: When) -> CoreResult<Option<Compacted>> {
        self.compact_within(key, when, None).await
    }

    /// [`Runtime::compact`] for a model whose window is `window` tokens when its entry does not
    /// say (a context-length refusal said so): the text summarised is cut to fit it.
    pub(super) async fn compact_within(
        &self,
        key: &SessionKey,
        when: When,
        window: Option<u64>,
    ) -> CoreResult<Option<Compacted>> {
        let store = self.store();
        let entry = store
            .get(key)
            .await?
            .ok_or_else(|| CoreError::NotFound(format!("No session found: {}", key.display())))?;
        let target = self.target_of(&entry)?;
        let page = store.history(&entry.session_id, WINDOW, None).await?;
        let selected = conversation::select(page.messages);
        let seqs_in_view: Vec<i64> = selected.iter().map(|m| m.seq).collect();
        let view = conversation::decode(&entry.session_id, selected);
        if view.len() != seqs_in_view.len() {
            return Ok(None); // a message the model cannot read: leave the session as it is
        }
        let cut = match when {
            When::Asked => view
                .iter()
                .rposition(|m| matches!(m, TranscriptMessage::User(_)) && !is_summary(m))
                .unwrap_or(0),
            When::Needed => {
                let Some(window) = target.context_window else {
                    return Ok(None);
                };
                cut_point(&view, room(&target, window))
            }
        };
        if cut == 0 || view[..cut].iter().all(is_summary) {
            return Ok(None);
        }
        let window = target.context_window.or(window);
        let summary = self.summarise(&target, &view[..cut], window).await?;
        let message = TranscriptMessage::User(UserMessage {
            content: UserContent::Text(format!("{SUMMARY_HEADING}\n\n{summary}")),
            timestamp: self.now_ms(),
            provenance: Some(Provenance {
                kind: COMPACTION.into(),
                covers_until_seq: Some(seqs_in_view[cut]),
                ..Provenance::default()
            }),
            origin: None,
        });
        store.append(key, None, vec![message]).await?;
        self.inner.conversations.forget(&entry.session_id);
        tracing::info!(session = %key, messages = cut, "compacted the conversation into a summary");
        Ok(Some(Compacted {
            messages: cut,
            summary,
        }))
    }

    /// A run's conversation: its window, compacted first when it no longer fits the model by a
    /// wide margin (a compaction that fails is logged, and the window is cut as usual). Answers
    /// the window and the transcript's last seq (a summary was appended after the run's message).
    pub(super) async fn conversation_for(
        &self,
        entry: &SessionEntry,
        target: &ModelTarget,
    ) -> CoreResult<(Vec<TranscriptMessage>, i64)> {
        let store = self.store();
        let conversations = &self.inner.conversations;
        let history = conversations
            .take(store, &entry.session_id, entry.last_seq)
            .await?;
        let Some(window) = target.context_window else {
            return Ok((history, entry.last_seq));
        };
        if !due(&history, entry.last_seq, window, target) {
            return Ok((history, entry.last_seq));
        }
        match self.compact(&entry.key, When::Needed).await {
            Ok(Some(_)) => {
                let Some(fresh) = store.get(&entry.key).await? else {
                    return Ok((history, entry.last_seq));
                };
                let history = conversations
                    .take(store, &fresh.session_id, fresh.last_seq)
                    .await?;
                Ok((history, fresh.last_seq))
            }
            Ok(None) => Ok((history, entry.last_seq)),
            Err(e) => {
                tracing::warn!(session = %entry.key, error = %e, "compaction failed; older messages are left out instead");
                Ok((history, entry.last_seq))
            }
        }
    }

    /// After a context-length refusal: everything but the newest turn summarised, and `messages`
    /// made the model's view of the compacted conversation (with `last_seq`, the transcript's).
    /// Answers false when nothing was compacted (nothing to, or the summary failed: logged).
    pub(super) async fn compact_after_refusal(
        &self,
        key: &SessionKey,
        refusal: &str,
        messages: &mut Vec<TranscriptMessage>,
        last_seq: &mut Option<i64>,
    ) -> bool {
        let window = super::window::counts(refusal).map(|(_, fits)| fits);
        match self.compact_within(key, When::Asked, window).await {
            Ok(Some(_)) => {}
            Ok(None) => return false,
            Err(e) => {
                tracing::warn!(session = %key, error = %e, "compaction after a refusal failed; older messages are cut instead");
                return false;
            }
        }
        let store = self.store();
        // Not reading the compacted view only means older messages are cut for this call.
        let entry = match store.get(key).await {
            Ok(Some(entry)) => entry,
            Ok(None) => return false,
            Err(e) => {
                tracing::warn!(session = %key, error = %e, "cannot read the session after compaction; older messages are cut instead");
                return false;
            }
        };
        let conversations = &self.inner.conversations;
        match conversations
            .take(store, &entry.session_id, entry.last_seq)
            .await
        {
            Ok(view) => {
                *messages = view;
                *last_seq = Some(entry.last_seq);
                true
            }
            Err(e) => {
                tracing::warn!(session = %key, error = %e, "cannot read the compacted conversation");
                false
            }
        }
    }

    /// The model a run of `entry` would use.
    fn target_of(&self, entry: &SessionEntry) -> CoreResult<ModelTarget> {
        let agent = self.config().agent(&entry.agent_id);
        let model = entry.model.clone().unwrap_or(agent.model);
        self.providers().resolve(&model).map_err(CoreError::Invalid)
    }

    /// One call of the session's model over the messages as text.
    async fn summarise(
        &self,
        target: &ModelTarget,
        messages: &[TranscriptMessage],
        window: Option<u64>,
    ) -> CoreResult<String> {
        let mut text = render(messages);
        if let Some(window) = window {
            // Room for the instructions and the summary itself: the newest part when too long.
            let room = ((window.saturating_sub(SUMMARY_TOKENS) as f64) * 0.6 * 3.0) as usize;
            let chars = text.chars().count();
            if chars > room {
                text = text.chars().skip(chars - room).collect();
            }
        }
        let user = TranscriptMessage::User(UserMessage {
            content: UserContent::Text(text),
            timestamp: self.now_ms(),
            provenance: None,
            origin: None,
        });
        let request = ModelRequest::text_only(target, INSTRUCTIONS.into(), vec![user]);
        let ignore = |_: StreamEvent| {};
        let response =
            complete_with_retries(target.provider.as_ref(), &request, &ignore, &target.retry)
                .await
                .map_err(|e| {
                    CoreError::Unavailable(format!("compaction: {}: {e}", target.reference))
                })?;
        let summary = response.text();
        if summary.trim().is_empty() {
            return Err(CoreError::Unavailable(format!(
                "compaction: {} answered no summary",
                target.reference
            )));
        }
        Ok(summary.trim().to_string())
    }
}

/// Whether a run should compact first: the model's window is cutting the conversation now, and
/// the messages since the last summary that are out of the model's view (left it in earlier
/// turns, or about to leave it now) are more than [`SHARE`] of them. `history` is the run's window (a summary first, if any), `last_seq` the transcript's.
fn due(history: &[TranscriptMessage], last_seq: i64, window: u64, target: &ModelTarget) -> bool {
    let covered = match history.first() {
        Some(TranscriptMessage::User(u)) => u
            .provenance
            .as_ref()
            .filter(|p| p.kind == COMPACTION)
            .and_then(|p| p.covers_until_seq),
        _ => None,
    };
    let summary = usize::from(covered.is_some());
    let kept = history.len().saturating_sub(summary) as i64;
    // Messages after the summary's boundary, not counting the summary itself.
    let since = match covered {
        Some(from) => last_seq - from,
        None => last_seq,
    };
    let now = leaving(history, room(target, window));
    // Messages out of view while the window holds fewer than it may load were cut by the
    // budget; at the message cap with nothing to cut now, only the cap is at work.
    let budget_cuts = now > 0 || (since > kept && (kept as usize) < WINDOW - 1);
    if !budget_cuts {
        return false;
    }
    let out = (since - kept).max(0) + now as i64;
    since > 0 && out as f64 > since as f64 * SHARE
}

/// The tokens a model's messages may take before compaction is considered: its window less
/// the output budget, uncalibrated (the run's own cut allows for its system prompt and tools).
fn room(target: &ModelTarget, window: u64) -> f64 {
    let probe = ModelRequest::text_only(target, String::new(), Vec::new());
    budget(window, target.max_tokens, &probe, 1.0, 1.0)
}

/// The messages as lines a model can summarise: who said what, which tools ran and what they
/// answered (clipped).
fn render(messages: &[TranscriptMessage]) -> String {
    let mut lines = Vec::new();
    for message in messages {
        match message {
            TranscriptMessage::User(user) => {
                let text = match &user.content {
                    UserContent::Text(text) => text.clone(),
                    UserContent::Blocks(blocks) => blocks_text(blocks),
                };
                let who = if is_summary(message) {
                    "earlier summary"
                } else {
                    "user"
                };
                lines.push(format!("{who}: {text}"));
            }
            TranscriptMessage::Assistant(a) => {
                for block in &a.content {
                    match block {
                        ContentBlock::Text { text } => lines.push(format!("assistant: {text}")),
                        ContentBlock::ToolCall {
                            name, arguments, ..
                        } => {
                            lines.push(format!(
                                "assistant called {name} {}",
                                clip(&arguments.to_string())
                            ));
                        }
                        _ => {}
                    }
                }
            }
            TranscriptMessage::ToolResult(r) => {
                lines.push(format!(
                    "{} returned: {}",
                    r.tool_name,
                    clip(&blocks_text(&r.content))
                ));
            }
        }
    }
    lines.join("\n")
}

fn blocks_text(blocks: &[ContentBlock]) -> String {
    blocks
        .iter()
        .filter_map(|b| match b {
            ContentBlock::Text { text } => Some(text.as_str()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn clip(text: &str) -> String {
    if text.chars().count() <= RESULT_CHARS {
        return text.to_string();
    }
    let cut: String = text.chars().take(RESULT_CHARS).collect();
    format!("{cut}…")
}

impl ModelRequest {
    /// A request with no tools and no thinking, for the gateway's own calls.
    pub fn text_only(
        target: &ModelTarget,
        system: String,
        messages: Vec<TranscriptMessage>,
    ) -> Self {
        ModelRequest {
            model: target.model.clone(),
            system,
            messages,
            tools: Vec::new(),
            max_tokens: Some(SUMMARY_TOKENS),
            thinking: ThinkingLevel::Off,
        }
    }
}
