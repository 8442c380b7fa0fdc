//! The switchboard engine, free of any transport. Adapters (the gateway, the CLI, MCP) sit on top
//! of its plain async API; `docs/architecture.md` draws the whole picture.
//!
//! Layers point one way. At the bottom, modules that know nothing above them: `clock`, `ids`,
//! `keys` (the key grammar), `config`, `store` (the `Store` trait and SQLite), `access` (pure
//! decisions: visibility, send policy, tool policy). Then `runtime`: runs, lanes, providers and
//! the tool contract; it defines the interfaces the layers above implement (`ReplyHandler`,
//! `Tool`). Above it the components: `sessions` (operator operations and the one reference
//! resolver), `delivery` (the outbox and what becomes of replies), `channels`, `exchange` (the
//! agent-to-agent exchange), `subagents`, `tools` (the session tools), `cron`. `engine` is the
//! composition root that builds and wires them.

pub mod access;
pub mod channels;
pub mod clock;
pub mod config;
pub mod cron;
pub mod delivery;
pub mod engine;
pub mod error;
pub mod exchange;
pub mod ids;
pub mod keys;
pub mod mcp;
pub mod runtime;
pub mod sessions;
pub mod store;
pub mod subagents;
pub mod tools;
pub mod wire;

pub use engine::{Engine, EngineOptions};
pub use error::{CoreError, CoreResult};
pub use ids::RunId;
pub use keys::SessionKey;

/// An HTTP client with the TLS provider this build uses (tests and adapters share it).
pub use runtime::providers::http::client as http_client;
