//! A person on the test homeserver with an end-to-end encrypting client: matrix-nio with its
//! `e2e` extra on libolm (Debian's `python3-olm`, installed by `.ci/run`), which shares no code
//! with the bot's Olm/Megolm (matrix-sdk on vodozemac). `person.py` runs it, one JSON command
//! a line; this side sends commands and reads the answers.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use super::{MatrixUser, Synapse};
use crate::mcp_servers::{Missing, venv, works};

/// The PyPI package, pinned: its `e2e` extra runs on libolm (0.26 moved to vodozemac, the
/// library the bot uses).
pub const MATRIX_NIO: &str = "matrix-nio[e2e]==0.25.2";
/// The system Python that Debian's `python3-olm` belongs to.
const SYSTEM_PYTHON: &str = "/usr/bin/python3";
/// The longest a command may take (a bound, not a timing).
const BOUND: Duration = Duration::from_secs(120);

/// A person with an encrypting client, logged in as a device of their own.
pub struct Person {
    pub user: MatrixUser,
    /// The device the client logged in as.
    pub device_id: String,
    /// Users whose devices the client waits to know before it says anything (a client that
    /// sends before it knows a device leaves that device without the message's key).
    pub encrypting: Vec<String>,
    child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

/// A venv of the system Python that sees its `python3-olm`, with matrix-nio; or what is missing.
fn python(tmp: &Path) -> Result<PathBuf, Missing> {
    if !works(SYSTEM_PYTHON, &["-c", "import olm, venv"]) {
        return Err(Missing(
            "Debian's python3-olm for /usr/bin/python3 (apt-get install python3-olm python3-venv)"
                .into(),
        ));
    }
    let name = format!("python-olm-{}", MATRIX_NIO.replace(['[', ']', '='], "_"));
    let flags: &[&str] = &["--system-site-packages"];
    Ok(venv(tmp, &name, (SYSTEM_PYTHON, flags), &[MATRIX_NIO]))
}

impl Synapse {
    /// A new user with an encrypting client, logged in and syncing (under `tmp`: the test's
    /// `CARGO_TARGET_TMPDIR`). `Err` says what the machine lacks.
    ///
    /// # Panics
    /// If the client does not start.
    pub async fn person(&self, tmp: &Path, name: &str) -> Result<Person, Missing> {
        let python = python(tmp)?;
        let user = self.register(name).await;
        let store = tmp.join(format!("nio-{}-{}", std::process::id(), user.user_id));
        let _ = std::fs::remove_dir_all(&store);
        std::fs::create_dir_all(&store).unwrap_or_else(|e| panic!("{}: {e}", store.display()));
        let script = tmp.join("matrix-person.py");
        std::fs::write(&script, include_str!("person.py"))
            .unwrap_or_else(|e| panic!("{}: {e}", script.display()));
        let mut child = Command::new(python)
            .arg(&script)
            .args([&self.url, &user.user_id, &user.password])
            .arg(&store)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("starting the Matrix person: {e}"));
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            panic!("the Matrix person has no pipes");
        };
        let lines = BufReader::new(stdout).lines();
        let mut person = Person {
            user,
            device_id: String::new(),
            encrypting: Vec::new(),
            child,
            stdin,
            lines,
        };
        let ready = person.answer().await;
        assert_eq!(
            ready["ready"], true,
            "the Matrix person did not start: {ready}"
        );
        person.device_id = ready["device_id"].as_str().unwrap_or_default().to_string();
        Ok(person)
    }
}

impl Person {
    async fn answer(&mut self) -> Value {
        let line = tokio::time::timeout(BOUND, self.lines.next_line()).await;
        let line = line.unwrap_or_else(|_| panic!("the Matrix person did not answer"));
        let line = line
            .ok()
            .flatten()
            .unwrap_or_else(|| panic!("the Matrix person ended: {:?}", self.child.try_wait()));
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"))
    }

    /// Sends `command`; answers its answer (panics on an `error`).
    async fn ask(&mut self, command: Value) -> Value {
        let line = format!("{command}\n");
        let written = self.stdin.write_all(line.as_bytes()).await;
        let flushed = self.stdin.flush().await;
        if let Err(e) = written.and(flushed) {
            panic!("the Matrix person cannot be told {command}: {e}");
        }
        let answer = self.answer().await;
        assert!(answer.get("error").is_none(), "{command}: {answer}");
        answer
    }

    /// A new room with `invite` invited (`encrypted` from its creation); its id.
    pub async fn create_room(&mut self, invite: &[&str], encrypted: bool, direct: bool) -> String {
        let command =
            json!({"op": "create", "invite": invite, "encrypted": encrypted, "direct": direct});
        let answer = self.ask(command).await;
        answer["room"].as_str().unwrap_or_default().to_string()
    }

    /// Joins `room`.
    pub async fn join(&mut self, room: &str) {
        self.ask(json!({"op": "join", "room": room})).await;
    }

    /// Says `body` in `room` (encrypted when the room is), `mentions` in `m.mentions`; answers
    /// the event id.
    pub async fn say(&mut self, room: &str, body: &str, mentions: &[&str]) -> String {
        let command = json!({
            "op": "say", "room": room, "body": body, "mentions": mentions,
            "devices_of": self.encrypting,
        });
        let answer = self.ask(command).await;
        answer["event_id"].as_str().unwrap_or_default().to_string()
    }

    /// The client waits to know a device of `user` before it says anything.
    pub fn talks_with(&mut self, user: &str) {
        self.encrypting.push(user.to_string());
    }

    /// Says `body` in `room` with the message's key kept from the devices of the users it
    /// [`talks_with`](Self::talks_with): to them it is a message they cannot decrypt (their
    /// device has no session for it). Answers the event id.
    pub async fn say_withheld(&mut self, room: &str, body: &str) -> String {
        let command = json!({
            "op": "say_withheld", "room": room, "body": body, "devices_of": self.encrypting,
        });
        let answer = self.ask(command).await;
        answer["event_id"].as_str().unwrap_or_default().to_string()
    }

    /// The first `count` messages `sender` wrote in `room` as this client read them, each
    /// `{body, msgtype, encrypted}` (`msgtype: "undecryptable"` when it could not decrypt one);
    /// panics when fewer arrived within two minutes.
    pub async fn messages(&mut self, room: &str, sender: &str, count: usize) -> Vec<Value> {
        let command =
            json!({"op": "wait", "room": room, "sender": sender, "count": count, "timeout": 110});
        let answer = self.ask(command).await;
        answer["messages"].as_array().cloned().unwrap_or_default()
    }

    /// Whether the client sees `room` as encrypted.
    pub async fn sees_encrypted(&mut self, room: &str) -> bool {
        let answer = self.ask(json!({"op": "encrypted", "room": room})).await;
        answer["encrypted"] == true
    }
}
