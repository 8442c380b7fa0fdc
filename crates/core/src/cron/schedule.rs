//! The schedule grammar (documented in `docs/cron.md`) and the slot arithmetic.
//!
//! A **slot** is an instant (ms since the epoch) at which a job is meant to fire: an occurrence
//! of a cron expression in UTC, or `createdAt + k × interval` (k ≥ 1) for an interval job, so
//! interval slots stay on the same grid across restarts. The scheduler fires a slot at most once
//! (see `scheduler.rs`); this file only answers "which slots fall where".

use std::fmt;

use chrono::{DateTime, Utc};
use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};
use serde_json::Value;
use switchboard_protocol::cron::ScheduleKind;

/// The shortest accepted interval.
pub const MIN_INTERVAL_MS: i64 = 1_000;
/// The longest accepted interval (365 days).
pub const MAX_INTERVAL_MS: i64 = 365 * DAY_MS;

const SECOND_MS: i64 = 1_000;
const MINUTE_MS: i64 = 60 * SECOND_MS;
const HOUR_MS: i64 = 60 * MINUTE_MS;
const DAY_MS: i64 = 24 * HOUR_MS;

/// What every schedule error ends with: the accepted forms.
pub const ACCEPTED: &str = "expected a cron expression of 5 fields (minute hour day-of-month \
    month day-of-week, e.g. \"*/5 * * * *\"), 6 fields (seconds first, e.g. \"30 * * * * *\") or \
    a nickname (@hourly, @daily, @weekly, @monthly, @yearly), evaluated in UTC; or an interval \
    \"every <n><unit>\" with unit s, m, h or d (e.g. \"every 30s\", \"every 5m\", \"every 2h\"), \
    from 1s to 365d; or an object {\"cron\": \"<expression>\"}, {\"every\": \"30s\"} or \
    {\"everyMs\": 30000}";

/// A parsed schedule.
#[derive(Debug, Clone)]
pub enum Schedule {
    /// A cron expression, evaluated in UTC.
    Cron { expr: String, cron: Box<Cron> },
    /// A fixed interval.
    Every { every_ms: i64 },
}

impl PartialEq for Schedule {
    fn eq(&self, other: &Self) -> bool {
        self.to_string() == other.to_string()
    }
}

impl Schedule {
    /// Reads the wire form of `cron.add`'s `schedule`: a string or an object.
    pub fn from_param(value: &Value) -> Result<Self, String> {
        match value {
            Value::String(text) => Self::parse(text),
            Value::Object(map) => {
                let keys: Vec<&str> = map.keys().map(String::as_str).collect();
                match (keys.as_slice(), map.values().next()) {
                    (["cron"], Some(Value::String(expr))) => Self::parse_cron(expr),
                    (["every"], Some(Value::String(every))) => {
                        let every = every.trim();
                        let rest = strip_every(every).unwrap_or(every);
                        Self::parse_interval(rest)
                    }
                    (["everyMs"], Some(ms)) => {
                        let ms = switchboard_protocol::lenient::to_int(ms)
                            .map_err(|e| format!("schedule.everyMs: {e}; {ACCEPTED}"))?;
                        Self::interval(ms, &format!("{ms}ms"))
                    }
                    ([key @ ("cron" | "every")], Some(other)) => Err(format!(
                        "schedule.{key}: expected a string, got {other}; {ACCEPTED}"
                    )),
                    _ => Err(format!(
                        "schedule: {value} is not a schedule object (it needs exactly one of \
                         the keys cron, every, everyMs); {ACCEPTED}"
                    )),
                }
            }
            Value::Null => Err(format!("schedule: missing; {ACCEPTED}")),
            other => Err(format!("schedule: {other} is not a schedule; {ACCEPTED}")),
        }
    }

