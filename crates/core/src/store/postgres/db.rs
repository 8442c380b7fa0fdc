//! The connections of the PostgreSQL store: a small pool, and [`Db`], what every query runs on
//! (a connection, or a transaction on one) with the connection's prepared statements.
//!
//! Each connection keeps the statements it prepared, so a query is one round trip after its
//! first use, as SQLite's statement cache makes it one step.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use tokio::sync::{Semaphore, SemaphorePermit};
use tokio_postgres::error::SqlState;
use tokio_postgres::tls::MakeTlsConnect;
use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, Row, Socket, Statement, Transaction};
use tokio_postgres_rustls::MakeRustlsConnect;

use crate::store::StoreError;
use crate::store::dialect::{POSTGRES, Param, spell};

/// Statements kept per connection; past that the cache starts over (dynamic list queries).
const MAX_STATEMENTS: usize = 256;

/// A connection's stream: TLS or plain, as `sslmode` and the server agreed.
type TlsStream = <MakeRustlsConnect as MakeTlsConnect<Socket>>::Stream;

/// One connection and the statements it prepared.
pub(super) struct Conn {
    client: Client,
    statements: Mutex<HashMap<String, Statement>>,
}

/// Connections to one database, at most `max` at once, on behalf of one gateway.
pub(super) struct Pool {
    config: tokio_postgres::Config,
    /// Every connection is made through it (`tls.rs`; with `sslmode=disable` it is not used).
    tls: MakeRustlsConnect,
    /// Where the database is (`place`), made once: `health` reads it at every call.
    place: String,
    /// The gateway whose work the queries claim (`owner` columns).
    gateway: String,
    /// The epoch this start of the gateway holds new work under (`cluster.rs`); 0 before it
    /// registered.
    epoch: AtomicI64,
    /// `config` with `synchronous_commit` on, once connections must turn it on
    /// ([`Pool::commit_durably`]).
    durable: OnceLock<tokio_postgres::Config>,
    idle: Mutex<Vec<Conn>>,
    permits: Semaphore,
    /// Statements sent for requests and runs (`BEGIN` and `COMMIT` included; the heartbeat
    /// and the background claims are not): what a turn costs the database, counted.
    sent: AtomicU64,
    /// Connections made so far: a new one may reach a new server (after a failover), whose
    /// row versions say nothing of the old one's (`kept.rs`).
    made: AtomicU64,
    /// The tasks that drive connections, the bus and the heartbeat: waited for at close.
    pub(super) tasks: tokio_util::task::TaskTracker,
    /// Writes and unlocks in flight: finished before the gateway says goodbye.
    pub(super) writes: tokio_util::task::TaskTracker,
}

/// A connection taken from the pool; it goes back when dropped (unless it broke).
pub(super) struct Pooled<'p> {
    pool: &'p Pool,
    conn: Option<Conn>,
    _permit: SemaphorePermit<'p>,
    /// Whether its statements count in [`Pool::sent`].
    counted: bool,
}

impl Pool {
    pub(super) fn new(
        config: tokio_postgres::Config,
        tls: MakeRustlsConnect,
        max: usize,
        gateway: String,
    ) -> Self {
        Self {
            place: place_of(&config),
            config,
            tls,
            gateway,
            epoch: AtomicI64::new(0),
            durable: OnceLock::new(),
            idle: Mutex::new(Vec::new()),
            permits: Semaphore::new(max),
            sent: AtomicU64::new(0),
            made: AtomicU64::new(0),
            tasks: tokio_util::task::TaskTracker::new(),
            writes: tokio_util::task::TaskTracker::new(),
        }
    }

    /// Where the database is, for errors and `health`: `PostgreSQL at host:port/database`
    /// (never the user or the password).
    pub(super) fn place(&self) -> &str {
        &self.place
    }

    /// The gateway the pool works for.
    pub(super) fn gateway(&self) -> &str {
        &self.gateway
    }

    /// The epoch the gateway holds new work under now.
    pub(super) fn epoch(&self) -> i64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// The gateway registered (again) under `epoch`.
    pub(super) fn set_epoch(&self, epoch: i64) {
        self.epoch.store(epoch, Ordering::Release);
    }

    /// Statements sent for requests and runs since the pool opened ([`Pool::sent`]).
    pub(super) fn sent(&self) -> u64 {
        self.sent.load(Ordering::Relaxed)
    }

    /// Counts `n` statements sent on a connection of its own (a session lock's).
    pub(super) fn count(&self, n: u64) {
        self.sent.fetch_add(n, Ordering::Relaxed);
    }

