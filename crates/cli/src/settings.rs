//! Where things are: the state dir, the config file, the gateway URL and token; and the
//! `config check|show` commands.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use switchboard_core::config::{self, LoadedConfig};
use switchboard_protocol::ErrorCode;
use switchboard_server::client::{ClientError, GatewayClient};

/// Where a running gateway records the URL it listens on, in its state dir.
const URL_FILE: &str = "gateway-url";

#[derive(Args, Clone)]
pub struct GlobalArgs {
    /// State directory: database, transcripts, token, and the URL a running gateway recorded
    /// (default: ~/.switchboard).
    #[arg(long, global = true, env = "SWITCHBOARD_HOME", value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Config file (default: <state dir>/config.json5 when it exists).
    #[arg(long, global = true, env = "SWITCHBOARD_CONFIG", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Gateway URL (ws://, wss://, http:// or https://; default: the URL the gateway of the
    /// state dir recorded, else ws://127.0.0.1:<gateway.port>).
    #[arg(
        long,
        global = true,
        env = "SWITCHBOARD_URL",
        help_heading = "Client options"
    )]
    pub url: Option<String>,
    /// Gateway token (default: gateway.auth.token, else the token stored in the state dir).
    #[arg(
        long,
        global = true,
        env = "SWITCHBOARD_TOKEN",
        hide_env_values = true,
        help_heading = "Client options"
    )]
    pub token: Option<String>,
    /// Print JSON instead of tables.
    #[arg(long, global = true, help_heading = "Client options")]
    pub json: bool,
}

