//! How a method's params are read into its wire type, with serde's messages put in the wire's
//! words. A client knows objects, arrays, strings and numbers — not Rust's structs, tagged enums
//! and `usize` — so every refusal names the field (a path such as `attachments[0].content`) and
//! what is accepted there. Params are read through [`crate::checked`]: a field the method does
//! not know is refused, never dropped.

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{ErrorCode, ErrorShape};

/// Decodes `method`'s params: absent or `null` is `{}`; anything else must be a JSON object (an
/// array is not read field by field). A bad field is an `INVALID_REQUEST` that names it.
pub fn params<T: DeserializeOwned>(method: &str, params: Option<Value>) -> Result<T, ErrorShape> {
    let value = match params {
        None | Some(Value::Null) => Value::Object(Default::default()),
        Some(Value::Object(mut map)) => {
            crate::reference_fields::strip(method, &mut map);
            Value::Object(map)
        }
        Some(other) => {
            return Err(ErrorShape::new(
                ErrorCode::InvalidRequest,
                format!(
                    "{method}: params must be a JSON object of named fields (e.g. \
                     {{\"sessionKey\": \"main\"}}), or left out; got {}",
                    kind_of(&other)
                ),
            ));
        }
    };
    crate::checked::from_value(&value).map_err(|refusal| {
        ErrorShape::new(
            ErrorCode::InvalidRequest,
            format!(
                "{method}: invalid params{}: {}",
                refusal.at(),
                refusal.message
            ),
        )
    })
}

/// What kind of JSON value `value` is, with an article: "an array", "a string"…
pub fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// serde's message with Rust's type names replaced by what they are on the wire. What it
/// quotes of the caller's input (`"…"` strings, `` `…` `` field names) is left as it was: a field
/// named `expected u64` is named so.
pub fn explain(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut plain = String::new();
    let mut chars = message.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '"' && c != '`' {
            plain.push(c);
            continue;
        }
        out.push_str(&explain_plain(&std::mem::take(&mut plain)));
        out.push(c);
        // The quoted text, to its closing mark (a `\"` inside a string does not close it).
        while let Some(q) = chars.next() {
            out.push(q);
            if q == '\\' && c == '"' {
                if let Some(escaped) = chars.next() {
                    out.push(escaped);
                }
            } else if q == c {
                break;
            }
        }
    }
    out.push_str(&explain_plain(&plain));
    out
}

/// [`explain`] of text that quotes nothing.
fn explain_plain(message: &str) -> String {
    const OBJECTS: [&str; 3] = [
        "struct ",
        "internally tagged enum ",
        "adjacently tagged enum ",
    ];
    let mut out = message
        .replace("expected a sequence", "expected an array")
        .replace("expected a map", "expected an object")
        .replace("invalid type: sequence,", "invalid type: an array,")
        .replace("invalid type: map,", "invalid type: an object,");
    for prefix in OBJECTS {
        out = replace_named(&out, &format!("expected {prefix}"), "expected an object");
    }
    out = replace_named(
        &out,
        "data did not match any variant of untagged enum ",
        "the value has none of the accepted shapes",
    );
    for unsigned in ["u8", "u16", "u32", "u64", "usize"] {
        out = replace_word(
            &out,
            &format!("expected {unsigned}"),
            "expected a whole number ≥ 0",
        );
    }
    for signed in ["i8", "i16", "i32", "i64", "isize"] {
        out = replace_word(
            &out,
            &format!("expected {signed}"),
            "expected a whole number",
        );
    }
    for float in ["f32", "f64"] {
        out = replace_word(&out, &format!("expected {float}"), "expected a number");
    }
    out
}

/// `text` with every `prefix` followed by a Rust identifier replaced by `with`.
fn replace_named(text: &str, prefix: &str, with: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(prefix) {
        out.push_str(&rest[..at]);
        out.push_str(with);
        let after = &rest[at + prefix.len()..];
        let ident = after
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(after.len());
        rest = &after[ident..];
    }
    out.push_str(rest);
    out
}

/// `text` with `word` replaced where it is not the start of a longer word (`u64` but not `u64x`).
fn replace_word(text: &str, word: &str, with: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(word) {
        let after = &rest[at + word.len()..];
        let whole = !after.starts_with(|c: char| c.is_alphanumeric() || c == '_');
        out.push_str(&rest[..at]);
        out.push_str(if whole { with } else { word });
        rest = after;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Inner {
        n: u64,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Params {
        #[serde(default)]
        items: Vec<Inner>,
        #[serde(default)]
        key: Option<String>,
    }

    fn message(params: Option<Value>) -> String {
        super::params::<Params>("m", params).unwrap_err().message
    }

    #[test]
    fn params_are_an_object_or_nothing() {
        assert!(super::params::<Params>("m", None).is_ok());
        assert!(super::params::<Params>("m", Some(Value::Null)).is_ok());
        let array = message(Some(json!(["main"])));
        assert!(
            array.starts_with("m: params must be a JSON object of named fields"),
            "{array}"
        );
        assert!(array.ends_with("got an array"), "{array}");
        assert!(message(Some(json!("main"))).ends_with("got a string"));
    }

    #[test]
    fn rust_type_names_become_wire_words() {
        assert_eq!(
            message(Some(json!({"items": [5]}))),
            "m: invalid params at items[0]: invalid type: integer `5`, expected an object"
        );
        assert_eq!(
            message(Some(json!({"items": "x"}))),
            "m: invalid params at items: invalid type: string \"x\", expected an array"
        );
        assert_eq!(
            message(Some(json!({"items": [{"n": -1}]}))),
            "m: invalid params at items[0].n: invalid value: integer `-1`, expected a whole \
             number ≥ 0"
        );
        assert_eq!(
            explain("data did not match any variant of untagged enum OneOrMany"),
            "the value has none of the accepted shapes"
        );
        assert_eq!(
            explain("expected internally tagged enum TranscriptMessage here"),
            "expected an object here"
        );
        assert_eq!(explain("expected u64x"), "expected u64x");
        assert_eq!(
            explain("unknown field `fedexpected f32`; expected u64 \"expected i64\\\" x\""),
            "unknown field `fedexpected f32`; expected a whole number ≥ 0 \"expected i64\\\" x\""
        );
    }
}
