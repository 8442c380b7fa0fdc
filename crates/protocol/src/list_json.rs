//! A `sessions.list` page as JSON text, written field by field: byte for byte the text serde_json
//! writes for [`SessionsListResult`] (the tests compare the two), at a fraction of the cost. A
//! field's name is one literal copied, where serde_json escapes it again on every row; a string
//! that needs no escaping is copied in one piece; the fields most rows leave out cost one test.
//! The rare nested fields (a route, a sub-agent, messages) go through serde_json.
//!
//! Every struct is taken apart or built without `..`: a field added to a row does not compile
//! here until it is written.

use serde::Serialize;

use crate::overview::SessionDefaults;
use crate::runs::RunState;
use crate::sessions::{
    DeliveryContext, RunActivity, SessionKind, SessionRow, SessionsListResult, SubagentStatus,
};

/// The page as the compact JSON text of `serde_json::to_vec(page)`.
pub fn list_page_json<M: Serialize>(page: &SessionsListResult<M>) -> serde_json::Result<Vec<u8>> {
    let SessionsListResult {
        count,
        sessions,
        next_cursor,
        total_count,
        has_more,
        next_offset,
        warning,
        defaults,
    } = page;
    // The seeded rows are 330–400 bytes; one allocation for most pages.
    let mut out = Vec::with_capacity(256 + sessions.len() * 448);
    let end = PageEnd {
        next_cursor: next_cursor.as_deref(),
        total_count: *total_count,
        has_more: *has_more,
        next_offset: *next_offset,
        warning: warning.as_deref(),
        defaults: defaults.as_ref(),
    };
    write_page(&mut out, *count, sessions.len(), end, |out, i| {
        write_row(out, &sessions[i])
    })?;
    Ok(out)
}

/// What a page says after its rows.
#[derive(Debug, Clone, Copy, Default)]
pub struct PageEnd<'a> {
    pub next_cursor: Option<&'a str>,
    pub total_count: Option<u64>,
    pub has_more: Option<bool>,
    pub next_offset: Option<u64>,
    pub warning: Option<&'a str>,
    pub defaults: Option<&'a SessionDefaults>,
}

/// A page of `rows` rows onto `out`, as serde_json writes [`SessionsListResult`]: `row(out, i)`
/// writes row `i` (a whole object: [`write_row`], or [`write_row_head`] then
/// [`write_row_tail`]).
pub fn write_page(
    out: &mut Vec<u8>,
    count: usize,
    rows: usize,
    end: PageEnd<'_>,
    mut row: impl FnMut(&mut Vec<u8>, usize) -> serde_json::Result<()>,
) -> serde_json::Result<()> {
    out.extend_from_slice(b"{\"count\":");
    value(out, &count)?;
    out.extend_from_slice(b",\"sessions\":[");
    for i in 0..rows {
        if i > 0 {
            out.push(b',');
        }
        row(out, i)?;
    }
    out.push(b']');
    let PageEnd {
        next_cursor,
        total_count,
        has_more,
        next_offset,
        warning,
        defaults,
    } = end;
    opt_str(out, b",\"nextCursor\":", next_cursor);
    opt_value(out, b",\"totalCount\":", &total_count)?;
    opt_value(out, b",\"hasMore\":", &has_more)?;
    opt_value(out, b",\"nextOffset\":", &next_offset)?;
    opt_str(out, b",\"warning\":", warning);
    opt_value(out, b",\"defaults\":", &defaults)?;
    out.push(b'}');
    Ok(())
}

/// What a row shows of its stored entry: the fields of [`SessionRow`] up to `transcriptPath`,
/// borrowed (from the row a store is reading, say).
#[derive(Debug, Clone, Copy)]
pub struct RowHead<'a> {
    pub key: &'a str,
    pub kind: SessionKind,
    pub channel: &'a str,
    pub agent_id: &'a str,
    pub session_id: &'a str,
    pub created_at: i64,
    pub updated_at: i64,
    pub chat_type: Option<&'a str>,
    pub display_name: Option<&'a str>,
    pub label: Option<&'a str>,
    pub model: Option<&'a str>,
    pub context_tokens: Option<u64>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub total_tokens: Option<u64>,
    pub cost_usd: Option<f64>,
    pub thinking_level: Option<&'a str>,
    pub verbose_level: Option<&'a str>,
    pub system_sent: Option<bool>,
    pub aborted_last_run: Option<bool>,
    pub send_policy: Option<&'a str>,
    pub last_channel: Option<&'a str>,
    pub last_to: Option<&'a str>,
    pub delivery_context: Option<&'a DeliveryContext>,
    pub spawned_by: Option<&'a str>,
    pub archived_at: Option<i64>,
    pub transcript_path: Option<&'a str>,
}

