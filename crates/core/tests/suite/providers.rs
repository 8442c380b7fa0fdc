//! The two wire-format providers against a real mock LLM server (`switchboard_testkit::MockLlm`),
//! built the way the gateway builds them (`Providers::from_config`), in both formats, streaming
//! and not: text and tool-call turns, the request bodies sent, error classes, retries, and
//! streams that break off (those in `errors`).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_core::config::{Config, ModelEntry, ProviderApi, ProviderConfig};
use switchboard_core::runtime::providers::{
    ModelRequest, ModelResponse, ModelTarget, ProviderError, Providers, RetryPolicy, StreamEvent,
    ToolSpec, complete_with_retries,
};
use switchboard_protocol::message::{
    AssistantMessage, ContentBlock, StopReason, ToolResultMessage, TranscriptMessage, Usage,
    UserContent, UserMessage,
};
use switchboard_testkit::{Gate, MockApi, MockLlm, MockReply, MockToolCall, THINKING_SIGNATURE};

mod errors;

/// Distinctive, so its absence from error messages is meaningful.
const KEY: &str = "sk-test-Zq8vKEYxNEVERxSHOWNx4711";

#[derive(Debug, Clone, Copy, PartialEq)]
struct Case {
    api: ProviderApi,
    stream: bool,
}

const CASES: [Case; 4] = [
    Case {
        api: ProviderApi::OpenAiCompletions,
        stream: true,
    },
    Case {
        api: ProviderApi::OpenAiCompletions,
        stream: false,
    },
    Case {
        api: ProviderApi::AnthropicMessages,
        stream: true,
    },
    Case {
        api: ProviderApi::AnthropicMessages,
        stream: false,
    },
];

impl Case {
    fn is_openai(self) -> bool {
        self.api == ProviderApi::OpenAiCompletions
    }
}

fn provider_config(mock: &MockLlm, case: Case) -> ProviderConfig {
    let base_url = if case.is_openai() {
        mock.openai_base_url()
    } else {
        mock.anthropic_base_url()
    };
    ProviderConfig {
        api: case.api,
        base_url: Some(base_url),
        api_key: Some(KEY.to_string()),
        headers: BTreeMap::from([("x-team".to_string(), "switchboard".to_string())]),
        timeout_seconds: Some(10),
        stream: Some(case.stream),
        max_retries: Some(2),
        models: vec![ModelEntry {
            id: "m1".into(),
            max_tokens: Some(256),
            ..ModelEntry::default()
        }],
    }
}

/// `mock/m1` through the registry, as the gateway resolves it.
fn target_with(provider: ProviderConfig) -> ModelTarget {
    let mut config = Config::default();
    config.models.providers.insert("mock".to_string(), provider);
    Providers::from_config(&config)
        .unwrap()
        .resolve("mock/m1")
        .unwrap()
}

fn target(mock: &MockLlm, case: Case) -> ModelTarget {
    target_with(provider_config(mock, case))
}

fn user(text: &str) -> TranscriptMessage {
    TranscriptMessage::User(UserMessage {
        content: UserContent::Text(text.into()),
        timestamp: 1,
        provenance: None,
        origin: None,
    })
}

fn assistant(content: Vec<ContentBlock>) -> TranscriptMessage {
    TranscriptMessage::Assistant(AssistantMessage {
        content,
        provider: "mock".into(),
        model: "m1".into(),
        usage: Usage::default(),
        stop_reason: StopReason::ToolUse,
        error_message: None,
        timestamp: 2,
        origin: None,
    })
}

fn tool_result(id: &str, name: &str, text: &str, is_error: bool) -> TranscriptMessage {
    TranscriptMessage::ToolResult(ToolResultMessage {
        tool_call_id: id.into(),
        tool_name: name.into(),
        content: vec![ContentBlock::text(text)],
        is_error,
        details: None,
        timestamp: 3,
    })
}

