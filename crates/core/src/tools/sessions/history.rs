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

use serde_json::{Map, Value, json};
use switchboard_protocol::lenient::clamp_or;
use switchboard_protocol::session_tools::{HistoryParams, HistoryResult, ToolFailure};

use super::{Answer, SessionTools, store_failure};
use crate::access::Operation;
use crate::resolve::Reference;
use crate::runtime::tool::{ToolContext, ToolHints, TypedTool};
use crate::sessions::{row, with_seq};
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
        let capped = cap(page.messages.into_iter().map(with_seq).collect());
        Ok(HistoryResult {
            session_key: row(&entry, ctx.store(), &self.0.config).key,
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
    messages: Vec<StoredMessage>,
    next_before: Option<i64>,
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
            messages: page.messages,
            next_before: page.next_before,
        });
    }
    let mut kept: Vec<StoredMessage> = Vec::new();
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
        let mut older: Vec<StoredMessage> = page
            .messages
            .into_iter()
            .filter(|m| m.message.get("role").and_then(Value::as_str) != Some("toolResult"))
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
    messages: Vec<Value>,
    dropped: usize,
    content_truncated: bool,
    /// A heavy field (usage, cost, details, a signature, image data) was removed.
    stripped: bool,
    bytes: usize,
    /// Set when messages were dropped: the seq of the oldest message kept.
    next_before: Option<i64>,
}

/// Trims every message, then keeps the newest ones whose array fits in [`MAX_BYTES`].
fn cap(messages: Vec<Value>) -> Capped {
    let (mut content_truncated, mut stripped) = (false, false);
    let mut trimmed: Vec<(Value, usize)> = Vec::with_capacity(messages.len());
    for message in messages {
        let (mut message, trim) = sanitize(message);
        content_truncated |= trim.cut;
        stripped |= trim.stripped;
        let mut size = json_len(&message);
        // `[` + `]`: a message over this could never be returned, whatever the limit.
        if size > MAX_BYTES - 2 {
            message = placeholder(&message, size);
            size = json_len(&message);
            content_truncated = true;
        }
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
    let messages: Vec<Value> = trimmed.into_iter().skip(dropped).map(|(m, _)| m).collect();
    let next_before = if dropped > 0 {
        messages
            .first()
            .and_then(|m| m.get("seq"))
            .and_then(Value::as_i64)
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

fn json_len(value: &Value) -> usize {
    serde_json::to_string(value).map_or(0, |s| s.len())
}

/// Stands in for a message too large to return even alone.
fn placeholder(message: &Value, bytes: usize) -> Value {
    let role = message
        .get("role")
        .and_then(Value::as_str)
        .unwrap_or("user");
    let seq = message.get("seq").cloned().unwrap_or(Value::Null);
    let mut out = json!({
        "role": role,
        "seq": seq,
        "omitted": true,
        "bytes": bytes,
        "content": [{
            "type": "text",
            "text": format!(
                "[message {seq} ({role}) omitted: {bytes} bytes even after trimming, over the \
                 {MAX_BYTES}-byte history limit]"
            ),
        }],
    });
    if let (Value::Object(map), Some(ts)) = (&mut out, message.get("timestamp")) {
        map.insert("timestamp".into(), ts.clone());
    }
    out
}

/// What [`sanitize`] did to a message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Trim {
    /// A text was cut (or arguments shortened).
    pub cut: bool,
    /// A heavy field was removed (usage, cost, details, a signature, image data).
    pub stripped: bool,
}

impl std::ops::BitOrAssign for Trim {
    fn bitor_assign(&mut self, other: Self) {
        self.cut |= other.cut;
        self.stripped |= other.stripped;
    }
}

/// Heavy fields of a message, and of a content block.
const HEAVY: [&str; 3] = ["usage", "cost", "details"];
const HEAVY_IN_BLOCK: [&str; 6] = [
    "thinkingSignature",
    "signature",
    "textSignature",
    "details",
    "usage",
    "cost",
];

/// Removes `fields` from `map`; true when one was there.
fn strip(map: &mut Map<String, Value>, fields: &[&str]) -> bool {
    fields
        .iter()
        .fold(false, |stripped, f| map.remove(*f).is_some() | stripped)
}

/// A message without heavy fields and with long texts cut, and what was done. Used for the
/// messages of `sessions_list` rows too.
pub(crate) fn sanitize(mut message: Value) -> (Value, Trim) {
    let mut trim = Trim::default();
    if let Value::Object(map) = &mut message {
        trim.stripped = strip(map, &HEAVY);
        if let Some(content) = map.get_mut("content") {
            trim |= sanitize_content(content);
        }
        if let Some(Value::String(error)) = map.get_mut("errorMessage") {
            trim.cut |= cut_text(error);
        }
    }
    (message, trim)
}

fn sanitize_content(content: &mut Value) -> Trim {
    match content {
        Value::String(text) => Trim {
            cut: cut_text(text),
            stripped: false,
        },
        Value::Array(blocks) => blocks.iter_mut().fold(Trim::default(), |mut trim, block| {
            trim |= sanitize_block(block);
            trim
        }),
        _ => Trim::default(),
    }
}

fn sanitize_block(block: &mut Value) -> Trim {
    let Value::Object(map) = block else {
        return Trim::default();
    };
    let mut trim = Trim {
        cut: false,
        stripped: strip(map, &HEAVY_IN_BLOCK),
    };
    for field in ["text", "thinking"] {
        if let Some(Value::String(text)) = map.get_mut(field) {
            trim.cut |= cut_text(text);
        }
    }
    match map.get("type").and_then(Value::as_str) {
        Some("image") => {
            trim.stripped |= omit_data(map);
            if let Some(Value::Object(source)) = map.get_mut("source") {
                trim.stripped |= omit_data(source);
            }
        }
        Some("toolCall") => {
            if let Some(arguments) = map.get_mut("arguments") {
                let raw = arguments.to_string();
                if raw.chars().count() > MAX_TEXT_CHARS {
                    let mut text = raw;
                    cut_text(&mut text);
                    *arguments = Value::String(text);
                    trim.cut = true;
                }
            }
        }
        _ => {}
    }
    // Tool results nest content blocks.
    if let Some(inner) = map.get_mut("content") {
        trim |= sanitize_content(inner);
    }
    trim
}

/// Replaces image data with its size; true when there was data.
fn omit_data(map: &mut Map<String, Value>) -> bool {
    if let Some(data) = map.get_mut("data")
        && let Value::String(raw) = data
    {
        *data = json!({"omitted": true, "bytes": raw.len()});
        return true;
    }
    false
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
    use super::*;

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
        let (short, trim) = sanitize(json!({"role": "user", "content": "hi", "timestamp": 1}));
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
        let messages: Vec<Value> = (1..=200)
            .map(|seq| json!({"role": "user", "content": "y".repeat(1_000), "timestamp": 1, "seq": seq}))
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
        assert_eq!(
            capped.messages.last().and_then(|m| m["seq"].as_i64()),
            Some(200)
        );
    }
}
