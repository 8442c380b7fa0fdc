//! Long conversations on a model with a context limit: the mock LLM refuses, with the provider's
//! own context-length error, any prompt over its limit (`MockLlm::set_context_limit`, counting
//! the JSON it is sent), and reports the prompt tokens it counted, as a real model does.

use pretty_assertions::assert_eq;
use serde_json::json;
use switchboard_core::config::{Config, ModelEntry, ProviderApi};
use switchboard_core::store::RunStatus;
use switchboard_testkit::{MockLlm, MockReply, prompt_tokens};

use super::support::{TestEngine, message};

/// The mock provider's model `m1` with `window` as its `contextWindow` (none: unset).
fn config(mock: &MockLlm, api: ProviderApi, window: Option<u64>) -> Config {
    let mut config = super::runtime::mock_config(mock, api, false);
    let provider = config.models.providers.get_mut("mock").unwrap();
    provider.models = vec![ModelEntry {
        id: "m1".into(),
        context_window: window,
        ..ModelEntry::default()
    }];
    // The window is for the conversation: the built-in tools' schemas would take much of it.
    config.tools.deny = [
        "group:fs",
        "group:web",
        "group:messaging",
        "group:automation",
        "session_status",
    ]
    .map(String::from)
    .to_vec();
    config
}

/// `n` stored messages of `chars` characters each, alternating user and assistant.
async fn long_session(h: &TestEngine, session: &str, n: usize, chars: usize) {
    h.create(session).await;
    add_messages(h, session, 0..n, chars).await;
}

