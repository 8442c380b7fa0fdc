//! What the channel kit does for every chat channel, tried through real doors against the fakes:
//! a reply cut at `textChunkLimit` and capped at `maxReplyParts` with a note, a message cut at
//! `maxInboundChars`, bots' messages read only with `allowBots` and stopped by the chat's
//! breaker after a run of them without a person, and `groupAllowFrom` in a channel that had
//! none before the kit (Discord). Each "not answered" is proved by a later message that is: a session's runs are
//! serial and a door hands messages on in order, so the earlier one was decided first.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_core::config::DmPolicy;
use switchboard_core::store::DeliveryStatus;
use switchboard_testkit::discord::{BOT_ID, BOT_USERNAME};
use switchboard_testkit::{FakeDiscord, FakeTelegram};

use super::{discord, telegram};

/// The user messages of `key`'s transcript, as the agent read them.
async fn users(h: &super::support::TestEngine, key: &str) -> Vec<String> {
    let transcript = h.transcript(key).await;
    let users = transcript.iter().filter(|m| m["role"] == "user");
    users.map(|m| m["content"].to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_reply_is_cut_at_the_chunk_limit_and_capped_with_a_note_on_the_rest() {
    let fake = FakeDiscord::start(discord::TOKEN).await;
    let mut config = discord::config(&fake, DmPolicy::Open);
    config.channels.discord.access.text_chunk_limit = Some(500);
    config.channels.discord.access.max_reply_parts = Some(3);
    let h = discord::started(config).await;
    let long = "A sentence of the long answer. ".repeat(400);
    fake.dm("42", "alice", &format!("@reply {long}"));
    discord::sent(&fake, 3).await;
    let records = h.settled_deliveries().await;
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].status, DeliveryStatus::Delivered);
    let parts = fake.sent();
    assert_eq!(parts.len(), 3, "three parts, not the 25 of the whole reply");
    assert!(
        parts.iter().all(|(_, p)| p.chars().count() <= 500),
        "{parts:?}"
    );
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let posted = squash(&format!("{} {}", parts[0].1, parts[1].1));
    assert!(
        squash(&long).starts_with(&posted),
        "the first parts are the answer's beginning"
    );
    let note = &parts[2].1;
    assert!(
        note.contains("more parts of this answer are not posted here")
            && note.contains("at most 3 a reply")
            && note.contains("agent:main:main"),
        "{note}"
    );
    // The whole answer stays in the transcript the note points at.
    let transcript = h.transcript("agent:main:main").await;
    let reply = transcript
        .iter()
        .rfind(|m| m["role"] == "assistant")
        .unwrap();
    assert!(squash(&reply.to_string()).len() >= squash(&long).len());
    fake.stop().await;
    h.engine.close().await;
}

