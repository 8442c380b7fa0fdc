//! The Messages stream's common event, `content_block_delta` (a piece of text, thinking, a
//! signature or a tool call's input), read in place, without building a `Value` for it: almost
//! every event of a streamed reply is one.
//!
//! [`Delta::read`] takes only such an event whose fields have the format's types, and says
//! `None` for anything else (another event, a field of another type, a `delta` that is not an
//! object); `anthropic`'s `Value` reading then reads it as before, so an event means the same
//! whichever reading took it (the agreement test in `anthropic_tests`). Like a `Value`, an
//! object's repeated key counts with its last value. As in `openai_chunk`, the fields it skips
//! are checked for JSON syntax only: a number beyond `f64`, nesting deeper than 128 or an
//! unpaired surrogate escape in one of them passes here and not as a `Value`.

use std::borrow::Cow;

use serde::de::{self, MapAccess};
use serde_json::Value;

use super::in_place::{Fields, Object, skip, text};

/// What a delta says: its `type` and the strings each type reads, as the `Value` reading's
/// `str_field` would take them (`None` when absent, null or, from a `Value`, not a string).
#[derive(Default, Debug, PartialEq)]
pub(super) struct Delta<'a> {
    pub(super) kind: Option<Cow<'a, str>>,
    pub(super) text: Option<Cow<'a, str>>,
    pub(super) thinking: Option<Cow<'a, str>>,
    pub(super) signature: Option<Cow<'a, str>>,
    pub(super) partial_json: Option<Cow<'a, str>>,
}

impl<'a> Delta<'a> {
    /// A `content_block_delta` event's block index and delta, or `None` when the event is not
    /// one read in place (see the module's text). `name` is the event's `event:` line, which
    /// names it when its `type` is absent or null.
    pub(super) fn read(name: &str, data: &'a str) -> Option<(u64, Self)> {
        let Object(event) = serde_json::from_str::<Object<Event<'a>>>(data).ok()?;
        if event.kind.as_deref().unwrap_or(name) != "content_block_delta" {
            return None;
        }
        let Object(delta) = event.delta.unwrap_or_default();
        Some((event.index.unwrap_or(0), delta))
    }

    /// The same fields of a delta read as a `Value` (any value: what is not an object or not a
    /// string reads as absent).
    pub(super) fn of(delta: &'a Value) -> Self {
        let field = |key: &str| delta.get(key).and_then(Value::as_str).map(Cow::Borrowed);
        Self {
            kind: field("type"),
            text: field("text"),
            thinking: field("thinking"),
            signature: field("signature"),
            partial_json: field("partial_json"),
        }
    }

    /// A string field's text, empty when it is absent.
    pub(super) fn str<'f>(field: &'f Option<Cow<'_, str>>) -> &'f str {
        field.as_deref().unwrap_or_default()
    }
}

/// The event's fields that matter; an `index` that is not an unsigned integer, or any field of
/// another type, fails the reading.
#[derive(Default)]
struct Event<'a> {
    kind: Option<Cow<'a, str>>,
    index: Option<u64>,
    delta: Option<Object<Delta<'a>>>,
}

impl<'de> Fields<'de> for Event<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "type" => {
                self.kind = text(map)?;
                // Another event (its `type` comes first): stop here, the `Value` reading takes it.
                if self
                    .kind
                    .as_deref()
                    .is_some_and(|kind| kind != "content_block_delta")
                {
                    return Err(de::Error::custom("not a delta"));
                }
            }
            "index" => self.index = map.next_value()?,
            "delta" => self.delta = map.next_value()?,
            _ => skip(map)?,
        }
        Ok(())
    }
}

impl<'de> Fields<'de> for Delta<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "type" => self.kind = text(map)?,
            "text" => self.text = text(map)?,
            "thinking" => self.thinking = text(map)?,
            "signature" => self.signature = text(map)?,
            "partial_json" => self.partial_json = text(map)?,
            _ => skip(map)?,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delta_event_is_read_in_place_and_other_events_are_left() {
        let text = r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hel\nlo"}}"#;
        let (index, delta) = Delta::read("content_block_delta", text).expect("a delta");
        assert_eq!(index, 1);
        assert_eq!(delta.kind.as_deref(), Some("text_delta"));
        assert_eq!(delta.text.as_deref(), Some("Hel\nlo"));
        let plain =
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"x"}}"#;
        assert!(matches!(
            Delta::read("", plain).unwrap().1.text,
            Some(Cow::Borrowed("x"))
        ));
        // Named by its `event:` line when its type is absent or null.
        let unnamed =
            r#"{"type":null,"delta":{"type":"input_json_delta","partial_json":"{\"a\""}}"#;
        let (index, delta) = Delta::read("content_block_delta", unnamed).unwrap();
        assert_eq!((index, delta.partial_json.as_deref()), (0, Some("{\"a\"")));
        // The last of a repeated key counts, as in a `Value`.
        let twice = r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a","text":"b"}}"#;
        assert_eq!(Delta::read("", twice).unwrap().1.text.as_deref(), Some("b"));
        for other in [
            r#"{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#,
            r#"{"delta":{"type":"text_delta","text":"x"}}"#,
            r#"{"type":"content_block_delta","index":-1,"delta":{"type":"text_delta","text":"x"}}"#,
            r#"{"type":"content_block_delta","index":1.0,"delta":{"type":"text_delta","text":"x"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":["x"]}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":7}}"#,
            r#"{"type":7,"index":0,"delta":{"type":"text_delta","text":"x"}}"#,
            r#"[{"type":"content_block_delta"}]"#,
            "not json",
        ] {
            assert_eq!(Delta::read("ping", other), None, "{other}");
        }
    }
}
