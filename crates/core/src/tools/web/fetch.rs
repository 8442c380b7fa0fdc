//! `web_fetch`: one page as text. The address is checked before anything is sent (http or
//! https; unless `tools.web.fetch.allowPrivate`, every address the host resolves to must be
//! public), and the request goes to exactly the addresses checked: each request has its own
//! client whose resolver is pinned to them, so a name that resolves to something else a moment
//! later (DNS rebinding) cannot move it. Redirects are followed here, not by reqwest, so each
//! hop is checked the same way. What is read is bounded three times: bytes while streaming
//! (`maxBytes`), time over the whole fetch (`timeoutSeconds`), characters of the answer
//! (`maxChars`); each cut is said in the text.

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue, LOCATION};
use reqwest::redirect::Policy;
use reqwest::{Response, Url};
use switchboard_protocol::session_tools::ToolFailure;
use switchboard_protocol::web_tools::{WebFetchParams, WebPage};

use super::{READS_THE_WEB, address, client_builder, clip, text, why_no_answer};
use crate::config::{Config, WebFetch as Settings};
use crate::runtime::tool::{ToolContext, ToolHints, TypedTool};
use crate::tools::Answer;

/// Redirects followed at most (the reference's and browsers' habit is a handful).
const MAX_REDIRECTS: usize = 5;
/// Bytes of an error page read for its excerpt.
const EXCERPT_BYTES: u64 = 4096;
/// Characters of an error page quoted.
const EXCERPT_CHARS: usize = 300;
/// What a page is asked for as: what `web_fetch` can read, best first.
const ACCEPTED: &str = "text/html, application/xhtml+xml, text/*;q=0.9, application/json;q=0.8, \
                        application/xml;q=0.8, */*;q=0.1";

pub struct WebFetch {
    config: Arc<Config>,
}

impl WebFetch {
    pub fn new(config: Arc<Config>) -> Self {
        Self { config }
    }

    fn settings(&self) -> &Settings {
        &self.config.tools.web.fetch
    }
}

impl TypedTool for WebFetch {
    type Params = WebFetchParams;
    type Output = Answer<WebPage>;

    fn name(&self) -> &'static str {
        "web_fetch"
    }

    fn hints(&self) -> ToolHints {
        READS_THE_WEB
    }

    fn description(&self) -> &'static str {
        "Fetch a web page (an http:// or https:// URL) and read it as text. HTML becomes \
         readable text: headings as `#` lines, list items as `- `, links as `text (url)`, \
         without scripts or styles; plain text, JSON and XML come as sent; other content \
         (images, PDFs, downloads) is refused. Redirects are followed. Answers the final `url`, \
         the page's `title`, its `text` (at most `maxChars` characters) and whether it was \
         `truncated`. Addresses on private or local networks are refused."
    }

    async fn run(&self, _ctx: &ToolContext, params: WebFetchParams) -> Self::Output {
        let seconds = self.settings().timeout_seconds.max(1);
        let fetching = self.fetch(&params);
        match tokio::time::timeout(Duration::from_secs(seconds), fetching).await {
            Ok(Ok(page)) => Answer::Done(page),
            Ok(Err(failure)) => Answer::Failed(failure),
            Err(_) => Answer::Failed(ToolFailure::error(format!(
                "{}: no complete answer within {seconds} s (tools.web.fetch.timeoutSeconds)",
                params.url
            ))),
        }
    }
}

impl WebFetch {
    /// Follows redirects by hand, checking each address, up to the page.
    async fn fetch(&self, params: &WebFetchParams) -> Result<WebPage, ToolFailure> {
        let mut url = web_url(params.url.trim(), None)?;
        let mut hops = 0;
        loop {
            let response = self.get(&url).await?;
            let Some(next) = redirect(&url, &response)? else {
                return page(url, response, self.settings(), params.max_chars).await;
            };
            hops += 1;
            if hops > MAX_REDIRECTS {
                return Err(ToolFailure::error(format!(
                    "{}: more than {MAX_REDIRECTS} redirects (the last one to {next}); \
                     web_fetch stops there",
                    params.url
                )));
            }
            url = next;
        }
    }

    /// One GET of `url`, sent only to the addresses its host was checked at.
    async fn get(&self, url: &Url) -> Result<Response, ToolFailure> {
        let settings = self.settings();
        let addresses = resolve(url, settings.allow_private).await?;
        // No proxy: a proxy would resolve the name itself, after (and around) the check. No
        // timeout here: `run` bounds the whole fetch, redirects and body included.
        let mut builder = client_builder().redirect(Policy::none()).no_proxy();
        if let Some(Target::Name(name)) = target(url) {
            builder = builder.resolve_to_addrs(name, &addresses);
        }
        let client = builder
            .build()
            .map_err(|e| ToolFailure::error(format!("cannot build the HTTP client: {e}")))?;
        client
            .get(url.clone())
            .header(ACCEPT, HeaderValue::from_static(ACCEPTED))
            .send()
            .await
            .map_err(|e| ToolFailure::error(format!("{url}: {}", why_no_answer(e))))
    }
}

