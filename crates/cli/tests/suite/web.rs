//! The web page in real headless Chromium: `tests/web/page.mjs` (Playwright's `playwright-core`,
//! pinned below) drives the page of a real `switchboard gateway` process through every scenario
//! of the page: the token, the live list, streaming, send policy, sub-agents, agent-to-agent
//! exchanges, hostile text, 10,000 sessions, a gateway restart, markdown, the run header, a
//! compaction, the keyboard, dark mode and a phone's screen, with axe-core's accessibility check
//! on every screen. The model of the streaming scenario is the mock LLM over HTTP (OpenAI wire
//! format); the others use `builtin/scripted`. The run takes the pictures of docs/web.md
//! (docs/web/*.png).
//!
//! playwright-core and axe-core are installed on first use into the test target dir with npm
//! (one install for every process: a file lock). Without Chromium (`/usr/bin/chromium`, or `CHROMIUM`) or Node the
//! test cannot run: it says so, naming what is missing, on the terminal, and does nothing else.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use switchboard_testkit::{MockLlm, MockReply};

use super::process::BIN;

/// The browser driver (Playwright's library without its browser downloads) and the
/// accessibility checker, pinned.
const NODE_PACKAGES: &[&str] = &["playwright-core@1.64.1", "axe-core@4.14.1"];
/// The scripts: the scenarios, and the operator screens' (imported by the first).
const SCRIPTS: &[&str] = &[
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/web/page.mjs"),
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/web/ops.mjs"),
];
/// Where the run puts its pictures: docs/web (the ones docs/web.md shows) when
/// `SWITCHBOARD_DOC_SHOTS` is set, else under `target/tmp`, so a test run leaves the tree as it
/// was (the pictures show times).
fn shots() -> String {
    match std::env::var_os("SWITCHBOARD_DOC_SHOTS") {
        Some(_) => concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/web").to_string(),
        None => concat!(env!("CARGO_TARGET_TMPDIR"), "/web-shots").to_string(),
    }
}

/// How many scenarios page.mjs runs (each prints `ok <name>`).
const SCENARIOS: usize = 24;

/// The name the not-run line gives for the scenarios' test.
const PAGE_TEST: &str = "the_page_works_in_headless_chromium";

/// The streamed reply of the streaming scenario (page.mjs expects these words).
const STREAMED: &str = "Streaming replies arrive word by word.";

/// Chromium: `CHROMIUM` when set, else Debian's.
fn chromium() -> Option<PathBuf> {
    let path = std::env::var_os("CHROMIUM")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/chromium"));
    path.exists().then_some(path)
}

fn has_node() -> bool {
    Command::new("node")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Says that a page test did not run, and why (a failure under `CI=true`).
fn not_run(test: &str, missing: &str) {
    switchboard_testkit::not_run(&format!(
        "web page test {test} NOT RUN: {missing} (.ci/run installs it; see docs/web.md)"
    ));
}

/// A folder with the node packages installed, made once.
fn playwright() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let dir = tmp.join(format!("web-{}", NODE_PACKAGES.join("-").replace('@', "-")));
    let installed = dir.join("installed");
    std::fs::create_dir_all(&dir).unwrap();
    let lock = File::create(tmp.join("web-node.lock")).unwrap();
    lock.lock().unwrap();
    if !installed.exists() {
        let output = Command::new("npm")
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&dir)
            .args(NODE_PACKAGES)
            .output()
            .unwrap_or_else(|e| panic!("running npm to install {NODE_PACKAGES:?}: {e}"));
        assert!(
            output.status.success(),
            "installing {NODE_PACKAGES:?} with npm failed:\n{}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        std::fs::write(&installed, NODE_PACKAGES.join("\n")).unwrap();
    }
    // Bare imports resolve from the script's folder: the scripts run from beside node_modules.
    for script in SCRIPTS {
        let name = Path::new(script).file_name().unwrap();
        std::fs::copy(script, dir.join(name)).unwrap();
    }
    dir
}

