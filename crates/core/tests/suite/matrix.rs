//! The Matrix channel against a real homeserver: Synapse on loopback, from the test kit
//! (`switchboard_testkit::synapse`), with users registered through its admin API. A person (a
//! second user) talks to the bot in a direct room and in a group room; what the bot wrote is read
//! back from the room's history. Each test has users and rooms of its own on the one Synapse of
//! the test process. Without Python the tests say `NOT RUN` (and fail under `CI=true`).

use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::json;
use switchboard_core::channel::LinkState;
use switchboard_core::config::{
    AutoJoin, Config, DmPolicy, GroupSettings, ProviderApi, ThreadReplies,
};
use switchboard_testkit::synapse::{self, MatrixUser, Synapse};
use switchboard_testkit::{MockLlm, MockReply};

use super::support::{GUARD, TestEngine, channel_state, pairing_code, until};

/// The homeserver and this test's bot and person, or `None` (said as NOT RUN).
async fn world(test: &str) -> Option<(&'static Synapse, MatrixUser, MatrixUser)> {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let hs = match tokio::task::block_in_place(|| synapse::shared(tmp)) {
        Ok(hs) => hs,
        Err(missing) => {
            synapse::not_run(test, &missing);
            return None;
        }
    };
    let bot = hs.register("switchbot").await;
    let alice = hs.register("alice").await;
    Some((hs, bot, alice))
}

