//! `tools.web` and `tools.exec` (SPEC §6.5): what the web tools may reach and which search
//! provider answers `web_search`; when a command waits for an operator's approval.

use serde::{Deserialize, Serialize};

use super::validate::Checker;
use super::{ExecAsk, SearchProvider};

/// `tools.web`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WebTools {
    pub fetch: WebFetch,
    pub search: WebSearch,
}

/// `tools.web.fetch`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WebFetch {
    /// Whether `web_fetch` may reach private, loopback and link-local addresses (off: no SSRF
    /// into the gateway's own network).
    pub allow_private: bool,
    /// The most it downloads of one page, in bytes.
    pub max_bytes: u64,
    /// The most text it answers, in characters.
    pub max_chars: u64,
    /// How long one fetch may take, redirects included.
    pub timeout_seconds: u64,
}

impl Default for WebFetch {
    fn default() -> Self {
        Self {
            allow_private: false,
            max_bytes: 2 * 1024 * 1024,
            max_chars: 50_000,
            timeout_seconds: 30,
        }
    }
}

/// `tools.web.search`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WebSearch {
    /// Who answers searches; absent: `web_search` is not offered.
    pub provider: Option<SearchProvider>,
    /// The provider's address (a SearXNG instance; Brave's API by default).
    pub base_url: Option<String>,
    /// The provider's key (Brave: the subscription token).
    pub api_key: Option<String>,
    /// Results one search answers at most.
    pub max_results: u64,
}

impl Default for WebSearch {
    fn default() -> Self {
        Self {
            provider: None,
            base_url: None,
            api_key: None,
            max_results: 5,
        }
    }
}

/// `tools.exec`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ExecToolConfig {
    /// When a command waits for an operator's approval; absent: `on-miss` outside a sandbox,
    /// `off` inside one.
    pub ask: Option<ExecAsk>,
    /// How long a command waits for an approval before it is refused.
    pub approval_timeout_seconds: u64,
}

impl Default for ExecToolConfig {
    fn default() -> Self {
        Self {
            ask: None,
            approval_timeout_seconds: 120,
        }
    }
}

impl Checker<'_> {
    pub(super) fn tool_settings(&mut self, web: &WebTools, exec: &ExecToolConfig) {
        let fetch = &web.fetch;
        self.range(
            "tools.web.fetch.maxBytes",
            fetch.max_bytes,
            &(1024..=104_857_600),
        );
        self.range(
            "tools.web.fetch.maxChars",
            fetch.max_chars,
            &(100..=10_000_000),
        );
        self.range(
            "tools.web.fetch.timeoutSeconds",
            fetch.timeout_seconds,
            &(1..=600),
        );
        let search = &web.search;
        self.range("tools.web.search.maxResults", search.max_results, &(1..=50));
        if search.provider == Some(SearchProvider::Searxng) && search.base_url.is_none() {
            self.invalid("tools.web.search.baseUrl", "nothing", "the address of a SearXNG instance, such as http://127.0.0.1:8888 (provider searxng)");
        }
        if search.provider == Some(SearchProvider::Brave) && search.api_key.is_none() {
            self.invalid(
                "tools.web.search.apiKey",
                "nothing",
                "a Brave Search API key (provider brave)",
            );
        }
        let timeout = exec.approval_timeout_seconds;
        self.range("tools.exec.approvalTimeoutSeconds", timeout, &(1..=86_400));
    }
}
