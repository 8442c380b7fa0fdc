//! `web_search`: a query put to the search provider the operator configured
//! (`tools.web.search`): a SearXNG instance's JSON API, or Brave Search's API. Each provider's
//! answer is read into its own typed shape and given back in one shape (`title`, `url`,
//! `snippet`), so the model reads every provider the same way.
//!
//! The provider is the operator's choice, so its address is not held to `web_fetch`'s
//! public-address rule (a SearXNG on the same machine is the usual set-up). The API key travels
//! in a header marked sensitive and appears in no message: errors name the provider and what
//! it answered, with the key cut out of any excerpt.

use std::time::Duration;

use reqwest::Url;
use reqwest::header::{ACCEPT, HeaderValue};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use switchboard_protocol::session_tools::ToolFailure;
use switchboard_protocol::web_tools::{WebSearchHit, WebSearchParams, WebSearchResults};

use super::{READS_THE_WEB, client_builder, clip, text, why_no_answer};
use crate::config::{Config, SearchProvider};
use crate::runtime::tool::{ToolContext, ToolHints, TypedTool};
use crate::tools::Answer;

/// Brave Search's API, when `tools.web.search.baseUrl` does not say otherwise.
const BRAVE_API: &str = "https://api.search.brave.com";
/// The most results Brave answers for one query.
const BRAVE_MAX_COUNT: usize = 20;
/// How long one search may take.
const SEARCH_TIMEOUT: Duration = Duration::from_secs(30);
/// Results when `tools.web.search.maxResults` is left at 0 (what `config check` makes of it).
const DEFAULT_RESULTS: u64 = 5;
/// Characters of a provider's unexpected answer quoted in an error.
const EXCERPT_CHARS: usize = 300;

pub struct WebSearch {
    provider: SearchProvider,
    base_url: Option<String>,
    api_key: Option<String>,
    max_results: usize,
    /// Built once; a client that could not be built is reported by every call.
    client: Result<reqwest::Client, String>,
}

impl WebSearch {
    /// The tool, when `tools.web.search.provider` names a provider.
    pub fn configured(config: &Config) -> Option<Self> {
        let settings = &config.tools.web.search;
        let provider = settings.provider?;
        let max_results = match settings.max_results {
            0 => DEFAULT_RESULTS,
            n => n,
        };
        Some(Self {
            provider,
            base_url: settings.base_url.clone(),
            api_key: settings.api_key.clone(),
            max_results: usize::try_from(max_results).unwrap_or(usize::MAX),
            client: client_builder()
                .timeout(SEARCH_TIMEOUT)
                .build()
                .map_err(|e| format!("the HTTP client cannot be built: {e}")),
        })
    }
}

impl TypedTool for WebSearch {
    type Params = WebSearchParams;
    type Output = Answer<WebSearchResults>;

    fn name(&self) -> &'static str {
        "web_search"
    }

    fn hints(&self) -> ToolHints {
        READS_THE_WEB
    }

    fn description(&self) -> &'static str {
        "Search the web. Answers the best results, each with its `title`, `url` and a \
         `snippet` of the page; read a page whole with web_fetch."
    }

    async fn run(&self, _ctx: &ToolContext, params: WebSearchParams) -> Self::Output {
        let query = params.query.trim();
        if query.is_empty() {
            return Answer::Failed(ToolFailure::error(
                "`query` is empty: say what to search for",
            ));
        }
        let count = params
            .count
            .map_or(self.max_results, |n| {
                usize::try_from(n).unwrap_or(usize::MAX)
            })
            .clamp(1, self.max_results);
        match self.search(query, count).await {
            Ok(results) => Answer::Done(WebSearchResults {
                status: "ok".into(),
                query: query.to_string(),
                results,
            }),
            Err(why) => Answer::Failed(ToolFailure::error(format!(
                "the search provider {} {why}",
                self.provider
            ))),
        }
    }
}

/// SearXNG's JSON answer (the fields read).
#[derive(Deserialize)]
struct SearxAnswer {
    #[serde(default)]
    results: Vec<SearxResult>,
}

#[derive(Deserialize)]
struct SearxResult {
    #[serde(default)]
    title: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    content: String,
}

/// Brave's JSON answer (the fields read); no `web` part: nothing was found.
#[derive(Deserialize)]
struct BraveAnswer {
    #[serde(default)]
    web: Option<BraveWeb>,
}

