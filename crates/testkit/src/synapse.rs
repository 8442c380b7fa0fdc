//! A real Matrix homeserver for the Matrix channel's tests: Synapse (the PyPI `matrix-synapse`,
//! pinned) in a venv under the test's target dir, installed once behind a file lock (as
//! [`crate::mcp_servers`] installs its servers), on SQLite in a directory of its own, listening
//! on a free loopback port without TLS, with registration closed, no federation, and rate limits
//! high enough that tests are not throttled.
//!
//! One Synapse serves a whole test process ([`shared`]); each test registers users of its own
//! ([`Synapse::register`], through the admin API with the shared secret) and makes its own rooms,
//! so tests do not see each other. A shell holds the server and stops it (and removes its
//! directory) when its stdin closes, that is when the test process ends, however it ends.
//!
//! A machine without `python3` (with venv) cannot run it: [`shared`] answers why, and the test
//! says `NOT RUN` with the reason ([`not_run`]) — or fails, under `CI=true`, where everything
//! must run. An install that fails on a machine that has Python panics with pip's output.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use serde_json::{Value, json};

use crate::mcp_servers::{self, Missing};

pub mod person;
pub use person::Person;

/// The PyPI package, pinned.
pub const SYNAPSE: &str = "matrix-synapse==1.163.2";
/// The server name of the test homeserver: users are `@name:localhost`.
pub const SERVER_NAME: &str = "localhost";
/// The shared secret the admin registration API checks.
const SHARED_SECRET: &str = "switchboard-test-registration-secret";

/// A running homeserver.
#[derive(Debug)]
pub struct Synapse {
    /// `http://127.0.0.1:PORT`.
    pub url: String,
    /// Its directory (config, SQLite database, log).
    pub dir: PathBuf,
}

/// The homeserver of this test process, or why there is none.
static SHARED: OnceLock<Result<Synapse, String>> = OnceLock::new();
/// The shell that holds the homeserver: it stops it when our end of its stdin closes.
static KEEPER: Mutex<Option<Child>> = Mutex::new(None);

/// The homeserver of this test process (installed and started on first use, under `tmp`: the
/// test's `CARGO_TARGET_TMPDIR`). `Err` says what the machine lacks; under `CI=true` that
/// panics instead, since CI installs everything (`.ci/run`).
///
/// # Panics
/// If the install fails, or Synapse does not start, or under `CI=true` when it cannot run.
pub fn shared(tmp: &Path) -> Result<&'static Synapse, Missing> {
    let started = SHARED.get_or_init(|| {
        let python = mcp_servers::python_with(tmp, SYNAPSE).map_err(|m| m.0)?;
        start(tmp, &python)
    });
    match started {
        Ok(synapse) => Ok(synapse),
        Err(why) if std::env::var("CI").is_ok_and(|v| v == "true") => {
            panic!("Synapse is required under CI=true: {why}")
        }
        Err(why) => Err(Missing(why.clone())),
    }
}

/// Prints that `test` did not run and why (to the terminal, not the captured output).
pub fn not_run(test: &str, missing: &Missing) {
    crate::not_run(&format!(
        "Matrix test {test} NOT RUN: {} (.ci/run installs it; see docs/channels/matrix.md)",
        missing.0
    ));
}

const KEEP: &str = r#"
dir=$1; python=$2; port=$3
"$python" -m synapse.app.homeserver -c "$dir/homeserver.yaml" >"$dir/out.log" 2>&1 &
pid=$!
tries=0
until "$python" -c "import urllib.request,sys; urllib.request.urlopen(sys.argv[1], timeout=2)" "http://127.0.0.1:$port/_matrix/client/versions" 2>/dev/null; do
  tries=$((tries+1))
  if [ $tries -gt 600 ] || ! kill -0 $pid 2>/dev/null; then echo failed; kill -9 $pid 2>/dev/null; exit 1; fi
  sleep 0.1
done
echo ready
cat >/dev/null || true
kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
rm -rf "$dir"
"#;