impl<M> SessionRow<M> {
    /// What the row shows of its stored entry. [`Self::from_head`] builds a whole row (no `..`):
    /// a field added to a row does not compile there until it is placed in the head or the tail.
    pub fn head(&self) -> RowHead<'_> {
        RowHead {
            key: &self.key,
            kind: self.kind,
            channel: &self.channel,
            agent_id: &self.agent_id,
            session_id: &self.session_id,
            created_at: self.created_at,
            updated_at: self.updated_at,
            chat_type: self.chat_type.as_deref(),
            display_name: self.display_name.as_deref(),
            label: self.label.as_deref(),
            model: self.model.as_deref(),
            context_tokens: self.context_tokens,
            input_tokens: self.input_tokens,
            output_tokens: self.output_tokens,
            total_tokens: self.total_tokens,
            cost_usd: self.cost_usd,
            thinking_level: self.thinking_level.as_deref(),
            verbose_level: self.verbose_level.as_deref(),
            system_sent: self.system_sent,
            aborted_last_run: self.aborted_last_run,
            send_policy: self.send_policy.as_deref(),
            last_channel: self.last_channel.as_deref(),
            last_to: self.last_to.as_deref(),
            delivery_context: self.delivery_context.as_ref(),
            spawned_by: self.spawned_by.as_deref(),
            archived_at: self.archived_at,
            transcript_path: self.transcript_path.as_deref(),
        }
    }

    /// The row of `head`, nothing said yet of the session now (its last messages, runs and
    /// sub-agent task).
    pub fn from_head(h: &RowHead<'_>) -> Self {
        let owned = |s: Option<&str>| s.map(str::to_owned);
        SessionRow {
            key: h.key.to_owned(),
            kind: h.kind,
            channel: h.channel.to_owned(),
            agent_id: h.agent_id.to_owned(),
            session_id: h.session_id.to_owned(),
            created_at: h.created_at,
            updated_at: h.updated_at,
            chat_type: owned(h.chat_type),
            display_name: owned(h.display_name),
            label: owned(h.label),
            model: owned(h.model),
            context_tokens: h.context_tokens,
            input_tokens: h.input_tokens,
            output_tokens: h.output_tokens,
            total_tokens: h.total_tokens,
            cost_usd: h.cost_usd,
            thinking_level: owned(h.thinking_level),
            verbose_level: owned(h.verbose_level),
            system_sent: h.system_sent,
            aborted_last_run: h.aborted_last_run,
            send_policy: owned(h.send_policy),
            last_channel: owned(h.last_channel),
            last_to: owned(h.last_to),
            delivery_context: h.delivery_context.cloned(),
            spawned_by: owned(h.spawned_by),
            archived_at: h.archived_at,
            transcript_path: owned(h.transcript_path),
            messages: None,
            run_state: None,
            activity: None,
            subagent: None,
        }
    }
}

/// What a row shows of the session now: the fields of [`SessionRow`] after `transcriptPath`.
pub struct RowTail<'a, M> {
    pub messages: Option<&'a [M]>,
    pub run_state: Option<RunState>,
    pub activity: Option<RunFields<'a>>,
    pub subagent: Option<&'a SubagentStatus>,
}

