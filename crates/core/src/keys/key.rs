//! [`SessionKey`]: a canonical key and what can be read from it without the store.

use std::borrow::Borrow;
use std::fmt;

use super::canonical::effective_main_key;
use super::shape::{self, INTERNAL_CHANNEL, Shape};
use super::{ChatType, DEFAULT_MAIN_KEY, GLOBAL_KEY, SessionKind};

const AGENT_PREFIX: &str = "agent:";

/// A canonical session key: either `agent:<agentId>:<rest>` or the literal `global` (the shared
/// bucket under `session.scope = "global"`).
///
/// Obtain one from [`super::canonicalize`], [`super::main_session_key`] or [`super::group_key`];
/// [`SessionKey::from_canonical`] is for keys read back from the store. Serialises as the plain
/// string. The accessors never fail or panic, even on a malformed key from the store: they answer
/// `None` / [`SessionKind::Other`] instead.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(transparent)]
pub struct SessionKey(String);

impl SessionKey {
    /// The key as stored.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The key as an owned string.
    pub fn into_string(self) -> String {
        self.0
    }

    /// [`SessionKey::display`], owned: the key's own string unless it is the global key.
    pub fn into_display(self) -> String {
        if self.is_global() {
            DEFAULT_MAIN_KEY.to_owned()
        } else {
            self.0
        }
    }

    /// Wraps `s` without checking it. Trusts that `s` is canonical (used when reading keys back from
    /// the store); anything a caller typed goes through [`super::canonicalize`] instead.
    pub fn from_canonical(s: String) -> Self {
        Self(s)
    }

    /// The shared bucket under global scope.
    pub(crate) fn global() -> Self {
        Self(GLOBAL_KEY.to_owned())
    }

    /// True for the `global` key.
    pub fn is_global(&self) -> bool {
        self.0 == GLOBAL_KEY
    }

    /// The agent id in the key; `None` for `global` (and for a malformed key without the prefix).
    pub fn agent_id(&self) -> Option<&str> {
        self.split().map(|(agent, _)| agent)
    }

    /// The part after `agent:<agentId>:`; `"global"` for the global key (and the whole key for a
    /// malformed one).
    pub fn rest(&self) -> &str {
        rest_of(&self.0)
    }

    fn split(&self) -> Option<(&str, &str)> {
        self.0.strip_prefix(AGENT_PREFIX)?.split_once(':')
    }

    fn is_main(&self, main_key: &str) -> bool {
        if self.is_global() {
            return true;
        }
        let rest = self.rest();
        // Fast path: the configured main key is normally already canonical.
        rest == main_key || rest == effective_main_key(main_key)
    }

    /// Classification on the rest (SPEC §2.1; deliberate change vs the reference, which classified
    /// the full key): the main key (and `global`) is `Main`; `cron:` `Cron`; `hook:` `Hook`; `node-`
    /// or `node:` `Node`; `<channel>:group:<id>` / `<channel>:channel:<id>`, with or without a
    /// trailing `:thread:<id>` / `:topic:<id>`, `Group`; everything else (direct chats, sub-agents,
    /// custom keys) `Other`.
    pub fn kind(&self, main_key: &str) -> SessionKind {
        if self.is_main(main_key) {
            return SessionKind::Main;
        }
        match shape::shape(self.rest()) {
            Shape::Cron => SessionKind::Cron,
            Shape::Hook => SessionKind::Hook,
            Shape::Node => SessionKind::Node,
            Shape::Group { .. } => SessionKind::Group,
            Shape::Subagent | Shape::Direct { .. } | Shape::Other => SessionKind::Other,
        }
    }

    /// The channel derivable from the key alone: the `<channel>` segment of group, channel and
    /// channel-qualified direct keys; `internal` for cron, hook and node keys; `None` otherwise (the
    /// main key, `direct:<peer>`, sub-agents, custom keys). Needed by the send policy for sessions
    /// that have no entry yet (SPEC §8.2, §13.10).
    pub fn channel(&self) -> Option<&str> {
        key_channel(&self.0)
    }

    /// The chat type derivable from the key: `Group` / `Channel` for those forms, `Direct` for direct
    /// forms and the main key (and `global`); `None` otherwise.
    pub fn chat_type(&self, main_key: &str) -> Option<ChatType> {
        if self.is_main(main_key) {
            return Some(ChatType::Direct);
        }
        match shape::shape(self.rest()) {
            Shape::Group { chat_type, .. } => Some(chat_type),
            Shape::Direct { .. } => Some(ChatType::Direct),
            Shape::Cron | Shape::Hook | Shape::Node | Shape::Subagent | Shape::Other => None,
        }
    }

