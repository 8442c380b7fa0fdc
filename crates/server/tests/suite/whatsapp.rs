//! The WhatsApp channel's HTTP door through the server, over real HTTP: the platform's
//! verification request, a notification refused for its signature (nothing stored) and one
//! answered through the fake Graph API, and `/channels/<name>` for a channel without a door.

use pretty_assertions::assert_eq;
use serde_json::Value;
use switchboard_core::config::{Config, DmPolicy};
use switchboard_testkit::whatsapp::{FakeWhatsApp, PHONE_NUMBER_ID, sign};

use super::harness::TestGateway;

const TOKEN: &str = "whatsapp-server-token";
const SECRET: &str = "whatsapp-server-secret";
const VERIFY: &str = "whatsapp-server-verify";

fn config(fake: &FakeWhatsApp) -> Config {
    let mut config = Config::default();
    let whatsapp = &mut config.channels.whatsapp;
    whatsapp.enabled = true;
    whatsapp.bot.access_token = Some(TOKEN.into());
    whatsapp.bot.app_secret = Some(SECRET.into());
    whatsapp.bot.verify_token = Some(VERIFY.into());
    whatsapp.bot.phone_number_id = Some(PHONE_NUMBER_ID.into());
    whatsapp.bot.api_base = Some(fake.api_base());
    whatsapp.access.dm_policy = Some(DmPolicy::Open);
    config
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_notification_is_answered_and_a_forged_one_is_refused_with_nothing_stored() {
    let fake = FakeWhatsApp::start(TOKEN).await;
    let gateway = TestGateway::start_with(config(&fake)).await;
    let http = switchboard_core::http_client(std::time::Duration::from_secs(30)).unwrap();
    let url = format!("http://{}/channels/whatsapp", gateway.addr);
    let verify = http
        .get(format!(
            "{url}?hub.mode=subscribe&hub.verify_token={VERIFY}&hub.challenge=8412"
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(verify.status(), 200);
    assert_eq!(verify.text().await.unwrap(), "8412");

    let (body, _) = fake.text("15551234567", "Alice", "@reply forged", now());
    let forged = http
        .post(&url)
        .header("x-hub-signature-256", sign("another-secret", &body))
        .body(body.clone())
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 401);
    let refusal: Value = forged.json().await.unwrap();
    assert_eq!(refusal["error"]["code"], "UNAUTHORIZED", "{refusal}");
    let history = gateway
        .call("chat.history", serde_json::json!({"sessionKey": "main"}))
        .await;
    assert_eq!(history["messages"], serde_json::json!([]), "nothing stored");

    let (body, _) = fake.text("15551234567", "Alice", "@reply signed", now());
    let signed = http
        .post(&url)
        .header("x-hub-signature-256", sign(SECRET, &body))
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(signed.status(), 200);
    let sent = tokio::time::timeout(std::time::Duration::from_secs(60), fake.wait_sent(1))
        .await
        .expect("the reply went out through the Graph API");
    assert_eq!(sent, [("15551234567".to_string(), "signed".to_string())]);
    let health = gateway.call("health", serde_json::json!({})).await;
    let channels = health["channels"].to_string();
    assert!(channels.contains("whatsapp"), "{health}");

    for path in ["/channels/nowhere", "/channels/telegram"] {
        let none = http
            .post(format!("http://{}{path}", gateway.addr))
            .body("{}")
            .send()
            .await
            .unwrap();
        assert_eq!(none.status(), 404, "{path}");
    }
    gateway.stop().await;
    fake.stop().await;
}
