//! Traces over OTLP through the gateway binary (SPEC §10b): a `sessions_send` with its
//! reply-back turns and announce, and a spawn with its announce, each arrive at an OTLP/HTTP
//! receiver (the protobuf decoded with the OpenTelemetry project's definitions) as one trace
//! whose spans are each other's parents and children, the model calls with OpenTelemetry's
//! GenAI attributes. A sender's `traceparent` is honoured on every HTTP door, `/mcp`'s tool
//! calls included. The token counts' type (`int`) is checked in process, on the span the
//! tracing layer hands its exporter: the receiver reads every attribute as text.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex};

use pretty_assertions::assert_eq;
use serde_json::json;
use switchboard_server::client::GatewayClient;
use switchboard_testkit::otlp::{Receiver, Span};
use switchboard_testkit::{COMPLETION_TOKENS, MockLlm, MockReply, MockToolCall, PROMPT_TOKENS};

use super::process::{
    GatewayProcess, exchange_config, send_from_main_to_peer, send_without_waiting,
    until_exchange_done, until_reply_turn_runs,
};

/// Starts the gateway with `config`, its exporter sending batches every 100 ms.
fn start(home: &std::path::Path, config: &str) -> GatewayProcess {
    std::fs::write(home.join("config.json5"), config).unwrap();
    let log = Arc::new(Mutex::new(String::new()));
    let env = [("OTEL_BSP_SCHEDULE_DELAY", "100"), ("RUST_LOG", "warn")];
    GatewayProcess::start_logging(home, &env, log).0
}

/// The spans of `trace`.
fn of_trace<'a>(spans: &'a [Span], trace: &str) -> Vec<&'a Span> {
    spans.iter().filter(|s| s.trace_id == trace).collect()
}

/// The runs' spans (`invoke_agent <agent>`) among `spans`.
fn runs<'a>(spans: &[&'a Span]) -> Vec<&'a Span> {
    spans
        .iter()
        .copied()
        .filter(|s| s.attr("gen_ai.operation.name") == Some("invoke_agent"))
        .collect()
}

/// A span of `spans` whose parent is not among them, if any.
fn orphan<'a>(spans: &[&'a Span]) -> Option<&'a Span> {
    let ids: BTreeSet<&str> = spans.iter().map(|s| s.span_id.as_str()).collect();
    spans
        .iter()
        .copied()
        .find(|s| !s.parent_span_id.is_empty() && !ids.contains(s.parent_span_id.as_str()))
}

/// Every span of the trace but its root has its parent in the trace, and there is one root.
fn assert_one_tree(spans: &[&Span]) {
    let roots: Vec<&str> = spans
        .iter()
        .filter(|s| s.parent_span_id.is_empty())
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(roots.len(), 1, "roots: {roots:?}");
    if let Some(span) = orphan(spans) {
        panic!("{} has a parent outside the trace: {spans:#?}", span.name);
    }
}

/// Whether every span of `spans` has its parent among them (or none): the parents that end
/// after their children (an exchange's, a spawn's follow) were exported too.
fn closed(spans: &[&Span]) -> bool {
    orphan(spans).is_none()
}

/// Whether walking up from `span` through the spans received so far reaches the span whose
/// parent is `sender`. Spans are exported as they end, so a run's span can arrive before the
/// request span that encloses it.
fn reaches(spans: &[&Span], span: &Span, sender: &str) -> bool {
    let mut up = span;
    for _ in 0..spans.len() {
        if up.parent_span_id == sender {
            return true;
        }
        match spans.iter().find(|s| s.span_id == up.parent_span_id) {
            Some(next) => up = next,
            None => return false,
        }
    }
    false
}

