//! MCP with a client this project did not write: the official MCP Python SDK (PyPI `mcp`, pinned
//! below) drives `switchboard mcp --session …` (stdio, spawned by the SDK) and the gateway's
//! `/mcp` (streamable HTTP) against a real gateway process. The checks are the Python scripts in
//! `tests/mcp_client/`; each exits non-zero on the first failed expectation.
//!
//! The SDK is installed on first use into a venv under the test target dir (one install for
//! every test and process: a file lock), so `cargo test --workspace` needs no manual step. An
//! install that fails fails the tests with pip's output; nothing is skipped.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use serde_json::{Value, json};

use super::process::{BIN, GatewayProcess};

/// The client under test: the official MCP Python SDK, pinned.
const MCP_SDK: &str = "mcp==2.3.0";

const SCRIPTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/mcp_client");

/// A Python with the SDK installed, made once.
fn python() -> &'static Path {
    static PYTHON: OnceLock<PathBuf> = OnceLock::new();
    PYTHON.get_or_init(install_sdk)
}

/// The SDK in a venv under the target dir (the test kit installs it once, behind a lock). A
/// machine that cannot make a venv fails the tests: nothing is skipped.
fn install_sdk() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    switchboard_testkit::mcp_servers::python_with(tmp, MCP_SDK)
        .unwrap_or_else(|missing| panic!("the MCP Python SDK needs {}", missing.0))
}

/// A gateway method through `switchboard call`.
fn call(home: &Path, url: &str, method: &str, params: Value) -> Value {
    let output = Command::new(BIN)
        .args([
            "call",
            method,
            "--params",
            &params.to_string(),
            "--state-dir",
        ])
        .arg(home)
        .env("SWITCHBOARD_URL", url)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{method} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// A gateway with a sandboxed agent and the sessions the scripts expect; answers it and the
/// facts file the scripts read.
fn seeded_gateway(home: &Path) -> (GatewayProcess, PathBuf) {
    std::fs::write(
        home.join("config.json5"),
        r#"{ agents: { list: [ { id: "main", default: true },
                               { id: "boxed", sandbox: { mode: "all" } } ] } }"#,
    )
    .unwrap();
    let gateway = GatewayProcess::start(home);
    let url = gateway.url.clone();
    let call = |method: &str, params: Value| call(home, &url, method, params);

    // Each agent's main session exists from the first start: the MCP clients act as
    // agent:main:main and agent:boxed:main with no sessions.create.
    let group = "agent:main:discord:group:dev";
    call(
        "chat.inject",
        json!({"sessionKey": group, "message": "deploy done"}),
    );
    for transport in ["stdio", "http"] {
        call(
            "sessions.create",
            json!({"key": format!("agent:main:cron:slow-{transport}")}),
        );
    }
    let hidden = "agent:boxed:cron:nightly";
    call(
        "chat.inject",
        json!({"sessionKey": hidden, "message": "secret nightly"}),
    );
    let hidden_id = call("sessions.resolve", json!({"key": hidden}))["sessionId"].clone();
    let child = "agent:boxed:subagent:6f1c2a7e-0b8d-4c1e-9a53-2d4f8e6b7c10";
    call("sessions.create", json!({"key": child}));
    call(
        "sessions.patch",
        json!({"key": child, "spawnedBy": "agent:boxed:main"}),
    );
    call(
        "chat.inject",
        json!({"sessionKey": child, "message": "child result"}),
    );
    let tools = call("tools.list", json!({"sessionKey": "main"}));

    let facts = json!({
        "expectedTools": tools["tools"],
        "group": group,
        "groupText": "deploy done",
        "slow": {"stdio": "agent:main:cron:slow-stdio", "http": "agent:main:cron:slow-http"},
        "boxed": "agent:boxed:main",
        "hidden": hidden,
        "hiddenSessionId": hidden_id,
        "hiddenText": "secret nightly",
        "otherAgent": group,
        "child": child,
    });
    let path = home.join("mcp-facts.json");
    std::fs::write(&path, facts.to_string()).unwrap();
    (gateway, path)
}

/// Runs a script of `tests/mcp_client` over `transport`; panics with its output on failure.
fn script(name: &str, transport: &str, home: &Path, gateway: &GatewayProcess, facts: &Path) {
    let mut command = Command::new(python());
    command
        .arg(Path::new(SCRIPTS).join(name))
        .args(["--transport", transport, "--token", &gateway.token])
        .arg("--facts")
        .arg(facts)
        .current_dir(SCRIPTS)
        .env("PYTHONDONTWRITEBYTECODE", "1");
    match transport {
        "stdio" => command
            .args(["--bin", BIN, "--gateway-url", &gateway.url])
            .arg("--state-dir")
            .arg(home),
        _ => command.args([
            "--mcp-url",
            &format!("{}/mcp", gateway.url.replacen("ws://", "http://", 1)),
        ]),
    };
    let Output {
        status,
        stdout,
        stderr,
    } = command.output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&stdout),
        String::from_utf8_lossy(&stderr),
    );
    assert!(
        status.success(),
        "{name} over {transport} failed ({status})\n--- stdout\n{stdout}\n--- stderr\n{stderr}"
    );
    print!("{stdout}");
}

fn over(transport: &str) {
    let home = tempfile::tempdir().unwrap();
    let (gateway, facts) = seeded_gateway(home.path());
    script("session_tools.py", transport, home.path(), &gateway, &facts);
    script("sandbox.py", transport, home.path(), &gateway, &facts);
    gateway.stop();
}

#[test]
fn the_python_sdk_uses_the_session_tools_over_stdio() {
    over("stdio");
}

#[test]
fn the_python_sdk_uses_the_session_tools_over_streamable_http() {
    over("http");
}
