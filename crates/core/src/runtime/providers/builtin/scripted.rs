//! `builtin/scripted`: a deterministic model that follows directives written in the conversation,
//! so tests and demos can make an agent call any tool with any arguments, fail, stall or stream
//! slowly. The grammar is documented, with examples, in docs/scripted-model.md.
//!
//! A call is answered in two stages: [`plan`] reads the request and decides the whole turn (a
//! pure function, so the same request always gets the same answer), then [`complete`] plays it
//! out: sleeps, streams, returns. Bad directives are never a crash: the turn becomes a text reply
//! that says what was wrong and what is accepted.

use std::time::Duration;

use serde_json::{Map, Value};
use switchboard_protocol::message::{ContentBlock, StopReason, TranscriptMessage};

use super::{
    EventSink, ModelRequest, ModelResponse, ProviderError, StreamEvent, blocks_text, last_user,
    stream_text, text_response, usage,
};

/// The grammar in one line, quoted in every error reply.
const GRAMMAR: &str = "@tool NAME {json} | @tools [{\"name\": \"NAME\", \"arguments\": {...}}, ...] \
     | @badtool NAME RAW | @reply TEXT | @error MESSAGE | @delay MS | @slow MS";

/// The sentences by which the agent-to-agent steps offer a skip token, and the token the
/// model then answers (docs/scripted-model.md, "Runtime steps").
const SKIP_OFFERS: [(&str, &str); 2] = [
    ("reply exactly REPLY_SKIP to stop", "REPLY_SKIP"),
    (
        "reply exactly ANNOUNCE_SKIP to stay silent",
        "ANNOUNCE_SKIP",
    ),
];

/// What the model does in one assistant turn.
#[derive(Debug, Clone, PartialEq)]
enum Step {
    /// `@tool` / `@tools`: tool calls (name, JSON-object arguments).
    Calls(Vec<(String, Value)>),
    /// `@badtool`: one tool call whose arguments are raw text, not JSON.
    BadTool { name: String, raw: String },
    /// `@reply`: final text, placeholders not yet substituted.
    Reply(String),
    /// `@error`: the model call fails with a server error.
    Error(String),
}

/// One directive line of a script.
#[derive(Debug, Clone, PartialEq)]
enum Line {
    Step(Step),
    /// `@delay MS`: wait before answering the next step.
    Delay(u64),
    /// `@slow MS`: from here on, wait between streamed words (`0` turns it off).
    Slow(u64),
}

/// A turn, decided before anything is streamed.
#[derive(Debug, Clone, PartialEq)]
struct Plan {
    delay: Duration,
    pace: Option<Duration>,
    action: Action,
}

#[derive(Debug, Clone, PartialEq)]
enum Action {
    Text(String),
    /// Tool-call blocks.
    Calls(Vec<ContentBlock>),
    Fail(String),
}

impl Plan {
    fn now(action: Action) -> Self {
        Self {
            delay: Duration::ZERO,
            pace: None,
            action,
        }
    }
}

pub(super) async fn complete(
    request: &ModelRequest,
    events: EventSink<'_>,
) -> Result<ModelResponse, ProviderError> {
    let plan = plan(request);
    if !plan.delay.is_zero() {
        tokio::time::sleep(plan.delay).await;
    }
    match plan.action {
        Action::Text(text) => {
            stream_text(&text, plan.pace, events).await;
            Ok(text_response(request, text))
        }
        Action::Calls(calls) => {
            for call in &calls {
                if let ContentBlock::ToolCall { id, name, .. } = call {
                    events(StreamEvent::ToolCallStarted {
                        id: id.clone(),
                        name: name.clone(),
                    });
                }
            }
            let usage = usage(request, &calls);
            Ok(ModelResponse {
                content: calls,
                usage,
                stop_reason: StopReason::ToolUse,
            })
        }
        Action::Fail(message) => Err(ProviderError::Server {
            status: 500,
            message,
        }),
    }
}

/// What the conversation tells the model about where it is.
struct Turn {
    /// The last user message's text ("" without one).
    user: String,
    /// Assistant messages after the last user message: the index of the step to answer.
    step: usize,
    /// Whether the latest of those assistant messages called tools.
    after_tool_call: bool,
    /// The text of the most recent toolResult message, anywhere in the conversation.
    result: Option<String>,
}