/// The span whose id is `span`'s parent.
fn parent<'a>(spans: &[&'a Span], span: &Span) -> &'a Span {
    spans
        .iter()
        .find(|s| s.span_id == span.parent_span_id)
        .unwrap_or_else(|| panic!("no parent of {}", span.name))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sessions_send_with_two_reply_back_turns_and_its_announce_is_one_trace() {
    let receiver = Receiver::start().await;
    let home = tempfile::tempdir().unwrap();
    let otlp = format!(
        r#"observability: {{ otlp: {{ endpoint: "{}", headers: {{ "x-collector-key": "k1" }} }} }},"#,
        receiver.endpoint()
    );
    let gateway = start(home.path(), &exchange_config(2, &otlp));
    let mut client = GatewayClient::connect(&gateway.url, Some(&gateway.token))
        .await
        .unwrap();
    send_from_main_to_peer(&mut client, "hello").await;
    let exchange = until_exchange_done(&mut client).await;
    assert_eq!(
        (exchange["turn"].clone(), exchange["detail"].clone()),
        (json!(2), json!("announced"))
    );

    // The primary run, two reply-back turns and the announce: four runs in one trace.
    let spans = receiver
        .wait_for("the exchange's four runs", |spans| {
            let sends: Vec<&Span> = spans
                .iter()
                .filter(|s| s.name == "execute_tool sessions_send")
                .collect();
            let trace = sends.first().map(|send| of_trace(spans, &send.trace_id));
            sends.len() == 1 && trace.is_some_and(|t| runs(&t).len() == 4 && closed(&t))
        })
        .await;
    let send = spans
        .iter()
        .find(|s| s.name == "execute_tool sessions_send")
        .unwrap();
    let trace = of_trace(&spans, &send.trace_id);
    assert_one_tree(&trace);
    let root = trace.iter().find(|s| s.parent_span_id.is_empty()).unwrap();
    assert_eq!(root.name, "ws tools.invoke");
    let sessions: Vec<&str> = runs(&trace)
        .iter()
        .map(|s| s.attr("session").unwrap())
        .collect();
    let peer_runs = sessions.iter().filter(|s| **s == "agent:main:peer").count();
    let main_runs = sessions.iter().filter(|s| **s == "agent:main:main").count();
    assert_eq!((peer_runs, main_runs), (3, 1), "{sessions:?}");
    // Every run descends from the tool call; each model call is a child of its run.
    for run in runs(&trace) {
        let mut up = parent(&trace, run);
        while up.span_id != send.span_id && !up.parent_span_id.is_empty() {
            up = parent(&trace, up);
        }
        assert_eq!(
            up.span_id, send.span_id,
            "{} is not under the tool call",
            run.name
        );
    }
    let calls: Vec<&&Span> = trace.iter().filter(|s| s.name == "chat scripted").collect();
    assert!(calls.len() >= 4, "{trace:#?}");
    for call in calls {
        assert_eq!(
            parent(&trace, call).attr("gen_ai.operation.name"),
            Some("invoke_agent")
        );
        assert_eq!(call.attr("gen_ai.provider.name"), Some("builtin"));
    }
    assert!(trace.iter().all(|s| s.service == "switchboard"));
    // The configured header went with every export.
    let headers = receiver.export_headers();
    assert!(headers.iter().all(|h| h["x-collector-key"] == "k1"));
    gateway.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spawn_and_its_announce_are_one_trace_with_the_genai_attributes() {
    let receiver = Receiver::start().await;
    let llm = MockLlm::start().await;
    // The parent's model spawns; every later call (the child's task, its announce step, the
    // parent's answer after the tool) answers in text.
    llm.push(MockReply::ToolCalls(vec![MockToolCall::new(
        "call-1",
        "sessions_spawn",
        r#"{"task": "find the answer"}"#,
    )]));
    llm.set_fallback(MockReply::text("Result: 42"));
    let home = tempfile::tempdir().unwrap();
    let config = format!(
        r#"{{
          observability: {{ otlp: {{ endpoint: "{}/v1/traces", protocol: "http/protobuf" }} }},
          models: {{ providers: {{ mock: {{ api: "openai-completions", baseUrl: "{}",
            apiKey: "k", models: [{{ id: "m" }}] }} }} }},
          agents: {{ defaults: {{ model: "mock/m" }} }},
        }}"#,
        receiver.endpoint(),
        llm.openai_base_url()
    );
    let gateway = start(home.path(), &config);
    let mut client = GatewayClient::connect(&gateway.url, Some(&gateway.token))
        .await
        .unwrap();
    let sent = client
        .request(
            "agent",
            json!({"sessionKey": "main", "message": "spawn a helper"}),
        )
        .await
        .unwrap();
    let run_id = sent["runId"].as_str().unwrap().to_string();

    // The parent's run, the child's task run and its announce run, under one trace.
    let child_run = |s: &Span| {
        s.attr("gen_ai.operation.name") == Some("invoke_agent")
            && s.attr("session").is_some_and(|k| k.contains(":subagent:"))
    };
    let spans = receiver
        .wait_for("the spawn's runs and the announce", |spans| {
            let Some(parent_run) = spans.iter().find(|s| s.attr("run_id") == Some(&run_id)) else {
                return false;
            };
            let trace = of_trace(spans, &parent_run.trace_id);
            trace.iter().filter(|s| child_run(s)).count() == 2 && closed(&trace)
        })
        .await;
    let parent_run = spans
        .iter()
        .find(|s| s.attr("run_id") == Some(run_id.as_str()))
        .unwrap();
    let trace = of_trace(&spans, &parent_run.trace_id);
    assert_one_tree(&trace);
    assert_eq!(parent(&trace, parent_run).name, "ws agent");
    let spawn = trace
        .iter()
        .find(|s| s.name == "execute_tool sessions_spawn")
        .unwrap();
    assert_eq!(parent(&trace, spawn).span_id, parent_run.span_id);
    assert_eq!(spawn.attr("gen_ai.tool.call.id"), Some("call-1"));
    let children: Vec<&&Span> = trace.iter().filter(|s| child_run(s)).collect();
    // The task run is the tool call's child; the announce run is the child of the follow that
    // the spawn started.
    let task = children
        .iter()
        .find(|s| parent(&trace, s).span_id == spawn.span_id)
        .unwrap_or_else(|| panic!("no child run under the spawn: {trace:#?}"));
    let announce = children.iter().find(|s| s.span_id != task.span_id).unwrap();
    let follow = parent(&trace, announce);
    assert_eq!(follow.name, "follow_subagent");
    assert_eq!(parent(&trace, follow).span_id, spawn.span_id);
    // Model calls carry OpenTelemetry's GenAI attributes, in every run of the trace.
    let calls: Vec<&&Span> = trace.iter().filter(|s| s.name == "chat m").collect();
    assert!(calls.len() >= 3, "{trace:#?}");
    for call in &calls {
        assert_eq!(call.kind, 3, "a model call is a client span");
        for (key, value) in [
            ("gen_ai.operation.name", "chat".to_string()),
            ("gen_ai.request.model", "m".to_string()),
            ("gen_ai.provider.name", "mock".to_string()),
            ("gen_ai.usage.input_tokens", PROMPT_TOKENS.to_string()),
            ("gen_ai.usage.output_tokens", COMPLETION_TOKENS.to_string()),
        ] {
            assert_eq!(call.attr(key), Some(value.as_str()), "{key} of {call:#?}");
        }
    }
    for run in [parent_run, **task, **announce] {
        assert!(
            calls.iter().any(|c| c.parent_span_id == run.span_id),
            "no model call under {run:#?}"
        );
    }
    gateway.stop();
    llm.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exchange_resumed_after_kill_9_goes_on_in_its_trace() {
    let receiver = Receiver::start().await;
    let home = tempfile::tempdir().unwrap();
    let otlp = format!(
        r#"observability: {{ otlp: {{ endpoint: "{}" }} }},"#,
        receiver.endpoint()
    );
    let config = exchange_config(1, &otlp);
    let gateway = start(home.path(), &config);
    let mut client = GatewayClient::connect(&gateway.url, Some(&gateway.token))
        .await
        .unwrap();
    // The peer's reply scripts main's reply-back turn to wait 10 s: the gateway is killed then.
    send_from_main_to_peer(&mut client, "@reply @delay 10000").await;
    let spans = receiver
        .wait_for("the sessions_send tool call", |spans| {
            spans.iter().any(|s| s.name == "execute_tool sessions_send")
        })
        .await;
    let trace = spans
        .iter()
        .find(|s| s.name == "execute_tool sessions_send")
        .unwrap()
        .trace_id
        .clone();
    until_reply_turn_runs(&mut client).await;
    gateway.kill_9();

    let gateway = start(home.path(), &config);
    let mut client = GatewayClient::connect(&gateway.url, Some(&gateway.token))
        .await
        .unwrap();
    until_exchange_done(&mut client).await;
    // After the restart, in the trace of the tool call made before the kill: main's turn, cut
    // off by the kill (its span was never sent), resumed (SPEC §6.3) under the exchange span it
    // started in, which died with the process; and the announce, under the resumed exchange's
    // span.
    let under_exchange = |trace: &[&Span], session: &str| {
        runs(trace).into_iter().any(|run| {
            run.attr("session") == Some(session)
                && trace
                    .iter()
                    .any(|s| s.span_id == run.parent_span_id && s.name == "agent_exchange")
        })
    };
    receiver
        .wait_for("the resumed exchange's runs", |spans| {
            let trace = of_trace(spans, &trace);
            let resumed = runs(&trace)
                .into_iter()
                .any(|run| run.attr("session") == Some("agent:main:main"));
            resumed && under_exchange(&trace, "agent:main:peer")
        })
        .await;
    gateway.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_incoming_traceparent_is_honoured_on_rpc_hooks_a2a_and_webhooks() {
    let receiver = Receiver::start().await;
    let home = tempfile::tempdir().unwrap();
    let config = format!(
        r#"{{
          observability: {{ otlp: {{ endpoint: "{}" }} }},
          hooks: {{ enabled: true, token: "hook-secret" }},
          channels: {{ webhook: {{ enabled: true, accounts: {{ acme: {{
            url: "http://127.0.0.1:9/inbox", token: "acme-secret" }} }} }} }},
        }}"#,
        receiver.endpoint()
    );
    let gateway = start(home.path(), &config);
    let base = gateway.url.replace("ws://", "http://");
    let base = base.trim_end_matches('/');
    let http = switchboard_core::http_client(std::time::Duration::from_secs(30)).unwrap();
    let a2a = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": "m-1", "role": "ROLE_USER", "parts": [{"text": "@reply from a2a"}]}}});
    let doors = [
        (
            "/rpc",
            "POST /rpc",
            gateway.token.as_str(),
            json!({"method": "agent", "params": {"sessionKey": "main", "message": "@reply from rpc"}}),
        ),
        (
            "/hooks/agent",
            "POST /hooks/agent",
            "hook-secret",
            json!({"message": "@reply from a hook"}),
        ),
        (
            "/a2a/main",
            "POST /a2a/{agent}",
            gateway.token.as_str(),
            a2a,
        ),
        (
            "/channels/webhook/acme",
            "POST /channels/webhook/{account}",
            "acme-secret",
            json!({"from": "ana", "chatType": "direct", "text": "@reply NO_REPLY"}),
        ),
    ];
    for (n, (path, name, token, body)) in doors.into_iter().enumerate() {
        // A sender's trace: its id and the id of its span that made the request.
        let (trace, parent_span) = (
            format!("4bf92f3577b34da6a3ce929d0e0e47{n:02x}"),
            "00f067aa0ba902b7",
        );
        let answer = http
            .post(format!("{base}{path}"))
            .bearer_auth(token)
            .header("a2a-version", "1.0")
            .header("traceparent", format!("00-{trace}-{parent_span}-01"))
            .json(&body)
            .send()
            .await
            .unwrap();
        assert!(answer.status().is_success(), "{path}: {}", answer.status());
        let spans = receiver
            .wait_for(
                &format!("the run {path} started, under its request"),
                |spans| {
                    let trace = of_trace(spans, &trace);
                    let runs = runs(&trace);
                    runs.len() == 1 && reaches(&trace, runs[0], parent_span)
                },
            )
            .await;
        let trace = of_trace(&spans, &trace);
        let request = trace
            .iter()
            .find(|s| s.parent_span_id == parent_span)
            .unwrap_or_else(|| {
                panic!("{path}: no span has the sender's span as parent: {trace:#?}")
            });
        assert_eq!((request.name.as_str(), request.kind), (name, 2));
        let run = runs(&trace)[0];
        let mut up = parent(&trace, run);
        while up.span_id != request.span_id {
            up = parent(&trace, up);
        }
    }
    gateway.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_that_is_down_costs_the_turns_nothing() {
    // Nothing listens on these: exports fail, over HTTP and over gRPC, and turns go on.
    let free = || {
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
    };
    for (protocol, addr) in [("http/protobuf", free()), ("grpc", free())] {
        let home = tempfile::tempdir().unwrap();
        let otlp = format!(
            r#"{{ observability: {{ otlp: {{ endpoint: "http://{addr}", protocol: "{protocol}" }} }} }}"#
        );
        let gateway = start(home.path(), &otlp);
        let mut client = GatewayClient::connect(&gateway.url, Some(&gateway.token))
            .await
            .unwrap();
        for n in 0..3 {
            let sent = client
                .request(
                    "agent",
                    json!({"sessionKey": "main", "message": format!("@reply turn {n}")}),
                )
                .await
                .unwrap();
            let waited = client
                .request(
                    "agent.wait",
                    json!({"runId": sent["runId"], "timeoutMs": 60_000}),
                )
                .await
                .unwrap();
            assert_eq!(waited["status"], "ok", "{protocol}: {waited}");
        }
        assert!(
            gateway.terminate().success(),
            "{protocol}: the gateway did not stop cleanly"
        );
    }
}

