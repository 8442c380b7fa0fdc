//! Session keys and agent ids (`switchboard_core::keys`): canonicalisation is total (a key, or
//! an error that names the accepted forms), idempotent (canonicalising a canonical key gives it
//! back), and its keys keep the canonical shape; agent-id and main-key normalisation are
//! idempotent too.
#![no_main]

use libfuzzer_sys::fuzz_target;
use switchboard_core::keys::{
    ACCEPTED_FORMS, KeyContext, MAX_KEY_BYTES, Scope, canonicalize, normalize_agent_id,
    normalize_main_key,
};
use switchboard_fuzz::{pick, says};

/// The callers tried: the defaults, another agent and main key, and the global scope.
const CONTEXTS: &[(&str, &str, Scope)] = &[
    ("main", "main", Scope::PerSender),
    ("ops", "work", Scope::PerSender),
    ("main", "main", Scope::Global),
    ("ops", "work", Scope::Global),
];

fuzz_target!(|data: &[u8]| {
    let (at, rest) = pick(data, CONTEXTS.len());
    let Ok(input) = std::str::from_utf8(rest) else {
        return; // keys arrive as JSON strings: UTF-8
    };
    let (agent_id, main_key, scope) = CONTEXTS[at];
    let ctx = KeyContext {
        agent_id,
        main_key,
        scope,
    };
    match canonicalize(input, &ctx) {
        Ok(key) => {
            let key_text = key.as_str();
            assert!(key_text.len() <= MAX_KEY_BYTES, "{key_text}");
            assert_eq!(
                key_text,
                key_text.to_lowercase(),
                "a canonical key is lower-case"
            );
            assert!(
                key_text == "global" || key_text.starts_with("agent:"),
                "{key_text}"
            );
            assert!(
                !key_text.split(':').any(str::is_empty),
                "an empty segment: {key_text}"
            );
            assert_eq!(
                canonicalize(key_text, &ctx),
                Ok(key.clone()),
                "not idempotent"
            );
        }
        Err(e) => says(&e.to_string(), &[ACCEPTED_FORMS]),
    }
    let id = normalize_agent_id(input);
    assert_eq!(
        normalize_agent_id(&id),
        id,
        "agent id normalisation is not idempotent"
    );
    if let Ok(main) = normalize_main_key(input) {
        assert_eq!(
            normalize_main_key(&main),
            Ok(main.clone()),
            "main key: not idempotent"
        );
    }
});