impl Turn {
    fn read(messages: &[TranscriptMessage]) -> Self {
        let (start, user) = match last_user(messages) {
            Some((i, text)) => (i + 1, text),
            None => (0, String::new()),
        };
        let mut step = 0;
        let mut after_tool_call = false;
        for message in messages.iter().skip(start) {
            if let TranscriptMessage::Assistant(assistant) = message {
                step += 1;
                after_tool_call = assistant
                    .content
                    .iter()
                    .any(|block| matches!(block, ContentBlock::ToolCall { .. }));
            }
        }
        let result = messages.iter().rev().find_map(|message| match message {
            TranscriptMessage::ToolResult(result) => Some(blocks_text(&result.content)),
            _ => None,
        });
        Self {
            user,
            step,
            after_tool_call,
            result,
        }
    }

    /// The user message without its directive lines, trimmed (`{{user}}`).
    fn user_prose(&self) -> String {
        let lines: Vec<&str> = self
            .user
            .lines()
            .filter(|line| !is_directive(line))
            .collect();
        lines.join("\n").trim().to_string()
    }
}

/// The words that make a line a directive. Any other `@word` at the start of a line is text: in a
/// group a message often starts with a mention (`@bot what is new?`), and a script error posted
/// back into the chat would answer it.
const DIRECTIVE_WORDS: [&str; 9] = [
    "@tool", "@tools", "@badtool", "@reply", "@error", "@delay", "@slow", "@when", "@default",
];

fn is_directive(line: &str) -> bool {
    let (word, _) = split_word(line);
    DIRECTIVE_WORDS.contains(&word)
}

/// Decides the turn for `request`.
fn plan(request: &ModelRequest) -> Plan {
    let turn = Turn::read(&request.messages);
    let rules = Rules::parse(&request.system);
    let script = match script_of_user(&turn.user) {
        Err(error) => return Plan::now(Action::Text(explain(&error))),
        Ok(script) => script,
    };
    let (delay, pace) = modifiers(&script, turn.step);
    let next = script
        .iter()
        .filter_map(|line| match line {
            Line::Step(step) => Some(step),
            _ => None,
        })
        .nth(turn.step);
    let action = match next {
        Some(step) => act(step, &turn),
        None if turn.after_tool_call => Action::Text(turn.result.clone().unwrap_or_default()),
        None => match rules.unscripted() {
            Err(error) => return Plan::now(Action::Text(explain(&error))),
            Ok(Some(step)) => act(&step, &turn),
            Ok(None) => Action::Text(default_reply(&turn.user_prose())),
        },
    };
    Plan {
        delay,
        pace,
        action,
    }
}

/// The reply when there is no script and no rule.
fn default_reply(user: &str) -> String {
    format!(
        "I am the scripted model. Write directives such as \"@tool sessions_list {{}}\" or \
         \"@reply hello\" in your message (see docs/scripted-model.md). You said: {user}"
    )
}

/// The reply to a script the model cannot read.
fn explain(error: &str) -> String {
    format!(
        "The scripted model could not follow its script: {error}. Directives, one per line \
         starting with @ in the last user message: {GRAMMAR}. See docs/scripted-model.md."
    )
}

/// The delay before step `step` (the `@delay`s right before it) and the `@slow` pace in force
/// there. Past the last step, the modifiers after the last directive apply.
fn modifiers(script: &[Line], step: usize) -> (Duration, Option<Duration>) {
    let mut seen = 0;
    let mut delay: u64 = 0;
    let mut pace = None;
    for line in script {
        match line {
            Line::Delay(ms) => delay = delay.saturating_add(*ms),
            Line::Slow(ms) => pace = (*ms > 0).then(|| Duration::from_millis(*ms)),
            Line::Step(_) if seen == step => break,
            Line::Step(_) => {
                seen += 1;
                delay = 0;
            }
        }
    }
    (Duration::from_millis(delay), pace)
}

/// Turns a step into this turn's action; tool-call ids are `call_<step>_<i>`.
fn act(step: &Step, turn: &Turn) -> Action {
    let id = |i: usize| format!("call_{}_{i}", turn.step);
    match step {
        Step::Calls(calls) => Action::Calls(
            calls
                .iter()
                .enumerate()
                .map(|(i, (name, arguments))| ContentBlock::ToolCall {
                    id: id(i),
                    name: name.clone(),
                    arguments: arguments.clone(),
                })
                .collect(),
        ),
        Step::BadTool { name, raw } => Action::Calls(vec![ContentBlock::ToolCall {
            id: id(0),
            name: name.clone(),
            arguments: Value::String(raw.clone()),
        }]),
        Step::Reply(text) => Action::Text(substitute(&text.replace("\\n", "\n"), turn)),
        Step::Error(message) => Action::Fail(message.clone()),
    }
}

/// The directive lines of the user message, parsed; an error names the first bad line.
fn script_of_user(text: &str) -> Result<Vec<Line>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| is_directive(line))
        .map(|(i, line)| {
            parse_line(line).map_err(|error| format!("line {} {:?}: {error}", i + 1, line.trim()))
        })
        .collect()
}

