//! A `sessions.list` page as JSON text, written field by field: byte for byte the text serde_json
//! writes for [`SessionsListResult`] (the tests compare the two), at a fraction of the cost. A
//! field's name is one literal copied, where serde_json escapes it again on every row; a string
//! that needs no escaping is copied in one piece; the fields most rows leave out cost one test.
//! The rare nested fields (a route, run activity, a sub-agent, messages) go through serde_json.
//!
//! Every struct is taken apart without `..`: a field added to a row does not compile here until
//! it is written.

use serde::Serialize;

use crate::sessions::{SessionRow, SessionsListResult};

/// The page as the compact JSON text of `serde_json::to_vec(page)`.
pub fn list_page_json<M: Serialize>(page: &SessionsListResult<M>) -> serde_json::Result<Vec<u8>> {
    let SessionsListResult {
        count,
        sessions,
        next_cursor,
        warning,
        defaults,
    } = page;
    // The seeded rows are 330–400 bytes; one allocation for most pages.
    let mut out = Vec::with_capacity(256 + sessions.len() * 448);
    out.extend_from_slice(b"{\"count\":");
    value(&mut out, count)?;
    out.extend_from_slice(b",\"sessions\":[");
    for (i, row) in sessions.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_row(&mut out, row)?;
    }
    out.push(b']');
    opt_str(&mut out, b",\"nextCursor\":", next_cursor);
    opt_str(&mut out, b",\"warning\":", warning);
    opt_value(&mut out, b",\"defaults\":", defaults)?;
    out.push(b'}');
    Ok(out)
}

/// One row, as serde_json writes [`SessionRow`].
fn write_row<M: Serialize>(out: &mut Vec<u8>, row: &SessionRow<M>) -> serde_json::Result<()> {
    let SessionRow {
        key,
        kind,
        channel,
        agent_id,
        session_id,
        created_at,
        updated_at,
        chat_type,
        display_name,
        label,
        model,
        context_tokens,
        input_tokens,
        output_tokens,
        total_tokens,
        cost_usd,
        thinking_level,
        verbose_level,
        system_sent,
        aborted_last_run,
        send_policy,
        last_channel,
        last_to,
        delivery_context,
        spawned_by,
        archived_at,
        transcript_path,
        messages,
        run_state,
        activity,
        subagent,
    } = row;
    out.extend_from_slice(b"{\"key\":");
    string(out, key);
    out.extend_from_slice(b",\"kind\":");
    string(out, kind.as_str());
    out.extend_from_slice(b",\"channel\":");
    string(out, channel);
    out.extend_from_slice(b",\"agentId\":");
    string(out, agent_id);
    out.extend_from_slice(b",\"sessionId\":");
    string(out, session_id);
    out.extend_from_slice(b",\"createdAt\":");
    value(out, created_at)?;
    out.extend_from_slice(b",\"updatedAt\":");
    value(out, updated_at)?;
    opt_str(out, b",\"chatType\":", chat_type);
    opt_str(out, b",\"displayName\":", display_name);
    opt_str(out, b",\"label\":", label);
    opt_str(out, b",\"model\":", model);
    opt_value(out, b",\"contextTokens\":", context_tokens)?;
    opt_value(out, b",\"inputTokens\":", input_tokens)?;
    opt_value(out, b",\"outputTokens\":", output_tokens)?;
    opt_value(out, b",\"totalTokens\":", total_tokens)?;
    opt_value(out, b",\"costUsd\":", cost_usd)?;
    opt_str(out, b",\"thinkingLevel\":", thinking_level);
    opt_str(out, b",\"verboseLevel\":", verbose_level);
    opt_value(out, b",\"systemSent\":", system_sent)?;
    opt_value(out, b",\"abortedLastRun\":", aborted_last_run)?;
    opt_str(out, b",\"sendPolicy\":", send_policy);
    opt_str(out, b",\"lastChannel\":", last_channel);
    opt_str(out, b",\"lastTo\":", last_to);
    opt_value(out, b",\"deliveryContext\":", delivery_context)?;
    opt_str(out, b",\"spawnedBy\":", spawned_by);
    opt_value(out, b",\"archivedAt\":", archived_at)?;
    opt_str(out, b",\"transcriptPath\":", transcript_path);
    opt_value(out, b",\"messages\":", messages)?;
    opt_value(out, b",\"runState\":", run_state)?;
    if let Some(activity) = activity {
        // Flattened: its fields inside the row's object.
        let inner = serde_json::to_vec(activity)?;
        if inner.len() > 2 {
            out.push(b',');
            out.extend_from_slice(&inner[1..inner.len() - 1]);
        }
    }
    opt_value(out, b",\"subagent\":", subagent)?;
    out.push(b'}');
    Ok(())
}

/// `s` as a JSON string: copied whole when nothing in it needs escaping (the usual case), else
/// escaped by serde_json.
fn string(out: &mut Vec<u8>, s: &str) {
    let bytes = s.as_bytes();
    if is_plain(bytes) {
        out.reserve(bytes.len() + 2);
        out.push(b'"');
        out.extend_from_slice(bytes);
        out.push(b'"');
    } else {
        // Writing a `str` into a `Vec` cannot fail.
        let _ = serde_json::to_writer(&mut *out, s);
    }
}

