//! What the wire types' tests share.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// Serializes `value`, checks it against `expected`, and reads it back.
pub(crate) fn round_trip<T>(value: T, expected: Value)
where
    T: Serialize + DeserializeOwned + PartialEq + std::fmt::Debug,
{
    assert_eq!(serde_json::to_value(&value).unwrap(), expected);
    assert_eq!(serde_json::from_value::<T>(expected).unwrap(), value);
}