fn call(id: &str, name: &str, arguments: Value) -> ContentBlock {
    ContentBlock::ToolCall {
        id: id.into(),
        name: name.into(),
        arguments,
    }
}

fn request(target: &ModelTarget, messages: Vec<TranscriptMessage>) -> ModelRequest {
    ModelRequest {
        model: target.model.clone(),
        system: "You are terse.".into(),
        messages,
        tools: vec![std::sync::Arc::new(ToolSpec::new(
            "sessions_list".into(),
            "List sessions.".into(),
            json!({"type": "object", "properties": {"limit": {"type": "integer"}}}),
        ))],
        max_tokens: target.max_tokens,
        thinking: switchboard_core::config::ThinkingLevel::Off,
    }
}

/// Retries as configured, but with short backoffs.
fn quick(target: &ModelTarget) -> RetryPolicy {
    RetryPolicy {
        base_delay: Duration::from_millis(10),
        ..target.retry
    }
}

/// One turn through `complete_with_retries`, with the stream events it reported.
async fn turn(
    target: &ModelTarget,
    request: &ModelRequest,
    policy: &RetryPolicy,
) -> (Result<ModelResponse, ProviderError>, Vec<StreamEvent>) {
    let seen = Mutex::new(Vec::new());
    let sink = |event: StreamEvent| seen.lock().unwrap().push(event);
    let result = complete_with_retries(&*target.provider, request, &sink, policy).await;
    (result, seen.into_inner().unwrap())
}

/// One attempt, no retries.
async fn once(
    target: &ModelTarget,
    request: &ModelRequest,
) -> Result<ModelResponse, ProviderError> {
    target.provider.complete(request, &|_| {}).await
}

fn mock_usage() -> Usage {
    Usage {
        input: 10,
        output: 5,
        cache_read: 0,
        cache_write: 0,
        total_tokens: 15,
        cost: None,
    }
}

#[tokio::test]
async fn text_turns_stream_deltas_and_report_usage() {
    let mock = MockLlm::start().await;
    for case in CASES {
        let target = target(&mock, case);
        mock.push(MockReply::text("hello big world"));
        let (reply, events) = turn(
            &target,
            &request(&target, vec![user("hi")]),
            &quick(&target),
        )
        .await;
        let reply = reply.unwrap();
        assert_eq!(
            reply,
            ModelResponse {
                content: vec![ContentBlock::text("hello big world")],
                usage: mock_usage(),
                stop_reason: StopReason::Stop,
            },
            "{case:?}"
        );
        // Streamed, the mock sends a piece a word; the pieces that arrive in one read are told
        // as one event, so there are one to three, in order.
        let pieces: Vec<&str> = events
            .iter()
            .map(|e| match e {
                StreamEvent::TextDelta(text) => text.as_str(),
                other => panic!("{case:?}: not a text piece: {other:?}"),
            })
            .collect();
        assert_eq!(pieces.concat(), "hello big world", "{case:?}");
        match case.stream {
            true => assert!((1..=3).contains(&pieces.len()), "{case:?}: {pieces:?}"),
            false => assert_eq!(pieces, ["hello big world"], "{case:?}"),
        }
        assert_eq!(target.provider.id(), "mock");
    }
    let requests = mock.requests();
    assert_eq!(
        requests
            .iter()
            .map(|r| (r.api, r.stream))
            .collect::<Vec<_>>(),
        [
            (MockApi::OpenAi, true),
            (MockApi::OpenAi, false),
            (MockApi::Anthropic, true),
            (MockApi::Anthropic, false)
        ]
    );
    mock.stop().await;
}

