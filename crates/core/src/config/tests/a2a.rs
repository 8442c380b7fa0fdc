//! `agents.list[].a2a.remotes`: names, URLs, tokens from the environment, unknown keys,
//! redaction.

use pretty_assertions::assert_eq;

use super::error_text;
use crate::config::*;

#[test]
fn a_remote_loads_with_its_token_from_the_environment_and_is_redacted() {
    let text = r#"{ agents: { list: [ { id: "main", a2a: { remotes: {
        peer: { url: "https://peer.example/a2a/", token: "${PEER_TOKEN}" },
        open: { url: "http://127.0.0.1:9000", colour: "red" },
    } } } ] } }"#;
    let env = |name: &str| (name == "PEER_TOKEN").then(|| "s3cret".to_string());
    let loaded = load_str(text, "test.json5", &env).unwrap_or_else(|e| panic!("{e}"));
    let config = loaded.config;
    assert_eq!(
        config.a2a_remote("main", "peer"),
        Some(&A2aRemote {
            url: "https://peer.example/a2a".into(),
            token: Some("s3cret".into()),
        })
    );
    assert_eq!(config.a2a_remote_names("main"), ["open", "peer"]);
    assert_eq!(config.a2a_remote("other", "peer"), None);
    assert_eq!(
        loaded.unknown_paths,
        ["agents.list[0].a2a.remotes.open.colour"]
    );
    let shown = config.redacted();
    assert_eq!(
        shown.agents.list[0].a2a.remotes["peer"].token.as_deref(),
        Some(REDACTED)
    );
    assert_eq!(shown.agents.list[0].a2a.remotes["open"].token, None);
}

#[test]
fn a_bad_name_url_or_token_is_an_error_that_says_what_is_accepted() {
    assert_eq!(
        error_text(
            r#"{ agents: { list: [ { id: "main", a2a: { remotes: { "Peer X": { url: "https://p" } } } } ] } }"#
        ),
        r#"line 1: config error at agents.list[0].a2a.remotes["Peer X"]: "Peer X" is not allowed; expected a remote name matching ^[a-z0-9_-]{1,64}$ (it is part of the session key a2a:<name>)"#
    );
    assert_eq!(
        error_text(
            r#"{ agents: { list: [ { id: "main", a2a: { remotes: { peer: { url: "ftp://p" } } } } ] } }"#
        ),
        r#"line 1: config error at agents.list[0].a2a.remotes.peer.url: "ftp://p" is not allowed; expected an http:// or https:// URL"#
    );
    assert_eq!(
        error_text(
            r#"{ agents: { list: [ { id: "main", a2a: { remotes: { peer: { token: "t" } } } } ] } }"#
        ),
        r#"line 1: config error at agents.list[0].a2a.remotes.peer.url: "" is not allowed; expected an http:// or https:// URL"#
    );
    assert_eq!(
        error_text(
            r#"{ agents: { list: [ { id: "main", a2a: { remotes: { peer: { url: "http://p", token: " " } } } } ] } }"#
        ),
        r#"line 1: config error at agents.list[0].a2a.remotes.peer.token: "" is not allowed; expected a bearer token, or no token at all"#
    );
}
