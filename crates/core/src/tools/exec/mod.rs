//! The command tools (SPEC §6.5, `group:runtime`): `exec` runs `sh -c` in the agent's
//! workspace with a timeout and an output cap; a command still running after `yieldMs` (or
//! started with `background`) goes on as a background process, which `process` lists, polls,
//! writes to, kills and removes. A command runs with a clean environment (PATH, HOME = the
//! workspace, LANG, and what the call sets): none of the gateway's variables (its keys,
//! tokens) reach it. A sandboxed session's command runs in the sandbox ([`sandbox`]).
//!
//! Every process dies with the abort of the run that started it and with the gateway's stop
//! (`ExecTools::watch`); a command in the foreground dies with its call.

pub mod approvals;
mod output;
mod process_tool;
mod processes;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use switchboard_protocol::exec_tools::{CommandState, ExecParams, PendingApproval};
use switchboard_protocol::session_tools::ToolFailure;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::Answer;
use super::fs::{Workspace, workspace_path};
use crate::config::{Config, ExecAsk};
use crate::runtime::tool::{Caller, ToolContext, ToolHints, ToolRegistry, Typed, TypedTool};
use crate::runtime::{RunEventData, Runtime};
use crate::sandbox::Spec;
use crate::store::RunStatus;
pub use approvals::{Approvals, Decision};
pub use processes::{Process, Processes, State};

/// How long `exec` waits before a command goes on in the background.
const DEFAULT_YIELD: Duration = Duration::from_secs(10);
/// The `PATH` of every command, and where the allowlist looks a program up.
const COMMAND_PATH: &str = "/usr/local/bin:/usr/bin:/bin";
/// How long a command may run unless the call says otherwise.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);

/// A command: what it does is unknown, so a call cut off by a stop is never made again.
const RUNS_COMMANDS: ToolHints = ToolHints {
    read_only_hint: false,
    destructive_hint: true,
    idempotent_hint: false,
    open_world_hint: true,
};

/// What the command tools are built with.
pub struct ExecTools {
    config: Arc<Config>,
    home: PathBuf,
    processes: Arc<Processes>,
    /// The gateway's binary, which builds the sandbox ([`crate::sandbox`]).
    helper: Option<PathBuf>,
    /// Commands waiting for an operator ([`approvals`]).
    approvals: Arc<Approvals>,
}

impl ExecTools {
    pub fn new(
        config: Arc<Config>,
        home: &Path,
        helper: Option<PathBuf>,
        approvals: Arc<Approvals>,
    ) -> Self {
        Self {
            config,
            home: home.to_path_buf(),
            processes: Arc::new(Processes::default()),
            helper,
            approvals,
        }
    }

    /// Holds `command` for an operator when `tools.exec.ask` says so (outside a sandbox,
    /// `on-miss` unless set): `Ok` once it may run.
    async fn approved(
        &self,
        ctx: &ToolContext,
        command: &str,
        cwd: &Path,
    ) -> Result<(), ToolFailure> {
        let caller = ctx.caller();
        let (agent, key) = (&caller.agent_id, caller.session_key.as_str());
        let sandboxed = crate::access::is_sandboxed(&self.config, agent, key);
        let exec = &self.config.tools.exec;
        let ask = exec.ask.unwrap_or(if sandboxed {
            ExecAsk::Off
        } else {
            ExecAsk::OnMiss
        });
        let held = match ask {
            ExecAsk::Off => false,
            ExecAsk::OnMiss => !self.approvals.allowed(agent, command),
            ExecAsk::Always => true,
        };
        if !held {
            return Ok(());
        }
        let timeout = Duration::from_secs(exec.approval_timeout_seconds.max(1));
        let now = ctx.now_ms();
        let request = PendingApproval {
            id: format!("approval-{}", uuid::Uuid::new_v4().simple()),
            agent_id: agent.clone(),
            session_key: caller.session_key.display().to_string(),
            command: command.to_string(),
            cwd: cwd.display().to_string(),
            requested_at: now,
            expires_at: now + timeout.as_millis() as i64,
        };
        tracing::info!(id = %request.id, agent = %agent, "a command waits for an operator's approval");
        match ctx
            .while_waiting(self.approvals.ask(request, timeout))
            .await
        {
            Some(Decision::Approve { .. }) => Ok(()),
            Some(Decision::Deny) => Err(ToolFailure::error(
                "an operator denied this command; do not run it again unless the user asks",
            )),
            None => Err(ToolFailure::error(format!(
                "no operator approved this command within {} s (tools.exec.ask); it was not run",
                timeout.as_secs()
            ))),
        }
    }

