//! The web page (SPEC §9.4): `GET /` serves it, `GET /ui/<file>` its scripts and styles, all
//! embedded in the binary (no CDN, no Node at build time). A WebSocket upgrade on `/` still
//! reaches the protocol: the page itself connects that way, with the token it was given in the
//! URL fragment (`#token=…`, never sent to the server in a request).
//!
//! Every answer carries a strict Content-Security-Policy: scripts and styles only from the
//! gateway itself, no inline code, no frames, no forms, connections only back to the gateway.
//! The page renders everything a model, a channel or a tool wrote as text (docs/web.md).

use std::sync::Arc;

use axum::Extension;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::ws::rejection::WebSocketUpgradeRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use crate::ServerState;
use crate::admission::Pending;

/// Only the gateway's own scripts, styles and socket; images from the gateway or inline data
/// (image blocks of a transcript); nothing may frame the page.
pub const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; \
     frame-ancestors 'none'";

/// One embedded file, as written and compressed (by `build.rs`, when the crate is built).
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static [u8],
    gzip: &'static [u8],
    brotli: &'static [u8],
    /// FNV-1a of the body, computed when the binary is built: the file's `ETag`.
    hash: u64,
}

/// `asset!("app.js", JS)` for `web/app.js`; `asset!("marked.esm.js" in "vendor/", JS)` for a
/// file of `web/vendor/`, served at `/ui/marked.esm.js`.
macro_rules! asset {
    ($name:literal, $type:expr) => {
        asset!($name in "", $type)
    };
    ($name:literal in $dir:literal, $type:expr) => {
        Asset {
            name: $name,
            content_type: $type,
            body: include_bytes!(concat!("../web/", $dir, $name)),
            gzip: include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".gz")),
            brotli: include_bytes!(concat!(env!("OUT_DIR"), "/", $name, ".br")),
            hash: fnv1a(include_bytes!(concat!("../web/", $dir, $name))),
        }
    };
}

const fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325_u64;
    let mut i = 0;
    while i < bytes.len() {
        hash = (hash ^ bytes[i] as u64).wrapping_mul(0x0100_0000_01b3);
        i += 1;
    }
    hash
}

const JS: &str = "text/javascript; charset=utf-8";

/// The page and everything it loads.
const ASSETS: &[Asset] = &[
    asset!("index.html", "text/html; charset=utf-8"),
    asset!("app.css", "text/css; charset=utf-8"),
    asset!("app.js", JS),
    asset!("gateway.js", JS),
    asset!("dom.js", JS),
    asset!("views.js", JS),
    asset!("sessions.js", JS),
    asset!("transcript.js", JS),
    asset!("header.js", JS),
    asset!("messages.js", JS),
    asset!("markdown.js", JS),
    asset!("exchanges.js", JS),
    asset!("composer.js", JS),
    asset!("agents.js", JS),
    asset!("approvals.js", JS),
    asset!("usage.js", JS),
    asset!("cron.js", JS),
    asset!("channels.js", JS),
    asset!("logs.js", JS),
    asset!("marked.esm.js" in "vendor/", JS),
];

/// How a file is sent: the encodings a browser accepts, best first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Brotli,
    Gzip,
    Identity,
}

impl Encoding {
    /// The best encoding `Accept-Encoding` allows: brotli, else gzip, else none. A coding with
    /// `q=0` is refused; `*` stands for any coding not named.
    fn chosen(headers: &HeaderMap) -> Self {
        let accepted = headers
            .get_all(header::ACCEPT_ENCODING)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .filter_map(|item| {
                let mut parts = item.split(';');
                let coding = parts.next()?.trim().to_ascii_lowercase();
                let refused = parts.any(|p| {
                    p.trim()
                        .strip_prefix("q=")
                        .is_some_and(|q| q.trim().parse::<f32>().is_ok_and(|q| q <= 0.0))
                });
                Some((coding, !refused))
            })
            .collect::<Vec<_>>();
        let allows = |name: &str| {
            accepted
                .iter()
                .find(|(c, _)| c == name)
                .or_else(|| accepted.iter().find(|(c, _)| c == "*"))
                .is_some_and(|(_, ok)| *ok)
        };
        if allows("br") {
            Self::Brotli
        } else if allows("gzip") {
            Self::Gzip
        } else {
            Self::Identity
        }
    }
}

/// `GET /`: the page, or the protocol for a WebSocket upgrade.
pub async fn root(
    state: State<Arc<ServerState>>,
    pending: Option<Extension<Pending>>,
    headers: HeaderMap,
    ws: Result<WebSocketUpgrade, WebSocketUpgradeRejection>,
) -> Response {
    match ws {
        Ok(ws) => crate::ws::upgrade(state, pending, ws).await,
        // An upgrade that went wrong says why, as before; a page load gets the page.
        Err(rejection) if headers.contains_key(header::UPGRADE) => rejection.into_response(),
        Err(_) => serve("index.html", &headers),
    }
}

/// `GET /ui/<file>`.
pub async fn file(Path(name): Path<String>, headers: HeaderMap) -> Response {
    serve(&name, &headers)
}

