//! The `apply_patch` format of OpenAI Codex and OpenClaw: [`parse`] turns a patch into file
//! operations, [`apply_chunks`] applies an update's chunks to a file's text.
//!
//! Pure: no file system access. The tool that calls this reads and writes the files, so where a
//! model may write is decided there, not here. Every [`PatchError`] is read by the model that
//! wrote the patch: it says what was wrong, where, and what is accepted, so the next call can fix it.

use PatchError::{
    BadChunkLine, ContextNotFound, EmptyChunk, EmptyPath, EmptyUpdate, LinesNotFound, MissingBegin,
    MissingEnd, UnknownOperation,
};

const BEGIN: &str = "*** Begin Patch";
const END: &str = "*** End Patch";
const ADD: &str = "*** Add File:";
const DELETE: &str = "*** Delete File:";
const UPDATE: &str = "*** Update File:";
const MOVE_TO: &str = "*** Move to:";
const END_OF_FILE: &str = "*** End of File";
/// Models that treat the tool like a shell command wrap the patch in a heredoc; Codex accepts these.
const HEREDOC_OPENERS: [&str; 3] = ["<<EOF", "<<'EOF'", "<<\"EOF\""];
/// How many of a chunk's lines a "not found" error quotes: enough to recognise, short enough to read.
const QUOTED_LINES: usize = 5;

/// A parsed patch: its operations in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Patch {
    pub ops: Vec<FileOp>,
}

/// One file operation of a patch.
#[derive(Debug, Clone, PartialEq)]
pub enum FileOp {
    /// Create `path`; `contents` ends with '\n' when it has lines.
    Add {
        path: String,
        contents: String,
    },
    Delete {
        path: String,
    },
    /// Change `path` chunk by chunk, then rename it to `move_to` if given.
    Update {
        path: String,
        move_to: Option<String>,
        chunks: Vec<Chunk>,
    },
}

/// One change inside an update: `old_lines` (context and removed) become `new_lines` (context and added).
#[derive(Debug, Clone, PartialEq)]
pub struct Chunk {
    /// The text after `@@ ` (a line to find first, narrowing where the chunk applies), if any.
    pub context: Option<String>,
    pub old_lines: Vec<String>,
    pub new_lines: Vec<String>,
    /// `*** End of File` followed the chunk.
    pub at_end: bool,
}

/// Why a patch was refused. [`parse`] returns the `invalid patch` variants (line numbers count
/// from 1 in the text as sent); [`apply_chunks`] returns the `cannot apply` ones. Either way
/// nothing should be written: the caller reports the message to the model to resend a fixed patch.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum PatchError {
    #[error(
        "invalid patch: the first line must be '*** Begin Patch' (optionally inside a <<'EOF' ... EOF heredoc), got '{found}'"
    )]
    MissingBegin { found: String },
    #[error("invalid patch: the last line must be '*** End Patch', got '{found}'")]
    MissingEnd { found: String },
    #[error(
        "invalid patch at line {line}: expected '*** Add File: <path>', '*** Delete File: <path>', '*** Update File: <path>' or '*** End Patch', got '{found}' (every line of an added file, blank ones too, starts with '+')"
    )]
    UnknownOperation { line: usize, found: String },
    #[error("invalid patch at line {line}: '{marker}' must be followed by a file path")]
    EmptyPath { line: usize, marker: &'static str },
    #[error(
        "invalid patch at line {line}: '*** Update File: {path}' has no changes; give at least one chunk: '@@' (or '@@ <line to find first>') then ' ' (context), '-' (removed) and '+' (added) lines"
    )]
    EmptyUpdate { line: usize, path: String },
    #[error(
        "invalid patch at line {line}: the chunk has no lines; after '@@' give ' ' (context), '-' (removed) or '+' (added) lines"
    )]
    EmptyChunk { line: usize },
    #[error(
        "invalid patch at line {line}: in an update every line starts with ' ' (context), '-' (removed) or '+' (added), or is '@@ ...' to start a new chunk; got '{found}'"
    )]
    BadChunkLine { line: usize, found: String },
    #[error(
        "cannot apply chunk {chunk} to {path}: the line '{context}' (from '@@ {context}') was not found from line {from_line} on; copy it exactly from the current file and keep chunks in file order"
    )]
    ContextNotFound {
        path: String,
        chunk: usize,
        context: String,
        from_line: usize,
    },
    #[error(
        "cannot apply chunk {chunk} to {path}: these lines were not found {searched}:\n{expected}\ncopy the ' ' and '-' lines exactly from the current file and keep chunks in file order"
    )]
    LinesNotFound {
        path: String,
        chunk: usize,
        searched: String,
        expected: String,
    },
}