/// Splits off the first whitespace-delimited word.
fn split_word(text: &str) -> (&str, &str) {
    let text = text.trim();
    match text.split_once(char::is_whitespace) {
        Some((word, rest)) => (word, rest.trim()),
        None => (text, ""),
    }
}

fn parse_line(line: &str) -> Result<Line, String> {
    let (word, rest) = split_word(line);
    match word {
        "@tool" => {
            let (name, json) = split_word(rest);
            if name.is_empty() {
                return Err("@tool needs a tool name: @tool NAME {json}".into());
            }
            let arguments = if json.is_empty() {
                Value::Object(Map::new())
            } else {
                serde_json::from_str::<Value>(json).map_err(|e| {
                    format!(
                        "the arguments of @tool {name} are not valid JSON ({e}); write a JSON \
                         object such as {{\"limit\": 5}}, or use @badtool to send bad arguments \
                         on purpose"
                    )
                })?
            };
            if !arguments.is_object() {
                return Err(format!(
                    "the arguments of @tool {name} must be a JSON object"
                ));
            }
            Ok(Line::Step(Step::Calls(vec![(name.to_string(), arguments)])))
        }
        "@tools" => parse_tools(rest).map(|calls| Line::Step(Step::Calls(calls))),
        "@badtool" => {
            let (name, raw) = split_word(rest);
            if name.is_empty() {
                return Err("@badtool needs a tool name: @badtool NAME RAW".into());
            }
            Ok(Line::Step(Step::BadTool {
                name: name.to_string(),
                raw: raw.to_string(),
            }))
        }
        "@reply" => Ok(Line::Step(Step::Reply(rest.to_string()))),
        "@error" => {
            let message = if rest.is_empty() {
                "scripted error"
            } else {
                rest
            };
            Ok(Line::Step(Step::Error(message.to_string())))
        }
        "@delay" | "@slow" => {
            let ms = rest.parse::<u64>().map_err(|_| {
                format!("{word} needs a whole number of milliseconds, got {rest:?}")
            })?;
            Ok(if word == "@delay" {
                Line::Delay(ms)
            } else {
                Line::Slow(ms)
            })
        }
        "@when" | "@default" => Err(format!(
            "{word} is a rule for the system prompt, not a message directive"
        )),
        _ => Err(format!("unknown directive {word:?}")),
    }
}

fn parse_tools(json: &str) -> Result<Vec<(String, Value)>, String> {
    let shape =
        "@tools needs a JSON array such as [{\"name\": \"sessions_list\", \"arguments\": {}}]";
    let value: Value =
        serde_json::from_str(json).map_err(|e| format!("{shape}; not valid JSON ({e})"))?;
    let Value::Array(items) = value else {
        return Err(shape.to_string());
    };
    if items.is_empty() {
        return Err(format!("{shape}; the array is empty"));
    }
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let name = item
                .get("name")
                .and_then(Value::as_str)
                .filter(|name| !name.is_empty())
                .ok_or_else(|| format!("@tools: call {i} has no \"name\" string"))?;
            let arguments = match item.get("arguments") {
                None | Some(Value::Null) => Value::Object(Map::new()),
                Some(arguments @ Value::Object(_)) => arguments.clone(),
                Some(_) => {
                    return Err(format!(
                        "@tools: the arguments of call {i} ({name}) must be a JSON object"
                    ));
                }
            };
            Ok((name.to_string(), arguments))
        })
        .collect()
}

/// Parses a rule's directive: it must be one step.
fn parse_step(directive: &str) -> Result<Step, String> {
    match parse_line(directive)? {
        Line::Step(step) => Ok(step),
        Line::Delay(_) | Line::Slow(_) => Err(format!(
            "a rule needs a step directive (@tool, @tools, @badtool, @reply, @error), got {:?}",
            directive.trim()
        )),
    }
}

/// The `@when` / `@default` rules of a system prompt.
struct Rules<'a> {
    /// `(substring, directive)`, top to bottom.
    when: Vec<(String, &'a str)>,
    default: Option<&'a str>,
    /// The first malformed rule line, reported whenever the rules are consulted.
    error: Option<String>,
    /// The system prompt without its rule lines: where `@when` substrings are looked for.
    rest: String,
}