/// Makes a config in a fresh directory and starts Synapse under a keeper shell.
fn start(tmp: &Path, python: &Path) -> Result<Synapse, String> {
    let dir = tmp.join(format!("synapse-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let generated = Command::new(python)
        .args(["-m", "synapse.app.homeserver", "--generate-config"])
        .args(["--server-name", SERVER_NAME, "--report-stats=no", "-c"])
        .arg(dir.join("homeserver.yaml"))
        .current_dir(&dir)
        .output()
        .map_err(|e| format!("running Synapse's --generate-config: {e}"))?;
    if !generated.status.success() {
        return Err(format!(
            "Synapse's --generate-config failed: {}",
            String::from_utf8_lossy(&generated.stderr)
        ));
    }
    let port = crate::keeper::free_port()?;
    std::fs::write(dir.join("homeserver.yaml"), config(&dir, port))
        .map_err(|e| format!("writing homeserver.yaml: {e}"))?;
    let mut command = Command::new("sh");
    command.args(["-c", KEEP, "keeper"]).arg(&dir).arg(python);
    let (mut keeper, line) = crate::keeper::start(command.arg(port.to_string()))?;
    if line != "ready" {
        let log = std::fs::read_to_string(dir.join("out.log")).unwrap_or_default();
        let _ = keeper.kill();
        panic!("Synapse did not start:\n{log}");
    }
    if let Ok(mut held) = KEEPER.lock() {
        *held = Some(keeper);
    }
    Ok(Synapse {
        url: format!("http://127.0.0.1:{port}"),
        dir,
    })
}

/// The homeserver's config: the generated signing key and log config, everything else ours.
fn config(dir: &Path, port: u16) -> String {
    let d = dir.display();
    let limit = "{per_second: 10000, burst_count: 10000}";
    format!(
        r#"server_name: "{SERVER_NAME}"
pid_file: "{d}/homeserver.pid"
listeners:
  - port: {port}
    bind_addresses: ["127.0.0.1"]
    type: http
    tls: false
    x_forwarded: false
    resources:
      - names: [client]
        compress: false
database:
  name: sqlite3
  args:
    database: "{d}/homeserver.db"
log_config: "{d}/{SERVER_NAME}.log.config"
media_store_path: "{d}/media_store"
signing_key_path: "{d}/{SERVER_NAME}.signing.key"
registration_shared_secret: "{SHARED_SECRET}"
enable_registration: false
report_stats: false
macaroon_secret_key: "switchboard-test-macaroon"
form_secret: "switchboard-test-form"
trusted_key_servers: []
suppress_key_server_warning: true
federation_domain_whitelist: []
presence:
  enabled: false
rc_message: {limit}
rc_registration: {limit}
rc_room_creation: {limit}
rc_login:
  address: {limit}
  account: {limit}
  failed_attempts: {limit}
rc_joins:
  local: {limit}
  remote: {limit}
rc_invites:
  per_room: {limit}
  per_user: {limit}
  per_issuer: {limit}
"#
    )
}

/// A user of the test homeserver, speaking the client-server API: the "human" side of a test
/// (or the bot's credentials).
#[derive(Clone)]
pub struct MatrixUser {
    pub user_id: String,
    pub access_token: String,
    pub password: String,
    base: String,
    http: reqwest::Client,
}

impl Synapse {
    /// Registers a new user whose name starts with `name` (made unique in this process)
    /// through the admin API: a nonce from `GET /_synapse/admin/v1/register`, then the
    /// registration with the HMAC-SHA1, keyed by the shared secret, of
    /// `nonce\0user\0password\0notadmin`. Answers the user with an access token.
    ///
    /// # Panics
    /// If the homeserver refuses.
    pub async fn register(&self, name: &str) -> MatrixUser {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let local = format!("{name}{}", NEXT.fetch_add(1, Ordering::Relaxed));
        let password = format!("pw-{local}-secret");
        let http = crate::http_client();
        let path = format!("{}/_synapse/admin/v1/register", self.url);
        let nonce = answer(http.get(&path)).await["nonce"]
            .as_str()
            .unwrap_or_else(|| panic!("no registration nonce"))
            .to_string();
        let message = [nonce.as_str(), &local, &password, "notadmin"].join("\0");
        let key = ring::hmac::Key::new(
            ring::hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY,
            SHARED_SECRET.as_bytes(),
        );
        let tag = ring::hmac::sign(&key, message.as_bytes());
        let mac: String = tag.as_ref().iter().map(|b| format!("{b:02x}")).collect();
        let body = json!({
            "nonce": nonce, "username": local, "password": password, "admin": false, "mac": mac,
        });
        let registered = answer(http.post(&path).json(&body)).await;
        MatrixUser {
            user_id: registered["user_id"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            access_token: registered["access_token"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            password,
            base: format!("{}/_matrix/client/v3", self.url),
            http,
        }
    }
}

/// The JSON of a successful answer; panics with the answer otherwise.
async fn answer(request: reqwest::RequestBuilder) -> Value {
    let response = request
        .send()
        .await
        .unwrap_or_else(|e| panic!("the homeserver did not answer: {e}"));
    let status = response.status();
    let text = response.text().await.unwrap_or_default();
    assert!(
        status.is_success(),
        "the homeserver answered {status}: {text}"
    );
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// An `m.text` message's content, with `mentions` in `m.mentions`.
fn text(body: &str, mentions: &[&str]) -> Value {
    let mut content = json!({"msgtype": "m.text", "body": body});
    if !mentions.is_empty() {
        content["m.mentions"] = json!({"user_ids": mentions});
    }
    content
}

/// `text` as one URL path segment.
fn segment(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl MatrixUser {
    fn call(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(&self.access_token)
    }

    /// A new private room with `invite` invited (`direct`: marked as a direct chat); its id.
    pub async fn create_room(&self, invite: &[&str], direct: bool) -> String {
        let body = json!({"preset": "private_chat", "invite": invite, "is_direct": direct});
        let created = answer(self.call(reqwest::Method::POST, "/createRoom").json(&body)).await;
        created["room_id"].as_str().unwrap_or_default().to_string()
    }

    /// A new private room with `invite` invited, published under the alias
    /// `#<alias>:localhost`; its id.
    pub async fn create_room_with_alias(&self, invite: &[&str], alias: &str) -> String {
        let body = json!({"preset": "private_chat", "invite": invite, "room_alias_name": alias});
        let created = answer(self.call(reqwest::Method::POST, "/createRoom").json(&body)).await;
        created["room_id"].as_str().unwrap_or_default().to_string()
    }

    /// Joins `room` (an invitation accepted).
    pub async fn join(&self, room: &str) {
        let path = format!("/join/{}", segment(room));
        answer(self.call(reqwest::Method::POST, &path).json(&json!({}))).await;
    }

    /// Says `body` in `room` as `m.text`; `mentions`: the users listed in `m.mentions`.
    /// Answers the event id.
    pub async fn say(&self, room: &str, body: &str, mentions: &[&str]) -> String {
        self.send(room, text(body, mentions)).await
    }

    /// Says `body` in the thread of `root` in `room`; answers the event id.
    pub async fn say_in_thread(
        &self,
        room: &str,
        root: &str,
        body: &str,
        mentions: &[&str],
    ) -> String {
        let mut content = text(body, mentions);
        content["m.relates_to"] = json!({"rel_type": "m.thread", "event_id": root});
        self.send(room, content).await
    }

    async fn send(&self, room: &str, content: Value) -> String {
        static TXN: AtomicU64 = AtomicU64::new(0);
        let txn = format!("t{}", TXN.fetch_add(1, Ordering::Relaxed));
        let path = format!("/rooms/{}/send/m.room.message/{txn}", segment(room));
        let sent = answer(self.call(reqwest::Method::PUT, &path).json(&content)).await;
        sent["event_id"].as_str().unwrap_or_default().to_string()
    }

    /// The contents of the messages `sender` wrote in `room`, oldest first (of the newest
    /// 1,000 events).
    pub async fn messages(&self, room: &str, sender: &str) -> Vec<Value> {
        let path = format!("/rooms/{}/messages?dir=b&limit=1000", segment(room));
        let page = answer(self.call(reqwest::Method::GET, &path)).await;
        let mut messages: Vec<Value> = page["chunk"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|e| e["type"] == "m.room.message" && e["sender"] == sender)
            .map(|e| e["content"].clone())
            .collect();
        messages.reverse();
        messages
    }

    /// The id of the newest message `sender` wrote in `room`.
    pub async fn last_event_id(&self, room: &str, sender: &str) -> Option<String> {
        let path = format!("/rooms/{}/messages?dir=b&limit=100", segment(room));
        let page = answer(self.call(reqwest::Method::GET, &path)).await;
        let events = page["chunk"].as_array().cloned().unwrap_or_default();
        let newest = events
            .iter()
            .find(|e| e["sender"] == sender && e["type"] == "m.room.message")?;
        newest["event_id"].as_str().map(str::to_string)
    }

    /// Says `body` in `room` as a reply to the event `to` (`m.in_reply_to`), mentioning nobody;
    /// answers the event id.
    pub async fn say_replying(&self, room: &str, to: &str, body: &str) -> String {
        let mut content = text(body, &[]);
        content["m.relates_to"] = json!({"m.in_reply_to": {"event_id": to}});
        self.send(room, content).await
    }

    /// The text bodies `sender` wrote in `room`, oldest first.
    pub async fn bodies(&self, room: &str, sender: &str) -> Vec<String> {
        let messages = self.messages(room, sender).await;
        let bodies = messages.iter().filter_map(|c| c["body"].as_str());
        bodies.map(str::to_string).collect()
    }

    /// Waits (at most `within`) until `sender` wrote at least `count` messages in `room`, and
    /// answers them.
    ///
    /// # Panics
    /// When they do not come in time.
    pub async fn wait_for(
        &self,
        room: &str,
        sender: &str,
        count: usize,
        within: Duration,
    ) -> Vec<String> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let bodies = self.bodies(room, sender).await;
            if bodies.len() >= count {
                return bodies;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "{sender} wrote {} of {count} messages in {room}: {bodies:?}",
                bodies.len()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Whether `user` has joined `room`.
    pub async fn is_joined(&self, room: &str, user: &str) -> bool {
        let path = format!("/rooms/{}/joined_members", segment(room));
        let members = answer(self.call(reqwest::Method::GET, &path)).await;
        members["joined"].get(user).is_some()
    }
}
