//! Property tests of the key grammar: idempotence, totality, agent-id shape.

use proptest::prelude::*;

use super::agent_id::is_valid_agent_id;
use super::*;

/// Words that steer inputs into the interesting branches of the grammar.
const WORDS: &[&str] = &[
    "main",
    "global",
    "unknown",
    "agent",
    "cron",
    "hook",
    "node",
    "node-pi",
    "subagent",
    "dm",
    "direct",
    "group",
    "channel",
    "thread",
    "topic",
    "discord",
    "Telegram",
    "work",
    "MAIN",
    "x",
    "0b7f0d0e-8f5a-4a57-9a65-1f1c4bb3f0d2",
    "",
];

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(WORDS).prop_map(str::to_owned),
        3 => "[a-zA-Z0-9_.+@!-]{1,8}",
        1 => "\\PC{0,6}",
        1 => "[ \\t\\u{7}\\u{200b}]",
    ]
}

fn segments() -> impl Strategy<Value = String> {
    prop::collection::vec(segment(), 1..6).prop_map(|s| s.join(":"))
}

fn agent_id_input() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(&["main", "ops", "Ops Team", "---", "_x", "", "Ünï"][..])
            .prop_map(str::to_owned),
        "[a-zA-Z0-9_ !-]{0,12}",
        "\\PC{0,70}",
    ]
}

/// Arbitrary strings mixed with structured full, legacy and alias forms.
fn key_input() -> impl Strategy<Value = String> {
    prop_oneof![
        2 => "\\PC{0,40}",
        1 => any::<String>(),
        4 => (agent_id_input(), segments(), prop::sample::select(&["agent:", "AGENT:", "Agent:"][..]))
            .prop_map(|(id, rest, prefix)| format!("{prefix}{id}:{rest}")),
        4 => segments(),
        1 => prop::sample::select(WORDS).prop_map(|w| format!("  {w} ")),
        1 => "x{500,530}",
    ]
}

fn context_parts() -> impl Strategy<Value = (String, String, Scope)> {
    (
        agent_id_input(),
        prop_oneof![
            4 => prop::sample::select(&["main", "work", "Main", "dm:me", "", "global", "a::b", "cron:x"][..])
                .prop_map(str::to_owned),
            1 => segments(),
        ],
        prop::sample::select(&[Scope::PerSender, Scope::Global][..]),
    )
}

fn has_valid_agent(key: &SessionKey) -> bool {
    key.is_global() || key.agent_id().is_some_and(is_valid_agent_id)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// (1) Canonicalisation is idempotent for a fixed context.
    #[test]
    fn canonicalize_is_idempotent(input in key_input(), (agent, main_key, scope) in context_parts()) {
        let ctx = KeyContext { agent_id: &agent, main_key: &main_key, scope };
        if let Ok(key) = canonicalize(&input, &ctx) {
            prop_assert_eq!(canonicalize(key.as_str(), &ctx), Ok(key.clone()));
            // The display form is accepted too and names the same session.
            prop_assert_eq!(canonicalize(key.display(), &ctx), Ok(key));
        }
    }

    /// (2) Total: a key with a valid agent id (or `global`), or an error naming the accepted forms.
    #[test]
    fn canonicalize_is_total(input in key_input(), (agent, main_key, scope) in context_parts()) {
        let ctx = KeyContext { agent_id: &agent, main_key: &main_key, scope };
        match canonicalize(&input, &ctx) {
            Ok(key) => {
                prop_assert!(has_valid_agent(&key), "{:?}", key);
                prop_assert!(key.as_str().len() <= MAX_KEY_BYTES);
                prop_assert_eq!(key.as_str(), key.as_str().to_lowercase());
                prop_assert!(scope == Scope::Global || !key.is_global());
            }
            Err(err) => prop_assert!(err.to_string().contains("accepted:"), "{}", err),
        }
    }

    /// (3) Agent ids always come out valid, and normalising twice changes nothing.
    #[test]
    fn normalize_agent_id_is_valid_and_idempotent(raw in prop_oneof![agent_id_input(), any::<String>()]) {
        let once = normalize_agent_id(&raw);
        prop_assert!(is_valid_agent_id(&once), "{:?} from {:?}", once, raw);
        prop_assert_eq!(normalize_agent_id(&once), once);
    }

    /// Built keys are canonical and read back what they were built from.
    #[test]
    fn group_key_round_trips(
        agent in agent_id_input(),
        channel in "[a-zA-Z][a-zA-Z0-9_-]{0,10}",
        chat_type in prop::sample::select(&[ChatType::Group, ChatType::Channel][..]),
        chat_id in "[a-zA-Z0-9@.+_-]{1,12}",
        thread in proptest::option::of("[a-zA-Z0-9.]{1,6}"),
        noise in "\\PC{0,12}",
    ) {
        let ctx = KeyContext::default();
        let key = group_key(&agent, &channel, chat_type, &chat_id, thread.as_deref());
        prop_assert_eq!(canonicalize(key.as_str(), &ctx), Ok(key.clone()));
        prop_assert_eq!(key.kind("main"), SessionKind::Group);
        prop_assert_eq!(key.chat_type("main"), Some(chat_type));
        let channel_lc = channel.to_lowercase();
        let prefixed = format!("x-{channel_lc}");
        prop_assert!(
            key.channel() == Some(channel_lc.as_str()) || key.channel() == Some(prefixed.as_str()),
            "{:?}", key
        );
        prop_assert_eq!(key.chat_id().map(str::to_owned), Some(chat_id.to_lowercase()));
        prop_assert_eq!(key.thread_id().map(str::to_owned), thread.map(|t| t.to_lowercase()));
        // Whatever the parts, the result is canonical.
        let wild = group_key(&noise, &noise, chat_type, &noise, Some(&noise));
        prop_assert_eq!(canonicalize(wild.as_str(), &ctx), Ok(wild));
    }

    /// Accessors never panic, whatever the store hands back.
    #[test]
    fn accessors_are_total(raw in key_input()) {
        let key = SessionKey::from_canonical(raw);
        let _ = (key.kind("main"), key.channel(), key.chat_type("main"), key.chat_id(),
                 key.thread_id(), key.display(), key.rest(), key.agent_id(), key.is_subagent());
    }
}

/// The strategy must reach the success path often, or property (1) says little.
#[test]
fn key_input_strategy_mostly_reaches_the_success_path() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    let mut runner = TestRunner::deterministic();
    let ctx = KeyContext::default();
    let (mut ok, total) = (0, 512);
    for _ in 0..total {
        let input = key_input().new_tree(&mut runner).unwrap().current();
        ok += usize::from(canonicalize(&input, &ctx).is_ok());
    }
    assert!(ok * 3 >= total, "only {ok} of {total} inputs canonicalised");
}
