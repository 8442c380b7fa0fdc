//! The gateway's recent log, for `logs.tail` (the reference's `openclaw logs [--follow]`): the
//! binary writes its log to standard error through [`Tee`], which also keeps the last MiB of lines
//! in memory ([`LOGS`]). Cursors are byte offsets into everything written since the process
//! started, so a follower asks "what came after N" and learns when lines it never saw were
//! dropped (`reset`, `skippedBytes`). Secrets are never logged (docs/security.md), so nothing here
//! needs redacting. Each line is answered as the reference writes its log, one JSON object
//! (`{time, level, subsystem, message}`), whichever `--log-format` wrote it: the reference's
//! Logs page and `openclaw logs` show its time, level chip and subsystem, and filter by level.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::{LazyLock, Mutex};

use serde::{Deserialize, Serialize};

/// Where `logs.tail`'s lines come from, as its `file` and `source` say.
const SOURCE: &str = "switchboard gateway (recent log in memory)";
/// Bytes of log kept in memory.
const CAPACITY: usize = 1 << 20;
/// Lines answered when the caller gives no limit, and the most it may ask for.
const DEFAULT_LIMIT: usize = 200;
const MAX_LIMIT: usize = 5_000;
/// Bytes answered when the caller gives no maxBytes, and the most it may ask for.
const DEFAULT_MAX_BYTES: usize = 250_000;

/// The process's log ring.
pub static LOGS: LazyLock<LogRing> = LazyLock::new(LogRing::default);

/// The last [`CAPACITY`] bytes of log lines with their offsets.
#[derive(Default)]
pub struct LogRing {
    inner: Mutex<Ring>,
}

#[derive(Default)]
struct Ring {
    /// (offset of the line's first byte, the line without its newline).
    lines: VecDeque<(u64, String)>,
    bytes: usize,
    /// Bytes written since the start: the cursor of "now".
    end: u64,
}

/// `logs.tail` params.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogsTailParams {
    /// The `cursor` of an earlier answer: only what came after it.
    #[serde(default)]
    pub cursor: Option<u64>,
    #[serde(default)]
    pub limit: Option<usize>,
    #[serde(default)]
    pub max_bytes: Option<usize>,
}

/// `logs.tail` answer, in the reference's shape.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LogsTail {
    /// Where the lines come from, as the reference names its log file (a client starts over
    /// when it changes).
    pub file: String,
    pub source: String,
    /// `memory`: the gateway's own buffer.
    pub source_kind: String,
    /// Pass it back to get what comes next.
    pub cursor: u64,
    pub size: u64,
    pub lines: Vec<String>,
    /// Older lines matched but were left out (limit or maxBytes).
    pub truncated: bool,
    /// Lines after the given cursor were dropped before this call (or the gateway restarted).
    pub reset: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub skipped_bytes: Option<u64>,
}

impl LogRing {
    /// Keeps the lines of `text` (ANSI colour codes removed).
    pub fn append(&self, text: &[u8]) {
        let text = String::from_utf8_lossy(text);
        let mut ring = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        for line in text.split_inclusive('\n') {
            let len = line.len() as u64;
            let clean = strip_ansi(line.trim_end_matches(['\n', '\r']));
            if !clean.is_empty() {
                ring.bytes += clean.len();
                let offset = ring.end;
                ring.lines.push_back((offset, clean));
            }
            ring.end += len;
        }
        while ring.bytes > CAPACITY {
            match ring.lines.pop_front() {
                Some((_, line)) => ring.bytes -= line.len(),
                None => break,
            }
        }
    }

    /// The lines after `cursor` (all kept lines without one), newest last, within the limits.
    pub fn tail(&self, p: &LogsTailParams) -> LogsTail {
        let limit = p.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
        let max_bytes = p.max_bytes.unwrap_or(DEFAULT_MAX_BYTES).clamp(1, CAPACITY);
        let ring = self.inner.lock().unwrap_or_else(|p| p.into_inner());
        let oldest = ring.lines.front().map_or(ring.end, |(o, _)| *o);
        let (from, reset, skipped) = match p.cursor {
            None => (0, false, None),
            Some(c) if c > ring.end => (0, true, None),
            Some(c) if c < oldest => (c, true, Some(oldest - c)),
            Some(c) => (c, false, None),
        };
        let matching: Vec<&String> = ring
            .lines
            .iter()
            .filter(|(offset, _)| *offset >= from)
            .map(|(_, line)| line)
            .collect();
        let mut lines = Vec::new();
        let mut bytes = 0;
        for line in matching.iter().rev() {
            if lines.len() == limit || bytes + line.len() > max_bytes {
                break;
            }
            bytes += line.len();
            lines.push(reference_line(line));
        }
        let truncated = lines.len() < matching.len();
        lines.reverse();
        LogsTail {
            file: SOURCE.into(),
            source: SOURCE.into(),
            source_kind: "memory".into(),
            cursor: ring.end,
            size: ring.end,
            lines,
            truncated,
            reset,
            skipped_bytes: skipped,
        }
    }
}

