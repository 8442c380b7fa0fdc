//! The Signal channel against a fake signal-cli daemon (`switchboard_testkit::signal`, its HTTP
//! JSON-RPC and event stream in the real shapes on loopback): DMs and groups in, replies out
//! through the outbox, mentions and quotes, pairing, an announce, a stream dropped mid-run, a
//! daemon restart that resends every kept event, a gateway restart, rate limits and failures,
//! long replies in parts, and a malformed event.

use pretty_assertions::assert_eq;
use serde_json::json;
use switchboard_core::channel::LinkState;
use switchboard_core::config::{Config, DmPolicy, GroupSettings, ProviderApi};
use switchboard_core::store::DeliveryStatus;
use switchboard_testkit::signal::{ACCOUNT, Address, FakeSignal, SignalFailure, sent_of};
use switchboard_testkit::{MockLlm, MockReply};

use super::support::{GUARD, TestEngine, until};

const ALICE: &str = "+15551234567";
const GROUP: &str = "aGVsbG8gd29ybGQgZ3JvdXAgaWQgMTIzNDU2Nzg5MA==";

fn config(fake: &FakeSignal, policy: DmPolicy) -> Config {
    let mut config = Config::default();
    let signal = &mut config.channels.signal;
    signal.enabled = true;
    signal.bot.account = Some(ACCOUNT.into());
    signal.bot.http_url = Some(fake.http_url());
    signal.access.dm_policy = Some(policy);
    signal
        .access
        .groups_mut()
        .insert("*".into(), GroupSettings::default());
    config.delivery.retry_initial_ms = 50;
    config
}

/// An engine with its channels started, once the door holds the event stream.
async fn started(fake: &FakeSignal, config: Config) -> TestEngine {
    let before = fake.connections().len();
    let h = TestEngine::open(config).await;
    h.engine.start_channels();
    connected(fake, before + 1).await;
    h
}

async fn connected(fake: &FakeSignal, n: usize) {
    tokio::time::timeout(GUARD, fake.wait_connections(n))
        .await
        .expect("the door opened the event stream");
}

async fn sent(fake: &FakeSignal, n: usize) -> Vec<(String, String)> {
    tokio::time::timeout(GUARD, fake.wait_sent(n))
        .await
        .expect("the account sent the messages")
}

/// Waits until a message with `text` was sent; answers every text sent.
async fn sent_text(fake: &FakeSignal, text: &str) -> Vec<String> {
    let seen = fake.wait_for(|calls, _| sent_of(calls).iter().any(|(_, t)| t == text));
    tokio::time::timeout(GUARD, seen)
        .await
        .unwrap_or_else(|_| panic!("{text:?} was sent"));
    fake.sent().into_iter().map(|(_, t)| t).collect()
}

fn signal_state(h: &TestEngine) -> LinkState {
    h.engine
        .channels()
        .status("signal")
        .unwrap()
        .link
        .unwrap()
        .state
}

