//! The other side's own code for the A2A tests: the official SDKs, pinned and installed on
//! first use under the directory a test names (behind the same file lock as the MCP servers),
//! and a push-notification receiver on loopback that records what it was sent.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::routing::post;
use serde_json::Value;

use crate::fake::{self, FakeServer};
use crate::mcp_servers::{Missing, must, once, python_with, works};

/// The Python SDK (`a2a-sdk`), pinned.
pub const PYTHON_SDK: &str = "a2a-sdk==1.3.0";
/// The JavaScript SDK (`@a2a-js/sdk`), pinned.
pub const JS_SDK: &str = "@a2a-js/sdk@1.3.0";

/// Says that `test` did not run and why ([`crate::not_run`]: a failure under `CI=true`).
pub fn not_run(test: &str, missing: &Missing) {
    crate::not_run(&format!(
        "A2A SDK test {test} NOT RUN: {} (.ci/run installs it; see docs/a2a.md)",
        missing.0
    ));
}

/// A venv's Python with the A2A Python SDK.
pub fn python_sdk(tmp: &Path) -> Result<PathBuf, Missing> {
    python_with(tmp, PYTHON_SDK)
}

/// A directory whose `node_modules` holds the A2A JavaScript SDK: a script written into it
/// imports `@a2a-js/sdk/client`.
pub fn js_sdk(tmp: &Path) -> Result<PathBuf, Missing> {
    if !works("node", &["--version"]) || !works("npm", &["--version"]) {
        return Err(Missing("node and npm (apt-get install nodejs npm)".into()));
    }
    let name = format!("npm{}", JS_SDK.replace(['@', '/'], "-"));
    Ok(once(tmp, &name, |dir| {
        must(
            Command::new("npm")
                .args(["install", "--no-audit", "--no-fund", "--prefix"])
                .arg(dir)
                .arg(JS_SDK),
            &format!("installing {JS_SDK} with npm"),
        );
    }))
}

/// One push notification as the receiver got it.
#[derive(Debug, Clone, PartialEq)]
pub struct Push {
    /// `X-A2A-Notification-Token`.
    pub token: Option<String>,
    /// `Idempotency-Key` (the outbox record's id).
    pub idempotency_key: Option<String>,
    pub body: Value,
}

/// The states a task's pushes report, in the order they are reached.
const STATES: [&str; 3] = [
    "TASK_STATE_SUBMITTED",
    "TASK_STATE_WORKING",
    "TASK_STATE_COMPLETED",
];

impl Push {
    /// The task state it reports, whether it carries the task or a status update.
    pub fn state(&self) -> Option<&str> {
        match self.body.get("task") {
            Some(task) => task["status"]["state"].as_str(),
            None => self.body["statusUpdate"]["status"]["state"].as_str(),
        }
    }

    /// The task it is about.
    pub fn task_id(&self) -> Option<&str> {
        match self.body.get("task") {
            Some(task) => task["id"].as_str(),
            None => self.body["statusUpdate"]["taskId"].as_str(),
        }
    }
}

/// Pushes sorted by the state they report (the outbox sends a task's pushes concurrently, so
/// they may arrive in any order): `(task id, state, token)` of each.
pub fn by_state(mut pushes: Vec<Push>) -> Vec<(Option<String>, Option<String>, Option<String>)> {
    pushes.sort_by_key(|p| STATES.iter().position(|s| Some(*s) == p.state()));
    pushes
        .iter()
        .map(|p| {
            let owned = |s: Option<&str>| s.map(str::to_string);
            (owned(p.task_id()), owned(p.state()), p.token.clone())
        })
        .collect()
}

/// A push receiver on `http://<addr>/push`; stops when dropped.
pub struct PushReceiver {
    server: FakeServer<(), Vec<Push>>,
}

impl PushReceiver {
    /// On a free loopback port.
    pub async fn start() -> Self {
        let routes = Router::new().route("/push", post(take));
        Self {
            server: FakeServer::start("push receiver", (), Vec::new(), routes).await,
        }
    }

    /// On `addr` (a port chosen earlier, for a gateway that was told it before).
    pub async fn start_on(addr: SocketAddr) -> Self {
        let bound = fake::bind("push receiver", addr).await;
        let routes = Router::new().route("/push", post(take));
        Self {
            server: FakeServer::start_on("push receiver", bound, (), Vec::new(), routes),
        }
    }

    /// Where pushes go.
    pub fn url(&self) -> String {
        format!("http://{}/push", self.server.addr)
    }

    /// What it was sent, in order.
    pub fn pushes(&self) -> Vec<Push> {
        self.server.lock().clone()
    }

    /// Waits until it was sent at least `n` pushes (a minute at most: longer is a hang).
    ///
    /// # Panics
    /// When they do not come.
    pub async fn wait_for(&self, n: usize) -> Vec<Push> {
        let mut pushes = Vec::new();
        let ready = || {
            pushes = self.pushes();
            pushes.len() >= n
        };
        if self
            .server
            .wait_at_most(Duration::from_secs(60), ready)
            .await
        {
            return pushes;
        }
        panic!(
            "push receiver: {n} pushes never came (got {:?})",
            self.pushes()
        );
    }
}

/// `POST /push`: records the push with its token and idempotency key.
async fn take(
    State(shared): State<Arc<fake::Shared<(), Vec<Push>>>>,
    headers: HeaderMap,
    body: String,
) -> &'static str {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let push = Push {
        token: header("x-a2a-notification-token"),
        idempotency_key: header("idempotency-key"),
        body: serde_json::from_str(&body).unwrap_or(Value::String(body)),
    };
    shared.lock().push(push);
    shared.bump();
    "ok"
}
