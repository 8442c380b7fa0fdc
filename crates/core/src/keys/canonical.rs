//! Canonicalisation: turning whatever a caller passed into a [`SessionKey`] (SPEC §2.2). The rules
//! are listed in the module doc of [`super`].

use std::borrow::Cow;

use super::shape::is_reserved_first_segment;
use super::{
    ChatType, DEFAULT_MAIN_KEY, GLOBAL_KEY, KeyError, MAX_KEY_BYTES, SessionKey, UNKNOWN_KEY,
    normalize_agent_id,
};

/// `session.scope`: whether direct chat is bucketed per sender or shared under `global`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Scope {
    /// Each agent has its own main key (`agent:<agentId>:<mainKey>`).
    #[default]
    PerSender,
    /// All direct chat shares the `global` bucket, shown to callers as `main`.
    Global,
}

/// Who is asking: the calling agent (already normalised), the configured main key, the scope.
#[derive(Clone, Copy, Debug)]
pub struct KeyContext<'a> {
    /// The calling agent's id (an operator call without an agent uses the default agent).
    pub agent_id: &'a str,
    /// `session.mainKey` (default `main`).
    pub main_key: &'a str,
    /// `session.scope`.
    pub scope: Scope,
}

impl Default for KeyContext<'_> {
    /// Agent `main`, main key `main`, per-sender scope: the defaults of an empty config.
    fn default() -> Self {
        Self {
            agent_id: super::DEFAULT_AGENT_ID,
            main_key: DEFAULT_MAIN_KEY,
            scope: Scope::PerSender,
        }
    }
}

/// Canonical main keys must leave room for `agent:<64-char id>:` under [`MAX_KEY_BYTES`].
const MAX_MAIN_KEY_BYTES: usize = 256;

/// Canonicalise any reference a caller may pass (SPEC §2.2): a full key, a legacy key, `main`, or
/// `global` under global scope. Total (every input is either a key or a [`KeyError`] naming the
/// accepted forms) and idempotent for a given `ctx`.
///
/// A sessionId is *not* resolved here (that needs the store): check [`looks_like_session_id`] first.
/// Passed here, a UUID becomes a custom key of the calling agent.
pub fn canonicalize(input: &str, ctx: &KeyContext) -> Result<SessionKey, KeyError> {
    let trimmed = input.trim();
    if trimmed.is_empty() {
        return Err(KeyError::Empty);
    }
    if trimmed.len() > MAX_KEY_BYTES {
        return Err(KeyError::too_long(trimmed));
    }
    if let Some(c) = trimmed.chars().find(|&c| is_forbidden_char(c)) {
        return Err(KeyError::invalid(trimmed, forbidden_reason(c)));
    }
    let lower = trimmed.to_lowercase();
    match lower.as_str() {
        DEFAULT_MAIN_KEY => return Ok(main_session_key(ctx.agent_id, ctx)),
        GLOBAL_KEY if ctx.scope == Scope::Global => return Ok(SessionKey::global()),
        GLOBAL_KEY | UNKNOWN_KEY => return Err(KeyError::Reserved { input: lower }),
        _ => {}
    }

    let (agent_id, rest) = match lower.strip_prefix("agent:") {
        Some(after) => {
            let Some((id, rest)) = after.split_once(':') else {
                let reason = if after.is_empty() {
                    "missing agent id and rest after \"agent:\""
                } else {
                    "missing rest after \"agent:<agentId>:\""
                };
                return Err(KeyError::invalid(trimmed, reason));
            };
            if id.is_empty() {
                return Err(KeyError::invalid(
                    trimmed,
                    "empty segment: missing agent id after \"agent:\"",
                ));
            }
            (normalize_agent_id(id), rest)
        }
        // A legacy key: it belongs to the calling agent.
        None => (normalize_agent_id(ctx.agent_id), lower.as_str()),
    };

    let rest = normalize_rest(rest).map_err(|reason| KeyError::invalid(trimmed, reason))?;
    if rest == GLOBAL_KEY || rest == UNKNOWN_KEY {
        return Err(KeyError::Reserved { input: lower });
    }
    if ctx.scope == Scope::Global && rest == effective_main_key(ctx.main_key) {
        return Ok(SessionKey::global());
    }
    let key = format!("agent:{agent_id}:{rest}");
    // The prefix can push a legacy key over the limit; rejecting here keeps canonicalisation
    // idempotent (a returned key always passes the input length check).
    if key.len() > MAX_KEY_BYTES {
        return Err(KeyError::too_long(trimmed));
    }
    Ok(SessionKey::from_canonical(key))
}

