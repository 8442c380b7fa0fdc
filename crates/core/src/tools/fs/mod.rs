//! The file tools (SPEC §6.5, `group:fs`): `read`, `write`, `edit` and `apply_patch`, each on
//! the calling agent's workspace (`agents.list[].workspace`, default
//! `<state dir>/workspace/<agentId>`) and nowhere else ([`beneath`]: the kernel refuses `..`
//! and symlinks that leave it). A sub-agent works in its agent's workspace, so what it writes
//! its parent reads. The file work runs on a blocking thread; a failure is a result the model
//! can act on, saying what was wrong and what is accepted.

mod apply;
mod beneath;
pub mod patch;
mod read;
mod write;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use switchboard_protocol::session_tools::ToolFailure;

use super::Answer;
use crate::config::Config;
use crate::runtime::tool::{ToolContext, ToolHints, ToolRegistry, Typed};
pub use beneath::{PathError, Workspace};

/// The largest file `edit` and `apply_patch` change (a bigger one is changed with a command).
const MAX_EDIT_BYTES: u64 = 4 * 1024 * 1024;

/// A tool that changes files: a second identical call may not do the same (an `edit` whose
/// text is gone), so a call cut off by a stop is not made again.
const CHANGES_FILES: ToolHints = ToolHints {
    read_only_hint: false,
    destructive_hint: true,
    idempotent_hint: false,
    open_world_hint: false,
};

/// What the file tools are built with.
pub struct FileTools {
    config: Arc<Config>,
    home: PathBuf,
}

impl FileTools {
    pub fn new(config: Arc<Config>, home: &Path) -> Self {
        Self {
            config,
            home: home.to_path_buf(),
        }
    }

    /// The workspace of `agent_id`: its `workspace` (`~/…` from the home directory, a relative
    /// path from the state dir), else `<state dir>/workspace/<agentId>`.
    pub fn workspace_of(&self, agent_id: &str) -> PathBuf {
        workspace_path(&self.home, &self.config, agent_id)
    }

    /// Runs `work` on the calling agent's workspace, on a blocking thread.
    async fn in_workspace<T: Send + 'static>(
        &self,
        ctx: &ToolContext,
        work: impl FnOnce(&Workspace) -> Result<T, ToolFailure> + Send + 'static,
    ) -> Answer<T> {
        let root = self.workspace_of(&ctx.caller().agent_id);
        let done = tokio::task::spawn_blocking(move || {
            let workspace = Workspace::open(&root).map_err(|e| {
                ToolFailure::error(format!(
                    "the workspace {} cannot be opened: {e}",
                    root.display()
                ))
            })?;
            work(&workspace)
        })
        .await;
        match done {
            Ok(Ok(value)) => Answer::Done(value),
            Ok(Err(failure)) => Answer::Failed(failure),
            Err(e) => Answer::Failed(ToolFailure::error(format!("the file work failed: {e}"))),
        }
    }
}

/// The workspace of `agent_id` under the state dir `home` (see [`FileTools::workspace_of`]).
pub fn workspace_path(home: &Path, config: &Config, agent_id: &str) -> PathBuf {
    let agent = config.agent(agent_id);
    match agent.workspace.as_deref().map(str::trim) {
        Some(path) if !path.is_empty() => {
            let home_dir = std::env::var_os("HOME").map(PathBuf::from);
            match (path.strip_prefix("~/"), home_dir) {
                (Some(rest), Some(dir)) => dir.join(rest),
                _ => home.join(path),
            }
        }
        _ => home.join("workspace").join(&agent.id),
    }
}

impl From<PathError> for ToolFailure {
    fn from(e: PathError) -> Self {
        ToolFailure::error(e.to_string())
    }
}

/// Registers `read`, `write`, `edit` and `apply_patch`.
pub fn register(registry: &mut ToolRegistry, deps: Arc<FileTools>) {
    registry.register(Arc::new(Typed::new(read::Read(deps.clone()))));
    registry.register(Arc::new(Typed::new(write::Write(deps.clone()))));
    registry.register(Arc::new(Typed::new(write::Edit(deps.clone()))));
    registry.register(Arc::new(Typed::new(apply::ApplyPatch(deps))));
}