fn serve(name: &str, headers: &HeaderMap) -> Response {
    let Some(asset) = ASSETS.iter().find(|a| a.name == name) else {
        let known: Vec<&str> = ASSETS.iter().map(|a| a.name).collect();
        let message = format!("no such file: /ui/{name}; the page's files are {known:?}");
        return with_policy((StatusCode::NOT_FOUND, message).into_response());
    };
    let encoding = Encoding::chosen(headers);
    let (body, coding, suffix) = match encoding {
        Encoding::Brotli => (asset.brotli, Some("br"), "-br"),
        Encoding::Gzip => (asset.gzip, Some("gzip"), "-gz"),
        Encoding::Identity => (asset.body, None, ""),
    };
    // Each encoding is its own representation, with its own tag.
    let etag = format!("\"{:016x}{suffix}\"", asset.hash);
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .is_some_and(|v| v.as_bytes() == etag.as_bytes());
    let mut response = match fresh {
        true => StatusCode::NOT_MODIFIED.into_response(),
        false => ([(header::CONTENT_TYPE, asset.content_type)], body).into_response(),
    };
    let h = response.headers_mut();
    if let Ok(tag) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, tag);
    }
    if let Some(coding) = coding {
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static(coding));
    }
    h.insert(header::VARY, HeaderValue::from_static("accept-encoding"));
    // Checked every time (a new binary serves new files), answered 304 while unchanged.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    with_policy(response)
}

fn with_policy(mut response: Response) -> Response {
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_the_page_loads_is_embedded() {
        let html = std::str::from_utf8(ASSETS[0].body).unwrap();
        for part in html.split("/ui/").skip(1) {
            let name = part.split('"').next().unwrap();
            assert!(
                ASSETS.iter().any(|a| a.name == name),
                "index.html loads {name}, which is not embedded"
            );
        }
        for asset in ASSETS.iter().filter(|a| a.name.ends_with(".js")) {
            let text = std::str::from_utf8(asset.body).unwrap();
            for line in text.lines().filter(|l| l.starts_with("import ")) {
                let name = line.rsplit("./").next().unwrap().trim_end_matches("';");
                assert!(
                    ASSETS.iter().any(|a| a.name == name),
                    "{} imports {name}, which is not embedded",
                    asset.name
                );
            }
        }
    }

    /// A budget, not a timing: what a cold load transfers stays small enough to load anywhere,
    /// and the page's own code (the vendored markdown parser aside) stays small enough to read.
    #[test]
    fn the_page_stays_small() {
        let sent: usize = ASSETS.iter().map(|a| a.brotli.len()).sum();
        assert!(sent < 50 * 1024, "a cold load sends {sent} bytes");
        let ours: usize = ASSETS
            .iter()
            .filter(|a| a.name != "marked.esm.js")
            .map(|a| a.body.len())
            .sum();
        assert!(ours < 100 * 1024, "the page's own files weigh {ours} bytes");
    }

    #[test]
    fn every_file_is_smaller_compressed_and_gzip_holds_the_file() {
        use std::io::Read;
        for asset in ASSETS {
            assert!(asset.brotli.len() < asset.body.len(), "{}", asset.name);
            assert!(asset.gzip.len() < asset.body.len(), "{}", asset.name);
            let mut unzipped = Vec::new();
            flate2::read::GzDecoder::new(asset.gzip)
                .read_to_end(&mut unzipped)
                .unwrap();
            assert_eq!(unzipped, asset.body, "{}", asset.name);
        }
    }

    fn accepting(value: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::ACCEPT_ENCODING,
            HeaderValue::from_str(value).unwrap(),
        );
        headers
    }

    #[test]
    fn the_best_accepted_encoding_is_chosen() {
        use Encoding::*;
        let cases = [
            ("gzip, deflate, br, zstd", Brotli),
            ("gzip", Gzip),
            ("br;q=0, gzip;q=0.5", Gzip),
            ("BR", Brotli),
            ("*", Brotli),
            ("*;q=0", Identity),
            ("br;q=0, *", Gzip),
            ("identity", Identity),
            ("", Identity),
        ];
        for (value, expected) in cases {
            assert_eq!(Encoding::chosen(&accepting(value)), expected, "{value:?}");
        }
        assert_eq!(Encoding::chosen(&HeaderMap::new()), Identity);
    }

    #[test]
    fn a_compressed_answer_says_so_and_has_its_own_tag() {
        let plain = serve("app.js", &HeaderMap::new());
        let br = serve("app.js", &accepting("gzip, br"));
        assert_eq!(br.headers()[header::CONTENT_ENCODING], "br");
        assert_eq!(br.headers()[header::VARY], "accept-encoding");
        assert!(plain.headers().get(header::CONTENT_ENCODING).is_none());
        assert_ne!(plain.headers()[header::ETAG], br.headers()[header::ETAG]);
        let mut again = accepting("gzip, br");
        again.insert(header::IF_NONE_MATCH, br.headers()[header::ETAG].clone());
        assert_eq!(serve("app.js", &again).status(), StatusCode::NOT_MODIFIED);
    }

    #[test]
    fn no_page_file_writes_html_from_strings() {
        for asset in ASSETS.iter().filter(|a| a.name.ends_with(".js")) {
            let text = std::str::from_utf8(asset.body).unwrap();
            for sink in [
                "innerHTML",
                "outerHTML",
                "insertAdjacentHTML",
                "document.write",
            ] {
                assert!(!text.contains(sink), "{} uses {sink}", asset.name);
            }
        }
    }
}