    /// An idle connection, or a new one.
    pub(super) async fn get(&self) -> Result<Pooled<'_>, StoreError> {
        let permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| StoreError::Closed)?;
        let idle = self.idle.lock().ok().and_then(|mut idle| idle.pop());
        let conn = match idle {
            Some(conn) if !conn.client.is_closed() => conn,
            _ => self.connect().await?,
        };
        Ok(Pooled {
            pool: self,
            conn: Some(conn),
            _permit: permit,
            counted: true,
        })
    }

    /// Makes the server acknowledge this pool's commits only once it has written them, as the
    /// gateway promises of every answer it gives: when its `synchronous_commit` is `off`
    /// (every other value writes the commit locally first), turns it on for `db`'s connection
    /// and every connection made after. Asked once, at the store's open; answers whether it
    /// was off (docs/decisions.md, "The gateway's commits on PostgreSQL are written before
    /// they are acknowledged").
    pub(super) async fn commit_durably(&self, db: &Db<'_>) -> Result<bool, StoreError> {
        let row = db.query_one("SHOW synchronous_commit", &[]).await?;
        let value: String = row.try_get(0).map_err(backend)?;
        if value != "off" {
            return Ok(false);
        }
        db.batch("SET synchronous_commit = on").await?;
        let mut config = self.config.clone();
        let options = config.get_options().unwrap_or_default();
        config.options(format!("{options} -c synchronous_commit=on"));
        let _ = self.durable.set(config);
        Ok(true)
    }

    /// A client and its connection, outside the pool (`LISTEN` reads the connection's
    /// notifications itself).
    pub(super) async fn connect_raw(
        &self,
    ) -> Result<(Client, tokio_postgres::Connection<Socket, TlsStream>), StoreError> {
        let config = self.durable.get().unwrap_or(&self.config);
        let made = config.connect(self.tls.clone()).await.map_err(|e| {
            StoreError::Unreachable(format!(
                "could not connect to {}: {}",
                self.place(),
                describe(&e)
            ))
        })?;
        self.made.fetch_add(1, Ordering::Relaxed);
        Ok(made)
    }

    /// How many connections were made so far.
    pub(super) fn made(&self) -> u64 {
        self.made.load(Ordering::Relaxed)
    }

    /// A connection of its own, outside the pool (a session lock holds one).
    pub(super) async fn connect(&self) -> Result<Conn, StoreError> {
        let (client, connection) = self.connect_raw().await?;
        self.tasks.spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "a PostgreSQL connection ended");
            }
        });
        Ok(Conn {
            client,
            statements: Mutex::new(HashMap::new()),
        })
    }

    /// Drops the idle connections (the store closes).
    pub(super) fn close(&self) {
        self.permits.close();
        if let Ok(mut idle) = self.idle.lock() {
            idle.clear();
        }
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        if let Some(conn) = self.conn.take()
            && !conn.client.is_closed()
            && let Ok(mut idle) = self.pool.idle.lock()
        {
            idle.push(conn);
        }
    }
}

impl<'p> Pooled<'p> {
    /// The connection, its statements left out of [`Pool::sent`] (background work).
    pub(super) fn uncounted(mut self) -> Self {
        self.counted = false;
        self
    }

    fn sent(&self) -> Option<&'p AtomicU64> {
        self.counted.then_some(&self.pool.sent)
    }

    /// The connection as a [`Db`] outside any transaction (reads).
    pub(super) fn db(&mut self) -> Result<Db<'_>, StoreError> {
        let sent = self.sent();
        let conn = self.conn.as_ref().ok_or(StoreError::Closed)?;
        Ok(Db {
            sent,
            ..conn.db(self.pool)
        })
    }

    /// A transaction on the connection.
    pub(super) async fn begin(&mut self) -> Result<Db<'_>, StoreError> {
        let (gateway, epoch, sent) = (self.pool.gateway.as_str(), self.pool.epoch(), self.sent());
        let conn = self.conn.as_mut().ok_or(StoreError::Closed)?;
        let tx = conn.client.transaction().await.map_err(backend)?;
        let db = Db {
            link: Link::Tx(tx),
            statements: &conn.statements,
            gateway,
            epoch,
            sent,
        };
        db.counted();
        Ok(db)
    }
}

impl Conn {
    pub(super) fn is_closed(&self) -> bool {
        self.client.is_closed()
    }

    /// The connection (a session lock's, outside the pool) as a [`Db`] outside any
    /// transaction, its statements counted in `pool`'s.
    pub(super) fn db<'a>(&'a self, pool: &'a Pool) -> Db<'a> {
        Db {
            link: Link::Client(&self.client),
            statements: &self.statements,
            gateway: pool.gateway.as_str(),
            epoch: pool.epoch(),
            sent: Some(&pool.sent),
        }
    }

