//! `sessions_send` through real runs on the scripted model: waits, fire-and-forget, timeouts,
//! the reply-back loop, the announce step, and the cycle guard.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use switchboard_core::config::{AgentEntry, Config};
use switchboard_core::store::RunStatus;
use tokio_util::sync::CancellationToken;

use super::support::{GUARD, TestEngine, message};

/// The engine of these tests.
type World = TestEngine;

/// Agent `main` (default) with a system prompt; `pingpong` turns off the loop unless given.
async fn world(main_prompt: &str, configure: impl FnOnce(&mut Config)) -> World {
    let mut config = Config::default();
    config.agents.list = vec![AgentEntry {
        id: "main".into(),
        default: true,
        system_prompt: Some(main_prompt.into()),
        ..AgentEntry::default()
    }];
    config.session.agent_to_agent.max_ping_pong_turns = 0;
    configure(&mut config);
    TestEngine::open(config).await
}

/// What these tests read back.
trait Reads {
    async fn tool_result(&self, session: &str) -> Value;
    async fn settle(&self, session: &str) -> Vec<Value>;
}

impl Reads for World {
    /// The JSON result of the first tool call in `session`'s transcript.
    async fn tool_result(&self, session: &str) -> Value {
        let t = self.transcript(session).await;
        let result = t
            .iter()
            .find(|m| m["role"] == "toolResult")
            .expect("a tool result");
        serde_json::from_str(result["content"][0]["text"].as_str().unwrap()).unwrap()
    }

    /// `session`'s transcript once every run and every follow-up step (reply-back turns,
    /// announces) has ended.
    async fn settle(&self, session: &str) -> Vec<Value> {
        tokio::time::timeout(GUARD, self.engine.runtime().idle())
            .await
            .expect("the engine never became idle");
        self.transcript(session).await
    }
}

fn texts(t: &[Value]) -> Vec<String> {
    t.iter()
        .map(|m| {
            let role = m["role"].as_str().unwrap();
            let text = match &m["content"] {
                Value::String(s) => s.clone(),
                Value::Array(blocks) => blocks
                    .iter()
                    .map(|b| {
                        b["text"]
                            .as_str()
                            .map(str::to_string)
                            .unwrap_or_else(|| format!("<{}>", b["name"].as_str().unwrap_or("?")))
                    })
                    .collect::<Vec<_>>()
                    .join(""),
                _ => String::new(),
            };
            format!("{role}: {text}")
        })
        .collect()
}

