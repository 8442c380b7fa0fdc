//! `sessions.*` params and results, and the session row shared with `sessions_list` (SPEC §5.3,
//! §7.1). `sessions.subscribe` / `sessions.unsubscribe` are here too: they are answered by the
//! connection itself (they change which run events it receives), but their shapes are wire.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_with::skip_serializing_none;

use crate::lenient;
use crate::message::HistoryMessage;
use crate::runs::RunState;

/// A session's delivery route: where replies to it go.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryContext {
    pub channel: String,
    pub to: String,
    pub account_id: Option<String>,
    pub thread_id: Option<String>,
}

/// One row of `sessions.list` / `sessions_list`. `M` is how its last messages are shown: whole
/// ([`HistoryMessage`]) to operators, trimmed ([`ReadMessage`](crate::reading::ReadMessage)) to a
/// model.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", bound(deserialize = "M: Deserialize<'de>"))]
pub struct SessionRow<M = HistoryMessage> {
    /// The session key in display form (`main` for the global bucket).
    pub key: String,
    /// `main | group | cron | hook | node | other`, classified on the key's rest.
    pub kind: SessionKind,
    /// `internal` for cron/hook/node; the entry's channel for groups; `lastChannel` for direct
    /// chats; else `unknown`.
    pub channel: String,
    pub agent_id: String,
    pub session_id: String,
    pub created_at: i64,
    pub updated_at: i64,
    pub chat_type: Option<String>,
    pub display_name: Option<String>,
    pub label: Option<String>,
    pub model: Option<String>,
    pub context_tokens: Option<u64>,
    pub input_tokens: Option<u64>,
    pub output_tokens: Option<u64>,
    pub total_tokens: Option<u64>,
    /// What the current transcript's model calls cost (USD), priced as they were answered;
    /// absent when nothing was priced.
    pub cost_usd: Option<f64>,
    pub thinking_level: Option<String>,
    pub verbose_level: Option<String>,
    pub system_sent: Option<bool>,
    pub aborted_last_run: Option<bool>,
    pub send_policy: Option<String>,
    pub last_channel: Option<String>,
    pub last_to: Option<String>,
    pub delivery_context: Option<DeliveryContext>,
    pub spawned_by: Option<String>,
    pub archived_at: Option<i64>,
    /// Absolute path of the session's JSONL transcript mirror; the file exists. Absent on a
    /// store that keeps no mirror (PostgreSQL: the database is the transcript).
    pub transcript_path: Option<String>,
    pub messages: Option<Vec<M>>,
    /// `running` (a run is working) or `queued` (runs wait for the session or a lane); absent
    /// when the session is idle.
    pub run_state: Option<RunState>,
    /// The session's current or last run since the gateway started, in the reference's
    /// fields (only `hasActiveRun: false` when it had none).
    #[serde(flatten)]
    pub activity: Option<RunActivity>,
    /// A sub-agent's session: how far its task got (`sessions_spawn`).
    pub subagent: Option<SubagentStatus>,
}

/// A session's current or last run, in the reference's row fields. Its Control UI ends a turn
/// ("Done in 1 second") when the row says the run it sent is `done` (`lastRunId`, `runtimeMs`).
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunActivity {
    /// `running`, `queued`, or how the last run ended: `done`, `failed`, `killed` (aborted),
    /// `timeout`; absent for a session with no run since the gateway started (its Control UI
    /// shows it `Idle`, from `hasActiveRun: false`).
    pub status: Option<String>,
    /// True while a run works or waits in the session.
    pub has_active_run: bool,
    /// The runs working now (one at most; queued ones are not listed).
    pub active_run_ids: Vec<String>,
    /// The last run that ended.
    pub last_run_id: Option<String>,
    /// When that run started and ended (ms), and how long it ran.
    pub started_at: Option<i64>,
    pub ended_at: Option<i64>,
    pub runtime_ms: Option<i64>,
}

impl RunActivity {
    /// The run fields of a session without a run since the gateway started.
    pub const IDLE: RunActivity = RunActivity {
        status: None,
        has_active_run: false,
        active_run_ids: Vec::new(),
        last_run_id: None,
        started_at: None,
        ended_at: None,
        runtime_ms: None,
    };

    /// A session without a run since the gateway started ([`RunActivity::IDLE`]): only
    /// `hasActiveRun: false`.
    pub fn is_idle(&self) -> bool {
        let Self {
            status,
            has_active_run,
            active_run_ids,
            last_run_id,
            started_at,
            ended_at,
            runtime_ms,
        } = self;
        status.is_none()
            && !has_active_run
            && active_run_ids.is_empty()
            && last_run_id.is_none()
            && started_at.is_none()
            && ended_at.is_none()
            && runtime_ms.is_none()
    }
}

