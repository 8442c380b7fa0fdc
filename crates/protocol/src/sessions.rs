//! `sessions.*` params and results, and the session row shared with `sessions_list` (SPEC §5.3, §7.1).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::lenient;

/// A session's delivery route: where replies to it go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeliveryContext {
    pub channel: String,
    pub to: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
}

/// One row of `sessions.list` / `sessions_list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionRow {
    /// The session key in display form (`main` for the global bucket).
    pub key: String,
    /// `main | group | cron | hook | node | other`, classified on the key's rest.
    pub kind: String,
    /// `internal` for cron/hook/node; the entry's channel for groups; `lastChannel` for direct
    /// chats; else `unknown`.
    pub channel: String,
    pub agent_id: String,
    pub session_id: String,
    pub created_at: i64,
    pub updated_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chat_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub display_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_level: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verbose_level: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub system_sent: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aborted_last_run: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_policy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_channel: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_to: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_context: Option<DeliveryContext>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spawned_by: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived_at: Option<i64>,
    /// Absolute path of the session's JSONL transcript mirror; the file exists.
    pub transcript_path: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub messages: Option<Vec<Value>>,
}

/// `kinds` may be one string or an array of strings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    pub fn into_vec(self) -> Vec<String> {
        match self {
            Self::One(s) => vec![s],
            Self::Many(v) => v,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SessionsListParams {
    /// Rows per page: default 50, clamped to 1–1000 (`sessions_list`: 1–200).
    #[serde(
        deserialize_with = "lenient::opt_int",
        skip_serializing_if = "Option::is_none"
    )]
    pub limit: Option<i64>,
    /// `nextCursor` of the previous page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// Only sessions updated in the last N minutes (N ≥ 1).
    #[serde(
        deserialize_with = "lenient::opt_int",
        skip_serializing_if = "Option::is_none"
    )]
    pub active_minutes: Option<i64>,
    /// Kinds to keep: `main|group|cron|hook|node|other`; unknown values are ignored.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kinds: Option<OneOrMany>,
    /// Substring of the key, label or display name (case-insensitive).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub search: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub spawned_by: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Include the last N messages of each row (0–20), tool results removed.
    #[serde(
        deserialize_with = "lenient::opt_int",
        skip_serializing_if = "Option::is_none"
    )]
    pub message_limit: Option<i64>,
    /// Include archived sessions too.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub include_archived: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionsListResult {
    pub count: usize,
    pub sessions: Vec<SessionRow>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
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

#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionsPatchParams {
    pub key: String,
    #[serde(default, skip_serializing_if = "Patch::is_keep")]
    pub label: Patch<String>,
    /// `allow`, `deny`, or `null` to inherit the configured policy.
    #[serde(default, skip_serializing_if = "Patch::is_keep")]
    pub send_policy: Patch<String>,
    #[serde(default, skip_serializing_if = "Patch::is_keep")]
    pub model: Patch<String>,
    #[serde(default, skip_serializing_if = "Patch::is_keep")]
    pub thinking_level: Patch<String>,
    #[serde(default, skip_serializing_if = "Patch::is_keep")]
    pub verbose_level: Patch<String>,
    #[serde(default, skip_serializing_if = "Patch::is_keep")]
    pub display_name: Patch<String>,
    /// Only on `subagent:` keys, and only once.
    #[serde(default, skip_serializing_if = "Patch::is_keep")]
    pub spawned_by: Patch<String>,
}

/// Params of `sessions.reset` and `sessions.delete`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionKeyParams {
    pub key: String,
}

#[cfg(test)]
mod tests {
    use super::*;
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
}
