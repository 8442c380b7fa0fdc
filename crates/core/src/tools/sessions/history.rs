//! `sessions_history` (SPEC §7.2): another session's transcript, made safe for the reader's
//! context.
//!
//! Safety, in order: heavy fields go (`usage`, `cost`, tool `details`, thinking signatures, image
//! data → `{omitted, bytes}`), every text over [`MAX_TEXT_CHARS`] is cut with a visible marker, a
//! message still over the whole budget is replaced by a placeholder that names its seq and role,
//! and the array is capped at [`MAX_BYTES`] by dropping the *oldest* messages. Nothing becomes
//! unreachable: `nextBefore` always points below the oldest message returned, so paging back with
//! it reaches every message, dropped ones included. With `includeTools: false` tool results are
//! skipped while reading, and more rows are read until the page is full (or the transcript's
//! start, or [`MAX_SCAN`] rows), so pages do not come up short without a `nextBefore`.

use std::sync::Arc;

use serde_json::Value;
use switchboard_protocol::lenient::clamp_or;
use switchboard_protocol::message::{ContentBlock, SeqMessage, TranscriptMessage, UserContent};
use switchboard_protocol::reading::{
    OmittedData, OmittedMessage, ReadMessage, TrimmedBlock, TrimmedBody, TrimmedContent,
    TrimmedMessage,
};
use switchboard_protocol::session_tools::{HistoryParams, HistoryResult, ToolFailure};

use super::{Answer, SessionTools, store_failure};
use crate::access::Operation;
use crate::resolve::Reference;
use crate::runtime::tool::{ToolContext, ToolHints, TypedTool};
use crate::sessions::row;
use crate::store::StoredMessage;

pub const DEFAULT_LIMIT: i64 = 50;
pub const MAX_LIMIT: i64 = 200;
/// Longest text kept in any one text field, in characters.
pub const MAX_TEXT_CHARS: usize = 4_000;
/// Cap of the serialized `messages` array.
pub const MAX_BYTES: usize = 80 * 1024;
/// Rows read per call at most while skipping tool results.
const MAX_SCAN: usize = 2_000;

pub struct SessionsHistory(pub Arc<SessionTools>);

impl TypedTool for SessionsHistory {
    type Params = HistoryParams;
    type Output = Answer<HistoryResult>;

    fn name(&self) -> &'static str {
        "sessions_history"
    }

    fn hints(&self) -> ToolHints {
        ToolHints::READS
    }

    fn description(&self) -> &'static str {
        "Read the transcript of one session (another chat, a cron job, a sub-agent you spawned). \
         Messages come oldest first, each with its seq; tool results are left out unless \
         includeTools is true. Long texts are cut and big results trimmed to keep your context \
         small: `truncated`/`droppedMessages` say older messages were left out and \
         `contentTruncated` that some text was cut. When `nextBefore` is present, call again with \
         before=nextBefore to read further back. Find session keys with sessions_list."
    }

    async fn run(&self, ctx: &ToolContext, p: HistoryParams) -> Self::Output {
        match self.history(ctx, p).await {
            Ok(result) => Answer::Done(result),
            Err(failure) => Answer::Failed(failure),
        }
    }
}

impl SessionsHistory {
    async fn history(
        &self,
        ctx: &ToolContext,
        p: HistoryParams,
    ) -> Result<HistoryResult, ToolFailure> {
        let reference = Reference {
            key: p.session_key.as_deref(),
            label: p.label.as_deref(),
            agent_id: p.agent_id.as_deref(),
        };
        let entry = self
            .0
            .resolver
            .for_agent(
                &self.0.requester(ctx),
                &ctx.caller().agent_id,
                reference,
                Operation::History,
            )
            .await?;
        let limit = clamp_or(p.limit, DEFAULT_LIMIT, 1, MAX_LIMIT) as usize;
        let include_tools = p.include_tools.unwrap_or(false);
        let page = read(
            ctx,
            &entry.session_id,
            limit,
            p.before.filter(|b| *b > 0),
            include_tools,
        )
        .await?;
        let capped = cap(page.messages);
        Ok(HistoryResult {
            session_key: row::<ReadMessage>(&entry, ctx.store(), &self.0.config).key,
            messages: capped.messages,
            // Anything cut or dropped, as the reference counts it; the finer fields say which.
            truncated: capped.dropped > 0 || capped.content_truncated || capped.stripped,
            dropped_messages: capped.dropped,
            content_truncated: capped.content_truncated,
            bytes: capped.bytes,
            next_before: capped.next_before.or(page.next_before),
        })
    }
}