#[tokio::test]
async fn thinking_arrives_before_the_text() {
    let mock = MockLlm::start().await;
    for case in CASES {
        let target = target(&mock, case);
        mock.push(MockReply::Thinking {
            thinking: "let me think".into(),
            text: "answer".into(),
        });
        let (reply, events) = turn(
            &target,
            &request(&target, vec![user("hi")]),
            &quick(&target),
        )
        .await;
        let signature = (!case.is_openai()).then(|| THINKING_SIGNATURE.to_string());
        assert_eq!(
            reply.unwrap().content,
            vec![
                ContentBlock::Thinking {
                    thinking: "let me think".into(),
                    signature
                },
                ContentBlock::text("answer")
            ],
            "{case:?}"
        );
        let thinking: String = events
            .iter()
            .filter_map(|e| match e {
                StreamEvent::ThinkingDelta(t) => Some(t.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(thinking, "let me think", "{case:?}");
        assert!(
            matches!(events.last(), Some(StreamEvent::TextDelta(_))),
            "{case:?}: {events:?}"
        );
    }
    mock.stop().await;
}

#[tokio::test]
async fn tool_call_arguments_are_assembled() {
    let mock = MockLlm::start().await;
    for case in CASES {
        let target = target(&mock, case);
        mock.push(MockReply::TextAndToolCalls(
            "let me look".into(),
            vec![
                MockToolCall::new(
                    "call_1",
                    "sessions_list",
                    r#"{"limit": 5, "kinds": ["main", "group"], "label": "é x"}"#,
                ),
                MockToolCall::new("call_2", "agents_list", ""),
            ],
        ));
        let (reply, events) = turn(
            &target,
            &request(&target, vec![user("hi")]),
            &quick(&target),
        )
        .await;
        let reply = reply.unwrap();
        assert_eq!(
            reply.content,
            vec![
                ContentBlock::text("let me look"),
                call(
                    "call_1",
                    "sessions_list",
                    json!({"limit": 5, "kinds": ["main", "group"], "label": "é x"})
                ),
                call("call_2", "agents_list", json!({})),
            ],
            "{case:?}"
        );
        assert_eq!(reply.stop_reason, StopReason::ToolUse, "{case:?}");
        assert_eq!(reply.usage, mock_usage(), "{case:?}");
        let started: Vec<&StreamEvent> = events
            .iter()
            .filter(|e| matches!(e, StreamEvent::ToolCallStarted { .. }))
            .collect();
        assert_eq!(
            started,
            [
                &StreamEvent::ToolCallStarted {
                    id: "call_1".into(),
                    name: "sessions_list".into()
                },
                &StreamEvent::ToolCallStarted {
                    id: "call_2".into(),
                    name: "agents_list".into()
                },
            ],
            "{case:?}"
        );
    }
    mock.stop().await;
}

#[tokio::test]
async fn malformed_tool_arguments_are_kept_raw() {
    let mock = MockLlm::start().await;
    let raw = r#"{"limit": 5, "kinds": ["main""#;
    for case in CASES {
        let target = target(&mock, case);
        mock.push(MockReply::ToolCalls(vec![MockToolCall::new(
            "call_bad",
            "sessions_list",
            raw,
        )]));
        let (reply, _) = turn(
            &target,
            &request(&target, vec![user("hi")]),
            &quick(&target),
        )
        .await;
        assert_eq!(
            reply.unwrap().content,
            vec![call("call_bad", "sessions_list", Value::String(raw.into()))],
            "{case:?}"
        );
    }
    mock.stop().await;
}

/// A conversation with every message kind: text, a turn with two tool calls (one of them
/// after signed thinking), both results (one an error), and the user's next message.
fn conversation() -> Vec<TranscriptMessage> {
    vec![
        user("list my sessions"),
        assistant(vec![
            ContentBlock::Thinking {
                thinking: "two tools".into(),
                signature: Some("sig-1".into()),
            },
            ContentBlock::text("checking"),
            call("call_1", "sessions_list", json!({"limit": 5})),
            call("call_2", "agents_list", json!({})),
        ]),
        tool_result("call_1", "sessions_list", "[]", false),
        tool_result("call_2", "agents_list", "not allowed", true),
        user("thanks"),
    ]
}

#[tokio::test]
async fn requests_carry_system_tools_and_tool_results() {
    let mock = MockLlm::start().await;
    for case in CASES {
        let target = target(&mock, case);
        turn(&target, &request(&target, conversation()), &quick(&target))
            .await
            .0
            .unwrap();
    }
    let requests = mock.requests();
    let tool = json!({"type": "object", "properties": {"limit": {"type": "integer"}}});
    for (case, recorded) in CASES.iter().zip(&requests) {
        let expected = if case.is_openai() {
            let mut body = json!({
                "model": "m1",
                "stream": case.stream,
                "max_tokens": 256,
                "messages": [
                    {"role": "system", "content": "You are terse."},
                    {"role": "user", "content": "list my sessions"},
                    {"role": "assistant", "content": "checking", "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": "sessions_list", "arguments": "{\"limit\":5}"}},
                        {"id": "call_2", "type": "function", "function": {"name": "agents_list", "arguments": "{}"}},
                    ]},
                    {"role": "tool", "tool_call_id": "call_1", "content": "[]"},
                    {"role": "tool", "tool_call_id": "call_2", "content": "not allowed"},
                    {"role": "user", "content": "thanks"},
                ],
                "tools": [{"type": "function", "function": {
                    "name": "sessions_list", "description": "List sessions.", "parameters": tool,
                }}],
            });
            if case.stream {
                body["stream_options"] = json!({"include_usage": true});
            }
            assert_eq!(
                recorded.header("authorization"),
                Some(format!("Bearer {KEY}").as_str())
            );
            body
        } else {
            assert_eq!(recorded.header("x-api-key"), Some(KEY));
            assert_eq!(recorded.header("anthropic-version"), Some("2023-06-01"));
            json!({
                "model": "m1",
                "stream": case.stream,
                "max_tokens": 256,
                "system": "You are terse.",
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "list my sessions"}]},
                    {"role": "assistant", "content": [
                        {"type": "thinking", "thinking": "two tools", "signature": "sig-1"},
                        {"type": "text", "text": "checking"},
                        {"type": "tool_use", "id": "call_1", "name": "sessions_list", "input": {"limit": 5}},
                        {"type": "tool_use", "id": "call_2", "name": "agents_list", "input": {}},
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "call_1", "content": "[]", "is_error": false},
                        {"type": "tool_result", "tool_use_id": "call_2", "content": "not allowed", "is_error": true},
                        {"type": "text", "text": "thanks"},
                    ]},
                ],
                "tools": [{"name": "sessions_list", "description": "List sessions.", "input_schema": tool}],
            })
        };
        assert_eq!(recorded.body, expected, "{case:?}");
        assert_eq!(recorded.header("x-team"), Some("switchboard"), "{case:?}");
        assert_eq!(
            recorded.header("content-type"),
            Some("application/json"),
            "{case:?}"
        );
    }
    mock.assert_tool_results_answer_tool_calls();
    mock.stop().await;
}

