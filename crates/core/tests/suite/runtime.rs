//! Runs through the real runtime: providers over HTTP against the mock LLM (both wire formats,
//! streaming and not), the scripted model, FIFO per session, lanes, timeouts, aborts.

use std::sync::Arc;
use std::time::Duration;

use pretty_assertions::assert_eq;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};
use switchboard_core::RunId;
use switchboard_core::config::{Config, ProviderApi, ProviderConfig};
use switchboard_core::keys::{self, KeyContext, Scope};
use switchboard_core::runtime::RunEventData;
use switchboard_core::runtime::RunRequest;
use switchboard_core::runtime::lanes::Lane;
use switchboard_core::runtime::tool::{self, Tool, ToolContext, ToolFuture, ToolOutput};
use switchboard_core::store::{NewSession, RunStatus};
use switchboard_testkit::{Gate, MockLlm, MockReply, MockToolCall};

use super::support::{GUARD, TestEngine, k, message};

/// A test tool with typed parameters: looks a key up and says what it found.
struct Lookup;

#[derive(Deserialize, JsonSchema)]
struct LookupParams {
    /// The key to look up.
    key: String,
    /// How many results.
    #[serde(default, deserialize_with = "switchboard_protocol::lenient::opt_int")]
    limit: Option<i64>,
}

impl Tool for Lookup {
    fn name(&self) -> &str {
        "lookup"
    }
    fn description(&self) -> &str {
        "Look a key up."
    }
    fn parameters(&self) -> Value {
        tool::schema_for::<LookupParams>()
    }
    fn call<'a>(&'a self, _ctx: &'a ToolContext, arguments: Value) -> ToolFuture<'a> {
        Box::pin(async move {
            match tool::parse_args::<LookupParams>(self, arguments) {
                Ok(p) => ToolOutput::ok(json!({"key": p.key, "found": true, "limit": p.limit})),
                Err(message) => ToolOutput::error(message),
            }
        })
    }
}

/// A tool with a bug: it panics.
struct Panics;

impl Tool for Panics {
    fn name(&self) -> &str {
        "panics"
    }
    fn description(&self) -> &str {
        "Always panics."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }
    fn call<'a>(&'a self, _ctx: &'a ToolContext, _arguments: Value) -> ToolFuture<'a> {
        Box::pin(async move { panic!("a bug in a tool") })
    }
}

/// Starts a run in another session and waits for it, the way `sessions_send` will.
struct AwaitRun;

#[derive(Deserialize, JsonSchema)]
struct AwaitParams {
    session_key: String,
    message: String,
}

impl Tool for AwaitRun {
    fn name(&self) -> &str {
        "await_run"
    }
    fn description(&self) -> &str {
        "Run another session and wait for its reply."
    }
    fn parameters(&self) -> Value {
        tool::schema_for::<AwaitParams>()
    }
    fn call<'a>(&'a self, ctx: &'a ToolContext, arguments: Value) -> ToolFuture<'a> {
        Box::pin(async move {
            let p: AwaitParams = match tool::parse_args(self, arguments) {
                Ok(p) => p,
                Err(message) => return ToolOutput::error(message),
            };
            let scope = KeyContext {
                agent_id: "main",
                main_key: "main",
                scope: Scope::PerSender,
            };
            let key = keys::canonicalize(&p.session_key, &scope).unwrap();
            let mut request =
                RunRequest::new(key.clone(), Lane::Nested).with_message(p.message, None);
            request.create = Some(NewSession::for_key(&key, "main", "main"));
            let accepted = ctx.submit(request).await.unwrap();
            let outcome = ctx
                .wait_run(&accepted.run_id, Duration::from_secs(30))
                .await;
            ToolOutput::ok(json!({"reply": outcome.unwrap().record.result}))
        })
    }
}

/// The engine of these tests: the built-in tools plus `lookup` and `await_run`.
struct Harness;