fn send(args: Value) -> String {
    format!("@tool sessions_send {args}\n@reply sent: {{{{result}}}}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_send_answers_ok_with_the_targets_reply_and_records_provenance() {
    let w = world("", |_| {}).await;
    w.create("helper").await;
    let record = w
        .turn(
            "main",
            &send(json!({"sessionKey": "helper", "message": "@reply pong from helper"})),
        )
        .await;
    assert_eq!(record.status, RunStatus::Ok, "{:?}", record.error);
    let result = w.tool_result("main").await;
    assert_eq!(
        (result["status"].clone(), result["reply"].clone()),
        (json!("ok"), json!("pong from helper"))
    );
    assert_eq!(result["sessionKey"], "agent:main:helper");
    let helper = w.settle("helper").await;
    // The message arrived as a user message from main, with provenance; then the announce
    // step, which adds no user message (the target saw every reply), stayed silent: the
    // scripted model answers ANNOUNCE_SKIP when a step offers it.
    assert_eq!(helper[0]["provenance"]["kind"], "agent");
    assert_eq!(helper[0]["provenance"]["fromSessionKey"], "agent:main:main");
    assert_eq!(helper[0]["provenance"]["runId"], json!(record.run_id));
    assert_eq!(
        texts(&helper),
        [
            "user: @reply pong from helper",
            "assistant: pong from helper",
            "assistant: ANNOUNCE_SKIP"
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fire_and_forget_answers_accepted_and_the_reply_lands_in_the_target() {
    let w = world("", |_| {}).await;
    w.create("helper").await;
    w.turn("main", &send(json!({"sessionKey": "helper", "message": "@delay 100\n@reply done later", "timeoutSeconds": 0}))).await;
    let result = w.tool_result("main").await;
    assert_eq!(result["status"], "accepted");
    assert!(result["runId"].is_string());
    let helper = w.settle("helper").await;
    assert_eq!(texts(&helper)[1], "assistant: done later");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timeout_says_the_run_goes_on_and_its_reply_appears_later() {
    let w = world("", |_| {}).await;
    w.create("slow").await;
    w.turn("main", &send(json!({"sessionKey": "slow", "message": "@delay 1500\n@reply finally", "timeoutSeconds": 1}))).await;
    let result = w.tool_result("main").await;
    assert_eq!(result["status"], "timeout");
    assert_eq!(result["run"]["state"], "running");
    assert!(
        result["error"].as_str().unwrap().contains("goes on"),
        "{result}"
    );
    let slow = w.settle("slow").await;
    assert_eq!(texts(&slow)[1], "assistant: finally");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_caller_that_stops_waiting_gets_a_timeout_and_the_run_and_its_follow_up_go_on() {
    let w = world("", |_| {}).await;
    w.create("main").await;
    w.create("slow").await;
    // An MCP client cancelled, or the caller's connection closed: stop waiting at once.
    let stop_waiting = CancellationToken::new();
    stop_waiting.cancel();
    let output = w
        .engine
        .tools()
        .call(
            "main",
            "sessions_send",
            json!({"sessionKey": "slow", "message": "@delay 100\n@reply finally", "timeoutSeconds": 600}),
            stop_waiting,
        )
        .await
        .unwrap();
    assert_eq!(output.content["status"], "timeout", "{}", output.content);
    assert!(
        matches!(
            output.content["run"]["state"].as_str(),
            Some("queued" | "running")
        ),
        "{}",
        output.content
    );
    // The run goes on, and so does what follows it (here the announce step).
    let slow = w.settle("slow").await;
    assert_eq!(texts(&slow)[1], "assistant: finally");
    assert_eq!(texts(&slow)[2..], ["assistant: ANNOUNCE_SKIP"]);
}

/// main sends `@reply r1` to `peer` with `M` reply-back turns; both transcripts once settled.
async fn exchange(prompt: &str, turns: u32) -> (Vec<String>, Vec<Value>) {
    let w = world(prompt, |c| {
        c.session.agent_to_agent.max_ping_pong_turns = turns
    })
    .await;
    w.create("peer").await;
    let message = send(json!({"sessionKey": "peer", "message": "@reply r1"}));
    w.turn("main", &message).await;
    let peer = w.settle("peer").await;
    (texts(&w.settle("main").await), peer)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_reply_back_loop_alternates_and_stops_on_reply_skip_or_at_m_turns() {
    // Every reply-back turn answers with its turn number; turn 3 says REPLY_SKIP.
    let prompt = "@when \"Turn 3 of\" @reply REPLY_SKIP\n@when \"Turn 1 of\" @reply t1\n@when \"Turn 2 of\" @reply t2\n@when \"Turn 4 of\" @reply t4\n@when \"announce step\" @reply ANNOUNCE_SKIP";
    let (main, peer) = exchange(prompt, 5).await;
    // main: its own turn (user, call, result, reply), then turn 1 (peer's r1 in, "t1" out), then
    // turn 3 (peer's t2 in, REPLY_SKIP out).
    assert_eq!(
        main[4..],
        [
            "user: r1",
            "assistant: t1",
            "user: t2",
            "assistant: REPLY_SKIP"
        ]
    );
    // peer: the request and r1, turn 2 (t1 in, t2 out), then the announce step, skipped.
    assert_eq!(
        texts(&peer)[1..],
        [
            "assistant: r1",
            "user: t1",
            "assistant: t2",
            "assistant: ANNOUNCE_SKIP"
        ]
    );

    // At M turns the loop stops by itself: with M = 2 no REPLY_SKIP is needed.
    let posted = "@when \"announce step\" @reply Posted: {{user}}";
    let prompt =
        format!("@when \"Turn 1 of 2\" @reply t1\n@when \"Turn 2 of 2\" @reply t2\n{posted}");
    let (main, peer) = exchange(&prompt, 2).await;
    // The target saw every reply: the announce adds no user message. It is given (not skipped)
    // and stays in the target transcript: no channel route.
    assert_eq!(
        texts(&peer)[2..],
        ["user: t1", "assistant: t2", "assistant: Posted: t1"]
    );
    assert_eq!(main.len(), 6);

    // With M = 1 the requester spoke last: its reply is the announce's user message.
    let (_, peer) = exchange(&format!("@when \"Turn 1 of 1\" @reply t1\n{posted}"), 1).await;
    assert_eq!(
        texts(&peer)[1..],
        ["assistant: r1", "user: t1", "assistant: Posted: t1"]
    );
    assert_eq!(peer[2]["provenance"]["fromSessionKey"], "agent:main:main");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_waiting_chain_back_to_its_start_is_refused_at_once() {
    // main → b → c → main, every send waiting: the last one would deadlock.
    let to_main = json!({"sessionKey": "agent:main:main", "message": "@reply never"});
    let to_c = json!({"sessionKey": "c", "message": send(to_main)});
    let to_b = json!({"sessionKey": "b", "message": send(to_c)});
    let w = world("", |_| {}).await;
    w.create("b").await;
    w.create("c").await;
    let record = w.turn("main", &send(to_b)).await;
    assert_eq!(record.status, RunStatus::Ok);
    let c = w.tool_result("c").await;
    assert_eq!(c["status"], "error");
    let error = c["error"].as_str().unwrap();
    assert!(
        error.contains("agent:main:main → agent:main:b → agent:main:c → agent:main:main"),
        "{error}"
    );
    // The refusal travelled back as ordinary replies.
    assert_eq!(w.tool_result("main").await["status"], "ok");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fire_and_forget_loop_is_stopped_by_max_hops() {
    // Whatever a session receives from another agent, it forwards to the other session.
    // (The announce rule comes first: the announce block names the session too.)
    let prompt = "@when \"announce step\" @reply ANNOUNCE_SKIP\n@when \"You are session agent:main:a \" @tool sessions_send {\"sessionKey\": \"agent:main:b\", \"message\": \"go\", \"timeoutSeconds\": 0}\n@when \"You are session agent:main:b \" @tool sessions_send {\"sessionKey\": \"agent:main:a\", \"message\": \"go\", \"timeoutSeconds\": 0}";
    let w = world(prompt, |c| c.session.agent_to_agent.max_hops = 4).await;
    w.create("a").await;
    w.create("b").await;
    w.turn(
        "main",
        &send(json!({"sessionKey": "a", "message": "go", "timeoutSeconds": 0})),
    )
    .await;
    // main→a (hop 1), a→b (2), b→a (3), a→b (4), then b's send would be hop 5: refused.
    // Every hop is fire-and-forget: once the engine is idle, the chain has run its course.
    let b = w.settle("b").await;
    let refusal = b
        .iter()
        .find(|m| {
            m["role"] == "toolResult"
                && m["content"][0]["text"]
                    .as_str()
                    .unwrap_or("")
                    .contains("maxHops")
        })
        .cloned();
    let text = refusal.expect("b's last send is refused")["content"][0]["text"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(text.contains("session.agentToAgent.maxHops (4)"), "{text}");
    // And nothing keeps going: a got exactly one forwarded message from b (hop 3).
    let forwarded = w
        .settle("a")
        .await
        .iter()
        .filter(|m| m["provenance"]["fromSessionKey"] == "agent:main:b" && m["content"] == "go")
        .count();
    assert_eq!(forwarded, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mutual_waiting_sends_with_lanes_at_one_finish_or_time_out_cleanly() {
    let w = world("", |c| {
        c.agents.defaults.max_concurrent = 1;
        c.agents.defaults.subagents.max_concurrent = 1;
    })
    .await;
    w.create("a").await;
    w.create("b").await;
    let to = |target: &str| {
        send(json!({"sessionKey": target, "message": "@reply hello", "timeoutSeconds": 2}))
    };
    let (to_b, to_a) = (to("b"), to("a"));
    let (first, second) = tokio::join!(w.turn("a", &to_b), w.turn("b", &to_a));
    assert_eq!(
        (first.status, second.status),
        (RunStatus::Ok, RunStatus::Ok)
    );
    let statuses = [
        w.tool_result("a").await["status"].clone(),
        w.tool_result("b").await["status"].clone(),
    ];
    for status in &statuses {
        assert!(status == "ok" || status == "timeout", "{statuses:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mistakes_in_the_call_get_errors_that_say_how_to_fix_it() {
    let w = world("", |_| {}).await;
    w.create("helper").await;
    let entry = w
        .engine
        .store()
        .get(&w.key("helper"))
        .await
        .unwrap()
        .unwrap();
    let cases = [
        (json!({"sessionKey": "helper"}), "message required"),
        (json!({"message": "hi"}), "sessionKey required"),
        (
            json!({"sessionKey": "nobody", "message": "hi"}),
            "No session found: agent:main:nobody (use sessions_list to find sessions)",
        ),
        (
            json!({"sessionKey": "5b0e7a52-8c1e-4c8f-9d35-0f4c1a6e2b99", "message": "hi"}),
            "Session not found: 5b0e7a52-8c1e-4c8f-9d35-0f4c1a6e2b99 (use the full sessionKey from sessions_list)",
        ),
        (
            json!({"sessionKey": "helper", "label": "x", "message": "hi"}),
            "not both",
        ),
    ];
    for (i, (args, expected)) in cases.iter().enumerate() {
        let session = format!("caller-{i}");
        w.turn(&session, &send(args.clone())).await;
        let result = w.tool_result(&session).await;
        assert_eq!(result["status"], "error", "{args}");
        assert!(
            result["error"].as_str().unwrap().contains(expected),
            "{args}: {result}"
        );
    }
    // A sessionId, "10" for 10 and a display key all work as meant.
    w.turn("caller-ok", &send(json!({"sessionKey": entry.session_id, "message": "@reply by id", "timeoutSeconds": "10"}))).await;
    assert_eq!(w.tool_result("caller-ok").await["reply"], "by id");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn policy_sandbox_and_cross_agent_rules_refuse_with_the_setting_named() {
    use switchboard_core::config::{SandboxMode, SendAction, SendPolicyMatch, SendPolicyRule};

    // Send policy: a deny rule on a key prefix.
    let w = world("", |c| {
        c.session.send_policy.rules = vec![SendPolicyRule {
            r#match: SendPolicyMatch {
                key_prefix: Some("agent:main:locked".into()),
                ..SendPolicyMatch::default()
            },
            action: SendAction::Deny,
        }];
    })
    .await;
    w.create("locked").await;
    w.turn(
        "main",
        &send(json!({"sessionKey": "locked", "message": "hi"})),
    )
    .await;
    let result = w.tool_result("main").await;
    assert_eq!(result["status"], "forbidden");
    assert!(
        result["error"]
            .as_str()
            .unwrap()
            .starts_with("send blocked by session policy"),
        "{result}"
    );
    assert_eq!(
        w.transcript("locked").await.len(),
        0,
        "nothing entered the denied session"
    );

    // Sandbox: every session sandboxed, seeing only what it spawned. Neither the key nor the
    // sessionId reaches a session it did not spawn.
    let w = world("", |c| c.agents.defaults.sandbox.mode = SandboxMode::All).await;
    w.create("other").await;
    let id = w
        .engine
        .store()
        .get(&w.key("other"))
        .await
        .unwrap()
        .unwrap()
        .session_id;
    for (i, reference) in ["agent:main:other".to_string(), id].into_iter().enumerate() {
        let caller = format!("caller-{i}");
        w.turn(
            &caller,
            &send(json!({"sessionKey": reference, "message": "hi"})),
        )
        .await;
        let result = w.tool_result(&caller).await;
        assert_eq!(result["status"], "forbidden");
        // The denial names only what the caller gave: a sessionId never reveals the key.
        assert_eq!(
            result["error"],
            format!("Session not visible from this sandboxed agent session: {reference}")
        );
    }

    // Cross-agent: refused while tools.agentToAgent is off, allowed when on.
    for enabled in [false, true] {
        let w = world("", |c| c.tools.agent_to_agent.enabled = enabled).await;
        w.create("agent:ops:main").await;
        w.turn(
            "main",
            &send(json!({"sessionKey": "agent:ops:main", "message": "@reply from ops"})),
        )
        .await;
        let result = w.tool_result("main").await;
        if enabled {
            assert_eq!(
                (result["status"].clone(), result["reply"].clone()),
                (json!("ok"), json!("from ops"))
            );
        } else {
            assert_eq!(result["status"], "forbidden");
            assert!(
                result["error"]
                    .as_str()
                    .unwrap()
                    .contains("tools.agentToAgent.enabled is false"),
                "{result}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_behind_a_mock_openai_server_calls_each_session_tool() {
    use switchboard_core::config::{ModelRef, ProviderApi, ProviderConfig};
    use switchboard_testkit::{MockLlm, MockReply, MockToolCall};

    let mock = MockLlm::start().await;
    // The target session answers on the scripted model (a session model override), so only the
    // main agent's run talks to the mock and the queued replies stay in order.
    let prompt = "@when \"announce step\" @reply ANNOUNCE_SKIP\n@default @reply all green";
    let w = world(prompt, |c| {
        c.models.providers.insert(
            "mock".into(),
            ProviderConfig {
                api: ProviderApi::OpenAiCompletions,
                base_url: Some(mock.openai_base_url()),
                stream: Some(true),
                max_retries: Some(0),
                timeout_seconds: Some(10),
                ..ProviderConfig::default()
            },
        );
        c.agents.defaults.model = ModelRef::new("mock/m1");
    })
    .await;
    let seed = json!({"role": "user", "content": "deploy at noon", "timestamp": 1});
    let key = w
        .engine
        .resolver()
        .canonical("discord:group:dev", None)
        .unwrap();
    w.engine
        .store()
        .append(
            &key,
            Some(w.engine.resolver().new_session(&key)),
            vec![message(seed)],
        )
        .await
        .unwrap();

    let scripted = switchboard_core::store::EntryPatch {
        model: switchboard_protocol::sessions::Patch::Set("builtin/scripted".into()),
        ..Default::default()
    };
    w.engine.store().patch(&key, scripted).await.unwrap();

    let call = |id: &str, name: &str, args: Value| {
        MockReply::ToolCalls(vec![MockToolCall::new(id, name, args.to_string())])
    };
    mock.push(call("c1", "sessions_list", json!({"kinds": ["group"]})));
    mock.push(call(
        "c2",
        "sessions_history",
        json!({"sessionKey": "agent:main:discord:group:dev"}),
    ));
    mock.push(call("c3", "sessions_send", json!({"sessionKey": "agent:main:discord:group:dev", "message": "status?", "timeoutSeconds": 10})));
    mock.push(call("c4", "agents_list", json!({})));
    mock.push(MockReply::text("summary done"));

    let record = w.turn("main", "check on the dev group").await;
    assert_eq!(
        (record.status, record.result.as_deref()),
        (RunStatus::Ok, Some("summary done")),
        "{:?}",
        record.error
    );
    let t = w.transcript("main").await;
    let results: Vec<Value> = t
        .iter()
        .filter(|m| m["role"] == "toolResult")
        .map(|m| serde_json::from_str(m["content"][0]["text"].as_str().unwrap()).unwrap())
        .collect();
    assert_eq!(results.len(), 4);
    assert_eq!(
        results[0]["sessions"][0]["key"],
        "agent:main:discord:group:dev"
    );
    assert_eq!(results[1]["messages"][0]["content"], "deploy at noon");
    assert_eq!(
        (results[2]["status"].clone(), results[2]["reply"].clone()),
        (json!("ok"), json!("all green"))
    );
    assert_eq!(results[3]["agents"][0]["id"], "main");

    // Each result drove the model's next step: the request after each call carries its result.
    let requests = mock.requests();
    let main_requests: Vec<_> = requests
        .iter()
        .filter(|r| r.body.to_string().contains("check on the dev group"))
        .collect();
    for (i, id) in ["c1", "c2", "c3", "c4"].iter().enumerate() {
        let carried = main_requests[i + 1]
            .messages()
            .iter()
            .any(|m| m["role"] == "tool" && m["tool_call_id"] == *id);
        assert!(carried, "request {} carries the result of {id}", i + 1);
    }
    mock.assert_tool_results_answer_tool_calls();
    mock.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_the_default_scripted_model_the_loop_and_the_announce_skip_by_themselves() {
    // The README tour: a send with the default settings (five reply-back turns offered).
    let w = world("", |c| c.session.agent_to_agent.max_ping_pong_turns = 5).await;
    w.create("dev").await;
    w.turn(
        "main",
        &send(json!({"sessionKey": "dev", "message": "@reply hi from dev"})),
    )
    .await;
    let dev = w.settle("dev").await;
    assert_eq!(
        texts(&dev),
        [
            "user: @reply hi from dev",
            "assistant: hi from dev",
            "assistant: ANNOUNCE_SKIP"
        ]
    );
    let main = w.settle("main").await;
    assert_eq!(
        texts(&main)[4..],
        ["user: hi from dev", "assistant: REPLY_SKIP"]
    );
}

/// The user-role messages of a transcript, as text.
fn user_texts(t: &[Value]) -> Vec<String> {
    texts(t)
        .into_iter()
        .filter_map(|m| m.strip_prefix("user: ").map(str::to_string))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_step_instruction_is_in_the_system_block_and_user_messages_carry_the_other_sides_text()
 {
    use switchboard_core::config::ProviderApi;
    use switchboard_testkit::{MockLlm, MockReply, MockToolCall};
    let mock = MockLlm::start().await;
    let mut config = super::runtime::mock_config(&mock, ProviderApi::AnthropicMessages, false);
    config.session.agent_to_agent.max_ping_pong_turns = 1;
    let w = TestEngine::open(config).await;
    w.create("discord:group:dev").await;
    let args = json!({"sessionKey": "discord:group:dev", "message": "status?"});
    // main calls the tool; dev answers; main ends its turn; main's reply-back turn (1 of 1);
    // the announce in dev. Each session runs one run at a time, so the order is fixed.
    for reply in [
        MockReply::ToolCalls(vec![MockToolCall::new(
            "c1",
            "sessions_send",
            args.to_string(),
        )]),
        MockReply::text("all green"),
        MockReply::text("thanks"),
        MockReply::text("one more thing"),
        MockReply::text("Announcement: dev is green"),
    ] {
        mock.push(reply);
    }
    w.turn("main", "ask dev").await;
    let dev = w.settle("discord:group:dev").await;
    let main = w.settle("main").await;
    let requests = mock.requests();
    assert_eq!(requests.len(), 5);
    let system = |n: usize| {
        requests[n].body["system"]
            .as_str()
            .unwrap_or("")
            .to_string()
    };
    let last_user = |n: usize| {
        let m = requests[n].messages().last().unwrap().clone();
        assert_eq!(m["role"], "user");
        m["content"][0]["text"].as_str().unwrap().to_string()
    };
    // The reply-back turn, in main: dev's reply as the user message, the rest in the block.
    assert_eq!(last_user(3), "all green");
    for needle in [
        "Turn 1 of 1: it is your turn",
        "You are session agent:main:main (channel",
        "the other side is session agent:main:discord:group:dev (channel discord)",
        "reply exactly REPLY_SKIP to stop",
    ] {
        assert!(system(3).contains(needle), "{needle:?} in {}", system(3));
    }
    // The announce, in dev: main spoke last (the loop's limit), so its reply is the message.
    assert_eq!(last_user(4), "one more thing");
    for needle in [
        "Agent-to-agent announce step. You are session agent:main:discord:group:dev (channel discord)",
        "Session agent:main:main (channel",
        "asked you:\nstatus?\nYour first reply:\nall green\nThe latest reply of the exchange:\none more thing",
        "posted to your channel discord",
        "reply exactly ANNOUNCE_SKIP to stay silent",
    ] {
        assert!(system(4).contains(needle), "{needle:?} in {}", system(4));
    }
    // No transcript reads like machinery: the user messages are the other side's words.
    assert_eq!(user_texts(&dev), ["status?", "one more thing"]);
    assert_eq!(user_texts(&main), ["ask dev", "all green"]);
    assert_eq!(
        texts(&dev).last().unwrap(),
        "assistant: Announcement: dev is green"
    );
    mock.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_announce_after_the_targets_own_reply_adds_no_user_message_and_the_model_is_asked_anyway()
 {
    use switchboard_core::config::ProviderApi;
    use switchboard_testkit::{MockLlm, MockReply};
    let mock = MockLlm::start().await;
    let config = super::runtime::mock_config(&mock, ProviderApi::AnthropicMessages, false);
    let w = TestEngine::open(config).await;
    w.create("main").await;
    w.create("dev").await;
    mock.push(MockReply::text("all green"));
    mock.push(MockReply::text("REPLY_SKIP"));
    mock.push(MockReply::text("ANNOUNCE_SKIP"));
    let send = json!({"sessionKey": "dev", "message": "status?", "timeoutSeconds": 0});
    let out = w.invoke("main", "sessions_send", send).await;
    assert_eq!(out.content["status"], "accepted", "{}", out.content);
    let dev = w.settle("dev").await;
    assert_eq!(
        texts(&dev),
        [
            "user: status?",
            "assistant: all green",
            "assistant: ANNOUNCE_SKIP"
        ]
    );
    // The Anthropic request for the announce ends with a user turn asking for a reply (the API
    // would take a trailing assistant turn as a prefill); the transcript does not carry it.
    let announce = mock.requests()[2].clone();
    let messages = announce.messages();
    assert_eq!(messages[messages.len() - 2]["role"], "assistant");
    assert_eq!(messages[messages.len() - 1]["role"], "user");
    assert!(
        announce.body["system"]
            .as_str()
            .unwrap()
            .contains("announce step")
    );
    mock.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_sessions_send_failure_reaches_the_model_as_an_object_with_status_and_error() {
    use switchboard_core::config::ProviderApi;
    use switchboard_testkit::{MockLlm, MockReply, MockToolCall};
    let mock = MockLlm::start().await;
    let config = super::runtime::mock_config(&mock, ProviderApi::OpenAiCompletions, true);
    let w = TestEngine::open(config).await;
    let calls = [
        ("c1", "sessions_send", "{\"sessionKey\": \"x\",,"),
        ("c2", "sessions_send", "{}"),
        (
            "c3",
            "sessions_send",
            "{\"sessionKey\": \"nope\", \"message\": \"hi\"}",
        ),
        ("c4", "sessions_sendd", "{}"),
    ];
    mock.push(MockReply::ToolCalls(
        calls
            .iter()
            .map(|(id, name, args)| MockToolCall::new(*id, *name, *args))
            .collect(),
    ));
    mock.push(MockReply::text("done"));
    w.turn("main", "go").await;
    let t = w.transcript("main").await;
    let results: Vec<&Value> = t.iter().filter(|m| m["role"] == "toolResult").collect();
    assert_eq!(results.len(), calls.len());
    for (result, needle) in results.iter().zip([
        "not valid JSON",
        "message required",
        "nope",
        "Unknown tool \"sessions_sendd\"",
    ]) {
        let raw = result["content"][0]["text"].as_str().unwrap();
        let answer: Value = serde_json::from_str(raw).unwrap_or_else(|_| panic!("not JSON: {raw}"));
        assert_eq!(result["isError"], true, "{raw}");
        assert_eq!(answer["status"], "error", "{raw}");
        assert!(
            answer["error"].as_str().unwrap().contains(needle),
            "{needle:?} in {raw}"
        );
    }
    mock.stop().await;
}
