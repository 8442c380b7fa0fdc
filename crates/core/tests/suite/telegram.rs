//! The Telegram channel against a fake Bot API (`switchboard_testkit::FakeTelegram`, loopback
//! HTTP in the real shapes): private and group messages in, replies out through the outbox,
//! the stored update offset across a restart, 429s, blocked chats, long replies in parts, and a
//! token the Bot API refuses.

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_core::channel::LinkState;
use switchboard_core::config::{Config, DmPolicy, GroupPolicy, GroupSettings};
use switchboard_core::store::{DeliveryQuery, DeliveryRecord, DeliveryStatus};
use switchboard_testkit::{FakeFailure, FakeTelegram};

use super::support::{GUARD, TestEngine, is_main_status_card};

pub(super) const TOKEN: &str = "123456:test-token";

pub(super) fn config(fake: &FakeTelegram, policy: DmPolicy) -> Config {
    let mut config = Config::default();
    let telegram = &mut config.channels.telegram;
    telegram.enabled = true;
    telegram.bot.bot_token = Some(TOKEN.into());
    telegram.bot.api_base = Some(fake.api_base());
    telegram.access.dm_policy = Some(policy);
    telegram.bot.poll_timeout_seconds = Some(1);
    // Every group passes groupPolicy "allowlist" (the policy test lists its own).
    telegram
        .access
        .groups_mut()
        .insert("*".into(), GroupSettings::default());
    config.delivery.retry_initial_ms = 50;
    config
}

pub(super) async fn started(config: Config) -> TestEngine {
    let h = TestEngine::open(config).await;
    h.engine.start_channels();
    h
}

/// The Telegram channel's state as a whole, as `health` shows it.
pub(super) fn telegram_state(h: &TestEngine) -> LinkState {
    let status = h
        .engine
        .channels()
        .status("telegram")
        .expect("telegram reports its state");
    status.link.expect("telegram keeps connections").state
}