impl Harness {
    async fn open(config: Config) -> TestEngine {
        TestEngine::builder()
            .config(config)
            .tool(Arc::new(Lookup))
            .tool(Arc::new(AwaitRun))
            .tool(Arc::new(Panics))
            .open()
            .await
    }
}

pub(super) fn mock_config(mock: &MockLlm, api: ProviderApi, stream: bool) -> Config {
    let mut config = Config::default();
    let base_url = match api {
        ProviderApi::OpenAiCompletions => mock.openai_base_url(),
        ProviderApi::AnthropicMessages => mock.anthropic_base_url(),
    };
    let provider = ProviderConfig {
        api,
        base_url: Some(base_url),
        api_key: Some("sk-test-secret-key-0123".into()),
        stream: Some(stream),
        max_retries: Some(2),
        timeout_seconds: Some(5),
        ..ProviderConfig::default()
    };
    config.models.providers.insert("mock".into(), provider);
    config.agents.defaults.model = switchboard_core::config::ModelRef::new("mock/m1");
    config
}

/// The plain-text contents of the messages of the mock's `n`th request.
fn string_contents(mock: &MockLlm, n: usize) -> Vec<String> {
    mock.requests()[n]
        .messages()
        .iter()
        .filter_map(|m| m["content"].as_str().map(str::to_string))
        .collect()
}

