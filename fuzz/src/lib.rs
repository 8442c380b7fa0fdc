//! What the fuzz targets share: the properties every door promises, checked the same way.
//! A broken property panics, which libFuzzer reports as a crash with the input that broke it.
//!
//! - A decoder's error says what was wrong: it is not empty, and it names the field, the
//!   position or the shape that is expected ([`says`]).
//! - A value that decodes encodes to something that decodes equal ([`round_trip`]).

use std::fmt::Debug;

use std::sync::OnceLock;

use serde::Serialize;
use serde_json::Value;
use switchboard_core::runtime::providers::fuzzing::{PROVIDER, Streams};
use switchboard_core::runtime::providers::{ModelResponse, ProviderError};

/// Asserts that `message` is not blank and contains at least one of `any_of` (the field, the
/// position or the accepted shape the decoder promises to name).
#[track_caller]
pub fn says(message: &str, any_of: &[&str]) {
    assert!(!message.trim().is_empty(), "an empty error message");
    assert!(
        any_of.iter().any(|needle| message.contains(needle)),
        "the error names none of {any_of:?}: {message}"
    );
}

/// The misuse rule's promises for a refusal of `input` (SPEC §12): no Rust type name in the
/// message, and an unknown field it names is one the input holds.
pub fn refusal_of(message: &str, input: &Value) {
    let mut keys = Vec::new();
    keys_of(input, &mut keys);
    // What the caller wrote may be quoted back, and may hold any word.
    let mut texts = Vec::new();
    texts_of(input, &mut texts);
    // The longest first: a key or a text inside a longer text (`from` in `gfromect`) taken out
    // first would leave the longer one no longer whole in the message.
    let without = |message: &str, quoted: &[&str]| {
        let mut quoted = quoted.to_vec();
        quoted.sort_by_key(|t| std::cmp::Reverse(t.len()));
        let mut own = message.to_string();
        for text in quoted.iter().filter(|t| !t.is_empty()) {
            let json = serde_json::to_string(text).unwrap_or_default();
            own = own
                .replace(&json, "")
                .replace(&format!("{text:?}"), "")
                .replace(text, "");
        }
        own
    };
    let ours = without(message, &texts);
    let mut quoted = keys.clone();
    quoted.extend(&texts);
    let own = without(message, &quoted);
    for rust in ["struct ", "enum ", "Params", "usize", "Option<", "Vec<"] {
        assert!(!own.contains(rust), "a Rust word {rust:?} in: {message}");
    }
    if ours.contains("unknown field `") || ours.contains("unknown field \"") {
        let named = |k: &&str| {
            let quoted = switchboard_protocol::checked::quoted(k);
            message.contains(&format!("unknown field {quoted}"))
        };
        assert!(
            keys.iter().any(named),
            "the unknown field named is none of the input's keys {keys:?}: {message}"
        );
    }
}

/// The strings written in `data`, a body that may not be JSON, as a JSON array: a decoder that
/// stops partway (a key written twice, then bytes that are not JSON) may quote what it read
/// before, and [`refusal_of`] must know those words as the caller's.
pub fn quoted_in(data: &[u8]) -> Value {
    let text = String::from_utf8_lossy(data);
    let mut strings = Vec::new();
    let mut rest = text.as_ref();
    while let Some(open) = rest.find('"') {
        let after = &rest[open + 1..];
        let mut escaped = false;
        let Some(close) = after.char_indices().find_map(|(i, c)| {
            let closes = c == '"' && !escaped;
            escaped = c == '\\' && !escaped;
            closes.then_some(i)
        }) else {
            break;
        };
        let literal = &rest[open..open + close + 2];
        match serde_json::from_str::<String>(literal) {
            Ok(decoded) => strings.push(Value::String(decoded)),
            Err(_) => strings.push(Value::String(after[..close].to_string())),
        }
        rest = &after[close + 1..];
    }
    Value::Array(strings)
}

/// Every string in `value`, at any depth.
fn texts_of<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(text) => out.push(text),
        Value::Object(map) => map.values().for_each(|inner| texts_of(inner, out)),
        Value::Array(items) => items.iter().for_each(|item| texts_of(item, out)),
        _ => {}
    }
}

/// Every object key in `value`, at any depth.
fn keys_of<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map {
                out.push(key);
                keys_of(inner, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| keys_of(item, out)),
        _ => {}
    }
}

/// The words of serde_json's message for bytes that are not JSON, or not the expected shape:
/// its position (`at line 1 column 7`) when it read the bytes.
pub const POSITION: &[&str] = &["line ", "column "];

/// Asserts that `value` encodes to JSON that `decode` reads back as an equal value.
#[track_caller]
pub fn round_trip<T, E>(value: &T, decode: impl FnOnce(Value) -> Result<T, E>)
where
    T: Serialize + PartialEq + Debug,
    E: Debug,
{
    let json = match serde_json::to_value(value) {
        Ok(json) => json,
        Err(e) => panic!("a decoded value does not encode: {e}: {value:?}"),
    };
    match decode(json.clone()) {
        Ok(again) => assert_eq!(
            &again, value,
            "decoded differently once re-encoded as {json}"
        ),
        Err(e) => panic!("decoded once, but not re-encoded as {json}: {e:?}"),
    }
}

/// The input as JSON, or `None` when it is not (the targets that take JSON values give the
/// decoder a value, as the door does after its own parse).
pub fn json(data: &[u8]) -> Option<Value> {
    serde_json::from_slice(data).ok()
}

/// The first byte as a choice among `n` (0 for an empty input), and the rest of the input.
pub fn pick(data: &[u8], n: usize) -> (usize, &[u8]) {
    match data.split_first() {
        Some((first, rest)) => (usize::from(*first) % n.max(1), rest),
        None => (0, data),
    }
}

/// A provider's stream decoder on `data` (an SSE body): a reply whose tool calls each have an
/// id of their own and arguments that are an object (or the raw text, for the run loop to
/// refuse), or an error whose message names the provider it came from.
pub fn stream(data: &[u8], read: impl Fn(&Streams, &[u8]) -> Result<ModelResponse, ProviderError>) {
    // One client for the whole run: building one per input would be most of the time.
    static STREAMS: OnceLock<Streams> = OnceLock::new();
    let streams = STREAMS.get_or_init(|| match Streams::new() {
        Ok(streams) => streams,
        Err(e) => panic!("no HTTP client: {e}"),
    });
    match read(streams, data) {
        Ok(reply) => {
            let mut ids = std::collections::HashSet::new();
            for (id, name, arguments) in reply.tool_calls() {
                assert!(!id.is_empty(), "a tool call ({name}) without an id");
                assert!(
                    ids.insert(id.to_string()),
                    "two tool calls with the id {id:?}"
                );
                assert!(
                    arguments.is_object() || arguments.is_string(),
                    "{arguments}"
                );
            }
        }
        Err(e) => says(&e.to_string(), &[&format!("{PROVIDER}: ")]),
    }
}

/// A channel's inbound decoder on `data`: the texts it hands to routing, each checked by
/// `text_ok`, or an error that says what was wrong (serde's message: a field, a type or, for
/// bytes it parsed, a position).
pub fn channel(
    data: &[u8],
    decode: impl Fn(&[u8]) -> Result<Vec<String>, String>,
    text_ok: impl Fn(&str) -> bool,
) {
    match decode(data) {
        Ok(texts) => {
            for text in texts {
                assert!(text_ok(&text), "handed on: {text:?}");
            }
        }
        Err(message) => says(&message, &["line ", "field", "invalid", "expected"]),
    }
}
