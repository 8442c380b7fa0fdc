//! The JSONL transcript mirror (SPEC §4.3): `agents/<agentId>/sessions/<sessionId>.jsonl` in the
//! reference's file format — a `session` header line, then one `message` line per message.
//!
//! The mirror is derived data. Line ids are derived from `seq` (and the timestamp from the
//! message), so rebuilding a file from the database yields the same bytes; that is what lets a
//! restart repair a short file by rewriting it.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::private;
use super::rules::transcript::MessageRow;

/// `<home>/agents`: one folder per agent, holding its `sessions` folder.
pub(crate) fn agents_dir(home: &Path) -> PathBuf {
    home.join("agents")
}

/// `<home>/agents/<agentId>/sessions`: the folder of an agent's transcripts (and its index).
pub(crate) fn sessions_dir(home: &Path, agent_id: &str) -> PathBuf {
    agents_dir(home).join(agent_id).join("sessions")
}

/// `<home>/agents/<agentId>/sessions/<sessionId>.jsonl` (in [`sessions_dir`]; built in one
/// allocation, as every turn asks for it).
pub fn transcript_path(home: &Path, agent_id: &str, session_id: &str) -> PathBuf {
    let size = home.as_os_str().len() + agent_id.len() + session_id.len() + 24;
    let mut path = PathBuf::with_capacity(size);
    path.push(home);
    path.push("agents");
    path.push(agent_id);
    path.push("sessions");
    path.push(session_id);
    path.as_mut_os_string().push(".jsonl");
    path
}

/// [`transcript_path`] as text (its `to_string_lossy`), written into `text` (what it held is
/// dropped) from `home` already made text: a page of rows reuses one buffer, and no row's path
/// is checked for UTF-8 again.
pub(crate) fn transcript_text_into(
    text: &mut String,
    home: &str,
    agent_id: &str,
    session_id: &str,
) {
    text.clear();
    text.push_str(home);
    // As `PathBuf::push` joins a relative part: a separator unless the text ends with one.
    for part in ["agents", agent_id, "sessions", session_id] {
        if !text.is_empty() && !text.ends_with(std::path::MAIN_SEPARATOR) {
            text.push(std::path::MAIN_SEPARATOR);
        }
        text.push_str(part);
    }
    text.push_str(".jsonl");
}

/// The mirror line id of the message with this `seq`: 8 hex digits, like the reference's ids.
pub fn message_id(seq: i64) -> String {
    format!("{seq:08x}")
}

fn header_line(session_id: &str, created_at: i64, cwd: &Path) -> String {
    json!({
        "type": "session",
        "version": 3,
        "id": session_id,
        "timestamp": iso8601(created_at),
        "cwd": cwd.to_string_lossy(),
    })
    .to_string()
}

/// Writes one message's line, newline included, straight to `out`: its fields with keys in
/// order, and the message's JSON text (`message`, which must be one line) copied in as it is
/// stored. For a text that serde_json wrote these are the bytes of the `json!` object of the
/// same fields.
fn write_message_line(
    out: &mut impl Write,
    seq: i64,
    ts: i64,
    message: &str,
) -> std::io::Result<()> {
    write!(out, "{{\"id\":\"{seq:08x}\",\"message\":")?;
    out.write_all(message.as_bytes())?;
    if seq > 1 {
        write!(out, ",\"parentId\":\"{:08x}\"", seq - 1)?;
    } else {
        out.write_all(b",\"parentId\":null")?;
    }
    out.write_all(b",\"timestamp\":\"")?;
    let mut time = [0; ISO8601_LEN];
    match iso8601_into(&mut time, ts) {
        Some(text) => out.write_all(text)?,
        None => out.write_all(iso8601(ts).as_bytes())?,
    }
    out.write_all(b"\",\"type\":\"message\"}\n")
}

/// A stored message's line, from its stored text: that text when it is one line (every body
/// this store writes), else the message written again on one line (a row written by hand).
/// Its timestamp is the message's own.
fn write_stored_line(out: &mut impl Write, seq: i64, stored: &str) -> std::io::Result<()> {
    let message: Value = serde_json::from_str(stored)
        .map_err(|e| std::io::Error::other(format!("stored message {seq} is not JSON: {e}")))?;
    let ts = message
        .get("timestamp")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if stored.bytes().any(|b| b == b'\n' || b == b'\r') {
        return write_message_line(out, seq, ts, &message.to_string());
    }
    write_message_line(out, seq, ts, stored)
}