    /// The `<id>` of a `<channel>:group:<id>` / `<channel>:channel:<id>` key, thread suffix excluded
    /// (where delivery routes a group reply). `None` for every other form.
    pub fn chat_id(&self) -> Option<&str> {
        if self.is_global() {
            return None;
        }
        match shape::shape(self.rest()) {
            Shape::Group { chat_id, .. } => Some(chat_id),
            _ => None,
        }
    }

    /// The id after a trailing `:thread:` or `:topic:`, if any (groups, direct chats, custom keys).
    pub fn thread_id(&self) -> Option<&str> {
        if self.is_global() {
            return None;
        }
        shape::thread_id(self.rest())
    }

    /// True for a sub-agent session (`subagent:<uuid>`, spawned by `sessions_spawn`).
    pub fn is_subagent(&self) -> bool {
        self.rest().starts_with("subagent:")
    }

    /// The form callers see: `main` for `global` (SPEC §2.2: callers never see `global`); the key
    /// otherwise. `main` canonicalises back to `global` under global scope.
    pub fn display(&self) -> &str {
        display_key(&self.0)
    }
}

/// [`SessionKey::display`] of a canonical key's text (one read in place from the store).
pub fn display_key(key: &str) -> &str {
    if key == GLOBAL_KEY {
        DEFAULT_MAIN_KEY
    } else {
        key
    }
}

/// [`SessionKey::rest`] of a key's text.
fn rest_of(key: &str) -> &str {
    key.strip_prefix(AGENT_PREFIX)
        .and_then(|k| k.split_once(':'))
        .map_or(key, |(_, rest)| rest)
}

/// [`SessionKey::channel`] of a canonical key's text (one read in place from the store).
pub fn key_channel(key: &str) -> Option<&str> {
    if key == GLOBAL_KEY {
        return None;
    }
    match shape::shape(rest_of(key)) {
        Shape::Cron | Shape::Hook | Shape::Node => Some(INTERNAL_CHANNEL),
        Shape::Group { channel, .. } => Some(channel),
        Shape::Direct { channel } => channel,
        Shape::Subagent | Shape::Other => None,
    }
}

/// Reads as the string it is (`len`, comparisons, `Option::as_deref`); building one from a
/// string still goes through canonicalisation or [`SessionKey::from_canonical`].
impl std::ops::Deref for SessionKey {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for SessionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for SessionKey {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// Lets maps keyed by `SessionKey` be queried with a `&str` (the hash of a `SessionKey` is the hash
/// of its string).
impl Borrow<str> for SessionKey {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl From<SessionKey> for String {
    fn from(key: SessionKey) -> Self {
        key.0
    }
}

impl PartialEq<str> for SessionKey {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for SessionKey {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for SessionKey {
    fn eq(&self, other: &String) -> bool {
        &self.0 == other
    }
}

impl PartialEq<SessionKey> for &str {
    fn eq(&self, other: &SessionKey) -> bool {
        *self == other.0
    }
}

impl PartialEq<SessionKey> for String {
    fn eq(&self, other: &SessionKey) -> bool {
        *self == other.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    /// Everything read from one key, compared as a whole.
    #[derive(Debug, PartialEq)]
    struct Read<'a> {
        kind: SessionKind,
        channel: Option<&'a str>,
        chat_type: Option<ChatType>,
        chat_id: Option<&'a str>,
        thread_id: Option<&'a str>,
        display: &'a str,
        agent_id: Option<&'a str>,
        rest: &'a str,
        subagent: bool,
    }

    fn read<'a>(key: &'a SessionKey, main_key: &str) -> Read<'a> {
        Read {
            kind: key.kind(main_key),
            channel: key.channel(),
            chat_type: key.chat_type(main_key),
            chat_id: key.chat_id(),
            thread_id: key.thread_id(),
            display: key.display(),
            agent_id: key.agent_id(),
            rest: key.rest(),
            subagent: key.is_subagent(),
        }
    }