/// Up to `limit` messages below `before`, oldest first, and where to continue.
struct Page {
    messages: Vec<SeqMessage>,
    next_before: Option<i64>,
}

/// Stored rows as transcript messages. A row that is not in the transcript format (written
/// into the database by hand) is left out of another model's view as it is of its own, and
/// reported; it stays in the store and in `chat.history`.
pub(crate) fn transcript(session_id: &str, rows: Vec<StoredMessage>) -> Vec<SeqMessage> {
    rows.into_iter()
        .filter_map(|m| match serde_json::from_value(m.message) {
            Ok(message) => Some(SeqMessage { seq: m.seq, message }),
            Err(e) => {
                tracing::warn!(session_id, seq = m.seq, error = %e, "a stored message is not a transcript message; a reading model does not see it");
                None
            }
        })
        .collect()
}

/// Reads the newest `limit` messages below `before`; without tools, keeps reading older rows
/// until `limit` non-tool messages, the first message, or [`MAX_SCAN`] rows.
async fn read(
    ctx: &ToolContext,
    session_id: &str,
    limit: usize,
    before: Option<i64>,
    include_tools: bool,
) -> Result<Page, ToolFailure> {
    let store = ctx.store();
    if include_tools {
        let page = store
            .history(session_id, limit, before)
            .await
            .map_err(store_failure)?;
        return Ok(Page {
            messages: transcript(session_id, page.messages),
            next_before: page.next_before,
        });
    }
    let mut kept: Vec<SeqMessage> = Vec::new();
    let mut cursor = before;
    let mut scanned = 0;
    loop {
        let want = limit - kept.len();
        // Read ahead a little: transcripts with tools are about half tool results.
        let batch = (want * 2).clamp(20, 400);
        let page = store
            .history(session_id, batch, cursor)
            .await
            .map_err(store_failure)?;
        scanned += page.messages.len();
        let mut older: Vec<SeqMessage> = transcript(session_id, page.messages)
            .into_iter()
            .filter(|m| !matches!(m.message, TranscriptMessage::ToolResult(_)))
            .collect();
        cursor = page.next_before;
        if older.len() > want {
            // Read more than needed: the surplus (the oldest) stays for the next page.
            older.drain(..older.len() - want);
            cursor = older.first().map(|m| m.seq).filter(|seq| *seq > 1);
        }
        older.append(&mut kept);
        kept = older;
        if kept.len() >= limit || cursor.is_none() || scanned >= MAX_SCAN {
            break;
        }
    }
    Ok(Page {
        messages: kept,
        next_before: cursor,
    })
}

/// Messages after the byte cap.
struct Capped {
    messages: Vec<ReadMessage>,
    dropped: usize,
    content_truncated: bool,
    /// A heavy field (usage, cost, details, a signature, image data) was removed.
    stripped: bool,
    bytes: usize,
    /// Set when messages were dropped: the seq of the oldest message kept.
    next_before: Option<i64>,
}

/// Trims every message, then keeps the newest ones whose array fits in [`MAX_BYTES`].
fn cap(messages: Vec<SeqMessage>) -> Capped {
    let (mut content_truncated, mut stripped) = (false, false);
    let mut trimmed: Vec<(ReadMessage, usize)> = Vec::with_capacity(messages.len());
    for message in messages {
        let (message, trim) = sanitize(message);
        content_truncated |= trim.cut;
        stripped |= trim.stripped;
        let size = json_len(&message);
        // `[` + `]`: a message over this could never be returned, whatever the limit.
        let (message, size) = if size > MAX_BYTES - 2 {
            let omitted = placeholder(&message, size);
            content_truncated = true;
            let size = json_len(&omitted);
            (omitted, size)
        } else {
            (ReadMessage::Trimmed(message), size)
        };
        trimmed.push((message, size));
    }
    // Newest first: keep while the array (brackets and commas included) fits.
    let mut bytes = 2;
    let mut keep = 0;
    for (i, (_, size)) in trimmed.iter().enumerate().rev() {
        let comma = usize::from(keep > 0);
        if bytes + size + comma > MAX_BYTES {
            break;
        }
        bytes += size + comma;
        keep = trimmed.len() - i;
    }
    let dropped = trimmed.len() - keep;
    let messages: Vec<ReadMessage> = trimmed.into_iter().skip(dropped).map(|(m, _)| m).collect();
    let next_before = if dropped > 0 {
        messages.first().map(ReadMessage::seq)
    } else {
        None
    };
    Capped {
        messages,
        dropped,
        content_truncated,
        stripped,
        bytes,
        next_before,
    }
}

