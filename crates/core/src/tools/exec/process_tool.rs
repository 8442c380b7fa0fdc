//! `process`: the calling agent's background processes — list, poll, log, write, kill,
//! remove. Another agent's processes do not exist for it.

use std::sync::Arc;

use switchboard_protocol::exec_tools::{ProcessAction, ProcessAnswer, ProcessParams, ProcessRow};
use switchboard_protocol::session_tools::ToolFailure;

use super::{ExecTools, Process, RUNS_COMMANDS, State, state_of};
use crate::runtime::tool::{ToolContext, ToolHints, TypedTool};
use crate::tools::Answer;

pub struct ProcessTool(pub Arc<ExecTools>);

impl TypedTool for ProcessTool {
    type Params = ProcessParams;
    type Output = Answer<ProcessAnswer>;

    fn name(&self) -> &'static str {
        "process"
    }

    fn hints(&self) -> ToolHints {
        RUNS_COMMANDS
    }

    fn description(&self) -> &'static str {
        "Manage the background processes exec started: action list (yours, newest first), \
         poll (its state and the output since the last poll), log (all its kept output), \
         write (send data to its input; end a line with \\n), kill, remove (forget one that \
         ended). Every action but list takes processId."
    }

    async fn run(&self, ctx: &ToolContext, params: ProcessParams) -> Self::Output {
        match self.act(&ctx.caller().agent_id, params).await {
            Ok(answer) => Answer::Done(answer),
            Err(failure) => Answer::Failed(failure),
        }
    }
}

impl ProcessTool {
    async fn act(&self, agent: &str, params: ProcessParams) -> Result<ProcessAnswer, ToolFailure> {
        let processes = &self.0.processes;
        let find = || self.find(agent, params.process_id.as_deref());
        match params.action {
            ProcessAction::List => {
                let processes = processes.of(agent).iter().map(|p| row(p)).collect();
                Ok(ProcessAnswer::List { processes })
            }
            ProcessAction::Poll => Ok(ProcessAnswer::State(state_of(&*find()?, false, true))),
            ProcessAction::Log => Ok(ProcessAnswer::State(state_of(&*find()?, true, true))),
            ProcessAction::Kill => {
                let process = find()?;
                process.kill(State::Killed);
                process.ended().await;
                Ok(ProcessAnswer::State(state_of(&process, false, true)))
            }
            ProcessAction::Write => write(&*find()?, params.data.as_deref()).await,
            ProcessAction::Remove => {
                let process = find()?;
                if process.state() == State::Running {
                    let id = &process.id;
                    return Err(ToolFailure::error(format!(
                        "{id} is still running; kill it first (action kill)"
                    )));
                }
                processes.remove(&process.id);
                Ok(ProcessAnswer::Removed {
                    process_id: process.id.clone(),
                    removed: true,
                })
            }
        }
    }

    /// The caller's process `id`, or an error saying how to find it.
    fn find(&self, agent: &str, id: Option<&str>) -> Result<Arc<Process>, ToolFailure> {
        let id = id.unwrap_or_default().trim();
        if id.is_empty() {
            return Err(ToolFailure::error(
                "processId is missing; give the processId exec answered (process list shows them)",
            ));
        }
        self.0.processes.get(agent, id).ok_or_else(|| {
            ToolFailure::error(format!("no process {id} of yours; process list shows them"))
        })
    }
}

async fn write(process: &Process, data: Option<&str>) -> Result<ProcessAnswer, ToolFailure> {
    let Some(data) = data else {
        return Err(ToolFailure::error(
            "data is missing; give the text to send (end a line with \\n)",
        ));
    };
    if process.state() != State::Running {
        return Err(ToolFailure::error(format!(
            "{} has ended ({})",
            process.id,
            process.state().name()
        )));
    }
    process
        .write(data.as_bytes())
        .await
        .map_err(|e| ToolFailure::error(format!("could not write to {}: {e}", process.id)))?;
    Ok(ProcessAnswer::Written {
        process_id: process.id.clone(),
        written: data.len() as u64,
    })
}

fn row(process: &Process) -> ProcessRow {
    let state = process.state();
    ProcessRow {
        process_id: process.id.clone(),
        command: process.command.clone(),
        status: state.name().to_string(),
        exit_code: state.exit_code(),
        started_at: process.started_ms,
        duration_ms: process.elapsed_ms(),
    }
}
