//! JSON schemas for tool parameters, shaped for models: integers are `number` (models send
//! `5.0` and `"5"`), no top-level `anyOf`/`oneOf`, no `$schema`/`title` noise.

use schemars::JsonSchema;
use serde_json::{Map, Value};

/// The parameters schema of `P`, post-processed for models.
pub fn schema_for<P: JsonSchema>() -> Value {
    let mut value = serde_json::to_value(schemars::schema_for!(P)).unwrap_or(Value::Null);
    if let Value::Object(map) = &mut value {
        map.remove("$schema");
        map.remove("title");
        map.entry("type").or_insert(Value::from("object"));
        map.entry("properties").or_insert(Value::Object(Map::new()));
    }
    simplify(&mut value);
    value
}

fn simplify(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("format");
            if let Some(kind) = map.get_mut("type") {
                match kind {
                    Value::String(s) if s == "integer" => *s = "number".into(),
                    Value::Array(kinds) => {
                        for k in kinds.iter_mut() {
                            if k == "integer" {
                                *k = Value::from("number");
                            }
                        }
                    }
                    _ => {}
                }
            }
            for v in map.values_mut() {
                simplify(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(simplify),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Params {
        /// How many rows.
        limit: Option<u32>,
        /// Which session.
        session_key: String,
    }

    #[test]
    fn integers_become_numbers_and_noise_goes() {
        let schema = schema_for::<Params>();
        assert_eq!(schema["type"], "object");
        assert!(schema.get("$schema").is_none() && schema.get("title").is_none());
        assert!(schema.get("anyOf").is_none() && schema.get("oneOf").is_none());
        assert_eq!(
            schema["properties"]["limit"]["type"],
            json!(["number", "null"])
        );
        assert_eq!(
            schema["properties"]["limit"]["description"],
            "How many rows."
        );
        assert!(schema["properties"]["limit"].get("format").is_none());
        assert_eq!(schema["required"], json!(["session_key"]));
    }
}
