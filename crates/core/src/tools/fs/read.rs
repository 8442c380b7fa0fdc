//! `read`: a file's lines as text, a window of at most 2,000 lines and 50 KB (the reference's
//! caps), saying where to go on when the file is longer.

use std::io::{BufRead, BufReader};
use std::sync::Arc;

use switchboard_protocol::file_tools::ReadParams;
use switchboard_protocol::session_tools::ToolFailure;

use super::{Answer, FileTools};
use crate::runtime::tool::{ToolContext, ToolHints, TypedTool};

/// Lines one call answers at most.
const MAX_LINES: u64 = 2000;
/// Bytes one call answers at most (whole lines; a longer line is cut).
const MAX_BYTES: usize = 50 * 1024;

pub struct Read(pub Arc<FileTools>);

impl TypedTool for Read {
    type Params = ReadParams;
    type Output = Answer<String>;

    fn name(&self) -> &'static str {
        "read"
    }

    fn hints(&self) -> ToolHints {
        ToolHints::READS
    }

    fn description(&self) -> &'static str {
        "Read a text file in your workspace. `path` is relative to the workspace. Answers the \
         file's lines, at most 2000 lines or 50 KB at a time; for a longer file it says which \
         `offset` (a line number, from 1) to read next, and `limit` asks for fewer lines."
    }

    async fn run(&self, ctx: &ToolContext, params: ReadParams) -> Self::Output {
        self.0
            .in_workspace(ctx, move |workspace| {
                let path = workspace.relative(&params.path)?;
                let file = workspace.open_file(&path, &params.path)?;
                let offset = params.offset.unwrap_or(1).max(1);
                let limit = params.limit.unwrap_or(MAX_LINES).clamp(1, MAX_LINES);
                window(BufReader::new(file), &params.path, offset, limit)
            })
            .await
    }
}

/// Lines `offset..offset + limit` of `reader` (from 1), within [`MAX_BYTES`], with a note
/// saying where to go on when more follow.
fn window(
    mut reader: impl BufRead,
    given: &str,
    offset: u64,
    limit: u64,
) -> Result<String, ToolFailure> {
    let failed = |e: std::io::Error| ToolFailure::error(format!("`{given}`: {e}"));
    let mut line = Vec::new();
    let mut number = 0u64;
    let mut text = String::new();
    let mut last = None;
    loop {
        line.clear();
        if reader.read_until(b'\n', &mut line).map_err(failed)? == 0 {
            break;
        }
        number += 1;
        if line.contains(&0) {
            return Err(ToolFailure::error(format!(
                "`{given}` is a binary file; read answers text (inspect it with a command)"
            )));
        }
        if number < offset {
            continue;
        }
        let piece = String::from_utf8_lossy(&line);
        let full = number - offset >= limit || text.len() + piece.len() > MAX_BYTES;
        if full && last.is_some() {
            let shown = last.unwrap_or(number);
            return Ok(format!(
                "{text}\n[Lines {offset}-{shown} of `{given}` shown; more follow: read again with offset={}.]",
                shown + 1
            ));
        }
        text.push_str(&piece[..piece.len().min(MAX_BYTES)]);
        last = Some(number);
    }
    match last {
        Some(_) => Ok(text),
        None if number == 0 => Ok(format!("[`{given}` is empty.]")),
        None => Err(ToolFailure::error(format!(
            "`{given}` has {number} lines; offset {offset} is past its end"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(n: u64) -> String {
        (1..=n).map(|i| format!("line {i}\n")).collect()
    }

    fn error(result: Result<String, ToolFailure>) -> String {
        result.unwrap_err().message().to_string()
    }

    #[test]
    fn a_window_of_lines_says_where_to_go_on() {
        let text = lines(5);
        assert_eq!(window(text.as_bytes(), "f", 1, 10).unwrap(), text);
        assert_eq!(
            window(text.as_bytes(), "f", 2, 2).unwrap(),
            "line 2\nline 3\n\n[Lines 2-3 of `f` shown; more follow: read again with offset=4.]"
        );
        assert_eq!(window(text.as_bytes(), "f", 5, 2).unwrap(), "line 5\n");
        assert_eq!(
            error(window(text.as_bytes(), "f", 9, 2)),
            "`f` has 5 lines; offset 9 is past its end"
        );
        assert_eq!(window(&b""[..], "f", 1, 2).unwrap(), "[`f` is empty.]");
    }

    #[test]
    fn a_long_file_is_cut_at_the_byte_cap_and_a_binary_one_refused() {
        let long: String = (0..2000).map(|i| format!("{i:0>99}\n")).collect();
        let answer = window(long.as_bytes(), "big", 1, 2000).unwrap();
        assert!(answer.len() <= MAX_BYTES + 100, "{}", answer.len());
        assert!(
            answer.ends_with("read again with offset=513.]"),
            "{}",
            &answer[answer.len() - 80..]
        );
        assert_eq!(
            error(window(&b"ab\0cd"[..], "x.bin", 1, 5)),
            "`x.bin` is a binary file; read answers text (inspect it with a command)"
        );
    }
}
