//! Errors from canonicalising a session key.

/// The forms [`super::canonicalize`] accepts, quoted in every error so a model or a client that got
/// the key wrong learns what to send instead.
pub const ACCEPTED_FORMS: &str = "accepted: \"main\", \"agent:<agentId>:<rest>\" (e.g. agent:main:main, \
     agent:main:discord:group:<id>), a legacy key without the agent prefix (e.g. cron:<jobId>, \
     discord:group:<id>), or a sessionId from sessions_list";

/// Why a session reference could not be canonicalised.
///
/// Returned by [`super::canonicalize`] (and [`super::normalize_main_key`]). Every variant is caused by
/// the caller's input, never by the gateway's state: tools report it as a `{"status":"error"}` result
/// (gateway methods as `INVALID_REQUEST`) with the `Display` text unchanged, which already names the
/// accepted forms. Retrying with the same input cannot succeed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// The reference was empty or only whitespace. The caller should pass a key, `main` or a sessionId.
    #[error("empty session key; {forms}", forms = ACCEPTED_FORMS)]
    Empty,

    /// The reference names a reserved key: `unknown` always, `global` unless `session.scope` is
    /// `global`, or an `agent:<id>:` key whose rest is one of those. Reserved keys never name a
    /// session a caller may address; the caller should use `main` (which is the shared bucket when the
    /// scope is global) or a key from `sessions_list`.
    #[error(
        "session key {input:?} is reserved (\"global\" and \"unknown\" never name a session you can \
         address; use \"main\" for the main session); {forms}",
        forms = ACCEPTED_FORMS
    )]
    Reserved {
        /// The reference as given (trimmed, lower-cased).
        input: String,
    },

    /// The reference is malformed: whitespace or control characters inside, an empty `:` segment, a
    /// missing agent id or rest after `agent:`. `reason` says which; the caller should fix the key.
    #[error("invalid session key {input:?}: {reason}; {forms}", forms = ACCEPTED_FORMS)]
    Invalid {
        /// The reference as given (trimmed).
        input: String,
        /// What was wrong, in a few words.
        reason: String,
    },

    /// The reference (or the canonical key it would become) is longer than
    /// [`super::MAX_KEY_BYTES`] bytes. No session has such a key.
    #[error(
        "session key starting {input_prefix:?} is too long (at most {max} bytes); {forms}",
        max = super::MAX_KEY_BYTES,
        forms = ACCEPTED_FORMS
    )]
    TooLong {
        /// The first few characters of the reference, to recognise it by.
        input_prefix: String,
    },
}

impl KeyError {
    pub(crate) fn invalid(input: &str, reason: impl Into<String>) -> Self {
        Self::Invalid {
            input: input.to_owned(),
            reason: reason.into(),
        }
    }

    pub(crate) fn too_long(input: &str) -> Self {
        const PREFIX_CHARS: usize = 40;
        Self::TooLong {
            input_prefix: input.chars().take(PREFIX_CHARS).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn invalid_display_matches_documented_example() {
        let err = KeyError::invalid("agent::x", "empty segment");
        assert_eq!(
            err.to_string(),
            "invalid session key \"agent::x\": empty segment; accepted: \"main\", \
             \"agent:<agentId>:<rest>\" (e.g. agent:main:main, agent:main:discord:group:<id>), a \
             legacy key without the agent prefix (e.g. cron:<jobId>, discord:group:<id>), or a \
             sessionId from sessions_list"
        );
    }

    #[test]
    fn every_variant_names_the_accepted_forms() {
        let all = [
            KeyError::Empty,
            KeyError::Reserved {
                input: "global".into(),
            },
            KeyError::invalid("a b", "contains whitespace"),
            KeyError::too_long(&"x".repeat(600)),
        ];
        for err in all {
            let text = err.to_string();
            assert!(text.contains(ACCEPTED_FORMS), "{text}");
        }
    }

    #[test]
    fn too_long_keeps_a_short_prefix_and_escapes_it() {
        let err = KeyError::too_long(&format!("\u{7}{}", "é".repeat(600)));
        let KeyError::TooLong { input_prefix } = &err else {
            panic!("wrong variant: {err:?}");
        };
        assert_eq!(input_prefix.chars().count(), 40);
        assert!(
            err.to_string()
                .starts_with("session key starting \"\\u{7}ééé")
        );
    }
}
