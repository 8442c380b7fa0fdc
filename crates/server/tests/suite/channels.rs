//! Channels and delivery end to end: the webhook channel against a real local HTTP receiver,
//! the outbox (retries, send policy, exactly once), hooks and node connections.

use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing;
use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_core::config::{
    ChatType, Config, SendAction, SendPolicyMatch, SendPolicyRule, WebhookAccount,
};

use switchboard_protocol::ErrorCode;

use super::harness::{TOKEN, TestGateway};

const ACCOUNT_TOKEN: &str = "acme-secret";
const HOOK_TOKEN: &str = "hook-secret";

/// A POST the receiver took: its `Idempotency-Key` header and its JSON body.
type Post = (Option<String>, Value);

/// A local HTTP server that records every POST and answers with a settable status.
#[derive(Clone, Default)]
struct Receiver {
    posts: Arc<Mutex<Vec<Post>>>,
    status: Arc<AtomicU16>,
}

impl Receiver {
    async fn start(self, listener: tokio::net::TcpListener) -> Self {
        self.status
            .compare_exchange(0, 200, Ordering::SeqCst, Ordering::SeqCst)
            .ok();
        let app = axum::Router::new()
            .route("/inbox", routing::post(receive))
            .with_state(self.clone());
        tokio::spawn(async move { axum::serve(listener, app).await });
        self
    }

    fn posts(&self) -> Vec<Post> {
        self.posts.lock().unwrap().clone()
    }
}

async fn receive(State(r): State<Receiver>, headers: HeaderMap, body: String) -> StatusCode {
    let status = StatusCode::from_u16(r.status.load(Ordering::SeqCst)).unwrap();
    if status.is_success() {
        let id = headers
            .get("idempotency-key")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        r.posts
            .lock()
            .unwrap()
            .push((id, serde_json::from_str(&body).unwrap()));
    }
    status
}

async fn listener() -> (tokio::net::TcpListener, String) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/inbox", listener.local_addr().unwrap());
    (listener, url)
}

/// Webhook account `acme` posting to `url`, hooks on, fast retries, no reply-back turns; the
/// main agent answers announce steps.
fn config(url: &str) -> Config {
    let mut config = Config::default();
    config.channels.webhook.enabled = true;
    config.channels.webhook.accounts.insert(
        "acme".into(),
        WebhookAccount {
            url: Some(url.to_string()),
            token: Some(ACCOUNT_TOKEN.into()),
            agent_id: None,
            owners: Vec::new(),
        },
    );
    config.hooks.enabled = true;
    config.hooks.token = Some(HOOK_TOKEN.into());
    config.delivery.retry_initial_ms = 50;
    config.delivery.retry_max_ms = 200;
    config.session.agent_to_agent.max_ping_pong_turns = 0;
    config.agents.list = vec![switchboard_core::config::AgentEntry {
        id: "main".into(),
        default: true,
        system_prompt: Some(
            "@when \"announce step\" @reply Heads up: main asked about the release.".into(),
        ),
        ..Default::default()
    }];
    config
}

fn deny_webhook_groups(config: &mut Config) {
    config.session.send_policy.rules = vec![SendPolicyRule {
        r#match: SendPolicyMatch {
            channel: Some("webhook".into()),
            chat_type: Some(ChatType::Group),
            key_prefix: None,
        },
        action: SendAction::Deny,
    }];
}

fn http() -> reqwest::Client {
    switchboard_core::http_client(Duration::from_secs(30)).unwrap()
}

