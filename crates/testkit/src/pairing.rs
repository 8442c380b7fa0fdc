//! The check behind [`MockLlm::assert_tool_results_answer_tool_calls`](crate::MockLlm): in a
//! request's conversation, every tool result answers a tool call of the assistant turn right
//! before it, and every tool call of an assistant turn that is followed by more messages got
//! exactly one result.

use serde_json::Value;

use crate::{MockApi, Recorded};

/// A conversation reduced to what the check needs; `at` is the message's index in the request.
#[derive(Debug)]
enum Step {
    /// An assistant turn and the ids of its tool calls.
    Assistant { at: usize, calls: Vec<String> },
    /// Tool results (consecutive ones together) and the ids they answer.
    Results { at: usize, ids: Vec<String> },
    /// Anything else (system, user text).
    Other,
}

fn ids<'v>(items: impl Iterator<Item = &'v Value>, key: &str) -> Vec<String> {
    items
        .map(|v| {
            v.get(key)
                .and_then(Value::as_str)
                .unwrap_or("<missing id>")
                .to_string()
        })
        .collect()
}

fn steps(recorded: &Recorded) -> Vec<Step> {
    let mut steps = Vec::new();
    for (at, message) in recorded.messages().iter().enumerate() {
        let role = message
            .get("role")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let blocks: Vec<&Value> = message
            .get("content")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .collect();
        let of_type = |t: &'static str| {
            blocks
                .iter()
                .copied()
                .filter(move |b| b.get("type").and_then(Value::as_str) == Some(t))
        };
        let (step, other_content) = match (recorded.api, role) {
            (MockApi::OpenAi, "assistant") => {
                let calls = message
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten();
                (
                    Step::Assistant {
                        at,
                        calls: ids(calls, "id"),
                    },
                    false,
                )
            }
            (MockApi::OpenAi, "tool") => (
                Step::Results {
                    at,
                    ids: vec![ids(std::iter::once(message), "tool_call_id").concat()],
                },
                false,
            ),
            (MockApi::Anthropic, "assistant") => (
                Step::Assistant {
                    at,
                    calls: ids(of_type("tool_use"), "id"),
                },
                false,
            ),
            (MockApi::Anthropic, "user") if of_type("tool_result").next().is_some() => {
                let others = of_type("tool_result").count() < blocks.len();
                (
                    Step::Results {
                        at,
                        ids: ids(of_type("tool_result"), "tool_use_id"),
                    },
                    others,
                )
            }
            _ => (Step::Other, false),
        };
        match (steps.last_mut(), step) {
            (Some(Step::Results { ids: previous, .. }), Step::Results { ids, .. }) => {
                previous.extend(ids)
            }
            (_, step) => steps.push(step),
        }
        if other_content {
            steps.push(Step::Other);
        }
    }
    steps
}

/// The first pairing problem of one request, if any.
pub(crate) fn check(recorded: &Recorded) -> Result<(), String> {
    let steps = steps(recorded);
    for (i, step) in steps.iter().enumerate() {
        match step {
            Step::Results { at, ids } => {
                let Some(Step::Assistant { at: call_at, calls }) =
                    i.checked_sub(1).and_then(|p| steps.get(p))
                else {
                    return Err(format!(
                        "message #{at}: tool result(s) {ids:?} do not follow an assistant turn (they answer no tool call)"
                    ));
                };
                for id in ids {
                    if !calls.contains(id) {
                        return Err(format!(
                            "message #{at}: tool result {id:?} answers no tool call of the preceding assistant turn \
                             (message #{call_at}, calls {calls:?})"
                        ));
                    }
                    if ids.iter().filter(|other| *other == id).count() > 1 {
                        return Err(format!(
                            "message #{at}: tool call {id:?} (message #{call_at}) is answered more than once"
                        ));
                    }
                }
                if let Some(missing) = calls.iter().find(|c| !ids.contains(c)) {
                    return Err(unanswered(*call_at, missing));
                }
            }
            // An assistant turn followed by anything but its results.
            Step::Assistant { at, calls }
                if i + 1 < steps.len()
                    && !matches!(steps.get(i + 1), Some(Step::Results { .. })) =>
            {
                if let Some(missing) = calls.first() {
                    return Err(unanswered(*at, missing));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

fn unanswered(at: usize, call: &str) -> String {
    format!("message #{at}: tool call {call:?} got no tool result before the conversation went on")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn openai(messages: Value) -> Recorded {
        Recorded {
            api: MockApi::OpenAi,
            stream: false,
            headers: Vec::new(),
            body: json!({"messages": messages}),
            peer: None,
        }
    }

    fn anthropic(messages: Value) -> Recorded {
        Recorded {
            api: MockApi::Anthropic,
            stream: false,
            headers: Vec::new(),
            body: json!({"messages": messages}),
            peer: None,
        }
    }

    fn call(id: &str) -> Value {
        json!({"id": id, "type": "function", "function": {"name": "t", "arguments": "{}"}})
    }

    #[test]
    fn openai_sequences() {
        let good = openai(json!([
            {"role": "system", "content": "s"},
            {"role": "user", "content": "u"},
            {"role": "assistant", "content": null, "tool_calls": [call("a"), call("b")]},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "tool", "tool_call_id": "b", "content": "2"},
            {"role": "assistant", "content": "done", "tool_calls": [call("c")]},
        ]));
        assert_eq!(check(&good), Ok(()));

        let stranger = openai(json!([
            {"role": "assistant", "content": null, "tool_calls": [call("a")]},
            {"role": "tool", "tool_call_id": "z", "content": "1"},
        ]));
        assert!(
            check(&stranger)
                .unwrap_err()
                .contains("\"z\" answers no tool call")
        );

        let missing = openai(json!([
            {"role": "assistant", "content": null, "tool_calls": [call("a"), call("b")]},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "user", "content": "next"},
        ]));
        assert!(
            check(&missing)
                .unwrap_err()
                .contains("\"b\" got no tool result")
        );

        let twice = openai(json!([
            {"role": "assistant", "content": null, "tool_calls": [call("a")]},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
        ]));
        assert!(check(&twice).unwrap_err().contains("more than once"));

        let orphan = openai(json!([
            {"role": "user", "content": "u"},
            {"role": "tool", "tool_call_id": "a", "content": "1"},
        ]));
        assert!(
            check(&orphan)
                .unwrap_err()
                .contains("do not follow an assistant turn")
        );
    }

    #[test]
    fn anthropic_sequences() {
        let use_ = |id: &str| json!({"type": "tool_use", "id": id, "name": "t", "input": {}});
        let result = |id: &str| json!({"type": "tool_result", "tool_use_id": id, "content": "ok"});
        let good = anthropic(json!([
            {"role": "user", "content": [{"type": "text", "text": "u"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "t"}, use_("a"), use_("b")]},
            {"role": "user", "content": [result("a"), result("b"), {"type": "text", "text": "more"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "done"}]},
        ]));
        assert_eq!(check(&good), Ok(()));

        let late = anthropic(json!([
            {"role": "assistant", "content": [use_("a")]},
            {"role": "user", "content": [{"type": "text", "text": "hm"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "x"}]},
            {"role": "user", "content": [result("a")]},
        ]));
        let problem = check(&late).unwrap_err();
        assert!(problem.contains("\"a\" got no tool result"), "{problem}");
    }
}
