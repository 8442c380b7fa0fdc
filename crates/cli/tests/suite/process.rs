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

/// How many user messages of `session`'s history (`chat.history` through the gateway at `url`)
/// are `text`; and the history, to show when that is not what was expected.
pub fn times_asked(
    home: &Path,
    url: &str,
    session: &str,
    text: &str,
) -> (usize, serde_json::Value) {
    let params = serde_json::json!({"sessionKey": session}).to_string();
    let history = run(home, url, &["call", "chat.history", "--params", &params]);
    let history: serde_json::Value = serde_json::from_slice(&history.stdout).unwrap();
    let asked = history["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "user" && m["content"] == text)
        .count();
    (asked, history)
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
        Self::start_logging_in(None, home, env, log)
    }

    /// As [`GatewayProcess::start_logging`], in network namespace `netns` when given
    /// (`ip netns exec`, which execs the gateway: the child is the gateway itself).
    pub fn start_logging_in(
        netns: Option<&str>,
        home: &Path,
        env: &[(&str, &str)],
        log: std::sync::Arc<std::sync::Mutex<String>>,
    ) -> (Self, std::thread::JoinHandle<()>) {
        let mut command = match netns {
            Some(ns) => {
                let mut ip = Command::new("ip");
                ip.args(["netns", "exec", ns, BIN]);
                ip
            }
            None => Command::new(BIN),
        };
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

/// The config of the exchange tests: one agent that answers `ack`, and `Posted: done` in an
/// exchange's announce step; `turns` reply-back turns. `extra` goes first in the object.
pub fn exchange_config(turns: u32, extra: &str) -> String {
    format!(
        r#"{{ {extra}
          session: {{ agentToAgent: {{ maxPingPongTurns: {turns} }} }},
          agents: {{ list: [{{ id: "main", default: true,
            systemPrompt: "@when \"announce step\" @reply Posted: done\n@default @reply ack" }}] }},
        }}"#
    )
}

/// Creates the sessions `main` and `peer`, and main sends `message` to peer with
/// `sessions_send` through `tools.invoke`, without waiting: an exchange begins.
pub async fn send_from_main_to_peer(
    client: &mut switchboard_server::client::GatewayClient,
    message: &str,
) {
    use serde_json::json;
    for key in ["main", "peer"] {
        client
            .request("sessions.create", json!({"key": key}))
            .await
            .unwrap();
    }
    let sent = send_without_waiting(client, "main", "peer", message).await;
    assert_eq!(sent["result"]["status"], "accepted", "{sent}");
}

/// `from` sends `message` to `to` with `sessions_send` through `tools.invoke`, without waiting;
/// answers the tool's answer.
pub async fn send_without_waiting(
    client: &mut switchboard_server::client::GatewayClient,
    from: &str,
    to: &str,
    message: &str,
) -> serde_json::Value {
    client
        .request(
            "tools.invoke",
            serde_json::json!({"sessionKey": from, "tool": "sessions_send",
                   "args": {"sessionKey": to, "message": message, "timeoutSeconds": 0}}),
        )
        .await
        .unwrap()
}

/// The gateway's first agent-to-agent exchange (`exchanges.list`), if there is one.
pub async fn first_exchange(
    client: &mut switchboard_server::client::GatewayClient,
) -> Option<serde_json::Value> {
    let list = client
        .request("exchanges.list", serde_json::json!({}))
        .await
        .ok()?;
    list["exchanges"].as_array()?.first().cloned()
}

/// Waits until the first exchange is in a reply-back turn whose run is running.
pub async fn until_reply_turn_runs(client: &mut switchboard_server::client::GatewayClient) {
    until(async || {
        let x = first_exchange(client).await?;
        let run = x["stepRunId"].as_str()?.to_string();
        let record = client
            .request(
                "agent.wait",
                serde_json::json!({"runId": run, "timeoutMs": 0}),
            )
            .await
            .ok()?;
        (x["state"] == "replying" && record["state"] == "running").then_some(())
    })
    .await;
}

/// Waits until the first exchange is `done`; answers it.
pub async fn until_exchange_done(
    client: &mut switchboard_server::client::GatewayClient,
) -> serde_json::Value {
    until(async || {
        let x = first_exchange(client).await?;
        (x["state"] == "done").then_some(x)
    })
    .await
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

/// The webhook group whose announces the delivery tests hold back: its session key.
pub const WEBHOOK_GROUP: &str = "agent:main:webhook:group:ops";

/// A webhook receiver that is down: a free loopback address nobody listens on yet (see
/// [`webhook_receiver`]), and the settings pointing the channel's account `acme` at it with
/// fast retries.
pub fn down_webhook() -> (std::net::SocketAddr, serde_json::Value) {
    let socket = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = socket.local_addr().unwrap();
    drop(socket);
    let settings = serde_json::json!({
        "channels": {"webhook": {"enabled": true, "accounts": {"acme": {
            "url": format!("http://{addr}/inbox"), "token": "acme-secret"}}}},
        "delivery": {"retryInitialMs": 100, "retryMaxMs": 300, "maxAttempts": 100},
    });
    (addr, settings)
}

/// A message to the webhook group through `gateway` (so its session exists), then a sub-agent
/// spawned from it: answers the spawn's answer.
pub async fn spawn_from_webhook_group(
    gateway: &GatewayProcess,
    client: &mut switchboard_server::client::GatewayClient,
) -> serde_json::Value {
    let base = gateway.url.replace("ws://", "http://");
    let http = switchboard_core::http_client(std::time::Duration::from_secs(30)).unwrap();
    let inbound = http
        .post(format!("{base}/channels/webhook/acme"))
        .bearer_auth("acme-secret")
        .json(&serde_json::json!({"from": "ana", "chatType": "group", "chatId": "ops", "text": "@reply NO_REPLY"}))
        .send()
        .await
        .unwrap();
    assert_eq!(inbound.status().as_u16(), 202);
    client
        .request(
            "tools.invoke",
            serde_json::json!({"sessionKey": WEBHOOK_GROUP, "tool": "sessions_spawn",
                               "args": {"task": "@reply done"}}),
        )
        .await
        .unwrap()
}

/// Waits until the webhook group's sub-agent announce is pending after a failed attempt.
pub async fn announce_failed_once(client: &mut switchboard_server::client::GatewayClient) {
    until(async || {
        let list = client
            .request(
                "deliveries.list",
                serde_json::json!({"sessionKey": WEBHOOK_GROUP}),
            )
            .await
            .unwrap();
        list["deliveries"]
            .as_array()
            .unwrap()
            .iter()
            .find(|d| {
                d["kind"] == "subagent-announce"
                    && d["status"] == "pending"
                    && d["attempts"].as_u64() >= Some(1)
            })
            .cloned()
    })
    .await;
}

/// Waits until the webhook group has a delivered delivery; answers the first.
pub async fn first_delivered(
    client: &mut switchboard_server::client::GatewayClient,
) -> serde_json::Value {
    until(async || {
        let list = client
            .request(
                "deliveries.list",
                serde_json::json!({"sessionKey": WEBHOOK_GROUP, "status": "delivered"}),
            )
            .await
            .unwrap();
        list["deliveries"].as_array().unwrap().first().cloned()
    })
    .await
}