/// Waits until `n` messages were sent; answers their texts and their bodies.
/// The reason of the channel's `failed` state, once it shows one.
async fn failed_state(h: &TestEngine) -> String {
    tokio::time::timeout(GUARD, async {
        loop {
            if let LinkState::Failed(why) = telegram_state(h) {
                return why;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the channel reports itself failed")
}

pub(super) async fn sent(fake: &FakeTelegram, n: usize) -> Vec<Value> {
    tokio::time::timeout(GUARD, fake.wait_sent(n))
        .await
        .expect("the bot sent the messages")
}

pub(super) fn text(v: &Value) -> &str {
    v["text"].as_str().unwrap()
}

/// Waits until a delivery in `status` matches `which`; answers its record.
pub(super) async fn delivery(
    h: &TestEngine,
    status: DeliveryStatus,
    which: impl Fn(&DeliveryRecord) -> bool,
) -> DeliveryRecord {
    tokio::time::timeout(GUARD, async {
        loop {
            let query = DeliveryQuery {
                session_key: None,
                status: Some(status),
                limit: 100,
            };
            let found = h.engine.store().list_deliveries(query).await.unwrap();
            if let Some(record) = found.into_iter().find(&which) {
                return record;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("a delivery reached the status")
}

/// Waits until every queued update was confirmed (handled, whatever became of it).
pub(super) async fn drained(fake: &FakeTelegram) {
    tokio::time::timeout(GUARD, async {
        while fake.unconfirmed() > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("every update was confirmed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_message_is_answered_in_the_same_chat() {
    let fake = FakeTelegram::start(TOKEN).await;
    let h = started(config(&fake, DmPolicy::Open)).await;
    // The run takes a while, so the chat shows "typing…" before the reply.
    fake.private_message(42, "alice", "@delay 3000\n@reply pong-1");
    let replies = sent(&fake, 1).await;
    assert_eq!(replies[0]["chat_id"], json!(42));
    assert_eq!(text(&replies[0]), "pong-1");
    // The chat showed "typing…" while the run worked.
    let calls = fake.calls();
    let typed = calls.iter().position(|c| {
        c.method == "sendChatAction"
            && c.body["chat_id"] == json!(42)
            && c.body["action"] == "typing"
    });
    let answered = calls.iter().position(|c| c.method == "sendMessage");
    assert!(
        typed.is_some() && typed < answered,
        "typing, then the reply: {calls:?}"
    );
    // The session records the route (dmScope main: the agent's main session).
    let entry = h.engine.store().get(&h.key("main")).await.unwrap().unwrap();
    assert_eq!(entry.last_channel.as_deref(), Some("telegram"));
    assert_eq!(entry.last_to.as_deref(), Some("42"));
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strangers_are_ignored_unless_allowed_and_groups_need_a_mention() {
    let fake = FakeTelegram::start(TOKEN).await;
    let mut config = config(&fake, DmPolicy::Allowlist);
    config.channels.telegram.access.allow_from = Some(vec!["@Bob".into()]);
    let h = started(config).await;
    fake.private_message(42, "mallory", "@reply should not run");
    fake.group_message(
        -1001,
        "Dev room",
        43,
        "carol",
        "@reply not for the bot",
        None,
    );
    let bot = switchboard_testkit::telegram::BOT_USERNAME;
    fake.group_message(
        -1001,
        "Dev room",
        43,
        "carol",
        &format!("hey @{bot}\n@reply group-ok"),
        None,
    );
    fake.group_reply_to_bot(-1001, "Dev room", 44, "dave", "@reply reply-ok");
    fake.private_message(45, "bob", "@reply bob-ok");
    let replies = sent(&fake, 3).await;
    let mut texts: Vec<&str> = replies.iter().map(text).collect();
    texts.sort();
    assert_eq!(texts, ["bob-ok", "group-ok", "reply-ok"]);
    let group = h
        .engine
        .store()
        .get(&h.key("agent:main:telegram:group:-1001"))
        .await;
    let group = group.unwrap().expect("the group's session");
    assert_eq!(group.display_name.as_deref(), Some("Dev room"));
    let transcript = h.transcript("agent:main:telegram:group:-1001").await;
    let asked: Vec<&str> = transcript
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(asked[0].starts_with("[from @carol]\n"), "{asked:?}");
    let main: Vec<Value> = h.transcript("main").await;
    let dms: Vec<&Value> = main
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| &m["content"])
        .collect();
    assert_eq!(
        dms,
        [&json!("@reply bob-ok")],
        "mallory's message never reached the agent"
    );
    // Every update was confirmed, the ignored ones included.
    drained(&fake).await;
    assert_eq!(fake.sent().len(), 3);
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forum_topic_is_its_own_session_and_the_reply_stays_in_the_topic() {
    let fake = FakeTelegram::start(TOKEN).await;
    let mut config = config(&fake, DmPolicy::Open);
    config.channels.telegram.access.require_mention = Some(false);
    let h = started(config).await;
    fake.group_message(-1002, "Forum", 43, "carol", "@reply in-topic", Some(77));
    let replies = sent(&fake, 1).await;
    assert_eq!(replies[0]["chat_id"], json!(-1002));
    assert_eq!(replies[0]["message_thread_id"], json!(77));
    assert_eq!(text(&replies[0]), "in-topic");
    let key = h.key("agent:main:telegram:group:-1002:topic:77");
    assert!(h.engine.store().get(&key).await.unwrap().is_some());
    fake.stop().await;
    h.engine.close().await;
}

/// Replies to one chat arrive in the order the runs made them: the second reply is made while
/// the platform is still taking the first, and waits for it instead of overtaking it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_made_while_the_last_one_is_still_being_sent_waits_its_turn() {
    let fake = FakeTelegram::start(TOKEN).await;
    let h = started(config(&fake, DmPolicy::Open)).await;
    fake.fail_next("sendMessage", FakeFailure::Slow(Duration::from_millis(700)));
    fake.private_message(42, "alice", "@reply first");
    fake.private_message(42, "alice", "@reply second");
    let replies = sent(&fake, 2).await;
    assert_eq!(
        replies.iter().map(text).collect::<Vec<_>>(),
        ["first", "second"]
    );
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_is_retried_after_its_wait_and_a_blocked_chat_fails_for_good() {
    let fake = FakeTelegram::start(TOKEN).await;
    let h = started(config(&fake, DmPolicy::Open)).await;
    fake.fail_next(
        "sendMessage",
        FakeFailure::TooManyRequests { retry_after: 1 },
    );
    fake.private_message(42, "alice", "@reply after-429");
    let replies = sent(&fake, 1).await;
    assert_eq!(text(&replies[0]), "after-429");
    let attempts = fake.refusals("sendMessage");
    assert_eq!(attempts, [true, false], "refused once, then delivered");

    fake.fail_next("sendMessage", FakeFailure::Blocked);
    fake.private_message(43, "bob", "@reply never-arrives");
    let failed = delivery(&h, DeliveryStatus::Failed, |_| true).await;
    assert_eq!(failed.attempts, 1, "a 403 is not retried");
    assert!(
        failed.detail.as_deref().unwrap().contains("blocked"),
        "{failed:?}"
    );
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_10000_character_reply_arrives_as_ordered_parts_even_when_a_part_waits_for_a_429() {
    let fake = FakeTelegram::start(TOKEN).await;
    let h = started(config(&fake, DmPolicy::Open)).await;
    let sentence = "This sentence is part of a very long reply. ";
    let long = sentence.repeat(10_000 / sentence.len() + 1);
    // The second part is refused once with a 429: the retry sends the rest, not the first again.
    fake.fail_after(
        "sendMessage",
        1,
        FakeFailure::TooManyRequests { retry_after: 1 },
    );
    fake.private_message(42, "alice", &format!("@reply {long}"));
    let parts = sent(&fake, 3).await;
    assert!(parts.iter().all(|p| text(p).chars().count() <= 4096));
    let joined: Vec<&str> = parts.iter().map(text).collect();
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(squash(&joined.join(" ")), squash(long.trim()));
    let delivered = delivery(&h, DeliveryStatus::Delivered, |r| r.to == "42").await;
    assert_eq!(delivered.attempts, 2, "{delivered:?}");
    let attempts = fake.refusals("sendMessage");
    assert_eq!(attempts, [false, true, false, false], "no part went twice");
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_offset_is_kept_across_a_restart_so_no_update_runs_twice() {
    let fake = FakeTelegram::start(TOKEN).await;
    let h = started(config(&fake, DmPolicy::Open)).await;
    fake.private_message(42, "alice", "@reply first");
    sent(&fake, 1).await;
    let h = h.restart(None).await;
    h.engine.start_channels();
    fake.private_message(42, "alice", "@reply second");
    let replies = sent(&fake, 2).await;
    let texts: Vec<&str> = replies.iter().map(text).collect();
    assert_eq!(texts, ["first", "second"]);
    // The restarted poller asked from the stored offset, past the first update.
    let polls: Vec<i64> = fake
        .calls()
        .iter()
        .filter(|c| c.method == "getUpdates")
        .map(|c| c.body["offset"].as_i64().unwrap())
        .collect();
    assert!(polls.iter().skip(1).all(|o| *o > 0), "{polls:?}");
    let asked = h
        .transcript("main")
        .await
        .iter()
        .filter(|m| m["role"] == "user")
        .count();
    assert_eq!(asked, 2, "each update ran once");
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_token_marks_the_channel_failed_and_nothing_else_stops() {
    let fake = FakeTelegram::start("999:the-real-token").await;
    let h = started(config(&fake, DmPolicy::Open)).await;
    let status = failed_state(&h).await;
    assert!(
        status.contains("401") && status.contains("botToken"),
        "{status}"
    );
    assert!(!status.contains(TOKEN), "the token is never shown");
    let (channels, order, _) =
        switchboard_core::sessions::channel_health(&h.engine.channels().statuses());
    assert!(order.contains(&"telegram".to_string()));
    assert_eq!(channels["telegram"]["state"], "failed");
    assert_eq!(channels["telegram"]["lastError"], json!(status));
    let record = h.turn("main", "@reply still serving").await;
    assert_eq!(record.result.as_deref(), Some("still serving"));
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_refused_once_recovers_when_the_platform_takes_it_again() {
    let fake = FakeTelegram::start(TOKEN).await;
    // Refused twice (as a revoked token), then taken.
    fake.fail_next("getMe", FakeFailure::Unauthorized);
    fake.fail_next("getMe", FakeFailure::Unauthorized);
    let h = started(config(&fake, DmPolicy::Open)).await;
    let failed = failed_state(&h).await;
    assert!(failed.contains("401"), "{failed}");
    // Tried again, seldom, and up again once the token is taken: health says so.
    fake.private_message(42, "alice", "@reply back again");
    assert_eq!(text(&sent(&fake, 1).await[0]), "back again");
    assert!(telegram_state(&h).is_up(), "{:?}", telegram_state(&h));
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owners_switch_the_send_policy_from_the_chat_and_others_are_told_no() {
    let fake = FakeTelegram::start(TOKEN).await;
    let mut config = config(&fake, DmPolicy::Open);
    config.channels.telegram.access.owners = Some(vec!["@Alice".into()]);
    let h = started(config).await;
    fake.private_message(43, "mallory", "/send off");
    let refused = sent(&fake, 1).await;
    assert!(
        text(&refused[0]).contains("channels.telegram.owners"),
        "{refused:?}"
    );
    let bot = switchboard_testkit::telegram::BOT_USERNAME;
    fake.group_message(-1003, "Ops", 42, "alice", &format!("/send@{bot} off"), None);
    let answers = sent(&fake, 2).await;
    assert_eq!(answers[1]["chat_id"], json!(-1003));
    let group = h.key("agent:main:telegram:group:-1003");
    let entry = h.engine.store().get(&group).await.unwrap().unwrap();
    assert_eq!(entry.send_policy.as_deref(), Some("deny"));
    // Neither command started a run.
    assert!(
        h.transcript("agent:main:telegram:group:-1003")
            .await
            .is_empty()
    );
    assert!(h.transcript("main").await.is_empty());
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_operator_send_reaches_a_telegram_group_once() {
    let fake = FakeTelegram::start(TOKEN).await;
    let h = started(config(&fake, DmPolicy::Open)).await;
    let send = || switchboard_protocol::delivery::SendParams {
        channel: "telegram".into(),
        to: "-1001".into(),
        account_id: None,
        thread_id: Some("5".into()),
        message: "from the operator".into(),
        idempotency_key: "op-1".into(),
    };
    let first = h.engine.outbox().send(send()).await.unwrap();
    let again = h.engine.outbox().send(send()).await.unwrap();
    assert_eq!(first.id, again.id, "the same key is the same delivery");
    let delivered = sent(&fake, 1).await;
    assert_eq!(delivered[0]["chat_id"], json!(-1001));
    assert_eq!(delivered[0]["message_thread_id"], json!(5));
    assert_eq!(text(&delivered[0]), "from the operator");
    // A later send is delivered after it, so the one above was not sent twice.
    let mut later = send();
    later.message = "second".into();
    later.idempotency_key = "op-2".into();
    h.engine.outbox().send(later).await.unwrap();
    let all = sent(&fake, 2).await;
    let texts: Vec<&str> = all.iter().map(text).collect();
    assert_eq!(texts, ["from the operator", "second"]);
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owners_ask_for_status_and_a_new_session_and_other_bots_commands_are_not_ours() {
    let fake = FakeTelegram::start(TOKEN).await;
    let mut config = config(&fake, DmPolicy::Open);
    config.channels.telegram.access.owners = Some(vec!["42".into()]);
    let h = started(config).await;
    fake.private_message(42, "alice", "@reply hello");
    sent(&fake, 1).await;
    let before = h.engine.store().get(&h.key("main")).await.unwrap().unwrap();
    fake.private_message(42, "alice", "/status");
    let status = sent(&fake, 2).await;
    assert!(is_main_status_card(text(&status[1])), "{status:?}");
    fake.private_message(43, "mallory", "/new");
    let refused = sent(&fake, 3).await;
    assert!(text(&refused[2]).contains("Only an owner"), "{refused:?}");
    fake.group_message(-1004, "Other", 42, "alice", "/new@some_other_bot", None);
    fake.private_message(42, "alice", "/new");
    let fresh = sent(&fake, 4).await;
    assert!(
        text(&fresh[3]).starts_with("New session: agent:main:main"),
        "{fresh:?}"
    );
    let after = h.engine.store().get(&h.key("main")).await.unwrap().unwrap();
    assert_ne!(
        after.session_id, before.session_id,
        "/new reset the session"
    );
    // The other bot's command reached nobody: no session for that group.
    let other = h.key("agent:main:telegram:group:-1004");
    assert!(h.engine.store().get(&other).await.unwrap().is_none());
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_listed_groups_and_allowed_senders_reach_the_agent() {
    let fake = FakeTelegram::start(TOKEN).await;
    let mut config = config(&fake, DmPolicy::Open);
    let telegram = &mut config.channels.telegram;
    telegram.access.groups_mut().clear();
    let quiet = GroupSettings {
        require_mention: Some(false),
    };
    telegram.access.groups_mut().insert("-1005".into(), quiet);
    telegram.access.group_allow_from = Some(vec!["@alice".into(), "44".into()]);
    let h = started(config).await;
    let bot = switchboard_testkit::telegram::BOT_USERNAME;
    // Not listed: ignored even with a mention.
    fake.group_message(
        -1006,
        "Elsewhere",
        42,
        "alice",
        &format!("hey @{bot}\n@reply nope"),
        None,
    );
    // Listed, but the sender is not in groupAllowFrom.
    fake.group_message(-1005, "Team", 43, "carol", "@reply not-carol", None);
    // Listed with requireMention off, an allowed sender: no mention needed.
    fake.group_message(-1005, "Team", 44, "dave", "@reply team-ok", None);
    let replies = sent(&fake, 1).await;
    assert_eq!(text(&replies[0]), "team-ok");
    let asked = h.transcript("agent:main:telegram:group:-1005").await;
    let users: Vec<&Value> = asked.iter().filter(|m| m["role"] == "user").collect();
    assert_eq!(users.len(), 1, "only dave's message ran: {users:?}");
    let elsewhere = h.key("agent:main:telegram:group:-1006");
    assert!(h.engine.store().get(&elsewhere).await.unwrap().is_none());
    fake.stop().await;
    h.engine.close().await;

    // groupPolicy "disabled": no group reaches the agent, listed or not.
    let fake = FakeTelegram::start(TOKEN).await;
    let mut config = super::telegram::config(&fake, DmPolicy::Open);
    config.channels.telegram.access.group_policy = Some(GroupPolicy::Disabled);
    let h = started(config).await;
    fake.group_message(
        -1007,
        "Off",
        42,
        "alice",
        &format!("hey @{bot}\n@reply no-groups"),
        None,
    );
    fake.private_message(42, "alice", "@reply dm-ok");
    let replies = sent(&fake, 1).await;
    assert_eq!(text(&replies[0]), "dm-ok");
    let off = h.key("agent:main:telegram:group:-1007");
    assert!(h.engine.store().get(&off).await.unwrap().is_none());
    fake.stop().await;
    h.engine.close().await;
}
