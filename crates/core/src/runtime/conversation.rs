//! The conversation a run shows the model: the newest messages of the transcript, parsed.
//!
//! Parsing a few hundred stored messages on every turn was most of a turn's CPU, so the parsed
//! window is kept per transcript together with the `seq` it covers. A run takes it out (runs of
//! one session never overlap), tops it up with whatever was appended since, and puts it back when
//! it ends. Any write from elsewhere (an injection, another session's send) moves the
//! transcript's last `seq`, so a stale window is never used as it is. Reads stop at the `seq`
//! the run was given: a message appended after it is left for the next run, never read in place
//! of one before it.
//!
//! The window and the cache are bounded by bytes as well as by counts: a window holds at most
//! [`MAX_WINDOW_BYTES`] of text (200 messages of 1 MB would be 200 MB, more than any model
//! reads); one over [`MAX_KEPT_WINDOW_BYTES`] is not kept (its next run reads it again: large
//! messages do not stay in memory after a burst of them), and windows are let go, any of them,
//! to keep all of them under [`MAX_BYTES`].

use std::collections::HashMap;
use std::sync::Mutex;

use serde_json::Value;
use switchboard_protocol::message::{ContentBlock, TranscriptMessage, UserContent};

use super::lock;
use crate::store::{Store, StoreError, StoredMessage};

/// Messages of the transcript the model sees (the newest ones).
pub const WINDOW: usize = 200;
/// Transcripts whose window is kept; past that the cache starts over.
const MAX_CACHED: usize = 1024;
/// The most the kept windows hold in all (their texts, approximately).
const MAX_BYTES: usize = 16 << 20;
/// The largest window kept between runs: 200 messages of 5 KB. A session of larger messages
/// reads its window at each run, a cost of the size of what its model is sent anyway.
const MAX_KEPT_WINDOW_BYTES: usize = 1 << 20;
/// The most text a window holds (about 2M tokens: more than any model's context); only a
/// newest turn larger than that makes a larger window, which is then not kept.
const MAX_WINDOW_BYTES: usize = 8 << 20;
/// What a message costs beyond its texts (the struct, its role and times).
const PER_MESSAGE_BYTES: usize = 128;
/// A transcript's first message's seq (the store numbers from 1, without gaps).
const FIRST_SEQ: i64 = 1;

/// A kept window: the `seq` it covers, its messages, their approximate size.
struct Window {
    seq: i64,
    messages: Vec<TranscriptMessage>,
    bytes: usize,
}

#[derive(Default)]
pub struct ConversationCache {
    state: Mutex<Windows>,
}

#[derive(Default)]
struct Windows {
    by_session: HashMap<String, Window>,
    /// The sum of the kept windows' `bytes`.
    bytes: usize,
}

impl Windows {
    fn remove(&mut self, session_id: &str) -> Option<Window> {
        let window = self.by_session.remove(session_id)?;
        self.bytes -= window.bytes;
        Some(window)
    }
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
        let cached = lock(&self.state).remove(session_id);
        let until = Some(last_seq + 1);
        // The window's bytes when known (a kept window's, and what was added to it): the
        // trim then need not walk every message to count them.
        let (mut messages, bytes) = match cached {
            Some(w) if w.seq == last_seq => (w.messages, Some(w.bytes)),
            Some(w) if w.seq < last_seq && (last_seq - w.seq) as usize <= WINDOW => {
                // Sequence numbers have no gaps: the `last_seq - seq` up to `last_seq` are new.
                let page = store
                    .history(session_id, (last_seq - w.seq) as usize, until)
                    .await?;
                if page.messages.iter().any(is_compaction) {
                    // A summary written from outside the run: the view starts over from it.
                    (load(store, session_id, last_seq).await?, None)
                } else {
                    let new = parse(session_id, page.messages);
                    let added = new.iter().map(message_bytes).sum::<usize>();
                    let mut messages = w.messages;
                    messages.extend(new);
                    (messages, Some(w.bytes + added))
                }
            }
            _ => (load(store, session_id, last_seq).await?, None),
        };
        trim(&mut messages, bytes);
        Ok(messages)
    }

    /// Drops the kept window of a transcript (a compaction changed what its model is sent).
    pub fn forget(&self, session_id: &str) {
        lock(&self.state).remove(session_id);
    }

    /// Keeps the window of a run that ended with the transcript at `last_seq`, unless it is
    /// larger than [`MAX_KEPT_WINDOW_BYTES`]; other windows go to make room for it.
    pub fn put(&self, session_id: &str, last_seq: i64, messages: Vec<TranscriptMessage>) {
        let bytes = messages.iter().map(message_bytes).sum::<usize>();
        let mut state = lock(&self.state);
        state.remove(session_id);
        if bytes > MAX_KEPT_WINDOW_BYTES {
            return;
        }
        if state.by_session.len() >= MAX_CACHED {
            *state = Windows::default();
        }
        while state.bytes + bytes > MAX_BYTES {
            let Some(victim) = state.by_session.keys().next().cloned() else {
                break;
            };
            state.remove(&victim);
        }
        state.bytes += bytes;
        let window = Window {
            seq: last_seq,
            messages,
            bytes,
        };
        state.by_session.insert(session_id.to_string(), window);
    }

    /// Adds `message`, just appended to `session_id` as `seq`, to its kept window when the
    /// window ends right before it: the next run does not read back and parse what was in hand.
    /// A transcript's first message (seq 1) is its whole window: a new session's first run reads
    /// nothing back. A window it does not follow (a write from elsewhere came between) or a
    /// summary leave the window as it is, for the next run to top up from the store; one that
    /// would grow past its bounds is let go.
    pub fn push(&self, session_id: &str, seq: i64, message: &TranscriptMessage) {
        if seq == FIRST_SEQ && !is_summary(message) {
            return self.put(session_id, seq, vec![message.clone()]);
        }
        let bytes = message_bytes(message);
        let mut state = lock(&self.state);
        let Some(window) = state.by_session.get_mut(session_id) else {
            return;
        };
        if window.seq + 1 != seq || is_summary(message) {
            return;
        }
        if window.bytes + bytes > MAX_KEPT_WINDOW_BYTES {
            state.remove(session_id);
            return;
        }
        window.seq = seq;
        window.messages.push(message.clone());
        window.bytes += bytes;
        state.bytes += bytes;
        if state.bytes > MAX_BYTES {
            state.remove(session_id);
        }
    }

    /// The approximate bytes of the kept windows.
    #[cfg(test)]
    fn bytes(&self) -> usize {
        lock(&self.state).bytes
    }
}

