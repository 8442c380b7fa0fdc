//! The Matrix channel with end-to-end encryption, against a real Synapse and a person whose
//! client encrypts with an implementation that shares no code with the bot's: matrix-nio on
//! libolm (`switchboard_testkit::synapse::Person`). The bot logs in with its password as device
//! `SWITCHBOARD` and keeps its keys in the state dir. Without Python, Debian's python3-olm or
//! Synapse the tests say `NOT RUN` (and fail under `CI=true`).

use std::path::Path;

use pretty_assertions::assert_eq;
use serde_json::Value;
use switchboard_core::config::{Config, DmPolicy};
use switchboard_testkit::synapse::{self, MatrixUser, Person, Synapse};

use super::matrix::started;
use super::support::{pairing_code, until};

/// The homeserver, this test's bot, and a person with an encrypting client; `None` (said as
/// NOT RUN) without them.
async fn world(test: &str) -> Option<(&'static Synapse, MatrixUser, Person)> {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let hs = match tokio::task::block_in_place(|| synapse::shared(tmp)) {
        Ok(hs) => hs,
        Err(missing) => {
            synapse::not_run(test, &missing);
            return None;
        }
    };
    let bot = hs.register("cryptbot").await;
    match hs.person(tmp, "alice").await {
        Ok(mut alice) => {
            alice.talks_with(&bot.user_id);
            Some((hs, bot, alice))
        }
        Err(missing) => {
            synapse::not_run(test, &missing);
            None
        }
    }
}

/// The bot with `encryption` on or off, logging in with its password (as device `SWITCHBOARD`).
fn config(hs: &Synapse, bot: &MatrixUser, policy: DmPolicy, encryption: bool) -> Config {
    let mut config = super::matrix::config(hs, bot, policy);
    let matrix = &mut config.channels.matrix.bot;
    matrix.access_token = None;
    matrix.password = Some(bot.password.clone());
    matrix.encryption = Some(encryption);
    config
}

/// An encrypted direct room of `person` and the bot, once the bot is in it.
async fn encrypted_dm(person: &mut Person, bot: &MatrixUser) -> String {
    let room = person.create_room(&[&bot.user_id], true, true).await;
    let check = || async {
        let joined = person.user.is_joined(&room, &bot.user_id).await;
        joined.then_some(())
    };
    until("the bot joins the room", check).await;
    room
}

