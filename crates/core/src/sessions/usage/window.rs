//! The days a usage read covers: `YYYY-MM-DD` dates in the caller's zone (a fixed offset from
//! UTC), turned into the milliseconds the store keeps.

use switchboard_protocol::usage::UsageWindow;

const DAY_MS: i64 = 86_400_000;
/// The most days one read may cover (`range: "all"` is cut to it).
const MAX_DAYS: i64 = 3_660;

/// A window of whole days in one zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Window {
    /// The zone's offset from UTC (ms).
    offset_ms: i64,
    /// The first and last day, as days since 1970-01-01 in the zone.
    first: i64,
    last: i64,
}

impl Window {
    /// The window `w` names, ending today (`now`) when it gives no dates; an error says which
    /// field is wrong and what is accepted.
    pub(crate) fn of(w: &UsageWindow, now: i64) -> Result<Self, String> {
        let offset_ms = offset_of(w)?;
        let today = (now + offset_ms).div_euclid(DAY_MS);
        let (first, last) = match (&w.start_date, &w.end_date) {
            (Some(start), Some(end)) => (day_of("startDate", start)?, day_of("endDate", end)?),
            (None, None) => (today - (span_of(w)? - 1), today),
            _ => {
                return Err(
                    "startDate and endDate go together (YYYY-MM-DD each); give both or neither"
                        .into(),
                );
            }
        };
        if first > last {
            return Err(format!(
                "startDate {} is after endDate {}",
                date(first),
                date(last)
            ));
        }
        if last - first >= MAX_DAYS {
            return Err(format!(
                "a usage read covers at most {MAX_DAYS} days; {} to {} is {} days",
                date(first),
                date(last),
                last - first + 1
            ));
        }
        Ok(Self {
            offset_ms,
            first,
            last,
        })
    }

    /// The first instant in the window and the first after it (ms since the epoch, UTC).
    pub(crate) fn bounds(&self) -> (i64, i64) {
        (
            self.first * DAY_MS - self.offset_ms,
            (self.last + 1) * DAY_MS - self.offset_ms,
        )
    }

    /// The date (`YYYY-MM-DD`, in the zone) of the instant `ms`.
    pub(crate) fn date_of(&self, ms: i64) -> String {
        date((ms + self.offset_ms).div_euclid(DAY_MS))
    }

    /// Every date of the window, first to last.
    pub(crate) fn dates(&self) -> impl Iterator<Item = String> {
        (self.first..=self.last).map(date)
    }

    pub(crate) fn start_date(&self) -> String {
        date(self.first)
    }

    pub(crate) fn end_date(&self) -> String {
        date(self.last)
    }

    pub(crate) fn days(&self) -> u64 {
        (self.last - self.first + 1) as u64
    }
}

/// Days a window without dates covers: `days`, else `range`.
fn span_of(w: &UsageWindow) -> Result<i64, String> {
    if let Some(days) = w.days {
        return if (1..=MAX_DAYS).contains(&days) {
            Ok(days)
        } else {
            Err(format!("days: {days} is out of range; 1 to {MAX_DAYS}"))
        };
    }
    match w.range.as_deref().unwrap_or("30d") {
        "7d" => Ok(7),
        "30d" => Ok(30),
        "90d" => Ok(90),
        "1y" => Ok(365),
        "all" => Ok(MAX_DAYS),
        other => Err(format!(
            "range: {other:?} is not a range; accepted: 7d, 30d, 90d, 1y, all"
        )),
    }
}

/// The zone's offset (ms): `mode` `utc` or `gateway` (this gateway keeps UTC) is 0; `specific`
/// reads `utcOffset`, or `timeZone: "UTC"`.
fn offset_of(w: &UsageWindow) -> Result<i64, String> {
    match w.mode.as_deref().unwrap_or("utc") {
        "utc" | "gateway" => Ok(0),
        "specific" => match (&w.utc_offset, w.time_zone.as_deref()) {
            (Some(offset), _) => parse_offset(offset),
            (None, Some("UTC" | "Etc/UTC")) => Ok(0),
            (None, _) => Err(
                "mode \"specific\" needs utcOffset (UTC+2, UTC-5:30): zones are read by their \
                 offset here"
                    .into(),
            ),
        },
        other => Err(format!(
            "mode: {other:?} is not a mode; accepted: utc, gateway, specific"
        )),
    }
}

/// `UTC+2`, `UTC-5:30`, `UTC+0` as ms.
fn parse_offset(text: &str) -> Result<i64, String> {
    let bad = || format!("utcOffset: {text:?} is not an offset; accepted: UTC+2, UTC-5:30, UTC+0");
    let rest = text.strip_prefix("UTC").ok_or_else(bad)?;
    if rest.is_empty() {
        return Ok(0);
    }
    let (sign, rest) = match rest.as_bytes()[0] {
        b'+' => (1, &rest[1..]),
        b'-' => (-1, &rest[1..]),
        _ => return Err(bad()),
    };
    let (hours, minutes) = rest.split_once(':').unwrap_or((rest, "0"));
    let number = |t: &str, max: i64| {
        (!t.is_empty() && t.len() <= 2 && t.bytes().all(|b| b.is_ascii_digit()))
            .then(|| t.parse::<i64>().ok())
            .flatten()
            .filter(|n| *n <= max)
    };
    let (Some(h), Some(m)) = (number(hours, 14), number(minutes, 59)) else {
        return Err(bad());
    };
    Ok(sign * (h * 60 + m) * 60_000)
}

