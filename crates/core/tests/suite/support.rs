//! What the core suites share: one builder of test engines ([`TestEngine::builder`]) — a real
//! SQLite file in a temp dir, the real runtime and components, optionally a manual clock and
//! extra tools — and helpers to run a turn, call a tool and read a transcript.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use switchboard_core::clock::{Clock, ManualClock, SystemClock};
use switchboard_core::config::{Config, StoreConfig, StoreKind};
use switchboard_core::engine::StoreWrapper;
use switchboard_core::runtime::RunRequest;
use switchboard_core::runtime::lanes::Lane;
use switchboard_core::runtime::tool::{Tool, ToolOutput};
use switchboard_core::store::{DeliveryQuery, DeliveryRecord, DeliveryStatus, RunRecord};
use switchboard_core::{Engine, EngineOptions, RunId, SessionKey};
use switchboard_protocol::message::TranscriptMessage;
use tokio_util::sync::CancellationToken;

pub mod failing;

/// Hang guard of the helpers' waits (nothing is expected to take long).
pub const GUARD: Duration = Duration::from_secs(60);

/// Points `config` at the matrix's PostgreSQL (a fresh schema) when the suite runs on it, unless
/// it names a PostgreSQL store of its own already.
pub fn on_matrix_store(config: &mut Config) {
    if config.store.kind == StoreKind::Postgres {
        return;
    }
    if let Some(db) = switchboard_testkit::postgres::matrix_database() {
        config.store = StoreConfig {
            kind: StoreKind::Postgres,
            url: Some(db.url),
            schema: db.schema,
            ..StoreConfig::default()
        };
    }
}

impl TestEngine {
    /// Whether the engine runs on PostgreSQL (the matrix's second leg).
    pub fn on_postgres(&self) -> bool {
        self.store.kind == StoreKind::Postgres
    }

    /// Runs `sqlite` (on the SQLite file) or `postgres` (in the engine's schema) behind the
    /// store's back, with the same parameters; answers the rows changed. For tests that set what
    /// the store never writes (an old `updatedAt`).
    pub async fn sql_behind(&self, sqlite: &str, postgres: &str, key: &str, value: i64) -> u64 {
        if !self.on_postgres() {
            let db = rusqlite::Connection::open(self.dir.path().join("switchboard.db")).unwrap();
            db.busy_timeout(Duration::from_secs(10)).unwrap();
            return db.execute(sqlite, rusqlite::params![key, value]).unwrap() as u64;
        }
        let url = self.store.url.clone().unwrap();
        let (client, connection) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(connection);
        let schema = &self.store.schema;
        client
            .batch_execute(&format!("SET search_path TO {schema}"))
            .await
            .unwrap();
        client.execute(postgres, &[&key, &value]).await.unwrap()
    }
}

/// An engine on its own temp dir.
pub struct TestEngine {
    pub engine: Arc<Engine>,
    /// The manual clock, when the builder asked for one.
    pub clock: Option<Arc<ManualClock>>,
    pub config: Config,
    pub dir: tempfile::TempDir,
    /// Where the engine keeps its data: kept across restarts whatever `config` becomes.
    pub store: StoreConfig,
    tools: Vec<Arc<dyn Tool>>,
}

/// How a [`TestEngine`] is built.
#[derive(Default)]
pub struct Builder {
    config: Config,
    tools: Vec<Arc<dyn Tool>>,
    clock_at: Option<i64>,
    faults: Option<failing::Faults>,
}

impl Builder {
    pub fn config(mut self, config: Config) -> Self {
        self.config = config;
        self
    }

    /// A tool beyond the built-in ones.
    pub fn tool(mut self, tool: Arc<dyn Tool>) -> Self {
        self.tools.push(tool);
        self
    }

    /// The store wrapped in a [`failing::FailingStore`] switched by `faults` (for this opening
    /// only: a restart opens the real store alone).
    pub fn faults(mut self, faults: &failing::Faults) -> Self {
        self.faults = Some(faults.clone());
        self
    }

    /// A manual clock at `now` instead of the system clock.
    pub fn manual_clock(mut self, now: i64) -> Self {
        self.clock_at = Some(now);
        self
    }

    /// A manual clock starting at the system's now.
    pub fn manual_clock_now(self) -> Self {
        self.manual_clock(SystemClock.now_ms())
    }

    /// Opens the engine: on SQLite in its temp dir, or — on the matrix's PostgreSQL leg — on a
    /// schema of its own in the test database.
    pub async fn open(mut self) -> TestEngine {
        let dir = tempfile::tempdir().unwrap();
        let clock = self.clock_at.map(ManualClock::new);
        on_matrix_store(&mut self.config);
        let store = self.config.store.clone();
        let wrap = self.faults.map(|f| f.wrapper());
        TestEngine::open_in(dir, (self.config, store), (self.tools, wrap), clock).await
    }
}

impl TestEngine {
    pub fn builder() -> Builder {
        Builder::default()
    }

    /// An engine on the defaults.
    pub async fn open(config: Config) -> Self {
        Self::builder().config(config).open().await
    }