    /// One statement outside the pool's [`Db`] (a session lock's connection), prepared once
    /// on the connection as [`Db`]'s are: a text sent as is would be parsed and planned again,
    /// in a round trip of its own, at each of a turn's lock and unlock.
    pub(super) async fn execute(&self, sql: &str, params: &Params<'_>) -> Result<u64, StoreError> {
        let statement = self.statement(sql).await?;
        self.client
            .execute(&statement, params)
            .await
            .map_err(backend)
    }

    /// One query outside the pool's [`Db`] (a session lock's or the heartbeat's connection),
    /// prepared once as [`Conn::execute`]'s statement is.
    pub(super) async fn query(
        &self,
        sql: &str,
        params: &Params<'_>,
    ) -> Result<Vec<Row>, StoreError> {
        let statement = self.statement(sql).await?;
        self.client.query(&statement, params).await.map_err(backend)
    }

    async fn statement(&self, sql: &str) -> Result<Statement, StoreError> {
        if let Some(statement) = kept(&self.statements, sql) {
            return Ok(statement);
        }
        let statement = self.client.prepare(sql).await.map_err(backend)?;
        keep(&self.statements, sql, &statement);
        Ok(statement)
    }
}

/// The statement prepared from `sql`, when a connection's statements keep it.
fn kept(statements: &Mutex<HashMap<String, Statement>>, sql: &str) -> Option<Statement> {
    statements.lock().ok().and_then(|s| s.get(sql).cloned())
}

/// Keeps `statement`, prepared from `sql`, in a connection's statements.
fn keep(statements: &Mutex<HashMap<String, Statement>>, sql: &str, statement: &Statement) {
    if let Ok(mut statements) = statements.lock() {
        if statements.len() >= MAX_STATEMENTS {
            statements.clear();
        }
        statements.insert(sql.to_string(), statement.clone());
    }
}

enum Link<'a> {
    Client(&'a Client),
    Tx(Transaction<'a>),
}

/// Where a query runs: a connection, or a transaction on it.
pub(super) struct Db<'a> {
    link: Link<'a>,
    statements: &'a Mutex<HashMap<String, Statement>>,
    gateway: &'a str,
    epoch: i64,
    /// Where its statements are counted, if they are ([`Pool::sent`]).
    sent: Option<&'a AtomicU64>,
}

/// A query's parameters.
pub(super) type Params<'a> = [&'a (dyn ToSql + Sync)];

/// A neutral value as the driver's.
pub(super) type Value = Box<dyn ToSql + Sync + Send>;

/// Neutral [`Param`]s as the driver's values (a NULL keeps its type: PostgreSQL types every
/// parameter).
pub(super) fn bind(params: &[Param]) -> Vec<Value> {
    params
        .iter()
        .map(|p| -> Value {
            match p.clone() {
                Param::Int(v) => Box::new(v),
                Param::Real(v) => Box::new(v),
                Param::Flag(v) => Box::new(v),
                Param::Text(v) => Box::new(v),
                Param::Texts(v) => Box::new(v),
            }
        })
        .collect()
}

/// The driver's values as a query's parameters.
pub(super) fn refs(values: &[Value]) -> Vec<&(dyn ToSql + Sync)> {
    values
        .iter()
        .map(|v| v.as_ref() as &(dyn ToSql + Sync))
        .collect()
}

