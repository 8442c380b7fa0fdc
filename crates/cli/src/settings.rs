//! Where things are: the state dir, the config file, the gateway URL and token; and the
//! `config check|show` commands.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;
use switchboard_core::config::{self, LoadedConfig};

#[derive(Args, Clone)]
pub struct GlobalArgs {
    /// State directory (database, transcripts, token).
    #[arg(long, global = true, env = "SWITCHBOARD_HOME")]
    pub state_dir: Option<PathBuf>,
    /// Config file (default: <state dir>/config.json5 when it exists).
    #[arg(long, global = true, env = "SWITCHBOARD_CONFIG")]
    pub config: Option<PathBuf>,
    /// Gateway URL for client commands (default: the local gateway).
    #[arg(long, global = true, env = "SWITCHBOARD_URL")]
    pub url: Option<String>,
    /// Gateway token for client commands (default: the configured or stored token).
    #[arg(long, global = true, env = "SWITCHBOARD_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Print JSON instead of tables.
    #[arg(long, global = true)]
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

    /// URL and token of the gateway that client commands talk to.
    pub fn target(&self) -> Result<(String, Option<String>)> {
        let loaded = self
            .load_config()
            .context("reading the config to find the gateway")?;
        let gateway = &loaded.config.gateway;
        let url = self
            .url
            .clone()
            .unwrap_or_else(|| format!("ws://127.0.0.1:{}", gateway.port));
        let token = self
            .token
            .clone()
            .or_else(|| gateway.auth.token.clone())
            .or_else(|| switchboard_server::auth::stored_token(&self.home()));
        Ok((url, token))
    }
}

pub fn config_check(global: &GlobalArgs) -> Result<ExitCode> {
    let (path, _) = global.config_path();
    let loaded = match global.load_config() {
        Ok(loaded) => loaded,
        Err(e) => {
            eprintln!("{e}");
            return Ok(ExitCode::FAILURE);
        }
    };
    if !path.exists() {
        outln!(
            "no config file at {}: the embedded defaults apply",
            path.display()
        );
        return Ok(ExitCode::SUCCESS);
    }
    if loaded.unknown_paths.is_empty() {
        outln!("{}: ok", path.display());
        return Ok(ExitCode::SUCCESS);
    }
    for unknown in &loaded.unknown_paths {
        eprintln!(
            "config error at {unknown}: unknown setting (see docs/configuration.md for the known ones)"
        );
    }
    Ok(ExitCode::FAILURE)
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