    /// Reads the text form (`"*/5 * * * *"`, `"every 30s"`), as stored and as listed.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        match strip_every(text) {
            Some(rest) => Self::parse_interval(rest),
            None => Self::parse_cron(text),
        }
    }

    fn parse_cron(expr: &str) -> Result<Self, String> {
        let expr = expr.split_whitespace().collect::<Vec<_>>().join(" ");
        if expr.is_empty() {
            return Err(format!("schedule: empty; {ACCEPTED}"));
        }
        match parser().parse(&expr) {
            Ok(cron) => Ok(Self::Cron {
                expr,
                cron: Box::new(cron),
            }),
            Err(e) => Err(format!(
                "schedule: {expr:?} is not a valid cron expression: {}; {ACCEPTED}",
                explain(&expr, &e.to_string())
            )),
        }
    }

    /// `rest` is what follows `every`: `<n><unit>`, with or without a space between.
    fn parse_interval(rest: &str) -> Result<Self, String> {
        let rest = rest.trim();
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let (number, unit) = rest.split_at(digits);
        let unit_ms = match unit.trim().to_ascii_lowercase().as_str() {
            "ms" | "millisecond" | "milliseconds" => Some(1),
            "s" | "sec" | "secs" | "second" | "seconds" => Some(SECOND_MS),
            "m" | "min" | "mins" | "minute" | "minutes" => Some(MINUTE_MS),
            "h" | "hr" | "hrs" | "hour" | "hours" => Some(HOUR_MS),
            "d" | "day" | "days" => Some(DAY_MS),
            _ => None,
        };
        let (Ok(n), Some(unit_ms)) = (number.parse::<i64>(), unit_ms) else {
            return Err(format!(
                "schedule: \"every {rest}\" is not an interval; {ACCEPTED}"
            ));
        };
        let ms = n.checked_mul(unit_ms).unwrap_or(i64::MAX);
        Self::interval(ms, rest)
    }

    fn interval(ms: i64, shown: &str) -> Result<Self, String> {
        if ms < MIN_INTERVAL_MS {
            return Err(format!(
                "schedule: the interval {shown} is below the minimum of 1s; {ACCEPTED}"
            ));
        }
        if ms > MAX_INTERVAL_MS {
            return Err(format!(
                "schedule: the interval {shown} is above the maximum of 365d; {ACCEPTED}"
            ));
        }
        Ok(Self::Every { every_ms: ms })
    }

    /// `cron` or `every`.
    pub fn kind(&self) -> ScheduleKind {
        match self {
            Self::Cron { .. } => ScheduleKind::Cron,
            Self::Every { .. } => ScheduleKind::Every,
        }
    }

    /// The cron expression (`cron` schedules).
    pub fn expression(&self) -> Option<String> {
        match self {
            Self::Cron { expr, .. } => Some(expr.clone()),
            Self::Every { .. } => None,
        }
    }

    pub fn every_ms(&self) -> Option<i64> {
        match self {
            Self::Every { every_ms } => Some(*every_ms),
            Self::Cron { .. } => None,
        }
    }

    /// The first slot strictly after `t`. `anchor` is the job's creation time (interval grid).
    /// `None` when a cron expression has no later occurrence.
    pub fn next_after(&self, t: i64, anchor: i64) -> Option<i64> {
        match self {
            Self::Every { every_ms } => {
                let k = (t.saturating_sub(anchor)).div_euclid(*every_ms) + 1;
                Some(anchor.saturating_add(k.max(1).saturating_mul(*every_ms)))
            }
            Self::Cron { cron, .. } => {
                let next = cron.find_next_occurrence(&utc(t)?, false).ok()?;
                Some(next.timestamp_millis())
            }
        }
    }

    /// The newest slot in `(after, now]`, if any: what a wake at `now` fires when the last
    /// fired slot (or the creation time) is `after`. Older slots in that range are skipped.
    pub fn due(&self, after: i64, now: i64, anchor: i64) -> Option<i64> {
        let first = self.next_after(after, anchor)?;
        if first > now {
            return None;
        }
        let latest = match self {
            Self::Every { every_ms } => {
                anchor.saturating_add((now - anchor).div_euclid(*every_ms) * every_ms)
            }
            Self::Cron { cron, .. } => utc(now)
                .and_then(|now| cron.find_previous_occurrence(&now, true).ok())
                .map_or(first, |t| t.timestamp_millis()),
        };
        Some(latest.max(first))
    }
}