/// Stored messages numbered `numbers` (even: user, odd: assistant) appended to `session`.
async fn add_messages(
    h: &TestEngine,
    session: &str,
    numbers: std::ops::Range<usize>,
    chars: usize,
) {
    let messages = numbers
        .map(|i| {
            let text = format!("{i:04} {}", "x".repeat(chars - 5));
            if i % 2 == 0 {
                message(json!({"role": "user", "content": text, "timestamp": i}))
            } else {
                message(json!({"role": "assistant", "content": [{"type": "text", "text": text}],
                    "provider": "mock", "model": "m1",
                    "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0},
                    "stopReason": "stop", "timestamp": i}))
            }
        })
        .collect();
    let key = h.key(session);
    h.engine.store().append(&key, None, messages).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_4000_token_model_answers_in_a_session_of_200_long_messages_within_its_window() {
    for api in [
        ProviderApi::OpenAiCompletions,
        ProviderApi::AnthropicMessages,
    ] {
        let mock = MockLlm::start().await;
        mock.set_context_limit(Some(4000));
        let h = TestEngine::open(config(&mock, api, Some(4000))).await;
        long_session(&h, "main", 200, 400).await;
        // Most of it does not fit: the run first has the model summarise what will not.
        mock.push(MockReply::text("notes: items 0000 to 0150 were discussed"));
        mock.push(MockReply::text("still here"));
        let record = h.turn("main", "and now?").await;
        assert_eq!(record.status, RunStatus::Ok, "{api:?}: {:?}", record.error);
        assert_eq!(record.result.as_deref(), Some("still here"));
        let requests = mock.requests();
        assert_eq!(
            requests.len(),
            2,
            "{api:?}: the summary, then the turn, both fitting"
        );
        for sent in &requests {
            assert!(
                prompt_tokens(&sent.body) <= 4000,
                "{api:?}: {}",
                prompt_tokens(&sent.body)
            );
        }
        // The turn is sent the summary, then the newest messages; its own message is last.
        let messages = requests[1].messages();
        assert!(
            messages.len() > 5 && messages.len() < 200,
            "{api:?}: {}",
            messages.len()
        );
        let last = messages.last().unwrap().to_string();
        assert!(last.contains("and now?"), "{last}");
        let first = messages[0].to_string();
        assert!(
            first.contains("notes: items 0000 to 0150"),
            "{api:?}: {first}"
        );
        // The summary is a stored message with its provenance; the originals are all kept.
        let transcript = h.transcript("main").await;
        let summaries: Vec<&serde_json::Value> = transcript
            .iter()
            .filter(|m| m["provenance"]["kind"] == "compaction")
            .collect();
        assert_eq!(summaries.len(), 1, "{api:?}");
        assert!(
            summaries[0]["provenance"]["coversUntilSeq"]
                .as_i64()
                .unwrap()
                > 100
        );
        assert_eq!(
            transcript.len(),
            203,
            "{api:?}: the 200, the turn's message, the summary, the reply"
        );
        mock.stop().await;
        h.engine.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_500_turn_conversation_never_fails_and_every_request_stays_under_the_limit() {
    let mock = MockLlm::start().await;
    mock.set_context_limit(Some(3000));
    mock.set_fallback(MockReply::text("a fairly long answer ".repeat(20)));
    let h = TestEngine::open(config(&mock, ProviderApi::OpenAiCompletions, Some(3000))).await;
    for turn in 0..500 {
        let record = h
            .turn("main", &format!("turn {turn}: {}", "q".repeat(300)))
            .await;
        assert_eq!(
            record.status,
            RunStatus::Ok,
            "turn {turn}: {:?}",
            record.error
        );
    }
    let transcript = h.transcript("main").await;
    let summaries = transcript
        .iter()
        .filter(|m| m["provenance"]["kind"] == "compaction")
        .count();
    assert!(summaries >= 1, "a summary message appears");
    let requests = mock.requests();
    assert_eq!(requests.len(), 500 + summaries, "no request was refused");
    let largest = requests
        .iter()
        .map(|r| prompt_tokens(&r.body))
        .max()
        .unwrap();
    assert!(largest <= 3000, "{largest}");
    // Every message is kept in the store, reachable by paging.
    assert_eq!(transcript.len(), 1000 + summaries);
    mock.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_context_length_refusal_compacts_and_the_turn_is_tried_again() {
    let mock = MockLlm::start().await;
    mock.set_context_limit(Some(3000));
    // No contextWindow: only the provider's refusal says the conversation is too long.
    let h = TestEngine::open(config(&mock, ProviderApi::AnthropicMessages, None)).await;
    long_session(&h, "main", 100, 400).await;
    mock.push(MockReply::text("notes: a hundred messages about items"));
    mock.push(MockReply::text("made it"));
    let record = h.turn("main", "hello again").await;
    assert_eq!(record.status, RunStatus::Ok, "{:?}", record.error);
    assert_eq!(record.result.as_deref(), Some("made it"));
    // Refused, then the summary (cut to what the refusal said fits), then the turn again.
    let requests = mock.requests();
    assert_eq!(requests.len(), 3);
    assert!(prompt_tokens(&requests[0].body) > 3000);
    for sent in &requests[1..] {
        assert!(
            prompt_tokens(&sent.body) <= 3000,
            "{}",
            prompt_tokens(&sent.body)
        );
    }
    let first = requests[2].messages()[0].to_string();
    assert!(first.contains("a hundred messages about items"), "{first}");
    let summaries = h
        .transcript("main")
        .await
        .iter()
        .filter(|m| m["provenance"]["kind"] == "compaction")
        .count();
    assert_eq!(summaries, 1);
    // A turn that alone is too long fails with a clear error.
    let record = h.turn("main", &"z".repeat(20_000)).await;
    assert_eq!(record.status, RunStatus::Error);
    let error = record.error.unwrap_or_default();
    assert!(
        error.contains("the newest turn alone is too long for mock/m1"),
        "{error}"
    );
    mock.stop().await;
    h.engine.close().await;
}

/// Agent model `mock/m1` with `mock/m2` as its fallback.
fn with_fallback(mock: &MockLlm) -> Config {
    let mut config = super::runtime::mock_config(mock, ProviderApi::OpenAiCompletions, true);
    config.agents.defaults.model = serde_json::from_value(json!({
        "primary": "mock/m1", "fallbacks": ["mock/m2"],
    }))
    .unwrap();
    // Only the fallback has prices: each reply is priced by the model that answered.
    config.models.providers.get_mut("mock").unwrap().models = vec![
        ModelEntry {
            id: "m1".into(),
            ..ModelEntry::default()
        },
        ModelEntry {
            id: "m2".into(),
            cost: serde_json::from_value(json!({"input": 1.0, "output": 2.0})).unwrap(),
            ..ModelEntry::default()
        },
    ];
    config
}

fn models_asked(mock: &MockLlm) -> Vec<String> {
    mock.requests()
        .iter()
        .map(|r| r.body["model"].as_str().unwrap_or_default().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_the_primary_answers_500_the_fallback_runs_the_turn_and_the_row_says_so() {
    let mock = MockLlm::start().await;
    let h = TestEngine::open(with_fallback(&mock)).await;
    for _ in 0..3 {
        mock.push(MockReply::status(500, "upstream exploded"));
    }
    mock.push(MockReply::text("the fallback answers"));
    let record = h.turn("main", "hello").await;
    assert_eq!(record.status, RunStatus::Ok, "{:?}", record.error);
    assert_eq!(record.result.as_deref(), Some("the fallback answers"));
    // The primary's own retries first (maxRetries 2), then the fallback.
    assert_eq!(models_asked(&mock), ["m1", "m1", "m1", "m2"]);
    let entry = h.engine.store().get(&h.key("main")).await.unwrap().unwrap();
    assert_eq!(entry.last_model.as_deref(), Some("mock/m2"));
    let reply = h.transcript("main").await.pop().unwrap();
    assert_eq!(
        (reply["provider"].as_str(), reply["model"].as_str()),
        (Some("mock"), Some("m2"))
    );
    // 10 input tokens at $1 and 5 output tokens at $2 per million.
    let cost = &reply["usage"]["cost"];
    assert_eq!(
        (cost["input"].as_f64(), cost["output"].as_f64()),
        (Some(0.00001), Some(0.00001))
    );
    assert_eq!(cost["total"].as_f64(), Some(0.00002));
    let entry = h.engine.store().get(&h.key("main")).await.unwrap().unwrap();
    assert!(
        (entry.cost_usd - 0.00002).abs() < 1e-12,
        "the session's cost: {}",
        entry.cost_usd
    );
    let row = h.engine.sessions().row(&entry);
    assert_eq!(row.cost_usd, Some(entry.cost_usd), "rows show it");
    // The run record says which model answered and what the run cost, as stored.
    let stored = h.engine.store().get_run(&record.run_id).await.unwrap();
    let stored = stored.expect("the run is stored");
    assert_eq!(stored.model.as_deref(), Some("mock/m2"));
    assert_eq!(stored.cost_usd, Some(0.00002));
    // A refused key falls back at once, without retries.
    mock.push(MockReply::status(401, "bad key"));
    mock.push(MockReply::text("again the fallback"));
    let record = h.turn("main", "hello again").await;
    assert_eq!(record.result.as_deref(), Some("again the fallback"));
    assert_eq!(models_asked(&mock)[4..], ["m1", "m2"]);
    // A request the model refuses as wrong is not tried elsewhere.
    mock.push(MockReply::status(400, "your request is malformed"));
    let record = h.turn("main", "third").await;
    assert_eq!(record.status, RunStatus::Error);
    assert_eq!(models_asked(&mock)[6..], ["m1"]);
    mock.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thinking_levels_reach_the_wire_requests_of_both_formats() {
    use switchboard_protocol::runs::ChatSendParams;
    use switchboard_protocol::sessions::SessionsPatchParams;
    for api in [
        ProviderApi::OpenAiCompletions,
        ProviderApi::AnthropicMessages,
    ] {
        let mock = MockLlm::start().await;
        let mut settings = config(&mock, api, None);
        settings.agents.defaults.thinking_level = switchboard_core::config::ThinkingLevel::Low;
        let h = TestEngine::open(settings).await;
        // The agent's level, then the session's own (set with /think), then off.
        h.turn("main", "first").await;
        let send = |message: &str| ChatSendParams {
            session_key: "main".into(),
            message: message.into(),
            ..ChatSendParams::default()
        };
        h.engine
            .sessions()
            .chat_send(send("/think high"), true)
            .await
            .unwrap();
        h.turn("main", "second").await;
        h.engine
            .sessions()
            .chat_send(send("/think OFF"), true)
            .await
            .unwrap();
        h.turn("main", "third").await;
        let bodies: Vec<serde_json::Value> = mock.requests().into_iter().map(|r| r.body).collect();
        assert_eq!(bodies.len(), 3, "/think starts no run");
        match api {
            ProviderApi::OpenAiCompletions => {
                let efforts: Vec<&serde_json::Value> =
                    bodies.iter().map(|b| &b["reasoning_effort"]).collect();
                assert_eq!(
                    efforts,
                    [&json!("low"), &json!("high"), &serde_json::Value::Null]
                );
            }
            ProviderApi::AnthropicMessages => {
                let budgets: Vec<&serde_json::Value> = bodies
                    .iter()
                    .map(|b| &b["thinking"]["budget_tokens"])
                    .collect();
                assert_eq!(
                    budgets,
                    [&json!(2048), &json!(24_576), &serde_json::Value::Null]
                );
                assert_eq!(bodies[1]["thinking"]["type"], "enabled");
                let max = bodies[1]["max_tokens"].as_u64().unwrap();
                assert!(max > 24_576, "max_tokens leaves room for the answer: {max}");
            }
        }
        let bad = SessionsPatchParams {
            key: "main".into(),
            thinking_level: switchboard_protocol::sessions::Patch::Set("deep".into()),
            ..SessionsPatchParams::default()
        };
        let e = h
            .engine
            .sessions()
            .patch(bad)
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("thinkingLevel: \"deep\" is not a level; expected one of off, minimal, low, medium, high"), "{e}");
        mock.stop().await;
        h.engine.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_compact_and_the_compact_command_summarise_all_but_the_newest_turn() {
    use switchboard_protocol::runs::ChatSendParams;
    use switchboard_protocol::sessions::SessionKeyParams;
    let mock = MockLlm::start().await;
    let h = TestEngine::open(config(&mock, ProviderApi::OpenAiCompletions, None)).await;
    long_session(&h, "main", 40, 100).await;
    mock.push(MockReply::text("notes: forty messages about items"));
    let key = SessionKeyParams {
        key: "main".into(),
        agent_id: None,
    };
    let done = h.engine.sessions().compact(key).await.unwrap();
    assert_eq!((done.compacted, done.messages), (true, 38));
    assert_eq!(
        done.summary.as_deref(),
        Some("notes: forty messages about items")
    );
    // The next turn is sent the summary and the newest turn, not the 38 messages.
    mock.push(MockReply::text("ok then"));
    h.turn("main", "what now?").await;
    let sent = mock.requests().last().unwrap().messages().to_vec();
    let contents: Vec<String> = sent.iter().map(|m| m["content"].to_string()).collect();
    assert_eq!(sent.len(), 4, "{contents:?}");
    assert!(
        contents[0].contains("forty messages about items"),
        "{contents:?}"
    );
    assert!(contents[1].contains("0038"), "{contents:?}");
    assert!(contents[3].contains("what now?"), "{contents:?}");
    // From the chat: /compact is a command, not a run.
    mock.push(MockReply::text("notes: even shorter"));
    let send = ChatSendParams {
        session_key: "main".into(),
        message: "/compact".into(),
        ..ChatSendParams::default()
    };
    let answer =
        serde_json::to_value(h.engine.sessions().chat_send(send, true).await.unwrap()).unwrap();
    assert_eq!(answer["command"], "/compact", "{answer}");
    let reply = answer["reply"].as_str().unwrap();
    assert!(reply.starts_with("Compacted 3 messages"), "{answer}");
    // Everything is still in the history: 40 + the turn's two + two summaries.
    assert_eq!(h.transcript("main").await.len(), 44);
    mock.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_summary_older_than_the_newest_200_messages_still_leads_the_view_after_a_restart() {
    let mock = MockLlm::start().await;
    let h = TestEngine::open(config(&mock, ProviderApi::OpenAiCompletions, None)).await;
    long_session(&h, "main", 40, 100).await;
    mock.push(MockReply::text("notes: the first forty"));
    let key = switchboard_protocol::sessions::SessionKeyParams {
        key: "main".into(),
        agent_id: None,
    };
    assert!(h.engine.sessions().compact(key).await.unwrap().compacted);
    add_messages(&h, "main", 40..340, 100).await;
    let sent_after = |mock: &MockLlm| {
        let sent = mock.requests().last().unwrap().messages().to_vec();
        sent.iter()
            .map(|m| m["content"].to_string())
            .collect::<Vec<_>>()
    };
    mock.push(MockReply::text("first"));
    h.turn("main", "before the restart").await;
    let contents = sent_after(&mock);
    assert!(
        contents[0].contains("the first forty"),
        "{:?}",
        &contents[..2]
    );
    // The newest 200 messages (from a user message on) follow the summary, not the 300
    // appended since it: 0141 is an answer, so the view goes on at 0142.
    assert!(contents[1].contains("0142"), "{:?}", &contents[..2]);
    assert_eq!(contents.len(), 1 + 199, "the summary and the window");
    let h = h.restart(None).await;
    mock.push(MockReply::text("second"));
    h.turn("main", "after the restart").await;
    let contents = sent_after(&mock);
    assert!(
        contents[0].contains("the first forty"),
        "{:?}",
        &contents[..2]
    );
    assert!(contents[1].contains("0144"), "{:?}", &contents[..2]);
    assert!(contents.last().unwrap().contains("after the restart"));
    assert_eq!(contents.len(), 1 + 199);
    mock.stop().await;
    h.engine.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sub_agents_report_states_what_its_calls_cost() {
    let mock = MockLlm::start().await;
    let mut settings = config(&mock, ProviderApi::OpenAiCompletions, None);
    settings.models.providers.get_mut("mock").unwrap().models[0].cost =
        serde_json::from_value(json!({"input": 1000.0, "output": 2000.0})).unwrap();
    let h = TestEngine::open(settings).await;
    mock.push(MockReply::text("the child's findings"));
    let spawned = h
        .invoke("main", "sessions_spawn", json!({"task": "find things"}))
        .await;
    assert_eq!(spawned.content["status"], "accepted", "{}", spawned.content);
    let report = h.first_of_kind("main", "subagent-announce").await;
    // Each of the child's model calls (its task, then its report) is 10 input tokens at $1,000
    // and 5 output tokens at $2,000 per million: $0.02 each, as priced when answered.
    let text = report["content"].as_str().unwrap();
    assert!(
        text.contains("tokens 30 (in 20 / out 10) • est $0.04"),
        "{text}"
    );
    mock.stop().await;
    h.engine.close().await;
}
