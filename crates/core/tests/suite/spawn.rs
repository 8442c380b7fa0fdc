//! `sessions_spawn` through the engine: accepted at once, the child's isolation, Status from the
//! runtime outcome, ANNOUNCE_SKIP, cleanup and archiving on a manual clock, refusals that create
//! nothing, and a burst of 1,000 spawns that each announce exactly once.

use std::sync::Arc;
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_core::clock::ManualClock;
use switchboard_core::config::{AgentEntry, Config, ModelRef, ProviderApi, ProviderConfig};
use switchboard_core::store::{ListQuery, SubagentState};
use switchboard_core::{Engine, SessionKey};
use switchboard_testkit::{Gate, MockLlm, MockReply};

use super::support::{TestEngine, invoke, k};

/// The announce-step rule every agent here follows unless a test says otherwise.
const REPORT: &str =
    "@when \"Sub-agent announce step\" @reply Status: success\\nResult: it went fine\\nNotes: none";

struct World {
    engine: Arc<Engine>,
    clock: Arc<ManualClock>,
    _t: TestEngine,
}

async fn world(prompt: &str, configure: impl FnOnce(&mut Config)) -> World {
    let mut config = Config::default();
    config.agents.list = vec![
        AgentEntry {
            id: "main".into(),
            default: true,
            system_prompt: Some(prompt.into()),
            subagents: switchboard_core::config::AgentSubagents {
                allow_agents: vec!["research".into()],
                ..Default::default()
            },
            ..AgentEntry::default()
        },
        AgentEntry {
            id: "research".into(),
            system_prompt: Some(prompt.into()),
            ..AgentEntry::default()
        },
        AgentEntry {
            id: "ops".into(),
            ..AgentEntry::default()
        },
    ];
    configure(&mut config);
    let t = TestEngine::builder()
        .config(config)
        .manual_clock_now()
        .open()
        .await;
    t.create("main").await;
    World {
        engine: t.engine.clone(),
        clock: t.clock.clone().unwrap(),
        _t: t,
    }
}

impl World {
    async fn spawn(&self, args: Value) -> Value {
        invoke(&self.engine, "agent:main:main", "sessions_spawn", args)
            .await
            .content
    }

