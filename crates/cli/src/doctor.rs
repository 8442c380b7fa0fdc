//! `switchboard doctor`: checks what a gateway of this state dir and config needs, without a
//! gateway running, and says what to fix: the config, the state dir's owner and permissions,
//! the store, each model provider (one cheap request: the model list) and each chat bot's
//! credentials (`doctor_bots.rs`). A failed check makes the command fail.

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Result;
use switchboard_core::config::{Config, ProviderApi, StoreKind};

use crate::client_cmds::print_json;
use crate::settings::GlobalArgs;

/// One check's outcome.
pub(crate) struct Check {
    /// What was checked: `config`, `state dir`, `store`, `provider openai`, `telegram default`.
    what: String,
    ok: bool,
    /// What was found.
    found: String,
    /// What to do, for a failed check.
    fix: Option<String>,
}

impl Check {
    pub(crate) fn ok(what: impl Into<String>, found: impl Into<String>) -> Self {
        Self {
            what: what.into(),
            ok: true,
            found: found.into(),
            fix: None,
        }
    }

    fn json(&self) -> serde_json::Value {
        serde_json::json!({"what": self.what, "ok": self.ok, "found": self.found, "fix": self.fix})
    }

    pub(crate) fn failed(
        what: impl Into<String>,
        found: impl Into<String>,
        fix: impl Into<String>,
    ) -> Self {
        Self {
            what: what.into(),
            ok: false,
            found: found.into(),
            fix: Some(fix.into()),
        }
    }
}

pub async fn run(global: &GlobalArgs) -> Result<ExitCode> {
    let home = global.home();
    let mut checks = vec![state_dir(&home)];
    match global.load_config() {
        Ok(loaded) => {
            checks.push(Check::ok("config", format!("{}: valid", loaded.origin)));
            checks.push(store(&home, &loaded.config));
            let http = switchboard_core::runtime::providers::client_builder()
                .timeout(Duration::from_secs(5))
                .build()?;
            checks.extend(providers(&http, &loaded.config).await);
            checks.extend(crate::doctor_bots::checks(&http, &loaded.config).await);
        }
        Err(e) => checks.push(Check::failed(
            "config",
            format!("{e:#}"),
            "correct the file (`switchboard config check` lists every problem)",
        )),
    }
    let failed = checks.iter().filter(|c| !c.ok).count();
    if global.json {
        let checks: Vec<serde_json::Value> = checks.iter().map(Check::json).collect();
        print_json(&serde_json::json!({"ok": failed == 0, "checks": checks}))?;
    } else {
        for check in &checks {
            let mark = if check.ok { "ok  " } else { "FAIL" };
            outln!("{mark} {}: {}", check.what, check.found);
            if let Some(fix) = &check.fix {
                outln!("     fix: {fix}");
            }
        }
        match failed {
            0 => outln!("\nNothing to fix."),
            n => outln!(
                "\n{n} {} to fix.",
                if n == 1 { "problem" } else { "problems" }
            ),
        }
    }
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The state dir holds the token and every transcript: its owner alone may read it.
fn state_dir(home: &Path) -> Check {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let what = "state dir";
    let shown = home.display();
    let meta = match std::fs::metadata(home) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Check::ok(
                what,
                format!("{shown} does not exist yet (the gateway makes it, mode 0700)"),
            );
        }
        Err(e) => {
            return Check::failed(
                what,
                format!("{shown}: {e}"),
                "check the path and its parents' permissions",
            );
        }
    };
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Check::failed(
            what,
            format!(
                "{shown} is mode {mode:04o}: other users can read the gateway token and the transcripts"
            ),
            format!("chmod 700 {shown}"),
        );
    }
    // Root may write anywhere; for anyone else, the owner must be who runs the gateway.
    let uid = own_uid();
    if uid != 0 && uid != meta.uid() {
        return Check::failed(
            what,
            format!(
                "{shown} belongs to uid {}, not to this user (uid {uid})",
                meta.uid()
            ),
            format!("chown -R $(id -u) {shown}, or run as its owner"),
        );
    }
    Check::ok(what, format!("{shown}, mode {mode:04o}"))
}

/// This process's user id, from /proc (no unsafe call).
fn own_uid() -> u32 {
    std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m))
        .unwrap_or(0)
}

/// Where the store is, and whether a gateway holds it now.
fn store(home: &Path, config: &Config) -> Check {
    if config.store.kind == StoreKind::Postgres {
        let url = config.store.url.as_deref().unwrap_or_default();
        return Check::ok(
            "store",
            format!(
                "PostgreSQL ({}); the gateway checks it at start",
                redact_url(url)
            ),
        );
    }
    let db = home.join("switchboard.db");
    let held = match crate::state_lock::holder(home) {
        Some(pid) => format!(", in use by a running gateway (pid {pid})"),
        None => String::new(),
    };
    match std::fs::metadata(&db) {
        Ok(meta) => Check::ok(
            "store",
            format!("SQLite {} ({} KB){held}", db.display(), meta.len() / 1024),
        ),
        Err(_) => Check::ok(
            "store",
            format!("SQLite {} is made at the first start", db.display()),
        ),
    }
}

fn redact_url(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => format!("{}://…{}", &url[..scheme], &url[at..]),
        _ => url.to_string(),
    }
}

/// Each configured provider, asked for its model list (no tokens spent).
async fn providers(http: &reqwest::Client, config: &Config) -> Vec<Check> {
    let mut checks = Vec::new();
    for (id, provider) in &config.models.providers {
        let what = format!("provider {id}");
        let base = provider
            .base_url
            .clone()
            .unwrap_or_else(|| provider.api.default_base_url().to_string());
        let url = format!("{}/models", base.trim_end_matches('/'));
        let mut request = http.get(&url);
        if let Some(key) = &provider.api_key {
            request = match provider.api {
                ProviderApi::AnthropicMessages => request
                    .header("x-api-key", key)
                    .header("anthropic-version", "2023-06-01"),
                _ => request.bearer_auth(key),
            };
        }
        for (name, value) in &provider.headers {
            request = request.header(name, value);
        }
        checks.push(match request.send().await {
            Err(e) => Check::failed(
                what,
                format!("{base} is unreachable ({})", reqwest_reason(&e)),
                format!("check models.providers.{id}.baseUrl, and that this machine reaches it"),
            ),
            Ok(answer) if matches!(answer.status().as_u16(), 401 | 403) => Check::failed(
                what,
                format!("{base} refused the key (HTTP {})", answer.status().as_u16()),
                format!("set a valid models.providers.{id}.apiKey"),
            ),
            Ok(answer) => Check::ok(
                what,
                format!(
                    "{base} answers (HTTP {} for the model list)",
                    answer.status().as_u16()
                ),
            ),
        });
    }
    checks
}

/// The error's innermost cause, without the URL (which may hold a token).
pub(crate) fn reqwest_reason(e: &reqwest::Error) -> String {
    let mut source: &dyn std::error::Error = e;
    while let Some(next) = source.source() {
        source = next;
    }
    if e.is_timeout() {
        "no answer within 5 s".into()
    } else {
        source.to_string()
    }
}