#[test]
fn a_collector_header_that_cannot_be_sent_stops_the_start_over_either_protocol() {
    for protocol in ["http/protobuf", "grpc"] {
        let home = tempfile::tempdir().unwrap();
        let config = format!(
            r#"{{ observability: {{ otlp: {{ endpoint: "http://127.0.0.1:4318", protocol: "{protocol}",
                 headers: {{ "x-api-key": "hidden\nvalue" }} }} }} }}"#
        );
        std::fs::write(home.path().join("config.json5"), config).unwrap();
        let mut child = std::process::Command::new(super::process::BIN)
            .args([
                "--state-dir",
                home.path().to_str().unwrap(),
                "gateway",
                "--port",
                "0",
            ])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // A gateway that starts anyway is stopped after a minute, and the test fails.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while child.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let _ = child.kill();
        let out = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{protocol}: started anyway: {err}");
        assert!(
            err.contains("observability.otlp.headers.x-api-key"),
            "{protocol}: {err}"
        );
        assert!(
            !err.contains("hidden"),
            "{protocol}: the value is in the error: {err}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_to_a_remote_a2a_agent_carries_the_trace_on() {
    let receiver = Receiver::start().await;
    let fake = switchboard_testkit::FakeA2a::start(None).await;
    let home = tempfile::tempdir().unwrap();
    let config = format!(
        r#"{{ observability: {{ otlp: {{ endpoint: "{}" }} }},
             agents: {{ list: [{{ id: "main", default: true,
               a2a: {{ remotes: {{ fake: {{ url: "{}" }} }} }} }}] }} }}"#,
        receiver.endpoint(),
        fake.url()
    );
    let gateway = start(home.path(), &config);
    let mut client = GatewayClient::connect(&gateway.url, Some(&gateway.token))
        .await
        .unwrap();
    let sent = send_without_waiting(&mut client, "main", "a2a:fake", "hello over there").await;
    assert_eq!(sent["result"]["status"], "accepted", "{sent}");
    let spans = receiver
        .wait_for("the delivery attempt to the remote", |spans| {
            spans.iter().any(|s| s.name == "deliver a2a")
        })
        .await;
    let send = spans
        .iter()
        .find(|s| s.name == "execute_tool sessions_send")
        .unwrap();
    let attempt = spans.iter().find(|s| s.name == "deliver a2a").unwrap();
    assert_eq!(attempt.trace_id, send.trace_id);
    // The remote was told the trace and the attempt's span as its parent.
    let expected = format!("00-{}-{}-01", attempt.trace_id, attempt.span_id);
    assert!(
        fake.traceparents().contains(&expected),
        "{expected} not in {:?}",
        fake.traceparents()
    );
    gateway.stop();
    fake.stop().await;
}

