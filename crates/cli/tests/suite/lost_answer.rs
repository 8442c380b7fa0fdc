//! A `kill -9` while a run waits in a tool that is not safe to run twice (SPEC §6.3): after the
//! restart the tool is not called again, the run ends `aborted`, and the Telegram chat gets
//! exactly one message back — the notice that the answer was lost — and is answered after it.
//!
//! The tool is an MCP tool without annotations (so nothing says it may be repeated), served by a
//! few lines on the official MCP Python SDK (the venv of the PyPI `mcp-server-time` has it).

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use switchboard_testkit::{FakeTelegram, mcp_servers};

use super::process::{GatewayProcess, run, until};

const TOKEN: &str = "123456:lost-answer-token";
const BOUND: Duration = Duration::from_secs(60);

/// A tool that takes a minute and says nothing about being safe to repeat.
const SERVER: &str = r#"
import asyncio
from mcp.server.mcpserver import MCPServer

server = MCPServer("billing")

@server.tool()
async def charge(amount: int = 1) -> str:
    """Charges the card (slowly)."""
    await asyncio.sleep(60)
    return f"charged {amount}"

server.run()
"#;

fn write_config(home: &Path, fake: &FakeTelegram, python: &Path) {
    let script = home.join("billing.py");
    std::fs::write(&script, SERVER).unwrap();
    let config = format!(
        r#"{{ channels: {{ telegram: {{ enabled: true, botToken: "{TOKEN}", apiBase: "{}",
                                     dmPolicy: "open", pollTimeoutSeconds: 1 }} }},
             mcp: {{ servers: {{ billing: {{ command: "{}", args: ["{}"] }} }} }} }}"#,
        fake.api_base(),
        python.display(),
        script.display()
    );
    std::fs::write(home.join("config.json5"), config).unwrap();
}

/// Whether main's transcript has the model's call of `tool` (the run waits in it).
fn calling(home: &Path, url: &str, tool: &str) -> bool {
    let params = r#"{"sessionKey": "main"}"#;
    let history = run(home, url, &["call", "chat.history", "--params", params]);
    let history: Value = serde_json::from_slice(&history.stdout).unwrap_or_default();
    history
        .to_string()
        .contains(&format!("\"name\":\"{tool}\""))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_in_a_tool_not_safe_to_repeat_sends_one_notice_and_nothing_else() {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let python = match mcp_servers::time_server(tmp) {
        Ok(python) => python,
        Err(missing) => return mcp_servers::not_run("kill_9_in_a_tool_not_safe", &missing),
    };
    let fake = FakeTelegram::start(TOKEN).await;
    let home = tempfile::tempdir().unwrap();
    write_config(home.path(), &fake, &python);
    let gateway = GatewayProcess::start(home.path());
    fake.private_message(
        42,
        "alice",
        "@tool billing__charge {\"amount\": 5}\n@reply charged",
    );
    until(async || calling(home.path(), &gateway.url, "billing__charge").then_some(())).await;
    gateway.kill_9();

    let gateway = GatewayProcess::start(home.path());
    let sent = tokio::time::timeout(BOUND, fake.wait_sent(1))
        .await
        .expect("the chat was told");
    let notice = sent[0]["text"].as_str().unwrap();
    assert!(
        notice.starts_with(
            "⚠️ My answer to your message was lost: the gateway stopped while the tool \
             billing__charge was running, and billing__charge is not safe to run twice."
        ),
        "{notice}"
    );
    // The chat goes on; the notice was the one message for the lost answer.
    fake.private_message(42, "alice", "@reply still here");
    let sent = tokio::time::timeout(BOUND, fake.wait_sent(2))
        .await
        .expect("the bot answered");
    let texts: Vec<&str> = sent.iter().map(|m| m["text"].as_str().unwrap()).collect();
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert_eq!(texts[1], "still here");
    gateway.stop();
    fake.stop().await;
}