/// The main key of `agent_id` under `ctx`'s main key and scope: `agent:<agentId>:<mainKey>`, or
/// `global` under [`Scope::Global`]. `agent_id` is normalised; `ctx.agent_id` is not used.
pub fn main_session_key(agent_id: &str, ctx: &KeyContext) -> SessionKey {
    match ctx.scope {
        Scope::Global => SessionKey::global(),
        Scope::PerSender => SessionKey::from_canonical(format!(
            "agent:{}:{}",
            normalize_agent_id(agent_id),
            effective_main_key(ctx.main_key)
        )),
    }
}

/// Validate and canonicalise a configured `session.mainKey`: trimmed, lower-cased, a valid rest
/// (no whitespace or control characters, no empty `:` segments, legacy `dm` rewritten), not
/// `global`/`unknown`, at most 256 bytes. For the config loader, so a bad value stops start-up with
/// a clear error instead of being replaced silently (which is what the key functions do with it).
pub fn normalize_main_key(raw: &str) -> Result<String, KeyError> {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Err(KeyError::Empty);
    }
    if trimmed.len() > MAX_MAIN_KEY_BYTES {
        return Err(KeyError::too_long(trimmed));
    }
    if let Some(c) = trimmed.chars().find(|&c| is_forbidden_char(c)) {
        return Err(KeyError::invalid(trimmed, forbidden_reason(c)));
    }
    let lower = trimmed.to_lowercase();
    let rest = normalize_rest(&lower).map_err(|reason| KeyError::invalid(trimmed, reason))?;
    if rest == GLOBAL_KEY || rest == UNKNOWN_KEY {
        return Err(KeyError::Reserved { input: lower });
    }
    if rest.len() > MAX_MAIN_KEY_BYTES {
        return Err(KeyError::too_long(trimmed));
    }
    Ok(rest.into_owned())
}

/// The main key actually used for `raw`: its canonical form, or [`DEFAULT_MAIN_KEY`] when `raw` is
/// not a valid main key (the config loader rejects those; falling back here keeps the key
/// functions total and idempotent whatever they are handed).
pub(crate) fn effective_main_key(raw: &str) -> Cow<'_, str> {
    // Fast path: an already-canonical main key (the normal case) is borrowed as is.
    match normalize_main_key(raw) {
        Ok(key) if key == raw => Cow::Borrowed(raw),
        Ok(key) => Cow::Owned(key),
        Err(_) => Cow::Borrowed(DEFAULT_MAIN_KEY),
    }
}

