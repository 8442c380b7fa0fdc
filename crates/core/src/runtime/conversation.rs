//! The conversation a run shows the model: the newest messages of the transcript, parsed.
//!
//! Parsing a few hundred stored messages on every turn was most of a turn's CPU, so the parsed
//! window is kept per transcript together with the `seq` it covers. A run takes it out (runs of
//! one session never overlap), tops it up with whatever was appended since, and puts it back when
//! it ends. Any write from elsewhere (an injection, another session's send) moves the
//! transcript's last `seq`, so a stale window is never used as it is. Reads stop at the `seq`
//! the run was given: a message appended after it is left for the next run, never read in place
//! of one before it.

use std::collections::HashMap;
use std::sync::Mutex;

use switchboard_protocol::message::TranscriptMessage;

use super::lock;
use crate::store::{Store, StoreError, StoredMessage};

/// Messages of the transcript the model sees (the newest ones).
pub const WINDOW: usize = 200;
/// Transcripts whose window is kept; past that the cache starts over.
const MAX_CACHED: usize = 1024;

#[derive(Default)]
pub struct ConversationCache {
    windows: Mutex<HashMap<String, (i64, Vec<TranscriptMessage>)>>,
}

impl ConversationCache {
    /// The window of `session_id` up to `last_seq` (messages appended since are not in it), from
    /// the cache where it can be.
    pub async fn take(
        &self,
        store: &dyn Store,
        session_id: &str,
        last_seq: i64,
    ) -> Result<Vec<TranscriptMessage>, StoreError> {
        let cached = lock(&self.windows).remove(session_id);
        let until = Some(last_seq + 1);
        let mut messages = match cached {
            Some((seq, messages)) if seq == last_seq => messages,
            Some((seq, mut messages)) if seq < last_seq && (last_seq - seq) as usize <= WINDOW => {
                // Sequence numbers have no gaps: the `last_seq - seq` up to `last_seq` are new.
                let page = store
                    .history(session_id, (last_seq - seq) as usize, until)
                    .await?;
                if page.messages.iter().any(is_compaction) {
                    // A summary written from outside the run: the view starts over from it.
                    load(store, session_id, last_seq).await?
                } else {
                    messages.extend(parse(session_id, page.messages));
                    messages
                }
            }
            _ => load(store, session_id, last_seq).await?,
        };
        trim(&mut messages);
        Ok(messages)
    }