impl Db<'_> {
    /// The gateway this store works for: the owner its claims write.
    pub(super) fn gateway(&self) -> &str {
        self.gateway
    }

    /// The epoch new work and claims are held under (taken when the query began).
    pub(super) fn epoch(&self) -> i64 {
        self.epoch
    }

    /// One more statement sent.
    fn counted(&self) {
        if let Some(sent) = self.sent {
            sent.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// The prepared statement of `sql` on this connection.
    async fn statement(&self, sql: &str) -> Result<Statement, StoreError> {
        if let Some(statement) = kept(self.statements, sql) {
            return Ok(statement);
        }
        let statement = match &self.link {
            Link::Client(c) => c.prepare(sql).await,
            Link::Tx(t) => t.prepare(sql).await,
        }
        .map_err(backend)?;
        keep(self.statements, sql, &statement);
        Ok(statement)
    }

    pub(super) async fn execute(&self, sql: &str, params: &Params<'_>) -> Result<u64, StoreError> {
        let statement = self.statement(sql).await?;
        self.counted();
        match &self.link {
            Link::Client(c) => c.execute(&statement, params).await,
            Link::Tx(t) => t.execute(&statement, params).await,
        }
        .map_err(backend)
    }

    pub(super) async fn query(
        &self,
        sql: &str,
        params: &Params<'_>,
    ) -> Result<Vec<Row>, StoreError> {
        let statement = self.statement(sql).await?;
        self.counted();
        match &self.link {
            Link::Client(c) => c.query(&statement, params).await,
            Link::Tx(t) => t.query(&statement, params).await,
        }
        .map_err(backend)
    }

    pub(super) async fn query_opt(
        &self,
        sql: &str,
        params: &Params<'_>,
    ) -> Result<Option<Row>, StoreError> {
        let statement = self.statement(sql).await?;
        self.counted();
        match &self.link {
            Link::Client(c) => c.query_opt(&statement, params).await,
            Link::Tx(t) => t.query_opt(&statement, params).await,
        }
        .map_err(backend)
    }

    pub(super) async fn query_one(
        &self,
        sql: &str,
        params: &Params<'_>,
    ) -> Result<Row, StoreError> {
        self.query_opt(sql, params)
            .await?
            .ok_or_else(|| StoreError::Backend(format!("no row answered: {sql}")))
    }

    /// A neutral statement (`rules/`, written with `?N`) with its [`Param`]s: the rows it
    /// changed.
    pub(super) async fn execute_with(
        &self,
        sql: &str,
        params: &[Param],
    ) -> Result<u64, StoreError> {
        let values = bind(params);
        self.execute(&spell(sql, POSTGRES), &refs(&values)).await
    }

    /// A neutral statement's rows.
    pub(super) async fn query_with(
        &self,
        sql: &str,
        params: &[Param],
    ) -> Result<Vec<Row>, StoreError> {
        let values = bind(params);
        self.query(&spell(sql, POSTGRES), &refs(&values)).await
    }

    /// A neutral statement's row, if it answered one.
    pub(super) async fn query_opt_with(
        &self,
        sql: &str,
        params: &[Param],
    ) -> Result<Option<Row>, StoreError> {
        let values = bind(params);
        self.query_opt(&spell(sql, POSTGRES), &refs(&values)).await
    }

    /// Statements without parameters (the schema), as one.
    pub(super) async fn batch(&self, sql: &str) -> Result<(), StoreError> {
        self.counted();
        match &self.link {
            Link::Client(c) => c.batch_execute(sql).await,
            Link::Tx(t) => t.batch_execute(sql).await,
        }
        .map_err(backend)
    }

    /// Commits a transaction (a connection's work is committed as it goes).
    pub(super) async fn commit(self) -> Result<(), StoreError> {
        if let Link::Tx(_) = self.link {
            self.counted();
        }
        match self.link {
            Link::Client(_) => Ok(()),
            Link::Tx(t) => t.commit().await.map_err(backend),
        }
    }
}

/// PostgreSQL's error as the store's, with the server's own message: a deadlock or a
/// serialization failure is [`StoreError::Busy`] (the transaction is tried again), a unique
/// violation a [`StoreError::Conflict`] (callers say which name is taken).
pub(super) fn backend(e: tokio_postgres::Error) -> StoreError {
    if let Some(db) = e.as_db_error() {
        let code = db.code();
        if *code == SqlState::T_R_DEADLOCK_DETECTED || *code == SqlState::T_R_SERIALIZATION_FAILURE
        {
            return StoreError::Busy(db.message().to_string());
        }
        if *code == SqlState::UNIQUE_VIOLATION {
            return StoreError::Conflict(db.message().to_string());
        }
    }
    StoreError::Backend(format!("PostgreSQL: {}", describe(&e)))
}

fn place_of(config: &tokio_postgres::Config) -> String {
    use tokio_postgres::config::Host;
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(host)) => host.clone(),
        #[cfg(unix)]
        Some(Host::Unix(path)) => path.display().to_string(),
        None => "localhost".to_string(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let database = config.get_dbname().unwrap_or_default();
    format!("PostgreSQL at {host}:{port}/{database}")
}

/// What went wrong, with its cause: the server's message and SQLSTATE, or the driver's error
/// and what caused it (a refused connection, a closed socket), never just `db error`.
pub(super) fn describe(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let detail = db.detail().map(|d| format!("; {d}")).unwrap_or_default();
        return format!("{} (SQLSTATE {}){detail}", db.message(), db.code().code());
    }
    let mut text = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        text.push_str(": ");
        text.push_str(&c.to_string());
        cause = c.source();
    }
    text
}