/// POSTs one MCP message to `/mcp` as the session `main` (`session`: the MCP session's id,
/// once initialized; `traceparent`: a sender's trace).
async fn mcp(
    gateway: &GatewayProcess,
    session: Option<&str>,
    traceparent: Option<&str>,
    body: serde_json::Value,
) -> reqwest::Response {
    let base = gateway.url.replace("ws://", "http://");
    let http = switchboard_core::http_client(std::time::Duration::from_secs(30)).unwrap();
    let mut request = http
        .post(format!("{}/mcp?session=main", base.trim_end_matches('/')))
        .bearer_auth(&gateway.token)
        .header("Accept", "application/json, text/event-stream")
        .json(&body);
    if let Some(session) = session {
        request = request
            .header("Mcp-Session-Id", session)
            .header("MCP-Protocol-Version", "2025-06-18");
    }
    if let Some(traceparent) = traceparent {
        request = request.header("traceparent", traceparent);
    }
    let answer = request.send().await.unwrap();
    assert!(answer.status().is_success(), "{body}: {}", answer.status());
    answer
}

/// A tool called through `/mcp` is in the trace of the request that called it, and so is the
/// run it starts: rmcp runs the call on its MCP session's own task, which the gateway puts
/// under the request's span.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_called_through_mcp_and_the_run_it_starts_are_in_the_requests_trace() {
    let receiver = Receiver::start().await;
    let home = tempfile::tempdir().unwrap();
    let config = format!(
        r#"{{ observability: {{ otlp: {{ endpoint: "{}" }} }} }}"#,
        receiver.endpoint()
    );
    let gateway = start(home.path(), &config);
    // The acting session must exist.
    let mut client = GatewayClient::connect(&gateway.url, Some(&gateway.token))
        .await
        .unwrap();
    let params = json!({"sessionKey": "main", "message": "@reply ready"});
    client.request("agent", params).await.unwrap();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "trace-test", "version": "1"}}});
    let initialized = mcp(&gateway, None, None, initialize).await;
    let session = initialized.headers()["mcp-session-id"]
        .to_str()
        .unwrap()
        .to_string();
    let notice = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    mcp(&gateway, Some(&session), None, notice).await;
    let (trace, sender) = ("4bf92f3577b34da6a3ce929d0e0e4799", "00f067aa0ba902b7");
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "sessions_spawn", "arguments": {"task": "@reply from mcp"}}});
    let traceparent = format!("00-{trace}-{sender}-01");
    let answered = mcp(&gateway, Some(&session), Some(&traceparent), call).await;
    let text = answered.text().await.unwrap();
    assert!(text.contains("accepted"), "{text}");
    let spans = receiver
        .wait_for("the request, the tool and the spawned run", |spans| {
            let trace = of_trace(spans, trace);
            let named = |name: &str| trace.iter().any(|s| s.name == name);
            let tool = trace
                .iter()
                .find(|s| s.name == "execute_tool sessions_spawn");
            let runs = runs(&trace);
            // Each span up to the request: spans are exported as they end, in any batch.
            named("POST /mcp")
                && tool.is_some_and(|tool| reaches(&trace, tool, sender))
                && !runs.is_empty()
                && runs.iter().all(|run| reaches(&trace, run, sender))
        })
        .await;
    let trace = of_trace(&spans, trace);
    let request = trace
        .iter()
        .find(|s| s.parent_span_id == sender)
        .unwrap_or_else(|| panic!("no span has the sender's span as parent: {trace:#?}"));
    assert_eq!((request.name.as_str(), request.kind), ("POST /mcp", 2));
    let tool = trace
        .iter()
        .find(|s| s.name == "execute_tool sessions_spawn")
        .unwrap_or_else(|| panic!("no tool span in the request's trace: {trace:#?}"));
    // The child's run, and its announce's once it came.
    for span in std::iter::once(*tool).chain(runs(&trace)) {
        let mut up = parent(&trace, span);
        while up.span_id != request.span_id {
            up = parent(&trace, up);
        }
    }
    client.close().await;
    gateway.stop();
}