impl GlobalArgs {
    pub fn home(&self) -> PathBuf {
        if let Some(dir) = &self.state_dir {
            return dir.clone();
        }
        let base = std::env::var_os("HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("."));
        base.join(".switchboard")
    }

    /// The config file to read, and whether the user named it (then it must exist).
    fn config_path(&self) -> (PathBuf, bool) {
        match &self.config {
            Some(path) => (path.clone(), true),
            None => (self.home().join("config.json5"), false),
        }
    }

    /// The configuration: the file when there is one, else the embedded defaults.
    pub fn load_config(&self) -> Result<LoadedConfig> {
        let (path, named) = self.config_path();
        if named && !path.exists() {
            anyhow::bail!("config file {} does not exist", path.display());
        }
        config::load_file_or_default(&path, &config::process_env)
            .map_err(|e| anyhow::anyhow!("{e}"))
    }

    /// `logging.format` of the config file, read before anything is logged. A file that does
    /// not load gives the default: the full load that follows reports what is wrong with it.
    pub fn log_format(&self) -> config::LogFormat {
        let (path, _) = self.config_path();
        config::load_section(&path, &config::process_env, "logging")
            .map(|loaded| loaded.config.logging.format)
            .unwrap_or_default()
    }

    /// `observability.otlp` of the config file, read before anything is logged, as
    /// [`Self::log_format`] is: a file that does not load gives no traces, and the full load
    /// that follows says why.
    pub fn otlp(&self) -> config::OtlpConfig {
        let (path, _) = self.config_path();
        config::load_section(&path, &config::process_env, "observability")
            .map(|loaded| loaded.config.observability.otlp)
            .unwrap_or_default()
    }

    /// URL and token of the gateway that client commands talk to.
    pub fn target(&self) -> Result<(String, Option<String>)> {
        let (path, named) = self.config_path();
        if named && !path.exists() {
            anyhow::bail!("config file {} does not exist", path.display());
        }
        // Only the gateway section: a client needs no channel or provider secret.
        let loaded = config::load_gateway_section(&path, &config::process_env)
            .map_err(|e| anyhow::anyhow!("{e}"))
            .context("reading the config to find the gateway")?;
        let gateway = &loaded.config.gateway;
        let recorded = std::fs::read_to_string(self.home().join(URL_FILE)).ok();
        let url = match (&self.url, recorded) {
            (Some(url), _) => websocket_url(url)?,
            (None, Some(recorded)) if !recorded.trim().is_empty() => recorded.trim().to_string(),
            (None, _) => format!("ws://127.0.0.1:{}", gateway.port),
        };
        let token = self
            .token
            .clone()
            .or_else(|| gateway.auth.token.clone())
            .or_else(|| switchboard_server::auth::stored_token(&self.home()));
        Ok((url, token))
    }
}

/// A URL given for the gateway as a WebSocket URL: `http(s)://` becomes `ws(s)://` (the same
/// port serves both); anything else is explained.
fn websocket_url(url: &str) -> Result<String> {
    let url = url.trim();
    for (from, to) in [("http://", "ws://"), ("https://", "wss://")] {
        if let Some(rest) = url.strip_prefix(from) {
            return Ok(format!("{to}{rest}"));
        }
    }
    if url.starts_with("ws://") || url.starts_with("wss://") {
        return Ok(url.to_string());
    }
    anyhow::bail!(
        "--url {url:?}: expected a gateway URL such as ws://127.0.0.1:18790 (ws://, wss://, \
         http:// or https://)"
    )
}

/// Records where the gateway of `home` listens, for the client commands of the same state dir.
/// Written whole, then renamed into place: a client never reads half of it.
pub fn record_url(home: &std::path::Path, url: &str) -> Result<()> {
    let partial = home.join(format!("{URL_FILE}.partial"));
    std::fs::write(&partial, format!("{url}\n"))
        .and_then(|()| std::fs::rename(&partial, home.join(URL_FILE)))
        .with_context(|| format!("recording the gateway URL in {}", home.display()))
}

/// Forgets the recorded URL (a stopped gateway); a file left by a killed one is harmless: the
/// connection is refused and the client says so.
pub fn forget_url(home: &std::path::Path) {
    let _ = std::fs::remove_file(home.join(URL_FILE));
}

/// Connects to the gateway client commands talk to. An error says what happened: nothing
/// listening (is it running?), a refused token (where the token is), or the connection's own
/// error.
pub async fn connect(global: &GlobalArgs) -> Result<GatewayClient> {
    let (url, token) = global.target()?;
    GatewayClient::connect(&url, token.as_deref())
        .await
        .map_err(|e| match &e {
            ClientError::Connect { refused: true, .. } => anyhow::anyhow!(
                "{e}\nis the gateway running? Start it with `switchboard gateway` (with the same \
                 --state-dir), or pass --url"
            ),
            ClientError::Gateway(shape) if shape.code == ErrorCode::Unauthorized => {
                anyhow::anyhow!(
                    "{e}\nthe gateway refused the token: pass --token (or SWITCHBOARD_TOKEN); a \
                     local gateway's token is in {}",
                    global.home().join("gateway-token").display()
                )
            }
            _ => anyhow::anyhow!("{e}").context(format!("connecting to the gateway at {url}")),
        })
}

/// `config check`: every problem of the config file, one a line on stderr; with `--json`, one
/// object on stdout (docs/cli.md): `{ok, file, errors: [{line, path, message}], unknown: [..]}`.
pub fn config_check(global: &GlobalArgs) -> Result<ExitCode> {
    let (path, _) = global.config_path();
    let (problems, unknown_paths) = match global.load_config() {
        Ok(loaded) if path.exists() => {
            let mut problems = loaded.unknown;
            problems.extend(start_problems(&loaded.config));
            (problems, loaded.unknown_paths)
        }
        Ok(_) => (Vec::new(), Vec::new()),
        Err(e) => (
            e.to_string().lines().map(str::to_string).collect(),
            Vec::new(),
        ),
    };
    let ok = problems.is_empty();
    if global.json {
        let report = serde_json::json!({
            "ok": ok,
            "file": path.exists().then(|| path.display().to_string()),
            "errors": problems.iter().map(|p| problem_json(p)).collect::<Vec<_>>(),
            "unknown": unknown_paths,
        });
        outln!("{}", serde_json::to_string_pretty(&report)?);
    } else if !path.exists() && ok {
        outln!(
            "no config file at {}: the embedded defaults apply",
            path.display()
        );
    } else if ok {
        outln!("{}: ok", path.display());
    } else {
        for problem in &problems {
            eprintln!("{problem}");
        }
        eprintln!("(docs/configuration.md lists every setting)");
    }
    Ok(if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// What the gateway would refuse at start beyond the config's own checks: the store's URL
/// as the store reads it (`sslmode=maybe`).
fn start_problems(config: &switchboard_core::config::Config) -> Vec<String> {
    let store = &config.store;
    match (&store.kind, &store.url) {
        (switchboard_core::config::StoreKind::Postgres, Some(url)) => {
            switchboard_core::store::postgres::check_url(url)
                .err()
                .map(|e| format!("config error at store.url: {e}"))
                .into_iter()
                .collect()
        }
        _ => Vec::new(),
    }
}

/// One problem line (`line 3: config error at agents.defaults.timeoutSeconds: 0 is not
/// allowed…`) as `{line, path, message}`; the parts a line does not have are null.
fn problem_json(problem: &str) -> serde_json::Value {
    let (line, rest) = problem
        .strip_prefix("line ")
        .and_then(|rest| rest.split_once(": "))
        .and_then(|(n, rest)| Some((n.parse::<u64>().ok()?, rest)))
        .map_or((None, problem), |(n, rest)| (Some(n), rest));
    let (path, message) = rest
        .strip_prefix("config error at ")
        .and_then(|rest| rest.split_once(": "))
        .map_or((None, rest), |(path, message)| (Some(path), message));
    serde_json::json!({"line": line, "path": path, "message": message})
}

pub fn config_show(global: &GlobalArgs) -> Result<ExitCode> {
    let loaded = global.load_config()?;
    loaded.warn_unknown_paths();
    outln!(
        "{}",
        serde_json::to_string_pretty(&loaded.config.redacted())?
    );
    Ok(ExitCode::SUCCESS)
}