/// `line` as the reference's log line: `{time, level, subsystem, message}` read from a line of
/// our text format (`<time> <LEVEL> <spans>: <target>: <message> <fields>`) or of our JSON
/// format (`{timestamp, level, target, message, …fields}`); a line of neither (the rest of a
/// message that spans lines) as it is.
fn reference_line(line: &str) -> String {
    let parsed = match line.starts_with('{') {
        true => from_json(line),
        false => from_text(line),
    };
    match parsed {
        Some((time, level, subsystem, message)) => serde_json::json!({
            "time": time, "level": level.to_lowercase(), "subsystem": subsystem,
            "message": message,
        })
        .to_string(),
        None => line.to_string(),
    }
}

type Parts = (String, String, String, String);

fn from_text(line: &str) -> Option<Parts> {
    let (time, rest) = line.split_once(' ')?;
    if !time.contains('T') {
        return None;
    }
    let rest = rest.trim_start();
    let (level, rest) = rest.split_once(' ')?;
    if !["TRACE", "DEBUG", "INFO", "WARN", "ERROR"].contains(&level) {
        return None;
    }
    // The target is the first `path: ` (a span is `name{fields}: `).
    let mut from = 0;
    while let Some(at) = rest[from..].find(": ") {
        let end = from + at;
        let start = rest[..end].rfind(' ').map_or(0, |s| s + 1);
        let word = &rest[start..end];
        if !word.is_empty()
            && word
                .chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == ':')
        {
            return Some((
                time.into(),
                level.into(),
                word.into(),
                rest[end + 2..].into(),
            ));
        }
        from = end + 2;
    }
    Some((time.into(), level.into(), String::new(), rest.trim().into()))
}

fn from_json(line: &str) -> Option<Parts> {
    let serde_json::Value::Object(mut map) = serde_json::from_str(line).ok()? else {
        return None;
    };
    let mut take = |key: &str| match map.remove(key) {
        Some(serde_json::Value::String(s)) => s,
        _ => String::new(),
    };
    let (time, level, target, mut message) = (
        take("timestamp"),
        take("level"),
        take("target"),
        take("message"),
    );
    map.remove("spans");
    for (key, value) in map {
        let value = match value {
            serde_json::Value::String(s) => s,
            other => other.to_string(),
        };
        message.push_str(&format!(" {key}={value}"));
    }
    Some((time, level, target, message))
}

/// A log writer: standard error, and [`LOGS`].
pub struct Tee;

impl Write for Tee {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        LOGS.append(buf);
        io::stderr().write_all(buf)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stderr().flush()
    }
}

/// `text` without ANSI escape sequences (`ESC [ … letter`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for c in chars.by_ref() {
                if c.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_are_answered_as_the_references_log_lines() {
        let ring = LogRing::default();
        ring.append(
            b"2026-11-29T10:00:00.123Z  INFO run{run_id=r1}: switchboard_core::runtime: run ended status=ok\n\
              2026-11-29T10:00:01Z  WARN switchboard_server: a client stopped reading\n\
              {\"timestamp\":\"2026-11-29T10:00:02Z\",\"level\":\"ERROR\",\"target\":\"switchboard_core::store\",\
              \"message\":\"store unreachable\",\"attempt\":3,\"spans\":[]}\n",
        );
        let lines: Vec<serde_json::Value> = (ring.tail(&LogsTailParams::default()).lines.iter())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(
            lines,
            [
                serde_json::json!({"time": "2026-11-29T10:00:00.123Z", "level": "info",
                    "subsystem": "switchboard_core::runtime", "message": "run ended status=ok"}),
                serde_json::json!({"time": "2026-11-29T10:00:01Z", "level": "warn",
                    "subsystem": "switchboard_server", "message": "a client stopped reading"}),
                serde_json::json!({"time": "2026-11-29T10:00:02Z", "level": "error",
                    "subsystem": "switchboard_core::store",
                    "message": "store unreachable attempt=3"}),
            ]
        );
    }

    #[test]
    fn a_follower_gets_what_came_after_its_cursor_and_hears_of_a_gap() {
        let ring = LogRing::default();
        ring.append(b"\x1b[32mINFO\x1b[0m one\nINFO two\n");
        let first = ring.tail(&LogsTailParams::default());
        assert_eq!(
            first.lines,
            ["INFO one", "INFO two"],
            "neither format: as written"
        );
        assert!(!first.reset && !first.truncated);
        ring.append(b"INFO three\n");
        let next = ring.tail(&LogsTailParams {
            cursor: Some(first.cursor),
            ..LogsTailParams::default()
        });
        assert_eq!(next.lines, ["INFO three"]);
        let limited = ring.tail(&LogsTailParams {
            limit: Some(2),
            ..LogsTailParams::default()
        });
        assert_eq!((limited.lines.len(), limited.truncated), (2, true));
        // A cursor from before a restart (beyond the end) starts over, saying so.
        let stale = ring.tail(&LogsTailParams {
            cursor: Some(next.cursor + 1_000),
            ..LogsTailParams::default()
        });
        assert!(stale.reset);
        assert_eq!(stale.lines.len(), 3);
        // Lines dropped for space are reported as skipped bytes.
        let big = "x".repeat(1_000);
        for _ in 0..(CAPACITY / 1_000 + 10) {
            ring.append(format!("{big}\n").as_bytes());
        }
        let gap = ring.tail(&LogsTailParams {
            cursor: Some(0),
            limit: Some(1),
            ..LogsTailParams::default()
        });
        assert!(gap.reset && gap.skipped_bytes.unwrap() > 0);
    }
}