#[derive(Deserialize)]
struct BraveWeb {
    #[serde(default)]
    results: Vec<BraveResult>,
}

#[derive(Deserialize)]
struct BraveResult {
    #[serde(default)]
    title: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    description: String,
}

impl WebSearch {
    /// The results of `query`, or what went wrong (completing "the search provider X …").
    async fn search(&self, query: &str, count: usize) -> Result<Vec<WebSearchHit>, String> {
        let client = self
            .client
            .as_ref()
            .map_err(|e| format!("cannot be asked: {e}"))?;
        let found = match self.provider {
            SearchProvider::Searxng => {
                let base = self.base_url.as_deref().ok_or(
                    "has no address: set tools.web.search.baseUrl to the SearXNG instance",
                )?;
                let mut url = endpoint(base, "search")?;
                url.query_pairs_mut()
                    .append_pair("q", query)
                    .append_pair("format", "json");
                let answer: SearxAnswer = self.ask(client.get(url)).await?;
                answer
                    .results
                    .into_iter()
                    .map(|r| (r.title, r.url, r.content))
                    .collect::<Vec<_>>()
            }
            SearchProvider::Brave => {
                let base = self.base_url.as_deref().unwrap_or(BRAVE_API);
                let mut url = endpoint(base, "res/v1/web/search")?;
                let count = count.min(BRAVE_MAX_COUNT);
                url.query_pairs_mut()
                    .append_pair("q", query)
                    .append_pair("count", &count.to_string());
                let mut token = self
                    .api_key
                    .as_deref()
                    .map(HeaderValue::from_str)
                    .transpose()
                    .map_err(|_| "cannot be asked: tools.web.search.apiKey is not header text")?
                    .ok_or("cannot be asked: set tools.web.search.apiKey (the Brave API key)")?;
                token.set_sensitive(true);
                let request = client
                    .get(url)
                    .header("X-Subscription-Token", token)
                    .header(ACCEPT, HeaderValue::from_static("application/json"));
                let answer: BraveAnswer = self.ask(request).await?;
                let results = answer.web.map(|w| w.results).unwrap_or_default();
                results
                    .into_iter()
                    .map(|r| (r.title, r.url, r.description))
                    .collect()
            }
        };
        Ok(found
            .into_iter()
            .filter(|(_, url, _)| !url.trim().is_empty())
            .take(count)
            .map(|(title, url, snippet)| WebSearchHit {
                title: text::plain(&title),
                url: url.trim().to_string(),
                snippet: text::plain(&snippet),
            })
            .collect())
    }

    /// Sends `request` and reads its JSON answer as `T`.
    async fn ask<T: DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
    ) -> Result<T, String> {
        let response = request
            .send()
            .await
            .map_err(|e| format!("could not be reached ({})", why_no_answer(e)))?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .map_err(|e| format!("answered {status}, then {}", why_no_answer(e)))?;
        if !status.is_success() {
            let hint = match (self.provider, status.as_u16()) {
                (SearchProvider::Searxng, 403) => {
                    " (is `json` among the instance's search.formats?)"
                }
                (SearchProvider::Brave, 401 | 403 | 422) => " (is tools.web.search.apiKey right?)",
                _ => "",
            };
            return Err(format!("answered {status}{hint}{}", self.excerpt(&body)));
        }
        serde_json::from_slice(&body).map_err(|e| {
            format!(
                "answered something that is not its JSON ({e}){}",
                self.excerpt(&body)
            )
        })
    }

    /// `": <the start of body>"`, the API key cut out; nothing for an empty body.
    fn excerpt(&self, body: &[u8]) -> String {
        let said = String::from_utf8_lossy(&body[..body.len().min(4 * EXCERPT_CHARS)]);
        let mut said = text::collapse(&said);
        if let Some(key) = self.api_key.as_deref().filter(|k| !k.is_empty()) {
            said = said.replace(key, "[redacted]");
        }
        match clip(&said, EXCERPT_CHARS) {
            ("", _) => String::new(),
            (start, false) => format!(": {start}"),
            (start, true) => format!(": {start}…"),
        }
    }
}

/// `base` + `/` + `path` as a URL.
fn endpoint(base: &str, path: &str) -> Result<Url, String> {
    let joined = format!("{}/{path}", base.trim().trim_end_matches('/'));
    Url::parse(&joined)
        .map_err(|e| format!("has an address that is not a URL (tools.web.search.baseUrl: {e})"))
}