impl<'a> Rules<'a> {
    fn parse(system: &'a str) -> Self {
        let mut rules = Rules {
            when: Vec::new(),
            default: None,
            error: None,
            rest: String::new(),
        };
        let mut rest = Vec::new();
        for line in system.lines() {
            let (word, tail) = split_word(line);
            let parsed = match word {
                "@when" => parse_when(tail).map(|(needle, directive)| {
                    rules.when.push((needle, directive));
                }),
                "@default" if tail.starts_with('@') => {
                    rules.default = rules.default.or(Some(tail));
                    Ok(())
                }
                "@default" => Err("@default needs a directive: @default DIRECTIVE".to_string()),
                _ => {
                    rest.push(line);
                    continue;
                }
            };
            if let Err(error) = parsed {
                let error = format!("system-prompt rule {:?}: {error}", line.trim());
                rules.error = rules.error.or(Some(error));
            }
        }
        rules.rest = rest.join("\n");
        rules
    }

    /// The step of the first `@when` rule whose substring occurs outside the rule lines.
    fn matching(&self) -> Result<Option<Step>, String> {
        if let Some(error) = &self.error {
            return Err(error.clone());
        }
        let Some((needle, directive)) = self
            .when
            .iter()
            .find(|(needle, _)| self.rest.contains(needle.as_str()))
        else {
            return Ok(None);
        };
        parse_step(directive)
            .map(Some)
            .map_err(|error| format!("system-prompt rule @when {needle:?}: {error}"))
    }

    /// The step when the message's script has none for this turn: the first matching `@when`,
    /// else `@default`, else the skip token a runtime step offers (so a scripted agent ends a
    /// reply-back loop and keeps an announce silent unless told otherwise).
    fn unscripted(&self) -> Result<Option<Step>, String> {
        if let Some(step) = self.matching()? {
            return Ok(Some(step));
        }
        if let Some(step) = self.default()? {
            return Ok(Some(step));
        }
        Ok(SKIP_OFFERS
            .iter()
            .find(|(offer, _)| self.rest.contains(offer))
            .map(|(_, token)| Step::Reply(token.to_string())))
    }

    /// The `@default` step, if the system prompt has one.
    fn default(&self) -> Result<Option<Step>, String> {
        if let Some(error) = &self.error {
            return Err(error.clone());
        }
        self.default
            .map(|directive| {
                parse_step(directive)
                    .map_err(|error| format!("system-prompt rule @default: {error}"))
            })
            .transpose()
    }
}

/// `"SUBSTRING" DIRECTIVE` → the substring (a JSON string literal) and the directive.
fn parse_when(tail: &str) -> Result<(String, &str), String> {
    let usage = "write @when \"SUBSTRING\" DIRECTIVE";
    let body = tail
        .strip_prefix('"')
        .ok_or_else(|| format!("{usage} (the substring in quotes)"))?;
    let mut escaped = false;
    for (i, c) in body.char_indices() {
        match c {
            _ if escaped => escaped = false,
            '\\' => escaped = true,
            '"' => {
                let literal = &tail[..i + 2];
                let needle = serde_json::from_str::<String>(literal)
                    .map_err(|e| format!("bad quoted substring {literal} ({e})"))?;
                let directive = body[i + 1..].trim();
                if !directive.starts_with('@') {
                    return Err(format!(
                        "{usage} (a directive starting with @ after the quotes)"
                    ));
                }
                return Ok((needle, directive));
            }
            _ => {}
        }
    }
    Err(format!("{usage} (the closing quote is missing)"))
}

/// Replaces `{{result}}`, `{{result.<path>}}` and `{{user}}`; other `{{…}}` stay as written.
fn substitute(text: &str, turn: &Turn) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        let (before, from) = rest.split_at(open);
        out.push_str(before);
        let Some(close) = from.find("}}") else {
            rest = from;
            break;
        };
        let (placeholder, after) = from.split_at(close + 2);
        match value_of(placeholder[2..close].trim(), turn) {
            Some(value) => out.push_str(&value),
            None => out.push_str(placeholder),
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

fn value_of(name: &str, turn: &Turn) -> Option<String> {
    match name {
        "user" => Some(turn.user_prose()),
        "result" => Some(turn.result.clone().unwrap_or_default()),
        _ => name
            .strip_prefix("result.")
            .map(|path| result_field(turn.result.as_deref(), path)),
    }
}

/// A field of the result parsed as JSON (`sessions.0.key`); strings bare, other values as
/// JSON, anything missing (or a result that is not JSON) empty.
fn result_field(result: Option<&str>, path: &str) -> String {
    let Some(Ok(root)) = result.map(serde_json::from_str::<Value>) else {
        return String::new();
    };
    let mut value = &root;
    for segment in path.split('.') {
        let next = match value {
            Value::Object(map) => map.get(segment),
            Value::Array(items) => segment.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        };
        match next {
            Some(next) => value = next,
            None => return String::new(),
        }
    }
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}
