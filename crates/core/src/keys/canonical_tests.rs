//! Table tests for canonicalisation (the properties are in `proptests.rs`).

use super::*;
use crate::keys::SessionKind;
use pretty_assertions::assert_eq;

const PER_SENDER: KeyContext<'static> = KeyContext {
    agent_id: "main",
    main_key: "main",
    scope: Scope::PerSender,
};
const GLOBAL: KeyContext<'static> = KeyContext {
    agent_id: "main",
    main_key: "main",
    scope: Scope::Global,
};

fn ok(input: &str, ctx: &KeyContext) -> String {
    match canonicalize(input, ctx) {
        Ok(key) => key.into_string(),
        Err(err) => panic!("{input:?} should canonicalise: {err}"),
    }
}

fn err(input: &str, ctx: &KeyContext) -> KeyError {
    match canonicalize(input, ctx) {
        Ok(key) => panic!("{input:?} should fail, got {key}"),
        Err(err) => err,
    }
}

fn invalid_reason(input: &str, ctx: &KeyContext) -> String {
    match err(input, ctx) {
        KeyError::Invalid { reason, .. } => reason,
        other => panic!("{input:?}: expected Invalid, got {other:?}"),
    }
}

#[test]
fn full_keys_and_legacy_keys() {
    let ops = KeyContext {
        agent_id: "ops",
        ..PER_SENDER
    };
    let cases: &[(&str, &KeyContext, &str)] = &[
        ("agent:main:main", &PER_SENDER, "agent:main:main"),
        ("  agent:main:main\n", &PER_SENDER, "agent:main:main"),
        (
            "AGENT:Ops:Discord:Group:Dev",
            &PER_SENDER,
            "agent:ops:discord:group:dev",
        ),
        ("agent:OPS!:x", &PER_SENDER, "agent:ops:x"),
        ("agent:---:x", &PER_SENDER, "agent:main:x"),
        ("agent:_x:cron:1", &PER_SENDER, "agent:x:cron:1"),
        ("agent:a--b:main", &PER_SENDER, "agent:a-b:main"),
        (
            "agent:main:agent:ops:main",
            &PER_SENDER,
            "agent:main:agent:ops:main",
        ),
        // legacy keys take the caller's prefix
        ("cron:job-1", &PER_SENDER, "agent:main:cron:job-1"),
        ("cron:job-1", &ops, "agent:ops:cron:job-1"),
        (
            "discord:group:dev",
            &PER_SENDER,
            "agent:main:discord:group:dev",
        ),
        ("hook:abc", &ops, "agent:ops:hook:abc"),
        ("node-pi", &PER_SENDER, "agent:main:node-pi"),
        ("subagent:1", &PER_SENDER, "agent:main:subagent:1"),
        ("my-notes", &PER_SENDER, "agent:main:my-notes"),
        ("agent", &PER_SENDER, "agent:main:agent"),
        ("agents:x", &PER_SENDER, "agent:main:agents:x"),
        // legacy dm marker
        ("dm:+1555", &PER_SENDER, "agent:main:direct:+1555"),
        (
            "telegram:dm:42",
            &PER_SENDER,
            "agent:main:telegram:direct:42",
        ),
        (
            "whatsapp:biz:dm:+1",
            &PER_SENDER,
            "agent:main:whatsapp:biz:direct:+1",
        ),
        ("agent:ops:dm:x", &PER_SENDER, "agent:ops:direct:x"),
        ("dm:dm:x", &PER_SENDER, "agent:main:direct:dm:x"),
        (
            "discord:group:dm:x",
            &PER_SENDER,
            "agent:main:discord:group:dm:x",
        ),
        ("cron:dm:x", &PER_SENDER, "agent:main:cron:dm:x"),
        ("dm", &PER_SENDER, "agent:main:dm"),
        // a sessionId is not resolved here
        (
            "0B7F0D0E-8F5A-4A57-9A65-1F1C4BB3F0D2",
            &PER_SENDER,
            "agent:main:0b7f0d0e-8f5a-4a57-9a65-1f1c4bb3f0d2",
        ),
    ];
    for (input, ctx, want) in cases {
        assert_eq!(ok(input, ctx), *want, "input {input:?}");
        assert_eq!(ok(want, ctx), *want, "idempotence of {want:?}");
    }
}

