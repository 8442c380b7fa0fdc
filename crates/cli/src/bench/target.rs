//! A target of the bench: a gateway at a URL (with its token and, to read its CPU, its PID) or
//! the floor.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::conn::Conn;

pub const FLOOR: &str = "floor";
/// How long a target let go on must use no CPU before its block starts.
const QUIET: Duration = Duration::from_millis(300);
const QUIET_LIMIT: Duration = Duration::from_secs(10);
/// The CPU a quiet process may use over [`QUIET`]: one clock tick.
const QUIET_CPU_MS: f64 = 10.0;

pub struct Target {
    pub name: String,
    pub url: String,
    pub token: Option<String>,
    pub pid: Option<u32>,
    /// Requests sent to it, `connect` excluded.
    pub sent: Arc<AtomicU64>,
}

impl Target {
    /// `NAME=URL[,token=TOKEN][,pid=PID]`, or `floor` (its URL and PID are filled in once it runs).
    pub fn parse(spec: &str) -> Result<Self> {
        if spec == FLOOR {
            return Ok(Self::new(FLOOR, String::new(), None, None));
        }
        let (name, rest) = spec
            .split_once('=')
            .with_context(|| format!("--target wants NAME=URL[,token=T][,pid=P], got {spec:?}"))?;
        if name == FLOOR {
            bail!("the target name `floor` is the built-in floor; give it alone: --target floor");
        }
        let mut parts = rest.split(',');
        let url = parts.next().unwrap_or_default().to_string();
        if !url.starts_with("ws://") && !url.starts_with("wss://") {
            bail!("--target {name}: {url:?} is not a ws:// URL");
        }
        let (mut token, mut pid) = (None, None);
        for part in parts {
            match part.split_once('=') {
                Some(("token", value)) => token = Some(value.to_string()),
                Some(("pid", value)) => {
                    pid = Some(
                        value
                            .parse()
                            .with_context(|| format!("--target {name}: pid"))?,
                    );
                }
                _ => bail!("--target {name}: unknown part {part:?} (token=… or pid=…)"),
            }
        }
        Ok(Self::new(name, url, token, pid))
    }

    fn new(name: &str, url: String, token: Option<String>, pid: Option<u32>) -> Self {
        Self {
            name: name.to_string(),
            url,
            token,
            pid,
            sent: Arc::new(AtomicU64::new(0)),
        }
    }

    pub fn is_floor(&self) -> bool {
        self.name == FLOOR
    }

    pub async fn connect(&self) -> Result<Conn> {
        Conn::connect(&self.url, self.token.as_deref(), self.sent.clone())
            .await
            .with_context(|| format!("target {}", self.name))
    }

    /// Stops its process (`STOP`) or lets it go on (`CONT`), when its PID is known: a gateway
    /// that is not being measured is held still, so its own background work (a timer, what its
    /// last block left running) does not run on the same cores inside another's timed block.
    pub fn signal(&self, signal: &str) {
        let Some(pid) = self.pid else {
            return;
        };
        let sent = std::process::Command::new("kill")
            .arg(format!("-{signal}"))
            .arg(pid.to_string())
            .status();
        if !matches!(sent, Ok(status) if status.success()) {
            eprintln!(
                "bench: could not send {signal} to {} (pid {pid})",
                self.name
            );
        }
    }

    /// Waits until its process has used at most one clock tick of CPU over [`QUIET`] (at most
    /// [`QUIET_LIMIT`]): what it had due when it was let go on (an overdue timer) runs before
    /// its block, not in it, and a process whose timers tick now and then still counts as quiet.
    pub async fn settle_cpu(&self) {
        let (t0, mut base, mut since) = (Instant::now(), self.cpu_ms(), Instant::now());
        while let Some(at) = base
            && since.elapsed() < QUIET
        {
            if t0.elapsed() > QUIET_LIMIT {
                eprintln!("bench: {} was still busy after {QUIET_LIMIT:?}", self.name);
                return;
            }
            tokio::time::sleep(QUIET / 4).await;
            let now = self.cpu_ms();
            if now.is_none_or(|now| now - at > QUIET_CPU_MS) {
                (base, since) = (now, Instant::now());
            }
        }
    }

    /// The process's CPU time so far (user + system), in milliseconds; `None` without a PID or
    /// when `/proc` cannot be read.
    pub fn cpu_ms(&self) -> Option<f64> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid?)).ok()?;
        // The fields after the command's closing parenthesis start at field 3 (state): utime is
        // field 14 and stime field 15.
        let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
        let ticks: u64 =
            fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
        Some(ticks as f64 * 1000.0 / clock_ticks() as f64)
    }
}

/// Clock ticks a second (`getconf CLK_TCK`; 100 if that cannot run).
fn clock_ticks() -> u64 {
    static TICKS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        std::process::Command::new("getconf")
            .arg("CLK_TCK")
            .output()
            .ok()
            .and_then(|out| String::from_utf8(out.stdout).ok()?.trim().parse().ok())
            .unwrap_or(100)
    })
}
