//! The Telegram channel's doors and routes beyond one chat: DM pairing (codes, approval,
//! limits), several bots at once, and announces from other sessions landing in a group.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_core::channel::LinkState;
use switchboard_core::config::{ChatAccount, DmPolicy, ProviderApi, TelegramBot};
use switchboard_protocol::delivery::SendParams;
use switchboard_protocol::pairing::{PairingApproveParams, PairingListParams};
use switchboard_testkit::{FakeTelegram, MockLlm, MockReply};

use super::support::{GUARD, TestEngine};
use super::telegram::{TOKEN, config, drained, sent, started, text};

/// The code in a pairing answer.
fn code_in(message: &Value) -> String {
    let text = text(message);
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("Pairing code: "))
        .unwrap_or_else(|| panic!("a pairing code in {text:?}"));
    line.trim().to_string()
}

async fn pending(h: &TestEngine) -> Vec<(String, String)> {
    let list = h.engine.pairing().list(PairingListParams::default()).await;
    let list = list.unwrap();
    list.requests.into_iter().map(|r| (r.id, r.code)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pairing_gives_a_stranger_one_code_and_an_approved_sender_is_answered() {
    let fake = FakeTelegram::start(TOKEN).await;
    let mut config = config(&fake, DmPolicy::default());
    assert_eq!(
        config.channels.telegram.access.dm_policy,
        Some(DmPolicy::Pairing)
    );
    config.channels.telegram.access.owners = Some(vec!["@olga".into()]);
    let h = started(config).await;
    fake.private_message(42, "alice", "@reply hi-1");
    let answer = sent(&fake, 1).await.remove(0);
    assert_eq!(answer["chat_id"], json!(42));
    assert!(
        text(&answer).contains("Your Telegram user id: 42"),
        "{answer}"
    );
    let code = code_in(&answer);
    assert!(text(&answer).contains(&format!("switchboard pairing approve telegram {code}")));
    // Asking again while the code is pending: no second code, and still nothing runs.
    fake.private_message(42, "alice", "@reply hi-2");
    drained(&fake).await;
    assert_eq!(fake.sent().len(), 1);
    assert_eq!(pending(&h).await, [("42".to_string(), code.clone())]);
    let main = h.transcript("main").await;
    assert!(main.is_empty(), "nothing ran: {main:?}");

    let wrong = PairingApproveParams {
        code: "ZZZZZZZZ".into(),
        ..Default::default()
    };
    let e = h
        .engine
        .pairing()
        .approve(wrong)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no pending telegram pairing request has code ZZZZZZZZ"),
        "{e}"
    );
    let approve = PairingApproveParams {
        channel: Some("telegram".into()),
        code: code.to_lowercase(),
        notify: true,
        ..Default::default()
    };
    let approved = h.engine.pairing().approve(approve).await.unwrap();
    assert_eq!(
        (
            approved.approved.id.as_str(),
            approved.approved.username.as_deref()
        ),
        ("42", Some("alice"))
    );
    let notice = sent(&fake, 2).await.remove(1);
    assert_eq!(notice["chat_id"], json!(42));
    assert!(text(&notice).contains("approved"), "{notice}");
    assert!(pending(&h).await.is_empty());

    fake.private_message(42, "alice", "@reply hi-3");
    assert_eq!(text(&sent(&fake, 3).await[2]), "hi-3");
    // At most three requests wait at once: the fourth stranger gets no code.
    for (id, name) in [(43, "bob"), (44, "carol"), (45, "dave"), (46, "erin")] {
        fake.private_message(id, name, "hello");
    }
    drained(&fake).await;
    let mut coded: Vec<i64> = sent(&fake, 6).await[3..]
        .iter()
        .map(|m| m["chat_id"].as_i64().unwrap())
        .collect();
    coded.sort();
    assert_eq!(coded, [43, 44, 45]);
    // Erin's update was handled (drained) before this read, and nothing was queued for her.
    let records = h.settled_deliveries().await;
    assert!(records.iter().all(|r| r.to != "46"), "{records:?}");
    // An owner needs no code.
    fake.private_message(50, "olga", "@reply owner-ok");
    assert_eq!(text(&sent(&fake, 7).await[6]), "owner-ok");
    assert_eq!(pending(&h).await.len(), 3);
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_allowlist_a_sender_approved_by_pairing_is_answered_and_a_stranger_gets_no_code() {
    // As in the reference: `allowlist` lets in allowFrom and the senders paired before.
    let fake = FakeTelegram::start(TOKEN).await;
    let h = started(config(&fake, DmPolicy::Pairing)).await;
    fake.private_message(42, "alice", "let me in");
    let code = code_in(&sent(&fake, 1).await[0]);
    let approve = PairingApproveParams {
        code,
        ..Default::default()
    };
    h.engine.pairing().approve(approve).await.unwrap();
    let mut h = h;
    h.config.channels.telegram.access.dm_policy = Some(DmPolicy::Allowlist);
    h.config.channels.telegram.access.allow_from = Some(vec!["45".into()]);
    let h = h.restart(None).await;
    h.engine.start_channels();
    fake.private_message(43, "mallory", "@reply should not run");
    fake.private_message(42, "alice", "@reply paired-ok");
    fake.private_message(45, "bob", "@reply listed-ok");
    let mut texts: Vec<String> = sent(&fake, 3).await[1..]
        .iter()
        .map(|m| text(m).to_string())
        .collect();
    texts.sort();
    assert_eq!(texts, ["listed-ok", "paired-ok"]);
    drained(&fake).await;
    assert_eq!(fake.sent().len(), 3, "the stranger got no code");
    assert!(pending(&h).await.is_empty());
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_code_survives_a_restart_and_a_replayed_update_answers_the_same_code() {
    let fake = FakeTelegram::start(TOKEN).await;
    let h = started(config(&fake, DmPolicy::Pairing)).await;
    fake.private_message(42, "alice", "let me in");
    let code = code_in(&sent(&fake, 1).await[0]);
    let h = h.restart(None).await;
    h.engine.start_channels();
    assert_eq!(pending(&h).await, [("42".to_string(), code.clone())]);
    let approve = PairingApproveParams {
        code,
        ..Default::default()
    };
    h.engine.pairing().approve(approve).await.unwrap();
    fake.private_message(42, "alice", "@reply in");
    assert_eq!(text(&sent(&fake, 2).await[1]), "in");
    fake.stop().await;
    h.engine.close().await;
}

const WORK_TOKEN: &str = "654321:work-token";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_bots_poll_at_once_and_each_chat_is_answered_by_its_own_bot() {
    let home = FakeTelegram::start(TOKEN).await;
    let work = FakeTelegram::start(WORK_TOKEN).await;
    let mut config = config(&home, DmPolicy::Open);
    config.session.dm_scope = switchboard_core::config::DmScope::PerAccountChannelPeer;
    let account = ChatAccount {
        bot: TelegramBot {
            bot_token: Some(WORK_TOKEN.into()),
            api_base: Some(work.api_base()),
            ..TelegramBot::default()
        },
        ..ChatAccount::default()
    };
    config
        .channels
        .telegram
        .accounts
        .insert("work".into(), account);
    let h = started(config.validated().unwrap()).await;
    home.private_message(42, "alice", "@reply from-home");
    work.private_message(42, "alice", "@reply from-work");
    assert_eq!(text(&sent(&home, 1).await[0]), "from-home");
    assert_eq!(text(&sent(&work, 1).await[0]), "from-work");
    // Each bot's chats are their own sessions (dmScope per-account-channel-peer).
    for key in [
        "agent:main:telegram:default:direct:42",
        "agent:main:telegram:work:direct:42",
    ] {
        assert!(
            h.engine.store().get(&h.key(key)).await.unwrap().is_some(),
            "{key}"
        );
    }
    let statuses = h.engine.channels().status("telegram").unwrap().accounts;
    let ids: Vec<&str> = statuses.iter().map(|a| a.account_id.as_str()).collect();
    assert_eq!(ids, ["default", "work"]);
    assert!(
        statuses
            .iter()
            .all(|a| a.link == Some(LinkState::Up("polling")))
    );
    // An operator send names the bot; an unknown one is refused with the running ones.
    let send = |account: &str| SendParams {
        channel: "telegram".into(),
        to: "42".into(),
        account_id: Some(account.into()),
        message: format!("hello via {account}"),
        idempotency_key: format!("op-{account}"),
        ..Default::default()
    };
    h.engine.outbox().send(send("work")).await.unwrap();
    assert_eq!(text(&sent(&work, 2).await[1]), "hello via work");
    let e = h
        .engine
        .outbox()
        .send(send("nope"))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no telegram bot has account id nope (running: default, work)"),
        "{e}"
    );
    assert_eq!(home.sent().len(), 1);
    home.stop().await;
    work.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_announce_from_another_session_lands_in_the_telegram_group() {
    let fake = FakeTelegram::start(TOKEN).await;
    let mock = MockLlm::start().await;
    let mut settings = super::runtime::mock_config(&mock, ProviderApi::OpenAiCompletions, true);
    settings.channels.telegram = config(&fake, DmPolicy::Open).channels.telegram;
    settings.session.agent_to_agent.max_ping_pong_turns = 0;
    let h = started(settings).await;
    mock.push(MockReply::text("hi group"));
    let bot = switchboard_testkit::telegram::BOT_USERNAME;
    fake.group_message(
        -1001,
        "Dev room",
        43,
        "carol",
        &format!("@{bot} hello"),
        None,
    );
    assert_eq!(text(&sent(&fake, 1).await[0]), "hi group");
    // main asks the group's session; its announce step posts to the group.
    mock.push(MockReply::text("all green"));
    mock.push(MockReply::text("Announcement: the build is green"));
    let group = "agent:main:telegram:group:-1001";
    let args = json!({"sessionKey": group, "message": "status?", "timeoutSeconds": 0});
    let out = h.invoke("main", "sessions_send", args).await;
    assert_eq!(out.content["status"], "accepted", "{}", out.content);
    let announced = |calls: &[switchboard_testkit::telegram::TelegramCall]| {
        calls
            .iter()
            .any(|c| c.body["text"] == "Announcement: the build is green")
    };
    tokio::time::timeout(GUARD, fake.wait_for(announced))
        .await
        .expect("the announce reached the group");
    tokio::time::timeout(GUARD, h.engine.runtime().idle())
        .await
        .unwrap();
    let records = h.settled_deliveries().await;
    let kinds: Vec<(&str, &str, &str)> = records
        .iter()
        .rev()
        .map(|r| (r.kind.as_str(), r.to.as_str(), r.status.as_str()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("reply", "-1001", "delivered"),
            ("announce", "-1001", "delivered")
        ]
    );
    let sent_texts = fake.sent();
    let in_group: Vec<&str> = sent_texts.iter().map(text).collect();
    assert_eq!(in_group, ["hi group", "Announcement: the build is green"]);
    mock.stop().await;
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sub_agent_spawned_from_a_group_reports_in_the_group() {
    let fake = FakeTelegram::start(TOKEN).await;
    let mut config = config(&fake, DmPolicy::Open);
    config.channels.telegram.access.require_mention = Some(false);
    let h = started(config).await;
    let spawn = json!({"task": "@reply child-report-7"});
    fake.group_message(
        -1002,
        "Research",
        43,
        "carol",
        &format!("@tool sessions_spawn {spawn}\n@reply spawned"),
        None,
    );
    tokio::time::timeout(
        GUARD,
        fake.wait_for(|calls| {
            calls.iter().any(|c| {
                c.method == "sendMessage"
                    && c.body["chat_id"] == json!(-1002)
                    && c.body["text"]
                        .as_str()
                        .is_some_and(|t| t.contains("child-report-7"))
            })
        }),
    )
    .await
    .expect("the sub-agent's report reached the group");
    tokio::time::timeout(GUARD, h.engine.runtime().idle())
        .await
        .unwrap();
    h.settled_deliveries().await;
    let in_group: Vec<String> = fake
        .sent()
        .iter()
        .filter(|m| m["chat_id"] == json!(-1002))
        .map(|m| text(m).to_string())
        .collect();
    assert!(in_group.contains(&"spawned".to_string()), "{in_group:?}");
    let reports = in_group
        .iter()
        .filter(|t| t.contains("child-report-7"))
        .count();
    assert_eq!(reports, 1, "{in_group:?}");
    fake.stop().await;
    h.engine.close().await;
}