#[test]
fn main_global_and_unknown_under_both_scopes() {
    let work = KeyContext {
        agent_id: "Ops",
        main_key: "work",
        scope: Scope::PerSender,
    };
    let work_global = KeyContext {
        scope: Scope::Global,
        ..work
    };
    assert_eq!(ok("main", &PER_SENDER), "agent:main:main");
    assert_eq!(ok(" MAIN ", &PER_SENDER), "agent:main:main");
    assert_eq!(ok("main", &work), "agent:ops:work");
    assert_eq!(ok("work", &work), "agent:ops:work");
    assert_eq!(ok("agent:main:main", &work), "agent:main:main");
    assert_eq!(ok("main", &GLOBAL), "global");
    assert_eq!(ok("global", &GLOBAL), "global");
    assert_eq!(ok("GLOBAL", &GLOBAL), "global");
    assert_eq!(ok("agent:main:main", &GLOBAL), "global");
    assert_eq!(ok("agent:ops:main", &GLOBAL), "global");
    assert_eq!(ok("main", &work_global), "global");
    assert_eq!(ok("agent:x:work", &work_global), "global");
    assert_eq!(ok("agent:x:main", &work_global), "agent:x:main");
    assert_eq!(ok("cron:1", &GLOBAL), "agent:main:cron:1");

    let reserved = |input: &str, ctx: &KeyContext| {
        assert!(
            matches!(err(input, ctx), KeyError::Reserved { .. }),
            "{input:?} under {ctx:?}"
        );
    };
    reserved("global", &PER_SENDER);
    reserved("unknown", &PER_SENDER);
    reserved("unknown", &GLOBAL);
    reserved("Unknown", &GLOBAL);
    reserved("agent:main:global", &PER_SENDER);
    reserved("agent:main:global", &GLOBAL);
    reserved("agent:ops:unknown", &GLOBAL);

    let text = err("global", &PER_SENDER).to_string();
    assert!(
        text.starts_with("session key \"global\" is reserved"),
        "{text}"
    );
    assert!(text.contains("accepted:"), "{text}");
}

#[test]
fn malformed_inputs_say_what_is_wrong() {
    assert_eq!(err("", &PER_SENDER), KeyError::Empty);
    assert_eq!(err(" \t\n", &PER_SENDER), KeyError::Empty);
    let cases = [
        ("agent:", "missing agent id and rest after \"agent:\""),
        ("agent:x", "missing rest after \"agent:<agentId>:\""),
        ("agent:x:", "missing rest after \"agent:<agentId>:\""),
        (
            "agent::x",
            "empty segment: missing agent id after \"agent:\"",
        ),
        (
            "agent:x:a::b",
            "empty segment (\"::\", or a leading or trailing ':')",
        ),
        (":x", "empty segment (\"::\", or a leading or trailing ':')"),
        (
            "cron:",
            "empty segment (\"::\", or a leading or trailing ':')",
        ),
        ("a b", "contains whitespace (U+0020)"),
        ("agent:Ops Team:main", "contains whitespace (U+0020)"),
        ("a\u{7}b", "contains a control character (U+0007)"),
        ("a\u{a0}b", "contains whitespace (U+00A0)"),
        (
            "ma\u{200B}in",
            "contains an invisible formatting character (U+200B)",
        ),
    ];
    for (input, want) in cases {
        assert_eq!(invalid_reason(input, &PER_SENDER), want, "input {input:?}");
    }
    assert_eq!(
        err("agent::x", &PER_SENDER).to_string(),
        format!(
            "invalid session key \"agent::x\": empty segment: missing agent id after \"agent:\"; {}",
            crate::keys::ACCEPTED_FORMS
        )
    );
}

#[test]
fn length_limit_applies_to_input_and_result() {
    let at_limit = format!("agent:main:{}", "x".repeat(MAX_KEY_BYTES - 11));
    assert_eq!(ok(&at_limit, &PER_SENDER), at_limit);
    let over = format!("{at_limit}x");
    assert!(matches!(err(&over, &PER_SENDER), KeyError::TooLong { .. }));
    // A legacy key under the limit whose prefixed form is over it.
    let legacy = "y".repeat(MAX_KEY_BYTES - 5);
    assert!(matches!(
        err(&legacy, &PER_SENDER),
        KeyError::TooLong { .. }
    ));
    let text = err(&legacy, &PER_SENDER).to_string();
    assert!(
        text.contains("at most 512 bytes") && text.contains("accepted:"),
        "{text}"
    );
}

#[test]
fn main_session_key_normalises_and_falls_back() {
    let ctx = |main_key, scope| KeyContext {
        agent_id: "ignored",
        main_key,
        scope,
    };
    let cases = [
        ("main", "agent:research:main"),
        ("Work", "agent:research:work"),
        (" chat:home ", "agent:research:chat:home"),
        ("dm:me", "agent:research:direct:me"),
        ("", "agent:research:main"),
        ("a::b", "agent:research:main"),
        ("global", "agent:research:main"),
        ("has space", "agent:research:main"),
    ];
    for (main_key, want) in cases {
        let key = main_session_key(" Research ", &ctx(main_key, Scope::PerSender));
        assert_eq!(key.as_str(), want, "main key {main_key:?}");
        assert_eq!(
            key.kind(main_key),
            SessionKind::Main,
            "main key {main_key:?}"
        );
    }
    assert!(main_session_key("x", &ctx("main", Scope::Global)).is_global());
}

