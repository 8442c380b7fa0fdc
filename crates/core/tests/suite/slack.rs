//! The Slack channel against a fake Slack (`switchboard_testkit::FakeSlack`, loopback Web API
//! and Socket Mode WebSocket in the real shapes): DMs and channel messages in, replies out
//! through the outbox, mentions, threads, pairing, owner commands, announces and sub-agent
//! reports, 429s, long replies in parts, and envelopes delivered again (after a drop, a
//! `disconnect`, a restart) that are handled once.

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use switchboard_core::channel::LinkState;
use switchboard_core::config::{Config, DmPolicy, GroupSettings, ProviderApi};
use switchboard_testkit::slack::{BOT_USER, FakeFailure, Posted};
use switchboard_testkit::{FakeSlack, MockLlm, MockReply};

use super::support::{GUARD, TestEngine, is_main_status_card};

const BOT_TOKEN: &str = "xoxb-slack-test";
const APP_TOKEN: &str = "xapp-slack-test";

fn config(fake: &FakeSlack, policy: DmPolicy) -> Config {
    let mut config = Config::default();
    let slack = &mut config.channels.slack;
    slack.enabled = true;
    slack.bot.bot_token = Some(BOT_TOKEN.into());
    slack.bot.app_token = Some(APP_TOKEN.into());
    slack.bot.api_base = Some(fake.api_base());
    slack.access.dm_policy = Some(policy);
    slack
        .access
        .groups_mut()
        .insert("*".into(), GroupSettings::default());
    config.delivery.retry_initial_ms = 50;
    config
}

async fn started(config: Config) -> TestEngine {
    let h = TestEngine::open(config).await;
    h.engine.start_channels();
    h
}

/// Waits until `n` messages were posted; answers them.
async fn sent(fake: &FakeSlack, n: usize) -> Vec<Posted> {
    tokio::time::timeout(GUARD, fake.wait_sent(n))
        .await
        .expect("the app posted the messages")
}

/// Waits until `check` holds for the fake.
async fn saw(fake: &FakeSlack, check: impl FnMut(&FakeSlack) -> bool) {
    tokio::time::timeout(GUARD, fake.wait_for(check))
        .await
        .expect("the fake saw it");
}

fn texts(sent: &[Posted]) -> Vec<&str> {
    sent.iter().map(|p| p.text.as_str()).collect()
}

/// The Slack channel's state as a whole, as `health` shows it.
fn slack_state(h: &TestEngine) -> LinkState {
    let status = h.engine.channels().status("slack").expect("slack reports");
    status.link.expect("slack keeps connections").state
}

