//! `write` (a whole file) and `edit` (one exact replacement, refused when the text is missing
//! or occurs more than once: the model says which place it means by giving more of it).

use std::sync::Arc;

use switchboard_protocol::file_tools::{EditParams, FileEdited, FileWritten, WriteParams};
use switchboard_protocol::session_tools::ToolFailure;

use super::{Answer, CHANGES_FILES, FileTools, MAX_EDIT_BYTES};
use crate::runtime::tool::{ToolContext, ToolHints, TypedTool};

pub struct Write(pub Arc<FileTools>);

impl TypedTool for Write {
    type Params = WriteParams;
    type Output = Answer<FileWritten>;

    fn name(&self) -> &'static str {
        "write"
    }

    fn hints(&self) -> ToolHints {
        // The same content written twice leaves the same file.
        ToolHints {
            idempotent_hint: true,
            ..CHANGES_FILES
        }
    }

    fn description(&self) -> &'static str {
        "Create or overwrite a file in your workspace with `content` (the whole file). `path` \
         is relative to the workspace; missing folders are made. To change part of a file, \
         use edit or apply_patch."
    }

    async fn run(&self, ctx: &ToolContext, params: WriteParams) -> Self::Output {
        self.0
            .in_workspace(ctx, move |workspace| {
                let path = workspace.relative(&params.path)?;
                let created = workspace.write(&path, &params.path, params.content.as_bytes())?;
                Ok(FileWritten {
                    status: "ok".into(),
                    path: path.display().to_string(),
                    bytes: params.content.len() as u64,
                    created,
                })
            })
            .await
    }
}

pub struct Edit(pub Arc<FileTools>);

impl TypedTool for Edit {
    type Params = EditParams;
    type Output = Answer<FileEdited>;

    fn name(&self) -> &'static str {
        "edit"
    }

    fn hints(&self) -> ToolHints {
        CHANGES_FILES
    }

    fn description(&self) -> &'static str {
        "Replace one exact piece of a file in your workspace: `oldText` (copied from the file, \
         whitespace included; it must occur exactly once) becomes `newText`. When it occurs \
         more than once, give more of the surrounding text."
    }

    async fn run(&self, ctx: &ToolContext, params: EditParams) -> Self::Output {
        self.0
            .in_workspace(ctx, move |workspace| {
                let path = workspace.relative(&params.path)?;
                let text = workspace.read_all(&path, &params.path, MAX_EDIT_BYTES)?;
                let (changed, line) = replace_once(&text, &params)?;
                workspace.write(&path, &params.path, changed.as_bytes())?;
                Ok(FileEdited {
                    status: "ok".into(),
                    path: path.display().to_string(),
                    line,
                })
            })
            .await
    }
}

/// `text` with the one occurrence of `oldText` replaced, and the line it started on.
fn replace_once(text: &str, params: &EditParams) -> Result<(String, u64), ToolFailure> {
    let (old, given) = (&params.old_text, &params.path);
    if old.is_empty() {
        return Err(ToolFailure::error(
            "oldText is empty; give the exact text to replace (to write a whole file, use write)",
        ));
    }
    let found: Vec<usize> = text.match_indices(old.as_str()).map(|(at, _)| at).collect();
    let line_of = |at: usize| text[..at].matches('\n').count() as u64 + 1;
    match found.as_slice() {
        [] => Err(ToolFailure::error(format!(
            "oldText was not found in `{given}`; read the file and copy the text exactly, whitespace and line breaks included"
        ))),
        [at] => {
            let changed = format!(
                "{}{}{}",
                &text[..*at],
                params.new_text,
                &text[at + old.len()..]
            );
            Ok((changed, line_of(*at)))
        }
        many => {
            let lines: Vec<String> = many
                .iter()
                .take(10)
                .map(|at| line_of(*at).to_string())
                .collect();
            Err(ToolFailure::error(format!(
                "oldText occurs {} times in `{given}` (at lines {}); give more of the surrounding text so it occurs once",
                many.len(),
                lines.join(", ")
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edit(old: &str, new: &str) -> EditParams {
        EditParams {
            path: "f.txt".into(),
            old_text: old.into(),
            new_text: new.into(),
        }
    }

    #[test]
    fn one_occurrence_is_replaced_and_its_line_answered() {
        let (changed, line) = replace_once("a\nb\nc\n", &edit("b\n", "B\nB2\n")).unwrap();
        assert_eq!((changed.as_str(), line), ("a\nB\nB2\nc\n", 2));
    }

    #[test]
    fn a_missing_an_ambiguous_or_an_empty_text_is_refused_saying_how_to_fix_it() {
        let message = |old: &str| {
            replace_once("x = 1\ny = 1\n", &edit(old, "2"))
                .unwrap_err()
                .message()
                .to_string()
        };
        assert_eq!(
            message("= 1"),
            "oldText occurs 2 times in `f.txt` (at lines 1, 2); give more of the surrounding text so it occurs once"
        );
        assert!(message("z = 1").starts_with("oldText was not found in `f.txt`"));
        assert!(message("").starts_with("oldText is empty"));
    }
}