wire_names! {
    /// What a session is, classified on its key's rest.
    pub enum SessionKind {
        Main = "main",
        Group = "group",
        Cron = "cron",
        Hook = "hook",
        Node = "node",
        Other = "other",
    }
}

wire_names! {
    /// How far a sub-agent's task got: `running`, `announcing` once it ended, then `announced` and
    /// `done`.
    pub enum SubagentState {
        Running = "running",
        Announcing = "announcing",
        Announced = "announced",
        Done = "done",
    }
}

/// How far a sub-agent's task got: `running`, then `announcing` once it ended, then
/// `announced` and `done`; `outcome` is the task run's final status.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubagentStatus {
    pub state: SubagentState,
    pub outcome: Option<String>,
    pub task: String,
    pub ended_at: Option<i64>,
}

/// `kinds` may be one string or an array of strings.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

/// Reads what an untagged `String | Vec<String>` would, with an error that says so instead of
/// "did not match any variant of untagged enum OneOrMany".
impl<'de> Deserialize<'de> for OneOrMany {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let expected = "expected a string or an array of strings (e.g. \"group\" or \
                        [\"main\", \"cron\"])";
        match Value::deserialize(de)? {
            Value::String(one) => Ok(Self::One(one)),
            Value::Array(items) => items
                .into_iter()
                .map(|item| match item {
                    Value::String(s) => Ok(s),
                    other => Err(D::Error::custom(format!(
                        "{expected}, got an array holding {other}"
                    ))),
                })
                .collect::<Result<_, _>>()
                .map(Self::Many),
            other => Err(D::Error::custom(format!(
                "{expected}, got {}",
                crate::decode::kind_of(&other)
            ))),
        }
    }
}

impl OneOrMany {
    pub fn into_vec(self) -> Vec<String> {
        match self {
            Self::One(s) => vec![s],
            Self::Many(v) => v,
        }
    }
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SessionsListParams {
    /// Rows per page: default 50, clamped to 1–1000 (`sessions_list`: 1–200).
    #[serde(deserialize_with = "lenient::opt_positive")]
    pub limit: Option<i64>,
    /// `nextCursor` of the previous page.
    pub cursor: Option<String>,
    /// Rows to skip (after the cursor, when there is one): the reference's paging, whose
    /// `nextOffset` the answer gives.
    #[serde(deserialize_with = "lenient::opt_non_negative")]
    pub offset: Option<i64>,
    /// Only sessions updated in the last N minutes (N ≥ 1).
    #[serde(deserialize_with = "lenient::opt_positive")]
    pub active_minutes: Option<i64>,
    /// Kinds to keep: `main|group|cron|hook|node|other`; unknown values are ignored.
    pub kinds: Option<OneOrMany>,
    /// Substring of the key, label or display name (case-insensitive).
    pub search: Option<String>,
    pub agent_id: Option<String>,
    pub spawned_by: Option<String>,
    pub label: Option<String>,
    /// Include the last N messages of each row (0–20), tool results removed.
    #[serde(deserialize_with = "lenient::opt_non_negative")]
    pub message_limit: Option<i64>,
    /// Include archived sessions too.
    pub include_archived: Option<bool>,
    /// Count the sessions over all pages (`totalCount`) even when more pages follow: a read of
    /// every matching session, so only when asked. A page that reaches the end has it anyway.
    pub include_total: Option<bool>,
}

#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", bound(deserialize = "M: Deserialize<'de>"))]
pub struct SessionsListResult<M = HistoryMessage> {
    /// Rows on this page.
    pub count: usize,
    pub sessions: Vec<SessionRow<M>>,
    pub next_cursor: Option<String>,
    /// Sessions the request lists over all its pages (the reference's field): known when the
    /// page reached the end, else counted only with `includeTotal`.
    pub total_count: Option<u64>,
    /// Whether a next page exists; its offset (the reference's paging; `nextCursor` is ours).
    pub has_more: Option<bool>,
    pub next_offset: Option<u64>,
    /// Something in the request was ignored, and what is accepted instead (an unknown kind).
    pub warning: Option<String>,
    /// The model of sessions that name none (the reference's; its TUI shows it).
    pub defaults: Option<crate::overview::SessionDefaults>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionsCreateParams {
    pub key: String,
    #[serde(default)]
    pub label: Option<String>,
    #[serde(default)]
    pub agent_id: Option<String>,
    #[serde(default)]
    pub display_name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SessionsResolveParams {
    pub key: Option<String>,
    pub session_id: Option<String>,
    pub label: Option<String>,
    pub agent_id: Option<String>,
}

/// A field that can be set to a value, cleared with `null`, or left alone (absent).
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Patch<T> {
    #[default]
    Keep,
    Clear,
    Set(T),
}

impl<T> Patch<T> {
    pub fn is_keep(&self) -> bool {
        matches!(self, Self::Keep)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Patch<T> {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        Ok(match Option::<T>::deserialize(de)? {
            None => Self::Clear,
            Some(v) => Self::Set(v),
        })
    }
}

impl<T: Serialize> Serialize for Patch<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Set(v) => v.serialize(s),
            Self::Keep | Self::Clear => s.serialize_none(),
        }
    }
}

/// `sessions.patch`: the session's fields to change. Each [`Patch`] is kept when absent, and
/// left out again when written.
#[serde_with::apply(Patch => #[serde(default, skip_serializing_if = "Patch::is_keep")])]
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionsPatchParams {
    pub key: String,
    pub label: Patch<String>,
    /// `allow`, `deny`, or `null` to inherit the configured policy.
    pub send_policy: Patch<String>,
    pub model: Patch<String>,
    pub thinking_level: Patch<String>,
    pub verbose_level: Patch<String>,
    pub display_name: Patch<String>,
    /// Only on `subagent:` keys, and only once.
    pub spawned_by: Patch<String>,
    /// The agent `main` and legacy keys belong to (the reference's clients send it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
}

/// Params of `sessions.reset`, `sessions.delete` and `sessions.compact`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionKeyParams {
    pub key: String,
    /// The agent `main` and legacy keys belong to (the reference's clients send it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
}