/// Parses a whole patch. Surrounding whitespace and a heredoc wrapper are tolerated because
/// models add them; anything else malformed is refused before any file is touched.
pub fn parse(text: &str) -> Result<Patch, PatchError> {
    let mut lines = body(text)?;
    let mut ops = Vec::new();
    while lines.skip_blank() {
        ops.push(file_op(&mut lines)?);
    }
    Ok(Patch { ops })
}

/// The patch body with a cursor; `first` is the line number of `lines[0]` in the text as sent,
/// so errors point at the line the model wrote.
struct Lines<'a> {
    lines: Vec<&'a str>,
    pos: usize,
    first: usize,
}

impl<'a> Lines<'a> {
    fn peek(&self) -> Option<&'a str> {
        self.lines.get(self.pos).copied()
    }

    fn number(&self) -> usize {
        self.first + self.pos
    }

    /// Skips blank lines (separators between operations and chunks); true when a line follows.
    fn skip_blank(&mut self) -> bool {
        while self.peek().is_some_and(|line| line.trim().is_empty()) {
            self.pos += 1;
        }
        self.peek().is_some()
    }
}

/// Checks the `*** Begin Patch` / `*** End Patch` envelope and returns the lines between.
fn body(text: &str) -> Result<Lines<'_>, PatchError> {
    let leading = text.lines().take_while(|l| l.trim().is_empty()).count();
    let mut lines: Vec<&str> = text.trim().lines().collect();
    let opener = HEREDOC_OPENERS.iter().any(|o| lines.first() == Some(o));
    let heredoc = opener && lines.len() >= 4 && lines.last().is_some_and(|l| l.ends_with("EOF"));
    if heredoc {
        lines.pop();
        lines.remove(0);
    }
    let first = lines.first().copied().map(str::trim);
    let last = lines.iter().skip(1).last().copied().map(str::trim);
    let got = |line: Option<&str>| line.unwrap_or_default().to_owned();
    if first != Some(BEGIN) {
        return Err(MissingBegin { found: got(first) });
    }
    if last != Some(END) {
        return Err(MissingEnd { found: got(last) });
    }
    lines.pop();
    lines.remove(0);
    let first = leading + usize::from(heredoc) + 2;
    Ok(Lines {
        lines,
        pos: 0,
        first,
    })
}

fn file_op(lines: &mut Lines<'_>) -> Result<FileOp, PatchError> {
    let line = lines.number();
    let header = lines.peek().unwrap_or_default().trim();
    lines.pos += 1;
    if let Some(path) = path_after(header, ADD, line) {
        let (path, contents) = (path?, added_contents(lines));
        Ok(FileOp::Add { path, contents })
    } else if let Some(path) = path_after(header, DELETE, line) {
        Ok(FileOp::Delete { path: path? })
    } else if let Some(path) = path_after(header, UPDATE, line) {
        update(lines, path?, line)
    } else {
        let found = header.to_owned();
        Err(UnknownOperation { line, found })
    }
}

type Parsed<T> = Result<T, PatchError>;

/// The path after `marker` if `header` starts with it: the rest of the line, trimmed. An empty
/// one is refused: it would name the working directory.
fn path_after(header: &str, marker: &'static str, line: usize) -> Option<Parsed<String>> {
    match header.trim().strip_prefix(marker)?.trim() {
        "" => Some(Err(EmptyPath { line, marker })),
        path => Some(Ok(path.to_owned())),
    }
}

/// The `+` lines after `*** Add File:`; the first other line ends the file (as in Codex).
fn added_contents(lines: &mut Lines<'_>) -> String {
    let mut contents = String::new();
    while let Some(text) = lines.peek().and_then(|line| line.strip_prefix('+')) {
        contents.push_str(text);
        contents.push('\n');
        lines.pos += 1;
    }
    contents
}