/// The approximate heap bytes of a message: its texts, arguments and image data.
fn message_bytes(message: &TranscriptMessage) -> usize {
    let blocks = |blocks: &[ContentBlock]| blocks.iter().map(block_bytes).sum::<usize>();
    PER_MESSAGE_BYTES
        + match message {
            TranscriptMessage::User(user) => match &user.content {
                UserContent::Text(text) => text.len(),
                UserContent::Blocks(content) => blocks(content),
            },
            TranscriptMessage::Assistant(a) => blocks(&a.content),
            TranscriptMessage::ToolResult(r) => blocks(&r.content),
        }
}

fn block_bytes(block: &ContentBlock) -> usize {
    match block {
        ContentBlock::Text { text } => text.len(),
        ContentBlock::Thinking {
            thinking,
            signature,
        } => thinking.len() + signature.as_ref().map_or(0, String::len),
        ContentBlock::ToolCall {
            id,
            name,
            arguments,
        } => id.len() + name.len() + value_bytes(arguments),
        ContentBlock::Image { data, mime_type } => data.len() + mime_type.len(),
    }
}

fn value_bytes(value: &Value) -> usize {
    match value {
        Value::String(s) => s.len(),
        Value::Array(items) => items.iter().map(value_bytes).sum(),
        Value::Object(map) => map.iter().map(|(k, v)| k.len() + value_bytes(v)).sum(),
        _ => 8,
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

/// At most [`WINDOW`] messages and [`MAX_WINDOW_BYTES`] after a leading summary (which stays),
/// starting at a user message (a window that starts inside a tool exchange would show results
/// without their calls). `known`: the messages' bytes ([`message_bytes`]) when the caller
/// has them; counted here otherwise. The three cuts (count, bytes, to a user message) are
/// found first and made in one drain: a drain moves every message after it, a warm window's
/// 200 at each turn, and the count's cut of the oldest question usually leaves its answer to
/// cut too.
fn trim(messages: &mut Vec<TranscriptMessage>, known: Option<usize>) {
    let head = usize::from(messages.first().is_some_and(is_summary));
    let excess = messages.len().saturating_sub(head + WINDOW);
    let counted = head + excess;
    let total = known.unwrap_or_else(|| messages.iter().map(message_bytes).sum());
    debug_assert_eq!(total, messages.iter().map(message_bytes).sum::<usize>());
    let dropped: usize = messages[head..counted].iter().map(message_bytes).sum();
    let mut bytes = total.saturating_sub(dropped);
    // At most MAX_WINDOW_BYTES too (far more text than any model's context holds), the newest
    // user message and what follows it always kept.
    let newest_user = messages[counted..]
        .iter()
        .rposition(|m| matches!(m, TranscriptMessage::User(_)))
        .map_or(counted, |at| counted + at);
    let mut cut = counted;
    while bytes > MAX_WINDOW_BYTES && cut < newest_user {
        bytes -= message_bytes(&messages[cut]);
        cut += 1;
    }
    let start = messages[cut..]
        .iter()
        .position(|m| matches!(m, TranscriptMessage::User(_)))
        .map_or(messages.len(), |at| cut + at);
    messages.drain(head..start);
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use switchboard_protocol::message::{TranscriptMessage, UserContent};

    use super::{
        ConversationCache, MAX_BYTES, MAX_KEPT_WINDOW_BYTES, MAX_WINDOW_BYTES, WINDOW,
        message_bytes, trim,
    };
    use crate::keys::SessionKey;
    use crate::store::SessionStore;
    use crate::store::sqlite::SqliteStore;
    use crate::store::sqlite::tests::new_session;

    fn texts(messages: &[TranscriptMessage]) -> Vec<String> {
        messages
            .iter()
            .map(|m| serde_json::to_value(m).unwrap()["content"].to_string())
            .collect()
    }

    fn user(text: &str) -> TranscriptMessage {
        serde_json::from_value(json!({"role": "user", "content": text, "timestamp": 1})).unwrap()
    }

    /// A store with one transcript of one message ("one"), and a cache that keeps its window.
    async fn one_message_kept() -> (tempfile::TempDir, SqliteStore, String, ConversationCache) {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path()).unwrap();
        let key = &SessionKey::from_canonical("agent:main:main".into());
        let first = store
            .append(key, Some(new_session(key.as_str())), vec![user("one")])
            .await
            .unwrap();
        let id = first.entry.session_id;
        let cache = ConversationCache::default();
        let window = cache.take(&store, &id, 1).await.unwrap();
        cache.put(&id, 1, window);
        (dir, store, id, cache)
    }

    /// A run is given the transcript's last `seq` before it reads; a message appended in
    /// between (another session's announce) must not take the place of the run's own message.
    #[tokio::test]
    async fn a_message_appended_after_the_runs_seq_is_left_for_the_next_run() {
        let (_dir, store, id, cache) = one_message_kept().await;
        let key = &SessionKey::from_canonical("agent:main:main".into());

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

    /// A kept window topped up from the store with messages past the bytes' bound is cut as
    /// the same window read whole is: from the oldest message, its newest user message kept.
    #[tokio::test]
    async fn a_kept_window_topped_up_past_its_bytes_is_cut_as_one_read_whole() {
        let (_dir, store, id, cache) = one_message_kept().await;
        let key = &SessionKey::from_canonical("agent:main:main".into());
        let big = "b".repeat(MAX_WINDOW_BYTES / 3);
        for text in [&big, &big, &big, &"last".to_string()] {
            store.append(key, None, vec![user(text)]).await.unwrap();
        }
        let topped_up = cache.take(&store, &id, 5).await.unwrap();
        let read_whole = ConversationCache::default()
            .take(&store, &id, 5)
            .await
            .unwrap();
        assert_eq!(topped_up, read_whole);
        assert_eq!(
            topped_up.len(),
            3,
            "the oldest two went to keep the bytes' bound"
        );
        assert_eq!(texts(&topped_up[2..]), ["\"last\""]);
    }

    /// The run's own message joins the kept window as it is written: the next run takes it from
    /// there, not from the store; a message that does not follow the window is not added.
    #[tokio::test]
    async fn a_message_in_hand_joins_the_window_without_a_read() {
        let (_dir, store, id, cache) = one_message_kept().await;
        // Not in the store: only the window can hold it.
        cache.push(&id, 2, &user("in hand"));
        let taken = cache.take(&store, &id, 2).await.unwrap();
        assert_eq!(texts(&taken), ["\"one\"", "\"in hand\""]);
        // A gap: the window stays as it was.
        cache.put(&id, 2, taken);
        cache.push(&id, 4, &user("after a gap"));
        let kept = cache.take(&store, &id, 2).await.unwrap();
        assert_eq!(texts(&kept), ["\"one\"", "\"in hand\""]);
    }

    /// A new transcript's first message is its window as it is written: its first run reads
    /// nothing back (before, a new session's first run read its one message from the store, and
    /// asked it for a summary). A later message with no window kept is left to the store.
    #[tokio::test]
    async fn a_transcripts_first_message_is_its_window_without_a_read() {
        let dir = tempfile::tempdir().unwrap();
        let store = SqliteStore::open(dir.path()).unwrap();
        let cache = ConversationCache::default();
        // Nothing in the store: only the window can hold it.
        cache.push("t-new", 1, &user("first"));
        let taken = cache.take(&store, "t-new", 1).await.unwrap();
        assert_eq!(texts(&taken), ["\"first\""]);
        cache.push("t-other", 2, &user("second"));
        let read = cache.take(&store, "t-other", 2).await.unwrap();
        assert!(read.is_empty(), "{:?}", texts(&read));
    }

    fn window(messages: usize, text_bytes: usize) -> Vec<TranscriptMessage> {
        let text = "x".repeat(text_bytes);
        (0..messages)
            .map(|_| {
                serde_json::from_value(json!({"role": "user", "content": text, "timestamp": 1}))
                    .unwrap()
            })
            .collect()
    }

    /// Large messages are not held in memory: a window past its own bound is not kept, and the
    /// kept ones never add up past the cache's bound, however many sessions there are.
    #[test]
    fn the_cache_is_bounded_by_bytes() {
        let cache = ConversationCache::default();
        cache.put("huge", 1, window(10, MAX_KEPT_WINDOW_BYTES / 5));
        assert_eq!(cache.bytes(), 0);
        let each = MAX_KEPT_WINDOW_BYTES / 2;
        for session in 0..(MAX_BYTES / each) * 3 {
            cache.put(&format!("s{session}"), 1, window(1, each));
            assert!(cache.bytes() <= MAX_BYTES, "{} bytes kept", cache.bytes());
        }
        // Small windows are still kept, and a window put again replaces its old size.
        let small = ConversationCache::default();
        small.put("a", 1, window(2, 1000));
        small.put("a", 2, window(3, 1000));
        small.put("b", 1, window(1, 1000));
        let kept = small.bytes();
        assert!((4000..5000).contains(&kept), "{kept}");
        small.forget("a");
        assert!((1000..1200).contains(&small.bytes()), "{}", small.bytes());
    }

    /// A window of large messages keeps the newest ones that fit its bytes; the newest user
    /// message stays even when it alone is larger.
    #[test]
    fn a_window_is_cut_to_its_bytes_from_the_oldest_message() {
        let mut messages = window(20, MAX_WINDOW_BYTES / 4);
        trim(&mut messages, None);
        assert_eq!(messages.len(), 3);
        let bytes: usize = messages.iter().map(message_bytes).sum();
        assert!(bytes <= MAX_WINDOW_BYTES, "{bytes}");
        let mut one = window(1, MAX_WINDOW_BYTES * 2);
        trim(&mut one, None);
        assert_eq!(one.len(), 1);
    }

    /// A trim given the window's bytes (a kept window's) cuts exactly as one that counts them:
    /// by count, by bytes, to a user message, with a leading summary kept.
    #[test]
    fn a_trim_given_the_bytes_cuts_as_one_that_counts_them() {
        let summary: TranscriptMessage = serde_json::from_value(json!({
            "role": "user", "content": "earlier", "timestamp": 1,
            "provenance": {"kind": super::COMPACTION, "coversUntilSeq": 3}
        }))
        .unwrap();
        let answer: TranscriptMessage = serde_json::from_value(json!({
            "role": "assistant", "content": [{"type": "text", "text": "ok"}], "timestamp": 1
        }))
        .unwrap();
        let mut led = vec![summary.clone()];
        led.extend(window(WINDOW + 7, 10));
        // A summary whose own bytes put the window over the bound after the count's cut.
        let mut large_summary = summary;
        if let TranscriptMessage::User(user) = &mut large_summary {
            user.content = UserContent::Text("s".repeat(8_700));
        }
        let mut led_to_the_bound = vec![large_summary];
        led_to_the_bound.extend(window(WINDOW + 5, 41_772));
        let mut answered = vec![answer.clone(), answer];
        answered.extend(window(WINDOW, 10));
        // A warm session's turns (a question, its answer) with the next question: the
        // count's cut takes the oldest question, and its answer goes with it.
        let mut turns = Vec::new();
        for _ in 0..WINDOW / 2 {
            turns.extend(window(1, 10));
            turns.push(answered[0].clone());
        }
        turns.extend(window(1, 10));
        // Each window, and how many messages the trim leaves of it.
        let cases = [
            (window(20, MAX_WINDOW_BYTES / 4), 3),
            (window(WINDOW + 9, 100), WINDOW),
            // Over the bytes' bound before the count's cut, under it after.
            (window(WINDOW + 5, 41_772), WINDOW),
            (window(3, 100), 3),
            (led, 1 + WINDOW),
            // The count's cut leaves the summary and 200; the bytes' cut one more.
            (led_to_the_bound, WINDOW),
            // The two answers go with the count's cut.
            (answered, WINDOW),
            (turns, WINDOW - 1),
        ];
        for (case, left) in cases {
            let (mut counted, mut given) = (case.clone(), case.clone());
            trim(&mut counted, None);
            trim(&mut given, Some(case.iter().map(message_bytes).sum()));
            assert_eq!(given, counted);
            assert_eq!(counted.len(), left);
        }
        let mut full = window(WINDOW + 5, 41_772);
        let bytes = full.iter().map(message_bytes).sum();
        trim(&mut full, Some(bytes));
        assert_eq!(
            full.len(),
            WINDOW,
            "the count's cut brought it under the bytes' bound"
        );
    }
}