    /// Drops the kept window of a transcript (a compaction changed what its model is sent).
    pub fn forget(&self, session_id: &str) {
        lock(&self.windows).remove(session_id);
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

/// The model's view of the transcript up to `last_seq`, read from the store: the newest
/// [`WINDOW`] messages, led by the newest summary even when it is older than them.
async fn load(
    store: &dyn Store,
    session_id: &str,
    last_seq: i64,
) -> Result<Vec<TranscriptMessage>, StoreError> {
    let mut page = store
        .history(session_id, WINDOW, Some(last_seq + 1))
        .await?
        .messages;
    if !page.iter().any(is_compaction) {
        let oldest = page.first().map_or(last_seq + 1, |m| m.seq);
        if let Some(summary) = store.summary(session_id, oldest).await? {
            page.insert(0, summary);
        }
    }
    Ok(parse(session_id, page))
}

/// A stored summary (`provenance.kind` `compaction`), and the seq before which it stands for
/// the messages.
fn compaction_of(message: &StoredMessage) -> Option<i64> {
    let provenance = message.message.get("provenance")?;
    (provenance.get("kind")?.as_str()? == COMPACTION)
        .then(|| {
            provenance
                .get("coversUntilSeq")
                .and_then(serde_json::Value::as_i64)
        })
        .flatten()
}

fn is_compaction(message: &StoredMessage) -> bool {
    compaction_of(message).is_some()
}

pub use crate::store::{COMPACTION, is_summary};

/// The stored messages as the model sees them (see [`select`] and [`decode`]).
pub(super) fn parse(session_id: &str, messages: Vec<StoredMessage>) -> Vec<TranscriptMessage> {
    decode(session_id, select(messages))
}

/// The stored messages the model is sent, with their seqs: the newest summary first (when there
/// is one), then the messages it does not stand for.
pub(super) fn select(mut messages: Vec<StoredMessage>) -> Vec<StoredMessage> {
    if let Some(at) = messages.iter().rposition(is_compaction) {
        let summary = messages.remove(at);
        let covers = compaction_of(&summary).unwrap_or(0);
        messages.retain(|m| m.seq >= covers && !is_compaction(m));
        messages.insert(0, summary);
    }
    messages
}

/// Stored messages as transcript messages. One that is not in the transcript format (written by
/// hand into the database, or by an older version) is left out of the model's view and
/// reported; it stays in the store.
pub(super) fn decode(session_id: &str, messages: Vec<StoredMessage>) -> Vec<TranscriptMessage> {
    messages
        .into_iter()
        .filter_map(|m| match serde_json::from_value(m.message) {
            Ok(message) => Some(message),
            Err(e) => {
                tracing::warn!(session_id, seq = m.seq, error = %e, "a stored message is not a transcript message; the model does not see it");
                None
            }
        })
        .collect()
}

/// At most [`WINDOW`] messages after a leading summary (which stays), starting at a user
/// message (a window that starts inside a tool exchange would show results without their
/// calls).
fn trim(messages: &mut Vec<TranscriptMessage>) {
    let head = usize::from(messages.first().is_some_and(is_summary));
    let excess = messages.len().saturating_sub(head + WINDOW);
    messages.drain(head..head + excess);
    let start = messages[head..]
        .iter()
        .position(|m| matches!(m, TranscriptMessage::User(_)))
        .map_or(messages.len(), |at| head + at);
    messages.drain(head..start);
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use switchboard_protocol::message::TranscriptMessage;

    use super::ConversationCache;
    use crate::keys::SessionKey;
    use crate::store::Store;
    use crate::store::sqlite::SqliteStore;
    use crate::store::sqlite::tests::new_session;

    fn texts(messages: &[TranscriptMessage]) -> Vec<String> {
        messages
            .iter()
            .map(|m| serde_json::to_value(m).unwrap()["content"].to_string())
            .collect()
    }

    /// A run is given the transcript's last `seq` before it reads; a message appended in
    /// between (another session's announce) must not take the place of the run's own message.
    #[tokio::test]
    async fn a_message_appended_after_the_runs_seq_is_left_for_the_next_run() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path()).unwrap();
        let key = &SessionKey::from_canonical("agent:main:main".into());
        let user = |text: &str| -> TranscriptMessage {
            serde_json::from_value(json!({"role": "user", "content": text, "timestamp": 1}))
                .unwrap()
        };
        let first = store
            .append(key, Some(new_session(key.as_str())), vec![user("one")])
            .await
            .unwrap();
        let id = first.entry.session_id;
        let cache = ConversationCache::default();
        let window = cache.take(&store, &id, 1).await.unwrap();
        cache.put(&id, 1, window);

        // The run's message is seq 2; the announce lands at seq 3 before the run reads.
        store.append(key, None, vec![user("two")]).await.unwrap();
        store
            .append(key, None, vec![user("announce")])
            .await
            .unwrap();
        let topped_up = cache.take(&store, &id, 2).await.unwrap();
        assert_eq!(texts(&topped_up), ["\"one\"", "\"two\""]);
        let fresh = ConversationCache::default()
            .take(&store, &id, 2)
            .await
            .unwrap();
        assert_eq!(texts(&fresh), ["\"one\"", "\"two\""]);
        // The next run, given seq 3, sees all three.
        cache.put(&id, 2, topped_up);
        let next = cache.take(&store, &id, 3).await.unwrap();
        assert_eq!(texts(&next), ["\"one\"", "\"two\"", "\"announce\""]);
    }
}