fn update(lines: &mut Lines<'_>, path: String, line: usize) -> Result<FileOp, PatchError> {
    let mut move_to = None;
    if let Some(path) = path_after(lines.peek().unwrap_or_default(), MOVE_TO, lines.number()) {
        move_to = Some(path?);
        lines.pos += 1;
    }
    let mut chunks = Vec::new();
    // A line starting with '*' is the next operation (or a mistake `file_op` will name).
    while lines.skip_blank() && !lines.peek().is_some_and(|l| l.starts_with('*')) {
        chunks.push(chunk(lines)?);
    }
    if chunks.is_empty() {
        return Err(EmptyUpdate { line, path });
    }
    Ok(FileOp::Update {
        path,
        move_to,
        chunks,
    })
}

/// One chunk. Its `@@` line may be left out (Codex allows it for the first chunk, and models
/// do it): a chunk only ends at a line that is not a diff line, so no stray line is ever taken
/// for a new chunk; it is refused where it stands.
fn chunk(lines: &mut Lines<'_>) -> Result<Chunk, PatchError> {
    let line = lines.number();
    let header = lines.peek().unwrap_or_default();
    let context = header.strip_prefix("@@ ").map(str::to_owned);
    if context.is_some() || header.trim_end() == "@@" {
        lines.pos += 1;
    }
    let (old_lines, new_lines) = (Vec::new(), Vec::new());
    let mut chunk = Chunk {
        context,
        old_lines,
        new_lines,
        at_end: false,
    };
    let start = lines.pos;
    while let Some(text) = lines.peek() {
        if text.trim() == END_OF_FILE {
            chunk.at_end = lines.pos > start;
            lines.pos += usize::from(chunk.at_end);
            break;
        }
        if !push_line(&mut chunk, text) {
            if lines.pos == start && !text.starts_with('*') {
                let (line, found) = (lines.number(), text.to_owned());
                return Err(BadChunkLine { line, found });
            }
            break;
        }
        lines.pos += 1;
    }
    if lines.pos == start {
        return Err(EmptyChunk { line });
    }
    Ok(chunk)
}

/// Files a diff line under old and/or new lines; false when it is not a diff line. An empty
/// line is empty context: editors and models often drop the lone space of a blank context line.
fn push_line(chunk: &mut Chunk, line: &str) -> bool {
    let mut chars = line.chars();
    let (old, new) = match (chars.next(), chars.as_str()) {
        (None, _) => (Some(""), Some("")),
        (Some(' '), text) => (Some(text), Some(text)),
        (Some('-'), text) => (Some(text), None),
        (Some('+'), text) => (None, Some(text)),
        _ => return false,
    };
    chunk.old_lines.extend(old.map(str::to_owned));
    chunk.new_lines.extend(new.map(str::to_owned));
    true
}

/// Where one chunk's lines go: `(start, old_len, new_lines)`.
type Replacement = (usize, usize, Vec<String>);

/// The new contents of `path` (for messages) after applying `chunks` to `original`.
///
/// Chunks are located in order, each after the previous one, and all before any is applied, so
/// a failing chunk leaves nothing half-done. As in Codex, context lines are written as the patch
/// gives them. The result ends with a newline (unless empty) and keeps the file's line ending: a
/// file whose every line ends in CRLF stays CRLF.
pub fn apply_chunks(path: &str, original: &str, chunks: &[Chunk]) -> Result<String, PatchError> {
    let newlines = original.matches('\n').count();
    let crlf = newlines > 0 && original.matches("\r\n").count() == newlines;
    let eol = if crlf { "\r\n" } else { "\n" };
    let mut lines: Vec<String> = original.split(eol).map(str::to_owned).collect();
    if lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
    // Back to front, so earlier starts stay valid; equal starts keep the chunks' order.
    for (start, old_len, new_lines) in locate(path, &lines, chunks)?.into_iter().rev() {
        let end = (start + old_len).min(lines.len());
        lines.splice(start.min(end)..end, new_lines);
    }
    let last_eol = if lines.is_empty() { "" } else { eol };
    Ok(lines.join(eol) + last_eol)
}

