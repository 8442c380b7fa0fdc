//! The reference's SQLite session store (2026.8 and later): `agents/<id>/agent/openclaw-agent.sqlite`,
//! one `session_nodes` row per session key (`entry_json`, the canonical entry) and the
//! transcript's events in `transcript_events` (by `session_id`, in `seq` order; an event of
//! 1 KB or more may be one zstd frame in `event_zstd` instead of text in `event_json`). The file
//! is opened read-only, with its write-ahead log.

use std::io::Read as _;
use std::path::Path;

use rusqlite::{Connection, OpenFlags};
use serde_json::Value;

use super::Found;
use crate::error::{CoreError, CoreResult};

/// Every session of the store at `path`, with its entry and transcript events.
pub(super) fn read(path: &Path) -> CoreResult<Vec<Found>> {
    let fail = |e: rusqlite::Error| CoreError::Invalid(format!("reading {}: {e}", path.display()));
    let db = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(fail)?;
    let mut nodes = db
        .prepare("SELECT session_key, entry_json FROM session_nodes ORDER BY session_key")
        .map_err(fail)?;
    let rows = nodes
        .query_map([], |row| {
            Ok((row.get::<_, String>(0)?, row.get::<_, String>(1)?))
        })
        .map_err(fail)?;
    let mut events = db
        .prepare("SELECT event_json, event_zstd FROM transcript_events WHERE session_id = ?1 ORDER BY seq")
        .map_err(fail)?;
    let mut found = Vec::new();
    for row in rows {
        let (key, entry) = row.map_err(fail)?;
        let entry: Value = serde_json::from_str(&entry).unwrap_or(Value::Null);
        let mut unread = 0;
        let transcript = match entry["sessionId"].as_str() {
            Some(id) => events
                .query_map([id], |row| {
                    Ok((
                        row.get::<_, Option<String>>(0)?,
                        row.get::<_, Option<Vec<u8>>>(1)?,
                    ))
                })
                .map_err(fail)?
                .filter_map(|row| {
                    let event = row.ok().and_then(|(text, packed)| event(text, packed));
                    unread += usize::from(event.is_none());
                    event
                })
                .collect(),
            None => Vec::new(),
        };
        found.push(Found {
            key,
            entry,
            events: transcript,
            unread,
        });
    }
    Ok(found)
}

/// One event: its JSON text, or its zstd frame unpacked.
fn event(text: Option<String>, packed: Option<Vec<u8>>) -> Option<Value> {
    let text = match (text, packed) {
        (Some(text), _) => text,
        (None, Some(packed)) => {
            let mut decoder = ruzstd::decoding::StreamingDecoder::new(packed.as_slice()).ok()?;
            let mut text = String::new();
            decoder.read_to_string(&mut text).ok()?;
            text
        }
        (None, None) => return None,
    };
    serde_json::from_str(&text).ok()
}