/// `given` as an http(s) URL (a redirect's `Location` read against the page it came from).
fn web_url(given: &str, from: Option<&Url>) -> Result<Url, ToolFailure> {
    let parsed = match from {
        Some(base) => base.join(given),
        None => Url::parse(given),
    };
    let url = parsed.map_err(|e| {
        let whose = from.map_or(String::new(), |base| format!(" (a redirect from {base})"));
        ToolFailure::error(format!(
            "`{given}`{whose} is not a URL web_fetch can read ({e}); give an absolute \
             http:// or https:// address"
        ))
    })?;
    match url.scheme() {
        "http" | "https" => Ok(url),
        scheme => {
            let whose = from.map_or(String::new(), |base| format!(" (a redirect from {base})"));
            Err(ToolFailure::error(format!(
                "`{given}`{whose} is a `{scheme}:` address; web_fetch reads http and https only"
            )))
        }
    }
}

/// The addresses `url`'s host stands for, every one of them public unless `allow_private`.
async fn resolve(url: &Url, allow_private: bool) -> Result<Vec<SocketAddr>, ToolFailure> {
    let port = url.port_or_known_default().unwrap_or(80);
    let (host, addresses) = match target(url) {
        Some(Target::Ip(ip)) => (ip.to_string(), vec![SocketAddr::new(ip, port)]),
        Some(Target::Name(name)) => {
            let found = tokio::net::lookup_host((name, port)).await.map_err(|e| {
                ToolFailure::error(format!("{url}: {name} cannot be resolved ({e})"))
            })?;
            (name.to_string(), found.collect())
        }
        None => return Err(ToolFailure::error(format!("{url} names no host"))),
    };
    if addresses.is_empty() {
        return Err(ToolFailure::error(format!("{url}: {host} has no address")));
    }
    if !allow_private {
        for address in &addresses {
            if let Some(kind) = address::not_public(address.ip()) {
                let ip = address.ip();
                let what = if host == ip.to_string() {
                    format!("{ip} is a {kind} address")
                } else {
                    format!("{host} resolves to {ip}, a {kind} address")
                };
                return Err(ToolFailure::error(format!(
                    "{url} is refused: {what}. web_fetch reaches public addresses only, unless \
                     the operator sets tools.web.fetch.allowPrivate"
                )));
            }
        }
    }
    Ok(addresses)
}

/// A URL's host: an address, or a name to resolve.
enum Target<'a> {
    Ip(IpAddr),
    Name(&'a str),
}

/// The host of `url` (the URL parser has already written any IPv4 form as `a.b.c.d`).
fn target(url: &Url) -> Option<Target<'_>> {
    let host = url.host_str()?;
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    Some(match bare.parse::<IpAddr>() {
        Ok(ip) => Target::Ip(ip),
        Err(_) => Target::Name(host),
    })
}

/// Where a redirect leads, checked; `None` when `response` is not one.
fn redirect(url: &Url, response: &Response) -> Result<Option<Url>, ToolFailure> {
    if !matches!(response.status().as_u16(), 301 | 302 | 303 | 307 | 308) {
        return Ok(None);
    }
    let Some(location) = response.headers().get(LOCATION) else {
        return Ok(None);
    };
    let location = location.to_str().map_err(|_| {
        ToolFailure::error(format!("{url} redirects to an address that is not text"))
    })?;
    web_url(location.trim(), Some(url)).map(Some)
}

/// What `web_fetch` does with a content type.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Html,
    Text,
    /// No content type: looked at once read.
    Unsaid,
}

/// The media type (`text/html`) and charset of a `Content-Type`.
fn media_type(value: Option<&HeaderValue>) -> (String, Option<String>) {
    let value = value.and_then(|v| v.to_str().ok()).unwrap_or_default();
    let mut parts = value.split(';');
    let essence = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
    let charset = parts.find_map(|p| {
        let (key, value) = p.split_once('=')?;
        key.trim()
            .eq_ignore_ascii_case("charset")
            .then(|| value.trim().trim_matches('"').to_ascii_lowercase())
    });
    (essence, charset)
}