/// The answer of `sessions.compact`.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionsCompactResult {
    pub ok: bool,
    pub key: String,
    /// False when there was nothing to compact (the newest turn is all there is).
    pub compacted: bool,
    /// The messages the summary stands for.
    pub messages: usize,
    pub summary: Option<String>,
}

/// The answer of `sessions.create`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionsCreateResult {
    /// Always true.
    pub ok: bool,
    /// The session's key in display form (`main` for the global bucket).
    pub key: String,
    /// The session's current sessionId (its transcript).
    pub session_id: String,
    /// False when the key already named a session (then nothing was changed).
    pub created: bool,
    /// The session's row, as `sessions.list` shows it.
    pub session: SessionRow,
}

/// The answer of `sessions.resolve`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionsResolveResult {
    /// Always true.
    pub ok: bool,
    /// The session's key in display form.
    pub key: String,
    /// The session's current sessionId.
    pub session_id: String,
}

/// The answer of `sessions.patch`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionsPatchResult {
    /// Always true.
    pub ok: bool,
    /// The session's key in display form.
    pub key: String,
    /// The session's row after the patch.
    pub session: SessionRow,
}

/// The answer of `sessions.reset`: the session starts a new transcript; the old one is kept.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionsResetResult {
    /// Always true.
    pub ok: bool,
    /// The session's key in display form.
    pub key: String,
    /// The new sessionId.
    pub session_id: String,
    /// The sessionId before the reset.
    pub previous_session_id: String,
    /// Absolute path of the previous transcript's JSONL mirror (absent without a mirror).
    pub previous_transcript_path: Option<String>,
}

/// The answer of `sessions.delete`: the entry is gone; its transcript is archived, not lost.
#[serde_with::apply(Option => #[serde(default, skip_serializing_if = "Option::is_none")])]
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionsDeleteResult {
    /// Always true.
    pub ok: bool,
    /// The deleted session's canonical key.
    pub key: String,
    /// Always true (an unknown key is a `NOT_FOUND` error).
    pub deleted: bool,
    /// The deleted session's last sessionId.
    pub session_id: String,
    /// Absolute path of the archived transcript's JSONL mirror (absent without a mirror).
    pub archived_transcript_path: Option<String>,
}

/// `sessions.subscribe` / `sessions.unsubscribe`: which sessions' run events (`agent`, `chat`,
/// `delivery`) this connection receives.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SessionsSubscribeParams {
    /// Sessions to add (subscribe) or remove (unsubscribe), as keys in any accepted form.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub session_keys: Vec<String>,
    /// Subscribe: every session. Unsubscribe: drop every subscription, `all` included.
    pub all: Option<bool>,
}