/// Whether nothing in `bytes` needs escaping (no control character, `"` or `\\`), eight bytes
/// at a time: each word is tested for any such byte at once.
fn is_plain(bytes: &[u8]) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // Non-zero exactly when some byte of `w` is below `n` (n ≤ 128): a borrow only starts at
    // such a byte, and a byte of 0x80 or more never sets its high bit here.
    let below = |w: u64, n: u64| w.wrapping_sub(ONES * n) & !w & HIGH;
    let mut words = bytes.chunks_exact(8);
    for chunk in &mut words {
        let mut word = [0u8; 8];
        word.copy_from_slice(chunk);
        let w = u64::from_le_bytes(word);
        let quote = below(w ^ (ONES * u64::from(b'"')), 1);
        let backslash = below(w ^ (ONES * u64::from(b'\\')), 1);
        if below(w, 0x20) | quote | backslash != 0 {
            return false;
        }
    }
    words
        .remainder()
        .iter()
        .all(|&b| b >= 0x20 && b != b'"' && b != b'\\')
}

fn opt_str(out: &mut Vec<u8>, name: &[u8], s: &Option<String>) {
    if let Some(s) = s {
        out.extend_from_slice(name);
        string(out, s);
    }
}

fn value<T: Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) -> serde_json::Result<()> {
    serde_json::to_writer(&mut *out, v)
}

fn opt_value<T: Serialize>(
    out: &mut Vec<u8>,
    name: &[u8],
    v: &Option<T>,
) -> serde_json::Result<()> {
    match v {
        Some(v) => {
            out.extend_from_slice(name);
            value(out, v)
        }
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::message::HistoryMessage;

    fn same(page: serde_json::Value) {
        let page: SessionsListResult<HistoryMessage> = serde_json::from_value(page).unwrap();
        let written = String::from_utf8(list_page_json(&page).unwrap()).unwrap();
        assert_eq!(written, serde_json::to_string(&page).unwrap());
    }

    #[test]
    fn a_page_is_written_byte_for_byte_as_serde_json_writes_it() {
        // Every field of a row, added group by group to a bare row: names and strings to
        // escape, numbers at their limits, the nested and flattened fields.
        let mut every_field = json!({"key": "agent:main:dm:ü-\"q\"\\\u{1}", "kind": "group",
            "channel": "tele\tgram", "agentId": "main", "sessionId": "0b6e", "createdAt": 1,
            "updatedAt": -2});
        let groups = [
            json!({"chatType": "group", "displayName": "Zoë 🎉", "label": "läbel\n",
                "model": "mock/m", "contextTokens": 128000}),
            json!({"inputTokens": u64::MAX, "outputTokens": 2, "totalTokens": 3,
                "costUsd": 0.000123, "thinkingLevel": "high", "verboseLevel": "on"}),
            json!({"systemSent": true, "abortedLastRun": false, "sendPolicy": "deny",
                "lastChannel": "telegram", "lastTo": "+1", "spawnedBy": "main"}),
            json!({"deliveryContext": {"channel": "c", "to": "+1", "accountId": "a",
                "threadId": "t"}, "archivedAt": 5, "transcriptPath": "/tmp/ü.jsonl"}),
            json!({"runState": "running", "status": "running", "hasActiveRun": true,
                "activeRunIds": ["r1"], "lastRunId": "r0", "startedAt": 1, "endedAt": 2}),
            json!({"runtimeMs": 1, "subagent": {"state": "announcing", "outcome": "ok",
                "task": "t", "endedAt": 9}}),
            json!({"messages": [{"seq": 1, "role": "user", "content": "hi", "timestamp": 1},
                {"seq": 3, "role": "system", "foreign": null}]}),
        ];
        for group in groups {
            if let (Some(row), serde_json::Value::Object(fields)) =
                (every_field.as_object_mut(), group)
            {
                row.extend(fields);
            }
        }
        assert_eq!(every_field.as_object().map(|row| row.len()), Some(37));
        let no_field = json!({"key": "main", "kind": "main", "channel": "unknown",
            "agentId": "main", "sessionId": "x", "createdAt": 0, "updatedAt": 0});
        let idle = json!({"key": "k", "kind": "other", "channel": "c", "agentId": "a",
            "sessionId": "s", "createdAt": 0, "updatedAt": 0, "costUsd": 1e300,
            "status": "done", "hasActiveRun": false, "activeRunIds": [], "messages": []});
        same(json!({
            "count": 3, "sessions": [every_field, no_field, idle], "nextCursor": "1:a\"b",
            "warning": "w", "defaults": {"model": "m", "modelProvider": "mock", "contextTokens": 1}
        }));
        same(json!({"count": 0, "sessions": []}));
    }

    #[test]
    fn a_string_is_escaped_only_where_it_must_be() {
        let long = "0123456789abcdef".repeat(3);
        let mut cases: Vec<String> = [
            "",
            "plain",
            "\"",
            "\\",
            "\u{0}\u{1f}\u{7f}",
            "é\n\r\t\u{8}\u{c}/",
        ]
        .map(String::from)
        .to_vec();
        cases.push(format!("{long}ü🎉\u{7f}\u{80}{long}"));
        // Each byte that must be escaped, at every place of a word and in the remainder.
        for bad in ['"', '\\', '\u{0}', '\u{1f}', '\n'] {
            for at in 0..=long.len() {
                let mut s = long.clone();
                s.insert(at, bad);
                cases.push(s);
            }
        }
        for s in &cases {
            let mut out = Vec::new();
            string(&mut out, s);
            assert_eq!(out, serde_json::to_vec(s).unwrap(), "{s:?}");
        }
    }
}