fn locate(path: &str, lines: &[String], chunks: &[Chunk]) -> Result<Vec<Replacement>, PatchError> {
    let (mut from, mut replacements) = (0, Vec::new());
    for (index, chunk) in chunks.iter().enumerate() {
        let (path, chunk_number) = (path.to_owned(), index + 1);
        if let Some(context) = &chunk.context {
            let Some(at) = seek(lines, std::slice::from_ref(context), from, false) else {
                let (context, from_line) = (context.clone(), from + 1);
                return Err(ContextNotFound {
                    path,
                    chunk: chunk_number,
                    context,
                    from_line,
                });
            };
            from = at + 1;
        }
        let Some(replacement) = place(lines, chunk, from) else {
            let searched = match chunk.at_end {
                true => "at the end of the file".to_owned(),
                false => format!("from line {} on", from + 1),
            };
            let expected = quote(&chunk.old_lines);
            return Err(LinesNotFound {
                path,
                chunk: chunk_number,
                searched,
                expected,
            });
        };
        // A pure insertion does not move the search: the next chunk may still be near it.
        if !chunk.old_lines.is_empty() {
            from = replacement.0 + replacement.1;
        }
        replacements.push(replacement);
    }
    replacements.sort_by_key(|r| r.0);
    Ok(replacements)
}

/// Finds where a chunk applies at or after `from`.
///
/// A chunk with only `+` lines goes right after its `@@` line, or at the end of the file when it
/// has none (Codex always appends; after the named line is what the model meant). When the old
/// lines end with an empty line that the file lacks (the file's last newline), it is retried
/// without it, as Codex does.
fn place(lines: &[String], chunk: &Chunk, from: usize) -> Option<Replacement> {
    if chunk.old_lines.is_empty() {
        let after_context = chunk.context.is_some() && !chunk.at_end;
        let start = if after_context { from } else { lines.len() };
        return Some((start, 0, chunk.new_lines.clone()));
    }
    let (mut old, mut new) = (chunk.old_lines.as_slice(), chunk.new_lines.as_slice());
    let mut found = seek(lines, old, from, chunk.at_end);
    if let (None, Some((last, rest))) = (found, old.split_last())
        && last.is_empty()
    {
        old = rest;
        new = new.strip_suffix(&[String::new()]).unwrap_or(new);
        found = seek(lines, old, from, chunk.at_end);
    }
    Some((found?, old.len(), new.to_vec()))
}

/// Codex's `seek_sequence`: the first index at or after `from` where `pattern` matches, trying
/// exact, then ignoring trailing whitespace, then ignoring surrounding whitespace (models often
/// get indentation slightly wrong). `at_end` anchors the match at the end of the file.
fn seek(lines: &[String], pattern: &[String], from: usize, at_end: bool) -> Option<usize> {
    if pattern.is_empty() {
        return Some(from);
    }
    let last = lines.len().checked_sub(pattern.len())?;
    let starts = if at_end { last.max(from) } else { from }..=last;
    let passes: [fn(&str) -> &str; 3] = [|s| s, str::trim_end, str::trim];
    passes.iter().find_map(|norm| {
        let same = |(want, have): (&String, &String)| norm(want) == norm(have);
        let matches = |at: usize| pattern.iter().zip(lines.iter().skip(at)).all(same);
        starts.clone().find(|&at| matches(at))
    })
}