/// How a media type is read; `None` for one that is not text.
fn kind_of(essence: &str) -> Option<Kind> {
    let (kind, sub) = essence.split_once('/').unwrap_or((essence, ""));
    match (kind, sub) {
        ("", _) => Some(Kind::Unsaid),
        ("text", "html") | ("application", "xhtml+xml") => Some(Kind::Html),
        ("text", _) => Some(Kind::Text),
        (
            "application",
            "json" | "xml" | "javascript" | "ecmascript" | "x-ndjson" | "yaml" | "x-yaml" | "toml",
        ) => Some(Kind::Text),
        (_, sub) if sub.ends_with("+json") || sub.ends_with("+xml") => Some(Kind::Text),
        _ => None,
    }
}

/// The answer read as a page (or, not a success, as an error quoting it).
async fn page(
    url: Url,
    mut response: Response,
    settings: &Settings,
    max_chars: Option<u64>,
) -> Result<WebPage, ToolFailure> {
    let (essence, charset) = media_type(response.headers().get(CONTENT_TYPE));
    if !response.status().is_success() {
        return Err(http_error(&url, response, &essence, charset.as_deref()).await);
    }
    let Some(kind) = kind_of(&essence) else {
        return Err(ToolFailure::error(format!(
            "{url} is `{essence}`; web_fetch reads web pages and text (HTML, text/*, JSON, \
             XML), not this content type"
        )));
    };
    let (mut body, cut) = read_body(&mut response, settings.max_bytes)
        .await
        .map_err(|e| ToolFailure::error(format!("{url}: {}", why_no_answer(e))))?;
    let (kind, essence) = match kind {
        Kind::Unsaid => sniff(&url, &body)?,
        kind => (kind, essence),
    };
    if cut {
        drop_broken_tail(&mut body);
    }
    let raw = decode(&body, charset.as_deref());
    let (title, text) = if kind == Kind::Html {
        readable(raw, &url).await?
    } else {
        (None, raw)
    };
    let limit = max_chars
        .unwrap_or(settings.max_chars)
        .clamp(1, settings.max_chars.max(1));
    let (text, more) = within(&text, usize::try_from(limit).unwrap_or(usize::MAX));
    let mut text = text;
    if cut {
        text.push_str(&format!(
            "\n\n[The page was cut: it is longer than {} bytes (tools.web.fetch.maxBytes); \
             only its start was read.]",
            settings.max_bytes
        ));
    }
    Ok(WebPage {
        status: "ok".into(),
        url: url.to_string(),
        content_type: essence,
        title,
        text,
        truncated: cut || more,
    })
}

/// `text` within `limit` characters, saying so when cut (and whether it was).
fn within(text: &str, limit: usize) -> (String, bool) {
    let (shown, more) = clip(text, limit);
    if !more {
        return (shown.to_string(), false);
    }
    let total = text.chars().count();
    let shown = format!(
        "{}\n\n[Text cut at {limit} of {total} characters (maxChars).]",
        shown.trim_end()
    );
    (shown, true)
}

/// An HTTP error as the model reads it: the status and the start of what the page said.
async fn http_error(
    url: &Url,
    mut response: Response,
    essence: &str,
    charset: Option<&str>,
) -> ToolFailure {
    let status = response.status();
    let (body, _) = read_body(&mut response, EXCERPT_BYTES)
        .await
        .unwrap_or_default();
    let said = decode(&body, charset);
    let said = match kind_of(essence) {
        Some(Kind::Html) => text::readable(&said, None).text,
        _ => said,
    };
    let (excerpt, more) = clip(said.trim(), EXCERPT_CHARS);
    let excerpt = text::collapse(excerpt);
    let quoted = match (excerpt.is_empty(), more) {
        (true, _) => String::new(),
        (false, false) => format!(": {excerpt}"),
        (false, true) => format!(": {excerpt}…"),
    };
    ToolFailure::error(format!("{url} answered {status}{quoted}"))
}

/// The page's readable text, worked out on a blocking thread: a large page takes a while.
async fn readable(html: String, url: &Url) -> Result<(Option<String>, String), ToolFailure> {
    let base = url.clone();
    tokio::task::spawn_blocking(move || {
        let page = text::readable(&html, Some(&base));
        (page.title, page.text)
    })
    .await
    .map_err(|e| ToolFailure::error(format!("{url}: the page could not be read ({e})")))
}

/// A page sent without a content type: HTML when it looks like HTML, text when it is text.
fn sniff(url: &Url, body: &[u8]) -> Result<(Kind, String), ToolFailure> {
    let head = String::from_utf8_lossy(&body[..body.len().min(512)]).to_ascii_lowercase();
    let head = head.trim_start();
    if head.starts_with("<!doctype html") || head.starts_with("<html") {
        return Ok((Kind::Html, "text/html".into()));
    }
    if !body.contains(&0) && std::str::from_utf8(body).is_ok() {
        return Ok((Kind::Text, "text/plain".into()));
    }
    Err(ToolFailure::error(format!(
        "{url} has no content type and is not text; web_fetch reads web pages and text"
    )))
}