/// A private message to the fake bot from another bot.
fn from_a_bot(fake: &FakeTelegram, text: &str) {
    fake.push_update(json!({"message": {
        "message_id": 1, "date": 1_764_000_000,
        "chat": {"id": 77, "type": "private", "first_name": "otherbot", "username": "otherbot"},
        "from": {"id": 77, "is_bot": true, "first_name": "otherbot", "username": "otherbot"},
        "text": text,
    }}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bots_message_is_answered_only_with_allow_bots() {
    let fake = FakeTelegram::start(telegram::TOKEN).await;
    let h = telegram::started(telegram::config(&fake, DmPolicy::Open)).await;
    from_a_bot(&fake, "@reply to-a-bot");
    fake.private_message(42, "alice", "@reply to-alice");
    let replies: Vec<Value> = telegram::sent(&fake, 1).await;
    assert_eq!(telegram::text(&replies[0]), "to-alice");
    let read = users(&h, "agent:main:main").await;
    assert_eq!(read.len(), 1, "the bot's message started no run: {read:?}");
    fake.stop().await;
    h.engine.close().await;

    let fake = FakeTelegram::start(telegram::TOKEN).await;
    let mut config = telegram::config(&fake, DmPolicy::Open);
    config.channels.telegram.access.allow_bots = Some(true);
    let h = telegram::started(config).await;
    from_a_bot(&fake, "@reply to-a-bot");
    let replies = telegram::sent(&fake, 1).await;
    assert_eq!(telegram::text(&replies[0]), "to-a-bot");
    assert_eq!(replies[0]["chat_id"], 77);
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_guild_channel_only_the_senders_group_allow_from_lists_reach_the_agent() {
    let fake = FakeDiscord::start(discord::TOKEN).await;
    let mut config = discord::config(&fake, DmPolicy::Open);
    config.channels.discord.access.group_allow_from = Some(vec!["44".into()]);
    let h = discord::started(config).await;
    fake.text_channel("700", "dev");
    fake.guild_message("700", "43", "carol", "@reply from-carol", true);
    fake.guild_message("700", "44", "dave", "@reply from-dave", true);
    let replies = discord::sent(&fake, 1).await;
    assert_eq!(replies, [("700".to_string(), "from-dave".to_string())]);
    let read = users(&h, "agent:main:discord:group:700").await;
    assert_eq!(read.len(), 1, "carol's message started no run: {read:?}");
    assert!(read[0].contains("[from dave]"), "{read:?}");
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_200_kb_message_is_read_cut_and_answered_in_at_most_the_capped_parts() {
    let fake = FakeDiscord::start(discord::TOKEN).await;
    let h = discord::started(discord::config(&fake, DmPolicy::Open)).await;
    let huge = "All work and no play makes a long message. ".repeat(200_000 / 43);
    fake.dm("42", "alice", &format!("@reply {huge}"));
    discord::sent(&fake, 1).await;
    h.settled_deliveries().await;
    let posts = fake.sent();
    assert!(posts.len() <= 10, "{} posts", posts.len());
    let read = users(&h, "agent:main:main").await;
    assert!(
        read[0].len() < 51_000,
        "the agent read {} bytes",
        read[0].len()
    );
    assert!(
        read[0].contains("cut at 50000 (maxInboundChars)"),
        "{}",
        &read[0][49_900..]
    );
    fake.stop().await;
    h.engine.close().await;
}

/// A message in guild channel `700` from another bot, mentioning this one.
fn from_another_bot(fake: &FakeDiscord, text: &str) {
    fake.push_message(json!({
        "channel_id": "700", "guild_id": "1200000000000000001", "type": 0,
        "content": format!("<@{BOT_ID}> {text}"),
        "author": {"id": "1300000000000000077", "username": "otherbot", "bot": true},
        "mentions": [{"id": BOT_ID, "username": BOT_USERNAME}],
        "timestamp": "2026-11-26T00:00:00.000000+00:00",
    }));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_of_bot_messages_without_a_person_opens_the_chats_breaker_once() {
    let fake = FakeDiscord::start(discord::TOKEN).await;
    let mut config = discord::config(&fake, DmPolicy::Open);
    config.channels.discord.access.allow_bots = Some(true);
    let h = discord::started(config).await;
    fake.text_channel("700", "dev");
    for i in 1..=12 {
        from_another_bot(&fake, &format!("@reply bot-{i}"));
    }
    fake.guild_message("700", "43", "carol", "@reply a-person", true);
    // Ten bots' messages answered, the notice, and the person's message answered.
    discord::sent(&fake, 12).await;
    h.settled_deliveries().await;
    let posts: Vec<String> = fake.sent().into_iter().map(|(_, text)| text).collect();
    assert_eq!(posts.len(), 12, "{posts:?}");
    let notices = posts
        .iter()
        .filter(|p| p.contains("I stop answering bots"))
        .count();
    assert_eq!(notices, 1, "{posts:?}");
    assert!(
        !posts.iter().any(|p| p == "bot-11" || p == "bot-12"),
        "{posts:?}"
    );
    assert!(posts.iter().any(|p| p == "a-person"), "{posts:?}");
    // After the person, bots are answered again.
    from_another_bot(&fake, "@reply bot-13");
    discord::sent(&fake, 13).await;
    assert_eq!(fake.sent().last().unwrap().1, "bot-13");
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pairing_list_of_every_channel_shows_each_channels_requests() {
    let telegram_fake = FakeTelegram::start(telegram::TOKEN).await;
    let discord_fake = FakeDiscord::start(discord::TOKEN).await;
    // Pairing (the default) on both.
    let mut config = telegram::config(&telegram_fake, DmPolicy::default());
    let other = discord::config(&discord_fake, DmPolicy::default());
    config.channels.discord = other.channels.discord;
    let h = telegram::started(config).await;
    telegram_fake.private_message(42, "alice", "hello");
    discord_fake.dm("43", "bob", "hello");
    telegram::sent(&telegram_fake, 1).await;
    discord::sent(&discord_fake, 1).await;
    let every = switchboard_protocol::pairing::PairingListParams {
        channel: Some("*".into()),
        account_id: None,
    };
    let listed = h.engine.pairing().list(every).await.unwrap();
    let mut seen: Vec<(String, String)> = listed
        .requests
        .iter()
        .map(|r| (r.channel.clone(), r.id.clone()))
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            ("discord".to_string(), "43".to_string()),
            ("telegram".to_string(), "42".to_string())
        ]
    );
    assert_eq!(listed.channel, "*");
    // The reference's Channels page: each pairing account, and the requests by code.
    let page = h.engine.pairing().channels_list().await.unwrap();
    let mut accounts: Vec<(String, String)> = (page.accounts.iter())
        .map(|a| (a.channel_label.clone(), a.account_id.clone()))
        .collect();
    accounts.sort();
    assert_eq!(
        accounts,
        [
            ("Discord".into(), "default".into()),
            ("Telegram".into(), "default".into())
        ]
    );
    let mut requests: Vec<(String, String, bool)> = (page.requests.iter())
        .map(|r| {
            (
                r.channel_label.clone(),
                r.sender_id.clone(),
                r.request_id == r.code,
            )
        })
        .collect();
    requests.sort();
    assert_eq!(
        requests,
        [
            ("Discord".into(), "43".into(), true),
            ("Telegram".into(), "42".into(), true)
        ]
    );
    assert!(
        page.requests[0].expires_at.ends_with('Z'),
        "{:?}",
        page.requests[0]
    );
    assert_eq!(
        (page.limits.pending_per_account, page.limits.ttl_ms),
        (3, 3_600_000)
    );
    telegram_fake.stop().await;
    discord_fake.stop().await;
    h.engine.close().await;
}