/// Creates the file with its header if it does not exist yet.
pub(crate) fn ensure_file(
    path: &Path,
    session_id: &str,
    created_at: i64,
    cwd: &Path,
) -> std::io::Result<()> {
    if path.exists() {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        private::create_dir(dir)?;
    }
    let mut file = private::options()
        .create_new(true)
        .write(true)
        .open(path)
        .or_else(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists {
                OpenOptions::new().append(true).open(path)
            } else {
                Err(e)
            }
        })?;
    if file.metadata()?.len() == 0 {
        writeln!(file, "{}", header_line(session_id, created_at, cwd))?;
    }
    Ok(())
}

/// Appends message lines to a mirror open for appending.
pub(crate) fn append_to<'a>(
    file: &File,
    messages: impl Iterator<Item = &'a MessageRow>,
) -> std::io::Result<()> {
    let mut out = BufWriter::new(file);
    for row in messages {
        write_message_line(&mut out, row.seq, row.ts, &row.body)?;
    }
    out.flush()
}

/// Opens a mirror for appending.
pub(crate) fn open_append(path: &Path) -> std::io::Result<File> {
    OpenOptions::new().append(true).open(path)
}

/// Rewrites the whole mirror from stored messages (write to a temporary file, then rename, so a
/// crash mid-rebuild leaves the old file).
pub(crate) fn rebuild(
    path: &Path,
    session_id: &str,
    created_at: i64,
    cwd: &Path,
    messages: impl Iterator<Item = (i64, String)>,
) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        private::create_dir(dir)?;
    }
    let tmp = path.with_extension("jsonl.rebuild");
    let written = (|| {
        let file = private::options()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        let mut out = BufWriter::new(file);
        writeln!(out, "{}", header_line(session_id, created_at, cwd))?;
        for (seq, stored) in messages {
            write_stored_line(&mut out, seq, &stored)?;
        }
        out.flush()
    })();
    if let Err(e) = written {
        // A row that is not JSON stops the rebuild; the half-written copy goes with it.
        let _ = fs::remove_file(&tmp);
        return Err(e);
    }
    fs::rename(&tmp, path)
}

/// True when the file holds the header and exactly `messages` complete message lines.
pub(crate) fn is_complete(path: &Path, messages: i64) -> bool {
    match fs::read(path) {
        Ok(bytes) => {
            let lines = bytes.iter().filter(|b| **b == b'\n').count() as i64;
            bytes.last() == Some(&b'\n') && lines == messages + 1
        }
        Err(_) => false,
    }
}

/// True when the file ends with a whole line and that line is message `seq`'s (for 0: it holds
/// the header alone). Only the last line is read, so a writer that meets a session's mirror
/// for the first time since the start pays for its last message, not its length: what comes
/// before is trusted as the start trusts a mirror whose mark is current (a gap can only come
/// from a failed write, which keeps the mark behind, and the start rewrote those).
pub(crate) fn ends_at(path: &Path, seq: i64) -> bool {
    if seq == 0 {
        return is_complete(path, 0);
    }
    let id = format!("{{\"id\":\"{seq:08x}\",");
    last_line(path).is_ok_and(|line| line.is_some_and(|line| line.starts_with(id.as_bytes())))
}

/// The file's last line without its newline; `None` when the file does not end with one.
/// Read backwards in growing steps: a long last line costs its length, once.
fn last_line(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    let mut file = File::open(path)?;
    let mut end = file.metadata()?.len();
    let mut tail: Vec<u8> = Vec::new();
    let mut step = 4096;
    while end > 0 {
        let start = end.saturating_sub(step);
        let mut chunk = vec![0; (end - start) as usize];
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut chunk)?;
        chunk.append(&mut tail);
        tail = chunk;
        end = start;
        step *= 2;
        let Some((b'\n', line)) = tail.split_last() else {
            return Ok(None);
        };
        if let Some(at) = line.iter().rposition(|b| *b == b'\n') {
            return Ok(Some(line[at + 1..].to_vec()));
        }
    }
    // The file is one line (or empty).
    Ok(tail.split_last().map(|(_, line)| line.to_vec()))
}

