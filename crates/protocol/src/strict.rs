//! JSON read as serde_json reads it, except that an object naming a key twice is refused:
//! with serde_json's own `Value` the last one silently wins, so `{"method":"a","method":"b"}`
//! ran `b`. Every door's params (`RequestFrame`, `RpcRequest`) are read through [`params`],
//! and a body read whole through [`value`], so the rule holds by construction.

use std::fmt;

use serde::Deserializer;
use serde::de::{DeserializeSeed, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::map::Entry;
use serde_json::{Map, Value};

/// `text` as a JSON value, refusing a repeated key in any object.
pub fn value(text: &str) -> Result<Value, serde_json::Error> {
    let mut de = serde_json::Deserializer::from_str(text);
    let value = Strict.deserialize(&mut de)?;
    de.end()?;
    Ok(value)
}

/// A frame's `params` (`deserialize_with`): any JSON value, a repeated key refused; `null` is
/// absent.
pub fn params<'de, D: Deserializer<'de>>(de: D) -> Result<Option<Value>, D::Error> {
    let value = Strict.deserialize(de)?;
    Ok((!value.is_null()).then_some(value))
}

/// Any JSON value read from any serde format (the config's JSON5 too), a repeated key refused.
#[derive(Debug, Clone, PartialEq)]
pub struct Unique(pub Value);

impl<'de> serde::Deserialize<'de> for Unique {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        Strict.deserialize(de).map(Unique)
    }
}

struct Strict;

impl<'de> DeserializeSeed<'de> for Strict {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<Value, D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Strict {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, de: D) -> Result<Value, D::Error> {
        Strict.deserialize(de)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(64));
        while let Some(item) = seq.next_element_seed(Strict)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match object.entry(key) {
                Entry::Occupied(taken) => {
                    return Err(A::Error::custom(format!(
                        "the key {:?} is written twice in one object; write each key once",
                        taken.key()
                    )));
                }
                Entry::Vacant(free) => {
                    free.insert(map.next_value_seed(Strict)?);
                }
            }
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_key_is_refused_at_any_depth_and_the_rest_reads_as_serde_json_reads_it() {
        for text in [r#"{"a":1,"a":2}"#, r#"{"p":[{"x":{"k":1,"k":1}}]}"#] {
            let e = value(text).unwrap_err().to_string();
            assert!(e.contains("is written twice in one object"), "{text}: {e}");
        }
        let text =
            r#"{"s":"é\n","n":-3,"u":18446744073709551615,"f":1.5,"b":true,"z":null,"a":[1,{}]}"#;
        let ours = value(text).unwrap();
        let theirs: Value = serde_json::from_str(text).unwrap();
        assert_eq!(ours, theirs);
        assert!(
            value("{} x").is_err(),
            "trailing text is an error, as in serde_json"
        );
    }
}
