//! `agents.list[].a2a`: the remote A2A agents an agent may message through `sessions_send`
//! (`sessionKey: "a2a:<name>[:<contextId>]"`, docs/a2a.md). Each remote is a `url` (its
//! agent card's base, or its JSON-RPC endpoint) and an optional bearer `token` (`${ENV}` like
//! every secret; never logged, redacted by `config show`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::error::{push_key, quote};
use super::validate::{Checker, URL_EXPECTED, is_http_url};

/// `agents.list[].a2a`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentA2a {
    /// The remote A2A agents this agent may message, by name.
    pub remotes: BTreeMap<String, A2aRemote>,
}

/// `agents.list[].a2a.remotes.<name>`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct A2aRemote {
    /// The remote's base URL (its agent card is at `<url>/.well-known/agent-card.json`), or
    /// its JSON-RPC endpoint when it serves no card there.
    pub url: String,
    /// Sent as `Authorization: Bearer <token>`.
    pub token: Option<String>,
}

pub(super) const REMOTE_NAME_EXPECTED: &str =
    "a remote name matching ^[a-z0-9_-]{1,64}$ (it is part of the session key a2a:<name>)";

/// Whether `name` can name a remote: a word that is safe inside a session key.
pub fn is_remote_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

impl Checker<'_> {
    /// Names and URLs of one agent's remotes (`path` is `agents.list[N].a2a`).
    pub(super) fn a2a(&mut self, path: &str, a2a: &mut AgentA2a) {
        let remotes = format!("{path}.remotes");
        for (name, remote) in &mut a2a.remotes {
            let at = push_key(&remotes, name);
            if !is_remote_name(name) {
                self.invalid(&at, quote(name), REMOTE_NAME_EXPECTED);
            }
            remote.url = remote.url.trim().trim_end_matches('/').to_owned();
            if !is_http_url(&remote.url) {
                self.invalid(format!("{at}.url"), quote(&remote.url), URL_EXPECTED);
            }
            if remote.token.as_deref().is_some_and(|t| t.trim().is_empty()) {
                self.invalid(
                    format!("{at}.token"),
                    "\"\"",
                    "a bearer token, or no token at all",
                );
            }
        }
    }
}

impl super::Config {
    /// The remote `name` of agent `agent_id`, when that agent names it.
    pub fn a2a_remote(&self, agent_id: &str, name: &str) -> Option<&A2aRemote> {
        self.agents
            .list
            .iter()
            .find(|agent| agent.id == agent_id)
            .and_then(|agent| agent.a2a.remotes.get(name))
    }

    /// The names of agent `agent_id`'s remotes, in order.
    pub fn a2a_remote_names(&self, agent_id: &str) -> Vec<&str> {
        self.agents
            .list
            .iter()
            .find(|agent| agent.id == agent_id)
            .map(|agent| agent.a2a.remotes.keys().map(String::as_str).collect())
            .unwrap_or_default()
    }
}
