//! The CLI against a real gateway process: the start banner, client commands, config checks.

use std::io::{BufRead, BufReader};
use std::process::{Command, Output, Stdio};

use super::process::{BIN, GatewayProcess, run};

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn gateway_prints_where_to_connect_and_client_commands_work() {
    let home = tempfile::tempdir().unwrap();
    let gateway = GatewayProcess::start(home.path());
    assert!(
        gateway.banner[0].contains("gateway listening on ws://127.0.0.1:"),
        "{:?}",
        gateway.banner
    );
    // Stdout is a pipe here, as under a service manager: the page's address without the token,
    // and where the token is.
    let port = gateway
        .url
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches('/');
    let token_file = home.path().join("gateway-token").display().to_string();
    let base = format!("http://127.0.0.1:{port}/");
    let web = format!(
        "web:    {base}  (sign in with the token from {token_file}, or open {base}#token=<token>)"
    );
    assert!(
        gateway.banner.iter().any(|l| l.trim() == web),
        "{:?}",
        gateway.banner
    );
    assert!(
        gateway
            .banner
            .iter()
            .all(|l| !l.contains(gateway.token.as_str())),
        "{:?}",
        gateway.banner
    );
    assert!(
        gateway
            .banner
            .iter()
            .any(|l| l.contains("token:") && l.contains(&token_file)),
        "{:?}",
        gateway.banner
    );

    let url = gateway.url.clone();
    let inject = run(
        home.path(),
        &url,
        &[
            "call",
            "chat.inject",
            "--params",
            r#"{"sessionKey":"discord:group:ops","message":"deploy done"}"#,
        ],
    );
    assert!(
        inject.status.success(),
        "{}",
        String::from_utf8_lossy(&inject.stderr)
    );
    let list = run(home.path(), &url, &["sessions", "list"]);
    let table = stdout(&list);
    assert!(table.starts_with("KEY"), "{table}");
    assert!(
        table.contains("agent:main:discord:group:ops")
            && table.contains("group")
            && table.contains("discord"),
        "{table}"
    );
    let json_list = run(
        home.path(),
        &url,
        &["sessions", "list", "--json", "--kinds", "group"],
    );
    let value: serde_json::Value = serde_json::from_slice(&json_list.stdout).unwrap();
    assert_eq!(value["count"], 1);
    // send and history go through the session tools, acting as the main session.
    let sent = run(
        home.path(),
        &url,
        &[
            "sessions",
            "send",
            "discord:group:ops",
            "@reply ack from ops",
        ],
    );
    assert_eq!(
        stdout(&sent).trim(),
        "ack from ops",
        "{}",
        String::from_utf8_lossy(&sent.stderr)
    );
    let missing = run(home.path(), &url, &["sessions", "send", "nowhere", "hi"]);
    assert!(!missing.status.success());
    assert!(
        String::from_utf8_lossy(&missing.stderr).contains("No session found: agent:main:nowhere")
    );
    let history = run(
        home.path(),
        &url,
        &["sessions", "history", "discord:group:ops"],
    );
    let lines: Vec<String> = stdout(&history).lines().map(str::to_string).collect();
    assert_eq!(
        lines.first().map(String::as_str),
        Some("#1 assistant: deploy done"),
        "{lines:?}"
    );
    assert!(
        lines.iter().any(|l| l.ends_with("assistant: ack from ops")),
        "{lines:?}"
    );
    let patch = run(
        home.path(),
        &url,
        &[
            "sessions",
            "patch",
            "discord:group:ops",
            "--label",
            "ops",
            "--send-policy",
            "deny",
        ],
    );
    assert!(patch.status.success());
    let resolved = run(
        home.path(),
        &url,
        &["call", "sessions.resolve", "--params", r#"{"label":"ops"}"#],
    );
    assert!(stdout(&resolved).contains("agent:main:discord:group:ops"));
    let agents = run(home.path(), &url, &["agents", "list"]);
    assert!(stdout(&agents).contains("builtin/scripted"));
    let deleted = run(
        home.path(),
        &url,
        &["sessions", "delete", "discord:group:ops"],
    );
    assert!(stdout(&deleted).starts_with("deleted agent:main:discord:group:ops"));

    // A reader that went away (`switchboard call … | head`) ends the command quietly.
    for command in [&["call", "sessions.list"][..], &["sessions", "list"]] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let piped = Command::new(BIN)
            .args(command)
            .arg("--state-dir")
            .arg(home.path())
            .env("SWITCHBOARD_URL", &url)
            .stdout(writer)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&piped.stderr);
        assert!(
            piped.status.success() && stderr.is_empty(),
            "{command:?}: {stderr}"
        );
    }

    let bad = run(home.path(), &url, &["call", "no.such.method"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown method: no.such.method"));
    let wrong_token = Command::new(BIN)
        .args(["sessions", "list", "--token", "nope", "--url", &url])
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&wrong_token.stderr).contains("UNAUTHORIZED"));
    gateway.stop();
}

