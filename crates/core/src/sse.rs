//! Server-sent events, framed from a stream's bytes as they arrive (the WHATWG
//! `text/event-stream` format): lines end in CRLF, LF or CR; a blank line ends an event; `data`
//! lines join with LF; `event` names it (`message` when none does); `id` sets the last event
//! id, which every later event carries until another `id` line changes it (an empty one
//! clears it, one holding a NUL is ignored); comments (`:`), `retry` and fields of other names
//! are skipped; a byte-order mark at the start is dropped. An event with no `data` line is not
//! one (its `id` still counts), and an event the stream ends inside is dropped. A line that is
//! not UTF-8 is an error ([`NotUtf8`]) and is left behind: the next call goes on after it.
//!
//! One framer for every such stream: a model's reply (`runtime::providers`) and signal-cli's
//! event stream (`channels::signal`). Written here rather than taken from a crate: the one we
//! used framed each event through a parser-combinator per line and copied the rest of its
//! buffer after every line, some 7,500 instructions an event, as much as reading the event's
//! JSON (docs/decisions.md, "A model's stream is framed here" and "One framer for every
//! event stream").

/// The framer: bytes in ([`Decoder::feed`]), whole events out ([`Decoder::next_event`]).
#[derive(Default)]
pub struct Decoder {
    /// Bytes received and not yet framed, from `at` on.
    buf: Vec<u8>,
    at: usize,
    /// The last line ended in CR: a LF right after it ends nothing.
    after_cr: bool,
    /// Past the stream's first bytes (where a byte-order mark may be).
    started: bool,
    event: String,
    /// The event's `data` lines so far, each ended by LF: empty until one comes.
    data: String,
    /// The last event id the stream set, if it set one.
    last_id: Option<String>,
}

/// One event: its name, its data, and the stream's last event id as it stood at the event's
/// end (what a client sends back as `Last-Event-ID` to resume after it).
#[derive(Debug, PartialEq, Eq)]
pub struct Event {
    pub event: String,
    pub data: String,
    pub id: Option<String>,
}

/// A line that is not UTF-8.
#[derive(Debug, PartialEq, Eq)]
pub struct NotUtf8;

impl Decoder {
    /// Takes the next bytes of the body.
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.at > 0 {
            self.buf.drain(..self.at);
            self.at = 0;
        }
        self.buf.extend_from_slice(bytes);
        if !self.started && self.buf.len() >= 3 {
            self.started = true;
            if self.buf.starts_with(b"\xEF\xBB\xBF") {
                self.at = 3;
            }
        }
    }

    /// The next whole event in the bytes fed so far, if there is one.
    pub fn next_event(&mut self) -> Result<Option<Event>, NotUtf8> {
        while let Some(line) = self.next_line() {
            let (start, end) = line;
            if start == end {
                if let Some(event) = self.dispatch() {
                    return Ok(Some(event));
                }
                continue;
            }
            self.field(start, end)?;
        }
        Ok(None)
    }

    /// The next whole line, as a range of `buf`, past its end.
    fn next_line(&mut self) -> Option<(usize, usize)> {
        if !self.started {
            return None;
        }
        // A line that ended in CR: the LF of a CRLF may come with the next bytes.
        if self.after_cr {
            let next = *self.buf.get(self.at)?;
            self.after_cr = false;
            if next == b'\n' {
                self.at += 1;
            }
        }
        let len = memchr::memchr2(b'\n', b'\r', &self.buf[self.at..])?;
        let (start, end) = (self.at, self.at + len);
        self.after_cr = self.buf[end] == b'\r';
        self.at = end + 1;
        Some((start, end))
    }

    fn field(&mut self, start: usize, end: usize) -> Result<(), NotUtf8> {
        let line = &self.buf[start..end];
        let (name, value) = match memchr::memchr(b':', line) {
            Some(0) => return Ok(()),
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &[][..]),
        };
        match name {
            b"data" => {
                self.data
                    .push_str(std::str::from_utf8(value).map_err(|_| NotUtf8)?);
                self.data.push('\n');
            }
            b"event" => {
                let value = std::str::from_utf8(value).map_err(|_| NotUtf8)?;
                self.event.clear();
                self.event.push_str(value);
            }
            b"id" if !value.contains(&0) => {
                let value = std::str::from_utf8(value).map_err(|_| NotUtf8)?;
                // An empty id resets it: a client then resumes from the start.
                self.last_id = (!value.is_empty()).then(|| value.to_owned());
            }
            _ => {}
        }
        Ok(())
    }

    /// The event a blank line ends, if it had data; either way the next one starts anew.
    fn dispatch(&mut self) -> Option<Event> {
        let mut event = std::mem::take(&mut self.event);
        let mut data = std::mem::take(&mut self.data);
        if data.is_empty() {
            return None;
        }
        data.pop();
        if event.is_empty() {
            event.push_str("message");
        }
        let id = self.last_id.clone();
        Some(Event { event, data, id })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(pieces: &[&[u8]]) -> Result<Vec<(String, String)>, NotUtf8> {
        let mut decoder = Decoder::default();
        let mut out = Vec::new();
        for piece in pieces {
            decoder.feed(piece);
            while let Some(e) = decoder.next_event()? {
                out.push((e.event, e.data));
            }
        }
        Ok(out)
    }

    fn pair(event: &str, data: &str) -> (String, String) {
        (event.to_string(), data.to_string())
    }

    #[test]
    fn events_are_framed_as_the_format_says() {
        let stream: &[u8] =
            b"\xEF\xBB\xBFdata: a\n\n: a comment\nevent: ping\ndata:{\"x\":1}\nid: 7\nretry: 5\n\n\
            data\ndata:  two spaces\r\n\r\nevent: only a name\n\ndata: b\rdata: c\r\rdata: cut";
        let expected = vec![
            pair("message", "a"),
            pair("ping", "{\"x\":1}"),
            pair("message", "\n two spaces"),
            pair("message", "b\nc"),
        ];
        assert_eq!(events(&[stream]).unwrap(), expected);
        // The same bytes however they arrive: one at a time, a CRLF and the BOM split.
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(events(&bytes).unwrap(), expected);
        assert_eq!(
            events(&[b"\xEF", b"\xBB\xBFdata: x\n\n"]).unwrap(),
            vec![pair("message", "x")]
        );
        assert_eq!(events(&[b"data: \xFF\n\n"]), Err(NotUtf8));
    }

    #[test]
    fn the_last_event_id_goes_with_every_later_event() {
        let mut decoder = Decoder::default();
        let mut ids = Vec::new();
        // A keep-alive comment, an event's name split across two chunks, an id on an event with
        // no data (it still counts), an id with a NUL (ignored), an empty id (clears it).
        for piece in [
            &b": keep-alive\n\nid: 17-1\nevent: rec"[..],
            b"eive\ndata: {\"a\":\r\ndata: 1}\n\n:\n\ndata: x\n\nid: 17-2\n\n",
            b"data: y\n\nid: 9\0\ndata: z\n\nid\ndata: w\n\n",
        ] {
            decoder.feed(piece);
            while let Some(e) = decoder.next_event().unwrap() {
                ids.push((e.id, e.event, e.data));
            }
        }
        let id = |s: &str| Some(s.to_string());
        assert_eq!(
            ids,
            [
                (id("17-1"), "receive".into(), "{\"a\":\n1}".into()),
                (id("17-1"), "message".into(), "x".into()),
                (id("17-2"), "message".into(), "y".into()),
                (id("17-2"), "message".into(), "z".into()),
                (None, "message".into(), "w".into()),
            ]
        );
    }
}
