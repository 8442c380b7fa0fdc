//! The web tools' arguments and results (SPEC §6.5, `group:web`): `web_fetch` reads one page as
//! text, `web_search` asks the configured search provider. Both answer an object with
//! `status: "ok"`, or a failure (`crate::session_tools::ToolFailure`) that says what went wrong.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_with::skip_serializing_none;

/// Arguments of `web_fetch`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(description = "")]
pub struct WebFetchParams {
    /// The page's address: an absolute http:// or https:// URL.
    pub url: String,
    /// At most this many characters of text (default and most: the gateway's limit, 50000
    /// unless configured otherwise).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub max_chars: Option<u64>,
}

/// Arguments of `web_search`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(description = "")]
pub struct WebSearchParams {
    /// What to search for, as you would type it into a search engine.
    pub query: String,
    /// At most this many results (default and most: the gateway's limit, 5 unless configured
    /// otherwise).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub count: Option<u64>,
}

/// What `web_fetch` read.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebPage {
    /// `"ok"`.
    pub status: String,
    /// The address the text came from, after redirects.
    pub url: String,
    /// The page's media type (`text/html`, `application/json`, …), without its parameters.
    pub content_type: String,
    /// An HTML page's `<title>`.
    pub title: Option<String>,
    /// The page as readable text (HTML), or as sent (text, JSON, XML).
    pub text: String,
    /// Whether the page or the text was cut at a limit (the text ends saying which).
    pub truncated: bool,
}

/// What `web_search` found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebSearchResults {
    /// `"ok"`.
    pub status: String,
    /// The query as searched.
    pub query: String,
    /// The results, best first (none when nothing was found).
    pub results: Vec<WebSearchHit>,
}

/// One search result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WebSearchHit {
    pub title: String,
    /// The page: read it with `web_fetch`.
    pub url: String,
    /// The provider's excerpt of the page, as plain text.
    pub snippet: String,
}
