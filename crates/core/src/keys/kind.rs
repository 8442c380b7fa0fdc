//! The small enums derived from a key: its kind (SPEC §2.1) and its chat type (SPEC §4.1).

use std::fmt;

/// What a session is, classified from the rest of its canonical key (SPEC §2.1). The filter values
/// of `sessions_list` `kinds`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionKind {
    /// The agent's main direct-chat bucket (`<mainKey>`, or `global` under global scope).
    Main,
    /// A group or channel chat (`<channel>:group:<id>`, `<channel>:channel:<id>`, with threads).
    Group,
    /// A cron job's session (`cron:<jobId>`).
    Cron,
    /// A webhook-triggered session (`hook:<id>`).
    Hook,
    /// A node (device) session (`node-<nodeId>` or `node:<nodeId>`).
    Node,
    /// Direct messages under a per-peer `dmScope`, sub-agents and custom keys.
    Other,
}

impl SessionKind {
    /// Every kind, in the order the spec lists them.
    pub const ALL: [SessionKind; 6] = [
        SessionKind::Main,
        SessionKind::Group,
        SessionKind::Cron,
        SessionKind::Hook,
        SessionKind::Node,
        SessionKind::Other,
    ];

    /// The wire name (`main`, `group`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            SessionKind::Main => "main",
            SessionKind::Group => "group",
            SessionKind::Cron => "cron",
            SessionKind::Hook => "hook",
            SessionKind::Node => "node",
            SessionKind::Other => "other",
        }
    }

    /// Parse a wire name, ignoring surrounding whitespace and ASCII case; `None` for anything else
    /// (a `kinds` filter says so: [`KindsFilter`]).
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        Self::ALL
            .into_iter()
            .find(|kind| kind.as_str().eq_ignore_ascii_case(s))
    }
}

/// A `kinds` filter as a caller wrote it: the kinds it names (each once) and, when some words
/// name no kind, a warning that says which and what is accepted.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KindsFilter {
    /// Empty = every kind (nothing was asked for).
    pub kinds: Vec<SessionKind>,
    pub warning: Option<String>,
}

impl KindsFilter {
    /// Reads `words` (each may hold several kinds separated by commas). A filter whose words
    /// name only unknown kinds is an error: listing everything would answer another question.
    pub fn parse<'a>(words: impl IntoIterator<Item = &'a str>) -> Result<Self, String> {
        let mut filter = Self::default();
        let mut unknown = Vec::new();
        for word in words.into_iter().flat_map(|w| w.split(',')).map(str::trim) {
            match SessionKind::parse(word) {
                Some(kind) if !filter.kinds.contains(&kind) => filter.kinds.push(kind),
                Some(_) => {}
                None if word.is_empty() => {}
                None => unknown.push(format!("{word:?}")),
            }
        }
        if unknown.is_empty() {
            return Ok(filter);
        }
        let accepted = Self::accepted();
        let unknown = unknown.join(", ");
        if filter.kinds.is_empty() {
            return Err(format!(
                "kinds: {unknown} is not a session kind; accepted: {accepted}"
            ));
        }
        filter.warning = Some(format!(
            "kinds: ignored {unknown} (not a session kind; accepted: {accepted})"
        ));
        Ok(filter)
    }

    fn accepted() -> String {
        SessionKind::ALL.map(SessionKind::as_str).join(", ")
    }
}

impl fmt::Display for SessionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The shape of a chat (SPEC §4.1 `chatType`, §8.2 send-policy `chatType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChatType {
    /// One person and the agent (also the main bucket).
    Direct,
    /// A group chat.
    Group,
    /// A channel-type chat (a Discord or Slack channel…).
    Channel,
}

impl ChatType {
    /// The wire name (`direct`, `group`, `channel`); also the marker segment in keys.
    pub fn as_str(self) -> &'static str {
        match self {
            ChatType::Direct => "direct",
            ChatType::Group => "group",
            ChatType::Channel => "channel",
        }
    }

    /// Parse a wire name, ignoring surrounding whitespace and ASCII case; the legacy `dm` means
    /// [`ChatType::Direct`].
    pub fn parse(s: &str) -> Option<Self> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("direct") || s.eq_ignore_ascii_case("dm") {
            Some(ChatType::Direct)
        } else if s.eq_ignore_ascii_case("group") {
            Some(ChatType::Group)
        } else if s.eq_ignore_ascii_case("channel") {
            Some(ChatType::Channel)
        } else {
            None
        }
    }
}

impl fmt::Display for ChatType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn session_kind_round_trips() {
        for kind in SessionKind::ALL {
            assert_eq!(SessionKind::parse(kind.as_str()), Some(kind));
            assert_eq!(
                SessionKind::parse(&format!(" {} ", kind.as_str().to_uppercase())),
                Some(kind)
            );
            let json = serde_json::to_string(&kind).unwrap();
            assert_eq!(json, format!("\"{kind}\""));
            assert_eq!(serde_json::from_str::<SessionKind>(&json).unwrap(), kind);
        }
        assert_eq!(SessionKind::parse("groups"), None);
        assert_eq!(SessionKind::parse(""), None);
    }

    #[test]
    fn chat_type_parses_dm_and_any_case() {
        let cases = [
            ("direct", Some(ChatType::Direct)),
            ("DM", Some(ChatType::Direct)),
            (" dm ", Some(ChatType::Direct)),
            ("Group", Some(ChatType::Group)),
            ("CHANNEL", Some(ChatType::Channel)),
            ("private", None),
            ("", None),
        ];
        for (raw, want) in cases {
            assert_eq!(ChatType::parse(raw), want, "input {raw:?}");
        }
        for ct in [ChatType::Direct, ChatType::Group, ChatType::Channel] {
            assert_eq!(ChatType::parse(ct.as_str()), Some(ct));
            let json = serde_json::to_string(&ct).unwrap();
            assert_eq!(json, format!("\"{ct}\""));
        }
    }
}
