//! Reading the structure of a key's rest: which SPEC §2.1 form it has and where its parts are.
//!
//! Everything here borrows from the rest and never fails: keys read back from the store are trusted
//! (`SessionKey::from_canonical`), so a malformed one must classify as `Other`, not panic. The legacy
//! `dm` marker is read as `direct` too, for keys stored before canonicalisation rewrote it.

use super::ChatType;

/// The channel reported for cron, hook and node sessions (SPEC §7.1).
pub(crate) const INTERNAL_CHANNEL: &str = "internal";

/// The form of a rest, main key aside (that needs the configured main key; see `SessionKey::kind`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Shape<'a> {
    /// `cron:<jobId>`
    Cron,
    /// `hook:<id>`
    Hook,
    /// `node-<nodeId>` or `node:<nodeId>`
    Node,
    /// `subagent:<uuid>`
    Subagent,
    /// `<channel>:group:<id>[:thread:<t>]` or `<channel>:channel:<id>[:thread:<t>]`
    Group {
        channel: &'a str,
        chat_type: ChatType,
        chat_id: &'a str,
        thread_id: Option<&'a str>,
    },
    /// `direct:<peer>` (channel `None`), `<channel>:direct:<peer>`,
    /// `<channel>:<account>:direct:<peer>`
    Direct { channel: Option<&'a str> },
    /// Anything else: a custom key.
    Other,
}

/// True for a first segment that starts one of the non-channel forms. Such a segment is never read as
/// a channel name, by classification or by the legacy `dm` rewrite.
pub(crate) fn is_reserved_first_segment(segment: &str) -> bool {
    matches!(
        segment,
        "cron" | "hook" | "node" | "subagent" | "direct" | "dm"
    ) || segment.starts_with("node-")
}

fn is_direct_marker(segment: &str) -> bool {
    matches!(segment, "direct" | "dm")
}

fn is_thread_marker(segment: &str) -> bool {
    matches!(segment, "thread" | "topic")
}

/// Classify a rest.
pub(crate) fn shape(rest: &str) -> Shape<'_> {
    if rest.starts_with("cron:") {
        return Shape::Cron;
    }
    if rest.starts_with("hook:") {
        return Shape::Hook;
    }
    if rest.starts_with("node-") || rest.starts_with("node:") {
        return Shape::Node;
    }
    if rest.starts_with("subagent:") {
        return Shape::Subagent;
    }
    let mut parts = rest.splitn(3, ':');
    let first = parts.next().unwrap_or_default();
    let (Some(second), tail) = (parts.next(), parts.next()) else {
        return Shape::Other;
    };
    if first.is_empty() || second.is_empty() {
        return Shape::Other;
    }
    if is_direct_marker(first) {
        return Shape::Direct { channel: None };
    }
    if is_reserved_first_segment(first) {
        return Shape::Other;
    }
    let Some(tail) = tail.filter(|t| !t.is_empty()) else {
        return Shape::Other;
    };
    let group_type = match second {
        "group" => Some(ChatType::Group),
        "channel" => Some(ChatType::Channel),
        _ => None,
    };
    if let Some(chat_type) = group_type {
        let (chat_id, thread_id) = split_thread_suffix(tail);
        return Shape::Group {
            channel: first,
            chat_type,
            chat_id,
            thread_id,
        };
    }
    if is_direct_marker(second) {
        return Shape::Direct {
            channel: Some(first),
        };
    }
    // `<channel>:<account>:direct:<peer>`: `tail` is `direct:<peer>`.
    match tail.split_once(':') {
        Some((marker, peer)) if is_direct_marker(marker) && !peer.is_empty() => Shape::Direct {
            channel: Some(first),
        },
        _ => Shape::Other,
    }
}

/// Split `"<id>[:thread:<t>]"` (or `:topic:`) into the id and the thread; the id keeps any `:` it has
/// (Matrix-style room ids) and must not be empty.
pub(crate) fn split_thread_suffix(s: &str) -> (&str, Option<&str>) {
    if let Some((before, thread)) = s.rsplit_once(':')
        && let Some((id, marker)) = before.rsplit_once(':')
        && is_thread_marker(marker)
        && !id.is_empty()
        && !thread.is_empty()
    {
        return (id, Some(thread));
    }
    (s, None)
}

/// The thread id at the end of a rest, for the forms that can carry one (groups, direct chats and
/// custom keys; the opaque ids of cron, hook, node and sub-agent keys are never split).
pub(crate) fn thread_id(rest: &str) -> Option<&str> {
    match shape(rest) {
        Shape::Group { thread_id, .. } => thread_id,
        Shape::Direct { .. } | Shape::Other => split_thread_suffix(rest).1,
        Shape::Cron | Shape::Hook | Shape::Node | Shape::Subagent => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn shapes() {
        let group = |channel, chat_type, chat_id, thread_id| Shape::Group {
            channel,
            chat_type,
            chat_id,
            thread_id,
        };
        let cases: &[(&str, Shape<'_>)] = &[
            ("cron:job-1", Shape::Cron),
            ("hook:abc", Shape::Hook),
            ("node-pi", Shape::Node),
            ("node:pi", Shape::Node),
            ("subagent:1234", Shape::Subagent),
            (
                "discord:group:dev",
                group("discord", ChatType::Group, "dev", None),
            ),
            (
                "slack:channel:c1:thread:171.2",
                group("slack", ChatType::Channel, "c1", Some("171.2")),
            ),
            (
                "telegram:group:-100:topic:42",
                group("telegram", ChatType::Group, "-100", Some("42")),
            ),
            (
                "matrix:channel:!room:example.org",
                group("matrix", ChatType::Channel, "!room:example.org", None),
            ),
            (
                "discord:group:thread:5",
                group("discord", ChatType::Group, "thread:5", None),
            ),
            ("direct:+1555", Shape::Direct { channel: None }),
            ("dm:+1555", Shape::Direct { channel: None }),
            (
                "whatsapp:direct:+1555",
                Shape::Direct {
                    channel: Some("whatsapp"),
                },
            ),
            (
                "whatsapp:biz:direct:+1555",
                Shape::Direct {
                    channel: Some("whatsapp"),
                },
            ),
            ("subagent:group:x", Shape::Subagent),
            ("direct", Shape::Other),
            ("discord:group", Shape::Other),
            ("discord:group:", Shape::Other),
            ("nodes:x", Shape::Other),
            ("node", Shape::Other),
            ("main", Shape::Other),
            ("my-custom-key", Shape::Other),
            ("a:b:c", Shape::Other),
            ("", Shape::Other),
            (":group:x", Shape::Other),
        ];
        for (rest, want) in cases {
            assert_eq!(shape(rest), *want, "rest {rest:?}");
        }
    }

    #[test]
    fn thread_ids() {
        let cases = [
            ("discord:group:dev:thread:9", Some("9")),
            ("discord:group:thread:9", None),
            ("slack:direct:u1:thread:171.2", Some("171.2")),
            ("custom:topic:7", Some("7")),
            ("topic:7", None),
            ("cron:job:thread:1", None),
            ("discord:group:dev:thread:", None),
            ("main", None),
        ];
        for (rest, want) in cases {
            assert_eq!(thread_id(rest), want, "rest {rest:?}");
        }
    }
}
