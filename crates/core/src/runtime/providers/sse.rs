//! Server-sent events, framed from a response body's bytes as they arrive (the WHATWG
//! `text/event-stream` format): lines end in CRLF, LF or CR; a blank line ends an event; `data`
//! lines join with LF; `event` names it (`message` when none does); comments (`:`), `id`,
//! `retry` and fields of other names are skipped; a byte-order mark at the start is dropped.
//! An event with no `data` line is not one, and an event the stream ends inside is dropped.
//!
//! Written here rather than taken from a crate: the one we used framed each event through a
//! parser-combinator per line and copied the rest of its buffer after every line, some 7,500
//! instructions an event, as much as reading the event's JSON (docs/decisions.md, "Server-sent
//! events are framed here").

/// The framer: bytes in ([`Decoder::feed`]), whole events out ([`Decoder::next_event`]).
#[derive(Default)]
pub(super) struct Decoder {
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
}

/// One event: its name and its data.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Event {
    pub(super) event: String,
    pub(super) data: String,
}

/// A line that is not UTF-8.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct NotUtf8;

impl Decoder {
    /// Takes the next bytes of the body.
    pub(super) fn feed(&mut self, bytes: &[u8]) {
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
    pub(super) fn next_event(&mut self) -> Result<Option<Event>, NotUtf8> {
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
        Some(Event { event, data })
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
}
