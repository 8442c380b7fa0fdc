//! The WhatsApp channel through the gateway binary, against the test kit's fake Graph API and
//! signed notifications posted to the gateway's webhook: a `kill -9` while the model streams an
//! answer — after WhatsApp got its 200, so nothing is ever sent again — ends in exactly one reply
//! to each acknowledged message (the cut-off run resumed, SPEC §6.3).

use std::path::Path;
use std::time::Duration;

use switchboard_testkit::whatsapp::{FakeWhatsApp, PHONE_NUMBER_ID, sign};

use super::process::{GatewayProcess, times_asked, until};

pub(super) const TOKEN: &str = "whatsapp-cli-test-token";
const SECRET: &str = "whatsapp-cli-app-secret";
const ALICE: &str = "15551234567";
/// How long a reply may take before the test fails (a bound, not a timing).
const BOUND: Duration = Duration::from_secs(60);

/// The `whatsapp` section of `channels` for `fake` (an open DM policy).
pub(super) fn section(fake: &FakeWhatsApp) -> String {
    format!(
        r#"whatsapp: {{ enabled: true, accessToken: "{TOKEN}", appSecret: "{SECRET}",
              verifyToken: "verify-me", phoneNumberId: "{PHONE_NUMBER_ID}", apiBase: "{}",
              dmPolicy: "open" }}"#,
        fake.api_base()
    )
}

fn write_config(home: &Path, fake: &FakeWhatsApp) {
    let config = format!("{{ channels: {{ {} }} }}", section(fake));
    std::fs::write(home.join("config.json5"), config).unwrap();
}

/// Posts a signed notification of `text` from Alice to the gateway's webhook; answers its status.
pub(super) async fn notify(gateway: &GatewayProcess, fake: &FakeWhatsApp, text: &str) -> u16 {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let (body, _) = fake.text(ALICE, "Alice", text, now);
    let base = gateway.url.replace("ws://", "http://");
    let http = switchboard_core::http_client(Duration::from_secs(30)).unwrap();
    let answer = http
        .post(format!("{base}/channels/whatsapp"))
        .header("content-type", "application/json")
        .header("x-hub-signature-256", sign(SECRET, &body))
        .body(body)
        .send()
        .await
        .unwrap();
    answer.status().as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_while_the_model_streams_ends_in_one_reply_to_each_message() {
    let fake = FakeWhatsApp::start(TOKEN).await;
    let home = tempfile::tempdir().unwrap();
    write_config(home.path(), &fake);
    let gateway = GatewayProcess::start(home.path());
    let streamed = "@slow 1500\n@reply answered after the kill";
    assert_eq!(notify(&gateway, &fake, streamed).await, 200);
    // Its run started (its message is in the transcript); the next one queues behind it.
    until(async || {
        let (asked, _) = times_asked(home.path(), &gateway.url, "main", streamed);
        (asked == 1).then_some(())
    })
    .await;
    // Answered 200 once committed: acknowledged, queued behind the first.
    assert_eq!(notify(&gateway, &fake, "@reply exactly-once").await, 200);
    gateway.kill_9();

    // WhatsApp had its 200 for both: nothing comes again. The restart answers each once.
    let gateway = GatewayProcess::start(home.path());
    let sent = tokio::time::timeout(BOUND, fake.wait_sent(2))
        .await
        .expect("the number replied");
    let texts: Vec<&str> = sent.iter().map(|(_, text)| text.as_str()).collect();
    assert_eq!(
        texts,
        ["answered after the kill", "exactly-once"],
        "the cut-off run resumed and the queued one ran: each replied once"
    );
    let (asked, history) = times_asked(home.path(), &gateway.url, "main", "@reply exactly-once");
    assert_eq!(asked, 1, "the second message ran once: {history}");
    gateway.stop();
    fake.stop().await;
}