/// The bodies of `messages`, each checked to have come encrypted, as a bot's notice.
fn encrypted_notices(messages: &[Value]) -> Vec<String> {
    for m in messages {
        assert_eq!(
            (&m["msgtype"], &m["encrypted"]),
            (&"m.notice".into(), &true.into()),
            "{m}"
        );
    }
    messages
        .iter()
        .map(|m| m["body"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The bot's devices that published keys, as the homeserver answers `/keys/query`.
async fn devices_with_keys(hs: &Synapse, bot: &MatrixUser) -> Vec<String> {
    let url = format!("{}/_matrix/client/v3/keys/query", hs.url);
    let query = serde_json::json!({"device_keys": {bot.user_id.clone(): []}});
    let answer = reqwest::Client::new()
        .post(url)
        .bearer_auth(&bot.access_token)
        .json(&query)
        .send()
        .await
        .unwrap();
    let body: Value = answer.json().await.unwrap();
    let keys = body["device_keys"][&bot.user_id].as_object();
    keys.map(|k| k.keys().cloned().collect())
        .unwrap_or_default()
}

/// The bot's devices, as the homeserver lists them.
async fn devices(hs: &Synapse, bot: &MatrixUser) -> Vec<String> {
    let url = format!("{}/_matrix/client/v3/devices", hs.url);
    let answer = reqwest::Client::new()
        .get(url)
        .bearer_auth(&bot.access_token)
        .send()
        .await
        .unwrap();
    let body: Value = answer.json().await.unwrap();
    let mut ids: Vec<String> = body["devices"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["device_id"].as_str().unwrap().to_string())
        .collect();
    ids.sort();
    ids
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_encrypted_dm_from_a_stranger_gets_an_encrypted_code_and_then_talks_both_ways() {
    let test = "an_encrypted_dm_from_a_stranger_gets_an_encrypted_code_and_then_talks_both_ways";
    let Some((hs, bot, mut alice)) = world(test).await else {
        return;
    };
    let h = started(config(hs, &bot, DmPolicy::default(), true)).await;
    let room = encrypted_dm(&mut alice, &bot).await;
    assert!(alice.sees_encrypted(&room).await);
    alice.say(&room, "@reply hi-1", &[]).await;
    let answer = alice.messages(&room, &bot.user_id, 1).await;
    let answer = encrypted_notices(&answer).remove(0);
    let id = format!("Your Matrix user id: {}", alice.user.user_id);
    assert!(answer.contains(&id), "{answer}");
    let code = pairing_code(&answer, "matrix");
    assert_eq!(h.approve("matrix", code).await, alice.user.user_id);
    alice.say(&room, "@reply hi-3", &[]).await;
    let replies = encrypted_notices(&alice.messages(&room, &bot.user_id, 3).await);
    assert!(replies[1].contains("approved"), "{replies:?}");
    assert_eq!(replies[2], "hi-3");
    // The agent read the decrypted text.
    let transcript = h.transcript("main").await;
    assert_eq!(transcript[0]["content"], "@reply hi-3");
    // The room's history holds no plaintext message of the bot's: each went encrypted.
    let plain = alice.user.messages(&room, &bot.user_id).await;
    assert!(plain.is_empty(), "{plain:?}");
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_encrypted_group_room_is_answered_encrypted_when_the_bot_is_mentioned() {
    let test = "an_encrypted_group_room_is_answered_encrypted_when_the_bot_is_mentioned";
    let Some((hs, bot, mut alice)) = world(test).await else {
        return;
    };
    let h = started(config(hs, &bot, DmPolicy::Open, true)).await;
    let carol = hs.register("carol").await;
    let room = alice
        .create_room(&[&bot.user_id, &carol.user_id], true, false)
        .await;
    carol.join(&room).await;
    let check = || async {
        alice
            .user
            .is_joined(&room, &bot.user_id)
            .await
            .then_some(())
    };
    until("the bot joins the room", check).await;
    alice.say(&room, "@reply not for the bot", &[]).await;
    let mention = [bot.user_id.as_str()];
    alice.say(&room, "@reply for the bot", &mention).await;
    let replies = encrypted_notices(&alice.messages(&room, &bot.user_id, 1).await);
    assert_eq!(replies, ["for the bot"]);
    let key = format!("agent:main:matrix:group:{room}");
    let transcript = h.transcript(&key).await;
    let asked: Vec<&Value> = transcript.iter().filter(|m| m["role"] == "user").collect();
    assert_eq!(asked.len(), 1, "only the mention ran: {transcript:?}");
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_keeps_the_device_and_reads_new_encrypted_messages() {
    let test = "a_restart_keeps_the_device_and_reads_new_encrypted_messages";
    let Some((hs, bot, mut alice)) = world(test).await else {
        return;
    };
    let h = started(config(hs, &bot, DmPolicy::Open, true)).await;
    let room = encrypted_dm(&mut alice, &bot).await;
    alice.say(&room, "@reply before", &[]).await;
    encrypted_notices(&alice.messages(&room, &bot.user_id, 1).await);
    let before = devices(hs, &bot).await;
    assert!(before.contains(&"SWITCHBOARD".to_string()), "{before:?}");
    assert_eq!(devices_with_keys(hs, &bot).await, ["SWITCHBOARD"]);
    let store = h.engine.home().join("matrix");
    assert!(store.is_dir(), "the crypto store is in the state dir");
    let h = h.restart(None).await;
    h.engine.start_channels();
    alice.say(&room, "@reply after", &[]).await;
    let replies = encrypted_notices(&alice.messages(&room, &bot.user_id, 2).await);
    assert_eq!(replies, ["before", "after"]);
    assert_eq!(devices(hs, &bot).await, before, "no new device");
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_the_bot_cannot_decrypt_gets_one_notice() {
    let test = "a_message_the_bot_cannot_decrypt_gets_one_notice";
    let Some((hs, bot, mut alice)) = world(test).await else {
        return;
    };
    let h = started(config(hs, &bot, DmPolicy::Open, true)).await;
    let room = encrypted_dm(&mut alice, &bot).await;
    alice.say_withheld(&room, "@reply nobody reads this").await;
    let told = encrypted_notices(&alice.messages(&room, &bot.user_id, 1).await);
    assert!(
        told[0].starts_with("🔒 I could not decrypt your message"),
        "{told:?}"
    );
    // Once: the next message is answered, and nothing came between.
    alice.say(&room, "@reply readable", &[]).await;
    let replies = encrypted_notices(&alice.messages(&room, &bot.user_id, 2).await);
    assert_eq!(replies[1], "readable");
    assert!(
        h.transcript("main").await.len() == 2,
        "no run for the unreadable one"
    );
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_encryption_an_encrypted_room_is_told_so() {
    let test = "without_encryption_an_encrypted_room_is_told_so";
    let Some((hs, bot, mut alice)) = world(test).await else {
        return;
    };
    let h = started(config(hs, &bot, DmPolicy::Open, false)).await;
    // The bot publishes no device keys: nothing to wait for.
    alice.encrypting.clear();
    let room = encrypted_dm(&mut alice, &bot).await;
    alice.say(&room, "@reply secret", &[]).await;
    let told = alice.messages(&room, &bot.user_id, 1).await;
    assert_eq!(told[0]["encrypted"], false, "{told:?}");
    let body = told[0]["body"].as_str().unwrap();
    assert!(body.contains("end-to-end encryption is off"), "{body}");
    assert!(h.transcript("main").await.is_empty(), "no run");
    assert!(
        devices_with_keys(hs, &bot).await.is_empty(),
        "no keys published"
    );
    h.engine.close().await;
}