/// The size of `value` as JSON: the same whatever order its fields are written in.
fn json_len<T: serde::Serialize>(value: &T) -> usize {
    serde_json::to_string(value).map_or(0, |s| s.len())
}

/// Stands in for a message too large to return even alone.
fn placeholder(message: &TrimmedMessage, bytes: usize) -> ReadMessage {
    let (role, timestamp) = match &message.message {
        TrimmedBody::User { timestamp, .. } => ("user", *timestamp),
        TrimmedBody::Assistant { timestamp, .. } => ("assistant", *timestamp),
        TrimmedBody::ToolResult { timestamp, .. } => ("toolResult", *timestamp),
    };
    let seq = message.seq;
    ReadMessage::Omitted(OmittedMessage {
        role: role.to_string(),
        seq,
        omitted: true,
        bytes,
        content: vec![TrimmedBlock::Text {
            text: format!(
                "[message {seq} ({role}) omitted: {bytes} bytes even after trimming, over the \
                 {MAX_BYTES}-byte history limit]"
            ),
        }],
        timestamp,
    })
}

/// What [`sanitize`] did to a message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Trim {
    /// A text was cut (or arguments shortened).
    pub cut: bool,
    /// A heavy field was removed (usage, cost, details, a signature, image data).
    pub stripped: bool,
}

/// A message without heavy fields and with long texts cut, and what was done. Used for the
/// messages of `sessions_list` rows too.
pub(crate) fn sanitize(m: SeqMessage) -> (TrimmedMessage, Trim) {
    let mut trim = Trim::default();
    let message = match m.message {
        TranscriptMessage::User(u) => TrimmedBody::User {
            content: match u.content {
                UserContent::Text(mut text) => {
                    trim.cut |= cut_text(&mut text);
                    TrimmedContent::Text(text)
                }
                UserContent::Blocks(blocks) => {
                    TrimmedContent::Blocks(trim_blocks(blocks, &mut trim))
                }
            },
            timestamp: u.timestamp,
            provenance: u.provenance,
        },
        TranscriptMessage::Assistant(a) => {
            // Its usage (and the cost inside) is left out.
            trim.stripped = true;
            let mut error_message = a.error_message;
            if let Some(error) = &mut error_message {
                trim.cut |= cut_text(error);
            }
            TrimmedBody::Assistant {
                content: trim_blocks(a.content, &mut trim),
                provider: a.provider,
                model: a.model,
                stop_reason: a.stop_reason,
                error_message,
                timestamp: a.timestamp,
            }
        }
        TranscriptMessage::ToolResult(r) => {
            trim.stripped |= r.details.is_some();
            TrimmedBody::ToolResult {
                tool_call_id: r.tool_call_id,
                tool_name: r.tool_name,
                content: trim_blocks(r.content, &mut trim),
                is_error: r.is_error,
                timestamp: r.timestamp,
            }
        }
    };
    (
        TrimmedMessage {
            seq: m.seq,
            message,
        },
        trim,
    )
}

fn trim_blocks(blocks: Vec<ContentBlock>, trim: &mut Trim) -> Vec<TrimmedBlock> {
    blocks.into_iter().map(|b| trim_block(b, trim)).collect()
}