/// `YYYY-MM-DD` as days since 1970-01-01.
fn day_of(field: &str, text: &str) -> Result<i64, String> {
    let bad = || format!("{field}: {text:?} is not a date; accepted: YYYY-MM-DD");
    let parts: Vec<&str> = text.split('-').collect();
    let [y, m, d] = parts[..] else {
        return Err(bad());
    };
    if y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return Err(bad());
    }
    let num = |t: &str| t.parse::<i64>().map_err(|_| bad());
    let (y, m, d) = (num(y)?, num(m)?, num(d)?);
    if !(1..=12).contains(&m) || d < 1 || d > days_in_month(y, m) {
        return Err(bad());
    }
    Ok(days_from_civil(y, m, d))
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// `YYYY-MM-DD` of days since 1970-01-01.
fn date(days: i64) -> String {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!("{y:04}-{m:02}-{d:02}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(json: serde_json::Value) -> Result<Window, String> {
        let w: UsageWindow = serde_json::from_value(json).unwrap();
        // 2026-11-29T09:00:00Z
        Window::of(&w, 1_795_942_800_000)
    }

    #[test]
    fn dates_round_trip_through_days() {
        for text in [
            "1970-01-01",
            "2000-02-29",
            "2026-11-29",
            "1999-12-31",
            "2100-03-01",
        ] {
            assert_eq!(date(day_of("d", text).unwrap()), text);
        }
        assert_eq!(day_of("d", "1970-01-02"), Ok(1));
        for bad in [
            "2026-02-30",
            "2026-13-01",
            "26-01-01",
            "2026-1-01",
            "yesterday",
            "2025-02-29",
        ] {
            assert!(
                day_of("startDate", bad).unwrap_err().contains("YYYY-MM-DD"),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_window_without_dates_ends_today_in_the_callers_zone() {
        let utc = window(serde_json::json!({"range": "7d"})).unwrap();
        assert_eq!(
            (utc.start_date(), utc.end_date()),
            ("2026-11-23".into(), "2026-11-29".into())
        );
        assert_eq!(utc.days(), 7);
        // 09:00 UTC is 23:00 the same day at UTC+14, and 23:30 the day before at UTC-9:30.
        let east =
            window(serde_json::json!({"days": 1, "mode": "specific", "utcOffset": "UTC+14"}));
        assert_eq!(east.unwrap().end_date(), "2026-11-29");
        let west =
            window(serde_json::json!({"days": 1, "mode": "specific", "utcOffset": "UTC-9:30"}));
        assert_eq!(west.unwrap().end_date(), "2026-11-28");
    }

    #[test]
    fn bounds_are_the_zones_midnights() {
        let w = window(
            serde_json::json!({"startDate": "2026-11-01", "endDate": "2026-11-02",
            "mode": "specific", "utcOffset": "UTC+2"}),
        )
        .unwrap();
        let (from, to) = w.bounds();
        assert_eq!(to - from, 2 * DAY_MS);
        assert_eq!(w.date_of(from), "2026-11-01");
        assert_eq!(w.date_of(to - 1), "2026-11-02");
        assert_eq!(w.date_of(to), "2026-11-03");
        assert_eq!(w.dates().collect::<Vec<_>>(), ["2026-11-01", "2026-11-02"]);
    }

    #[test]
    fn a_wrong_window_says_which_field_and_what_is_accepted() {
        let cases = [
            (
                serde_json::json!({"startDate": "2026-11-01"}),
                "go together",
            ),
            (
                serde_json::json!({"startDate": "2026-11-05", "endDate": "2026-11-01"}),
                "is after",
            ),
            (serde_json::json!({"range": "2w"}), "accepted: 7d, 30d"),
            (serde_json::json!({"days": 0}), "days: 0 is out of range"),
            (
                serde_json::json!({"mode": "local"}),
                "accepted: utc, gateway, specific",
            ),
            (
                serde_json::json!({"mode": "specific", "timeZone": "Europe/Berlin"}),
                "needs utcOffset",
            ),
            (
                serde_json::json!({"mode": "specific", "utcOffset": "GMT+1"}),
                "accepted: UTC+2",
            ),
            (
                serde_json::json!({"mode": "specific", "utcOffset": "UTC+25"}),
                "accepted: UTC+2",
            ),
        ];
        for (params, says) in cases {
            let error = window(params.clone()).unwrap_err();
            assert!(error.contains(says), "{params}: {error}");
        }
    }
}