impl fmt::Display for Schedule {
    /// The canonical text form, which [`Schedule::parse`] reads back.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Cron { expr, .. } => f.write_str(expr),
            Self::Every { every_ms } => {
                let ms = *every_ms;
                let (n, unit) = [(DAY_MS, "d"), (HOUR_MS, "h"), (MINUTE_MS, "m")]
                    .into_iter()
                    .chain([(SECOND_MS, "s"), (1, "ms")])
                    .find(|(size, _)| ms % size == 0)
                    .map_or((ms, "ms"), |(size, unit)| (ms / size, unit));
                write!(f, "every {n}{unit}")
            }
        }
    }
}

fn parser() -> CronParser {
    CronParser::builder()
        .seconds(Seconds::Optional)
        .year(Year::Disallowed)
        .build()
}

/// The fields of a 5-field expression, with what each accepts.
const FIELDS: [(&str, &str); 6] = [
    ("second", "0-59"),
    ("minute", "0-59"),
    ("hour", "0-23"),
    ("day-of-month", "1-31, L, W"),
    ("month", "1-12 or JAN-DEC"),
    ("day-of-week", "0-7 or SUN-SAT, L, #"),
];

/// What is wrong with an expression the parser refused: the field count, or the first field
/// that fails on its own (every other field `*`); else the parser's own words.
fn explain(expr: &str, parser_says: &str) -> String {
    if expr.starts_with('@') {
        return format!("{expr} is not a known nickname");
    }
    let fields: Vec<&str> = expr.split_whitespace().collect();
    let names = match fields.len() {
        5 => &FIELDS[1..],
        6 => &FIELDS[..],
        n => return format!("it has {n} fields"),
    };
    for (i, field) in fields.iter().enumerate() {
        let probe: Vec<&str> = (0..fields.len())
            .map(|j| if j == i { *field } else { "*" })
            .collect();
        if parser().parse(&probe.join(" ")).is_err() {
            let (name, accepted) = names[i];
            return format!(
                "the {name} field {field:?} is not valid ({name}: {accepted}, with , - / *)"
            );
        }
    }
    parser_says.to_string()
}

/// The rest of `text` after a leading `every` word, if it has one.
fn strip_every(text: &str) -> Option<&str> {
    let head = text.get(..5)?;
    if !head.eq_ignore_ascii_case("every") {
        return None;
    }
    let rest = &text[5..];
    (rest.is_empty() || rest.starts_with(char::is_whitespace)).then_some(rest)
}

