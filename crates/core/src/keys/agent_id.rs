//! Agent-id normalisation (SPEC §1).

/// Longest agent id, in characters (all ASCII after normalisation, so also bytes).
const MAX_AGENT_ID_CHARS: usize = 64;

/// Normalise a configured or caller-supplied agent id.
///
/// Trim, lower-case, replace any character outside `[a-z0-9_-]` with `-`, collapse runs of `-`,
/// strip leading characters that are not `[a-z0-9]` and trailing `-`/`_`, truncate to 64 characters
/// (then strip trailing `-`/`_` again); an empty result becomes `"main"`.
///
/// The result always matches `^[a-z0-9][a-z0-9_-]{0,63}$`, and the function is idempotent.
pub fn normalize_agent_id(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len().min(MAX_AGENT_ID_CHARS + 1));
    // `to_lowercase` may turn one char into several (e.g. 'İ' -> "i\u{307}"); each is mapped on
    // its own, which is what the rule "any char outside [a-z0-9_-] -> '-'" asks for.
    for c in raw.trim().chars().flat_map(char::to_lowercase) {
        let mapped = if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' {
            c
        } else {
            '-'
        };
        if mapped == '-' && out.ends_with('-') {
            continue;
        }
        // Leading characters must be alphanumeric: skip '-' and '_' until the first one.
        if out.is_empty() && !mapped.is_ascii_alphanumeric() {
            continue;
        }
        out.push(mapped);
    }
    out.truncate(MAX_AGENT_ID_CHARS);
    let trimmed_len = out.trim_end_matches(['-', '_']).len();
    out.truncate(trimmed_len);
    if out.is_empty() {
        return super::DEFAULT_AGENT_ID.to_owned();
    }
    out
}

/// True when `id` already has the normalised shape `^[a-z0-9][a-z0-9_-]{0,63}$`.
#[cfg(test)]
pub(crate) fn is_valid_agent_id(id: &str) -> bool {
    let bytes = id.as_bytes();
    matches!(bytes.first(), Some(b) if b.is_ascii_lowercase() || b.is_ascii_digit())
        && bytes.len() <= MAX_AGENT_ID_CHARS
        && bytes
            .iter()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'_' || *b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn normalises_table() {
        let hundred = "a".repeat(100);
        let cases: &[(&str, &str)] = &[
            ("main", "main"),
            ("", "main"),
            ("   ", "main"),
            ("---", "main"),
            ("___", "main"),
            ("_x", "x"),
            ("-_x", "x"),
            ("x_", "x"),
            ("x-_-", "x"),
            ("  Ops Team!! ", "ops-team"),
            ("Research", "research"),
            ("a--b", "a-b"),
            ("a__b", "a__b"),
            ("a_-_b", "a_-_b"),
            ("a b\tc", "a-b-c"),
            ("agent:ops", "agent-ops"),
            ("Ünïcödé", "n-c-d"),
            ("日本語", "main"),
            ("日本-ops", "ops"),
            ("ops-日本", "ops"),
            ("İx", "i-x"),
            ("\u{212A}elvin", "kelvin"), // KELVIN SIGN lower-cases to ASCII 'k'
            ("0day", "0day"),
            (&hundred, &hundred[..64]),
        ];
        for (raw, want) in cases {
            assert_eq!(normalize_agent_id(raw), *want, "input {raw:?}");
        }
    }

    #[test]
    fn truncation_restrips_trailing_separators() {
        let raw = format!("{}-{}", "a".repeat(63), "b".repeat(10));
        assert_eq!(normalize_agent_id(&raw), "a".repeat(63));
        let raw = format!("{}__{}", "a".repeat(62), "b".repeat(10));
        assert_eq!(normalize_agent_id(&raw), "a".repeat(62));
    }

    #[test]
    fn outputs_are_valid_and_stable() {
        for raw in [
            "  Ops Team!! ",
            "---",
            "_x",
            "Ünïcödé",
            "a--b",
            &"z-".repeat(80),
        ] {
            let once = normalize_agent_id(raw);
            assert!(is_valid_agent_id(&once), "{once:?} from {raw:?}");
            assert_eq!(normalize_agent_id(&once), once);
        }
    }
}
