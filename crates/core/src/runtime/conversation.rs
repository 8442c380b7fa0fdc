//! The conversation a run shows the model: the newest messages of the transcript, parsed.
//!
//! Parsing a few hundred stored messages on every turn was most of a turn's CPU, so the parsed
//! window is kept per transcript together with the `seq` it covers. A run takes it out (runs of
//! one session never overlap), tops it up with whatever was appended since, and puts it back when
//! it ends. Any write from elsewhere (an injection, another session's send) moves the
//! transcript's last `seq`, so a stale window is never used as it is.

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;
use switchboard_protocol::message::TranscriptMessage;

use super::lock;
use crate::store::{Store, StoreError};

/// Messages of the transcript the model sees (the newest ones).
pub const WINDOW: usize = 200;
/// Transcripts whose window is kept; past that the cache starts over.
const MAX_CACHED: usize = 1024;

#[derive(Default)]
pub struct ConversationCache {
    windows: Mutex<HashMap<String, (i64, Vec<TranscriptMessage>)>>,
}

impl ConversationCache {
    /// The window of `session_id` up to `last_seq`, from the cache where it can be.
    pub async fn take(
        &self,
        store: &dyn Store,
        session_id: &str,
        last_seq: i64,
    ) -> Result<Vec<TranscriptMessage>, StoreError> {
        let cached = lock(&self.windows).remove(session_id);
        let mut messages = match cached {
            Some((seq, messages)) if seq == last_seq => messages,
            Some((seq, mut messages)) if seq < last_seq && (last_seq - seq) as usize <= WINDOW => {
                // Sequence numbers have no gaps: the newest `last_seq - seq` are the new ones.
                let page = store
                    .history(session_id, (last_seq - seq) as usize, None)
                    .await?;
                messages.extend(parse(page.messages.into_iter().map(|m| m.message)));
                messages
            }
            _ => {
                let page = store.history(session_id, WINDOW, None).await?;
                parse(page.messages.into_iter().map(|m| m.message))
            }
        };
        trim(&mut messages);
        Ok(messages)
    }

    /// Keeps the window of a run that ended with the transcript at `last_seq`.
    pub fn put(&self, session_id: &str, last_seq: i64, messages: Vec<TranscriptMessage>) {
        let mut windows = lock(&self.windows);
        if windows.len() >= MAX_CACHED {
            windows.clear();
        }
        windows.insert(session_id.to_string(), (last_seq, messages));
    }
}

fn parse(messages: impl Iterator<Item = Value>) -> Vec<TranscriptMessage> {
    messages
        .filter_map(|m| serde_json::from_value(m).ok())
        .collect()
}

/// At most [`WINDOW`] messages, starting at a user message (a window that starts inside a tool
/// exchange would show results without their calls).
fn trim(messages: &mut Vec<TranscriptMessage>) {
    if messages.len() > WINDOW {
        messages.drain(..messages.len() - WINDOW);
    }
    let start = messages
        .iter()
        .position(|m| matches!(m, TranscriptMessage::User(_)))
        .unwrap_or(messages.len());
    messages.drain(..start);
}
