//! The commands agents run: each a process group of its own (`sh -c` and all it starts), its
//! output read into an [`Output`] as it comes, its end recorded by a waiter. A command is
//! killed as a whole group: by `process kill`, its timeout, the abort of the run that started
//! it, or the gateway's stop. Background processes belong to their agent (`process` sees only
//! its agent's).

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal};
use tokio::io::AsyncReadExt;
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::watch;

use super::output::{Output, Read};
use crate::ids::RunId;

/// Background processes one agent may keep (running or ended, until removed).
pub const MAX_PER_AGENT: usize = 16;

/// How a command is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Running,
    Exited(i32),
    /// Killed: by `process kill`, its run's abort or the gateway's stop.
    Killed,
    TimedOut,
}

impl State {
    pub fn name(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Exited(_) => "exited",
            Self::Killed => "killed",
            Self::TimedOut => "timeout",
        }
    }

    pub fn exit_code(self) -> Option<i32> {
        match self {
            Self::Exited(code) => Some(code),
            _ => None,
        }
    }
}

/// What to run.
pub struct Spec {
    /// The program and its arguments (`sh -c …`, or the sandbox helper's command line).
    pub argv: Vec<String>,
    pub cwd: PathBuf,
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
    pub agent_id: String,
    pub run_id: RunId,
    pub command: String,
    pub started_ms: i64,
}

/// One command.
pub struct Process {
    pub id: String,
    pub agent_id: String,
    pub run_id: RunId,
    pub command: String,
    pub started_ms: i64,
    started: Instant,
    group: Option<Pid>,
    state: watch::Sender<State>,
    output: Mutex<Output>,
    stdin: tokio::sync::Mutex<Option<ChildStdin>>,
}

impl Process {
    pub fn state(&self) -> State {
        *self.state.borrow()
    }

    /// Resolves once the command has ended.
    pub async fn ended(&self) -> State {
        let mut state = self.state.subscribe();
        match state.wait_for(|s| *s != State::Running).await {
            Ok(ended) => *ended,
            Err(_) => self.state(),
        }
    }

    pub fn elapsed_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }

    /// What came since the previous poll.
    pub fn poll(&self) -> Read {
        self.output.lock().unwrap_or_else(|p| p.into_inner()).poll()
    }

    /// All the output kept.
    pub fn log(&self) -> Read {
        self.output.lock().unwrap_or_else(|p| p.into_inner()).all()
    }

    /// Kills the whole group, recording `why` as its end unless it had ended.
    pub fn kill(&self, why: State) {
        self.state.send_if_modified(|state| {
            let running = *state == State::Running;
            if running {
                *state = why;
            }
            running
        });
        if let Some(group) = self.group {
            let _ = rustix::process::kill_process_group(group, Signal::KILL);
        }
    }

    /// Sends `data` to its standard input.
    pub async fn write(&self, data: &[u8]) -> std::io::Result<()> {
        use tokio::io::AsyncWriteExt;
        let mut stdin = self.stdin.lock().await;
        match stdin.as_mut() {
            Some(pipe) => pipe.write_all(data).await.and(pipe.flush().await),
            None => Err(std::io::Error::other("its standard input is closed")),
        }
    }
}

/// Every command running or kept, by id.
#[derive(Default)]
pub struct Processes {
    by_id: Mutex<HashMap<String, Arc<Process>>>,
}

impl Processes {
    /// Starts `spec` in a process group of its own; its output, end and timeout are watched.
    pub fn start(&self, spec: Spec) -> std::io::Result<Arc<Process>> {
        let mut command = Command::new(&spec.argv[0]);
        command
            .args(&spec.argv[1..])
            .current_dir(&spec.cwd)
            .env_clear()
            .envs(spec.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true);
        let mut child = command.spawn()?;
        let group = child.id().and_then(|id| Pid::from_raw(id as i32));
        let process = Arc::new(Process {
            id: format!("proc-{}", uuid::Uuid::new_v4().simple()),
            agent_id: spec.agent_id,
            run_id: spec.run_id,
            command: spec.command,
            started_ms: spec.started_ms,
            started: Instant::now(),
            group,
            state: watch::Sender::new(State::Running),
            output: Mutex::new(Output::default()),
            stdin: tokio::sync::Mutex::new(child.stdin.take()),
        });
        let readers = watch_output(&process, &mut child);
        tokio::spawn(wait_for_end(process.clone(), child, spec.timeout, readers));
        Ok(process)
    }

