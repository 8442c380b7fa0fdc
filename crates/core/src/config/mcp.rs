//! `mcp.servers.<name>`: MCP servers whose tools agents may call (docs/tools.md). A server is
//! started as a child process speaking stdio (`command`, `args`, `env`, `cwd`) or reached over
//! streamable HTTP (`url`, `headers`). Its tools are offered as `<name>__<tool>`.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;

use serde::{Deserialize, Serialize};

use super::ToolPolicy;
use super::error::{push_key, quote};
use super::validate::{Checker, URL_EXPECTED, integer, is_http_url};

/// `mcp`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct McpConfig {
    /// The servers, by name (`^[A-Za-z0-9_-]{1,32}$` without `__`: it starts every tool name
    /// of the server, so no two servers' tools can be named alike).
    pub servers: BTreeMap<String, McpServerConfig>,
}

/// `mcp.servers.<name>`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct McpServerConfig {
    /// False = not started, its tools not offered.
    pub enabled: bool,
    /// stdio: the program to start (looked up on `PATH`).
    pub command: Option<String>,
    pub args: Vec<String>,
    /// stdio: environment variables added to the gateway's (values may use `${VAR}`).
    pub env: BTreeMap<String, String>,
    /// stdio: the working directory (default: the gateway's).
    pub cwd: Option<String>,
    /// Streamable HTTP: the server's endpoint.
    pub url: Option<String>,
    /// Streamable HTTP: headers sent with every request (`Authorization`, …).
    pub headers: BTreeMap<String, String>,
    /// How long one tool call (and the connection's start) may take.
    pub timeout_seconds: u64,
    /// Which of the server's own tool names are offered (globs such as `get_*`).
    pub tools: ToolPolicy,
}

impl Default for McpServerConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            command: None,
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
            url: None,
            headers: BTreeMap::new(),
            timeout_seconds: 60,
            tools: ToolPolicy::default(),
        }
    }
}

/// `timeoutSeconds`.
pub(super) const TIMEOUT_SECONDS: RangeInclusive<u64> = 1..=3600;
pub(super) const SERVER_NAME_EXPECTED: &str = "a server name matching ^[A-Za-z0-9_-]{1,32}$ \
     without \"__\" (it starts the names of its tools, then \"__\", then the tool's own name)";

/// What `timeoutSeconds` accepts.
pub(super) fn timeout_expected() -> String {
    integer(&TIMEOUT_SECONDS)
}

fn is_server_name(name: &str) -> bool {
    (1..=32).contains(&name.len())
        && !name.contains("__")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

impl Checker<'_> {
    /// Names, exactly one transport each, URLs, timeouts, tool globs; names that differ only in
    /// case are refused (their tools could not be told apart by every model).
    pub(super) fn mcp(&mut self, mcp: &mut McpConfig) {
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        for (name, server) in &mut mcp.servers {
            let path = push_key("mcp.servers", name);
            if !is_server_name(name) {
                self.invalid(&path, quote(name), SERVER_NAME_EXPECTED);
            } else if let Some(other) = seen.insert(name.to_lowercase(), name.clone()) {
                self.invalid(
                    &path,
                    quote(name),
                    format!("a server name not used by another server in any case (\"{other}\" is configured)"),
                );
            }
            match (&server.command, &server.url) {
                (Some(_), Some(_)) | (None, None) => self.invalid(
                    &path,
                    "a server with command and url set, or neither",
                    "either command (stdio: a program to start) or url (streamable HTTP)",
                ),
                (None, Some(url)) if !is_http_url(url) => {
                    self.invalid(format!("{path}.url"), quote(url), URL_EXPECTED);
                }
                _ => {}
            }
            if server
                .command
                .as_deref()
                .is_some_and(|c| c.trim().is_empty())
            {
                self.invalid(
                    format!("{path}.command"),
                    "\"\"",
                    "a program to start, e.g. \"python3\"",
                );
            }
            self.range(
                &format!("{path}.timeoutSeconds"),
                server.timeout_seconds,
                &TIMEOUT_SECONDS,
            );
            let tools = &mut server.tools;
            self.tool_policy(&format!("{path}.tools"), &mut tools.allow, &mut tools.deny);
        }
    }
}
