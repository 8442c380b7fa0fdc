//! Our own CLI's small print (issue 35, point 4): advice in the flags of the command that gave
//! it, table cells cut between words, exit codes that say how a run ended.

use std::process::Output;

use serde_json::Value;

use super::process::{GatewayProcess, run};

fn text(output: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_refused_send_to_ones_own_session_advises_the_cli_flag() {
    let home = tempfile::tempdir().unwrap();
    let gateway = GatewayProcess::start(home.path());
    let sent = run(
        home.path(),
        &gateway.url,
        &["sessions", "send", "main", "hi"],
    );
    let (out, err) = text(&sent);
    assert!(!sent.status.success(), "{out}{err}");
    assert!(err.contains("send with --timeout 0"), "{err}");
    assert!(!err.contains("timeoutSeconds"), "{err}");
    gateway.stop();
}

#[test]
fn tools_list_cuts_descriptions_between_words() {
    let home = tempfile::tempdir().unwrap();
    let gateway = GatewayProcess::start(home.path());
    let listed = run(
        home.path(),
        &gateway.url,
        &["tools", "list", "--agent", "main", "--json"],
    );
    let tools: Value = serde_json::from_slice(&listed.stdout).unwrap();
    let table = run(home.path(), &gateway.url, &["tools", "list"]);
    let (table, err) = text(&table);
    let mut cut = 0;
    for tool in tools["tools"].as_array().unwrap() {
        let name = tool["name"].as_str().unwrap();
        let first = tool["description"]
            .as_str()
            .unwrap()
            .split(". ")
            .next()
            .unwrap();
        let row = table
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(name))
            .unwrap_or_else(|| panic!("{name} missing: {table}{err}"));
        let group = row.split_whitespace().next().unwrap();
        assert_eq!(Some(group), tool["group"].as_str(), "{row}");
        let cell = row[row.find(name).unwrap() + name.len()..].trim();
        if cell == first {
            continue;
        }
        cut += 1;
        let kept = cell.strip_suffix('…').unwrap_or_else(|| panic!("{row}"));
        assert!(first.starts_with(kept), "{row} / {first}");
        let next = first[kept.len()..].chars().next().unwrap();
        assert!(!next.is_alphanumeric(), "cut mid-word: {row} / {first}");
    }
    assert!(cut > 0, "no description was long enough to cut: {table}");
    // The built-ins by group: the file tools and the session tools.
    let grouped: Vec<(&str, &str)> = tools["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["group"].as_str().unwrap(), t["name"].as_str().unwrap()))
        .collect();
    for expected in [
        ("group:fs", "apply_patch"),
        ("group:fs", "read"),
        ("group:sessions", "sessions_spawn"),
    ] {
        assert!(grouped.contains(&expected), "{grouped:?}");
    }
    gateway.stop();
}

#[test]
fn config_check_json_prints_one_object_with_every_problem() {
    let home = tempfile::tempdir().unwrap();
    let check = |args: &[&str]| {
        std::process::Command::new(super::process::BIN)
            .args(["config", "check", "--json", "--state-dir"])
            .arg(home.path())
            .args(args)
            .env_remove("SWITCHBOARD_CONFIG")
            .output()
            .unwrap()
    };
    let clean = check(&[]);
    assert!(clean.status.success());
    let report: Value = serde_json::from_slice(&clean.stdout).unwrap();
    assert_eq!(
        report,
        serde_json::json!({"ok": true, "file": null, "errors": [], "unknown": []})
    );
    std::fs::write(
        home.path().join("config.json5"),
        "{\n  gateway: { bnd: \"lan\" },\n}\n",
    )
    .unwrap();
    let bad = check(&[]);
    assert!(!bad.status.success());
    let report: Value = serde_json::from_slice(&bad.stdout).unwrap();
    let file = home.path().join("config.json5").display().to_string();
    assert_eq!(
        report,
        serde_json::json!({
            "ok": false,
            "file": file,
            "errors": [{"line": 2, "path": "gateway.bnd",
                        "message": "unknown setting; did you mean `bind`?"}],
            "unknown": ["gateway.bnd"],
        })
    );
}

#[test]
fn call_agent_exits_non_zero_when_the_run_failed() {
    let home = tempfile::tempdir().unwrap();
    let gateway = GatewayProcess::start(home.path());
    let agent = |message: &str, key: &str| {
        let params = serde_json::json!({
            "message": message, "sessionKey": "main", "idempotencyKey": key,
        })
        .to_string();
        run(
            home.path(),
            &gateway.url,
            &["call", "agent", "--params", &params],
        )
    };
    let ok = agent("@reply fine", "k1");
    let (out, err) = text(&ok);
    assert!(ok.status.success(), "{out}{err}");
    assert_eq!(serde_json::from_str::<Value>(&out).unwrap()["status"], "ok");
    let failed = agent("@error upstream exploded", "k2");
    let (out, err) = text(&failed);
    assert_eq!(failed.status.code(), Some(1), "{out}{err}");
    assert_eq!(
        serde_json::from_str::<Value>(&out).unwrap()["status"],
        "error"
    );
    assert!(
        err.contains("the run ended with status error") && err.contains("upstream exploded"),
        "{err}"
    );
    gateway.stop();
}

#[test]
fn gateway_and_demo_neither_list_nor_accept_the_client_options() {
    let bin = |args: &[&str]| {
        std::process::Command::new(super::process::BIN)
            .args(args)
            .output()
            .unwrap()
    };
    for listener in ["gateway", "demo"] {
        let (help, _) = text(&bin(&[listener, "-h"]));
        for flag in ["--url", "--token", "--json"] {
            assert!(!help.contains(flag), "{listener} -h lists {flag}:\n{help}");
        }
    }
    let refused = bin(&["gateway", "--url", "ws://127.0.0.1:1", "--port", "0"]);
    let (_, err) = text(&refused);
    assert!(!refused.status.success());
    assert!(
        err.contains("--url is a client option; `switchboard gateway`"),
        "{err}"
    );
    // The client commands still list them.
    let (help, _) = text(&bin(&["sessions", "list", "-h"]));
    assert!(help.contains("--url") && help.contains("--json"), "{help}");
}

#[test]
fn sessions_history_shows_where_a_message_came_from_and_marks_a_skip() {
    let home = tempfile::tempdir().unwrap();
    let gateway = GatewayProcess::start(home.path());
    let cli = |args: &[&str]| {
        let output = run(home.path(), &gateway.url, args);
        let (out, err) = text(&output);
        assert!(output.status.success(), "{args:?}: {out}{err}");
        out
    };
    let sent = cli(&[
        "sessions",
        "send",
        "main",
        "@reply REPLY_SKIP",
        "--as",
        "agent:main:dev",
    ]);
    assert_eq!(sent.trim(), "REPLY_SKIP");
    let history = cli(&["sessions", "history", "main"]);
    let lines: Vec<&str> = history.lines().collect();
    assert!(
        lines.iter().any(
            |l| l.ends_with(" user (from agent:main:dev via sessions_send): @reply REPLY_SKIP")
        ),
        "{history}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.ends_with(" assistant: REPLY_SKIP [skip token: ends the reply-back]")),
        "{history}"
    );
    gateway.stop();
}

#[test]
fn client_commands_need_no_channel_secret_from_the_config() {
    let home = tempfile::tempdir().unwrap();
    let gateway = GatewayProcess::start(home.path());
    // The set-up docs/channels/telegram.md suggests, read by a shell without the variable.
    std::fs::write(
        home.path().join("config.json5"),
        r#"{ channels: { telegram: { enabled: true, botToken: "${TELEGRAM_BOT_TOKEN}" } } }"#,
    )
    .unwrap();
    for args in [&["call", "health"][..], &["pairing", "list"][..]] {
        let output = std::process::Command::new(super::process::BIN)
            .args(args)
            .arg("--state-dir")
            .arg(home.path())
            .env("SWITCHBOARD_URL", &gateway.url)
            .env_remove("TELEGRAM_BOT_TOKEN")
            .output()
            .unwrap();
        let (out, err) = text(&output);
        assert!(output.status.success(), "{args:?}: {out}{err}");
    }
    gateway.stop();
}

#[test]
fn call_params_must_be_an_object_of_named_fields() {
    let home = tempfile::tempdir().unwrap();
    // Refused before any gateway is reached: nothing listens at this URL.
    for (params, kind) in [
        ("[1]", "an array"),
        ("5", "a number"),
        ("\"main\"", "a string"),
    ] {
        let out = run(
            home.path(),
            "ws://127.0.0.1:9",
            &["call", "health", "--params", params],
        );
        let (_, stderr) = text(&out);
        assert!(!out.status.success(), "{params}");
        assert!(
            stderr.contains(&format!(
                "--params must be a JSON object of named fields (for example '{{\"limit\": 5}}'), got {kind}: {params}"
            )),
            "{params}: {stderr}"
        );
    }
}

#[test]
fn a_busy_port_is_said_once_with_what_to_do() {
    let home = tempfile::tempdir().unwrap();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let out = std::process::Command::new(super::process::BIN)
        .arg("--state-dir")
        .arg(home.path())
        .args(["gateway", "--port", &port])
        .env("SWITCHBOARD_LOG", "warn")
        .output()
        .unwrap();
    let (_, stderr) = text(&out);
    assert!(!out.status.success());
    assert!(
        stderr.contains(&format!(
            "error: cannot listen on 127.0.0.1:{port}: the port is in use (is another gateway, this one or the reference, running? stop it, or pick another port with --port or gateway.port)"
        )),
        "{stderr}"
    );
    assert_eq!(stderr.matches("in use").count(), 1, "said once: {stderr}");
}

/// The misuse corpus's CLI cases (crates/server/tests/corpus/misuse.jsonl, door `cli`): each
/// command fails, and says what was wrong in the command's own terms.
#[test]
fn the_cli_cases_of_the_misuse_corpus_are_refused_naming_what_was_wrong() {
    const CORPUS: &str = include_str!("../../../server/tests/corpus/misuse.jsonl");
    let home = tempfile::tempdir().unwrap();
    let gateway = GatewayProcess::start(home.path());
    let mut ran = 0;
    for line in CORPUS.lines().filter(|l| l.contains(r#""door": "cli""#)) {
        let case: Value = serde_json::from_str(line).unwrap();
        // `$busy_port`: a port something already listens on.
        let busy = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let busy_port = busy.local_addr().unwrap().port().to_string();
        let argv: Vec<&str> = case["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| match a.as_str().unwrap() {
                "$busy_port" => busy_port.as_str(),
                other => other,
            })
            .collect();
        // A case with a config runs in a state dir of its own holding it (`config check`), and
        // so does a second `gateway`: on the running one's state dir it would be refused before
        // its port is tried.
        let own = tempfile::tempdir().unwrap();
        let home = match case["config"].as_str() {
            Some(text) => {
                std::fs::write(own.path().join("config.json5"), text).unwrap();
                own.path()
            }
            None if argv.first() == Some(&"gateway") => own.path(),
            None => home.path(),
        };
        let out = run(home, &gateway.url, &argv);
        let (stdout, stderr) = text(&out);
        assert!(!out.status.success(), "{argv:?} succeeded: {stdout}");
        for name in case["names"].as_array().unwrap() {
            let name = name.as_str().unwrap();
            assert!(stderr.contains(name), "{argv:?}: no {name:?} in {stderr}");
        }
        ran += 1;
    }
    assert!(ran >= 5, "{ran} CLI cases");
    // The `trace` case: token counts leave in the OTLP export as integers, not text.
    assert!(CORPUS.lines().any(|l| l.contains(r#""door": "trace""#)));
    let counts = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(super::traces::token_counts());
    assert_eq!(
        counts,
        (
            Some(opentelemetry::Value::I64(12)),
            Some(opentelemetry::Value::I64(7))
        ),
        "gen_ai.usage.*_tokens are integers"
    );
    gateway.stop();
}
