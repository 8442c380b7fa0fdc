//! `agents.defaults.sandbox` and `agents.list[].sandbox` (SPEC §6.5, §8.1): which sessions are
//! sandboxed, what they may see, and how their commands are confined — the folders they may
//! read, whether they have a network, their limits, and the user they run as when the gateway
//! is root (docs/sandbox.md).

use serde::{Deserialize, Serialize};

use super::validate::Checker;
use super::{SandboxMode, SessionToolsVisibility};

/// `agents.defaults.sandbox`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SandboxConfig {
    /// Which sessions are sandboxed.
    pub mode: SandboxMode,
    /// What a sandboxed session may see.
    pub session_tools_visibility: SessionToolsVisibility,
    /// Whether a sandboxed command may use the network (off: no network at all, not even
    /// loopback).
    pub network: bool,
    /// Folders a sandboxed command may read and run programs from (its workspace it may also
    /// write); nothing else of the machine exists for it.
    pub read_only_paths: Vec<String>,
    /// What one sandboxed command may use.
    pub limits: SandboxLimits,
    /// The user sandboxed commands run as when the gateway runs as root (65534: `nobody`); a
    /// sandboxed agent's workspace is given to it.
    pub uid: u32,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        Self {
            mode: SandboxMode::default(),
            session_tools_visibility: SessionToolsVisibility::default(),
            network: false,
            read_only_paths: ["/usr", "/bin", "/sbin", "/lib", "/lib64", "/etc"]
                .map(String::from)
                .to_vec(),
            limits: SandboxLimits::default(),
            uid: 65534,
        }
    }
}

/// `agents.defaults.sandbox.limits`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SandboxLimits {
    /// CPU seconds (the kernel stops it past them).
    pub cpu_seconds: u64,
    /// Address space, in MB.
    pub memory_mb: u64,
    /// Processes and threads at once.
    pub processes: u64,
    /// The largest file it may write, in MB.
    pub file_size_mb: u64,
    /// Files open at once.
    pub open_files: u64,
}

impl Default for SandboxLimits {
    fn default() -> Self {
        Self {
            cpu_seconds: 300,
            memory_mb: 2048,
            processes: 128,
            file_size_mb: 256,
            open_files: 1024,
        }
    }
}

/// `agents.list[].sandbox`: each field absent = inherit `agents.defaults.sandbox`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SandboxOverride {
    /// Overrides `agents.defaults.sandbox.mode`.
    pub mode: Option<SandboxMode>,
    /// Overrides `agents.defaults.sandbox.sessionToolsVisibility`.
    pub session_tools_visibility: Option<SessionToolsVisibility>,
    /// Overrides `agents.defaults.sandbox.network`.
    pub network: Option<bool>,
}

impl Checker<'_> {
    pub(super) fn sandbox(&mut self, sandbox: &SandboxConfig) {
        let path = "agents.defaults.sandbox";
        for (i, folder) in sandbox.read_only_paths.iter().enumerate() {
            if !folder.starts_with('/') {
                let at = format!("{path}.readOnlyPaths[{i}]");
                self.invalid(
                    at,
                    super::error::quote(folder),
                    "an absolute path such as /usr",
                );
            }
        }
        let limits = &sandbox.limits;
        for (name, value, range) in [
            ("cpuSeconds", limits.cpu_seconds, 1..=86_400),
            ("memoryMb", limits.memory_mb, 16..=1_048_576),
            ("processes", limits.processes, 1..=100_000),
            ("fileSizeMb", limits.file_size_mb, 1..=1_048_576),
            ("openFiles", limits.open_files, 16..=1_048_576),
        ] {
            self.range(&format!("{path}.limits.{name}"), value, &range);
        }
    }
}
