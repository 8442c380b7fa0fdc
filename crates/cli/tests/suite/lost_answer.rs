//! A `kill -9` while a run waits in a tool that is not safe to run twice (SPEC §6.3): after the
//! restart the tool is not called again, the run ends `aborted`, and the chat — on Telegram,
//! Discord and WhatsApp — gets exactly one message back, the notice that the answer was lost,
//! and is answered after it.
//!
//! The tool is an MCP tool without annotations (so nothing says it may be repeated), served by a
//! few lines on the official MCP Python SDK (the venv of the PyPI `mcp-server-time` has it).

use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use switchboard_testkit::whatsapp::FakeWhatsApp;
use switchboard_testkit::{FakeDiscord, FakeTelegram, mcp_servers};

use super::process::{GatewayProcess, run, until};

const TOKEN: &str = "123456:lost-answer-token";
const DISCORD_TOKEN: &str = "discord-lost-answer-token";
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

/// A chat on one platform's fake, as the test drives it.
enum Chat {
    Telegram(FakeTelegram),
    Discord(FakeDiscord),
    WhatsApp(FakeWhatsApp),
}

impl Chat {
    /// The platform's section of `channels` (an open DM policy).
    fn section(&self) -> String {
        match self {
            Chat::Telegram(fake) => format!(
                r#"telegram: {{ enabled: true, botToken: "{TOKEN}", apiBase: "{}", dmPolicy: "open", pollTimeoutSeconds: 1 }}"#,
                fake.api_base()
            ),
            Chat::Discord(fake) => format!(
                r#"discord: {{ enabled: true, botToken: "{DISCORD_TOKEN}", apiBase: "{}", gatewayUrl: "{}", dmPolicy: "open" }}"#,
                fake.api_base(),
                fake.gateway_url()
            ),
            Chat::WhatsApp(fake) => super::whatsapp::section(fake),
        }
    }

    /// A direct message from the same person each time.
    async fn say(&self, gateway: &GatewayProcess, text: &str) {
        match self {
            Chat::Telegram(fake) => {
                fake.private_message(42, "alice", text);
            }
            Chat::Discord(fake) => {
                fake.dm("42", "alice", text);
            }
            Chat::WhatsApp(fake) => {
                assert_eq!(super::whatsapp::notify(gateway, fake, text).await, 200);
            }
        }
    }

    /// The texts sent to the chat, once there are `n`.
    async fn sent(&self, n: usize) -> Vec<String> {
        let texts = async {
            match self {
                Chat::Telegram(fake) => {
                    let sent = fake.wait_sent(n).await;
                    sent.iter()
                        .map(|m| m["text"].as_str().unwrap().to_string())
                        .collect()
                }
                Chat::Discord(fake) => fake
                    .wait_sent(n)
                    .await
                    .into_iter()
                    .map(|(_, t)| t)
                    .collect(),
                Chat::WhatsApp(fake) => fake
                    .wait_sent(n)
                    .await
                    .into_iter()
                    .map(|(_, t)| t)
                    .collect(),
            }
        };
        tokio::time::timeout(BOUND, texts)
            .await
            .expect("the chat was answered")
    }

    async fn stop(self) {
        match self {
            Chat::Telegram(fake) => fake.stop().await,
            Chat::Discord(fake) => fake.stop().await,
            Chat::WhatsApp(fake) => fake.stop().await,
        }
    }
}

fn write_config(home: &Path, chat: &Chat, python: &Path) {
    let script = home.join("billing.py");
    std::fs::write(&script, SERVER).unwrap();
    let config = format!(
        r#"{{ channels: {{ {} }},
             mcp: {{ servers: {{ billing: {{ command: "{}", args: ["{}"] }} }} }} }}"#,
        chat.section(),
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

/// The chat's message waits in the unsafe tool when the gateway is killed; after the restart
/// the chat gets the notice, then an answer to its next message, and nothing else.
async fn lost_answer(chat: Chat, test: &str) {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let python = match mcp_servers::time_server(tmp) {
        Ok(python) => python,
        Err(missing) => return mcp_servers::not_run(test, &missing),
    };
    let home = tempfile::tempdir().unwrap();
    write_config(home.path(), &chat, &python);
    let gateway = GatewayProcess::start(home.path());
    let charge = "@tool billing__charge {\"amount\": 5}\n@reply charged";
    chat.say(&gateway, charge).await;
    until(async || calling(home.path(), &gateway.url, "billing__charge").then_some(())).await;
    gateway.kill_9();

    let gateway = GatewayProcess::start(home.path());
    let sent = chat.sent(1).await;
    assert!(
        sent[0].starts_with(
            "⚠️ My answer to your message was lost: the gateway stopped while the tool \
             billing__charge was running, and billing__charge is not safe to run twice."
        ),
        "{sent:?}"
    );
    // The chat goes on; the notice was the one message for the lost answer.
    chat.say(&gateway, "@reply still here").await;
    let sent = chat.sent(2).await;
    assert_eq!(sent.len(), 2, "{sent:?}");
    assert_eq!(sent[1], "still here");
    gateway.stop();
    chat.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_in_a_tool_not_safe_to_repeat_sends_one_notice_to_a_telegram_chat() {
    let chat = Chat::Telegram(FakeTelegram::start(TOKEN).await);
    lost_answer(chat, "kill_9_in_a_tool_not_safe_to_repeat (telegram)").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_in_a_tool_not_safe_to_repeat_sends_one_notice_to_a_discord_dm() {
    let chat = Chat::Discord(FakeDiscord::start(DISCORD_TOKEN).await);
    lost_answer(chat, "kill_9_in_a_tool_not_safe_to_repeat (discord)").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_in_a_tool_not_safe_to_repeat_sends_one_notice_to_a_whatsapp_user() {
    let chat = Chat::WhatsApp(FakeWhatsApp::start(super::whatsapp::TOKEN).await);
    lost_answer(chat, "kill_9_in_a_tool_not_safe_to_repeat (whatsapp)").await;
}