    async fn open_in(
        dir: tempfile::TempDir,
        (mut config, store): (Config, StoreConfig),
        (tools, wrap_store): (Vec<Arc<dyn Tool>>, Option<StoreWrapper>),
        clock: Option<Arc<ManualClock>>,
    ) -> Self {
        config.store = store.clone();
        let options = EngineOptions {
            tools: tools.clone(),
            clock: clock.clone().map(|c| c as Arc<dyn Clock>),
            wrap_store,
            sandbox_helper: None,
        };
        let engine = Engine::open_with(dir.path(), config.clone(), options)
            .await
            .unwrap();
        Self {
            engine,
            clock,
            config,
            dir,
            store,
            tools,
        }
    }

    /// Stops the engine and opens a new one on the same home dir (a gateway restart); a manual
    /// clock moves to `now` when given.
    pub async fn restart(self, now: Option<i64>) -> Self {
        self.engine.close().await;
        let clock = self.clock.inspect(|c| {
            if let Some(now) = now {
                c.set(now);
            }
        });
        let tools = (self.tools, None);
        Self::open_in(self.dir, (self.config, self.store), tools, clock).await
    }

    /// The canonical key of `session` (any key form) for an operator.
    pub fn key(&self, session: &str) -> SessionKey {
        self.engine.resolver().canonical(session, None).unwrap()
    }

    /// The delivery route recorded on `session` (which must exist): its channel, `to` and
    /// thread, as strings.
    pub async fn route_of(&self, session: &str) -> [Option<String>; 3] {
        let entry = self.engine.store().get(&self.key(session)).await.unwrap();
        let entry = entry.unwrap_or_else(|| panic!("no session {session}"));
        [entry.last_channel, entry.last_to, entry.last_thread_id]
    }

    /// The current `sessionId` of `session` (which must exist): a reset changes it.
    pub async fn session_id(&self, session: &str) -> String {
        let entry = self.engine.store().get(&self.key(session)).await.unwrap();
        entry
            .unwrap_or_else(|| panic!("no session {session}"))
            .session_id
    }

    /// Creates `session` (any key form) when it is new.
    pub async fn create(&self, session: &str) {
        let key = self.key(session);
        let new = self.engine.resolver().new_session(&key);
        self.engine.store().create(new).await.unwrap();
    }

    /// Submits `message` into `session` (created if new) on lane `main`; answers the run id once
    /// the run is queued.
    pub async fn submit(&self, session: &str, message: &str, timeout: Option<Duration>) -> RunId {
        submit(&self.engine, session, message, timeout).await
    }

    /// The record of run `run` once it ended (a hang guard of 30 s, not a timing).
    pub async fn ended(&self, run: &RunId) -> RunRecord {
        let waited = self
            .engine
            .runtime()
            .wait(run, Duration::from_secs(30))
            .await;
        waited.expect("the run's record").record
    }

    /// One operator turn in `session`, waited for; answers the run's record.
    pub async fn turn(&self, session: &str, message: &str) -> RunRecord {
        turn(&self.engine, session, message).await
    }

    /// Every message of `session`'s current transcript, oldest first.
    pub async fn transcript(&self, session: &str) -> Vec<Value> {
        transcript(&self.engine, session).await
    }

    /// The first message of `session` whose provenance is `kind`, once there is one (a hang
    /// guard, not a timing).
    pub async fn first_of_kind(&self, session: &str, kind: &str) -> Value {
        tokio::time::timeout(GUARD, async {
            loop {
                let found = self
                    .transcript(session)
                    .await
                    .into_iter()
                    .find(|m| m["provenance"]["kind"] == kind);
                if let Some(found) = found {
                    return found;
                }
                tokio::time::sleep(Duration::from_millis(25)).await;
            }
        })
        .await
        .unwrap_or_else(|_| panic!("no {kind} message reached {session}"))
    }

    /// Calls `tool` as the agent of `session` (`tools.invoke`).
    pub async fn invoke(&self, session: &str, tool: &str, args: Value) -> ToolOutput {
        invoke(&self.engine, session, tool, args).await
    }

    /// Once the runtime is idle and no delivery pending: the records' (kind, to, status),
    /// oldest first, are `expected`.
    pub async fn assert_settled(&self, expected: &[(&str, &str, &str)]) {
        tokio::time::timeout(GUARD, self.engine.runtime().idle())
            .await
            .unwrap();
        let records = self.settled_deliveries().await;
        let kinds: Vec<(&str, &str, &str)> = records
            .iter()
            .rev()
            .map(|r| (r.kind.as_str(), r.to.as_str(), r.status.as_str()))
            .collect();
        assert_eq!(kinds, expected);
    }

