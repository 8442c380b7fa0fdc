//! Lenient numbers and booleans for params written by models and hand-made clients: `5`, `5.0`
//! and `"5"` are all accepted, fractions are floored, and callers clamp to their range (SPEC §7);
//! `true`, `"true"`, `"yes"` and `1` are all true. A count, a limit or a timeout below its least
//! meaningful value (a negative timeout, a limit of 0) is refused, never clamped: it can only be
//! a mistake, and clamping it would answer something the caller did not ask for.

use serde::{Deserialize, Deserializer, de::Error};
use serde_json::Value;

/// Reads an optional number given as a JSON number or a numeric string, floored to an integer.
pub fn opt_int<'de, D: Deserializer<'de>>(de: D) -> Result<Option<i64>, D::Error> {
    match Option::<Value>::deserialize(de)? {
        None | Some(Value::Null) => Ok(None),
        Some(value) => to_int(&value).map(Some).map_err(D::Error::custom),
    }
}

/// As [`opt_int`], refusing a negative number (timeouts, where 0 means "the default").
pub fn opt_non_negative<'de, D: Deserializer<'de>>(de: D) -> Result<Option<i64>, D::Error> {
    at_least(opt_int(de)?, 0).map_err(D::Error::custom)
}

/// As [`opt_int`], refusing a number below 1 (limits, counts of minutes, sequence numbers).
pub fn opt_positive<'de, D: Deserializer<'de>>(de: D) -> Result<Option<i64>, D::Error> {
    at_least(opt_int(de)?, 1).map_err(D::Error::custom)
}

fn at_least(value: Option<i64>, min: i64) -> Result<Option<i64>, String> {
    match value {
        Some(n) if n < min => Err(format!("expected a number ≥ {min}, got {n}")),
        other => Ok(other),
    }
}

/// An optional bool given as `true`, `"true"`, `1`… (models are not always exact).
pub fn opt_bool<'de, D: Deserializer<'de>>(de: D) -> Result<Option<bool>, D::Error> {
    match Option::<Value>::deserialize(de)? {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(b)),
        Some(Value::Number(n)) => Ok(Some(n.as_f64().is_some_and(|n| n != 0.0))),
        Some(Value::String(s)) => match s.trim().to_ascii_lowercase().as_str() {
            "true" | "yes" | "1" => Ok(Some(true)),
            "false" | "no" | "0" | "" => Ok(Some(false)),
            other => Err(D::Error::custom(format!(
                "expected true or false, got {other:?}"
            ))),
        },
        Some(other) => Err(D::Error::custom(format!(
            "expected true or false, got {other}"
        ))),
    }
}

/// The floored integer a JSON value stands for, or a message saying what was expected.
pub fn to_int(value: &Value) -> Result<i64, String> {
    let number = match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    };
    match number {
        Some(n) if n.is_finite() => Ok(n.floor().clamp(i64::MIN as f64, i64::MAX as f64) as i64),
        _ => Err(format!("expected a number, got {value}")),
    }
}

/// `Some(n)` clamped to `min..=max`, or `default` when absent.
pub fn clamp_or(value: Option<i64>, default: i64, min: i64, max: i64) -> i64 {
    value.unwrap_or(default).clamp(min, max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_strings_and_fractions_are_accepted() {
        assert_eq!(to_int(&json!(5)), Ok(5));
        assert_eq!(to_int(&json!(5.9)), Ok(5));
        assert_eq!(to_int(&json!(" 7 ")), Ok(7));
        assert_eq!(to_int(&json!(-1.5)), Ok(-2));
        assert!(
            to_int(&json!("five"))
                .unwrap_err()
                .contains("expected a number")
        );
        assert!(to_int(&json!(true)).is_err());
        assert_eq!(clamp_or(Some(900), 50, 1, 200), 200);
        assert_eq!(clamp_or(None, 50, 1, 200), 50);
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Bounds {
        #[serde(default, deserialize_with = "opt_non_negative")]
        timeout: Option<i64>,
        #[serde(default, deserialize_with = "opt_positive")]
        limit: Option<i64>,
    }

    #[test]
    fn numbers_below_their_least_value_are_refused() {
        let read = |v: Value| serde_json::from_value::<Bounds>(v).map_err(|e| e.to_string());
        assert_eq!(
            read(json!({"timeout": 0, "limit": "1"})),
            Ok(Bounds {
                timeout: Some(0),
                limit: Some(1)
            })
        );
        let timeout = read(json!({"timeout": -5})).unwrap_err();
        assert!(
            timeout.contains("expected a number ≥ 0, got -5"),
            "{timeout}"
        );
        let limit = read(json!({"limit": 0.5})).unwrap_err();
        assert!(limit.contains("expected a number ≥ 1, got 0"), "{limit}");
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Flag {
        #[serde(default, deserialize_with = "opt_bool")]
        on: Option<bool>,
    }

    fn flag(value: Value) -> Result<Option<bool>, String> {
        serde_json::from_value::<Flag>(value)
            .map(|f| f.on)
            .map_err(|e| e.to_string())
    }

    #[test]
    fn booleans_numbers_and_words_are_accepted() {
        assert_eq!(flag(json!({})), Ok(None));
        assert_eq!(flag(json!({"on": null})), Ok(None));
        assert_eq!(flag(json!({"on": true})), Ok(Some(true)));
        assert_eq!(flag(json!({"on": false})), Ok(Some(false)));
        assert_eq!(flag(json!({"on": 1})), Ok(Some(true)));
        assert_eq!(flag(json!({"on": 0.0})), Ok(Some(false)));
        assert_eq!(flag(json!({"on": " Yes "})), Ok(Some(true)));
        assert_eq!(flag(json!({"on": "TRUE"})), Ok(Some(true)));
        assert_eq!(flag(json!({"on": "1"})), Ok(Some(true)));
        assert_eq!(flag(json!({"on": "no"})), Ok(Some(false)));
        assert_eq!(flag(json!({"on": ""})), Ok(Some(false)));
        assert_eq!(flag(json!({"on": "0"})), Ok(Some(false)));
        let word = flag(json!({"on": "maybe"})).unwrap_err();
        assert!(
            word.contains("expected true or false, got \"maybe\""),
            "{word}"
        );
        let list = flag(json!({"on": [true]})).unwrap_err();
        assert!(
            list.contains("expected true or false, got [true]"),
            "{list}"
        );
    }
}