async fn post(gw: &TestGateway, path: &str, token: Option<&str>, body: &str) -> (u16, Value) {
    let mut request = http()
        .post(format!("http://{}{path}", gw.addr))
        .header("content-type", "application/json")
        .body(body.to_string());
    if let Some(token) = token {
        request = request.bearer_auth(token);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (
        status,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// Posts an inbound message to account `acme`; answers the accepted `{runId, sessionKey}`.
async fn inbound(gw: &TestGateway, body: &Value) -> Value {
    let path = "/channels/webhook/acme";
    let (status, answer) = post(gw, path, Some(ACCOUNT_TOKEN), &body.to_string()).await;
    assert_eq!(status, 202, "{answer}");
    answer
}

async fn wait_run(gw: &TestGateway, run_id: &str) -> Value {
    gw.call("agent.wait", json!({"runId": run_id, "timeoutMs": 30_000}))
        .await
}

/// Polls `deliveries.list` until `done` holds for the records (a hang guard, not a timing).
async fn deliveries_until(
    gw: &TestGateway,
    params: Value,
    done: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    for _ in 0..600 {
        let list = gw.call("deliveries.list", params.clone()).await;
        let records = list["deliveries"].as_array().unwrap().clone();
        if done(&records) {
            return records;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("deliveries never reached the expected state: {params}");
}

async fn row(gw: &TestGateway, key: &str) -> Value {
    let list = gw.call("sessions.list", json!({"limit": 500})).await;
    list["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["key"] == key)
        .cloned()
        .unwrap_or_else(|| panic!("{key} is not listed: {list}"))
}

#[tokio::test]
async fn a_group_message_in_gets_its_reply_posted_back_and_a_send_announce_arrives_too() {
    let (socket, url) = listener().await;
    let receiver = Receiver::default().start(socket).await;
    let gw = TestGateway::start_with(config(&url)).await;

    let body = json!({"from": "Alice", "chatType": "group", "chatId": "Release-Team", "text": "@reply hello team"});
    let answer = inbound(&gw, &body).await;
    let key = "agent:main:webhook:group:release-team";
    assert_eq!(answer["sessionKey"], key);
    assert_eq!(
        wait_run(&gw, answer["runId"].as_str().unwrap()).await["reply"],
        "hello team"
    );

    let session = row(&gw, key).await;
    assert_eq!(session["kind"], "group");
    assert_eq!(session["channel"], "webhook");
    assert_eq!(session["lastChannel"], "webhook");
    assert_eq!(session["lastTo"], "Release-Team");
    assert_eq!(
        session["deliveryContext"],
        json!({"channel": "webhook", "to": "Release-Team", "accountId": "acme"})
    );
    // The agent read who spoke.
    let history = gw.call("chat.history", json!({"sessionKey": key})).await;
    assert_eq!(
        history["messages"][0]["content"],
        "[from Alice]\n@reply hello team"
    );

    let records = deliveries_until(&gw, json!({"sessionKey": key}), |r| {
        r.len() == 1 && r[0]["status"] == "delivered"
    })
    .await;
    assert_eq!(records[0]["kind"], "reply");
    assert_eq!(records[0]["attempts"], 1);
    let posts = receiver.posts();
    assert_eq!(posts.len(), 1);
    assert_eq!(posts[0].0.as_deref(), records[0]["id"].as_str());
    assert_eq!(posts[0].1["text"], "hello team");
    assert_eq!(posts[0].1["to"], "Release-Team");
    assert_eq!(posts[0].1["accountId"], "acme");
    assert_eq!(posts[0].1["kind"], "reply");

    // An agent in main sends to the group; the target's announce goes to the group's route.
    gw.call("sessions.create", json!({"key": "main"})).await;
    let sent = gw
        .call(
            "tools.invoke",
            json!({"sessionKey": "main", "tool": "sessions_send",
                   "args": {"sessionKey": key, "message": "@reply release is friday", "timeoutSeconds": 30}}),
        )
        .await;
    assert_eq!(sent["result"]["status"], "ok", "{sent}");
    assert_eq!(sent["result"]["reply"], "release is friday");
    let records = deliveries_until(&gw, json!({"sessionKey": key}), |r| {
        r.iter()
            .any(|d| d["kind"] == "announce" && d["status"] == "delivered")
    })
    .await;
    let announce = records.iter().find(|d| d["kind"] == "announce").unwrap();
    assert_eq!(announce["text"], "Heads up: main asked about the release.");
    let posts = receiver.posts();
    assert_eq!(posts.len(), 2, "{posts:?}");
    assert_eq!(
        posts[1].1["text"],
        "Heads up: main asked about the release."
    );
    assert_eq!(posts[1].1["kind"], "announce");
    gw.stop().await;
}

#[tokio::test]
async fn a_deny_rule_for_webhook_groups_blocks_the_reply_and_the_send_and_says_so() {
    let (socket, url) = listener().await;
    let receiver = Receiver::default().start(socket).await;
    let mut config = config(&url);
    deny_webhook_groups(&mut config);
    let gw = TestGateway::start_with(config).await;

    let body = json!({"from": "bob", "chatType": "group", "chatId": "ops", "text": "@reply on it"});
    let answer = inbound(&gw, &body).await;
    let key = answer["sessionKey"].as_str().unwrap().to_string();
    assert_eq!(
        wait_run(&gw, answer["runId"].as_str().unwrap()).await["reply"],
        "on it"
    );
    gw.call("sessions.create", json!({"key": "main"})).await;
    let records = deliveries_until(&gw, json!({"sessionKey": key}), |r| r.len() == 1).await;
    assert_eq!(records[0]["status"], "denied");
    assert_eq!(records[0]["attempts"], 0);
    let detail = records[0]["detail"].as_str().unwrap();
    assert!(
        detail.starts_with("send blocked by session policy"),
        "{detail}"
    );
    assert!(detail.contains("webhook"), "{detail}");

    let sent = gw
        .call(
            "tools.invoke",
            json!({"sessionKey": "main", "tool": "sessions_send",
                   "args": {"sessionKey": key, "message": "@reply hi", "timeoutSeconds": 5}}),
        )
        .await;
    assert_eq!(sent["result"]["status"], "forbidden", "{sent}");
    let error = sent["result"]["error"].as_str().unwrap();
    assert!(
        error.starts_with("send blocked by session policy"),
        "{error}"
    );
    // Nothing reached the receiver, nothing is pending.
    let all = gw.call("deliveries.list", json!({})).await;
    assert_eq!(all["deliveries"].as_array().unwrap().len(), 1, "{all}");
    assert!(receiver.posts().is_empty());
    gw.stop().await;
}

#[tokio::test]
async fn a_receiver_that_is_down_gets_the_reply_once_it_is_back_exactly_once() {
    // The port is known but nothing listens on it yet.
    let (socket, url) = listener().await;
    let addr = socket.local_addr().unwrap();
    drop(socket);
    let gw = TestGateway::start_with(config(&url)).await;

    let body = json!({"from": "carol", "chatType": "direct", "text": "@reply pong"});
    let answer = inbound(&gw, &body).await;
    // dmScope main: the DM lands in the main session, which now has the webhook route.
    assert_eq!(answer["sessionKey"], "agent:main:main");
    wait_run(&gw, answer["runId"].as_str().unwrap()).await;
    let failing = deliveries_until(&gw, json!({}), |r| {
        r.len() == 1 && r[0]["attempts"].as_u64() >= Some(2)
    })
    .await;
    assert_eq!(failing[0]["status"], "pending");
    let detail = failing[0]["detail"].as_str().unwrap();
    assert!(detail.contains("could not reach"), "{detail}");

    // Back up, answering 503 first: still retried.
    let socket = tokio::net::TcpListener::bind(addr).await.unwrap();
    let receiver = Receiver::default();
    receiver.status.store(503, Ordering::SeqCst);
    let receiver = receiver.start(socket).await;
    deliveries_until(&gw, json!({}), |r| {
        r[0]["detail"].as_str().is_some_and(|d| d.contains("503"))
    })
    .await;
    receiver.status.store(200, Ordering::SeqCst);
    let done = deliveries_until(&gw, json!({}), |r| r[0]["status"] == "delivered").await;
    assert!(done[0]["attempts"].as_u64().unwrap() >= 3, "{done:?}");
    assert!(done[0].get("detail").is_none(), "{done:?}");
    // A later wake of the outbox sends nothing again.
    gw.call(
        "send",
        json!({"channel": "webhook", "to": "carol", "message": "second", "idempotencyKey": "k2"}),
    )
    .await;
    deliveries_until(&gw, json!({"status": "delivered"}), |r| r.len() == 2).await;
    let posts = receiver.posts();
    assert_eq!(posts.len(), 2, "{posts:?}");
    assert_eq!(posts[0].1["text"], "pong");
    assert_eq!(posts[0].0.as_deref(), done[0]["id"].as_str());
    assert_eq!(posts[1].1["text"], "second");
    gw.stop().await;
}

#[tokio::test]
async fn send_is_idempotent_and_names_what_it_cannot_do() {
    let (socket, url) = listener().await;
    let receiver = Receiver::default().start(socket).await;
    let gw = TestGateway::start_with(config(&url)).await;
    let params =
        json!({"channel": "webhook", "to": "room-1", "message": "hi", "idempotencyKey": "once"});
    let first = gw.call("send", params.clone()).await;
    let again = gw.call("send", params).await;
    assert_eq!(first["id"], again["id"]);
    deliveries_until(&gw, json!({}), |r| r[0]["status"] == "delivered").await;
    assert_eq!(receiver.posts().len(), 1);

    let e = gw
        .call_err(
            "send",
            json!({"channel": "sms", "to": "x", "message": "hi", "idempotencyKey": "a"}),
        )
        .await;
    assert!(
        e.message.contains("channel \"sms\" is not connected"),
        "{}",
        e.message
    );
    assert!(
        e.message.contains("webhook, webchat, internal"),
        "{}",
        e.message
    );
    // A channel the seeds name but the gateway cannot offer says why.
    let e = gw
        .call_err(
            "send",
            json!({"channel": "imessage", "to": "x", "message": "hi", "idempotencyKey": "b"}),
        )
        .await;
    assert!(
        e.message.contains("imessage channel is not offered")
            && e.message.contains("only be reached from macOS"),
        "{}",
        e.message
    );
    let e = gw
        .call_err(
            "send",
            json!({"channel": "webhook", "to": "x", "message": "hi"}),
        )
        .await;
    assert!(e.message.contains("idempotencyKey"), "{}", e.message);
    let e = gw
        .call_err("deliveries.list", json!({"status": "lost"}))
        .await;
    assert!(
        e.message
            .contains("pending, delivered, failed, denied, recorded"),
        "{}",
        e.message
    );
    // A webhook account that does not exist is refused at once, naming the ones there are,
    // and nothing is stored to fail later.
    let bad = gw
        .call_err(
            "send",
            json!({"channel": "webhook", "accountId": "nope", "to": "x", "message": "hi", "idempotencyKey": "b"}),
        )
        .await;
    assert_eq!(bad.code, ErrorCode::InvalidRequest);
    assert_eq!(
        bad.message,
        "send: accountId: unknown webhook account \"nope\" (configured: acme)"
    );
    let failed = gw
        .call("deliveries.list", json!({"status": "failed"}))
        .await;
    assert_eq!(failed["deliveries"], json!([]), "{failed}");
    gw.stop().await;
}

#[tokio::test]
async fn webchat_and_internal_deliveries_land_in_the_session_and_reach_subscribers() {
    let gw = TestGateway::start().await;
    let mut client = gw.client().await;
    client
        .request("sessions.create", json!({"key": "agent:main:desk"}))
        .await
        .unwrap();
    client
        .request(
            "sessions.subscribe",
            json!({"sessionKeys": ["agent:main:desk"]}),
        )
        .await
        .unwrap();
    let sent = client
        .request(
            "send",
            json!({"channel": "webchat", "to": "agent:main:desk", "message": "posted", "idempotencyKey": "w1"}),
        )
        .await
        .unwrap();
    let event = loop {
        let event = client.next_event().await.unwrap();
        if event.event == "delivery" {
            break event;
        }
    };
    assert_eq!(event.payload["id"], sent["id"]);
    assert_eq!(event.payload["status"], "delivered");
    gw.call(
        "send",
        json!({"channel": "internal", "to": "agent:main:desk", "message": "note", "idempotencyKey": "i1"}),
    )
    .await;
    deliveries_until(&gw, json!({"status": "delivered"}), |r| r.len() == 2).await;
    let history = gw
        .call("chat.history", json!({"sessionKey": "agent:main:desk"}))
        .await;
    let messages = history["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "{history}");
    assert_eq!(messages[0]["role"], "assistant");
    assert_eq!(messages[0]["content"][0]["text"], "posted");
    assert_eq!(messages[1]["role"], "user");
    assert_eq!(messages[1]["content"], "note");
    assert_eq!(messages[1]["provenance"]["kind"], "send");
    // A session that does not exist is refused before anything is stored.
    let e = gw
        .call_err("send", json!({"channel": "webchat", "to": "agent:main:nowhere", "message": "x", "idempotencyKey": "w2"}))
        .await;
    assert!(e.message.contains("Session not found"), "{}", e.message);
    client.close().await;
    gw.stop().await;
}

#[tokio::test]
async fn agent_with_deliver_sends_its_reply_to_the_given_target() {
    let (socket, url) = listener().await;
    let receiver = Receiver::default().start(socket).await;
    let gw = TestGateway::start_with(config(&url)).await;
    let done = gw
        .call(
            "agent",
            json!({"sessionKey": "main", "message": "@reply shipped", "deliver": true,
                   "channel": "webhook", "to": "room-9", "accountId": "acme"}),
        )
        .await;
    assert_eq!(done["reply"], "shipped");
    deliveries_until(&gw, json!({}), |r| {
        r.len() == 1 && r[0]["status"] == "delivered"
    })
    .await;
    assert_eq!(receiver.posts()[0].1["to"], "room-9");
    // No route and no target: recorded, not sent.
    gw.call(
        "agent",
        json!({"sessionKey": "agent:main:quiet", "message": "@reply x", "deliver": true}),
    )
    .await;
    let records = deliveries_until(&gw, json!({"sessionKey": "agent:main:quiet"}), |r| {
        r.len() == 1
    })
    .await;
    assert_eq!(records[0]["status"], "recorded");
    let e = gw
        .call_err(
            "agent",
            json!({"sessionKey": "main", "message": "x", "deliver": true, "channel": "webhook"}),
        )
        .await;
    assert!(
        e.message.contains("channel and to together"),
        "{}",
        e.message
    );
    assert_eq!(receiver.posts().len(), 1);
    gw.stop().await;
}

#[tokio::test]
async fn bad_webhook_requests_get_a_clear_4xx_and_store_nothing() {
    let (_socket, url) = listener().await;
    let mut config = config(&url);
    config.gateway.max_payload_bytes = 4096;
    let gw = TestGateway::start_with(config).await;
    let good = json!({"from": "a", "chatType": "group", "chatId": "g", "text": "hi"}).to_string();
    let cases: Vec<(&str, Option<&str>, String, u16, &str)> = vec![
        (
            "/channels/webhook/acme",
            None,
            good.clone(),
            401,
            "missing token",
        ),
        (
            "/channels/webhook/acme",
            Some("wrong"),
            good.clone(),
            401,
            "wrong token",
        ),
        (
            "/channels/webhook/other",
            Some(ACCOUNT_TOKEN),
            good.clone(),
            404,
            "unknown webhook account \"other\" (configured: acme)",
        ),
        (
            "/channels/webhook/acme",
            Some(ACCOUNT_TOKEN),
            "not json".into(),
            400,
            "expected a JSON object",
        ),
        (
            "/channels/webhook/acme",
            Some(ACCOUNT_TOKEN),
            json!({"chatType": "group", "text": "x"}).to_string(),
            400,
            "missing field `from`",
        ),
        (
            "/channels/webhook/acme",
            Some(ACCOUNT_TOKEN),
            json!({"from": "a", "chatType": "group", "text": "x"}).to_string(),
            400,
            "chatId: required when chatType is \"group\"",
        ),
        (
            "/channels/webhook/acme",
            Some(ACCOUNT_TOKEN),
            json!({"from": "a", "chatType": "party", "text": "x"}).to_string(),
            400,
            "expected \"direct\" (or \"dm\"), \"group\" or \"channel\"",
        ),
        (
            "/channels/webhook/acme",
            Some(ACCOUNT_TOKEN),
            json!({"from": "a", "chatType": "direct", "text": 5}).to_string(),
            400,
            "at text: invalid type",
        ),
        (
            "/channels/webhook/acme",
            Some(ACCOUNT_TOKEN),
            json!({"from": "a", "chatType": "direct", "text": "  "}).to_string(),
            400,
            "text: must not be empty",
        ),
        (
            "/channels/webhook/acme",
            Some(ACCOUNT_TOKEN),
            json!({"from": "a", "chatType": "direct", "text": "x".repeat(5000)}).to_string(),
            413,
            "exceeds maxPayload (4096 bytes, gateway.maxPayloadBytes)",
        ),
        (
            "/hooks/agent",
            None,
            json!({"message": "x"}).to_string(),
            401,
            "missing token",
        ),
        (
            "/hooks/agent",
            Some(TOKEN),
            json!({"message": "x"}).to_string(),
            401,
            "wrong hook token",
        ),
        (
            "/hooks/agent",
            Some(HOOK_TOKEN),
            json!({"text": "x"}).to_string(),
            400,
            "unknown field `text`; accepted: `message`, `sessionKey`, `agentId`",
        ),
        (
            "/hooks/agent",
            Some(HOOK_TOKEN),
            json!({"sessionKey": "main"}).to_string(),
            400,
            "missing field `message`",
        ),
        // The hook door checks its token before the size: a stranger learns nothing more.
        (
            "/hooks/agent",
            Some(TOKEN),
            json!({"message": "x".repeat(5000)}).to_string(),
            401,
            "wrong hook token",
        ),
        (
            "/hooks/agent",
            Some(HOOK_TOKEN),
            json!({"message": "x".repeat(5000)}).to_string(),
            413,
            "exceeds maxPayload (4096 bytes, gateway.maxPayloadBytes)",
        ),
        (
            "/hooks/agent",
            Some(HOOK_TOKEN),
            json!({"message": ["x"]}).to_string(),
            400,
            "at message: invalid type",
        ),
        (
            "/hooks/agent",
            Some(HOOK_TOKEN),
            json!({"message": "x", "sessionKey": "agent:Bad Key::"}).to_string(),
            400,
            "sessionKey:",
        ),
    ];
    for (path, token, body, want_status, want) in cases {
        let (status, answer) = post(&gw, path, token, &body).await;
        assert_eq!(status, want_status, "{path} {body}: {answer}");
        assert_eq!(answer["ok"], false, "{answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(want), "{path} {body}: {message}");
    }
    // Only the main session, there from the start.
    let count = gw.call("sessions.list", json!({})).await;
    assert_eq!(count["count"], 1, "{count}");
    assert!(
        gw.call("deliveries.list", json!({})).await["deliveries"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    gw.assert_serving().await;
    gw.stop().await;
}

#[tokio::test]
async fn hooks_and_nodes_make_sessions_of_their_kinds_on_the_internal_channel() {
    let (_socket, url) = listener().await;
    let gw = TestGateway::start_with(config(&url)).await;
    let (status, answer) = post(
        &gw,
        "/hooks/agent",
        Some(HOOK_TOKEN),
        &json!({"message": "@reply hooked"}).to_string(),
    )
    .await;
    assert_eq!(status, 202, "{answer}");
    let key = answer["sessionKey"].as_str().unwrap().to_string();
    assert!(key.starts_with("agent:main:hook:"), "{key}");
    assert_eq!(
        wait_run(&gw, answer["runId"].as_str().unwrap()).await["reply"],
        "hooked"
    );
    let hook = row(&gw, &key).await;
    assert_eq!(
        (hook["kind"].as_str(), hook["channel"].as_str()),
        (Some("hook"), Some("internal"))
    );
    let history = gw.call("chat.history", json!({"sessionKey": key})).await;
    assert_eq!(history["messages"][0]["provenance"]["kind"], "hook");
    // A hook that names its session runs there.
    let (status, named) = post(
        &gw,
        "/hooks/agent",
        Some(HOOK_TOKEN),
        &json!({"message": "@reply again", "sessionKey": "hook:deploys"}).to_string(),
    )
    .await;
    assert_eq!(status, 202, "{named}");
    assert_eq!(named["sessionKey"], "agent:main:hook:deploys");

    // A node connection gets node-<id>.
    let mut connect = switchboard_server::client::connect_params(Some(TOKEN));
    connect.role = Some("node".into());
    connect.node_id = Some("Kitchen-Pi".into());
    let mut params = serde_json::to_value(connect).unwrap();
    let mut node = switchboard_server::client::GatewayClient::open(&gw.url)
        .await
        .unwrap();
    node.next_event().await.unwrap();
    let hello = node.request("connect", params.clone()).await.unwrap();
    let node_key = hello["sessionKey"].as_str().unwrap().to_string();
    assert_eq!(node_key, "agent:main:node-kitchen-pi");
    let reply = node
        .request(
            "agent",
            json!({"sessionKey": node_key, "message": "@reply lights on"}),
        )
        .await
        .unwrap();
    assert_eq!(reply["reply"], "lights on");
    let session = row(&gw, &node_key).await;
    assert_eq!(
        (session["kind"].as_str(), session["channel"].as_str()),
        (Some("node"), Some("internal"))
    );
    node.close().await;
    // A node without an id is refused.
    params.as_object_mut().unwrap().remove("nodeId");
    let mut bad = switchboard_server::client::GatewayClient::open(&gw.url)
        .await
        .unwrap();
    bad.next_event().await.unwrap();
    let e = bad.request("connect", params).await.unwrap_err();
    assert!(e.to_string().contains("needs nodeId"), "{e}");
    gw.assert_serving().await;
    gw.stop().await;
}

#[tokio::test]
async fn a_chat_id_cannot_name_another_chats_thread() {
    let (socket, url) = listener().await;
    let _receiver = Receiver::default().start(socket).await;
    let gw = TestGateway::start_with(config(&url)).await;
    let thread = json!({"from": "a", "chatType": "group", "chatId": "c1", "threadId": "9", "text": "@reply in the thread"});
    let posing =
        json!({"from": "b", "chatType": "group", "chatId": "c1:thread:9", "text": "@reply posing"});
    let thread = inbound(&gw, &thread).await;
    let posing = inbound(&gw, &posing).await;
    assert_eq!(thread["sessionKey"], "agent:main:webhook:group:c1:thread:9");
    assert_eq!(
        posing["sessionKey"],
        "agent:main:webhook:group:c1:thread_:9"
    );
    for answer in [&thread, &posing] {
        wait_run(&gw, answer["runId"].as_str().unwrap()).await;
    }
    // Each message is only in its own chat's transcript.
    let history = gw
        .call("chat.history", json!({"sessionKey": thread["sessionKey"]}))
        .await;
    assert_eq!(
        history["messages"].as_array().unwrap().len(),
        2,
        "{history}"
    );
}

/// Polls the receiver until it took `n` posts (a hang guard, not a timing).
async fn posts_until(receiver: &Receiver, n: usize) -> Vec<Post> {
    for _ in 0..600 {
        let posts = receiver.posts();
        if posts.len() >= n {
            return posts;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the receiver never took {n} posts: {:?}", receiver.posts());
}

#[tokio::test]
async fn send_on_off_inherit_works_from_a_channel_chat_for_its_owners_only() {
    let (socket, url) = listener().await;
    let receiver = Receiver::default().start(socket).await;
    let mut config = config(&url);
    config
        .channels
        .webhook
        .accounts
        .get_mut("acme")
        .unwrap()
        .owners = vec!["ana".into()];
    let gw = TestGateway::start_with(config).await;
    let key = "agent:main:webhook:group:ops";
    let from = |who: &str, text: &str| json!({"from": who, "chatType": "group", "chatId": "ops", "text": text});

    // A stranger's command is refused, told in the chat, and changes nothing; no run starts.
    let refused = inbound(&gw, &from("mallory", "/send off")).await;
    assert!(refused.get("runId").is_none(), "{refused}");
    let reply = refused["reply"].as_str().unwrap();
    assert!(
        reply.contains("Only an owner") && reply.contains("channels.webhook.accounts.acme.owners"),
        "{reply}"
    );
    assert_eq!(posts_until(&receiver, 1).await[0].1["text"], reply);
    let listed = gw.call("sessions.list", json!({})).await;
    assert!(!listed.to_string().contains(key), "{listed}");

    // The owner's turns the session's policy off; the confirmation still reaches the chat.
    let done = inbound(&gw, &from("ana", "/send off")).await;
    assert_eq!(done["reply"], format!("Send policy for {key}: deny."));
    assert_eq!(row(&gw, key).await["sendPolicy"], "deny");
    let posts = posts_until(&receiver, 2).await;
    assert_eq!(
        (posts[1].1["kind"].clone(), posts[1].1["text"].clone()),
        (json!("command"), done["reply"].clone())
    );
    // Now a message runs but its reply is held back by the policy.
    let run = inbound(&gw, &from("ana", "@reply hidden")).await;
    wait_run(&gw, run["runId"].as_str().unwrap()).await;
    let denied = deliveries_until(&gw, json!({"sessionKey": key}), |r| {
        r.iter()
            .any(|d| d["kind"] == "reply" && d["status"] == "denied")
    })
    .await;
    assert!(denied.iter().all(|d| d["status"] != "delivered"));
    // `inherit` clears the override; a bad argument gets the usage.
    let cleared = inbound(&gw, &from("ana", "/send inherit")).await;
    assert!(
        cleared["reply"].as_str().unwrap().contains("inherit"),
        "{cleared}"
    );
    assert!(
        row(&gw, key)
            .await
            .get("sendPolicy")
            .is_none_or(Value::is_null)
    );
    let usage = inbound(&gw, &from("ana", "/send maybe")).await;
    assert!(
        usage["reply"]
            .as_str()
            .unwrap()
            .contains("expected /send on|off|inherit"),
        "{usage}"
    );
    assert_eq!(
        posts_until(&receiver, 4).await.len(),
        4,
        "the held-back reply was not posted"
    );
    gw.stop().await;
}