#[test]
fn config_check_reports_unknown_paths_and_bad_values() {
    let home = tempfile::tempdir().unwrap();
    let check = |text: &str| {
        std::fs::write(home.path().join("config.json5"), text).unwrap();
        Command::new(BIN)
            .args(["config", "check", "--state-dir"])
            .arg(home.path())
            .output()
            .unwrap()
    };
    let ok = check("{ gateway: { port: 18800 } }");
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    // Each chat channel's section with the keys its docs name.
    for section in [
        "discord: { enabled: true, botToken: 'b', apiBase: 'http://127.0.0.1:9/api/v10', gatewayUrl: 'ws://127.0.0.1:9' }",
        "slack: { enabled: true, botToken: 'xoxb-1', appToken: 'xapp-1', apiBase: 'http://127.0.0.1:9/api' }",
        "whatsapp: { enabled: true, accessToken: 'a', phoneNumberId: '106540352242922', appSecret: 's', verifyToken: 'v', apiBase: 'http://127.0.0.1:9' }",
        "matrix: { enabled: true, homeserver: 'http://127.0.0.1:9', userId: '@bot:localhost', accessToken: 't' }",
        "signal: { enabled: true, account: '+15550001111', httpUrl: 'http://127.0.0.1:9', dmPolicy: 'pairing', allowFrom: ['+1 555 0100'], owners: [], groupPolicy: 'allowlist', groups: { 'aGVsbG8=': { requireMention: false } }, groupAllowFrom: [], requireMention: true }",
    ] {
        let accepted = check(&format!("{{ channels: {{ {section} }} }}"));
        let err = String::from_utf8_lossy(&accepted.stderr);
        assert!(accepted.status.success(), "{section}: {err}");
    }
    let unknown =
        check("{ gateway: { prot: 1 }, agents: { list: [{ id: 'main', colour: 'red' }] } }");
    assert!(!unknown.status.success());
    let err = String::from_utf8_lossy(&unknown.stderr);
    assert!(
        err.contains("gateway.prot") && err.contains("agents.list[0].colour"),
        "{err}"
    );
    let bad = check("{ agents: { defaults: { sandbox: { mode: 'sometimes' } } } }");
    assert!(!bad.status.success());
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("agents.defaults.sandbox.mode")
            && err.contains("sometimes")
            && err.contains("non-main"),
        "{err}"
    );

    // The gateway refuses to start on a bad config, and on an open bind beyond loopback.
    let refused = Command::new(BIN)
        .args(["gateway", "--port", "0", "--state-dir"])
        .arg(home.path())
        .output()
        .unwrap();
    assert!(!refused.status.success());
    std::fs::write(
        home.path().join("config.json5"),
        "{ gateway: { auth: { mode: 'none' } } }",
    )
    .unwrap();
    let open = Command::new(BIN)
        .args(["gateway", "--port", "0", "--bind", "lan", "--state-dir"])
        .arg(home.path())
        .output()
        .unwrap();
    assert!(!open.status.success());
    assert!(
        String::from_utf8_lossy(&open.stderr).contains("without a token"),
        "{}",
        String::from_utf8_lossy(&open.stderr)
    );
}

#[test]
fn the_gateway_warns_about_unknown_settings_at_start_up_and_still_runs() {
    use std::io::{BufRead, BufReader};
    let home = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.json5"),
        "{ gateway: { prot: 1 }, sesion: {} }",
    )
    .unwrap();
    let mut child = Command::new(BIN)
        .args(["gateway", "--port", "0", "--state-dir"])
        .arg(home.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let warnings: Vec<String> = (0..2).map(|_| stderr.next().unwrap().unwrap()).collect();
    let mut stdout = BufReader::new(child.stdout.take().unwrap()).lines();
    let banner = stdout.next().unwrap().unwrap();
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("ignoring unknown config setting") && w.contains("gateway.prot")),
        "{warnings:?}"
    );
    assert!(
        warnings.iter().any(|w| w.contains("sesion")),
        "{warnings:?}"
    );
    assert!(banner.contains("gateway listening on ws://"), "{banner}");
}

/// On a terminal the banner's link carries the token, so a person at the console can click it
/// (`script`, from util-linux, gives the gateway a pseudo-terminal as its stdout).
#[test]
fn on_a_terminal_the_web_link_carries_the_token() {
    if Command::new("script").arg("--version").output().is_err() {
        return switchboard_testkit::not_run(
            "gateway banner test on_a_terminal_the_web_link_carries_the_token NOT RUN: \
             `script` not found (apt-get install bsdutils)",
        );
    }
    let home = tempfile::tempdir().unwrap();
    let gateway = format!(
        "exec '{BIN}' --state-dir '{}' gateway --port 0",
        home.path().display()
    );
    let mut script = Command::new("script")
        .args(["-q", "-e", "-c", &gateway, "/dev/null"])
        .env("SWITCHBOARD_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = BufReader::new(script.stdout.take().unwrap()).lines();
    let web = lines
        .map_while(Result::ok)
        .find(|l| l.contains("web:"))
        .unwrap_or_default();
    // Killing `script` closes the terminal; the gateway gets SIGHUP and ends with it.
    script.kill().unwrap();
    script.wait().unwrap();
    let token = std::fs::read_to_string(home.path().join("gateway-token")).unwrap();
    let link = format!("/#token={}", token.trim());
    assert!(web.trim_end().ends_with(&link), "{web:?}");
}
