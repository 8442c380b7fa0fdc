//! A reply in the parts a chat accepts: at most `textChunkLimit` characters each (the
//! platform's limit, Telegram's 4,096, Discord's 2,000, unless set lower), cut at the last
//! paragraph break that fits, else the last line break, sentence end or space, else hard; and
//! at most `maxReplyParts` of them: a longer reply's last part says how much more there is and
//! that the whole answer is in the session's transcript. Each part taken is recorded before the
//! next goes out, so a retry posts only the rest.

use std::sync::Arc;

use crate::channel::ChannelError;
use crate::config::{Access, MAX_INBOUND_CHARS, MAX_REPLY_PARTS, Platform};
use crate::store::{DeliveryRecord, Store, WriteOp};

/// How a bot's replies are cut.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Caps {
    /// The most characters in one part.
    pub chunk: usize,
    /// The most parts of one reply.
    pub parts: usize,
    /// The most characters of one message the agent reads.
    pub inbound: usize,
}

impl Caps {
    /// The caps `access` sets (resolved) for a bot of platform `P`.
    pub fn of<P: Platform>(access: &Access) -> Self {
        let chunk = access.text_chunk_limit.unwrap_or(P::TEXT_LIMIT);
        let parts = access.max_reply_parts.unwrap_or(MAX_REPLY_PARTS);
        let inbound = access.max_inbound_chars.unwrap_or(MAX_INBOUND_CHARS);
        Self {
            chunk: chunk.clamp(1, P::TEXT_LIMIT) as usize,
            parts: parts.max(1) as usize,
            inbound: inbound.max(1) as usize,
        }
    }
}

/// One delivery attempt of a record's text in parts: the parts, those not taken yet
/// ([`Parts::rest`], in order), and each one recorded as taken ([`Parts::took`]) before the
/// next is posted.
pub(crate) struct Parts<'a> {
    store: &'a Arc<dyn Store>,
    record: &'a DeliveryRecord,
    parts: Vec<String>,
}

impl<'a> Parts<'a> {
    pub fn new(store: &'a Arc<dyn Store>, record: &'a DeliveryRecord, caps: Caps) -> Self {
        let parts = capped(split(&record.text, caps.chunk), caps, record);
        Self {
            store,
            record,
            parts,
        }
    }

    /// The parts not taken yet, with their index, in order.
    pub fn rest(&self) -> impl Iterator<Item = (usize, &str)> {
        let taken = self.record.parts_sent as usize;
        self.parts
            .iter()
            .map(String::as_str)
            .enumerate()
            .skip(taken)
    }

    /// Records part `index` as taken (the last one is the delivery's own `delivered` mark).
    pub async fn took(&self, index: usize) -> Result<(), ChannelError> {
        if index + 1 >= self.parts.len() {
            return Ok(());
        }
        let progress = WriteOp::DeliveryProgress {
            id: self.record.id.clone(),
            parts_sent: (index + 1) as u32,
        };
        self.store
            .write_batch(vec![progress])
            .await
            .map(|_| ())
            .map_err(|e| ChannelError::Retry(e.to_string()))
    }
}

/// `parts`, at most `caps.parts` of them: when there are more, the last one posted is a note
/// (cut to one part) that says how many are left out and where the whole answer is; with room
/// for one part only, as much of the answer's start as fits beside the note.
fn capped(mut parts: Vec<String>, caps: Caps, record: &DeliveryRecord) -> Vec<String> {
    if parts.len() <= caps.parts {
        return parts;
    }
    let keep = caps.parts - 1;
    let session = record
        .session_key
        .as_ref()
        .map_or_else(String::new, |key| format!(" of {}", key.display()));
    let note = format!(
        "[{} more parts of this answer are not posted here (at most {} a reply): the whole answer is in the transcript{session}.]",
        parts.len() - keep,
        caps.parts
    );
    let note: String = note.chars().take(caps.chunk).collect();
    if keep == 0 {
        let room = caps.chunk.saturating_sub(note.chars().count() + 1);
        let start: String = parts[0].chars().take(room).collect();
        return vec![match start.trim().is_empty() {
            true => note,
            false => format!("{}\n{note}", start.trim_end()),
        }];
    }
    parts.truncate(keep);
    parts.push(note);
    parts
}

