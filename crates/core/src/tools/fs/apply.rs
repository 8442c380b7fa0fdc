//! `apply_patch`: the reference's patch format ([`super::patch`]) on the workspace. Every
//! file's new content is worked out before anything is written, so a patch that does not
//! apply changes nothing; then each file is written whole (a crash between two files leaves
//! each whole, old or new).

use std::path::PathBuf;
use std::sync::Arc;

use switchboard_protocol::file_tools::{ApplyPatchParams, PatchApplied};
use switchboard_protocol::session_tools::ToolFailure;

use super::patch::{self, FileOp};
use super::{Answer, CHANGES_FILES, FileTools, MAX_EDIT_BYTES, Workspace};
use crate::runtime::tool::{ToolContext, ToolHints, TypedTool};

pub struct ApplyPatch(pub Arc<FileTools>);

impl TypedTool for ApplyPatch {
    type Params = ApplyPatchParams;
    type Output = Answer<PatchApplied>;

    fn name(&self) -> &'static str {
        "apply_patch"
    }

    fn hints(&self) -> ToolHints {
        CHANGES_FILES
    }

    fn description(&self) -> &'static str {
        "Add, change, rename or delete files in your workspace with one patch. `input` is:\n\
         *** Begin Patch\n\
         *** Add File: path/new.txt\n+each line with a plus\n\
         *** Update File: path/old.txt\n@@ a line near the change (optional)\n context line\n-removed line\n+added line\n\
         *** Delete File: path/gone.txt\n\
         *** End Patch\n\
         `*** Move to: path` after an Update File line renames the file. Paths are relative to \
         the workspace. Nothing is changed unless the whole patch applies."
    }

    async fn run(&self, ctx: &ToolContext, params: ApplyPatchParams) -> Self::Output {
        self.0
            .in_workspace(ctx, move |workspace| {
                let parsed =
                    patch::parse(&params.input).map_err(|e| ToolFailure::error(e.to_string()))?;
                let changes = plan(workspace, parsed.ops)?;
                carry_out(workspace, changes)
            })
            .await
    }
}

/// One file's change, worked out.
enum Change {
    Write {
        path: PathBuf,
        given: String,
        content: String,
        added: bool,
    },
    Remove {
        path: PathBuf,
        given: String,
    },
}

/// Each operation's change, every path checked and every update applied in memory.
fn plan(workspace: &Workspace, ops: Vec<FileOp>) -> Result<Vec<Change>, ToolFailure> {
    let mut changes = Vec::new();
    for op in ops {
        match op {
            FileOp::Add { path, contents } => changes.push(Change::Write {
                path: workspace.relative(&path)?,
                given: path,
                content: contents,
                added: true,
            }),
            FileOp::Delete { path } => {
                let relative = workspace.relative(&path)?;
                workspace.open_file(&relative, &path)?;
                changes.push(Change::Remove {
                    path: relative,
                    given: path,
                });
            }
            FileOp::Update {
                path,
                move_to,
                chunks,
            } => {
                let relative = workspace.relative(&path)?;
                let original = workspace.read_all(&relative, &path, MAX_EDIT_BYTES)?;
                let content = patch::apply_chunks(&path, &original, &chunks)
                    .map_err(|e| ToolFailure::error(e.to_string()))?;
                let Some(to) = move_to else {
                    changes.push(Change::Write {
                        path: relative,
                        given: path,
                        content,
                        added: false,
                    });
                    continue;
                };
                changes.push(Change::Write {
                    path: workspace.relative(&to)?,
                    given: to,
                    content,
                    added: false,
                });
                changes.push(Change::Remove {
                    path: relative,
                    given: path,
                });
            }
        }
    }
    Ok(changes)
}

/// Writes and removes as planned, answering what changed.
fn carry_out(workspace: &Workspace, changes: Vec<Change>) -> Result<PatchApplied, ToolFailure> {
    let mut applied = PatchApplied {
        status: "ok".into(),
        ..PatchApplied::default()
    };
    for change in changes {
        match change {
            Change::Write {
                path,
                given,
                content,
                added,
            } => {
                workspace.write(&path, &given, content.as_bytes())?;
                let list = if added {
                    &mut applied.added
                } else {
                    &mut applied.updated
                };
                list.push(path.display().to_string());
            }
            Change::Remove { path, given } => {
                workspace.remove(&path, &given)?;
                applied.deleted.push(path.display().to_string());
            }
        }
    }
    Ok(applied)
}