/// Signal's private chats kept the account's number in their key when the channel moved onto the
/// kit (whose other channels name their account id there): an upgraded gateway finds them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_chat_per_account_is_keyed_by_the_accounts_number() {
    let fake = FakeSignal::start().await;
    let mut config = config(&fake, DmPolicy::Open);
    config.session.dm_scope = switchboard_core::config::DmScope::PerAccountChannelPeer;
    let h = started(&fake, config).await;
    fake.dm(ALICE, "Alice", "@reply hi");
    sent(&fake, 1).await;
    let key = format!("agent:main:signal:{ACCOUNT}:direct:{ALICE}");
    let entry = h.engine.store().get(&h.key(&key)).await.unwrap();
    assert!(entry.is_some(), "no session {key}");
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_direct_message_is_answered_through_json_rpc_send() {
    let fake = FakeSignal::start().await;
    let h = started(&fake, config(&fake, DmPolicy::Open)).await;
    // The run takes a while, so the chat shows "typing…" before the reply.
    fake.dm(ALICE, "Alice", "@delay 3000\n@reply pong-1");
    assert_eq!(
        sent(&fake, 1).await,
        [(ALICE.to_string(), "pong-1".to_string())]
    );
    assert_eq!(signal_state(&h), LinkState::Up("connected"));
    let calls = fake.calls();
    let send = calls.iter().find(|c| c.method == "send").unwrap();
    assert_eq!(send.params["recipient"], json!([ALICE]));
    let records = h.settled_deliveries().await;
    assert_eq!(send.id, json!(format!("{}:0", records[0].id)));
    let typed = calls.iter().position(|c| c.method == "sendTyping");
    let answered = calls.iter().position(|c| c.method == "send");
    assert!(
        typed.is_some() && typed < answered,
        "typing while the run worked: {calls:?}"
    );
    let entry = h.engine.store().get(&h.key("main")).await.unwrap().unwrap();
    assert_eq!(entry.last_channel.as_deref(), Some("signal"));
    assert_eq!(entry.last_to.as_deref(), Some(ALICE));
    // The account's own messages (sent from a linked device) are not answered.
    fake.dm(ACCOUNT, "Me", "@reply to-myself");
    fake.dm(ALICE, "Alice", "@reply pong-2");
    assert_eq!(sent_text(&fake, "pong-2").await, ["pong-1", "pong-2"]);
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn group_messages_need_a_mention_or_a_quote_and_are_answered_in_the_group() {
    let fake = FakeSignal::start().await;
    let h = started(&fake, config(&fake, DmPolicy::Open)).await;
    let alice = (ALICE, "Alice");
    fake.group(GROUP, alice, "@reply not-for-us", Address::None);
    fake.group(GROUP, alice, "@reply mentioned", Address::Mention);
    fake.group(GROUP, alice, "@reply quoted", Address::Quote);
    let to = format!("group:{GROUP}");
    assert_eq!(
        sent(&fake, 2).await,
        [
            (to.clone(), "mentioned".to_string()),
            (to, "quoted".to_string())
        ]
    );
    let send = fake
        .calls()
        .into_iter()
        .find(|c| c.method == "send")
        .unwrap();
    assert_eq!(send.params["groupId"], GROUP, "the group id keeps its case");
    let key = format!("agent:main:signal:group:{}", GROUP.to_lowercase());
    let users: Vec<String> = h
        .transcript(&key)
        .await
        .iter()
        .filter(|m| m["role"] == "user")
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        users,
        [
            "[from Alice]\n@reply mentioned",
            "[from Alice]\n@reply quoted"
        ],
        "the mention's placeholder is taken out"
    );
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pairing_gives_a_stranger_a_code_and_an_approved_sender_is_answered() {
    let fake = FakeSignal::start().await;
    let h = started(&fake, config(&fake, DmPolicy::default())).await;
    fake.dm(ALICE, "Alice", "@reply hi-1");
    let (to, answer) = sent(&fake, 1).await.remove(0);
    assert_eq!(to, ALICE);
    assert!(
        answer.contains(&format!("Your Signal number: {ALICE}")),
        "{answer}"
    );
    let code = super::support::pairing_code(&answer, "signal");
    assert_eq!(h.approve("signal", code).await, ALICE);
    let (to, notice) = sent(&fake, 2).await.remove(1);
    assert_eq!(to, ALICE);
    assert!(notice.contains("approved"), "{notice}");
    fake.dm(ALICE, "Alice", "@reply hi-3");
    assert_eq!(
        sent(&fake, 3).await[2],
        (ALICE.to_string(), "hi-3".to_string())
    );
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_announce_from_another_session_lands_in_the_group() {
    let fake = FakeSignal::start().await;
    let mock = MockLlm::start().await;
    let mut settings = super::runtime::mock_config(&mock, ProviderApi::OpenAiCompletions, true);
    settings.channels.signal = config(&fake, DmPolicy::Open).channels.signal;
    settings.session.agent_to_agent.max_ping_pong_turns = 0;
    let h = started(&fake, settings).await;
    mock.push(MockReply::text("hi group"));
    fake.group(GROUP, (ALICE, "Alice"), "hello", Address::Mention);
    assert_eq!(sent(&fake, 1).await[0].1, "hi group");
    mock.push(MockReply::text("all green"));
    mock.push(MockReply::text("Announcement: the build is green"));
    let group = format!("agent:main:signal:group:{GROUP}");
    let args = json!({"sessionKey": group, "message": "status?", "timeoutSeconds": 0});
    let out = h.invoke("main", "sessions_send", args).await;
    assert_eq!(out.content["status"], "accepted", "{}", out.content);
    let replies = sent(&fake, 2).await;
    tokio::time::timeout(GUARD, h.engine.runtime().idle())
        .await
        .unwrap();
    let kinds: Vec<(String, String)> = h
        .settled_deliveries()
        .await
        .iter()
        .rev()
        .map(|r| (r.kind.as_str().to_owned(), r.status.as_str().to_owned()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("reply".to_string(), "delivered".to_string()),
            ("announce".to_string(), "delivered".to_string())
        ]
    );
    let to = format!("group:{GROUP}");
    assert_eq!(
        replies,
        [
            (to.clone(), "hi group".to_string()),
            (to, "Announcement: the build is green".to_string())
        ]
    );
    mock.stop().await;
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stream_dropped_mid_run_is_reopened_after_the_last_event_with_nothing_lost_or_repeated() {
    let fake = FakeSignal::start().await;
    let h = started(&fake, config(&fake, DmPolicy::Open)).await;
    fake.dm(ALICE, "Alice", "@delay 3000\n@reply one");
    // The run has started (the chat shows "typing…"); the stream goes, and two more messages
    // arrive while it is down.
    let typing = fake.wait_for(|calls, _| calls.iter().any(|c| c.method == "sendTyping"));
    tokio::time::timeout(GUARD, typing).await.unwrap();
    let handled = fake.last_event_id();
    fake.drop_connection(|fake| {
        fake.dm(ALICE, "Alice", "@reply two");
        fake.dm(ALICE, "Alice", "@reply three");
    });
    let replies = sent(&fake, 3).await;
    let texts: Vec<&str> = replies.iter().map(|(_, t)| t.as_str()).collect();
    assert_eq!(texts, ["one", "two", "three"]);
    assert_eq!(
        fake.connections(),
        [None, handled],
        "reopened after the last event"
    );
    fake.dm(ALICE, "Alice", "@reply four");
    assert_eq!(
        sent_text(&fake, "four").await,
        ["one", "two", "three", "four"]
    );
    assert_eq!(signal_state(&h), LinkState::Up("connected"));
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_event_resent_by_a_restarted_daemon_or_after_a_gateway_restart_is_handled_once() {
    let fake = FakeSignal::start().await;
    let h = started(&fake, config(&fake, DmPolicy::Open)).await;
    fake.dm(ALICE, "Alice", "@reply a");
    fake.group(GROUP, (ALICE, "Alice"), "@reply b", Address::Mention);
    sent(&fake, 2).await;
    let handled = fake.last_event_id();
    // The daemon no longer knows the id: it sends everything it kept again.
    fake.restart();
    connected(&fake, 2).await;
    assert_eq!(fake.connections()[1], handled);
    // A duplicate run would be answered before this one, in the same session.
    fake.dm(ALICE, "Alice", "@reply c");
    fake.group(GROUP, (ALICE, "Alice"), "@reply d", Address::Mention);
    // (The two sessions run side by side: c and d may come in either order.)
    sent_text(&fake, "c").await;
    let mut texts = sent_text(&fake, "d").await;
    texts.sort();
    assert_eq!(texts, ["a", "b", "c", "d"]);
    tokio::time::timeout(GUARD, h.engine.runtime().idle())
        .await
        .unwrap();
    // The gateway restarts: it asks for what came after the last event it handled.
    let handled = fake.last_event_id();
    let h = h.restart(None).await;
    h.engine.start_channels();
    connected(&fake, 3).await;
    assert_eq!(fake.connections()[2], handled, "the position was kept");
    fake.dm(ALICE, "Alice", "@reply e");
    let texts = sent_text(&fake, "e").await;
    assert_eq!(texts.len(), 5, "{texts:?}");
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_limit_and_a_500_are_delivered_later_and_an_unregistered_recipient_fails_for_good() {
    let fake = FakeSignal::start().await;
    fake.fail_next(SignalFailure::RateLimit);
    fake.fail_next(SignalFailure::Server);
    let h = started(&fake, config(&fake, DmPolicy::Open)).await;
    fake.dm(ALICE, "Alice", "@reply later");
    assert_eq!(sent_text(&fake, "later").await, ["later"]);
    let refused: Vec<bool> = fake
        .calls()
        .iter()
        .filter(|c| c.method == "send")
        .map(|c| c.refused)
        .collect();
    assert_eq!(refused, [true, true, false]);
    tokio::time::timeout(GUARD, h.engine.runtime().idle())
        .await
        .unwrap();
    fake.fail_next(SignalFailure::Unregistered);
    fake.dm(ALICE, "Alice", "@reply gone");
    // The refused attempt must have been made before the runtime's idleness says anything (the
    // message may not have reached the door yet when `idle` is first asked).
    let sends = || fake.calls().iter().filter(|c| c.method == "send").count();
    until("the refused send", || async {
        (sends() >= 4).then_some(())
    })
    .await;
    tokio::time::timeout(GUARD, h.engine.runtime().idle())
        .await
        .unwrap();
    let records = h.settled_deliveries().await;
    let failed: Vec<_> = records
        .iter()
        .filter(|r| r.status == DeliveryStatus::Failed)
        .collect();
    assert_eq!(failed.len(), 1, "{records:?}");
    let detail = failed[0].detail.clone().unwrap_or_default();
    assert!(detail.contains("UNREGISTERED_FAILURE"), "{detail}");
    assert!(detail.contains("no Signal account"), "{detail}");
    assert_eq!(fake.sent().len(), 1, "nothing more was sent");
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_10000_character_reply_arrives_in_ordered_parts_of_at_most_2000() {
    let fake = FakeSignal::start().await;
    let h = started(&fake, config(&fake, DmPolicy::Open)).await;
    let sentence = "Signal's apps show two thousand characters as text. ";
    let long = sentence.repeat(10_000 / sentence.len() + 1);
    fake.dm(ALICE, "Alice", &format!("@reply {long}"));
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let whole = squash(&long);
    let all = fake.wait_for(|calls, _| {
        let joined: Vec<String> = sent_of(calls).into_iter().map(|(_, t)| t).collect();
        squash(&joined.join(" ")).len() >= whole.len()
    });
    tokio::time::timeout(GUARD, all)
        .await
        .expect("the whole reply was sent");
    let parts: Vec<String> = fake.sent().into_iter().map(|(_, t)| t).collect();
    assert_eq!(squash(&parts.join(" ")), whole);
    assert!(parts.len() >= 5, "{} parts", parts.len());
    assert!(parts.iter().all(|p| p.chars().count() <= 2000));
    let records = h.settled_deliveries().await;
    let ids: Vec<String> = fake
        .calls()
        .iter()
        .filter(|c| c.method == "send")
        .map(|c| c.id.as_str().unwrap().to_owned())
        .collect();
    let expected: Vec<String> = (0..parts.len())
        .map(|i| format!("{}:{i}", records[0].id))
        .collect();
    assert_eq!(ids, expected, "one call per part, in order");
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_event_is_skipped_and_the_channel_keeps_running() {
    let fake = FakeSignal::start().await;
    let h = started(&fake, config(&fake, DmPolicy::Open)).await;
    fake.push_raw("receive", "{\"envelope\": not json");
    fake.push_raw("receive", "{\"account\": \"+1\"}");
    let receipt = json!({"envelope": {"source": ALICE, "sourceNumber": ALICE, "timestamp": 5,
        "receiptMessage": {"when": 5, "isDelivery": true, "timestamps": [1]}}, "account": ACCOUNT});
    fake.push_raw("receive", &receipt.to_string());
    fake.dm(ALICE, "Alice", "@reply still-here");
    assert_eq!(sent_text(&fake, "still-here").await, ["still-here"]);
    assert_eq!(fake.connections().len(), 1, "the stream was not reopened");
    assert_eq!(signal_state(&h), LinkState::Up("connected"));
    fake.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_that_is_not_there_shows_failed_with_the_reason_in_health() {
    let fake = FakeSignal::start().await;
    let mut settings = config(&fake, DmPolicy::Open);
    fake.stop().await;
    // Nothing listens there any more.
    let nowhere = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    settings.channels.signal.bot.http_url = Some(nowhere.clone());
    let h = TestEngine::open(settings).await;
    h.engine.start_channels();
    let failed = async {
        loop {
            if let LinkState::Failed(why) = signal_state(&h) {
                return why;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    };
    let why = tokio::time::timeout(GUARD, failed)
        .await
        .expect("shown failed");
    assert!(
        why.contains("signal-cli daemon") && why.contains(&nowhere) && why.contains("retrying"),
        "{why}"
    );
    h.engine.close().await;
}