/// Where a part may end, best first: after the separator.
const BREAKS: &[&str] = &["\n\n", "\n", ". ", "! ", "? ", " "];

/// `text` in order, each part non-empty and at most `limit` characters; joined back (with the
/// whitespace at the cuts) it is `text`.
pub(crate) fn split(text: &str, limit: usize) -> Vec<String> {
    let mut parts = Vec::new();
    let mut rest = text;
    while rest.chars().count() > limit {
        let end = rest
            .char_indices()
            .nth(limit)
            .map_or(rest.len(), |(at, _)| at);
        let window = &rest[..end];
        let cut = BREAKS
            .iter()
            .find_map(|b| window.rfind(b).map(|at| at + b.len()))
            .filter(|at| *at > 0)
            .unwrap_or(end);
        let (part, tail) = rest.split_at(cut);
        if !part.trim().is_empty() {
            parts.push(part.trim_end().to_string());
        }
        rest = tail.trim_start_matches(['\n', ' ']);
    }
    if !rest.trim().is_empty() {
        parts.push(rest.to_string());
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(text: &str) -> DeliveryRecord {
        DeliveryRecord {
            id: "d1".into(),
            idempotency_key: None,
            kind: "reply".into(),
            session_key: None,
            source_key: None,
            run_id: None,
            channel: "discord".into(),
            to: "1".into(),
            account_id: None,
            thread_id: None,
            text: text.into(),
            status: crate::store::DeliveryStatus::Pending,
            attempts: 0,
            next_attempt_at: 0,
            detail: None,
            trace: None,
            created_at: 0,
            updated_at: 0,
            delivered_at: None,
            parts_sent: 0,
        }
    }

    #[test]
    fn a_reply_over_the_cap_ends_with_a_note_within_the_caps() {
        let text = "word ".repeat(400);
        let cut = |chunk, parts| {
            let caps = Caps {
                chunk,
                parts,
                inbound: 1,
            };
            capped(split(&text, chunk), caps, &record(&text))
        };
        let three = cut(100, 3);
        assert_eq!(three.len(), 3);
        assert!(three[..2].iter().all(|p| p.starts_with("word")));
        assert!(three[2].starts_with("[18 more parts"), "{}", three[2]);
        // A note longer than a part is cut to one part.
        let tiny = cut(20, 3);
        assert_eq!(tiny.len(), 3);
        assert!(tiny.iter().all(|p| p.chars().count() <= 20), "{tiny:?}");
        // Room for one part: the answer's start, then the note.
        let one = cut(300, 1);
        assert_eq!(one.len(), 1);
        assert!(one[0].starts_with("word word") && one[0].contains("not posted here"));
        assert!(one[0].chars().count() <= 300);
        assert_eq!(cut(4000, 10), [text.as_str()], "a short reply is one part");
    }

    const LIMIT: usize = 4096;

    #[test]
    fn short_texts_are_one_part() {
        assert_eq!(split("hello", LIMIT), vec!["hello"]);
        assert!(split("", LIMIT).is_empty());
    }

    #[test]
    fn parts_break_on_paragraphs_then_sentences_and_keep_the_order() {
        let text = "one two.\n\nthree four. five six";
        assert_eq!(split(text, 12), vec!["one two.", "three four.", "five six"]);
        let words = "a".repeat(10);
        assert_eq!(split(&words, 4), vec!["aaaa", "aaaa", "aa"]);
    }

    #[test]
    fn a_long_reply_comes_back_whole_in_parts_under_the_limit() {
        let paragraph = "Sentence number one is here. ".repeat(30);
        let text = [paragraph.as_str(); 12].join("\n\n");
        let cut = split(&text, LIMIT);
        assert!(cut.len() >= 3, "{} parts", cut.len());
        assert!(cut.iter().all(|p| p.chars().count() <= LIMIT));
        let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(squash(&cut.join(" ")), squash(&text));
    }

    #[test]
    fn multibyte_text_is_cut_on_characters() {
        let text = "é".repeat(9000);
        let cut = split(&text, LIMIT);
        assert_eq!(
            cut.iter().map(|p| p.chars().count()).collect::<Vec<_>>(),
            [4096, 4096, 808]
        );
    }
}
