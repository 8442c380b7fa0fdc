//! The WhatsApp channel against a fake Graph API (`switchboard_testkit::whatsapp`) and signed
//! notifications handed to its HTTP door as the server would: the verification handshake,
//! signatures, one-to-one chats and groups, redelivered notifications, the 24-hour window, 429s,
//! long replies in parts, pairing, and an announce landing in a group.

use pretty_assertions::assert_eq;
use serde_json::json;
use switchboard_core::channel::{HttpCall, HttpReply, LinkState};
use switchboard_core::config::{Config, DmPolicy, GroupSettings, ProviderApi};
use switchboard_core::store::DeliveryStatus;
use switchboard_testkit::whatsapp::{
    DISPLAY_NUMBER, FakeWhatsApp, PHONE_NUMBER_ID, WhatsAppFailure, sign,
};
use switchboard_testkit::{MockLlm, MockReply};

use super::support::{GUARD, TestEngine};

const TOKEN: &str = "whatsapp-test-token";
const SECRET: &str = "whatsapp-app-secret";
const VERIFY: &str = "whatsapp-verify-token";
const ALICE: &str = "15551234567";
const GROUP: &str = "120363041234567890";

fn config(fake: &FakeWhatsApp, policy: DmPolicy) -> Config {
    let mut config = Config::default();
    let whatsapp = &mut config.channels.whatsapp;
    whatsapp.enabled = true;
    whatsapp.bot.access_token = Some(TOKEN.into());
    whatsapp.bot.app_secret = Some(SECRET.into());
    whatsapp.bot.verify_token = Some(VERIFY.into());
    whatsapp.bot.phone_number_id = Some(PHONE_NUMBER_ID.into());
    whatsapp.bot.api_base = Some(fake.api_base());
    whatsapp.access.dm_policy = Some(policy);
    whatsapp
        .access
        .groups_mut()
        .insert("*".into(), GroupSettings::default());
    config.delivery.retry_initial_ms = 50;
    config
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Hands a notification to the channel's HTTP door, signed with `secret`.
async fn post(h: &TestEngine, body: &[u8], secret: Option<&str>) -> HttpReply {
    let door = h
        .engine
        .http_door("whatsapp")
        .expect("whatsapp has an HTTP door");
    let headers = secret
        .map(|s| vec![("x-hub-signature-256".to_string(), sign(s, body))])
        .unwrap_or_default();
    let call = HttpCall {
        method: "POST".into(),
        headers,
        body: body.to_vec(),
        ..Default::default()
    };
    door.handle(call).await
}

async fn sent(fake: &FakeWhatsApp, n: usize) -> Vec<(String, String)> {
    tokio::time::timeout(GUARD, fake.wait_sent(n))
        .await
        .expect("the number sent the messages")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_verification_handshake_answers_the_challenge_only_for_the_verify_token() {
    let fake = FakeWhatsApp::start(TOKEN).await;
    let h = TestEngine::open(config(&fake, DmPolicy::Open)).await;
    let door = h.engine.http_door("whatsapp").unwrap();
    let verify = |token: &str| HttpCall {
        method: "GET".into(),
        query: vec![
            ("hub.mode".into(), "subscribe".into()),
            ("hub.verify_token".into(), token.into()),
            ("hub.challenge".into(), "1158201444".into()),
        ],
        ..Default::default()
    };
    let ok = door.handle(verify(VERIFY)).await;
    assert_eq!((ok.status, ok.body.as_str()), (200, "1158201444"));
    let wrong = door.handle(verify("guess")).await;
    assert_eq!(wrong.status, 403);
    assert!(wrong.body.contains("verifyToken"), "{}", wrong.body);
    assert!(!wrong.body.contains(VERIFY), "no secret in the answer");
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_is_answered_and_a_wrong_signature_is_refused_with_nothing_stored() {
    let fake = FakeWhatsApp::start(TOKEN).await;
    let h = TestEngine::open(config(&fake, DmPolicy::Open)).await;
    let (body, _) = fake.text(ALICE, "Alice", "@reply never", now());
    for secret in [None, Some("not-the-secret")] {
        let refused = post(&h, &body, secret).await;
        assert_eq!(refused.status, 401, "{}", refused.body);
        assert!(
            refused.body.contains("X-Hub-Signature-256"),
            "{}",
            refused.body
        );
    }
    assert!(
        h.transcript("main").await.is_empty(),
        "no run for a refused notification"
    );
    assert!(h.settled_deliveries().await.is_empty());
    let (body, _) = fake.text(ALICE, "Alice", "@reply pong-1", now());
    let answer = post(&h, &body, Some(SECRET)).await;
    assert_eq!((answer.status, answer.authenticated), (200, true));
    assert_eq!(
        sent(&fake, 1).await,
        [(ALICE.to_string(), "pong-1".to_string())]
    );
    let call = &fake.calls()[0];
    assert_eq!(call.phone_number_id, PHONE_NUMBER_ID);
    assert_eq!(call.body["recipient_type"], "individual");
    let entry = h.engine.store().get(&h.key("main")).await.unwrap().unwrap();
    assert_eq!(entry.last_channel.as_deref(), Some("whatsapp"));
    assert_eq!(entry.last_to.as_deref(), Some(ALICE));
    let status = h.engine.channels().status("whatsapp").unwrap();
    assert_eq!(status.link.unwrap().state, LinkState::Up("webhook"));
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_redelivered_notification_runs_once_also_after_a_restart() {
    let fake = FakeWhatsApp::start(TOKEN).await;
    let h = TestEngine::open(config(&fake, DmPolicy::Open)).await;
    let (body, _) = fake.text(ALICE, "Alice", "@reply once", now());
    assert_eq!(post(&h, &body, Some(SECRET)).await.status, 200);
    assert_eq!(post(&h, &body, Some(SECRET)).await.status, 200);
    sent(&fake, 1).await;
    tokio::time::timeout(GUARD, h.engine.runtime().idle())
        .await
        .unwrap();
    let h = h.restart(None).await;
    assert_eq!(post(&h, &body, Some(SECRET)).await.status, 200);
    let (next, _) = fake.text(ALICE, "Alice", "@reply after", now());
    assert_eq!(post(&h, &next, Some(SECRET)).await.status, 200);
    let texts: Vec<String> = sent(&fake, 2).await.into_iter().map(|(_, t)| t).collect();
    assert_eq!(texts, ["once", "after"]);
    let asked = h
        .transcript("main")
        .await
        .iter()
        .filter(|m| m["role"] == "user" && m["content"] == "@reply once")
        .count();
    assert_eq!(asked, 1);
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_messages_need_a_mention_and_are_answered_in_the_group() {
    let fake = FakeWhatsApp::start(TOKEN).await;
    let h = TestEngine::open(config(&fake, DmPolicy::Open)).await;
    let (quiet, _) = fake.group_text((GROUP, ALICE, "Alice"), "@reply not-for-us", false, now());
    assert_eq!(post(&h, &quiet, Some(SECRET)).await.status, 200);
    let (asked, _) = fake.group_text((GROUP, ALICE, "Alice"), "@reply in-group", true, now());
    assert_eq!(post(&h, &asked, Some(SECRET)).await.status, 200);
    assert_eq!(
        sent(&fake, 1).await,
        [(GROUP.to_string(), "in-group".to_string())]
    );
    assert_eq!(fake.calls()[0].body["recipient_type"], "group");
    let key = format!("agent:main:whatsapp:group:{GROUP}");
    let users: Vec<String> = h
        .transcript(&key)
        .await
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(users, ["[from Alice]\n@reply in-group"]);
    assert!(
        !users[0].contains(DISPLAY_NUMBER),
        "the mention is taken out"
    );
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_outside_the_24_hour_window_fails_for_good_with_the_reason() {
    let fake = FakeWhatsApp::start(TOKEN).await;
    let h = TestEngine::open(config(&fake, DmPolicy::Open)).await;
    // The message was written 25 hours ago (the platform delivers late after an outage).
    let (body, _) = fake.text(ALICE, "Alice", "@reply too-late", now() - 25 * 3600);
    assert_eq!(post(&h, &body, Some(SECRET)).await.status, 200);
    tokio::time::timeout(GUARD, h.engine.runtime().idle())
        .await
        .unwrap();
    let records = h.settled_deliveries().await;
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0].status, DeliveryStatus::Failed);
    let detail = records[0].detail.clone().unwrap_or_default();
    assert!(
        detail.contains("24-hour customer-service window"),
        "{detail}"
    );
    assert!(fake.calls().is_empty(), "nothing was sent");
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_and_a_500_are_delivered_later_and_a_long_reply_arrives_in_ordered_parts() {
    let fake = FakeWhatsApp::start(TOKEN).await;
    fake.fail_next(WhatsAppFailure::TooManyRequests { retry_after: 1 });
    fake.fail_next(WhatsAppFailure::Server);
    let h = TestEngine::open(config(&fake, DmPolicy::Open)).await;
    let sentence = "WhatsApp takes four thousand and ninety-six characters. ";
    let long = sentence.repeat(10_000 / sentence.len() + 1);
    let (body, _) = fake.text(ALICE, "Alice", &format!("@reply {long}"), now());
    assert_eq!(post(&h, &body, Some(SECRET)).await.status, 200);
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let whole = squash(&long);
    tokio::time::timeout(
        GUARD,
        fake.wait_for(|calls| {
            let parts = switchboard_testkit::whatsapp::sent_of(calls);
            let joined: Vec<&str> = parts.iter().map(|(_, t)| t.as_str()).collect();
            squash(&joined.join(" ")).len() >= whole.len()
        }),
    )
    .await
    .expect("the whole reply was sent");
    let parts = fake.sent();
    let joined: Vec<&str> = parts.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(squash(&joined.join(" ")), whole);
    assert!(parts.len() >= 3, "{} parts", parts.len());
    assert!(parts.iter().all(|(_, p)| p.chars().count() <= 4096));
    let refused: Vec<bool> = fake.calls().iter().map(|c| c.refused).collect();
    assert_eq!(
        refused[..3],
        [true, true, false],
        "a 429, a 500, then taken"
    );
    assert_eq!(
        refused.iter().filter(|r| !**r).count(),
        parts.len(),
        "no part twice"
    );
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pairing_gives_a_stranger_a_code_and_an_approved_sender_is_answered() {
    let fake = FakeWhatsApp::start(TOKEN).await;
    let h = TestEngine::open(config(&fake, DmPolicy::default())).await;
    let (body, _) = fake.text(ALICE, "Alice", "@reply hi-1", now());
    assert_eq!(post(&h, &body, Some(SECRET)).await.status, 200);
    let (to, answer) = sent(&fake, 1).await.remove(0);
    assert_eq!(to, ALICE);
    assert!(
        answer.contains(&format!("Your WhatsApp id: {ALICE}")),
        "{answer}"
    );
    let code = super::support::pairing_code(&answer, "whatsapp");
    assert_eq!(h.approve("whatsapp", code).await, ALICE);
    let (to, notice) = sent(&fake, 2).await.remove(1);
    assert_eq!(to, ALICE);
    assert!(notice.contains("approved"), "{notice}");
    let (body, _) = fake.text(ALICE, "Alice", "@reply hi-3", now());
    assert_eq!(post(&h, &body, Some(SECRET)).await.status, 200);
    assert_eq!(
        sent(&fake, 3).await[2],
        (ALICE.to_string(), "hi-3".to_string())
    );
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_announce_from_another_session_lands_in_the_group() {
    let fake = FakeWhatsApp::start(TOKEN).await;
    let mock = MockLlm::start().await;
    let mut settings = super::runtime::mock_config(&mock, ProviderApi::OpenAiCompletions, true);
    settings.channels.whatsapp = config(&fake, DmPolicy::Open).channels.whatsapp;
    settings.session.agent_to_agent.max_ping_pong_turns = 0;
    let h = TestEngine::open(settings).await;
    mock.push(MockReply::text("hi group"));
    let (body, _) = fake.group_text((GROUP, ALICE, "Alice"), "hello", true, now());
    assert_eq!(post(&h, &body, Some(SECRET)).await.status, 200);
    assert_eq!(sent(&fake, 1).await[0].1, "hi group");
    mock.push(MockReply::text("all green"));
    mock.push(MockReply::text("Announcement: the build is green"));
    let group = format!("agent:main:whatsapp:group:{GROUP}");
    let args = json!({"sessionKey": group, "message": "status?", "timeoutSeconds": 0});
    let out = h.invoke("main", "sessions_send", args).await;
    assert_eq!(out.content["status"], "accepted", "{}", out.content);
    let replies = sent(&fake, 2).await;
    let to = format!("group:{GROUP}");
    h.assert_settled(&[("reply", &to, "delivered"), ("announce", &to, "delivered")])
        .await;
    assert_eq!(
        replies,
        [
            (GROUP.to_string(), "hi group".to_string()),
            (
                GROUP.to_string(),
                "Announcement: the build is green".to_string()
            )
        ]
    );
    mock.stop().await;
    fake.stop().await;
    h.engine.close().await;
}