/// The connection's subscriptions after `sessions.subscribe` / `sessions.unsubscribe`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionsSubscribeResult {
    /// Always true.
    pub ok: bool,
    /// True when the connection receives every session's events.
    pub all: bool,
    /// The sessions named so far, as canonical keys, sorted.
    pub session_keys: Vec<String>,
    /// True after a subscribe, false after an unsubscribe (the reference's field; its Control UI
    /// retries a subscription until it reads true).
    pub subscribed: bool,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::round_trip;
    use serde_json::json;

    #[test]
    fn patch_tells_absent_from_null() {
        let p: SessionsPatchParams =
            serde_json::from_value(json!({"key": "k", "label": null, "model": "m"})).unwrap();
        assert_eq!(p.label, Patch::Clear);
        assert_eq!(p.model, Patch::Set("m".to_string()));
        assert_eq!(p.send_policy, Patch::Keep);
    }

    #[test]
    fn list_params_accept_lenient_numbers_and_one_kind() {
        let p: SessionsListParams =
            serde_json::from_value(json!({"limit": "20", "activeMinutes": 5.5, "kinds": "group"}))
                .unwrap();
        assert_eq!(p.limit, Some(20));
        assert_eq!(p.active_minutes, Some(5));
        assert_eq!(p.kinds.unwrap().into_vec(), vec!["group".to_string()]);
    }

    fn row() -> (SessionRow, Value) {
        let row = SessionRow {
            key: "agent:main:hook:h1".into(),
            kind: SessionKind::Hook,
            channel: "internal".into(),
            agent_id: "main".into(),
            session_id: "s2".into(),
            created_at: 1,
            updated_at: 2,
            chat_type: None,
            display_name: None,
            label: Some("ops".into()),
            model: None,
            context_tokens: None,
            input_tokens: None,
            output_tokens: None,
            total_tokens: None,
            cost_usd: None,
            thinking_level: None,
            verbose_level: None,
            system_sent: None,
            aborted_last_run: None,
            send_policy: Some("deny".into()),
            last_channel: None,
            last_to: None,
            delivery_context: None,
            spawned_by: None,
            archived_at: None,
            transcript_path: Some("/h/s2.jsonl".into()),
            messages: None,
            run_state: None,
            activity: None,
            subagent: None,
        };
        let json = json!({
            "key": "agent:main:hook:h1", "kind": "hook", "channel": "internal",
            "agentId": "main", "sessionId": "s2", "createdAt": 1, "updatedAt": 2,
            "label": "ops", "sendPolicy": "deny", "transcriptPath": "/h/s2.jsonl",
        });
        (row, json)
    }

    #[test]
    fn method_results_have_the_method_shapes() {
        let (session, session_json) = row();
        round_trip(
            SessionsCreateResult {
                ok: true,
                key: "agent:main:hook:h1".into(),
                session_id: "s2".into(),
                created: true,
                session: session.clone(),
            },
            json!({
                "ok": true, "key": "agent:main:hook:h1", "sessionId": "s2", "created": true,
                "session": session_json.clone(),
            }),
        );
        round_trip(
            SessionsResolveResult {
                ok: true,
                key: "main".into(),
                session_id: "s1".into(),
            },
            json!({"ok": true, "key": "main", "sessionId": "s1"}),
        );
        round_trip(
            SessionsPatchResult {
                ok: true,
                key: "agent:main:hook:h1".into(),
                session,
            },
            json!({"ok": true, "key": "agent:main:hook:h1", "session": session_json}),
        );
        round_trip(
            SessionsResetResult {
                ok: true,
                key: "main".into(),
                session_id: "s3".into(),
                previous_session_id: "s1".into(),
                previous_transcript_path: Some("/h/s1.jsonl".into()),
            },
            json!({
                "ok": true, "key": "main", "sessionId": "s3", "previousSessionId": "s1",
                "previousTranscriptPath": "/h/s1.jsonl",
            }),
        );
        round_trip(
            SessionsDeleteResult {
                ok: true,
                key: "agent:main:hook:h1".into(),
                deleted: true,
                session_id: "s2".into(),
                archived_transcript_path: Some("/h/s2.jsonl".into()),
            },
            json!({
                "ok": true, "key": "agent:main:hook:h1", "deleted": true, "sessionId": "s2",
                "archivedTranscriptPath": "/h/s2.jsonl",
            }),
        );
    }

    #[test]
    fn subscriptions_default_to_nothing() {
        assert_eq!(
            serde_json::from_value::<SessionsSubscribeParams>(json!({})).unwrap(),
            SessionsSubscribeParams::default()
        );
        round_trip(
            SessionsSubscribeParams {
                session_keys: vec!["main".into()],
                all: Some(false),
            },
            json!({"sessionKeys": ["main"], "all": false}),
        );
        round_trip(
            SessionsSubscribeResult {
                ok: true,
                all: false,
                session_keys: vec!["agent:main:main".into()],
                subscribed: true,
            },
            json!({"ok": true, "all": false, "sessionKeys": ["agent:main:main"], "subscribed": true}),
        );
    }
}