#[tokio::test]
async fn anthropic_gets_a_max_tokens_even_when_the_model_sets_none() {
    let mock = MockLlm::start().await;
    let mut config = provider_config(&mock, CASES[2]);
    config.models.clear();
    // A trailing slash on the base URL must not produce `//v1/messages`.
    config.base_url = Some(format!("{}/", mock.anthropic_base_url()));
    let target = target_with(config);
    assert_eq!(target.max_tokens, None);
    once(&target, &request(&target, vec![user("hi")]))
        .await
        .unwrap();
    assert_eq!(mock.requests()[0].body["max_tokens"], json!(4096));

    let mut config = provider_config(&mock, CASES[0]);
    config.models.clear();
    config.base_url = Some(format!("{}/", mock.openai_base_url()));
    let target = target_with(config);
    once(&target, &request(&target, vec![user("hi")]))
        .await
        .unwrap();
    assert_eq!(mock.requests()[1].body.get("max_tokens"), None);
    mock.stop().await;
}

#[tokio::test]
async fn the_pairing_check_catches_a_result_that_answers_nothing() {
    let mock = MockLlm::start().await;
    let bad = vec![
        user("go"),
        assistant(vec![call("call_1", "sessions_list", json!({}))]),
        tool_result("call_9", "sessions_list", "[]", false),
    ];
    for api in [
        ProviderApi::OpenAiCompletions,
        ProviderApi::AnthropicMessages,
    ] {
        let target = target(&mock, Case { api, stream: true });
        once(&target, &request(&target, bad.clone())).await.unwrap();
        let problem = mock.check_tool_results_answer_tool_calls().unwrap_err();
        assert!(
            problem.contains(r#"tool result "call_9" answers no tool call"#),
            "{problem}"
        );
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            mock.assert_tool_results_answer_tool_calls();
        }));
        assert!(panicked.is_err(), "{api:?}: the assertion must fail");
    }
    mock.stop().await;

    // A call left unanswered while the conversation goes on.
    let mock = MockLlm::start().await;
    let target = target(&mock, CASES[1]);
    let unanswered = vec![
        user("go"),
        assistant(vec![
            call("call_1", "a", json!({})),
            call("call_2", "b", json!({})),
        ]),
        tool_result("call_1", "a", "ok", false),
        user("and?"),
    ];
    once(&target, &request(&target, unanswered)).await.unwrap();
    let problem = mock.check_tool_results_answer_tool_calls().unwrap_err();
    assert!(
        problem.contains(r#""call_2" got no tool result"#),
        "{problem}"
    );
    mock.stop().await;
}

