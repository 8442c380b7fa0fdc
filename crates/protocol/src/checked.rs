//! The one rule every door's JSON goes through (SPEC §12): a value is read into its wire type
//! field by field, and a field the type does not know is refused — naming it, the nearest known
//! one ("did you mean `label`?") and every field accepted there — instead of being dropped.
//!
//! It holds by construction: serde's derived `Deserialize` hands each struct's field names to
//! the deserializer ([`Deserializer::deserialize_struct`]), and [`from_value`] reads a JSON value
//! through a deserializer that checks the object's keys against them at every depth. A type need
//! not opt in; fields the reference's clients send that we do not use are declared on the type as
//! [`Ignored`], with a comment saying why. Two shapes are read without the check, because serde
//! buffers them before a struct sees them: a struct with a `#[serde(flatten)]` field, and the
//! variants of an internally tagged or untagged enum; such types carry `deny_unknown_fields`
//! themselves where they are read from outside.

use serde::Deserialize;
use serde::de::value::BorrowedStrDeserializer;
use serde::de::{
    self, DeserializeOwned, DeserializeSeed, Deserializer, EnumAccess, Error as _,
    IntoDeserializer, MapAccess, SeqAccess, VariantAccess, Visitor,
};
use serde_json::{Error, Map, Value};

/// Why a value was refused: where (a path such as `attachments[0]`, `.` for the top) and what.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal {
    pub path: String,
    pub message: String,
}

impl Refusal {
    /// ` at <path>` for a place inside the value, nothing for the value itself.
    pub fn at(&self) -> String {
        if self.path == "." {
            String::new()
        } else {
            format!(" at {}", self.path)
        }
    }
}

/// `value` read into `T`, a field `T` does not know refused at any depth.
pub fn from_value<T: DeserializeOwned>(value: &Value) -> Result<T, Refusal> {
    serde_path_to_error::deserialize(Checked(value)).map_err(|e| Refusal {
        path: e.path().to_string(),
        message: crate::decode::explain(&e.inner().to_string()),
    })
}

/// A field a client of the reference sends that we accept and do not use: any value is taken and
/// forgotten. Declare it on the params type (`#[serde(default)] pub deliver: Ignored`) with a
/// comment saying who sends it and why it has no effect here, and list it in docs/protocol.md.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Ignored;

impl<'de> Deserialize<'de> for Ignored {
    fn deserialize<D: Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
        de::IgnoredAny::deserialize(de).map(|_| Ignored)
    }
}

/// A field name the caller wrote, as the message quotes it: `` `name` ``, or as a JSON string
/// when the name holds a backtick (which would end the quote early, and a reader — a person or
/// [`crate::decode::explain`] — would take the rest for the message's own words).
pub fn quoted(key: &str) -> String {
    if key.contains('`') {
        serde_json::Value::from(key).to_string()
    } else {
        format!("`{key}`")
    }
}

/// The refusal of `key` where `fields` are known.
fn unknown_field(key: &str, fields: &[&str]) -> Error {
    let mut message = format!("unknown field {}", quoted(key));
    if let Some(near) = closest(key, fields.iter().copied()) {
        message.push_str(&format!("; did you mean `{near}`?"));
    }
    if fields.is_empty() {
        message.push_str("; no fields are accepted here");
    } else {
        let list: Vec<String> = fields.iter().map(|f| format!("`{f}`")).collect();
        message.push_str(&format!("; accepted: {}", list.join(", ")));
    }
    Error::custom(message)
}

/// The known name closest to `name` (case aside, then by edit distance), if it is close: at
/// most a third of its length apart, and never more than 3 edits.
pub fn closest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let lower = name.to_lowercase();
    known
        .into_iter()
        .map(|k| (distance(&lower, &k.to_lowercase()), k))
        .filter(|(d, k)| *d <= (k.chars().count() / 3).clamp(1, 3))
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Edit distance where swapping two neighbours is one edit (`prot` → `port`).
fn distance(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d = vec![vec![0; b.len() + 1]; a.len() + 1];
    for (i, row) in d.iter_mut().enumerate() {
        row[0] = i;
    }
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1)
                .min(d[i - 1][j - 1] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(d[i - 2][j - 2] + 1);
            }
            d[i][j] = best;
        }
    }
    d[a.len()][b.len()]
}

/// A JSON value read as serde_json's own `&Value` deserializer reads it, except that a struct's
/// object may hold only the struct's fields.
struct Checked<'a>(&'a Value);