/// Milliseconds since the epoch as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn iso8601(ms: i64) -> String {
    let mut time = [0; ISO8601_LEN];
    match iso8601_into(&mut time, ms) {
        Some(text) => String::from_utf8_lossy(text).into_owned(),
        None => {
            let (y, m, d, rem, millis) = civil_time(ms);
            format!(
                "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
                rem / 3600,
                (rem % 3600) / 60,
                rem % 60
            )
        }
    }
}

/// How long [`iso8601`]'s text is for the years 0 to 9999.
const ISO8601_LEN: usize = 24;

/// [`iso8601`] written into `out`, without `format!` (every mirror line has one); `None` for a
/// year outside 0 to 9999, whose text is longer or signed.
fn iso8601_into(out: &mut [u8; ISO8601_LEN], ms: i64) -> Option<&[u8]> {
    let (y, m, d, rem, millis) = civil_time(ms);
    if !(0..=9999).contains(&y) {
        return None;
    }
    let fields = [
        (y, 4, b'-'),
        (m, 2, b'-'),
        (d, 2, b'T'),
        (rem / 3600, 2, b':'),
        ((rem % 3600) / 60, 2, b':'),
        (rem % 60, 2, b'.'),
        (millis, 3, b'Z'),
    ];
    let mut at = 0;
    for (value, width, after) in fields {
        let mut rest = value;
        for i in (0..width).rev() {
            out[at + i] = b'0' + (rest % 10) as u8;
            rest /= 10;
        }
        out[at + width] = after;
        at += width + 1;
    }
    Some(&out[..at])
}

/// Milliseconds since the epoch as (year, month, day, seconds into the day, milliseconds).
fn civil_time(ms: i64) -> (i64, i64, i64, i64, i64) {
    let secs = ms.div_euclid(1000);
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    (y, m, d, secs.rem_euclid(86_400), ms.rem_euclid(1000))
}