#[tokio::test]
async fn slow_and_delayed_replies_still_complete() {
    let mock = MockLlm::start().await;
    for case in CASES {
        let target = target(&mock, case);
        mock.push(MockReply::Delay(
            Duration::from_millis(20),
            Box::new(MockReply::Slow {
                chunks: vec!["a".into(), "b".into()],
                delay: Duration::from_millis(20),
            }),
        ));
        let (reply, _) = turn(
            &target,
            &request(&target, vec![user("hi")]),
            &quick(&target),
        )
        .await;
        assert_eq!(reply.unwrap().text(), "ab", "{case:?}");
    }
    mock.stop().await;
}

/// A streamed reply is whole at the format's terminal event, but its HTTP/1.1 body ends only
/// with its last chunk, which may come a while later: the turn does not wait for it, and the
/// next call goes over the same connection. hyper closes a connection whose body is dropped
/// unread, which once cost every model call a new one.
#[tokio::test]
async fn a_streamed_reply_leaves_its_connection_to_the_next_call() {
    let mock = MockLlm::start().await;
    for case in CASES.into_iter().filter(|case| case.stream) {
        let target = target(&mock, case);
        let gate = Gate::new();
        let lingering = MockReply::Lingering(gate.clone(), Box::new(MockReply::text("one")));
        mock.push(lingering);
        let first = once(&target, &request(&target, vec![user("hi")])).await;
        assert_eq!(first.unwrap().text(), "one", "{case:?}");
        gate.open();
        let first = mock.requests().last().and_then(|r| r.peer);
        assert!(first.is_some(), "{case:?}: the mock records no peer");
        // The body's last chunk is on its way now; the provider reads it off the turn's path
        // and the connection goes back to its pool. Calls until one comes over it (a busy
        // machine may take a while to read those bytes); without the drain none ever does.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            tokio::time::sleep(Duration::from_millis(50)).await;
            mock.push(MockReply::text("two"));
            let next = once(&target, &request(&target, vec![user("hi")])).await;
            assert_eq!(next.unwrap().text(), "two", "{case:?}");
            if mock.requests().last().and_then(|r| r.peer) == first {
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{case:?}: no later call came over the first call's connection"
            );
        }
    }
    mock.stop().await;
}
