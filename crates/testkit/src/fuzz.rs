//! Inputs for property tests of decoders: JSON shaped like the format under test — its own field
//! names and words, with arbitrary values in them — so the decoders' deep paths run, not only
//! their first "this is not JSON" check.

use proptest::prelude::*;
use serde_json::{Map, Value};

/// JSON values up to `depth` levels deep whose object keys come from `keys` and whose strings
/// are often one of `words` (else any short text).
pub fn json(
    keys: &'static [&'static str],
    words: &'static [&'static str],
    depth: u32,
) -> BoxedStrategy<Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-5i64..5).prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        proptest::sample::select(words).prop_map(Value::from),
        ".{0,12}".prop_map(Value::from),
    ];
    leaf.prop_recursive(depth, 48, 6, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            object(keys, inner),
        ]
    })
    .boxed()
}

/// Objects with fields named from `keys` and values from `values`.
pub fn object(
    keys: &'static [&'static str],
    values: impl Strategy<Value = Value>,
) -> impl Strategy<Value = Value> {
    proptest::collection::vec((proptest::sample::select(keys), values), 0..6).prop_map(|fields| {
        let map: Map<String, Value> = fields
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        Value::Object(map)
    })
}
