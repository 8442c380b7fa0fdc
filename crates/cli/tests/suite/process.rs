//! Runs `switchboard gateway` as a child process on port 0 and finds its URL and token.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};

pub const BIN: &str = env!("CARGO_BIN_EXE_switchboard");

/// Runs the binary as a client of the gateway at `url`, with `home` as its state dir.
pub fn run(home: &Path, url: &str, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(args)
        .arg("--state-dir")
        .arg(home)
        .env("SWITCHBOARD_URL", url)
        .output()
        .unwrap()
}

pub struct GatewayProcess {
    pub child: Child,
    pub url: String,
    pub token: String,
    /// The lines the gateway printed on start.
    pub banner: Vec<String>,
}

impl GatewayProcess {
    pub fn start(home: &Path) -> Self {
        let mut command = Command::new(BIN);
        command
            .env("SWITCHBOARD_LOG", "warn,rmcp=error")
            .stderr(Stdio::inherit());
        Self::spawn(home, command)
    }

    /// With the log filter variables given (the others removed) and its stderr collected in
    /// `log` as it is written, by the thread answered (it ends when the process does).
    pub fn start_logging(
        home: &Path,
        env: &[(&str, &str)],
        log: std::sync::Arc<std::sync::Mutex<String>>,
    ) -> (Self, std::thread::JoinHandle<()>) {
        let mut command = Command::new(BIN);
        command
            .env_remove("SWITCHBOARD_LOG")
            .env_remove("RUST_LOG")
            .envs(env.iter().copied())
            .stderr(Stdio::piped());
        let mut gateway = Self::spawn(home, command);
        let stderr = gateway.child.stderr.take().unwrap();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let mut log = log.lock().unwrap();
                log.push_str(&line);
                log.push('\n');
            }
        });
        (gateway, reader)
    }

    fn spawn(home: &Path, mut command: Command) -> Self {
        let mut child = command
            .args(["gateway", "--port", "0", "--state-dir"])
            .arg(home)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut banner = Vec::new();
        for _ in 0..4 {
            banner.push(lines.next().unwrap().unwrap());
        }
        // Keep draining stdout so the gateway never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        let url = banner[0]
            .split_whitespace()
            .find(|w| w.starts_with("ws://"))
            .unwrap()
            .to_string();
        let token = std::fs::read_to_string(home.join("gateway-token"))
            .unwrap()
            .trim()
            .to_string();
        Self {
            child,
            url,
            token,
            banner,
        }
    }

    /// SIGKILL: no shutdown code runs.
    pub fn kill_9(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    pub fn stop(mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        self.child.wait().unwrap();
    }

    /// SIGTERM, then waits for the process to exit (a minute at most: longer is a hang) and
    /// answers its exit status.
    pub fn terminate(mut self) -> std::process::ExitStatus {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the gateway did not exit after SIGTERM"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }
}

/// A test that fails before stopping its gateway must not leave the process behind.
impl Drop for GatewayProcess {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Waits until the run is running (not just queued); the caller kills the gateway under it.
/// Each `agent.wait` blocks up to 20 ms; a run that ended instead is a failure, and a minute
/// without it starting is a hang.
pub async fn wait_running(client: &mut switchboard_server::client::GatewayClient, run_id: &str) {
    let wait = async {
        loop {
            let waited = client
                .request(
                    "agent.wait",
                    serde_json::json!({"runId": run_id, "timeoutMs": 20}),
                )
                .await
                .unwrap();
            if waited["state"] == "running" {
                return;
            }
            assert_eq!(waited["waitTimedOut"], true, "the run ended: {waited}");
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(60), wait)
        .await
        .expect("the run never started");
}

/// Polls `f` until it answers `Some` (a hang guard of two minutes, not a timing).
pub async fn until<T>(mut f: impl AsyncFnMut() -> Option<T>) -> T {
    for _ in 0..2400 {
        if let Some(v) = f().await {
            return v;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("the expected state never came");
}

/// A webhook channel's receiver on `addr` (`POST /inbox`): the bodies it was sent, in order.
pub async fn webhook_receiver(
    addr: std::net::SocketAddr,
) -> std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>> {
    let posts: std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>> = Default::default();
    let seen = posts.clone();
    let app = axum::Router::new().route(
        "/inbox",
        axum::routing::post(async move |body: String| {
            seen.lock()
                .unwrap()
                .push(serde_json::from_str::<serde_json::Value>(&body).unwrap());
            "ok"
        }),
    );
    let listener = tokio::net::TcpListener::bind(addr).await.unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    posts
}