/// True when `input` looks like a sessionId: a hyphenated UUID (8-4-4-4-12 hex digits, any case),
/// surrounding whitespace ignored.
pub fn looks_like_session_id(input: &str) -> bool {
    let bytes = input.trim().as_bytes();
    bytes.len() == 36
        && bytes.iter().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => *b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

/// Build a group/channel key as the gateway does (SPEC §2.1): `agent:<agentId>:<channel>:<group|
/// channel>:<id>[:thread:<thread>]`, with `ChatType::Direct` giving `<channel>:direct:<id>`.
///
/// Every part is trimmed and lower-cased; whitespace and control characters become `-`; `:` in the
/// channel or thread becomes `-` (it would shift the segments) and empty `:` segments in the id are
/// dropped; a segment of the id that reads as a structure word (`thread`, `topic`) is escaped
/// with a trailing `_` (so `chat:thread:9` can never pose as chat `chat`'s thread `9`); an empty
/// channel or id becomes `unknown`; an empty thread is left out. Parts are cut to 64 (channel),
/// 200 (id, before escaping) and 100 (thread) bytes, so the result is always canonical:
/// `canonicalize(group_key(..).as_str())` returns it unchanged.
pub fn group_key(
    agent_id: &str,
    channel: &str,
    chat_type: ChatType,
    chat_id: &str,
    thread_id: Option<&str>,
) -> SessionKey {
    let mut channel = clean_part(channel, true, 64);
    if channel.is_empty() || is_reserved_first_segment(&channel) {
        // An empty or reserved first segment would make the key read as another form.
        channel = format!(
            "{}{channel}",
            if channel.is_empty() { "unknown" } else { "x-" }
        );
    }
    let mut chat_id = clean_part(chat_id, false, 200);
    if chat_id.is_empty() {
        chat_id = UNKNOWN_KEY.to_owned();
    }
    let mut key = format!(
        "agent:{}:{channel}:{}:{chat_id}",
        normalize_agent_id(agent_id),
        chat_type.as_str()
    );
    if let Some(thread) = thread_id.map(|t| clean_part(t, true, 100))
        && !thread.is_empty()
    {
        key.push_str(":thread:");
        key.push_str(&thread);
    }
    SessionKey::from_canonical(key)
}

/// One part of a built key: trimmed, lower-cased, unsafe characters replaced, no empty segments.
fn clean_part(raw: &str, colon_to_dash: bool, max_bytes: usize) -> String {
    let mapped: String = raw
        .trim()
        .to_lowercase()
        .chars()
        .map(|c| {
            if is_forbidden_char(c) || (colon_to_dash && c == ':') {
                '-'
            } else {
                c
            }
        })
        .collect();
    let mut out = mapped
        .split(':')
        .filter(|s| !s.is_empty())
        .collect::<Vec<_>>()
        .join(":");
    if out.len() > max_bytes {
        let mut cut = max_bytes;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
        let kept = out.trim_end_matches(':').len();
        out.truncate(kept);
    }
    if !colon_to_dash && out.split(':').any(is_marker_like) {
        out = out
            .split(':')
            .map(|s| match is_marker_like(s) {
                true => format!("{s}_"),
                false => s.to_string(),
            })
            .collect::<Vec<_>>()
            .join(":");
    }
    out
}

/// A segment of an outside id that reads as a key's structure word (`thread`, `topic`), or as one
/// escaped already (`thread_`, `thread__`, …): each gets one more `_`, so a chat id can never
/// name another chat's thread and two ids never build the same key.
fn is_marker_like(segment: &str) -> bool {
    ["thread", "topic"].iter().any(|word| {
        segment
            .strip_prefix(word)
            .is_some_and(|rest| rest.bytes().all(|b| b == b'_'))
    })
}

/// Check a rest's segments and rewrite the legacy `dm` marker to `direct`:
/// `dm:<peer>`, `<channel>:dm:<peer>` and `<channel>:<account>:dm:<peer>`.
///
/// The rewrite only looks at whether a segment is `dm` and at whether the first/second segments are
/// reserved words (a set `dm` and `direct` both belong to), so applying it twice changes nothing.
fn normalize_rest(rest: &str) -> Result<Cow<'_, str>, &'static str> {
    if rest.is_empty() {
        return Err("missing rest after \"agent:<agentId>:\"");
    }
    let mut segments: Vec<&str> = rest.split(':').collect();
    if segments.iter().any(|s| s.is_empty()) {
        return Err("empty segment (\"::\", or a leading or trailing ':')");
    }
    let first = segments[0];
    let second = segments.get(1).copied().unwrap_or_default();
    let channel_form = !is_reserved_first_segment(first);
    let mut changed = false;
    if first == "dm" && segments.len() >= 2 {
        segments[0] = "direct";
        changed = true;
    }
    if channel_form && second == "dm" && segments.len() >= 3 {
        segments[1] = "direct";
        changed = true;
    }
    if channel_form
        && !matches!(second, "dm" | "direct" | "group" | "channel")
        && segments.len() >= 4
        && segments[2] == "dm"
    {
        segments[2] = "direct";
        changed = true;
    }
    Ok(if changed {
        Cow::Owned(segments.join(":"))
    } else {
        Cow::Borrowed(rest)
    })
}

/// Characters no key may contain: whitespace, control characters, and invisible formatting
/// characters (zero-width spaces and joiners, bidi controls, BOM) that would make two keys look
/// identical.
/// Path separators too: no platform's id holds one, and a key must never read as a path
/// (`../../etc`), whatever later code does with it.
fn is_forbidden_char(c: char) -> bool {
    c.is_whitespace()
        || c.is_control()
        || matches!(c, '/' | '\\')
        || matches!(
            c,
            '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}' | '\u{FEFF}'
        )
}

fn forbidden_reason(c: char) -> String {
    let what = if c.is_whitespace() {
        "whitespace"
    } else if matches!(c, '/' | '\\') {
        "a path separator"
    } else if c.is_control() {
        "a control character"
    } else {
        "an invisible formatting character"
    };
    format!("contains {what} (U+{:04X})", u32::from(c))
}

#[cfg(test)]
#[path = "canonical_tests.rs"]
mod tests;