    /// Kills the processes of aborted runs, and all of them when `stop` is cancelled.
    pub fn watch(&self, runtime: &Runtime, (tasks, stop): (&TaskTracker, &CancellationToken)) {
        let processes = self.processes.clone();
        let mut events = runtime.subscribe();
        let stop = stop.clone();
        tasks.spawn(async move {
            loop {
                tokio::select! {
                    () = stop.cancelled() => break,
                    event = events.recv() => match event {
                        Ok(event) => {
                            if let RunEventData::Ended { status: RunStatus::Aborted, .. } = event.data {
                                processes.kill_run(&event.run_id);
                            }
                        }
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                        Err(_) => break,
                    },
                }
            }
            processes.kill_all();
        });
    }

    /// The program and arguments that run `command` for `caller` in `folder` of `root`: in
    /// the sandbox when its session is sandboxed.
    fn argv(
        &self,
        caller: &Caller,
        (root, folder): (&Path, &Path),
        command: &str,
    ) -> Result<Vec<String>, ToolFailure> {
        let (agent, key) = (&caller.agent_id, caller.session_key.as_str());
        if !crate::access::is_sandboxed(&self.config, agent, key) {
            return Ok(vec!["/bin/sh".into(), "-c".into(), command.into()]);
        }
        if holds_state_dir(root, &self.home) {
            return Err(ToolFailure::error(held_state_dir(agent, root)));
        }
        let Some(helper) = &self.helper else {
            return Err(ToolFailure::error(
                "this session is sandboxed and this gateway has no sandbox helper (commands of sandboxed sessions run through the switchboard binary's gateway)",
            ));
        };
        let spec = Spec::of(&self.config, agent, root, folder).hiding(&self.home);
        Ok(spec.argv(helper, command))
    }

    /// The folder a command runs in (the workspace, or `workdir` inside it, made when
    /// missing) and the workspace, by their real paths.
    fn folder(
        &self,
        agent_id: &str,
        workdir: Option<&str>,
    ) -> Result<(PathBuf, PathBuf), ToolFailure> {
        let root = workspace_path(&self.home, &self.config, agent_id);
        let cannot = |e: std::io::Error| {
            let root = root.display();
            ToolFailure::error(format!("the workspace {root} cannot be opened: {e}"))
        };
        let workspace = Workspace::open(&root).map_err(cannot)?;
        let real = root.canonicalize().map_err(cannot)?;
        let Some(workdir) = workdir else {
            return Ok((real.clone(), real));
        };
        let relative = workspace.relative(workdir)?;
        workspace.folder(&relative, workdir)?;
        Ok((real.join(relative), real))
    }

    /// The environment of a command: nothing of the gateway's.
    fn environment(
        folder: &Path,
        extra: Option<&std::collections::BTreeMap<String, String>>,
    ) -> Vec<(String, String)> {
        let mut env = vec![
            ("PATH".to_string(), COMMAND_PATH.to_string()),
            ("HOME".to_string(), folder.display().to_string()),
            ("LANG".to_string(), "C.UTF-8".to_string()),
            ("TERM".to_string(), "dumb".to_string()),
        ];
        env.extend(
            extra
                .into_iter()
                .flatten()
                .map(|(k, v)| (k.clone(), v.clone())),
        );
        env
    }
}

/// The state of `process` as a result, with the output since the last poll (`log`: all).
pub fn state_of(process: &Process, all: bool, kept: bool) -> CommandState {
    let read = if all { process.log() } else { process.poll() };
    let state = process.state();
    CommandState {
        process_id: kept.then(|| process.id.clone()),
        status: state.name().to_string(),
        exit_code: state.exit_code(),
        output: read.text,
        truncated: read.truncated,
        duration_ms: process.elapsed_ms(),
    }
}

/// Kills a foreground command whose call was dropped (its run aborted or stopped).
struct Foreground(Option<Arc<Process>>);

impl Drop for Foreground {
    fn drop(&mut self) {
        if let Some(process) = self.0.take() {
            process.kill(State::Killed);
        }
    }
}

pub struct Exec(pub Arc<ExecTools>);

impl TypedTool for Exec {
    type Params = ExecParams;
    type Output = Answer<CommandState>;

    fn name(&self) -> &'static str {
        "exec"
    }

    fn hints(&self) -> ToolHints {
        RUNS_COMMANDS
    }

    fn description(&self) -> &'static str {
        "Run a shell command (sh -c) in your workspace. Answers its exit code and output (the \
         start and the end of a long one). A command still running after yieldMs (default \
         10000) goes on in the background: the answer has its processId, and the process tool \
         polls it, writes to it or kills it. background: true starts it there at once; timeout \
         (seconds, default 1800) stops it."
    }

    async fn run(&self, ctx: &ToolContext, params: ExecParams) -> Self::Output {
        match self.start(ctx, params).await {
            Ok(state) => Answer::Done(state),
            Err(failure) => Answer::Failed(failure),
        }
    }
}