    /// Waits until the child's record is `done` and its announce left the outbox (a hang guard,
    /// not a timing).
    async fn settled(&self, child: &SessionKey) -> switchboard_core::store::SubagentRecord {
        for _ in 0..1200 {
            let record = self.engine.store().get_subagent(child).await.unwrap();
            if let Some(record) = record.filter(|r| r.state == SubagentState::Done) {
                // The announce is handed to the outbox; wait until the outbox took it too.
                let delivered = match &record.delivery_id {
                    None => true,
                    Some(id) => self
                        .engine
                        .store()
                        .get_delivery(id)
                        .await
                        .unwrap()
                        .is_some_and(|d| {
                            d.status != switchboard_core::store::DeliveryStatus::Pending
                        }),
                };
                if delivered {
                    return record;
                }
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
        panic!("sub-agent {child} never finished its announce");
    }

    /// The announces that reached the main session (user messages with that provenance).
    async fn announces(&self) -> Vec<Value> {
        super::support::transcript(&self.engine, "main")
            .await
            .into_iter()
            .filter(|m| m["provenance"]["kind"] == "subagent-announce")
            .collect()
    }

    async fn session_count(&self) -> u64 {
        self.engine.store().count().await.unwrap()
    }
}

/// Provider `mock` (OpenAI format, no retries) on the mock server.
fn mock_provider(config: &mut Config, mock: &MockLlm) {
    config.models.providers.insert(
        "mock".into(),
        ProviderConfig {
            api: ProviderApi::OpenAiCompletions,
            base_url: Some(mock.openai_base_url()),
            max_retries: Some(0),
            ..ProviderConfig::default()
        },
    );
}

fn child_key(result: &Value) -> SessionKey {
    k(result["childSessionKey"].as_str().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn accepted_comes_back_at_once_and_the_child_is_isolated_from_session_tools() {
    let mock = MockLlm::start().await;
    // Task run: a slow reply; announce step: a report.
    // The task run's model call waits at a gate until the test has looked.
    let gate = Gate::new();
    mock.push(MockReply::gated(
        &gate,
        MockReply::text("found three papers"),
    ));
    mock.push(MockReply::text("Result: three papers\nNotes: none"));
    let w = world(REPORT, |c| {
        mock_provider(c, &mock);
        c.agents.defaults.subagents.model = Some(ModelRef::new("mock/m1"));
    })
    .await;
    let result = w
        .spawn(json!({"task": "find papers", "label": "papers"}))
        .await;
    assert_eq!(result["status"], "accepted", "{result}");
    let child = child_key(&result);
    // Answered while the child still runs.
    let run = w
        .engine
        .runtime()
        .record(&switchboard_core::RunId::from_string(
            result["runId"].as_str().unwrap(),
        ))
        .await
        .unwrap()
        .unwrap();
    assert!(!run.status.is_final(), "{run:?}");
    gate.open();
    let (prefix, uuid) = child.rsplit_once(':').unwrap();
    assert_eq!(prefix, "agent:main:subagent");
    assert!(uuid::Uuid::parse_str(uuid).is_ok(), "{child}");
    let entry = w.engine.store().get(&child).await.unwrap().unwrap();
    assert_eq!(entry.spawned_by.as_deref(), Some("agent:main:main"));
    assert_eq!(entry.label.as_deref(), Some("papers"));
    assert_eq!(entry.model.as_deref(), Some("mock/m1"));

    w.settled(&child).await;
    let announces = w.announces().await;
    assert_eq!(announces.len(), 1);
    let text = announces[0]["content"].as_str().unwrap();
    assert!(
        text.starts_with("Status: success\nResult: three papers\nNotes: none\nStats: runtime "),
        "{text}"
    );
    assert!(text.contains(&format!("sessionKey {child}")), "{text}");
    assert_eq!(announces[0]["provenance"]["fromSessionKey"], child.as_str());
    // The transcript path in the stats exists (a store without mirrors names none).
    if w._t.on_postgres() {
        assert!(!text.contains("transcript /"), "{text}");
    } else {
        let path = text.rsplit("transcript ").next().unwrap();
        assert!(std::path::Path::new(path).exists(), "{path}");
    }

    // The child's model requests offered no session tools, and it was told it is a sub-agent.
    let requests = mock.requests();
    assert_eq!(requests.len(), 2);
    for request in &requests {
        let tools: Vec<&str> = request.body["tools"]
            .as_array()
            .map(|t| {
                t.iter()
                    .filter_map(|t| t["function"]["name"].as_str())
                    .collect()
            })
            .unwrap_or_default();
        assert!(
            tools
                .iter()
                .all(|t| !t.starts_with("sessions_") && *t != "agents_list"),
            "{tools:?}"
        );
    }
    let system = requests[0].messages()[0]["content"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        system.contains(
            "You are a sub-agent spawned by session agent:main:main for one task: find papers"
        ),
        "{system}"
    );
    mock.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_comes_from_the_runtime_whatever_the_model_writes() {
    let w = world(REPORT, |_| {}).await;
    // success
    let ok = child_key(&w.spawn(json!({"task": "@reply all done"})).await);
    // error: the task run fails; the announce step still claims success
    let failed = child_key(&w.spawn(json!({"task": "@error provider exploded"})).await);
    // timeout: runTimeoutSeconds cuts a slow reply; its partial output is kept
    let slow = child_key(
        &w.spawn(json!({"task": "@slow 400\n@reply one two three four five six", "runTimeoutSeconds": 1}))
            .await,
    );
    for child in [&ok, &failed, &slow] {
        w.settled(child).await;
    }
    let announces = w.announces().await;
    assert_eq!(announces.len(), 3);
    let status_of = |child: &str| {
        let text = announces
            .iter()
            .find(|m| m["provenance"]["fromSessionKey"] == child)
            .unwrap()["content"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(
            text.lines().filter(|l| l.starts_with("Status:")).count(),
            1,
            "{text}"
        );
        text
    };
    assert!(status_of(&ok).starts_with("Status: success\nResult: it went fine"));
    assert!(status_of(&failed).starts_with("Status: error\nResult: it went fine"));
    assert!(status_of(&slow).starts_with("Status: timeout\n"));
    let run = w.engine.store().get_subagent(&slow).await.unwrap().unwrap();
    assert_eq!(run.outcome.as_deref(), Some("timeout"));
    // A list of the children says how each task ended (the web page nests them with it).
    let params = switchboard_protocol::sessions::SessionsListParams {
        spawned_by: Some("agent:main:main".into()),
        ..Default::default()
    };
    let rows = w.engine.sessions().list(params).await.unwrap().sessions;
    let mut outcomes: Vec<(String, String, Option<String>)> = rows
        .into_iter()
        .map(|r| {
            let s = r.subagent.expect("a child row says how its task went");
            (r.key, s.state.to_string(), s.outcome)
        })
        .collect();
    outcomes.sort();
    let mut expected: Vec<(String, String, Option<String>)> =
        [(&ok, "ok"), (&failed, "error"), (&slow, "timeout")]
            .into_iter()
            .map(|(key, outcome)| {
                (
                    key.to_string(),
                    "done".to_string(),
                    Some(outcome.to_string()),
                )
            })
            .collect();
    expected.sort();
    assert_eq!(outcomes, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_the_provider_is_down_the_announce_still_goes_out_with_the_failure_in_notes() {
    let mock = MockLlm::start().await;
    mock.set_fallback(MockReply::status(500, "upstream is down"));
    let w = world(REPORT, |c| {
        mock_provider(c, &mock);
    })
    .await;
    let child = child_key(
        &w.spawn(json!({"task": "anything", "model": "mock/m1"}))
            .await,
    );
    w.settled(&child).await;
    let announces = w.announces().await;
    let text = announces[0]["content"].as_str().unwrap();
    assert!(text.starts_with("Status: error\nResult: (not available)\nNotes: the announce step could not run: it ended error"), "{text}");
    mock.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn announce_skip_keeps_silent_and_delete_removes_the_child_after_announcing() {
    let w = world(
        "@when \"Sub-agent announce step\" @reply ANNOUNCE_SKIP",
        |_| {},
    )
    .await;
    let quiet = child_key(&w.spawn(json!({"task": "@reply shh"})).await);
    let record = w.settled(&quiet).await;
    assert_eq!(record.delivery_id, None);
    assert!(w.announces().await.is_empty());
    let deliveries = w
        .engine
        .store()
        .list_deliveries(switchboard_core::store::DeliveryQuery {
            limit: 10,
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(deliveries.is_empty(), "{deliveries:?}");

    let w = world(REPORT, |_| {}).await;
    let gone = child_key(
        &w.spawn(json!({"task": "@reply bye", "cleanup": "delete"}))
            .await,
    );
    w.settled(&gone).await;
    assert_eq!(w.announces().await.len(), 1);
    assert!(
        w.engine.store().get(&gone).await.unwrap().is_none(),
        "the child was not deleted"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keep_archives_the_child_the_configured_minutes_after_it_finished() {
    let w = world(REPORT, |c| {
        c.agents.defaults.subagents.archive_after_minutes = 60
    })
    .await;
    let child = child_key(&w.spawn(json!({"task": "@reply done"})).await);
    let record = w.settled(&child).await;
    assert_eq!(
        record.archive_at,
        Some(record.ended_at.unwrap() + 60 * 60_000)
    );
    let listed = |w: &World| {
        let engine = w.engine.clone();
        let child = child.clone();
        async move {
            let page = engine
                .store()
                .list(ListQuery {
                    limit: 100,
                    ..Default::default()
                })
                .await
                .unwrap();
            page.entries.iter().any(|e| e.key == child)
        }
    };
    w.clock.advance(59 * 60_000);
    assert_eq!(w.engine.subagents().sweep_archives().await.unwrap(), 0);
    assert!(listed(&w).await);
    w.clock.advance(60_000);
    assert_eq!(w.engine.subagents().sweep_archives().await.unwrap(), 1);
    assert!(!listed(&w).await, "an archived child left the list");
    let entry = w.engine.store().get(&child).await.unwrap().unwrap();
    assert!(
        entry.archived_at.is_some(),
        "still readable by key, marked archived"
    );
    assert_eq!(
        w.engine.subagents().sweep_archives().await.unwrap(),
        0,
        "archived once"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_spawns_create_nothing_and_say_why() {
    let w = world(REPORT, |c| {
        c.tools.subagents.tools.allow = vec!["sessions_spawn".into()];
    })
    .await;
    let before = w.session_count().await;
    let ops = w.spawn(json!({"task": "x", "agentId": "ops"})).await;
    assert_eq!(ops["status"], "forbidden");
    assert_eq!(
        ops["error"],
        "agentId \"ops\" is not allowed for sessions_spawn (allowed: main, research)"
    );
    let model = w.spawn(json!({"task": "x", "model": "nope/m"})).await;
    assert_eq!(model["status"], "error");
    let error = model["error"].as_str().unwrap();
    assert!(
        error.contains("model \"nope/m\" cannot be used") && error.contains("builtin/scripted"),
        "{error}"
    );
    let missing = w.spawn(json!({"label": "x"})).await;
    assert_eq!(
        missing["error"],
        "task required: the instruction for the sub-agent"
    );
    // A label in use is refused without naming the session that holds it (the caller may not
    // be allowed to see it).
    w.engine
        .store()
        .patch(
            &switchboard_core::SessionKey::from_canonical("agent:main:main".into()),
            switchboard_core::store::EntryPatch {
                label: switchboard_protocol::sessions::Patch::Set("taken".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let taken = w.spawn(json!({"task": "x", "label": "taken"})).await;
    assert_eq!(
        taken["error"],
        "label \"taken\" is already used by another session of agent main; choose another"
    );
    let cleanup = w.spawn(json!({"task": "x", "cleanup": "shred"})).await;
    assert!(
        cleanup["error"]
            .as_str()
            .unwrap()
            .contains("\"keep\" or \"delete\"")
    );
    assert_eq!(w.session_count().await, before, "nothing was created");

    // Nested: a sub-agent may not spawn, even with the tool allowed to sub-agents.
    let child = child_key(
        &w.spawn(json!({"task": "@reply hi", "agentId": "research"}))
            .await,
    );
    w.settled(&child).await;
    let before = w.session_count().await;
    let nested = invoke(
        &w.engine,
        &child,
        "sessions_spawn",
        json!({"task": "deeper"}),
    )
    .await
    .content;
    assert_eq!(nested["status"], "forbidden");
    assert_eq!(
        nested["error"],
        "sessions_spawn is not allowed from sub-agent sessions"
    );
    assert_eq!(w.session_count().await, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_a_thousand_spawns_announces_each_exactly_once() {
    let w = world(REPORT, |c| c.agents.defaults.subagents.max_concurrent = 16).await;
    let mut children = Vec::new();
    for chunk in 0..20 {
        let calls =
            (0..50).map(|i| w.spawn(json!({"task": format!("@reply child {}", chunk * 50 + i)})));
        for result in futures_util::future::join_all(calls).await {
            assert_eq!(result["status"], "accepted", "{result}");
            children.push(child_key(&result));
        }
    }
    for child in &children {
        w.settled(child).await;
    }
    let announces = w.announces().await;
    assert_eq!(announces.len(), 1000);
    let mut from: Vec<&str> = announces
        .iter()
        .map(|m| m["provenance"]["fromSessionKey"].as_str().unwrap())
        .collect();
    from.sort_unstable();
    from.dedup();
    assert_eq!(from.len(), 1000, "every child announced exactly once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn from_cron_and_hook_sessions_the_announce_lands_in_the_requester_session() {
    let w = world(REPORT, |_| {}).await;
    for requester in ["agent:main:cron:nightly", "agent:main:hook:deploy"] {
        let key = w.engine.resolver().canonical(requester, None).unwrap();
        w.engine
            .store()
            .create(w.engine.resolver().new_session(&key))
            .await
            .unwrap();
        let result = invoke(
            &w.engine,
            requester,
            "sessions_spawn",
            json!({"task": "@reply ok"}),
        )
        .await
        .content;
        let child = child_key(&result);
        let record = w.settled(&child).await;
        assert!(record.delivery_id.is_some());
        let announces: Vec<Value> = super::support::transcript(&w.engine, requester)
            .await
            .into_iter()
            .filter(|m| m["provenance"]["kind"] == "subagent-announce")
            .collect();
        assert_eq!(announces.len(), 1, "{requester}");
        assert!(
            announces[0]["content"]
                .as_str()
                .unwrap()
                .starts_with("Status: success\n")
        );
    }
}