fn trim_block(block: ContentBlock, trim: &mut Trim) -> TrimmedBlock {
    match block {
        ContentBlock::Text { mut text } => {
            trim.cut |= cut_text(&mut text);
            TrimmedBlock::Text { text }
        }
        ContentBlock::Thinking {
            mut thinking,
            signature,
        } => {
            trim.stripped |= signature.is_some();
            trim.cut |= cut_text(&mut thinking);
            TrimmedBlock::Thinking { thinking }
        }
        ContentBlock::ToolCall {
            id,
            name,
            arguments,
        } => {
            let raw = arguments.to_string();
            let arguments = if raw.chars().count() > MAX_TEXT_CHARS {
                let mut text = raw;
                cut_text(&mut text);
                trim.cut = true;
                Value::String(text)
            } else {
                arguments
            };
            TrimmedBlock::ToolCall {
                id,
                name,
                arguments,
            }
        }
        ContentBlock::Image { data, mime_type } => {
            trim.stripped = true;
            TrimmedBlock::Image {
                data: OmittedData::new(data.len()),
                mime_type,
            }
        }
    }
}

/// Cuts `text` to [`MAX_TEXT_CHARS`] characters plus a visible marker; `true` when it was cut.
fn cut_text(text: &mut String) -> bool {
    let Some((at, _)) = text.char_indices().nth(MAX_TEXT_CHARS) else {
        return false;
    };
    let removed = text[at..].chars().count();
    text.truncate(at);
    text.push_str(&format!("… [truncated {removed} chars]"));
    true
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// Trims a message given as stored JSON; the trimmed message as JSON.
    fn sanitize(stored: Value) -> (Value, Trim) {
        let (m, trim) = super::sanitize(serde_json::from_value(stored).unwrap());
        (serde_json::to_value(m).unwrap(), trim)
    }

    #[test]
    fn heavy_fields_go_and_long_text_is_cut_with_a_marker() {
        let long = "x".repeat(10_000);
        let (m, trim) = sanitize(json!({
            "role": "assistant",
            "content": [
                {"type": "text", "text": long},
                {"type": "thinking", "thinking": "hm", "thinkingSignature": "sig"},
                {"type": "image", "data": "aGVsbG8=", "mimeType": "image/png"},
            ],
            "usage": {"input": 1, "cost": {"total": 1}},
            "stopReason": "stop", "timestamp": 1, "seq": 3,
        }));
        assert!(trim.cut && trim.stripped);
        let text = m["content"][0]["text"].as_str().unwrap_or_default();
        assert!(text.ends_with("… [truncated 6000 chars]"), "{text}");
        assert_eq!(
            text.chars().count(),
            4_000 + "… [truncated 6000 chars]".len() - 2
        );
        assert!(m.get("usage").is_none());
        assert!(m["content"][1].get("thinkingSignature").is_none());
        assert_eq!(
            m["content"][2]["data"],
            json!({"omitted": true, "bytes": 8})
        );
        let (short, trim) =
            sanitize(json!({"role": "user", "content": "hi", "timestamp": 1, "seq": 1}));
        assert_eq!(trim, Trim::default());
        assert_eq!(short["content"], "hi");
    }

    #[test]
    fn cutting_respects_multibyte_characters() {
        let mut text = "ж".repeat(4_001);
        assert!(cut_text(&mut text));
        assert!(text.starts_with(&"ж".repeat(4_000)));
        assert!(text.ends_with("[truncated 1 chars]"));
    }

    #[test]
    fn the_cap_drops_the_oldest_and_points_at_them() {
        let messages: Vec<SeqMessage> = (1..=200)
            .map(|seq| json!({"role": "user", "content": "y".repeat(1_000), "timestamp": 1, "seq": seq}))
            .map(|m| serde_json::from_value(m).unwrap())
            .collect();
        let capped = cap(messages);
        assert!(capped.dropped > 0 && capped.bytes <= MAX_BYTES);
        assert_eq!(
            serde_json::to_string(&capped.messages)
                .map(|s| s.len())
                .ok(),
            Some(capped.bytes)
        );
        assert_eq!(capped.messages.len() + capped.dropped, 200);
        assert_eq!(capped.next_before, Some(capped.dropped as i64 + 1));
        assert_eq!(capped.messages.last().map(ReadMessage::seq), Some(200));
    }
}
