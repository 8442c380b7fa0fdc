//! `mcp.servers`: what is accepted, and the errors that name what is.

use pretty_assertions::assert_eq;

use super::{error_text, load};

#[test]
fn a_stdio_and_an_http_server_load_with_their_defaults() {
    let loaded = load(
        r#"{ mcp: { servers: {
            time: { command: "python3", args: ["-m", "mcp_server_time"], env: { TZ: "UTC" } },
            "every-thing": { url: "http://127.0.0.1:3001/mcp", headers: { Authorization: "Bearer x" },
                             timeoutSeconds: 5, tools: { deny: ["toggle-*"] } },
        } } }"#,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    let servers = &loaded.config.mcp.servers;
    assert!(servers["time"].enabled);
    assert_eq!(servers["time"].timeout_seconds, 60);
    assert_eq!(servers["every-thing"].tools.deny, ["toggle-*"]);
    let shown = serde_json::to_value(loaded.config.redacted()).unwrap();
    assert_eq!(
        shown["mcp"]["servers"]["every-thing"]["headers"]["Authorization"],
        "[redacted]"
    );
    assert_eq!(shown["mcp"]["servers"]["time"]["env"]["TZ"], "[redacted]");
}

#[test]
fn bad_servers_are_refused_saying_what_is_accepted() {
    let text = error_text(
        r#"{ mcp: { servers: {
            "a__b": { command: "x" },
            both: { command: "x", url: "http://127.0.0.1/mcp" },
            neither: {},
            web: { url: "ftp://example/mcp", timeoutSeconds: 0 },
        } } }"#,
    );
    for expected in [
        "mcp.servers.a__b: \"a__b\" is not allowed; expected a server name matching ^[A-Za-z0-9_-]{1,32}$ without \"__\"",
        "mcp.servers.both: a server with command and url set, or neither is not allowed; expected either command (stdio: a program to start) or url (streamable HTTP)",
        "mcp.servers.neither: a server with command and url set, or neither",
        "mcp.servers.web.url: \"ftp://example/mcp\" is not allowed; expected an http:// or https:// URL",
        "mcp.servers.web.timeoutSeconds: 0 is not allowed; expected an integer 1–3600",
    ] {
        assert!(text.contains(expected), "{expected:?} in:\n{text}");
    }
}
