//! The command sandbox (SPEC §6.5, docs/sandbox.md): a sandboxed session's command runs in a
//! Linux sandbox the gateway builds itself, without Docker.
//!
//! The gateway cannot build it in its own process (a process with threads may not enter a new
//! user namespace, and what runs between fork and exec must be async-signal-safe), so it runs
//! its own binary again as a helper with a hidden subcommand ([`COMMAND`]), dispatched in
//! `main` before any thread starts:
//!
//! 1. [`outer`]: gives the workspace to the sandbox user and becomes that user when the gateway
//!    is root, then enters new user, mount, PID, IPC, UTS and (without `network`) network
//!    namespaces, maps itself to root inside, and starts the next stage;
//! 2. [`init`], PID 1 of the new PID namespace: mounts a fresh `/proc` and a private `/tmp`,
//!    sets the limits, applies Landlock (the workspace read-write, `readOnlyPaths` read-only,
//!    nothing else) and the seccomp filter ([`rules`]), runs `sh -c` and reaps; when it ends,
//!    the kernel kills everything left in the namespace.
//!
//! A piece the kernel lacks ends the helper with [`REFUSED`] and one line naming the piece; the
//! gateway refuses to start a sandboxed agent then (never runs it unconfined).

mod init;
mod outer;
mod rules;

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::Config;

/// The helper's hidden subcommand (the first stage).
pub const COMMAND: &str = "__sandbox";
/// The second stage, PID 1 inside.
const INIT: &str = "__sandbox-init";
/// The helper's exit code when the sandbox could not be built.
pub const REFUSED: i32 = 125;

/// What one sandboxed command gets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Spec {
    /// Read-write, and where it runs unless `cwd` says otherwise.
    pub workspace: PathBuf,
    /// Where it starts (the workspace or a folder of it).
    pub cwd: PathBuf,
    /// Readable and executable, nothing more.
    pub read_only: Vec<PathBuf>,
    pub network: bool,
    pub limits: Limits,
    /// The user to become first when the helper starts as root.
    pub uid: u32,
    /// Folders an empty tmpfs covers (the state dir): not even their names can be seen.
    #[serde(default)]
    pub hide: Vec<PathBuf>,
}

/// The rlimits of a sandboxed command.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    pub cpu_seconds: u64,
    pub memory_bytes: u64,
    pub processes: u64,
    pub file_size_bytes: u64,
    pub open_files: u64,
}

impl Spec {
    /// The sandbox of `agent_id`'s commands in `workspace`, as the config says.
    pub fn of(config: &Config, agent_id: &str, workspace: &Path, cwd: &Path) -> Self {
        let sandbox = &config.agents.defaults.sandbox;
        let limits = &sandbox.limits;
        const MB: u64 = 1024 * 1024;
        Self {
            workspace: workspace.to_path_buf(),
            cwd: cwd.to_path_buf(),
            read_only: sandbox.read_only_paths.iter().map(PathBuf::from).collect(),
            network: config.agent(agent_id).sandbox_network,
            limits: Limits {
                cpu_seconds: limits.cpu_seconds,
                memory_bytes: limits.memory_mb.saturating_mul(MB),
                processes: limits.processes,
                file_size_bytes: limits.file_size_mb.saturating_mul(MB),
                open_files: limits.open_files,
            },
            uid: sandbox.uid,
            hide: Vec::new(),
        }
    }

    /// The same, with `folder` (the state dir) covered by an empty tmpfs: a command cannot
    /// even learn which files it holds (Landlock alone leaves `stat` of a known name).
    pub fn hiding(mut self, folder: &Path) -> Self {
        self.hide.push(
            folder
                .canonicalize()
                .unwrap_or_else(|_| folder.to_path_buf()),
        );
        self
    }

    /// The command line that runs `command` in this sandbox through `helper` (the gateway's
    /// binary).
    pub fn argv(&self, helper: &Path, command: &str) -> Vec<String> {
        let spec = serde_json::to_string(self).unwrap_or_default();
        vec![
            helper.display().to_string(),
            COMMAND.into(),
            spec,
            command.into(),
        ]
    }
}

/// Runs a helper stage when `args` (the binary's arguments, without its own name) name one:
/// the exit code to end with. `None`: not a helper's call.
pub fn helper_main(args: &[String]) -> Option<i32> {
    let (stage, rest) = args.split_first()?;
    let stage = match stage.as_str() {
        COMMAND => outer::run,
        INIT => init::run,
        _ => return None,
    };
    let [spec, command] = rest else {
        eprintln!("sandbox: expected a spec and a command");
        return Some(REFUSED);
    };
    let spec: Spec = match serde_json::from_str(spec) {
        Ok(spec) => spec,
        Err(e) => {
            eprintln!("sandbox: the spec is not readable: {e}");
            return Some(REFUSED);
        }
    };
    Some(match stage(&spec, command) {
        Ok(code) => code,
        Err(refusal) => {
            eprintln!("{refusal}");
            REFUSED
        }
    })
}

/// A piece of the sandbox that could not be built, and why.
#[derive(Debug, thiserror::Error)]
#[error("sandbox: {piece}: {error}")]
pub struct Refusal {
    piece: &'static str,
    error: String,
}

impl Refusal {
    fn of(piece: &'static str) -> impl FnOnce(&dyn std::fmt::Display) -> Self {
        move |error| Self {
            piece,
            error: error.to_string(),
        }
    }
}

/// The exit code of a finished child as a shell reports it (`128 + signal` for a signal's).
fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(REFUSED)
}

/// Whether the sandbox can be built here: runs `true` in it through `helper`; the error names
/// the piece the kernel lacks.
pub async fn probe(helper: &Path, spec: &Spec) -> Result<(), String> {
    let output = tokio::process::Command::new(helper)
        .args(&spec.argv(helper, "true")[1..])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .current_dir(&spec.cwd)
        .output()
        .await
        .map_err(|e| {
            format!(
                "sandbox: the helper {} did not start: {e}",
                helper.display()
            )
        })?;
    if output.status.success() {
        return Ok(());
    }
    let said = String::from_utf8_lossy(&output.stderr).trim().to_string();
    Err(match said.is_empty() {
        true => format!("sandbox: the helper ended with {}", output.status),
        false => said,
    })
}
