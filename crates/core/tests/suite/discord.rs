//! The Discord channel against a fake Discord (`switchboard_testkit::FakeDiscord`, loopback REST
//! and Gateway WebSocket in the real shapes): DMs and guild messages in, replies out through the
//! outbox, mentions, threads, 429s, long replies in parts, and a Gateway connection dropped
//! mid-run that is resumed with nothing lost or repeated.

use pretty_assertions::assert_eq;
use serde_json::json;
use switchboard_core::channel::LinkState;
use switchboard_core::config::{Config, DmPolicy, GroupSettings, ProviderApi};
use switchboard_testkit::FakeDiscord;
use switchboard_testkit::discord::{BOT_ID, DiscordCall, FakeFailure, GatewayEvent, sent_of};
use switchboard_testkit::{MockLlm, MockReply};

use super::support::{GUARD, TestEngine, is_main_status_card};

pub(super) const TOKEN: &str = "discord-test-token";
/// GUILDS | GUILD_MESSAGES | DIRECT_MESSAGES | MESSAGE_CONTENT.
const INTENTS: u64 = 1 | 1 << 9 | 1 << 12 | 1 << 15;

pub(super) fn config(fake: &FakeDiscord, policy: DmPolicy) -> Config {
    let mut config = Config::default();
    let discord = &mut config.channels.discord;
    discord.enabled = true;
    discord.bot.bot_token = Some(TOKEN.into());
    discord.bot.api_base = Some(fake.api_base());
    discord.bot.gateway_url = Some(fake.gateway_url());
    discord.access.dm_policy = Some(policy);
    discord
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

/// Waits until `n` messages were created; answers (channel id, content) of each.
pub(super) async fn sent(fake: &FakeDiscord, n: usize) -> Vec<(String, String)> {
    tokio::time::timeout(GUARD, fake.wait_sent(n))
        .await
        .expect("the bot sent the messages")
}

/// Waits until the Gateway side saw what `check` asks for.
async fn saw(fake: &FakeDiscord, check: impl FnMut(&[DiscordCall], &[GatewayEvent]) -> bool) {
    tokio::time::timeout(GUARD, fake.wait_for(check))
        .await
        .expect("the fake saw it");
}

fn texts(sent: &[(String, String)]) -> Vec<&str> {
    sent.iter().map(|(_, text)| text.as_str()).collect()
}

/// The Discord channel's state as a whole, as `health` shows it.
fn discord_state(h: &TestEngine) -> LinkState {
    let status = h
        .engine
        .channels()
        .status("discord")
        .expect("discord reports its state");
    status.link.expect("discord keeps connections").state
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dm_is_answered_in_the_same_channel() {
    let fake = FakeDiscord::start(TOKEN).await;
    let h = started(config(&fake, DmPolicy::Open)).await;
    fake.dm("42", "alice", "@reply pong-1");
    let replies = sent(&fake, 1).await;
    assert_eq!(replies, [("542".to_string(), "pong-1".to_string())]);
    assert_eq!(
        fake.gateway_events().first(),
        Some(&GatewayEvent::Identify { intents: INTENTS })
    );
    assert_eq!(discord_state(&h), LinkState::Up("connected"));
    // dmScope main: the agent's main session, with the DM channel as its route.
    let entry = h.engine.store().get(&h.key("main")).await.unwrap().unwrap();
    assert_eq!(entry.last_channel.as_deref(), Some("discord"));
    assert_eq!(entry.last_to.as_deref(), Some("542"));
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guild_messages_need_a_mention_or_a_reply_and_the_bots_own_are_ignored() {
    let fake = FakeDiscord::start(TOKEN).await;
    let h = started(config(&fake, DmPolicy::Open)).await;
    fake.text_channel("700", "dev");
    fake.guild_message("700", "43", "carol", "@reply not-for-the-bot", false);
    fake.own_message("700", "@reply my-own");
    fake.guild_message("700", "43", "carol", "@reply with-mention", true);
    fake.reply_to_bot("700", "44", "dave", "@reply reply-ok");
    let replies = sent(&fake, 2).await;
    assert_eq!(texts(&replies), ["with-mention", "reply-ok"]);
    assert!(replies.iter().all(|(channel, _)| channel == "700"));
    // One session for the channel; its runs are serial, so an earlier message that had started
    // a run would be in the transcript before these.
    let key = "agent:main:discord:group:700";
    let users: Vec<String> = h
        .transcript(key)
        .await
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .collect();
    assert_eq!(users.len(), 2, "{users:?}");
    assert!(users[0].contains("[from carol]") && users[0].contains("with-mention"));
    assert!(
        !users[0].contains(BOT_ID),
        "the bot's mention is taken out: {users:?}"
    );
    let entry = h.engine.store().get(&h.key(key)).await.unwrap().unwrap();
    assert_eq!(entry.display_name.as_deref(), Some("#dev"));
    fake.stop().await;
    h.engine.close().await;
}

/// A group DM (channel type 3) has no guild, but it is a group: its own session, as the
/// reference keys it, not the main session a DM goes to.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_dm_is_a_group_of_its_own() {
    let fake = FakeDiscord::start(TOKEN).await;
    let h = started(config(&fake, DmPolicy::Open)).await;
    fake.group_dm("900", "weekend");
    fake.group_dm_message("900", "43", "carol", "@reply in-the-group");
    let replies = sent(&fake, 1).await;
    assert_eq!(replies, [("900".to_string(), "in-the-group".to_string())]);
    let key = "agent:main:discord:group:900";
    let entry = h.engine.store().get(&h.key(key)).await.unwrap();
    assert!(entry.is_some(), "no session {key}");
    let main = h.transcript("agent:main:main").await;
    assert!(main.iter().all(|m| m["role"] != "user"), "{main:?}");
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_has_its_own_session_and_is_answered_in_the_thread() {
    let fake = FakeDiscord::start(TOKEN).await;
    let h = started(config(&fake, DmPolicy::Open)).await;
    fake.thread("800", "700", "design");
    fake.guild_message("800", "43", "carol", "@reply in-thread", true);
    let replies = sent(&fake, 1).await;
    assert_eq!(replies, [("800".to_string(), "in-thread".to_string())]);
    let key = h.key("agent:main:discord:group:700:thread:800");
    let entry = h
        .engine
        .store()
        .get(&key)
        .await
        .unwrap()
        .expect("the thread's session");
    assert_eq!(entry.last_to.as_deref(), Some("700"));
    assert_eq!(entry.last_thread_id.as_deref(), Some("800"));
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_is_delivered_after_its_retry_after() {
    let fake = FakeDiscord::start(TOKEN).await;
    fake.fail_next(FakeFailure::TooManyRequests { retry_after: 1 });
    let h = started(config(&fake, DmPolicy::Open)).await;
    fake.dm("42", "alice", "@reply after-429");
    let replies = sent(&fake, 1).await;
    assert_eq!(texts(&replies), ["after-429"]);
    let attempts: Vec<(bool, serde_json::Value, serde_json::Value)> = fake
        .calls()
        .iter()
        .filter(|c| c.path.ends_with("/messages"))
        .map(|c| {
            (
                c.refused,
                c.body["nonce"].clone(),
                c.body["enforce_nonce"].clone(),
            )
        })
        .collect();
    // Both attempts carry the same nonce, so that Discord creates the part once even when an
    // attempt's answer is lost; Discord takes at most 25 characters.
    let nonce = attempts[0].1.as_str().expect("a nonce").to_string();
    assert!(nonce.len() <= 25, "{nonce}");
    assert_eq!(
        attempts,
        [
            (true, json!(nonce), json!(true)),
            (false, json!(nonce), json!(true))
        ]
    );
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_10000_character_reply_arrives_in_ordered_parts() {
    let fake = FakeDiscord::start(TOKEN).await;
    let h = started(config(&fake, DmPolicy::Open)).await;
    let sentence = "Discord takes two thousand characters at most. ";
    let long = sentence.repeat(10_000 / sentence.len() + 1);
    fake.dm("42", "alice", &format!("@reply {long}"));
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let whole = squash(&long);
    // Every part taken, in order: joined back they are the reply.
    let joined = |parts: &[(String, String)]| squash(&texts(parts).join(" "));
    tokio::time::timeout(
        GUARD,
        fake.wait_for(|calls, _| {
            let parts = switchboard_testkit::discord::sent_of(calls);
            joined(&parts).len() >= whole.len()
        }),
    )
    .await
    .expect("the whole reply was sent");
    let parts = fake.sent();
    assert_eq!(joined(&parts), whole);
    assert!(parts.len() >= 5, "{} parts", parts.len());
    assert!(parts.iter().all(|(_, p)| p.chars().count() <= 2000));
    let nonces: std::collections::BTreeSet<String> = fake
        .calls()
        .iter()
        .filter_map(|c| c.body["nonce"].as_str().map(str::to_string))
        .collect();
    assert_eq!(nonces.len(), parts.len(), "each part its own nonce");
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gateway_dropped_mid_run_is_resumed_with_nothing_lost_or_repeated() {
    let fake = FakeDiscord::start(TOKEN).await;
    let h = started(config(&fake, DmPolicy::Open)).await;
    fake.dm("42", "alice", "@delay 3000\n@reply one");
    // The run has started (the channel shows "typing…"); the connection goes, and two more
    // messages arrive while it is down.
    saw(&fake, |calls, _| {
        calls.iter().any(|c| c.path.ends_with("/typing"))
    })
    .await;
    fake.drop_connection(|fake| {
        fake.dm("42", "alice", "@reply two");
        fake.dm("42", "alice", "@reply three");
    });
    let replies = sent(&fake, 3).await;
    assert_eq!(texts(&replies), ["one", "two", "three"]);
    // Resumed (READY was 1, the first message 2), not identified again.
    let resumed = GatewayEvent::Resume {
        session_id: "session-1".into(),
        seq: Some(2),
    };
    let events: Vec<GatewayEvent> = fake
        .gateway_events()
        .into_iter()
        .filter(|e| *e != GatewayEvent::Heartbeat)
        .collect();
    assert_eq!(
        events,
        [GatewayEvent::Identify { intents: INTENTS }, resumed]
    );
    // Nothing comes twice: a later message is answered right after them.
    fake.dm("42", "alice", "@reply four");
    let replies = sent(&fake, 4).await;
    assert_eq!(texts(&replies), ["one", "two", "three", "four"]);
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn op_7_resumes_and_an_unresumable_op_9_identifies_anew() {
    let fake = FakeDiscord::start(TOKEN).await;
    let h = started(config(&fake, DmPolicy::Open)).await;
    fake.dm("42", "alice", "@reply one");
    sent(&fake, 1).await;
    fake.reconnect();
    fake.dm("42", "alice", "@reply two");
    sent(&fake, 2).await;
    fake.invalidate(false);
    fake.dm("42", "alice", "@reply three");
    let replies = sent(&fake, 3).await;
    assert_eq!(texts(&replies), ["one", "two", "three"]);
    let kinds: Vec<&str> = fake
        .gateway_events()
        .iter()
        .filter_map(|e| match e {
            GatewayEvent::Identify { .. } => Some("identify"),
            GatewayEvent::Resume { .. } => Some("resume"),
            GatewayEvent::Heartbeat => None,
        })
        .collect();
    assert_eq!(kinds, ["identify", "resume", "identify"]);
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_seen_again_after_a_restart_is_not_handled_twice() {
    let fake = FakeDiscord::start(TOKEN).await;
    let h = started(config(&fake, DmPolicy::Open)).await;
    let once = fake.dm("42", "alice", "@reply once");
    sent(&fake, 1).await;
    let h = h.restart(None).await;
    h.engine.start_channels();
    let identified = |events: &[GatewayEvent]| {
        events
            .iter()
            .filter(|e| matches!(e, GatewayEvent::Identify { .. }))
            .count()
    };
    saw(&fake, |_, events| identified(events) == 2).await;
    // The new session brings the handled message again, then a new one: only the new one
    // runs (a second run of the first would be answered before it, in the same session).
    fake.repeat(&once);
    fake.dm("42", "alice", "@reply after");
    let replies = sent(&fake, 2).await;
    assert_eq!(texts(&replies), ["once", "after"]);
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_sent_while_the_gateway_was_down_are_fetched_and_answered_once() {
    let fake = FakeDiscord::start(TOKEN).await;
    fake.text_channel("700", "dev");
    let h = started(config(&fake, DmPolicy::Open)).await;
    fake.dm("42", "alice", "@reply before");
    fake.guild_message("700", "43", "carol", "@reply before in dev", true);
    sent(&fake, 2).await;
    h.engine.close().await;
    // Sent while no process is connected: the old session's events, never delivered to the new
    // one (as on Discord).
    fake.dm("42", "alice", "@reply missed one");
    fake.dm("42", "alice", "@reply missed two");
    fake.guild_message("700", "43", "carol", "@reply missed in dev", true);
    let h = h.restart(None).await;
    h.engine.start_channels();
    let replies = sent(&fake, 5).await;
    let mut missed: Vec<(String, String)> = replies[2..].to_vec();
    missed.sort();
    assert_eq!(
        missed,
        [
            ("542".to_string(), "missed one".to_string()),
            ("542".to_string(), "missed two".to_string()),
            ("700".to_string(), "missed in dev".to_string()),
        ]
    );
    // In order within a chat; and a later restart fetches them again but answers none twice.
    let dm: Vec<&str> = texts(&replies[2..])
        .into_iter()
        .filter(|t| t.starts_with("missed o") || t.starts_with("missed t"))
        .collect();
    assert_eq!(dm, ["missed one", "missed two"]);
    let h = h.restart(None).await;
    h.engine.start_channels();
    fake.dm("42", "alice", "@reply after");
    let replies = sent(&fake, 6).await;
    assert_eq!(replies[5].1, "after");
    assert_eq!(fake.sent().len(), 6, "nothing answered twice");
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pairing_gives_a_stranger_a_code_and_an_approved_sender_is_answered() {
    let fake = FakeDiscord::start(TOKEN).await;
    let h = started(config(&fake, DmPolicy::default())).await;
    fake.dm("42", "alice", "@reply hi-1");
    let (channel, answer) = sent(&fake, 1).await.remove(0);
    assert_eq!(channel, "542");
    assert!(answer.contains("Your Discord user id: 42"), "{answer}");
    let code = super::support::pairing_code(&answer, "discord");
    assert_eq!(h.approve("discord", code).await, "42");
    // The notice names the user; it goes to their DM channel.
    let (channel, notice) = sent(&fake, 2).await.remove(1);
    assert_eq!(channel, "542");
    assert!(notice.contains("approved"), "{notice}");
    fake.dm("42", "alice", "@reply hi-3");
    assert_eq!(
        sent(&fake, 3).await[2],
        ("542".to_string(), "hi-3".to_string())
    );
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_event_is_skipped_and_the_channel_keeps_running() {
    let fake = FakeDiscord::start(TOKEN).await;
    let h = started(config(&fake, DmPolicy::Open)).await;
    fake.dispatch(
        "MESSAGE_CREATE",
        serde_json::json!({"id": "1", "content": 5}),
    );
    fake.dispatch("GUILD_CREATE", serde_json::json!("not a guild"));
    fake.dm("42", "alice", "@reply still-here");
    assert_eq!(texts(&sent(&fake, 1).await), ["still-here"]);
    assert_eq!(discord_state(&h), LinkState::Up("connected"));
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bot_heartbeats_at_the_interval_hello_gives() {
    let fake = FakeDiscord::start(TOKEN).await;
    fake.set_heartbeat_ms(100);
    let h = started(config(&fake, DmPolicy::Open)).await;
    let beats = |events: &[GatewayEvent]| {
        events
            .iter()
            .filter(|e| **e == GatewayEvent::Heartbeat)
            .count()
    };
    saw(&fake, |_, events| beats(events) >= 3).await;
    let events = fake.gateway_events();
    assert_eq!(events[0], GatewayEvent::Identify { intents: INTENTS });
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owners_ask_for_status_and_a_new_session_and_others_are_refused() {
    let fake = FakeDiscord::start(TOKEN).await;
    let mut config = config(&fake, DmPolicy::Allowlist);
    config.channels.discord.access.owners = Some(vec!["42".into()]);
    config.channels.discord.access.allow_from = Some(vec!["43".into()]);
    let h = started(config).await;
    // An owner is let in by DM without being in allowFrom.
    fake.dm("42", "alice", "@reply hello");
    sent(&fake, 1).await;
    let before = h.engine.store().get(&h.key("main")).await.unwrap().unwrap();
    fake.dm("42", "alice", "/status");
    let status = sent(&fake, 2).await;
    assert!(is_main_status_card(&status[1].1), "{status:?}");
    fake.dm("43", "bob", "/new");
    let refused = sent(&fake, 3).await;
    assert_eq!(refused[2].0, "543");
    assert!(refused[2].1.contains("Only an owner"), "{refused:?}");
    assert!(
        refused[2].1.contains("channels.discord.owners"),
        "{refused:?}"
    );
    // In a guild channel a command needs no mention.
    fake.text_channel("700", "dev");
    fake.guild_message("700", "42", "alice", "/new", false);
    let fresh = sent(&fake, 4).await;
    assert_eq!(fresh[3].0, "700");
    assert!(
        fresh[3].1.starts_with("Nothing to reset"),
        "the channel had no session yet: {fresh:?}"
    );
    fake.dm("42", "alice", "/new");
    let reset = sent(&fake, 5).await;
    assert!(
        reset[4].1.starts_with("New session: agent:main:main"),
        "{reset:?}"
    );
    let after = h.engine.store().get(&h.key("main")).await.unwrap().unwrap();
    assert_ne!(
        after.session_id, before.session_id,
        "/new reset the session"
    );
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_announce_from_another_session_lands_in_the_discord_channel() {
    let fake = FakeDiscord::start(TOKEN).await;
    let mock = MockLlm::start().await;
    let mut settings = super::runtime::mock_config(&mock, ProviderApi::OpenAiCompletions, true);
    settings.channels.discord = config(&fake, DmPolicy::Open).channels.discord;
    settings.session.agent_to_agent.max_ping_pong_turns = 0;
    let h = started(settings).await;
    fake.text_channel("700", "dev");
    mock.push(MockReply::text("hi channel"));
    fake.guild_message("700", "43", "carol", "hello", true);
    assert_eq!(texts(&sent(&fake, 1).await), ["hi channel"]);
    // main asks the channel's session; its announce step posts to the channel.
    mock.push(MockReply::text("all green"));
    mock.push(MockReply::text("Announcement: the build is green"));
    let channel = "agent:main:discord:group:700";
    let args = json!({"sessionKey": channel, "message": "status?", "timeoutSeconds": 0});
    let out = h.invoke("main", "sessions_send", args).await;
    assert_eq!(out.content["status"], "accepted", "{}", out.content);
    let replies = sent(&fake, 2).await;
    h.assert_settled(&[
        ("reply", "700", "delivered"),
        ("announce", "700", "delivered"),
    ])
    .await;
    assert_eq!(
        replies,
        [
            ("700".to_string(), "hi channel".to_string()),
            (
                "700".to_string(),
                "Announcement: the build is green".to_string()
            )
        ]
    );
    assert_eq!(fake.sent().len(), 2, "nothing else was posted");
    mock.stop().await;
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sub_agent_spawned_from_a_guild_channel_reports_in_the_channel() {
    let fake = FakeDiscord::start(TOKEN).await;
    let mut config = config(&fake, DmPolicy::Open);
    config.channels.discord.access.require_mention = Some(false);
    let h = started(config).await;
    fake.text_channel("701", "research");
    let spawn = json!({"task": "@reply child-report-7"});
    let text = format!("@tool sessions_spawn {spawn}\n@reply spawned");
    fake.guild_message("701", "43", "carol", &text, false);
    saw(&fake, |calls, _| {
        sent_of(calls)
            .iter()
            .any(|(channel, text)| channel == "701" && text.contains("child-report-7"))
    })
    .await;
    tokio::time::timeout(GUARD, h.engine.runtime().idle())
        .await
        .unwrap();
    h.settled_deliveries().await;
    let in_channel: Vec<String> = fake
        .sent()
        .into_iter()
        .filter(|(channel, _)| channel == "701")
        .map(|(_, text)| text)
        .collect();
    assert!(
        in_channel.contains(&"spawned".to_string()),
        "{in_channel:?}"
    );
    let reports = in_channel
        .iter()
        .filter(|t| t.contains("child-report-7"))
        .count();
    assert_eq!(reports, 1, "{in_channel:?}");
    assert_eq!(fake.sent().len(), in_channel.len(), "all in the channel");
    fake.stop().await;
    h.engine.close().await;
}