impl<'de> Deserializer<'de> for Checked<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
                (Some(u), _, _) => visitor.visit_u64(u),
                (None, Some(i), _) => visitor.visit_i64(i),
                (None, None, Some(f)) => visitor.visit_f64(f),
                (None, None, None) => Err(Error::custom(format!("unreadable number {n}"))),
            },
            Value::String(s) => visitor.visit_borrowed_str(s),
            Value::Array(items) => {
                let mut seq = Items(items.iter());
                let out = visitor.visit_seq(&mut seq)?;
                match seq.0.len() {
                    0 => Ok(out),
                    _ => Err(Error::invalid_length(items.len(), &"fewer elements")),
                }
            }
            Value::Object(map) => visitor.visit_map(Fields {
                entries: map.iter(),
                next: None,
            }),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        // An array is not read field by field (serde_json would, by position).
        match self.0 {
            Value::Object(map) => check_keys(map, fields)?,
            other => return Err(Error::invalid_type(unexpected(other), &"an object")),
        }
        self.deserialize_any(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let (name, value) = match self.0 {
            Value::String(name) => (name.as_str(), None),
            Value::Object(map) if map.len() == 1 => match map.iter().next() {
                Some((name, value)) => (name.as_str(), Some(value)),
                None => return Err(Error::custom("an empty object names no variant")),
            },
            other => {
                return Err(Error::invalid_type(
                    unexpected(other),
                    &"a name, or an object whose one key is a name",
                ));
            }
        };
        visitor.visit_enum(Variant { name, value })
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_unit()
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct seq tuple tuple_struct map identifier
    }
}

fn check_keys(map: &Map<String, Value>, fields: &[&str]) -> Result<(), Error> {
    match map.keys().find(|key| !fields.contains(&key.as_str())) {
        Some(key) => Err(unknown_field(key, fields)),
        None => Ok(()),
    }
}

fn unexpected(value: &Value) -> de::Unexpected<'_> {
    match value {
        Value::Null => de::Unexpected::Unit,
        Value::Bool(b) => de::Unexpected::Bool(*b),
        Value::Number(n) => match (n.as_u64(), n.as_i64(), n.as_f64()) {
            (Some(u), _, _) => de::Unexpected::Unsigned(u),
            (None, Some(i), _) => de::Unexpected::Signed(i),
            (None, None, Some(f)) => de::Unexpected::Float(f),
            (None, None, None) => de::Unexpected::Other("a number"),
        },
        Value::String(s) => de::Unexpected::Str(s),
        Value::Array(_) => de::Unexpected::Seq,
        Value::Object(_) => de::Unexpected::Map,
    }
}

struct Items<'a>(std::slice::Iter<'a, Value>);

impl<'de> SeqAccess<'de> for Items<'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        self.0
            .next()
            .map(|item| seed.deserialize(Checked(item)))
            .transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

struct Fields<'a> {
    entries: serde_json::map::Iter<'a>,
    next: Option<&'a Value>,
}

impl<'de> MapAccess<'de> for Fields<'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some((key, value)) = self.entries.next() else {
            return Ok(None);
        };
        self.next = Some(value);
        seed.deserialize(BorrowedStrDeserializer::<Error>::new(key))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        match self.next.take() {
            Some(value) => seed.deserialize(Checked(value)),
            None => Err(Error::custom("a value was asked for before its key")),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.entries.len())
    }
}

struct Variant<'a> {
    name: &'a str,
    value: Option<&'a Value>,
}

impl<'de> EnumAccess<'de> for Variant<'de> {
    type Error = Error;
    type Variant = Self;

    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, Self), Error> {
        let name = seed.deserialize(self.name.into_deserializer())?;
        Ok((name, self))
    }
}

impl<'de> VariantAccess<'de> for Variant<'de> {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        match self.value {
            None | Some(Value::Null) => Ok(()),
            Some(other) => Err(Error::invalid_type(unexpected(other), &"a name alone")),
        }
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Error> {
        match self.value {
            Some(value) => seed.deserialize(Checked(value)),
            None => Err(Error::invalid_type(de::Unexpected::UnitVariant, &"a value")),
        }
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
        match self.value {
            Some(value) => Checked(value).deserialize_seq(visitor),
            None => Err(Error::invalid_type(
                de::Unexpected::UnitVariant,
                &"an array",
            )),
        }
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match self.value {
            Some(value) => Checked(value).deserialize_struct("", fields, visitor),
            None => Err(Error::invalid_type(
                de::Unexpected::UnitVariant,
                &"an object",
            )),
        }
    }
}

#[cfg(test)]
mod tests;
