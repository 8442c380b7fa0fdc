//! Transcripts: how appended messages are numbered and stored (and which one is the newest
//! compaction summary), how a history page reads, how stored bodies become messages.

use std::collections::HashMap;

use switchboard_protocol::message::TranscriptMessage;

use crate::store::dialect::{Dialect, Param};
use crate::store::{
    Appended, HistoryPage, SessionEntry, StoreError, StoredMessage, StoredText, is_summary,
};

/// One message to store: its `seq`, its role and time (columns of their own) and its JSON,
/// encoded once: the same text is the row's body and its mirror line's message.
pub(crate) struct MessageRow {
    pub seq: i64,
    pub role: &'static str,
    pub ts: i64,
    pub body: String,
}

/// The statement that stores a [`MessageRow`] of a transcript.
pub(crate) const INSERT_MESSAGE: &str =
    "INSERT INTO messages (session_id, seq, role, ts, body) VALUES (?1, ?2, ?3, ?4, ?5)";

/// Messages numbered after a transcript's last one.
pub(crate) struct Numbered {
    pub rows: Vec<MessageRow>,
    /// The transcript's `last_seq` once they are stored.
    pub last_seq: i64,
    /// The seq of the newest compaction summary among them, if any: the transcript's
    /// `summary_seq` moves to it (and stays where it was otherwise).
    pub summary_seq: Option<i64>,
}

/// The statement that records a transcript's new end and summary (`?1` the transcript).
pub(crate) const MARK_TRANSCRIPT: &str = "UPDATE transcripts SET last_seq = ?2, \
     summary_seq = coalesce(?3, summary_seq) WHERE session_id = ?1";

/// The statement that moves a session's `updated_at` forward to `?2`, never back (`?1` its
/// key): [`super::sessions::touch`] as the database applies it.
pub(crate) fn touch_session(d: Dialect) -> String {
    format!(
        "UPDATE sessions SET updated_at = {}(updated_at, ?2) WHERE key = ?1",
        d.greatest
    )
}

impl Numbered {
    /// The same messages, numbered from 1, numbered after `base` instead (a store that reads
    /// the transcript's end in the statement that stores them).
    pub(crate) fn after(mut self, base: i64) -> Self {
        for row in &mut self.rows {
            row.seq += base;
        }
        self.last_seq += base;
        self.summary_seq = self.summary_seq.map(|seq| seq + base);
        self
    }

    /// The stored rows, given up to the mirror that appends them.
    pub(crate) fn into_rows(self) -> Vec<MessageRow> {
        self.rows
    }
}

/// Numbers `messages` from `last_seq + 1` with no gaps, and encodes each one: the store's edge,
/// where a typed message becomes its transcript JSON.
pub(crate) fn number(
    last_seq: i64,
    messages: Vec<TranscriptMessage>,
) -> Result<Numbered, StoreError> {
    let mut seq = last_seq;
    let mut summary_seq = None;
    let mut rows = Vec::with_capacity(messages.len());
    for message in messages {
        seq += 1;
        if is_summary(&message) {
            summary_seq = Some(seq);
        }
        // Written from the typed message: no `Value` tree in between, and its fields in their
        // declared order (a map's would be sorted; a reader of JSON sees the same object).
        let body = serde_json::to_string(&message)
            .map_err(|e| StoreError::Backend(format!("message {seq} could not be encoded: {e}")))?;
        rows.push(MessageRow {
            seq,
            role: message.role(),
            ts: message.timestamp(),
            body,
        });
    }
    Ok(Numbered {
        rows,
        last_seq: seq,
        summary_seq,
    })
}

/// What `append` answers: the entry touched at `now` with its new last seq, and each message's
/// seq.
pub(crate) fn appended(
    mut entry: SessionEntry,
    numbered: &Numbered,
    now: i64,
    created: bool,
) -> Appended {
    super::sessions::touch(&mut entry, now);
    entry.last_seq = numbered.last_seq;
    Appended {
        entry,
        seqs: numbered.rows.iter().map(|r| r.seq).collect(),
        created,
    }
}

/// A stored body as a message.
pub(crate) fn parse_message(seq: i64, body: &str) -> Result<StoredMessage, StoreError> {
    let message = serde_json::from_str(body)
        .map_err(|e| StoreError::Backend(format!("stored message {seq} is not JSON: {e}")))?;
    Ok(StoredMessage { seq, message })
}

/// A history page: the newest `limit` messages below `before` (every one when `None`).
pub(crate) const HISTORY: &str =
    "SELECT seq, body FROM messages WHERE session_id = ?1 AND seq < ?2 ORDER BY seq DESC LIMIT ?3";

/// The values of [`HISTORY`].
pub(crate) fn history_params(session_id: &str, limit: usize, before: Option<i64>) -> Vec<Param> {
    vec![
        session_id.into(),
        before.unwrap_or(i64::MAX).into(),
        i64::try_from(limit).unwrap_or(i64::MAX).into(),
    ]
}

/// The page of [`HISTORY`]'s rows (newest first): oldest first, and where to read on from
/// (nothing once the first message is in it).
pub(crate) fn history_page(mut newest_first: Vec<StoredText>) -> HistoryPage<StoredText> {
    newest_first.reverse();
    let next_before = newest_first.first().map(|m| m.seq).filter(|seq| *seq > 1);
    HistoryPage {
        messages: newest_first,
        next_before,
    }
}

/// The transcript's newest compaction summary, when its seq is below `?2`.
pub(crate) const SUMMARY: &str = "SELECT m.seq, m.body FROM transcripts t JOIN messages m \
     ON m.session_id = t.session_id AND m.seq = t.summary_seq \
     WHERE t.session_id = ?1 AND t.summary_seq < ?2";

/// The last messages of several transcripts, each oldest first, in the order of `session_ids`
/// (a transcript with none answers an empty list).
pub(crate) fn gather_last(
    session_ids: &[String],
    rows: Vec<(String, StoredMessage)>,
) -> Vec<(String, Vec<StoredMessage>)> {
    let mut out: Vec<(String, Vec<StoredMessage>)> = session_ids
        .iter()
        .map(|id| (id.clone(), Vec::new()))
        .collect();
    let index: HashMap<&str, usize> = session_ids
        .iter()
        .enumerate()
        .map(|(i, id)| (id.as_str(), i))
        .collect();
    for (session_id, message) in rows {
        if let Some(i) = index.get(session_id.as_str()) {
            out[*i].1.push(message);
        }
    }
    for (_, messages) in &mut out {
        messages.sort_by_key(|m| m.seq);
    }
    out
}