/// Waits until the channel's state is `check`'s.
async fn state_becomes(h: &TestEngine, check: impl Fn(&LinkState) -> bool) -> LinkState {
    tokio::time::timeout(GUARD, async {
        loop {
            let state = slack_state(h);
            if check(&state) {
                return state;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the channel reached the state")
}

/// The user messages of session `key`'s transcript.
async fn asked(h: &TestEngine, key: &str) -> Vec<String> {
    let transcript = h.transcript(key).await;
    let users = transcript.iter().filter(|m| m["role"] == "user");
    users.map(|m| m["content"].to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dm_is_answered_in_the_same_conversation_and_its_envelope_acknowledged() {
    let fake = FakeSlack::start(BOT_TOKEN, APP_TOKEN).await;
    let h = started(config(&fake, DmPolicy::Open)).await;
    fake.dm("U42", "@reply pong-1");
    let replies = sent(&fake, 1).await;
    let expected = Posted {
        channel: "DU42".into(),
        text: "pong-1".into(),
        thread_ts: None,
    };
    assert_eq!(replies, [expected]);
    saw(&fake, |f| f.envelopes() == (1, 1)).await;
    assert_eq!(slack_state(&h), LinkState::Up("connected"));
    // dmScope main: the agent's main session, with the DM conversation as its route.
    let route = [Some("slack".into()), Some("DU42".into()), None];
    assert_eq!(h.route_of("main").await, route);
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn channel_messages_need_a_mention_and_a_mention_that_comes_twice_runs_once() {
    let fake = FakeSlack::start(BOT_TOKEN, APP_TOKEN).await;
    let h = started(config(&fake, DmPolicy::Open)).await;
    fake.channel_message(("C700", None), "U43", "@reply not-for-the-app", false);
    fake.own_message("C700", "@reply my-own");
    // Slack sends a mention as a `message` and an `app_mention` of the same ts.
    fake.mention("C700", "U43", "@reply with-mention");
    // An `app_mention` alone (the app is not subscribed to the channel's messages) runs too.
    let ts = "1764000001.000001";
    fake.push_event(
        json!({"type": "app_mention", "channel": "C700", "user": "U44",
        "text": format!("<@{BOT_USER}> @reply mention-event"), "ts": ts, "event_ts": ts}),
    );
    let replies = sent(&fake, 2).await;
    assert_eq!(texts(&replies), ["with-mention", "mention-event"]);
    assert!(replies.iter().all(|p| p.channel == "C700"));
    saw(&fake, |f| f.envelopes() == (5, 5)).await;
    tokio::time::timeout(GUARD, h.engine.runtime().idle())
        .await
        .unwrap();
    // One session for the channel, two runs: the unmentioned, own and repeated ones ran not.
    let users = asked(&h, "agent:main:slack:group:C700").await;
    assert_eq!(users.len(), 2, "{users:?}");
    assert!(users[0].contains("[from <@U43>]") && users[0].contains("with-mention"));
    assert!(
        !users[0].contains(BOT_USER),
        "the mention is taken out: {users:?}"
    );
    assert_eq!(fake.sent().len(), 2);
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_has_its_own_session_and_the_reply_carries_its_thread_ts() {
    let fake = FakeSlack::start(BOT_TOKEN, APP_TOKEN).await;
    let mut config = config(&fake, DmPolicy::Open);
    config.channels.slack.access.require_mention = Some(false);
    let h = started(config).await;
    let parent = fake.channel_message(("C700", None), "U43", "@reply in-channel", false);
    sent(&fake, 1).await;
    fake.channel_message(("C700", Some(&parent)), "U43", "@reply in-thread", false);
    let replies = sent(&fake, 2).await;
    let in_thread = Posted {
        channel: "C700".into(),
        text: "in-thread".into(),
        thread_ts: Some(parent.clone()),
    };
    assert_eq!(replies[0].thread_ts, None);
    assert_eq!(replies[1], in_thread);
    let key = format!("agent:main:slack:group:c700:thread:{parent}");
    let route = [
        Some("slack".into()),
        Some("C700".into()),
        Some(parent.clone()),
    ];
    assert_eq!(h.route_of(&key).await, route);
    assert_eq!(asked(&h, "agent:main:slack:group:C700").await.len(), 1);
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pairing_gives_a_stranger_a_code_and_an_approved_sender_is_answered() {
    use switchboard_protocol::pairing::PairingApproveParams;

    let fake = FakeSlack::start(BOT_TOKEN, APP_TOKEN).await;
    let h = started(config(&fake, DmPolicy::default())).await;
    let first = fake.dm("U42", "@reply hi-1");
    let answer = sent(&fake, 1).await.remove(0);
    assert_eq!(answer.channel, "DU42");
    assert!(
        answer.text.contains("Your Slack user id: U42"),
        "{answer:?}"
    );
    let code = answer
        .text
        .lines()
        .find_map(|l| l.strip_prefix("Pairing code: "))
        .unwrap_or_else(|| panic!("a pairing code in {answer:?}"))
        .trim()
        .to_string();
    assert!(
        answer
            .text
            .contains(&format!("switchboard pairing approve slack {code}"))
    );
    // The same message delivered again gets no second code.
    fake.redeliver(&first);
    saw(&fake, |f| f.envelopes() == (2, 2)).await;
    let approve = PairingApproveParams {
        channel: Some("slack".into()),
        code,
        notify: true,
        ..Default::default()
    };
    let approved = h.engine.pairing().approve(approve).await.unwrap();
    assert_eq!(approved.approved.id, "U42");
    // The notice names the user: Slack posts it in the app's DM with them.
    let notice = sent(&fake, 2).await.remove(1);
    assert_eq!(notice.channel, "U42");
    assert!(notice.text.contains("approved"), "{notice:?}");
    fake.dm("U42", "@reply hi-3");
    assert_eq!(texts(&sent(&fake, 3).await)[2], "hi-3");
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_announce_from_another_session_lands_in_the_slack_channel() {
    let fake = FakeSlack::start(BOT_TOKEN, APP_TOKEN).await;
    let mock = MockLlm::start().await;
    let mut settings = super::runtime::mock_config(&mock, ProviderApi::OpenAiCompletions, true);
    settings.channels.slack = config(&fake, DmPolicy::Open).channels.slack;
    settings.session.agent_to_agent.max_ping_pong_turns = 0;
    let h = started(settings).await;
    mock.push(MockReply::text("hi channel"));
    fake.channel_message(("C900", None), "U43", "hello", true);
    assert_eq!(texts(&sent(&fake, 1).await), ["hi channel"]);
    // main asks the channel's session; its announce step posts to the channel.
    mock.push(MockReply::text("all green"));
    mock.push(MockReply::text("Announcement: the build is green"));
    let channel = "agent:main:slack:group:c900";
    let args = json!({"sessionKey": channel, "message": "status?", "timeoutSeconds": 0});
    let out = h.invoke("main", "sessions_send", args).await;
    assert_eq!(out.content["status"], "accepted", "{}", out.content);
    let replies = sent(&fake, 2).await;
    let delivered = [
        ("reply", "C900", "delivered"),
        ("announce", "C900", "delivered"),
    ];
    h.assert_settled(&delivered).await;
    assert_eq!(
        texts(&replies),
        ["hi channel", "Announcement: the build is green"]
    );
    assert!(replies.iter().all(|p| p.channel == "C900"));
    mock.stop().await;
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sub_agent_spawned_from_a_slack_channel_reports_there() {
    let fake = FakeSlack::start(BOT_TOKEN, APP_TOKEN).await;
    let h = started(config(&fake, DmPolicy::Open)).await;
    let spawn = json!({"task": "@reply child-report-7"});
    let text = format!("@tool sessions_spawn {spawn}\n@reply spawned");
    fake.channel_message(("C901", None), "U43", &text, true);
    saw(&fake, |f| {
        f.sent()
            .iter()
            .any(|p| p.channel == "C901" && p.text.contains("child-report-7"))
    })
    .await;
    tokio::time::timeout(GUARD, h.engine.runtime().idle())
        .await
        .unwrap();
    h.settled_deliveries().await;
    let in_channel: Vec<String> = fake
        .sent()
        .into_iter()
        .filter(|p| p.channel == "C901")
        .map(|p| p.text)
        .collect();
    assert!(
        in_channel.contains(&"spawned".to_string()),
        "{in_channel:?}"
    );
    let reports = in_channel.iter().filter(|t| t.contains("child-report-7"));
    assert_eq!(reports.count(), 1, "{in_channel:?}");
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_socket_dropped_mid_run_and_a_disconnect_lose_nothing_and_repeat_nothing() {
    let fake = FakeSlack::start(BOT_TOKEN, APP_TOKEN).await;
    let h = started(config(&fake, DmPolicy::Open)).await;
    // The first message's acknowledgement is lost on the way: Slack will deliver it again.
    fake.lose_acks(true);
    fake.dm("U42", "@delay 300\n@reply one");
    tokio::time::timeout(GUARD, async {
        while asked(&h, "main").await.is_empty() {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the first run started");
    // Mid-run the socket goes; a message arrives while it is down.
    fake.drop_connection(|fake| {
        fake.lose_acks(false);
        fake.dm("U42", "@reply two");
    });
    let replies = sent(&fake, 2).await;
    assert_eq!(texts(&replies), ["one", "two"]);
    // The first envelope came again (retry_attempt 1) and was acknowledged, not run again.
    saw(&fake, |f| f.envelopes() == (2, 2)).await;
    // Slack asks for a new connection; the next message comes on it.
    fake.disconnect("refresh_requested");
    saw(&fake, |f| f.connections() == 3).await;
    fake.dm("U42", "@reply three");
    let replies = sent(&fake, 3).await;
    assert_eq!(texts(&replies), ["one", "two", "three"]);
    tokio::time::timeout(GUARD, h.engine.runtime().idle())
        .await
        .unwrap();
    let users = asked(&h, "main").await;
    assert_eq!(users.len(), 3, "each message ran once: {users:?}");
    assert_eq!(fake.sent().len(), 3);
    assert_eq!(
        state_becomes(&h, LinkState::is_up).await,
        LinkState::Up("connected")
    );
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_seen_again_after_a_restart_is_not_handled_twice() {
    let fake = FakeSlack::start(BOT_TOKEN, APP_TOKEN).await;
    let h = started(config(&fake, DmPolicy::Open)).await;
    let once = fake.dm("U42", "@reply once");
    sent(&fake, 1).await;
    let h = h.restart(None).await;
    h.engine.start_channels();
    saw(&fake, |f| f.connections() == 2).await;
    // Slack delivers the handled event again, then a new one: only the new one runs (a second
    // run of the first would be answered before it, in the same session).
    fake.redeliver(&once);
    fake.dm("U42", "@reply after");
    let replies = sent(&fake, 2).await;
    assert_eq!(texts(&replies), ["once", "after"]);
    saw(&fake, |f| f.envelopes() == (3, 3)).await;
    tokio::time::timeout(GUARD, h.engine.runtime().idle())
        .await
        .unwrap();
    assert_eq!(asked(&h, "main").await.len(), 2);
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_slack_gave_up_on_while_the_gateway_was_down_are_fetched_and_answered_once() {
    let fake = FakeSlack::start(BOT_TOKEN, APP_TOKEN).await;
    let h = started(config(&fake, DmPolicy::Open)).await;
    fake.dm("U42", "@reply before");
    fake.mention("C700", "U43", "@reply before in the channel");
    sent(&fake, 2).await;
    h.engine.close().await;
    // Sent while the gateway was down, for longer than Slack retries an event.
    fake.dm("U42", "@reply missed one");
    fake.dm("U42", "@reply missed two");
    fake.mention("C700", "U43", "@reply missed in the channel");
    fake.give_up_unacknowledged();
    let h = h.restart(None).await;
    h.engine.start_channels();
    let replies = sent(&fake, 5).await;
    let missed: Vec<&str> = texts(&replies[2..]).into_iter().collect();
    let mut sorted = missed.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        ["missed in the channel", "missed one", "missed two"]
    );
    // In order within a conversation; a later start answers none of them again.
    let dm: Vec<&str> = missed
        .into_iter()
        .filter(|t| t.starts_with("missed o") || t.starts_with("missed t"))
        .collect();
    assert_eq!(dm, ["missed one", "missed two"]);
    let h = h.restart(None).await;
    h.engine.start_channels();
    fake.dm("U42", "@reply after");
    let replies = sent(&fake, 6).await;
    assert_eq!(replies[5].text, "after");
    assert_eq!(fake.sent().len(), 6, "nothing answered twice");
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_is_delivered_after_its_retry_after() {
    let fake = FakeSlack::start(BOT_TOKEN, APP_TOKEN).await;
    fake.fail_next(FakeFailure::TooManyRequests { retry_after: 1 });
    let h = started(config(&fake, DmPolicy::Open)).await;
    fake.dm("U42", "@reply after-429");
    assert_eq!(texts(&sent(&fake, 1).await), ["after-429"]);
    assert_eq!(fake.post_attempts(), [true, false]);
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slacks_own_errors_fail_the_delivery_with_their_reason() {
    let fake = FakeSlack::start(BOT_TOKEN, APP_TOKEN).await;
    fake.fail_next(FakeFailure::BadRequest("is_archived".into()));
    let h = started(config(&fake, DmPolicy::Open)).await;
    fake.dm("U42", "@reply into-the-void");
    let records = tokio::time::timeout(GUARD, async {
        loop {
            let records = h.settled_deliveries().await;
            if !records.is_empty() {
                return records;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await
    .unwrap();
    assert_eq!(records[0].status.as_str(), "failed");
    let reason = records[0].detail.clone().unwrap_or_default();
    assert!(reason.contains("is_archived"), "{reason}");
    // One attempt: a permanent error is not retried.
    assert_eq!(fake.post_attempts(), [true]);
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_10000_character_reply_arrives_in_ordered_parts() {
    let fake = FakeSlack::start(BOT_TOKEN, APP_TOKEN).await;
    let h = started(config(&fake, DmPolicy::Open)).await;
    let sentence = "Slack takes four thousand characters a message. ";
    let long = sentence.repeat(10_000 / sentence.len() + 1);
    fake.dm("U42", &format!("@reply {long}"));
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let whole = squash(&long);
    let joined = |parts: &[Posted]| squash(&texts(parts).join(" "));
    saw(&fake, |f| joined(&f.sent()).len() >= whole.len()).await;
    let parts = fake.sent();
    assert_eq!(joined(&parts), whole);
    assert_eq!(parts.len(), 3, "{} parts", parts.len());
    assert!(parts.iter().all(|p| p.text.chars().count() <= 4000));
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owners_ask_for_status_and_a_new_session_and_others_are_refused() {
    let fake = FakeSlack::start(BOT_TOKEN, APP_TOKEN).await;
    let mut config = config(&fake, DmPolicy::Allowlist);
    config.channels.slack.access.owners = Some(vec!["U42".into()]);
    config.channels.slack.access.allow_from = Some(vec!["U43".into()]);
    let h = started(config).await;
    // An owner is let in by DM without being in allowFrom.
    fake.dm("U42", "@reply hello");
    sent(&fake, 1).await;
    let before = h.session_id("main").await;
    fake.dm("U42", "/status");
    let status = sent(&fake, 2).await;
    assert!(is_main_status_card(&status[1].text), "{status:?}");
    fake.dm("U43", "/new");
    let refused = sent(&fake, 3).await;
    assert_eq!(refused[2].channel, "DU43");
    assert!(refused[2].text.contains("Only an owner"), "{refused:?}");
    assert!(
        refused[2].text.contains("channels.slack.owners"),
        "{refused:?}"
    );
    // In a channel a command needs no mention.
    fake.channel_message(("C700", None), "U42", "/send off", false);
    let off = sent(&fake, 4).await;
    assert_eq!(off[3].channel, "C700");
    assert!(off[3].text.contains("deny"), "{off:?}");
    fake.dm("U42", "/new");
    let reset = sent(&fake, 5).await;
    assert!(
        reset[4].text.starts_with("New session: agent:main:main"),
        "{reset:?}"
    );
    assert_ne!(h.session_id("main").await, before, "/new reset the session");
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_event_is_skipped_and_the_channel_keeps_running() {
    let fake = FakeSlack::start(BOT_TOKEN, APP_TOKEN).await;
    let h = started(config(&fake, DmPolicy::Open)).await;
    fake.push_event(json!({"type": "message", "channel": 5, "text": "no ts"}));
    fake.push_event(json!("not an event"));
    fake.push_event(json!({"type": "reaction_added", "user": "U42", "reaction": "tada"}));
    fake.dm("U42", "@reply still-here");
    assert_eq!(texts(&sent(&fake, 1).await), ["still-here"]);
    // Every envelope was acknowledged: a redelivery would not mend a malformed one.
    saw(&fake, |f| f.envelopes() == (4, 4)).await;
    assert_eq!(slack_state(&h), LinkState::Up("connected"));
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_token_stops_the_app_and_health_says_why() {
    let fake = FakeSlack::start(BOT_TOKEN, APP_TOKEN).await;
    let mut config = config(&fake, DmPolicy::Open);
    config.channels.slack.bot.app_token = Some("xapp-wrong".into());
    let h = started(config).await;
    let state = state_becomes(&h, |s| matches!(s, LinkState::Failed(_))).await;
    let why = state.last_error().unwrap_or_default().to_string();
    assert!(
        why.contains("channels.slack.appToken") && why.contains("invalid_auth"),
        "{why}"
    );
    assert!(!why.contains("xapp-wrong"), "no token in the reason: {why}");
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn link_disabled_stops_the_app_and_health_says_so() {
    let fake = FakeSlack::start(BOT_TOKEN, APP_TOKEN).await;
    let h = started(config(&fake, DmPolicy::Open)).await;
    fake.dm("U42", "@reply up");
    sent(&fake, 1).await;
    fake.disconnect("link_disabled");
    let state = state_becomes(&h, |s| matches!(s, LinkState::Failed(_))).await;
    let why = state.last_error().unwrap_or_default().to_string();
    assert!(why.contains("link_disabled"), "{why}");
    assert_eq!(fake.connections(), 1, "no new connection was opened");
    fake.stop().await;
    h.engine.close().await;
}
