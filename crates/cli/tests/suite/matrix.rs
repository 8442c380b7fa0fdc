//! The Matrix channel through the gateway binary, against a real homeserver (the test kit's
//! Synapse on loopback): a `kill -9` between receiving a message and replying to it ends in
//! exactly one reply, in plaintext rooms and (with `encryption: true`, against a person on
//! matrix-nio over libolm) in encrypted ones. Without Python, Synapse or python3-olm the tests
//! say `NOT RUN` (and fail under `CI=true`).

use std::path::Path;
use std::time::Duration;

use switchboard_testkit::synapse::{self, MatrixUser, Synapse};

use super::process::GatewayProcess;

/// How long a reply may take before the test fails (a bound, not a timing).
const BOUND: Duration = Duration::from_secs(60);

fn write_config(home: &Path, hs: &Synapse, bot: &MatrixUser) {
    let config = format!(
        r#"{{ channels: {{ matrix: {{ enabled: true, homeserver: "{}", userId: "{}",
                                   accessToken: "{}", dmPolicy: "open", autoJoin: "always", rooms: {{ "*": {{}} }} }} }} }}"#,
        hs.url, bot.user_id, bot.access_token
    );
    std::fs::write(home.join("config.json5"), config).unwrap();
}

/// Waits until `person` and the bot are both in `room`.
async fn joined(person: &MatrixUser, room: &str, bot: &MatrixUser) {
    let deadline = tokio::time::Instant::now() + BOUND;
    while !person.is_joined(room, &bot.user_id).await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the bot never joined"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_while_the_model_streams_ends_in_one_reply_to_each_message() {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let hs = match tokio::task::block_in_place(|| synapse::shared(tmp)) {
        Ok(hs) => hs,
        Err(missing) => {
            return synapse::not_run("kill_9_while_the_model_streams", &missing);
        }
    };
    let (bot, alice, carol) = (
        hs.register("clibot").await,
        hs.register("alice").await,
        hs.register("carol").await,
    );
    let home = tempfile::tempdir().unwrap();
    write_config(home.path(), hs, &bot);
    let gateway = GatewayProcess::start(home.path());
    let direct = alice.create_room(&[&bot.user_id], true).await;
    joined(&alice, &direct, &bot).await;
    let group = alice
        .create_room(&[&bot.user_id, &carol.user_id], false)
        .await;
    carol.join(&group).await;
    joined(&alice, &group, &bot).await;
    // The first message holds the direct room's session; the second is received and queued
    // behind it (committed with the sync token), and the gateway dies before answering it.
    alice
        .say(&direct, "@slow 1500\n@reply answered after the kill", &[])
        .await;
    alice.say(&direct, "@reply exactly-once", &[]).await;
    // Another session answers at once: once it has, the messages before it were received.
    alice.say(&group, "@reply marker", &[&bot.user_id]).await;
    alice.wait_for(&group, &bot.user_id, 1, BOUND).await;
    gateway.kill_9();

    let gateway = GatewayProcess::start(home.path());
    let replies = alice.wait_for(&direct, &bot.user_id, 2, BOUND).await;
    assert_eq!(replies, ["answered after the kill", "exactly-once"]);
    // A second run of the same message would be answered in the same session, before this.
    alice.say(&direct, "@reply direct-after", &[]).await;
    let replies = alice.wait_for(&direct, &bot.user_id, 3, BOUND).await;
    assert_eq!(
        replies,
        ["answered after the kill", "exactly-once", "direct-after"],
        "the cut-off run resumed and the queued one ran: each replied once"
    );
    assert_eq!(alice.bodies(&group, &bot.user_id).await, ["marker"]);
    let (asked, history) =
        super::process::times_asked(home.path(), &gateway.url, "main", "@reply exactly-once");
    assert_eq!(asked, 1, "the second message ran once: {history}");
    gateway.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_while_the_model_streams_into_an_encrypted_room_ends_in_one_encrypted_answer() {
    let test = "kill_9_while_the_model_streams_into_an_encrypted_room";
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let hs = match tokio::task::block_in_place(|| synapse::shared(tmp)) {
        Ok(hs) => hs,
        Err(missing) => return synapse::not_run(test, &missing),
    };
    let bot = hs.register("clicrypt").await;
    let mut alice = match hs.person(tmp, "alice").await {
        Ok(alice) => alice,
        Err(missing) => return synapse::not_run(test, &missing),
    };
    alice.talks_with(&bot.user_id);
    let home = tempfile::tempdir().unwrap();
    let config = format!(
        r#"{{ channels: {{ matrix: {{ enabled: true, homeserver: "{}", userId: "{}",
                                   password: "{}", encryption: true, dmPolicy: "open", autoJoin: "always" }} }} }}"#,
        hs.url, bot.user_id, bot.password
    );
    std::fs::write(home.path().join("config.json5"), config).unwrap();
    let gateway = GatewayProcess::start(home.path());
    let room = alice.create_room(&[&bot.user_id], true, true).await;
    joined(&alice.user, &room, &bot).await;
    alice.say(&room, "@reply ready", &[]).await;
    alice.messages(&room, &bot.user_id, 1).await;
    // The answer streams for 1.5 s: the gateway dies while the model is streaming it.
    alice
        .say(&room, "@slow 1500\n@reply answered after the kill", &[])
        .await;
    // Its run has started once its message is in the transcript (appended as the run starts).
    let asked = "@slow 1500\n@reply answered after the kill";
    let deadline = tokio::time::Instant::now() + BOUND;
    while super::process::times_asked(home.path(), &gateway.url, "main", asked).0 == 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the run never started"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    gateway.kill_9();

    let gateway = GatewayProcess::start(home.path());
    let replies = alice.messages(&room, &bot.user_id, 2).await;
    alice.say(&room, "@reply after", &[]).await;
    let replies_after = alice.messages(&room, &bot.user_id, 3).await;
    assert_eq!(replies_after[..2], replies[..]);
    let bodies: Vec<&str> = replies_after
        .iter()
        .map(|m| m["body"].as_str().unwrap())
        .collect();
    assert_eq!(
        bodies,
        ["ready", "answered after the kill", "after"],
        "one answer each"
    );
    assert!(
        replies_after.iter().all(|m| m["encrypted"] == true),
        "{replies_after:?}"
    );
    gateway.stop();
}
