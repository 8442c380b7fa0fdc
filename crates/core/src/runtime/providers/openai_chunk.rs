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
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

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

/// An object's fields, one at a time.
trait Fields<'de>: Default {
    fn field<A: MapAccess<'de>>(&mut self, key: &str, map: &mut A) -> Result<(), A::Error>;
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

fn skip<'de, A: MapAccess<'de>>(map: &mut A) -> Result<(), A::Error> {
    map.next_value::<IgnoredAny>().map(drop)
}

/// A string field, borrowed from the chunk when it has no escapes; null reads as absent.
fn text<'de, A: MapAccess<'de>>(map: &mut A) -> Result<Option<Cow<'de, str>>, A::Error> {
    Ok(map.next_value::<Option<Text<'de>>>()?.map(|t| t.0))
}

/// `T` read from a JSON object only (serde's derived structs also take an array, by position,
/// which a `Value` reading would not).
#[derive(Default)]
struct Object<T>(T);

impl<'de, T: Fields<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Of<T>(std::marker::PhantomData<T>);
        impl<'de, T: Fields<'de>> Visitor<'de> for Of<T> {
            type Value = Object<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Object<T>, A::Error> {
                let mut fields = T::default();
                while let Some(Text(key)) = map.next_key()? {
                    fields.field(&key, &mut map)?;
                }
                Ok(Object(fields))
            }
        }
        deserializer.deserialize_map(Of(std::marker::PhantomData))
    }
}

/// An array's first element as `T`, the rest skipped; null and `[]` read as none.
struct First<T>(Option<T>);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for First<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Of<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Of<T> {
            type Value = First<T>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an array")
            }
            fn visit_unit<E: de::Error>(self) -> Result<First<T>, E> {
                Ok(First(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<First<T>, A::Error> {
                let first = seq.next_element()?;
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(First(first))
            }
        }
        deserializer.deserialize_any(Of(std::marker::PhantomData))
    }
}

/// A JSON string, borrowed when it has no escapes.
struct Text<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Of;
        impl<'de> Visitor<'de> for Of {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(s)))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(s.to_string())))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(s)))
            }
        }
        deserializer.deserialize_str(Of)
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