fn roles(transcript: &[Value]) -> Vec<String> {
    transcript
        .iter()
        .map(|m| m["role"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_step_tool_loop_in_both_wire_formats_streaming_and_not() {
    for api in [
        ProviderApi::OpenAiCompletions,
        ProviderApi::AnthropicMessages,
    ] {
        for stream in [true, false] {
            let mock = MockLlm::start().await;
            let h = Harness::open(mock_config(&mock, api, stream)).await;
            mock.push(MockReply::ToolCalls(vec![MockToolCall::new(
                "c1",
                "lookup",
                r#"{"key":"alpha","limit":"3"}"#,
            )]));
            mock.push(MockReply::ToolCalls(vec![MockToolCall::new(
                "c2",
                "lookup",
                r#"{"key": "beta",,}"#,
            )]));
            mock.push(MockReply::ToolCalls(vec![MockToolCall::new(
                "c3",
                "lookup",
                r#"{"limit": 2}"#,
            )]));
            mock.push(MockReply::ToolCalls(vec![MockToolCall::new(
                "c4",
                "no_such_tool",
                "{}",
            )]));
            mock.push(MockReply::text("all done"));
            let record = h.turn("main", "find alpha").await;
            let case = format!("{api:?} stream={stream}");
            assert_eq!(
                (record.status, record.result.as_deref()),
                (RunStatus::Ok, Some("all done")),
                "{case}"
            );

            let t = h.transcript("main").await;
            assert_eq!(
                roles(&t),
                [
                    "user",
                    "assistant",
                    "toolResult",
                    "assistant",
                    "toolResult",
                    "assistant",
                    "toolResult",
                    "assistant",
                    "toolResult",
                    "assistant"
                ],
                "{case}"
            );
            // A good call runs; "3" counts as the number 3.
            assert_eq!(t[2]["isError"], false, "{case}");
            let found: Value =
                serde_json::from_str(t[2]["content"][0]["text"].as_str().unwrap()).unwrap();
            assert_eq!(
                found,
                json!({"key": "alpha", "found": true, "limit": 3}),
                "{case}"
            );
            // Malformed JSON, a missing field and an unknown tool come back as errors that say how
            // to fix the call (each `{"status": "error", "error"}`), and the run goes on.
            let text = |i: usize| {
                let raw = t[i]["content"][0]["text"].as_str().unwrap();
                let error: Value = serde_json::from_str(raw).unwrap();
                assert_eq!(error["status"], "error", "{case}: {raw}");
                error["error"].as_str().unwrap().to_string()
            };
            assert_eq!(t[4]["isError"], true, "{case}");
            assert!(
                text(4).contains("not valid JSON") && text(4).contains("\"key\""),
                "{case}: {}",
                text(4)
            );
            assert_eq!(t[6]["isError"], true, "{case}");
            assert!(
                text(6).contains("missing field `key`"),
                "{case}: {}",
                text(6)
            );
            assert!(
                text(8).contains("Unknown tool \"no_such_tool\"") && text(8).contains("lookup"),
                "{case}: {}",
                text(8)
            );
            assert_eq!(t[9]["content"][0]["text"], "all done", "{case}");
            assert_eq!(t[9]["stopReason"], "stop", "{case}");

            // Every request the model received: each tool result answers a call of the turn before,
            // the tools were offered with model-shaped schemas, and the key never left in errors.
            mock.assert_tool_results_answer_tool_calls();
            let requests = mock.requests();
            assert_eq!(requests.len(), 5, "{case}");
            assert!(requests.iter().all(|r| r.stream == stream), "{case}");
            let body = requests[0].body.to_string();
            assert!(
                body.contains("\"lookup\"") && body.contains("The key to look up."),
                "{case}"
            );
            assert!(
                !body.contains("\"integer\""),
                "{case}: numbers are `number` for models"
            );
            let entry = h
                .engine
                .store()
                .get(&k("agent:main:main"))
                .await
                .unwrap()
                .unwrap();
            assert!(
                entry.input_tokens > 0 && entry.output_tokens > 0,
                "{case}: token counters"
            );
            mock.stop().await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limits_are_retried_and_auth_or_network_failures_end_the_run_clearly() {
    let mock = MockLlm::start().await;
    let h = Harness::open(mock_config(&mock, ProviderApi::OpenAiCompletions, true)).await;
    mock.push(MockReply::Status {
        status: 429,
        body: json!({"error": {"message": "slow down"}}),
        headers: vec![("retry-after-ms".into(), "30".into())],
    });
    mock.push(MockReply::text("after the retry"));
    let record = h.turn("main", "hi").await;
    assert_eq!(
        (record.status, record.result.as_deref()),
        (RunStatus::Ok, Some("after the retry"))
    );
    assert_eq!(mock.requests().len(), 2);

    mock.push(MockReply::status(
        401,
        "Incorrect API key provided: sk-test-secret-key-0123",
    ));
    let record = h.turn("main", "again").await;
    assert_eq!(record.status, RunStatus::Error);
    let error = record.error.unwrap();
    assert!(error.contains("authentication failed (401)"), "{error}");
    assert!(
        !error.contains("sk-test-secret-key-0123"),
        "the key leaked: {error}"
    );
    let t = h.transcript("main").await;
    let last = t.last().unwrap();
    assert_eq!(
        (last["role"].clone(), last["stopReason"].clone()),
        (json!("assistant"), json!("error"))
    );
    assert!(!last.to_string().contains("sk-test-secret-key-0123"));
    mock.stop().await;

    // Nothing listens on the port any more: a network error after the retries.
    let record = h.turn("main", "anyone?").await;
    assert_eq!(record.status, RunStatus::Error);
    assert!(
        record.error.as_deref().unwrap().contains("network error"),
        "{:?}",
        record.error
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_concurrent_sends_make_ten_turns_that_never_interleave() {
    let mut config = Config::default();
    config.agents.defaults.model = switchboard_core::config::ModelRef::new("builtin/scripted");
    let h = Arc::new(Harness::open(config).await);
    let mut runs = Vec::new();
    for i in 0..10 {
        let h = h.clone();
        // Each turn calls a tool and is slowed down, so overlapping turns would interleave.
        runs.push(tokio::spawn(async move {
            h.submit(
                "busy",
                &format!("@tool lookup {{\"key\": \"k{i}\"}}\n@delay 5\n@reply turn {i} done"),
                None,
            )
            .await
        }));
    }
    let mut ids = Vec::new();
    for run in runs {
        ids.push(run.await.unwrap());
    }
    for id in &ids {
        let outcome = h
            .engine
            .runtime()
            .wait(id, Duration::from_secs(30))
            .await
            .unwrap();
        assert_eq!(outcome.record.status, RunStatus::Ok);
    }
    let t = h.transcript("busy").await;
    assert_eq!(t.len(), 40);
    for turn in t.chunks(4) {
        assert_eq!(
            roles(turn),
            ["user", "assistant", "toolResult", "assistant"]
        );
        let user = turn[0]["content"].as_str().unwrap();
        let i = user
            .split("@reply turn ")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap();
        assert_eq!(turn[3]["content"][0]["text"], format!("turn {i} done"));
        assert!(
            turn[2]["content"][0]["text"]
                .as_str()
                .unwrap()
                .contains(&format!("k{i}"))
        );
    }
    // FIFO: runs submitted one after another (each submit returns once the run is queued) run
    // in that order, however long each one takes.
    let mut ordered = Vec::new();
    for i in 0..5 {
        ordered.push(
            h.submit(
                "fifo",
                &format!("@delay {}\n@reply r{i}", 40 - i * 10),
                None,
            )
            .await,
        );
    }
    for id in &ordered {
        h.engine
            .runtime()
            .wait(id, Duration::from_secs(30))
            .await
            .unwrap();
    }
    let replies: Vec<Value> = h
        .transcript("fifo")
        .await
        .iter()
        .filter(|m| m["role"] == "assistant")
        .map(|m| m["content"][0]["text"].clone())
        .collect();
    assert_eq!(replies, ["r0", "r1", "r2", "r3", "r4"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_every_lane_at_one_a_run_that_waits_for_another_still_finishes() {
    let mut config = Config::default();
    config.agents.defaults.max_concurrent = 1;
    config.agents.defaults.subagents.max_concurrent = 1;
    config.cron.max_concurrent_runs = 1;
    let h = Harness::open(config).await;
    // main waits for helper, which itself waits for a third session: three runs, one slot per lane.
    let message = r#"@tool await_run {"session_key": "helper", "message": "@tool await_run {\"session_key\": \"third\", \"message\": \"@reply from third\"}\n@reply helper got {{result.reply}}"}
@reply main got {{result.reply}}"#;
    let record = h.turn("main", message).await;
    assert_eq!(record.status, RunStatus::Ok, "{:?}", record.error);
    assert_eq!(
        record.result.as_deref(),
        Some("main got helper got from third")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_past_its_timeout_keeps_its_partial_text() {
    let h = Harness::open(Config::default()).await;
    let run_id = h
        .submit(
            "main",
            // Words 0.5 s apart against a 2 s timeout: two or more stream whatever the
            // run's start took, and the last would need 5 s.
            "@slow 500\n@reply one two three four five six seven eight nine ten",
            Some(Duration::from_millis(2000)),
        )
        .await;
    let record = h
        .engine
        .runtime()
        .wait(&run_id, Duration::from_secs(30))
        .await
        .unwrap()
        .record;
    assert_eq!(record.status, RunStatus::Timeout);
    let partial = record.result.unwrap();
    assert!(
        partial.starts_with("one two") && !partial.contains("ten"),
        "{partial}"
    );
    let t = h.transcript("main").await;
    let last = t.last().unwrap();
    assert_eq!(last["stopReason"], "aborted");
    assert_eq!(last["content"][0]["text"], partial.as_str());
    assert!(last["errorMessage"].as_str().unwrap().contains("timed out"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_ends_the_running_run_and_a_queued_one_never_starts() {
    let h = Harness::open(Config::default()).await;
    let mut events = h.engine.runtime().subscribe();
    let running = h
        .submit("main", "@delay 20000\n@reply too late", None)
        .await;
    let queued = h.submit("main", "@reply second", None).await;
    started(&mut events, &running).await;
    let key = h.engine.resolver().canonical("main", None).unwrap();
    assert_eq!(
        h.engine.runtime().abort(&key, Some(&queued)).await.unwrap(),
        vec![queued.clone()]
    );
    assert_eq!(
        h.engine.runtime().abort(&key, None).await.unwrap(),
        vec![running.clone()]
    );
    let first = h
        .engine
        .runtime()
        .wait(&running, Duration::from_secs(10))
        .await
        .unwrap()
        .record;
    let second = h
        .engine
        .runtime()
        .wait(&queued, Duration::from_secs(10))
        .await
        .unwrap()
        .record;
    assert_eq!(
        (first.status, second.status),
        (RunStatus::Aborted, RunStatus::Aborted)
    );
    assert!(second.started_at.is_none());
    let entry = h.engine.store().get(&key).await.unwrap().unwrap();
    assert!(entry.aborted_last_run);
    // Both acknowledged messages are in the transcript; neither run produced a reply, and the
    // running one says it was aborted (with nothing streamed).
    let t = h.transcript("main").await;
    assert_eq!(roles(&t), ["user", "assistant", "user"]);
    assert_eq!(t[1]["stopReason"], "aborted");
    assert_eq!(t[1]["errorMessage"], "aborted");
    assert_eq!(t[1]["content"], serde_json::json!([]));
    assert_eq!(t[2]["content"], "@reply second");
}

#[tokio::test]
async fn an_idempotency_key_answers_the_first_run() {
    let h = Harness::open(Config::default()).await;
    let key = keys::SessionKey::from_canonical("agent:main:main".into());
    let request = || {
        let mut r = RunRequest::new(key.clone(), Lane::Main).with_message("@reply once", None);
        r.create = Some(h.engine.resolver().new_session(&key));
        r.idempotency_key = Some("same-key".into());
        r
    };
    let first = h.engine.runtime().submit(request()).await.unwrap();
    let second = h.engine.runtime().submit(request()).await.unwrap();
    assert_eq!(
        (second.run_id.clone(), second.deduplicated),
        (first.run_id.clone(), true)
    );
    h.engine
        .runtime()
        .wait(&first.run_id, Duration::from_secs(10))
        .await
        .unwrap();
    let third = h.engine.runtime().submit(request()).await.unwrap();
    assert_eq!(third.run_id, first.run_id);
    assert_eq!(roles(&h.transcript("main").await), ["user", "assistant"]);
}

/// A new run is not looked up before it is stored: its insert is refused when a stored run has
/// its id or key. A repeat (`chat.send`'s shape: the run id is the key) answers the first run and
/// writes nothing: while the first is live (from memory), and once it ended, both when the
/// repeat would start at once and when it would queue behind a busy session (the insert
/// refused, then the first run read). A run id reused without a key is refused, saying why.
#[tokio::test]
async fn a_repeated_run_id_or_key_writes_nothing_queued_or_started() {
    let h = Harness::open(Config::default()).await;
    let key = keys::SessionKey::from_canonical("agent:main:main".into());
    let request = |id: &str, keyed: bool| {
        let mut r = RunRequest::new(key.clone(), Lane::Main).with_message("@reply again", None);
        r.create = Some(h.engine.resolver().new_session(&key));
        r.run_id = Some(RunId::from_string(id));
        r.idempotency_key = keyed.then(|| id.to_string());
        r
    };
    let mut events = h.engine.runtime().subscribe();
    let slow = h.submit("main", "@delay 300\n@reply slow", None).await;
    started(&mut events, &slow).await;
    let queued = h
        .engine
        .runtime()
        .submit(request("k-1", true))
        .await
        .unwrap();
    let again = h
        .engine
        .runtime()
        .submit(request("k-1", true))
        .await
        .unwrap();
    assert_eq!(
        (again.run_id, again.deduplicated),
        (queued.run_id.clone(), true)
    );
    let runtime = h.engine.runtime();
    runtime
        .wait(&queued.run_id, Duration::from_secs(10))
        .await
        .unwrap();
    let started_again = runtime.submit(request("k-1", true)).await.unwrap();
    assert!(started_again.deduplicated, "{started_again:?}");
    let refused = runtime.submit(request("k-1", false)).await.unwrap_err();
    assert!(
        refused.to_string().contains("is stored already"),
        "{refused}"
    );
    let t = h.transcript("main").await;
    assert_eq!(
        roles(&t),
        ["user", "assistant", "user", "assistant"],
        "{t:?}"
    );
    // Ended, and the session busy again: the repeat goes to the queue's insert, refused there.
    let busy = h.submit("main", "@delay 300\n@reply busy", None).await;
    started(&mut events, &busy).await;
    let queued_again = runtime.submit(request("k-1", true)).await.unwrap();
    assert_eq!(
        (queued_again.run_id, queued_again.deduplicated),
        (queued.run_id.clone(), true)
    );
    runtime.wait(&busy, Duration::from_secs(10)).await.unwrap();
    let t = h.transcript("main").await;
    assert_eq!(roles(&t), ["user", "assistant"].repeat(3), "{t:?}");
}

#[tokio::test]
async fn waiting_on_an_unknown_run_says_so_and_a_short_wait_tells_queued_from_running() {
    let h = Harness::open(Config::default()).await;
    let missing = h
        .engine
        .runtime()
        .wait(&RunId::from_string("nope"), Duration::ZERO)
        .await
        .unwrap_err();
    assert!(missing.to_string().contains("Run not found: nope"));
    let mut events = h.engine.runtime().subscribe();
    let slow = h.submit("main", "@delay 600000\n@reply late", None).await;
    let behind = h.submit("main", "@reply next", None).await;
    started(&mut events, &slow).await;
    // A zero wait looks once: the slow run holds the session, so the next one is still queued.
    let outcome = h
        .engine
        .runtime()
        .wait(&behind, Duration::ZERO)
        .await
        .unwrap();
    assert!(outcome.wait_timed_out);
    assert_eq!(outcome.record.status, RunStatus::Queued);
    let outcome = h
        .engine
        .runtime()
        .wait(&slow, Duration::ZERO)
        .await
        .unwrap();
    assert_eq!(
        (outcome.wait_timed_out, outcome.record.status),
        (true, RunStatus::Running)
    );
    let key = h.engine.resolver().canonical("main", None).unwrap();
    h.engine.runtime().abort(&key, None).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_model_sees_messages_written_between_runs_by_others() {
    let mock = MockLlm::start().await;
    let h = Harness::open(mock_config(&mock, ProviderApi::OpenAiCompletions, false)).await;
    mock.push(MockReply::text("first answer"));
    mock.push(MockReply::text("second answer"));
    h.turn("main", "first question").await;
    // Another writer appends to the transcript between the runs (as chat.inject does).
    let note = json!({"role": "user", "content": "a note injected in between", "timestamp": 1});
    h.engine
        .store()
        .append(&k("agent:main:main"), None, vec![message(note)])
        .await
        .unwrap();
    h.turn("main", "second question").await;
    assert_eq!(
        string_contents(&mock, 1),
        [
            "first question",
            "first answer",
            "a note injected in between",
            "second question"
        ]
    );
    mock.stop().await;
}

/// An announce that lands while a run waits on the model (after the run read its window) is
/// not in that run's request, and must be in every later one.
#[tokio::test]
async fn a_message_written_during_a_run_reaches_the_next_runs_model() {
    let mock = MockLlm::start().await;
    let h = Harness::open(mock_config(&mock, ProviderApi::OpenAiCompletions, false)).await;
    mock.push(MockReply::text("first answer"));
    // The second model call is held at a gate until the note is written.
    let gate = Gate::new();
    mock.push(MockReply::gated(&gate, MockReply::text("second answer")));
    mock.push(MockReply::text("third answer"));
    h.turn("main", "first question").await;
    let run_id = h.submit("main", "second question", None).await;
    tokio::time::timeout(GUARD, mock.wait_requests(2))
        .await
        .expect("the second run called the model");
    let note = json!({"role": "user", "content": "an announce during the run", "timestamp": 1});
    h.engine
        .store()
        .append(&k("agent:main:main"), None, vec![message(note)])
        .await
        .unwrap();
    gate.open();
    h.engine
        .runtime()
        .wait(&run_id, Duration::from_secs(30))
        .await
        .unwrap();
    h.turn("main", "third question").await;
    assert_eq!(
        string_contents(&mock, 2),
        [
            "first question",
            "first answer",
            "second question",
            "an announce during the run",
            "second answer",
            "third question"
        ]
    );
    mock.stop().await;
}

/// Waits until the run reports it started (its `running` record is committed by then).
async fn started(
    events: &mut tokio::sync::broadcast::Receiver<Arc<switchboard_core::runtime::RunEvent>>,
    run_id: &RunId,
) {
    let wait = async {
        loop {
            let event = events.recv().await.unwrap();
            if event.run_id == *run_id && event.data == RunEventData::Started {
                return;
            }
        }
    };
    tokio::time::timeout(GUARD, wait)
        .await
        .expect("the run never started");
}

/// A run whose tool panics ends `error` (its worker records it), the session takes the next run,
/// and nothing waits on the dead run: the engine becomes idle and closes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_tool_ends_its_run_as_an_error_and_the_session_goes_on() {
    let h = Harness::open(Config::default()).await;
    let record = h.turn("main", "@tool panics {}\n@reply never").await;
    assert_eq!(record.status, RunStatus::Error);
    assert!(
        record.error.as_deref().unwrap().contains("internal error"),
        "{:?}",
        record.error
    );
    let next = h.turn("main", "@reply still here").await;
    assert_eq!(next.result.as_deref(), Some("still here"));
    tokio::time::timeout(GUARD, h.engine.runtime().idle())
        .await
        .expect("a panicked run left the runtime busy");
    tokio::time::timeout(GUARD, h.engine.close())
        .await
        .expect("a panicked run held the shutdown");
}

/// A row says what its session's runs are doing (the web page's running/idle): `running` while
/// its run works, `queued` while its run waits for a lane another session holds, nothing once
/// idle.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_row_tells_running_from_queued_from_idle() {
    use switchboard_protocol::runs::RunState;
    let mock = MockLlm::start().await;
    let mut config = mock_config(&mock, ProviderApi::OpenAiCompletions, false);
    config.agents.defaults.max_concurrent = 1;
    let h = Harness::open(config).await;
    let gate = Gate::new();
    mock.push(MockReply::gated(&gate, MockReply::text("first answer")));
    mock.set_fallback(MockReply::text("later answer"));
    let (main, other) = (k("agent:main:main"), k("agent:main:other"));
    h.create("other").await;
    let mut events = h.engine.runtime().subscribe();
    let first = h.submit("main", "hold the lane", None).await;
    started(&mut events, &first).await;
    let second = h.submit("other", "wait for it", None).await;
    let runtime = h.engine.runtime();
    assert_eq!(runtime.run_state(&main), Some(RunState::Running));
    assert_eq!(runtime.run_state(&other), Some(RunState::Queued));
    let entry = h.engine.store().get(&other).await.unwrap().unwrap();
    let row = h.engine.sessions().row(&entry);
    assert_eq!(row.run_state.map(|s| s.as_str()), Some("queued"));
    gate.open();
    for run in [first, second] {
        runtime.wait(&run, Duration::from_secs(30)).await.unwrap();
    }
    tokio::time::timeout(GUARD, runtime.idle()).await.unwrap();
    assert_eq!(runtime.run_state(&main), None);
    assert_eq!(runtime.run_state(&other), None);
    mock.stop().await;
}