/// A span exporter that keeps what it is handed.
#[derive(Debug, Clone, Default)]
struct Kept(Arc<Mutex<Vec<opentelemetry_sdk::trace::SpanData>>>);

impl opentelemetry_sdk::trace::SpanExporter for Kept {
    async fn export(
        &self,
        batch: Vec<opentelemetry_sdk::trace::SpanData>,
    ) -> opentelemetry_sdk::error::OTelSdkResult {
        self.0.lock().unwrap().extend(batch);
        Ok(())
    }
}

/// A model that answers "ok" with 12 tokens in and 7 out.
struct Counted;

impl switchboard_core::runtime::providers::Provider for Counted {
    fn id(&self) -> &str {
        "counted"
    }

    fn complete<'a>(
        &'a self,
        _request: &'a switchboard_core::runtime::providers::ModelRequest,
        _events: switchboard_core::runtime::providers::EventSink<'a>,
    ) -> switchboard_core::runtime::providers::ProviderFuture<'a> {
        use switchboard_protocol::message::{ContentBlock, Usage};
        Box::pin(async {
            Ok(switchboard_core::runtime::providers::ModelResponse {
                content: vec![ContentBlock::Text { text: "ok".into() }],
                usage: Usage {
                    input: 12,
                    output: 7,
                    total_tokens: 19,
                    ..Usage::default()
                },
                stop_reason: Default::default(),
            })
        })
    }
}

