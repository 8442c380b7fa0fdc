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

/// One embedded file.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static [u8],
    /// FNV-1a of the body, computed when the binary is built: the file's `ETag`.
    hash: u64,
}

macro_rules! asset {
    ($name:literal, $type:expr) => {
        Asset {
            name: $name,
            content_type: $type,
            body: include_bytes!(concat!("../web/", $name)),
            hash: fnv1a(include_bytes!(concat!("../web/", $name))),
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
    asset!("sessions.js", JS),
    asset!("transcript.js", JS),
    asset!("messages.js", JS),
    asset!("exchanges.js", JS),
    asset!("composer.js", JS),
    asset!("agents.js", JS),
];

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
    let etag = format!("\"{:016x}\"", asset.hash);
    let fresh = headers
        .get(header::IF_NONE_MATCH)
        .is_some_and(|v| v.as_bytes() == etag.as_bytes());
    let mut response = match fresh {
        true => StatusCode::NOT_MODIFIED.into_response(),
        false => ([(header::CONTENT_TYPE, asset.content_type)], asset.body).into_response(),
    };
    let h = response.headers_mut();
    if let Ok(tag) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, tag);
    }
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

    /// A budget, not a timing: the page stays small enough to read and to load anywhere.
    #[test]
    fn the_page_stays_under_100_kb() {
        let weight: usize = ASSETS.iter().map(|a| a.body.len()).sum();
        assert!(weight < 100 * 1024, "the page's files weigh {weight} bytes");
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