/// Reads the body, at most `max` bytes: the bytes and whether there were more.
async fn read_body(response: &mut Response, max: u64) -> Result<(Vec<u8>, bool), reqwest::Error> {
    let max = usize::try_from(max).unwrap_or(usize::MAX);
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = max - body.len();
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            return Ok((body, true));
        }
        body.extend_from_slice(&chunk);
    }
    Ok((body, false))
}

/// Drops a UTF-8 character the byte cap cut in two (it would read as `�`).
fn drop_broken_tail(body: &mut Vec<u8>) {
    if let Err(e) = std::str::from_utf8(body)
        && e.error_len().is_none()
    {
        body.truncate(e.valid_up_to());
    }
}

/// The body as text: Latin-1 and its kin byte for character, anything else as UTF-8 (what
/// nearly every page is), a broken sequence as `�`.
fn decode(body: &[u8], charset: Option<&str>) -> String {
    match charset {
        Some("iso-8859-1" | "latin1" | "windows-1252" | "us-ascii" | "ascii") => {
            body.iter().map(|&b| char::from(b)).collect()
        }
        _ => String::from_utf8_lossy(body).into_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn error(result: Result<impl std::fmt::Debug, ToolFailure>) -> String {
        result.unwrap_err().message().to_string()
    }

    #[test]
    fn only_http_and_https_are_fetched() {
        assert_eq!(
            web_url("https://example.com/a?b", None).unwrap().as_str(),
            "https://example.com/a?b"
        );
        assert_eq!(
            error(web_url("file:///etc/passwd", None)),
            "`file:///etc/passwd` is a `file:` address; web_fetch reads http and https only"
        );
        let from = Url::parse("http://example.com/a/b").unwrap();
        assert_eq!(
            web_url("../c", Some(&from)).unwrap().as_str(),
            "http://example.com/c"
        );
        assert_eq!(
            error(web_url("ftp://x/y", Some(&from))),
            "`ftp://x/y` (a redirect from http://example.com/a/b) is a `ftp:` address; \
             web_fetch reads http and https only"
        );
        assert!(error(web_url("example.com", None)).contains("give an absolute http://"));
    }

    #[tokio::test]
    async fn a_name_that_resolves_to_loopback_is_refused_without_a_request() {
        let url = Url::parse("http://localhost:9/").unwrap();
        let refused = error(resolve(&url, false).await);
        assert!(
            refused.starts_with("http://localhost:9/ is refused: localhost resolves to "),
            "{refused}"
        );
        assert!(refused.contains("a loopback address"), "{refused}");
        assert!(
            refused.contains("tools.web.fetch.allowPrivate"),
            "{refused}"
        );
        let allowed = resolve(&url, true).await.unwrap();
        assert!(
            allowed
                .iter()
                .all(|a| a.ip().is_loopback() && a.port() == 9)
        );
        let mapped = Url::parse("http://[::ffff:10.0.0.1]/").unwrap();
        assert_eq!(
            error(resolve(&mapped, false).await),
            "http://[::ffff:a00:1]/ is refused: ::ffff:10.0.0.1 is a private address. \
             web_fetch reaches public addresses only, unless the operator sets \
             tools.web.fetch.allowPrivate"
        );
    }

    #[test]
    fn content_types_are_read_by_kind() {
        let header = HeaderValue::from_static("Text/HTML; Charset=\"ISO-8859-1\"");
        assert_eq!(
            media_type(Some(&header)),
            ("text/html".into(), Some("iso-8859-1".into()))
        );
        assert_eq!(media_type(None), (String::new(), None));
        assert_eq!(kind_of("text/html"), Some(Kind::Html));
        assert_eq!(kind_of("text/markdown"), Some(Kind::Text));
        assert_eq!(kind_of("application/ld+json"), Some(Kind::Text));
        assert_eq!(kind_of("application/atom+xml"), Some(Kind::Text));
        assert_eq!(kind_of(""), Some(Kind::Unsaid));
        assert_eq!(kind_of("application/pdf"), None);
        assert_eq!(kind_of("image/png"), None);
        assert_eq!(decode(b"caf\xe9", Some("iso-8859-1")), "café");
        assert_eq!(decode("café".as_bytes(), None), "café");
        let mut cut = "naïve".as_bytes()[..3].to_vec();
        drop_broken_tail(&mut cut);
        assert_eq!(cut, b"na");
    }
}