    #[test]
    fn every_spec_form_reads_as_documented() {
        use ChatType::{Channel, Direct, Group};
        use SessionKind as K;
        // (key, kind, channel, chat_type, chat_id, thread_id)
        type Row = (
            &'static str,
            SessionKind,
            Option<&'static str>,
            Option<ChatType>,
            Option<&'static str>,
            Option<&'static str>,
        );
        let rows: &[Row] = &[
            ("agent:main:main", K::Main, None, Some(Direct), None, None),
            (
                "agent:ops:discord:group:dev",
                K::Group,
                Some("discord"),
                Some(Group),
                Some("dev"),
                None,
            ),
            (
                "agent:main:slack:channel:c0123",
                K::Group,
                Some("slack"),
                Some(Channel),
                Some("c0123"),
                None,
            ),
            (
                "agent:main:discord:channel:123:thread:456",
                K::Group,
                Some("discord"),
                Some(Channel),
                Some("123"),
                Some("456"),
            ),
            (
                "agent:main:telegram:group:-100123:topic:42",
                K::Group,
                Some("telegram"),
                Some(Group),
                Some("-100123"),
                Some("42"),
            ),
            (
                "agent:main:direct:+15550001",
                K::Other,
                None,
                Some(Direct),
                None,
                None,
            ),
            (
                "agent:main:whatsapp:direct:+15550001",
                K::Other,
                Some("whatsapp"),
                Some(Direct),
                None,
                None,
            ),
            (
                "agent:main:whatsapp:biz:direct:+15550001",
                K::Other,
                Some("whatsapp"),
                Some(Direct),
                None,
                None,
            ),
            (
                "agent:main:slack:direct:u1:thread:171.5",
                K::Other,
                Some("slack"),
                Some(Direct),
                None,
                Some("171.5"),
            ),
            (
                "agent:main:cron:job-1",
                K::Cron,
                Some("internal"),
                None,
                None,
                None,
            ),
            (
                "agent:main:hook:0b7f0d0e-8f5a-4a57-9a65-1f1c4bb3f0d2",
                K::Hook,
                Some("internal"),
                None,
                None,
                None,
            ),
            (
                "agent:main:hook:github-push",
                K::Hook,
                Some("internal"),
                None,
                None,
                None,
            ),
            (
                "agent:main:node-kitchen-pi",
                K::Node,
                Some("internal"),
                None,
                None,
                None,
            ),
            (
                "agent:main:node:kitchen-pi",
                K::Node,
                Some("internal"),
                None,
                None,
                None,
            ),
            (
                "agent:main:subagent:0b7f0d0e-8f5a-4a57-9a65-1f1c4bb3f0d2",
                K::Other,
                None,
                None,
                None,
                None,
            ),
            ("agent:main:my-notes", K::Other, None, None, None, None),
            ("agent:main:main:2", K::Other, None, None, None, None),
        ];
        for &(raw, kind, channel, chat_type, chat_id, thread_id) in rows {
            let key = SessionKey::from_canonical(raw.to_owned());
            let (agent, rest) = raw
                .strip_prefix("agent:")
                .and_then(|r| r.split_once(':'))
                .unwrap();
            let want = Read {
                kind,
                channel,
                chat_type,
                chat_id,
                thread_id,
                display: raw,
                agent_id: Some(agent),
                rest,
                subagent: rest.starts_with("subagent:"),
            };
            assert_eq!(read(&key, "main"), want, "key {raw}");
        }
    }

    #[test]
    fn global_reads_as_main() {
        let key = SessionKey::global();
        assert_eq!(
            read(&key, "main"),
            Read {
                kind: SessionKind::Main,
                channel: None,
                chat_type: Some(ChatType::Direct),
                chat_id: None,
                thread_id: None,
                display: "main",
                agent_id: None,
                rest: "global",
                subagent: false,
            }
        );
        assert!(key.is_global());
        assert_eq!(key.to_string(), "global");
    }

    #[test]
    fn main_kind_follows_the_configured_main_key() {
        let work = SessionKey::from_canonical("agent:main:work".into());
        let main = SessionKey::from_canonical("agent:main:main".into());
        assert_eq!(work.kind("work"), SessionKind::Main);
        assert_eq!(work.kind(" Work "), SessionKind::Main);
        assert_eq!(main.kind("work"), SessionKind::Other);
        assert_eq!(main.chat_type("work"), None);
    }

    #[test]
    fn malformed_store_keys_do_not_panic() {
        for raw in ["", "agent:", "agent:x", "discord:group:x", ":::", "agent::"] {
            let key = SessionKey::from_canonical(raw.to_owned());
            let _ = read(&key, "main");
        }
        let legacy = SessionKey::from_canonical("discord:group:x".into());
        assert_eq!(legacy.agent_id(), None);
        assert_eq!(legacy.rest(), "discord:group:x");
        assert_eq!(legacy.kind("main"), SessionKind::Group);
    }

    #[test]
    fn legacy_dm_marker_in_stored_keys_reads_as_direct() {
        let key = SessionKey::from_canonical("agent:main:telegram:dm:42".into());
        assert_eq!(key.chat_type("main"), Some(ChatType::Direct));
        assert_eq!(key.channel(), Some("telegram"));
    }

    #[test]
    fn serialises_as_plain_string_and_borrows_as_str() {
        let key = SessionKey::from_canonical("agent:main:cron:x".into());
        assert_eq!(
            serde_json::to_string(&key).unwrap(),
            "\"agent:main:cron:x\""
        );
        let mut map = std::collections::HashMap::new();
        map.insert(key.clone(), 1);
        assert_eq!(map.get("agent:main:cron:x"), Some(&1));
        assert_eq!(key, "agent:main:cron:x");
        assert_eq!(String::from(key), "agent:main:cron:x");
    }
}
