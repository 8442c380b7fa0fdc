//! The web tools (SPEC §6.5, `group:web`): `web_fetch` reads one page as text ([`fetch`]),
//! `web_search` asks the search provider the operator configured ([`search`]).
//!
//! `web_fetch` goes where a model — or a page it read — tells it, so it is the gateway's SSRF
//! door: unless `tools.web.fetch.allowPrivate` is set, it reaches public addresses only
//! ([`address`]), checks every redirect again, and connects to exactly the addresses it
//! checked. The search provider is the operator's choice, so its address is not checked.
//! Neither tool changes anything: a call cut off by a stop is made again when its run resumes.

mod address;
mod fetch;
mod search;
mod text;

use std::sync::Arc;

use crate::config::Config;
use crate::runtime::tool::{ToolHints, ToolRegistry, Typed};

/// Reads and changes nothing of the gateway's, but reaches the world beyond it.
const READS_THE_WEB: ToolHints = ToolHints {
    open_world_hint: true,
    ..ToolHints::READS
};

/// Registers `web_fetch`, and `web_search` when a search provider is configured.
pub fn register(registry: &mut ToolRegistry, config: Arc<Config>) {
    if let Some(search) = search::WebSearch::configured(&config) {
        registry.register(Arc::new(Typed::new(search)));
    }
    registry.register(Arc::new(Typed::new(fetch::WebFetch::new(config))));
}

/// The gateway's HTTP client builder, naming itself. Each tool bounds its own time.
fn client_builder() -> reqwest::ClientBuilder {
    crate::runtime::providers::http::client_builder()
        .user_agent(concat!("switchboard/", env!("CARGO_PKG_VERSION")))
}

/// Why a request got no answer, in words: the kind and the innermost cause ("could not
/// connect: Connection refused"), never the URL (which may carry what the caller should not
/// see twice) nor a header.
fn why_no_answer(e: reqwest::Error) -> String {
    let e = e.without_url();
    if e.is_timeout() {
        return "timed out".into();
    }
    let kind = if e.is_connect() {
        "could not connect".to_string()
    } else if e.is_body() || e.is_decode() {
        "the answer broke off".to_string()
    } else {
        e.to_string()
    };
    let mut cause = std::error::Error::source(&e);
    let mut innermost = None;
    while let Some(c) = cause {
        innermost = Some(c);
        cause = c.source();
    }
    match innermost {
        Some(c) => format!("{kind}: {c}"),
        None => kind,
    }
}

/// The first `max` characters of `text`, and whether there was more.
fn clip(text: &str, max: usize) -> (&str, bool) {
    match text.char_indices().nth(max) {
        Some((at, _)) => (&text[..at], true),
        None => (text, false),
    }
}
