//! `store`: where sessions, transcripts and runs are kept — the embedded SQLite file in the
//! state dir (the default), or a PostgreSQL database several gateways share
//! (docs/scale-out.md). `SWITCHBOARD_DATABASE_URL` selects PostgreSQL without a config file.

use serde::{Deserialize, Serialize};

use super::error::quote;
use super::validate::Checker;

/// The environment variable that selects PostgreSQL with its URL.
pub const DATABASE_URL_ENV: &str = "SWITCHBOARD_DATABASE_URL";

/// `store.timeoutSeconds` unless set: longer than any stall the store rides out on its own (a
/// database restart, a lost lease taken up by another gateway).
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 60;

/// `store`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StoreConfig {
    pub kind: StoreKind,
    /// PostgreSQL: `postgres://user:password@host:port/database`.
    pub url: Option<String>,
    /// PostgreSQL: the schema the tables are in (created when missing), so several
    /// deployments can share one database.
    pub schema: String,
    /// How long a store call is waited for before its caller is answered `UNAVAILABLE`.
    pub timeout_seconds: u64,
}

impl Default for StoreConfig {
    fn default() -> Self {
        Self {
            kind: StoreKind::Sqlite,
            url: None,
            schema: "public".into(),
            timeout_seconds: DEFAULT_TIMEOUT_SECONDS,
        }
    }
}

/// `store.kind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum StoreKind {
    /// `<state dir>/switchboard.db`, with JSONL transcript mirrors beside it.
    #[default]
    Sqlite,
    /// A PostgreSQL database (`store.url`).
    #[serde(alias = "postgresql")]
    Postgres,
}

impl StoreConfig {
    /// `store.timeoutSeconds`.
    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.timeout_seconds)
    }

    /// `SWITCHBOARD_DATABASE_URL`, when set, selects PostgreSQL at that URL (over the file's
    /// `store`).
    pub fn apply_env(&mut self, env: &dyn Fn(&str) -> Option<String>) {
        if let Some(url) = env(DATABASE_URL_ENV).filter(|u| !u.trim().is_empty()) {
            self.kind = StoreKind::Postgres;
            self.url = Some(url.trim().to_string());
        }
    }
}

const URL_EXPECTED: &str = "a PostgreSQL URL such as postgres://user:password@host:5432/database (or set SWITCHBOARD_DATABASE_URL)";
const SCHEMA_EXPECTED: &str =
    "a schema name of 1 to 63 lower-case letters, digits and _, not starting with a digit";

/// `store.timeoutSeconds`: a second to an hour.
const TIMEOUT_RANGE: std::ops::RangeInclusive<u64> = 1..=3600;

impl Checker<'_> {
    pub(super) fn store(&mut self, store: &StoreConfig) {
        self.range(
            "store.timeoutSeconds",
            store.timeout_seconds,
            &TIMEOUT_RANGE,
        );
        if !is_schema_name(&store.schema) {
            self.invalid("store.schema", quote(&store.schema), SCHEMA_EXPECTED);
        }
        match (store.kind, &store.url) {
            (StoreKind::Postgres, None) => {
                self.invalid("store.url", "nothing", URL_EXPECTED);
            }
            (StoreKind::Postgres, Some(url))
                if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) =>
            {
                // The URL is not repeated: it may carry a password.
                self.invalid(
                    "store.url",
                    "a value that is not a postgres:// URL",
                    URL_EXPECTED,
                );
            }
            _ => {}
        }
    }
}

/// A schema name used in SQL as it is (it cannot be a parameter): plain identifiers only.
fn is_schema_name(name: &str) -> bool {
    let mut chars = name.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_lowercase() || c == '_')
        && name.len() <= 63
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}