/// Howard Hinnant's days-to-civil algorithm.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_timestamps() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
        assert_eq!(iso8601(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso8601(253_402_300_799_999), "9999-12-31T23:59:59.999Z");
        // Outside the years 0 to 9999: written as `format!` writes them.
        assert_eq!(iso8601(253_402_300_800_000), "10000-01-01T00:00:00.000Z");
        assert_eq!(iso8601(-62_167_219_200_001), "-001-12-31T23:59:59.999Z");
        let mut line = Vec::new();
        write_message_line(&mut line, 1, -62_167_219_200_001, "{}").unwrap();
        let line: Value = serde_json::from_slice(&line).unwrap();
        assert_eq!(line["timestamp"], "-001-12-31T23:59:59.999Z");
    }

    #[test]
    fn a_row_written_by_hand_over_several_lines_is_mirrored_on_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        let by_hand =
            "{\n  \"role\": \"user\",\r\n  \"content\": \"a\\nb\",\n  \"timestamp\": 7\n}";
        let ours = stored(&["m2"]).remove(0).body;
        rebuild(
            &path,
            "sid",
            5,
            dir.path(),
            [(1, by_hand.to_string()), (2, ours.clone())].into_iter(),
        )
        .unwrap();
        let text = fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 3, "the header and one line a message: {text}");
        let first: Value = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(first["message"]["content"], "a\nb");
        assert_eq!(first["timestamp"], iso8601(7));
        assert!(
            lines[2].contains(&ours),
            "a body of ours is copied as it is stored"
        );
        let bad = rebuild(
            &path,
            "sid",
            5,
            dir.path(),
            [(1, "{".to_string())].into_iter(),
        );
        assert!(
            bad.unwrap_err()
                .to_string()
                .contains("stored message 1 is not JSON")
        );
        assert!(
            !path.with_extension("jsonl.rebuild").exists(),
            "a failed rebuild leaves no half-written copy"
        );
        assert_eq!(
            fs::read_to_string(&path).unwrap(),
            text,
            "nor touches the file"
        );
    }

    #[test]
    fn the_transcript_path_as_text_is_the_paths_text() {
        let mut text = String::from("left over");
        for home in ["/var/lib/sb", "/var/lib/sb/", "state", "", "/"] {
            for (agent, session) in [("main", "0192-ab"), ("ops", "")] {
                transcript_text_into(&mut text, home, agent, session);
                let path = transcript_path(Path::new(home), agent, session);
                assert_eq!(text, path.to_string_lossy(), "home {home:?}");
            }
        }
    }

    /// Messages of `texts` as an append stores them (numbered from 1, encoded once).
    fn stored(texts: &[&str]) -> Vec<MessageRow> {
        let messages = texts
            .iter()
            .enumerate()
            .map(|(i, text)| {
                serde_json::from_value(json!({"role": "user", "content": text, "timestamp": i}))
                    .unwrap()
            })
            .collect();
        super::super::rules::transcript::number(0, messages)
            .unwrap()
            .into_rows()
    }

    #[test]
    fn rebuild_and_append_give_the_same_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.jsonl");
        let b = dir.path().join("b.jsonl");
        let rows = stored(&["m1", "m2", "m3"]);
        ensure_file(&a, "sid", 5, dir.path()).unwrap();
        let file = open_append(&a).unwrap();
        append_to(&file, rows.iter()).unwrap();
        let texts = rows.iter().map(|row| (row.seq, row.body.clone()));
        rebuild(&b, "sid", 5, dir.path(), texts).unwrap();
        assert_eq!(fs::read(&a).unwrap(), fs::read(&b).unwrap());
        assert!(is_complete(&a, 3));
        assert!(!is_complete(&a, 4));
        assert!(ends_at(&a, 3));
        assert!(!ends_at(&a, 2) && !ends_at(&a, 4));
        let lines: Vec<Value> = fs::read_to_string(&a)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines[0]["type"], "session");
        assert_eq!(lines[0]["version"], 3);
        assert_eq!(lines[2]["parentId"], "00000001");
        assert_eq!(lines[3]["message"]["content"], "m3");
    }

    #[test]
    fn where_a_mirror_ends_is_read_from_its_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("s.jsonl");
        assert!(!ends_at(&path, 1), "no file");
        ensure_file(&path, "sid", 5, dir.path()).unwrap();
        assert!(ends_at(&path, 0) && !ends_at(&path, 1), "the header alone");
        // A last line longer than every step of the backward read but the last.
        let long = "x".repeat(100_000);
        let rows = stored(&["m1", &long]);
        let file = open_append(&path).unwrap();
        append_to(&file, rows.iter()).unwrap();
        assert!(ends_at(&path, 2) && !ends_at(&path, 1) && !ends_at(&path, 0));
        // A line cut short by a failed write: the file does not end where its mark says.
        let bytes = fs::read(&path).unwrap();
        fs::write(&path, &bytes[..bytes.len() - 10]).unwrap();
        assert!(!ends_at(&path, 2) && !ends_at(&path, 1));
        // One line in all, without the header: message 1's line is found at the file's start.
        let mut line = Vec::new();
        write_message_line(&mut line, 1, rows[0].ts, &rows[0].body).unwrap();
        fs::write(&path, &line).unwrap();
        assert!(ends_at(&path, 1) && !ends_at(&path, 2));
    }

    #[test]
    fn a_message_line_is_the_json_object_of_its_fields() {
        let message = json!({"role": "assistant", "content": [{"type": "text", "text": "é\"\n"}],
            "timestamp": 1_795_717_272_830_i64, "usage": {"input": 1}});
        for seq in [1, 2, 300] {
            let parent = if seq > 1 {
                json!(message_id(seq - 1))
            } else {
                Value::Null
            };
            let object = json!({"type": "message", "id": message_id(seq), "parentId": parent,
                "timestamp": iso8601(1_795_717_272_830), "message": message});
            let mut line = Vec::new();
            write_message_line(&mut line, seq, 1_795_717_272_830, &message.to_string()).unwrap();
            assert_eq!(String::from_utf8(line).unwrap(), format!("{object}\n"));
        }
    }
}