impl Exec {
    async fn start(
        &self,
        ctx: &ToolContext,
        params: ExecParams,
    ) -> Result<CommandState, ToolFailure> {
        let tools = &self.0;
        let caller = ctx.caller();
        if params.command.trim().is_empty() {
            return Err(ToolFailure::error(
                "command is empty; give a shell command such as `ls -la`",
            ));
        }
        let (folder, root) = tools.folder(&caller.agent_id, params.workdir.as_deref())?;
        tools.approved(ctx, &params.command, &folder).await?;
        let spec = processes::Spec {
            argv: tools.argv(caller, (&root, &folder), &params.command)?,
            env: ExecTools::environment(&folder, params.env.as_ref()),
            cwd: folder,
            timeout: params.timeout.map_or(DEFAULT_TIMEOUT, Duration::from_secs),
            agent_id: caller.agent_id.clone(),
            run_id: caller.run_id.clone(),
            command: params.command.clone(),
            started_ms: ctx.now_ms(),
        };
        let process = tools
            .processes
            .start(spec)
            .map_err(|e| ToolFailure::error(format!("the command could not start: {e}")))?;
        let mut foreground = Foreground(Some(process.clone()));
        let wait = match params.background {
            Some(true) => Duration::ZERO,
            _ => params.yield_ms.map_or(DEFAULT_YIELD, Duration::from_millis),
        };
        if tokio::time::timeout(wait, process.ended()).await.is_ok() {
            foreground.0 = None;
            return Ok(state_of(&process, false, false));
        }
        tools.processes.keep(&process).map_err(ToolFailure::error)?;
        foreground.0 = None;
        Ok(state_of(&process, false, true))
    }
}

/// Registers `exec` and `process`; answers the tools, to be watched once the runtime runs.
pub fn register(registry: &mut ToolRegistry, deps: Arc<ExecTools>) {
    registry.register(Arc::new(Typed::new(Exec(deps.clone()))));
    registry.register(Arc::new(Typed::new(process_tool::ProcessTool(deps))));
}

/// Builds, at start, the sandbox of every agent whose sandboxed sessions may run commands,
/// running `true` in it through `helper`: a kernel that lacks a piece stops the gateway here,
/// naming the piece, instead of a sandboxed agent running unconfined or not at all.
pub async fn probe_sandboxes(
    home: &Path,
    config: &Config,
    helper: &Path,
) -> crate::error::CoreResult<()> {
    for id in config.agent_ids() {
        let agent = config.agent(&id);
        // A session of the agent that is sandboxed under every mode but `off`.
        let key = crate::keys::SessionKey::from_canonical(format!("agent:{id}:sandbox-probe"));
        let sandboxed = crate::access::is_sandboxed(config, &id, key.as_str());
        if !sandboxed || crate::access::tool_allowed(config, &key, &agent, "exec").is_err() {
            continue;
        }
        let root = workspace_path(home, config, &id);
        let root = Workspace::open(&root)
            .and_then(|_| root.canonicalize())
            .map_err(|e| {
                crate::error::CoreError::Unavailable(format!(
                    "the workspace {} of agent {id}: {e}",
                    root.display()
                ))
            })?;
        if holds_state_dir(&root, home) {
            return Err(crate::error::CoreError::Unavailable(held_state_dir(
                &id, &root,
            )));
        }
        let spec = Spec::of(config, &id, &root, &root).hiding(home);
        if let Err(why) = crate::sandbox::probe(helper, &spec).await {
            return Err(crate::error::CoreError::Unavailable(format!(
                "agent {id} runs commands in a sandbox (sandbox.mode {}), which cannot be built on this machine: {why}; see docs/sandbox.md",
                agent.sandbox_mode.as_str()
            )));
        }
    }
    Ok(())
}

/// Whether the workspace `root` holds the state dir `home` (or is it): a sandboxed agent's
/// workspace is given to the sandbox user and is read-write inside, so it may not.
fn holds_state_dir(root: &Path, home: &Path) -> bool {
    let home = home.canonicalize().unwrap_or_else(|_| home.to_path_buf());
    home.starts_with(root)
}

fn held_state_dir(agent: &str, root: &Path) -> String {
    format!(
        "the workspace of agent {agent} ({}) holds the gateway's state dir; a sandboxed agent's workspace must be a folder of its own (agents.list[].workspace)",
        root.display()
    )
}
