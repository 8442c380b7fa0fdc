//! Long texts in parts a chat accepts (Telegram's 4,096 characters, Discord's 2,000): at most
//! `limit` characters each, cut at the last paragraph break that fits, else the last line break,
//! sentence end or space, else hard.

use crate::channel::ChannelError;
use crate::store::{DeliveryRecord, Store, WriteOp};

/// Records that `taken` of a delivery's `of` parts went out, so a retry sends only the rest;
/// nothing after the last one (the delivered mark says it).
pub(crate) async fn record_taken(
    store: &dyn Store,
    record: &DeliveryRecord,
    (taken, of): (usize, usize),
) -> Result<(), ChannelError> {
    if taken >= of {
        return Ok(());
    }
    let progress = WriteOp::DeliveryProgress {
        id: record.id.clone(),
        parts_sent: taken as u32,
    };
    store
        .write_batch(vec![progress])
        .await
        .map(|_| ())
        .map_err(|e| ChannelError::Retry(e.to_string()))
}

/// Where a part may end, best first: after the separator.
const BREAKS: &[&str] = &["\n\n", "\n", ". ", "! ", "? ", " "];

/// `text` in order, each part non-empty and at most `limit` characters; joined back (with the
/// whitespace at the cuts) it is `text`.
pub(crate) fn parts(text: &str, limit: usize) -> Vec<String> {
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

    const LIMIT: usize = 4096;

    #[test]
    fn short_texts_are_one_part() {
        assert_eq!(parts("hello", LIMIT), vec!["hello"]);
        assert!(parts("", LIMIT).is_empty());
    }

    #[test]
    fn parts_break_on_paragraphs_then_sentences_and_keep_the_order() {
        let text = "one two.\n\nthree four. five six";
        assert_eq!(parts(text, 12), vec!["one two.", "three four.", "five six"]);
        let words = "a".repeat(10);
        assert_eq!(parts(&words, 4), vec!["aaaa", "aaaa", "aa"]);
    }

    #[test]
    fn a_long_reply_comes_back_whole_in_parts_under_the_limit() {
        let paragraph = "Sentence number one is here. ".repeat(30);
        let text = [paragraph.as_str(); 12].join("\n\n");
        let cut = parts(&text, LIMIT);
        assert!(cut.len() >= 3, "{} parts", cut.len());
        assert!(cut.iter().all(|p| p.chars().count() <= LIMIT));
        let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(squash(&cut.join(" ")), squash(&text));
    }

    #[test]
    fn multibyte_text_is_cut_on_characters() {
        let text = "é".repeat(9000);
        let cut = parts(&text, LIMIT);
        assert_eq!(
            cut.iter().map(|p| p.chars().count()).collect::<Vec<_>>(),
            [4096, 4096, 808]
        );
    }
}
