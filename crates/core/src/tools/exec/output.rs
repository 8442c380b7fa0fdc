//! A command's output, kept within a cap: its first [`HEAD`] bytes and its last [`TAIL`], with
//! how much was left out between (a build that prints a megabyte keeps its start, where the
//! command line and the first error are, and its end, where the summary is). A poll reads what
//! came since the previous poll.

use std::collections::VecDeque;

/// Bytes kept from the start.
pub const HEAD: usize = 8 * 1024;
/// Bytes kept from the end.
pub const TAIL: usize = 24 * 1024;

#[derive(Debug, Default)]
pub struct Output {
    head: Vec<u8>,
    tail: VecDeque<u8>,
    /// Every byte the command wrote.
    total: u64,
    /// Bytes read by polls so far.
    polled: u64,
}

/// Text read out of an [`Output`], and whether bytes were left out of it.
#[derive(Debug, Clone, PartialEq)]
pub struct Read {
    pub text: String,
    pub truncated: bool,
}

impl Output {
    pub fn push(&mut self, bytes: &[u8]) {
        self.total += bytes.len() as u64;
        let room = HEAD.saturating_sub(self.head.len());
        let (first, rest) = bytes.split_at(room.min(bytes.len()));
        self.head.extend_from_slice(first);
        self.tail.extend(rest);
        let over = self.tail.len().saturating_sub(TAIL);
        self.tail.drain(..over);
    }

    /// Everything kept.
    pub fn all(&self) -> Read {
        self.since(0)
    }

    /// What came since the previous poll (all of it kept, or its kept part), and marks it read.
    pub fn poll(&mut self) -> Read {
        let read = self.since(self.polled);
        self.polled = self.total;
        read
    }

    /// The kept bytes from byte `from` of the whole output on.
    fn since(&self, from: u64) -> Read {
        let head_len = self.head.len() as u64;
        let tail_start = self.total - self.tail.len() as u64;
        let mut bytes = Vec::new();
        if from < head_len {
            bytes.extend_from_slice(&self.head[from as usize..]);
        }
        let gap = tail_start.saturating_sub(from.max(head_len));
        if gap > 0 {
            bytes.extend_from_slice(format!("\n[… {gap} bytes left out …]\n").as_bytes());
        }
        let skip = from.saturating_sub(tail_start) as usize;
        bytes.extend(self.tail.iter().skip(skip));
        Read {
            text: String::from_utf8_lossy(&bytes).into_owned(),
            truncated: gap > 0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_output_is_kept_whole_and_polls_read_what_is_new() {
        let mut out = Output::default();
        out.push(b"one\n");
        assert_eq!(
            out.poll(),
            Read {
                text: "one\n".into(),
                truncated: false
            }
        );
        out.push(b"two\n");
        assert_eq!(out.poll().text, "two\n");
        assert_eq!(out.poll().text, "");
        assert_eq!(out.all().text, "one\ntwo\n");
    }

    #[test]
    fn long_output_keeps_its_head_and_tail_and_says_how_much_is_left_out() {
        let mut out = Output::default();
        let line = |i: usize| format!("{i:0>9}\n");
        for i in 0..10_000 {
            out.push(line(i).as_bytes());
        }
        let all = out.all();
        assert!(all.truncated);
        assert!(all.text.starts_with(&line(0)));
        assert!(all.text.ends_with(&line(9_999)));
        let left_out = 100_000 - HEAD - TAIL;
        assert!(
            all.text
                .contains(&format!("[… {left_out} bytes left out …]")),
            "{}",
            &all.text[HEAD - 20..HEAD + 40]
        );
        assert_eq!(
            all.text.len(),
            HEAD + TAIL + format!("\n[… {left_out} bytes left out …]\n").len()
        );
        // A poll after it read the head reads only the tail's new part.
        let mut out = Output::default();
        out.push(&[b'a'; HEAD]);
        assert_eq!(out.poll().text.len(), HEAD);
        out.push(&[b'b'; TAIL * 2]);
        let polled = out.poll();
        assert!(polled.truncated && polled.text.ends_with(&"b".repeat(TAIL)));
        assert!(
            polled
                .text
                .starts_with(&format!("\n[… {TAIL} bytes left out …]\n"))
        );
    }
}
