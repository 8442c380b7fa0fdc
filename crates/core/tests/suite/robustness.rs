//! Arbitrary tool arguments, as a model might send them, against the real session tools: every
//! call gets an answer — a result, or an error that says what was wrong — and nothing panics.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::TestRunner;
use serde_json::Value;
use switchboard_core::config::Config;

use super::support::{GUARD, TestEngine};

/// Each session tool with its own field names, which get arbitrary values (so decoding goes
/// deep); a model's misspelling of one is among them, and must be refused naming it.
const TOOLS: &[(&str, &[&str])] = &[
    (
        "sessions_list",
        &[
            "kinds",
            "limit",
            "activeMinutes",
            "messageLimit",
            "search",
            "cursor",
            "limt",
        ],
    ),
    (
        "sessions_history",
        &[
            "sessionKey",
            "label",
            "agentId",
            "limit",
            "includeTools",
            "before",
            "sesionKey",
        ],
    ),
    (
        "sessions_send",
        &[
            "sessionKey",
            "label",
            "agentId",
            "message",
            "timeoutSeconds",
            "mesage",
        ],
    ),
    (
        "sessions_spawn",
        &[
            "task",
            "label",
            "agentId",
            "model",
            "runTimeoutSeconds",
            "cleanup",
            "tsak",
        ],
    ),
    ("agents_list", &["agentid"]),
];

/// Mostly objects of the tool's fields; sometimes any JSON (refused before the tool runs).
fn args(keys: &'static [&'static str]) -> impl Strategy<Value = Value> {
    let value = switchboard_testkit::fuzz::json(keys, &["main", "*", "agent:main:x"], 3);
    prop_oneof![
        4 => switchboard_testkit::fuzz::object(keys, value.clone()),
        1 => value,
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_arguments_to_any_session_tool_get_an_answer_that_says_what_was_wrong() {
    let mut config = Config::default();
    // A waiting send must not hold the test: sends are answered before their target runs.
    config.session.agent_to_agent.max_ping_pong_turns = 0;
    let w = TestEngine::open(config).await;
    w.create("main").await;
    let mut runner = TestRunner::deterministic();
    let (mut answered, mut refused, mut misspelt) = (0, 0, 0);
    for &(tool, keys) in TOOLS {
        let strategy = args(keys);
        let typo = keys.last().copied().unwrap_or_default();
        for _ in 0..48 {
            let mut arguments = strategy.new_tree(&mut runner).unwrap().current();
            if tool == "sessions_send"
                && let Some(fields) = arguments.as_object_mut()
            {
                fields.insert("timeoutSeconds".into(), Value::from(0));
            }
            let call = w.engine.tools().call(
                "main",
                tool,
                arguments.clone(),
                tokio_util::sync::CancellationToken::new(),
            );
            let answer = tokio::time::timeout(GUARD, call)
                .await
                .unwrap_or_else(|_| panic!("{tool} {arguments} never answered"));
            // Arguments that are not an object are refused before the tool runs.
            let out = match answer {
                Ok(out) => out,
                Err(e) => {
                    let error = e.to_string();
                    assert!(
                        error.contains("JSON object") && error.to_lowercase().contains("schema"),
                        "{error}"
                    );
                    refused += 1;
                    continue;
                }
            };
            let status = out.content["status"].as_str().unwrap_or("ok");
            if out.is_error || status == "error" || status == "forbidden" {
                let error = out.content["error"].as_str().unwrap_or_default();
                assert!(
                    error.len() > 10,
                    "{tool} {arguments}: an error without a reason: {}",
                    out.content
                );
                refused += 1;
                if arguments.get(typo).is_some() && error.contains(&format!("`{typo}`")) {
                    misspelt += 1;
                }
            } else {
                assert!(
                    arguments.get(typo).is_none(),
                    "{tool} {arguments}: the unknown field `{typo}` was taken: {}",
                    out.content
                );
                answered += 1;
            }
        }
    }
    // The inputs reach both the tools' work and their refusals.
    assert!(
        answered > 10 && refused > 20 && misspelt > 10,
        "{answered} answered, {refused} refused ({misspelt} naming a misspelt field)"
    );
    tokio::time::timeout(GUARD, w.engine.runtime().idle())
        .await
        .expect("the runs the calls started never ended");
}
