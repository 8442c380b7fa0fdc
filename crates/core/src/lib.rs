//! The switchboard engine, free of any transport. Adapters (the gateway, the CLI, MCP) sit on top
//! of its plain async API; `docs/architecture.md` draws the whole picture.
//!
//! Layers point one way. At the bottom, modules that know nothing above them: `clock`, `ids`,
//! `keys` (the key grammar), `sse` (the server-sent events framer), `config`, `store` (the
//! `Store` trait and its backends), `error`, `access` (pure decisions: visibility, send policy,
//! tool policy), `resolve` (the one reference resolver) and `channel` (the channel seam: the
//! `Channel` trait, its registry and status types). Then `runtime`: runs, lanes, providers and
//! the tool contract; it defines the interfaces the layers above implement (`ReplyHandler`,
//! `Tool`). Above it the components:
//! `delivery` (the outbox and what becomes of replies; it sends through the channel seam),
//! `sessions` (operator operations), `exchange` (the agent-to-agent exchange), `subagents`,
//! `tools` (the session, file and command tools), `sandbox` (the command sandbox's helper), `a2a_tasks` (A2A tasks over runs), `cron`, `channels` (the channel implementations and the inbound
//! doors), `mcp`. `engine` is the composition root that builds and wires them. `.ci/structure`
//! holds each module to the imports it is allowed.

pub mod a2a;
pub mod a2a_tasks;
pub mod access;
pub mod channel;
pub mod channels;
pub mod clock;
pub mod config;
pub mod cron;
pub mod delivery;
pub mod engine;
pub mod error;
pub mod exchange;
pub mod ids;
pub mod import;
pub mod keys;
pub mod mcp;
pub mod measure;
pub mod resolve;
pub mod runtime;
pub mod sandbox;
pub mod sessions;
pub mod sse;
pub mod store;
pub mod subagents;
pub mod tools;
pub mod trace;
pub mod wire;

pub use engine::{Engine, EngineOptions};
pub use error::{CoreError, CoreResult};
pub use ids::RunId;
pub use keys::SessionKey;

/// An HTTP client with the TLS provider this build uses (tests and adapters share it).
pub use runtime::providers::http::client as http_client;