/// Agents on the scripted model, `writer` on the mock model over HTTP, and `fallback` on a
/// model nothing answers (a closed loopback port), with the scripted model as its fallback;
/// WhatsApp for a stranger's pairing request (its Graph API a closed port: the code's delivery
/// fails and is retried, which the page does not need).
fn config(home: &Path, mock: &MockLlm) {
    let config = format!(
        r#"{{
  models: {{ providers: {{ mock: {{ api: "openai-completions", baseUrl: "{}",
                                   models: [{{ id: "writer", contextWindow: 32000,
                                              cost: {{ input: 3, output: 15 }} }}] }},
                         dead: {{ api: "openai-completions", baseUrl: "http://127.0.0.1:9/v1",
                                  maxRetries: 0, models: [{{ id: "gone" }}] }} }} }},
  agents: {{ list: [ {{ id: "main", default: true, tools: {{ profile: "full" }} }},
                     {{ id: "writer", model: "mock/writer" }},
                     {{ id: "fallback", model: {{ primary: "dead/gone",
                                                  fallbacks: ["builtin/scripted"] }} }} ] }},
  channels: {{ whatsapp: {{ enabled: true, accessToken: "page-token", phoneNumberId: "1065000",
                           appSecret: "page-app-secret", verifyToken: "page-verify",
                           apiBase: "http://127.0.0.1:9/v21.0" }} }},
}}"#,
        mock.openai_base_url()
    );
    std::fs::write(home.join("config.json5"), config).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_works_in_headless_chromium() {
    let Some(chromium) = chromium() else {
        return not_run(
            PAGE_TEST,
            "Chromium not found at /usr/bin/chromium (apt-get install chromium, or set CHROMIUM)",
        );
    };
    if !has_node() {
        return not_run(
            PAGE_TEST,
            "node not found on PATH (apt-get install nodejs npm)",
        );
    }
    let dir = tokio::task::spawn_blocking(playwright).await.unwrap();
    let home = tempfile::tempdir().unwrap();
    let mock = MockLlm::start().await;
    let chunks = STREAMED.split_inclusive(' ').map(str::to_string).collect();
    mock.set_fallback(MockReply::Slow {
        chunks,
        delay: Duration::from_millis(300),
    });
    config(home.path(), &mock);
    let mut node = Command::new("node");
    node.arg(dir.join("page.mjs"))
        .current_dir(&dir)
        .env("SWITCHBOARD_BIN", BIN)
        .env("STATE_DIR", home.path())
        .env("CHROMIUM", &chromium)
        .env("SHOTS", shots());
    // The mock model answers on this runtime while the script runs.
    let output = tokio::task::spawn_blocking(move || node.output())
        .await
        .unwrap()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let report = format!("{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let failure = home.path().join("failure.png");
    if failure.exists() {
        let kept = dir.join("failure.png");
        let _ = std::fs::copy(&failure, &kept);
        eprintln!("a screenshot of the failure: {}", kept.display());
    }
    assert!(output.status.success(), "the page failed:\n{report}");
    let passed = stdout.lines().filter(|l| l.starts_with("ok ")).count();
    assert_eq!(passed, SCENARIOS, "every scenario reports ok:\n{report}");
    mock.stop().await;
}

/// What `switchboard gateway` prints is enough: Chromium's `--dump-dom` of the printed address
/// with the stored token, a plain page load with no script of ours driving it, lists an existing
/// session by its label.
#[test]
fn dump_dom_of_the_printed_url_lists_the_sessions() {
    let Some(chromium) = chromium() else {
        return not_run(
            "dump_dom_of_the_printed_url_lists_the_sessions",
            "Chromium not found at /usr/bin/chromium (apt-get install chromium, or set CHROMIUM)",
        );
    };
    let home = tempfile::tempdir().unwrap();
    let gateway = super::process::GatewayProcess::start(home.path());
    let params = r#"{"key": "agent:main:dumped", "label": "Label seen by dump-dom"}"#;
    let created = super::process::run(
        home.path(),
        &gateway.url,
        &["call", "sessions.create", "--params", params],
    );
    assert!(created.status.success(), "{created:?}");
    // The printed address, with the token from the token file (the banner carries it only on
    // a terminal).
    let address = gateway
        .banner
        .iter()
        .find_map(|l| l.trim().strip_prefix("web:"))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap()
        .to_string();
    let page = format!("{address}#token={}", gateway.token);
    let profile = tempfile::tempdir().unwrap();
    let dumped = Command::new(chromium)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
            "--dump-dom",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(&page)
        .output()
        .unwrap();
    let dom = String::from_utf8_lossy(&dumped.stdout);
    assert!(
        dom.contains("Label seen by dump-dom"),
        "the dumped page lists the session:\n{dom}"
    );
    gateway.stop();
}