#[test]
fn normalize_main_key_rejects_bad_values() {
    assert_eq!(normalize_main_key(" Home ").as_deref(), Ok("home"));
    assert_eq!(normalize_main_key("dm:x").as_deref(), Ok("direct:x"));
    assert_eq!(normalize_main_key(""), Err(KeyError::Empty));
    assert!(matches!(
        normalize_main_key("unknown"),
        Err(KeyError::Reserved { .. })
    ));
    assert!(matches!(
        normalize_main_key("a:"),
        Err(KeyError::Invalid { .. })
    ));
    assert!(matches!(
        normalize_main_key(&"m".repeat(300)),
        Err(KeyError::TooLong { .. })
    ));
}

#[test]
fn session_id_detection() {
    let cases = [
        ("0b7f0d0e-8f5a-4a57-9a65-1f1c4bb3f0d2", true),
        ("0B7F0D0E-8F5A-4A57-9A65-1F1C4BB3F0D2", true),
        (" 0b7f0d0e-8f5a-4a57-9a65-1f1c4bb3f0d2 ", true),
        ("0b7f0d0e8f5a4a579a651f1c4bb3f0d2", false),
        ("{0b7f0d0e-8f5a-4a57-9a65-1f1c4bb3f0d2}", false),
        ("0b7f0d0e-8f5a-4a57-9a65-1f1c4bb3f0dg", false),
        ("0b7f0d0e-8f5a-4a57-9a651-f1c4bb3f0d2", false),
        ("agent:main:main", false),
        ("", false),
    ];
    for (input, want) in cases {
        assert_eq!(looks_like_session_id(input), want, "input {input:?}");
    }
}

#[test]
fn group_keys_are_built_canonical() {
    use ChatType::{Channel, Direct, Group};
    // (agent, channel, chat type, chat id, thread, expected key)
    type Row = (
        &'static str,
        &'static str,
        ChatType,
        &'static str,
        Option<&'static str>,
        &'static str,
    );
    let cases: &[Row] = &[
        (
            "main",
            "Discord",
            Group,
            "Dev",
            None,
            "agent:main:discord:group:dev",
        ),
        (
            "Ops Team",
            "slack",
            Channel,
            "C0123",
            Some("171.5"),
            "agent:ops-team:slack:channel:c0123:thread:171.5",
        ),
        (
            "main",
            "telegram",
            Group,
            "-100123",
            Some(""),
            "agent:main:telegram:group:-100123",
        ),
        (
            "main",
            "matrix",
            Channel,
            "!Room:Example.org",
            None,
            "agent:main:matrix:channel:!room:example.org",
        ),
        (
            "main",
            "whatsapp",
            Direct,
            "+1555",
            None,
            "agent:main:whatsapp:direct:+1555",
        ),
        (
            "main",
            " ",
            Group,
            " ",
            Some(" "),
            "agent:main:unknown:group:unknown",
        ),
        (
            "main",
            "a:b",
            Group,
            "x::y:",
            Some("t:1"),
            "agent:main:a-b:group:x:y:thread:t-1",
        ),
        (
            "main",
            "My Chat",
            Group,
            "id 1",
            None,
            "agent:main:my-chat:group:id-1",
        ),
        (
            "main",
            "cron",
            Group,
            "1",
            None,
            "agent:main:x-cron:group:1",
        ),
        ("main", "dm", Group, "1", None, "agent:main:x-dm:group:1"),
        // An id cannot pose as another chat's thread or topic, and escaped ids stay apart.
        (
            "main",
            "webhook",
            Group,
            "c1:thread:9",
            None,
            "agent:main:webhook:group:c1:thread_:9",
        ),
        (
            "main",
            "webhook",
            Group,
            "c1:Thread_:9",
            Some("2"),
            "agent:main:webhook:group:c1:thread__:9:thread:2",
        ),
        (
            "main",
            "telegram",
            Group,
            "topic:threads",
            None,
            "agent:main:telegram:group:topic_:threads",
        ),
    ];
    for &(agent, channel, chat_type, chat_id, thread, want) in cases {
        let key = group_key(agent, channel, chat_type, chat_id, thread);
        assert_eq!(key.as_str(), want);
        assert_eq!(ok(want, &PER_SENDER), want, "built keys are canonical");
    }
    let key = group_key("main", "Slack", Channel, "C1", Some("T9"));
    assert_eq!(
        (
            key.kind("main"),
            key.channel(),
            key.chat_type("main"),
            key.chat_id(),
            key.thread_id()
        ),
        (
            SessionKind::Group,
            Some("slack"),
            Some(Channel),
            Some("c1"),
            Some("t9")
        )
    );
    let long = group_key(
        "main",
        &"c".repeat(300),
        Group,
        &"i".repeat(900),
        Some(&"t".repeat(900)),
    );
    assert!(long.as_str().len() <= MAX_KEY_BYTES);
    assert_eq!(ok(long.as_str(), &PER_SENDER), long.as_str());
}
