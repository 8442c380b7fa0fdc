use serde::Deserialize;
use serde_json::json;

use super::*;

#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Patch {
    key: String,
    #[serde(default)]
    label: Option<String>,
    #[serde(default, alias = "thinking")]
    thinking_level: Option<String>,
    #[serde(default)]
    parts: Vec<Part>,
    #[serde(default)]
    mode: Option<Mode>,
    #[serde(default)]
    deliver: Ignored,
}

#[derive(Debug, PartialEq, Deserialize)]
struct Part {
    text: String,
}

#[derive(Debug, PartialEq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Mode {
    Off,
    Shape { width: u32 },
}

fn refusal(value: serde_json::Value) -> Refusal {
    from_value::<Patch>(&value).unwrap_err()
}

#[test]
fn known_fields_read_as_serde_json_reads_them() {
    let patch: Patch = from_value(&json!({
        "key": "main", "label": null, "thinking": "low", "parts": [{"text": "a"}],
        "mode": "off", "deliver": {"any": ["thing"]}
    }))
    .unwrap();
    assert_eq!(
        patch,
        Patch {
            key: "main".into(),
            label: None,
            thinking_level: Some("low".into()),
            parts: vec![Part { text: "a".into() }],
            mode: Some(Mode::Off),
            deliver: Ignored,
        }
    );
    let shaped: Patch = from_value(&json!({"key": "k", "mode": {"shape": {"width": 3}}})).unwrap();
    assert_eq!(shaped.mode, Some(Mode::Shape { width: 3 }));
}

#[test]
fn an_unknown_field_is_refused_with_the_nearest_and_the_accepted() {
    let r = refusal(json!({"key": "main", "lable": "x"}));
    assert_eq!(r.path, ".");
    assert_eq!(
        r.message,
        "unknown field `lable`; did you mean `label`?; accepted: `key`, `label`, \
         `thinking`, `thinkingLevel`, `parts`, `mode`, `deliver`"
    );
    let far = refusal(json!({"key": "main", "zzzzzz": 1}));
    assert!(!far.message.contains("did you mean"), "{}", far.message);
    assert!(
        far.message
            .starts_with("unknown field `zzzzzz`; accepted: `key`")
    );
}

#[test]
fn a_field_name_holding_a_backtick_is_named_whole() {
    // Found by fuzzing: the name's backtick closed the quote, and the rest of the name
    // (`… expected f32`) was read as the message's own words and rewritten.
    let key = "a`b expected f32";
    let r = refusal(json!({"key": "main", key: 1}));
    assert!(
        r.message
            .starts_with(r#"unknown field "a`b expected f32"; accepted:"#),
        "{}",
        r.message
    );
}

#[test]
fn nested_objects_are_checked_and_placed() {
    let r = refusal(json!({"key": "k", "parts": [{"text": "a"}, {"txet": "b"}]}));
    assert_eq!(r.path, "parts[1]");
    assert_eq!(r.at(), " at parts[1]");
    assert!(
        r.message
            .contains("unknown field `txet`; did you mean `text`?"),
        "{}",
        r.message
    );
    let variant = refusal(json!({"key": "k", "mode": {"shape": {"width": 1, "hieght": 2}}}));
    assert!(
        variant.message.contains("unknown field `hieght`"),
        "{}",
        variant.message
    );
}

#[test]
fn types_and_variants_are_refused_in_wire_words() {
    let r = refusal(json!({"key": 5}));
    assert_eq!(r.path, "key");
    assert_eq!(r.message, "invalid type: integer `5`, expected a string");
    let variant = refusal(json!({"key": "k", "mode": "of"}));
    assert_eq!(variant.path, "mode");
    assert!(
        variant
            .message
            .starts_with("unknown variant `of`, expected `off` or `shape`"),
        "{}",
        variant.message
    );
    let missing = refusal(json!({}));
    assert_eq!(missing.message, "missing field `key`");
}

#[test]
fn the_nearest_name_is_close_or_none() {
    let known = ["port", "label", "sessionKey"];
    assert_eq!(closest("prot", known), Some("port"));
    assert_eq!(closest("SESSIONKEY", known), Some("sessionKey"));
    assert_eq!(closest("session_key", known), Some("sessionKey"));
    assert_eq!(closest("x", known), None);
    assert_eq!(closest("", known), None);
}

#[test]
fn an_object_type_takes_only_an_object() {
    for (value, got) in [
        (json!(["main", null]), "an array"),
        (json!({"key": "k", "parts": {"text": "a"}}), "an object"),
        (json!("main"), "string \"main\""),
        (json!(null), "null"),
    ] {
        let r = refusal(value);
        let expected = match r.path.as_str() {
            "parts" => "an array",
            _ => "an object",
        };
        assert_eq!(
            r.message,
            format!("invalid type: {got}, expected {expected}")
        );
    }
}
