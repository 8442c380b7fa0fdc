//! `store`: SQLite by default, PostgreSQL by config or `SWITCHBOARD_DATABASE_URL`; errors that
//! say what is accepted without repeating a URL that may carry a password.

use pretty_assertions::assert_eq;

use super::{error_text, load};
use crate::config::{StoreKind, load_str};

#[test]
fn sqlite_is_the_default_and_postgres_is_chosen_by_kind_and_url() {
    let loaded = load("{}").unwrap();
    assert_eq!(loaded.config.store.kind, StoreKind::Sqlite);
    let loaded = load(
        r#"{ store: { kind: "postgres", url: "postgres://sb:secret@db:5432/sb", schema: "team_a" } }"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(loaded.config.store.kind, StoreKind::Postgres);
    assert_eq!(loaded.config.store.schema, "team_a");
    let shown = serde_json::to_value(loaded.config.redacted()).unwrap();
    assert_eq!(
        shown["store"]["url"], "[redacted]",
        "the password stays hidden"
    );
}

#[test]
fn the_environment_url_selects_postgres_over_the_file() {
    let env = |name: &str| {
        (name == "SWITCHBOARD_DATABASE_URL").then(|| "postgres://sb@127.0.0.1:5432/sb".to_string())
    };
    let loaded = load_str("{}", "test.json5", &env).unwrap();
    assert_eq!(loaded.config.store.kind, StoreKind::Postgres);
    assert_eq!(
        loaded.config.store.url.as_deref(),
        Some("postgres://sb@127.0.0.1:5432/sb")
    );
}

#[test]
fn a_postgres_store_without_a_usable_url_or_with_a_bad_schema_is_refused() {
    let text = error_text(r#"{ store: { kind: "postgres", schema: "Team-A" } }"#);
    for expected in [
        "store.url: nothing is not allowed; expected a PostgreSQL URL such as postgres://user:password@host:5432/database (or set SWITCHBOARD_DATABASE_URL)",
        "store.schema: \"Team-A\" is not allowed; expected a schema name of 1 to 63 lower-case letters, digits and _, not starting with a digit",
    ] {
        assert!(text.contains(expected), "{text}");
    }
    let text = error_text(r#"{ store: { kind: "postgres", url: "mysql://root:hunter2@db/x" } }"#);
    assert!(
        text.contains("store.url: a value that is not a postgres:// URL is not allowed"),
        "{text}"
    );
    assert!(!text.contains("hunter2"), "{text}");
    let text = error_text(r#"{ store: { kind: "oracle" } }"#);
    assert!(text.contains("store.kind"), "{text}");
    assert!(
        text.contains("sqlite") && text.contains("postgres"),
        "{text}"
    );
}

#[test]
fn the_store_timeout_is_a_minute_by_default_and_refused_outside_a_second_to_an_hour() {
    let loaded = load("{}").unwrap();
    assert_eq!(loaded.config.store.timeout_seconds, 60);
    let loaded = load("{ store: { timeoutSeconds: 5 } }").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(loaded.config.store.timeout().as_secs(), 5);
    for bad in ["0", "3601"] {
        let text = error_text(&format!("{{ store: {{ timeoutSeconds: {bad} }} }}"));
        assert!(
            text.contains(&format!(
                "store.timeoutSeconds: {bad} is not allowed; expected"
            )),
            "{text}"
        );
    }
}