/// A row's run fields: a record, or its text as [`write_run_fields`] wrote it for an earlier
/// page (a session's last ended run, the same until another run ends).
#[derive(Clone, Copy)]
pub enum RunFields<'a> {
    Built(&'a RunActivity),
    Written(&'a [u8]),
}

/// One row, as serde_json writes [`SessionRow`].
pub fn write_row<M: Serialize>(out: &mut Vec<u8>, row: &SessionRow<M>) -> serde_json::Result<()> {
    write_row_head(out, &row.head())?;
    let tail = RowTail {
        messages: row.messages.as_deref(),
        run_state: row.run_state,
        activity: row.activity.as_ref().map(RunFields::Built),
        subagent: row.subagent.as_ref(),
    };
    write_row_tail(out, &tail)
}

/// The start of a row: its object opened and its fields up to `transcriptPath`.
pub fn write_row_head(out: &mut Vec<u8>, head: &RowHead<'_>) -> serde_json::Result<()> {
    let RowHead {
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
    } = *head;
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
    value(out, &created_at)?;
    out.extend_from_slice(b",\"updatedAt\":");
    value(out, &updated_at)?;
    opt_str(out, b",\"chatType\":", chat_type);
    opt_str(out, b",\"displayName\":", display_name);
    opt_str(out, b",\"label\":", label);
    opt_str(out, b",\"model\":", model);
    opt_value(out, b",\"contextTokens\":", &context_tokens)?;
    opt_value(out, b",\"inputTokens\":", &input_tokens)?;
    opt_value(out, b",\"outputTokens\":", &output_tokens)?;
    opt_value(out, b",\"totalTokens\":", &total_tokens)?;
    opt_value(out, b",\"costUsd\":", &cost_usd)?;
    opt_str(out, b",\"thinkingLevel\":", thinking_level);
    opt_str(out, b",\"verboseLevel\":", verbose_level);
    opt_value(out, b",\"systemSent\":", &system_sent)?;
    opt_value(out, b",\"abortedLastRun\":", &aborted_last_run)?;
    opt_str(out, b",\"sendPolicy\":", send_policy);
    opt_str(out, b",\"lastChannel\":", last_channel);
    opt_str(out, b",\"lastTo\":", last_to);
    opt_value(out, b",\"deliveryContext\":", &delivery_context)?;
    opt_str(out, b",\"spawnedBy\":", spawned_by);
    opt_value(out, b",\"archivedAt\":", &archived_at)?;
    opt_str(out, b",\"transcriptPath\":", transcript_path);
    Ok(())
}

/// The end of a row begun by [`write_row_head`]: the fields after `transcriptPath`, and the
/// object closed.
pub fn write_row_tail<M: Serialize>(
    out: &mut Vec<u8>,
    tail: &RowTail<'_, M>,
) -> serde_json::Result<()> {
    let RowTail {
        messages,
        run_state,
        activity,
        subagent,
    } = tail;
    opt_value(out, b",\"messages\":", messages)?;
    opt_value(out, b",\"runState\":", run_state)?;
    match activity {
        Some(RunFields::Built(activity)) => write_run_fields(out, activity)?,
        Some(RunFields::Written(fields)) => out.extend_from_slice(fields),
        None => {}
    }
    opt_value(out, b",\"subagent\":", subagent)?;
    out.push(b'}');
    Ok(())
}

/// A row's run fields as its object carries them (each led by its comma).
pub fn write_run_fields(out: &mut Vec<u8>, activity: &RunActivity) -> serde_json::Result<()> {
    if activity.is_idle() {
        // Most rows: a session without a run since start, in one literal.
        out.extend_from_slice(b",\"hasActiveRun\":false,\"activeRunIds\":[]");
        return Ok(());
    }
    write_activity(out, activity)
}

/// A run's fields, flattened into the row's object: every row of a session that ran since the
/// start has them (the Control UI's list after a turn), so they are written here, not built
/// as an object by serde_json and cut out of it.
fn write_activity(out: &mut Vec<u8>, activity: &RunActivity) -> serde_json::Result<()> {
    let RunActivity {
        status,
        has_active_run,
        active_run_ids,
        last_run_id,
        started_at,
        ended_at,
        runtime_ms,
    } = activity;
    opt_str(out, b",\"status\":", status.as_deref());
    out.extend_from_slice(match has_active_run {
        true => b",\"hasActiveRun\":true,\"activeRunIds\":[",
        false => b",\"hasActiveRun\":false,\"activeRunIds\":[",
    });
    for (i, id) in active_run_ids.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        string(out, id);
    }
    out.push(b']');
    opt_str(out, b",\"lastRunId\":", last_run_id.as_deref());
    opt_value(out, b",\"startedAt\":", started_at)?;
    opt_value(out, b",\"endedAt\":", ended_at)?;
    opt_value(out, b",\"runtimeMs\":", runtime_ms)
}

/// `s` as a JSON string: copied whole when nothing in it needs escaping (the usual case), else
/// escaped by serde_json; the same bytes as serde_json's either way. Every JSON text written by
/// hand uses it (a list page, a model request's body).
pub fn string(out: &mut Vec<u8>, s: &str) {
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

fn opt_str(out: &mut Vec<u8>, name: &[u8], s: Option<&str>) {
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
                "activeRunIds": ["r1", "r\"2"], "lastRunId": "r0\n", "startedAt": 1,
                "endedAt": -2}),
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
        let never_ran = json!({"key": "n", "kind": "other", "channel": "c", "agentId": "a",
            "sessionId": "s", "createdAt": 0, "updatedAt": 0, "hasActiveRun": false,
            "activeRunIds": []});
        same(json!({
            "count": 4, "sessions": [every_field, no_field, idle, never_ran],
            "nextCursor": "1:a\"b", "totalCount": 9, "hasMore": true, "nextOffset": 4,
            "warning": "w", "defaults": {"model": "m", "modelProvider": "mock", "contextTokens": 1}
        }));
        same(json!({"count": 0, "sessions": []}));
    }

    #[test]
    fn a_row_made_of_its_head_is_the_row_without_its_tail() {
        let row: SessionRow = serde_json::from_value(json!({"key": "k", "kind": "group",
            "channel": "c", "agentId": "a", "sessionId": "s", "createdAt": 1, "updatedAt": 2,
            "chatType": "group", "displayName": "d", "label": "l", "model": "m",
            "contextTokens": 3, "inputTokens": 4, "outputTokens": 5, "totalTokens": 6,
            "costUsd": 0.5, "thinkingLevel": "t", "verboseLevel": "v", "systemSent": true,
            "abortedLastRun": false, "sendPolicy": "deny", "lastChannel": "lc", "lastTo": "lt",
            "deliveryContext": {"channel": "c", "to": "t"}, "spawnedBy": "p", "archivedAt": 7,
            "transcriptPath": "/t", "runState": "queued", "subagent": {"state": "done",
            "task": "t"}, "messages": []}))
        .unwrap();
        let mut bare = row.clone();
        (bare.messages, bare.run_state, bare.activity, bare.subagent) = (None, None, None, None);
        assert_ne!(bare, row);
        assert_eq!(SessionRow::from_head(&row.head()), bare);
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