fn quote(lines: &[String]) -> String {
    let shown = lines.iter().take(QUOTED_LINES).map(|l| format!("> {l}"));
    let mut quoted: Vec<String> = shown.collect();
    if lines.len() > QUOTED_LINES {
        quoted.push(format!("(and {} more)", lines.len() - QUOTED_LINES));
    }
    quoted.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn chunk(context: Option<&str>, old: &[&str], new: &[&str], at_end: bool) -> Chunk {
        let strings = |lines: &[&str]| lines.iter().map(|line| (*line).to_owned()).collect();
        let (old_lines, new_lines) = (strings(old), strings(new));
        let context = context.map(str::to_owned);
        Chunk {
            context,
            old_lines,
            new_lines,
            at_end,
        }
    }

    /// Parses `body` as the chunks of one update of `f.txt` and applies them to `original`.
    fn update(original: &str, body: &str) -> Result<String, PatchError> {
        let text = format!("*** Begin Patch\n*** Update File: f.txt\n{body}\n*** End Patch");
        let patch = parse(&text)?;
        let Some(FileOp::Update { chunks, .. }) = patch.ops.first() else {
            panic!("not one update: {patch:?}");
        };
        apply_chunks("f.txt", original, chunks)
    }

    /// Checks `(original, chunks, expected result)` cases.
    fn check(cases: &[(&str, &str, &str)]) {
        for (original, body, expected) in cases {
            assert_eq!(update(original, body).as_deref(), Ok(*expected), "{body:?}");
        }
    }

    #[test]
    fn parses_every_operation_whitespace_and_heredoc_tolerated() {
        let text = "*** Begin Patch  \n*** Add File: a/new.txt\n+one\n+\n*** Delete File:  old.txt \n\n\
            *** Update File: f.py\n*** Move to: g.py\n@@ def f():\n-  x\n+  y\n\n\
            @@\n z\n\n+w\n*** End of File\n*** Add File: e\n*** End Patch\n";
        // The blank line before the second '@@' is empty context, as in Codex (applying retries without it).
        let chunks = vec![
            chunk(Some("def f():"), &["  x", ""], &["  y", ""], false),
            chunk(None, &["z", ""], &["z", "", "w"], true),
        ];
        let (path, move_to) = ("f.py".to_owned(), Some("g.py".to_owned()));
        let expected = vec![
            FileOp::Add {
                path: "a/new.txt".into(),
                contents: "one\n\n".into(),
            },
            FileOp::Delete {
                path: "old.txt".into(),
            },
            FileOp::Update {
                path,
                move_to,
                chunks,
            },
            FileOp::Add {
                path: "e".into(),
                contents: String::new(),
            },
        ];
        assert_eq!(parse(text).unwrap().ops, expected);
        let wrapped = format!("\n  <<'EOF'\n{text}EOF\n");
        assert_eq!(parse(&wrapped).unwrap().ops, expected);
    }

    #[test]
    fn parse_errors_say_what_where_and_what_is_accepted() {
        let update = |body| format!("*** Begin Patch\n*** Update File: a\n{body}\n*** End Patch");
        let patches = [
            "*** Add File: a\n*** End Patch".to_owned(),
            "*** Begin Patch\n*** Add File: a\n+x\n".to_owned(),
            "*** Begin Patch".to_owned(),
            // Line numbers count the leading blank line and the heredoc line as sent.
            "\n<<EOF\n*** Begin Patch\n*** Add File: a\n+x\noops\n*** End Patch\nEOF".to_owned(),
            "*** Begin Patch\n*** Delete File: \n*** End Patch".to_owned(),
            update("*** Move to:\n@@\n-x"),
            update("\n*** Delete File: b"),
            update("@@ fn x\n*** End of File"),
            update("@@\n*** Delete File: b"),
            update("@@\n\tx = 1"),
            update(" a\né"),
            // After a chunk's lines, a stray line is not silently taken as a new chunk.
            update("-x\n+y\nz\n+w"),
        ];
        let errors = patches.map(|patch| parse(&patch).unwrap_err().to_string());
        assert_eq!(
            errors.join("\n"),
            "\
            invalid patch: the first line must be '*** Begin Patch' (optionally inside a <<'EOF' ... EOF heredoc), got '*** Add File: a'\n\
            invalid patch: the last line must be '*** End Patch', got '+x'\n\
            invalid patch: the last line must be '*** End Patch', got ''\n\
            invalid patch at line 6: expected '*** Add File: <path>', '*** Delete File: <path>', '*** Update File: <path>' or '*** End Patch', got 'oops' (every line of an added file, blank ones too, starts with '+')\n\
            invalid patch at line 2: '*** Delete File:' must be followed by a file path\n\
            invalid patch at line 3: '*** Move to:' must be followed by a file path\n\
            invalid patch at line 2: '*** Update File: a' has no changes; give at least one chunk: '@@' (or '@@ <line to find first>') then ' ' (context), '-' (removed) and '+' (added) lines\n\
            invalid patch at line 3: the chunk has no lines; after '@@' give ' ' (context), '-' (removed) or '+' (added) lines\n\
            invalid patch at line 3: the chunk has no lines; after '@@' give ' ' (context), '-' (removed) or '+' (added) lines\n\
            invalid patch at line 4: in an update every line starts with ' ' (context), '-' (removed) or '+' (added), or is '@@ ...' to start a new chunk; got '\tx = 1'\n\
            invalid patch at line 4: in an update every line starts with ' ' (context), '-' (removed) or '+' (added), or is '@@ ...' to start a new chunk; got 'é'\n\
            invalid patch at line 5: in an update every line starts with ' ' (context), '-' (removed) or '+' (added), or is '@@ ...' to start a new chunk; got 'z'"
        );
    }

    #[test]
    fn apply_errors_quote_what_was_not_found_and_where_the_search_began() {
        let cases = [
            ("a\nb\n", "@@ fn main()\n-a"),
            ("a\nb\n", "-a\n-b\n-c\n-d\n-e\n-f\n-g"),
            // The second chunk is searched after the first, so chunks out of file order fail.
            ("a\nb\n", "-b\n+B\n@@\n-a\n+A"),
            ("x\ny\n", "-x\n+z\n*** End of File"),
        ];
        let errors = cases.map(|(original, body)| update(original, body).unwrap_err().to_string());
        assert_eq!(
            errors.join("\n"),
            "\
            cannot apply chunk 1 to f.txt: the line 'fn main()' (from '@@ fn main()') was not found from line 1 on; copy it exactly from the current file and keep chunks in file order\n\
            cannot apply chunk 1 to f.txt: these lines were not found from line 1 on:\n> a\n> b\n> c\n> d\n> e\n(and 2 more)\n\
            copy the ' ' and '-' lines exactly from the current file and keep chunks in file order\n\
            cannot apply chunk 2 to f.txt: these lines were not found from line 3 on:\n> a\n\
            copy the ' ' and '-' lines exactly from the current file and keep chunks in file order\n\
            cannot apply chunk 1 to f.txt: these lines were not found at the end of the file:\n> x\n\
            copy the ' ' and '-' lines exactly from the current file and keep chunks in file order"
        );
    }

    #[test]
    fn context_header_narrows_where_the_chunk_applies() {
        check(&[
            ("f\n  0\ng\n  0\n", "@@ g\n-  0\n+  2", "f\n  0\ng\n  2\n"),
            // A chunk of only '+' lines goes right after its '@@' line, or at the end without one.
            ("f\n  0\ng\n", "@@ f\n+  1", "f\n  1\n  0\ng\n"),
            ("f\n  0\ng\n", "@@\n+h", "f\n  0\ng\nh\n"),
        ]);
    }

    #[test]
    fn chunks_apply_in_order_each_after_the_previous() {
        check(&[
            ("a\nx\nb\nx\n", " a\n-x\n+X\n@@\n-x\n+Y", "a\nX\nb\nY\n"),
            // An ambiguous match takes the first one after the previous chunk.
            ("a\nx\nb\nx\n", "-x\n+y", "a\ny\nb\nx\n"),
            ("x\na\nx\nb\nx\n", " a\n@@\n-x\n+y", "x\na\ny\nb\nx\n"),
        ]);
    }

    #[test]
    fn end_of_file_anchor_matches_only_at_the_end() {
        check(&[
            ("x\ny\nx\n", "-x\n+z\n*** End of File", "x\ny\nz\n"),
            ("x\ny\n", "@@\n+z\n*** End of File", "x\ny\nz\n"),
        ]);
    }

    #[test]
    fn matching_tolerates_trailing_then_surrounding_whitespace() {
        // Context lines are written as the patch gives them, as in Codex.
        check(&[("  k  \nfoo \t\n  bar\n", " k\n-foo\n-bar\n+baz", "k\nbaz\n")]);
        let (lines, pattern) = (["a ".to_owned(), "a".to_owned()], ["a".to_owned()]);
        // An exact match wins over an earlier loose one.
        assert_eq!(seek(&lines, &pattern, 0, false), Some(1));
    }

    #[test]
    fn newline_conventions_are_kept() {
        check(&[
            ("a\nb", "-b\n+c", "a\nc\n"),
            ("a\r\nb\r\n", " a\n-b\n+c", "a\r\nc\r\n"),
            ("a\n\n", "-a\n+b", "b\n\n"),
            ("a\n", "-a", ""),
            // A trailing empty context line standing for the final newline is retried without it.
            ("a\nb\n", "-b\n+c\n", "a\nc\n"),
        ]);
    }
}