    /// Keeps `process` for `process` calls; refused when its agent keeps too many.
    pub fn keep(&self, process: &Arc<Process>) -> Result<(), String> {
        let mut by_id = self.by_id.lock().unwrap_or_else(|p| p.into_inner());
        let mine = by_id
            .values()
            .filter(|p| p.agent_id == process.agent_id)
            .count();
        if mine >= MAX_PER_AGENT {
            return Err(format!(
                "you keep {mine} background processes, the most there may be; remove ended ones (process remove) or kill some"
            ));
        }
        by_id.insert(process.id.clone(), process.clone());
        Ok(())
    }

    /// `agent_id`'s process `id`.
    pub fn get(&self, agent_id: &str, id: &str) -> Option<Arc<Process>> {
        let by_id = self.by_id.lock().unwrap_or_else(|p| p.into_inner());
        by_id.get(id).filter(|p| p.agent_id == agent_id).cloned()
    }

    /// `agent_id`'s processes, newest first.
    pub fn of(&self, agent_id: &str) -> Vec<Arc<Process>> {
        let by_id = self.by_id.lock().unwrap_or_else(|p| p.into_inner());
        let mut mine: Vec<_> = by_id
            .values()
            .filter(|p| p.agent_id == agent_id)
            .cloned()
            .collect();
        mine.sort_by_key(|p| std::cmp::Reverse(p.started_ms));
        mine
    }

    pub fn remove(&self, id: &str) {
        self.by_id
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(id);
    }

    /// Kills every kept process `run_id` started (its run was aborted).
    pub fn kill_run(&self, run_id: &RunId) {
        let by_id = self.by_id.lock().unwrap_or_else(|p| p.into_inner());
        by_id
            .values()
            .filter(|p| p.run_id == *run_id)
            .for_each(|p| p.kill(State::Killed));
    }

    /// Kills every kept process (the gateway stops).
    pub fn kill_all(&self) {
        let by_id = self.by_id.lock().unwrap_or_else(|p| p.into_inner());
        by_id.values().for_each(|p| p.kill(State::Killed));
    }
}

/// Reads stdout and stderr into the process's output as they come; the readers end when the
/// pipes close.
fn watch_output(process: &Arc<Process>, child: &mut Child) -> Vec<tokio::task::JoinHandle<()>> {
    let stdout = child
        .stdout
        .take()
        .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Send + Unpin>);
    let stderr = child
        .stderr
        .take()
        .map(|s| Box::new(s) as Box<dyn tokio::io::AsyncRead + Send + Unpin>);
    let mut readers = Vec::new();
    for mut pipe in [stdout, stderr].into_iter().flatten() {
        let process = process.clone();
        readers.push(tokio::spawn(async move {
            let mut buffer = vec![0u8; 8192];
            while let Ok(n @ 1..) = pipe.read(&mut buffer).await {
                let mut output = process.output.lock().unwrap_or_else(|p| p.into_inner());
                output.push(&buffer[..n]);
            }
        }));
    }
    readers
}

/// How long the end of a command waits for the rest of its output (a process that left the
/// group may hold the pipe open).
const OUTPUT_DRAIN: Duration = Duration::from_secs(2);

/// Waits for the command's end, killing its group at the timeout; records how it ended.
async fn wait_for_end(
    process: Arc<Process>,
    mut child: Child,
    timeout: Duration,
    readers: Vec<tokio::task::JoinHandle<()>>,
) {
    let status = match tokio::time::timeout(timeout, child.wait()).await {
        Ok(status) => status,
        Err(_) => {
            process.kill(State::TimedOut);
            child.wait().await
        }
    };
    let code = status.ok().and_then(|s| s.code());
    // What it started in the background dies with it: the group is the command. Its output is
    // read to the end before its end is told, so an answer never misses its last lines.
    if let Some(group) = process.group {
        let _ = rustix::process::kill_process_group(group, Signal::KILL);
    }
    let _ = tokio::time::timeout(OUTPUT_DRAIN, futures_util::future::join_all(readers)).await;
    process.state.send_if_modified(|state| {
        let running = *state == State::Running;
        if running {
            // A signal's death (no code) that nobody here sent: the kernel's (a limit).
            *state = code.map_or(State::Killed, State::Exited);
        }
        running
    });
}