// OpenTelemetry GenAI semantic conventions (attribute registry, `gen_ai`):
// `gen_ai.usage.input_tokens` "int — The number of tokens used in the GenAI input (prompt)",
// `gen_ai.usage.output_tokens` "int — The number of tokens used in the GenAI response
// (completion)". The receiver above reads every attribute as text, so the type is checked here,
// on the span as the tracing layer the gateway uses hands it to the exporter (OTLP writes an
// `I64` as `intValue`, a string as `stringValue`): found exported as strings, since
// tracing-opentelemetry turns a `u64` into text.
#[tokio::test]
async fn a_model_call_s_token_counts_are_exported_as_integers() {
    assert_eq!(
        token_counts().await,
        (
            Some(opentelemetry::Value::I64(12)),
            Some(opentelemetry::Value::I64(7))
        )
    );
}

/// `gen_ai.usage.input_tokens` and `output_tokens` of a model call's span (12 and 7 tokens) as
/// the exporter gets them; the misuse corpus's `trace` case reads them too.
pub(super) async fn token_counts() -> (Option<opentelemetry::Value>, Option<opentelemetry::Value>) {
    use opentelemetry::trace::TracerProvider as _;
    use switchboard_core::runtime::providers::{ModelRequest, RetryPolicy, complete_with_retries};
    use tracing_subscriber::layer::SubscriberExt as _;

    let kept = Kept::default();
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_simple_exporter(kept.clone())
        .build();
    let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("traces-test"));
    let subscriber = tracing_subscriber::registry().with(layer);
    let request = ModelRequest {
        model: "m".into(),
        system: String::new(),
        messages: Vec::new(),
        tools: Vec::new(),
        max_tokens: None,
        thinking: Default::default(),
    };
    {
        // The test's runtime runs on this thread: the subscriber sees the whole call.
        let _default = tracing::subscriber::set_default(subscriber);
        complete_with_retries(&Counted, &request, &|_| {}, &RetryPolicy::default())
            .await
            .unwrap();
    }
    provider.force_flush().unwrap();
    let spans = kept.0.lock().unwrap().clone();
    let call = spans
        .iter()
        .find(|s| s.name == "chat m")
        .unwrap_or_else(|| panic!("no model call span: {spans:#?}"));
    let attr = |key: &str| {
        call.attributes
            .iter()
            .find(|kv| kv.key.as_str() == key)
            .map(|kv| kv.value.clone())
    };
    (
        attr("gen_ai.usage.input_tokens"),
        attr("gen_ai.usage.output_tokens"),
    )
}