/// The bot on its access token, joining whatever it is invited to, every room listed.
pub(super) fn config(hs: &Synapse, bot: &MatrixUser, policy: DmPolicy) -> Config {
    let mut config = Config::default();
    let matrix = &mut config.channels.matrix;
    matrix.enabled = true;
    matrix.bot.homeserver = Some(hs.url.clone());
    matrix.bot.user_id = Some(bot.user_id.clone());
    matrix.bot.access_token = Some(bot.access_token.clone());
    matrix.access.dm_policy = Some(policy);
    matrix.bot.auto_join = Some(AutoJoin::Always);
    matrix
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

/// The Matrix channel's state as a whole, as `health` shows it.
fn matrix_state(h: &TestEngine) -> LinkState {
    channel_state(h, "matrix")
}

/// Waits until the bot has accepted its invitation to `room`.
async fn joined(person: &MatrixUser, room: &str, bot: &MatrixUser) {
    let check = || async { person.is_joined(room, &bot.user_id).await.then_some(()) };
    until("the bot joins the room", check).await;
}

/// A direct room of `person` and the bot, once the bot is in it.
async fn direct_room(person: &MatrixUser, bot: &MatrixUser) -> String {
    let room = person.create_room(&[&bot.user_id], true).await;
    joined(person, &room, bot).await;
    room
}

/// A group room of `person`, `other` and the bot, once both are in it.
async fn group_room(person: &MatrixUser, other: &MatrixUser, bot: &MatrixUser) -> String {
    let room = person
        .create_room(&[&bot.user_id, &other.user_id], false)
        .await;
    other.join(&room).await;
    joined(person, &room, bot).await;
    room
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_direct_message_is_answered_in_the_same_room() {
    let Some((hs, bot, alice)) = world("a_direct_message_is_answered_in_the_same_room").await
    else {
        return;
    };
    let h = started(config(hs, &bot, DmPolicy::Open)).await;
    let room = direct_room(&alice, &bot).await;
    alice.say(&room, "@reply pong-1", &[]).await;
    let replies = alice.wait_for(&room, &bot.user_id, 1, GUARD).await;
    assert_eq!(replies, ["pong-1"]);
    // A bot's output is a notice, which other bots do not answer.
    let sent = alice.messages(&room, &bot.user_id).await;
    assert_eq!(sent[0]["msgtype"], "m.notice");
    assert_eq!(matrix_state(&h), LinkState::Up("connected"));
    // dmScope main: the agent's main session, with the room as its route.
    let entry = h.engine.store().get(&h.key("main")).await.unwrap().unwrap();
    assert_eq!(entry.last_channel.as_deref(), Some("matrix"));
    assert_eq!(entry.last_to.as_deref(), Some(room.as_str()));
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn room_messages_are_answered_only_when_they_mention_the_bot() {
    let test = "room_messages_are_answered_only_when_they_mention_the_bot";
    let Some((hs, bot, alice)) = world(test).await else {
        return;
    };
    let carol = hs.register("carol").await;
    let h = started(config(hs, &bot, DmPolicy::Open)).await;
    let room = group_room(&alice, &carol, &bot).await;
    alice.say(&room, "@reply not-for-the-bot", &[]).await;
    alice
        .say(&room, "@reply with-mention", &[&bot.user_id])
        .await;
    // A display name at the start (as clients write a mention) counts, and is taken off.
    let local = bot
        .user_id
        .trim_start_matches('@')
        .split(':')
        .next()
        .unwrap();
    carol
        .say(&room, &format!("{local}: @reply by-name"), &[])
        .await;
    let replies = alice.wait_for(&room, &bot.user_id, 2, GUARD).await;
    assert_eq!(replies, ["with-mention", "by-name"]);
    // One session for the room; its runs are serial, so the first message, had it started a
    // run, would be in the transcript before these.
    let key = format!("agent:main:matrix:group:{room}");
    let users: Vec<String> = h
        .transcript(&key)
        .await
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].to_string())
        .collect();
    assert_eq!(users.len(), 2, "{users:?}");
    assert!(
        users[0].contains(&format!("[from {}]", alice.user_id)),
        "{users:?}"
    );
    assert!(
        users[1].contains(&format!("[from {}]", carol.user_id)),
        "{users:?}"
    );
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_has_its_own_session_and_is_answered_in_the_thread() {
    let test = "a_thread_has_its_own_session_and_is_answered_in_the_thread";
    let Some((hs, bot, alice)) = world(test).await else {
        return;
    };
    let carol = hs.register("carol").await;
    let h = started(config(hs, &bot, DmPolicy::Open)).await;
    let room = group_room(&alice, &carol, &bot).await;
    let root = alice.say(&room, "a design question", &[]).await;
    alice
        .say_in_thread(&room, &root, "@reply in-thread", &[&bot.user_id])
        .await;
    alice.wait_for(&room, &bot.user_id, 1, GUARD).await;
    let reply = alice.messages(&room, &bot.user_id).await.remove(0);
    assert_eq!(reply["body"], "in-thread");
    assert_eq!(reply["m.relates_to"]["rel_type"], "m.thread");
    assert_eq!(reply["m.relates_to"]["event_id"], root.as_str());
    let key = h.key(&format!("agent:main:matrix:group:{room}:thread:{root}"));
    let entry = h.engine.store().get(&key).await.unwrap();
    let entry = entry.expect("the thread's session");
    assert_eq!(entry.last_to.as_deref(), Some(room.as_str()));
    assert_eq!(entry.last_thread_id.as_deref(), Some(root.as_str()));
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_announce_from_another_session_lands_in_the_matrix_room() {
    let test = "an_announce_from_another_session_lands_in_the_matrix_room";
    let Some((hs, bot, alice)) = world(test).await else {
        return;
    };
    let carol = hs.register("carol").await;
    let mock = MockLlm::start().await;
    let mut settings = super::runtime::mock_config(&mock, ProviderApi::OpenAiCompletions, true);
    settings.channels.matrix = config(hs, &bot, DmPolicy::Open).channels.matrix;
    settings.session.agent_to_agent.max_ping_pong_turns = 0;
    let h = started(settings).await;
    let room = group_room(&alice, &carol, &bot).await;
    mock.push(MockReply::text("hi room"));
    alice.say(&room, "hello", &[&bot.user_id]).await;
    alice.wait_for(&room, &bot.user_id, 1, GUARD).await;
    // main asks the room's session; its announce step posts to the room.
    mock.push(MockReply::text("all green"));
    mock.push(MockReply::text("Announcement: the build is green"));
    let key = format!("agent:main:matrix:group:{room}");
    let args = json!({"sessionKey": key, "message": "status?", "timeoutSeconds": 0});
    let out = h.invoke("main", "sessions_send", args).await;
    assert_eq!(out.content["status"], "accepted", "{}", out.content);
    let replies = alice.wait_for(&room, &bot.user_id, 2, GUARD).await;
    tokio::time::timeout(GUARD, h.engine.runtime().idle())
        .await
        .unwrap();
    assert_eq!(replies, ["hi room", "Announcement: the build is green"]);
    let records = h.settled_deliveries().await;
    let kinds: Vec<(&str, &str)> = records
        .iter()
        .rev()
        .map(|r| (r.kind.as_str(), r.status.as_str()))
        .collect();
    assert_eq!(kinds, [("reply", "delivered"), ("announce", "delivered")]);
    assert!(records.iter().all(|r| r.to == room));
    mock.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pairing_gives_a_stranger_a_code_and_an_approved_sender_is_answered() {
    let test = "pairing_gives_a_stranger_a_code_and_an_approved_sender_is_answered";
    let Some((hs, bot, alice)) = world(test).await else {
        return;
    };
    let h = started(config(hs, &bot, DmPolicy::default())).await;
    let room = direct_room(&alice, &bot).await;
    alice.say(&room, "@reply hi-1", &[]).await;
    let answer = alice
        .wait_for(&room, &bot.user_id, 1, GUARD)
        .await
        .remove(0);
    assert!(
        answer.contains(&format!("Your Matrix user id: {}", alice.user_id)),
        "{answer}"
    );
    let code = pairing_code(&answer, "matrix");
    assert_eq!(h.approve("matrix", code).await, alice.user_id);
    // The notice names the user; it goes to the direct room the bot knows with them.
    let notice = alice
        .wait_for(&room, &bot.user_id, 2, GUARD)
        .await
        .remove(1);
    assert!(notice.contains("approved"), "{notice}");
    alice.say(&room, "@reply hi-3", &[]).await;
    let replies = alice.wait_for(&room, &bot.user_id, 3, GUARD).await;
    assert_eq!(replies[2], "hi-3");
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_does_not_handle_a_message_twice() {
    let test = "a_restart_does_not_handle_a_message_twice";
    let Some((hs, bot, alice)) = world(test).await else {
        return;
    };
    let h = started(config(hs, &bot, DmPolicy::Open)).await;
    let room = direct_room(&alice, &bot).await;
    alice.say(&room, "@reply once", &[]).await;
    alice.wait_for(&room, &bot.user_id, 1, GUARD).await;
    let h = h.restart(None).await;
    h.engine.start_channels();
    // The sync goes on from the stored token: only the new message runs (a second run of the
    // first would be answered before it, in the same session).
    alice.say(&room, "@reply after", &[]).await;
    let replies = alice.wait_for(&room, &bot.user_id, 2, GUARD).await;
    assert_eq!(replies, ["once", "after"]);
    let asked = h
        .transcript("main")
        .await
        .iter()
        .filter(|m| m["role"] == "user")
        .count();
    assert_eq!(asked, 2);
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_first_start_does_not_answer_the_rooms_past() {
    let test = "a_first_start_does_not_answer_the_rooms_past";
    let Some((hs, bot, alice)) = world(test).await else {
        return;
    };
    // The bot is in the room, and a message waits there, before the gateway ever ran.
    let room = alice.create_room(&[&bot.user_id], true).await;
    bot.join(&room).await;
    alice.say(&room, "@reply from-before", &[]).await;
    let h = started(config(hs, &bot, DmPolicy::Open)).await;
    let connected = || async { (matrix_state(&h) == LinkState::Up("connected")).then_some(()) };
    until("the bot is connected", connected).await;
    alice.say(&room, "@reply now", &[]).await;
    let replies = alice.wait_for(&room, &bot.user_id, 1, GUARD).await;
    assert_eq!(replies, ["now"]);
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_longer_than_a_message_arrives_in_ordered_parts() {
    let test = "a_reply_longer_than_a_message_arrives_in_ordered_parts";
    let Some((hs, bot, alice)) = world(test).await else {
        return;
    };
    let h = started(config(hs, &bot, DmPolicy::Open)).await;
    let room = direct_room(&alice, &bot).await;
    let sentence = "Matrix takes sixteen thousand characters per message here. ";
    let long = sentence.repeat(36_000 / sentence.len() + 1);
    alice.say(&room, &format!("@reply {long}"), &[]).await;
    let parts = alice.wait_for(&room, &bot.user_id, 3, GUARD).await;
    assert_eq!(parts.len(), 3, "nothing else was posted");
    assert!(parts.iter().all(|p| p.chars().count() <= 16_000));
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(squash(&parts.join(" ")), squash(&long));
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_password_logs_in_and_a_refused_token_fails_the_channel() {
    let test = "a_password_logs_in_and_a_refused_token_fails_the_channel";
    let Some((hs, bot, alice)) = world(test).await else {
        return;
    };
    let mut settings = config(hs, &bot, DmPolicy::Open);
    settings.channels.matrix.bot.access_token = None;
    settings.channels.matrix.bot.password = Some(bot.password.clone());
    let h = started(settings).await;
    let room = direct_room(&alice, &bot).await;
    alice.say(&room, "@reply logged-in", &[]).await;
    assert_eq!(
        alice.wait_for(&room, &bot.user_id, 1, GUARD).await,
        ["logged-in"]
    );
    h.engine.close().await;

    let mut settings = config(hs, &bot, DmPolicy::Open);
    settings.channels.matrix.bot.access_token = Some("syt_not_a_token".into());
    let h = started(settings).await;
    let failed = || async {
        match matrix_state(&h) {
            LinkState::Failed(why) => Some(why),
            _ => None,
        }
    };
    let why = until("the channel fails", failed).await;
    assert!(why.contains("M_UNKNOWN_TOKEN"), "{why}");
    assert!(
        !why.contains("syt_not_a_token"),
        "the token is not shown: {why}"
    );
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_asks_for_status_without_a_mention_and_others_are_refused_a_reset() {
    let test = "an_owner_asks_for_status_without_a_mention_and_others_are_refused_a_reset";
    let Some((hs, bot, alice)) = world(test).await else {
        return;
    };
    let carol = hs.register("carol").await;
    let mut settings = config(hs, &bot, DmPolicy::Open);
    settings.channels.matrix.access.owners = Some(vec![alice.user_id.clone()]);
    let h = started(settings).await;
    let room = group_room(&alice, &carol, &bot).await;
    carol.say(&room, "/new", &[]).await;
    alice.say(&room, "/status", &[]).await;
    let answers = alice.wait_for(&room, &bot.user_id, 2, GUARD).await;
    // Two answers, each to its message (the outbox may post them in either order).
    let refused = answers
        .iter()
        .filter(|a| a.contains("Only an owner"))
        .count();
    let status = answers
        .iter()
        .filter(|a| a.contains("no messages yet"))
        .count();
    assert_eq!((refused, status), (1, 1), "{answers:?}");
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_auto_join_allowlist_only_an_allowed_inviter_is_followed() {
    let test = "with_auto_join_allowlist_only_an_allowed_inviter_is_followed";
    let Some((hs, bot, alice)) = world(test).await else {
        return;
    };
    let stranger = hs.register("stranger").await;
    let mut settings = config(hs, &bot, DmPolicy::Open);
    let matrix = &mut settings.channels.matrix;
    matrix.bot.auto_join = Some(AutoJoin::Allowlist);
    matrix.access.allow_from = Some(vec![alice.user_id.clone()]);
    matrix.access.groups_mut().clear();
    // The reference's autoJoinAllowlist: a room named by its alias is joined, whoever invites.
    let alias = format!("ops-{}", std::process::id());
    matrix.bot.auto_join_allowlist = Some(vec![format!("#{alias}:localhost")]);
    let h = started(settings).await;
    let left = stranger.create_room(&[&bot.user_id], true).await;
    let listed = stranger
        .create_room_with_alias(&[&bot.user_id], &alias)
        .await;
    let room = direct_room(&alice, &bot).await;
    joined(&stranger, &listed, &bot).await;
    // Once a later message is answered, the earlier invitation was decided.
    alice.say(&room, "@reply barrier", &[]).await;
    alice.wait_for(&room, &bot.user_id, 1, GUARD).await;
    assert!(!stranger.is_joined(&left, &bot.user_id).await);
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn by_default_invitations_are_left_and_a_room_joined_by_hand_is_answered() {
    let test = "by_default_invitations_are_left_and_a_room_joined_by_hand_is_answered";
    let Some((hs, bot, alice)) = world(test).await else {
        return;
    };
    let mut settings = config(hs, &bot, DmPolicy::Open);
    settings.channels.matrix.bot.auto_join = None;
    let h = started(settings).await;
    let left = alice.create_room(&[&bot.user_id], true).await;
    let room = alice.create_room(&[&bot.user_id], true).await;
    bot.join(&room).await;
    alice.say(&room, "@reply by hand", &[]).await;
    assert_eq!(
        alice.wait_for(&room, &bot.user_id, 1, GUARD).await,
        ["by hand"]
    );
    assert!(
        !alice.is_joined(&left, &bot.user_id).await,
        "autoJoin is off"
    );
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thread_replies_always_starts_a_thread_and_off_answers_a_dm_thread_top_level() {
    let test = "thread_replies_always_starts_a_thread_and_off_answers_a_dm_thread_top_level";
    let Some((hs, bot, alice)) = world(test).await else {
        return;
    };
    let carol = hs.register("carol").await;
    let mut settings = config(hs, &bot, DmPolicy::Open);
    let matrix = &mut settings.channels.matrix.bot;
    matrix.thread_replies = Some(ThreadReplies::Always);
    matrix.dm_thread_replies = Some(ThreadReplies::Off);
    let h = started(settings).await;
    let group = group_room(&alice, &carol, &bot).await;
    let asked = alice
        .say(&group, "@reply in a thread", &[&bot.user_id])
        .await;
    alice.wait_for(&group, &bot.user_id, 1, GUARD).await;
    let reply = alice.messages(&group, &bot.user_id).await.remove(0);
    assert_eq!(reply["m.relates_to"]["rel_type"], "m.thread", "{reply}");
    assert_eq!(reply["m.relates_to"]["event_id"], asked.as_str(), "{reply}");
    let key = h.key(&format!("agent:main:matrix:group:{group}:thread:{asked}"));
    assert_eq!(
        h.transcript(key.as_str()).await.len(),
        2,
        "the thread's own session"
    );
    let dm = direct_room(&alice, &bot).await;
    let root = alice.say(&dm, "@reply root", &[]).await;
    alice.wait_for(&dm, &bot.user_id, 1, GUARD).await;
    alice.say_in_thread(&dm, &root, "@reply flat", &[]).await;
    alice.wait_for(&dm, &bot.user_id, 2, GUARD).await;
    let replies = alice.messages(&dm, &bot.user_id).await;
    assert_eq!(replies[1]["body"], "flat");
    assert!(replies[1].get("m.relates_to").is_none(), "{replies:?}");
    h.engine.close().await;
}

/// The loop of two bot accounts answering each other in one room (253 messages in 20 s before):
/// with `allowBots` on, each reads other bots' notices but never this gateway's own bots.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_bots_of_the_gateway_in_one_room_answer_the_person_and_not_each_other() {
    let test = "two_bots_of_the_gateway_in_one_room_answer_the_person_and_not_each_other";
    let Some((hs, bot, alice)) = world(test).await else {
        return;
    };
    let other = hs.register("otherbot").await;
    let mut config = config(hs, &bot, DmPolicy::Open);
    let matrix = &mut config.channels.matrix;
    // Two accounts instead of the top level's one bot.
    (matrix.bot.user_id, matrix.bot.access_token) = (None, None);
    matrix.access.allow_bots = Some(true);
    matrix.access.require_mention = Some(false);
    let account = |user: &MatrixUser| switchboard_core::config::ChatAccount {
        bot: switchboard_core::config::MatrixBot {
            user_id: Some(user.user_id.clone()),
            access_token: Some(user.access_token.clone()),
            ..Default::default()
        },
        ..Default::default()
    };
    matrix.accounts.insert("a".into(), account(&bot));
    matrix.accounts.insert("b".into(), account(&other));
    let h = started(config).await;
    let room = group_room(&alice, &other, &bot).await;
    joined(&alice, &room, &other).await;
    alice.say(&room, "@reply one", &[]).await;
    alice.wait_for(&room, &bot.user_id, 1, GUARD).await;
    alice.wait_for(&room, &other.user_id, 1, GUARD).await;
    alice.say(&room, "@reply two", &[]).await;
    // Both bots' turns are runs of the room's one session, in order: a run the other bot's
    // notice had started would have answered before "two".
    let a = alice.wait_for(&room, &bot.user_id, 2, GUARD).await;
    let b = alice.wait_for(&room, &other.user_id, 2, GUARD).await;
    assert_eq!(a, ["one", "two"], "the first bot wrote");
    assert_eq!(b, ["one", "two"], "the second bot wrote");
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initial_sync_limit_bounds_what_a_start_reads_of_the_time_it_was_down() {
    let test = "initial_sync_limit_bounds_what_a_start_reads_of_the_time_it_was_down";
    let Some((hs, bot, alice)) = world(test).await else {
        return;
    };
    let mut settings = config(hs, &bot, DmPolicy::Open);
    settings.channels.matrix.bot.initial_sync_limit = Some(2);
    let h = started(settings).await;
    let room = direct_room(&alice, &bot).await;
    alice.say(&room, "@reply before", &[]).await;
    alice.wait_for(&room, &bot.user_id, 1, GUARD).await;
    h.engine.close().await;
    for n in 1..=3 {
        alice
            .say(&room, &format!("@reply while down {n}"), &[])
            .await;
    }
    let h = h.restart(None).await;
    h.engine.start_channels();
    // The first sync after the start reads the room's last two events only.
    let replies = alice.wait_for(&room, &bot.user_id, 3, GUARD).await;
    assert_eq!(replies, ["before", "while down 2", "while down 3"]);
    alice.say(&room, "@reply after", &[]).await;
    let replies = alice.wait_for(&room, &bot.user_id, 4, GUARD).await;
    assert_eq!(replies[3], "after", "{replies:?}");
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_to_the_bots_message_addresses_it_and_a_reply_to_someone_else_does_not() {
    let test = "a_reply_to_the_bots_message_addresses_it_and_a_reply_to_someone_else_does_not";
    let Some((hs, bot, alice)) = world(test).await else {
        return;
    };
    let carol = hs.register("carol").await;
    let h = started(config(hs, &bot, DmPolicy::Open)).await;
    let room = group_room(&alice, &carol, &bot).await;
    alice.say(&room, "@reply first", &[&bot.user_id]).await;
    alice.wait_for(&room, &bot.user_id, 1, GUARD).await;
    let bots = alice.last_event_id(&room, &bot.user_id).await.unwrap();
    let carols = carol.say(&room, "just chatting", &[]).await;
    alice
        .say_replying(&room, &carols, "@reply not for the bot")
        .await;
    alice.say_replying(&room, &bots, "@reply to the bot").await;
    let replies = alice.wait_for(&room, &bot.user_id, 2, GUARD).await;
    assert_eq!(replies, ["first", "to the bot"]);
    let key = format!("agent:main:matrix:group:{room}");
    let asked = h.transcript(&key).await;
    let asked = asked.iter().filter(|m| m["role"] == "user").count();
    assert_eq!(asked, 2, "the reply to carol did not run");
    h.engine.close().await;
}
