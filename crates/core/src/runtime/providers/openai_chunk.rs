//! The common Chat Completions stream chunk — a piece of text or thinking, maybe the finish
//! reason — read in place, without building a `Value` for it. A chunk like that is almost every
//! event of a streamed reply, and a `Value` costs it a map and a string for each of its fields
//! (`id`, `object`, `created`, `model`, …), which the reply never reads.
//!
//! [`Piece::read`] takes only such a chunk and says `None` for anything else: an error, usage,
//! tool calls, or a shape it does not read (a field of another type than the format's, a choice
//! that is not an object). The `Value` reading in `openai` then reads it as before, so a chunk
//! means the same whichever reading took it (the oracle test in `openai`'s tests). Like a
//! `Value`, an object's repeated key counts with its last value. The fields it skips are checked
//! for JSON syntax only, so a chunk that a `Value` refuses for what is in one of them passes: a
//! number beyond `f64` (`"created": 1e400`), nesting deeper than 128, an unpaired surrogate
//! escape in a string.

use std::borrow::Cow;

use serde::de::{IgnoredAny, MapAccess};

use super::in_place::{Fields, First, Object, skip, text};

/// What a plain chunk says: each field as the `Value` reading's `str_field` would take it
/// (a string, empty or not; `None` when absent or null).
#[derive(Default, Debug, PartialEq)]
pub(super) struct Piece<'a> {
    pub(super) content: Option<Cow<'a, str>>,
    pub(super) reasoning_content: Option<Cow<'a, str>>,
    pub(super) reasoning: Option<Cow<'a, str>>,
    pub(super) finish_reason: Option<Cow<'a, str>>,
}

impl<'a> Piece<'a> {
    /// The chunk's piece, or `None` when it is not a plain chunk (see the module's text).
    pub(super) fn read(data: &'a str) -> Option<Self> {
        let Object(chunk) = serde_json::from_str::<Object<Chunk<'a>>>(data).ok()?;
        if chunk.other {
            return None;
        }
        let Some(Object(choice)) = chunk.first_choice else {
            return Some(Self::default());
        };
        let Object(delta) = choice.delta.unwrap_or_default();
        if delta.tool_calls {
            return None;
        }
        Some(Self {
            content: delta.content,
            reasoning_content: delta.reasoning_content,
            reasoning: delta.reasoning,
            finish_reason: choice.finish_reason,
        })
    }
}

/// The chunk's fields that matter: whether it has a non-null `error` or `usage` (`other`), and
/// its first choice.
#[derive(Default)]
struct Chunk<'a> {
    other: bool,
    first_choice: Option<Object<Choice<'a>>>,
}

#[derive(Default)]
struct Choice<'a> {
    delta: Option<Object<Delta<'a>>>,
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Default)]
struct Delta<'a> {
    content: Option<Cow<'a, str>>,
    reasoning_content: Option<Cow<'a, str>>,
    reasoning: Option<Cow<'a, str>>,
    /// A non-null `tool_calls`: left to the `Value` reading.
    tool_calls: bool,
}

impl<'de> Fields<'de> for Chunk<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            // An `error` or a `usage` chunk is rare: the `Value` reading takes it whole.
            "error" | "usage" => {
                let present = map.next_value::<Option<IgnoredAny>>()?.is_some();
                self.other |= present;
            }
            "choices" => self.first_choice = map.next_value::<First<_>>()?.0,
            _ => skip(map)?,
        }
        Ok(())
    }
}

impl<'de> Fields<'de> for Choice<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "delta" => self.delta = map.next_value()?,
            "finish_reason" => self.finish_reason = text(map)?,
            _ => skip(map)?,
        }
        Ok(())
    }
}

impl<'de> Fields<'de> for Delta<'de> {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error> {
        match key {
            "content" => self.content = text(map)?,
            "reasoning_content" => self.reasoning_content = text(map)?,
            "reasoning" => self.reasoning = text(map)?,
            "tool_calls" => self.tool_calls = map.next_value::<Option<IgnoredAny>>()?.is_some(),
            _ => skip(map)?,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_chunk_is_read_in_place_and_other_chunks_are_left() {
        let text = r#"{"id":"c","object":"chat.completion.chunk","created":1,"model":"m",
            "choices":[{"index":0,"delta":{"content":"Hel\nlo"},"logprobs":null,"finish_reason":null}]}"#;
        let piece = Piece::read(text).expect("a plain chunk");
        assert_eq!(piece.content.as_deref(), Some("Hel\nlo"));
        assert_eq!(piece.finish_reason, None);
        let plain = r#"{"choices":[{"delta":{"content":"x"}}]}"#;
        assert!(matches!(
            Piece::read(plain).unwrap().content,
            Some(Cow::Borrowed("x"))
        ));
        let done = r#"{"choices":[{"delta":{},"finish_reason":"stop"}],"usage":null}"#;
        assert_eq!(
            Piece::read(done).unwrap().finish_reason.as_deref(),
            Some("stop")
        );
        // The last of a repeated key counts, as in a `Value`.
        let twice = r#"{"choices":[{"delta":{"content":"a","content":"b"}}]}"#;
        assert_eq!(Piece::read(twice).unwrap().content.as_deref(), Some("b"));
        for other in [
            r#"{"choices":[],"usage":{"prompt_tokens":1}}"#,
            r#"{"error":{"message":"overloaded"}}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0}]}}]}"#,
            r#"{"choices":[[{"content":"x"}]]}"#,
            r#"{"choices":[{"delta":{"content":["x"]}}]}"#,
            r#"[{"error":null}]"#,
            "not json",
        ] {
            assert_eq!(Piece::read(other), None, "{other}");
        }
    }
}
