//! The web tools (SPEC §6.5, `group:web`) against real HTTP servers on 127.0.0.1: `web_fetch`
//! refuses the loopback address until `tools.web.fetch.allowPrivate` allows it (and sends
//! nothing), reads an HTML page as text in a run, follows redirects, answers HTTP errors with
//! their status, refuses content that is not text, and cuts a page at its byte and character
//! caps; `web_search` asks a fake SearXNG and a fake Brave the way each expects and answers
//! one result shape, and is offered only when a provider is configured.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_core::config::{Config, SearchProvider};
use switchboard_core::runtime::tool::ToolOutput;
use switchboard_core::store::RunStatus;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::support::{GUARD, TestEngine, tool_results};

/// A web site on 127.0.0.1: each path answers one fixed HTTP/1.1 response (an unknown path a
/// 404; an empty response: never an answer), and the head of every request is recorded
/// before it is answered.
struct Site {
    base: String,
    heads: Arc<Mutex<Vec<String>>>,
    server: tokio::task::JoinHandle<()>,
}

type Pages = HashMap<&'static str, Vec<u8>>;

impl Site {
    /// Serves the pages `pages` makes for the site's base address (`http://127.0.0.1:<port>`).
    async fn start(pages: impl FnOnce(&str) -> Vec<(&'static str, Vec<u8>)>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let pages: Arc<Pages> = Arc::new(pages(&base).into_iter().collect());
        let heads = Arc::new(Mutex::new(Vec::new()));
        let recorded = heads.clone();
        let server = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                tokio::spawn(answer(stream, pages.clone(), recorded.clone()));
            }
        });
        Site {
            base,
            heads,
            server,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Every request's head, lowercased (header names may be sent in any case).
    fn heads(&self) -> Vec<String> {
        let heads = self.heads.lock().unwrap();
        heads.iter().map(|h| h.to_ascii_lowercase()).collect()
    }

    /// Every request's target (`/path?query`), in order.
    fn targets(&self) -> Vec<String> {
        let heads = self.heads.lock().unwrap();
        heads
            .iter()
            .map(|h| h.split(' ').nth(1).unwrap_or_default().to_string())
            .collect()
    }
}