/// `t` (ms) as a UTC time, rounded down to the second (cron slots are whole seconds).
fn utc(t: i64) -> Option<DateTime<Utc>> {
    DateTime::from_timestamp(t.div_euclid(1000), 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// 2030-01-01T00:00:00Z.
    const T0: i64 = 1_893_456_000_000;

    #[test]
    fn intervals_read_in_every_form_and_print_canonically() {
        for (input, ms, text) in [
            (json!("every 30s"), 30_000, "every 30s"),
            (json!("EVERY 5m"), 300_000, "every 5m"),
            (json!("every 2 hours"), 7_200_000, "every 2h"),
            (json!("every 1d"), 86_400_000, "every 1d"),
            (json!("every 90s"), 90_000, "every 90s"),
            (json!({"every": "45s"}), 45_000, "every 45s"),
            (json!({"every": "every 1h"}), 3_600_000, "every 1h"),
            (json!({"everyMs": 1500}), 1_500, "every 1500ms"),
            (json!({"everyMs": "60000"}), 60_000, "every 1m"),
        ] {
            let schedule = Schedule::from_param(&input).unwrap();
            assert_eq!(schedule.every_ms(), Some(ms), "{input}");
            assert_eq!(schedule.to_string(), text, "{input}");
            assert_eq!(
                Schedule::parse(text).unwrap(),
                schedule,
                "round trip of {text}"
            );
        }
    }

    #[test]
    fn cron_expressions_of_five_and_six_fields() {
        let five = Schedule::parse("  */5  * * * * ").unwrap();
        assert_eq!(five.to_string(), "*/5 * * * *");
        assert_eq!(five.kind(), ScheduleKind::Cron);
        assert_eq!(five.next_after(T0, T0), Some(T0 + 5 * MINUTE_MS));
        let six = Schedule::parse("30 * * * * *").unwrap();
        assert_eq!(six.next_after(T0, T0), Some(T0 + 30 * SECOND_MS));
        assert_eq!(six.next_after(T0 + 30_500, T0), Some(T0 + 90 * SECOND_MS));
        let hourly = Schedule::from_param(&json!({"cron": "@hourly"})).unwrap();
        assert_eq!(hourly.next_after(T0, T0), Some(T0 + HOUR_MS));
    }

    #[test]
    fn bad_schedules_say_what_is_accepted() {
        for (input, says) in [
            (json!("61 * * * *"), "is not a valid cron expression"),
            (json!("* * * *"), "is not a valid cron expression"),
            (json!("0 0 0 1 1 * 2030"), "is not a valid cron expression"),
            (json!("every 500ms"), "below the minimum of 1s"),
            (json!("every 0s"), "below the minimum of 1s"),
            (json!({"everyMs": 999}), "below the minimum of 1s"),
            (json!("every 366d"), "above the maximum of 365d"),
            (json!("every fortnight"), "is not an interval"),
            (json!("every 5 parsecs"), "is not an interval"),
            (json!(""), "empty"),
            (json!(30), "is not a schedule"),
            (json!(null), "missing"),
            (
                json!({"every": "30s", "cron": "* * * * *"}),
                "exactly one of",
            ),
            (json!({"cron": 5}), "expected a string"),
        ] {
            let e = Schedule::from_param(&input).unwrap_err();
            assert!(e.contains(says), "{input}: {e}");
            assert!(e.ends_with(ACCEPTED), "{input}: {e}");
        }
    }

    #[test]
    fn interval_slots_sit_on_the_creation_grid() {
        let every = Schedule::parse("every 1m").unwrap();
        assert_eq!(every.next_after(T0, T0), Some(T0 + MINUTE_MS));
        assert_eq!(every.next_after(T0 + 61_000, T0), Some(T0 + 2 * MINUTE_MS));
        // Nothing is due before the first slot, then exactly the newest slot.
        assert_eq!(every.due(T0, T0 + 59_999, T0), None);
        assert_eq!(every.due(T0, T0 + MINUTE_MS, T0), Some(T0 + MINUTE_MS));
        assert_eq!(
            every.due(T0, T0 + 10 * MINUTE_MS + 5, T0),
            Some(T0 + 10 * MINUTE_MS)
        );
        // A fired slot is not due again.
        assert_eq!(every.due(T0 + MINUTE_MS, T0 + MINUTE_MS + 30_000, T0), None);
    }

    #[test]
    fn cron_due_is_the_newest_missed_occurrence() {
        let five = Schedule::parse("*/5 * * * *").unwrap();
        assert_eq!(five.due(T0, T0 + 4 * MINUTE_MS, T0), None);
        assert_eq!(
            five.due(T0, T0 + 5 * MINUTE_MS, T0),
            Some(T0 + 5 * MINUTE_MS)
        );
        assert_eq!(
            five.due(T0, T0 + 3 * HOUR_MS + 7 * MINUTE_MS, T0),
            Some(T0 + 3 * HOUR_MS + 5 * MINUTE_MS)
        );
        assert_eq!(
            five.due(T0 + 5 * MINUTE_MS, T0 + 9 * MINUTE_MS, T0),
            None,
            "a fired slot is not due again"
        );
    }
}