    /// Every outbox record once none is pending, newest first.
    pub async fn settled_deliveries(&self) -> Vec<DeliveryRecord> {
        tokio::time::timeout(GUARD, async {
            loop {
                let query = DeliveryQuery {
                    session_key: None,
                    status: None,
                    limit: 100,
                };
                let records = self.engine.store().list_deliveries(query).await.unwrap();
                if records.iter().all(|r| r.status != DeliveryStatus::Pending) {
                    return records;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await
        .expect("every delivery settled")
    }
}

/// The code in a channel's pairing answer, after checking it names `channel`'s approve command.
/// Whether `text` is `/status`'s card of the main session of agent `main` on the scripted model
/// with the inherited send policy: a line each for the session, its model and its policy.
pub fn is_main_status_card(text: &str) -> bool {
    text.starts_with("switchboard ")
        && [
            "Session: agent:main:main",
            "Model: builtin/scripted",
            "Send policy: inherit",
        ]
        .iter()
        .all(|line| text.contains(line))
}

pub fn pairing_code(answer: &str, channel: &str) -> String {
    let code = answer
        .lines()
        .find_map(|l| l.strip_prefix("Pairing code: "))
        .unwrap_or_else(|| panic!("a pairing code in {answer:?}"))
        .trim()
        .to_string();
    let command = format!("switchboard pairing approve {channel} {code}");
    assert!(answer.contains(&command), "{answer:?} names {command}");
    code
}

impl TestEngine {
    /// Approves a pairing `code` of `channel` with a notice to the sender; answers the sender's id.
    pub async fn approve(&self, channel: &str, code: String) -> String {
        let approve = switchboard_protocol::pairing::PairingApproveParams {
            channel: Some(channel.into()),
            code,
            notify: true,
            ..Default::default()
        };
        let approved = self.engine.pairing().approve(approve).await.unwrap();
        approved.approved.id
    }
}

/// The deliveries of `kind` recorded so far (sent or not), newest first.
pub async fn deliveries_of(engine: &Engine, kind: &str) -> Vec<DeliveryRecord> {
    let query = DeliveryQuery {
        session_key: None,
        status: None,
        limit: 100,
    };
    let records = engine.store().list_deliveries(query).await.unwrap();
    records.into_iter().filter(|d| d.kind == kind).collect()
}

/// A transcript message written as its JSON.
pub fn message(json: Value) -> TranscriptMessage {
    serde_json::from_value(json).unwrap()
}

/// Submits `message` into `session` (any key form; created if new) on lane `main`; answers the
/// run id once the run is queued.
pub async fn submit(
    engine: &Engine,
    session: &str,
    message: &str,
    timeout: Option<Duration>,
) -> RunId {
    let key = engine.resolver().canonical(session, None).unwrap();
    let mut request = RunRequest::new(key.clone(), Lane::Main).with_message(message, None);
    request.create = Some(engine.resolver().new_session(&key));
    request.timeout = timeout;
    engine.runtime().submit(request).await.unwrap().run_id
}

/// One operator turn in `session`, waited for; answers the run's record.
pub async fn turn(engine: &Engine, session: &str, message: &str) -> RunRecord {
    let run_id = submit(engine, session, message, None).await;
    engine.runtime().wait(&run_id, GUARD).await.unwrap().record
}

/// Every message of `session`'s current transcript (any key form), oldest first.
pub async fn transcript(engine: &Engine, session: &str) -> Vec<Value> {
    let key = engine.resolver().canonical(session, None).unwrap();
    let entry = engine.store().get(&key).await.unwrap().unwrap();
    let page = engine
        .store()
        .history(&entry.session_id, 10_000, None)
        .await
        .unwrap();
    page.messages.into_iter().map(|m| m.message).collect()
}

/// Calls `tool` as the agent of `session`, as `tools.invoke` does.
pub async fn invoke(engine: &Engine, session: &str, tool: &str, args: Value) -> ToolOutput {
    engine
        .tools()
        .call(session, tool, args, CancellationToken::new())
        .await
        .unwrap()
}

/// A canonical key from a literal that already is one.
pub fn k(key: &str) -> SessionKey {
    SessionKey::from_canonical(key.to_string())
}

/// A chat channel's state as a whole, as `health` shows it.
pub fn channel_state(h: &TestEngine, channel: &str) -> switchboard_core::channel::LinkState {
    let status = h.engine.channels().status(channel);
    let status = status.unwrap_or_else(|| panic!("{channel} reports its state"));
    let link = status
        .link
        .unwrap_or_else(|| panic!("{channel} keeps connections"));
    link.state
}

/// Waits (at most [`GUARD`]) until `check` answers something, and answers it: a hang guard,
/// not a timing. `what` says what was awaited when it never comes.
pub async fn until<T, F: Future<Output = Option<T>>>(
    what: &str,
    mut check: impl FnMut() -> F,
) -> T {
    let deadline = tokio::time::Instant::now() + GUARD;
    loop {
        if let Some(found) = check().await {
            return found;
        }
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The text of a transcript message: its string content, or its text blocks joined.
pub fn text_of(m: &Value) -> String {
    match &m["content"] {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// The tool results of `session`'s transcript: (tool name, text, isError).
pub async fn tool_results(h: &TestEngine, session: &str) -> Vec<(String, String, bool)> {
    h.transcript(session)
        .await
        .iter()
        .filter(|m| m["role"] == "toolResult")
        .map(|m| {
            (
                m["toolName"].as_str().unwrap_or_default().to_string(),
                m["content"][0]["text"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                m["isError"].as_bool().unwrap_or(false),
            )
        })
        .collect()
}