impl Drop for Site {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn answer(mut stream: TcpStream, pages: Arc<Pages>, heads: Arc<Mutex<Vec<String>>>) {
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let target = head.split(' ').nth(1).unwrap_or("/");
    let path = target.split('?').next().unwrap_or("/");
    let response = pages
        .get(path)
        .cloned()
        .unwrap_or_else(|| respond("404 Not Found", "text/plain", b"no such page"));
    heads.lock().unwrap().push(head);
    if response.is_empty() {
        // A page that never comes: hold the connection open until the client gives up.
        let _ = stream.read(&mut buf).await;
        return;
    }
    // The client may stop reading (a page over its byte cap): a broken pipe is expected.
    let _ = stream.write_all(&response).await;
    let _ = stream.shutdown().await;
}

/// A whole HTTP/1.1 response.
fn respond(status: &str, content_type: &str, body: &[u8]) -> Vec<u8> {
    let mut response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    response.extend_from_slice(body);
    response
}

fn redirect(status: &str, location: &str) -> Vec<u8> {
    format!(
        "HTTP/1.1 {status}\r\nLocation: {location}\r\nContent-Length: 0\r\n\
         Connection: close\r\n\r\n"
    )
    .into_bytes()
}

const PAGE: &str = r#"<!doctype html>
<html><head><title>Test page</title>
<script>document.write("hidden script text")</script>
<style>p { color: red }</style></head>
<body><h1>Welcome</h1>
<p>This is the <b>first</b> paragraph &amp; more.</p>
<ul><li>alpha</li><li>beta</li></ul>
<noscript>Turn on JavaScript</noscript>
</body></html>"#;

/// An engine whose `web_fetch` may reach private addresses (the test servers are on
/// 127.0.0.1), with `fetch` changed as a test needs.
async fn allowing_private(
    fetch: impl FnOnce(&mut switchboard_core::config::WebFetch),
) -> TestEngine {
    let mut config = Config::default();
    config.tools.web.fetch.allow_private = true;
    fetch(&mut config.tools.web.fetch);
    TestEngine::open(config).await
}

async fn call(h: &TestEngine, tool: &str, args: Value) -> ToolOutput {
    tokio::time::timeout(GUARD, h.invoke("main", tool, args))
        .await
        .expect("the tool answered in time")
}

fn error_of(output: &ToolOutput) -> String {
    assert!(output.is_error, "{}", output.content);
    assert_eq!(output.content["status"], "error", "{}", output.content);
    output.content["error"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_loopback_address_is_refused_by_default_and_nothing_is_sent() {
    let site = Site::start(|_| vec![("/", respond("200 OK", "text/html", PAGE.as_bytes()))]).await;
    let h = TestEngine::open(Config::default()).await;
    let output = call(&h, "web_fetch", json!({"url": site.url("/")})).await;
    assert_eq!(
        error_of(&output),
        format!(
            "{} is refused: 127.0.0.1 is a loopback address. web_fetch reaches public \
             addresses only, unless the operator sets tools.web.fetch.allowPrivate",
            site.url("/")
        )
    );
    assert_eq!(site.targets(), Vec::<String>::new());
    let unknown = call(
        &h,
        "web_fetch",
        json!({"url": site.url("/"), "method": "POST"}),
    )
    .await;
    assert!(
        error_of(&unknown).contains("unknown field `method`; accepted: `url`, `maxChars`"),
        "{}",
        unknown.content
    );
    let other = call(&h, "web_fetch", json!({"url": "file:///etc/passwd"})).await;
    assert!(
        error_of(&other).contains("is a `file:` address"),
        "{}",
        other.content
    );
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_html_page_reads_as_text_in_a_run() {
    let site = Site::start(|_| {
        vec![(
            "/",
            respond("200 OK", "text/html; charset=utf-8", PAGE.as_bytes()),
        )]
    })
    .await;
    let h = allowing_private(|_| {}).await;
    let script = format!(
        "@tool web_fetch {}\n@reply title: {{{{result.title}}}}",
        json!({"url": site.url("/")})
    );
    let record = h.turn("main", &script).await;
    assert_eq!(record.status, RunStatus::Ok, "{:?}", record.error);
    assert_eq!(record.result.as_deref(), Some("title: Test page"));
    let results = tool_results(&h, "main").await;
    assert_eq!(results.len(), 1);
    let (name, text, is_error) = &results[0];
    assert_eq!((name.as_str(), *is_error), ("web_fetch", false));
    let page: Value = serde_json::from_str(text).unwrap();
    assert_eq!(
        page,
        json!({
            "status": "ok",
            "url": site.url("/"),
            "contentType": "text/html",
            "title": "Test page",
            "text": "# Welcome\n\nThis is the first paragraph & more.\n\n- alpha\n- beta",
            "truncated": false,
        })
    );
    let heads = site.heads();
    assert!(heads[0].starts_with("get / http/1.1\r\n"), "{heads:?}");
    assert!(heads[0].contains("\r\naccept: text/html"), "{heads:?}");
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_are_followed_by_hand_and_bounded() {
    let site = Site::start(|base| {
        vec![
            ("/old", redirect("301 Moved Permanently", "/new")),
            ("/new", redirect("302 Found", &format!("{base}/page"))),
            ("/page", respond("200 OK", "text/plain", b"you made it")),
            ("/loop", redirect("307 Temporary Redirect", "/loop")),
            ("/away", redirect("302 Found", "ftp://files.example/x")),
        ]
    })
    .await;
    let h = allowing_private(|_| {}).await;
    let output = call(&h, "web_fetch", json!({"url": site.url("/old")})).await;
    assert_eq!(
        output.content,
        json!({
            "status": "ok",
            "url": site.url("/page"),
            "contentType": "text/plain",
            "text": "you made it",
            "truncated": false,
        })
    );
    assert_eq!(site.targets(), ["/old", "/new", "/page"]);

    let looping = call(&h, "web_fetch", json!({"url": site.url("/loop")})).await;
    assert_eq!(
        error_of(&looping),
        format!(
            "{}: more than 5 redirects (the last one to {}); web_fetch stops there",
            site.url("/loop"),
            site.url("/loop")
        )
    );
    assert_eq!(
        site.targets().len(),
        3 + 6,
        "the first request and 5 redirects"
    );

    let away = call(&h, "web_fetch", json!({"url": site.url("/away")})).await;
    assert_eq!(
        error_of(&away),
        format!(
            "`ftp://files.example/x` (a redirect from {}) is a `ftp:` address; web_fetch \
             reads http and https only",
            site.url("/away")
        )
    );
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_errors_and_content_that_is_not_text_are_refused() {
    let site = Site::start(|_| {
        vec![
            (
                "/gone",
                respond(
                    "404 Not Found",
                    "text/html",
                    b"<html><title>404</title><h1>Not here</h1><p>Try the front page.</p>",
                ),
            ),
            (
                "/blob",
                respond("200 OK", "application/octet-stream", &[0, 1, 2, 3]),
            ),
            (
                "/data",
                respond("200 OK", "application/json", br#"{"a": [1, 2]}"#),
            ),
        ]
    })
    .await;
    let h = allowing_private(|_| {}).await;
    let gone = call(&h, "web_fetch", json!({"url": site.url("/gone")})).await;
    assert_eq!(
        error_of(&gone),
        format!(
            "{} answered 404 Not Found: # Not here Try the front page.",
            site.url("/gone")
        )
    );
    let blob = call(&h, "web_fetch", json!({"url": site.url("/blob")})).await;
    assert_eq!(
        error_of(&blob),
        format!(
            "{} is `application/octet-stream`; web_fetch reads web pages and text (HTML, \
             text/*, JSON, XML), not this content type",
            site.url("/blob")
        )
    );
    let data = call(&h, "web_fetch", json!({"url": site.url("/data")})).await;
    assert_eq!(data.content["text"], r#"{"a": [1, 2]}"#, "{}", data.content);
    assert_eq!(data.content["contentType"], "application/json");

    // Nothing listens on a port just freed.
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", closed.local_addr().unwrap());
    drop(closed);
    let refused = call(&h, "web_fetch", json!({"url": url})).await;
    let refused = error_of(&refused);
    assert!(
        refused.starts_with(&format!("{url}: could not connect")),
        "{refused}"
    );
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_is_cut_at_its_byte_character_and_time_caps_and_says_so() {
    let long: String = (0..500).map(|i| format!("line {i:04}\n")).collect();
    let body = long.clone().into_bytes();
    let site = Site::start(move |_| {
        vec![
            ("/long", respond("200 OK", "text/plain", &body)),
            ("/never", Vec::new()),
        ]
    })
    .await;
    let h = allowing_private(|fetch| {
        fetch.max_bytes = 1024;
        fetch.timeout_seconds = 1;
    })
    .await;
    let output = call(&h, "web_fetch", json!({"url": site.url("/long")})).await;
    assert_eq!(output.content["truncated"], true, "{}", output.content);
    let text = output.content["text"].as_str().unwrap();
    assert_eq!(
        text,
        format!(
            "{}\n\n[The page was cut: it is longer than 1024 bytes (tools.web.fetch.maxBytes); \
             only its start was read.]",
            &long[..1024]
        )
    );

    let short = call(
        &h,
        "web_fetch",
        json!({"url": site.url("/long"), "maxChars": 20}),
    )
    .await;
    assert_eq!(
        short.content["text"],
        "line 0000\nline 0001\n\n[Text cut at 20 of 1024 characters (maxChars).]\n\n\
         [The page was cut: it is longer than 1024 bytes (tools.web.fetch.maxBytes); only its \
         start was read.]"
    );
    assert_eq!(short.content["truncated"], true);

    let slow = call(&h, "web_fetch", json!({"url": site.url("/never")})).await;
    assert_eq!(
        error_of(&slow),
        format!(
            "{}: no complete answer within 1 s (tools.web.fetch.timeoutSeconds)",
            site.url("/never")
        )
    );
    h.engine.close().await;
}

/// An engine whose `web_search` asks `provider` at `base_url`.
async fn searching(
    provider: SearchProvider,
    base_url: &str,
    api_key: Option<&str>,
    max_results: u64,
) -> TestEngine {
    let mut config = Config::default();
    let search = &mut config.tools.web.search;
    search.provider = Some(provider);
    search.base_url = Some(base_url.to_string());
    search.api_key = api_key.map(str::to_string);
    search.max_results = max_results;
    TestEngine::open(config).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_search_asks_searxng_and_answers_its_results() {
    let answer = json!({
        "query": "rust async",
        "results": [
            {"title": "Async Rust", "url": "https://rust-lang.github.io/async-book/", "content": "The async book &amp; more", "engine": "x"},
            {"title": "Tokio", "url": "https://tokio.rs/", "content": "An asynchronous runtime"},
            {"title": "Third", "url": "https://third.example/", "content": "left out"},
        ],
    })
    .to_string();
    let site = Site::start(move |_| {
        vec![(
            "/search",
            respond("200 OK", "application/json", answer.as_bytes()),
        )]
    })
    .await;
    let h = searching(SearchProvider::Searxng, &format!("{}/", site.base), None, 2).await;
    let output = call(&h, "web_search", json!({"query": " rust async "})).await;
    assert_eq!(
        output.content,
        json!({
            "status": "ok",
            "query": "rust async",
            "results": [
                {"title": "Async Rust", "url": "https://rust-lang.github.io/async-book/", "snippet": "The async book & more"},
                {"title": "Tokio", "url": "https://tokio.rs/", "snippet": "An asynchronous runtime"},
            ],
        })
    );
    assert!(!output.is_error);
    assert_eq!(site.targets(), ["/search?q=rust+async&format=json"]);
    // The same search in a scripted run: its result is in the transcript.
    let script =
        "@tool web_search {\"query\": \"rust async\"}\n@reply first: {{result.results.0.title}}";
    let record = h.turn("main", script).await;
    assert_eq!(record.result.as_deref(), Some("first: Async Rust"));
    let results = super::support::tool_results(&h, "main").await;
    assert_eq!(results[0].0, "web_search");
    assert!(
        results[0]
            .1
            .contains("\"snippet\":\"An asynchronous runtime\""),
        "{results:?}"
    );
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_search_asks_brave_with_its_token_and_never_repeats_it() {
    let answer = json!({
        "type": "search",
        "web": {"results": [
            {"title": "<strong>Tokio</strong> docs", "url": "https://docs.rs/tokio", "description": "A runtime for <strong>async</strong> Rust"},
            {"title": "Tokio", "url": "https://tokio.rs/", "description": "Build reliable apps"},
            {"title": "Third", "url": "https://third.example/", "description": "left out"},
        ]},
    })
    .to_string();
    let site = Site::start(move |_| {
        vec![(
            "/res/v1/web/search",
            respond("200 OK", "application/json", answer.as_bytes()),
        )]
    })
    .await;
    let h = searching(SearchProvider::Brave, &site.base, Some("secret-token"), 5).await;
    let output = call(&h, "web_search", json!({"query": "tokio", "count": 2})).await;
    assert_eq!(
        output.content,
        json!({
            "status": "ok",
            "query": "tokio",
            "results": [
                {"title": "Tokio docs", "url": "https://docs.rs/tokio", "snippet": "A runtime for async Rust"},
                {"title": "Tokio", "url": "https://tokio.rs/", "snippet": "Build reliable apps"},
            ],
        })
    );
    let heads = site.heads();
    assert!(
        heads[0].starts_with("get /res/v1/web/search?q=tokio&count=2 http/1.1\r\n"),
        "{heads:?}"
    );
    assert!(
        heads[0].contains("\r\nx-subscription-token: secret-token\r\n"),
        "{heads:?}"
    );
    assert!(
        heads[0].contains("\r\naccept: application/json\r\n"),
        "{heads:?}"
    );
    h.engine.close().await;

    // A provider that refuses (and echoes the key) is an error naming it, without the key.
    let refusing = Site::start(|_| {
        vec![(
            "/res/v1/web/search",
            respond(
                "401 Unauthorized",
                "application/json",
                br#"{"error": "bad token secret-token"}"#,
            ),
        )]
    })
    .await;
    let h = searching(
        SearchProvider::Brave,
        &refusing.base,
        Some("secret-token"),
        5,
    )
    .await;
    let output = call(&h, "web_search", json!({"query": "tokio"})).await;
    assert_eq!(
        error_of(&output),
        r#"the search provider brave answered 401 Unauthorized (is tools.web.search.apiKey right?): {"error": "bad token [redacted]"}"#
    );
    assert!(!output.content.to_string().contains("secret-token"));
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn web_search_is_offered_only_with_a_provider() {
    let offered = |h: &TestEngine| -> Vec<String> {
        let agent = h.engine.config().agent("main");
        let tools = h.engine.runtime().tools_for(&h.key("main"), &agent);
        let web = tools.iter().filter(|t| t.name().starts_with("web_"));
        web.map(|t| {
            let hints = t.hints().unwrap();
            assert!(
                hints.read_only_hint && hints.open_world_hint,
                "{}",
                t.name()
            );
            t.name().to_string()
        })
        .collect()
    };
    let h = TestEngine::open(Config::default()).await;
    assert_eq!(offered(&h), ["web_fetch"]);
    let refused = h
        .engine
        .tools()
        .call(
            "main",
            "web_search",
            json!({"query": "x"}),
            Default::default(),
        )
        .await;
    let refused = refused.expect_err("no web_search without a provider");
    assert!(refused.to_string().contains("web_search"), "{refused}");
    h.engine.close().await;

    let h = searching(SearchProvider::Searxng, "http://127.0.0.1:9", None, 5).await;
    assert_eq!(offered(&h), ["web_fetch", "web_search"]);
    h.engine.close().await;
}
